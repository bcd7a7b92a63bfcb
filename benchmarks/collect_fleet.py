"""Time `gtid-audit collect` against fleet size and concurrency on real sandbox servers.

Starts one sandbox fleet of PAIRS source->replica pairs (default 4 pairs = 8 servers, small
enough for 2 cores), then for each inventory size (the first N servers, pairs kept together) and
each (concurrency, per_task_concurrency) setting (after FLUSH BINARY LOGS --binlogs times on
every server, so that each read runs some 50 statements) runs a full collection (probe stage, read
stage, six delta-spark commits from the executors) REPS times and prints the best and median
wall-clock seconds as a markdown table.

Usage: python benchmarks/collect_fleet.py [--pairs 4] [--reps 3] [--sizes 2,4,8]
The figures are recorded in docs/benchmarks.md (section "Collection").
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import yaml  # noqa: E402

from jobs.collect import run_collect  # noqa: E402
from jobs.config import SparkSettings, parse_config  # noqa: E402
from jobs.sandbox.fleet import Fleet, Topology  # noqa: E402
from jobs.sandbox.installer import ensure_mysql  # noqa: E402
from jobs.spark import LOCAL_TEST_CONF, build_session  # noqa: E402

SETTINGS = [(1, 1), (2, 1), (4, 2), (8, 4)]  # (concurrency, per_task_concurrency)


def topology(pairs: int) -> dict:
    servers, channels = [], []
    for i in range(pairs):
        servers += [{"name": f"s{i}", "cluster": f"c{i}"}, {"name": f"r{i}", "cluster": f"c{i}"}]
        channels.append({"replica": f"r{i}", "source": f"s{i}"})
    return {"name": "bench", "servers": servers, "channels": channels}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="2,4,8")
    ap.add_argument("--binlogs", type=int, default=40,
                    help="FLUSH BINARY LOGS this many times per server: each file costs one "
                         "SHOW BINLOG EVENTS, which makes a server read realistic (default 40)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if int(s) <= 2 * args.pairs]

    work = Path(tempfile.mkdtemp(prefix="gta-bench-collect-"))
    t0 = time.monotonic()
    fleet = Fleet.up(Topology.load(topology(args.pairs)), work / "fleet", dist=ensure_mysql())
    print(f"fleet of {2 * args.pairs} servers up in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    for server in fleet.servers.values():
        server.execute(*["FLUSH BINARY LOGS"] * args.binlogs)
    spark = build_session(SparkSettings(master="local[2]", app_name="bench-collect", conf=dict(LOCAL_TEST_CONF)))
    spark.sparkContext.setLogLevel("ERROR")
    try:
        base = yaml.safe_load(fleet.write_audit_config(work / "conf.yaml", warehouse=str(work / "wh")).read_text())
        print(f"\nhost: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Spark local[2], "
              f"delta-spark writer, MySQL 9.7 sandbox, {args.binlogs + 1}+ binary logs per server, "
              f"best/median of {args.reps} runs\n")
        print("| servers | concurrency | per task | best s | median s |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        run = 0
        for n in sizes:
            for conc, per_task in SETTINGS:
                data = dict(base, servers=base["servers"][:n],
                            collection={"concurrency": conc, "per_task_concurrency": per_task})
                config = parse_config(data, str(work / "conf.yaml"))
                totals = []
                for _ in range(args.reps):
                    run += 1
                    summary = run_collect(spark, config, run_id=f"bench-{run}")
                    assert summary.servers_ok == n, summary.line()
                    totals.append(summary.seconds)
                print(f"| {n} | {conc} | {per_task} | {min(totals):.2f} | {statistics.median(totals):.2f} |",
                      flush=True)
    finally:
        fleet.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
