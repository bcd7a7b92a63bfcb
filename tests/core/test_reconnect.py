"""The source's AUTO_POSITION reconnect logic, version by version, checked against a real 9.7 refusal."""
import json
from pathlib import Path

import pytest

from gtid_core.gtid_set import GtidSet
from gtid_core.reconnect import (
    ER_MASTER_HAS_PURGED_REQUIRED_GTIDS,
    ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
    ReconnectKind,
    announced_gtid_set,
    reconnect_outcome,
    simulate_auto_position_reconnect,
)
from gtid_core.snapshots import BinaryLog, Gtid, ServerSnapshot
from gtid_core.versions import MySQLVersion

DATA = Path(__file__).resolve().parents[1] / "data"
S = "3e11fa47-71ca-11e1-9e33-c80aa9429562"   # the source's own uuid
X = "4f22ab58-82db-22f2-af44-d91bb0530673"   # a former source (restored data)
Z = "5a33bc69-93ec-33a3-b055-ea2cc1641784"   # a replica's own uuid
G = GtidSet.parse


def source(version, executed, purged="", logs=None, uuid=S):
    return ServerSnapshot(
        name="src", server_uuid=uuid, version=MySQLVersion.parse(version),
        gtid_executed=G(executed), gtid_purged=G(purged),
        binary_logs=None if logs is None else tuple(BinaryLog(n, previous_gtids=None if p is None else G(p))
                                                   for n, p in logs))


RESTORED_LOGS = [("mysql-bin.000001", ""), ("mysql-bin.000002", f"{X}:1-100")]


def test_restored_source_before_5622_silently_skips():
    """Seed 000: a 5.6.21 source restored with SET GLOBAL gtid_purged streams from its first binary log
    (empty Previous_gtids) and the replica silently never gets the purged set."""
    src = source("5.6.21-log", f"{X}:1-100,{S}:1-3", f"{X}:1-100", RESTORED_LOGS)
    outcome = simulate_auto_position_reconnect(src, G(f"{X}:1-40"))
    assert outcome.kind is ReconnectKind.STREAMS_SKIPPING_PURGED
    assert outcome.start_file == "mysql-bin.000001"
    assert outcome.missing == G(f"{X}:41-100")
    assert not outcome.refused


def test_restored_source_from_5622_refuses():
    """Seed 000: from 5.6.22 the same source refuses with ER_MASTER_HAS_PURGED_REQUIRED_GTIDS."""
    src = source("5.6.22-log", f"{X}:1-100,{S}:1-3", f"{X}:1-100", RESTORED_LOGS)
    outcome = simulate_auto_position_reconnect(src, G(f"{X}:1-40"))
    assert outcome.kind is ReconnectKind.SOURCE_PURGED_REQUIRED
    assert outcome.error == ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
    assert outcome.missing == G(f"{X}:41-100")
    assert outcome.refused


@pytest.mark.parametrize("logs", [None, [("mysql-bin.000001", None), ("mysql-bin.000002", f"{X}:1-100")]],
                         ids=["binary_logs_unknown", "previous_gtids_unknown"])
def test_before_5622_without_the_scan_is_undetermined(logs):
    """Before 5.6.22 only the binary-log scan tells refusal from silent skipping: with the list or a
    Previous_gtids unknown the outcome is UNDETERMINED, never a silent skip (was: streams skipping purged)."""
    src = source("5.6.21-log", f"{X}:1-100,{S}:1-3", f"{X}:1-100", logs)
    outcome = simulate_auto_position_reconnect(src, G(f"{X}:1-40"))
    assert outcome.kind is ReconnectKind.UNDETERMINED and outcome.purge_verdict is ReconnectKind.UNDETERMINED


def test_outcome_keeps_purge_verdict_behind_a_more_gtids_refusal():
    """The server stops at ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER; the outcome still says steps 2-3 would refuse too."""
    src = source("8.0.36", f"{S}:1-100", f"{S}:1-50", [("b.000003", f"{S}:1-50")])
    outcome = simulate_auto_position_reconnect(src, G(f"{S}:1-10,{S}:101-102"))
    assert outcome.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS and outcome.offending == G(f"{S}:101-102")
    assert outcome.purge_verdict is ReconnectKind.SOURCE_PURGED_REQUIRED and outcome.missing == G(f"{S}:11-50")


def test_purged_logs_before_5622_refused_by_scan():
    """Seed 000, stop condition 2: logs purged normally, no Previous_gtids is a subset -> refused even pre-5.6.22."""
    src = source("5.6.20", f"{S}:1-500", f"{S}:1-300", [("b.000007", f"{S}:1-300"), ("b.000008", f"{S}:1-400")])
    outcome = simulate_auto_position_reconnect(src, G(f"{S}:1-200"))
    assert outcome.kind is ReconnectKind.SOURCE_PURGED_REQUIRED
    assert outcome.missing == G(f"{S}:201-300")


@pytest.mark.parametrize("version", ["5.6.21", "5.6.22", "5.6.23", "5.6.40", "5.7.44", "8.0.36-28", "9.7.4"])
def test_foreign_errant_gtids_never_refused(version):
    """Errant GTIDs of another uuid are accepted by every release line: 5.6.23+ compares only its own uuid
    (is_subset_for_sid, sql/rpl_master.cc), older 5.6 compares nothing; no line compares the whole set."""
    src = source(version, f"{S}:1-10", "", [("b.000001", "")])
    outcome = simulate_auto_position_reconnect(src, G(f"{S}:1-10,{Z}:1-2"))
    assert outcome.kind is ReconnectKind.STREAMS and outcome.start_file == "b.000001"


@pytest.mark.parametrize(
    "version, kind",
    [("5.6.14", ReconnectKind.STREAMS), ("5.6.21", ReconnectKind.STREAMS), ("5.6.22", ReconnectKind.STREAMS),
     ("5.6.23", ReconnectKind.REPLICA_HAS_MORE_GTIDS), ("5.7.5", ReconnectKind.STREAMS),
     ("5.7.6", ReconnectKind.REPLICA_HAS_MORE_GTIDS), ("8.0.36", ReconnectKind.REPLICA_HAS_MORE_GTIDS)],
    ids=["5.6.14", "5.6.21", "5.6.22", "5.6.23", "5.7.5", "5.7.6", "8.0.36"],
)
def test_own_uuid_extra_gtids_refused_only_where_the_source_checks(version, kind):
    """Extra GTIDs of the source's own uuid are refused from 5.6.23 (Bug#18789758) and 5.7.6 on; older sources
    stream from the newest file whose Previous_gtids is a subset and never notice (server source, docs/checks.md)."""
    src = source(version, f"{S}:1-10", "", [("b.000001", ""), ("b.000002", f"{S}:1-5")])
    outcome = simulate_auto_position_reconnect(src, G(f"{S}:1-12"))
    assert outcome.kind is kind
    if kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS:
        assert outcome.error == ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER and outcome.offending == G(f"{S}:11-12")
    else:
        assert outcome.start_file == "b.000002" and outcome.offending is None


@pytest.mark.parametrize("version", ["5.6.40", "8.0.36", "9.7.4"])
def test_replica_ahead_on_source_uuid_refused_everywhere(version):
    """A replica with GTIDs of the source's own uuid the source lacks (lost binlog tail) is refused by every version
    that makes the check (5.6.23+, 5.7.6+)."""
    src = source(version, f"{S}:1-10", "", [("b.000001", "")])
    outcome = simulate_auto_position_reconnect(src, G(f"{S}:1-12"))
    assert outcome.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS
    assert outcome.offending == G(f"{S}:11-12")


@pytest.mark.parametrize(
    "source_executed, replica, offending",
    [(f"{S}:1-10", f"{S}:1-10:t1:1", f"{S}:t1:1"), (f"{S}:1-10:t1:1", f"{S}:1-10:t1:1-3", f"{S}:t1:2-3")],
    ids=["tag_the_source_never_used", "higher_gno_of_a_tag_the_source_uses"],
)
def test_tagged_gtids_of_source_uuid_are_compared_on_8x(source_executed, replica, offending):
    """8.3+: every tag of the source's own uuid counts (a 9.7.4 source refuses uuid:tag:N it never had)."""
    src = source("9.7.4", source_executed, "", [("b.000001", "")])
    outcome = simulate_auto_position_reconnect(src, G(replica))
    assert outcome.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS
    assert outcome.offending == G(offending)


def test_tagged_gtids_of_other_uuid_not_compared_on_8x():
    """8.3+: tagged GTIDs of another uuid the source lacks do not stop replication (own uuid only)."""
    src = source("9.7.4", f"{S}:1-10", "", [("b.000001", "")])
    outcome = simulate_auto_position_reconnect(src, G(f"{S}:1-10,{Z}:t1:1-4"))
    assert outcome.kind is ReconnectKind.STREAMS


def test_scan_picks_newest_log_with_subset_previous():
    """Streaming starts at the newest binary log whose Previous_gtids is a subset of the replica's set."""
    logs = [("b.000001", ""), ("b.000002", f"{S}:1-10"), ("b.000003", f"{S}:1-20")]
    src = source("8.0.36", f"{S}:1-30", "", logs)
    assert simulate_auto_position_reconnect(src, G(f"{S}:1-15")).start_file == "b.000002"
    assert simulate_auto_position_reconnect(src, G(f"{S}:1-25")).start_file == "b.000003"


def test_unknown_inputs_are_undetermined():
    """Without the source's gtid_executed the outcome is UNDETERMINED, not a guess."""
    src = ServerSnapshot(server_uuid=S, version=MySQLVersion.parse("8.0.36"))
    assert simulate_auto_position_reconnect(src, G(f"{S}:1")).kind is ReconnectKind.UNDETERMINED


def test_real_97_refusal_matches_the_server():
    """Golden: a 9.7.4 source restored with SET GLOBAL gtid_purged refused its replica with 13114 naming the
    missing set; the simulation on the captured snapshots names the same set."""
    sc = json.loads((DATA / "relaylog_mysql97_scenarios.json").read_text())["source_restored_with_gtid_purged"]
    src = ServerSnapshot.from_rows(sc["source"]["variables"], binary_logs=sc["source"]["binary_logs"])
    status = sc["channel"]["replica_status"]
    replica_set = G(status["Retrieved_Gtid_Set"]) | G(status["Executed_Gtid_Set"])
    outcome = simulate_auto_position_reconnect(src, replica_set)
    assert outcome.kind is ReconnectKind.SOURCE_PURGED_REQUIRED
    assert "the missing transactions are 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:1-5'" in status["Last_IO_Error"]
    assert outcome.missing == G("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:1-5")


def test_real_97_healthy_streams_from_newest_log():
    """Golden: the healthy 9.7.4 pair streams from binlog.000004 (Previous_gtids ⊆ replica's set)."""
    sc = json.loads((DATA / "relaylog_mysql97_scenarios.json").read_text())["healthy"]
    src = ServerSnapshot.from_rows(sc["source"]["variables"], binary_logs=sc["source"]["binary_logs"])
    status = sc["channel"]["replica_status"]
    outcome = simulate_auto_position_reconnect(src, G(status["Retrieved_Gtid_Set"]) | G(status["Executed_Gtid_Set"]))
    assert outcome.kind is ReconnectKind.STREAMS and outcome.start_file == "binlog.000004"


def test_announced_set_bug_72392():
    """Seed 004: a 5.6.20 replica after RESET MASTER leaves its last retrieved GTID out of the announced set
    (it is not in the empty gtid_executed), so the source sends it again."""
    announced = announced_gtid_set(GtidSet.EMPTY, G(f"{S}:1-10"), replica_version=MySQLVersion.parse("5.6.20"),
                                   last_retrieved_gtid=Gtid(S, None, 10))
    assert announced == G(f"{S}:1-9")
    src = source("5.6.20", f"{S}:1-10", "", [("b.000001", "")])
    assert simulate_auto_position_reconnect(src, announced).kind is ReconnectKind.STREAMS


@pytest.mark.parametrize("version", ["5.6.14", "5.7.6", "9.7.4"])
def test_announced_set_without_workaround(version):
    """Before 5.6.15 and from 5.7.6 the replica announces Retrieved_Gtid_Set ∪ gtid_executed whole."""
    announced = announced_gtid_set(GtidSet.EMPTY, G(f"{S}:1-10"), replica_version=MySQLVersion.parse(version),
                                   last_retrieved_gtid=Gtid(S, None, 10))
    assert announced == G(f"{S}:1-10")


def test_announced_set_workaround_keeps_executed_last():
    """5.6.15-5.7.5: when the last retrieved GTID is in gtid_executed it stays announced."""
    announced = announced_gtid_set(G(f"{S}:1-10"), G(f"{S}:1-10"), replica_version=MySQLVersion.parse("5.6.30"),
                                   last_retrieved_gtid=Gtid(S, None, 10))
    assert announced == G(f"{S}:1-10")


# Tagged GTIDs towards a source older than 8.3: request_dump (sql/rpl_replica.cc) sets
# MYSQL_RPL_SKIP_TAGGED_GTIDS when the source's version is below 8.3 and the set is encoded without
# its tagged GTIDs; replayed from the server's own test in
# tests/core/test_mysql_test_replay.py::test_no_tagged_gtids_announced_to_a_source_before_83.
TAGGED_REPLICA = f"{S}:1-10,{S}:t1:1-2,{Z}:t2:1"


def _v(text):
    return None if text is None else MySQLVersion.parse(text)


@pytest.mark.parametrize(
    "replica_version, source_version, announced",
    [("9.7.4", "8.0.36", f"{S}:1-10"),
     ("8.3.0", "8.2.0", f"{S}:1-10"),
     ("9.7.4", "5.7.44", f"{S}:1-10"),
     (None, "8.0.36", f"{S}:1-10"),
     ("9.7.4", "8.3.0", TAGGED_REPLICA),
     ("8.4.3", "9.7.4", TAGGED_REPLICA),
     ("9.7.4", None, TAGGED_REPLICA)],
    ids=["9.7.4_to_8.0.36", "8.3.0_to_8.2.0", "9.7.4_to_5.7.44", "unknown_replica_holding_tags_to_8.0.36",
         "9.7.4_to_8.3.0", "8.4.3_to_9.7.4", "unknown_source_assumed_8.3+"],
)
def test_announced_set_tagged_gtids_by_source_version(replica_version, source_version, announced):
    """An 8.3+ replica leaves its tagged GTIDs out for a source older than 8.3 and keeps them for 8.3+; a replica
    of unknown version holding tags is 8.3+; a source of unknown version is taken as 8.3+ (tags announced)."""
    got = announced_gtid_set(G(TAGGED_REPLICA), G(f"{S}:1-10"), replica_version=_v(replica_version),
                             source_version=_v(source_version))
    assert got == G(announced)


def test_tagged_gtids_of_source_uuid_not_refused_by_a_source_before_83():
    """An 8.0.36 source never sees the tagged GTIDs of its own uuid a 9.7.4 replica holds: it streams (the
    replica has more only by GTIDs it does not send), and the rule says what was left out; an 8.4.3 source
    with the same sets refuses (positive control)."""
    replica = G(f"{S}:1-10,{S}:t1:1-2")
    old = reconnect_outcome(source("8.0.36", f"{S}:1-10", "", [("b.000001", "")]), gtid_executed=replica,
                            retrieved_gtid_set=GtidSet.EMPTY, replica_version=MySQLVersion.parse("9.7.4"))
    assert old.kind is ReconnectKind.STREAMS and old.offending == GtidSet.EMPTY
    assert old.announced == G(f"{S}:1-10")
    assert "2 tagged GTID(s) not announced" in old.rule and not old.version_assumed
    new = reconnect_outcome(source("8.4.3", f"{S}:1-10", "", [("b.000001", "")]), gtid_executed=replica,
                            retrieved_gtid_set=GtidSet.EMPTY, replica_version=MySQLVersion.parse("9.7.4"))
    assert new.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS and new.offending == G(f"{S}:t1:1-2")


def test_untagged_extra_gtids_still_refused_by_a_source_before_83():
    """Leaving the tags out does not hide untagged extra GTIDs of the source's uuid: an 8.0.36 source refuses a
    9.7.4 replica for S:11, and only for it."""
    outcome = reconnect_outcome(source("8.0.36", f"{S}:1-10", "", [("b.000001", "")]),
                                gtid_executed=G(f"{S}:1-11,{S}:t1:1"), retrieved_gtid_set=GtidSet.EMPTY,
                                replica_version=MySQLVersion.parse("9.7.4"))
    assert outcome.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS and outcome.offending == G(f"{S}:11")


def test_tagged_gtids_to_a_source_of_unknown_version_are_an_assumption():
    """With the source's version unknown its tagged GTIDs count as on 8.3+ (a refusal), and the outcome says it
    rests on that assumption (version_assumed, and the rule names it); a source whose gtid_executed holds a tagged
    GTID is 8.3+ for certain, so the rule does not call it an assumption."""
    unknown = ServerSnapshot(name="src", server_uuid=S, version=None, gtid_executed=G(f"{S}:1-10"),
                             gtid_purged=GtidSet.EMPTY,
                             binary_logs=(BinaryLog("b.000001", previous_gtids=GtidSet.EMPTY),))
    outcome = reconnect_outcome(unknown, gtid_executed=G(f"{S}:1-10,{S}:t1:1"), retrieved_gtid_set=GtidSet.EMPTY,
                                replica_version=MySQLVersion.parse("9.7.4"))
    assert outcome.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS and outcome.offending == G(f"{S}:t1:1")
    assert outcome.version_assumed and "source version unknown, taken as 8.3+" in outcome.rule
    proven = ServerSnapshot(name="src", server_uuid=S, version=None, gtid_executed=G(f"{S}:1-10,{Z}:t2:1"),
                            gtid_purged=GtidSet.EMPTY,
                            binary_logs=(BinaryLog("b.000001", previous_gtids=GtidSet.EMPTY),))
    outcome = reconnect_outcome(proven, gtid_executed=G(f"{S}:1-10,{S}:t1:1,{Z}:t2:1"),
                                retrieved_gtid_set=GtidSet.EMPTY, replica_version=MySQLVersion.parse("9.7.4"))
    assert outcome.kind is ReconnectKind.REPLICA_HAS_MORE_GTIDS and "source version unknown" not in outcome.rule
