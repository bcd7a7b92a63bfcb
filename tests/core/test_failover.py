"""The failover-readiness model on hand-built snapshots: every verdict, versions, unknown inputs.

Expected sets are written out by hand from the scenario each row describes (a few GNOs of three
UUIDs), never recomputed from the model's own inputs.
"""
from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

import gtid_core.failover as fo
from gtid_core import BinaryLog, ChannelSnapshot, GtidSet, MySQLVersion, ServerSnapshot, Severity
from gtid_core.failover import (
    EQUAL_SERVER_ID,
    EQUAL_SERVER_UUID,
    FAILOVER_CHECKS,
    FailoverReplica,
    SiblingResult,
    Verdict,
    failover_findings,
    failover_rows,
    model_failover,
    split_errant,
)
from gtid_core.reconnect import ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER

S = "aaaaaaaa-0000-4000-8000-000000000001"
R1 = "bbbbbbbb-0000-4000-8000-000000000002"
R2 = "cccccccc-0000-4000-8000-000000000003"
X = "dddddddd-0000-4000-8000-000000000004"   # another source of a multi-source replica
V97 = MySQLVersion.parse("9.7.4-2")


def g(text: str) -> GtidSet:
    return GtidSet.parse(text)


def server(name, uuid, server_id, executed, purged="", *, version=V97, **kw) -> ServerSnapshot:
    """A 9.7 GTID server with one binary log whose Previous_gtids is its gtid_purged."""
    defaults = dict(gtid_mode="ON", log_bin=True, log_replica_updates=True, read_only=True, super_read_only=True,
                    binary_logs=(BinaryLog("binlog.000002", previous_gtids=g(purged) if purged is not None else None),))
    defaults.update(kw)
    return ServerSnapshot(name=name, server_uuid=uuid, server_id=server_id, version=version,
                          gtid_executed=g(executed) if executed is not None else None,
                          gtid_purged=g(purged) if purged is not None else None, **defaults)


def channel(retrieved, *, io="YES", sql="YES", errno=0) -> ChannelSnapshot:
    return ChannelSnapshot(channel_name="", source_uuid=S, io_running=io, sql_running=sql, auto_position=True,
                           retrieved_gtid_set=g(retrieved) if retrieved is not None else None, last_io_errno=errno,
                           last_sql_errno=0)


def replica(name, uuid, server_id, executed, retrieved=None, *, purged="", io="YES", errno=0, other=None,
            **kw) -> FailoverReplica:
    retrieved = executed if retrieved is None else retrieved
    return FailoverReplica(server(name, uuid, server_id, executed, purged, **kw),
                           channel(retrieved, io=io, errno=errno),
                           other_channels_gtids=g(other) if other else None)


def source(executed=f"{S}:1-10", purged="", **kw) -> ServerSnapshot:
    return server("s", S, 1, executed, purged, read_only=False, super_read_only=False, **kw)


def verdicts(model) -> dict[str, str]:
    return {c.candidate: c.verdict.value for c in model.candidates}


def cand(model, name):
    (c,) = [c for c in model.candidates if c.candidate == name]
    return c


def sib(c, name):
    (s,) = [s for s in c.siblings if s.sibling == name]
    return s


def check_ids(model) -> list[tuple[str, str]]:
    return sorted((f.check_id, f.server) for f in failover_findings(model))


# --------------------------------------------------------------------------------------------
# verdicts

CASES = [
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "safe", "r2": "safe"}, [], id="caught_up_fleet_is_safe"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-8", f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "safe_after_catch_up", "r2": "safe"}, [], id="applier_behind_is_safe_after_catch_up"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-8"), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "safe_after_catch_up", "r2": "safe"}, [], id="running_receiver_lag_is_not_a_loss"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-8", io="NO"), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "loses_transactions", "r2": "safe"}, [("failover_candidate_unsafe", "r1")],
        id="stopped_receiver_loses"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-8", io="CONNECTING", errno=2003),
                   replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "loses_transactions", "r2": "safe"}, [("failover_candidate_unsafe", "r1")],
        id="failing_receiver_loses"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-8", errno=2013), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "safe_after_catch_up", "r2": "safe"}, [], id="running_receiver_with_an_old_error_is_not_a_loss"),
    pytest.param(
        source(purged=f"{S}:1-6"),
        [replica("r1", R1, 2, f"{S}:1-4"), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "loses_transactions", "r2": "safe"}, [("failover_candidate_unsafe", "r1")],
        id="running_receiver_cannot_fetch_what_source_purged"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10,{R1}:1"), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "propagates_errant", "r2": "safe"}, [("failover_candidate_unsafe", "r1")],
        id="salvageable_errant_propagates"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10,{R1}:1", f"{S}:1-10", purged=f"{S}:1-3,{R1}:1"),
                   replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "refuses_siblings", "r2": "safe"}, [("failover_candidate_unsafe", "r1")],
        id="lost_errant_refuses_siblings"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-10", log_replica_updates=False),
                   replica("r2", R2, 3, f"{S}:1-8", io="NO")],
        {"r1": "refuses_siblings", "r2": "loses_transactions"},
        [("failover_candidate_unsafe", "r1"), ("failover_candidate_unsafe", "r2"), ("no_safe_failover_candidate", "s")],
        id="log_replica_updates_off_refuses_lagging_sibling"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10", log_bin=False, binary_logs=()),
                   replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "cannot_serve", "r2": "safe"}, [("failover_candidate_unsafe", "r1")], id="log_bin_off_cannot_serve"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10", gtid_mode="ON_PERMISSIVE"), replica("r2", R2, 3, f"{S}:1-10")],
        {"r1": "cannot_serve", "r2": "safe"}, [("failover_candidate_unsafe", "r1")],
        id="gtid_mode_not_on_cannot_serve"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R1, 3, f"{S}:1-10")],
        {"r1": "refuses_siblings", "r2": "refuses_siblings"},
        [("failover_candidate_unsafe", "r1"), ("failover_candidate_unsafe", "r2"), ("no_safe_failover_candidate", "s")],
        id="equal_server_uuid_refused"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R2, 2, f"{S}:1-10")],
        {"r1": "refuses_siblings", "r2": "refuses_siblings"},
        [("failover_candidate_unsafe", "r1"), ("failover_candidate_unsafe", "r2"), ("no_safe_failover_candidate", "s")],
        id="equal_server_id_refused"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10,{R2}:1-2")],
        {"r1": "safe", "r2": "propagates_errant"}, [("failover_candidate_unsafe", "r2")],
        id="sibling_errant_is_not_a_loss_for_the_candidate_5_7_plus"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10", version=MySQLVersion.parse("5.6.40-log")),
                   replica("r2", R2, 3, f"{S}:1-10,{R2}:1-2", version=MySQLVersion.parse("5.6.40-log"))],
        {"r1": "safe", "r2": "propagates_errant"}, [("failover_candidate_unsafe", "r2")],
        id="sibling_errant_of_its_own_uuid_streams_to_a_5_6_candidate"),
    pytest.param(
        source(purged=f"{S}:1-5"),
        [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-5"), replica("r2", R2, 3, f"{S}:6-10")],
        {"r1": "safe", "r2": "loses_transactions"},
        [("failover_candidate_unsafe", "r2")],
        id="purged_gap_refused_from_5_6_22_is_the_siblings_own_finding"),
    pytest.param(
        source(purged=f"{S}:1-5"),
        [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-5", version=MySQLVersion.parse("5.6.20"),
                           binary_logs=(BinaryLog("b.000001", previous_gtids=GtidSet.EMPTY),)),
                   replica("r2", R2, 3, f"{S}:6-10")],
        {"r1": "loses_transactions", "r2": "loses_transactions"},
        [("failover_candidate_unsafe", "r1"), ("failover_candidate_unsafe", "r2"), ("no_safe_failover_candidate", "s")],
        id="purged_gap_silently_skipped_before_5_6_22"),
    pytest.param(
        source(), [replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10,{X}:1-5", other=f"{X}:1-5")],
        {"r1": "safe", "r2": "spreads_other_channels"}, [("failover_candidate_unsafe", "r2")],
        id="multi_source_other_channel_is_not_errant_but_spreads"),
]


@pytest.mark.parametrize("src, replicas, expected, findings", CASES)
def test_verdicts(src, replicas, expected, findings):
    """Each scenario gives each candidate the verdict a DBA expects, and exactly the findings listed."""
    model = model_failover(src, replicas)
    assert verdicts(model) == expected
    assert check_ids(model) == sorted(findings)


def test_stopped_receiver_sets_name_lost_transactions_per_sibling():
    """A stopped, lagging r1: r2 and s both hold S:9-10 that r1 will never get; r2's loses nothing."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8", io="NO"),
                                      replica("r2", R2, 3, f"{S}:1-10")])
    r1 = cand(model, "r1")
    assert sib(r1, "r2").lost == g(f"{S}:9-10") and sib(r1, "s").lost == g(f"{S}:9-10")
    assert sib(r1, "r2").result is SiblingResult.STREAMS
    r2 = cand(model, "r2")
    assert [c.candidate for c in model.candidates] == ["r2", "r1"] and r2.rank == 1
    assert sib(r2, "r1").lost == GtidSet.EMPTY and sib(r2, "r1").catch_up == GtidSet.EMPTY


def test_running_receiver_lag_is_in_flight():
    """The same lag with a running receiver is in_flight (still coming from s), not lost."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8"), replica("r2", R2, 3, f"{S}:1-10")])
    s = sib(cand(model, "r1"), "r2")
    assert (s.lost, s.in_flight) == (GtidSet.EMPTY, g(f"{S}:9-10"))


def test_relay_log_not_applied_is_catch_up_not_loss():
    """Retrieved-but-unapplied transactions are catch_up for the sibling that has them, never lost."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8", f"{S}:1-10", io="NO"),
                                      replica("r2", R2, 3, f"{S}:1-10")])
    r1 = cand(model, "r1")
    assert r1.verdict is Verdict.SAFE_AFTER_CATCH_UP
    assert r1.pending_relay == g(f"{S}:9-10")
    assert sib(r1, "r2").catch_up == g(f"{S}:9-10") and sib(r1, "r2").lost == GtidSet.EMPTY


def test_lost_errant_split_and_refusal_of_every_sibling():
    """An errant GTID purged from r1's binary logs is 'lost': r2 and s are refused with what they lack."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-10,{R1}:1-2", f"{S}:1-10", purged=f"{R1}:1"),
                                      replica("r2", R2, 3, f"{S}:1-10")])
    r1 = cand(model, "r1")
    assert (r1.errant, r1.errant_salvageable, r1.errant_lost) == (g(f"{R1}:1-2"), g(f"{R1}:2"), g(f"{R1}:1"))
    for name in ("r2", "s"):
        s = sib(r1, name)
        assert s.result is SiblingResult.REFUSED and s.refusal == ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
        assert s.refused_missing == g(f"{R1}:1")
        assert (s.errant_salvageable, s.errant_lost) == (g(f"{R1}:2"), g(f"{R1}:1"))


def test_log_replica_updates_off_pending_relay_becomes_purged():
    """With log_replica_updates OFF, what r1 still has to apply joins its gtid_purged: r2 lacking it is refused."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8", f"{S}:1-10", purged=f"{S}:1-8",
                                              log_replica_updates=False),
                                      replica("r2", R2, 3, f"{S}:1-9")])
    s = sib(cand(model, "r1"), "r2")
    assert s.result is SiblingResult.REFUSED and s.refused_missing == g(f"{S}:10")
    assert sib(cand(model, "r1"), "s").result is SiblingResult.STREAMS


@pytest.mark.parametrize("uuid_r2, id_r2, refusal", [
    pytest.param(R1, 3, EQUAL_SERVER_UUID, id="uuid"),
    pytest.param(R2, 2, EQUAL_SERVER_ID, id="server_id"),
])
def test_equal_identity_refusal_names_the_error(uuid_r2, id_r2, refusal):
    """A sibling with the candidate's server_uuid or server_id is refused by its own receiver (13117)."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-10"), replica("r2", uuid_r2, id_r2, f"{S}:1-10")])
    assert sib(cand(model, "r1"), "r2").refusal == refusal
    assert sib(cand(model, "r1"), "s").result is SiblingResult.STREAMS


def test_sibling_with_gtids_of_the_candidates_uuid_is_refused_from_5_6_23_only():
    """r2 holds R1:11-12, GTIDs of r1's own uuid that r1 lacks (r1 was restored from an older backup).
    5.6.23+ and 5.7 compare the replica's GTIDs of the source's uuid (is_subset_for_sid): refused,
    offending = R1:11-12. 5.6.20 makes no such check: r2 streams, and will silently skip r1's next
    R1:11-12 as already executed; the foreign errant GTIDs of r2's own uuid never refuse."""
    def build(version):
        return model_failover(source(), [replica("r1", R1, 2, f"{S}:1-10,{R1}:1-10", version=version),
                                         replica("r2", R2, 3, f"{S}:1-10,{R1}:1-12,{R2}:1-2")])
    for version in ("5.6.23", "5.6.40", "5.7.44"):
        refused = sib(cand(build(MySQLVersion.parse(version)), "r1"), "r2")
        assert (refused.result, refused.refusal, refused.refused_missing) == (
            SiblingResult.REFUSED, ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER, g(f"{R1}:11-12")), version
    old = sib(cand(build(MySQLVersion.parse("5.6.20")), "r1"), "r2")
    assert old.result is SiblingResult.STREAMS and old.lost == GtidSet.EMPTY


# --------------------------------------------------------------------------------------------
# unknown inputs never become positives

UNKNOWN = [
    pytest.param([replica("r1", R1, 2, None, f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10")],
                 source(), id="candidate_gtid_executed_unknown"),
    pytest.param([replica("r1", R1, 2, f"{S}:1-8"), replica("r2", R2, 3, f"{S}:1-10")],
                 source(purged=None), id="source_gtid_purged_unknown_with_lag"),
    pytest.param([FailoverReplica(server("r1", R1, 2, f"{S}:1-8"),
                                  ChannelSnapshot(channel_name="", retrieved_gtid_set=g(f"{S}:1-8"))),
                  replica("r2", R2, 3, f"{S}:1-10")],
                 source(), id="receiver_state_unknown_with_lag"),
    pytest.param([replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10")],
                 source(executed=None), id="source_gtid_executed_unknown"),
    pytest.param([replica("r1", R1, 2, f"{S}:1-10", log_bin=None), replica("r2", R2, 3, f"{S}:1-10")],
                 source(), id="log_bin_unknown"),
]


@pytest.mark.parametrize("replicas, src", UNKNOWN)
def test_unknown_inputs_give_undetermined_and_no_finding(replicas, src):
    """A None set or setting makes the candidate undetermined; no finding is produced from it."""
    model = model_failover(src, replicas)
    assert cand(model, "r1").verdict is Verdict.UNDETERMINED
    assert [f for f in failover_findings(model) if f.server == "r1" or f.check_id == "no_safe_failover_candidate"] == []


def test_an_undetermined_candidate_keeps_no_safe_candidate_silent():
    """r2 is unsafe (stopped) and r1 unknown: no_safe_failover_candidate does not fire, r2's warning does."""
    model = model_failover(source(), [replica("r1", R1, 2, None, f"{S}:1-10"),
                                      replica("r2", R2, 3, f"{S}:1-8", io="NO")])
    assert check_ids(model) == [("failover_candidate_unsafe", "r2")]


def test_unknown_purged_with_known_errant_still_propagates():
    """r1's gtid_purged unknown: its errant set is known (propagates_errant) but the split is unknown (None)."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-10,{R1}:1", purged=None),
                                      replica("r2", R2, 3, f"{S}:1-10")])
    r1 = cand(model, "r1")
    assert r1.verdict is Verdict.PROPAGATES_ERRANT
    assert (r1.errant_salvageable, r1.errant_lost) == (None, None)


# --------------------------------------------------------------------------------------------
# split_errant, findings, rows, identities

@pytest.mark.parametrize("purged, errant, salvageable, lost", [
    pytest.param("", f"{R1}:1-3", f"{R1}:1-3", "", id="all_in_binary_logs"),
    pytest.param(f"{R1}:1-2,{S}:1-5", f"{R1}:1-3", f"{R1}:3", f"{R1}:1-2", id="partly_purged"),
    pytest.param(f"{R1}:1-9", f"{R1}:1-3", "", f"{R1}:1-3", id="all_purged"),
    pytest.param("", "", "", "", id="nothing_errant"),
])
def test_split_errant(purged, errant, salvageable, lost):
    """Errant GTIDs split into the part still in binary logs and the part only in gtid_purged."""
    r = server("r1", R1, 2, f"{S}:1-5,{R1}:1-9", purged)
    assert split_errant(r, g(errant)) == (g(salvageable), g(lost))


def test_split_errant_unknown_purged():
    """Without gtid_purged the split is unknown (None, None), never 'all salvageable'."""
    assert split_errant(server("r1", R1, 2, f"{R1}:1", None), g(f"{R1}:1")) == (None, None)


def test_unsafe_finding_carries_sets_ranking_and_salvage_steps():
    """The warning names the lost set, ranks the candidates and says what to salvage from where."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8", io="NO"), replica("r2", R2, 3, f"{S}:1-10")])
    (f,) = failover_findings(model)
    # its receiver was stopped by hand: replication_stopped is the alarm, this finding restates it
    assert (f.check_id, f.severity, f.server, f.source, f.channel) == (
        "failover_candidate_unsafe", Severity.INFO, "r1", "s", "")
    assert f.evidence["caused_by"] == "replication_stopped on r1"
    assert f.gtid_set == g(f"{S}:9-10") and f.gtid_count == 2
    assert "1. r2 (safe); 2. r1 (loses_transactions" in f.remediation
    assert "Salvage from r2" in f.remediation and f"GTID_SUBSET('{S}:9-10'" in f.remediation
    assert f.evidence["verdict"] == "loses_transactions" and f.evidence["lost"] == f"{S}:9-10"


def _remediation(model, candidate):
    (text,) = [f.remediation for f in failover_findings(model) if f.server == candidate]
    return text


def _on_orders(r: FailoverReplica) -> FailoverReplica:
    return dataclasses.replace(r, channel=dataclasses.replace(r.channel, channel_name="orders"))


R3 = "eeeeeeee-0000-4000-8000-000000000005"


def test_salvage_names_every_holder_of_the_same_transactions_once():
    """Replicas that can send the same transactions the candidate lacks make one salvage paragraph
    naming them all (any one is enough), one that holds them only in its relay log last, after
    the step that has it apply them; S, which still has them, is the alternative through the
    candidate's own channel (FOR CHANNEL when it is named)."""
    model = model_failover(source(), [_on_orders(replica("r1", R1, 2, f"{S}:1-8", io="NO")),
                                      replica("r2", R2, 3, f"{S}:1-10"), replica("r3", R3, 4, f"{S}:1-8", f"{S}:1-10")])
    steps = _remediation(model, "r1")
    assert steps.count("Salvage from") == 1
    assert f"Salvage from r2 or r3 (any one of them is enough): 2 transaction(s) r1 will never get ({S}:9-10)" in steps
    assert "e.g. replicate r1 from r2 with SOURCE_AUTO_POSITION=1" in steps
    assert "or, while s is up, START REPLICA FOR CHANNEL 'orders' on r1." in steps
    assert steps.index("r3 holds, only in its relay log, 2 transaction(s) r1 will never get") < steps.index("Salvage")


def test_salvage_steps_run_on_a_57_candidate_are_in_its_words():
    """The salvage steps run on the candidate: on 5.7 they say MASTER_AUTO_POSITION and START SLAVE ... FOR CHANNEL
    (gtid_core.syntax), and the relay-log step of r3 (9.7) stays in today's words."""
    r1 = _on_orders(replica("r1", R1, 2, f"{S}:1-8", io="NO", version=MySQLVersion.parse("5.7.44")))
    model = model_failover(source(f"{S}:1-12"), [r1, replica("r2", R2, 3, f"{S}:1-10"),
                                                 replica("r3", R3, 4, f"{S}:1-8", f"{S}:1-10")])
    steps = _remediation(model, "r1")
    assert "e.g. replicate r1 from r2 with MASTER_AUTO_POSITION=1" in steps
    assert "have r1 fetch them (START SLAVE FOR CHANNEL 'orders', fix what stops its receiver)" in steps
    assert "REPLICA FOR CHANNEL 'orders'" not in steps and "SOURCE_AUTO_POSITION" not in steps
    assert (f"then STOP REPLICA IO_THREAD; then START REPLICA SQL_THREAD; then wait until SELECT GTID_SUBSET('{S}:9-10', "
            "@@GLOBAL.gtid_executed) returns 1") in steps   # r3's, in today's words


def test_salvage_splits_overlapping_holdings_and_names_what_only_the_source_has():
    """Siblings at different positions: the one that has most sends its part, S alone the rest
    (while it is up); a replica is never named for a part it does not have."""
    model = model_failover(source(f"{S}:1-12"), [replica("r1", R1, 2, f"{S}:1-8", io="NO"),
                                                 replica("r2", R2, 3, f"{S}:1-10"), replica("r3", R3, 4, f"{S}:1-9")])
    steps = _remediation(model, "r1")
    assert f"Salvage from r2: 2 transaction(s) r1 will never get ({S}:9-10)" in steps
    assert steps.count("Salvage from") == 1 and "Salvage from r3" not in steps
    assert f"Only s can still send 2 transaction(s) r1 lacks ({S}:11-12): while s is up" in steps
    assert "lost" in steps.split("Only s can still send")[1]


def test_salvage_names_a_replica_with_errant_gtids_last_and_says_so():
    """A replica with its own errant GTIDs would send them too when the candidate replicates from
    it: it comes after one without, and the paragraph says what it would send."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8", io="NO"),
                                      replica("r2", R2, 3, f"{S}:1-10,{R2}:1"), replica("r3", R3, 4, f"{S}:1-10")])
    steps = _remediation(model, "r1")
    assert "Salvage from r3 or r2 (any one of them is enough)" in steps and "replicate r1 from r3" in steps
    assert f"r2 would also send its errant GTIDs ({R2}:1): prefer another" in steps


def test_salvage_from_the_source_waits_for_what_it_purged():
    """S purged some of what R lacks: R's reconnect to S is refused until R has those, so S's
    binary logs are the alternative only once R has them, never now."""
    model = model_failover(source(f"{S}:1-20", purged=f"{S}:1-10"), [replica("r1", R1, 2, f"{S}:1-5", io="NO")])
    steps = _remediation(model, "r1")
    assert (f"Only s can still send 10 transaction(s) r1 lacks ({S}:11-20): once r1 has the 5 s purged (below: "
            f"until then s refuses it, {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS}), while s is up") in steps
    assert f"5 transaction(s) r1 will never get ({S}:6-10): neither s nor its other replicas can send them" in steps


def test_salvage_never_names_binary_logs_that_no_longer_have_them():
    """What S purged and the only replica that has it purged too, or never logged: no server can
    send it, and the advice is a reprovision, never a replication from those servers."""
    for r2 in (replica("r2", R2, 3, f"{S}:1-10", purged=f"{S}:1-10"),
               replica("r2", R2, 3, f"{S}:1-10", log_replica_updates=False)):
        model = model_failover(source(purged=f"{S}:1-10"), [replica("r1", R1, 2, f"{S}:1-8"), r2])
        steps = _remediation(model, "r1")
        assert "Salvage from" not in steps and "START REPLICA on r1" not in steps, steps
        assert f"2 transaction(s) r1 will never get ({S}:9-10): neither s nor its other replicas can send them" in steps
        assert "reprovision r1" in steps


def test_errant_finding_gives_empty_transaction_sql_for_source_and_siblings():
    """Salvageable errant GTIDs: the remediation has the empty-transaction SQL, to run on s while it is up (r2 gets
    them from it), else on r2."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-10,{R1}:1"), replica("r2", R2, 3, f"{S}:1-10")])
    (f,) = failover_findings(model)
    assert f"SET GTID_NEXT='{R1}:1'; BEGIN; COMMIT;" in f.remediation
    assert ("commit empty transactions with these GTIDs on s while it is up, from which they replicate to every "
            "sibling (those that have them skip them); once it is gone, on r2 each; never on r1:") in f.remediation
    assert f.evidence["errant_salvageable"] == f"{R1}:1" and f.evidence["errant_lost"] == ""


def test_no_safe_candidate_is_critical_and_names_the_least_bad():
    """Every candidate unsafe: one critical finding on the source naming the best-ranked candidate."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-7", io="NO"), replica("r2", R2, 3, f"{S}:1-9", io="NO")])
    (crit,) = [f for f in failover_findings(model) if f.check_id == "no_safe_failover_candidate"]
    assert (crit.severity, crit.server, crit.source) == (Severity.CRITICAL, "s", None)
    assert "least bad choice is r2" in crit.detail
    assert crit.gtid_set == g(f"{S}:8-10")


def test_checks_registry_shape():
    """FAILOVER_CHECKS has the two checks, with the registry's fields and severities
    (duplicate_server_uuid is gtid_core.identity's, tests/core/test_identity.py)."""
    assert {k: v.default_severity for k, v in FAILOVER_CHECKS.items()} == {
        "no_safe_failover_candidate": Severity.CRITICAL, "failover_candidate_unsafe": Severity.WARNING}
    for info in FAILOVER_CHECKS.values():
        assert info.title and info.meaning and info.remediation and info.version == 2   # issue 18: ranked by cost, root cause first


def test_rows_of_two_candidates_with_siblings_that_matter_fit_the_schema():
    """Two candidates x (one replica sibling + the source) = 4 rows that pass the table's schema
    check: the rank-2 candidate's sibling is listed because it would lose transactions."""
    from schemas import get_table

    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8", io="NO"), replica("r2", R2, 3, f"{S}:1-10")])
    rows = failover_rows(model, run_id="run1", run_date=dt.date(2026, 11, 23), cluster="orders")
    table = get_table("failover_readiness")
    for row in rows:
        table.check_row(row)
    assert sorted((r["candidate"], r["sibling"], r["sibling_role"]) for r in rows) == [
        ("r1", "r2", "replica"), ("r1", "s", "source"), ("r2", "r1", "replica"), ("r2", "s", "source")]
    (row,) = [r for r in rows if (r["candidate"], r["sibling"]) == ("r1", "r2")]
    assert (row["verdict"], row["lost_gtid_set"], row["lost_count"], row["candidate_rank"]) == (
        "loses_transactions", f"{S}:9-10", 2, 2)


def _uuid(i: int) -> str:
    return f"{i:08x}-0000-4000-8000-{i:012x}"


def test_rows_list_every_sibling_of_the_preferred_candidate_and_of_the_others_only_those_that_matter():
    """A source with five healthy replicas (one a transaction behind, its receiver running) and
    one whose receiver stopped three behind: 16 rows instead of 6 x 6 = 36. The rank-1 candidate
    lists its six siblings; each other healthy candidate only the source (the lagging and the
    stopped replica stream from it, catching up); the stopped one, which would lose what its
    siblings have, lists all six. Each candidate's largest lost_count over its rows is the one
    over every sibling, and siblings_not_listed counts the rest."""
    from schemas import get_table

    healthy = [replica(f"r{i}", _uuid(i), 10 + i, f"{S}:1-10" if i != 3 else f"{S}:1-9") for i in range(1, 6)]
    stopped = replica("rs", _uuid(99), 99, f"{S}:1-7", io="NO")
    model = model_failover(source(), [*healthy, stopped])
    rows = failover_rows(model, run_id="run1", run_date=dt.date(2026, 11, 29), cluster="orders")
    table = get_table("failover_readiness")
    for row in rows:
        table.check_row(row)
    listed: dict[str, set[str]] = {}
    for r in rows:
        listed.setdefault(r["candidate"], set()).add(r["sibling"])
    first = model.candidates[0].candidate
    assert model.candidates[0].verdict.value == "safe" and first != "r3"
    everyone = {"s", "rs", *(r.name for r in healthy)}
    assert listed[first] == everyone - {first}
    assert listed["rs"] == everyone - {"rs"}
    for other in {"r1", "r2", "r3", "r4", "r5"} - {first}:
        assert listed[other] == {"s"}, other
    assert len(rows) == 16
    for c in model.candidates:
        mine = [r for r in rows if r["candidate"] == c.candidate]
        assert {r["siblings_not_listed"] for r in mine} == {len(c.siblings) - len(mine)}
        assert max(r["lost_count"] for r in mine) == max(s.lost.count() for s in c.siblings)
    assert {r["lost_gtid_set"] for r in rows if r["candidate"] == "rs" and r["sibling"] != "r3"} == {f"{S}:8-10"}


def test_a_sibling_with_a_problem_of_its_own_is_listed_for_every_candidate():
    """A sibling with its own errant GTID (not counted against the candidates) gets a row under
    every candidate, and so does an older sibling whose reconnect a version note qualifies."""
    replicas = [replica("r1", R1, 2, f"{S}:1-10"), replica("r2", R2, 3, f"{S}:1-10"),
                replica("r3", _uuid(3), 4, f"{S}:1-10"),
                replica("rx", _uuid(7), 8, f"{S}:1-10,{_uuid(7)}:1"),
                replica("rold", _uuid(9), 10, f"{S}:1-10", version=MySQLVersion.parse("8.0.40"))]
    model = model_failover(source(), replicas)
    rows = failover_rows(model)
    for c in model.candidates:
        mine = {r["sibling"] for r in rows if r["candidate"] == c.candidate}
        if c.candidate != "rx":
            assert "rx" in mine, c.candidate
        if c.candidate != "rold":
            assert sib(c, "rold").notes and "rold" in mine, c.candidate


def test_a_sibling_of_a_candidate_whose_receiver_state_is_unknown_is_listed():
    """A candidate behind its siblings whose receiver state was not read: what they have and it
    lacks may be in flight or lost (unknown), so those siblings are listed even below rank 1
    (and the candidate is undetermined), never counted as streaming."""
    unknown = FailoverReplica(server("rc", _uuid(5), 6, f"{S}:1-8", purged=""),
                              dataclasses.replace(channel(f"{S}:1-8"), io_running=None, receiver_service_state=None))
    model = model_failover(source(purged=f"{S}:1-2"), [replica("r1", R1, 2, f"{S}:1-10"),
                                                      replica("r2", R2, 3, f"{S}:1-10"), unknown])
    rc = cand(model, "rc")
    assert rc.rank > 1 and rc.verdict is Verdict.UNDETERMINED
    assert sib(rc, "r1").in_flight is None
    rows = [r for r in failover_rows(model) if r["candidate"] == "rc"]
    assert {r["sibling"] for r in rows} == {"r1", "r2", "s"}
    assert {r["siblings_not_listed"] for r in rows} == {0}


def test_rows_keep_unknown_as_null():
    """An unknown set is NULL in the row (not '' and not 0)."""
    model = model_failover(source(purged=None), [replica("r1", R1, 2, f"{S}:1-8"), replica("r2", R2, 3, f"{S}:1-10")])
    (row,) = [r for r in failover_rows(model) if (r["candidate"], r["sibling"]) == ("r1", "r2")]
    assert (row["lost_gtid_set"], row["lost_count"], row["verdict"]) == (None, None, "undetermined")


def test_version_note_for_newer_candidate():
    """A candidate newer than a sibling gets a note (newer source -> older replica is unsupported)."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-10"),
                                      replica("r2", R2, 3, f"{S}:1-10", version=MySQLVersion.parse("8.0.40"))])
    assert any("older than r1" in n for n in sib(cand(model, "r1"), "r2").notes)


def test_model_is_pure():
    """Modelling does not change its inputs (frozen snapshots compare equal afterwards)."""
    replicas = [replica("r1", R1, 2, f"{S}:1-8", f"{S}:1-10", log_replica_updates=False),
                replica("r2", R2, 3, f"{S}:1-10")]
    before = [dataclasses.replace(r) for r in replicas]
    model_failover(source(), replicas)
    assert replicas == before


def test_a_candidate_behind_many_siblings_lists_ten_reasons_and_counts_the_rest():
    """A stopped r1 behind 14 siblings and the source: one loss each, but its verdict lists ten
    reasons and counts the other five (each sibling's row keeps its sets)."""
    from gtid_core.failover import MAX_REASONS

    others = [replica(f"r{i:02d}", _uuid(i), 10 + i, f"{S}:1-10") for i in range(2, 16)]
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-8", io="NO"), *others])
    r1 = cand(model, "r1")
    assert r1.verdict.value == "loses_transactions"
    assert len(r1.reasons) == MAX_REASONS + 1 and r1.reasons[-1].startswith("and 5 more reason(s)")
    assert all(sib(r1, s.candidate).lost == g(f"{S}:9-10") for s in model.candidates if s.candidate != "r1")
    # the texts every finding of the source carries are bounded too: ten ranks, ten siblings
    [f] = [f for f in failover_findings(model) if f.server == "r1" and f.check_id == "failover_candidate_unsafe"]
    assert model.ranking_text().endswith(f"and {len(model.candidates) - MAX_REASONS} more candidate(s), "
                                         "ranked in failover_readiness")
    lines = f.evidence["siblings"].splitlines()
    assert len(lines) == MAX_REASONS + 1 and lines[-1] == "and 5 more sibling(s), each in failover_readiness"


def _delayed(delay):
    """A delayed replica that retrieved all of s's S:1-20 and applied none of it (SOURCE_DELAY ``delay``)."""
    d = replica("delayed", R2, 3, "", f"{S}:1-20")
    return dataclasses.replace(d, channel=dataclasses.replace(d.channel, sql_delay=delay))


def _drain_model(delay, version=V97):
    """s at S:1-20; r1 has all of it and purged S:1-10 from its binary logs; ``delayed`` (SOURCE_DELAY ``delay``,
    ``version``) retrieved all of it and applied none; r3 has an errant GTID (so that s has a finding whose text
    carries the advice)."""
    d = _delayed(delay)
    d = dataclasses.replace(d, server=dataclasses.replace(d.server, version=version))
    return model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-20", purged=f"{S}:1-10"), d,
                                                 replica("r3", R3, 4, f"{S}:1-20,{R3}:1")])


@pytest.mark.parametrize("delay", [300, 0, None])
def test_a_sibling_refused_only_for_its_relay_log_makes_the_candidate_safe_after_catch_up(delay):
    """A fresh-user trial found "promote orders-delayed" first and the up-to-date orders-r1 ranked unsafe, although
    both need the same step: the delayed replica applies its relay log (holding S:1-10, which r1 purged). Model v3:
    that sibling streams once its relay log is applied (``needs_relay_log_applied``, proven on 9.7.4 by
    tests/sandbox/test_failover_scenarios.py), so r1 is safe_after_catch_up, and ranks before the delayed replica.
    The step names SOURCE_DELAY when read (set to 0 first, with the receiver running, and given back in the
    repoint), is conditional when unknown, and is left out at 0."""
    model = _drain_model(delay)
    assert [(c.candidate, c.verdict) for c in model.candidates] == [
        ("r1", Verdict.SAFE_AFTER_CATCH_UP), ("delayed", Verdict.SAFE_AFTER_CATCH_UP), ("r3", Verdict.PROPAGATES_ERRANT)]
    r1, delayed = model.candidates[:2]
    assert delayed.source_delay == delay
    assert ("(SOURCE_DELAY = 300 s: set it to 0 first)" in delayed.reasons[0]) is (delay == 300)
    d = sib(r1, "delayed")
    assert (d.result, d.refusal, d.refused_missing) == (SiblingResult.STREAMS, None, None)
    assert d.needs_relay_log_applied == g(f"{S}:1-10") and d.relay_backlog == g(f"{S}:1-20") and d.source_delay == delay
    assert d.sibling_set == GtidSet.EMPTY and "the repoint purges the relay log and r1 refuses it" in d.rule
    assert r1.cost.refused == 0 and not r1.refused
    (reason,) = r1.reasons
    assert reason.startswith(f"delayed must first apply its relay log (20 transaction(s)): repointed before that, it "
                             f"lacks 10 r1 purged ({S}:1-10) and is refused (ER_MASTER_HAS_PURGED_REQUIRED_GTIDS); "
                             "before repointing it, ")
    assert ("its SOURCE_DELAY is 300 s, so first, with its receiver running (if it is stopped, START REPLICA "
            "IO_THREAD first; one still trying to connect counts): STOP REPLICA SQL_THREAD; CHANGE REPLICATION SOURCE "
            "TO SOURCE_DELAY = 0; START REPLICA SQL_THREAD; then STOP REPLICA IO_THREAD"
            in reason) is (delay == 300)       # both threads stopped, the CHANGE would purge the relay log (9.7.4)
    # the applier is started (a stopped one applies nothing), once: the undelay already started it; and the
    # server says when the backlog is applied
    started = "" if delay == 300 else "START REPLICA SQL_THREAD; then "
    assert (f"STOP REPLICA IO_THREAD; then {started}wait until SELECT GTID_SUBSET('{S}:1-20', "
            "@@GLOBAL.gtid_executed) returns 1 (its applier has applied the relay log)") in reason
    assert reason.count("START REPLICA SQL_THREAD") == (2 if delay is None else 1)   # unknown: the undelay is "if"
    assert ("if it has a SOURCE_DELAY, first, with its receiver running" in reason) is (delay is None)
    assert "SOURCE_DELAY" not in reason if delay == 0 else True
    # the delay it was kept for comes back with the repoint
    assert ("then give its SOURCE_DELAY = 300 back in the CHANGE REPLICATION SOURCE TO that repoints it" in reason) \
        is (delay == 300)
    assert ("then if it had a SOURCE_DELAY, give it back in the CHANGE REPLICATION SOURCE TO that repoints it"
            in reason) is (delay is None)
    # the advice every finding of s carries: promote r1, once the delayed replica has applied its relay log
    [finding] = [f for f in failover_findings(model) if f.server == "r3"]
    assert ("If s fails, promote r1 (safe_after_catch_up) once delayed has applied its relay log before being "
            f"repointed: delayed lacks 10 transaction(s) r1 no longer has in its binary logs ({S}:1-10) and holds "
            "them in its relay log, which the repoint would throw away") in finding.detail
    # ... and its steps once: the ranking under it names r1 without repeating them (a fresh-user trial read the
    # same five statements three times in one finding); the readiness rows keep the reason whole
    assert finding.remediation.startswith("Candidates for s, best first: 1. r1 (safe_after_catch_up: the steps are "
                                          "in the advice above); 2. delayed (safe_after_catch_up: ")
    assert "delayed must first apply its relay log" not in finding.remediation
    # a source with one replica has no ranking to give (a trial read "best first: 1." of one)
    single = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-20,{X}:1")])
    [only] = failover_findings(single)[:1]
    assert only.remediation.startswith("The only replica of s to promote: r1 (propagates_errant, spreads 1 GTID(s): ")
    assert model.ranking_text().startswith(f"1. r1 (safe_after_catch_up: {reason}")
    # rows: the drained sibling is listed for every candidate (never quiet)
    rows = [r for r in failover_rows(model) if r["candidate"] == "r1" and r["sibling"] == "delayed"]
    assert [(r["sibling_result"], r["refusal"]) for r in rows] == [("streams", None)]


def test_a_sibling_whose_relay_log_holds_what_the_candidate_still_fetches_streams_once_both_have_it():
    """r1 purged S:1-10 and its running receiver is still fetching S:11-20, which t holds in its relay log (t read a
    moment after r1, on a busy source: a demo under load showed it). That is lag at read time, which the model never
    counts against a candidate: r1 is safe_after_catch_up, t streams once its relay log is applied, and the step
    says to apply it only once r1 has received S:11-20 (applied while r1 lacks them, with the source down, t would
    hold what r1 never gets). Before, t stayed refused and r1 was refuses_siblings: a warning on a healthy fleet.
    Proven on 9.7.4 by tests/sandbox/test_failover_scenarios.py."""
    model = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-10"),
                                                 replica("t", R2, 3, "", f"{S}:1-20")])
    r1 = cand(model, "r1")
    t = sib(r1, "t")
    assert (t.result, t.needs_relay_log_applied, t.in_flight) == (SiblingResult.STREAMS, g(f"{S}:1-10"),
                                                                  g(f"{S}:11-20"))
    assert r1.verdict is Verdict.SAFE_AFTER_CATCH_UP
    assert any("still fetching 10 transaction(s)" in r for r in r1.reasons)
    gate = (f"first wait until r1 has applied the 10 transaction(s) of t's relay log it lacked when read (its "
            f"receiver was running): SELECT GTID_SUBSET('{S}:11-20', @@GLOBAL.gtid_executed) returns 1 on r1; should "
            f"s be down before then, r1 never gets them")
    # the condition comes before the steps, in the finding's advice and in the table's reasons alike
    (step,) = fo._drain_steps(r1)
    assert gate in step and step.index(gate) < step.index("STOP REPLICA")
    (row,) = [r for r in failover_rows(model) if r["candidate"] == "r1" and r["sibling"] == "t"]
    assert gate in row["verdict_reasons"]
    assert check_ids(model) == []


def test_no_drain_condition_when_the_candidate_had_the_whole_relay_log():
    """The drain of a sibling whose relay log the candidate had whole when read carries no condition (v3's case),
    nor does one whose in-flight part is outside the relay log (it applied that part already)."""
    model = _drain_model(0)
    (step,) = fo._drain_steps(cand(model, "r1"))
    assert "first wait until" not in step
    # t applied S:21 (a gap a multi-threaded applier leaves), which r1 still fetches; its relay log is within r1's
    model = model_failover(source(f"{S}:1-21"), [replica("r1", R1, 2, f"{S}:1-20", purged=f"{S}:1-10"),
                                                 replica("t", R2, 3, f"{S}:21", f"{S}:1-21")])
    r1 = cand(model, "r1")
    assert sib(r1, "t").result is SiblingResult.STREAMS and sib(r1, "t").in_flight == g(f"{S}:21")
    assert r1.verdict is Verdict.SAFE_AFTER_CATCH_UP and "first wait until" not in " ".join(fo._drain_steps(r1))


def test_a_relay_log_beyond_the_candidate_with_what_the_source_lacks_stays_refused():
    """t's relay log also holds a transaction s never executed (X:1, beyond r1): it is not in flight to r1, so
    applied, t would hold what r1 never gets: t stays refused."""
    model = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-20", purged=f"{S}:1-10"),
                                                 replica("t", R2, 3, "", f"{S}:1-20,{X}:1")])
    assert sib(cand(model, "r1"), "t").result is SiblingResult.REFUSED


def test_an_unknown_receiver_keeps_a_drain_within_the_candidate():
    """r1's receiver state unknown: a relay log r1 had whole when read still drains (as in v3). One holding what r1
    may still fetch from s makes t undetermined (v5): whether t streams once drained or would diverge depends on
    r1's receiver, which was not read, so r1 is undetermined and nothing is reported (v4 kept t refused and warned
    refuses_siblings from an input not read). What s never had stays a known refusal."""
    within = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-20", purged=f"{S}:1-10", io=None),
                                                  replica("t", R2, 3, "", f"{S}:1-20")])
    assert sib(cand(within, "r1"), "t").result is SiblingResult.STREAMS
    beyond = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-10", io=None),
                                                  replica("t", R2, 3, "", f"{S}:1-20")])
    r1 = cand(beyond, "r1")
    t = sib(r1, "t")
    assert (t.result, t.refusal, t.needs_relay_log_applied) == (SiblingResult.UNDETERMINED, None, None)
    assert t.rule.startswith(f"streams once its relay log is applied only if r1 first gets the 10 transaction(s) of "
                             f"that relay log it lacked when read ({S}:11-20): whether r1's receiver runs was not read")
    assert r1.verdict is Verdict.UNDETERMINED and check_ids(beyond) == []
    errant = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-10", io=None),
                                                  replica("t", R2, 3, "", f"{S}:1-20,{X}:1")])
    assert sib(cand(errant, "r1"), "t").result is SiblingResult.REFUSED
    purged = model_failover(source(f"{S}:1-20", purged=f"{S}:1-15"),
                            [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-10", io=None),
                             replica("t", R2, 3, "", f"{S}:1-20")])
    assert sib(cand(purged, "r1"), "t").result is SiblingResult.REFUSED


@pytest.mark.parametrize("receiver", ["stopped", "purged on s"])
def test_a_sibling_whose_relay_log_holds_what_the_candidate_cannot_get_stays_refused(receiver):
    """The same, but r1 can never get S:11-20: its receiver is stopped, or s purged them. Applied before the repoint,
    t would have what r1 never gets, a silent divergence where a repoint as it is gets a loud refusal: t stays
    refused (a review of v3 found the false safe)."""
    io, purged = ("NO", "") if receiver == "stopped" else ("YES", f"{S}:1-20")
    model = model_failover(source(f"{S}:1-20", purged=purged),
                           [replica("r1", R1, 2, f"{S}:1-10", purged=f"{S}:1-10", io=io),
                            replica("t", R2, 3, "", f"{S}:1-20")])
    r1 = cand(model, "r1")
    t = sib(r1, "t")
    assert (t.result, t.needs_relay_log_applied, t.discarded) == (SiblingResult.REFUSED, None, g(f"{S}:11-20"))
    assert r1.verdict is Verdict.LOSES_TRANSACTIONS
    # the remediation does not have t apply its relay log as it is: that would give t S:11-20, which r1 lacks
    (step,) = [x for x in fo._salvage_steps(model, r1) if x.startswith("t lacks")]
    assert f"but also 10 transaction(s) ({S}:11-20) r1 was not known to have when read" in step
    assert step.index("Have r1 get them first") < step.index("STOP REPLICA")


def test_a_candidate_without_log_replica_updates_keeps_its_refusals():
    """A log_replica_updates=OFF candidate refuses any sibling behind it when the source fails, whatever its relay
    log holds then (the structural reason): its siblings' refusals are kept as they are, and counted."""
    model = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-20", purged=f"{S}:1-20",
                                                         log_replica_updates=False), _delayed(0)])
    r1 = cand(model, "r1")
    assert sib(r1, "delayed").result is SiblingResult.REFUSED and r1.cost.refused == 1


def test_a_sibling_whose_applier_failed_stays_refused():
    """The relay log of a sibling whose applier stopped on an error cannot be applied before the repoint: the
    refusal stands (refuses_siblings), and the step to apply it is offered beside it."""
    d = _delayed(0)
    d = dataclasses.replace(d, channel=dataclasses.replace(d.channel, sql_running="NO", last_sql_errno=1062))
    model = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-20", purged=f"{S}:1-10"), d])
    r1 = cand(model, "r1")
    assert r1.verdict is Verdict.REFUSES_SIBLINGS
    assert (sib(r1, "delayed").result, sib(r1, "delayed").needs_relay_log_applied) == (SiblingResult.REFUSED, None)


@pytest.mark.parametrize("version, undelay", [
    ("5.7.44", "STOP SLAVE SQL_THREAD; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE SQL_THREAD; then STOP SLAVE "
               "IO_THREAD; then wait until SELECT GTID_SUBSET("),
    ("8.0.22", "STOP REPLICA SQL_THREAD; CHANGE MASTER TO MASTER_DELAY = 0; START REPLICA SQL_THREAD; then STOP "
               "REPLICA IO_THREAD; then wait until SELECT GTID_SUBSET("),
    ("8.0.36", "STOP REPLICA SQL_THREAD; CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0; START REPLICA SQL_THREAD; "
               "then STOP REPLICA IO_THREAD; then wait until SELECT GTID_SUBSET("),
])
def test_failover_steps_are_in_the_words_of_the_server_that_runs_them(version, undelay):
    """Each step of the failover advice is run on one server, in that server's words (gtid_core.syntax): the
    delayed sibling's undelay and stop statements follow its version, while the 9.7 servers' stay in today's."""
    v = MySQLVersion.parse(version)
    model = _drain_model(300, v)
    r1, delayed = model.candidates[:2]
    assert delayed.version == v and sib(r1, "delayed").version == v
    assert undelay in r1.reasons[0]
    assert ("(SOURCE_DELAY = 300 s: set it to 0 first)" in delayed.reasons[0]) is (version == "8.0.36")
    assert ("(MASTER_DELAY = 300 s: set it to 0 first)" in delayed.reasons[0]) is (version != "8.0.36")
    [finding] = [f for f in failover_findings(model) if f.server == "r3"]
    assert undelay in finding.detail


def test_a_delay_that_cannot_be_changed_with_the_receiver_running_is_waited_out():
    """Before 5.7.4 CHANGE MASTER TO MASTER_DELAY needs both threads stopped (WL#6120), and that CHANGE deletes
    the relay log: a 5.6 delayed replica is told to let the delay pass, never to change it. (A 5.6 sibling has no
    boundary parser, so its Retrieved_Gtid_Set may name a transaction cut short: r1 keeps refusing it, v2's verdict,
    with the step to apply its relay log beside the refusal.)"""
    model = _drain_model(300, MySQLVersion.parse("5.6.51"))
    r1, delayed = cand(model, "r1"), cand(model, "delayed")
    assert r1.verdict is Verdict.REFUSES_SIBLINGS and sib(r1, "delayed").needs_relay_log_applied is None
    assert "(MASTER_DELAY = 300 s: let it pass)" in delayed.reasons[0]
    [finding] = [f for f in failover_findings(model) if f.server == "r1"]
    [step] = [line for line in finding.remediation.splitlines() if line.startswith("delayed lacks 10")]
    assert "its MASTER_DELAY is 300 s: leave it (MySQL 5.6.51 changes it only with the receiver stopped too" in step
    assert "CHANGE MASTER TO MASTER_DELAY = 0" not in step and "give its MASTER_DELAY" not in step
    assert "then STOP SLAVE IO_THREAD; then START SLAVE SQL_THREAD; then wait until SELECT GTID_SUBSET(" in step
    # promoted itself, it must let its delay pass first too
    assert "its MASTER_DELAY of 300 s must pass first (MySQL 5.6.51 changes it only with the receiver stopped" \
        in finding.detail


def test_refused_sibling_without_the_transactions_in_its_relay_log_catches_up_while_the_source_is_up():
    """A refused sibling that does not hold what the candidate purged must get it from s while s is up, or be
    reprovisioned after the promotion."""
    model = model_failover(source(f"{S}:1-20"), [replica("r1", R1, 2, f"{S}:1-20", purged=f"{S}:1-10"),
                                                 replica("r2", R2, 3, f"{S}:1-5", f"{S}:1-5", io="NO")])
    [finding] = [f for f in failover_findings(model) if f.server == "r1"]
    [step] = [line for line in finding.remediation.splitlines() if line.startswith("r2 lacks")]
    assert "let r2 catch up from s while s is up (its receiver running), or plan to reprovision it from r1" in step


def test_a_multi_source_candidates_applied_other_channel_gtids_spread_whatever_is_done_with_its_channels():
    """A fresh-user trial found "stop and remove its other channels first" offered as a way to promote a
    multi-source replica: what it already applied from them stays in its gtid_executed and binary logs and
    reaches every repointed sibling anyway. The advice says so, with the set."""
    model = model_failover(source(), [replica("r1", R1, 2, f"{S}:1-10"),
                                      replica("r2", R2, 3, f"{S}:1-10,{X}:1-5", other=f"{X}:1-5")])
    [finding] = failover_findings(model)
    assert (f"the 5 GTID(s) it applied from them ({X}:1-5) are in its gtid_executed and binary logs, and every "
            "sibling repointed to it receives them; removing its other channels does not take them back") \
        in finding.remediation
    assert "stop and remove its other channels first" not in finding.remediation
