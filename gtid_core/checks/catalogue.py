"""The catalogue of checks: one :class:`CheckInfo` per check id, and the helpers that make findings.

``CHECKS`` is the registry (``gtid-audit explain CHECK_ID``): the pure checks over snapshots in
blocks by family (each block names the module that makes its findings), then the checks the
audit job makes itself (scope ``job``). ``gtid_core.registry.REGISTRY`` adds the
failover-readiness and identity checks, which keep their own catalogues beside their code.

Adding a family of checks (Group Replication, say): its entries go in ``CHECKS`` as a block of
their own, at the place marked below; its check functions in a module of their own in this
package, making findings with :func:`_finding` (which reads the default severity, remediation and
version from here); its entry point in ``runners.py``, re-exported by ``__init__``.

The helpers: :func:`_finding` builds a :class:`Finding` from a check id; :func:`_text` and
:func:`_short` print a GTID set for evidence and for a detail sentence.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence

from gtid_core.findings import Finding, Severity
from gtid_core.gtid_set import GtidSet

__all__ = ["CHECKS", "CheckInfo"]


@dataclass(frozen=True)
class CheckInfo:
    """What ``gtid-audit explain CHECK_ID`` prints about one check."""

    check_id: str
    version: int
    default_severity: Severity
    scope: str  # "server" (one server, maybe against its previous snapshot), "pair" (a channel),
    #             "group" (the members of one replication group against each other), or
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
    # --- pair: what the source does on the replica's next reconnect (on_reconnect.py) -------------
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
          "empty transactions with those GTIDs on the source (each finding gives the SQL).",
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
    # --- pair: the replica's GTIDs against its source's (divergence.py) ---------------------------
    _info("errant_transactions", Severity.CRITICAL, "pair",
          "Errant transactions: replica has transactions its source never executed",
          "(replica gtid_executed ∪ Retrieved_Gtid_Set) minus the source's gtid_executed, excluding "
          "GTIDs the replica assigns to anonymous transactions and GTIDs of its other channels. They do not "
          "stop replication on any version (a source compares at most its own server_uuid) and stay silent "
          "until a failover makes this replica a source, or makes another server its replica. Unconfirmed "
          "(warning) when the replica was not read before its source. A replica in a replication group: "
          "its group's own view changes are left out under group_replication_view_change_uuid; with "
          "AUTOMATIC before 8.3.0 they share the group name with its writes, whose GTIDs then give an info "
          "finding. A multi-source replica's own writes (through none of its channels) are reported once, "
          "on its first channel by name whose source was read after it (else its first by name).",
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER after a failover",
          "Check what the transactions changed. If they are harmless or wanted everywhere, commit empty "
          "transactions with these GTIDs on the source, or on the top of its chain when the source is itself a replica: they "
          "replicate to every replica, and the servers that have them skip them (each finding gives the SQL); "
          "if they must not exist, reprovision the replica.",
          version=4),  # v2: unconfirmed (warning) when the replica was not read before its source;
    # v3: a replica group's own view changes left out (view_change_uuid) or info (the group name, before 8.3);
    # v4: a multi-source replica's own writes reported on one channel, not on each
    # --- pair: the newest relay log's last transaction (relay_tail.py) ----------------------------
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
    # --- pair: the replica's GTIDs against its source's, continued (divergence.py) ----------------
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
          "transactions. On 5.6.15-5.7.5 do it before the replica reconnects.",
          version=2),  # v2: a loss is what a read of gtid_executed after the status row still lacks
    _info("replica_gtid_holes", Severity.WARNING, "pair",
          "Replica lacks source transactions below its highest GTID",
          "For a UUID, the source has intervals that the replica neither executed nor retrieved although "
          "the replica has higher numbers of that UUID: transactions were skipped or lost.",
          None,
          "If the source still has them in its binary logs, STOP REPLICA; START REPLICA with "
          "AUTO_POSITION fetches them. Otherwise reprovision."),
    # --- pair: the channel's threads (channel.py) -------------------------------------------------
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
    # --- server: how it changed since the previous night (server.py) ------------------------------
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
    # --- server: its settings (server.py) ---------------------------------------------------------
    _info("gtid_mode_off", Severity.WARNING, "server",
          "GTID mode is not ON",
          "gtid_mode is OFF, OFF_PERMISSIVE or ON_PERMISSIVE: transactions without GTIDs escape every "
          "check of this audit and AUTO_POSITION cannot be used.",
          None, "First make enforce_gtid_consistency ON (see config_enforce_gtid_consistency_off). Then move "
          "gtid_mode to ON one step at a time on every server of the topology, each step everywhere before the "
          "next (5.7.6+: OFF_PERMISSIVE, ON_PERMISSIVE, then wait until ONGOING_ANONYMOUS_TRANSACTION_COUNT is 0 "
          "on every server and the replicas have applied everything anonymous, then ON). Before 5.7.6 it cannot "
          "change online: option files and a restart of every server at once."),
    _info("config_enforce_gtid_consistency_off", Severity.WARNING, "server",
          "enforce_gtid_consistency is not ON",
          "Statements that cannot be logged safely with GTIDs are allowed (OFF) or only warned about (WARN).",
          None, "First SET PERSIST enforce_gtid_consistency = WARN and fix the applications whose statements the "
          "error log then names (run it through a normal business cycle); then SET PERSIST "
          "enforce_gtid_consistency = ON."),
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
    _info("config_replica_writable", Severity.WARNING, "server",
          "A replica with read_only = OFF",
          "The server replicates and takes writes from any account that can write: each such commit is an "
          "errant transaction (a GTID of its own server_uuid that its source lacks). The writer of a ring "
          "(its writes come back to it) and Group Replication members are not reported.",
          "ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER once such a write exists and the replica is repointed",
          "SET PERSIST super_read_only = ON (it sets read_only too; replication's applier threads are exempt). "
          "Find who wrote: errant_transactions names any GTID already committed."),
    # --- pair: the channel's settings (channel.py) ------------------------------------------------
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
    # --- group: the members of one replication group against each other (group.py) ---------------
    #     A check id must be unique in gtid_core.registry.REGISTRY, which also holds the ids of
    #     failover.py and identity.py.
    _info("group_member_errant", Severity.CRITICAL, "group",
          "Group member has transactions the group never certified",
          "The member's gtid_executed ∪ its group_replication_applier received set holds GTIDs that no "
          "other member read tonight has (ONLINE or RECOVERING; their gtid_executed ∪ received sets): "
          "local writes with super_read_only off while it was out of the group, or a restore. A member "
          "out of the group is refused by START GROUP_REPLICATION "
          "(Plugin_gcs_events_handler::compare_member_transaction_sets); an ONLINE one will be at its "
          "next rejoin (only GTIDs outside the group's UUIDs and outside its received set count then, "
          "so a transaction certified while the members were read never does). GTIDs an asynchronous "
          "channel of the member brought in are left out. Nothing is said when an ONLINE member of the "
          "group was not read.",
          "ER_GRP_RPL_MEMBER_TRANS_GREATER_THAN_GRP (MY-011526): 'This member has more executed "
          "transactions than those present in the group. Local transactions: ... > Group transactions: "
          "...', then MY-011522 'The member contains transactions not present in the group'",
          "Find out what the transactions changed (mysqlbinlog on the member's binary logs, "
          "--include-gtids). If the change must stay, make the group have it: apply it on the primary. "
          "If it must not, or it is harmless, either commit empty transactions with these GTIDs on the "
          "primary (each finding gives the SQL) so that the member's set becomes a subset, or reprovision the "
          "member with a clone (CLONE INSTANCE FROM a member, or Shell's cluster.rejoinInstance with "
          "recoveryMethod clone)."),
    _info("group_member_unrecoverable", Severity.WARNING, "group",
          "Group member cannot recover from the group's binary logs",
          "The member is out of the group (OFFLINE or ERROR) and every ONLINE member read tonight would "
          "refuse it as a donor: each one's gtid_purged (or its binary-log scan) needs transactions the "
          "member lacks, as a source's dump thread decides for any AUTO_POSITION replica. Distributed "
          "recovery from the binary logs fails on every donor; only a clone brings the member back. The "
          "finding gives the closest donor and the GTIDs it purged. Nothing is said when an ONLINE member "
          "was not read or a donor's binary logs were not read.",
          "MY-013470 'This member will start distributed recovery using clone. It is due to no ONLINE "
          "member has the missing data for recovering in its binary logs.', then, without the clone plugin, "
          "MY-013467 and the member goes to ERROR (9.7.4, verified); before 8.0.17 (no clone) each donor "
          "answers ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (1789) on group_replication_recovery until "
          "group_replication_recovery_retry_count is spent",
          "Provision the member with a clone: install the clone plugin on donors and joiner and "
          "START GROUP_REPLICATION (distributed recovery clones when no donor has the binary logs), or "
          "CLONE INSTANCE FROM an ONLINE member. Keep binary logs on the group's members longer "
          "(binlog_expire_logs_seconds; expire_logs_days on 5.7) than a member may stay out of it."),

    _info("group_member_purged_replica_gtids", Severity.WARNING, "group",
          "After a primary failover in its source's group, the next source would refuse this replica",
          "The replica's source is a member of a replication group. Another ONLINE member -- the source "
          "its channel moves to when the primary fails over (SOURCE_CONNECTION_AUTO_FAILOVER, or a "
          "repoint) -- has purged transactions the replica lacks: its dump thread would answer the "
          "replica's AUTO_POSITION connect with ER_MASTER_HAS_PURGED_REQUIRED_GTIDS. Judged when the "
          "replica's receiver is stopped (its set cannot grow), or, with its receiver running or connecting, "
          "for members read before the replica and before its source: what the source has or has queued and "
          "not purged counts as the replica's (lag, not refusal). A replica whose receiver state was not read "
          "is not judged.",
          "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS (1789) from the new source, reported as fatal error 1236 / "
          "13114 after the failover",
          "Keep the binary logs on every member of the group at least as long as the slowest "
          "asynchronous replica needs (binlog_expire_logs_seconds; expire_logs_days on 5.7); get a lagging or stopped replica "
          "caught up. Until then, after a failover point the replica at a member that still has the "
          "binary logs (the finding names the ones that do not)."),

    # --- job (jobs/audit_tasks.py) ---------------------------------------------------------------
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
          "channel (CHANGE REPLICATION SOURCE TO ..., CHANGE MASTER TO before 8.0.23). If the source is gone, the UUID registry "
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


# --------------------------------------------------------------------------------------------
# Helpers every check makes its findings with
# --------------------------------------------------------------------------------------------

def _all_of(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


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
