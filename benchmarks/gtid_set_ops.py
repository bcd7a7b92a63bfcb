"""GTID set operations at the text level: gtid_core.GtidSet vs the MySQL server vs
python-mysql-replication.

One "operation" is what a check does with two texts read from servers, a replica's ``a`` and its
source's ``b``: parse both sides, then either subtract and format the result (what the replica
lacks: ``str(parse(b) - parse(a))`` / ``GTID_SUBTRACT(b, a)``) or test inclusion
(``parse(a) <= parse(b)`` / ``GTID_SUBSET(a, b)``).

Workloads (each a list of (a, b) text pairs, a ⊆ b, with realistic differences):
  a  2-20 UUIDs x 1 interval (a healthy fleet)
  b  5 UUIDs x 10,000 intervals (sets with holes)
  c  2,000 UUIDs x 1-3 intervals (a fleet after many failovers)
  d  tagged mixes: 10 UUIDs x (untagged + 3 tags) x 1-50 intervals

Method:
  * Python: time.perf_counter around the whole list of pairs, divided by the number of pairs.
  * Server: the pairs go into a table; ``SELECT SUM(LENGTH(GTID_SUBTRACT(b, a))) FROM t`` (and
    ``SUM(GTID_SUBSET(a, b))``) is timed minus the bare scan ``SELECT SUM(LENGTH(a) +
    LENGTH(b)) FROM t``, divided by the rows: the C++ cost of parsing, the operation and (for
    subtract) formatting, without the client/network overhead of one call per pair.
  * Every figure is the best of --repeat rounds; each round measures every workload in turn and,
    within a workload, alternates the Python and the server measurements, so a burst of load from
    other processes on a shared machine neither covers all rounds of a workload nor hits only one
    side.
  * python-mysql-replication 1.0.17 (``pip install .[bench]``): ``GtidSet(a)``, subset as
    ``b_set.__contains__(a_set)``, subtract per UUID with ``Gtid.__sub__`` (its GtidSet has no
    subtraction). It has no tags, so workload d is "n/a"; its parser does not merge repeated
    UUIDs, so every input is canonical text. Its interval insertion is quadratic, so a workload
    it cannot finish within --pmr-limit seconds for one pair is reported as "> limit".

Run: ``python benchmarks/gtid_set_ops.py`` (starts its own sandbox server through
jobs.sandbox.installer / jobs.sandbox.server and stops it) or ``--port N`` for a running server,
or ``--no-server`` for the Python figures only. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import contextlib
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gtid_core.gtid_set import GtidSet  # noqa: E402

SEED = 7


def _uuid(rng: random.Random) -> str:
    return "%08x-%04x-%04x-%04x-%012x" % (
        rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(16),
        rng.getrandbits(48))


def _canon(text: str) -> str:
    return str(GtidSet.parse(text))


def workload_a(rng: random.Random) -> list[tuple[str, str]]:
    pairs = []
    for _ in range(400):
        uuids = [_uuid(rng) for _ in range(rng.randint(2, 20))]
        tops = [rng.randint(1, 10**9) for _ in uuids]
        a = ",".join(f"{u}:1-{t}" for u, t in zip(uuids, tops))
        b = ",".join(f"{u}:1-{t + rng.randint(0, 3)}" for u, t in zip(uuids, tops))
        pairs.append((_canon(a), _canon(b)))
    return pairs


def workload_b(rng: random.Random) -> list[tuple[str, str]]:
    pairs = []
    for _ in range(4):
        uuids = [_uuid(rng) for _ in range(5)]
        a_blocks, b_blocks = [], []
        for u in uuids:
            ivs, pos = [], 1
            for _ in range(10_000):
                length = rng.randint(1, 50)
                ivs.append((pos, pos + length - 1))
                pos += length + rng.randint(1, 5)
            a_blocks.append(u + ":" + ":".join(f"{s}-{e}" if s != e else f"{s}" for s, e in ivs))
            # b: a superset of a that fills about one hole in ten
            merged = []
            for s, e in ivs:
                if merged and rng.random() < 0.1:
                    merged[-1] = (merged[-1][0], e)
                else:
                    merged.append((s, e))
            b_blocks.append(u + ":" + ":".join(f"{s}-{e}" if s != e else f"{s}" for s, e in merged))
        pairs.append((_canon(",".join(a_blocks)), _canon(",".join(b_blocks))))
    return pairs


def workload_c(rng: random.Random) -> list[tuple[str, str]]:
    pairs = []
    for _ in range(8):
        uuids = [_uuid(rng) for _ in range(2000)]
        a_blocks, b_blocks = [], []
        for u in uuids:
            pos, ivs = 1, []
            for _ in range(rng.randint(1, 3)):
                length = rng.randint(1, 10**6)
                ivs.append((pos, pos + length - 1))
                pos += length + rng.randint(1, 1000)
            a_blocks.append(u + ":" + ":".join(f"{s}-{e}" for s, e in ivs))
            extra = rng.random() < 0.05
            last = ivs[-1]
            ivs_b = ivs[:-1] + [(last[0], last[1] + (rng.randint(1, 9) if extra else 0))]
            b_blocks.append(u + ":" + ":".join(f"{s}-{e}" for s, e in ivs_b))
        pairs.append((_canon(",".join(a_blocks)), _canon(",".join(b_blocks))))
    return pairs


def workload_d(rng: random.Random) -> list[tuple[str, str]]:
    pairs = []
    tags = ["batch", "etl_job", "maint"]
    for _ in range(100):
        a_blocks, b_blocks = [], []
        for u in (_uuid(rng) for _ in range(10)):
            for tag in [None] + tags:
                pos, ivs = 1, []
                for _ in range(rng.randint(1, 50)):
                    length = rng.randint(1, 1000)
                    ivs.append((pos, pos + length - 1))
                    pos += length + rng.randint(1, 20)
                prefix = f"{u}:{tag}:" if tag else f"{u}:"
                a_blocks.append(prefix + ":".join(f"{s}-{e}" for s, e in ivs))
                ivs_b = ivs[:-1] + [(ivs[-1][0], ivs[-1][1] + rng.randint(0, 5))]
                b_blocks.append(prefix + ":".join(f"{s}-{e}" for s, e in ivs_b))
        pairs.append((_canon(",".join(a_blocks)), _canon(",".join(b_blocks))))
    return pairs


WORKLOADS = {
    "a: 2-20 UUIDs x 1 interval": workload_a,
    "b: 5 UUIDs x 10,000 intervals": workload_b,
    "c: 2,000 UUIDs x 1-3 intervals": workload_c,
    "d: tagged, 10 UUIDs x 4 tags x 1-50 intervals": workload_d,
}


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


# ---- gtid_core ---------------------------------------------------------------------------

def ours_subtract(pairs):
    parse = GtidSet.parse
    for a, b in pairs:
        str(parse(b) - parse(a))


def ours_subset(pairs):
    parse = GtidSet.parse
    for a, b in pairs:
        parse(a) <= parse(b)


def ours_parse(pairs):
    parse = GtidSet.parse
    for a, b in pairs:
        parse(a)
        parse(b)


# ---- python-mysql-replication ----------------------------------------------------------

def pmr_available() -> str | None:
    try:
        import importlib.metadata as md

        import pymysqlreplication.gtid  # noqa: F401
        return md.version("mysql-replication")
    except Exception:
        return None


def pmr_subtract(pairs):
    from pymysqlreplication.gtid import GtidSet as P

    for a, b in pairs:
        pa, pb = P(b), P(a)
        by_sid = {g.sid: g for g in pb.gtids}
        out = []
        for g in pa.gtids:
            other = by_sid.get(g.sid)
            r = g - other if other is not None else g
            if r.intervals:
                out.append(str(r))
        ",".join(out)


def pmr_subset(pairs):
    from pymysqlreplication.gtid import GtidSet as P

    for a, b in pairs:
        P(a) in P(b)


# ---- server ------------------------------------------------------------------------------

class ServerTimer:
    def __init__(self, conn):
        self.conn = conn
        cur = conn.cursor()
        cur.execute("CREATE DATABASE IF NOT EXISTS gtid_bench")
        cur.execute("SET SESSION max_execution_time = 0")
        cur.close()

    def load(self, pairs, table: str):
        cur = self.conn.cursor()
        cur.execute(f"DROP TABLE IF EXISTS gtid_bench.{table}")
        cur.execute(f"CREATE TABLE gtid_bench.{table} (id INT PRIMARY KEY, a LONGTEXT, b LONGTEXT)")
        for i, (a, b) in enumerate(pairs):
            cur.execute(f"INSERT INTO gtid_bench.{table} VALUES (%s, %s, %s)", (i, a, b))
        cur.close()

    def once(self, expr: str, table: str) -> float:
        cur = self.conn.cursor()
        t0 = time.perf_counter()
        cur.execute(f"SELECT SUM({expr}) FROM gtid_bench.{table}")
        cur.fetchall()
        elapsed = time.perf_counter() - t0
        cur.close()
        return elapsed


SERVER_EXPRS = {
    "scan": "LENGTH(a) + LENGTH(b)",
    "subtract": "LENGTH(GTID_SUBTRACT(b, a))",
    "subset": "GTID_SUBSET(a, b)",
}


def measure(workloads: dict, timer, rounds: int) -> dict:
    """Best time per pair of each measurement over ``rounds`` rounds, ``{(workload, who, op):
    seconds}``. Each round measures every workload in turn, and within a workload alternates the
    Python and the server measurements, so the rounds of one workload are spread over the whole
    run: a burst of load from other processes on a shared machine (they last seconds here) cannot
    cover all of them, and hits the Python and the server figures alike."""
    ours = {"parse": ours_parse, "subtract": ours_subtract, "subset": ours_subset}
    best: dict = {}

    def keep(key, seconds):
        best[key] = min(best.get(key, float("inf")), seconds)

    tables = {name: f"t_{i}" for i, name in enumerate(workloads)}
    if timer is not None:
        for name, pairs in workloads.items():
            timer.load(pairs, tables[name])
            for expr in SERVER_EXPRS.values():
                timer.once(expr, tables[name])  # warm the buffer pool
    for _ in range(rounds):
        for name, pairs in workloads.items():
            for op, fn in ours.items():
                t0 = time.perf_counter()
                fn(pairs)
                keep((name, "ours", op), time.perf_counter() - t0)
                if timer is not None and op in SERVER_EXPRS:
                    keep((name, "server", op), timer.once(SERVER_EXPRS[op], tables[name]))
            if timer is not None:
                keep((name, "server", "scan"), timer.once(SERVER_EXPRS["scan"], tables[name]))
    out = {}
    for (name, who, op), seconds in best.items():
        out[(name, who, op)] = seconds / len(workloads[name])
    if timer is not None:
        for name in workloads:
            for op in ("subtract", "subset"):
                out[(name, "server", op)] -= out[(name, "server", "scan")]
    return out


@contextlib.contextmanager
def server_connection(args):
    if args.no_server:
        yield None, "not measured (--no-server)"
        return
    import mysql.connector

    if args.port:
        conn = mysql.connector.connect(host=args.host, port=args.port, user=args.user)
        try:
            yield conn, None
        finally:
            conn.close()
        return
    try:
        from jobs.sandbox.installer import ensure_mysql
        from jobs.sandbox.server import SandboxServer
    except ImportError as exc:
        yield None, f"not measured: the sandbox is not available ({exc})"
        return
    with tempfile.TemporaryDirectory(prefix="gtid-bench-") as tmp:
        server = SandboxServer(ensure_mysql(), "bench", tmp, server_id=900)
        server.start()
        try:
            conn = server.connect(user="root")
            try:
                yield conn, None
            finally:
                conn.close()
        finally:
            server.stop()


class _Timeout(Exception):
    pass


def pmr_time(fn, pairs, repeat: int, limit: float) -> float | str:
    """Best time per pair, or "> limit s" when one pair alone takes longer than ``limit``."""
    import signal

    def alarm(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        fn(pairs[:1])
    except _Timeout:
        return f"> {limit:g} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return best_of(lambda: fn(pairs), repeat) / len(pairs)


def fmt(seconds: float | str | None) -> str:
    if isinstance(seconds, str):
        return seconds
    if seconds is None:
        return "n/a"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="GTID set operation benchmark")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int)
    ap.add_argument("--user", default="root")
    ap.add_argument("--no-server", action="store_true")
    ap.add_argument("--repeat", type=int, default=25, help="rounds (best of)")
    ap.add_argument("--only", help="run only the workloads whose name starts with these letters")
    ap.add_argument("--pmr-limit", type=float, default=30.0,
                    help="seconds allowed to python-mysql-replication for one pair")
    args = ap.parse_args(argv)

    pmr = pmr_available()
    rows = []
    with server_connection(args) as (conn, server_note):
        version = None
        timer = None
        if conn is not None:
            cur = conn.cursor()
            cur.execute("SELECT @@version")
            version = cur.fetchone()[0]
            cur.close()
            timer = ServerTimer(conn)
        workloads = {name: make(random.Random(SEED)) for name, make in WORKLOADS.items()
                     if not args.only or name[0] in args.only}
        m = measure(workloads, timer, args.repeat)
        for name, pairs in workloads.items():
            n = len(pairs)
            intervals = sum(len(list(GtidSet.parse(a))) for a, _ in pairs) / n
            o_parse, o_sub, o_subset = (m[(name, "ours", op)] for op in ("parse", "subtract", "subset"))
            s_sub, s_subset = m.get((name, "server", "subtract")), m.get((name, "server", "subset"))
            p_sub = p_subset = None
            if pmr and not name.startswith("d"):
                p_sub = pmr_time(pmr_subtract, pairs, max(1, args.repeat // 2), args.pmr_limit)
                p_subset = pmr_time(pmr_subset, pairs, max(1, args.repeat // 2), args.pmr_limit)
            rows.append((name, n, intervals, o_parse, o_sub, s_sub, p_sub, o_subset, s_subset,
                         p_subset))
            print(f"done {name}", file=sys.stderr)

    print(f"machine: {platform.machine()}, {platform.processor() or '?'}, "
          f"Python {platform.python_version()}, MySQL {version or server_note}, "
          f"mysql-replication {pmr or 'not installed'}")
    print()
    print("| workload | pairs | intervals/side | GtidSet parse both | subtract: GtidSet | server "
          "| ratio | mysql-replication | subset: GtidSet | server | ratio | mysql-replication |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (name, n, ivs, o_parse, o_sub, s_sub, p_sub, o_subset, s_subset, p_subset) in rows:
        r_sub = f"{o_sub / s_sub:.2f}x" if s_sub and s_sub > 0 else "n/a"
        r_subset = f"{o_subset / s_subset:.2f}x" if s_subset and s_subset > 0 else "n/a"
        print(f"| {name} | {n} | {ivs:,.0f} | {fmt(o_parse)} | {fmt(o_sub)} | {fmt(s_sub)} | "
              f"{r_sub} | {fmt(p_sub)} | {fmt(o_subset)} | {fmt(s_subset)} | {r_subset} | "
              f"{fmt(p_subset)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
