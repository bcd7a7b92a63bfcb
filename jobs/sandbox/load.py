"""A live sandbox: bounded background writes on the sources, and the replica conditions that
real fleets live with (a delayed replica, an applier held up by a reader).

:class:`LoadWriter` keeps sources busy with small real transactions while the audit runs. Each
source gets its own database ``load_<source>`` with one table (its own database, so a
multi-source replica never applies two sources' DDL for the same name). Every transaction has
the same shape::

    BEGIN
    INSERT INTO load_<source>.rows (note, v) VALUES (...)        -- Table_map + Write_rows
    UPDATE load_<source>.rows SET v = v + 1 WHERE id = LAST_INSERT_ID()   -- Table_map + Update_rows
    COMMIT                                                        -- Xid

so a relay log holds multi-event groups (:data:`EVENTS_PER_TRANSACTION` events from ``Gtid`` to
``Xid``). The writer is bounded three ways: ``seconds``, ``max_transactions`` (per source) and
:meth:`LoadWriter.stop`; its threads are joined on exit and never outlive it.

:class:`HeldTableLock` is a lagging replica's usual cause: a long reader on the replica holds
``LOCK TABLES ... READ`` on a table the applier writes, so the applier waits (both replication
threads keep running, the receiver keeps filling the relay log). It is released after
``seconds`` or on exit, whichever comes first.

``python -m jobs.cli sandbox load --workdir .sandbox --rate 50 --seconds 60`` runs the writer
against a fleet brought up by ``sandbox up``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import mysql.connector

from jobs.sandbox.errors import ScenarioError
from jobs.sandbox.fleet import Fleet
from jobs.sandbox.server import SandboxServer

__all__ = ["LoadWriter", "LoadResult", "HeldTableLock", "load_database", "load_table", "top_sources",
           "applier_waiting", "EVENTS_PER_TRANSACTION", "LOAD_TABLE", "LIVE_TOPOLOGY"]

#: The live fleet (jobs/sandbox/topologies/live.yaml): a busy source, an ordinary, a delayed, a
#: lagging and a log_replica_updates=OFF replica.
LIVE_TOPOLOGY = Path(__file__).resolve().parent / "topologies" / "live.yaml"

LOAD_TABLE = "rows"

#: Gtid, Query(BEGIN), Table_map, Write_rows, Table_map, Update_rows, Xid (row-based logging,
#: binlog_rows_query_log_events OFF: the sandbox's settings).
EVENTS_PER_TRANSACTION = 7

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")


def load_database(source: str) -> str:
    """The database the writer uses on ``source`` (``orders-src`` -> ``load_orders_src``)."""
    return "load_" + _NOT_IDENTIFIER.sub("_", source)


def load_table(source: str) -> str:
    """``database.table`` the writer fills on ``source``."""
    return f"{load_database(source)}.{LOAD_TABLE}"


def top_sources(fleet: Fleet) -> list[str]:
    """Servers that replicate from nobody but feed at least one replica, in topology order."""
    replicas = {c.replica for c in fleet.topology.channels}
    feeding = {c.source for c in fleet.topology.channels}
    return [s.name for s in fleet.topology.servers if s.name in feeding and s.name not in replicas]


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """What the writer did on one source; ``written`` is computed by the source itself
    (``GTID_SUBTRACT`` of its gtid_executed after and before)."""

    source: str
    transactions: int
    seconds: float
    written: str
    error: str | None = None


class _SourceLoop:
    """One source's writer thread: paced transactions until a bound is reached or stop is asked."""

    def __init__(self, server: SandboxServer, rate_per_s: float, max_transactions: int, stop: threading.Event):
        self.server = server
        self.interval = 1.0 / rate_per_s
        self.deadline = 0.0
        self.max_transactions = max_transactions
        self.stop = stop
        self.count = 0
        self.error: BaseException | None = None
        self.table = load_table(server.name)
        server.execute(f"CREATE DATABASE IF NOT EXISTS {load_database(server.name)}",
                       f"CREATE TABLE IF NOT EXISTS {self.table} (id BIGINT PRIMARY KEY AUTO_INCREMENT, "
                       "note VARCHAR(64) NOT NULL, v BIGINT NOT NULL DEFAULT 0, "
                       "at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))")
        self.before = server.gtid_executed()
        self.started: float | None = None
        self.finished: float | None = None
        self.thread = threading.Thread(target=self._run, name=f"load-{server.name}", daemon=True)

    def start(self, deadline: float) -> None:
        self.deadline = deadline
        self.started = time.monotonic()
        self.thread.start()

    def _run(self) -> None:
        try:
            with contextlib.closing(self.server.connect(autocommit=False)) as conn:
                cur = conn.cursor()
                next_at = time.monotonic()
                while (self.count < self.max_transactions and not self.stop.is_set()
                       and time.monotonic() < self.deadline):
                    cur.execute(f"INSERT INTO {self.table} (note, v) VALUES (%s, 0)", (f"load {self.count}",))
                    cur.execute(f"UPDATE {self.table} SET v = v + 1 WHERE id = LAST_INSERT_ID()")
                    conn.commit()
                    self.count += 1
                    next_at += self.interval
                    pause = next_at - time.monotonic()
                    if pause > 0:
                        self.stop.wait(min(pause, max(0.0, self.deadline - time.monotonic())))
                    else:
                        next_at = time.monotonic()   # behind schedule: never burst to catch up
        except BaseException as exc:   # reported by stop()
            self.error = exc
        finally:
            self.finished = time.monotonic()

    def result(self) -> LoadResult:
        error = None if self.error is None else f"{type(self.error).__name__}: {self.error}"
        written = ""
        with contextlib.suppress(mysql.connector.Error):
            written = self.server.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (self.before,))
        return LoadResult(source=self.server.name, transactions=self.count,
                          seconds=round((self.finished or time.monotonic()) - (self.started or time.monotonic()), 3),
                          written=written, error=error)


class LoadWriter:
    """Background writes on ``sources`` (default: the fleet's top sources), bounded in time and count.

    ``rate_per_s`` transactions per second on each source, for at most ``seconds`` and at most
    ``max_transactions`` per source; the threads stop by themselves at the first bound. Use it as
    a context manager (``with LoadWriter(fleet, 50, 30, 2000) as load: ...``): on exit the threads
    are stopped and joined, and a writer that failed raises :class:`ScenarioError`.
    :meth:`wait` blocks until the bounds stop the writer; :meth:`stop` ends it early. Both return
    one :class:`LoadResult` per source.
    """

    def __init__(self, fleet: Fleet, rate_per_s: float = 50.0, seconds: float = 30.0,
                 max_transactions: int = 10_000, sources: Iterable[str] | None = None):
        if not rate_per_s > 0:
            raise ValueError(f"rate_per_s must be > 0, got {rate_per_s!r}")
        if not seconds > 0:
            raise ValueError(f"seconds must be > 0, got {seconds!r}")
        if max_transactions < 1:
            raise ValueError(f"max_transactions must be >= 1, got {max_transactions!r}")
        names = list(sources) if sources is not None else top_sources(fleet)
        if not names:
            raise ScenarioError("the fleet has no source to write on (no server feeds a replica)")
        self.fleet = fleet
        self.rate_per_s = rate_per_s
        self.seconds = seconds
        self.max_transactions = max_transactions
        self._servers = [fleet.server(name) for name in names]
        self._stop = threading.Event()
        self._loops: list[_SourceLoop] = []
        self._results: list[LoadResult] | None = None

    @property
    def sources(self) -> list[str]:
        return [s.name for s in self._servers]

    def prepare(self) -> "LoadWriter":
        """Create each source's database and table (once), without writing yet.

        A test can let replicas catch up on this DDL before :meth:`start`, so that what the
        replicas then hold is exactly the writer's transactions."""
        if not self._loops:
            self._loops = [_SourceLoop(s, self.rate_per_s, self.max_transactions, self._stop)
                           for s in self._servers]
        return self

    def start(self) -> "LoadWriter":
        """Start writing (after :meth:`prepare`, done here if needed); the bounds count from now."""
        self.prepare()
        deadline = time.monotonic() + self.seconds
        for loop in self._loops:
            if loop.started is None:
                loop.start(deadline)
        return self

    def wait_for(self, transactions: int, timeout: float = 60.0) -> None:
        """Block until every source committed at least ``transactions`` (ScenarioError on timeout,
        or when the writer stopped before getting there)."""
        deadline = time.monotonic() + timeout
        while True:
            counts = self.transactions()
            if all(n >= transactions for n in counts.values()):
                return
            if not self.running or time.monotonic() > deadline:
                errors = {loop.server.name: repr(loop.error) for loop in self._loops if loop.error}
                raise ScenarioError(f"the writer did not reach {transactions} transactions per source "
                                    f"within {timeout} s: {counts!r} {errors or ''}")
            time.sleep(0.05)

    @property
    def running(self) -> bool:
        return any(loop.thread.is_alive() for loop in self._loops)

    def transactions(self) -> dict[str, int]:
        """Transactions committed so far, per source."""
        return {loop.server.name: loop.count for loop in self._loops}

    def wait(self) -> list[LoadResult]:
        """Block until every thread reached a bound; the results, or ScenarioError if one failed."""
        return self._finish(stop=False)

    def stop(self) -> list[LoadResult]:
        """Stop now (joins every thread); the results, or ScenarioError if a writer failed."""
        return self._finish(stop=True)

    def _finish(self, stop: bool) -> list[LoadResult]:
        if self._results is not None:
            return self._results
        if stop:
            self._stop.set()
        for loop in self._loops:
            if loop.started is None:
                continue
            # a thread ends within one transaction after its deadline or the stop request
            loop.thread.join(timeout=None if not stop else 30.0)
        self._stop.set()
        alive = [loop.server.name for loop in self._loops if loop.thread.is_alive()]
        if alive:
            raise ScenarioError(f"load writer threads did not stop: {alive!r}")
        self._results = [loop.result() for loop in self._loops]
        failed = [r for r in self._results if r.error]
        if failed:
            raise ScenarioError("load writer failed: " + "; ".join(f"{r.source}: {r.error}" for r in failed))
        return self._results

    def __enter__(self) -> "LoadWriter":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            with contextlib.suppress(ScenarioError):   # the original error matters more
                self.stop()
            return
        self.stop()


class HeldTableLock:
    """``LOCK TABLES <table> READ`` held on ``server`` for at most ``seconds`` (a long reader).

    On a replica, the applier waits for the lock ("Waiting for table metadata lock") while the
    receiver keeps writing the relay log: a lagging replica with both threads running. Released
    on :meth:`release`, on exit, or after ``seconds``, whichever comes first.
    """

    def __init__(self, server: SandboxServer, table: str, seconds: float = 60.0):
        if not seconds > 0:
            raise ValueError(f"seconds must be > 0, got {seconds!r}")
        self.server = server
        self.table = table
        self.seconds = seconds
        self._release = threading.Event()
        self._locked = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"lock-{server.name}", daemon=True)

    def _run(self) -> None:
        try:
            with contextlib.closing(self.server.connect()) as conn:
                cur = conn.cursor()
                cur.execute(f"LOCK TABLES {self.table} READ")
                self._locked.set()
                self._release.wait(self.seconds)
                cur.execute("UNLOCK TABLES")
        except BaseException as exc:   # reported by acquire()/release()
            self.error = exc
        finally:
            self._locked.set()

    def acquire(self, timeout: float = 30.0) -> "HeldTableLock":
        """Take the lock (once; a second call returns at once)."""
        if self._thread.ident is not None:
            return self
        self._thread.start()
        if not self._locked.wait(timeout) or self.error is not None:
            self.release()
            raise ScenarioError(f"could not lock {self.table!r} on {self.server.name!r}: {self.error!r}")
        return self

    def release(self) -> None:
        self._release.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30.0)
        if self._thread.is_alive():
            raise ScenarioError(f"the lock holder on {self.server.name!r} did not stop")

    def __enter__(self) -> "HeldTableLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def applier_waiting(server: SandboxServer, channel: str = "") -> bool:
    """True while the channel's applier (coordinator or a worker) waits for a table lock."""
    rows = server.query(
        "SELECT COUNT(*) AS n FROM performance_schema.threads WHERE NAME LIKE 'thread/sql/replica_%%' "
        "AND PROCESSLIST_STATE LIKE 'Waiting for table%%'")
    return bool(rows and rows[0]["n"])


