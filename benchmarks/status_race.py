"""Can a real busy replica's SHOW REPLICA STATUS row look like lost GTID history? (replica_gtid_history_lost)

Starts a real MySQL 9.7 source and replica on loopback (jobs.sandbox.fleet; durable settings,
``--replica-parallel-workers`` as given), writes bursts of 1-3 one-row transactions on the source
with pauses of 0-150 ms (bounded: ``--reads`` status reads, at most 200,000 transactions), and
reads ``SHOW REPLICA STATUS`` on the replica ``--reads`` times. For each row it counts:

- rows whose applier is caught up by position (Relay_Source_Log_File = Source_Log_File and
  Exec_Source_Log_Pos = Read_Source_Log_Pos);
- of those, rows whose Retrieved_Gtid_Set is not within its Executed_Gtid_Set: what the check
  would report as lost history without the collector's second read;
- of those, rows whose "lost" GTIDs a ``SELECT @@GLOBAL.gtid_executed`` right after holds.

The server fills Executed_Gtid_Set before it reads the positions (show_slave_status_send_data),
so a transaction committed in between makes such a row; gtid_core/checks/divergence.py says
why the second read closes the window. This script measures how often the window shows here.

    python benchmarks/status_race.py [--workers 4] [--reads 3000]
"""
from __future__ import annotations

import argparse
import pathlib
import random
import tempfile
import threading
import time

from gtid_core import GtidSet
from jobs.sandbox.fleet import Fleet
from jobs.sandbox.installer import ensure_mysql

MAX_TRANSACTIONS = 200_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=4, help="replica_parallel_workers of the replica")
    p.add_argument("--reads", type=int, default=3000, help="SHOW REPLICA STATUS reads (bounded)")
    args = p.parse_args()
    options = ["--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1",
               f"--replica-parallel-workers={args.workers}"]
    topology = {"name": "status-race", "servers": [{"name": n, "options": options} for n in ("a", "b")],
                "channels": [{"replica": "b", "source": "a", "channel": ""}]}
    fleet = Fleet.up(topology, pathlib.Path(tempfile.mkdtemp(prefix="status-race-")), dist=ensure_mysql())
    try:
        a, b = fleet.server("a"), fleet.server("b")
        a.execute("CREATE DATABASE IF NOT EXISTS race", "CREATE TABLE race.w (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        fleet.wait_caught_up()
        stop, written = threading.Event(), [0]

        def load() -> None:
            rng = random.Random(1)
            while not stop.is_set() and written[0] < MAX_TRANSACTIONS:
                for _ in range(rng.randint(1, 3)):
                    a.execute("INSERT INTO race.w (v) VALUES (1)")
                    written[0] += 1
                time.sleep(rng.uniform(0, 0.15))

        writer = threading.Thread(target=load)
        writer.start()
        caught_up = looks_lost = held_later = 0
        started = time.monotonic()
        try:
            for _ in range(args.reads):
                r = b.query("SHOW REPLICA STATUS FOR CHANNEL ''")[0]
                if (r["Relay_Source_Log_File"], r["Exec_Source_Log_Pos"]) != (r["Source_Log_File"], r["Read_Source_Log_Pos"]):
                    continue
                caught_up += 1
                lost = GtidSet.parse(r["Retrieved_Gtid_Set"]) - GtidSet.parse(r["Executed_Gtid_Set"])
                if lost:
                    looks_lost += 1
                    later = GtidSet.parse(b.query("SELECT @@GLOBAL.gtid_executed AS g")[0]["g"])
                    held_later += not (lost - later)
        finally:
            stop.set()
            writer.join()
        print(f"replica_parallel_workers={args.workers} status_reads={args.reads} "
              f"seconds={time.monotonic() - started:.1f} transactions_written={written[0]} "
              f"rows_caught_up_by_position={caught_up} of_them_retrieved_not_in_executed={looks_lost} "
              f"of_them_held_by_a_later_gtid_executed={held_later}")
    finally:
        fleet.down()


if __name__ == "__main__":
    main()
