"""Delta table writes and reads for gtid-audit, with one decision for which library writes.

Two writers produce the same tables (same schema from ``schemas``, same partitioning, same
commit marker):

* **delta-rs** (``deltalake``) from the driver: the default, needs no JVM jars. A run's rows of
  one table are written by ``write_deltalake(mode="overwrite", predicate="run_id = '<id>'")``:
  one atomic commit that removes the run's previous rows and adds the new ones.
* **delta-spark**, when its jars are on the classpath (``--packages io.delta:delta-spark_2.13:..``):
  ``DataFrameWriter.format("delta").mode("overwrite").option("replaceWhere", "run_id = '<id>'")``,
  the same single atomic commit.

:func:`choose_writer` is the one place that decides. The schema version of every table travels
in the commit's ``userMetadata`` (delta-rs 1.6 refuses custom table properties; both writers
store ``userMetadata`` in the same commitInfo field) and is checked, with the column list,
before every write: a table written by another schema version is refused, never altered.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, Iterable, Mapping

import pyarrow as pa

from schemas import SCHEMA_VERSION_PROPERTY, TableSchema, get_table
from schemas.base import SchemaError

__all__ = [
    "DELTA_EXTENSION_CLASS",
    "WRITER_DELTA_RS",
    "WRITER_DELTA_SPARK",
    "DeltaIOError",
    "SchemaMismatchError",
    "TableNotFoundError",
    "overwrite_table",
    "validate_run_id",
    "table_uri",
    "delta_spark_available",
    "choose_writer",
    "write_run_rows",
    "read_arrow",
    "read_table",
    "written_schema_version",
]

log = logging.getLogger("gtid_audit.delta_io")

DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"
WRITER_DELTA_RS = "delta-rs"
WRITER_DELTA_SPARK = "delta-spark"
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


def delta_spark_available(spark) -> bool:
    """True if the JVM behind ``spark`` can load delta-spark (``DELTA_EXTENSION_CLASS``).

    Looks the class up through the context class loader, where ``--packages``/``--jars`` put
    it. A Spark Connect session (no local JVM) answers False: the driver then writes with
    delta-rs, which needs no jars.
    """
    try:
        jvm = spark.sparkContext._jvm
    except Exception:  # Spark Connect: no sparkContext
        return False
    if jvm is None:
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(DELTA_EXTENSION_CLASS, False, loader)
        return True
    except Exception:  # py4j wraps ClassNotFoundException
        return False


def choose_writer(spark, preference: str = "auto") -> str:
    """The one decision: which library writes the tables.

    ``preference`` is the configuration's ``spark.delta_writer``: ``auto`` picks delta-spark
    when its jars are loadable, delta-rs otherwise; ``delta-rs`` always uses delta-rs;
    ``delta-spark`` requires the jars and raises DeltaIOError without them.
    """
    if preference == WRITER_DELTA_RS:
        return WRITER_DELTA_RS
    available = spark is not None and delta_spark_available(spark)
    if preference == WRITER_DELTA_SPARK:
        if not available:
            raise DeltaIOError(
                f"delta_writer {preference!r} was requested but {DELTA_EXTENSION_CLASS} is not on "
                "the Spark classpath (start Spark with --packages io.delta:delta-spark_2.13:<version>)"
            )
        return WRITER_DELTA_SPARK
    if preference != "auto":
        raise ValueError(f"unknown delta writer {preference!r}: use auto, delta-rs or delta-spark")
    return WRITER_DELTA_SPARK if available else WRITER_DELTA_RS


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


def _open_delta_rs(uri: str, storage_options: Mapping[str, str] | None):
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError as RsTableNotFound

    try:
        return DeltaTable(uri, storage_options=dict(storage_options or {}))
    except RsTableNotFound:
        return None


def written_schema_version(warehouse: str, name: str,
                           storage_options: Mapping[str, str] | None = None) -> int | None:
    """The schema version stored in the table's commits; None if the table does not exist or
    no commit carries a marker."""
    dt = _open_delta_rs(table_uri(warehouse, name), storage_options)
    if dt is None:
        return None
    return _version_from_history(dt.history(50))


def _check_existing(schema: TableSchema, dt) -> None:
    """Refuse a write into a table of another schema version or column list."""
    found = _version_from_history(dt.history(50))
    if found is not None and found != schema.version:
        raise SchemaMismatchError(
            f"table {schema.name!r} was written with schema version {found!r}, this writer has "
            f"version {schema.version!r}: migrate the table or write to another warehouse"
        )
    existing = [(f.name, f.nullable) for f in dt.schema().fields]
    wanted = [(c.name, c.nullable) for c in schema.columns]
    if existing != wanted:
        raise SchemaMismatchError(
            f"table {schema.name!r} has columns {existing!r}, schema version {schema.version} "
            f"expects {wanted!r}"
        )


def write_run_rows(schema: TableSchema | str, rows: Iterable[Mapping[str, Any]], *, warehouse: str,
                   run_id: str, writer: str = WRITER_DELTA_RS, spark=None,
                   storage_options: Mapping[str, str] | None = None) -> int:
    """Replace run ``run_id``'s rows of one table by ``rows``, in one atomic Delta commit.

    Every row must belong to ``run_id`` and fit the schema (checked before anything is
    written). Rerunning with the same rows leaves the same table content: the commit removes
    the run's old rows and adds the new ones, never duplicates them. Returns the number of rows
    written.
    """
    if isinstance(schema, str):
        schema = get_table(schema)
    validate_run_id(run_id)
    data = schema.rows_to_arrow(rows)
    if data.num_rows and set(data.column("run_id").to_pylist()) != {run_id}:
        raise SchemaError(f"table {schema.name!r}: rows of another run than {run_id!r}")
    _commit(schema, data, warehouse=warehouse, predicate=f"run_id = '{run_id}'", writer=writer,
            spark=spark, storage_options=storage_options)
    log.debug("wrote %d rows to %s (run %s, %s)", data.num_rows, schema.name, run_id, writer)
    return data.num_rows


def overwrite_table(schema: TableSchema | str, rows: Iterable[Mapping[str, Any]], *, warehouse: str,
                    writer: str = WRITER_DELTA_RS, spark=None,
                    storage_options: Mapping[str, str] | None = None) -> int:
    """Replace the whole table by ``rows`` in one atomic Delta commit, for tables that are not
    per run (``uuid_registry``: one row per server_uuid, merged in memory each run). The same
    schema checks as ``write_run_rows`` apply. Returns the number of rows written."""
    if isinstance(schema, str):
        schema = get_table(schema)
    data = schema.rows_to_arrow(rows)
    _commit(schema, data, warehouse=warehouse, predicate=None, writer=writer, spark=spark,
            storage_options=storage_options)
    log.debug("replaced %s with %d rows (%s)", schema.name, data.num_rows, writer)
    return data.num_rows


def _commit(schema: TableSchema, data: pa.Table, *, warehouse: str, predicate: str | None, writer: str,
            spark, storage_options: Mapping[str, str] | None) -> None:
    """One Delta commit replacing the rows ``predicate`` selects (the whole table when None)."""
    uri = table_uri(warehouse, schema.name)
    if writer == WRITER_DELTA_RS:
        from deltalake import CommitProperties, write_deltalake

        existing = _open_delta_rs(uri, storage_options)
        if existing is not None:
            _check_existing(schema, existing)
        write_deltalake(
            uri, data, mode="overwrite", predicate=predicate,
            partition_by=list(schema.partition_by) or None,
            storage_options=dict(storage_options or {}) or None,
            commit_properties=CommitProperties(custom_metadata={"userMetadata": _commit_marker(schema)}),
        )
    elif writer == WRITER_DELTA_SPARK:
        if spark is None:
            raise DeltaIOError("the delta-spark writer needs a Spark session")
        _write_delta_spark(spark, schema, data, uri, predicate)
    else:
        raise ValueError(f"unknown delta writer {writer!r}")


def _write_delta_spark(spark, schema: TableSchema, data: pa.Table, uri: str, predicate: str | None) -> None:
    """delta-spark variant of ``write_run_rows`` (same schema, partitioning and marker)."""
    from delta.tables import DeltaTable as SparkDeltaTable

    if SparkDeltaTable.isDeltaTable(spark, uri):
        table = SparkDeltaTable.forPath(spark, uri)
        history = [r.asDict() for r in table.history(50).select("userMetadata").collect()]

        class _Shim:  # adapt to _check_existing's delta-rs shaped interface
            def history(self, _n):
                return history

            def schema(self):
                from types import SimpleNamespace

                return SimpleNamespace(fields=[SimpleNamespace(name=f.name, nullable=f.nullable)
                                               for f in table.toDF().schema.fields])

        _check_existing(schema, _Shim())
    df = spark.createDataFrame(data, schema=schema.to_spark())
    out = df.write.format("delta").mode("overwrite").option("userMetadata", _commit_marker(schema))
    if predicate is not None:
        out = out.option("replaceWhere", predicate)
    out.partitionBy(*schema.partition_by).save(uri)


def read_arrow(warehouse: str, name: str, run_id: str | None = None,
               storage_options: Mapping[str, str] | None = None) -> pa.Table:
    """Table ``name`` (optionally one run) as a pyarrow table, read with delta-rs; cast to the
    registered schema when the table is registered."""
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


def read_table(spark, warehouse: str, name: str, run_id: str | None = None,
               storage_options: Mapping[str, str] | None = None):
    """Table ``name`` (optionally only run ``run_id``) as a Spark DataFrame.

    With delta-spark on the classpath Spark reads the table itself; otherwise delta-rs reads it
    on the driver and the Arrow data becomes a DataFrame (the tables hold one night's inventory,
    small enough for the driver).
    """
    uri = table_uri(warehouse, name)
    if delta_spark_available(spark):
        from delta.tables import DeltaTable as SparkDeltaTable

        if not SparkDeltaTable.isDeltaTable(spark, uri):
            raise TableNotFoundError(f"no Delta table at {uri!r}")
        df = spark.read.format("delta").load(uri)
        if run_id is not None:
            df = df.where(df.run_id == validate_run_id(run_id))
        return df
    data = read_arrow(warehouse, name, run_id, storage_options)
    try:
        spark_schema = get_table(name).to_spark()
    except SchemaError:
        spark_schema = None
    if spark_schema is not None:
        return spark.createDataFrame(data, schema=spark_schema)
    return spark.createDataFrame(data)
