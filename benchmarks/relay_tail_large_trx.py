"""The relay-log tail of a replica whose receiver stopped inside a transaction of ~1,000,000 row events.

Starts a private two-server 9.7 fleet (source with ``--binlog-row-event-max-size=256`` and
150-byte rows: one Write_rows event per row), writes one INSERT ... SELECT of ``--events`` x 1.1
rows on the source and lets about ``--events`` events of it reach the replica before stopping its
receiver (``jobs.sandbox.scenarios.relay_log_ends_inside_transaction``). Then it reads the replica
and the source with the collector's defaults (``jobs.collector.read_server``) and runs the pair
checks on the rows, and prints:

* found: whether ``incomplete_relay_log_tail`` fired, the GTID it names and the server's
  ``QUEUEING_TRANSACTION``;
* the cost of the replica's relay-tail read: ``SHOW RELAYLOG EVENTS`` statements sent, rows
  transferred, events the server decoded (estimated from each statement: its ``LIMIT`` offset plus
  the rows it returned, or the rest of the file when it returned fewer than asked) and the wall
  time of the replica's whole read.

Usage: python benchmarks/relay_tail_large_trx.py [--events 1000000] [--keep DIR] [--attach DIR]
(``--keep``: build the fleet in DIR and leave it up; ``--attach``: reuse such a fleet.)
The figures are recorded in docs/benchmarks.md (section "Relay-log tail of a large transaction").
"""
from __future__ import annotations

import argparse
import datetime as dt
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gtid_core import FleetContext, events_from_rows, run_pair_checks  # noqa: E402
from jobs import collector  # noqa: E402
from jobs.audit_tasks import channel_snapshot, relay_tail_rows, server_snapshot  # noqa: E402
from jobs.config import CollectionSettings, ServerSpec  # noqa: E402
from jobs.sandbox import scenarios  # noqa: E402
from jobs.sandbox.fleet import Fleet  # noqa: E402

TOPOLOGY = {
    "name": "relay-tail-bench",
    "servers": [{"name": "src", "options": ["--innodb-use-native-aio=OFF", "--binlog-row-event-max-size=256"]},
                {"name": "rep", "options": ["--innodb-use-native-aio=OFF"]}],
    "channels": [{"replica": "rep", "source": "src", "channel": ""}],
}
EVENT_BYTES = 200           # a Write_rows event of one 150-byte row is 196 bytes: the proxy budget per event
_LIMIT = re.compile(r"LIMIT\s+(\d+)(?:\s*,\s*(\d+))?", re.I)


class Meter:
    """Counts the SHOW RELAYLOG EVENTS statements one ServerReader sends, and what they cost."""

    def __init__(self) -> None:
        self.statements = self.rows = self.decoded = 0

    def install(self) -> None:
        real = collector.ServerReader.query
        meter = self

        def query(reader, sql, params=(), **kw):
            rows, at = real(reader, sql, params, **kw)
            if sql.startswith("SHOW RELAYLOG EVENTS") and reader.spec.name == "rep" and rows is not None:
                m = _LIMIT.search(sql)
                skip, limit = (int(m.group(1)), int(m.group(2))) if m.group(2) else (0, int(m.group(1)))
                meter.statements += 1
                meter.rows += len(rows)
                meter.decoded += skip + len(rows)   # a short answer: the file ended there
            return rows, at

        collector.ServerReader.query = query


def read(fleet: Fleet, name: str):
    server = fleet.server(name)
    spec = ServerSpec(name=name, host=server.host, port=server.port, user="audit",
                      password_file=str(fleet.audit_password_file), connect_timeout_s=5, read_timeout_s=120)
    return collector.read_server(spec, collector.RunContext("bench", dt.date.today(),
                                                            CollectionSettings().read_settings()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--keep", help="build the fleet in this directory and leave it up")
    ap.add_argument("--attach", help="reuse a fleet left up by --keep")
    args = ap.parse_args()

    if args.attach:
        fleet = Fleet.attach(args.attach)
    else:
        work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gta-bench-relay-")) / "fleet"
        shutil.rmtree(work, ignore_errors=True)
        t0 = time.monotonic()
        fleet = Fleet.up(TOPOLOGY, work)
        print(f"fleet up in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    try:
        rep = fleet.server("rep")
        if not args.attach:
            t0 = time.monotonic()
            scenarios.relay_log_ends_inside_transaction(fleet, "rep", channel="", rows=int(args.events * 1.1),
                                                        budget=args.events * EVENT_BYTES, timeout=1800)
            print(f"receiver cut inside the transaction in {time.monotonic() - t0:.1f}s", file=sys.stderr)
        status = rep.query("SHOW REPLICA STATUS")[0]
        queueing = rep.query_value("SELECT QUEUEING_TRANSACTION FROM performance_schema.replication_connection_status")
        settings = CollectionSettings()
        meter = Meter()
        meter.install()
        t0 = time.monotonic()
        replica = read(fleet, "rep")
        wall = time.monotonic() - t0
        source = read(fleet, "src")
        [row] = replica.channels
        tail = events_from_rows(relay_tail_rows(replica.relay_log_tail)) if row["relay_tail_events"] is not None else None
        findings = run_pair_checks(server_snapshot({**replica.server, "binary_logs": replica.binary_logs}),
                                   channel_snapshot(row),
                                   server_snapshot({**source.server, "binary_logs": source.binary_logs}), tail,
                                   FleetContext())
        found = [f for f in findings if f.check_id == "incomplete_relay_log_tail"]
        print(f"relay log {status['Relay_Log_File']} from Relay_Log_Pos {status['Relay_Log_Pos']}; "
              f"receiver running: {status['Replica_IO_Running']}; QUEUEING_TRANSACTION {queueing}")
        print(f"settings: relay_tail_max_events={settings.relay_tail_max_events} "
              f"relay_tail_max_scan_events={settings.relay_tail_max_scan_events}")
        print(f"found: {'yes' if found else 'no'}"
              + (f" ({found[0].severity.value}), GTID {found[0].evidence.get('dangling_gtid')}"
                 f" from {found[0].evidence.get('dangling_gtid_from')}" if found else ""))
        print(f"tail: {row.get('relay_tail_events')} events kept, {row.get('relay_tail_first_event')} dropped before "
              f"them, truncated={row.get('relay_tail_truncated')}, "
              f"scanned (collector's charge)={row.get('relay_tail_scanned_events')}")
        print(f"SHOW RELAYLOG EVENTS statements: {meter.statements}; rows transferred: {meter.rows}; "
              f"events decoded by the server (from offsets): {meter.decoded}; replica read wall time: {wall:.2f}s")
        return 0 if found and str(found[0].gtid_set) == queueing else 1
    finally:
        if not (args.keep or args.attach):
            fleet.down()


if __name__ == "__main__":
    sys.exit(main())
