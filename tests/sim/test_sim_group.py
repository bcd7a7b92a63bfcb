"""Group Replication members in the simulator (issue #22), read by the real collector.

One simulator serves, per version, a healthy single-primary group of three (one secondary two
transactions behind) and a source with one replica (not group members), plus the two group
faults. The collector's ``read_server`` must get the version's columns from a member, and from a
non-member nothing new: no group rows, no error, not one statement more than the collector
without group support sends.
"""
from __future__ import annotations

import dataclasses
import datetime as dt

import mysql.connector
import pytest

from gtid_core import GtidSet
from jobs import collector
from jobs.collector import GROUP_NAME_ITEM, RunContext, read_server
from jobs.config import load_config
from jobs.sandbox.sim import FleetBuilder, Simulator, generate
from jobs.sandbox.sim.model import CONSISTENCY_FAULTS, PASSWORD

VERSIONS = ["5.7.44", "8.0.21", "8.0.36", "8.4.3", "9.7.4"]

# What each version's member answers, as the collector stores it (None: the version lacks it).
# version: replication_group_members from 8.0.2; role: from its MEMBER_ROLE from 8.0.2, before that
# from the status variable group_replication_primary_member; stack: from 8.0.27; remote queue: the
# COUNT_TRANSACTIONS_REMOTE_* columns from 8.0.2; all_stats: every member's stats row from 8.0.2;
# group variables: member_weight 5.7.20+, consistency 8.0.14+ (BEFORE_ON_PRIMARY_FAILOVER from
# 8.4.0), view_change_uuid 8.0.26+.
EXPECTED = {
    "5.7.44": dict(role="SECONDARY", version=None, stack=None, remote_queue=None, all_stats=False,
                   consistency=None, view_change_uuid=None, weight=50),
    "8.0.21": dict(role="SECONDARY", version="8.0.21", stack=None, remote_queue=2, all_stats=True,
                   consistency="EVENTUAL", view_change_uuid=None, weight=50),
    "8.0.36": dict(role="SECONDARY", version="8.0.36", stack="XCom", remote_queue=2, all_stats=True,
                   consistency="EVENTUAL", view_change_uuid="AUTOMATIC", weight=50),
    "8.4.3": dict(role="SECONDARY", version="8.4.3", stack="XCom", remote_queue=2, all_stats=True,
                  consistency="BEFORE_ON_PRIMARY_FAILOVER", view_change_uuid="AUTOMATIC", weight=50),
    "9.7.4": dict(role="SECONDARY", version="9.7.4", stack="XCom", remote_queue=2, all_stats=True,
                  consistency="BEFORE_ON_PRIMARY_FAILOVER", view_change_uuid="AUTOMATIC", weight=50),
}


def _key(version: str) -> str:
    return "v" + version.replace(".", "")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """(fleet, config, simulator): per version a group and a source + replica, the two group
    faults, and a 5.6 replica; one simulator for the module."""
    b = FleetBuilder(seed=22)
    for v in VERSIONS:
        b.group(_key(v) + "g", v, members=3, lags=[0, 2, 0])
        b.cluster(_key(v), v, replicas=1)
    b.group_errant("gerr", "8.0.36")
    b.group_unrecoverable("gunr", "5.7.44")
    b.cluster("v5651", "5.6.51", replicas=1)
    fleet = b.fleet()
    work = tmp_path_factory.mktemp("simgr")
    fleet.save(work / "fleet.json")
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "wh"), password_file=work / "pw")
    with Simulator(work / "fleet.json", lifetime_s=300, latency="0-0") as simulator:
        yield fleet, load_config(config), simulator


def _read(sim, name):
    _, config, _ = sim
    ctx = RunContext("t", dt.date.today(), config.collection.read_settings())
    return read_server({s.name: s for s in config.inventory()}[name], ctx)


def _counted_read(sim, name):
    """read_server on ``name`` and the statements the simulator served for it."""
    simulator = sim[2]
    before = simulator.snapshot()["statements"]
    result = _read(sim, name)
    return result, simulator.snapshot()["statements"] - before


@pytest.mark.parametrize("version", VERSIONS)
def test_member_yields_the_versions_group_rows(sim, version):
    """A lagging secondary gives one group_replication row and three group_members rows with the
    version's columns (NULL where it lacks them) and no collection error."""
    fleet = sim[0]
    name = f"{_key(version)}g-g2"
    me = fleet.server(name)
    want = EXPECTED[version]
    result = _read(sim, name)
    assert result.errors == []
    assert result.server["status"] == "ok"
    assert result.channels == []    # SHOW REPLICA STATUS lists no group channel
    [group] = result.group_replication
    assert group["group_name"] == me.group.group_name
    assert (group["members_in_view"], group["member_state"], group["member_role"]) == (3, "ONLINE", want["role"])
    assert (group["single_primary_mode"], group["enforce_update_everywhere_checks"]) == (True, False)
    assert group.get("member_weight") == want["weight"]
    assert group.get("consistency") == want["consistency"]
    assert group.get("view_change_uuid") == want["view_change_uuid"]
    assert (group["applier_service_state"], group["recovery_service_state"]) == ("ON", "OFF")
    # the applier channel received two certified transactions this secondary has not applied
    received = GtidSet.parse(group["applier_received_transaction_set"])
    executed = GtidSet.parse(result.server["gtid_executed"])
    assert (received - executed).count() == 2
    assert {u for u, *_ in received} == {me.group.group_name}
    members = {m["member_id"]: m for m in result.group_members}
    assert len(result.group_members) == 3
    assert set(members) == {fleet.server(f"{_key(version)}g-g{i}").server_uuid for i in (1, 2, 3)}
    roles = sorted(m["member_role"] or "" for m in members.values())
    assert roles == (["PRIMARY", "SECONDARY", "SECONDARY"] if want["role"] else ["", "", ""])
    mine = members[me.server_uuid]
    assert (mine["member_state"], mine["member_version"], mine["member_communication_stack"]) == (
        "ONLINE", want["version"], want["stack"])
    assert (mine["member_host"], mine["member_port"]) == (me.host, me.port)
    assert mine["view_id"] and mine["transactions_checked"] > 0
    assert mine["transactions_remote_in_applier_queue"] == want["remote_queue"]
    others = [m for k, m in members.items() if k != me.server_uuid]
    assert all((m["view_id"] is not None) == want["all_stats"] for m in others)


@pytest.mark.parametrize("version", VERSIONS)
def test_non_member_reads_as_before(sim, version, monkeypatch):
    """A replica outside any group: no group rows, no error, and exactly the statements (and rows)
    of the collector without Group Replication support: the group-name item costs nothing."""
    name = f"{_key(version)}-r1"
    now, statements = _counted_read(sim, name)
    real_dialect_for = collector.dialect_for
    monkeypatch.setattr(collector, "dialect_for",
                        lambda v: dataclasses.replace(real_dialect_for(v), has_group_replication=False))
    before, statements_before = _counted_read(sim, name)
    assert now.errors == [] and before.errors == []
    assert now.group_replication == [] and now.group_members == []
    assert statements == statements_before
    timing = lambda row: {k: v for k, v in row.items() if not k.endswith("_at")}  # noqa: E731
    assert timing(now.server) == timing(before.server)
    assert [timing(c) for c in now.channels] == [timing(c) for c in before.channels]


def test_group_name_item_answers(sim):
    """The group-name item: the group's name on a member, NULL on a non-member, 1146 on 5.6
    (no performance_schema.global_variables)."""
    fleet = sim[0]
    answers = {}
    for name in ("v8036g-g1", "v8036-r1", "v5744-s", "v5651-r1"):
        server = fleet.server(name)
        cnx = mysql.connector.connect(host=server.host, port=server.port, user="audit", password=PASSWORD,
                                      use_pure=True, autocommit=True)
        try:
            cur = cnx.cursor()
            cur.execute(f"SELECT @@GLOBAL.server_id AS `server_id`, {GROUP_NAME_ITEM}")
            answers[name] = (cur.fetchall()[0][1], [d[0] for d in cur.description])
        except mysql.connector.Error as exc:
            answers[name] = exc.errno
        finally:
            cnx.close()
    columns = ["server_id", "group_replication_group_name"]
    assert answers == {"v8036g-g1": (fleet.server("v8036g-g1").group.group_name, columns),
                       "v8036-r1": (None, columns), "v5744-s": (None, columns), "v5651-r1": 1146}


def test_errant_member_is_offline_alone_with_its_own_transactions(sim):
    """group_errant (8.0.36): the stopped member sees only itself, OFFLINE, without a role (with its
    version, as 8.0.27+ show it); it holds GTIDs of its own server_uuid, which the ONLINE members
    (whose view no longer has it) lack."""
    fleet = sim[0]
    member = fleet.server("gerr-g3")
    result = _read(sim, "gerr-g3")
    assert result.errors == []
    [group] = result.group_replication
    assert (group["member_state"], group["members_in_view"], group["applier_service_state"]) == ("OFFLINE", 1, "OFF")
    [row] = result.group_members
    assert (row["member_id"], row["member_state"], row["member_role"], row["member_version"]) == (
        member.server_uuid, "OFFLINE", None, "8.0.36")
    executed = GtidSet.parse(result.server["gtid_executed"])
    for name in ("gerr-g1", "gerr-g2"):
        online = _read(sim, name)
        assert {m["member_id"] for m in online.group_members} == {fleet.server(f"gerr-g{i}").server_uuid
                                                                  for i in (1, 2)}
        assert {m["member_state"] for m in online.group_members} == {"ONLINE"}
        extra = executed - GtidSet.parse(online.server["gtid_executed"])
        assert extra and {u for u, *_ in extra} == {member.server_uuid}
        assert GtidSet.parse(online.server["gtid_purged"]) <= executed     # recoverable, only errant


def test_unrecoverable_member_lacks_what_every_online_member_purged(sim):
    """group_unrecoverable (5.7.44): the stopped member lacks GTIDs every ONLINE member has purged,
    and has none of its own."""
    fleet = sim[0]
    result = _read(sim, "gunr-g3")
    assert result.errors == []
    [row] = result.group_members
    # 5.7: no MEMBER_VERSION column; no role, as 8.0.2+ shows none for an OFFLINE member (its
    # group_replication_primary_member is empty while Group Replication is stopped)
    assert (row["member_state"], row["member_version"], row["member_role"]) == ("OFFLINE", None, None)
    executed = GtidSet.parse(result.server["gtid_executed"])
    for name in ("gunr-g1", "gunr-g2"):
        online = _read(sim, name)
        assert online.group_replication[0]["member_state"] == "ONLINE"
        assert not GtidSet.parse(online.server["gtid_purged"]) <= executed
        assert executed <= GtidSet.parse(online.server["gtid_executed"])   # nothing errant
    assert fleet.server("gunr-g3").server_uuid not in {u for u, *_ in executed}


def test_group_truth():
    """The group faults write exactly their truth; a healthy group writes none (on the same builder,
    next to the positive controls)."""
    b = FleetBuilder(seed=3, base_port=30000)
    b.group("ok", "8.0.36")
    b.group_errant("er", "9.7.4")
    b.group_unrecoverable("un", "8.4.3")
    truth = {(t.check_id, t.server, t.source, t.severity, t.scenario) for t in b.fleet().truth}
    assert truth == {("group_member_errant", "er-g3", None, "critical", "group_errant"),
                     ("group_member_unrecoverable", "un-g3", None, "warning", "group_unrecoverable")}


@pytest.mark.parametrize("version", ["5.6.51", "5.7.16"])
def test_no_group_before_5717(version):
    """Versions before 5.7.17 cannot be group members."""
    with pytest.raises(ValueError, match="5.7.17"):
        FleetBuilder(seed=1).group("g", version)


@pytest.mark.parametrize("version,views", [("5.7.44", 3), ("8.0.36", 3), ("8.4.3", 0), ("9.7.4", 0)])
def test_group_history_is_coherent(version, views):
    """Members' sets: the group name's transactions (three View_change GTIDs before 8.3, none after),
    a secondary behind only by what its applier received, binary logs partitioning each history,
    every ONLINE member's gtid_purged within every other's gtid_executed."""
    b = FleetBuilder(seed=8, base_port=30000)
    servers = b.group("g", version, members=3, lags=[0, 3, 1], old_uuids=0, transactions=50)
    name = servers[0].group.group_name
    assert GtidSet.parse(servers[0].gtid_executed) == GtidSet.parse(f"{name}:1-{50 + views}")
    for s, lag in zip(servers, (0, 3, 1)):
        executed, purged = GtidSet.parse(s.gtid_executed), GtidSet.parse(s.gtid_purged)
        assert (GtidSet.parse(s.group.received) - executed).count() == lag
        logs = s.binary_logs
        assert GtidSet.parse(logs[0].previous_gtids) == purged
        assert GtidSet.parse(logs[-1].previous_gtids) | GtidSet.parse(logs[-1].gtids) == executed
        assert all(GtidSet.parse(o.gtid_purged) <= executed for o in servers)


def test_generate_includes_groups_deterministically():
    """generate() puts a small share of groups (5.7.17+ only) and, with enough faults, both group
    faults in a fleet; the same seed gives the same fleet."""
    fleet = generate(1000, seed=1, base_port=30000)
    members = [s for s in fleet.servers if s.group]
    assert 0 < len(members) < 0.1 * len(fleet.servers)
    assert all(s.mysql_version.triple >= (5, 7, 17) for s in members)
    assert {"group_errant", "group_unrecoverable"} <= {t.scenario for t in fleet.truth}
    assert {"group_errant", "group_unrecoverable"} <= set(CONSISTENCY_FAULTS)
    assert generate(1000, seed=1, base_port=30000) == fleet


@pytest.mark.parametrize("version,older,elected,verdict", [
    ("8.0.36", None, "g2", "safe_after_catch_up"), ("5.7.44", None, "g2", "safe_after_catch_up"),
    ("8.0.36", "8.0.35", "g3", "safe"), ("5.7.44", "5.7.40", "g2", "safe_after_catch_up")])
def test_election_scenario_is_decided_by_weight_or_version(version, older, elected, verdict):
    """group_election: g2 weighs 80 with the higher server_uuid and two certified transactions to
    apply, g3 weighs 40 (and runs ``older``); the readiness truth follows the server's rule, not
    the uuid order; the members' views show the weights' owners and versions."""
    b = FleetBuilder(seed=5, base_port=30000)
    g1, g2, g3 = b.group_election("e", version, older=older)
    assert (g2.group.member_weight, g3.group.member_weight) == (80, 40) and g2.server_uuid > g3.server_uuid
    assert (GtidSet.parse(g2.group.received) - GtidSet.parse(g2.gtid_executed)).count() == 2
    assert GtidSet.parse(g3.group.received) <= GtidSet.parse(g3.gtid_executed)
    assert g3.version == (older or version)
    assert {m.member_id: m.version for m in g1.group.members} == {s.server_uuid: s.version for s in (g1, g2, g3)}
    assert [(t.source, t.candidate, t.verdict) for t in b.fleet().readiness] == [("e-g1", f"e-{elected}", verdict)]
    assert b.fleet().truth == []
    with pytest.raises(ValueError, match="5.7.20"):
        b.group_election("old", "5.7.19")


@pytest.mark.parametrize("version,vcu", [("8.0.36", True), ("8.0.21", False), ("8.4.3", False)])
@pytest.mark.parametrize("errant", [False, True], ids=["healthy", "errant"])
def test_group_pair_scenario(version, vcu, errant):
    """group_pair: the replica group's primary replicates the other group's primary; every member
    of the replica group has the source group's history plus its own view changes (before 8.3) and,
    errant, the writes of its primary. The truth: errant_transactions (critical, the written set)
    when view changes have a UUID of their own or are not logged; an info truth naming the group
    name's GTIDs when they share the group name (8.0.21); nothing alerting when healthy."""
    b = FleetBuilder(seed=9, base_port=30000)
    servers = b.group_pair("cs", version, errant=errant, view_change_uuid=vcu)
    by = {s.name: s for s in servers}
    p1, r1, r2 = by["cs-p-g1"], by["cs-r-g1"], by["cs-r-g2"]
    assert {s.cluster for s in servers} == {"cs"} and len(servers) == 5
    [ch] = r1.channels
    assert (ch.name, ch.source) == ("clusterset_replication", "cs-p-g1") and not r2.channels
    name = r1.group.group_name
    extra = GtidSet.parse(r1.gtid_executed) - GtidSet.parse(p1.gtid_executed)
    assert extra == GtidSet.parse(r2.gtid_executed) - GtidSet.parse(p1.gtid_executed)
    views = {"8.0.36": 2, "8.0.21": 2, "8.4.3": 0}[version]
    if vcu:
        assert extra.for_uuid(r1.group.view_change_uuid).count() == views
    writes = extra.for_uuid(name).count() - (0 if vcu else views)
    assert (writes > 0) == errant
    truth = [(t.check_id, t.server, t.source, t.severity, t.gtid_set) for t in b.fleet().truth]
    if version == "8.0.21":
        assert truth == [("errant_transactions", "cs-r-g1", "cs-p-g1", "info", extra.for_uuid(name).to_text())]
    elif errant:
        assert truth == [("errant_transactions", "cs-r-g1", "cs-p-g1", "critical", extra.for_uuid(name).to_text())]
    else:
        assert truth == []
