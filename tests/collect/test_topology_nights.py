"""Issue #21 on real MySQL 9.7 servers: the topology changes between two nights and every pair is
still read in a sound order (a replica before its source, docs/collection.md).

One module-scoped fleet and two collections into one warehouse (one Spark session); night 2 is
audited. The issue's A..F are src, mover, mid, leaf, newcomer and solo::

    night 1                           night 2
    src ──> mover                     src ──> mid ──> mover ──> newcomer   mover moved under mid,
     └───> mid ──> leaf                                                    newcomer is new, leaf retired
    solo                              solo                                 untouched, standalone
    ctl-src ──> ctl-rep (errant)      ctl-src ──> ctl-rep                  the audit's positive control

From night 2 on, the read order is planned from the previous night's ``servers`` and
``channels`` instead of a probe connection per server; what the previous night does not know is
planned alone, and a replication group whose topology turned out different (mover moved,
newcomer new) is re-read in a sound order. Planned from night 1 alone, mid and mover are siblings of one wave; the
collection reads with one thread per task, so such a wave is read one server after the other in
the planner's order (mid sorts first): a night 2 that does not notice the move reads mid before
mover and fails the order test, rather than passing or failing by a race between two threads.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from jobs.audit import audit_run
from jobs.collect import run_collect
from jobs.config import load_config
from jobs.delta_io import read_arrow, read_frame
from jobs.sandbox import scenarios
from jobs.sandbox.accounts import AUDIT_USER
from jobs.sandbox.fleet import ChannelSpec, Fleet, Topology

pytestmark = [pytest.mark.mysql, pytest.mark.spark, pytest.mark.slow]

TOPOLOGY = {
    "name": "nights",
    "servers": [{"name": n, "cluster": c} for n, c in (
        ("src", "orders"), ("mover", "orders"), ("mid", "orders"), ("leaf", "orders"), ("solo", "solo"),
        ("ctl-src", "control"), ("ctl-rep", "control"))],
    "channels": [{"replica": "mover", "source": "src"}, {"replica": "mid", "source": "src"},
                 {"replica": "leaf", "source": "mid"}, {"replica": "ctl-rep", "source": "ctl-src"}],
    "schema": {"src": ["CREATE DATABASE orders", "CREATE TABLE orders.t (id INT PRIMARY KEY)",
                       "INSERT INTO orders.t VALUES (1), (2)"],
               "ctl-src": ["CREATE DATABASE control", "CREATE TABLE control.t (id INT PRIMARY KEY)"]},
}
NIGHT_1 = ("night-1", ["src", "mover", "mid", "leaf", "solo", "ctl-src", "ctl-rep"])
NIGHT_2 = ("night-2", ["src", "mover", "mid", "newcomer", "solo", "ctl-src", "ctl-rep"])
# Night 2's channels as the changes between the nights made them: (replica, channel) -> source
NIGHT_2_CHANNELS = {("mover", ""): "mid", ("mid", ""): "src", ("newcomer", ""): "mover",
                    ("ctl-rep", ""): "ctl-src"}
HEALTHY = {"src", "mover", "mid", "newcomer", "solo"}
RETIRED = "leaf"
UNTOUCHED = "solo"


def _write_config(fleet, tmp: Path, warehouse: Path, names: list[str]) -> Path:
    """The auditor's configuration for one night: the fleet's entries for ``names`` only."""
    path = fleet.write_audit_config(tmp / "gtid-audit.yaml", warehouse=str(warehouse), connect_timeout_s=5)
    data = yaml.safe_load(path.read_text())
    data["servers"] = [s for s in data["servers"] if s["name"] in names]
    assert sorted(s["name"] for s in data["servers"]) == sorted(names)
    # one thread per task: a wave is read in the planner's order (module docstring); one
    # attempt: a retried connect would be a second connection in the count below
    data["collection"] = {"concurrency": 4, "per_task_concurrency": 1, "server_deadline_s": 60,
                          "retries": {"attempts": 1}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _audit_connections(server) -> int:
    """Connections the ``audit`` account has made to ``server`` since it started
    (performance_schema.accounts, summed over the client hosts)."""
    return int(server.query_value(
        "SELECT COALESCE(SUM(TOTAL_CONNECTIONS), 0) FROM performance_schema.accounts WHERE USER = %s",
        (AUDIT_USER,)))


def _record_channels(fleet, channels: list[dict]) -> None:
    """Record the fleet's new channels (the servers were changed by hand) so that waiting and
    shutdown follow the new topology."""
    data = fleet.topology.model_dump(by_alias=True, mode="json")
    data["channels"] = channels
    fleet.topology = Topology.load(data)


def _collect(spark, fleet, tmp_path_factory, warehouse: Path, night, started: dt.datetime | None) -> dict:
    """Collect one night's inventory, counting the audit account's connections to the untouched
    server around it."""
    run_id, names = night
    config = load_config(_write_config(fleet, tmp_path_factory.mktemp(run_id), warehouse, names))
    before = _audit_connections(fleet.server(UNTOUCHED))
    summary = run_collect(spark, config, run_id=run_id, started=started)
    after = _audit_connections(fleet.server(UNTOUCHED))
    return {"config": config, "summary": summary, "untouched_connections": after - before}


@pytest.fixture(scope="module")
def nights(mysql_dist, spark, tmp_path_factory):
    """Both nights collected into one warehouse, the topology changed in between, night 2
    audited (auditing night 1 too would double the audit's half of the wall time)."""
    fleet = Fleet.up(Topology.load(TOPOLOGY), tmp_path_factory.mktemp("nights"), dist=mysql_dist)
    try:
        errant = scenarios.errant_transaction(fleet, "ctl-rep")   # the positive control, both nights
        warehouse = tmp_path_factory.mktemp("warehouse") / "wh"
        # night 1 ran a day earlier: its runs row is the last complete run when night 2 starts
        first = _collect(spark, fleet, tmp_path_factory, warehouse, NIGHT_1,
                         dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=1))

        # ---- between the nights
        mover, mid = fleet.server("mover"), fleet.server("mid")
        mover.execute("STOP REPLICA")
        fleet.attach_channel(ChannelSpec(replica="mover", source="mid"))  # CHANGE ... SOURCE_AUTO_POSITION=1; START
        leaf = fleet.server(RETIRED)
        leaf.execute("STOP REPLICA", "RESET REPLICA ALL")
        leaf.stop()
        fleet.add_server({"name": "newcomer", "cluster": "orders"})
        fleet.attach_channel(ChannelSpec(replica="newcomer", source="mover"))
        _record_channels(fleet, [{"replica": r, "source": s} for (r, _), s in NIGHT_2_CHANNELS.items()])
        fleet.server("src").execute(*(f"INSERT INTO orders.t VALUES ({i})" for i in range(3, 13)))
        fleet.wait_caught_up()
        assert mover.query("SHOW REPLICA STATUS")[0]["Source_Port"] == mid.port

        second = _collect(spark, fleet, tmp_path_factory, warehouse, NIGHT_2, None)
        second["outcome"] = audit_run(spark, second["config"], run_id=NIGHT_2[0], send_alerts=False)
        wh = second["config"].resolved_warehouse()
        tables = {name: [r.asDict() for r in read_frame(spark, wh, name, NIGHT_2[0]).collect()]
                  for name in ("servers", "channels")}
        yield {"fleet": fleet, "errant": errant, "first": first, "second": second, "tables": tables}
    finally:
        fleet.down(graceful=False)


def _servers(nights) -> dict[str, dict]:
    return {r["server"]: r for r in nights["tables"]["servers"]}


def test_every_server_of_night_two_has_one_ok_row(nights):
    """Night 2's servers table has exactly one row per inventory server, each read in full."""
    rows = nights["tables"]["servers"]
    assert sorted(r["server"] for r in rows) == sorted(NIGHT_2[1])
    assert {r["server"]: r["status"] for r in rows} == {n: "ok" for n in NIGHT_2[1]}
    fleet = nights["fleet"]
    assert {r["server"]: r["server_uuid"] for r in rows} == {n: fleet.server(n).server_uuid for n in NIGHT_2[1]}


def test_the_retired_server_has_no_row_on_night_two(nights):
    """leaf, retired between the nights, is in night 1 and nowhere in night 2's tables."""
    wh = nights["second"]["config"].resolved_warehouse()
    assert RETIRED in {r["server"] for r in read_arrow(wh, "servers", NIGHT_1[0]).to_pylist()}
    assert RETIRED not in _servers(nights)
    assert RETIRED not in {r["server"] for r in nights["tables"]["channels"]}
    assert RETIRED not in {r["source_server"] for r in nights["tables"]["channels"]}


def test_every_channel_resolves_to_night_twos_source(nights):
    """Each channel of night 2 is resolved, to the source it has since the changes (mover under
    mid, newcomer under mover)."""
    channels = nights["tables"]["channels"]
    assert {(r["server"], r["channel_name"]): r["source_server"] for r in channels} == NIGHT_2_CHANNELS
    assert [(r["server"], r["source_problem"], r["source_uuid_mismatch"]) for r in channels
            if r["source_problem"] is not None or r["source_uuid_mismatch"] is not None] == []


def test_every_pair_is_read_in_a_sound_order(nights):
    """For every channel of night 2 the source's gtid_executed was read after the replica's: the
    chain src -> mid -> mover -> newcomer is read newcomer, mover, mid, src."""
    servers = _servers(nights)
    for r in nights["tables"]["channels"]:
        replica, source = servers[r["server"]], servers[r["source_server"]]
        assert replica["gtid_read_at"] < source["gtid_read_at"], (
            r["server"], replica["gtid_read_at"], r["source_server"], source["gtid_read_at"])


def test_the_audit_flags_only_the_planted_errant_transaction(nights):
    """Night 2's audit finds the control replica's errant transaction, confirmed (critical: its
    pair was read in order), and no warning or critical finding on the healthy servers."""
    outcome = nights["second"]["outcome"]
    assert outcome.summary["pairs_audited"] == len(NIGHT_2_CHANNELS)
    found = [r for r in outcome.findings() if r["status"] == "open"]
    errant = [r for r in found if r["check_id"] == "errant_transactions"]
    assert [(r["server"], r["source"], r["severity"]) for r in errant] == [("ctl-rep", "ctl-src", "critical")]
    assert errant[0]["gtid_set"] == nights["errant"].gtid_sets["errant"].replace(",\n", ",")
    loud = {(r["check_id"], r["server"], r["source"]) for r in found if r["severity"] != "info"}
    assert not {k for k in loud if k[1] in HEALTHY or k[2] in HEALTHY}, loud


def test_the_untouched_server_is_connected_once_on_night_two(nights):
    """The audit account connects once to solo on night 2 (the read; no probe: the plan comes from
    night 1's tables), and solo's component is not re-read.

    Counted with performance_schema.accounts: TOTAL_CONNECTIONS of user ``audit`` (summed over
    client hosts), read as root before and after the collection; nothing else logs in as
    ``audit``. Unlike ``SHOW GLOBAL STATUS LIKE 'Connections'`` it leaves out the test's own
    connections (each sandbox query is one). Night 1 (no previous night: probe and read) shows
    that the counter sees the collector's connections at all. Until issue #21's change lands this
    fails with 2 (today's probe, then the read)."""
    assert nights["first"]["untouched_connections"] >= 1
    assert nights["second"]["untouched_connections"] == 1
