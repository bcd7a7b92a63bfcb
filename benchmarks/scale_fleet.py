"""`gtid-audit run` against N simulated servers, night after night (issues #12, #21).

Generates a simulated fleet (jobs/sandbox/sim: 5.6 to 9.7 shapes, clusters, chains, multi-source
replicas) with 1 % collection faults and 2 % consistency faults, serves it over the MySQL wire
protocol from simulator processes on this machine, then runs the nightly job's CLI exactly as a
user would (`gtid-audit run`: collect, audit and report in one Spark session) ``--nights`` times
against the same fleet and the same warehouse (each night a separate run with its own run id,
so the 2nd and later nights can plan from the previous night's tables). It prints one row per
night:

* wall time of the whole command, and of collect and of audit as the job recorded them
  (`run_summary.collect_seconds` / `audit_seconds`; the rest is JVM start and the report);
* the floor of collection: statements per reachable server (counted by the simulator) x mean
  latency x N / collection concurrency, and the ratio of the collect time to it; COM_PINGs,
  connections and round trips per reachable server are counted too (each round trip has the
  same latency; how a handshake is counted: jobs/sandbox/sim/server.py, `_HandshakeStream`);
* client CPU seconds of the collection phases (probe, read, reread; `collect` as a whole for a
  job that prints no phase lines), in total and per server of the fleet, and the Python
  workers' share of it (where the reads run);
* peak RSS, sampled every 0.2 s and at each phase mark, of the driver's Python process, of its
  JVM (in local mode the executors live in that JVM) and of the other processes (Spark's Python
  workers, where the reads run, and the report process), over the whole run and per phase;
* the simulator's CPU seconds during the run, as a share of the run's wall time x cores (the
  part of the machine the job did not have);
* recall and false positives of that night's open findings against the model's truth;

and one row per night and phase: the job's phases are told apart by its output (a
``collect phase=<probe|read|reread> servers=<n> seconds=<s>`` line ends each collection phase,
the collect summary line ends ``collect-rest``, the audit's last log line ends audit, the
printed outcome ends maintain (``maintenance.after_run``), ``report:`` the report; with
``--keep`` each night's log is kept there as ``night-N.log``, its printed output as
``night-N.out``); ``start`` is what comes before
the first collection phase (JVM start, session, configuration, inventory, and on later nights
planning from the previous tables until a phase begins by the job's count). For each: wall time, the job's own seconds and servers, client CPU
seconds by process (utime + stime from /proc/<pid>/stat of the job's process tree at the phase
marks: driver, JVM with the part of its JIT compiler threads, Python workers, other) and per
server of the fleet, and per reachable server the statements, COM_PINGs, handshake round
trips, round trips and connections the simulator served in it (its counters are snapshotted at
each mark: `Simulator.snapshot`).

Usage: python benchmarks/scale_fleet.py --servers 1000 [--nights 2] [--processes 2] [--latency 1-3]
       [--concurrency N] [--per-task-concurrency N] [--seed 1] [--keep DIR]
The figures are recorded in docs/benchmarks.md (section "Fleet scale").
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from procs import children, ignores_sigchld, rss_and_cmdline, thread_cpu  # benchmarks/procs.py, beside this script

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.sandbox.sim import Simulator, generate  # noqa: E402
from jobs.sandbox.sim.score import Score, read_findings, score  # noqa: E402
from jobs.sandbox.sim.server import Latency  # noqa: E402


#: ``collect phase=<name> servers=<n> seconds=<s>``: the job's line at the end of a collection
#: phase (probe, read, reread); older versions of the job print none.
PHASE_LINE = re.compile(r"collect phase=(\S+) servers=(\d+) seconds=([0-9.]+)")
ROLES = ("driver", "jvm", "workers", "other")
#: The JVM's JIT compiler threads (HotSpot names them ``C1 CompilerThreadN`` / ``C2 CompilerThreadN``):
#: their CPU is shown apart as ``jit``, a part of ``jvm``, not a role of its own.
JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, own CPU seconds, CPU seconds of its reaped children) from /proc/<pid>/stat:
    utime + stime, cutime + cstime; None once it has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, (int(fields[13]) + int(fields[14])) / TICK


def _is_jvm(cmd: str) -> bool:
    return "java" in cmd.split(" ")[0]


def _tree(root: int) -> dict[int, tuple[str, int, float]]:
    """Every descendant of ``root`` still there: pid -> (role, parent pid, CPU seconds of it and
    of the children it has reaped: utime + stime + cutime + cstime). Roles: ``jvm`` (a java
    process and the helpers it runs, such as Hadoop's shell commands), ``workers`` (a Python
    process under the JVM: Spark's Python workers and their daemon), ``other`` (anything else
    the driver started: the report process)."""
    procs = {}
    for pid in children(root):
        st = _stat(pid)
        if st is not None:
            procs[pid] = (st, rss_and_cmdline(pid)[1])
    jvms = {pid for pid, (_, cmd) in procs.items() if _is_jvm(cmd)}
    out = {}
    for pid, ((ppid, own, reaped), cmd) in procs.items():
        role, up = ("jvm" if pid in jvms else "other"), pid
        while role == "other" and up in procs:
            up = procs[up][0][0]
            if up in jvms:
                role = "workers" if "python" in cmd.split(" ")[0] else "jvm"
        # an exiting process (a zombie) has no command line: its role is the one it had (None here)
        out[pid] = (role if cmd else None, ppid, own + reaped)
    return out


class TreeCpu:
    """CPU seconds used so far by the job's process tree, by role: the driver's Python (``root``)
    and the roles of :func:`_tree`, read from /proc/<pid>/stat at each :meth:`sample`.

    A process counts with the children it has reaped, so the CPU of one that has exited is not
    lost: it shows up in its parent's cutime. So that it stays with its own role (a Python worker
    reaped by the JVM is still worker CPU), a process seen at one sample and gone at the next
    keeps its last sampled CPU, and that much is taken from its parent's role if the parent is
    still there (it reaped it); only what it used after its last sample counts for the parent.
    One whose parent has gone too was reaped outside the tree, and one whose parent ignores
    SIGCHLD was reaped by the kernel (Spark's Python daemon and its workers): its last sample
    stays, and nothing is taken from the parent, whose cutime never gets it. The driver's
    reaped children count as ``other``. An exiting process (a zombie: no command line) keeps the
    role it had, so a Python worker at its last sample is no JVM helper.

    ``jit`` (not a role: a part of ``jvm``) is the CPU of the JVM's JIT compiler threads; a
    compiler thread that exits (HotSpot starts and stops them as the compile queue grows and
    shrinks) keeps its last sampled CPU."""

    def __init__(self, root: int):
        self.root = root
        self.seen: dict[int, tuple[str, int, float]] = {}   # pid -> (role, parent pid, CPU s)
        self.moved = dict.fromkeys(ROLES, 0.0)
        self.jit_seen: dict[tuple[int, int], float] = {}    # (pid, tid) -> CPU s
        self.jit_gone = 0.0

    def sample(self) -> dict[str, float]:
        cpu = dict.fromkeys(ROLES, 0.0)
        top = _stat(self.root)
        tree = _tree(self.root) if top is not None else {}
        for pid in self.seen.keys() - tree.keys():
            role, ppid, last = self.seen.pop(pid)
            self.moved[role] += last
            if ignores_sigchld(ppid):
                continue
            if ppid == self.root and top is not None:
                self.moved["other"] -= last
            elif ppid in tree:
                self.moved[self.seen[ppid][0] if ppid in self.seen else (tree[ppid][0] or "other")] -= last
        for pid, (role, ppid, used) in tree.items():
            # an exiting one (a zombie) has an empty command line: it keeps the role it had, or a
            # Python worker would pass for a JVM helper at its last sample (a process that execs,
            # such as spark-submit's shell becoming the JVM, takes its new role)
            if role is None:
                role = self.seen[pid][0] if pid in self.seen else "other"
            self.seen[pid] = (role, ppid, used)
            cpu[role] += used
        if top is not None:
            cpu["driver"] += top[1]
            cpu["other"] += top[2]
        jit = {(pid, tid): used for pid, (role, _, _) in tree.items() if role == "jvm"
               for tid, used in thread_cpu(pid, JIT_THREADS).items()}
        self.jit_gone += sum(used for key, used in self.jit_seen.items() if key not in jit)
        self.jit_seen = jit
        return {**{k: v + self.moved[k] for k, v in cpu.items()}, "jit": self.jit_gone + sum(jit.values())}


@dataclass
class Phase:
    """One phase of a night, between two marks: wall seconds, client CPU seconds by role, the
    simulator's counters and CPU, and what the job's phase line said (servers, seconds), if it
    printed one."""

    name: str
    wall: float
    cpu: dict[str, float]
    wire: dict[str, int]
    sim_cpu: float
    collection: bool = False
    job_servers: int | None = None
    job_seconds: float | None = None

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu[k] for k in ROLES)


def round_trips(wire: dict[str, int]) -> int:
    """Statements + COM_PINGs + other answered commands + handshake round trips."""
    return wire["statements"] + wire["pings"] + wire.get("commands", 0) + wire.get("handshake_round_trips", 0)


class Meter:
    """Measures one run of the job, phase by phase: :meth:`end` closes the current phase and
    samples the process tree's CPU (:class:`TreeCpu`), the simulator's counters
    (:meth:`Simulator.snapshot`) and its CPU. Every 0.2 s a thread samples the tree's CPU (so
    that exited processes keep their role) and the peak RSS by role (driver Python, JVM,
    everything else: Spark's Python workers and the report process), overall and per phase.

    The first phase, ``start`` (JVM start, session, configuration, inventory), ends where the
    first collection phase began by the job's own count: the time of its line minus the
    ``seconds=`` it gives, with the CPU of the last sample before that instant (so within 0.2 s)
    and no wire traffic (the simulator counts none before collection)."""

    def __init__(self, pid: int, sim: Simulator):
        self.pid, self.sim = pid, sim
        self.cpu = TreeCpu(pid)
        self.peak = {"driver": 0, "jvm": 0, "workers": 0}
        self.by_phase: dict[str, dict[str, int]] = {}
        self.phases: list[Phase] = []
        self._rss = {"driver": 0, "jvm": 0, "workers": 0}
        # (time, CPU by role, simulator CPU, RSS by role) every 0.2 s until the first phase ends
        self._history: list[tuple[float, dict[str, float], float, dict[str, int]]] = []
        self._lock = threading.Lock()
        self._last = self._sample()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> tuple[float, dict[str, float], dict[str, int], float]:
        return time.monotonic(), self.cpu.sample(), self.sim.snapshot(), self.sim.cpu_now()

    def end(self, name: str, *, collection: bool = False, job_servers: int | None = None,
            job_seconds: float | None = None) -> None:
        """Close the current phase as ``name``; the job says it took ``job_seconds``."""
        with self._lock:
            now = self._sample()
            if not self.phases and job_seconds is not None:
                began = now[0] - job_seconds
                before = [h for h in self._history if self._last[0] < h[0] <= began]
                if before:
                    t, cpu, sim_cpu, _ = before[-1]
                    after = [h[3] for h in self._history if h[0] > began]
                    self._rss = _peaks(h[3] for h in before)
                    self._close("start", (t, cpu, self._last[2], sim_cpu), False, None, None)
                    self._rss = _peaks(after)
            # a phase shorter than the sampling interval still has its RSS at its end
            rss = self._rss_now()
            self._rss, self.peak = _peaks([self._rss, rss]), _peaks([self.peak, rss])
            self._close(name, now, collection, job_servers, job_seconds)
            self._history = []

    def _close(self, name: str, now: tuple, collection: bool, job_servers: int | None,
               job_seconds: float | None) -> None:
        t0, cpu0, wire0, sim0 = self._last
        cpu = {k: now[1][k] - cpu0[k] for k in (*ROLES, "jit")}
        wire = {k: v - wire0.get(k, 0) for k, v in now[2].items()}
        self.phases.append(Phase(name, now[0] - t0, cpu, wire, now[3] - sim0, collection, job_servers, job_seconds))
        peaks = self.by_phase.setdefault(name, {"driver": 0, "jvm": 0, "workers": 0})
        for k, v in self._rss.items():
            peaks[k] = max(peaks[k], v)
        self._rss = {"driver": 0, "jvm": 0, "workers": 0}
        self._last = now

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _rss_now(self) -> dict[str, int]:
        now = {"driver": rss_and_cmdline(self.pid)[0], "jvm": 0, "workers": 0}
        for child in children(self.pid):
            rss, cmd = rss_and_cmdline(child)
            now["jvm" if _is_jvm(cmd) else "workers"] += rss
        return now

    def _run(self) -> None:
        while not self._stop.is_set():
            now = self._rss_now()
            with self._lock:
                cpu = self.cpu.sample()
                if not self.phases:
                    self._history.append((time.monotonic(), cpu, self.sim.cpu_now(), now))
                for k, v in now.items():
                    self.peak[k] = max(self.peak[k], v)
                    self._rss[k] = max(self._rss[k], v)
            self._stop.wait(0.2)


def _peaks(samples) -> dict[str, int]:
    peaks = {"driver": 0, "jvm": 0, "workers": 0}
    for sample in samples:
        for k, v in sample.items():
            peaks[k] = max(peaks[k], v)
    return peaks


AUDIT_LINE = re.compile(r"gtid_audit\.audit: run \S+: \d+ open finding")


def _run(argv: list[str], sim: Simulator, log_file: Path | None = None) -> tuple[float, Meter, int]:
    """Run the job's CLI once, phase by phase. The phases are told apart by its output: each
    ``collect phase=...`` line ends that collection phase; the collect summary line in the log
    (stderr) ends collect (``collect``, or ``collect-rest`` after phase lines); the audit's last
    log line (``run <id>: N open finding(s) ...``) ends audit, the printed outcome ends maintain
    (``maintenance.after_run``: retention, OPTIMIZE, VACUUM), ``report:`` the report. The job's
    log is written to ``log_file`` when one is given, its standard output beside it (``.out``)."""
    start = time.monotonic()
    # unbuffered: the phase marks are the job's output lines, read as they are written
    proc = subprocess.Popen([sys.executable, "-m", "jobs.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    meter = Meter(proc.pid, sim)
    err: list[str] = []
    state = {"phase_lines": False, "collected": False, "audited": False, "maintained": False}
    lock = threading.Lock()

    def on_line(line: str, stream: str) -> None:
        with lock:
            m = PHASE_LINE.search(line)
            if m and not state["collected"]:
                state["phase_lines"] = True
                meter.end(m.group(1), collection=True, job_servers=int(m.group(2)), job_seconds=float(m.group(3)))
            elif stream == "stderr" and "collect run_id=" in line and not state["collected"]:
                state["collected"] = True
                seconds = re.search(r" seconds=([0-9.]+)", line)
                if state["phase_lines"]:
                    meter.end("collect-rest")
                else:   # a job without phase lines: collect is one phase
                    meter.end("collect", collection=True, job_seconds=float(seconds.group(1)) if seconds else None)
            elif stream == "stdout" and line.startswith("report:"):
                meter.end("report")
            elif stream == "stderr" and state["collected"] and not state["audited"] and AUDIT_LINE.search(line):
                state["audited"] = True
                meter.end("audit")
            elif stream == "stdout" and state["collected"] and not state["maintained"]:
                state["maintained"] = True
                if not state["audited"]:
                    # the audit's last log line, written before the outcome, is still in the stderr
                    # pipe (two readers): it must not end a second "audit"
                    state["audited"] = True
                    meter.end("audit")
                else:
                    meter.end("maintain")

    def follow_stderr() -> None:
        for line in proc.stderr:
            err.append(line)
            on_line(line, "stderr")

    reader = threading.Thread(target=follow_stderr, daemon=True)
    reader.start()
    out: list[str] = []
    for line in proc.stdout:
        out.append(line)
        on_line(line, "stdout")
    proc.wait()
    reader.join()
    meter.stop()
    if log_file is not None:
        log_file.write_text("".join(err))
        log_file.with_suffix(".out").write_text("".join(out))
    if proc.returncode not in (0, 2):
        print("".join(err)[-3000:], file=sys.stderr)
    return time.monotonic() - start, meter, proc.returncode


def _run_summary(warehouse: Path, run_id: str) -> dict:
    """The run's ``run_summary`` row; empty if the run wrote none (a night that failed)."""
    from jobs.delta_io import TableNotFoundError, read_arrow

    try:
        rows = read_arrow(str(warehouse), "run_summary", run_id).to_pylist()
    except TableNotFoundError:
        return {}
    return rows[0] if rows else {}


def _findings(warehouse: Path, run_id: str) -> list[dict]:
    """The run's findings; none if the warehouse has no findings table yet (a night that failed)."""
    from deltalake.exceptions import TableNotFoundError

    try:
        return read_findings(warehouse, run_id)
    except TableNotFoundError:
        return []


@dataclass
class Night:
    """One run of the job: its wall time, exit code, phases, peak RSS, run summary and score."""

    number: int
    run_id: str
    wall: float
    rc: int
    meter: Meter
    summary: dict
    score: Score

    def wire(self) -> dict[str, int]:
        total = {"connections": 0, "statements": 0, "pings": 0}
        for phase in self.meter.phases:
            for k, v in phase.wire.items():
                total[k] = total.get(k, 0) + v
        return total

    def collection(self) -> list[Phase]:
        return [p for p in self.meter.phases if p.collection]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", type=int, default=100)
    p.add_argument("--nights", type=int, default=2, help="runs of the job against the same fleet and warehouse")
    p.add_argument("--processes", type=int, default=None, help="simulator processes (default: 1 per 2,500 servers)")
    p.add_argument("--latency", default="1-3", help="per-statement latency in ms, e.g. 1-3")
    p.add_argument("--concurrency", type=int, default=None, help="collection.concurrency (default: the job's)")
    p.add_argument("--per-task-concurrency", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", type=Path, default=None, help="keep the work directory here")
    args = p.parse_args(argv)
    if args.nights < 1:
        p.error(f"--nights must be at least 1, not {args.nights!r}")

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
    stamp = int(time.time())
    nights: list[Night] = []
    sim = Simulator(work / "fleet.json", processes=processes, lifetime_s=3600 * args.nights, latency=latency,
                    workdir=work)
    sim.start()
    try:
        for n in range(1, args.nights + 1):
            run_id = f"scale-{args.servers}-{stamp}-n{n}"
            wall, meter, rc = _run(["run", "--config", str(config), "--run-id", run_id, "--fail-on", "never"], sim,
                                 log_file=work / f"night-{n}.log" if args.keep else None)
            summary = _run_summary(work / "warehouse", run_id)
            nights.append(Night(n, run_id, wall, rc, meter, summary,
                                score(fleet.truth, _findings(work / "warehouse", run_id))))
    finally:
        sim.stop()
    refused = sum(1 for x in fleet.servers if x.fault in ("refused", "silent"))
    reachable = max(1, args.servers - refused)
    cores = os.cpu_count() or 1
    mb = lambda b: f"{b / 2**20:,.0f} MB"  # noqa: E731
    ms = lambda seconds: f"{1000 * seconds / args.servers:.1f} ms"  # noqa: E731
    per = lambda count: f"{count / reachable:.1f}"  # noqa: E731
    print(f"servers {args.servers}  simulator processes {processes}  latency {latency.spec()} ms  "
          f"concurrency {concurrency} (per task {settings.per_task_concurrency or 'auto'})  nights {args.nights}  "
          f"exit codes {' '.join(str(x.rc) for x in nights)}  "
          f"pairs {' '.join(str(x.summary.get('pairs_audited')) for x in nights)}")
    print("| night | servers | run (wall) | collect | audit | statements/server | COM_PING/server | "
          "connections/server | round trips/server | floor | collect/floor | client CPU, collection | "
          "client CPU/server, collection | Python workers CPU/server, collection | driver RSS | JVM RSS | "
          "Python workers RSS | simulator CPU | recall | false positives |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x in nights:
        wire, rss, s = x.wire(), x.meter.peak, x.score
        collect_s, audit_s = x.summary.get("collect_seconds") or 0.0, x.summary.get("audit_seconds") or 0.0
        floor = wire["statements"] / reachable * latency.mean() * args.servers / concurrency
        client = sum(ph.cpu_total for ph in x.collection())
        workers = sum(ph.cpu["workers"] for ph in x.collection())
        sim_cpu = sum(ph.sim_cpu for ph in x.meter.phases)
        print(f"| {x.number} | {args.servers:,} | {x.wall:.1f} s | {collect_s:.1f} s | {audit_s:.1f} s | "
              f"{per(wire['statements'])} | {per(wire['pings'])} | {wire['connections'] / reachable:.2f} | "
              f"{per(round_trips(wire))} | {floor:.1f} s | "
              f"{f'{collect_s / floor:.1f}x' if floor else 'n/a'} | {client:.1f} s | {ms(client)} | {ms(workers)} | "
              f"{mb(rss['driver'])} | {mb(rss['jvm'])} | {mb(rss['workers'])} | {sim_cpu:.1f} s "
              f"({100 * sim_cpu / (x.wall * cores):.1f} % of {cores} cores) | {100 * s.recall:.1f} % "
              f"({len(s.expected) - len(s.missed)}/{len(s.expected)}) | {len(s.false_positives)} |")
    for x in nights:
        print(f"night {x.number} peak RSS by phase: " + "; ".join(
            f"{phase}: driver {mb(v['driver'])}, JVM {mb(v['jvm'])}, Python workers {mb(v['workers'])}"
            for phase, v in x.meter.by_phase.items() if phase != "exit"))
    print()
    print("| night | phase | servers (job) | wall | job's seconds | client CPU: driver | JVM | of it JIT | "
          "Python workers | other | total | client CPU/server | Python workers CPU/server | statements/server | "
          "COM_PING/server | handshake round trips/server | round trips/server | connections/server | "
          "simulator CPU |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cell = lambda v: "-" if v is None else f"{v:.1f} s"  # noqa: E731
    for x in nights:
        for ph in x.meter.phases:
            w = ph.wire
            print(f"| {x.number} | {ph.name} | {'-' if ph.job_servers is None else f'{ph.job_servers:,}'} | "
                  f"{ph.wall:.1f} s | {cell(ph.job_seconds)} | {cell(ph.cpu['driver'])} | {cell(ph.cpu['jvm'])} | "
                  f"{cell(ph.cpu['jit'])} | "
                  f"{cell(ph.cpu['workers'])} | {cell(ph.cpu['other'])} | {ph.cpu_total:.1f} s | "
                  f"{ms(ph.cpu_total)} | {ms(ph.cpu['workers'])} | "
                  f"{per(w.get('statements', 0))} | {per(w.get('pings', 0))} | "
                  f"{per(w.get('handshake_round_trips', 0))} | {per(round_trips(w))} | "
                  f"{w.get('connections', 0) / reachable:.2f} | {ph.sim_cpu:.1f} s |")
    for x in nights:
        for item in sorted(x.score.missed):
            print(f"night {x.number} missed:", item)
        for item in sorted(x.score.false_positives):
            print(f"night {x.number} false positive:", item)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
