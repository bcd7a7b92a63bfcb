"""The wire-protocol side: every simulated server on its own loopback address and port.

The MySQL protocol (handshake, mysql_native_password authentication, COM_QUERY result sets, error
packets, COM_PING) is mysql-mimic's. Its ``BaseSession.handle_query`` receives each statement as
text; :class:`SimSession` answers it the way the server's version would (:mod:`.dialects`) from
the server's model (:mod:`.model`). mysql-mimic's own SQL layer (sqlglot) is not used: it cannot
parse ``SHOW RELAYLOG EVENTS ... FOR CHANNEL`` or ``SHOW REPLICA STATUS``, and a simulated
version must reject what the real one rejects.

One event loop serves a shard of the fleet; :class:`Simulator` starts several processes (one
shard each) and stops them by pid. Every process stops by itself after ``lifetime_s``.

Each process counts what it served (:data:`STATS`: connections, statements, COM_PINGs, other
commands that get an answer, handshake round trips) and writes the counters to its stats file at
exit and, while it runs, whenever it receives SIGUSR1 (:meth:`Simulator.snapshot` reads them
during a run). Given a
certificate (``tls=(cert, key)``), the servers whose version offers TLS out of the box
(:attr:`.dialects.Shape.offers_tls`: 5.7.28+, 8.0+) offer it with that certificate; the older
ones offer none, as a default install of those versions does. Without one, none offers TLS.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import logging
import os
import random
import re
import resource
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gtid_core import GtidSet
from jobs.sandbox.sim.dialects import BIGINT, ERR, SQLSTATE, STRING, Col, Shape, SqlError, shape_for
from jobs.sandbox.sim.model import (SimChannel, SimFleet, SimServer, format_desc_end, iter_gtids,
                                    transaction_events)

__all__ = ["Latency", "SimSession", "serve", "Simulator", "default_variables"]

log = logging.getLogger("gtid_audit.sim")

# What this process served (written to the stats file on SIGUSR1 and at exit; the benchmark
# reads it). Every key is a count; "round trips" are handshake_round_trips + statements + pings +
# commands (see _HandshakeStream for how a handshake is counted).
STATS = {"connections": 0, "statements": 0, "pings": 0, "commands": 0, "handshake_round_trips": 0}


# --------------------------------------------------------------------------------------------
# latency

@dataclass(frozen=True)
class Latency:
    """Seconds added before each answer, uniform in [lo, hi], per statement kind.

    ``Latency.parse("1-3")`` (milliseconds) or ``"1-3,binlog_events=5-8"``; kinds: variables,
    replica_status, binlog_status, binary_logs, binlog_events, relaylog_events, performance_schema,
    replicas, status, set, other."""

    default: tuple[float, float] = (0.001, 0.003)
    per_kind: tuple[tuple[str, tuple[float, float]], ...] = ()

    @classmethod
    def parse(cls, text: str) -> "Latency":
        default, kinds = (0.001, 0.003), []
        for part in filter(None, (p.strip() for p in text.split(","))):
            kind, _, span = part.rpartition("=")
            lo, _, hi = span.partition("-")
            pair = (float(lo) / 1000, float(hi or lo) / 1000)
            if kind:
                kinds.append((kind, pair))
            else:
                default = pair
        return cls(default, tuple(kinds))

    def seconds(self, kind: str, rng: random.Random) -> float:
        lo, hi = dict(self.per_kind).get(kind, self.default)
        return rng.uniform(lo, hi)

    def mean(self) -> float:
        return sum(self.default) / 2

    def spec(self) -> str:
        fmt = lambda p: f"{p[0] * 1000:g}-{p[1] * 1000:g}"  # noqa: E731
        return ",".join([fmt(self.default)] + [f"{k}={fmt(p)}" for k, p in self.per_kind])


# --------------------------------------------------------------------------------------------
# variables

def default_variables(server: SimServer, shape: Shape) -> dict[str, Any]:
    """A healthy server's variables for its version (defaults of that version where they
    matter: parallel appliers with commit order from 8.0.27, TABLE repositories from 8.0), and
    read_only / super_read_only ON on a server with channels."""
    t = shape.version.triple
    workers = 4 if t >= (8, 0, 27) else 0
    values: dict[str, Any] = {
        "version": server.version + ("-log" if t < (8, 0, 0) else ""), "version_comment": "MySQL Community Server - GPL",
        "hostname": server.name, "port": server.port, "server_id": server.server_id,
        "server_uuid": server.server_uuid, "gtid_mode": "ON",
        "enforce_gtid_consistency": "ON" if shape.variables["enforce_gtid_consistency"] == "s" else 1,
        "gtid_executed": server.gtid_executed, "gtid_purged": server.gtid_purged, "log_bin": 1,
        "log_slave_updates": 1, "log_replica_updates": 1, "sync_binlog": 1, "innodb_flush_log_at_trx_commit": 1,
        "relay_log_recovery": 1, "slave_parallel_workers": workers, "replica_parallel_workers": workers,
        # the default changed from DATABASE to LOGICAL_CLOCK in 8.0.27 (with 4 workers by default)
        "slave_parallel_type": "LOGICAL_CLOCK" if t >= (8, 0, 27) else "DATABASE",
        "replica_parallel_type": "LOGICAL_CLOCK" if t >= (8, 0, 27) else "DATABASE",
        "slave_preserve_commit_order": 1, "replica_preserve_commit_order": 1, "binlog_format": "ROW",
        # a replica is read-only, as a DBA sets it (config_replica_writable); scenarios override it
        "read_only": int(bool(server.channels)), "super_read_only": int(bool(server.channels)),
        "relay_log_info_repository": "TABLE" if t >= (8, 0, 0) else "FILE",
        "master_info_repository": "TABLE" if t >= (8, 0, 0) else "FILE",
        "sql_mode": "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
                    "NO_ENGINE_SUBSTITUTION", "autocommit": 1, "max_allowed_packet": 67108864, "wait_timeout": 28800,
        "character_set_client": "utf8mb4",
    }
    values.update(server.variables)
    return values


# --------------------------------------------------------------------------------------------
# statements

_WS = re.compile(r"\s+")
_VAR_ITEM = re.compile(r"^@@(?:(global|session|local)\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\s+(?:AS\s+)?`?([^`\s]+)`?)?$",
                       re.I)
# ``(SELECT VARIABLE_VALUE FROM performance_schema.global_variables WHERE VARIABLE_NAME = 'x') AS `y```:
# the collector's group_replication_group_name item (NULL where the variable does not exist)
_GV_ITEM = re.compile(r"^\(\s*SELECT\s+VARIABLE_VALUE\s+FROM\s+performance_schema\.`?global_variables`?\s+"
                      r"WHERE\s+VARIABLE_NAME\s*=\s*'([^']*)'\s*\)(?:\s+(?:AS\s+)?`?([^`\s]+)`?)?$", re.I)
_GV = re.compile(r"^SELECT\s+(.+?)\s+FROM\s+performance_schema\.`?global_variables`?"
                 r"(?:\s+WHERE\s+VARIABLE_NAME\s*(?:=\s*'([^']*)'|IN\s*\(([^)]*)\)))?$", re.I | re.S)
_PS = re.compile(r"^SELECT\s+(.+?)\s+FROM\s+performance_schema\.`?(\w+)`?"
                 r"(?:\s+WHERE\s+CHANNEL_NAME\s*=\s*'([^']*)')?$", re.I | re.S)
_EVENTS = re.compile(r"^SHOW\s+(BINLOG|RELAYLOG)\s+EVENTS(?:\s+IN\s+'([^']*)')?(?:\s+FROM\s+(\d+))?"
                     r"(?:\s+LIMIT\s+(\d+)(?:\s*,\s*(\d+))?)?(?:\s+FOR\s+CHANNEL\s+'([^']*)')?$", re.I)
_STATUS = re.compile(r"^SHOW\s+(?:GLOBAL\s+|SESSION\s+)?STATUS(?:\s+LIKE\s+'([^']*)')?$", re.I)
_REPLICA_STATUS = re.compile(r"^SHOW\s+(REPLICA|SLAVE)\s+STATUS(?:\s+FOR\s+CHANNEL\s+'([^']*)')?$", re.I)

_OLD = {"Replica": "Slave", "Source": "Master"}


def _split_items(text: str) -> list[str]:
    """The items of a select list: commas inside parentheses or quotes do not split."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'`\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return items


def _chosen_columns(columns: str, cols) -> list:
    """The table's columns a select list names (``*``: all, in table order); an unknown name is
    the server's ER_BAD_FIELD_ERROR."""
    if columns.strip() == "*":
        return list(cols)
    by_name = {c.name.lower(): c for c in cols}
    chosen = []
    for name in _split_items(columns):
        c = by_name.get(name.strip("`").lower())
        if c is None:
            raise ERR.bad_field(name)
        chosen.append(c)
    return chosen


def _canonical(name: str) -> str:
    """The 8.0.22+ name of a SHOW SLAVE STATUS column (the values are keyed by those)."""
    from jobs.sandbox.sim.dialects import _OLD_NAMES

    for new, old in _OLD_NAMES.items():
        if old == name:
            return new
    return name


class SimSession:
    """Answers the statements of one connection to one simulated server (mysql-mimic session)."""

    def __init__(self, server: SimServer, shape: Shape, latency: Latency, rng: random.Random):
        from mysql_mimic.variables import GlobalVariables, SessionVariables

        self.server, self.shape, self.latency, self.rng = server, shape, latency, rng
        self.values = default_variables(server, shape)
        self.variables = SessionVariables(GlobalVariables())
        self.variables.set("version", self.values["version"], force=True)
        self.username: str | None = None
        self.database: str | None = None
        self.connection = None
        self.statements = 0

    # -- mysql-mimic's BaseSession interface ------------------------------------------------------
    async def init(self, connection) -> None:
        self.connection = connection
        STATS["connections"] += 1
        answer_ping = connection.handle_ping

        async def counted_ping(data: bytes) -> None:
            """COM_PING is answered by mysql-mimic; count it and give it the round trip's latency."""
            STATS["pings"] += 1
            await asyncio.sleep(self.latency.seconds("ping", self.rng))
            await answer_ping(data)

        connection.handle_ping = counted_ping

    async def close(self) -> None:
        pass

    async def reset(self) -> None:
        pass

    async def use(self, database: str) -> None:
        self.database = database

    async def handle_query(self, sql: str, attrs: dict[str, str]):
        from mysql_mimic.errors import MysqlError

        self.statements += 1
        STATS["statements"] += 1
        fault = self.server.fault
        if fault == "dropped" and self.statements > int(self.server.fault_arg or 0):
            self.connection.stream.writer.transport.abort()   # a restart in the middle of the read
            await asyncio.sleep(3600)
        text = _WS.sub(" ", sql.strip().rstrip(";")).strip()
        kind, answer = self.route(text)
        delay = self.latency.seconds(kind, self.rng)
        if fault == "slow" and kind != "set":
            delay = float(self.server.fault_arg or 30.0)
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            return answer()
        except SqlError as exc:
            raise MysqlError(exc.message, exc.errno) from None

    # -- routing ----------------------------------------------------------------------------------
    def route(self, text: str):
        up = text.upper()
        if up.startswith("SET "):
            return "set", lambda: None
        if up.startswith("SELECT @@"):
            return "variables", lambda: self.select_variables(text[len("SELECT "):])
        m = _GV.match(text)
        if m:
            names = m.group(3) if m.group(3) is not None else (f"'{m.group(2)}'" if m.group(2) is not None else None)
            return "performance_schema", lambda: self.global_variables(m.group(1), names)
        m = _PS.match(text)
        if m:
            return "performance_schema", lambda: self.performance_schema(m.group(1), m.group(2).lower(), m.group(3))
        m = _REPLICA_STATUS.match(text)
        if m:
            return "replica_status", lambda: self.replica_status(f"SHOW {m.group(1).upper()} STATUS", m.group(2), text)
        m = _STATUS.match(text)
        if m:
            return "status", lambda: self.status(m.group(1))
        if up in ("SHOW BINARY LOG STATUS", "SHOW MASTER STATUS"):
            return "binlog_status", lambda: self.binlog_status(up)
        if up in ("SHOW BINARY LOGS", "SHOW MASTER LOGS"):
            return "binary_logs", lambda: self.binary_logs(up)
        if up in ("SHOW REPLICAS", "SHOW SLAVE HOSTS"):
            return "replicas", lambda: self.replicas(up)
        m = _EVENTS.match(text)
        if m:
            which = m.group(1).lower()
            return f"{which}_events", lambda: self.events(which, m.group(2), m.group(3), m.group(4), m.group(5),
                                                           m.group(6), text)
        if up == "SELECT 1":
            return "other", lambda: ([(1,)], [_column(Col("1", BIGINT))])
        return "other", lambda: _raise(ERR.parse(text.split(" ", 1)[-1][:80]))

    def _need(self, privilege: str) -> None:
        if self.server.fault == "privilege":
            raise ERR.privilege(privilege)

    # -- answers ----------------------------------------------------------------------------------
    def select_variables(self, items: str):
        rows, cols = [], []
        for item in _split_items(items):
            g = _GV_ITEM.match(item)
            if g:
                if "global_variables" not in self.shape.tables:
                    raise ERR.no_table("performance_schema", "global_variables")
                cols.append(Col(g.group(2) or item, STRING))
                rows.append(self._global_variables().get(g.group(1).lower()))
                continue
            m = _VAR_ITEM.match(item)
            if not m:
                raise ERR.parse(item)
            scope, name, alias = m.groups()
            key = name.lower()
            kind = self.shape.variables.get(key)
            if kind is None or key not in self.values:
                raise ERR.unknown_variable(name)
            value = self.values[key]
            if kind == "s":
                value = None if value is None else str(value)
                cols.append(Col(alias or item.split(" ")[0], STRING))
            else:
                cols.append(Col(alias or item.split(" ")[0], BIGINT))
            rows.append(value)
        return [tuple(rows)], [_column(c) for c in cols]

    def replica_status(self, statement: str, channel: str | None, text: str):
        cols = self.shape.replica_status_statements.get(statement)
        if cols is None:
            raise ERR.parse(text.split(" ", 1)[1])
        if channel is not None and not self.shape.channels:
            raise ERR.parse(text[text.upper().index("FOR CHANNEL"):])
        self._need("SUPER, REPLICATION CLIENT")
        chans = [c for c in self.server.channels if channel is None or c.name == channel]
        rows = [tuple(self._status_value(_canonical(c.name), ch) for c in cols) for ch in chans]
        return rows, [_column(c) for c in cols]

    def _status_value(self, col: str, ch: SimChannel) -> Any:
        io, sql = ch.io_running == "Yes", ch.sql_running == "Yes"
        table_repos = self.shape.version.triple >= (8, 0, 0)
        values = {
            "Replica_IO_State": ch.io_state if io else "", "Source_Host": ch.source_host, "Source_User": "repl",
            "Source_Port": ch.source_port, "Connect_Retry": 60, "Source_Log_File": ch.source_log_file,
            "Read_Source_Log_Pos": ch.read_pos, "Relay_Log_File": ch.relay_log_file,
            "Relay_Log_Pos": ch.relay_log_pos, "Relay_Source_Log_File": ch.source_log_file,
            "Replica_IO_Running": ch.io_running, "Replica_SQL_Running": ch.sql_running, "Last_Errno": 0,
            "Skip_Counter": 0, "Exec_Source_Log_Pos": ch.exec_pos, "Relay_Log_Space": ch.relay_log_pos + 512,
            "Until_Condition": "None", "Until_Log_Pos": 0, "Source_SSL_Allowed": "No",
            "Seconds_Behind_Source": 0 if io and sql else None, "Source_SSL_Verify_Server_Cert": "No",
            "Last_IO_Errno": ch.last_io_errno, "Last_IO_Error": ch.last_io_error, "Last_SQL_Errno": 0,
            "Source_Server_Id": ch.source_server_id, "Source_UUID": ch.source_uuid,
            "Source_Info_File": "mysql.slave_master_info" if table_repos else "/var/lib/mysql/master.info",
            "SQL_Delay": 0, "SQL_Remaining_Delay": None,
            "Replica_SQL_Running_State": ch.sql_state if sql else "", "Source_Retry_Count": 86400,
            "Last_IO_Error_Timestamp": "261123 07:59:58" if ch.last_io_errno else "",
            "Retrieved_Gtid_Set": ch.retrieved, "Executed_Gtid_Set": self.values["gtid_executed"] if ch.status_executed is None else ch.status_executed,
            "Auto_Position": ch.auto_position, "Channel_Name": ch.name, "Get_Source_public_key": 0,
        }
        return values.get(col, "")

    def binlog_status(self, statement: str):
        if statement not in self.shape.binlog_status_statements:
            raise ERR.parse(statement.split(" ", 1)[1])
        self._need("SUPER, REPLICATION CLIENT")
        from jobs.sandbox.sim.dialects import BINLOG_STATUS

        logs = self.server.binary_logs
        rows = [(logs[-1].name, logs[-1].size, "", "", self.values["gtid_executed"])] if logs else []
        return rows, [_column(c) for c in BINLOG_STATUS]

    def status(self, like: str | None):
        """``SHOW [GLOBAL] STATUS [LIKE 'name']``: only the status variable the collector asks
        for, group_replication_primary_member, on a group member whose version reports it (see
        ``Shape.primary_member_status``); any other name gives no row. As the 5.7 plugin's
        ``show_primary_member`` does: the primary's server_uuid in single-primary mode while
        Group Replication runs ("UNDEFINED" when the view has no primary), empty otherwise (the
        server shows a NULL SHOW_CHAR as an empty string)."""
        from jobs.sandbox.sim.dialects import STATUS

        group, rows = self.server.group, []
        if group is not None and self.shape.primary_member_status and (
                like is None or like.lower() == "group_replication_primary_member"):
            value = ""
            if group.single_primary and group.running:
                value = next((m.member_id for m in group.members if m.role == "PRIMARY"), "UNDEFINED")
            rows.append(("group_replication_primary_member", value))
        return rows, [_column(c) for c in STATUS]

    def binary_logs(self, statement: str):
        if statement == "SHOW MASTER LOGS" and self.shape.version.triple >= (8, 4, 0):
            raise ERR.parse("MASTER LOGS")
        self._need("SUPER, REPLICATION CLIENT")
        encrypted = len(self.shape.binary_logs) == 3
        rows = [(b.name, b.size) + (("No",) if encrypted else ()) for b in self.server.binary_logs]
        return rows, [_column(c) for c in self.shape.binary_logs]

    def replicas(self, statement: str):
        cols = self.shape.replicas_statements.get(statement)
        if cols is None:
            raise ERR.parse(statement.split(" ", 1)[1])
        self._need("REPLICATION SLAVE")
        return [], [_column(c) for c in cols]

    def performance_schema(self, columns: str, table: str, channel: str | None):
        cols = self.shape.tables.get(table)
        if cols is None:
            raise ERR.no_table("performance_schema", table)
        if self.server.fault == "privilege":
            raise ERR.table_denied("audit", table)
        chosen = _chosen_columns(columns, cols)
        rows = [tuple(values.get(c.name) for c in chosen) for values in self._ps_rows(table)
                if channel is None or values.get("CHANNEL_NAME") == channel]
        return rows, [_column(c) for c in chosen]

    def _ps_rows(self, table: str) -> list[dict[str, Any]]:
        """The rows of a performance_schema replication table, each a dict of every column."""
        group = self.server.group
        if table == "replication_group_members":
            return [self._member_values(m) for m in group.members] if group else []
        if table == "replication_group_member_stats":
            if group is None:
                return []
            members = group.members if self.shape.group_stats_all_members else [
                m for m in group.members if m.member_id == self.server.server_uuid]
            return [self._member_stats_values(group, m) for m in members]
        rows = [self._ps_values(table, ch) for ch in self.server.channels]
        if group is not None and table == "replication_connection_status":
            rows = self._group_channel_values(group) + rows
        return rows

    def _member_values(self, m) -> dict[str, Any]:
        return {"CHANNEL_NAME": "group_replication_applier", "MEMBER_ID": m.member_id, "MEMBER_HOST": m.host,
                "MEMBER_PORT": m.port or None, "MEMBER_STATE": m.state, "MEMBER_ROLE": m.role,
                "MEMBER_VERSION": m.version,
                "MEMBER_COMMUNICATION_STACK": self.server.group.communication_stack}

    @staticmethod
    def _member_stats_values(group, m) -> dict[str, Any]:
        return {"CHANNEL_NAME": "group_replication_applier", "VIEW_ID": group.view_id, "MEMBER_ID": m.member_id,
                "COUNT_TRANSACTIONS_IN_QUEUE": m.in_queue, "COUNT_TRANSACTIONS_CHECKED": m.checked,
                "COUNT_CONFLICTS_DETECTED": m.conflicts, "COUNT_TRANSACTIONS_ROWS_VALIDATING": m.rows_validating,
                "TRANSACTIONS_COMMITTED_ALL_MEMBERS": m.committed_all_members,
                "LAST_CONFLICT_FREE_TRANSACTION": m.last_conflict_free,
                "COUNT_TRANSACTIONS_REMOTE_IN_APPLIER_QUEUE": m.remote_in_applier_queue,
                "COUNT_TRANSACTIONS_REMOTE_APPLIED": m.remote_applied,
                "COUNT_TRANSACTIONS_LOCAL_PROPOSED": m.local_proposed,
                "COUNT_TRANSACTIONS_LOCAL_ROLLBACK": m.local_rollback}

    @staticmethod
    def _group_channel_values(group) -> list[dict[str, Any]]:
        """replication_connection_status of the group channels, as a real 9.7.4 member lists them:
        recovery first (idle: no group name, OFF), then the applier (the group name as GROUP_NAME
        and SOURCE_UUID, no receiver thread, ON while the member runs Group Replication)."""
        queued = dt.datetime(2026, 11, 23, 7, 59, 59, 500000) if group.last_queued else None
        idle = {"THREAD_ID": None, "COUNT_RECEIVED_HEARTBEATS": 0, "LAST_HEARTBEAT_TIMESTAMP": None,
                "LAST_ERROR_NUMBER": 0, "LAST_ERROR_MESSAGE": "", "LAST_ERROR_TIMESTAMP": None,
                "QUEUEING_TRANSACTION": "", "QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP": None,
                "QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP": None,
                "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP": None}
        recovery = {**idle, "CHANNEL_NAME": "group_replication_recovery", "GROUP_NAME": "", "SOURCE_UUID": "",
                    "SERVICE_STATE": "OFF", "RECEIVED_TRANSACTION_SET": "", "LAST_QUEUED_TRANSACTION": "",
                    "LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP": None,
                    "LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP": None,
                    "LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP": None,
                    "LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP": None}
        applier = {**idle, "CHANNEL_NAME": "group_replication_applier", "GROUP_NAME": group.group_name,
                   "SOURCE_UUID": group.group_name, "SERVICE_STATE": "ON" if group.running else "OFF",
                   "RECEIVED_TRANSACTION_SET": group.received, "LAST_QUEUED_TRANSACTION": group.last_queued,
                   "LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP": queued,
                   "LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP": queued,
                   "LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP": queued,
                   "LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP": queued}
        return [recovery, applier]

    def _global_variables(self) -> dict[str, str]:
        """performance_schema.global_variables as text (booleans ON/OFF), group_replication_*
        only on a group member."""
        out: dict[str, str] = {}
        for name, kind in self.shape.variables.items():
            value = self.values.get(name)
            if value is not None:
                out[name] = ("ON" if value else "OFF") if kind == "b" else str(value)
        group = self.server.group
        if group is not None:
            onoff = lambda b: "ON" if b else "OFF"  # noqa: E731
            values = {"group_replication_group_name": group.group_name,
                      "group_replication_single_primary_mode": onoff(group.single_primary),
                      "group_replication_enforce_update_everywhere_checks":
                          onoff(group.enforce_update_everywhere_checks),
                      "group_replication_member_weight": str(group.member_weight),
                      "group_replication_consistency": group.consistency,
                      "group_replication_view_change_uuid": group.view_change_uuid}
            out.update({name: values[name] for name in self.shape.group_variables})
        return out

    def global_variables(self, columns: str, names: str | None):
        """``SELECT ... FROM performance_schema.global_variables [WHERE VARIABLE_NAME IN (...)]``
        (5.7.6+), rows in name order."""
        cols = self.shape.tables.get("global_variables")
        if cols is None:
            raise ERR.no_table("performance_schema", "global_variables")
        chosen = _chosen_columns(columns, cols)
        values = self._global_variables()
        wanted = None if names is None else {n.strip().strip("'").lower() for n in names.split(",")}
        rows = [tuple({"VARIABLE_NAME": k, "VARIABLE_VALUE": v}[c.name] for c in chosen)
                for k, v in sorted(values.items()) if wanted is None or k in wanted]
        return rows, [_column(c) for c in chosen]

    def _ps_values(self, table: str, ch: SimChannel) -> dict[str, Any]:
        if table == "replication_applier_configuration":
            return {"CHANNEL_NAME": ch.name, "DESIRED_DELAY": 0, "PRIVILEGE_CHECKS_USER": None,
                    "REQUIRE_ROW_FORMAT": "NO", "REQUIRE_TABLE_PRIMARY_KEY_CHECK": "STREAM",
                    "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE": "OFF",
                    "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE": None}
        io = ch.io_running == "Yes"
        queued = dt.datetime(2026, 11, 23, 7, 59, 59, 500000) if ch.last_queued else None
        return {"CHANNEL_NAME": ch.name, "GROUP_NAME": "", "SOURCE_UUID": ch.source_uuid,
                "THREAD_ID": 40 + len(ch.name) if io else None, "SERVICE_STATE": "ON" if io else "OFF",
                # heartbeats arrive every slave_net_timeout / 2 on an idle channel
                "COUNT_RECEIVED_HEARTBEATS": 12 if io else 0,
                "LAST_HEARTBEAT_TIMESTAMP": dt.datetime(2026, 11, 23, 7, 59, 59) if io else None,
                "RECEIVED_TRANSACTION_SET": ch.retrieved, "LAST_ERROR_NUMBER": ch.last_io_errno,
                "LAST_ERROR_MESSAGE": ch.last_io_error,
                "LAST_ERROR_TIMESTAMP": dt.datetime(2026, 11, 23, 7, 59, 58) if ch.last_io_errno else None,
                "LAST_QUEUED_TRANSACTION": ch.last_queued,
                "LAST_QUEUED_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP": queued,
                "LAST_QUEUED_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP": queued,
                "LAST_QUEUED_TRANSACTION_START_QUEUE_TIMESTAMP": queued,
                "LAST_QUEUED_TRANSACTION_END_QUEUE_TIMESTAMP": queued,
                "QUEUEING_TRANSACTION": ch.queueing, "QUEUEING_TRANSACTION_ORIGINAL_COMMIT_TIMESTAMP": None,
                "QUEUEING_TRANSACTION_IMMEDIATE_COMMIT_TIMESTAMP": None,
                "QUEUEING_TRANSACTION_START_QUEUE_TIMESTAMP": None}

    def events(self, which: str, log_name: str | None, pos: str | None, a: str | None, b: str | None,
               channel: str | None, text: str):
        from jobs.sandbox.sim.dialects import EVENTS

        statement = f"SHOW {which.upper()} EVENTS"
        if channel is not None and not self.shape.channels:
            raise ERR.parse(text[text.upper().index("FOR CHANNEL"):])
        self._need("REPLICATION SLAVE")
        offset, limit = (int(a), int(b)) if b is not None else (0, int(a) if a is not None else 10 ** 9)
        start = int(pos) if pos is not None else 0
        if which == "binlog":
            logs = self.server.binary_logs
            log = next((x for x in logs if x.name == log_name), None) if log_name else (logs[0] if logs else None)
            if log is None:
                raise ERR.no_log(statement)
            events = self._binlog_events(log, offset + limit)
        else:
            chans = [c for c in self.server.channels if c.name == (channel or "")]
            if not chans or (log_name and log_name != chans[0].relay_log_file):
                raise ERR.no_log(statement)
            events = chans[0].relay_events
            log_name = chans[0].relay_log_file
        chosen = [e for e in events if e[0] >= start][offset:offset + limit]
        rows = [(log_name or "",) + tuple(e) for e in chosen]
        return rows, [_column(c) for c in EVENTS]

    def _binlog_events(self, log, needed: int) -> list[list[Any]]:
        v = self.shape.version
        fd = format_desc_end(v)
        previous = log.previous_gtids
        prev_end = fd + 31 + 40 * previous.count(":")
        events = [[4, "Format_desc", self.server.server_id, fd, f"Server ver: {self.values['version']}, Binlog ver: 4"],
                  [fd, "Previous_gtids", self.server.server_id, prev_end, previous]]
        pos = end = prev_end
        if needed > 2 and log.gtids:
            for gtid in iter_gtids(GtidSet.parse(log.gtids), (needed - 2) // 5 + 1):
                # pos == end: in a binary log End_log_pos is the position in this same file
                ev, pos, end = transaction_events(gtid, pos, end, self.server.server_id)
                events += ev
        return events


def _raise(exc: Exception):
    raise exc


def _column(c: Col):
    from mysql_mimic import ResultColumn
    from mysql_mimic.types import ColumnType

    return ResultColumn(c.name, ColumnType(c.type))


# --------------------------------------------------------------------------------------------
# serving

class _HandshakeStream:
    """Stands in for a connection's stream during mysql-mimic's connection phase (its own stream
    class is compiled and cannot be wrapped) and counts the packets the client sends in it."""

    def __init__(self, inner):
        self.inner, self.reads, self.ssl_request = inner, 0, False

    async def read(self) -> bytes:
        data = await self.inner.read()
        self.reads += 1
        return data

    async def start_tls(self, context) -> None:
        """Upgrade to TLS, handing the TLS layer what the client sent right behind its SSL request.

        A real server reads exactly the SSL request packet, then the TLS ClientHello from the
        socket. A client that reuses its ``SSLContext`` (the collector, issue #21) sends the hello
        at once, and the stream's reader may hold it already: asyncio's ``start_tls`` reads only
        the socket, so the handshake would hang. The bytes go to the TLS protocol after its
        ``connection_made`` and before any new data from the socket.

        Reading stops before the buffer is taken: a read the loop has already queued, or its next
        poll, would otherwise hand the rest of a hello to the stream's reader after its buffer was
        taken, and that part would be lost (``pause_reading`` cancels the queued read). The rest
        stays in the socket until ``loop.start_tls`` resumes reading, after the early bytes."""
        self.ssl_request = True
        reader = self.inner.reader
        self.inner.writer.transport.pause_reading()
        early = bytes(reader._buffer)  # asyncio.StreamReader's buffer; no public way to take it
        reader._buffer.clear()
        upgrade = asyncio.ensure_future(self.inner.start_tls(context))
        try:
            if early:
                await asyncio.sleep(0)  # start_tls has set its TLS protocol and queued connection_made
                transport = self.inner.writer.transport
                asyncio.get_running_loop().call_soon(_feed_protocol, transport.get_protocol(), early)
            await upgrade
        except BaseException:   # the connection cancelled: the upgrade goes with it
            upgrade.cancel()
            raise

    def round_trips(self) -> int:
        """1 for the TCP connect and the server's greeting together; 1 per packet the client sends
        in the connection phase (handshake response, auth-switch or more-data answers), each of
        which the server answers; an SSL request has no answer of its own but starts TLS, which
        costs 1 round trip in TLS 1.3 and 2 before it."""
        trips = 1 + self.reads
        if self.ssl_request:
            ssl_object = self.inner.writer.transport.get_extra_info("ssl_object")
            version = ssl_object.version() if ssl_object is not None else None
            trips += (1 if version == "TLSv1.3" else 2) - 1
        return trips

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def _feed_protocol(protocol: asyncio.BaseProtocol, data: bytes) -> None:
    """Give ``protocol`` bytes as if they had come from its transport."""
    if not isinstance(protocol, asyncio.BufferedProtocol):
        protocol.data_received(data)
        return
    view = memoryview(data)
    while view:
        buf = protocol.get_buffer(len(view))
        n = min(len(buf), len(view))
        buf[:n] = view[:n]
        protocol.buffer_updated(n)
        view = view[n:]


#: Commands other than COM_QUERY and COM_PING that the server answers (each one round trip);
#: COM_QUIT, COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA get no answer and are not counted.
_ANSWERED_COMMANDS = ("handle_init_db", "handle_field_list", "handle_change_user", "handle_reset_connection",
                      "handle_debug", "handle_stmt_prepare", "handle_stmt_execute", "handle_stmt_fetch",
                      "handle_stmt_reset")


def _install_counters() -> None:
    """Count the handshake round trips and the answered commands of every connection
    (mysql-mimic's ``Connection``, patched once per simulator process)."""
    from mysql_mimic.connection import Connection

    if getattr(Connection, "_sim_counted", False):
        return
    connection_phase = Connection.connection_phase

    async def counted_connection_phase(self) -> None:
        inner = self.stream
        self.stream = counting = _HandshakeStream(inner)
        try:
            await connection_phase(self)
        finally:
            self.stream = inner
            STATS["handshake_round_trips"] += counting.round_trips()

    Connection.connection_phase = counted_connection_phase

    def counted(handler):
        async def handle(self, data: bytes) -> None:
            STATS["commands"] += 1
            await handler(self, data)
        return handle

    for name in _ANSWERED_COMMANDS:
        setattr(Connection, name, counted(getattr(Connection, name)))
    Connection._sim_counted = True


def _write_stats(path: Path, seq: int) -> None:
    """The counters so far, written whole (a reader never sees half a file); ``seq`` tells the
    reader which request the file answers."""
    tmp = path.with_suffix(".stats-tmp")
    tmp.write_text(json.dumps({"seq": seq, **STATS}))
    os.replace(tmp, path)


def _install_sqlstates() -> None:
    """mysql-mimic sends HY000 for error numbers its table lacks; give it the server's SQLSTATEs."""
    from mysql_mimic import errors

    for errno, state in SQLSTATE.items():
        errors.SQLSTATES.setdefault(errno, state.encode())


class _Identity:
    """mysql_native_password with the server's own password for every user name."""

    def __init__(self, password: str):
        from mysql_mimic.auth import NativePasswordAuthPlugin

        self.auth_string = NativePasswordAuthPlugin.create_auth_string(password)

    def provider(self):
        from mysql_mimic.auth import IdentityProvider, NativePasswordAuthPlugin, User

        auth_string = self.auth_string

        class Provider(IdentityProvider):
            async def get_user(self, username: str):
                return User(name=username, auth_string=auth_string, auth_plugin=NativePasswordAuthPlugin.name)

        return Provider()


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Accept and say nothing (a hung server): wait until the client gives up."""
    try:
        await reader.read()
    finally:
        writer.close()


def _tls_context(cert_file: str | Path, key_file: str | Path) -> ssl.SSLContext:
    """The server side of TLS for the versions that offer it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert_file), str(key_file))
    return context


async def serve(servers: list[SimServer], lifetime_s: float, latency: Latency, seed: int = 0,
                ready: Path | None = None, tls: ssl.SSLContext | None = None) -> None:
    """Serve ``servers`` for ``lifetime_s`` seconds, then close every listener. ``tls`` is
    offered by the servers whose version offers TLS out of the box."""
    from mysql_mimic import MysqlServer

    _install_sqlstates()
    _install_counters()
    rng = random.Random(seed)
    listeners = []
    identities: dict[str, Any] = {}
    for server in servers:
        if server.fault == "refused":
            continue
        if server.fault == "silent":
            listeners.append(await asyncio.start_server(_silent, host=server.host, port=server.port))
            continue
        shape = shape_for(server.version)
        if server.password not in identities:
            identities[server.password] = _Identity(server.password).provider()
        factory = (lambda s=server, sh=shape: SimSession(s, sh, latency, rng))
        mimic = MysqlServer(session_factory=factory, identity_provider=identities[server.password],
                            ssl=tls if shape.offers_tls else None)
        await mimic.start_server(host=server.host, port=server.port, backlog=256)
        listeners.append(mimic)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    requests = 0
    if ready is not None:
        stats_file = ready.with_suffix(".stats")

        def snapshot() -> None:
            nonlocal requests
            requests += 1
            _write_stats(stats_file, requests)

        loop.add_signal_handler(signal.SIGUSR1, snapshot)
        ready.write_text(str(os.getpid()))
    try:
        await asyncio.wait_for(stop.wait(), timeout=lifetime_s)
    except asyncio.TimeoutError:
        pass
    finally:
        for listener in listeners:
            listener.close()
        if ready is not None:
            _write_stats(ready.with_suffix(".stats"), requests + 1)


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> int:
    """One simulator process: ``python -m jobs.sandbox.sim.server --fleet F --shard I --shards K``."""
    p = argparse.ArgumentParser(prog="gtid-audit-sim")
    p.add_argument("--fleet", type=Path, required=True)
    p.add_argument("--shard", type=int, default=0)
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--lifetime", type=float, default=600.0)
    p.add_argument("--latency", default="1-3")
    p.add_argument("--ready", type=Path)
    p.add_argument("--tls-cert", type=Path, help="PEM certificate the TLS-capable versions offer")
    p.add_argument("--tls-key", type=Path, help="its private key")
    args = p.parse_args(argv)
    logging.getLogger("mysql_mimic").setLevel(logging.CRITICAL)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    _raise_fd_limit()
    fleet = SimFleet.load(args.fleet)
    servers = fleet.servers[args.shard::args.shards]
    try:
        tls = _tls_context(args.tls_cert, args.tls_key) if args.tls_cert else None
        asyncio.run(serve(servers, args.lifetime, Latency.parse(args.latency), seed=args.shard,
                          ready=args.ready, tls=tls))
    except OSError as exc:
        if args.ready is not None:
            args.ready.with_suffix(".error").write_text(str(exc))
        raise
    return 0


class Simulator:
    """Simulator processes for a saved fleet; a context manager that stops exactly them.
    ``tls``: (certificate, key) PEM paths offered by the versions that offer TLS."""

    def __init__(self, fleet_path: str | Path, *, processes: int = 1, lifetime_s: float = 600.0,
                 latency: Latency | str = "1-3", workdir: str | Path | None = None,
                 tls: tuple[str | Path, str | Path] | None = None):
        self.fleet_path = Path(fleet_path).resolve()
        self.processes = max(1, processes)
        self.lifetime_s = lifetime_s
        self.latency = latency if isinstance(latency, Latency) else Latency.parse(latency)
        self.workdir = Path(workdir or self.fleet_path.parent)
        self.tls = tls
        self.procs: list[subprocess.Popen] = []
        self.cpu_seconds = 0.0

    def start(self, timeout: float = 120.0) -> "Simulator":
        readies = []
        for i in range(self.processes):
            ready = self.workdir / f"sim-{i}.ready"
            for f in (ready, ready.with_suffix(".error"), ready.with_suffix(".stats")):
                f.unlink(missing_ok=True)
            readies.append(ready)
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "jobs.sandbox.sim", "--fleet", str(self.fleet_path),
                 "--shard", str(i), "--shards", str(self.processes), "--lifetime", str(self.lifetime_s),
                 "--latency", self.latency.spec(), "--ready", str(ready)]
                + (["--tls-cert", str(Path(self.tls[0]).resolve()), "--tls-key", str(Path(self.tls[1]).resolve())]
                   if self.tls else []),
                start_new_session=True, cwd=str(Path(__file__).resolve().parents[3])))
        deadline = time.monotonic() + timeout
        while not all(r.exists() for r in readies):
            failed = [r.with_suffix(".error").read_text() for r in readies if r.with_suffix(".error").exists()]
            dead = [p.pid for p in self.procs if p.poll() is not None]
            if failed or dead or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"simulator did not start: {failed or f'processes {dead} exited' or 'timeout'}")
            time.sleep(0.05)
        return self

    def cpu_now(self) -> float:
        """CPU seconds (user + system) the simulator processes have used so far."""
        total = 0.0
        tick = os.sysconf("SC_CLK_TCK")
        for p in self.procs:
            try:
                fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
            except (OSError, IndexError, ValueError):
                pass
        return total

    def stats(self) -> dict[str, int]:
        """What the processes served (:data:`STATS`), summed over them: after :meth:`stop`, or as
        of the last :meth:`snapshot`."""
        total = dict.fromkeys(STATS, 0)
        for i in range(self.processes):
            counters = self._read_stats(i)
            if counters is not None:
                for k, v in counters.items():
                    if k != "seq":
                        total[k] = total.get(k, 0) + v
        return total

    def snapshot(self, timeout: float = 5.0) -> dict[str, int]:
        """The counters of the running processes now (:meth:`stats` summed): each process is
        asked with SIGUSR1 and answers by rewriting its stats file. A process that has exited,
        or does not answer within ``timeout`` seconds, counts with its last file.
        Not for concurrent use: serialise the calls."""
        asked = {}
        for i, p in enumerate(self.procs):
            if p.poll() is None:
                before = self._read_stats(i)
                asked[i] = before.get("seq", 0) if before else 0
                p.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while asked and time.monotonic() < deadline:
            for i in list(asked):
                now = self._read_stats(i)
                if (now is not None and now.get("seq", 0) > asked[i]) or self.procs[i].poll() is not None:
                    del asked[i]
            if asked:
                time.sleep(0.005)
        return self.stats()

    def _read_stats(self, i: int) -> dict[str, int] | None:
        try:
            return json.loads((self.workdir / f"sim-{i}.stats").read_text())
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        if self.procs:
            self.cpu_seconds = max(self.cpu_seconds, self.cpu_now())
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def __enter__(self) -> "Simulator":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    sys.exit(main())
