"""Benchmark of the audit stage on synthetic snapshot tables of N pairs (local Spark).

    .venv/bin/python benchmarks/audit_pairs.py                 # 10k and 100k pairs
    .venv/bin/python benchmarks/audit_pairs.py 10000 100000 1000000

The synthetic fleet: N/10 sources, each with 10 replicas (one channel each), so N pairs and
1.1 N servers. Every server has 2 binary logs; sources hold ``uuid_s:1-1000`` with ``1-100``
purged; replicas are in sync, except one pair in 100 whose replica has 3 errant transactions
of its own UUID (so each run must find exactly N/100 errant pairs: the figure is checked). No
relay-log tail (``relay_tail_events`` NULL: "not read"), the common case of a healthy fleet.

Tables are built with pyarrow in the collection schemas (``schemas.collection``), with each
channel's ``source_server`` filled as the collector's resolver writes it, and written to a Delta
warehouse with delta-spark; the stage timed is the whole ``jobs.audit.audit_run``: reading the
snapshot tables, the pair joins (rows of up to 16 pairs of a source, and one row per source for
the failover model), the checks and the failover model over Arrow
batches, history, and the Delta commits of findings, alerts, failover_readiness, uuid_registry and
run_summary. Figures: seconds, microseconds per pair, pairs per second. The numbers are recorded
in docs/benchmarks.md (section "Audit stage per pair").
"""
from __future__ import annotations

import datetime as dt
import os
import sys
import time

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

RUN_ID = "bench-run"
RUN_DATE = dt.date(2026, 11, 22)
READ_AT = dt.datetime(2026, 11, 22, 3, 0, tzinfo=dt.timezone.utc)


def _uuid(kind: int, i: int) -> str:
    return f"{kind:08x}-0000-4000-8000-{i:012x}"


def _table(schema, columns: dict[str, list]) -> pa.Table:
    n = len(next(iter(columns.values())))
    arrays = []
    for f in schema:
        arrays.append(pa.array(columns[f.name], type=f.type) if f.name in columns else pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def synthetic_tables(n_pairs: int) -> dict[str, pa.Table]:
    """servers, binary_logs, channels, relay_log_tail for ``n_pairs`` pairs (see module doc)."""
    from schemas.collection import BINARY_LOGS, CHANNELS, RELAY_LOG_TAIL, SERVERS

    n_src = max(1, n_pairs // 10)
    names, hosts, uuids, executed, purged, clusters = [], [], [], [], [], []
    for s in range(n_src):
        u = _uuid(1, s)
        names.append(f"src{s}"); hosts.append(f"src{s}.db"); uuids.append(u)
        executed.append(f"{u}:1-1000"); purged.append(f"{u}:1-100"); clusters.append(f"c{s % 50}")
    errant = 0
    ch_server, ch_host, ch_uuid, ch_set, ch_source = [], [], [], [], []
    for r in range(n_pairs):
        s = r % n_src
        su, ru = _uuid(1, s), _uuid(2, r)
        names.append(f"rep{r}"); hosts.append(f"rep{r}.db"); uuids.append(ru); clusters.append(f"c{s % 50}")
        if r % 100 == 7:
            errant += 1
            executed.append(f"{su}:1-1000,{ru}:1-3")
        else:
            executed.append(f"{su}:1-1000")
        purged.append(f"{su}:1-100")
        ch_server.append(f"rep{r}"); ch_host.append(f"src{s}.db"); ch_uuid.append(su); ch_set.append(f"{su}:1-1000")
        ch_source.append(f"src{s}")
    n_servers = len(names)
    const = lambda v: [v] * n_servers  # noqa: E731
    servers = _table(SERVERS.to_arrow(), {
        "run_id": const(RUN_ID), "run_date": const(RUN_DATE), "server": names, "cluster": clusters,
        "read_at": const(READ_AT), "host": hosts, "port": const(3306), "discovered": const(False),
        "status": const("ok"), "server_uuid": uuids, "server_id": list(range(1, n_servers + 1)),
        "version": const("9.7.4"), "gtid_mode": const("ON"), "enforce_gtid_consistency": const("ON"),
        "gtid_executed": executed, "gtid_purged": purged, "log_bin": const(True),
        "log_replica_updates": const(True), "sync_binlog": const(1), "innodb_flush_log_at_trx_commit": const(1),
        "relay_log_recovery": const(True), "replica_parallel_workers": const(4),
        "replica_preserve_commit_order": const(True), "binlog_format": const("ROW"),
        "read_only": [i >= n_src for i in range(n_servers)], "super_read_only": [i >= n_src for i in range(n_servers)],
        "channel_count": [0 if i < n_src else 1 for i in range(n_servers)],
    })
    bl_server, bl_seq, bl_name, bl_prev = [], [], [], []
    for i, name in enumerate(names):
        u_src = uuids[i] if i < n_src else _uuid(1, (i - n_src) % n_src)
        bl_server += [name, name]; bl_seq += [0, 1]
        bl_name += ["binlog.000001", "binlog.000002"]
        bl_prev += ["", f"{u_src}:1-100"]
    n_logs = len(bl_server)
    binary_logs = _table(BINARY_LOGS.to_arrow(), {
        "run_id": [RUN_ID] * n_logs, "run_date": [RUN_DATE] * n_logs, "server": bl_server,
        "cluster": [None] * n_logs, "read_at": [READ_AT] * n_logs, "seq": bl_seq, "log_name": bl_name,
        "file_size": [1 << 20] * n_logs, "previous_gtids": bl_prev, "previous_gtids_read": [True] * n_logs,
    })
    n = len(ch_server)
    channels = _table(CHANNELS.to_arrow(), {
        "run_id": [RUN_ID] * n, "run_date": [RUN_DATE] * n, "server": ch_server,
        "cluster": [clusters[n_src + i] for i in range(n)], "read_at": [READ_AT] * n,
        "channel_name": [""] * n, "status_statement": ["SHOW REPLICA STATUS"] * n,
        "source_server": ch_source, "source_method": ["name"] * n,
        "source_host": ch_host, "source_port": [3306] * n, "source_uuid": ch_uuid,
        "retrieved_gtid_set": ch_set, "executed_gtid_set": [executed[n_src + i] for i in range(n)],
        "io_running": ["Yes"] * n, "sql_running": ["Yes"] * n, "auto_position": [True] * n,
        "last_io_errno": [0] * n, "last_io_error": [""] * n, "last_sql_errno": [0] * n, "last_sql_error": [""] * n,
        "source_log_file": ["binlog.000002"] * n, "read_source_log_pos": [4000] * n,
        "relay_source_log_file": ["binlog.000002"] * n, "exec_source_log_pos": [4000] * n,
        "seconds_behind_source": [0] * n, "received_transaction_set": ch_set, "service_state": ["ON"] * n,
        "queueing_transaction": [""] * n,
    })
    relay = RELAY_LOG_TAIL.to_arrow().empty_table()
    return {"servers": servers, "binary_logs": binary_logs, "channels": channels, "relay_log_tail": relay,
            "expected_errant": errant}


def bench(spark, n_pairs: int, root: str) -> dict[str, float]:
    """Build and write the tables, then time the whole audit stage; returns the figures."""
    from jobs.audit import audit_run
    from jobs.config import parse_config
    from jobs.delta_io import read_arrow, write_run_frame, write_run_rows
    from schemas.collection import BINARY_LOGS, CHANNELS, RELAY_LOG_TAIL, RUNS, SERVERS

    t0 = time.perf_counter()
    tables = synthetic_tables(n_pairs)
    build_s = time.perf_counter() - t0
    warehouse = os.path.join(root, f"wh-{n_pairs}")
    t0 = time.perf_counter()
    for schema, name in ((SERVERS, "servers"), (BINARY_LOGS, "binary_logs"), (CHANNELS, "channels"),
                         (RELAY_LOG_TAIL, "relay_log_tail")):
        write_run_frame(spark, schema, spark.createDataFrame(tables[name], schema=schema.to_spark()),
                        warehouse=warehouse, run_id=RUN_ID)
    write_run_rows(spark, "collection_errors", [], warehouse=warehouse, run_id=RUN_ID)
    write_run_rows(spark, RUNS, [{"run_id": RUN_ID, "run_date": RUN_DATE, "started_at": READ_AT,
                                  "finished_at": READ_AT, "warehouse": warehouse, "writer": "delta-spark",
                                  "servers_configured": tables["servers"].num_rows, "servers_discovered": 0,
                                  "servers_ok": tables["servers"].num_rows, "servers_partial": 0,
                                  "servers_failed": 0, "error_count": 0, "collector_version": "bench"}],
                   warehouse=warehouse, run_id=RUN_ID)
    write_s = time.perf_counter() - t0
    config = parse_config({"warehouse": warehouse, "defaults": {"user": "bench"},
                           "servers": [{"name": "src0", "host": "src0.db"}]})
    t0 = time.perf_counter()
    outcome = audit_run(spark, config, run_id=RUN_ID, send_alerts=False)
    audit_s = time.perf_counter() - t0
    findings = read_arrow(warehouse, "findings", RUN_ID).to_pylist()
    errant = sum(1 for f in findings if f["check_id"] == "errant_transactions")
    if errant != tables["expected_errant"]:
        raise SystemExit(f"{n_pairs} pairs: found {errant} errant pairs, expected {tables['expected_errant']}; "
                         f"checks found {sorted({f['check_id'] for f in findings})}")
    return {"pairs": n_pairs, "build_s": build_s, "write_s": write_s, "audit_s": audit_s,
            "us_per_pair": audit_s / n_pairs * 1e6, "pairs_per_s": n_pairs / audit_s,
            "findings": outcome.summary["findings_open"]}


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [10_000, 100_000]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import tempfile

    from jobs.config import SparkSettings
    from jobs.spark import build_session

    spark = build_session(SparkSettings(master="local[2]", app_name="bench-audit-pairs",
                                        conf={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "6g"}))
    root = tempfile.mkdtemp(prefix="bench-audit-")
    bench(spark, 1000, root)  # warm-up: JVM, Python workers
    print(f"{'pairs':>9} {'build s':>8} {'write s':>8} {'audit s':>8} {'us/pair':>8} {'pairs/s':>9} {'findings':>8}")
    for n in sizes:
        r = bench(spark, n, root)
        print(f"{r['pairs']:>9} {r['build_s']:>8.1f} {r['write_s']:>8.1f} {r['audit_s']:>8.1f} "
              f"{r['us_per_pair']:>8.1f} {r['pairs_per_s']:>9.0f} {r['findings']:>8}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
