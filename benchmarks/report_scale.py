"""Benchmark of `gtid-audit report` on a synthetic warehouse of N servers and R runs.

    .venv/bin/python benchmarks/report_scale.py                        # 10,000 servers, 10 runs
    .venv/bin/python benchmarks/report_scale.py --servers 1000 --runs 3 --keep /tmp/wh

The synthetic fleet: N/10 clusters of ten servers. In each cluster a source, eight replicas of
it and one replica of the first replica (a chain); in one cluster in 25 the eighth replica has a
second channel from the next cluster's source (multi-source). Every server has three binary logs
with their Previous_gtids. Tables are written with the project's writer
(``jobs.delta_io.write_run_rows``, delta-spark in local mode) in the registered schemas, one commit per table and
run, so the report reads exactly what the job writes.

Faults (seeded, varying from run to run, findings written as the audit writes them):
about 3 % of clusters have a replica with errant transactions (critical), 1 % a replica refused
because its source purged what it needs (critical), 4 % a replica one purge away from that
(warning, and really lagging in the sets, so the purge-horizon table has rows), 2 % of servers a
config warning (sync_binlog), 0.5 % of servers not collected (critical). Everything else is
healthy and in sync.

Printed: the time to write the tables (not the figure of interest), then for the newest run the
wall time of ``write_report`` (reading with delta-rs, the model, the graphs, the charts, the
page), the file size and its gzip size, and the number of graphs drawn. The figures are recorded
in docs/benchmarks.md (section "Report").
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

DAY0 = dt.date(2026, 11, 1)


def _uuid(cluster: int, member: int) -> str:
    return f"{cluster:08x}-0000-4000-8000-{member:012x}"


def _key(*parts) -> str:
    return hashlib.sha1("|".join("" if p is None else str(p) for p in parts).encode()).hexdigest()


def run_rows(n_servers: int, run_no: int, seed: int = 7) -> dict[str, list[dict]]:
    """The rows of every table the report reads, for run number ``run_no`` (see module doc)."""
    rng = random.Random(seed * 1000 + run_no)
    run_date = DAY0 + dt.timedelta(days=run_no)
    run_id = f"{run_date:%Y%m%d}T030000Z-bench"
    at = dt.datetime.combine(run_date, dt.time(3, 0), tzinfo=dt.timezone.utc)
    base = {"run_id": run_id, "run_date": run_date}
    n_clusters = max(1, n_servers // 10)
    head = 10_000 + 500 * run_no             # transactions of each source
    servers, channels, binary_logs, findings = [], [], [], []

    def finding(check_id, severity, cluster, server, source, channel, title, detail, gtid_set=None, count=None,
                remediation=None, evidence=None):
        findings.append({**base, "finding_key": _key(check_id, server, source, channel), "check_id": check_id,
                         "severity": severity, "cluster": cluster, "server": server, "source": source,
                         "channel": channel, "title": title, "detail": detail, "gtid_set": gtid_set,
                         "gtid_count": count, "first_seen": DAY0 + dt.timedelta(days=max(0, run_no - 2)),
                         "status": "open", "silenced": False, "silence_id": None, "remediation": remediation,
                         "check_version": 1, "evidence": json.dumps(evidence or {}, sort_keys=True)})

    for c in range(n_clusters):
        cluster = f"cluster-{c:04d}"
        src = f"c{c:04d}-src"
        su = _uuid(c, 0)
        executed = f"{su}:1-{head}"
        fault = rng.random()
        errant = fault < 0.03
        refused = 0.03 <= fault < 0.04
        near = 0.04 <= fault < 0.08
        members = [src] + [f"c{c:04d}-r{i}" for i in range(1, 10)]
        for i, name in enumerate(members):
            failed = rng.random() < 0.005
            uuid = _uuid(c, i)
            lag = 0
            if i == 3 and near:
                lag = 9000     # before the oldest binary log's end: margin 0
            elif i == 4 and refused:
                lag = head     # lacks what was purged
            own = f"{executed}" if lag == 0 else f"{su}:1-{head - lag}" if lag < head else ""
            if i == 2 and errant:
                own = f"{own},{uuid}:1-{rng.randint(1, 5)}"
            servers.append({**base, "server": name, "cluster": cluster, "read_at": at, "host": f"{name}.db",
                            "port": 3306, "aliases": None, "discovered": False,
                            "status": "failed" if failed else "ok", "read_order": 0 if i else 1,
                            "topology_depth": 0 if i == 0 else (2 if i == 9 else 1),
                            "server_uuid": None if failed else uuid, "server_id": c * 10 + i + 1,
                            "version": None if failed else "8.4.3",
                            "gtid_mode": None if failed else "ON",
                            "enforce_gtid_consistency": None if failed else "ON",
                            "gtid_executed": None if failed else own,
                            "gtid_purged": None if failed else f"{su}:1-100", "log_bin": True,
                            "sync_binlog": 1, "innodb_flush_log_at_trx_commit": 1})
            if failed:
                finding("collection_failed", "critical", cluster, name, None, None, "Server could not be collected",
                        f"{name}: unreachable: Can't connect to MySQL server on '{name}.db:3306'")
                continue
            if rng.random() < 0.02:
                finding("config_sync_binlog", "warning", cluster, name, None, None, "sync_binlog is not 1",
                        f"{name} has sync_binlog=0")
            for seq, prev in enumerate((f"{su}:1-100", f"{su}:1-{head - 8000}", f"{su}:1-{head - 200}")):
                binary_logs.append({**base, "server": name, "cluster": cluster, "read_at": at, "seq": seq,
                                    "log_name": f"binlog.{seq + 40:06d}", "file_size": 1 << 28,
                                    "previous_gtids": prev if i == 0 else "", "previous_gtids_read": True})
            if i == 0:
                continue
            source = members[1] if i == 9 else src
            links = [("", source)]
            if i == 8 and c % 25 == 0 and n_clusters > 1:
                links.append(("other", f"c{(c + 1) % n_clusters:04d}-src"))
            for channel, of in links:
                of_uuid = _uuid((c + 1) % n_clusters, 0) if channel else su
                retrieved = f"{of_uuid}:1-{head - lag}" if lag < head else ""
                channels.append({**base, "server": name, "cluster": cluster, "read_at": at, "channel_name": channel,
                                 "status_statement": "SHOW REPLICA STATUS", "source_host": f"{of}.db",
                                 "source_port": 3306, "source_uuid": of_uuid, "source_server": of,
                                 "retrieved_gtid_set": retrieved, "executed_gtid_set": own,
                                 "io_running": "No" if lag else "Yes", "sql_running": "Yes",
                                 "auto_position": True, "seconds_behind_source": None if lag else 0})
                evidence = {"replica_gtid_executed": own, "replica_retrieved_gtid_set": retrieved,
                            "source_gtid_executed": executed, "source_gtid_purged": f"{su}:1-100"}
                if i == 2 and errant and not channel:
                    errant_set = own.split(",", 1)[1]
                    n = int(errant_set.rsplit("-", 1)[1])
                    finding("errant_transactions", "critical", cluster, name, of, channel,
                            f"{name} has {n} errant transaction(s)",
                            f"Replica {name} has {n} transaction(s) that its source {of} never executed.",
                            errant_set, n, f"Run on {of}:\nSET GTID_NEXT='{errant_set.split('-')[0]}1'; BEGIN; COMMIT;",
                            evidence)
                if i == 4 and refused and not channel:
                    finding("source_purged_required_gtids", "critical", cluster, name, of, channel,
                            f"{of} purged transactions {name} lacks", "The source purged what the replica needs.",
                            f"{su}:1-100", 100, "Reprovision the replica from a backup of the source.", evidence)
                if i == 3 and near and not channel:
                    finding("replica_near_purge_horizon", "warning", cluster, name, of, channel,
                            f"{name} is one purge of binlog.000040 away from being refused by {of}",
                            "The replica lacks transactions written to the oldest binary log.",
                            f"{su}:{head - 9000 + 1}-{head - 8000}", 1000, "Get the replica's receiver running.",
                            evidence)
    by_check: dict[str, dict[str, int]] = {}
    by_sev = {"critical": 0, "warning": 0, "info": 0}
    for f in findings:
        by_check.setdefault(f["check_id"], {}).setdefault(f["severity"], 0)
        by_check[f["check_id"]][f["severity"]] += 1
        by_sev[f["severity"]] += 1
    failed = sum(1 for s in servers if s["status"] == "failed")
    runs = [{**base, "started_at": at, "finished_at": at + dt.timedelta(minutes=5), "config_file": None,
             "warehouse": "synthetic", "writer": "delta-rs", "spark_master": None, "servers_configured": len(servers),
             "servers_discovered": 0, "servers_ok": len(servers) - failed, "servers_partial": 0,
             "servers_failed": failed, "error_count": failed, "collector_version": "bench"}]
    summary = [{**base, "audited_at": at + dt.timedelta(minutes=8), "collect_seconds": 300.0, "audit_seconds": 180.0,
                "servers_audited": len(servers) - failed, "servers_failed": failed, "pairs_audited": len(channels),
                "findings_open": len(findings), "findings_silenced": 0, "findings_resolved": 0,
                "findings_by_check": json.dumps(by_check, sort_keys=True), "findings_by_severity": json.dumps(by_sev),
                "alerts_by_event": "{}", "alerts_delivered": None, "expired_silences": "[]", "fail_on": "critical",
                "exit_code": 2}]
    return {"runs": runs, "servers": servers, "channels": channels, "binary_logs": binary_logs,
            "findings": findings, "run_summary": summary}


def write_report_tables(spark, warehouse: str, rows: dict[str, list[dict]]) -> None:
    """The report's input tables of one synthetic run, made as the audit makes them
    (``jobs.audit.write_report_inputs``, on the executors) from the tables just written."""
    from jobs.audit import output_of, pair_frame, pair_output_frame, resolved_pairs, snapshot_frame, write_report_inputs
    from jobs.delta_io import read_frame
    from schemas import get_table

    run = rows["runs"][0]
    servers, channels = (read_frame(spark, warehouse, t, run["run_id"]) for t in ("servers", "channels"))
    snaps = snapshot_frame(servers, read_frame(spark, warehouse, "binary_logs", run["run_id"]))
    relay = spark.createDataFrame([], schema=get_table("relay_log_tail").to_spark())
    write_report_inputs(spark, warehouse, run_id=run["run_id"], run_date=run["run_date"], servers_df=servers,
                        channels_df=channels,
                        horizon_df=output_of(pair_output_frame(
                            pair_frame(resolved_pairs(snaps, channels), snaps, relay)), "horizon"))


def main(argv: list[str] | None = None) -> int:
    from jobs.config import SparkSettings
    from jobs.delta_io import write_run_rows
    from jobs.report import write_report
    from jobs.spark import build_session

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--keep", metavar="DIR", help="write the warehouse and the report here and keep them")
    args = parser.parse_args(argv)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="report-bench-"))
    warehouse = root / "warehouse"
    spark = build_session(SparkSettings(master="local[2]", app_name="bench-report"))
    try:
        started = time.perf_counter()
        for run_no in range(args.runs):
            rows = run_rows(args.servers, run_no)
            run_id = rows["runs"][0]["run_id"]
            for table, table_rows in rows.items():
                write_run_rows(spark, table, table_rows, warehouse=str(warehouse), run_id=run_id)
            write_report_tables(spark, str(warehouse), rows)
        print(f"wrote {args.runs} runs of {args.servers:,} servers in {time.perf_counter() - started:.1f} s "
              f"({len(rows['findings']):,} open findings in the newest run)")
        timings = []
        for attempt in range(3):
            started = time.perf_counter()
            page = Path(write_report(str(warehouse), out=root / "report.html", progress=False))
            timings.append(time.perf_counter() - started)
        body = page.read_bytes()
        text = body.decode()
        graphs, healthy = text.count('<div class="graph">'), text.count('class="cluster healthy"')
        print(f"report: first call {timings[0]:.2f} s (a fresh process: imports, Vega engine start), "
              f"best of 3 {min(timings):.2f} s, "
              f"{len(body) / 1e6:.2f} MB, gzip {len(gzip.compress(body)) / 1e6:.2f} MB, "
              f"{graphs} graphs drawn, {healthy} healthy group")
        print(f"page: {page}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
