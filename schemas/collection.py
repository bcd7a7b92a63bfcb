"""The tables written by ``gtid-audit collect``.

Every value read from a server is stored as the server returned it: GTID sets as the server's
text (not re-canonicalised), NULL stays NULL, text columns hold the raw text. Integers and
booleans are converted only from the server's own integer/ON/OFF forms; a value that cannot be
converted is stored as NULL and reported in ``collection_errors`` (class ``unparseable_value``).
"""
from __future__ import annotations

from schemas.base import Column, LogicalType as L, TableSchema, register, run_columns, server_columns

__all__ = ["RUNS", "SERVERS", "CHANNELS", "BINARY_LOGS", "RELAY_LOG_TAIL", "COLLECTION_ERRORS",
           "GROUP_REPLICATION", "GROUP_MEMBERS", "COLLECTION_TABLES"]

C = Column

RUNS = register(TableSchema(
    name="runs",
    version=1,
    description="One row per collection run: when, what was configured, what came back.",
    # one row a night: partitioned by day, a year would be 365 one-row files; clustered, OPTIMIZE
    # keeps it a few files (docs/deployment.md, "Table maintenance")
    partition_by=(),
    cluster_by=("run_date", "run_id"),
    key=("run_id",),
    columns=run_columns("first clustering column") + (
        C("started_at", L.TIMESTAMP, False, "UTC instant the run started"),
        C("finished_at", L.TIMESTAMP, False, "UTC instant the rows were handed to the writer"),
        C("config_file", L.STRING, True, "path of the configuration file the run used"),
        C("warehouse", L.STRING, False, "root of the Delta tables (resolved)"),
        C("writer", L.STRING, False, "library that wrote the tables: 'delta-spark' (older runs may say 'delta-rs')"),
        C("spark_master", L.STRING, True, "Spark master URL of the run"),
        C("servers_configured", L.INT64, False, "servers listed in the configuration"),
        C("servers_discovered", L.INT64, False, "servers added by topology discovery"),
        C("servers_ok", L.INT64, False, "servers read without any error"),
        C("servers_partial", L.INT64, False, "servers read, but some statement failed"),
        C("servers_failed", L.INT64, False, "servers from which nothing could be read"),
        C("error_count", L.INT64, False, "rows written to collection_errors for this run"),
        C("collector_version", L.STRING, False, "version of the gtid-audit package"),
    ),
))

SERVERS = register(TableSchema(
    name="servers",
    version=3,
    upgrades_from=2,
    description="One row per server and run: identity, version, GTID sets and the variables "
                "the checks need, each as @@GLOBAL returned it.",
    key=("run_id", "server"),
    columns=server_columns() + (
        C("host", L.STRING, False, "host the collector connected to (from the configuration)"),
        C("port", L.INT32, False, "port the collector connected to"),
        C("aliases", L.STRING, True, "other host:port names replicas may use, comma-separated"),
        C("discovered", L.BOOL, False, "true if the server came from topology discovery"),
        C("status", L.STRING, False, "'ok', 'partial' (some statement failed) or 'failed'"),
        C("read_order", L.INT32, True, "wave in which the server was read (0 = first: deepest replicas)"),
        C("topology_depth", L.INT32, True, "replication depth seen when planning (0 = no source)"),
        C("read_started_at", L.TIMESTAMP, True, "UTC instant the connection was attempted"),
        C("read_finished_at", L.TIMESTAMP, True, "UTC instant the last statement returned"),
        C("gtid_read_at", L.TIMESTAMP, True, "UTC instant the @@GLOBAL variables SELECT returned"),
        C("server_uuid", L.STRING, True, "@@GLOBAL.server_uuid"),
        C("server_id", L.INT64, True, "@@GLOBAL.server_id"),
        C("version", L.STRING, True, "@@GLOBAL.version"),
        C("version_comment", L.STRING, True, "@@GLOBAL.version_comment"),
        C("hostname", L.STRING, True, "@@GLOBAL.hostname"),
        C("reported_port", L.INT32, True, "@@GLOBAL.port"),
        C("gtid_mode", L.STRING, True, "@@GLOBAL.gtid_mode (OFF, OFF_PERMISSIVE, ON_PERMISSIVE, ON)"),
        C("enforce_gtid_consistency", L.STRING, True, "@@GLOBAL.enforce_gtid_consistency (OFF, ON, WARN)"),
        C("gtid_executed", L.STRING, True, "@@GLOBAL.gtid_executed, server text"),
        C("gtid_purged", L.STRING, True, "@@GLOBAL.gtid_purged, server text"),
        C("log_bin", L.BOOL, True, "@@GLOBAL.log_bin"),
        C("log_replica_updates", L.BOOL, True, "@@GLOBAL.log_replica_updates (log_slave_updates before 8.0.26)"),
        C("sync_binlog", L.INT64, True, "@@GLOBAL.sync_binlog"),
        C("innodb_flush_log_at_trx_commit", L.INT64, True, "@@GLOBAL.innodb_flush_log_at_trx_commit"),
        C("relay_log_recovery", L.BOOL, True, "@@GLOBAL.relay_log_recovery"),
        C("replica_parallel_workers", L.INT64, True,
          "@@GLOBAL.replica_parallel_workers (slave_parallel_workers before 8.0.26)"),
        C("replica_preserve_commit_order", L.BOOL, True,
          "@@GLOBAL.replica_preserve_commit_order (slave_preserve_commit_order before 8.0.26)"),
        C("binlog_format", L.STRING, True, "@@GLOBAL.binlog_format"),
        C("relay_log_info_repository", L.STRING, True,
          "@@GLOBAL.relay_log_info_repository (before 8.3.0); NULL where the variable does not exist"),
        C("master_info_repository", L.STRING, True,
          "@@GLOBAL.master_info_repository (before 8.3.0); NULL where the variable does not exist"),
        C("replica_parallel_type", L.STRING, True,
          "@@GLOBAL.replica_parallel_type (slave_parallel_type before 8.0.26; 5.7.2 to 8.2); NULL where absent"),
        C("read_only", L.BOOL, True, "@@GLOBAL.read_only"),
        C("super_read_only", L.BOOL, True, "@@GLOBAL.super_read_only; NULL on 5.6"),
        C("binlog_file", L.STRING, True, "File of SHOW BINARY LOG STATUS / SHOW MASTER STATUS"),
        C("binlog_position", L.INT64, True, "Position of SHOW BINARY LOG STATUS / SHOW MASTER STATUS"),
        C("binlog_status_gtid_set", L.STRING, True, "Executed_Gtid_Set of SHOW BINARY LOG STATUS"),
        C("binlog_status_read_at", L.TIMESTAMP, True, "UTC instant SHOW BINARY LOG STATUS returned"),
        C("binlog_filters", L.STRING, True,
          "Binlog_Do_DB and Binlog_Ignore_DB of SHOW BINARY LOG STATUS as 'Column=value' joined by '; ', '' "
          "when none; NULL when not read (no row: binary log off)", since=3),
        C("channel_count", L.INT32, True, "replica channels found; NULL if they could not be read"),
    ),
))

CHANNELS = register(TableSchema(
    name="channels",
    version=5,
    upgrades_from=3,
    description="One row per replica channel (SHOW REPLICA STATUS / SHOW SLAVE STATUS row), "
                "joined with performance_schema receiver state and applier configuration.",
    key=("run_id", "server", "channel_name"),
    columns=server_columns() + (
        C("channel_name", L.STRING, False, "Channel_Name; '' is the default channel"),
        C("status_statement", L.STRING, False, "the statement the row came from"),
        C("source_host", L.STRING, True, "Source_Host (Master_Host)"),
        C("source_port", L.INT32, True, "Source_Port (Master_Port)"),
        C("source_uuid", L.STRING, True, "Source_UUID (Master_UUID); NULL if never connected"),
        C("source_server_id", L.INT64, True, "Source_Server_Id (Master_Server_Id)"),
        C("source_server", L.STRING, True,
          "inventory name of the source, the answer of the run's one source resolver "
          "(jobs.pairs.SourceResolver); NULL when unresolved (source_problem says why)"),
        C("source_method", L.STRING, True, "how the source was resolved: name, address or source_uuid"),
        C("source_problem", L.STRING, True, "why the source could not be resolved; NULL when resolved"),
        C("source_uuid_mismatch", L.STRING, True,
          "set when the resolved server's server_uuid differs from Source_UUID (last connection)"),
        C("source_candidates", L.STRING, True, "comma-separated inventory servers the address matched"),
        C("retrieved_gtid_set", L.STRING, True, "Retrieved_Gtid_Set, server text"),
        C("executed_gtid_set", L.STRING, True, "Executed_Gtid_Set, server text"),
        C("io_running", L.STRING, True, "Replica_IO_Running (Slave_IO_Running): Yes, No, Connecting"),
        C("sql_running", L.STRING, True, "Replica_SQL_Running (Slave_SQL_Running): Yes, No"),
        C("io_state", L.STRING, True, "Replica_IO_State (Slave_IO_State)"),
        C("sql_running_state", L.STRING, True, "Replica_SQL_Running_State (Slave_SQL_Running_State)"),
        C("last_io_errno", L.INT64, True, "Last_IO_Errno"),
        C("last_io_error", L.STRING, True, "Last_IO_Error"),
        C("last_io_error_timestamp", L.STRING, True, "Last_IO_Error_Timestamp, server text"),
        C("last_sql_errno", L.INT64, True, "Last_SQL_Errno"),
        C("last_sql_error", L.STRING, True, "Last_SQL_Error"),
        C("last_sql_error_timestamp", L.STRING, True, "Last_SQL_Error_Timestamp, server text"),
        C("auto_position", L.BOOL, True, "Auto_Position"),
        C("source_log_file", L.STRING, True, "Source_Log_File (Master_Log_File)"),
        C("read_source_log_pos", L.INT64, True, "Read_Source_Log_Pos (Read_Master_Log_Pos)"),
        C("relay_log_file", L.STRING, True, "Relay_Log_File: the applier's current relay log"),
        C("relay_log_pos", L.INT64, True, "Relay_Log_Pos: the applier's position in it"),
        C("relay_source_log_file", L.STRING, True, "Relay_Source_Log_File (Relay_Master_Log_File)"),
        C("exec_source_log_pos", L.INT64, True, "Exec_Source_Log_Pos (Exec_Master_Log_Pos)"),
        C("seconds_behind_source", L.INT64, True,
          "Seconds_Behind_Source (Seconds_Behind_Master); NULL = unknown, never 0"),
        C("sql_delay", L.INT64, True, "SQL_Delay"),
        C("receiver_read_at", L.TIMESTAMP, True,
          "UTC instant performance_schema.replication_connection_status returned"),
        C("received_transaction_set", L.STRING, True, "RECEIVED_TRANSACTION_SET"),
        C("service_state", L.STRING, True, "receiver SERVICE_STATE (ON, OFF, CONNECTING)"),
        C("queueing_transaction", L.STRING, True, "QUEUEING_TRANSACTION (8.0+); '' when none"),
        C("queueing_transaction_start_queue_timestamp", L.STRING, True,
          "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP, server text"),
        C("last_queued_transaction", L.STRING, True, "LAST_QUEUED_TRANSACTION (8.0+)"),
        C("last_queued_transaction_end_queue_timestamp", L.STRING, True,
          "LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP, server text"),
        C("receiver_last_error_number", L.INT64, True, "LAST_ERROR_NUMBER of the receiver"),
        C("receiver_last_error_message", L.STRING, True, "LAST_ERROR_MESSAGE of the receiver"),
        C("assign_gtids_to_anonymous_transactions_type", L.STRING, True,
          "replication_applier_configuration.ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE (8.0.23+)"),
        C("assign_gtids_to_anonymous_transactions_value", L.STRING, True,
          "replication_applier_configuration.ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE (8.0.23+)"),
        C("relay_tail_file", L.STRING, True, "newest relay log file whose tail was read"),
        C("relay_tail_start_pos", L.INT64, True,
          "position the tail read started from: Relay_Log_Pos (8.0.2+, newest file = applier's), "
          "NULL = the file's first event"),
        C("relay_tail_events", L.INT32, True, "events stored in relay_log_tail for this channel"),
        C("relay_tail_first_event", L.INT64, True,
          "events after relay_tail_start_pos that were read past and not stored (the offset of the "
          "first stored event): above 0, the stored events may start inside a transaction whose "
          "Gtid event was dropped; NULL when truncated"),
        C("relay_tail_truncated", L.BOOL, True,
          "true if the end of the newest relay log could not be read (scan bound or a failed "
          "statement; nothing is stored then); false when the stored events end at its end"),
        C("relay_tail_scanned_events", L.INT64, True,
          "events the server was asked to decode for this tail (probe offsets + rows listed, an "
          "upper bound); at most collection.relay_tail_max_scan_events"),
        C("applier_event_type", L.STRING, True,
          "Event_type of the event at Relay_Log_File:Relay_Log_Pos (the applier's group start); "
          "read only when the stored tail ends in a group whose Gtid-type event it lacks"),
        C("applier_event_gtid", L.STRING, True,
          "the GTID that event announces when it is a Gtid-type event (ANONYMOUS for Anonymous_Gtid)"),
        C("gtid_executed_reread", L.STRING, True,
          "@@GLOBAL.gtid_executed read again right after the status row, only when that row showed the "
          "applier caught up (equal positions, or 'has read all relay log' when they are unknown) with retrieved GTIDs outside its Executed_Gtid_Set: the "
          "server reads Executed_Gtid_Set before the positions, so a transaction committed in between "
          "looks lost; NULL when not needed or not read", since=4),
        C("replication_filters", L.STRING, True,
          "the channel's replication filters (Replicate_Do_DB ... Replicate_Rewrite_DB, global ones included) "
          "as 'Column=value' joined by '; ', '' when none; NULL when a filter column is absent (5.6)", since=5),
    ),
))

BINARY_LOGS = register(TableSchema(
    name="binary_logs",
    version=1,
    description="One row per binary log file (SHOW BINARY LOGS), with the file's Previous_gtids "
                "read from its header events (SHOW BINLOG EVENTS IN f LIMIT n).",
    key=("run_id", "server", "log_name"),
    columns=server_columns() + (
        C("seq", L.INT32, False, "position of the file in SHOW BINARY LOGS (0 = oldest)"),
        C("log_name", L.STRING, False, "Log_name"),
        C("file_size", L.INT64, True, "File_size"),
        C("encrypted", L.STRING, True, "Encrypted (8.0.14+): Yes/No; NULL where absent"),
        C("previous_gtids", L.STRING, True,
          "Info of the file's Previous_gtids event, server text; NULL if not read or absent"),
        C("previous_gtids_read", L.BOOL, False, "true if the header events were read"),
    ),
))

RELAY_LOG_TAIL = register(TableSchema(
    name="relay_log_tail",
    version=3,
    description="The last events of each channel's newest relay log (SHOW RELAYLOG EVENTS), at "
                "most collection.relay_tail_max_events of them, ending at the end of the file: "
                "enough for the transaction boundary parser to tell whether the relay log ends "
                "inside a transaction. Sanitized: no statement text and no row data (no Info); "
                "Gtid-type events keep their GTID, Query events their class.",
    key=("run_id", "server", "channel_name", "seq"),
    columns=server_columns() + (
        C("channel_name", L.STRING, False, "Channel_Name; '' is the default channel"),
        C("seq", L.INT32, False, "offset of the event after the tail's start position (order)"),
        C("log_name", L.STRING, False, "Log_name"),
        C("pos", L.INT64, False,
          "Pos (events decompressed from a Transaction_payload share the Pos of the event after it)"),
        C("event_type", L.STRING, False, "Event_type"),
        C("event_server_id", L.INT64, True, "Server_id of the event"),
        C("end_log_pos", L.INT64, True, "End_log_pos (the position in the source's binary log)"),
        C("gtid", L.STRING, True,
          "Gtid-type events: the GTID they announce, server text (ANONYMOUS for Anonymous_Gtid; "
          "NULL when the Info did not read as SET @@SESSION.GTID_NEXT= '...')"),
        C("query_kind", L.STRING, True,
          "Query events: BEGIN, COMMIT, ROLLBACK, XA START, XA END, XA COMMIT, XA ROLLBACK or "
          "'statement' (its text is not kept)"),
    ),
))

COLLECTION_ERRORS = register(TableSchema(
    name="collection_errors",
    version=1,
    description="One row per failure while collecting: failures are data, the run goes on. "
                "Messages never contain secrets.",
    key=("run_id", "server", "seq"),
    columns=server_columns() + (
        C("seq", L.INT32, False, "order of the error for this server"),
        C("error_class", L.STRING, False,
          "unreachable, timeout, auth_failed, privilege_missing, tls_verify_failed, "
          "tls_identity_mismatch, tls_handshake_failed, tls_required_by_server, tls_unavailable, "
          "gtid_mode_off, unparseable_value, config_error, unexpected (docs/collection.md)"),
        C("errno", L.INT64, True, "MySQL error number, when the server gave one"),
        C("sqlstate", L.STRING, True, "SQLSTATE, when the server gave one"),
        C("message", L.STRING, False, "what went wrong (secrets removed)"),
        C("statement", L.STRING, True, "the statement that failed; NULL for connection errors"),
        C("channel_name", L.STRING, True, "channel concerned, if any"),
    ),
))

GROUP_REPLICATION = register(TableSchema(
    name="group_replication",
    version=1,
    description="One row per server read that belongs to a replication group (Group Replication "
                "loaded and group_replication_group_name set, whether or not it runs): its group "
                "settings, its own state in its own view, and its group channels' receiver state.",
    key=("run_id", "server"),
    columns=server_columns() + (
        C("group_name", L.STRING, False,
          "@@GLOBAL.group_replication_group_name: the group's identity and the UUID of its GTIDs"),
        C("view_change_uuid", L.STRING, True,
          "@@GLOBAL.group_replication_view_change_uuid (8.0.26+): AUTOMATIC or the UUID of the "
          "view-change GTIDs; NULL where the variable does not exist"),
        C("single_primary_mode", L.BOOL, True, "@@GLOBAL.group_replication_single_primary_mode"),
        C("enforce_update_everywhere_checks", L.BOOL, True,
          "@@GLOBAL.group_replication_enforce_update_everywhere_checks"),
        C("member_weight", L.INT64, True,
          "@@GLOBAL.group_replication_member_weight (5.7.20+): its rank in a primary election"),
        C("consistency", L.STRING, True, "@@GLOBAL.group_replication_consistency (8.0.14+)"),
        C("member_state", L.STRING, True,
          "MEMBER_STATE of this server in its own replication_group_members (ONLINE, RECOVERING, "
          "OFFLINE, ERROR, UNREACHABLE); NULL when the table does not list it"),
        C("member_role", L.STRING, True,
          "MEMBER_ROLE of this server: PRIMARY or SECONDARY (8.0.2+; before, from the status variable "
          "group_replication_primary_member)"),
        C("member_version", L.STRING, True, "MEMBER_VERSION of this server (8.0.2+)"),
        C("members_in_view", L.INT32, True, "rows of this server's replication_group_members"),
        C("applier_service_state", L.STRING, True,
          "SERVICE_STATE of channel group_replication_applier (replication_connection_status)"),
        C("applier_received_transaction_set", L.STRING, True,
          "RECEIVED_TRANSACTION_SET of group_replication_applier: the certified transactions this "
          "member has queued (what distributed recovery counts with gtid_executed)"),
        C("applier_last_error_number", L.INT64, True, "LAST_ERROR_NUMBER of group_replication_applier"),
        C("applier_last_error_message", L.STRING, True,
          "LAST_ERROR_MESSAGE of group_replication_applier (row values redacted)"),
        C("recovery_service_state", L.STRING, True, "SERVICE_STATE of channel group_replication_recovery"),
        C("recovery_last_error_number", L.INT64, True, "LAST_ERROR_NUMBER of group_replication_recovery"),
        C("recovery_last_error_message", L.STRING, True,
          "LAST_ERROR_MESSAGE of group_replication_recovery (row values redacted)"),
    ),
))

GROUP_MEMBERS = register(TableSchema(
    name="group_members",
    version=1,
    description="One row per member of a replication group as one member read sees it: "
                "performance_schema.replication_group_members, with the member's row of "
                "replication_group_member_stats when that server has one.",
    key=("run_id", "server", "member_id"),
    columns=server_columns() + (
        C("group_name", L.STRING, False, "group_replication_group_name of the server that was read"),
        C("member_id", L.STRING, False, "MEMBER_ID: the member's server_uuid ('' before the group starts)"),
        C("member_host", L.STRING, True, "MEMBER_HOST"),
        C("member_port", L.INT32, True, "MEMBER_PORT"),
        C("member_state", L.STRING, True, "MEMBER_STATE as this server sees it"),
        C("member_role", L.STRING, True,
          "MEMBER_ROLE (8.0.2+; before, from the status variable group_replication_primary_member)"),
        C("member_version", L.STRING, True, "MEMBER_VERSION (8.0.2+)"),
        C("member_communication_stack", L.STRING, True, "MEMBER_COMMUNICATION_STACK (8.0.27+)"),
        C("view_id", L.STRING, True, "VIEW_ID of the stats row"),
        C("transactions_in_queue", L.INT64, True,
          "COUNT_TRANSACTIONS_IN_QUEUE: waiting for certification"),
        C("transactions_checked", L.INT64, True, "COUNT_TRANSACTIONS_CHECKED"),
        C("conflicts_detected", L.INT64, True, "COUNT_CONFLICTS_DETECTED"),
        C("transactions_rows_validating", L.INT64, True, "COUNT_TRANSACTIONS_ROWS_VALIDATING"),
        C("transactions_committed_all_members", L.STRING, True,
          "TRANSACTIONS_COMMITTED_ALL_MEMBERS, server text (updated periodically)"),
        C("last_conflict_free_transaction", L.STRING, True, "LAST_CONFLICT_FREE_TRANSACTION"),
        C("transactions_remote_in_applier_queue", L.INT64, True,
          "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE (8.0.2+): certified, not yet applied"),
        C("transactions_remote_applied", L.INT64, True, "COUNT_TRANSACTIONS_REMOTE_APPLIED (8.0.2+)"),
        C("transactions_local_proposed", L.INT64, True, "COUNT_TRANSACTIONS_LOCAL_PROPOSED (8.0.2+)"),
        C("transactions_local_rollback", L.INT64, True, "COUNT_TRANSACTIONS_LOCAL_ROLLBACK (8.0.2+)"),
    ),
))

COLLECTION_TABLES = (RUNS, SERVERS, CHANNELS, BINARY_LOGS, RELAY_LOG_TAIL, COLLECTION_ERRORS,
                     GROUP_REPLICATION, GROUP_MEMBERS)
