"""gtid-audit collect against real MySQL 9.7 servers: the tables hold what the servers report.

Uses the session-wide standard ``fleet`` (read only) plus a small private fleet of this module
(a source, a replica whose applier is stopped with transactions waiting in its relay log, and a
gtid_mode=OFF server), an address nobody listens on, and a wrong password.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from gtid_core import GtidSet
from jobs import read_staging
from jobs.cli import main as collect_main
from jobs.collect import run_collect
from jobs.config import load_config
from jobs.delta_io import read_arrow, read_frame

pytestmark = [pytest.mark.mysql, pytest.mark.spark]

RUN_ID = "it-run-1"
WRONG_PASSWORD = "not-the-audit-password-4711"
UNSET_ENV = "GTA_TEST_SECRET_NOBODY_SETS"   # a password_env that resolves nowhere: config_error
SIDE_TRANSACTIONS = [
    "CREATE DATABASE side",
    "CREATE TABLE side.t (id INT PRIMARY KEY, v VARCHAR(20))",
    "INSERT INTO side.t VALUES (1, 'one')",
    "INSERT INTO side.t VALUES (2, 'two')",
]
# The standard topology (jobs/sandbox/topologies/standard.yaml), written out independently of the code.
EXPECTED_CHANNELS = {
    ("orders-r1", ""): "orders-src",
    ("orders-r2", ""): "orders-src",
    ("orders-r3", ""): "orders-r1",
    ("billing-r1", "orders"): "orders-src",
    ("billing-r1", "billing"): "billing-src",
    ("side-rep", ""): "side-src",
}
FLEET_NAMES = ["orders-src", "orders-r1", "orders-r2", "orders-r3", "billing-src", "billing-r1"]


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


@pytest.fixture(scope="module")
def side_fleet(mysql_dist, tmp_path_factory):
    """A source, a replica with a stopped applier and 4 transactions pending, and a gtid_mode=OFF server."""
    from jobs.sandbox.fleet import Fleet, Topology

    topology = {"name": "side",
                "servers": [{"name": "src"}, {"name": "rep"}, {"name": "off", "gtid_mode": "OFF"}],
                "channels": [{"replica": "rep", "source": "src"}]}
    fleet = Fleet.up(Topology.load(topology), tmp_path_factory.mktemp("side"), dist=mysql_dist)
    try:
        rep, src = fleet.server("rep"), fleet.server("src")
        for name in ("src", "rep", "off"):   # a closed binary log on each: a header a second night may skip
            fleet.server(name).execute("FLUSH BINARY LOGS")
        rep.execute("STOP REPLICA SQL_THREAD")
        src.execute(*SIDE_TRANSACTIONS)
        wanted = src.gtid_executed()
        for _ in range(300):  # wait for the receiver, not a timed assertion
            got = rep.query_value("SELECT RECEIVED_TRANSACTION_SET FROM "
                                  "performance_schema.replication_connection_status")
            if rep.query_value("SELECT GTID_SUBSET(%s, %s)", (wanted, got or "")) == 1:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the side replica never received the source's transactions")
        yield fleet
    finally:
        fleet.down(graceful=False)


def _config(fleet, side_fleet, tmp: Path, **collection) -> Path:
    path = fleet.write_audit_config(tmp / "gtid-audit.yaml", warehouse=str(tmp / "warehouse"))
    data = yaml.safe_load(path.read_text())
    side_pw = str(side_fleet.audit_password_file)
    wrong_pw = tmp / "wrong-password"
    wrong_pw.write_text(WRONG_PASSWORD + "\n")
    data["servers"] += [
        {"name": "unreachable", "host": "127.0.0.1", "port": _closed_port(), "cluster": "ghost"},
        {"name": "wrong-password", "host": "localhost", "port": fleet.server("orders-src").port,
         "cluster": "orders", "password_file": str(wrong_pw)},
        {"name": "unresolved-secret", "host": "127.0.0.2", "port": fleet.server("orders-src").port,
         "cluster": "orders", "password_env": UNSET_ENV},
    ] + [{"name": f"side-{n}", "host": side_fleet.server(n).host, "port": side_fleet.server(n).port,
          "cluster": "side", "password_file": side_pw} for n in ("src", "rep", "off")]
    data["collection"] = {"concurrency": 4, "per_task_concurrency": 2, "server_deadline_s": 60,
                          "retries": {"attempts": 2, "wait_initial_s": 0.1, "wait_max_s": 0.2},
                          **collection}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def collected(fleet, side_fleet, spark, tmp_path_factory):
    """One collection run over the fleet, the side fleet and the broken entries."""
    assert UNSET_ENV not in os.environ
    tmp = tmp_path_factory.mktemp("collect")
    path = _config(fleet, side_fleet, tmp)
    config = load_config(path)
    summary = run_collect(spark, config, run_id=RUN_ID)
    wh = config.resolved_warehouse()
    tables = {name: read_arrow(wh, name, RUN_ID).to_pylist()
              for name in ("runs", "servers", "channels", "binary_logs", "relay_log_tail", "collection_errors")}
    yield {"config": config, "path": path, "summary": summary, "warehouse": wh, "tables": tables}


def _by(rows, *keys):
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in rows}


def test_gtid_sets_and_identity_match_the_servers(collected, fleet):
    """servers holds each server's uuid, version, gtid_executed and gtid_purged exactly (sets compared as sets)."""
    servers = _by(collected["tables"]["servers"], "server")
    for name in FLEET_NAMES:
        live = fleet.server(name).query(
            "SELECT @@GLOBAL.server_uuid AS u, @@GLOBAL.version AS v, @@GLOBAL.gtid_executed AS e, "
            "@@GLOBAL.gtid_purged AS p, @@GLOBAL.server_id AS i")[0]
        row = servers[name]
        assert row["status"] == "ok", (name, row["status"])
        assert (row["server_uuid"], row["version"], row["server_id"]) == (live["u"], live["v"], live["i"])
        assert GtidSet.parse(row["gtid_executed"]) == GtidSet.parse(live["e"])
        assert GtidSet.parse(row["gtid_purged"]) == GtidSet.parse(live["p"])
        assert row["gtid_mode"] == "ON" and row["enforce_gtid_consistency"] == "ON"
        assert row["log_bin"] is True and row["read_at"] is not None
        assert row["cluster"] == fleet.cluster_of(name)


def test_channels_match_show_replica_status(collected, fleet, side_fleet):
    """Every channel is collected with its source resolved and the server's Retrieved/received sets."""
    channels = _by(collected["tables"]["channels"], "server", "channel_name")
    assert {k: r["source_server"] for k, r in channels.items()} == EXPECTED_CHANNELS
    for (server, channel), row in channels.items():
        live_server = (side_fleet.server(server[5:]) if server.startswith("side-") else fleet.server(server))
        live = {r["Channel_Name"]: r for r in live_server.query("SHOW REPLICA STATUS")}[channel]
        assert GtidSet.parse(row["retrieved_gtid_set"]) == GtidSet.parse(live["Retrieved_Gtid_Set"])
        assert row["source_uuid"] == live["Source_UUID"]
        assert row["auto_position"] is True
        assert row["io_running"] == "Yes"
        assert row["sql_running"] == ("No" if server == "side-rep" else "Yes")
        assert row["service_state"] == "ON"
        assert GtidSet.parse(row["received_transaction_set"]) == GtidSet.parse(row["retrieved_gtid_set"])
        assert row["assign_gtids_to_anonymous_transactions_type"] == "OFF"


def test_binary_logs_and_previous_gtids(collected, fleet):
    """Every binary log is listed; each header was read and its Previous_gtids is a subset of gtid_executed."""
    servers = _by(collected["tables"]["servers"], "server")
    logs = collected["tables"]["binary_logs"]
    for name in FLEET_NAMES:
        live = [r["Log_name"] for r in fleet.server(name).query("SHOW BINARY LOGS")]
        mine = sorted((r for r in logs if r["server"] == name), key=lambda r: r["seq"])
        assert [r["log_name"] for r in mine] == live
        executed = GtidSet.parse(servers[name]["gtid_executed"])
        assert all(r["previous_gtids_read"] for r in mine)
        assert GtidSet.parse(mine[0]["previous_gtids"]) == GtidSet.EMPTY  # a fresh server's first log
        for r in mine:
            assert GtidSet.parse(r["previous_gtids"]) <= executed


def test_relay_tail_holds_the_pending_transactions(collected, side_fleet):
    """The stopped applier's relay log tail holds exactly the 4 pending transactions, ending in a commit."""
    channel = _by(collected["tables"]["channels"], "server", "channel_name")[("side-rep", "")]
    tail = sorted((r for r in collected["tables"]["relay_log_tail"] if r["server"] == "side-rep"),
                  key=lambda r: r["seq"])
    assert channel["relay_tail_truncated"] is False
    assert channel["relay_tail_events"] == len(tail) > 0
    assert [r["event_type"] for r in tail].count("Gtid") == len(SIDE_TRANSACTIONS)
    assert tail[-1]["event_type"] == "Xid"
    assert tail[0]["pos"] == channel["relay_tail_start_pos"] == channel["relay_log_pos"]
    # replicas whose applier caught up have nothing after their applier position
    others = {r["server"] for r in collected["tables"]["relay_log_tail"]}
    assert others == {"side-rep"}


def test_failures_are_rows_and_the_rest_is_collected(collected):
    """Unreachable, wrong password, a password reference the executor cannot resolve and gtid_mode=OFF
    produce error rows; no other error is recorded."""
    errors = collected["tables"]["collection_errors"]
    assert sorted((e["server"], e["error_class"]) for e in errors) == [
        ("side-off", "gtid_mode_off"), ("unreachable", "unreachable"), ("unresolved-secret", "config_error"),
        ("wrong-password", "auth_failed")]
    servers = _by(collected["tables"]["servers"], "server")
    assert {servers[n]["status"] for n in ("unreachable", "wrong-password", "unresolved-secret")} == {"failed"}
    unresolved = next(e for e in errors if e["error_class"] == "config_error")
    assert UNSET_ENV in unresolved["message"], unresolved
    assert servers["unreachable"]["gtid_executed"] is None
    off = servers["side-off"]
    assert (off["status"], off["gtid_mode"], off["gtid_executed"]) == ("ok", "OFF", "")
    auth = next(e for e in errors if e["error_class"] == "auth_failed")
    assert auth["errno"] == 1045 and auth["cluster"] == "orders"
    summary = collected["summary"]
    assert (summary.servers_ok, summary.servers_failed, summary.errors) == (9, 3, 4)


def test_audit_account_hits_no_privilege_error(collected):
    """The least-privilege audit account runs every statement (binlog and relay-log events included)."""
    errors = collected["tables"]["collection_errors"]
    assert not [e for e in errors if e["error_class"] in ("privilege_missing", "unexpected")]
    assert collected["tables"]["relay_log_tail"] and collected["tables"]["binary_logs"]


def test_no_secret_reaches_any_table(collected, fleet, side_fleet):
    """Neither the audit password nor the wrong password appears in any stored value."""
    secrets = {WRONG_PASSWORD, fleet.audit_password_file.read_text().strip(),
               side_fleet.audit_password_file.read_text().strip()}
    for name, rows in collected["tables"].items():
        for row in rows:
            for value in row.values():
                if isinstance(value, str):
                    assert not any(s in value for s in secrets), (name, row)


def test_replicas_are_read_before_their_sources(collected):
    """Each replica's variables were read before its source's (deepest first), so the source's set is the later one."""
    servers = _by(collected["tables"]["servers"], "server")
    for (replica, _channel), source in EXPECTED_CHANNELS.items():
        assert servers[replica]["gtid_read_at"] <= servers[source]["gtid_read_at"]
        assert servers[replica]["read_order"] < servers[source]["read_order"]
    assert servers["orders-r3"]["topology_depth"] == 2


def test_rerun_of_the_same_run_id_keeps_the_row_counts(collected, spark):
    """Collecting again under the same run_id replaces the run's rows: every count stays the same;
    the staged reads are gone afterwards, an interrupted attempt's leftovers with them."""
    before = {name: len(rows) for name, rows in collected["tables"].items()}
    staging = Path(read_staging.run_staging_uri(collected["warehouse"], RUN_ID))
    assert staging.parent.is_dir() and not staging.exists()   # the first collection staged, then removed
    left = staging / "attempt-interrupted" / "read"
    left.mkdir(parents=True)
    (left / "part-0.parquet").write_bytes(b"left by a driver that died")
    run_collect(spark, collected["config"], run_id=RUN_ID)
    after = {name: read_arrow(collected["warehouse"], name, RUN_ID).num_rows for name in before}
    assert after == before
    assert before["runs"] == 1
    assert list(staging.parent.iterdir()) == []


def test_tables_read_back_in_spark_sql(collected, spark):
    """read_frame serves the run to Spark SQL (the audit job's way in)."""
    read_frame(spark, collected["warehouse"], "channels", RUN_ID).createOrReplaceTempView("c")
    rows = spark.sql("SELECT server, count(*) AS n FROM c GROUP BY server ORDER BY server").collect()
    assert [(r.server, r.n) for r in rows] == [
        ("billing-r1", 2), ("orders-r1", 1), ("orders-r2", 1), ("orders-r3", 1), ("side-rep", 1)]


def test_relay_tail_keeps_the_end_of_the_relay_log_whatever_the_cap(collected, side_fleet, spark, tmp_path):
    """A cap below the backlog keeps the *last* events (the end is found, the tail is complete)
    and says how many it dropped; a scan bound below the backlog records truncation and keeps
    nothing (the end is unknown); paging two events at a time reads the same events."""
    from jobs.config import parse_config

    data = yaml.safe_load(Path(collected["path"]).read_text())
    data["servers"] = [s for s in data["servers"] if s["name"] in ("side-src", "side-rep")]
    data["warehouse"] = str(tmp_path / "wh")
    full = sorted((r["seq"], r["pos"], r["event_type"]) for r in collected["tables"]["relay_log_tail"])
    for run_id, cap, page, scan in (("cap-3", 3, 500, 1_000_000), ("scan-4", 3, 500, 4), ("page-2", 1000, 2, 1_000_000)):
        data["collection"].update(relay_tail_max_events=cap, relay_tail_page_events=page,
                                  relay_tail_max_scan_events=scan)
        run_collect(spark, parse_config(data, str(collected["path"])), run_id=run_id)
        chan = read_arrow(str(tmp_path / "wh"), "channels", run_id).to_pylist()[0]
        tail = read_arrow(str(tmp_path / "wh"), "relay_log_tail", run_id).to_pylist()
        got = sorted((r["seq"], r["pos"], r["event_type"]) for r in tail)
        if run_id == "cap-3":
            assert (chan["relay_tail_events"], chan["relay_tail_truncated"], len(tail)) == (3, False, 3)
            assert got == full[-3:] and got[-1][2] == "Xid"
            assert chan["relay_tail_first_event"] == len(full) - 3
        elif run_id == "scan-4":
            assert (chan["relay_tail_events"], chan["relay_tail_truncated"], chan["relay_tail_first_event"]) == (
                0, True, None)
            assert got == [] and chan["relay_tail_scanned_events"] <= 4
        else:
            assert chan["relay_tail_truncated"] is False and got == full


def test_cli_config_check_and_collect(collected, capsys):
    """`config check` lists the inventory without secrets; `collect` prints one summary line and exits 0."""
    assert collect_main(["config", "check", str(collected["path"])]) == 0
    out = capsys.readouterr().out
    assert "orders-src" in out and "side-off" in out and WRONG_PASSWORD not in out
    assert "password_file=" in out
    assert collect_main(["collect", "--config", str(collected["path"]), "--run-id", "cli-1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("collect run_id=cli-1 servers=12 ok=9 ")
    assert collect_main(["collect", "--config", str(collected["path"]), "--run-id", "bad id"]) == 1


def test_discovery_walks_the_topology_from_one_seed(fleet, spark, tmp_path):
    """From orders-r3 alone, discovery follows Source_Host upwards and SHOW REPLICAS downwards to the
    whole standard fleet; max_servers caps it."""
    from jobs.config import parse_config

    data = yaml.safe_load(fleet.write_audit_config(tmp_path / "c.yaml", warehouse=str(tmp_path / "wh")).read_text())
    data["servers"] = [s for s in data["servers"] if s["name"] == "orders-r3"]
    expected = {f"127.0.0.1:{fleet.server(n).port}" for n in FLEET_NAMES if n != "orders-r3"} | {"orders-r3"}
    for run_id, cap, want in (("disc-all", 200, expected), ("disc-cap", 3, None)):
        data["discovery"] = {"enabled": True, "max_depth": 4, "max_servers": cap}
        summary = run_collect(spark, parse_config(data, str(tmp_path / "c.yaml")), run_id=run_id)
        servers = read_arrow(str(tmp_path / "wh"), "servers", run_id).to_pylist()
        names = {s["server"] for s in servers}
        if want is not None:
            assert names == want
            assert all(s["status"] == "ok" for s in servers) and summary.servers_ok == 6
            assert sum(s["discovered"] for s in servers) == 5
        else:
            assert len(names) == 3 and "orders-r3" in names


def _side_spec(side_fleet, name: str, **kw):
    from jobs.config import ServerSpec

    server = side_fleet.server(name)
    return ServerSpec(name=f"side-{name}", host=server.host, port=server.port, user="audit",
                      password_file=str(side_fleet.audit_password_file), connect_timeout_s=kw.pop("ct", 2),
                      read_timeout_s=kw.pop("rt", 5), **kw)


def _ctx(**settings):
    import datetime as dt

    from jobs.collector import RunContext
    from jobs.config import CollectionSettings

    return RunContext(run_id="direct", run_date=dt.date(2024, 1, 1),
                      settings=CollectionSettings(**settings).read_settings())


def test_a_variable_the_build_lacks_is_dropped_not_fatal(side_fleet, monkeypatch):
    """When the server rejects one @@GLOBAL name (error 1193), the SELECT is repeated without it."""
    import jobs.collector as collector

    real = collector.dialect_for

    def with_bogus(version):
        d = real(version)
        return collector.Dialect(**{**d.__dict__, "variables": d.variables + (("relay_log_info_repository", "no_such_variable_gta"),)})

    monkeypatch.setattr(collector, "dialect_for", with_bogus)
    spec = _side_spec(side_fleet, "src")
    result = collector.read_server(spec, _ctx())
    assert result.errors == []
    assert result.server["status"] == "ok" and result.server.get("relay_log_info_repository") is None
    assert result.server["binlog_format"] == "ROW"  # the other variables were read
    assert result.server["gtid_executed"] == side_fleet.server("src").gtid_executed()


def test_a_silent_listener_times_out_within_the_deadline(side_fleet):
    """A port that accepts TCP but never speaks MySQL becomes a `timeout` row, not a hang."""
    import socket

    from jobs.collector import read_server
    from jobs.config import ServerSpec

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        spec = ServerSpec(name="mute", host="127.0.0.1", port=port, user="audit",
                          connect_timeout_s=1, read_timeout_s=1)
        result = read_server(spec, _ctx(server_deadline_s=5, retries={"attempts": 1}))
    assert [e["error_class"] for e in result.errors] == ["timeout"]
    assert result.server["status"] == "failed"


def test_a_second_night_plans_from_the_first_and_skips_unchanged_headers(collected, fleet, side_fleet, spark, caplog):
    """Night 2 in the same warehouse: only the servers night 1 could not read are probed; the
    headers of closed binary logs read unchanged on night 1 are not read again, and the table
    still holds every file with the Previous_gtids the server has (checked against SHOW BINLOG
    EVENTS now); the active file's header is read again. The order stays sound."""
    import logging

    src = side_fleet.server("src")
    src.execute("FLUSH BINARY LOGS")   # night 1's active file is closed, a new one is active
    caplog.set_level(logging.INFO, logger="gtid_audit.collect")
    summary = run_collect(spark, collected["config"], run_id="it-night-2")
    phases = [r.getMessage() for r in caplog.records if r.getMessage().startswith("collect phase=")]
    # nothing probed (the three servers night 1 could not read are planned alone, and fail alone
    # again), and nothing changed topology: one read per server
    assert [p.split()[1] for p in phases] == ["phase=read"]
    assert summary.servers_ok == collected["summary"].servers_ok
    from jobs.previous_run import previous_run

    wh = collected["warehouse"]
    prev = previous_run(spark, wh, "it-night-2")   # the newest run before it (earlier tests collect too)
    night1 = _by(read_arrow(wh, "binary_logs", prev.run_id).to_pylist(), "server", "log_name")
    night2 = read_arrow(wh, "binary_logs", "it-night-2").to_pylist()
    servers = _by(read_arrow(wh, "servers", "it-night-2").to_pylist(), "server")
    reused = 0
    side = [(f"side-{n}", side_fleet.server(n)) for n in ("src", "rep", "off")]
    for name, live_server in [(n, fleet.server(n)) for n in FLEET_NAMES] + side:
        live = live_server.query("SHOW BINARY LOGS")
        mine = sorted((r for r in night2 if r["server"] == name), key=lambda r: r["seq"])
        assert [r["log_name"] for r in mine] == [r["Log_name"] for r in live]
        for r in mine:
            header = live_server.query(f"SHOW BINLOG EVENTS IN '{r['log_name']}' LIMIT 3")
            truth = next(e["Info"] for e in header if e["Event_type"] == "Previous_gtids")
            assert r["previous_gtids_read"] and GtidSet.parse(r["previous_gtids"]) == GtidSet.parse(truth)
            before = night1.get((name, r["log_name"]))
            if r["seq"] == len(mine) - 1 or before is None or before["file_size"] != r["file_size"]:
                assert before is None or r["read_at"] > before["read_at"]   # read tonight
            else:
                assert r["read_at"] == before["read_at"]   # last night's read of the same header
                reused += 1
    assert reused >= 3 and summary.headers_reused == reused   # side-src, side-rep, side-off's first file
    grown = [r for r in night2 if r["server"] == "side-src"]
    assert len(grown) == len([k for k in night1 if k[0] == "side-src"]) + 1
    for (replica, _channel), source in EXPECTED_CHANNELS.items():
        assert servers[replica]["gtid_read_at"] <= servers[source]["gtid_read_at"]
