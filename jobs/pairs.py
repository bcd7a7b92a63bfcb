"""Source resolution: which inventory server is each replica channel's source?

A channel names its source by ``Source_Host:Source_Port`` (where the receiver connects next) and
``Source_UUID`` (the server_uuid it got at the last connection). The auditor resolves the address
to an inventory server, then cross-checks the UUID:

1. ``Source_Host`` compared (case-insensitively) with every server's configured name, host,
   aliases and ``@@hostname``, together with the port;
2. otherwise both sides are resolved with ``socket.getaddrinfo`` and compared by IP and port.
   Loopback-safe: a loopback ``Source_Host`` (``127.0.0.1``, ``::1``, ``localhost``) means the
   replica's own machine, so it is matched against the servers that share the *replica's* host,
   never against whatever the auditor's machine calls localhost;
3. several candidates (two names for one address) are told apart by ``Source_UUID``;
4. no candidate by address, but ``Source_UUID`` belongs to exactly one server of this run: that
   server (``method = 'source_uuid'``), e.g. a virtual IP that is not in the inventory.

Anything else is ``source_unresolved`` — a finding, never a silent skip — and a resolved source
whose ``server_uuid`` differs from the channel's ``Source_UUID`` is ``source_uuid_mismatch`` (the
address now leads to another server than the one the replica last replicated from: a rebuilt
source, a moved VIP, a failover the replica has not seen yet).
"""
from __future__ import annotations

import functools
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "InventoryServer",
    "Resolution",
    "SourceResolver",
    "inventory_from_rows",
]

GetAddrInfo = Callable[..., list]


@dataclass(frozen=True)
class InventoryServer:
    """What resolution needs to know about one server of this run."""

    name: str
    host: str
    port: int
    cluster: str | None = None
    aliases: tuple[str, ...] = ()   # "host" or "host:port"
    server_uuid: str | None = None  # NULL when the server could not be read
    hostname: str | None = None     # @@GLOBAL.hostname
    reported_port: int | None = None  # @@GLOBAL.port


@dataclass(frozen=True)
class Resolution:
    """The outcome for one channel. ``source`` is None when unresolved (``problem`` says why);
    ``uuid_mismatch`` is set when the resolved server's server_uuid is not ``Source_UUID``."""

    source: str | None
    method: str | None  # 'name', 'address', 'source_uuid'
    problem: str | None = None
    candidates: tuple[str, ...] = ()
    uuid_mismatch: str | None = None
    source_uuid_owner: str | None = None  # registry owner of Source_UUID, if known
    evidence: Mapping[str, Any] = field(default_factory=dict)


def _split_alias(alias: str, default_port: int) -> tuple[str, int]:
    alias = alias.strip()
    if alias.startswith("["):  # [::1]:3306
        host, _, rest = alias[1:].partition("]")
        return host.lower(), int(rest[1:]) if rest.startswith(":") else default_port
    if alias.count(":") == 1:
        host, port = alias.rsplit(":", 1)
        if not port.isdigit():
            raise ValueError(f"alias {alias!r}: port {port!r} is not a number")
        return host.lower(), int(port)
    return alias.lower(), default_port


def inventory_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[InventoryServer]:
    """Inventory from ``servers`` table rows (``aliases`` is comma-separated text)."""
    out = []
    for r in rows:
        aliases = tuple(a.strip() for a in (r.get("aliases") or "").split(",") if a.strip())
        out.append(InventoryServer(
            name=r["server"], host=r["host"], port=int(r["port"]), cluster=r.get("cluster"),
            aliases=aliases, server_uuid=(r.get("server_uuid") or None) and r["server_uuid"].lower(),
            hostname=r.get("hostname"), reported_port=r.get("reported_port"),
        ))
    return out


@functools.lru_cache(maxsize=4096)
def _is_loopback(ip: str) -> bool:
    # cached: every source a read resolves asks it of each of its addresses, and parsing an
    # address is most of the resolution's Python (issue #21)
    try:
        return ipaddress.ip_address(ip.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


class SourceResolver:
    """Resolves channels against one run's inventory. DNS answers are cached per host name."""

    def __init__(self, inventory: Iterable[InventoryServer],
                 uuid_registry: Mapping[str, str] | None = None,
                 getaddrinfo: GetAddrInfo = socket.getaddrinfo):
        self.servers = {s.name: s for s in inventory}
        self.uuid_registry = {k.lower(): v for k, v in (uuid_registry or {}).items()}
        self._getaddrinfo = getaddrinfo
        self._dns: dict[str, frozenset[str]] = {}
        self._by_name: dict[tuple[str, int], set[str]] = {}
        self._by_uuid: dict[str, set[str]] = {}
        self._index: tuple[dict[tuple[str, int], set[str]], dict[int, set[str]]] | None = None
        self._index_lock = threading.Lock()  # one resolver serves a task's reading threads
        for s in self.servers.values():
            keys = {(s.name.lower(), s.port), (s.host.lower(), s.port)}
            keys |= {_split_alias(a, s.port) for a in s.aliases}
            if s.hostname:
                keys.add((s.hostname.lower(), s.reported_port or s.port))
            for k in keys:
                self._by_name.setdefault(k, set()).add(s.name)
            if s.server_uuid:
                self._by_uuid.setdefault(s.server_uuid, set()).add(s.name)

    def ips(self, host: str) -> frozenset[str]:
        """The IP addresses ``host`` resolves to (empty when it does not resolve)."""
        key = host.strip().lower()
        if key not in self._dns:
            try:
                infos = self._getaddrinfo(key, None, 0, socket.SOCK_STREAM)
                answer = frozenset(i[4][0].split("%", 1)[0] for i in infos)
            except (socket.gaierror, UnicodeError, OSError):
                answer = frozenset()
            # the first answer wins: threads that asked at once (round-robin DNS) see one answer,
            # the same one the address index was built from
            return self._dns.setdefault(key, answer)
        return self._dns[key]

    def _server_ips(self, s: InventoryServer) -> set[tuple[str, int]]:
        pairs = {(ip, s.port) for ip in self.ips(s.host)}
        for alias in s.aliases:
            h, p = _split_alias(alias, s.port)
            pairs |= {(ip, p) for ip in self.ips(h)}
        return pairs

    def _address_index(self) -> tuple[dict[tuple[str, int], set[str]], dict[int, set[str]]]:
        """``(ip, port) -> servers`` over every inventory address, and ``port -> servers`` for the
        servers configured at a loopback IP. Built once, on the first address lookup (one DNS
        query per inventory host name), so that each lookup is a dictionary access: a linear scan
        of the inventory per channel made collection quadratic in the fleet's size."""
        with self._index_lock:
            if self._index is None:
                by_ip: dict[tuple[str, int], set[str]] = {}
                loopback_by_port: dict[int, set[str]] = {}
                for s in self.servers.values():
                    for ip, p in self._server_ips(s):
                        by_ip.setdefault((ip, p), set()).add(s.name)
                        if _is_loopback(ip):
                            loopback_by_port.setdefault(p, set()).add(s.name)
                self._index = (by_ip, loopback_by_port)
            return self._index

    def _by_address(self, replica: InventoryServer | None, host: str, port: int) -> set[str]:
        target = self.ips(host)
        if not target:
            return set()
        if all(_is_loopback(ip) for ip in target):
            # The replica's loopback: its own machine. Compare with the replica's host addresses.
            if replica is None:
                return set()
            by_ip, loopback_by_port = self._address_index()
            own = self.ips(replica.host)
            if own and all(_is_loopback(ip) for ip in own):
                # the replica itself is configured by a loopback address (one-machine fleet):
                # its neighbours are the servers configured by a loopback address too.
                return set(loopback_by_port.get(port, ()))
            target = own
        else:
            by_ip, _ = self._address_index()
        return {name for ip in target for name in by_ip.get((ip, port), ())}

    def resolve(self, replica: str, source_host: str | None, source_port: int | None,
                source_uuid: str | None) -> Resolution:
        """Resolve one channel of ``replica`` (an inventory name)."""
        rep = self.servers.get(replica)
        uuid = (source_uuid or "").strip().lower() or None
        owner = self.uuid_registry.get(uuid) if uuid else None
        evidence = {"source_host": source_host, "source_port": source_port, "source_uuid": uuid}
        if not source_host or source_port is None:
            return Resolution(None, None, f"the channel has no source address "
                              f"(Source_Host={source_host!r}, Source_Port={source_port!r})",
                              source_uuid_owner=owner, evidence=evidence)
        if _looks_loopback(source_host):
            # never compare a loopback name literally: it is relative to the replica's machine
            candidates, method = self._by_address(rep, source_host, int(source_port)), "address"
        else:
            # names first: no DNS query for a channel that names its source as the inventory does
            candidates = set(self._by_name.get((source_host.strip().lower(), int(source_port)), ()))
            method = "name"
            if not candidates:
                candidates, method = self._by_address(rep, source_host, int(source_port)), "address"
        if len(candidates) > 1 and uuid:
            narrowed = {c for c in candidates if self.servers[c].server_uuid == uuid}
            if len(narrowed) == 1:
                candidates = narrowed
        if len(candidates) > 1:
            return Resolution(None, None, f"{source_host}:{source_port} matches several inventory "
                              f"servers {sorted(candidates)!r} and Source_UUID {uuid!r} does not "
                              f"tell them apart", tuple(sorted(candidates)),
                              source_uuid_owner=owner, evidence=evidence)
        if not candidates:
            by_uuid = self._by_uuid.get(uuid, set()) if uuid else set()
            if len(by_uuid) == 1:
                (name,) = by_uuid
                return Resolution(name, "source_uuid", source_uuid_owner=owner,
                                  evidence={**evidence, "resolved_server_uuid": uuid})
            why = f"{source_host}:{source_port} is no inventory server (by name, alias or address)"
            if uuid:
                why += (f", and Source_UUID {uuid} belongs to no server of this run"
                        + (f" (the UUID registry last saw it on {owner!r})" if owner else ""))
            return Resolution(None, None, why, source_uuid_owner=owner, evidence=evidence)
        (name,) = candidates
        found = self.servers[name].server_uuid
        mismatch = None
        if uuid and found and uuid != found:
            mismatch = (f"Source_UUID {uuid} (last connection) differs from the server_uuid "
                        f"{found} of {name!r} now at {source_host}:{source_port}"
                        + (f"; the UUID registry says {uuid} was {owner!r}" if owner else ""))
        return Resolution(name, method, candidates=(name,), uuid_mismatch=mismatch,
                          source_uuid_owner=owner,
                          evidence={**evidence, "resolved_server_uuid": found})


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def _looks_loopback(host: str) -> bool:
    """A loopback IP literal or a standard loopback name (decided without any DNS query)."""
    host = host.strip().lower().strip("[]")
    return host in _LOOPBACK_NAMES or _is_loopback(host)
