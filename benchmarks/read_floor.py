"""What one server's read costs the client with nothing of Spark around it, against what the
connector's own classes cost for the same statements (issue #21, stop 63).

Starts a simulated fleet of 9.7.4 groups (a source and two replicas each, no TLS), reads every
server once with ``jobs.collector.read_server`` while recording the statements each read sends,
then, alternating, on 1 and on N threads of one process:

* ``collector``: ``read_server`` as the job's read task calls it (the collector's connection
  classes, row checks and conversions included);
* ``stock connector``: a ``mysql.connector.connection.MySQLConnection`` of the installed connector,
  none of the collector's classes, a dictionary cursor, each server's recorded statements in
  order (a failing one, such as a relay log the simulator has not got, gets a fresh cursor as the
  collector's does), ``fetchall`` of every result: what the pure-Python protocol and its
  dictionary cursor cost for the same work before anything more is done with the rows.

Client CPU is user + system time of this process (``os.times()``) over the reads, per read; the
simulator runs in its own processes on the same cores. The pure-Python protocol only (the C
extension's import is blocked), as the job uses it.

Usage: python benchmarks/read_floor.py [--clusters 10] [--reads 600] [--threads 1,16]
[--latency 1-3] [--rounds 2]. The figures are recorded in docs/benchmarks.md ("Issue #21's 3 ms:
the read's floor and the JIT").
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, NamedTuple

ROOT = Path(__file__).resolve().parents[1]


class Cost(NamedTuple):
    """What one measured run cost this process, per read: client CPU (user + system), system CPU
    and wall time in ms, and context switches, voluntary (a thread waited) and not."""

    cpu_ms: float
    system_ms: float
    wall_ms: float
    voluntary: float
    involuntary: float


def measured(run: Callable[[], Any], reads: int) -> tuple[Any, Cost]:
    """``run()``'s result and its :class:`Cost` per read over ``reads`` reads. Also used by
    benchmarks/read_task_cpu.py."""
    t0, w0, u0 = os.times(), time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    result = run()
    t1, w1, u1 = os.times(), time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    system = t1.system - t0.system
    return result, Cost(1000 * ((t1.user - t0.user) + system) / reads, 1000 * system / reads,
                        1000 * (w1 - w0) / reads, (u1.ru_nvcsw - u0.ru_nvcsw) / reads,
                        (u1.ru_nivcsw - u0.ru_nivcsw) / reads)


@contextlib.contextmanager
def simulated_groups(clusters: int, latency: str, prefix: str):
    """``clusters`` simulated 9.7.4 groups (a source and two replicas each, no TLS) served by one
    simulator process for the duration: yields ``(specs, password)``, the servers as the
    collector's ``ServerSpec`` values and the audit account's password. Also used by
    benchmarks/read_task_cpu.py."""
    sys.path.insert(0, str(ROOT))
    from jobs.sandbox.sim import FleetBuilder, Simulator
    from jobs.server_spec import ServerSpec

    work = Path(tempfile.mkdtemp(prefix=prefix))
    builder = FleetBuilder(seed=21)
    for i in range(clusters):
        builder.cluster(f"c{i}", "9.7.4", replicas=2)
    fleet = builder.fleet()
    fleet.save(work / "fleet.json")
    fleet.write_audit_config(work / "sim.yaml", warehouse=str(work / "wh"), password_file=work / "sim.pw")
    sim = Simulator(work / "fleet.json", lifetime_s=1800, latency=latency, workdir=work)
    sim.start()
    try:
        yield ([ServerSpec(name=s.name, host=s.host, port=s.port, user="audit", connect_timeout_s=5,
                           read_timeout_s=10, password_file=str(work / "sim.pw"), tls=None) for s in fleet.servers],
               (work / "sim.pw").read_text().strip())
    finally:
        sim.stop()
        shutil.rmtree(work, ignore_errors=True)


def planned_reads(specs, threads: int):
    """The read task's inputs for ``specs`` as a first night plans them (a probe of every server,
    ``plan_read_order``): ``(ctx, groups, inventory)``, with ``per_task_concurrency = threads``.
    Used by benchmarks/read_task_cpu.py and benchmarks/read_task_spark.py."""
    import dataclasses

    from jobs import collector, read_plan
    from jobs.collect import _groups
    from jobs.server_spec import ReadSettings

    settings = dataclasses.replace(ReadSettings(server_deadline_s=60), per_task_concurrency=threads)
    ctx = collector.RunContext("bench", dt.date.today(), settings)
    probes = {s.name: collector.probe_server(s, settings) for s in specs}
    plan = read_plan.plan_read_order(specs, probes)
    return (ctx, _groups(plan, {s.name: s for s in specs}, probes),
            read_plan.inventory_for_resolution(specs, probes))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clusters", type=int, default=10, help="simulated 9.7.4 groups of 3 servers")
    p.add_argument("--reads", type=int, default=600, help="reads per measurement")
    p.add_argument("--threads", default="1,16")
    p.add_argument("--latency", default="1-3", help="the simulator's per-statement latency in ms")
    p.add_argument("--rounds", type=int, default=2, help="times each (implementation, threads) is measured")
    args = p.parse_args(argv)

    sys.modules["_mysql_connector"] = None   # the pure-Python protocol, as the job uses it
    sys.path.insert(0, str(ROOT))
    import mysql.connector
    from mysql.connector.connection import MySQLConnection

    from jobs import collector
    from jobs.server_spec import ReadSettings

    with simulated_groups(args.clusters, args.latency, "gtid-read-floor-") as (specs, password):
        ctx = collector.RunContext("bench", dt.date.today(), ReadSettings(server_deadline_s=60))

        statements: dict[str, list[tuple[str, tuple]]] = {}
        query = collector.ServerReader.query

        def recording(self, sql, params=(), **kwargs):
            statements.setdefault(self.spec.name, []).append((sql, tuple(params)))
            return query(self, sql, params, **kwargs)

        collector.ServerReader.query = recording
        try:
            for spec in specs:   # also the warm-up: imports, caches
                result = collector.read_server(spec, ctx)
                if result.errors:
                    print(f"error reading {spec.name}: {result.errors[:1]!r}", file=sys.stderr)
                    return 1
        finally:
            collector.ServerReader.query = query

        def with_collector(i: int) -> None:
            collector.read_server(specs[i % len(specs)], ctx)

        def with_stock_connector(i: int) -> None:
            spec = specs[i % len(specs)]
            cnx = MySQLConnection(host=spec.host, port=spec.port, user="audit", password=password,
                                  ssl_disabled=True, autocommit=True, get_warnings=False, use_pure=True,
                                  charset="utf8mb4")
            try:
                cur = cnx.cursor(dictionary=True)
                for sql, params in statements[spec.name]:
                    try:
                        cur.execute(sql, params or None)
                        if cur.with_rows:
                            cur.fetchall()
                    except mysql.connector.Error:
                        cur = cnx.cursor(dictionary=True)
            finally:
                cnx.close()

        per_server = sum(map(len, statements.values())) / len(statements)
        print(f"cores {os.cpu_count()}  load average before {os.getloadavg()[0]:.2f}  servers {len(specs)}  "
              f"statements per read {per_server:.1f}  connector {mysql.connector.__version__} (pure Python)  "
              f"latency {args.latency} ms  reads per measurement {args.reads}")
        print("| read | threads | client CPU per read | of it system | wall per read |")
        print("|---|---:|---:|---:|---:|")
        runs = [("collector", with_collector), ("stock connector, same statements", with_stock_connector)]
        for _ in range(args.rounds):
            for label, read in runs:
                for threads in (int(t) for t in args.threads.split(",")):
                    def on_pool(read=read, threads=threads) -> None:
                        with ThreadPoolExecutor(threads) as pool:
                            list(pool.map(read, range(args.reads)))

                    _, cost = measured(on_pool, args.reads)
                    print(f"| {label} | {threads} | {cost.cpu_ms:.2f} ms | {cost.system_ms:.2f} ms | "
                          f"{cost.wall_ms:.2f} ms |", flush=True)
        print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
