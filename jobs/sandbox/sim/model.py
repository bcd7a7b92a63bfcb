"""The simulated fleet: clusters with coherent replication state, faults, and the truth.

Everything here is plain data (JSON round-trip) so the simulator processes, the tests and the
benchmark share one model. A replica's sets are derived from its source's: it was provisioned
from a backup of the source (``gtid_purged`` = the backup's set), received the rest through its
channel (``Retrieved_Gtid_Set``) and applied it (``gtid_executed``). A source's binary logs
partition its history: the first file's ``Previous_gtids`` is ``gtid_purged`` and each later
file's is the previous one plus what the file before it holds.

Group Replication members (5.7.17+, :meth:`FleetBuilder.group`) hold the group name's transactions,
each a little behind the primary at most by what its applier channel has received; a member's
:class:`SimGroup` is its view of the group, its settings and its applier channel.

Faults are injected by construction, and each writes its truth: the findings
``(check_id, server, source, severity)`` the audit must report, as the real server of that
version would behave (see :data:`SCENARIOS`). Healthy servers are configured so that no check
applies to them (sync_binlog=1, innodb_flush_log_at_trx_commit=1, enforce_gtid_consistency=ON,
relay_log_recovery=ON, AUTO_POSITION, commit order preserved with parallel appliers).
"""
from __future__ import annotations

import dataclasses
import json
import random
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from gtid_core import GtidSet
from gtid_core.versions import MySQLVersion
from jobs.sandbox.sim.dialects import shape_for

__all__ = ["SimBinlog", "SimChannel", "SimGroup", "SimGroupMember", "SimServer", "SimFleet", "Truth", "ReadinessTruth",
           "FleetBuilder", "generate", "add_collection_fault", "add_consistency_fault", "add_healthy_cluster", "COLLECTION_FAULTS", "CONSISTENCY_FAULTS", "DEFAULT_VERSIONS", "PASSWORD"]

PASSWORD = "sim-audit-password"          # the audit account's password on every simulated server
DEFAULT_VERSIONS = ("5.6.51", "5.7.44", "8.0.21", "8.0.36", "8.4.3", "9.7.4")
COLLECTION_FAULTS = ("refused", "silent", "slow", "auth", "privilege", "garbage", "dropped", "gtid_off")
CONSISTENCY_FAULTS = ("errant", "errant_tagged", "purged_required", "silent_purged_gap", "bug72392",
                      "reset_replica", "relay_tail", "group_errant", "group_unrecoverable")
GROUP_SHARE = 0.03     # of the healthy clusters generate() builds on 5.7.17+, the share that are groups


@dataclass
class SimBinlog:
    name: str
    previous_gtids: str
    gtids: str                 # the transactions written to this file
    size: int = 0


@dataclass
class SimChannel:
    name: str
    source: str
    source_host: str
    source_port: int
    source_uuid: str
    source_server_id: int
    retrieved: str
    source_log_file: str
    read_pos: int
    exec_pos: int
    relay_log_file: str
    relay_log_pos: int
    relay_events: list[list[Any]] = field(default_factory=list)   # [pos, type, server_id, end_log_pos, info]
    io_running: str = "Yes"
    sql_running: str = "Yes"
    last_io_errno: int = 0
    last_io_error: str = ""
    io_state: str = "Waiting for source to send event"
    sql_state: str = "Replica has read all relay log; waiting for more updates"
    auto_position: int = 1
    last_queued: str = ""
    queueing: str = ""       # QUEUEING_TRANSACTION (8.0.2+): a receiver stopped inside a group
    # Executed_Gtid_Set as SHOW REPLICA STATUS shows it when it filled that column before a commit
    # and the positions after it (None: gtid_executed, as almost always)
    status_executed: str | None = None


@dataclass
class SimGroupMember:
    """One member as a member's view shows it: its replication_group_members row and its
    replication_group_member_stats row (every member's from 8.0.2, only the local one's before)."""

    member_id: str
    host: str
    port: int
    state: str                  # ONLINE, RECOVERING, OFFLINE, ERROR, UNREACHABLE
    role: str                   # PRIMARY / SECONDARY; '' when OFFLINE
    version: str                # '' when OFFLINE
    in_queue: int = 0           # waiting for certification
    checked: int = 0
    conflicts: int = 0
    rows_validating: int = 0
    committed_all_members: str = ""
    last_conflict_free: str = ""
    remote_in_applier_queue: int = 0    # certified, not applied yet
    remote_applied: int = 0
    local_proposed: int = 0
    local_rollback: int = 0


@dataclass
class SimGroup:
    """A server's Group Replication: its settings, its view of the group (only itself, OFFLINE,
    when Group Replication is stopped), and its group_replication_applier channel."""

    group_name: str
    view_id: str                         # '' when OFFLINE
    members: list[SimGroupMember]
    received: str                        # group_replication_applier's RECEIVED_TRANSACTION_SET
    last_queued: str = ""
    running: bool = True                 # group_replication_applier's SERVICE_STATE
    single_primary: bool = True
    enforce_update_everywhere_checks: bool = False
    member_weight: int = 50
    view_change_uuid: str = "AUTOMATIC"
    consistency: str = "EVENTUAL"
    communication_stack: str = "XCom"


@dataclass
class SimServer:
    name: str
    host: str
    port: int
    version: str
    cluster: str
    server_id: int
    server_uuid: str
    gtid_executed: str
    gtid_purged: str
    binary_logs: list[SimBinlog] = field(default_factory=list)
    channels: list[SimChannel] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)    # overrides of the defaults
    fault: str | None = None                 # a collection fault (COLLECTION_FAULTS)
    fault_arg: float | None = None           # slow: seconds per statement; dropped: statements before the drop
    password: str = PASSWORD
    group: SimGroup | None = None            # a Group Replication member (5.7.17+)

    @property
    def mysql_version(self) -> MySQLVersion:
        return MySQLVersion.parse(self.version)


@dataclass(frozen=True)
class Truth:
    """One finding the audit must report (``gtid_set``: its set, where a scenario names it). Only
    warning and critical truths are scored (:mod:`.score`); an info truth says what the audit
    must note without alerting."""

    check_id: str
    server: str
    source: str | None
    severity: str
    scenario: str
    gtid_set: str | None = None


@dataclass(frozen=True)
class ReadinessTruth:
    """The failover_readiness row a single-primary group must get: if ``source`` (its primary) left,
    the group would elect ``candidate``, and the verdict would be ``verdict`` (safe, or
    safe_after_catch_up when the elected member has certified transactions left to apply)."""

    source: str
    candidate: str
    verdict: str
    scenario: str


@dataclass
class SimFleet:
    servers: list[SimServer]
    truth: list[Truth]
    seed: int = 0
    readiness: list[ReadinessTruth] = field(default_factory=list)
    base_port: int = 0       # the builder's: a later night's new servers get addresses after ...
    allocated: int = 0       # ... the ``allocated`` addresses and server ids handed out so far

    # -- persistence -------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "SimFleet":
        data = json.loads(text)
        servers = []
        for s in data["servers"]:
            s["binary_logs"] = [SimBinlog(**b) for b in s["binary_logs"]]
            s["channels"] = [SimChannel(**c) for c in s["channels"]]
            if s.get("group"):
                g = s["group"]
                s["group"] = SimGroup(**{**g, "members": [SimGroupMember(**m) for m in g["members"]]})
            servers.append(SimServer(**s))
        return cls(servers, [Truth(**t) for t in data["truth"]], data.get("seed", 0),
                   [ReadinessTruth(**r) for r in data.get("readiness", [])], data.get("base_port", 0),
                   data.get("allocated", 0))

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json())
        return path

    @classmethod
    def load(cls, path: str | Path) -> "SimFleet":
        return cls.from_json(Path(path).read_text())

    def server(self, name: str) -> SimServer:
        for s in self.servers:
            if s.name == name:
                return s
        raise KeyError(name)

    def write_audit_config(self, path: str | Path, *, warehouse: str, password_file: str | Path,
                           collection: dict[str, Any] | None = None, spark: dict[str, Any] | None = None,
                           connect_timeout_s: float = 5, read_timeout_s: float = 10) -> Path:
        """The auditor's YAML config for this fleet (like ``Fleet.write_audit_config``)."""
        pw = Path(password_file)
        pw.parent.mkdir(parents=True, exist_ok=True)
        pw.write_text(PASSWORD + "\n")
        pw.chmod(0o600)
        config: dict[str, Any] = {
            "warehouse": str(warehouse),
            "defaults": {"user": "audit", "password_file": str(pw.resolve()),
                         "connect_timeout_s": connect_timeout_s, "read_timeout_s": read_timeout_s},
            "servers": [{"name": s.name, "host": s.host, "port": s.port, "cluster": s.cluster}
                        for s in self.servers],
        }
        if collection:
            config["collection"] = collection
        if spark:
            config["spark"] = spark
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("# Written by the gtid-audit fleet simulator (jobs/sandbox/sim).\n"
                       + yaml.safe_dump(config, sort_keys=False))
        return out.resolve()

    def write_truth(self, path: str | Path) -> Path:
        out = Path(path)
        out.write_text("\n".join(json.dumps(dataclasses.asdict(t)) for t in self.truth) + "\n")
        return out


# --------------------------------------------------------------------------------------------
# building blocks

def _gs(*parts: GtidSet | str) -> GtidSet:
    out = GtidSet.EMPTY
    for p in parts:
        out = out | (GtidSet.parse(p) if isinstance(p, str) else p)
    return out


def _iv(uuid: str, first: int, last: int, tag: str | None = None) -> GtidSet:
    if last < first:
        return GtidSet.EMPTY
    return GtidSet.from_intervals([(uuid, tag, first, last)])


def _text(s: GtidSet) -> str:
    return s.to_text(multiline=True)


def format_desc_end(version: MySQLVersion) -> int:
    """End of the Format_description event (its size grew with the versions)."""
    t = version.triple
    return 120 if t < (5, 7, 0) else 123 if t < (8, 0, 0) else 124 if t < (8, 2, 0) else 127


def transaction_events(gtid: tuple[str, str | None, int], pos: int, end: int, server_id: int,
                       table_id: int = 109, complete: bool = True, rows: int = 1) -> tuple[list[list[Any]], int, int]:
    """A row-based transaction's events: Gtid, BEGIN, Table_map, ``rows`` Write_rows, Xid (without
    Xid when incomplete). ``pos`` is the position in this file, ``end`` the End_log_pos in the
    source's binary log. Returns (events, next pos, next end)."""
    uuid, tag, gno = gtid
    kind = "Gtid_tagged_log_event" if tag else "Gtid"
    text = f"{uuid}:{tag}:{gno}" if tag else f"{uuid}:{gno}"
    sizes = [(kind, 79 if not tag else 90, f"SET @@SESSION.GTID_NEXT= '{text}'"), ("Query", 71, "BEGIN"),
             ("Table_map", 45, f"table_id: {table_id} (app.t)")]
    sizes += [("Write_rows", 40, f"table_id: {table_id} flags: ")] * (rows - 1)
    sizes += [("Write_rows", 40, f"table_id: {table_id} flags: STMT_END_F"), ("Xid", 31, f"COMMIT /* xid={gno + 20} */")]
    if not complete:
        sizes = sizes[:-1]
    events = []
    for etype, size, info in sizes:
        events.append([pos, etype, server_id, end + size, info])
        pos, end = pos + size, end + size
    return events, pos, end


def iter_gtids(s: GtidSet, limit: int) -> Iterable[tuple[str, str | None, int]]:
    n = 0
    for uuid, tag, first, last in s:
        for gno in range(first, last + 1):
            if n >= limit:
                return
            yield uuid, tag, gno
            n += 1


def last_gtids(s: GtidSet, count: int) -> list[tuple[str, str | None, int]]:
    out: list[tuple[str, str | None, int]] = []
    for uuid, tag, first, last in reversed(list(s)):
        for gno in range(last, first - 1, -1):
            out.append((uuid, tag, gno))
            if len(out) >= count:
                return list(reversed(out))
    return list(reversed(out))


def binlog_size(version: MySQLVersion, previous: GtidSet, gtids: GtidSet) -> int:
    return format_desc_end(version) + 31 + 40 * len(list(previous)) + 266 * gtids.count()


# --------------------------------------------------------------------------------------------
# the builder

class FleetBuilder:
    """Builds clusters one by one; every server gets its own 127.a.b.c address."""

    def __init__(self, seed: int = 1, base_port: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        # not from the seed: two simulators of the same seed must not want the same ports
        self.base_port = base_port or random.SystemRandom().randrange(20000, 40000)
        self.servers: list[SimServer] = []
        self.truth: list[Truth] = []
        self.readiness: list[ReadinessTruth] = []
        self._count = 0

    # -- identities -----------------------------------------------------------------------------
    def _uuid(self) -> str:
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=1))

    def _address(self) -> tuple[str, int]:
        i = self._count
        self._count += 1
        # spread over 127.0.0.0/8: 127.<1..250>.<0..249>.<1..250>
        return f"127.{1 + i % 250}.{(i // 250) % 250}.{1 + (i // 62500) % 250}", self.base_port + i % 20000

    @classmethod
    def resume(cls, fleet: SimFleet, seed: int) -> "FleetBuilder":
        """A builder that goes on with ``fleet`` (its lists, not copies): new servers get addresses
        and server ids after every one handed out so far, random choices come from ``seed``."""
        if not fleet.base_port or fleet.allocated < len(fleet.servers):
            raise ValueError("this fleet was saved without its builder's base_port and allocated count; "
                             "generate it again to evolve it")
        b = cls(seed, fleet.base_port)
        b.servers, b.truth, b.readiness, b._count = fleet.servers, fleet.truth, fleet.readiness, fleet.allocated
        return b

    def fleet(self) -> SimFleet:
        return SimFleet(self.servers, self.truth, self.seed, self.readiness, self.base_port, self._count)

    def _server(self, name: str, version: str, cluster: str, executed: GtidSet, purged: GtidSet,
                logs: list[SimBinlog], **variables: Any) -> SimServer:
        host, port = self._address()
        server = SimServer(name=name, host=host, port=port, version=version, cluster=cluster,
                           server_id=self._count, server_uuid=self._uuid(), gtid_executed=_text(executed),
                           gtid_purged=_text(purged), binary_logs=logs, variables=dict(variables))
        self.servers.append(server)
        return server

    @staticmethod
    def _binlogs(version: MySQLVersion, purged: GtidSet, chunks: list[GtidSet], prefix: str = "binlog") -> list[SimBinlog]:
        """Binary logs holding ``chunks`` in order, the first starting after ``purged``."""
        logs, previous = [], purged
        for i, chunk in enumerate(chunks):
            logs.append(SimBinlog(f"{prefix}.{i + 1:06d}", _text(previous), _text(chunk),
                                  binlog_size(version, previous, chunk)))
            previous = previous | chunk
        return logs

    # -- a source with its history ------------------------------------------------------------------
    def source(self, name: str, version: str, cluster: str, *, old_uuids: int | None = None,
               transactions: int | None = None, purge: bool = True, tagged: bool = False) -> SimServer:
        v = MySQLVersion.parse(version)
        own = self._uuid()
        k = self.rng.randrange(0, 12) if old_uuids is None else old_uuids
        history = _gs(*[_iv(self._uuid(), 1, self.rng.randrange(5, 5000)) for _ in range(k)])
        m = transactions or self.rng.randrange(30, 400)
        p1, p2 = m // 3, (2 * m) // 3
        purged = (history | _iv(own, 1, p1)) if purge else GtidSet.EMPTY
        chunks = [] if purge else [history | _iv(own, 1, p1)]
        chunks += [_iv(own, p1 + 1, p2), _iv(own, p2 + 1, m)]
        if tagged and v.has_tagged_gtids:
            chunks[-1] = chunks[-1] | _iv(own, 1, self.rng.randrange(1, 30), "app")
        executed = purged
        for c in chunks:
            executed = executed | c
        prefix = "mysql-bin" if v.triple < (8, 0, 0) else "binlog"
        server = self._server(name, version, cluster, executed, purged, self._binlogs(v, purged, chunks, prefix))
        server.server_uuid = own
        return server

    def replica(self, name: str, source: SimServer, version: str | None = None, *, cluster: str | None = None,
                channel: str = "", provisioned: GtidSet | None = None) -> SimServer:
        """A caught-up replica of ``source``: provisioned from a backup (its gtid_purged), the rest
        received and applied through its channel."""
        version = version or source.version
        v = MySQLVersion.parse(version)
        src_exec = GtidSet.parse(source.gtid_executed)
        if provisioned is None:
            provisioned = GtidSet.parse(source.gtid_purged)
            # the backup was taken a little after the purge point
            first_log = GtidSet.parse(source.binary_logs[0].gtids) if source.binary_logs else GtidSet.EMPTY
            provisioned = provisioned | _gs(*[_iv(u, a, a + (b - a) // 2, t) for u, t, a, b in first_log])
        retrieved = src_exec - provisioned
        half = _gs(*[_iv(u, a, a + (b - a) // 2, t) for u, t, a, b in retrieved])
        prefix = "mysql-bin" if v.triple < (8, 0, 0) else "binlog"
        logs = self._binlogs(v, provisioned, [half, retrieved - half], prefix)
        server = self._server(name, version, cluster or source.cluster, src_exec, provisioned, logs,
                              read_only=1, super_read_only=1)
        self.attach(server, source, channel, retrieved)
        return server

    def attach(self, replica: SimServer, source: SimServer, channel: str, retrieved: GtidSet,
               *, tail: int = 2) -> SimChannel:
        """Add a caught-up channel from ``source``; the relay log ends with the last ``tail``
        transactions, all applied."""
        rv = replica.mysql_version
        last = source.binary_logs[-1]
        relay_prefix = f"{replica.name}-relay-bin" + (f"-{channel}" if channel else "")
        relay = f"{relay_prefix}.000003"
        events, pos, end = self._relay_header(rv, replica, source, last.name, retrieved)
        for gtid in last_gtids(retrieved, tail):
            ev, pos, end = transaction_events(gtid, pos, end, source.server_id)
            events += ev
        ch = SimChannel(name=channel, source=source.name, source_host=source.host, source_port=source.port,
                        source_uuid=source.server_uuid, source_server_id=source.server_id,
                        retrieved=_text(retrieved), source_log_file=last.name, read_pos=last.size,
                        exec_pos=last.size, relay_log_file=relay, relay_log_pos=pos, relay_events=events,
                        last_queued=_gtid_text(last_gtids(retrieved, 1)))
        replica.channels.append(ch)
        return ch

    @staticmethod
    def _relay_header(rv: MySQLVersion, replica: SimServer, source: SimServer, source_file: str,
                      retrieved: GtidSet) -> tuple[list[list[Any]], int, int]:
        fd = format_desc_end(rv)
        prev_size = 31 + 40 * len(list(retrieved))
        events = [[4, "Format_desc", replica.server_id, fd, f"Server ver: {replica.version}, Binlog ver: 4"],
                  [fd, "Previous_gtids", replica.server_id, fd + prev_size, _text(retrieved).replace("\n", "")]]
        pos = fd + prev_size
        events.append([pos, "Rotate", source.server_id, 0, f"{source_file};pos=4"])
        pos += 44
        events.append([pos, "Format_desc", source.server_id, fd, f"Server ver: {source.version}, Binlog ver: 4"])
        pos += fd
        return events, pos, fd + 31

    def truth_of(self, check_id: str, server: str, source: str | None, severity: str, scenario: str,
                 gtid_set: GtidSet | None = None) -> None:
        self.truth.append(Truth(check_id, server, source, severity, scenario,
                                gtid_set.to_text(multiline=False) if gtid_set is not None else None))

    # -- healthy shapes -------------------------------------------------------------------------------
    def cluster(self, cluster: str, version: str, replicas: int = 2, *, chain: bool = False,
                tagged: bool = False) -> list[SimServer]:
        src = self.source(f"{cluster}-s", version, cluster, tagged=tagged)
        out, upstream = [src], src
        for i in range(replicas):
            r = self.replica(f"{cluster}-r{i + 1}", upstream, version)
            out.append(r)
            if chain:
                upstream = r
        return out

    def multi_source(self, cluster: str, version: str) -> list[SimServer]:
        """Two sources and a replica with one channel from each (5.7.6+)."""
        a = self.source(f"{cluster}-a", version, cluster)
        b = self.source(f"{cluster}-b", version, cluster)
        a_exec, b_exec = GtidSet.parse(a.gtid_executed), GtidSet.parse(b.gtid_executed)
        prov_a, prov_b = GtidSet.parse(a.gtid_purged), GtidSet.parse(b.gtid_purged)
        v = MySQLVersion.parse(version)
        executed = a_exec | b_exec
        provisioned = prov_a | prov_b
        prefix = "mysql-bin" if v.triple < (8, 0, 0) else "binlog"
        m = self._server(f"{cluster}-m", version, cluster, executed, provisioned,
                         self._binlogs(v, provisioned, [executed - provisioned], prefix), read_only=1, super_read_only=1)
        self.attach(m, a, "ch_a", a_exec - prov_a)
        self.attach(m, b, "ch_b", b_exec - prov_b)
        return [a, b, m]

    def standalone(self, name: str, version: str, cluster: str = "standalone") -> SimServer:
        return self.source(name, version, cluster)

    # -- Group Replication (issue #22) ----------------------------------------------------------------
    def group(self, cluster: str, version: str, members: int = 3, *, lags: list[int] | None = None,
              view_change_uuid: bool = False, transactions: int | None = None,
              old_uuids: int | None = None) -> list[SimServer]:
        """A healthy single-primary group of ``members`` (5.7.17+), all ONLINE, the first the primary.

        The group was seeded from a backup holding ``old_uuids`` earlier sources' transactions
        (in every member's gtid_purged); then every member joined, each join logging a
        View_change transaction before 8.3.0 (a GTID of the group name, or of
        group_replication_view_change_uuid when ``view_change_uuid`` is set on 8.0.26+); then the
        primary wrote ``transactions`` transactions, which the group certified with the group
        name as UUID. A secondary ``lags[i]`` transactions behind has them received (its
        group_replication_applier RECEIVED_TRANSACTION_SET), not yet applied: its applier
        queue. Each member purged its own binary logs up to a point of its own, at most half of
        the group's history. Members are named ``<cluster>-g1`` (the primary), ``-g2``, ..."""
        v = MySQLVersion.parse(version)
        shape = shape_for(v)
        if not shape.group_replication:
            raise ValueError(f"MySQL {version!r} cannot be a Group Replication member (5.7.17+)")
        rng = self.rng
        name = self._uuid()
        vcu = self._uuid() if view_change_uuid and v.triple >= (8, 0, 26) else None
        k = rng.randrange(0, 6) if old_uuids is None else old_uuids
        history = _gs(*[_iv(self._uuid(), 1, rng.randrange(5, 5000)) for _ in range(k)])
        m = transactions or rng.randrange(30, 400)
        joins = members if shape.logs_view_changes else 0
        if vcu:
            views, first, top = _iv(vcu, 1, joins), 1, m
        else:
            views, first, top = _iv(name, 1, joins), joins + 1, joins + m
        certified = views | _iv(name, first, top)
        if lags is None:
            lags = [0] + [rng.randrange(0, 4) for _ in range(members - 1)]
        servers = []
        for i in range(members):
            executed = history | (certified - _iv(name, top - lags[i] + 1, top))
            purge_to = rng.randrange(max(first, top // 4), max(first, top // 2) + 1)
            purged = history | views | _iv(name, 1, purge_to)
            variables = {"read_only": 1, "super_read_only": 1} if i else {}
            servers.append(self._server(f"{cluster}-g{i + 1}", version, cluster, executed, purged,
                                        self._member_logs(v, purged, executed), **variables))
        view_id = f"{rng.randrange(10 ** 16, 10 ** 17)}:{members}"
        for i, server in enumerate(servers):
            server.group = SimGroup(
                group_name=name, view_id=view_id, members=[], received=_text(certified),
                # the primary's own transactions are certified, not queued (a real 9.7.4 primary)
                last_queued=f"{name}:{top}" if i else "", view_change_uuid=vcu or "AUTOMATIC",
                consistency="BEFORE_ON_PRIMARY_FAILOVER" if v.triple >= (8, 4, 0) else "EVENTUAL")
        self._set_views(servers, writes=m)
        return servers

    def group_election(self, cluster: str, version: str, *, older: str | None = None) -> list[SimServer]:
        """A healthy single-primary group of three whose next primary, should g1 leave, is decided
        by group_replication_member_weight (5.7.20+): of the two secondaries, g2 has the higher
        server_uuid and weighs 80, g3 weighs 40, so the server_uuid order alone would elect g3. g2
        has two certified transactions left to apply, g3 none.

        ``older``, a rolling upgrade half done: g3 still runs that older release of the same major
        version. From 8.0.17 only the members of the lowest whole version, patch included, may be
        elected, so g3 wins despite its weight (caught up: safe); before 8.0.17 only the major
        version counts and g2 still wins (``sort_and_get_lowest_version_member_position``,
        primary_election_invocation_handler.cc; ``PRIMARY_ELECTION_PATCH_CONSIDERATION``).
        Writes the readiness truth: source g1, the elected member, safe_after_catch_up for g2 (its
        backlog) or safe for g3."""
        v = MySQLVersion.parse(version)
        if v.triple < (5, 7, 20):
            raise ValueError(f"MySQL {version!r} has no group_replication_member_weight (5.7.20+)")
        if older is not None and not (MySQLVersion.parse(older).major == v.major and MySQLVersion.parse(older) < v):
            raise ValueError(f"{older!r} is not an older release of {version!r}'s major version")
        servers = self.group(cluster, version, members=3, lags=[0, 2, 0])
        g1, g2, g3 = servers
        if g2.server_uuid < g3.server_uuid:       # the member ids only name members: swapping them is free
            g2.server_uuid, g3.server_uuid = g3.server_uuid, g2.server_uuid
        g2.group.member_weight, g3.group.member_weight = 80, 40
        if older is not None:
            g3.version = older
        self._set_views(servers, writes=g1.group.members[0].checked)
        elected = g3 if older is not None and v.triple >= (8, 0, 17) else g2
        self.readiness.append(ReadinessTruth(g1.name, elected.name, "safe_after_catch_up" if elected is g2 else "safe",
                                             "group_election_version" if older else "group_election_weight"))
        return servers

    def group_pair(self, cluster: str, version: str, *, errant: bool = False,
                   view_change_uuid: bool = False) -> list[SimServer]:
        """Two single-primary groups joined by an asynchronous channel, as InnoDB ClusterSet joins
        them: ``<cluster>-p`` (three members) and the replica group ``<cluster>-r`` (two), whose
        primary ``<cluster>-r-g1`` replicates from ``<cluster>-p-g1`` through channel
        ``clusterset_replication``; every server in cluster ``cluster``.

        The replica group was seeded from a backup of -p-g1 (its gtid_purged), its two members
        joined -- before 8.3.0 each join logs a View_change transaction of the replica group's own
        name, or of its group_replication_view_change_uuid when ``view_change_uuid`` is set on
        8.0.26+ (both groups then set one, as ClusterSet requires from 8.0.27) -- and its primary's
        channel brought the rest of -p-g1's history, which the replica group certified under the
        GTIDs they came with. Healthy, no finding: the view changes are the replica group's own.

        ``errant``: one to three writes on the replica group's primary (super_read_only turned
        off), certified by its group under its group name: errant_transactions on -r-g1 (source
        -p-g1, critical) with exactly that set. Not when the replica group logs its view changes
        under that same name (AUTOMATIC before 8.3.0): then no set the audit reads tells the writes
        from the view changes, and the audit says so in an info errant_transactions finding naming
        the group name's GTIDs, the view changes and the writes, healthy or not (an info truth)."""
        v = MySQLVersion.parse(version)
        shape = shape_for(v)
        src = self.group(f"{cluster}-p", version, members=3, lags=[0, 1, 0], view_change_uuid=view_change_uuid)
        p1 = src[0]
        up, provisioned = GtidSet.parse(p1.gtid_executed), GtidSet.parse(p1.gtid_purged)
        name = self._uuid()
        vcu = self._uuid() if view_change_uuid and v.triple >= (8, 0, 26) else None
        joins = 2 if shape.logs_view_changes else 0
        views = _iv(vcu or name, 1, joins)
        own = GtidSet.EMPTY
        if errant:
            first = 1 if vcu or not joins else joins + 1
            own = _iv(name, first, first + self.rng.randrange(0, 3))
        received = up - provisioned                 # what the channel brought
        certified = views | received | own
        executed = provisioned | certified
        servers = []
        for i in range(2):
            writable = errant and i == 0
            variables = {"read_only": 0, "super_read_only": 0} if writable else {"read_only": 1, "super_read_only": 1}
            servers.append(self._server(f"{cluster}-r-g{i + 1}", version, cluster, executed, provisioned,
                                        self._member_logs(v, provisioned, executed), **variables))
        view_id = f"{self.rng.randrange(10 ** 16, 10 ** 17)}:2"
        top = self._last_gno(certified, name)
        for i, server in enumerate(servers):
            server.group = SimGroup(
                group_name=name, view_id=view_id, members=[], received=_text(certified),
                last_queued=f"{name}:{top}" if i and top else "", view_change_uuid=vcu or "AUTOMATIC",
                consistency="BEFORE_ON_PRIMARY_FAILOVER" if v.triple >= (8, 4, 0) else "EVENTUAL")
        self._set_views(servers, writes=received.count() + own.count())
        self.attach(servers[0], p1, "clusterset_replication", received)
        for server in src:
            server.cluster = cluster
        if vcu or not shape.logs_view_changes:
            if own:
                self.truth_of("errant_transactions", servers[0].name, p1.name, "critical", "group_pair_errant", own)
        else:       # the group name's GTIDs: view changes, and the writes when there are some
            self.truth_of("errant_transactions", servers[0].name, p1.name, "info",
                          "group_pair_errant" if own else "group_pair", views | own)
        return [*src, *servers]

    def _member_logs(self, v: MySQLVersion, purged: GtidSet, executed: GtidSet) -> list[SimBinlog]:
        """Two binary logs holding ``executed - purged`` (each interval split in halves)."""
        rest = executed - purged
        half = _gs(*[_iv(u, a, a + (b - a) // 2, t) for u, t, a, b in rest])
        return self._binlogs(v, purged, [half, rest - half], "mysql-bin" if v.triple < (8, 0, 0) else "binlog")

    def _set_views(self, online: list[SimServer], writes: int) -> None:
        """Every ONLINE member's view: all of ``online`` (the first the primary) with their stats.
        TRANSACTIONS_COMMITTED_ALL_MEMBERS is what every member has executed; a member's remote
        applier queue is what it received and has not executed."""
        committed = GtidSet.parse(online[0].gtid_executed)
        for server in online[1:]:
            committed = committed & GtidSet.parse(server.gtid_executed)
        name = online[0].group.group_name
        top = self._last_gno(GtidSet.parse(online[0].group.received), name)
        rows = []
        for i, server in enumerate(online):
            queue = (GtidSet.parse(server.group.received) - GtidSet.parse(server.gtid_executed)).count()
            rows.append(SimGroupMember(
                member_id=server.server_uuid, host=server.host, port=server.port, state="ONLINE",
                role="SECONDARY" if i else "PRIMARY", version=server.version, checked=writes,
                rows_validating=min(writes, 1 + self.rng.randrange(0, 40)), committed_all_members=_text(committed),
                last_conflict_free=f"{name}:{top}" if top else "",
                remote_in_applier_queue=queue, remote_applied=writes - queue if i else 0,
                local_proposed=0 if i else writes))
        view = online[0].group.view_id
        for server in online:
            server.group.view_id = view
            server.group.members = [dataclasses.replace(r) for r in rows]

    def _new_view(self, online: list[SimServer]) -> None:
        """The view after a member left: the same group, the view id's counter one higher."""
        prefix, _, number = online[0].group.view_id.rpartition(":")
        online[0].group.view_id = f"{prefix}:{int(number) + 1}"
        self._set_views(online, writes=online[0].group.members[0].checked)

    def _leave(self, member: SimServer, at: int) -> None:
        """STOP GROUP_REPLICATION on ``member`` when it had the group's transactions up to number
        ``at``: its view is itself, OFFLINE (no role; its version only from 8.0.27, see
        :mod:`.dialects`), its applier channel is OFF and keeps what it had received (both as a
        real 9.7.4 shows them)."""
        g = member.group
        name = g.group_name
        received = GtidSet.parse(g.received)
        g.received = _text(received - _iv(name, at + 1, 1 << 62))
        g.last_queued = f"{name}:{at}" if at else ""
        g.running = False
        g.view_id = ""
        version = member.version if shape_for(member.version).offline_member_version else ""
        g.members = [SimGroupMember(member.server_uuid, member.host, member.port, "OFFLINE", "", version)]

    @staticmethod
    def _last_gno(s: GtidSet, uuid: str) -> int:
        return max((b for u, t, a, b in s if u == uuid and t is None), default=0)

    # -- consistency faults (each writes its truth) -------------------------------------------------------
    def errant(self, cluster: str, version: str, *, tagged: bool = False, replica_version: str | None = None) -> list[SimServer]:
        """A replica written to directly: its own uuid (tagged on 8.3+) in gtid_executed and its
        binary log. errant_transactions only, on every version: the source refuses a replica
        only for GTIDs of its *own* uuid, on 5.6 too -- 5.6's dump thread (sql/rpl_master.cc,
        mysql_binlog_send) tests ``slave_gtid_executed->is_subset_for_sid(logged_gtids,
        server_sidno, ...)``, like 5.7+'s Binlog_sender::check_start_file. (Before the fix of
        issue #11, replica_has_more_gtids compared the whole set on 5.6 and reported this
        replica as refused; the end-to-end test now expects errant_transactions alone.)"""
        src, rep = self.cluster(cluster, version, replicas=1)
        if replica_version:
            rep.version = replica_version
        tag = "errant" if tagged else None
        extra = _iv(rep.server_uuid, 1, self.rng.randrange(1, 4), tag)
        rep.gtid_executed = _text(GtidSet.parse(rep.gtid_executed) | extra)
        last = rep.binary_logs[-1]
        last.gtids = _text(GtidSet.parse(last.gtids) | extra)
        scenario = "errant_tagged" if tagged else "errant"
        self.truth_of("errant_transactions", rep.name, src.name, "critical", scenario)
        return [src, rep]

    def purged_required(self, cluster: str, version: str) -> list[SimServer]:
        """The source purged binary logs the (stopped) replica still needs; its receiver failed
        with 1236 (13114 from 8.0.11), worded as that version words it (:class:`.dialects.Shape`).
        source_purged_required_gtids and replication_error."""
        src = self.source(f"{cluster}-s", version, cluster, transactions=300)
        own = src.server_uuid
        # the replica stopped at own:1-40; the source has since purged up to own:100
        p1 = GtidSet.parse(src.binary_logs[0].previous_gtids)
        old = p1 - _gs(*[_iv(u, a, b, t) for u, t, a, b in p1 if u == own])
        provisioned = old | _iv(own, 1, 20)
        rep = self.replica(f"{cluster}-r1", src, provisioned=provisioned)
        have = provisioned | _iv(own, 21, 40)
        rep.gtid_executed = _text(have)
        rep.binary_logs = self._binlogs(rep.mysql_version, provisioned, [_iv(own, 21, 40)],
                                        rep.binary_logs[0].name.rsplit(".", 1)[0])
        ch = rep.channels[0]
        ch.retrieved = _text(_iv(own, 21, 40))
        ch.relay_events = ch.relay_events[:4]
        ch.relay_log_pos = ch.relay_events[-1][0] + format_desc_end(rep.mysql_version)
        ch.io_running, ch.io_state = "No", ""
        shape = shape_for(rep.mysql_version)
        ch.last_io_errno = shape.source_fatal_errno
        ch.last_io_error = shape.purged_refusal_error
        ch.last_queued = _gtid_text([(own, None, 40)])
        self.truth_of("source_purged_required_gtids", rep.name, src.name, "critical", "purged_required")
        self.truth_of("replication_receiver_error", rep.name, src.name, "critical", "purged_required")
        return [src, rep]

    def silent_purged_gap(self, cluster: str, version: str = "5.6.21") -> list[SimServer]:
        """A 5.6.21 source restored from a backup with RESET MASTER + SET GLOBAL gtid_purged: its
        first binary log has an empty Previous_gtids (created by RESET MASTER before the purged
        set was given), so ``find_first_log_not_in_gtid_set`` starts there, and before 5.6.22
        nothing compares gtid_purged with the replica's set. The replica lacks the restored-over transactions and
        replication looks healthy: silent_purged_gap."""
        v = MySQLVersion.parse(version)
        old = self._uuid()
        own = self._uuid()
        restored = _iv(old, 1, 150)            # the backup's set, given by SET GLOBAL gtid_purged
        first = _iv(own, 1, 10)                # written after the restore
        second = _iv(own, 11, 20)
        # SET GLOBAL gtid_purged on an empty server rotates the binary log: "That leaves first binary
        # log with empty previous_gtids and second binary log's previous_gtids with the value of
        # gtid_purged" (the comment above the purged-GTIDs check in the dump thread, rpl_master.cc /
        # rpl_binlog_sender.cc, the check that 5.6.22 added).
        src = self._server(f"{cluster}-s", version, cluster, restored | first | second, restored, [
            SimBinlog("mysql-bin.000001", "", "", binlog_size(v, GtidSet.EMPTY, GtidSet.EMPTY)),
            SimBinlog("mysql-bin.000002", _text(restored), _text(first), binlog_size(v, restored, first)),
            SimBinlog("mysql-bin.000003", _text(restored | first), _text(second),
                      binlog_size(v, restored | first, second))])
        src.server_uuid = own
        # the replica had the old source's transactions up to old:100 only
        provisioned = _iv(old, 1, 100)
        rep = self.replica(f"{cluster}-r1", src, provisioned=provisioned)
        received = first | second
        rep.gtid_executed = _text(provisioned | received)
        rep.gtid_purged = _text(provisioned)
        rep.binary_logs = self._binlogs(v, provisioned, [received], "mysql-bin")
        ch = rep.channels[0]
        ch.retrieved = _text(received)
        self.truth_of("silent_purged_gap", rep.name, src.name, "critical", "silent_purged_gap")
        return [src, rep]

    def bug72392(self, cluster: str, version: str = "5.6.20") -> list[SimServer]:
        """RESET MASTER on a 5.6.15-5.7.5 replica whose applier has applied everything: gtid_executed
        is empty, Retrieved_Gtid_Set is kept. On reconnect it leaves its last retrieved GTID out of
        the announced set (it is not in gtid_executed), the source sends it again and it is applied
        twice (Bug #72392: the 5.6.15 workaround for incomplete relay-log tails, in
        rpl_slave.cc request_dump, until 5.7.6 replaced it with the transaction boundary parser).
        replica_gtid_history_lost, critical."""
        src = self.source(f"{cluster}-s", version, cluster, old_uuids=0, purge=False)
        rep = self.replica(f"{cluster}-r1", src, provisioned=GtidSet.EMPTY)
        rep.gtid_executed = rep.gtid_purged = ""
        rep.binary_logs = [SimBinlog("mysql-bin.000001", "", "", binlog_size(rep.mysql_version, GtidSet.EMPTY,
                                                                              GtidSet.EMPTY))]
        self.truth_of("replica_gtid_history_lost", rep.name, src.name, "critical", "bug72392")
        return [src, rep]

    def reset_replica(self, cluster: str, version: str) -> list[SimServer]:
        """RESET MASTER / RESET BINARY LOGS AND GTIDS on an 8.0+ replica: its history is gone,
        Retrieved_Gtid_Set and the relay logs are kept. replica_gtid_history_lost, warning."""
        src = self.source(f"{cluster}-s", version, cluster, old_uuids=0, purge=False)
        rep = self.replica(f"{cluster}-r1", src, provisioned=GtidSet.EMPTY)
        rep.gtid_executed = rep.gtid_purged = ""
        rep.binary_logs = [SimBinlog("binlog.000001", "", "", binlog_size(rep.mysql_version, GtidSet.EMPTY,
                                                                          GtidSet.EMPTY))]
        self.truth_of("replica_gtid_history_lost", rep.name, src.name, "warning", "reset_replica")
        return [src, rep]

    def status_race(self, cluster: str, version: str = "8.0.36") -> list[SimServer]:
        """A healthy caught-up replica read at the wrong instant: SHOW REPLICA STATUS filled
        Executed_Gtid_Set just before the applier committed the last retrieved transaction and
        read the positions just after (show_slave_status_send_data reads the set first), so the
        row shows that GTID retrieved, not executed, and the applier caught up. Nothing is wrong:
        no finding (the collector's later read of gtid_executed holds it)."""
        src = self.source(f"{cluster}-s", version, cluster, old_uuids=0, purge=False)
        rep = self.replica(f"{cluster}-r1", src)
        [ch] = rep.channels
        last = GtidSet.parse(_gtid_text(last_gtids(GtidSet.parse(ch.retrieved), 1)))
        ch.status_executed = _text(GtidSet.parse(rep.gtid_executed) - last)
        return [src, rep]

    def relay_tail(self, cluster: str, version: str = "5.6.20", *, rows: int = 1) -> list[SimServer]:
        """STOP SLAVE IO_THREAD in the middle of a transaction of ``rows`` row events: the relay log
        ends inside it; the applier waits at its Gtid event (Relay_Log_Pos). Before 5.7.6 the GTID is
        already in Retrieved_Gtid_Set: critical before 5.6.15 (announced on reconnect, never
        fetched again), warning 5.6.15-5.7.5 (left out of the announced set). From 5.7.6 it is not
        (the boundary parser) and 8.0.2+ shows it as QUEUEING_TRANSACTION: warning.
        incomplete_relay_log_tail plus replication_stopped."""
        src = self.source(f"{cluster}-s", version, cluster, purge=False, old_uuids=0)
        rep = self.replica(f"{cluster}-r1", src, provisioned=GtidSet.EMPTY)
        ch = rep.channels[0]
        dangling = last_gtids(GtidSet.parse(src.gtid_executed), 1)[0]
        uuid, tag, gno = dangling
        applied = GtidSet.parse(src.gtid_executed) - _iv(uuid, gno, gno, tag)
        rep.gtid_executed = _text(applied)
        rep.binary_logs = self._binlogs(rep.mysql_version, GtidSet.EMPTY, [applied], "mysql-bin")
        # rebuild the relay log: complete transactions up to the dangling one, then its first events
        events, pos, end = self._relay_header(rep.mysql_version, rep, src, ch.source_log_file,
                                              GtidSet.parse(ch.retrieved))
        for gtid in last_gtids(applied, 2):
            ev, pos, end = transaction_events(gtid, pos, end, src.server_id)
            events += ev
        start, exec_end = pos, end
        ev, pos, end = transaction_events(dangling, pos, end, src.server_id, complete=False, rows=rows)
        events += ev
        ch.relay_events, ch.relay_log_pos = events, start
        ch.read_pos, ch.exec_pos = end, exec_end
        ch.io_running, ch.io_state = "No", ""
        ch.last_queued = _gtid_text([dangling])
        severity = "warning" if rep.mysql_version.leaves_out_last_retrieved_gtid else "critical"
        if rep.mysql_version.has_boundary_parser:  # the GTID is retrieved only once its group is complete
            ch.retrieved = _text(GtidSet.parse(ch.retrieved) - _iv(uuid, gno, gno, tag))
            ch.last_queued = _gtid_text(last_gtids(applied, 1))
            ch.queueing = _gtid_text([dangling]) if rep.mysql_version.triple >= (8, 0, 2) else ""
            severity = "warning"
        self.truth_of("incomplete_relay_log_tail", rep.name, src.name, severity, "relay_tail")
        self.truth_of("replication_stopped", rep.name, src.name, "warning", "relay_tail")
        return [src, rep]

    def group_errant(self, cluster: str, version: str) -> list[SimServer]:
        """A group of three whose last member stopped Group Replication a few transactions ago and
        was then written to directly (super_read_only turned off): transactions of its own
        server_uuid that no ONLINE member has. It still runs, but START GROUP_REPLICATION would
        refuse it ("This member has more executed transactions than those present in the
        group"). The ONLINE members purged nothing it lacks. group_member_errant, critical."""
        servers = self.group(cluster, version, members=3)
        online, member = servers[:-1], servers[-1]
        name = member.group.group_name
        top = self._last_gno(GtidSet.parse(member.group.received), name)
        # it stopped before the point every ONLINE member has reached (their lag included)
        at = min(self._last_gno(GtidSet.parse(s.gtid_executed), name) for s in online) - self.rng.randrange(1, 4)
        executed = GtidSet.parse(member.gtid_executed) - _iv(name, at + 1, top)
        purged = GtidSet.parse(member.gtid_purged)
        assert all(GtidSet.parse(s.gtid_purged) <= executed for s in online) and purged <= executed
        extra = _iv(member.server_uuid, 1, self.rng.randrange(1, 4))
        member.gtid_executed = _text(executed | extra)
        member.binary_logs = self._member_logs(member.mysql_version, purged, executed)
        last = member.binary_logs[-1]
        last.gtids = _text(GtidSet.parse(last.gtids) | extra)
        last.size = binlog_size(member.mysql_version, GtidSet.parse(last.previous_gtids), GtidSet.parse(last.gtids))
        member.variables.update(read_only=0, super_read_only=0)
        self._leave(member, at)
        self._new_view(online)
        self.truth_of("group_member_errant", member.name, None, "critical", "group_errant")
        return servers

    def group_unrecoverable(self, cluster: str, version: str) -> list[SimServer]:
        """A group of three whose last member stopped Group Replication long ago: every ONLINE
        member has since purged transactions it lacks (their gtid_purged is not a subset of its
        gtid_executed), so distributed recovery from the binary logs cannot bring it back, only a
        clone. No errant transactions. group_member_unrecoverable, warning."""
        servers = self.group(cluster, version, members=3)
        online, member = servers[:-1], servers[-1]
        g = member.group
        name = g.group_name
        certified = GtidSet.parse(g.received)
        top = self._last_gno(certified, name)
        horizon = min(self._last_gno(GtidSet.parse(s.gtid_purged), name) for s in online)
        joins = top - online[0].group.members[0].checked     # View_change GTIDs of the group name
        at = self.rng.randrange(max(1, joins, horizon // 2), horizon)
        executed = GtidSet.parse(member.gtid_executed) - _iv(name, at + 1, top)
        purged = GtidSet.parse(member.gtid_purged) - _iv(name, at // 2 + 1, top)
        member.gtid_executed, member.gtid_purged = _text(executed), _text(purged)
        member.binary_logs = self._member_logs(member.mysql_version, purged, executed)
        assert all(not GtidSet.parse(s.gtid_purged) <= executed for s in online)
        self._leave(member, at)
        self._new_view(online)
        self.truth_of("group_member_unrecoverable", member.name, None, "warning", "group_unrecoverable")
        return servers

    def group_replica_refused(self, cluster: str, version: str) -> list[SimServer]:
        """A group of three and an asynchronous replica of its primary g1 whose receiver was
        stopped: g1 and g3 still have the transactions the replica lacks in their binary logs,
        g2 purged them. After a primary failover to g2 (SOURCE_CONNECTION_AUTO_FAILOVER or a
        repoint) g2 would refuse the replica: group_member_purged_replica_gtids on the replica,
        source g2, warning; its stopped receiver is replication_stopped (warning, source g1).
        The replica holds g1's first binary log whole, so it is no near-horizon case for g1."""
        servers = self.group(cluster, version, members=3, lags=[0, 0, 0])
        g1, g2, g3 = servers
        name = g1.group.group_name
        executed = GtidSet.parse(g1.gtid_executed)
        top = self._last_gno(executed, name)
        others = executed - executed.for_uuid(name)
        low, high = max(1, top // 10), top - 2
        for member, upto in ((g1, low), (g2, high), (g3, low)):
            purged = others | _iv(name, 1, upto)
            member.gtid_purged = _text(purged)
            member.binary_logs = self._member_logs(member.mysql_version, purged, GtidSet.parse(member.gtid_executed))
        first = GtidSet.parse(g1.binary_logs[0].gtids)
        cut = self._last_gno(first, name)              # the end of g1's oldest binary log
        assert low < cut < high
        provisioned = GtidSet.parse(g1.gtid_purged)
        rep = self.replica(f"{cluster}-r1", g1, provisioned=provisioned)
        received = _iv(name, low + 1, cut)
        have = provisioned | received
        rep.gtid_executed = _text(have)
        rep.binary_logs = self._binlogs(rep.mysql_version, provisioned, [received],
                                        rep.binary_logs[0].name.rsplit(".", 1)[0])
        ch = rep.channels[0]
        ch.retrieved = _text(received)
        ch.relay_events = ch.relay_events[:4]
        ch.relay_log_pos = ch.relay_events[-1][0] + format_desc_end(rep.mysql_version)
        ch.io_running, ch.io_state = "No", ""
        ch.last_queued = _gtid_text([(name, None, cut)])
        self.truth_of("group_member_purged_replica_gtids", rep.name, g2.name, "warning", "group_replica_refused")
        self.truth_of("replication_stopped", rep.name, g1.name, "warning", "group_replica_refused")
        return [*servers, rep]

    # -- collection faults (on standalone servers) --------------------------------------------------
    def collection_fault(self, name: str, version: str, fault: str) -> SimServer:
        server = self.standalone(name, version, cluster="standalone")
        server.fault = fault
        check, severity = "collection_failed", "critical"
        if fault == "slow":
            server.fault_arg = 30.0
        elif fault == "dropped":
            server.fault_arg = 4          # the connection drops after 4 statements (a restart mid-read)
            check, severity = "collection_partial", "warning"
        elif fault == "privilege":
            check, severity = "collection_partial", "warning"
        elif fault == "auth":
            server.password = PASSWORD + "-rotated"
        elif fault == "garbage":
            server.gtid_executed = "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:zz,garbage"
            check, severity = "snapshot_invalid", "critical"
        elif fault == "gtid_off":
            server.variables["gtid_mode"] = "OFF"
            server.gtid_executed = server.gtid_purged = ""
            server.binary_logs = self._binlogs(server.mysql_version, GtidSet.EMPTY, [GtidSet.EMPTY],
                                               server.binary_logs[0].name.rsplit(".", 1)[0])
            check, severity = "gtid_mode_off", "warning"
        self.truth_of(check, name, None, severity, fault)
        return server


def _gtid_text(gtids: list[tuple[str, str | None, int]]) -> str:
    if not gtids:
        return ""
    uuid, tag, gno = gtids[-1]
    return f"{uuid}:{tag}:{gno}" if tag else f"{uuid}:{gno}"


# --------------------------------------------------------------------------------------------
# a whole fleet

def _fault_versions(fault: str, versions: tuple[str, ...]) -> str | None:
    if fault == "silent_purged_gap":
        return "5.6.21"
    if fault == "bug72392":
        return "5.6.20"
    if fault == "relay_tail":
        return "5.6.14"
    if fault == "errant_tagged":
        return "9.7.4"
    if fault == "reset_replica":
        return "8.4.3"
    return None


def generate(n: int, *, seed: int = 1, collection_fault_rate: float = 0.01,
             consistency_fault_rate: float = 0.02, versions: tuple[str, ...] = DEFAULT_VERSIONS,
             base_port: int | None = None, group_share: float = GROUP_SHARE) -> SimFleet:
    """A fleet of ``n`` simulated servers: clusters (source + replicas, chains, multi-source, and
    on 5.7.17+ ``group_share`` of the plain clusters as Group Replication groups of three),
    ``collection_fault_rate`` of the servers with a collection fault, and consistency faults on
    ``consistency_fault_rate`` of them (each fault scenario touches two servers, three for the
    group faults). The same arguments give the same fleet (ports aside, see FleetBuilder)."""
    b = FleetBuilder(seed, base_port)
    group_rng = random.Random(seed * 7919 + 22)     # which clusters are groups, apart from the rest
    n_coll = round(n * collection_fault_rate)
    n_cons = round(n * consistency_fault_rate / 2)
    i = 0
    for k in range(n_coll):
        add_collection_fault(b, k, f"sa{k:05d}", versions)
    for k in range(n_cons):
        add_consistency_fault(b, k, f"f{k:05d}", versions)
    while len(b.servers) < n:
        add_healthy_cluster(b, f"c{i:05d}", n - len(b.servers), versions, group_rng, group_share)
        i += 1
    return b.fleet()


def add_collection_fault(b: FleetBuilder, k: int, prefix: str, versions: tuple[str, ...] = DEFAULT_VERSIONS) -> SimServer:
    """The ``k``-th collection fault (the kinds in turn) on a standalone server named ``<prefix>-<fault>``."""
    fault = COLLECTION_FAULTS[k % len(COLLECTION_FAULTS)]
    return b.collection_fault(f"{prefix}-{fault}", b.rng.choice(versions), fault)


def add_consistency_fault(b: FleetBuilder, k: int, prefix: str, versions: tuple[str, ...] = DEFAULT_VERSIONS) -> list[SimServer]:
    """The ``k``-th consistency fault scenario (the kinds in turn), its cluster named
    ``<prefix>-<fault>``; each writes its truth."""
    fault = CONSISTENCY_FAULTS[k % len(CONSISTENCY_FAULTS)]
    group_versions = [v for v in versions if shape_for(v).group_replication] or ["8.0.36"]
    version = _fault_versions(fault, versions) or ("" if fault.startswith("group_") else b.rng.choice(versions))
    name = f"{prefix}-{fault.replace('_', '')}"
    if fault.startswith("group_"):
        return getattr(b, fault)(name, b.rng.choice(group_versions))
    if fault in ("errant", "errant_tagged"):
        return b.errant(name, version, tagged=fault == "errant_tagged")
    return getattr(b, fault)(name, version)


def add_healthy_cluster(b: FleetBuilder, name: str, left: int, versions: tuple[str, ...] = DEFAULT_VERSIONS,
                        group_rng: random.Random | None = None, group_share: float = GROUP_SHARE) -> list[SimServer]:
    """One healthy cluster named ``name`` of at most ``left`` servers: a standalone server, a
    multi-source replica with its two sources (5.7.6+), a chain, a Group Replication group of three
    (``group_share`` of the rest, 5.7.17+) or a source with 1 to 4 replicas."""
    rng = b.rng
    group_rng = group_rng or rng
    version = rng.choice(versions)
    shape = rng.random()
    if left == 1:
        return [b.standalone(f"{name}-s", version, cluster=name)]
    if left >= 3 and shape < 0.1 and MySQLVersion.parse(version).triple >= (5, 7, 6):
        return b.multi_source(name, version)
    if left >= 3 and shape < 0.25:
        return b.cluster(name, version, replicas=2, chain=True)
    if left >= 3 and group_rng.random() < group_share and shape_for(version).group_replication:
        return b.group(name, version, members=3)
    return b.cluster(name, version, replicas=min(left - 1, rng.randrange(1, 5)), tagged=rng.random() < 0.3)
