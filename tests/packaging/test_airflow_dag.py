"""The Airflow DAG (deploy/airflow/gtid_audit_dag.py) loaded and run by a real Airflow: the
pinned Airflow 3 and Spark provider of deploy/airflow/constraints-3.11.txt, in their own cached
virtualenv (tests/fixtures/airflow.py), driven through tests/packaging/airflow_probe.py.

A scheduler parses the file without Delta's jar cache and gets no import error; the task reads
the cache's manifest when it runs, and fails there, not at parse time, when the jars are missing.
One run goes end to end: `dag.test()` with a SQLite metadata database, spark-submit in local
mode, against a sandbox fleet with an errant transaction, writing the night's tables."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAG_FOLDER = REPO / "deploy" / "airflow"
PROBE = Path(__file__).with_name("airflow_probe.py")
DAG_ID, TASK_ID = "gtid_audit_nightly", "collect_and_audit"
LOGICAL_DATE = datetime(2026, 3, 1, 2, 15, tzinfo=timezone.utc)
RUN_ID = "20260301T021500"  # {{ ts_nodash }} of LOGICAL_DATE
OPERATOR = "airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator"
# the DAG's settings: the test's own environment must not leak into the probe's
DAG_VARIABLES = ("GTID_AUDIT_HOME", "GTID_AUDIT_CONFIG", "GTID_AUDIT_DELTA_MANIFEST", "GTID_AUDIT_DELTA_PACKAGES")
DELTA_COORDINATE = "io.delta:delta-spark_4.2_2.13:4.4.0"
MANIFEST_TAIL = "cache/delta-jars/delta-spark_4.2_2.13-4.4.0/manifest.json"


def probe_env(airflow_home: Path, **settings: str) -> dict[str, str]:
    """This process's environment without Airflow's or the DAG's variables, plus ``settings``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AIRFLOW") and k not in DAG_VARIABLES and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    airflow_home.mkdir(parents=True, exist_ok=True)
    env.update(AIRFLOW_HOME=str(airflow_home), AIRFLOW__CORE__LOAD_EXAMPLES="False",
               AIRFLOW__CORE__DAGS_FOLDER=str(DAG_FOLDER))
    env.update(settings)
    return env


def run_probe(python: Path, mode: str, env: dict[str, str], *, cwd: Path | None = None,
              folder: Path = DAG_FOLDER, timeout: int = 120) -> tuple[dict, str]:
    """(the probe's JSON answer, its whole output)."""
    done = subprocess.run([str(python), str(PROBE), mode, str(folder), LOGICAL_DATE.isoformat()],
                          env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    answers = [line[len("PROBE="):] for line in done.stdout.splitlines() if line.startswith("PROBE=")]
    assert done.returncode == 0 and answers, output[-6000:]
    return json.loads(answers[-1]), output


def fake_manifest(tmp_path: Path) -> tuple[Path, list[str]]:
    """A manifest as `make jars` writes it, listing two jar files that exist."""
    jars = [tmp_path / "jars" / "io.delta_delta-spark_4.2_2.13-4.4.0.jar", tmp_path / "jars" / "io.delta_delta-storage-4.4.0.jar"]
    for jar in jars:
        jar.parent.mkdir(parents=True, exist_ok=True)
        jar.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"coordinate": DELTA_COORDINATE, "jars": [str(j) for j in jars]}))
    return manifest, [str(j) for j in jars]


def the_task(answer: dict) -> dict:
    assert answer["import_errors"] == {}
    assert answer["dag_ids"] == [DAG_ID]
    dag = answer["dags"][DAG_ID]
    assert list(dag["tasks"]) == [TASK_ID]
    return dag["tasks"][TASK_ID]


def assert_nightly_task(task: dict, home: str, config: str) -> None:
    """The DAG's schedule-independent contract: what spark-submit gets, as in deploy/submit.sh."""
    fields = task["fields"]
    assert task["operator"] == OPERATOR
    assert fields["conn_id"] == "spark_default" and fields["name"] == "gtid-audit-nightly"
    assert fields["application"] == f"{home}/deploy/gtid_audit_main.py"
    assert fields["py_files"] == f"{home}/dist/gtid_audit-pyfiles.zip"
    assert fields["files"] == config
    assert fields["env_vars"] == {"PYSPARK_PYTHON": f"{home}/venv/bin/python"}
    assert fields["conf"] == {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.task.maxFailures": "4",
        "spark.speculation": "false",
    }
    assert (fields["retries"], fields["retry_delay"], fields["execution_timeout"]) == (1, 600.0, 7200.0)


@pytest.mark.airflow
def test_dagbag_with_cached_jars(airflow_python, tmp_path):
    """With a jar manifest the DAG parses cleanly, with the documented defaults, and its task
    renders the manifest's jars and arguments the job's own parser accepts."""
    manifest, jars = fake_manifest(tmp_path)
    answer, _ = run_probe(airflow_python, "dagbag",
                          probe_env(tmp_path / "airflow", GTID_AUDIT_DELTA_MANIFEST=str(manifest)))
    dag = answer["dags"][DAG_ID]
    assert (dag["schedule"], dag["catchup"], dag["max_active_runs"]) == ("15 2 * * *", False, 1)
    assert dag["tags"] == ["audit", "mysql", "replication"]
    task = the_task(answer)
    assert_nightly_task(task, "/opt/gtid-audit", "/etc/gtid-audit/prod.yaml")
    assert task["fields"]["packages"] is None
    assert "render_error" not in task, task.get("render_error")
    rendered = task["rendered"]
    assert rendered["jars"] == ",".join(jars)
    args = rendered["application_args"]
    assert args == ["--log-format", "json", "run", "--config", "prod.yaml", "--run-id", RUN_ID,
                    "--fail-on", "never"]
    from jobs.cli import build_parser

    parsed = build_parser().parse_args(args)
    assert (parsed.command, parsed.config, parsed.run_id, parsed.fail_on) == ("run", "prod.yaml", RUN_ID, "never")


@pytest.mark.airflow
def test_dagbag_without_cached_jars(airflow_python, tmp_path):
    """Without the cache the DAG still parses cleanly (no import error); rendering the task, as a
    worker does when the run starts, fails naming the manifest and the command that fixes it."""
    home = tmp_path / "opt"  # GTID_AUDIT_HOME with nothing in it
    answer, _ = run_probe(airflow_python, "dagbag",
                          probe_env(tmp_path / "airflow", GTID_AUDIT_HOME=str(home), GTID_AUDIT_CONFIG="/srv/audit.yaml"))
    task = the_task(answer)
    assert_nightly_task(task, str(home), "/srv/audit.yaml")
    assert task["fields"]["jars"] == "{{ delta_jars() }}"
    assert "rendered" not in task
    error = task["render_error"]
    assert error.startswith("FileNotFoundError: Delta's jar manifest ")
    assert f"{home}/{MANIFEST_TAIL}" in error
    assert f"`GTID_AUDIT_CACHE={home}/cache {home}/venv/bin/python -m jobs.delta_jars install`" in error


@pytest.mark.airflow
def test_dagbag_reports_a_parse_time_manifest_read(airflow_python, tmp_path):
    """Positive control: a DAG file that reads a missing manifest at module level, as this DAG
    once did, is an import error in the same probe, and the DAG is not in the bag."""
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "old_dag.py").write_text(
        "import json\nfrom pathlib import Path\nfrom airflow.sdk import DAG\n"
        f"JARS = json.loads(Path({str(tmp_path / 'manifest.json')!r}).read_text())['jars']\n"
        "with DAG(dag_id='old', schedule=None):\n    pass\n")
    answer, _ = run_probe(airflow_python, "dagbag", probe_env(tmp_path / "airflow"), folder=folder)
    assert answer["dag_ids"] == []
    (error,) = answer["import_errors"].values()
    assert "FileNotFoundError" in error and "manifest.json" in error


@pytest.mark.airflow
def test_dagbag_with_delta_packages(airflow_python, tmp_path):
    """GTID_AUDIT_DELTA_PACKAGES gives spark-submit a coordinate instead of jars; no cache needed."""
    answer, _ = run_probe(airflow_python, "dagbag",
                          probe_env(tmp_path / "airflow", GTID_AUDIT_HOME=str(tmp_path / "opt"),
                                    GTID_AUDIT_DELTA_PACKAGES=DELTA_COORDINATE))
    task = the_task(answer)
    assert "render_error" not in task, task.get("render_error")
    assert (task["rendered"]["packages"], task["rendered"]["jars"]) == (DELTA_COORDINATE, None)


def migrate(python: Path, env: dict[str, str]) -> None:
    """`airflow db migrate`: a fresh SQLite metadata database in $AIRFLOW_HOME."""
    done = subprocess.run([str(python), "-m", "airflow", "db", "migrate"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


@pytest.mark.airflow
def test_run_without_cached_jars_fails_the_task_not_the_parse(airflow_python, tmp_path):
    """A run on a worker without the jars: the DAG run is created and its task fails with the
    manifest's path and the fix in the task log; spark-submit never starts."""
    home = tmp_path / "opt"
    env = probe_env(tmp_path / "airflow", GTID_AUDIT_HOME=str(home),
                    AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[1]"}))
    migrate(airflow_python, env)
    answer, output = run_probe(airflow_python, "run", env)
    assert answer["import_errors"] == {}
    assert (answer["state"], answer["tasks"]) == ("failed", {TASK_ID: "failed"})
    assert f"Delta's jar manifest '{home}/{MANIFEST_TAIL}' does not exist" in output
    assert "Spark-Submit cmd" not in output  # the hook logs the command line when it starts one


# ---------------------------------------------------------------------------------------------
# one night end to end: Airflow runs the task, spark-submit runs the job, the job reads the fleet

TOPOLOGY = {"name": "airflow", "servers": [{"name": "src", "cluster": "c"}, {"name": "r1", "cluster": "c"}],
            "channels": [{"replica": "r1", "source": "src"}]}


def deployed_home(root: Path, dist: Path) -> Path:
    """GTID_AUDIT_HOME as docs/deployment.md lays it out: the deploy/ scripts, the --py-files
    zip, and the executors' virtualenv (here the test's own, which has gtid-audit's dependencies)."""
    root.mkdir(parents=True)
    (root / "deploy").symlink_to(REPO / "deploy")
    (root / "dist").symlink_to(dist)
    (root / "venv").symlink_to(Path(sys.prefix))
    return root


def spark_conf_dir(conf_dir: Path) -> Path:
    """What a deployment keeps in $SPARK_CONF_DIR: spark-defaults.conf, sized for a one-machine
    local run, and the job's quiet log4j2.properties (Spark's INFO lines would fill the task log)."""
    conf_dir.mkdir(parents=True)
    shutil.copy(REPO / "jobs" / "log4j2.properties", conf_dir / "log4j2.properties")
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2", "spark.databricks.delta.snapshotPartitions": "1"}
    (conf_dir / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in settings.items()))
    return conf_dir


def table_rows(warehouse: Path, table: str) -> list[dict]:
    from deltalake import DeltaTable

    return DeltaTable(str(warehouse / table)).to_pyarrow_table().to_pylist()


@pytest.mark.mysql
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.airflow
def test_dag_run_against_sandbox_fleet(airflow_python, fleet_factory, tmp_path):
    """`dag.test()` runs the nightly task: SparkSubmitOperator starts spark-submit (local mode)
    with the cached jars, the config through --files and the zip through --py-files; the job
    reads the fleet and writes the night's tables under the run id Airflow rendered, with the
    injected errant transaction among the findings and exit code 0 (--fail-on never)."""
    from jobs.delta_jars import installed_jars
    from jobs.sandbox import scenarios

    fleet = fleet_factory(TOPOLOGY, name="airflow-fleet")
    errant = scenarios.errant_transaction(fleet, "r1")
    warehouse = tmp_path / "warehouse"
    config = fleet.write_audit_config(tmp_path / "etc" / "audit.yaml", warehouse=str(warehouse))
    dist = tmp_path / "dist"
    done = subprocess.run([sys.executable, str(REPO / "deploy" / "make_pyfiles_zip.py"), str(dist)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    home = deployed_home(tmp_path / "opt", dist)

    env = probe_env(tmp_path / "airflow", GTID_AUDIT_HOME=str(home), GTID_AUDIT_CONFIG=str(config),
                    GTID_AUDIT_DELTA_MANIFEST=str(installed_jars().manifest),
                    AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
                    SPARK_CONF_DIR=str(spark_conf_dir(tmp_path / "spark-conf")), SPARK_LOCAL_IP="127.0.0.1")
    # the worker's PATH has spark-submit (pyspark's, in the executors' virtualenv here) and java
    env["PATH"] = f"{home / 'venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    migrate(airflow_python, env)
    submit_cwd = tmp_path / "worker"  # the worker's directory has no audit.yaml: it comes through --files
    submit_cwd.mkdir()
    answer, output = run_probe(airflow_python, "run", env, cwd=submit_cwd, timeout=600)
    assert (answer["state"], answer["tasks"]) == ("success", {TASK_ID: "success"}), output[-8000:]
    assert "gtid_audit_main: --config audit.yaml from --files: " in output

    (run,) = table_rows(warehouse, "runs")
    assert (run["run_id"], run["servers_ok"], run["servers_failed"]) == (RUN_ID, 2, 0)
    assert sorted((r["run_id"], r["server"]) for r in table_rows(warehouse, "servers")) == [(RUN_ID, "r1"), (RUN_ID, "src")]
    (summary,) = table_rows(warehouse, "run_summary")
    assert (summary["run_id"], summary["fail_on"], summary["exit_code"]) == (RUN_ID, "never", 0)
    errant_rows = [f for f in table_rows(warehouse, "findings")
                   if f["check_id"] == "errant_transactions" and f["status"] == "open"]
    assert [(f["run_id"], f["server"], f["source"], f["severity"]) for f in errant_rows] == [(RUN_ID, "r1", "src", "critical")]
    assert errant_rows[0]["gtid_set"].replace("\n", "") == errant.gtid_sets["errant"].replace("\n", "")
