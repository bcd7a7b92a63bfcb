"""Airflow DAG: the nightly gtid-audit run on a Spark cluster (Airflow 3, apache-spark provider).

The task fails (and Airflow alerts) when the job itself fails; open critical findings are the
alert feed's business, so the run uses ``--fail-on never`` and on-call hears about findings from
Alertmanager / the alerts table rather than from a red DAG.

Parsing this file reads environment variables and nothing else: Delta's jar list is read from
the manifest of ``make jars`` when the task runs (its ``jars`` template calls ``delta_jars()``),
so the DAG loads on a scheduler or DAG processor that has no jar cache, and the task, not the
parse, fails where the jars are missing, naming the manifest and the command that caches them.

Settings, from the environment of the DAG processor and the workers (defaults in brackets):
  GTID_AUDIT_HOME            [/opt/gtid-audit] holds deploy/gtid_audit_main.py,
                             dist/gtid_audit-pyfiles.zip and venv/ (the executors' Python)
  GTID_AUDIT_CONFIG          [/etc/gtid-audit/prod.yaml] shipped with --files
  GTID_AUDIT_DELTA_MANIFEST  [$GTID_AUDIT_HOME/cache/delta-jars/delta-spark_4.2_2.13-4.4.0/manifest.json]
                             what `GTID_AUDIT_CACHE=$GTID_AUDIT_HOME/cache make jars` wrote
  GTID_AUDIT_DELTA_PACKAGES  instead of the manifest: a Maven coordinate for --packages, resolved
                             by spark-submit from your mirror (io.delta:delta-spark_4.2_2.13:4.4.0)
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG

HOME = Path(os.environ.get("GTID_AUDIT_HOME", "/opt/gtid-audit"))
CONFIG = os.environ.get("GTID_AUDIT_CONFIG", "/etc/gtid-audit/prod.yaml")  # shipped with --files, found by its name
# io.delta:delta-spark_4.2_2.13:4.4.0 for pyspark 4.2.0 and its dependencies (docs/deployment.md, 2.)
DELTA_MANIFEST = os.environ.get(
    "GTID_AUDIT_DELTA_MANIFEST", str(HOME / "cache/delta-jars/delta-spark_4.2_2.13-4.4.0/manifest.json"))
DELTA_PACKAGES = os.environ.get("GTID_AUDIT_DELTA_PACKAGES") or None


def delta_jars(manifest: str = DELTA_MANIFEST) -> str:
    """The manifest's jars, comma-separated for --jars; called when the task renders its templates.

    Raises FileNotFoundError when the manifest or a jar it lists is missing, ValueError when the
    manifest cannot be read; both name the manifest and the fix."""
    fix = (f"on this worker, cache them with `GTID_AUDIT_CACHE={HOME / 'cache'} {HOME / 'venv/bin/python'} "
           "-m jobs.delta_jars install` (`make jars` in a checkout), point GTID_AUDIT_DELTA_MANIFEST at "
           "their manifest.json, or set GTID_AUDIT_DELTA_PACKAGES")
    if not Path(manifest).is_file():
        raise FileNotFoundError(f"Delta's jar manifest {manifest!r} does not exist: {fix}")
    try:
        jars = [str(jar) for jar in json.loads(Path(manifest).read_text())["jars"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"Delta's jar manifest {manifest!r} is unreadable ({exc!r}): {fix}") from None
    missing = [jar for jar in jars if not Path(jar).is_file()]
    if not jars or missing:
        raise FileNotFoundError(
            f"Delta's jar manifest {manifest!r} lists {len(jars)} jars, {len(missing)} missing "
            f"(first: {(missing or ['<none listed>'])[0]!r}): {fix}")
    return ",".join(jars)


with DAG(
    dag_id="gtid_audit_nightly",
    schedule="15 2 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=10)},
    user_defined_macros={"delta_jars": delta_jars},
    tags=["mysql", "replication", "audit"],
) as dag:
    SparkSubmitOperator(
        task_id="collect_and_audit",
        conn_id="spark_default",  # the master (and deploy-mode extra); `spark-submit` on PATH
        name="gtid-audit-nightly",
        application=str(HOME / "deploy/gtid_audit_main.py"),
        application_args=[
            "--log-format", "json",
            "run", "--config", Path(CONFIG).name,
            "--run-id", "{{ ts_nodash }}",
            "--fail-on", "never",
        ],
        py_files=str(HOME / "dist/gtid_audit-pyfiles.zip"),
        files=CONFIG,
        # Delta's jars: by coordinate (spark-submit resolves them), or the cached jars, read at run time
        packages=DELTA_PACKAGES,
        jars=None if DELTA_PACKAGES else "{{ delta_jars() }}",
        conf={
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.sql.session.timeZone": "UTC",
            # retried tasks re-read only the servers of a task that did not complete (submit.sh)
            "spark.task.maxFailures": "4",
            "spark.speculation": "false",
        },
        # the executors' Python (mysql-connector-python + the wheel's dependencies, see
        # docs/deployment.md "Executors"); the password reaches the executors through the
        # configuration's password_file, present at the same path on every node
        env_vars={"PYSPARK_PYTHON": str(HOME / "venv/bin/python")},
        execution_timeout=timedelta(hours=2),
    )
