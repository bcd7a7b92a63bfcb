"""What a user deploys, run on a real Spark standalone cluster: `make dist`, then
`deploy/submit.sh` in client mode against a sandbox fleet with one injected fault, the config
shipped with --files, Delta's jars with --jars, the event log on. Its findings equal a local
run's on the same fleet state, and the work ran on both workers, although every executor was
lost after the read, before the snapshot tables were written; and no server was read a second
time (issue #20, docs/collection.md "Write"). The passwords are given by ``password_env``, which
the executors resolve in their own environment, and no secret appears in that night's event
log, output or tables.

The fleet, its local-mode night, the built artefacts and the one submitted application are made
once for the module; each test checks its part of what they left."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from jobs.config import load_config
from jobs.pipeline import run_night
from jobs.sandbox import scenarios
from jobs.sandbox.accounts import AUDIT_USER
from jobs.sandbox.fleet import Fleet, Topology
from tests.cluster.standalone import descendants
from tests.fixtures.secrets import AUDIT_PASSWORD_ENV, WRONG_PASSWORD_ENV, audit_password, wrong_password

pytestmark = [pytest.mark.cluster, pytest.mark.mysql, pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
# a source, two replicas; the fault (an errant transaction on r1) makes the findings non-empty
TOPOLOGY = {"name": "cluster", "servers": [{"name": "src", "cluster": "c"}, {"name": "r1", "cluster": "c"},
                                           {"name": "r2", "cluster": "c"}],
            "channels": [{"replica": "r1", "source": "src"}, {"replica": "r2", "source": "src"}]}
FINDING_COLUMNS = ("check_id", "server", "source", "channel", "severity", "gtid_set")
RUN_TIMEOUT_S = 1200
#: How long the master may take to give the application new executors after a loss.
RELAUNCH_TIMEOUT_S = 180
#: What the job logs as the read stage ends (jobs.collect._phase): the tables are written after it.
READ_DONE = "collect phase=read "
#: A setting of the shipped configuration's ``spark.conf`` that spark-submit does not set.
YAML_SPARK_CONF = ("spark.gtid_audit.from_config", "shipped-with-files")


def _run(argv, *, cwd, env):
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    output = done.stdout + done.stderr
    return done.returncode, output


def _env(**extra) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                "SPARK_LOCAL_IP": "127.0.0.1"})
    env.update(extra)
    return env


#: A server entry whose login fails: a password no account has, for a user that does not exist
#: (so that its attempts are not counted as the audit account's connections below).
WRONG_LOGIN = {"name": "wrong", "cluster": "c", "user": "gta_nobody", "password_env": WRONG_PASSWORD_ENV}


def _config(fleet, directory: Path, warehouse: Path) -> Path:
    """The auditor's configuration of ``fleet`` into ``warehouse``, one connection attempt per
    server (a retried connect would be a second connection in the counts below); the audit
    password by ``password_env`` (tests/fixtures/secrets.py), and one more server, ``wrong``: the
    source again, whose login is refused."""
    path = fleet.write_audit_config(directory / "audit.yaml", warehouse=str(warehouse))
    data = yaml.safe_load(path.read_text())
    data["collection"] = {"retries": {"attempts": 1}}
    data["defaults"].pop("password_file")
    data["defaults"]["password_env"] = AUDIT_PASSWORD_ENV
    source = next(s for s in data["servers"] if s["name"] == "src")
    # the same server by another name for its address (the configuration refuses one address twice)
    data["servers"].append({**WRONG_LOGIN, "host": "localhost", "port": source["port"]})
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _audit_connections(fleet) -> dict[str, int]:
    """Per server, the connections the ``audit`` account has made to it since it started
    (performance_schema.accounts, summed over the client hosts; read as root, and nothing else
    logs in as ``audit``), as tests/collect/test_topology_nights.py counts them."""
    return {name: int(server.query_value(
        "SELECT COALESCE(SUM(TOTAL_CONNECTIONS), 0) FROM performance_schema.accounts WHERE USER = %s",
        (AUDIT_USER,))) for name, server in fleet.servers.items()}


def _since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in before}


def _findings(spark, warehouse: Path) -> list[tuple]:
    frame = spark.read.format("delta").load(str(warehouse / "findings")).where("status = 'open'")
    return sorted(tuple(row) for row in frame.select(*FINDING_COLUMNS).collect())


def _spark_defaults(conf_dir: Path, event_dir: Path) -> Path:
    """The cluster-wide settings a real deployment keeps in spark-defaults.conf."""
    conf_dir.mkdir(parents=True)
    event_dir.mkdir(parents=True)
    settings = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": event_dir.as_uri(),
        # one plain JSON-lines file the test can read (Spark 4 defaults to rolling zstd files)
        "spark.eventLog.rolling.enabled": "false",
        "spark.eventLog.compress": "false",
        "spark.driver.memory": "1g",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        # start only once both executors (one per worker) are there
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "300s",
        "spark.default.parallelism": "4",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        # Delta rebuilds a table's state in 50 tasks by default; these tables' logs hold a few
        # commits, and 50 tasks on two one-core executors cost ~5 s per table write
        "spark.databricks.delta.snapshotPartitions": "2",
    }
    (conf_dir / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
    return conf_dir


def _event_log(event_dir: Path) -> str:
    logs = [p for p in event_dir.iterdir() if p.is_file()]
    assert len(logs) == 1 and not logs[0].name.endswith(".inprogress"), logs
    return logs[0].read_text()


@pytest.fixture(scope="module")
def night(mysql_dist, spark, tmp_path_factory):
    """The fleet with its fault, its night in local mode (exit code, warehouse, the audit
    account's connections to each server during it) and the artefacts a user deploys."""
    tmp = tmp_path_factory.mktemp("cluster-night")
    fleet = Fleet.up(Topology.load(TOPOLOGY), tmp_path_factory.mktemp("cluster-fleet"), dist=mysql_dist,
                     audit_password=audit_password())
    try:
        errant = scenarios.errant_transaction(fleet, "r1")

        # 1. the local-mode run: the night `gtid-audit run` runs, in the test session's local
        #    Spark (Delta's cached jars; a JVM of its own would add half a minute and prove
        #    nothing more)
        local_wh = tmp / "warehouse-local"
        before = _audit_connections(fleet)
        local_rc = run_night(load_config(_config(fleet, tmp / "local", local_wh)), spark=spark).exit_code
        connections = _since(before, _audit_connections(fleet))

        # 2. the artefacts a user deploys
        dist = tmp / "dist"
        rc, out = _run(["make", "-o", ".venv/.installed", "dist", f"DIST={dist}", f"PY={sys.executable}"],
                       cwd=REPO, env=_env())
        assert rc == 0, out[-4000:]
        assert list(dist.glob("gtid_audit-*-py3-none-any.whl")), sorted(p.name for p in dist.iterdir())
        zip_path = dist / "gtid_audit-pyfiles.zip"
        assert zip_path.is_file()
        yield {"fleet": fleet, "errant": errant, "local_rc": local_rc, "local_wh": local_wh,
               "local_connections": connections, "zip": zip_path}
    finally:
        fleet.down(graceful=False)


@dataclass
class _Submit:
    """What one deploy/submit.sh run against the cluster needs: the config it ships, the warehouse
    that config names, the event log directory, the working directory and the environment."""

    shipped: Path
    warehouse: Path
    event_dir: Path
    cwd: Path
    env: dict[str, str]


def _submit_setup(cluster, night, tmp_path: Path) -> _Submit:
    """A submit.sh run's setup: the config written apart (it reaches the driver only through
    --files: the working directory has no audit.yaml) naming its own warehouse, the event log on."""
    warehouse = tmp_path / "warehouse-cluster"
    shipped = _config(night["fleet"], tmp_path / "ship", warehouse)
    data = yaml.safe_load(shipped.read_text())
    data["spark"] = {"conf": dict([YAML_SPARK_CONF])}   # must reach the session although the file came by --files
    shipped.write_text(yaml.safe_dump(data, sort_keys=False))
    event_dir = tmp_path / "events"
    cwd = tmp_path / "submit"
    cwd.mkdir()
    return _Submit(shipped, warehouse, event_dir, cwd, _submit_env(cluster, night, tmp_path, event_dir))


def _submit_env(cluster, night, tmp_path: Path, event_dir: Path) -> dict[str, str]:
    """spark-submit's environment: the driver's. Without the secrets: only the executors, whose
    workers were started with them (tests/fixtures/secrets.py), can resolve ``password_env``."""
    env = _env(SPARK_MASTER=cluster.master_url, DEPLOY_MODE="client",
               SPARK_SUBMIT=str(VENV_BIN / "spark-submit"), PYTHON=sys.executable, PYFILES_ZIP=str(night["zip"]),
               SPARK_CONF_DIR=str(_spark_defaults(tmp_path / "spark-conf", event_dir)))
    for name in (AUDIT_PASSWORD_ENV, WRONG_PASSWORD_ENV):
        env.pop(name)
    return env


def _driver_pid(submit_pid: int) -> int:
    """The job's Python driver: the process spark-submit started for gtid_audit_main.py."""
    from tests.cluster.standalone import processes

    table = processes()
    (pid,) = [p for p in descendants(submit_pid) if p in table and any(
        a.endswith("gtid_audit_main.py") for a in table[p][2])]
    return pid


def _lose_executors(cluster, submit_pid: int) -> dict[int, str]:
    """SIGKILL every executor JVM of the application ``submit_pid`` runs and wait until the master
    has launched a replacement (it tells the driver of the loss first); returns pid -> executor id
    of the killed ones."""
    killed = cluster.executors(since=submit_pid)
    assert killed, "no executor of the application to kill"
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + RELAUNCH_TIMEOUT_S
    while time.monotonic() < deadline:
        alive = cluster.executors(since=submit_pid)
        if not set(alive) & set(killed) and alive:
            return killed
        time.sleep(0.5)
    raise AssertionError(f"no new executor within {RELAUNCH_TIMEOUT_S}s (killed {killed})")


@dataclass
class _LostNight:
    """What the one submit.sh run that lost its executors left: its exit code and output, the
    audit account's connections to each server during it, the executors killed (pid -> id) and
    when, its event log and its warehouse."""

    rc: int
    out: str
    connections: dict[str, int]
    killed: dict[int, str]
    lost_at: float
    events: list[dict]
    event_log: str
    executor_logs: dict[str, str]
    warehouse: Path


@pytest.fixture(scope="module")
def lost_night(spark_cluster, night, tmp_path_factory) -> _LostNight:
    """deploy/submit.sh in client mode against the cluster, every executor killed between the read
    and the table writes. One run serves both tests of the module (a run costs two minutes): an
    undisturbed submit proves nothing the lost one does not, since its findings must equal the
    local night's either way.

    The read runs in one task (one replication group), so one executor holds what it read; both
    are killed so that the one holding it is lost whichever it is. Deterministic, not a race: as
    soon as the job logs the end of its read phase, its Python driver is stopped (SIGSTOP), the
    executor JVMs are killed, and the driver resumes (SIGCONT) once the master has launched a
    replacement, so the loss lands after the read and before the first table is written."""
    fleet = night["fleet"]
    run = _submit_setup(spark_cluster, night, tmp_path_factory.mktemp("cluster-submit"))
    before = _audit_connections(fleet)
    lines: list[str] = []
    read_done = threading.Event()
    process = subprocess.Popen([str(REPO / "deploy" / "submit.sh"), str(run.shipped)], cwd=run.cwd, env=run.env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def pump() -> None:
        for line in process.stdout:
            lines.append(line)
            if READ_DONE in line:
                read_done.set()
        read_done.set()   # the output ended: a run that died before its read fails now, not in 20 min

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        assert read_done.wait(RUN_TIMEOUT_S), "".join(lines)[-6000:]
        assert any(READ_DONE in line for line in lines), (
            f"submit.sh ended before its read phase (exit {process.wait(timeout=60)}):\n" + "".join(lines)[-6000:])
        driver = _driver_pid(process.pid)
        os.kill(driver, signal.SIGSTOP)
        try:
            killed = _lose_executors(spark_cluster, process.pid)
            lost_at = time.time()
        finally:
            os.kill(driver, signal.SIGCONT)
        rc = process.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=60)
        reader.join(timeout=60)
    event_log = _event_log(run.event_dir)
    events = [json.loads(line) for line in event_log.splitlines() if line.strip()]
    app_id = next(e["App ID"] for e in events if e["Event"] == "SparkListenerApplicationStart")
    # each executor's stdout and stderr, kept by its worker (the killed ones' too): where the
    # executors' Python logs go on a cluster
    executor_logs = {str(p): p.read_text(errors="replace") for i in range(len(spark_cluster.workers))
                     for p in (spark_cluster.work_dir(i) / app_id).glob("*/std*") if p.is_file()}
    return _LostNight(rc=rc, out="".join(lines), connections=_since(before, _audit_connections(fleet)),
                      killed=killed, lost_at=lost_at, warehouse=run.warehouse, event_log=event_log,
                      events=events, executor_logs=executor_logs)


def test_submit_on_standalone_cluster_matches_local_run(spark_cluster, night, lost_night, spark):
    """submit.sh on a 2-worker cluster writes the same open findings as a local-mode run, with
    tasks on both workers, although it lost every executor mid-run."""
    errant, local_rc, local_wh = night["errant"], night["local_rc"], night["local_wh"]
    assert local_rc == 2  # 2: open critical findings (the errant transaction)
    assert lost_night.rc == local_rc, lost_night.out[-6000:]
    # the config only reached the driver through --files (the submit directory has no audit.yaml)
    assert "gtid_audit_main: --config audit.yaml from --files: " in lost_night.out
    # and was read before the session started: its spark.conf is in the application's properties
    environment = next(e for e in lost_night.events if e["Event"] == "SparkListenerEnvironmentUpdate")
    assert environment["Spark Properties"].get(YAML_SPARK_CONF[0]) == YAML_SPARK_CONF[1], environment["Spark Properties"]
    assert "spark.conf does not apply" not in lost_night.out

    # (a) the same findings as the local run, and the injected fault among them
    local_findings, cluster_findings = _findings(spark, local_wh), _findings(spark, lost_night.warehouse)
    assert cluster_findings == local_findings
    errant_rows = [f for f in cluster_findings if f[0] == "errant_transactions"]
    assert [(f[1], f[2], f[4]) for f in errant_rows] == [("r1", "src", "critical")]
    assert errant_rows[0][5].replace("\n", "") == errant.gtid_sets["errant"].replace("\n", "")

    # (b) successful tasks on both workers: executor ids from the event log, each executor's
    #     worker from the directory that worker made for it (the replacements count: this shows
    #     both workers used, not both working at the same time)
    events = lost_night.events
    app_id = next(e["App ID"] for e in events if e["Event"] == "SparkListenerApplicationStart")
    added = {e["Executor ID"]: e["Executor Info"] for e in events if e["Event"] == "SparkListenerExecutorAdded"}
    ran = {e["Task Info"]["Executor ID"] for e in events
           if e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success"}
    assert {info["Host"] for info in added.values()} == {"127.0.0.1"}
    assert ran <= set(added)
    worker_of = {executor.name: i for i in range(2)
                 for executor in (spark_cluster.work_dir(i) / app_id).iterdir() if executor.is_dir()}
    assert set(worker_of) == set(added), (worker_of, added)
    for executor, info in added.items():  # the executor's log pages are served by its worker
        assert f":{spark_cluster.workers[worker_of[executor]].web_port}/" in info["Log Urls"]["stdout"]
    assert {worker_of[e] for e in ran} == {0, 1}


def test_executors_lost_after_the_read_cost_no_second_read(night, lost_night, spark):
    """Every executor killed between the read and the table writes: each server is read once
    (counted on the servers), has one servers row, and the findings equal the local night's.

    With the read's rows kept only in the executors' block managers, Spark recomputed them, i.e.
    read every server again: 3 connections per server instead of 2 (first night: a probe, then
    the read, as in the local night). The event log shows the executors removed and the job's
    later tasks run on their replacements."""
    fleet, out = night["fleet"], lost_night.out
    # (a) each server read once: the undisturbed local night's connections, a probe and a read
    assert lost_night.connections == night["local_connections"] == {name: 2 for name in fleet.servers}, out[-6000:]
    assert lost_night.rc == night["local_rc"], out[-6000:]
    # (b) one servers row per server
    rows = spark.read.format("delta").load(str(lost_night.warehouse / "servers")).select("server").collect()
    assert Counter(r["server"] for r in rows) == {name: 1 for name in (*fleet.servers, "wrong")}
    # (c) the local night's findings
    assert _findings(spark, lost_night.warehouse) == _findings(spark, night["local_wh"])
    # (d) the loss was real and mid-run: the driver removed the killed executors, and tasks of the
    #     job succeeded after that on executors started since
    removed = {e["Executor ID"]: e["Timestamp"] for e in lost_night.events
               if e["Event"] == "SparkListenerExecutorRemoved"}
    killed = lost_night.killed
    assert set(killed.values()) <= set(removed), (killed, removed)
    later = {e["Task Info"]["Executor ID"] for e in lost_night.events if e["Event"] == "SparkListenerTaskEnd"
             and e["Task End Reason"]["Reason"] == "Success"
             and e["Task Info"]["Finish Time"] / 1000 > lost_night.lost_at}
    assert later and not later & set(killed.values()), (later, killed)
    # (e) the staged reads are gone
    assert list((lost_night.warehouse / "_staging" / "collect").iterdir()) == []


def test_no_secret_in_the_event_log_output_or_tables(lost_night, spark):
    """Secrets stay on the executors: the driver, which does not have them, ships only secret
    references (``password_env``), so neither the audit password nor the refused one appears in
    the Spark event log (task descriptions and results, properties), the job's output, the
    executors' own logs or any table of the submitted night, although both were really used to
    log in, by executors in JVMs of their own. (A closure holding one is refused by ``Secret``'s
    pickling: tests/collect/test_config.py.)"""
    assert "servers=4 ok=3 partial=0 failed=1" in lost_night.out, lost_night.out[-6000:]
    assert any(e["Event"] == "SparkListenerTaskEnd" for e in lost_night.events)
    assert lost_night.executor_logs, "no executor log found"
    errors = spark.read.format("delta").load(str(lost_night.warehouse / "collection_errors")).collect()
    assert {(r["server"], r["error_class"], r["errno"]) for r in errors} == {("wrong", "auth_failed", 1045)}, errors
    haystacks = {"output": lost_night.out, "event log": lost_night.event_log, **lost_night.executor_logs}
    tables = sorted(p.parent.name for p in lost_night.warehouse.glob("*/_delta_log"))
    assert {"servers", "channels", "binary_logs", "relay_log_tail", "collection_errors", "findings", "alerts",
            "runs", "failover_readiness"} <= set(tables), tables
    for name in tables:      # every table of the night
        rows = spark.read.format("delta").load(str(lost_night.warehouse / name)).collect()
        haystacks[f"table {name}"] = "".join(repr(row.asDict()) for row in rows)
    for secret in (audit_password(), wrong_password()):
        for where, text in haystacks.items():
            assert secret not in text, where
