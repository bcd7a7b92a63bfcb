"""The relay-log transaction boundary parser, over ``SHOW RELAYLOG EVENTS`` rows.

This mirrors the server's ``Transaction_boundary_parser`` (5.7.6+, ``rpl_trx_boundary_parser.cc``;
since 8.0 ``libs/mysql/binlog/event/trx_boundary_parser.cpp``): every event is classified by its
type (and, for Query events, by its statement), and a five-state machine follows the stream:

=======  ===============================================================================
NONE     outside a transaction
GTID     after a Gtid / Gtid_tagged_log_event / Anonymous_Gtid event
DDL      after a pre-statement event (Intvar, RAND, User var) outside BEGIN
DML      after Query(BEGIN) or Query(XA START), until COMMIT / ROLLBACK / Xid / XA_prepare
ERROR    an event the parser could not classify
=======  ===============================================================================

A group is DDL (``Gtid``, optional ``User var``/``Intvar``/``RAND``, one ``Query``), DML (``Gtid``,
``Query(BEGIN)``, statements and row events, then ``Query(COMMIT)``, ``Query(ROLLBACK)``, ``Xid``
or ``XA_prepare``), XA ROLLBACK / XA COMMIT after their own Gtid, or a ``Transaction_payload``
(a compressed transaction: one event that is the whole transaction after its Gtid).
``Format_desc``, ``Previous_gtids``, ``Rotate``, ``Stop`` and heartbeats are ignored wherever
they appear. A relay log that does not end in NONE ends inside a transaction.

``SHOW RELAYLOG EVENTS`` (like ``SHOW BINLOG EVENTS``) lists the events decompressed from a
``Transaction_payload`` right after it, each with the payload's ``End_log_pos`` (observed on
MySQL 9.7.4); the receiver's parser only sees the payload itself, so those rows are skipped.

**Sanitized rows.** The collector stores no statement text and no row data from the audited
servers (:func:`sanitized`): an event keeps its file, positions, type and server id, a Gtid-type
event the GTID it announces (``gtid``), a Query event only its class (``query_kind``: BEGIN,
COMMIT, ROLLBACK, XA START, XA END, XA COMMIT, XA ROLLBACK or ``statement``). The parser reads
either form.

**Windows.** A reader that keeps only the last events of a relay log may cut a transaction's
head off, ``Gtid`` event included. :func:`window_start` says where the parser can start on such a
window, and in which state, without guessing (see its docstring).
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from gtid_core.errors import GtidParseError, SnapshotError
from gtid_core.snapshots import Gtid, _Row

__all__ = [
    "QUERY_KINDS",
    "BoundaryParseResult",
    "ParserState",
    "RelayLogEvent",
    "events_from_rows",
    "gtid_event_missing",
    "gtid_of_event",
    "is_gtid_event",
    "is_gtid_type",
    "parse_relay_log",
    "query_kind",
    "sanitized",
    "window_start",
]


class ParserState(str, enum.Enum):
    """The server's ``enum_event_parser_state``."""

    NONE = "NONE"
    GTID = "GTID"
    DDL = "DDL"
    DML = "DML"
    ERROR = "ERROR"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class RelayLogEvent:
    """One row of ``SHOW RELAYLOG EVENTS`` (or ``SHOW BINLOG EVENTS``), raw or sanitized.

    A raw row has ``info`` (the server's Info column). A sanitized row (:func:`sanitized`, what
    the collector stores) has ``info`` None, ``gtid`` for a Gtid-type event (the GTID text it
    announces, ``ANONYMOUS`` for Anonymous_Gtid) and ``query_kind`` for a Query event.
    """

    log_name: str
    pos: int
    event_type: str
    server_id: int | None
    end_log_pos: int | None
    info: str | None
    gtid: str | None = None
    query_kind: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "RelayLogEvent":
        """Build from a row keyed Log_name, Pos, Event_type, Server_id, End_log_pos, Info (the
        server's columns, any case) or from a relay_log_tail-table row (``event_server_id``,
        ``gtid``, ``query_kind``; no Info)."""
        r = _Row(row, "SHOW RELAYLOG EVENTS")
        log_name = r.text("Log_name")
        pos = r.int("Pos")
        event_type = r.text("Event_type")
        if log_name is None or pos is None or not event_type:
            raise SnapshotError(f"SHOW RELAYLOG EVENTS: row {row!r} lacks Log_name, Pos or Event_type")
        return cls(
            log_name=log_name,
            pos=pos,
            event_type=event_type,
            server_id=r.int("Server_id", "event_server_id"),
            end_log_pos=r.int("End_log_pos"),
            info=r.text("Info"),
            gtid=r.text("gtid"),
            query_kind=r.text("query_kind"),
        )


class _Boundary(enum.Enum):
    GTID = "GTID"
    BEGIN_TRX = "BEGIN_TRX"
    END_TRX = "END_TRX"
    END_XA_TRX = "END_XA_TRX"
    PRE_STATEMENT = "PRE_STATEMENT"
    STATEMENT = "STATEMENT"
    INCIDENT = "INCIDENT"
    IGNORE = "IGNORE"
    TRANSACTION_PAYLOAD = "TRANSACTION_PAYLOAD"
    ERROR = "ERROR"


def _type_key(event_type: str) -> str:
    return event_type.strip().lower().replace(" ", "_")


_GTID_TYPES = {"gtid", "gtid_tagged_log_event", "gtid_tagged", "anonymous_gtid"}
_END_TRX_TYPES = {"xid", "xa_prepare"}
_PRE_STATEMENT_TYPES = {"intvar", "rand", "user_var"}
_STATEMENT_TYPES = {
    "execute_load_query", "table_map", "append_block", "begin_load_query", "rows_query",
    "write_rows", "update_rows", "delete_rows", "write_rows_v1", "update_rows_v1", "delete_rows_v1",
    "update_rows_partial", "partial_update_rows", "view_change",
}
_IGNORE_TYPES = {
    "rotate", "format_desc", "heartbeat", "heartbeat_log_event", "heartbeat_log_event_v2", "previous_gtids",
    "start_v3", "stop", "slave", "delete_file", "transaction_context", "ignorable",
    "large_transaction_header", "create_file", "new_load", "exec_load", "load",
}
_INCIDENT_TYPES = {"incident"}
_PAYLOAD_TYPES = {"transaction_payload"}


# The boundary each stored Query class is for the parser: only BEGIN / XA START open a group,
# COMMIT / ROLLBACK close one, XA ROLLBACK closes one opened by its own Gtid; every other statement
# (XA END, XA COMMIT, DDL, DML text) is a ``statement``, whose text is not kept.
_KIND_BOUNDARY = {
    "BEGIN": _Boundary.BEGIN_TRX, "XA START": _Boundary.BEGIN_TRX,
    "COMMIT": _Boundary.END_TRX, "ROLLBACK": _Boundary.END_TRX,
    "XA ROLLBACK": _Boundary.END_XA_TRX,
    "XA END": _Boundary.STATEMENT, "XA COMMIT": _Boundary.STATEMENT, "statement": _Boundary.STATEMENT,
}
#: The classes a Query event is stored as (:func:`query_kind`).
QUERY_KINDS = tuple(_KIND_BOUNDARY)


def query_kind(info: str | None) -> str | None:
    """The class of a Query event's statement, as the server's boundary parser tells it apart
    (BEGIN, XA START, COMMIT, ROLLBACK but not ROLLBACK TO, XA ROLLBACK; XA END and XA COMMIT are
    named for the reader; anything else is ``statement``). None when there is no statement (the
    parser's ERROR)."""
    if info is None:
        return None
    query = info.strip()
    if query.startswith("use ") and "; " in query:  # 'use `db`; STATEMENT' (old servers)
        query = query.split("; ", 1)[1].strip()
    if not query:
        return None
    upper = query.upper()
    if query == "BEGIN":
        return "BEGIN"
    if query.startswith("XA START"):
        return "XA START"
    if query == "COMMIT":
        return "COMMIT"
    if upper.startswith("ROLLBACK") and not upper.startswith("ROLLBACK TO "):
        return "ROLLBACK"
    for kind in ("XA ROLLBACK", "XA END", "XA COMMIT"):
        if upper.startswith(kind):
            return kind
    return "statement"


def _query_boundary(event: RelayLogEvent) -> _Boundary:
    """Classify a Query event by its statement as the server does (sanitized: by its kind)."""
    kind = event.query_kind if event.query_kind is not None else query_kind(event.info)
    if kind is None:
        return _Boundary.ERROR
    return _KIND_BOUNDARY.get(kind, _Boundary.STATEMENT)


def _boundary(event: RelayLogEvent) -> _Boundary:
    key = _type_key(event.event_type)
    if key in _GTID_TYPES:
        return _Boundary.GTID
    if key == "query":
        return _query_boundary(event)
    if key in _END_TRX_TYPES:
        return _Boundary.END_TRX
    if key in _PRE_STATEMENT_TYPES:
        return _Boundary.PRE_STATEMENT
    if key in _STATEMENT_TYPES:
        return _Boundary.STATEMENT
    if key in _INCIDENT_TYPES:
        return _Boundary.INCIDENT
    if key in _IGNORE_TYPES:
        return _Boundary.IGNORE
    if key in _PAYLOAD_TYPES:
        return _Boundary.TRANSACTION_PAYLOAD
    return _Boundary.ERROR


_S = ParserState

# (boundary, current state) -> (new state, accepted). Mirrors Transaction_boundary_parser::update_state:
# an event the server warns about is "not accepted" but the state still moves as the server moves it.
def _transition(boundary: _Boundary, state: ParserState) -> tuple[ParserState, bool]:
    if boundary is _Boundary.GTID:
        return _S.GTID, state is _S.NONE
    if boundary is _Boundary.BEGIN_TRX:
        return _S.DML, state in (_S.NONE, _S.GTID)
    if boundary is _Boundary.END_TRX:
        return _S.NONE, state is _S.DML
    if boundary is _Boundary.END_XA_TRX:
        return _S.NONE, state in (_S.DML, _S.GTID)
    if boundary is _Boundary.STATEMENT:
        if state is _S.DML:
            return _S.DML, True
        if state is _S.ERROR:
            return _S.NONE, False
        return _S.NONE, True
    if boundary is _Boundary.TRANSACTION_PAYLOAD:
        return _S.NONE, state is _S.GTID
    if boundary is _Boundary.PRE_STATEMENT:
        if state in (_S.NONE, _S.GTID):
            return _S.DDL, True
        if state is _S.ERROR:
            return _S.NONE, False
        return state, True
    if boundary is _Boundary.INCIDENT:
        return _S.NONE, True
    if boundary is _Boundary.IGNORE:
        return state, True
    return _S.ERROR, False


_GTID_NEXT_RE = re.compile(r"GTID_NEXT\s*=\s*'([^']*)'", re.IGNORECASE)


def is_gtid_type(event_type: str) -> bool:
    """True for the Event_type of the events that open a group with its GTID: Gtid,
    Gtid_tagged_log_event and Anonymous_Gtid."""
    return _type_key(event_type) in _GTID_TYPES


def is_gtid_event(event: RelayLogEvent) -> bool:
    """True for a Gtid, Gtid_tagged_log_event or Anonymous_Gtid event (:func:`is_gtid_type`)."""
    return is_gtid_type(event.event_type)


def _gtid_text(event: RelayLogEvent) -> str | None:
    """The GTID text a Gtid-type event announces: the sanitized ``gtid`` or the quoted value of
    its Info's ``SET @@SESSION.GTID_NEXT= '...'``; None when neither can be read."""
    if event.gtid is not None:
        return event.gtid.strip()
    match = _GTID_NEXT_RE.search(event.info or "")
    return match.group(1).strip() if match else None


def gtid_of_event(event: RelayLogEvent) -> Gtid | None:
    """The GTID a Gtid / Gtid_tagged_log_event announces, from its sanitized ``gtid`` or parsed
    from its Info (``SET @@SESSION.GTID_NEXT= 'uuid:5'`` or ``'uuid:tag:5'``); None for
    Anonymous_Gtid. Raises SnapshotError when a Gtid event's GTID cannot be read."""
    key = _type_key(event.event_type)
    if key not in _GTID_TYPES or key == "anonymous_gtid":
        return None
    text = _gtid_text(event)
    what = f"gtid {event.gtid!r}" if event.gtid is not None else f"Info {event.info!r}"
    if text is None:
        raise SnapshotError(
            f"SHOW RELAYLOG EVENTS: {event.event_type} event at {event.log_name}:{event.pos} has {what}, "
            "expected SET @@SESSION.GTID_NEXT= 'uuid:gno'"
        )
    if text.upper() == "ANONYMOUS":
        return None
    try:
        return Gtid.parse(text)
    except GtidParseError as exc:
        raise SnapshotError(
            f"SHOW RELAYLOG EVENTS: {event.event_type} event at {event.log_name}:{event.pos} has {what}: {exc}"
        ) from None


def sanitized(event: RelayLogEvent | Mapping[str, Any]) -> RelayLogEvent:
    """``event`` without statement text or row data: what the collector stores (issue 23).

    Kept: file, positions, type, server id; for a Gtid-type event the GTID text it announces
    (``ANONYMOUS`` for Anonymous_Gtid; None when its Info does not read as one, which the parser
    then reports as unreadable); for a Query event its :func:`query_kind`. Dropped: every Info
    (statements, Rows_query text, User var values, table names, XIDs)."""
    ev = event if isinstance(event, RelayLogEvent) else RelayLogEvent.from_row(event)
    gtid = kind = None
    key = _type_key(ev.event_type)
    if key == "anonymous_gtid":
        gtid = "ANONYMOUS"
    elif key in _GTID_TYPES:
        gtid = _gtid_text(ev)
    elif key == "query":
        kind = ev.query_kind if ev.query_kind is not None else query_kind(ev.info)
    return RelayLogEvent(ev.log_name, ev.pos, ev.event_type, ev.server_id, ev.end_log_pos, None,
                         gtid=gtid, query_kind=kind)


@dataclass(frozen=True)
class BoundaryParseResult:
    """Where the relay log ends, transaction-wise.

    ``state`` is the parser state after the last event (NONE: the relay log ends between
    transactions). When it ends inside a transaction, ``dangling_gtid`` is the GTID of that
    transaction (None if it was anonymous or no Gtid event was seen) and ``dangling_start`` the
    event that opened it. ``completed_gtids`` lists, in order, the GTIDs whose whole group is in
    the rows given; ``rejected`` the events the server's parser would warn about.
    """

    state: ParserState
    dangling_gtid: Gtid | None
    dangling_start: RelayLogEvent | None
    last_event: RelayLogEvent | None
    completed_gtids: tuple[Gtid, ...]
    rejected: tuple[RelayLogEvent, ...]
    event_count: int

    @property
    def ends_inside_transaction(self) -> bool:
        """True when the last event leaves the parser in GTID, DDL or DML."""
        return self.state in (ParserState.GTID, ParserState.DDL, ParserState.DML)


def parse_relay_log(
    events: Iterable[RelayLogEvent | Mapping[str, Any]],
    *,
    initial_state: ParserState = ParserState.NONE,
) -> BoundaryParseResult:
    """Run the transaction boundary parser over relay-log rows, oldest first.

    Rows may be RelayLogEvent values or plain ``SHOW RELAYLOG EVENTS`` mappings. The rows need not
    start at the beginning of a file; ``initial_state`` says where the parser stands before the
    first one (NONE when the tail starts at a file's first event, which is always between
    transactions).
    """
    state = initial_state
    dangling_gtid: Gtid | None = None
    dangling_start: RelayLogEvent | None = None
    completed: list[Gtid] = []
    rejected: list[RelayLogEvent] = []
    last: RelayLogEvent | None = None
    payload_end: tuple[str, int | None] | None = None
    count = 0
    for raw in events:
        event = raw if isinstance(raw, RelayLogEvent) else RelayLogEvent.from_row(raw)
        count += 1
        if payload_end is not None:
            if (event.log_name, event.end_log_pos) == payload_end and _type_key(event.event_type) not in _PAYLOAD_TYPES:
                continue  # an event decompressed from the Transaction_payload listed before it
            payload_end = None
        last = event
        boundary = _boundary(event)
        if boundary is _Boundary.TRANSACTION_PAYLOAD:
            payload_end = (event.log_name, event.end_log_pos)
        new_state, accepted = _transition(boundary, state)
        if not accepted:
            rejected.append(event)
        if boundary is _Boundary.GTID:
            dangling_gtid = gtid_of_event(event)
            dangling_start = event
        elif state is _S.NONE and new_state in (_S.DDL, _S.DML):
            dangling_gtid, dangling_start = None, event  # a group without a Gtid event (GTID_MODE=OFF)
        if new_state is _S.NONE and state in (_S.GTID, _S.DDL, _S.DML) and boundary is not _Boundary.IGNORE:
            if accepted and dangling_gtid is not None:
                completed.append(dangling_gtid)
            dangling_gtid, dangling_start = None, None
        state = new_state
    if state in (_S.NONE, _S.ERROR):
        dangling_gtid, dangling_start = None, None
    return BoundaryParseResult(
        state=state,
        dangling_gtid=dangling_gtid,
        dangling_start=dangling_start,
        last_event=last,
        completed_gtids=tuple(completed),
        rejected=tuple(rejected),
        event_count=count,
    )


def gtid_event_missing(events: Sequence[RelayLogEvent]) -> bool:
    """True when ``events`` hold events of a group (anything not ignorable) but no Gtid-type event:
    the GTID of the group they end in, if any, must come from elsewhere."""
    return (not any(map(is_gtid_event, events))
            and any(_boundary(e) is not _Boundary.IGNORE for e in events))


def window_start(events: Sequence[RelayLogEvent]) -> tuple[int, ParserState | None]:
    """Where the boundary parser can start on ``events`` (a window of one relay log, oldest first,
    running to the end the reader reached), and in which state: ``(i, state)`` means "parse
    ``events[i:]`` from ``state``"; ``state`` None means the state cannot be told.

    A window may start anywhere: at a file's first event, at the applier's position, or after
    events a reader dropped -- possibly the head of a transaction larger than the window,
    ``Gtid`` event included (issue 18). The rules, in order:

    1. From the first event that opens a group -- a Gtid-type event, or Query(BEGIN / XA START)
       -- in state NONE. Whatever precedes it belongs to earlier groups; a group opener starts a
       group whatever came before (a BEGIN cannot occur inside one), so the end state is exact.
    2. No opener and nothing but ignorable events (Format_desc, Previous_gtids, Rotate, ...):
       NONE when the window starts at a file's first event (Pos 4: a file with its headers only),
       else unknown.
    3. No opener and other events: the window starts inside a group that began before it (a
       relay log rotated inside a transaction before 8.0, or a reader that dropped the head). A
       Transaction_payload first is a compressed group whose Gtid was dropped: state GTID.
       Otherwise the group is DML -- state DML, so that only its end (Xid, COMMIT, ROLLBACK,
       XA_prepare) closes it -- unless every event could belong to a DDL group (pre-statement
       events, then at most one statement as the last event): a DDL group ends with its one
       statement, a DML group does not, and those events cannot tell which; unknown.
    """
    first = next((i for i, e in enumerate(events) if _boundary(e) is not _Boundary.IGNORE), None)
    if first is None:
        return 0, (ParserState.NONE if events and events[0].pos <= 4 else None)
    opener = next((i for i, e in enumerate(events)
                   if _boundary(e) in (_Boundary.GTID, _Boundary.BEGIN_TRX)), None)
    if opener is not None:
        return opener, ParserState.NONE
    if _boundary(events[first]) is _Boundary.TRANSACTION_PAYLOAD:
        return first, ParserState.GTID
    body = [e for e in events[first:] if _boundary(e) is not _Boundary.IGNORE]
    last = body[-1]
    could_be_ddl = (all(_boundary(e) is _Boundary.PRE_STATEMENT for e in body[:-1])
                    and (_boundary(last) is _Boundary.PRE_STATEMENT
                         or (_type_key(last.event_type) == "query" and _boundary(last) is _Boundary.STATEMENT)))
    return first, (None if could_be_ddl else ParserState.DML)


def events_from_rows(rows: Sequence[Mapping[str, Any]]) -> tuple[RelayLogEvent, ...]:
    """Convert ``SHOW RELAYLOG EVENTS`` rows to RelayLogEvent values (raises SnapshotError)."""
    return tuple(RelayLogEvent.from_row(row) for row in rows)
