"""Issue #11, pure half: each defect of the checks as a snapshot table that reproduced it, and what the
checks say now. The real-server half is in tests/core/test_checks_live.py."""
import dataclasses
import datetime as dt

import pytest

from gtid_core.checks import FleetContext, pair_reconnect_outcome, run_pair_checks, run_server_checks
from gtid_core.findings import Severity
from gtid_core.gtid_set import GtidSet
from gtid_core.reconnect import ReconnectKind
from gtid_core.relay_log import RelayLogEvent
from tests.core.test_checks import R, S, X, channel, ids, in_order, one, pair, server

G = GtidSet.parse
T0 = dt.datetime(2026, 11, 23, 2, 0, 0, tzinfo=dt.timezone.utc)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


# ---------------------------------------------------------------- 1. incomplete_relay_log_tail

def _big_partial_tail(file="relay.000007", first_pos=4000):
    """The last rows of a relay log whose last transaction is cut after its Table_map (no Xid yet)."""
    rows = [("Gtid", f"SET @@SESSION.GTID_NEXT= '{S}:500'"), ("Query", "BEGIN"), ("Table_map", "table_id: 70 (t.w)"),
            ("Write_rows", "table_id: 70 flags: STMT_END_F"), ("Xid", "COMMIT /* xid=9 */"),
            ("Gtid", f"SET @@SESSION.GTID_NEXT= '{S}:501'"), ("Query", "BEGIN"), ("Table_map", "table_id: 70 (t.w)")]
    return [RelayLogEvent(file, first_pos + 100 * i, kind, 1, first_pos + 100 * (i + 1), info)
            for i, (kind, info) in enumerate(rows)]


@pytest.mark.parametrize(
    "io, truncated, tail_file",
    [("Yes", "1", "relay.000007"), ("Yes", "0", "relay.000007"), ("Yes", None, "relay.000007"),
     ("No", "1", "relay.000007"), ("No", None, "relay.000007"), ("No", "0", None), ("No", "0", "relay.000009")],
    ids=["running_capped", "running_complete", "running_unknown_cap", "stopped_capped", "stopped_unknown_cap",
         "stopped_file_unknown", "stopped_rows_from_an_older_file"],
)
def test_relay_tail_not_known_complete_or_receiver_running_is_never_a_positive(io, truncated, tail_file):
    """A tail ending inside a transaction whose GTID is in Retrieved_Gtid_Set (a delayed or slow replica whose
    receiver fetched far ahead, or a capped read): before the fix, critical from the in_retrieved branch;
    now nothing unless the receiver is stopped AND the rows are the newest relay log's complete end."""
    rep = server("rep", R, version="9.7.4", executed=f"{S}:1-200")
    collector = {"relay_tail_truncated": truncated} if truncated is not None else {}
    if tail_file:
        collector["relay_tail_file"] = tail_file
    ch = channel(f"{S}:100-800", f"{S}:1-200", io=io, caught_up=False, **collector)
    assert "incomplete_relay_log_tail" not in ids(pair(rep, ch, None, _big_partial_tail()))


def test_relay_tail_complete_and_receiver_stopped_is_reported():
    """The positive the check keeps: the newest relay log read to its end, the receiver stopped, the dangling GTID
    in Retrieved_Gtid_Set on 9.7 -> critical (it is announced on reconnect and never re-fetched)."""
    rep = server("rep", R, version="9.7.4", executed=f"{S}:1-200")
    ch = channel(f"{S}:100-501", f"{S}:1-200", io="No", caught_up=False, relay_tail_file="relay.000007",
                 relay_tail_truncated="0")
    f = one(pair(rep, ch, None, _big_partial_tail()), "incomplete_relay_log_tail")
    assert f.severity is Severity.CRITICAL and f.gtid_set == G(f"{S}:501")
    assert f.evidence["relay_tail_file"] == "relay.000007" and f.evidence["relay_tail_truncated"] is False


def test_channel_snapshot_reads_the_collector_columns():
    """relay_tail_file / relay_tail_truncated / read_at come from the channels row as the collector names them."""
    ch = channel("", "", relay_tail_file="relay.000003", relay_tail_truncated=True, read_at="2026-11-23 02:00:01")
    assert (ch.relay_tail_file, ch.relay_tail_truncated) == ("relay.000003", True)
    assert ch.read_at == dt.datetime(2026, 11, 23, 2, 0, 1)
    assert (channel("", "").relay_tail_file, channel("", "").relay_tail_truncated, channel("", "").read_at) == (
        None, None, None)


# ---------------------------------------------------------------- 2. gtid_purged_jumped, log_replica_updates=OFF

def _replica_without_log_updates(executed, logs, **kw):
    """A 9.7.4 replica with log_bin=ON, log_replica_updates=OFF: gtid_purged == gtid_executed, Previous_gtids empty."""
    kw.setdefault("log_replica_updates", "OFF")
    return server("rep", R, version="9.7.4", executed=executed, purged=executed, logs=logs, **kw)


def test_purged_jumped_not_reported_for_applied_transactions_without_log_replica_updates():
    """Two nightly runs of such a replica with traffic and a FLUSH BINARY LOGS between: the applied S GTIDs went
    straight into gtid_purged. Before the fix: a gtid_purged_jumped warning every night; now nothing."""
    first = _replica_without_log_updates(f"{S}:1-100", [("binlog.000001", ""), ("binlog.000002", "")])
    second = _replica_without_log_updates(f"{S}:1-180", [("binlog.000001", ""), ("binlog.000002", ""),
                                                         ("binlog.000003", "")])
    assert "gtid_purged_jumped" not in ids(run_server_checks(second, first))


@pytest.mark.parametrize("log_replica_updates", ["OFF", None], ids=["off", "unknown"])
def test_purged_jumped_still_judges_the_own_uuid_without_log_replica_updates(log_replica_updates):
    """What stays sound on such a server: its own writes are logged, so own-uuid GTIDs in gtid_purged that it never
    executed (SET GLOBAL gtid_purged after a RESET) are still a jump; the S GTIDs it applied are not counted."""
    first = _replica_without_log_updates(f"{S}:1-100,{R}:1-5", [("binlog.000004", ""), ("binlog.000005", f"{R}:1-5")],
                                         log_replica_updates=log_replica_updates)
    second = _replica_without_log_updates(f"{S}:1-180,{R}:1-50", [("binlog.000001", "")],
                                          log_replica_updates=log_replica_updates)
    f = one(run_server_checks(second, first), "gtid_purged_jumped")
    assert f.gtid_set == G(f"{R}:6-50")
    assert "own server_uuid" in f.evidence["judged"]


def test_purged_jumped_needs_log_bin_on():
    """Without a binary log (log_bin OFF or unknown) gtid_purged follows gtid_executed: nothing is judged."""
    first = _replica_without_log_updates(f"{S}:1-100,{R}:1-5", [], log_bin="OFF")
    second = _replica_without_log_updates(f"{S}:1-180,{R}:1-50", [], log_bin="OFF")
    assert "gtid_purged_jumped" not in ids(run_server_checks(second, first))


# ---------------------------------------------------------------- 3. silent_purged_gap uses the binary-log scan

def test_5621_source_after_ordinary_purge_is_refused_not_silent():
    """A 5.6.21 source after PURGE BINARY LOGS, replica behind: the scan finds no Previous_gtids ⊆ the replica's set,
    so the server refuses (ER_MASTER_HAS_PURGED_REQUIRED_GTIDS). Before the fix: silent_purged_gap ('replication
    looks healthy'); now source_purged_required_gtids with the GTIDs of the oldest file the replica lacks."""
    src = server("src", S, version="5.6.21-log", executed=f"{S}:1-300", purged=f"{S}:1-100",
                 logs=[("mysql-bin.000003", f"{S}:1-100"), ("mysql-bin.000004", f"{S}:1-200")])
    rep = server("rep", R, version="5.6.21-log", executed=f"{S}:1-50")
    findings = pair(rep, channel(f"{S}:1-50", f"{S}:1-50"), src)
    assert "silent_purged_gap" not in ids(findings)
    f = one(findings, "source_purged_required_gtids")
    assert f.gtid_set == G(f"{S}:51-100") and f.severity is Severity.CRITICAL
    assert f.evidence["reconnect_outcome"] == "source_purged_required"


@pytest.mark.parametrize("logs", [None, [("mysql-bin.000001", None), ("mysql-bin.000002", f"{X}:1-100")]],
                         ids=["binary_logs_unknown", "previous_gtids_unknown"])
def test_5621_without_the_scan_reports_nothing(logs):
    """Before 5.6.22 only the scan tells refusal from silent skipping; unknown binary logs -> no positive
    (before the fix: a critical silent_purged_gap from gtid_purged and the version alone)."""
    src = server("src", S, version="5.6.21-log", executed=f"{X}:1-100,{S}:1-3", purged=f"{X}:1-100", logs=logs)
    rep = server("rep", R, version="5.6.21-log", executed=f"{X}:1-40,{S}:1-3")
    findings = pair(rep, channel(f"{S}:1-3", f"{X}:1-40,{S}:1-3"), src)
    assert not {"silent_purged_gap", "source_purged_required_gtids"} & set(ids(findings))


# ---------------------------------------------------------------- 5. one reconnect outcome per pair

def test_one_outcome_feeds_every_reconnect_check():
    """A replica with extra own-uuid GTIDs that also lacks purged ones: both refusals are reported from the same
    outcome (same announced set and verdict in the evidence), which pair_reconnect_outcome returns."""
    src = server("src", S, version="8.0.36", executed=f"{S}:1-100", purged=f"{S}:1-50",
                 logs=[("b.000003", f"{S}:1-50")])
    rep = server("rep", R, version="8.0.36", executed=f"{S}:1-10:101-102")
    ch = channel("", f"{S}:1-10:101-102")
    rep_o, src_o = in_order(rep, src)
    findings = run_pair_checks(rep_o, ch, src_o, None, FleetContext())
    more, purged = one(findings, "replica_has_more_gtids"), one(findings, "source_purged_required_gtids")
    outcome = pair_reconnect_outcome(rep_o, ch, src_o, None)
    assert outcome.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS
    assert outcome.purge_verdict is ReconnectKind.SOURCE_PURGED_REQUIRED
    assert more.gtid_set == outcome.offending and purged.gtid_set == outcome.missing == G(f"{S}:11-50")
    for f in (more, purged):
        assert f.evidence["replica_announced_gtid_set"] == outcome.announced.to_text(multiline=False)
        assert f.evidence["reconnect_outcome"] == "replica_has_more_gtids"


def test_no_outcome_without_auto_position():
    """A channel without AUTO_POSITION has no reconnect outcome, so no reconnect check runs."""
    src = server("src", S, executed=f"{S}:1-100", purged=f"{S}:1-50", logs=[("b.000003", f"{S}:1-50")])
    rep = server("rep", R, executed=f"{S}:1-10")
    assert pair_reconnect_outcome(rep, channel("", f"{S}:1-10", auto="0"), src, None) is None


# ---------------------------------------------------------------- 6. two thread errors, two finding keys

def test_io_and_sql_errors_have_distinct_finding_keys():
    """Both threads failed: two findings whose finding_key (sha1 of check_id|server|source|channel, as the job
    computes it) differ. Before the fix both were 'replication_error' with one key and one was dropped."""
    from jobs.alerts import finding_key

    rep = server("rep", R, executed=f"{S}:1-5")
    ch = channel(f"{S}:1-5", f"{S}:1-5", io="No", sql="No", io_errno="13114", io_error="Got fatal error 1236",
                 sql_errno="1007", sql_error="Can't create database 'x'; database exists")
    findings = [f for f in pair(rep, ch, None) if f.check_id.startswith("replication_")]
    assert sorted(f.check_id for f in findings) == ["replication_applier_error", "replication_receiver_error"]
    keys = {finding_key(f.check_id, f.server, f.source, f.channel) for f in findings}
    assert len(keys) == 2


# ---------------------------------------------------------------- 7. master_info_repository, replica_parallel_type

@pytest.mark.parametrize(
    "variables, expected",
    [({"master_info_repository": "FILE", "relay_log_info_repository": "TABLE", "relay_log_recovery": "OFF"},
      "config_relay_log_recovery_off"),
     ({"slave_parallel_type": "DATABASE", "slave_parallel_workers": "4", "slave_preserve_commit_order": "OFF",
       "replica_parallel_workers": None, "replica_preserve_commit_order": None}, "config_parallel_applier_without_commit_order"),
     ({"replica_parallel_type": "LOGICAL_CLOCK", "replica_preserve_commit_order": "OFF"},
      "config_parallel_applier_without_commit_order")],
    ids=["5.7_master_info_file", "5.7_slave_parallel_type_database", "8.0.26_replica_parallel_type"],
)
def test_channel_config_branches_read_the_collected_variables(variables, expected):
    """Once the collector reads master_info_repository and (slave|replica)_parallel_type, check_channel_config's
    branches use them (old and new variable names alike)."""
    rep = server("rep", R, version="5.7.44", executed=f"{S}:1-5", **variables)
    f = one(pair(rep, channel(f"{S}:1-5", f"{S}:1-5"), None), expected)
    if expected == "config_relay_log_recovery_off":
        assert f.evidence["master_info_repository"] == "FILE"


def test_97_has_neither_variable_and_nothing_fires():
    """9.7.4 has neither variable (absent from SHOW GLOBAL VARIABLES, verified): None, and no repository finding."""
    rep = server("rep", R, version="9.7.4", executed=f"{S}:1-5", relay_log_recovery="OFF")
    assert (rep.master_info_repository, rep.replica_parallel_type, rep.relay_log_info_repository) == (None, None, None)
    assert "config_relay_log_recovery_off" not in ids(pair(rep, channel(f"{S}:1-5", f"{S}:1-5"), None))


# ---------------------------------------------------------------- 8. read order per pair

def _errant_pair(replica_at, source_at, channel_at=None):
    src = dataclasses.replace(server("src", S, executed=f"{S}:1-100"), read_at=source_at)
    rep = dataclasses.replace(server("rep", R, executed=f"{S}:1-103"), read_at=replica_at)
    extra = {"read_at": channel_at} if channel_at is not None else {}
    return run_pair_checks(rep, channel(f"{S}:90-103", f"{S}:1-103", **extra), src, None, FleetContext())


@pytest.mark.parametrize(
    "replica_at, source_at, channel_at, held",
    [(at(0), at(1), None, True), (at(1), at(0), None, False), (at(0), at(0), None, False),
     (None, at(1), None, None), (at(0), None, None, None), (at(0), at(2), at(3), False),
     (at(0), dt.datetime(2026, 11, 23, 2, 0, 1), None, None)],
    ids=["replica_first", "source_first", "same_instant", "replica_unknown", "source_unknown",
         "channel_read_after_source", "naive_vs_aware"],
)
def test_order_dependent_positives_are_unconfirmed_unless_the_replica_was_read_first(replica_at, source_at,
                                                                                     channel_at, held):
    """The replica has S:101-103 the source snapshot lacks -- true errant/refusal if the replica was read first,
    ordinary replication of writes the source made between the reads otherwise. Order held: critical; otherwise an
    unconfirmed warning naming the reason. Every pair finding records both read instants."""
    findings = _errant_pair(replica_at, source_at, channel_at)
    for check_id in ("errant_transactions", "replica_has_more_gtids"):
        f = one(findings, check_id)
        assert f.evidence["read_order"] == {True: "replica_first", False: "source_first_or_same",
                                            None: "unknown"}[held]
        if held:
            assert f.severity is Severity.CRITICAL and "unconfirmed" not in f.evidence
        else:
            assert f.severity is Severity.WARNING and f.title.startswith("Unconfirmed")
            assert "UNCONFIRMED" in f.detail and f.evidence["unconfirmed"]
    for f in findings:
        assert "replica_read_at" in f.evidence and "source_read_at" in f.evidence
    if source_at is not None and held is not None:
        assert one(findings, "errant_transactions").evidence["source_read_at"] == source_at.isoformat()


def test_every_pair_finding_records_both_read_instants():
    """Config, thread and relay-tail findings too (not only the set comparisons) carry both instants."""
    rep = dataclasses.replace(server("rep", R, executed=f"{S}:1-5", relay_log_recovery="OFF",
                                     relay_log_info_repository="FILE"), read_at=at(0))
    src = dataclasses.replace(server("src", S, executed=f"{S}:1-5"), read_at=at(1))
    ch = channel(f"{S}:1-5", f"{S}:1-5", auto="0", sql="No", io_errno="2003", io_error="cannot connect")
    findings = run_pair_checks(rep, ch, src, None, FleetContext())
    assert {"config_auto_position_off", "config_relay_log_recovery_off", "replication_receiver_error",
            "replication_stopped"} <= set(ids(findings))
    for f in findings:
        assert (f.evidence["replica_read_at"], f.evidence["source_read_at"], f.evidence["read_order"]) == (
            at(0).isoformat(), at(1).isoformat(), "replica_first")


@pytest.mark.parametrize("started, held", [(at(0.5), False), (at(2), True)], ids=["overlapping", "after"])
def test_source_read_start_instant_decides_when_known(started, held):
    """The replica's read must return before the source's read began: with read_started_at known it is used
    (replica returned at 1 s, source returned at 3 s but began at 0.5 s: the reads overlapped)."""
    src = dataclasses.replace(server("src", S, executed=f"{S}:1-100"), read_at=at(3), read_started_at=started)
    rep = dataclasses.replace(server("rep", R, executed=f"{S}:1-103"), read_at=at(1))
    f = one(run_pair_checks(rep, channel(f"{S}:90-103", f"{S}:1-103"), src, None, FleetContext()),
            "errant_transactions")
    assert (f.severity is Severity.CRITICAL) is held
    assert f.evidence["source_read_started_at"] == started.isoformat()


def test_server_snapshot_reads_read_at():
    """read_at (the collector's column, datetime or ISO text) is parsed; absent stays None."""
    s = server("x", S, read_at="2026-11-23T02:00:00.250000+00:00", read_started_at="2026-11-23T02:00:00.240000+00:00")
    assert s.read_at == dt.datetime(2026, 11, 23, 2, 0, 0, 250000, tzinfo=dt.timezone.utc)
    assert s.read_started_at == dt.datetime(2026, 11, 23, 2, 0, 0, 240000, tzinfo=dt.timezone.utc)
    assert (server("x", S).read_at, server("x", S).read_started_at) == (None, None)
