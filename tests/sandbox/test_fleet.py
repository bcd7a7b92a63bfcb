"""The standard fleet replicates for real; its state, config and accounts are what the auditor needs."""
from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import mysql.connector
import pytest
import yaml

from jobs.sandbox.accounts import audit_grant_statements
from jobs.sandbox.errors import FleetError
from jobs.sandbox.fleet import STATE_FILE, Fleet

pytestmark = pytest.mark.mysql
REPO = Path(__file__).resolve().parents[2]


def our_processes(workdir: Path) -> list[int]:
    """Pids of live processes whose command line mentions ``workdir`` (found via /proc)."""
    needle = str(Path(workdir).resolve()).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_every_channel_runs_with_auto_position(fleet):
    """Each configured channel reports both threads running, Auto_Position=1 and the right source port."""
    for ch in fleet.topology.channels:
        rows = fleet.server(ch.replica).query("SHOW REPLICA STATUS FOR CHANNEL %s", (ch.channel,))
        assert len(rows) == 1, (ch.replica, ch.channel)
        row = rows[0]
        assert (row["Replica_IO_Running"], row["Replica_SQL_Running"], row["Auto_Position"]) == ("Yes", "Yes", 1)
        assert row["Source_Port"] == fleet.server(ch.source).port


def test_initial_rows_reach_the_end_of_the_chain(fleet):
    """orders-r3 (replica of a replica) holds the rows written on orders-src, after the UPDATE and DELETE."""
    rows = fleet.server("orders-r3").query("SELECT customer, amount FROM orders.orders ORDER BY id")
    assert [(r["customer"], str(r["amount"])) for r in rows] == [("ada", "11.00"), ("grace", "25.50"), ("barbara", "99.99")]


def test_multi_source_replica_has_both_sources(fleet):
    """billing-r1 applied both sources' transactions: its gtid_executed is their union, per the server."""
    src_o, src_b = fleet.server("orders-src"), fleet.server("billing-src")
    union = src_o.gtid_executed() + "," + src_b.gtid_executed()
    replica = fleet.server("billing-r1")
    assert replica.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s) = ''", (union,)) == 1
    assert replica.query_value("SELECT GTID_SUBSET(%s, @@GLOBAL.gtid_executed)", (union,)) == 1
    assert replica.query_value("SELECT COUNT(*) FROM billing.invoices") == 3


def test_accounts_do_not_create_gtids(fleet_factory):
    """A fresh server with the repl and audit accounts has an empty gtid_executed (sql_log_bin=0)."""
    own = fleet_factory({"servers": [{"name": "lone"}]})
    server = own.server("lone")
    users = {r["user"] for r in server.query("SELECT user FROM mysql.user")}
    assert {"audit", "repl"} <= users
    assert server.gtid_executed() == ""


def test_state_and_password_files_are_private(fleet):
    """The state JSON and the audit password file are mode 0600; the password logs the audit user in."""
    for path in (fleet.workdir / STATE_FILE, fleet.audit_password_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    password = fleet.audit_password_file.read_text().strip()
    conn = fleet.server("orders-r1").connect(user="audit", password=password)
    conn.close()


def test_audit_config_has_the_auditor_shape(fleet, tmp_path):
    """write_audit_config lists every server with host/port/cluster, user audit and a password file."""
    path = fleet.write_audit_config(tmp_path / "sandbox.yaml", warehouse="./wh",
                                    extra_servers=[{"name": "ghost", "host": "127.0.0.1", "port": 9, "cluster": "orders"}])
    config = yaml.safe_load(path.read_text())
    assert config["warehouse"] == "./wh"
    assert config["defaults"] == {"user": "audit", "password_file": str(fleet.audit_password_file),
                                  "connect_timeout_s": 5}
    by_name = {s["name"]: s for s in config["servers"]}
    assert set(by_name) == {"orders-src", "orders-r1", "orders-r2", "orders-r3", "billing-src", "billing-r1", "ghost"}
    assert by_name["billing-r1"] == {"name": "billing-r1", "host": "127.0.0.1",
                                     "port": fleet.server("billing-r1").port, "cluster": "billing"}
    assert Path(config["defaults"]["password_file"]).is_absolute()


def test_status_from_another_process(fleet):
    """`sandbox status` in a fresh process finds the fleet through the saved state: all six running."""
    proc = subprocess.run([sys.executable, "-m", "jobs.sandbox.cli", "sandbox", "status", "--workdir", str(fleet.workdir)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("running") == 6
    assert f"127.0.0.1:{fleet.server('orders-r3').port}" in proc.stdout


def test_deploy_grants_sql_matches_the_sandbox_account():
    """deploy/grants.sql carries exactly the statements the sandbox uses for its audit account."""
    text = (REPO / "deploy" / "grants.sql").read_text()
    statements = [s.strip() for s in text.split(";")]
    statements = [" ".join(l for l in s.splitlines() if not l.startswith("--")).strip() for s in statements]
    shipped = [s for s in statements if s.startswith(("CREATE USER", "GRANT"))]
    assert shipped == audit_grant_statements("CHANGE_ME")


AUDIT_READS = [
    "SELECT @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged, @@GLOBAL.server_uuid",
    "SHOW REPLICA STATUS",
    "SHOW BINARY LOGS",
    "SHOW BINARY LOG STATUS",
    "SHOW BINLOG EVENTS LIMIT 5",
    "SHOW RELAYLOG EVENTS LIMIT 5 FOR CHANNEL 'orders'",
    "SELECT * FROM performance_schema.replication_connection_status",
    "SELECT * FROM performance_schema.replication_connection_configuration",
    "SELECT * FROM performance_schema.replication_applier_status_by_worker",
    "SELECT * FROM performance_schema.replication_applier_configuration",
]


@pytest.fixture
def audit_conn(fleet):
    conn = fleet.server("billing-r1").connect(user="audit", password=fleet.audit_password_file.read_text().strip())
    yield conn
    conn.close()


@pytest.mark.parametrize("sql", AUDIT_READS)
def test_audit_account_can_read_what_the_auditor_needs(audit_conn, sql):
    """The least-privilege audit account runs each read statement of the collector."""
    cur = audit_conn.cursor()
    cur.execute(sql)
    rows = cur.fetchall()
    if sql.startswith("SHOW RELAYLOG") or sql.startswith("SHOW REPLICA"):
        assert rows


@pytest.mark.parametrize("sql, errno", [
    ("SELECT * FROM orders.orders", 1142),
    ("INSERT INTO orders.orders (customer, amount) VALUES ('x', 1)", 1142),
    ("CREATE DATABASE audit_should_not", 1044),
    ("SELECT * FROM mysql.user", 1142),
    ("SELECT * FROM performance_schema.events_statements_history", 1142),
    ("STOP REPLICA", 1227),
])
def test_audit_account_cannot_write_or_read_application_data(fleet, sql, errno):
    """The audit account is refused application tables, writes, admin commands and statement history,
    for want of privileges: on a writable source (a replica's read_only would refuse the writes first)."""
    conn = fleet.server("orders-src").connect(user="audit", password=fleet.audit_password_file.read_text().strip())
    request = conn.cursor()
    try:
        with pytest.raises(mysql.connector.Error) as info:
            request.execute(sql)
            request.fetchall()
        assert info.value.errno == errno
    finally:
        conn.close()


def test_a_failed_up_stops_what_it_started(mysql_dist, tmp_path):
    """When one server cannot start, up raises and no process of the fleet is left running."""
    topology = {"servers": [{"name": "ok1"}, {"name": "ok2"}, {"name": "bad", "options": ["--no-such-option=1"]}]}
    with pytest.raises(FleetError, match="bad"):
        Fleet.up(topology, tmp_path / "w", dist=mysql_dist)
    assert our_processes(tmp_path / "w") == []


def test_down_from_another_process_leaves_nothing_running(fleet_factory, tmp_path):
    """`sandbox down` in a fresh process stops exactly the fleet's pids: none of ours survive."""
    small = fleet_factory({"servers": [{"name": "s"}, {"name": "r"}], "channels": [{"replica": "r", "source": "s"}]})
    pids = [s.pid for s in small.servers.values()]
    assert sorted(our_processes(small.workdir)) == sorted(pids)
    proc = subprocess.run([sys.executable, "-m", "jobs.sandbox.cli", "sandbox", "down", "--workdir", str(small.workdir)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert our_processes(small.workdir) == []
    assert all(not Path(f"/proc/{pid}").exists() or b"mysqld" not in Path(f"/proc/{pid}/cmdline").read_bytes()
               for pid in pids)


def test_down_without_grace_kills_every_server_at_once(fleet_factory):
    """``down(graceful=False)`` (the tests' teardown) kills each pid of the fleet, even a source
    whose binlog dump thread still serves a connected replica, and names those it stopped."""
    small = fleet_factory({"servers": [{"name": "s"}, {"name": "r"}], "channels": [{"replica": "r", "source": "s"}]})
    pids = [s.pid for s in small.servers.values()]
    assert sorted(small.down(graceful=False)) == ["r", "s"]
    assert our_processes(small.workdir) == []
    # killed, not shut down: the server writes "Shutdown complete" only at the end of a clean one
    assert all("Shutdown complete" not in s.log_error.read_text(errors="replace") for s in small.servers.values())
    # and what a clean shutdown removes is gone too: socket, its lock file, pid file
    for server in small.servers.values():
        assert not any(Path(p).exists() for p in (server.socket, f"{server.socket}.lock", server.pid_file))
    assert all(s.pid is None for s in small.servers.values())
    assert all(not Path(f"/proc/{pid}").exists() or b"mysqld" not in Path(f"/proc/{pid}/cmdline").read_bytes()
               for pid in pids)
