"""The pair model: everything a pair check reads about one replication channel, resolved once.

A pair is a replica, one of its channels and that channel's source (None when unresolved), with
:class:`FleetContext` (what the fleet adds: who owns which server_uuid, the GTIDs of the replica's
other channels). :class:`_Pair` holds them with the pair's one reconnect simulation
(:func:`pair_reconnect_outcome`), and makes every pair finding carry both read instants.

**Read order and what it means for soundness.** The collector plans to read a replica BEFORE its
source. Between the two reads the source can only have gained transactions (its gtid_executed
grows), and its gtid_purged can only have grown. So a set computed as "replica minus source"
(errant transactions, ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER) can only be *smaller* than the truth: a
positive is trustworthy, and a transaction committed on the replica between the reads can be
missed until the next run. When the order did NOT hold -- the replica was read after its source
(a cycle, a retried or slow probe), or either instant is unknown -- the replica may legitimately
hold transactions the source executed after its own, earlier read, and "replica minus source"
can be a false positive. Every pair finding therefore records both read instants
(``replica_read_at``, ``source_read_at``, ``read_order``), and the two positives that rest on the
order (``errant_transactions``, ``replica_has_more_gtids``) are downgraded to an *unconfirmed
warning* saying why, never a silent critical. A set computed as "source's purged minus replica"
goes the other way: it can be *larger* than the truth with the planned order (the source purged,
between the two reads, logs holding transactions the replica received after it was read), which
needs a replica lagging by the source's whole binary-log retention, itself a real problem, and
each such check says so; a replica read after its source only makes those checks more sound.

:func:`read_order` and :func:`replica_executed` are shared with the failover model
(gtid_core/failover.py), so that both trust the same GTIDs under the same condition.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from gtid_core.checks.catalogue import CHECKS, _finding, _text
from gtid_core.errors import GtidCoreError, SnapshotError
from gtid_core.findings import Finding, Severity
from gtid_core.gtid_set import GtidSet
from gtid_core.reconnect import ReconnectOutcome, reconnect_outcome
from gtid_core.relay_log import RelayLogEvent, gtid_of_event
from gtid_core.snapshots import ChannelSnapshot, Gtid, ServerSnapshot
from gtid_core.versions import MySQLVersion

__all__ = [
    "FleetContext",
    "ReplicaGroup",
    "pair_reconnect_outcome",
    "read_order",
    "replica_executed",
    "replica_read_at",
    "source_read_started_at",
]


#: Group Replication logs no View_change transaction from 8.3.0 (WL#14539; a real 9.7.4 group's
#: binary log after three joins holds only its writes). Assumed, like the simulator's dialects:
#: which release stopped is not verified here.
_NO_VIEW_CHANGE_LOG_VERSION = MySQLVersion.of(8, 3, 0)


@dataclass(frozen=True)
class ReplicaGroup:
    """The replication group a replica of an asynchronous channel is a member of (the replica
    group of two groups joined by a channel, as InnoDB ClusterSet joins them): the UUIDs under
    which the group logs its own view changes.

    Before 8.3.0 every view in which a member joins is logged by each member as a transaction
    (a View_change_log_event wrapped in GTID, BEGIN and COMMIT events by
    ``Certification_handler::inject_transactional_events``, its GTID from
    ``Certifier::generate_view_change_group_gno``: plugin/group_replication/src/handlers/
    certification_handler.cc and certifier.cc of 8.0; committed locally by every member, with no
    original commit timestamp): of the group name, or from 8.0.26 of ``group_replication_view_change_uuid`` when it is not
    AUTOMATIC. Those transactions hold no data and are the replica group's own, so its source
    never has them. The manual gives the variable exactly that purpose ("Using an alternative UUID
    makes it easier to distinguish view change events from transactions received by the group
    from clients ... if your setup allows for failover between groups"), and MySQL Shell requires
    it for InnoDB ClusterSet (8.0.27+)."""

    group_name: str
    view_change_uuid: str | None = None     # None or 'AUTOMATIC': view changes use the group name

    def view_change_gtids(self, gtids: GtidSet, version: MySQLVersion | None) -> tuple[GtidSet, GtidSet]:
        """(view changes, ambiguous) among ``gtids`` (GTIDs of a member of version ``version``).

        *view changes*: the GTIDs of group_replication_view_change_uuid when it is set: on any
        version nothing else is logged under it. *ambiguous*: with AUTOMATIC before 8.3.0 (or the
        version unknown), the group name's GTIDs, because view changes and the writes the group
        certified share that UUID and no set the audit reads tells them apart. From 8.3.0 with
        AUTOMATIC the group name's GTIDs are writes (nothing is excluded). Blind spot: once
        view_change_uuid is set, view changes the group logged under its name before count as
        writes."""
        vcu = (self.view_change_uuid or "").strip()
        view_changes = GtidSet.EMPTY
        if vcu and vcu.upper() != "AUTOMATIC":
            try:
                view_changes = gtids.for_uuid(vcu)
            except GtidCoreError:
                view_changes = GtidSet.EMPTY          # not a UUID: nothing is excluded
            return view_changes, GtidSet.EMPTY
        if version is not None and version >= _NO_VIEW_CHANGE_LOG_VERSION:
            return GtidSet.EMPTY, GtidSet.EMPTY
        try:
            return GtidSet.EMPTY, gtids.for_uuid(self.group_name)
        except GtidCoreError:
            return GtidSet.EMPTY, GtidSet.EMPTY


@dataclass(frozen=True)
class FleetContext:
    """What a pair check needs to know about the fleet beyond the two servers.

    ``uuid_registry`` maps a server_uuid to the inventory name of the server that owns it (used to
    attribute errant GTIDs). ``replica_name`` / ``source_name`` override the snapshots' names.

    ``other_channels_gtids`` is what the replica legitimately gets through its *other* channels;
    those GTIDs are not errant for this channel. How to fill it:

    * ``None`` for a replica with a single channel (nothing to exclude).
    * For a multi-source replica, the union over every channel of the replica *except this one*
      of (a) that channel's Retrieved_Gtid_Set (same read as this channel) and (b) the
      gtid_executed of that channel's source when it is resolved (read after the replica, like
      every source). Never this channel's own source or Retrieved_Gtid_Set.
    * (b) is what makes it complete: Retrieved_Gtid_Set forgets whatever the relay logs no longer
      hold (RESET REPLICA, relay_log_recovery, and -- observed on 9.7.4 -- CHANGE REPLICATION
      SOURCE on a caught-up channel). With only (a), an unresolved other source's GTIDs applied
      before such a purge are reported as errant here. (a) still matters when that source is
      unresolved or was read before it gained what the channel retrieved.
    * Left ``None`` on a multi-source replica, every GTID of the other channels is reported as
      errant for this one (verified on a two-channel 9.7.4 replica, tests/core/test_checks_live.py).

    Only ``errant_transactions`` uses it: the source's reconnect checks compare the replica with
    the source's own gtid_executed (5.7+: only its own server_uuid), whatever other channels bring.

    ``channel_sources`` says, for a multi-source replica, which of its channels have a source that
    was read (its gtid_executed known): channel name -> the source's inventory name, this channel
    included when its source was read; ``None`` (or a single entry) for a one-channel replica. GTIDs
    that no channel brought (in no channel's Retrieved_Gtid_Set and no such source's
    gtid_executed: writes on the replica itself) are errant for every one of those channels
    alike, and ``errant_transactions`` reports them on one of them only
    (:attr:`shared_errant_channel`).

    ``confirmed_channels`` names the channels of ``channel_sources`` whose source was read after
    the replica (:func:`read_order` held): the reporting channel is the first of those by name, so
    that the replica's own writes are confirmed (critical) whenever one channel's order can confirm
    them; None or empty: the first of ``channel_sources`` by name.

    ``replica_group`` is the replication group the replica is a member of (None when it is in
    none): its own view changes are not errant (:class:`ReplicaGroup`).
    """

    uuid_registry: Mapping[str, str] = field(default_factory=dict)
    replica_name: str | None = None
    source_name: str | None = None
    other_channels_gtids: GtidSet | None = None
    replica_group: ReplicaGroup | None = None
    channel_sources: Mapping[str, str] | None = None
    confirmed_channels: frozenset[str] | None = None

    @property
    def shared_errant_channel(self) -> str | None:
        """The channel that reports the errant GTIDs no channel brought: the first by name of
        ``channel_sources`` whose read order held (``confirmed_channels``), else the first by name
        (None for a one-channel replica, which reports everything)."""
        if not self.channel_sources or len(self.channel_sources) < 2:
            return None
        confirmed = [ch for ch in self.channel_sources if ch in (self.confirmed_channels or ())]
        return min(confirmed or self.channel_sources)

    def owner_of(self, uuid: str) -> str | None:
        """The inventory name of the server owning ``uuid`` (case-insensitive), or None."""
        return self.uuid_registry.get(uuid) or self.uuid_registry.get(uuid.lower())


def _iso(at: _dt.datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def replica_read_at(replica: ServerSnapshot, channel: ChannelSnapshot) -> _dt.datetime | None:
    """When the replica's sets were last read: the later of its GTID-variable read and its
    channel-status read (Retrieved_Gtid_Set, Executed_Gtid_Set); None if the variable read's
    instant is unknown."""
    a, b = replica.read_at, channel.read_at
    if a is None:
        return None
    if b is None:
        return a
    try:
        return max(a, b)
    except TypeError:  # one naive, one aware: no order can be told
        return None


def source_read_started_at(source: ServerSnapshot) -> _dt.datetime | None:
    """When the source's read began: ``read_started_at``, else its ``read_at`` (end instant)."""
    return source.read_started_at or source.read_at


def read_order(replica: ServerSnapshot, channel: ChannelSnapshot,
               source: ServerSnapshot | None) -> tuple[bool | None, str]:
    """(held, why): held True when the replica's last read returned strictly before the source's
    read began, False when it did not, None when an instant is unknown or the two cannot be
    compared. Without the source's ``read_started_at`` its end instant stands in (a window as
    long as its one SELECT; the evidence says so).

    One function for the pair checks and the failover model, so that both trust a GTID the
    replica has and the source lacks under the same condition: the source's gtid_executed only
    grows, so it lacked that GTID when the replica was read only if the replica was read first.
    """
    rep = replica_read_at(replica, channel)
    src = source_read_started_at(source) if source is not None else None
    if rep is None or src is None:
        which = " and ".join(n for n, at in (("replica", rep), ("source", src)) if at is None)
        return None, f"the read instant of the {which} is unknown"
    try:
        before = rep < src
    except TypeError:
        return None, "the two read instants cannot be compared (one has a time zone, one has not)"
    if before:
        return True, f"the replica was read at {rep.isoformat()}, before its source ({src.isoformat()})"
    return False, (f"the replica was read at {rep.isoformat()}, not before its source ({src.isoformat()}): "
                   "the source may have executed, before the replica's read, transactions its own earlier "
                   "read does not show")


def replica_executed(replica: ServerSnapshot, channel: ChannelSnapshot) -> GtidSet | None:
    """A replica's gtid_executed from its two reads, the variable and the channel's
    Executed_Gtid_Set: their union (it only grows between them); None when neither was read."""
    a, b = replica.gtid_executed, channel.executed_gtid_set
    if a is None:
        return b
    return a if b is None else a | b


#: A statement of a remediation that acts on one channel (FOR CHANNEL on a named one).
_REPLICA_STATEMENT = re.compile(r"\b(START|STOP|RESET) (REPLICA|SLAVE)\b|CHANGE (REPLICATION SOURCE|MASTER)\b")


@dataclass(frozen=True)
class _Pair:
    """Everything a pair check reads, resolved once -- the reconnect simulation included."""

    replica: ServerSnapshot
    channel: ChannelSnapshot
    source: ServerSnapshot | None
    fleet: FleetContext
    replica_name: str
    source_name: str | None
    tail: list[RelayLogEvent] | None = None
    outcome: ReconnectOutcome | None = None   # None: no source, no AUTO_POSITION or replica set unknown

    @property
    def channel_name(self) -> str:
        return self.channel.channel_name

    @property
    def executed(self) -> GtidSet | None:
        """The replica's gtid_executed: the union of both reads (it only grows between them)."""
        return replica_executed(self.replica, self.channel)

    @property
    def retrieved(self) -> GtidSet | None:
        return self.channel.retrieved_gtid_set

    @property
    def replica_set(self) -> GtidSet | None:
        """Retrieved_Gtid_Set ∪ gtid_executed (None when gtid_executed is unknown)."""
        if self.executed is None:
            return None
        return self.executed | (self.retrieved or GtidSet.EMPTY)

    # --- read order ------------------------------------------------------------------------

    @property
    def replica_read_at(self) -> _dt.datetime | None:
        """When the replica's sets were last read (:func:`replica_read_at`)."""
        return replica_read_at(self.replica, self.channel)

    @property
    def source_read_started_at(self) -> _dt.datetime | None:
        """When the source's read began: ``read_started_at``, else its ``read_at`` (end instant)."""
        return None if self.source is None else source_read_started_at(self.source)

    @property
    def read_order(self) -> tuple[bool | None, str]:
        """(held, why): :func:`read_order` of this pair."""
        return read_order(self.replica, self.channel, self.source)

    def order_label(self) -> str:
        held, _ = self.read_order
        return {True: "replica_first", False: "source_first_or_same", None: "unknown"}[held]

    def read_evidence(self) -> dict:
        """Both read instants and whether the planned order held: in every pair finding."""
        return {
            "replica_read_at": _iso(self.replica_read_at),
            "source_read_at": _iso(self.source.read_at) if self.source is not None else None,
            "source_read_started_at": _iso(self.source.read_started_at) if self.source is not None else None,
            "read_order": self.order_label(),
        }

    def finding(self, check_id: str, title: str, detail: str, **kw) -> Finding:
        kw["evidence"] = {**self.read_evidence(), **dict(kw.get("evidence") or {})}
        remediation = kw.get("remediation")
        remediation = CHECKS[check_id].remediation if remediation is None else remediation
        multi_source = self.fleet.other_channels_gtids is not None or len(self.fleet.channel_sources or ()) > 1
        if _REPLICA_STATEMENT.search(remediation) and (self.channel_name or multi_source):
            # on a multi-source replica a statement without FOR CHANNEL acts on every channel: a
            # RESET REPLICA would throw away the other channels' relay logs too
            why = (f"This channel is named '{self.channel_name}'" if self.channel_name else
                   f"{self.replica_name} has other channels, and without FOR CHANNEL a statement acts on all of them")
            kw["remediation"] = (f"{remediation}\n{why}: add FOR CHANNEL '{self.channel_name or ''}' to each START, "
                                 "STOP or RESET REPLICA and CHANGE REPLICATION SOURCE TO statement above.")
        return _finding(check_id, self.replica_name, title, detail, source=self.source_name,
                        channel=self.channel_name, **kw)

    def order_dependent_finding(self, check_id: str, title: str, detail: str, **kw) -> Finding:
        """A positive whose soundness rests on "the replica was read before its source": at its
        default severity when the order held; otherwise an unconfirmed warning saying why."""
        held, why = self.read_order
        if held:
            return self.finding(check_id, title, detail, **kw)
        severity = Severity.WARNING if CHECKS[check_id].default_severity.rank >= Severity.WARNING.rank \
            else CHECKS[check_id].default_severity
        evidence = dict(kw.pop("evidence", None) or {})
        evidence["unconfirmed"] = why
        return self.finding(
            check_id, f"Unconfirmed: {title}",
            detail + f" UNCONFIRMED: {why}; this finding holds only if it repeats with the replica read first.",
            severity=severity, evidence=evidence, **kw)

    def base_evidence(self) -> dict:
        ev = {
            "replica_gtid_executed": _text(self.executed),
            "replica_retrieved_gtid_set": _text(self.retrieved),
            "replica_version": str(self.replica.version) if self.replica.version else None,
            **self.read_evidence(),
        }
        if self.source is not None:
            ev.update(
                source_gtid_executed=_text(self.source.gtid_executed),
                source_gtid_purged=_text(self.source.gtid_purged),
                source_version=str(self.source.version) if self.source.version else None,
                source_server_uuid=self.source.server_uuid,
            )
        if self.outcome is not None:
            ev.update(
                replica_announced_gtid_set=_text(self.outcome.announced),
                reconnect_outcome=str(self.outcome.kind),
                reconnect_rule=self.outcome.rule,
                source_version_assumed=self.outcome.version_assumed,
            )
        return ev


# --------------------------------------------------------------------------------------------
# The pair's one reconnect simulation
# --------------------------------------------------------------------------------------------

def _last_retrieved_gtid(channel: ChannelSnapshot, relay_tail: Sequence[RelayLogEvent] | None) -> Gtid | None:
    """The last GTID the receiver wrote: the last Gtid event of the relay log tail, else
    LAST_QUEUED_TRANSACTION."""
    if relay_tail:
        for event in reversed(relay_tail):
            try:
                gtid = gtid_of_event(event)
            except SnapshotError:  # an unreadable Info: fall back to the channel's own report
                break
            if gtid is not None:
                return gtid
    return channel.last_queued_gtid


def pair_reconnect_outcome(replica: ServerSnapshot, channel: ChannelSnapshot, source: ServerSnapshot | None,
                           relay_tail: Sequence[RelayLogEvent] | None) -> ReconnectOutcome | None:
    """The one reconnect simulation of a pair (:func:`gtid_core.reconnect.reconnect_outcome`), or
    None when it does not apply: no source, a channel without AUTO_POSITION (the source's GTID
    checks do not run), or the replica's gtid_executed unknown."""
    if source is None or channel.auto_position is False:
        return None
    executed = replica.gtid_executed
    if channel.executed_gtid_set is not None:
        executed = channel.executed_gtid_set if executed is None else executed | channel.executed_gtid_set
    if executed is None:
        return None
    return reconnect_outcome(source, gtid_executed=executed, retrieved_gtid_set=channel.retrieved_gtid_set,
                             replica_version=replica.version,
                             last_retrieved_gtid=_last_retrieved_gtid(channel, relay_tail))
