"""The Spark session of gtid-audit jobs.

``build_session(settings)`` returns the active session when spark-submit already made one (its
settings win), otherwise builds one from the configuration's ``spark`` section. Every session
runs in UTC so that the UTC timestamps of the tables read back unchanged.

Every session has Delta: delta-spark is the only writer of the tables. A session the job starts
itself gets the jars cached by ``python -m jobs.delta_jars install`` (never
``spark.jars.packages``: no network once cached), the Delta SQL extension and the Delta catalog.
In local mode the jars go on the new JVM's launch class path, after Spark's own, and the JVM maps
the classes of the class archive built for that launch (:mod:`jobs.class_archive`); with another
master they go in ``spark.jars``, which ships them to the executors.
Under spark-submit the classpath is spark-submit's (``--jars`` / ``--packages`` win); the session
only checks that Delta's classes load and raises ``jobs.delta_jars.DeltaClassesMissingError``,
naming the jars and the fix, when they do not.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Mapping

from jobs.cache_dir import default_cache_dir
from jobs.class_archive import class_archive, dump_options, launch_class_path, spark_home, use_options
from jobs.config import SparkSettings
from jobs.delta_jars import DELTA_CATALOG_CLASS, DELTA_EXTENSION_CLASS, installed_jars, require_delta_classes

__all__ = ["build_session", "session_conf", "delta_conf", "DRIVER_BOUNDS", "LOCAL_TEST_CONF", "LOG4J2_PROPERTIES",
           "LOCAL_DRIVER_MEMORY", "LOCAL_PAGE_SIZE", "LOCAL_JIT_OPTIONS",
           "LOCAL_WORKER_DAEMON", "LOCAL_NO_CODEGEN", "local_defaults"]

#: Quiet log4j2 configuration for sessions the job starts itself.
LOG4J2_PROPERTIES = Path(__file__).resolve().parent / "log4j2.properties"

#: What the driver keeps of each query it ran, bounded: Spark's SQL status store retains the
#: plan description and metrics of the last ``retainedExecutions`` queries (1,000 by default,
#: UI or not), and one audit runs about 210 of them, some with 1.8 MB plan strings. Measured
#: after one audit of a 6-server run: 400 MB of driver heap retained with the defaults, 167 MB
#: with these (the test session, which runs many audits in one JVM, ran out of its 1 GB). A
#: user's ``spark.conf`` overrides them.
DRIVER_BOUNDS: Mapping[str, str] = {
    "spark.sql.ui.retainedExecutions": "50",
    "spark.sql.maxPlanStringLength": "262144",
}

#: Bounds of what a task builds and of what a reader of the tables decodes at once.
#:
#: * A cached DataFrame is built 10,000 rows per column batch by default; a snapshot row carries
#:   up to 500 binary-log headers, so one batch of them was hundreds of megabytes, built in one
#:   growing buffer: the audit of 100,000 generated servers ran out of a 1 GB local heap there
#:   (issue #19). 1,000 rows per batch bounds it at tens of megabytes.
#: * A Parquet row group is the unit a reader decodes, whatever rows it keeps. With Parquet's
#:   128 MB ``parquet.block.size`` a night's ``findings`` (one file per partition) was one row
#:   group of 74 MB decoded and ``failover_readiness`` one of 89 MB at 100,000 servers, so the
#:   report's read of a few findings' texts by key decoded them all (+124 MB, issue #19). The
#:   writer counts a row group by its compressed pages, so the bound is a fraction of what a
#:   reader decodes: 4 MiB made those findings five row groups of about 16 MB decoded, and
#:   ``failover_readiness`` 40 (smaller on disk: each keeps its GTID sets in a dictionary, which
#:   fell back to plain text past 1 MB in the single row group), for the same write time.
TASK_BOUNDS: Mapping[str, str] = {
    "spark.sql.inMemoryColumnarStorage.batchSize": "1000",
    "spark.hadoop.parquet.block.size": str(4 * 1024 * 1024),
}

#: Spark's Python worker daemon in local mode: PySpark's own, minus the imports from its zips
#: that every worker paid again (:mod:`jobs.worker_daemon`, issue #21).
LOCAL_WORKER_DAEMON: Mapping[str, str] = {"spark.python.daemon.module": "jobs.worker_daemon"}

#: No generated code in a local session: Spark's whole-stage code generation off, and its
#: expressions evaluated by the interpreter rather than compiled (``factoryMode`` is an internal
#: setting of Spark's SQLConf: ``CODEGEN_ONLY``, ``NO_CODEGEN`` or the default ``FALLBACK``).
#:
#: Why (issue #21): a night is a few hundred small queries (the audit's joins, Delta's reads of
#: each table's state and its writes' statistics), each over thousands of rows, not millions. A
#: Java Flight Recorder profile of one audit of 1,000 simulated servers put 32 % of the JVM's
#: sampled time in generating and compiling code with Janino, and the JIT compilers spent 15 of
#: their 52 s compiling Janino itself: a fixed cost per query that a 2-core machine pays in
#: wall time. Interpreted, the same audit took 67-87 s against 87-113 s (four alternating
#: pairs; at 10,000 servers 86-91 s against 96-98 s), and its findings are the same
#: (docs/benchmarks.md, "Generated code or the interpreter"). Local mode only, where it was
#: measured; the user's ``spark.conf`` wins, and a cluster can set the same two keys
#: (docs/deployment.md).
LOCAL_NO_CODEGEN: Mapping[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

#: HotSpot's JIT in the JVM a local run starts: its C1 compiler only (``TieredStopAtLevel=1``: no
#: profiling tiers, no C2), with the 240 MB code cache the default tiers reserve (C1 only reserves
#: 48 MB, and the night's compiled code takes about 62 MB: at 48 MB HotSpot flushed compiled
#: methods to stay within it, and the audit was slower than with the default tiers).
#:
#: Why (issue #21): the JVM of a night lives one to three minutes and runs a few hundred small
#: queries, so C2's optimised code never pays back its compiling: at 10,000 simulated servers
#: HotSpot's compilers took 66-78 s of a night's CPU, about a third of it. With these two options
#: they take 9 s, the night's client CPU falls by 16-29 %, night 2's collection from 4.6-5.1 to
#: 3.6-3.7 ms a server, and the nights took 139-153 s against 134-167 s. At 1,000 servers, where
#: the default's compiling runs on an otherwise idle core, the audit took 2-10 s longer for 22-30 %
#: less CPU (docs/benchmarks.md, "C1 only with its code cache").
#: Local mode only, where it was measured; a ``spark.driver.extraJavaOptions`` of the user's
#: replaces the job's options, these included (docs/deployment.md).
LOCAL_JIT_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")

#: The heap of a local session's JVM, which holds the driver and the executors' caches and
#: broadcasts alike (Spark's default is 1g). The demo's audit of its ten servers kept up to 779 MB
#: live after a collection on 1g (GC log, stop 48), and with the donors' stage (docs/checks.md)
#: up to 1,007 MB, where one run in three failed to build a broadcast ("Not enough memory to
#: build and broadcast the table"). A user's ``spark.conf``, ``SPARK_DRIVER_MEMORY`` or
#: ``spark-defaults.conf`` (or spark-submit's ``--driver-memory``) wins.
LOCAL_DRIVER_MEMORY = "2g"

#: The unit of memory a local session's sorts, hash aggregates and hash joins take from the
#: heap (``spark.buffer.pageSize``): each such operator of a running task holds at least one
#: page, whatever it holds. Spark sizes the page by the heap (the execution pool / cores / 16,
#: rounded up to a power of two, 1-64 MB): 8 MB on a 1 GB heap, 32 MB on the 2 GB of
#: :data:`LOCAL_DRIVER_MEMORY`, so doubling the heap quadrupled what each operator takes. Without
#: generated code (:data:`LOCAL_NO_CODEGEN`) a task's sorts and aggregates each hold their own
#: page, and the test session's live heap held 380-750 MB of such pages at a time for tables of
#: a few rows (class histograms, stop 50), where a broadcast then could not be built ("Not
#: enough memory to build and broadcast the table", CI of stop 49). A night's rows are small:
#: 2 MB pages; a record larger than a page gets a page of its own size. Read when the
#: SparkContext is created, so set on the builder; a user's ``spark.conf`` or
#: ``spark-defaults.conf`` wins.
LOCAL_PAGE_SIZE = "2m"

#: Settings of the one local session the tests share (and of small local runs).
LOCAL_TEST_CONF: Mapping[str, str] = {
    **DRIVER_BOUNDS,
    **TASK_BOUNDS,
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": LOCAL_DRIVER_MEMORY,
    "spark.buffer.pageSize": LOCAL_PAGE_SIZE,
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.databricks.delta.snapshotPartitions": "1",
    **LOCAL_WORKER_DAEMON,
    **LOCAL_NO_CODEGEN,
}

#: Shuffle partitions of a local session per core it runs tasks on.
LOCAL_SHUFFLE_PARTITIONS_PER_CORE = 4


def local_defaults(cores: int) -> dict[str, str]:
    """Defaults of a session the job starts in local mode with ``cores`` task slots (Spark's
    ``defaultParallelism``, which follows the JVM's view of the CPUs, container limits
    included), below the user's ``spark.conf``: sized by the cores rather than pinned (issue
    #19). Spark's 200 shuffle partitions are hundreds of idle tasks on one machine, so a local
    session has ``LOCAL_SHUFFLE_PARTITIONS_PER_CORE`` per core (8 on this 2-core machine, 64 on
    16 cores: the audit's Python stages keep every core busy, adaptive execution coalesces what
    is small). Delta rebuilds a table's state with ``snapshotPartitions`` tasks (50 by default);
    a nightly table's log is small, so one per core. No generated code (:data:`LOCAL_NO_CODEGEN`)."""
    cores = max(1, int(cores))
    return {"spark.databricks.delta.snapshotPartitions": str(cores),
            "spark.sql.shuffle.partitions": str(LOCAL_SHUFFLE_PARTITIONS_PER_CORE * cores),
            **LOCAL_NO_CODEGEN}


def _names_delta(value: str) -> bool:
    return "delta-spark" in value or "io.delta" in value


def delta_conf(user_conf: Mapping[str, str] | None = None, *, jars: bool = True) -> dict[str, str]:
    """What a new session needs for Delta: the cached jars (unless ``user_conf`` brings its own
    Delta through ``spark.jars`` / ``spark.jars.packages``, or ``jars`` is false: a local JVM
    with them on its launch class path), the SQL extension and the catalog.

    The user's other ``spark.jars`` are kept, before the cached ones. Raises a
    ``jobs.delta_jars.DeltaJarsError`` naming the fix when the jars are not installed.
    """
    user_conf = user_conf or {}
    conf = {"spark.sql.extensions": DELTA_EXTENSION_CLASS,
            "spark.sql.catalog.spark_catalog": DELTA_CATALOG_CLASS}
    own = user_conf.get("spark.jars", "")
    if jars and not (_names_delta(own) or _names_delta(user_conf.get("spark.jars.packages", ""))):
        conf["spark.jars"] = ",".join(filter(None, (own, installed_jars().csv)))
    return conf


def session_conf(settings: SparkSettings, *, jars: bool = True) -> dict[str, str]:
    """The conf a new session gets: UTC, the driver and task bounds, Delta (cached jars unless
    ``jars`` is false, extension, catalog), the configured extras."""
    conf = {"spark.sql.session.timeZone": "UTC", **DRIVER_BOUNDS, **TASK_BOUNDS}
    conf.update(settings.conf)
    conf.update(delta_conf(settings.conf, jars=jars))
    for key in ("spark.sql.extensions", "spark.sql.catalog.spark_catalog"):
        if key in settings.conf:  # the user's own extension list / catalog win
            conf[key] = settings.conf[key]
    return conf


def build_session(settings: SparkSettings | None = None, *, dump_class_archive: Path | None = None):
    """The active SparkSession, or a new one built from ``settings``.

    In local mode the JVM this starts has Delta's cached jars on its launch class path and maps
    the class archive built for that launch, if there is one (:mod:`jobs.class_archive`); with
    ``dump_class_archive`` it writes one there at its exit instead
    (:mod:`jobs.class_archive_build`)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        require_delta_classes(active)
        return active
    settings = settings or SparkSettings()
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit started the JVM
        return _session_under_spark_submit(settings)
    builder = SparkSession.builder.appName(settings.app_name)
    launch_env: dict[str, str] = {}
    master = settings.master or os.environ.get("MASTER") or "local[*]"
    builder = builder.master(master)
    if master.startswith("local"):
        # local workers must run this interpreter (the one with gtid-audit installed), and a
        # laptop or CI run has no use for the web UI
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.ui.enabled", "false")
        # the heap is read when the JVM starts, the page size when the context is created:
        # both before getOrCreate
        if not _user_sets(settings, "spark.driver.memory", "SPARK_DRIVER_MEMORY"):
            builder = builder.config("spark.driver.memory", LOCAL_DRIVER_MEMORY)
        if not _user_sets(settings, "spark.buffer.pageSize"):
            builder = builder.config("spark.buffer.pageSize", LOCAL_PAGE_SIZE)
        # stage progress bars on a terminal only; logs and CI stay quiet
        builder = builder.config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())
        # the job makes no catalog tables, but Spark's catalog creates its warehouse directory
        # (./spark-warehouse) on first use, e.g. by OPTIMIZE delta.`path`: keep it out of the
        # directory the job was started from
        if "spark.sql.warehouse.dir" not in settings.conf:
            builder = builder.config("spark.sql.warehouse.dir", str(default_cache_dir() / "spark-warehouse"))
        # Spark's JVM logs errors only, from its first line (setLogLevel comes too late for
        # the start-up banner); the job's own logs carry the story
        java_options = [f"-Dlog4j2.configurationFile=file:{LOG4J2_PROPERTIES}", *LOCAL_JIT_OPTIONS]
        # Delta's cached jars on the JVM's launch class path, its classes from the class
        # archive where one was built (jobs.class_archive)
        delta = _launch_delta_jars(settings)
        if delta is not None:
            launch_env["SPARK_DIST_CLASSPATH"] = launch_class_path(delta.jars, os.environ.get("SPARK_DIST_CLASSPATH"))
            if dump_class_archive is not None:
                java_options += dump_options(dump_class_archive, Path(f"{dump_class_archive}.log"))
            else:
                archive = class_archive(delta.jars)
                if archive is not None and archive.usable():
                    java_options += use_options(archive)
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
        # workers forked from a daemon that imports PySpark from site-packages, not its zips
        for key, value in LOCAL_WORKER_DAEMON.items():
            builder = builder.config(key, value)
    for key, value in session_conf(settings, jars="SPARK_DIST_CLASSPATH" not in launch_env).items():
        builder = builder.config(key, value)
    with _environment(launch_env):   # read by the launcher, which getOrCreate starts
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel(settings.log_level)
    if master.startswith("local"):
        _fill_local_defaults(session, settings)
    require_delta_classes(session)
    return session


#: Settings that bring jars of their own to the driver: with any of them in ``spark-defaults.conf``
#: the cached Delta jars stay in ``spark.jars``, as before the class archive.
_OWN_CLASS_PATH_KEYS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")


def _launch_delta_jars(settings: SparkSettings):
    """The cached Delta jars to put on a new local JVM's launch class path, or ``None`` where
    ``spark.jars`` must carry them as on a cluster:

    * the configuration brings its own Delta (``spark.jars`` / ``spark.jars.packages``);
    * this process's JVM is already running (a stopped session's: its class path is fixed);
    * Spark's configuration directory has a ``spark-env.sh``, which the launcher sources after
      this process set ``SPARK_DIST_CLASSPATH`` (a Hadoop-free Spark sets it there), or a
      ``spark-defaults.conf`` that sets one of :data:`_OWN_CLASS_PATH_KEYS` (its Delta, if it
      names one, must not meet the cached one on the class path)."""
    from pyspark import SparkContext

    conf = settings.conf
    if _names_delta(conf.get("spark.jars", "")) or _names_delta(conf.get("spark.jars.packages", "")):
        return None
    if SparkContext._gateway is not None:
        return None
    if (os.path.exists(os.path.join(_spark_conf_dir(), "spark-env.sh"))
            or any(_spark_defaults_set(key) for key in _OWN_CLASS_PATH_KEYS)):
        return None
    return installed_jars()


@contextlib.contextmanager
def _environment(changes: Mapping[str, str]):
    """``os.environ`` with ``changes`` for the length of the block (the launcher's environment
    is read when it starts; later child processes must not inherit it)."""
    saved = {key: os.environ.get(key) for key in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _user_sets(settings: SparkSettings, key: str, env_var: str | None = None) -> bool:
    """Whether the user chose a setting read before a local session exists (its JVM's heap, its
    context's page size): ``spark.conf``, the launcher's environment variable for it (``SPARK_DRIVER_MEMORY``),
    or ``key`` in the ``spark-defaults.conf`` Spark's launcher reads (:func:`_spark_conf_dir`)."""
    if key in settings.conf or (env_var and os.environ.get(env_var)):
        return True
    return _spark_defaults_set(key)


def _spark_conf_dir() -> str:
    """The directory whose ``spark-defaults.conf`` and ``spark-env.sh`` Spark's launcher reads:
    ``$SPARK_CONF_DIR``, else ``conf`` under :func:`jobs.class_archive.spark_home`."""
    return os.environ.get("SPARK_CONF_DIR") or str(spark_home() / "conf")


def _spark_defaults_set(key: str) -> bool:
    """Whether the ``spark-defaults.conf`` Spark's launcher reads sets ``key``."""
    try:
        with open(os.path.join(_spark_conf_dir(), "spark-defaults.conf"), encoding="utf-8") as f:
            # a Java properties file: "key value", "key=value" or "key: value"
            return any(re.split(r"[\s=:]", line.strip(), maxsplit=1)[0] == key for line in f)
    except OSError:
        return False


def _fill_local_defaults(session, settings: SparkSettings, submitted=None) -> None:
    """Set :func:`local_defaults` on a local ``session`` where neither the configuration's
    ``spark.conf`` nor, under spark-submit, its ``submitted`` SparkConf sets them."""
    for key, value in local_defaults(session.sparkContext.defaultParallelism).items():
        if key not in settings.conf and not (submitted is not None and submitted.contains(key)):
            session.conf.set(key, value)


def _session_under_spark_submit(settings: SparkSettings):
    """The session of a spark-submit run: the JVM and its classpath exist already, so
    spark-submit's master, name, ``--jars``/``--packages`` and ``--conf`` win; the configuration
    only fills in what spark-submit left unset. Delta's classes are checked before the session
    starts, so a missing jar is one clear error rather than Spark's warning and a later failure.
    With a local master the session gets :func:`local_defaults` and :data:`LOCAL_PAGE_SIZE`
    where neither set them, as a session the job starts in local mode does (the heap is
    spark-submit's: ``--driver-memory``)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    SparkContext._ensure_initialized()  # attaches to spark-submit's JVM; starts no context
    require_delta_classes(jvm=SparkContext._jvm)
    submitted = SparkConf()
    builder = SparkSession.builder
    if not submitted.contains("spark.app.name"):
        builder = builder.appName(settings.app_name)
    for key, value in session_conf_under_submit(settings).items():
        if not submitted.contains(key):
            builder = builder.config(key, value)
    if (submitted.get("spark.master", "").startswith("local") and not submitted.contains("spark.buffer.pageSize")
            and "spark.buffer.pageSize" not in settings.conf):
        # read when the context is created (its memory manager), which getOrCreate does below
        builder = builder.config("spark.buffer.pageSize", LOCAL_PAGE_SIZE)
    session = builder.getOrCreate()
    require_delta_classes(session)
    if submitted.get("spark.master", "").startswith("local"):
        # spark-submit --master local[...] (one machine, as the Airflow DAG can run it)
        _fill_local_defaults(session, settings, submitted)
    return session


def session_conf_under_submit(settings: SparkSettings) -> dict[str, str]:
    """The conf a session started under spark-submit gets where spark-submit set nothing: UTC,
    the task bounds, the configured extras, Delta's extension and catalog; never jars (the classpath is fixed)."""
    conf = {"spark.sql.session.timeZone": "UTC", **TASK_BOUNDS,
            "spark.sql.extensions": DELTA_EXTENSION_CLASS,
            "spark.sql.catalog.spark_catalog": DELTA_CATALOG_CLASS}
    conf.update(settings.conf)
    conf.pop("spark.jars", None)
    conf.pop("spark.jars.packages", None)
    return conf
