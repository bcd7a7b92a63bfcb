"""Relay-log tails that do not start at a transaction boundary (issue 18, defect 8) and the sanitized
rows the collector stores (issue 23): the parser's entry state, the check on windows that lost the
dangling transaction's Gtid event, and where its GTID then comes from, on every release line.

Golden rows: ``relaylog_mysql97_receiver_stopped_mid_transaction.json`` (MySQL 9.7.4, receiver
stopped inside a large UPDATE whose Gtid event, GTID S:50, is at the applier's position).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gtid_core.errors import SnapshotError
from gtid_core.findings import Severity
from gtid_core.gtid_set import GtidSet
from gtid_core.relay_log import (
    QUERY_KINDS,
    ParserState,
    RelayLogEvent,
    events_from_rows,
    gtid_event_missing,
    gtid_of_event,
    parse_relay_log,
    query_kind,
    sanitized,
    window_start,
)
from gtid_core.snapshots import Gtid
from tests.core.test_checks import R, S, channel, ids, one, pair, real, server

DATA = Path(__file__).resolve().parents[1] / "data"
G = GtidSet.parse
GOLDEN = "relaylog_mysql97_receiver_stopped_mid_transaction.json"
SRC97 = "b6e7b27c-e69b-11f1-8d81-02fc00000001"


def ev(kind, info=None, pos=1000, file="relay.000007"):
    return RelayLogEvent(file, pos, kind, 1, pos + 50, info)


def rows(*kinds, start=1000):
    """Events at increasing positions; ``kinds`` are Event_type or (Event_type, Info)."""
    out = []
    for i, k in enumerate(kinds):
        kind, info = k if isinstance(k, tuple) else (k, None)
        out.append(ev(kind, info, pos=start + 100 * i))
    return out


GTID = ("Gtid", f"SET @@SESSION.GTID_NEXT= '{S}:10'")
BEGIN, COMMIT = ("Query", "BEGIN"), ("Query", "COMMIT")
HEADERS = ("Format_desc", "Previous_gtids", "Rotate", "Format_desc")


# ---------------------------------------------------------------- where the parser starts

@pytest.mark.parametrize("kinds, start, expected_index, entry, end", [
    ((*HEADERS, GTID, BEGIN, "Table_map", "Write_rows"), 4, 4, ParserState.NONE, ParserState.DML),
    (("Write_rows", "Xid", GTID, BEGIN, "Table_map"), 1000, 2, ParserState.NONE, ParserState.DML),
    (("Write_rows", "Write_rows", "Write_rows"), 1000, 0, ParserState.DML, ParserState.DML),
    (("Update_rows", "Update_rows", "Xid", "Rotate"), 1000, 0, ParserState.DML, ParserState.NONE),
    (("Write_rows", COMMIT), 1000, 0, ParserState.DML, ParserState.NONE),
    ((("Query", "INSERT INTO t VALUES (1)"), "User var", ("Query", "UPDATE t SET v = 2")), 1000, 0,
     ParserState.DML, ParserState.DML),
    ((BEGIN, "Table_map", "Write_rows"), 1000, 0, ParserState.NONE, ParserState.DML),
    ((*HEADERS, "Table_map", "Write_rows"), 4, 4, ParserState.DML, ParserState.DML),
    (("Transaction_payload", "Rotate"), 1000, 0, ParserState.GTID, ParserState.NONE),
    (HEADERS, 4, 0, ParserState.NONE, ParserState.NONE),
], ids=["file-start", "gtid-inside", "rows-only", "rows-then-xid", "rows-then-commit", "statements",
        "begin-first", "file-rotated-mid-transaction", "payload-first", "headers-only"])
def test_window_start_and_end_state(kinds, start, expected_index, entry, end):
    """The parser starts at the first group opener, else inside the group the window began in; the end state follows."""
    events = rows(*kinds, start=start)
    index, state = window_start(events)
    assert (index, state) == (expected_index, entry)
    assert parse_relay_log(events[index:], initial_state=state).state is end


@pytest.mark.parametrize("kinds, start", [
    (("Rotate", "Format_desc"), 1000),
    (("Intvar", "User var", ("Query", "CREATE TABLE t2 SELECT @a")), 1000),
    (("User var",), 1000),
], ids=["ignorable-only-mid-file", "could-be-a-ddl-group", "one-pre-statement"])
def test_window_start_unknown(kinds, start):
    """Windows whose entry state the rows cannot tell: None, never a guess."""
    assert window_start(rows(*kinds, start=start))[1] is None


def test_golden_window_without_the_gtid_event_ends_inside_the_transaction():
    """The last 100 events of the 9.7.4 capture (all Update_rows of GTID S:50, its Gtid event 158 events earlier):
    no Gtid event, entry DML, end DML; from the file start the parser agrees."""
    all_rows = events_from_rows(json.loads((DATA / GOLDEN).read_text())["relay_tail"])
    window = all_rows[-100:]
    assert gtid_event_missing(window)
    index, state = window_start(window)
    assert (index, state) == (0, ParserState.DML)
    assert parse_relay_log(window, initial_state=state).state is ParserState.DML
    whole = parse_relay_log(all_rows)
    assert whole.state is ParserState.DML and whole.dangling_gtid == Gtid(SRC97, None, 50)


# ---------------------------------------------------------------- sanitized rows (issue 23)

@pytest.mark.parametrize("info, kind", [
    ("BEGIN", "BEGIN"), ("COMMIT", "COMMIT"), ("ROLLBACK", "ROLLBACK"), ("ROLLBACK TO sp1", "statement"),
    ("XA START X'7862',X'',1", "XA START"), ("XA END X'7862',X'',1", "XA END"),
    ("XA COMMIT X'7862',X'',1", "XA COMMIT"), ("XA ROLLBACK X'7862',X'',1", "XA ROLLBACK"),
    ("use `app`; INSERT INTO t VALUES ('secret')", "statement"), ("use `app`; BEGIN", "BEGIN"),
    ("CREATE TABLE t (pan CHAR(16)) /* xid=9 */", "statement"), ("", None), (None, None),
], ids=lambda x: repr(x)[:24])
def test_query_kind(info, kind):
    """Query events are kept as their class only, the one the boundary parser acts on."""
    assert query_kind(info) == kind
    assert kind is None or kind in QUERY_KINDS


def test_sanitized_golden_rows_hold_no_text_and_parse_the_same():
    """Every row of the 9.7.4 workload (Rows_query, User var, XA, payloads, DDL) sanitized: no Info, Gtid events keep
    their GTID, Query events their class, and the parser gives the same state, GTIDs and rejections."""
    workload = json.loads((DATA / "relaylog_mysql97_workload.json").read_text())["relaylog_events"]
    raw = events_from_rows(workload)
    clean = [sanitized(r) for r in workload]
    assert all(e.info is None for e in clean)
    texts = {str(v) for e in clean for v in dataclasses.asdict(e).values() if isinstance(v, str)}
    assert not any(secret in t for t in texts for secret in ("with rows_query", "@`uv`", "INSERT", "app2.t", "xid="))
    assert {e.query_kind for e in clean if e.event_type == "Query"} <= set(QUERY_KINDS)
    a, b = parse_relay_log(raw), parse_relay_log(clean)
    assert (a.state, a.completed_gtids, len(a.rejected)) == (b.state, b.completed_gtids, len(b.rejected))
    assert [gtid_of_event(e) for e in raw] == [gtid_of_event(e) for e in clean]
    for cut in (40, 57, 80):  # cut inside groups too
        assert parse_relay_log(raw[:cut]).dangling_gtid == parse_relay_log(clean[:cut]).dangling_gtid


def test_sanitized_rows_round_trip_through_the_table_columns():
    """A sanitized event stored as a relay_log_tail row (table column names) reads back equal."""
    e = sanitized(ev("Gtid", f"SET @@SESSION.GTID_NEXT= '{S}:tag_a:7'"))
    row = {"log_name": e.log_name, "pos": e.pos, "event_type": e.event_type, "event_server_id": e.server_id,
           "end_log_pos": e.end_log_pos, "gtid": e.gtid, "query_kind": e.query_kind, "seq": 3}
    assert RelayLogEvent.from_row(row) == e
    assert gtid_of_event(RelayLogEvent.from_row(row)) == Gtid(S, "tag_a", 7)
    assert sanitized(ev("Anonymous_Gtid", "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'")).gtid == "ANONYMOUS"


def test_sanitized_unreadable_gtid_stays_unreadable():
    """A Gtid event whose Info does not read keeps no GTID; the parser reports it instead of guessing."""
    e = sanitized(ev("Gtid", "garbled"))
    assert e.gtid is None and e.info is None
    with pytest.raises(SnapshotError):
        gtid_of_event(e)


# ---------------------------------------------------------------- the check on windows without the Gtid event

def golden_window(keep=100, **collector):
    """The 9.7.4 capture as the collector stores it with ``keep`` events kept: sanitized, head dropped."""
    rep, ch, src, tail = real(None, GOLDEN)
    window = [sanitized(e) for e in tail[-keep:]]
    ch = dataclasses.replace(ch, relay_tail_file="relay.000003", relay_tail_truncated=False,
                             relay_tail_first_event=len(tail) - keep, **collector)
    return rep, ch, src, window


def test_golden_window_warning_names_queueing_transaction():
    """9.7.4, tail of 100 events without the Gtid event: a warning with GTID S:50 from QUEUEING_TRANSACTION."""
    rep, ch, src, window = golden_window()
    f = one(pair(rep, ch, src, window), "incomplete_relay_log_tail")
    assert f.severity is Severity.WARNING and f.gtid_set == G(f"{SRC97}:50")
    assert f.evidence["dangling_gtid_from"] == "QUEUEING_TRANSACTION"
    assert f.evidence["relay_tail_events_dropped"] == 1200 and f.evidence["dangling_start"] is None
    assert "dropped 1200 events" in f.detail


def test_golden_window_after_a_restart_takes_the_gtid_from_the_applier_position():
    """QUEUEING_TRANSACTION empty (a server restart clears it): the Gtid event at Relay_Log_Pos names S:50, which is
    in neither gtid_executed nor Retrieved_Gtid_Set, with AUTO_POSITION: that is the dangling transaction."""
    rep, ch, src, window = golden_window(applier_event_type="Gtid", applier_event_gtid=f"{SRC97}:50",
                                         queueing_transaction=None)
    f = one(pair(rep, ch, src, window), "incomplete_relay_log_tail")
    assert f.gtid_set == G(f"{SRC97}:50")
    assert f.evidence["dangling_gtid_from"].startswith("the applier's position (relay.000003:8627144)")


@pytest.mark.parametrize("change", [
    dict(applier_event_gtid=f"{SRC97}:49"),                       # applied already (a parallel applier's checkpoint)
    dict(auto_position=False),                                    # the source may not send it again
    dict(applier_event_type="Query", applier_event_gtid=None),    # not a group start we can read
    dict(relay_log_file="relay.000002"),                          # the applier is in an older file
], ids=["applier-gtid-applied", "no-auto-position", "not-a-gtid-event", "applier-in-older-file"])
def test_golden_window_gtid_unknown_still_fires(change):
    """When neither QUEUEING_TRANSACTION nor a sound reading of the applier's position names the GTID, the warning
    still fires and says the GTID is unknown."""
    rep, ch, src, window = golden_window(applier_event_type="Gtid", applier_event_gtid=f"{SRC97}:50",
                                         queueing_transaction=None)
    f = one(pair(rep, dataclasses.replace(ch, **change), src, window), "incomplete_relay_log_tail")
    assert f.severity is Severity.WARNING and f.gtid_set is None
    assert "GTID is unknown" in f.detail and f.evidence["dangling_gtid"] is None


@pytest.mark.parametrize("io, truncated, keep_from_end", [("YES", False, 0), (None, False, 0), ("NO", True, 0),
                                                          ("NO", False, 158)],
                         ids=["receiver-running", "receiver-unknown", "truncated", "ends-after-a-complete-group"])
def test_golden_window_negatives(io, truncated, keep_from_end):
    """Running or unknown receiver, a tail not known to reach the end, or a window ending after a group's end:
    nothing, even with the head dropped."""
    rep, ch, src, tail = real(None, GOLDEN)
    window = [sanitized(e) for e in tail[-300:len(tail) - keep_from_end]]
    if keep_from_end:  # end the window with a complete group: rows of S:49 then its Xid
        window = [sanitized(e) for e in tail[1000:1142]]
        assert window[-1].event_type == "Xid" and gtid_event_missing(window[-50:])
        window = window[-50:]
    ch = dataclasses.replace(ch, relay_tail_file="relay.000003", relay_tail_truncated=truncated,
                             relay_tail_first_event=1000, io_running=io, receiver_service_state=None)
    assert "incomplete_relay_log_tail" not in ids(pair(rep, ch, src, window))


def _dml_window(file="relay.000002"):
    """Row events of a transaction whose Gtid event and BEGIN were dropped; no end yet."""
    return [RelayLogEvent(file, 5000 + 100 * i, "Write_rows", 1, 9000 + 100 * i, None) for i in range(50)]


def _old(version, retrieved, executed, **collector):
    rep = server("rep", R, version=version, executed=executed)
    ch = channel(retrieved, executed, io="No", caught_up=False, old_names=True, relay_tail_file="relay.000002",
                 relay_tail_truncated="0", relay_tail_first_event="4000", **collector)
    return rep, ch


@pytest.mark.parametrize("version, severity", [("5.6.14-log", Severity.CRITICAL), ("5.6.20-log", Severity.WARNING)])
def test_before_576_the_gtid_is_retrieved_minus_executed(version, severity):
    """Before 5.7.6 the receiver put the dangling GTID in Retrieved_Gtid_Set on arrival: one retrieved, unapplied
    GTID is the dangling one (critical before 5.6.15)."""
    rep, ch = _old(version, f"{S}:1-10", f"{S}:1-9")
    f = one(pair(rep, ch, None, _dml_window()), "incomplete_relay_log_tail")
    assert f.severity is severity and f.gtid_set == G(f"{S}:10")
    assert f.evidence["dangling_gtid_from"] == "Retrieved_Gtid_Set minus gtid_executed"


def test_before_576_several_unapplied_gtids_are_candidates():
    """A lagging applier leaves several candidates: the finding fires (critical on 5.6.14), GTID unknown, candidates
    listed."""
    rep, ch = _old("5.6.14-log", f"{S}:1-12", f"{S}:1-9")
    f = one(pair(rep, ch, None, _dml_window()), "incomplete_relay_log_tail")
    assert f.severity is Severity.CRITICAL and f.gtid_set is None
    assert f.evidence["dangling_gtid_candidates"] == f"{S}:10-12"


def test_before_576_everything_retrieved_is_applied_gives_nothing():
    """Retrieved_Gtid_Set inside gtid_executed on 5.6: the dangling GTID (in Retrieved_Gtid_Set) is applied."""
    rep, ch = _old("5.6.14-log", f"{S}:1-10", f"{S}:1-10")
    assert "incomplete_relay_log_tail" not in ids(pair(rep, ch, None, _dml_window()))


def test_57_applier_position_names_the_gtid():
    """5.7.20 (no QUEUEING_TRANSACTION): the Gtid event at Relay_Log_Pos, in neither set, is the dangling one."""
    rep = server("rep", R, version="5.7.20-log", executed=f"{S}:1-9")
    ch = channel(f"{S}:1-9", f"{S}:1-9", io="No", caught_up=False, old_names=True, relay_tail_file="relay.000002",
                 relay_tail_truncated="0", relay_tail_first_event="4000", Relay_Log_File="relay.000002",
                 Relay_Log_Pos="4", applier_event_type="Gtid", applier_event_gtid=f"{S}:10")
    f = one(pair(rep, ch, None, _dml_window()), "incomplete_relay_log_tail")
    assert f.severity is Severity.WARNING and f.gtid_set == G(f"{S}:10")


def test_80_unknown_gtid_fires_without_a_gtid_set():
    """8.0.36 without QUEUEING_TRANSACTION or an applier event: a warning with the GTID unknown, no gtid_set."""
    rep = server("rep", R, version="8.0.36", executed=f"{S}:1-9")
    ch = channel(f"{S}:1-9", f"{S}:1-9", io="No", caught_up=False, relay_tail_file="relay.000002",
                 relay_tail_truncated="0", relay_tail_first_event="4000")
    f = one(pair(rep, ch, None, _dml_window()), "incomplete_relay_log_tail")
    assert f.severity is Severity.WARNING and f.gtid_set is None and "GTID is unknown" in f.detail


def test_ddl_shaped_window_is_unknown_not_a_positive():
    """Rows that could end a DDL group (pre-statement events and one statement): nothing."""
    rep = server("rep", R, version="8.0.36", executed=f"{S}:1-9")
    ch = channel(f"{S}:1-9", f"{S}:1-9", io="No", caught_up=False, relay_tail_file="relay.000002",
                 relay_tail_truncated="0", relay_tail_first_event="4000")
    window = [RelayLogEvent("relay.000002", 5000, "User var", 1, 9000, None),
              RelayLogEvent("relay.000002", 5100, "Query", 1, 9100, None, query_kind="statement")]
    assert "incomplete_relay_log_tail" not in ids(pair(rep, ch, None, window))
