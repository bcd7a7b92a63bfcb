"""Airflow DAG: the nightly gtid-audit run on a Spark cluster.

The task fails (and Airflow alerts) when the job itself fails; open critical findings are the
alert feed's business, so the run uses ``--fail-on never`` and on-call hears about findings from
Alertmanager / the alerts table rather than from a red DAG.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from airflow import DAG
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

# Delta's jars as `GTID_AUDIT_CACHE=/opt/gtid-audit/cache make jars` cached them on this host
# (io.delta:delta-spark_4.2_2.13:4.4.0 for pyspark 4.2.0 and its dependencies); the manifest lists
# them. With a Maven mirror, `packages="io.delta:delta-spark_4.2_2.13:4.4.0"` instead.
DELTA_MANIFEST = Path("/opt/gtid-audit/cache/delta-jars/delta-spark_4.2_2.13-4.4.0/manifest.json")
DELTA_JARS = ",".join(json.loads(DELTA_MANIFEST.read_text())["jars"])
CONFIG = "/etc/gtid-audit/prod.yaml"  # shipped with --files, read by its name (SparkFiles)

with DAG(
    dag_id="gtid_audit_nightly",
    schedule="15 2 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=10)},
    tags=["mysql", "replication", "audit"],
) as dag:
    SparkSubmitOperator(
        task_id="collect_and_audit",
        conn_id="spark_default",
        application="/opt/gtid-audit/deploy/gtid_audit_main.py",
        application_args=[
            "--log-format", "json",
            "run", "--config", Path(CONFIG).name,
            "--run-id", "{{ ts_nodash }}",
            "--fail-on", "never",
        ],
        py_files="/opt/gtid-audit/dist/gtid_audit-pyfiles.zip",
        files=CONFIG,
        jars=DELTA_JARS,
        conf={
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.sql.session.timeZone": "UTC",
            "spark.task.maxFailures": "1",
            "spark.speculation": "false",
        },
        # the executors' Python (mysql-connector-python + the wheel's dependencies, see
        # docs/deployment.md "Executors"); the password reaches the executors through the
        # configuration's password_file, present at the same path on every node
        env_vars={"PYSPARK_PYTHON": "/opt/gtid-audit/venv/bin/python"},
        execution_timeout=timedelta(hours=2),
    )
