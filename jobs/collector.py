"""Per-server reads with mysql-connector-python, turned into rows of the collection tables.

One :class:`ServerReader` reads one server: identity and ``@@GLOBAL`` variables in one SELECT,
binary log status, every replica channel (``SHOW REPLICA STATUS`` / ``SHOW SLAVE STATUS``),
receiver state and applier configuration from performance_schema, ``SHOW BINARY LOGS`` with each
file's ``Previous_gtids`` (header events only), and a bounded tail of each channel's newest relay
log. What to run depends on the server version (:func:`dialect_for`).

Failures are data. Every statement goes through one place that catches the driver's errors and
turns them into ``collection_errors`` rows (``unreachable``, ``timeout``, ``auth_failed``,
``privilege_missing``, ``unexpected``, plus ``gtid_mode_off`` and ``unparseable_value`` for
values); nothing a server returns can raise out of :func:`read_server`. A per-server deadline
(connect timeout + read timeout + a wall-clock budget checked before every statement) keeps a
slow server from holding the run.

:func:`plan_read_order` is the pure part that decides the order servers are read in: a replica
before its source, deepest first (docs/collection.md says why).
"""
from __future__ import annotations

import datetime as dt
import math
import re
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from gtid_core.errors import VersionParseError
from gtid_core.versions import MySQLVersion
from jobs.config import CollectionSettings, Secret, ServerSpec

__all__ = [
    "ErrorClass",
    "Dialect",
    "dialect_for",
    "RunContext",
    "ServerResult",
    "ServerReader",
    "read_server",
    "Probe",
    "probe_server",
    "plan_read_order",
    "ReadPlan",
    "normalise_replica_status",
    "classify_error",
]


class ErrorClass:
    """The values of ``collection_errors.error_class``."""

    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    AUTH_FAILED = "auth_failed"
    GTID_MODE_OFF = "gtid_mode_off"
    UNPARSEABLE_VALUE = "unparseable_value"
    PRIVILEGE_MISSING = "privilege_missing"
    UNEXPECTED = "unexpected"


# MySQL error numbers (server ER_* and client CR_*) that decide the class of a failure.
_AUTH = {1045, 1044, 1698, 1251, 2059, 2061}      # access denied, auth plugin problems
_PRIVILEGE = {1227, 1142, 1143, 1370, 1141}        # ER_SPECIFIC_ACCESS_DENIED_ERROR, table/column access
_UNREACHABLE = {2002, 2003, 2005, 2006, 2013, 2055, 1040, 1129, 1130}
_TRANSIENT_CONNECT = {2002, 2003, 2006, 2013, 2055, 1040}
_LOST_CONNECTION = {2006, 2013, 2055}
ER_UNKNOWN_SYSTEM_VARIABLE = 1193
ER_ERROR_WHEN_EXECUTING_COMMAND = 1220  # "Could not find target log" for SHOW RELAYLOG EVENTS IN


def classify_error(exc: BaseException) -> str:
    """The error class of an exception raised by mysql-connector or the socket layer."""
    errno = getattr(exc, "errno", None)
    text = str(exc).lower()
    if isinstance(exc, (socket.timeout, TimeoutError)) or "timed out" in text:
        return ErrorClass.TIMEOUT
    if errno in _AUTH:
        return ErrorClass.AUTH_FAILED
    if errno in _PRIVILEGE:
        return ErrorClass.PRIVILEGE_MISSING
    if errno in _UNREACHABLE or isinstance(exc, (ConnectionError, socket.gaierror)):
        return ErrorClass.UNREACHABLE
    return ErrorClass.UNEXPECTED


def _is_transient_connect_error(exc: BaseException) -> bool:
    """Worth a retry: refused/reset connections, lost handshakes, too many connections, connect
    timeouts. Never authentication or privilege failures."""
    if classify_error(exc) in (ErrorClass.AUTH_FAILED, ErrorClass.PRIVILEGE_MISSING):
        return False
    errno = getattr(exc, "errno", None)
    return errno in _TRANSIENT_CONNECT or isinstance(exc, (socket.timeout, TimeoutError, ConnectionError))


# --- version dialects ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Dialect:
    """What to run on a given server version (gtid-background.md §6)."""

    version: MySQLVersion
    replica_status: str            # SHOW REPLICA STATUS | SHOW SLAVE STATUS
    binlog_status: str             # SHOW BINARY LOG STATUS | SHOW MASTER STATUS
    replicas_list: str             # SHOW REPLICAS | SHOW SLAVE HOSTS
    has_channels: bool             # Channel_Name and FOR CHANNEL (5.7.6+)
    has_connection_status: bool    # performance_schema.replication_connection_status (5.7.2+)
    has_applier_configuration_assign: bool  # ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS (8.0.23+)
    variables: tuple[tuple[str, str], ...]  # (column name in the servers table, server variable)


def dialect_for(version: MySQLVersion) -> Dialect:
    """The statements and variable names of ``version`` (5.6 to 9.x)."""
    v = version.triple
    new_names = v >= (8, 0, 26)  # replica_* system variables
    variables = [
        ("version", "version"), ("version_comment", "version_comment"), ("hostname", "hostname"),
        ("reported_port", "port"), ("server_id", "server_id"), ("server_uuid", "server_uuid"),
        ("gtid_mode", "gtid_mode"), ("enforce_gtid_consistency", "enforce_gtid_consistency"),
        ("gtid_executed", "gtid_executed"), ("gtid_purged", "gtid_purged"),
        ("log_bin", "log_bin"),
        ("log_replica_updates", "log_replica_updates" if new_names else "log_slave_updates"),
        ("sync_binlog", "sync_binlog"),
        ("innodb_flush_log_at_trx_commit", "innodb_flush_log_at_trx_commit"),
        ("relay_log_recovery", "relay_log_recovery"),
        ("replica_parallel_workers", "replica_parallel_workers" if new_names else "slave_parallel_workers"),
        ("binlog_format", "binlog_format"), ("read_only", "read_only"),
    ]
    if v >= (5, 7, 5):
        variables.append(("replica_preserve_commit_order",
                          "replica_preserve_commit_order" if new_names else "slave_preserve_commit_order"))
    if v >= (5, 7, 8):
        variables.append(("super_read_only", "super_read_only"))
    if v < (9, 0, 0):
        variables.append(("relay_log_info_repository", "relay_log_info_repository"))
    return Dialect(
        version=version,
        replica_status="SHOW REPLICA STATUS" if v >= (8, 0, 22) else "SHOW SLAVE STATUS",
        binlog_status="SHOW BINARY LOG STATUS" if v >= (8, 2, 0) else "SHOW MASTER STATUS",
        replicas_list="SHOW REPLICAS" if v >= (8, 0, 22) else "SHOW SLAVE HOSTS",
        has_channels=v >= (5, 7, 6),
        has_connection_status=v >= (5, 7, 2),
        has_applier_configuration_assign=v >= (8, 0, 23),
        variables=tuple(variables),
    )


# --- value conversion (raw server values; NULL stays NULL) ---------------------------------------

def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


class _BadValue(ValueError):
    pass


def _to_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    text = _text(value).strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    raise _BadValue(value)


_TRUE = {"1", "on", "yes", "true"}
_FALSE = {"0", "off", "no", "false"}


def _to_bool(value: Any) -> bool | None:
    if value is None:
        return None
    text = _text(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _BadValue(value)


# The columns of SHOW SLAVE STATUS renamed by SHOW REPLICA STATUS (8.0.22).
_RENAMED = {
    "Slave_IO_State": "Replica_IO_State", "Master_Host": "Source_Host", "Master_User": "Source_User",
    "Master_Port": "Source_Port", "Master_Log_File": "Source_Log_File",
    "Read_Master_Log_Pos": "Read_Source_Log_Pos", "Relay_Master_Log_File": "Relay_Source_Log_File",
    "Slave_IO_Running": "Replica_IO_Running", "Slave_SQL_Running": "Replica_SQL_Running",
    "Exec_Master_Log_Pos": "Exec_Source_Log_Pos", "Seconds_Behind_Master": "Seconds_Behind_Source",
    "Master_Server_Id": "Source_Server_Id", "Master_UUID": "Source_UUID",
    "Slave_SQL_Running_State": "Replica_SQL_Running_State",
}


def normalise_replica_status(row: Mapping[str, Any]) -> dict[str, Any]:
    """A ``SHOW SLAVE STATUS`` or ``SHOW REPLICA STATUS`` row with the new column names."""
    return {_RENAMED.get(k, k): v for k, v in row.items()}


# --- run context and results ---------------------------------------------------------------------

@dataclass(frozen=True)
class RunContext:
    """What every task needs to know about the run (picklable)."""

    run_id: str
    run_date: dt.date
    settings: CollectionSettings


@dataclass
class ServerResult:
    """Everything read from one server: rows per table (dicts in the ``schemas`` layout)."""

    server: dict[str, Any]
    channels: list[dict[str, Any]] = field(default_factory=list)
    binary_logs: list[dict[str, Any]] = field(default_factory=list)
    relay_log_tail: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def rows(self) -> Iterable[tuple[str, dict[str, Any]]]:
        yield "servers", self.server
        for name in ("channels", "binary_logs", "relay_log_tail"):
            for row in getattr(self, name):
                yield name, row
        for row in self.errors:
            yield "collection_errors", row


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class _Stop(Exception):
    """Internal: the server cannot be read further (lost connection or deadline)."""


def _seconds(value: float) -> int:
    """mysql-connector takes whole seconds (at least 1)."""
    return max(1, math.ceil(value))


def connect(spec: ServerSpec, password: Secret | None, timeout_s: float | None = None):
    """A mysql-connector connection to ``spec`` (pure-Python protocol, autocommit, timeouts)."""
    import mysql.connector

    kwargs: dict[str, Any] = dict(
        host=spec.host, port=spec.port, user=spec.user,
        connection_timeout=_seconds(timeout_s or spec.connect_timeout_s),
        read_timeout=_seconds(spec.read_timeout_s), write_timeout=_seconds(spec.read_timeout_s),
        use_pure=True, autocommit=True, charset="utf8mb4", get_warnings=False,
    )
    if password is not None:
        kwargs["password"] = password.reveal()
    if spec.option_file:
        kwargs["option_files"] = spec.option_file
        kwargs["option_groups"] = ["client", "gtid-audit"]
    tls = spec.tls
    if tls is not None:
        if not tls.enabled:
            kwargs["ssl_disabled"] = True
        else:
            for key, value in (("ssl_ca", tls.ca_file), ("ssl_cert", tls.cert_file), ("ssl_key", tls.key_file)):
                if value:
                    kwargs[key] = value
            kwargs["ssl_verify_cert"] = tls.verify_cert
            kwargs["ssl_verify_identity"] = tls.verify_identity
    return mysql.connector.connect(**kwargs)


def _connect_with_retries(spec: ServerSpec, password: Secret | None, settings: CollectionSettings,
                          deadline: float):
    """Connect, retrying only transient errors (tenacity), within the server's deadline."""
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_after_delay, wait_exponential

    budget = max(0.0, deadline - time.monotonic())
    retrying = Retrying(
        stop=stop_after_attempt(settings.retries.attempts) | stop_after_delay(budget),
        wait=wait_exponential(multiplier=settings.retries.wait_initial_s, max=settings.retries.wait_max_s),
        retry=retry_if_exception(_is_transient_connect_error),
        reraise=True,
    )
    return retrying(lambda: connect(spec, password,
                                    min(spec.connect_timeout_s, max(1.0, deadline - time.monotonic()))))


def _scrub(message: str, password: Secret | None) -> str:
    """Remove the secret from a message, whatever produced it (defence in depth)."""
    if password is not None and password.reveal():
        message = message.replace(password.reveal(), "***")
    return message


class ServerReader:
    """Reads one server; :meth:`read` never raises."""

    def __init__(self, spec: ServerSpec, password: Secret | None, ctx: RunContext,
                 read_order: int | None = None, topology_depth: int | None = None,
                 address_book: Mapping[tuple[str, int], str] | None = None,
                 uuid_book: Mapping[str, str] | None = None) -> None:
        self.spec, self.password, self.ctx = spec, password, ctx
        self.settings = ctx.settings
        self.address_book = dict(address_book or {})
        self.uuid_book = dict(uuid_book or {})
        self.cnx = None
        self.deadline = 0.0
        self.statement_failed = False
        self.last_quiet_error: BaseException | None = None
        self.base = {"run_id": ctx.run_id, "run_date": ctx.run_date, "server": spec.name,
                     "cluster": spec.cluster}
        self.result = ServerResult(server={
            **self.base, "read_at": None, "host": spec.host, "port": spec.port,
            "aliases": ",".join(f"{h}:{p}" for h, p in spec.aliases) or None,
            "discovered": spec.discovered, "status": "failed", "read_order": read_order,
            "topology_depth": topology_depth,
        })

    # -- error rows ------------------------------------------------------------------------------
    def error(self, error_class: str, message: str, *, statement: str | None = None,
              errno: int | None = None, sqlstate: str | None = None, channel: str | None = None) -> None:
        self.result.errors.append({
            **self.base, "read_at": _now(), "seq": len(self.result.errors), "error_class": error_class,
            "errno": errno, "sqlstate": sqlstate, "message": _scrub(message, self.password)[:4000],
            "statement": statement, "channel_name": channel,
        })

    def _error_from_exception(self, exc: BaseException, statement: str | None, channel: str | None = None) -> str:
        cls = classify_error(exc)
        errno = getattr(exc, "errno", None)
        msg = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        self.error(cls, f"{type(exc).__name__}: {msg}", statement=statement,
                   errno=errno if isinstance(errno, int) and errno > 0 else None,
                   sqlstate=getattr(exc, "sqlstate", None), channel=channel)
        return cls

    # -- statements ------------------------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] = (), *, channel: str | None = None,
              quiet_errnos: frozenset[int] = frozenset()) -> tuple[list[dict[str, Any]] | None, dt.datetime]:
        """Run one statement; rows as dicts, or None after recording the failure. Errors with a
        number in ``quiet_errnos`` are returned as None without a row (expected probes)."""
        shown = sql if not params else sql.replace("%s", "{!r}").format(*params)
        if time.monotonic() > self.deadline:
            self.error(ErrorClass.TIMEOUT, f"server deadline of {self.settings.server_deadline_s}s "
                       "exceeded; remaining statements skipped", statement=shown, channel=channel)
            raise _Stop()
        try:  # the socket never waits beyond the server's deadline
            self.cnx.read_timeout = _seconds(min(self.spec.read_timeout_s, self.deadline - time.monotonic()))
            cur = self.cnx.cursor(dictionary=True)
            try:
                cur.execute(sql, tuple(params) if params else None)
                rows = cur.fetchall() if cur.with_rows else []
            finally:
                cur.close()
            return rows, _now()
        except Exception as exc:  # the driver raises many types; all become data
            if getattr(exc, "errno", None) in quiet_errnos:
                self.last_quiet_error = exc
                return None, _now()
            cls = self._error_from_exception(exc, shown, channel)
            self.statement_failed = True
            if getattr(exc, "errno", None) in _LOST_CONNECTION or cls == ErrorClass.TIMEOUT:
                raise _Stop() from None
            return None, _now()

    def convert(self, value: Any, kind: str, column: str, statement: str, channel: str | None = None) -> Any:
        """Convert one raw value; an unparseable one becomes NULL plus an error row."""
        try:
            if kind == "int":
                return _to_int(value)
            if kind == "bool":
                return _to_bool(value)
            return _text(value)
        except _BadValue:
            self.error(ErrorClass.UNPARSEABLE_VALUE, f"{column}: cannot read {value!r} as {kind}",
                       statement=statement, channel=channel)
            return None

    def check_gtid_text(self, text: str | None, column: str, statement: str, channel: str | None = None) -> None:
        """Record an ``unparseable_value`` row when GtidSet.parse rejects the server's text (the
        text itself is stored as returned)."""
        if text is None:
            return
        try:
            from gtid_core import GtidSet
        except ImportError:  # gtid_core's GtidSet not available: nothing to validate with
            return
        try:
            GtidSet.parse(text)
        except ValueError as exc:
            self.error(ErrorClass.UNPARSEABLE_VALUE, f"{column}: {exc}", statement=statement, channel=channel)

    # -- the read --------------------------------------------------------------------------------
    def read(self) -> ServerResult:
        server = self.result.server
        server["read_started_at"] = _now()
        self.deadline = time.monotonic() + self.settings.server_deadline_s
        try:
            try:
                self.cnx = _connect_with_retries(self.spec, self.password, self.settings, self.deadline)
            except Exception as exc:
                self._error_from_exception(exc, None)
                return self.result
            self._read_all()
        except _Stop:
            pass
        except Exception as exc:  # a bug or a value nothing foresaw: still data, never a crash
            self.statement_failed = True
            self.error(ErrorClass.UNEXPECTED, f"{type(exc).__name__}: {exc}")
        finally:
            if self.cnx is not None:
                try:
                    self.cnx.close()
                except Exception:
                    pass
            server["read_finished_at"] = _now()
            server["read_at"] = server.get("gtid_read_at") or server["read_finished_at"]
        return self.result

    def _read_all(self) -> None:
        server = self.result.server
        rows, _ = self.query("SELECT @@GLOBAL.version AS version")
        if not rows:
            raise _Stop()
        try:
            version = MySQLVersion.parse(_text(rows[0]["version"]))
        except VersionParseError as exc:
            self.error(ErrorClass.UNPARSEABLE_VALUE, str(exc), statement="SELECT @@GLOBAL.version")
            version = MySQLVersion.of(8, 4, 0)  # read on with today's statements; errors become rows
        dialect = dialect_for(version)
        server["status"] = "ok"
        self._read_variables(dialect)
        self._read_binlog_status(dialect)
        channels = self._read_channels(dialect)
        self._read_binary_logs(dialect)
        for channel in channels:
            self._read_relay_tail(dialect, channel)
        if self.statement_failed:
            server["status"] = "partial"

    def _read_variables(self, dialect: Dialect) -> None:
        server = self.result.server
        variables = list(dialect.variables)
        for _attempt in range(len(variables)):
            sql = "SELECT " + ", ".join(f"@@GLOBAL.{var} AS `{col}`" for col, var in variables)
            rows, at = self.query(sql, quiet_errnos=frozenset({ER_UNKNOWN_SYSTEM_VARIABLE}))
            if rows is not None:
                break
            # A variable this build lacks (forks, removed options): drop it and read the rest.
            missing = self._unknown_variable()
            if missing is None:
                return
            variables = [(c, v) for c, v in variables if v != missing]
        else:
            return
        row = rows[0]
        server["gtid_read_at"] = at
        kinds = {"server_id": "int", "reported_port": "int", "sync_binlog": "int",
                 "innodb_flush_log_at_trx_commit": "int", "replica_parallel_workers": "int",
                 "log_bin": "bool", "log_replica_updates": "bool", "relay_log_recovery": "bool",
                 "replica_preserve_commit_order": "bool", "read_only": "bool", "super_read_only": "bool"}
        for col, var in variables:
            server[col] = self.convert(row.get(col), kinds.get(col, "text"), f"@@GLOBAL.{var}", sql)
        for col in ("gtid_executed", "gtid_purged"):
            self.check_gtid_text(server.get(col), f"@@GLOBAL.{col}", sql)
        mode = server.get("gtid_mode")
        if mode != "ON":
            self.error(ErrorClass.GTID_MODE_OFF,
                       f"gtid_mode is {mode!r}: GTID checks cannot be trusted on this server "
                       "(it is still collected)", statement=sql)

    def _unknown_variable(self) -> str | None:
        """Which variable the server rejected (ER_UNKNOWN_SYSTEM_VARIABLE names it)."""
        m = re.search(r"variable '([^']+)'", str(self.last_quiet_error or ""))
        return m.group(1).lower() if m else None

    def _read_binlog_status(self, dialect: Dialect) -> None:
        server = self.result.server
        rows, at = self.query(dialect.binlog_status)
        if rows is None:
            return
        server["binlog_status_read_at"] = at
        if rows:
            row = rows[0]
            st = dialect.binlog_status
            server["binlog_file"] = self.convert(row.get("File"), "text", "File", st)
            server["binlog_position"] = self.convert(row.get("Position"), "int", "Position", st)
            server["binlog_status_gtid_set"] = self.convert(row.get("Executed_Gtid_Set"), "text",
                                                            "Executed_Gtid_Set", st)

    def _source_server(self, host: str | None, port: int | None, uuid: str | None) -> str | None:
        if uuid and uuid.lower() in self.uuid_book:
            return self.uuid_book[uuid.lower()]
        if host and port:
            return self.address_book.get((host.lower(), int(port)))
        return None

    def _read_channels(self, dialect: Dialect) -> list[dict[str, Any]]:
        st = dialect.replica_status
        rows, at = self.query(st)
        if rows is None:
            return []
        self.result.server["channel_count"] = len(rows)
        receiver: dict[str, dict[str, Any]] = {}
        receiver_at = None
        applier: dict[str, dict[str, Any]] = {}
        if rows and dialect.has_connection_status:
            ps_rows, receiver_at = self.query("SELECT * FROM performance_schema.replication_connection_status")
            for r in ps_rows or []:
                receiver[_text(r.get("CHANNEL_NAME")) or ""] = r
            if dialect.has_applier_configuration_assign:
                ap_rows, _ = self.query("SELECT CHANNEL_NAME, ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE, "
                                        "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE "
                                        "FROM performance_schema.replication_applier_configuration")
                for r in ap_rows or []:
                    applier[_text(r.get("CHANNEL_NAME")) or ""] = r
        out = []
        for raw in rows:
            r = normalise_replica_status(raw)
            name = _text(r.get("Channel_Name")) or ""
            c = lambda col, kind="text": self.convert(r.get(col), kind, col, st, name)  # noqa: E731
            row = {
                **self.base, "read_at": at, "channel_name": name, "status_statement": st,
                "source_host": c("Source_Host"), "source_port": c("Source_Port", "int"),
                "source_uuid": c("Source_UUID") or None,
                "source_server_id": c("Source_Server_Id", "int"),
                "retrieved_gtid_set": c("Retrieved_Gtid_Set"),
                "executed_gtid_set": c("Executed_Gtid_Set"),
                "io_running": c("Replica_IO_Running"), "sql_running": c("Replica_SQL_Running"),
                "io_state": c("Replica_IO_State"), "sql_running_state": c("Replica_SQL_Running_State"),
                "last_io_errno": c("Last_IO_Errno", "int"), "last_io_error": c("Last_IO_Error"),
                "last_io_error_timestamp": c("Last_IO_Error_Timestamp"),
                "last_sql_errno": c("Last_SQL_Errno", "int"), "last_sql_error": c("Last_SQL_Error"),
                "last_sql_error_timestamp": c("Last_SQL_Error_Timestamp"),
                "auto_position": c("Auto_Position", "bool"),
                "source_log_file": c("Source_Log_File"),
                "read_source_log_pos": c("Read_Source_Log_Pos", "int"),
                "relay_log_file": c("Relay_Log_File"), "relay_log_pos": c("Relay_Log_Pos", "int"),
                "relay_source_log_file": c("Relay_Source_Log_File"),
                "exec_source_log_pos": c("Exec_Source_Log_Pos", "int"),
                "seconds_behind_source": c("Seconds_Behind_Source", "int"),
                "sql_delay": c("SQL_Delay", "int"),
            }
            row["source_server"] = self._source_server(row["source_host"], row["source_port"], row["source_uuid"])
            for col in ("retrieved_gtid_set", "executed_gtid_set"):
                self.check_gtid_text(row[col], col, st, name)
            rec = receiver.get(name)
            if rec is not None:
                ps = "SELECT * FROM performance_schema.replication_connection_status"
                g = lambda col, kind="text": self.convert(rec.get(col), kind, col, ps, name)  # noqa: E731
                row.update({
                    "receiver_read_at": receiver_at,
                    "received_transaction_set": g("RECEIVED_TRANSACTION_SET"),
                    "service_state": g("SERVICE_STATE"),
                    "queueing_transaction": g("QUEUEING_TRANSACTION"),
                    "queueing_transaction_start_queue_timestamp": g("QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP"),
                    "last_queued_transaction": g("LAST_QUEUED_TRANSACTION"),
                    "last_queued_transaction_end_queue_timestamp": g("LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP"),
                    "receiver_last_error_number": g("LAST_ERROR_NUMBER", "int"),
                    "receiver_last_error_message": g("LAST_ERROR_MESSAGE"),
                })
                self.check_gtid_text(row["received_transaction_set"], "RECEIVED_TRANSACTION_SET", ps, name)
            ap = applier.get(name)
            if ap is not None:
                row["assign_gtids_to_anonymous_transactions_type"] = _text(ap.get("ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE"))
                row["assign_gtids_to_anonymous_transactions_value"] = _text(ap.get("ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE"))
            out.append(row)
        self.result.channels.extend(out)
        return out

    def _read_binary_logs(self, dialect: Dialect) -> None:
        server = self.result.server
        if server.get("log_bin") is False:
            return
        rows, at = self.query("SHOW BINARY LOGS")
        if rows is None:
            return
        first_read = max(0, len(rows) - self.settings.max_binary_logs)
        limit = self.settings.binlog_header_events
        for seq, r in enumerate(rows):
            name = _text(r.get("Log_name"))
            if name is None:
                self.error(ErrorClass.UNPARSEABLE_VALUE, "SHOW BINARY LOGS row without Log_name",
                           statement="SHOW BINARY LOGS")
                continue
            row = {**self.base, "read_at": at, "seq": seq, "log_name": name,
                   "file_size": self.convert(r.get("File_size"), "int", "File_size", "SHOW BINARY LOGS"),
                   "encrypted": _text(r.get("Encrypted")), "previous_gtids": None,
                   "previous_gtids_read": False}
            if seq >= first_read:
                events, ev_at = self.query(f"SHOW BINLOG EVENTS IN %s LIMIT {limit}", (name,))
                if events is not None:
                    row["read_at"] = ev_at
                    row["previous_gtids_read"] = True
                    for ev in events:
                        if _text(ev.get("Event_type")) == "Previous_gtids":
                            row["previous_gtids"] = _text(ev.get("Info"))
                            self.check_gtid_text(row["previous_gtids"], f"Previous_gtids of {name}",
                                                 "SHOW BINLOG EVENTS")
                            break
            self.result.binary_logs.append(row)

    def _relay_events(self, dialect: Dialect, channel: str, log_name: str, pos: int | None,
                      offset: int, limit: int, quiet: bool = False):
        sql = "SHOW RELAYLOG EVENTS IN %s"
        params: list[Any] = [log_name]
        if pos is not None:
            sql += f" FROM {int(pos)}"
        sql += f" LIMIT {int(offset)}, {int(limit)}" if offset else f" LIMIT {int(limit)}"
        if dialect.has_channels and channel:
            sql += " FOR CHANNEL %s"
            params.append(channel)
        quiet_errnos = frozenset({ER_ERROR_WHEN_EXECUTING_COMMAND}) if quiet else frozenset()
        return self.query(sql, params, channel=channel, quiet_errnos=quiet_errnos)

    def _read_relay_tail(self, dialect: Dialect, channel: dict[str, Any]) -> None:
        """The events from the applier's position to the end of the newest relay log, capped.

        Starts at Relay_Log_Pos (a transaction boundary: where the applier resumes) when the
        newest file is the applier's, else at the start of the newest file. Pages with
        ``LIMIT offset, n`` from that fixed start: End_log_pos in a relay log is the *source's*
        binary log position, so it cannot be used as the next FROM. At most
        ``relay_tail_max_events`` events are kept; one more is probed to record truncation.
        """
        name = channel["channel_name"]
        current = channel.get("relay_log_file")
        if not current:
            return
        newest, start = current, channel.get("relay_log_pos")
        m = re.fullmatch(r"(.*\.)(\d+)", current)
        if m:  # probe the next file numbers: the receiver may have rotated past the applier
            prefix, number, width = m.group(1), int(m.group(2)), len(m.group(2))
            for step in range(1, self.settings.relay_probe_files + 1):
                candidate = f"{prefix}{number + step:0{width}d}"
                rows, _ = self._relay_events(dialect, name, candidate, None, 0, 1, quiet=True)
                if not rows:
                    break
                newest, start = candidate, None
        cap, page = self.settings.relay_tail_max_events, self.settings.relay_tail_page_events
        seq, truncated = 0, False
        while True:
            if seq >= cap:
                more, _ = self._relay_events(dialect, name, newest, start, seq, 1)
                truncated = bool(more)
                break
            want = min(page, cap - seq)
            rows, at = self._relay_events(dialect, name, newest, start, seq, want)
            if rows is None:
                return
            for ev in rows:
                st = "SHOW RELAYLOG EVENTS"
                self.result.relay_log_tail.append({
                    **self.base, "read_at": at, "channel_name": name, "seq": seq,
                    "log_name": _text(ev.get("Log_name")) or newest,
                    "pos": self.convert(ev.get("Pos"), "int", "Pos", st, name) or 0,
                    "event_type": _text(ev.get("Event_type")) or "",
                    "event_server_id": self.convert(ev.get("Server_id"), "int", "Server_id", st, name),
                    "end_log_pos": self.convert(ev.get("End_log_pos"), "int", "End_log_pos", st, name),
                    "info": _text(ev.get("Info")),
                })
                seq += 1
            if len(rows) < want:
                break  # the end of the relay log
        channel.update({"relay_tail_file": newest, "relay_tail_start_pos": start,
                        "relay_tail_events": seq, "relay_tail_truncated": truncated})


def _to_int_or_none(value: Any) -> int | None:
    try:
        return _to_int(value)
    except _BadValue:
        return None


def read_server(spec: ServerSpec, password: Secret | None, ctx: RunContext, **kwargs: Any) -> ServerResult:
    """Read one server into rows; never raises (failures are ``collection_errors`` rows)."""
    return ServerReader(spec, password, ctx, **kwargs).read()


# --- topology probe and read order ---------------------------------------------------------------

@dataclass(frozen=True)
class Probe:
    """What planning needs from one server: its uuid and the sources/replicas it names."""

    name: str
    server_uuid: str | None
    sources: tuple[tuple[str | None, int | None, str | None], ...] = ()   # (host, port, uuid) per channel
    replicas: tuple[tuple[str | None, int | None, str | None], ...] = ()  # from SHOW REPLICAS
    ok: bool = True


def probe_server(spec: ServerSpec, password: Secret | None, settings: CollectionSettings,
                 want_replicas: bool = False) -> Probe:
    """A light read for planning: server_uuid, each channel's source, optionally SHOW REPLICAS.
    Never raises; a server that cannot be probed is planned alone (its read records why)."""
    cnx = None
    try:
        cnx = connect(spec, password, min(spec.connect_timeout_s, settings.server_deadline_s))
        cur = cnx.cursor(dictionary=True)
        cur.execute("SELECT @@GLOBAL.version AS version, @@GLOBAL.server_uuid AS server_uuid")
        row = cur.fetchall()[0]
        dialect = dialect_for(MySQLVersion.parse(_text(row["version"])))
        uuid = (_text(row["server_uuid"]) or "").lower() or None
        cur.execute(dialect.replica_status)
        sources = tuple(
            (_text(r.get("Source_Host")), _to_int_or_none(r.get("Source_Port")),
             (_text(r.get("Source_UUID")) or "").lower() or None)
            for r in map(normalise_replica_status, cur.fetchall()))
        replicas: tuple = ()
        if want_replicas:
            cur.execute(dialect.replicas_list)
            replicas = tuple(
                (_text(r.get("Host")) or None, _to_int_or_none(r.get("Port")),
                 (_text(r.get("Replica_UUID") or r.get("Slave_UUID")) or "").lower() or None)
                for r in cur.fetchall())
        cur.close()
        return Probe(spec.name, uuid, sources, replicas)
    except Exception:
        return Probe(spec.name, None, ok=False)
    finally:
        if cnx is not None:
            try:
                cnx.close()
            except Exception:
                pass


@dataclass(frozen=True)
class ReadPlan:
    """Servers grouped by replication component; inside a group, waves read in order (all the
    servers of a wave in parallel), deepest replicas first."""

    groups: tuple[tuple[tuple[str, ...], ...], ...]
    depth: Mapping[str, int]
    read_order: Mapping[str, int]
    address_book: Mapping[tuple[str, int], str]
    uuid_book: Mapping[str, str]


def plan_read_order(specs: Sequence[ServerSpec], probes: Mapping[str, Probe]) -> ReadPlan:
    """Order the reads so that every replica is read before its source (deepest first).

    A channel's source is found by Source_UUID, else by Source_Host:Source_Port against each
    server's host:port and aliases. depth(server) = 1 + max depth of its sources (0 without a
    known source); cycles (circular replication) are cut where first met. Servers connected by
    replication form one group, read wave by wave from the deepest depth to 0.
    """
    names = [s.name for s in specs]
    address_book: dict[tuple[str, int], str] = {}
    for s in specs:
        for addr in s.addresses():
            address_book.setdefault(addr, s.name)
    uuid_book = {p.server_uuid: n for n, p in probes.items() if p.server_uuid}
    sources: dict[str, set[str]] = {n: set() for n in names}
    for n in names:
        probe = probes.get(n)
        for host, port, uuid in (probe.sources if probe else ()):
            src = uuid_book.get(uuid) if uuid else None
            if src is None and host and port:
                src = address_book.get((host.lower(), port))
            if src is not None and src != n:
                sources[n].add(src)

    depth: dict[str, int] = {}

    def depth_of(n: str, visiting: frozenset[str]) -> int:
        if n in depth:
            return depth[n]
        parents = [p for p in sources[n] if p not in visiting]
        d = 0 if not parents else 1 + max(depth_of(p, visiting | {n}) for p in parents)
        depth[n] = d
        return d

    for n in names:
        depth_of(n, frozenset())

    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n, srcs in sources.items():
        for s in srcs:
            parent[find(n)] = find(s)
    components: dict[str, list[str]] = {}
    for n in names:
        components.setdefault(find(n), []).append(n)
    groups = []
    read_order: dict[str, int] = {}
    for members in components.values():
        top = max(depth[m] for m in members)
        waves = []
        for d in range(top, -1, -1):
            wave = tuple(sorted(m for m in members if depth[m] == d))
            if wave:
                for m in wave:
                    read_order[m] = top - d
                waves.append(wave)
        groups.append(tuple(waves))
    groups.sort(key=lambda g: (-sum(len(w) for w in g), g[0][0]))
    return ReadPlan(tuple(groups), depth, read_order, address_book, uuid_book)
