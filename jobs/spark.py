"""The Spark session of gtid-audit jobs.

``build_session(settings)`` returns the active session when spark-submit already made one (its
settings win), otherwise builds one from the configuration's ``spark`` section. Every session
runs in UTC so that the UTC timestamps of the tables read back unchanged.

When the configuration asks for delta-spark (``spark.jars.packages`` naming ``io.delta``), the
Delta SQL extension and catalog are set too; whether delta-spark then writes is decided in one
place, ``jobs.delta_io.choose_writer``.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

from jobs.config import SparkSettings

__all__ = ["build_session", "session_conf", "LOCAL_TEST_CONF", "LOG4J2_PROPERTIES"]

#: Quiet log4j2 configuration for sessions the job starts itself.
LOG4J2_PROPERTIES = Path(__file__).resolve().parent / "log4j2.properties"

#: Settings of the one local session the tests share (and of small local runs).
LOCAL_TEST_CONF: Mapping[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "1g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
}


def session_conf(settings: SparkSettings) -> dict[str, str]:
    """The conf a new session gets: UTC, the configured extras, Delta wiring if requested."""
    conf = {"spark.sql.session.timeZone": "UTC"}
    conf.update(settings.conf)
    if "io.delta" in conf.get("spark.jars.packages", ""):
        conf.setdefault("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        conf.setdefault("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    return conf


def build_session(settings: SparkSettings | None = None):
    """The active SparkSession, or a new one built from ``settings``."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings = settings or SparkSettings()
    builder = SparkSession.builder.appName(settings.app_name)
    under_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM
    master = settings.master or os.environ.get("MASTER") or (None if under_spark_submit else "local[*]")
    if master:
        builder = builder.master(master)
    if master and master.startswith("local"):
        # local workers must run this interpreter (the one with gtid-audit installed), and a
        # laptop or CI run has no use for the web UI
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.ui.enabled", "false")
        # stage progress bars on a terminal only; logs and CI stay quiet
        builder = builder.config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())
        # Spark's JVM logs errors only, from its first line (setLogLevel comes too late for
        # the start-up banner); the job's own logs carry the story
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J2_PROPERTIES}")
    for key, value in session_conf(settings).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if not under_spark_submit:
        session.sparkContext.setLogLevel(settings.log_level)
    return session
