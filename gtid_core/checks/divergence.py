"""Pair checks of the replica's GTID sets against its source's and against each other.

errant_transactions (the replica has transactions its source never executed), replica_gtid_holes
(it lacks source transactions below its highest GTID) and replica_gtid_history_lost (its
gtid_executed forgot transactions it received and applied). :func:`split_errant` is shared with
the failover model.
"""
from __future__ import annotations

from gtid_core.checks.catalogue import CHECKS, _short, _text
from gtid_core.checks.pair import _last_retrieved_gtid, _Pair
from gtid_core.findings import Finding, Severity, empty_transaction_sql
from gtid_core.gtid_set import GtidSet
from gtid_core.snapshots import ServerSnapshot

__all__ = [
    "check_errant_transactions",
    "check_replica_gtid_history_lost",
    "check_replica_gtid_holes",
    "split_errant",
]


def _anonymous_assigned_uuid(pair: _Pair) -> str | None:
    kind = pair.channel.assign_gtids_to_anonymous_transactions_type
    if kind == "LOCAL":
        return pair.replica.server_uuid
    if kind == "UUID":
        return pair.channel.assign_gtids_to_anonymous_transactions_value
    return None


def split_errant(replica: ServerSnapshot, errant: GtidSet) -> tuple[GtidSet | None, GtidSet | None]:
    """(salvageable, lost) parts of ``errant`` GTIDs of ``replica``.

    *Salvageable*: not in the replica's gtid_purged, so still in its binary logs (it can send them
    to a replica, or they can be inspected with mysqlbinlog and neutralised). *Lost*: in gtid_purged
    only; no binary log of this server holds them any more. Promoted, such a server refuses every
    replica lacking them with ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, and nobody can tell what they
    changed: Vitess' rule is that a server with lost errant GTIDs must never be promoted. Critical
    on every version. (None, None) when gtid_purged was not read.
    """
    if replica.gtid_purged is None:
        return None, None
    lost = errant & replica.gtid_purged
    return errant - lost, lost


def check_errant_transactions(pair: _Pair) -> list[Finding]:
    """errant_transactions: transactions the replica has (executed or retrieved) that its source
    never executed, each UUID attributed to the fleet server that owns it.

    Computes ``(gtid_executed ∪ Retrieved_Gtid_Set) - source.gtid_executed`` over every UUID and
    tag, the whole set (unlike the 5.7+ reconnect rule, which looks only at the source's own
    UUID). GTIDs the replica assigns to anonymous transactions (ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS
    = LOCAL: the replica's own uuid; = UUID: the configured one) and GTIDs it gets through its other
    channels (``FleetContext.other_channels_gtids``) are not errant.

    Sound when the replica was read before its source: the source's gtid_executed only grows, so
    every GTID reported was missing on the source at a moment when the replica already had it.
    When that order did not hold or is unknown (``pair.read_order``), a GTID the source executed
    between its read and the replica's later read looks errant: the finding is then an unconfirmed
    warning naming the reason. Blind spots:
    with ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS = LOCAL, local writes on the replica share its uuid
    with the assigned GTIDs and are not reported; a write on the replica between the two reads is
    seen at the next run; a source that ran RESET MASTER looks as if the replica were errant (see
    gtid_executed_regressed on the source).

    The evidence splits the errant GTIDs (:func:`split_errant`) into *salvageable* (still in the
    replica's binary logs) and *lost* (in its gtid_purged only): lost errant GTIDs make the
    replica unsafe to promote on every version (failover_candidate_unsafe says what promoting it
    would do).

    A replica that is a Group Replication member (``FleetContext.replica_group``: the replica group
    of two groups joined by this channel) has its group's own view changes, which its source never
    has (:class:`gtid_core.checks.pair.ReplicaGroup`): GTIDs of group_replication_view_change_uuid
    are left out. With AUTOMATIC before 8.3.0 the view changes share the group name with the
    writes the group certified, so the group name's GTIDs can be either: alone they make an
    ``info`` finding (its set: view changes and writes together), never a warning or a critical;
    beside other errant GTIDs they are named in the evidence and left out of the set.

    A multi-source replica's GTIDs that came through none of its channels (in no channel's
    Retrieved_Gtid_Set and no channel source's gtid_executed: writes on the replica itself) are
    errant for each of its channels whose source was read, one and the same set. They are reported
    once, on the first of those channels by name whose source was read after the replica, else the
    first by name (``FleetContext.shared_errant_channel``), so that their severity is confirmed
    whenever one channel's read order confirms them; the other
    channels leave them out and name that channel in their evidence when they report anything else.
    The remediation runs the empty transactions on that channel's source, and names the other
    sources that would do as well: once one source has them, the other channels count them as
    theirs (``other_channels_gtids``). A channel with ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS leaves
    out the GTIDs it assigns, so when the reporting channel assigns them the others do not report
    them either.
    """
    if pair.source is None or pair.source.gtid_executed is None or pair.replica_set is None:
        return []
    errant = pair.replica_set - pair.source.gtid_executed
    if pair.fleet.other_channels_gtids is not None:
        errant = errant - pair.fleet.other_channels_gtids
    assigned_uuid = _anonymous_assigned_uuid(pair)
    excluded = None
    if assigned_uuid:
        excluded = errant.for_uuid(assigned_uuid)
        errant = errant - excluded
    view_changes = ambiguous = GtidSet.EMPTY
    group = pair.fleet.replica_group
    if group is not None:
        view_changes, ambiguous = group.view_change_gtids(errant, pair.replica.version)
        errant = errant - view_changes - ambiguous
    own_writes = errant - (pair.retrieved or GtidSet.EMPTY)   # through no channel (see the docstring)
    reporter = pair.fleet.shared_errant_channel
    reported_elsewhere = own_writes if reporter is not None and reporter != pair.channel_name else GtidSet.EMPTY
    errant = errant - reported_elsewhere
    if not errant:
        return _group_name_gtids(pair, ambiguous, group) if ambiguous else []
    attribution = []
    for uuid in sorted(errant.uuids()):
        owner = pair.fleet.owner_of(uuid)
        if owner is None and uuid == pair.replica.server_uuid:
            owner = pair.replica_name
        part = errant.for_uuid(uuid)
        attribution.append(f"{uuid} ({owner or 'not in the fleet registry'}): {part.count()} GTID(s) {_short(part, 120)}")
    consequence = (
        "Replication keeps running (a source compares at most its own server_uuid on connect, and sources before "
        "5.6.23 / 5.7.6 compare nothing), so nothing fails until a failover promotes this replica or makes another "
        "server replicate from it; then these transactions are refused or replicated where they should not be."
    )
    detail = (
        f"Replica {pair.replica_name} has {errant.count()} transaction(s) that its source {pair.source_name} "
        f"never executed: " + "; ".join(attribution) + f". {consequence}"
    )
    ev = pair.base_evidence()
    ev["errant_attribution"] = "\n".join(attribution)
    if excluded:
        ev["excluded_anonymous_assigned"] = _text(excluded)
    if view_changes:
        ev["excluded_view_changes"] = _text(view_changes)
    if ambiguous:
        ev["group_name_gtids_ambiguous"] = _text(ambiguous)
        detail += (f" Not counted: {ambiguous.count()} GTID(s) of {pair.replica_name}'s group name "
                   f"({_short(ambiguous, 120)}): view changes or writes, which MySQL {pair.replica.version} "
                   "logs under that same name.")
    if reported_elsewhere:
        ev["errant_reported_on_channel"] = f"{_channel(reporter)}: {_text(reported_elsewhere)}"
        detail += (f" Not counted here: {reported_elsewhere.count()} GTID(s) that came through none of "
                   f"{pair.replica_name}'s channels ({_short(reported_elsewhere, 120)}), reported on its channel "
                   f"{_channel(reporter)}.")
    shared_with = _other_sources(pair) if reporter == pair.channel_name and own_writes else {}
    if shared_with:
        detail += (f" {own_writes.count()} of them came through none of {pair.replica_name}'s channels (none of its "
                   f"sources has them): they are errant for each of its channels and reported on this one, the "
                   + ("first by name whose source was read after the replica."
                      if reporter in (pair.fleet.confirmed_channels or ()) else "first by name."))
    salvageable, lost = split_errant(pair.replica, errant)
    ev["errant_salvageable"], ev["errant_lost"] = _text(salvageable), _text(lost)
    if lost:
        detail += (f" {lost.count()} of them are lost: in {pair.replica_name}'s gtid_purged only, no binary log "
                   f"holds them any more ({_short(lost, 120)}); promoted, {pair.replica_name} would refuse every "
                   "replica lacking them, and what they changed cannot be inspected: never promote it.")
    source = pair.source_name or "the source"
    remediation = CHECKS["errant_transactions"].remediation
    if not shared_with:
        remediation += (f"\nRun on {source} alone, never on {pair.replica_name}. {_HOW_THEY_SPREAD}\n"
                        + empty_transaction_sql(errant))
    else:
        brought = errant - own_writes    # this channel brought them: they belong to this source's cluster
        if brought:
            remediation += (f"\nFor the {brought.count()} GTID(s) this channel brought, run on {source} alone, never "
                            f"on {pair.replica_name}:\n" + empty_transaction_sql(brought))
        remediation += (
            f"\nThe {own_writes.count()} GTID(s) that came through none of {pair.replica_name}'s channels belong to "
            f"whichever cluster's data they changed. Run the SQL below (never on {pair.replica_name}) on {source}, "
            "or, if they belong to another channel's data, on that channel's source instead: "
            + ", ".join(f"{src} (channel {_channel(ch)})" for ch, src in sorted(shared_with.items()))
            + f". One source is enough: once one has them, {pair.replica_name} no longer counts them as errant on "
            f"any channel. {_HOW_THEY_SPREAD}\n" + empty_transaction_sql(own_writes))
    return [pair.order_dependent_finding(
        "errant_transactions", f"{pair.replica_name} has {errant.count()} errant transaction(s)",
        detail, gtid_set=errant, evidence=ev, remediation=remediation)]


#: Why an errant_transactions remediation commits its empty transactions on one source only.
#: From there they replicate to every replica of the topology, and a server that has a GTID
#: already skips it (the applier's GTID auto-skip), the errant replica included: committing them
#: on each replica as well is not needed. On an intermediate source they would be errant there in
#: turn, against its own source. Proven on 9.7.4 by ``jobs.sandbox.scenarios.repair_errant``
#: (tests/sandbox/test_scenarios.py: a pair, and a chain repaired from its top).
_HOW_THEY_SPREAD = ("They replicate from there to every replica, and each server that has them already skips them. "
                    "If that source is itself a replica, run them on the top of its chain instead (in a replication "
                    "group, on its primary). A replica behind an intermediate without log_replica_updates, or a "
                    "stopped or delayed one, gets them late or not at all: check each with SELECT GTID_SUBSET('<the "
                    "set>', @@GLOBAL.gtid_executed).")


def _channel(name: str | None) -> str:
    return f"'{name or ''}'"


def _other_sources(pair: _Pair) -> dict[str, str]:
    """The other channels of a multi-source replica whose source was read: name -> source."""
    return {ch: src for ch, src in (pair.fleet.channel_sources or {}).items() if ch != pair.channel_name}


def _group_name_gtids(pair: _Pair, ambiguous: GtidSet, group) -> list[Finding]:
    """The info finding of a group member whose only GTIDs its source lacks are of its group's
    name, on a version that logs view changes under that name (see check_errant_transactions)."""
    ev = pair.base_evidence()
    ev["group_name"] = group.group_name
    ev["group_name_gtids_ambiguous"] = _text(ambiguous)
    version = pair.replica.version
    detail = (
        f"Replica {pair.replica_name}, a member of group {group.group_name}, has {ambiguous.count()} GTID(s) of "
        f"its group's name that its source {pair.source_name} lacks ({_short(ambiguous, 120)}). "
        f"MySQL {version or '(version unknown)'} logs the group's view changes under the group name when "
        "group_replication_view_change_uuid is AUTOMATIC, so these are the group's own View_change transactions "
        "(no data; every healthy replica group has them), writes made in the group, or both: the sets the "
        "audit reads cannot tell them apart. Writes among them would be errant transactions."
    )
    remediation = (
        "To tell view changes from writes: list the group name's GTIDs in the binary logs of a member "
        "(mysqlbinlog; view changes are View_change events). From 8.0.26, set group_replication_view_change_uuid "
        "on every member (Group Replication restarted on all of them; InnoDB ClusterSet requires it): view "
        "changes then get that UUID, and a write in the group is reported as an errant transaction."
    )
    return [pair.finding(
        "errant_transactions",
        f"{pair.replica_name} has {ambiguous.count()} GTID(s) of its group's name: view changes or writes",
        detail, severity=Severity.INFO, gtid_set=ambiguous, evidence=ev, remediation=remediation)]


def check_replica_gtid_history_lost(pair: _Pair) -> list[Finding]:
    """replica_gtid_history_lost: Retrieved_Gtid_Set ⊄ gtid_executed although the applier has applied
    everything the receiver wrote.

    On a healthy replica every retrieved GTID ends in gtid_executed once the applier has caught up
    (a skipped or filtered transaction is committed empty with its GTID). If retrieved GTIDs are
    missing from gtid_executed with an idle applier, gtid_executed lost history: RESET MASTER /
    RESET BINARY LOGS AND GTIDS on the replica (observed on 9.7: Retrieved_Gtid_Set and the relay
    logs are kept, replication goes on, nothing errors; the source re-sends the transactions once
    the relay logs are discarded and the applier fails on them, e.g. 1007 for a CREATE DATABASE).
    Uses Retrieved_Gtid_Set, Executed_Gtid_Set and the positions of one SHOW REPLICA STATUS row.
    "Caught up" means Exec_Source_Log_Pos = Read_Source_Log_Pos in the same file (or "has read all
    relay log"); when that is unknown the check stays silent (a lagging applier explains the
    difference). Verified on 9.7.4: an idle healthy replica shows equal positions and "Replica has
    read all relay log"; a delayed (SOURCE_DELAY) or stopped applier shows Exec < Read. With a
    parallel applier Exec_Source_Log_Pos is the low-water mark, so it never claims too much.
    A RESET followed by SET GLOBAL gtid_purged covering the retrieved set is not a loss.

    The race it rules out: SHOW REPLICA STATUS fills Executed_Gtid_Set first (under
    global_sid_lock) and reads the positions last (under mi/rli->data_lock), in
    show_slave_status_send_data (rpl_slave.cc up to 8.0.25, rpl_replica.cc from 8.0.26). A transaction
    retrieved earlier but committed between the two reads is retrieved, not in the row's
    Executed_Gtid_Set, and yet covered by the row's Exec_Source_Log_Pos: a healthy busy replica
    looks as if it lost it. The positions themselves never run ahead of a commit:
    Xid_apply_log_event::do_apply_event installs the new group positions only after do_commit
    (the single-threaded applier), and mta_checkpoint_routine moves the low-water mark only past
    transactions the workers have committed (the multi-threaded one). So the collector reads
    @@GLOBAL.gtid_executed again right after such a row (``gtid_executed_reread``): everything
    the row's positions cover was committed before that later read, and only what it still lacks
    is reported (gtid_executed only grows, except by the RESET this check looks for). Without
    that read (older collections, the read failed) the row's own set is used, as before.

    Critical on 5.6.15-5.7.5 when the last retrieved GTID is among the lost ones (Bug #72392: it is
    left out of the announced set, fetched again, and applied twice); warning otherwise (the
    transactions are sent again whenever the relay logs are discarded, e.g. relay_log_recovery
    or RESET REPLICA).
    """
    retrieved = pair.retrieved
    executed = pair.channel.executed_gtid_set if pair.channel.executed_gtid_set is not None else pair.replica.gtid_executed
    if retrieved is None or executed is None:
        return []
    lost = retrieved - executed
    if not lost or pair.channel.applier_caught_up is not True:
        return []
    reread = pair.channel.gtid_executed_reread
    if reread is not None:
        lost = lost - reread           # committed between the row's two reads: not lost
        if not lost:
            return []
    version = pair.replica.version
    last = _last_retrieved_gtid(pair.channel, pair.tail)
    severity = Severity.WARNING
    consequence = (
        "The data contains these transactions but gtid_executed no longer says so: once the relay logs are "
        "discarded (RESET REPLICA, relay_log_recovery, a new source) the transactions are fetched and applied "
        "again, and after a failover this server hands out a wrong history."
    )
    if version is not None and version.bug_72392_exposed and last is not None and last in lost:
        severity = Severity.CRITICAL
        consequence = (
            f"MySQL {version} is exposed to Bug #72392: on the next reconnect it leaves the last retrieved GTID "
            f"{last} out of the set it announces (it is not in gtid_executed), the source sends it again and the "
            "replica applies it a second time."
        )
    detail = (
        f"Replica {pair.replica_name} received and applied {lost.count()} transaction(s) that are not in its "
        f"gtid_executed ({_short(lost)}), and its applier has nothing left to apply: its GTID history was reset. "
        + consequence
    )
    ev = pair.base_evidence()
    ev["replica_gtid_executed"] = _text(executed)
    ev["replica_gtid_executed_reread"] = _text(reread)
    ev["last_retrieved_gtid"] = str(last) if last else None
    remediation = (   # in the replica's words (runners: gtid_core.syntax), which say so for a known version
        f"After checking that the data contains them, restore the history on {pair.replica_name}: "
        f"SET GLOBAL gtid_purged = '+{lost.to_text(multiline=False)}'"
        + ("." if pair.replica.version is not None else
           "; (8.0+; before 8.0 gtid_purged can be set only while gtid_executed is empty, and RESET MASTER, "
           "which empties it, deletes the binary logs: commit an empty transaction per GTID instead).")
    )
    return [pair.finding("replica_gtid_history_lost",
                         f"{pair.replica_name} lost GTID history of {lost.count()} applied transaction(s)",
                         detail, severity=severity, gtid_set=lost, evidence=ev, remediation=remediation)]


def check_replica_gtid_holes(pair: _Pair) -> list[Finding]:
    """replica_gtid_holes: for a UUID (and tag), the source has GTIDs below the replica's highest
    GTID of that UUID that the replica neither executed nor retrieved.

    A replica receives each UUID's transactions in order, so a gap below its highest number means
    transactions were skipped (a gtid_purged set by hand that left ranges out, an empty transaction
    committed by hand for a real one, a parallel applier stopped out of order -- in-flight gaps are
    covered by Retrieved_Gtid_Set and are not reported). Sound: both sides only grow; the source's
    later read adds GTIDs mostly above the replica's highest, which are not counted. Blind spot:
    a gap the source itself has is invisible; the GTIDs above the replica's highest number are
    ordinary lag.
    """
    source = pair.source
    if source is None or source.gtid_executed is None or pair.replica_set is None:
        return []
    replica_set = pair.replica_set
    keys = {(uuid, tag) for uuid, tag, _, _ in source.gtid_executed}
    intervals = []
    for uuid, tag in keys:
        top = replica_set.max_gno(uuid, tag)
        if top is None:
            continue
        intervals.append((uuid, tag, 1, top))
    if not intervals:
        return []
    below = GtidSet.from_intervals(intervals)
    holes = (source.gtid_executed & below) - replica_set
    if not holes:
        return []
    purged = source.gtid_purged
    unrecoverable = holes & purged if purged is not None else None
    detail = (
        f"Replica {pair.replica_name} lacks {holes.count()} transaction(s) of its source {pair.source_name} below "
        f"GTIDs it already has ({_short(holes)}): they were skipped, not merely not yet received."
        + (f" {unrecoverable.count()} of them are purged on the source and cannot be fetched again."
           if unrecoverable else " The source still has them; a reconnect with AUTO_POSITION fetches them.")
    )
    ev = pair.base_evidence()
    return [pair.finding("replica_gtid_holes", f"{pair.replica_name} has holes in {pair.source_name}'s GTIDs",
                         detail, gtid_set=holes, evidence=ev)]
