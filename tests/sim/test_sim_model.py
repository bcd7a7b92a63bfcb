"""The simulated fleet's model is coherent: addresses, binary logs, replica sets derive from sources."""
from __future__ import annotations

import ipaddress

import pytest

from gtid_core import GtidSet
from jobs.sandbox.sim import generate
from jobs.sandbox.sim.model import COLLECTION_FAULTS, CONSISTENCY_FAULTS, SimFleet
from jobs.sandbox.sim.server import Latency


@pytest.fixture(scope="module")
def fleet():
    """A 600-server fleet with faults (6 consistency scenarios on 12 servers, 6 collection faults)."""
    return generate(600, seed=7)


def test_addresses_are_unique_loopback(fleet):
    """Every server has its own address:port, inside 127.0.0.0/8 and spread over it."""
    addresses = {(s.host, s.port) for s in fleet.servers}
    assert len(addresses) == len(fleet.servers) == 600
    assert all(ipaddress.ip_address(s.host) in ipaddress.ip_network("127.0.0.0/8") for s in fleet.servers)
    assert len({s.host.split(".")[1] for s in fleet.servers}) > 100


def test_binary_logs_chain_previous_gtids(fleet):
    """The first binary log's Previous_gtids is gtid_purged, each next one adds the file before it, and the
    last one plus its transactions is gtid_executed (except where a fault says otherwise)."""
    checked = 0
    for s in fleet.servers:
        if s.fault or any(t.server == s.name for t in fleet.truth) or s.cluster.startswith("f"):
            continue
        logs = s.binary_logs
        assert GtidSet.parse(logs[0].previous_gtids) == GtidSet.parse(s.gtid_purged), s.name
        for a, b in zip(logs, logs[1:]):
            assert GtidSet.parse(b.previous_gtids) == GtidSet.parse(a.previous_gtids) | GtidSet.parse(a.gtids)
        assert GtidSet.parse(logs[-1].previous_gtids) | GtidSet.parse(logs[-1].gtids) == GtidSet.parse(s.gtid_executed)
        checked += 1
    assert checked > 500


def test_healthy_replicas_derive_from_their_sources(fleet):
    """A healthy replica's retrieved and executed sets are within its source's executed set, and it has
    everything the source has (caught up)."""
    by_name = {s.name: s for s in fleet.servers}
    pairs = 0
    for s in fleet.servers:
        if s.cluster.startswith("f") or s.fault:
            continue
        executed = GtidSet.parse(s.gtid_executed)
        for ch in s.channels:
            source = by_name[ch.source]
            assert (ch.source_host, ch.source_port, ch.source_uuid) == (source.host, source.port, source.server_uuid)
            src = GtidSet.parse(source.gtid_executed)
            assert GtidSet.parse(ch.retrieved) <= src
            assert src <= executed
            pairs += 1
    assert pairs > 300


def test_faults_write_their_truth(fleet):
    """Every consistency scenario and every collection fault is in the truth, naming existing servers."""
    names = {s.name for s in fleet.servers}
    assert {t.scenario for t in fleet.truth} == set(CONSISTENCY_FAULTS[:6]) | set(COLLECTION_FAULTS[:6])
    assert all(t.server in names and (t.source is None or t.source in names) for t in fleet.truth)
    assert sum(1 for s in fleet.servers if s.fault) == 6


def test_json_round_trip(fleet):
    """A fleet saved as JSON loads back equal (the simulator processes read it)."""
    assert SimFleet.from_json(fleet.to_json()) == fleet


@pytest.mark.parametrize("spec,kind,bounds", [
    ("1-3", "variables", (0.001, 0.003)),
    ("2", "set", (0.002, 0.002)),
    ("1-3,binlog_events=5-8", "binlog_events", (0.005, 0.008)),
    ("1-3,binlog_events=5-8", "replica_status", (0.001, 0.003)),
], ids=["default", "fixed", "per-kind", "per-kind-other"])
def test_latency_spec(spec, kind, bounds):
    """Latency specs in milliseconds parse to per-kind bounds in seconds and print back."""
    latency = Latency.parse(spec)
    assert dict(latency.per_kind).get(kind, latency.default) == pytest.approx(bounds)
    assert Latency.parse(latency.spec()) == latency
