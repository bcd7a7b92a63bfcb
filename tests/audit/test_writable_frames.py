"""config_replica_writable in the Spark plan (jobs/audit.py ``server_frame`` with the channels and
the replication groups, ``audit_tasks.check_server_batches``): writable replicas are reported, the
writer of a ring, a group member, a server whose channel was left stopped and one in whose
replication group a source's channels were not read are not."""
from __future__ import annotations

import datetime as dt

import pytest

pytestmark = pytest.mark.spark

DAY = dt.date(2026, 11, 28)
AT = dt.datetime(2026, 11, 28, 3, 0, tzinfo=dt.timezone.utc)


def server(i, name, read_only):
    return {"run_id": "r", "run_date": DAY, "server": name, "cluster": "c", "host": f"h-{name}", "port": 3306,
            "discovered": False, "status": "partial" if name in PARTIAL else "ok", "server_uuid": f"{i:08d}-0000-4000-8000-000000000000",
            "server_id": i + 1, "version": "8.4.3", "gtid_mode": "ON", "gtid_executed": "", "gtid_purged": "",
            "log_bin": True, "log_replica_updates": True, "read_only": read_only,
            "super_read_only": read_only, "read_at": AT, "channel_count": None if name in PARTIAL else
            sum(1 for c in CHANNELS if c["server"] == name)}


def channel(replica, source, *, running=True):
    state = "Yes" if running else "No"
    return {"run_id": "r", "run_date": DAY, "server": replica, "cluster": "c", "channel_name": "",
            "status_statement": "SHOW REPLICA STATUS", "source_server": source, "source_host": f"h-{source}",
            "source_port": 3306, "auto_position": True, "io_running": state, "sql_running": state,
            "last_io_errno": 0, "last_sql_errno": 0}


#   a ──> r (writable: reported) ; m1 <──> m2 (a ring: m1, its writer, writable; m2 read-only)
#   m2 ──> t (writable, replicates from a ring it is not in: reported)
#   x ──> y ──> z ──> x (a ring of three: x writable, not reported)
#   a ──> g (writable, ONLINE in a Group Replication group: the group's to decide) ; a ──> o (writable,
#   OFFLINE in its group: reported) ; a ──> p (writable, its channel stopped: not replicating) ;
#   a ──> q (writable, source not resolved: reported)
#   n ──> f, f ──> n stopped (f, the former primary, repointed to n promoted in its place, writable:
#   its old stopped channel closes no ring, reported; n, writable, its only channel stopped: not)
#   v ──> u (u writable; v in the inventory but not read this run, no servers row: its channels,
#   which could close a ring through u, are unknown: not reported)
#   pp ──> w (w writable; pp read partially, its channels not read, channel_count NULL: not reported)
#   t2 ──> s2 ──> k (k writable, its source s2 read, but s2's source t2 not read: a ring
#   k ──> t2 ──> s2 ──> k cannot be ruled out: not reported)
WRITABLE = {"r", "m1", "t", "x", "g", "o", "p", "q", "a", "f", "n", "u", "w", "k"}
PARTIAL = {"pp"}
NAMES = ["a", "r", "m1", "m2", "t", "x", "y", "z", "g", "o", "p", "q", "f", "n", "u", "pp", "w", "s2", "k"]
CHANNELS = [channel("r", "a"), channel("m1", "m2"), channel("m2", "m1"), channel("t", "m2"),
            channel("y", "x"), channel("z", "y"), channel("x", "z"), channel("g", "a"), channel("o", "a"),
            channel("p", "a", running=False), channel("q", None), channel("f", "n"), channel("n", "f", running=False),
            channel("u", "v"), channel("w", "pp"), channel("s2", "t2"), channel("k", "s2")]


def test_writable_replicas_are_reported_and_a_rings_writer_is_not(spark):
    from jobs.audit import replication_group_frame, server_frame, snapshot_frame, with_group_state, _raw_spark_schema
    from jobs import audit_tasks
    from schemas import get_table

    def df(name, rows):
        schema = get_table(name)
        return spark.createDataFrame([{c.name: r.get(c.name) for c in schema.columns} for r in rows],
                                     schema=schema.to_spark())

    servers = df("servers", [server(i, n, n not in WRITABLE) for i, n in enumerate(NAMES)])
    channels = df("channels", CHANNELS)
    group = spark.createDataFrame([("g", "ONLINE", "9a1b0c00-0000-4000-8000-000000000000", None),
                                   ("o", "OFFLINE", "9a1b0c00-0000-4000-8000-000000000000", None)],
                                  "server string, member_state string, group_name string, view_change_uuid string")
    snaps = with_group_state(snapshot_frame(servers, df("binary_logs", [])), group)
    groups = replication_group_frame(channels)
    try:
        rows = (server_frame(snaps, None, channels, groups.frame, servers)
                .mapInArrow(audit_tasks.check_server_batches, _raw_spark_schema()).collect())
    finally:
        groups.unpersist()
    writable = sorted(r["server"] for r in rows if r["check_id"] == "config_replica_writable")
    assert writable == ["f", "o", "q", "r", "t"]
    assert {r["check_id"] for r in rows} == {"config_replica_writable"}   # nothing else on these servers
