"""Donors in the Spark plan (jobs/audit.py ``donor_frame``, ``with_donors``) over in-memory snapshot
tables: a replica its source refuses for purged transactions is told which servers of its cluster
still hold them; errant, looped, other-cluster and lacking servers are not named."""
from __future__ import annotations

import datetime as dt
import json

import pytest

pytestmark = pytest.mark.spark

U = "aaaaaaaa-0000-4000-8000-000000000001"   # the top source u
E = "eeeeeeee-0000-4000-8000-000000000005"   # e's own (errant) writes
DAY = dt.date(2026, 11, 28)
AT = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.timezone.utc)


def server(name, executed, purged="", *, seconds, cluster="c", channels=-1, binlog_filters=""):
    """A servers row; ``channels``: channel_count (-1: as many as CHANNELS lists, None: unread)."""
    at = AT + dt.timedelta(seconds=seconds)
    count = sum(c["server"] == name for c in CHANNELS) if channels == -1 else channels
    return {"run_id": "r", "run_date": DAY, "server": name, "cluster": cluster, "host": f"h-{name}", "port": 3306,
            "channel_count": count, "binlog_filters": binlog_filters,
            "discovered": False, "status": "ok", "server_uuid": f"{seconds:08d}-0000-4000-8000-000000000000",
            "server_id": seconds + 1, "version": "9.7.4", "gtid_mode": "ON", "gtid_executed": executed,
            "gtid_purged": purged, "log_bin": True, "log_replica_updates": True, "read_started_at": at,
            "read_at": at}


def channel(replica, source, retrieved, *, running=True, errno=0, name="", filters="", host=None):
    state = "Yes" if running else "No"
    return {"run_id": "r", "run_date": DAY, "server": replica, "cluster": "c", "channel_name": name,
            "replication_filters": filters, "status_statement": "SHOW REPLICA STATUS", "source_server": source,
            "source_host": host or f"h-{source}",
            "source_port": 3306, "source_uuid": U, "retrieved_gtid_set": retrieved, "auto_position": True,
            "io_running": state, "sql_running": "Yes", "last_io_errno": errno, "relay_tail_events": 0}


def binlog(server, previous):
    return {"run_id": "r", "run_date": DAY, "server": server, "seq": 1, "log_name": f"{server}-bin.000002",
            "file_size": 100, "encrypted": False, "previous_gtids": previous, "previous_gtids_read": True,
            "read_at": AT}


#   u ──> s ──> r (refused: s purged U:11-15)   r ──> x (replicates r: a loop, never a donor)
#         │     b ──(billing)──> r (r's other channel: b has it all too, but r already replicates from it)
#         ├──> d (a sibling with it all: the donor) ──> y (has it all too; reaches d at 'd.replicas')
#         ├──> e (a sibling with it all and an errant transaction: not a donor)
#         ├──> f (a sibling with it all through a replication filter: not a donor)
#         └──> g (a sibling with it all, its filters unknown: not a donor)
#   u, read last under load, has U:19-20 that s has not received: on its way to s, so u is a donor too
#   far (another cluster) has it all: not a candidate
#   p has it all, its channels unread (channel_count NULL): not a donor; q has it all, its binary log
#   filters (Binlog_Ignore_DB): not a donor
B = "bbbbbbbb-0000-4000-8000-000000000002"   # b's own writes
CHANNELS = [channel("r", "s", f"{U}:1-10", running=False, errno=13114),
            channel("r", "b", f"{B}:1-3", name="billing"), channel("x", "r", f"{U}:1-18"),
            channel("d", "s", f"{U}:1-18"), channel("y", "d", f"{U}:1-18", host="d.replicas"),
            channel("e", "s", f"{U}:1-18"), channel("f", "s", f"{U}:1-18", filters="Replicate_Ignore_DB=audit"),
            channel("g", "s", f"{U}:1-18", filters=None), channel("s", "u", f"{U}:1-18")]
SERVERS = [server("r", f"{U}:1-10,{B}:1-3", seconds=1), server("b", f"{U}:1-18,{B}:1-3", seconds=7),
           server("x", f"{U}:1-18", seconds=0), server("d", f"{U}:1-18", seconds=2),
           server("y", f"{U}:1-18", seconds=8), server("e", f"{U}:1-18,{E}:1", seconds=3),
           server("f", f"{U}:1-18", seconds=9), server("g", f"{U}:1-18", seconds=10),
           server("s", f"{U}:1-18", f"{U}:1-15", seconds=4), server("u", f"{U}:1-20", seconds=5),
           server("far", f"{U}:1-18", seconds=6, cluster="c2"),
           server("p", f"{U}:1-18", seconds=11, channels=None), server("q", f"{U}:1-18", seconds=12,
                                                                     binlog_filters="Binlog_Ignore_DB=audit")]
BINLOGS = [binlog(n, f"{U}:1-15" if n == "s" else "")
           for n in ("s", "b", "d", "y", "e", "f", "g", "u", "x", "far", "p", "q")]


def test_the_refused_replica_is_told_which_servers_still_hold_what_its_source_purged(spark):
    from jobs.audit import (donor_frame, output_of, pair_frame, pair_output_frame, resolved_pairs,
                            snapshot_frame, with_donors)
    from schemas import get_table

    def df(name, rows):
        schema = get_table(name)
        return spark.createDataFrame([{c.name: r.get(c.name) for c in schema.columns} for r in rows],
                                     schema=schema.to_spark())

    servers, channels = df("servers", SERVERS), df("channels", CHANNELS)
    snaps = snapshot_frame(servers, df("binary_logs", BINLOGS))
    findings = output_of(pair_output_frame(pair_frame(resolved_pairs(snaps, channels), snaps,
                                                      df("relay_log_tail", []))), "finding")
    before = {r["finding_key"]: r.asDict() for r in findings.collect()}
    after = {r["finding_key"]: r.asDict()
             for r in with_donors(findings, donor_frame(findings, snaps, servers, channels)).collect()}

    assert before.keys() == after.keys()
    (key,) = [k for k, r in after.items() if r["check_id"] == "source_purged_required_gtids"]
    refused = after[key]
    assert (refused["server"], refused["source"], refused["gtid_set"]) == ("r", "s", f"{U}:11-15")
    assert json.loads(refused["evidence"])["donors"] == ["d", "u", "y"]
    assert refused["remediation"].endswith("\n" + before[key]["remediation"])   # reprovisioning, the alternative
    assert refused["remediation"].startswith(
        "d still has every missing transaction in its binary logs and would send r nothing s lacks (so would u, y): ")
    # r has two channels: the default one is named, or STOP REPLICA would stop billing too; d is
    # reached at the address its replica y uses
    ch = " FOR CHANNEL ''"
    d_uuid = next(x["server_uuid"] for x in SERVERS if x["server"] == "d")
    assert (f"On r: STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'd.replicas', SOURCE_PORT = 3306{ch}; "
            f"START REPLICA{ch}; check that SHOW REPLICA STATUS{ch} shows Replica_IO_Running Yes with Source_UUID "
            f"'{d_uuid}' (if it shows a Last_IO_Errno instead, or another Source_UUID, go back to s the same way: "
            f"another server answers there, or d purged them too); read SELECT @@GLOBAL.gtid_purged on s (the audit "
            f"read '{U}:1-15'); wait until SELECT GTID_SUBSET('<that set>', @@GLOBAL.gtid_executed) returns 1 (that "
            f"set includes the 5 r lacks, '{U}:11-15', and if it never does, d lacks what s purged since: go back and reprovision); "
            f"STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h-s', SOURCE_PORT = 3306{ch}; "
            f"START REPLICA{ch}.") \
        in refused["remediation"]
    # every other finding as it was
    assert {k: r for k, r in after.items() if k != key} == {k: r for k, r in before.items() if k != key}


def test_when_the_sources_own_channel_filters_only_its_replicas_are_named(spark):
    """s's channel from u filters: s holds empty transactions for what it dropped, and only servers
    that got the same from s (its own replicas: d) may serve r; u, upstream, and y, d's replica, are not."""
    from jobs.audit import donor_frame, output_of, pair_frame, pair_output_frame, resolved_pairs, snapshot_frame
    from schemas import get_table

    def df(name, rows):
        schema = get_table(name)
        return spark.createDataFrame([{c.name: r.get(c.name) for c in schema.columns} for r in rows],
                                     schema=schema.to_spark())

    channels = [c if c["server"] != "s" else {**c, "replication_filters": "Replicate_Ignore_DB=scratch"}
                for c in CHANNELS]
    servers, channels = df("servers", SERVERS), df("channels", channels)
    snaps = snapshot_frame(servers, df("binary_logs", BINLOGS))
    findings = output_of(pair_output_frame(pair_frame(resolved_pairs(snaps, channels), snaps,
                                                      df("relay_log_tail", []))), "finding")
    [row] = donor_frame(findings, snaps, servers, channels).collect()
    assert [d["donor"] for d in row["donors"]] == ["d"]
