"""gtid_core: MySQL-exact GTID-set algebra and the server's own replication checks.

A pure library: standard library only, no Spark, no MySQL connection, no files, no YAML.
Everything public is re-exported here with a pinned ``__all__``; the modules behind it are the
package's own business.

- ``GtidSet``: immutable, normalised GTID sets with the server's canonical text and algebra.
- ``ServerSnapshot``, ``ChannelSnapshot``, ``RelayLogEvent``: typed snapshots built from the rows
  a server returns; "unknown" stays ``None``.
- ``simulate_auto_position_reconnect``: what the source's dump thread does when this replica
  reconnects with AUTO_POSITION, version by version.
- ``parse_relay_log``: the transaction boundary parser over ``SHOW RELAYLOG EVENTS`` rows.
- ``run_server_checks`` / ``run_pair_checks``: the checks, returning ``Finding`` records;
  ``REGISTRY`` describes every check id (pure, job-level, failover and identity checks).
- ``model_failover``: what promoting each replica of a source would do to its siblings.
- ``check_duplicate_server_uuid`` / ``check_duplicate_server_id``: servers sharing an identity,
  anywhere in the inventory (one identity group at a time).
"""
from gtid_core.checks import (
    CHECKS,
    CheckInfo,
    FleetContext,
    pair_reconnect_outcome,
    run_pair_checks,
    run_server_checks,
)
from gtid_core.errors import GtidCoreError, GtidParseError, SnapshotError, VersionParseError
from gtid_core.failover import (
    FAILOVER_CHECKS,
    FailoverModel,
    FailoverReplica,
    failover_findings,
    failover_rows,
    model_failover,
    split_errant,
)
from gtid_core.findings import Finding, Severity, empty_transaction_sql
from gtid_core.identity import (
    IDENTITY_CHECKS,
    IdentityServer,
    check_duplicate_identities,
    check_duplicate_server_id,
    check_duplicate_server_uuid,
)
from gtid_core.gtid_set import MAX_GNO, GtidSet
from gtid_core.reconnect import (
    ER_MASTER_HAS_PURGED_REQUIRED_GTIDS,
    ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
    ReconnectKind,
    ReconnectOutcome,
    announced_gtid_set,
    reconnect_outcome,
    simulate_auto_position_reconnect,
)
from gtid_core.relay_log import (
    BoundaryParseResult,
    ParserState,
    RelayLogEvent,
    events_from_rows,
    gtid_of_event,
    parse_relay_log,
)
from gtid_core.snapshots import BinaryLog, ChannelSnapshot, Gtid, ServerSnapshot, variables_from_rows
from gtid_core.registry import REGISTRY
from gtid_core.versions import MySQLVersion

__all__ = [
    "BinaryLog",
    "BoundaryParseResult",
    "CHECKS",
    "ChannelSnapshot",
    "CheckInfo",
    "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS",
    "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER",
    "FAILOVER_CHECKS",
    "FailoverModel",
    "FailoverReplica",
    "Finding",
    "FleetContext",
    "Gtid",
    "GtidCoreError",
    "GtidParseError",
    "GtidSet",
    "IDENTITY_CHECKS",
    "IdentityServer",
    "MAX_GNO",
    "MySQLVersion",
    "ParserState",
    "ReconnectKind",
    "REGISTRY",
    "ReconnectOutcome",
    "RelayLogEvent",
    "ServerSnapshot",
    "Severity",
    "SnapshotError",
    "VersionParseError",
    "announced_gtid_set",
    "check_duplicate_identities",
    "check_duplicate_server_id",
    "check_duplicate_server_uuid",
    "empty_transaction_sql",
    "events_from_rows",
    "failover_findings",
    "failover_rows",
    "gtid_of_event",
    "model_failover",
    "pair_reconnect_outcome",
    "parse_relay_log",
    "reconnect_outcome",
    "run_pair_checks",
    "run_server_checks",
    "simulate_auto_position_reconnect",
    "split_errant",
    "variables_from_rows",
]
