"""The audit job on hand-written snapshot tables (Delta, local Spark): findings, history,
feed, registry, summary and exit codes across two runs, without MySQL."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from jobs.audit import AuditError, audit_run, explain_text
from jobs.config import ConfigError, load_audit_settings, parse_config
from jobs.delta_io import read_arrow, write_run_rows

pytestmark = pytest.mark.spark

A = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"   # the source
R1 = "11111111-1111-1111-1111-111111111111"  # replica with errant transactions in run 1
R2 = "22222222-2222-2222-2222-222222222222"
R3 = "33333333-3333-3333-3333-333333333333"
R4 = "44444444-4444-4444-4444-444444444444"
R5 = "55555555-5555-5555-5555-555555555555"
GONE = "99999999-9999-9999-9999-999999999999"  # a source no longer in the fleet
T1 = dt.datetime(2026, 11, 21, 3, 0, tzinfo=dt.timezone.utc)
T2 = dt.datetime(2026, 11, 22, 3, 0, tzinfo=dt.timezone.utc)


def server(run, name, port, uuid, executed, purged="", status="ok", cluster="orders"):
    run_id, at = run
    return {"run_id": run_id, "run_date": at.date(), "server": name, "cluster": cluster, "read_at": at,
            "host": "127.0.0.1", "port": port, "discovered": False, "status": status,
            "server_uuid": None if status == "failed" else uuid, "server_id": port,
            "version": None if status == "failed" else "9.7.4",
            "gtid_mode": None if status == "failed" else "ON",
            "enforce_gtid_consistency": None if status == "failed" else "ON",
            "gtid_executed": None if status == "failed" else executed,
            "gtid_purged": None if status == "failed" else purged,
            "log_bin": None if status == "failed" else True,
            "log_replica_updates": None if status == "failed" else True,
            "read_only": None if status == "failed" else name != "src"}


def channel(run, name, source_port, source_uuid, retrieved, executed, host="127.0.0.1", source="src"):
    """A channels row as the collector writes it: its source resolved by the collector (None with
    the resolver's reason when the address is no inventory server)."""
    run_id, at = run
    problem = None if source else f"{host}:{source_port} is no inventory server (by name, alias or address)"
    return {"run_id": run_id, "run_date": at.date(), "server": name, "cluster": "orders", "read_at": at,
            "source_server": source, "source_method": "address" if source else None, "source_problem": problem,
            "channel_name": "", "status_statement": "SHOW REPLICA STATUS", "source_host": host,
            "source_port": source_port, "source_uuid": source_uuid, "retrieved_gtid_set": retrieved,
            "executed_gtid_set": executed, "io_running": "Yes", "sql_running": "Yes", "auto_position": True,
            "last_io_errno": 0, "last_io_error": "", "last_sql_errno": 0, "last_sql_error": "",
            "source_log_file": "binlog.000001", "read_source_log_pos": 900,
            "relay_source_log_file": "binlog.000001", "exec_source_log_pos": 900,
            "seconds_behind_source": 0, "received_transaction_set": retrieved, "service_state": "ON",
            "queueing_transaction": "", "last_queued_transaction": ""}


def binlog(run, name, previous):
    run_id, at = run
    return {"run_id": run_id, "run_date": at.date(), "server": name, "cluster": "orders", "read_at": at,
            "seq": 0, "log_name": "binlog.000001", "file_size": 1000, "previous_gtids": previous,
            "previous_gtids_read": True}


def write_run(spark, warehouse, run, *, repaired: bool):
    """Run 1: r1 has 3 errant transactions, r3 unreachable, r4's source unknown, r5 uses tags.
    Run 2: the errant GTIDs were neutralised on src (empty transactions), r3 is back."""
    run_id, at = run
    src_set = f"{A}:1-100:audit_tag:1-5" + (f",\n{R1}:1-3" if repaired else "")
    rows = {
        "servers": [server(run, "src", 4000, A, src_set, f"{A}:1-10"),
                    server(run, "r1", 4001, R1, f"{A}:1-100:audit_tag:1-5,\n{R1}:1-3", f"{A}:1-10"),
                    server(run, "r2", 4002, R2, f"{A}:1-100:audit_tag:1-5", f"{A}:1-10"),
                    server(run, "r3", 4003, R3, f"{A}:1-100:audit_tag:1-5", f"{A}:1-10",
                           status="ok" if repaired else "failed"),
                    server(run, "r4", 4004, R4, f"{A}:1-100", f"{A}:1-10"),
                    server(run, "r5", 4005, R5, f"{A}:1-100:audit_tag:1-5", f"{A}:1-10")],
        "channels": [channel(run, "r1", 4000, A, f"{A}:1-100:audit_tag:1-5", f"{A}:1-100:audit_tag:1-5,\n{R1}:1-3"),
                     channel(run, "r2", 4000, A, f"{A}:1-100:audit_tag:1-5", f"{A}:1-100:audit_tag:1-5"),
                     channel(run, "r4", 3306, GONE, f"{A}:1-100", f"{A}:1-100", host="ghost.invalid", source=None),
                     {**channel(run, "r5", 4000, A, f"{A}:1-100:audit_tag:1-5", f"{A}:1-100:audit_tag:1-5"),
                      "seconds_behind_source": 12}]
        + ([channel(run, "r3", 4000, A, f"{A}:1-100:audit_tag:1-5", f"{A}:1-100:audit_tag:1-5")] if repaired else []),
        "binary_logs": [binlog(run, n, f"{A}:1-10") for n in ("src", "r1", "r2", "r4", "r5")]
        + ([binlog(run, "r3", f"{A}:1-10")] if repaired else []),
        "relay_log_tail": [],
        "collection_errors": [] if repaired else [
            {"run_id": run_id, "run_date": at.date(), "server": "r3", "cluster": "orders", "read_at": None,
             "seq": 0, "error_class": "unreachable", "errno": 2003, "sqlstate": "HY000",
             "message": "Can't connect to MySQL server on '127.0.0.1:4003' (111)"}],
        "runs": [{"run_id": run_id, "run_date": at.date(), "started_at": at, "finished_at": at,
                  "warehouse": str(warehouse), "writer": "delta-spark", "servers_configured": 6,
                  "servers_discovered": 0, "servers_ok": 6 if repaired else 5, "servers_partial": 0,
                  "servers_failed": 0 if repaired else 1, "error_count": 0 if repaired else 1,
                  "collector_version": "test"}],
    }
    for table, data in rows.items():
        write_run_rows(spark, table, data, warehouse=str(warehouse), run_id=run_id)


def config(warehouse, audit):
    servers = [{"name": n, "host": "127.0.0.1", "port": 4000 + i, "cluster": "orders"}
               for i, n in enumerate(("src", "r1", "r2", "r3", "r4", "r5"))]
    return parse_config({"warehouse": str(warehouse), "defaults": {"user": "audit"}, "servers": servers,
                         "audit": audit})


def by_check(rows):
    return {(r["check_id"], r["server"]): r for r in rows}


def test_two_runs_find_resolve_and_alert(spark, tmp_path):
    """Run 1 finds exactly the faults (exact errant set), run 2 resolves the repaired ones, and
    auditing run 2 again replaces its rows (one audit more instead of a test of its own: each
    audit costs about half a minute of Spark jobs and Delta commits)."""
    wh = tmp_path / "wh"
    silence = {"server": "r4", "check": "source_unresolved", "expires": "2026-11-21", "reason": "known, until the 21st"}
    cfg = config(wh, {"silences": [silence]})
    write_run(spark, wh, ("run1", T1), repaired=False)
    first = audit_run(spark, cfg, run_id="run1")

    got = by_check(first.findings())
    assert {k for k, r in got.items() if r["severity"] != "info"} == {
        ("errant_transactions", "r1"), ("collection_failed", "r3"), ("source_unresolved", "r4"),
        ("failover_candidate_unsafe", "r1")}   # promoting r1 would hand its errant GTIDs to src and r2
    assert "propagates_errant" in got[("failover_candidate_unsafe", "r1")]["detail"] or \
        "errant" in got[("failover_candidate_unsafe", "r1")]["detail"]
    errant = got[("errant_transactions", "r1")]
    assert (errant["gtid_set"], errant["gtid_count"], errant["source"], errant["channel"]) == (f"{R1}:1-3", 3, "src", "")
    assert "unreachable" in got[("collection_failed", "r3")]["detail"]
    assert got[("source_unresolved", "r4")]["silenced"] is True
    assert first.exit_code == 2 and first.previous_run_id is None
    assert {(e["check_id"], e["event"]) for e in first.alerts()} == {
        ("errant_transactions", "new"), ("collection_failed", "new"), ("failover_candidate_unsafe", "new")}

    # the report's inputs, made by the audit: every channel with its resolved source, the servers, the cluster
    pairs = {r["replica"]: r for r in read_arrow(str(wh), "report_pairs", "run1").to_pylist()}
    assert {k: (r["source"], r["replica_status"], r["source_status"]) for k, r in pairs.items()} == {
        "r1": ("src", "ok", "ok"), "r2": ("src", "ok", "ok"), "r4": (None, "ok", None), "r5": ("src", "ok", "ok")}
    verdicts = {(r["source"], r["candidate"]): r["verdict"]
                for r in read_arrow(str(wh), "failover_readiness", "run1").to_pylist()}
    assert {k: r["readiness_verdict"] for k, r in pairs.items()} == {
        "r1": verdicts[("src", "r1")], "r2": verdicts[("src", "r2")], "r4": None, "r5": verdicts[("src", "r5")]}
    assert all(r["reconnect"] is None for r in pairs.values())  # every pair has what its source has
    lag = {r["server"]: r["seconds_behind_source"] for r in read_arrow(str(wh), "channels", "run1").to_pylist()}
    assert {k: r["seconds_behind_source"] for k, r in pairs.items()} == {k: lag[k] for k in pairs}
    assert pairs["r5"]["seconds_behind_source"] == 12
    assert sorted((r["server"], r["status"]) for r in read_arrow(str(wh), "report_servers", "run1").to_pylist()) == [
        ("r1", "ok"), ("r2", "ok"), ("r3", "failed"), ("r4", "ok"), ("r5", "ok"), ("src", "ok")]
    (orders,) = read_arrow(str(wh), "report_clusters", "run1").to_pylist()
    loud = [f for f in first.findings() if f["status"] == "open" and not f["silenced"]]
    assert {k: orders[k] for k in ("cluster", "servers", "failed", "pairs", "critical", "silenced")} == {
        "cluster": "orders", "servers": 6, "failed": 1, "pairs": 4,
        "critical": sum(f["severity"] == "critical" for f in loud), "silenced": 1}

    write_run(spark, wh, ("run2", T2), repaired=True)
    second = audit_run(spark, cfg, run_id="run2")   # the silence expired on the 21st
    got = by_check(second.findings())
    assert second.previous_run_id == "run1"
    assert got[("errant_transactions", "r1")]["status"] == "resolved"
    assert got[("collection_failed", "r3")]["status"] == "resolved"
    unresolved = got[("source_unresolved", "r4")]
    assert (unresolved["status"], unresolved["silenced"], unresolved["first_seen"]) == ("open", False, T1.date())
    assert {(e["check_id"], e["event"]) for e in second.alerts()} == {
        ("errant_transactions", "resolved"), ("collection_failed", "resolved"), ("source_unresolved", "new"),
        ("failover_candidate_unsafe", "resolved")}
    assert second.exit_code == 0   # only a warning is open, fail_on=critical
    assert [s.id for s in second.expired_silences] and json.loads(second.summary["expired_silences"])[0]["reason"] \
        == "known, until the 21st"

    # what landed in Delta
    findings = read_arrow(str(wh), "findings", "run2").to_pylist()
    assert sorted((r["check_id"], r["status"]) for r in findings if r["severity"] != "info") == [
        ("collection_failed", "resolved"), ("errant_transactions", "resolved"),
        ("failover_candidate_unsafe", "resolved"), ("source_unresolved", "open")]
    readiness = read_arrow(str(wh), "failover_readiness", "run2").to_pylist()
    assert {r["candidate"] for r in readiness} == {"r1", "r2", "r3", "r5"}
    # r2 has not received src's empty transactions for r1's GTIDs yet (its receiver runs):
    # promoting it is safe once it has applied them
    assert {r["verdict"] for r in readiness if r["candidate"] == "r2"} == {"safe_after_catch_up"}
    summary = read_arrow(str(wh), "run_summary").to_pylist()
    assert sorted((r["run_id"], r["exit_code"], r["servers_failed"]) for r in summary) == [("run1", 2, 1), ("run2", 0, 0)]
    registry = {r["server_uuid"]: (r["server"], r["first_seen"], r["last_seen"])
                for r in read_arrow(str(wh), "uuid_registry").to_pylist()}
    assert registry[R3] == ("r3", T2.date(), T2.date()) and registry[R1] == ("r1", T1.date(), T2.date())
    lines = (wh / "_alert_feed" / "2026-11-22" / "run2.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["event"] for x in lines) == ["new", "resolved", "resolved", "resolved"]
    # a VACUUM of any table (even one keeping nothing) would not touch the feed
    from deltalake import DeltaTable

    for table in ("alerts", "findings"):
        doomed = DeltaTable(str(wh / table)).vacuum(retention_hours=0, dry_run=True, full=True,
                                                    enforce_retention_duration=False)
        assert not [f for f in doomed if f.endswith(".jsonl")], doomed

    # auditing run2 again leaves one set of rows for it (idempotent), with the same findings
    def run1_rows():
        return sorted(read_arrow(str(wh), "findings", "run1").to_pylist(), key=lambda r: r["finding_key"])

    run1_before = run1_rows()
    again = audit_run(spark, cfg, run_id="run2")
    assert again.previous_run_id == "run1"
    keys = [r["finding_key"] for r in read_arrow(str(wh), "findings", "run2").to_pylist()]
    assert len(keys) == len(set(keys)) == len(again.findings())
    assert run1_rows() == run1_before  # the other run's rows are untouched
    assert sorted((r["finding_key"], r["status"]) for r in again.findings()) == \
        sorted((r["finding_key"], r["status"]) for r in findings)


def test_no_collected_run_is_a_clear_error(spark, tmp_path):
    """Auditing an empty warehouse says to run collect first."""
    with pytest.raises(AuditError, match="run collect first"):
        audit_run(spark, config(tmp_path / "empty", None))


def test_bad_audit_section_names_the_key():
    """A typo in the audit section is refused, naming the key."""
    with pytest.raises(ConfigError, match="audit.fail_on"):
        load_audit_settings({"fail_on": "sometimes"}, "conf/x.yaml")


def test_explain_job_check_and_unknown():
    """explain prints a job check's meaning and refuses an unknown id, listing known ones."""
    assert "blind" in explain_text("collection_failed")
    with pytest.raises(AuditError, match="known checks: .*source_unresolved"):
        explain_text("no_such_check")


def test_a_failed_audit_releases_what_it_cached(spark, tmp_path, monkeypatch):
    """An audit that raises part-way (here: while it groups the channels into replication groups,
    after the registry, snapshots and pair outputs are cached) leaves nothing in Spark's cache: a
    long-lived session (a notebook, `run`'s maintenance after a failure) keeps no stale run."""
    import jobs.audit

    def broken(channels):
        raise RuntimeError("grouping failed")

    wh = tmp_path / "wh"
    write_run(spark, wh, ("run1", T1), repaired=False)
    spark.catalog.clearCache()
    monkeypatch.setattr(jobs.audit, "replication_group_frame", broken)
    with pytest.raises(RuntimeError, match="grouping failed"):
        audit_run(spark, config(wh, None), run_id="run1")
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()
