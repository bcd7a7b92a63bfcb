"""`gtid-audit run` against N simulated servers (issue #12).

Generates a simulated fleet (jobs/sandbox/sim: 5.6 to 9.7 shapes, clusters, chains, multi-source
replicas) with 1 % collection faults and 2 % consistency faults, serves it over the MySQL wire
protocol from simulator processes on this machine, then runs the nightly job's CLI exactly as a
user would (`gtid-audit run`: collect, audit and report in one Spark session) and prints:

* wall time of the whole command, and of collect and of audit as the job recorded them
  (`run_summary.collect_seconds` / `audit_seconds`; the rest is JVM start and the report);
* the floor of collection: statements per reachable server (counted by the simulator) x mean
  latency x N / collection concurrency, and the ratio of the collect time to it; COM_PINGs and
  connections per server are counted too (each is a round trip with the same latency);
* peak RSS, sampled every 0.2 s, of the driver's Python process, of its JVM (in local mode the
  executors live in that JVM) and of the Python workers Spark starts (where the reads run),
  over the whole run and per phase (collect, audit, report);
* the simulator's CPU seconds during the run, as a share of the run's wall time x cores (the
  part of the machine the job did not have);
* recall and false positives of the open findings against the model's truth.

Usage: python benchmarks/scale_fleet.py --servers 1000 [--processes 2] [--latency 1-3]
       [--concurrency N] [--per-task-concurrency N] [--seed 1] [--keep DIR]
The figures are recorded in docs/benchmarks.md (section "Fleet scale").
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from procs import children, rss_and_cmdline  # benchmarks/procs.py, beside this script

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.sandbox.sim import Simulator, generate  # noqa: E402
from jobs.sandbox.sim.score import read_findings, score  # noqa: E402
from jobs.sandbox.sim.server import Latency  # noqa: E402


class PeakRss:
    """Peak RSS of a process tree by role (driver Python, JVM, Spark's Python workers), overall
    and per phase of the night: :meth:`mark` starts the next phase."""

    def __init__(self, pid: int):
        self.pid, self.peak = pid, {"driver": 0, "jvm": 0, "workers": 0}
        self.phase = "collect"
        self.by_phase: dict[str, dict[str, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def mark(self, phase: str) -> None:
        self.phase = phase

    def _run(self) -> None:
        while not self._stop.is_set():
            now = {"driver": rss_and_cmdline(self.pid)[0], "jvm": 0, "workers": 0}
            for child in children(self.pid):
                rss, cmd = rss_and_cmdline(child)
                now["jvm" if "java" in cmd.split(" ")[0] else "workers"] += rss
            phase = self.by_phase.setdefault(self.phase, {"driver": 0, "jvm": 0, "workers": 0})
            for k, v in now.items():
                self.peak[k] = max(self.peak[k], v)
                phase[k] = max(phase[k], v)
            self._stop.wait(0.2)

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join()
        return self.peak


def _run(argv: list[str]) -> tuple[float, PeakRss, int]:
    """Run the job's CLI; the phases are told apart by its output: the collect summary line in
    the log (stderr) ends collect, the printed outcome (stdout) ends audit, ``report:`` the report."""
    start = time.monotonic()
    # unbuffered: the phase marks are the job's output lines, read as they are written
    proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    rss = PeakRss(proc.pid)
    err: list[str] = []

    def follow_stderr() -> None:
        for line in proc.stderr:
            err.append(line)
            if "collect run_id=" in line:
                rss.mark("audit")

    reader = threading.Thread(target=follow_stderr, daemon=True)
    reader.start()
    for line in proc.stdout:
        rss.mark("report" if not line.startswith("report:") else "exit")
    proc.wait()
    reader.join()
    rss.stop()
    if proc.returncode not in (0, 2):
        print("".join(err)[-3000:], file=sys.stderr)
    return time.monotonic() - start, rss, proc.returncode


def _run_summary(warehouse: Path, run_id: str) -> dict:
    from jobs.delta_io import read_arrow

    rows = read_arrow(str(warehouse), "run_summary", run_id).to_pylist()
    return rows[0] if rows else {}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", type=int, default=100)
    p.add_argument("--processes", type=int, default=None, help="simulator processes (default: 1 per 2,500 servers)")
    p.add_argument("--latency", default="1-3", help="per-statement latency in ms, e.g. 1-3")
    p.add_argument("--concurrency", type=int, default=None, help="collection.concurrency (default: the job's)")
    p.add_argument("--per-task-concurrency", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, default=None, help="keep the work directory here")
    args = p.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="gtid-sim-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    fleet = generate(args.servers, seed=args.seed)
    fleet.save(work / "fleet.json")
    collection = {}
    if args.concurrency:
        collection["concurrency"] = args.concurrency
    if args.per_task_concurrency:
        collection["per_task_concurrency"] = args.per_task_concurrency
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "warehouse"),
                                      password_file=work / "password", collection=collection or None,
                                      connect_timeout_s=5, read_timeout_s=10)
    from jobs.config import load_config

    settings = load_config(config).collection
    concurrency = settings.concurrency
    processes = args.processes or max(1, -(-args.servers // 2500))
    latency = Latency.parse(args.latency)
    run_id = f"scale-{args.servers}-{int(time.time())}"
    sim = Simulator(work / "fleet.json", processes=processes, lifetime_s=3600, latency=latency, workdir=work)
    sim.start()
    try:
        cpu0 = sim.cpu_now()
        total_s, sampler, rc = _run(["run", "--config", str(config), "--run-id", run_id, "--fail-on", "never"])
        sim_cpu = sim.cpu_now() - cpu0
        rss = sampler.peak
    finally:
        sim.stop()
    stats = sim.stats()
    summary = _run_summary(work / "warehouse", run_id)
    collect_s, audit_s = summary.get("collect_seconds") or 0.0, summary.get("audit_seconds") or 0.0
    findings = read_findings(work / "warehouse")
    s = score(fleet.truth, findings)
    refused = sum(1 for x in fleet.servers if x.fault in ("refused", "silent"))
    reachable = max(1, args.servers - refused)
    per_server = stats["statements"] / reachable
    pings = stats.get("pings", 0) / reachable
    floor = per_server * latency.mean() * args.servers / concurrency
    cores = os.cpu_count() or 1
    mb = lambda b: f"{b / 2**20:,.0f} MB"  # noqa: E731
    print(f"servers {args.servers}  simulator processes {processes}  latency {latency.spec()} ms  "
          f"concurrency {concurrency} (per task {settings.per_task_concurrency})  exit code {rc}  "
          f"pairs {summary.get('pairs_audited')}")
    print("| servers | run (wall) | collect | audit | statements/server | COM_PING/server | connections/server | "
          "floor | collect/floor | driver RSS | JVM RSS | Python workers RSS | simulator CPU | recall | "
          "false positives |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.servers:,} | {total_s:.1f} s | {collect_s:.1f} s | {audit_s:.1f} s | {per_server:.1f} | "
          f"{pings:.1f} | {stats['connections'] / reachable:.2f} | {floor:.1f} s | {collect_s / floor:.1f}x | "
          f"{mb(rss['driver'])} | {mb(rss['jvm'])} | {mb(rss['workers'])} | {sim_cpu:.1f} s "
          f"({100 * sim_cpu / (total_s * cores):.1f} % of {cores} cores) | {100 * s.recall:.1f} % "
          f"({len(s.expected) - len(s.missed)}/{len(s.expected)}) | {len(s.false_positives)} |")
    print("peak RSS by phase: " + "; ".join(
        f"{phase}: driver {mb(v['driver'])}, JVM {mb(v['jvm'])}, Python workers {mb(v['workers'])}"
        for phase, v in sampler.by_phase.items() if phase != "exit"))
    for item in sorted(s.missed):
        print("missed:", item)
    for item in sorted(s.false_positives):
        print("false positive:", item)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
