"""What a user deploys, run on a real Spark standalone cluster: `make dist`, then
`deploy/submit.sh` in client mode against a sandbox fleet with one injected fault, the config
shipped with --files, Delta's jars with --jars, the event log on. Its findings equal a local
run's on the same fleet state, and the work ran on both workers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.config import load_config
from jobs.pipeline import run_night
from jobs.sandbox import scenarios

pytestmark = [pytest.mark.cluster, pytest.mark.mysql, pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
# a source, two replicas; the fault (an errant transaction on r1) makes the findings non-empty
TOPOLOGY = {"name": "cluster", "servers": [{"name": "src", "cluster": "c"}, {"name": "r1", "cluster": "c"},
                                           {"name": "r2", "cluster": "c"}],
            "channels": [{"replica": "r1", "source": "src"}, {"replica": "r2", "source": "src"}]}
FINDING_COLUMNS = ("check_id", "server", "source", "channel", "severity", "gtid_set")
RUN_TIMEOUT_S = 1200


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


def _events(event_dir: Path) -> list[dict]:
    logs = [p for p in event_dir.iterdir() if p.is_file()]
    assert len(logs) == 1 and not logs[0].name.endswith(".inprogress"), logs
    return [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]


def test_submit_on_standalone_cluster_matches_local_run(spark_cluster, fleet_factory, spark, tmp_path):
    """submit.sh on a 2-worker cluster writes the same open findings as a local-mode run, with tasks on both workers."""
    fleet = fleet_factory(TOPOLOGY, name="cluster-fleet")
    errant = scenarios.errant_transaction(fleet, "r1")

    # 1. the local-mode run: the night `gtid-audit run` runs, in the test session's local Spark
    #    (Delta's cached jars; a JVM of its own would add half a minute and prove nothing more)
    local_wh = tmp_path / "warehouse-local"
    local_config = fleet.write_audit_config(tmp_path / "local" / "audit.yaml", warehouse=str(local_wh))
    local_rc = run_night(load_config(local_config), spark=spark).exit_code
    assert local_rc == 2  # 2: open critical findings (the errant transaction)

    # 2. the artefacts a user deploys
    dist = tmp_path / "dist"
    rc, out = _run(["make", "-o", ".venv/.installed", "dist", f"DIST={dist}", f"PY={sys.executable}"],
                   cwd=REPO, env=_env())
    assert rc == 0, out[-4000:]
    assert list(dist.glob("gtid_audit-*-py3-none-any.whl")), sorted(p.name for p in dist.iterdir())
    zip_path = dist / "gtid_audit-pyfiles.zip"
    assert zip_path.is_file()

    # 3. deploy/submit.sh in client mode against the cluster; the config only reaches the driver
    #    through --files (the submit directory has no audit.yaml)
    cluster_wh = tmp_path / "warehouse-cluster"
    shipped = fleet.write_audit_config(tmp_path / "ship" / "audit.yaml", warehouse=str(cluster_wh))
    event_dir = tmp_path / "events"
    submit_cwd = tmp_path / "submit"
    submit_cwd.mkdir()
    env = _env(SPARK_MASTER=spark_cluster.master_url, DEPLOY_MODE="client",
               SPARK_SUBMIT=str(VENV_BIN / "spark-submit"), PYTHON=sys.executable, PYFILES_ZIP=str(zip_path),
               SPARK_CONF_DIR=str(_spark_defaults(tmp_path / "spark-conf", event_dir)))
    cluster_rc, cluster_out = _run([REPO / "deploy" / "submit.sh", shipped], cwd=submit_cwd, env=env)
    assert cluster_rc == local_rc, cluster_out[-6000:]
    assert "gtid_audit_main: --config audit.yaml from --files: " in cluster_out

    # (a) the same findings as the local run, and the injected fault among them
    local_findings, cluster_findings = _findings(spark, local_wh), _findings(spark, cluster_wh)
    assert cluster_findings == local_findings
    errant_rows = [f for f in cluster_findings if f[0] == "errant_transactions"]
    assert [(f[1], f[2], f[4]) for f in errant_rows] == [("r1", "src", "critical")]
    assert errant_rows[0][5].replace("\n", "") == errant.gtid_sets["errant"].replace("\n", "")

    # (b) successful tasks on both workers: executor ids from the event log, each executor's
    #     worker from the directory that worker made for it
    events = _events(event_dir)
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
