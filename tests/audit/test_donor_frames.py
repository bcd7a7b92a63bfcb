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


def server(name, executed, purged="", *, seconds, cluster="c"):
    at = AT + dt.timedelta(seconds=seconds)
    return {"run_id": "r", "run_date": DAY, "server": name, "cluster": cluster, "host": f"h-{name}", "port": 3306,
            "discovered": False, "status": "ok", "server_uuid": f"{seconds:08d}-0000-4000-8000-000000000000",
            "server_id": seconds + 1, "version": "9.7.4", "gtid_mode": "ON", "gtid_executed": executed,
            "gtid_purged": purged, "log_bin": True, "log_replica_updates": True, "read_started_at": at,
            "read_at": at}


def channel(replica, source, retrieved, *, running=True, errno=0, name=""):
    state = "Yes" if running else "No"
    return {"run_id": "r", "run_date": DAY, "server": replica, "cluster": "c", "channel_name": name,
            "status_statement": "SHOW REPLICA STATUS", "source_server": source, "source_host": f"h-{source}",
            "source_port": 3306, "source_uuid": U, "retrieved_gtid_set": retrieved, "auto_position": True,
            "io_running": state, "sql_running": "Yes", "last_io_errno": errno, "relay_tail_events": 0}


def binlog(server, previous):
    return {"run_id": "r", "run_date": DAY, "server": server, "seq": 1, "log_name": f"{server}-bin.000002",
            "file_size": 100, "encrypted": False, "previous_gtids": previous, "previous_gtids_read": True,
            "read_at": AT}


#   u ──> s ──> r (refused: s purged U:11-15)   r ──> x (replicates r: a loop, never a donor)
#               b ──(billing)──> r (r's other channel: b has it all too, but r already replicates from it)
#         ├──> d (a sibling with it all: the donor)
#         └──> e (a sibling with it all and an errant transaction: not a donor)
#   u, read last under load, has U:19-20 that s has not received: on its way to s, so u is a donor too
#   far (another cluster) has it all: not a candidate
B = "bbbbbbbb-0000-4000-8000-000000000002"   # b's own writes
SERVERS = [server("r", f"{U}:1-10,{B}:1-3", seconds=1), server("b", f"{U}:1-18,{B}:1-3", seconds=7), server("x", f"{U}:1-18", seconds=0),
           server("d", f"{U}:1-18", seconds=2), server("e", f"{U}:1-18,{E}:1", seconds=3),
           server("s", f"{U}:1-18", f"{U}:1-15", seconds=4), server("u", f"{U}:1-20", seconds=5),
           server("far", f"{U}:1-18", seconds=6, cluster="c2")]
CHANNELS = [channel("r", "s", f"{U}:1-10", running=False, errno=13114),
            channel("r", "b", f"{B}:1-3", name="billing"), channel("x", "r", f"{U}:1-18"),
            channel("d", "s", f"{U}:1-18"), channel("e", "s", f"{U}:1-18"), channel("s", "u", f"{U}:1-18")]
BINLOGS = [binlog("s", f"{U}:1-15"), binlog("b", ""), binlog("d", ""), binlog("e", ""), binlog("u", ""), binlog("x", ""),
           binlog("far", "")]


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
    assert json.loads(refused["evidence"])["donors"] == ["d", "u"]
    assert refused["remediation"].endswith("\n" + before[key]["remediation"])   # reprovisioning, the alternative
    assert refused["remediation"].startswith(
        "d still has every missing transaction in its binary logs and would send r nothing s lacks (so would u): ")
    # r has two channels: the default one is named, or STOP REPLICA would stop billing too
    ch = " FOR CHANNEL ''"
    assert (f"On r: STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h-d', SOURCE_PORT = 3306{ch}; "
            f"START REPLICA{ch}; wait until SELECT GTID_SUBSET('{U}:11-15', @@GLOBAL.gtid_executed) returns 1; "
            f"STOP REPLICA{ch}; CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'h-s', SOURCE_PORT = 3306{ch}; "
            f"START REPLICA{ch}.") in refused["remediation"]
    # every other finding as it was
    assert {k: r for k, r in after.items() if k != key} == {k: r for k, r in before.items() if k != key}
