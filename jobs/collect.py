"""``gtid-audit collect``: read every server of the inventory into the Delta snapshot tables.

Flow (docs/collection.md): resolve secrets on the driver -> optional topology discovery ->
a light probe of every server (server_uuid, each channel's source) -> :func:`plan_read_order`
groups servers by replication component and orders each group deepest replica first -> one
Spark stage reads the groups (a task per bundle of groups, a bounded thread pool inside each
task, each server under its own deadline) -> the rows come back to the driver -> one atomic
Delta commit per table replaces the run's rows (``runs`` last, so a run listed there is
complete).

Also ``gtid-audit config check FILE``: validate a configuration and print the resolved
inventory (secret references only, never a secret).
"""
from __future__ import annotations

import argparse
import datetime as dt
import logging
import secrets as _secrets
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from jobs.collector import (
    Probe,
    ReadPlan,
    RunContext,
    ServerResult,
    plan_read_order,
    probe_server,
    read_server,
)
from jobs.config import (
    CollectionSettings,
    ConfigError,
    GtidAuditConfig,
    Secret,
    ServerSpec,
    load_config,
    resolve_password,
)
from jobs.delta_io import DeltaIOError, choose_writer, validate_run_id, write_run_rows
from schemas.collection import COLLECTION_TABLES

__all__ = ["CollectSummary", "new_run_id", "run_collect", "collect_rows", "probe_inventory",
           "discover", "main", "register"]

log = logging.getLogger("gtid_audit.collect")

CONFIG_ERROR = "config_error"  # error_class of a server whose secret reference does not resolve


def new_run_id(now: dt.datetime | None = None) -> str:
    """A fresh run id: UTC start time plus a random suffix, e.g. ``20240101T020000Z-a1b2c3``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + _secrets.token_hex(3)


@dataclass
class CollectSummary:
    """What one run did, for the one-line summary and callers such as ``gtid-audit run``."""

    run_id: str
    run_date: dt.date
    warehouse: str
    writer: str
    rows: dict[str, int] = field(default_factory=dict)
    servers_ok: int = 0
    servers_partial: int = 0
    servers_failed: int = 0
    errors: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        n = self.servers_ok + self.servers_partial + self.servers_failed
        return (f"collect run_id={self.run_id} servers={n} ok={self.servers_ok} "
                f"partial={self.servers_partial} failed={self.servers_failed} errors={self.errors} "
                f"channels={self.rows.get('channels', 0)} binary_logs={self.rows.get('binary_logs', 0)} "
                f"relay_events={self.rows.get('relay_log_tail', 0)} writer={self.writer} "
                f"warehouse={self.warehouse} seconds={self.seconds:.1f}")


# --- Spark tasks (top-level functions: pickled by reference) ---------------------------------------

def _probe_task(specs: Iterable[ServerSpec], passwords: Mapping[str, Secret | None],
                settings: CollectionSettings, want_replicas: bool) -> Iterator[Probe]:
    specs = list(specs)
    if not specs:
        return iter(())
    with ThreadPoolExecutor(max_workers=min(settings.per_task_concurrency, len(specs))) as pool:
        return iter(list(pool.map(
            lambda s: probe_server(s, passwords.get(s.name), settings, want_replicas), specs)))


def _collect_task(bundles: Iterable[list[tuple[tuple[ServerSpec, ...], ...]]],
                  passwords: Mapping[str, Secret | None], ctx: RunContext, plan: ReadPlan
                  ) -> Iterator[tuple[str, dict[str, Any]]]:
    """Read the groups of one partition: per group, wave after wave (deepest replicas first),
    the servers of a wave in parallel on a bounded pool."""
    out: list[tuple[str, dict[str, Any]]] = []
    with ThreadPoolExecutor(max_workers=ctx.settings.per_task_concurrency) as pool:
        for bundle in bundles:
            for group in bundle:
                for wave in group:
                    results: list[ServerResult] = list(pool.map(
                        lambda s: read_server(
                            s, passwords.get(s.name), ctx, read_order=plan.read_order.get(s.name),
                            topology_depth=plan.depth.get(s.name), address_book=plan.address_book,
                            uuid_book=plan.uuid_book),
                        wave))
                    for result in results:
                        out.extend(result.rows())
    return iter(out)


def _partitions(concurrency: int, per_task: int, n_items: int) -> int:
    """Tasks to run at once so that tasks x threads per task stays within ``concurrency``."""
    return max(1, min(n_items, max(1, concurrency // per_task)))


def probe_inventory(spark, specs: Sequence[ServerSpec], passwords: Mapping[str, Secret | None],
                    settings: CollectionSettings, want_replicas: bool = False) -> dict[str, Probe]:
    """Probe ``specs`` in one Spark stage; returns name -> Probe."""
    if not specs:
        return {}
    n = _partitions(settings.concurrency, settings.per_task_concurrency, len(specs))
    rdd = spark.sparkContext.parallelize(list(specs), n)
    probes = rdd.mapPartitions(
        lambda it: _probe_task(it, passwords, settings, want_replicas)).collect()
    return {p.name: p for p in probes}


def discover(spark, config: GtidAuditConfig, specs: Sequence[ServerSpec],
             passwords: dict[str, Secret | None]) -> tuple[list[ServerSpec], dict[str, Probe]]:
    """Walk the topology from the seeds: each channel's Source_Host:Source_Port on replicas and
    SHOW REPLICAS on sources (only replicas that set ``report_host`` appear there), bounded by
    ``discovery.max_depth`` levels and ``discovery.max_servers`` servers. A found server gets the
    connection settings of the server that named it and the name ``host:port``."""
    d = config.discovery
    by_name = {s.name: s for s in specs}
    known_addr = {a: s.name for s in specs for a in s.addresses()}
    known_uuid: set[str] = set()
    frontier = [by_name[n] for n in d.seeds] if d.seeds else list(specs)
    probes: dict[str, Probe] = {}
    all_specs = list(specs)
    for _level in range(d.max_depth + 1):
        if not frontier:
            break
        found = probe_inventory(spark, frontier, passwords, config.collection, want_replicas=True)
        probes.update(found)
        known_uuid |= {p.server_uuid for p in probes.values() if p.server_uuid}
        nxt: list[ServerSpec] = []
        for spec in frontier:
            probe = found.get(spec.name)
            for host, port, uuid in (probe.sources + probe.replicas) if probe else ():
                if not host or not port or (uuid and uuid in known_uuid):
                    continue
                addr = (host.lower(), port)
                if addr in known_addr or len(all_specs) >= d.max_servers:
                    continue
                new = config.discovered_spec(f"{host}:{port}", host, port, like=spec)
                known_addr[addr] = new.name
                passwords[new.name] = passwords.get(spec.name)
                all_specs.append(new)
                nxt.append(new)
        frontier = nxt
    return all_specs, probes


def collect_rows(spark, specs: Sequence[ServerSpec], passwords: Mapping[str, Secret | None],
                 ctx: RunContext, probes: Mapping[str, Probe] | None = None
                 ) -> tuple[dict[str, list[dict[str, Any]]], ReadPlan]:
    """Probe (what ``probes`` lacks), plan and read every server; rows per table."""
    probes = dict(probes or {})
    missing = [s for s in specs if s.name not in probes]
    probes.update(probe_inventory(spark, missing, passwords, ctx.settings))
    plan = plan_read_order(specs, probes)
    by_name = {s.name: s for s in specs}
    spec_groups = [tuple(tuple(by_name[n] for n in wave) for wave in group) for group in plan.groups]
    n = _partitions(ctx.settings.concurrency, ctx.settings.per_task_concurrency, len(spec_groups))
    bundles: list[list] = [[] for _ in range(n)]
    load = [0] * n
    for group in spec_groups:  # largest groups first (plan order), each to the least loaded task
        i = load.index(min(load))
        bundles[i].append(group)
        load[i] += sum(len(w) for w in group)
    rows: dict[str, list[dict[str, Any]]] = {t.name: [] for t in COLLECTION_TABLES}
    if spec_groups:
        rdd = spark.sparkContext.parallelize(bundles, n)
        for table, row in rdd.mapPartitions(lambda it: _collect_task(it, passwords, ctx, plan)).collect():
            rows[table].append(row)
    return rows, plan


def _unresolvable_rows(ctx: RunContext, spec: ServerSpec, message: str) -> list[tuple[str, dict]]:
    now = dt.datetime.now(dt.timezone.utc)
    base = {"run_id": ctx.run_id, "run_date": ctx.run_date, "server": spec.name, "cluster": spec.cluster}
    return [
        ("servers", {**base, "read_at": None, "host": spec.host, "port": spec.port,
                     "aliases": ",".join(f"{h}:{p}" for h, p in spec.aliases) or None,
                     "discovered": spec.discovered, "status": "failed"}),
        ("collection_errors", {**base, "read_at": now, "seq": 0, "error_class": CONFIG_ERROR,
                               "message": message, "statement": None}),
    ]


def run_collect(config: GtidAuditConfig, spark=None, run_id: str | None = None) -> CollectSummary:
    """Collect the whole inventory into the warehouse and return the summary. Rerunning a
    ``run_id`` replaces that run's rows in every table."""
    from jobs.spark import build_session

    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    run_id = validate_run_id(run_id) if run_id else new_run_id(started)
    ctx = RunContext(run_id=run_id, run_date=started.date(), settings=config.collection)
    spark = spark or build_session(config.spark)
    writer = choose_writer(spark, config.spark.delta_writer)
    warehouse = config.resolved_warehouse()

    specs = list(config.inventory())
    passwords: dict[str, Secret | None] = {}
    extra_rows: list[tuple[str, dict]] = []
    readable = []
    for spec in specs:
        try:
            passwords[spec.name] = resolve_password(spec)
            readable.append(spec)
        except ConfigError as exc:  # the message names the reference, never a secret
            extra_rows.extend(_unresolvable_rows(ctx, spec, str(exc)))
    probes: dict[str, Probe] = {}
    discovered = 0
    if config.discovery.enabled:
        all_specs, probes = discover(spark, config, readable, passwords)
        discovered = len(all_specs) - len(readable)
        readable = all_specs
    rows, _plan = collect_rows(spark, readable, passwords, ctx, probes)
    for table, row in extra_rows:
        rows[table].append(row)

    summary = CollectSummary(run_id=run_id, run_date=ctx.run_date, warehouse=warehouse, writer=writer)
    for srow in rows["servers"]:
        status = srow["status"]
        if status == "ok":
            summary.servers_ok += 1
        elif status == "partial":
            summary.servers_partial += 1
        else:
            summary.servers_failed += 1
    summary.errors = len(rows["collection_errors"])
    for err in rows["collection_errors"]:  # the messages never carry a secret (collector.py)
        log.warning("%s: %s%s: %s", err["server"], err["error_class"],
                    f" (channel {err['channel_name']!r})" if err.get("channel_name") else "", err["message"])
    rows["runs"] = [{
        "run_id": run_id, "run_date": ctx.run_date, "started_at": started,
        "finished_at": dt.datetime.now(dt.timezone.utc), "config_file": config.source_path,
        "warehouse": warehouse, "writer": writer, "spark_master": spark.sparkContext.master,
        "servers_configured": len(specs), "servers_discovered": discovered,
        "servers_ok": summary.servers_ok, "servers_partial": summary.servers_partial,
        "servers_failed": summary.servers_failed, "error_count": summary.errors,
        "collector_version": _package_version(),
    }]
    for table in COLLECTION_TABLES:  # ``runs`` is last in COLLECTION_TABLES' write order below
        if table.name == "runs":
            continue
        summary.rows[table.name] = write_run_rows(table, rows[table.name], warehouse=warehouse,
                                                  run_id=run_id, writer=writer, spark=spark,
                                                  storage_options=config.storage_options)
    summary.rows["runs"] = write_run_rows("runs", rows["runs"], warehouse=warehouse, run_id=run_id,
                                          writer=writer, spark=spark,
                                          storage_options=config.storage_options)
    summary.seconds = time.monotonic() - t0
    return summary


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gtid-audit")
    except PackageNotFoundError:
        return "unknown"


# --- CLI -------------------------------------------------------------------------------------------

def _cmd_collect(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
        summary = run_collect(config, run_id=args.run_id)
    except (ConfigError, ValueError, DeltaIOError) as exc:
        print(f"gtid-audit collect: {exc}", file=sys.stderr)
        return 1
    print(summary.line())
    return 0


def _cmd_config_check(args: argparse.Namespace) -> int:
    import os

    from jobs.audit import AuditError, load_audit_settings

    try:
        config = load_config(args.file)
        audit = load_audit_settings(config.audit, config.source_path or args.file)
    except (ConfigError, AuditError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    specs = config.inventory()
    out = [f"config {config.source_path}: valid",
           f"warehouse: {config.resolved_warehouse()}",
           f"collection: concurrency={config.collection.concurrency} "
           f"per_task={config.collection.per_task_concurrency} "
           f"deadline={config.collection.server_deadline_s}s retries={config.collection.retries.attempts}",
           f"discovery: {'on' if config.discovery.enabled else 'off'}",
           f"audit: fail_on={audit.fail_on} silences={len(audit.silences)} "
           f"alertmanager={audit.alertmanager.url if audit.alertmanager else 'off'}",
           f"servers ({len(specs)}):"]
    problems = 0
    for spec in specs:
        line = "  " + spec.describe()
        if spec.password_env and spec.password_env not in os.environ:
            line += "  [password_env not set]"
            problems += 1
        elif spec.password_file and not os.path.isfile(spec.password_file):
            line += "  [password_file missing]"
            problems += 1
        out.append(line)
    if problems:
        out.append(f"warning: {problems} secret reference(s) do not resolve in this environment")
    print("\n".join(out))
    return 3 if problems and args.strict else 0


def register(subparsers) -> None:
    """Add ``collect`` and ``config check`` to the gtid-audit parser."""
    p = subparsers.add_parser("collect", help="read every server into the Delta snapshot tables",
                              description="Read every server of the inventory into the Delta "
                                          "snapshot tables and print a one-line summary.")
    p.add_argument("--config", required=True, metavar="FILE", help="configuration YAML")
    p.add_argument("--run-id", metavar="ID", help="run id (default: new); rerunning an id replaces its rows")
    p.set_defaults(func=_cmd_collect)
    c = subparsers.add_parser("config", help="configuration tools")
    sub = c.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    chk = sub.add_parser("check", help="validate a configuration and list the resolved inventory",
                         description="Validate FILE (every section, audit included) and print the "
                                     "resolved inventory; never prints a secret. Exit 1 when invalid.")
    chk.add_argument("file", metavar="FILE", help="configuration YAML to validate")
    chk.add_argument("--strict", action="store_true",
                     help="exit 3 when a secret reference (password_env / password_file) does not "
                          "resolve on this machine (default: a warning)")
    chk.set_defaults(func=_cmd_config_check)


def main(argv: list[str] | None = None) -> int:
    """``python -m jobs.collect collect --config FILE`` (same sub-commands as gtid-audit)."""
    parser = argparse.ArgumentParser(prog="gtid-audit")
    register(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
