"""Where the read task's Python goes beyond the read itself: the bare read, the job's read task, and
the task with PySpark's hand-over of its rows, in one process without a JVM (issue #21, stop 63).

In a night of ``benchmarks/scale_fleet.py`` the Python workers spend 0.7-1.5 ms a server more than
``benchmarks/read_floor.py``'s bare read. This takes the job's read task apart, alternating, on
the same simulated servers (9.7.4 groups of a source and two replicas, no TLS), each measurement
``--passes`` reads of every server:

* ``bare read``: ``jobs.collector.read_server`` of every server on a pool of ``--threads`` threads;
* ``read task``: ``jobs.read_staging.staged_partition`` over ``--passes`` copies of the fleet's
  groups as one task with ``per_task_concurrency = --threads``, planned from a probe of every
  server as a first night plans (``plan_read_order``, the resolver's inventory; a later night's
  reuse of binary-log headers is not exercised): the waves of a group in order, the rows checked
  against their schemas, each made a staging row;
* ``read task + hand-over``: the same, and each staging row then goes through what
  ``createDataFrame(rdd, staging_schema())`` runs in the Python worker: the schema's verifier,
  ``toInternal``, and pickling in batches of 100 (PySpark's ``CPickleSerializer``).

Client CPU is user + system time of this process (``os.times()``) per server read; context
switches are the process's (``getrusage``), voluntary (a thread waited: a socket, the GIL) and
not. The pure-Python protocol only. Usage: python benchmarks/read_task_cpu.py [--clusters 20]
[--passes 10] [--threads 32] [--rounds 3] [--only bare|task|hand-over] [--no-waves]. The
figures are in docs/benchmarks.md ("Issue #21's 3 ms: the read's floor and the JIT").
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clusters", type=int, default=20, help="simulated 9.7.4 groups of 3 servers")
    p.add_argument("--passes", type=int, default=10, help="reads of the whole fleet per measurement")
    p.add_argument("--threads", type=int, default=32, help="threads of the pool / per_task_concurrency")
    p.add_argument("--latency", default="1-3", help="the simulator's per-statement latency in ms")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", choices=["bare", "task", "hand-over"], help="measure one of the three only")
    p.add_argument("--no-waves", action="store_true",
                   help="a diagnostic: every wave its own group, so no read waits for another")
    args = p.parse_args(argv)

    sys.modules["_mysql_connector"] = None   # the pure-Python protocol, as the job uses it
    sys.path.insert(0, str(ROOT))
    from pyspark.serializers import CPickleSerializer
    from pyspark.sql.types import _make_type_verifier

    from jobs import collector, read_staging
    from read_floor import measured, planned_reads, simulated_groups

    with simulated_groups(args.clusters, args.latency, "gtid-read-task-") as (specs, _):
        ctx, groups, inventory = planned_reads(specs, args.threads)
        if args.no_waves:
            groups = [[wave] for group in groups for wave in group]
        schema = read_staging.staging_schema()
        verify = _make_type_verifier(schema)
        pickler = CPickleSerializer()

        def bare() -> int:
            with ThreadPoolExecutor(args.threads) as pool:
                results = list(pool.map(lambda spec: collector.read_server(spec, ctx), specs * args.passes))
            return sum(1 for r in results if r.errors)

        def task(hand_over: bool) -> int:
            # one task reads every pass, as one task of a night reads its thousands of servers: a
            # task per pass would leave its threads idle at each pass's end (fewer reads at once,
            # each of them waiting more), which a night's task does not
            failed, batch = 0, []
            for row in read_staging.staged_partition([groups * args.passes], ctx, inventory):
                if row[0] == "collection_errors":
                    failed += 1
                if hand_over:
                    verify(row)
                    batch.append(schema.toInternal(row))
                    if len(batch) == 100:
                        pickler.dumps(batch)
                        batch = []
            if batch:
                pickler.dumps(batch)
            return failed

        runs = [("bare read", bare), ("read task", lambda: task(False)),
                ("read task + hand-over", lambda: task(True))]
        if args.only:
            runs = [runs[["bare", "task", "hand-over"].index(args.only)]]
        for _, run in runs:   # warm up: imports, caches
            run()
        reads = len(specs) * args.passes
        print(f"cores {os.cpu_count()}  load average before {os.getloadavg()[0]:.2f}  servers {len(specs)}  "
              f"reads per measurement {reads}  threads {args.threads}  latency {args.latency} ms")
        print("| round | read | client CPU per server | of it system | wall per server | context switches per server "
              "(voluntary / not) | failed reads |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for r in range(1, args.rounds + 1):
            for label, run in runs:
                failed, cost = measured(run, reads)
                print(f"| {r} | {label} | {cost.cpu_ms:.2f} ms | {cost.system_ms:.2f} ms | {cost.wall_ms:.2f} ms | "
                      f"{cost.voluntary:.0f} / {cost.involuntary:.0f} | {failed} |", flush=True)
        print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
