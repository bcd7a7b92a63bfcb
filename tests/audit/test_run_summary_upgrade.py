"""A ``run_summary`` table written before schema version 2 is upgraded in place by the first
version-2 write (``findings_unsilenced_by_check`` added, NULL in the older rows), and the history
panel of docs/dashboards.md reads the newer nights from it and leaves the older ones out."""
from __future__ import annotations

import datetime as dt
import json
import logging

import pytest

from jobs.audit import build_summary
from jobs.delta_io import read_arrow, read_frame, write_run_rows
from tests.audit.test_dashboards import D1, D2, T1, T2, queries
from tests.audit.test_failover_upgrade import earlier_schema

pytestmark = [pytest.mark.spark]


def _summary(run_id, run_date):
    counts = [{"check_id": "errant_transactions", "severity": "critical", "status": "open", "silenced": False,
               "count": 2},
              {"check_id": "config_sync_binlog", "severity": "warning", "status": "open", "silenced": True,
               "count": 3}]
    return build_summary(run_id=run_id, run_date=run_date, counts=counts, events={}, servers={}, pairs_audited=0,
                         collect_seconds=None, audit_seconds=1.0, delivered=None, expired=[], fail_on="never",
                         exit_code=0)


def test_a_version_1_table_is_upgraded_in_place_and_the_history_panel_reads_the_new_column(spark, tmp_path,
                                                                                          caplog):
    wh = str(tmp_path / "warehouse")
    v1 = earlier_schema("run_summary", 1, "findings_unsilenced_by_check")

    old = {k: v for k, v in _summary("run1", D1).items() if k in v1.column_names}
    write_run_rows(spark, v1, [{**old, "audited_at": T1}], warehouse=wh, run_id="run1")
    new = _summary("run2", D2)
    # silenced findings are in findings_by_check, not in the unsilenced counts
    assert json.loads(new["findings_by_check"]) == {"config_sync_binlog": {"warning": 3},
                                                    "errant_transactions": {"critical": 2}}
    assert json.loads(new["findings_unsilenced_by_check"]) == {"errant_transactions": {"critical": 2}}
    with caplog.at_level(logging.WARNING):
        write_run_rows(spark, "run_summary", [{**new, "audited_at": T2}], warehouse=wh, run_id="run2")
    assert "table run_summary upgraded in place to schema version 2: added column(s) findings_unsilenced_by_check" \
        in caplog.text

    rows = {r["run_id"]: r for r in read_arrow(wh, "run_summary").to_pylist()}
    assert rows["run1"]["findings_unsilenced_by_check"] is None
    assert rows["run2"]["findings_unsilenced_by_check"] == new["findings_unsilenced_by_check"]

    read_frame(spark, wh, "run_summary").createOrReplaceTempView("gtid_audit_run_summary")
    (sql,) = [q for t, q in queries().items() if t.startswith("Findings over time")]
    assert [(r["run_date"], r["check_id"], r["severity"], r["findings"]) for r in spark.sql(sql).collect()] == \
        [(D2, "errant_transactions", "critical", 2)]
