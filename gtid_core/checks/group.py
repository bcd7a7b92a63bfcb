"""Group Replication: the members of one replication group against each other.

A group's members are servers like any other (their gtid_executed, gtid_purged and binary logs
are in the snapshot), plus what Group Replication says about them: the group's name (the UUID
of every transaction the group certifies), each member's state and role in its own view, its
member weight, and the certified transactions it has queued (``RECEIVED_TRANSACTION_SET`` of
channel ``group_replication_applier``). :class:`GroupMember` holds one member; the checks take
every member read tonight with the same group name.

Four answers, each the decision a server makes when a member (re)joins or the primary goes:

- ``group_member_errant`` (:func:`check_group_member_errant`): a member holds transactions the
  group never certified; ``START GROUP_REPLICATION`` will refuse it.
- ``group_member_unrecoverable`` (:func:`check_group_member_unrecoverable`): a member out of the
  group lacks transactions that every ONLINE member has purged; distributed recovery from the
  binary logs cannot bring it back.
- ``group_member_purged_replica_gtids`` (:func:`check_group_member_purged_replica_gtids`): an
  asynchronous replica of a member would be refused by another ONLINE member, its likely next
  source after a primary failover (SOURCE_CONNECTION_AUTO_FAILOVER, or a repoint).
- :func:`predict_primary` and :func:`group_failover_rows`: the member a single-primary group would
  elect if its primary left, by the server's own rule, what it has to apply first and what its
  asynchronous replicas and the old primary would meet (``failover_readiness`` rows).

What none of them can see: members that were not read tonight (not in the inventory, or their
read failed). A check that needs the whole group's sets says nothing when an ONLINE member of
some read member's view was not read: the group's set would be incomplete.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from gtid_core.checks.catalogue import CHECKS, _finding, _short, _text
from gtid_core.findings import Finding, Severity, empty_transaction_sql
from gtid_core.gtid_set import GtidSet
from gtid_core.checks.pair import replica_executed
from gtid_core.reconnect import ReconnectKind, announced_gtid_set, simulate_auto_position_reconnect
from gtid_core.snapshots import ChannelSnapshot, ServerSnapshot
from gtid_core.versions import MySQLVersion

__all__ = ["GroupMember", "ViewMember", "AsyncReplica", "Election", "check_group_member_errant",
           "check_group_member_unrecoverable", "check_group_member_purged_replica_gtids", "predict_primary",
           "group_failover_rows", "run_group_checks", "group_set", "IN_GROUP_STATES", "OUT_OF_GROUP_STATES",
           "GROUP_FAILOVER_MODEL_VERSION", "GROUP_CHANNEL"]

#: States in which a member takes part in the group (``Group_member_info::MEMBER_ONLINE`` and
#: ``MEMBER_IN_RECOVERY``): the members whose sets a joiner is compared with.
IN_GROUP_STATES = frozenset({"ONLINE", "RECOVERING"})
#: States of a member out of the group: Group Replication stopped (OFFLINE) or failed (ERROR).
OUT_OF_GROUP_STATES = frozenset({"OFFLINE", "ERROR"})

#: Group Replication weighs members in a primary election from 5.7.20
#: (``PRIMARY_ELECTION_MEMBER_WEIGHT_VERSION``), and from 8.0.17 compares whole versions, patch
#: included (``PRIMARY_ELECTION_PATCH_CONSIDERATION``).
_WEIGHT_VERSION = MySQLVersion.of(5, 7, 20)
_PATCH_VERSION = MySQLVersion.of(8, 0, 17)
#: Default of group_replication_member_weight.
DEFAULT_MEMBER_WEIGHT = 50
#: ``failover_readiness.model_version`` of the rows :func:`group_failover_rows` writes; their
#: ``channel`` is the group's applier channel, which tells them from the asynchronous model's.
GROUP_FAILOVER_MODEL_VERSION = 1
GROUP_CHANNEL = "group_replication_applier"


@dataclass(frozen=True)
class ViewMember:
    """One row of a member's ``performance_schema.replication_group_members``."""

    member_id: str
    state: str | None
    role: str | None = None
    version: MySQLVersion | None = None


@dataclass(frozen=True)
class GroupMember:
    """One member of a group as read tonight.

    ``snapshot``: the server's own snapshot (name, server_uuid, version, gtid_executed,
    gtid_purged, binary logs). ``state``/``role``: its MEMBER_STATE/MEMBER_ROLE in its own view
    (None when its view does not list it). ``applier_received``: RECEIVED_TRANSACTION_SET of
    group_replication_applier (certified transactions it queued; None when not read).
    ``async_retrieved``: the union of Retrieved_Gtid_Set of its asynchronous channels.
    ``view``: its replication_group_members rows."""

    snapshot: ServerSnapshot
    group_name: str
    state: str | None = None
    role: str | None = None
    weight: int | None = None
    single_primary: bool | None = None
    view_change_uuid: str | None = None
    applier_received: GtidSet | None = None
    async_retrieved: GtidSet = GtidSet.EMPTY
    view: tuple[ViewMember, ...] = ()

    @property
    def name(self) -> str:
        return self.snapshot.label

    @property
    def uuid(self) -> str | None:
        return self.snapshot.server_uuid.lower() if self.snapshot.server_uuid else None

    @property
    def in_group(self) -> bool:
        return self.state in IN_GROUP_STATES

    def group_uuids(self) -> frozenset[str]:
        """The UUIDs the group gives the transactions it certifies and its view changes: the
        group name, and group_replication_view_change_uuid unless AUTOMATIC."""
        uuids = {self.group_name.lower()}
        if self.view_change_uuid and self.view_change_uuid.upper() != "AUTOMATIC":
            uuids.add(self.view_change_uuid.lower())
        return frozenset(uuids)

    def uncertified(self) -> GtidSet | None:
        """GTIDs of its gtid_executed the group never certified: outside its applier's received
        set, outside the group's UUIDs and outside its asynchronous channels' Retrieved_Gtid_Set
        (None when gtid_executed was not read)."""
        known = self.known_set()
        if known is None:
            return None
        out = known - (self.applier_received or GtidSet.EMPTY) - self.async_retrieved
        for uuid in self.group_uuids():
            out = out - out.for_uuid(uuid)
        return out

    def known_set(self) -> GtidSet | None:
        """gtid_executed ∪ the applier's received set: what distributed recovery counts as the
        member's (``Group_member_info::get_gtid_executed`` and ``get_gtid_retrieved``)."""
        if self.snapshot.gtid_executed is None:
            return None
        return self.snapshot.gtid_executed | (self.applier_received or GtidSet.EMPTY)


@dataclass(frozen=True)
class AsyncReplica:
    """An asynchronous replica of a group member: its snapshot (no binary logs needed) and the
    channel that replicates from the member."""

    snapshot: ServerSnapshot
    channel: ChannelSnapshot

    @property
    def name(self) -> str:
        return self.snapshot.label

    def announced(self, towards: ServerSnapshot) -> GtidSet | None:
        """What it sends when its channel connects to ``towards``: gtid_executed ∪
        Retrieved_Gtid_Set (:func:`gtid_core.reconnect.announced_gtid_set`)."""
        executed = replica_executed(self.snapshot, self.channel)
        if executed is None or self.channel.retrieved_gtid_set is None:
            return None
        return announced_gtid_set(executed, self.channel.retrieved_gtid_set, replica_version=self.snapshot.version,
                                  source_version=towards.version)


@dataclass(frozen=True)
class Election:
    """What a single-primary group would do if ``primary`` left: ``elected`` (None when no
    member can be named), the ordered ``candidates`` it chose from, the rule in words, and why
    nothing can be said (``undetermined``)."""

    primary: str | None
    elected: str | None
    candidates: tuple[str, ...] = ()
    rule: str = ""
    undetermined: str | None = None
    backlog: GtidSet | None = None      # certified transactions the elected member has yet to apply


def _unread_in_group(members: Sequence[GroupMember]) -> list[str]:
    """member_ids that some read member's view shows ONLINE or RECOVERING but that were not read
    tonight (or were read without their GTID sets)."""
    read = {m.uuid for m in members if m.uuid and m.snapshot.gtid_executed is not None}
    unread = set()
    for m in members:
        if not m.in_group:
            continue            # a member out of the group shows only itself
        for v in m.view:
            if v.state in IN_GROUP_STATES and v.member_id and v.member_id.lower() not in read:
                unread.add(v.member_id.lower())
    return sorted(unread)


def read_after(later: GroupMember, earlier: GroupMember) -> bool | None:
    """True when ``later``'s read of its GTID sets began after ``earlier``'s returned, False when
    it did not, None when an instant is unknown or the two cannot be compared.

    What it settles: a member's own transactions reach its applier's received set only at the
    certifier's periodic garbage collection (``channel_add_executed_gtids_to_received_gtids``,
    about every 60 s: plugin/group_replication/src/certifier.cc), while every other member
    receives them through the group before the member commits them. A transaction certified on
    ``earlier`` under a UUID the client chose (``SET gtid_next``, such as the empty transactions
    an operator commits) is therefore in ``later``'s set when this is True, and may be on
    ``earlier`` alone when it is not."""
    a = earlier.snapshot.read_at
    b = later.snapshot.read_started_at or later.snapshot.read_at
    if a is None or b is None:
        return None
    try:
        return a < b
    except TypeError:
        return None


def group_set(members: Iterable[GroupMember]) -> GtidSet:
    """∪ (gtid_executed ∪ applier received ∪ async Retrieved_Gtid_Set) of ``members``."""
    out = GtidSet.EMPTY
    for m in members:
        known = m.known_set()
        if known is not None:
            out = out | known | m.async_retrieved
    return out


def check_group_member_errant(members: Sequence[GroupMember]) -> list[Finding]:
    """``group_member_errant``: a member holds transactions the group never certified.

    Mirrors ``Plugin_gcs_events_handler::compare_member_transaction_sets``
    (plugin/group_replication/src/gcs_event_handlers.cc), run when a member joins: the joiner's
    gtid_executed ∪ its applier's retrieved set must be a subset of the union of every other
    member's gtid_executed ∪ retrieved set; otherwise "This member has more executed transactions
    than those present in the group" (ER_GRP_RPL_MEMBER_TRANS_GREATER_THAN_GRP) and it leaves.

    - A member out of the group (OFFLINE, ERROR): exactly that comparison, against the read
      members in the group (ONLINE, RECOVERING). The group only grows while the member is out, so
      the read order cannot invent an errant GTID.
    - An ONLINE member: the server makes no check now, but the next rejoin will. A transaction
      certified a moment ago may be on this member and not yet on the others read earlier, so
      only GTIDs that were never certified count: outside the group's UUIDs (the group gives
      every transaction it certifies the group name, view changes the group name or
      group_replication_view_change_uuid) and outside its applier's received set. A transaction
      certified under a UUID a client chose (``SET gtid_next``) reaches the member's own received
      set only at the next certifier garbage collection (:func:`read_after`): the finding is
      confirmed, at its default severity, only when another member in the group was read after
      this one (it would then hold such a transaction); otherwise it is an unconfirmed warning.
    - GTIDs a member's asynchronous channel brought in are left out in both cases (another
      member may be receiving them through the group right now).

    Cannot see: members not read (then nothing is said for the group, see the module
    docstring), and a RECOVERING or UNREACHABLE member's own set (not judged)."""
    if _unread_in_group(members):
        return []
    in_group = [m for m in members if m.in_group and m.known_set() is not None]
    findings: list[Finding] = []
    for m in members:
        known = m.known_set()
        if known is None or m.state not in (OUT_OF_GROUP_STATES | {"ONLINE"}):
            continue
        others = [o for o in in_group if o is not m]
        if not others:
            continue
        group = group_set(others)
        candidates = m.uncertified() if m.state == "ONLINE" else known - m.async_retrieved
        errant = candidates - group
        if not errant:
            continue
        out = m.state != "ONLINE"
        when = ("START GROUP_REPLICATION will refuse it" if out
                else "the next time it leaves and rejoins the group, distributed recovery will refuse it")
        primary = next((o.name for o in others if o.role == "PRIMARY"), None)
        where = primary or "the group's primary (every member in multi-primary mode writes to the group)"
        title = f"Group member has {errant.count()} transaction(s) group {m.group_name} never certified"
        detail = (f"{m.name} ({m.state}) has {_short(errant)}, which no member of the group has "
                  f"({', '.join(o.name for o in others)}): {when} with 'This member has more executed "
                  f"transactions than those present in the group'.")
        evidence = {"group_name": m.group_name, "member_state": m.state,
                    "member_gtid_executed": _text(m.snapshot.gtid_executed),
                    "member_applier_received": _text(m.applier_received),
                    "group_gtid_set": _text(group),
                    "compared_with": ",".join(o.name for o in others)}
        extra = {}
        if not out and not any(read_after(o, m) for o in others):
            why = (f"no other member was read after {m.name}: a transaction certified just before its read, "
                   "under a UUID a client set with gtid_next, would be on it alone until the certifier's "
                   "next garbage collection")
            title, detail = f"Unconfirmed: {title}", (
                detail + f" UNCONFIRMED: {why}; this finding holds only if it repeats with another member read after it.")
            evidence["unconfirmed"] = why
            extra["severity"] = Severity.WARNING
        findings.append(_finding(
            "group_member_errant", m.name, title, detail, gtid_set=errant, evidence=evidence,
            remediation=(CHECKS["group_member_errant"].remediation
                         + f"\nEmpty transactions, to run on {where} (not on {m.name}):\n"
                         + empty_transaction_sql(errant)), **extra))
    return findings


def check_group_member_unrecoverable(members: Sequence[GroupMember]) -> list[Finding]:
    """``group_member_unrecoverable``: a member out of the group cannot catch up from any
    ONLINE member's binary logs.

    Distributed recovery (plugin/group_replication/src/recovery_state_transfer.cc) connects an
    asynchronous channel, group_replication_recovery, with AUTO_POSITION to a donor chosen among
    the ONLINE members; the donor's dump thread decides as for any replica
    (``simulate_auto_position_reconnect``: ER_MASTER_HAS_PURGED_REQUIRED_GTIDS when its
    gtid_purged, or its binary-log scan, needs what the joiner lacks). When every ONLINE donor
    refuses, only a clone (CLONE INSTANCE, or distributed recovery's own clone when the clone
    plugin is installed on both sides) brings the member back. From 8.0.17 the plugin makes the
    same judgement before it connects (``Remote_clone_handler``: "no ONLINE member has the
    missing data for recovering in its binary logs", MY-013470) and goes to clone straight away;
    the real 9.7.4 group in tests/sandbox/test_group_replication.py does exactly that. The joiner is taken to announce
    its gtid_executed ∪ its applier's received set (the larger set: a smaller one would only
    make more donors refuse).

    Cannot see: ONLINE members not read (nothing is said then), donors whose binary-log list was
    not read (the reconnect simulation says undetermined: nothing is said)."""
    if _unread_in_group(members):
        return []
    donors = [m for m in members if m.state == "ONLINE" and m.snapshot.gtid_executed is not None]
    if not donors:
        return []
    findings: list[Finding] = []
    for m in members:
        known = m.known_set()
        if m.state not in OUT_OF_GROUP_STATES or known is None:
            continue
        outcomes = [(d, simulate_auto_position_reconnect(d.snapshot, known)) for d in donors if d is not m]
        if not outcomes or any(o.kind == ReconnectKind.UNDETERMINED for _d, o in outcomes):
            continue
        if not all(o.purge_verdict == ReconnectKind.SOURCE_PURGED_REQUIRED for _d, o in outcomes):
            continue
        donor, best = min(outcomes, key=lambda do: (do[1].missing.count() if do[1].missing else 0, do[0].name))
        gap = best.missing or GtidSet.EMPTY
        findings.append(_finding(
            "group_member_unrecoverable", m.name,
            "Group member cannot recover from the group's binary logs: every ONLINE member purged "
            "transactions it lacks",
            f"{m.name} ({m.state}) lacks transactions that every ONLINE member of group {m.group_name} "
            f"has purged ({', '.join(d.name for d, _o in outcomes)}); the closest donor, {donor.name}, "
            f"purged {gap.count()} of them ({_short(gap)}). START GROUP_REPLICATION will fail in "
            "distributed recovery (ER_MASTER_HAS_PURGED_REQUIRED_GTIDS from each donor) unless a clone "
            "provisions it.",
            gtid_set=gap,
            evidence={"group_name": m.group_name, "member_state": m.state,
                      "member_gtid_set": _text(known), "closest_donor": donor.name,
                      "donor_gtid_purged": _text(donor.snapshot.gtid_purged),
                      "donors": ",".join(d.name for d, _o in outcomes)}))
    return findings


def _election_key(m: GroupMember):
    return (-(m.weight if m.weight is not None else DEFAULT_MEMBER_WEIGHT), m.uuid or "")


def predict_primary(members: Sequence[GroupMember]) -> Election | None:
    """The member a single-primary group elects when its primary leaves; None when the group is
    not single-primary or has no primary tonight.

    Mirrors ``sort_and_get_lowest_version_member_position`` and ``sort_members_for_election``
    (plugin/group_replication/src/plugin_handlers/primary_election_invocation_handler.cc): among
    the ONLINE members other than the leaving primary, only those of the lowest version may be
    elected (the whole version from 8.0.17, the major version before); among them the highest
    group_replication_member_weight wins (5.7.20+; before, the lowest server_uuid), ties going to
    the lowest server_uuid (``Group_member_info::has_greater_weight``).

    The elected member applies its backlog of certified transactions before it takes writes
    (group_replication_consistency BEFORE_ON_PRIMARY_FAILOVER waits for it; EVENTUAL lets reads
    see the old state): nothing certified is lost, ``backlog`` says how much is left to apply.
    Undetermined when a member's version, or its weight where the rule uses it (5.7.20+), was not
    read, or an ONLINE member of the view was not read."""
    if not members or not any(m.single_primary for m in members):
        return None
    primary = next((m for m in members if m.state == "ONLINE" and m.role == "PRIMARY"), None)
    if primary is None:
        return None
    unread = _unread_in_group(members)
    if unread:
        return Election(primary.name, None, undetermined=f"ONLINE member(s) not read tonight: {', '.join(unread)}")
    online = [m for m in members if m.state == "ONLINE" and m is not primary]
    if not online:
        return Election(primary.name, None, undetermined="no other ONLINE member: the group would have no primary")
    missing = [m.name for m in online if m.snapshot.version is None]
    if missing:
        return Election(primary.name, None, undetermined=f"version not read on {', '.join(missing)}")
    lowest = min(m.snapshot.version for m in online)
    # the weight counts only when every ONLINE member has it (5.7.20+); before, none is read
    missing = [m.name for m in online if m.weight is None] if lowest >= _WEIGHT_VERSION else []
    if missing:
        return Election(primary.name, None, undetermined=f"member weight not read on {', '.join(missing)}")
    if lowest >= _PATCH_VERSION:
        eligible = [m for m in online if m.snapshot.version == lowest]
        version_rule = f"lowest version {lowest}"
    else:
        eligible = [m for m in online if m.snapshot.version.major == lowest.major]
        version_rule = f"lowest major version {lowest.major}"
    if lowest >= _WEIGHT_VERSION:
        ordered = sorted(eligible, key=_election_key)
        order_rule = "then highest group_replication_member_weight, then lowest server_uuid"
    else:
        ordered = sorted(eligible, key=lambda m: m.uuid or "")
        order_rule = "then lowest server_uuid"
    elected = ordered[0]
    backlog = None
    if elected.applier_received is not None and elected.snapshot.gtid_executed is not None:
        backlog = elected.applier_received - elected.snapshot.gtid_executed
    return Election(primary.name, elected.name, tuple(m.name for m in ordered),
                    rule=f"ONLINE members but {primary.name}: {version_rule}, {order_rule}", backlog=backlog)


def _read_before(member: GroupMember, replica: AsyncReplica) -> bool:
    """True when the member's GTID variables were read before the replica's read began."""
    a, b = member.snapshot.read_at, replica.snapshot.read_started_at
    try:
        return a is not None and b is not None and a < b
    except TypeError:
        return False


def check_group_member_purged_replica_gtids(members: Sequence[GroupMember],
                                            replicas: Mapping[str, Sequence[AsyncReplica]]) -> list[Finding]:
    """``group_member_purged_replica_gtids``: an asynchronous replica of a member would be
    refused by another ONLINE member of the group, its next source after a primary failover.

    With SOURCE_CONNECTION_AUTO_FAILOVER (8.0.22+, group members as the managed source list) or
    an operator's repoint, the replica's channel connects with AUTO_POSITION to whichever member
    is primary next; that member's dump thread decides as for any replica
    (``simulate_auto_position_reconnect``: ER_MASTER_HAS_PURGED_REQUIRED_GTIDS). Each ONLINE
    member but the replica's current source is such a source in waiting.

    Sound in two cases only, and judged only then:

    - the replica's receiver is stopped (its gtid_executed ∪ Retrieved_Gtid_Set cannot grow; the
      member's gtid_purged only grows);
    - its receiver runs (YES or CONNECTING), the member was read before the replica's read began,
      and the replica's current source was read after the member (below). A member read after a
      running replica is not judged: the replica may have received what the member purged since.

    A replica whose receiver runs is lagging, not refused, for what its current source can still
    send it: the source's gtid_executed ∪ its group_replication_applier received set
    (:meth:`GroupMember.known_set`) minus the source's gtid_purged. That reaches the replica
    without any failover. The source's applier may be held back (a long query, a lock) while the
    primary purges what the group certified; the replica then lacks those transactions only until
    the source applies them. Only what the member purged beyond that is a refusal. The credit
    needs the source read after the member: the member's purged transactions were certified
    before it was read, so the source had received them by then; read before the member, the
    source could show a smaller set than it has, and the lag would look like a refusal. What the
    source purged itself is never credited: a replica that lacks it is cut off from its current
    source too (``source_purged_required`` on the pair), and the member would refuse it as well.

    Not judged: a replica whose receiver state was not read (neither stopped nor known to
    receive); a running replica whose source's gtid_executed or gtid_purged was not read, or whose
    source was not read after the member (a lag cannot be told from a refusal). A source whose
    applier's received set was not read is credited its gtid_executed alone. ``replicas`` maps a
    member's name to the asynchronous replicas of it. Cannot see: members not read, replicas of
    members not read, and a failover that happens while such a lag lasts (the replica would then
    be refused for the transactions still in flight)."""
    by_name = {m.name: m for m in members}
    online = [m for m in members if m.state == "ONLINE" and m.snapshot.gtid_executed is not None]
    findings: list[Finding] = []
    for source_name, reps in replicas.items():
        source = by_name.get(source_name)
        if source is None or source.state != "ONLINE":
            continue
        known, purged = source.known_set(), source.snapshot.gtid_purged
        reachable = known - purged if known is not None and purged is not None else None
        for rep in reps:
            receiving = rep.channel.receiver_running
            if receiving is None or (receiving and reachable is None):
                continue                       # cannot tell a lag from a refusal
            credited = reachable if receiving else GtidSet.EMPTY
            refusals = []
            for other in online:
                if other is source:
                    continue
                if receiving and not (_read_before(other, rep) and read_after(source, other)):
                    continue
                announced = rep.announced(other.snapshot)
                if announced is None:
                    continue
                outcome = simulate_auto_position_reconnect(other.snapshot, announced | credited)
                if outcome.purge_verdict == ReconnectKind.SOURCE_PURGED_REQUIRED and outcome.missing:
                    refusals.append((other, outcome, announced))
            if not refusals:
                continue
            other, outcome, announced = max(refusals, key=lambda r: (r[1].missing.count(), r[0].name))
            channel = rep.channel.channel_name or ""
            names = ", ".join(o.name for o, _, _ in refusals)
            findings.append(_finding(
                "group_member_purged_replica_gtids", rep.name,
                f"After a primary failover in group {source.group_name}, {names} would refuse this replica",
                f"{rep.name} replicates from {source_name} (channel '{channel}'). Moved to {names} -- the next "
                f"primary after a failover, by SOURCE_CONNECTION_AUTO_FAILOVER or a repoint -- it would be "
                f"refused: {other.name} purged {outcome.missing.count()} transaction(s) it lacks "
                f"({_short(outcome.missing)}).",
                source=other.name, channel=channel, gtid_set=outcome.missing,
                evidence={"group_name": source.group_name, "current_source": source_name,
                          "refused_by": names, "replica_gtid_set": _text(announced),
                          "receiver_running": receiving,
                          "credited_from_current_source": _text(credited),
                          "member_gtid_purged": _text(other.snapshot.gtid_purged),
                          "reconnect_rule": outcome.rule}))
    return findings


def run_group_checks(members: Sequence[GroupMember],
                     replicas: Mapping[str, Sequence[AsyncReplica]] | None = None) -> list[Finding]:
    """Every check of one group (the members read tonight with one group name, and the
    asynchronous replicas of each member by the member's name)."""
    return (check_group_member_errant(members) + check_group_member_unrecoverable(members)
            + check_group_member_purged_replica_gtids(members, replicas or {}))


# --------------------------------------------------------------------------------------------
# failover readiness

_VERDICT_ORDER = ("safe", "safe_after_catch_up", "undetermined", "refuses_siblings", "loses_transactions")


def _count(s: GtidSet | None) -> int | None:
    return s.count() if s is not None else None


def group_failover_rows(members: Sequence[GroupMember], replicas: Mapping[str, Sequence[AsyncReplica]], *,
                        run_id: str | None = None, run_date=None, cluster: str | None = None) -> list[dict]:
    """``failover_readiness`` rows of a single-primary group (schemas/failover.py): source = the
    primary, candidate = the member :func:`predict_primary` says the group elects, channel =
    ``group_replication_applier``; one row per sibling: the old primary coming back (role
    ``source``: distributed recovery's join check, see :func:`check_group_member_errant`) and
    each asynchronous replica of the primary (role ``replica``: its channel moved to the elected
    member, that member's dump thread's answer). The elected member applies its backlog of
    certified transactions first (``pending_relay``): nothing the group certified is lost, so a
    replica's GTIDs count as lost only when the primary never certified them
    (:meth:`GroupMember.uncertified`); a replica read after the elected member and ahead of it
    is not. Such a GTID outside the elected member's set counts only when the elected member was
    read after the primary (:func:`read_after`: otherwise it may be a transaction certified just
    before the primary's read under a UUID a client chose): the sibling is then undetermined,
    neither refused nor losing. No rows when the group is not single-primary, has no primary, or
    the election is undetermined."""
    election = predict_primary(members)
    if election is None or election.elected is None:
        return []
    by_name = {m.name: m for m in members}
    primary, elected = by_name[election.primary], by_name[election.elected]
    backlog = election.backlog
    promoted_set = elected.snapshot.gtid_executed | (backlog or GtidSet.EMPTY)
    promoted = _replace_executed(elected.snapshot, promoted_set)
    rows: list[dict] = []
    siblings: list[dict] = []
    primary_uncertified = primary.uncertified() or GtidSet.EMPTY
    confirmed = bool(read_after(elected, primary))
    unconfirmed = (f"unconfirmed: {elected.name} was not read after {primary.name}, whose GTIDs outside the group's "
                   "UUIDs may have been certified just before its read")
    # the old primary, should it come back: the join check against the group
    extra = primary_uncertified - promoted_set
    rejoin = ("rejoins through distributed recovery: its gtid_executed ∪ received set must be a subset of the "
              "group's (compare_member_transaction_sets)")
    siblings.append(dict(sibling=primary.name, sibling_role="source",
                         sibling_result=("streams" if not extra else "refused" if confirmed else "undetermined"),
                         refusal="ER_GRP_RPL_MEMBER_TRANS_GREATER_THAN_GRP" if extra and confirmed else None,
                         reconnect_rule=rejoin if confirmed or not extra else f"{rejoin}; {unconfirmed}",
                         sibling_gtid_set=_text(primary.snapshot.gtid_executed),
                         refused_missing=extra if extra and confirmed else GtidSet.EMPTY, lost=GtidSet.EMPTY))
    for rep in replicas.get(primary.name, ()):
        announced = rep.announced(promoted)
        if announced is None:
            siblings.append(dict(sibling=rep.name, sibling_role="replica", sibling_result="undetermined",
                                 refusal=None, reconnect_rule="the replica's sets were not read",
                                 sibling_gtid_set=None, refused_missing=None, lost=None))
            continue
        outcome = simulate_auto_position_reconnect(promoted, announced)
        result = ("refused" if outcome.refused else "undetermined" if outcome.kind == ReconnectKind.UNDETERMINED
                  else "streams")
        # Only what the group never certified can be lost: a certified transaction was delivered
        # to every ONLINE member before the primary committed it, so the elected member applies it
        # even when the replica was read after the elected member and already has it.
        lost = (announced - promoted_set) & primary_uncertified
        rule = outcome.rule or None
        if lost and not confirmed:
            result = result if result == "refused" else "undetermined"
            rule = f"{rule}; {unconfirmed}" if rule else unconfirmed
            lost = GtidSet.EMPTY
        siblings.append(dict(sibling=rep.name, sibling_role="replica", sibling_result=result,
                             refusal=outcome.error, reconnect_rule=rule,
                             sibling_gtid_set=_text(announced),
                             refused_missing=(outcome.missing or outcome.offending) if outcome.refused else GtidSet.EMPTY,
                             lost=lost))
    refused = sum(1 for s in siblings if s["sibling_result"] == "refused")
    lost_total = GtidSet.EMPTY
    for s in siblings:
        lost_total = lost_total | (s["lost"] or GtidSet.EMPTY)
    verdict = "safe_after_catch_up" if backlog else "safe"
    reasons = [f"elected by group {primary.group_name}: {election.rule}"]
    if backlog:
        reasons.insert(0, f"{elected.name} applies {backlog.count()} certified transaction(s) first; none is lost")
    if any(s["sibling_result"] == "undetermined" for s in siblings):
        verdict = "undetermined"
    if refused:
        verdict = "refuses_siblings"
        reasons.insert(0, f"{refused} sibling(s) refused: "
                          + ", ".join(s["sibling"] for s in siblings if s["sibling_result"] == "refused"))
    if lost_total:
        verdict = "loses_transactions"
        reasons.insert(0, f"{lost_total.count()} transaction(s) a sibling has would be lost")
    for s in siblings:
        rows.append({
            "run_id": run_id, "run_date": run_date, "cluster": cluster,
            "source": primary.name, "candidate": elected.name, "channel": GROUP_CHANNEL,
            "sibling": s["sibling"], "sibling_role": s["sibling_role"], "candidate_rank": 1,
            "siblings_not_listed": 0, "verdict": verdict, "verdict_reasons": "\n".join(reasons),
            "candidate_readiness": None, "cost_lost_count": lost_total.count(),
            "cost_refused_siblings": refused, "cost_spread_count": 0, "caused_by": None,
            "sibling_result": s["sibling_result"], "refusal": s["refusal"], "reconnect_rule": s["reconnect_rule"],
            "already_refused_by_source": False, "notes": f"group {primary.group_name}",
            "candidate_gtid_executed": _text(elected.snapshot.gtid_executed),
            "promoted_gtid_executed": _text(promoted_set),
            "pending_relay_gtid_set": _text(backlog), "pending_relay_count": _count(backlog),
            "sibling_gtid_set": s["sibling_gtid_set"],
            "lost_gtid_set": _text(s["lost"]), "lost_count": _count(s["lost"]),
            "refused_missing_gtid_set": _text(s["refused_missing"]), "refused_missing_count": _count(s["refused_missing"]),
            "model_version": GROUP_FAILOVER_MODEL_VERSION,
        })
    return rows


def _replace_executed(snapshot: ServerSnapshot, executed: GtidSet) -> ServerSnapshot:
    from dataclasses import replace

    return replace(snapshot, gtid_executed=executed)
