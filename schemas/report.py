"""The report's input tables, written by ``gtid-audit audit`` on the executors.

The HTML report (``jobs/report.py``) reads these and the findings, never the snapshot tables:
what it shows of a pair (its source, its purge margin, its failover verdict), of a server (its
cluster and collection status) and of a cluster (its size, failures and risk) is computed once
by the audit, with the job's one row converter and the collector's resolved ``source_server``.
The driver then reads only bounded slices (the clusters it draws, the 25 purge-horizon rows it
shows) with the filters pushed into the read.
"""
from __future__ import annotations

from schemas.base import Column, LogicalType as L, TableSchema, register, run_columns

__all__ = ["REPORT_PAIRS", "REPORT_SERVERS", "REPORT_CLUSTERS", "REPORT_GROUPS", "REPORT_TABLES"]

C = Column

REPORT_PAIRS = register(TableSchema(
    name="report_pairs",
    version=2,
    upgrades_from=1,
    description="One row per replica channel of the run (an edge of the topology): its source as the collector "
                "resolved it, the collection status of both ends, its lag, the purge margin of a reconnect and the "
                "replica's failover verdict as a candidate of that source. NULL means unknown.",
    key=("run_id", "replica", "channel"),
    columns=run_columns() + (
        C("cluster", L.STRING, True, "cluster of the replica (configuration); NULL when not set"),
        C("replica", L.STRING, False, "the replica (inventory name)"),
        C("channel", L.STRING, False, "replication channel ('' = default channel)"),
        C("source", L.STRING, True, "channels.source_server: the resolved source; NULL when unresolved"),
        C("source_cluster", L.STRING, True, "cluster of the source"),
        C("replica_status", L.STRING, True, "servers.status of the replica"),
        C("source_status", L.STRING, True, "servers.status of the source; NULL when unresolved"),
        C("sql_delay", L.INT64, True, "the channel's SOURCE_DELAY (SQL_Delay) in seconds"),
        C("seconds_behind_source", L.INT64, True, "the channel's Seconds_Behind_Source as read (a delayed "
                                                  "replica's includes its SOURCE_DELAY); NULL when unknown: "
                                                  "the applier stopped, or it caught up with a stopped "
                                                  "receiver", since=2),
        C("lacking_count", L.INT64, True, "transactions of the source the replica lacks (would request on a "
                                          "reconnect); NULL when unknown or when it lacks none"),
        C("purge_margin", L.INT32, True, "binary logs the source can still purge before it refuses the replica "
                                         "(the position of the file a reconnect streams from); NULL when refused "
                                         "now or unknown (see reconnect)"),
        C("binary_logs", L.INT32, True, "binary logs of the source (SHOW BINARY LOGS)"),
        C("start_file", L.STRING, True, "the binary log a reconnect would stream from"),
        C("reconnect", L.STRING, True, "'streams' or 'refused' for a replica that lacks transactions; NULL when "
                                       "it lacks none or an input is unknown"),
        C("readiness_verdict", L.STRING, True, "failover_readiness.verdict of the replica as a candidate of this "
                                               "source; NULL when not modelled"),
        C("candidate_rank", L.INT32, True, "failover_readiness.candidate_rank of the replica"),
    ),
))

REPORT_SERVERS = register(TableSchema(
    name="report_servers",
    version=1,
    description="One row per server the report may draw: the inventory's servers of the run, and the servers "
                "known only from a finding (status NULL: not in the inventory).",
    key=("run_id", "server"),
    columns=run_columns() + (
        C("cluster", L.STRING, True, "cluster label; NULL when not set"),
        C("server", L.STRING, False, "inventory name"),
        C("status", L.STRING, True, "servers.status (ok, partial, failed); NULL when not in the inventory"),
    ),
))

REPORT_CLUSTERS = register(TableSchema(
    name="report_clusters",
    version=1,
    description="One row per cluster label of the run (NULL: the servers without one): its size, its "
                "collection failures and its open findings, for the ranking of the report.",
    key=("run_id", "cluster"),
    columns=run_columns() + (
        C("cluster", L.STRING, True, "cluster label; NULL for the servers without one"),
        C("servers", L.INT64, False, "servers of the cluster (report_servers rows)"),
        C("inventory_servers", L.INT64, False, "of which in the inventory of the run"),
        C("failed", L.INT64, False, "servers not collected, or not in the inventory"),
        C("partial", L.INT64, False, "servers partly collected"),
        C("pairs", L.INT64, False, "replica channels of the cluster (report_pairs rows and pairs known only "
                                   "from an open finding)"),
        C("critical", L.INT64, False, "open unsilenced critical findings"),
        C("warning", L.INT64, False, "open unsilenced warning findings"),
        C("info", L.INT64, False, "open unsilenced info findings"),
        C("silenced", L.INT64, False, "open silenced findings"),
        C("risk", L.INT64, False, "100 per critical, 10 per warning, 1 per info finding"),
    ),
))

REPORT_GROUPS = register(TableSchema(
    name="report_groups",
    version=1,
    description="One row per replication group member read in the run (Group Replication): the group the "
                "report draws it in, its state and role in its own view.",
    key=("run_id", "server"),
    columns=run_columns() + (
        C("cluster", L.STRING, True, "cluster label of the member; NULL when not set"),
        C("group_name", L.STRING, False, "group_replication_group_name, lower case"),
        C("server", L.STRING, False, "the member (inventory name)"),
        C("member_state", L.STRING, True, "its MEMBER_STATE in its own view (ONLINE, RECOVERING, OFFLINE, ERROR)"),
        C("member_role", L.STRING, True,
          "PRIMARY or SECONDARY (8.0.2+ MEMBER_ROLE; before, from group_replication_primary_member)"),
        C("member_version", L.STRING, True, "MEMBER_VERSION (8.0.2+)"),
        C("member_weight", L.INT64, True, "group_replication_member_weight"),
        C("single_primary_mode", L.BOOL, True, "group_replication_single_primary_mode"),
    ),
))

REPORT_TABLES = (REPORT_PAIRS, REPORT_SERVERS, REPORT_CLUSTERS, REPORT_GROUPS)
