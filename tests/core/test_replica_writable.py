"""config_replica_writable: a replica with read_only = OFF, its exceptions (a ring's writer, group
members, channels left behind) and its remediation in each version's words."""
from __future__ import annotations

import pytest

from gtid_core.checks import ServerReplication, run_server_checks
from gtid_core.checks.server import writes_come_back
from gtid_core.snapshots import ChannelSnapshot, ServerSnapshot
from gtid_core.versions import MySQLVersion


def replica(read_only=False, super_read_only=False, version="8.4.3", name="r1"):
    return ServerSnapshot(name=name, read_only=read_only, super_read_only=super_read_only,
                          version=MySQLVersion.parse(version))


def running(name="", io="YES", sql="YES", **kw):
    return ChannelSnapshot(channel_name=name, io_running=io, sql_running=sql, **kw)


def writable(server, *channels, sources_of=None, group_member=False, sources_not_read=()):
    found = run_server_checks(server, None, ServerReplication(channels=channels, sources_of=sources_of or {},
                                                              group_member=group_member,
                                                              sources_not_read=sources_not_read))
    return [f for f in found if f.check_id == "config_replica_writable"]


def test_a_replicating_server_with_read_only_off_is_reported_once_for_all_its_channels():
    [f] = writable(replica(), running("a"), running("b", io="CONNECTING", sql="YES"),
                   sources_of={"r1": ["s1", "s2"]})
    assert f.severity.value == "warning" and f.server == "r1" and f.source is None and f.channel is None
    assert f.evidence["channels"] == ["a", "b"] and f.evidence["read_only"] is False
    assert "channel a, b" in f.detail and "errant transaction" in f.detail
    assert f.remediation.startswith("SET PERSIST super_read_only = ON")


@pytest.mark.parametrize("server", [replica(read_only=True), replica(read_only=True, super_read_only=True),
                                    replica(read_only=None, super_read_only=None),
                                    replica(read_only=False, super_read_only=True)])
def test_read_only_on_or_unknown_is_not_reported(server):
    assert writable(server, running()) == []


def test_read_only_on_without_super_read_only_is_not_reported():
    """The usual setting before 5.7.8 and on many fleets: only accounts with SUPER or
    CONNECTION_ADMIN can write (the docstring's "not seen")."""
    assert writable(replica(read_only=True, super_read_only=False), running()) == []


def test_a_server_that_does_not_replicate_is_not_reported():
    assert writable(replica()) == []                                                   # a source
    assert writable(replica(), running(io="NO", sql="NO")) == []                       # a channel left behind
    assert writable(replica(), running("group_replication_applier")) == []             # the group's own
    assert writable(replica(), running(), group_member=True) == []                     # the group decides


@pytest.mark.parametrize("channel", [running(io="NO", sql="YES", last_io_errno=13114), running(io="Yes", sql="No"),
                                     running(io="CONNECTING", sql="NO", last_io_errno=2003)])
def test_a_replica_with_one_thread_running_is_a_replica(channel):
    assert len(writable(replica(), channel)) == 1


@pytest.mark.parametrize("channel", [running(io="NO", sql="NO", last_io_errno=2003, receiver_last_error_number=2003),
                                     running(io="NO", sql="NO", last_sql_errno=1062)])
def test_both_threads_stopped_with_an_error_is_a_channel_left_behind(channel):
    """A promoted server keeps its channel to the old source, stopped, often with the receiver's
    last connection error (STOP REPLICA does not clear Last_IO_Errno): it is the new primary and
    writable by design."""
    assert writable(replica(), channel) == []


def test_the_writer_of_a_ring_is_not_reported_and_a_chain_is():
    two = {"r1": ["r2"], "r2": ["r1"]}
    three = {"r1": ["c"], "c": ["b"], "b": ["r1"]}
    chain = {"r1": ["b"], "b": ["a"], "a": []}
    into_a_ring = {"r1": ["a"], "a": ["b"], "b": ["a"]}   # replicates from a ring it is not part of
    assert writes_come_back("r1", two) and writes_come_back("r1", three)
    assert not writes_come_back("r1", chain) and not writes_come_back("r1", into_a_ring)
    assert writable(replica(), running(), sources_of=two) == []
    assert writable(replica(), running(), sources_of=three) == []
    assert len(writable(replica(), running(), sources_of=chain)) == 1
    assert len(writable(replica(), running(), sources_of=into_a_ring)) == 1
    assert len(writable(replica(), running())) == 1                                     # sources not known


def test_a_writable_replica_whose_source_was_not_read_is_not_judged():
    """Its source's channels are unknown this run: they could close a ring through it (a
    co-master pair whose passive side was unreachable tonight), so no finding rather than a
    false one; the source's collection error is what the run reports."""
    assert writable(replica(), running(), sources_not_read=("s1",)) == []
    assert len(writable(replica(), running(), sources_of={"r1": ["s1"], "s1": []})) == 1


@pytest.mark.parametrize("version, expected", [
    ("8.0.36", "SET PERSIST super_read_only = ON (it sets read_only too;"),
    ("5.7.44", "SET GLOBAL super_read_only = ON (it sets read_only too;"),
    ("5.7.7", "SET GLOBAL read_only = ON (super_read_only comes with 5.7.8: accounts with SUPER can still write;"),
    ("5.6.51", "SET GLOBAL read_only = ON (super_read_only comes with 5.7.8: accounts with SUPER can still write;"),
])
def test_the_remediation_is_in_the_replicas_words(version, expected):
    [f] = writable(replica(version=version, super_read_only=None if version < "5.7.8" else False), running())
    assert f.remediation.startswith(expected)
    assert ("option file" in f.remediation) is (not version.startswith("8."))
