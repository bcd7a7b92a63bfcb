"""duplicate_server_uuid across the whole inventory (gtid_core/identity.py), on hand-built servers.

The story of most rows: ``orders-1`` (cluster orders) wrote U:1-100, a backup of it was restored with
its auto.cnf as ``shard-1`` (cluster shards), then orders-1 went on to U:120 and shard-1 to U:130.
Both have U:1-120: U:1-100 is the shared history, U:101-120 are collisions. Expected sets are
written out by hand.
"""
from __future__ import annotations

import pytest

from gtid_core import GtidSet, Severity
from gtid_core.identity import (
    IDENTITY_CHECKS,
    IdentityServer,
    check_duplicate_identities,
    check_duplicate_server_id,
    check_duplicate_server_uuid,
    replication_groups,
)

U = "aaaaaaaa-0000-4000-8000-000000000001"   # the shared server_uuid
X = "bbbbbbbb-0000-4000-8000-000000000002"
Y = "cccccccc-0000-4000-8000-000000000003"
Z = "dddddddd-0000-4000-8000-000000000004"


def g(text: str) -> GtidSet:
    return GtidSet.parse(text)


def srv(name, uuid, executed="", *, cluster=None, server_id=None, sources=(), replicas=()) -> IdentityServer:
    return IdentityServer(name, cluster, uuid, server_id, g(executed) if executed is not None else None,
                          frozenset(sources), frozenset(replicas))


def origin(**kw):
    kw.setdefault("cluster", "orders")
    return srv("orders-1", U, f"{U}:1-120,{X}:1-7", server_id=1, **kw)


def copy(**kw):
    kw.setdefault("cluster", "shards")
    return srv("shard-1", U, f"{U}:1-130,{Y}:1-3", server_id=2, **kw)


def by_server(found):
    return {f.server: f for f in found}


def test_twins_in_two_clusters_are_a_warning_with_the_colliding_ranges():
    """Twins in different clusters, nothing between them: a warning on each, the shared uuid's sets and their intersection."""
    found = by_server(check_duplicate_server_uuid([origin(), copy()]))
    assert sorted(found) == ["orders-1", "shard-1"]
    assert {f.severity for f in found.values()} == {Severity.WARNING}
    o, c = found["orders-1"], found["shard-1"]
    assert o.gtid_set == c.gtid_set == g(f"{U}:1-120") and o.gtid_count == 120
    assert (o.evidence["gtid_executed_of_uuid"], o.evidence["gtid_executed_of_uuid_on_shard-1"],
            o.evidence["common_with_shard-1"]) == (f"{U}:1-120", f"{U}:1-130", f"{U}:1-120")
    assert c.evidence["gtid_executed_of_uuid"] == f"{U}:1-130"
    assert o.evidence["twins"] == "shard-1 (cluster shards)" and o.evidence["data_meets"] is None
    assert f"both have {U}:1-120" in o.detail and "collision" in o.detail
    assert o.check_id == "duplicate_server_uuid" and o.check_version == 2


@pytest.mark.parametrize("twins, meeting", [
    pytest.param([origin(replicas={"agg"}), copy(replicas={"agg"})], "agg replicates from both",
                 id="multi_source_replica_of_both"),
    pytest.param([origin(), copy(cluster="orders")], "both are in cluster orders", id="one_cluster"),
    pytest.param([origin(), copy(sources={"orders-1"})], "shard-1 replicates from orders-1",
                 id="one_twin_replicates_from_the_other"),
    pytest.param([origin(replicas={"shard-1"}), copy()], "shard-1 replicates from orders-1",
                 id="seen_from_the_source_side"),
    pytest.param([origin(sources={"hub"}), copy(sources={"hub"})], "both replicate from hub",
                 id="one_source_kicks_one_of_them"),
])
def test_twins_whose_data_meets_are_critical(twins, meeting):
    """Same cluster label, a channel between them, a common replica or a common source: critical on both, saying where."""
    found = check_duplicate_server_uuid(twins)
    assert sorted(f.server for f in found) == ["orders-1", "shard-1"]
    assert {f.severity for f in found} == {Severity.CRITICAL}
    assert all(meeting in f.evidence["data_meets"] and meeting in f.detail for f in found)
    assert all(f.gtid_set == g(f"{U}:1-120") for f in found)


def test_multi_source_replica_seen_from_its_own_channels():
    """Over the inventory, a replica whose two channels resolve to the twins makes them critical (its sources are enough)."""
    agg = srv("agg", Z, f"{U}:1-130,{Z}:1", cluster="reporting", server_id=9, sources={"orders-1", "shard-1"})
    found = [f for f in check_duplicate_identities([origin(), copy(), agg]) if f.evidence.get("server_uuid") == U]
    assert {(f.server, f.severity) for f in found} == {("orders-1", Severity.CRITICAL), ("shard-1", Severity.CRITICAL)}
    assert "agg replicates from both" in found[0].evidence["data_meets"]


def test_unlabelled_twins_are_found_and_unlabelled_strangers_are_not():
    """Unlabelled servers are compared by uuid like any other, not as one cluster: only the twins, as warnings."""
    servers = [srv("a", U, f"{U}:1-5"), srv("b", U, f"{U}:1-3"), srv("c", X, f"{X}:1-5"), srv("d", Y, "")]
    found = check_duplicate_server_uuid(servers)
    assert [(f.server, f.severity, f.gtid_set) for f in found] == [
        ("a", Severity.WARNING, g(f"{U}:1-3")), ("b", Severity.WARNING, g(f"{U}:1-3"))]
    assert found[0].evidence["twins"] == "b (no cluster label)"


def test_no_twins_no_finding_and_the_same_fleet_with_a_twin_has_one():
    """Distinct uuids give nothing; the positive control, one server given another's uuid, is found."""
    fleet = [srv("a", U, f"{U}:1-5", cluster="c1"), srv("b", X, f"{U}:1-5,{X}:1", cluster="c1", sources={"a"}),
             srv("c", Y, "", cluster="c2")]
    assert check_duplicate_identities(fleet) == []
    fleet[2] = srv("c", X, f"{X}:1-9", cluster="c2")
    found = check_duplicate_identities(fleet)
    assert [(f.server, f.severity, f.gtid_set) for f in found] == [
        ("b", Severity.WARNING, g(f"{X}:1")), ("c", Severity.WARNING, g(f"{X}:1"))]


def test_three_twins_severity_is_per_twin():
    """Two twins in one cluster and a third elsewhere: the pair is critical, the third a warning naming both."""
    twins = [srv("a", U, f"{U}:1-10", cluster="x"), srv("b", U, f"{U}:1-4", cluster="x"),
             srv("c", U, f"{U}:1-2,{U}:8", cluster="y")]
    found = by_server(check_duplicate_server_uuid(twins))
    assert {n: f.severity for n, f in found.items()} == {
        "a": Severity.CRITICAL, "b": Severity.CRITICAL, "c": Severity.WARNING}
    assert found["c"].gtid_set == g(f"{U}:1-2:8")
    assert (found["c"].evidence["common_with_a"], found["c"].evidence["common_with_b"]) == (f"{U}:1-2:8", f"{U}:1-2")
    assert found["a"].gtid_set == g(f"{U}:1-4:8")


def test_unknown_sets_stay_unknown_and_unknown_labels_meet_nothing():
    """An unread gtid_executed gives None ranges (not empty), and two missing labels are not one cluster."""
    found = check_duplicate_server_uuid([srv("a", U, None), srv("b", U, f"{U}:1-3")])
    assert [(f.server, f.severity, f.gtid_set) for f in found] == [
        ("a", Severity.WARNING, None), ("b", Severity.WARNING, None)]
    assert found[1].evidence["common_with_a"] is None and found[1].evidence["gtid_executed_of_uuid"] == f"{U}:1-3"
    assert "unknown" in found[0].detail


def test_uuid_spelling_does_not_split_a_group_and_unknown_uuid_matches_nothing():
    """Upper-case and padded spellings of one uuid are one group; servers without a uuid are never twins."""
    found = check_duplicate_server_uuid([srv("a", U.upper(), ""), srv("b", f" {U} ", ""), srv("c", None, ""),
                                         srv("d", None, "")])
    assert sorted(f.server for f in found) == ["a", "b"] and all(f.gtid_set is None for f in found)


@pytest.mark.parametrize("servers, flagged", [
    pytest.param([srv("a", U, server_id=7), srv("b", X, server_id=8, sources={"a"}),
                  srv("c", Y, server_id=7, sources={"b"})], ["a", "c"], id="chain_ends_share_an_id"),
    pytest.param([srv("s", U, server_id=1), srv("r1", X, server_id=5, sources={"s"}),
                  srv("r2", Y, server_id=5, sources={"s"})], ["r1", "r2"], id="siblings"),
    pytest.param([srv("a", U, server_id=1), srv("b", X, server_id=1)], [], id="same_id_unconnected"),
    pytest.param([srv("a", U, server_id=None), srv("b", X, server_id=None, sources={"a"})], [],
                 id="unknown_id_matches_nothing"),
])
def test_server_id_within_a_replication_group(servers, flagged):
    """A server_id shared inside one connected replication group is critical on each; across groups it is nothing."""
    found = check_duplicate_identities(servers)
    assert sorted(f.server for f in found) == flagged
    assert all(f.severity is Severity.CRITICAL and "server_id" in f.title for f in found)


def test_replication_groups_ignore_direction():
    """Groups are the components of the channels whichever way they point, named by their smallest member."""
    servers = [srv("m", U, sources={"k"}), srv("z", X, replicas={"k"}), srv("q", Y)]
    assert replication_groups(servers) == {"m": "k", "k": "k", "z": "k", "q": "q"}


def test_server_id_check_names_its_group():
    """The per-group entry point (what the job calls) names the group in the evidence."""
    (a, b) = check_duplicate_server_id([srv("a", U, server_id=3), srv("b", X, server_id=3)], "a")
    assert (a.server, b.server, a.evidence["replication_group"], a.evidence["same_server_id"]) == ("a", "b", "a", "b")


def test_registry_holds_the_identity_check():
    """REGISTRY's duplicate_server_uuid is the identity module's (version 2), scope server, critical at most."""
    from gtid_core.registry import REGISTRY

    info = REGISTRY["duplicate_server_uuid"]
    assert info is IDENTITY_CHECKS["duplicate_server_uuid"]
    assert (info.version, info.scope, info.default_severity) == (2, "server", Severity.CRITICAL)
    assert "13117" in info.server_error and "13114" in info.server_error
