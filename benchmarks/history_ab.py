"""The table history's share of a night: one fleet, audited into a long-lived warehouse and into a
new one, alternately (issue #20).

``benchmarks/nights.py`` measures night k against night 1, but night k's fleet is not night 1's:
sources wrote for k nights, kept more binary logs, gained and lost servers. This script holds the
fleet still and changes only the warehouse. Given a work directory that ``nights.py --keep`` left
(its ``state.json`` names the fleet of its last night), it serves that fleet from the simulator
and runs ``gtid-audit run`` for the day after the last night, as ``nights.py`` would:

- **year**: into a copy of the run's warehouse (every night's tables, their maintenance, their
  Delta logs aged as a calendar would age them);
- **fresh**: into a copy of a warehouse that holds one night only: the same fleet, audited on
  the last night's date into an empty warehouse (built once, first). A fresh warehouse's first
  night probes every server and has no previous run, so the measured night is its second.

The two alternate (``--rounds`` times each, in the order year, fresh, fresh, year, ...), on
copies, so that every round starts from the same tables. Per run it prints the wall time, the
driver's peak RSS (and the phase it was reached in) and the night's phases from the job's log:
start-up to the first read, collection (reads and snapshot writes), the audit, the maintenance,
and the rest (the report's process and the exit). The difference of the two is the share of the
table history alone, under the same load and the same fleet.

With ``--first-fleet``, the run's first night's fleet (generated again from the run's seed and
aged by its ``--fleet-age``, as nights.py made it) is measured the same way, on its second night
into a one-night warehouse: beside "fresh", the share of a year of changes to the fleet, since
night 1 itself (no previous run, every server probed) is not the same kind of night as any later
one.

Usage: python benchmarks/history_ab.py --keep /path/to/nights-run [--rounds 2] [--first-fleet]
The figures are recorded in docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nights import _night_config, _run_id, age_logs, first_fleet, run_night  # noqa: E402 - benchmarks/nights.py
from jobs.sandbox.sim import Simulator  # noqa: E402
from jobs.sandbox.sim.model import SimFleet  # noqa: E402
from jobs.sandbox.sim.score import read_findings, score  # noqa: E402

_STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) ")


def phases(log: Path, start: dt.datetime) -> dict[str, float]:
    """Seconds of each phase of one night, from the timestamps of the job's log lines (the
    driver's clock, which the run moved to ``start`` and let tick)."""
    marks: dict[str, dt.datetime] = {}
    last = None
    for line in log.read_text(errors="replace").splitlines():
        m = _STAMP.match(line)
        if not m:
            continue
        at = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.timezone.utc)
        last = at
        if "gtid_audit.collect: collect: MySQL protocol" in line:
            marks.setdefault("collect_start", at)
        elif "gtid_audit.pipeline: collect run_id=" in line:
            marks["collect_end"] = at
        elif "gtid_audit.audit: auditing run" in line:
            marks["audit_start"] = at
        elif "gtid_audit.audit: run " in line and "open finding" in line:
            marks["audit_end"] = at
    out = {}
    if "collect_start" in marks:
        out["start-up"] = (marks["collect_start"] - start).total_seconds()
    if "collect_end" in marks and "collect_start" in marks:
        out["collect"] = (marks["collect_end"] - marks["collect_start"]).total_seconds()
    if "audit_end" in marks and "audit_start" in marks:
        out["audit"] = (marks["audit_end"] - marks["audit_start"]).total_seconds()
    if "audit_end" in marks and last is not None:
        out["maintain"] = (last - marks["audit_end"]).total_seconds()
    return out


def phase_at(row: dict, seconds: float) -> str:
    """The phase of ``row`` (from :func:`phases`) that was running ``seconds`` after the start."""
    at = 0.0
    for key in ("start-up", "collect", "audit", "maintain"):
        at += row.get(key, 0.0)
        if seconds <= at:
            return key
    return "after"


def _one_night_warehouse(fleet: SimFleet, ab: Path, name: str, state: dict, day: dt.date, night: int) -> Path:
    """``ab/name``: ``fleet`` audited on ``day`` into an empty warehouse (built once), its Delta
    log then aged by a day as nights.py ages it after a night."""
    base = ab / name
    if (base / "runs").exists():
        return base
    shutil.rmtree(base, ignore_errors=True)
    config = _night_config(fleet, ab, base, state["retention"], state["log_retention_days"])
    when = dt.datetime.combine(day, dt.time(2, 0), dt.timezone.utc)
    wall, rc, _ = run_night(config, when, _run_id(day, night), ab / f"{name}.log")
    if rc not in (0, 2):
        raise SystemExit(f"{name}: the first night exited {rc}; see {ab / f'{name}.log'}")
    age_logs(base, 86_400)
    print(f"{name}: the fleet audited into an empty warehouse in {wall:.1f} s (a first night: probes, no "
          f"previous run)", flush=True)
    return base


def _measure(kind: str, i: int, fleet: SimFleet, source: Path, ab: Path, state: dict, day: dt.date,
             night: int) -> dict:
    """One night of ``fleet`` on ``day`` into a copy of warehouse ``source``: its figures."""
    warehouse = ab / f"warehouse-{kind}"
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.copytree(source, warehouse, copy_function=shutil.copy2)
    config = _night_config(fleet, ab, warehouse, state["retention"], state["log_retention_days"])
    when = dt.datetime.combine(day, dt.time(2, 0), dt.timezone.utc)
    run_id = _run_id(day, night)
    load = os.getloadavg()[0]
    log = ab / f"{kind}-{i}.log"
    wall, rc, peaks = run_night(config, when, run_id, log)
    if rc not in (0, 2):
        raise SystemExit(f"{kind} run {i}: gtid-audit run exited {rc}; see {log}")
    s = score(fleet.truth, read_findings(warehouse, run_id))
    row = {"kind": kind, "wall": wall, "driver_rss": peaks.driver, "load_before": load,
           "recall": s.recall, "false_positives": len(s.false_positives), **phases(log, when)}
    row["report and exit"] = wall - sum(row.get(k, 0.0) for k in ("start-up", "collect", "audit", "maintain"))
    row["driver_peak_s"] = peaks.driver_peak_s
    row["driver_peak_in"] = phase_at(row, peaks.driver_peak_s)
    row.update(workers_rss=peaks.workers, workers_pss=peaks.workers_pss, workers_at_peak=peaks.workers_n,
               workers_peak_in=phase_at(row, peaks.workers_peak_s))
    print(f"{kind:11s} wall {wall:6.1f} s  driver {peaks.driver / 2**20:4.0f} MB "
          f"(at {peaks.driver_peak_s:.0f} s, {row['driver_peak_in']})  "
          f"workers {peaks.workers / 2**20:4.0f} MB RSS, {peaks.workers_pss / 2**20:4.0f} MB PSS "
          f"({peaks.workers_n} processes, {row['workers_peak_in']})  "
          + "  ".join(f"{k} {row[k]:5.1f} s" for k in PHASES if k in row)
          + f"  recall {100 * s.recall:.0f} %  false positives {len(s.false_positives)}  load {load:.1f}",
          flush=True)
    with (ab / "results.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")
    shutil.rmtree(warehouse, ignore_errors=True)
    return row


PHASES = ("start-up", "collect", "audit", "maintain", "report and exit")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keep", type=Path, required=True, help="the work directory of a nights.py run")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--first-fleet", action="store_true",
                   help="also the run's first night's fleet (generated again from its seed and aged by its "
                        "--fleet-age), on its second "
                        "night into a one-night warehouse: the fleet's share, beside the tables'")
    args = p.parse_args(argv)
    work = args.keep
    state_path = work / "state.json"
    if not state_path.exists():
        p.error(f"{work} holds no nights.py run (no state.json)")
    if args.rounds < 1:
        p.error(f"--rounds must be at least 1, not {args.rounds!r}")
    state = json.loads(state_path.read_text())
    first_day = dt.date.fromisoformat(state["first_day"])
    last_night = state["night_done"]
    last_day = first_day + dt.timedelta(days=last_night - 1)
    day, night = last_day + dt.timedelta(days=1), last_night + 1
    fleet = SimFleet.load(work / state["fleet_file"])
    ab = work / "history-ab"
    ab.mkdir(exist_ok=True)
    results: dict[str, list[dict]] = {"year": [], "fresh": [], "first-fleet": []}
    sim = Simulator(work / state["fleet_file"], processes=state["processes"], lifetime_s=4 * 3600, workdir=ab).start()
    try:
        fresh_base = _one_night_warehouse(fleet, ab, "fresh-base", state, last_day, last_night)
        for r in range(args.rounds):
            for i, kind in enumerate(["year", "fresh"] if r % 2 == 0 else ["fresh", "year"]):
                results[kind].append(_measure(kind, 2 * r + i, fleet, work / "warehouse" if kind == "year"
                                              else fresh_base, ab, state, day, night))
    finally:
        sim.stop()
    if args.first_fleet:
        first = first_fleet(state["servers"], state["seed"], state.get("fleet_age", 0))  # as nights.py made it
        first.save(ab / "fleet-001.json")
        sim = Simulator(ab / "fleet-001.json", processes=state["processes"], lifetime_s=4 * 3600, workdir=ab).start()
        try:
            base = _one_night_warehouse(first, ab, "first-fleet-base", state, last_day, last_night)
            for r in range(args.rounds):
                results["first-fleet"].append(_measure("first-fleet", r, first, base, ab, state, day, night))
        finally:
            sim.stop()
    print()
    kinds = [k for k in ("year", "fresh", "first-fleet") if results[k]]
    titles = {"year": "last night's fleet, the year's warehouse", "fresh": "last night's fleet, one night's warehouse",
              "first-fleet": "night 1's fleet, one night's warehouse"}
    print("| phase (median) | " + " | ".join(titles[k] for k in kinds) + " | the year's tables' share |")
    print("|---|" + "---:|" * (len(kinds) + 1))
    for key in ("wall",) + PHASES:
        med = {k: statistics.median(r[key] for r in results[k]) for k in kinds if all(key in r for r in results[k])}
        if len(med) == len(kinds):
            print(f"| {key} | " + " | ".join(f"{med[k]:.1f} s" for k in kinds)
                  + f" | {med['year'] - med['fresh']:+.1f} s |")
    for key, title in (("driver_rss", "driver peak RSS"), ("workers_rss", "Python workers' peak RSS, summed"),
                       ("workers_pss", "Python workers' peak PSS, summed")):
        med = {k: statistics.median(r[key] for r in results[k]) / 2**20 for k in kinds}
        print(f"| {title} | " + " | ".join(f"{med[k]:.0f} MB" for k in kinds)
              + f" | {med['year'] - med['fresh']:+.0f} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
