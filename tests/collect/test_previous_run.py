"""jobs.previous_run: which run a later night plans from, which servers it plans from that run's
tables, and the probe each gets (Delta tables written by delta-spark, read back with delta-rs on
the driver); a warehouse delta-rs cannot read plans a first night."""
from __future__ import annotations

import datetime as dt

import pytest

from jobs.delta_io import write_run_rows
from jobs.previous_run import PreviousRun, PreviousRunUnreadable, planning_probes, previous_run
from jobs.read_plan import Probe
from jobs.server_spec import ServerSpec
from schemas import get_table

pytestmark = pytest.mark.spark

DAY = dt.date(2024, 5, 1)
UUID_A = "3E11FA47-71CA-11E1-9E33-C80AA9429562"
UUID_SRC = "4D22EB58-82DB-22F2-AF44-D91BB0530673"


def _rows(table: str, run_id: str, rows: list[dict]) -> list[dict]:
    """Full rows of ``table``: every column NULL unless given, the run's id and date set."""
    columns = get_table(table).column_names
    return [{**dict.fromkeys(columns), "run_id": run_id, "run_date": DAY, **r} for r in rows]


def _server(name: str, status: str = "ok", uuid: str | None = UUID_A, channels: int | None = 0, **more) -> dict:
    return {"server": name, "host": f"{name}.db", "port": 3306, "discovered": False, "status": status,
            "server_uuid": uuid, "channel_count": channels, "hostname": f"{name}-host", "reported_port": 3306,
            **more}


def _channel(server: str, name: str, host: str, port: int, uuid: str | None) -> dict:
    return {"server": server, "channel_name": name, "status_statement": "SHOW REPLICA STATUS",
            "source_host": host, "source_port": port, "source_uuid": uuid}


def _spec(name: str, port: int = 3306) -> ServerSpec:
    return ServerSpec(name=name, host=f"{name}.db", port=port, user="audit", connect_timeout_s=1, read_timeout_s=1)


def test_planning_probes_are_what_the_previous_run_read_whole(spark, tmp_path):
    """A server read whole at tonight's address gets its row's identity and its channels' sources
    (uuids lowercased, channels sorted); a failed, moved, uuid-less or half-read server, one with
    an unknown channel count and one not in tonight's inventory get none; another run's rows do
    not leak in."""
    wh = str(tmp_path)
    run = "night-1"
    write_run_rows(spark, "servers", _rows("servers", run, [
        _server("a", channels=1),
        _server("b", status="partial", channels=2),
        _server("c", status="failed"),
        _server("d"),                               # tonight on another port
        _server("e", channels=2),                   # one of its two channels was read
        _server("f", uuid=None),
        _server("g", hostname="", reported_port=None),
        _server("h", channels=None),
        _server("gone"),                            # no longer in the inventory
    ]), warehouse=wh, run_id=run, run_date=DAY)
    write_run_rows(spark, "channels", _rows("channels", run, [
        _channel("a", "", "src.db", 3306, UUID_SRC),
        _channel("b", "z", "src.db", 3307, None),
        _channel("b", "y", "other.db", 3306, UUID_SRC),
        _channel("e", "", "src.db", 3306, None),
    ]), warehouse=wh, run_id=run, run_date=DAY)
    # an older run in which "b" had no channel and "c" was read whole
    write_run_rows(spark, "servers", _rows("servers", "night-0", [_server("b"), _server("c")]),
                   warehouse=wh, run_id="night-0", run_date=DAY)
    specs = [_spec(n) for n in "abcefgh"] + [_spec("d", port=3307)]

    probes = planning_probes(wh, PreviousRun(run, DAY), specs)

    uuid = UUID_A.lower()
    assert probes == {
        "a": Probe("a", uuid, (("src.db", 3306, UUID_SRC.lower()),), hostname="a-host", reported_port=3306),
        "b": Probe("b", uuid, (("other.db", 3306, UUID_SRC.lower()), ("src.db", 3307, None)),
                   hostname="b-host", reported_port=3306),
        "g": Probe("g", uuid, (), hostname=None, reported_port=None),
    }


def test_no_planning_probes_without_the_previous_tables(spark, tmp_path):
    """An empty warehouse plans nothing from a previous run (every server is then planned unknown)."""
    assert planning_probes(str(tmp_path), PreviousRun("night-1", DAY), [_spec("a")]) == {}


def _run(run_id: str, day: dt.date, started: dt.datetime) -> dict:
    return {**dict.fromkeys(get_table("runs").column_names), "run_id": run_id, "run_date": day,
            "started_at": started, "finished_at": started, "warehouse": "wh", "writer": "test",
            "spark_master": "local", "servers_configured": 1, "servers_discovered": 0, "servers_ok": 1,
            "servers_partial": 0, "servers_failed": 0, "error_count": 0, "collector_version": "0"}


def test_previous_run_is_the_newest_other_run(spark, tmp_path):
    """The newest run by started_at (then by run id) other than tonight's; None on an empty
    warehouse and when tonight's is the only run."""
    wh = str(tmp_path)
    assert previous_run(wh, "tonight") is None
    at = dt.datetime(2024, 5, 1, 1, 0, tzinfo=dt.timezone.utc)
    rows = [_run("n1", DAY, at), _run("n3", DAY + dt.timedelta(days=2), at + dt.timedelta(days=2)),
            _run("n2", DAY + dt.timedelta(days=1), at + dt.timedelta(days=1)),
            _run("n2b", DAY + dt.timedelta(days=1), at + dt.timedelta(days=1))]
    for r in rows:
        write_run_rows(spark, "runs", [r], warehouse=wh, run_id=r["run_id"])
    assert previous_run(wh, "tonight") == PreviousRun("n3", DAY + dt.timedelta(days=2))
    assert previous_run(wh, "n3") == PreviousRun("n2b", DAY + dt.timedelta(days=1))   # same instant: by run id
    only = str(tmp_path / "one")
    write_run_rows(spark, "runs", [_run("n1", DAY, at)], warehouse=only, run_id="n1")
    assert previous_run(only, "n1") is None


def test_a_warehouse_delta_rs_cannot_read_plans_a_first_night(spark, tmp_path, caplog):
    """A ``runs`` table whose log delta-rs cannot read raises PreviousRunUnreadable naming the
    table, and the collection plans that night as a first one (no previous run, nothing planned
    from it), with a warning that names the cause."""
    import logging

    from jobs.collect import _plan_from_previous_run
    from jobs.config import parse_config

    wh = str(tmp_path)
    at = dt.datetime(2024, 5, 1, 1, 0, tzinfo=dt.timezone.utc)
    write_run_rows(spark, "runs", [_run("n1", DAY, at)], warehouse=wh, run_id="n1")
    for commit in (tmp_path / "runs" / "_delta_log").glob("*.json"):
        commit.write_text("{not json")
    with pytest.raises(PreviousRunUnreadable, match="table 'runs'"):
        previous_run(wh, "tonight")
    config = parse_config({"warehouse": wh, "servers": [{"name": "a", "host": "a.db", "user": "audit"}]})
    caplog.set_level(logging.WARNING, logger="gtid_audit.collect")
    assert _plan_from_previous_run(config, wh, "tonight", [_spec("a")]) == (None, {})
    assert any("planned as a first night" in r.getMessage() and "'runs'" in r.getMessage() for r in caplog.records)
