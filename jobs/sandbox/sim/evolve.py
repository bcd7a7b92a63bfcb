"""The simulated fleet from one night to the next (issue #20's simulated year, ``benchmarks/nights.py``).

Between two nights, :func:`next_night` changes a :class:`~jobs.sandbox.sim.model.SimFleet` the
way a production fleet changes in a day, keeping every server's replication state coherent and
the truth (the findings the audit must report) exact:

* **Sources write.** Every source of a healthy replication cluster (not a group, not a fault
  scenario) commits some transactions of its own ``server_uuid``; its replicas, caught up, receive
  them through their channels, apply them and log them (``log_replica_updates``), down a chain and
  into a multi-source replica. The relay log's tail is the last transactions received, complete.
* **Binary logs rotate and are purged.** Every server that wrote gets a new binary log whose
  ``Previous_gtids`` is its ``gtid_executed`` before the night; past ``binlog_keep`` files the
  oldest are purged and ``gtid_purged`` becomes the first kept file's ``Previous_gtids``. Purging
  never takes what a replica needs: every replica of a healthy cluster is caught up.
* **Faults come and go.** Each fault scenario (a consistency fault's cluster, a collection
  fault's server) is repaired with probability ``1 / fault_nights`` (the DBA rebuilt it: its
  servers are retired with their truth), and as many new ones of the same family (collection or
  consistency) are added, their kinds taken in turn from an index that moves with the night.
* **Servers are added and retired.** A healthy cluster is decommissioned with probability
  ``retire_rate``; as many servers are added as new healthy clusters.
* **Replicas move.** With probability ``move_rate`` a cluster's last direct replica is repointed
  (``STOP REPLICA``, ``CHANGE REPLICATION SOURCE TO`` a new host and port with
  ``SOURCE_AUTO_POSITION``, ``START REPLICA``) to replicate from its first replica, making a
  chain; a replica of a replica is repointed back to the cluster's source. With both threads
  stopped and no relay log position given, the change deletes the relay logs, so the channel's
  Retrieved_Gtid_Set starts empty and holds what the new source sends.

Group Replication clusters and fault scenarios do not write: their state is the scenario's.
The same fleet, night and seed give the same next night (ports and addresses included).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from gtid_core import GtidSet
from jobs.sandbox.sim.model import (DEFAULT_VERSIONS, FleetBuilder, SimBinlog, SimChannel, SimFleet, SimServer,
                                    _gtid_text, _iv, _text, add_collection_fault, add_consistency_fault,
                                    add_healthy_cluster, binlog_size, last_gtids, transaction_events)

__all__ = ["Churn", "NightChange", "next_night", "fault_units"]


@dataclass(frozen=True)
class Churn:
    """How much the fleet changes in a night (the defaults: a year of a fleet that keeps its size)."""

    writes: tuple[int, int] = (20, 200)     # transactions a source commits in a night (range, inclusive)
    binlog_keep: int = 7                    # binary logs a server keeps; older ones are purged
    fault_nights: float = 20.0              # a fault scenario lasts this many nights on average
    retire_rate: float = 0.003              # share of the healthy clusters decommissioned each night
    move_rate: float = 0.004                # share of the healthy clusters where a replica moves each night


@dataclass
class NightChange:
    """What :func:`next_night` did."""

    night: int
    transactions: int = 0
    purged_files: int = 0
    faults_repaired: int = 0
    faults_added: int = 0
    servers_retired: int = 0
    servers_added: int = 0
    replicas_moved: int = 0

    def line(self) -> str:
        return (f"night={self.night} transactions={self.transactions} purged_files={self.purged_files} "
                f"faults=-{self.faults_repaired}/+{self.faults_added} servers=-{self.servers_retired}/"
                f"+{self.servers_added} moved={self.replicas_moved}")


def _is_fault_cluster(cluster: str) -> bool:
    return cluster.startswith("f")


def _is_collection_fault(server: SimServer) -> bool:
    return server.fault is not None or server.name.startswith("sa")


def fault_units(fleet: SimFleet) -> dict[str, list[SimServer]]:
    """The fault scenarios of ``fleet``: a consistency fault's servers by its cluster, a collection
    fault's server by its name."""
    units: dict[str, list[SimServer]] = {}
    for s in fleet.servers:
        if _is_collection_fault(s):
            units.setdefault(s.name, []).append(s)
        elif _is_fault_cluster(s.cluster):
            units.setdefault(s.cluster, []).append(s)
    return units


def _healthy_clusters(fleet: SimFleet) -> dict[str, list[SimServer]]:
    clusters: dict[str, list[SimServer]] = {}
    for s in fleet.servers:
        if not _is_collection_fault(s) and not _is_fault_cluster(s.cluster):
            clusters.setdefault(s.cluster, []).append(s)
    return clusters


def _retire(fleet: SimFleet, servers: list[SimServer]) -> None:
    gone = {s.name for s in servers}
    fleet.servers[:] = [s for s in fleet.servers if s.name not in gone]
    fleet.truth[:] = [t for t in fleet.truth if t.server not in gone and t.source not in gone]
    fleet.readiness[:] = [r for r in fleet.readiness if r.source not in gone and r.candidate not in gone]


def _next_file(name: str) -> str:
    """The file after ``name`` in its sequence: ``binlog.000007`` -> ``binlog.000008``."""
    prefix, _, number = name.rpartition(".")
    return f"{prefix}.{int(number) + 1:0{len(number)}d}"


def _rotate(server: SimServer, written: GtidSet, keep: int) -> int:
    """A new binary log holding ``written``; files past ``keep`` purged. Returns the files purged."""
    executed = GtidSet.parse(server.gtid_executed)
    v = server.mysql_version
    server.binary_logs.append(SimBinlog(_next_file(server.binary_logs[-1].name), _text(executed),
                                        _text(written), binlog_size(v, executed, written)))
    server.gtid_executed = _text(executed | written)
    purged = max(0, len(server.binary_logs) - keep)
    if purged:
        del server.binary_logs[:purged]
        server.gtid_purged = server.binary_logs[0].previous_gtids
    return purged


def _receive(replica: SimServer, channel: SimChannel, upstream: SimServer, received: GtidSet) -> None:
    """``channel`` of ``replica`` caught up with ``upstream``: ``received`` added to its
    Retrieved_Gtid_Set, its positions at the end of the upstream's newest binary log, and its relay
    log a new file ending with the last transactions received, all applied."""
    retrieved = GtidSet.parse(channel.retrieved) | received
    last = upstream.binary_logs[-1]
    events, pos, end = FleetBuilder._relay_header(replica.mysql_version, replica, upstream, last.name, retrieved)
    tail = last_gtids(received, 2) if received else last_gtids(retrieved, 2)   # none after a repoint
    for gtid in tail:
        ev, pos, end = transaction_events(gtid, pos, end, upstream.server_id)
        events += ev
    channel.retrieved = _text(retrieved)
    channel.source, channel.source_host, channel.source_port = upstream.name, upstream.host, upstream.port
    channel.source_uuid, channel.source_server_id = upstream.server_uuid, upstream.server_id
    channel.source_log_file, channel.read_pos, channel.exec_pos = last.name, last.size, last.size
    channel.relay_log_file, channel.relay_log_pos = _next_file(channel.relay_log_file), pos
    channel.relay_events = events
    channel.last_queued = _gtid_text(tail)
    channel.status_executed = None     # a row read across a commit is one instant, not a state that lasts


def _write(servers: list[SimServer], rng: random.Random, churn: Churn, change: NightChange) -> None:
    """One night of writes in a healthy replication cluster, sources first, then down its channels."""
    by_name = {s.name: s for s in servers}
    written: dict[str, GtidSet] = {}
    pending = list(servers)
    while pending:
        progressed = False
        for server in list(pending):
            if any(ch.source not in written for ch in server.channels if ch.source in by_name):
                continue
            pending.remove(server)
            progressed = True
            if not server.channels:
                last = FleetBuilder._last_gno(GtidSet.parse(server.gtid_executed), server.server_uuid)
                new = _iv(server.server_uuid, last + 1, last + rng.randint(*churn.writes))
                change.transactions += new.count()
            else:
                new = GtidSet.EMPTY
                for ch in server.channels:
                    got = written.get(ch.source, GtidSet.EMPTY) - GtidSet.parse(server.gtid_executed)
                    new = new | got
            written[server.name] = new
            change.purged_files += _rotate(server, new, churn.binlog_keep)
            for ch in server.channels:
                if ch.source in by_name:
                    _receive(server, ch, by_name[ch.source], written[ch.source])
        if not progressed:
            raise ValueError(f"cluster {servers[0].cluster}: its channels form a cycle")


def _move(servers: list[SimServer], rng: random.Random) -> bool:
    """Repoint one replica of a single-source cluster: its last direct replica under its first one,
    or a replica of a replica back under the source. False when the cluster has no such replica."""
    sources = [s for s in servers if not s.channels]
    if len(sources) != 1 or any(len(s.channels) != 1 for s in servers if s.channels):
        return False
    source = sources[0]
    direct = [s for s in servers if s.channels and s.channels[0].source == source.name]
    chained = [s for s in servers if s.channels and s.channels[0].source != source.name]
    leaves = [s for s in direct[1:] if not any(r.channels[0].source == s.name for r in servers if r.channels)]
    if chained and (not leaves or rng.random() < 0.5):
        replica, upstream = chained[-1], source
    elif leaves:
        replica, upstream = leaves[-1], direct[0]
    else:
        return False
    if replica.mysql_version.triple[:2] != upstream.mysql_version.triple[:2]:
        return False
    channel = replica.channels[0]
    channel.retrieved = ""        # the relay logs deleted by CHANGE REPLICATION SOURCE TO
    _receive(replica, channel, upstream, GtidSet.EMPTY)
    return True


def next_night(fleet: SimFleet, night: int, *, churn: Churn = Churn(),
               versions: tuple[str, ...] = DEFAULT_VERSIONS) -> NightChange:
    """Change ``fleet`` in place from night ``night - 1`` to night ``night`` (see the module's
    docstring); returns what changed."""
    rng = random.Random(fleet.seed * 1_000_003 + night)
    b = FleetBuilder.resume(fleet, seed=fleet.seed * 7_777_777 + night)
    change = NightChange(night)
    # faults come and go
    repaired = [unit for _, unit in sorted(fault_units(fleet).items()) if rng.random() < 1 / churn.fault_nights]
    for unit in repaired:
        _retire(fleet, unit)
    change.faults_repaired = len(repaired)
    for k, unit in enumerate(repaired):
        is_collection = _is_collection_fault(unit[0])
        prefix = f"{'sa' if is_collection else 'f'}{night:03d}x{k:03d}"
        # the next kinds in turn, by how many were added before: a year sees every kind
        kind = night * 7 + k
        before = len(fleet.servers)
        if is_collection:
            add_collection_fault(b, kind, prefix, versions)
        else:
            add_consistency_fault(b, kind, prefix, versions)
        change.servers_added += len(fleet.servers) - before
        change.faults_added += 1
    # servers retired and added
    healthy = _healthy_clusters(fleet)
    retired = 0
    for name, servers in sorted(healthy.items()):
        if rng.random() < churn.retire_rate:
            _retire(fleet, servers)
            retired += len(servers)
    change.servers_retired = retired + sum(len(u) for u in repaired)
    added, k = 0, 0
    while added < retired:
        added += len(add_healthy_cluster(b, f"n{night:03d}x{k:03d}", retired - added, versions))
        k += 1
    change.servers_added += added
    fleet.allocated = b.fleet().allocated
    # sources write, binary logs rotate and are purged; replicas move
    for name, servers in sorted(_healthy_clusters(fleet).items()):
        if any(s.group is not None for s in servers):
            continue
        if rng.random() < churn.move_rate and _move(servers, rng):
            change.replicas_moved += 1
        _write(servers, rng, churn, change)
    return change
