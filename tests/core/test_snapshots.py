"""Snapshots: typed, immutable values built from the rows a server returns."""
import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest

from gtid_core.errors import SnapshotError
from gtid_core.gtid_set import GtidSet
from gtid_core.snapshots import BinaryLog, ChannelSnapshot, Gtid, ServerSnapshot, variables_from_rows
from gtid_core.versions import MySQLVersion

DATA = Path(__file__).resolve().parents[1] / "data"
SRC = "b6e7b27c-e69b-11f1-8d81-02fc00000001"


def scenarios():
    return json.loads((DATA / "relaylog_mysql97_scenarios.json").read_text())


def test_server_from_real_97_rows():
    """Variables and binary logs captured from MySQL 9.7.4 become typed fields."""
    healthy = scenarios()["healthy"]
    s = ServerSnapshot.from_rows(healthy["source"]["variables"], binary_logs=healthy["source"]["binary_logs"],
                                 name="src")
    assert s.name == "src"
    assert s.server_uuid == SRC
    assert s.version == MySQLVersion.parse("9.7.4")
    assert s.gtid_mode == "ON"
    assert s.gtid_executed == GtidSet.parse(f"{SRC}:1-30:100:200:audit_tag:1-2:50:60")
    assert s.gtid_purged == GtidSet.EMPTY
    assert s.sync_binlog == 1 and s.innodb_flush_log_at_trx_commit == 1
    assert s.log_bin is True and s.relay_log_recovery is False
    assert s.relay_log_info_repository is None  # removed in 9.x: unknown, not a default
    assert [b.log_name for b in s.binary_logs] == ["binlog.000001", "binlog.000002", "binlog.000003", "binlog.000004"]
    assert s.binary_logs[0].previous_gtids == GtidSet.EMPTY
    assert s.binary_logs[3].previous_gtids == GtidSet.parse(f"{SRC}:1-29:100:200:audit_tag:1-2:50:60")


def test_snapshots_are_frozen():
    """A snapshot cannot be changed after construction."""
    s = ServerSnapshot.from_rows({"server_uuid": SRC})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.server_uuid = "x"  # type: ignore[misc]


def test_variable_names_case_insensitive_and_prefixed():
    """@@GLOBAL.GTID_EXECUTED and gtid_executed name the same variable; bytes are decoded."""
    s = ServerSnapshot.from_rows({"@@GLOBAL.GTID_EXECUTED": f"{SRC}:1-3".encode(), "Server_UUID": SRC.upper(),
                                  "@@version": b"5.7.44-log"})
    assert s.gtid_executed == GtidSet.parse(f"{SRC}:1-3")
    assert s.server_uuid == SRC
    assert s.version.triple == (5, 7, 44)


def test_missing_and_null_stay_unknown():
    """A missing or NULL variable is None, never 0 or an empty set."""
    s = ServerSnapshot.from_rows({"gtid_purged": None})
    assert s.gtid_purged is None and s.gtid_executed is None
    assert s.sync_binlog is None and s.binary_logs is None
    empty = ServerSnapshot.from_rows({"gtid_purged": ""}, binary_logs=[])
    assert empty.gtid_purged == GtidSet.EMPTY and empty.binary_logs == ()


def test_old_variable_names():
    """5.6-8.0 names (slave_parallel_workers, log_slave_updates) fill the same fields."""
    s = ServerSnapshot.from_rows({"slave_parallel_workers": "8", "slave_preserve_commit_order": "OFF",
                                  "log_slave_updates": "1", "enforce_gtid_consistency": "1",
                                  "relay_log_info_repository": "FILE", "master_info_repository": "file"})
    assert s.replica_parallel_workers == 8
    assert s.replica_preserve_commit_order is False
    assert s.log_replica_updates is True
    assert s.enforce_gtid_consistency == "ON"
    assert (s.relay_log_info_repository, s.master_info_repository) == ("FILE", "FILE")


@pytest.mark.parametrize(
    "variables, column",
    [
        ({"gtid_executed": "not-a-set"}, "gtid_executed"),
        ({"sync_binlog": "often"}, "sync_binlog"),
        ({"log_bin": "MAYBE"}, "log_bin"),
        ({"gtid_mode": "SOMETIMES"}, "gtid_mode"),
        ({"version": "unknown"}, "version"),
        ({"server_uuid": "zzz"}, "server_uuid"),
    ],
    ids=["gtid-set", "int", "bool", "enum", "version", "uuid"],
)
def test_bad_value_names_column_and_value(variables, column):
    """An unparseable value raises SnapshotError naming the column and quoting the value."""
    (value,) = variables.values()
    with pytest.raises(SnapshotError) as info:
        ServerSnapshot.from_rows(variables)
    assert column in str(info.value)
    assert repr(value) in str(info.value)


def test_variables_from_show_rows():
    """SHOW GLOBAL VARIABLES rows become a name -> value mapping."""
    rows = [{"Variable_name": "gtid_mode", "Value": "ON"}, {"Variable_name": "server_id", "Value": "7"}]
    assert variables_from_rows(rows) == {"gtid_mode": "ON", "server_id": "7"}


def test_binary_log_row():
    """A SHOW BINARY LOGS row with its Previous_gtids becomes a BinaryLog."""
    b = BinaryLog.from_row({"Log_name": "binlog.000003", "File_size": 5224, "Encrypted": "No",
                            "Previous_gtids": f"{SRC}:1-15"})
    assert b == BinaryLog("binlog.000003", 5224, False, GtidSet.parse(f"{SRC}:1-15"))
    with pytest.raises(SnapshotError):
        BinaryLog.from_row({"File_size": 1})


@pytest.mark.parametrize("values", [
    ("binlog.000003", 5224, False, f"{SRC}:1-15"),
    ("binlog.000001", None, None, None),
    ("binlog.000002", "120", "No", ""),
    ("binlog.000004", 10, True, "not a set"),
    ("binlog.000005", "big", False, None),
    ("binlog.000006", 10, 7, None),
    (None, 10, False, None),
    ("", 10, False, None),
])
def test_binary_log_from_values_is_from_row(values):
    """The audit's fast path (a binary_logs table row's values) converts and refuses exactly as
    the SHOW BINARY LOGS row path does, error text included."""
    row = dict(zip(("Log_name", "File_size", "Encrypted", "Previous_gtids"), values))

    def outcome(build):
        try:
            return build()
        except SnapshotError as exc:
            return f"SnapshotError: {exc}"

    expected = outcome(lambda: BinaryLog.from_row(row))
    assert outcome(lambda: BinaryLog.from_values(*values)) == expected


def test_channel_from_real_97_rows_with_error():
    """SHOW REPLICA STATUS and performance_schema rows from a 9.7 replica refused with 13114."""
    sc = scenarios()["source_restored_with_gtid_purged"]["channel"]
    ch = ChannelSnapshot.from_rows(sc["replica_status"], connection_status=sc["connection_status"],
                                   applier_status=sc["applier_status"],
                                   applier_configuration=sc["applier_configuration"])
    assert ch.channel_name == ""
    assert ch.source_uuid == SRC and ch.source_port == 39411
    assert ch.io_running == "NO" and ch.sql_running == "YES"
    assert ch.receiver_running is False and ch.applier_running is True
    assert ch.auto_position is True
    assert ch.last_io_errno == 13114
    assert "purged required binary logs" in ch.last_io_error
    assert ch.last_io_error_timestamp == dt.datetime(2026, 11, 22, 17, 46, 8)
    assert ch.receiver_service_state == "OFF"
    assert ch.last_queued_gtid == Gtid(SRC, None, 31)
    assert ch.queueing_transaction == ""
    assert ch.queueing_gtid is None
    assert ch.assign_gtids_to_anonymous_transactions_type == "OFF"


def test_channel_from_real_97_rows_mid_transaction():
    """A receiver stopped mid-transaction: QUEUEING_TRANSACTION is set and its timestamp parsed."""
    d = json.loads((DATA / "relaylog_mysql97_receiver_stopped_mid_transaction.json").read_text())["channel"]
    ch = ChannelSnapshot.from_rows(d["replica_status"], connection_status=d["connection_status"])
    assert ch.queueing_gtid == Gtid(SRC, None, 50)
    assert ch.queueing_transaction_start_queue_timestamp == dt.datetime(2026, 11, 22, 17, 46, 32, 110819)
    assert ch.applier_caught_up is False  # 'has read all relay log' but the partial group is not applied


# Column names of SHOW SLAVE STATUS on 5.6/5.7/8.0 (from the MySQL reference manual, not captured).
SLAVE_STATUS_56 = {
    "Slave_IO_State": "", "Master_Host": "10.0.0.1", "Master_User": "repl", "Master_Port": "3306",
    "Master_Log_File": "mysql-bin.000012", "Read_Master_Log_Pos": "120", "Relay_Log_File": "relay.000002",
    "Relay_Log_Pos": "283", "Relay_Master_Log_File": "mysql-bin.000012", "Slave_IO_Running": "No",
    "Slave_SQL_Running": "Yes", "Last_Errno": "0", "Exec_Master_Log_Pos": "120",
    "Seconds_Behind_Master": None, "Last_IO_Errno": "1236",
    "Last_IO_Error": "Got fatal error 1236 from master when reading data from binary log: 'The slave is "
                     "connecting using CHANGE MASTER TO MASTER_AUTO_POSITION = 1, but the master has purged "
                     "binary logs containing GTIDs that the slave requires.'",
    "Last_SQL_Errno": "0", "Last_SQL_Error": "", "Master_Server_Id": "1",
    "Master_UUID": "3E11FA47-71CA-11E1-9E33-C80AA9429562", "Slave_SQL_Running_State":
        "Slave has read all relay log; waiting for the slave I/O thread to update it",
    "Last_IO_Error_Timestamp": "141120 10:05:33", "Last_SQL_Error_Timestamp": "",
    "Retrieved_Gtid_Set": "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5",
    "Executed_Gtid_Set": "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", "Auto_Position": "1",
}


def test_channel_from_56_slave_status():
    """Old column names (Master_Host, Slave_IO_Running, ...) and 'YYMMDD HH:MM:SS' timestamps parse."""
    ch = ChannelSnapshot.from_rows(SLAVE_STATUS_56)
    assert ch.channel_name == ""
    assert ch.source_host == "10.0.0.1" and ch.source_port == 3306
    assert ch.source_uuid == "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert ch.io_running == "NO"
    assert ch.seconds_behind_source is None
    assert ch.last_io_errno == 1236
    assert ch.last_io_error_timestamp == dt.datetime(2014, 11, 20, 10, 5, 33)
    assert ch.last_sql_error_timestamp is None
    assert ch.applier_caught_up is True
    assert ch.receiver_service_state is None  # no performance_schema on 5.6: unknown


def test_unset_timestamp_is_none():
    """'0000-00-00 00:00:00.000000' means unset."""
    ch = ChannelSnapshot.from_rows(None, connection_status={
        "CHANNEL_NAME": "c1", "SERVICE_STATE": "ON",
        "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP": "0000-00-00 00:00:00.000000"})
    assert ch.queueing_transaction_start_queue_timestamp is None
    assert ch.channel_name == "c1"


@pytest.mark.parametrize(
    "status, column",
    [
        ({"Retrieved_Gtid_Set": "abc:1"}, "Retrieved_Gtid_Set"),
        ({"Slave_IO_Running": "Perhaps"}, "Slave_IO_Running"),
        ({"Last_IO_Error_Timestamp": "yesterday"}, "Last_IO_Error_Timestamp"),
        ({"Master_Port": "port"}, "Master_Port"),
    ],
)
def test_channel_bad_value_names_column(status, column):
    """An unparseable channel column raises SnapshotError naming it and quoting the value."""
    (value,) = status.values()
    with pytest.raises(SnapshotError) as info:
        ChannelSnapshot.from_rows(status)
    assert column in str(info.value) and repr(value) in str(info.value)


def test_channel_needs_a_row():
    """A channel without any row is an error, not an empty channel."""
    with pytest.raises(SnapshotError):
        ChannelSnapshot.from_rows(None)


def test_bad_queueing_transaction():
    """A QUEUEING_TRANSACTION that is not one GTID raises SnapshotError naming the column."""
    with pytest.raises(SnapshotError, match="QUEUEING_TRANSACTION"):
        ChannelSnapshot.from_rows(None, connection_status={"QUEUEING_TRANSACTION": f"{SRC}:1-2"})


def test_gtid_parse_and_text():
    """Gtid parses one (tagged) GTID, prints it, and is found in a GtidSet."""
    g = Gtid.parse(f"{SRC.upper()}:Audit_Tag:50")
    assert g == Gtid(SRC, "audit_tag", 50)
    assert str(g) == f"{SRC}:audit_tag:50"
    assert g in GtidSet.parse(f"{SRC}:1:audit_tag:50")
    assert g.as_set() == GtidSet.parse(f"{SRC}:audit_tag:50")


@pytest.mark.mysql
def test_live_server_snapshot(mysql_server):
    """On a real server: SHOW GLOBAL VARIABLES and SHOW BINARY LOGS rows build a snapshot whose sets equal
    the server's own @@GLOBAL values."""
    variables = variables_from_rows(mysql_server.query("SHOW GLOBAL VARIABLES"))
    logs = mysql_server.query("SHOW BINARY LOGS")
    for log in logs:
        events = mysql_server.query(f"SHOW BINLOG EVENTS IN '{log['Log_name']}' LIMIT 2")
        log["Previous_gtids"] = events[1]["Info"] if len(events) > 1 else None
    snap = ServerSnapshot.from_rows(variables, binary_logs=logs, name="standalone")
    assert snap.server_uuid == mysql_server.query_value("SELECT @@server_uuid")
    assert snap.gtid_executed == GtidSet.parse(mysql_server.query_value("SELECT @@GLOBAL.gtid_executed"))
    assert snap.gtid_purged == GtidSet.parse(mysql_server.query_value("SELECT @@GLOBAL.gtid_purged"))
    assert snap.version.triple >= (8, 0, 0) and snap.gtid_mode == "ON"
    assert snap.binary_logs and all(b.previous_gtids is not None for b in snap.binary_logs)
