"""Pair check of the newest relay log's last transaction: incomplete_relay_log_tail.

Runs the server's transaction boundary parser (:mod:`gtid_core.relay_log`) over the end of the
newest relay log, and, when the dangling transaction's Gtid event is not among the rows read,
finds its GTID elsewhere (:func:`_dangling_gtid_elsewhere`) or says it is unknown.
"""
from __future__ import annotations

from dataclasses import dataclass

from gtid_core.checks.catalogue import _short, _text
from gtid_core.checks.pair import _Pair
from gtid_core.errors import GtidParseError, SnapshotError
from gtid_core.findings import Finding, Severity
from gtid_core.gtid_set import GtidSet
from gtid_core.relay_log import ParserState, is_gtid_event, is_gtid_type, parse_relay_log, window_start
from gtid_core.snapshots import Gtid
from gtid_core.versions import MySQLVersion

__all__ = ["check_incomplete_relay_log_tail"]


@dataclass(frozen=True)
class _Dangling:
    """Where the GTID of a dangling transaction whose Gtid event is not in the relay tail comes
    from: ``gtid`` and ``source``, or ``candidates`` (one of them), or nothing (unknown);
    ``applied`` when the transaction is known to be in gtid_executed (nothing can be lost)."""

    gtid: Gtid | None = None
    source: str | None = None
    candidates: GtidSet | None = None
    applied: bool = False


def _dangling_gtid_elsewhere(pair: _Pair) -> _Dangling:
    """The GTID of the transaction the newest relay log ends inside when its Gtid event is not
    among the rows read (the collector kept a window smaller than the transaction). In order:

    1. QUEUEING_TRANSACTION (performance_schema.replication_connection_status, 8.0.2+). The
       receiver records it right after writing a Gtid-type event to the relay log
       (``queue_event``: ``mi->started_queueing(gtid, ...)``, sql/rpl_replica.cc) and clears it
       only when the group's last event is written (``finished_queueing()`` in
       ``MYSQL_BIN_LOG::after_write_to_relay_log``, sql/binlog.cc, which also adds the GTID to
       Retrieved_Gtid_Set) or when an AUTO_POSITION receiver (re)connects
       (``mi->clear_queueing_trx()`` after ``connected:`` in ``handle_slave_io``); stopping the
       receiver leaves it (observed on 9.7.4: it still names the transaction after STOP REPLICA
       IO_THREAD). So with the receiver stopped and the relay log ending inside a group, the last
       Gtid event the receiver wrote -- the one that opened that group -- is QUEUEING_TRANSACTION.
       A server restart empties it.
    2. The applier's position, 5.7.6+ (``applier_event_gtid``: the Gtid event at
       Relay_Log_File:Relay_Log_Pos, a group start, read by the collector when the newest relay
       log is the applier's). Its GTID g is the dangling one when g is in neither
       gtid_executed nor Retrieved_Gtid_Set and AUTO_POSITION is on: from 5.7.6 every complete
       group the receiver wrote is in Retrieved_Gtid_Set (added by ``after_write_to_relay_log``
       as above; at startup ``init_gtid_sets`` re-reads the relay logs through the same
       boundary parser), so g's group is incomplete; an incomplete group is followed by others
       only when the receiver resumed without re-fetching it, and an AUTO_POSITION receiver
       announces neither set, so the source sends g again (complete, hence in
       Retrieved_Gtid_Set: contradiction). On a multi-threaded applier Relay_Log_Pos is the
       checkpoint, whose group may already be applied: then g is in gtid_executed and nothing
       is concluded.
    3. Before 5.7.6: Retrieved_Gtid_Set minus gtid_executed. The receiver added the dangling
       GTID to Retrieved_Gtid_Set when its Gtid event arrived (seed 002), so it is in that
       difference unless it is in gtid_executed (then nothing can be lost): an empty difference
       means applied, one GTID is the dangling one, several leave it one of them.

    Anything else: unknown, and the finding says so.
    """
    ch, version = pair.channel, pair.replica.version
    executed, retrieved = pair.executed, pair.retrieved
    try:
        queueing = ch.queueing_gtid
    except GtidParseError:
        queueing = None
    if queueing is not None:
        return _Dangling(queueing, "QUEUEING_TRANSACTION")
    if (version is not None and version.has_boundary_parser and ch.applier_event_type is not None
            and is_gtid_type(ch.applier_event_type)
            and ch.relay_log_file == ch.relay_tail_file and ch.auto_position is True
            and executed is not None and retrieved is not None):
        try:
            gtid = ch.applier_gtid
        except GtidParseError:
            gtid = None
        if gtid is not None and gtid not in executed and gtid not in retrieved:
            return _Dangling(gtid, f"the applier's position ({ch.relay_log_file}:{ch.relay_log_pos})")
    if version is not None and not version.has_boundary_parser and retrieved is not None and executed is not None:
        pending = retrieved - executed
        if not pending:
            return _Dangling(applied=True)
        if pending.count() == 1:
            (uuid, tag, gno, _), = list(pending)
            return _Dangling(Gtid(uuid, tag, gno), "Retrieved_Gtid_Set minus gtid_executed")
        return _Dangling(candidates=pending)
    return _Dangling()


def check_incomplete_relay_log_tail(pair: _Pair) -> list[Finding]:
    """incomplete_relay_log_tail: the newest relay log ends inside a transaction while the
    receiver is stopped.

    What it needs: the END of the NEWEST relay log of the channel -- rows of ``SHOW RELAYLOG
    EVENTS IN <newest file>`` up to that file's end, starting anywhere. The channel snapshot
    must say which file the rows cover (``relay_tail_file``; every row must be from it) and that
    they reach its end (``relay_tail_truncated`` is False). Anything else is "unknown" and
    gives nothing: a capped tail that ends inside a transaction only shows where the cap fell,
    and a tail read from the applier's position in an older file says nothing about the newest
    one.

    Where the parser starts (:func:`gtid_core.relay_log.window_start`): at the first event that
    opens a group (Gtid-type, BEGIN) in state NONE; when the rows hold none, they lie inside a
    group that began before them -- a transaction larger than the rows the collector keeps
    (``relay_tail_first_event`` events were dropped before them), whose Gtid event was dropped
    with its head. That group is DML (state DML) unless the rows could all belong to a DDL
    group, which the rows cannot tell (unknown: nothing). So the size of the transaction does
    not matter: the end state is decided from the rows that end the file.

    The dangling GTID: from its Gtid event when it is among the rows; else from
    QUEUEING_TRANSACTION (8.0.2+), the applier's position (5.7.6+) or Retrieved_Gtid_Set minus
    gtid_executed (before 5.7.6), under the conditions :func:`_dangling_gtid_elsewhere` proves
    sound; else the finding still fires and says the GTID is unknown.

    What it cannot see: which relay log is the newest (the collector finds it; SHOW REPLICA STATUS
    names only the applier's file), events the receiver writes after the read, and a dangling
    anonymous transaction's identity (it has no GTID).

    A running (or unknown) receiver gives nothing, on every version and before any other test: the
    read caught a transaction in flight, which is what a delayed (SOURCE_DELAY), slow, restarted or
    busy replica shows all the time. Only then are the GTID sets consulted. Runs the server's
    Transaction_boundary_parser (:func:`parse_relay_log`). Severity follows the replica's version,
    as the seeds document:

    * before 5.6.15: critical -- the receiver added the GTID to Retrieved_Gtid_Set when the Gtid
      event arrived; the replica announces it on reconnect and the source never sends it again.
    * 5.6.15 .. 5.7.5: warning -- the replica leaves its last retrieved GTID out of the announced set
      when it is not in gtid_executed, so it is fetched again; Bug #72392 breaks that after a RESET.
    * 5.7.6+: warning (the group is re-fetched and truncated at restart -- observed on 9.7.4 --
      but the applier is stuck behind it); critical if the dangling GTID is nonetheless in
      Retrieved_Gtid_Set (announced on reconnect, never re-fetched).

    An unreadable tail gives an info finding (whether it ends inside a transaction is unknown).
    """
    relay_tail, ch = pair.tail, pair.channel
    if not relay_tail:
        return []
    if ch.receiver_running is not False:
        return []  # in flight (delayed, slow, busy, just restarted) or unknown: never a positive
    if ch.relay_tail_truncated is not False or not ch.relay_tail_file:
        return []  # not known to reach the end of the newest relay log
    if any(event.log_name != ch.relay_tail_file for event in relay_tail):
        return []  # rows from another file: not the newest relay log's last transaction
    first, entry = window_start(relay_tail)
    if entry is None:
        return []  # where the parser stands before the rows cannot be told: unknown
    try:
        result = parse_relay_log(relay_tail[first:], initial_state=entry)
    except SnapshotError as exc:
        return [pair.finding("incomplete_relay_log_tail", f"Relay log tail of {pair.replica_name} is unreadable",
                             f"The relay log tail of replica {pair.replica_name} (channel {ch.label}) "
                             f"could not be parsed, so whether it ends inside a transaction is unknown: {exc}",
                             severity=Severity.INFO, evidence={"error": str(exc)})]
    if result.state is ParserState.ERROR:
        last = result.last_event
        where = f"{last.log_name}:{last.pos} {last.event_type}" if last else "?"
        return [pair.finding("incomplete_relay_log_tail", f"Relay log tail of {pair.replica_name} is not parseable",
                             f"The transaction boundary parser stopped in state ERROR at {where} in the relay log of "
                             f"replica {pair.replica_name}: an event it does not know. Whether the log ends inside a "
                             "transaction is unknown.", severity=Severity.INFO, evidence={"last_event": where})]
    if not result.ends_inside_transaction:
        return []
    opened = result.dangling_start
    found = _Dangling(result.dangling_gtid, "its Gtid event in the relay log")
    if opened is None or not is_gtid_event(opened):  # the group's Gtid event is not among the rows
        found = _dangling_gtid_elsewhere(pair)
        if found.applied:
            return []  # before 5.7.6 the dangling GTID is in Retrieved_Gtid_Set, all of which is applied
    version = pair.replica.version
    gtid = found.gtid
    retrieved = pair.retrieved
    executed = pair.executed
    if gtid is not None and executed is not None and gtid in executed:
        return []  # the transaction is applied; nothing can be lost
    in_retrieved = gtid is not None and retrieved is not None and gtid in retrieved
    remediation = _remedy(version, refetch_by_reset=in_retrieved)
    if version is not None and not version.has_boundary_parser:
        if version.leaves_out_last_retrieved_gtid:
            severity = Severity.WARNING
            why = (f"MySQL {version} leaves its last retrieved GTID out of the set it announces when that GTID is "
                   "not in gtid_executed, so the transaction is fetched again on reconnect -- unless gtid_executed "
                   "was reset (Bug #72392).")
        else:
            severity = Severity.CRITICAL
            why = (f"MySQL {version} added the GTID to Retrieved_Gtid_Set when its Gtid event arrived: the replica "
                   "announces it on reconnect and the source never sends the rest of the transaction. It will be "
                   "silently missing.")
    elif in_retrieved:
        severity = Severity.CRITICAL
        why = ("The dangling GTID is in Retrieved_Gtid_Set although its transaction is incomplete: the replica "
               "announces it on reconnect and will not receive the rest.")
    else:
        severity = Severity.WARNING
        why = ("The boundary parser kept the GTID out of Retrieved_Gtid_Set, so the transaction is fetched again "
               "whole when the receiver restarts, but the applier "
               "waits until then, and the source must still have it.")
    dropped = ch.relay_tail_first_event
    where = f"{opened.log_name}:{opened.pos}" if opened is not None else None
    if opened is not None:
        starts = f"that starts at {where}"
    elif ch.relay_tail_head_dropped is False:
        starts = "that began before the file's first event (the relay log was rotated inside it)"
    else:
        starts = (f"that began before the {len(relay_tail)} events read (the collector dropped "
                  f"{dropped if dropped is not None else 'the'} events before them, the transaction's Gtid event "
                  "among them)")
    if gtid is not None:
        named = f" with GTID {gtid} (from {found.source})"
    elif opened is not None and is_gtid_event(opened):
        named = " without a GTID (anonymous)"
    elif found.candidates:
        named = (f" whose GTID is unknown: one of the {found.candidates.count()} retrieved but unapplied GTIDs "
                 f"{_short(found.candidates, 120)}")
    else:
        named = (" whose GTID is unknown (no Gtid event among the rows, and neither QUEUEING_TRANSACTION nor the "
                 "applier's position names it)")
    detail = (
        f"The newest relay log ({ch.relay_tail_file}) of replica {pair.replica_name} (channel {ch.label}) ends "
        f"inside a transaction (parser state {result.state}) {starts}{named}, and the receiver is stopped. {why}"
    )
    ev = pair.base_evidence()
    ev.update(parser_state=str(result.state), dangling_gtid=str(gtid) if gtid else None,
              dangling_gtid_from=found.source if gtid else None,
              dangling_gtid_candidates=_text(found.candidates) if found.candidates else None,
              dangling_start=where, receiver_running=False, relay_tail_file=ch.relay_tail_file,
              relay_tail_truncated=False, relay_tail_rows=len(relay_tail), relay_tail_events_dropped=dropped,
              queueing_transaction=ch.queueing_transaction or None,
              last_event=f"{result.last_event.log_name}:{result.last_event.pos} {result.last_event.event_type}"
              if result.last_event else None)
    return [pair.finding("incomplete_relay_log_tail",
                         f"Relay log of {pair.replica_name} ends inside a transaction", detail,
                         severity=severity, gtid_set=gtid.as_set() if gtid else None, evidence=ev,
                         remediation=remediation)]


def _remedy(version: MySQLVersion | None, *, refetch_by_reset: bool) -> str | None:
    """The remediation for the replica's own version, in today's words (run_pair_checks spells
    them for that version: STOP SLAVE, MASTER_AUTO_POSITION); None (the catalogue's text, which
    covers both eras) when its version is unknown.

    Before 5.7.6 the receiver puts the GTID in Retrieved_Gtid_Set with its Gtid event, and a
    restart alone does not fetch the rest (before 5.6.15 never; 5.6.15-5.7.5 through the workaround
    Bug #72392 breaks), so the relay logs and that set are discarded: RESET SLAVE, then the
    auto-positioned receiver asks for everything not in gtid_executed again. The same holds from
    5.7.6 when the dangling GTID is nonetheless in Retrieved_Gtid_Set. Otherwise, from 5.7.6, the
    boundary parser kept it out and a restarted receiver fetches the transaction whole (observed on
    9.7.4: the partial group is truncated and fetched again)."""
    if version is None:
        return None
    if refetch_by_reset or not version.has_boundary_parser:
        return ("Make the replica fetch the transaction again. Once its applier has applied everything before "
                "it (it waits inside the dangling transaction): STOP REPLICA; RESET REPLICA (discards the relay "
                "logs and Retrieved_Gtid_Set, keeps the connection settings); START REPLICA. With "
                "SOURCE_AUTO_POSITION=1 the receiver then asks for everything "
                "not in gtid_executed, this transaction whole included; its source must still have it in its "
                "binary logs. Without auto-positioning, RESET loses the position: reposition by hand instead.")
    return (f"Restart the receiver: START REPLICA IO_THREAD. MySQL {version} kept the dangling GTID out of "
            "Retrieved_Gtid_Set, so the partial transaction is discarded and fetched again whole, and the applier "
            "goes on; its source must still have it in its binary logs.")
