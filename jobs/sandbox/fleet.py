"""A fleet of sandbox servers from a topology: real servers, real GTID replication.

``Topology.load(path_or_dict)`` validates a YAML topology (pydantic; errors name the key)::

    servers:
      - {name: orders-src, cluster: orders}            # gtid_mode ON unless told otherwise
      - {name: legacy, gtid_mode: "OFF", options: ["--binlog-format=ROW"]}
      - {name: secure, tls: {ca_file: /tls/ca.pem, cert_file: /tls/server.pem,   # relative paths:
                             key_file: /tls/server-key.pem,          # against the working directory
                             require_secure_transport: true}}   # its replicas attach with SOURCE_SSL=1
    channels:
      - {replica: orders-r1, source: orders-src}        # channel '' (the default channel)
      - {replica: billing-r1, source: orders-src, channel: orders}
    groups:                                             # Group Replication (single-primary
      - {name: gr1, members: [gr1-a, gr1-b, gr1-c],     # unless mode: multi-primary); the
         weights: {gr1-b: 70}}                          # first member bootstraps it
    schema:                                             # SQL run on these servers before
      orders-src: ["CREATE DATABASE orders", ...]       # any replica attaches

``Fleet.up(topology, workdir)`` starts every server, creates the ``repl`` and least-privilege
``audit`` accounts (``sql_log_bin=0``: accounts never become GTIDs), runs the initial SQL,
forms each group (the group's members load ``group_replication.so`` and talk through mysqld's
own loopback listener, ``group_replication_communication_stack=MYSQL``: XCom's own port would
listen on every interface; the first member bootstraps, the others join one by one and must
reach ONLINE), configures each channel with ``SOURCE_AUTO_POSITION=1``, and waits until every
replica's ``gtid_executed`` contains its sources' (``GTID_SUBSET`` computed by the replica) and
every group member holds its primary's. A failed ``up``
stops whatever it started. The state (pids, ports, passwords) is saved to
``workdir/sandbox-state.json`` (mode 0600) so ``Fleet.attach(workdir)`` works from another
process; ``fleet.down()`` stops exactly the recorded pids.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobs.sandbox.accounts import AUDIT_USER, REPL_USER, audit_grant_statements, repl_grant_statements
from jobs.sandbox.errors import FleetError, FleetNotFoundError, SandboxError, TopologyError
from jobs.sandbox.installer import MySQLDist, ensure_mysql
from jobs.sandbox.server import HOST, SandboxServer, ServerTls, free_port

__all__ = ["Topology", "ServerSpec", "ChannelSpec", "GroupSpec", "Fleet", "STATE_FILE", "AUDIT_PASSWORD_FILE",
           "STANDARD_TOPOLOGY"]

#: The standard six-server fleet of the demo and the tests (shipped inside the package, so
#: ``sandbox up`` and ``demo`` work from any directory and from an installed wheel).
STANDARD_TOPOLOGY = Path(__file__).resolve().parent / "topologies" / "standard.yaml"

STATE_FILE = "sandbox-state.json"
AUDIT_PASSWORD_FILE = "audit.password"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_CHANNEL = re.compile(r"^[A-Za-z0-9_-]{0,64}$")


def _on_off(value: Any) -> Any:
    """YAML 1.1 reads a bare ON/OFF as a boolean: map it back to the server's words."""
    if value is True:
        return "ON"
    if value is False:
        return "OFF"
    return value.upper() if isinstance(value, str) else value


class ServerSpec(BaseModel):
    """One server: its name, cluster, gtid_mode, TLS material and extra mysqld options."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    cluster: str | None = None
    gtid_mode: Literal["ON", "OFF", "ON_PERMISSIVE", "OFF_PERMISSIVE"] = "ON"
    tls: ServerTls | None = None
    options: tuple[str, ...] = ()

    @field_validator("gtid_mode", mode="before")
    @classmethod
    def _gtid_mode(cls, value: Any) -> Any:
        return _on_off(value)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"server name {value!r} must be a letter then letters, digits, '-' or '_' (max 32)")
        return value

    @field_validator("options")
    @classmethod
    def _options(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for option in value:
            if not option.startswith("--"):
                raise ValueError(f"mysqld option {option!r} must start with '--'")
        return value


class ChannelSpec(BaseModel):
    """One replication channel: ``replica`` replicates from ``source`` on channel ``channel``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    replica: str
    source: str
    channel: str = ""

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str) -> str:
        if not _CHANNEL.match(value):
            raise ValueError(f"channel name {value!r} must be up to 64 letters, digits, '-' or '_'")
        return value


class GroupSpec(BaseModel):
    """One replication group: ``members`` (the first bootstraps it and is the first primary in
    single-primary mode), ``mode``, optional ``group_replication_member_weight`` per member, and
    ``group_name`` (the UUID of the group's GTIDs; a new one per ``up`` when not given)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    members: tuple[str, ...] = Field(min_length=1)
    mode: Literal["single-primary", "multi-primary"] = "single-primary"
    weights: dict[str, int] = Field(default_factory=dict)
    group_name: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"group name {value!r} must be a letter then letters, digits, '-' or '_' (max 32)")
        return value

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: dict[str, int]) -> dict[str, int]:
        for member, weight in value.items():
            if not 0 <= weight <= 100:
                raise ValueError(f"weight of {member!r} must be 0-100 (group_replication_member_weight), got {weight}")
        return value

    @field_validator("group_name")
    @classmethod
    def _group_name(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                return str(uuid.UUID(value))
            except ValueError:
                raise ValueError(f"group_name {value!r} must be a UUID") from None
        return value


class Topology(BaseModel):
    """A validated fleet layout (see the module docstring for the YAML shape)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = "sandbox"
    servers: tuple[ServerSpec, ...] = Field(min_length=1)
    channels: tuple[ChannelSpec, ...] = ()
    groups: tuple[GroupSpec, ...] = ()
    schema_sql: dict[str, tuple[str, ...]] = Field(default_factory=dict, alias="schema")

    @model_validator(mode="after")
    def _references(self) -> "Topology":
        names = [s.name for s in self.servers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"servers: duplicate server names {dupes!r}")
        by_name = {s.name: s for s in self.servers}
        seen: set[tuple[str, str]] = set()
        for i, ch in enumerate(self.channels):
            for role in ("replica", "source"):
                if getattr(ch, role) not in by_name:
                    raise ValueError(f"channels[{i}].{role}: unknown server {getattr(ch, role)!r}")
            if ch.replica == ch.source:
                raise ValueError(f"channels[{i}]: server {ch.replica!r} cannot replicate from itself")
            if (ch.replica, ch.channel) in seen:
                raise ValueError(f"channels[{i}].channel: {ch.replica!r} already has channel {ch.channel!r}")
            seen.add((ch.replica, ch.channel))
            for role in ("replica", "source"):
                spec = by_name[getattr(ch, role)]
                if spec.gtid_mode != "ON":
                    raise ValueError(f"channels[{i}].{role}: {spec.name!r} has gtid_mode {spec.gtid_mode!r}; "
                                     "SOURCE_AUTO_POSITION=1 needs gtid_mode ON")
        grouped: dict[str, str] = {}
        for i, group in enumerate(self.groups):
            for member in (*group.members, *group.weights):
                if member not in by_name:
                    raise ValueError(f"groups[{i}]: unknown server {member!r}")
            for member in group.members:
                if member in grouped:
                    raise ValueError(f"groups[{i}]: {member!r} is already a member of group {grouped[member]!r}")
                grouped[member] = group.name
                if by_name[member].gtid_mode != "ON":
                    raise ValueError(f"groups[{i}]: {member!r} has gtid_mode {by_name[member].gtid_mode!r}; "
                                     "Group Replication needs gtid_mode ON")
        group_names = [g.name for g in self.groups]
        if len(set(group_names)) != len(group_names):
            raise ValueError(f"groups: duplicate group names {group_names!r}")
        for server in self.schema_sql:
            if server not in by_name:
                raise ValueError(f"schema.{server}: unknown server {server!r}")
        return self

    @classmethod
    def load(cls, source: "str | os.PathLike | dict | Topology") -> "Topology":
        """Validate a topology from a YAML file path or a dict; errors name the file and key."""
        if isinstance(source, Topology):
            return source
        origin = "topology"
        if isinstance(source, (str, os.PathLike)):
            path = Path(source)
            origin = str(path)
            try:
                data = yaml.safe_load(path.read_text())
            except FileNotFoundError:
                raise TopologyError(f"topology file {origin!r} does not exist") from None
            except yaml.YAMLError as exc:
                raise TopologyError(f"topology file {origin!r} is not valid YAML: {exc}") from None
        else:
            data = source
        if not isinstance(data, dict):
            raise TopologyError(f"{origin}: expected a mapping with 'servers', got {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                key = ".".join(str(p) for p in err["loc"]) or "(top level)"
                value = err.get("input")
                shown = "" if isinstance(value, (dict, list)) else f" (got {value!r})"
                problems.append(f"{key}: {err['msg']}{shown}")
            raise TopologyError(f"{origin}: invalid topology: " + "; ".join(problems)) from None

    def server(self, name: str) -> ServerSpec:
        for spec in self.servers:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def group_of(self, name: str) -> GroupSpec | None:
        """The replication group ``name`` is a member of, if any."""
        for group in self.groups:
            if name in group.members:
                return group
        return None

    def cluster_of(self, name: str) -> str:
        """The server's cluster: explicit, else its group's name, else its first source's
        (recursively), else its name."""
        spec = self.server(name)
        if spec.cluster:
            return spec.cluster
        group = self.group_of(name)
        if group is not None:
            return group.name
        for ch in self.channels:
            if ch.replica == name:
                return self.cluster_of(ch.source)
        return name

    def attach_order(self) -> list[ChannelSpec]:
        """Channels ordered so a source is attached before it feeds another replica (chains)."""
        ordered: list[ChannelSpec] = []
        pending = list(self.channels)
        ready = {s.name for s in self.servers} - {c.replica for c in self.channels}
        while pending:
            progressed = [c for c in pending if c.source in ready]
            if not progressed:          # a replication cycle: attach the rest in file order
                progressed = pending[:1]
            for ch in progressed:
                pending.remove(ch)
                ordered.append(ch)
            ready |= {c.replica for c in progressed if all(o.replica != c.replica for o in pending)}
        return ordered


class Fleet:
    """Running (or saved) sandbox servers and the channels between them."""

    def __init__(self, topology: Topology, workdir: Path, dist: MySQLDist,
                 servers: dict[str, SandboxServer], passwords: dict[str, str]):
        self.topology = topology
        self.workdir = Path(workdir).resolve()
        self.dist = dist
        self.servers = servers
        self.passwords = passwords

    # -- bring up --------------------------------------------------------------------------
    @classmethod
    def up(cls, topology: "Topology | dict | str | os.PathLike", workdir: "str | os.PathLike",
           dist: MySQLDist | None = None, *, timeout: float = 120.0,
           audit_password: str | None = None) -> "Fleet":
        """Start the topology in ``workdir`` (wiped of any previous stopped fleet). The ``audit``
        account's password is ``audit_password`` when given (a secret the auditor's executors
        already hold in their environment), else a fresh random one."""
        topology = Topology.load(topology)
        workdir = Path(workdir).resolve()
        state_path = workdir / STATE_FILE
        if state_path.exists():
            with contextlib.suppress(SandboxError, ValueError, KeyError):
                previous = cls.attach(workdir)
                running = [s.name for s in previous.servers.values() if s.is_running()]
                if running:
                    raise FleetError(f"workdir {str(workdir)!r} still has running servers {running!r}; "
                                     "run `gtid-audit sandbox down` first")
        dist = dist or ensure_mysql()
        workdir.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(workdir / "servers", ignore_errors=True)
        passwords = {REPL_USER: secrets.token_urlsafe(18), AUDIT_USER: audit_password or secrets.token_urlsafe(18)}
        topology = _with_group_names(topology)
        ports, group_options = _group_options(topology, dist)
        servers = {spec.name: SandboxServer(dist, spec.name, workdir / "servers" / spec.name, i + 1,
                                            gtid_mode=spec.gtid_mode,
                                            options=group_options.get(spec.name, ()) + spec.options,
                                            tls=spec.tls, port=ports.get(spec.name))
                   for i, spec in enumerate(topology.servers)}
        fleet = cls(topology, workdir, dist, servers, passwords)
        try:
            fleet._start_all()
            fleet.save()
            fleet._create_accounts()
            for group in topology.groups:
                fleet.form_group(group, timeout=timeout)
            for name, statements in topology.schema_sql.items():
                servers[name].execute(*statements)
            for ch in topology.attach_order():
                fleet.attach_channel(ch)
            fleet.wait_caught_up(timeout=timeout)
            fleet.wait_groups_converged(timeout=timeout)
            fleet._write_password_file()
            fleet.save()
        except BaseException:
            fleet.down()
            raise
        return fleet

    def _start_all(self) -> None:
        with ThreadPoolExecutor(max_workers=min(4, len(self.servers))) as pool:
            futures = {name: pool.submit(server.start) for name, server in self.servers.items()}
        errors = []
        for name, future in futures.items():
            try:
                future.result()
            except Exception as exc:  # collect all, then fail once
                errors.append(f"{name}: {exc}")
        if errors:
            raise FleetError("servers failed to start: " + " | ".join(errors))

    def _create_accounts(self, servers: "list[SandboxServer] | None" = None) -> None:
        statements = (["SET SESSION sql_log_bin = 0"]
                      + repl_grant_statements(self.passwords[REPL_USER])
                      + audit_grant_statements(self.passwords[AUDIT_USER])
                      + ["SET SESSION sql_log_bin = 1"])
        for server in servers if servers is not None else self.servers.values():
            server.execute(*statements)

    def attach_channel(self, ch: "ChannelSpec", *, start: bool = True) -> None:
        """CHANGE REPLICATION SOURCE TO ... SOURCE_AUTO_POSITION=1 FOR CHANNEL, then START REPLICA.

        The replica gets ``read_only = ON`` (persisted), as a DBA sets a replica
        (config_replica_writable), unless it is a member of one of the topology's groups, whose
        read-only state Group Replication owns. The sandbox writes as root, which read_only does
        not stop (super_read_only would): its faults can still be made on any replica."""
        replica, source = self.servers[ch.replica], self.servers[ch.source]
        channel = f"FOR CHANNEL '{ch.channel}'"
        ssl = "SOURCE_SSL=1, " if source.tls is not None else ""
        if not any(ch.replica in g.members for g in self.topology.groups):
            replica.execute("SET PERSIST read_only = ON")
        replica.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{HOST}', SOURCE_PORT={source.port}, {ssl}"
            f"SOURCE_USER='{REPL_USER}', SOURCE_PASSWORD='{self.passwords[REPL_USER]}', "
            "SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, SOURCE_CONNECT_RETRY=1, SOURCE_HEARTBEAT_PERIOD=0.5, "
            f"SOURCE_RETRY_COUNT=3600 {channel}")
        if start:
            replica.execute(f"START REPLICA {channel}")

    def add_server(self, spec: "ServerSpec | dict") -> SandboxServer:
        """Start one more server (no channels) in this fleet, with the fleet's accounts."""
        spec = ServerSpec.model_validate(spec) if isinstance(spec, dict) else spec
        if spec.name in self.servers:
            raise FleetError(f"server {spec.name!r} is already in the fleet")
        data = self.topology.model_dump(by_alias=True, mode="json")
        data["servers"].append(spec.model_dump(mode="json"))
        topology = Topology.load(data)
        server_id = max(s.server_id for s in self.servers.values()) + 1
        server = SandboxServer(self.dist, spec.name, self.workdir / "servers" / spec.name, server_id,
                               gtid_mode=spec.gtid_mode, options=spec.options, tls=spec.tls)
        server.start()
        self.servers[spec.name] = server
        self.topology = topology
        self.save()
        self._create_accounts([server])
        return server

    # -- groups ----------------------------------------------------------------------------
    def form_group(self, group: GroupSpec, *, timeout: float = 120.0) -> None:
        """Bootstrap ``group`` on its first member and join the others one by one, each ONLINE
        before the next starts. The recovery channel uses the ``repl`` account, which needs
        GROUP_REPLICATION_STREAM for the MYSQL communication stack (granted with
        ``sql_log_bin=0``: like every account, it never becomes a GTID)."""
        for i, name in enumerate(group.members):
            member = self.servers[name]
            member.execute("SET SESSION sql_log_bin = 0",
                           f"GRANT GROUP_REPLICATION_STREAM ON *.* TO '{REPL_USER}'@'%'",
                           "SET SESSION sql_log_bin = 1",
                           f"CHANGE REPLICATION SOURCE TO SOURCE_USER='{REPL_USER}', "
                           f"SOURCE_PASSWORD='{self.passwords[REPL_USER]}' FOR CHANNEL 'group_replication_recovery'")
            if i == 0:
                member.execute("SET GLOBAL group_replication_bootstrap_group = ON", "START GROUP_REPLICATION",
                               "SET GLOBAL group_replication_bootstrap_group = OFF")
            else:
                self.start_group_replication(name)
            self.wait_member_state(name, "ONLINE", timeout=timeout)

    def start_group_replication(self, name: str) -> None:
        """``START GROUP_REPLICATION`` on ``name`` (returns once the server answers: the member
        may still be RECOVERING, or refused and in ERROR; see :meth:`member_state`)."""
        self.servers[name].execute("START GROUP_REPLICATION")

    def member_state(self, name: str) -> str | None:
        """MEMBER_STATE of ``name`` as it sees itself (ONLINE, RECOVERING, OFFLINE, ERROR, ...)."""
        return self.servers[name].query_value(
            "SELECT MEMBER_STATE FROM performance_schema.replication_group_members "
            "WHERE MEMBER_ID = @@GLOBAL.server_uuid")

    def group_primary(self, group: str) -> str | None:
        """The inventory name of the PRIMARY of ``group`` as its ONLINE members see it."""
        spec = next(g for g in self.topology.groups if g.name == group)
        by_uuid = {self.servers[m].server_uuid: m for m in spec.members}
        for name in spec.members:
            if self.servers[name].is_running() and self.member_state(name) == "ONLINE":
                uuid_ = self.servers[name].query_value(
                    "SELECT MEMBER_ID FROM performance_schema.replication_group_members "
                    "WHERE MEMBER_ROLE = 'PRIMARY' AND MEMBER_STATE = 'ONLINE'")
                return by_uuid.get(uuid_)
        return None

    def wait_member_state(self, name: str, state: str, *, timeout: float = 120.0) -> None:
        """Wait until ``name`` reports itself in ``state``; fail early when it reaches ERROR."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            seen = self.member_state(name)
            if seen == state:
                return
            if seen == "ERROR" and state != "ERROR":
                break
            time.sleep(0.1)
        raise FleetError(f"group member {name!r} is {seen!r}, not {state!r} (waited up to {timeout} s); "
                         f"see {str(self.servers[name].log_error)!r}")

    def wait_groups_converged(self, timeout: float = 120.0) -> None:
        """Wait until every running ONLINE member of every group holds its primary's (or, in
        multi-primary mode, every other member's) gtid_executed."""
        deadline = time.monotonic() + timeout
        for group in self.topology.groups:
            while True:
                online = [m for m in group.members
                          if self.servers[m].is_running() and self.member_state(m) == "ONLINE"]
                sets = {m: self.servers[m].gtid_executed() for m in online}
                behind = [m for m in online
                          if not all(self.servers[m].query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)",
                                                                 (other,)) for other in sets.values())]
                if not behind:
                    break
                if time.monotonic() > deadline:
                    raise FleetError(f"group {group.name!r}: members {behind!r} did not catch up within {timeout} s")
                time.sleep(0.1)

    # -- waiting ---------------------------------------------------------------------------
    def channel_errors(self) -> dict[tuple[str, str], str]:
        """{(replica, channel): 'errno: message'} for channels whose receiver or applier failed."""
        problems: dict[tuple[str, str], str] = {}
        for ch in self.topology.channels:
            replica = self.servers[ch.replica]
            if not replica.is_running():
                continue
            for row in replica.query("SHOW REPLICA STATUS FOR CHANNEL %s", (ch.channel,)):
                for kind in ("IO", "SQL"):
                    if row.get(f"Last_{kind}_Errno"):
                        problems[(ch.replica, ch.channel)] = f"{row[f'Last_{kind}_Errno']}: {row[f'Last_{kind}_Error']}"
        return problems

    def wait_caught_up(self, timeout: float = 120.0, channels: "list[ChannelSpec] | None" = None) -> None:
        """Wait until each replica's gtid_executed contains its source's (GTID_SUBSET, on the replica)."""
        pending = list(channels if channels is not None else self.topology.channels)
        deadline = time.monotonic() + timeout
        while pending:
            still = []
            for ch in pending:
                source_set = self.servers[ch.source].gtid_executed()
                if not self.servers[ch.replica].query_value(
                        "SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (source_set,)):
                    still.append(ch)
            pending = still
            if not pending:
                return
            errors = self.channel_errors()
            failed = {k: v for k, v in errors.items() if any((c.replica, c.channel) == k for c in pending)}
            if failed:
                raise FleetError(f"replication failed while catching up: {failed!r}")
            if time.monotonic() > deadline:
                names = [f"{c.replica}<-{c.source} ({c.channel!r})" for c in pending]
                raise FleetError(f"replicas did not catch up within {timeout} s: {names!r}")
            time.sleep(0.1)

    # -- state -----------------------------------------------------------------------------
    def server(self, name: str) -> SandboxServer:
        try:
            return self.servers[name]
        except KeyError:
            raise FleetError(f"no server {name!r} in this fleet; servers are {sorted(self.servers)!r}") from None

    def cluster_of(self, name: str) -> str:
        return self.topology.cluster_of(name)

    @property
    def audit_password_file(self) -> Path:
        return self.workdir / AUDIT_PASSWORD_FILE

    def _write_password_file(self) -> None:
        _write_private(self.audit_password_file, self.passwords[AUDIT_USER] + "\n")

    def save(self) -> Path:
        """Write ``workdir/sandbox-state.json`` (mode 0600: it holds passwords)."""
        state = {
            "version": 1,
            "topology": self.topology.model_dump(by_alias=True, mode="json"),
            "dist": {"root": str(self.dist.root), "version": self.dist.version,
                     "template_datadir": str(self.dist.template_datadir)},
            "passwords": self.passwords,
            "servers": {name: server.to_state() for name, server in self.servers.items()},
        }
        path = self.workdir / STATE_FILE
        _write_private(path, json.dumps(state, indent=2) + "\n")
        return path

    @classmethod
    def attach(cls, workdir: "str | os.PathLike") -> "Fleet":
        """The fleet saved in ``workdir`` by ``up`` (from this or another process)."""
        workdir = Path(workdir).resolve()
        path = workdir / STATE_FILE
        if not path.exists():
            raise FleetNotFoundError(f"no sandbox fleet in {str(workdir)!r} (no {STATE_FILE}): none was brought "
                                     "up there, or it was removed (the demo removes its fleet unless --keep)")
        try:
            state = json.loads(path.read_text())
            dist = MySQLDist(root=Path(state["dist"]["root"]), version=state["dist"]["version"],
                             template_datadir=Path(state["dist"]["template_datadir"]))
            topology = Topology.load(state["topology"])
            servers = {name: SandboxServer.from_state(dist, s) for name, s in state["servers"].items()}
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise FleetError(f"sandbox state file {str(path)!r} is damaged: {exc!r}") from None
        return cls(topology, workdir, dist, servers, state["passwords"])

    def status(self) -> dict[str, Any]:
        rows = []
        for name, server in self.servers.items():
            rows.append({"name": name, "cluster": self.cluster_of(name), "host": server.host,
                         "port": server.port, "pid": server.pid, "running": server.is_running(),
                         "server_uuid": server.to_state()["server_uuid"]})
        return {"workdir": str(self.workdir), "servers": rows}

    def down(self, *, graceful: bool = True) -> list[str]:
        """Stop exactly the pids this fleet started (in parallel); return the names stopped.

        ``graceful=False`` kills each server (SIGKILL, no shutdown to wait for), for a throwaway
        fleet whose data directories nobody reads again (the tests'): a clean shutdown there only
        costs time, about 10 s for a source whose binlog dump threads still serve a replica after
        a promotion."""
        targets = [s for s in self.servers.values() if s.pid is not None]
        stopped = [s.name for s in targets if s.is_running()]
        if graceful:
            self._stop_in_waves(targets, stopped)
        else:
            for server in targets:
                server.stop(graceful=False)
        if (self.workdir / STATE_FILE).exists() or targets:
            with contextlib.suppress(OSError):
                self.save()
        return stopped

    def _stop_in_waves(self, targets: list[SandboxServer], stopped: list[str]) -> None:
        self._complete_partial_groups([s for s in targets if s.name in stopped])
        # Replicas first, wave by wave: a source whose binlog dump threads still serve a
        # connected replica spends ~10 s in shutdown waiting for them.
        remaining = {s.name: s for s in targets}
        while remaining:
            feeding = {c.source for c in self.topology.channels if c.replica in remaining}
            wave = [s for name, s in remaining.items() if name not in feeding] or list(remaining.values())
            with ThreadPoolExecutor(max_workers=len(wave)) as pool:
                list(pool.map(lambda s: s.stop(), wave))
            for server in wave:
                remaining.pop(server.name)

    def _complete_partial_groups(self, servers: list[SandboxServer], timeout: float = 15.0) -> None:
        """Let a receiver stopped mid-transaction fetch the rest before shutdown.

        A multi-threaded applier waiting inside an incomplete group (the relay log ends inside a
        transaction, see ``scenarios.relay_log_ends_inside_transaction``) defers its exit for 60 s
        at shutdown. Restarting that channel's receiver completes the group, so shutdown is quick.
        Best effort: whatever fails here falls back to the SIGTERM/SIGKILL path of ``stop``.
        """
        waiting: list[tuple[SandboxServer, str]] = []
        for server in servers:
            if not any(c.replica == server.name for c in self.topology.channels):
                continue
            with contextlib.suppress(Exception):
                for row in server.query(
                        "SELECT c.CHANNEL_NAME FROM performance_schema.replication_connection_status c "
                        "JOIN performance_schema.replication_applier_status a USING (CHANNEL_NAME) "
                        "WHERE c.SERVICE_STATE = 'OFF' AND c.QUEUEING_TRANSACTION <> '' AND a.SERVICE_STATE = 'ON'"):
                    server.execute(f"START REPLICA IO_THREAD FOR CHANNEL '{row['CHANNEL_NAME']}'")
                    waiting.append((server, row["CHANNEL_NAME"]))
        deadline = time.monotonic() + timeout
        for server, channel in waiting:
            with contextlib.suppress(Exception):
                while time.monotonic() < deadline and server.query_value(
                        "SELECT QUEUEING_TRANSACTION FROM performance_schema.replication_connection_status "
                        "WHERE CHANNEL_NAME = %s", (channel,)):
                    time.sleep(0.1)

    # -- the auditor's configuration -------------------------------------------------------
    def write_audit_config(self, path: "str | os.PathLike", warehouse: str = "./warehouse",
                           extra_servers: "list[dict[str, Any]] | tuple" = (),
                           connect_timeout_s: int = 5) -> Path:
        """Write the auditor's YAML config: every server, user ``audit``, password by file.

        ``extra_servers`` adds entries (an address that refuses connections); an entry named
        like a fleet server overrides that server's entry key by key (a wrong password)."""
        self._write_password_file()
        servers = [{"name": name, "host": server.host, "port": server.port, "cluster": self.cluster_of(name)}
                   for name, server in self.servers.items()]
        index = {s["name"]: i for i, s in enumerate(servers)}
        extra_names: set[str] = set()
        for extra in extra_servers:
            name = extra["name"]
            if name in extra_names:
                raise FleetError(f"extra server name {name!r} is given twice")
            extra_names.add(name)
            if name in index:  # overrides a fleet server's entry (e.g. a wrong password)
                servers[index[name]] = {**servers[index[name]], **extra}
            else:
                servers.append(dict(extra))
        config = {
            "warehouse": str(warehouse),
            "defaults": {"user": AUDIT_USER, "password_file": str(self.audit_password_file),
                         "connect_timeout_s": connect_timeout_s},
            "servers": servers,
        }
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("# Written by `gtid-audit sandbox up` (or `demo`): the auditor's configuration of the sandbox\n"
                       "# fleet. `gtid-audit sandbox status` says whether it runs; `sandbox down` stops it.\n"
                       + yaml.safe_dump(config, sort_keys=False))
        return out.resolve()

    def __enter__(self) -> "Fleet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()


def _with_group_names(topology: Topology) -> Topology:
    """``topology`` with a fresh ``group_name`` UUID for every group that has none."""
    if all(g.group_name for g in topology.groups):
        return topology
    data = topology.model_dump(by_alias=True, mode="json")
    for group in data["groups"]:
        group["group_name"] = group.get("group_name") or str(uuid.uuid4())
    return Topology.load(data)


def _group_options(topology: Topology, dist: MySQLDist) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """Ports fixed in advance for group members (each one's seeds name the others) and their
    Group Replication options. ``communication_stack=MYSQL``: group traffic goes through mysqld's
    own 127.0.0.1 listener, so ``local_address`` is the member's own SQL port; XCom's stack would
    open a port on every interface. The group starts by hand (``start_on_boot=OFF``)."""
    ports: dict[str, int] = {}
    options: dict[str, tuple[str, ...]] = {}
    for group in topology.groups:
        for member in group.members:
            ports[member] = free_port()
        seeds = ",".join(f"{HOST}:{ports[m]}" for m in group.members)
        single = group.mode == "single-primary"
        for member in group.members:
            options[member] = (
                f"--plugin-dir={dist.basedir / 'lib' / 'mysql' / 'plugin'}",
                "--plugin-load-add=group_replication.so",
                f"--group-replication-group-name={group.group_name}",
                "--group-replication-communication-stack=MYSQL",
                f"--group-replication-local-address={HOST}:{ports[member]}",
                f"--group-replication-group-seeds={seeds}",
                f"--group-replication-ip-allowlist={HOST}/8",
                "--group-replication-start-on-boot=OFF",
                "--group-replication-bootstrap-group=OFF",
                "--group-replication-single-primary-mode=" + ("ON" if single else "OFF"),
                "--group-replication-enforce-update-everywhere-checks=" + ("OFF" if single else "ON"),
                f"--group-replication-member-weight={group.weights.get(member, 50)}",
                "--group-replication-autorejoin-tries=0",
            )
    return ports, options


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (created 0600, never world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
