"""The simulated fleet night after night (jobs.sandbox.sim.evolve, issue #20's simulated year) stays
coherent: healthy replicas caught up, binary logs chained and purged, the truth naming only servers
that exist, addresses and ids never reused; and the fleet really changes. Whether the audit finds
every fault and nothing else on the changed fleet is measured by benchmarks/nights.py
(docs/benchmarks.md, "A simulated year")."""
from __future__ import annotations

import pytest

from gtid_core import GtidSet
from jobs.sandbox.sim import generate
from jobs.sandbox.sim.evolve import Churn, fault_units, next_night
from jobs.sandbox.sim.model import FleetBuilder, SimFleet

NIGHTS = 60


@pytest.fixture(scope="module")
def year():
    """A 400-server fleet at night 1, and after each of nights 2..NIGHTS (JSON copies) with the changes."""
    fleet = generate(400, seed=11)
    nights = [SimFleet.from_json(fleet.to_json())]
    changes = []
    for night in range(2, NIGHTS + 1):
        changes.append(next_night(fleet, night))
        nights.append(SimFleet.from_json(fleet.to_json()))
    return nights, changes


def _healthy(fleet: SimFleet):
    faulty = {s.name for unit in fault_units(fleet).values() for s in unit}
    return [s for s in fleet.servers if s.name not in faulty and s.group is None]


def test_the_fleet_changes_in_every_way_the_issue_names(year):
    """Over the nights, sources write, logs are purged, faults are repaired and added, clusters are
    retired and added, and replicas move."""
    nights, changes = year
    assert all(c.transactions > 0 for c in changes)
    assert all(c.purged_files > 0 for c in changes[Churn().binlog_keep:])   # once the first files age out
    assert sum(c.faults_repaired for c in changes) >= 5
    assert sum(c.faults_added for c in changes) == sum(c.faults_repaired for c in changes)
    assert sum(c.replicas_moved for c in changes) >= 3
    first, last = {s.name for s in nights[0].servers}, {s.name for s in nights[-1].servers}
    assert len(first - last) >= 10 and len(last - first) >= 10
    assert {t.scenario for t in nights[-1].truth} - {t.scenario for t in nights[0].truth} or \
        {t.server for t in nights[-1].truth} != {t.server for t in nights[0].truth}


def test_the_fleet_keeps_its_size_and_its_fault_rate(year):
    nights, _ = year
    for fleet in nights:
        assert 390 <= len(fleet.servers) <= 410
        assert len(fault_units(fleet)) == len(fault_units(nights[0]))


def test_healthy_servers_stay_coherent_every_night(year):
    """Each healthy server's binary logs chain from gtid_purged to gtid_executed, and every healthy
    replica has everything its source has, Retrieved_Gtid_Set within it, its relay log ending in
    complete transactions of the source's, positioned at the end of the source's newest log."""
    nights, _ = year
    for fleet in nights:
        by_name = {s.name: s for s in fleet.servers}
        for s in _healthy(fleet):
            logs = s.binary_logs
            assert 1 <= len(logs) <= Churn().binlog_keep or fleet is nights[0], s.name
            assert GtidSet.parse(logs[0].previous_gtids) == GtidSet.parse(s.gtid_purged), s.name
            for a, b in zip(logs, logs[1:]):
                assert GtidSet.parse(b.previous_gtids) == GtidSet.parse(a.previous_gtids) | GtidSet.parse(a.gtids)
            assert GtidSet.parse(logs[-1].previous_gtids) | GtidSet.parse(logs[-1].gtids) == \
                GtidSet.parse(s.gtid_executed), s.name
            for ch in s.channels:
                src = by_name[ch.source]
                executed, src_executed = GtidSet.parse(s.gtid_executed), GtidSet.parse(src.gtid_executed)
                assert src_executed <= executed, (s.name, ch.source)
                assert GtidSet.parse(src.gtid_purged) <= executed, (s.name, ch.source)
                assert GtidSet.parse(ch.retrieved) <= src_executed, (s.name, ch.source)
                assert (ch.source_host, ch.source_port, ch.source_uuid) == (src.host, src.port, src.server_uuid)
                assert (ch.source_log_file, ch.read_pos) == (src.binary_logs[-1].name, src.binary_logs[-1].size)
                assert ch.relay_events[-1][1] == "Xid", s.name
                assert ch.last_queued and GtidSet.parse(ch.last_queued) <= GtidSet.parse(ch.retrieved), s.name


def test_fault_scenarios_and_groups_never_change_while_they_last(year):
    """A fault scenario's servers (and a Group Replication cluster's) are the same every night
    until they are retired: their truth stays true."""
    import dataclasses
    import json

    nights, _ = year
    for before, after in zip(nights, nights[1:]):
        still = {s.name: s for s in after.servers}
        frozen = [s for unit in fault_units(before).values() for s in unit] + \
            [s for s in before.servers if s.group is not None]
        assert frozen
        for s in frozen:
            if s.name in still:
                assert json.dumps(dataclasses.asdict(s)) == json.dumps(dataclasses.asdict(still[s.name])), s.name


def test_a_moved_replica_starts_its_channel_afresh(year):
    """A repointed replica's channel names its new source, and its Retrieved_Gtid_Set holds only
    what that source sent since (CHANGE REPLICATION SOURCE TO deleted the relay logs)."""
    nights, _ = year
    moved = 0
    for before, after in zip(nights, nights[1:]):
        old = {s.name: s for s in before.servers}
        for s in after.servers:
            if s.name in old and len(s.channels) == 1 == len(old[s.name].channels) \
                    and s.channels[0].source != old[s.name].channels[0].source:
                moved += 1
                got = GtidSet.parse(s.channels[0].retrieved)
                assert got and got <= GtidSet.parse(s.gtid_executed) - GtidSet.parse(old[s.name].gtid_executed)
    assert moved >= 3


def test_the_truth_names_only_servers_of_the_fleet(year):
    nights, _ = year
    for fleet in nights:
        names = {s.name for s in fleet.servers}
        assert all(t.server in names and (t.source is None or t.source in names) for t in fleet.truth)
        assert all(r.source in names and r.candidate in names for r in fleet.readiness)
        assert {s.name for unit in fault_units(fleet).values() for s in unit} >= {t.server for t in fleet.truth
                                                                                    if t.severity != "info"}


def test_addresses_and_server_ids_are_never_reused(year):
    """A new server never gets a retired server's address, port or server_id: the warehouse's
    history must not mistake it for the old one."""
    nights, _ = year
    seen: dict[tuple[str, int], str] = {}
    ids: dict[int, str] = {}
    for fleet in nights:
        assert len({(s.host, s.port) for s in fleet.servers}) == len(fleet.servers)
        for s in fleet.servers:
            assert seen.setdefault((s.host, s.port), s.name) == s.name
            assert ids.setdefault(s.server_id, s.name) == s.name


def test_the_same_seed_gives_the_same_year():
    a, b = generate(200, seed=5, base_port=30000), generate(200, seed=5, base_port=30000)
    for night in range(2, 12):
        next_night(a, night)
        next_night(b, night)
    assert a.to_json() == b.to_json()


def test_a_fleet_saved_without_its_builder_state_is_refused():
    fleet = generate(50, seed=2)
    fleet.allocated = 0
    with pytest.raises(ValueError, match="generate it again"):
        FleetBuilder.resume(fleet, seed=1)
