"""jobs.previous_run.planning_probes: which servers a later night plans from the previous run's
tables, and the probe each gets (Delta tables written by delta-spark, read back with Spark)."""
from __future__ import annotations

import datetime as dt

import pytest

from jobs.delta_io import write_run_rows
from jobs.previous_run import PreviousRun, planning_probes
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

    probes = planning_probes(spark, wh, PreviousRun(run, DAY), specs)

    uuid = UUID_A.lower()
    assert probes == {
        "a": Probe("a", uuid, (("src.db", 3306, UUID_SRC.lower()),), hostname="a-host", reported_port=3306),
        "b": Probe("b", uuid, (("other.db", 3306, UUID_SRC.lower()), ("src.db", 3307, None)),
                   hostname="b-host", reported_port=3306),
        "g": Probe("g", uuid, (), hostname=None, reported_port=None),
    }


def test_no_planning_probes_without_the_previous_tables(spark, tmp_path):
    """An empty warehouse plans nothing from a previous run (every server is then planned unknown)."""
    assert planning_probes(spark, str(tmp_path), PreviousRun("night-1", DAY), [_spec("a")]) == {}
