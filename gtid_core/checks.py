"""The audit's checks: pure functions from typed snapshots to :class:`Finding` records.

Two entry points, called by the audit job once per server and once per replication channel::

    run_server_checks(server, previous) -> list[Finding]
    run_pair_checks(replica, channel, source, relay_tail, fleet) -> list[Finding]

**Read order and what it means for soundness.** The collector plans to read a replica BEFORE its
source. Between the two reads the source can only have gained transactions (its gtid_executed
grows), and its gtid_purged can only have grown. So a set computed as "replica minus source"
(errant transactions, ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER) can only be *smaller* than the truth: a
positive is trustworthy, and a transaction committed on the replica between the reads can be
missed until the next run. When the order did NOT hold -- the replica was read after its source
(a cycle, a retried or slow probe), or either instant is unknown -- the replica may legitimately
hold transactions the source executed after its own, earlier read, and "replica minus source"
can be a false positive. Every pair finding therefore records both read instants
(``replica_read_at``, ``source_read_at``, ``read_order``), and the two positives that rest on the
order (``errant_transactions``, ``replica_has_more_gtids``) are downgraded to an *unconfirmed
warning* saying why, never a silent critical. A set computed as "source's purged minus replica"
goes the other way: it can be *larger* than the truth with the planned order (the source purged,
between the two reads, logs holding transactions the replica received after it was read), which
needs a replica lagging by the source's whole binary-log retention, itself a real problem, and
each such check says so; a replica read after its source only makes those checks more sound.

``CHECKS`` is the registry (``gtid-audit explain CHECK_ID``). Every check function's docstring
says what it proves, what it cannot see, and the server behaviour it mirrors; docs/checks.md is
the long form.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Sequence

from gtid_core.errors import GtidParseError, SnapshotError
from gtid_core.findings import Finding, Severity, empty_transaction_sql
from gtid_core.gtid_set import GtidSet
from gtid_core.reconnect import (
    ER_MASTER_HAS_PURGED_REQUIRED_GTIDS,
    ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
    ReconnectKind,
    ReconnectOutcome,
    reconnect_outcome,
)
from gtid_core.relay_log import (
    ParserState,
    RelayLogEvent,
    gtid_of_event,
    is_gtid_event,
    is_gtid_type,
    parse_relay_log,
    window_start,
)
from gtid_core.snapshots import ChannelSnapshot, Gtid, ServerSnapshot

__all__ = [
    "CHECKS",
    "CheckInfo",
    "FleetContext",
    "pair_reconnect_outcome",
    "run_pair_checks",
    "run_server_checks",
]


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CheckInfo:
    """What ``gtid-audit explain CHECK_ID`` prints about one check."""

    check_id: str
    version: int
    default_severity: Severity
    scope: str  # "server" (one server, maybe against its previous snapshot), "pair" (a channel), or
    #             "job" (made by the audit job itself: collection, parsing, source resolution)
    title: str
    meaning: str
    server_error: str | None
    remediation: str


def _info(check_id: str, severity: Severity, scope: str, title: str, meaning: str, server_error: str | None,
          remediation: str, version: int = 1) -> CheckInfo:
    return CheckInfo(check_id, version, severity, scope, title, meaning, server_error, remediation)


_REPROVISION = (
    "Reprovision the replica from a recent backup of the source (or of a server that has every "
    "transaction), or copy the missing transactions from a server whose binary logs still hold them. "
    "Do not add the missing GTIDs to the replica's gtid_purged: that hides the gap, the data stays missing."
)

CHECKS: Mapping[str, CheckInfo] = MappingProxyType({i.check_id: i for i in [
    _info("replica_has_more_gtids", Severity.CRITICAL, "pair",
          "Source would refuse this replica: replica has GTIDs the source lacks",
          "On the next AUTO_POSITION connect the source's dump thread compares the GTIDs of its own "
          "server_uuid (every tag) in the replica's set (Retrieved_Gtid_Set ∪ gtid_executed) with its own "
          "gtid_executed (is_subset_for_sid; sources 5.6.23+ and 5.7.6+ -- older ones make no such check). "
          "This replica fails that comparison. Unconfirmed (warning) when the replica was not read before "
          "its source.",
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER (1885), reported by the replica as fatal error 1236 / 13114",
          "Find out why the replica has those transactions (source binary log lost after a crash with "
          "sync_binlog != 1, writes on the replica). Replicate what the source lost back to it, or commit "
          "empty transactions with those GTIDs on the source (SQL in the finding).",
          version=4),  # v2: every tag of the source's uuid counts (9.7 verified); v3: per-release-line rule
                       # from the server source (no check before 5.6.23 / 5.7.6), read order; v4: an 8.3+
                       # replica sends no tagged GTID to a source older than 8.3 (reconnect.announced_gtid_set)
    _info("source_purged_required_gtids", Severity.CRITICAL, "pair",
          "Source would refuse this replica: it purged transactions the replica lacks",
          "The source's gtid_purged (transactions no longer in its binary logs) is not a subset of the "
          "replica's set (checked on connect by 5.6.22+ and 5.7.6+), or no binary log's Previous_gtids is "
          "(find_first_log_not_in_gtid_set, every version): on reconnect the source cannot send them.",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (1789), reported as fatal error 1236 / 13114 "
          "'... the source purged required binary logs'",
          _REPROVISION, version=2),  # v2: one reconnect outcome; a pre-5.6.22 source refused by the scan
    _info("silent_purged_gap", Severity.CRITICAL, "pair",
          "Replica silently lacks transactions the source purged (source older than 5.6.22)",
          "The source is older than 5.6.22 and does not check gtid_purged on connect, AND its binary-log "
          "scan finds a file to stream from (after SET GLOBAL gtid_purged the first binary log's "
          "Previous_gtids is empty, a subset of anything): the replica never receives the purged "
          "transactions it lacks. Replication looks healthy. (After an ordinary PURGE BINARY LOGS the "
          "scan refuses instead: source_purged_required_gtids.)",
          None, _REPROVISION + " Upgrade the source to 5.6.22 or later.",
          version=2),  # v2: decided by the binary-log scan, not by gtid_purged and the version alone
    _info("replica_near_purge_horizon", Severity.WARNING, "pair",
          "Replica is one binary-log purge away from being refused",
          "On reconnect the source would stream to this replica from its oldest binary log still present: "
          "find_first_log_not_in_gtid_set stops at that file because the replica still lacks transactions "
          "written to it. The next purge of that file (binlog_expire_logs_seconds, PURGE BINARY LOGS) "
          "removes the only copy the source has of them, and the replica's next connect is refused.",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (1789) after the next purge of the source's oldest binary log, "
          "reported as fatal error 1236 / 13114 '... the source purged required binary logs'",
          "Get the replica's receiver running again (START REPLICA, fix whatever stops it) so it fetches "
          "what it lacks before the file goes; until it has caught up, do not PURGE BINARY LOGS on the source "
          "and extend its retention (binlog_expire_logs_seconds). Watch binlog_expire_logs_seconds against "
          "how long replicas can stay stopped."),
    _info("errant_transactions", Severity.CRITICAL, "pair",
          "Errant transactions: replica has transactions its source never executed",
          "(replica gtid_executed ∪ Retrieved_Gtid_Set) minus the source's gtid_executed, excluding "
          "GTIDs the replica assigns to anonymous transactions and GTIDs of its other channels. They do not "
          "stop replication on any version (a source compares at most its own server_uuid) and stay silent "
          "until a failover makes this replica a source, or makes another server its replica. Unconfirmed "
          "(warning) when the replica was not read before its source.",
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER after a failover",
          "Check what the transactions changed. If they are harmless or wanted everywhere, commit empty "
          "transactions with these GTIDs on the source and on every other replica (SQL in the finding); "
          "if they must not exist, reprovision the replica.",
          version=2),  # v2: unconfirmed (warning) when the replica was not read before its source
    _info("incomplete_relay_log_tail", Severity.WARNING, "pair",
          "Relay log ends inside a transaction",
          "The transaction boundary parser over the end of the newest relay log (read to its end) ends "
          "in GTID, DDL or DML while the receiver is stopped: it stopped in the middle of a transaction, "
          "however large (a tail that lost the transaction's Gtid event is parsed from inside it). The "
          "dangling GTID comes from its Gtid event, else QUEUEING_TRANSACTION (8.0.2+), the applier's "
          "position (5.7.6+) or Retrieved_Gtid_Set minus gtid_executed (before 5.7.6); otherwise it is "
          "reported as unknown. Before 5.6.15 the dangling GTID is already in Retrieved_Gtid_Set and is "
          "never fetched again (silent loss); 5.6.15-5.7.5 re-fetch it through a workaround that Bug "
          "#72392 breaks; from 5.7.6 the GTID is not retrieved until complete. A running receiver, or a "
          "tail not known to reach the end of the newest relay log, gives nothing.",
          None,
          "Before 5.7.6: make sure the dangling GTID is fetched again (remove it from the relay logs by "
          "RESET REPLICA after the applier caught up, then START REPLICA). From 5.7.6: restart the "
          "receiver (START REPLICA IO_THREAD); the partial group is fetched again.",
          version=3),  # v3: a tail without the dangling transaction's Gtid event is parsed, its GTID found elsewhere
    _info("replica_gtid_history_lost", Severity.WARNING, "pair",
          "Replica's gtid_executed lost transactions it received and applied",
          "Retrieved_Gtid_Set is not contained in gtid_executed although the applier has applied "
          "everything in the relay log: the replica's GTID history was reset (RESET MASTER / RESET BINARY "
          "LOGS AND GTIDS). The data is there but the history is not; once the relay logs are gone the "
          "source will send those transactions again. On 5.6.15-5.7.5 (Bug #72392) the last retrieved "
          "transaction is re-fetched and applied twice at the next reconnect.",
          None,
          "Restore the history: SET GLOBAL gtid_purged = '+<lost set>' on the replica (8.0+; on older "
          "servers after RESET MASTER set the whole set), after checking the data really contains those "
          "transactions. On 5.6.15-5.7.5 do it before the replica reconnects."),
    _info("replica_gtid_holes", Severity.WARNING, "pair",
          "Replica lacks source transactions below its highest GTID",
          "For a UUID, the source has intervals that the replica neither executed nor retrieved although "
          "the replica has higher numbers of that UUID: transactions were skipped or lost.",
          None,
          "If the source still has them in its binary logs, STOP REPLICA; START REPLICA with "
          "AUTO_POSITION fetches them. Otherwise reprovision."),
    _info("replication_receiver_error", Severity.CRITICAL, "pair",
          "Replication receiver (IO) thread failed with an error",
          "The receiver (IO) thread reports an error (Last_IO_Errno / Last_IO_Error, or "
          "performance_schema.replication_connection_status LAST_ERROR_NUMBER).",
          "whatever the thread reports (e.g. 1236 / 13114 'source purged required binary logs')",
          "Read the error; for 'purged required binary logs' reprovision; for 'more GTIDs than the source' "
          "see replica_has_more_gtids."),
    _info("replication_applier_error", Severity.CRITICAL, "pair",
          "Replication applier (SQL) thread failed with an error",
          "The applier (SQL) thread reports an error (Last_SQL_Errno / Last_SQL_Error).",
          "whatever the thread reports (e.g. 1007 'database exists', 1062 'duplicate entry')",
          "Read the error and the transaction it names; fix the data or skip the transaction with an empty "
          "transaction of its GTID only after checking what it changed."),
    _info("replication_stopped", Severity.WARNING, "pair",
          "Replication thread stopped without an error",
          "Replica_IO_Running or Replica_SQL_Running is No and no error is recorded: someone stopped it.",
          None, "Start it (START REPLICA) or remove the channel if it is no longer wanted."),
    _info("gtid_executed_regressed", Severity.CRITICAL, "server",
          "gtid_executed lost GTIDs since the previous run",
          "GTIDs that were in this server's gtid_executed at the previous run are gone (RESET MASTER, "
          "restore from an older backup, or a lost binary log).",
          None,
          "Find out what happened; if the data still contains those transactions restore them with "
          "SET GLOBAL gtid_purged = '+<set>'; otherwise treat the server as restored from an older backup."),
    _info("gtid_purged_jumped", Severity.WARNING, "server",
          "gtid_purged gained GTIDs this server never executed",
          "gtid_purged now holds GTIDs that were not in gtid_executed at the previous run, and normal "
          "purging cannot explain them (binary logs of the previous run still exist, or the binary-log "
          "numbering went back): SET GLOBAL gtid_purged after a RESET / restore. With log_bin ON and "
          "log_replica_updates OFF or unknown only the server's own server_uuid is judged (applied "
          "transactions go straight into gtid_purged there).",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS on replicas lacking them (silent before 5.6.22)",
          "Make sure every replica of this server has the jumped set (see source_purged_required_gtids).",
          version=2),  # v2: with log_bin ON and log_replica_updates OFF (or unknown) only the own uuid
    _info("source_uuid_went_back", Severity.CRITICAL, "server",
          "Server's own GTID numbers went back",
          "The highest gno of the server's own server_uuid (untagged, or of one of its tags) is lower than at "
          "the previous run. New "
          "transactions will reuse GTIDs its replicas already have, and replicas silently skip them.",
          None,
          "Stop writes; restore the history with SET GLOBAL gtid_purged = '+<lost set>' so that new "
          "transactions get new numbers.",
          version=2),  # v2: tags of the own uuid are compared too
    _info("gtid_mode_off", Severity.WARNING, "server",
          "GTID mode is not ON",
          "gtid_mode is OFF, OFF_PERMISSIVE or ON_PERMISSIVE: transactions without GTIDs escape every "
          "check of this audit and AUTO_POSITION cannot be used.",
          None, "Move gtid_mode to ON one step at a time (5.7.6+: OFF_PERMISSIVE, ON_PERMISSIVE, ON)."),
    _info("config_enforce_gtid_consistency_off", Severity.WARNING, "server",
          "enforce_gtid_consistency is not ON",
          "Statements that cannot be logged safely with GTIDs are allowed (OFF) or only warned about (WARN).",
          None, "SET PERSIST enforce_gtid_consistency = ON after fixing the applications that warn."),
    _info("config_sync_binlog", Severity.WARNING, "server",
          "sync_binlog is not 1",
          "After an OS crash or power loss the binary log can lose transactions its replicas already "
          "received: the replicas then have more GTIDs than the source.",
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER after a crash", "SET PERSIST sync_binlog = 1."),
    _info("config_innodb_flush_log_at_trx_commit", Severity.WARNING, "server",
          "innodb_flush_log_at_trx_commit is not 1",
          "After a crash InnoDB can lose committed transactions whose GTIDs replicas already have, and "
          "gtid_executed and the data can disagree.",
          None, "SET PERSIST innodb_flush_log_at_trx_commit = 1."),
    _info("config_auto_position_off", Severity.WARNING, "pair",
          "Channel does not use AUTO_POSITION",
          "The channel positions by file and offset: the GTID checks the source makes on connect do not "
          "run, and repointing after a failover can silently skip or repeat transactions.",
          None, "STOP REPLICA; CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION = 1; START REPLICA."),
    _info("config_relay_log_recovery_off", Severity.WARNING, "pair",
          "relay_log_recovery is OFF with FILE repositories",
          "After a crash the replica trusts relay logs and position files that may be incomplete or "
          "behind the data.",
          None, "Set relay_log_info_repository = TABLE and relay_log_recovery = ON (restart needed)."),
    _info("config_parallel_applier_without_commit_order", Severity.WARNING, "pair",
          "Parallel applier without replica_preserve_commit_order",
          "With several applier workers and commit order not preserved, the replica commits out of order: "
          "gtid_executed has gaps while it runs, and a crash or a STOP leaves holes.",
          None, "SET PERSIST replica_preserve_commit_order = ON (needs the applier stopped)."),
    # The checks the audit job makes itself (scope "job", made in jobs/audit_tasks.py), registered
    # here so that this one registry is the catalogue (gtid_core.registry.JOB_CHECKS selects them).
    _info("collection_failed", Severity.CRITICAL, "job", "Server could not be collected",
          "Nothing could be read from this server in this run, so none of its checks ran: the "
          "audit is blind there. The finding carries the error class of collection_errors "
          "(unreachable, timeout, auth_failed, tls_verify_failed, tls_identity_mismatch, "
          "tls_required_by_server, tls_unavailable, config_error, unexpected, ...). Findings "
          "about it from the previous run are carried over as open, never resolved.",
          None,
          "Look at collection_errors for the run (message, errno); fix reachability, grants "
          "(REPLICATION CLIENT, REPLICATION SLAVE, SELECT on performance_schema.replication_*) "
          "or the server, then wait for the next run."),
    _info("collection_partial", Severity.WARNING, "job", "Server was only partly collected",
          "Some statements failed on this server (see collection_errors); the checks that need "
          "the missing data could not see everything.",
          None,
          "Read collection_errors for the run and fix the failing statement (often a missing grant)."),
    _info("snapshot_invalid", Severity.CRITICAL, "job", "Server reported a value the audit cannot parse",
          "A value read from the server (a GTID set, a version, a state) could not be parsed, so "
          "the checks of this server or pair could not run. The detail quotes the value.",
          "ER_MALFORMED_GTID_SET_SPECIFICATION (1772) if the server itself were given that text",
          "Compare the quoted value with what the server prints now; report a parser bug if the "
          "server accepts it."),
    _info("source_unresolved", Severity.WARNING, "job", "Replica's source is not in the inventory",
          "The channel's Source_Host:Source_Port matches no inventory server by name, alias or "
          "address, and its Source_UUID belongs to no server of this run (or several servers "
          "match): the pair checks of this channel could not run.",
          None,
          "Add the source to the inventory (or its address to a server's aliases), or fix the "
          "channel (CHANGE REPLICATION SOURCE TO ...). If the source is gone, the UUID registry "
          "named in the detail says which server last had its UUID."),
    _info("source_uuid_mismatch", Severity.WARNING, "job", "Source address now leads to another server",
          "The server now at the channel's Source_Host:Source_Port has a different server_uuid "
          "than the channel's Source_UUID (from the last connection): the source was rebuilt, a "
          "virtual IP moved, or a failover happened that this replica has not reconnected "
          "through yet. The next reconnect goes to a different server than the one it "
          "replicated from; the pair checks are computed against the server at the address.",
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER or ER_MASTER_HAS_PURGED_REQUIRED_GTIDS may follow "
          "at the reconnect",
          "Confirm the intended source; read this pair's other findings (errant transactions, "
          "purged required GTIDs) before the replica reconnects."),
]})


@dataclass(frozen=True)
class FleetContext:
    """What a pair check needs to know about the fleet beyond the two servers.

    ``uuid_registry`` maps a server_uuid to the inventory name of the server that owns it (used to
    attribute errant GTIDs). ``replica_name`` / ``source_name`` override the snapshots' names.

    ``other_channels_gtids`` is what the replica legitimately gets through its *other* channels;
    those GTIDs are not errant for this channel. How to fill it:

    * ``None`` for a replica with a single channel (nothing to exclude).
    * For a multi-source replica, the union over every channel of the replica *except this one*
      of (a) that channel's Retrieved_Gtid_Set (same read as this channel) and (b) the
      gtid_executed of that channel's source when it is resolved (read after the replica, like
      every source). Never this channel's own source or Retrieved_Gtid_Set.
    * (b) is what makes it complete: Retrieved_Gtid_Set forgets whatever the relay logs no longer
      hold (RESET REPLICA, relay_log_recovery, and -- observed on 9.7.4 -- CHANGE REPLICATION
      SOURCE on a caught-up channel). With only (a), an unresolved other source's GTIDs applied
      before such a purge are reported as errant here. (a) still matters when that source is
      unresolved or was read before it gained what the channel retrieved.
    * Left ``None`` on a multi-source replica, every GTID of the other channels is reported as
      errant for this one (verified on a two-channel 9.7.4 replica, tests/core/test_checks_live.py).

    Only ``errant_transactions`` uses it: the source's reconnect checks compare the replica with
    the source's own gtid_executed (5.7+: only its own server_uuid), whatever other channels bring.
    """

    uuid_registry: Mapping[str, str] = field(default_factory=dict)
    replica_name: str | None = None
    source_name: str | None = None
    other_channels_gtids: GtidSet | None = None

    def owner_of(self, uuid: str) -> str | None:
        """The inventory name of the server owning ``uuid`` (case-insensitive), or None."""
        return self.uuid_registry.get(uuid) or self.uuid_registry.get(uuid.lower())


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def _text(s: GtidSet | None) -> str | None:
    return s.to_text(multiline=False) if s is not None else None


def _short(s: GtidSet, limit: int = 300) -> str:
    text = s.to_text(multiline=False)
    return text if len(text) <= limit else text[:limit] + f"... ({s.count()} GTIDs)"


def _finding(check_id: str, server: str, title: str, detail: str, *, severity: Severity | None = None,
             source: str | None = None, channel: str | None = None, gtid_set: GtidSet | None = None,
             evidence: Mapping | None = None, remediation: str | None = None) -> Finding:
    info = CHECKS[check_id]
    return Finding(
        check_id=check_id,
        severity=severity or info.default_severity,
        server=server,
        source=source,
        channel=channel,
        title=title,
        detail=detail,
        gtid_set=gtid_set,
        gtid_count=gtid_set.count() if gtid_set is not None else None,
        evidence=dict(evidence or {}),
        remediation=remediation if remediation is not None else info.remediation,
        check_version=info.version,
    )


def _iso(at: _dt.datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def replica_read_at(replica: ServerSnapshot, channel: ChannelSnapshot) -> _dt.datetime | None:
    """When the replica's sets were last read: the later of its GTID-variable read and its
    channel-status read (Retrieved_Gtid_Set, Executed_Gtid_Set); None if the variable read's
    instant is unknown."""
    a, b = replica.read_at, channel.read_at
    if a is None:
        return None
    if b is None:
        return a
    try:
        return max(a, b)
    except TypeError:  # one naive, one aware: no order can be told
        return None


def source_read_started_at(source: ServerSnapshot) -> _dt.datetime | None:
    """When the source's read began: ``read_started_at``, else its ``read_at`` (end instant)."""
    return source.read_started_at or source.read_at


def read_order(replica: ServerSnapshot, channel: ChannelSnapshot,
               source: ServerSnapshot | None) -> tuple[bool | None, str]:
    """(held, why): held True when the replica's last read returned strictly before the source's
    read began, False when it did not, None when an instant is unknown or the two cannot be
    compared. Without the source's ``read_started_at`` its end instant stands in (a window as
    long as its one SELECT; the evidence says so).

    One function for the pair checks and the failover model, so that both trust a GTID the
    replica has and the source lacks under the same condition: the source's gtid_executed only
    grows, so it lacked that GTID when the replica was read only if the replica was read first.
    """
    rep = replica_read_at(replica, channel)
    src = source_read_started_at(source) if source is not None else None
    if rep is None or src is None:
        which = " and ".join(n for n, at in (("replica", rep), ("source", src)) if at is None)
        return None, f"the read instant of the {which} is unknown"
    try:
        before = rep < src
    except TypeError:
        return None, "the two read instants cannot be compared (one has a time zone, one has not)"
    if before:
        return True, f"the replica was read at {rep.isoformat()}, before its source ({src.isoformat()})"
    return False, (f"the replica was read at {rep.isoformat()}, not before its source ({src.isoformat()}): "
                   "the source may have executed, before the replica's read, transactions its own earlier "
                   "read does not show")


def replica_executed(replica: ServerSnapshot, channel: ChannelSnapshot) -> GtidSet | None:
    """A replica's gtid_executed from its two reads, the variable and the channel's
    Executed_Gtid_Set: their union (it only grows between them); None when neither was read."""
    a, b = replica.gtid_executed, channel.executed_gtid_set
    if a is None:
        return b
    return a if b is None else a | b


@dataclass(frozen=True)
class _Pair:
    """Everything a pair check reads, resolved once -- the reconnect simulation included."""

    replica: ServerSnapshot
    channel: ChannelSnapshot
    source: ServerSnapshot | None
    fleet: FleetContext
    replica_name: str
    source_name: str | None
    tail: list[RelayLogEvent] | None = None
    outcome: ReconnectOutcome | None = None   # None: no source, no AUTO_POSITION or replica set unknown

    @property
    def channel_name(self) -> str:
        return self.channel.channel_name

    @property
    def executed(self) -> GtidSet | None:
        """The replica's gtid_executed: the union of both reads (it only grows between them)."""
        return replica_executed(self.replica, self.channel)

    @property
    def retrieved(self) -> GtidSet | None:
        return self.channel.retrieved_gtid_set

    @property
    def replica_set(self) -> GtidSet | None:
        """Retrieved_Gtid_Set ∪ gtid_executed (None when gtid_executed is unknown)."""
        if self.executed is None:
            return None
        return self.executed | (self.retrieved or GtidSet.EMPTY)

    # --- read order ------------------------------------------------------------------------

    @property
    def replica_read_at(self) -> _dt.datetime | None:
        """When the replica's sets were last read (:func:`replica_read_at`)."""
        return replica_read_at(self.replica, self.channel)

    @property
    def source_read_started_at(self) -> _dt.datetime | None:
        """When the source's read began: ``read_started_at``, else its ``read_at`` (end instant)."""
        return None if self.source is None else source_read_started_at(self.source)

    @property
    def read_order(self) -> tuple[bool | None, str]:
        """(held, why): :func:`read_order` of this pair."""
        return read_order(self.replica, self.channel, self.source)

    def order_label(self) -> str:
        held, _ = self.read_order
        return {True: "replica_first", False: "source_first_or_same", None: "unknown"}[held]

    def read_evidence(self) -> dict:
        """Both read instants and whether the planned order held: in every pair finding."""
        return {
            "replica_read_at": _iso(self.replica_read_at),
            "source_read_at": _iso(self.source.read_at) if self.source is not None else None,
            "source_read_started_at": _iso(self.source.read_started_at) if self.source is not None else None,
            "read_order": self.order_label(),
        }

    def finding(self, check_id: str, title: str, detail: str, **kw) -> Finding:
        kw["evidence"] = {**self.read_evidence(), **dict(kw.get("evidence") or {})}
        return _finding(check_id, self.replica_name, title, detail, source=self.source_name,
                        channel=self.channel_name, **kw)

    def order_dependent_finding(self, check_id: str, title: str, detail: str, **kw) -> Finding:
        """A positive whose soundness rests on "the replica was read before its source": at its
        default severity when the order held; otherwise an unconfirmed warning saying why."""
        held, why = self.read_order
        if held:
            return self.finding(check_id, title, detail, **kw)
        severity = Severity.WARNING if CHECKS[check_id].default_severity.rank >= Severity.WARNING.rank \
            else CHECKS[check_id].default_severity
        evidence = dict(kw.pop("evidence", None) or {})
        evidence["unconfirmed"] = why
        return self.finding(
            check_id, f"Unconfirmed: {title}",
            detail + f" UNCONFIRMED: {why}; this finding holds only if it repeats with the replica read first.",
            severity=severity, evidence=evidence, **kw)

    def base_evidence(self) -> dict:
        ev = {
            "replica_gtid_executed": _text(self.executed),
            "replica_retrieved_gtid_set": _text(self.retrieved),
            "replica_version": str(self.replica.version) if self.replica.version else None,
            **self.read_evidence(),
        }
        if self.source is not None:
            ev.update(
                source_gtid_executed=_text(self.source.gtid_executed),
                source_gtid_purged=_text(self.source.gtid_purged),
                source_version=str(self.source.version) if self.source.version else None,
                source_server_uuid=self.source.server_uuid,
            )
        if self.outcome is not None:
            ev.update(
                replica_announced_gtid_set=_text(self.outcome.announced),
                reconnect_outcome=str(self.outcome.kind),
                reconnect_rule=self.outcome.rule,
                source_version_assumed=self.outcome.version_assumed,
            )
        return ev


# --------------------------------------------------------------------------------------------
# Pair checks
# --------------------------------------------------------------------------------------------

def _last_retrieved_gtid(channel: ChannelSnapshot, relay_tail: Sequence[RelayLogEvent] | None) -> Gtid | None:
    """The last GTID the receiver wrote: the last Gtid event of the relay log tail, else
    LAST_QUEUED_TRANSACTION."""
    if relay_tail:
        for event in reversed(relay_tail):
            try:
                gtid = gtid_of_event(event)
            except SnapshotError:  # an unreadable Info: fall back to the channel's own report
                break
            if gtid is not None:
                return gtid
    return channel.last_queued_gtid


def pair_reconnect_outcome(replica: ServerSnapshot, channel: ChannelSnapshot, source: ServerSnapshot | None,
                           relay_tail: Sequence[RelayLogEvent] | None) -> ReconnectOutcome | None:
    """The one reconnect simulation of a pair (:func:`gtid_core.reconnect.reconnect_outcome`), or
    None when it does not apply: no source, a channel without AUTO_POSITION (the source's GTID
    checks do not run), or the replica's gtid_executed unknown."""
    if source is None or channel.auto_position is False:
        return None
    executed = replica.gtid_executed
    if channel.executed_gtid_set is not None:
        executed = channel.executed_gtid_set if executed is None else executed | channel.executed_gtid_set
    if executed is None:
        return None
    return reconnect_outcome(source, gtid_executed=executed, retrieved_gtid_set=channel.retrieved_gtid_set,
                             replica_version=replica.version,
                             last_retrieved_gtid=_last_retrieved_gtid(channel, relay_tail))


def check_replica_has_more_gtids(pair: _Pair) -> list[Finding]:
    """replica_has_more_gtids: the source would refuse this replica with
    ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER on its next AUTO_POSITION connect.

    Derived from the pair's one reconnect outcome (``pair.outcome``, step 1 of
    :func:`gtid_core.reconnect.simulate_auto_position_reconnect`): the GTIDs of the source's own
    server_uuid -- every tag of it on 8.3+, as a real 9.7.4 source refuses an unknown
    ``source_uuid:tag:N`` -- in the set the replica would announce (:func:`announced_gtid_set`,
    including the 5.6.15-5.7.5 last-retrieved-GTID rule), against the source's gtid_executed.
    Per release line (server source cited in gtid_core/versions.py and docs/checks.md): 5.6.23+
    ``mysql_binlog_send`` (sql/rpl_master.cc, ``is_subset_for_sid`` against gtid_executed) and
    5.7.6+ ``Binlog_sender::check_start_file`` (sql/rpl_binlog_sender.cc, against gtid_executed ∪
    gtid_owned). Sources before 5.6.23 (and 5.7.0-5.7.5) make no such check: nothing is reported
    here (errant_transactions still reports the extra GTIDs). No release line compares the whole set.

    Sound when the replica was read before its source, whose gtid_executed can only have grown:
    the offending set computed here is then at most the true one. When that order did not hold
    (or is unknown) the source may have executed those GTIDs between its read and the replica's,
    so the positive is an unconfirmed warning. Blind spots: the source's gtid_owned (in-flight
    transactions it would also count, 5.7.6+) is not read; a channel without AUTO_POSITION does
    not run this check on the server and is skipped here.
    """
    outcome = pair.outcome
    if outcome is None or outcome.kind is not ReconnectKind.REPLICA_HAS_MORE_GTIDS:
        return []
    offending = outcome.offending
    detail = (
        f"On its next connect with AUTO_POSITION, source {pair.source_name} will refuse replica "
        f"{pair.replica_name} with {ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER}: the replica has "
        f"{offending.count()} transaction(s) of the source's own server_uuid that the source does not "
        f"({_short(offending)}). Rule applied: {outcome.rule}. This usually means the source lost the end of "
        f"its binary log (crash with sync_binlog != 1) or the replica was written to directly."
    )
    return [pair.order_dependent_finding(
        "replica_has_more_gtids", f"{pair.source_name} would refuse {pair.replica_name}: replica has more GTIDs",
        detail, gtid_set=offending, evidence=pair.base_evidence(),
        remediation=CHECKS["replica_has_more_gtids"].remediation + "\n" + empty_transaction_sql(offending),
    )]


def check_source_purged_required_gtids(pair: _Pair) -> list[Finding]:
    """source_purged_required_gtids / silent_purged_gap: the replica lacks transactions the source
    no longer has in its binary logs.

    Derived from the pair's one reconnect outcome, steps 2 and 3 (``outcome.purge_verdict``,
    evaluated whatever step 1 says: the server stops at the first refusal, the audit reports
    both problems):

    * SOURCE_PURGED_REQUIRED -> source_purged_required_gtids: the 5.6.22+ / 5.7.6+ check
      (gtid_purged must be a subset of the announced set), or, on every version, the scan of
      ``find_first_log_not_in_gtid_set`` found no binary log whose Previous_gtids is a subset.
      The second is what refuses a replica behind an ordinary PURGE BINARY LOGS on a 5.6.21
      source: the oldest remaining file's Previous_gtids holds the purged GTIDs.
    * STREAMS_SKIPPING_PURGED -> silent_purged_gap: a source before 5.6.22 (or 5.7.0-5.7.5) whose
      scan DOES find a file to stream from although the replica lacks purged GTIDs -- after
      ``SET GLOBAL gtid_purged`` the first binary log's Previous_gtids is empty. The replica
      silently never receives them. With the binary-log list or a Previous_gtids unknown the
      outcome is UNDETERMINED and nothing is reported: refusal and silence cannot be told apart.

    Sound: purged GTIDs are in no binary log of the source, so a replica lacking them can never
    get them from it. Blind spot: with the planned order (replica read first), if the source
    purged, between the two reads, logs holding transactions the replica received in between,
    the finding is a false positive -- possible only for a replica lagging by the source's whole
    binary-log retention. A replica read after its source only makes the finding more certain.
    """
    outcome = pair.outcome
    if outcome is None:
        return []
    verdict = outcome.purge_verdict
    source = pair.source
    ev = pair.base_evidence()
    missing = outcome.missing if outcome.missing else None
    if verdict is ReconnectKind.SOURCE_PURGED_REQUIRED:
        if missing is not None and source.gtid_purged is not None and missing.is_subset(source.gtid_purged) \
                and (source.version is None or source.version.checks_purged_on_connect):
            detail = (
                f"Source {pair.source_name} has purged {missing.count()} transaction(s) that replica "
                f"{pair.replica_name} does not have ({_short(missing)}). On its next connect the source will "
                f"refuse it with {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS} (fatal error 1236 'purged required "
                f"binary logs'). The replica cannot catch up from this source."
            )
            title = f"{pair.source_name} purged transactions {pair.replica_name} lacks"
        else:
            detail = (
                f"No binary log of source {pair.source_name} starts at a point replica {pair.replica_name} has "
                f"reached (no Previous_gtids is a subset of the replica's set"
                + (f"; the replica lacks {missing.count()} GTID(s) of the oldest one's: {_short(missing)}"
                   if missing is not None else "")
                + f"). On its next connect the source will refuse it with {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS}."
            )
            title = f"{pair.source_name} has no binary log to serve {pair.replica_name}"
        return [pair.finding("source_purged_required_gtids", title, detail, gtid_set=missing, evidence=ev)]
    if verdict is ReconnectKind.STREAMS_SKIPPING_PURGED and missing is not None:
        detail = (
            f"Source {pair.source_name} runs MySQL {source.version}, older than 5.6.22, which does not check "
            f"gtid_purged when a replica connects, and its binary-log scan would stream from {outcome.start_file}. "
            f"Replica {pair.replica_name} lacks {missing.count()} transaction(s) the source purged or was told it "
            f"has (SET GLOBAL gtid_purged: {_short(missing)}). The source streams what it has and the replica "
            f"silently never receives them: replication looks healthy but the replica is missing data."
        )
        ev["start_file"] = outcome.start_file
        return [pair.finding("silent_purged_gap", f"{pair.replica_name} silently lacks transactions "
                             f"{pair.source_name} purged", detail, gtid_set=missing, evidence=ev)]
    return []


def check_replica_near_purge_horizon(pair: _Pair) -> list[Finding]:
    """replica_near_purge_horizon: the source would serve this replica from its oldest binary log,
    which holds transactions the replica still lacks; one more purge and the source refuses it.

    Derived from the pair's one reconnect outcome (:func:`simulate_auto_position_reconnect`: the checks of
    ``Binlog_sender::check_start_file``, then ``MYSQL_BIN_LOG::find_first_log_not_in_gtid_set``,
    which scans the binary logs newest to oldest and starts at the first whose Previous_gtids is a
    subset of the announced set). When that start file is the oldest one listed, no binary log
    before it is left: once it is purged, the next file's Previous_gtids contains the GTIDs the
    replica lacks from it, so no Previous_gtids is a subset any more and the source answers
    ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (and from 5.6.22 the grown gtid_purged already fails the
    earlier check). Verified on a live 9.7.4 pair (tests/core/test_checks_live.py): the finding,
    then one more PURGE BINARY LOGS, then START REPLICA is refused with 13114.

    What it proves, exactly: ``gtid_set`` is the GTIDs the replica lacks (source gtid_executed minus
    the announced set, :func:`announced_gtid_set`) that were written to the oldest file, i.e. that
    lie in the next file's Previous_gtids (a file's Previous_gtids is everything written before
    it). With a single binary log that file holds every GTID after its own Previous_gtids, which the
    replica has: the whole needed set. Both are exact for the two reads. ``binary_log_margin`` in
    the evidence is how many binary logs the source can still purge before the reconnect fails:
    the position of the start file in SHOW BINARY LOGS, 0 whenever this check fires.

    It fires only when the replica needs something from that file: a caught-up replica whose start
    file is the oldest only because the source has one binary log gives nothing. With a single
    binary log it also needs the receiver known to be stopped: that file is the active one (no
    purge can remove it before a rotation) and, with a running or unknown receiver, GTIDs the
    source committed between the two reads are in it, so lag cannot be told from a read in
    flight. It is silent when the reconnect is already refused or already skips purged GTIDs
    (replica_has_more_gtids, source_purged_required_gtids, silent_purged_gap report those), for a
    channel without AUTO_POSITION, and when the source's binary log list or any Previous_gtids
    scanned is unknown (None): the start file is then not known.

    Blind spots: the replica is read before its source, and the source may have rotated or purged
    more since its own read (then the truth is worse: the replica may already be refused, which
    the next run shows as source_purged_required_gtids); the other way round, with two binary logs
    and a running receiver, a rotation between the reads can put GTIDs committed in between in
    the oldest file (a transient finding that does not repeat). The retention policy
    (binlog_expire_logs_seconds, manual purges, backup tools) and the age of the file are not
    read, so "next purge" may be seconds or days away. A running receiver reading that file is
    reported too: a lag of the whole retention is a risk, whether or not the source keeps an
    open file from being purged while its dump thread reads it.
    """
    source, outcome = pair.source, pair.outcome
    if outcome is None:
        return []
    logs = source.binary_logs
    if source.gtid_executed is None or not logs:
        return []
    announced = outcome.announced
    if outcome.kind is not ReconnectKind.STREAMS or outcome.start_file is None:
        return []
    names = [log.log_name for log in logs]
    margin = names.index(outcome.start_file)
    if margin != 0:
        return []
    oldest = logs[0]
    needed = source.gtid_executed - announced
    if len(logs) > 1:
        following = logs[1]
        if following.previous_gtids is None:   # the scan passed it, so this does not happen; stay silent
            return []
        in_oldest = needed & following.previous_gtids
    else:
        following = None
        if pair.channel.receiver_running is not False:
            return []
        in_oldest = needed
    if not in_oldest:
        return []
    receiver = {True: "running", False: "stopped", None: "in an unknown state"}[pair.channel.receiver_running]
    where = (f"{oldest.log_name}, the oldest of its {len(logs)} binary logs" if following is not None
             else f"{oldest.log_name}, its only binary log (purgeable after the next rotation)")
    detail = (
        f"On its next connect, source {pair.source_name} would stream to replica {pair.replica_name} from "
        f"{where}: the replica (receiver {receiver}) still lacks {in_oldest.count()} transaction(s) written to "
        f"that file ({_short(in_oldest)}). Margin: {margin} binary logs can be purged before the reconnect "
        f"fails. Once {oldest.log_name} is purged (binlog_expire_logs_seconds, PURGE BINARY LOGS) the source "
        f"keeps no copy of them and refuses the replica with {ER_MASTER_HAS_PURGED_REQUIRED_GTIDS} (fatal "
        f"error 1236 / 13114 'purged required binary logs')."
        + (f" In all the replica lacks {needed.count()} transaction(s) of the source." if needed != in_oldest
           else "")
    )
    ev = pair.base_evidence()
    ev.update(
        start_file=oldest.log_name,
        start_file_previous_gtids=_text(oldest.previous_gtids),
        next_binary_log=following.log_name if following is not None else None,
        next_binary_log_previous_gtids=_text(following.previous_gtids) if following is not None else None,
        source_binary_log_count=len(logs),
        binary_log_margin=margin,
        replica_needs_gtid_set=_text(needed),
        receiver_running=pair.channel.receiver_running,
    )
    return [pair.finding("replica_near_purge_horizon",
                         f"{pair.replica_name} is one purge of {oldest.log_name} away from being refused by "
                         f"{pair.source_name}", detail, gtid_set=in_oldest, evidence=ev)]


def _anonymous_assigned_uuid(pair: _Pair) -> str | None:
    kind = pair.channel.assign_gtids_to_anonymous_transactions_type
    if kind == "LOCAL":
        return pair.replica.server_uuid
    if kind == "UUID":
        return pair.channel.assign_gtids_to_anonymous_transactions_value
    return None


def split_errant(replica: ServerSnapshot, errant: GtidSet) -> tuple[GtidSet | None, GtidSet | None]:
    """(salvageable, lost) parts of ``errant`` GTIDs of ``replica``.

    *Salvageable*: not in the replica's gtid_purged, so still in its binary logs (it can send them
    to a replica, or they can be inspected with mysqlbinlog and neutralised). *Lost*: in gtid_purged
    only; no binary log of this server holds them any more. Promoted, such a server refuses every
    replica lacking them with ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, and nobody can tell what they
    changed: Vitess' rule is that a server with lost errant GTIDs must never be promoted. Critical
    on every version. (None, None) when gtid_purged was not read.
    """
    if replica.gtid_purged is None:
        return None, None
    lost = errant & replica.gtid_purged
    return errant - lost, lost


def check_errant_transactions(pair: _Pair) -> list[Finding]:
    """errant_transactions: transactions the replica has (executed or retrieved) that its source
    never executed, each UUID attributed to the fleet server that owns it.

    Computes ``(gtid_executed ∪ Retrieved_Gtid_Set) - source.gtid_executed`` over every UUID and
    tag, the whole set (unlike the 5.7+ reconnect rule, which looks only at the source's own
    UUID). GTIDs the replica assigns to anonymous transactions (ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS
    = LOCAL: the replica's own uuid; = UUID: the configured one) and GTIDs it gets through its other
    channels (``FleetContext.other_channels_gtids``) are not errant.

    Sound when the replica was read before its source: the source's gtid_executed only grows, so
    every GTID reported was missing on the source at a moment when the replica already had it.
    When that order did not hold or is unknown (``pair.read_order``), a GTID the source executed
    between its read and the replica's later read looks errant: the finding is then an unconfirmed
    warning naming the reason. Blind spots:
    with ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS = LOCAL, local writes on the replica share its uuid
    with the assigned GTIDs and are not reported; a write on the replica between the two reads is
    seen at the next run; a source that ran RESET MASTER looks as if the replica were errant (see
    gtid_executed_regressed on the source).

    The evidence splits the errant GTIDs (:func:`split_errant`) into *salvageable* (still in the
    replica's binary logs) and *lost* (in its gtid_purged only): lost errant GTIDs make the
    replica unsafe to promote on every version (failover_candidate_unsafe says what promoting it
    would do).
    """
    if pair.source is None or pair.source.gtid_executed is None or pair.replica_set is None:
        return []
    errant = pair.replica_set - pair.source.gtid_executed
    if pair.fleet.other_channels_gtids is not None:
        errant = errant - pair.fleet.other_channels_gtids
    assigned_uuid = _anonymous_assigned_uuid(pair)
    excluded = None
    if assigned_uuid:
        excluded = errant.for_uuid(assigned_uuid)
        errant = errant - excluded
    if not errant:
        return []
    attribution = []
    for uuid in sorted(errant.uuids()):
        owner = pair.fleet.owner_of(uuid)
        if owner is None and uuid == pair.replica.server_uuid:
            owner = pair.replica_name
        part = errant.for_uuid(uuid)
        attribution.append(f"{uuid} ({owner or 'not in the fleet registry'}): {part.count()} GTID(s) {_short(part, 120)}")
    consequence = (
        "Replication keeps running (a source compares at most its own server_uuid on connect, and sources before "
        "5.6.23 / 5.7.6 compare nothing), so nothing fails until a failover promotes this replica or makes another "
        "server replicate from it; then these transactions are refused or replicated where they should not be."
    )
    detail = (
        f"Replica {pair.replica_name} has {errant.count()} transaction(s) that its source {pair.source_name} "
        f"never executed: " + "; ".join(attribution) + f". {consequence}"
    )
    ev = pair.base_evidence()
    ev["errant_attribution"] = "\n".join(attribution)
    if excluded:
        ev["excluded_anonymous_assigned"] = _text(excluded)
    salvageable, lost = split_errant(pair.replica, errant)
    ev["errant_salvageable"], ev["errant_lost"] = _text(salvageable), _text(lost)
    if lost:
        detail += (f" {lost.count()} of them are lost: in {pair.replica_name}'s gtid_purged only, no binary log "
                   f"holds them any more ({_short(lost, 120)}); promoted, {pair.replica_name} would refuse every "
                   "replica lacking them, and what they changed cannot be inspected: never promote it.")
    targets = ", ".join(x for x in [pair.source_name, "every other replica of the topology"] if x)
    remediation = (
        CHECKS["errant_transactions"].remediation
        + f"\nRun on {targets} (not on {pair.replica_name}):\n" + empty_transaction_sql(errant)
    )
    return [pair.order_dependent_finding(
        "errant_transactions", f"{pair.replica_name} has {errant.count()} errant transaction(s)",
        detail, gtid_set=errant, evidence=ev, remediation=remediation)]


@dataclass(frozen=True)
class _Dangling:
    """Where the GTID of a dangling transaction whose Gtid event is not in the relay tail comes
    from: ``gtid`` and ``source``, or ``candidates`` (one of them), or nothing (unknown);
    ``applied`` when the transaction is known to be in gtid_executed (nothing can be lost)."""

    gtid: Gtid | None = None
    source: str | None = None
    candidates: GtidSet | None = None
    applied: bool = False


def _dangling_gtid_elsewhere(pair: _Pair) -> _Dangling:
    """The GTID of the transaction the newest relay log ends inside when its Gtid event is not
    among the rows read (the collector kept a window smaller than the transaction). In order:

    1. QUEUEING_TRANSACTION (performance_schema.replication_connection_status, 8.0.2+). The
       receiver records it right after writing a Gtid-type event to the relay log
       (``queue_event``: ``mi->started_queueing(gtid, ...)``, sql/rpl_replica.cc) and clears it
       only when the group's last event is written (``finished_queueing()`` in
       ``MYSQL_BIN_LOG::after_write_to_relay_log``, sql/binlog.cc, which also adds the GTID to
       Retrieved_Gtid_Set) or when an AUTO_POSITION receiver (re)connects
       (``mi->clear_queueing_trx()`` after ``connected:`` in ``handle_slave_io``); stopping the
       receiver leaves it (observed on 9.7.4: it still names the transaction after STOP REPLICA
       IO_THREAD). So with the receiver stopped and the relay log ending inside a group, the last
       Gtid event the receiver wrote -- the one that opened that group -- is QUEUEING_TRANSACTION.
       A server restart empties it.
    2. The applier's position, 5.7.6+ (``applier_event_gtid``: the Gtid event at
       Relay_Log_File:Relay_Log_Pos, a group start, read by the collector when the newest relay
       log is the applier's). Its GTID g is the dangling one when g is in neither
       gtid_executed nor Retrieved_Gtid_Set and AUTO_POSITION is on: from 5.7.6 every complete
       group the receiver wrote is in Retrieved_Gtid_Set (added by ``after_write_to_relay_log``
       as above; at startup ``init_gtid_sets`` re-reads the relay logs through the same
       boundary parser), so g's group is incomplete; an incomplete group is followed by others
       only when the receiver resumed without re-fetching it, and an AUTO_POSITION receiver
       announces neither set, so the source sends g again (complete, hence in
       Retrieved_Gtid_Set: contradiction). On a multi-threaded applier Relay_Log_Pos is the
       checkpoint, whose group may already be applied: then g is in gtid_executed and nothing
       is concluded.
    3. Before 5.7.6: Retrieved_Gtid_Set minus gtid_executed. The receiver added the dangling
       GTID to Retrieved_Gtid_Set when its Gtid event arrived (seed 002), so it is in that
       difference unless it is in gtid_executed (then nothing can be lost): an empty difference
       means applied, one GTID is the dangling one, several leave it one of them.

    Anything else: unknown, and the finding says so.
    """
    ch, version = pair.channel, pair.replica.version
    executed, retrieved = pair.executed, pair.retrieved
    try:
        queueing = ch.queueing_gtid
    except GtidParseError:
        queueing = None
    if queueing is not None:
        return _Dangling(queueing, "QUEUEING_TRANSACTION")
    if (version is not None and version.has_boundary_parser and ch.applier_event_type is not None
            and is_gtid_type(ch.applier_event_type)
            and ch.relay_log_file == ch.relay_tail_file and ch.auto_position is True
            and executed is not None and retrieved is not None):
        try:
            gtid = ch.applier_gtid
        except GtidParseError:
            gtid = None
        if gtid is not None and gtid not in executed and gtid not in retrieved:
            return _Dangling(gtid, f"the applier's position ({ch.relay_log_file}:{ch.relay_log_pos})")
    if version is not None and not version.has_boundary_parser and retrieved is not None and executed is not None:
        pending = retrieved - executed
        if not pending:
            return _Dangling(applied=True)
        if pending.count() == 1:
            (uuid, tag, gno, _), = list(pending)
            return _Dangling(Gtid(uuid, tag, gno), "Retrieved_Gtid_Set minus gtid_executed")
        return _Dangling(candidates=pending)
    return _Dangling()


def check_incomplete_relay_log_tail(pair: _Pair) -> list[Finding]:
    """incomplete_relay_log_tail: the newest relay log ends inside a transaction while the
    receiver is stopped.

    What it needs: the END of the NEWEST relay log of the channel -- rows of ``SHOW RELAYLOG
    EVENTS IN <newest file>`` up to that file's end, starting anywhere. The channel snapshot
    must say which file the rows cover (``relay_tail_file``; every row must be from it) and that
    they reach its end (``relay_tail_truncated`` is False). Anything else is "unknown" and
    gives nothing: a capped tail that ends inside a transaction only shows where the cap fell,
    and a tail read from the applier's position in an older file says nothing about the newest
    one.

    Where the parser starts (:func:`gtid_core.relay_log.window_start`): at the first event that
    opens a group (Gtid-type, BEGIN) in state NONE; when the rows hold none, they lie inside a
    group that began before them -- a transaction larger than the rows the collector keeps
    (``relay_tail_first_event`` events were dropped before them), whose Gtid event was dropped
    with its head. That group is DML (state DML) unless the rows could all belong to a DDL
    group, which the rows cannot tell (unknown: nothing). So the size of the transaction does
    not matter: the end state is decided from the rows that end the file.

    The dangling GTID: from its Gtid event when it is among the rows; else from
    QUEUEING_TRANSACTION (8.0.2+), the applier's position (5.7.6+) or Retrieved_Gtid_Set minus
    gtid_executed (before 5.7.6), under the conditions :func:`_dangling_gtid_elsewhere` proves
    sound; else the finding still fires and says the GTID is unknown.

    What it cannot see: which relay log is the newest (the collector finds it; SHOW REPLICA STATUS
    names only the applier's file), events the receiver writes after the read, and a dangling
    anonymous transaction's identity (it has no GTID).

    A running (or unknown) receiver gives nothing, on every version and before any other test: the
    read caught a transaction in flight, which is what a delayed (SOURCE_DELAY), slow, restarted or
    busy replica shows all the time. Only then are the GTID sets consulted. Runs the server's
    Transaction_boundary_parser (:func:`parse_relay_log`). Severity follows the replica's version,
    as the seeds document:

    * before 5.6.15: critical -- the receiver added the GTID to Retrieved_Gtid_Set when the Gtid
      event arrived; the replica announces it on reconnect and the source never sends it again.
    * 5.6.15 .. 5.7.5: warning -- the replica leaves its last retrieved GTID out of the announced set
      when it is not in gtid_executed, so it is fetched again; Bug #72392 breaks that after a RESET.
    * 5.7.6+: warning (the group is re-fetched and truncated at restart -- observed on 9.7.4 --
      but the applier is stuck behind it); critical if the dangling GTID is nonetheless in
      Retrieved_Gtid_Set (announced on reconnect, never re-fetched).

    An unreadable tail gives an info finding (whether it ends inside a transaction is unknown).
    """
    relay_tail, ch = pair.tail, pair.channel
    if not relay_tail:
        return []
    if ch.receiver_running is not False:
        return []  # in flight (delayed, slow, busy, just restarted) or unknown: never a positive
    if ch.relay_tail_truncated is not False or not ch.relay_tail_file:
        return []  # not known to reach the end of the newest relay log
    if any(event.log_name != ch.relay_tail_file for event in relay_tail):
        return []  # rows from another file: not the newest relay log's last transaction
    first, entry = window_start(relay_tail)
    if entry is None:
        return []  # where the parser stands before the rows cannot be told: unknown
    try:
        result = parse_relay_log(relay_tail[first:], initial_state=entry)
    except SnapshotError as exc:
        return [pair.finding("incomplete_relay_log_tail", f"Relay log tail of {pair.replica_name} is unreadable",
                             f"The relay log tail of replica {pair.replica_name} (channel {ch.label}) "
                             f"could not be parsed, so whether it ends inside a transaction is unknown: {exc}",
                             severity=Severity.INFO, evidence={"error": str(exc)})]
    if result.state is ParserState.ERROR:
        last = result.last_event
        where = f"{last.log_name}:{last.pos} {last.event_type}" if last else "?"
        return [pair.finding("incomplete_relay_log_tail", f"Relay log tail of {pair.replica_name} is not parseable",
                             f"The transaction boundary parser stopped in state ERROR at {where} in the relay log of "
                             f"replica {pair.replica_name}: an event it does not know. Whether the log ends inside a "
                             "transaction is unknown.", severity=Severity.INFO, evidence={"last_event": where})]
    if not result.ends_inside_transaction:
        return []
    opened = result.dangling_start
    found = _Dangling(result.dangling_gtid, "its Gtid event in the relay log")
    if opened is None or not is_gtid_event(opened):  # the group's Gtid event is not among the rows
        found = _dangling_gtid_elsewhere(pair)
        if found.applied:
            return []  # before 5.7.6 the dangling GTID is in Retrieved_Gtid_Set, all of which is applied
    version = pair.replica.version
    gtid = found.gtid
    retrieved = pair.retrieved
    executed = pair.executed
    if gtid is not None and executed is not None and gtid in executed:
        return []  # the transaction is applied; nothing can be lost
    in_retrieved = gtid is not None and retrieved is not None and gtid in retrieved
    if version is not None and not version.has_boundary_parser:
        if version.leaves_out_last_retrieved_gtid:
            severity = Severity.WARNING
            why = (f"MySQL {version} leaves its last retrieved GTID out of the set it announces when that GTID is "
                   "not in gtid_executed, so the transaction is fetched again on reconnect -- unless gtid_executed "
                   "was reset (Bug #72392).")
        else:
            severity = Severity.CRITICAL
            why = (f"MySQL {version} added the GTID to Retrieved_Gtid_Set when its Gtid event arrived: the replica "
                   "announces it on reconnect and the source never sends the rest of the transaction. It will be "
                   "silently missing.")
    elif in_retrieved:
        severity = Severity.CRITICAL
        why = ("The dangling GTID is in Retrieved_Gtid_Set although its transaction is incomplete: the replica "
               "announces it on reconnect and will not receive the rest.")
    else:
        severity = Severity.WARNING
        why = ("The receiver is stopped in the middle of the transaction; the boundary parser kept the GTID out "
               "of Retrieved_Gtid_Set, so it is fetched again when the receiver restarts, but the applier "
               "waits until then, and the source must still have it.")
    dropped = ch.relay_tail_first_event
    where = f"{opened.log_name}:{opened.pos}" if opened is not None else None
    if opened is not None:
        starts = f"that starts at {where}"
    elif ch.relay_tail_head_dropped is False:
        starts = "that began before the file's first event (the relay log was rotated inside it)"
    else:
        starts = (f"that began before the {len(relay_tail)} events read (the collector dropped "
                  f"{dropped if dropped is not None else 'the'} events before them, the transaction's Gtid event "
                  "among them)")
    if gtid is not None:
        named = f" with GTID {gtid} (from {found.source})"
    elif opened is not None and is_gtid_event(opened):
        named = " without a GTID (anonymous)"
    elif found.candidates:
        named = (f" whose GTID is unknown: one of the {found.candidates.count()} retrieved but unapplied GTIDs "
                 f"{_short(found.candidates, 120)}")
    else:
        named = (" whose GTID is unknown (no Gtid event among the rows, and neither QUEUEING_TRANSACTION nor the "
                 "applier's position names it)")
    detail = (
        f"The newest relay log ({ch.relay_tail_file}) of replica {pair.replica_name} (channel {ch.label}) ends "
        f"inside a transaction (parser state {result.state}) {starts}{named}, and the receiver is stopped. {why}"
    )
    ev = pair.base_evidence()
    ev.update(parser_state=str(result.state), dangling_gtid=str(gtid) if gtid else None,
              dangling_gtid_from=found.source if gtid else None,
              dangling_gtid_candidates=_text(found.candidates) if found.candidates else None,
              dangling_start=where, receiver_running=False, relay_tail_file=ch.relay_tail_file,
              relay_tail_truncated=False, relay_tail_rows=len(relay_tail), relay_tail_events_dropped=dropped,
              queueing_transaction=ch.queueing_transaction or None,
              last_event=f"{result.last_event.log_name}:{result.last_event.pos} {result.last_event.event_type}"
              if result.last_event else None)
    return [pair.finding("incomplete_relay_log_tail",
                         f"Relay log of {pair.replica_name} ends inside a transaction", detail,
                         severity=severity, gtid_set=gtid.as_set() if gtid else None, evidence=ev)]


def check_replica_gtid_history_lost(pair: _Pair) -> list[Finding]:
    """replica_gtid_history_lost: Retrieved_Gtid_Set ⊄ gtid_executed although the applier has applied
    everything the receiver wrote.

    On a healthy replica every retrieved GTID ends in gtid_executed once the applier has caught up
    (a skipped or filtered transaction is committed empty with its GTID). If retrieved GTIDs are
    missing from gtid_executed with an idle applier, gtid_executed lost history: RESET MASTER /
    RESET BINARY LOGS AND GTIDS on the replica (observed on 9.7: Retrieved_Gtid_Set and the relay
    logs are kept, replication goes on, nothing errors; the source re-sends the transactions once
    the relay logs are discarded and the applier fails on them, e.g. 1007 for a CREATE DATABASE).
    Uses Retrieved_Gtid_Set, Executed_Gtid_Set and the positions of one SHOW REPLICA STATUS row.
    "Caught up" means Exec_Source_Log_Pos = Read_Source_Log_Pos in the same file (or "has read all
    relay log"); when that is unknown the check stays silent (a lagging applier explains the
    difference). Verified on 9.7.4: an idle healthy replica shows equal positions and "Replica has
    read all relay log"; a delayed (SOURCE_DELAY) or stopped applier shows Exec < Read. With a
    parallel applier Exec_Source_Log_Pos is the low-water mark, so it never claims too much.
    A RESET followed by SET GLOBAL gtid_purged covering the retrieved set is not a loss.
    Blind spot / possible transient false positive: the server fills Executed_Gtid_Set before it
    reads the channel's fields, so a transaction received *and* applied within that one statement
    shows as retrieved but not executed; such a finding does not repeat at the next run.

    Critical on 5.6.15-5.7.5 when the last retrieved GTID is among the lost ones (Bug #72392: it is
    left out of the announced set, fetched again, and applied twice); warning otherwise (the
    transactions are sent again whenever the relay logs are discarded, e.g. relay_log_recovery
    or RESET REPLICA).
    """
    retrieved = pair.retrieved
    executed = pair.channel.executed_gtid_set if pair.channel.executed_gtid_set is not None else pair.replica.gtid_executed
    if retrieved is None or executed is None:
        return []
    lost = retrieved - executed
    if not lost or pair.channel.applier_caught_up is not True:
        return []
    version = pair.replica.version
    last = _last_retrieved_gtid(pair.channel, pair.tail)
    severity = Severity.WARNING
    consequence = (
        "The data contains these transactions but gtid_executed no longer says so: once the relay logs are "
        "discarded (RESET REPLICA, relay_log_recovery, a new source) the transactions are fetched and applied "
        "again, and after a failover this server hands out a wrong history."
    )
    if version is not None and version.bug_72392_exposed and last is not None and last in lost:
        severity = Severity.CRITICAL
        consequence = (
            f"MySQL {version} is exposed to Bug #72392: on the next reconnect it leaves the last retrieved GTID "
            f"{last} out of the set it announces (it is not in gtid_executed), the source sends it again and the "
            "replica applies it a second time."
        )
    detail = (
        f"Replica {pair.replica_name} received and applied {lost.count()} transaction(s) that are not in its "
        f"gtid_executed ({_short(lost)}), and its applier has nothing left to apply: its GTID history was reset. "
        + consequence
    )
    ev = pair.base_evidence()
    ev["replica_gtid_executed"] = _text(executed)
    ev["last_retrieved_gtid"] = str(last) if last else None
    remediation = (
        f"After checking that the data contains them, restore the history on {pair.replica_name}: "
        f"SET GLOBAL gtid_purged = '+{lost.to_text(multiline=False)}'; (8.0+; on 5.6/5.7 gtid_purged can only be "
        "set while gtid_executed is empty: RESET MASTER, then set the whole set)."
    )
    return [pair.finding("replica_gtid_history_lost",
                         f"{pair.replica_name} lost GTID history of {lost.count()} applied transaction(s)",
                         detail, severity=severity, gtid_set=lost, evidence=ev, remediation=remediation)]


def check_replica_gtid_holes(pair: _Pair) -> list[Finding]:
    """replica_gtid_holes: for a UUID (and tag), the source has GTIDs below the replica's highest
    GTID of that UUID that the replica neither executed nor retrieved.

    A replica receives each UUID's transactions in order, so a gap below its highest number means
    transactions were skipped (a gtid_purged set by hand that left ranges out, an empty transaction
    committed by hand for a real one, a parallel applier stopped out of order -- in-flight gaps are
    covered by Retrieved_Gtid_Set and are not reported). Sound: both sides only grow; the source's
    later read adds GTIDs mostly above the replica's highest, which are not counted. Blind spot:
    a gap the source itself has is invisible; the GTIDs above the replica's highest number are
    ordinary lag.
    """
    source = pair.source
    if source is None or source.gtid_executed is None or pair.replica_set is None:
        return []
    replica_set = pair.replica_set
    keys = {(uuid, tag) for uuid, tag, _, _ in source.gtid_executed}
    intervals = []
    for uuid, tag in keys:
        top = replica_set.max_gno(uuid, tag)
        if top is None:
            continue
        intervals.append((uuid, tag, 1, top))
    if not intervals:
        return []
    below = GtidSet.from_intervals(intervals)
    holes = (source.gtid_executed & below) - replica_set
    if not holes:
        return []
    purged = source.gtid_purged
    unrecoverable = holes & purged if purged is not None else None
    detail = (
        f"Replica {pair.replica_name} lacks {holes.count()} transaction(s) of its source {pair.source_name} below "
        f"GTIDs it already has ({_short(holes)}): they were skipped, not merely not yet received."
        + (f" {unrecoverable.count()} of them are purged on the source and cannot be fetched again."
           if unrecoverable else " The source still has them; a reconnect with AUTO_POSITION fetches them.")
    )
    ev = pair.base_evidence()
    return [pair.finding("replica_gtid_holes", f"{pair.replica_name} has holes in {pair.source_name}'s GTIDs",
                         detail, gtid_set=holes, evidence=ev)]


_PURGED_RE = re.compile(r"purged (the )?(required )?binary logs|has purged binary logs", re.IGNORECASE)
_MORE_GTIDS_RE = re.compile(r"(slave|replica) has more GTIDs than the (master|source)", re.IGNORECASE)


def _error_meaning(errno: int | None, message: str | None) -> str | None:
    text = message or ""
    if _PURGED_RE.search(text):
        return "the source purged binary logs holding transactions this replica still needs"
    if _MORE_GTIDS_RE.search(text):
        return "the replica has GTIDs the source does not (errant transactions or a source that lost binary logs)"
    if errno in (1236, 13114):
        return "the source's dump thread reported a fatal error reading its binary log"
    return None


def check_replication_threads(pair: _Pair) -> list[Finding]:
    """replication_receiver_error, replication_applier_error / replication_stopped: the receiver or
    applier thread failed or is stopped. The two errors are two check ids, so that their finding
    keys (sha1 of check_id|server|source|channel) differ and neither hides the other.

    Reads what the replica itself reports (Last_IO_Errno/Error, Last_SQL_Errno/Error, the
    performance_schema receiver error, Replica_IO_Running / Replica_SQL_Running) and names the
    meaning of known errors on their text, old (master/slave) and new (source/replica) wording
    alike (1236 / 13114 "purged required binary logs", "more GTIDs than the source"). Nothing is
    inferred; an error cleared by a restart before the read is not seen.
    """
    ch = pair.channel
    findings: list[Finding] = []
    errors = []
    io_errno = ch.last_io_errno or ch.receiver_last_error_number
    io_error = ch.last_io_error or ch.receiver_last_error_message
    if io_errno:
        errors.append(("replication_receiver_error", "receiver (IO) thread", io_errno, io_error,
                       ch.last_io_error_timestamp))
    if ch.last_sql_errno:
        errors.append(("replication_applier_error", "applier (SQL) thread", ch.last_sql_errno, ch.last_sql_error,
                       ch.last_sql_error_timestamp))
    for check_id, thread, errno, message, when in errors:
        meaning = _error_meaning(errno, message)
        detail = (
            f"The {thread} of replica {pair.replica_name} (channel {ch.label}) reports error {errno}"
            + (f" at {when}" if when else "") + f": {message!r}."
            + (f" Meaning: {meaning}." if meaning else "")
        )
        ev = pair.base_evidence()
        ev.update(thread=thread, errno=errno, error=message, io_running=ch.io_running, sql_running=ch.sql_running)
        findings.append(pair.finding(check_id, f"{pair.replica_name}: {thread} error {errno}", detail,
                                     evidence=ev))
    stopped = []
    if ch.io_running == "NO" and not io_errno:
        stopped.append("receiver (IO) thread")
    if ch.sql_running == "NO" and not ch.last_sql_errno:
        stopped.append("applier (SQL) thread")
    if stopped:
        detail = (f"The {' and '.join(stopped)} of replica {pair.replica_name} (channel {ch.label}) "
                  f"{'is' if len(stopped) == 1 else 'are'} stopped and no error is recorded.")
        ev = pair.base_evidence()
        ev.update(io_running=ch.io_running, sql_running=ch.sql_running)
        findings.append(pair.finding("replication_stopped", f"{pair.replica_name}: replication stopped", detail,
                                     evidence=ev))
    return findings


def check_channel_config(pair: _Pair) -> list[Finding]:
    """config_auto_position_off, config_relay_log_recovery_off, config_parallel_applier_without_commit_order:
    settings of this replica channel that make silent loss possible. Read from the replica's own
    variables; they say what the server would do after a crash or a repointing, not that it happened.
    """
    r, ch = pair.replica, pair.channel
    out: list[Finding] = []
    if ch.auto_position is False:
        out.append(pair.finding(
            "config_auto_position_off", f"{pair.replica_name}: channel {ch.label} does not use AUTO_POSITION",
            f"Channel {ch.label} of {pair.replica_name} replicates by file and position (Auto_Position = 0): the "
            "source's GTID checks on connect do not run, and a repointing after failover relies on hand-picked "
            "coordinates that can skip or repeat transactions.",
            evidence={"auto_position": False}))
    file_repos = "FILE" in (r.relay_log_info_repository, r.master_info_repository)
    if r.relay_log_recovery is False and file_repos:
        out.append(pair.finding(
            "config_relay_log_recovery_off", f"{pair.replica_name}: relay_log_recovery OFF with FILE repositories",
            f"{pair.replica_name} has relay_log_recovery = OFF and relay_log_info_repository = "
            f"{r.relay_log_info_repository}, master_info_repository = {r.master_info_repository}: after a crash "
            "it trusts relay logs and position files that may be behind or ahead of the data.",
            evidence={"relay_log_recovery": False, "relay_log_info_repository": r.relay_log_info_repository,
                      "master_info_repository": r.master_info_repository}))
    if (r.replica_parallel_workers or 0) > 1 and r.replica_preserve_commit_order is False \
            and r.replica_parallel_type != "DATABASE":
        out.append(pair.finding(
            "config_parallel_applier_without_commit_order",
            f"{pair.replica_name}: parallel applier without commit order",
            f"{pair.replica_name} applies with {r.replica_parallel_workers} workers and "
            "replica_preserve_commit_order = OFF: it commits out of the source's order, so gtid_executed has "
            "gaps while it runs and a crash or STOP can leave holes.",
            evidence={"replica_parallel_workers": r.replica_parallel_workers,
                      "replica_preserve_commit_order": False}))
    elif (r.replica_parallel_workers or 0) > 1 and r.replica_preserve_commit_order is False:
        out.append(pair.finding(
            "config_parallel_applier_without_commit_order",
            f"{pair.replica_name}: parallel applier without commit order",
            f"{pair.replica_name} applies with {r.replica_parallel_workers} workers per database "
            "(replica_parallel_type = DATABASE) without replica_preserve_commit_order: transactions of "
            "different databases commit out of order.",
            evidence={"replica_parallel_workers": r.replica_parallel_workers,
                      "replica_parallel_type": r.replica_parallel_type, "replica_preserve_commit_order": False}))
    return out


def run_pair_checks(
    replica: ServerSnapshot,
    channel: ChannelSnapshot,
    source: ServerSnapshot | None,
    relay_tail: Sequence[RelayLogEvent] | None,
    fleet: FleetContext,
) -> list[Finding]:
    """Every check of one replication channel. ``source`` None (unresolved) skips the checks
    that compare with it; the audit job reports the unresolved source itself. The reconnect
    simulation is computed once here (:func:`pair_reconnect_outcome`) and every reconnect check
    reads it. ``relay_tail``: rows of the newest relay log (see check_incomplete_relay_log_tail),
    None when not read."""
    tail = list(relay_tail) if relay_tail is not None else None
    pair = _Pair(
        replica=replica,
        channel=channel,
        source=source,
        fleet=fleet,
        replica_name=fleet.replica_name or replica.label,
        source_name=(fleet.source_name or source.label) if source is not None else fleet.source_name,
        tail=tail,
        outcome=pair_reconnect_outcome(replica, channel, source, tail),
    )
    findings: list[Finding] = []
    findings += check_replica_has_more_gtids(pair)
    findings += check_source_purged_required_gtids(pair)
    findings += check_replica_near_purge_horizon(pair)
    findings += check_errant_transactions(pair)
    findings += check_replica_gtid_holes(pair)
    findings += check_incomplete_relay_log_tail(pair)
    findings += check_replica_gtid_history_lost(pair)
    findings += check_replication_threads(pair)
    findings += check_channel_config(pair)
    return findings


# --------------------------------------------------------------------------------------------
# Server checks
# --------------------------------------------------------------------------------------------

def check_server_config(server: ServerSnapshot) -> list[Finding]:
    """gtid_mode_off, config_enforce_gtid_consistency_off, config_sync_binlog,
    config_innodb_flush_log_at_trx_commit: settings that make silent loss or divergence possible.
    Read from the server's variables; unknown values (None) produce nothing."""
    name = server.label
    out: list[Finding] = []
    if server.gtid_mode is not None and server.gtid_mode != "ON":
        out.append(_finding("gtid_mode_off", name, f"{name}: gtid_mode = {server.gtid_mode}",
                            f"{name} runs with gtid_mode = {server.gtid_mode}: transactions without GTIDs escape "
                            "every GTID check, and AUTO_POSITION cannot be used.",
                            evidence={"gtid_mode": server.gtid_mode}))
    if server.enforce_gtid_consistency is not None and server.enforce_gtid_consistency != "ON":
        out.append(_finding("config_enforce_gtid_consistency_off", name,
                            f"{name}: enforce_gtid_consistency = {server.enforce_gtid_consistency}",
                            f"{name} runs with enforce_gtid_consistency = {server.enforce_gtid_consistency}: "
                            "statements that cannot be logged safely with GTIDs are allowed.",
                            evidence={"enforce_gtid_consistency": server.enforce_gtid_consistency}))
    if server.log_bin is not False and server.sync_binlog is not None and server.sync_binlog != 1:
        out.append(_finding("config_sync_binlog", name, f"{name}: sync_binlog = {server.sync_binlog}",
                            f"{name} runs with sync_binlog = {server.sync_binlog}: after an OS crash or power "
                            "loss its binary log can lose transactions that replicas already received; they will "
                            "then be refused with ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER.",
                            evidence={"sync_binlog": server.sync_binlog}))
    if server.innodb_flush_log_at_trx_commit is not None and server.innodb_flush_log_at_trx_commit != 1:
        out.append(_finding("config_innodb_flush_log_at_trx_commit", name,
                            f"{name}: innodb_flush_log_at_trx_commit = {server.innodb_flush_log_at_trx_commit}",
                            f"{name} runs with innodb_flush_log_at_trx_commit = "
                            f"{server.innodb_flush_log_at_trx_commit}: a crash can lose committed transactions "
                            "whose GTIDs are already in binary logs or on replicas.",
                            evidence={"innodb_flush_log_at_trx_commit": server.innodb_flush_log_at_trx_commit}))
    return out


def _same_server(server: ServerSnapshot, previous: ServerSnapshot) -> bool:
    return (server.server_uuid is not None and previous.server_uuid is not None
            and server.server_uuid == previous.server_uuid)


def check_gtid_executed_regressed(server: ServerSnapshot, previous: ServerSnapshot) -> list[Finding]:
    """gtid_executed_regressed: GTIDs in this server's gtid_executed at the previous run are gone.

    gtid_executed only grows on a running server; only RESET MASTER / RESET BINARY LOGS AND GTIDS,
    a restore from an older backup or a lost binary log (with the mysql.gtid_executed table behind)
    shrink it. Sound: both values are the server's own, read a run apart. Compared only when the
    server_uuid is unchanged (a new uuid is a different server). Blind spot: a RESET followed by
    SET GLOBAL gtid_purged to a superset between two runs does not regress (see gtid_purged_jumped).
    """
    if previous.gtid_executed is None or server.gtid_executed is None or not _same_server(server, previous):
        return []
    lost = previous.gtid_executed - server.gtid_executed
    if not lost:
        return []
    name = server.label
    return [_finding(
        "gtid_executed_regressed", name, f"{name}: gtid_executed lost {lost.count()} GTID(s)",
        f"{name}'s gtid_executed no longer contains {lost.count()} GTID(s) it had at the previous run "
        f"({_short(lost)}): its GTID history was reset or restored from an older point. Its replicas now look "
        "as if they had errant transactions, and new transactions may reuse GTIDs replicas already have.",
        gtid_set=lost,
        evidence={"previous_gtid_executed": _text(previous.gtid_executed),
                  "gtid_executed": _text(server.gtid_executed)})]


def _binlog_seq(name: str) -> int | None:
    match = re.search(r"\.(\d+)\Z", name)
    return int(match.group(1)) if match else None


def check_gtid_purged_jumped(server: ServerSnapshot, previous: ServerSnapshot) -> list[Finding]:
    """gtid_purged_jumped: gtid_purged gained GTIDs this server had not executed at the previous
    run, and purging binary logs cannot explain it.

    Normal purging removes the oldest binary logs; a GTID executed after the previous run can only
    become purged if every binary log of the previous run was purged too. So the jump is reported
    when ``gtid_purged - previous.gtid_executed`` is non-empty AND either the previous run's newest
    binary log still exists, the binary-log numbering went back (RESET), or the previous
    gtid_executed is not entirely purged. That is the signature of SET GLOBAL gtid_purged (after
    a RESET or a restore).

    Which GTIDs can be judged depends on where the server writes what it applies:

    * ``log_bin`` ON and ``log_replica_updates`` ON: every GTID it executes goes to its binary
      log first, so the whole jump is judged.
    * ``log_bin`` ON and ``log_replica_updates`` OFF or unknown: the transactions it *applies* as a
      replica are never written to its binary log and go straight into gtid_purged (observed on
      9.7.4: gtid_purged equals gtid_executed, and Previous_gtids stay empty even after FLUSH
      BINARY LOGS). Only the GTIDs of its own server_uuid (its own writes, which are logged) can
      still be judged; every other uuid's growth is ordinary replication.
    * ``log_bin`` OFF or unknown: nothing is logged, gtid_purged follows gtid_executed; nothing is
      judged.

    Blind spots: when binary logs are unknown and the whole previous history was purged, a very
    short retention looks the same and nothing is reported; on a replica without
    log_replica_updates, a SET gtid_purged of other servers' GTIDs is invisible; a replica without
    log_replica_updates whose channel assigns its OWN uuid to anonymous transactions
    (ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS = LOCAL, read per channel, not here) applies unlogged
    transactions under its own uuid -- a false positive this server check cannot rule out.
    """
    if (previous.gtid_executed is None or server.gtid_purged is None or previous.gtid_purged is None
            or not _same_server(server, previous) or server.log_bin is not True):
        return []
    jumped = (server.gtid_purged - previous.gtid_purged) - previous.gtid_executed
    scope = "every uuid"
    if server.log_replica_updates is not True:
        jumped = jumped.for_uuid(server.server_uuid)
        scope = f"own server_uuid {server.server_uuid} only (log_replica_updates is not ON)"
    if not jumped:
        return []
    own_previous = (previous.gtid_executed if server.log_replica_updates is True
                    else previous.gtid_executed.for_uuid(server.server_uuid))
    explained_by_purge = own_previous.is_subset(server.gtid_purged)
    reason = "the previous run's gtid_executed is not all purged"
    if explained_by_purge and previous.binary_logs and server.binary_logs:
        prev_newest = previous.binary_logs[-1].log_name
        names = {b.log_name for b in server.binary_logs}
        prev_seq = _binlog_seq(prev_newest)
        cur_seq = _binlog_seq(server.binary_logs[-1].log_name)
        if prev_newest in names:
            explained_by_purge, reason = False, f"binary log {prev_newest} of the previous run still exists"
        elif prev_seq is not None and cur_seq is not None and cur_seq < prev_seq:
            explained_by_purge, reason = False, "the binary-log numbering went back (RESET)"
    if explained_by_purge:
        return []
    name = server.label
    return [_finding(
        "gtid_purged_jumped", name, f"{name}: gtid_purged jumped by {jumped.count()} GTID(s)",
        f"{name}'s gtid_purged now includes {jumped.count()} GTID(s) that it had not executed at the previous run "
        f"({_short(jumped)}), and purging binary logs cannot explain it ({reason}): gtid_purged was set by hand "
        "(SET GLOBAL gtid_purged after a RESET or a restore). Replicas lacking these transactions cannot get them "
        "from this server (refused since 5.6.22, silently skipped before).",
        gtid_set=jumped,
        evidence={"previous_gtid_executed": _text(previous.gtid_executed),
                  "previous_gtid_purged": _text(previous.gtid_purged),
                  "gtid_purged": _text(server.gtid_purged),
                  "log_bin": server.log_bin, "log_replica_updates": server.log_replica_updates,
                  "judged": scope, "reason": reason})]


def check_source_uuid_went_back(server: ServerSnapshot, previous: ServerSnapshot) -> list[Finding]:
    """source_uuid_went_back: the highest gno of the server's own server_uuid -- untagged, or of
    any tag it used (8.3+) -- fell below the previous run's.

    The server numbers a new transaction after the highest gno of its own uuid in gtid_executed,
    per tag for ``SET gtid_next = 'AUTOMATIC:tag'``; if that fell back, new transactions reuse
    GTIDs that replicas (and the previous history) already have, and replicas silently skip them
    as already executed. Sound: both numbers are the server's own. Compared only with an unchanged
    server_uuid. Blind spot: a tag first used and lost between two runs.
    """
    if (previous.gtid_executed is None or server.gtid_executed is None or not _same_server(server, previous)):
        return []
    uuid = server.server_uuid
    tags = sorted({tag for u, tag, _, _ in previous.gtid_executed if u == uuid}, key=lambda t: (t is not None, t or ""))
    regressions = []
    for tag in tags:
        before = previous.gtid_executed.max_gno(uuid, tag)
        now = server.gtid_executed.max_gno(uuid, tag)
        if before is not None and (now is None or now < before):
            regressions.append((tag, before, now))
    if not regressions:
        return []
    name = server.label
    reused = GtidSet.from_intervals([(uuid, tag, (now or 0) + 1, before) for tag, before, now in regressions])
    reused = reused & previous.gtid_executed
    parts = [f"{uuid}{':' + tag if tag else ''}: {before} -> {now if now is not None else 'none'}"
             for tag, before, now in regressions]
    tag, before, now = regressions[0]
    title = (f"{name}: own GTID numbers went back from {before} to {now or 0}" if len(regressions) == 1
             else f"{name}: own GTID numbers went back for {len(regressions)} tag(s)")
    return [_finding(
        "source_uuid_went_back", name, title,
        f"{name}'s highest transaction number for its own server_uuid went back since the previous run "
        f"({'; '.join(parts)}). New transactions will get numbers that were already used ({_short(reused)}); "
        "replicas that already have those GTIDs will silently skip them.",
        gtid_set=reused,
        evidence={"server_uuid": uuid, "previous_max_gno": before, "max_gno": now,
                  "went_back": "; ".join(parts),
                  "previous_gtid_executed": _text(previous.gtid_executed),
                  "gtid_executed": _text(server.gtid_executed)})]


def run_server_checks(server: ServerSnapshot, previous: ServerSnapshot | None) -> list[Finding]:
    """Every check of one server, and, with its previous snapshot, the checks of how it changed."""
    findings = check_server_config(server)
    if previous is not None:
        findings += check_gtid_executed_regressed(server, previous)
        findings += check_gtid_purged_jumped(server, previous)
        findings += check_source_uuid_went_back(server, previous)
    return findings
