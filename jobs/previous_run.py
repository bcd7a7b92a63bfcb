"""What the previous night's tables spare tonight's collection: the probe and the headers.

Two reads a night can do without (issue #21, docs/collection.md "Later nights"):

1. **The probe.** Planning needs each server's server_uuid, the names it answers to and each
   channel's source (:class:`jobs.read_plan.Probe`) before any server is read, so that a
   replica is read before its source. The previous run's ``servers`` and ``channels`` rows hold
   exactly that, as it was last night: :func:`planning_probes` turns them into probes for every
   server of tonight's inventory that was read then, at the same host and port. Servers they do
   not cover (new, moved, failed last night) are probed as on a first night. Whether last
   night's topology still holds is checked after the read, server by server
   (``jobs.collector.read_groups`` compares each read with its plan), and the components that
   changed are read again in an order planned from tonight's own reads.
2. **Closed binary-log headers.** A binary log's ``Previous_gtids`` is written when the file is
   created and never changes (``MYSQL_BIN_LOG::open_binlog`` writes it after the format
   description event, sql/binlog.cc); files are only added at the end and purged from the
   front. :func:`binlog_summaries` gives each server's files of last night (name and size) with
   its server_uuid and gtid_executed, per server in one row; the reader skips ``SHOW BINLOG
   EVENTS`` for a file that had the same name and size last night on the same server, provided
   nothing reset its binary logs since (``jobs.collector.PreviousBinlogs``), and the
   ``Previous_gtids`` is taken from last night's row (:func:`restore_reused_headers`).

The driver holds one small :class:`Probe` per server (as the probe stage did); the binary-log
rows and their summaries stay on the executors.
"""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Sequence

from jobs.delta_io import TableNotFoundError, read_frame
from jobs.read_plan import Probe
from jobs.server_spec import ServerSpec

__all__ = ["PreviousRun", "previous_run", "planning_probes", "binlog_summaries", "restore_reused_headers"]

log = logging.getLogger("gtid_audit.collect")


@dataclass(frozen=True)
class PreviousRun:
    """The newest complete collection run before tonight's (listed in ``runs``)."""

    run_id: str
    run_date: dt.date


def previous_run(spark, warehouse: str, run_id: str) -> PreviousRun | None:
    """The newest run in ``runs`` other than ``run_id`` (``runs`` is written last, so a run
    listed there is complete); None on a first night or an empty warehouse."""
    try:
        runs = read_frame(spark, warehouse, "runs")
    except TableNotFoundError:
        return None
    row = (runs.where(runs.run_id != run_id).orderBy(runs.started_at.desc(), runs.run_id.desc())
           .select("run_id", "run_date").limit(1).collect())
    return PreviousRun(row[0]["run_id"], row[0]["run_date"]) if row else None


def _lower(value: str | None) -> str | None:
    return value.lower() if value else None


def planning_probes(spark, warehouse: str, prev: PreviousRun, specs: Sequence[ServerSpec]) -> dict[str, Probe]:
    """A :class:`Probe` per server of ``specs`` that the previous run read (status ``ok`` or
    ``partial``, a server_uuid, the same host and port as tonight's configuration), built from
    its ``servers`` row and ``channels`` rows: what the probe would have answered then. The
    driver receives one small row per server and per channel (as from the probe stage), each
    table read in one scan and the two matched here: no join, no shuffle."""
    wanted = {s.name: (s.host, s.port) for s in specs}
    try:
        servers = read_frame(spark, warehouse, "servers", prev.run_id, prev.run_date)
        channels = read_frame(spark, warehouse, "channels", prev.run_id, prev.run_date)
    except TableNotFoundError:
        return {}
    sources: dict[str, list[tuple]] = {}
    for c in channels.select("server", "source_host", "source_port", "source_uuid").collect():
        sources.setdefault(c["server"], []).append((c["source_host"], c["source_port"], _lower(c["source_uuid"])))
    probes: dict[str, Probe] = {}
    for r in (servers.where(servers.status.isin("ok", "partial") & servers.server_uuid.isNotNull())
              .select("server", "host", "port", "server_uuid", "hostname", "reported_port", "channel_count")
              .collect()):
        if wanted.get(r["server"]) != (r["host"], r["port"]):
            continue
        channels_read = tuple(sorted(sources.get(r["server"], ())))
        if r["channel_count"] is None or r["channel_count"] != len(channels_read):
            continue  # its channels were not read whole last night: probe it
        probes[r["server"]] = Probe(r["server"], _lower(r["server_uuid"]), channels_read,
                                    hostname=r["hostname"] or None, reported_port=r["reported_port"])
    return probes


def binlog_summaries(spark, warehouse: str, prev: PreviousRun):
    """One row per server the previous run read binary-log headers of: ``server``,
    ``server_uuid``, ``gtid_executed`` and ``files`` (``name:size`` of every file whose header was
    read, comma-separated, in SHOW BINARY LOGS order): what a reader needs to tell which headers
    it may skip. None when the tables are missing."""
    from pyspark.sql import functions as F

    try:
        binlogs = read_frame(spark, warehouse, "binary_logs", prev.run_id, prev.run_date)
        servers = read_frame(spark, warehouse, "servers", prev.run_id, prev.run_date)
    except TableNotFoundError:
        return None
    files = (binlogs.where(binlogs.previous_gtids_read & binlogs.file_size.isNotNull())
             .groupBy("server")
             .agg(F.sort_array(F.collect_list(F.struct("seq", F.concat_ws(":", "log_name", "file_size")
                                                       .alias("f")))).alias("files"))
             .select("server", F.concat_ws(",", F.col("files.f")).alias("files")))
    return (servers.where(servers.server_uuid.isNotNull())
            .select("server", "server_uuid", "gtid_executed").join(files, "server"))


def restore_reused_headers(spark, warehouse: str, prev: PreviousRun, reused_df):
    """``binary_logs`` rows for the files whose header a reader skipped (``reused_df``: the
    binary_logs columns with ``previous_gtids`` NULL), their ``Previous_gtids`` and ``read_at``
    taken from the previous run's row of the same server and file: ``read_at`` stays the instant
    the header was really read."""
    from pyspark.sql import functions as F

    before = (read_frame(spark, warehouse, "binary_logs", prev.run_id, prev.run_date)
              .where(F.col("previous_gtids_read"))
              .select("server", "log_name", F.col("previous_gtids").alias("_prev_gtids"),
                      F.col("read_at").alias("_prev_read_at")))
    joined = reused_df.join(before, ["server", "log_name"], "left")
    found = F.col("_prev_read_at").isNotNull()
    return (joined.withColumn("previous_gtids", F.col("_prev_gtids"))
            .withColumn("read_at", F.when(found, F.col("_prev_read_at")).otherwise(F.col("read_at")))
            .withColumn("previous_gtids_read", found)
            .select(*reused_df.columns))
