"""Duplicate server identities across the whole inventory: ``duplicate_server_uuid``.

A server numbers the transactions it commits ``server_uuid:1``, ``server_uuid:2``, ... Two
servers with one server_uuid (*twins*) therefore give the same GTID to different transactions as
soon as both are written. The common cause is a datadir copied with its ``auto.cnf`` (a restored
backup, a cloned volume or VM), and the common reason to copy one is to build a new shard or
cluster from another's backup: the twin usually lands in a *different* cluster label. Any server
that later receives from both (an aggregating multi-source replica, a merge, a move) treats the
second ``uuid:N`` it sees as already executed and silently skips it. So twins are looked for
across the whole inventory, unlabelled servers included, one *identity group* at a time: the
servers that share one server_uuid (:func:`check_duplicate_server_uuid`).

The same goes for ``server_id`` inside one *replication group* (a connected component of the
resolved channels, whatever their direction): a receiver drops every event that carries its own
server_id, and a replica refuses a source with its server_id (:func:`check_duplicate_server_id`,
one group per (replication group, server_id)). Across unconnected groups a shared server_id is
harmless and not reported.

**Severity: can the twins' data meet?** A twin's finding is ``critical`` when, for some other twin:

- both carry the same cluster label (one topology: the next failover or re-point joins them);
- one replicates from the other (its receiver refuses the source, 13117, see below);
- some server replicates from both, directly, on any channels (it skips whichever ``uuid:N``
  arrives second);
- both replicate from one source (the source's dump thread kicks the older connection off
  whenever the other connects, 13114: one of them stops replicating).

``warning`` otherwise: the GTIDs collide already (the evidence lists them), but nothing read in
this run brings the two streams together; the first merge, move or multi-source replica will.

**Evidence.** The twins and their cluster labels; the GTIDs of the shared uuid in each twin's
gtid_executed (``GtidSet.for_uuid``); for each other twin the intersection of the two, which is
the finding's ``gtid_set``. The intersection is where both twins use the same GTID numbers. Each
of them is either a transaction both inherited from before the copy (one transaction, on both)
or a collision (a different transaction on each side under one GTID); gtid_executed cannot tell
the two apart, so the intersection is an upper bound of the collisions, and the GTIDs a receiver
of both would take from whichever twin reached it first. The GTIDs only one twin has are not at
risk of being skipped (yet: the other twin will reach those numbers too).

**Why it is sound.** Both values are the servers' own (``@@GLOBAL.server_uuid``,
``@@GLOBAL.server_id``, read in this run); the meeting points are the resolved channels the
collector stored (``channels.source_server``, one resolver's answer) and the configured cluster
labels. An unknown value (None: not read, no label, an unresolved channel, an unparsable
gtid_executed) matches nothing and never raises a twin to critical; an unknown set stays None in
the evidence, never empty.

**Server code mirrored** (mysql/mysql-server, ``sql/``):

- ``rpl_replica.cc`` ``io_thread_init_commands``: the receiver announces itself on connect,
  ``SET @slave_uuid = '%s', @replica_uuid = '%s'`` with its own ``server_uuid``.
- ``rpl_source.cc`` ``kill_zombie_dump_threads`` (run for every COM_BINLOG_DUMP[_GTID]): the
  ``Find_zombie_dump_thread`` callback matches another dump thread whose ``replica_uuid`` is the
  new one's (``!strncmp(m_replica_uuid.c_ptr(), tmp_uuid.c_ptr(), UUID_LENGTH)``; by server_id
  only for a replica that sent no uuid, i.e. older than 5.6), then ``tmp_ptr->duplicate_slave_id
  = true; tmp_ptr->awake(THD::KILL_QUERY);``. The killed dump thread ends with "A replica with the
  same server_uuid/server_id as this replica has connected to the source" (``rpl_binlog_sender.cc``),
  which the kicked replica reports as Last_IO_Errno 13114 on 9.7. So two twins replicating from one
  source take turns being kicked; two modern replicas sharing only a server_id are not.
- ``rpl_replica.cc`` ``get_master_uuid``: ``SELECT @@GLOBAL.SERVER_UUID`` on the source, and
  ``if (!strcmp(::server_uuid, master_row[0]) && !mi->rli->replicate_same_server_id)`` the receiver
  stops: "The replica I/O thread stops because source and replica have equal MySQL server UUIDs;
  these UUIDs must be different for replication to work." (ER_REPLICA_FATAL_ERROR, 13117 on 9.7).
  ``get_master_version_and_clock`` does the same with ``SELECT @@GLOBAL.SERVER_ID`` ("... equal
  MySQL server ids ...").
- ``rpl_replica.cc`` ``queue_event``: ``if ((s_id == ::server_id &&
  !mi->rli->replicate_same_server_id) || ...)`` the event is not written to the relay log (the loop
  guard of circular replication): a server downstream of another with its server_id drops every
  transaction that server originated, silently.

**What it cannot see.** A server not in this run (failed, not inventoried, decommissioned with
its GTIDs still in others' gtid_executed) is not compared; the UUID registry remembers past
owners, not twins. Only direct channels are followed: a server that receives one twin's
transactions through an intermediate replica and the other's directly is reported as a warning,
as are twins whose channels did not resolve. Which GTIDs of the intersection are real collisions
(see above). A server whose data was copied *without* keeping auto.cnf gets a new uuid and is no
twin, even though it carries the original's GTIDs (that is ordinary history, not a collision).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from gtid_core._gtid_text import normalize_uuid
from gtid_core.checks.catalogue import CheckInfo
from gtid_core.errors import SnapshotError
from gtid_core.findings import Finding, Severity
from gtid_core.gtid_set import GtidSet
from gtid_core.snapshots import ServerSnapshot

__all__ = [
    "IDENTITY_CHECKS",
    "IDENTITY_CHECK_VERSION",
    "IdentityServer",
    "check_duplicate_identities",
    "check_duplicate_server_id",
    "check_duplicate_server_uuid",
    "replication_groups",
]

#: v2: twins are compared across the whole inventory (v1: inside one cluster label), and a twin
#: whose data cannot meet the others' is a warning.
IDENTITY_CHECK_VERSION = 2

IDENTITY_CHECKS: Mapping[str, CheckInfo] = MappingProxyType({"duplicate_server_uuid": CheckInfo(
    "duplicate_server_uuid", IDENTITY_CHECK_VERSION, Severity.CRITICAL, "server",
    "Two servers share a server_uuid (or a server_id within one replication group)",
    "Two servers anywhere in the inventory report the same server_uuid, e.g. a datadir cloned with its "
    "auto.cnf kept, often to build another cluster. Both number their own transactions uuid:1, uuid:2, ..., "
    "so the same GTID means a different transaction on each, and a server that receives from both silently "
    "skips one side's as already executed. Critical when their data can meet: the twins share a cluster "
    "label, one replicates from the other (refused, 13117), some server replicates from two of them, or two "
    "replicate from one source (which kicks one off, 13114); a warning otherwise. The evidence lists each "
    "twin's GTIDs of the shared uuid and their intersection (the GTID numbers both use). The same server_id "
    "within one replication group is critical: a receiver drops events carrying its own server_id, and a "
    "replica refuses a source with its server_id.",
    "13114 'A replica with the same server_uuid/server_id as this replica has connected to the source', "
    "13117 'source and replica have equal MySQL server UUIDs' / 'server ids'",
    "Stop the copy (the twin that should not have this uuid), delete auto.cnf from its datadir and restart "
    "it: it generates a new server_uuid. Its transactions written so far keep the old uuid; before any server "
    "receives from both twins, compare the GTIDs in the intersection on both (mysqlbinlog --include-gtids) "
    "and reconcile the colliding ones. Give every server of a replication group its own server_id (SET "
    "PERSIST server_id; before 8.0 SET GLOBAL and the option file; then restart replication).")})


@dataclass(frozen=True)
class IdentityServer:
    """One server as the identity check sees it.

    ``name`` is its inventory name; ``cluster`` its configured label (None: unlabelled);
    ``server_uuid`` / ``server_id`` what it reported (None: unknown; the uuid in any spelling the
    server accepts, normalised, SnapshotError quoting it otherwise); ``gtid_executed`` its set (None:
    unknown). ``sources`` are the inventory names of the servers it replicates from, one per
    resolved channel; ``replicas`` the servers with a resolved channel from it. Unresolved channels
    are not in either (unknown, not "none").
    """

    name: str
    cluster: str | None = None
    server_uuid: str | None = None
    server_id: int | None = None
    gtid_executed: GtidSet | None = None
    sources: frozenset[str] = frozenset()
    replicas: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.server_uuid is not None:
            uuid = normalize_uuid(self.server_uuid.strip()) if isinstance(self.server_uuid, str) else None
            if uuid is None:
                raise SnapshotError(f"server {self.name!r}: server_uuid {self.server_uuid!r} is not a UUID")
            object.__setattr__(self, "server_uuid", uuid)
        object.__setattr__(self, "sources", frozenset(self.sources))
        object.__setattr__(self, "replicas", frozenset(self.replicas))

    @classmethod
    def from_snapshot(cls, snapshot: ServerSnapshot, *, cluster: str | None = None,
                      sources: Iterable[str] = (), replicas: Iterable[str] = ()) -> "IdentityServer":
        """From a server snapshot (its ``label`` is the name) and what the channels say."""
        return cls(snapshot.label, cluster, snapshot.server_uuid, snapshot.server_id, snapshot.gtid_executed,
                   frozenset(sources), frozenset(replicas))

    def describe(self) -> str:
        return f"{self.name} ({'cluster ' + self.cluster if self.cluster is not None else 'no cluster label'})"


def _text(s: GtidSet | None) -> str | None:
    return None if s is None else s.to_text(multiline=False)


def _meetings(a: IdentityServer, b: IdentityServer) -> list[str]:
    """Where the data of twins ``a`` and ``b`` meets, as sentences (empty: nowhere known)."""
    out = []
    if a.cluster is not None and a.cluster == b.cluster:
        out.append(f"both are in cluster {a.cluster}")
    if b.name in a.sources or a.name in b.replicas:
        out.append(f"{a.name} replicates from {b.name} (its receiver is refused: 13117 equal MySQL server UUIDs)")
    if a.name in b.sources or b.name in a.replicas:
        out.append(f"{b.name} replicates from {a.name} (its receiver is refused: 13117 equal MySQL server UUIDs)")
    for r in sorted((a.replicas & b.replicas) - {a.name, b.name}):
        out.append(f"{r} replicates from both (it skips whichever twin's uuid:N arrives second)")
    for s in sorted((a.sources & b.sources) - {a.name, b.name}):
        out.append(f"both replicate from {s} (its dump thread kicks one off whenever the other connects: 13114)")
    return out


def check_duplicate_server_uuid(twins: Sequence[IdentityServer]) -> list[Finding]:
    """``duplicate_server_uuid`` for one identity group: ``twins``, the servers reporting one
    server_uuid (servers with another or an unknown uuid are ignored, so the whole group or any
    superset may be passed). One finding per twin, naming the others; see the module docstring
    for the severity rule and the evidence."""
    by_uuid: dict[str, list[IdentityServer]] = {}
    for s in twins:
        if s.server_uuid is not None:
            by_uuid.setdefault(s.server_uuid, []).append(s)
    out: list[Finding] = []
    for uuid, group in sorted(by_uuid.items()):
        if len({s.name for s in group}) < 2:
            continue
        group = sorted({s.name: s for s in group}.values(), key=lambda s: s.name)
        own = {s.name: (s.gtid_executed.for_uuid(uuid) if s.gtid_executed is not None else None) for s in group}
        for t in group:
            others = [o for o in group if o.name != t.name]
            meet = {o.name: _meetings(t, o) for o in others}
            critical = any(meet.values())
            common: dict[str, GtidSet | None] = {}
            for o in others:
                common[o.name] = own[t.name] & own[o.name] if own[t.name] is not None and own[o.name] is not None else None
            known = [c for c in common.values() if c is not None]
            at_stake: GtidSet | None = None
            if known:
                at_stake = GtidSet.EMPTY
                for c in known:
                    at_stake = at_stake | c
            out.append(_uuid_finding(uuid, t, others, meet, own, common, at_stake, critical))
    return out


def _uuid_finding(uuid: str, t: IdentityServer, others: Sequence[IdentityServer], meet: Mapping[str, list[str]],
                  own: Mapping[str, GtidSet | None], common: Mapping[str, GtidSet | None],
                  at_stake: GtidSet | None, critical: bool) -> Finding:
    names = ", ".join(o.describe() for o in others)
    where = [m for o in others for m in meet[o.name]]
    if critical:
        reach = "Their data meets: " + "; ".join(where) + "."
    else:
        reach = ("Nothing read in this run brings their transactions together (no common cluster label, source "
                 "or replica, no channel between them); the first server that receives from both will skip "
                 "one side's colliding transactions.")

    def sets(name: str) -> str:
        s = own[name]
        return "unknown" if s is None else (s.to_text(multiline=False) or "none")

    ranges = [f"{t.name} has executed {sets(t.name)} under {uuid}"]
    for o in others:
        c = common[o.name]
        both = "unknown" if c is None else (c.to_text(multiline=False) or "none")
        ranges.append(f"{o.name} has {sets(o.name)}; both have {both}")
    detail = (f"{t.describe()} reports server_uuid {uuid}, as does {names}. {reach} "
              + "; ".join(ranges) + ". Each GTID both have is either a transaction inherited from before the copy "
              "(the same on both) or a collision (a different transaction under the same GTID); gtid_executed "
              "cannot tell which, so compare those transactions on both servers.")
    evidence: dict[str, Any] = {
        "server_uuid": uuid, "server_id": t.server_id, "cluster": t.cluster,
        "twins": ", ".join(o.describe() for o in others),
        "data_meets": "\n".join(where) or None,
        "gtid_executed_of_uuid": _text(own[t.name]),
    }
    for o in others:
        evidence[f"gtid_executed_of_uuid_on_{o.name}"] = _text(own[o.name])
        evidence[f"common_with_{o.name}"] = _text(common[o.name])
    info = IDENTITY_CHECKS["duplicate_server_uuid"]
    return Finding(
        check_id="duplicate_server_uuid", severity=Severity.CRITICAL if critical else Severity.WARNING,
        server=t.name,
        title=f"{t.name} shares server_uuid {uuid} with {', '.join(o.name for o in others)}",
        detail=detail, check_version=info.version, gtid_set=at_stake or None, evidence=evidence,
        remediation=info.remediation)


def check_duplicate_server_id(servers: Sequence[IdentityServer], replication_group: str | None = None) -> list[Finding]:
    """``duplicate_server_uuid`` (server_id part) for one replication group: ``servers`` are its
    members (``replication_group`` names it, for the text); every server_id two or more of them
    report is critical on each. An unknown server_id matches nothing."""
    by_id: dict[int, dict[str, IdentityServer]] = {}
    for s in servers:
        if s.server_id is not None:
            by_id.setdefault(s.server_id, {})[s.name] = s
    out: list[Finding] = []
    info = IDENTITY_CHECKS["duplicate_server_uuid"]
    group_text = f" (replication group of {replication_group})" if replication_group else ""
    for server_id, members in sorted(by_id.items()):
        if len(members) < 2:
            continue
        for name in sorted(members):
            others = ", ".join(o for o in sorted(members) if o != name)
            out.append(Finding(
                check_id="duplicate_server_uuid", severity=Severity.CRITICAL, server=name,
                title=f"{name} shares server_id {server_id} with {others} in one replication group",
                detail=(f"{name} reports server_id {server_id}, as does {others}, and they are connected by "
                        f"replication channels{group_text}. A receiver drops every event carrying its own server_id "
                        "(the circular-replication guard), so a server downstream of another with its server_id "
                        "silently misses the transactions that server originated; a replica refuses a source with "
                        "its server_id (13117 'equal MySQL server ids'), e.g. after a failover."),
                check_version=info.version, remediation=info.remediation,
                evidence={"server_id": server_id, "server_uuid": members[name].server_uuid,
                          "same_server_id": others, "replication_group": replication_group}))
    return out


def replication_groups(servers: Sequence[IdentityServer]) -> dict[str, str]:
    """Each server's replication group: the smallest name of its connected component over the
    ``sources`` / ``replicas`` edges (direction ignored). The audit job computes the same labels
    with Spark (``jobs.audit.replication_group_frame``)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for s in servers:
        find(s.name)
        for other in (*s.sources, *s.replicas):
            ra, rb = find(s.name), find(other)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return {n: find(n) for n in list(parent)}


def check_duplicate_identities(servers: Sequence[IdentityServer]) -> list[Finding]:
    """Both parts over a whole inventory held in memory (tests, the sandbox): identity groups by
    server_uuid, and by (replication group, server_id). The audit job forms the same groups with
    Spark and calls :func:`check_duplicate_server_uuid` / :func:`check_duplicate_server_id` per
    group; a server in both gets two findings with one key, merged by the job. A channel given on
    one side only (a server's ``sources``, or its source's ``replicas``) counts on both."""
    edges = {(s.name, src) for s in servers for src in s.sources} | {(r, s.name) for s in servers for r in s.replicas}
    servers = [dataclasses.replace(s, sources=frozenset(src for rep, src in edges if rep == s.name),
                                   replicas=frozenset(rep for rep, src in edges if src == s.name)) for s in servers]
    out = check_duplicate_server_uuid(servers)
    groups = replication_groups(servers)
    members: dict[str, list[IdentityServer]] = {}
    for s in servers:
        members.setdefault(groups[s.name], []).append(s)
    for group, group_servers in sorted(members.items()):
        out.extend(check_duplicate_server_id(group_servers, group))
    return out
