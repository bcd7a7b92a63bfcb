"""Differential run of the failover model against real promotions on MySQL 9.7 (issue 18).

Starts a pool of six sandbox servers, runs ``--promotions`` trials with seeds ``--seed``,
``--seed + 1``, ... (``jobs/sandbox/failover_differential.py``: a random fleet and faults, the
collector's read, the model's prediction, a real promotion, the comparison), prints one line per
trial and a summary (trials, agreements, disagreements by kind, wall time), and writes every trial
as one JSON object per line to ``--out``. Bounded: it stops after ``--max-minutes`` even if trials
remain, and every wait inside a trial is bounded. A disagreement is reproduced with
``--seed <its seed> --promotions 1``.

Usage: python benchmarks/failover_differential.py --promotions 200 --seed 1000 --out diff.jsonl
Exit code: 0 when every compared trial agrees, 1 otherwise, 2 when no trial could be compared.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.sandbox.failover_differential import ServerPool, run_trial, summarize, trial_line  # noqa: E402
from jobs.sandbox.installer import ensure_mysql  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--promotions", type=int, default=200, help="number of trials (default 200)")
    parser.add_argument("--seed", type=int, default=1000, help="seed of the first trial (default 1000)")
    parser.add_argument("--out", type=Path, required=True, help="JSON lines file, one trial a line")
    parser.add_argument("--max-minutes", type=float, default=45.0, help="stop starting trials after this")
    parser.add_argument("--workdir", type=Path, default=None, help="pool directory (default: a temporary one)")
    args = parser.parse_args(argv)
    if args.promotions < 1:
        parser.error(f"--promotions must be at least 1, got {args.promotions!r}")

    dist = ensure_mysql()
    import gtid_core.failover as model
    print(f"MySQL {dist.version}, {os.cpu_count()} cores, model {model.__file__} "
          f"(FAILOVER_MODEL_VERSION {model.FAILOVER_MODEL_VERSION})", flush=True)
    started = time.monotonic()
    records = []
    with tempfile.TemporaryDirectory(prefix="gta-diff-") as tmp:
        workdir = args.workdir or Path(tmp)
        t0 = time.monotonic()
        with ServerPool.up(workdir, dist=dist) as pool:
            print(f"pool of {len(pool.fleet.servers)} servers up in {time.monotonic() - t0:.1f} s", flush=True)
            with open(args.out, "w") as out:
                for seed in range(args.seed, args.seed + args.promotions):
                    if time.monotonic() - started > args.max_minutes * 60:
                        print(f"stopping: --max-minutes {args.max_minutes} reached", flush=True)
                        break
                    record = run_trial(pool, seed)
                    records.append(record)
                    out.write(json.dumps(record, default=str, sort_keys=True) + "\n")
                    out.flush()
                    print(trial_line(record), flush=True)
            restarts = pool.restarts
    summary = summarize(records, time.monotonic() - started)
    summary["pool_restarts"] = restarts
    print(json.dumps(summary, indent=2))
    if not summary["compared"]:
        return 2
    return 0 if summary["disagreements"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
