"""docs/dashboards.md stays true: every query in it runs in Spark SQL over tables written with
the project's own schemas and writer, and returns what the panel promises."""
from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from pathlib import Path

import pytest

from jobs.audit import build_summary
from jobs.delta_io import frame_from_rows, merge_latest, overwrite_frame, read_frame, write_run_rows
from schemas import all_tables, get_table

pytestmark = [pytest.mark.spark]

DOC = Path(__file__).resolve().parents[2] / "docs" / "dashboards.md"
D1, D2 = dt.date(2026, 11, 20), dt.date(2026, 11, 21)
T1 = dt.datetime(2026, 11, 20, 2, 15, tzinfo=dt.timezone.utc)
T2 = dt.datetime(2026, 11, 21, 2, 15, tzinfo=dt.timezone.utc)
SRC_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
GONE_UUID = "4e11fa47-71ca-11e1-9e33-c80aa9429563"
R2_UUID = "5e11fa47-71ca-11e1-9e33-c80aa9429564"
BILLING_UUID = "8e11fa47-71ca-11e1-9e33-c80aa9429567"

_FILL = {"string": "x", "int64": 0, "int32": 0, "bool": False, "double": 0.0}


def full_row(table: str, **values):
    """A row with every non-nullable column filled (defaults by type), overridden by ``values``."""
    schema = get_table(table)
    row = {}
    for col in schema.columns:
        if col.name in values:
            row[col.name] = values[col.name]
        elif col.nullable:
            row[col.name] = None
        elif col.type.value == "timestamp":
            row[col.name] = T2
        elif col.type.value == "date":
            row[col.name] = D2
        else:
            row[col.name] = _FILL[col.type.value]
    schema.check_row(row)
    return row


def finding(run_id, run_date, check_id, severity, server, *, status="open", silenced=False, source=None,
            gtid_set=None, gtid_count=None, first_seen=D1, cluster="orders"):
    return full_row("findings", run_id=run_id, run_date=run_date, finding_key=f"{check_id}|{server}|{source}",
                    check_id=check_id, severity=severity, cluster=cluster, server=server, source=source,
                    channel="" if source else None, title=check_id, detail="d", gtid_set=gtid_set,
                    gtid_count=gtid_count, first_seen=first_seen, status=status, silenced=silenced,
                    remediation="r", check_version=1)


def failover_readiness_rows(run_id, run_date):
    """Rows from the real model: orders-r1 stopped and behind (orders-r2 is the safe choice);
    billing-src's only replica stopped and behind (no safe candidate)."""
    from gtid_core import ChannelSnapshot, GtidSet, ServerSnapshot
    from gtid_core.failover import FailoverReplica, failover_rows, model_failover

    def srv(name, uuid, server_id, executed):
        return ServerSnapshot(name=name, server_uuid=uuid, server_id=server_id, gtid_mode="ON", log_bin=True,
                              log_replica_updates=True, gtid_executed=GtidSet.parse(executed),
                              gtid_purged=GtidSet.EMPTY)

    def rep(name, uuid, server_id, executed, io):
        return FailoverReplica(srv(name, uuid, server_id, executed),
                               ChannelSnapshot(io_running=io, sql_running="YES",
                                               retrieved_gtid_set=GtidSet.parse(executed)))

    orders = model_failover(srv("orders-src", SRC_UUID, 1, f"{SRC_UUID}:1-10"), [
        rep("orders-r1", R2_UUID, 2, f"{SRC_UUID}:1-8", "NO"),
        rep("orders-r2", "6e11fa47-71ca-11e1-9e33-c80aa9429565", 3, f"{SRC_UUID}:1-10", "YES")])
    billing = model_failover(srv("billing-src", BILLING_UUID, 4, f"{BILLING_UUID}:1-5"), [
        rep("billing-r1", "7e11fa47-71ca-11e1-9e33-c80aa9429566", 5, f"{BILLING_UUID}:1-3", "NO")])
    return (failover_rows(orders, run_id=run_id, run_date=run_date, cluster="orders")
            + failover_rows(billing, run_id=run_id, run_date=run_date, cluster="billing"))


@pytest.fixture(scope="module")
def views(spark, tmp_path_factory):
    """Two audited runs written with the project's writer, registered as gtid_audit_* views."""
    wh = str(tmp_path_factory.mktemp("dash") / "warehouse")
    runs = {"run1": (D1, T1), "run2": (D2, T2)}
    findings = {
        "run1": [finding("run1", D1, "errant_transactions", "critical", "orders-r2", source="orders-src",
                         gtid_set=f"{GONE_UUID}:1-3", gtid_count=3)],
        "run2": [
            finding("run2", D2, "errant_transactions", "critical", "orders-r2", source="orders-src",
                    gtid_set=f"{GONE_UUID}:1-3,{R2_UUID}:7", gtid_count=4),
            finding("run2", D2, "errant_transactions", "critical", "orders-r3", source="orders-r1",
                    gtid_set=f"{GONE_UUID}:2", gtid_count=1, first_seen=D2),
            finding("run2", D2, "replica_near_purge_horizon", "warning", "orders-r1", source="orders-src",
                    gtid_set=f"{SRC_UUID}:40-49", gtid_count=10, first_seen=D2),
            finding("run2", D2, "config_sync_binlog", "warning", "orders-src", silenced=True),
            finding("run2", D2, "collection_failed", "critical", "orders-ghost", first_seen=D2),
        ],
    }
    for run_id, (date, ts) in runs.items():
        write_run_rows(spark, "runs", [full_row("runs", run_id=run_id, run_date=date, started_at=ts, finished_at=ts)],
                       warehouse=wh, run_id=run_id)
        # the summary row as the audit builds it, from this run's findings
        counts = Counter((f["check_id"], f["severity"], f["status"], f["silenced"]) for f in findings[run_id])
        summary = build_summary(run_id=run_id, run_date=date, counts=[
            {"check_id": c, "severity": sev, "status": st, "silenced": sil, "count": n}
            for (c, sev, st, sil), n in counts.items()], events={}, servers={}, pairs_audited=0,
            collect_seconds=None, audit_seconds=1.0, delivered=None, expired=[], fail_on="never", exit_code=0)
        write_run_rows(spark, "run_summary", [{**summary, "audited_at": ts}], warehouse=wh, run_id=run_id)
        write_run_rows(spark, "findings", findings[run_id], warehouse=wh, run_id=run_id)
        merge_latest(spark, "findings_latest", read_frame(spark, wh, "findings", run_id, date), warehouse=wh,
                     run_id=run_id)
        # orders-r9, stopped in run1 only (rebuilt since), must not show in run2's panels
        retired = [full_row("channels", run_id=run_id, run_date=date, server="orders-r9", cluster="orders",
                            channel_name="", source_server="orders-src", io_running="Yes", sql_running="No",
                            seconds_behind_source=7200)] if run_id == "run1" else []
        write_run_rows(spark, "channels", [
            full_row("channels", run_id=run_id, run_date=date, server="orders-r1", cluster="orders",
                     channel_name="", source_server="orders-src", io_running="No", sql_running="Yes",
                     last_io_errno=13114),
            full_row("channels", run_id=run_id, run_date=date, server="orders-r2", cluster="orders",
                     channel_name="", source_server="orders-src", io_running="Yes", sql_running="Yes"),
            *retired,
        ], warehouse=wh, run_id=run_id)
    overwrite_frame(spark, "uuid_registry", frame_from_rows(spark, "uuid_registry", [
        full_row("uuid_registry", run_id="run1", server_uuid=GONE_UUID, server="orders-old", cluster="orders",
                 first_seen=D1, last_seen=D1),
        full_row("uuid_registry", run_id="run2", server_uuid=R2_UUID, server="orders-r2", cluster="orders",
                 first_seen=D1, last_seen=D2),
    ]), warehouse=wh)
    for run_id, (date, ts) in runs.items():
        write_run_rows(spark, "failover_readiness", failover_readiness_rows(run_id, date), warehouse=wh, run_id=run_id)
    for name in ("runs", "run_summary", "findings", "findings_latest", "channels", "uuid_registry",
                 "failover_readiness"):
        read_frame(spark, wh, name).createOrReplaceTempView(f"gtid_audit_{name}")
    return spark


def queries() -> dict[str, str]:
    """Each ```sql block under a '## ' heading of docs/dashboards.md (the table set-up excluded)."""
    out: dict[str, str] = {}
    text = DOC.read_text(encoding="utf-8")
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        for i, block in enumerate(re.findall(r"```sql\n(.*?)```", section, re.S)):
            if "CREATE TABLE" in block:
                continue
            sql = re.sub(r"gtid_audit\.(\w+)", r"gtid_audit_\1", block).strip().rstrip(";")
            # the day the panels are read: the fixture's second night, whatever today's date is
            out[f"{title} #{i + 1}"] = re.sub(r"\bcurrent_date\b(\(\))?", f"DATE'{D2.isoformat()}'", sql, flags=re.I)
    return out


def run(spark, title_prefix: str, index: int = 1):
    (sql,) = [q for t, q in queries().items() if t.startswith(title_prefix) and t.endswith(f"#{index}")]
    return [r.asDict() for r in spark.sql(sql).collect()]


def test_every_dashboard_query_runs(views):
    """Every SQL block of docs/dashboards.md parses and runs in Spark SQL on the real schemas."""
    qs = queries()
    assert len(qs) >= 6
    for title, sql in qs.items():
        views.sql(sql).collect()


def test_open_critical_panel_lists_the_newest_runs_unsilenced_criticals(views):
    """The on-call panel shows run2's open critical findings and nothing silenced or older."""
    rows = run(views, "Open critical findings")
    assert sorted(r["server"] for r in rows) == ["orders-ghost", "orders-r2", "orders-r3"]


def test_near_purge_panel_shows_the_warning(views):
    """Replicas close to losing their source's binary logs: the near-horizon warning is listed."""
    rows = run(views, "Replicas close to losing")
    assert [(r["replica"], r["check_id"], r["transactions_needed"]) for r in rows] == [
        ("orders-r1", "replica_near_purge_horizon", 10)]
    stopped = run(views, "Replicas close to losing", 2)
    assert [r["server"] for r in stopped] == ["orders-r1"]     # run2's row only: not run1's, not orders-r9's


def test_errant_by_origin_names_decommissioned_servers(views):
    """Errant GTIDs are attributed through uuid_registry, including a server that is gone."""
    rows = {r["origin_server"]: r for r in run(views, "Errant GTIDs by origin")}
    assert rows["orders-old"]["replicas_affected"] == 2
    assert sorted(rows["orders-old"]["replicas"]) == ["orders-r2", "orders-r3"]
    assert rows["orders-r2"]["origin_uuid"] == R2_UUID


def test_findings_over_time_counts_per_run_date(views):
    """Findings over time: one count per run date, check and severity, silenced ones excluded; from
    run_summary, the same counts as the findings rows themselves."""
    rows = {(r["run_date"], r["check_id"], r["severity"]): r["findings"] for r in run(views, "Findings over time")}
    assert rows[(D1, "errant_transactions", "critical")] == 1
    assert rows[(D2, "errant_transactions", "critical")] == 2
    assert not any(check == "config_sync_binlog" for _, check, _ in rows)
    counted = views.sql("SELECT run_date, check_id, severity, count(*) AS n FROM gtid_audit_findings "
                        "WHERE status = 'open' AND NOT silenced GROUP BY run_date, check_id, severity").collect()
    assert rows == {(r["run_date"], r["check_id"], r["severity"]): r["n"] for r in counted}


def test_findings_over_time_takes_each_nights_last_audit(views):
    """A night audited twice (a rerun under another run id) counts once, as its last audit saw it; rows
    written before run_summary version 2 (the column NULL) are left out, not counted as zero."""
    (sql,) = [q for t, q in queries().items() if t.startswith("Findings over time")]
    views.sql("SELECT * FROM gtid_audit_run_summary").createOrReplaceTempView("base_summary")
    rerun = {"check_id": "errant_transactions", "severity": "critical", "status": "open", "silenced": False,
             "count": 5}
    again = build_summary(run_id="run2b", run_date=D2, counts=[rerun], events={}, servers={}, pairs_audited=0,
                          collect_seconds=None, audit_seconds=1.0, delivered=None, expired=[], fail_on="never",
                          exit_code=0)
    older = {**again, "run_id": "run0", "run_date": D1 - dt.timedelta(days=1), "findings_unsilenced_by_check": None}
    extra = views.createDataFrame([{**again, "audited_at": T2 + dt.timedelta(hours=1)}, {**older, "audited_at": T1}],
                                  schema=get_table("run_summary").to_spark())
    views.table("base_summary").unionByName(extra).createOrReplaceTempView("summary_with_rerun")
    try:
        rows = {(r["run_date"], r["check_id"]): r["findings"]
                for r in views.sql(sql.replace("gtid_audit_run_summary", "summary_with_rerun")).collect()}
    finally:
        views.catalog.dropTempView("summary_with_rerun")
        views.catalog.dropTempView("base_summary")
    assert rows == {(D1, "errant_transactions"): 1, (D2, "errant_transactions"): 5}


def test_failover_panel_ranks_candidates_per_source(views):
    """Failover readiness: orders-r2 first (safe), orders-r1 second (loses 2 on a sibling); billing-r1 alone."""
    rows = [(r["source"], r["candidate_rank"], r["candidate"], r["verdict"], r["most_lost_on_one_sibling"])
            for r in run(views, "Failover readiness")]
    assert rows == [("billing-src", 1, "billing-r1", "loses_transactions", 2),
                    ("orders-src", 1, "orders-r2", "safe", 0),
                    ("orders-src", 2, "orders-r1", "loses_transactions", 2)]


def test_no_safe_candidate_panel_and_salvage_panel(views):
    """Only billing-src lacks a safe candidate; the salvage panel says where orders-r1's and billing-r1's gaps are."""
    assert [(r["source"], r["replicas"]) for r in run(views, "Failover readiness", 2)] == [("billing-src", 1)]
    salvage = [(r["candidate"], r["salvage_from"], r["lost_gtid_set"]) for r in run(views, "Failover readiness", 3)]
    assert salvage == [("billing-r1", "billing-src", f"{BILLING_UUID}:4-5"),
                       ("orders-r1", "orders-r2", f"{SRC_UUID}:9-10"),
                       ("orders-r1", "orders-src", f"{SRC_UUID}:9-10")]


def test_every_query_of_a_per_run_table_names_its_run_date_partition():
    """Each query reading a per-run table filters on run_date, so it is pruned: by partition, or by
    the file statistics of the clustered runs and run_summary."""
    per_run = {n for n, t in all_tables().items() if "run_id" in t.key}
    assert {"findings", "runs", "run_summary"} <= per_run
    for title, sql in queries().items():
        read = set(re.findall(r"gtid_audit_(\w+)", sql)) & per_run
        data = read - {"run_summary", "runs"}  # `latest` reads the run list itself
        if data:
            for alias in re.findall(r"gtid_audit_(?:%s) (\w)\b" % "|".join(sorted(data)), sql):
                assert f"{alias}.run_date" in sql, f"{title}: {alias}.run_date missing"
            assert "run_date" in sql.split("SELECT", 2)[-1], title
        elif read:
            assert "run_date" in sql, title


def _plan_nodes(node):
    """``node`` and every node below it, its subqueries' plans included (a JVM SparkPlan)."""
    yield node
    for seq in (node.children(), node.subqueries()):
        for i in range(seq.size()):
            yield from _plan_nodes(seq.apply(i))


def test_every_scan_of_a_partitioned_table_is_pruned_in_the_plan(views):
    """In each query's executed plan, every scan of a table partitioned by run_date has a
    partition filter: the engine reads the night's partition (or the history panel's range), never
    the whole history. The text test above cannot see an OR that escapes the run's conjunct
    (``... AND run_id = x AND a OR b`` reads every run: the stopped-channel and salvage panels did)."""
    partitioned = {n for n, t in all_tables().items() if "run_date" in t.partition_by}
    assert {"findings", "channels", "failover_readiness"} <= partitioned
    adaptive = views.conf.get("spark.sql.adaptive.enabled")
    views.conf.set("spark.sql.adaptive.enabled", "false")     # a plain plan tree
    try:
        for title, sql in queries().items():
            frame = views.sql(sql)
            frame.collect()
            plan = frame._jdf.queryExecution().executedPlan()
            checked = set()
            for node in _plan_nodes(plan):
                if node.getClass().getSimpleName() != "FileSourceScanExec":
                    continue
                table = node.relation().location().rootPaths().apply(0).toString().rstrip("/").rsplit("/", 1)[-1]
                if table in partitioned:
                    assert "run_date" in node.partitionFilters().toString(), f"{title}: {table} not pruned"
                    checked.add(table)
            # every partitioned table the query names was found among the plan's scans and checked
            assert checked == set(re.findall(r"gtid_audit_(\w+)", sql)) & partitioned, title
    finally:
        views.conf.set("spark.sql.adaptive.enabled", adaptive)
