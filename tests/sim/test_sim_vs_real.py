"""The simulator's 9.7 answers match a real 9.7's, statement by statement, column by column.

Both a real replica (sandbox, MySQL 9.7) and a simulated 9.7 replica are asked the same statements
through mysql-connector (pure Python, as the collector reads); column names and order, wire type
codes, which values are NULL, and error numbers with SQLSTATE must be the same.
"""
from __future__ import annotations

import time

import mysql.connector
import pytest

from jobs.collector import GROUP_NAME_ITEM, dialect_for
from gtid_core.versions import MySQLVersion
from jobs.sandbox.sim import FleetBuilder, Simulator
from jobs.sandbox.sim.model import PASSWORD

pytestmark = pytest.mark.mysql

VARIABLES = ", ".join(f"@@GLOBAL.{var} AS `{col}`" for col, var in dialect_for(MySQLVersion.of(9, 7, 4)).variables)


def _statements(binlog: str, relay: str) -> list[str]:
    return [
        "SELECT @@GLOBAL.version AS version",
        f"SELECT {VARIABLES}",
        "SELECT @@GLOBAL.log_slave_updates AS a, @@GLOBAL.slave_parallel_workers AS b",
        # issue #22: the group name of a server outside any group (no plugin) is NULL
        f"SELECT @@GLOBAL.version AS version, {GROUP_NAME_ITEM}",
        "SELECT * FROM performance_schema.replication_group_members",
        "SELECT * FROM performance_schema.replication_group_member_stats",
        "SELECT @@session.sql_mode",
        "SHOW BINARY LOG STATUS",
        "SHOW REPLICA STATUS",
        "SHOW REPLICA STATUS FOR CHANNEL ''",
        "SELECT * FROM performance_schema.replication_connection_status",
        "SELECT CHANNEL_NAME, ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE, ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE "
        "FROM performance_schema.replication_applier_configuration",
        "SHOW BINARY LOGS",
        f"SHOW BINLOG EVENTS IN '{binlog}' LIMIT 2",
        f"SHOW RELAYLOG EVENTS IN '{relay}' LIMIT 2 FOR CHANNEL ''",
        "SHOW REPLICAS",
        # what 9.7 rejects
        "SHOW SLAVE STATUS", "SHOW MASTER STATUS", "SHOW SLAVE HOSTS",
        "SELECT @@GLOBAL.relay_log_info_repository AS x",
        "SELECT @@GLOBAL.no_such_variable AS x",
        f"SHOW RELAYLOG EVENTS IN '{relay}9' LIMIT 1 FOR CHANNEL ''",
        "SELECT * FROM performance_schema.no_such_table",
        "SELECT NO_SUCH_COLUMN FROM performance_schema.replication_connection_status",
    ]


def _answers(host: str, port: int, user: str, password: str) -> dict[str, object]:
    cnx = mysql.connector.connect(host=host, port=port, user=user, password=password, use_pure=True, autocommit=True)
    try:
        cur = cnx.cursor(dictionary=True)
        cur.execute("SHOW REPLICA STATUS")
        status = cur.fetchall()[0]
        cur.execute("SHOW BINARY LOGS")
        binlog = cur.fetchall()[0]["Log_name"]
        cur.close()
        out: dict[str, object] = {}
        for i, sql in enumerate(_statements(binlog, status["Relay_Log_File"])):
            cur = cnx.cursor()
            try:
                cur.execute(sql)
                rows = cur.fetchall()
                out[i] = {"columns": [(d[0], d[1]) for d in cur.description],
                          "nulls": [tuple(v is None for v in row) for row in rows[:1]]}
            except mysql.connector.Error as exc:
                out[i] = {"error": (exc.errno, exc.sqlstate)}
            finally:
                cur.close()
        return out
    finally:
        cnx.close()


@pytest.fixture(scope="module")
def real(mysql_dist, tmp_path_factory):
    """A real 9.7 source and replica, caught up and idle long enough for a heartbeat."""
    from jobs.sandbox.fleet import Fleet, Topology

    topology = {"servers": [{"name": "src"}, {"name": "rep"}], "channels": [{"replica": "rep", "source": "src"}]}
    fleet = Fleet.up(Topology.load(topology), tmp_path_factory.mktemp("real97"), dist=mysql_dist)
    try:
        fleet.server("src").execute("CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)",
                                    "INSERT INTO d.t VALUES (1)")
        fleet.wait_caught_up()
        time.sleep(1.5)
        rep = fleet.server("rep")
        yield _answers(rep.host, rep.port, "root", "")
    finally:
        fleet.down(graceful=False)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """The same statements answered by a simulated 9.7.4 replica."""
    b = FleetBuilder(seed=97)
    _, rep = b.cluster("s97", "9.7.4", replicas=1)
    fleet = b.fleet()
    work = tmp_path_factory.mktemp("sim97")
    fleet.save(work / "fleet.json")
    with Simulator(work / "fleet.json", lifetime_s=120, latency="0-0"):
        yield _answers(rep.host, rep.port, "audit", PASSWORD)


@pytest.mark.parametrize("index", range(len(_statements("f", "r"))),
                         ids=[s[:40] for s in _statements("binlog.000001", "relay.000001")])
def test_simulated_97_answers_like_real_97(real, simulated, index):
    """Column names, wire types and NULLs (or errno and SQLSTATE) of one statement are the same."""
    assert simulated[index] == real[index]
