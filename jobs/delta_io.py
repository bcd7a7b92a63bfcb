"""Delta tables of gtid-audit: delta-spark writes them from the executors, one commit per table.

* **Writes** (:func:`write_run_frame`, :func:`overwrite_frame`): a Spark DataFrame, whose rows
  stay on the executors, is reconciled with the table's schema from ``schemas`` (column order,
  types; NOT NULL columns are enforced by Delta) and written with
  ``format("delta").mode("overwrite").option("replaceWhere", "run_id = '<id>'")``: one atomic
  commit that removes the run's previous rows and adds the new ones, so rerunning a ``run_id``
  is idempotent. A table that does not exist yet is created with the schema's exact columns,
  nullability and partitioning first.
* **The schema version** of every table travels in each commit's ``userMetadata`` and is
  checked, with the column list, before every write: a table written by another schema version
  is refused (:class:`SchemaMismatchError`), never altered.
* **Reads**: :func:`read_frame` reads with Spark (the job). :func:`read_arrow` reads with
  delta-rs (``deltalake``) and no JVM, for the commands that should answer at once without
  Spark: ``gtid-audit findings`` and the report. Nothing writes with delta-rs.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, Iterable, Mapping

from schemas import SCHEMA_VERSION_PROPERTY, TableSchema, get_table
from schemas.base import SchemaError

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
    "table_exists",
    "written_schema_version",
]

log = logging.getLogger("gtid_audit.delta_io")

DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"
#: What the ``runs.writer`` column records: the one library that writes the tables.
WRITER = "delta-spark"
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


def _check_existing(schema: TableSchema, history: list[Mapping[str, Any]],
                    fields: list[tuple[str, bool]]) -> None:
    """Refuse a write into a table of another schema version or column list."""
    found = _version_from_history(history)
    if found is not None and found != schema.version:
        raise SchemaMismatchError(
            f"table {schema.name!r} was written with schema version {found!r}, this writer has "
            f"version {schema.version!r}: migrate the table or write to another warehouse"
        )
    wanted = [(c.name, c.nullable) for c in schema.columns]
    if fields != wanted:
        raise SchemaMismatchError(
            f"table {schema.name!r} has columns {fields!r}, schema version {schema.version} "
            f"expects {wanted!r}"
        )


def _inspect_with_delta_rs(uri: str) -> tuple[bool, list, list] | None:
    """(exists, history, fields) of the table at ``uri`` read from its log with delta-rs, which
    answers in milliseconds without a Spark job; None when delta-rs cannot read the location
    (an object store it has no credentials for): the caller then asks delta-spark."""
    try:
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
        _check_existing(schema, history, fields)
        return
    builder = (DeltaTable.createIfNotExists(spark).location(uri).addColumns(schema.to_spark())
               .comment(f"gtid-audit {schema.name}, schema version {schema.version}"))
    if schema.partition_by:
        builder = builder.partitionedBy(*schema.partition_by)
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


def write_run_frame(spark, schema: TableSchema | str, df, *, warehouse: str, run_id: str) -> None:
    """Replace run ``run_id``'s rows of one table by ``df``'s rows, in one atomic Delta commit
    written by the executors. Every row must belong to ``run_id`` (the replaceWhere predicate
    makes Delta refuse any other)."""
    schema = _schema(schema)
    validate_run_id(run_id)
    uri = table_uri(warehouse, schema.name)
    _prepare(spark, schema, uri)
    (_conform(df, schema).write.format("delta").mode("overwrite")
     .option("replaceWhere", f"run_id = '{run_id}'")
     .option("userMetadata", _commit_marker(schema))
     .save(uri))
    log.debug("wrote %s (run %s)", schema.name, run_id)


def overwrite_frame(spark, schema: TableSchema | str, df, *, warehouse: str) -> None:
    """Replace the whole table by ``df`` in one atomic Delta commit, for tables that are not per
    run (``uuid_registry``). The same schema checks apply."""
    schema = _schema(schema)
    uri = table_uri(warehouse, schema.name)
    _prepare(spark, schema, uri)
    (_conform(df, schema).write.format("delta").mode("overwrite")
     .option("userMetadata", _commit_marker(schema)).save(uri))
    log.debug("replaced %s", schema.name)


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
                   warehouse: str, run_id: str) -> int:
    """:func:`write_run_frame` of a few driver-made rows; returns how many."""
    rows = list(rows)
    others = sorted({str(r.get("run_id")) for r in rows} - {run_id})
    if others:
        raise SchemaError(f"table {_schema(schema).name!r}: rows of another run than {run_id!r}: {others!r}")
    write_run_frame(spark, schema, frame_from_rows(spark, schema, rows), warehouse=warehouse, run_id=run_id)
    return len(rows)


def read_frame(spark, warehouse: str, name: str, run_id: str | None = None):
    """Table ``name`` (optionally only run ``run_id``) as a Spark DataFrame."""
    uri = table_uri(warehouse, name)
    seen = _inspect_with_delta_rs(uri)
    if (seen is not None and not seen[0]) or (seen is None and _delta_table(spark, uri) is None):
        raise TableNotFoundError(f"no Delta table at {uri!r}")
    df = spark.read.format("delta").load(uri)
    if run_id is not None:
        df = df.where(df.run_id == validate_run_id(run_id))
    return df


def written_schema_version(warehouse: str, name: str,
                           storage_options: Mapping[str, str] | None = None) -> int | None:
    """The schema version stored in the table's commits (read with delta-rs, no JVM); None if
    the table does not exist or no commit carries a marker."""
    dt = _open_delta_rs(table_uri(warehouse, name), storage_options)
    if dt is None:
        return None
    return _version_from_history(dt.history(50))


def _open_delta_rs(uri: str, storage_options: Mapping[str, str] | None):
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError as RsTableNotFound

    try:
        return DeltaTable(uri, storage_options=dict(storage_options or {}))
    except RsTableNotFound:
        return None


def read_arrow(warehouse: str, name: str, run_id: str | None = None,
               storage_options: Mapping[str, str] | None = None):
    """Table ``name`` (optionally one run) as a pyarrow table, read with delta-rs and no JVM
    (``gtid-audit findings``, the report); cast to the registered schema when there is one."""
    uri = table_uri(warehouse, name)
    dt = _open_delta_rs(uri, storage_options)
    if dt is None:
        raise TableNotFoundError(f"no Delta table at {uri!r}")
    filters = [("run_id", "=", validate_run_id(run_id))] if run_id is not None else None
    data = dt.to_pyarrow_table(filters=filters)
    try:
        target = get_table(name).to_arrow()
    except SchemaError:
        return data
    return data.select(target.names).cast(target)
