"""Write the fuzzers' seed corpus under tests/data/fuzz/seeds/<target>/ (one file per input).

    .venv/bin/python -m tests.fuzz.make_seeds              # from the golden files in tests/data/
    .venv/bin/python -m tests.fuzz.make_seeds --from-fleet # and rows read from a real 9.7 replica

Seeds are the golden strings captured from real servers (tests/data/gtid_golden.json, the relay
log captures) and, with ``--from-fleet``, the global variables, SHOW BINARY LOGS, SHOW REPLICA
STATUS and performance_schema rows of a two-server sandbox fleet (started and stopped here).
A seed's file name is the sha1 of its bytes, so rerunning adds nothing twice.
"""
from __future__ import annotations

import argparse
import datetime as dt
import decimal
import hashlib
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
SEEDS = DATA / "fuzz" / "seeds"


def _plain(value):
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (dt.datetime, dt.date, dt.timedelta, decimal.Decimal)):
        return str(value)
    return value


def _write(target: str, data: bytes) -> bool:
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / hashlib.sha1(data).hexdigest()
    if path.exists():
        return False
    path.write_bytes(data)
    return True


def _json(doc) -> bytes:
    return json.dumps(doc, sort_keys=True, default=_plain).encode()


def from_golden() -> int:
    written = 0
    for case in json.loads((DATA / "gtid_golden.json").read_text())["cases"]:
        written += _write("gtid_set", case["input"].encode())
        if case.get("canonical"):
            written += _write("gtid_set", case["canonical"].encode())
    for path in sorted(DATA.glob("relaylog_mysql97_*.json")):
        doc = json.loads(path.read_text())
        lists = [v for v in doc.values() if isinstance(v, list) and v and isinstance(v[0], dict)
                 and "Event_type" in v[0]]
        for events in lists:
            for start in range(0, len(events), 12):   # windows of 12 rows, cut anywhere
                written += _write("relay_log", _json(events[start:start + 12]))
    return written


def from_fleet() -> int:
    from jobs.sandbox.fleet import Fleet

    topology = {"name": "seeds", "servers": [{"name": "src"}, {"name": "rep"}],
                "channels": [{"replica": "rep", "source": "src"}],
                "schema": {"src": ["CREATE DATABASE s", "CREATE TABLE s.t (id INT PRIMARY KEY)",
                                   "INSERT INTO s.t VALUES (1), (2)"]}}
    written = 0
    with tempfile.TemporaryDirectory(prefix="fuzz-seeds-") as work, Fleet.up(topology, work) as fleet:
        for server in fleet.servers.values():
            variables = server.query(
                "SELECT @@GLOBAL.server_uuid AS server_uuid, @@GLOBAL.server_id AS server_id, "
                "@@GLOBAL.version AS version, @@GLOBAL.gtid_mode AS gtid_mode, "
                "@@GLOBAL.gtid_executed AS gtid_executed, @@GLOBAL.gtid_purged AS gtid_purged, "
                "@@GLOBAL.enforce_gtid_consistency AS enforce_gtid_consistency, @@GLOBAL.log_bin AS log_bin, "
                "@@GLOBAL.log_replica_updates AS log_replica_updates, @@GLOBAL.sync_binlog AS sync_binlog, "
                "@@GLOBAL.innodb_flush_log_at_trx_commit AS innodb_flush_log_at_trx_commit, "
                "@@GLOBAL.binlog_format AS binlog_format, @@GLOBAL.read_only AS read_only, "
                "@@GLOBAL.relay_log_recovery AS relay_log_recovery, "
                "@@GLOBAL.replica_parallel_workers AS replica_parallel_workers")[0]
            logs = server.query("SHOW BINARY LOGS")
            names = server.query("SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                                 "('gtid_executed', 'gtid_purged', 'version', 'server_uuid')")
            written += _write("server_snapshot", _json({"variables": variables, "binary_logs": logs,
                                                        "variable_rows": names}))
        rep = fleet.server("rep")
        status = rep.query("SHOW REPLICA STATUS")[0]
        connection = rep.query("SELECT * FROM performance_schema.replication_connection_status")[0]
        applier = rep.query("SELECT * FROM performance_schema.replication_applier_status")[0]
        config = rep.query("SELECT * FROM performance_schema.replication_applier_configuration")[0]
        written += _write("channel_snapshot", _json({"replica_status": status, "connection_status": connection,
                                                     "applier_status": applier, "applier_configuration": config}))
        relay = rep.query(f"SHOW RELAYLOG EVENTS IN '{status['Relay_Log_File']}'")
        written += _write("relay_log", _json(relay))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from-fleet", action="store_true", help="also read rows from a real sandbox fleet")
    args = parser.parse_args(argv)
    written = from_golden() + (from_fleet() if args.from_fleet else 0)
    print(f"{written} new seed(s) under {SEEDS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
