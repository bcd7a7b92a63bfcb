"""jobs.read_staging: what the read stage writes to the warehouse comes back unchanged, table by
table, and the staging directory is named safely for every valid run id and removed on demand.
(That the reads happen once, even when an executor is lost, is proved on a cluster:
tests/cluster/test_submit_on_cluster.py.)"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from jobs import read_staging
from jobs.collector import PLAIN_TEXT, REPLAN, REUSED_HEADER
from jobs.read_plan import Probe
from schemas import LogicalType, get_table

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
#: One value of each column type; the timestamp has microseconds, the integer needs 64 bits.
VALUES = {LogicalType.STRING: "x\n\u00e9'\"", LogicalType.INT64: 2**40 + 3, LogicalType.INT32: -7,
          LogicalType.BOOL: False, LogicalType.DOUBLE: 0.25,
          LogicalType.TIMESTAMP: dt.datetime(2026, 5, 1, 2, 3, 4, 567891, tzinfo=UTC),
          LogicalType.DATE: dt.date(2026, 5, 1)}


def _row(table: str, server: str, nulls: bool) -> tuple:
    """A row of ``table`` for ``server``: every column set, or only the NOT NULL ones."""
    return tuple(server if c.name == "server" else None if nulls and c.nullable else VALUES[c.type]
                 for c in get_table(table).columns)


def _pairs() -> list[tuple[str, object]]:
    pairs = [(t, _row(t, f"{t}-{i}", nulls=bool(i))) for t in read_staging.STAGED_TABLES for i in range(2)]
    pairs.append((REUSED_HEADER, _row("binary_logs", "reused", nulls=False)))
    pairs.append((REPLAN, Probe("moved", "3E11FA47-71CA-11E1-9E33-C80AA9429562",
                                sources=(("db-a", 3306, None), (None, None, "uuid-b")),
                                replicas=(("db-c", 3307, "uuid-c"),), ok=True, hostname="h", reported_port=3306,
                                encrypted=False)))
    pairs.append((REPLAN, Probe("bare", None, ok=False)))
    pairs.append((PLAIN_TEXT, "plain-1"))
    return pairs


def _utc(value):
    return value.astimezone(UTC) if isinstance(value, dt.datetime) else value


def test_every_kind_of_pair_comes_back_unchanged(spark, tmp_path):
    """Rows of every table (all columns set, or only the NOT NULL ones), reused headers, probes and
    plain-text names read back from the staging table exactly as the read yielded them."""
    pairs = _pairs()
    uri = str(tmp_path / "stage")
    staged = read_staging.stage_reads(spark, spark.sparkContext.parallelize(pairs, 2).map(read_staging.staged_row),
                                      uri)
    assert (Path(uri) / "_delta_log").is_dir()
    for table in (*read_staging.STAGED_TABLES, REUSED_HEADER):
        frame = read_staging.table_frame(staged, table)
        schema = get_table("binary_logs" if table == REUSED_HEADER else table)
        assert frame.columns == list(schema.column_names)
        back = sorted(tuple(_utc(v) for v in r) for r in frame.collect())
        assert back == sorted(row for t, row in pairs if t == table), table
    probes = sorted(read_staging.staged_probes(staged), key=lambda p: p.name)
    assert probes == sorted((p for t, p in pairs if t == REPLAN), key=lambda p: p.name)
    assert probes[1].topology() == [p for t, p in pairs if t == REPLAN][0].topology()
    assert [r["server"] for r in staged.where(f"table = '{PLAIN_TEXT}'").collect()] == ["plain-1"]
    assert {r["server"] for r in staged.collect()} == {read_staging.staged_row(p)[1] for p in pairs}
    # its files carry row counts and no column statistics (nothing filters this table by them, and
    # computing them was most of the read stage's JVM time): the property is the table's own
    log = [json.loads(line) for f in sorted((Path(uri) / "_delta_log").glob("*.json"))
           for line in f.read_text().splitlines()]
    assert [a["metaData"]["configuration"] for a in log if "metaData" in a] == [{"delta.dataSkippingNumIndexedCols": "0"}]
    adds = [json.loads(a["add"]["stats"]) for a in log if "add" in a]
    assert adds and all(set(stats) == {"numRecords"} for stats in adds)
    assert sum(stats["numRecords"] for stats in adds) == len(pairs)


@pytest.mark.parametrize("run_id", ["20260501T020000Z-a1b2c3", "night:1+2", "a.b_c-d"],
                         ids=["generated", "colon-plus", "safe"])
def test_a_run_directory_is_one_safe_segment_per_run_id(run_id):
    """The staging directory of any valid run id is one path segment of safe characters, and ids
    that differ only in an unsafe character get different directories."""
    uri = read_staging.run_staging_uri("s3a://bucket/wh/", run_id)
    prefix = "s3a://bucket/wh/_staging/collect/"
    assert uri.startswith(prefix)
    segment = uri[len(prefix):]
    assert "/" not in segment and ":" not in segment and "+" not in segment
    assert segment.startswith(read_staging._UNSAFE.sub("_", run_id) + "-")
    assert read_staging.run_staging_uri("wh", "night:1") != read_staging.run_staging_uri("wh", "night_1")


def test_remove_deletes_the_tree_and_tolerates_none(spark, tmp_path):
    """remove() deletes a directory with everything under it, and does nothing for a missing one."""
    root = tmp_path / "run"
    (root / "attempt-1" / "read").mkdir(parents=True)
    (root / "attempt-1" / "read" / "part.parquet").write_bytes(b"x")
    read_staging.remove(spark, str(root))
    assert not root.exists() and tmp_path.exists()
    read_staging.remove(spark, str(root))
