"""A ``failover_readiness`` table written before schema version 3 (issue #19) is upgraded in
place by the first version-3 write, and its older runs still read right: the rows of a run
written by version 2 (one per sibling of every candidate, no ``siblings_not_listed``) and of one
written by version 3 (quiet siblings of the other candidates left out) give the dashboards' failover
panels the same answers, and the report draws both."""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging

import pytest

from gtid_core import failover as model
from jobs import report
from jobs.delta_io import read_arrow, read_frame, write_run_rows
from schemas import get_table
from tests.audit.test_dashboards import queries
from tests.core.test_failover import S, _uuid, replica, source

pytestmark = [pytest.mark.spark]

D1, D2 = dt.date(2026, 11, 20), dt.date(2026, 11, 21)


def earlier_schema(name: str, version: int, added: str):
    """Table ``name``'s schema as version ``version`` wrote it (the current one upgrades from it in
    place), and a check that column ``added`` came after it."""
    now = get_table(name)
    assert now.upgrades_from == version < now.version
    then = dataclasses.replace(now, version=version, upgrades_from=None, columns=now.columns_of_version(version))
    assert added in now.column_names and added not in then.column_names
    return then


def _model():
    """A source with three 9.7 replicas: r1 and r2 in sync, r3's receiver stopped three
    transactions behind. The preferred candidate lists every sibling; the other safe one has two
    quiet siblings (they stream from it), while r3 would lose what r1 and r2 keep."""
    return model.model_failover(source(), [replica("orders-r1", _uuid(1), 11, f"{S}:1-10"),
                                           replica("orders-r2", _uuid(2), 12, f"{S}:1-10"),
                                           replica("orders-r3", _uuid(3), 13, f"{S}:1-7", io="NO")])


def _version_2_rows(run_id, run_date, monkeypatch):
    """What the version-2 writer wrote: a row for every sibling of every candidate, and no
    ``siblings_not_listed`` column."""
    with monkeypatch.context() as m:
        m.setattr(model, "listed_siblings", lambda c: c.siblings)
        rows = model.failover_rows(_model(), run_id=run_id, run_date=run_date, cluster="orders")
    for row in rows:
        del row["siblings_not_listed"]
    return rows


def _panels(spark, run_id):
    """The dashboards' failover panels (docs/dashboards.md) on run ``run_id``."""
    out = {}
    for title, sql in queries().items():
        if title.startswith("Failover readiness"):
            pinned = sql.replace("ORDER BY run_id DESC LIMIT 1", f"WHERE run_id = '{run_id}'")
            assert pinned != sql, title
            out[title] = [r.asDict() for r in spark.sql(pinned).collect()]
    return out


def test_a_version_2_table_is_upgraded_in_place_and_both_runs_read_the_same(spark, tmp_path, monkeypatch,
                                                                            caplog):
    wh = str(tmp_path / "warehouse")
    v3 = get_table("failover_readiness")
    v2 = earlier_schema("failover_readiness", 2, "siblings_not_listed")

    old = _version_2_rows("run1", D1, monkeypatch)
    write_run_rows(spark, v2, old, warehouse=wh, run_id="run1")
    new = model.failover_rows(_model(), run_id="run2", run_date=D2, cluster="orders")
    with caplog.at_level(logging.WARNING):
        write_run_rows(spark, "failover_readiness", new, warehouse=wh, run_id="run2")
    assert "table failover_readiness upgraded in place to schema version 3: added column(s) siblings_not_listed" \
        in caplog.text

    # every sibling of every candidate in version 2 (3 candidates x 3 siblings), the quiet ones
    # of the other candidates left out in version 3 and counted on their candidate's rows
    rows = read_arrow(wh, "failover_readiness").to_pylist()
    assert [f.name for f in read_arrow(wh, "failover_readiness", "run2").schema] == list(v3.column_names)
    run1 = [r for r in rows if r["run_id"] == "run1"]
    run2 = [r for r in rows if r["run_id"] == "run2"]
    assert len(run1) == 9 and {r["siblings_not_listed"] for r in run1} == {None}
    assert len(run2) < len(run1)
    not_listed = {(r["candidate"], r["candidate_rank"]): r["siblings_not_listed"] for r in run2}
    first, second = (c.candidate for c in _model().candidates[:2])
    assert {first, second} == {"orders-r1", "orders-r2"}
    assert not_listed[(first, 1)] == 0
    assert not_listed[(second, 2)] == 2            # the other in-sync one and r3 stream from it
    assert {(r["candidate"], r["sibling"]) for r in run2} < {(r["candidate"], r["sibling"]) for r in run1}

    # the panels aggregate over the listed rows: the same answers from either version's rows
    frame = read_frame(spark, wh, "failover_readiness")
    frame.createOrReplaceTempView("gtid_audit_failover_readiness")
    spark.createDataFrame([("run1", D1), ("run2", D2)], "run_id string, run_date date") \
        .createOrReplaceTempView("gtid_audit_run_summary")
    before, after = _panels(spark, "run1"), _panels(spark, "run2")
    assert len(before) == 3 and before["Failover readiness: which replica to promote if a source dies tonight #1"]
    for title in before:
        assert before[title] == after[title], title

    # the report reads the older run's rows (no siblings_not_listed in its files) and draws them
    for run_id, run_date, quiet in (("run1", D1, False), ("run2", D2, True)):
        shown = report._failover_rows(wh, {"run_id": run_id, "run_date": run_date}, None)
        assert {r["candidate"] for r in shown} == {"orders-r1", "orders-r2", "orders-r3"}
        section = report._failover_section(shown)
        assert "orders-r3" in section and "loses_transactions" in section
        assert ("other sibling(s) stream, losing nothing" in section) is quiet
