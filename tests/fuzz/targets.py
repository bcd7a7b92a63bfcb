"""Fuzz targets: the gtid_core parsers that read what servers send.

Each target takes raw bytes and feeds them to one parser; it may raise only the exceptions
gtid_core documents (:data:`ALLOWED`, the classes of ``gtid_core/errors.py``). Anything else --
or a broken property (``parse(str(s)) == s``) -- is a crash. The same functions serve the
coverage-guided runs (``tests/fuzz/run_fuzz.py``, atheris) and the replay of every stored input
(``tests/fuzz/test_fuzz_replay.py``, plain pytest, no atheris needed).

The structured targets read their input two ways, so that real server rows can seed the corpus:

* bytes that are a JSON document of the right shape (a row, or a list of rows) are used as is;
* anything else is decoded by :class:`ByteReader` into rows: column names from the names the
  server uses (and some it does not), values of every type mysql-connector can hand back.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable, Mapping
from typing import Any

from gtid_core import ChannelSnapshot, GtidSet, ServerSnapshot, variables_from_rows
from gtid_core.errors import GtidParseError, SnapshotError, VersionParseError
from gtid_core.relay_log import ParserState, events_from_rows, parse_relay_log

__all__ = ["ALLOWED", "TARGETS", "ByteReader", "gtid_set_target", "server_snapshot_target",
           "channel_snapshot_target", "relay_log_target"]

#: The documented exceptions (gtid_core/errors.py); every other exception is a crash.
ALLOWED = (GtidParseError, SnapshotError, VersionParseError)

UUIDS = ("3e11fa47-71ca-11e1-9e33-c80aa9429562", "3E11FA47-71CA-11E1-9E33-C80AA9429562",
         "85fe29c4-e714-11f1-ba65-02fc00000001", "00000000-0000-0000-0000-000000000000")

#: Text fragments a server sends, or nearly does.
WORDS = (
    "", " ", "\n", ",", ":", "-", "ON", "OFF", "Yes", "No", "Connecting", "YES", "NO", "0", "1", "2",
    "ON_PERMISSIVE", "OFF_PERMISSIVE", "WARN", "ROW", "STATEMENT", "MIXED", "TABLE", "FILE",
    "9.7.4-2", "5.6.21-log", "8.0.36", "5.7.44-log", "x.y", "9223372036854775807", "-1",
    "0000-00-00 00:00:00.000000", "2026-11-23 08:00:00.123456", "binlog.000001", "relay.000002",
    "BEGIN", "COMMIT", "ROLLBACK", "XA START X'01',X'',1", "XA COMMIT X'01',X'',1", "XA END",
    "SET @@SESSION.GTID_NEXT= '", "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'", "'", "/* xid=12 */",
    "tag", "TAG_1", ":1-5:7:9-10", ":1", ":0", ":5-3", ":1-9223372036854775806",
    *UUIDS,
)

#: Event types SHOW RELAYLOG EVENTS prints (9.7, and older spellings).
EVENT_TYPES = (
    "Format_desc", "Previous_gtids", "Gtid", "Gtid_tagged_log_event", "Anonymous_Gtid", "Query", "Xid",
    "Table_map", "Write_rows", "Update_rows", "Delete_rows", "Write_rows_v1", "Rows_query", "Rotate",
    "Intvar", "RAND", "User var", "Transaction_payload", "XA_prepare", "Stop", "Heartbeat",
    "Incident", "Unknown", "gtid", "GTID",
)

SERVER_COLUMNS = (
    "server_uuid", "server_id", "version", "gtid_mode", "gtid_executed", "gtid_purged",
    "enforce_gtid_consistency", "log_bin", "log_replica_updates", "log_slave_updates", "sync_binlog",
    "innodb_flush_log_at_trx_commit", "binlog_format", "read_only", "super_read_only",
    "relay_log_recovery", "relay_log_info_repository", "master_info_repository",
    "replica_parallel_workers", "slave_parallel_workers", "replica_preserve_commit_order",
    "slave_preserve_commit_order", "@@GLOBAL.gtid_executed", "@@global.GTID_PURGED", "@@version",
    "Variable_name", "Value",
)
BINLOG_COLUMNS = ("Log_name", "File_size", "Encrypted", "Previous_gtids", "previous_gtids_read")
CHANNEL_COLUMNS = (
    "Channel_Name", "Source_Host", "Master_Host", "Source_Port", "Master_Port", "Source_UUID", "Master_UUID",
    "Source_Server_Id", "Master_Server_Id", "Replica_IO_Running", "Slave_IO_Running", "Replica_SQL_Running",
    "Slave_SQL_Running", "Replica_SQL_Running_State", "Retrieved_Gtid_Set", "Executed_Gtid_Set",
    "Auto_Position", "Last_IO_Errno", "Last_IO_Error", "Last_SQL_Errno", "Last_SQL_Error",
    "Last_IO_Error_Timestamp", "Last_SQL_Error_Timestamp", "Seconds_Behind_Source", "Seconds_Behind_Master",
    "Relay_Log_File", "Relay_Log_Pos", "Relay_Source_Log_File", "Relay_Master_Log_File",
    "Source_Log_File", "Master_Log_File", "Read_Source_Log_Pos", "Read_Master_Log_Pos",
    "Exec_Source_Log_Pos", "Exec_Master_Log_Pos", "SQL_Delay",
)
CONNECTION_COLUMNS = (
    "CHANNEL_NAME", "SOURCE_UUID", "SERVICE_STATE", "RECEIVED_TRANSACTION_SET", "LAST_ERROR_NUMBER",
    "LAST_ERROR_MESSAGE", "LAST_QUEUED_TRANSACTION", "QUEUEING_TRANSACTION",
    "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP",
)
APPLIER_COLUMNS = ("CHANNEL_NAME", "SERVICE_STATE", "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE",
                   "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE", "DESIRED_DELAY")
RELAY_COLUMNS = ("Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info")


class ByteReader:
    """Deterministic choices from a byte string (atheris' FuzzedDataProvider, without atheris).

    Reads past the end yield zeros, so every input decodes to something."""

    def __init__(self, data: bytes):
        self.data = data
        self.at = 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            return 0
        value = self.data[self.at]
        self.at += 1
        return value

    def remaining(self) -> int:
        return max(0, len(self.data) - self.at)

    def uint(self, size: int) -> int:
        value = 0
        for _ in range(size):
            value = (value << 8) | self.byte()
        return value

    def pick(self, options):
        return options[self.byte() % len(options)]

    def raw(self, limit: int = 40) -> bytes:
        size = self.byte() % (limit + 1)
        chunk = self.data[self.at:self.at + size]
        self.at += len(chunk)
        return chunk

    def text(self) -> str:
        """A string: server-like fragments glued together, or raw bytes as UTF-8."""
        kind = self.byte() % 4
        if kind == 3:
            return self.raw().decode("utf-8", "replace")
        parts = [self.pick(WORDS) for _ in range(1 + self.byte() % 4)]
        if kind == 2:
            parts.append(str(self.uint(2)))
        return "".join(parts)

    def value(self) -> Any:
        """Any type mysql-connector can return for a column (and a few it cannot)."""
        kind = self.byte() % 12
        if kind <= 4:
            return self.text()
        if kind == 5:
            return self.text().encode("utf-8")
        if kind == 6:
            return self.raw()
        if kind == 7:
            return self.uint(8) - (1 << 63) if self.byte() & 1 else self.uint(1)
        if kind == 8:
            return None
        if kind == 9:
            return bool(self.byte() & 1)
        if kind == 10:
            return decimal.Decimal(self.uint(2)) / 10
        return dt.datetime(2026, 1, 1) + dt.timedelta(seconds=self.uint(3))

    def row(self, columns: tuple[str, ...], max_columns: int = 12) -> dict[str, Any]:
        row: dict[str, Any] = {}
        for _ in range(self.byte() % (max_columns + 1)):
            name = self.pick(columns)
            style = self.byte() % 8
            if style == 0:
                name = name.upper()
            elif style == 1:
                name = name.lower()
            elif style == 2:
                name = self.text()
            row[name] = self.value()
        return row


def _json(data: bytes) -> Any:
    """The JSON document ``data`` holds, or None."""
    if not data[:1] in (b"{", b"["):
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _is_row(value: Any) -> bool:
    return isinstance(value, dict)


def _call(func: Callable[[], Any]) -> Any:
    """Run a parser; a documented exception is a valid answer (None), any other one propagates."""
    try:
        return func()
    except ALLOWED:
        return None


# ------------------------------------------------------------------------------------------------
# targets

def gtid_set_target(data: bytes) -> None:
    """GtidSet.parse over bytes and their text; a parsed set survives its own printed form."""
    for given in (data, data.decode("utf-8", "replace")):
        parsed = _call(lambda: GtidSet.parse(given))
        if parsed is None:
            continue
        printed = str(parsed)
        again = GtidSet.parse(printed)   # its own output must parse, and to the same set
        assert again == parsed, f"parse(str(s)) != s for {given!r}: {printed!r}"
        assert str(again) == printed, f"printing is not stable for {given!r}: {printed!r} then {str(again)!r}"
        assert not (parsed - parsed) and (parsed | parsed) == parsed, f"set laws fail for {given!r}"
        assert GtidSet.parse(parsed.to_text(multiline=False)) == parsed, f"one-line form differs for {given!r}"


def server_snapshot_target(data: bytes) -> None:
    """ServerSnapshot.from_rows (and variables_from_rows) over arbitrary variable rows."""
    doc = _json(data)
    if isinstance(doc, dict) and _is_row(doc.get("variables", {})):
        variables = doc.get("variables", {})
        logs = doc.get("binary_logs")
        logs = [r for r in logs if _is_row(r)] if isinstance(logs, list) else None
        name_rows = doc.get("variable_rows")
        name_rows = [r for r in name_rows if _is_row(r)] if isinstance(name_rows, list) else []
    else:
        reader = ByteReader(data)
        variables = reader.row(SERVER_COLUMNS, 16)
        logs = None if reader.byte() & 1 else [reader.row(BINLOG_COLUMNS, 5) for _ in range(reader.byte() % 4)]
        name_rows = [reader.row(("Variable_name", "Value", "VARIABLE_NAME", "VARIABLE_VALUE"), 3)
                     for _ in range(reader.byte() % 3)]
    _call(lambda: ServerSnapshot.from_rows(variables, binary_logs=logs, name="fuzz"))
    merged = _call(lambda: variables_from_rows(name_rows))
    if merged is not None:
        _call(lambda: ServerSnapshot.from_rows(merged, name="fuzz"))


def channel_snapshot_target(data: bytes) -> None:
    """ChannelSnapshot.from_rows over an arbitrary SHOW REPLICA STATUS row and p_s rows."""
    doc = _json(data)
    if isinstance(doc, dict) and any(k in doc for k in ("replica_status", "connection_status")):
        rows = [doc.get(k) if _is_row(doc.get(k)) else None
                for k in ("replica_status", "connection_status", "applier_status", "applier_configuration")]
    else:
        reader = ByteReader(data)
        rows = []
        for columns in (CHANNEL_COLUMNS, CONNECTION_COLUMNS, APPLIER_COLUMNS, APPLIER_COLUMNS):
            rows.append(None if reader.byte() % 5 == 0 else reader.row(columns, 14))
    replica_status, connection_status, applier_status, applier_configuration = rows
    _call(lambda: ChannelSnapshot.from_rows(replica_status, connection_status=connection_status,
                                            applier_status=applier_status,
                                            applier_configuration=applier_configuration))


def _relay_row(reader: ByteReader, seq: int) -> dict[str, Any]:
    """A SHOW RELAYLOG EVENTS row, mostly well-formed, sometimes not."""
    if reader.byte() % 8 == 0:
        return reader.row(RELAY_COLUMNS, 8)
    event_type = reader.pick(EVENT_TYPES) if reader.byte() % 6 else reader.text()
    info: Any
    choice = reader.byte() % 6
    if choice == 0:
        info = f"SET @@SESSION.GTID_NEXT= '{reader.pick(UUIDS)}:{reader.text() if reader.byte() & 1 else reader.uint(2)}'"
    elif choice == 1:
        info = reader.pick(("BEGIN", "COMMIT", "ROLLBACK", "COMMIT /* implicit, from Xid_log_event */",
                            "XA START X'01',X'',1", "XA END X'01',X'',1", "XA PREPARE X'01',X'',1",
                            "XA COMMIT X'01',X'',1", "XA ROLLBACK X'01',X'',1", "use `db`; CREATE TABLE t (a INT)"))
    elif choice == 2:
        info = reader.value()
    else:
        info = reader.text()
    return {"Log_name": reader.pick(("relay.000002", "relay.000003")) if reader.byte() % 8 else reader.value(),
            "Pos": 4 + seq * 7 if reader.byte() % 8 else reader.value(),
            "Event_type": event_type, "Server_id": reader.value() if reader.byte() % 8 == 0 else 101,
            "End_log_pos": reader.uint(2), "Info": info}


def relay_log_target(data: bytes) -> None:
    """parse_relay_log and events_from_rows over arbitrary SHOW RELAYLOG EVENTS rows."""
    doc = _json(data)
    if isinstance(doc, list) and all(_is_row(r) for r in doc):
        rows = doc
        initial = ParserState.NONE
    else:
        reader = ByteReader(data)
        initial = reader.pick(tuple(ParserState))
        rows = [_relay_row(reader, seq) for seq in range(reader.byte() % 24)]
    result = _call(lambda: parse_relay_log(rows, initial_state=initial))
    if result is not None:
        assert result.event_count == len(rows), f"{result.event_count} events counted for {len(rows)} rows"
        if result.state in (ParserState.NONE, ParserState.ERROR):
            assert result.dangling_gtid is None and result.dangling_start is None, "dangling outside a transaction"
    events = _call(lambda: events_from_rows(rows))
    if events is not None:
        _call(lambda: parse_relay_log(events))


#: name -> target; the names are the folders under tests/data/fuzz/.
TARGETS: Mapping[str, Callable[[bytes], None]] = {
    "gtid_set": gtid_set_target,
    "server_snapshot": server_snapshot_target,
    "channel_snapshot": channel_snapshot_target,
    "relay_log": relay_log_target,
}
