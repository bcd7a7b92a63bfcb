"""The checks' predictions against what a real MySQL 9.7 server actually does.

One module-scoped sandbox fleet (``a`` and ``c`` are sources, ``b`` replicates from both: channel
'' from ``a`` and channel ``from_c`` from ``c``), durable settings (sync_binlog = 1,
innodb_flush_log_at_trx_commit = 1) so that a healthy server really is healthy, wiped back to an
empty history before every test. Each test drives the servers into a state, builds snapshots from
what the servers report (the gtid_core snapshot constructors over real rows), runs the checks, and
then lets the server show its own verdict (START REPLICA and read Last_IO_Errno / Last_IO_Error,
``GTID_SUBTRACT`` computed by a server, ...), so the prediction is compared with the server's
behaviour, never with a value our own code computed.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
import threading
import time
from typing import Any

import mysql.connector
import pytest

from gtid_core import (
    ChannelSnapshot,
    FleetContext,
    GtidSet,
    ParserState,
    ReconnectKind,
    ServerSnapshot,
    Severity,
    events_from_rows,
    parse_relay_log,
    run_pair_checks,
    run_server_checks,
    simulate_auto_position_reconnect,
)

pytestmark = pytest.mark.mysql

DB = "live_checks"                          # one database per source: live_checks_a, live_checks_c
SCENARIO_DB = "sandbox_scenarios"          # jobs.sandbox.scenarios writes there
FOREIGN_UUID = "0badc0de-1111-4222-8333-444455556666"   # no server of the fleet has it
DURABLE = ["--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1"]
TOPOLOGY = {
    "name": "live-checks",
    "servers": [{"name": n, "options": DURABLE} for n in ("a", "b", "c")],
    "channels": [{"replica": "b", "source": "a", "channel": ""},
                 {"replica": "b", "source": "c", "channel": "from_c"}],
}
ER_SOURCE_FATAL_ERROR_READING_BINLOG = 13114
ER_DB_CREATE_EXISTS = 1007
MISSING_RE = re.compile(r"the missing transactions are '([^']*)'")
SENT_RE = re.compile(r"The GTID set sent by the replica is '([^']*)'")
MORE_GTIDS_TEXT = "Replica has more GTIDs than the source has, using the source's SERVER_UUID"


# ---------------------------------------------------------------------------------------------
# fleet, reset, waiting


@pytest.fixture(scope="module")
def live(mysql_dist, tmp_path_factory):
    """Three durable 9.7 servers, b replicating from a ('') and c ('from_c'); stopped at module end."""
    from jobs.sandbox.fleet import Fleet

    fleet = Fleet.up(TOPOLOGY, tmp_path_factory.mktemp("live-checks"), dist=mysql_dist)
    try:
        yield fleet
    finally:
        fleet.down(graceful=False)


@pytest.fixture
def fleet(live):
    """The module's fleet wiped to an empty GTID history, both channels of b running."""
    return reset(live)


def reset(live):
    """Wipe every server's data and GTID history, re-point b's channels, start them, wait."""
    b = live.server("b")
    b.execute("STOP REPLICA", "RESET REPLICA")
    for ch in live.topology.channels:          # also undoes any SOURCE_PORT / SOURCE_DELAY a test changed
        live.attach_channel(ch, start=False)
    b.execute(*[f"CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0 FOR CHANNEL '{ch.channel}'"
                for ch in live.topology.channels])
    for name, server in live.servers.items():
        server.execute("SET SESSION sql_log_bin = 0",
                       *[f"DROP DATABASE IF EXISTS {db}" for db in (f"{DB}_a", f"{DB}_c", SCENARIO_DB)],
                       "SET SESSION sql_log_bin = 1", "RESET BINARY LOGS AND GTIDS",
                       *([f"CREATE DATABASE {DB}_{name}",
                          f"CREATE TABLE {DB}_{name}.w (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"]
                         if name != "b" else []))
    b.execute("START REPLICA")
    live.wait_caught_up(timeout=60)
    return live


def write(server, count: int = 1, tag: str | None = None) -> None:
    """``count`` one-row transactions on ``server`` (tagged with ``AUTOMATIC:tag`` when given)."""
    table = f"{DB}_{server.name}.w"
    statements = [f"SET gtid_next = 'AUTOMATIC:{tag}'"] if tag else []
    statements += [f"INSERT INTO {table} (v) VALUES ({i})" for i in range(count)]
    if tag:
        statements.append("SET gtid_next = 'AUTOMATIC'")
    server.execute(*statements)


def commit_empty(server, gtid: str) -> None:
    """Commit one empty transaction with ``gtid`` on ``server`` (the server's way to own a GTID)."""
    server.execute(f"SET gtid_next = '{gtid}'", "BEGIN", "COMMIT", "SET gtid_next = 'AUTOMATIC'")


def wait_for(predicate, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def status(server, channel: str = "") -> dict[str, Any]:
    return server.query("SHOW REPLICA STATUS FOR CHANNEL %s", (channel,))[0]


def server_subtract(server, a: str, b: str) -> GtidSet:
    """``GTID_SUBTRACT(a, b)`` computed by the server."""
    return GtidSet.parse(server.query_value("SELECT GTID_SUBTRACT(%s, %s)", (a, b)))


def server_subset(server, a: str, b: str) -> bool:
    return bool(server.query_value("SELECT GTID_SUBSET(%s, %s)", (a, b)))


def receiver_error(server, channel: str = "") -> dict[str, Any]:
    """START REPLICA and wait until the receiver has failed and stopped; its status row then."""
    server.execute(f"START REPLICA FOR CHANNEL '{channel}'")

    def failed():
        row = status(server, channel)
        return row if row["Last_IO_Errno"] and row["Replica_IO_Running"] == "No" else None
    return wait_for(failed, f"{server.name}'s receiver on channel {channel!r} to be refused")


# ---------------------------------------------------------------------------------------------
# snapshots, read the way the collector reads them

_CONFIG_VARIABLES = ("server_id", "gtid_mode", "enforce_gtid_consistency", "log_bin", "log_replica_updates",
                     "sync_binlog", "innodb_flush_log_at_trx_commit", "relay_log_recovery",
                     "replica_parallel_workers", "replica_preserve_commit_order", "binlog_format",
                     "read_only", "super_read_only")


class Reader:
    """One connection to one server, reading rows as dicts (what the snapshot constructors take)."""

    def __init__(self, server):
        self.server = server
        self.conn = server.connect()

    def query(self, sql: str, params=None) -> list[dict[str, Any]]:
        cur = self.conn.cursor(dictionary=True)
        cur.execute(sql, params)
        return list(cur.fetchall()) if cur.with_rows else []

    def close(self) -> None:
        self.conn.close()


def _reading(server_or_reader):
    return server_or_reader if isinstance(server_or_reader, Reader) else Reader(server_or_reader)


def server_snapshot(server) -> ServerSnapshot:
    """A ServerSnapshot from the server's variables, SHOW BINARY LOGS and each log's Previous_gtids."""
    r = _reading(server)
    names = ", ".join(f"'{v}'" for v in _CONFIG_VARIABLES)
    rows = r.query("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM performance_schema.global_variables "
                   f"WHERE VARIABLE_NAME IN ({names})")
    variables: dict[str, Any] = {row["VARIABLE_NAME"]: row["VARIABLE_VALUE"] for row in rows}
    variables.update(r.query("SELECT @@GLOBAL.server_uuid AS server_uuid, @@GLOBAL.version AS version, "
                             "@@GLOBAL.gtid_executed AS gtid_executed, @@GLOBAL.gtid_purged AS gtid_purged")[0])
    variables["read_at"] = dt.datetime.now(dt.timezone.utc)   # when the GTID sets were read, as the collector stamps
    logs = []
    for row in r.query("SHOW BINARY LOGS"):
        events = r.query(f"SHOW BINLOG EVENTS IN '{row['Log_name']}' LIMIT 3")
        previous = [e["Info"] for e in events if e["Event_type"] == "Previous_gtids"]
        logs.append({**row, "Previous_gtids": previous[0] if previous else None})
    return ServerSnapshot.from_rows(variables, binary_logs=logs, name=r.server.name)


def channel_snapshot(server, channel: str = "") -> ChannelSnapshot:
    """A ChannelSnapshot from SHOW REPLICA STATUS and the channel's performance_schema rows."""
    r = _reading(server)
    where = "WHERE CHANNEL_NAME = %s"
    row = r.query("SHOW REPLICA STATUS FOR CHANNEL %s", (channel,))[0]
    row["read_at"] = dt.datetime.now(dt.timezone.utc)
    return ChannelSnapshot.from_rows(
        row,
        connection_status=r.query(f"SELECT * FROM performance_schema.replication_connection_status {where}",
                                  (channel,))[0],
        applier_status=r.query(f"SELECT * FROM performance_schema.replication_applier_status {where}",
                               (channel,))[0],
        applier_configuration=r.query(
            f"SELECT * FROM performance_schema.replication_applier_configuration {where}", (channel,))[0])


def newest_relay_log(server, channel: str = "") -> str:
    """The channel's newest relay log: Relay_Log_File, or a newer file if one exists."""
    r = _reading(server)
    newest = r.query("SHOW REPLICA STATUS FOR CHANNEL %s", (channel,))[0]["Relay_Log_File"]
    prefix, number = re.fullmatch(r"(.*\.)(\d+)", newest).groups()
    for step in range(1, 4):
        candidate = f"{prefix}{int(number) + step:0{len(number)}d}"
        try:
            if not r.query(f"SHOW RELAYLOG EVENTS IN '{candidate}' LIMIT 1 FOR CHANNEL '{channel}'"):
                break
        except mysql.connector.Error:
            break
        newest = candidate
    return newest


def relay_tail(server, channel: str = ""):
    """Every event of the channel's newest relay log, to its end (the complete tail the check needs)."""
    r = _reading(server)
    newest = newest_relay_log(r, channel)
    return events_from_rows(r.query(f"SHOW RELAYLOG EVENTS IN '{newest}' FOR CHANNEL '{channel}'"))


def with_tail(channel_snap: ChannelSnapshot, tail, *, truncated: bool = False) -> ChannelSnapshot:
    """The channel snapshot carrying what the collector records about the tail it read."""
    files = {e.log_name for e in tail}
    return dataclasses.replace(channel_snap, relay_tail_file=files.pop() if len(files) == 1 else None,
                               relay_tail_truncated=truncated)


def other_channels_gtids(fleet, replica, channel: str) -> GtidSet | None:
    """FleetContext.other_channels_gtids filled as its docstring says (and jobs/audit.py does)."""
    name = replica.server.name
    others = [ch for ch in fleet.topology.channels if ch.replica == name and ch.channel != channel]
    if not others:
        return None
    out = GtidSet.EMPTY
    for ch in others:
        out |= channel_snapshot(replica, ch.channel).retrieved_gtid_set
        out |= GtidSet.parse(fleet.server(ch.source).gtid_executed())
    return out


def pair_findings(fleet, replica: str = "b", channel: str = "", *, with_other_channels: bool = True):
    """Run every pair check on (replica, channel): the replica is read before its source, as the
    collector does; the FleetContext knows every server's uuid and the other channels."""
    spec = next(ch for ch in fleet.topology.channels if ch.replica == replica and ch.channel == channel)
    rep, src = Reader(fleet.server(replica)), Reader(fleet.server(spec.source))
    try:
        replica_snap, channel_snap = server_snapshot(rep), channel_snapshot(rep, channel)
        tail = relay_tail(rep, channel)
        channel_snap = with_tail(channel_snap, tail)
        others = other_channels_gtids(fleet, rep, channel) if with_other_channels else None
        source_snap = server_snapshot(src)
    finally:
        rep.close()
        src.close()
    every = {ch.channel: ch.source for ch in fleet.topology.channels if ch.replica == replica}
    context = FleetContext(uuid_registry={s.server_uuid: name for name, s in fleet.servers.items()},
                           other_channels_gtids=others,
                           channel_sources=every if with_other_channels and len(every) > 1 else None)
    return run_pair_checks(replica_snap, channel_snap, source_snap, tail, context)


def by_check(findings) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in findings:
        out.setdefault(f.check_id, []).append(f)
    return out


def serious(findings) -> list:
    return [f for f in findings if f.severity in (Severity.WARNING, Severity.CRITICAL)]


# ---------------------------------------------------------------------------------------------
# 1. ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER: which extra GTIDs does the source count?


@pytest.mark.parametrize(
    "owner, tag, refused",
    [("source", None, True), ("source", "xtag", True), ("source", "atag", True),
     ("foreign", None, False), ("foreign", "xtag", False)],
    ids=["source_uuid_untagged", "source_uuid_new_tag", "source_uuid_tag_it_uses",
         "other_uuid_untagged", "other_uuid_tagged"],
)
def test_replica_has_more_gtids_matches_the_source(fleet, owner, tag, refused):
    """Extra GTIDs of the source's own uuid (untagged or any tag) are refused by a 9.7 source exactly when
    replica_has_more_gtids predicts it; extra GTIDs of another uuid are accepted and only reported as errant."""
    a, b = fleet.server("a"), fleet.server("b")
    write(a, 2)
    write(a, 1, tag="atag")                                  # the source uses tag atag (gno 1)
    fleet.wait_caught_up()
    b.execute("STOP REPLICA FOR CHANNEL ''")
    uuid = a.server_uuid if owner == "source" else FOREIGN_UUID
    extra = f"{uuid}:{tag}:5" if tag else f"{uuid}:100"
    commit_empty(b, extra)

    found = by_check(pair_findings(fleet))
    expected_extra = server_subtract(b, b.gtid_executed(), f"{a.gtid_executed()},{fleet.server('c').gtid_executed()}")
    assert expected_extra == GtidSet.parse(extra)
    if refused:
        [finding] = found["replica_has_more_gtids"]
        assert finding.gtid_set == expected_extra and finding.severity is Severity.CRITICAL
    else:
        assert "replica_has_more_gtids" not in found
    assert found["errant_transactions"][0].gtid_set == expected_extra   # errant either way

    if refused:
        row = receiver_error(b)
        assert row["Last_IO_Errno"] == ER_SOURCE_FATAL_ERROR_READING_BINLOG
        assert MORE_GTIDS_TEXT in row["Last_IO_Error"]
    else:
        b.execute("START REPLICA FOR CHANNEL ''")
        write(a, 1)                                          # the source streams it: accepted
        fleet.wait_caught_up()                               # (raises on any channel error)
        row = status(b)
        assert (row["Replica_IO_Running"], row["Last_IO_Errno"]) == ("Yes", 0)


# ---------------------------------------------------------------------------------------------
# 2. ER_MASTER_HAS_PURGED_REQUIRED_GTIDS: the missing set, predicted and reported


def test_purged_required_gtids_names_the_servers_missing_set(fleet):
    """After the source purges logs a stopped replica still needs, source_purged_required_gtids predicts the
    refusal with exactly the set the server's 13114 error names ('the missing transactions are ...'), and the
    announced set equals 'the GTID set sent by the replica'."""
    a, b = fleet.server("a"), fleet.server("b")
    write(a, 1)
    fleet.wait_caught_up()
    b.execute("STOP REPLICA FOR CHANNEL ''")
    write(a, 2)
    write(a, 1, tag="atag")
    a.execute("FLUSH BINARY LOGS")
    newest = a.query("SHOW BINARY LOGS")[-1]["Log_name"]
    a.execute(f"PURGE BINARY LOGS TO '{newest}'")

    replica_snap, channel_snap = server_snapshot(b), channel_snapshot(b)
    found = by_check(pair_findings(fleet))
    [finding] = found["source_purged_required_gtids"]
    announced = channel_snap.retrieved_gtid_set | replica_snap.gtid_executed
    assert finding.evidence["replica_announced_gtid_set"] == announced.to_text(multiline=False)
    outcome = simulate_auto_position_reconnect(server_snapshot(a), announced)
    assert outcome.kind is ReconnectKind.SOURCE_PURGED_REQUIRED

    row = receiver_error(b)
    assert row["Last_IO_Errno"] == ER_SOURCE_FATAL_ERROR_READING_BINLOG
    assert "purged required binary logs" in row["Last_IO_Error"]
    server_missing = GtidSet.parse(MISSING_RE.search(row["Last_IO_Error"]).group(1))
    assert server_missing.count() == 3                       # 2 untagged + 1 tagged, as written
    assert finding.gtid_set == server_missing == outcome.missing
    assert GtidSet.parse(SENT_RE.search(row["Last_IO_Error"]).group(1)) == announced
    # and the running channel now reports it, named by meaning
    after = by_check(pair_findings(fleet))
    [error] = after["replication_receiver_error"]
    assert "purged binary logs" in error.detail


# ---------------------------------------------------------------------------------------------
# 3. replica_gtid_history_lost


def test_idle_caught_up_replica_shows_equal_positions_and_no_history_finding(fleet):
    """A healthy idle 9.7 replica reports Read_Source_Log_Pos = Exec_Source_Log_Pos in the same file and
    'has read all relay log': applier_caught_up is True and no check reports anything."""
    write(fleet.server("a"), 3)
    fleet.wait_caught_up()
    # gtid_executed shows a commit a moment before the applier moves Exec_Source_Log_Pos past it
    # (a position-based "caught up" can only lag behind, never lead: no false history loss).
    # For a moment after the positions meet, the coordinator (replica_parallel_workers = 4, the
    # default) can still show "waiting for handler commit": it is committing its checkpoint to
    # mysql.slave_relay_log_info, after the workers committed the transactions (seen in CI,
    # 2026-11-29). So wait for both, and check then that nothing retrieved is missing.
    def idle_and_caught_up():
        r = status(fleet.server("b"))
        same = (r["Relay_Source_Log_File"], r["Exec_Source_Log_Pos"]) == (r["Source_Log_File"], r["Read_Source_Log_Pos"])
        return r if same and "has read all relay log" in r["Replica_SQL_Running_State"] else None

    row = wait_for(idle_and_caught_up, "b's applier to reach its receiver position and read all relay log")
    assert server_subset(fleet.server("b"), row["Retrieved_Gtid_Set"], row["Executed_Gtid_Set"])
    assert channel_snapshot(fleet.server("b")).applier_caught_up is True
    assert pair_findings(fleet) == []


def test_delayed_applier_is_not_history_loss(fleet):
    """A running but lagging applier (SOURCE_DELAY) has retrieved GTIDs not yet executed: no finding at all."""
    a, b = fleet.server("a"), fleet.server("b")
    b.execute("STOP REPLICA FOR CHANNEL ''", "CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 3600 FOR CHANNEL ''",
              "START REPLICA FOR CHANNEL ''")
    write(a, 2)
    a_set = a.gtid_executed()
    # (9.7's CHANGE REPLICATION SOURCE purged the caught-up relay logs: Retrieved_Gtid_Set restarts empty)
    wait_for(lambda: server_subset(b, a_set, "{Retrieved_Gtid_Set},{Executed_Gtid_Set}".format(**status(b))),
             "b to receive a's writes")
    row = status(b)
    assert not server_subset(b, row["Retrieved_Gtid_Set"], row["Executed_Gtid_Set"])   # really lagging
    assert row["Replica_SQL_Running"] == "Yes" and row["Exec_Source_Log_Pos"] != row["Read_Source_Log_Pos"]
    assert channel_snapshot(b).applier_caught_up is False
    assert pair_findings(fleet) == []


def test_stopped_applier_is_not_history_loss(fleet):
    """A stopped applier with unapplied retrieved GTIDs is reported as stopped, not as lost history."""
    a, b = fleet.server("a"), fleet.server("b")
    b.execute("STOP REPLICA SQL_THREAD FOR CHANNEL ''")
    write(a, 2)
    a_set = a.gtid_executed()
    wait_for(lambda: server_subset(b, a_set, status(b)["Retrieved_Gtid_Set"]), "b to receive a's writes")
    found = by_check(pair_findings(fleet))
    assert set(found) == {"replication_stopped"}


def test_reset_binary_logs_on_replica_is_reported_and_the_server_proves_it(fleet):
    """RESET BINARY LOGS AND GTIDS on a running replica: 9.7 keeps replicating without an error, the check reports
    exactly GTID_SUBTRACT(received, gtid_executed); the server proves the loss by re-applying them (and failing)
    once the relay logs are discarded."""
    a, b = fleet.server("a"), fleet.server("b")
    write(a, 3)
    fleet.wait_caught_up()
    b.execute("RESET BINARY LOGS AND GTIDS")
    row = wait_for(lambda: (lambda r: r if r["Exec_Source_Log_Pos"] == r["Read_Source_Log_Pos"] else None)(status(b)),
                   "b's applier to be idle")
    assert (row["Replica_IO_Running"], row["Replica_SQL_Running"], row["Last_IO_Errno"], row["Last_SQL_Errno"]) \
        == ("Yes", "Yes", 0, 0)
    lost = server_subtract(b, row["Retrieved_Gtid_Set"], b.gtid_executed())
    assert lost.count() == 5          # CREATE DATABASE, CREATE TABLE, 3 inserts
    found = by_check(pair_findings(fleet))
    [finding] = found["replica_gtid_history_lost"]
    assert finding.gtid_set == lost and finding.severity is Severity.WARNING
    # The server's own verdict: once the relay logs are gone, the source sends them again.
    b.execute("STOP REPLICA FOR CHANNEL ''", "RESET REPLICA FOR CHANNEL ''")
    fleet.attach_channel(next(ch for ch in fleet.topology.channels if ch.channel == ""))
    failed = wait_for(lambda: (lambda r: r if r["Last_SQL_Errno"] else None)(status(b)),
                      "b's applier to fail on a re-sent transaction")
    assert failed["Last_SQL_Errno"] == ER_DB_CREATE_EXISTS      # CREATE DATABASE applied a second time
    reapplied = re.search(r"failed executing transaction '([^']+)'", failed["Last_SQL_Error"]).group(1)
    assert reapplied in finding.gtid_set


# ---------------------------------------------------------------------------------------------
# 4. incomplete_relay_log_tail


def test_receiver_stopped_inside_a_transaction_is_a_warning_naming_queueing_transaction(fleet):
    """Receiver stopped mid-transaction: the warning's dangling GTID equals the server's QUEUEING_TRANSACTION;
    restarting the receiver makes 9.7 fetch it again, and the next snapshot has no such finding."""
    from jobs.sandbox import scenarios

    result = scenarios.relay_log_ends_inside_transaction(fleet, "b", channel="", rows=5000)
    queueing = GtidSet.parse(result.gtid_sets["queueing_transaction"])
    assert channel_snapshot(fleet.server("b")).queueing_gtid.as_set() == queueing
    found = by_check(pair_findings(fleet))
    [finding] = found["incomplete_relay_log_tail"]
    assert finding.severity is Severity.WARNING and finding.gtid_set == queueing
    assert finding.evidence["receiver_running"] is False
    assert "replica_gtid_history_lost" not in found and "errant_transactions" not in found

    fleet.server("b").execute("START REPLICA IO_THREAD FOR CHANNEL ''")
    fleet.wait_caught_up()
    assert server_subset(fleet.server("b"), str(queueing), fleet.server("b").gtid_executed())
    assert "incomplete_relay_log_tail" not in by_check(pair_findings(fleet))


def test_running_idle_receiver_relay_log_ends_between_transactions(fleet):
    """A running idle receiver: the newest relay log parses to NONE and no relay-tail finding is made."""
    write(fleet.server("a"), 2)
    fleet.wait_caught_up()
    assert parse_relay_log(relay_tail(fleet.server("b"))).state is ParserState.NONE
    assert "incomplete_relay_log_tail" not in by_check(pair_findings(fleet))


# ---------------------------------------------------------------------------------------------
# 5. errant transactions on a multi-source replica, and the remediation SQL


def test_multi_source_other_channel_gtids_are_not_errant(fleet):
    """On a two-channel replica, c's GTIDs are errant for channel '' only when the FleetContext does not say
    what the other channel brings; filled as documented, neither channel reports anything."""
    a, c = fleet.server("a"), fleet.server("c")
    write(a, 2)
    write(c, 2)
    write(c, 1, tag="ctag")
    fleet.wait_caught_up()
    b = fleet.server("b")
    from_c = server_subtract(b, b.gtid_executed(), a.gtid_executed())
    assert from_c.uuids() == {c.server_uuid}
    blind = by_check(pair_findings(fleet, with_other_channels=False))
    assert blind["errant_transactions"][0].gtid_set == from_c       # why other_channels_gtids exists
    assert pair_findings(fleet, channel="") == []
    assert pair_findings(fleet, channel="from_c") == []


def test_errant_remediation_sql_run_on_the_source_clears_the_finding(fleet):
    """Writes made directly on the multi-source replica (untagged and tagged) are errant for both channels
    alike: reported once, on channel '' (the first by name), with the server's GTID_SUBTRACT set, and a
    remediation naming a and, as the alternative, c. Running the finding's SQL on a clears them on both
    channels; a second such write cleared by the same SQL run on c instead: either source will do."""
    a, b, c = fleet.server("a"), fleet.server("b"), fleet.server("c")
    write(a, 1)
    write(c, 1)
    fleet.wait_caught_up()
    b.execute(f"CREATE TABLE {DB}_a.local_writes (id INT PRIMARY KEY)", f"INSERT INTO {DB}_a.local_writes VALUES (1)",
              "SET gtid_next = 'AUTOMATIC:ops'", f"INSERT INTO {DB}_a.local_writes VALUES (2)",
              "SET gtid_next = 'AUTOMATIC'")
    errant = server_subtract(b, b.gtid_executed(), f"{a.gtid_executed()},{c.gtid_executed()}")
    assert errant.count() == 3 and errant.uuids() == {b.server_uuid}
    [finding] = by_check(pair_findings(fleet))["errant_transactions"]
    assert finding.gtid_set == errant and finding.channel == ""
    assert "c (channel 'from_c')" in finding.remediation
    assert "errant_transactions" not in by_check(pair_findings(fleet, channel="from_c"))

    a.execute(*_remediation_statements(finding, 3))
    assert server_subset(a, str(errant), a.gtid_executed())
    assert a.query_value("SELECT @@SESSION.gtid_next") == "AUTOMATIC"
    fleet.wait_caught_up()
    assert pair_findings(fleet, channel="") == []
    assert pair_findings(fleet, channel="from_c") == []
    assert status(b)["Last_IO_Errno"] == 0 and status(b)["Last_SQL_Errno"] == 0

    b.execute(f"INSERT INTO {DB}_a.local_writes VALUES (3)")
    [again] = by_check(pair_findings(fleet))["errant_transactions"]
    assert again.gtid_count == 1 and "errant_transactions" not in by_check(pair_findings(fleet, channel="from_c"))
    c.execute(*_remediation_statements(again, 1))             # the alternative source the remediation names
    fleet.wait_caught_up()
    assert pair_findings(fleet, channel="") == []
    assert pair_findings(fleet, channel="from_c") == []
    assert status(b)["Last_IO_Errno"] == 0 and status(b)["Last_SQL_Errno"] == 0


def _remediation_statements(finding, count: int) -> list[str]:
    """The SQL lines of an errant_transactions remediation: three statements per GTID, then AUTOMATIC."""
    statements = [s.strip() for line in finding.remediation.splitlines() if line.startswith("SET GTID_NEXT")
                  for s in line.split(";") if s.strip()]
    assert statements[-1] == "SET GTID_NEXT='AUTOMATIC'" and len(statements) == 3 * count + 1
    return statements


# ---------------------------------------------------------------------------------------------
# 6. a healthy fleet with tagged GTIDs


def test_healthy_fleet_with_tagged_gtids_has_no_warning_or_critical(fleet):
    """Tagged and untagged writes on both sources, rotated and purged binary logs, everything replicated: no
    pair check on either channel and no server check (with the previous snapshot) finds anything serious."""
    previous = {name: server_snapshot(s) for name, s in fleet.servers.items()}
    a, c = fleet.server("a"), fleet.server("c")
    write(a, 3)
    write(a, 2, tag="orders")
    write(c, 2, tag="billing")
    a.execute("FLUSH BINARY LOGS")
    write(a, 1, tag="orders")
    write(c, 1)
    fleet.wait_caught_up()
    a.execute("FLUSH BINARY LOGS")
    newest = a.query("SHOW BINARY LOGS")[-1]["Log_name"]
    a.execute(f"PURGE BINARY LOGS TO '{newest}'")          # a's gtid_purged is now non-empty
    assert GtidSet.parse(a.query_value("SELECT @@GLOBAL.gtid_purged")).count() > 0
    executed_b = GtidSet.parse(fleet.server("b").gtid_executed())
    assert {t for _, t, _, _ in executed_b} == {None, "orders", "billing"}

    findings = pair_findings(fleet, channel="") + pair_findings(fleet, channel="from_c")
    for name, server in fleet.servers.items():
        findings += run_server_checks(server_snapshot(server), previous[name])
    assert serious(findings) == []


# ---------------------------------------------------------------------------------------------
# 7. replica_near_purge_horizon: predicted one purge ahead, then the server's verdict


def previous_gtids(server, log_name: str) -> str:
    """The Previous_gtids event's Info of ``log_name``, as the server lists it."""
    [info] = [e["Info"] for e in server.query(f"SHOW BINLOG EVENTS IN '{log_name}' LIMIT 3")
              if e["Event_type"] == "Previous_gtids"]
    return info


def test_near_purge_horizon_comes_true_after_one_more_purge(fleet):
    """A stopped receiver whose first missing GTID sits in the source's oldest remaining binary log: the warning
    names exactly the GTIDs of that file the replica lacks (the server's GTID_SUBTRACT of the next file's
    Previous_gtids and the announced set); after one more PURGE BINARY LOGS the check reports
    source_purged_required_gtids instead, and START REPLICA is refused with 13114 for exactly those GTIDs."""
    a, b = fleet.server("a"), fleet.server("b")
    write(a, 1)
    fleet.wait_caught_up()
    b.execute("STOP REPLICA IO_THREAD FOR CHANNEL ''")
    a.execute("FLUSH BINARY LOGS")
    holding = a.query("SHOW BINARY LOGS")[-1]["Log_name"]      # gets the first GTIDs b lacks
    write(a, 2)
    write(a, 1, tag="atag")
    a.execute("FLUSH BINARY LOGS")
    write(a, 1)
    a.execute("FLUSH BINARY LOGS")
    a.execute(f"PURGE BINARY LOGS TO '{holding}'")
    logs = [row["Log_name"] for row in a.query("SHOW BINARY LOGS")]
    assert logs[0] == holding and len(logs) == 3

    row = status(b)
    announced = f"{row['Retrieved_Gtid_Set']},{b.gtid_executed()}"
    in_oldest = server_subtract(a, previous_gtids(a, logs[1]), announced)
    assert in_oldest.count() == 3                             # 2 untagged + 1 tagged, written to `holding`
    found = by_check(pair_findings(fleet))
    [near] = found["replica_near_purge_horizon"]
    assert near.severity is Severity.WARNING and near.gtid_set == in_oldest
    assert (near.evidence["start_file"], near.evidence["next_binary_log"], near.evidence["binary_log_margin"]) \
        == (holding, logs[1], 0)
    assert set(found) == {"replica_near_purge_horizon", "replication_stopped"}
    assert "replica_near_purge_horizon" not in by_check(pair_findings(fleet, channel="from_c"))  # caught up

    a.execute(f"PURGE BINARY LOGS TO '{logs[1]}'")               # the purge the warning was about
    after = by_check(pair_findings(fleet))
    assert "replica_near_purge_horizon" not in after
    [purged] = after["source_purged_required_gtids"]
    assert purged.gtid_set == near.gtid_set

    refused = receiver_error(b)
    assert refused["Last_IO_Errno"] == ER_SOURCE_FATAL_ERROR_READING_BINLOG
    assert "purged required binary logs" in refused["Last_IO_Error"]
    assert GtidSet.parse(MISSING_RE.search(refused["Last_IO_Error"]).group(1)) == near.gtid_set


# ---------------------------------------------------------------------------------------------
# 7. issue #11 on real servers: a delayed replica, a replica without log_replica_updates, a busy
#    source read out of order


TAIL_CAP = 2000   # the collector's relay_tail_max_events at the time of issue #11


def capped_tail_from_applier(server, channel: str = ""):
    """The tail the collector used to read: events from the applier's position (Relay_Log_Pos in
    Relay_Log_File), capped near TAIL_CAP. The cap is placed on a Gtid event, as in the report from the
    field ('the 2,000th event after the applier position was a Gtid event')."""
    row = status(server, channel)
    rows = server.query(f"SHOW RELAYLOG EVENTS IN '{row['Relay_Log_File']}' FROM {int(row['Relay_Log_Pos'])} "
                        f"LIMIT {TAIL_CAP + 10} FOR CHANNEL '{channel}'")
    assert len(rows) > TAIL_CAP, "the backlog must be larger than the cap"
    cut = max(i for i in range(TAIL_CAP - 10, TAIL_CAP + 10) if rows[i - 1]["Event_type"] == "Gtid")
    return events_from_rows(rows[:cut])


def test_delayed_replica_with_backlog_larger_than_the_cap_is_not_a_finding(fleet):
    """SOURCE_DELAY replica, both threads running, ~3,000 relay-log events not yet applied. The capped tail from
    the applier position ends inside a transaction whose GTID is in Retrieved_Gtid_Set: before the fix a critical
    incomplete_relay_log_tail every run. Now: no warning or critical finding, with the capped tail (flagged
    truncated) or with the newest relay log's complete end."""
    a, b = fleet.server("a"), fleet.server("b")
    b.execute("STOP REPLICA FOR CHANNEL ''", "CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 3600 FOR CHANNEL ''",
              "START REPLICA FOR CHANNEL ''")
    write(a, 600)                                            # 600 x (Gtid, BEGIN, Table_map, Write_rows, Xid)
    a_set = a.gtid_executed()
    wait_for(lambda: server_subset(b, a_set, "{Retrieved_Gtid_Set},{Executed_Gtid_Set}".format(**status(b))),
             "b to receive a's writes", timeout=120)
    row = status(b)
    assert (row["Replica_IO_Running"], row["Replica_SQL_Running"]) == ("Yes", "Yes")

    capped = capped_tail_from_applier(b)
    parsed = parse_relay_log(capped)
    assert parsed.ends_inside_transaction and parsed.dangling_gtid in GtidSet.parse(row["Retrieved_Gtid_Set"])

    rep, src = Reader(b), Reader(a)
    try:
        replica_snap, channel_snap = server_snapshot(rep), channel_snapshot(rep)
        complete = relay_tail(rep)
        others = other_channels_gtids(fleet, rep, "")
        source_snap = server_snapshot(src)
    finally:
        rep.close()
        src.close()
    fleet_ctx = FleetContext(other_channels_gtids=others)
    for ch, tail in ((dataclasses.replace(channel_snap, relay_tail_file=row["Relay_Log_File"],
                                          relay_tail_truncated=True), capped),
                     (with_tail(channel_snap, complete), complete)):
        findings = run_pair_checks(replica_snap, ch, source_snap, tail, fleet_ctx)
        assert serious(findings) == [], [f.title for f in findings]


# The machine's AIO contexts (fs.aio-max-nr) are shared by every session's servers; this second, private
# fleet uses InnoDB's simulated AIO so that it starts whatever else runs (GTID behaviour is unaffected).
PRIVATE = [*DURABLE, "--innodb-use-native-aio=OFF"]
LOG_UPDATES_OFF = {
    "name": "no-log-updates",
    "servers": [{"name": "src", "options": PRIVATE},
                {"name": "rep", "options": [*PRIVATE, "--log-replica-updates=OFF"]}],
    "channels": [{"replica": "rep", "source": "src", "channel": ""}],
}


def test_replica_without_log_replica_updates_two_runs_no_purged_jump(fleet_factory):
    """log_bin=ON, log_replica_updates=OFF on 9.7.4: gtid_purged equals gtid_executed and Previous_gtids stay
    empty even after FLUSH BINARY LOGS. Two nightly snapshots with traffic and a rotation between: before the fix
    a gtid_purged_jumped warning every night; now no warning or critical. A SET GLOBAL gtid_purged of the
    replica's OWN uuid after a RESET is still reported."""
    own = fleet_factory(LOG_UPDATES_OFF, "no-log-updates")
    src, rep = own.server("src"), own.server("rep")
    src.execute("CREATE DATABASE w", "CREATE TABLE w.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
                *[f"INSERT INTO w.t (v) VALUES ({i})" for i in range(5)])
    own.wait_caught_up(timeout=60)
    assert rep.query_value("SELECT @@GLOBAL.log_replica_updates") == 0
    assert GtidSet.parse(rep.query_value("SELECT @@GLOBAL.gtid_purged")) == GtidSet.parse(rep.gtid_executed())
    first = server_snapshot(rep)

    src.execute(*[f"INSERT INTO w.t (v) VALUES ({i})" for i in range(20)])
    own.wait_caught_up(timeout=60)
    rep.execute("FLUSH BINARY LOGS")
    src.execute(*[f"INSERT INTO w.t (v) VALUES ({i})" for i in range(5)])
    own.wait_caught_up(timeout=60)
    second = server_snapshot(rep)
    newest = rep.query("SHOW BINARY LOGS")[-1]["Log_name"]
    assert previous_gtids(rep, newest) == ""                              # the observed 9.7.4 behaviour
    assert second.gtid_purged == second.gtid_executed and (second.gtid_purged - first.gtid_purged)
    assert serious(run_server_checks(second, first)) == []

    rep_uuid = rep.server_uuid
    rep.execute("STOP REPLICA", "RESET BINARY LOGS AND GTIDS",
                f"SET GLOBAL gtid_purged = '{second.gtid_executed.to_text(multiline=False)},{rep_uuid}:1-10'")
    third = server_snapshot(rep)
    [jump] = [f for f in run_server_checks(third, second) if f.check_id == "gtid_purged_jumped"]
    assert jump.gtid_set == GtidSet.parse(f"{rep_uuid}:1-10")


class BoundedWriter(threading.Thread):
    """Commits one-row transactions on a source until stopped, at most ``limit`` of them or ``seconds``."""

    def __init__(self, server, limit: int = 3000, seconds: float = 60.0):
        super().__init__(daemon=True)
        self.server, self.limit, self.seconds = server, limit, seconds
        self.stop_event, self.count = threading.Event(), 0

    def run(self) -> None:
        conn = self.server.connect()
        try:
            cur = conn.cursor()
            deadline = time.monotonic() + self.seconds
            while not self.stop_event.is_set() and self.count < self.limit and time.monotonic() < deadline:
                cur.execute(f"INSERT INTO {DB}_{self.server.name}.w (v) VALUES (%s)", (self.count,))
                conn.commit()
                self.count += 1
        finally:
            conn.close()

    def stop(self) -> int:
        self.stop_event.set()
        self.join(timeout=30)
        return self.count


def test_busy_source_read_out_of_order_is_unconfirmed_not_critical(fleet):
    """A source taking steady writes while the audit reads. Read in the planned order (replica, then source): no
    warning or critical. Read the other way round (source, then replica, as a cycle or a retried probe can do):
    the replica legitimately holds the source's newer GTIDs, so "replica minus source" is not empty; before the
    fix that was a critical errant_transactions and replica_has_more_gtids; now both are unconfirmed warnings
    carrying both read instants."""
    a, b = fleet.server("a"), fleet.server("b")
    writer = BoundedWriter(a)
    writer.start()
    try:
        wait_for(lambda: writer.count >= 50, "the writer to get going")
        in_order = pair_findings(fleet)
        assert serious(in_order) == [], [f.title for f in in_order]

        src_first = server_snapshot(a)
        wait_for(lambda: not server_subset(b, b.gtid_executed(), src_first.gtid_executed.to_text()),
                 "b to apply transactions a committed after its snapshot")
        rep = Reader(b)
        try:
            replica_snap = server_snapshot(rep)
            tail = relay_tail(rep)
            channel_snap = with_tail(channel_snapshot(rep), tail)
            others = other_channels_gtids(fleet, rep, "")
        finally:
            rep.close()
    finally:
        written = writer.stop()
    assert written > 50
    assert replica_snap.read_at > src_first.read_at
    findings = by_check(run_pair_checks(replica_snap, channel_snap, src_first, tail,
                                        FleetContext(other_channels_gtids=others)))
    for check_id in ("errant_transactions", "replica_has_more_gtids"):
        [f] = findings[check_id]
        assert f.severity is Severity.WARNING and f.title.startswith("Unconfirmed")
        assert f.evidence["read_order"] == "source_first_or_same"
        assert f.evidence["source_read_at"] == src_first.read_at.isoformat()
    assert not [f for fs in findings.values() for f in fs if f.severity is Severity.CRITICAL]
    # the failover model reads the same instants (issue 18, defect 5): the source's own new commits on
    # its only replica are unconfirmed errant GTIDs, so no_safe_failover_candidate is no critical
    from gtid_core.failover import FailoverReplica, failover_findings, model_failover
    model = model_failover(src_first, [FailoverReplica(replica_snap, channel_snap, others)])
    (candidate,) = model.candidates
    assert candidate.errant and candidate.errant_confirmed is False, (candidate.verdict, candidate.reasons)
    assert any("UNCONFIRMED" in reason for reason in candidate.reasons), candidate.reasons
    assert not any(cause[0] == "errant_transactions" for cause in candidate.causes)
    failover = failover_findings(model)
    assert failover and all(f.severity is not Severity.CRITICAL for f in failover), \
        [(f.check_id, f.severity, f.title) for f in failover]
