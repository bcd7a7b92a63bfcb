"""The driver's side of collection: in which order the servers are read.

A replica must be read before its source (docs/collection.md says why: ``errant_transactions``
compares the replica's gtid_executed with a *later* read of its source's). :func:`plan_read_order`
groups the servers by replication component and orders each group deepest replica first, from
one :class:`Probe` per server: its server_uuid, the names it answers to and each channel's
source. The probes come from a light read of every server (``jobs.collector.probe_server``) or,
on later nights, from the previous run's tables (:mod:`jobs.topology`).
:func:`inventory_for_resolution` is what the source resolver (``jobs.pairs``) knows of the run's
servers. Standard library only.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Mapping, Sequence

from jobs.pairs import InventoryServer, SourceResolver
from jobs.server_spec import ServerSpec

__all__ = ["Probe", "ReadPlan", "plan_read_order", "inventory_for_resolution"]


@dataclass(frozen=True)
class Probe:
    """What planning needs from one server: its uuid and the sources/replicas it names."""

    name: str
    server_uuid: str | None
    sources: tuple[tuple[str | None, int | None, str | None], ...] = ()   # (host, port, uuid) per channel
    replicas: tuple[tuple[str | None, int | None, str | None], ...] = ()  # from SHOW REPLICAS
    ok: bool = True
    hostname: str | None = None       # @@GLOBAL.hostname, a name replicas may use for it
    reported_port: int | None = None  # @@GLOBAL.port
    encrypted: bool | None = None     # the connection was TLS (None: not connected)

    def topology(self) -> tuple:
        """What planning and source resolution take from the probe, normalised (case, order of
        the channels): two probes with the same topology give the same plan and resolution."""
        return ((self.server_uuid or "").lower(), (self.hostname or "").lower(), self.reported_port,
                tuple(sorted(((h or "").lower(), p or 0, (u or "").lower()) for h, p, u in self.sources)))


@dataclass(frozen=True)
class ReadPlan:
    """Servers grouped by replication component; inside a group, waves read in order (all the
    servers of a wave in parallel), deepest replicas first."""

    groups: tuple[tuple[tuple[str, ...], ...], ...]
    depth: Mapping[str, int]
    read_order: Mapping[str, int]


def plan_read_order(specs: Sequence[ServerSpec], probes: Mapping[str, Probe]) -> ReadPlan:
    """Order the reads so that every replica is read before its source (deepest first).

    A channel's source is the one the checks will audit it against: :class:`jobs.pairs.SourceResolver`
    (the job's one resolver, whose answer becomes ``channels.source_server``) over the run's
    inventory and the probes (:func:`inventory_for_resolution`), by name, alias, IP address and
    Source_UUID, but without DNS queries: planning on the driver never waits on a name server
    (:func:`_numeric_getaddrinfo`). A channel that names its source by a host name the inventory
    does not list falls back to its Source_UUID, as it does at read time when DNS has no answer.
    A channel the resolver leaves unresolved is audited against no source and orders nothing.
    depth(server) = 1 + max depth of its sources (0 without a known source); cycles (circular
    replication) are cut where first met. Servers connected by replication form one group, read
    wave by wave from the deepest depth to 0.
    """
    names = [s.name for s in specs]
    resolver = SourceResolver(inventory_for_resolution(specs, probes), getaddrinfo=_numeric_getaddrinfo)
    sources: dict[str, set[str]] = {n: set() for n in names}
    for n in names:
        probe = probes.get(n)
        for host, port, uuid in (probe.sources if probe else ()):
            found = resolver.resolve(n, host, port, uuid).source
            if found is not None and found != n:
                sources[n].add(found)

    depth: dict[str, int] = {}

    def depth_of(n: str, visiting: frozenset[str]) -> int:
        if n in depth:
            return depth[n]
        parents = [p for p in sources[n] if p not in visiting]
        d = 0 if not parents else 1 + max(depth_of(p, visiting | {n}) for p in parents)
        depth[n] = d
        return d

    for n in names:
        depth_of(n, frozenset())

    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n, srcs in sources.items():
        for s in srcs:
            parent[find(n)] = find(s)
    components: dict[str, list[str]] = {}
    for n in names:
        components.setdefault(find(n), []).append(n)
    groups = []
    read_order: dict[str, int] = {}
    for members in components.values():
        top = max(depth[m] for m in members)
        waves = []
        for d in range(top, -1, -1):
            wave = tuple(sorted(m for m in members if depth[m] == d))
            if wave:
                for m in wave:
                    read_order[m] = top - d
                waves.append(wave)
        groups.append(tuple(waves))
    groups.sort(key=lambda g: (-sum(len(w) for w in g), g[0][0]))
    return ReadPlan(tuple(groups), depth, read_order)


def _numeric_getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
    """``socket.getaddrinfo`` for IP literals only (``AI_NUMERICHOST``): a host name is no address
    here (``socket.gaierror``) rather than a DNS query."""
    return socket.getaddrinfo(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)


def inventory_for_resolution(specs: Sequence[ServerSpec], probes: Mapping[str, Probe]) -> list[InventoryServer]:
    """What the source resolver knows of the run's servers: configured names, addresses and
    aliases, plus the probed server_uuid, hostname and port."""
    out = []
    for s in specs:
        probe = probes.get(s.name)
        out.append(InventoryServer(
            name=s.name, host=s.host, port=s.port, cluster=s.cluster,
            aliases=s.alias_texts(),
            server_uuid=probe.server_uuid if probe else None,
            hostname=probe.hostname if probe else None,
            reported_port=probe.reported_port if probe else None))
    return out
