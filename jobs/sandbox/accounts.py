"""The accounts of a sandbox fleet, and the least-privilege grants of the read-only auditor.

``AUDIT_GRANTS`` is the single source of the auditor's privileges: the sandbox creates the
``audit`` account with exactly these statements and ``deploy/grants.sql`` ships them for
production (a test checks the two agree). Why each privilege (verified on MySQL 9.7):

- ``REPLICATION CLIENT``: ``SHOW REPLICA STATUS``, ``SHOW BINARY LOGS``, ``SHOW BINARY LOG STATUS``;
- ``REPLICATION SLAVE``: ``SHOW BINLOG EVENTS`` and ``SHOW RELAYLOG EVENTS`` (no narrower privilege
  exists; it also allows streaming binary logs, so keep the password as safe as a replica's);
- ``SELECT`` on each ``performance_schema.replication_*`` table, named one by one (a grant on
  ``performance_schema.*`` would expose statement digests and history with query text).

Reading ``@@GLOBAL.gtid_executed`` / ``gtid_purged`` / ``server_uuid`` needs no privilege.
Every statement runs with ``sql_log_bin=0`` in the sandbox so accounts never create GTIDs.
"""
from __future__ import annotations

__all__ = ["AUDIT_USER", "REPL_USER", "PERFORMANCE_SCHEMA_TABLES", "audit_grant_statements",
           "repl_grant_statements"]

AUDIT_USER = "audit"
REPL_USER = "repl"

#: The performance_schema tables an auditor reads (every replication_* table of MySQL 9.7).
PERFORMANCE_SCHEMA_TABLES: tuple[str, ...] = (
    "replication_applier_configuration",
    "replication_applier_filters",
    "replication_applier_global_filters",
    "replication_applier_status",
    "replication_applier_status_by_coordinator",
    "replication_applier_status_by_worker",
    "replication_asynchronous_connection_failover",
    "replication_asynchronous_connection_failover_managed",
    "replication_connection_configuration",
    "replication_connection_status",
    "replication_group_member_stats",
    "replication_group_members",
)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def audit_grant_statements(password: str, user: str = AUDIT_USER, host: str = "%") -> list[str]:
    """CREATE USER + GRANTs of the read-only auditor, in order."""
    account = f"{_quote(user)}@{_quote(host)}"
    statements = [
        f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY {_quote(password)}",
        f"GRANT REPLICATION CLIENT, REPLICATION SLAVE ON *.* TO {account}",
    ]
    statements += [f"GRANT SELECT ON performance_schema.{table} TO {account}"
                   for table in PERFORMANCE_SCHEMA_TABLES]
    return statements


def repl_grant_statements(password: str, user: str = REPL_USER, host: str = "%") -> list[str]:
    """CREATE USER + GRANT of the account replicas use to stream binary logs."""
    account = f"{_quote(user)}@{_quote(host)}"
    return [f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY {_quote(password)}",
            f"GRANT REPLICATION SLAVE ON *.* TO {account}"]
