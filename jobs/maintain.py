"""``gtid-audit maintain``: the tables' lifecycle, also the last step of ``run`` (``maintenance.after_run``).

For every table of the warehouse, in one Spark session:

1. **Table properties** from the ``maintenance`` settings (``delta.logRetentionDuration``,
   ``delta.deletedFileRetentionDuration``, ``delta.checkpointInterval``); new tables get the
   defaults at creation (``jobs.delta_io.table_properties``). An unchanged property is not
   rewritten, so a steady night adds no commit for it.
2. **Retention**: ``DELETE WHERE run_date < <date> - retention_days``. The predicate names only
   the partition column, so Delta drops whole files without reading them. A table deletes on
   **its own night, one in ``retention_every_days``** (:func:`_retention_day`, the night before
   its VACUUM night), every partition past its retention at once: a DELETE costs about the same
   whatever it drops, so a steady warehouse pays one a week per table, not one a night. On
   another night it deletes only when a partition has waited the whole interval past its
   retention (its own night did not run). A partition is thus kept ``retention_days`` to
   ``retention_days + retention_every_days - 1`` days.
3. **Compaction**: ``OPTIMIZE ... WHERE run_date IN (<the partitions of the last optimize_days
   days that hold two files or more below Delta's optimize.minFileSize>) ZORDER BY (<the columns
   the dashboards filter on>)``: a partition's small files (a rerun's beside the night's) become
   one file. The nightly writes are optimized writes (``jobs.delta_io.OPTIMIZE_WRITE``), so a
   night alone leaves one file per partition and nothing to compact. A partition already
   compacted is not rewritten again (Delta's Z-order rewrites even a partition of one file), and
   a table with nothing to compact gets no OPTIMIZE commit.
4. **VACUUM** with the table's ``delta.deletedFileRetentionDuration``: the files removed by
   reruns, retention, compaction and the nightly whole-table replacement of ``uuid_registry``
   are deleted once older than that. A table whose history since its last completed VACUUM
   holds no removal old enough to delete is not vacuumed (:func:`_vacuum_due`): no VACUUM commits.
   Nor is a table on another night than its own, one in ``vacuum_every_days`` (the tables' days
   are spread over the interval, :func:`_vacuum_day`), unless what it can delete has waited that
   long: once retention deletes a partition of every retained table every night, a night
   vacuums a few tables, not all of them.

Tables are maintained ``maintenance.concurrent_tables`` at a time (threads of one Spark session:
most of a table's time is the driver's own, replaying its log and committing, and small jobs of
different tables share the executors). Then, when every table is maintained (no ``--table``), the
read stage's **staging** directories
that a killed collection left (``<warehouse>/_staging/collect/<run>``, :mod:`jobs.read_staging`)
are deleted once nothing in them changed for ``staging_max_age_hours``.

Exit codes of the command: 0 done; 1 a table could not be maintained (the others still were).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import logging
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

from jobs.config import ConfigError, GtidAuditConfig, MaintenanceSettings, load_config
from jobs.logs import error_line

__all__ = ["MaintenanceError", "TableMaintenance", "StagingCleanup", "maintain_tables", "register"]

log = logging.getLogger("gtid_audit.maintain")


class MaintenanceError(RuntimeError):
    """Raised before any table is touched when the ``maintenance`` settings name a table or a
    Z-order column the schemas do not have (quoted in the message)."""


@dataclass
class TableMaintenance:
    """What maintenance did to one table."""

    table: str
    exists: bool = True
    properties_set: dict[str, str] = field(default_factory=dict)
    deleted_before: dt.date | None = None      # partitions older than this were deleted
    rows_deleted: int = 0
    files_compacted: int = 0                    # files OPTIMIZE removed (rewritten into fewer)
    files_vacuumed: int = 0
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)   # "delete", "optimize", "vacuum": when run
    error: str | None = None

    def line(self) -> str:
        if not self.exists:
            return f"{self.table}: no table"
        if self.error:
            return f"{self.table}: FAILED {self.error}"
        kept = (f"deleted {self.rows_deleted} rows before {self.deleted_before}" if self.deleted_before
                else "no rows deleted")
        phases = "".join(f", {phase} {seconds:.1f}s" for phase, seconds in self.phase_seconds.items())
        return (f"{self.table}: {kept}, compacted {_files(self.files_compacted)}, "
                f"vacuumed {_files(self.files_vacuumed)} ({self.seconds:.1f}s{phases})")


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


@dataclass
class StagingCleanup:
    """What maintenance removed of the staging left by collections that did not end (read like a
    :class:`TableMaintenance`: ``line``, ``exists``, ``error``)."""

    table: str = "_staging/collect"
    exists: bool = True
    removed: list[str] = field(default_factory=list)   # run directories deleted
    error: str | None = None

    def line(self) -> str:
        if self.error:
            return f"{self.table}: FAILED {self.error}"
        return f"{self.table}: removed {len(self.removed)} stale run directories"


def check_settings(settings: MaintenanceSettings) -> None:
    """Raise :class:`MaintenanceError` for a table or Z-order column that does not exist, or a
    Z-order on a partition column."""
    from schemas import all_tables

    tables = all_tables()
    for group in ("retention_days", "zorder"):
        for name in getattr(settings, group):
            if name not in tables:
                raise MaintenanceError(f"maintenance.{group}: unknown table {name!r} (known: {sorted(tables)!r})")
    for name, days in settings.retention_days.items():
        if days is not None and "run_date" not in tables[name].column_names:
            raise MaintenanceError(f"maintenance.retention_days.{name}: table {name!r} has no "
                                   f"run_date, retention does not apply")
    for name, cols in settings.zorder.items():
        schema = tables[name]
        for col in cols:
            if col not in schema.column_names:
                raise MaintenanceError(f"maintenance.zorder.{name}: unknown column {col!r}")
            if col in schema.partition_by:
                raise MaintenanceError(f"maintenance.zorder.{name}: {col!r} is a partition column")
        if cols and schema.cluster_by:
            raise MaintenanceError(f"maintenance.zorder.{name}: the table is clustered by "
                                   f"{schema.cluster_by!r}; OPTIMIZE clusters it, Z-order does not apply")


def _set_properties(spark, uri: str, wanted: dict[str, str]) -> dict[str, str]:
    """ALTER the properties that differ; returns those it set."""
    current = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{uri}`").collect()}
    changed = {k: v for k, v in wanted.items() if current.get(k) != v}
    if changed:
        assignments = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(changed.items()))
        spark.sql(f"ALTER TABLE delta.`{uri}` SET TBLPROPERTIES ({assignments})")
    return changed


@contextlib.contextmanager
def _session_conf(spark, key: str, value: str):
    """``key`` set to ``value`` in the session for the block, restored after."""
    old = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def _vacuum(spark, table, uri: str) -> None:
    """VACUUM LITE (the files the log says were removed, no directory listing) with the table's
    delta.deletedFileRetentionDuration; a full VACUUM when the log no longer covers the files
    to delete (Delta refuses LITE then) or this Delta has no LITE.

    After a full VACUUM that stood in for a refused LITE, the table's LITE watermark is recorded
    as a LITE would have recorded it (:func:`_lite_watermark`, :func:`_record_lite_watermark`).
    Delta's full VACUUM records none: ``VacuumCommand.gc`` computes
    ``latestCommitVersionOutsideOfRetentionWindow`` for LITE only and persists ``LastVacuumInfo``
    unconditionally, so a full run writes ``{}``; and ``getFilesFromDeltaLog`` refuses LITE
    (``DELTA_CANNOT_VACUUM_LITE``) when the log no longer starts at version 0 and holds no
    watermark (delta-io/delta, spark/src/main/scala/org/apache/spark/sql/delta/commands/
    VacuumCommand.scala, 4.x). Without it, a table refused once (its log cleaned up before its
    first LITE) lists every partition directory on every VACUUM night for ever. This is
    delta-io/delta issue #4162, open, with a fix proposed inside Delta (pull request #5596); once
    Delta records the watermark itself, this becomes redundant (it writes a value no higher than
    Delta's, which is harmless) and can go."""
    try:
        spark.sql(f"VACUUM delta.`{uri}` LITE")
        return
    except Exception as exc:  # noqa: BLE001 - Py4J/Analysis errors of any kind: fall back
        reason = error_line(exc)
        log.info("VACUUM LITE of %s not possible (%s): full VACUUM", uri, reason)
    if _LITE_REFUSED not in reason:   # not the log's refusal (no LITE here, another error)
        table.vacuum()
        return
    recorded = _read_lite_watermark(spark, uri)
    # before the full VACUUM starts: its own horizon is measured from a later instant
    before_version = table.history(1).select("version").collect()[0]["version"]
    before_ms = spark.sparkContext._jvm.java.lang.System.currentTimeMillis()
    spark.sql(f"VACUUM delta.`{uri}` FULL")   # FULL by name: table.vacuum() follows vacuum.lite.enabled
    try:
        history = (table.history().selectExpr("version", "unix_millis(timestamp) AS ms", "operation",
                                              "operationParameters").collect())
        watermark = _lite_watermark(history, before_version, before_ms)
    except Exception as exc:  # noqa: BLE001 - the history unreadable now: the next VACUUM is full again
        log.warning("reading the history of %s after its full VACUUM failed (%s): no LITE watermark recorded",
                    uri, error_line(exc))
        return
    earliest = min((r["version"] for r in history), default=None)
    if recorded is not None and earliest is not None and recorded >= earliest:
        log.warning("VACUUM LITE of %s was refused although its log holds the watermark recorded in %s "
                    "(version %d, the log starts at %d): this Delta does not read it, so the table's VACUUMs "
                    "stay full and no watermark is recorded", uri, _LAST_VACUUM_INFO, recorded, earliest)
        return
    if watermark is not None:
        _record_lite_watermark(spark, uri, watermark)


#: Delta's error class when the log cannot tell LITE what to delete (VacuumCommand.scala).
_LITE_REFUSED = "DELTA_CANNOT_VACUUM_LITE"
#: Where Delta keeps the last VACUUM's watermark, and the one field LITE reads from it
#: (``LastVacuumInfo``, one JSON line written by Delta's LogStore).
_LAST_VACUUM_INFO = "_delta_log/_last_vacuum_info"
_WATERMARK_FIELD = "latestCommitVersionOutsideOfRetentionWindow"


def _lite_watermark(history, before_version: int, before_ms: int) -> int | None:
    """What a LITE VACUUM would have recorded as ``latestCommitVersionOutsideOfRetentionWindow``
    for the full VACUUM whose START commit follows ``before_version`` (``history``: the table's
    commits, version, ``ms``, operation and parameters): the newest commit up to
    ``before_version`` whose timestamp is past that VACUUM's own retention (its START commit's
    ``specifiedRetentionMillis`` or ``defaultRetentionMillis``, the larger) before
    ``before_ms``, an instant taken before it started, less the hour's allowance. None when no
    commit is that old, or when the VACUUM left no START commit (its logging off).

    Why it is sound: a file a commit up to that version removed carries a deletion time no later
    than the commit, so its tombstone had expired for the full VACUUM, whose horizon (its start
    less the same retention) is later; so the full VACUUM deleted it, and a later LITE may start
    at the commit after it. The hour's allowance covers a store's clock against the JVM's; the
    value can only be lower than Delta's own, which makes a later LITE read more of the log,
    never skip a removal. What it assumes: a removed file's modification time is no later than
    its removal (a full VACUUM selects files by it), so a data file rewritten in place after its
    commit (a storage-class copy, a partial restore) is not deleted by either VACUUM."""
    starts = [r for r in history if r["operation"] == "VACUUM START" and r["version"] > before_version]
    if not starts:
        return None
    params = min(starts, key=lambda r: r["version"])["operationParameters"]
    retention_ms = max(_millis(params, "specifiedRetentionMillis"), _millis(params, "defaultRetentionMillis"))
    horizon_ms = before_ms - retention_ms - _VACUUM_SLACK_MS
    outside = [r["version"] for r in history if r["version"] <= before_version and r["ms"] <= horizon_ms]
    return max(outside, default=None)


def _lite_watermark_path(spark, uri: str):
    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(f"{uri.rstrip('/')}/{_LAST_VACUUM_INFO}")
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def _read_lite_watermark(spark, uri: str) -> int | None:
    """The watermark in the table's ``_last_vacuum_info``; None when there is none (no file,
    Delta's ``{}``, a file this job cannot read or parse)."""
    try:
        fs, path = _lite_watermark_path(spark, uri)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            text = spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
        value = json.loads(str(text)).get(_WATERMARK_FIELD)
        return value if isinstance(value, int) else None
    except Exception:  # noqa: BLE001 - unreadable is the same as absent here: LITE refuses either way
        return None


def _record_lite_watermark(spark, uri: str, version: int) -> None:
    """Write ``_delta_log/_last_vacuum_info`` as Delta's LITE VACUUM writes it, through the
    table's Hadoop file system. A failure is logged, not raised: the table then stays on full
    VACUUMs, as before."""
    payload = json.dumps({_WATERMARK_FIELD: version}, separators=(",", ":")) + "\n"
    try:
        fs, path = _lite_watermark_path(spark, uri)
        out = fs.create(path, True)
        try:
            out.write(bytearray(payload.encode("ascii")))
        finally:
            out.close()
    except Exception as exc:  # noqa: BLE001 - a store refusing the write: the next VACUUM is full again
        log.warning("recording the LITE VACUUM watermark of %s failed (%s): its next VACUUM is full too",
                    uri, error_line(exc))
        return
    log.info("VACUUM of %s: LITE watermark recorded at version %d (Delta's full VACUUM records none)",
             uri, version)


#: Operations whose commits never remove a data file (they add files or change metadata only).
#: ``WRITE`` is judged by its ``numRemovedFiles`` metric; any other operation is taken to remove.
_NO_REMOVAL = frozenset({"CREATE TABLE", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "ADD COLUMNS",
                         "CHANGE COLUMN", "VACUUM START", "VACUUM END"})
#: Allowance between a commit's timestamp and the deletion timestamps of its removed files (set
#: when its transaction began), so that a long transaction's removals are not missed.
_VACUUM_SLACK_MS = 3600 * 1000
_DAY_MS = 24 * 3600 * 1000


def _removes_files(operation: str, metrics) -> bool:
    if operation in _NO_REMOVAL:
        return False
    if operation == "WRITE":
        return (metrics or {}).get("numRemovedFiles") != "0"
    return True


def _vacuum_day(name: str, every_days: int) -> int:
    """The day (``date.toordinal() % every_days``) on which table ``name`` is vacuumed: the
    registered tables in name order, spread over the ``every_days`` days, so that about
    ``1/every_days`` of them are vacuumed each night rather than all on one."""
    from schemas import all_tables

    return sorted(all_tables()).index(name) % every_days


def _retention_day(name: str, every_days: int) -> int:
    """The day (``date.toordinal() % every_days``) on which table ``name`` deletes what is past its
    retention: the night before its VACUUM night (:func:`_vacuum_day`) when both intervals are the
    same. A VACUUM on the same night would find the files the DELETE removed a week earlier just about ``deleted_file_retention_hours``
    (a week by default) old, on one side of it or the other by the night's timing; a night later
    they are a day past it, and the VACUUM of the table's next night deletes them."""
    return (_vacuum_day(name, every_days) - 1) % every_days


def _vacuum_due(spark, table, retention_hours: int, *, every_days: int = 1, on_its_day: bool = True) -> bool:
    """Whether VACUUM should run now: it could delete something, and it is the table's day.

    It could delete something when a commit removed files (an overwrite that replaced files,
    DELETE, OPTIMIZE, MERGE, ...) since the files the last completed VACUUM left in place (those
    removed less than its retention before it ran: the retention it used, from its START commit,
    or today's if longer) and long enough ago to be past today's retention. A table never
    vacuumed is judged on every removal of its history when that history reaches back to its
    creation (version 0), else it is taken to have something to delete. A table whose VACUUMs
    are not logged looks never vacuumed (:func:`maintain_tables` turns Delta's VACUUM logging on,
    which Delta leaves off on S3 by default).

    It is the table's night when ``on_its_day`` (:func:`_vacuum_day`; every night when
    ``every_days`` is 1, since every ordinal is 0 modulo 1). On another night a table is vacuumed only when a removal it could delete has been
    deletable for ``every_days`` days (less the hour's allowance): its own night, which came
    meanwhile, did not run (a scheduler that skips that weekday, an outage) or the table was
    maintained only with ``--table`` on other nights. Tables whose retention starts deleting on
    the same day (every retained table of a new warehouse) thus still fall on their own nights,
    and no table waits for ever. A history cut short (no version 0, no VACUUM in it) may hide
    removals: such a table with nothing visible to delete is vacuumed on its own night.

    Times are the JVM's clock and the commits' timestamps, as VACUUM's own horizon is; an hour's
    allowance either side (Delta stamps a removed file when its transaction starts, never after
    its commit). A night whose writes only add files (most tables until retention starts
    deleting) thus costs no VACUUM and no VACUUM commits; once retention deletes a partition
    every night, a table is vacuumed once every ``every_days`` nights, each VACUUM deleting
    what the nights since removed. What this cannot see: files in the table's directory that no
    commit ever named (a write that failed before committing); a full VACUUM (``VACUUM`` in SQL)
    deletes those, and LITE, which this job runs, never does."""
    from pyspark.sql import functions as F

    rows = (table.history()
            .select("version", F.unix_millis("timestamp").alias("ms"), "operation", "operationParameters",
                    "operationMetrics")
            .collect())
    if not rows:
        return False
    now_ms = spark.sparkContext._jvm.java.lang.System.currentTimeMillis()
    retention_ms = retention_hours * 3600 * 1000
    completed = [r for r in rows if r["operation"] == "VACUUM END"
                 and str((r["operationParameters"] or {}).get("status", "")).upper() == "COMPLETED"]
    starts = []
    if completed:
        last_end = max(completed, key=lambda r: r["version"])
        starts = [r for r in rows if r["operation"] == "VACUUM START" and r["version"] < last_end["version"]]
    if starts:
        start = max(starts, key=lambda r: r["version"])
        used_ms = max([retention_ms] + [_millis(start["operationParameters"], key)
                                        for key in ("specifiedRetentionMillis", "defaultRetentionMillis")])
        left_from = start["ms"] - used_ms - _VACUUM_SLACK_MS     # removed since: the last VACUUM kept them
        whole = True
    else:                                                        # never vacuumed, as far as the log shows
        left_from = None
        whole = min(r["version"] for r in rows) == 0
    deletable_to = now_ms - retention_ms + _VACUUM_SLACK_MS      # removed before: past the retention now
    deletable = [r["ms"] for r in rows
                 if (left_from is None or left_from <= r["ms"]) and r["ms"] <= deletable_to
                 and _removes_files(r["operation"], r["operationMetrics"])]
    if not deletable:
        return on_its_day and not whole
    if on_its_day:
        return True
    deletable_since = min(deletable) + retention_ms - _VACUUM_SLACK_MS
    return now_ms - deletable_since >= every_days * _DAY_MS


def _millis(parameters, key: str) -> int:
    """A VACUUM START parameter in milliseconds (0 when absent or not a number)."""
    try:
        return int(str((parameters or {}).get(key)).strip('"'))
    except ValueError:
        return 0


def _metric(df, name: str) -> int:
    rows = df.collect()
    if not rows or name not in rows[0].asDict():
        return 0
    value = rows[0][name]
    return int(value or 0)


_RUN_DATE_DIR = re.compile(r"/run_date=(\d{4}-\d{2}-\d{2})/[^/]+$")


def _compaction_filter(spark, uri: str, schema, since: dt.date) -> str | None:
    """What OPTIMIZE should compact: ``None`` nothing, ``""`` the whole table, else a ``WHERE``.

    A liquid-clustered table is always handed to OPTIMIZE (it clusters only what is not yet
    clustered). Otherwise the table's files are counted by partition, and sized, with the
    files that are smaller than Delta's ``optimize.minFileSize`` (the same rule Delta's own
    compaction applies) counted: only a partition (of ``run_date >= since`` in a partitioned
    table) holding two or more such files is compacted. Files outside ``run_date=<date>/``
    directories (a layout this job does not write) fall back to the whole range.
    """
    if schema.cluster_by:
        return ""
    partitioned = "run_date" in schema.partition_by
    since_clause = f"run_date >= DATE'{since.isoformat()}'"
    files = spark.read.format("delta").load(uri).inputFiles()
    min_size = int(spark.conf.get("spark.databricks.delta.optimize.minFileSize", str(1024 * 1024 * 1024)))
    in_window: list[tuple[str, str]] = []        # (run_date or "", path)
    for f in files:
        day = ""
        if partitioned:
            match = _RUN_DATE_DIR.search(f)
            if match is None:
                return since_clause
            day = match.group(1)
            if dt.date.fromisoformat(day) < since:
                continue
        in_window.append((day, f))
    small: Counter[str] = Counter()
    try:
        hadoop_path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path
        hadoop_conf = spark.sparkContext._jsc.hadoopConfiguration()
        file_system = None
        for day, f in in_window:
            path = hadoop_path(f)
            file_system = file_system or path.getFileSystem(hadoop_conf)   # one table: one file system
            if file_system.getFileStatus(path).getLen() < min_size:
                small[day] += 1
    except Exception as exc:  # noqa: BLE001 - a store refusing the lookup: compact as before; VACUUM is decided as usual
        log.warning("sizing the files of %s failed (%s): compacting the whole window", uri, error_line(exc))
        return since_clause if partitioned else ""
    due = sorted(day for day, n in small.items() if n >= 2)
    if not due:
        return None
    if not partitioned:
        return ""
    return "run_date IN (" + ", ".join(f"DATE'{day}'" for day in due) + ")"


def maintain_table(spark, warehouse: str, name: str, settings: MaintenanceSettings, *,
                   on: dt.date) -> TableMaintenance:
    """Properties, retention, compaction and VACUUM of one table (see the module docstring)."""
    from delta.tables import DeltaTable

    from jobs.delta_io import table_properties, table_uri
    from schemas import get_table

    started = time.monotonic()
    out = TableMaintenance(table=name)
    uri = table_uri(warehouse, name)
    if not DeltaTable.isDeltaTable(spark, uri):
        out.exists = False
        return out
    schema = get_table(name)
    table = DeltaTable.forPath(spark, uri)
    out.properties_set = _set_properties(spark, uri, table_properties(
        log_retention_days=settings.log_retention_days,
        deleted_file_retention_hours=settings.deleted_file_retention_hours,
        checkpoint_interval=settings.checkpoint_interval))

    days = settings.retention_days.get(name)
    if days is not None and "run_date" in schema.column_names:   # partitioned: whole files dropped
        every = settings.retention_every_days
        before = on - dt.timedelta(days=days)
        # on another night than its own, only a partition that has waited the whole interval
        # (its own night did not run) makes the table delete now
        due = before if on.toordinal() % every == _retention_day(name, every) else before - dt.timedelta(days=every - 1)
        if spark.read.format("delta").load(uri).where(f"run_date < DATE'{due.isoformat()}'").limit(1).count():
            out.deleted_before = before
            phase_started = time.monotonic()
            table.delete(f"run_date < DATE'{before.isoformat()}'")
            out.rows_deleted = _metric(table.history(1).selectExpr(
                "cast(operationMetrics['numDeletedRows'] as bigint) AS n"), "n")
            out.phase_seconds["delete"] = time.monotonic() - phase_started

    if settings.optimize:
        where = _compaction_filter(spark, uri, schema, on - dt.timedelta(days=settings.optimize_days))
        if where is not None:
            phase_started = time.monotonic()
            builder = table.optimize()
            if where:
                builder = builder.where(where)
            cols = list(settings.zorder.get(name, ()))
            result = builder.executeZOrderBy(*cols) if cols else builder.executeCompaction()
            out.files_compacted = _metric(result.selectExpr("metrics.numFilesRemoved AS n"), "n")
            out.phase_seconds["optimize"] = time.monotonic() - phase_started

    phase_started = time.monotonic()
    every = settings.vacuum_every_days
    if settings.vacuum and _vacuum_due(spark, table, settings.deleted_file_retention_hours, every_days=every,
                                       on_its_day=on.toordinal() % every == _vacuum_day(name, every)):
        before = table.history(1).select("version").collect()[0]["version"]
        _vacuum(spark, table, uri)
        vac = table.history(3).where(f"version > {before} AND operation = 'VACUUM END'")
        out.files_vacuumed = _metric(vac.selectExpr(
            "cast(operationMetrics['numDeletedFiles'] as bigint) AS n"), "n")
        out.phase_seconds["vacuum"] = time.monotonic() - phase_started
    out.seconds = time.monotonic() - started
    return out


def clean_staging(spark, warehouse: str, settings: MaintenanceSettings) -> StagingCleanup:
    """Remove the staging of collections that did not end (module docstring)."""
    from jobs.read_staging import remove_stale

    out = StagingCleanup()
    try:
        out.removed = remove_stale(spark, warehouse, older_than_hours=settings.staging_max_age_hours,
                                   now_ms=int(time.time() * 1000))
    except Exception as exc:  # noqa: BLE001 - Py4J/file-system errors of any kind: reported, not fatal
        log.error("removing stale staging failed: %s", error_line(exc), exc_info=True)
        out.error = f"{type(exc).__name__}: {error_line(exc)}"
    return out


def maintain_tables(spark, config: GtidAuditConfig, *, on: dt.date | None = None,
                    tables: Sequence[str] | None = None,
                    report: Callable[[str], None] | None = None) -> list[TableMaintenance | StagingCleanup]:
    """Maintain every registered table (or ``tables``) of the configured warehouse, as of
    ``on`` (default: today, UTC), then, without ``tables``, remove stale staging (the last
    result). A table that fails is reported in its result, never stops the others. Each result's
    line goes to ``report`` as it comes (default: the log; ``gtid-audit maintain`` prints it)."""
    from schemas import all_tables

    settings = config.maintenance
    check_settings(settings)
    names = list(tables) if tables else sorted(all_tables())
    unknown = sorted(set(names) - set(all_tables()))
    if unknown:
        raise MaintenanceError(f"unknown table(s) {unknown!r}")
    on = on or dt.datetime.now(dt.timezone.utc).date()
    warehouse = config.resolved_warehouse()
    say = report or (lambda line: log.info("%s", line))

    def one(name: str) -> TableMaintenance:
        try:
            result = maintain_table(spark, warehouse, name, settings, on=on)
        except Exception as exc:  # noqa: BLE001 - one table's failure must not stop the others
            log.error("maintenance of %s failed: %s", name, error_line(exc), exc_info=True)
            result = TableMaintenance(table=name, error=f"{type(exc).__name__}: {error_line(exc)}")
        say(result.line())
        return result

    # VACUUM lists the table's directories with spark.sql.sources.parallelPartitionDiscovery
    # .parallelism tasks (default 10,000: 68 s of empty tasks on a 2-core machine for a table of a
    # few partitions); the cluster's parallelism is plenty for one table's directories. Set once
    # for all the tables: a session setting is shared by the threads.
    # Delta logs VACUUM (its START and END commits) only on some file systems unless told to; on
    # S3 it does not, and without them _vacuum_due cannot tell that a table was vacuumed.
    with _session_conf(spark, "spark.sql.sources.parallelPartitionDiscovery.parallelism",
                       str(max(1, spark.sparkContext.defaultParallelism))), \
            _session_conf(spark, "spark.databricks.delta.vacuum.logging.enabled", "true"):
        if settings.concurrent_tables == 1 or len(names) == 1:
            results: list[TableMaintenance | StagingCleanup] = [one(name) for name in names]
        else:
            with ThreadPoolExecutor(max_workers=settings.concurrent_tables,
                                    thread_name_prefix="gtid-audit-maintain") as pool:
                results = list(pool.map(one, names))
    if not tables:
        results.append(clean_staging(spark, warehouse, settings))
        say(results[-1].line())
    return results


def _command(args: argparse.Namespace) -> int:
    from jobs.delta_jars import DeltaJarsError
    from jobs.spark import build_session

    try:
        config = load_config(args.config)
        on = dt.date.fromisoformat(args.date) if args.date else None
        spark = build_session(config.spark)
        results = maintain_tables(spark, config, on=on, tables=args.table or None,
                                  report=lambda line: print(line, flush=True))
    except (ConfigError, MaintenanceError, DeltaJarsError, ValueError) as exc:
        log.error("%s", exc)
        return 1
    return 1 if any(r.error for r in results) else 0


def register(subparsers) -> None:
    """Add ``maintain`` to the gtid-audit parser."""
    p = subparsers.add_parser(
        "maintain", help="table lifecycle: retention, OPTIMIZE/Z-order, VACUUM, table properties",
        description="Apply the `maintenance` settings to every table: delete partitions past their "
                    "retention, compact the recent partitions (Z-ordered by the columns the "
                    "dashboards filter on), VACUUM files past delta.deletedFileRetentionDuration "
                    "(each table on its own night of maintenance.vacuum_every_days, 7 by default, "
                    "or once what it can delete has waited that long), set the tables' Delta "
                    "properties; "
                    "without --table, also delete the read staging a killed collection left "
                    "(nothing changed in it for maintenance.staging_max_age_hours). "
                    "`run` does the same as its last step when maintenance.after_run is true. "
                    "Exit 1 when a table could not be maintained.")
    p.add_argument("--config", required=True, metavar="FILE", help="configuration file (YAML)")
    p.add_argument("--table", action="append", metavar="NAME", help="only this table (repeatable)")
    p.add_argument("--date", metavar="YYYY-MM-DD", help="maintain as of this date (default: today, UTC)")
    p.set_defaults(func=_command)
