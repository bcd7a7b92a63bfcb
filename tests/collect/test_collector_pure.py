"""jobs.collector and jobs.mysql_connection, the parts that need no server: version dialects, column
renames, error classes, read order."""
from __future__ import annotations

import socket

import mysql.connector.errors as myerr
import pytest

from gtid_core.versions import MySQLVersion
from jobs.collector import PreviousBinlogs, dialect_for, member_roles_before_802, normalise_replica_status
from jobs.mysql_connection import classify_error
from jobs.read_plan import Probe, plan_read_order
from jobs.config import ServerSpec


@pytest.mark.parametrize("version, status, binlog, replicas, names", [
    ("5.6.51-log", "SHOW SLAVE STATUS", "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "slave_parallel_workers"),
    ("5.7.44", "SHOW SLAVE STATUS", "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "slave_parallel_workers"),
    ("8.0.21", "SHOW SLAVE STATUS", "SHOW MASTER STATUS", "SHOW SLAVE HOSTS", "slave_parallel_workers"),
    ("8.0.22", "SHOW REPLICA STATUS", "SHOW MASTER STATUS", "SHOW REPLICAS", "slave_parallel_workers"),
    ("8.0.26", "SHOW REPLICA STATUS", "SHOW MASTER STATUS", "SHOW REPLICAS", "replica_parallel_workers"),
    ("8.2.0", "SHOW REPLICA STATUS", "SHOW BINARY LOG STATUS", "SHOW REPLICAS", "replica_parallel_workers"),
    ("8.4.3", "SHOW REPLICA STATUS", "SHOW BINARY LOG STATUS", "SHOW REPLICAS", "replica_parallel_workers"),
    ("9.7.4-2", "SHOW REPLICA STATUS", "SHOW BINARY LOG STATUS", "SHOW REPLICAS", "replica_parallel_workers"),
], ids=lambda v: v if isinstance(v, str) and v[0].isdigit() else None)
def test_dialect_follows_the_version_table(version, status, binlog, replicas, names):
    """Statements and variable names switch at the versions of docs/collection.md's version table."""
    d = dialect_for(MySQLVersion.parse(version))
    assert (d.replica_status, d.binlog_status, d.replicas_list) == (status, binlog, replicas)
    variables = dict(d.variables)
    assert variables["replica_parallel_workers"] == names


def test_dialect_variables_that_come_and_go():
    """super_read_only from 5.7.8, relay_log_info_repository until 8.x, assign-GTIDs column from 8.0.23."""
    v56, v80, v97 = (dialect_for(MySQLVersion.parse(v)) for v in ("5.6.51", "8.0.23", "9.7.4"))
    assert "super_read_only" not in dict(v56.variables) and "super_read_only" in dict(v80.variables)
    assert "relay_log_info_repository" in dict(v80.variables)
    assert "relay_log_info_repository" not in dict(v97.variables)
    assert not v56.has_channels and v80.has_channels
    assert not dialect_for(MySQLVersion.parse("8.0.22")).has_applier_configuration_assign
    assert v80.has_applier_configuration_assign


def test_slave_status_columns_get_the_new_names_and_keep_values():
    """A SHOW SLAVE STATUS row reads like a SHOW REPLICA STATUS row; NULL lag stays NULL."""
    row = {"Master_Host": "10.0.0.1", "Master_Port": 3306, "Slave_IO_Running": "Yes",
           "Seconds_Behind_Master": None, "Retrieved_Gtid_Set": "u:1-3", "Master_UUID": "u"}
    assert normalise_replica_status(row) == {
        "Source_Host": "10.0.0.1", "Source_Port": 3306, "Replica_IO_Running": "Yes",
        "Seconds_Behind_Source": None, "Retrieved_Gtid_Set": "u:1-3", "Source_UUID": "u"}


@pytest.mark.parametrize("exc, expected", [
    (myerr.ProgrammingError(msg="Access denied for user 'audit'@'localhost' (using password: YES)", errno=1045), "auth_failed"),
    (myerr.ProgrammingError(msg="Access denied; you need (at least one of) the REPLICATION SLAVE privilege(s)", errno=1227), "privilege_missing"),
    (myerr.ProgrammingError(msg="SELECT command denied to user", errno=1142), "privilege_missing"),
    (myerr.InterfaceError(msg="Can't connect to MySQL server on '127.0.0.1:1' (111 Connection refused)", errno=2003), "unreachable"),
    (myerr.InterfaceError(msg="Can't connect to MySQL server on '10.255.255.1:3306' (timed out)", errno=2003), "timeout"),
    (socket.timeout("timed out"), "timeout"),
    (myerr.DatabaseError(msg="Unknown system variable 'x'", errno=1193), "unexpected"),
    (RuntimeError("boom"), "unexpected"),
], ids=["1045", "1227", "1142", "refused", "connect-timeout", "socket-timeout", "1193", "other"])
def test_driver_errors_get_their_class(exc, expected):
    """Each driver failure maps to the error_class the collection_errors table documents."""
    assert classify_error(exc) == expected


def spec(name: str, port: int, aliases=()) -> ServerSpec:
    return ServerSpec(name=name, host="127.0.0.1", port=port, aliases=aliases, user="audit",
                      connect_timeout_s=1, read_timeout_s=1)


def test_read_order_standard_topology():
    """Chain and multi-source: deepest replica first, sources last, one group for connected servers."""
    specs = [spec("orders-src", 1), spec("orders-r1", 2), spec("orders-r2", 3), spec("orders-r3", 4),
             spec("billing-src", 5), spec("billing-r1", 6), spec("lonely", 7)]
    probes = {
        "orders-src": Probe("orders-src", "u-src"),
        "orders-r1": Probe("orders-r1", "u-r1", sources=(("127.0.0.1", 1, "u-src"),)),
        "orders-r2": Probe("orders-r2", "u-r2", sources=(("127.0.0.1", 1, None),)),      # by address
        "orders-r3": Probe("orders-r3", "u-r3", sources=(("other-name", 9, "u-r1"),)),   # by uuid
        "billing-src": Probe("billing-src", "u-bsrc"),
        "billing-r1": Probe("billing-r1", "u-br1", sources=(("127.0.0.1", 1, "u-src"), ("127.0.0.1", 5, "u-bsrc"))),
        "lonely": Probe("lonely", None, ok=False),
    }
    plan = plan_read_order(specs, probes)
    assert plan.groups == (
        (("orders-r3",), ("billing-r1", "orders-r1", "orders-r2"), ("billing-src", "orders-src")),
        (("lonely",),),
    )
    assert plan.depth["orders-r3"] == 2 and plan.depth["orders-src"] == 0
    assert plan.read_order["orders-r3"] < plan.read_order["orders-r1"] < plan.read_order["orders-src"]


def test_read_order_matches_aliases_and_survives_cycles():
    """A source named by an alias is found; circular replication does not loop."""
    specs = [spec("a", 1, aliases=(("a.internal", 3306),)), spec("b", 2)]
    probes = {"a": Probe("a", "ua", sources=(("127.0.0.1", 2, None),)),
              "b": Probe("b", "ub", sources=(("A.INTERNAL", 3306, None),))}
    plan = plan_read_order(specs, probes)
    assert len(plan.groups) == 1 and sum(len(w) for w in plan.groups[0]) == 2
    assert sorted(plan.depth.values()) == [0, 1]


def test_read_order_follows_the_source_the_checks_will_audit():
    """The plan resolves each channel with the job's SourceResolver, so the replica is read
    before the server its pair is audited against: after a repoint whose new connection has not
    yet happened, Source_UUID still names the old source while Source_Host:Source_Port names the
    new one, and the checks (channels.source_server) take the address's server."""
    specs = [spec("old-src", 1), spec("new-src", 2), spec("r", 3)]
    probes = {"old-src": Probe("old-src", "u-old"), "new-src": Probe("new-src", "u-new"),
              "r": Probe("r", "u-r", sources=(("127.0.0.1", 2, "u-old"),))}
    plan = plan_read_order(specs, probes)
    [group] = [g for g in plan.groups if "r" in sum(g, ())]
    assert "new-src" in sum(group, ()) and plan.read_order["r"] < plan.read_order["new-src"]
    assert plan.depth["r"] == 1 and plan.depth["old-src"] == 0


@pytest.mark.parametrize("order", ["a,b,r", "a,r,b", "r,b,a"])
def test_an_ambiguous_channel_orders_nothing_and_every_audited_pair_keeps_its_order(order):
    """Two inventory servers behind one alias and no Source_UUID to tell them apart: the checks
    audit that channel against no source, so it orders nothing; b, a replica of r by name, is
    read before r whatever the inventory's order."""
    by_name = {"a": spec("a", 1, aliases=(("vip", 3306),)), "b": spec("b", 2, aliases=(("vip", 3306),)),
               "r": spec("r", 3)}
    probes = {"a": Probe("a", "ua"), "b": Probe("b", "ub", sources=(("127.0.0.1", 3, "ur"),)),
              "r": Probe("r", "ur", sources=(("vip", 3306, None),))}
    plan = plan_read_order([by_name[n] for n in order.split(",")], probes)
    [group] = [g for g in plan.groups if "r" in sum(g, ())]
    assert "b" in sum(group, ()) and plan.read_order["b"] < plan.read_order["r"]
    assert plan.depth["r"] == 0 and plan.depth["b"] == 1


def test_planning_makes_no_dns_query(monkeypatch):
    """A channel naming its source by a host name the inventory does not list is placed by its
    Source_UUID, with no DNS query from the driver (a slow name server never stalls a night)."""
    import socket

    asked = []
    real = socket.getaddrinfo

    def recording(host, *args, **kwargs):
        asked.append((host, args, kwargs))
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    specs = [spec("src", 1), spec("r", 2)]
    probes = {"src": Probe("src", "u-src"), "r": Probe("r", "u-r", sources=(("db-src.example.internal", 3306, "u-src"),))}
    plan = plan_read_order(specs, probes)
    assert plan.read_order["r"] < plan.read_order["src"]
    flags = [a[4] if len(a) > 4 else kw.get("flags", 0) for _, a, kw in asked]
    assert asked and all(f & socket.AI_NUMERICHOST for f in flags)


def test_an_ipv6_alias_reaches_the_resolver_whole():
    """An alias ('::1', 3307) is handed to the resolver as '[::1]:3307', not split at a colon of the address."""
    from jobs.pairs import SourceResolver
    from jobs.read_plan import inventory_for_resolution

    specs = [spec("a", 1, aliases=(("fd00::7", 3307),)), spec("r", 2)]
    [inv_a, _] = inventory_for_resolution(specs, {})
    assert inv_a.aliases == ("[fd00::7]:3307",)
    found = SourceResolver(inventory_for_resolution(specs, {})).resolve("r", "fd00::7", 3307, None)
    assert found.source == "a"


def _before(files: str, executed: str = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-100") -> PreviousBinlogs:
    return PreviousBinlogs("db1", "3E11FA47-71CA-11E1-9E33-C80AA9429562", executed, files)


def test_headers_are_reused_only_for_the_same_server_with_its_history_intact():
    """Last night's files are reusable on the same server_uuid while tonight's gtid_executed
    contains last night's; a RESET (gtid_executed emptied or smaller) or another server voids them."""
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    before = _before("binlog.000001:4096,binlog.000002:180")
    assert before.reusable(uuid, f"{uuid}:1-250") == {"binlog.000001": 4096, "binlog.000002": 180}
    assert before.reusable(uuid.upper(), f"{uuid}:1-100") == {"binlog.000001": 4096, "binlog.000002": 180}
    assert before.reusable(uuid, "") == {}                        # RESET BINARY LOGS AND GTIDS
    assert before.reusable(uuid, f"{uuid}:1-99") == {}            # restored from an older backup
    assert before.reusable("4e11fa47-71ca-11e1-9e33-c80aa9429562", f"{uuid}:1-250") == {}  # another server
    assert before.reusable(None, f"{uuid}:1-250") == {}
    assert before.reusable(uuid, "not a gtid set") == {}
    assert _before("").reusable(uuid, f"{uuid}:1-250") == {}


def test_probe_topology_ignores_case_and_channel_order():
    """A probe built from last night's rows and tonight's read of the same server compare equal
    whatever the case of names and UUIDs and the order of channels; a moved channel does not."""
    a = Probe("r", "AA", (("SRC1", 3306, "U1"), ("src2", 3307, None)), hostname="Host1", reported_port=3306)
    b = Probe("r", "aa", (("src2", 3307, None), ("src1", 3306, "u1")), hostname="host1", reported_port=3306)
    moved = Probe("r", "aa", (("src3", 3306, "u3"), ("src2", 3307, None)), hostname="host1", reported_port=3306)
    assert a.topology() == b.topology() and a.topology() != moved.topology()


_A, _B, _C = "AAAAAAAA-0000-0000-0000-00000000000A", "bbbbbbbb-0000-0000-0000-00000000000b", "cccc"


@pytest.mark.parametrize("states, single_primary, primary, roles", [
    # single-primary: the member the status variable names, whatever its case, is PRIMARY
    (("ONLINE", "ONLINE", "RECOVERING"), True, _A.lower(),
     {_A.lower(): "PRIMARY", _B: "SECONDARY", _C: "SECONDARY"}),
    # an OFFLINE or ERROR member gets no role, as 8.0.2+ shows none; an UNREACHABLE one keeps it
    (("ONLINE", "ERROR", "ONLINE"), True, _C, {_A.lower(): "SECONDARY", _C: "PRIMARY"}),
    (("UNREACHABLE", "ONLINE", "OFFLINE"), True, _A, {_A.lower(): "PRIMARY", _B: "SECONDARY"}),
    # multi-primary: every live member is a primary; the variable is not needed
    (("ONLINE", "ONLINE", "OFFLINE"), False, None, {_A.lower(): "PRIMARY", _B: "PRIMARY"}),
    # no primary known (UNDEFINED, empty: Group Replication stopped, or the statement failed), or
    # the mode not read: no role at all rather than a guessed primary
    (("ONLINE", "ONLINE", "ONLINE"), True, "UNDEFINED", {}),
    (("OFFLINE", "ONLINE", "ONLINE"), True, "", {}),
    (("ONLINE", "ONLINE", "ONLINE"), True, None, {}),
    (("ONLINE", "ONLINE", "ONLINE"), None, _A, {}),
    # a primary outside this member's view
    (("ONLINE", "ONLINE", "ONLINE"), True, "dddd", {}),
], ids=["single-primary", "error-member", "unreachable-primary", "multi-primary", "undefined", "stopped", "not-read", "mode-unknown",
        "not-in-view"])
def test_member_roles_before_802_from_group_replication_primary_member(states, single_primary, primary, roles):
    """5.7 and 8.0.0-8.0.1 have no MEMBER_ROLE: the role is what 8.0.2+ would show, from the status
    variable group_replication_primary_member and group_replication_single_primary_mode."""
    members = [{"MEMBER_ID": m, "MEMBER_STATE": s} for m, s in zip((_A, _B, _C), states)]
    assert member_roles_before_802(members, single_primary, primary) == roles
