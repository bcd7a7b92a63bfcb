"""Failover scenarios: states that make a replica unsafe to promote, and a real promotion.

Each injector drives a running :class:`~jobs.sandbox.fleet.Fleet` (a source with a few replicas)
into one state the failover model (:mod:`gtid_core.failover`) must judge, and returns a
:class:`~jobs.sandbox.scenarios.ScenarioResult` whose GTID sets the servers computed themselves
(``@@GLOBAL`` variables, ``GTID_SUBTRACT``). :func:`promote` then really fails over: it promotes
one replica and repoints the others (and the old source) to it with ``SOURCE_AUTO_POSITION=1``,
and reports what each sibling received, kept that the new source lacks, or was refused, as the
servers report it. A test compares that with what the model predicted before the promotion.

==============================================  ==============================================
``lagging_replica``                             receiver stopped, writes on the source
``applier_stopped``                             applier stopped, writes on the source (retrieved,
                                                not applied: safe after catch-up)
``errant_in_binary_logs``                       a write on a replica (salvageable errant GTID)
``errant_purged``                               the same, then the replica purges its binary logs
``replica_without_log_replica_updates``         a sibling lags behind a log_replica_updates=OFF
                                                replica (topology option on that replica)
``cloned_server_uuid``                          a replica's datadir copied with auto.cnf kept,
                                                started as one more replica of the same source
``write_received_by``                           writes on a source, once the named replicas have
                                                received them (between two reads of a model)
==============================================  ==============================================
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
from typing import Any, Callable, Mapping, Sequence

from jobs.sandbox.accounts import REPL_USER
from jobs.sandbox.errors import ScenarioError
from jobs.sandbox.fleet import Fleet, Topology
from jobs.sandbox.scenarios import (
    ScenarioResult,
    _channel,
    _wait,
    _wait_has,
    _wait_received,
    _write,
    channel_status,
    errant_transaction,
)
from jobs.sandbox.server import HOST, SandboxServer

__all__ = [
    "PromotionResult", "SiblingAfterPromotion",
    "lagging_replica", "applier_stopped", "errant_in_binary_logs", "errant_purged",
    "replica_without_log_replica_updates", "cloned_server_uuid", "write_received_by", "wait_received", "wait_applied", "promote",
    "read_snapshots", "build_model",
]


def _subtract(server: SandboxServer, a: str, b: str) -> str:
    return server.query_value("SELECT GTID_SUBTRACT(%s, %s)", (a, b))


def _stop_receiver_and_write(fleet: Fleet, source: str, replica: str, transactions: int,
                             timeout: float) -> str:
    """Stop ``replica``'s receiver, write on ``source``, wait until the other running replicas of
    ``source`` have it; return the GTIDs written (server text)."""
    src = fleet.server(source)
    ch = _channel(fleet, replica)
    fleet.server(replica).execute(f"STOP REPLICA IO_THREAD FOR CHANNEL '{ch.channel}'")
    before = src.gtid_executed()
    _write(src, transactions)
    written = src.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (before,))
    others = [c for c in fleet.topology.channels if c.source == source and c.replica != replica
              and channel_status(fleet.server(c.replica), c.channel)["SERVICE_STATE"] == "ON"]
    fleet.wait_caught_up(timeout=timeout, channels=others)
    return written


def lagging_replica(fleet: Fleet, replica: str, *, transactions: int = 3, timeout: float = 60.0) -> ScenarioResult:
    """Stop ``replica``'s receiver and write ``transactions`` rows on its source: its siblings and
    the source have GTIDs the lagging replica neither executed nor retrieved (``missing``)."""
    ch = _channel(fleet, replica)
    rep, src = fleet.server(replica), fleet.server(ch.source)
    written = _stop_receiver_and_write(fleet, ch.source, replica, transactions, timeout)
    missing = _subtract(src, src.gtid_executed(), rep.gtid_executed())
    if not missing:
        raise ScenarioError(f"{replica!r} is not behind {ch.source!r}")
    status = channel_status(rep, ch.channel)
    return ScenarioResult(
        name="lagging_replica", servers=(replica, ch.source),
        gtid_sets={"missing": missing, "written": written, "source.gtid_executed": src.gtid_executed(),
                   "replica.gtid_executed": rep.gtid_executed(),
                   "replica.received_transaction_set": status["RECEIVED_TRANSACTION_SET"]},
        details={"channel": ch.channel, "receiver_running": status["Replica_IO_Running"]})


def applier_stopped(fleet: Fleet, replica: str, *, transactions: int = 3, timeout: float = 60.0) -> ScenarioResult:
    """Stop ``replica``'s applier and write on its source: the replica has retrieved the
    transactions (``pending``) but not applied them; its siblings have applied them."""
    ch = _channel(fleet, replica)
    rep, src = fleet.server(replica), fleet.server(ch.source)
    rep.execute(f"STOP REPLICA SQL_THREAD FOR CHANNEL '{ch.channel}'")
    before = src.gtid_executed()
    _write(src, transactions)
    written = src.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (before,))
    _wait_received(rep, ch.channel, written, timeout)
    fleet.wait_caught_up(timeout=timeout, channels=[c for c in fleet.topology.channels
                                                    if c.source == ch.source and c.replica != replica])
    pending = _subtract(rep, channel_status(rep, ch.channel)["RECEIVED_TRANSACTION_SET"], rep.gtid_executed())
    if not pending:
        raise ScenarioError(f"{replica!r} has applied everything it received")
    return ScenarioResult(name="applier_stopped", servers=(replica, ch.source),
                          gtid_sets={"pending": pending, "written": written},
                          details={"channel": ch.channel})


def errant_in_binary_logs(fleet: Fleet, replica: str) -> ScenarioResult:
    """A transaction committed directly on ``replica``: errant, still in its binary log."""
    result = errant_transaction(fleet, replica)
    rep = fleet.server(replica)
    purged = rep.query_value("SELECT @@GLOBAL.gtid_purged")
    still_logged = _subtract(rep, result.gtid_sets["errant"], purged)
    if still_logged != result.gtid_sets["errant"]:
        raise ScenarioError(f"errant GTIDs of {replica!r} are already purged ({purged!r})")
    return dataclasses.replace(result, name="errant_in_binary_logs",
                               gtid_sets={**result.gtid_sets, "replica.gtid_purged": purged})


def _purge_binary_logs(server: SandboxServer) -> tuple[str, str]:
    """FLUSH BINARY LOGS, then PURGE BINARY LOGS TO the new file: (that file, gtid_purged after)."""
    server.execute("FLUSH BINARY LOGS")
    current = server.query("SHOW BINARY LOG STATUS")[0]["File"]
    server.execute(f"PURGE BINARY LOGS TO '{current}'")
    return current, server.query_value("SELECT @@GLOBAL.gtid_purged")


def errant_purged(fleet: Fleet, replica: str) -> ScenarioResult:
    """An errant transaction on ``replica``, then FLUSH + PURGE BINARY LOGS on it: the errant GTID
    is in its gtid_purged only (a 'lost' errant transaction)."""
    result = errant_transaction(fleet, replica)
    rep = fleet.server(replica)
    current, purged = _purge_binary_logs(rep)
    if _subtract(rep, result.gtid_sets["errant"], purged):
        raise ScenarioError(f"errant GTIDs of {replica!r} are not all purged ({purged!r})")
    return dataclasses.replace(result, name="errant_purged",
                               gtid_sets={**result.gtid_sets, "replica.gtid_purged": purged},
                               details={**result.details, "purged_to": current})


def relay_log_the_candidate_purged(fleet: Fleet, candidate: str, behind: str, *, transactions: int = 3,
                                    timeout: float = 60.0) -> ScenarioResult:
    """``behind``'s applier stopped while its source writes (it holds the transactions in its relay
    log only), then FLUSH + PURGE BINARY LOGS on ``candidate``, which applied them: promoted,
    ``candidate`` can no longer send them, and ``behind`` repointed as it is lacks them
    (``pending``, all in ``candidate``'s gtid_purged)."""
    result = applier_stopped(fleet, behind, transactions=transactions, timeout=timeout)
    rep = fleet.server(candidate)
    _, purged = _purge_binary_logs(rep)
    if _subtract(rep, result.gtid_sets["pending"], purged):
        raise ScenarioError(f"{candidate!r} has not purged {result.gtid_sets['pending']!r} ({purged!r})")
    return dataclasses.replace(result, name="relay_log_the_candidate_purged", servers=(candidate, behind),
                               gtid_sets={**result.gtid_sets, "candidate.gtid_purged": purged})


def write_received_by(fleet: Fleet, source: str, replicas: Sequence[str], *, transactions: int = 2,
                      timeout: float = 60.0) -> str:
    """Write ``transactions`` on ``source`` and return their GTIDs once every one of ``replicas``
    has received them (its channel from ``source``): what a busy source commits between the reads
    of two siblings, the second of which already holds it."""
    src = fleet.server(source)
    before = src.gtid_executed()
    _write(src, transactions)
    written = src.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (before,))
    for name in replicas:
        wait_received(fleet, name, source, written, timeout=timeout)
    return written


def wait_applied(fleet: Fleet, server: str, gtids: str, *, timeout: float = 60.0) -> None:
    """Wait until ``server``'s gtid_executed holds ``gtids`` (the check a failover step gives)."""
    _wait_has(fleet.server(server), gtids, timeout)


def wait_received(fleet: Fleet, replica: str, source: str, gtids: str, *, timeout: float = 60.0) -> None:
    """Wait until ``replica``'s channel from ``source`` has received ``gtids``."""
    (ch,) = [c for c in fleet.topology.channels if c.replica == replica and c.source == source]
    _wait_received(fleet.server(replica), ch.channel, gtids, timeout)


def replica_without_log_replica_updates(fleet: Fleet, replica: str, lagging_sibling: str, *,
                                        transactions: int = 3, timeout: float = 60.0) -> ScenarioResult:
    """``replica`` runs with log_replica_updates=OFF (a topology option); ``lagging_sibling``'s
    receiver is stopped while the source writes. The server adds what ``replica`` applied without
    logging it to its gtid_purged: its binary log cannot serve the sibling."""
    rep = fleet.server(replica)
    if rep.query_value("SELECT @@GLOBAL.log_replica_updates") != 0:
        raise ScenarioError(f"{replica!r} runs with log_replica_updates=ON; start it with --log-replica-updates=OFF")
    ch = _channel(fleet, replica)
    _stop_receiver_and_write(fleet, ch.source, lagging_sibling, transactions, timeout)
    purged = rep.query_value("SELECT @@GLOBAL.gtid_purged")
    sibling_lacks = _subtract(rep, purged, fleet.server(lagging_sibling).gtid_executed())
    if not sibling_lacks:
        raise ScenarioError(f"{lagging_sibling!r} lacks nothing of {replica!r}'s gtid_purged {purged!r}")
    return ScenarioResult(
        name="replica_without_log_replica_updates", servers=(replica, ch.source, lagging_sibling),
        gtid_sets={"replica.gtid_purged": purged, "replica.gtid_executed": rep.gtid_executed(),
                   "sibling_lacks": sibling_lacks},
        details={"log_replica_updates": 0})


def cloned_server_uuid(fleet: Fleet, replica: str, clone: str, *, timeout: float = 60.0) -> ScenarioResult:
    """Copy ``replica``'s stopped datadir, auto.cnf included, into a new server ``clone`` (its own
    server_id and port) and start both: two replicas of one source with the same server_uuid.

    The clone keeps the replica's channel. The source's dump thread kicks off the older connection of
    two replicas with the same server_uuid; the kicked replica stops with 13114 ('A replica with the
    same server_uuid/server_id as this replica has connected to the source'). ``details['kicked']``
    names it, as the servers report it.
    """
    ch = _channel(fleet, replica)
    rep = fleet.server(replica)
    data = fleet.topology.model_dump(by_alias=True, mode="json")
    data["servers"].append({"name": clone})
    data["channels"].append({"replica": clone, "source": ch.source, "channel": ch.channel})
    topology = Topology.load(data)
    rep.stop()
    server_id = max(s.server_id for s in fleet.servers.values()) + 1
    copy = SandboxServer(fleet.dist, clone, fleet.workdir / "servers" / clone, server_id)
    copy.dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(rep.datadir, copy.datadir, symlinks=True)
    fleet.servers[clone] = copy
    fleet.topology = topology
    rep.start()
    copy.start()
    fleet.save()
    if copy.server_uuid != rep.server_uuid:
        raise ScenarioError(f"clone {clone!r} has server_uuid {copy.server_uuid!r}, not {rep.server_uuid!r}")

    def kicked() -> str | None:
        for name in (replica, clone):
            status = channel_status(fleet.server(name), ch.channel)
            if status["Last_IO_Errno"] and "same server_uuid" in status["Last_IO_Error"]:
                return name
        return None

    victim = _wait(kicked, f"the source to kick one of {replica!r} / {clone!r}", timeout)
    status = channel_status(fleet.server(victim), ch.channel)
    return ScenarioResult(
        name="cloned_server_uuid", servers=(replica, clone, ch.source),
        gtid_sets={f"{n}.gtid_executed": fleet.server(n).gtid_executed() for n in (replica, clone, ch.source)},
        details={"server_uuid": rep.server_uuid, "kicked": victim, "last_io_errno": status["Last_IO_Errno"],
                 "last_io_error": status["Last_IO_Error"], "channel": ch.channel})


# ---------------------------------------------------------------------------------------------
# live snapshots -> model (the only place that converts; the audit job's converters may move)

def read_snapshots(fleet: Fleet, names: Sequence[str], *, after_read: Callable[[str], Any] | None = None
                   ) -> dict[str, tuple[Any, list[Any]]]:
    """Read ``names`` in order with the collector; {name: (ServerSnapshot, [ChannelSnapshot])}.
    ``after_read(name)`` runs after each read (what happens on the fleet between two reads)."""
    from jobs.audit_tasks import channel_snapshot, server_snapshot
    from jobs.collector import read_server, RunContext
    from jobs.server_spec import ServerSpec
    from jobs.config import CollectionSettings

    ctx = RunContext(run_id="failover", run_date=dt.date(2026, 11, 23), settings=CollectionSettings().read_settings())
    out = {}
    for name in names:
        server = fleet.server(name)
        spec = ServerSpec(name=name, host=server.host, port=server.port, user="audit",
                          password_file=str(fleet.audit_password_file), connect_timeout_s=5, read_timeout_s=10)
        result = read_server(spec, ctx)
        if result.errors:
            raise ScenarioError(f"the collector could not read {name!r}: {result.errors!r}")
        snap = server_snapshot({**result.server, "binary_logs": result.binary_logs})
        out[name] = (snap, [channel_snapshot(row) for row in result.channels])
        if after_read is not None:
            after_read(name)
    return out


def build_model(fleet: Fleet, source: str, replicas: Sequence[str], *, other_sources: Sequence[str] = (),
                after_read: Callable[[str], Any] | None = None):
    """The failover model of ``source``: its replicas read first, then ``other_sources`` (the
    sources of the replicas' other channels), the source last. A replica's other channels become
    its ``other_channels_gtids`` as the audit job builds them (``_other_channels_gtids``: each
    other channel's Retrieved_Gtid_Set and its source's gtid_executed, when that source was read
    after the replica). ``after_read`` as for :func:`read_snapshots`. Returns (model, {name:
    (ServerSnapshot, [ChannelSnapshot])})."""
    from gtid_core.failover import FailoverReplica, model_failover
    from jobs.audit_tasks import _other_channels_gtids

    order = [*replicas, *other_sources, source]
    snaps = read_snapshots(fleet, order, after_read=after_read)
    by_port = {fleet.server(name).port: name for name in order}
    port = fleet.server(source).port
    members = []
    for name in replicas:
        server, channels = snaps[name]
        (channel,) = [c for c in channels if c.source_port == port]
        every = []
        for c in channels:
            src = by_port.get(c.source_port)
            src_exec = snaps[src][0].gtid_executed if src and order.index(src) > order.index(name) else None
            every.append({"channel_name": c.channel_name,
                          "retrieved_gtid_set": _text(c.retrieved_gtid_set),
                          "source_gtid_executed": _text(src_exec)})
        members.append(FailoverReplica(server, channel,
                                       other_channels_gtids=_other_channels_gtids({"all_channels": every},
                                                                                  channel.channel_name)))
    return model_failover(snaps[source][0], members), snaps


def _text(gtids: Any) -> str | None:
    return None if gtids is None else gtids.to_text(multiline=False)


# ---------------------------------------------------------------------------------------------
# the promotion itself

@dataclasses.dataclass(frozen=True)
class SiblingAfterPromotion:
    """What one sibling did once repointed to the new source, as the servers report it."""

    name: str
    last_io_errno: int
    last_io_error: str
    io_running: str
    received: str          # GTID_SUBTRACT(sibling after, sibling before): what it got from the new source
    kept: str              # GTID_SUBTRACT(sibling, new source): what it has and the new source lacks
    lacks: str             # GTID_SUBTRACT(new source, sibling): what it did not get

    @property
    def refused(self) -> bool:
        return self.last_io_errno != 0


@dataclasses.dataclass(frozen=True)
class PromotionResult:
    candidate: str
    candidate_gtid_executed: str
    siblings: Mapping[str, SiblingAfterPromotion]


def _apply_relay_log(fleet: Fleet, name: str, timeout: float) -> None:
    """Have ``name``'s appliers apply its relay logs: STOP REPLICA IO_THREAD, START REPLICA
    SQL_THREAD, then wait (bounded) until what each channel received is in gtid_executed."""
    server = fleet.server(name)
    for ch in [c for c in fleet.topology.channels if c.replica == name]:
        status = channel_status(server, ch.channel)
        server.execute(f"STOP REPLICA IO_THREAD FOR CHANNEL '{ch.channel}'",
                       f"START REPLICA SQL_THREAD FOR CHANNEL '{ch.channel}'")
        received = status["RECEIVED_TRANSACTION_SET"]
        _wait_has(server, received, timeout)


def promote(fleet: Fleet, candidate: str, siblings: Sequence[str], *, drained: Sequence[str] = (),
            timeout: float = 60.0) -> PromotionResult:
    """Fail over to ``candidate`` the way a careful DBA does, and report each sibling's fate.

    On the candidate: STOP REPLICA IO_THREAD, let the applier finish the relay log (bounded wait),
    STOP REPLICA, RESET REPLICA ALL. Each sibling in ``drained`` first applies its relay log the
    same way (what the advice says for a sibling that holds there what the candidate purged). On
    each sibling (other replicas, and the old source if listed): STOP REPLICA, CHANGE REPLICATION
    SOURCE TO the candidate with SOURCE_AUTO_POSITION=1, START REPLICA; then wait until it either
    reports a receiver error or has the candidate's whole gtid_executed (GTID_SUBSET computed by
    the sibling). Every value returned is the servers'.
    """
    new = fleet.server(candidate)
    _apply_relay_log(fleet, candidate, timeout)
    new.execute("STOP REPLICA", "RESET REPLICA ALL")
    for name in drained:
        _apply_relay_log(fleet, name, timeout)
    before = {name: fleet.server(name).gtid_executed() for name in siblings}
    for name in siblings:
        t = fleet.server(name)
        t.execute("STOP REPLICA")
        for ch in [c for c in fleet.topology.channels if c.replica == name and c.channel]:
            t.execute(f"RESET REPLICA ALL FOR CHANNEL '{ch.channel}'")
        t.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{HOST}', SOURCE_PORT={new.port}, SOURCE_USER='{REPL_USER}', "
            f"SOURCE_PASSWORD='{fleet.passwords[REPL_USER]}', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, "
            "SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=10 FOR CHANNEL ''",
            "START REPLICA FOR CHANNEL ''")
    data = fleet.topology.model_dump(by_alias=True, mode="json")
    data["channels"] = [c for c in data["channels"] if c["replica"] != candidate and c["replica"] not in siblings]
    data["channels"] += [{"replica": name, "source": candidate, "channel": ""} for name in siblings]
    fleet.topology = Topology.load(data)
    fleet.save()
    target = new.gtid_executed()

    def settled(name: str) -> dict[str, Any] | None:
        t = fleet.server(name)
        status = channel_status(t, "")
        if status["Last_IO_Errno"]:
            return status
        if t.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (target,)) and \
                status["Replica_SQL_Running"] == "Yes" and status["SERVICE_STATE"] == "ON":
            return status
        if status["Last_SQL_Errno"]:
            return status
        return None

    out: dict[str, SiblingAfterPromotion] = {}
    for name in siblings:
        status = _wait(lambda: settled(name), f"{name!r} to settle after promoting {candidate!r}", timeout)
        t = fleet.server(name)
        after = t.gtid_executed()
        out[name] = SiblingAfterPromotion(
            name=name, last_io_errno=int(status["Last_IO_Errno"] or 0), last_io_error=status["Last_IO_Error"] or "",
            io_running=status["Replica_IO_Running"], received=_subtract(t, after, before[name]),
            kept=_subtract(t, after, target), lacks=_subtract(t, target, after))
    return PromotionResult(candidate=candidate, candidate_gtid_executed=target, siblings=out)
