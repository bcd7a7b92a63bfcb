"""Client CPU per ``read_server``: this checkout's collector against another revision's, interleaved
in one process (issue #21, stop 29).

On a shared, loaded machine two runs of benchmarks/connector_cext.py minutes apart differ by more
than a change to the read is worth. This reads the simulated 9.7.4 group of connector_cext.py
(a source and two replicas, no TLS, 0-1 ms per answer) with both collectors in one process,
in batches of 30 reads that alternate (A B, B A, ...), so both see the same load, and prints the
client CPU (``time.process_time()``) per read of each and their ratio. The other revision's
``jobs/collector.py`` is loaded from git as a module of its own; both use this checkout's
``gtid_core``, ``jobs.pairs``, ``jobs.mysql_connection`` and the other modules it imports. A
revision from before ``jobs/mysql_connection.py`` existed brings its connection code in its own
``collector.py``; against a later one, only ``jobs/collector.py`` is compared (not the
connection classes); the two commits of the split itself (0cfb923, d80742d) imported names
that cb2d4b5 renamed, and cannot be loaded as a base. The pure-Python protocol only (the C extension's import is blocked).

Usage: python benchmarks/read_cpu_ab.py [--base main] [--batches 20]
The figures are recorded in docs/benchmarks.md ("The read's own Python").
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BATCH = 30


def _collector_at(revision: str, workdir: Path):
    """``jobs/collector.py`` of ``revision`` as a module named ``base_collector``."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:jobs/collector.py"],
                            capture_output=True, text=True, check=True).stdout
    path = workdir / "base_collector.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("base_collector", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["base_collector"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default="main", help="the revision to compare with (default: main)")
    p.add_argument("--batches", type=int, default=20, help=f"batches of {BATCH} reads per collector")
    args = p.parse_args(argv)
    sys.modules["_mysql_connector"] = None  # the pure-Python protocol, as the collector uses
    sys.path.insert(0, str(ROOT))
    from jobs import collector

    work = Path(tempfile.mkdtemp(prefix="gtid-read-ab-"))
    try:
        return _compare(args, work, {args.base: _collector_at(args.base, work), "this checkout": collector})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compare(args: argparse.Namespace, work: Path, collectors: dict) -> int:
    from jobs.sandbox.sim import FleetBuilder, Simulator
    from jobs.server_spec import ReadSettings, ServerSpec

    b = FleetBuilder(seed=21)
    b.cluster("bench", "9.7.4", replicas=2)
    fleet = b.fleet()
    fleet.save(work / "fleet.json")
    fleet.write_audit_config(work / "sim.yaml", warehouse=str(work / "wh"), password_file=work / "sim.pw")
    with Simulator(work / "fleet.json", lifetime_s=1800, latency="0-1", workdir=work):
        specs = [ServerSpec(name=s.name, host=s.host, port=s.port, user="audit", connect_timeout_s=5,
                            read_timeout_s=10, password_file=str(work / "sim.pw")) for s in fleet.servers]
        cpu = dict.fromkeys(collectors, 0.0)
        for module in collectors.values():  # warm up: imports, first connections
            ctx = module.RunContext("ab", dt.date.today(), ReadSettings(server_deadline_s=60))
            for spec in specs:
                module.read_server(spec, ctx)
        load_before = os.getloadavg()[0]
        failed = 0
        for batch in range(args.batches):
            for name in (list(collectors) if batch % 2 == 0 else list(reversed(collectors))):
                module = collectors[name]
                ctx = module.RunContext("ab", dt.date.today(), ReadSettings(server_deadline_s=60))
                start = time.process_time()
                for i in range(BATCH):
                    result = module.read_server(specs[i % len(specs)], ctx)
                    failed += bool(result.errors) or result.server["status"] != "ok"
                cpu[name] += time.process_time() - start
    reads = args.batches * BATCH
    print(f"cores {os.cpu_count()}  load average before {load_before:.2f}, after {os.getloadavg()[0]:.2f}  "
          f"reads per collector {reads}  failed {failed}")
    for name, seconds in cpu.items():
        print(f"{name}: {1000 * seconds / reads:.2f} ms client CPU per read")
    print(f"this checkout / {args.base} = {cpu['this checkout'] / cpu[args.base]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
