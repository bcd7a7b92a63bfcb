"""What executors import: the task functions Spark ships unpickle and run in a Python where the
driver-only libraries (pydantic, PyYAML, tenacity, rich, delta-rs) cannot be imported."""
from __future__ import annotations

import datetime as dt
import functools
import subprocess
import sys
import textwrap

from pyspark import cloudpickle

from jobs import audit_tasks, collector, read_plan, read_staging
from jobs.config import parse_config

DRIVER_ONLY = ("pydantic", "yaml", "tenacity", "rich", "deltalake")

_BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = {blocked!r}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{{name}} is driver-only: an executor must not import it")
            return None

    sys.meta_path.insert(0, Block())
""")

_CHILD = _BLOCKER + textwrap.dedent("""
    from pyspark import cloudpickle
    task, arg = cloudpickle.loads(sys.stdin.buffer.read())
    out = list(task(arg))
    print(len(out), sorted({{o[0] for o in out}}) if out and isinstance(out[0], tuple) else "")
    print(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
""")


def _run_in_executor_like_python(task, arg) -> str:
    blob = cloudpickle.dumps((task, arg))
    done = subprocess.run([sys.executable, "-c", _CHILD.format(blocked=DRIVER_ONLY)], input=blob,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_the_read_task_runs_without_driver_libraries(monkeypatch):
    """The collection task (as jobs.collect ships it: the read, its rows as staging rows) reads a
    server that refuses the connection and yields its rows, importing none of the driver-only
    libraries."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = parse_config({"warehouse": "/tmp/unused", "defaults": {"user": "audit", "password_env": "GTA_NOPE"},
                           "servers": [{"name": "gone", "host": "127.0.0.1", "port": port}],
                           "collection": {"retries": {"attempts": 1}}})
    (spec,) = config.inventory()
    monkeypatch.setenv("GTA_NOPE", "x")
    ctx = collector.RunContext(run_id="r", run_date=dt.date(2026, 1, 1), settings=config.collection.read_settings())
    task = functools.partial(read_staging.staged_partition, ctx=ctx,
                             inventory=read_plan.inventory_for_resolution([spec], {}))
    before = collector.PreviousBinlogs("gone", "3e11fa47-71ca-11e1-9e33-c80aa9429562", "", "binlog.000001:120")
    # the shape a later night's cogroup hands the task: (task index, (bundles, previous binlogs))
    out = _run_in_executor_like_python(task, [(0, ([[[[(spec, 0, 0, None)]]]], [before]))])
    first, loaded = out.strip().splitlines()
    assert first.startswith("2 ") and "collection_errors" in first and "servers" in first
    assert loaded == "[]"


def test_the_connection_module_imports_no_other_module_of_the_project_than_server_spec():
    """jobs.mysql_connection, which every read connects through, loads without the driver-only
    libraries and imports nothing of the project but jobs.server_spec: not jobs.collector, which
    imports it (no cycle)."""
    script = _BLOCKER.format(blocked=DRIVER_ONLY) + textwrap.dedent("""
        import jobs.mysql_connection
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("jobs", "gtid_core", "schemas")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(["jobs", "jobs.mysql_connection", "jobs.server_spec"])


def test_the_check_tasks_import_no_driver_library():
    """The audit's task module, shipped the way the audit ships it, loads without the driver-only
    libraries."""
    task = functools.partial(audit_tasks.finalize_batches, rules=())
    out = _run_in_executor_like_python(task, iter(()))
    assert out.strip().splitlines() == ["0 ", "[]"]
