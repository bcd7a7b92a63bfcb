"""duplicate_server_uuid in the Spark plan (jobs/audit.py ``identity_frame``) over one run's
in-memory servers and channels tables: twins across cluster labels, unlabelled servers, server_id
inside a replication group, and rows bounded by one identity."""
from __future__ import annotations

import datetime as dt
import json

import pytest

pytestmark = pytest.mark.spark

U = "aaaaaaaa-0000-4000-8000-000000000001"   # orders-1 and its restored copy shard-1
V = "bbbbbbbb-0000-4000-8000-000000000002"   # two unlabelled twins
DAY = dt.date(2026, 11, 23)


def uuid(n: int) -> str:
    return f"eeeeeeee-0000-4000-8000-{n:012d}"


def server(name, server_uuid, server_id, executed, cluster=None):
    return {"run_id": "r", "run_date": DAY, "server": name, "cluster": cluster, "host": "h", "port": 3306,
            "discovered": False, "status": "ok", "server_uuid": server_uuid, "server_id": server_id,
            "version": "9.7.4", "gtid_mode": "ON", "gtid_executed": executed, "gtid_purged": ""}


def channel(replica, source, name="", cluster=None):
    return {"run_id": "r", "run_date": DAY, "server": replica, "cluster": cluster, "channel_name": name,
            "status_statement": "SHOW REPLICA STATUS", "source_server": source,
            "source_problem": None if source else "no inventory server at h:3306"}


SERVERS = [
    server("orders-1", U, 1, f"{U}:1-120,{uuid(99)}:1-7", "orders"),
    server("orders-2", uuid(2), 2, f"{U}:1-120,{uuid(99)}:1-7", "orders"),
    server("shard-1", U, 11, f"{U}:1-130", "shards"),           # restored from orders-1 with auto.cnf
    server("agg", uuid(21), 21, f"{U}:1-130", "reporting"),     # multi-source: orders-1 and shard-1
    server("u1", V, 41, f"{V}:1-5"),
    server("u2", V, 42, "not-a-gtid-set"),                      # unreadable: its ranges are unknown
    server("u3", uuid(43), 31, ""),                             # shares c1's server_id, not its group
    server("u4", uuid(44), 44, ""),
    server("c1", uuid(51), 31, "", "chain"),
    server("c2", uuid(52), 32, "", "chain"),
    server("c3", uuid(53), 31, "", "chain"),                    # c1 -> c2 -> c3: drops c1's events
]
CHANNELS = [
    channel("orders-2", "orders-1", cluster="orders"),
    channel("agg", "orders-1", "orders", "reporting"), channel("agg", "shard-1", "shards", "reporting"),
    channel("c2", "c1", cluster="chain"), channel("c3", "c2", cluster="chain"),
    channel("u4", None),                                        # unresolved: links nothing
]


@pytest.fixture(scope="module")
def frames(spark):
    from jobs.audit import snapshot_frame
    from schemas import get_table

    servers = spark.createDataFrame(SERVERS, schema=get_table("servers").to_spark())
    binlogs = spark.createDataFrame([], schema=get_table("binary_logs").to_spark())
    channels = spark.createDataFrame(CHANNELS, schema=get_table("channels").to_spark())
    return snapshot_frame(servers, binlogs), channels


def test_twins_are_found_across_clusters_and_among_unlabelled_servers(frames):
    """One finding per twin and per server_id sharer: across labels, unlabelled ones apart, severity by meeting."""
    from jobs.audit import identity_frame, replication_group_frame

    snaps, channels = frames
    groups = replication_group_frame(channels)
    try:
        rows = {r["server"]: r.asDict() for r in identity_frame(snaps, channels, groups.frame).collect()}
    finally:
        groups.unpersist()
    assert {n: (r["severity"], r["cluster"]) for n, r in rows.items()} == {
        "orders-1": ("critical", "orders"), "shard-1": ("critical", "shards"),   # agg receives from both
        "u1": ("warning", None), "u2": ("warning", None),                        # nothing brings them together
        "c1": ("critical", "chain"), "c3": ("critical", "chain")}                # one group, one server_id
    orders = rows["orders-1"]
    assert (orders["gtid_set"], orders["gtid_count"]) == (f"{U}:1-120", 120)
    evidence = json.loads(orders["evidence"])
    assert (evidence["gtid_executed_of_uuid_on_shard-1"], evidence["common_with_shard-1"]) == (f"{U}:1-130", f"{U}:1-120")
    assert "agg replicates from both" in evidence["data_meets"]
    assert rows["u1"]["gtid_set"] is None and json.loads(rows["u1"]["evidence"])["common_with_u2"] is None
    assert "server_id 31" in rows["c3"]["title"] and "u3" not in rows["c3"]["detail"]


def test_identity_rows_carry_one_identity(frames):
    """Rows come from a groupBy on the identity: only shared identities, each row exactly its sharers."""
    from jobs.audit import identity_group_frame, replication_group_frame

    snaps, channels = frames
    groups = replication_group_frame(channels)
    try:
        rows = identity_group_frame(snaps, channels, groups.frame).collect()
        labels = {r["server"]: r["replication_group"] for r in groups.frame.collect()}
    finally:
        groups.unpersist()
    got = sorted((r["identity"], r["replication_group"], sorted(s["server"] for s in r["servers"])) for r in rows)
    assert got == [("server_id", "c1", ["c1", "c3"]),
                   ("server_uuid", None, ["orders-1", "shard-1"]),
                   ("server_uuid", None, ["u1", "u2"])]
    assert labels == {"orders-1": "agg", "orders-2": "agg", "shard-1": "agg", "agg": "agg",
                      "c1": "c1", "c2": "c1", "c3": "c1"}
    assert groups.converged and groups.rounds >= 2
