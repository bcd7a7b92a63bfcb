"""The job's read task in Spark's own Python workers, its rows handed over three ways: where the
workers' extra CPU in a night comes from (issue #21, stop 64).

``benchmarks/read_task_cpu.py`` found the read task, PySpark's per-row work included, as cheap as
the bare read in one process without a JVM (2.1-2.5 ms a server); in a night of
``benchmarks/scale_fleet.py`` the Python workers spend 3.2-3.6 ms. This runs the same task in a
Spark session built as the job builds it (``jobs.spark.build_session``: ``local[*]``, delta-spark,
the class archive where one was built) on simulated 9.7.4 groups (a source and two replicas each,
no TLS), as the job runs it: the planned groups spread over ``--tasks`` tasks of ``--threads``
threads (``jobs.collect._bundles``), each measurement ``--passes`` reads of every server, and its
rows go, alternating:

* ``Python only``: counted in the worker (``.map(...).sum()``), nothing handed to the JVM but one
  number a task;
* ``noop write``: ``createDataFrame(rows, staging_schema())`` written to Spark's ``noop`` format:
  the rows verified, converted, pickled, sent to the JVM and made Spark rows there, no file;
* ``staging (Delta)``: ``jobs.read_staging.stage_reads``, the job's own write of the staging
  table.

Client CPU per server read, by process: the Spark workers (every Python process under the JVM),
the JVM (of it, its JIT compiler threads) and this driver, from ``/proc`` (``scale_fleet.TreeCpu``);
one warm-up run of each way first, so the figures are a warm JVM's and workers' (a night's first
minutes also pay for the JIT's warm-up). The simulator is a child of this process, outside the
figures.

Usage: python benchmarks/read_task_spark.py [--clusters 20] [--passes 100] [--tasks 2]
[--threads 32] [--rounds 3] [--only python|noop|delta]. Figures: docs/benchmarks.md ("C1 only with
its code cache", "The read task in Spark's own workers").
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from read_floor import planned_reads, simulated_groups  # noqa: E402  benchmarks/, beside this script
from scale_fleet import TreeCpu  # noqa: E402

WAYS = {"python": "Python only", "noop": "noop write", "delta": "staging (Delta)"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clusters", type=int, default=20, help="simulated 9.7.4 groups of 3 servers")
    p.add_argument("--passes", type=int, default=100, help="reads of the whole fleet per measurement")
    p.add_argument("--tasks", type=int, default=2, help="tasks per measurement (the job: 64 // threads)")
    p.add_argument("--threads", type=int, default=32, help="per_task_concurrency (the job's local[2] default: 32)")
    p.add_argument("--latency", default="1-3", help="the simulator's per-statement latency in ms")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", choices=sorted(WAYS), help="measure one way only")
    args = p.parse_args(argv)

    from jobs import read_staging
    from jobs.collect import _bundles
    from jobs.config import SparkSettings
    from jobs.spark import build_session

    scratch = Path(tempfile.mkdtemp(prefix="gtid-read-task-spark-"))
    try:
        with simulated_groups(args.clusters, args.latency, "gtid-read-task-spark-sim-") as (specs, _):
            ctx, groups, inventory = planned_reads(specs, args.threads)
            spark = build_session(SparkSettings())
            sc = spark.sparkContext
            task = functools.partial(read_staging.staged_partition, ctx=ctx, inventory=sc.broadcast(inventory))
            bundles = _bundles(groups * args.passes, args.tasks)
            uri = str(scratch / "staging")

            def rows():
                return sc.parallelize(bundles, args.tasks).mapPartitions(task)

            def python_only():
                return rows().map(lambda row: row[0] == "collection_errors").sum()

            def noop():
                spark.createDataFrame(rows(), schema=read_staging.staging_schema()) \
                    .write.format("noop").mode("overwrite").save()

            def delta():
                read_staging.stage_reads(spark, rows(), uri)

            runs = {"python": python_only, "noop": noop, "delta": delta}
            if args.only:
                runs = {args.only: runs[args.only]}
            for run in runs.values():   # warm up: the workers' imports, the JVM's JIT
                run()
            meter = TreeCpu(os.getpid())
            reads = len(specs) * args.passes
            print(f"cores {os.cpu_count()}  load average before {os.getloadavg()[0]:.2f}  servers {len(specs)}  "
                  f"reads per measurement {reads}  tasks {args.tasks} x {args.threads} threads  "
                  f"latency {args.latency} ms  master {sc.master}")
            print("| round | rows to | client CPU per server | Python workers | JVM (of it JIT) | driver | "
                  "wall per server | failed reads |")
            print("|---:|---|---:|---:|---:|---:|---:|---:|")
            for r in range(1, args.rounds + 1):
                for way, run in runs.items():
                    before, t0 = meter.sample(), time.perf_counter()
                    failed = run()
                    wall, after = time.perf_counter() - t0, meter.sample()
                    ms = {k: 1000 * (after[k] - before[k]) / reads for k in after}
                    failed = "" if failed is None else failed
                    print(f"| {r} | {WAYS[way]} | {ms['workers'] + ms['jvm'] + ms['driver']:.2f} ms | "
                          f"{ms['workers']:.2f} ms | {ms['jvm']:.2f} ms ({ms['jit']:.2f} ms) | {ms['driver']:.2f} ms | "
                          f"{1000 * wall / reads:.2f} ms | {failed} |", flush=True)
            print(f"load average after {os.getloadavg()[0]:.2f}")
            spark.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
