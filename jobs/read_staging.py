"""The read stage's output, written once to the warehouse: what makes a night's reads exactly-once.

Why (issue #20). The snapshot tables are written one Delta commit after the other, each from the
read stage's rows. Kept in the executors' block managers (``persist``), those rows died with an
executor: Spark then recomputed the lost partitions, which means it *read those servers again*,
minutes after the rest, and one run's ``servers`` and ``channels`` came from different reads (the
replica-before-source order the checks rely on no longer held between the tables). So the Spark
job that reads the servers writes what it read, in the same tasks, to a staging table in the
warehouse; the snapshot tables are derived from that table. A read task that completed has its
output on durable storage: losing its executor later costs a re-read of files, never of servers.
A task that did not complete is retried (``spark.task.maxFailures`` in ``deploy/submit.sh``) and
reads the servers of that task only; its partial output is never part of the commit.

Where: ``<warehouse>/_staging/collect/<run>/<attempt>/<stage>`` (:func:`run_staging_uri`,
:func:`stage_uri`): one directory per run id, holding one per attempt of that run id. A collection
removes its run id's directory before reading (a rerun replaces what an interrupted attempt left)
and after its tables are written (:func:`remove`). The attempt directory is fresh for each
collection, so nothing cached about an older staging table at the same path can be read back.

Format: one Delta table per read stage (the first read, the re-read), written by delta-spark like
every table of the warehouse: on object stores without an atomic rename its commit is one log
entry, where Spark's plain Parquet committer renames every file. Its columns are ``table`` (the
kind of pair: a snapshot table's name or one of the driver-only kinds of :mod:`jobs.collector`),
``server``, one struct column per snapshot table with that table's columns (filled only on that
table's rows; a reused binary-log header is a ``binary_logs`` row), and ``probe`` (the
:class:`Probe` of a server read with another topology than planned). Typed columns rather than
pickled rows: deriving a table is a column selection the JVM does alone, with no Python and no
deserialisation, and nothing read back from the warehouse is ever unpickled. Inside the structs
every column is nullable: the staging table is not where the NOT NULL columns are enforced, the
snapshot tables are (each read row is also checked against its schema as it is read).

The executor side (:func:`staged_partition`) imports the standard library, ``schemas`` and the
collector; the driver side (everything else here) needs Spark and Delta.
"""
from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any, Iterable, Iterator

from jobs.collector import PLAIN_TEXT, REPLAN, REUSED_HEADER, read_partition
from jobs.delta_io import OPTIMIZE_WRITE
from jobs.read_plan import Probe
from schemas import get_table

__all__ = ["STAGED_TABLES", "staging_schema", "staged_row", "staged_partition", "run_staging_uri",
           "stage_uri", "stage_reads", "read_stage", "table_frame", "staged_probes", "remove",
           "remove_stale"]

#: The snapshot tables whose rows the read stage yields, in the staging table's column order.
STAGED_TABLES = ("servers", "channels", "binary_logs", "relay_log_tail", "group_replication",
                 "group_members", "collection_errors")
_KIND_COLUMN = {name: name for name in STAGED_TABLES} | {REUSED_HEADER: "binary_logs"}
_STRUCT_INDEX = {name: 2 + i for i, name in enumerate(STAGED_TABLES)}
_WIDTH = 2 + len(STAGED_TABLES) + 1   # table, server, one struct per table, probe
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
#: The table property (given as a write option, it is set when the write creates the table) that
#: leaves a table's files with their row counts only, no per-column statistics.
NO_STATISTICS = ("delta.dataSkippingNumIndexedCols", "0")


def staging_schema():
    """The staging table's Spark schema (module docstring, "Format")."""
    from pyspark.sql import types as T

    def nullable(struct):
        return T.StructType([T.StructField(f.name, f.dataType, True) for f in struct.fields])

    address = T.ArrayType(T.StructType([T.StructField("host", T.StringType()),
                                        T.StructField("port", T.LongType()),
                                        T.StructField("uuid", T.StringType())]))
    probe = T.StructType([T.StructField("name", T.StringType()), T.StructField("server_uuid", T.StringType()),
                          T.StructField("sources", address), T.StructField("replicas", address),
                          T.StructField("ok", T.BooleanType()), T.StructField("hostname", T.StringType()),
                          T.StructField("reported_port", T.LongType()),
                          T.StructField("encrypted", T.BooleanType())])
    return T.StructType([T.StructField("table", T.StringType(), False), T.StructField("server", T.StringType()),
                         *[T.StructField(name, nullable(get_table(name).to_spark())) for name in STAGED_TABLES],
                         T.StructField("probe", probe)])


def staged_row(pair: tuple[str, Any]) -> tuple:
    """One ``(table, row)`` pair of :func:`jobs.collector.read_partition` as a staging row."""
    table, row = pair
    out: list[Any] = [table, None] + [None] * (_WIDTH - 2)
    if table == REPLAN:
        out[1] = row.name
        out[-1] = (row.name, row.server_uuid, [tuple(a) for a in row.sources], [tuple(a) for a in row.replicas],
                   row.ok, row.hostname, row.reported_port, row.encrypted)
    elif table == PLAIN_TEXT:
        out[1] = row
    else:
        column = _KIND_COLUMN[table]
        out[1] = row[get_table(column).column_names.index("server")]
        out[_STRUCT_INDEX[column]] = row
    return tuple(out)


def staged_partition(items: Iterable[Any], ctx, inventory) -> Iterator[tuple]:
    """The read task (executor side): :func:`jobs.collector.read_partition`, each pair as a
    staging row."""
    return map(staged_row, read_partition(items, ctx, inventory))


def _run_directory(run_id: str) -> str:
    """A path segment for ``run_id``: its safe characters, and a digest of the whole id (``:``
    and ``+`` are valid in a run id and not in a Hadoop path segment)."""
    return f"{_UNSAFE.sub('_', run_id)}-{hashlib.sha256(run_id.encode()).hexdigest()[:12]}"


def staging_root(warehouse: str) -> str:
    """The directory holding every run's staging directory."""
    return f"{warehouse.rstrip('/')}/_staging/collect"


def run_staging_uri(warehouse: str, run_id: str) -> str:
    """Where every attempt of run ``run_id`` stages its reads."""
    return f"{staging_root(warehouse)}/{_run_directory(run_id)}"


def stage_uri(run_uri: str, attempt: str, stage: str) -> str:
    """The staging table of one read stage (``read``, ``reread``) of one attempt."""
    return f"{run_uri}/{attempt}/{stage}"


def new_attempt() -> str:
    """A fresh attempt directory name."""
    return "attempt-" + secrets.token_hex(6)


def stage_reads(spark, rows, uri: str):
    """Write ``rows`` (an RDD of staging rows whose computation performs the reads) as the Delta
    table ``uri``, in one Spark job: the reads run in that job's tasks, which write their own
    output. Returns the staging table as a DataFrame, read back from ``uri``."""
    # never an optimized write, whatever the session says: its shuffle would stand between the
    # reads and this write, and a lost executor would then perform the reads again. No column
    # statistics (numRecords only): nothing reads this table by a filter they could skip files
    # for, and computing them was two thirds of the read stage's JVM time (the interpreted
    # projection of local mode's NO_CODEGEN, over the first 32 of the structs' ~200 leaf columns;
    # docs/benchmarks.md, "The staging table's statistics")
    (spark.createDataFrame(rows, schema=staging_schema())
     .write.format("delta").mode("overwrite").option(OPTIMIZE_WRITE, "false")
     .option(NO_STATISTICS[0], NO_STATISTICS[1]).save(uri))
    return read_stage(spark, uri)


def read_stage(spark, uri: str):
    """The staging table at ``uri``."""
    return spark.read.format("delta").load(uri)


def table_frame(staged, table: str):
    """The rows of ``table`` (a snapshot table's name, or :data:`REUSED_HEADER`) as a DataFrame of
    that table's columns, in order."""
    from pyspark.sql import functions as F

    return staged.where(F.col("table") == F.lit(table)).select(f"{_KIND_COLUMN[table]}.*")


def staged_probes(staged) -> list[Probe]:
    """The :class:`Probe` of every server read with another topology than planned (one per such
    server: a bounded list for the driver)."""
    from pyspark.sql import functions as F

    def addresses(values):
        return tuple((a["host"], a["port"], a["uuid"]) for a in values or ())

    return [Probe(name=p["name"], server_uuid=p["server_uuid"], sources=addresses(p["sources"]),
                  replicas=addresses(p["replicas"]), ok=p["ok"], hostname=p["hostname"],
                  reported_port=p["reported_port"], encrypted=p["encrypted"])
            for p in (r["probe"] for r in staged.where(F.col("table") == F.lit(REPLAN)).select("probe").collect())]


def _file_system(spark, uri: str):
    """Hadoop's file system of ``uri`` (a local path or an object store, with the session's
    credentials) and the URI as a Hadoop ``Path``."""
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def remove(spark, uri: str) -> None:
    """Delete the directory ``uri`` and everything under it, if it exists."""
    fs, path = _file_system(spark, uri)
    if fs.exists(path):
        fs.delete(path, True)


def _changed_since(fs, status, cutoff_ms: int) -> bool:
    """Whether ``status`` or anything under it was modified at or after ``cutoff_ms`` (epoch ms);
    the walk stops at the first such file or directory (each listing is a request on an object
    store)."""
    if status.getModificationTime() >= cutoff_ms:
        return True
    return status.isDirectory() and any(_changed_since(fs, child, cutoff_ms)
                                        for child in fs.listStatus(status.getPath()))


def remove_stale(spark, warehouse: str, *, older_than_hours: int, now_ms: int) -> list[str]:
    """Delete the staging directories of runs whose collection ended without removing them (a
    driver killed mid-collection, a lost node: the collection removes its own in every other
    case) and in which nothing changed for ``older_than_hours``; return their names.

    The age is that of the newest file or directory under a run's directory, so a collection in
    progress, which writes its attempt's files as its read tasks end, is never removed as long as
    ``older_than_hours`` is longer than one read stage. A rerun of that run id would remove the
    directory too (:func:`jobs.collect.run_collect` clears it before reading); this is for the run
    ids never rerun."""
    fs, root = _file_system(spark, staging_root(warehouse))
    if not fs.exists(root):
        return []
    cutoff = now_ms - older_than_hours * 3_600_000
    removed = []
    for run_dir in fs.listStatus(root):
        if run_dir.isDirectory() and not _changed_since(fs, run_dir, cutoff):
            fs.delete(run_dir.getPath(), True)
            removed.append(run_dir.getPath().getName())
    return sorted(removed)
