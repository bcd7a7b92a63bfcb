"""Differential test of the failover model (:mod:`gtid_core.failover`) against real promotions.

In the spirit of the GTID-set oracle: a seed draws a small fleet and a mix of faults, real MySQL
servers are driven into that state, the audit's collector reads them (replicas first, the source
last), the model predicts what promoting one candidate does to every sibling, then the candidate
is really promoted and every prediction is compared with what the servers did. Every observed set
is computed by a server (``GTID_SUBTRACT``, ``GTID_SUBSET``, the set quoted in an error), and so is
every comparison; nothing is recomputed from the model's own input.

**A trial** (:func:`generate_trial`, deterministic from its seed): a source ``s`` with 2-4 replicas
``r1..r4`` and, when it fits in the pool, a chain (``c1`` replicates from a replica; it is *not* a
sibling: it is not a replica of ``s``, it is neither repointed nor compared), a second source
``x`` feeding one replica on channel ``x`` (multi-source), and a cycle (``s`` replicates from one of
its replicas). Replicas may run with ``log_replica_updates=OFF`` or without a binary log. Faults,
per replica: receiver stopped while ``s`` writes (lag), applier stopped, applier stopped on an
error (a row written on the replica, logged or not, that ``s`` then writes too: 1062), errant
transactions (kept in the binary log or purged), ``SOURCE_DELAY`` with a backlog, two replicas with
one server_id; on ``s``: binary logs purged while a receiver is stopped (then, maybe, that receiver
restarted so it fails with 13114). Writes are a few rows. Not drawn: a delay on a replica with a
conflicting row (its applier would meet the conflict only after the read: rows, not GTIDs, so no
GTID model can see it), a delay on a stopped receiver (no backlog), a chain below a replica
without ``log_replica_updates``, a cycle through a ``log_replica_updates=OFF`` replica that has a
second channel (``s`` could never catch up).

**The promotion** (:func:`promote_candidate`; the model predicts exactly this):

1. Quiesce (:func:`quiesce`): writes have stopped; wait until every running receiver has
   retrieved its source's whole gtid_executed and every running, undelayed, error-free applier
   has applied what its receiver retrieved (so nothing is in flight and no relay backlog is
   a matter of timing).
2. Read the fleet with the collector (replicas of ``s``, the other-channel source, ``s`` last) and
   build the model (:func:`jobs.sandbox.failover_scenarios.build_model`).
3. On candidate R: a delayed candidate first gets ``SOURCE_DELAY=0`` (a DBA does not wait an
   hour to promote) with ``STOP REPLICA SQL_THREAD`` only: with both threads stopped, ``CHANGE
   REPLICATION SOURCE TO SOURCE_DELAY=0`` purges the relay logs, and ``RELAY_LOG_FILE`` cannot be
   given with ``SOURCE_AUTO_POSITION`` (both observed on 9.7.4); then ``STOP REPLICA IO_THREAD FOR
   CHANNEL c``; ``START REPLICA SQL_THREAD``; wait
   (bounded) until its relay log is applied or its applier reports an error; ``STOP REPLICA FOR
   CHANNEL c``; ``RESET REPLICA ALL FOR CHANNEL c``. Only ``s``'s channel: a second channel keeps
   running.
4. On each sibling T and on ``s``: ``STOP REPLICA FOR CHANNEL c`` (its channel from ``s``; ``s`` has
   none unless in a cycle, then its channel from the replica, stopped before step 3: ``s`` has
   failed, and nothing reaches it through a sibling repointed before it), ``CHANGE REPLICATION SOURCE TO`` R
   with ``SOURCE_AUTO_POSITION=1`` and ``SOURCE_DELAY=0`` (chosen: a delayed sibling applies at
   once, so what it keeps and receives is read from its gtid_executed, not guessed from the relay
   log; the delay changes when, not what), ``START REPLICA FOR CHANNEL c``. The CHANGE purges T's
   relay logs: T announces only its gtid_executed. A sibling the model marks
   ``needs_relay_log_applied`` (model v3: refused as it is, for transactions it holds in its relay
   log) first applies its relay log, as the advice says: undelayed with its receiver running,
   ``STOP REPLICA IO_THREAD``, ``START REPLICA SQL_THREAD``, wait (bounded).
5. Wait (bounded) until each T settled: a receiver error, or its gtid_executed ∪ received set
   covers R's gtid_executed *and* a heartbeat from R arrived after the START (the dump thread
   passed its checks; a sibling that already has everything would otherwise look settled before
   a refusal arrives).

**Compared, per sibling** (``SiblingOutcome`` of the candidate's ``CandidateAssessment``):

=====================  ===========================================================================
``result``             refused (``SiblingResult.REFUSED``) vs Last_IO_Errno != 0
``refusal``            which error: 13114 'purged required binary logs', 13114 'Binary log is not
                       open', 13117 equal server_uuid / server_id, 'more GTIDs than the source'
``refused_missing``    the set the 13114 error quotes ('the missing transactions are ...')
``lost``               what T keeps that R lacks and ``s`` executed: GTID_SUBTRACT(T after, R after)
                       ∩ ``s`` before (read on T)
``discarded``          (when the model has the field) what T held in its relay log, ``s`` executed,
                       and neither T nor R has after the promotion
``spread``             when both say T streams: what T got that ``s`` never executed vs ``errant`` ∪
                       ``other_channels`` (the latter when the model has the field)
``in_flight``          must be empty: the fleet was quiesced
=====================  ===========================================================================

and per candidate ``promoted``: R's gtid_executed after the promotion vs
``CandidateAssessment.promoted_gtid_executed`` (or executed ∪ pending_relay on a model without it).
Equality is ``GTID_SUBSET`` both ways, computed by the candidate server.

**The pool** (:class:`ServerPool`): a fresh fleet per trial costs ~5 s up and 10-12 s down (a
source waits for its dump threads; measured on tests/sandbox/test_failover_scenarios.py), so six
servers are started once and reset between trials (``STOP REPLICA``, ``RESET REPLICA ALL``,
server_id restored, test databases dropped without logging, ``RESET BINARY LOGS AND GTIDS``:
~0.05 s a server). A role needing other mysqld options (``--log-replica-updates=OFF``,
``--skip-log-bin``) takes a slot already started with them, or a slot is killed and started with
them (~1.5 s; ~3 s with a clean shutdown). Each slot is driven through one persistent connection
without TLS (:class:`PooledServer`): a connection per statement cost ~80 ms, most of it building a
TLS context, and was two thirds of a trial. Durability is relaxed on the pool
(``sync_binlog=0``, ``innodb_flush_log_at_trx_commit=2``): no GTID rule depends on it. Which slot
plays which role depends on the pool's history, so server_uuids differ between runs; the trial
does not.

**What 9.7 cannot show.** Every server runs 9.7.4: the version rules of the reconnect model (no
purge check before 5.6.22, the whole-set check of 5.6, the left-out last retrieved GTID of
5.6.15-5.7.5, ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER only from 5.6.23/5.7.6, replicating to an older
version) are not exercised. ``gtid_mode`` other than ON on a candidate, tagged GTIDs and
``ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS`` are not generated; ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER
needs a candidate that lost GTIDs of its own server_uuid (not generated either).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import re
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import mysql.connector

from jobs.sandbox.accounts import REPL_USER
from jobs.sandbox.errors import ScenarioError, SandboxError
from jobs.sandbox.failover_scenarios import build_model
from jobs.sandbox.fleet import ChannelSpec, Fleet, Topology
from jobs.sandbox.installer import MySQLDist
from jobs.sandbox.scenarios import _wait as scenarios_wait
from jobs.sandbox.scenarios import channel_status
from jobs.sandbox.server import HOST, SandboxServer

__all__ = [
    "Fault", "TrialSpec", "PooledServer", "ServerPool", "OPTION_SETS", "POOL_SIZE",
    "generate_trial", "inject", "quiesce", "promote_candidate", "predictions", "observed_refusal", "compare",
    "run_trial", "trial_line", "summarize", "write_jsonl",
]

#: mysqld options per option set a role may need (the pool's slots are started with one of them).
OPTION_SETS: Mapping[str, tuple[str, ...]] = {
    "default": (),
    "log_replica_updates_off": ("--log-replica-updates=OFF",),
    "no_binary_log": ("--skip-log-bin",),
}
#: Options of every pool server: durability relaxed for speed (no GTID rule depends on it).
#: Durability off (a trial's servers are thrown away), and InnoDB's simulated AIO: the machine's AIO
#: contexts (fs.aio-max-nr) are shared by every server on it, and a pool server restarted while
#: other fleets run failed with "io_setup() failed with EAGAIN" (GTID behaviour is unaffected).
FAST_OPTIONS = ("--sync-binlog=0", "--innodb-flush-log-at-trx-commit=2", "--innodb-use-native-aio=OFF")
POOL_SIZE = 6
DB = "difftest"
DB_X = "difftest_x"
CHANNEL_X = "x"
TIMEOUT = 30.0
SYSTEM_DATABASES = frozenset({"mysql", "information_schema", "performance_schema", "sys"})
MISSING_RE = re.compile(r"the missing transactions are '([^']*)'")

ER_SOURCE_FATAL_ERROR_READING_BINLOG = 13114
ER_REPLICA_FATAL_ERROR = 13117

#: ids written by ``s``: phase 1 (before the faults), 2 (the faults' writes), 3 (after a purge).
PHASE_IDS = {1: 1, 2: 10, 3: 20}
CONFLICT_ID = PHASE_IDS[2]          # the first row ``s`` writes in phase 2


# ---------------------------------------------------------------------------------------------
# the trial, drawn from a seed (pure)

@dataclasses.dataclass(frozen=True)
class Fault:
    """One injected fault: ``kind`` on ``server``, with its parameters."""

    kind: str
    server: str
    params: tuple[tuple[str, Any], ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "server": self.server, **dict(self.params)}


@dataclasses.dataclass(frozen=True)
class TrialSpec:
    """A trial: servers (role, option set), channels (replica, source, channel), faults, the
    candidate, and how many rows ``s`` (phases 1-3) and ``x`` (phases 1-2) write."""

    seed: int
    servers: tuple[tuple[str, str], ...]
    channels: tuple[tuple[str, str, str], ...]
    faults: tuple[Fault, ...]
    candidate: str
    writes: tuple[tuple[str, int], ...]

    @property
    def options(self) -> dict[str, str]:
        return dict(self.servers)

    @property
    def replicas(self) -> list[str]:
        """The source's replicas (the candidates and siblings), in name order."""
        return sorted(r for r, s, _ in self.channels if s == "s")

    @property
    def other_sources(self) -> list[str]:
        """Sources of the replicas' other channels (read after the replicas, before ``s``)."""
        return sorted({s for r, s, _ in self.channels if r in self.replicas and s not in ("s", *self.replicas)})

    def channel_of(self, replica: str, source: str) -> str | None:
        for r, s, c in self.channels:
            if (r, s) == (replica, source):
                return c
        return None

    def faults_of(self, kind: str) -> list[Fault]:
        return [f for f in self.faults if f.kind == kind]

    def write_count(self, what: str) -> int:
        return dict(self.writes).get(what, 0)

    def shape(self) -> list[str]:
        """Topology features for the summary: chain, multi_source, cycle, option sets."""
        out = []
        if any(r == "c1" for r, _, _ in self.channels):
            out.append("chain")
        if any(c == CHANNEL_X for _, _, c in self.channels):
            out.append("multi_source")
        if any(r == "s" for r, _, _ in self.channels):
            out.append("cycle")
        out += sorted({o for _, o in self.servers if o != "default"})
        return out

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "servers": dict(self.servers),
                "channels": [{"replica": r, "source": s, "channel": c} for r, s, c in self.channels],
                "faults": [f.to_json() for f in self.faults], "candidate": self.candidate,
                "writes": dict(self.writes), "shape": self.shape()}


def generate_trial(seed: int, pool_size: int = POOL_SIZE) -> TrialSpec:
    """Draw a trial from ``seed`` (same seed, same trial)."""
    rng = random.Random(seed)
    n = rng.randint(2, 4)
    replicas = [f"r{i}" for i in range(1, n + 1)]
    options = {"s": "default"}
    for r in replicas:
        options[r] = rng.choices(list(OPTION_SETS), weights=[70, 22, 8])[0]
    channels = [(r, "s", "") for r in replicas]
    logging_fully = [r for r in replicas if options[r] == "default"]
    logging = [r for r in replicas if options[r] != "no_binary_log"]
    want_chain, want_multi, want_cycle = rng.random() < 0.25, rng.random() < 0.3, rng.random() < 0.2
    chain_from = rng.choice(logging_fully) if logging_fully else None
    multi_on = rng.choice(replicas)
    cycle_from = rng.choice(logging) if logging else None
    if want_chain and chain_from and len(options) < pool_size:
        options["c1"] = "default"
        channels.append(("c1", chain_from, ""))
    if want_multi and len(options) < pool_size:
        options["x"] = "default"
        channels.append((multi_on, "x", CHANNEL_X))
    # an LRU=OFF server relays nothing it replicated: s would never get x's GTIDs through it
    if want_cycle and cycle_from and not (options[cycle_from] != "default" and any(
            r == cycle_from and src == "x" for r, src, _ in channels)):
        channels.append(("s", cycle_from, ""))
    feeds = {s for _, s, _ in channels}

    faults: list[Fault] = []
    lagging = []
    for r in replicas:
        if options[r] != "no_binary_log" and rng.random() < 0.2:
            faults.append(Fault("errant", r, (("purged", rng.random() < 0.5),)))
        if rng.random() < 0.3:
            faults.append(Fault("receiver_stopped", r))
            lagging.append(r)
        conflict = False
        if rng.random() < 0.15:
            faults.append(Fault("applier_stopped", r))
        elif rng.random() < 0.15:
            # a logged conflicting row on a replica that feeds s would conflict on s itself
            faults.append(Fault("applier_error", r, (("logged", r not in feeds and rng.random() < 0.5),)))
            conflict = True
        # A delay needs a running receiver to build a backlog; and a delayed applier would meet the
        # conflict only after the read (a latent conflict: rows, not GTIDs, so no model sees it).
        if rng.random() < 0.15 and r not in lagging and not conflict:
            faults.append(Fault("source_delay", r, (("seconds", 3600),)))
    if lagging and rng.random() < 0.4:
        failing = [r for r in lagging if rng.random() < 0.5]
        faults.append(Fault("source_purged", "s", (("restart_receivers", tuple(failing)),)))
    plain = [r for r in replicas if r not in feeds and not any(f.server == r for f in faults if f.kind == "errant")]
    if len(plain) >= 2 and rng.random() < 0.06:
        a, b = rng.sample(plain, 2)
        faults.append(Fault("same_server_id", b, (("as", a),)))
    writes = (("s1", rng.randint(1, 2)), ("s2", rng.randint(1, 3)),
              ("s3", rng.randint(0, 2) if any(f.kind == "source_purged" for f in faults) else 0),
              ("x1", 1 if "x" in options else 0), ("x2", rng.randint(0, 1) if "x" in options else 0))
    candidate = rng.choice(replicas)
    return TrialSpec(seed=seed, servers=tuple(options.items()), channels=tuple(channels), faults=tuple(faults),
                     candidate=candidate, writes=writes)


# ---------------------------------------------------------------------------------------------
# the pool of servers

class PooledServer:
    """A pool server driven through one persistent root connection, TLS off (loopback only).

    Opening a connection per statement, as :class:`SandboxServer` does, costs ~80 ms here, most of
    it building a TLS context (measured: 66 of 100 s of six trials): a trial runs ~150 statements.
    Everything else (port, name, server_id, start/stop) is the wrapped server's. A lost connection
    is dropped and the next statement opens a new one; statements are never retried.
    """

    def __init__(self, server: SandboxServer):
        self.server = server
        self._conn: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)

    def _cursor(self, dictionary: bool = False) -> Any:
        if self._conn is None:
            self._conn = self.server.connect(ssl_disabled=True)
        return self._conn.cursor(dictionary=dictionary)

    def _run(self, fn: Callable[[Any], Any], dictionary: bool = False) -> Any:
        try:
            cur = self._cursor(dictionary)
            try:
                return fn(cur)
            finally:
                cur.close()
        except (mysql.connector.errors.OperationalError, mysql.connector.errors.InterfaceError):
            self.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(mysql.connector.Error, OSError):
                self._conn.close()
            self._conn = None

    def execute(self, *statements: str, **_ignored: Any) -> None:
        def run(cur: Any) -> None:
            for sql in statements:
                cur.execute(sql)
                if cur.with_rows:
                    cur.fetchall()
        self._run(run)

    def query(self, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        def run(cur: Any) -> list[dict[str, Any]]:
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.with_rows else []
        return self._run(run, dictionary=True)

    def query_value(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        def run(cur: Any) -> Any:
            cur.execute(sql, params)
            rows = cur.fetchall() if cur.with_rows else []
            return rows[0][0] if rows else None
        return self._run(run)

    def gtid_executed(self) -> str:
        return self.query_value("SELECT @@GLOBAL.gtid_executed")

    def restart(self, option_set: str | None = None) -> None:
        """Restart the server (with another option set): SIGKILL and start, ~1.5 s instead of
        ~3 s for a clean shutdown; it holds nothing of value (the pool resets it next)."""
        self.close()
        self.server.kill()
        if option_set is not None:
            self.server.options = (*FAST_OPTIONS, *OPTION_SETS[option_set])
        self.server.start()


class ServerPool:
    """``size`` sandbox servers started once, lent to one trial at a time and reset after it."""

    def __init__(self, fleet: Fleet, option_sets: dict[str, str]):
        self.fleet = fleet
        self.option_sets = option_sets          # slot name -> option set it runs with now
        self.slots = {name: PooledServer(server) for name, server in fleet.servers.items()}
        self.restarts = 0

    @classmethod
    def up(cls, workdir: str | Path, dist: MySQLDist | None = None, size: int = POOL_SIZE,
           option_sets: Sequence[str] = ("default",) * 4 + ("log_replica_updates_off", "no_binary_log")
           ) -> "ServerPool":
        """Start ``size`` servers (the first ``len(option_sets)`` with those option sets)."""
        sets = [*option_sets, *(["default"] * size)][:size]
        topology = {"name": "failover-differential",
                    "servers": [{"name": f"p{i + 1}", "options": [*FAST_OPTIONS, *OPTION_SETS[o]]}
                                for i, o in enumerate(sets)]}
        fleet = Fleet.up(topology, workdir, dist=dist)
        return cls(fleet, {f"p{i + 1}": o for i, o in enumerate(sets)})

    def down(self) -> None:
        for slot in self.slots.values():
            slot.close()
        self.fleet.down(graceful=False)

    def __enter__(self) -> "ServerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def lend(self, spec: TrialSpec) -> Fleet:
        """A fleet view of the trial: each role played by a slot started with its option set
        (restarting a slot with other options when none is free)."""
        free = sorted(self.option_sets)
        chosen: dict[str, str] = {}
        roles = list(spec.servers)
        for role, opts in roles:                 # slots that already run the options
            slot = next((s for s in free if self.option_sets[s] == opts), None)
            if slot is not None:
                chosen[role] = slot
                free.remove(slot)
        for role, opts in roles:                 # the rest: restart a free slot
            if role in chosen:
                continue
            slot = free.pop(0)
            self._restart(slot, opts)
            chosen[role] = slot
        topology = Topology.load({
            "name": f"trial-{spec.seed}",
            "servers": [{"name": role, "options": list(OPTION_SETS[opts])} for role, opts in roles],
            "channels": [{"replica": r, "source": s, "channel": c} for r, s, c in spec.channels]})
        return Fleet(topology, self.fleet.workdir, self.fleet.dist,
                     {role: self.slots[chosen[role]] for role, _ in roles}, self.fleet.passwords)

    def _restart(self, slot: str, option_set: str) -> None:
        self.slots[slot].restart(option_set)
        self.option_sets[slot] = option_set
        self.restarts += 1
        self.fleet.save()
        _reset_server(self.slots[slot])

    def reset(self) -> None:
        """Every slot back to an empty, unreplicated server: no channel, no GTID, no test data."""
        servers = list(self.slots.values())
        for server in servers:
            if not server.is_running():
                server.restart()
        for server in servers:                  # every replica stops before any source resets
            server.execute("STOP REPLICA")
        for server in servers:
            _reset_server(server)


def _reset_server(server: PooledServer) -> None:
    """No channel, its own server_id, writable (the read_only a replica's attach persisted is
    undone), no test database (dropped unlogged), no GTID, no binary log."""
    dbs = [row["Database"] for row in server.query("SHOW DATABASES")]
    server.execute("STOP REPLICA", "RESET REPLICA ALL", f"SET GLOBAL server_id = {server.server_id}",
                   "RESET PERSIST IF EXISTS read_only", "SET GLOBAL read_only = OFF",
                   "SET SESSION sql_log_bin = 0",
                   *[f"DROP DATABASE `{d}`" for d in dbs if d not in SYSTEM_DATABASES],
                   "SET SESSION sql_log_bin = 1", "RESET BINARY LOGS AND GTIDS")
    if server.gtid_executed():
        raise ScenarioError(f"pool server {server.name!r} kept GTIDs after the reset: {server.gtid_executed()!r}")


# ---------------------------------------------------------------------------------------------
# server-side set algebra (every set below is computed by a server)

def _union(*sets: str | None) -> str:
    return ",".join(s for s in sets if s)


def _one_line(text: str | None) -> str:
    return (text or "").replace("\n", "")


def _subtract(server: Any, a: str, b: str) -> str:
    return _one_line(server.query_value("SELECT GTID_SUBTRACT(%s, %s)", (a, b)))


def _intersect(server: Any, a: str, b: str) -> str:
    return _one_line(server.query_value("SELECT GTID_SUBTRACT(%s, GTID_SUBTRACT(%s, %s))", (a, a, b)))


def _subset(server: Any, a: str, b: str) -> bool:
    return bool(server.query_value("SELECT GTID_SUBSET(%s, %s)", (a, b)))


def _equal(server: Any, a: str | None, b: str | None) -> bool:
    return bool(server.query_value("SELECT GTID_SUBSET(%s, %s) AND GTID_SUBSET(%s, %s)",
                                   (a or "", b or "", b or "", a or "")))


def _executed(server: Any) -> str:
    return _one_line(server.gtid_executed())


def _wait(predicate: Callable[[], Any], what: str, timeout: float = TIMEOUT, interval: float = 0.05) -> Any:
    """scenarios._wait with this module's bounds (a trial's steps take fractions of a second)."""
    return scenarios_wait(predicate, what, timeout, interval)


# ---------------------------------------------------------------------------------------------
# driving the fleet into the trial's state

def _insert(server: Any, db: str, ids: Sequence[int], note: str, *, log: bool = True) -> None:
    if not ids:
        return
    statements = [f"INSERT INTO {db}.t (id, note) VALUES ({i}, '{note}')" for i in ids]
    if not log:
        statements = ["SET SESSION sql_log_bin = 0", *statements, "SET SESSION sql_log_bin = 1"]
    server.execute(*statements)


def _ch(spec: TrialSpec, replica: str, source: str) -> ChannelSpec:
    return ChannelSpec(replica=replica, source=source, channel=spec.channel_of(replica, source) or "")


def _running_channels(fleet: Fleet, source: str) -> list[ChannelSpec]:
    out = []
    for ch in fleet.topology.channels:
        if ch.source == source and channel_status(fleet.server(ch.replica), ch.channel)["SERVICE_STATE"] == "ON":
            out.append(ch)
    return out


def _wait_received(fleet: Fleet, channels: Sequence[ChannelSpec], timeout: float = TIMEOUT) -> None:
    """Wait until each channel's replica holds (executed ∪ received) its source's gtid_executed."""
    for ch in channels:
        rep, src = fleet.server(ch.replica), fleet.server(ch.source)
        target = _executed(src)
        _wait(lambda: _subset(rep, target, _union(_executed(rep), channel_status(rep, ch.channel)["RECEIVED_TRANSACTION_SET"])),
              f"{ch.replica!r} to receive {target!r} from {ch.source!r}", timeout)


def _purge_all_but_current(server: Any, must_cover: str, timeout: float = TIMEOUT) -> str:
    """FLUSH + PURGE BINARY LOGS TO the current file until gtid_purged covers ``must_cover`` (a dump
    thread still reading the previous file keeps it: retried)."""
    def purged() -> str | None:
        server.execute("FLUSH BINARY LOGS")
        current = server.query("SHOW BINARY LOG STATUS")[0]["File"]
        server.execute(f"PURGE BINARY LOGS TO '{current}'")
        return current if _subset(server, must_cover, server.query_value("SELECT @@GLOBAL.gtid_purged")) else None
    return _wait(purged, f"{server.name!r} to purge {must_cover!r}", timeout, interval=0.2)


def inject(fleet: Fleet, spec: TrialSpec) -> dict[str, Any]:
    """Drive the lent fleet into the trial's state; return what was done, as the servers say."""
    s = fleet.server("s")
    done: dict[str, Any] = {}
    for ch in fleet.topology.attach_order():
        fleet.attach_channel(ch)
    s.execute(f"CREATE DATABASE {DB}", f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, note VARCHAR(64) NOT NULL)")
    _insert(s, DB, range(PHASE_IDS[1], PHASE_IDS[1] + spec.write_count("s1")), "phase 1")
    if "x" in spec.options:
        x = fleet.server("x")
        x.execute(f"CREATE DATABASE {DB_X}", f"CREATE TABLE {DB_X}.t (id INT PRIMARY KEY, note VARCHAR(64) NOT NULL)")
        _insert(x, DB_X, range(1, 1 + spec.write_count("x1")), "x phase 1")
    fleet.wait_caught_up(timeout=TIMEOUT)

    for f in spec.faults_of("same_server_id"):
        twin, other = fleet.server(f.server), fleet.server(f.get("as"))
        twin.execute(f"SET GLOBAL server_id = {other.server_id}", "STOP REPLICA", "START REPLICA")
        done[f"{f.server}.server_id"] = twin.query_value("SELECT @@GLOBAL.server_id")

    for i, f in enumerate(spec.faults_of("errant")):
        rep = fleet.server(f.server)
        before = _executed(rep)
        _insert(rep, DB, [100 + i], f"errant on {f.server}")
        errant = _subtract(rep, _executed(rep), before)
        if not errant:
            raise ScenarioError(f"no errant GTID appeared on {f.server!r}")
        _wait_received(fleet, _running_channels(fleet, f.server))
        if f.get("purged"):
            _purge_all_but_current(rep, errant)
        done[f"{f.server}.errant"] = errant

    for f in spec.faults:
        if f.server == "s" or f.kind in ("errant", "same_server_id"):
            continue
        rep, ch = fleet.server(f.server), _ch(spec, f.server, "s")
        c = f"FOR CHANNEL '{ch.channel}'"
        if f.kind == "receiver_stopped":
            rep.execute(f"STOP REPLICA IO_THREAD {c}")
        elif f.kind == "applier_stopped":
            rep.execute(f"STOP REPLICA SQL_THREAD {c}")
        elif f.kind == "source_delay":
            rep.execute(f"STOP REPLICA SQL_THREAD {c}",
                        f"CHANGE REPLICATION SOURCE TO SOURCE_DELAY = {int(f.get('seconds'))} {c}")
            if all(g.server != f.server for g in spec.faults_of("applier_stopped")):
                rep.execute(f"START REPLICA SQL_THREAD {c}")
        elif f.kind == "applier_error":
            _insert(rep, DB, [CONFLICT_ID], f"conflict on {f.server}", log=bool(f.get("logged")))

    before = _executed(s)
    _insert(s, DB, range(PHASE_IDS[2], PHASE_IDS[2] + spec.write_count("s2")), "phase 2")
    done["s.phase2"] = _subtract(s, _executed(s), before)
    if "x" in spec.options:
        x = fleet.server("x")
        _insert(x, DB_X, range(10, 10 + spec.write_count("x2")), "x phase 2")

    for f in spec.faults_of("source_purged"):
        quiesce(fleet)
        done["s.purged_to"] = _purge_all_but_current(s, done["s.phase2"])
        before = _executed(s)
        _insert(s, DB, range(PHASE_IDS[3], PHASE_IDS[3] + spec.write_count("s3")), "phase 3")
        done["s.phase3"] = _subtract(s, _executed(s), before)
        for name in f.get("restart_receivers", ()):
            rep, ch = fleet.server(name), _ch(spec, name, "s")
            rep.execute(f"START REPLICA IO_THREAD FOR CHANNEL '{ch.channel}'")
            status = _wait(lambda: (st := channel_status(rep, ch.channel))["Last_IO_Errno"] and st,
                           f"{name!r}'s receiver to fail", TIMEOUT)
            done[f"{name}.receiver_error"] = f"{status['Last_IO_Errno']}: {status['Last_IO_Error'][:160]}"
    quiesce(fleet)
    return done


def quiesce(fleet: Fleet, timeout: float = TIMEOUT) -> None:
    """Wait until nothing is in flight: every running receiver holds its source's gtid_executed
    (executed ∪ received, on the replica), every running undelayed applier without an error has
    applied what was received."""
    names = sorted({n for ch in fleet.topology.channels for n in (ch.replica, ch.source)})

    def settled() -> bool:
        # a pass counts only if no server's gtid_executed moved while it ran: in a cycle a
        # transaction can reach a server after its channels were checked (seed 5141: x's GTIDs
        # went r2 -> s -> r4 while the pass looked at r4 first)
        before = {n: _executed(fleet.server(n)) for n in names}
        if not _pass():
            return False
        return all(_executed(fleet.server(n)) == before[n] for n in names)

    def _pass() -> bool:
        for ch in fleet.topology.channels:
            rep, src = fleet.server(ch.replica), fleet.server(ch.source)
            st = channel_status(rep, ch.channel)
            executed = _executed(rep)
            received = st["RECEIVED_TRANSACTION_SET"] or ""
            if st["SERVICE_STATE"] in ("ON", "CONNECTING") and not st["Last_IO_Errno"]:
                if not _subset(rep, _executed(src), _union(executed, received)):
                    return False
            if st["Replica_SQL_Running"] == "Yes" and not st["Last_SQL_Errno"] and not st["SQL_Delay"]:
                if not _subset(rep, received, executed):
                    return False
        return True
    _wait(settled, "the fleet to quiesce", timeout, interval=0.1)


# ---------------------------------------------------------------------------------------------
# the promotion

def _apply_relay_log(server: Any, channel: str, timeout: float) -> None:
    """Have a sibling's applier apply its relay log before the repoint, as the advice says for one
    the model marks ``needs_relay_log_applied``: undelayed first with its receiver running (with
    both threads stopped the CHANGE would purge the relay log), then STOP REPLICA IO_THREAD and
    wait (bounded) until what it received is applied or its applier reports an error."""
    c = f"FOR CHANNEL '{channel}'"
    if channel_status(server, channel)["SQL_Delay"]:
        server.execute(f"STOP REPLICA SQL_THREAD {c}", f"CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0 {c}")
    server.execute(f"STOP REPLICA IO_THREAD {c}")
    received = channel_status(server, channel)["RECEIVED_TRANSACTION_SET"] or ""
    server.execute(f"START REPLICA SQL_THREAD {c}")
    _wait(lambda: channel_status(server, channel)["Last_SQL_Errno"] or _subset(server, received, _executed(server)),
          "a sibling to apply its relay log before the repoint", timeout)


def promote_candidate(fleet: Fleet, spec: TrialSpec, timeout: float = TIMEOUT,
                      drained: Sequence[str] = ()) -> dict[str, Any]:
    """Promote ``spec.candidate`` and repoint every sibling and ``s`` (see the module docstring),
    each sibling in ``drained`` once it has applied its relay log; return what every server did,
    as the servers report it."""
    r, s = fleet.server(spec.candidate), fleet.server("s")
    cycle = [src for rep, src, _ in spec.channels if rep == "s"]
    s_channel = _ch(spec, "s", cycle[0]).channel if cycle else ""
    if cycle:
        # s has failed: its own channel (a cycle) receives nothing while the others are repointed,
        # or what R spreads reaches s through a repointed sibling before s's own repoint (seeds 8283,
        # 8350, 8373: s's "got" empty, its spread already in its "before")
        s.execute(f"STOP REPLICA FOR CHANNEL '{s_channel}'")
    s_before = _executed(s)
    c = f"FOR CHANNEL '{_ch(spec, spec.candidate, 's').channel}'"
    if channel_status(r, _ch(spec, spec.candidate, "s").channel)["SQL_Delay"]:
        # Undelayed while its receiver still runs (a delayed replica's receiver always does here):
        # with both threads stopped, CHANGE REPLICATION SOURCE purges the relay logs even for
        # SOURCE_DELAY alone, and RELAY_LOG_FILE/POS cannot be given with SOURCE_AUTO_POSITION
        # (observed on 9.7.4). The fleet is quiesced, so the receiver fetches nothing meanwhile.
        r.execute(f"STOP REPLICA SQL_THREAD {c}", f"CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0 {c}")
    r.execute(f"STOP REPLICA IO_THREAD {c}")
    st = channel_status(r, _ch(spec, spec.candidate, "s").channel)
    r.execute(f"START REPLICA SQL_THREAD {c}")
    received = st["RECEIVED_TRANSACTION_SET"] or ""

    def applied() -> dict[str, Any] | None:
        now = channel_status(r, _ch(spec, spec.candidate, "s").channel)
        if now["Last_SQL_Errno"] or _subset(r, received, _executed(r)):
            return now
        return None
    relay = _wait(applied, f"{spec.candidate!r} to apply its relay log", timeout)
    r.execute(f"STOP REPLICA {c}", f"RESET REPLICA ALL {c}")
    r_after = _executed(r)
    candidate = {"gtid_executed": r_after, "gtid_purged": _one_line(r.query_value("SELECT @@GLOBAL.gtid_purged")),
                 "applier_errno": int(relay["Last_SQL_Errno"] or 0),
                 "applier_error": (relay["Last_SQL_Error"] or "")[:300]}

    siblings = [t for t in spec.replicas if t != spec.candidate] + ["s"]
    channel = {t: _ch(spec, t, "s").channel for t in spec.replicas}
    channel["s"] = s_channel
    before: dict[str, dict[str, Any]] = {}
    for name in siblings:
        t = fleet.server(name)
        c = f"FOR CHANNEL '{channel[name]}'"
        if name in drained:
            _apply_relay_log(t, channel[name], timeout)
        if name != "s" or cycle:
            t.execute(f"STOP REPLICA {c}")
            st = channel_status(t, channel[name])
            held = st["RECEIVED_TRANSACTION_SET"] or ""
        else:
            held = ""
        started_at = t.query_value("SELECT NOW(6)")
        before[name] = {"gtid_executed": _executed(t), "received": _one_line(held), "started_at": started_at}
        t.execute(
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='{HOST}', SOURCE_PORT={r.port}, SOURCE_USER='{REPL_USER}', "
            f"SOURCE_PASSWORD='{fleet.passwords[REPL_USER]}', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1, "
            f"SOURCE_CONNECT_RETRY=1, SOURCE_RETRY_COUNT=10, SOURCE_HEARTBEAT_PERIOD=0.25, SOURCE_DELAY=0 {c}",
            f"START REPLICA {c}")

    def settled(name: str) -> dict[str, Any] | None:
        t = fleet.server(name)
        st = channel_status(t, channel[name])
        if st["Last_IO_Errno"]:
            return st
        has = _union(_executed(t), st["RECEIVED_TRANSACTION_SET"])
        if st["Replica_IO_Running"] == "Yes" and _subset(t, r_after, has) and st["LAST_HEARTBEAT_TIMESTAMP"] \
                and st["LAST_HEARTBEAT_TIMESTAMP"] > before[name]["started_at"]:
            return st
        return None

    out: dict[str, Any] = {}
    for name in siblings:
        st = _wait(lambda: settled(name), f"{name!r} to settle after promoting {spec.candidate!r}", timeout)
        t = fleet.server(name)
        after = _executed(t)
        got = _subtract(t, _union(after, st["RECEIVED_TRANSACTION_SET"]), before[name]["gtid_executed"])
        kept = _subtract(t, after, r_after)
        held = _union(before[name]["gtid_executed"], before[name]["received"])
        error = st["Last_IO_Error"] or ""
        quoted = MISSING_RE.search(error)
        out[name] = {
            "channel": channel[name], "last_io_errno": int(st["Last_IO_Errno"] or 0), "last_io_error": error[:400],
            "io_running": st["Replica_IO_Running"], "gtid_executed_before": before[name]["gtid_executed"],
            "received_before": before[name]["received"], "gtid_executed_after": after,
            "kept": kept, "lost": _intersect(t, kept, s_before),
            "discarded": _subtract(t, _intersect(t, held, s_before), _union(after, r_after)),
            "got": got, "spread": _subtract(t, got, s_before),
            "refused_missing": _one_line(quoted.group(1)) if quoted else None,
        }
    return {"s_gtid_executed_before": s_before, "candidate": candidate, "siblings": out}


# ---------------------------------------------------------------------------------------------
# predictions and the comparison

def _text(gtids: Any) -> str | None:
    return None if gtids is None else gtids.to_text(multiline=False)


def predictions(model: Any, candidate: str) -> dict[str, Any]:
    """What the model says about promoting ``candidate`` (sets as canonical text; a field the
    model does not have is left out)."""
    (c,) = [c for c in model.candidates if c.candidate == candidate]
    promoted = getattr(c, "promoted_gtid_executed", None)
    if promoted is None and c.executed is not None:
        promoted = c.executed | (c.pending_relay or type(c.executed).EMPTY)
    out = {"verdict": str(c.verdict), "reasons": list(c.reasons), "promoted": _text(promoted),
           "promoted_field": hasattr(c, "promoted_gtid_executed"), "siblings": {}}
    for s in c.siblings:
        row = {"role": s.role, "result": str(s.result), "refusal": s.refusal, "rule": s.rule,
               "refused_missing": _text(s.refused_missing), "lost": _text(s.lost), "in_flight": _text(s.in_flight),
               "errant": _text(s.errant), "catch_up": _text(s.catch_up), "sibling_set": _text(s.sibling_set)}
        for extra in ("discarded", "other_channels", "needs_relay_log_applied"):
            if hasattr(s, extra):
                row[extra] = _text(getattr(s, extra))
        out["siblings"][s.sibling] = row
    return out


def observed_refusal(errno: int, error: str) -> str | None:
    """The model's name for the error a sibling's receiver reported (None: no error)."""
    from gtid_core import failover as fo
    from gtid_core.reconnect import ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER

    if not errno:
        return None
    low = error.lower()
    if errno == ER_SOURCE_FATAL_ERROR_READING_BINLOG and "purged required binary logs" in low:
        return ER_MASTER_HAS_PURGED_REQUIRED_GTIDS
    if errno == ER_SOURCE_FATAL_ERROR_READING_BINLOG and "binary log is not open" in low:
        return fo.NO_BINARY_LOG
    if errno == ER_REPLICA_FATAL_ERROR and "equal mysql server uuids" in low:
        return fo.EQUAL_SERVER_UUID
    if errno == ER_REPLICA_FATAL_ERROR and "equal mysql server ids" in low:
        return fo.EQUAL_SERVER_ID
    if "more gtids than the source" in low or "more gtids than the master" in low:
        return ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER
    return f"error {errno}: {error[:120]}"


def compare(server: Any, predicted: Mapping[str, Any], observed: Mapping[str, Any]) -> dict[str, Any]:
    """Per sibling and field: True (agree), False (disagree) or None (not comparable), with
    equality computed by ``server``; and the list of disagreements."""
    agreement: dict[str, dict[str, bool | None]] = {}
    disagreements: list[dict[str, Any]] = []

    def record(who: str, field: str, ok: bool | None, said: Any, did: Any) -> None:
        agreement.setdefault(who, {})[field] = ok
        if ok is False:
            disagreements.append({"sibling": who, "field": field, "model": said, "servers": did})

    cand = observed["candidate"]
    record("candidate", "promoted", _equal(server, predicted["promoted"], cand["gtid_executed"]),
           predicted["promoted"], cand["gtid_executed"])
    for name, did in observed["siblings"].items():
        said = predicted["siblings"].get(name)
        if said is None:
            record(name, "result", False, None, "not predicted")
            continue
        refused = did["last_io_errno"] != 0
        if said["result"] == "undetermined":
            record(name, "result", False, "undetermined", "refused" if refused else "streams")
            continue
        said_refused = said["result"] == "refused"
        record(name, "result", said_refused == refused, said["result"], "refused" if refused else "streams")
        if said_refused and refused:
            kind = observed_refusal(did["last_io_errno"], did["last_io_error"])
            record(name, "refusal", said["refusal"] == kind, said["refusal"], kind)
            if did["refused_missing"] is not None or said["refused_missing"] is not None:
                ok = (did["refused_missing"] is not None and said["refused_missing"] is not None
                      and _equal(server, said["refused_missing"], did["refused_missing"]))
                record(name, "refused_missing", ok, said["refused_missing"], did["refused_missing"])
        record(name, "lost", None if said["lost"] is None else _equal(server, said["lost"], did["lost"]),
               said["lost"], did["lost"])
        if "discarded" in said:
            record(name, "discarded",
                   None if said["discarded"] is None else _equal(server, said["discarded"], did["discarded"]),
                   said["discarded"], did["discarded"])
        record(name, "in_flight", None if said["in_flight"] is None else _equal(server, said["in_flight"], ""),
               said["in_flight"], "(quiesced: nothing in flight)")
        if not said_refused and not refused:
            spread = _union(said["errant"], said.get("other_channels"))
            record(name, "spread", _equal(server, spread, did["spread"]), spread, did["spread"])
    return {"agreement": agreement, "disagreements": disagreements}


# ---------------------------------------------------------------------------------------------
# one trial

def run_trial(pool: ServerPool, seed: int, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Generate, inject, read, predict, promote, compare, reset: one JSON-able record."""
    spec = generate_trial(seed, pool_size=len(pool.fleet.servers))
    record: dict[str, Any] = {"seed": seed, "trial": spec.to_json()}
    times: dict[str, float] = {}
    started = clock = time.monotonic()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.monotonic()
        times[name] = round(now - clock, 3)
        clock = now

    try:
        restarts = pool.restarts
        fleet = pool.lend(spec)
        record["slots"] = {role: server.name for role, server in fleet.servers.items()}
        lap("lend")
        record["restarts"] = pool.restarts - restarts
        record["injected"] = inject(fleet, spec)
        lap("inject")
        model, _ = build_model(fleet, "s", spec.replicas, other_sources=spec.other_sources)
        predicted = predictions(model, spec.candidate)
        record["predicted"] = predicted
        lap("read_and_model")
        drained = [name for name, said in predicted["siblings"].items() if said.get("needs_relay_log_applied")]
        observed = promote_candidate(fleet, spec, timeout, drained=drained)
        record["observed"] = observed
        lap("promote")
        result = compare(fleet.server(spec.candidate), predicted, observed)
        record.update(result)
        record["agrees"] = not result["disagreements"]
        lap("compare")
    except (SandboxError, mysql.connector.Error, OSError, ValueError) as exc:
        lap("failed")
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc(limit=6)[-2000:]
        record["agrees"] = None
    finally:
        try:
            pool.reset()
        except (SandboxError, mysql.connector.Error, OSError) as exc:
            record["reset_error"] = f"{type(exc).__name__}: {exc}"
            for server in pool.slots.values():
                with contextlib.suppress(SandboxError, OSError):
                    server.restart()
            pool.reset()
        lap("reset")
    record["times"] = times
    record["seconds"] = round(time.monotonic() - started, 3)
    return record


def trial_line(record: Mapping[str, Any]) -> str:
    """One line per trial: seed, shape, faults, candidate, verdict, outcome."""
    spec = record["trial"]
    faults = ",".join(f"{f['kind']}@{f['server']}" for f in spec["faults"]) or "-"
    shape = ",".join(spec["shape"]) or "-"
    if record.get("error"):
        outcome = f"ERROR {record['error'][:160]}"
    elif record["agrees"]:
        outcome = "agree"
    else:
        outcome = "DISAGREE " + "; ".join(f"{d['sibling']}.{d['field']}" for d in record["disagreements"])
    verdict = record.get("predicted", {}).get("verdict", "?")
    return (f"seed={record['seed']} {len(spec['servers'])} servers [{shape}] faults={faults} "
            f"candidate={spec['candidate']} verdict={verdict} {record['seconds']:.1f}s: {outcome}")


def summarize(records: Sequence[Mapping[str, Any]], wall_s: float) -> dict[str, Any]:
    """Trials, agreements, disagreements by kind (field, and the faults of those trials), errors."""
    by_field: dict[str, int] = {}
    by_fault: dict[str, int] = {}
    seeds: dict[str, list[int]] = {}
    for r in records:
        if r.get("error") or r.get("agrees"):
            continue
        fields = sorted({d["field"] for d in r["disagreements"]})
        for field in fields:
            by_field[field] = by_field.get(field, 0) + 1
            seeds.setdefault(field, []).append(r["seed"])
        for kind in sorted({f["kind"] for f in r["trial"]["faults"]} | set(r["trial"]["shape"])):
            by_fault[kind] = by_fault.get(kind, 0) + 1
    done = [r for r in records if not r.get("error")]
    return {
        "trials": len(records), "compared": len(done),
        "agreements": sum(1 for r in done if r["agrees"]),
        "disagreements": sum(1 for r in done if not r["agrees"]),
        "errors": sum(1 for r in records if r.get("error")),
        "disagreements_by_field": dict(sorted(by_field.items())),
        "disagreeing_trials_by_fault": dict(sorted(by_fault.items())),
        "seeds_by_field": {k: v[:20] for k, v in sorted(seeds.items())},
        "wall_s": round(wall_s, 1),
        "mean_trial_s": round(sum(r["seconds"] for r in records) / len(records), 2) if records else None,
    }


def write_jsonl(path: str | Path, records: Sequence[Mapping[str, Any]]) -> None:
    with open(path, "w") as out:
        for r in records:
            out.write(json.dumps(r, default=str, sort_keys=True) + "\n")
