"""The tables written by ``gtid-audit audit``: findings, findings_latest, alerts, uuid_registry, run_summary.

``findings`` is the contract dashboards and alerts use (documented in docs/audit.md): one row per
finding per run, open or resolved, with a stable ``finding_key``. Structured values the schema
vocabulary has no type for (a finding's evidence, an alert's labels, per-check counts) are
stored as JSON text with sorted keys.
"""
from __future__ import annotations

from schemas.base import Column, LogicalType as L, TableSchema, register, run_columns

__all__ = ["FINDINGS", "FINDINGS_LATEST", "ALERTS", "UUID_REGISTRY", "RUN_SUMMARY", "AUDIT_TABLES"]

C = Column

FINDINGS = register(TableSchema(
    name="findings",
    version=1,
    description="One row per finding per run: what the audit found, open or resolved, with the "
                "exact GTID set and the evidence. Healthy pairs and servers have no warning or "
                "critical row.",
    key=("run_id", "finding_key"),
    columns=run_columns() + (
        C("finding_key", L.STRING, False,
          "sha1 hex of 'check_id|server|source|channel' (NULL written as ''): the same finding "
          "in every run; the GTID set is not part of it"),
        C("check_id", L.STRING, False, "the check that produced the finding (gtid-audit explain CHECK_ID)"),
        C("severity", L.STRING, False, "critical, warning or info"),
        C("cluster", L.STRING, True, "cluster of the server (configuration)"),
        C("server", L.STRING, False, "the server the finding is about; the replica for pair checks"),
        C("source", L.STRING, True, "the source of the pair for pair checks; NULL for server checks"),
        C("channel", L.STRING, True, "replication channel for pair checks ('' = default channel)"),
        C("title", L.STRING, False, "one-line statement of the problem"),
        C("detail", L.STRING, False, "what was seen, with the numbers"),
        C("gtid_set", L.STRING, True, "the GTID set at stake: the server's canonical text on one line (blocks joined by ','); NULL if none"),
        C("gtid_count", L.INT64, True, "transactions in gtid_set; NULL if none or beyond int64"),
        C("first_seen", L.DATE, False, "run_date of the first run in which this finding was open"),
        C("status", L.STRING, False, "'open' or 'resolved' (resolved rows appear once, in the run "
                                     "that no longer finds it)"),
        C("silenced", L.BOOL, False, "true if a configured silence mutes it (no alert, no exit code)"),
        C("silence_id", L.STRING, True, "id of the silence that mutes it"),
        C("remediation", L.STRING, True, "what to do about it"),
        C("check_version", L.INT32, True, "version of the check's logic that produced the row"),
        C("evidence", L.STRING, True, "the sets and values the check compared, JSON object"),
    ),
))

FINDINGS_LATEST = register(TableSchema(
    name="findings_latest",
    version=1,
    description="One row per finding_key: its row of the newest audited run that had it (open, or "
                "resolved once it went away), MERGEd on finding_key after each audit. Not "
                "partitioned, clustered by check and severity: the on-call panel reads it whole.",
    partition_by=(),
    cluster_by=("severity", "check_id", "cluster"),
    key=("finding_key",),
    columns=FINDINGS.columns,
))

ALERTS = register(TableSchema(
    name="alerts",
    version=1,
    description="The alert feed: one row per alerting finding and run, compared with the "
                "previous run (new, still_open, escalated, resolved).",
    key=("run_id", "finding_key"),
    columns=run_columns() + (
        C("event", L.STRING, False, "new, still_open, escalated or resolved"),
        C("finding_key", L.STRING, False, "findings.finding_key"),
        C("fingerprint", L.STRING, False, "sha1 hex of the sorted Alertmanager labels"),
        C("check_id", L.STRING, False, "findings.check_id"),
        C("severity", L.STRING, False, "severity now (the last alerting severity for resolved)"),
        C("previous_severity", L.STRING, True, "severity in the previous run; NULL for new"),
        C("cluster", L.STRING, True, "findings.cluster"),
        C("server", L.STRING, False, "findings.server"),
        C("source", L.STRING, True, "findings.source"),
        C("channel", L.STRING, True, "findings.channel"),
        C("summary", L.STRING, False, "Alertmanager annotation 'summary'"),
        C("description", L.STRING, False, "Alertmanager annotation 'description'"),
        C("remediation", L.STRING, True, "Alertmanager annotation 'remediation'"),
        C("gtid_set", L.STRING, True, "findings.gtid_set"),
        C("gtid_count", L.INT64, True, "findings.gtid_count"),
        C("first_seen", L.DATE, True, "findings.first_seen"),
        C("labels", L.STRING, False, "Alertmanager labels, JSON object"),
        C("delivered", L.BOOL, True,
          "true once posted to Alertmanager; false if the post failed; NULL if none configured"),
    ),
))

UUID_REGISTRY = register(TableSchema(
    name="uuid_registry",
    version=1,
    description="Every server_uuid ever seen in the fleet and the server that had it, merged each "
                "run, so an errant GTID names its writer after that server is gone.",
    partition_by=(),
    key=("server_uuid",),
    columns=(
        C("run_id", L.STRING, False, "last run that saw this server_uuid"),
        C("server_uuid", L.STRING, False, "@@GLOBAL.server_uuid, lowercase"),
        C("server", L.STRING, False, "inventory name of the server that last had it"),
        C("cluster", L.STRING, True, "its cluster"),
        C("first_seen", L.DATE, False, "run_date of the first run that saw it"),
        C("last_seen", L.DATE, False, "run_date of the last run that saw it"),
    ),
))

RUN_SUMMARY = register(TableSchema(
    name="run_summary",
    version=2,
    upgrades_from=1,
    description="One row per audit run: coverage, counts, durations, exit code.",
    # one row a night: partitioned by day, a year would be 365 one-row files; clustered, OPTIMIZE
    # keeps it a few files (docs/deployment.md, "Table maintenance")
    partition_by=(),
    cluster_by=("run_date", "run_id"),
    key=("run_id",),
    columns=run_columns("first clustering column") + (
        C("audited_at", L.TIMESTAMP, False, "UTC instant the audit finished"),
        C("collect_seconds", L.DOUBLE, True, "duration of the collect stage; NULL when audit ran alone"),
        C("audit_seconds", L.DOUBLE, False, "duration of the audit stage"),
        C("servers_audited", L.INT64, False, "servers with a usable snapshot in this run"),
        C("servers_failed", L.INT64, False, "servers that could not be collected (collection_failed)"),
        C("pairs_audited", L.INT64, False, "replica channels whose source was resolved and read"),
        C("findings_open", L.INT64, False, "open findings (silenced included)"),
        C("findings_silenced", L.INT64, False, "open findings muted by a silence"),
        C("findings_resolved", L.INT64, False, "findings resolved in this run"),
        C("findings_by_check", L.STRING, False,
          "open findings per check and severity, JSON {check_id: {severity: count}}"),
        C("findings_by_severity", L.STRING, False, "open unsilenced findings per severity, JSON"),
        C("findings_unsilenced_by_check", L.STRING, True,
          "open unsilenced findings per check and severity, JSON {check_id: {severity: count}}: the "
          "history panel's night, one row a run (docs/dashboards.md); NULL in rows written before "
          "version 2", since=2),
        C("alerts_by_event", L.STRING, False, "alert feed events per kind, JSON"),
        C("alerts_delivered", L.BOOL, True, "true if Alertmanager accepted the feed; NULL if not configured"),
        C("expired_silences", L.STRING, False, "configured silences past their expiry, JSON list"),
        C("fail_on", L.STRING, False, "critical, warning or never"),
        C("exit_code", L.INT32, False, "0 ok, 2 open findings at or above fail_on, 1 the alert "
                                       "feed could not be delivered (a job that fails writes no row)"),
    ),
))

AUDIT_TABLES = (FINDINGS, FINDINGS_LATEST, ALERTS, UUID_REGISTRY, RUN_SUMMARY)
