"""``gtid-audit audit | run | findings | explain``: the nightly audit of one collected run.

Data flow (docs/audit.md has the table contracts):

1. read the run's snapshot tables (``servers``, ``channels``, ``binary_logs``, ``relay_log_tail``,
   ``collection_errors``) and the previous audited run's ``servers`` and ``findings``;
2. resolve every channel's source (``jobs.pairs``) on the driver, one DNS cache for the run;
3. in Spark: join one row per pair (channel + replica snapshot + source snapshot + relay-log
   tail) and one row per server (+ its previous snapshot), and run the gtid_core checks over
   Arrow batches (``mapInArrow``): ``run_pair_checks`` and ``run_server_checks`` per row of each
   batch, snapshots cached per batch so a source's sets are parsed once per batch;
4. on the driver: ``collection_failed`` findings, silences, history (first_seen, resolved rows),
   the alert feed; write ``findings``, ``alerts``, ``uuid_registry``, ``run_summary``; the
   JSON-lines feed; optionally Alertmanager;
5. exit code: 2 when open, unsilenced findings at or above ``--fail-on`` exist, 1 for a job
   error, 0 otherwise.
"""
from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import logging
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from jobs.alerts import (
    AlertDeliveryError,
    AlertmanagerClient,
    AlertmanagerSettings,
    alert_events,
    finding_key,
    reconcile_findings,
    severity_rank,
    to_alertmanager,
    write_jsonl,
)
from jobs.pairs import Resolution, SourceResolver, inventory_from_rows
from jobs.silences import Silence, active_silences, expired_silences, match_silence, parse_silences

__all__ = [
    "AuditSettings",
    "AuditError",
    "AuditOutcome",
    "JOB_CHECKS",
    "load_audit_settings",
    "exit_code_for",
    "audit_run",
    "register",
    "main",
]

log = logging.getLogger("gtid_audit.audit")

FailOn = Literal["critical", "warning", "never"]

#: Columns of a finding as the checks produce it (before history and silences).
RAW_FINDING_COLUMNS = ("finding_key", "check_id", "severity", "cluster", "server", "source", "channel",
                       "title", "detail", "gtid_set", "gtid_count", "remediation", "check_version",
                       "evidence")
_INT64_MAX = 2**63 - 1


class AuditError(RuntimeError):
    """Raised when the audit cannot run at all: no collected run, an unknown run id, a
    configuration error in the ``audit`` section. The message names the run or the key."""


class AuditSettings(BaseModel):
    """The ``audit:`` section of the configuration (validated here; jobs/config.py passes it
    through as a mapping)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fail_on: FailOn = "critical"
    alert_min_severity: Literal["info", "warning", "critical"] = "warning"
    silences: tuple[Silence, ...] = ()
    alertmanager: AlertmanagerSettings | None = None

    @field_validator("silences", mode="before")
    @classmethod
    def _silences(cls, value: object) -> object:
        return parse_silences(value)


def load_audit_settings(raw: Mapping[str, Any] | None, source: str = "<config>") -> AuditSettings:
    """Validate the raw ``audit`` mapping; errors name the file and the key. A silence naming
    a check id that does not exist is an error, not a silence that never matches."""
    try:
        settings = AuditSettings.model_validate(dict(raw or {}))
    except ValidationError as exc:
        problems = "; ".join(f"audit.{'.'.join(map(str, e['loc']))}: {e['msg']} (value {e.get('input')!r})"
                             for e in exc.errors())
        raise AuditError(f"{source}: invalid audit section: {problems}") from None
    except ValueError as exc:  # SilenceError from the silences validator
        raise AuditError(f"{source}: {exc}") from None
    known = check_catalogue()
    for i, silence in enumerate(settings.silences):
        if silence.check is not None and silence.check not in known:
            raise AuditError(f"{source}: audit.silences[{i}].check: unknown check id {silence.check!r} "
                             f"(gtid-audit explain lists them: {', '.join(sorted(known))})")
    return settings


def exit_code_for(rows: Iterable[Mapping[str, Any]], fail_on: str) -> int:
    """2 when an open, unsilenced finding has a severity at or above ``fail_on``; else 0.
    ``fail_on='never'`` always gives 0."""
    if fail_on == "never":
        return 0
    threshold = severity_rank(fail_on)
    for r in rows:
        if r.get("status") == "open" and not r.get("silenced") and severity_rank(r["severity"]) >= threshold:
            return 2
    return 0


# ---------------------------------------------------------------------------------------------
# the checks the job itself makes (the others live in gtid_core.checks)


def _job_check(check_id: str, severity: str, title: str, meaning: str, server_error: str | None,
               remediation: str):
    from gtid_core.checks import CheckInfo
    from gtid_core.findings import Severity

    return CheckInfo(check_id=check_id, version=1, default_severity=Severity(severity), scope="job",
                     title=title, meaning=meaning, server_error=server_error, remediation=remediation)


#: The checks the audit job makes itself, in gtid_core's ``CheckInfo`` shape (scope ``job``).
JOB_CHECKS = {c.check_id: c for c in (
    _job_check("collection_failed", "critical", "Server could not be collected",
               "Nothing could be read from this server in this run, so none of its checks ran: the "
               "audit is blind there. The finding carries the error class of collection_errors "
               "(unreachable, timeout, auth_failed, privilege_missing, gtid_mode_off, ...). Findings "
               "about it from the previous run are carried over as open, never resolved.",
               None,
               "Look at collection_errors for the run (message, errno); fix reachability, grants "
               "(REPLICATION CLIENT, REPLICATION SLAVE, SELECT on performance_schema.replication_*) "
               "or the server, then wait for the next run."),
    _job_check("collection_partial", "warning", "Server was only partly collected",
               "Some statements failed on this server (see collection_errors); the checks that need "
               "the missing data could not see everything.",
               None,
               "Read collection_errors for the run and fix the failing statement (often a missing grant)."),
    _job_check("snapshot_invalid", "critical", "Server reported a value the audit cannot parse",
               "A value read from the server (a GTID set, a version, a state) could not be parsed, so "
               "the checks of this server or pair could not run. The detail quotes the value.",
               "ER_MALFORMED_GTID_SET_SPECIFICATION (1772) if the server itself were given that text",
               "Compare the quoted value with what the server prints now; report a parser bug if the "
               "server accepts it."),
    _job_check("source_unresolved", "warning", "Replica's source is not in the inventory",
               "The channel's Source_Host:Source_Port matches no inventory server by name, alias or "
               "address, and its Source_UUID belongs to no server of this run (or several servers "
               "match): the pair checks of this channel could not run.",
               None,
               "Add the source to the inventory (or its address to a server's aliases), or fix the "
               "channel (CHANGE REPLICATION SOURCE TO ...). If the source is gone, the UUID registry "
               "named in the detail says which server last had its UUID."),
    _job_check("source_uuid_mismatch", "warning", "Source address now leads to another server",
               "The server now at the channel's Source_Host:Source_Port has a different server_uuid "
               "than the channel's Source_UUID (from the last connection): the source was rebuilt, a "
               "virtual IP moved, or a failover happened that this replica has not reconnected "
               "through yet. The next reconnect goes to a different server than the one it "
               "replicated from; the pair checks are computed against the server at the address.",
               "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER or ER_MASTER_HAS_PURGED_REQUIRED_GTIDS may follow "
               "at the reconnect",
               "Confirm the intended source; read this pair's other findings (errant transactions, "
               "purged required GTIDs) before the replica reconnects."),
)}


def _row(check_id: str, severity: str, *, cluster: str | None, server: str, source: str | None = None,
         channel: str | None = None, title: str, detail: str, gtid_set: str | None = None,
         gtid_count: int | None = None, remediation: str | None = None, check_version: int = 1,
         evidence: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {
        "finding_key": finding_key(check_id, server, source, channel),
        "check_id": check_id, "severity": severity, "cluster": cluster, "server": server,
        "source": source, "channel": channel, "title": title, "detail": detail,
        "gtid_set": gtid_set, "gtid_count": gtid_count if gtid_count is None or gtid_count <= _INT64_MAX else None,
        "remediation": remediation, "check_version": check_version,
        "evidence": json.dumps(dict(evidence), sort_keys=True, default=str) if evidence else None,
    }


def _job_finding(check_id: str, **kw: Any) -> dict[str, Any]:
    info = JOB_CHECKS[check_id]
    kw.setdefault("title", info.title)
    kw.setdefault("remediation", info.remediation)
    return _row(check_id, kw.pop("severity", info.default_severity.value), **kw)


#: What to do first, by the error class of collection_errors (the generic advice otherwise).
_COLLECTION_ADVICE = {
    "unreachable": "The server refused or dropped the connection: check that it runs, that host and "
                   "port in the configuration are right, and that firewalls let the auditor through.",
    "timeout": "The server did not answer within connect_timeout_s / read_timeout_s / "
               "server_deadline_s: check its load and the network, or raise the timeouts for it.",
    "auth_failed": "The server rejected the audit account (errno 1045 and similar): check the password "
                   "reference (password_env / password_file / option_file) resolves to the account's "
                   "current password, and that the account exists for the auditor's host.",
    "privilege_missing": "The audit account lacks a grant: apply deploy/grants.sql (REPLICATION CLIENT, "
                         "REPLICATION SLAVE, SELECT on performance_schema.replication_*).",
    "config_error": "The configuration could not be resolved for this server (e.g. a password "
                    "reference that does not exist on the machine running the job): run "
                    "`gtid-audit config check --strict FILE`.",
}


def collection_findings(servers: Sequence[Mapping[str, Any]],
                        errors: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``collection_failed`` (status 'failed') and ``collection_partial`` (status 'partial')
    findings, carrying the error classes and first messages of ``collection_errors``."""
    by_server: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for e in sorted(errors, key=lambda e: (e["server"], e.get("seq") or 0)):
        by_server[e["server"]].append(e)
    out = []
    for s in servers:
        status = s.get("status")
        if status not in ("failed", "partial"):
            continue
        errs = by_server.get(s["server"], [])
        classes = sorted({e["error_class"] for e in errs}) or ["unknown"]
        first = errs[0] if errs else {}
        detail = (f"{'nothing' if status == 'failed' else 'not everything'} could be read from "
                  f"{s['server']} ({s.get('host')}:{s.get('port')}): error class "
                  f"{', '.join(classes)}" + (f"; {first.get('message')}" if first.get("message") else ""))
        check_id = "collection_failed" if status == "failed" else "collection_partial"
        advice = [_COLLECTION_ADVICE[c] for c in classes if c in _COLLECTION_ADVICE]
        out.append(_job_finding(
            check_id, cluster=s.get("cluster"), server=s["server"], detail=detail,
            remediation="\n".join(advice + [JOB_CHECKS[check_id].remediation]),
            evidence={"error_classes": classes, "errors": [
                {k: e.get(k) for k in ("error_class", "errno", "message", "statement", "channel_name")}
                for e in errs[:10]]},
        ))
    return out


def resolution_findings(channel: Mapping[str, Any], res: Resolution, cluster: str | None) -> list[dict[str, Any]]:
    """``source_unresolved`` / ``source_uuid_mismatch`` for one channel's resolution."""
    out = []
    server, name = channel["server"], channel.get("channel_name") or ""
    if res.source is None:
        out.append(_job_finding(
            "source_unresolved", cluster=cluster, server=server, channel=name,
            detail=f"channel {name or '(default)'!s} of {server}: {res.problem}",
            evidence={**res.evidence, "candidates": list(res.candidates), "registry_owner": res.source_uuid_owner}))
    elif res.uuid_mismatch:
        out.append(_job_finding(
            "source_uuid_mismatch", cluster=cluster, server=server, source=res.source, channel=name,
            detail=f"channel {name or '(default)'!s} of {server}: {res.uuid_mismatch}",
            evidence={**res.evidence, "registry_owner": res.source_uuid_owner}))
    return out


# ---------------------------------------------------------------------------------------------
# table rows -> gtid_core snapshots (runs inside Spark tasks: plain dicts in)

#: channels-table column -> the server's column name where they differ (the snapshot builders
#: match names case-insensitively, so every other column is passed as is).
_STATUS_RENAMES = {"io_running": "Replica_IO_Running", "sql_running": "Replica_SQL_Running",
                   "io_state": "Replica_IO_State", "sql_running_state": "Replica_SQL_Running_State"}
_CONNECTION_COLUMNS = {"received_transaction_set": "RECEIVED_TRANSACTION_SET",
                       "service_state": "SERVICE_STATE",
                       "queueing_transaction": "QUEUEING_TRANSACTION",
                       "queueing_transaction_start_queue_timestamp": "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP",
                       "last_queued_transaction": "LAST_QUEUED_TRANSACTION",
                       "receiver_last_error_number": "LAST_ERROR_NUMBER",
                       "receiver_last_error_message": "LAST_ERROR_MESSAGE"}
_APPLIER_CONFIG_COLUMNS = {"assign_gtids_to_anonymous_transactions_type": "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE",
                           "assign_gtids_to_anonymous_transactions_value": "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE"}
#: channels-table columns the channel snapshot and the job read (the rest stays in the JVM).
_CHANNEL_COLUMNS = ("channel_name", "source_host", "source_port", "source_uuid", "source_server_id",
                    "retrieved_gtid_set", "executed_gtid_set", "io_running", "sql_running", "sql_running_state",
                    "last_io_errno", "last_io_error", "last_io_error_timestamp", "last_sql_errno",
                    "last_sql_error", "last_sql_error_timestamp", "auto_position", "source_log_file",
                    "read_source_log_pos", "relay_log_file", "relay_log_pos", "relay_source_log_file",
                    "exec_source_log_pos", "seconds_behind_source", "relay_tail_events",
                    *_CONNECTION_COLUMNS, *_APPLIER_CONFIG_COLUMNS)
_SERVER_COLUMNS = ("server_uuid", "server_id", "version", "gtid_mode", "enforce_gtid_consistency",
                   "gtid_executed", "gtid_purged", "log_bin", "log_replica_updates", "sync_binlog",
                   "innodb_flush_log_at_trx_commit", "relay_log_recovery", "replica_parallel_workers",
                   "replica_preserve_commit_order", "binlog_format", "relay_log_info_repository",
                   "read_only", "super_read_only")


def server_snapshot(row: Mapping[str, Any]):
    """A ``ServerSnapshot`` from a servers-table row carrying ``binary_logs`` (a list of
    binary_logs-table rows, None when the server's binary logs were not read)."""
    from gtid_core.snapshots import ServerSnapshot

    logs = row.get("binary_logs")
    if logs is not None:
        logs = [{"Log_name": b["log_name"], "File_size": b.get("file_size"), "Encrypted": b.get("encrypted"),
                 "Previous_gtids": b.get("previous_gtids") if b.get("previous_gtids_read") else None}
                for b in sorted(logs, key=lambda b: b["seq"])]
    variables = {k: row.get(k) for k in _SERVER_COLUMNS if k in row}
    return ServerSnapshot.from_rows(variables, binary_logs=logs, name=row["server"])


def channel_snapshot(row: Mapping[str, Any]):
    """A ``ChannelSnapshot`` from a channels-table row."""
    from gtid_core.snapshots import ChannelSnapshot

    status = {_STATUS_RENAMES.get(k, k): v for k, v in row.items()
              if k not in _CONNECTION_COLUMNS and k not in _APPLIER_CONFIG_COLUMNS}
    connection = {v: row.get(k) for k, v in _CONNECTION_COLUMNS.items() if k in row}
    applier = {v: row.get(k) for k, v in _APPLIER_CONFIG_COLUMNS.items() if k in row}
    if all(v is None for v in connection.values()):
        connection = None
    if all(v is None for v in applier.values()):
        applier = None
    return ChannelSnapshot.from_rows(status, connection_status=connection, applier_configuration=applier)


def relay_tail_rows(rows: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """relay_log_tail-table rows -> SHOW RELAYLOG EVENTS rows (server column names), in order."""
    if rows is None:
        return None
    return [{"Log_name": r["log_name"], "Pos": r["pos"], "Event_type": r["event_type"],
             "Server_id": r.get("event_server_id"), "End_log_pos": r.get("end_log_pos"), "Info": r.get("info")}
            for r in sorted(rows, key=lambda r: r["seq"])]


# ---------------------------------------------------------------------------------------------
# checks in Spark


def _raw_arrow_schema():
    import pyarrow as pa

    from schemas.audit import FINDINGS

    return pa.schema([FINDINGS.to_arrow().field(c) for c in RAW_FINDING_COLUMNS])


def _raw_spark_schema():
    from pyspark.sql import types as T

    from schemas.audit import FINDINGS

    fields = {f.name: f for f in FINDINGS.to_spark().fields}
    return T.StructType([fields[c] for c in RAW_FINDING_COLUMNS])


def _finding_to_row(f: Any, cluster: str | None) -> dict[str, Any]:
    d = f.to_dict()
    return _row(d["check_id"], d["severity"], cluster=cluster, server=d["server"], source=d.get("source"),
                channel=d.get("channel"), title=d["title"], detail=d["detail"], gtid_set=d.get("gtid_set"),
                gtid_count=d.get("gtid_count"), remediation=d.get("remediation") or None,
                check_version=int(d["check_version"]), evidence=d.get("evidence") or None)


def _invalid(server: Mapping[str, Any], exc: Exception, *, source: str | None = None,
             channel: str | None = None) -> dict[str, Any]:
    where = server["server"] + (f" (channel {channel or '(default)'} from {source})" if source else "")
    return _job_finding("snapshot_invalid", cluster=server.get("cluster"), server=server["server"],
                        source=source, channel=channel, detail=f"{where}: {exc}",
                        evidence={"error": str(exc)})


class _SnapshotCache:
    """Server snapshots of one Arrow batch, parsed once per server name."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def get(self, row: Mapping[str, Any]) -> Any:
        name = row["server"]
        if name not in self._cache:
            self._cache[name] = server_snapshot(row)
        return self._cache[name]


def _other_channels_gtids(row: Mapping[str, Any], channel_name: str):
    """What the replica legitimately gets through its *other* channels: each one's
    Retrieved_Gtid_Set and its resolved source's gtid_executed (None for a one-channel replica)."""
    from gtid_core import GtidSet

    others = [c for c in (row.get("all_channels") or []) if (c["channel_name"] or "") != channel_name]
    if not others:
        return None
    out = GtidSet.EMPTY
    for c in others:
        for text in (c.get("retrieved_gtid_set"), c.get("source_gtid_executed")):
            if text:
                out = out | GtidSet.parse(text)
    return out


def check_pair_batches(batches: Iterator[Any], registry: Mapping[str, str]) -> Iterator[Any]:
    """mapInArrow body: one input row per resolved pair (columns ``channel``, ``replica``,
    ``source_snapshot``, ``relay_tail``, ``all_channels``), findings rows out."""
    import pyarrow as pa

    from gtid_core.checks import FleetContext, run_pair_checks
    from gtid_core.errors import GtidCoreError
    from gtid_core.relay_log import events_from_rows

    schema = _raw_arrow_schema()
    registry = dict(registry)
    for batch in batches:
        cache = _SnapshotCache()
        out: list[dict[str, Any]] = []
        for r in batch.to_pylist():
            rep, src, ch = r["replica"], r["source_snapshot"], r["channel"]
            name = ch.get("channel_name") or ""
            try:
                replica = cache.get(rep)
                source = cache.get(src)
                channel = channel_snapshot(ch)
                tail = None
                if ch.get("relay_tail_events") is not None:  # NULL: the tail was not read
                    tail = events_from_rows(relay_tail_rows(r["relay_tail"] or []))
                fleet = FleetContext(uuid_registry=registry, other_channels_gtids=_other_channels_gtids(r, name))
                found = run_pair_checks(replica, channel, source, tail, fleet)
            except GtidCoreError as exc:
                out.append(_invalid(rep, exc, source=src["server"], channel=name))
                continue
            out.extend(_finding_to_row(f, rep.get("cluster")) for f in found)
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def check_server_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: one row per server (``snapshot``, ``previous``), findings rows out."""
    import pyarrow as pa

    from gtid_core.checks import run_server_checks
    from gtid_core.errors import GtidCoreError

    schema = _raw_arrow_schema()
    for batch in batches:
        out: list[dict[str, Any]] = []
        for r in batch.to_pylist():
            snap = r["snapshot"]
            try:
                current = server_snapshot(snap)
                previous = server_snapshot(r["previous"]) if r["previous"] is not None else None
                found = run_server_checks(current, previous)
            except GtidCoreError as exc:
                out.append(_invalid(snap, exc))
                continue
            out.extend(_finding_to_row(f, snap.get("cluster")) for f in found)
        yield pa.RecordBatch.from_pylist(out, schema=schema)


_BINLOG_FIELDS = ("seq", "log_name", "file_size", "encrypted", "previous_gtids", "previous_gtids_read")
_TAIL_FIELDS = ("seq", "log_name", "pos", "event_type", "event_server_id", "end_log_pos", "info")


def snapshot_frame(servers_df, binlogs_df):
    """One row per readable server: its columns plus ``binary_logs`` (list of structs, NULL when
    none were read)."""
    from pyspark.sql import functions as F

    cols = ["server", "cluster", "status", *_SERVER_COLUMNS]
    logs = binlogs_df.groupBy("server").agg(
        F.collect_list(F.struct(*_BINLOG_FIELDS)).alias("binary_logs"))
    return (servers_df.where(F.col("status") != "failed").select(*cols)
            .join(logs, "server", "left"))


def pair_frame(snapshots_df, channels_df, relay_df, resolved_df):
    """One row per resolved pair whose both servers were read: ``channel`` (struct of the
    channels row), ``replica`` and ``source_snapshot`` (snapshot structs), ``relay_tail``."""
    from pyspark.sql import functions as F

    snap_struct = F.struct(*[F.col(c) for c in snapshots_df.columns])
    rep = snapshots_df.select(F.col("server").alias("_rep"), snap_struct.alias("replica"))
    src = snapshots_df.select(F.col("server").alias("_src"), snap_struct.alias("source_snapshot"))
    tail = relay_df.groupBy("server", "channel_name").agg(
        F.collect_list(F.struct(*_TAIL_FIELDS)).alias("relay_tail"))
    wanted = [c for c in _CHANNEL_COLUMNS if c in channels_df.columns]
    ch = channels_df.select("server", "channel_name", F.struct(*[F.col(c) for c in wanted]).alias("channel"))
    # every channel of each replica, with its source's gtid_executed (multi-source replicas)
    src_exec = snapshots_df.select(F.col("server").alias("_s"), F.col("gtid_executed").alias("source_gtid_executed"))
    every = (channels_df.select("server", "channel_name", "retrieved_gtid_set")
             .join(resolved_df, ["server", "channel_name"], "left")
             .join(src_exec, F.col("source_server") == F.col("_s"), "left")
             .groupBy("server")
             .agg(F.collect_list(F.struct("channel_name", "retrieved_gtid_set", "source_gtid_executed"))
                  .alias("all_channels")))
    pairs = ch.join(resolved_df, ["server", "channel_name"], "inner")
    pairs = pairs.join(tail, ["server", "channel_name"], "left")
    pairs = pairs.join(every, "server", "left")
    pairs = pairs.join(rep, pairs["server"] == rep["_rep"], "inner")
    pairs = pairs.join(src, pairs["source_server"] == src["_src"], "inner")
    return pairs.select("channel", "replica", "source_snapshot", "relay_tail", "all_channels")


def server_frame(snapshots_df, previous_df):
    """One row per readable server: ``snapshot`` and ``previous`` (NULL without a previous run)."""
    from pyspark.sql import functions as F

    cur = snapshots_df.select(F.col("server").alias("_k"),
                              F.struct(*[F.col(c) for c in snapshots_df.columns]).alias("snapshot"))
    if previous_df is None:
        return cur.select("snapshot", F.lit(None).cast(cur.schema["snapshot"].dataType).alias("previous"))
    prev = previous_df.select(F.col("server").alias("_p"),
                              F.struct(*[F.col(c) for c in previous_df.columns]).alias("previous"))
    return cur.join(prev, cur["_k"] == prev["_p"], "left").select("snapshot", "previous")


@dataclass(frozen=True)
class _Value:
    value: Any


def _shipped(spark, value: Any) -> Any:
    """A broadcast variable (one copy per executor) when the session has a SparkContext; under
    Spark Connect, which has none, the value travels in the task closure."""
    try:
        return spark.sparkContext.broadcast(value)
    except Exception:  # Spark Connect: no sparkContext
        return _Value(value)


def run_checks(spark, *, servers_df, binlogs_df, channels_df, relay_df, resolved_df,
               previous_servers_df=None, previous_binlogs_df=None,
               registry: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every gtid_core check of one run, in Spark; returns the raw findings rows (driver)."""
    snaps = snapshot_frame(servers_df, binlogs_df).cache()
    reg = _shipped(spark, dict(registry))
    try:
        pairs = pair_frame(snaps, channels_df, relay_df, resolved_df)
        pair_findings = pairs.mapInArrow(lambda it: check_pair_batches(it, reg.value), _raw_spark_schema())
        prev = None
        if previous_servers_df is not None:
            prev = snapshot_frame(previous_servers_df, previous_binlogs_df)
        server_findings = server_frame(snaps, prev).mapInArrow(check_server_batches, _raw_spark_schema())
        table = pair_findings.unionByName(server_findings).toArrow()
    finally:
        snaps.unpersist()
        if hasattr(reg, "destroy"):
            reg.destroy()
    return table.to_pylist()


# ---------------------------------------------------------------------------------------------
# the run: driver side


@dataclass
class AuditOutcome:
    """What one audit run produced (the rows written and where the feed went)."""

    run_id: str
    run_date: dt.date
    previous_run_id: str | None
    findings: list[dict[str, Any]]
    alerts: list[dict[str, Any]]
    summary: dict[str, Any]
    jsonl_path: str | None
    exit_code: int
    expired_silences: tuple[Silence, ...] = ()
    delivery_error: str | None = None
    registry: dict[str, str] = field(default_factory=dict)


def _rows(warehouse: str, name: str, run_id: str | None = None, storage_options=None) -> list[dict[str, Any]]:
    from jobs.delta_io import TableNotFoundError, read_arrow

    try:
        return read_arrow(warehouse, name, run_id, storage_options).to_pylist()
    except TableNotFoundError:
        return []


def pick_runs(runs: Sequence[Mapping[str, Any]], audited: Iterable[str],
              run_id: str | None) -> tuple[Mapping[str, Any], str | None]:
    """(the run to audit, the previous audited run's id). ``run_id=None`` means the newest
    collected run; the previous run is the newest *audited* run that started before it."""
    if not runs:
        raise AuditError("no collected run found (the runs table is empty or missing): run collect first")
    by_id = {r["run_id"]: r for r in runs}
    if run_id is None:
        current = max(runs, key=lambda r: (r["started_at"], r["run_id"]))
    elif run_id in by_id:
        current = by_id[run_id]
    else:
        raise AuditError(f"run {run_id!r} is not in the runs table")
    done = set(audited)
    earlier = [r for r in runs if r["run_id"] in done and r["run_id"] != current["run_id"]
               and r["started_at"] < current["started_at"]]
    previous = max(earlier, key=lambda r: (r["started_at"], r["run_id"]))["run_id"] if earlier else None
    return current, previous


def merge_registry(existing: Sequence[Mapping[str, Any]], servers: Sequence[Mapping[str, Any]], *,
                   run_id: str, run_date: dt.date) -> list[dict[str, Any]]:
    """The uuid_registry after this run: every server_uuid read now is (re)attributed to its
    server with ``last_seen = run_date``; UUIDs not seen keep their row (the server may be gone,
    its GTIDs are not)."""
    out = {r["server_uuid"]: dict(r) for r in existing}
    for s in servers:
        uuid = (s.get("server_uuid") or "").strip().lower()
        if not uuid:
            continue
        before = out.get(uuid)
        out[uuid] = {"run_id": run_id, "server_uuid": uuid, "server": s["server"], "cluster": s.get("cluster"),
                     "first_seen": min(before["first_seen"], run_date) if before else run_date,
                     "last_seen": max(before["last_seen"], run_date) if before else run_date}
    return sorted(out.values(), key=lambda r: r["server_uuid"])


def _dedupe(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per finding_key: the most severe wins; the others' details are appended."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        key = r["finding_key"]
        if key not in best:
            best[key] = dict(r)
            continue
        log.warning("two findings with key %s (%s on %s); merging", key, r["check_id"], r["server"])
        keep, other = (r, best[key]) if severity_rank(r["severity"]) > severity_rank(best[key]["severity"]) else (best[key], r)
        keep = dict(keep)
        keep["detail"] = f"{keep['detail']} | also: {other['detail']}"
        best[key] = keep
    return list(best.values())


def apply_silences(rows: Sequence[Mapping[str, Any]], silences: Sequence[Silence]) -> list[dict[str, Any]]:
    """Set ``silenced`` / ``silence_id`` on every row from the active ``silences``."""
    out = []
    for r in rows:
        m = match_silence(r, silences)
        out.append({**r, "silenced": m is not None, "silence_id": m.silence_id if m else None})
    return out


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def build_summary(*, run_id: str, run_date: dt.date, findings: Sequence[Mapping[str, Any]],
                  events: Sequence[Mapping[str, Any]], servers: Sequence[Mapping[str, Any]],
                  pairs_audited: int, collect_seconds: float | None, audit_seconds: float,
                  delivered: bool | None, expired: Sequence[Silence], fail_on: str,
                  exit_code: int) -> dict[str, Any]:
    """The run_summary row."""
    open_rows = [r for r in findings if r["status"] == "open"]
    by_check: dict[str, Counter] = defaultdict(Counter)
    for r in open_rows:
        by_check[r["check_id"]][r["severity"]] += 1
    by_sev = Counter(r["severity"] for r in open_rows if not r["silenced"])
    return {
        "run_id": run_id, "run_date": run_date, "audited_at": dt.datetime.now(dt.timezone.utc),
        "collect_seconds": collect_seconds, "audit_seconds": float(audit_seconds),
        "servers_audited": sum(1 for s in servers if s.get("status") != "failed"),
        "servers_failed": sum(1 for s in servers if s.get("status") == "failed"),
        "pairs_audited": int(pairs_audited),
        "findings_open": len(open_rows),
        "findings_silenced": sum(1 for r in open_rows if r["silenced"]),
        "findings_resolved": sum(1 for r in findings if r["status"] == "resolved"),
        "findings_by_check": _json({k: dict(v) for k, v in sorted(by_check.items())}),
        "findings_by_severity": _json({s: by_sev.get(s, 0) for s in ("critical", "warning", "info")}),
        "alerts_by_event": _json(dict(Counter(e["event"] for e in events))),
        "alerts_delivered": delivered,
        "expired_silences": _json([{"id": s.id, "expires": s.expires.isoformat(), "reason": s.reason}
                                   for s in expired]),
        "fail_on": fail_on, "exit_code": exit_code,
    }


def audit_run(spark, config, settings: AuditSettings | None = None, *, run_id: str | None = None,
              collect_seconds: float | None = None, fail_on: str | None = None,
              send_alerts: bool = True, now: dt.datetime | None = None) -> AuditOutcome:
    """Audit one collected run (the newest when ``run_id`` is None) and write the audit tables.

    ``config`` is a ``jobs.config.GtidAuditConfig``; ``settings`` defaults to its ``audit``
    section. Idempotent: auditing the same run again replaces that run's rows.
    """
    from jobs.delta_io import choose_writer, overwrite_table, read_table, write_run_rows
    from schemas.audit import ALERTS, FINDINGS, RUN_SUMMARY, UUID_REGISTRY

    started = time.monotonic()
    settings = settings or load_audit_settings(config.audit, config.source_path or "<config>")
    fail_on = fail_on or settings.fail_on
    warehouse = config.resolved_warehouse()
    so = dict(config.storage_options or {}) or None

    runs = _rows(warehouse, "runs", storage_options=so)
    audited = {r["run_id"] for r in _rows(warehouse, "run_summary", storage_options=so)}
    current, previous_run_id = pick_runs(runs, audited, run_id)
    run_id, run_date = current["run_id"], current["run_date"]
    log.info("auditing run %s (previous audited run: %s)", run_id, previous_run_id or "none")

    servers = _rows(warehouse, "servers", run_id, so)
    errors = _rows(warehouse, "collection_errors", run_id, so)
    channels_meta = [{k: c.get(k) for k in ("server", "channel_name", "source_host", "source_port", "source_uuid")}
                     for c in _rows(warehouse, "channels", run_id, so)]
    registry_rows = merge_registry(_rows(warehouse, "uuid_registry", storage_options=so), servers,
                                   run_id=run_id, run_date=run_date)
    registry = {r["server_uuid"]: r["server"] for r in registry_rows}

    # 1. sources, on the driver (one DNS cache)
    resolver = SourceResolver(inventory_from_rows(servers), uuid_registry=registry)
    cluster_of = {s["server"]: s.get("cluster") for s in servers}
    readable = {s["server"] for s in servers if s.get("status") != "failed"}
    raw: list[dict[str, Any]] = collection_findings(servers, errors)
    resolved = []
    for c in channels_meta:
        res = resolver.resolve(c["server"], c["source_host"], c["source_port"], c["source_uuid"])
        raw.extend(resolution_findings(c, res, cluster_of.get(c["server"])))
        if res.source is not None:
            resolved.append({"server": c["server"], "channel_name": c["channel_name"], "source_server": res.source})
    pairs_audited = sum(1 for p in resolved if p["server"] in readable and p["source_server"] in readable)

    # 2. checks, in Spark
    def table(name: str, rid: str):
        return read_table(spark, warehouse, name, rid, so)

    if readable:
        import pyarrow as pa

        resolved_df = spark.createDataFrame(pa.table(
            {k: pa.array([p[k] for p in resolved], pa.string()) for k in ("server", "channel_name", "source_server")}))
        prev_servers = prev_logs = None
        if previous_run_id is not None:
            prev_servers, prev_logs = table("servers", previous_run_id), table("binary_logs", previous_run_id)
        raw.extend(run_checks(spark, servers_df=table("servers", run_id), binlogs_df=table("binary_logs", run_id),
                              channels_df=table("channels", run_id), relay_df=table("relay_log_tail", run_id),
                              resolved_df=resolved_df, previous_servers_df=prev_servers,
                              previous_binlogs_df=prev_logs, registry=registry))

    # 3. silences, history, feed
    on = run_date
    active, expired = active_silences(settings.silences, on), expired_silences(settings.silences, on)
    for s in expired:
        log.warning("silence %s expired on %s (%s): it no longer applies", s.id, s.expires, s.reason)
    current_rows = apply_silences(_dedupe(raw), active)
    previous_rows = _rows(warehouse, "findings", previous_run_id, so) if previous_run_id else []
    blind = {s["server"] for s in servers if s.get("status") == "failed"}
    findings = reconcile_findings(current_rows, previous_rows, run_id=run_id, run_date=run_date,
                                  blind_servers=blind)
    events = alert_events(findings, previous_rows, run_id=run_id, run_date=run_date,
                          min_severity=settings.alert_min_severity)

    delivered: bool | None = None
    delivery_error = None
    if settings.alertmanager is not None and send_alerts:
        am = settings.alertmanager
        payload = to_alertmanager(events, now=now or dt.datetime.now(dt.timezone.utc),
                                  ttl=dt.timedelta(hours=am.ttl_hours), generator_url=am.generator_url)
        try:
            AlertmanagerClient(am).post_alerts(payload)
            delivered = True
        except AlertDeliveryError as exc:
            delivered, delivery_error = False, str(exc)
            log.error("alert feed not delivered: %s", exc)

    # 4. write (run_summary last: it marks the run as audited)
    writer = choose_writer(spark, config.spark.delta_writer)
    common = {"warehouse": warehouse, "run_id": run_id, "writer": writer, "spark": spark, "storage_options": so}
    write_run_rows(FINDINGS, findings, **common)
    alert_rows = [{**{k: e[k] for k in ALERTS.column_names if k in e and k != "labels"},
                   "labels": _json(e["labels"]), "delivered": delivered} for e in events]
    write_run_rows(ALERTS, alert_rows, **common)
    overwrite_table(UUID_REGISTRY, registry_rows, warehouse=warehouse, writer=writer, spark=spark,
                    storage_options=so)
    jsonl = write_jsonl([{**e, "delivered": delivered} for e in events], warehouse, run_date, run_id)
    code = exit_code_for(findings, fail_on)
    if code == 0 and delivery_error:
        code = 1
    summary = build_summary(run_id=run_id, run_date=run_date, findings=findings, events=events, servers=servers,
                            pairs_audited=pairs_audited, collect_seconds=collect_seconds,
                            audit_seconds=time.monotonic() - started, delivered=delivered, expired=expired,
                            fail_on=fail_on, exit_code=code)
    write_run_rows(RUN_SUMMARY, [summary], **common)
    log.info("run %s: %d open finding(s), %d resolved, %d alert event(s); exit %d", run_id,
             summary["findings_open"], summary["findings_resolved"], len(events), code)
    return AuditOutcome(run_id=run_id, run_date=run_date, previous_run_id=previous_run_id, findings=findings,
                        alerts=alert_rows, summary=summary, jsonl_path=jsonl, exit_code=code,
                        expired_silences=expired, delivery_error=delivery_error, registry=registry)


# ---------------------------------------------------------------------------------------------
# command line


def _load(path: str):
    from jobs.config import ConfigError, load_config

    try:
        config = load_config(path)
    except ConfigError as exc:
        raise AuditError(str(exc)) from None
    return config, load_audit_settings(config.audit, config.source_path or path)


def _session(config):
    from jobs.spark import build_session

    return build_session(config.spark)


def cmd_audit(args: argparse.Namespace) -> int:
    """``gtid-audit audit``: audit an already collected run."""
    try:
        config, settings = _load(args.config)
        outcome = audit_run(_session(config), config, settings, run_id=args.run_id, fail_on=args.fail_on,
                            send_alerts=not args.no_alertmanager)
    except AuditError as exc:
        log.error("%s", exc)
        return 1
    _print_outcome(outcome)
    return outcome.exit_code


def _collect(config_path: str, run_id: str | None = None) -> tuple[int, str, float]:
    """Run the collect job through its own ``main`` with a run id chosen here, so the audit
    reads exactly that run; (exit code, run id, seconds)."""
    from jobs import collect

    run_id = run_id or collect.new_run_id()
    started = time.monotonic()
    code = int(collect.main(["collect", "--config", config_path, "--run-id", run_id]) or 0)
    return code, run_id, time.monotonic() - started


def cmd_run(args: argparse.Namespace) -> int:
    """``gtid-audit run``: collect, then audit the run just collected."""
    try:
        config, settings = _load(args.config)
    except AuditError as exc:
        log.error("%s", exc)
        return 1
    code, run_id, seconds = _collect(args.config, args.run_id)
    if code != 0:
        log.error("collect failed (exit %d): nothing audited", code)
        return 1
    try:
        outcome = audit_run(_session(config), config, settings, run_id=run_id, collect_seconds=seconds,
                            fail_on=args.fail_on,
                            send_alerts=not args.no_alertmanager)
    except AuditError as exc:
        log.error("%s", exc)
        return 1
    _print_outcome(outcome)
    return outcome.exit_code


def _print_outcome(outcome: AuditOutcome) -> None:
    s = outcome.summary

    def counts(value: Any) -> str:  # the summary stores its maps as JSON text
        mapping = json.loads(value) if isinstance(value, str) else dict(value or {})
        return ", ".join(f"{k} {v}" for k, v in mapping.items() if v) or "none"

    print(f"run {outcome.run_id}: {s['servers_audited']} server(s) audited, {s['servers_failed']} not "
          f"collected, {s['pairs_audited']} pair(s); open findings {s['findings_open']} "
          f"({counts(s['findings_by_severity'])}; {s['findings_silenced']} silenced), "
          f"resolved {s['findings_resolved']}; alerts: {counts(s['alerts_by_event'])}; "
          f"exit code {outcome.exit_code} (--fail-on {s['fail_on']})")
    for sil in outcome.expired_silences:
        print(f"expired silence {sil.id} (expired {sil.expires}): {sil.reason}")
    if outcome.jsonl_path:
        print(f"alert feed: {outcome.jsonl_path}")


def select_findings(rows: Iterable[Mapping[str, Any]], *, severity: str | None = None,
                    cluster: str | None = None, check: str | None = None,
                    include_resolved: bool = False) -> list[Mapping[str, Any]]:
    """The rows ``gtid-audit findings`` shows: ``severity`` is a minimum (critical shows only
    critical, warning shows warning and critical)."""
    out = []
    floor = severity_rank(severity) if severity else -1
    for r in rows:
        if not include_resolved and r["status"] != "open":
            continue
        if severity_rank(r["severity"]) < floor:
            continue
        if cluster is not None and r.get("cluster") != cluster:
            continue
        if check is not None and r["check_id"] != check:
            continue
        out.append(r)
    return sorted(out, key=lambda r: (-severity_rank(r["severity"]), r["check_id"], r.get("cluster") or "",
                                      r["server"], r.get("source") or "", r.get("channel") or ""))


def cmd_findings(args: argparse.Namespace) -> int:
    """``gtid-audit findings``: the latest audited run's findings as a table (no Spark)."""
    from rich.console import Console
    from rich.table import Table

    try:
        config, _ = _load(args.config)
    except AuditError as exc:
        log.error("%s", exc)
        return 1
    if args.check is not None and args.check not in check_catalogue():
        log.error("unknown check id %r; known checks: %s", args.check, ", ".join(sorted(check_catalogue())))
        return 1
    warehouse, so = config.resolved_warehouse(), dict(config.storage_options or {}) or None
    summaries = _rows(warehouse, "run_summary", storage_options=so)
    if not summaries:
        log.error("no audited run in %s: run `gtid-audit run --config %s` first", warehouse, args.config)
        return 1
    if args.run_id:
        if args.run_id not in {s["run_id"] for s in summaries}:
            log.error("run %r was not audited (not in run_summary)", args.run_id)
            return 1
        run_id = args.run_id
    else:
        run_id = max(summaries, key=lambda s: (s["audited_at"], s["run_id"]))["run_id"]
    rows = select_findings(_rows(warehouse, "findings", run_id, so), severity=args.severity,
                           cluster=args.cluster, check=args.check, include_resolved=args.all)
    if args.format == "json":
        for r in rows:
            print(_json(dict(r)))
        return 0
    table = Table(title=f"findings of run {run_id} ({len(rows)})", show_lines=False)
    for col in ("severity", "check_id", "cluster", "server", "source", "channel", "gtid_set", "status", "first_seen"):
        table.add_column(col, overflow="fold")
    for r in rows:
        status = r["status"] + (f" (silenced: {r['silence_id']})" if r.get("silenced") else "")
        channel = r.get("channel")
        table.add_row(r["severity"], r["check_id"], r.get("cluster") or "", r["server"], r.get("source") or "",
                      "" if channel is None else (channel or "(default)"), r.get("gtid_set") or "",
                      status, str(r["first_seen"]))
    # piped into a file or a pager: wide enough that cells do not wrap into fragments
    width = args.width or (None if sys.stdout.isatty() else 400)
    Console(width=width).print(table)
    return 0


def check_catalogue() -> dict[str, Any]:
    """Every check ``explain`` knows: gtid_core's ``CHECKS`` and the job's own."""
    from gtid_core.checks import CHECKS

    return {**CHECKS, **JOB_CHECKS}


def explain_text(check_id: str) -> str:
    """The text ``gtid-audit explain CHECK_ID`` prints; AuditError naming known ids otherwise."""
    catalogue = check_catalogue()
    info = catalogue.get(check_id.strip().lower())
    if info is None:
        close = difflib.get_close_matches(check_id.strip().lower(), list(catalogue), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise AuditError(f"unknown check {check_id!r}; {hint}known checks: {', '.join(sorted(catalogue))}")
    check_id = info.check_id
    lines = [f"{check_id}: {info.title}",
             f"default severity: {info.default_severity.value}   scope: {info.scope}   version: {info.version}",
             "", "what it means:", f"  {info.meaning}"]
    if info.server_error:
        lines += ["", "server error:", f"  {info.server_error}"]
    lines += ["", "what to do:", f"  {info.remediation}"]
    return "\n".join(lines)


def cmd_explain(args: argparse.Namespace) -> int:
    """``gtid-audit explain CHECK_ID``."""
    try:
        print(explain_text(args.check_id))
    except AuditError as exc:
        log.error("%s", exc)
        return 1
    return 0


def register(subparsers) -> None:
    """Add ``audit``, ``run``, ``findings`` and ``explain`` to the gtid-audit parser."""
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", required=True, help="configuration file (YAML)")
        p.add_argument("--fail-on", choices=["critical", "warning", "never"], default=None,
                       help="exit 2 when open findings at or above this severity exist "
                            "(default: audit.fail_on, itself 'critical')")
        p.add_argument("--no-alertmanager", action="store_true",
                       help="do not post to Alertmanager even if configured (the feed is still written)")

    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "run", help="nightly job: collect every server, then audit the run", formatter_class=fmt,
        description="The nightly job. Collect every server of the inventory into the Delta snapshot "
                    "tables (a new run id),\nthen audit that run: per-pair checks, findings with history, "
                    "the alert feed.\n\nexit codes: 0 ok; 2 open findings at or above --fail-on; "
                    "1 the job failed (or the alert feed could not be delivered).")
    common(p)
    p.add_argument("--run-id", default=None,
                   help="run id for the collection (default: a new timestamped id); rerunning an id "
                        "replaces its rows")
    p.set_defaults(func=cmd_run)

    p = subparsers.add_parser(
        "audit", help="audit an already collected run (default: the newest)", formatter_class=fmt,
        description="Audit a run that `collect` already wrote: checks, findings, history, alert feed. "
                    "Auditing a run again\nreplaces its audit rows. Exit codes as for `run`.")
    common(p)
    p.add_argument("--run-id", default=None, help="run to audit (default: the newest collected run)")
    p.set_defaults(func=cmd_audit)

    p = subparsers.add_parser("findings", help="the latest audited run's findings as a table")
    p.add_argument("--config", required=True, help="configuration file (YAML)")
    p.add_argument("--run-id", default=None, help="an audited run (default: the newest)")
    p.add_argument("--severity", choices=["info", "warning", "critical"], default=None,
                   help="minimum severity to show")
    p.add_argument("--cluster", default=None, help="only this cluster")
    p.add_argument("--check", default=None, help="only this check id")
    p.add_argument("--all", action="store_true", help="include resolved findings")
    p.add_argument("--format", choices=["table", "json"], default="table",
                   help="'json' prints one JSON object per finding per line (JSON Lines)")
    p.add_argument("--width", type=int, default=None, help="table width (default: the terminal's)")
    p.set_defaults(func=cmd_findings)

    p = subparsers.add_parser(
        "explain", help="what a check means and what to do about it", formatter_class=fmt,
        description="What a check means, the server error it predicts, and what to do.\n\ncheck ids:\n"
                    + "\n".join(f"  {c}" for c in sorted(check_catalogue())))
    p.add_argument("check_id", metavar="CHECK_ID", help="a check id (see the list above; case does not matter)")
    p.set_defaults(func=cmd_explain)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``python -m jobs.audit audit --config FILE``)."""
    from jobs.logs import configure_logging

    parser = argparse.ArgumentParser(prog="gtid-audit")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    configure_logging()
    try:
        return int(args.func(args))
    except Exception:  # a job error: logged with its traceback, exit 1
        log.exception("audit job failed")
        return 1


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(main())
