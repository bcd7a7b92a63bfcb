"""The simulator answers as each version would, through mysql-connector and the real collector."""
from __future__ import annotations

import datetime as dt

import mysql.connector
import pytest

from jobs.collector import read_server, RunContext
from jobs.config import load_config
from jobs.sandbox.sim import FleetBuilder, Simulator
from jobs.sandbox.sim.model import PASSWORD

VERSIONS = ["5.6.51", "5.7.44", "8.0.21", "8.0.22", "8.0.36", "8.4.3", "9.7.4"]


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """One healthy source + replica per version, served for the module."""
    b = FleetBuilder(seed=5)
    for v in VERSIONS:
        b.cluster("v" + v.replace(".", ""), v, replicas=1)
    fleet = b.fleet()
    work = tmp_path_factory.mktemp("simd")
    fleet.save(work / "fleet.json")
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "wh"), password_file=work / "pw")
    with Simulator(work / "fleet.json", lifetime_s=120, latency="0-1"):
        yield fleet, load_config(config)


def _connect(server):
    return mysql.connector.connect(host=server.host, port=server.port, user="audit", password=PASSWORD,
                                   use_pure=True, autocommit=True)


def _error(server, sql):
    cnx = _connect(server)
    try:
        cur = cnx.cursor()
        with pytest.raises(mysql.connector.Error) as info:
            cur.execute(sql)
            cur.fetchall()
        return info.value.errno, info.value.sqlstate
    finally:
        cnx.close()


@pytest.mark.parametrize("version,statement,errno", [
    ("5.7.44", "SHOW REPLICA STATUS", 1064),
    ("8.0.21", "SHOW REPLICA STATUS", 1064),
    ("8.4.3", "SHOW SLAVE STATUS", 1064),
    ("9.7.4", "SHOW MASTER STATUS", 1064),
    ("8.0.36", "SHOW BINARY LOG STATUS", 1064),
    ("5.6.51", "SHOW RELAYLOG EVENTS IN 'x.000001' LIMIT 1 FOR CHANNEL ''", 1064),
    ("5.6.51", "SELECT * FROM performance_schema.replication_connection_status", 1146),
    ("8.0.22", "SELECT ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE FROM performance_schema.replication_applier_configuration", 1054),
    ("8.4.3", "SELECT @@GLOBAL.relay_log_info_repository AS x", 1193),
    ("5.7.44", "SELECT @@GLOBAL.replica_parallel_workers AS x", 1193),
    ("9.7.4", "SHOW BINLOG EVENTS IN 'nosuch.000001' LIMIT 1", 1220),
], ids=lambda x: str(x)[:30])
def test_version_rejects_like_the_server(sim, version, statement, errno):
    """A statement the version does not know gets that version's error number."""
    fleet, _ = sim
    server = fleet.server(f"v{version.replace('.', '')}-r1")
    assert _error(server, statement)[0] == errno


@pytest.mark.parametrize("version", VERSIONS)
def test_collector_reads_every_version(sim, version):
    """read_server reads each version without an error row, with the version's replica statement."""
    fleet, config = sim
    ctx = RunContext("t", dt.date.today(), config.collection.read_settings())
    spec = {s.name: s for s in config.inventory()}[f"v{version.replace('.', '')}-r1"]
    result = read_server(spec, ctx)
    assert result.errors == []
    assert result.server["status"] == "ok"
    assert result.server["gtid_executed"] == fleet.server(spec.name).gtid_executed
    [channel] = result.channels
    expected = "SHOW REPLICA STATUS" if version >= "8.0.22" and version != "8.0.21" else "SHOW SLAVE STATUS"
    assert channel["status_statement"] == expected
    assert channel["retrieved_gtid_set"] == fleet.server(spec.name).channels[0].retrieved
    assert [b["previous_gtids"] for b in result.binary_logs] == [
        b.previous_gtids for b in fleet.server(spec.name).binary_logs]


def test_slave_status_columns_before_and_after_8022(sim):
    """8.0.21 names the columns Master_*/Slave_*; 8.0.22 answers SHOW REPLICA STATUS with Source_*/Replica_*
    and still SHOW SLAVE STATUS with the old names."""
    fleet, _ = sim
    names = {}
    for key, version, sql in [("8021", "8.0.21", "SHOW SLAVE STATUS"), ("8022r", "8.0.22", "SHOW REPLICA STATUS"),
                              ("8022s", "8.0.22", "SHOW SLAVE STATUS")]:
        cnx = _connect(fleet.server(f"v{version.replace('.', '')}-r1"))
        cur = cnx.cursor()
        cur.execute(sql)
        cur.fetchall()
        names[key] = [d[0] for d in cur.description]
        cnx.close()
    assert "Master_UUID" in names["8021"] and "Source_UUID" not in names["8021"]
    assert "Source_UUID" in names["8022r"] and "Slave_IO_Running" not in names["8022r"]
    assert names["8022s"] == names["8021"]
