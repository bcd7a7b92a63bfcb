"""Topology validation: a bad layout is refused with an error naming the key."""
from __future__ import annotations

import pytest

from jobs.sandbox.errors import TopologyError
from jobs.sandbox.fleet import Topology
from tests.fixtures.fleet import STANDARD_TOPOLOGY

TWO = [{"name": "a"}, {"name": "b"}]


@pytest.mark.parametrize("data, key", [
    pytest.param({"servers": TWO, "channels": [{"replica": "b", "source": "zz"}]}, r"channels\.0\.source|channels\[0\]\.source", id="unknown-source"),
    pytest.param({"servers": TWO, "channels": [{"replica": "a", "source": "a"}]}, r"channels\[0\]", id="self-replication"),
    pytest.param({"servers": TWO + [{"name": "a"}]}, r"duplicate server names \['a'\]", id="duplicate-name"),
    pytest.param({"servers": [{"name": "a", "gtid_mode": "OFF"}, {"name": "b"}],
                  "channels": [{"replica": "b", "source": "a"}]}, r"channels\[0\]\.source.*gtid_mode 'OFF'", id="gtid-off-source"),
    pytest.param({"servers": TWO, "channels": [{"replica": "b", "source": "a"}, {"replica": "b", "source": "a"}]},
                 r"channels\[1\]\.channel", id="duplicate-channel"),
    pytest.param({"servers": [{"name": "a", "gtid_mode": "MAYBE"}]}, r"servers\.0\.gtid_mode.*'MAYBE'", id="bad-gtid-mode"),
    pytest.param({"servers": [{"name": "a", "options": ["innodb-buffer-pool-size=1G"]}]}, r"servers\.0\.options", id="option-without-dashes"),
    pytest.param({"servers": [{"name": "a", "colour": "red"}]}, r"servers\.0\.colour", id="unknown-key"),
    pytest.param({"servers": TWO, "schema": {"c": ["SELECT 1"]}}, r"schema\.c: unknown server 'c'", id="schema-unknown-server"),
    pytest.param({"servers": TWO, "channels": [{"replica": "b", "source": "a", "channel": "no spaces"}]}, r"channels\.0\.channel", id="bad-channel-name"),
    pytest.param({"servers": []}, r"servers", id="no-servers"),
    pytest.param({"servers": TWO, "groups": [{"name": "g", "members": ["a", "zz"]}]}, r"groups\[0\]: unknown server 'zz'",
                 id="group-unknown-member"),
    pytest.param({"servers": TWO, "groups": [{"name": "g", "members": ["a"]}, {"name": "h", "members": ["a", "b"]}]},
                 r"groups\[1\]: 'a' is already a member of group 'g'", id="member-of-two-groups"),
    pytest.param({"servers": [{"name": "a", "gtid_mode": "OFF"}, {"name": "b"}], "groups": [{"name": "g", "members": ["a", "b"]}]},
                 r"groups\[0\]: 'a' has gtid_mode 'OFF'", id="group-member-gtid-off"),
    pytest.param({"servers": TWO, "groups": [{"name": "g", "members": ["a", "b"], "weights": {"b": 101}}]},
                 r"groups\.0\.weights", id="weight-out-of-range"),
    pytest.param({"servers": TWO, "groups": [{"name": "g", "members": ["a", "b"], "group_name": "not-a-uuid"}]},
                 r"groups\.0\.group_name", id="group-name-not-uuid"),
    pytest.param({"servers": TWO, "groups": [{"name": "g", "members": ["a"]}, {"name": "g", "members": ["b"]}]},
                 r"duplicate group names", id="duplicate-group-name"),
])
def test_invalid_topologies_name_the_key(data, key):
    """Each invalid topology raises TopologyError whose message names the offending key."""
    with pytest.raises(TopologyError, match=key):
        Topology.load(data)


def test_missing_file_is_named(tmp_path):
    """A topology path that does not exist is named in the error."""
    with pytest.raises(TopologyError, match="nope.yaml"):
        Topology.load(tmp_path / "nope.yaml")


def test_yaml_bare_on_off_mean_gtid_mode(tmp_path):
    """YAML 1.1 reads a bare OFF as false; the topology maps it back to gtid_mode 'OFF'."""
    path = tmp_path / "t.yaml"
    path.write_text("servers:\n  - {name: a, gtid_mode: OFF}\n  - {name: b, gtid_mode: ON}\n")
    topology = Topology.load(path)
    assert [s.gtid_mode for s in topology.servers] == ["OFF", "ON"]


def test_standard_topology_shape():
    """jobs/sandbox/topologies/standard.yaml: six servers, a chain, and a two-channel multi-source replica."""
    topology = Topology.load(STANDARD_TOPOLOGY)
    assert [s.name for s in topology.servers] == [
        "orders-src", "orders-r1", "orders-r2", "orders-r3", "billing-src", "billing-r1"]
    pairs = {(c.replica, c.source, c.channel) for c in topology.channels}
    assert ("orders-r3", "orders-r1", "") in pairs
    assert {("billing-r1", "orders-src", "orders"), ("billing-r1", "billing-src", "billing")} <= pairs
    assert topology.cluster_of("orders-r3") == "orders"
    order = [c.replica for c in topology.attach_order()]
    assert order.index("orders-r1") < order.index("orders-r3")


def test_group_members_take_the_group_as_cluster():
    """A group member without a cluster label belongs to its group's cluster; an explicit label wins."""
    topo = Topology.load({"servers": [{"name": "a"}, {"name": "b", "cluster": "other"}, {"name": "r"}],
                          "groups": [{"name": "g1", "members": ["a", "b"]}],
                          "channels": [{"replica": "r", "source": "a"}]})
    assert [topo.cluster_of(n) for n in ("a", "b", "r")] == ["g1", "other", "g1"]
    assert topo.group_of("a").name == "g1" and topo.group_of("r") is None
