"""Typed, immutable snapshots of what a MySQL server reported, with no connection in sight.

Every constructor takes plain mappings keyed by the server's own column or variable names
(case-insensitive; ``@@GLOBAL.`` prefixes are accepted) with values as the server or the connector
returns them (str, int, bytes, datetime or None). Conventions:

* NULL or a missing column stays ``None`` ("unknown"), never 0 or an empty set.
* The timestamp ``0000-00-00 00:00:00.000000`` and an empty timestamp mean "unset" (``None``).
* A value that cannot be parsed raises :class:`SnapshotError` naming the column and quoting the
  value, so the caller can turn one bad server into a finding instead of a crashed run.

Old (5.6 - 8.0) and new (8.0.22+) column names are both accepted: ``Master_Host`` and
``Source_Host``, ``Slave_IO_Running`` and ``Replica_IO_Running``, ``slave_parallel_workers`` and
``replica_parallel_workers``, ...
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

from gtid_core.errors import GtidParseError, SnapshotError, VersionParseError
from gtid_core.gtid_set import GtidSet
from gtid_core.versions import MySQLVersion

__all__ = [
    "BinaryLog",
    "ChannelSnapshot",
    "Gtid",
    "ServerSnapshot",
    "variables_from_rows",
]

_UNSET_TIMESTAMP_RE = re.compile(r"0000-00-00 00:00:00(\.0+)?\Z")
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\Z")


class Gtid(NamedTuple):
    """One GTID: ``uuid:gno`` or ``uuid:tag:gno`` (tag None when untagged).

    A tuple, so ``gtid in gtid_set`` works with the GtidSet contract ``(uuid, tag, gno) in s``.
    """

    uuid: str
    tag: str | None
    gno: int

    @classmethod
    def parse(cls, text: str) -> "Gtid":
        """Parse one GTID as the server prints it; raise GtidParseError for anything else."""
        gtid_set = GtidSet.parse(text)
        blocks = list(gtid_set)
        if len(blocks) != 1 or blocks[0][2] != blocks[0][3]:
            raise GtidParseError(f"{text!r} is not exactly one GTID")
        uuid, tag, gno, _ = blocks[0]
        return cls(uuid, tag, gno)

    def __str__(self) -> str:
        if self.tag is None:
            return f"{self.uuid}:{self.gno}"
        return f"{self.uuid}:{self.tag}:{self.gno}"

    def as_set(self) -> GtidSet:
        """The one-element GtidSet holding this GTID."""
        return GtidSet.from_intervals([(self.uuid, self.tag, self.gno, self.gno)])


# --------------------------------------------------------------------------------------------
# Row access and value conversion
# --------------------------------------------------------------------------------------------

_MISSING = object()


def _normalise_key(key: Any) -> str:
    if isinstance(key, (bytes, bytearray)):
        key = bytes(key).decode("utf-8", "replace")
    key = str(key).strip().lower()
    for prefix in ("@@global.", "@@session.", "@@"):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


class _Row:
    """A case-insensitive view of one row, remembering which statement it came from."""

    def __init__(self, row: Mapping[str, Any] | None, what: str) -> None:
        if row is not None and not isinstance(row, Mapping):
            raise SnapshotError(f"{what}: expected a mapping of column -> value, got {row!r}")
        self.what = what
        self.values: dict[str, Any] = {}
        self.names: dict[str, str] = {}
        for key, value in (row or {}).items():
            norm = _normalise_key(key)
            self.values[norm] = value
            self.names[norm] = str(key)

    def __bool__(self) -> bool:
        return bool(self.values)

    def get(self, *names: str) -> tuple[str, Any]:
        """(column name as given, value) for the first of ``names`` present; value _MISSING if none."""
        for name in names:
            norm = name.lower()
            if norm in self.values:
                return self.names[norm], self.values[norm]
        return names[0], _MISSING

    def text(self, *names: str) -> str | None:
        column, value = self.get(*names)
        return _to_text(self.what, column, value)

    def int(self, *names: str) -> int | None:
        column, value = self.get(*names)
        return _to_int(self.what, column, value)

    def bool(self, *names: str) -> bool | None:
        column, value = self.get(*names)
        return _to_bool(self.what, column, value)

    def gtid_set(self, *names: str) -> GtidSet | None:
        column, value = self.get(*names)
        return _to_gtid_set(self.what, column, value)

    def timestamp(self, *names: str) -> _dt.datetime | None:
        column, value = self.get(*names)
        return _to_timestamp(self.what, column, value)

    def choice(self, allowed: Iterable[str], *names: str, aliases: Mapping[str, str] | None = None) -> str | None:
        column, value = self.get(*names)
        text = _to_text(self.what, column, value)
        if text is None:
            return None
        upper = text.strip().upper()
        if aliases and upper in aliases:
            upper = aliases[upper]
        allowed = tuple(allowed)
        if upper not in allowed:
            raise SnapshotError(
                f"{self.what}: column {column!r} has value {value!r}, expected one of {', '.join(allowed)}"
            )
        return upper


def _to_text(what: str, column: str, value: Any) -> str | None:
    if value is _MISSING or value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise SnapshotError(f"{what}: column {column!r} has non-UTF-8 value {value!r}") from None
    if isinstance(value, bool):
        raise SnapshotError(f"{what}: column {column!r} has value {value!r}, expected text")
    if isinstance(value, (str, int)):
        return str(value)
    raise SnapshotError(f"{what}: column {column!r} has value {value!r} of type {type(value).__name__}")


def _to_int(what: str, column: str, value: Any) -> int | None:
    if value is _MISSING or value is None:
        return None
    if isinstance(value, bool):
        raise SnapshotError(f"{what}: column {column!r} has value {value!r}, expected an integer")
    if isinstance(value, int):
        return value
    text = _to_text(what, column, value)
    assert text is not None
    stripped = text.strip()
    if re.fullmatch(r"-?\d+", stripped):
        return int(stripped)
    raise SnapshotError(f"{what}: column {column!r} has value {value!r}, expected an integer")


_TRUE = {"ON", "YES", "1", "TRUE"}
_FALSE = {"OFF", "NO", "0", "FALSE"}


def _to_bool(what: str, column: str, value: Any) -> bool | None:
    if value is _MISSING or value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value in (0, 1):
            return bool(value)
        raise SnapshotError(f"{what}: column {column!r} has value {value!r}, expected ON/OFF")
    text = _to_text(what, column, value)
    assert text is not None
    upper = text.strip().upper()
    if upper in _TRUE:
        return True
    if upper in _FALSE:
        return False
    raise SnapshotError(f"{what}: column {column!r} has value {value!r}, expected ON/OFF")


def _to_gtid_set(what: str, column: str, value: Any) -> GtidSet | None:
    if value is _MISSING or value is None:
        return None
    if isinstance(value, GtidSet):
        return value
    text = _to_text(what, column, value)
    assert text is not None
    try:
        return GtidSet.parse(text)
    except GtidParseError as exc:
        raise SnapshotError(f"{what}: column {column!r} has value {value!r}, not a GTID set ({exc})") from None


def _to_timestamp(what: str, column: str, value: Any) -> _dt.datetime | None:
    if value is _MISSING or value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value
    text = _to_text(what, column, value)
    assert text is not None
    text = text.strip()
    if not text or _UNSET_TIMESTAMP_RE.match(text):
        return None
    try:
        return _dt.datetime.fromisoformat(text)
    except ValueError:
        pass
    try:  # SHOW SLAVE STATUS Last_IO_Error_Timestamp: 'YYMMDD HH:MM:SS'
        return _dt.datetime.strptime(text, "%y%m%d %H:%M:%S")
    except ValueError:
        raise SnapshotError(f"{what}: column {column!r} has value {value!r}, not a timestamp") from None


def _to_transaction(what: str, column: str, value: Any) -> str | None:
    """A p_s transaction column: '' (none), 'ANONYMOUS', or one GTID (canonical text)."""
    text = _to_text(what, column, value)
    if text is None:
        return None
    text = text.strip()
    if text == "" or text.upper() == "ANONYMOUS":
        return text.upper()
    try:
        return str(Gtid.parse(text))
    except GtidParseError as exc:
        raise SnapshotError(f"{what}: column {column!r} has value {value!r}, not a GTID ({exc})") from None


def variables_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Turn ``SHOW GLOBAL VARIABLES`` rows (Variable_name, Value) into one name -> value mapping."""
    out: dict[str, Any] = {}
    for row in rows:
        r = _Row(row, "SHOW GLOBAL VARIABLES")
        name = r.text("Variable_name")
        column, value = r.get("Value")
        if name is None or value is _MISSING:
            raise SnapshotError(f"SHOW GLOBAL VARIABLES: row {row!r} lacks Variable_name or Value")
        out[name] = value
    return out


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BinaryLog:
    """One binary log file (``SHOW BINARY LOGS``) with its ``Previous_gtids`` event (the Info of
    the second row of ``SHOW BINLOG EVENTS IN file``): the GTIDs of every file before it."""

    log_name: str
    file_size: int | None = None
    encrypted: bool | None = None
    previous_gtids: GtidSet | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "BinaryLog":
        """Build from a mapping with Log_name, File_size, Encrypted and Previous_gtids."""
        r = _Row(row, "SHOW BINARY LOGS")
        name = r.text("Log_name")
        if not name:
            raise SnapshotError(f"SHOW BINARY LOGS: row {row!r} has no Log_name")
        return cls(
            log_name=name,
            file_size=r.int("File_size"),
            encrypted=r.bool("Encrypted"),
            previous_gtids=r.gtid_set("Previous_gtids"),
        )

    @classmethod
    def from_values(cls, log_name: Any, file_size: Any = None, encrypted: Any = None,
                    previous_gtids: Any = None) -> "BinaryLog":
        """:meth:`from_row` for values already named (a binary_logs table row): the same
        conversions and errors, without building a case-insensitive row view per file, which
        was half the cost of a snapshot with hundreds of binary logs."""
        what = "SHOW BINARY LOGS"
        name = _to_text(what, "Log_name", log_name)
        if not name:
            row = {"Log_name": log_name, "File_size": file_size, "Encrypted": encrypted,
                   "Previous_gtids": previous_gtids}
            raise SnapshotError(f"SHOW BINARY LOGS: row {row!r} has no Log_name")
        return cls(
            log_name=name,
            file_size=_to_int(what, "File_size", file_size),
            encrypted=_to_bool(what, "Encrypted", encrypted),
            previous_gtids=_to_gtid_set(what, "Previous_gtids", previous_gtids),
        )


_GTID_MODES = ("OFF", "OFF_PERMISSIVE", "ON_PERMISSIVE", "ON", "UPGRADE_STEP_1", "UPGRADE_STEP_2")


@dataclass(frozen=True)
class ServerSnapshot:
    """What one server said about itself: identity, GTID sets, settings, binary logs.

    ``name`` is the server's name in the audit inventory (None when built without one).
    ``read_at`` is the instant the collector's read of the GTID variables (gtid_executed,
    gtid_purged) returned, ``read_started_at`` the instant that statement was sent -- not server
    variables: the collector's own columns. None = unknown. The pair checks need the replica's
    read to have returned before the source's started (``replica.read_at < source.read_started_at``);
    without ``read_started_at`` they compare the two ``read_at`` (end) instants, which leaves a
    window as long as the source's one SELECT.

    ``master_info_repository`` (5.6.2 - 8.2; gone in 8.3+, where None is its truthful value) and
    ``replica_parallel_type`` (``slave_parallel_type`` 5.7.2+, ``replica_parallel_type`` 8.0.26+,
    deprecated 8.0.29, gone in 8.3+) stay None when not read or when the server has no such
    variable.
    """

    name: str | None = None
    server_uuid: str | None = None
    server_id: int | None = None
    version: MySQLVersion | None = None
    gtid_mode: str | None = None
    gtid_executed: GtidSet | None = None
    gtid_purged: GtidSet | None = None
    enforce_gtid_consistency: str | None = None
    log_bin: bool | None = None
    log_replica_updates: bool | None = None
    sync_binlog: int | None = None
    innodb_flush_log_at_trx_commit: int | None = None
    relay_log_recovery: bool | None = None
    relay_log_info_repository: str | None = None
    master_info_repository: str | None = None
    replica_parallel_workers: int | None = None
    replica_parallel_type: str | None = None
    replica_preserve_commit_order: bool | None = None
    binlog_format: str | None = None
    read_only: bool | None = None
    super_read_only: bool | None = None
    binary_logs: tuple[BinaryLog, ...] | None = None
    read_at: _dt.datetime | None = None
    read_started_at: _dt.datetime | None = None

    @classmethod
    def from_rows(
        cls,
        variables: Mapping[str, Any],
        *,
        binary_logs: Iterable[Mapping[str, Any] | BinaryLog] | None = None,
        name: str | None = None,
    ) -> "ServerSnapshot":
        """Build from global variables (name -> value, e.g. ``@@GLOBAL.gtid_executed`` or
        ``gtid_executed``) and optionally the binary log rows (oldest first, as SHOW BINARY LOGS
        lists them). ``binary_logs=None`` means "not read" (unknown), ``[]`` means "none".
        ``read_at`` and ``read_started_at`` entries (the collector's columns: when the read of
        these variables returned / was sent; datetime or ISO text) fill those fields."""
        v = _Row(variables, "global variables")
        uuid = v.text("server_uuid")
        if uuid is not None:
            uuid = uuid.strip().lower()
            if not _UUID_RE.match(uuid):
                raise SnapshotError(f"global variables: column 'server_uuid' has value {uuid!r}, not a UUID")
        version_column, version_value = v.get("version")
        version = None
        version_text = _to_text("global variables", version_column, version_value)
        if version_text is not None:
            try:
                version = MySQLVersion.parse(version_text)
            except VersionParseError as exc:
                raise SnapshotError(f"global variables: column {version_column!r}: {exc}") from None
        logs: tuple[BinaryLog, ...] | None = None
        if binary_logs is not None:
            logs = tuple(b if isinstance(b, BinaryLog) else BinaryLog.from_row(b) for b in binary_logs)
        return cls(
            name=name,
            server_uuid=uuid,
            server_id=v.int("server_id"),
            version=version,
            gtid_mode=v.choice(_GTID_MODES, "gtid_mode", aliases={"0": "OFF", "1": "ON"}),
            gtid_executed=v.gtid_set("gtid_executed"),
            gtid_purged=v.gtid_set("gtid_purged"),
            enforce_gtid_consistency=v.choice(
                ("OFF", "ON", "WARN"), "enforce_gtid_consistency", aliases={"0": "OFF", "1": "ON", "2": "WARN"}
            ),
            log_bin=v.bool("log_bin"),
            log_replica_updates=v.bool("log_replica_updates", "log_slave_updates"),
            sync_binlog=v.int("sync_binlog"),
            innodb_flush_log_at_trx_commit=v.int("innodb_flush_log_at_trx_commit"),
            relay_log_recovery=v.bool("relay_log_recovery"),
            relay_log_info_repository=v.choice(("FILE", "TABLE"), "relay_log_info_repository"),
            master_info_repository=v.choice(("FILE", "TABLE"), "master_info_repository"),
            replica_parallel_workers=v.int("replica_parallel_workers", "slave_parallel_workers"),
            replica_parallel_type=v.choice(
                ("DATABASE", "LOGICAL_CLOCK"), "replica_parallel_type", "slave_parallel_type"
            ),
            replica_preserve_commit_order=v.bool("replica_preserve_commit_order", "slave_preserve_commit_order"),
            binlog_format=v.choice(("ROW", "STATEMENT", "MIXED"), "binlog_format"),
            read_only=v.bool("read_only"),
            super_read_only=v.bool("super_read_only"),
            binary_logs=logs,
            read_at=v.timestamp("read_at"),
            read_started_at=v.timestamp("read_started_at"),
        )

    @property
    def label(self) -> str:
        """The name to show a person: inventory name, else server_uuid, else '?'."""
        return self.name or self.server_uuid or "?"


# --------------------------------------------------------------------------------------------
# Replica channel
# --------------------------------------------------------------------------------------------

_READ_ALL_RELAY_LOG_RE = re.compile(r"has read all relay log", re.IGNORECASE)


@dataclass(frozen=True)
class ChannelSnapshot:
    """One replication channel of a replica: ``SHOW REPLICA STATUS`` / ``SHOW SLAVE STATUS`` plus
    the performance_schema receiver and applier tables when the server has them."""

    channel_name: str = ""
    source_host: str | None = None
    source_port: int | None = None
    source_uuid: str | None = None
    source_server_id: int | None = None
    io_running: str | None = None
    sql_running: str | None = None
    auto_position: bool | None = None
    retrieved_gtid_set: GtidSet | None = None
    executed_gtid_set: GtidSet | None = None
    last_io_errno: int | None = None
    last_io_error: str | None = None
    last_io_error_timestamp: _dt.datetime | None = None
    last_sql_errno: int | None = None
    last_sql_error: str | None = None
    last_sql_error_timestamp: _dt.datetime | None = None
    seconds_behind_source: int | None = None
    sql_delay: int | None = None
    source_log_file: str | None = None
    read_source_log_pos: int | None = None
    relay_source_log_file: str | None = None
    exec_source_log_pos: int | None = None
    relay_log_file: str | None = None
    relay_log_pos: int | None = None
    sql_running_state: str | None = None
    # performance_schema.replication_connection_status (5.7+; LAST_QUEUED/QUEUEING 8.0+)
    receiver_service_state: str | None = None
    received_transaction_set: GtidSet | None = None
    last_queued_transaction: str | None = None
    queueing_transaction: str | None = None
    queueing_transaction_start_queue_timestamp: _dt.datetime | None = None
    receiver_last_error_number: int | None = None
    receiver_last_error_message: str | None = None
    # performance_schema.replication_applier_status / replication_applier_configuration
    applier_service_state: str | None = None
    assign_gtids_to_anonymous_transactions_type: str | None = None
    assign_gtids_to_anonymous_transactions_value: str | None = None
    # what the collector recorded about this read (its own columns, not the server's)
    read_at: _dt.datetime | None = None
    relay_tail_file: str | None = None
    relay_tail_truncated: bool | None = None
    relay_tail_first_event: int | None = None
    applier_event_type: str | None = None
    applier_event_gtid: str | None = None
    gtid_executed_reread: GtidSet | None = None

    @classmethod
    def from_rows(
        cls,
        replica_status: Mapping[str, Any] | None,
        *,
        connection_status: Mapping[str, Any] | None = None,
        applier_status: Mapping[str, Any] | None = None,
        applier_configuration: Mapping[str, Any] | None = None,
    ) -> "ChannelSnapshot":
        """Build from one ``SHOW REPLICA STATUS`` (or ``SHOW SLAVE STATUS``) row and, optionally,
        the channel's rows of performance_schema.replication_connection_status,
        replication_applier_status and replication_applier_configuration.

        Some entries of the status row are the collector's, not the server's: ``read_at`` (when
        the status row was read), ``relay_tail_file`` (the relay log the tail rows come from),
        ``relay_tail_truncated`` (True: the rows read are not known to reach the file's last
        transaction; False: they do), ``relay_tail_first_event`` (how many events before the
        rows the reader dropped: above 0, the rows may start inside a transaction whose Gtid
        event is not among them) and ``applier_event_type`` / ``applier_event_gtid`` (the
        event at Relay_Log_File:Relay_Log_Pos, read when the rows lack a Gtid event) and
        ``gtid_executed_reread`` (@@GLOBAL.gtid_executed read after the row, when the row showed
        a caught-up applier with retrieved GTIDs outside Executed_Gtid_Set). Missing = None =
        unknown."""
        s = _Row(replica_status, "SHOW REPLICA STATUS")
        c = _Row(connection_status, "performance_schema.replication_connection_status")
        a = _Row(applier_status, "performance_schema.replication_applier_status")
        cfg = _Row(applier_configuration, "performance_schema.replication_applier_configuration")
        if not (s or c):
            raise SnapshotError("a channel needs a SHOW REPLICA STATUS row or a replication_connection_status row")
        channel = s.text("Channel_Name")
        if channel is None:
            channel = c.text("CHANNEL_NAME")
        if channel is None:
            channel = a.text("CHANNEL_NAME") or cfg.text("CHANNEL_NAME") or ""
        source_uuid = s.text("Source_UUID", "Master_UUID")
        if source_uuid is None:
            source_uuid = c.text("SOURCE_UUID")
        source_uuid = source_uuid.strip().lower() if source_uuid else None
        if source_uuid is not None and not _UUID_RE.match(source_uuid):
            raise SnapshotError(f"SHOW REPLICA STATUS: column 'Source_UUID' has value {source_uuid!r}, not a UUID")
        received = c.gtid_set("RECEIVED_TRANSACTION_SET")
        retrieved = s.gtid_set("Retrieved_Gtid_Set")
        if retrieved is None:
            retrieved = received
        assign_value = cfg.text("ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE")
        if assign_value is not None:
            assign_value = assign_value.strip().lower() or None
        return cls(
            channel_name=channel,
            source_host=s.text("Source_Host", "Master_Host"),
            source_port=s.int("Source_Port", "Master_Port"),
            source_uuid=source_uuid,
            source_server_id=s.int("Source_Server_Id", "Master_Server_Id"),
            io_running=s.choice(("YES", "NO", "CONNECTING"), "Replica_IO_Running", "Slave_IO_Running"),
            sql_running=s.choice(("YES", "NO"), "Replica_SQL_Running", "Slave_SQL_Running"),
            auto_position=s.bool("Auto_Position"),
            retrieved_gtid_set=retrieved,
            executed_gtid_set=s.gtid_set("Executed_Gtid_Set"),
            last_io_errno=s.int("Last_IO_Errno"),
            last_io_error=s.text("Last_IO_Error"),
            last_io_error_timestamp=s.timestamp("Last_IO_Error_Timestamp"),
            last_sql_errno=s.int("Last_SQL_Errno"),
            last_sql_error=s.text("Last_SQL_Error"),
            last_sql_error_timestamp=s.timestamp("Last_SQL_Error_Timestamp"),
            seconds_behind_source=s.int("Seconds_Behind_Source", "Seconds_Behind_Master"),
            sql_delay=s.int("SQL_Delay"),
            source_log_file=s.text("Source_Log_File", "Master_Log_File"),
            read_source_log_pos=s.int("Read_Source_Log_Pos", "Read_Master_Log_Pos"),
            relay_source_log_file=s.text("Relay_Source_Log_File", "Relay_Master_Log_File"),
            exec_source_log_pos=s.int("Exec_Source_Log_Pos", "Exec_Master_Log_Pos"),
            relay_log_file=s.text("Relay_Log_File"),
            relay_log_pos=s.int("Relay_Log_Pos"),
            sql_running_state=s.text("Replica_SQL_Running_State", "Slave_SQL_Running_State"),
            receiver_service_state=c.choice(("ON", "OFF", "CONNECTING"), "SERVICE_STATE"),
            received_transaction_set=received,
            last_queued_transaction=_to_transaction(c.what, *c.get("LAST_QUEUED_TRANSACTION")),
            queueing_transaction=_to_transaction(c.what, *c.get("QUEUEING_TRANSACTION")),
            queueing_transaction_start_queue_timestamp=c.timestamp("QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP"),
            receiver_last_error_number=c.int("LAST_ERROR_NUMBER"),
            receiver_last_error_message=c.text("LAST_ERROR_MESSAGE"),
            applier_service_state=a.choice(("ON", "OFF"), "SERVICE_STATE"),
            assign_gtids_to_anonymous_transactions_type=cfg.choice(
                ("OFF", "LOCAL", "UUID"), "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE"
            ),
            assign_gtids_to_anonymous_transactions_value=assign_value,
            read_at=s.timestamp("read_at"),
            relay_tail_file=s.text("relay_tail_file"),
            relay_tail_truncated=s.bool("relay_tail_truncated"),
            relay_tail_first_event=s.int("relay_tail_first_event"),
            applier_event_type=s.text("applier_event_type"),
            applier_event_gtid=s.text("applier_event_gtid"),
            gtid_executed_reread=s.gtid_set("gtid_executed_reread"),
        )

    @property
    def receiver_running(self) -> bool | None:
        """True when the receiver (IO) thread runs (or is connecting), False when stopped."""
        if self.io_running is not None:
            return self.io_running in ("YES", "CONNECTING")
        if self.receiver_service_state is not None:
            return self.receiver_service_state in ("ON", "CONNECTING")
        return None

    @property
    def applier_running(self) -> bool | None:
        """True when the applier (SQL) thread runs, False when stopped, None when unknown."""
        if self.sql_running is not None:
            return self.sql_running == "YES"
        if self.applier_service_state is not None:
            return self.applier_service_state == "ON"
        return None

    @property
    def applier_caught_up(self) -> bool | None:
        """Whether the applier has executed everything the receiver wrote to the relay log.

        True when the source coordinates read and executed are equal (Relay_Source_Log_File =
        Source_Log_File and Exec_Source_Log_Pos = Read_Source_Log_Pos), or when the running
        applier says it "has read all relay log". False when the coordinates are known and
        differ. None otherwise.
        """
        coords = (self.source_log_file, self.read_source_log_pos, self.relay_source_log_file, self.exec_source_log_pos)
        if all(x is not None for x in coords) and self.source_log_file:
            return (self.relay_source_log_file, self.exec_source_log_pos) == (
                self.source_log_file,
                self.read_source_log_pos,
            )
        if self.applier_running and self.sql_running_state and _READ_ALL_RELAY_LOG_RE.search(self.sql_running_state):
            return True
        return None

    @property
    def last_queued_gtid(self) -> Gtid | None:
        """LAST_QUEUED_TRANSACTION as a Gtid (None when unknown, none or anonymous)."""
        return _gtid_or_none(self.last_queued_transaction)

    @property
    def queueing_gtid(self) -> Gtid | None:
        """QUEUEING_TRANSACTION as a Gtid (None when unknown, none or anonymous)."""
        return _gtid_or_none(self.queueing_transaction)

    @property
    def relay_tail_head_dropped(self) -> bool | None:
        """True when the collector read past events before the relay tail rows it kept (they may
        start inside a transaction whose Gtid event is not among them); None when unknown."""
        return None if self.relay_tail_first_event is None else self.relay_tail_first_event > 0

    @property
    def applier_gtid(self) -> Gtid | None:
        """The GTID of the Gtid event at the applier's position (None when not read or anonymous)."""
        return _gtid_or_none(self.applier_event_gtid)

    @property
    def label(self) -> str:
        """The channel's name for a person ('' is the default channel)."""
        return self.channel_name if self.channel_name else "(default)"


def _gtid_or_none(text: str | None) -> Gtid | None:
    if not text or text == "ANONYMOUS":
        return None
    return Gtid.parse(text)
