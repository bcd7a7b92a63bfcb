"""The schema framework: one neutral, versioned definition per Delta table.

A :class:`TableSchema` lists its columns (name, type, nullable, description), its version, its
partition columns and its key. The same definition is converted to a Spark ``StructType``
(delta-spark writes, Spark reads) and to a pyarrow schema (the delta-rs readers and the Arrow
batches of the audit tasks), so every writer, reader and test sees one schema.

Types are a small closed vocabulary (``LogicalType``): strings, 64/32-bit integers, booleans,
doubles, UTC timestamps (microseconds) and dates. Anything richer is stored as text.

The version is stored under ``gtid_audit.schema_version`` in each commit's ``userMetadata``;
writers compare it, and the column list, before every write (see ``jobs.delta_io``).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable, Mapping

if TYPE_CHECKING:  # pyarrow is imported where Arrow is built: a read task never needs it
    import pyarrow as pa

__all__ = [
    "LogicalType",
    "Column",
    "TableSchema",
    "SchemaError",
    "SCHEMA_VERSION_PROPERTY",
    "run_columns",
    "server_columns",
    "register",
    "get_table",
    "all_tables",
]

SCHEMA_VERSION_PROPERTY = "gtid_audit.schema_version"


class SchemaError(ValueError):
    """Raised when a schema definition is inconsistent, or when a row does not fit its schema
    (unknown column, missing non-nullable value, value of the wrong Python type). The message
    names the table, the column and quotes the value."""


class LogicalType(str, Enum):
    """The column types a table may use, with their pyarrow and Spark equivalents."""

    STRING = "string"
    INT64 = "int64"
    INT32 = "int32"
    BOOL = "bool"
    DOUBLE = "double"
    TIMESTAMP = "timestamp"  # UTC, microseconds; Delta ``timestamp``, Spark TimestampType
    DATE = "date"

    def to_arrow(self) -> pa.DataType:
        import pyarrow as pa  # here, not at import: a read task uses schemas and never Arrow

        return {
            LogicalType.STRING: pa.string(),
            LogicalType.INT64: pa.int64(),
            LogicalType.INT32: pa.int32(),
            LogicalType.BOOL: pa.bool_(),
            LogicalType.DOUBLE: pa.float64(),
            LogicalType.TIMESTAMP: pa.timestamp("us", tz="UTC"),
            LogicalType.DATE: pa.date32(),
        }[self]

    def to_spark(self):
        from pyspark.sql import types as T

        return {
            LogicalType.STRING: T.StringType(),
            LogicalType.INT64: T.LongType(),
            LogicalType.INT32: T.IntegerType(),
            LogicalType.BOOL: T.BooleanType(),
            LogicalType.DOUBLE: T.DoubleType(),
            LogicalType.TIMESTAMP: T.TimestampType(),
            LogicalType.DATE: T.DateType(),
        }[self]

    def python_types(self) -> tuple[type, ...]:
        """The Python types a row value of this column may have (besides None)."""
        return {
            LogicalType.STRING: (str,),
            LogicalType.INT64: (int,),
            LogicalType.INT32: (int,),
            LogicalType.BOOL: (bool,),
            LogicalType.DOUBLE: (float, int),
            LogicalType.TIMESTAMP: (_dt.datetime,),
            LogicalType.DATE: (_dt.date,),
        }[self]


@dataclass(frozen=True)
class Column:
    """One column: its name, type, whether NULL is allowed, and what it holds."""

    name: str
    type: LogicalType
    nullable: bool
    description: str
    #: the table's schema version that added the column (1: there from the start)
    since: int = 1

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise SchemaError(f"column name {self.name!r} must be a lowercase identifier")
        object.__setattr__(self, "type", LogicalType(self.type))
        if not self.description.strip():
            raise SchemaError(f"column {self.name!r} needs a description")
        if not isinstance(self.since, int) or self.since < 1:
            raise SchemaError(f"column {self.name!r}: since {self.since!r} must be an int >= 1")
        if self.since > 1 and not self.nullable:
            raise SchemaError(f"column {self.name!r} was added in version {self.since}: the rows written "
                              f"before it hold NULL, so it must be nullable")


def run_columns(run_date_role: str = "partition column") -> tuple[Column, ...]:
    """The columns every table starts with: which run wrote the row (``run_date_role``: what
    the table does with ``run_date``, said in its description)."""
    return (
        Column("run_id", LogicalType.STRING, False, "identifier of the collection run"),
        Column("run_date", LogicalType.DATE, False, f"UTC date the run started ({run_date_role})"),
    )


def server_columns() -> tuple[Column, ...]:
    """The columns every per-server table carries after ``run_columns()``."""
    return run_columns() + (
        Column("server", LogicalType.STRING, False, "configured server name (unique in the inventory)"),
        Column("cluster", LogicalType.STRING, True, "configured cluster label; NULL when not set"),
        Column("read_at", LogicalType.TIMESTAMP, True,
               "UTC instant the statement producing this row returned; NULL if nothing was read"),
    )


@dataclass(frozen=True)
class TableSchema:
    """A versioned table definition. ``key`` is the set of columns that identify a row inside
    one run (used by tests and idempotent rewrites); ``partition_by`` are Delta partitions;
    ``cluster_by`` are Delta clustering columns, for small tables that are not partitioned.

    ``upgrades_from``: the oldest version a table written earlier may be upgraded from in place,
    when every version since then only added nullable columns (each :class:`Column` says in
    which version it came, ``since``): the writer adds them (``ALTER TABLE ... ADD COLUMNS``)
    and the older rows read NULL there. None: a table of any other version is refused."""

    name: str
    version: int
    columns: tuple[Column, ...]
    description: str
    partition_by: tuple[str, ...] = ("run_date",)
    key: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    upgrades_from: int | None = None
    _by_name: Mapping[str, Column] = field(init=False, repr=False, compare=False)
    _column_names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    #: per column, what :meth:`check_row` tests, worked out once: executors check every row they
    #: read (the read's Python, issue #21)
    _row_checks: tuple[tuple[str, bool, tuple[type, ...], bool, bool, bool], ...] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise SchemaError(f"table name {self.name!r} must be an identifier")
        if not isinstance(self.version, int) or self.version < 1:
            raise SchemaError(f"table {self.name!r}: version {self.version!r} must be an int >= 1")
        by_name: dict[str, Column] = {}
        for col in self.columns:
            if col.name in by_name:
                raise SchemaError(f"table {self.name!r}: duplicate column {col.name!r}")
            by_name[col.name] = col
        if self.partition_by and self.cluster_by:
            raise SchemaError(f"table {self.name!r}: a table is partitioned or clustered, not both")
        for group, names in (("partition_by", self.partition_by), ("key", self.key),
                             ("cluster_by", self.cluster_by)):
            for n in names:
                if n not in by_name:
                    raise SchemaError(f"table {self.name!r}: {group} names unknown column {n!r}")
        for n in self.partition_by:
            if by_name[n].nullable:
                raise SchemaError(f"table {self.name!r}: partition column {n!r} must not be nullable")
        if "run_id" not in by_name:
            raise SchemaError(f"table {self.name!r} must have a run_id column")
        for col in self.columns:
            if col.since > self.version:
                raise SchemaError(f"table {self.name!r}: column {col.name!r} is from version {col.since}, "
                                  f"after the table's version {self.version}")
        if self.upgrades_from is not None and not 1 <= self.upgrades_from < self.version:
            raise SchemaError(f"table {self.name!r}: upgrades_from {self.upgrades_from!r} must be a version "
                              f"before {self.version}")
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_column_names", tuple(c.name for c in self.columns))
        numeric = (LogicalType.INT64, LogicalType.INT32, LogicalType.DOUBLE)
        object.__setattr__(self, "_row_checks", tuple(
            (c.name, c.nullable, c.type.python_types(), c.type in numeric, c.type is LogicalType.DATE,
             c.type is LogicalType.TIMESTAMP) for c in self.columns))

    @property
    def column_names(self) -> tuple[str, ...]:
        return self._column_names

    def columns_of_version(self, version: int) -> tuple[Column, ...]:
        """The columns a table written with schema ``version`` has (those added by then)."""
        return tuple(c for c in self.columns if c.since <= version)

    def column(self, name: str) -> Column:
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(f"table {self.name!r} has no column {name!r}") from None

    def to_arrow(self) -> pa.Schema:
        """The pyarrow schema (delta-rs reads, Arrow batches), with the version as metadata."""
        import pyarrow as pa

        return pa.schema(
            [pa.field(c.name, c.type.to_arrow(), nullable=c.nullable,
                      metadata={"description": c.description}) for c in self.columns],
            metadata={SCHEMA_VERSION_PROPERTY: str(self.version), "table": self.name},
        )

    def to_spark(self):
        """The Spark ``StructType`` (delta-spark writes, Spark reads)."""
        from pyspark.sql import types as T

        return T.StructType(
            [T.StructField(c.name, c.type.to_spark(), c.nullable, {"description": c.description})
             for c in self.columns]
        )

    def check_row(self, row: Mapping[str, Any]) -> None:
        """Raise :class:`SchemaError` if ``row`` has unknown columns, lacks a non-nullable
        value, or holds a value of the wrong Python type."""
        unknown = row.keys() - self._by_name.keys()
        if unknown:
            raise SchemaError(f"table {self.name!r}: unknown column(s) {sorted(unknown)!r}")
        for name, nullable, allowed, numeric, is_date, is_timestamp in self._row_checks:
            value = row.get(name)
            if value is None:
                if not nullable:
                    raise SchemaError(f"table {self.name!r}: column {name!r} must not be NULL")
                continue
            if (not isinstance(value, allowed) or (numeric and isinstance(value, bool))
                    or (is_date and isinstance(value, _dt.datetime))):
                raise SchemaError(
                    f"table {self.name!r}: column {name!r} expects {self._by_name[name].type.value}, "
                    f"got {value!r}"
                )
            if is_timestamp and value.tzinfo is None:
                raise SchemaError(
                    f"table {self.name!r}: column {name!r} needs a timezone-aware UTC "
                    f"timestamp, got {value!r}"
                )

    def rows_to_arrow(self, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
        """Check every row and build a pyarrow table in this schema (missing nullable
        columns become NULL)."""
        import pyarrow as pa

        rows = list(rows)
        for row in rows:
            self.check_row(row)
        arrays = {c.name: [r.get(c.name) for r in rows] for c in self.columns}
        return pa.Table.from_pydict(arrays, schema=self.to_arrow())


_REGISTRY: dict[str, TableSchema] = {}


def register(schema: TableSchema) -> TableSchema:
    """Add ``schema`` to the registry (by table name) and return it; a second, different
    definition under the same name is refused."""
    existing = _REGISTRY.get(schema.name)
    if existing is not None and existing != schema:
        raise SchemaError(f"table {schema.name!r} is already registered with another definition")
    _REGISTRY[schema.name] = schema
    return schema


def get_table(name: str) -> TableSchema:
    """The registered schema of table ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise SchemaError(f"no table named {name!r}; known: {sorted(_REGISTRY)!r}") from None


def all_tables() -> dict[str, TableSchema]:
    """Every registered table, by name."""
    return dict(_REGISTRY)
