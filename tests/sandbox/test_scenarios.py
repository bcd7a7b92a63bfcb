"""Each fault scenario produces its state on real servers, and each repair undoes it.

Expected values come from the servers (server_uuid, SHOW ... output, GTID_SUBSET) or from the
known number of transactions a scenario writes, never from the ScenarioResult under test alone.
"""
from __future__ import annotations

import time

import mysql.connector
import pytest
import yaml

from jobs.sandbox import scenarios as sc

pytestmark = pytest.mark.mysql

PAIR = {"servers": [{"name": "s"}, {"name": "r"}], "channels": [{"replica": "r", "source": "s"}]}
FAN = {"servers": [{"name": "s"}, {"name": "r"}, {"name": "r2"}],
       "channels": [{"replica": "r", "source": "s"}, {"replica": "r2", "source": "s"}]}
CHAIN = {"servers": [{"name": "s"}, {"name": "r"}, {"name": "r3"}],
         "channels": [{"replica": "r", "source": "s"}, {"replica": "r3", "source": "r"}]}
# _write() commits CREATE DATABASE, CREATE TABLE and one INSERT per transaction asked for.
SCENARIO_TXNS = 2 + 3


def subset(server, a, b) -> bool:
    return bool(server.query_value("SELECT GTID_SUBSET(%s, %s)", (a, b)))


def replica_row(server, channel=""):
    return server.query("SHOW REPLICA STATUS FOR CHANNEL %s", (channel,))[0]


def test_errant_transaction_untagged_and_its_repair(fleet_factory):
    """An untagged write on a replica is errant (its own UUID:1); empty transactions on the source repair it."""
    f = fleet_factory(PAIR)
    s, r = f.server("s"), f.server("r")
    result = sc.errant_transaction(f, "r")
    assert result.gtid_sets["errant"] == f"{r.server_uuid}:1"
    assert not subset(s, f"{r.server_uuid}:1", s.gtid_executed())
    assert replica_row(r)["Replica_IO_Running"] == "Yes"       # 9.7 keeps replicating
    repaired = sc.repair_errant(f, result)
    assert repaired.gtid_sets["errant"] == ""
    assert subset(s, f"{r.server_uuid}:1", s.gtid_executed())


def test_errant_tagged_transaction_on_a_chain_and_its_repair(fleet_factory):
    """A tagged errant GTID (uuid:fix_1:1, tag lowercased by the server) at a chain's end; repaired from the top."""
    f = fleet_factory(CHAIN)
    s, r, r3 = f.server("s"), f.server("r"), f.server("r3")
    result = sc.errant_transaction(f, "r3", tag="Fix_1")
    assert result.servers == ("r3", "r")
    assert result.gtid_sets["errant"] == f"{r3.server_uuid}:fix_1:1"
    assert subset(r3, f"{r3.server_uuid}:fix_1:1", r3.gtid_executed())
    assert not subset(r3, f"{r3.server_uuid}:1", r3.gtid_executed() or "")   # untagged gno 1 is distinct
    repaired = sc.repair_errant(f, result)
    assert repaired.gtid_sets["errant"] == ""
    for server in (s, r):
        assert subset(server, f"{r3.server_uuid}:fix_1:1", server.gtid_executed())


def test_purged_binary_logs_latent_then_13114_then_repaired(fleet_factory):
    """A stopped replica whose source purged what it needs: silent until restart, then 13114; repair heals it."""
    f = fleet_factory(PAIR)
    s, r = f.server("s"), f.server("r")
    result = sc.purged_binary_logs(f, "r", transactions=3)
    expected_missing = f"{s.server_uuid}:1-{SCENARIO_TXNS}"
    assert result.gtid_sets["missing"] == expected_missing
    assert s.query_value("SELECT @@GLOBAL.gtid_purged") == expected_missing
    assert s.query("SHOW BINARY LOGS")[0]["Log_name"] != "binlog.000001"
    row = replica_row(r)
    assert (row["Replica_IO_Running"], row["Last_IO_Errno"]) == ("No", 0)     # latent: nothing reported yet
    r.execute("START REPLICA IO_THREAD")
    deadline = time.monotonic() + 30
    while replica_row(r)["Last_IO_Errno"] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    row = replica_row(r)
    assert row["Last_IO_Errno"] == 13114
    assert "purged required binary logs" in row["Last_IO_Error"]
    repaired = sc.repair_missing_gtids(f, result)
    assert repaired.gtid_sets["missing"] == ""
    row = replica_row(r)
    assert (row["Replica_IO_Running"], row["Last_IO_Errno"]) == ("Yes", 0)
    assert r.query_value(f"SELECT COUNT(*) FROM {sc.DB}.writes") == 3


def test_source_restored_with_gtid_purged_fails_the_lagging_replica_only(fleet_factory):
    """After RESET BINARY LOGS AND GTIDS + SET gtid_purged on the source, the lagging replica gets 13114; the other keeps going."""
    f = fleet_factory(FAN)
    s, r, r2 = f.server("s"), f.server("r"), f.server("r2")
    result = sc.source_restored_with_gtid_purged(f, "r", transactions=3)
    assert result.gtid_sets["missing"] == f"{s.server_uuid}:1-{SCENARIO_TXNS}"
    assert s.query("SHOW BINARY LOGS")[0]["Log_name"] == "binlog.000001"           # reset
    assert s.query_value("SELECT @@GLOBAL.gtid_purged") == f"{s.server_uuid}:1-{SCENARIO_TXNS}"
    assert replica_row(r)["Last_IO_Errno"] == 13114
    s.execute(f"INSERT INTO {sc.DB}.writes (note) VALUES ('after restore')")
    f.wait_caught_up(channels=[c for c in f.topology.channels if c.replica == "r2"])
    assert replica_row(r2)["Last_IO_Errno"] == 0
    repaired = sc.repair_missing_gtids(f, result)
    assert repaired.gtid_sets["missing"] == ""
    assert subset(r, s.gtid_executed(), r.gtid_executed())


def test_reset_binary_logs_on_a_replica_loses_its_history_silently(fleet_factory):
    """RESET BINARY LOGS AND GTIDS on a replica: gtid_executed empty, received set kept, replication still Yes/Yes."""
    f = fleet_factory(PAIR)
    s, r = f.server("s"), f.server("r")
    s.execute("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)")
    f.wait_caught_up()
    result = sc.reset_replica_binary_logs(f, "r")
    assert r.gtid_executed() == ""
    assert r.query_value("SELECT RECEIVED_TRANSACTION_SET FROM performance_schema.replication_connection_status") \
        == f"{s.server_uuid}:1-3"
    assert result.gtid_sets["lost"] == f"{s.server_uuid}:1-3"
    row = replica_row(r)
    assert (row["Replica_IO_Running"], row["Replica_SQL_Running"], row["Last_IO_Errno"]) == ("Yes", "Yes", 0)
    repaired = sc.repair_reset_replica(f, result)
    assert repaired.gtid_sets["lost"] == ""
    assert r.gtid_executed() == f"{s.server_uuid}:1-3"


def test_relay_log_ends_inside_a_transaction_and_restart_refetches_it(fleet_factory):
    """The receiver stopped mid-transaction: relay log ends in row events, GTID queueing but not received."""
    f = fleet_factory(PAIR)
    s, r = f.server("s"), f.server("r")
    result = sc.relay_log_ends_inside_transaction(f, "r", rows=5000)
    gtid = result.gtid_sets["queueing_transaction"]
    status = r.query("SELECT QUEUEING_TRANSACTION, RECEIVED_TRANSACTION_SET, SERVICE_STATE "
                     "FROM performance_schema.replication_connection_status")[0]
    assert (status["QUEUEING_TRANSACTION"], status["SERVICE_STATE"]) == (gtid, "OFF")
    assert gtid.startswith(s.server_uuid + ":")
    assert not subset(r, gtid, status["RECEIVED_TRANSACTION_SET"])
    assert not subset(r, gtid, r.gtid_executed())
    assert subset(s, gtid, s.gtid_executed())
    row = replica_row(r)
    assert row["Source_Port"] == s.port                      # pointed back at the real source
    events = r.query(f"SHOW RELAYLOG EVENTS IN '{row['Relay_Log_File']}'")
    types = [e["Event_type"] for e in events]
    last_gtid = max(i for i, t in enumerate(types) if t == "Gtid")
    assert types[last_gtid + 1:last_gtid + 3] == ["Query", "Table_map"]
    assert types[-1] == "Write_rows" and "Xid" not in types[last_gtid:]
    repaired = sc.repair_relay_log(f, result)
    assert subset(r, gtid, r.gtid_executed())
    assert repaired.details["queueing_transaction"] == ""
    assert r.query_value(f"SELECT COUNT(*) FROM {sc.DB}.big") == 5000


def test_gtid_off_server_writes_anonymous_transactions(fleet_factory):
    """A server added with gtid_mode=OFF logs Anonymous_Gtid events and has an empty gtid_executed."""
    f = fleet_factory({"servers": [{"name": "s"}]})
    result = sc.gtid_off_server(f, "legacy")
    legacy = f.server("legacy")
    assert legacy.query_value("SELECT @@GLOBAL.gtid_mode") == "OFF"
    assert legacy.gtid_executed() == ""
    assert "Anonymous_Gtid" in {e["Event_type"] for e in legacy.query("SHOW BINLOG EVENTS")}
    assert result.gtid_sets["gtid_executed"] == ""
    legacy.connect(user="audit", password=f.audit_password_file.read_text().strip()).close()


def test_continuous_writer_commits_until_stopped(fleet_factory):
    """The background writer keeps committing while we read; stop() reports exactly the GTIDs written."""
    f = fleet_factory(PAIR)
    s = f.server("s")
    writer = sc.ContinuousWriter(s, interval=0.01)
    first = s.gtid_executed()
    deadline = time.monotonic() + 20
    while s.gtid_executed() == first and time.monotonic() < deadline:
        time.sleep(0.05)
    assert s.gtid_executed() != first          # writes flow while another session reads
    result = writer.stop()
    rows = s.query_value(f"SELECT COUNT(*) FROM {sc.DB}.flow")
    assert rows == result.details["transactions"] > 0
    assert s.query_value("SELECT GTID_SUBTRACT(%s, %s)", (s.gtid_executed(), result.gtid_sets["before"])) \
        == result.gtid_sets["written"]


def test_multi_source_and_chain_on_the_standard_fleet(fleet):
    """billing-r1 has channels orders/billing from their sources; orders-r3 sits at the end of orders-src -> orders-r1."""
    ms = sc.multi_source(fleet, "billing-r1")
    assert set(ms.details["channels"]) == {"orders", "billing"}
    assert ms.gtid_sets["received[orders]"] == fleet.server("orders-src").gtid_executed()
    assert ms.gtid_sets["received[billing]"] == fleet.server("billing-src").gtid_executed()
    ch = sc.chain(fleet, "orders-r3")
    assert ch.servers == ("orders-r3", "orders-r1", "orders-src")
    assert ch.details["top_source_uuid"] == fleet.server("orders-src").server_uuid


def test_refused_address_and_wrong_password_entries(fleet, tmp_path):
    """The refused entry's port refuses connections (2003); the wrong-password file is rejected (1045)."""
    refused = sc.refused_address("ghost")
    wrong = sc.wrong_password(fleet, "orders-r1")
    entries = sc.extra_config_servers([refused, wrong])
    with pytest.raises(mysql.connector.Error) as info:
        mysql.connector.connect(host="127.0.0.1", port=entries[0]["port"], user="audit", password="x",
                                connection_timeout=3)
    assert info.value.errno == 2003
    with open(entries[1]["password_file"]) as handle:
        bad = handle.read().strip()
    with pytest.raises(mysql.connector.Error) as info:
        fleet.server("orders-r1").connect(user="audit", password=bad)
    assert info.value.errno == 1045
    config = yaml.safe_load(fleet.write_audit_config(tmp_path / "c.yaml", extra_servers=entries).read_text())
    by_name = {s["name"]: s for s in config["servers"]}
    assert by_name["orders-r1-wrong-password"]["port"] == fleet.server("orders-r1").port
    assert by_name["ghost"]["port"] == entries[0]["port"]
