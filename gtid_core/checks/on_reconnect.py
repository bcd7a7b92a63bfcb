"""Pair checks of what the source will do on the replica's next AUTO_POSITION connect.

replica_has_more_gtids (refused: the replica has GTIDs of the source's own server_uuid the source
lacks), source_purged_required_gtids and silent_purged_gap (refused, or silently served, when the
replica lacks GTIDs the source purged) and replica_near_purge_horizon (one purge away from being
refused). All four only read the pair's one reconnect simulation (``_Pair.outcome``,
:func:`gtid_core.reconnect.reconnect_outcome`), so they cannot drift apart.
"""
from __future__ import annotations

from gtid_core.checks.catalogue import CHECKS, _short, _text
from gtid_core.checks.pair import _Pair
from gtid_core.findings import Finding, empty_transaction_sql
from gtid_core.reconnect import (
    ER_MASTER_HAS_PURGED_REQUIRED_GTIDS,
    ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
    ReconnectKind,
)

__all__ = [
    "check_replica_has_more_gtids",
    "check_replica_near_purge_horizon",
    "check_source_purged_required_gtids",
]


def check_replica_has_more_gtids(pair: _Pair) -> list[Finding]:
    """replica_has_more_gtids: the source would refuse this replica with
    ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER on its next AUTO_POSITION connect.

    Derived from the pair's one reconnect outcome (``pair.outcome``, step 1 of
    :func:`gtid_core.reconnect.simulate_auto_position_reconnect`): the GTIDs of the source's own
    server_uuid -- every tag of it on 8.3+, as a real 9.7.4 source refuses an unknown
    ``source_uuid:tag:N`` -- in the set the replica would announce (:func:`announced_gtid_set`,
    including the 5.6.15-5.7.5 last-retrieved-GTID rule), against the source's gtid_executed.
    Per release line (server source cited in gtid_core/versions.py and docs/checks.md): 5.6.23+
    ``mysql_binlog_send`` (sql/rpl_master.cc, ``is_subset_for_sid`` against gtid_executed) and
    5.7.6+ ``Binlog_sender::check_start_file`` (sql/rpl_binlog_sender.cc, against gtid_executed ∪
    gtid_owned). Sources before 5.6.23 (and 5.7.0-5.7.5) make no such check: nothing is reported
    here (errant_transactions still reports the extra GTIDs). No release line compares the whole set.

    Sound when the replica was read before its source, whose gtid_executed can only have grown:
    the offending set computed here is then at most the true one. When that order did not hold
    (or is unknown) the source may have executed those GTIDs between its read and the replica's,
    so the positive is an unconfirmed warning. Blind spots: the source's gtid_owned (in-flight
    transactions it would also count, 5.7.6+) is not read; a channel without AUTO_POSITION does
    not run this check on the server and is skipped here.
    """
    outcome = pair.outcome
    if outcome is None or outcome.kind is not ReconnectKind.REPLICA_HAS_MORE_GTIDS:
        return []
    offending = outcome.offending
    detail = (
        f"On its next connect with AUTO_POSITION, source {pair.source_name} will refuse replica "
        f"{pair.replica_name} with {ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER}: the replica has "
        f"{offending.count()} transaction(s) of the source's own server_uuid that the source does not "
        f"({_short(offending)}). Rule applied: {outcome.rule}. This usually means the source lost the end of "
        f"its binary log (crash with sync_binlog != 1) or the replica was written to directly."
    )
    return [pair.order_dependent_finding(
        "replica_has_more_gtids", f"{pair.source_name} would refuse {pair.replica_name}: replica has more GTIDs",
        detail, gtid_set=offending, evidence=pair.base_evidence(),
        remediation=CHECKS["replica_has_more_gtids"].remediation + "\n" + empty_transaction_sql(offending),
    )]


def check_source_purged_required_gtids(pair: _Pair) -> list[Finding]:
    """source_purged_required_gtids / silent_purged_gap: the replica lacks transactions the source
    no longer has in its binary logs.

    Derived from the pair's one reconnect outcome, steps 2 and 3 (``outcome.purge_verdict``,
    evaluated whatever step 1 says: the server stops at the first refusal, the audit reports
    both problems):

    * SOURCE_PURGED_REQUIRED -> source_purged_required_gtids: the 5.6.22+ / 5.7.6+ check
      (gtid_purged must be a subset of the announced set), or, on every version, the scan of
      ``find_first_log_not_in_gtid_set`` found no binary log whose Previous_gtids is a subset.
      The second is what refuses a replica behind an ordinary PURGE BINARY LOGS on a 5.6.21
      source: the oldest remaining file's Previous_gtids holds the purged GTIDs.
    * STREAMS_SKIPPING_PURGED -> silent_purged_gap: a source before 5.6.22 (or 5.7.0-5.7.5) whose
      scan DOES find a file to stream from although the replica lacks purged GTIDs -- after
      ``SET GLOBAL gtid_purged`` the first binary log's Previous_gtids is empty. The replica
      silently never receives them. With the binary-log list or a Previous_gtids unknown the
      outcome is UNDETERMINED and nothing is reported: refusal and silence cannot be told apart.

    Sound: purged GTIDs are in no binary log of the source, so a replica lacking them can never
    get them from it. Blind spot: with the planned order (replica read first), if the source
    purged, between the two reads, logs holding transactions the replica received in between,
    the finding is a false positive -- possible only for a replica lagging by the source's whole
    binary-log retention. A replica read after its source only makes the finding more certain.
    """
    outcome = pair.outcome
    if outcome is None:
        return []
    verdict = outcome.purge_verdict
    source = pair.source
    ev = pair.base_evidence()
    missing = outcome.missing if outcome.missing else None
    if verdict is ReconnectKind.SOURCE_PURGED_REQUIRED:
        if missing is not None and source.gtid_purged is not None and missing.is_subset(source.gtid_purged) \
                and (source.version is None or source.version.checks_purged_on_connect):
            detail = (
                f"Source {pair.source_name} has purged {missing.count()} transaction(s) that replica "
                f"{pair.replica_name} does not have ({_short(missing)}). On its next connect the source will "
                f"refuse it with {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS} (fatal error 1236 / 13114 'purged "
                f"required binary logs'). The replica cannot catch up from this source."
            )
            title = f"{pair.source_name} purged transactions {pair.replica_name} lacks"
        else:
            detail = (
                f"No binary log of source {pair.source_name} starts at a point replica {pair.replica_name} has "
                f"reached (no Previous_gtids is a subset of the replica's set"
                + (f"; the replica lacks {missing.count()} GTID(s) of the oldest one's: {_short(missing)}"
                   if missing is not None else "")
                + f"). On its next connect the source will refuse it with {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS}."
            )
            title = f"{pair.source_name} has no binary log to serve {pair.replica_name}"
        return [pair.finding("source_purged_required_gtids", title, detail, gtid_set=missing, evidence=ev)]
    if verdict is ReconnectKind.STREAMS_SKIPPING_PURGED and missing is not None:
        detail = (
            f"Source {pair.source_name} runs MySQL {source.version}, older than 5.6.22, which does not check "
            f"gtid_purged when a replica connects, and its binary-log scan would stream from {outcome.start_file}. "
            f"Replica {pair.replica_name} lacks {missing.count()} transaction(s) the source purged or was told it "
            f"has (SET GLOBAL gtid_purged: {_short(missing)}). The source streams what it has and the replica "
            f"silently never receives them: replication looks healthy but the replica is missing data."
        )
        ev["start_file"] = outcome.start_file
        return [pair.finding("silent_purged_gap", f"{pair.replica_name} silently lacks transactions "
                             f"{pair.source_name} purged", detail, gtid_set=missing, evidence=ev)]
    return []


def check_replica_near_purge_horizon(pair: _Pair) -> list[Finding]:
    """replica_near_purge_horizon: the source would serve this replica from its oldest binary log,
    which holds transactions the replica still lacks; one more purge and the source refuses it.

    Derived from the pair's one reconnect outcome (:func:`simulate_auto_position_reconnect`: the checks of
    ``Binlog_sender::check_start_file``, then ``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set``,
    which scans the binary logs newest to oldest and starts at the first whose Previous_gtids is a
    subset of the announced set). When that start file is the oldest one listed, no binary log
    before it is left: once it is purged, the next file's Previous_gtids contains the GTIDs the
    replica lacks from it, so no Previous_gtids is a subset any more and the source answers
    ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (and from 5.6.22 the grown gtid_purged already fails the
    earlier check). Verified on a live 9.7.4 pair (tests/core/test_checks_live.py): the finding,
    then one more PURGE BINARY LOGS, then START REPLICA is refused with 13114.

    What it proves, exactly: ``gtid_set`` is the GTIDs the replica lacks (source gtid_executed minus
    the announced set, :func:`announced_gtid_set`) that were written to the oldest file, i.e. that
    lie in the next file's Previous_gtids (a file's Previous_gtids is everything written before
    it). With a single binary log that file holds every GTID after its own Previous_gtids, which the
    replica has: the whole needed set. Both are exact for the two reads. ``binary_log_margin`` in
    the evidence is how many binary logs the source can still purge before the reconnect fails:
    the position of the start file in SHOW BINARY LOGS, 0 whenever this check fires.

    It fires only when the replica needs something from that file: a caught-up replica whose start
    file is the oldest only because the source has one binary log gives nothing. With a single
    binary log it also needs the receiver known to be stopped: that file is the active one (no
    purge can remove it before a rotation) and, with a running or unknown receiver, GTIDs the
    source committed between the two reads are in it, so lag cannot be told from a read in
    flight. It is silent when the reconnect is already refused or already skips purged GTIDs
    (replica_has_more_gtids, source_purged_required_gtids, silent_purged_gap report those), for a
    channel without AUTO_POSITION, and when the source's binary log list or any Previous_gtids
    scanned is unknown (None): the start file is then not known.

    Blind spots: the replica is read before its source, and the source may have rotated or purged
    more since its own read (then the truth is worse: the replica may already be refused, which
    the next run shows as source_purged_required_gtids); the other way round, with two binary logs
    and a running receiver, a rotation between the reads can put GTIDs committed in between in
    the oldest file (a transient finding that does not repeat). The retention policy
    (binlog_expire_logs_seconds, manual purges, backup tools) and the age of the file are not
    read, so "next purge" may be seconds or days away. A running receiver reading that file is
    reported too: a lag of the whole retention is a risk, whether or not the source keeps an
    open file from being purged while its dump thread reads it.
    """
    source, outcome = pair.source, pair.outcome
    if outcome is None:
        return []
    logs = source.binary_logs
    if source.gtid_executed is None or not logs:
        return []
    announced = outcome.announced
    if outcome.kind is not ReconnectKind.STREAMS or outcome.start_file is None:
        return []
    names = [log.log_name for log in logs]
    margin = names.index(outcome.start_file)
    if margin != 0:
        return []
    oldest = logs[0]
    needed = source.gtid_executed - announced
    if len(logs) > 1:
        following = logs[1]
        if following.previous_gtids is None:   # the scan passed it, so this does not happen; stay silent
            return []
        in_oldest = needed & following.previous_gtids
    else:
        following = None
        if pair.channel.receiver_running is not False:
            return []
        in_oldest = needed
    if not in_oldest:
        return []
    receiver = {True: "running", False: "stopped", None: "in an unknown state"}[pair.channel.receiver_running]
    where = (f"{oldest.log_name}, the oldest of its {len(logs)} binary logs" if following is not None
             else f"{oldest.log_name}, its only binary log (purgeable after the next rotation)")
    detail = (
        f"On its next connect, source {pair.source_name} would stream to replica {pair.replica_name} from "
        f"{where}: the replica (receiver {receiver}) still lacks {in_oldest.count()} transaction(s) written to "
        f"that file ({_short(in_oldest)}). Margin: {margin} binary logs can be purged before the reconnect "
        f"fails. Once {oldest.log_name} is purged (binlog_expire_logs_seconds, PURGE BINARY LOGS) the source "
        f"keeps no copy of them and refuses the replica with {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS} (fatal "
        f"error 1236 / 13114 'purged required binary logs')."
        + (f" In all the replica lacks {needed.count()} transaction(s) of the source." if needed != in_oldest
           else "")
    )
    ev = pair.base_evidence()
    ev.update(
        start_file=oldest.log_name,
        start_file_previous_gtids=_text(oldest.previous_gtids),
        next_binary_log=following.log_name if following is not None else None,
        next_binary_log_previous_gtids=_text(following.previous_gtids) if following is not None else None,
        source_binary_log_count=len(logs),
        binary_log_margin=margin,
        replica_needs_gtid_set=_text(needed),
        receiver_running=pair.channel.receiver_running,
    )
    return [pair.finding("replica_near_purge_horizon",
                         f"{pair.replica_name} is one purge of {oldest.log_name} away from being refused by "
                         f"{pair.source_name}", detail, gtid_set=in_oldest, evidence=ev)]
