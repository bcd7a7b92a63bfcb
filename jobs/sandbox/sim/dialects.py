"""What a MySQL server of a given version answers: statements, columns, variables, errors.

The 9.7 shapes (column names, wire types, which values are NULL) were taken from a real 9.7.4
server through mysql-connector; ``tests/sim/test_sim_vs_real.py`` compares them with a live one,
statement by statement and column by column. The older shapes come from each version's
reference manual (the page is cited next to each rule). The manuals do not document wire types:
a column an older version shares with 9.7 is given 9.7's type, and a column only older
versions have is typed like its renamed 9.7 counterpart.

Version rules used here (each with the manual page it comes from):

* ``SHOW REPLICA STATUS`` / ``SHOW REPLICAS`` exist from 8.0.22, with Replica/Source column
  names; ``SHOW SLAVE STATUS`` keeps the old Slave/Master names until it is removed in 8.4.0
  (https://dev.mysql.com/doc/refman/8.0/en/show-replica-status.html,
  https://dev.mysql.com/doc/relnotes/mysql/8.4/en/news-8-4-0.html "Deprecation and Removal Notes";
  a real 9.7 answers 1064).
* ``SHOW BINARY LOG STATUS`` exists from 8.2.0 and ``SHOW MASTER STATUS`` is removed in 8.4.0
  (https://dev.mysql.com/doc/refman/8.4/en/show-binary-log-status.html).
* ``SHOW SLAVE STATUS`` columns: 5.6 https://dev.mysql.com/doc/refman/5.6/en/show-slave-status.html;
  5.7 adds Replicate_Rewrite_DB, Channel_Name, Master_TLS_Version
  (https://dev.mysql.com/doc/refman/5.7/en/show-slave-status.html); 8.0 adds
  Master_public_key_path, Get_master_public_key, Network_Namespace
  (https://dev.mysql.com/doc/refman/8.0/en/show-slave-status.html).
* ``FOR CHANNEL`` and ``Channel_Name`` from 5.7.6 (multi-source replication,
  https://dev.mysql.com/doc/refman/5.7/en/replication-multi-source.html).
* ``SHOW BINARY LOGS`` has ``Encrypted`` from 8.0.14
  (https://dev.mysql.com/doc/refman/8.0/en/show-binary-logs.html).
* performance_schema.replication_connection_status from 5.7.2; its LAST_QUEUED_* and QUEUEING_*
  columns from 8.0.2 (https://dev.mysql.com/doc/refman/5.7/en/performance-schema-replication-connection-status-table.html,
  https://dev.mysql.com/doc/refman/8.0/en/performance-schema-replication-connection-status-table.html).
  replication_applier_configuration from 5.7.2; ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_* from 8.0.23
  (https://dev.mysql.com/doc/refman/8.0/en/performance-schema-replication-applier-configuration-table.html).
* Variables: replica_* names from 8.0.26 with the slave_* names kept as aliases (a real 9.7 still
  answers ``@@GLOBAL.log_slave_updates``) (https://dev.mysql.com/doc/refman/8.0/en/replication-options-replica.html);
  slave_preserve_commit_order from 5.7.5, super_read_only from 5.7.8; slave_parallel_type from 5.7.2
  (replica_parallel_type from 8.0.26; both removed in 8.3.0); relay_log_info_repository
  and master_info_repository removed in 8.3.0 (https://dev.mysql.com/doc/relnotes/mysql/8.3/en/news-8-3-0.html;
  a real 9.7 answers 1193); enforce_gtid_consistency is a boolean on 5.6 (SELECT gives 1/0) and
  an enum OFF/ON/WARN from 5.7.6 (https://dev.mysql.com/doc/refman/5.7/en/replication-options-gtids.html).
* Tagged GTIDs (``uuid:tag:n``, event type ``Gtid_tagged_log_event``) from 8.3.0
  (https://dev.mysql.com/doc/refman/8.4/en/replication-gtids-concepts.html).
* TLS out of the box (``offers_tls``): a server built with OpenSSL generates its certificates at
  first start (``auto_generate_certs``, ON by default, 5.7.5+) and offers TLS with no
  configuration. Community builds used yaSSL, which generates none, until 5.7.28; from 5.7.28
  every build uses OpenSSL (https://dev.mysql.com/doc/refman/5.7/en/ssl-libraries.html,
  https://dev.mysql.com/worklog/task/?id=7699). So a community 5.6 or 5.7 before 5.7.28 offers
  TLS only when it was given certificates, and 5.7.28+ and 8.0+ always do. The simulator serves
  TLS (when it is given a certificate) on exactly these versions.
* A dump refused by the source (``source_fatal_errno``, ``purged_refusal_error``): the receiver
  stops with Last_IO_Errno 1236 (ER_MASTER_FATAL_ERROR_READING_BINLOG) up to the 8.0 milestones
  and 13114 from 8.0.11 (GA) on, and words a purge refusal in the old master/slave terms before
  8.0.11. Both rules come from the server's own recorded test results, not from a manual (the
  rows of ``tests/core/test_mysql_test_replay.py``, docs/server-tests.md):
  ``rpl_gtid_validate_slave_gtids.result`` recorded ``wait_for_slave_io_error.inc [errno=1236]``
  and the old wording on 5.6.22 and 5.6.23 (upstream ``f9725ff9``, ``e603acb5``), on a later
  5.6 (mysql/mysql-server ``1a15643f``), on a 5.7 tree (``045f1ec7``) and on an 8.0 milestone
  tree (``4c6353ea``, before 8.0.11: it warns that sql mode 'NO_AUTO_CREATE_USER' is deprecated,
  and that mode is gone from 8.0.11); the 8.0 trees of ``rpl_gtid_purged_fail_to_connect.result``
  (``c958ce4a``, ``1e5f282a``) recorded 13114; the 8.4 / 9.x tree (``312d9ed7``) recorded 13114
  and the source/replica wording. Which milestone first reported 13114 is not recorded: 8.0.0 -
  8.0.10 (never GA) are all given 1236. The 8.0 GA wording before the source/replica terms is not
  recorded either (those rows do not print Last_IO_Error): 8.0.11+ are given the 9.x text.
* Group Replication (issue #22) from 5.7.17, the first GA release with the plugin
  (https://dev.mysql.com/doc/refman/5.7/en/group-replication.html); older versions cannot be
  group members. Its performance_schema tables, as the server source defines them
  (``storage/perfschema/table_replication_group_members.cc``,
  ``table_replication_group_member_stats.cc``; the 9.7 wire types were taken from a real 9.7.4
  group member of the sandbox, ``jobs/sandbox/topologies/groups.yaml``):
  ``replication_group_members`` has CHANNEL_NAME, MEMBER_ID, MEMBER_HOST, MEMBER_PORT (NULL when
  0), MEMBER_STATE on 5.7; MEMBER_ROLE and MEMBER_VERSION from 8.0.2 (WL#10958,
  https://dev.mysql.com/worklog/task/?id=10958); MEMBER_COMMUNICATION_STACK from 8.0.27
  (https://dev.mysql.com/doc/refman/8.0/en/performance-schema-replication-group-members-table.html).
  A member whose Group Replication is stopped lists only itself, OFFLINE, with MEMBER_ROLE
  empty and, in ``plugin/group_replication/src/ps_information.cc`` (``get_group_members_info``)
  of an 8.0 tree of 2019, MEMBER_VERSION empty too; the 2024 tree of that function (the one that
  reports MEMBER_COMMUNICATION_STACK) and a real 9.7.4 show the version. Which release changed
  it is not verified: 8.0.27 is assumed. Its stats row has no VIEW_ID and zero counters (both
  trees; seen on 9.7.4).
  ``replication_group_member_stats`` holds only the local member's row on 5.7, without the
  COUNT_TRANSACTIONS_REMOTE_* / LOCAL_* columns; every member's row and those columns from 8.0.2
  (https://dev.mysql.com/doc/refman/8.0/en/performance-schema-replication-group-member-stats-table.html).
  ``performance_schema.global_variables`` exists from 5.7.6 (5.6 answers 1146;
  https://dev.mysql.com/doc/refman/5.7/en/performance-schema-system-variable-tables.html); a
  server without the plugin has no ``group_replication_*`` rows there, so a scalar subquery on it
  gives NULL. Group variables: group_name, single_primary_mode and
  enforce_update_everywhere_checks from 5.7.17, member_weight from 5.7.20, consistency from
  8.0.14 (default EVENTUAL, BEFORE_ON_PRIMARY_FAILOVER from 8.4.0), view_change_uuid from
  8.0.26 (default AUTOMATIC) (https://dev.mysql.com/doc/refman/8.0/en/group-replication-system-variables.html).
  View changes are logged as transactions (a View_change_log_event with a GTID of the group
  name, or of view_change_uuid when set) before 8.3.0 (WL#14539,
  https://dev.mysql.com/worklog/task/?id=14539); a real 9.7.4 group logs none (its binary log
  after three joins and three writes holds ``group:1-3``, all writes). Which release stopped
  logging them is not verified here: 8.3.0 is assumed.
* Errors (https://dev.mysql.com/doc/mysql-errors/8.0/en/server-error-reference.html): 1064
  ER_PARSE_ERROR (42000), 1193 ER_UNKNOWN_SYSTEM_VARIABLE (HY000), 1146 ER_NO_SUCH_TABLE (42S02),
  1054 ER_BAD_FIELD_ERROR (42S22), 1220 ER_ERROR_WHEN_EXECUTING_COMMAND (HY000), 1227
  ER_SPECIFIC_ACCESS_DENIED_ERROR (42000), 1142 ER_TABLEACCESS_DENIED_ERROR (42000), 1045
  ER_ACCESS_DENIED_ERROR (28000); messages as a real 9.7 words them.
"""
from __future__ import annotations

from dataclasses import dataclass

from gtid_core.versions import MySQLVersion

__all__ = ["Col", "Shape", "shape_for", "SqlError", "ERR", "STRING", "BIGINT", "INT", "CHAR", "TEXT",
           "TIMESTAMP"]

# Wire type codes (the protocol's MYSQL_TYPE_*), as a real 9.7 sends them.
INT, TIMESTAMP, BIGINT, TEXT, STRING, CHAR = 3, 7, 8, 252, 253, 254


@dataclass(frozen=True)
class Col:
    name: str
    type: int


class SqlError(Exception):
    """A server error to send back: errno, SQLSTATE and message, as the server words it."""

    def __init__(self, errno: int, message: str):
        super().__init__(f"{errno}: {message}")
        self.errno, self.message = errno, message


SQLSTATE = {1064: "42000", 1193: "HY000", 1146: "42S02", 1054: "42S22", 1220: "HY000", 1227: "42000",
            1142: "42000", 1045: "28000", 1105: "HY000"}


class ERR:
    """Constructors of the errors a version returns."""

    @staticmethod
    def parse(near: str) -> SqlError:
        return SqlError(1064, "You have an error in your SQL syntax; check the manual that corresponds to your "
                              f"MySQL server version for the right syntax to use near '{near}' at line 1")

    @staticmethod
    def unknown_variable(name: str) -> SqlError:
        return SqlError(1193, f"Unknown system variable '{name}'")

    @staticmethod
    def no_table(db: str, table: str) -> SqlError:
        return SqlError(1146, f"Table '{db}.{table}' doesn't exist")

    @staticmethod
    def bad_field(name: str) -> SqlError:
        return SqlError(1054, f"Unknown column '{name}' in 'field list'")

    @staticmethod
    def no_log(statement: str) -> SqlError:
        return SqlError(1220, f"Error when executing command {statement}: Could not find target log")

    @staticmethod
    def privilege(privileges: str) -> SqlError:
        return SqlError(1227, f"Access denied; you need (at least one of) the {privileges} privilege(s) "
                              "for this operation")

    @staticmethod
    def table_denied(user: str, table: str) -> SqlError:
        return SqlError(1142, f"SELECT command denied to user '{user}'@'localhost' for table '{table}'")


# The receiver's Last_IO_Error when its source refused the dump with
# ER_MASTER_HAS_PURGED_REQUIRED_GTIDS, as the server's own tests recorded it (module docstring).
# Old wording: rpl_gtid_validate_slave_gtids.result on 5.6.22, 5.6.23, 5.7 and an 8.0 milestone
# ends here; the later 5.6 tree of that test (1a15643f, 5.6.27+) appends "Replicate the missing
# transactions from elsewhere, ...", advice and the sets, which the simulator leaves out (the
# release that added them is not recorded, so every old-wording version gets the common part).
# 9.x wording: rpl_gtid_validate_slave_gtids.result on 8.4 / 9.x goes on with "Consider increasing
# the source's binary log expiration period." and the sets, likewise left out.
PURGED_REFUSAL_OLD = ("Got fatal error 1236 from master when reading data from binary log: 'The slave is connecting "
                      "using CHANGE MASTER TO MASTER_AUTO_POSITION = 1, but the master has purged binary logs "
                      "containing GTIDs that the slave requires.'")
PURGED_REFUSAL_9X = ("Got fatal error 1236 from source when reading data from binary log: 'Cannot replicate because "
                     "the source purged required binary logs. Replicate the missing transactions from elsewhere, or "
                     "provision a new replica from backup.'")


def _cols(spec: str) -> tuple[Col, ...]:
    """``"Name:type Name2:type"`` -> columns (type letters: s string, i int, b bigint, c char,
    t text, ts timestamp)."""
    kinds = {"s": STRING, "i": INT, "b": BIGINT, "c": CHAR, "t": TEXT, "ts": TIMESTAMP}
    out = []
    for item in spec.split():
        name, kind = item.rsplit(":", 1)
        out.append(Col(name, kinds[kind]))
    return tuple(out)


# SHOW REPLICA STATUS of a real 9.7.4 (the 8.0.22+ names), in order.
REPLICA_STATUS_97 = _cols(
    "Replica_IO_State:s Source_Host:s Source_User:s Source_Port:i Connect_Retry:i Source_Log_File:s "
    "Read_Source_Log_Pos:b Relay_Log_File:s Relay_Log_Pos:b Relay_Source_Log_File:s Replica_IO_Running:s "
    "Replica_SQL_Running:s Replicate_Do_DB:s Replicate_Ignore_DB:s Replicate_Do_Table:s "
    "Replicate_Ignore_Table:s Replicate_Wild_Do_Table:s Replicate_Wild_Ignore_Table:s Last_Errno:i "
    "Last_Error:s Skip_Counter:i Exec_Source_Log_Pos:b Relay_Log_Space:b Until_Condition:s Until_Log_File:s "
    "Until_Log_Pos:b Source_SSL_Allowed:s Source_SSL_CA_File:s Source_SSL_CA_Path:s Source_SSL_Cert:s "
    "Source_SSL_Cipher:s Source_SSL_Key:s Seconds_Behind_Source:b Source_SSL_Verify_Server_Cert:s "
    "Last_IO_Errno:i Last_IO_Error:s Last_SQL_Errno:i Last_SQL_Error:s Replicate_Ignore_Server_Ids:s "
    "Source_Server_Id:i Source_UUID:s Source_Info_File:s SQL_Delay:i SQL_Remaining_Delay:i "
    "Replica_SQL_Running_State:s Source_Retry_Count:b Source_Bind:s Last_IO_Error_Timestamp:s "
    "Last_SQL_Error_Timestamp:s Source_SSL_Crl:s Source_SSL_Crlpath:s Retrieved_Gtid_Set:s "
    "Executed_Gtid_Set:s Auto_Position:i Replicate_Rewrite_DB:s Channel_Name:s Source_TLS_Version:s "
    "Source_public_key_path:s Get_Source_public_key:i Network_Namespace:s")

# SHOW REPLICA STATUS renamed these columns of SHOW SLAVE STATUS (8.0.22).
_OLD_NAMES = {
    "Replica_IO_State": "Slave_IO_State", "Source_Host": "Master_Host", "Source_User": "Master_User",
    "Source_Port": "Master_Port", "Source_Log_File": "Master_Log_File",
    "Read_Source_Log_Pos": "Read_Master_Log_Pos", "Relay_Source_Log_File": "Relay_Master_Log_File",
    "Replica_IO_Running": "Slave_IO_Running", "Replica_SQL_Running": "Slave_SQL_Running",
    "Exec_Source_Log_Pos": "Exec_Master_Log_Pos", "Source_SSL_Allowed": "Master_SSL_Allowed",
    "Source_SSL_CA_File": "Master_SSL_CA_File", "Source_SSL_CA_Path": "Master_SSL_CA_Path",
    "Source_SSL_Cert": "Master_SSL_Cert", "Source_SSL_Cipher": "Master_SSL_Cipher",
    "Source_SSL_Key": "Master_SSL_Key", "Seconds_Behind_Source": "Seconds_Behind_Master",
    "Source_SSL_Verify_Server_Cert": "Master_SSL_Verify_Server_Cert", "Source_Server_Id": "Master_Server_Id",
    "Source_UUID": "Master_UUID", "Source_Info_File": "Master_Info_File",
    "Replica_SQL_Running_State": "Slave_SQL_Running_State", "Source_Retry_Count": "Master_Retry_Count",
    "Source_Bind": "Master_Bind", "Source_SSL_Crl": "Master_SSL_Crl", "Source_SSL_Crlpath": "Master_SSL_Crlpath",
    "Source_TLS_Version": "Master_TLS_Version", "Source_public_key_path": "Master_public_key_path",
    "Get_Source_public_key": "Get_master_public_key",
}
_SINCE_57 = ("Replicate_Rewrite_DB", "Channel_Name", "Source_TLS_Version")
_SINCE_80 = ("Source_public_key_path", "Get_Source_public_key", "Network_Namespace")

BINLOG_STATUS = _cols("File:s Position:b Binlog_Do_DB:s Binlog_Ignore_DB:s Executed_Gtid_Set:s")
EVENTS = _cols("Log_name:s Pos:b Event_type:s Server_id:i End_log_pos:b Info:s")
REPLICAS_97 = _cols("Server_Id:i Host:s Port:i Source_Id:i Replica_UUID:s")
SLAVE_HOSTS = _cols("Server_id:i Host:s Port:i Master_id:i Slave_UUID:s")

CONNECTION_STATUS_57 = _cols(
    "CHANNEL_NAME:c GROUP_NAME:c SOURCE_UUID:c THREAD_ID:b SERVICE_STATE:c COUNT_RECEIVED_HEARTBEATS:b "
    "LAST_HEARTBEAT_TIMESTAMP:ts RECEIVED_TRANSACTION_SET:t LAST_ERROR_NUMBER:i LAST_ERROR_MESSAGE:s "
    "LAST_ERROR_TIMESTAMP:ts")
CONNECTION_STATUS_80 = CONNECTION_STATUS_57 + _cols(
    "LAST_QUEUED_TRANSACTION:c LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP:ts "
    "LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP:ts LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP:ts "
    "LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP:ts QUEUEING_TRANSACTION:c "
    "QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP:ts QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP:ts "
    "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP:ts")
APPLIER_CONFIGURATION_57 = _cols("CHANNEL_NAME:c DESIRED_DELAY:i")
APPLIER_CONFIGURATION_8023 = APPLIER_CONFIGURATION_57 + _cols(
    "PRIVILEGE_CHECKS_USER:t REQUIRE_ROW_FORMAT:c REQUIRE_TABLE_PRIMARY_KEY_CHECK:c "
    "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE:c ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE:t")

GLOBAL_VARIABLES = _cols("VARIABLE_NAME:s VARIABLE_VALUE:s")
STATUS = _cols("Variable_name:s Value:s")
GROUP_MEMBERS_57 = _cols("CHANNEL_NAME:c MEMBER_ID:c MEMBER_HOST:c MEMBER_PORT:i MEMBER_STATE:c")
GROUP_MEMBERS_802 = GROUP_MEMBERS_57 + _cols("MEMBER_ROLE:c MEMBER_VERSION:c")
GROUP_MEMBERS_8027 = GROUP_MEMBERS_802 + _cols("MEMBER_COMMUNICATION_STACK:c")
GROUP_MEMBER_STATS_57 = _cols(
    "CHANNEL_NAME:c VIEW_ID:c MEMBER_ID:c COUNT_TRANSACTIONS_IN_QUEUE:b COUNT_TRANSACTIONS_CHECKED:b "
    "COUNT_CONFLICTS_DETECTED:b COUNT_TRANSACTIONS_ROWS_VALIDATING:b TRANSACTIONS_COMMITTED_ALL_MEMBERS:t "
    "LAST_CONFLICT_FREE_TRANSACTION:t")
GROUP_MEMBER_STATS_802 = GROUP_MEMBER_STATS_57 + _cols(
    "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE:b COUNT_TRANSACTIONS_REMOTE_APPLIED:b "
    "COUNT_TRANSACTIONS_LOCAL_PROPOSED:b COUNT_TRANSACTIONS_LOCAL_ROLLBACK:b")

# Group Replication variables a member has: name -> the first version that has it.
_GROUP_VARIABLES = {
    "group_replication_group_name": (5, 7, 17), "group_replication_single_primary_mode": (5, 7, 17),
    "group_replication_enforce_update_everywhere_checks": (5, 7, 17),
    "group_replication_member_weight": (5, 7, 20), "group_replication_consistency": (8, 0, 14),
    "group_replication_view_change_uuid": (8, 0, 26),
}

# System variables: name -> kind ("s" string, "i" integer, "b" boolean: SELECT gives 1/0).
_VARIABLES_BASE = {
    "version": "s", "version_comment": "s", "hostname": "s", "port": "i", "server_id": "i", "server_uuid": "s",
    "gtid_mode": "s", "gtid_executed": "s", "gtid_purged": "s", "log_bin": "b", "log_slave_updates": "b",
    "sync_binlog": "i", "innodb_flush_log_at_trx_commit": "i", "relay_log_recovery": "b",
    "slave_parallel_workers": "i", "binlog_format": "s", "read_only": "b", "sql_mode": "s",
    "autocommit": "b", "max_allowed_packet": "i", "wait_timeout": "i", "character_set_client": "s",
}


@dataclass(frozen=True)
class Shape:
    """Everything version-dependent about the answers of one server version."""

    version: MySQLVersion
    replica_status_statements: dict[str, tuple[Col, ...]]   # statement -> columns
    binlog_status_statements: tuple[str, ...]
    replicas_statements: dict[str, tuple[Col, ...]]
    binary_logs: tuple[Col, ...]
    channels: bool
    tagged_gtids: bool
    tables: dict[str, tuple[Col, ...]]                       # performance_schema tables
    variables: dict[str, str]
    source_fatal_errno: int     # what the receiver reports for a dump refused by its source
    purged_refusal_error: str   # its Last_IO_Error when the source purged GTIDs it needs (sets left out)
    offers_tls: bool            # a default install offers TLS (certificates generated at first start)
    group_replication: bool = False         # can be a Group Replication member (5.7.17+)
    group_variables: tuple[str, ...] = ()   # the group_replication_* variables a member has
    group_stats_all_members: bool = False   # replication_group_member_stats lists every member (8.0.2+)
    #: the status variable group_replication_primary_member (5.7.17 to 8.0: documented in both
    #: manuals, deprecated in 8.0). 8.4 / 9.x are not given it: whether they have it is not
    #: verified here, and the collector asks only members without MEMBER_ROLE (5.7, 8.0.0-8.0.1)
    primary_member_status: bool = False
    logs_view_changes: bool = False         # a member joining logs a View_change transaction (before 8.3.0)
    offline_member_version: bool = False    # an OFFLINE member shows its MEMBER_VERSION (8.0.27+, assumed)

    def column_type(self, cols: tuple[Col, ...], name: str) -> int:
        for c in cols:
            if c.name.lower() == name.lower():
                return c.type
        raise KeyError(name)


def shape_for(version: MySQLVersion | str) -> Shape:
    """The answers of ``version`` (5.6 to 9.x)."""
    v = MySQLVersion.parse(version) if isinstance(version, str) else version
    t = v.triple
    cols = [c for c in REPLICA_STATUS_97
            if (t >= (5, 7, 0) or c.name not in _SINCE_57) and (t >= (8, 0, 0) or c.name not in _SINCE_80)]
    if t < (5, 7, 6):
        cols = [c for c in cols if c.name != "Channel_Name"]
    if t < (5, 7, 10):
        cols = [c for c in cols if c.name != "Source_TLS_Version"]
    old = tuple(Col(_OLD_NAMES.get(c.name, c.name), c.type) for c in cols)
    new = tuple(cols)
    replica_status: dict[str, tuple[Col, ...]] = {}
    if t < (8, 4, 0):
        replica_status["SHOW SLAVE STATUS"] = old
    if t >= (8, 0, 22):
        replica_status["SHOW REPLICA STATUS"] = new
    binlog_status = tuple(s for s, ok in (("SHOW MASTER STATUS", t < (8, 4, 0)),
                                          ("SHOW BINARY LOG STATUS", t >= (8, 2, 0))) if ok)
    replicas: dict[str, tuple[Col, ...]] = {}
    if t < (8, 4, 0):
        replicas["SHOW SLAVE HOSTS"] = SLAVE_HOSTS
    if t >= (8, 0, 22):
        replicas["SHOW REPLICAS"] = REPLICAS_97
    binary_logs = _cols("Log_name:s File_size:b" + (" Encrypted:s" if t >= (8, 0, 14) else ""))
    tables: dict[str, tuple[Col, ...]] = {}
    if t >= (5, 7, 2):
        tables["replication_connection_status"] = CONNECTION_STATUS_80 if t >= (8, 0, 2) else CONNECTION_STATUS_57
        tables["replication_applier_configuration"] = (APPLIER_CONFIGURATION_8023 if t >= (8, 0, 23)
                                                       else APPLIER_CONFIGURATION_57)
    if t >= (5, 7, 6):
        tables["global_variables"] = GLOBAL_VARIABLES
    if t >= (5, 7, 17):
        tables["replication_group_members"] = (GROUP_MEMBERS_8027 if t >= (8, 0, 27) else
                                               GROUP_MEMBERS_802 if t >= (8, 0, 2) else GROUP_MEMBERS_57)
        tables["replication_group_member_stats"] = GROUP_MEMBER_STATS_802 if t >= (8, 0, 2) else GROUP_MEMBER_STATS_57
    variables = dict(_VARIABLES_BASE)
    variables["enforce_gtid_consistency"] = "s" if t >= (5, 7, 6) else "b"
    if t >= (5, 7, 5):
        variables["slave_preserve_commit_order"] = "b"
    if t >= (5, 7, 8):
        variables["super_read_only"] = "b"
    if t >= (8, 0, 26):
        variables.update(log_replica_updates="b", replica_parallel_workers="i", replica_preserve_commit_order="b")
    if t < (8, 3, 0):
        variables.update(relay_log_info_repository="s", master_info_repository="s")
    if (5, 7, 2) <= t < (8, 3, 0):
        variables["slave_parallel_type"] = "s"
    if (8, 0, 26) <= t < (8, 3, 0):
        variables["replica_parallel_type"] = "s"
    return Shape(v, replica_status, binlog_status, replicas, binary_logs, channels=t >= (5, 7, 6),
                 tagged_gtids=t >= (8, 3, 0), tables=tables, variables=variables,
                 # 1236 on the 8.0 milestone tree 4c6353ea (before 8.0.11), 13114 on the 8.0 GA trees
                 # c958ce4a / 1e5f282a and on 8.4 / 9.x (see the module docstring)
                 source_fatal_errno=13114 if t >= (8, 0, 11) else 1236,
                 purged_refusal_error=PURGED_REFUSAL_9X if t >= (8, 0, 11) else PURGED_REFUSAL_OLD,
                 offers_tls=t >= (5, 7, 28),
                 group_replication=t >= (5, 7, 17),
                 group_variables=tuple(n for n, since in _GROUP_VARIABLES.items() if t >= since),
                 group_stats_all_members=t >= (8, 0, 2),
                 primary_member_status=(5, 7, 17) <= t < (8, 4, 0),
                 logs_view_changes=(5, 7, 17) <= t < (8, 3, 0),
                 offline_member_version=t >= (8, 0, 27))
