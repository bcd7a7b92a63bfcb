"""The failover model against real promotions on real MySQL 9.7 servers.

Each test breaks a small private fleet (a source and two or three replicas), reads every server
with the collector (replicas first, source last, as the nightly run does), builds the model,
asserts its rows and findings, and then really fails over (:func:`promote`): the candidate is
promoted and the siblings, the old source included, are repointed with AUTO_POSITION. What each
sibling then receives, keeps that the new source lacks, or is refused with is read from the servers
and must match what the model said before the promotion.
"""
from __future__ import annotations

import re

import pytest

from gtid_core import GtidSet, Severity
from gtid_core.failover import (
    EQUAL_SERVER_UUID,
    SiblingResult,
    Verdict,
    failover_findings,
    failover_rows,
)
from gtid_core.identity import IdentityServer, check_duplicate_identities
from gtid_core.reconnect import ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
from jobs.sandbox import failover_scenarios as fs
from jobs.sandbox.failover_scenarios import build_model

pytestmark = pytest.mark.mysql

FAN = {"name": "failover", "servers": [{"name": "s"}, {"name": "r1"}, {"name": "r2"}],
       "channels": [{"replica": "r1", "source": "s"}, {"replica": "r2", "source": "s"}]}
NO_BINARY_LOG = {**FAN, "servers": [{"name": "s"}, {"name": "r1", "options": ["--skip-log-bin"]}, {"name": "r2"}]}
NO_LOG_REPLICA_UPDATES = {**FAN, "servers": [{"name": "s"}, {"name": "r1", "options": ["--log-replica-updates=OFF"]},
                                             {"name": "r2"}]}
MISSING_RE = re.compile(r"the missing transactions are '([^']*)'")
ER_SOURCE_FATAL_ERROR_READING_BINLOG = 13114
ER_REPLICA_FATAL_ERROR = 13117


def cand(model, name):
    (c,) = [c for c in model.candidates if c.candidate == name]
    return c


def sib(candidate, name):
    (s,) = [s for s in candidate.siblings if s.sibling == name]
    return s


def g(text: str) -> GtidSet:
    return GtidSet.parse(text or "")


def findings_of(model):
    return sorted((f.check_id, f.server) for f in failover_findings(model))


def refused_missing(after) -> GtidSet:
    """The set the source named in its 13114 error ('the missing transactions are ...')."""
    match = MISSING_RE.search(after.last_io_error)
    assert match, after.last_io_error
    return g(match.group(1))


# ---------------------------------------------------------------------------------------------

def test_lagging_replica_promoted_loses_what_its_siblings_keep(fleet_factory):
    """A stopped, lagging r1: the model says promoting it loses the missing set on r2 and s; a real promotion agrees."""
    f = fleet_factory(FAN)
    result = fs.lagging_replica(f, "r1", transactions=3)
    missing = g(result.gtid_sets["missing"])
    model, _ = build_model(f, "s", ["r1", "r2"])
    r1, r2 = cand(model, "r1"), cand(model, "r2")
    assert (r1.verdict, r2.verdict) == (Verdict.LOSES_TRANSACTIONS, Verdict.SAFE)
    assert [c.candidate for c in model.candidates] == ["r2", "r1"]
    assert sib(r1, "r2").lost == missing and sib(r1, "s").lost == missing
    assert findings_of(model) == [("failover_candidate_unsafe", "r1")]
    rows = {(r["candidate"], r["sibling"]): r for r in failover_rows(model)}
    assert rows[("r1", "r2")]["lost_gtid_set"] == missing.to_text(multiline=False)
    assert rows[("r1", "r2")]["lost_count"] == missing.count() == 5
    assert rows[("r2", "r1")]["verdict"] == "safe" and rows[("r2", "r1")]["lost_count"] == 0

    promoted = fs.promote(f, "r1", ["r2", "s"])
    for name in ("r2", "s"):
        after = promoted.siblings[name]
        assert not after.refused and after.io_running == "Yes"
        assert g(after.kept) == sib(r1, name).lost        # they keep what the new source never gets
        assert g(after.received) == GtidSet.EMPTY


def test_salvageable_errant_flows_to_every_sibling(fleet_factory):
    """An errant GTID still in r1's binary log: the model says it propagates; after promotion r2 and s received it."""
    f = fleet_factory(FAN)
    result = fs.errant_in_binary_logs(f, "r1")
    errant = g(result.gtid_sets["errant"])
    model, _ = build_model(f, "s", ["r1", "r2"])
    r1 = cand(model, "r1")
    assert r1.verdict is Verdict.PROPAGATES_ERRANT and cand(model, "r2").verdict is Verdict.SAFE
    assert (r1.errant, r1.errant_salvageable, r1.errant_lost) == (errant, errant, GtidSet.EMPTY)
    assert findings_of(model) == [("failover_candidate_unsafe", "r1")]
    (finding,) = failover_findings(model)
    assert f"SET GTID_NEXT='{errant.to_text()}'" in finding.remediation

    promoted = fs.promote(f, "r1", ["r2", "s"])
    for name in ("r2", "s"):
        after = promoted.siblings[name]
        assert sib(r1, name).result is SiblingResult.STREAMS and not after.refused
        assert g(after.received) == sib(r1, name).errant_salvageable == errant


def test_purged_errant_gets_every_sibling_refused(fleet_factory):
    """An errant GTID purged from r1's binary logs: refuses_siblings; promoted, r2 and s get 13114 naming that GTID."""
    f = fleet_factory(FAN)
    result = fs.errant_purged(f, "r1")
    errant = g(result.gtid_sets["errant"])
    model, _ = build_model(f, "s", ["r1", "r2"])
    r1 = cand(model, "r1")
    assert r1.verdict is Verdict.REFUSES_SIBLINGS and cand(model, "r2").verdict is Verdict.SAFE
    assert (r1.errant_salvageable, r1.errant_lost) == (GtidSet.EMPTY, errant)
    assert findings_of(model) == [("failover_candidate_unsafe", "r1")]

    promoted = fs.promote(f, "r1", ["r2", "s"])
    for name in ("r2", "s"):
        predicted, after = sib(r1, name), promoted.siblings[name]
        assert (predicted.result, predicted.refusal) == (SiblingResult.REFUSED, ER_MASTER_HAS_PURGED_REQUIRED_GTIDS)
        assert after.last_io_errno == ER_SOURCE_FATAL_ERROR_READING_BINLOG
        assert "purged required binary logs" in after.last_io_error
        assert refused_missing(after) == predicted.refused_missing == errant


def test_log_replica_updates_off_refuses_the_lagging_sibling(fleet_factory):
    """r1 with log_replica_updates=OFF and r2 lagging: no safe candidate; promoted r1 refuses r2 with what it lacks."""
    f = fleet_factory(NO_LOG_REPLICA_UPDATES)
    result = fs.replica_without_log_replica_updates(f, "r1", "r2", transactions=3)
    model, _ = build_model(f, "s", ["r1", "r2"])
    r1, r2 = cand(model, "r1"), cand(model, "r2")
    assert (r1.verdict, r2.verdict) == (Verdict.REFUSES_SIBLINGS, Verdict.LOSES_TRANSACTIONS)
    assert any("log_replica_updates is OFF" in note for note in r1.readiness)
    assert sib(r1, "r2").refused_missing == g(result.gtid_sets["sibling_lacks"])
    assert sib(r1, "s").result is SiblingResult.STREAMS
    assert findings_of(model) == [("failover_candidate_unsafe", "r1"), ("failover_candidate_unsafe", "r2"),
                                  ("no_safe_failover_candidate", "s")]

    promoted = fs.promote(f, "r1", ["r2", "s"])
    assert promoted.siblings["r2"].last_io_errno == ER_SOURCE_FATAL_ERROR_READING_BINLOG
    assert refused_missing(promoted.siblings["r2"]) == sib(r1, "r2").refused_missing
    assert not promoted.siblings["s"].refused and g(promoted.siblings["s"].received) == GtidSet.EMPTY


def test_cloned_server_uuid_is_critical_and_the_clone_refuses_its_twin(fleet_factory):
    """A datadir clone with auto.cnf kept: duplicate_server_uuid; promoted, the twin is refused with 13117."""
    f = fleet_factory(FAN)
    result = fs.cloned_server_uuid(f, "r1", "r1clone")
    kicked = result.details["kicked"]
    assert result.details["last_io_errno"] == ER_SOURCE_FATAL_ERROR_READING_BINLOG
    running = "r1clone" if kicked == "r1" else "r1"
    s = f.server("s")
    s.execute("CREATE DATABASE after_clone")       # the kicked twin never receives it
    f.wait_caught_up(channels=[c for c in f.topology.channels if c.replica in ("r2", running)])
    behind = g(s.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (f.server(kicked).gtid_executed(),)))
    assert behind
    model, snaps = build_model(f, "s", ["r1", "r2", "r1clone"])
    # no cluster labels: the twins meet at s, whose dump thread kicks one of them (observed above)
    dupes = check_duplicate_identities([IdentityServer.from_snapshot(snap, sources={"s"} if n != "s" else ())
                                        for n, (snap, _) in snaps.items()])
    assert sorted((d.server, d.severity) for d in dupes) == [("r1", Severity.CRITICAL), ("r1clone", Severity.CRITICAL)]
    assert all("both replicate from s" in d.evidence["data_meets"] for d in dupes)
    uuid = result.details["server_uuid"]
    for d in dupes:     # the uuid's GTIDs each twin executed (none: neither wrote), read from the servers
        other = "r1clone" if d.server == "r1" else "r1"
        mine, theirs = (g(result.gtid_sets[f"{n}.gtid_executed"]).for_uuid(uuid) for n in (d.server, other))
        assert d.evidence["gtid_executed_of_uuid"] == mine.to_text(multiline=False)
        assert d.gtid_set == ((mine & theirs) or None)
    assert sib(cand(model, running), kicked).refusal == EQUAL_SERVER_UUID
    assert cand(model, running).verdict is Verdict.REFUSES_SIBLINGS
    # it lags too (its receiver was kicked): losing transactions is the gravest of its costs
    assert cand(model, kicked).verdict is Verdict.LOSES_TRANSACTIONS
    assert sib(cand(model, kicked), running).refusal == EQUAL_SERVER_UUID
    assert sib(cand(model, kicked), "r2").lost == behind
    assert cand(model, "r2").verdict is Verdict.SAFE and model.candidates[0].candidate == "r2"
    assert ("failover_candidate_unsafe", running) in findings_of(model)

    promoted = fs.promote(f, running, [kicked, "r2", "s"])
    assert promoted.siblings[kicked].last_io_errno == ER_REPLICA_FATAL_ERROR
    assert "equal MySQL server UUIDs" in promoted.siblings[kicked].last_io_error
    for name in ("r2", "s"):
        assert sib(cand(model, running), name).result is SiblingResult.STREAMS
        assert not promoted.siblings[name].refused


def test_applier_behind_is_safe_after_catch_up(fleet_factory):
    """r1 retrieved but did not apply: safe_after_catch_up; promoted once its relay log is applied, nobody keeps or lacks anything."""
    f = fleet_factory(FAN)
    result = fs.applier_stopped(f, "r1", transactions=3)
    model, _ = build_model(f, "s", ["r1", "r2"])
    r1 = cand(model, "r1")
    assert (r1.verdict, cand(model, "r2").verdict) == (Verdict.SAFE_AFTER_CATCH_UP, Verdict.SAFE)
    assert r1.pending_relay == g(result.gtid_sets["pending"])
    assert sib(r1, "r2").catch_up == g(result.gtid_sets["pending"]) and sib(r1, "r2").lost == GtidSet.EMPTY
    assert findings_of(model) == []

    promoted = fs.promote(f, "r1", ["r2", "s"])
    assert g(promoted.candidate_gtid_executed) >= g(result.gtid_sets["pending"])
    for name in ("r2", "s"):
        after = promoted.siblings[name]
        assert not after.refused and after.io_running == "Yes"
        assert (g(after.kept), g(after.lacks), g(after.received)) == (GtidSet.EMPTY, GtidSet.EMPTY, GtidSet.EMPTY)


def test_a_sibling_holding_what_the_candidate_purged_in_its_relay_log_streams_once_it_has_applied_it(fleet_factory):
    """r2 holds 3 of s's transactions in its relay log only (applier stopped, no error) and r1 purged them from its
    binary logs: the model says r1 is safe_after_catch_up, r2 streaming once it has applied its relay log
    (``needs_relay_log_applied`` = those 3). Promoted so (r2's relay log applied first, as the advice says), r2
    streams: nothing refused, kept or lacking. (Repointed as it is, r2 would be refused with 13114: the v2 model's
    refuses_siblings, which tests/core/test_failover_defects.py keeps in its sets.)"""
    f = fleet_factory(FAN)
    result = fs.relay_log_the_candidate_purged(f, "r1", "r2", transactions=3)
    pending = g(result.gtid_sets["pending"])
    model, _ = build_model(f, "s", ["r1", "r2"])
    r1 = cand(model, "r1")
    r2 = sib(r1, "r2")
    assert (r1.verdict, r2.result, r2.refusal) == (Verdict.SAFE_AFTER_CATCH_UP, SiblingResult.STREAMS, None)
    assert r2.needs_relay_log_applied == pending and r2.relay_backlog >= pending
    assert model.candidates[0].candidate == "r1" and findings_of(model) == []

    promoted = fs.promote(f, "r1", ["r2", "s"], drained=["r2"])
    for name in ("r2", "s"):
        after = promoted.siblings[name]
        assert not after.refused and after.io_running == "Yes", after.last_io_error
        assert (g(after.kept), g(after.lacks)) == (GtidSet.EMPTY, GtidSet.EMPTY)
    assert g(promoted.candidate_gtid_executed) >= pending


def test_a_sibling_holding_what_the_candidate_still_fetched_when_read_streams_once_both_have_it(fleet_factory):
    """As above, and s commits 4 more transactions between the reads of r1 and r2 (a busy source: r2, read a moment
    later, holds them in its relay log; r1's read missed them). That is lag at read time: the model says r1 is
    safe_after_catch_up (its receiver still fetching the 4), r2 streaming once its relay log is applied, only once
    r1 has applied the 4 (the step's condition, in the table's reasons), and no finding (a demo under load once
    warned r1 refuses_siblings). Promoted so (r1 has them, then r2's relay log applied), r2 and s stream: nothing
    refused, kept or lacking."""
    f = fleet_factory(FAN)
    result = fs.relay_log_the_candidate_purged(f, "r1", "r2", transactions=3)
    pending = g(result.gtid_sets["pending"])
    later: list[str] = []

    def between(name: str) -> None:
        if name == "r1":
            later.append(fs.write_received_by(f, "s", ["r2"], transactions=2))

    model, _ = build_model(f, "s", ["r1", "r2"], after_read=between)
    (written,) = later
    r1 = cand(model, "r1")
    r2 = sib(r1, "r2")
    assert (r1.verdict, r2.result, r2.refusal) == (Verdict.SAFE_AFTER_CATCH_UP, SiblingResult.STREAMS, None)
    assert r2.needs_relay_log_applied == pending and r2.in_flight == g(written)
    assert model.candidates[0].candidate == "r1" and findings_of(model) == []
    (row,) = [r for r in failover_rows(model) if r["candidate"] == "r1" and r["sibling"] == "r2"]
    assert (f"first wait until r1 has applied the {g(written).count()} transaction(s) of r2's relay log it lacked "
            f"when read") in row["verdict_reasons"]

    fs.wait_applied(f, "r1", written)   # the step's condition: r1 has them before r2 applies its relay log
    promoted = fs.promote(f, "r1", ["r2", "s"], drained=["r2"])
    for name in ("r2", "s"):
        after = promoted.siblings[name]
        assert not after.refused and after.io_running == "Yes", after.last_io_error
        assert (g(after.kept), g(after.lacks)) == (GtidSet.EMPTY, GtidSet.EMPTY)
    assert g(promoted.candidate_gtid_executed) >= pending | g(written)


def test_a_sibling_drained_before_the_candidate_has_what_it_still_fetched_keeps_what_the_candidate_never_gets(
        fleet_factory):
    """The other side of the step's condition. The model reads the same state as above (r1's receiver running when
    read, r2 holding in its relay log 4 transactions r1 lacked then), but r1's receiver stops right after r1's read,
    before s commits them (s unreachable from r1), and s then crashes (SIGKILL): r1 never gets them, and the
    condition ("SELECT GTID_SUBSET(...) returns 1 on r1") never holds. Drained and repointed all the same, r2 streams
    from r1 without any error and keeps the 4, which r1 never has: the silent divergence that the step's "do not
    repoint r2 to r1 after applying them" prevents."""
    f = fleet_factory(FAN)
    fs.relay_log_the_candidate_purged(f, "r1", "r2", transactions=3)
    later: list[str] = []

    def between(name: str) -> None:
        if name == "r1":
            f.server("r1").execute("STOP REPLICA IO_THREAD FOR CHANNEL ''")
            later.append(fs.write_received_by(f, "s", ["r2"], transactions=2))

    model, _ = build_model(f, "s", ["r1", "r2"], after_read=between)
    (written,) = later
    r1 = cand(model, "r1")
    r2 = sib(r1, "r2")
    assert (r1.verdict, r2.result, r2.in_flight) == (Verdict.SAFE_AFTER_CATCH_UP, SiblingResult.STREAMS, g(written))
    (row,) = [r for r in failover_rows(model) if r["candidate"] == "r1" and r["sibling"] == "r2"]
    condition = f"SELECT GTID_SUBSET('{g(written).to_text(multiline=False)}', @@GLOBAL.gtid_executed) returns 1 on r1"
    assert condition in row["verdict_reasons"]
    assert "should s be down before then, r1 never gets them" in row["verdict_reasons"]
    assert "do not repoint r2 to r1 after applying them" in row["verdict_reasons"]

    f.server("s").kill()
    assert f.server("r1").query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (written,)) == 0
    promoted = fs.promote(f, "r1", ["r2"], drained=["r2"])
    after = promoted.siblings["r2"]
    assert not after.refused and after.io_running == "Yes", after.last_io_error
    assert (g(after.kept), g(after.lacks)) == (g(written), GtidSet.EMPTY)
    assert not g(promoted.candidate_gtid_executed) & g(written)


def test_log_bin_off_cannot_serve(fleet_factory):
    """r1 without a binary log: cannot_serve; promoted, every sibling fails with 13114 'Binary log is not open'."""
    f = fleet_factory(NO_BINARY_LOG)
    model, _ = build_model(f, "s", ["r1", "r2"])
    r1 = cand(model, "r1")
    assert (r1.verdict, cand(model, "r2").verdict) == (Verdict.CANNOT_SERVE, Verdict.SAFE)
    assert findings_of(model) == [("failover_candidate_unsafe", "r1")]

    promoted = fs.promote(f, "r1", ["r2", "s"])
    for name in ("r2", "s"):
        assert sib(r1, name).result is SiblingResult.REFUSED
        after = promoted.siblings[name]
        assert after.last_io_errno == ER_SOURCE_FATAL_ERROR_READING_BINLOG
        assert "Binary log is not open" in after.last_io_error
