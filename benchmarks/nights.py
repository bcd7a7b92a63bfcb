"""A simulated year: `gtid-audit run` night after night against a fleet that changes (issue #20).

Generates a simulated fleet (jobs/sandbox/sim, the same generator as benchmarks/scale_fleet.py),
then for each of ``--nights`` nights:

1. changes the fleet as a day would (:func:`jobs.sandbox.sim.evolve.next_night`: sources write,
   binary logs rotate and are purged, fault scenarios are repaired and new ones appear, clusters
   are decommissioned and new ones added, replicas are repointed), and serves it over the MySQL
   wire protocol from simulator processes on this machine;
2. runs the nightly job's CLI as a scheduler would, ``gtid-audit run`` with table maintenance as
   its last step (``maintenance.after_run: true``, the production defaults of
   conf/example-production.yaml: 30 days of binary_logs, 14 of relay_log_tail, 400 of servers and
   channels, findings kept), one warehouse for every night;
3. records the wall time of the command, the peak RSS of its driver (Python), of its JVM (in
   local mode the executors too) and of Spark's Python workers together (where the reads and
   the checks run), the bytes and files of every table (the files of the table's
   current version, the files on disk, the Delta log's files), and recall and false positives of
   the night's open findings against the model's truth;
4. on the first and the last night, runs every query of docs/dashboards.md on Spark SQL over the
   warehouse (a separate process): its time (best and median of 5 rounds, after one run of
   every query to warm up) and, for each table it scans, the partition filters of the scan in
   the physical plan. On the last night the same session also queries a copy of night 1's
   tables (taken after night 1), round by round beside the last night's, so that the two are
   compared under the same load and the same warmed JVM, not across sessions days apart.

**The clock.** Night k's run runs on the date ``today - (nights - k)`` days: the driver's Python
clock is moved there with time-machine (``time_machine.travel``, ticking), so run ids, run_date
partitions, retention cut-offs and findings' first_seen are the simulated night's. Spark's Python
workers and the JVM keep the real clock (libfaketime hangs Spark's JVM): the servers' ``read_at``,
Delta's commit timestamps, VACUUM's horizon and the log's cleanup are real time, and the driver's
removal of stale read staging (by age) never comes due. So that VACUUM still deletes what retention and compaction
removed within a run of a few hours, the benchmark sets ``deleted_file_retention_hours: 0``. The
Delta log is aged as a calendar would age it: after each night, the modification time of every
file under every table's ``_delta_log`` is moved back by one day (:func:`age_logs`), so that on
night k the log files written on night j are k - j days old. Delta takes a log file's age from
its modification time (the log cleanup that runs with each checkpoint deletes the commits and
checkpoints older than ``delta.logRetentionDuration``, truncated to midnight UTC, that come
before the latest checkpoint; the history's timestamps, which the maintenance's VACUUM schedule
reads, are the commit files' times too), so the log's cleanup comes due night by night as on a
real calendar; ``--log-retention-days`` shortens it as ``--retention`` shortens the tables'.
Data files keep their times (VACUUM reads a removed file's age from the log's contents, which
are not aged). The dashboard queries' ``current_date`` is replaced with the simulated night's
date.

**A fleet in its steady state** (``--fleet-age K``). The generated fleet is young: each server
has the one to three binary logs it was provisioned with, where after a week of rotations it keeps
``binlog_keep`` of them, and a real fleet has those on the job's first night too. With
``--fleet-age K`` the fleet changes for K nights (numbered from 1001: their new servers' names are
their own) before night 1, and no job runs on them, so night 1 audits a fleet whose binary logs,
faults and churn are those of any later night, and the last night is compared with a first night
on a like fleet (issue #20's "within 10 % of night 1").

**Replayed nights** (``--replay-to N``). A year of nights is about 11 hours of this machine when
nothing else runs, longer than any one sitting here. With ``--replay-to N`` the nights from the
second (or the next one, with ``--resume``) to N - 1 are not run: the fleet changes night by
night as always (so night N's fleet is the one a year of changes made), and the tables get, for
each of those nights, a copy of the last night that ran, under the replayed night's run id and
date, with the job's own maintenance after each batch of ``--replay-batch`` nights
(:func:`replay_main`). Nights N to ``--nights`` then run for real over a year's tables. What this
does not reproduce: the replayed nights' findings come and go with the last real night's, not
with the fleet's faults; the replayed nights' commits are one per table and batch, not one per
night and step; and the Delta logs of a batch all have the age of its last night.

Usage: python benchmarks/nights.py --servers 1000 --nights 365 [--seed 1] [--fleet-age K] [--processes N] [--keep DIR]
       [--retention TABLE=DAYS ...] [--log-retention-days N] [--until HH:MM]
       [--replay-to N [--replay-batch NIGHTS]]
       python benchmarks/nights.py --keep DIR --resume [--until HH:MM]
       (a year is about 15 hours of a 2-core machine: it can run in pieces. ``--until`` or a file
       named STOP in DIR stops it between two nights; ``--resume`` goes on from the last whole
       night with the run's own settings, kept in DIR/state.json with the fleet of that night.
       The Delta logs' times are first moved forward by the real time that passed in between, so
       the simulated calendar does not age them while nothing runs.)
       python benchmarks/nights.py --queries WAREHOUSE DAY OUT.json [WAREHOUSE DAY ...] [--rounds N]
       (the dashboard queries alone, over one warehouse and others beside it in the same session)
The figures are recorded in docs/benchmarks.md (section "A simulated year").
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

import yaml

from procs import children, pss, rss_and_cmdline  # benchmarks/procs.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jobs.sandbox.sim import Simulator, generate  # noqa: E402
from jobs.sandbox.sim.model import SimFleet  # noqa: E402
from jobs.sandbox.sim.evolve import next_night  # noqa: E402
from jobs.sandbox.sim.score import read_findings, score  # noqa: E402

#: The job's CLI with its Python clock at argv[1] (ISO 8601), ticking from there.
AT_DATE = ("import sys, time_machine; time_machine.travel(sys.argv[1], tick=True).start(); "
           "from jobs.cli import main; sys.exit(main(sys.argv[2:]))")
DASHBOARDS = ROOT / "docs" / "dashboards.md"
#: ``--fleet-age``'s nights are numbered from here (next_night seeds and names by the night's number)
FLEET_AGE_NIGHTS = 1000


def first_fleet(servers: int, seed: int, fleet_age: int):
    """Night 1's fleet: ``servers`` generated with ``seed``, then changed by ``fleet_age`` nights
    that no job audits. They are numbered from ``FLEET_AGE_NIGHTS`` + 1, so the servers they add
    have names of their own."""
    fleet = generate(servers, seed=seed)
    for k in range(1, fleet_age + 1):
        next_night(fleet, FLEET_AGE_NIGHTS + k)
    return fleet


def _dashboard_queries() -> dict[str, str]:
    """Each ```sql block under a '## ' heading of docs/dashboards.md, the table set-up excluded."""
    out: dict[str, str] = {}
    for section in re.split(r"^## ", DASHBOARDS.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        for i, block in enumerate(re.findall(r"```sql\n(.*?)```", section, re.S)):
            if "CREATE TABLE" not in block:
                out[f"{title} #{i + 1}"] = block.strip().rstrip(";")
    return out


def _table_sizes(warehouse: Path) -> dict[str, dict[str, int]]:
    """Per table: bytes and files of its current version (delta-rs), data files and bytes on disk,
    and the Delta log's files and bytes."""
    import pyarrow as pa
    from deltalake import DeltaTable

    out = {}
    for table in sorted(p for p in warehouse.iterdir() if (p / "_delta_log").is_dir()):
        current = pa.table(DeltaTable(str(table)).get_add_actions(flatten=True)).to_pydict()
        disk_files = disk_bytes = log_files = log_bytes = 0
        kinds = dict.fromkeys(("log_commits", "log_crc", "log_checkpoints", "log_other"), 0)
        for root, _, files in os.walk(table):
            is_log = "_delta_log" in Path(root).relative_to(table).parts
            for f in files:
                size = os.stat(os.path.join(root, f)).st_size
                if is_log:
                    log_files, log_bytes = log_files + 1, log_bytes + size
                    kinds[_log_kind(f)] += 1
                elif f.endswith(".parquet"):
                    disk_files, disk_bytes = disk_files + 1, disk_bytes + size
        out[table.name] = {"files": len(current["path"]), "bytes": sum(current["size_bytes"]),
                           "disk_files": disk_files, "disk_bytes": disk_bytes,
                           "log_files": log_files, "log_bytes": log_bytes, **kinds}
    return out


def age_logs(warehouse: Path, seconds: int) -> int:
    """Move the modification time of every file under every table's ``_delta_log`` back by
    ``seconds`` (module docstring, "The clock"); returns how many files were aged."""
    aged = 0
    for log in warehouse.glob("*/_delta_log"):
        for root, _, files in os.walk(log):
            for f in files:
                path = os.path.join(root, f)
                st = os.stat(path)
                os.utime(path, ns=(st.st_atime_ns - seconds * 10**9, st.st_mtime_ns - seconds * 10**9))
                aged += 1
    return aged


def _log_kind(name: str) -> str:
    """What a file of a Delta log is: a commit, its checksum, a checkpoint or something else."""
    if re.fullmatch(r"\d{20}\.json", name):
        return "log_commits"
    if re.fullmatch(r"\d{20}\.crc", name):
        return "log_crc"
    if ".checkpoint" in name:
        return "log_checkpoints"
    return "log_other"


class Peaks:
    """Peak RSS of a command's process (the driver), of its JVM child and of the JVM's Python
    workers together, sampled every 0.2 s, and when the driver reached its peak. For the workers
    also the peak of their summed PSS (:func:`procs.pss`: shared pages counted once), and how many
    worker processes there were and when, at the peak of their summed RSS."""

    def __init__(self, pid: int):
        self.pid, self.driver, self.jvm, self.workers = pid, 0, 0, 0
        self.workers_pss, self.workers_n, self.workers_peak_s = 0, 0, 0.0
        self.started = time.monotonic()
        self.driver_peak_s = 0.0   # seconds from the start to the driver's peak
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            rss = rss_and_cmdline(self.pid)[0]
            if rss > self.driver:
                self.driver, self.driver_peak_s = rss, time.monotonic() - self.started
            workers = workers_pss = workers_n = 0
            for child in children(self.pid):
                rss, cmd = rss_and_cmdline(child)
                if "java" in cmd.split(" ", 1)[0]:
                    self.jvm = max(self.jvm, rss)
                elif "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
                    workers, workers_n = workers + rss, workers_n + 1
                    workers_pss += pss(child)
            if workers > self.workers:
                self.workers, self.workers_n = workers, workers_n
                self.workers_peak_s = time.monotonic() - self.started
            self.workers_pss = max(self.workers_pss, workers_pss)
            self._done.wait(0.2)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def _save_state(path: Path, state: dict) -> None:
    """Where a run stands (its settings, the last whole night, the fleet's file), replaced at once."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)


def _run_id(day: dt.date, night: int) -> str:
    """Night ``night``'s run id: its run starts at 02:00 UTC of its simulated day."""
    return f"{dt.datetime.combine(day, dt.time(2, 0), dt.timezone.utc):%Y%m%dT%H%M%SZ}-night{night:03d}"


def _night_config(fleet: SimFleet, work: Path, warehouse: Path, retention: dict,
                  log_retention_days: int | None) -> Path:
    """The audit configuration of tonight's fleet, with the maintenance as the nightly run's last
    step (module docstring, "The clock", for deleted_file_retention_hours)."""
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(warehouse), password_file=work / "password")
    doc = yaml.safe_load(config.read_text())
    doc["maintenance"] = {"after_run": True, "deleted_file_retention_hours": 0}
    if retention:
        doc["maintenance"]["retention_days"] = retention
    if log_retention_days is not None:
        doc["maintenance"]["log_retention_days"] = log_retention_days
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    return config


def _until(text: str) -> dt.datetime:
    """``--until``: HH:MM today (UTC), or an ISO 8601 time (UTC unless it says otherwise)."""
    if re.fullmatch(r"\d{1,2}:\d{2}", text):
        hour, minute = map(int, text.split(":"))
        return dt.datetime.now(dt.timezone.utc).replace(hour=hour, minute=minute, second=0, microsecond=0)
    when = dt.datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def run_night(config: Path, when: dt.datetime, run_id: str, log: Path) -> tuple[float, int, Peaks]:
    argv = [sys.executable, "-c", AT_DATE, when.isoformat(), "run", "--config", str(config),
            "--run-id", run_id, "--fail-on", "never"]
    start = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=str(ROOT),
                                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        peaks = Peaks(proc.pid)
        try:
            rc = proc.wait()
        except BaseException:   # stopped mid-night: the night's driver, its JVM and workers go too
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            peaks.stop()
    return time.monotonic() - start, rc, peaks


def _plan_nodes(node):
    """``node`` and every node below it, the plans of its subqueries included (a JVM SparkPlan)."""
    yield node
    for seq in (node.children(), node.subqueries()):
        for i in range(seq.size()):
            yield from _plan_nodes(seq.apply(i))


def _scan(node) -> dict:
    """A file scan of the executed plan: its table (the last part of its location), its partition
    filters, and the files it read of the files its table's version has."""
    location = node.relation().location()
    root = location.rootPaths().apply(0).toString().rstrip("/")
    metrics = node.metrics()
    read = metrics.get("numFiles").get().value() if metrics.contains("numFiles") else None
    return {"table": root.rsplit("/", 1)[-1], "partition_filters": node.partitionFilters().toString(),
            "files_read": read}


def queries_main(warehouse: Path, day: str, out: Path, others: Sequence[tuple[Path, str]] = (),
                 rounds: int = 5) -> int:
    """Every dashboard query over ``warehouse`` as of ``day``, and over each of ``others`` (a
    warehouse and its day) in the same session: its time and its scans' partition filters.

    Every query runs once on every warehouse first (the JVM's code is compiled and every table's
    snapshot cached alike, whichever query comes first); then ``rounds`` rounds each run every
    query once on every warehouse, the warehouses' order alternating from round to round, so that
    a query's samples on two warehouses are taken minutes apart at most, under the same load.
    ``seconds`` is the best round, ``median`` the median one."""
    from pyspark.sql import SparkSession

    from jobs.spark import build_session
    from jobs.config import SparkSettings

    spark = build_session(SparkSettings())
    assert isinstance(spark, SparkSession)
    targets = [("gtid_audit", warehouse, day)] + [(f"gtid_audit_{i}", w, d) for i, (w, d) in enumerate(others, 1)]
    for database, location, _ in targets:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
        for table in sorted(p for p in location.iterdir() if (p / "_delta_log").is_dir()):
            spark.sql(f"CREATE TABLE IF NOT EXISTS {database}.{table.name} USING delta LOCATION '{table}'")

    def text(sql: str, database: str, on: str) -> str:
        sql = re.sub(r"\bcurrent_date\b(\(\))?", f"DATE'{on}'", sql, flags=re.I)
        return re.sub(r"\bgtid_audit\.", f"{database}.", sql)

    queries = _dashboard_queries()
    for title, sql in queries.items():
        for database, _, on in targets:
            spark.sql(text(sql, database, on)).collect()
    times: dict[tuple[str, str], list[float]] = {}
    rows: dict[tuple[str, str], int] = {}
    for round_ in range(rounds):
        for title, sql in queries.items():
            for database, _, on in (targets if round_ % 2 == 0 else targets[::-1]):
                t = time.monotonic()
                rows[title, database] = len(spark.sql(text(sql, database, on)).collect())
                times.setdefault((title, database), []).append(time.monotonic() - t)
    results = {}
    for title, sql in queries.items():
        measured = []
        for database, location, on in targets:
            spark.conf.set("spark.sql.adaptive.enabled", "false")   # a plain plan tree, its scans' metrics filled
            planned = spark.sql(text(sql, database, on))
            planned.collect()
            scans = [_scan(node) for node in _plan_nodes(planned._jdf.queryExecution().executedPlan())
                     if node.getClass().getSimpleName() == "FileSourceScanExec"]
            spark.conf.set("spark.sql.adaptive.enabled", "true")
            samples = times[title, database]
            measured.append({"warehouse": str(location), "day": on, "seconds": min(samples),
                             "median": statistics.median(samples), "samples": samples,
                             "rows": rows[title, database], "scans": scans})
        results[title] = {**measured[0], "others": measured[1:]}
    out.write_text(json.dumps(results, indent=1))
    spark.stop()
    return 0


def _queries(warehouse: Path, day: dt.date, out: Path, log: Path,
             others: Sequence[tuple[Path, dt.date]] = ()) -> dict:
    extra = [str(x) for w, d in others for x in (w, d.isoformat())]
    with log.open("w") as f:
        subprocess.run([sys.executable, __file__, "--queries", str(warehouse), day.isoformat(), str(out), *extra],
                       stdout=f, stderr=subprocess.STDOUT, cwd=str(ROOT), check=True)
    return json.loads(out.read_text())


def _replayed_tables() -> list:
    """The tables that hold one night's rows per run (a run_id and a run_date column), but
    ``findings_latest`` (each night MERGEs it: it holds the latest run's findings, not a history)
    and ``uuid_registry`` (replaced whole each night)."""
    from schemas import all_tables

    return [t for name, t in sorted(all_tables().items())
            if {"run_id", "run_date"} <= set(t.column_names) and name not in ("findings_latest", "uuid_registry")]


def replay_main(spec_path: Path) -> int:
    """``--replay SPEC.json``: write nights the job did not run, copies of one night it did run.

    The spec names the audit configuration, the source run (``run_id``, ``run_date``) and the
    nights to write (``night``, ``day``, ``run_id``), in batches of ``batch`` nights. For each
    batch, in one Spark session: every table of :func:`_replayed_tables` gets the source run's
    rows once per night of the batch, with that night's ``run_id`` and ``run_date`` and every
    timestamp column moved by the days between the two nights (``runs.started_at`` orders the
    runs: the next real night's previous run is the last replayed one), in one commit per table
    that replaces exactly the batch's dates (``replaceWhere run_date IN (...)``: a batch written
    again after an interruption replaces itself); then the job's maintenance as of the batch's
    last day (``jobs.maintain.maintain_tables``: retention, compaction, VACUUM on their own
    nights as the nightly run does them); then the Delta logs are aged by the batch's days
    (:func:`age_logs`). Prints one line and appends one JSON row per batch to the spec's
    ``out``: its seconds, the maintenance's seconds and lines, and the tables' sizes."""
    from pyspark.sql import functions as F

    from jobs.config import load_config
    from jobs.delta_io import OPTIMIZE_WRITE, _commit_marker, table_uri
    from jobs.maintain import maintain_tables
    from jobs.spark import build_session

    spec = json.loads(spec_path.read_text())
    config = load_config(spec["config"])
    warehouse = config.resolved_warehouse()
    spark = build_session(config.spark)
    source_day = dt.date.fromisoformat(spec["run_date"])
    sources = {}
    for schema in _replayed_tables():
        uri = table_uri(warehouse, schema.name)
        if not (Path(uri) / "_delta_log").is_dir():
            continue
        # kept apart once: retention deletes the source night's partition before the last batch
        kept = Path(spec["out"]).parent / "replay-source" / spec["run_id"] / schema.name
        if not kept.exists():
            (spark.read.format("delta").load(uri)
             .where((F.col("run_date") == F.lit(source_day)) & (F.col("run_id") == F.lit(spec["run_id"])))
             .write.parquet(str(kept)))
        sources[schema.name] = (schema, uri, spark.read.parquet(str(kept)))
    out = Path(spec["out"])
    # a replay cut short goes on after its last whole batch
    done = max((r["nights"][1] for r in map(json.loads, out.read_text().splitlines() if out.exists() else [])
                if r.get("source_run_id") == spec["run_id"]), default=0)
    nights = [n for n in spec["nights"] if n["night"] > done]
    for first in range(0, len(nights), spec["batch"]):
        batch = nights[first:first + spec["batch"]]
        started = time.monotonic()
        shifts = spark.createDataFrame(
            [(n["run_id"], dt.date.fromisoformat(n["day"]), (dt.date.fromisoformat(n["day"]) - source_day).days)
             for n in batch], "replay_run_id string, replay_run_date date, replay_days int")
        dates = ", ".join(f"DATE'{n['day']}'" for n in batch)
        for name, (schema, uri, rows) in sources.items():
            frame = rows.crossJoin(F.broadcast(shifts))
            columns = []
            for field in rows.schema.fields:
                if field.name == "run_id":
                    columns.append(F.col("replay_run_id").alias("run_id"))
                elif field.name == "run_date":
                    columns.append(F.col("replay_run_date").alias("run_date"))
                elif field.dataType.typeName() == "timestamp":
                    columns.append(F.expr(f"timestampadd(DAY, replay_days, `{field.name}`)").alias(field.name))
                else:
                    columns.append(F.col(field.name))
            (frame.select(*columns).write.format("delta").mode("overwrite")
             .option("replaceWhere", f"run_date IN ({dates})")
             .option(OPTIMIZE_WRITE, "true")
             .option("userMetadata", _commit_marker(schema))
             .save(uri))
        written = time.monotonic() - started
        lines: list[str] = []
        maintained = time.monotonic()
        results = maintain_tables(spark, config, on=dt.date.fromisoformat(batch[-1]["day"]), report=lines.append)
        maintenance = time.monotonic() - maintained
        age_logs(Path(warehouse), 86_400 * len(batch))
        sizes = _table_sizes(Path(warehouse))
        row = {"source_run_id": spec["run_id"], "nights": [batch[0]["night"], batch[-1]["night"]],
               "days": [batch[0]["day"], batch[-1]["day"]],
               "write_seconds": written, "maintenance_seconds": maintenance,
               "failed": [r.line() for r in results if r.error], "maintenance": lines, "tables": sizes,
               "ended_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        total = sum(t["bytes"] for t in sizes.values())
        files = sum(t["files"] for t in sizes.values())
        logs = sum(t["log_files"] for t in sizes.values())
        print(f"replayed nights {batch[0]['night']}-{batch[-1]['night']} ({batch[0]['day']} to {batch[-1]['day']}): "
              f"write {written:5.1f} s  maintenance {maintenance:5.1f} s  tables {total / 2**20:7.1f} MB in "
              f"{files:,} files, {logs:,} log files{'  FAILED ' + '; '.join(row['failed']) if row['failed'] else ''}",
              flush=True)
        if row["failed"]:
            return 1
    spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--replay"]:     # SPEC.json (written by the run itself)
        return replay_main(Path(argv[1]))
    if argv[:1] == ["--queries"]:   # WAREHOUSE DAY OUT.json [WAREHOUSE DAY ...] [--rounds N]
        rest, rounds = argv[4:], 5
        if "--rounds" in rest:
            at = rest.index("--rounds")
            rounds, rest = int(rest[at + 1]), rest[:at] + rest[at + 2:]
        return queries_main(Path(argv[1]), argv[2], Path(argv[3]),
                            others=[(Path(w), d) for w, d in zip(rest[::2], rest[1::2])], rounds=rounds)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--servers", type=int, default=1000)
    p.add_argument("--nights", type=int, default=365)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--processes", type=int, default=None, help="simulator processes (default: 1 per 2,500 servers)")
    p.add_argument("--keep", type=Path, default=None, help="keep the work directory (warehouse, logs) here")
    p.add_argument("--retention", action="append", default=[], metavar="TABLE=DAYS",
                   help="maintenance.retention_days of TABLE instead of the production default (repeatable): "
                        "a few nights then reach what a month or a year would")
    p.add_argument("--log-retention-days", type=int, default=None, metavar="DAYS",
                   help="maintenance.log_retention_days (delta.logRetentionDuration) instead of the production "
                        "default of 30")
    p.add_argument("--resume", action="store_true",
                   help="continue the run kept in --keep DIR after its last whole night, with that run's settings "
                        "(a night cut short is run again, under its own run id)")
    p.add_argument("--until", default=None, metavar="HH:MM|ISO",
                   help="start no night after this time (UTC; HH:MM is today's): a long run goes on later "
                        "with --resume. A file named STOP in the work directory does the same")
    p.add_argument("--replay-to", type=int, default=None, metavar="NIGHT",
                   help="nights from the second (or, with --resume, the next) to NIGHT - 1 are not run: the fleet "
                        "changes as on any night and the tables get copies of the last night that ran, with the "
                        "job's maintenance on them (replay_main); nights from NIGHT on run. A year's tables for "
                        "the hours of a few nights")
    p.add_argument("--fleet-age", type=int, default=0, metavar="NIGHTS",
                   help="change the generated fleet for this many nights before night 1, with no job run: night 1 "
                        "then audits a fleet in its steady state (every server at its binlog_keep binary logs, "
                        "faults come and gone), as a real fleet is on the job's first night")
    p.add_argument("--replay-batch", type=int, default=None, metavar="NIGHTS",
                   help="replayed nights written per commit and maintained together (default 7)")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)   # kill: the night's processes and simulators stop
    try:
        import time_machine  # noqa: F401 - each night's driver needs it; fail here, not after night 1's fleet
    except ImportError:
        print("nights.py needs time-machine (the bench extra): pip install -e '.[bench]' (or make bench)",
              file=sys.stderr)
        return 2
    if args.log_retention_days is not None and args.log_retention_days < 1:
        p.error(f"--log-retention-days must be at least 1, not {args.log_retention_days!r}")
    if args.nights < 1:
        p.error(f"--nights must be at least 1, not {args.nights!r}")
    if args.fleet_age < 0:
        p.error(f"--fleet-age must be 0 or more, not {args.fleet_age!r}")
    if args.fleet_age and args.nights >= FLEET_AGE_NIGHTS:   # their numbers, and so their servers' names, would meet
        p.error(f"--fleet-age needs --nights below {FLEET_AGE_NIGHTS}, not {args.nights!r}")
    if args.replay_batch is not None and args.replay_batch < 1:
        p.error(f"--replay-batch must be at least 1, not {args.replay_batch!r}")
    retention = {}
    for item in args.retention:
        table, _, days = item.partition("=")
        if not table or not days.isdigit():
            p.error(f"--retention expects TABLE=DAYS (e.g. binary_logs=3), not {item!r}")
        retention[table] = int(days)

    work = args.keep or Path(tempfile.mkdtemp(prefix="gtid-nights-"))
    work.mkdir(parents=True, exist_ok=True)
    warehouse = work / "warehouse"
    night1_copy = work / "warehouse-night001"
    state_path = work / "state.json"
    if args.resume:
        if args.keep is None or not state_path.exists():
            p.error("--resume continues the run kept in --keep DIR (its state.json); give that directory")
        state = json.loads(state_path.read_text())
        (work / "STOP").unlink(missing_ok=True)   # asked to go on
        state.setdefault("fleet_age", 0)   # a run kept before --fleet-age existed
        for key in ("servers", "nights", "seed", "processes", "retention", "log_retention_days", "fleet_age"):
            setattr(args, key, state[key])   # the run's own settings, whatever this command line says
        retention = state["retention"]
        fleet = SimFleet.load(work / state["fleet_file"])
        first_day = dt.date.fromisoformat(state["first_day"])
        for key in ("replay_to", "replay_batch"):
            if getattr(args, key) is not None:
                state[key] = getattr(args, key)
        rows = [json.loads(line) for line in (work / "nights.jsonl").read_text().splitlines() if line.strip()]
        rows = [r for r in rows if r["night"] <= state["night_done"]]
        # The calendar stood still while nothing ran: the Delta log's files are made younger by the
        # real time since the last night ended, so that their age is the simulated calendar's again.
        paused = time.time() - state["saved_at"]
        age_logs(warehouse, -int(paused))
        queries = {n: json.loads((work / f"queries{n:03d}.json").read_text())
                   for n in (1,) if (work / f"queries{n:03d}.json").exists()}
        print(f"resuming {work} after night {state['night_done']} (paused {paused / 3600:.1f} h: the Delta "
              f"logs' times moved forward by as much)", flush=True)
    else:
        if state_path.exists():
            p.error(f"{work} holds a run (state.json): continue it with --resume, or give another --keep")
        fleet = first_fleet(args.servers, args.seed, args.fleet_age)
        today = dt.datetime.now(dt.timezone.utc).date()
        first_day = today - dt.timedelta(days=args.nights - 1)
        rows, queries = [], {}
        shutil.rmtree(night1_copy, ignore_errors=True)
        args.processes = args.processes or max(1, -(-args.servers // 2500))
        state = {"servers": args.servers, "nights": args.nights, "seed": args.seed, "processes": args.processes,
                 "fleet_age": args.fleet_age,
                 "retention": retention, "log_retention_days": args.log_retention_days,
                 "first_day": first_day.isoformat(), "night_done": 0, "fleet_night": 0,
                 "fleet_file": "fleet-000.json", "change": "", "saved_at": time.time(),
                 "replay_to": args.replay_to, "replay_batch": args.replay_batch or 7}
        fleet.save(work / state["fleet_file"])
        _save_state(state_path, state)
    processes = args.processes
    until = _until(args.until) if args.until else None
    print(f"servers {args.servers}  nights {args.nights} ({first_day} to "
          f"{first_day + dt.timedelta(days=args.nights - 1)})  seed {args.seed}  "
          f"simulator processes {processes}  work {work}"
          f"{f'  fleet aged {args.fleet_age} nights' if args.fleet_age else ''}"
          f"{'  retention ' + json.dumps(retention) if retention else ''}"
          f"{f'  log retention {args.log_retention_days} days' if args.log_retention_days else ''}"
          f"{f'  until {until:%Y-%m-%d %H:%M} UTC' if until else ''}", flush=True)
    replay_to, replay_batch = state.get("replay_to"), state.get("replay_batch", 7)
    if replay_to is not None and not 2 < replay_to <= args.nights:
        p.error(f"--replay-to must be a night after the second and at most --nights ({args.nights}), not {replay_to!r}")
    night = state["night_done"]
    while night < args.nights:
        night = state["night_done"] + 1
        if (until and dt.datetime.now(dt.timezone.utc) >= until) or (work / "STOP").exists():
            print(f"stopped before night {night} ({'--until' if until else 'STOP file'}); continue with "
                  f"--keep {work} --resume", flush=True)
            return 0
        if state["fleet_night"] < night and night > 1:   # not yet evolved for this night (a rerun night is not)
            change = next_night(fleet, night)
            fleet_file = f"fleet-{night:03d}.json"
            fleet.save(work / fleet_file)
            old, state["fleet_file"] = state["fleet_file"], fleet_file
            state.update(fleet_night=night, change=change.line())
            _save_state(state_path, state)
            (work / old).unlink(missing_ok=True)
        if replay_to and 1 < night < replay_to:
            # nights night .. replay_to - 1: the fleet changes as every night, the tables get copies of
            # the last night the job ran (replay_main)
            last = night - 1
            for n in range(max(night, state["fleet_night"] + 1), replay_to):
                next_night(fleet, n)
            fleet_file = f"fleet-{replay_to - 1:03d}.json"
            fleet.save(work / fleet_file)
            config = _night_config(fleet, work, warehouse, retention, args.log_retention_days)
            source_day = first_day + dt.timedelta(days=last - 1)
            spec = {"config": str(config), "run_id": _run_id(source_day, last), "run_date": source_day.isoformat(),
                    "batch": replay_batch, "out": str(work / "replay.jsonl"),
                    "nights": [{"night": n, "day": (first_day + dt.timedelta(days=n - 1)).isoformat(),
                                "run_id": _run_id(first_day + dt.timedelta(days=n - 1), n)}
                               for n in range(night, replay_to)]}
            (work / "replay.json").write_text(json.dumps(spec, indent=1))
            print(f"replaying nights {night}-{replay_to - 1} from night {last}'s run (batches of {replay_batch})",
                  flush=True)
            with (work / "replay.log").open("a") as f:
                rc = subprocess.run([sys.executable, __file__, "--replay", str(work / "replay.json")],
                                    stdout=f, stderr=subprocess.STDOUT, cwd=str(ROOT)).returncode
            if rc != 0:
                print(f"replay of nights {night}-{replay_to - 1}: exit {rc}; see {work / 'replay.log'}")
                return 1
            for line in (work / "replay.log").read_text().splitlines():
                if line.startswith("replayed nights"):
                    print("  " + line, flush=True)
            old, state["fleet_file"] = state["fleet_file"], fleet_file
            state.update(fleet_night=replay_to - 1, night_done=replay_to - 1, replayed=[night, replay_to - 1],
                         change="", saved_at=time.time())
            _save_state(state_path, state)
            if old != fleet_file:
                (work / old).unlink(missing_ok=True)
            continue
        config = _night_config(fleet, work, warehouse, retention, args.log_retention_days)
        day = first_day + dt.timedelta(days=night - 1)
        when = dt.datetime.combine(day, dt.time(2, 0), dt.timezone.utc)
        run_id = _run_id(day, night)
        load_before = os.getloadavg()[0]
        sim = Simulator(work / state["fleet_file"], processes=processes, lifetime_s=3600, workdir=work).start()
        try:
            wall, rc, peaks = run_night(config, when, run_id, work / f"night{night:03d}.log")
        finally:
            sim.stop()
        if rc not in (0, 2):
            print(f"night {night}: gtid-audit run exited {rc}; see {work / f'night{night:03d}.log'}")
            return 1
        s = score(fleet.truth, read_findings(warehouse, run_id))
        sizes = _table_sizes(warehouse)
        row = {"night": night, "date": day.isoformat(), "servers": len(fleet.servers), "wall": wall,
               "driver_rss": peaks.driver, "jvm_rss": peaks.jvm, "workers_rss": peaks.workers,
               "workers_pss": peaks.workers_pss, "workers_at_peak": peaks.workers_n,
               "workers_peak_s": peaks.workers_peak_s, "recall": s.recall,
               "expected": len(s.expected), "missed": sorted(map(list, s.missed)),
               "false_positives": sorted(map(list, s.false_positives)), "tables": sizes,
               "change": state["change"] if night > 1 else "",
               "load_before": load_before, "load_after": os.getloadavg()[0],
               "ended_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        rows.append(row)
        total = sum(t["bytes"] for t in sizes.values())
        disk = sum(t["disk_bytes"] + t["log_bytes"] for t in sizes.values())
        files = sum(t["files"] for t in sizes.values())
        print(f"night {night:3d} {day}  servers {len(fleet.servers):,}  wall {wall:6.1f} s  driver "
              f"{peaks.driver / 2**20:5.0f} MB  JVM {peaks.jvm / 2**20:6.0f} MB  workers {peaks.workers / 2**20:5.0f} MB "
              f"(PSS {peaks.workers_pss / 2**20:4.0f} MB, {peaks.workers_n} at {peaks.workers_peak_s:.0f} s)  tables {total / 2**20:7.1f} MB "
              f"in {files:,} files (disk with logs {disk / 2**20:7.1f} MB)  recall {100 * s.recall:.0f} % "
              f"({len(s.expected) - len(s.missed)}/{len(s.expected)})  false positives {len(s.false_positives)}  "
              f"load {load_before:.1f}-{row['load_after']:.1f}  {row['change']}", flush=True)
        for miss in row["missed"]:
            print(f"  missed {miss}")
        for fp in row["false_positives"]:
            print(f"  false positive {fp}")
        if night == 1:
            queries[night] = _queries(warehouse, day, work / f"queries{night:03d}.json", work / f"queries{night:03d}.log")
            if args.nights > 1:   # night 1's tables, queried again beside the last night's
                shutil.rmtree(night1_copy, ignore_errors=True)
                shutil.copytree(warehouse, night1_copy, copy_function=shutil.copy2)
        elif night == args.nights:
            queries[night] = _queries(warehouse, day, work / f"queries{night:03d}.json", work / f"queries{night:03d}.log",
                                      others=[(night1_copy, first_day)])
        age_logs(warehouse, 86_400)
        with (work / "nights.jsonl").open("a") as f:
            f.write(json.dumps(row) + "\n")
        state.update(night_done=night, saved_at=time.time())
        _save_state(state_path, state)
    first, last = rows[0], rows[-1]
    print()
    ratio = lambda key: f"{last[key] / first[key]:.2f}x" if first.get(key) else "n/a"  # noqa: E731
    print(f"last night vs night 1: wall {ratio('wall')}, driver peak RSS {ratio('driver_rss')}, "
          f"JVM peak RSS {ratio('jvm_rss')}, Python workers' peak RSS {ratio('workers_rss')}")
    print()
    print("| table | night 1 bytes | files | last night bytes | files | on disk | log files "
          "(commits / checksums / checkpoints / other) | log bytes |")
    print("|---|---:|---:|---:|---:|---:|---|---:|")
    for name, t in last["tables"].items():
        f1 = first["tables"].get(name, {"bytes": 0, "files": 0})
        print(f"| {name} | {f1['bytes']:,} | {f1['files']} | {t['bytes']:,} | {t['files']} | "
              f"{t['disk_bytes']:,} in {t['disk_files']} | {t['log_files']} ({t['log_commits']} / {t['log_crc']} / "
              f"{t['log_checkpoints']} / {t['log_other']}) | {t['log_bytes']:,} |")
    print()
    print("| night | Delta log files, all tables (commits / checksums / checkpoints / other) | log bytes |")
    print("|---:|---|---:|")
    for r in rows:
        t = r["tables"].values()
        print(f"| {r['night']} | {sum(x['log_files'] for x in t):,} ({sum(x['log_commits'] for x in t):,} / "
              f"{sum(x['log_crc'] for x in t):,} / {sum(x['log_checkpoints'] for x in t):,} / "
              f"{sum(x['log_other'] for x in t):,}) | {sum(x['log_bytes'] for x in t):,} |")
    print()
    print("| query | night 1 | night 1's tables, beside the last night's (best / median) | last night (best / median) "
          "| last night's scans (table: files read, filter on the partition column) |")
    print("|---|---:|---:|---:|---|")
    for title, q in queries.get(args.nights, {}).items():
        q1 = queries.get(1, {}).get(title, {"seconds": float("nan")})
        beside = (q.get("others") or [{"seconds": float("nan"), "median": float("nan")}])[0]
        scans = "; ".join(f"{s['table']}: {s['files_read']} of {last['tables'].get(s['table'], {}).get('files')} "
                          f"file(s), partition filter "
                          f"{'yes' if 'run_date' in s['partition_filters'] else 'none'}" for s in q["scans"])
        print(f"| {title} | {q1['seconds'] * 1000:.0f} ms | {beside['seconds'] * 1000:.0f} / "
              f"{beside['median'] * 1000:.0f} ms | {q['seconds'] * 1000:.0f} / {q['median'] * 1000:.0f} ms | {scans} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
