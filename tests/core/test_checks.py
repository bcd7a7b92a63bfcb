"""Checks -> Finding records: a positive and a negative case for every check, each seed scenario, and golden
scenarios captured on a real MySQL 9.7.4 pair."""
import dataclasses
import datetime as dt
import json
from pathlib import Path

from gtid_core.relay_log import events_from_rows
from gtid_core.snapshots import ChannelSnapshot, ServerSnapshot

DATA = Path(__file__).resolve().parents[1] / "data"

S = "3e11fa47-71ca-11e1-9e33-c80aa9429562"   # source's own uuid
R = "5a33bc69-93ec-33a3-b055-ea2cc1641784"   # replica's own uuid
R2 = "6b44cd7a-a4fd-44b4-c166-fb3dd2752895"  # a sibling replica
X = "4f22ab58-82db-22f2-af44-d91bb0530673"   # a former source whose data a server was restored from


def server(name, uuid, version="8.0.36", executed="", purged="", logs=(("binlog.000001", ""),), **variables):
    """A ServerSnapshot from server-shaped variables (strings, as SHOW GLOBAL VARIABLES returns them)."""
    v = {"server_uuid": uuid, "version": version, "gtid_mode": "ON", "enforce_gtid_consistency": "ON",
         "gtid_executed": executed, "gtid_purged": purged, "log_bin": "ON", "sync_binlog": "1",
         "innodb_flush_log_at_trx_commit": "1", "relay_log_recovery": "ON", "replica_parallel_workers": "4",
         "replica_preserve_commit_order": "ON"}
    v.update({k: v2 for k, v2 in variables.items()})
    v = {k: val for k, val in v.items() if val is not None}
    binlogs = None if logs is None else [{"Log_name": n, "File_size": 100, "Encrypted": "No", "Previous_gtids": p}
                                         for n, p in logs]
    return ServerSnapshot.from_rows(v, binary_logs=binlogs, name=name)


def channel(retrieved="", executed="", *, io="Yes", sql="Yes", auto="1", source_uuid=S, caught_up=True,
            io_errno="0", io_error="", sql_errno="0", sql_error="", old_names=False, connection=None,
            applier_configuration=None, **collector):
    """A ChannelSnapshot from a SHOW REPLICA STATUS-shaped row (SHOW SLAVE STATUS names with old_names);
    ``collector`` adds the collector's own columns (read_at, relay_tail_file, relay_tail_truncated)."""
    row = {
        "Source_Host": "10.0.0.1", "Source_Port": "3306", "Source_UUID": source_uuid,
        "Replica_IO_Running": io, "Replica_SQL_Running": sql, "Auto_Position": auto,
        "Retrieved_Gtid_Set": retrieved, "Executed_Gtid_Set": executed,
        "Last_IO_Errno": io_errno, "Last_IO_Error": io_error, "Last_SQL_Errno": sql_errno,
        "Last_SQL_Error": sql_error, "Source_Log_File": "binlog.000009", "Read_Source_Log_Pos": "5000",
        "Relay_Source_Log_File": "binlog.000009", "Exec_Source_Log_Pos": "5000" if caught_up else "4000",
        "Channel_Name": "",
    }
    if old_names:
        rename = {"Source_Host": "Master_Host", "Source_Port": "Master_Port", "Source_UUID": "Master_UUID",
                  "Replica_IO_Running": "Slave_IO_Running", "Replica_SQL_Running": "Slave_SQL_Running",
                  "Source_Log_File": "Master_Log_File", "Read_Source_Log_Pos": "Read_Master_Log_Pos",
                  "Relay_Source_Log_File": "Relay_Master_Log_File", "Exec_Source_Log_Pos": "Exec_Master_Log_Pos"}
        row = {rename.get(k, k): v for k, v in row.items() if k != "Channel_Name"}
    row.update(collector)
    return ChannelSnapshot.from_rows(row, connection_status=connection, applier_configuration=applier_configuration)


def real(scenario_name, file="relaylog_mysql97_scenarios.json"):
    """(replica, channel, source, relay_tail) built from rows captured on MySQL 9.7.4."""
    d = json.loads((DATA / file).read_text())
    sc = d[scenario_name] if scenario_name else d
    rep = ServerSnapshot.from_rows(sc["replica"]["variables"], binary_logs=sc["replica"]["binary_logs"],
                                   name="replica1")
    src = ServerSnapshot.from_rows(sc["source"]["variables"], binary_logs=sc["source"]["binary_logs"],
                                   name="source1")
    c = sc["channel"]
    ch = ChannelSnapshot.from_rows(c["replica_status"], connection_status=c["connection_status"],
                                   applier_status=c["applier_status"],
                                   applier_configuration=c["applier_configuration"])
    return rep, ch, src, events_from_rows(sc["relay_tail"])


def ids(findings):
    return sorted(f.check_id for f in findings)


def serious(findings):
    return [f for f in findings if f.severity.value in ("critical", "warning")]


import pytest  # noqa: E402

from gtid_core.checks import CHECKS, FleetContext, ReplicaGroup, run_pair_checks, run_server_checks  # noqa: E402
from gtid_core.findings import Severity  # noqa: E402
from gtid_core.gtid_set import GtidSet  # noqa: E402
from gtid_core.relay_log import RelayLogEvent  # noqa: E402
from gtid_core.versions import MySQLVersion  # noqa: E402

G = GtidSet.parse
FLEET = FleetContext(uuid_registry={S: "src", R: "rep", R2: "rep2"})


REPLICA_READ_AT = dt.datetime(2026, 11, 23, 2, 0, 0, 100000, tzinfo=dt.timezone.utc)
SOURCE_READ_AT = dt.datetime(2026, 11, 23, 2, 0, 0, 300000, tzinfo=dt.timezone.utc)


def in_order(replica, source):
    """The two snapshots stamped with read instants in the collector's planned order (replica first)."""
    replica = dataclasses.replace(replica, read_at=replica.read_at or REPLICA_READ_AT)
    if source is not None:
        source = dataclasses.replace(source, read_at=source.read_at or SOURCE_READ_AT)
    return replica, source


def pair(replica, ch, source, tail=None, fleet=FLEET):
    """run_pair_checks on snapshots read in the planned order (see in_order)."""
    replica, source = in_order(replica, source)
    return run_pair_checks(replica, ch, source, tail, fleet)


def one(findings, check_id):
    found = [f for f in findings if f.check_id == check_id]
    assert len(found) == 1, f"expected one {check_id}, got {ids(findings)}"
    return found[0]


# ---------------------------------------------------------------- healthy pairs

def test_real_97_healthy_pair_with_tagged_gtids_yields_nothing():
    """Golden 9.7.4 pair (tagged GTIDs, XA, compressed transactions) caught up: no finding at all."""
    rep, ch, src, tail = real("healthy")
    assert run_pair_checks(rep, ch, src, tail, FleetContext()) == []
    assert run_server_checks(src, None) == [] and run_server_checks(rep, None) == []


def test_synthetic_healthy_pair_with_tags_yields_nothing():
    """A replica equal to its source, tags included, with a complete relay tail: nothing."""
    src = server("src", S, executed=f"{S}:1-100:t1:1-5,{X}:1-10", logs=[("binlog.000001", ""),
                                                                       ("binlog.000002", f"{S}:1-50,{X}:1-10")])
    rep = server("rep", R, executed=f"{S}:1-100:t1:1-5,{X}:1-10")
    ch = channel(retrieved=f"{S}:40-100:t1:1-5", executed=f"{S}:1-100:t1:1-5,{X}:1-10")
    assert pair(rep, ch, src) == []


def test_lagging_replica_is_healthy():
    """A replica behind its source (applier busy, receiver running) is not a finding."""
    src = server("src", S, executed=f"{S}:1-200")
    rep = server("rep", R, executed=f"{S}:1-150")
    ch = channel(retrieved=f"{S}:100-180", executed=f"{S}:1-150", caught_up=False)
    assert pair(rep, ch, src) == []


# ---------------------------------------------------------------- replica_has_more_gtids

def test_replica_has_more_gtids_positive():
    """Source lost its binlog tail (sync_binlog != 1 crash): the replica has S:101-105 -> critical, with SQL."""
    src = server("src", S, executed=f"{S}:1-100")
    rep = server("rep", R, executed=f"{S}:1-105")
    f = one(pair(rep, channel(f"{S}:1-105", f"{S}:1-105"), src), "replica_has_more_gtids")
    assert f.severity is Severity.CRITICAL
    assert f.gtid_set == G(f"{S}:101-105") and f.gtid_count == 5
    assert f.server == "rep" and f.source == "src"
    assert f"SET GTID_NEXT='{S}:101'; BEGIN; COMMIT;" in f.remediation


def test_replica_has_more_gtids_negative_without_auto_position():
    """A channel without AUTO_POSITION does not run the server's check."""
    src = server("src", S, executed=f"{S}:1-100")
    rep = server("rep", R, executed=f"{S}:1-105")
    assert "replica_has_more_gtids" not in ids(pair(rep, channel(f"{S}:1-105", f"{S}:1-105", auto="0"), src))


@pytest.mark.parametrize("version", ["5.6.21-log", "5.6.23-log", "5.6.40-log", "5.7.44", "8.0.36"])
def test_errant_of_another_uuid_never_refused_on_any_release_line(version):
    """Errant transactions of the replica's own uuid: no source version refuses the replica (5.6.23+ and 5.7.6+
    compare only the source's own uuid, older sources compare nothing: server source, docs/checks.md), so no
    replica_has_more_gtids; errant_transactions is reported, attributed through the registry. Before the fix
    a 5.6 source was modelled as comparing the whole set: a false critical."""
    rep = server("rep", R, executed=f"{S}:1-100,{R}:1-3")
    ch = channel(f"{S}:90-100", f"{S}:1-100,{R}:1-3")
    findings = pair(rep, ch, server("src", S, version=version, executed=f"{S}:1-100"))
    assert "replica_has_more_gtids" not in ids(findings)
    e = one(findings, "errant_transactions")
    assert e.gtid_set == G(f"{R}:1-3") and e.severity is Severity.CRITICAL
    assert "rep" in e.detail


@pytest.mark.parametrize("version, refused", [("5.6.21-log", False), ("5.6.22-log", False), ("5.6.23-log", True),
                                               ("5.7.5", False), ("5.7.6", True), ("9.7.4", True)],
                         ids=["5.6.21", "5.6.22", "5.6.23", "5.7.5", "5.7.6", "9.7.4"])
def test_replica_has_more_gtids_per_release_line(version, refused):
    """Extra GTIDs of the source's own uuid: refused (critical) only where the source makes the check
    (Bug#18789758: 5.6.23, 5.7.6); older sources stream and the extra GTIDs stay errant_transactions."""
    src = server("src", S, version=version, executed=f"{S}:1-100", logs=[("b.000001", ""), ("b.000002", f"{S}:1-50")])
    rep = server("rep", R, version=version, executed=f"{S}:1-105")
    findings = pair(rep, channel(f"{S}:90-105", f"{S}:1-105"), src)
    assert ("replica_has_more_gtids" in ids(findings)) is refused
    assert one(findings, "errant_transactions").gtid_set == G(f"{S}:101-105")


# ---------------------------------------------------------------- purged checks (seed 000)

RESTORED = [("mysql-bin.000001", ""), ("mysql-bin.000002", f"{X}:1-100")]


def test_restored_source_post_5622_refuses():
    """Seed 000 from 5.6.22: the restored source's gtid_purged the replica lacks -> source_purged_required_gtids."""
    src = server("src", S, version="5.6.22-log", executed=f"{X}:1-100,{S}:1-3", purged=f"{X}:1-100", logs=RESTORED)
    rep = server("rep", R, version="5.6.22-log", executed=f"{X}:1-40,{S}:1-3")
    findings = pair(rep, channel(f"{S}:1-3", f"{X}:1-40,{S}:1-3"), src)
    f = one(findings, "source_purged_required_gtids")
    assert f.gtid_set == G(f"{X}:41-100") and f.severity is Severity.CRITICAL
    assert "silent_purged_gap" not in ids(findings)
    assert f.evidence["source_gtid_purged"] == f"{X}:1-100"


def test_restored_source_pre_5622_silent_gap():
    """Seed 000 before 5.6.22: same setup, the source would stream silently -> silent_purged_gap."""
    src = server("src", S, version="5.6.21-log", executed=f"{X}:1-100,{S}:1-3", purged=f"{X}:1-100", logs=RESTORED)
    rep = server("rep", R, version="5.6.21-log", executed=f"{X}:1-40,{S}:1-3")
    findings = pair(rep, channel(f"{S}:1-3", f"{X}:1-40,{S}:1-3"), src)
    f = one(findings, "silent_purged_gap")
    assert f.gtid_set == G(f"{X}:41-100") and f.severity is Severity.CRITICAL
    assert "source_purged_required_gtids" not in ids(findings)


@pytest.mark.parametrize("version", ["5.6.21-log", "5.6.22-log", "8.0.36"])
def test_purged_negative_when_replica_has_it(version):
    """A replica that has the whole purged set is fine on every version."""
    src = server("src", S, version=version, executed=f"{X}:1-100,{S}:1-3", purged=f"{X}:1-100", logs=RESTORED)
    rep = server("rep", R, version=version, executed=f"{X}:1-100,{S}:1-3")
    assert serious(pair(rep, channel(f"{S}:1-3", f"{X}:1-100,{S}:1-3"), src)) == []


def test_real_97_restored_source():
    """Golden 9.7.4: a source restored with SET GLOBAL gtid_purged; the replica was refused with 13114.
    The audit reports source_purged_required_gtids (the server's missing set) and the replication error."""
    rep, ch, src, tail = real("source_restored_with_gtid_purged")
    findings = run_pair_checks(rep, ch, src, tail, FleetContext())
    f = one(findings, "source_purged_required_gtids")
    assert f.gtid_set == G("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:1-5")
    err = one(findings, "replication_receiver_error")
    assert "13114" in err.title and "purged binary logs" in err.detail
    assert "errant_transactions" not in ids(findings)


def test_source_scan_finds_no_log():
    """A source whose every binary log starts after the replica's position refuses it (scan rule)."""
    src = server("src", S, executed=f"{S}:1-500", purged="", logs=[("b.000007", f"{S}:1-300")])
    rep = server("rep", R, executed=f"{S}:1-200")
    f = one(pair(rep, channel(f"{S}:150-200", f"{S}:1-200"), src), "source_purged_required_gtids")
    assert f.gtid_set == G(f"{S}:201-300")


# ---------------------------------------------------------------- replica_near_purge_horizon

# Three binary logs: b.000005 holds S:101-200 and t1:1-3, b.000006 S:201-250, b.000007 (active) S:251-300 t1:4-5.
HORIZON_LOGS = [("b.000005", f"{S}:1-100"), ("b.000006", f"{S}:1-200:t1:1-3"), ("b.000007", f"{S}:1-250:t1:1-3")]


def horizon_source(**kw):
    """A 9.7 source that purged S:1-100 and keeps three binary logs (HORIZON_LOGS)."""
    kw.setdefault("purged", f"{S}:1-100")
    kw.setdefault("logs", HORIZON_LOGS)
    kw.setdefault("version", "9.7.4")
    kw.setdefault("executed", f"{S}:1-300:t1:1-5")
    return server("src", S, **kw)


def stopped(executed, retrieved=""):
    """The replica (rep) holding ``executed`` and its channel with the receiver and applier stopped."""
    return server("rep", R, version="9.7.4", executed=executed), channel(retrieved, executed, io="No", sql="No")


def test_near_purge_horizon_stopped_replica_needs_oldest_file():
    """A stopped replica at S:150 / t1:2: the source would start at its oldest file b.000005, whose S:151-200 and
    t1:3 the replica lacks -> warning with exactly those GTIDs, margin 0, and the reconnect is not refused yet."""
    rep, ch = stopped(f"{S}:1-150:t1:1-2", retrieved=f"{S}:120-150")
    findings = pair(rep, ch, horizon_source())
    f = one(findings, "replica_near_purge_horizon")
    assert f.severity is Severity.WARNING
    assert f.gtid_set == G(f"{S}:151-200:t1:3") and f.gtid_count == 51
    assert f.evidence["start_file"] == "b.000005" and f.evidence["next_binary_log"] == "b.000006"
    assert f.evidence["binary_log_margin"] == 0 and f.evidence["source_binary_log_count"] == 3
    assert f.evidence["replica_needs_gtid_set"] == f"{S}:151-300:t1:3-5"
    assert "b.000005" in f.title and "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS" in f.detail
    assert ids(findings) == ["replica_near_purge_horizon", "replication_stopped"]
    stop = one(findings, "replication_stopped")     # one stopped receiver: the two findings name each other
    assert stop.remediation.startswith("Start it (START REPLICA)")
    assert "causes replica_near_purge_horizon on this channel" in stop.remediation
    assert "(replication_stopped on this channel): starting it once serves that finding and this one." in f.remediation


def test_stopped_receiver_that_the_source_would_refuse_is_not_told_to_start():
    """A fresh-user trial found replication_stopped advising START REPLICA to a replica whose source purged what it
    lacks: the start fails with 1236. It now says so and points at source_purged_required_gtids first."""
    rep, ch = stopped(f"{S}:1-90")
    findings = pair(rep, ch, horizon_source())
    assert ids(findings) == ["replication_stopped", "source_purged_required_gtids"]
    stop = one(findings, "replication_stopped")
    assert stop.evidence["start_refused_with"] == "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS"
    assert stop.remediation.startswith("Do not start the receiver yet: src would refuse it with "
                                       "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS. First do what "
                                       "source_purged_required_gtids on this channel says")
    assert "causes" not in stop.remediation              # nothing else of this channel follows from the stop


def test_a_multi_source_replicas_default_channel_gets_for_channel_too():
    """On a multi-source replica a statement without FOR CHANNEL acts on every channel (a RESET REPLICA would throw
    away the other channels' relay logs): the default channel's remediation asks for FOR CHANNEL '' as well; a
    one-channel replica's does not."""
    rep, ch = stopped(f"{S}:1-150:t1:1-2", retrieved=f"{S}:120-150")
    multi = FleetContext(uuid_registry={}, other_channels_gtids=G(f"{X}:1-7"))
    stop = one(pair(rep, ch, horizon_source(), fleet=multi), "replication_stopped")
    assert "rep has other channels, and without FOR CHANNEL a statement acts on all of them: add FOR CHANNEL ''" \
        in stop.remediation
    assert "FOR CHANNEL" not in one(pair(rep, ch, horizon_source()), "replication_stopped").remediation


def test_stopped_applier_alone_relates_nothing():
    """Only the applier stopped: the receiver runs, so nothing is attributed to a stopped receiver."""
    rep = server("rep", R, version="9.7.4", executed=f"{S}:1-150")
    findings = pair(rep, channel(f"{S}:120-150", f"{S}:1-150", sql="No"), horizon_source())
    stop = one(findings, "replication_stopped")
    assert stop.remediation == CHECKS["replication_stopped"].remediation


def test_near_purge_horizon_registered():
    """The check is in the registry: pair scope, warning, version 1, predicting ER_MASTER_HAS_PURGED_REQUIRED_GTIDS."""
    info = CHECKS["replica_near_purge_horizon"]
    assert (info.scope, info.default_severity, info.version) == ("pair", Severity.WARNING, 1)
    assert "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS" in info.server_error
    assert "binlog_expire_logs_seconds" in info.remediation


@pytest.mark.parametrize("executed, retrieved", [
    (f"{S}:1-300:t1:1-5", f"{S}:200-300:t1:1-5"),   # caught up
    (f"{S}:1-220:t1:1-3", ""),                      # needs S:221-300 / t1:4-5, none of them in b.000005
    (f"{S}:1-199:t1:1-3", f"{S}:150-200"),          # received everything of b.000005, only applied less
], ids=["caught_up", "needs_only_newer_files", "retrieved_covers_oldest_file"])
def test_near_purge_horizon_negative_when_oldest_file_not_needed(executed, retrieved):
    """A replica that needs nothing from the oldest binary log (caught up, or lacking only GTIDs of newer files,
    or having retrieved what it has not applied yet) is not near the horizon, even with its receiver stopped."""
    rep, ch = stopped(executed, retrieved)
    assert "replica_near_purge_horizon" not in ids(pair(rep, ch, horizon_source()))


def test_near_purge_horizon_single_binlog_nothing_needed():
    """One binary log and a caught-up (stopped) replica: the start file is the oldest only because it is the only one."""
    src = server("src", S, version="9.7.4", executed=f"{S}:1-40", logs=[("binlog.000001", "")])
    rep, ch = stopped(f"{S}:1-40")
    assert "replica_near_purge_horizon" not in ids(pair(rep, ch, src))


def test_near_purge_horizon_single_binlog_needed_is_warning():
    """One binary log, a stopped replica lacking S:31-40 that only that file holds: warning with the whole needed set."""
    src = server("src", S, version="9.7.4", executed=f"{S}:1-40", purged=f"{S}:1-10",
                 logs=[("binlog.000003", f"{S}:1-10")])
    rep, ch = stopped(f"{S}:1-30")
    f = one(pair(rep, ch, src), "replica_near_purge_horizon")
    assert f.gtid_set == G(f"{S}:31-40")
    assert f.evidence["next_binary_log"] is None and f.evidence["binary_log_margin"] == 0


def test_near_purge_horizon_single_binlog_running_receiver_is_nothing():
    """One binary log and a running receiver: what it lacks may be in flight (read order), and the active file
    cannot be purged before a rotation; no finding."""
    src = server("src", S, version="9.7.4", executed=f"{S}:1-40", logs=[("binlog.000001", "")])
    rep = server("rep", R, version="9.7.4", executed=f"{S}:1-30")
    assert "replica_near_purge_horizon" not in ids(pair(rep, channel(f"{S}:1-35", f"{S}:1-30"), src))


def test_near_purge_horizon_running_receiver_multi_binlog_is_reported():
    """A running receiver that still needs the oldest of several binary logs lags by the whole retention: warning."""
    rep = server("rep", R, version="9.7.4", executed=f"{S}:1-150:t1:1-3")
    f = one(pair(rep, channel(f"{S}:100-190:t1:1-3", f"{S}:1-150:t1:1-3", caught_up=False), horizon_source()),
            "replica_near_purge_horizon")
    assert f.gtid_set == G(f"{S}:191-200") and f.evidence["receiver_running"] is True


@pytest.mark.parametrize("source_kw, executed, other_check, other_set", [
    pytest.param({}, f"{S}:1-90", "source_purged_required_gtids", f"{S}:91-100",
                 id="already-purged"),  # past the horizon: source purged S:1-100, replica at S:90
    pytest.param({"purged": "", "logs": HORIZON_LOGS[1:]}, f"{S}:1-150",
                 "source_purged_required_gtids", None,
                 id="no-file-serves"),  # no Previous_gtids is a subset, nothing in gtid_purged
    pytest.param({}, f"{S}:1-150:301-302", "replica_has_more_gtids", f"{S}:301-302",
                 id="replica-has-more"),  # the source refuses it for having more of its GTIDs
    pytest.param({"version": "5.6.21-log", "executed": f"{S}:1-300",
                  "logs": [("b.000001", ""), ("b.000002", f"{S}:1-200")]}, f"{S}:1-50",
                 "silent_purged_gap", None,
                 id="old-source-skips-purged"),  # 5.6.21 streams while skipping purged GTIDs
])
def test_near_purge_horizon_silent_when_another_check_owns_it(source_kw, executed, other_check,
                                                              other_set):
    """A replica the source would refuse, or that an old source silently skips, is reported by that
    check (with exactly the GTIDs at stake, where given) and not also as near the horizon."""
    rep, ch = stopped(executed)
    findings = pair(rep, ch, horizon_source(**source_kw))
    f = one(findings, other_check)
    if other_set is not None:
        assert f.gtid_set == G(other_set)
    assert "replica_near_purge_horizon" not in ids(findings)


@pytest.mark.parametrize("logs", [None, [("b.000005", f"{S}:1-100"), ("b.000006", None), ("b.000007", None)]],
                         ids=["binary_logs_not_read", "previous_gtids_unknown"])
def test_near_purge_horizon_unknown_binary_logs_is_nothing(logs):
    """Without the binary log list or a Previous_gtids the start file is unknown: no finding."""
    rep, ch = stopped(f"{S}:1-150")
    assert "replica_near_purge_horizon" not in ids(pair(rep, ch, horizon_source(logs=logs)))


def test_near_purge_horizon_silent_without_auto_position():
    """A channel positioned by file and offset does not reconnect by GTID: no finding."""
    rep = server("rep", R, version="9.7.4", executed=f"{S}:1-150")
    ch = channel("", f"{S}:1-150", io="No", sql="No", auto="0")
    assert "replica_near_purge_horizon" not in ids(pair(rep, ch, horizon_source()))


# ---------------------------------------------------------------- errant transactions

def test_errant_whole_set_with_tags_and_attribution():
    """Errant GTIDs of several uuids (tags kept) are reported whole, attributed, with tagged empty-transaction SQL."""
    src = server("src", S, executed=f"{S}:1-100")
    rep = server("rep", R, executed=f"{S}:1-100,{R}:1-2:ops:7,{R2}:5")
    f = one(pair(rep, channel("", f"{S}:1-100,{R}:1-2:ops:7,{R2}:5"), src), "errant_transactions")
    assert f.gtid_set == G(f"{R}:1-2:ops:7,{R2}:5")
    assert f.gtid_count == 4
    assert "rep2" in f.evidence["errant_attribution"] and "rep" in f.evidence["errant_attribution"]
    assert f"SET GTID_NEXT='{R}:ops:7'; BEGIN; COMMIT;" in f.remediation
    assert f"SET GTID_NEXT='{R2}:5'; BEGIN; COMMIT;" in f.remediation
    assert f.remediation.count("BEGIN; COMMIT;") == 4

def test_errant_remediation_commits_on_the_source_alone():
    """The empty transactions go on the source (or its chain's top) only: they replicate to every replica,
    and the servers that have them skip them. A fresh-user trial found the advice asking for them on the
    source and on every replica as well, against the failover advice's "one of them is enough"."""
    src = server("src", S, executed=f"{S}:1-100")
    rep = server("rep", R, executed=f"{S}:1-100,{R}:1")
    f = one(pair(rep, channel("", f"{S}:1-100"), src), "errant_transactions")
    run_on = next(line for line in f.remediation.splitlines() if line.startswith("Run on "))
    assert run_on.startswith("Run on src alone, never on rep. They replicate from there to every replica, and each "
                             "server that has them already skips them. If that source is itself a replica, run them on "
                             "the top of its chain instead")
    assert run_on.endswith("check each with SELECT GTID_SUBSET('<the set>', @@GLOBAL.gtid_executed).")
    assert "every other replica" not in f.remediation


def test_errant_includes_retrieved():
    """Retrieved but unapplied GTIDs the source lacks count too (the replica announces them)."""
    src = server("src", S, executed=f"{S}:1-100")
    rep = server("rep", R, executed=f"{S}:1-100")
    f = one(pair(rep, channel(f"{X}:1", f"{S}:1-100", caught_up=False), src), "errant_transactions")
    assert f.gtid_set == G(f"{X}:1")
    assert "not in the fleet registry" in f.evidence["errant_attribution"]


@pytest.mark.parametrize("kind, value, uuid", [("LOCAL", None, R), ("UUID", X, X)])
def test_anonymous_assigned_gtids_are_not_errant(kind, value, uuid):
    """ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS (LOCAL: replica's uuid; UUID: the configured one) is not errant."""
    src = server("src", S, executed=f"{S}:1-10")
    rep = server("rep", R, executed=f"{S}:1-10,{uuid}:1-50")
    cfg = {"CHANNEL_NAME": "", "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE": kind,
           "ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE": value}
    findings = pair(rep, channel("", f"{S}:1-10,{uuid}:1-50", applier_configuration=cfg), src)
    assert "errant_transactions" not in ids(findings)
    without = pair(rep, channel("", f"{S}:1-10,{uuid}:1-50"), src)
    assert one(without, "errant_transactions").gtid_set == G(f"{uuid}:1-50")


def test_other_channels_are_not_errant():
    """Multi-source: GTIDs from the replica's other channels' sources are not errant for this channel."""
    src = server("src", S, executed=f"{S}:1-10")
    rep = server("rep", R, executed=f"{S}:1-10,{X}:1-7")
    fleet = FleetContext(uuid_registry={}, other_channels_gtids=G(f"{X}:1-7"))
    assert "errant_transactions" not in ids(pair(rep, channel("", f"{S}:1-10,{X}:1-7"), src, fleet=fleet))


def test_a_multi_source_replicas_own_writes_are_reported_on_its_first_channel_only():
    """GTIDs through none of the channels are errant towards each source alike: the first channel by
    name reports them; the other leaves them out (nothing else errant: no finding)."""
    src = server("src", S, executed=f"{S}:1-10")
    rep = server("rep", R, executed=f"{S}:1-10,{X}:1-7,{R}:1-2")
    first = FleetContext(uuid_registry={}, other_channels_gtids=G(f"{X}:1-7"),
                         channel_sources={"a_first": "src", "b_second": "xsrc"})     # src is this pair's source
    second = dataclasses.replace(first, channel_sources={"a_first": "xsrc", "b_second": "src"})
    reported = one(pair(rep, channel(f"{S}:1-10", Channel_Name="a_first"), src, fleet=first), "errant_transactions")
    assert reported.gtid_set == G(f"{R}:1-2") and "xsrc (channel 'b_second')" in reported.remediation
    assert "errant_transactions" not in ids(pair(rep, channel(f"{S}:1-10", Channel_Name="b_second"), src, fleet=second))


@pytest.mark.parametrize("confirmed, reporter", [(frozenset({"b_second"}), "b_second"), (frozenset(), "a_first"),
                                                 (None, "a_first"), (frozenset({"a_first", "b_second"}), "a_first")])
def test_own_writes_are_reported_on_the_first_channel_whose_read_order_confirms_them(confirmed, reporter):
    """The reporting channel is the first by name whose source was read after the replica, else the first by name:
    a replica whose 'a_first' source was read before it (unconfirmed there) has its own writes reported, confirmed,
    on 'b_second'; exactly one channel reports them whatever the read orders."""
    src = server("src", S, executed=f"{S}:1-10")
    rep = server("rep", R, executed=f"{S}:1-10,{X}:1-7,{R}:1-2")
    reported = []
    for name, other_source in (("a_first", "xsrc"), ("b_second", "xsrc")):
        sources = {"a_first": "src", "b_second": other_source} if name == "a_first" else \
            {"a_first": other_source, "b_second": "src"}
        fleet = FleetContext(uuid_registry={}, other_channels_gtids=G(f"{X}:1-7"), channel_sources=sources,
                             confirmed_channels=confirmed)
        assert fleet.shared_errant_channel == reporter
        found = [f for f in pair(rep, channel(f"{S}:1-10", Channel_Name=name), src, fleet=fleet)
                 if f.check_id == "errant_transactions"]
        reported += [(name, f.gtid_set) for f in found]
    assert reported == [(reporter, G(f"{R}:1-2"))]


# ---------------------------------------------------------------- a replica group's own view changes (issue #22)

GN = "a1b2c3d4-0000-4000-8000-00000000000a"    # the replica group's name
VCU = "a1b2c3d4-0000-4000-8000-00000000000b"   # its group_replication_view_change_uuid


def group_pair(version, executed, vcu=None, member=True):
    """run_pair_checks of a replica group's primary (group GN) on its channel from S."""
    src = server("src", S, version=version, executed=f"{S}:1-100")
    rep = server("rep", R, version=version, executed=executed)
    group = ReplicaGroup(GN, vcu) if member else None
    return pair(rep, channel(f"{S}:51-100", executed), src,
                fleet=FleetContext(uuid_registry={S: "src"}, replica_group=group))


@pytest.mark.parametrize("version", ["8.0.27", "8.0.36", "8.4.3"])
def test_view_changes_under_the_view_change_uuid_are_not_errant(version):
    """A healthy replica group with group_replication_view_change_uuid (InnoDB ClusterSet): its view
    changes are not errant; without the group known, the same sets are (the contrast)."""
    executed = f"{S}:1-100,{VCU}:1-3"
    assert "errant_transactions" not in ids(group_pair(version, executed, VCU))
    assert one(group_pair(version, executed, VCU, member=False), "errant_transactions").gtid_set == G(f"{VCU}:1-3")


def test_a_write_in_a_replica_group_with_a_view_change_uuid_is_errant_exactly():
    """A write in the replica group (its group name) is errant, critical, exactly that set; the
    view changes are left out and named in the evidence."""
    f = one(group_pair("8.0.36", f"{S}:1-100,{VCU}:1-3,{GN}:1-2", VCU), "errant_transactions")
    assert (f.severity, f.gtid_set) == (Severity.CRITICAL, G(f"{GN}:1-2"))
    assert G(f.evidence["excluded_view_changes"]) == G(f"{VCU}:1-3")


@pytest.mark.parametrize("version, vcu", [("8.0.21", None), ("8.0.36", "AUTOMATIC"), ("5.7.44", None)])
def test_group_name_gtids_before_83_without_view_change_uuid_are_info_only(version, vcu):
    """AUTOMATIC before 8.3: view changes share the group name with writes, so the group name's
    GTIDs give an info finding with their set, never a warning or a critical; a GTID of another
    UUID beside them is still critical, alone in the set."""
    healthy = group_pair(version, f"{S}:1-100,{GN}:1-3", vcu)
    assert serious(healthy) == []
    f = one(healthy, "errant_transactions")
    assert (f.severity, f.gtid_set) == (Severity.INFO, G(f"{GN}:1-3"))
    assert one(group_pair(version, f"{S}:1-100,{GN}:1-3", vcu, member=False),
               "errant_transactions").severity == Severity.CRITICAL
    mixed = one(group_pair(version, f"{S}:1-100,{GN}:1-3,{X}:1", vcu), "errant_transactions")
    assert (mixed.severity, mixed.gtid_set) == (Severity.CRITICAL, G(f"{X}:1"))
    assert G(mixed.evidence["group_name_gtids_ambiguous"]) == G(f"{GN}:1-3")


@pytest.mark.parametrize("version", ["8.3.0", "8.4.3", "9.7.4"])
def test_group_name_gtids_from_83_are_writes(version):
    """From 8.3 no view change is logged: the group name's GTIDs in the replica group are its writes,
    critical (as on the real 9.7.4 groups of tests/sandbox/test_group_replication.py)."""
    f = one(group_pair(version, f"{S}:1-100,{GN}:1-2"), "errant_transactions")
    assert (f.severity, f.gtid_set) == (Severity.CRITICAL, G(f"{GN}:1-2"))


# ---------------------------------------------------------------- incomplete relay log tail (seeds 002/004)

COMPLETE_TAIL = {"relay_tail_file": "relay.000002", "relay_tail_truncated": "0"}  # the collector read to the end


def _tail(last_kind):
    rows = [{"Log_name": "relay.000002", "Pos": 4, "Event_type": "Format_desc", "Server_id": 1, "End_log_pos": 123,
             "Info": "Server ver: 5.6.20-log, Binlog ver: 4"},
            {"Log_name": "relay.000002", "Pos": 123, "Event_type": "Previous_gtids", "Server_id": 1,
             "End_log_pos": 194, "Info": f"{S}:1-9"},
            {"Log_name": "relay.000002", "Pos": 194, "Event_type": "Gtid", "Server_id": 1, "End_log_pos": 242,
             "Info": f"SET @@SESSION.GTID_NEXT= '{S}:10'"},
            {"Log_name": "relay.000002", "Pos": 242, "Event_type": "Query", "Server_id": 1, "End_log_pos": 321,
             "Info": "BEGIN"},
            {"Log_name": "relay.000002", "Pos": 321, "Event_type": "Table_map", "Server_id": 1, "End_log_pos": 370,
             "Info": "table_id: 70 (test.t1)"},
            {"Log_name": "relay.000002", "Pos": 370, "Event_type": "Write_rows", "Server_id": 1, "End_log_pos": 414,
             "Info": "table_id: 70 flags: STMT_END_F"},
            {"Log_name": "relay.000002", "Pos": 414, "Event_type": "Xid", "Server_id": 1, "End_log_pos": 445,
             "Info": "COMMIT /* xid=20 */"}]
    return [RelayLogEvent.from_row(r) for r in (rows if last_kind == "complete" else rows[:-1])]


@pytest.mark.parametrize("version, severity", [("5.6.14-log", Severity.CRITICAL), ("5.6.20-log", Severity.WARNING)])
def test_incomplete_tail_before_576(version, severity):
    """Seed 002: before 5.7.6 the dangling GTID S:10 is already in Retrieved_Gtid_Set; before 5.6.15 it is never
    fetched again (critical), 5.6.15-5.7.5 re-fetch it through the workaround (warning)."""
    rep = server("rep", R, version=version, executed=f"{S}:1-9")
    ch = channel(f"{S}:1-10", f"{S}:1-9", io="No", caught_up=False, old_names=True, **COMPLETE_TAIL)
    f = one(pair(rep, ch, None, _tail("partial")), "incomplete_relay_log_tail")
    assert f.severity is severity
    assert f.gtid_set == G(f"{S}:10")
    assert "STOP SLAVE; RESET SLAVE" in f.remediation and "REPLICA" not in f.remediation    # its own statements
    assert "5.7.6" not in f.remediation and "IO_THREAD" not in f.remediation


def test_incomplete_tail_576_receiver_stopped_is_warning():
    """From 5.7.6 a stopped receiver mid-transaction is a warning; the GTID is not in Retrieved_Gtid_Set."""
    rep = server("rep", R, version="5.7.6", executed=f"{S}:1-9")
    ch = channel(f"{S}:1-9", f"{S}:1-9", io="No", **COMPLETE_TAIL)
    f = one(pair(rep, ch, None, _tail("partial")), "incomplete_relay_log_tail")
    assert f.severity is Severity.WARNING
    assert f.remediation.startswith("Restart the receiver: START SLAVE IO_THREAD. MySQL 5.7.6 kept")
    assert "RESET" not in f.remediation and "Before" not in f.remediation


@pytest.mark.parametrize("version, statement", [("8.0.22", "START REPLICA IO_THREAD"), ("9.7.4", "START REPLICA IO_THREAD"),
                                                (None, "From 5.7.6")])
def test_incomplete_tail_remediation_is_the_replicas_own(version, statement):
    """A fresh-user trial found "Before 5.7.6" advice on a 9.7.4 replica: the remediation now follows the replica's
    version and terminology; only an unknown version gets the text for both eras."""
    rep = server("rep", R, version=version, executed=f"{S}:1-9")
    ch = channel(f"{S}:1-9", f"{S}:1-9", io="No", **COMPLETE_TAIL)
    f = one(pair(rep, ch, None, _tail("partial")), "incomplete_relay_log_tail")
    assert statement in f.remediation
    assert ("Before 5.7.6" in f.remediation) is (version is None)


def test_incomplete_tail_576_receiver_running_is_nothing():
    """From 5.7.6 a running receiver caught mid-transaction is a transaction in flight: no finding."""
    rep = server("rep", R, version="8.0.36", executed=f"{S}:1-9")
    ch = channel(f"{S}:1-9", f"{S}:1-9", **COMPLETE_TAIL)
    assert "incomplete_relay_log_tail" not in ids(pair(rep, ch, None, _tail("partial")))


def test_incomplete_tail_gtid_in_retrieved_after_576_is_critical():
    """From 5.7.6 a dangling GTID that is nevertheless in Retrieved_Gtid_Set will not be fetched: critical."""
    rep = server("rep", R, version="8.0.36", executed=f"{S}:1-9")
    ch = channel(f"{S}:1-10", f"{S}:1-9", io="No", caught_up=False, **COMPLETE_TAIL)
    f = one(pair(rep, ch, None, _tail("partial")), "incomplete_relay_log_tail")
    assert f.severity is Severity.CRITICAL
    assert "STOP REPLICA; RESET REPLICA" in f.remediation and "IO_THREAD" not in f.remediation   # a restart would not fetch it


def test_complete_tail_is_nothing_on_old_servers():
    """A relay log ending after Xid yields no finding, even on 5.6.14."""
    rep = server("rep", R, version="5.6.14-log", executed=f"{S}:1-10")
    ch = channel(f"{S}:1-10", f"{S}:1-10", io="No", old_names=True, **COMPLETE_TAIL)
    assert "incomplete_relay_log_tail" not in ids(pair(rep, ch, None, _tail("complete")))


def test_real_97_receiver_stopped_mid_transaction():
    """Golden 9.7.4: receiver stopped inside a big UPDATE -> warning naming the GTID QUEUEING_TRANSACTION shows."""
    rep, ch, src, tail = real(None, "relaylog_mysql97_receiver_stopped_mid_transaction.json")
    # the capture is the whole newest relay log (relay.000003, from Pos 4 to its end)
    ch = dataclasses.replace(ch, relay_tail_file="relay.000003", relay_tail_truncated=False)
    findings = run_pair_checks(rep, ch, src, tail, FleetContext())
    f = one(findings, "incomplete_relay_log_tail")
    assert f.severity is Severity.WARNING
    assert f.evidence["dangling_gtid"] == ch.queueing_transaction
    assert "replication_stopped" in ids(findings)
    assert "replica_gtid_history_lost" not in ids(findings)  # the applier has not caught up


# ---------------------------------------------------------------- replica_gtid_history_lost (seed 004, 9.7)

def test_real_97_reset_on_replica_history_lost():
    """Golden 9.7.4: RESET BINARY LOGS AND GTIDS on the replica; Retrieved ⊄ gtid_executed with an idle applier."""
    rep, ch, src, tail = real("replica_reset_binary_logs_and_gtids")
    findings = run_pair_checks(rep, ch, src, tail, FleetContext())
    f = one(findings, "replica_gtid_history_lost")
    assert f.severity is Severity.WARNING
    assert f.gtid_set == G("b6e7b27c-e69b-11f1-8d81-02fc00000001:1-30:100:200:audit_tag:1-2:50:60")


def test_real_97_history_restored_is_nothing():
    """Golden 9.7.4: after SET GLOBAL gtid_purged restored the history, the pair is healthy again."""
    rep, ch, src, tail = real("replica_history_restored")
    assert serious(run_pair_checks(rep, ch, src, tail, FleetContext())) == []


def test_bug_72392_is_critical_on_5620():
    """Seed 004, Bug #72392: 5.6.20 replica after RESET MASTER; its last retrieved GTID will be applied twice."""
    rep = server("rep", R, version="5.6.20-log", executed="")
    ch = channel(f"{S}:1-10", "", old_names=True)
    f = one(pair(rep, ch, None, _tail("complete")), "replica_gtid_history_lost")
    assert f.severity is Severity.CRITICAL
    assert "72392" in f.detail and f"{S}:10" in f.detail


def test_history_lost_is_what_a_later_gtid_executed_still_lacks():
    """SHOW REPLICA STATUS reads Executed_Gtid_Set before the positions: a row of a busy healthy replica can show
    S:6-10 retrieved, not executed, and the applier caught up. The collector's later read of gtid_executed holds
    them: no finding. What the later read still lacks is reported, and without it the row alone decides."""
    rep = server("rep", R, executed=f"{S}:1-5")
    committed_meanwhile = channel(f"{S}:1-10", f"{S}:1-5", gtid_executed_reread=f"{S}:1-10")
    assert "replica_gtid_history_lost" not in ids(pair(rep, committed_meanwhile, None))
    partly = channel(f"{S}:1-10", f"{S}:1-5", gtid_executed_reread=f"{S}:1-8")
    f = one(pair(rep, partly, None), "replica_gtid_history_lost")
    assert f.gtid_set == G(f"{S}:9-10") and f.evidence["replica_gtid_executed_reread"] == f"{S}:1-8"
    after_reset = channel(f"{S}:1-10", "", gtid_executed_reread="")
    assert one(pair(server("rep", R, executed=""), after_reset, None),
               "replica_gtid_history_lost").gtid_set == G(f"{S}:1-10")
    assert one(pair(rep, channel(f"{S}:1-10", f"{S}:1-5"), None), "replica_gtid_history_lost").gtid_set \
        == G(f"{S}:6-10")


def test_history_lost_negative_while_applier_lags():
    """Retrieved ⊄ executed while the applier still has work is ordinary lag, not a loss."""
    rep = server("rep", R, executed=f"{S}:1-5")
    assert "replica_gtid_history_lost" not in ids(pair(rep, channel(f"{S}:1-10", f"{S}:1-5", caught_up=False), None))


# ---------------------------------------------------------------- holes

def test_holes_positive():
    """The replica lacks S:50-60 below its highest S GTID: replica_gtid_holes."""
    src = server("src", S, executed=f"{S}:1-100")
    rep = server("rep", R, executed=f"{S}:1-49:61-100")
    f = one(pair(rep, channel("", f"{S}:1-49:61-100"), src), "replica_gtid_holes")
    assert f.gtid_set == G(f"{S}:50-60")


def test_holes_negative_parallel_applier_in_flight():
    """Gaps covered by Retrieved_Gtid_Set (a parallel applier working out of order) are not holes."""
    src = server("src", S, executed=f"{S}:1-100")
    rep = server("rep", R, executed=f"{S}:1-49:61-100")
    ch = channel(f"{S}:40-100", f"{S}:1-49:61-100", caught_up=False)
    assert "replica_gtid_holes" not in ids(pair(rep, ch, src))


# ---------------------------------------------------------------- threads

def test_replication_error_old_wording():
    """A 5.6 'master has purged binary logs' 1236 error is reported with its meaning."""
    rep = server("rep", R, version="5.6.21-log", executed=f"{S}:1-5")
    msg = ("Got fatal error 1236 from master when reading data from binary log: 'The slave is connecting using "
           "CHANGE MASTER TO MASTER_AUTO_POSITION = 1, but the master has purged binary logs containing GTIDs "
           "that the slave requires.'")
    ch = channel(f"{S}:1-5", f"{S}:1-5", io="No", io_errno="1236", io_error=msg, old_names=True)
    f = one(pair(rep, ch, None), "replication_receiver_error")
    assert f.severity is Severity.CRITICAL and "purged binary logs" in f.detail
    assert "replication_stopped" not in ids(pair(rep, ch, None))


def test_replication_stopped_positive_and_negative():
    """A stopped applier without error is replication_stopped; running threads are not."""
    rep = server("rep", R, executed=f"{S}:1-5")
    assert one(pair(rep, channel(f"{S}:1-5", f"{S}:1-5", sql="No"), None), "replication_stopped")
    assert "replication_stopped" not in ids(pair(rep, channel(f"{S}:1-5", f"{S}:1-5"), None))


def test_a_named_channels_remediation_says_for_channel():
    """The START REPLICA of a named channel's remediation needs FOR CHANNEL: the finding says so; the
    default channel's does not."""
    rep = server("rep", R, executed=f"{S}:1-5")
    named = one(pair(rep, channel(f"{S}:1-5", f"{S}:1-5", sql="No", Channel_Name="orders"), None), "replication_stopped")
    assert named.remediation.endswith("add FOR CHANNEL 'orders' to each START, STOP or RESET REPLICA and CHANGE "
                                      "REPLICATION SOURCE TO statement above.")
    default = one(pair(rep, channel(f"{S}:1-5", f"{S}:1-5", sql="No"), None), "replication_stopped")
    assert "FOR CHANNEL" not in default.remediation


# ---------------------------------------------------------------- configuration (pair)

def test_config_auto_position_off():
    """Auto_Position = 0 is config_auto_position_off; 1 is not."""
    rep = server("rep", R, executed=f"{S}:1-5")
    assert one(pair(rep, channel(f"{S}:1-5", f"{S}:1-5", auto="0"), None), "config_auto_position_off")
    assert "config_auto_position_off" not in ids(pair(rep, channel(f"{S}:1-5", f"{S}:1-5"), None))


def test_config_relay_log_recovery_off_with_file_repositories():
    """relay_log_recovery OFF matters with FILE repositories; with TABLE (or none, 8.4+) it is not reported."""
    ch = channel(f"{S}:1-5", f"{S}:1-5")
    bad = server("rep", R, version="5.7.30", executed=f"{S}:1-5", relay_log_recovery="OFF",
                 relay_log_info_repository="FILE", master_info_repository="FILE")
    ok = server("rep", R, version="5.7.30", executed=f"{S}:1-5", relay_log_recovery="OFF",
                relay_log_info_repository="TABLE", master_info_repository="TABLE")
    assert one(pair(bad, ch, None), "config_relay_log_recovery_off")
    assert "config_relay_log_recovery_off" not in ids(pair(ok, ch, None))


def test_config_parallel_applier_without_commit_order():
    """Several workers without replica_preserve_commit_order is reported; with it, not."""
    ch = channel(f"{S}:1-5", f"{S}:1-5")
    bad = server("rep", R, executed=f"{S}:1-5", replica_parallel_workers="8", replica_preserve_commit_order="OFF")
    assert one(pair(bad, ch, None), "config_parallel_applier_without_commit_order")
    assert "config_parallel_applier_without_commit_order" not in ids(pair(server("rep", R, executed=f"{S}:1-5"),
                                                                         ch, None))


# ---------------------------------------------------------------- remediations in the server's own words

@pytest.mark.parametrize("version, start, auto_position, commit_order", [
    ("5.7.44", "START SLAVE", "STOP SLAVE; CHANGE MASTER TO MASTER_AUTO_POSITION = 1; START SLAVE.",
     "SET GLOBAL slave_preserve_commit_order = ON (needs the applier stopped). MySQL 5.7.44 cannot persist"),
    ("8.0.21", "START SLAVE", "STOP SLAVE; CHANGE MASTER TO MASTER_AUTO_POSITION = 1; START SLAVE.",
     "SET PERSIST slave_preserve_commit_order = ON (needs the applier stopped)."),
    ("8.0.22", "START REPLICA", "STOP REPLICA; CHANGE MASTER TO MASTER_AUTO_POSITION = 1; START REPLICA.",
     "SET PERSIST slave_preserve_commit_order = ON (needs the applier stopped)."),
    ("8.0.23", "START REPLICA", "STOP REPLICA; CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION = 1; START REPLICA.",
     "SET PERSIST slave_preserve_commit_order = ON (needs the applier stopped)."),
    ("9.7.4", "START REPLICA", "STOP REPLICA; CHANGE REPLICATION SOURCE TO SOURCE_AUTO_POSITION = 1; START REPLICA.",
     "SET PERSIST replica_preserve_commit_order = ON (needs the applier stopped)."),
])
def test_pair_remediations_are_in_the_words_of_the_replicas_version(version, start, auto_position, commit_order):
    """A remediation is pasted into the replica it names: START REPLICA is a syntax error before 8.0.22, CHANGE
    REPLICATION SOURCE TO before 8.0.23, replica_preserve_commit_order is slave_... before 8.0.26, and 5.7 has no
    SET PERSIST; 8.4+ accepts only today's words (gtid_core.syntax)."""
    rep = server("rep", R, version=version, executed=f"{S}:1-5", replica_parallel_workers="8",
                 replica_preserve_commit_order="OFF")
    findings = pair(rep, channel(f"{S}:1-5", f"{S}:1-5", sql="No", auto="0"), None)
    assert one(findings, "replication_stopped").remediation.startswith(f"Start it ({start})")
    assert one(findings, "config_auto_position_off").remediation == auto_position
    assert one(findings, "config_parallel_applier_without_commit_order").remediation.startswith(commit_order)


@pytest.mark.parametrize("version, expected", [
    ("5.7.44", "SET GLOBAL sync_binlog = 1. MySQL 5.7.44 cannot persist a setting from SQL: put the same value in "
               "the server's option file (my.cnf) too, or the next restart loses it."),
    ("8.0.36", "SET PERSIST sync_binlog = 1.")])
def test_server_remediations_are_in_the_words_of_the_servers_version(version, expected):
    [f] = run_server_checks(server("db1", S, version=version, executed=f"{S}:1", sync_binlog="0"), None)
    assert f.remediation == expected


@pytest.mark.parametrize("source_version, retention", [("5.7.44", "expire_logs_days"),
                                                       ("9.7.4", "binlog_expire_logs_seconds")])
def test_binary_log_retention_is_named_as_the_source_names_it(source_version, retention):
    """replica_near_purge_horizon's retention setting is the source's (it keeps the binary logs), whatever the
    replica's version: an 8.0 replica of a 5.7 source during an upgrade is told expire_logs_days."""
    rep, ch = stopped(f"{S}:1-150", retrieved=f"{S}:120-150")
    rep = dataclasses.replace(rep, version=MySQLVersion.parse("8.0.36"))
    f = one(pair(rep, ch, horizon_source(version=source_version, executed=f"{S}:1-300")), "replica_near_purge_horizon")
    assert f"extend its retention ({retention})" in f.remediation
    assert "START REPLICA" in f.remediation     # the receiver's statement: the replica's own words


# ---------------------------------------------------------------- unresolved source, unknowns

def test_unresolved_source_does_not_crash():
    """With source None the source-dependent checks are skipped; the replica's own checks still run."""
    rep = server("rep", R, executed=f"{S}:1-5,{R}:1")
    findings = pair(rep, channel(f"{S}:1-5", f"{S}:1-5", sql="No"), None)
    assert ids(findings) == ["replication_stopped"]
    assert findings[0].source is None


def test_unknown_sets_do_not_crash():
    """A replica whose gtid_executed is unknown yields no set-based finding rather than a guess."""
    rep = ServerSnapshot(name="rep", server_uuid=R)
    ch = ChannelSnapshot.from_rows({"Replica_IO_Running": "Yes", "Replica_SQL_Running": "Yes"})
    assert pair(rep, ch, server("src", S, executed=f"{S}:1-5")) == []


# ---------------------------------------------------------------- server checks against the previous run

def test_gtid_executed_regressed():
    """gtid_executed lost S:50-100 since the previous run: critical; a grown set is not."""
    prev = server("db1", S, executed=f"{S}:1-100,{X}:1-5")
    now = server("db1", S, executed=f"{S}:1-49,{X}:1-5")
    f = one(run_server_checks(now, prev), "gtid_executed_regressed")
    assert f.gtid_set == G(f"{S}:50-100") and f.severity is Severity.CRITICAL
    assert "gtid_executed_regressed" not in ids(run_server_checks(server("db1", S, executed=f"{S}:1-200,{X}:1-5"),
                                                                  prev))


def test_different_server_uuid_not_compared():
    """A server with a new server_uuid is a different server: no regression reported."""
    prev = server("db1", S, executed=f"{S}:1-100")
    now = server("db1", R, executed=f"{R}:1-3")
    assert run_server_checks(now, prev) == []


def test_source_uuid_went_back():
    """The own uuid's highest gno fell from 100 to 40: critical, with the GTIDs that will be reused."""
    prev = server("db1", S, executed=f"{S}:1-100")
    now = server("db1", S, executed=f"{S}:1-40")
    f = one(run_server_checks(now, prev), "source_uuid_went_back")
    assert f.gtid_set == G(f"{S}:41-100") and f.severity is Severity.CRITICAL
    assert "source_uuid_went_back" not in ids(run_server_checks(server("db1", S, executed=f"{S}:1-120"), prev))


def test_source_uuid_went_back_for_a_tag():
    """A tag of the own uuid whose numbers fell (t1: 9 -> 2) is reported even when the untagged ones grew."""
    prev = server("db1", S, executed=f"{S}:1-100:t1:1-9")
    now = server("db1", S, executed=f"{S}:1-120:t1:1-2")
    f = one(run_server_checks(now, prev), "source_uuid_went_back")
    assert f.gtid_set == G(f"{S}:t1:3-9") and f.severity is Severity.CRITICAL
    assert "source_uuid_went_back" not in ids(run_server_checks(server("db1", S, executed=f"{S}:1-100:t1:1-10"), prev))


def test_gtid_purged_jumped_after_reset_and_set_purged():
    """Seed 000's restore: RESET + SET GLOBAL gtid_purged adds X:1-100 never executed here; numbering went back."""
    prev = server("db1", S, executed=f"{S}:1-10", logs=[("binlog.000005", ""), ("binlog.000006", f"{S}:1-8")])
    now = server("db1", S, executed=f"{S}:1-10,{X}:1-100", purged=f"{S}:1-10,{X}:1-100",
                 logs=[("binlog.000001", "")], log_replica_updates="ON")
    f = one(run_server_checks(now, prev), "gtid_purged_jumped")
    assert f.gtid_set == G(f"{X}:1-100")


def test_gtid_purged_jumped_negative_for_normal_purge():
    """Purging the oldest binary logs moves gtid_purged within the previous history: not a jump."""
    prev = server("db1", S, executed=f"{S}:1-100", purged=f"{S}:1-10",
                  logs=[("binlog.000005", f"{S}:1-10"), ("binlog.000006", f"{S}:1-60")])
    now = server("db1", S, executed=f"{S}:1-150", purged=f"{S}:1-60", logs=[("binlog.000006", f"{S}:1-60"),
                                                                            ("binlog.000007", f"{S}:1-120")])
    assert run_server_checks(now, prev) == []


def test_gtid_purged_jumped_negative_when_purge_explains_it():
    """Everything of the previous run purged and its binary logs gone: short retention, not reported."""
    prev = server("db1", S, executed=f"{S}:1-100", purged="", logs=[("binlog.000005", "")])
    now = server("db1", S, executed=f"{S}:1-300", purged=f"{S}:1-250", logs=[("binlog.000009", f"{S}:1-250")])
    assert "gtid_purged_jumped" not in ids(run_server_checks(now, prev))


# ---------------------------------------------------------------- configuration (server)

@pytest.mark.parametrize(
    "variables, check_id",
    [
        ({"gtid_mode": "OFF_PERMISSIVE"}, "gtid_mode_off"),
        ({"enforce_gtid_consistency": "WARN"}, "config_enforce_gtid_consistency_off"),
        ({"sync_binlog": "0"}, "config_sync_binlog"),
        ({"innodb_flush_log_at_trx_commit": "2"}, "config_innodb_flush_log_at_trx_commit"),
    ],
)
def test_server_config_positive(variables, check_id):
    """Each risky setting yields its config finding, and only that one."""
    assert ids(run_server_checks(server("db1", S, executed=f"{S}:1", **variables), None)) == [check_id]


def test_server_config_unknown_is_nothing():
    """Settings the server did not report (None) yield nothing."""
    s = ServerSnapshot.from_rows({"server_uuid": S})
    assert run_server_checks(s, None) == []


def test_every_emitted_check_is_registered():
    """Every check id the checks produce is in CHECKS with its version."""
    for cid in ["replica_has_more_gtids", "source_purged_required_gtids", "silent_purged_gap",
                "errant_transactions", "incomplete_relay_log_tail", "replica_gtid_history_lost",
                "replica_gtid_holes", "replication_receiver_error", "replication_applier_error",
                "replication_stopped", "gtid_executed_regressed",
                "gtid_purged_jumped", "source_uuid_went_back", "gtid_mode_off",
                "config_enforce_gtid_consistency_off", "config_auto_position_off", "config_relay_log_recovery_off",
                "config_sync_binlog", "config_innodb_flush_log_at_trx_commit",
                "config_parallel_applier_without_commit_order", "replica_near_purge_horizon"]:
        assert CHECKS[cid].check_id == cid and CHECKS[cid].version >= 1


def test_unreadable_relay_tail_is_info_not_crash():
    """A Gtid row whose Info cannot be read becomes an info finding, not an exception."""
    rep = server("rep", R, executed=f"{S}:1-9")
    bad = [RelayLogEvent.from_row({"Log_name": "relay.000002", "Pos": 4, "Event_type": "Format_desc",
                                   "Server_id": 1, "End_log_pos": 120, "Info": ""}),
           RelayLogEvent.from_row({"Log_name": "relay.000002", "Pos": 120, "Event_type": "Gtid", "Server_id": 1,
                                   "End_log_pos": 200, "Info": "garbled"})]
    ch = channel(f"{S}:1-9", f"{S}:1-9", io="No", **COMPLETE_TAIL)
    f = one(pair(rep, ch, None, bad), "incomplete_relay_log_tail")
    assert f.severity is Severity.INFO and "garbled" in f.detail


@pytest.mark.parametrize("purged, salvageable, lost", [
    ("", "{R}:1-3", None),
    ("{R}:1-2", "{R}:3", "{R}:1-2"),
    ("{S}:1-50,{R}:1-3", None, "{R}:1-3"),
], ids=["all-in-binlogs", "some-purged", "all-purged"])
def test_errant_evidence_splits_salvageable_from_lost(purged, salvageable, lost):
    """errant_transactions says which errant GTIDs are still in the replica's binary logs and which
    are in its gtid_purged only (lost: the replica must never be promoted); the detail says so."""
    rep = server("rep", R, executed=f"{S}:1-100,{R}:1-3", purged=purged.format(S=S, R=R))
    ch = channel(f"{S}:90-100", f"{S}:1-100,{R}:1-3")
    e = one(pair(rep, ch, server("src", S, executed=f"{S}:1-100")), "errant_transactions")
    want = {k: None if v is None else v.format(S=S, R=R) for k, v in (("s", salvageable), ("l", lost))}
    assert e.evidence["errant_salvageable"] == (want["s"] or "")
    assert e.evidence["errant_lost"] == (want["l"] or "")
    assert ("never promote it" in e.detail) is (lost is not None)
