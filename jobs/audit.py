"""The audit stage: one collected run's snapshot tables -> findings, history, the alert feed.

Data flow (docs/audit.md has the table contracts). Every arrow is a Spark join or a task over
Arrow batches (``jobs.audit_tasks``); rows stay on the executors:

1. snapshots: ``servers`` + ``binary_logs`` -> one snapshot row per readable server;
2. pairs: ``channels`` whose ``source_server`` the collector resolved, joined with the replica's
   snapshot and relay-log tail, cut into rows of at most 16 pairs of one source and joined with
   the source's snapshot (its binary-log headers travel once per row) -> ``pair_batches``: the
   pair checks' findings and the report's purge horizons; the same pairs without relay tails,
   one row per source with its snapshot -> ``failover_batches``: the failover model, computed once per source,
   its findings and ``failover_readiness`` rows; replication groups likewise
   (``group_batches``: group findings and the elected member's readiness rows); a replica its
   source refuses for purged transactions, joined with each readable server of its and its
   source's clusters -> ``donor_batches``: where it can still fetch them (``with_donor_batches``
   puts the steps in its finding);
3. servers: each snapshot with the previous audited run's -> ``check_server_batches``;
   identities: the snapshots grouped by server_uuid, and by (replication group, server_id) with
   the groups from a label propagation over the channels -> ``identity_batches``;
4. job findings: failed/partial servers with their ``collection_errors``, unresolved channels
   with the UUID registry;
5. one finding per ``finding_key`` with silences applied; an outer join with the previous run's
   findings gives ``first_seen``, resolved and carried rows, and the alert events;
6. writes, one Delta commit each: ``findings``, ``alerts``, ``uuid_registry`` (a join of the
   old registry with this run's servers); then the JSON-lines feed and Alertmanager (streamed
   from the ``alerts`` table), then ``run_summary`` (aggregates), which marks the run audited.

The driver holds counters, the list of runs and the alert payloads it posts in chunks; the UUID
registry is joined to the pairs (each carries the owners of the UUIDs it holds), never collected.
Also ``gtid-audit findings`` (read with delta-rs, no Spark) and ``gtid-audit explain``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import difflib
import functools
import json
import logging
import sys
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobs import audit_tasks
from jobs.audit_tasks import FINAL_FINDING_COLUMNS, RAW_FINDING_COLUMNS
from jobs.config import AuditSettings, GtidAuditConfig, Silence
from jobs.history import severity_rank
from jobs.silences import active_silences, expired_silences, rules_of

__all__ = [
    "AuditError",
    "AuditOutcome",
    "exit_code_for",
    "pick_runs",
    "audit_run",
    "select_findings",
    "check_catalogue",
    "explain_text",
    "register",
]

log = logging.getLogger("gtid_audit.audit")

#: Alert payloads posted to Alertmanager per request.
ALERT_CHUNK = 500


class AuditError(RuntimeError):
    """Raised when the audit cannot run at all: no collected run, an unknown run id. The
    message names the run."""


def exit_code_for(rows: Iterable[Mapping[str, Any]], fail_on: str) -> int:
    """2 when an open, unsilenced finding has a severity at or above ``fail_on``; else 0.
    ``fail_on='never'`` always gives 0."""
    if fail_on == "never":
        return 0
    threshold = severity_rank(fail_on)
    for r in rows:
        if r.get("status") == "open" and not r.get("silenced") and severity_rank(r["severity"]) >= threshold:
            return 2
    return 0


def pick_runs(runs: Sequence[Mapping[str, Any]], audited: Iterable[str],
              run_id: str | None) -> tuple[Mapping[str, Any], str | None]:
    """(the run to audit, the previous audited run's id). ``run_id=None`` means the newest
    collected run; the previous run is the newest *audited* run that started before it."""
    if not runs:
        raise AuditError("no collected run found (the runs table is empty or missing): run collect first")
    by_id = {r["run_id"]: r for r in runs}
    if run_id is None:
        current = max(runs, key=lambda r: (r["started_at"], r["run_id"]))
    elif run_id in by_id:
        current = by_id[run_id]
    else:
        raise AuditError(f"run {run_id!r} is not in the runs table")
    done = set(audited)
    earlier = [r for r in runs if r["run_id"] in done and r["run_id"] != current["run_id"]
               and r["started_at"] < current["started_at"]]
    previous = max(earlier, key=lambda r: (r["started_at"], r["run_id"]))["run_id"] if earlier else None
    return current, previous


# ---------------------------------------------------------------------------------------------
# the Spark plan

_BINLOG_FIELDS = ("seq", "log_name", "file_size", "encrypted", "previous_gtids", "previous_gtids_read")
_TAIL_FIELDS = ("seq", "log_name", "pos", "event_type", "event_server_id", "end_log_pos", "gtid", "query_kind")


def snapshot_frame(servers_df, binlogs_df):
    """One row per readable server: its columns plus ``binary_logs`` (list of structs, NULL when
    none were read)."""
    from pyspark.sql import functions as F

    cols = ["server", "cluster", "status", *audit_tasks._SERVER_COLUMNS]
    logs = binlogs_df.groupBy("server").agg(F.collect_list(F.struct(*_BINLOG_FIELDS)).alias("binary_logs"))
    return servers_df.where(F.col("status") != "failed").select(*cols).join(logs, "server", "left")


_UUID_PATTERN = "([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"


def uuid_owner_frame(snapshots_df, channels_df, registry_df):
    """Per readable server, the UUID registry's entries of the UUIDs in its gtid_executed and its
    channels' Retrieved_Gtid_Set (``server``, ``uuid_owners``: list of ``server_uuid``, ``server``):
    a join, so each pair carries the owners of the UUIDs it can hold and the registry is never
    collected to the driver."""
    from pyspark.sql import functions as F

    def uuids(df, column):
        return df.select("server", F.explode(F.regexp_extract_all(
            F.lower(F.coalesce(F.col(column), F.lit(""))), F.lit(_UUID_PATTERN), F.lit(1))).alias("_u"))

    held = uuids(snapshots_df, "gtid_executed").unionByName(uuids(channels_df, "retrieved_gtid_set")).distinct()
    owners = registry_df.select(F.col("server_uuid").alias("_u"), F.col("server").alias("_o"))
    return (held.join(owners, "_u")
            .groupBy("server").agg(F.collect_list(F.struct(F.col("_u").alias("server_uuid"),
                                                           F.col("_o").alias("server"))).alias("uuid_owners")))


#: Pairs per row of :func:`pair_frame`: a source with hundreds of replicas is cut into rows of at
#: most this many pairs, each row with the source's snapshot (binary-log headers included), so a
#: row's size does not grow with the source's fan-out and the headers travel once per 16 pairs.
PAIRS_PER_ROW = 16


def _column_or_null(df, name: str, spark_type: str = "string"):
    """``df``'s column ``name``, or NULL of ``spark_type`` where a table written before the column
    existed lacks it (read as unknown)."""
    from pyspark.sql import functions as F

    return F.col(name) if name in df.columns else F.lit(None).cast(spark_type)


def resolved_pairs(snapshots_df, channels_df):
    """One row per channel the collector resolved to a source (``channels.source_server``) whose
    replica is readable: ``source_server``, ``server``, ``channel_name``, ``channel`` (the
    channel's columns), ``replica`` (its snapshot without binary logs) and ``all_channels``
    (every channel of the replica with its source's gtid_executed and the read instants of both:
    multi-source replicas). Both
    the pair checks (:func:`pair_frame`) and the failover model (:func:`failover_frame`) read it:
    persist it."""
    from pyspark.sql import functions as F

    rep_cols = [c for c in snapshots_df.columns if c != "binary_logs"]
    rep = snapshots_df.select(F.col("server").alias("_rep"), F.struct(*rep_cols).alias("replica"))
    wanted = [c for c in audit_tasks._CHANNEL_COLUMNS if c in channels_df.columns]
    ch = channels_df.where(F.col("source_server").isNotNull()).select(
        "server", "channel_name", "source_server", F.struct(*wanted).alias("channel"))
    # each channel's and its source's read instants: which channels' read order held, so that a
    # multi-source replica's own writes are reported on one that confirms them (shared_errant_channel)
    src_exec = snapshots_df.select(F.col("server").alias("_s"), F.col("gtid_executed").alias("source_gtid_executed"),
                                   _column_or_null(snapshots_df, "read_started_at", "timestamp").alias("source_read_started_at"),
                                   _column_or_null(snapshots_df, "read_at", "timestamp").alias("source_read_at"))
    every = (channels_df.select("server", "channel_name", "retrieved_gtid_set", "source_server",
                                _column_or_null(channels_df, "read_at", "timestamp").alias("channel_read_at"))
             .join(src_exec, F.col("source_server") == F.col("_s"), "left")
             .groupBy("server")
             .agg(F.collect_list(F.struct("channel_name", "retrieved_gtid_set", "source_server", "source_gtid_executed",
                                          "channel_read_at", "source_read_started_at", "source_read_at"))
                  .alias("all_channels")))
    return (ch.join(every, "server", "left")
            .join(rep, F.col("server") == F.col("_rep"), "inner").drop("_rep"))


def _with_source(grouped_df, snapshots_df):
    """``grouped_df`` (``source_server``, ``pairs``) joined with its readable source's snapshot,
    binary-log headers included, as ``source_snapshot``."""
    from pyspark.sql import functions as F

    src = snapshots_df.select(F.col("server").alias("_src"), F.struct(*snapshots_df.columns).alias("source_snapshot"))
    return (grouped_df.join(src, F.col("source_server") == F.col("_src"), "inner")
            .select("source_snapshot", "pairs"))


def pair_frame(pairs_df, snapshots_df, relay_df, owners_df=None, *, pairs_per_row: int = PAIRS_PER_ROW):
    """The pair checks' input: rows of ``source_snapshot`` (with its binary logs) and ``pairs``,
    at most ``pairs_per_row`` of the pairs of ``pairs_df`` (:func:`resolved_pairs`) resolved to it
    (``channel``, ``replica`` without binary logs, ``relay_tail``, ``all_channels`` and, when
    ``owners_df`` (:func:`uuid_owner_frame`) is given, ``uuid_owners``). A source's pairs are
    numbered in (replica, channel) order and cut into consecutive rows: no row grows with the
    source's fan-out (issue #19).

    The tails and owners are joined per replica first and the pairs numbered last, so the rows
    with their tails cross the network once, to their source's partition; the grouping into
    slices and the source's join keep that partitioning."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    numbered = Window.partitionBy("source_server").orderBy("server", "channel_name")
    tail = relay_df.groupBy("server", "channel_name").agg(
        F.collect_list(F.struct(*_TAIL_FIELDS)).alias("relay_tail"))
    pairs, fields = pairs_df, ["channel", "replica", "relay_tail", "all_channels"]
    if owners_df is not None:
        pairs = pairs.join(owners_df.select(F.col("server").alias("_own"), "uuid_owners"),
                           F.col("server") == F.col("_own"), "left")
        fields.append("uuid_owners")
    pairs = pairs.join(tail, ["server", "channel_name"], "left")
    grouped = (pairs.withColumn("_slice", F.floor((F.row_number().over(numbered) - 1) / pairs_per_row))
               .groupBy("source_server", "_slice").agg(F.collect_list(F.struct(*fields)).alias("pairs")))
    return _with_source(grouped, snapshots_df)


def failover_frame(pairs_df, snapshots_df):
    """The failover model's input: one row per source with at least one readable replica channel
    resolved to it (``pairs_df``: :func:`resolved_pairs`), ``source_snapshot`` (with its binary
    logs: whether the old source already refuses a sibling is its reconnect model over them,
    ``gtid_core.failover``) and ``pairs``, every such channel with ``channel``, ``replica`` and
    ``all_channels``: no relay tail and no replica's header, so a row holds one source's headers
    and its replicas' GTID sets, and grows with the fan-out by a few sets per replica."""
    from pyspark.sql import functions as F

    grouped = (pairs_df.groupBy("source_server")
               .agg(F.collect_list(F.struct("channel", "replica", "all_channels")).alias("pairs")))
    return _with_source(grouped, snapshots_df)


def donor_frame(findings_df, snapshots_df, servers_df, channels_df):
    """Where each replica refused for purged transactions (``audit_tasks.DONOR_CHECK`` findings of
    ``findings_df``, on an AUTO_POSITION channel) can still fetch them: one row per such finding
    with a sound donor (``gtid_core.donors``), ``finding_key``, ``donors`` (``donor``,
    ``donor_host``, ``donor_port``, ``donor_uuid``, sorted by name), ``replica_version``,
    ``return_host`` and ``return_port`` (the address its channel used for the source),
    ``multi_source`` (the replica has other channels) and ``source_purged``.

    ``upstream`` is the gtid_executed of each server the source replicates from over a healthy
    AUTO_POSITION channel: what a donor has beyond the source and is on its way to it is not
    counted against the donor. ``unfiltered`` says whether a candidate's binary log and every
    channel it reported (``servers.channel_count``) are known to filter nothing. When the
    source's own channels filter (or may), only its own replicas are candidates: another server
    would send the replica the data the source's filters dropped. A donor's address is the one
    its connected replicas use when it has any (the audit's own may be a tunnel), else the
    inventory's.

    The candidates are the readable servers of the replica's cluster and of the source's, with
    their binary log and log_replica_updates ON and gtid_executed read, except the replica, the
    source, the servers that replicate from the replica (a loop) and those another of its
    channels replicates from (two channels from one server). Each (finding, candidate) pair is one
    row, assessed on the executors a slice at a time: no group of a cluster's snapshots is ever
    held at once, and the findings are few."""
    from pyspark.sql import functions as F

    refused = (findings_df.where((F.col("check_id") == audit_tasks.DONOR_CHECK) & F.col("gtid_set").isNotNull())
               .select("finding_key", "server", "source", "channel", "gtid_set"))
    no_logs = [c for c in snapshots_df.columns if c != "binary_logs"]
    rep = snapshots_df.select(F.col("server").alias("_r"), F.col("cluster").alias("_rc"),
                              F.struct(*no_logs).alias("replica"))
    src = snapshots_df.select(F.col("server").alias("_s"), F.col("cluster").alias("_sc"),
                              F.struct(*snapshots_df.columns).alias("source_snapshot"))
    linked = channels_df.where(F.col("source_server").isNotNull())
    healthy = linked.where((F.col("io_running") == "Yes") & (F.col("sql_running") == "Yes")
                           & (F.coalesce("last_io_errno", F.lit(0)) == 0) & (F.coalesce("last_sql_errno", F.lit(0)) == 0)
                           & (F.col("auto_position") == F.lit(True)))
    upstream = (healthy.select(F.col("server").alias("_s"), F.col("source_server").alias("_u"))
                .join(snapshots_df.select(F.col("server").alias("_u"), F.col("gtid_executed").alias("_ux")), "_u")
                .groupBy("_s").agg(F.collect_list("_ux").alias("upstream")))
    base = (refused.join(rep, F.col("server") == F.col("_r")).join(src, F.col("source") == F.col("_s"))
            .drop("_r").join(upstream, "_s", "left").drop("_s"))
    clusters = (base.select("finding_key", F.col("_rc").alias("_cl"))
                .union(base.select("finding_key", F.col("_sc").alias("_cl"))).distinct())
    # whether a server's channels filter: False if one does, True only when every channel the
    # server reported (channel_count, NULL when its channels could not be read) shows none
    filters = _column_or_null(channels_df, "replication_filters")
    per_server = (channels_df.groupBy("server")
                  .agg(F.max((filters != "").cast("int")).alias("_some"),
                       F.max(filters.isNull().cast("int")).alias("_unknown"), F.count("*").alias("_n")))
    channels_filter = (servers_df.select("server", _column_or_null(servers_df, "channel_count", "int").alias("_cc"),
                                         _column_or_null(servers_df, "binlog_filters").alias("_bf"))
                       .join(per_server, "server", "left")
                       .select("server", "_bf", F.when(F.col("_some") == 1, F.lit(False))
                               .when((F.col("_unknown") == 1) | F.col("_cc").isNull()
                                     | (F.coalesce(F.col("_n"), F.lit(0)) < F.col("_cc")), F.lit(None))
                               .otherwise(F.lit(True)).alias("_unfiltered_channels")))
    # a donor's binary log must not filter either (Binlog_Do_DB / Binlog_Ignore_DB: a replicated
    # transaction such a filter drops is logged as an empty one with its GTID)
    unfiltered = channels_filter.select(
        F.col("server").alias("_d"),
        F.when((F.col("_unfiltered_channels") == F.lit(False)) | (F.col("_bf") != ""), F.lit(False))
        .when(F.col("_unfiltered_channels").isNull() | F.col("_bf").isNull(), F.lit(None))
        .otherwise(F.lit(True)).alias("unfiltered"))
    # a source whose own channels filter holds empty transactions for what they dropped: only its
    # own replicas, which got the same, may then serve its replica
    source_filters = channels_filter.select(F.col("server").alias("source"),
                                            F.col("_unfiltered_channels").alias("_source_unfiltered"))
    siblings = linked.select(F.col("source_server").alias("source"), F.col("server").alias("_d"),
                             F.lit(True).alias("_sibling")).distinct()
    # a donor's address: the one its connected replicas use
    observed = (linked.where(F.col("source_host").isNotNull() & F.col("source_port").isNotNull()
                             & (F.col("io_running") == "Yes") & (F.coalesce("last_io_errno", F.lit(0)) == 0))
                .groupBy(F.col("source_server").alias("_d"))
                .agg(F.min(F.struct("source_host", "source_port")).alias("_seen")))
    donors = (snapshots_df.where(F.col("gtid_executed").isNotNull() & (F.col("log_bin") == F.lit(True))
                                 & (F.col("log_replica_updates") == F.lit(True)))
              .select(F.col("server").alias("_d"), F.col("cluster").alias("_dc"),
                      F.struct(*snapshots_df.columns).alias("donor"))
              .join(servers_df.select(F.col("server").alias("_d"), "host", "port"), "_d")
              .join(observed, "_d", "left")
              .join(unfiltered, "_d", "left")
              .select("_d", "_dc", "donor",
                      F.coalesce(F.col("_seen.source_host"), F.col("host")).alias("donor_host"),
                      F.coalesce(F.col("_seen.source_port"), F.col("port")).alias("donor_port"), "unfiltered"))
    # a server replicating from the replica (repointing to it would close a loop), or one another
    # channel of the replica already replicates from (the detour would give it two channels from one server)
    loops = (linked.select(F.col("source_server").alias("server"), F.col("server").alias("_d"))
             .union(linked.select("server", F.col("source_server").alias("_d"))))
    back = (channels_df.where(F.col("auto_position") == F.lit(True))
            .select("server", F.col("channel_name").alias("channel"),
                    F.col("source_host").alias("return_host"), F.col("source_port").alias("return_port"))
            .join(channels_df.groupBy("server").agg((F.count("*") > 1).alias("multi_source")), "server"))
    candidates = (base.drop("_rc", "_sc").join(back, ["server", "channel"])
                  .join(clusters, "finding_key")
                  .join(donors, F.col("_cl") == F.col("_dc"))
                  .where((F.col("_d") != F.col("server")) & (F.col("_d") != F.col("source")))
                  .join(loops, ["server", "_d"], "left_anti")
                  .join(source_filters, "source", "left").join(siblings, ["source", "_d"], "left")
                  .where((F.col("_source_unfiltered") == F.lit(True)) | (F.col("_sibling") == F.lit(True)))
                  .select("finding_key", "gtid_set", "replica", "source_snapshot", "upstream", "donor", "donor_host",
                          "donor_port", "unfiltered", "return_host", "return_port", "multi_source"))
    return (candidates.mapInArrow(audit_tasks.donor_batches, audit_tasks.DONOR_DDL)
            .groupBy("finding_key")
            .agg(F.sort_array(F.collect_list(F.struct("donor", "donor_host", "donor_port", "donor_uuid")))
                 .alias("donors"),
                 *[F.first(c).alias(c) for c in ("replica_version", "return_host", "return_port", "multi_source",
                                                 "source_purged")]))


def with_donors(findings_df, donors_df):
    """``findings_df`` with its ``audit_tasks.DONOR_CHECK`` findings' remediations naming the
    donors of ``donors_df`` (:func:`donor_frame`) and the steps for the first
    (``audit_tasks.with_donors``); the other findings untouched."""
    from pyspark.sql import functions as F

    refused = F.col("check_id") == audit_tasks.DONOR_CHECK
    patched = (findings_df.where(refused).join(donors_df, "finding_key", "left")
               .mapInArrow(audit_tasks.with_donor_batches, _raw_spark_schema()))
    return findings_df.where(~refused).unionByName(patched)


_GROUP_FIELDS = ("group_name", "view_change_uuid", "single_primary_mode", "member_weight", "member_state",
                 "member_role", "applier_received_transaction_set")
_VIEW_FIELDS = ("member_id", "member_state", "member_role", "member_version")


def group_frame(snapshots_df, group_df, members_df, channels_df):
    """One row per replication group read tonight (Group Replication): ``group_name`` and
    ``members``, each a readable member's snapshot (with its binary logs), its group settings and
    state (``group_replication``), its view (``group_members`` rows it reported), the
    Retrieved_Gtid_Set of its asynchronous channels and its asynchronous ``replicas`` (channel
    and replica snapshot, as in :func:`pair_frame`). A row holds one group's members (a groupBy
    on the group name): a group has at most nine."""
    from pyspark.sql import functions as F

    view = members_df.groupBy("server").agg(F.collect_list(F.struct(*_VIEW_FIELDS)).alias("view"))
    retrieved = (channels_df.where(F.col("retrieved_gtid_set").isNotNull() & (F.col("retrieved_gtid_set") != ""))
                 .groupBy("server").agg(F.collect_list("retrieved_gtid_set").alias("async_retrieved")))
    rep_cols = [c for c in snapshots_df.columns if c != "binary_logs"]
    wanted = [c for c in audit_tasks._CHANNEL_COLUMNS if c in channels_df.columns]
    replicas = (channels_df.where(F.col("source_server").isNotNull())
                .select(F.col("server").alias("_rep"), "source_server", F.struct(*wanted).alias("channel"))
                .join(snapshots_df.select(F.col("server").alias("_r"), F.struct(*rep_cols).alias("replica")),
                      F.col("_rep") == F.col("_r"), "inner")
                .groupBy(F.col("source_server").alias("_src"))
                .agg(F.collect_list(F.struct("channel", "replica")).alias("replicas")))
    snap = snapshots_df.select(F.col("server").alias("_m"), F.struct(*snapshots_df.columns).alias("snapshot"))
    members = (group_df.select("server", *_GROUP_FIELDS)
               .join(snap, F.col("server") == F.col("_m"), "inner")
               .join(view, "server", "left").join(retrieved, "server", "left")
               .join(replicas, F.col("server") == F.col("_src"), "left"))
    return (members.groupBy(F.lower(F.trim("group_name")).alias("group_key"))
            .agg(F.collect_list(F.struct("snapshot", *_GROUP_FIELDS, "view", "async_retrieved", "replicas"))
                 .alias("members"))
            .select(F.col("group_key").alias("group_name"), "members"))


def with_group_state(snapshots_df, group_df):
    """``snapshots_df`` with ``group_member_state``: the server's own MEMBER_STATE when it belongs
    to a replication group (NULL otherwise), and its ``member_group_name`` and
    ``member_view_change_uuid`` (the replica group's own view changes are not errant for its
    asynchronous channel: gtid_core.checks.pair.ReplicaGroup). A member's failure is the group's to handle (it
    elects a member; its asynchronous replicas are repointed, never promoted), so the
    asynchronous failover model leaves ONLINE and RECOVERING members out."""
    from pyspark.sql import functions as F

    return snapshots_df.join(group_df.select("server", F.col("member_state").alias("group_member_state"),
                                             F.col("group_name").alias("member_group_name"),
                                             F.col("view_change_uuid").alias("member_view_change_uuid")),
                             "server", "left")


def server_frame(snapshots_df, previous_df, channels_df=None, groups_df=None, servers_df=None):
    """One row per readable server: ``snapshot``, ``previous`` (NULL without a previous run);
    with ``channels_df``, ``channels`` (the server's channels rows, NULL when it has none), and
    with ``groups_df`` (:func:`replication_group_frame`) ``ring_edges``: the replicating channels
    (``server``, ``source_server``) of the server's replication group that could be part of a
    ring, given only to a server with read_only = OFF that could close one
    (config_replica_writable asks whether its writes come back to it).

    A ring's members all replicate and are all sources, so a server that is not both carries no
    edges, and only edges between servers that are both are kept: a fleet of leaf replicas, and
    the writable ones among them, carries none. A writable server also gets
    ``sources_not_read``: the inventory servers that replicating channels of its replication
    group read from but whose own channels are unknown this run (no snapshot, or with
    ``servers_df``, the servers table, a ``channel_count`` of NULL: a partial read), since those
    channels could close a ring through it. Replicating is a receiver running or connecting, or
    an applier running (as ``gtid_core.checks.server.replicating``): a stopped channel closes no
    ring."""
    from pyspark.sql import functions as F

    cur = snapshots_df.select(F.col("server").alias("_k"),
                              F.struct(*[F.col(c) for c in snapshots_df.columns]).alias("snapshot"))
    if channels_df is not None:
        own = channels_df.groupBy(F.col("server").alias("_k")).agg(
            F.collect_list(F.struct(*[F.col(c) for c in channels_df.columns])).alias("channels"))
        cur = cur.join(own, "_k", "left")
        if groups_df is not None:
            running = (F.upper(F.col("io_running")).isin("YES", "CONNECTING")
                       | (F.upper(F.col("sql_running")) == F.lit("YES")))
            links = (channels_df.where(running & F.col("source_server").isNotNull()
                                       & (F.col("source_server") != F.col("server")))
                     .select("server", "source_server"))
            both = (links.select("server").distinct()
                    .join(links.select(F.col("source_server").alias("server")).distinct(), "server", "left_semi"))
            writable_any = (snapshots_df.where((F.col("read_only") == F.lit(False))
                                               & ~F.coalesce(F.col("super_read_only"), F.lit(False)))
                            .select("server"))
            writable = writable_any.join(both, "server", "left_semi")
            groups = writable.join(groups_df, "server").select("server", "replication_group")
            edges = (links.join(both, "server", "left_semi")
                     .join(both.select(F.col("server").alias("source_server")), "source_server", "left_semi")
                     .join(groups_df, "server")
                     .join(groups.select("replication_group").distinct(), "replication_group", "left_semi")
                     .groupBy("replication_group")
                     .agg(F.collect_list(F.struct("server", "source_server")).alias("ring_edges")))
            if servers_df is not None and "channel_count" in servers_df.columns:
                read = servers_df.where((F.col("status") != "failed") & F.col("channel_count").isNotNull())
            else:
                read = snapshots_df
            unread = (links.join(read.select(F.col("server").alias("source_server")), "source_server", "left_anti")
                      .join(groups_df, "server")
                      .groupBy("replication_group")
                      .agg(F.sort_array(F.collect_set("source_server")).alias("sources_not_read")))
            unread = (writable_any.join(groups_df, "server").join(unread, "replication_group")
                      .select(F.col("server").alias("_k"), "sources_not_read"))
            cur = (cur.join(groups.select(F.col("server").alias("_k"), "replication_group"), "_k", "left")
                   .join(edges, "replication_group", "left").drop("replication_group")
                   .join(unread, "_k", "left"))
    extra = [c for c in cur.columns if c not in ("_k", "snapshot")]
    if previous_df is None:
        return cur.select("snapshot", F.lit(None).cast(cur.schema["snapshot"].dataType).alias("previous"), *extra)
    prev = previous_df.select(F.col("server").alias("_p"),
                              F.struct(*[F.col(c) for c in previous_df.columns]).alias("previous"))
    return cur.join(prev, cur["_k"] == prev["_p"], "left").select("snapshot", "previous", *extra)


def _raw_spark_schema(columns: Sequence[str] = RAW_FINDING_COLUMNS):
    from pyspark.sql import types as T

    from schemas.audit import FINDINGS

    fields = {f.name: f for f in FINDINGS.to_spark().fields}
    return T.StructType([fields[c] for c in columns])


def _horizon_spark_schema():
    from pyspark.sql import types as T

    from schemas.report import REPORT_PAIRS

    fields = {f.name: f for f in REPORT_PAIRS.to_spark().fields}
    return T.StructType([T.StructField("replica", T.StringType(), False), T.StructField("channel", T.StringType(), False),
                         T.StructField("source", T.StringType(), False),
                         *[fields[c] for c in audit_tasks.HORIZON_COLUMNS[3:]]])


def _source_output_spark_schema():
    """Spark's side of :func:`jobs.audit_tasks.source_output_arrow_schema`: ``output`` and one
    nullable struct per output, every field nullable."""
    from pyspark.sql import types as T

    from schemas.failover import FAILOVER_READINESS

    parts = {"finding": _raw_spark_schema(), "readiness": FAILOVER_READINESS.to_spark(),
             "horizon": _horizon_spark_schema()}
    return T.StructType([T.StructField("output", T.StringType(), False)] + [
        T.StructField(name, T.StructType([T.StructField(f.name, f.dataType, True) for f in parts[name].fields]), True)
        for name in audit_tasks.SOURCE_OUTPUTS])


def pair_output_frame(pairs_df):
    """The pair checks over :func:`pair_frame` (``jobs.audit_tasks.pair_batches``): findings and
    purge horizons, tagged by ``output``; read them with :func:`output_of` (persist it first)."""
    return pairs_df.mapInArrow(audit_tasks.pair_batches, _source_output_spark_schema())


def failover_output_frame(sources_df, *, run_id: str | None = None, run_date=None):
    """The failover model over :func:`failover_frame` (``jobs.audit_tasks.failover_batches``),
    computed once per source: its findings and ``failover_readiness`` rows, tagged by ``output``."""
    return sources_df.mapInArrow(functools.partial(audit_tasks.failover_batches, run_id=run_id, run_date=run_date),
                                 _source_output_spark_schema())


def output_of(tagged_df, name: str):
    """The rows of one output of a tagged frame (:func:`_source_output_spark_schema`), as columns."""
    from pyspark.sql import functions as F

    return tagged_df.where(F.col("output") == name).select(f"{name}.*")


def job_finding_frames(servers_df, errors_df, channels_df, registry_df):
    """``collection_failed`` / ``collection_partial`` and ``source_unresolved`` /
    ``source_uuid_mismatch`` findings, as DataFrames."""
    from pyspark.sql import functions as F

    errs = errors_df.groupBy("server").agg(F.collect_list(F.struct(*errors_df.columns)).alias("errors"))
    bad = (servers_df.where(F.col("status").isin("failed", "partial"))
           .select("server", "cluster", "host", "port", "status").join(errs, "server", "left"))
    collection = bad.mapInArrow(audit_tasks.collection_finding_batches, _raw_spark_schema())
    owners = registry_df.select(F.col("server_uuid").alias("_u"), F.col("server").alias("registry_owner"))
    unresolved = (channels_df.where(F.col("source_server").isNull() | F.col("source_uuid_mismatch").isNotNull())
                  .join(owners, F.lower(F.col("source_uuid")) == F.col("_u"), "left").drop("_u"))
    resolution = unresolved.mapInArrow(audit_tasks.resolution_finding_batches, _raw_spark_schema())
    return collection, resolution


def report_input_frames(servers_df, channels_df, horizon_df, readiness_df, findings_df, *, run_id: str, run_date):
    """The report's input tables (``schemas/report.py``) as DataFrames, made on the executors:
    ``report_pairs`` (every channel with its resolved source, both ends' status, its
    Seconds_Behind_Source, the purge margin from ``horizon_df`` (:func:`jobs.audit_tasks.pair_outputs`) and the
    candidate's verdict from the written ``failover_readiness``), ``report_servers`` (the
    inventory's servers and those known only from a finding) and ``report_clusters`` (per
    cluster label: size, failures, pairs, open findings and risk). Returns the three frames in
    that order; nothing is collected."""
    from pyspark.sql import functions as F

    lit_run = [F.lit(run_id).alias("run_id"), F.lit(run_date).cast("date").alias("run_date")]
    srv = servers_df.select("server", "cluster", "status")
    src = srv.select(F.col("server").alias("_src"), F.col("cluster").alias("source_cluster"),
                     F.col("status").alias("source_status"))
    verdicts = (readiness_df.groupBy(F.col("source").alias("_vs"), F.col("candidate").alias("_vc"))
                .agg(F.first("verdict").alias("readiness_verdict"), F.min("candidate_rank").alias("candidate_rank")))
    horizon = horizon_df.select(F.col("replica").alias("_hr"), F.col("channel").alias("_hc"),
                                *[c for c in horizon_df.columns if c not in ("replica", "channel", "source")])
    pairs = (channels_df.select(F.col("server").alias("replica"),
                                F.coalesce("channel_name", F.lit("")).alias("channel"),
                                F.col("source_server").alias("source"), F.col("sql_delay"),
                                F.col("seconds_behind_source"))
             .join(srv.select(F.col("server").alias("replica"), "cluster", F.col("status").alias("replica_status")),
                   "replica", "left")
             .join(src, F.col("source") == F.col("_src"), "left").drop("_src")
             .join(horizon, (F.col("replica") == F.col("_hr")) & (F.col("channel") == F.col("_hc")), "left")
             .drop("_hr", "_hc")
             .join(verdicts, (F.col("source") == F.col("_vs")) & (F.col("replica") == F.col("_vc")), "left")
             .drop("_vs", "_vc")
             .select(*lit_run, "*"))
    known_only = (findings_df.select(F.col("server").alias("_f"), F.col("cluster").alias("_fc"))
                  .join(srv, F.col("_f") == F.col("server"), "left_anti")
                  .groupBy("_f").agg(F.first("_fc").alias("cluster"))
                  .select(F.col("_f").alias("server"), "cluster", F.lit(None).cast("string").alias("status")))
    members = srv.unionByName(known_only)
    report_servers = members.select(*lit_run, "cluster", "server", "status")

    none = "\u0000"  # the NULL label as a join key (NULL never equals NULL in a join)

    def key(col: str):
        return F.coalesce(F.col(col), F.lit(none)).alias("_k")

    sizes = members.groupBy(key("cluster")).agg(
        F.count("*").alias("servers"), F.count("status").alias("inventory_servers"),
        F.sum(F.when(F.col("status").isNull() | (F.col("status") == "failed"), 1).otherwise(0)).alias("failed"),
        F.sum(F.when(F.col("status") == "partial", 1).otherwise(0)).alias("partial"))
    open_ = findings_df.where(F.col("status") == "open")
    pair_keys = pairs.select("replica", "channel")
    from_findings = (open_.where(F.col("source").isNotNull())
                     .select(F.col("server").alias("replica"), F.coalesce("channel", F.lit("")).alias("channel"))
                     .distinct().join(pair_keys, ["replica", "channel"], "left_anti")
                     .join(members.select(F.col("server").alias("replica"), "cluster"), "replica", "left"))
    pair_counts = (pairs.select("cluster").unionByName(from_findings.select("cluster"))
                   .groupBy(key("cluster")).agg(F.count("*").alias("pairs")))

    def loud(severity: str):
        return F.sum(F.when(~F.col("silenced") & (F.col("severity") == severity), 1).otherwise(0)).alias(severity)

    finding_counts = open_.groupBy(key("cluster")).agg(
        loud("critical"), loud("warning"), loud("info"),
        F.sum(F.when(F.col("silenced"), 1).otherwise(0)).alias("silenced"))
    zero = F.lit(0).cast("long")
    clusters = (sizes.join(pair_counts, "_k", "full").join(finding_counts, "_k", "full")
                .select(*lit_run, F.when(F.col("_k") == none, F.lit(None)).otherwise(F.col("_k")).alias("cluster"),
                        *[F.coalesce(F.col(c).cast("long"), zero).alias(c) for c in (
                            "servers", "inventory_servers", "failed", "partial", "pairs", "critical", "warning",
                            "info", "silenced")])
                .withColumn("risk", 100 * F.col("critical") + 10 * F.col("warning") + F.col("info")))
    return pairs, report_servers, clusters


def report_group_frame(group_df, *, run_id: str, run_date):
    """``report_groups``: one row per group member of the run (``group_replication`` rows)."""
    from pyspark.sql import functions as F

    return group_df.select(F.lit(run_id).alias("run_id"), F.lit(run_date).cast("date").alias("run_date"),
                           "cluster", F.lower(F.trim("group_name")).alias("group_name"), "server",
                           "member_state", "member_role", "member_version", "member_weight",
                           "single_primary_mode")


def write_report_inputs(spark, warehouse: str, *, run_id: str, run_date, servers_df, channels_df,
                        horizon_df, group_df=None) -> None:
    """Write the report's input tables of a run (``schemas/report.py``), one commit each, from the
    run's ``servers``, ``channels`` and ``group_replication`` (``group_df``; None: no group), the
    purge horizons (``horizon_df``: the ``horizon`` output of :func:`jobs.audit_tasks.pair_batches`)
    and the already written ``findings`` and ``failover_readiness`` of the run (read back, not
    recomputed)."""
    from jobs.delta_io import write_run_frame
    from schemas.report import REPORT_TABLES

    frames = report_input_frames(servers_df, channels_df, horizon_df,
                                 _read_or_empty(spark, warehouse, "failover_readiness", run_id),
                                 _read_or_empty(spark, warehouse, "findings", run_id), run_id=run_id, run_date=run_date)
    frames = (*frames, report_group_frame(group_df if group_df is not None else _empty(spark, "group_replication"),
                                          run_id=run_id, run_date=run_date))
    for schema, frame in zip(REPORT_TABLES, frames, strict=True):
        write_run_frame(spark, schema, frame, warehouse=warehouse, run_id=run_id)


@dataclass
class ReplicationGroups:
    """The replication group of every server with a resolved channel (``frame``: ``server``,
    ``replication_group``, the smallest server name of its connected component), after ``rounds``
    rounds of label propagation; ``converged`` False means the round limit was hit first. The
    rounds' results stay cached until :meth:`unpersist`."""

    frame: Any
    rounds: int
    converged: bool
    cached: list = field(default_factory=list, repr=False)

    def unpersist(self) -> None:
        for df in reversed(self.cached):
            df.unpersist()
        self.cached.clear()


def replication_group_frame(channels_df, *, max_rounds: int = 32) -> ReplicationGroups:
    """Connected components of the resolved channels (``server`` -- ``source_server``, direction
    ignored), by min-label propagation: each server starts with the smallest name among itself and
    its neighbours, then takes its neighbours' labels while one is smaller, one join per round.

    Why this way: a server_id is only harmful inside a replication group (a receiver drops the
    events carrying its own server_id however many hops they travelled: ``c1 -> c2 -> c3`` with
    c1's server_id on c3 loses c1's transactions on c3), so comparing only the two ends of one
    channel would miss exactly the silent case, and a whole-fleet comparison would flag the fleets
    that reuse server_id 1 in every cluster. Each round is a join of the labels with the channel
    edges, bounded by the number of channels; the driver reads one count per round (how many
    labels changed). The number of rounds is the longest path in a group (replication chains are
    short: two or three rounds in practice). Labels that did not converge within ``max_rounds``
    still only join servers that are connected (a label travels along channels), so a missed
    round can hide a shared server_id, never invent one."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    edges = (channels_df.where(F.col("source_server").isNotNull() & (F.col("source_server") != F.col("server")))
             .select(F.col("server").alias("a"), F.col("source_server").alias("b")))
    links = edges.unionByName(edges.select(F.col("b").alias("a"), F.col("a").alias("b"))).distinct()
    groups = ReplicationGroups(frame=None, rounds=0, converged=False)
    try:
        links = links.persist(StorageLevel.MEMORY_AND_DISK)
        groups.cached.append(links)
        labels = (links.groupBy(F.col("a").alias("server")).agg(F.min("b").alias("_n"))
                  .select("server", F.least("server", "_n").alias("replication_group"))
                  .persist(StorageLevel.MEMORY_AND_DISK))
        groups.cached.append(labels)
        groups.rounds = 1
        while groups.rounds < max_rounds:
            theirs = (links.join(labels.select(F.col("server").alias("b"), F.col("replication_group").alias("_n")), "b")
                      .groupBy(F.col("a").alias("server")).agg(F.min("_n").alias("_n")))
            step = (labels.join(theirs, "server")
                    .select("server", F.least("replication_group", "_n").alias("replication_group"),
                            (F.col("_n") < F.col("replication_group")).alias("_changed"))
                    .persist(StorageLevel.MEMORY_AND_DISK))
            groups.cached.append(step)
            groups.rounds += 1
            changed = step.where(F.col("_changed")).count()
            labels = step.select("server", "replication_group")
            if changed == 0:
                groups.converged = True
                break
    except BaseException:
        groups.unpersist()
        raise
    groups.frame = labels
    return groups


#: The columns of one server in an identity group (``identity_group_frame``'s ``servers``).
_IDENTITY_FIELDS = ("server", "cluster", "server_uuid", "server_id", "gtid_executed", "sources", "replicas")


def identity_group_frame(snapshots_df, channels_df, groups_df):
    """One row per shared identity of this run, every readable server included (unlabelled ones
    are servers like any other, never one group): ``identity`` 'server_uuid' (``servers``: the
    servers reporting one server_uuid, compared case-insensitively) or 'server_id' (the servers
    of one replication group, ``groups_df`` from :func:`replication_group_frame`, reporting one
    server_id). Each server carries its cluster label, gtid_executed (server_uuid rows only), and
    the inventory names it replicates from (``sources``) and that replicate from it (``replicas``),
    from the channels' resolved ``source_server``. A row holds exactly the servers sharing its
    identity: it comes from a groupBy on the identity columns."""
    from pyspark.sql import functions as F

    ch = channels_df.where(F.col("source_server").isNotNull()).select(
        F.col("server").alias("_rep"), F.col("source_server").alias("_src"))
    sources = ch.groupBy("_rep").agg(F.collect_set("_src").alias("sources"))
    replicas = ch.groupBy("_src").agg(F.collect_set("_rep").alias("replicas"))
    ids = (snapshots_df.select("server", "cluster", F.lower(F.trim("server_uuid")).alias("server_uuid"),
                               "server_id", "gtid_executed")
           .join(sources, F.col("server") == F.col("_rep"), "left")
           .join(replicas, F.col("server") == F.col("_src"), "left")
           .join(groups_df, "server", "left")
           .select("server", "cluster", "server_uuid", "server_id", "gtid_executed",
                   F.coalesce("sources", F.array().cast("array<string>")).alias("sources"),
                   F.coalesce("replicas", F.array().cast("array<string>")).alias("replicas"),
                   F.coalesce("replication_group", "server").alias("replication_group")))
    by_uuid = (ids.where(F.col("server_uuid").isNotNull())
               .groupBy("server_uuid").agg(F.collect_list(F.struct(*_IDENTITY_FIELDS)).alias("servers"))
               .where(F.size("servers") > 1)
               .select(F.lit("server_uuid").alias("identity"),
                       F.lit(None).cast("string").alias("replication_group"), "servers"))
    no_set = [F.lit(None).cast("string").alias(c) if c == "gtid_executed" else F.col(c) for c in _IDENTITY_FIELDS]
    by_id = (ids.where(F.col("server_id").isNotNull())
             .groupBy("replication_group", "server_id").agg(F.collect_list(F.struct(*no_set)).alias("servers"))
             .where(F.size("servers") > 1)
             .select(F.lit("server_id").alias("identity"), "replication_group", "servers"))
    return by_uuid.unionByName(by_id)


def identity_frame(snapshots_df, channels_df, groups_df):
    """``duplicate_server_uuid`` findings: the rows of :func:`identity_group_frame`, each checked
    on an executor (gtid_core.identity, through ``audit_tasks.identity_batches``)."""
    return (identity_group_frame(snapshots_df, channels_df, groups_df)
            .mapInArrow(audit_tasks.identity_batches, _raw_spark_schema()))


def merged_registry_frame(old_df, servers_df, *, run_id: str, run_date: dt.date):
    """The uuid_registry after this run: every server_uuid read now is (re)attributed to its
    server with ``last_seen = run_date``; UUIDs not seen keep their row (the server may be gone,
    its GTIDs are not)."""
    from pyspark.sql import functions as F

    now = (servers_df.where(F.col("server_uuid").isNotNull())
           .select(F.lower(F.trim("server_uuid")).alias("server_uuid"), "server", "cluster")
           .groupBy("server_uuid").agg(F.min(F.struct("server", "cluster")).alias("s"))
           .select("server_uuid", F.col("s.server").alias("n_server"), F.col("s.cluster").alias("n_cluster")))
    day = F.lit(run_date)
    joined = old_df.join(now, "server_uuid", "full_outer")
    seen = F.col("n_server").isNotNull()
    return joined.select(
        F.when(seen, F.lit(run_id)).otherwise(F.col("run_id")).alias("run_id"),
        "server_uuid",
        F.when(seen, F.col("n_server")).otherwise(F.col("server")).alias("server"),
        F.when(seen, F.col("n_cluster")).otherwise(F.col("cluster")).alias("cluster"),
        F.when(seen, F.least(F.coalesce("first_seen", day), day)).otherwise(F.col("first_seen")).alias("first_seen"),
        F.when(seen, F.greatest(F.coalesce("last_seen", day), day)).otherwise(F.col("last_seen")).alias("last_seen"),
    )


def history_input(current_df, previous_df, failed_df):
    """The outer join of this run's findings and the previous run's on ``finding_key``:
    ``cur``, ``prev`` (structs, NULL where absent) and ``blind`` (the previous finding's server
    or source was not collected in this run)."""
    from pyspark.sql import functions as F

    c = current_df.alias("c")
    p = previous_df.alias("p")
    f1 = failed_df.select(F.col("server").alias("_f1"))
    f2 = failed_df.select(F.col("server").alias("_f2"))
    joined = (c.join(p, F.col("c.finding_key") == F.col("p.finding_key"), "full_outer")
              .join(f1, F.col("p.server") == F.col("_f1"), "left")
              .join(f2, F.col("p.source") == F.col("_f2"), "left"))
    return joined.select(
        F.when(F.col("c.finding_key").isNotNull(), F.struct(*[F.col(f"c.{n}") for n in current_df.columns])).alias("cur"),
        F.when(F.col("p.finding_key").isNotNull(), F.struct(*[F.col(f"p.{n}") for n in previous_df.columns])).alias("prev"),
        (F.col("_f1").isNotNull() | F.col("_f2").isNotNull()).alias("blind"))


# ---------------------------------------------------------------------------------------------
# the run


@dataclass
class AuditOutcome:
    """What one audit run produced: counters and where the feed went (the rows are in the
    tables; :meth:`findings` reads them back)."""

    run_id: str
    run_date: dt.date
    previous_run_id: str | None
    warehouse: str
    summary: dict[str, Any]
    jsonl_path: str | None
    exit_code: int
    expired_silences: tuple[Silence, ...] = ()
    delivery_error: str | None = None

    def findings(self, storage_options: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """This run's findings rows, read back (delta-rs) from the ``findings`` table."""
        from jobs.delta_io import read_arrow

        return read_arrow(self.warehouse, "findings", self.run_id, storage_options, run_date=self.run_date).to_pylist()

    def alerts(self, storage_options: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """This run's alert events, read back from the ``alerts`` table."""
        from jobs.delta_io import read_arrow

        return read_arrow(self.warehouse, "alerts", self.run_id, storage_options, run_date=self.run_date).to_pylist()


def _released(df) -> None:
    """Unpersist a cached frame that nothing reads any more, before a write would plan it again
    (:func:`audit_run`); None, to put in its variable."""
    if df is not None:
        df.unpersist()
    return None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _empty(spark, table: str):
    from schemas import get_table

    return spark.createDataFrame([], schema=get_table(table).to_spark())


def _read_or_empty(spark, warehouse: str, table: str, run_id: str | None = None):
    from jobs.delta_io import TableNotFoundError, read_frame

    try:
        return read_frame(spark, warehouse, table, run_id)
    except TableNotFoundError:
        return _empty(spark, table)


def build_summary(*, run_id: str, run_date: dt.date, counts: Sequence[Mapping[str, Any]],
                  events: Mapping[str, int], servers: Mapping[str, int], pairs_audited: int,
                  collect_seconds: float | None, audit_seconds: float, delivered: bool | None,
                  expired: Sequence[Any], fail_on: str, exit_code: int) -> dict[str, Any]:
    """The run_summary row from aggregates: ``counts`` has one row per (check_id, severity,
    status, silenced) with its ``count``; ``events`` counts alert events by kind; ``servers``
    counts servers by collection status."""
    by_check: dict[str, Counter] = defaultdict(Counter)
    unsilenced: dict[str, Counter] = defaultdict(Counter)
    by_sev: Counter = Counter()
    open_n = silenced_n = resolved_n = 0
    for c in counts:
        n = int(c["count"])
        if c["status"] == "open":
            open_n += n
            by_check[c["check_id"]][c["severity"]] += n
            if c["silenced"]:
                silenced_n += n
            else:
                by_sev[c["severity"]] += n
                unsilenced[c["check_id"]][c["severity"]] += n
        elif c["status"] == "resolved":
            resolved_n += n
    return {
        "run_id": run_id, "run_date": run_date, "audited_at": dt.datetime.now(dt.timezone.utc),
        "collect_seconds": collect_seconds, "audit_seconds": float(audit_seconds),
        "servers_audited": sum(n for s, n in servers.items() if s != "failed"),
        "servers_failed": int(servers.get("failed", 0)),
        "pairs_audited": int(pairs_audited),
        "findings_open": open_n, "findings_silenced": silenced_n, "findings_resolved": resolved_n,
        "findings_by_check": _json({k: dict(v) for k, v in sorted(by_check.items())}),
        "findings_by_severity": _json({s: by_sev.get(s, 0) for s in ("critical", "warning", "info")}),
        "findings_unsilenced_by_check": _json({k: dict(v) for k, v in sorted(unsilenced.items())}),
        "alerts_by_event": _json({k: v for k, v in sorted(events.items())}),
        "alerts_delivered": delivered,
        "expired_silences": _json([{"id": s.id, "expires": s.expires.isoformat(), "reason": s.reason}
                                   for s in expired]),
        "fail_on": fail_on, "exit_code": exit_code,
    }


def _exit_code(counts: Sequence[Mapping[str, Any]], fail_on: str) -> int:
    return exit_code_for(({"status": c["status"], "silenced": c["silenced"], "severity": c["severity"]}
                          for c in counts if int(c["count"]) > 0), fail_on)


def _event_rows(alerts_df) -> Iterable[dict[str, Any]]:
    """The alert events of the run, in the feed's order, streamed (one partition at a time)."""
    from pyspark.sql import functions as F

    order = ["event", "check_id", F.coalesce("cluster", F.lit("")), F.coalesce("server", F.lit("")),
             F.coalesce("source", F.lit("")), F.coalesce("channel", F.lit(""))]
    for row in alerts_df.orderBy(*order).toLocalIterator():
        event = row.asDict()
        event["labels"] = json.loads(event["labels"]) if event.get("labels") else {}
        yield event


def deliver_alerts(spark, settings: AuditSettings, *, warehouse: str, run_id: str, run_date: dt.date,
                   now: dt.datetime, send: bool) -> tuple[str | None, bool | None, str | None]:
    """After the Delta commits: write the JSON-lines feed and post to Alertmanager, both
    streamed from this run's ``alerts`` rows; record ``delivered`` in the table. Returns
    (feed path, delivered, delivery error)."""
    from jobs.alerts import AlertDeliveryError, AlertmanagerClient, to_alertmanager, write_jsonl
    from jobs.delta_io import read_frame, table_uri

    alerts_df = read_frame(spark, warehouse, "alerts", run_id, run_date)
    path = write_jsonl(_event_rows(alerts_df), warehouse, run_date, run_id)
    am = settings.alertmanager
    if am is None or not send:
        return path, None, None
    client = AlertmanagerClient(am)
    delivered, error, chunk = True, None, []
    try:
        for event in _event_rows(alerts_df):
            chunk.append(event)
            if len(chunk) >= ALERT_CHUNK:
                client.post_alerts(to_alertmanager(chunk, now=now, ttl=dt.timedelta(hours=am.ttl_hours),
                                                   generator_url=am.generator_url))
                chunk = []
        client.post_alerts(to_alertmanager(chunk, now=now, ttl=dt.timedelta(hours=am.ttl_hours),
                                           generator_url=am.generator_url))
    except AlertDeliveryError as exc:
        delivered, error = False, str(exc)
        log.error("alert feed not delivered: %s", exc)
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    DeltaTable.forPath(spark, table_uri(warehouse, "alerts")).update(
        condition=(F.col("run_date") == F.lit(run_date)) & (F.col("run_id") == F.lit(run_id)),
        set={"delivered": F.lit(delivered)})
    return path, delivered, error


def audit_run(spark, config: GtidAuditConfig, *, run_id: str | None = None,
              collect_seconds: float | None = None, fail_on: str | None = None,
              send_alerts: bool = True, now: dt.datetime | None = None) -> AuditOutcome:
    """Audit one collected run (the newest when ``run_id`` is None) and write the audit tables.
    Idempotent: auditing the same run again replaces that run's rows."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from jobs.delta_io import (TableNotFoundError, merge_latest, overwrite_frame, read_frame,
                               write_run_frame, write_run_rows)
    from schemas.audit import ALERTS, FINDINGS, FINDINGS_LATEST, RUN_SUMMARY, UUID_REGISTRY
    from schemas.failover import FAILOVER_READINESS

    started = time.monotonic()
    settings = config.audit
    fail_on = fail_on or settings.fail_on
    warehouse = config.resolved_warehouse()

    try:
        runs = [r.asDict() for r in read_frame(spark, warehouse, "runs").select("run_id", "run_date", "started_at").collect()]
    except TableNotFoundError:
        runs = []
    audited = [r["run_id"] for r in _read_or_empty(spark, warehouse, "run_summary").select("run_id").collect()]
    current, previous_run_id = pick_runs(runs, audited, run_id)
    run_id, run_date = current["run_id"], current["run_date"]
    log.info("auditing run %s (previous audited run: %s)", run_id, previous_run_id or "none")

    run_dates = {r["run_id"]: r["run_date"] for r in runs}

    def table(name: str, rid: str | None = run_id):
        return read_frame(spark, warehouse, name, rid, run_dates.get(rid))

    def table_or_empty(name: str):
        """A table of this run, or no rows where a warehouse written before the table existed
        lacks it (``group_replication`` and ``group_members`` came with issue #22)."""
        try:
            return table(name)
        except TableNotFoundError:
            return _empty(spark, name)

    servers, channels = table("servers"), table("channels")
    errors, binlogs, relay = table("collection_errors"), table("binary_logs"), table("relay_log_tail")
    registry = snaps = resolved = pair_out = failover_out = replication_groups = group_out = None
    current = joined = groups = rules_b = None
    try:
        registry = merged_registry_frame(_read_or_empty(spark, warehouse, "uuid_registry"), servers,
                                         run_id=run_id, run_date=run_date).persist(StorageLevel.MEMORY_AND_DISK)
        sc = spark.sparkContext
        on = run_date
        active, expired = active_silences(settings.silences, on), expired_silences(settings.silences, on)
        for s in expired:
            log.warning("silence %s expired on %s (%s): it no longer applies", s.id, s.expires, s.reason)
        rules_b = sc.broadcast(rules_of(active))

        group_rows, group_views = table_or_empty("group_replication"), table_or_empty("group_members")
        snaps = with_group_state(snapshot_frame(servers, binlogs), group_rows).persist(StorageLevel.MEMORY_AND_DISK)
        previous_snaps = (snapshot_frame(table("servers", previous_run_id), table("binary_logs", previous_run_id))
                          if previous_run_id else None)
        # the checks name the owner of an errant UUID: each pair carries the registry entries it can need
        resolved = resolved_pairs(snaps, channels).persist(StorageLevel.MEMORY_AND_DISK)
        pairs = pair_frame(resolved, snaps, relay, uuid_owner_frame(snaps, channels, registry))
        # pair checks and purge horizons per slice of a source's pairs; the failover model once per
        # source, without relay tails (each output cached: two readers)
        pair_out = pair_output_frame(pairs).persist(StorageLevel.MEMORY_AND_DISK)
        failover_out = failover_output_frame(failover_frame(resolved, snaps), run_id=run_id,
                                             run_date=run_date).persist(StorageLevel.MEMORY_AND_DISK)
        pair_findings = output_of(pair_out, "finding").unionByName(output_of(failover_out, "finding"))
        # a replica its source refuses for purged transactions: which server still holds them (a
        # dozen small joins, a few seconds of a small night: planned only when such a finding exists)
        if pair_findings.where(F.col("check_id") == audit_tasks.DONOR_CHECK).limit(1).count():
            pair_findings = with_donors(pair_findings, donor_frame(pair_findings, snaps, servers, channels))
        readiness, horizon = output_of(failover_out, "readiness"), output_of(pair_out, "horizon")
        groups = replication_group_frame(channels)
        if not groups.converged:
            log.warning("replication groups did not converge in %d rounds: server_id is compared within the "
                        "groups found so far (a shared server_id may be missed, none is invented)", groups.rounds)
        server_findings = server_frame(snaps, previous_snaps, channels, groups.frame, servers).mapInArrow(
            audit_tasks.check_server_batches, _raw_spark_schema())
        collection, resolution = job_finding_frames(servers, errors, channels, registry)
        replication_groups = group_frame(snaps, group_rows, group_views, channels).persist(StorageLevel.MEMORY_AND_DISK)
        group_out = replication_groups.mapInArrow(
            functools.partial(audit_tasks.group_batches, run_id=run_id, run_date=run_date),
            _source_output_spark_schema()).persist(StorageLevel.MEMORY_AND_DISK)
        group_findings = output_of(group_out, "finding")
        readiness = readiness.unionByName(output_of(group_out, "readiness"))
        raw = (pair_findings.unionByName(server_findings).unionByName(collection).unionByName(resolution)
               .unionByName(identity_frame(snaps, channels, groups.frame)).unionByName(group_findings))
        current = (raw.groupBy("finding_key").agg(F.collect_list(F.struct(*RAW_FINDING_COLUMNS)).alias("rows"))
                   .mapInArrow(functools.partial(audit_tasks.finalize_batches, rules=rules_b),
                               _raw_spark_schema(FINAL_FINDING_COLUMNS))
                   .persist(StorageLevel.MEMORY_AND_DISK))
        previous = _read_or_empty(spark, warehouse, "findings", previous_run_id) if previous_run_id else _empty(spark, "findings")
        failed = servers.where(F.col("status") == "failed").select("server")
        joined = history_input(current, previous, failed).persist(StorageLevel.MEMORY_AND_DISK)
        findings_df = joined.mapInArrow(functools.partial(
            audit_tasks.history_batches, run_id=run_id, run_date=run_date, output="findings"), FINDINGS.to_spark())
        alerts_df = joined.mapInArrow(functools.partial(
            audit_tasks.history_batches, run_id=run_id, run_date=run_date, output="alerts",
            min_severity=settings.alert_min_severity), ALERTS.to_spark())
        # Every Delta save ends in Spark's CacheManager.recacheByPlan for the table it wrote
        # (SaveIntoDataSourceCommand.run): each cached frame whose plan reads that table loses its
        # rows and is planned again, every Delta scan in it included. So the writes go in an order
        # that spares the cached frames still to be read, and the frames are released first:
        # alerts before findings (``joined`` reads the previous run's findings), and the registry's
        # overwrite after the frames built on it (at 10,000 servers, 52 scans planned again: 7 s).
        write_run_frame(spark, ALERTS, alerts_df, warehouse=warehouse, run_id=run_id, run_date=run_date)
        write_run_frame(spark, FINDINGS, findings_df, warehouse=warehouse, run_id=run_id, run_date=run_date)
        joined = _released(joined)
        merge_latest(spark, FINDINGS_LATEST, table("findings"), warehouse=warehouse, run_id=run_id)
        write_run_frame(spark, FAILOVER_READINESS, readiness, warehouse=warehouse, run_id=run_id, run_date=run_date)
        write_report_inputs(spark, warehouse, run_id=run_id, run_date=run_date, servers_df=servers,
                            channels_df=channels, horizon_df=horizon, group_df=group_rows)
        current, pair_out = _released(current), _released(pair_out)   # horizon was their last reader
        overwrite_frame(spark, UUID_REGISTRY, registry, warehouse=warehouse)
        pairs_audited = (channels.where(F.col("source_server").isNotNull())
                         .join(snaps.select(F.col("server").alias("_r")), F.col("server") == F.col("_r"))
                         .join(snaps.select(F.col("server").alias("_s")), F.col("source_server") == F.col("_s"))
                         .count())
        server_counts = {r["status"]: r["count"] for r in servers.groupBy("status").count().collect()}
    finally:   # what was cached is released, also when a step above raised
        for df in (joined, current, pair_out, failover_out, resolved, group_out, snaps, registry,
                   replication_groups):
            if df is not None:
                df.unpersist()
        if groups is not None:
            groups.unpersist()
        if rules_b is not None:
            rules_b.destroy()

    # counters from what was written (bounded: per check, severity, status and silenced)
    written = table("findings")
    counts = [r.asDict() for r in written.groupBy("check_id", "severity", "status", "silenced").count().collect()]
    events = {r["event"]: r["count"] for r in table("alerts").groupBy("event").count().collect()}
    jsonl, delivered, delivery_error = deliver_alerts(
        spark, settings, warehouse=warehouse, run_id=run_id, run_date=run_date,
        now=now or dt.datetime.now(dt.timezone.utc), send=send_alerts)
    code = _exit_code(counts, fail_on)
    if code == 0 and delivery_error:
        code = 1
    summary = build_summary(run_id=run_id, run_date=run_date, counts=counts, events=events,
                            servers=server_counts, pairs_audited=pairs_audited,
                            collect_seconds=collect_seconds, audit_seconds=time.monotonic() - started,
                            delivered=delivered, expired=expired, fail_on=fail_on, exit_code=code)
    write_run_rows(spark, RUN_SUMMARY, [summary], warehouse=warehouse, run_id=run_id)
    log.info("run %s: %d open finding(s), %d resolved, %d alert event(s); exit %d", run_id,
             summary["findings_open"], summary["findings_resolved"], sum(events.values()), code)
    return AuditOutcome(run_id=run_id, run_date=run_date, previous_run_id=previous_run_id,
                        warehouse=warehouse, summary=summary, jsonl_path=jsonl, exit_code=code,
                        expired_silences=tuple(expired), delivery_error=delivery_error)


def wrap_at_spaces(text: str, width: int = 100, indent: str = "", hang: str = "  ") -> str:
    """``text`` wrapped for a reader's terminal at spaces only (a path, a GTID set, an error name
    or a statement stays whole), every line indented by ``indent`` and the later ones by ``hang``
    more."""
    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent + hang,
                         break_long_words=False, break_on_hyphens=False)


def print_outcome(outcome: AuditOutcome, width: int | None = None) -> None:
    """The run's one-paragraph summary on stdout: one line (what scripts read), or wrapped at
    spaces to ``width`` columns for a reader (the demo)."""
    s = outcome.summary

    def counts(value: Any, by_severity: bool = False) -> str:  # the summary stores its maps as JSON text
        mapping = json.loads(value) if isinstance(value, str) else dict(value or {})
        items = sorted(mapping.items(), key=lambda kv: -severity_rank(kv[0])) if by_severity else mapping.items()
        return ", ".join(f"{v} {k}" for k, v in items if v) or "none"

    lines = [f"run {outcome.run_id}: {s['servers_audited']} server(s) audited, {s['servers_failed']} not "
             f"collected, {s['pairs_audited']} pair(s); open findings {s['findings_open']} "
             f"({counts(s['findings_by_severity'], by_severity=True)}; {s['findings_silenced']} silenced), "
             f"resolved {s['findings_resolved']}; alerts: {counts(s['alerts_by_event'])}; "
             f"exit code {outcome.exit_code} (--fail-on={s['fail_on']})"]
    lines += [f"expired silence {sil.id} (expired {sil.expires}): {sil.reason}" for sil in outcome.expired_silences]
    if outcome.jsonl_path:
        lines.append(f"alert feed: {outcome.jsonl_path}")
    for line in lines:
        print(line if width is None else wrap_at_spaces(line, width))


# ---------------------------------------------------------------------------------------------
# read-only commands (no Spark)


def _rows(warehouse: str, name: str, run_id: str | None = None, storage_options=None,
          run_date=None) -> list[dict[str, Any]]:
    from jobs.delta_io import TableNotFoundError, read_arrow

    try:
        return read_arrow(warehouse, name, run_id, storage_options, run_date=run_date).to_pylist()
    except TableNotFoundError:
        return []


def select_findings(rows: Iterable[Mapping[str, Any]], *, severity: str | None = None,
                    cluster: str | None = None, check: str | None = None,
                    include_resolved: bool = False,
                    cluster_of: Mapping[str, str | None] | None = None) -> list[Mapping[str, Any]]:
    """The rows ``gtid-audit findings`` shows: ``severity`` is a minimum (critical shows only
    critical, warning shows warning and critical). ``cluster`` keeps the findings of that
    cluster's servers and replication: a finding's own ``cluster`` (its server's, or for a
    failover finding its source's), or, by ``cluster_of`` (server name to cluster, the run's
    ``servers``), its ``server``'s or its ``source``'s cluster. A multi-source replica's findings
    on a channel from another cluster's source show under both clusters."""
    out = []
    floor = severity_rank(severity) if severity else -1
    cluster_of = cluster_of or {}
    for r in rows:
        if not include_resolved and r["status"] != "open":
            continue
        if severity_rank(r["severity"]) < floor:
            continue
        if cluster is not None and cluster not in (r.get("cluster"), cluster_of.get(r["server"]),
                                                   cluster_of.get(r.get("source") or "")):
            continue
        if check is not None and r["check_id"] != check:
            continue
        out.append(r)
    return sorted(out, key=lambda r: (-severity_rank(r["severity"]), r["check_id"], r.get("cluster") or "",
                                      r["server"], r.get("source") or "", r.get("channel") or ""))


def cmd_findings(args: argparse.Namespace) -> int:
    """``gtid-audit findings``: the latest audited run's findings as a table (delta-rs, no JVM)."""
    from rich.console import Console

    from jobs.config import ConfigError, load_config

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        log.error("%s", exc)
        return 1
    if args.check is not None and args.check not in check_catalogue():
        log.error("unknown check id %r; known checks: %s", args.check, ", ".join(sorted(check_catalogue())))
        return 1
    warehouse, so = config.resolved_warehouse(), dict(config.storage_options or {}) or None
    summaries = _rows(warehouse, "run_summary", storage_options=so)
    if not summaries:
        log.error("no audited run in %s: run `gtid-audit run --config %s` first", warehouse, args.config)
        return 1
    if args.run_id:
        run = next((s for s in summaries if s["run_id"] == args.run_id), None)
        if run is None:
            log.error("run %r was not audited (not in run_summary)", args.run_id)
            return 1
    else:
        run = max(summaries, key=lambda s: (s["audited_at"], s["run_id"]))
    run_id = run["run_id"]
    cluster_of = None
    if args.cluster is not None:   # two columns of the run's servers: whose source is in the cluster
        from jobs.delta_io import TableNotFoundError, scan_arrow

        try:
            cluster_of = {r["server"]: r["cluster"] for batch in scan_arrow(
                warehouse, "servers", run_id, so, columns=("server", "cluster"), run_date=run["run_date"])
                for r in batch.to_pylist()}
        except TableNotFoundError:
            cluster_of = None
        if not cluster_of:
            log.warning("no servers of run %s in %s (table missing or past its retention): --cluster %s "
                        "matches the findings' own cluster only", run_id, warehouse, args.cluster)
        elif args.cluster not in cluster_of.values():
            known = sorted({c for c in cluster_of.values() if c})
            log.warning("no server of run %s is in cluster %r; its clusters: %s", run_id, args.cluster,
                        ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
                        if known else "none (no server has a cluster)")
    rows = select_findings(_rows(warehouse, "findings", run_id, so, run_date=run["run_date"]),
                           severity=args.severity, cluster=args.cluster, check=args.check,
                           include_resolved=args.all, cluster_of=cluster_of)
    if args.format == "json":
        for r in rows:
            print(_json(dict(r)))
        return 0
    # piped into a file or a pager: wide enough that cells do not wrap into fragments
    width = args.width or (None if sys.stdout.isatty() else 400)

    class PipedConsole(Console):
        def on_broken_pipe(self) -> None:   # rich exits 1 itself: end as every command does (jobs.cli.main)
            self.quiet = True
            raise BrokenPipeError

    console = PipedConsole(width=width)
    console.print(findings_table(rows, f"findings of run {run_id} ({len(rows)})", console.width))
    return 0


#: The findings table's columns; the GTID set is the one cell that folds, every other one is kept whole.
FINDINGS_COLUMNS = ("severity", "check_id", "cluster", "server", "source", "channel", "gtid_set", "status",
                    "first_seen")
#: The least room a GTID set gets in the wide layout (a UUID is 36 characters).
MIN_GTID_SET_WIDTH = 24


def findings_table(rows: Sequence[Mapping[str, Any]], title: str, width: int) -> Any:
    """The rich table ``findings`` prints, ``width`` columns wide at most.

    One column per field when every name, severity and check id fits whole beside a GTID set of
    ``MIN_GTID_SET_WIDTH`` columns; on a narrower terminal three columns (severity, check id, and
    the finding: where, its GTID set, its status and first night), so that only a GTID set ever
    folds (a name cut into four-character rows could not be read)."""
    from rich.table import Table

    def cells(r: Mapping[str, Any]) -> dict[str, str]:
        channel = r.get("channel")
        return {"severity": r["severity"], "check_id": r["check_id"], "cluster": r.get("cluster") or "",
                "server": r["server"], "source": r.get("source") or "",
                "channel": "" if channel is None else (channel or "(default)"), "gtid_set": r.get("gtid_set") or "",
                "status": r["status"] + (f" (silenced: {r['silence_id']})" if r.get("silenced") else ""),
                "first_seen": str(r["first_seen"])}

    shown = [cells(r) for r in rows]
    longest = {c: max([len(c)] + [len(x[c]) for x in shown]) for c in FINDINGS_COLUMNS}
    # each column has a border and one space of padding either side
    wide = sum(longest[c] + 3 for c in FINDINGS_COLUMNS if c != "gtid_set") + MIN_GTID_SET_WIDTH + 3 + 1
    table = Table(title=title, show_lines=width < wide)
    if width >= wide:
        for c in FINDINGS_COLUMNS:
            table.add_column(c, overflow="fold", no_wrap=c != "gtid_set",
                             min_width=None if c == "gtid_set" else longest[c])
        for x in shown:
            table.add_row(*(x[c] for c in FINDINGS_COLUMNS))
        return table
    for c in ("severity", "check_id"):
        table.add_column(c, no_wrap=True, min_width=longest[c])
    table.add_column("finding", overflow="fold")
    for x in shown:
        named = x["channel"] not in ("", "(default)")
        where = x["server"] + (f" <- {x['source']}" if x["source"] else "") \
            + (f" (channel {x['channel']!r})" if named else "") + (f" [{x['cluster']}]" if x["cluster"] else "")
        lines = [where] + ([x["gtid_set"]] if x["gtid_set"] else []) + [f"{x['status']} since {x['first_seen']}"]
        table.add_row(x["severity"], x["check_id"], "\n".join(lines))
    return table


def check_catalogue() -> dict[str, Any]:
    """Every check ``explain`` knows: gtid_core's one registry."""
    from gtid_core.registry import REGISTRY

    return dict(REGISTRY)


def explain_text(check_id: str) -> str:
    """The text ``gtid-audit explain CHECK_ID`` prints; AuditError naming known ids otherwise."""
    catalogue = check_catalogue()
    info = catalogue.get(check_id.strip().lower())
    if info is None:
        close = difflib.get_close_matches(check_id.strip().lower(), list(catalogue), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise AuditError(f"unknown check {check_id!r}; {hint}known checks: {', '.join(sorted(catalogue))}")
    check_id = info.check_id
    lines = [f"{check_id}: {info.title}",
             f"default severity: {info.default_severity.value}   scope: {info.scope}   version: {info.version}",
             "", "what it means:", wrap_at_spaces(info.meaning, indent="  ", hang="")]
    if info.server_error:
        lines += ["", "server error:", wrap_at_spaces(info.server_error, indent="  ", hang="")]
    lines += ["", "what to do:", wrap_at_spaces(info.remediation, indent="  ", hang="")]
    return "\n".join(lines)


def cmd_explain(args: argparse.Namespace) -> int:
    """``gtid-audit explain CHECK_ID``."""
    try:
        print(explain_text(args.check_id))
    except AuditError as exc:
        log.error("%s", exc)
        return 1
    return 0


def register(subparsers) -> None:
    """Add ``findings`` and ``explain`` to the gtid-audit parser (``run``, ``collect`` and
    ``audit`` are in jobs.pipeline)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser("findings", help="the latest audited run's findings as a table")
    p.add_argument("--config", required=True, help="configuration file (YAML)")
    p.add_argument("--run-id", default=None, help="an audited run (default: the newest)")
    p.add_argument("--severity", choices=["info", "warning", "critical"], default=None,
                   help="minimum severity to show (default: every severity)")
    p.add_argument("--cluster", default=None,
                   help="only this cluster: its servers' findings, and those of pairs whose source is in it")
    p.add_argument("--check", default=None, help="only this check id")
    p.add_argument("--all", action="store_true", help="include resolved findings")
    p.add_argument("--format", choices=["table", "json"], default="table",
                   help="'json' prints one JSON object per finding per line (JSON Lines)")
    p.add_argument("--width", type=int, default=None, help="table width (default: the terminal's)")
    p.set_defaults(func=cmd_findings)

    p = subparsers.add_parser(
        "explain", help="what a check means and what to do about it", formatter_class=fmt,
        description="What a check means, the server error it predicts, and what to do.\n\ncheck ids:\n"
                    + "\n".join(f"  {c}" for c in sorted(check_catalogue())))
    p.add_argument("check_id", metavar="CHECK_ID", help="a check id (see the list above; case does not matter)")
    p.set_defaults(func=cmd_explain)
