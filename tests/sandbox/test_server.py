"""One sandbox mysqld: GTID options, own process group, stopped by its pid."""
from __future__ import annotations

import os

import pytest

from jobs.sandbox.server import SandboxServer, _pid_alive

pytestmark = pytest.mark.mysql


def test_standalone_server_runs_with_gtids(mysql_server):
    """The session server is a 9.7 with gtid_mode=ON, enforce_gtid_consistency=ON and a binary log."""
    row = mysql_server.query("SELECT @@version AS v, @@GLOBAL.gtid_mode AS g, "
                             "@@GLOBAL.enforce_gtid_consistency AS e, @@log_bin AS b, "
                             "@@GLOBAL.server_uuid AS u, @@bind_address AS a")[0]
    assert row["v"].startswith("9.7")
    assert (row["g"], row["e"], row["b"], row["a"]) == ("ON", "ON", 1, "127.0.0.1")
    assert row["u"] == mysql_server.server_uuid


def test_a_write_gets_a_gtid_of_the_servers_uuid(mysql_server):
    """A committed transaction lands in gtid_executed under the server's own UUID."""
    before = mysql_server.gtid_executed()
    mysql_server.execute("CREATE DATABASE IF NOT EXISTS t_server_probe")
    after = mysql_server.gtid_executed()
    assert after != before
    diff = mysql_server.query_value("SELECT GTID_SUBTRACT(%s, %s)", (after, before))
    assert diff.startswith(mysql_server.server_uuid + ":")


def test_server_runs_in_its_own_session_and_stop_ends_exactly_its_pid(mysql_dist, tmp_path):
    """mysqld leads its own session (setsid); stop() ends that pid and leaves our process alone."""
    server = SandboxServer(mysql_dist, "probe", tmp_path / "probe", server_id=7, gtid_mode="OFF").start()
    try:
        assert os.getsid(server.pid) == server.pid != os.getsid(0)
        assert server.query_value("SELECT @@GLOBAL.gtid_mode") == "OFF"
        pid = server.pid
    finally:
        server.stop()
    assert not _pid_alive(pid)
    assert server.pid is None


def test_two_servers_from_the_template_get_distinct_uuids(mysql_dist, mysql_server, tmp_path):
    """Each copy of the template data directory generates its own server_uuid (auto.cnf deleted)."""
    other = SandboxServer(mysql_dist, "other", tmp_path / "other", server_id=8).start()
    try:
        assert other.server_uuid != mysql_server.server_uuid
    finally:
        other.stop()


def test_a_long_directory_gets_a_socket_within_the_unix_limit(mysql_dist, tmp_path):
    """A server directory too deep for sun_path (107 bytes) still starts, with a short socket path."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    server = SandboxServer(mysql_dist, "deep", deep, server_id=9).start()
    try:
        assert len(server.socket) <= 107
        assert server.query_value("SELECT @@socket") == server.socket
    finally:
        server.stop()


def test_tagged_empty_transactions_need_the_privilege_the_remediation_names(mysql_server):
    """empty_transaction_sql says a tagged GTID needs TRANSACTION_GTID_TAG besides a variables privilege: an
    account with SESSION_VARIABLES_ADMIN alone commits the untagged empty transaction and is refused the tagged
    one with error 6038; granted TRANSACTION_GTID_TAG, it commits both (the script it was given, run as is)."""
    import uuid

    import mysql.connector

    from gtid_core import GtidSet, empty_transaction_sql

    user, password = "gta_tag_probe", "probe-" + uuid.uuid4().hex[:8]
    mysql_server.execute(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}'",
                         f"GRANT SESSION_VARIABLES_ADMIN ON *.* TO '{user}'@'127.0.0.1'")

    def run(script: str) -> None:
        conn = mysql.connector.connect(host="127.0.0.1", port=mysql_server.port, user=user, password=password,
                                       use_pure=True)
        try:
            cursor = conn.cursor()
            sql = "\n".join(line for line in script.splitlines() if not line.startswith("--"))
            for statement in (s.strip() for s in sql.split(";")):
                if statement:
                    cursor.execute(statement)
        finally:
            conn.close()

    try:
        untagged, tagged = GtidSet.parse(f"{uuid.uuid4()}:1"), GtidSet.parse(f"{uuid.uuid4()}:fix:1")
        run(empty_transaction_sql(untagged))
        with pytest.raises(mysql.connector.Error) as refused:
            run(empty_transaction_sql(tagged))
        assert refused.value.errno == 6038 and "TRANSACTION_GTID_TAG" in refused.value.msg
        mysql_server.execute(f"GRANT TRANSACTION_GTID_TAG ON *.* TO '{user}'@'127.0.0.1'")
        run(empty_transaction_sql(tagged))
        executed = GtidSet.parse(mysql_server.gtid_executed())
        assert untagged <= executed and tagged <= executed
    finally:
        mysql_server.execute(f"DROP USER '{user}'@'127.0.0.1'")
