"""Issue 18's failover-model defects, each on hand-built snapshots (expected sets written by hand).

Every test here failed on the model before the fix it names (checked against the previous commit);
the real-server counterpart of each is in tests/sandbox/test_failover_differential.py.
"""
from __future__ import annotations

import datetime as dt

from gtid_core import BinaryLog, ChannelSnapshot, GtidSet, MySQLVersion, ServerSnapshot, Severity
from gtid_core.failover import (
    FailoverReplica,
    SiblingResult,
    Verdict,
    failover_findings,
    failover_rows,
    model_failover,
)
from gtid_core.reconnect import ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
from schemas import get_table
from tests.core.test_failover import cand, sib, verdicts

S = "aaaaaaaa-0000-4000-8000-000000000001"
R1 = "bbbbbbbb-0000-4000-8000-000000000002"
R2 = "cccccccc-0000-4000-8000-000000000003"
R3 = "eeeeeeee-0000-4000-8000-000000000005"
X = "dddddddd-0000-4000-8000-000000000004"
V97 = MySQLVersion.parse("9.7.4-2")
T0 = dt.datetime(2026, 11, 25, 2, 0, 0, tzinfo=dt.timezone.utc)
REPLICAS_READ = T0                              # replicas first ...
SOURCE_READ = T0 + dt.timedelta(seconds=5)      # ... the source last, as the nightly run plans it


def g(text: str) -> GtidSet:
    return GtidSet.parse(text)


def server(name, uuid, server_id, executed, purged="", *, read_at=REPLICAS_READ, **kw) -> ServerSnapshot:
    defaults = dict(gtid_mode="ON", log_bin=True, log_replica_updates=True, read_only=True, super_read_only=True,
                    binary_logs=(BinaryLog("binlog.000002", previous_gtids=g(purged)),), version=V97)
    defaults.update(kw)
    return ServerSnapshot(name=name, server_uuid=uuid, server_id=server_id, gtid_executed=g(executed),
                          gtid_purged=g(purged), read_at=read_at, read_started_at=read_at, **defaults)


def replica(name, uuid, server_id, executed, retrieved=None, *, purged="", io="YES", sql="YES", io_errno=0,
            sql_errno=0, other=None, read_at=REPLICAS_READ, **kw) -> FailoverReplica:
    channel = ChannelSnapshot(
        channel_name="", source_uuid=S, io_running=io, sql_running=sql, auto_position=True,
        retrieved_gtid_set=g(executed if retrieved is None else retrieved), last_io_errno=io_errno,
        last_sql_errno=sql_errno, last_sql_error="Could not execute Write_rows event: Duplicate entry" if sql_errno
        else None, read_at=read_at)
    return FailoverReplica(server(name, uuid, server_id, executed, purged, read_at=read_at, **kw), channel,
                           other_channels_gtids=g(other) if other else None)


def source(executed, purged="", *, read_at=SOURCE_READ) -> ServerSnapshot:
    return server("s", S, 1, executed, purged, read_only=False, super_read_only=False, read_at=read_at)


def by_check(findings):
    return {(f.check_id, f.server): f for f in findings}


# 1 ---------------------------------------------------------------------------------------------

def test_ranking_puts_the_candidate_that_loses_150000_transactions_last():
    """A replica stopped 150,000 transactions behind ranks below replicas that spread one errant GTID."""
    model = model_failover(source(f"{S}:1-150010"), [
        replica("r1", R1, 2, f"{S}:1-10", io="NO"),
        replica("r2", R2, 3, f"{S}:1-150010,{R2}:1"),
        replica("r3", R3, 4, f"{S}:1-150010,{R3}:1"),
    ])
    assert [c.candidate for c in model.candidates] == ["r2", "r3", "r1"]
    assert cand(model, "r1").cost.lost == 150000 and cand(model, "r2").cost.spread == 1
    (no_safe,) = [f for f in failover_findings(model) if f.check_id == "no_safe_failover_candidate"]
    assert "the least bad choice is r2" in no_safe.detail and "spreads 1 GTID(s)" in no_safe.detail
    assert no_safe.evidence["least_bad"] == "r2"


# 2 ---------------------------------------------------------------------------------------------

def test_sibling_the_source_already_refuses_counts_against_no_candidate():
    """A DR replica behind its source's purge horizon is its own finding: r1 and r2 stay safe."""
    model = model_failover(source(f"{S}:1-300", f"{S}:1-100"), [
        replica("r1", R1, 2, f"{S}:1-300", purged=f"{S}:1-100"),
        replica("r2", R2, 3, f"{S}:1-300", purged=f"{S}:1-100"),
        replica("dr", R3, 4, f"{S}:1-50", io="NO", io_errno=13114),
    ])
    assert verdicts(model) == {"r1": "safe", "r2": "safe", "dr": "loses_transactions"}
    dr_seen_by_r1 = sib(cand(model, "r1"), "dr")
    assert dr_seen_by_r1.result is SiblingResult.REFUSED and dr_seen_by_r1.already_refused
    assert dr_seen_by_r1.refused_missing == g(f"{S}:51-100")
    findings = by_check(failover_findings(model))
    assert set(findings) == {("failover_candidate_unsafe", "dr")}
    # dr's own problem (its receiver error) is the root cause: the readiness finding restates it
    assert findings["failover_candidate_unsafe", "dr"].severity is Severity.INFO
    assert "replication_receiver_error on dr" in findings["failover_candidate_unsafe", "dr"].evidence["caused_by"]


# 3 ---------------------------------------------------------------------------------------------

def _three_without_log_replica_updates(lags):
    """Three log_replica_updates=OFF replicas with running receivers; their purged = what they applied."""
    out = []
    for (name, uuid, sid), last in zip([("r1", R1, 2), ("r2", R2, 3), ("r3", R3, 4)], lags):
        out.append(replica(name, uuid, sid, f"{S}:1-{last}", purged=f"{S}:1-{last}", log_replica_updates=False))
    return out


def test_log_replica_updates_off_verdict_does_not_depend_on_read_time_lag():
    """Every log_replica_updates=OFF candidate refuses siblings, stated once, whichever lags at read time."""
    for lags in ([10, 9, 8], [8, 9, 10], [10, 10, 10]):
        model = model_failover(source(f"{S}:1-10"), _three_without_log_replica_updates(lags))
        assert verdicts(model) == {"r1": "refuses_siblings", "r2": "refuses_siblings", "r3": "refuses_siblings"}, lags
        for c in model.candidates:
            assert sum("log_replica_updates is OFF" in r for r in c.reasons) == 1


# 4 ---------------------------------------------------------------------------------------------

def test_delayed_sibling_backlog_does_not_survive_the_repoint():
    """A delayed sibling announces only gtid_executed after CHANGE REPLICATION SOURCE: repointed as it is, r1, which
    purged S:1-90, refuses it; the v1 model counted its relay backlog as announced and called r1 safe outright.
    Since v3, r1 is safe only once d has applied its relay log before the repoint (d streams then, lacking nothing),
    which ranks it with d, a catch-up condition both share, the up-to-date r1 first."""
    model = model_failover(source(f"{S}:1-100"), [
        replica("r1", R1, 2, f"{S}:1-100", purged=f"{S}:1-90"),
        replica("d", R2, 3, f"{S}:1-50", f"{S}:1-100"),          # SOURCE_DELAY: retrieved, not applied
    ])
    r1 = cand(model, "r1")
    d = sib(r1, "d")
    assert d.sibling_set == g(f"{S}:1-50")
    assert (d.result, d.refusal, d.needs_relay_log_applied) == (SiblingResult.STREAMS, None, g(f"{S}:51-90"))
    assert ER_MASTER_HAS_PURGED_REQUIRED_GTIDS in d.rule and "once its relay log is applied" in d.rule
    assert r1.verdict is Verdict.SAFE_AFTER_CATCH_UP and r1.reasons[0].startswith("d must first apply its relay log")
    assert cand(model, "d").verdict is Verdict.SAFE_AFTER_CATCH_UP
    assert [c.candidate for c in model.candidates] == ["r1", "d"]


def test_relay_backlog_that_the_candidate_lacks_is_thrown_away_and_counted_lost():
    """A sibling's backlog the candidate will never have is discarded by the repoint: lost, not kept."""
    model = model_failover(source(f"{S}:1-12"), [
        replica("r1", R1, 2, f"{S}:1-10", io="NO"),
        replica("d", R2, 3, f"{S}:1-8", f"{S}:1-12"),
    ])
    d = sib(cand(model, "r1"), "d")
    assert (d.lost, d.discarded) == (GtidSet.EMPTY, g(f"{S}:11-12"))
    assert cand(model, "r1").lost == g(f"{S}:11-12")


# 5 ---------------------------------------------------------------------------------------------

def test_source_read_before_its_replicas_gives_no_critical():
    """The source's own new commits look errant on replicas read after it: unconfirmed, never critical."""
    early = T0 - dt.timedelta(seconds=30)
    model = model_failover(source(f"{S}:1-10", read_at=early), [
        replica("r1", R1, 2, f"{S}:1-12"), replica("r2", R2, 3, f"{S}:1-12")])
    findings = failover_findings(model)
    assert all(f.severity is not Severity.CRITICAL for f in findings), [(f.check_id, f.severity) for f in findings]
    assert all(f.title.startswith("Unconfirmed") for f in findings)
    assert all(c.unconfirmed and c.errant_confirmed is False for c in model.candidates)


def test_replicas_read_first_confirm_the_errant_set():
    """With the planned order (replicas, then source) the same errant set is a confirmed positive."""
    model = model_failover(source(f"{S}:1-10"), [replica("r1", R1, 2, f"{S}:1-10,{R1}:1"),
                                                  replica("r2", R2, 3, f"{S}:1-10,{R2}:1")])
    (no_safe,) = [f for f in failover_findings(model) if f.check_id == "no_safe_failover_candidate"]
    assert no_safe.title.startswith("s:") and not cand(model, "r1").unconfirmed


# 6 ---------------------------------------------------------------------------------------------

def test_multi_source_candidate_would_stream_its_other_channels():
    """A candidate with a second channel spreads that channel's GTIDs to siblings and the old source."""
    model = model_failover(source(f"{S}:1-10"), [
        replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10,{X}:1-5", other=f"{X}:1-5")])
    r2 = cand(model, "r2")
    assert r2.verdict is Verdict.SPREADS_OTHER_CHANNELS
    assert sib(r2, "r1").other_channels == g(f"{X}:1-5") and sib(r2, "s").other_channels == g(f"{X}:1-5")
    assert [c.candidate for c in model.candidates] == ["r1", "r2"]


def test_lone_multi_source_replica_is_a_warning_not_a_page():
    """An aggregator that is its source's only replica only spreads GTIDs: no_safe is a warning."""
    model = model_failover(source(f"{S}:1-10"), [replica("agg", R1, 2, f"{S}:1-10,{X}:1-5", other=f"{X}:1-5")])
    found = by_check(failover_findings(model))
    assert {k: f.severity for k, f in found.items()} == {
        ("failover_candidate_unsafe", "agg"): Severity.WARNING, ("no_safe_failover_candidate", "s"): Severity.WARNING}
    assert "it spreads 5 GTID(s)" in found["no_safe_failover_candidate", "s"].detail


# 7 ---------------------------------------------------------------------------------------------

def test_applier_stopped_on_an_error_is_not_safe_after_catch_up():
    """An applier failed on 1062 cannot apply its relay log: the candidate loses what it retrieved."""
    model = model_failover(source(f"{S}:1-10"), [
        replica("r1", R1, 2, f"{S}:1-8", f"{S}:1-10", sql="NO", sql_errno=1062)])
    r1 = cand(model, "r1")
    assert r1.verdict is Verdict.LOSES_TRANSACTIONS and r1.promoted_gtid_executed == g(f"{S}:1-8")
    assert sib(r1, "s").lost == g(f"{S}:9-10")
    findings = by_check(failover_findings(model))
    assert ("no_safe_failover_candidate", "s") in findings
    # root cause first: both readiness findings name the applier error and do not alarm again
    for f in findings.values():
        assert "replication_applier_error on r1" in f.evidence["caused_by"] and f.severity is Severity.INFO


def test_applier_stopped_without_error_stays_safe_after_catch_up():
    """A stopped applier with no error is started by the promotion: safe after catch-up."""
    model = model_failover(source(f"{S}:1-10"), [replica("r1", R1, 2, f"{S}:1-8", f"{S}:1-10", sql="NO")])
    assert verdicts(model) == {"r1": "safe_after_catch_up"}


# root cause first, rows ------------------------------------------------------------------------

def test_only_replica_already_broken_names_the_receiver_error():
    """A source whose only replica's receiver failed gets one alarm: no_safe names the receiver error."""
    model = model_failover(source(f"{S}:1-10"), [replica("r1", R1, 2, f"{S}:1-8", io="NO", io_errno=2003)])
    (no_safe,) = [f for f in failover_findings(model) if f.check_id == "no_safe_failover_candidate"]
    assert no_safe.severity is Severity.INFO and no_safe.evidence["caused_by"] == "replication_receiver_error on r1"
    assert "follows from other findings" in no_safe.detail


def test_rows_carry_cost_and_new_sets_and_fit_the_schema():
    """failover_readiness rows hold the cost, discarded and other-channel sets, and pass the schema."""
    model = model_failover(source(f"{S}:1-12"), [
        replica("r1", R1, 2, f"{S}:1-10", io="NO"), replica("d", R2, 3, f"{S}:1-8", f"{S}:1-12")])
    rows = failover_rows(model, run_id="r", run_date=dt.date(2026, 11, 25))
    for row in rows:
        get_table("failover_readiness").check_row(row)
    (row,) = [r for r in rows if r["candidate"] == "r1" and r["sibling"] == "d"]
    assert (row["discarded_gtid_set"], row["cost_lost_count"]) == (f"{S}:11-12", 2)


def test_only_replica_stopped_by_hand_keeps_the_critical_and_names_the_cause():
    """A receiver stopped by hand is only a warning: no_safe stays critical, naming replication_stopped."""
    model = model_failover(source(f"{S}:1-10"), [replica("r1", R1, 2, f"{S}:1-8", io="NO")])
    (no_safe,) = [f for f in failover_findings(model) if f.check_id == "no_safe_failover_candidate"]
    assert no_safe.severity is Severity.CRITICAL and no_safe.evidence["caused_by"] == "replication_stopped on r1"
    assert "Fix first: replication_stopped on r1" in no_safe.detail


def test_only_replica_behind_the_purge_horizon_is_one_alarm():
    """The only replica, stopped, lacks what its source purged: its critical source_purged_required_gtids
    is the alarm; no_safe is info and names both causes."""
    model = model_failover(source(f"{S}:1-10", f"{S}:1-6"), [replica("r1", R1, 2, f"{S}:1-4", io="NO")])
    (no_safe,) = [f for f in failover_findings(model) if f.check_id == "no_safe_failover_candidate"]
    assert no_safe.severity is Severity.INFO
    assert no_safe.evidence["caused_by"] == "source_purged_required_gtids on r1, replication_stopped on r1"


# cycles through multi-source replicas (found by the differential run, docs/failover.md) -------

def test_other_channel_gtids_the_source_executed_are_not_spread():
    """s replicates from the multi-source r2 (a cycle): x's GTIDs in s are s's history, so r1 catching
    up on them from r2 is no spread (differential seed 1064)."""
    model = model_failover(source(f"{S}:1-10,{X}:1-4"), [
        replica("r1", R1, 2, f"{S}:1-10,{X}:1-3", io="NO"),
        replica("r2", R2, 3, f"{S}:1-10,{X}:1-4", other=f"{X}:1-4")])
    r2 = cand(model, "r2")
    assert sib(r2, "r1").other_channels == GtidSet.EMPTY and r2.verdict is Verdict.SAFE


def test_sibling_other_channel_gtids_the_source_executed_are_lost_when_the_candidate_lacks_them():
    """s replicates from the multi-source r1 (a cycle); the stopped r2 lacks x:4, which r1 and s have:
    promoted, r2 never gets it, and r1 keeps it (differential seeds 4, 571, 1216, 5005)."""
    model = model_failover(source(f"{S}:1-10,{X}:1-4"), [
        replica("r1", R1, 2, f"{S}:1-10,{X}:1-4", other=f"{X}:1-4"),
        replica("r2", R2, 3, f"{S}:1-10,{X}:1-3", io="NO")])
    r2 = cand(model, "r2")
    assert sib(r2, "r1").lost == g(f"{X}:4") and sib(r2, "s").lost == g(f"{X}:4")


def test_a_finding_that_follows_from_one_cause_or_two_says_so_in_number():
    """'This follows from X: fix that first', and with two causes 'fix those first' (a fresh-user trial
    read 'errant_transactions on billing-r1, replication_stopped on billing-r1: fix that first')."""
    errant = "aaaaaaaa-1111-4000-8000-000000000009"
    for executed, retrieved, tail in (
            (f"{S}:1-8", f"{S}:1-10", "This follows from replication_applier_error on r1: fix that first."),
            (f"{S}:1-8,{errant}:1", f"{S}:1-10,{errant}:1",
             "This follows from replication_applier_error on r1, errant_transactions on r1: fix those first.")):
        model = model_failover(source(f"{S}:1-10"), [replica("r1", R1, 2, executed, retrieved, sql="NO", sql_errno=1062),
                                                     replica("r2", R2, 3, f"{S}:1-10")])
        (unsafe,) = [f for f in failover_findings(model) if f.check_id == "failover_candidate_unsafe"]
        assert unsafe.detail.endswith(tail)
