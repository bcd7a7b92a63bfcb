"""jobs.delta_io: delta-spark writes (atomic per-run replacement, schema-version guard), reads via
Spark and via delta-rs (no JVM) for the read-only commands."""
from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from deltalake import DeltaTable

from jobs.delta_io import (
    SchemaMismatchError,
    TableNotFoundError,
    read_arrow,
    read_frame,
    scan_arrow,
    validate_run_id,
    write_run_frame,
    write_run_rows,
    written_schema_version,
)
from schemas import Column, LogicalType, TableSchema, get_table

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 5, 1, 2, 0, 0, 123456, tzinfo=UTC)


def error_rows(run_id: str, n: int, server: str = "db-a1") -> list[dict]:
    return [{"run_id": run_id, "run_date": dt.date(2024, 5, 1), "server": server, "cluster": "orders",
             "read_at": T0, "seq": i, "error_class": "unreachable", "errno": 2003, "sqlstate": None,
             "message": f"refused {i}", "statement": None, "channel_name": None} for i in range(n)]


def _version(path) -> int:
    return DeltaTable(str(path)).version()


def test_rerun_of_a_run_id_replaces_its_rows_and_leaves_other_runs(spark, tmp_path):
    """Writing a run twice leaves one copy; another run's rows are untouched; each write is one commit."""
    wh = str(tmp_path)
    write_run_rows(spark, "collection_errors", error_rows("r1", 3), warehouse=wh, run_id="r1")
    first = _version(tmp_path / "collection_errors")
    write_run_rows(spark, "collection_errors", error_rows("r2", 2), warehouse=wh, run_id="r2")
    write_run_rows(spark, "collection_errors", error_rows("r1", 3), warehouse=wh, run_id="r1")
    table = read_arrow(wh, "collection_errors")
    counts = {}
    for run_id in table.column("run_id").to_pylist():
        counts[run_id] = counts.get(run_id, 0) + 1
    assert counts == {"r1": 3, "r2": 2}
    assert _version(tmp_path / "collection_errors") == first + 2  # two more writes, two more commits


def test_scan_arrow_reads_only_the_runs_date_partition(spark, tmp_path):
    """With the run's ``run_date`` the scan is confined to that partition: the run's rows when the
    date is the run's, none when it is another day's (the filter really applies), and the
    ``where`` expression and columns still hold."""
    import pyarrow.dataset as pads

    wh = str(tmp_path)
    write_run_rows(spark, "collection_errors", error_rows("r1", 3), warehouse=wh, run_id="r1")
    later = [{**r, "run_date": dt.date(2024, 5, 2)} for r in error_rows("r2", 2)]
    write_run_rows(spark, "collection_errors", later, warehouse=wh, run_id="r2")

    def rows(run_id, run_date, **kw):
        return sum(b.num_rows for b in scan_arrow(wh, "collection_errors", run_id, run_date=run_date, **kw))

    assert rows("r1", dt.date(2024, 5, 1)) == 3
    assert rows("r1", dt.date(2024, 5, 2)) == 0
    assert rows("r2", dt.date(2024, 5, 2)) == 2
    assert rows(None, dt.date(2024, 5, 2)) == 2
    assert rows("r1", dt.date(2024, 5, 1), where=pads.field("seq") >= 1) == 2
    batches = list(scan_arrow(wh, "collection_errors", "r1", run_date=dt.date(2024, 5, 1), columns=("seq",)))
    assert {tuple(b.schema.names) for b in batches} == {("seq",)}


def test_a_runs_dataset_is_built_from_its_partitions_files_only(spark, tmp_path):
    """The dataset behind scan_arrow and read_arrow names only the files of the run's date (a
    year of nights is not turned into 365 days of fragments to filter afterwards), and none for a
    date without rows, whose scan still has the table's columns."""
    from jobs.delta_io import _run_dataset

    wh = str(tmp_path)
    write_run_rows(spark, "collection_errors", error_rows("r1", 3), warehouse=wh, run_id="r1")
    later = [{**r, "run_date": dt.date(2024, 5, 2)} for r in error_rows("r2", 2)]
    write_run_rows(spark, "collection_errors", later, warehouse=wh, run_id="r2")
    table = DeltaTable(str(tmp_path / "collection_errors"))
    assert len(table.to_pyarrow_dataset().files) == 2

    files = _run_dataset(table, "r2", dt.date(2024, 5, 2)).files
    assert len(files) == 1 and "run_date=2024-05-02" in files[0]
    assert _run_dataset(table, None, dt.date(2024, 5, 2)).files == files
    empty = _run_dataset(table, "r1", dt.date(2024, 5, 3))
    assert empty.files == [] and "seq" in empty.schema.names
    assert read_arrow(wh, "collection_errors", "r1", run_date=dt.date(2024, 5, 3)).num_rows == 0
    assert len(_run_dataset(table, None, None).files) == 2


def test_a_one_row_a_night_write_that_lost_a_concurrent_commit_is_made_again(spark, tmp_path, monkeypatch):
    """runs and run_summary are not partitioned, so another run's commit made meanwhile fails a
    write with Delta's concurrent-modification error: write_run_rows writes it again (the
    error is Delta's own class, raised once, as delta-spark raises it)."""
    from delta.exceptions import ConcurrentAppendException

    import jobs.delta_io as delta_io

    real, calls = delta_io.write_run_frame, []

    def lose_once(*args, **kwargs):
        calls.append(kwargs["run_id"])
        if len(calls) == 1:
            raise ConcurrentAppendException("Files were added to the root of the table by a concurrent update.")
        return real(*args, **kwargs)

    monkeypatch.setattr(delta_io, "write_run_frame", lose_once)
    monkeypatch.setattr(delta_io, "_CONCURRENT_WRITE_ATTEMPTS", 3)
    row = {c.name: None for c in get_table("runs").columns}
    row.update(run_id="r1", run_date=dt.date(2024, 5, 1), started_at=T0, finished_at=T0, warehouse=str(tmp_path),
               writer="delta-spark", servers_configured=1, servers_discovered=0, servers_ok=1, servers_partial=0,
               servers_failed=0, error_count=0, collector_version="t")
    assert write_run_rows(spark, "runs", [row], warehouse=str(tmp_path), run_id="r1") == 1
    assert calls == ["r1", "r1"]
    assert read_arrow(str(tmp_path), "runs").column("run_id").to_pylist() == ["r1"]
    # a partitioned table's write is not retried: its conflicts are another run's same partition
    calls.clear()
    with pytest.raises(ConcurrentAppendException):
        write_run_rows(spark, "collection_errors", error_rows("r1", 1), warehouse=str(tmp_path), run_id="r1")
    assert calls == ["r1"]


def test_empty_rerun_removes_the_runs_rows(spark, tmp_path):
    """A rerun that found nothing for a table leaves no stale rows of that run."""
    wh = str(tmp_path)
    write_run_rows(spark, "collection_errors", error_rows("r1", 2), warehouse=wh, run_id="r1")
    write_run_rows(spark, "collection_errors", [], warehouse=wh, run_id="r1")
    assert read_arrow(wh, "collection_errors", run_id="r1").num_rows == 0


def test_values_round_trip_with_null_and_utc(spark, tmp_path):
    """NULL stays NULL and timestamps stay UTC microseconds through a delta-spark write and a pandas read."""
    wh = str(tmp_path)
    write_run_rows(spark, "collection_errors", error_rows("r1", 1), warehouse=wh, run_id="r1")
    df = read_arrow(wh, "collection_errors", "r1").to_pandas()
    assert pd.isna(df.loc[0, "sqlstate"])
    assert df.loc[0, "read_at"].to_pydatetime() == T0
    assert df.loc[0, "errno"] == 2003


def test_rows_of_another_run_are_refused(spark, tmp_path):
    """A write for run r1 cannot carry rows of r2: refused before writing (driver rows) or by
    Delta's replaceWhere check (executor rows); nothing is written either way."""
    with pytest.raises(ValueError, match="another run"):
        write_run_rows(spark, "collection_errors", error_rows("r2", 1), warehouse=str(tmp_path), run_id="r1")
    df = spark.createDataFrame([tuple(r.values()) for r in error_rows("r2", 1)],
                               schema=get_table("collection_errors").to_spark())
    with pytest.raises(Exception, match="(?i)replaceWhere|does not conform|DELTA_REPLACE_WHERE"):
        write_run_frame(spark, "collection_errors", df, warehouse=str(tmp_path), run_id="r1")
    assert read_arrow(str(tmp_path), "collection_errors").num_rows == 0


def test_schema_version_is_stored_and_a_different_version_is_refused(spark, tmp_path):
    """The schema version travels with the table; a writer of another version is refused untouched."""
    wh = str(tmp_path)
    write_run_rows(spark, "collection_errors", error_rows("r1", 1), warehouse=wh, run_id="r1")
    assert written_schema_version(wh, "collection_errors") == get_table("collection_errors").version
    current = get_table("collection_errors")
    newer = TableSchema(name=current.name, version=current.version + 1, columns=current.columns,
                        description=current.description, key=current.key, partition_by=current.partition_by)
    with pytest.raises(SchemaMismatchError, match="schema version 1"):
        write_run_rows(spark, newer, error_rows("r2", 1), warehouse=wh, run_id="r2")
    assert read_arrow(wh, "collection_errors").num_rows == 1


def test_changed_columns_are_refused(spark, tmp_path):
    """Same version but other columns (a forgotten version bump) is refused too."""
    wh = str(tmp_path)
    cols = (Column("run_id", LogicalType.STRING, False, "r"), Column("run_date", LogicalType.DATE, False, "d"))
    t1 = TableSchema(name="tiny", version=1, columns=cols, description="t")
    write_run_rows(spark, t1, [{"run_id": "r1", "run_date": dt.date(2024, 1, 1)}], warehouse=wh, run_id="r1")
    t1b = TableSchema(name="tiny", version=1, description="t",
                      columns=cols + (Column("extra", LogicalType.INT64, True, "e"),))
    with pytest.raises(SchemaMismatchError, match="columns"):
        write_run_rows(spark, t1b, [{"run_id": "r2", "run_date": dt.date(2024, 1, 1)}], warehouse=wh, run_id="r2")


def test_a_version_that_only_added_columns_upgrades_the_table_in_place(spark, tmp_path, caplog):
    """A table written with version 1 and a writer of version 2 that may upgrade from it
    (``upgrades_from``) and only added a nullable column: the column is added where the schema
    has it (ALTER TABLE ... ADD COLUMNS, no data file rewritten), the old rows read NULL there,
    the new version is recorded, and a third version that changed more is still refused."""
    wh = str(tmp_path)
    run, date = Column("run_id", LogicalType.STRING, False, "r"), Column("run_date", LogicalType.DATE, False, "d")
    a, z = Column("a", LogicalType.INT64, True, "a"), Column("z", LogicalType.STRING, True, "z")
    v1 = TableSchema(name="grows", version=1, columns=(run, date, a, z), description="t")
    write_run_rows(spark, v1, [{"run_id": "r1", "run_date": dt.date(2024, 1, 1), "a": 1, "z": "x"}],
                   warehouse=wh, run_id="r1")
    files_before = set(DeltaTable(str(tmp_path / "grows")).file_uris())
    added = Column("lag_s", LogicalType.INT64, True, "it's new", since=2)
    v2 = TableSchema(name="grows", version=2, upgrades_from=1, columns=(run, date, a, added, z), description="t")
    with caplog.at_level("WARNING", logger="gtid_audit.delta_io"):
        write_run_rows(spark, v2, [{"run_id": "r2", "run_date": dt.date(2024, 1, 2), "a": 2, "lag_s": 7, "z": "y"}],
                       warehouse=wh, run_id="r2")
    assert "grows upgraded in place to schema version 2: added column(s) lag_s" in caplog.text
    table = DeltaTable(str(tmp_path / "grows"))
    assert [f.name for f in table.schema().fields] == ["run_id", "run_date", "a", "lag_s", "z"]
    assert files_before <= set(table.file_uris())  # run r1's file was not rewritten
    rows = sorted(read_arrow(wh, "grows").to_pylist(), key=lambda r: r["run_id"])
    assert [(r["run_id"], r["a"], r["lag_s"], r["z"]) for r in rows] == [("r1", 1, None, "x"), ("r2", 2, 7, "y")]
    assert written_schema_version(wh, "grows") == 2
    v3 = TableSchema(name="grows", version=3, upgrades_from=2, columns=(run, date, added, z), description="t")
    with pytest.raises(SchemaMismatchError, match="cannot be upgraded to version 3 in place"):
        write_run_rows(spark, v3, [{"run_id": "r3", "run_date": dt.date(2024, 1, 3)}], warehouse=wh, run_id="r3")
    v3_from_1 = TableSchema(name="grows", version=3, upgrades_from=1, columns=v2.columns, description="t")
    with pytest.raises(SchemaMismatchError, match="schema version 2"):  # a version bump with no column: refused
        write_run_rows(spark, TableSchema(name="grows", version=3, columns=v2.columns, description="t"),
                       [{"run_id": "r3", "run_date": dt.date(2024, 1, 3)}], warehouse=wh, run_id="r3")
    write_run_rows(spark, v3_from_1, [{"run_id": "r3", "run_date": dt.date(2024, 1, 3)}], warehouse=wh, run_id="r3")
    assert read_arrow(wh, "grows").num_rows == 3


def test_an_upgrade_adds_adjacent_and_leading_columns_and_needs_no_marker(spark, tmp_path):
    """Columns added side by side (the second AFTER the first, in one statement) and one added
    first land where the schema has them; a table whose newest commits carry no version marker
    (maintenance only) is recognised by its columns; read_arrow of a table not yet upgraded
    reads the new columns as NULL."""
    from delta.tables import DeltaTable as SparkDelta

    wh = str(tmp_path)
    run, date = Column("run_id", LogicalType.STRING, False, "r"), Column("run_date", LogicalType.DATE, False, "d")
    a = Column("a", LogicalType.INT64, True, "a")
    v1 = TableSchema(name="grows2", version=1, columns=(run, date, a), description="t")
    write_run_rows(spark, v1, [{"run_id": "r1", "run_date": dt.date(2024, 1, 1), "a": 1}], warehouse=wh, run_id="r1")
    for _ in range(3):  # commits without the marker
        SparkDelta.forPath(spark, str(tmp_path / "grows2")).delete("run_id = 'nothing'")
    spark.sql(f"OPTIMIZE delta.`{tmp_path / 'grows2'}`")
    first = Column("first_col", LogicalType.STRING, True, "it's \\ `odd`", since=2)
    b, c = Column("b", LogicalType.INT64, True, "b", since=2), Column("c", LogicalType.BOOL, True, "c", since=2)
    v2 = TableSchema(name="grows2", version=2, upgrades_from=1, description="t",
                     columns=(first, run, date, a, b, c))
    import jobs.delta_io as delta_io

    real, history = delta_io._version_from_history, []
    monkey = pytest.MonkeyPatch()
    monkey.setattr(delta_io, "_version_from_history", lambda h: history.append(real(h)) or None)
    monkey.setattr(delta_io, "get_table", lambda name: v2)  # the registered schema is already version 2
    try:
        before = read_arrow(wh, "grows2").to_pylist()
        assert before == [{"first_col": None, "run_id": "r1", "run_date": dt.date(2024, 1, 1), "a": 1, "b": None,
                           "c": None}]
        # as if no marker were among the newest commits
        write_run_rows(spark, v2, [{"run_id": "r2", "run_date": dt.date(2024, 1, 2), "a": 2, "b": 3, "c": True,
                                    "first_col": "x"}], warehouse=wh, run_id="r2")
    finally:
        monkey.undo()
    assert history == [1]
    table = DeltaTable(str(tmp_path / "grows2"))
    assert [f.name for f in table.schema().fields] == ["first_col", "run_id", "run_date", "a", "b", "c"]
    rows = sorted(read_arrow(wh, "grows2").to_pylist(), key=lambda r: r["run_id"])
    assert [(r["first_col"], r["a"], r["b"], r["c"]) for r in rows] == [(None, 1, None, None), ("x", 2, 3, True)]


def test_not_null_columns_are_enforced_by_delta(spark, tmp_path):
    """A NULL in a NOT NULL column, arriving from the executors, is refused by Delta itself."""
    row = error_rows("r1", 1)[0]
    schema = get_table("collection_errors").to_spark()
    loose = type(schema)([type(f)(f.name, f.dataType, True) for f in schema.fields])
    df = spark.createDataFrame([tuple({**row, "message": None}.values())], schema=loose)
    with pytest.raises(Exception, match="(?i)null"):
        write_run_frame(spark, "collection_errors", df, warehouse=str(tmp_path), run_id="r1")


@pytest.mark.parametrize("run_id", ["x' OR '1'='1", "", "a b", "-lead", "é"])
def test_unsafe_run_ids_are_refused(run_id):
    """Run ids that could escape the Delta predicate are refused with the id quoted."""
    with pytest.raises(ValueError, match="invalid run id"):
        validate_run_id(run_id)


def test_missing_table_is_a_named_error(spark, tmp_path):
    """Reading a table that was never written names its path, with either reader."""
    with pytest.raises(TableNotFoundError, match="servers"):
        read_arrow(str(tmp_path), "servers")
    with pytest.raises(TableNotFoundError, match="servers"):
        read_frame(spark, str(tmp_path), "servers")


def test_read_frame_gives_spark_sql_the_run(spark, tmp_path):
    """read_frame returns a DataFrame in the registered Spark schema, filtered to one run, usable from SQL."""
    wh = str(tmp_path)
    write_run_rows(spark, "collection_errors", error_rows("r1", 3), warehouse=wh, run_id="r1")
    write_run_rows(spark, "collection_errors", error_rows("r2", 1, server="db-b1"), warehouse=wh, run_id="r2")
    df = read_frame(spark, wh, "collection_errors", run_id="r1")
    assert [(f.name, f.dataType, f.nullable) for f in df.schema.fields] == [
        (f.name, f.dataType, f.nullable) for f in get_table("collection_errors").to_spark().fields]
    df.createOrReplaceTempView("errors_r1")
    rows = spark.sql("SELECT server, count(*) AS n, min(read_at) AS t FROM errors_r1 GROUP BY server").collect()
    assert [(r.server, r.n) for r in rows] == [("db-a1", 3)]
    assert rows[0].t.replace(tzinfo=UTC) == T0  # session time zone is UTC
    assert read_frame(spark, wh, "collection_errors").count() == 4


def test_a_large_nights_partition_is_written_in_bounded_row_groups(spark, tmp_path):
    """A reader decodes a whole Parquet row group whatever rows it keeps (the report reads a
    few findings' texts by key), and a night's partition is one file. The session's bound
    (``jobs.spark.TASK_BOUNDS``, in every session the job builds) cuts 50 MB of compressible
    findings text, like a 100,000-server night's, into row groups of a few MB decoded
    (Parquet's 128 MB default made it one)."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from jobs.config import SparkSettings
    from jobs.spark import TASK_BOUNDS, session_conf, session_conf_under_submit

    key = "spark.hadoop.parquet.block.size"
    bound = TASK_BOUNDS[key]
    for conf_of in (session_conf, session_conf_under_submit):   # a local session; one under spark-submit
        assert conf_of(SparkSettings())[key] == bound
        assert conf_of(SparkSettings(conf={key: "1048576"}))[key] == "1048576"   # the user's value wins
    assert spark.sparkContext._jsc.hadoopConfiguration().get("parquet.block.size") == bound
    schema = get_table("findings")
    advice = "Stop writing on the replica, compare its tables with the source's and neutralise each GTID. "
    text = F.concat(F.lit(advice * 8), F.col("id").cast("string"), F.sha2(F.col("id").cast("string"), 256))
    fill = {"string": text, "int64": F.col("id"), "int32": F.lit(1), "bool": F.lit(False),
            "double": F.lit(0.0), "date": F.lit(dt.date(2026, 11, 20)),
            "timestamp": F.lit(dt.datetime(2026, 11, 20, 3, tzinfo=dt.timezone.utc))}
    frame = spark.range(5_000).select(*[
        (F.lit("r1") if c.name == "run_id" else fill[c.type.value]).alias(c.name) for c in schema.columns])
    write_run_frame(spark, schema, frame, warehouse=str(tmp_path), run_id="r1", run_date=dt.date(2026, 11, 20))
    metas = [pq.ParquetFile(path).metadata for path in (tmp_path / "findings").rglob("*.parquet")]
    decoded = [m.row_group(i).total_byte_size for m in metas for i in range(m.num_row_groups)]
    assert sum(m.num_rows for m in metas) == 5_000 and sum(decoded) > 40 * 2**20, decoded
    assert len(decoded) >= 3 and max(decoded) < 32 * 2**20, decoded


def test_delta_rs_is_loaded_with_an_allocator_that_returns_freed_memory(tmp_path):
    """The first load of delta-rs in a process (through jobs.delta_io) gives its jemalloc the
    job's options, and an operator's own _RJEM_MALLOC_CONF is kept."""
    import os
    import subprocess
    import sys

    from jobs.delta_io import DELTA_RS_MALLOC_CONF, DELTA_RS_MALLOC_VARIABLE

    code = ("import os, sys; from jobs.delta_io import table_exists, _open_delta_rs; "
            "assert 'deltalake' not in sys.modules; "
            f"assert _open_delta_rs({str(tmp_path / 'none')!r}, None) is None; "
            f"print(os.environ.get({DELTA_RS_MALLOC_VARIABLE!r}))")
    env = {k: v for k, v in os.environ.items() if k != DELTA_RS_MALLOC_VARIABLE}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == DELTA_RS_MALLOC_CONF
    env[DELTA_RS_MALLOC_VARIABLE] = "narenas:2"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "narenas:2"
