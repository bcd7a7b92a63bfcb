"""schemas: the neutral table definitions and their pyarrow / Spark conversions."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from schemas import Column, LogicalType, SchemaError, TableSchema, all_tables, get_table
from schemas.collection import COLLECTION_TABLES

UTC = dt.timezone.utc
PER_SERVER = [t for t in COLLECTION_TABLES if t.name != "runs"]


def test_collection_tables_are_registered():
    """The eight collection tables are registered under their names."""
    assert {t.name for t in COLLECTION_TABLES} == {
        "runs", "servers", "channels", "binary_logs", "relay_log_tail", "collection_errors",
        "group_replication", "group_members"}
    for t in COLLECTION_TABLES:
        assert all_tables()[t.name] is t and get_table(t.name) is t


@pytest.mark.parametrize("table", PER_SERVER, ids=lambda t: t.name)
def test_every_per_server_table_carries_run_server_cluster_and_read_time(table):
    """Every per-server row names its run, date, server, cluster and read instant, partitioned by run_date."""
    names = table.column_names
    assert names[:5] == ("run_id", "run_date", "server", "cluster", "read_at")
    assert table.partition_by == ("run_date",)
    assert table.column("read_at").type is LogicalType.TIMESTAMP
    assert set(table.key) <= set(names) and "run_id" in table.key


@pytest.mark.parametrize("table", COLLECTION_TABLES, ids=lambda t: t.name)
def test_arrow_and_spark_schemas_agree_with_the_definition(table):
    """pyarrow and Spark conversions keep names, order, nullability and the type mapping."""
    from pyspark.sql import types as T

    expected_arrow = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "bool": pa.bool_(),
                      "double": pa.float64(), "timestamp": pa.timestamp("us", tz="UTC"), "date": pa.date32()}
    expected_spark = {"string": T.StringType(), "int64": T.LongType(), "int32": T.IntegerType(),
                      "bool": T.BooleanType(), "double": T.DoubleType(), "timestamp": T.TimestampType(),
                      "date": T.DateType()}
    arrow, spark = table.to_arrow(), table.to_spark()
    assert arrow.names == list(table.column_names) == spark.fieldNames()
    for col, af, sf in zip(table.columns, arrow, spark.fields):
        assert af.type == expected_arrow[col.type.value] and sf.dataType == expected_spark[col.type.value]
        assert af.nullable == sf.nullable == col.nullable
    assert arrow.metadata[b"gtid_audit.schema_version"] == str(table.version).encode()


def test_rows_to_arrow_fills_missing_nullable_columns_with_null():
    """A row may omit nullable columns; they become NULL, never 0 or ''."""
    t = get_table("servers")
    row = {"run_id": "r1", "run_date": dt.date(2024, 1, 2), "server": "a", "cluster": None,
           "host": "h", "port": 3306, "discovered": False, "status": "failed"}
    table = t.rows_to_arrow([row])
    assert table.num_rows == 1
    assert table.column("sync_binlog").to_pylist() == [None]
    assert table.column("gtid_executed").to_pylist() == [None]


@pytest.mark.parametrize("row, fragment", [
    ({"run_id": "r", "run_date": dt.date(2024, 1, 1)}, "'server' must not be NULL"),
    ({"run_id": "r", "run_date": dt.date(2024, 1, 1), "server": "a", "bogus": 1}, "unknown column"),
    ({"run_id": "r", "run_date": dt.date(2024, 1, 1), "server": "a", "seq": True,
      "error_class": "x", "message": "m"}, "'seq' expects int32"),
    ({"run_id": "r", "run_date": dt.date(2024, 1, 1), "server": "a", "seq": 0, "error_class": "x",
      "message": "m", "read_at": dt.datetime(2024, 1, 1)}, "timezone-aware"),
], ids=["missing-required", "unknown-column", "bool-as-int", "naive-timestamp"])
def test_check_row_rejects_rows_that_do_not_fit(row, fragment):
    """Rows that do not fit the schema are refused with the table and column named."""
    with pytest.raises(SchemaError) as info:
        get_table("collection_errors").check_row(row)
    assert fragment in str(info.value) and "collection_errors" in str(info.value)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(columns=(Column("x", "string", True, "d"),)), "run_id"),
    (dict(columns=(Column("run_id", "string", False, "d"), Column("run_id", "string", False, "d"))), "duplicate"),
    (dict(columns=(Column("run_id", "string", False, "d"),), partition_by=("run_date",)), "unknown column"),
    (dict(columns=(Column("run_id", "string", False, "d"),), partition_by=(), version=0), "version"),
    (dict(columns=(Column("run_id", "string", False, "d"), Column("x", "string", True, "d", since=2))),
     "after the table's version"),
    (dict(columns=(Column("run_id", "string", False, "d"),), version=2, upgrades_from=2), "upgrades_from"),
], ids=["no-run-id", "duplicate", "bad-partition", "bad-version", "column-from-the-future", "upgrade-from-itself"])
def test_inconsistent_definitions_are_refused(kwargs, fragment):
    """A table definition with a structural mistake fails at import time."""
    base = dict(name="t", version=1, description="d", partition_by=())
    base.update(kwargs)
    with pytest.raises(SchemaError, match=fragment):
        TableSchema(**base)


def test_a_column_added_by_a_later_version_must_be_nullable():
    """Rows written before a column existed read NULL there: an added NOT NULL column is refused."""
    with pytest.raises(SchemaError, match="must be nullable"):
        Column("x", "string", False, "d", since=2)


def test_columns_of_an_earlier_version_are_those_it_had():
    t = TableSchema(name="t", version=3, description="d", partition_by=(), upgrades_from=1, columns=(
        Column("run_id", "string", False, "d"), Column("b", "int64", True, "d", since=3),
        Column("a", "int64", True, "d", since=2)))
    assert [c.name for c in t.columns_of_version(1)] == ["run_id"]
    assert [c.name for c in t.columns_of_version(2)] == ["run_id", "a"]
    assert t.columns_of_version(3) == t.columns
