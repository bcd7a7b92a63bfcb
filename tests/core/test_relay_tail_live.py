"""incomplete_relay_log_tail on a real MySQL 9.7 replica, read end to end: the collector
(``jobs.collector.read_server``) reads the replica and its source, the audit's converters
(``jobs.audit_tasks``) turn its rows into snapshots, and the checks run on them. The server's own
view (QUEUEING_TRANSACTION, the Gtid event at the applier's position, GTID_SUBSET) is the judge.

Issue 18, defect 8 (seed 002): a receiver stopped inside a transaction of more events than the
collector keeps (``collection.relay_tail_max_events``, 2,000) lost the transaction's Gtid event
from the window, recorded ``relay_tail_truncated=False`` and the check stayed silent.

One private two-server fleet for the module; the source writes row events of one row each
(``--binlog-row-event-max-size=256`` and 150-byte rows), so a 5,000-row INSERT ... SELECT is a
transaction of about 5,000 events, of which the scenario lets about 2,700 reach the replica.
"""
from __future__ import annotations

import datetime as dt

import pytest

from gtid_core import FleetContext, GtidSet, Severity, events_from_rows, run_pair_checks

pytestmark = pytest.mark.mysql

PRIVATE = ["--innodb-use-native-aio=OFF"]   # the machine's AIO contexts are shared with other sessions
TOPOLOGY = {
    "name": "relay-tail",
    "servers": [{"name": "src", "options": [*PRIVATE, "--binlog-row-event-max-size=256"]},
                {"name": "rep", "options": PRIVATE}],
    "channels": [{"replica": "rep", "source": "src", "channel": ""}],
}
CAP = 2000                  # collection.relay_tail_max_events, the default
ROWS = 5000                 # rows of the large transaction on the source (one Write_rows event each)
BUDGET = 540_000            # bytes of it the proxy lets through: about 2,700 events (> CAP)
DB = "sandbox_scenarios"    # where jobs.sandbox.scenarios writes


@pytest.fixture(scope="module")
def pair_fleet(mysql_dist, tmp_path_factory):
    from jobs.sandbox.fleet import Fleet

    fleet = Fleet.up(TOPOLOGY, tmp_path_factory.mktemp("relay-tail"), dist=mysql_dist)
    try:
        yield fleet
    finally:
        fleet.down(graceful=False)


@pytest.fixture
def fleet(pair_fleet):
    """The fleet wiped to an empty history, the channel re-pointed at the source and running."""
    rep = pair_fleet.server("rep")
    if rep.query_value("SELECT QUEUEING_TRANSACTION FROM performance_schema.replication_connection_status"):
        # a previous test left the receiver stopped inside a group: an applier waiting inside it delays
        # STOP REPLICA by 60 s; let the receiver fetch the rest first
        rep.execute("START REPLICA IO_THREAD FOR CHANNEL ''")
        pair_fleet.wait_caught_up(timeout=60)
    rep.execute("STOP REPLICA", "RESET REPLICA")
    pair_fleet.attach_channel(pair_fleet.topology.channels[0], start=False)
    rep.execute("CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0 FOR CHANNEL ''")
    for server in pair_fleet.servers.values():
        server.execute("SET SESSION sql_log_bin = 0", f"DROP DATABASE IF EXISTS {DB}", "SET SESSION sql_log_bin = 1",
                       "RESET BINARY LOGS AND GTIDS")
    rep.execute("START REPLICA")
    pair_fleet.wait_caught_up(timeout=60)
    return pair_fleet


def collect(fleet, name: str):
    """``read_server`` on one server of the fleet, as the nightly job runs it (audit account, defaults)."""
    from jobs.collector import read_server, RunContext
    from jobs.config import CollectionSettings, ServerSpec

    server = fleet.server(name)
    spec = ServerSpec(name=name, host=server.host, port=server.port, user="audit",
                      password_file=str(fleet.audit_password_file), connect_timeout_s=5, read_timeout_s=30)
    result = read_server(spec, RunContext("relay-tail", dt.date.today(), CollectionSettings().read_settings()))
    assert result.errors == [], result.errors
    return result


def audit(fleet):
    """Collect the replica, then its source; the pair checks over the converted rows."""
    from jobs.audit_tasks import channel_snapshot, relay_tail_rows, server_snapshot

    rep, src = collect(fleet, "rep"), collect(fleet, "src")
    [row] = rep.channels
    tail = events_from_rows(relay_tail_rows(rep.relay_log_tail)) if row["relay_tail_events"] is not None else None
    findings = run_pair_checks(server_snapshot({**rep.server, "binary_logs": rep.binary_logs}), channel_snapshot(row),
                               server_snapshot({**src.server, "binary_logs": src.binary_logs}), tail,
                               FleetContext(uuid_registry={s.server_uuid: n for n, s in fleet.servers.items()}))
    return row, rep.relay_log_tail, {f.check_id: f for f in findings}


def cut_large_transaction(fleet) -> str:
    """Stop the receiver inside a transaction of about 2,700 events; its GTID, as the source committed it."""
    from jobs.sandbox import scenarios

    result = scenarios.relay_log_ends_inside_transaction(fleet, "rep", channel="", rows=ROWS, budget=BUDGET)
    return result.gtid_sets["queueing_transaction"]


def test_receiver_stopped_inside_a_transaction_larger_than_the_tail_is_found_with_its_gtid(fleet):
    """The tail keeps 2,000 of the ~2,700 events of the cut transaction, not its Gtid event; the reader says it
    dropped events, and the check fires with the GTID the server names in QUEUEING_TRANSACTION (also the Gtid event
    at the applier's position), absent from the received set. Before the fix: no finding."""
    big = cut_large_transaction(fleet)
    rep = fleet.server("rep")
    status = rep.query("SHOW REPLICA STATUS")[0]
    queueing = rep.query_value("SELECT QUEUEING_TRANSACTION FROM performance_schema.replication_connection_status")
    received = rep.query_value("SELECT RECEIVED_TRANSACTION_SET FROM performance_schema.replication_connection_status")
    assert status["Replica_IO_Running"] == "No" and queueing == big
    # the collector reads from the applier's position (8.0.2+): the events there to the end of the file
    total = len(rep.query(f"SHOW RELAYLOG EVENTS IN '{status['Relay_Log_File']}' FROM {status['Relay_Log_Pos']}"))
    assert total > CAP + 500, "the transaction must be larger than the tail the collector keeps"
    [at_applier] = rep.query(f"SHOW RELAYLOG EVENTS IN '{status['Relay_Log_File']}' FROM {status['Relay_Log_Pos']} "
                             "LIMIT 1")
    assert at_applier["Event_type"] == "Gtid" and big in at_applier["Info"]

    row, tail, found = audit(fleet)
    assert "incomplete_relay_log_tail" in found, "defect 8: the cut transaction is not reported"
    finding = found["incomplete_relay_log_tail"]
    assert finding.severity is Severity.WARNING
    assert finding.gtid_set == GtidSet.parse(queueing)
    assert finding.evidence["dangling_gtid_from"] == "QUEUEING_TRANSACTION"
    assert not rep.query_value("SELECT GTID_SUBSET(%s, %s)", (queueing, received))
    assert (row["relay_tail_truncated"], row["relay_tail_events"], len(tail)) == (False, CAP, CAP)
    assert row["relay_tail_first_event"] == total - CAP            # the reader says what it dropped
    assert "Gtid" not in {r["event_type"] for r in tail}          # ... the Gtid event among them
    assert (row["applier_event_type"], row["applier_event_gtid"]) == ("Gtid", big)
    assert row["relay_tail_scanned_events"] <= default_scan_bound()


def test_after_the_receiver_restarts_the_transaction_completes_and_nothing_is_found(fleet):
    """Positive control, then the repair: the finding is there; START REPLICA IO_THREAD fetches the transaction
    again and, once applied and with the receiver stopped between transactions, the same read finds nothing."""
    big = cut_large_transaction(fleet)
    assert "incomplete_relay_log_tail" in audit(fleet)[2]
    rep = fleet.server("rep")
    rep.execute("START REPLICA IO_THREAD FOR CHANNEL ''")
    fleet.wait_caught_up(timeout=60)
    assert rep.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (big,))
    rep.execute("STOP REPLICA IO_THREAD FOR CHANNEL ''")
    row, tail, found = audit(fleet)
    assert "incomplete_relay_log_tail" not in found
    assert row["relay_tail_truncated"] is False


def test_delayed_replica_holding_a_large_complete_transaction_is_silent(fleet):
    """SOURCE_DELAY replica: a complete transaction of ~5,000 events sits unapplied at the end of its relay log
    (the tail holds no Gtid event and ends with its Xid). Receiver running: nothing; receiver stopped between
    transactions: nothing either. Positive control: the same replica, cut inside the next large transaction, is
    reported."""
    src, rep = fleet.server("src"), fleet.server("rep")
    rep.execute("STOP REPLICA", "CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 3600 FOR CHANNEL ''", "START REPLICA")
    src.execute(f"CREATE DATABASE IF NOT EXISTS {DB}",
                f"CREATE TABLE {DB}.big (id BIGINT PRIMARY KEY AUTO_INCREMENT, pad VARCHAR(200))",
                f"SET SESSION cte_max_recursion_depth = {ROWS + 1}",
                f"INSERT INTO {DB}.big (pad) WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq "
                f"WHERE n < {ROWS}) SELECT REPEAT('x', 150) FROM seq")
    executed = src.gtid_executed()
    _wait(lambda: rep.query_value("SELECT GTID_SUBSET(%s, RECEIVED_TRANSACTION_SET) FROM "
                                  "performance_schema.replication_connection_status", (executed,)))
    status = rep.query("SHOW REPLICA STATUS")[0]
    assert (status["Replica_IO_Running"], status["Replica_SQL_Running"]) == ("Yes", "Yes")
    assert not rep.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (executed,))   # not applied

    row, tail, found = audit(fleet)
    assert "incomplete_relay_log_tail" not in found
    assert row["relay_tail_first_event"] > 0 and row["relay_tail_truncated"] is False
    assert "Gtid" not in {r["event_type"] for r in tail} and tail[-1]["event_type"] == "Xid"
    assert row.get("gtid_executed_reread") is None     # lagging: Exec < Read, no second read of gtid_executed

    rep.execute("STOP REPLICA IO_THREAD FOR CHANNEL ''")
    row, tail, found = audit(fleet)
    assert "incomplete_relay_log_tail" not in found
    assert tail[-1]["event_type"] == "Xid" and row["relay_tail_first_event"] > 0

    rep.execute("STOP REPLICA", "CHANGE REPLICATION SOURCE TO SOURCE_DELAY = 0 FOR CHANNEL ''", "START REPLICA")
    big = cut_large_transaction(fleet)
    finding = audit(fleet)[2]["incomplete_relay_log_tail"]
    assert finding.gtid_set == GtidSet.parse(big) and finding.severity is Severity.WARNING


def default_scan_bound() -> int:
    from jobs.config import CollectionSettings

    return CollectionSettings().relay_tail_max_scan_events


def _wait(predicate, timeout: float = 60.0):
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_a_reset_replica_is_read_again_and_still_reported_a_healthy_one_is_not_read_again(fleet):
    """replica_gtid_history_lost through the collector: a caught-up healthy replica costs no second read of
    gtid_executed; after RESET BINARY LOGS AND GTIDS its status row shows the received GTIDs outside
    Executed_Gtid_Set with equal positions, the collector reads @@GLOBAL.gtid_executed again after the row (the
    race this rules out is in the check's docstring), the later read still lacks them, and the finding names
    exactly what the server's GTID_SUBTRACT gives."""
    src, rep = fleet.server("src"), fleet.server("rep")
    src.execute(f"CREATE DATABASE IF NOT EXISTS {DB}", f"CREATE TABLE {DB}.t (id INT PRIMARY KEY)",
                f"INSERT INTO {DB}.t VALUES (1)")
    fleet.wait_caught_up()
    row, _, found = audit(fleet)
    assert row.get("gtid_executed_reread") is None and "replica_gtid_history_lost" not in found

    rep.execute("RESET BINARY LOGS AND GTIDS")
    _wait(lambda: (lambda r: r["Exec_Source_Log_Pos"] == r["Read_Source_Log_Pos"])(rep.query("SHOW REPLICA STATUS")[0]))
    row, _, found = audit(fleet)
    assert row["gtid_executed_reread"] == "" == rep.gtid_executed()
    lost = rep.query_value("SELECT GTID_SUBTRACT(%s, @@GLOBAL.gtid_executed)", (row["retrieved_gtid_set"],))
    finding = found["replica_gtid_history_lost"]
    assert finding.gtid_set == GtidSet.parse(lost) and finding.gtid_set.count() == 3
    assert finding.evidence["replica_gtid_executed_reread"] == ""
