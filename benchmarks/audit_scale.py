"""The audit stage and the report at fleet scale, on generated snapshot tables (issue #19).

    .venv/bin/python benchmarks/audit_scale.py --servers 1000
    .venv/bin/python benchmarks/audit_scale.py --servers 100000 --keep /tmp/wh100k

The simulator cannot serve 100,000 servers on two cores, so the snapshot tables of one run are
generated, on the executors (``spark.range`` + ``mapInArrow``: the driver holds only the list
of cluster sizes), in the registered schemas, as the collector writes them:

* clusters of 2 to 20 servers: a source, its replicas, and in clusters of 5 or more a chain
  (the last replica replicates from the first); one cluster in 20,000 servers (at least one) is
  a source with 200 replicas;
* 10 % of servers have no cluster label; 0.5 % were not collected (status failed);
* every collected server has 50 to 500 binary logs with their Previous_gtids (the source's
  history, purged up to a random point);
* replicas: 78 % in sync, 18 % a little behind, 2 % errant (3 GTIDs of their own), 1 % one purge
  from being refused, 1 % already refused (they lack what their source purged).

Then, each in a process of its own, exactly as the nightly job runs them: the audit
(``jobs.audit.audit_run``, one local Spark session, ``local[2]``) and the report
(``gtid-audit report``). Printed per phase: wall time, and peak RSS sampled every 0.2 s of the
driver's Python process, of its JVM (in local mode the executors live there), and of the
largest single Python worker Spark started (and of all of them together). The figures are
recorded in docs/benchmarks.md (section "Audit and report at fleet scale").
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from procs import children, rss_and_cmdline  # benchmarks/procs.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUN_ID = "20261125T030000Z-scale"
RUN_DATE = dt.date(2026, 11, 25)
AT = dt.datetime(2026, 11, 25, 3, 0, tzinfo=dt.timezone.utc)


# ---------------------------------------------------------------------------------------------
# the generated fleet

def layout(n_servers: int, seed: int) -> list[tuple[int, int, int]]:
    """(cluster number, size, number of its first server) until ``n_servers`` are placed."""
    rng = random.Random(seed)
    big = max(1, n_servers // 20_000)
    sizes = [201] * big
    while sum(sizes) < n_servers:
        sizes.append(min(rng.randint(2, 20), n_servers - sum(sizes)) or 1)
    rng.shuffle(sizes)
    out, first = [], 0
    for c, size in enumerate(sizes):
        out.append((c, size, first))
        first += size
    return out


def _uuid(server_no: int) -> str:
    return f"{server_no:08x}-0000-4000-8000-{server_no:012x}"


def cluster_rows(c: int, size: int, first: int, seed: int) -> dict[str, list[dict]]:
    """The servers, channels and binary_logs rows of one generated cluster (deterministic)."""
    rng = random.Random(seed * 1_000_003 + c)
    base = {"run_id": RUN_ID, "run_date": RUN_DATE, "read_at": AT}
    label = f"cl{c:05d}"
    src_no = first
    su = _uuid(src_no)
    head = rng.randint(20_000, 2_000_000)
    purged = rng.randint(1, head // 10)
    servers, channels, logs = [], [], []
    for i in range(size):
        no = first + i
        name = f"s{no:06d}"
        cluster = None if random.Random(no * 7 + 1).random() < 0.10 else label
        failed = rng.random() < 0.005
        row = {**base, "server": name, "cluster": cluster, "host": f"{name}.db", "port": 3306, "discovered": False,
               "status": "failed" if failed else "ok", "read_order": 0}
        if failed:
            servers.append(row)
            continue
        fate = rng.random() if i else 0.0
        lag = 0
        if 0.78 <= fate < 0.96:
            lag = rng.randint(1, 50)
        elif 0.98 <= fate < 0.99:                         # one purge from refused: lacks part of the 1st log
            lag = head - purged - 1
        elif fate >= 0.99:                                # refused: lacks what the source purged
            lag = head
        executed = f"{su}:1-{head - lag}" if lag < head else ""
        if 0.96 <= fate < 0.98:
            executed += f",{_uuid(no)}:1-3"
        n_logs = rng.randint(50, 500)
        top = head - lag if lag < head else 0
        floor = min(purged, top)
        for k in range(n_logs):
            upto = floor + (top - floor) * k // n_logs
            logs.append({**base, "server": name, "cluster": cluster, "seq": k, "log_name": f"binlog.{k + 1:06d}",
                         "file_size": 1 << 30, "encrypted": "No",
                         "previous_gtids": f"{su}:1-{upto}" if upto else "", "previous_gtids_read": True})
        servers.append({**row, "server_uuid": _uuid(no), "server_id": no + 1, "version": "8.4.3", "gtid_mode": "ON",
                        "enforce_gtid_consistency": "ON", "gtid_executed": executed,
                        "gtid_purged": f"{su}:1-{floor}" if floor else "", "log_bin": True,
                        "log_replica_updates": True, "read_only": i > 0, "super_read_only": i > 0,
                        "sync_binlog": 1, "innodb_flush_log_at_trx_commit": 1, "binlog_format": "ROW"})
        if i == 0:
            continue
        source = f"s{first + 1:06d}" if (size >= 5 and i == size - 1) else f"s{src_no:06d}"
        retrieved = f"{su}:1-{head - lag}" if lag < head else ""
        channels.append({**base, "server": name, "cluster": cluster, "channel_name": "",
                         "status_statement": "SHOW REPLICA STATUS", "source_host": f"{source}.db", "source_port": 3306,
                         "source_uuid": _uuid(src_no) if source == f"s{src_no:06d}" else _uuid(first + 1),
                         "source_server": source, "source_method": "address", "retrieved_gtid_set": retrieved,
                         "executed_gtid_set": executed, "io_running": "No" if lag >= head - purged else "Yes",
                         "sql_running": "Yes", "auto_position": True, "last_io_errno": 0, "last_io_error": "",
                         "last_sql_errno": 0, "last_sql_error": "", "seconds_behind_source": min(lag, 60),
                         "sql_delay": 0, "received_transaction_set": retrieved, "service_state": "ON"})
    return {"servers": servers, "channels": channels, "binary_logs": logs}


def _generator(table: str, seed: int):
    def batches(it):
        import pyarrow as pa

        from schemas import get_table

        schema = get_table(table).to_arrow()
        for batch in it:
            for c, size, first in zip(*(batch[k].to_pylist() for k in ("c", "size", "first"))):
                rows = cluster_rows(c, size, first, seed)[table]
                if rows:
                    yield pa.RecordBatch.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)
    return batches


def generate(warehouse: str, n_servers: int, seed: int) -> None:
    """Write the generated run's snapshot tables (and an empty ``uuid_registry``-free history)."""
    from jobs.config import SparkSettings
    from jobs.delta_io import write_run_frame, write_run_rows
    from jobs.spark import build_session
    from schemas import get_table

    spark = build_session(SparkSettings(master="local[2]", app_name="bench-generate"))
    plan = layout(n_servers, seed)
    clusters = spark.createDataFrame(plan, "c long, size long, first long").repartition(
        max(2, n_servers // 2000))
    for table in ("servers", "channels", "binary_logs"):
        frame = clusters.mapInArrow(_generator(table, seed), get_table(table).to_spark())
        write_run_frame(spark, table, frame, warehouse=warehouse, run_id=RUN_ID)
    for table in ("relay_log_tail", "collection_errors"):
        write_run_rows(spark, table, [], warehouse=warehouse, run_id=RUN_ID)
    write_run_rows(spark, "runs", [{
        "run_id": RUN_ID, "run_date": RUN_DATE, "started_at": AT, "finished_at": AT, "warehouse": warehouse,
        "writer": "delta-spark", "servers_configured": n_servers, "servers_discovered": 0, "servers_ok": n_servers,
        "servers_partial": 0, "servers_failed": 0, "error_count": 0, "collector_version": "bench"}],
        warehouse=warehouse, run_id=RUN_ID)
    spark.stop()


def audit(warehouse: str, driver_memory: str | None = None) -> None:
    from jobs.audit import audit_run
    from jobs.config import parse_config
    from jobs.spark import build_session

    config = parse_config({"warehouse": warehouse, "defaults": {"user": "audit"},
                           "servers": [{"name": "s000000", "host": "s000000.db", "port": 3306}],
                           "spark": {"master": "local[2]", "app_name": "bench-audit",
                                     "conf": {"spark.driver.memory": driver_memory} if driver_memory else {}}})
    spark = build_session(config.spark)
    outcome = audit_run(spark, config, run_id=RUN_ID, send_alerts=False, fail_on="never")
    print(f"audit: {outcome.summary['pairs_audited']:,} pairs, {outcome.summary['findings_open']:,} open findings")
    spark.stop()


# ---------------------------------------------------------------------------------------------
# measuring


def measured(command: list[str]) -> dict[str, float]:
    """Run ``command``; its wall time and peak RSS: driver (the process), jvm, the largest single
    Python worker, and the Python workers together."""
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak = {"driver": 0, "jvm": 0, "worker": 0, "workers": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            now = {"driver": rss_and_cmdline(proc.pid)[0], "jvm": 0, "worker": 0, "workers": 0}
            for child in children(proc.pid):
                rss, cmd = rss_and_cmdline(child)
                if "java" in cmd.split(" ")[0]:
                    now["jvm"] += rss
                elif cmd:
                    now["worker"] = max(now["worker"], rss)
                    now["workers"] += rss
            for k, v in now.items():
                peak[k] = max(peak[k], v)
            time.sleep(0.2)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    code = proc.wait()
    done.set()
    thread.join()
    if code != 0:
        raise SystemExit(f"{command!r} exited with {code}")
    return {"seconds": time.monotonic() - started, **peak}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="write the warehouse here and keep it")
    parser.add_argument("--reuse", action="store_true",
                        help="audit and report the warehouse a previous --keep DIR run generated, without generating")
    parser.add_argument("--driver-memory", metavar="SIZE",
                        help="the audit's spark.driver.memory (local mode: the executors' heap too; default Spark's 1g)")
    parser.add_argument("--phase", choices=["generate", "audit"], help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reuse and not args.keep:
        parser.error("--reuse needs --keep DIR (the directory of the generated warehouse)")
    if args.phase == "generate":
        generate(args.warehouse, args.servers, args.seed)
        return 0
    if args.phase == "audit":
        audit(args.warehouse, args.driver_memory)
        return 0
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="audit-scale-"))
    warehouse = str((root / "warehouse").resolve())
    me = [sys.executable, str(Path(__file__).resolve()), "--servers", str(args.servers), "--seed", str(args.seed),
          "--warehouse", warehouse] + (["--driver-memory", args.driver_memory] if args.driver_memory else [])
    root.mkdir(parents=True, exist_ok=True)
    config = root / "bench.yaml"
    config.write_text(f"warehouse: {warehouse}\ndefaults: {{user: audit}}\n"
                      "servers: [{name: s000000, host: s000000.db, port: 3306}]\n")
    try:
        if args.reuse:
            if not (Path(warehouse) / "runs").is_dir():
                raise SystemExit(f"--reuse: no generated warehouse in {warehouse} (run once with --keep {root})")
        else:
            gen = measured(me + ["--phase", "generate"])
            print(f"generated {args.servers:,} servers in {gen['seconds']:.1f} s")
        phases = {"audit": measured(me + ["--phase", "audit"]),
                  "report": measured([sys.executable, "-m", "jobs.cli", "report", "--config", str(config),
                                      "--out", str(root / "report.html")])}
        mb = lambda v: f"{v / 2**20:,.0f} MB"  # noqa: E731
        for name, m in phases.items():
            print(f"{name}: {m['seconds']:.1f} s; peak RSS driver {mb(m['driver'])}, JVM {mb(m['jvm'])}, "
                  f"largest Python worker {mb(m['worker'])} (all workers {mb(m['workers'])})")
        print(f"report page: {(root / 'report.html').stat().st_size / 1e6:.2f} MB")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
