"""gtid_core.donors on hand-built snapshots: each condition that makes a server a sound donor for a
replica its source refuses, and the advice's words per version. The real-server proof is
tests/sandbox/test_donors.py."""
from __future__ import annotations

import pytest

from gtid_core import BinaryLog, GtidSet, MySQLVersion, ServerSnapshot
from gtid_core.donors import donor_refusal, fetch_from_donor_steps

S = "aaaaaaaa-0000-4000-8000-000000000001"
D = "dddddddd-0000-4000-8000-000000000004"
R = "bbbbbbbb-0000-4000-8000-000000000002"
V97 = MySQLVersion.parse("9.7.4-2")
MISSING = GtidSet.parse(f"{S}:8-10")


def server(name, uuid, executed, purged="", *, version=V97, logs=None, **kw) -> ServerSnapshot:
    """A GTID server with one binary log whose Previous_gtids is its gtid_purged (or ``logs``)."""
    defaults = dict(gtid_mode="ON", log_bin=True, log_replica_updates=True,
                    binary_logs=logs if logs is not None else (BinaryLog("binlog.000002",
                                                                         previous_gtids=GtidSet.parse(purged)),))
    defaults.update(kw)
    return ServerSnapshot(name=name, server_uuid=uuid, version=version,
                          gtid_executed=None if executed is None else GtidSet.parse(executed),
                          gtid_purged=GtidSet.parse(purged), **defaults)


# s purged 1-10; r stopped at 1-7; the donor d applied 1-12 and purged nothing
def source(**kw):
    return server("s", S, f"{S}:1-12", f"{S}:1-10", **kw)


def replica(**kw):
    return server("r", R, f"{S}:1-7", **kw)


def donor(executed=f"{S}:1-12", purged="", **kw):
    return server("d", D, executed, purged, **kw)


def test_a_sibling_holding_every_missing_transaction_in_its_binary_logs_is_a_donor():
    assert donor_refusal(replica(), source(), donor(), MISSING) is None


@pytest.mark.parametrize(("changes", "reason"), [
    ({"executed": None}, "gtid_executed is unknown"),
    ({"log_bin": False}, "binary log is off"),
    ({"log_bin": None}, "binary log is off or unknown"),
    ({"log_replica_updates": False}, "log_replica_updates is off"),
    ({"log_replica_updates": None}, "log_replica_updates is off or unknown"),
    ({"version": None}, "a version is unknown"),
    ({"version": MySQLVersion.parse("8.4.3")}, None),
    ({"executed": f"{S}:1-9"}, "lacks 1 of the missing transactions"),
    ({"executed": f"{S}:1-12,{D}:1-2"}, "would also send 2 transaction(s) the source does not have"),
    ({"purged": f"{S}:1-9"}, "would not stream"),                 # the donor purged some of them too
    # binary logs not read: gtid_purged decides from 5.6.22 (as for every pair), nothing before
    ({"binary_logs": None}, None),
    ({"binary_logs": None, "version": MySQLVersion.parse("5.6.21")}, "would not stream"),
])
def test_each_condition_refuses_the_donor_with_its_reason(changes, reason):
    got = donor_refusal(replica(), source(), donor(**changes), MISSING)
    assert got == reason if reason is None else reason in got


def test_what_the_donor_has_beyond_the_source_counts_unless_the_source_replicates_it():
    """d is s's own source, read after s under load: its newer writes reach s anyway. The same
    GTIDs on a sibling, with nothing upstream of s, are errant."""
    U = "eeeeeeee-0000-4000-8000-000000000005"
    s = server("s", S, f"{U}:1-5,{S}:1-12", f"{S}:1-10")
    upstream_donor = donor(executed=f"{U}:1-7,{S}:1-12")
    assert donor_refusal(replica(), s, upstream_donor, MISSING, upstream=GtidSet.parse(f"{U}:1-7,{S}:1-12")) is None
    assert "does not replicate (" + f"{U}:6-7)" in donor_refusal(replica(), s, upstream_donor, MISSING)
    assert "does not replicate" in donor_refusal(replica(), s, upstream_donor, MISSING,
                                                 upstream=GtidSet.parse(f"{U}:1-6"))


def test_a_donor_of_a_newer_series_than_the_replica_is_refused():
    old = replica(version=MySQLVersion.parse("8.0.36"))
    assert "newer series" in donor_refusal(old, source(version=MySQLVersion.parse("8.0.36")), donor(), MISSING)
    assert donor_refusal(old, source(), donor(version=MySQLVersion.parse("8.0.21")), MISSING) is None


def test_the_donor_must_not_refuse_the_replica_for_its_own_gtids():
    """r holds a GTID of d's uuid that d lacks (d was re-cloned): d refuses r with 1885."""
    r = server("r", R, f"{S}:1-7,{D}:5")
    assert "would not stream" in donor_refusal(r, source(), donor(), MISSING)


def test_back_on_its_source_the_replica_must_stream():
    """s's binary logs start after a set that neither r nor d has (a transaction only s applied and
    purged, never replicated): what d gives is not enough for the way back."""
    s = server("s", S, f"{S}:1-12,{R}:100", f"{S}:1-10,{R}:100",
               logs=(BinaryLog("binlog.000002", previous_gtids=GtidSet.parse(f"{S}:1-10,{R}:100")),))
    assert "back on its source" in donor_refusal(replica(), s, donor(), MISSING)


def test_a_replica_that_has_what_the_donor_has_extra_does_not_count_it():
    """d's extra GTIDs that r already has (r's own writes replicated to d) are not sent."""
    r = server("r", R, f"{S}:1-7,{R}:1-2")
    assert donor_refusal(r, source(), donor(executed=f"{S}:1-12,{R}:1-2"), MISSING) is None


def test_the_steps_name_both_addresses_the_wait_and_other_donors():
    text = fetch_from_donor_steps(replica="r", replica_version=V97, channel="orders", source="s",
                                  source_host="10.0.0.1", source_port=3306, donor=("d", "10.0.0.4", 3307),
                                  others=["e", "f", "g"], missing=MISSING)
    assert "d still has every missing transaction in its binary logs" in text
    assert "(so would e, f)" in text
    assert ("On r: STOP REPLICA FOR CHANNEL 'orders'; CHANGE REPLICATION SOURCE TO SOURCE_HOST = '10.0.0.4', "
            "SOURCE_PORT = 3307 FOR CHANNEL 'orders'; START REPLICA FOR CHANNEL 'orders'; wait until SELECT "
            f"GTID_SUBSET('{S}:8-10', @@GLOBAL.gtid_executed) returns 1; STOP REPLICA FOR CHANNEL 'orders'; "
            "CHANGE REPLICATION SOURCE TO SOURCE_HOST = '10.0.0.1', SOURCE_PORT = 3306 FOR CHANNEL 'orders'; "
            "START REPLICA FOR CHANNEL 'orders'.") in text


def test_the_steps_are_in_the_words_of_the_replicas_version_and_placeholders_stand_for_unknown_addresses():
    text = fetch_from_donor_steps(replica="r", replica_version=MySQLVersion.parse("8.0.21"), channel="",
                                  source="s", source_host=None, source_port=None, donor=("d", "h", 1),
                                  missing=MISSING)
    assert "On r: STOP SLAVE; CHANGE MASTER TO MASTER_HOST = 'h', MASTER_PORT = 1; START SLAVE;" in text
    assert "CHANGE MASTER TO MASTER_HOST = '<address of s>', MASTER_PORT = <port of s>; START SLAVE." in text
    assert "REPLICA" not in text.replace("replication account", "")


def test_the_default_channel_of_a_multi_source_replica_is_named():
    """Without FOR CHANNEL, STOP REPLICA stops every channel and CHANGE REPLICATION SOURCE TO is
    refused (1964) on a replica with several."""
    text = fetch_from_donor_steps(replica="r", replica_version=V97, channel="", source="s", source_host="h",
                                  source_port=1, donor=("d", "h", 2), missing=MISSING, multi_source=True)
    assert "On r: STOP REPLICA FOR CHANNEL ''; CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PORT = 2 " \
           "FOR CHANNEL ''; START REPLICA FOR CHANNEL '';" in text
