"""The executor side of the audit: what Spark tasks run over the snapshot tables.

Everything here is a plain function of rows (dicts, Arrow batches) and imports only the standard
library, ``gtid_core``, ``schemas`` and the pure ``jobs.history`` / ``jobs.silences``: executors
need no configuration, YAML, retry or console library. ``jobs.audit`` builds the Spark plan that
calls these functions and writes what they return.

* converters: table rows -> gtid_core snapshots (:func:`server_snapshot`, :func:`channel_snapshot`,
  :func:`relay_tail_rows`, :func:`identity_server`), the one place where table column names meet
  the server's;
* checks: :func:`pair_batches` (rows of up to 16 pairs of one source with its binary-log
  headers: the pair checks' findings and purge horizons), :func:`failover_batches` (one row per
  source with its headers and its replicas, no relay tail: the failover model computed once,
  its findings and readiness rows), :func:`group_batches`, :func:`check_server_batches`,
  :func:`identity_batches` (one row per shared server_uuid or server_id);
* job findings: :func:`collection_finding_batches`, :func:`resolution_finding_batches`;
* donors: :func:`donor_batches` (one row per refused pair's finding and candidate donor: the sound
  ones) and :func:`with_donor_batches` (the finding with the steps for its first donor);
* the findings of a run: :func:`finalize_batches` (one row per key, silences) and
  :func:`history_batches` (first_seen, resolved and carried rows, alert events).
"""
from __future__ import annotations

import functools
import json
import operator
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gtid_core.registry import REGISTRY
from jobs.history import alert_event_for_key, finding_key, reconcile_key, severity_rank
from jobs.silences import SilenceRule, match_silence

__all__ = [
    "RAW_FINDING_COLUMNS",
    "server_snapshot",
    "channel_snapshot",
    "relay_tail_rows",
    "collection_findings",
    "pair_batches",
    "pair_outputs",
    "failover_batches",
    "failover_outputs",
    "check_server_batches",
    "collection_finding_batches",
    "resolution_finding_batches",
    "finalize_batches",
    "history_batches",
    "group_batches",
    "group_outputs",
    "identity_server",
    "identity_findings",
    "identity_batches",
    "purge_horizon",
    "donor_batches",
    "with_donors",
    "with_donor_batches",
]

#: Columns of a finding as the checks produce it (before history and silences).
RAW_FINDING_COLUMNS = ("finding_key", "check_id", "severity", "cluster", "server", "source", "channel",
                       "title", "detail", "gtid_set", "gtid_count", "remediation", "check_version",
                       "evidence")
_INT64_MAX = 2**63 - 1


def _arrow_schema(table: str, columns: Sequence[str] | None = None):
    import pyarrow as pa

    from schemas import get_table

    schema = get_table(table).to_arrow()
    return pa.schema([schema.field(c) for c in columns]) if columns else schema


def _raw_arrow_schema():
    return _arrow_schema("findings", RAW_FINDING_COLUMNS)


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
    info = REGISTRY[check_id]
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
                   "current password, and that the account exists for the auditor's host. An account "
                   "created REQUIRE X509 also needs tls.cert_file and tls.key_file.",
    "tls_verify_failed": "The server's certificate did not verify against tls.ca_file (another CA, expired, "
                         "self-signed): give the CA that signed it, or renew the server's certificate. "
                         "Nothing was read, and nothing was sent in plain text.",
    "tls_identity_mismatch": "The server's certificate is valid, but not for the host the configuration "
                             "connects to (tls.verify_identity): use a host name the certificate lists in "
                             "subjectAltName, or reissue the certificate with this name.",
    "tls_handshake_failed": "The TLS handshake failed after the certificate check: most often the server "
                            "refused the client certificate (tls.cert_file not signed by the server's "
                            "ssl_ca), or no TLS version is common to both (tls_version on the server).",
    "tls_required_by_server": "The server has require_secure_transport=ON and this server's tls.enabled is "
                              "false: enable tls for it (with ca_file and verify_cert).",
    "tls_unavailable": "tls.enabled is set but the server offers no TLS, so the auditor refused to connect "
                       "in plain text: configure ssl_ca/ssl_cert/ssl_key on the server (5.7.28+ and 8.0+ "
                       "generate certificates by default), or set tls.enabled: false for it on a trusted "
                       "network only.",
    "privilege_missing": "The audit account lacks a grant: apply deploy/grants.sql (REPLICATION CLIENT, "
                         "REPLICATION SLAVE, SELECT on performance_schema.replication_*).",
    "config_error": "The configuration could not be resolved for this server (e.g. a password "
                    "reference or a tls file that does not exist on the machine running the job): run "
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
            remediation="\n".join(advice + [REGISTRY[check_id].remediation]),
            evidence={"error_classes": classes, "errors": [
                {k: e.get(k) for k in ("error_class", "errno", "message", "statement", "channel_name")}
                for e in errs[:10]]},
        ))
    return out


def _resolution_finding(ch: Mapping[str, Any]) -> dict[str, Any] | None:
    """``source_unresolved`` / ``source_uuid_mismatch`` from one channels row (the collector's
    resolver recorded the answer; ``registry_owner`` is who last had Source_UUID)."""
    server, name = ch["server"], ch.get("channel_name") or ""
    evidence = {"source_host": ch.get("source_host"), "source_port": ch.get("source_port"),
                "source_uuid": ch.get("source_uuid"), "method": ch.get("source_method"),
                "candidates": [c for c in (ch.get("source_candidates") or "").split(",") if c],
                "registry_owner": ch.get("registry_owner")}
    owner = ch.get("registry_owner")
    if ch.get("source_server") is None:
        problem = ch.get("source_problem") or "not resolved"
        if owner and ch.get("source_uuid"):
            problem += f" (the UUID registry last saw {ch['source_uuid']} on {owner!r})"
        return _job_finding("source_unresolved", cluster=ch.get("cluster"), server=server, channel=name,
                            detail=f"channel {name or '(default)'!s} of {server}: {problem}",
                            evidence=evidence)
    if ch.get("source_uuid_mismatch"):
        mismatch = ch["source_uuid_mismatch"]
        if owner:
            mismatch += f"; the UUID registry says {ch.get('source_uuid')} was {owner!r}"
        return _job_finding("source_uuid_mismatch", cluster=ch.get("cluster"), server=server,
                            source=ch["source_server"], channel=name,
                            detail=f"channel {name or '(default)'!s} of {server}: {mismatch}",
                            evidence=evidence)
    return None


# ---------------------------------------------------------------------------------------------
# table rows -> gtid_core snapshots

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
                    "exec_source_log_pos", "seconds_behind_source", "sql_delay", "relay_tail_events",
                    "relay_tail_file", "relay_tail_truncated", "relay_tail_first_event", "applier_event_type",
                    "applier_event_gtid", "gtid_executed_reread", "read_at",
                    *_CONNECTION_COLUMNS, *_APPLIER_CONFIG_COLUMNS)
_SERVER_COLUMNS = ("read_at", "read_started_at", "master_info_repository", "replica_parallel_type", "server_uuid", "server_id", "version", "gtid_mode", "enforce_gtid_consistency",
                   "gtid_executed", "gtid_purged", "log_bin", "log_replica_updates", "sync_binlog",
                   "innodb_flush_log_at_trx_commit", "relay_log_recovery", "replica_parallel_workers",
                   "replica_preserve_commit_order", "binlog_format", "relay_log_info_repository",
                   "read_only", "super_read_only")


def server_snapshot(row: Mapping[str, Any]):
    """A ``ServerSnapshot`` from a servers-table row carrying ``binary_logs`` (a list of
    binary_logs-table rows, None when the server's binary logs were not read)."""
    from gtid_core.snapshots import BinaryLog, ServerSnapshot

    logs = row.get("binary_logs")
    if logs is not None:
        # a generator: from_rows converts the logs after the variables, so a server with a bad
        # variable and a bad header is named by the variable, as from_row's rows were
        logs = (BinaryLog.from_values(b["log_name"], b.get("file_size"), b.get("encrypted"),
                                      b.get("previous_gtids") if b.get("previous_gtids_read") else None)
                for b in sorted(logs, key=lambda b: b["seq"]))
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
    """relay_log_tail-table rows in their order (``seq``); ``RelayLogEvent.from_row`` reads the
    table's own column names (sanitized: ``gtid`` and ``query_kind``, no Info)."""
    if rows is None:
        return None
    return sorted(rows, key=lambda r: r["seq"])



# ---------------------------------------------------------------------------------------------
# checks

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


def _invalid_pair(pair: Mapping[str, Any], exc: Exception, *, source: str, channel: str) -> dict[str, Any]:
    """snapshot_invalid of one pair; when the channel is the one of a multi-source replica that
    reports the replica's own writes (FleetContext.shared_errant_channel), the detail says that
    those go unchecked on every channel until the value is fixed."""
    from gtid_core.checks import FleetContext
    from gtid_core.errors import GtidCoreError

    row = _invalid(pair["replica"], exc, source=source, channel=channel)
    try:
        confirmed = _confirmed_channels(pair, server_snapshot(pair["replica"]))
    except GtidCoreError:      # the replica's own snapshot is what is invalid: its channels cannot be ordered
        confirmed = None
    if FleetContext(channel_sources=_channel_sources(pair),
                    confirmed_channels=confirmed).shared_errant_channel == channel:
        row["detail"] += (" This channel also reports the replica's GTIDs that came through none of its channels "
                          "(errant_transactions): those go unchecked until this value is fixed.")
    return row


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


def _channel_sources(row: Mapping[str, Any]) -> dict[str, str] | None:
    """Every channel of the replica whose source was read (its gtid_executed known), with that
    source's name: FleetContext.channel_sources (None for a one-channel replica)."""
    every = row.get("all_channels") or []
    if len(every) < 2:
        return None
    return {c["channel_name"] or "": c["source_server"] for c in every if _source_was_read(c)}


def _source_was_read(channel: Mapping[str, Any]) -> bool:
    """An ``all_channels`` entry whose source was read: its gtid_executed known ('' is a source
    without writes) and named."""
    return channel.get("source_gtid_executed") is not None and bool(channel.get("source_server"))


def _confirmed_channels(row: Mapping[str, Any], replica: Any) -> frozenset[str] | None:
    """The channels of ``_channel_sources`` whose source was read after the replica
    (``read_order`` held, from ``all_channels``' read instants): FleetContext.confirmed_channels
    (None for a one-channel replica)."""
    from gtid_core.checks import read_order
    from gtid_core.snapshots import ChannelSnapshot, ServerSnapshot

    every = row.get("all_channels") or []
    if len(every) < 2:
        return None
    held = set()
    for c in filter(_source_was_read, every):
        source = ServerSnapshot.from_rows({"read_at": c.get("source_read_at"),
                                           "read_started_at": c.get("source_read_started_at")})
        if read_order(replica, ChannelSnapshot.from_rows({"read_at": c.get("channel_read_at")}), source)[0] is True:
            held.add(c["channel_name"] or "")
    return frozenset(held)


def _replica_group(row: Mapping[str, Any]):
    """The replication group a replica's snapshot row says it belongs to (``member_group_name``,
    ``member_view_change_uuid``: jobs.audit.with_group_state), None when it is in none."""
    from gtid_core.checks import ReplicaGroup

    name = row.get("member_group_name")
    if not name:
        return None
    return ReplicaGroup(group_name=name.strip().lower(), view_change_uuid=row.get("member_view_change_uuid"))


def _server_replication(r: Mapping[str, Any]):
    """The ``ServerReplication`` of a ``server_frame`` row: its channels, the channels of its
    replication group that could close a ring with it (``ring_edges``, given to a writable
    server only), the sources in its replication group whose channels were not read this run
    (``sources_not_read``, idem) and whether it is ONLINE or RECOVERING in a group; None when
    the row has no ``channels`` column or a channel cannot be parsed (the pair checks report that channel as
    snapshot_invalid, and config_replica_writable is not judged for the server)."""
    from gtid_core.checks import ServerReplication
    from gtid_core.checks.group import IN_GROUP_STATES
    from gtid_core.errors import GtidCoreError

    if "channels" not in r:
        return None
    try:
        channels = tuple(channel_snapshot(c) for c in r["channels"] or ())
    except GtidCoreError:
        return None
    sources_of: dict[str, list[str]] = {}
    for edge in r.get("ring_edges") or ():
        sources_of.setdefault(edge["server"], []).append(edge["source_server"])
    return ServerReplication(channels=channels, sources_of=sources_of,
                             group_member=r["snapshot"].get("group_member_state") in IN_GROUP_STATES,
                             sources_not_read=tuple(r.get("sources_not_read") or ()))


def check_server_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: one row per server (``snapshot``, ``previous``, and from
    ``jobs.audit.server_frame`` its ``channels`` and ``ring_edges``), findings rows out."""
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
                found = run_server_checks(current, previous, _server_replication(r))
            except GtidCoreError as exc:
                out.append(_invalid(snap, exc))
                continue
            out.extend(_finding_to_row(f, snap.get("cluster")) for f in found)
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def _dedupe(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per finding_key: the most severe wins; the others' details are appended."""
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        key = r["finding_key"]
        if key not in best:
            best[key] = dict(r)
            continue
        keep, other = (r, best[key]) if severity_rank(r["severity"]) > severity_rank(best[key]["severity"]) else (best[key], r)
        keep = dict(keep)
        keep["detail"] = f"{keep['detail']} | also: {other['detail']}"
        best[key] = keep
    return list(best.values())


def apply_silences(rows: Sequence[Mapping[str, Any]], silences: Sequence[SilenceRule]) -> list[dict[str, Any]]:
    """Set ``silenced`` / ``silence_id`` on every row from the active ``silences``."""
    out = []
    for r in rows:
        m = match_silence(r, silences)
        out.append({**r, "silenced": m is not None, "silence_id": m.silence_id if m else None})
    return out




#: The outputs of the source passes (:func:`pair_batches`: finding, horizon;
#: :func:`failover_batches`: finding, readiness), tagged in one Arrow schema.
SOURCE_OUTPUTS = ("finding", "readiness", "horizon")
_FLUSH_ROWS = 4096   # rows per Arrow batch out: a source with hundreds of replicas is cut, not held whole
#: Input rows turned into Python objects at a time: an Arrow batch holds up to
#: ``spark.sql.execution.arrow.maxRecordsPerBatch`` (10,000) rows, each with up to 500
#: binary-log headers and replica snapshots; as Python dicts that is gigabytes.
_SLICE_ROWS = 64
#: The same for :func:`pair_batches`, whose rows carry up to 16 relay-log tails of up to 2,000
#: events each: 8 rows is at most 128 pairs in a worker at a time.
_PAIR_SLICE_ROWS = 8


def source_output_arrow_schema():
    """The Arrow schema of :func:`pair_batches`' and :func:`failover_batches`' rows: ``output``
    (one of :data:`SOURCE_OUTPUTS`) and one nullable struct per output, only that one set; every
    field nullable (``jobs.audit`` selects each struct's fields back into its table's schema)."""
    import pyarrow as pa

    parts = {"finding": _raw_arrow_schema(), "readiness": _arrow_schema("failover_readiness"),
             "horizon": _horizon_arrow_schema()}
    return pa.schema([pa.field("output", pa.string(), False)]
                     + [pa.field(name, pa.struct([f.with_nullable(True) for f in parts[name]]))
                        for name in SOURCE_OUTPUTS])


def pair_batches(batches: Iterator[Any], *, registry: Any = None) -> Iterator[Any]:
    """mapInArrow body of the pair checks: input rows of ``source_snapshot`` (its servers row
    with its ``binary_logs``) and ``pairs`` (up to 16 replica channels resolved to it, each with
    ``channel``, ``replica``, ``relay_tail``, ``all_channels`` and ``uuid_owners``;
    ``jobs.audit.pair_frame``); :func:`pair_outputs` says what comes out. ``registry``
    (server_uuid -> server, or a broadcast of it), when given, names errant UUIDs' owners
    instead of each pair's ``uuid_owners``."""
    fixed = dict(getattr(registry, "value", registry)) if registry is not None else None
    return _tagged_batches(batches, lambda r, cache: pair_outputs(r, cache, registry=fixed),
                           slice_rows=_PAIR_SLICE_ROWS)


def failover_batches(batches: Iterator[Any], *, run_id: str | None = None, run_date: Any = None) -> Iterator[Any]:
    """mapInArrow body of the failover model: one input row per source (``source_snapshot``,
    ``pairs``: every replica channel resolved to it; ``jobs.audit.failover_frame``);
    :func:`failover_outputs` says what comes out."""
    return _tagged_batches(batches, lambda r, cache: failover_outputs(r, cache, run_id=run_id, run_date=run_date))


def _tagged_batches(batches: Iterator[Any], outputs_of, *, slice_rows: int | None = None) -> Iterator[Any]:
    """Arrow batches of ``outputs_of(row, snapshot cache)``'s (output, row) pairs for each input
    row, at most ``_FLUSH_ROWS`` per batch. Input rows become Python objects ``slice_rows``
    (default ``_SLICE_ROWS``) at a time, and the snapshot cache lives for one slice."""
    import pyarrow as pa

    schema = source_output_arrow_schema()
    step = slice_rows or _SLICE_ROWS
    for batch in batches:
        out: list[dict[str, Any]] = []
        for start in range(0, batch.num_rows, step):
            cache = _SnapshotCache()
            for r in batch.slice(start, step).to_pylist():
                for output, row in outputs_of(r, cache):
                    out.append({"output": output, output: row})
                    if len(out) >= _FLUSH_ROWS:
                        yield pa.RecordBatch.from_pylist(out, schema=schema)
                        out = []
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)


def _sorted_pairs(r: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    # collect_list's order follows the shuffle: sorted, the texts that list siblings are the same every night
    return sorted(r["pairs"] or [], key=lambda p: (p["replica"]["server"], p["channel"].get("channel_name") or ""))


def failover_outputs(r: Mapping[str, Any], replicas: _SnapshotCache, *, run_id: str | None,
                     run_date: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """What one source's failover model gives, as (output, row) pairs: ``finding``, the
    failover findings of its replicas (:func:`gtid_core.failover.failover_findings`), and
    ``readiness``, its ``failover_readiness`` rows, both from one model. Nothing when the source
    or a replica cannot be parsed: :func:`pair_outputs` gives those pairs snapshot_invalid."""
    from gtid_core.errors import GtidCoreError
    from gtid_core.failover import failover_findings, failover_rows

    src = r["source_snapshot"]
    try:
        source = server_snapshot(src)
    except GtidCoreError:
        return
    pairs = _sorted_pairs(r)
    model = _failover_model(source, src, pairs, replicas)
    if model is None:
        return
    cluster = src.get("cluster")
    # a finding carries its own server's cluster (a candidate's, for failover_candidate_unsafe), as
    # the pair checks do; the readiness rows carry the source's
    clusters = {p["replica"]["server"]: p["replica"].get("cluster") for p in pairs}
    for f in failover_findings(model):
        yield "finding", _finding_to_row(f, clusters.get(f.server, cluster))
    for row in failover_rows(model, run_id=run_id, run_date=run_date, cluster=cluster):
        yield "readiness", row


def pair_outputs(r: Mapping[str, Any], replicas: _SnapshotCache, *,
                 registry: Mapping[str, str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """What the pairs of one input row give, as (output, row) pairs:

    * ``finding``: each pair's checks (:func:`gtid_core.checks.run_pair_checks`); an unparseable
      source or replica is one ``snapshot_invalid`` per pair, never a failed task;
    * ``horizon``: per pair whose replica lacks something, what a reconnect would do now
      (:func:`purge_horizon`), for the report's ``report_pairs``.
    """
    from gtid_core.checks import FleetContext, run_pair_checks
    from gtid_core.errors import GtidCoreError
    from gtid_core.relay_log import events_from_rows

    src = r["source_snapshot"]
    try:
        source, source_error = server_snapshot(src), None
    except GtidCoreError as exc:
        source, source_error = None, exc
    for pair in _sorted_pairs(r):
        rep, ch = pair["replica"], pair["channel"]
        name = ch.get("channel_name") or ""
        if source_error is not None:
            yield "finding", _invalid_pair(pair, source_error, source=src["server"], channel=name)
            continue
        try:
            replica = replicas.get(rep)
            channel = channel_snapshot(ch)
            tail = None
            if ch.get("relay_tail_events") is not None:  # NULL: the tail was not read
                tail = events_from_rows(relay_tail_rows(pair["relay_tail"] or []))
            owners = registry if registry is not None else {
                o["server_uuid"]: o["server"] for o in pair.get("uuid_owners") or ()}
            fleet = FleetContext(uuid_registry=owners, other_channels_gtids=_other_channels_gtids(pair, name),
                                 channel_sources=_channel_sources(pair), replica_group=_replica_group(rep),
                                 confirmed_channels=_confirmed_channels(pair, replica))
            found = run_pair_checks(replica, channel, source, tail, fleet)
        except GtidCoreError as exc:
            yield "finding", _invalid_pair(pair, exc, source=src["server"], channel=name)
            continue
        for f in found:
            yield "finding", _finding_to_row(f, rep.get("cluster"))
        try:
            horizon = purge_horizon(source, src, replica, channel)
        except (GtidCoreError, ValueError):
            continue
        if horizon is not None:
            yield "horizon", {"replica": rep["server"], "channel": name, "source": src["server"], **horizon}


def collection_finding_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: one row per failed or partly read server (its servers-table columns and
    ``errors``, its collection_errors rows), ``collection_failed`` / ``collection_partial`` out."""
    import pyarrow as pa

    schema = _raw_arrow_schema()
    for batch in batches:
        rows = batch.to_pylist()
        errors = [e for r in rows for e in (r.pop("errors", None) or [])]
        yield pa.RecordBatch.from_pylist(collection_findings(rows, errors), schema=schema)


def resolution_finding_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: channels rows (plus ``registry_owner``) whose source is unresolved or
    whose Source_UUID mismatches, findings out."""
    import pyarrow as pa

    schema = _raw_arrow_schema()
    for batch in batches:
        out = [f for f in map(_resolution_finding, batch.to_pylist()) if f is not None]
        yield pa.RecordBatch.from_pylist(out, schema=schema)


#: The check whose findings name donors (gtid_core.donors): servers that still hold in their
#: binary logs what the pair's source purged.
DONOR_CHECK = "source_purged_required_gtids"
#: :func:`donor_batches`' rows: one per sound donor of a finding.
DONOR_DDL = ("finding_key string, donor string, donor_host string, donor_port bigint, donor_uuid string, "
             "replica_version string, return_host string, return_port bigint, multi_source boolean, "
             "source_purged string")
#: Input rows of :func:`donor_batches` made Python objects at once: each carries two servers'
#: binary-log headers (up to 500 each).
_DONOR_SLICE_ROWS = 64


def _donor_arrow_schema():
    import pyarrow as pa

    return pa.schema([("finding_key", pa.string()), ("donor", pa.string()), ("donor_host", pa.string()),
                      ("donor_port", pa.int64()), ("donor_uuid", pa.string()), ("replica_version", pa.string()),
                      ("return_host", pa.string()), ("return_port", pa.int64()), ("multi_source", pa.bool_()),
                      ("source_purged", pa.string())])


def donor_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body: one input row per :data:`DONOR_CHECK` finding and candidate donor
    (``finding_key``, ``gtid_set``: what the replica lacks; ``replica``: its servers row without
    binary logs; ``source_snapshot`` and ``donor``: servers rows with ``binary_logs``; ``upstream``:
    the gtid_executed texts of the servers the source replicates from over healthy channels (those
    read; NULL when none); ``unfiltered``: the donor's binary log and every channel of it filter
    nothing (NULL = unknown); ``donor_host``,
    ``donor_port``; ``return_host``, ``return_port``: the address the replica's channel used;
    ``multi_source``: the replica has other channels), one row out per donor
    :func:`gtid_core.donors.donor_refusal` finds sound. A row whose snapshots cannot be parsed
    gives nothing (the pair's snapshot_invalid says why). Rows become Python objects
    :data:`_DONOR_SLICE_ROWS` at a time; snapshots are parsed once per server and slice."""
    import pyarrow as pa

    from gtid_core.donors import donor_refusal
    from gtid_core.errors import GtidCoreError
    from gtid_core.gtid_set import GtidSet

    schema = _donor_arrow_schema()
    for batch in batches:
        out = []
        for start in range(0, batch.num_rows, _DONOR_SLICE_ROWS):
            parsed: dict[tuple[str, str], Any] = {}

            def snap(role: str, row: Mapping[str, Any]):
                key = (role, row["server"])
                if key not in parsed:
                    parsed[key] = server_snapshot(row if role != "replica" else {**row, "binary_logs": None})
                return parsed[key]

            def upstream_of(r: Mapping[str, Any]):
                key = ("upstream", r["finding_key"])
                if key not in parsed:
                    texts = r.get("upstream") or []     # collect_list dropped the unread ones
                    parsed[key] = functools.reduce(operator.or_, map(GtidSet.parse, texts)) if texts else None
                return parsed[key]

            for r in batch.slice(start, _DONOR_SLICE_ROWS).to_pylist():
                try:
                    replica, source = snap("replica", r["replica"]), snap("source", r["source_snapshot"])
                    donor, missing = snap("donor", r["donor"]), GtidSet.parse(r["gtid_set"])
                    upstream = upstream_of(r)
                except GtidCoreError:
                    continue
                if donor_refusal(replica, source, donor, missing, upstream=upstream,
                                 unfiltered=r.get("unfiltered")) is None:
                    out.append({"finding_key": r["finding_key"], "donor": r["donor"]["server"],
                                "donor_host": r["donor_host"], "donor_port": r["donor_port"],
                                "donor_uuid": donor.server_uuid, "replica_version": r["replica"].get("version"),
                                "return_host": r["return_host"], "return_port": r["return_port"],
                                "multi_source": bool(r.get("multi_source")),
                                "source_purged": None if source.gtid_purged is None
                                else source.gtid_purged.to_text(multiline=False)})
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def with_donors(row: Mapping[str, Any]) -> dict[str, Any]:
    """A :data:`DONOR_CHECK` finding row (raw columns) whose ``donors`` (its sound donors sorted
    by name, each ``donor``, ``donor_host``, ``donor_port``, ``donor_uuid``; NULL when none) name where the
    replica can fetch what it lacks: the steps for the first (gtid_core.donors) come before the
    check's own remediation (reprovisioning, the alternative), and the evidence lists them all
    (``donors``). Without donors, the row as it was."""
    from gtid_core.donors import fetch_from_donor_steps
    from gtid_core.gtid_set import GtidSet
    from gtid_core.versions import MySQLVersion

    out = {k: row.get(k) for k in RAW_FINDING_COLUMNS}
    donors = row.get("donors") or []
    if not donors or not row.get("gtid_set"):
        return out
    version = MySQLVersion.parse(row["replica_version"]) if row.get("replica_version") else None
    first = donors[0]
    steps = fetch_from_donor_steps(
        replica=row["server"], replica_version=version, channel=row.get("channel"), source=row["source"],
        source_host=row.get("return_host"), source_port=row.get("return_port"),
        source_purged=GtidSet.parse(row["source_purged"]) if row.get("source_purged") is not None else None,
        donor=(first["donor"], first["donor_host"], first["donor_port"]), donor_uuid=first.get("donor_uuid"),
        others=[d["donor"] for d in donors[1:]], missing=GtidSet.parse(row["gtid_set"]),
        multi_source=bool(row.get("multi_source")))
    out["remediation"] = f"{steps}\n{out['remediation']}" if out.get("remediation") else steps
    evidence = json.loads(out["evidence"]) if out.get("evidence") else {}
    evidence["donors"] = [d["donor"] for d in donors]
    out["evidence"] = json.dumps(evidence, sort_keys=True, default=str)
    return out


def with_donor_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body of :func:`with_donors`: raw finding rows in, the same rows out."""
    import pyarrow as pa

    schema = _raw_arrow_schema()
    for batch in batches:
        yield pa.RecordBatch.from_pylist([with_donors(r) for r in batch.to_pylist()], schema=schema)


#: Columns of a finding after :func:`finalize_batches` (raw + silences).
FINAL_FINDING_COLUMNS = RAW_FINDING_COLUMNS + ("silenced", "silence_id")


def finalize_batches(batches: Iterator[Any], rules: Any) -> Iterator[Any]:
    """mapInArrow body: one input row per ``finding_key`` with ``rows`` (every raw finding of
    that key: two checks of one pair may collide), one finding out: the most severe, the others'
    details appended, with the active silences (``rules``, or a broadcast of them) applied."""
    import pyarrow as pa

    schema = _arrow_schema("findings", FINAL_FINDING_COLUMNS)
    rules = tuple(getattr(rules, "value", rules))
    for batch in batches:
        out: list[dict[str, Any]] = []
        for r in batch.to_pylist():
            out.extend(apply_silences(_dedupe(r["rows"]), rules))
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def history_batches(batches: Iterator[Any], *, run_id: str, run_date: Any, output: str,
                    min_severity: str = "warning") -> Iterator[Any]:
    """mapInArrow body over the outer join of this run's findings and the previous run's on
    ``finding_key``: input rows ``cur`` (struct or NULL), ``prev`` (struct or NULL) and ``blind``
    (the finding's server or source was not collected now). ``output='findings'`` yields this
    run's findings rows (:func:`jobs.history.reconcile_key`); ``output='alerts'`` the alert feed's
    events (:func:`jobs.history.alert_event_for_key`), ``labels`` as JSON text."""
    import pyarrow as pa

    if output not in ("findings", "alerts"):
        raise ValueError(f"output must be 'findings' or 'alerts', got {output!r}")
    schema = _arrow_schema(output)
    for batch in batches:
        out: list[dict[str, Any]] = []
        for r in batch.to_pylist():
            row = reconcile_key(r["cur"], r["prev"], run_id=run_id, run_date=run_date, blind=bool(r["blind"]))
            if output == "findings":
                if row is not None:
                    out.append({k: row.get(k) for k in schema.names})
                continue
            event = alert_event_for_key(row, r["prev"], run_id=run_id, run_date=run_date,
                                        min_severity=min_severity)
            if event is not None:
                event["labels"] = json.dumps(event["labels"], sort_keys=True)
                event["delivered"] = None
                out.append({k: event.get(k) for k in schema.names})
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def _failover_model(source: Any, src: Mapping[str, Any], pairs: Sequence[Mapping[str, Any]], cache: Any):
    """The failover model of one source (gtid_core.failover), or None when a replica's snapshot
    cannot be built (those pairs get snapshot_invalid from the pair checks)."""
    from gtid_core.checks.group import IN_GROUP_STATES
    from gtid_core.errors import GtidCoreError
    from gtid_core.failover import FailoverReplica, model_failover

    if src.get("group_member_state") in IN_GROUP_STATES:
        return None  # the group elects a member: jobs.audit.with_group_state, group_batches
    try:
        replicas = [FailoverReplica(cache.get(p["replica"]), channel_snapshot(p["channel"]),
                                    other_channels_gtids=_other_channels_gtids(p, p["channel"].get("channel_name") or ""))
                    for p in pairs]
    except GtidCoreError:
        return None
    return model_failover(source, replicas, source_name=src["server"]) if replicas else None


#: Columns of the ``horizon`` output of :func:`pair_outputs` (report_pairs' purge-horizon part, keyed by pair).
HORIZON_COLUMNS = ("replica", "channel", "source", "lacking_count", "purge_margin", "binary_logs", "start_file",
                   "reconnect")


def purge_horizon(source: Any, src: Mapping[str, Any], replica: Any, channel: Any) -> dict[str, Any] | None:
    """What a reconnect of one pair would do now, for the report: the transactions of the source
    the replica lacks, and the margin, the position in the source's ``SHOW BINARY LOGS`` of the file
    a reconnect would stream from (:func:`gtid_core.simulate_auto_position_reconnect`, the checks'
    model); 0 is ``replica_near_purge_horizon``. None when it lacks nothing or any input is
    unknown (a set or a Previous_gtids not read, no AUTO_POSITION): unknown is not a margin.
    ``source``/``replica`` are :func:`server_snapshot` values, ``channel`` a
    :func:`channel_snapshot`; ``src`` the source's row (with ``binary_logs``)."""
    from gtid_core import simulate_auto_position_reconnect
    from gtid_core.reconnect import ReconnectKind, announced_gtid_set

    if channel.auto_position is False:
        return None
    if source.gtid_executed is None or replica.gtid_executed is None or channel.retrieved_gtid_set is None:
        return None
    if source.gtid_executed.is_subset(replica.gtid_executed):  # applied everything: lacks nothing
        return None
    announced = announced_gtid_set(replica.gtid_executed, channel.retrieved_gtid_set,
                                   replica_version=replica.version)
    needed = source.gtid_executed - announced
    logs = src.get("binary_logs")
    if not needed or not logs or any(not b.get("previous_gtids_read") for b in logs):
        return None
    names = [b["log_name"] for b in sorted(logs, key=lambda b: b["seq"])]
    outcome = simulate_auto_position_reconnect(source, announced)
    if outcome.kind is ReconnectKind.STREAMS and outcome.start_file is not None:
        margin, reconnect = names.index(outcome.start_file), "streams"
    elif outcome.refused:
        margin, reconnect = None, "refused"
    else:
        return None
    count = needed.count()
    return {"lacking_count": count if count <= _INT64_MAX else None, "purge_margin": margin,
            "binary_logs": len(names), "start_file": outcome.start_file, "reconnect": reconnect}


def _horizon_arrow_schema():
    import pyarrow as pa

    fields = {"replica": pa.string(), "channel": pa.string(), "source": pa.string(), "lacking_count": pa.int64(),
              "purge_margin": pa.int32(), "binary_logs": pa.int32(), "start_file": pa.string(),
              "reconnect": pa.string()}
    return pa.schema([pa.field(c, fields[c]) for c in HORIZON_COLUMNS])


def group_member(row: Mapping[str, Any]):
    """A ``GroupMember`` from one member of a :func:`jobs.audit.group_frame` row."""
    from gtid_core import GtidSet
    from gtid_core.checks.group import GroupMember, ViewMember
    from gtid_core.errors import GtidCoreError
    from gtid_core.versions import MySQLVersion

    def version(text: str | None):
        try:
            return MySQLVersion.parse(text) if text else None
        except GtidCoreError:
            return None

    retrieved = GtidSet.EMPTY
    for text in row.get("async_retrieved") or ():
        retrieved = retrieved | GtidSet.parse(text)
    received = row.get("applier_received_transaction_set")
    view = tuple(ViewMember(v["member_id"] or "", v.get("member_state"), v.get("member_role"),
                            version(v.get("member_version"))) for v in row.get("view") or ())
    return GroupMember(snapshot=server_snapshot(row["snapshot"]), group_name=row["group_name"],
                       state=row.get("member_state"), role=row.get("member_role"),
                       weight=row.get("member_weight"), single_primary=row.get("single_primary_mode"),
                       view_change_uuid=row.get("view_change_uuid"),
                       applier_received=GtidSet.parse(received) if received is not None else None,
                       async_retrieved=retrieved, view=view)


def _group(members: Sequence[Mapping[str, Any]]):
    """(members, asynchronous replicas by member name, invalid rows, cluster by server) of one
    :func:`jobs.audit.group_frame` row. A member or replica whose snapshot does not parse is left
    out (reported as snapshot_invalid): the group's checks see it as not read."""
    from gtid_core.checks.group import AsyncReplica

    parsed, replicas, invalid, cluster = [], {}, [], {}
    for row in sorted(members, key=lambda m: m["snapshot"]["server"]):
        snap = row["snapshot"]
        cluster[snap["server"]] = snap.get("cluster")
        try:
            parsed.append(group_member(row))
        except Exception as exc:  # noqa: BLE001 -- bad input is a finding, never a failed task
            invalid.append(_invalid(snap, exc))
            continue
        for pair in sorted(row.get("replicas") or (), key=lambda p: p["replica"]["server"]):
            rep = pair["replica"]
            cluster[rep["server"]] = rep.get("cluster")
            try:
                replicas.setdefault(snap["server"], []).append(
                    AsyncReplica(server_snapshot(rep), channel_snapshot(pair["channel"])))
            except Exception:  # noqa: BLE001 -- the pair checks report this replica's snapshot_invalid
                continue
    return parsed, replicas, invalid, cluster


def group_outputs(members: Sequence[Mapping[str, Any]], *, run_id: str | None = None,
                  run_date: Any = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Everything one replication group (``members`` of a :func:`jobs.audit.group_frame` row)
    gives, its members parsed once: ``finding`` rows (the group checks, and snapshot_invalid for
    a member that does not parse) and, for a single-primary group, its ``readiness`` rows
    (gtid_core.checks.group.group_failover_rows)."""
    from gtid_core.checks.group import group_failover_rows, run_group_checks

    parsed, replicas, invalid, cluster = _group(members)
    for row in invalid:
        yield "finding", row
    for f in run_group_checks(parsed, replicas):
        yield "finding", _finding_to_row(f, cluster.get(f.server))
    primary = next((m.name for m in parsed if m.role == "PRIMARY"), None)
    for row in group_failover_rows(parsed, replicas, run_id=run_id, run_date=run_date, cluster=cluster.get(primary)):
        yield "readiness", row


def group_batches(batches: Iterator[Any], *, run_id: str | None = None, run_date: Any = None) -> Iterator[Any]:
    """mapInArrow body over ``jobs.audit.group_frame``: one row per replication group,
    :func:`group_outputs` out in :func:`source_output_arrow_schema`'s layout (no ``horizon``)."""
    return _tagged_batches(batches, lambda r, _cache: group_outputs(r["members"] or [], run_id=run_id,
                                                                    run_date=run_date))


def identity_batches(batches: Iterator[Any]) -> Iterator[Any]:
    """mapInArrow body over ``jobs.audit.identity_group_frame``: one row per shared identity
    (``identity`` 'server_uuid' or 'server_id', ``replication_group``, ``servers``: the servers
    sharing it), ``duplicate_server_uuid`` findings out."""
    import pyarrow as pa

    schema = _raw_arrow_schema()
    for batch in batches:
        out: list[dict[str, Any]] = []
        for r in batch.to_pylist():
            out.extend(identity_findings(r["identity"], r["servers"] or [], r.get("replication_group")))
        yield pa.RecordBatch.from_pylist(out, schema=schema)


def identity_server(row: Mapping[str, Any]):
    """An ``IdentityServer`` from one server of an identity row. A gtid_executed gtid_core cannot
    parse is unknown here (the server checks report it as snapshot_invalid), and so is a
    server_uuid that is no UUID."""
    from gtid_core.errors import GtidCoreError
    from gtid_core.gtid_set import GtidSet
    from gtid_core.identity import IdentityServer

    text = row.get("gtid_executed")
    try:
        executed = GtidSet.parse(text) if text is not None else None
    except GtidCoreError:
        executed = None
    fields = dict(name=row["server"], cluster=row.get("cluster"), server_id=row.get("server_id"),
                  gtid_executed=executed, sources=frozenset(row.get("sources") or ()),
                  replicas=frozenset(row.get("replicas") or ()))
    try:
        return IdentityServer(server_uuid=row.get("server_uuid"), **fields)
    except GtidCoreError:
        return IdentityServer(server_uuid=None, **fields)


def identity_findings(identity: str, servers: Sequence[Mapping[str, Any]],
                      replication_group: str | None = None) -> list[dict[str, Any]]:
    """``duplicate_server_uuid`` rows for one identity row: ``identity`` 'server_uuid' (the
    servers sharing one server_uuid) or 'server_id' (the servers of ``replication_group`` sharing
    one server_id)."""
    from gtid_core.identity import check_duplicate_server_id, check_duplicate_server_uuid

    members = [identity_server(s) for s in servers]
    cluster = {s.name: s.cluster for s in members}
    if identity == "server_uuid":
        found = check_duplicate_server_uuid(members)
    elif identity == "server_id":
        found = check_duplicate_server_id(members, replication_group)
    else:
        raise ValueError(f"identity must be 'server_uuid' or 'server_id', got {identity!r}")
    return [_finding_to_row(f, cluster.get(f.server)) for f in found]
