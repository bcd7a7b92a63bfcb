"""Source resolution (jobs/pairs.py): address, alias, loopback, UUID cross-check, unresolved."""
from __future__ import annotations

import socket

import pytest

from jobs.pairs import InventoryServer, SourceResolver, inventory_from_rows

U1 = "11111111-1111-1111-1111-111111111111"
U2 = "22222222-2222-2222-2222-222222222222"
U3 = "33333333-3333-3333-3333-333333333333"
GONE = "99999999-9999-9999-9999-999999999999"


def fake_dns(table):
    """A getaddrinfo answering from ``table`` (host -> [ip]), raising gaierror otherwise."""
    def getaddrinfo(host, port, family=0, type=0):
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, 0)) for ip in table[host]]
    return getaddrinfo


PROD_DNS = fake_dns({
    "db1.example": ["10.0.0.1"], "db2.example": ["10.0.0.2"], "db3.example": ["10.0.0.3"],
    "vip-main.example": ["10.0.0.1"], "localhost": ["127.0.0.1", "::1"], "127.0.0.1": ["127.0.0.1"],
    "10.0.0.1": ["10.0.0.1"], "10.0.0.2": ["10.0.0.2"], "10.0.0.3": ["10.0.0.3"],
})
PROD = [
    InventoryServer("db1", "db1.example", 3306, "main", server_uuid=U1),
    InventoryServer("db2", "db2.example", 3306, "main", server_uuid=U2, aliases=("replica-a:3306",)),
    InventoryServer("db3", "db3.example", 3307, "main", server_uuid=U3),
]


@pytest.mark.parametrize(
    "host,port,uuid,expected,method",
    [
        ("db1", 3306, U1, "db1", "name"),
        ("DB1.EXAMPLE", 3306, U1, "db1", "name"),
        ("replica-a", 3306, U2, "db2", "name"),
        ("10.0.0.1", 3306, U1, "db1", "address"),
        ("vip-main.example", 3306, U1, "db1", "address"),
        ("unknown-vip", 3306, U2, "db2", "source_uuid"),
        ("db3.example", 3307, None, "db3", "name"),
    ],
    ids=["name", "host-case", "alias", "ip", "dns-alias", "uuid-fallback", "never-connected"],
)
def test_resolves_by_name_address_or_uuid(host, port, uuid, expected, method):
    """Each way of naming a source resolves to the right inventory server, and says how."""
    r = SourceResolver(PROD, getaddrinfo=PROD_DNS).resolve("db3", host, port, uuid)
    assert (r.source, r.method, r.problem, r.uuid_mismatch) == (expected, method, None, None)


def test_port_is_part_of_the_address():
    """The right host on the wrong port is not that server."""
    r = SourceResolver(PROD, getaddrinfo=PROD_DNS).resolve("db2", "db1.example", 3307, None)
    assert r.source is None and "db1.example:3307" in r.problem


def test_unresolvable_names_the_registry_owner():
    """An unknown address with a departed server's UUID is unresolved and names who had it."""
    r = SourceResolver(PROD, uuid_registry={GONE: "old-db9"}, getaddrinfo=PROD_DNS).resolve(
        "db2", "db9.example", 3306, GONE)
    assert r.source is None
    assert r.source_uuid_owner == "old-db9" and "'old-db9'" in r.problem


def test_empty_source_host_is_unresolved():
    """A channel without Source_Host is reported, not skipped."""
    r = SourceResolver(PROD, getaddrinfo=PROD_DNS).resolve("db2", "", 3306, None)
    assert r.source is None and "no source address" in r.problem


def test_uuid_mismatch_is_reported():
    """An address that now leads to another server than Source_UUID says so, naming both."""
    r = SourceResolver(PROD, uuid_registry={GONE: "old-db1"}, getaddrinfo=PROD_DNS).resolve(
        "db2", "db1.example", 3306, GONE)
    assert r.source == "db1"
    assert GONE in r.uuid_mismatch and U1 in r.uuid_mismatch and "'old-db1'" in r.uuid_mismatch


def test_loopback_is_relative_to_the_replica_machine():
    """127.0.0.1 on a replica means the replica's machine, not the auditor's."""
    inv = PROD + [InventoryServer("db1b", "db1.example", 3307, "main", server_uuid=U3.replace("3", "4"))]
    res = SourceResolver(inv, getaddrinfo=PROD_DNS)
    assert res.resolve("db1", "127.0.0.1", 3307, None).source == "db1b"   # db1's own machine
    r = res.resolve("db2", "localhost", 3307, None)                        # db2 has nothing on 3307
    assert r.source is None


def test_one_machine_fleet_on_loopback():
    """A sandbox fleet (every server on 127.0.0.1) resolves by port."""
    inv = [InventoryServer(f"s{i}", "127.0.0.1", 4000 + i, server_uuid=u) for i, u in enumerate((U1, U2, U3))]
    res = SourceResolver(inv)  # the real getaddrinfo: loopback names resolve without a network
    assert res.resolve("s2", "127.0.0.1", 4001, U2).source == "s1"
    assert res.resolve("s2", "localhost", 4000, U1).source == "s0"


def test_ambiguous_address_is_split_by_uuid():
    """Two inventory entries for one address are told apart by Source_UUID, else unresolved."""
    inv = [InventoryServer("a", "10.0.0.1", 3306, server_uuid=U1),
           InventoryServer("b", "db1.example", 3306, server_uuid=U2)]
    res = SourceResolver(inv, getaddrinfo=PROD_DNS)
    assert res.resolve("x", "vip-main.example", 3306, U2).source == "b"
    r = res.resolve("x", "vip-main.example", 3306, None)
    assert r.source is None and r.candidates == ("a", "b")


def test_inventory_from_server_rows():
    """servers-table rows (comma-separated aliases, uppercase UUID) become inventory entries."""
    (s,) = inventory_from_rows([{"server": "db2", "host": "db2.example", "port": 3306, "cluster": "c",
                                 "aliases": "replica-a:3306, 10.9.9.9", "server_uuid": U2.upper()}])
    assert s.aliases == ("replica-a:3306", "10.9.9.9") and s.server_uuid == U2
