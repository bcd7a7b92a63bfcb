"""Delta tables of gtid-audit: delta-spark writes them from the executors, one commit per table.

* **Writes** (:func:`write_run_frame`, :func:`overwrite_frame`): a Spark DataFrame, whose rows
  stay on the executors, is reconciled with the table's schema from ``schemas`` (column order,
  types; NOT NULL columns are enforced by Delta) and written with
  ``format("delta").mode("overwrite").option("replaceWhere",
  "run_date = DATE'<date>' AND run_id = '<id>'")``: one atomic commit that removes the run's
  previous rows and adds the new ones, so rerunning a ``run_id`` is idempotent. Naming the
  ``run_date`` partition confines the rewrite (and Delta's conflict check) to that partition.
  ``runs`` and ``run_summary`` are not partitioned (one row a night, clustered): their
  conflict check spans the table, and :func:`write_run_rows` writes them again when another
  run's commit won.
  A table that does not exist yet is created with the schema's exact columns, nullability,
  partitioning and :func:`table_properties` first.
* **The schema version** of every table travels in each commit's ``userMetadata`` and is
  checked, with the column list, before every write: a table written by another schema version
  is refused (:class:`SchemaMismatchError`), unless the schema allows an in-place upgrade from
  it (``TableSchema.upgrades_from``: the later versions only added nullable columns), which
  adds the new columns (``ALTER TABLE ... ADD COLUMNS``) before the write.
* **Reads**: :func:`read_frame` reads with Spark (the job), pruned to one partition when given
  the run's date (:func:`run_date_of` finds it in ``runs``). :func:`read_arrow` reads with
  delta-rs (``deltalake``) and no JVM, for the commands that should answer at once without
  Spark: ``gtid-audit findings`` and the report. Nothing writes with delta-rs.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import sys
from typing import Any, Iterable, Mapping, Sequence

from jobs.logs import error_line
from schemas import SCHEMA_VERSION_PROPERTY, TableSchema, get_table
from schemas.base import Column, SchemaError

__all__ = [
    "DELTA_EXTENSION_CLASS",
    "WRITER",
    "DeltaIOError",
    "SchemaMismatchError",
    "TableNotFoundError",
    "validate_run_id",
    "table_uri",
    "frame_from_rows",
    "write_run_frame",
    "overwrite_frame",
    "write_run_rows",
    "read_frame",
    "read_arrow",
    "scan_arrow",
    "table_exists",
    "written_schema_version",
    "table_properties",
    "run_date_of",
    "merge_latest",
    "run_predicate",
]

log = logging.getLogger("gtid_audit.delta_io")

DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"
#: What the ``runs.writer`` column records: the one library that writes the tables.
WRITER = "delta-spark"
#: The Delta write option of optimized writes (delta-spark's ``DeltaOptimizedWriterExec``): the
#: rows are shuffled by partition before the write into bins of up to
#: ``spark.databricks.delta.optimizeWrite.binSize``, so a night's partition of a table is one file
#: (or a few large ones), not one per task. Without it every nightly write left one small file per
#: task and maintenance's OPTIMIZE rewrote them, a second commit and a second copy of the night
#: for every table (issue #20, docs/benchmarks.md "A simulated year").
OPTIMIZE_WRITE = "optimizeWrite"
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,127}$")


class DeltaIOError(RuntimeError):
    """Base class of the errors raised by this module."""


class SchemaMismatchError(DeltaIOError):
    """Raised before a write when the existing table was written with another schema version
    or has other columns than the schema in ``schemas``: the table is left untouched."""


class TableNotFoundError(DeltaIOError):
    """Raised by the readers when no Delta table exists at the path (quoted in the message)."""


def validate_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is safe to embed in a Delta predicate (letters, digits and
    ``_ . : + -``, at most 128 characters, starting with a letter or digit); raise ValueError
    quoting it otherwise."""
    if not isinstance(run_id, str) or not _RUN_ID_RE.match(run_id):
        raise ValueError(
            f"invalid run id {run_id!r}: use letters, digits and _ . : + - (max 128 characters)"
        )
    return run_id


def table_properties(*, log_retention_days: int = 30, deleted_file_retention_hours: int = 168,
                     checkpoint_interval: int = 10) -> dict[str, str]:
    """The Delta table properties every table is created with (``gtid-audit maintain`` sets
    them again from the ``maintenance`` settings): how long the transaction log keeps commits
    (time travel), how long VACUUM keeps files a commit removed, how often a checkpoint is
    written. The defaults and why are in docs/deployment.md, "Table maintenance"."""
    return {
        "delta.logRetentionDuration": f"interval {int(log_retention_days)} days",
        "delta.deletedFileRetentionDuration": f"interval {int(deleted_file_retention_hours)} hours",
        "delta.checkpointInterval": str(int(checkpoint_interval)),
    }


def _date_literal(run_date: dt.date) -> str:
    if not isinstance(run_date, dt.date) or isinstance(run_date, dt.datetime):
        raise ValueError(f"invalid run date {run_date!r}: expected a datetime.date")
    return f"DATE'{run_date.isoformat()}'"


def run_predicate(run_id: str, run_date: dt.date | None = None) -> str:
    """The SQL predicate selecting one run's rows: ``run_date`` first, so Delta prunes to its
    partition, then ``run_id``."""
    pred = f"run_id = '{validate_run_id(run_id)}'"
    return pred if run_date is None else f"run_date = {_date_literal(run_date)} AND {pred}"


def table_uri(warehouse: str, name: str) -> str:
    """Location of table ``name`` under the warehouse root (a local path or an object-store URI)."""
    return warehouse.rstrip("/") + "/" + name


def _schema(schema: TableSchema | str) -> TableSchema:
    return get_table(schema) if isinstance(schema, str) else schema


def _commit_marker(schema: TableSchema) -> str:
    return json.dumps({SCHEMA_VERSION_PROPERTY: schema.version, "table": schema.name})


def _version_from_history(history: Iterable[Mapping[str, Any]]) -> int | None:
    """The schema version recorded by the newest commit that carries the marker."""
    for commit in history:
        meta = commit.get("userMetadata")
        if not meta:
            continue
        try:
            value = json.loads(meta).get(SCHEMA_VERSION_PROPERTY)
        except (ValueError, AttributeError):
            continue
        if value is not None:
            return int(value)
    return None


def _delta_table(spark, uri: str):
    """The delta-spark ``DeltaTable`` at ``uri``, or None when there is none."""
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, uri) if DeltaTable.isDeltaTable(spark, uri) else None


def table_exists(spark, warehouse: str, name: str) -> bool:
    """True when a Delta table ``name`` exists under the warehouse."""
    from delta.tables import DeltaTable

    return bool(DeltaTable.isDeltaTable(spark, table_uri(warehouse, name)))


def _fields(columns: Sequence[Column]) -> list[tuple[str, bool]]:
    """(name, nullable) of each column: what a table's schema is compared on."""
    return [(c.name, c.nullable) for c in columns]


def _check_existing(schema: TableSchema, history: list[Mapping[str, Any]],
                    fields: list[tuple[str, bool]]) -> tuple[Column, ...]:
    """The columns to add to a table written with an earlier version of ``schema`` that it
    may be upgraded from in place (``TableSchema.upgrades_from``: later versions only added
    nullable columns); () when the table is already this version's. A table of any other
    version or column list is refused."""
    found = _version_from_history(history)
    wanted = _fields(schema.columns)
    if found is None and fields != wanted and schema.upgrades_from is not None:
        # no marker among the newest commits (maintenance only, for a while): the columns say
        found = next((v for v in range(schema.version - 1, schema.upgrades_from - 1, -1)
                      if fields == _fields(schema.columns_of_version(v))), None)
    if found is not None and found != schema.version:
        upgradable = schema.upgrades_from is not None and schema.upgrades_from <= found < schema.version
        if not upgradable:
            raise SchemaMismatchError(
                f"table {schema.name!r} was written with schema version {found!r}, this writer has "
                f"version {schema.version!r}: migrate the table or write to another warehouse"
            )
        if fields == wanted:  # added by an earlier attempt whose write did not commit
            return ()
        earlier = schema.columns_of_version(found)
        if fields != _fields(earlier):
            raise SchemaMismatchError(
                f"table {schema.name!r} has columns {fields!r}, schema version {found} "
                f"had {_fields(earlier)!r}: it cannot be upgraded to version "
                f"{schema.version} in place"
            )
        return tuple(c for c in schema.columns if c.since > found)
    if fields != wanted:
        raise SchemaMismatchError(
            f"table {schema.name!r} has columns {fields!r}, schema version {schema.version} "
            f"expects {wanted!r}"
        )
    return ()


def _add_columns(spark, schema: TableSchema, uri: str, added: Sequence[Column]) -> None:
    """``ALTER TABLE ... ADD COLUMNS``, each new column where the schema has it (``FIRST`` or
    ``AFTER`` the column before it, which an earlier entry of the same statement may add), so
    the table's column list becomes the schema's; rows written before hold NULL there. One Delta
    commit (metadata only: no data file is rewritten). The descriptions are in ``schemas/``, not
    repeated as comments (no text of ours in the statement but names and types)."""
    names = schema.column_names
    specs = []
    for col in added:
        at = names.index(col.name)
        specs.append(f"`{col.name}` {col.type.to_spark().simpleString()} "
                     + (f"AFTER `{names[at - 1]}`" if at else "FIRST"))
    target = uri.replace("`", "``")
    spark.sql(f"ALTER TABLE delta.`{target}` ADD COLUMNS ({', '.join(specs)})")
    log.warning("table %s upgraded in place to schema version %s: added column(s) %s",
                schema.name, schema.version, ", ".join(c.name for c in added))


#: The environment variable from which the jemalloc linked into delta-rs's Python module
#: (``deltalake._internal``, tikv-jemallocator's ``_rjem_`` prefix) takes its options, once, when
#: the module is loaded; and the options this job gives it: freed pages go back to the system at
#: once instead of after jemalloc's decay of 10 s. Opening a table replays its log into memory;
#: with the default decay the pages of every table the night opened stayed resident: 33 MB more
#: for a year's tables than for one night's, most of the driver's growth over a year
#: (docs/benchmarks.md, "The table history's share"). With these options, 8 MB.
DELTA_RS_MALLOC_VARIABLE = "_RJEM_MALLOC_CONF"
DELTA_RS_MALLOC_CONF = "dirty_decay_ms:0,muzzy_decay_ms:0"


def _import_delta_rs():
    """``deltalake``, its allocator set to return freed memory (:data:`DELTA_RS_MALLOC_CONF`)
    when this process loads it first; a value the user set is kept."""
    if "deltalake" not in sys.modules:
        os.environ.setdefault(DELTA_RS_MALLOC_VARIABLE, DELTA_RS_MALLOC_CONF)
    import deltalake

    return deltalake


def _inspect_with_delta_rs(uri: str) -> tuple[bool, list, list] | None:
    """(exists, history, fields) of the table at ``uri`` read from its log with delta-rs, which
    answers in milliseconds without a Spark job; None when delta-rs cannot read the location
    (an object store it has no credentials for): the caller then asks delta-spark."""
    try:
        _import_delta_rs()
        from deltalake import DeltaTable as RsTable
        from deltalake.exceptions import TableNotFoundError as RsTableNotFound

        try:
            table = RsTable(uri)
        except RsTableNotFound:
            return False, [], []
        return True, table.history(50), [(f.name, f.nullable) for f in table.schema().fields]
    except Exception:  # not a local path delta-rs can read here
        return None


def _prepare(spark, schema: TableSchema, uri: str) -> None:
    """Create the table with the schema's exact columns, or check the existing one."""
    from delta.tables import DeltaTable

    seen = _inspect_with_delta_rs(uri)
    if seen is None:
        existing = _delta_table(spark, uri)
        if existing is not None:
            history = [r.asDict() for r in existing.history(50).select("userMetadata").collect()]
            seen = (True, history, [(f.name, f.nullable) for f in existing.toDF().schema.fields])
        else:
            seen = (False, [], [])
    exists, history, fields = seen
    if exists:
        added = _check_existing(schema, history, fields)
        if added:
            _add_columns(spark, schema, uri, added)
        return
    builder = (DeltaTable.createIfNotExists(spark).location(uri).addColumns(schema.to_spark())
               .comment(f"gtid-audit {schema.name}, schema version {schema.version}"))
    if schema.partition_by:
        builder = builder.partitionedBy(*schema.partition_by)
    if schema.cluster_by:
        builder = builder.clusterBy(*schema.cluster_by)
    for key, value in table_properties().items():
        builder = builder.property(key, value)
    builder.execute()


def _conform(df, schema: TableSchema):
    """``df`` with exactly the schema's columns, in order, cast to its types; a column the
    schema has and ``df`` lacks is NULL; a column ``df`` has and the schema lacks is an error."""
    from pyspark.sql import functions as F

    target = schema.to_spark()
    unknown = sorted(set(df.columns) - set(schema.column_names))
    if unknown:
        raise SchemaError(f"table {schema.name!r}: unknown column(s) {unknown!r}")
    return df.select(*[(F.col(f.name) if f.name in df.columns else F.lit(None)).cast(f.dataType).alias(f.name)
                       for f in target.fields])


def write_run_frame(spark, schema: TableSchema | str, df, *, warehouse: str, run_id: str,
                    run_date: dt.date | None = None) -> None:
    """Replace run ``run_id``'s rows of one table by ``df``'s rows, in one atomic Delta commit
    written by the executors. Every row must belong to ``run_id`` and, when given (the job
    always gives it), to the ``run_date`` partition: the replaceWhere predicate makes Delta
    refuse any other, and confines the rewrite to that partition."""
    schema = _schema(schema)
    predicate = run_predicate(run_id, run_date if "run_date" in schema.column_names else None)
    uri = table_uri(warehouse, schema.name)
    _prepare(spark, schema, uri)
    (_conform(df, schema).write.format("delta").mode("overwrite")
     .option("replaceWhere", predicate)
     .option(OPTIMIZE_WRITE, "true")
     .option("userMetadata", _commit_marker(schema))
     .save(uri))
    log.debug("wrote %s (run %s)", schema.name, run_id)


def overwrite_frame(spark, schema: TableSchema | str, df, *, warehouse: str) -> None:
    """Replace the whole table by ``df`` in one atomic Delta commit, for tables that are not per
    run (``uuid_registry``). The same schema checks apply."""
    schema = _schema(schema)
    uri = table_uri(warehouse, schema.name)
    _prepare(spark, schema, uri)
    (_conform(df, schema).write.format("delta").mode("overwrite").option(OPTIMIZE_WRITE, "true")
     .option("userMetadata", _commit_marker(schema)).save(uri))
    log.debug("replaced %s", schema.name)


def merge_latest(spark, schema: TableSchema | str, df, *, warehouse: str, run_id: str) -> None:
    """MERGE run ``run_id``'s rows (``df``) into a one-row-per-key table (``findings_latest``)
    on ``schema.key``, in one commit: a key's row is replaced by the run's unless the stored row
    comes from a newer run (``run_date``, then ``run_id``), so auditing an old run again does not
    move a finding back in time; a key the run wrote before and no longer has is deleted."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    schema = _schema(schema)
    validate_run_id(run_id)
    if not schema.key or schema.partition_by:
        raise SchemaError(f"table {schema.name!r}: merge_latest needs a key and no partitions")
    uri = table_uri(warehouse, schema.name)
    _prepare(spark, schema, uri)
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", _commit_marker(schema))
    try:
        on = " AND ".join(f"t.{k} = s.{k}" for k in schema.key)
        newer = "s.run_date > t.run_date OR (s.run_date = t.run_date AND s.run_id >= t.run_id)"
        (DeltaTable.forPath(spark, uri).alias("t")
         .merge(_conform(df, schema).alias("s"), on)
         .whenMatchedUpdateAll(condition=newer)
         .whenNotMatchedInsertAll()
         .whenNotMatchedBySourceDelete(condition=F.col("t.run_id") == F.lit(run_id))
         .execute())
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    log.debug("merged %s (run %s)", schema.name, run_id)


def frame_from_rows(spark, schema: TableSchema | str, rows: Iterable[Mapping[str, Any]]):
    """A DataFrame of a few driver-made rows (``runs``, ``run_summary``), each checked against
    the schema first. Bulk rows never go this way: they are built on the executors."""
    schema = _schema(schema)
    tuples = []
    for row in rows:
        schema.check_row(row)
        tuples.append(tuple(row.get(c) for c in schema.column_names))
    return spark.createDataFrame(tuples, schema=schema.to_spark())


def write_run_rows(spark, schema: TableSchema | str, rows: Iterable[Mapping[str, Any]], *,
                   warehouse: str, run_id: str, run_date: dt.date | None = None) -> int:
    """:func:`write_run_frame` of a few driver-made rows; returns how many. The partition is
    ``run_date``, or the rows' one ``run_date`` when not given."""
    rows = list(rows)
    others = sorted({str(r.get("run_id")) for r in rows} - {run_id})
    if others:
        raise SchemaError(f"table {_schema(schema).name!r}: rows of another run than {run_id!r}: {others!r}")
    dates = {r.get("run_date") for r in rows if r.get("run_date") is not None}
    if run_date is None and len(dates) == 1:
        run_date = next(iter(dates))
    if dates - {run_date}:
        raise SchemaError(f"table {_schema(schema).name!r}: rows of run {run_id!r} on other dates than "
                          f"{run_date!r}: {sorted(map(str, dates))!r}")
    frame = frame_from_rows(spark, schema, rows)
    if _schema(schema).partition_by:
        write_run_frame(spark, schema, frame, warehouse=warehouse, run_id=run_id, run_date=run_date)
        return len(rows)
    # A table of one row a night (``runs``, ``run_summary``) is not partitioned, so Delta's
    # conflict check spans the whole table: another run's write committed meanwhile (a manual
    # ``audit --run-id`` during the night) fails this one with a concurrent-modification error.
    # The write replaces this run's rows and nothing else, so it is simply made again.
    from delta import exceptions as conflict
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

    # delta-spark's conflict errors, each its own class (they do not all derive from
    # DeltaConcurrentModificationException)
    conflicts = (conflict.DeltaConcurrentModificationException, conflict.ConcurrentAppendException,
                 conflict.ConcurrentDeleteReadException, conflict.ConcurrentDeleteDeleteException,
                 conflict.ConcurrentTransactionException, conflict.ConcurrentWriteException,
                 conflict.MetadataChangedException, conflict.ProtocolChangedException)
    for attempt in Retrying(retry=retry_if_exception_type(conflicts),
                            stop=stop_after_attempt(_CONCURRENT_WRITE_ATTEMPTS),
                            wait=wait_random_exponential(multiplier=0.5, max=10), reraise=True,
                            before_sleep=lambda state: log.warning(
                                "%s: %s; writing run %s again", _schema(schema).name,
                                error_line(state.outcome.exception()), run_id)):
        with attempt:
            write_run_frame(spark, schema, frame, warehouse=warehouse, run_id=run_id, run_date=run_date)
    return len(rows)


#: Attempts of a one-row-a-night table's write that lost to another run's concurrent commit.
_CONCURRENT_WRITE_ATTEMPTS = 5


def read_frame(spark, warehouse: str, name: str, run_id: str | None = None, run_date: dt.date | None = None):
    """Table ``name`` (optionally only run ``run_id``, in partition ``run_date``) as a Spark
    DataFrame."""
    uri = table_uri(warehouse, name)
    seen = _inspect_with_delta_rs(uri)
    if (seen is not None and not seen[0]) or (seen is None and _delta_table(spark, uri) is None):
        raise TableNotFoundError(f"no Delta table at {uri!r}")
    df = spark.read.format("delta").load(uri)
    if run_date is not None and "run_date" in df.columns:
        df = df.where(df.run_date == _date_value(run_date))
    if run_id is not None:
        df = df.where(df.run_id == validate_run_id(run_id))
    return df


def _date_value(run_date: dt.date) -> dt.date:
    _date_literal(run_date)
    return run_date


def run_date_of(spark, warehouse: str, run_id: str) -> dt.date | None:
    """The ``run_date`` the ``runs`` table recorded for ``run_id`` (None when the run, or the
    table, does not exist): a rerun writes into its run's first date, not today's."""
    try:
        rows = read_frame(spark, warehouse, "runs", run_id).select("run_date").limit(2).collect()
    except TableNotFoundError:
        return None
    dates = {r["run_date"] for r in rows}
    return dates.pop() if len(dates) == 1 else None


def written_schema_version(warehouse: str, name: str,
                           storage_options: Mapping[str, str] | None = None) -> int | None:
    """The schema version stored in the table's commits (read with delta-rs, no JVM); None if
    the table does not exist or no commit carries a marker."""
    table = _open_delta_rs(table_uri(warehouse, name), storage_options)
    if table is None:
        return None
    return _version_from_history(table.history(50))


def _open_delta_rs(uri: str, storage_options: Mapping[str, str] | None):
    _import_delta_rs()
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError as RsTableNotFound

    try:
        return DeltaTable(uri, storage_options=dict(storage_options or {}))
    except RsTableNotFound:
        return None


def _run_filter(names: Sequence[str], run_id: str | None, run_date: dt.date | None, where=None):
    """The delta-rs scan filter of the rows of ``run_id`` and ``run_date`` (each when given;
    ``run_date`` only in a table that has the column) that match ``where``; None: every row."""
    import pyarrow.dataset as pads

    expr = where
    if run_id is not None:
        by_run = pads.field("run_id") == validate_run_id(run_id)
        expr = by_run if expr is None else by_run & expr
    if run_date is not None and "run_date" in names:
        by_date = pads.field("run_date") == _date_value(run_date)
        expr = by_date if expr is None else by_date & expr
    return expr


def _run_dataset(table, run_id: str | None, run_date: dt.date | None):
    """The pyarrow dataset of delta-rs table ``table``, built from the files that can hold rows
    of ``run_id`` and ``run_date`` only: the date selects the partition's files exactly in a
    table partitioned by it, the run id drops files whose statistics exclude it (a clustered
    table). The files are chosen before the dataset exists: built whole, a dataset of a year's
    nights made a fragment, and partition expressions, for each of the 365 days' files of every
    table the report reads, 9 of its 11 s (docs/benchmarks.md, "The table history's share").
    Rows are still filtered by the scan (:func:`_run_filter`): this only skips files."""
    names = {f.name for f in table.schema().fields}
    prune = []
    if run_date is not None and "run_date" in names:
        prune.append(("run_date", "=", _date_value(run_date).isoformat()))
    if run_id is not None and "run_id" in names:
        prune.append(("run_id", "=", validate_run_id(run_id)))
    return table.to_pyarrow_dataset(file_pruning_predicate=prune) if prune else table.to_pyarrow_dataset()


def scan_arrow(warehouse: str, name: str, run_id: str | None = None,
               storage_options: Mapping[str, str] | None = None, *, columns: Sequence[str] | None = None,
               where=None, run_date: dt.date | None = None):
    """Table ``name`` as an iterator of pyarrow record batches, read with delta-rs: only
    ``columns`` (those the table has; None: all) of the rows of ``run_id`` that match ``where``
    (a ``pyarrow.compute`` expression), both pushed into the scan, so a reader that keeps a
    bounded part of each batch holds a bounded amount whatever the table's size. ``run_date``
    (the run's, when known) keeps the rows of that date; in a table partitioned by it the
    other days' files are never opened. Raises TableNotFoundError when the table does not
    exist.

    Files are read one at a time, without read-ahead (``fragment_readahead=1``,
    ``batch_readahead=0``): the default read four files ahead, which at 100,000 servers held
    +246 MB against +141 MB for the report's failover scans (docs/benchmarks.md, "Stop 30"); on
    an object store the reads are sequential, and slower.

    Scans run on the calling thread (``use_threads=False``): with Arrow's scan threads, a
    process that read a Delta table aborted at exit about one time in two ("terminate called
    without an active exception", exit 134; deltalake 1.6.6, pyarrow 26; apache/arrow#34314),
    which turned a good ``gtid-audit findings`` or ``report`` into a failure."""
    uri = table_uri(warehouse, name)
    table = _open_delta_rs(uri, storage_options)
    if table is None:
        raise TableNotFoundError(f"no Delta table at {uri!r}")
    dataset = _run_dataset(table, run_id, run_date)
    expr = _run_filter(dataset.schema.names, run_id, run_date, where)
    if columns is not None:
        columns = [c for c in columns if c in dataset.schema.names]
    return dataset.scanner(columns=columns, filter=expr, use_threads=False,
                           batch_readahead=0, fragment_readahead=1).to_batches()


def read_arrow(warehouse: str, name: str, run_id: str | None = None,
               storage_options: Mapping[str, str] | None = None, run_date: dt.date | None = None):
    """Table ``name`` (optionally one run, pruned to its ``run_date`` partition when given) as
    a pyarrow table, read with delta-rs and no JVM (``gtid-audit findings``, the report); cast
    to the registered schema when there is one (a column of a later schema version that the
    table has not been upgraded to yet reads NULL)."""
    import pyarrow as pa

    uri = table_uri(warehouse, name)
    table = _open_delta_rs(uri, storage_options)
    if table is None:
        raise TableNotFoundError(f"no Delta table at {uri!r}")
    dataset = _run_dataset(table, run_id, run_date)
    data = dataset.to_table(filter=_run_filter(dataset.schema.names, run_id, run_date), use_threads=False)
    try:
        target = get_table(name).to_arrow()
    except SchemaError:
        return data
    for field in target:
        if field.name not in data.schema.names:
            data = data.append_column(field.name, pa.nulls(data.num_rows, field.type))
    return data.select(target.names).cast(target)
