"""The executor side of collection: reading one server with mysql-connector-python, turned into
rows of the collection tables.

This module is what Spark tasks run, so it imports only the standard library, ``gtid_core``,
``jobs.pairs`` (the source resolver, standard library only) and ``jobs.mysql_connection`` (the
connection to a server and its error classes, over mysql-connector-python): no pydantic, YAML,
retry or console library is needed on an executor. The driver validates the configuration
(``jobs.config``) and hands tasks plain, picklable values: :class:`ServerSpec` (with secret
*references*, never secrets) and :class:`ReadSettings` from ``jobs.server_spec``, and
:class:`RunContext`. Executors resolve the references themselves (``resolve_password``), so no
password travels in a task closure, an event log or a table.

One :class:`ServerReader` reads one server: identity and ``@@GLOBAL`` variables in one SELECT,
binary log status, every replica channel (``SHOW REPLICA STATUS`` / ``SHOW SLAVE STATUS``),
receiver state and applier configuration from performance_schema, ``SHOW BINARY LOGS`` with each
file's ``Previous_gtids`` (header events only), and the end of each channel's newest relay log.
What to run depends on the server version (:func:`dialect_for`). Each channel's source is
resolved here, once, by :class:`jobs.pairs.SourceResolver`; its answer is ``channels.source_server``.
Nothing a server replicates is stored: error texts go through
:func:`gtid_core.error_text.redacted_error`, relay log events through :func:`gtid_core.relay_log.sanitized`.

How a server is connected to is ``jobs.mysql_connection``'s: the pure-Python protocol, TLS or
nothing with ``tls.enabled``, the retries (transient connect errors only) and the classes of the
driver's errors; its docstring says why.

Failures are data. Every statement goes through one place that catches the driver's errors and
turns them into ``collection_errors`` rows, classed by
:func:`jobs.mysql_connection.classify_error`, plus ``gtid_mode_off`` and ``unparseable_value``
for values; nothing a server returns can raise out of :func:`read_server`. A per-server deadline
(connect timeout + read timeout + a wall-clock budget checked before every statement) keeps a
slow server from holding the run.

The driver decides the order servers are read in (``jobs.read_plan``: a replica before its
source, deepest first; docs/collection.md says why); :func:`read_groups` reads a partition's groups
on one flat pool of threads that respects that order only inside each replication group.
:func:`probe_server` is the light read that planning needs on a night without a previous run.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import queue
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from gtid_core.error_text import redacted_error
from gtid_core.errors import VersionParseError
from gtid_core.versions import MySQLVersion
from jobs import mysql_connection
from jobs.mysql_connection import (LOST_CONNECTION, ErrorClass, classify_error, close_quietly, connect_hint,
                                   connect_with_retries, dict_cursor, inline_literals, scrub_secret,
                                   timeout_seconds)
from jobs.pairs import InventoryServer, SourceResolver
from jobs.read_plan import Probe
from jobs.server_spec import ReadSettings, Secret, SecretError, ServerSpec, resolve_password

__all__ = [
    "Dialect",
    "dialect_for",
    "RunContext",
    "ServerResult",
    "ServerReader",
    "read_server",
    "probe_server",
    "read_groups",
    "read_partition",
    "PreviousBinlogs",
    "REUSED_HEADER",
    "REPLAN",
    "PLAIN_TEXT",
    "probe_partition",
    "normalise_replica_status",
    "member_roles_before_802",
]


# Server errors some statements of the read expect (asked for with ``quiet_errnos``).
ER_UNKNOWN_SYSTEM_VARIABLE = 1193
ER_ERROR_WHEN_EXECUTING_COMMAND = 1220  # "Could not find target log" for SHOW RELAYLOG EVENTS IN


# --- version dialects ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Dialect:
    """What to run on a given server version (the version table of docs/collection.md)."""

    version: MySQLVersion
    replica_status: str            # SHOW REPLICA STATUS | SHOW SLAVE STATUS
    binlog_status: str             # SHOW BINARY LOG STATUS | SHOW MASTER STATUS
    replicas_list: str             # SHOW REPLICAS | SHOW SLAVE HOSTS
    has_channels: bool             # Channel_Name and FOR CHANNEL (5.7.6+)
    has_connection_status: bool    # performance_schema.replication_connection_status (5.7.2+)
    has_applier_configuration_assign: bool  # ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS (8.0.23+)
    variables: tuple[tuple[str, str], ...]  # (column name in the servers table, server variable)
    has_group_replication: bool = False     # the plugin and its performance_schema tables (5.7.17+)


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
    if v < (8, 3, 0):  # both repositories' variables were removed in 8.3.0 (8.3 release notes)
        variables.append(("relay_log_info_repository", "relay_log_info_repository"))
        variables.append(("master_info_repository", "master_info_repository"))
    if (5, 7, 2) <= v < (8, 3, 0):  # slave_parallel_type 5.7.2-8.0.25, replica_parallel_type 8.0.26-8.2
        variables.append(("replica_parallel_type", "replica_parallel_type" if new_names else "slave_parallel_type"))
    return Dialect(
        version=version,
        replica_status="SHOW REPLICA STATUS" if v >= (8, 0, 22) else "SHOW SLAVE STATUS",
        binlog_status="SHOW BINARY LOG STATUS" if v >= (8, 2, 0) else "SHOW MASTER STATUS",
        replicas_list="SHOW REPLICAS" if v >= (8, 0, 22) else "SHOW SLAVE HOSTS",
        has_channels=v >= (5, 7, 6),
        has_connection_status=v >= (5, 7, 2),
        has_applier_configuration_assign=v >= (8, 0, 23),
        variables=tuple(variables),
        has_group_replication=v >= (5, 7, 17),
    )


#: The variables SELECT asks for the group name through performance_schema, where a server
#: without the plugin answers NULL instead of ER_UNKNOWN_SYSTEM_VARIABLE: one more column, no
#: more round trips for the servers that are not group members.
GROUP_NAME_ITEM = ("(SELECT VARIABLE_VALUE FROM performance_schema.global_variables "
                   "WHERE VARIABLE_NAME = 'group_replication_group_name') AS `group_replication_group_name`")

#: The group settings read from a group member (absent ones are simply not returned).
GROUP_VARIABLES: dict[str, tuple[str, str]] = {
    "group_replication_view_change_uuid": ("view_change_uuid", "text"),
    "group_replication_single_primary_mode": ("single_primary_mode", "bool"),
    "group_replication_enforce_update_everywhere_checks": ("enforce_update_everywhere_checks", "bool"),
    "group_replication_member_weight": ("member_weight", "int"),
    "group_replication_consistency": ("consistency", "text"),
}
GROUP_CHANNELS = ("group_replication_applier", "group_replication_recovery")


#: Member states 8.0.2+ shows a MEMBER_ROLE for.
_ROLE_STATES = ("ONLINE", "RECOVERING", "UNREACHABLE")


def member_roles_before_802(members: Sequence[Mapping[str, Any]], single_primary_mode: bool | None,
                            primary_member: str | None) -> dict[str, str]:
    """MEMBER_ROLE by lower-case member id, as 8.0.2+ reports it, for members whose
    replication_group_members has no such column (5.7.17+, 8.0.0 and 8.0.1; WL#10958 added it),
    from the status variable group_replication_primary_member (``primary_member``), the way
    MySQL Router and MySQL Shell found the primary then. The 5.7 plugin (``show_primary_member``
    in ``rapid/plugin/group_replication/src/plugin.cc``) gives the primary's server_uuid only in
    single-primary mode with Group Replication running ("UNDEFINED" while no primary is known),
    NULL (shown empty) otherwise.

    Members ONLINE, RECOVERING or UNREACHABLE (8.0.2+ keeps an unreachable member's role) get a
    role: in single-primary mode PRIMARY for the member the variable names and SECONDARY for the
    others; in multi-primary mode PRIMARY for all, as 8.0.2+ reports it. OFFLINE and ERROR
    members get none, as 8.0.2+ shows none. None get one when single_primary_mode was not read, or in single-primary mode
    when the variable names no such member or was not read (its error is recorded): the group's
    readiness is then not modelled, rather than modelled around a guessed primary."""
    if single_primary_mode is None:
        return {}
    live = [(_text(m.get("MEMBER_ID")) or "").lower() for m in members
            if _text(m.get("MEMBER_STATE")) in _ROLE_STATES]
    if not single_primary_mode:
        return {member: "PRIMARY" for member in live}
    primary = (primary_member or "").lower()
    if primary not in live:
        return {}
    return {member: "PRIMARY" if member == primary else "SECONDARY" for member in live}


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


#: The replication filters of a SHOW REPLICA STATUS row (each channel's row shows the global
#: filters too; Replicate_Rewrite_DB from 5.7).
FILTER_COLUMNS = ("Replicate_Do_DB", "Replicate_Ignore_DB", "Replicate_Do_Table", "Replicate_Ignore_Table",
                  "Replicate_Wild_Do_Table", "Replicate_Wild_Ignore_Table", "Replicate_Rewrite_DB")


def _filters(row: Mapping[str, Any], columns: Sequence[str]) -> str | None:
    """``columns`` of ``row`` that are set, as ``Column=value`` pairs joined by '; ' ('' = none),
    or None when one of them is absent (the server's version has no such column: unknown)."""
    if any(col not in row for col in columns):
        return None
    return "; ".join(f"{col}={_text(row[col])}" for col in columns if _text(row[col]))


def binlog_filters(row: Mapping[str, Any]) -> str | None:
    """Binlog_Do_DB and Binlog_Ignore_DB of a SHOW BINARY LOG STATUS row (:func:`_filters`). A
    replicated transaction such a filter drops is logged as an empty transaction with its GTID."""
    return _filters(row, ("Binlog_Do_DB", "Binlog_Ignore_DB"))


def replication_filters(row: Mapping[str, Any]) -> str | None:
    """The channel's filters (:func:`_filters`; None on 5.6, which shows no Replicate_Rewrite_DB)."""
    return _filters(row, FILTER_COLUMNS)


# --- run context and results ---------------------------------------------------------------------

@dataclass(frozen=True)
class RunContext:
    """What every task needs to know about the run (picklable)."""

    run_id: str
    run_date: dt.date
    settings: ReadSettings


#: ``(table, row)`` pairs a read yields beside the tables' rows, for the driver only:
#: a binary log whose header was not read again (its ``Previous_gtids`` comes from the previous
#: run's row), a server whose topology is not the one planned (its :class:`Probe` as read now),
#: and a server read over plain text (its name).
REUSED_HEADER, REPLAN, PLAIN_TEXT = "_binlog_header_reused", "_replan", "_plain_text"


@dataclass(frozen=True)
class PreviousBinlogs:
    """What the previous run read of one server's binary logs: its server_uuid and
    gtid_executed then, and ``files``, ``name:size`` of each file whose header it read,
    comma-separated (``jobs.previous_run.binlog_summaries``)."""

    server: str
    server_uuid: str
    gtid_executed: str | None
    files: str

    def reusable(self, server_uuid: str | None, gtid_executed: str | None) -> dict[str, int]:
        """``{log_name: file_size}`` of the files whose header need not be read again, or ``{}``.

        A file's ``Previous_gtids`` is written when the file is created and never rewritten
        (``MYSQL_BIN_LOG::open_binlog``, sql/binlog.cc). A file of the same name and size is the
        same file unless the binary logs were reset since (``RESET BINARY LOGS AND GTIDS`` /
        ``RESET MASTER`` restart the numbering and empty gtid_executed) or the server is another
        one: so nothing is reused unless the server_uuid is the same and last night's
        gtid_executed is contained in tonight's. What this cannot see: a reset followed by the
        re-execution of every earlier GTID and files grown to the very same sizes."""
        from gtid_core import GtidSet

        if not server_uuid or server_uuid.lower() != self.server_uuid.lower():
            return {}
        try:
            if not GtidSet.parse(self.gtid_executed or "") <= GtidSet.parse(gtid_executed or ""):
                return {}
        except ValueError:
            return {}
        out = {}
        for item in self.files.split(",") if self.files else ():
            name, _, size = item.rpartition(":")
            if name and size.isdigit():
                out[name] = int(size)
        return out


@dataclass
class ServerResult:
    """Everything read from one server: rows per table (dicts in the ``schemas`` layout)."""

    server: dict[str, Any]
    channels: list[dict[str, Any]] = field(default_factory=list)
    binary_logs: list[dict[str, Any]] = field(default_factory=list)
    reused_headers: list[dict[str, Any]] = field(default_factory=list)   # binary_logs rows, header not read
    relay_log_tail: list[dict[str, Any]] = field(default_factory=list)
    group_replication: list[dict[str, Any]] = field(default_factory=list)   # at most one row
    group_members: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    encrypted: bool | None = None     # the connection was TLS (None: no connection)

    def rows(self) -> Iterable[tuple[str, dict[str, Any]]]:
        yield "servers", self.server
        for name in ("channels", "binary_logs", "relay_log_tail", "group_replication", "group_members"):
            for row in getattr(self, name):
                yield name, row
        for row in self.reused_headers:
            yield REUSED_HEADER, row
        for row in self.errors:
            yield "collection_errors", row

    def as_probe(self) -> Probe | None:
        """What a probe of the server would have answered, from this read; None when the read
        did not get the server_uuid or the channel list."""
        server = self.server
        if not server.get("server_uuid") or server.get("channel_count") is None:
            return None
        return Probe(server["server"], server["server_uuid"].lower(),
                     tuple((c["source_host"], c["source_port"], c["source_uuid"]) for c in self.channels),
                     hostname=server.get("hostname") or None, reported_port=server.get("reported_port"),
                     encrypted=self.encrypted)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class _Stop(Exception):
    """Internal: the server cannot be read further (lost connection or deadline)."""


class ServerReader:
    """Reads one server; :meth:`read` never raises."""

    def __init__(self, spec: ServerSpec, ctx: RunContext, *, read_order: int | None = None,
                 topology_depth: int | None = None, resolver: SourceResolver | None = None,
                 binlogs_before: PreviousBinlogs | None = None) -> None:
        self.spec, self.ctx = spec, ctx
        self.binlogs_before = binlogs_before
        self.password: Secret | None = None
        self.settings = ctx.settings
        self.resolver = resolver
        self.cnx = None
        self.cur = None      # one cursor per connection: each cursor() costs a COM_PING round trip
        self.deadline = 0.0
        self.statement_failed = False
        self.last_quiet_error: BaseException | None = None
        self.base = {"run_id": ctx.run_id, "run_date": ctx.run_date, "server": spec.name,
                     "cluster": spec.cluster}
        self.result = ServerResult(server={
            **self.base, "read_at": None, "host": spec.host, "port": spec.port,
            "aliases": ",".join(spec.alias_texts()) or None,
            "discovered": spec.discovered, "status": "failed", "read_order": read_order,
            "topology_depth": topology_depth,
        })

    # -- error rows ------------------------------------------------------------------------------
    def error(self, error_class: str, message: str, *, statement: str | None = None,
              errno: int | None = None, sqlstate: str | None = None, channel: str | None = None) -> None:
        self.result.errors.append({
            **self.base, "read_at": _now(), "seq": len(self.result.errors), "error_class": error_class,
            "errno": errno, "sqlstate": sqlstate, "message": scrub_secret(message, self.password)[:4000],
            "statement": statement, "channel_name": channel,
        })

    def _error_from_exception(self, exc: BaseException, statement: str | None, channel: str | None = None,
                              *, connecting: bool = False) -> str:
        cls = classify_error(exc, connecting=connecting)
        errno = getattr(exc, "errno", None)
        msg = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        hint = connect_hint(cls, exc, self.spec) if connecting else None
        text = f"{type(exc).__name__}: {msg}"
        if hint:  # a TLS refusal leads with what it means; a hint about 1045 follows the driver's text
            text = f"{text} ({hint})" if cls == ErrorClass.AUTH_FAILED else f"{hint}. {text}"
        self.error(cls, text, statement=statement,
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
            self.cnx.read_timeout = timeout_seconds(min(self.spec.read_timeout_s, self.deadline - time.monotonic()))
            if self.cur is None:
                self.cur = dict_cursor(self.cnx)
            inline = inline_literals(sql, params) if params else sql
            if inline is not None:
                self.cur.execute(inline)
            else:
                self.cur.execute(sql, tuple(params))
            rows = self.cur.fetchall() if self.cur.with_rows else []
            return rows, _now()
        except Exception as exc:  # the driver raises many types; all become data
            self._drop_cursor()
            if getattr(exc, "errno", None) in quiet_errnos:
                self.last_quiet_error = exc
                return None, _now()
            cls = self._error_from_exception(exc, shown, channel)
            self.statement_failed = True
            if getattr(exc, "errno", None) in LOST_CONNECTION or cls == ErrorClass.TIMEOUT:
                raise _Stop() from None
            return None, _now()

    def _drop_cursor(self) -> None:
        """After a failed statement the next one gets a fresh cursor (no half-read result)."""
        cur, self.cur = self.cur, None
        close_quietly(cur)

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
            try:  # the secret is resolved here, on the executor, from its reference
                self.password = resolve_password(self.spec)
            except SecretError as exc:
                self.error(ErrorClass.CONFIG_ERROR, str(exc))
                return self.result
            try:
                self.cnx = connect_with_retries(self.spec, self.password, self.settings, self.deadline)
            except Exception as exc:
                self._error_from_exception(exc, None, connecting=True)
                return self.result
            self.result.encrypted = bool(getattr(self.cnx, "is_secure", False))
            self._read_all()
        except _Stop:  # the connection was lost or the deadline passed after the read began
            if server["status"] == "ok":
                server["status"] = "partial"
        except Exception as exc:  # a bug or a value nothing foresaw: still data, never a crash
            self.statement_failed = True
            self.error(ErrorClass.UNEXPECTED, f"{type(exc).__name__}: {exc}")
        finally:
            self._drop_cursor()
            close_quietly(self.cnx)
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
        group_name = self._read_variables(dialect)
        self._read_binlog_status(dialect)
        channels, group_channels = self._read_channels(dialect, group_member=bool(group_name))
        if group_name:
            self._read_group(group_name, group_channels)
        self._read_binary_logs(dialect)
        for channel in channels:
            self._read_relay_tail(dialect, channel)
        if self.statement_failed:
            server["status"] = "partial"

    def _read_variables(self, dialect: Dialect) -> str | None:
        """Read the @@GLOBAL variables of the ``servers`` row in one SELECT; return the server's
        group_replication_group_name when it has one (read in the same SELECT)."""
        server = self.result.server
        variables = list(dialect.variables)
        group_item = dialect.has_group_replication
        for _attempt in range(len(variables) + 1):
            items = [f"@@GLOBAL.{var} AS `{col}`" for col, var in variables] + ([GROUP_NAME_ITEM] if group_item else [])
            sql = "SELECT " + ", ".join(items)
            rows, at = self.query(sql, quiet_errnos=frozenset({ER_UNKNOWN_SYSTEM_VARIABLE}))
            if rows is not None:
                break
            # A variable this build lacks (forks, removed options): drop it and read the rest.
            missing = self._unknown_variable()
            if missing is None:
                if group_item and self.statement_failed:
                    # the group item is the only part that is not a plain @@GLOBAL: read on without it
                    group_item = False
                    continue
                return None
            variables = [(c, v) for c, v in variables if v != missing]
        else:
            return None
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
        return _text(row.get("group_replication_group_name")) or None if group_item else None

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
            server["binlog_filters"] = binlog_filters(row)

    def _resolve_source(self, row: dict[str, Any]) -> None:
        """Fill the channel's ``source_*`` columns from the run's one resolver."""
        if self.resolver is None:
            row.update(source_server=None, source_method=None,
                       source_problem="no inventory to resolve the source against")
            return
        res = self.resolver.resolve(self.spec.name, row["source_host"], row["source_port"], row["source_uuid"])
        row.update(source_server=res.source, source_method=res.method, source_problem=res.problem,
                   source_uuid_mismatch=res.uuid_mismatch,
                   source_candidates=",".join(res.candidates) or None)

    def _read_channels(self, dialect: Dialect, *, group_member: bool = False
                       ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        """The ``channels`` rows, and the receiver rows of the group channels (which SHOW REPLICA
        STATUS does not list) when the server is a group member."""
        st = dialect.replica_status
        rows, at = self.query(st)
        if rows is None:
            return [], {}
        self.result.server["channel_count"] = len(rows)
        receiver: dict[str, dict[str, Any]] = {}
        receiver_at = None
        applier: dict[str, dict[str, Any]] = {}
        if (rows or group_member) and dialect.has_connection_status:
            ps_rows, receiver_at = self.query("SELECT * FROM performance_schema.replication_connection_status")
            for r in ps_rows or []:
                receiver[_text(r.get("CHANNEL_NAME")) or ""] = r
            if rows and dialect.has_applier_configuration_assign:
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
                "last_io_errno": c("Last_IO_Errno", "int"), "last_io_error": redacted_error(c("Last_IO_Error")),
                "last_io_error_timestamp": c("Last_IO_Error_Timestamp"),
                "last_sql_errno": c("Last_SQL_Errno", "int"), "last_sql_error": redacted_error(c("Last_SQL_Error")),
                "last_sql_error_timestamp": c("Last_SQL_Error_Timestamp"),
                "auto_position": c("Auto_Position", "bool"),
                "source_log_file": c("Source_Log_File"),
                "read_source_log_pos": c("Read_Source_Log_Pos", "int"),
                "relay_log_file": c("Relay_Log_File"), "relay_log_pos": c("Relay_Log_Pos", "int"),
                "relay_source_log_file": c("Relay_Source_Log_File"),
                "exec_source_log_pos": c("Exec_Source_Log_Pos", "int"),
                "seconds_behind_source": c("Seconds_Behind_Source", "int"),
                "sql_delay": c("SQL_Delay", "int"),
                "replication_filters": replication_filters(r),
            }
            self._resolve_source(row)
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
                    "receiver_last_error_message": redacted_error(g("LAST_ERROR_MESSAGE")),
                })
                self.check_gtid_text(row["received_transaction_set"], "RECEIVED_TRANSACTION_SET", ps, name)
            ap = applier.get(name)
            if ap is not None:
                row["assign_gtids_to_anonymous_transactions_type"] = _text(ap.get("ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE"))
                row["assign_gtids_to_anonymous_transactions_value"] = _text(ap.get("ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE"))
            out.append(row)
        self.result.channels.extend(out)   # kept even when the read below fails (its _Stop ends the read)
        self._reread_gtid_executed(out)
        return out, {name: {**r, "_read_at": receiver_at} for name, r in receiver.items() if name in GROUP_CHANNELS}

    def _reread_gtid_executed(self, rows: Sequence[dict[str, Any]]) -> None:
        """``gtid_executed_reread`` of each status row that shows the applier caught up (as
        ``ChannelSnapshot.applier_caught_up`` decides it) with retrieved GTIDs outside its
        Executed_Gtid_Set: one ``SELECT @@GLOBAL.gtid_executed`` after the rows, for all of
        them. The server fills Executed_Gtid_Set before it reads the positions and the states,
        so a transaction committed in between looks lost (``replica_gtid_history_lost`` gives
        the server code); the later read holds it. A healthy idle or lagging replica costs no
        statement."""
        from gtid_core import ChannelSnapshot, GtidSet

        suspicious = []
        for row in rows:
            retrieved, executed = row.get("retrieved_gtid_set"), row.get("executed_gtid_set")
            if not retrieved:
                continue
            caught_up = ChannelSnapshot(
                source_log_file=row.get("source_log_file"), read_source_log_pos=row.get("read_source_log_pos"),
                relay_source_log_file=row.get("relay_source_log_file"),
                exec_source_log_pos=row.get("exec_source_log_pos"),
                sql_running=(row.get("sql_running") or "").upper() or None,
                sql_running_state=row.get("sql_running_state")).applier_caught_up
            if caught_up is not True:
                continue
            try:
                if GtidSet.parse(retrieved) <= GtidSet.parse(executed or ""):
                    continue
            except ValueError:     # already an unparseable_value row; the check cannot use the row
                continue
            suspicious.append(row)
        if not suspicious:
            return
        sql = "SELECT @@GLOBAL.gtid_executed AS gtid_executed"
        result, _ = self.query(sql)
        if not result:
            return
        text = self.convert(result[0].get("gtid_executed"), "text", "@@GLOBAL.gtid_executed", sql)
        self.check_gtid_text(text, "@@GLOBAL.gtid_executed", sql)
        for row in suspicious:
            row["gtid_executed_reread"] = text

    def _read_group(self, group_name: str, group_channels: Mapping[str, Mapping[str, Any]]) -> None:
        """The ``group_replication`` row and the ``group_members`` rows of a group member:
        replication_group_members (the view as this server sees it), replication_group_member_stats
        (every member's row from 8.0.2, its own before), the group settings, and the group
        channels' receiver state. Columns are taken by name, so a version without some of them
        stores NULL (5.7 has no MEMBER_ROLE/MEMBER_VERSION, 8.0 before 8.0.27 no
        MEMBER_COMMUNICATION_STACK)."""
        members_sql = "SELECT * FROM performance_schema.replication_group_members"
        members, members_at = self.query(members_sql)
        stats_sql = "SELECT * FROM performance_schema.replication_group_member_stats"
        stats, _ = self.query(stats_sql)
        names = ", ".join(f"'{v}'" for v in GROUP_VARIABLES)
        vars_sql = ("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM performance_schema.global_variables "
                    f"WHERE VARIABLE_NAME IN ({names})")
        settings, _ = self.query(vars_sql)
        me = (self.result.server.get("server_uuid") or "").lower()
        by_member = {(_text(r.get("MEMBER_ID")) or "").lower(): r for r in stats or []}
        row: dict[str, Any] = {**self.base, "read_at": members_at, "group_name": group_name,
                               "members_in_view": len(members) if members is not None else None}
        for r in settings or []:
            col, kind = GROUP_VARIABLES.get((_text(r.get("VARIABLE_NAME")) or "").lower(), (None, None))
            if col:
                row[col] = self.convert(r.get("VARIABLE_VALUE"), kind, f"@@GLOBAL.{r['VARIABLE_NAME']}", vars_sql)
        roles = (self._roles_before_802(members, row.get("single_primary_mode"))
                 if members and "MEMBER_ROLE" not in members[0] else {})
        for m in members or []:
            member_id = _text(m.get("MEMBER_ID")) or ""
            c = lambda col, kind="text": self.convert(m.get(col), kind, col, members_sql)  # noqa: E731
            st = by_member.get(member_id.lower(), {})
            g = lambda col: self.convert(st.get(col), "int", col, stats_sql)  # noqa: E731
            member = {
                **self.base, "read_at": members_at, "group_name": group_name, "member_id": member_id,
                "member_host": c("MEMBER_HOST"), "member_port": c("MEMBER_PORT", "int"),
                "member_state": c("MEMBER_STATE"),
                "member_role": c("MEMBER_ROLE") or roles.get(member_id.lower()) or None,
                "member_version": c("MEMBER_VERSION") or None,
                "member_communication_stack": c("MEMBER_COMMUNICATION_STACK") or None,
                "view_id": _text(st.get("VIEW_ID")) or None,
                "transactions_in_queue": g("COUNT_TRANSACTIONS_IN_QUEUE"),
                "transactions_checked": g("COUNT_TRANSACTIONS_CHECKED"),
                "conflicts_detected": g("COUNT_CONFLICTS_DETECTED"),
                "transactions_rows_validating": g("COUNT_TRANSACTIONS_ROWS_VALIDATING"),
                "transactions_committed_all_members": _text(st.get("TRANSACTIONS_COMMITTED_ALL_MEMBERS")),
                "last_conflict_free_transaction": _text(st.get("LAST_CONFLICT_FREE_TRANSACTION")),
                "transactions_remote_in_applier_queue": g("COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE"),
                "transactions_remote_applied": g("COUNT_TRANSACTIONS_REMOTE_APPLIED"),
                "transactions_local_proposed": g("COUNT_TRANSACTIONS_LOCAL_PROPOSED"),
                "transactions_local_rollback": g("COUNT_TRANSACTIONS_LOCAL_ROLLBACK"),
            }
            self.result.group_members.append(member)
            if member_id.lower() == me:
                row.update(member_state=member["member_state"], member_role=member["member_role"],
                           member_version=member["member_version"])
        ps = "SELECT * FROM performance_schema.replication_connection_status"
        for channel, prefix in (("group_replication_applier", "applier"), ("group_replication_recovery", "recovery")):
            rec = group_channels.get(channel)
            if rec is None:
                continue
            g = lambda col, kind="text": self.convert(rec.get(col), kind, col, ps, channel)  # noqa: E731
            row[f"{prefix}_service_state"] = g("SERVICE_STATE")
            row[f"{prefix}_last_error_number"] = g("LAST_ERROR_NUMBER", "int")
            row[f"{prefix}_last_error_message"] = redacted_error(g("LAST_ERROR_MESSAGE")) or None
            if prefix == "applier":
                row["applier_received_transaction_set"] = g("RECEIVED_TRANSACTION_SET")
                self.check_gtid_text(row["applier_received_transaction_set"], "RECEIVED_TRANSACTION_SET", ps, channel)
        self.result.group_replication.append(row)

    def _roles_before_802(self, members: Sequence[Mapping[str, Any]],
                          single_primary_mode: bool | None) -> dict[str, str]:
        """:func:`member_roles_before_802` of a member whose replication_group_members has no
        MEMBER_ROLE; the status variable is read only in single-primary mode and when the view
        has a live member (a stopped member lists only itself, OFFLINE)."""
        primary = None
        if single_primary_mode and any(_text(m.get("MEMBER_STATE")) in _ROLE_STATES for m in members):
            status, _ = self.query("SHOW GLOBAL STATUS LIKE 'group_replication_primary_member'")
            primary = next((_text(r.get("Value")) for r in status or []
                            if _text(r.get("Variable_name")) == "group_replication_primary_member"), None)
        return member_roles_before_802(members, single_primary_mode, primary)

    def _read_binary_logs(self, dialect: Dialect) -> None:
        server = self.result.server
        if server.get("log_bin") is False:
            return
        rows, at = self.query("SHOW BINARY LOGS")
        if rows is None:
            return
        first_read = max(0, len(rows) - self.settings.max_binary_logs)
        limit = self.settings.binlog_header_events
        before = self.binlogs_before
        reusable = before.reusable(server.get("server_uuid"), server.get("gtid_executed")) if before else {}
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
            if seq >= first_read and seq < len(rows) - 1 and row["file_size"] is not None \
                    and reusable.get(name) == row["file_size"]:
                self.result.reused_headers.append(row)   # closed, unchanged: last night's header holds
                continue
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
        if dialect.has_channels:    # also the default channel: a replica with several refuses it unnamed (3079)
            sql += " FOR CHANNEL %s"
            params.append(channel)
        quiet_errnos = frozenset({ER_ERROR_WHEN_EXECUTING_COMMAND}) if quiet else frozenset()
        return self.query(sql, params, channel=channel, quiet_errnos=quiet_errnos)

    def _read_relay_tail(self, dialect: Dialect, channel: dict[str, Any]) -> None:
        """The last events of the channel's newest relay log, whatever the backlog, with a bound on
        what the server decodes for it.

        The question the audit asks of a relay log is whether its *last* transaction is
        complete, so the end of the newest file is what must be read. The newest file is the
        applier's (Relay_Log_File) or a later one the receiver rotated to (the next file
        numbers are probed). Reading starts at Relay_Log_Pos (a transaction boundary) when the
        newest file is the applier's and the server is 8.0.2 or later, else at the file's start
        (before 8.0.2 the last retrieved GTID, which Bug #72392's check needs, may lie before
        the applier's position, and only the relay log shows it). :class:`_RelayScan` finds the
        end and reads the last ``relay_tail_max_events`` events; the server decodes at most
        ``relay_tail_max_scan_events`` events for it (``relay_tail_scanned_events`` records how
        many).

        What the columns say: ``relay_tail_first_event`` events after the start were *not*
        kept (more than zero: the window may have lost the head of a transaction larger than
        itself, Gtid event included, and the check must not read it as complete);
        ``relay_tail_truncated`` is true when the end was not reached (the scan bound, or a
        statement failed): no rows are kept then, and no check may treat the tail as the end of
        the relay log. When the kept events belong to a group whose Gtid-type event is not among
        them, the event at the applier's position (Relay_Log_File:Relay_Log_Pos, a group start) is
        read once (``applier_event_type``, ``applier_event_gtid``): before 8.0.2 it is the only
        other place the dangling transaction's GTID can come from.

        Rows are stored sanitized (:func:`gtid_core.relay_log.sanitized`): no statement text and
        no row data from the audited server reach a table.
        """
        from gtid_core.relay_log import gtid_event_missing, sanitized

        name = channel["channel_name"]
        current = channel.get("relay_log_file")
        if not current:
            return
        # Before 8.0.2 nothing but the relay log tells the last retrieved GTID (no
        # LAST_QUEUED_TRANSACTION), and on a caught-up replica it lies before the applier's
        # position: read the newest file from its start (its end is still what is kept).
        from_applier = dialect.version.triple >= (8, 0, 2)
        newest, start = current, (channel.get("relay_log_pos") if from_applier else None)
        m = re.fullmatch(r"(.*\.)(\d+)", current)
        if m:  # probe the next file numbers: the receiver may have rotated past the applier
            prefix, number, width = m.group(1), int(m.group(2)), len(m.group(2))
            for step in range(1, self.settings.relay_probe_files + 1):
                candidate = f"{prefix}{number + step:0{width}d}"
                rows, _ = self._relay_events(dialect, name, candidate, None, 0, 1, quiet=True)
                if not rows:
                    break
                newest, start = candidate, None
        scan = _RelayScan(self, dialect, name, newest, self.settings.relay_tail_max_scan_events)
        window, first, at = scan.tail(start, max(1, self.settings.relay_tail_max_events),
                                      max(1, self.settings.relay_tail_page_events))
        st = "SHOW RELAYLOG EVENTS"
        events = []
        for i, ev in enumerate(window or ()):
            event = sanitized({"Log_name": _text(ev.get("Log_name")) or newest,
                               "Pos": self.convert(ev.get("Pos"), "int", "Pos", st, name) or 0,
                               "Event_type": _text(ev.get("Event_type")) or "?",
                               "Server_id": self.convert(ev.get("Server_id"), "int", "Server_id", st, name),
                               "End_log_pos": self.convert(ev.get("End_log_pos"), "int", "End_log_pos", st, name),
                               "Info": _text(ev.get("Info"))})
            events.append(event)
            self.result.relay_log_tail.append({
                **self.base, "read_at": at, "channel_name": name, "seq": first + i,
                "log_name": event.log_name, "pos": event.pos, "event_type": event.event_type,
                "event_server_id": event.server_id, "end_log_pos": event.end_log_pos,
                "gtid": event.gtid, "query_kind": event.query_kind,
            })
        truncated = window is None
        channel.update({"relay_tail_file": newest, "relay_tail_start_pos": start,
                        "relay_tail_events": len(events), "relay_tail_first_event": None if truncated else first,
                        "relay_tail_truncated": truncated})
        applier_pos = channel.get("relay_log_pos")
        if not truncated and gtid_event_missing(events) and newest == current and applier_pos:
            with contextlib.suppress(_RelayScan.Failed):  # one seek, one event; a failure is recorded
                rows = scan.read(applier_pos, 0, 1, charge_budget=False)
                if rows:
                    applier = sanitized({**rows[0], "Log_name": current, "Pos": applier_pos})
                    channel.update(applier_event_type=applier.event_type, applier_event_gtid=applier.gtid)
        channel["relay_tail_scanned_events"] = scan.spent


#: The largest jump of one probe of the end of a relay log, in events: the server decodes that many
#: events for it. It bounds what overshooting the end costs (about twice this) and, with the scan
#: bound, the number of statements (docs/collection.md).
RELAY_PROBE_STEP_MAX = 65_536


class _RelayScan:
    """``SHOW RELAYLOG EVENTS`` over one relay log file, with a bound on what the server decodes.

    ``SHOW RELAYLOG EVENTS IN f FROM p LIMIT k, n`` makes the server seek to ``p`` (a position the
    server listed as an event's ``Pos``: the relay log's own position, unlike ``End_log_pos``,
    which is the source's) and decode ``k + n`` events. Every statement is charged that much
    against ``budget`` (an upper bound: fewer when the file ends first) before it is sent, so the
    server decodes at most ``budget`` events for one tail whatever the file holds.

    The end is found by galloping from a moving base: a probe ``FROM <Pos of the furthest event
    seen> LIMIT step, 1`` at steps doubling up to :data:`RELAY_PROBE_STEP_MAX`; each success
    moves the base to the event it returned, so the events before it are never decoded again.
    The first failed probe brackets the end, halving probes from the base narrow it to one event,
    and the window is read from the nearest position seen before it, in pages that continue
    ``FROM`` the last event listed (never by re-counting from the start). Finding the end of N
    events costs about N + 2 x step decoded events, O(N) in all (it was O(N log N) plus N per
    page: probes counted from a fixed start).

    Events decompressed from a Transaction_payload are listed with the position of the event
    after the payload, not their own; a page therefore continues from the last event listed with
    its own position, skipping what was listed after it.
    """

    def __init__(self, reader: "ServerReader", dialect: Dialect, channel: str, log_name: str, budget: int):
        self.reader, self.dialect, self.channel, self.log_name = reader, dialect, channel, log_name
        self.budget = max(1, budget)
        self.spent = 0          # events the server was asked to decode (probe offsets + rows)
        self.at: dt.datetime | None = None

    class OutOfBudget(Exception):
        """The next statement would make the server decode more than the budget."""

    class Failed(Exception):
        """A statement failed (already recorded as a collection error)."""

    def read(self, pos: int | None, skip: int, limit: int, *, charge_budget: bool = True) -> list[dict[str, Any]]:
        """Rows ``skip`` .. ``skip + limit - 1`` after position ``pos`` (None: the file's start)."""
        if charge_budget and self.spent + skip + limit > self.budget:
            raise self.OutOfBudget()
        self.spent += skip + limit
        rows, self.at = self.reader._relay_events(self.dialect, self.channel, self.log_name, pos, skip, limit)
        if rows is None:
            raise self.Failed()
        return rows

    def tail(self, start: int | None, keep: int, page: int):
        """(rows, first, read_at): the last ``keep`` events after ``start`` and the number of events
        before them that were not kept; rows None when the end was not reached."""
        try:
            return self._tail(start, keep, page)
        except (self.OutOfBudget, self.Failed):
            return None, 0, None

    def _tail(self, start: int | None, keep: int, page: int):
        probe = self.read(start, keep, 1)
        if not probe:  # at most ``keep`` events follow the start
            rows, dropped = self._forward(start, 0, keep, page)
            return rows, dropped, self.at
        known = [(0, start), (keep, self._pos(probe[0]))]  # (offset, Pos) of events seen
        base, step, high = keep, keep, None    # an event exists at offset ``base``, none at ``high``
        while high is None:
            step = min(2 * step, RELAY_PROBE_STEP_MAX)
            jump = min(step, self.budget - self.spent - 1)
            if jump < 1:
                raise self.OutOfBudget()
            rows = self.read(known[-1][1], jump, 1)
            if rows:
                base += jump
                known.append((base, self._pos(rows[0])))
            else:
                high = base + jump
        while high - base > 1:
            mid = (base + high) // 2
            rows = self.read(known[-1][1], mid - base, 1)
            if rows:
                base = mid
                known.append((base, self._pos(rows[0])))
            else:
                high = mid
        first = max(0, high - keep)   # ``high`` events follow the start: keep the last ``keep``
        offset, pos = [(o, p) for o, p in known if o <= first][-1]
        rows, dropped = self._forward(pos, first - offset, keep, page)
        return rows, first + dropped, self.at

    def _pos(self, row: Mapping[str, Any]) -> int:
        """A listed event's Pos, the next FROM; a row without one ends the read (recorded)."""
        pos = _to_int_or_none(row.get("Pos"))
        if pos is None:
            self.reader.error(ErrorClass.UNPARSEABLE_VALUE, f"SHOW RELAYLOG EVENTS row without a Pos: {row!r}",
                              statement="SHOW RELAYLOG EVENTS", channel=self.channel)
            raise self.Failed()
        return pos

    def _forward(self, pos: int | None, skip: int, keep: int, page: int):
        """Read from ``pos`` (after ``skip`` events) to the end of the file, in pages; (the last
        ``keep`` rows, how many rows read before them)."""
        kept: list[dict[str, Any]] = []
        total = 0
        anchor, after = pos, skip      # continue FROM ``anchor`` LIMIT ``after``, n
        payload_end = None
        while True:
            rows = self.read(anchor, after, page)
            for row in rows:
                end_pos = (_text(row.get("Log_name")), _to_int_or_none(row.get("End_log_pos")))
                kind = (_text(row.get("Event_type")) or "").lower()
                if payload_end is not None and end_pos == payload_end and kind != "transaction_payload":
                    after += 1         # decompressed from the payload: listed with another event's Pos
                else:
                    payload_end = end_pos if kind == "transaction_payload" else None
                    anchor, after = self._pos(row), 1
            kept = (kept + rows)[-keep:]
            total += len(rows)
            if len(rows) < page:
                return kept, total - len(kept)


def _to_int_or_none(value: Any) -> int | None:
    try:
        return _to_int(value)
    except _BadValue:
        return None


def read_server(spec: ServerSpec, ctx: RunContext, **kwargs: Any) -> ServerResult:
    """Read one server into rows; never raises (failures are ``collection_errors`` rows).
    ``kwargs``: ``read_order``, ``topology_depth``, ``resolver`` (see :class:`ServerReader`)."""
    return ServerReader(spec, ctx, **kwargs).read()


# --- the probe: what planning needs, one light read per server ------------------------------

def probe_server(spec: ServerSpec, settings: ReadSettings, want_replicas: bool = False) -> Probe:
    """A light read for planning: server_uuid, hostname, each channel's source, optionally SHOW
    REPLICAS. Never raises; a server that cannot be probed is planned alone (its read records
    why)."""
    cnx = None
    try:
        password = resolve_password(spec)
        # the module's attribute, not an imported name: what replaces ``jobs.mysql_connection.connect``
        # (a test, benchmarks/connector_cext.py) replaces it for the probe as for the read
        cnx = mysql_connection.connect(spec, password, min(spec.connect_timeout_s, settings.server_deadline_s))
        cur = dict_cursor(cnx)
        cur.execute("SELECT @@GLOBAL.version AS version, @@GLOBAL.server_uuid AS server_uuid, "
                    "@@GLOBAL.hostname AS hostname, @@GLOBAL.port AS port")
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
        return Probe(spec.name, uuid, sources, replicas, hostname=_text(row.get("hostname")) or None,
                     reported_port=_to_int_or_none(row.get("port")), encrypted=bool(cnx.is_secure))
    except Exception:
        return Probe(spec.name, None, ok=False)
    finally:
        close_quietly(cnx)


# --- reading a partition: one flat pool, the read order kept inside each group -------------------

#: A replication group as a task receives it: waves of servers, each wave read after the previous.
#: Per server: (spec, read_order, depth, planned) where ``planned`` is the previous run's
#: :class:`Probe` the plan was made from (None when a probe of tonight planned it).
Group = Sequence[Sequence[tuple[ServerSpec, int | None, int | None, Probe | None]]]


def read_groups(groups: Iterable[Group], ctx: RunContext, inventory: Sequence[InventoryServer],
                binlogs_before: Mapping[str, PreviousBinlogs] | None = None
                ) -> Iterator[tuple[str, Any]]:
    """Read every server of ``groups`` on one pool of ``per_task_concurrency`` threads and yield
    ``(table, row)`` pairs as servers finish.

    Within a group, a wave starts only when the previous wave (its replicas) is done: a replica
    is read before its source, which is what makes ``errant_transactions`` sound. Across groups
    nothing waits: a large group does not hold back the small ones, and a slow server holds one
    thread for at most its deadline. One resolver (one DNS cache) serves the partition.

    Besides the tables' rows: ``(REPLAN, probe)`` for a server planned from the previous run
    whose read shows another topology (server_uuid, names, channel sources) than the plan's, so
    that the driver re-reads its component in a sound order, and ``(PLAIN_TEXT, name)`` for a
    server read without TLS.
    """
    resolver = SourceResolver(inventory)
    binlogs_before = binlogs_before or {}
    pending = [list(g) for g in groups if g]
    waves_left = {i: list(g) for i, g in enumerate(pending)}
    running: dict[Any, tuple[int, Probe | None]] = {}       # future -> (group index, planned probe)
    open_reads = {i: 0 for i in waves_left}
    # reads as they finish, in that order: one put per read (from its thread), one get here. The
    # futures module's wait() takes and releases the lock of every running read on each call: with
    # the schema checks, 13-35 % of a task's Python (docs/benchmarks.md, "The read task's own Python")
    finished: queue.SimpleQueue = queue.SimpleQueue()
    with ThreadPoolExecutor(max_workers=max(1, ctx.settings.per_task_concurrency)) as pool:

        def start_next_wave(i: int) -> None:
            while waves_left[i] and open_reads[i] == 0:
                wave = waves_left[i].pop(0)
                for spec, order, depth, planned in wave:
                    fut = pool.submit(read_server, spec, ctx, read_order=order, topology_depth=depth,
                                      resolver=resolver, binlogs_before=binlogs_before.get(spec.name))
                    running[fut] = (i, planned)
                    open_reads[i] += 1
                    fut.add_done_callback(finished.put)

        for i in list(waves_left):
            start_next_wave(i)
        while running:
            fut = finished.get()
            i, planned = running.pop(fut)
            open_reads[i] -= 1
            result = fut.result()
            yield from result.rows()
            seen = result.as_probe()
            if planned is not None and seen is not None and seen.topology() != planned.topology():
                yield REPLAN, seen
            if result.encrypted is False:
                yield PLAIN_TEXT, result.server["server"]
            start_next_wave(i)


# --- the Spark task bodies (mapPartitions): plain values in, rows as schema tuples out ----------

def probe_partition(specs: Iterable[ServerSpec], settings: ReadSettings, want_replicas: bool = False
                    ) -> Iterator[Probe]:
    """Probe the servers of one partition on a bounded pool."""
    specs = list(specs)
    if not specs:
        return iter(())
    with ThreadPoolExecutor(max_workers=min(settings.per_task_concurrency, len(specs))) as pool:
        return iter(list(pool.map(lambda s: probe_server(s, settings, want_replicas), specs)))


def read_partition(items: Iterable[Any], ctx: RunContext, inventory: Any) -> Iterator[tuple[str, Any]]:
    """Read every group of one partition and yield ``(table, row)`` with ``row`` a tuple in the
    table's column order (``schemas``), ready for a DataFrame; the driver-only pairs of
    :func:`read_groups` pass as they are (a :data:`REUSED_HEADER` row is a ``binary_logs`` tuple).
    ``items`` are bundles of groups, or ``(bundle_index, (bundles, previous_binlogs))`` pairs from
    a cogroup with the previous run's :class:`PreviousBinlogs`. ``inventory`` is the resolver's
    inventory or a Spark broadcast of it."""
    from schemas import get_table

    inventory = getattr(inventory, "value", inventory)
    groups: list = []
    before: dict[str, PreviousBinlogs] = {}
    for item in items:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int):
            bundles, previous = item[1]
            groups.extend(group for bundle in bundles for group in bundle)
            before.update((p.server, p) for p in previous)
        else:
            groups.extend(item)
    tables: dict[str, Any] = {}
    for table, row in read_groups(groups, ctx, inventory, before):
        if table in (REPLAN, PLAIN_TEXT):
            yield table, row
            continue
        schema_name = "binary_logs" if table == REUSED_HEADER else table
        schema = tables.get(schema_name) or tables.setdefault(schema_name, get_table(schema_name))
        schema.check_row(row)
        yield table, tuple(row.get(c) for c in schema.column_names)
