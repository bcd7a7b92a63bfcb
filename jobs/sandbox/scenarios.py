"""Fault scenarios: real broken states on real sandbox servers, with the server's own GTID sets.

Each injector drives a running :class:`~jobs.sandbox.fleet.Fleet` into one state an auditor
must recognise and returns a :class:`ScenarioResult` whose ``gtid_sets`` were computed by the
servers themselves (``@@GLOBAL.gtid_executed``, ``gtid_purged``, the channel's received set,
``GTID_SUBTRACT`` / ``GTID_SUBSET`` run on a server), never by our own GTID code, so a test can
compare the auditor's verdict with the server's.

Injectors and their repairs:

==============================================  ============================================
``errant_transaction`` (untagged or tagged)     ``repair_errant`` (empty transactions on the
                                                top source, the textbook fix)
``purged_binary_logs`` (replica stopped; 13114  ``repair_missing_gtids`` (rows copied without
on restart if asked)                            binlog + ``SET GLOBAL gtid_purged='+...'``)
``source_restored_with_gtid_purged``            ``repair_missing_gtids``
``reset_replica_binary_logs``                   ``repair_reset_replica`` (gtid_purged = what
                                                the relay logs prove was applied)
``relay_log_ends_inside_transaction``           ``repair_relay_log`` (restart the receiver)
``multi_source``, ``chain`` (descriptions of     -
the standard topology's shapes)
``gtid_off_server``                             -
``refused_address``, ``wrong_password``         - (config entries for the auditor)
``ContinuousWriter`` (writes while auditing)    ``.stop()``
``delayed_replica``, ``add_delayed_replica``    ``undelay_replica`` (SOURCE_DELAY = 0)
(SOURCE_DELAY: behind on purpose, healthy)
``lagging_replica`` (a long reader holds a      the returned lock's ``.release()``
table lock the applier waits for; healthy)
busy sources: ``jobs.sandbox.load.LoadWriter``  bounded; stops by itself
``replica_backlog`` (how far a replica is       -
behind, as the replica computes it)
==============================================  ============================================

The live conditions (a delayed, a lagging and a ``log_replica_updates=OFF`` replica of busy
sources; topology ``topologies/live.yaml``) are healthy: an audit must not flag them.

Scenario writes go to the ``sandbox_scenarios`` database, always on the top source of a chain
so intermediate replicas never gain GTIDs of their own.
"""
from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

import mysql.connector

from gtid_core import GtidSet
from jobs.sandbox.errors import ScenarioError
from jobs.sandbox.fleet import ChannelSpec, Fleet, _write_private
from jobs.sandbox.proxy import HoldingProxy
from jobs.sandbox.server import HOST, SandboxServer, free_port

__all__ = [
    "ScenarioResult", "ContinuousWriter",
    "errant_transaction", "repair_errant",
    "purged_binary_logs", "source_restored_with_gtid_purged", "repair_missing_gtids",
    "reset_replica_binary_logs", "repair_reset_replica",
    "relay_log_ends_inside_transaction", "repair_relay_log",
    "multi_source", "chain", "gtid_off_server", "refused_address", "wrong_password",
    "channel_status", "inject_demo_faults", "extra_config_servers",
    "delayed_replica", "add_delayed_replica", "undelay_replica", "lagging_replica", "replica_backlog",
]

DB = "sandbox_scenarios"
ER_SOURCE_FATAL_ERROR_READING_BINLOG = 13114   # "Got fatal error 1236 from source ..." (8.0.26+)


@dataclasses.dataclass(frozen=True)
class ScenarioResult:
    """What a scenario did, with the GTID sets exactly as the servers computed them.

    ``gtid_sets`` maps a label (e.g. ``"errant"``, ``"source.gtid_purged"``) to server text;
    ``details`` holds other server-reported facts (error numbers, event types, channel);
    ``config_servers`` are extra entries for the auditor config (``write_audit_config``).
    """

    name: str
    servers: tuple[str, ...]
    gtid_sets: Mapping[str, str]
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    config_servers: tuple[Mapping[str, Any], ...] = ()


# ---------------------------------------------------------------------------------------------
# helpers

def _channel(fleet: Fleet, replica: str, channel: str | None = None) -> ChannelSpec:
    chans = [c for c in fleet.topology.channels if c.replica == replica]
    if channel is not None:
        chans = [c for c in chans if c.channel == channel]
    if not chans:
        raise ScenarioError(f"server {replica!r} has no replication channel {channel!r}")
    return chans[0]


def _root_of(fleet: Fleet, name: str) -> str:
    """Follow the first channel upwards until a server that replicates from nobody."""
    seen = {name}
    while True:
        ups = [c.source for c in fleet.topology.channels if c.replica == name]
        if not ups or ups[0] in seen:
            return name
        name = ups[0]
        seen.add(name)


def _union(*sets: str | None) -> str:
    """GTID text of the union; the server functions accept overlapping, comma-joined blocks."""
    return ",".join(s for s in sets if s)


def channel_status(server: SandboxServer, channel: str = "") -> dict[str, Any]:
    """The channel's row of ``performance_schema.replication_connection_status`` + SHOW REPLICA STATUS."""
    rows = server.query("SELECT * FROM performance_schema.replication_connection_status WHERE CHANNEL_NAME = %s",
                        (channel,))
    status = server.query("SHOW REPLICA STATUS FOR CHANNEL %s", (channel,))
    if not rows or not status:
        raise ScenarioError(f"server {server.name!r} has no channel {channel!r}")
    return {**rows[0], **status[0]}


def _write(server: SandboxServer, count: int, table: str = "writes") -> None:
    server.execute(f"CREATE DATABASE IF NOT EXISTS {DB}",
                   f"CREATE TABLE IF NOT EXISTS {DB}.{table} (id BIGINT PRIMARY KEY AUTO_INCREMENT, "
                   "note VARCHAR(200) NOT NULL, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
                   *[f"INSERT INTO {DB}.{table} (note) VALUES ('scenario write {i}')" for i in range(count)])


def _wait(predicate, what: str, timeout: float = 60.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise ScenarioError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def _has_all(server: SandboxServer, gtids: str) -> bool:
    return bool(server.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (gtids,)))


def _wait_has(server: SandboxServer, gtids: str, timeout: float = 60.0) -> None:
    _wait(lambda: _has_all(server, gtids), f"{server.name!r} to apply {gtids!r}", timeout)


def _wait_received(server: SandboxServer, channel: str, gtids: str, timeout: float = 60.0) -> None:
    """Wait until ``server``'s ``channel`` has received ``gtids`` (its RECEIVED_TRANSACTION_SET)."""
    _wait(lambda: server.query_value("SELECT GTID_SUBSET(%s, %s)",
                                     (gtids, channel_status(server, channel)["RECEIVED_TRANSACTION_SET"])),
          f"{server.name!r} to receive {gtids!r}", timeout)


def _running_channels_from(fleet: Fleet, source: str, exclude: ChannelSpec | None = None) -> list[ChannelSpec]:
    result = []
    for ch in fleet.topology.channels:
        if ch.source != source or ch == exclude:
            continue
        status = channel_status(fleet.server(ch.replica), ch.channel)
        if status["SERVICE_STATE"] == "ON":
            result.append(ch)
    return result


# ---------------------------------------------------------------------------------------------
# errant transactions

def errant_transaction(fleet: Fleet, replica: str, *, tag: str | None = None,
                       channel: str | None = None) -> ScenarioResult:
    """Commit one transaction directly on ``replica`` (with ``gtid_next='AUTOMATIC:tag'`` if tagged).

    The replica's own UUID gets a GTID its source never had: ``GTID_SUBTRACT(replica, source)``
    is non-empty. Tagged GTIDs need the TRANSACTION_GTID_TAG privilege (root has it).
    """
    ch = _channel(fleet, replica, channel)
    rep, src = fleet.server(replica), fleet.server(ch.source)
    before = rep.gtid_executed()
    statements = [f"SET SESSION gtid_next = 'AUTOMATIC:{tag}'"] if tag else []
    statements += [f"CREATE DATABASE errant_{time.time_ns()}", "SET SESSION gtid_next = 'AUTOMATIC'"]
    rep.execute(*statements)
    after = rep.gtid_executed()
    source_executed = src.gtid_executed()
    errant = rep.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (source_executed,))
    injected = rep.query_value("SELECT GTID_SUBTRACT(%s, %s)", (after, before))
    if not errant or not injected:
        raise ScenarioError(f"no errant GTID appeared on {replica!r} (gtid_executed {after!r})")
    return ScenarioResult(
        name="errant_transaction_tagged" if tag else "errant_transaction",
        servers=(replica, ch.source),
        gtid_sets={"errant": errant, "injected": injected, "replica.gtid_executed": after,
                   "source.gtid_executed": source_executed},
        details={"channel": ch.channel, "tag": tag, "replica_uuid": rep.server_uuid})


def repair_errant(fleet: Fleet, result: ScenarioResult, timeout: float = 60.0) -> ScenarioResult:
    """Commit an empty transaction with each errant GTID on the top source of the replica's chain.

    The GTIDs then flow down to every replica (the errant one skips them, having them already),
    so ``GTID_SUBTRACT(replica, source)`` becomes empty for the pair.
    """
    replica, source = result.servers[0], result.servers[1]
    root = fleet.server(_root_of(fleet, source))
    statements = []
    for uuid, tag, first, last in GtidSet.parse(result.gtid_sets["errant"]):
        prefix = f"{uuid}:{tag}" if tag else uuid
        for gno in range(first, last + 1):
            statements += [f"SET SESSION gtid_next = '{prefix}:{gno}'", "BEGIN", "COMMIT"]
    root.execute(*statements, "SET SESSION gtid_next = 'AUTOMATIC'")
    _wait_has(fleet.server(source), result.gtid_sets["errant"], timeout)
    rep = fleet.server(replica)
    source_executed = fleet.server(source).gtid_executed()
    remaining = rep.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (source_executed,))
    return ScenarioResult(name=result.name + "_repaired", servers=result.servers,
                          gtid_sets={"errant": remaining, "replica.gtid_executed": rep.gtid_executed(),
                                     "source.gtid_executed": source_executed},
                          details={"empty_transactions_on": root.name})


# ---------------------------------------------------------------------------------------------
# GTIDs a replica needs but its source no longer has

def _missing_result(fleet: Fleet, name: str, ch: ChannelSpec, start_replica: bool, timeout: float,
                    extra: dict[str, Any]) -> ScenarioResult:
    rep, src = fleet.server(ch.replica), fleet.server(ch.source)
    details: dict[str, Any] = {"channel": ch.channel, **extra}
    if start_replica:
        rep.execute(f"START REPLICA IO_THREAD FOR CHANNEL '{ch.channel}'")
        status = _wait(lambda: (s := channel_status(rep, ch.channel))["Last_IO_Errno"] and s,
                       f"{ch.replica!r} receiver to fail", timeout)
        details.update(last_io_errno=status["Last_IO_Errno"], last_io_error=status["Last_IO_Error"])
    status = channel_status(rep, ch.channel)
    retrieved = status["RECEIVED_TRANSACTION_SET"]
    executed = rep.gtid_executed()
    purged = src.query_value("SELECT @@GLOBAL.gtid_purged")
    missing = rep.query_value("SELECT GTID_SUBTRACT(%s, %s)", (purged, _union(executed, retrieved)))
    if not missing:
        raise ScenarioError(f"{ch.replica!r} is not missing purged GTIDs of {ch.source!r} (gtid_purged {purged!r})")
    details["receiver_running"] = status["Replica_IO_Running"]
    return ScenarioResult(
        name=name, servers=(ch.replica, ch.source),
        gtid_sets={"missing": missing, "source.gtid_purged": purged,
                   "source.gtid_executed": src.gtid_executed(), "replica.gtid_executed": executed,
                   "replica.received_transaction_set": retrieved},
        details=details)


def purged_binary_logs(fleet: Fleet, replica: str, *, channel: str | None = None, transactions: int = 3,
                       start_replica: bool = False, timeout: float = 60.0) -> ScenarioResult:
    """Stop ``replica``'s receiver, write on the source, FLUSH + PURGE its binary logs.

    The source's ``gtid_purged`` then holds GTIDs the replica has neither executed nor
    received: at reconnect the source refuses it (ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, seen by
    the replica as 13114 "Got fatal error 1236"). ``start_replica=True`` restarts the receiver
    and waits for that error; by default the replica is left stopped (the latent case).
    """
    ch = _channel(fleet, replica, channel)
    rep, src = fleet.server(ch.replica), fleet.server(ch.source)
    rep.execute(f"STOP REPLICA IO_THREAD FOR CHANNEL '{ch.channel}'")
    root = fleet.server(_root_of(fleet, ch.source))
    before = root.gtid_executed()
    _write(root, transactions)
    written = root.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (before,))
    _wait_has(src, written, timeout)
    others = _running_channels_from(fleet, ch.source, exclude=ch)
    fleet.wait_caught_up(timeout=timeout, channels=others)
    src.execute("FLUSH BINARY LOGS")
    current = src.query("SHOW BINARY LOG STATUS")[0]["File"]
    src.execute(f"PURGE BINARY LOGS TO '{current}'")
    return _missing_result(fleet, "purged_binary_logs", ch, start_replica, timeout,
                           {"purged_to": current, "written": written})


def source_restored_with_gtid_purged(fleet: Fleet, replica: str, *, channel: str | None = None,
                                     transactions: int = 3, start_replica: bool = True,
                                     timeout: float = 60.0) -> ScenarioResult:
    """The source of ``replica`` is 'restored from a backup': RESET BINARY LOGS AND GTIDS, then
    ``SET GLOBAL gtid_purged`` to everything it had, while ``replica`` lags behind.

    The replica's receiver is stopped before the last writes; restarting it (default) fails at
    once with 13114 because the source's binary logs no longer hold what it lacks.
    """
    ch = _channel(fleet, replica, channel)
    rep, src = fleet.server(ch.replica), fleet.server(ch.source)
    if _root_of(fleet, ch.source) != ch.source:
        raise ScenarioError(f"source {ch.source!r} of {replica!r} is itself a replica; restore a top source")
    rep.execute(f"STOP REPLICA IO_THREAD FOR CHANNEL '{ch.channel}'")
    _write(src, transactions)
    others = _running_channels_from(fleet, ch.source, exclude=ch)
    fleet.wait_caught_up(timeout=timeout, channels=others)
    # Up-to-date replicas are detached during the "restore" and reattached after it: they need
    # nothing from the removed binary logs (their dump threads would otherwise fail on them).
    for other in others:
        fleet.server(other.replica).execute(f"STOP REPLICA IO_THREAD FOR CHANNEL '{other.channel}'")
    executed = src.gtid_executed()
    src.execute("RESET BINARY LOGS AND GTIDS", f"SET GLOBAL gtid_purged = '{executed}'")
    for other in others:
        fleet.server(other.replica).execute(f"START REPLICA IO_THREAD FOR CHANNEL '{other.channel}'")
    return _missing_result(fleet, "source_restored_with_gtid_purged", ch, start_replica, timeout,
                           {"restored_gtid_purged": executed})


def repair_missing_gtids(fleet: Fleet, result: ScenarioResult, timeout: float = 60.0) -> ScenarioResult:
    """Re-provision the lagging replica the way a logical backup would (mysqldump's recipe).

    On the source: ``FLUSH TABLES WITH READ LOCK``, read ``gtid_executed``, open a consistent
    snapshot, unlock, read the scenario rows. On the replica: copy those rows without binary
    logging, declare the snapshot's GTIDs it lacks with ``SET GLOBAL gtid_purged = '+...'``,
    restart the channel and wait until it caught up. Sound only for the sandbox's own writes
    (the ``sandbox_scenarios`` database is the whole content of the missing transactions);
    replicas of the repaired replica are not repaired.
    """
    replica, source = result.servers
    rep, src = fleet.server(replica), fleet.server(source)
    ch = _channel(fleet, replica, result.details.get("channel"))
    with contextlib.closing(src.connect()) as conn:
        cur = conn.cursor()
        cur.execute("FLUSH TABLES WITH READ LOCK")
        cur.execute("SELECT @@GLOBAL.gtid_executed")
        snapshot_executed = cur.fetchone()[0]
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("UNLOCK TABLES")
        cur.execute(f"SELECT id, note, at FROM {DB}.writes")
        rows = cur.fetchall()
        cur.execute("COMMIT")
    rep.execute(f"STOP REPLICA FOR CHANNEL '{ch.channel}'")
    missing = rep.query_value("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (snapshot_executed,))
    with contextlib.closing(rep.connect()) as conn:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {DB}")
        cur.execute(f"CREATE TABLE IF NOT EXISTS {DB}.writes (id BIGINT PRIMARY KEY AUTO_INCREMENT, "
                    "note VARCHAR(200) NOT NULL, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))")
        cur.executemany(f"REPLACE INTO {DB}.writes (id, note, at) VALUES (%s, %s, %s)", rows)
        if missing:
            cur.execute(f"SET GLOBAL gtid_purged = '+{missing}'")
    rep.execute(f"START REPLICA FOR CHANNEL '{ch.channel}'")
    fleet.wait_caught_up(timeout=timeout, channels=[ch])
    status = channel_status(rep, ch.channel)
    purged = src.query_value("SELECT @@GLOBAL.gtid_purged")
    still = rep.query_value("SELECT GTID_SUBTRACT(%s, %s)",
                            (purged, _union(rep.gtid_executed(), status["RECEIVED_TRANSACTION_SET"])))
    return ScenarioResult(name=result.name + "_repaired", servers=result.servers,
                          gtid_sets={"missing": still, "source.gtid_purged": purged,
                                     "replica.gtid_executed": rep.gtid_executed(),
                                     "declared_purged": missing or ""},
                          details={"channel": ch.channel, "last_io_errno": status["Last_IO_Errno"]})


# ---------------------------------------------------------------------------------------------
# RESET BINARY LOGS AND GTIDS on a replica

def reset_replica_binary_logs(fleet: Fleet, replica: str) -> ScenarioResult:
    """STOP REPLICA; RESET BINARY LOGS AND GTIDS; START REPLICA on ``replica``.

    MySQL 9.7 empties ``gtid_executed`` and ``gtid_purged`` but keeps the channels' received
    sets and relay logs; replication restarts without re-fetching or failing. The local history
    is silently gone: ``GTID_SUBTRACT(received, gtid_executed)`` is non-empty with an idle applier.
    """
    rep = fleet.server(replica)
    channels = [c for c in fleet.topology.channels if c.replica == replica]
    if not channels:
        raise ScenarioError(f"server {replica!r} replicates from nobody")
    before = rep.gtid_executed()
    rep.execute("STOP REPLICA", "RESET BINARY LOGS AND GTIDS", "START REPLICA")
    received = {c.channel: channel_status(rep, c.channel)["RECEIVED_TRANSACTION_SET"] for c in channels}
    executed = rep.gtid_executed()
    lost = rep.query_value("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (_union(*received.values()),))
    if not lost:
        raise ScenarioError(f"RESET BINARY LOGS AND GTIDS on {replica!r} left no received GTID outside gtid_executed")
    sets = {"lost": lost, "replica.gtid_executed": executed, "replica.gtid_executed_before": before,
            "replica.gtid_purged": rep.query_value("SELECT @@GLOBAL.gtid_purged")}
    sets.update({f"received[{name}]": text for name, text in received.items()})
    return ScenarioResult(name="reset_replica_binary_logs", servers=(replica, *[c.source for c in channels]),
                          gtid_sets=sets, details={"channels": [c.channel for c in channels]})


def repair_reset_replica(fleet: Fleet, result: ScenarioResult) -> ScenarioResult:
    """Declare the GTIDs the replica applied before the reset: ``SET GLOBAL gtid_purged`` to
    its pre-reset ``gtid_executed`` (the data is still there), with replication stopped."""
    replica = result.servers[0]
    rep = fleet.server(replica)
    rep.execute("STOP REPLICA")
    missing = rep.query_value("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)",
                              (result.gtid_sets["replica.gtid_executed_before"],))
    if missing:
        rep.execute(f"SET GLOBAL gtid_purged = '+{missing}'")
    rep.execute("START REPLICA")
    channels = [c for c in fleet.topology.channels if c.replica == replica]
    fleet.wait_caught_up(channels=channels)
    received = _union(*[channel_status(rep, c.channel)["RECEIVED_TRANSACTION_SET"] for c in channels])
    lost = rep.query_value("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (received,))
    return ScenarioResult(name=result.name + "_repaired", servers=result.servers,
                          gtid_sets={"lost": lost, "replica.gtid_executed": rep.gtid_executed()},
                          details={"declared_purged": missing})


# ---------------------------------------------------------------------------------------------
# relay log ending inside a transaction

def relay_log_ends_inside_transaction(fleet: Fleet, replica: str, *, channel: str | None = None,
                                      rows: int = 5000, budget: int = 30000,
                                      timeout: float = 60.0) -> ScenarioResult:
    """Leave ``replica``'s relay log ending inside a transaction, without debug builds.

    The channel's receiver is re-pointed through a :class:`HoldingProxy` (receiver only, so the
    relay logs and received set are kept); the proxy lets ``budget`` bytes of a large
    ``rows``-row transaction through and holds the rest; once the replica reports that GTID as
    ``QUEUEING_TRANSACTION``, ``STOP REPLICA IO_THREAD`` freezes the relay log mid-group and the
    channel is pointed back at the real source port (receiver left stopped: restarting it makes
    9.7 truncate the partial group). Verified with ``SHOW RELAYLOG EVENTS`` (last event is not
    a commit) and the GTID being absent from the received set. The applier stays running,
    waiting inside the group; as it would defer a shutdown by 60 s, ``Fleet.down`` restarts
    such receivers first. Reliable here because the cut is made by byte count, not by timing.
    """
    ch = _channel(fleet, replica, channel)
    rep, src = fleet.server(ch.replica), fleet.server(ch.source)
    root = fleet.server(_root_of(fleet, ch.source))
    for_channel = f"FOR CHANNEL '{ch.channel}'"
    root.execute(f"CREATE DATABASE IF NOT EXISTS {DB}",
                 f"CREATE TABLE IF NOT EXISTS {DB}.big (id BIGINT PRIMARY KEY AUTO_INCREMENT, pad VARCHAR(200))")
    _wait_has(rep, root.gtid_executed(), timeout)
    proxy = HoldingProxy(src.port)
    try:
        rep.execute(f"STOP REPLICA IO_THREAD {for_channel}",
                    f"CHANGE REPLICATION SOURCE TO SOURCE_PORT={proxy.port}, SOURCE_HEARTBEAT_PERIOD=0.5 {for_channel}",
                    f"START REPLICA IO_THREAD {for_channel}")
        _wait(lambda: channel_status(rep, ch.channel)["SERVICE_STATE"] == "ON", "the receiver to connect", timeout)
        proxy.hold_after(budget)
        before = root.gtid_executed()
        root.execute(f"SET SESSION cte_max_recursion_depth = {rows + 1}",
                     f"INSERT INTO {DB}.big (pad) WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL "
                     f"SELECT n + 1 FROM seq WHERE n < {rows}) SELECT REPEAT('x', 150) FROM seq")
        big = root.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (before,))
        _wait(lambda: channel_status(rep, ch.channel)["QUEUEING_TRANSACTION"] == big,
              f"{replica!r} to start queueing {big!r}", timeout)
        if not proxy.held.wait(timeout):
            raise ScenarioError(f"the proxy never held the stream of {big!r} (budget {budget} bytes)")
        time.sleep(0.3)   # the receiver writes what it got; nothing more can arrive
        rep.execute(f"STOP REPLICA IO_THREAD {for_channel}",
                    f"CHANGE REPLICATION SOURCE TO SOURCE_PORT={src.port}, SOURCE_HEARTBEAT_PERIOD=0.5 {for_channel}")
    finally:
        proxy.close()
    status = channel_status(rep, ch.channel)
    relay_file = status["Relay_Log_File"]
    events = rep.query(f"SHOW RELAYLOG EVENTS IN '{relay_file}' {for_channel}")
    types = [e["Event_type"] for e in events]
    received = status["RECEIVED_TRANSACTION_SET"]
    in_received = rep.query_value("SELECT GTID_SUBSET(%s, %s)", (big, received))
    if status["QUEUEING_TRANSACTION"] != big or in_received or types[-1] in ("Xid", "Gtid") \
            or "Gtid" not in types:
        raise ScenarioError(f"relay log of {replica!r} does not end inside {big!r}: events {types[-6:]!r}, "
                            f"queueing {status['QUEUEING_TRANSACTION']!r}, received {received!r}")
    last_gtid_at = max(i for i, t in enumerate(types) if t == "Gtid")
    return ScenarioResult(
        name="relay_log_ends_inside_transaction", servers=(ch.replica, ch.source),
        gtid_sets={"queueing_transaction": big, "replica.received_transaction_set": received,
                   "replica.gtid_executed": rep.gtid_executed(), "source.gtid_executed": src.gtid_executed()},
        details={"channel": ch.channel, "relay_log_file": relay_file,
                 "tail_event_types": types[last_gtid_at:], "receiver_running": status["Replica_IO_Running"]})


def repair_relay_log(fleet: Fleet, result: ScenarioResult, timeout: float = 60.0) -> ScenarioResult:
    """Restart the receiver: 9.7 drops the partial group and fetches the transaction again."""
    replica, source = result.servers
    ch = _channel(fleet, replica, result.details["channel"])
    rep = fleet.server(replica)
    rep.execute(f"START REPLICA IO_THREAD FOR CHANNEL '{ch.channel}'")
    fleet.wait_caught_up(timeout=timeout, channels=[ch])
    status = channel_status(rep, ch.channel)
    return ScenarioResult(name=result.name + "_repaired", servers=result.servers,
                          gtid_sets={"replica.received_transaction_set": status["RECEIVED_TRANSACTION_SET"],
                                     "replica.gtid_executed": rep.gtid_executed()},
                          details={"channel": ch.channel, "queueing_transaction": status["QUEUEING_TRANSACTION"]})


# ---------------------------------------------------------------------------------------------
# shapes of the standard topology, described by the servers

def multi_source(fleet: Fleet, replica: str = "billing-r1") -> ScenarioResult:
    """A replica with several named channels: each channel's received set and source set."""
    rep = fleet.server(replica)
    channels = [c for c in fleet.topology.channels if c.replica == replica]
    if len(channels) < 2:
        raise ScenarioError(f"{replica!r} has {len(channels)} channel(s); a multi-source replica needs two")
    sets = {"replica.gtid_executed": rep.gtid_executed()}
    details: dict[str, Any] = {"channels": {}}
    for ch in channels:
        source_set = fleet.server(ch.source).gtid_executed()
        sets[f"received[{ch.channel}]"] = channel_status(rep, ch.channel)["RECEIVED_TRANSACTION_SET"]
        sets[f"source[{ch.channel}].gtid_executed"] = source_set
        details["channels"][ch.channel] = {"source": ch.source, "source_uuid": fleet.server(ch.source).server_uuid,
                                           "caught_up": _has_all(rep, source_set)}
    return ScenarioResult(name="multi_source", servers=(replica, *[c.source for c in channels]),
                          gtid_sets=sets, details=details)


def chain(fleet: Fleet, tail: str = "orders-r3") -> ScenarioResult:
    """A replica of a replica: the path from ``tail`` up to its top source, with each set."""
    path = [tail]
    while True:
        ups = [c.source for c in fleet.topology.channels if c.replica == path[-1]]
        if not ups or ups[0] in path:
            break
        path.append(ups[0])
    if len(path) < 3:
        raise ScenarioError(f"{tail!r} is not at the end of a chain (path {path!r})")
    sets = {f"{name}.gtid_executed": fleet.server(name).gtid_executed() for name in path}
    return ScenarioResult(name="chain", servers=tuple(path), gtid_sets=sets,
                          details={"path": path, "top_source_uuid": fleet.server(path[-1]).server_uuid})


# ---------------------------------------------------------------------------------------------
# servers the auditor must cope with

def gtid_off_server(fleet: Fleet, name: str = "legacy", *, cluster: str = "legacy",
                    transactions: int = 2) -> ScenarioResult:
    """Add a standalone server with gtid_mode=OFF and write anonymous transactions on it."""
    server = fleet.add_server({"name": name, "cluster": cluster, "gtid_mode": "OFF"})
    server.execute("CREATE DATABASE IF NOT EXISTS legacy_app",
                   "CREATE TABLE IF NOT EXISTS legacy_app.t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)",
                   *[f"INSERT INTO legacy_app.t (v) VALUES ({i})" for i in range(transactions)])
    mode = server.query_value("SELECT @@GLOBAL.gtid_mode")
    types = {e["Event_type"] for e in server.query("SHOW BINLOG EVENTS")}
    return ScenarioResult(name="gtid_off_server", servers=(name,),
                          gtid_sets={"gtid_executed": server.gtid_executed(),
                                     "gtid_purged": server.query_value("SELECT @@GLOBAL.gtid_purged")},
                          details={"gtid_mode": mode, "binlog_event_types": sorted(types)})


def refused_address(name: str = "unreachable", cluster: str = "orders") -> ScenarioResult:
    """A config entry whose address refuses connections (a free loopback port nobody listens on)."""
    port = free_port()
    with socket.socket() as sock:
        sock.settimeout(2)
        refused = sock.connect_ex((HOST, port))
    if refused == 0:
        raise ScenarioError(f"port {port} unexpectedly accepts connections")
    return ScenarioResult(name="refused_address", servers=(name,), gtid_sets={},
                          details={"port": port, "connect_errno": refused},
                          config_servers=({"name": name, "host": HOST, "port": port, "cluster": cluster},))


def wrong_password(fleet: Fleet, server: str, name: str | None = None) -> ScenarioResult:
    """A config entry for ``server`` whose ``password_file`` holds a wrong password (1045)."""
    target = fleet.server(server)
    name = name or f"{server}-wrong-password"
    path = fleet.workdir / f"{name}.password"
    _write_private(path, "not-the-audit-password\n")
    try:
        target.connect(user="audit", password="not-the-audit-password").close()
    except mysql.connector.Error as exc:
        errno = exc.errno
    else:
        raise ScenarioError(f"{server!r} accepted the wrong password")
    return ScenarioResult(name="wrong_password", servers=(name,), gtid_sets={},
                          details={"server": server, "errno": errno, "password_file": str(path)},
                          config_servers=({"name": name, "host": target.host, "port": target.port,
                                           "cluster": fleet.cluster_of(server), "password_file": str(path)},))


class ContinuousWriter:
    """Keep committing small transactions on a source until :meth:`stop` (a daemon thread)."""

    def __init__(self, server: SandboxServer, interval: float = 0.02):
        self.server = server
        self.interval = interval
        self.count = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        _write(server, 0, table="flow")
        self.before = server.gtid_executed()
        self._thread = threading.Thread(target=self._run, name=f"writer-{server.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with contextlib.closing(self.server.connect()) as conn:
                cur = conn.cursor()
                while not self._stop.is_set():
                    cur.execute(f"INSERT INTO {DB}.flow (note) VALUES ('flowing')")
                    self.count += 1
                    self._stop.wait(self.interval)
        except BaseException as exc:   # reported by stop()
            self.error = exc

    def stop(self) -> ScenarioResult:
        """Stop writing; the result holds the GTIDs written meanwhile (server-computed)."""
        self._stop.set()
        self._thread.join(timeout=10)
        if self.error is not None:
            raise ScenarioError(f"the writer on {self.server.name!r} failed: {self.error!r}")
        after = self.server.gtid_executed()
        written = self.server.query_value("SELECT GTID_SUBTRACT(%s, %s)", (after, self.before))
        return ScenarioResult(name="continuous_writes", servers=(self.server.name,),
                              gtid_sets={"written": written, "before": self.before, "after": after},
                              details={"transactions": self.count})

    def __enter__(self) -> "ContinuousWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._stop.is_set():
            self.stop()


# ---------------------------------------------------------------------------------------------
# live conditions: replicas that are behind and healthy

def replica_backlog(fleet: Fleet, replica: str, channel: str | None = None,
                    max_events: int = 100_000) -> ScenarioResult:
    """How far ``replica`` is behind on a channel, as the replica itself says.

    ``gtid_sets["received_not_applied"]`` is ``GTID_SUBTRACT(received set, gtid_executed)``
    computed by the replica; ``details["relay_events_after_applier"]`` counts the relay-log
    events from the applier's position (Relay_Log_Pos) to the end of its relay log file, up to
    ``max_events``; plus the thread states and SQL_Delay of SHOW REPLICA STATUS.
    """
    ch = _channel(fleet, replica, channel)
    rep = fleet.server(replica)
    status = channel_status(rep, ch.channel)
    received = status["RECEIVED_TRANSACTION_SET"]
    behind = rep.query_value("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (received,))
    rows = rep.query(f"SHOW RELAYLOG EVENTS IN %s FROM {int(status['Relay_Log_Pos'])} "
                     f"LIMIT {int(max_events)} FOR CHANNEL %s", (status["Relay_Log_File"], ch.channel))
    return ScenarioResult(
        name="replica_backlog", servers=(ch.replica, ch.source),
        gtid_sets={"received_not_applied": behind, "replica.received_transaction_set": received,
                   "replica.gtid_executed": rep.gtid_executed()},
        details={"channel": ch.channel, "relay_log_file": status["Relay_Log_File"],
                 "relay_log_pos": status["Relay_Log_Pos"], "relay_events_after_applier": len(rows),
                 "event_types_after_applier": [r["Event_type"] for r in rows],
                 "sql_delay": status["SQL_Delay"], "io_running": status["Replica_IO_Running"],
                 "sql_running": status["Replica_SQL_Running"],
                 "sql_state": status["Replica_SQL_Running_State"]})


def delayed_replica(fleet: Fleet, replica: str, *, delay_s: int = 300, channel: str | None = None) -> ScenarioResult:
    """Make ``replica`` a delayed replica: ``CHANGE REPLICATION SOURCE TO SOURCE_DELAY = delay_s``.

    Only the applier is stopped for the change (the receiver keeps running, the relay logs are
    kept): from now on each transaction is applied ``delay_s`` seconds after its source
    committed it. Both threads run; the relay log fills with everything of the last
    ``delay_s`` seconds. A healthy state, kept on purpose (a protection against a bad DROP).
    """
    ch = _channel(fleet, replica, channel)
    rep = fleet.server(replica)
    for_channel = f"FOR CHANNEL '{ch.channel}'"
    rep.execute(f"STOP REPLICA SQL_THREAD {for_channel}",
                f"CHANGE REPLICATION SOURCE TO SOURCE_DELAY = {int(delay_s)} {for_channel}",
                f"START REPLICA SQL_THREAD {for_channel}")
    status = channel_status(rep, ch.channel)
    if int(status["SQL_Delay"]) != int(delay_s) or status["Replica_SQL_Running"] != "Yes" \
            or status["Replica_IO_Running"] != "Yes":
        raise ScenarioError(f"{replica!r} is not a running delayed replica: SQL_Delay {status['SQL_Delay']!r}, "
                            f"threads {status['Replica_IO_Running']!r}/{status['Replica_SQL_Running']!r}")
    return ScenarioResult(name="delayed_replica", servers=(ch.replica, ch.source),
                          gtid_sets={"replica.gtid_executed": rep.gtid_executed(),
                                     "replica.received_transaction_set": status["RECEIVED_TRANSACTION_SET"]},
                          details={"channel": ch.channel, "sql_delay": int(status["SQL_Delay"])})


def undelay_replica(fleet: Fleet, result: ScenarioResult, timeout: float = 60.0) -> ScenarioResult:
    """SOURCE_DELAY back to 0; waits until the replica caught up."""
    replica = result.servers[0]
    ch = _channel(fleet, replica, result.details["channel"])
    fleet.server(replica).execute(f"STOP REPLICA SQL_THREAD FOR CHANNEL '{ch.channel}'",
                                  f"CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0 FOR CHANNEL '{ch.channel}'",
                                  f"START REPLICA SQL_THREAD FOR CHANNEL '{ch.channel}'")
    fleet.wait_caught_up(timeout=timeout, channels=[ch])
    return ScenarioResult(name=result.name + "_repaired", servers=result.servers,
                          gtid_sets={"replica.gtid_executed": fleet.server(replica).gtid_executed()},
                          details={"channel": ch.channel, "sql_delay": 0})


def add_delayed_replica(fleet: Fleet, name: str, source: str, *, delay_s: int = 300,
                        cluster: str | None = None, channel: str = "") -> ScenarioResult:
    """Start one more server, ``name``, replicating from ``source`` with ``SOURCE_DELAY = delay_s``.

    The delay is set before the channel first starts, so even the source's existing history is
    applied only ``delay_s`` seconds after the source committed it: the new replica receives
    everything at once and applies nothing for a while. The fleet's topology (and saved state)
    gain the server and the channel, so ``Fleet.down`` stops it in the right order.
    """
    fleet.add_server({"name": name, "cluster": cluster or fleet.cluster_of(source)})
    data = fleet.topology.model_dump(by_alias=True, mode="json")
    data["channels"].append({"replica": name, "source": source, "channel": channel})
    fleet.topology = type(fleet.topology).load(data)
    fleet.save()
    ch = _channel(fleet, name, channel)
    fleet.attach_channel(ch, start=False)
    rep = fleet.server(name)
    rep.execute(f"CHANGE REPLICATION SOURCE TO SOURCE_DELAY = {int(delay_s)} FOR CHANNEL '{channel}'",
                f"START REPLICA FOR CHANNEL '{channel}'")
    source_executed = fleet.server(source).gtid_executed()
    _wait_received(rep, channel, source_executed)
    result = delayed_replica(fleet, name, delay_s=delay_s, channel=channel)
    return dataclasses.replace(result, name="add_delayed_replica")


def lagging_replica(fleet: Fleet, replica: str, table: str, *, seconds: float = 120.0):
    """A long reader on ``replica`` holds ``LOCK TABLES table READ`` for at most ``seconds``.

    The applier waits for the lock while the receiver keeps filling the relay log: a replica
    that falls behind with both threads running, the most common lag there is. Returns the
    acquired :class:`~jobs.sandbox.load.HeldTableLock` (a context manager; ``release()`` ends it).
    """
    from jobs.sandbox.load import HeldTableLock

    return HeldTableLock(fleet.server(replica), table, seconds=seconds).acquire()


# ---------------------------------------------------------------------------------------------
# the demo's faults on the standard topology

def inject_demo_faults(fleet: Fleet) -> list[ScenarioResult]:
    """The faults `gtid-audit sandbox up --faults` (and the demo) put on the standard fleet.

    orders-r2 gets an untagged errant transaction, billing-r1 a tagged one; orders-r3 is left
    stopped while its source orders-r1 purges what it still needs; billing-r1's ``orders``
    channel ends inside a transaction; a standalone server ``legacy`` runs with gtid_mode=OFF;
    plus an address that refuses connections and a running server (``billing-archive``) whose
    config entry has a wrong password.
    """
    fleet.add_server({"name": "billing-archive", "cluster": "billing"})
    return [
        errant_transaction(fleet, "orders-r2"),
        errant_transaction(fleet, "billing-r1", tag="hotfix", channel="billing"),
        purged_binary_logs(fleet, "orders-r3"),
        relay_log_ends_inside_transaction(fleet, "billing-r1", channel="orders"),
        gtid_off_server(fleet, "legacy", cluster="legacy"),
        refused_address("orders-ghost", cluster="orders"),
        # the config entry of a real, running server carries a wrong password: it replaces the
        # server's own entry (a server listed twice under two names would be a config error)
        wrong_password(fleet, "billing-archive", name="billing-archive"),
    ]


def extra_config_servers(results: list[ScenarioResult]) -> list[dict[str, Any]]:
    """The extra auditor-config entries the results ask for, in order."""
    return [dict(entry) for r in results for entry in r.config_servers]

