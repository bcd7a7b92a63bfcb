"""The collection stage: every server of the inventory into the Delta snapshot tables.

Flow (docs/collection.md): the validated inventory -> optional topology discovery -> what
planning needs of every server (server_uuid, names, each channel's source): from the previous
run's tables on later nights (:mod:`jobs.previous_run`), from a light probe of the servers they
do not cover -> :func:`plan_read_order` groups servers by replication component and orders each
group deepest replica first -> one Spark stage reads the groups (a task per bundle of groups, one
flat pool of threads inside each task, each server under its own deadline, each channel's source
resolved once, unchanged binary-log headers not read again) -> the components whose topology
turned out different from the plan are read again, in the order tonight's reads give -> the
tasks that read write what they read to a staging table in the warehouse (:mod:`jobs.read_staging`:
a lost executor costs a re-read of files, never of servers) -> one DataFrame per table from it
-> one atomic Delta commit per table replaces the run's rows (``runs`` last, so a run listed
there is complete) -> the staging table is removed.

The driver holds the inventory, the plan and per-run counters; the rows never reach it. Also
``gtid-audit config check FILE``: validate a configuration and print the resolved inventory
(secret references only, never a secret).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import logging
import os
import secrets as _secrets
import sys
import time
from dataclasses import dataclass, field
from typing import Sequence

from jobs import collector, mysql_connection, previous_run, read_plan, read_staging
from jobs.collector import RunContext
from jobs.config import (DEFAULT_PER_TASK_CONCURRENCY, MAX_PER_TASK_CONCURRENCY, ConfigError, GtidAuditConfig,
                         exposed_secret_files, load_config)
from jobs.delta_io import WRITER, write_run_frame, write_run_rows
from jobs.read_plan import Probe, plan_read_order
from jobs.server_spec import ReadSettings, ServerSpec
from schemas.collection import (BINARY_LOGS, CHANNELS, COLLECTION_ERRORS, GROUP_MEMBERS, GROUP_REPLICATION,
                                RELAY_LOG_TAIL, RUNS, SERVERS)

__all__ = ["CollectSummary", "new_run_id", "run_collect", "probe_inventory", "discover",
           "package_version", "plain_text_warning", "register"]

log = logging.getLogger("gtid_audit.collect")

#: The per-run tables the read stage fills, in write order (``runs`` is written after them).
READ_TABLES = (SERVERS, CHANNELS, BINARY_LOGS, RELAY_LOG_TAIL, GROUP_REPLICATION, GROUP_MEMBERS, COLLECTION_ERRORS)
#: Collection errors written to the job's log (the table has them all).
LOGGED_ERRORS = 20
#: Server names one warning line lists (the rest are counted).
NAMED_SERVERS = 20


def _names(names: Sequence[str], limit: int = NAMED_SERVERS) -> str:
    """``a, b, c`` or ``a, b, ... and 7 more``: a bounded list of server names for one line."""
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def plain_text_warning(plain: Sequence[str], count: int | None = None) -> str | None:
    """The run's one warning about servers read over plain text (``plain``: their names, or the
    first of them when ``count`` says how many there are), or None when every connection was TLS."""
    count = len(plain) if count is None else count
    if not count:
        return None
    names = sorted(plain)[:NAMED_SERVERS]
    more = f" and {count - len(names)} more" if count > len(names) else ""
    return (f"{count} server(s) audited over plain text, without TLS: {', '.join(names)}{more} "
            "(set tls.enabled with ca_file and verify_cert for them; docs/deployment.md, Security)")


def new_run_id(now: dt.datetime | None = None) -> str:
    """A fresh run id: UTC start time plus a random suffix, e.g. ``20240101T020000Z-a1b2c3``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + _secrets.token_hex(3)


def package_version() -> str:
    """The installed gtid-audit version ('unknown' from a source tree never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gtid-audit")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class CollectSummary:
    """What one collection did (counters only), for the summary line and the audit stage."""

    run_id: str
    run_date: dt.date
    warehouse: str
    rows: dict[str, int] = field(default_factory=dict)
    servers_ok: int = 0
    servers_partial: int = 0
    servers_failed: int = 0
    errors: int = 0
    headers_reused: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        n = self.servers_ok + self.servers_partial + self.servers_failed
        return (f"collect run_id={self.run_id} servers={n} ok={self.servers_ok} "
                f"partial={self.servers_partial} failed={self.servers_failed} errors={self.errors} "
                f"channels={self.rows.get('channels', 0)} binary_logs={self.rows.get('binary_logs', 0)} "
                f"relay_events={self.rows.get('relay_log_tail', 0)} headers_reused={self.headers_reused} "
                f"writer={WRITER} "
                f"warehouse={self.warehouse} seconds={self.seconds:.1f}")


def _partitions(concurrency: int, per_task: int, n_items: int) -> int:
    """Tasks to run at once so that tasks x threads per task stays within ``concurrency``."""
    return max(1, min(n_items, max(1, concurrency // per_task)))


def _local_mode(master: str) -> bool:
    """``local`` or ``local[...]`` (``local[4]``, ``local[*]``, ``local[4,2]``); not
    ``local-cluster[...]``, whose executors are processes of their own, as on a cluster."""
    return master == "local" or master.startswith("local[")


def read_settings(spark, config: GtidAuditConfig) -> ReadSettings:
    """The tasks' settings, with the threads per task resolved: ``per_task_concurrency`` when the
    configuration sets it; else, in local mode, as many as make the tasks Spark runs at once read
    ``concurrency`` servers between them: ``concurrency // defaultParallelism``, at least
    :data:`jobs.config.DEFAULT_PER_TASK_CONCURRENCY`, at most ``concurrency`` and at most
    :data:`jobs.config.MAX_PER_TASK_CONCURRENCY`; else that default. The floor division is
    :func:`_partitions`' own, so the two agree (``local[3]``, 64: 3 tasks of 21 threads).
    ``defaultParallelism`` is the local cores unless ``spark.default.parallelism`` says otherwise,
    and then that setting is followed. With 8 threads a task, ``local[2]`` read 16 servers at
    once where ``concurrency`` says 64, the rest of the tasks waiting for a core
    (docs/benchmarks.md, "Fewer statements per read, and threads per task in local mode")."""
    collection = config.collection
    settings = collection.read_settings()
    if collection.per_task_concurrency is None and _local_mode(spark.sparkContext.master):
        slots = max(1, spark.sparkContext.defaultParallelism)
        per_task = max(DEFAULT_PER_TASK_CONCURRENCY, collection.concurrency // slots)
        per_task = min(per_task, collection.concurrency, MAX_PER_TASK_CONCURRENCY)
        settings = dataclasses.replace(settings, per_task_concurrency=per_task)
    return settings


def probe_inventory(spark, specs: Sequence[ServerSpec], config: GtidAuditConfig,
                    want_replicas: bool = False) -> dict[str, Probe]:
    """Probe ``specs`` in one Spark stage; returns name -> Probe (one small record per server:
    what planning needs)."""
    if not specs:
        return {}
    settings = read_settings(spark, config)
    n = _partitions(config.collection.concurrency, settings.per_task_concurrency, len(specs))
    task = functools.partial(collector.probe_partition, settings=settings, want_replicas=want_replicas)
    probes = spark.sparkContext.parallelize(list(specs), n).mapPartitions(task).collect()
    return {p.name: p for p in probes}


def discover(spark, config: GtidAuditConfig, specs: Sequence[ServerSpec]
             ) -> tuple[list[ServerSpec], dict[str, Probe]]:
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
        found = probe_inventory(spark, frontier, config, want_replicas=True)
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
                all_specs.append(new)
                nxt.append(new)
        frontier = nxt
    return all_specs, probes


def _bundles(groups: list, n: int) -> list[list]:
    """Spread the groups over ``n`` tasks, largest first, each to the least loaded task."""
    bundles: list[list] = [[] for _ in range(n)]
    load = [0] * n
    for group in groups:
        i = load.index(min(load))
        bundles[i].append(group)
        load[i] += sum(len(w) for w in group)
    return bundles


def _phase(name: str, servers: int, t0: float) -> None:
    """One line per collection phase as it ends (the benchmarks mark phases by it)."""
    log.info("collect phase=%s servers=%d seconds=%.1f", name, servers, time.monotonic() - t0)


@dataclass
class _ReadStage:
    """The servers to read in one Spark stage, planned."""

    groups: list            # jobs.collector.Group values
    inventory: list         # jobs.pairs.InventoryServer values for the resolver


def _read_stage(spark, config: GtidAuditConfig, ctx: RunContext, stage: _ReadStage, summaries, broadcasts: list,
                uri: str):
    """Run the reads of ``stage`` in one Spark job whose tasks write what they read to the staging
    table ``uri`` (:mod:`jobs.read_staging`), and return that table as a DataFrame: every server
    is read once, here, and what is derived from it later reads files. A task that fails is
    retried and reads its own servers again; a task that completed is never run again, even when
    its executor is lost. The broadcasts it made are added to ``broadcasts``. ``summaries`` (a
    DataFrame from :func:`jobs.previous_run.binlog_summaries`, or None) reaches each task with the
    previous run's binary logs of its own servers, through a cogroup on the task's index (the
    shuffle comes before the reads: the reads and the staging write are one stage)."""
    sc = spark.sparkContext
    n = _partitions(config.collection.concurrency, ctx.settings.per_task_concurrency, len(stage.groups))
    bundles = _bundles(stage.groups, n)
    inventory = sc.broadcast(stage.inventory)
    broadcasts.append(inventory)
    task = functools.partial(read_staging.staged_partition, ctx=ctx, inventory=inventory)
    if summaries is None:
        items = sc.parallelize(bundles, n)
    else:
        task_of = sc.broadcast({spec.name: i for i, bundle in enumerate(bundles)
                                for group in bundle for wave in group for spec, *_ in wave})
        broadcasts.append(task_of)
        previous = (summaries.rdd
                    .map(lambda r: (task_of.value.get(r["server"]), collector.PreviousBinlogs(
                        r["server"], r["server_uuid"], r["gtid_executed"], r["files"])))
                    .filter(lambda kv: kv[0] is not None))
        items = sc.parallelize(list(enumerate(bundles)), n).cogroup(previous, n)
    return read_staging.stage_reads(spark, items.mapPartitions(task), uri)


def _groups(plan, by_name: dict[str, ServerSpec], planned: dict[str, Probe], only=None) -> list:
    """The plan's groups as tasks receive them (``only``: the groups to keep)."""
    return [[[(by_name[n], plan.read_order.get(n), plan.depth.get(n), planned.get(n)) for n in wave]
             for wave in group] for group in plan.groups if only is None or only(group)]


def run_collect(spark, config: GtidAuditConfig, *, run_id: str | None = None,
                started: dt.datetime | None = None) -> CollectSummary:
    """Collect the whole inventory into the warehouse and return the counters. Rerunning a
    ``run_id`` replaces that run's rows in every table.

    The read order comes from a probe of every server on a first night. On later nights
    (``collection.use_previous_run``) it comes from the previous run's tables, and no server is
    probed: one the previous run does not cover (new, moved, unreadable then) is planned as
    unknown (alone, read first). After the read, every server whose read shows another
    topology than its plan (an unknown one included) is placed by what it showed, and the
    replication groups it then belongs to, when it has a source or a replica, are read again in
    the order tonight's reads give (:mod:`jobs.previous_run`). Each server's rows come from one
    read: a re-read replaces them.
    """
    from pyspark.sql import functions as F

    from jobs.delta_io import run_date_of, validate_run_id

    started = started or dt.datetime.now(dt.timezone.utc)
    t0 = time.monotonic()
    rerun = bool(run_id)
    run_id = validate_run_id(run_id) if run_id else new_run_id(started)
    warehouse = config.resolved_warehouse()
    staging = read_staging.run_staging_uri(warehouse, run_id)
    attempt = read_staging.new_attempt()
    # a rerun of a run id keeps the date ``runs`` recorded for it: its rows stay in their partition
    run_date = (run_date_of(spark, warehouse, run_id) if rerun else None) or started.date()
    ctx = RunContext(run_id=run_id, run_date=run_date, settings=read_settings(spark, config))

    specs = list(config.inventory())
    configured = len(specs)
    log.info("collect: MySQL protocol %s (mysql-connector-python %s); %d servers read at once, %d threads per "
             "task", mysql_connection.protocol_implementation(), mysql_connection.connector_version(),
             config.collection.concurrency, ctx.settings.per_task_concurrency)
    for warning in exposed_secret_files(specs):
        log.warning("%s", warning)
    probes: dict[str, Probe] = {}
    t_phase = time.monotonic()
    if config.discovery.enabled:
        specs, probes = discover(spark, config, specs)
    prev = (previous_run.previous_run(spark, warehouse, run_id)
            if config.collection.use_previous_run else None)
    planned = previous_run.planning_probes(spark, warehouse, prev, specs) if prev else {}
    missing = [s for s in specs if s.name not in probes and s.name not in planned]
    if prev:   # unknown to the previous run: planned alone; its read tells where it belongs
        planned.update((s.name, Probe(s.name, None)) for s in missing)
    elif missing:
        probes.update(probe_inventory(spark, missing, config))
        _phase("probe", len(missing), t_phase)
    planned = {n: p for n, p in planned.items() if n not in probes}
    plan_input = {**planned, **probes}
    by_name = {s.name: s for s in specs}
    summaries = previous_run.binlog_summaries(spark, warehouse, prev) if prev else None

    t_phase = time.monotonic()
    plan = plan_read_order(specs, plan_input)
    broadcasts: list = []
    read_staging.remove(spark, staging)   # what an interrupted attempt of this run id left
    try:
        rows = _read_stage(spark, config, ctx, _ReadStage(
            _groups(plan, by_name, planned), read_plan.inventory_for_resolution(specs, plan_input)),
            summaries, broadcasts, read_staging.stage_uri(staging, attempt, "read"))
        _phase("read", len(specs), t_phase)
        # Servers whose read shows another topology than last night's: their components (as
        # tonight's reads draw them) are read again, in the order those reads give.
        seen = read_staging.staged_probes(rows)
        if seen:
            t_phase = time.monotonic()
            fresh = {**plan_input, **{p.name: p for p in seen}}
            changed = {p.name for p in seen}
            replan = plan_read_order(specs, fresh)
            # a group of one has no pair: its read needs no order (a new standalone server)
            again = _groups(replan, by_name, {}, only=lambda g: sum(map(len, g)) > 1
                            and any(n in changed for w in g for n in w))
            names = {spec.name for group in again for wave in group for spec, *_ in wave}
            log.info("collect: %d server(s) not as planned from run %s (%s); %d server(s) of their "
                     "replication groups read again", len(changed), prev.run_id if prev else "-",
                     _names(sorted(changed)), len(names))
            if again:
                reread = _read_stage(spark, config, ctx, _ReadStage(
                    again, read_plan.inventory_for_resolution(specs, fresh)), summaries, broadcasts,
                    read_staging.stage_uri(staging, attempt, "reread"))
                _phase("reread", len(names), t_phase)
                # the re-read servers' rows replace their first read's rows
                drop = spark.createDataFrame([(n,) for n in sorted(names)], "server STRING")
                rows = rows.join(F.broadcast(drop), "server", "left_anti").unionByName(reread)
        summary = _write_tables(spark, rows, ctx, warehouse, prev)
    finally:
        for b in broadcasts:
            b.destroy()
        read_staging.remove(spark, staging)
    summary.rows["runs"] = write_run_rows(spark, RUNS, [{
        "run_id": run_id, "run_date": ctx.run_date, "started_at": started,
        "finished_at": dt.datetime.now(dt.timezone.utc), "config_file": config.source_path,
        "warehouse": warehouse, "writer": WRITER, "spark_master": spark.sparkContext.master,
        "servers_configured": configured, "servers_discovered": len(specs) - configured,
        "servers_ok": summary.servers_ok, "servers_partial": summary.servers_partial,
        "servers_failed": summary.servers_failed, "error_count": summary.errors,
        "collector_version": package_version(),
    }], warehouse=warehouse, run_id=run_id)
    summary.seconds = time.monotonic() - t0
    return summary


def _write_tables(spark, rows, ctx: RunContext, warehouse: str, prev) -> CollectSummary:
    """One DataFrame per table from the staged reads (``rows``, :mod:`jobs.read_staging`), each
    written in one Delta commit; the run's warnings (plain-text servers, the first collection
    errors) logged."""
    from pyspark.sql import functions as F

    run_id = ctx.run_id
    summary = CollectSummary(run_id=run_id, run_date=ctx.run_date, warehouse=warehouse)
    counts = {r["table"]: r["count"] for r in rows.groupBy("table").count().collect()}
    frames = {t.name: read_staging.table_frame(rows, t.name) for t in READ_TABLES}
    reused = int(counts.get(collector.REUSED_HEADER, 0))
    if reused:
        kept = read_staging.table_frame(rows, collector.REUSED_HEADER)
        frames["binary_logs"] = frames["binary_logs"].unionByName(
            previous_run.restore_reused_headers(spark, warehouse, prev, kept))
    for t in READ_TABLES:
        write_run_frame(spark, t, frames[t.name], warehouse=warehouse, run_id=run_id, run_date=ctx.run_date)
        summary.rows[t.name] = int(counts.get(t.name, 0)) + (reused if t.name == "binary_logs" else 0)
    summary.headers_reused = reused
    plain_count = int(counts.get(collector.PLAIN_TEXT, 0))
    if plain_count:
        plain = [r["server"] for r in rows.where(F.col("table") == F.lit(collector.PLAIN_TEXT))
                 .select("server").orderBy("server").limit(NAMED_SERVERS).collect()]
        log.warning("%s", plain_text_warning(plain, plain_count))
    by_status = {r["status"]: r["count"] for r in frames["servers"].groupBy("status").count().collect()}
    for err in (frames["collection_errors"].orderBy("server", "seq").limit(LOGGED_ERRORS)
                .select("server", "error_class", "channel_name", "message").collect()):
        log.warning("%s: %s%s: %s", err["server"], err["error_class"],
                    f" (channel {err['channel_name']!r})" if err["channel_name"] else "", err["message"])
    summary.servers_ok = int(by_status.get("ok", 0))
    summary.servers_partial = int(by_status.get("partial", 0))
    summary.servers_failed = int(by_status.get("failed", 0))
    summary.errors = summary.rows.get("collection_errors", 0)
    if summary.errors > LOGGED_ERRORS:
        log.warning("... and %d more collection error(s) in the collection_errors table",
                    summary.errors - LOGGED_ERRORS)
    return summary


# --- CLI -------------------------------------------------------------------------------------------

def _maintenance_line(m) -> str:
    kept = sorted(t for t, days in m.retention_days.items() if days is None)
    retained = ", ".join(f"{t}={days}d" for t, days in sorted(m.retention_days.items()) if days is not None)
    return (f"maintenance: after_run={'on' if m.after_run else 'off'} retention: {retained}; kept: {', '.join(kept)}; "
            f"optimize={'on' if m.optimize else 'off'} "
            f"vacuum={'every ' + str(m.vacuum_every_days) + ' nights' if m.vacuum else 'off'} "
            f"deleted_file_retention={m.deleted_file_retention_hours}h")


def _cmd_config_check(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    specs = config.inventory()
    audit = config.audit
    out = [f"config {config.source_path}: valid",
           f"warehouse: {config.resolved_warehouse()}",
           f"collection: concurrency={config.collection.concurrency} "
           f"per_task={config.collection.per_task_concurrency or 'auto'} "
           f"deadline={config.collection.server_deadline_s}s retries={config.collection.retries.attempts}",
           f"discovery: {'on' if config.discovery.enabled else 'off'}",
           f"audit: fail_on={audit.fail_on} silences={len(audit.silences)} "
           f"alertmanager={audit.alertmanager.url if audit.alertmanager else 'off'}",
           f"spark: master={config.spark.master or 'from spark-submit, else local[*]'} "
           f"conf={len(config.spark.conf)} setting(s)",
           _maintenance_line(config.maintenance),
           f"servers ({len(specs)}):"]
    problems = 0
    for spec in specs:
        line = "  " + spec.describe()
        if spec.password_env and spec.password_env not in os.environ:
            line += "  [password_env not set here]"
            problems += 1
        elif spec.password_file and not os.path.isfile(spec.password_file):
            line += "  [password_file missing here]"
            problems += 1
        out.append(line)
    if problems:
        out.append(f"warning: {problems} secret reference(s) do not resolve on this machine "
                   "(executors resolve them: they must resolve there)")
    out += [f"warning: {w}" for w in exposed_secret_files(specs)]
    plain = [s.name for s in specs if s.transport() == "plain"]
    if_offered = [s.name for s in specs if s.transport() == "tls-if-offered"]
    if plain:
        out.append(f"warning: {len(plain)} server(s) would be audited over plain text (tls.enabled: false): "
                   f"{_names(plain)}")
    if if_offered:
        out.append(f"warning: {len(if_offered)} server(s) have no tls section and would be audited over "
                   f"plain text if they offer no TLS (unverified TLS if they do): {_names(if_offered)}")
    print("\n".join(out))
    return 3 if problems and args.strict else 0


def register(subparsers) -> None:
    """Add ``config check`` to the gtid-audit parser (``collect`` is in jobs.pipeline)."""
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
