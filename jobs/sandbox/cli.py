"""``gtid-audit sandbox install|up|status|down|load|sim``: the local MySQL fleet's lifecycle, a
bounded background writer (``load``) that keeps its sources busy, and a simulated fleet at scale
(``sim``, jobs/sandbox/sim).

Wired into the main parser by ``register(subparsers)``; also runnable on its own as
``python -m jobs.sandbox.cli sandbox install``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from jobs.sandbox.errors import FleetNotFoundError, SandboxError
from jobs.sandbox.fleet import STANDARD_TOPOLOGY

__all__ = ["register", "main", "DEFAULT_TOPOLOGY", "DEFAULT_WORKDIR", "DEFAULT_CONFIG_OUT"]

DEFAULT_TOPOLOGY = str(STANDARD_TOPOLOGY)
DEFAULT_WORKDIR = ".sandbox"
DEFAULT_CONFIG_OUT = "conf/sandbox.yaml"


def _install(args: argparse.Namespace) -> int:
    from jobs.sandbox.installer import ensure_mysql

    dist = ensure_mysql(args.cache_dir)
    print(f"MySQL {dist.version} ready in {dist.root}")
    return 0


def _up(args: argparse.Namespace) -> int:
    from jobs.sandbox.fleet import Fleet, Topology
    from jobs.sandbox.installer import ensure_mysql

    dist = ensure_mysql(args.cache_dir)
    fleet = Fleet.up(Topology.load(args.topology), args.workdir, dist=dist)
    extra = []
    try:
        if args.faults:
            from jobs.sandbox import scenarios

            results = scenarios.inject_demo_faults(fleet)
            extra = scenarios.extra_config_servers(results)
            for result in results:
                print(f"fault {result.name}: {', '.join(result.servers)}")
        config = fleet.write_audit_config(args.config_out, warehouse=args.warehouse, extra_servers=extra)
    except BaseException:
        fleet.down()          # a half-made sandbox is not left running
        raise
    for server in fleet.servers.values():
        print(f"{server.name:16s} 127.0.0.1:{server.port:<6d} pid {server.pid!s:<8} {server.server_uuid}")
    print(f"auditor config written to {config}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from jobs.sandbox.fleet import Fleet

    fleet = Fleet.attach(args.workdir)
    status = fleet.status()
    if args.json:
        print(json.dumps(status, indent=2, default=str))
    else:
        for row in status["servers"]:
            state = "running" if row["running"] else "stopped"
            pid = row["pid"] if row["pid"] is not None else "-"
            print(f"{row['name']:16s} 127.0.0.1:{row['port']:<6d} pid {pid!s:<8} {state}")
    return 0 if all(row["running"] for row in status["servers"]) else 3


def _down(args: argparse.Namespace) -> int:
    from jobs.sandbox.fleet import Fleet

    try:
        fleet = Fleet.attach(args.workdir)
    except FleetNotFoundError:
        print(f"no sandbox state in {str(args.workdir)!r}; nothing to stop")
        return 0
    stopped = fleet.down()
    print(f"stopped {len(stopped)} server(s): {', '.join(stopped) if stopped else '-'}")
    return 0


def _sim(args: argparse.Namespace) -> int:
    """Generate a simulated fleet, serve it, run the nightly job on it, compare with the truth."""
    import time
    from collections import Counter

    from jobs.config import load_config
    from jobs.pipeline import run_night
    from jobs.sandbox.sim import Simulator, generate
    from jobs.sandbox.sim.score import read_findings, score

    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    fleet = generate(args.servers, seed=args.seed, collection_fault_rate=args.collection_faults,
                     consistency_fault_rate=args.consistency_faults)
    fleet.save(workdir / "fleet.json")
    fleet.write_truth(workdir / "truth.jsonl")
    if args.warehouse is None:   # a new fleet each time: its history must not meet the last one's
        import shutil

        shutil.rmtree(workdir / "warehouse", ignore_errors=True)
    warehouse = args.warehouse or str(workdir / "warehouse")
    config = fleet.write_audit_config(workdir / "audit.yaml", warehouse=warehouse,
                                      password_file=workdir / "audit.password")
    versions = Counter(s.version for s in fleet.servers)
    print(f"{len(fleet.servers)} simulated servers ({', '.join(f'{v}: {n}' for v, n in sorted(versions.items()))}), "
          f"{len(fleet.truth)} expected findings; config {config}")
    processes = args.processes or max(1, -(-args.servers // 2500))
    with Simulator(workdir / "fleet.json", processes=processes, latency=args.latency,
                   lifetime_s=args.serve_only or args.lifetime, workdir=workdir) as sim:
        print(f"serving on 127.0.0.0/8 from {processes} process(es) "
              f"(pids {', '.join(str(p.pid) for p in sim.procs)}); they stop by themselves")
        if args.serve_only:
            print(f"serving for {args.serve_only:g} s: run `gtid-audit run --config {config}` meanwhile")
            time.sleep(args.serve_only)
            return 0
        started = time.monotonic()
        night = run_night(load_config(config), fail_on="never", send_alerts=False)
        elapsed = time.monotonic() - started
        print(night.collected.line())
    findings = read_findings(warehouse)
    result = score(fleet.truth, findings)
    by_check = Counter(f["check_id"] for f in findings if f.get("severity") in ("critical", "warning"))
    print(f"gtid-audit run over {len(fleet.servers)} servers took {elapsed:.1f} s")
    for check, count in by_check.most_common():
        print(f"  {count:6d}  {check}")
    print(f"recall {100 * result.recall:.1f} % ({len(result.expected) - len(result.missed)}/{len(result.expected)}), "
          f"false positives {len(result.false_positives)}")
    for item in sorted(result.missed):
        print(f"  missed: {item}")
    for item in sorted(result.false_positives):
        print(f"  false positive: {item}")
    print(f"`gtid-audit findings --config {config}` lists them")


def _load(args: argparse.Namespace) -> int:
    from jobs.sandbox.fleet import Fleet
    from jobs.sandbox.load import LoadWriter

    fleet = Fleet.attach(args.workdir)
    try:
        writer = LoadWriter(fleet, rate_per_s=args.rate, seconds=args.seconds,
                            max_transactions=args.max_transactions, sources=args.source or None)
    except ValueError as exc:
        print(f"gtid-audit sandbox load: error: {exc}", file=sys.stderr)
        return 2
    print(f"writing on {', '.join(writer.sources)}: {args.rate:g} transaction(s)/s each, "
          f"at most {args.seconds:g} s and {args.max_transactions} transaction(s) per source", flush=True)
    with writer:
        try:
            results = writer.wait()
        except KeyboardInterrupt:
            results = writer.stop()
    for r in results:
        print(f"{r.source:16s} {r.transactions:7d} transaction(s) in {r.seconds:.1f} s")
    return 0


def _guard(func):
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except SandboxError as exc:
            print(f"gtid-audit sandbox: error: {exc}", file=sys.stderr)
            return 2
    return run


def register(subparsers) -> argparse.ArgumentParser:
    """Add ``sandbox`` and its sub-commands to the main parser's subparsers."""
    sandbox = subparsers.add_parser("sandbox", help="a local MySQL 9.7 fleet for tests and the demo")
    commands = sandbox.add_subparsers(dest="sandbox_command", metavar="{install,up,status,down,load,sim}")
    commands.required = True

    install = commands.add_parser("install", help="download and unpack MySQL into the cache (idempotent)")
    install.add_argument("--cache-dir", default=None,
                         help="cache root (default $GTID_AUDIT_CACHE, $XDG_CACHE_HOME/gtid-audit, ~/.cache/gtid-audit)")
    install.set_defaults(func=_guard(_install))

    up = commands.add_parser("up", help="start a fleet and write the auditor config")
    up.add_argument("--topology", type=Path, default=Path(DEFAULT_TOPOLOGY))
    up.add_argument("--workdir", type=Path, default=Path(DEFAULT_WORKDIR))
    up.add_argument("--config-out", type=Path, default=Path(DEFAULT_CONFIG_OUT))
    up.add_argument("--warehouse", default=str(Path("warehouse").resolve()),
                    help="where the Delta tables go (default: ./warehouse of the current directory)")
    up.add_argument("--faults", action="store_true",
                    help="inject the demo faults (errant transaction, purged logs, broken addresses)")
    up.add_argument("--cache-dir", default=None)
    up.set_defaults(func=_guard(_up))

    status = commands.add_parser("status", help="show the fleet saved in the workdir",
                                 description="Show each server of the workdir's fleet. Exit 0 when "
                                             "every server runs, 3 when some are stopped, 2 when the "
                                             "workdir holds no fleet.")
    status.add_argument("--workdir", type=Path, default=Path(DEFAULT_WORKDIR))
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_guard(_status))

    down = commands.add_parser("down", help="stop exactly the servers the workdir's fleet started")
    down.add_argument("--workdir", type=Path, default=Path(DEFAULT_WORKDIR))
    down.set_defaults(func=_guard(_down))

    sim = commands.add_parser(
        "sim", help="a simulated fleet of N servers (5.6 to 9.7) with faults: run the job on it",
        description="Generate N simulated MySQL servers (clusters, chains, multi-source replicas; 5.6, 5.7, 8.0, "
                    "8.4, 9.7 dialects) with collection and consistency faults, serve them over the MySQL "
                    "protocol on 127.0.0.0/8, run `gtid-audit run` on them and compare the findings with "
                    "the faults injected. The simulator stops by itself (--lifetime).")
    sim.add_argument("--servers", type=int, default=200)
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--collection-faults", type=float, default=0.01, help="share of servers (default 0.01)")
    sim.add_argument("--consistency-faults", type=float, default=0.02, help="share of servers (default 0.02)")
    sim.add_argument("--latency", default="1-3", help="per-statement latency in ms (default 1-3)")
    sim.add_argument("--processes", type=int, default=None, help="simulator processes (default 1 per 2,500)")
    sim.add_argument("--lifetime", type=float, default=3600.0, help="the simulator stops after this (s)")
    sim.add_argument("--serve-only", type=float, default=None, metavar="SECONDS",
                     help="only serve the fleet for SECONDS (write the config; do not run the job)")
    sim.add_argument("--workdir", type=Path, default=Path(".sandbox/sim"))
    sim.add_argument("--warehouse", default=None, help="default: WORKDIR/warehouse")
    sim.set_defaults(func=_guard(_sim))
    load = commands.add_parser(
        "load", help="keep the fleet's sources busy with small transactions (bounded; stops by itself)",
        description="Commit small multi-statement transactions (INSERT + UPDATE) on each source of the "
                    "workdir's fleet, into its own database load_<source>, until --seconds or "
                    "--max-transactions is reached (or Ctrl-C). See jobs/sandbox/load.py.")
    load.add_argument("--workdir", type=Path, default=Path(DEFAULT_WORKDIR))
    load.add_argument("--rate", type=float, default=20.0, help="transactions per second per source (default 20)")
    load.add_argument("--seconds", type=float, default=60.0, help="stop after this many seconds (default 60)")
    load.add_argument("--max-transactions", type=int, default=10_000,
                      help="stop a source after this many transactions (default 10000)")
    load.add_argument("--source", action="append", metavar="SERVER",
                      help="write on this server (repeatable; default: every server that feeds a replica "
                           "and replicates from nobody)")
    load.set_defaults(func=_guard(_load))
    return sandbox


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m jobs.sandbox.cli sandbox install``."""
    parser = argparse.ArgumentParser(prog="gtid-audit")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
