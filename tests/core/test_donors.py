"""gtid_core.donors on hand-built snapshots: each condition that makes a server a sound donor for a
replica its source refuses, and the advice's words per version. The real-server proof is
tests/sandbox/test_donors.py."""
from __future__ import annotations

import pytest

from gtid_core import BinaryLog, GtidSet, MySQLVersion, ServerSnapshot
from gtid_core import donors
from gtid_core.donors import fetch_from_donor_steps

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


def donor_refusal(r, s, d, missing, *, upstream=None, unfiltered=True):
    """gtid_core.donors.donor_refusal of a donor whose channels filter nothing (unless told)."""
    return donors.donor_refusal(r, s, d, missing, upstream=upstream, unfiltered=unfiltered)


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


def test_before_5622_a_donor_whose_binary_logs_were_not_read_is_refused():
    """Without the gtid_purged check only the binary-log scan decides: unknown, so not named."""
    v = MySQLVersion.parse("5.6.21")
    got = donor_refusal(replica(version=v), source(version=v), donor(version=v, binary_logs=None), MISSING)
    assert "would not stream" in got


def test_replication_filters_on_the_donor_refuse_it_known_or_not():
    """A filtered transaction is logged by the donor as an empty one with its GTID."""
    assert "has replication filters" in donor_refusal(replica(), source(), donor(), MISSING, unfiltered=False)
    assert "filters are unknown" in donor_refusal(replica(), source(), donor(), MISSING, unfiltered=None)


@pytest.mark.parametrize(("donor_version", "replica_version", "replicates"), [
    ("8.0.36", "8.0.36", True), ("8.0.21", "8.0.36", True), ("8.0.36", "8.0.21", False),   # patch: older to newer only
    ("9.7.4", "8.4.3", False), ("5.7.44", "8.0.36", True), ("5.6.51", "5.7.44", True),
    ("5.6.51", "8.0.36", False), ("5.7.44", "8.4.3", False), ("8.0.36", "8.4.3", True),
    ("8.0.36", "9.7.4", False), ("8.4.3", "9.7.4", True), ("8.1.0", "9.0.1", True),
])
def test_the_versions_must_replicate_from_donor_to_replica(donor_version, replica_version, replicates):
    r, d = replica(version=MySQLVersion.parse(replica_version)), donor(version=MySQLVersion.parse(donor_version))
    got = donor_refusal(r, source(version=MySQLVersion.parse(replica_version)), d, MISSING)
    assert (got is None) == replicates, got
    if not replicates:
        assert "does not replicate to the replica's" in got


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


def test_the_steps_name_both_addresses_the_checks_the_wait_and_other_donors():
    text = fetch_from_donor_steps(replica="r", replica_version=V97, channel="orders", source="s",
                                  source_host="10.0.0.1", source_port=3306, source_purged=GtidSet.parse(f"{S}:1-10"),
                                  donor=("d", "10.0.0.4", 3307), donor_uuid=D, others=["e", "f", "g"], missing=MISSING)
    assert "d still has every missing transaction in its binary logs" in text
    assert "(so would e, f)" in text
    ch = " FOR CHANNEL 'orders'"
    assert (f"On r: STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO SOURCE_HOST = '10.0.0.4', SOURCE_PORT = 3307{ch}; "
            f"START REPLICA{ch}; check that SHOW REPLICA STATUS{ch} shows Replica_IO_Running Yes with Source_UUID "
            f"'{D}' (if it shows a Last_IO_Errno instead, or another Source_UUID, go back to s the same way: another "
            f"server answers there, or d purged them too); read SELECT @@GLOBAL.gtid_purged on s (the audit read "
            f"'{S}:1-10'); wait until SELECT GTID_SUBSET('<that set>', @@GLOBAL.gtid_executed) returns 1 (that set "
            f"includes the 3 r lacks, '{S}:8-10', and if it never does, d lacks what s purged since: go back and reprovision); STOP REPLICA{ch}; "
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST = '10.0.0.1', SOURCE_PORT = 3306{ch}; START REPLICA{ch}.") \
        in text


def test_the_steps_are_in_the_words_of_the_replicas_version_and_placeholders_stand_for_unknown_addresses():
    text = fetch_from_donor_steps(replica="r", replica_version=MySQLVersion.parse("8.0.21"), channel="",
                                  source="s", source_host=None, source_port=None, donor=("d", "h", 1), donor_uuid=D,
                                  missing=MISSING)
    assert "On r: STOP SLAVE; CHANGE MASTER TO MASTER_HOST = 'h', MASTER_PORT = 1; START SLAVE; " \
           f"check that SHOW SLAVE STATUS shows Slave_IO_Running Yes with Master_UUID '{D}' (" in text
    assert "CHANGE MASTER TO MASTER_HOST = '<address of s>', MASTER_PORT = <port of s>; START SLAVE." in text
    assert "REPLICA" not in text.replace("replication account", "")


def test_the_default_channel_of_a_multi_source_replica_is_named():
    """Without FOR CHANNEL, STOP REPLICA stops every channel and CHANGE REPLICATION SOURCE TO is
    refused (1964) on a replica with several."""
    text = fetch_from_donor_steps(replica="r", replica_version=V97, channel="", source="s", source_host="h",
                                  source_port=1, donor=("d", "h", 2), missing=MISSING, multi_source=True)
    assert "On r: STOP REPLICA FOR CHANNEL ''; CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h', SOURCE_PORT = 2 " \
           "FOR CHANNEL ''; START REPLICA FOR CHANNEL ''; check that SHOW REPLICA STATUS FOR CHANNEL '' shows " \
           "Replica_IO_Running Yes (if it shows" in text
