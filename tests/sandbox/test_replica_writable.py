"""config_replica_writable against real MySQL 9.7 servers: what the check says a writable replica
risks is what the server does. On a replica with read_only = OFF, an account without SUPER or
CONNECTION_ADMIN commits, and its commit is a GTID of the replica's own server_uuid that the source
lacks (an errant transaction); with read_only = ON the same write is refused with
ER_OPTION_PREVENTS_STATEMENT while the channel keeps applying the source's writes. The collector's
rows, through the check, report the replica in the first state and not in the second."""
from __future__ import annotations

import datetime as dt
import time

import mysql.connector
import pytest

from gtid_core import GtidSet

pytestmark = pytest.mark.mysql

ER_OPTION_PREVENTS_STATEMENT = 1290
TOPOLOGY = {"name": "writable", "servers": [{"name": "s"}, {"name": "r1"}],
            "channels": [{"replica": "r1", "source": "s"}]}
APP, APP_PASSWORD = "app", "app-writes-here"


def _wait(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _findings(fleet, name: str):
    """config_replica_writable of ``name``, from the rows the collector reads, through the server checks."""
    from gtid_core.checks import ServerReplication, run_server_checks
    from jobs.audit_tasks import channel_snapshot, server_snapshot
    from jobs.collector import RunContext, read_server
    from jobs.config import CollectionSettings
    from jobs.server_spec import ServerSpec

    server = fleet.server(name)
    spec = ServerSpec(name=name, host=server.host, port=server.port, user="audit",
                      password_file=str(fleet.audit_password_file), connect_timeout_s=5, read_timeout_s=10)
    result = read_server(spec, RunContext(run_id="writable", run_date=dt.date(2026, 12, 3),
                                          settings=CollectionSettings().read_settings()))
    replication = ServerReplication(channels=[channel_snapshot(c) for c in result.channels],
                                    sources_of={name: ["s"], "s": []})
    found = run_server_checks(server_snapshot({**result.server, "binary_logs": None}), None, replication)
    return [f for f in found if f.check_id == "config_replica_writable"]


def test_a_writable_replica_takes_errant_writes_and_read_only_stops_them_not_replication(mysql_dist, tmp_path):
    from jobs.sandbox.fleet import Fleet

    fleet = Fleet.up(TOPOLOGY, tmp_path / "writable", dist=mysql_dist)
    try:
        src, rep = fleet.server("s"), fleet.server("r1")
        assert rep.query_value("SELECT @@GLOBAL.read_only") == 1     # the sandbox sets a replica read-only
        src.execute("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)",
                    f"CREATE USER '{APP}'@'%' IDENTIFIED BY '{APP_PASSWORD}'",
                    f"GRANT INSERT, SELECT ON app.* TO '{APP}'@'%'")
        target = src.query_value("SELECT @@GLOBAL.gtid_executed")
        _wait(lambda: rep.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (target,)) == 1,
              "r1 to apply the account and the table")

        def app_insert(value: int) -> None:
            conn = mysql.connector.connect(host=rep.host, port=rep.port, user=APP, password=APP_PASSWORD,
                                           use_pure=True, autocommit=True)
            try:
                conn.cursor().execute("INSERT INTO app.t VALUES (%s)", (value,))
            finally:
                conn.close()

        # read_only = ON: refused, and replication goes on
        with pytest.raises(mysql.connector.Error) as refused:
            app_insert(1)
        assert refused.value.errno == ER_OPTION_PREVENTS_STATEMENT and "--read-only" in refused.value.msg
        src.execute("INSERT INTO app.t VALUES (100)")
        target = src.query_value("SELECT @@GLOBAL.gtid_executed")
        _wait(lambda: rep.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (target,)) == 1,
              "r1 to apply s's insert under read_only = ON")
        assert _findings(fleet, "r1") == []

        # read_only = OFF: the same write commits, with r1's own server_uuid, which s lacks
        rep.execute("SET GLOBAL read_only = OFF")
        [finding] = _findings(fleet, "r1")
        assert finding.evidence["channels"] == [""] and finding.remediation.startswith("SET PERSIST super_read_only = ON")
        app_insert(2)
        errant = GtidSet.parse(rep.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)",
                                               (src.query_value("SELECT @@GLOBAL.gtid_executed"),)))
        assert errant.count() == 1 and {u for u, *_ in errant} == {rep.query_value("SELECT @@GLOBAL.server_uuid")}

        # the remediation, run as written on 9.7 (SET PERSIST): the write is refused again, even to SUPER
        rep.execute(finding.remediation.split(" (", 1)[0])
        assert rep.query_value("SELECT @@GLOBAL.read_only") == 1
        with pytest.raises(mysql.connector.Error) as again:
            app_insert(3)
        assert again.value.errno == ER_OPTION_PREVENTS_STATEMENT
        with pytest.raises(Exception) as root:
            rep.execute("INSERT INTO app.t VALUES (4)")
        assert "super-read-only" in str(root.value)
        assert _findings(fleet, "r1") == []
    finally:
        fleet.down(graceful=False)
