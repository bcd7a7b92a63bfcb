"""Time `Fleet.up` of the standard 6-server sandbox fleet and measure its memory.

Prints wall-clock seconds for up and down, and the fleet's resident memory (sum of VmRSS of the
mysqld pids, sampled every 0.2 s during up and once settled). Budget (issue 3): up in under
60 s on 2 cores, under 4 GiB. Usage: python benchmarks/sandbox_fleet_up.py [--runs N]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jobs.sandbox.fleet import STANDARD_TOPOLOGY, Fleet, Topology  # noqa: E402
from jobs.sandbox.installer import ensure_mysql  # noqa: E402

TOPOLOGY = STANDARD_TOPOLOGY


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def mysqld_pids(workdir: Path) -> list[int]:
    needle = str(workdir).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def one_run(dist) -> dict:
    with tempfile.TemporaryDirectory(prefix="gta-bench-") as tmp:
        workdir = Path(tmp).resolve()
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], sum(rss_bytes(p) for p in mysqld_pids(workdir)))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        fleet = Fleet.up(Topology.load(TOPOLOGY), workdir, dist=dist)
        up_s = time.monotonic() - started
        time.sleep(1.0)
        settled = sum(rss_bytes(s.pid) for s in fleet.servers.values())
        done.set()
        sampler.join()
        started = time.monotonic()
        fleet.down()
        down_s = time.monotonic() - started
        return {"up_s": up_s, "down_s": down_s, "peak_rss": max(peak[0], settled), "settled_rss": settled}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    dist = ensure_mysql()
    print(f"MySQL {dist.version}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for i in range(args.runs):
        r = one_run(dist)
        print(f"run {i + 1}: up {r['up_s']:.1f} s, down {r['down_s']:.1f} s, "
              f"RSS settled {r['settled_rss'] / 2**30:.2f} GiB, peak {r['peak_rss'] / 2**30:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
