"""``gtid-audit report``: one self-contained HTML page of a run, for people.

The page shows the fleet at a glance (servers collected and failed, open findings by severity,
new and resolved since the previous run, clusters ranked by risk), per cluster the replication
topology as a graph (each edge coloured by the worst open finding of its pair, each server by
its own findings; a click on an edge shows the evidence), failover readiness when the
``failover_readiness`` table exists, trends over the last runs, and every finding in a table
that filters by severity, cluster and check and links to the check's explanation.

It reads, through :func:`jobs.delta_io.scan_arrow` (delta-rs, no JVM) with the run and its
``run_date`` partition, the columns and the filters pushed into the scan, only the report tables the audit made on its executors
(``report_clusters``, ``report_servers``, ``report_pairs``: ``schemas/report.py``), the findings
and ``failover_readiness``, never a snapshot table, and keeps a bounded slice of each (the
clusters it draws, the worst purge horizons), so any past run audited by this version can be
rendered and the driver's memory does not grow with the fleet. The graphs are drawn by Graphviz
(``dot`` to SVG) and the charts by Vega-Lite (rendered to SVG at build time by vl-convert); both are inlined, with the page's own
small script and stylesheet, so the file opens without any network. At fleet scale the healthy
clusters are listed, not drawn, and the table is paginated in the browser.

The nightly job runs ``gtid-audit report`` (:func:`write_report`) in a process of its own after a
run (``jobs.pipeline.write_fleet_report``): the page goes to
``<warehouse>/_reports/<run_date>/<run_id>.html``, beside the alert feed.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import html
import json
import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from gtid_core.failover import Verdict

__all__ = [
    "REPORTS_DIR",
    "ReportError",
    "RunTables",
    "build_model",
    "load_run",
    "register",
    "render_html",
    "render_parts",
    "report_location",
    "write_report",
]

log = logging.getLogger("gtid_audit.report")

#: Folder of the reports under the warehouse, beside ``_alert_feed`` (outside every table).
REPORTS_DIR = "_reports"
#: Runs shown by the trend charts.
DEFAULT_TREND_RUNS = 10
#: Clusters drawn as graphs at most; the others (least risky first) are listed without a graph.
MAX_GRAPHS = 100
#: Longest text kept in the page for one evidence value, GTID set, detail or remediation of a
#: finding (GTID sets of big fleets are long, and the remediation of a source with 200 replicas
#: lists them all: 86 KB at 100,000 simulated servers); the findings table keeps them whole.
MAX_EVIDENCE_CHARS = 4000
#: Clusters drawn open (the others are drawn folded: one click opens them).
OPEN_GRAPHS = 10
#: Rows of the cluster ranking.
RANKED_CLUSTERS = 20
#: Rows of the purge-horizon table.
HORIZON_ROWS = 25

SEVERITIES = ("critical", "warning", "info")
_SEV_RANK = {"critical": 0, "warning": 1, "info": 2}
_RISK_WEIGHT = {"critical": 100, "warning": 10, "info": 1}

#: One colour per state of a server or a pair; the legend of the page says the same.
COLOURS = {
    "critical": "#c62828",
    "warning": "#ef6c00",
    "info": "#1565c0",
    "silenced": "#7e57c2",
    "ok": "#2e7d32",
    "unknown": "#9e9e9e",
}
_FILL = {
    "critical": "#ffebee",
    "warning": "#fff3e0",
    "info": "#e3f2fd",
    "silenced": "#ede7f6",
    "ok": "#e8f5e9",
    "unknown": "#f5f5f5",
}
_STATE_WORDS = {
    "critical": "critical finding",
    "warning": "warning finding",
    "info": "info finding",
    "silenced": "only silenced findings",
    "ok": "healthy: audited, no finding",
    "unknown": "not audited (a side was not collected or the source is unknown)",
}

#: Failover verdicts, best first: the failover_readiness table's vocabulary, from the model itself.
VERDICTS = tuple(v.value for v in sorted(Verdict, key=lambda v: v.rank))
_VERDICT_STATE = {v.value: "ok" if v is Verdict.SAFE else "info" if v is Verdict.SAFE_AFTER_CATCH_UP
                  else "unknown" if v is Verdict.UNDETERMINED else "critical" for v in Verdict}


class ReportError(RuntimeError):
    """Raised when the report cannot be built: no audited run, an unknown run id, or an output
    location that cannot be written. The message names the input."""


# ---------------------------------------------------------------------------------------------
# Reading


#: At most this many findings are embedded in the page's table: open before resolved, the most
#: severe first; the others are counted, and ``gtid-audit findings`` lists them all.
TABLE_FINDINGS = 2000


@dataclass(frozen=True)
class FindingCounts:
    """A run's findings, counted in one scan: ``open`` by severity (unsilenced), ``silenced``
    (open and silenced), ``resolved``, and ``total`` rows."""

    open: Mapping[str, int]
    silenced: int = 0
    resolved: int = 0
    total: int = 0


@dataclass(frozen=True)
class RunTables:
    """What the report of one run reads: bounded slices of the tables the audit made for it
    (``schemas/report.py``) and the run's findings, each with its filters pushed into the read."""

    run_id: str
    summary: Mapping[str, Any]
    #: report_clusters rows of the clusters with a warning, a critical finding or a failure (at
    #: most MAX_LISTED_CLUSTERS, riskiest first)
    risky_clusters: Sequence[Mapping[str, Any]]
    #: the findings of the clusters the page draws, and the first TABLE_FINDINGS of the table
    findings: Sequence[Mapping[str, Any]]
    #: report_servers and report_pairs rows of the clusters the page draws (at most
    #: MAX_CLUSTER_SERVERS and MAX_CLUSTER_PAIRS of each)
    servers: Sequence[Mapping[str, Any]] = ()
    pairs: Sequence[Mapping[str, Any]] = ()
    #: report_groups rows (Group Replication members) of the clusters the page draws
    groups: Sequence[Mapping[str, Any]] = ()
    #: the healthy clusters: how many, their servers, and the first HEALTHY_LISTED (name, servers), riskiest first
    healthy_count: int = 0
    healthy_servers: int = 0
    healthy_listed: Sequence[tuple[str, int]] = ()
    #: the fleet's totals, summed from report_clusters
    servers_total: int = 0
    servers_failed: int = 0
    servers_partial: int = 0
    previous_run_id: str | None = None
    #: open findings of this run that were open in the previous run (None: no previous run)
    still_open: int | None = None
    #: the run's findings counted while scanning them (``findings`` holds a bounded part)
    finding_counts: FindingCounts | None = None
    #: run_summary rows of the last runs, oldest first (the current one last)
    history: Sequence[Mapping[str, Any]] = ()
    #: open errant_transactions findings of the runs in ``history``
    errant_history: Sequence[Mapping[str, Any]] = ()
    failover: Sequence[Mapping[str, Any]] | None = None
    #: the clusters with a warning, a critical finding or a failure, all of them (0: as many as
    #: ``risky_clusters``)
    risky_total: int = 0
    #: the worst HORIZON_ROWS report_pairs rows with a purge horizon, and how many there are
    horizon: Sequence[Mapping[str, Any]] = ()
    horizon_total: int = 0
    #: the previous run's report_pairs rows of the pairs in ``horizon``, by (replica, channel)
    previous_horizon: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)


#: The columns the report reads, per table; None: all.
_COLUMNS: dict[str, tuple[str, ...] | None] = {
    # what the page shows of every finding it lists (the table, the counts, the graphs' marks)
    "findings": ("run_id", "finding_key", "check_id", "severity", "cluster", "server", "source", "channel", "title",
                 "gtid_count", "first_seen", "status", "silenced"),
    "failover_readiness": ("run_id", "cluster", "source", "candidate", "sibling", "sibling_role", "candidate_rank",
                           "verdict", "verdict_reasons", "sibling_result", "refusal", "lost_count", "errant_count",
                           "catch_up_count", "in_flight_count", "siblings_not_listed"),
}
#: What the page shows only of the open findings of its drawn pairs (their boxes): most of the
#: table's bytes (remediation alone is two thirds at 100,000 servers), so they are read for those
#: findings alone, by key, after the listed findings are chosen.
_FINDING_DETAIL_COLUMNS = ("finding_key", "detail", "gtid_set", "remediation", "evidence")
_HORIZON_COLUMNS = ("replica", "channel", "source", "lacking_count", "purge_margin", "binary_logs", "start_file",
                    "reconnect")
#: Healthy clusters named in the folded group (the others are counted).
HEALTHY_LISTED = 500
#: Sources shown in the failover section, and candidates per source.
MAX_FAILOVER_SOURCES = 50
MAX_FAILOVER_CANDIDATES = 10
#: Clusters with a warning, a critical finding or a failure listed (ranked, a section each),
#: riskiest first; the others are counted.
MAX_LISTED_CLUSTERS = 1000
#: Per drawn cluster: the pairs drawn (those whose ends have an open finding first, then those
#: with an end not collected, then by name), the open findings read for their edges and boxes
#: (most severe first) and the servers drawn (the ends of the drawn pairs and of the findings
#: first). The rest are counted: a cluster label shared by thousands of servers, or the servers
#: without a label, would otherwise be drawn whole.
MAX_CLUSTER_PAIRS = 200
MAX_CLUSTER_FINDINGS = 200
#: (every end of the drawn pairs and of the findings read fits: 2 x 200 + 2 x 200)
MAX_CLUSTER_SERVERS = 2 * MAX_CLUSTER_PAIRS + 2 * MAX_CLUSTER_FINDINGS


def _scan(warehouse: str, name: str, run: Mapping[str, Any] | None, storage_options, *, columns=None, where=None):
    """Record batches of table ``name`` (the rows of ``run``, a run_summary row, or of every
    run when None; ``columns``; rows matching ``where``; all pushed into the read, the run's
    ``run_date`` partition included), or None when the table does not exist."""
    from jobs.delta_io import TableNotFoundError, scan_arrow

    try:
        return scan_arrow(warehouse, name, run["run_id"] if run else None, storage_options,
                          columns=columns if columns is not None else _COLUMNS.get(name), where=where,
                          run_date=run.get("run_date") if run else None)
    except TableNotFoundError:
        return None


def _rows_of(batches) -> list[dict[str, Any]] | None:
    if batches is None:
        return None
    return [row for b in batches for row in b.to_pylist()]


def _is_in(column: str, values: Iterable[str | None]):
    """``column`` in ``values``, a None among them matching NULL."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    values = list(values)
    named = [v for v in values if v is not None]
    expr = pads.field(column).isin(pa.array(named, pa.string())) if named else None
    if None in values:
        expr = pc.is_null(pads.field(column)) if expr is None else expr | pc.is_null(pads.field(column))
    return expr if expr is not None else pads.field(column).isin(pa.array([], pa.string()))


def _top(batches, sort_keys: Sequence[tuple[str, str]], n: int, key_columns=None) -> tuple[list[dict[str, Any]], int]:
    """The first ``n`` rows of ``batches`` in ``sort_keys`` order and how many rows there were,
    holding at most ``n`` rows beside one batch."""
    import pyarrow as pa

    kept, total = None, 0
    for batch in batches or ():
        if batch.num_rows == 0:
            continue
        total += batch.num_rows
        table = pa.Table.from_batches([batch])
        if key_columns is not None:
            table = key_columns(table)
        table = table if kept is None else pa.concat_tables([kept, table])
        kept = table.sort_by(list(sort_keys)).slice(0, n)
    return (kept.to_pylist() if kept is not None else []), total


_GROUP = "_group"


def _top_per(batches, group: str, sort_keys: Sequence[tuple[str, str]], n: int,
             key_columns=None) -> list[dict[str, Any]]:
    """The first ``n`` rows of each value of ``group`` (NULL is a value) in ``sort_keys`` order,
    holding at most ``n`` rows per value beside one batch; helper columns (``_...``) removed."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kept = None
    for batch in batches or ():
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        if key_columns is not None:
            table = key_columns(table)
        table = table.append_column(_GROUP, pc.fill_null(table[group].cast(pa.string()), "\0"))
        table = table if kept is None else pa.concat_tables([kept, table])
        table = table.sort_by([(_GROUP, "ascending"), *sort_keys])
        keep, previous, seen = [], None, 0
        for value in table[_GROUP].to_pylist():
            seen = seen + 1 if value == previous else 1
            previous = value
            keep.append(seen <= n)
        kept = table.filter(pa.array(keep, pa.bool_()))
    if kept is None:
        return []
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in kept.to_pylist()]


def _smallest(values: Iterable[Iterable[str]], n: int) -> list[str]:
    """The ``n`` smallest distinct strings of a stream of batches, holding at most ``2 n``."""
    kept: set[str] = set()
    for batch in values:
        kept.update(v for v in batch if v is not None)
        if len(kept) > 2 * n:
            kept = set(sorted(kept)[:n])
    return sorted(kept)[:n]


def _finding_rank_keys(table):
    """Sort columns of open findings of one cluster: the most severe first, then check, server."""
    import pyarrow as pa

    ranks = pa.array([_SEV_RANK.get(v, 9) if v is not None else 9 for v in table["severity"].to_pylist()], pa.int32())
    return table.append_column("_rank", ranks)


def _pair_keys(flagged: set[str]):
    """Sort columns of report_pairs rows of one cluster: a pair with an end named by an open
    finding first, then one with an end not collected whole, then by replica and channel."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array(sorted(flagged), pa.string())

    def keys(table):
        named = pc.or_(pc.fill_null(pc.is_in(table["replica"], value_set=names), False),
                       pc.fill_null(pc.is_in(table["source"], value_set=names), False))
        ok = pa.array(["ok"], pa.string())
        whole = pc.and_(pc.fill_null(pc.is_in(table["replica_status"], value_set=ok), False),
                        pc.fill_null(pc.is_in(table["source_status"], value_set=ok), False))
        table = table.append_column("_named", pc.invert(named))
        return table.append_column("_whole", whole)
    return keys


def _server_keys(needed: set[str]):
    """Sort columns of report_servers rows of one cluster: the ends of the drawn pairs and of the
    findings first, then servers not collected, then by name."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array(sorted(needed), pa.string())

    def keys(table):
        table = table.append_column("_needed", pc.invert(pc.is_in(table["server"], value_set=names)))
        return table.append_column("_ok", pc.fill_null(pc.equal(table["status"], "ok"), False))
    return keys


def _horizon_keys(table):
    """Sort columns of purge-horizon rows: refused first, then the smallest margin, the most
    transactions lacking, the replica and channel."""
    import pyarrow.compute as pc

    table = table.append_column("_streams", pc.is_valid(table["purge_margin"]))
    table = table.append_column("_margin", pc.fill_null(table["purge_margin"], 0))
    return table.append_column("_lacking", pc.fill_null(table["lacking_count"], 0))


_HORIZON_ORDER = (("_streams", "ascending"), ("_margin", "ascending"), ("_lacking", "descending"),
                  ("replica", "ascending"), ("channel", "ascending"))


def _finding_keys(table):
    """Sort columns of findings rows: open first, then by severity, cluster, check, server, channel
    (the table's order)."""
    import pyarrow.compute as pc

    table = _finding_rank_keys(table.append_column("_closed", pc.not_equal(table["status"], "open")))
    for column in ("cluster", "channel"):
        table = table.append_column(f"_{column}", pc.fill_null(table[column], ""))
    return table


_FINDING_ORDER = (("_closed", "ascending"), ("_rank", "ascending"), ("_cluster", "ascending"),
                  ("check_id", "ascending"), ("server", "ascending"), ("_channel", "ascending"))


class _FindingCounter:
    """Counts a run's findings as their batches pass (:class:`FindingCounts`)."""

    def __init__(self) -> None:
        self.open = dict.fromkeys(SEVERITIES, 0)
        self.silenced = self.resolved = self.total = 0

    def add(self, status: str | None, severity: str | None, silenced: bool | None) -> None:
        self.total += 1
        if status == "resolved":
            self.resolved += 1
        elif status == "open" and silenced:
            self.silenced += 1
        elif status == "open" and severity in self.open:
            self.open[severity] += 1

    def counting(self, batches):
        for batch in batches or ():
            for row in zip(batch["status"].to_pylist(), batch["severity"].to_pylist(), batch["silenced"].to_pylist()):
                self.add(*row)
            yield batch

    def result(self) -> FindingCounts:
        return FindingCounts(open=dict(self.open), silenced=self.silenced, resolved=self.resolved, total=self.total)


def _cluster_rank(c: Mapping[str, Any]) -> tuple:
    return (-int(c["risk"]), -int(c["failed"]), c.get("cluster") or NO_CLUSTER)


def load_run(warehouse: str, run_id: str | None = None, *, storage_options=None,
             trend_runs: int = DEFAULT_TREND_RUNS, step: Callable[..., None] | None = None) -> RunTables:
    """Read what the report of ``run_id`` (None: the newest audited run) needs: the audit's
    report tables (``report_clusters``, then ``report_servers`` and ``report_pairs`` of the
    clusters the page draws, the worst purge-horizon rows) and the findings, with partition and
    status filters pushed into the reads. Never the snapshot tables.

    ``step(what, remaining=None)`` is called before each read; ``remaining`` (given once the runs
    are known) is the number of reads still to come. Raises ReportError when no run was audited,
    ``run_id`` was not audited, or the run has no report tables (audited by an older version).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    step = step or (lambda _what, remaining=None: None)
    step("run_summary")
    summaries = _rows_of(_scan(warehouse, "run_summary", None, storage_options)) or []
    if not summaries:
        raise ReportError(f"no audited run in {warehouse!r} (run_summary is empty or missing): "
                          "run `gtid-audit run` first")
    summaries.sort(key=lambda s: (s["audited_at"], s["run_id"]))
    by_id = {s["run_id"]: s for s in summaries}
    if run_id is None:
        run_id = summaries[-1]["run_id"]
    elif run_id not in by_id:
        from jobs.delta_io import validate_run_id

        validate_run_id(run_id)
        raise ReportError(f"run {run_id!r} was not audited (not in {warehouse}/run_summary)")
    position = [s["run_id"] for s in summaries].index(run_id)
    history = summaries[max(0, position + 1 - trend_runs):position + 1]
    previous = summaries[position - 1] if position > 0 else None
    previous_run_id = previous["run_id"] if previous else None
    run = by_id[run_id]

    step("report_clusters", remaining=9 + len(history) - 1 + (2 if previous_run_id else 0))
    clusters = _scan(warehouse, "report_clusters", run, storage_options)
    if clusters is None:
        raise ReportError(f"run {run_id!r} has no report tables (report_clusters is missing): audit it again "
                          "with this version (`gtid-audit audit --run-id ...`)")
    risky: list[dict[str, Any]] = []
    healthy: list[tuple[int, str, int]] = []
    healthy_count = healthy_servers = total = failed = partial = risky_total = 0
    for batch in clusters:
        inventory = pc.sum(batch["inventory_servers"]).as_py() or 0
        total += inventory
        failed += (pc.sum(batch["failed"]).as_py() or 0) - ((pc.sum(batch["servers"]).as_py() or 0) - inventory)
        partial += pc.sum(batch["partial"]).as_py() or 0
        loud = pc.or_(pc.or_(pc.greater(batch["critical"], 0), pc.greater(batch["warning"], 0)),
                      pc.greater(batch["failed"], 0))
        loud_rows = batch.filter(loud).to_pylist()
        risky_total += len(loud_rows)
        risky = sorted(risky + loud_rows, key=_cluster_rank)[:MAX_LISTED_CLUSTERS]
        calm = batch.filter(pc.invert(loud)).select(["cluster", "servers"])
        healthy_count += calm.num_rows
        healthy_servers += pc.sum(calm["servers"]).as_py() or 0
        healthy = sorted(healthy + [(-r["risk"], r["cluster"] or NO_CLUSTER, r["servers"])
                                    for r in batch.filter(pc.invert(loud)).select(["cluster", "servers", "risk"])
                                    .to_pylist()])[:HEALTHY_LISTED]
    drawn = [c.get("cluster") for c in risky[:MAX_GRAPHS]]
    is_open = pads.field("status") == "open"

    # Each drawn cluster is read in bounded slices, whatever its size: its most severe open
    # findings, then the pairs those findings name (then any with an end not collected), then
    # the servers at the ends of both.
    step("findings of the drawn clusters")
    drawn_findings = _top_per(_scan(warehouse, "findings", run, storage_options,
                                    where=is_open & _is_in("cluster", drawn)),
                              "cluster", (("_rank", "ascending"), ("check_id", "ascending"), ("server", "ascending"),
                                          ("finding_key", "ascending")),
                              MAX_CLUSTER_FINDINGS, _finding_rank_keys)
    flagged = {f["server"] for f in drawn_findings} | {f["source"] for f in drawn_findings if f.get("source")}
    step("report_pairs")
    pairs = _top_per(_scan(warehouse, "report_pairs", run, storage_options, where=_is_in("cluster", drawn)),
                     "cluster", (("_named", "ascending"), ("_whole", "ascending"), ("replica", "ascending"),
                                 ("channel", "ascending")), MAX_CLUSTER_PAIRS, _pair_keys(flagged))
    needed = flagged | {p["replica"] for p in pairs} | {p["source"] for p in pairs if p.get("source")}
    step("report_servers")
    servers = _top_per(_scan(warehouse, "report_servers", run, storage_options,
                             columns=("cluster", "server", "status"), where=_is_in("cluster", drawn)),
                       "cluster", (("_needed", "ascending"), ("_ok", "ascending"), ("server", "ascending")),
                       MAX_CLUSTER_SERVERS, _server_keys(needed))
    step("report_groups")   # absent in a warehouse audited before issue #22: no group drawn
    groups = _rows_of(_scan(warehouse, "report_groups", run, storage_options,
                            where=_is_in("cluster", drawn) & _is_in("server", [s["server"] for s in servers]))) or []
    step("purge horizon")
    horizon, horizon_total = _top(
        _scan(warehouse, "report_pairs", run, storage_options, columns=_HORIZON_COLUMNS,
              where=pc.is_valid(pads.field("reconnect"))), _HORIZON_ORDER, HORIZON_ROWS, _horizon_keys)
    horizon = [{k: v for k, v in r.items() if not k.startswith("_")} for r in horizon]
    step("findings")
    counter = _FindingCounter()
    table, _total = _top(counter.counting(_scan(warehouse, "findings", run, storage_options)),
                         _FINDING_ORDER, TABLE_FINDINGS, _finding_keys)
    findings = [{k: v for k, v in r.items() if not k.startswith("_")} for r in table]
    listed = {f["finding_key"] for f in findings}
    findings.extend(f for f in drawn_findings if f["finding_key"] not in listed)
    # the boxes of the drawn pairs: their open findings' detail columns, read by key
    step("details of the drawn findings")
    drawn_clusters, drawn_servers = set(drawn), {s["server"] for s in servers}
    boxed = {f["finding_key"]: f for f in findings if f["status"] == "open"
             and (f.get("cluster") in drawn_clusters or f["server"] in drawn_servers)}
    for batch in _scan(warehouse, "findings", run, storage_options, columns=_FINDING_DETAIL_COLUMNS,
                       where=pads.field("finding_key").isin(pa.array(sorted(boxed), pa.string()))) or ():
        for row in batch.to_pylist():
            boxed[row["finding_key"]].update({k: v if k == "evidence" else _clip(v) for k, v in row.items()})
    _release_freed_memory()   # what the findings' scans decoded: the largest reads come next
    step("failover_readiness")
    failover = _failover_rows(warehouse, run, storage_options)

    errant_history: list[dict[str, Any]] = []
    errant_columns = ("run_id", "cluster", "server", "gtid_set", "gtid_count")
    for past in history:
        rid = past["run_id"]
        step(f"findings of {rid}")
        errant_history.extend(_rows_of(_scan(
            warehouse, "findings", past, storage_options, columns=errant_columns,
            where=is_open & (pads.field("check_id") == "errant_transactions"))) or [])

    still_open = None
    previous_horizon: dict[tuple[str, str], dict[str, Any]] = {}
    if previous_run_id is not None:
        step(f"open findings of {previous_run_id}")
        # carried over: open now and open then, matched a batch of keys at a time
        still_open = 0
        for now in _scan(warehouse, "findings", run, storage_options, columns=("finding_key",),
                         where=is_open) or ():
            if now.num_rows == 0:
                continue
            for batch in _scan(warehouse, "findings", previous, storage_options, columns=("finding_key",),
                               where=is_open & pads.field("finding_key").isin(now["finding_key"])) or ():
                still_open += batch.num_rows
        step(f"purge horizon of {previous_run_id}")
        for r in _rows_of(_scan(warehouse, "report_pairs", previous, storage_options, columns=_HORIZON_COLUMNS,
                                where=pc.is_valid(pads.field("reconnect"))
                                & _is_in("replica", {h["replica"] for h in horizon}))) or []:
            previous_horizon[(r["replica"], r["channel"])] = r
    return RunTables(
        run_id=run_id, summary=by_id[run_id], risky_clusters=risky, risky_total=risky_total, findings=findings,
        servers=servers,
        pairs=pairs, groups=groups, healthy_count=healthy_count, healthy_servers=healthy_servers, healthy_listed=[(name, n) for _, name, n in healthy],
        servers_total=total, servers_failed=failed, servers_partial=partial, previous_run_id=previous_run_id,
        still_open=still_open, finding_counts=counter.result(), history=history, errant_history=errant_history,
        failover=failover,
        horizon=horizon, horizon_total=horizon_total, previous_horizon=previous_horizon,
    )


def _failover_rows(warehouse: str, run: Mapping[str, Any], storage_options) -> list[dict[str, Any]] | None:
    """The failover_readiness rows the section shows (None: no such table): at most
    MAX_FAILOVER_SOURCES sources, those with an open failover finding first, then by name, and
    their MAX_FAILOVER_CANDIDATES best candidates; without the GTID-set columns. Both scans keep
    at most twice MAX_FAILOVER_SOURCES names."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    batches = _scan(warehouse, "failover_readiness", run, storage_options, columns=("source",),
                    where=pads.field("candidate_rank") == 1)
    if batches is None:
        return None
    modelled = _smallest((pc.unique(b["source"]).to_pylist() for b in batches), MAX_FAILOVER_SOURCES)
    # the source a failover finding is about: failover_candidate_unsafe names it in `source`,
    # no_safe_failover_candidate in `server`
    flagged = _smallest(
        ([s if c == "failover_candidate_unsafe" else v
          for c, v, s in zip(b["check_id"].to_pylist(), b["server"].to_pylist(), b["source"].to_pylist())]
         for b in _scan(warehouse, "findings", run, storage_options, columns=("check_id", "server", "source"),
                        where=(pads.field("status") == "open")
                        & pads.field("check_id").isin(list(_FAILOVER_CHECKS))) or ()),
        MAX_FAILOVER_SOURCES)
    if flagged:   # those the table models (a flagged source without readiness rows has nothing to show)
        present: set[str] = set()
        for b in _scan(warehouse, "failover_readiness", run, storage_options, columns=("source",),
                       where=(pads.field("candidate_rank") == 1) & _is_in("source", flagged)) or ():
            present.update(b["source"].to_pylist())
        flagged = [s for s in flagged if s in present]
    chosen = (flagged + [s for s in modelled if s not in set(flagged)])[:MAX_FAILOVER_SOURCES]
    if not chosen:
        return []
    return _rows_of(_scan(warehouse, "failover_readiness", run, storage_options,
                          where=_is_in("source", chosen)
                          & (pads.field("candidate_rank") <= MAX_FAILOVER_CANDIDATES))) or []


# ---------------------------------------------------------------------------------------------
# The model: pure functions from rows to what the page shows


NO_CLUSTER = "(no cluster)"


def _worst(severities: Iterable[str]) -> str | None:
    ranked = sorted(severities, key=lambda s: _SEV_RANK.get(s, 9))
    return ranked[0] if ranked else None


def _state(findings: Sequence[Mapping[str, Any]], known: bool) -> str:
    """The colour state of a server or pair from its open findings; ``known`` says whether it
    was audited at all (an unaudited thing with no finding is unknown, never healthy)."""
    loud = [f["severity"] for f in findings if not f.get("silenced")]
    if loud:
        return _worst(loud) or "unknown"
    if findings:
        return "silenced"
    return "ok" if known else "unknown"


class _Clipped(str):
    """A text :func:`_clip` already cut (clipping it again would miscount what is left out)."""


def _clip(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, _Clipped) and len(value) > MAX_EVIDENCE_CHARS:
        return _Clipped(value[:MAX_EVIDENCE_CHARS] + f"... ({len(value) - MAX_EVIDENCE_CHARS:,} more characters: "
                        "the findings table keeps it whole, as gtid-audit findings --format json shows it)")
    return value


def _evidence(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"evidence": _clip(text)}
    if not isinstance(value, dict):
        return {"evidence": _clip(json.dumps(value))}
    return {k: _clip(v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v, sort_keys=True))
            for k, v in sorted(value.items())}


def _element_id(kind: str, *parts: str | None) -> str:
    """A stable, HTML-safe id for a graph element (names may hold any character)."""
    digest = hashlib.sha1("\x1f".join(p or "" for p in parts).encode()).hexdigest()[:12]
    return f"{kind}-{digest}"


@dataclass
class Pair:
    """One replica channel: an edge of the topology."""

    replica: str
    channel: str
    source: str | None
    cluster: str
    findings: list[Mapping[str, Any]] = field(default_factory=list)
    state: str = "unknown"
    #: the channel's SOURCE_DELAY (SQL_Delay) in seconds when it is a delayed replica, else None
    delay_s: int | None = None

    @property
    def element_id(self) -> str:
        return _element_id("pair", self.replica, self.channel)

    @property
    def note(self) -> str | None:
        """What the colour does not say: a delayed replica is behind on purpose."""
        if not self.delay_s:
            return None
        delayed = f"delayed replica (SOURCE_DELAY = {self.delay_s:,} s)"
        return f"{delayed}: behind on purpose, not at risk" if self.state == "ok" else delayed


@dataclass
class Cluster:
    """One cluster with a warning, a critical finding or a failure: its counts (from
    ``report_clusters``), and for a drawn cluster its servers and pairs."""

    name: str
    server_count: int = 0
    pair_count: int = 0
    failed: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {s: 0 for s in SEVERITIES})
    risk: int = 0
    servers: list[str] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)
    #: replication groups (Group Replication) among its servers: group name -> members
    #: (report_groups rows), drawn as one box each
    groups: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        return self.counts["critical"] == 0 and self.counts["warning"] == 0 and self.failed == 0


@dataclass
class Model:
    """Everything the page shows, computed from the rows of one run."""

    run_id: str
    run_date: str
    audited_at: str
    servers_total: int
    servers_failed: int
    servers_partial: int
    pairs_audited: int
    counts: dict[str, int]
    silenced: int
    new: int
    resolved: int
    previous_run_id: str | None
    #: the clusters with a warning, a critical finding or a failure, riskiest first
    clusters: list[Cluster]
    server_state: dict[str, str]
    server_cluster: dict[str, str]
    server_status: dict[str, str]
    server_findings: dict[str, list[Mapping[str, Any]]]
    findings: list[Mapping[str, Any]]
    healthy_count: int = 0
    #: the clusters with a warning, a critical finding or a failure, all of them (``clusters``
    #: holds at most MAX_LISTED_CLUSTERS)
    risky_total: int = 0
    #: the run's findings, all of them (``findings`` holds at most TABLE_FINDINGS)
    findings_total: int = 0
    healthy_servers: int = 0
    healthy_listed: Sequence[tuple[str, int]] = ()


def _counted(findings: Sequence[Mapping[str, Any]]) -> FindingCounts:
    """:class:`FindingCounts` of rows at hand (a RunTables built without a scan)."""
    counter = _FindingCounter()
    for f in findings:
        counter.add(f["status"], f["severity"], f.get("silenced"))
    return counter.result()


def build_model(data: RunTables) -> Model:
    """The page's content from one run's rows (pure: no I/O). Every pair's source is the
    ``report_pairs`` row's (the collector's ``channels.source_server``); a pair known only from an
    open finding (its replica was not collected now) takes the finding's source."""
    summary = data.summary
    drawn_servers = {s["server"] for s in data.servers}
    server_cluster: dict[str, str] = {}
    server_status: dict[str, str] = {}
    for s in data.servers:
        server_cluster[s["server"]] = s.get("cluster") or NO_CLUSTER
        if s.get("status") is not None:
            server_status[s["server"]] = s["status"]
    for p in data.pairs:  # the sources of the drawn pairs, wherever they are
        if p.get("source") is not None and p.get("source_status") is not None:
            server_cluster.setdefault(p["source"], p.get("source_cluster") or NO_CLUSTER)
            server_status.setdefault(p["source"], p["source_status"])
    open_rows = [f for f in data.findings if f["status"] == "open"]

    pairs: dict[tuple[str, str], Pair] = {}
    for p in data.pairs:
        pair = Pair(p["replica"], p["channel"] or "", p.get("source"), p.get("cluster") or NO_CLUSTER,
                    delay_s=int(p.get("sql_delay") or 0) or None)
        pair.state = "ok" if (pair.source is not None and p.get("replica_status") in ("ok", "partial")
                              and p.get("source_status") in ("ok", "partial")) else "unknown"
        pairs[(pair.replica, pair.channel)] = pair
    server_findings: dict[str, list[Mapping[str, Any]]] = {}
    for f in open_rows:
        if f.get("source") is None:
            server_findings.setdefault(f["server"], []).append(f)
            continue
        key = (f["server"], f.get("channel") or "")
        pair = pairs.get(key)
        if pair is None:
            if f["server"] not in drawn_servers:
                continue  # not in a drawn cluster
            # a pair known only from its finding (the replica was not collected now)
            pair = pairs[key] = Pair(f["server"], key[1], f["source"], server_cluster[f["server"]])
        pair.findings.append(f)
    for pair in pairs.values():
        pair.findings.sort(key=lambda f: (_SEV_RANK.get(f["severity"], 9), f["check_id"]))
        pair.state = _state(pair.findings, pair.state == "ok")
    server_state = {name: _state(server_findings.get(name, []), server_status.get(name) in ("ok", "partial"))
                    for name in server_cluster}

    clusters: dict[str, Cluster] = {}
    for row in data.risky_clusters:
        name = row.get("cluster") or NO_CLUSTER
        clusters[name] = Cluster(name, server_count=int(row["servers"]), pair_count=int(row["pairs"]),
                                 failed=int(row["failed"]), risk=int(row["risk"]),
                                 counts={s: int(row[s]) for s in SEVERITIES})
    for s in sorted(data.servers, key=lambda s: s["server"]):
        c = clusters.get(s.get("cluster") or NO_CLUSTER)
        if c is not None:
            c.servers.append(s["server"])
    for pair in pairs.values():
        c = clusters.get(pair.cluster)
        if c is not None:
            c.pairs.append(pair)
    for member in sorted(data.groups, key=lambda m: (m["group_name"], m.get("member_role") != "PRIMARY", m["server"])):
        c = clusters.get(member.get("cluster") or NO_CLUSTER)
        if c is not None and member["server"] in c.servers:
            c.groups.setdefault(member["group_name"], []).append(member)

    tally = data.finding_counts or _counted(data.findings)
    counts = dict(tally.open)
    new = sum(counts.values()) + tally.silenced - (data.still_open or 0)
    audited_at = summary.get("audited_at")
    return Model(
        run_id=data.run_id,
        run_date=str(summary.get("run_date")),
        audited_at=audited_at.strftime("%Y-%m-%d %H:%M UTC") if isinstance(audited_at, dt.datetime) else str(audited_at),
        servers_total=data.servers_total,
        servers_failed=data.servers_failed,
        servers_partial=data.servers_partial,
        pairs_audited=int(summary.get("pairs_audited") or 0),
        counts=counts,
        silenced=tally.silenced,
        new=new,
        resolved=tally.resolved,
        findings_total=tally.total,
        previous_run_id=data.previous_run_id,
        clusters=list(clusters.values()),
        server_state=server_state,
        server_cluster=server_cluster,
        server_status=server_status,
        server_findings=server_findings,
        findings=sorted(data.findings, key=lambda f: (f["status"] != "open", _SEV_RANK.get(f["severity"], 9),
                                                     f.get("cluster") or "", f["check_id"], f["server"],
                                                     f.get("channel") or ""))[:TABLE_FINDINGS],
        healthy_count=data.healthy_count,
        risky_total=max(data.risky_total, len(clusters)),
        healthy_servers=data.healthy_servers,
        healthy_listed=data.healthy_listed,
    )


# ---------------------------------------------------------------------------------------------
# Rendering


def _asset(name: str) -> str:
    return resources.files("jobs.report_assets").joinpath(name).read_text(encoding="utf-8")


def _svg_only(svg: str) -> str:
    """The <svg> element of a Graphviz or Vega SVG document (no XML prolog or DOCTYPE)."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def _finding_line(f: Mapping[str, Any]) -> str:
    mark = " (silenced)" if f.get("silenced") else ""
    return f"{f['severity'].upper()} {f['check_id']}{mark}: {f['title']}"


def cluster_graph(cluster: Cluster, model: Model):
    """The topology of one cluster as a Graphviz digraph (:func:`draw_graphs` renders it).

    Servers of other clusters that are sources of this cluster's replicas are drawn dashed.
    Edge ``id`` attributes are the pairs' element ids: the page's script finds the evidence
    by them.
    """
    import graphviz

    g = graphviz.Digraph(name=cluster.name, format="svg", engine="dot")
    g.attr(rankdir="LR", bgcolor="transparent", fontname="Helvetica", nodesep="0.35", ranksep="0.9")
    g.attr("node", shape="box", style="rounded,filled", fontname="Helvetica", fontsize="11", penwidth="2")
    g.attr("edge", fontname="Helvetica", fontsize="10", penwidth="3", arrowsize="0.8")
    drawn: set[str] = set()
    delayed: dict[str, list[str]] = {}  # replica -> what its box says of its delayed channels
    for pair in cluster.pairs:
        if pair.delay_s:
            delayed.setdefault(pair.replica, []).append(
                (f"channel {pair.channel} " if pair.channel else "") + f"delayed {pair.delay_s:,} s")

    member_of = {m["server"]: m for members in cluster.groups.values() for m in members}

    def node(name: str, external: bool, graph=None) -> None:
        if name in drawn:
            return
        drawn.add(name)
        state = model.server_state.get(name, "unknown")
        status = model.server_status.get(name)
        label = name
        if status is None:
            label += "\n(not in the inventory)"
        elif status == "failed":
            label += "\n(not collected)"
        elif status == "partial":
            label += "\n(partly collected)"
        if external:
            label += f"\n[{model.server_cluster.get(name, '?')}]"
        elif name in delayed:
            label += "\n(" + ", ".join(sorted(delayed[name])) + ")"
        member = member_of.get(name)
        if member is not None:
            label += "\n" + _member_words(member)
        lines = [f"{name}: {_STATE_WORDS[state]}"] + [_finding_line(f) for f in model.server_findings.get(name, [])]
        (graph if graph is not None else g).node(name, label=label, color=COLOURS[state], fillcolor=_FILL[state],
               style="rounded,filled,dashed" if external else "rounded,filled",
               id=_element_id("server", cluster.name, name), tooltip="\n".join(lines),
               **{"class": f"server state-{state}"})

    for i, (group_name, members) in enumerate(sorted(cluster.groups.items())):
        mode = "single-primary" if members[0].get("single_primary_mode") else (
            "multi-primary" if members[0].get("single_primary_mode") is False else "mode unknown")
        with g.subgraph(name=f"cluster_group_{i}") as box:
            box.attr(label=f"group {group_name[:8]}… ({mode})", style="rounded,dashed", color="#6b7280",
                     fontname="Helvetica", fontsize="10", tooltip=f"replication group {group_name}")
            for m in members:
                node(m["server"], external=False, graph=box)
    for name in cluster.servers:
        node(name, external=False)
    for pair in sorted(cluster.pairs, key=lambda p: (p.replica, p.channel)):
        source = pair.source or f"? ({pair.replica} {pair.channel or 'default'})"
        node(source, external=pair.source is not None and model.server_cluster.get(source) != cluster.name)
        lines = [f"{source} -> {pair.replica}" + (f" (channel {pair.channel})" if pair.channel else ""),
                 _STATE_WORDS[pair.state], *([pair.note] if pair.note else []),
                 *(_finding_line(f) for f in pair.findings)]
        lines.append("click for the evidence")
        g.edge(source, pair.replica, label=pair.channel, color=COLOURS[pair.state], fontcolor=COLOURS[pair.state],
               id=pair.element_id, tooltip="\n".join(lines), **{"class": f"pair state-{pair.state}"})
    return g


def _member_words(member: Mapping[str, Any]) -> str:
    """A group member's role and state as its box says them: ``PRIMARY``, ``SECONDARY``, or its
    state when it is not ONLINE (``OFFLINE``, ``ERROR``, ``RECOVERING``)."""
    state, role = member.get("member_state"), member.get("member_role")
    if state == "ONLINE":
        return role or "ONLINE"
    return state or "state unknown"


def draw_graphs(clusters: Sequence[Cluster], model: Model) -> dict[str, str]:
    """cluster name -> inline SVG of its topology, drawn by one ``dot`` process for all of them
    (``dot`` lays out every graph of its input in turn; one process per graph costs more than
    the layouts at fleet scale)."""
    import graphviz

    if not clusters:
        return {}
    source = "\n".join(cluster_graph(c, model).source for c in clusters)
    try:
        out = graphviz.pipe("dot", "svg", source.encode("utf-8")).decode("utf-8")
    except graphviz.ExecutableNotFound:
        raise ReportError("Graphviz's 'dot' is not installed: the report draws its graphs with it "
                          "(Debian: apt-get install graphviz)") from None
    documents = [d for d in out.split("<?xml") if "<svg" in d]
    if len(documents) != len(clusters):
        raise ReportError(f"dot drew {len(documents)} graphs for {len(clusters)} clusters")
    return {c.name: _svg_only(d) for c, d in zip(clusters, documents)}


def _chart(spec: dict[str, Any]) -> str:
    import vl_convert

    spec = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "config": {"font": "Helvetica", "view": {"stroke": None}}, **spec}
    return _svg_only(vl_convert.vegalite_to_svg(spec))


def trend_charts(data: RunTables) -> dict[str, str]:
    """The trend charts as inline SVGs (Vega-Lite, rendered at build time): open findings per
    check over the last runs, errant GTIDs per cluster. Empty when there is nothing to plot."""
    charts: dict[str, str] = {}
    per_check: list[dict[str, Any]] = []
    for i, s in enumerate(data.history):
        try:
            by_check = json.loads(s.get("findings_by_check") or "{}")
        except ValueError:
            continue
        for check_id, by_sev in sorted(by_check.items()):
            per_check.append({"run": s["run_id"], "order": i, "check": check_id,
                              "open": int(sum(by_sev.values()))})
    if per_check:
        charts["findings"] = _chart({
            "title": "open findings per check",
            "width": 520, "height": 220,
            "data": {"values": per_check},
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": {"field": "run", "type": "ordinal", "sort": {"field": "order"}, "title": "run",
                      "axis": {"labelAngle": -30, "labelLimit": 140}},
                "y": {"field": "open", "type": "quantitative", "title": "open findings"},
                "color": {"field": "check", "type": "nominal", "title": "check",
                          "legend": {"labelLimit": 260}},
            },
        })
    order = {s["run_id"]: i for i, s in enumerate(data.history)}
    errant: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
    for f in data.errant_history:
        if f.get("gtid_count") is None:
            continue
        per_run = errant.setdefault((f["run_id"], f.get("cluster") or NO_CLUSTER), {})
        per_run[(f["server"], f.get("gtid_set") or "")] = int(f["gtid_count"])  # a set errant towards 2 sources counts once
    if errant:
        values = [{"run": rid, "order": order.get(rid, 0), "cluster": cl, "gtids": sum(sets.values())}
                  for (rid, cl), sets in sorted(errant.items())]
        charts["errant"] = _chart({
            "title": "errant GTIDs per cluster",
            "width": {"step": 40}, "height": 220,
            "data": {"values": values},
            "mark": {"type": "bar"},
            "encoding": {
                "x": {"field": "run", "type": "ordinal", "sort": {"field": "order"}, "title": "run",
                      "axis": {"labelAngle": -30, "labelLimit": 140}},
                "y": {"field": "gtids", "type": "quantitative", "title": "errant GTIDs", "stack": True},
                "color": {"field": "cluster", "type": "nominal", "title": "cluster"},
            },
        })
    return charts


def _esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _badge(state: str, text: str | None = None) -> str:
    return f'<span class="badge state-{_esc(state)}">{_esc(text or state)}</span>'


def _explanations(check_ids: Iterable[str]) -> str:
    from jobs.audit import explain_text  # lazily: the audit module pulls in Spark helpers

    parts = []
    for check_id in sorted(set(check_ids)):
        try:
            text = explain_text(check_id)
        except Exception as exc:  # an id from an older run that the catalogue no longer knows
            text = f"{check_id}: no explanation available ({exc})"
        parts.append(f'<details class="explain" id="explain-{_esc(check_id)}"><summary><code>{_esc(check_id)}'
                     f'</code></summary><pre>{_esc(text)}</pre></details>')
    return "\n".join(parts)


#: The failover model's findings the failover section shows: on a source, on a candidate.
_FAILOVER_CHECKS = ("no_safe_failover_candidate", "failover_candidate_unsafe")


def _sibling_outcome(r: Mapping[str, Any]) -> str:
    """One sibling's line of a candidate: what it would get when repointed to the candidate."""
    parts = [f"{r[column]:,} {label}" for column, label in (
        ("lost_count", "lost"), ("errant_count", "errant received"),
        ("catch_up_count", "still in the candidate's relay log"), ("in_flight_count", "in flight")) if r.get(column)]
    if r.get("refusal"):
        parts.append(str(r["refusal"]))
    role = " (the source)" if r.get("sibling_role") == "source" else ""
    text = f"{r.get('sibling') or '-'}{role}: {r.get('sibling_result') or 'undetermined'}"
    return _esc(text + (f" ({'; '.join(parts)})" if parts else ""))


def _failover_section(rows: Sequence[Mapping[str, Any]] | None,
                      findings: Sequence[Mapping[str, Any]] = ()) -> str:
    """The failover_readiness rows of the run (None: no such table, no section): per source its
    candidates in the model's rank, each with its verdict, its reasons, the open failover
    finding on it and what every sibling would get; the source's own failover finding beside it."""
    if rows is None:
        return ""
    if not rows:
        return ('<section id="failover"><h2>Failover readiness</h2>'
                '<p class="muted">The failover_readiness table has no row for this run.</p></section>')
    rank = {v: i for i, v in enumerate(VERDICTS)}
    flagged = {(f["server"], f.get("source")): f for f in findings if f["status"] == "open"
               and f["check_id"] in _FAILOVER_CHECKS}
    by_source: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for r in rows:
        by_source.setdefault(r["source"], {}).setdefault(r["candidate"], []).append(r)

    def finding_badge(f: Mapping[str, Any] | None) -> str:
        if f is None:
            return ""
        state = "silenced" if f.get("silenced") else f["severity"]
        return (f' <a href="#explain-{_esc(f["check_id"])}" class="explain-link">'
                f'{_badge(state, f["check_id"])}</a>')

    blocks = []
    for source in sorted(by_source):
        candidates = []
        for candidate, items in by_source[source].items():
            verdict = max((r["verdict"] for r in items), key=lambda v: rank.get(v, len(VERDICTS)))
            model_rank = min((r.get("candidate_rank") or 0 for r in items), default=0)
            candidates.append((rank.get(verdict, len(VERDICTS)), model_rank, candidate, verdict, items))
        candidates.sort(key=lambda c: c[:3])
        body = []
        for n, (_, _, candidate, verdict, items) in enumerate(candidates, 1):
            reasons = "<br>".join(_esc(line) for line in (items[0].get("verdict_reasons") or "").splitlines())
            siblings = "<br>".join(_sibling_outcome(r) for r in sorted(items, key=lambda r: r.get("sibling") or ""))
            quiet = items[0].get("siblings_not_listed") or 0
            if quiet:
                siblings += f'<br><span class="muted">{quiet:,} other sibling(s) stream, losing nothing</span>'
            body.append(f'<tr><td>{n}</td><td>{_esc(candidate)}</td>'
                        f'<td>{_badge(_VERDICT_STATE.get(verdict, "unknown"), verdict)}'
                        f'{finding_badge(flagged.get((candidate, source)))}</td>'
                        f'<td>{reasons or "-"}</td><td>{siblings}</td></tr>')
        cluster = next((r.get("cluster") for items in by_source[source].values() for r in items), None)
        blocks.append(f'<div class="failover-source" data-source="{_esc(source)}"><h3>source {_esc(source)}'
                      + (f' <span class="muted">[{_esc(cluster)}]</span>' if cluster else "")
                      + f'{finding_badge(flagged.get((source, None)))}</h3>'
                      '<table class="plain"><thead><tr><th>#</th><th>candidate</th><th>verdict</th><th>why</th>'
                      '<th>each sibling repointed to it</th></tr></thead>'
                      f'<tbody>{"".join(body)}</tbody></table></div>')
    return ('<section id="failover"><h2>Failover readiness</h2><p class="muted">If a source fails: its replicas '
            'as candidates for promotion, best first, and what each sibling (another replica, or the source '
            'coming back) would get when repointed to the candidate with AUTO_POSITION.</p>'
            f'{"".join(blocks)}</section>')


def _horizon_section(rows: Sequence[Mapping[str, Any]], total: int,
                     previous: Mapping[tuple[str, str], Mapping[str, Any]], has_previous: bool) -> str:
    """The purge-horizon table: ``rows`` are the worst ``report_pairs`` rows with a reconnect
    outcome (refused first, then by margin), ``total`` how many there are, ``previous`` the
    previous run's rows of the same pairs."""
    if not rows:
        return ('<h3>Purge horizon</h3><p class="muted">No replica lacks transactions its source can still '
                'send, or the data to tell is missing.</p>')
    body = []
    for m in rows[:HORIZON_ROWS]:
        m = {**m, "margin": m["purge_margin"], "lacking": m["lacking_count"] or 0}
        if m["margin"] is None:
            margin, state = "refused now", "critical"
        else:
            margin, state = f'{m["margin"]} of {m["binary_logs"]}', ("warning" if m["margin"] == 0 else "ok")
        before = previous.get((m["replica"], m["channel"]))
        if not has_previous:
            was = ""
        elif before is None:
            was = "caught up or unknown"
        else:
            was = (("refused" if before["purge_margin"] is None else f'{before["purge_margin"]} logs')
                   + f', {before["lacking_count"] or 0} trx')
        body.append(f'<tr><td>{_esc(m["replica"])}</td><td>{_esc(m["channel"] or "(default)")}</td>'
                    f'<td>{_esc(m["source"])}</td><td class="num">{m["lacking"]:,}</td>'
                    f'<td>{_badge(state, margin)}</td><td>{_esc(m["start_file"] or "-")}</td>'
                    f'{"<td>" + _esc(was) + "</td>" if has_previous else ""}</tr>')
    more = f'<p class="muted">{total - HORIZON_ROWS} more not shown.</p>' if total > HORIZON_ROWS else ""
    return ('<h3>Purge horizon: replicas that lack source transactions</h3>'
            '<p class="muted">margin = binary logs the source can still purge before it refuses the replica '
            '(0: the next purge of the oldest file). A running replica always lacks what was committed after '
            'it was read.</p><table class="plain"><thead><tr><th>replica</th><th>channel</th><th>source</th>'
            '<th>transactions lacking</th><th>margin (binary logs)</th><th>streams from</th>'
            f'{"<th>previous run</th>" if has_previous else ""}</tr></thead><tbody>{"".join(body)}</tbody></table>{more}')


def _partly_drawn(c: Cluster) -> str:
    """What a drawn cluster's graph leaves out: the pairs and servers past the per-cluster caps."""
    pairs, servers = min(len(c.pairs), c.pair_count), min(len(c.servers), c.server_count)
    if pairs >= c.pair_count and servers >= c.server_count:
        return ""
    return (f'<p class="muted">Drawn: {pairs:,} of {_count(c.pair_count, "channel")} and {servers:,} of '
            f'{_count(c.server_count, "server")} (at most {MAX_CLUSTER_PAIRS:,} channels a cluster), those named '
            'by an open finding first, then those with a server not collected. The findings table and '
            '<code>gtid-audit findings</code> list every finding.</p>')


def _finding_json(f: Mapping[str, Any], evidence: bool) -> dict[str, Any]:
    out = {"check_id": f["check_id"], "severity": f["severity"], "title": f["title"], "detail": _clip(f["detail"]),
           "gtid_set": _clip(f.get("gtid_set")), "gtid_count": f.get("gtid_count"),
           "remediation": _clip(f.get("remediation")), "silenced": bool(f.get("silenced")),
           "first_seen": str(f.get("first_seen"))}
    if evidence:
        out["evidence"] = _evidence(f.get("evidence"))
    return out


#: Columns of the findings table, in the order of the rows embedded in the page.
TABLE_COLUMNS = ("severity", "check_id", "cluster", "server", "source", "channel", "title", "gtid_count",
                 "first_seen", "status", "silenced")


def render_html(model: Model, graphs: Mapping[str, str], charts: Mapping[str, str], *,
                failover: Sequence[Mapping[str, Any]] | None, horizon: str) -> str:
    """The whole page as one string: markup, inline SVG, inline CSS and JavaScript, data as JSON."""
    return "".join(render_parts(model, graphs, charts, failover=failover, horizon=horizon))


def render_parts(model: Model, graphs: Mapping[str, str], charts: Mapping[str, str], *,
                 failover: Sequence[Mapping[str, Any]] | None, horizon: str) -> Iterator[str]:
    """The page of :func:`render_html` in pieces, in order, so that it is written without ever
    being whole in memory (8 MB of text at 100,000 servers, held as two bytes a character once
    one of them is not Latin-1, as the page's "∪" is): the pieces are the template's text,
    the inline stylesheet and script, a chunk of table rows, one cluster's section with its
    graph, or one drawn pair's JSON."""
    tiles = [
        ("servers collected", f"{model.servers_total - model.servers_failed:,} / {model.servers_total:,}", "ok"),
        ("servers failed", f"{model.servers_failed:,}", "critical" if model.servers_failed else "ok"),
        ("critical", f"{model.counts['critical']:,}", "critical" if model.counts["critical"] else "ok"),
        ("warning", f"{model.counts['warning']:,}", "warning" if model.counts["warning"] else "ok"),
        ("info", f"{model.counts['info']:,}", "info"),
        ("new since previous run" if model.previous_run_id else "new (first run)", f"{model.new:,}",
         "warning" if model.new else "ok"),
        ("resolved", f"{model.resolved:,}", "ok"),
    ]
    tiles_html = "".join(f'<div class="tile state-{s}"><div class="value">{_esc(v)}</div>'
                         f'<div class="label">{_esc(k)}</div></div>' for k, v, s in tiles)
    risky = model.clusters
    rank_rows = "".join(
        f'<tr><td>{i}</td><td><a href="#cluster-{_element_id("c", c.name)}">{_esc(c.name)}</a></td>'
        f'<td class="num">{c.server_count:,}</td><td class="num">{c.failed:,}</td>'
        f'<td class="num">{c.counts["critical"]:,}</td><td class="num">{c.counts["warning"]:,}</td>'
        f'<td class="num">{c.counts["info"]:,}</td><td class="num">{c.risk:,}</td></tr>'
        for i, c in enumerate(risky[:RANKED_CLUSTERS], 1))
    ranking = (f'<table class="plain"><thead><tr><th>#</th><th>cluster</th><th>servers</th><th>failed</th>'
               f'<th>critical</th><th>warning</th><th>info</th><th>risk</th></tr></thead><tbody>{rank_rows}</tbody>'
               f'</table>' if risky else '<p>No cluster has a warning or critical finding.</p>')
    if len(risky) > RANKED_CLUSTERS:
        ranking += f'<p class="muted">{len(risky) - RANKED_CLUSTERS:,} more clusters with findings below.</p>'
    unlisted = model.risky_total - len(risky)

    healthy_html = ""
    if model.healthy_count:
        items = ", ".join(f"{_esc(name)} ({n:,})" for name, n in model.healthy_listed)
        if model.healthy_count > len(model.healthy_listed):
            items += f", and {model.healthy_count - len(model.healthy_listed):,} more"
        healthy_html = (f'<details class="cluster healthy"><summary>{_count(model.healthy_count, "healthy cluster")} '
                        f'({model.healthy_servers:,} servers): every server collected, every pair '
                        f'audited without a warning or critical finding</summary><p>{items}</p></details>')
    legend = "".join(f'<span class="legend-item"><span class="swatch" style="background:{COLOURS[s]}"></span>'
                     f'{_esc(_STATE_WORDS[s])}</span>' for s in COLOURS)
    trend_html = "".join(f'<div class="chart">{svg}</div>' for svg in charts.values()) or \
        '<p class="muted">No trend yet: one audited run.</p>'
    checks = sorted({f["check_id"] for f in model.findings})
    clusters = sorted({f.get("cluster") or NO_CLUSTER for f in model.findings})

    def options(values: Iterable[str]) -> str:
        return "".join(f'<option value="{_esc(v)}">{_esc(v)}</option>' for v in values)

    values = dict(
        title=_esc(f"gtid-audit report {model.run_id}"),
        css=_asset("report.css"),
        js=_asset("report.js"),
        data=_data_json(model, graphs),
        run_id=_esc(model.run_id),
        run_date=_esc(model.run_date),
        audited_at=_esc(model.audited_at),
        previous=_esc(model.previous_run_id or "none"),
        pairs_audited=f"{model.pairs_audited:,}",
        silenced=f"{model.silenced:,}",
        tiles=tiles_html,
        ranking=ranking,
        legend=legend,
        clusters=_joined(_cluster_sections(risky, graphs, unlisted), "\n", healthy_html),
        failover=_failover_section(failover, model.findings),
        trends=trend_html,
        horizon=horizon,
        severity_options=options(SEVERITIES),
        cluster_options=options(clusters),
        check_options=options(checks),
        explanations=_explanations(checks),
        finding_count=(f"{len(model.findings):,}" if len(model.findings) >= model.findings_total else
                       f"the first {len(model.findings):,} of {model.findings_total:,}, open and most severe first; "
                       "gtid-audit findings lists them all"),
    )
    yield from _substituted(Template(_asset("report.html")), values)


def _cluster_sections(risky: Sequence[Cluster], graphs: Mapping[str, str], unlisted: int) -> Iterator[str]:
    """A folded section per listed cluster (its graph when drawn), then a line on the clusters not
    listed; one at a time, so that no second copy of the graphs is ever whole."""
    for n, c in enumerate(risky):
        anchor = f'cluster-{_element_id("c", c.name)}'
        counts = c.counts
        head = (f'{_esc(c.name)} <span class="muted">{_count(c.server_count, "server")}, {_count(c.pair_count, "channel")}</span> '
                + (_badge("critical", f"{counts['critical']} critical") if counts["critical"] else "")
                + (_badge("warning", f"{counts['warning']} warning") if counts["warning"] else "")
                + (_badge("unknown", f"{c.failed} not collected") if c.failed else ""))
        if c.name in graphs:
            body = f'<div class="graph">{graphs[c.name]}</div>' + _partly_drawn(c)
        else:
            body = ('<p class="muted">Graph not drawn (only the riskiest clusters are); its findings are in '
                    'the table below.</p>')
        opened = " open" if n < OPEN_GRAPHS else ""
        yield (f'<details class="cluster" id="{anchor}"{opened} data-cluster="{_esc(c.name)}">'
               f'<summary>{head}</summary>{body}</details>')
    if unlisted > 0:
        yield (f'<p class="muted">{_count(unlisted, "more cluster")} with a warning, a critical finding or '
               'a failure, less risky than those above, not listed: <code>gtid-audit findings</code> '
               'lists their findings.</p>')


#: Findings table rows per piece of the page's embedded JSON.
_JSON_ROWS_PER_PIECE = 500


def _data_json(model: Model, graphs: Mapping[str, str]) -> Iterator[str]:
    """The page's data (the findings table's rows, the drawn pairs' evidence, the colours) as
    the text of one JSON object, safe inside a ``<script>`` element, in pieces: a chunk of rows
    or one pair at a time, so that neither the object nor its text is ever whole in memory (the
    pairs' evidence is most of it: 3 MB at 100,000 simulated servers)."""
    def text(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"), default=str).replace("</", "<\\/")

    yield '{"columns":' + text(TABLE_COLUMNS) + ',"rows":['
    findings = model.findings
    for start in range(0, len(findings), _JSON_ROWS_PER_PIECE):
        yield ("," if start else "") + ",".join(
            text([f["severity"], f["check_id"], f.get("cluster") or NO_CLUSTER, f["server"], f.get("source"),
                  f.get("channel"), f["title"], f.get("gtid_count"), str(f.get("first_seen")), f["status"],
                  bool(f.get("silenced"))]) for f in findings[start:start + _JSON_ROWS_PER_PIECE])
    yield '],"pairs":{'
    first = True
    for c in model.clusters:
        if c.name not in graphs:
            continue
        for p in c.pairs:
            yield ("" if first else ",") + text(p.element_id) + ":" + text(
                {"replica": p.replica, "source": p.source, "channel": p.channel, "state": p.state, "note": p.note,
                 "findings": [_finding_json(f, True) for f in p.findings]})
            first = False
    yield '},"colours":' + text(COLOURS) + "}"


def _joined(pieces: Iterable[str], separator: str, tail: str) -> Iterator[str]:
    """``separator.join(pieces) + tail``, piece by piece."""
    for n, piece in enumerate(pieces):
        yield separator + piece if n else piece
    yield tail


def _substituted(template: Template, values: Mapping[str, str | Iterable[str]]) -> Iterator[str]:
    """``template.substitute(values)`` piece by piece: the template's text between its
    placeholders, and each value (a string, or pieces of one) in place of its placeholder."""
    text, done = template.template, 0
    missing = {m.group("named") or m.group("braced") for m in template.pattern.finditer(text)} - set(values) - {None}
    if missing:     # before any of the page is written
        raise KeyError(f"the report template's placeholders {sorted(missing)} have no value")
    for match in template.pattern.finditer(text):
        yield text[done:match.start()]
        done = match.end()
        if match.group("escaped") is not None:
            yield template.delimiter
            continue
        name = match.group("named") or match.group("braced")
        if name is None:
            raise ValueError(f"invalid placeholder in the report template at offset {match.start()}")
        value = values[name]
        if isinstance(value, str):
            yield value
        else:   # pieces of one value, used once (a generator is spent after it)
            yield from value
    yield text[done:]


# ---------------------------------------------------------------------------------------------
# Writing


def report_location(warehouse: str, run_date: Any, run_id: str) -> str:
    """Where the job writes a run's report: ``<warehouse>/_reports/<run_date>/<run_id>.html``."""
    return f"{warehouse.rstrip('/')}/{REPORTS_DIR}/{run_date}/{run_id}.html"


#: progress steps of write_report after the tables are read
_AFTER_READING = 5


@contextmanager
def _progress(enabled: bool, total: int) -> Iterator[Callable[..., None]]:
    """A rich progress bar on stderr when ``enabled`` (a terminal); otherwise a silent step.
    ``step(what, remaining=n)`` also resets the total to the steps done plus ``n``."""
    if not enabled:
        yield lambda _what, remaining=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("report"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("", total=total)

        def step(what: str, remaining: int | None = None) -> None:
            if remaining is not None:
                bar.update(task, total=bar.tasks[0].completed + remaining + _AFTER_READING)
            bar.update(task, advance=1, description=what)

        yield step


def write_report(warehouse: str, run_id: str | None = None, out: str | Path | None = None, *,
                 storage_options: Mapping[str, str] | None = None, trend_runs: int = DEFAULT_TREND_RUNS,
                 progress: bool | None = None) -> Path | str:
    """Render the report of ``run_id`` (None: the newest audited run) and write it to ``out``
    (default :func:`report_location`); return where it was written (a Path for a local file,
    the URI for an object store). ``progress=None`` shows a bar only when stderr is a terminal."""
    started = time.monotonic()
    if progress is None:
        progress = sys.stderr.isatty()
    with _returning_allocator(), _progress(progress, total=9 + trend_runs + _AFTER_READING) as step:
        data = load_run(warehouse, run_id, storage_options=storage_options, trend_runs=trend_runs, step=step)
        _release_freed_memory()
        step("model")
        model = build_model(data)
        drawn = model.clusters[:MAX_GRAPHS]
        step(f"graphs of {len(drawn)} clusters")
        graphs = draw_graphs(drawn, model)
        _release_freed_memory()   # the charts' renderer takes about 100 MB of its own
        step("charts")
        charts = trend_charts(data)
        _release_freed_memory()
        step("page")
        parts = render_parts(model, graphs, charts, failover=data.failover,
                             horizon=_horizon_section(data.horizon, data.horizon_total, data.previous_horizon,
                                                      data.previous_run_id is not None))
        target = str(out) if out is not None else report_location(warehouse, model.run_date, model.run_id)
        where, size = _write(target, parts)
    import pyarrow as pa

    log.info("report of run %s written to %s (%d bytes, %.1f s; Arrow's memory pool: %s)", model.run_id, where,
             size, time.monotonic() - started, pa.default_memory_pool().backend_name)
    return where


#: The environment variable that chooses the memory pool of Arrow's C++ library. It is read once,
#: when pyarrow is first imported.
ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def _arrow_on_system_malloc() -> None:
    """Make the C library's malloc the default memory pool of Arrow's C++ library in this
    process, unless the user chose one (``ARROW_DEFAULT_MEMORY_POOL``) or pyarrow is already
    loaded (then it is too late, and the pool stays as it is).

    ``pyarrow.set_memory_pool`` (:func:`_returning_allocator`) covers only what pyarrow allocates
    itself. The Parquet reader below a scan allocates from the C++ default, mimalloc, which kept
    the pages the reads freed: 38 MB of resident memory after the reads at 100,000 servers
    against 12 MB at 1,000, most of the report's growth with the fleet (docs/benchmarks.md,
    "Stop 41"). ``gtid-audit report`` calls this before anything imports pyarrow."""
    if "pyarrow" not in sys.modules:
        os.environ.setdefault(ARROW_POOL_VARIABLE, "system")


#: glibc's mallopt parameter M_MMAP_THRESHOLD, and the size from which the report's allocations
#: are mapped (and unmapped when freed) rather than taken from the heap: glibc's initial default,
#: kept fixed instead of rising with the largest block freed.
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_BYTES = 128 * 1024


@contextmanager
def _returning_allocator() -> Iterator[None]:
    """While the report is made, memory freed is given back to the system as it is freed, so
    that the reads' decoded buffers do not stay in the process after each read:

    - what pyarrow allocates itself comes from the C library's malloc, not from its default
      mimalloc pool, which keeps the pages a scan freed for the next one (about 60 MB of peak at
      100,000 simulated servers; docs/benchmarks.md, "Stop 30"). The Parquet reader under a scan
      takes Arrow's C++ default pool instead, which only :func:`_arrow_on_system_malloc` can
      choose, before pyarrow loads ("Stop 41");
    - glibc maps every block of 128 KiB or more on its own. By default that threshold rises to
      the largest block freed (up to 32 MB), after which a read's column buffers come from the
      heap and its holes stay with the process: +65 MB for one scan of the findings' text
      columns at 100,000 servers, +20 MB with the threshold fixed ("Stop 31"). ``mallopt`` is
      glibc's; elsewhere that part is skipped. It is process-wide and left set: glibc cannot say
      what it was, and a fixed threshold only costs a mapping per large block.
    """
    import ctypes

    import pyarrow as pa

    try:
        ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
    except (OSError, AttributeError):   # not glibc (musl, macOS)
        pass
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)


def _release_freed_memory() -> None:
    """Give the memory the steps before freed back to the system, so that the next steps grow
    from what is still in use rather than from the reads' peak: the page's peak RSS is then the
    largest step's, not their sum (docs/benchmarks.md, "Stop 29").
    Freed memory otherwise stays with the process: Arrow's allocator keeps its pages for reuse,
    and so does glibc's malloc for the Python objects of the rows read (``malloc_trim``, glibc
    only; elsewhere that part is skipped)."""
    import ctypes
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc (musl, macOS): nothing to trim this way
        pass


def _write(target: str, parts: Iterable[str]) -> tuple[Path | str, int]:
    """Write the page's ``parts`` to ``target`` (a local path or an object-store URI) as UTF-8,
    one part at a time, through a temporary file, so that a page whose rendering fails half-way
    is never left at ``target``: a local page is written to a new file beside it (with the mode
    any new file gets) and renamed into place, an object-store page is uploaded once whole from
    an anonymous local file. Return where it was written and its size in bytes. Errors of the
    file system or object store raise ReportError; errors of the rendering propagate as they
    are. A process killed while writing can leave a ``.report-*`` file beside the target."""
    import os
    import secrets
    import shutil
    import tempfile

    if isinstance(parts, str):
        parts = (parts,)

    def failed(exc: OSError) -> ReportError:
        return ReportError(f"cannot write the report to {target!r}: {exc}")

    def write_parts(stream) -> int:
        size = 0
        for part in parts:
            data = part.encode("utf-8")
            try:
                size += stream.write(data)
            except OSError as exc:
                raise failed(exc) from None
        return size

    if "://" in target:
        try:
            staged = tempfile.TemporaryFile()     # gone once closed, whatever happens
        except OSError as exc:
            raise failed(exc) from None
        with staged:
            size = write_parts(staged)
            try:
                from pyarrow import fs as pafs

                filesystem, where = pafs.FileSystem.from_uri(target)
                filesystem.create_dir(where.rsplit("/", 1)[0], recursive=True)
                staged.seek(0)
                with filesystem.open_output_stream(where) as out:
                    shutil.copyfileobj(staged, out, 1 << 20)
            except OSError as exc:
                raise failed(exc) from None
        return target, size
    path = Path(target)
    temporary = path.with_name(f".report-{os.getpid()}-{secrets.token_hex(4)}-{path.name}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stream = open(temporary, "xb")
    except OSError as exc:
        raise failed(exc) from None
    try:
        with stream:
            size = write_parts(stream)
        try:
            os.replace(temporary, path)
        except OSError as exc:
            raise failed(exc) from None
    finally:
        temporary.unlink(missing_ok=True)
    return path, size


# ---------------------------------------------------------------------------------------------
# Command line


def cmd_report(args: argparse.Namespace) -> int:
    """``gtid-audit report``."""
    _arrow_on_system_malloc()
    from jobs.config import ConfigError, load_config
    from jobs.delta_io import DeltaIOError

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        log.error("%s", exc)
        return 1
    try:
        where = write_report(config.resolved_warehouse(), args.run_id, args.out,
                             storage_options=dict(config.storage_options or {}) or None,
                             trend_runs=args.trend_runs)
    except (ReportError, DeltaIOError, ValueError) as exc:
        log.error("%s", exc)
        return 1
    print(where)
    return 0


def register(subparsers) -> None:
    """Add ``report`` to the gtid-audit parser."""
    p = subparsers.add_parser(
        "report", help="write one self-contained HTML report of a run (topology, trends, findings)",
        description="Write one self-contained HTML page of an audited run: the fleet at a glance, each "
                    "cluster's topology coloured by its findings, failover readiness, trends, and the "
                    "findings table. Reads only the Delta tables; opens without network.")
    p.add_argument("--config", required=True, help="the configuration file (for the warehouse)")
    p.add_argument("--run-id", default=None, help="an audited run (default: the newest)")
    p.add_argument("--out", default=None,
                   help=f"where to write the page (default: <warehouse>/{REPORTS_DIR}/<run_date>/<run_id>.html)")
    p.add_argument("--trend-runs", type=int, default=DEFAULT_TREND_RUNS, metavar="N",
                   help=f"runs shown by the trend charts (default {DEFAULT_TREND_RUNS})")
    p.set_defaults(func=cmd_report)
