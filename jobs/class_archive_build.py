"""Build the JVM class archive of local sessions (:mod:`jobs.class_archive`), once:
``python -m jobs.class_archive_build`` (``make class-archive``, after the Delta jars' install).

A child process starts a local session as the job does, with HotSpot told to write the classes
it loads into an archive at its exit, and runs a small night's worth of Spark and Delta on a
throw-away table in a temporary directory: partitioned writes, a ``replaceWhere``, filtered
reads, a MERGE, a join of Python-made rows, OPTIMIZE, VACUUM, the table's history. When the
child's JVM has exited and logged that it wrote the archive, the archive is moved into the
cache whole and its size recorded; a build that fails or is killed leaves no archive in use.
With an archive for the current ``java``, Spark and Delta jars already there it does nothing.
It prints what it did, and exits 0 when it could not build one (no ``java``, a HotSpot without
dynamic archives, a class path HotSpot cannot archive): sessions then load their classes from
the jars, as before, only slower to start. Exit 1 is a broken install (no Delta jars).
"""
from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from jobs.class_archive import WRITTEN_LINE, class_archive, prune, record
from jobs.delta_jars import DeltaJarsError, installed_jars

__all__ = ["build", "main"]

#: The longest a build's child (a JVM start and the workload) may take.
_TRAIN_TIMEOUT_S = 600
#: How long the child's JVM may take to write the archive after the child exits.
_DUMP_TIMEOUT_S = 180
_PID_PREFIX = "class-archive-jvm-pid "


def _say(message: str) -> None:
    print(f"class-archive: {message}", file=sys.stderr)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie that no one reaped has exited
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _kill_group(child: subprocess.Popen) -> None:
    """Kill the training child's process group (its JVM included) and reap the child."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def build(cache_root: Path | None = None) -> Path | None:
    """Build the archive for this installation unless it exists; return its path, or ``None``
    when none could be built (the reason printed)."""
    jars = installed_jars(cache_root)
    archive = class_archive(jars.jars, cache_root)
    if archive is None:
        _say("no java on PATH or in JAVA_HOME: no archive")
        return None
    if archive.usable():
        _say(f"{archive.path} is up to date")
        prune(archive)
        return archive.path
    archive.path.parent.mkdir(parents=True, exist_ok=True)
    written = archive.path.with_name(f"{archive.path.name}.{secrets.token_hex(4)}.tmp")
    log = Path(f"{written}.log")
    started = time.monotonic()
    env = dict(os.environ)
    if cache_root is not None:
        env["GTID_AUDIT_CACHE"] = str(cache_root)
    # its own process group: a timeout or an interrupt kills the JVM too, before it writes
    child = subprocess.Popen([sys.executable, "-m", "jobs.class_archive_build", "--train", str(written)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
    recorded = False
    try:
        # the JVM holds the child's output open until it has exited, archive written
        stdout, stderr = child.communicate(timeout=_TRAIN_TIMEOUT_S)
        pids = [int(line[len(_PID_PREFIX):]) for line in stdout.splitlines() if line.startswith(_PID_PREFIX)]
        if child.returncode != 0 or not pids:
            tail = "\n".join(stderr.strip().splitlines()[-5:])
            _say(f"the training session failed (exit {child.returncode}): no archive\n{tail}")
            return None
        deadline = time.monotonic() + _DUMP_TIMEOUT_S
        while _alive(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.2)
        cds_log = log.read_text(errors="replace") if log.exists() else ""
        if _alive(pids[0]) or WRITTEN_LINE not in cds_log or not written.exists():
            last = cds_log.strip().splitlines()[-1:] or ["no CDS log"]
            reason = "its JVM is still running" if _alive(pids[0]) else f"HotSpot wrote none: {last[0]}"
            _say(f"no archive ({reason}); sessions load their classes from the jars")
            return None
        record(archive, written, time.monotonic() - started)
        recorded = True
    except subprocess.TimeoutExpired:
        _say(f"the training session took more than {_TRAIN_TIMEOUT_S} s: no archive")
        return None
    finally:
        if not recorded:   # nothing of this build may write on after it
            _kill_group(child)
        written.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
    for old in prune(archive):
        _say(f"removed {old}")
    _say(f"wrote {archive.path} ({archive.path.stat().st_size / 1e6:.0f} MB) in {time.monotonic() - started:.0f} s")
    return archive.path


def _train(target: Path) -> None:
    """The child: a local session that writes ``target`` at its JVM's exit, after a small
    night's worth of Spark and Delta work."""
    from delta.tables import DeltaTable

    from jobs.config import SparkSettings
    from jobs.spark import build_session

    spark = build_session(SparkSettings(master="local[2]"), dump_class_archive=target)
    with tempfile.TemporaryDirectory(prefix="gtid-audit-class-archive-") as tmp:
        table = f"{tmp}/night"
        rows = spark.range(0, 3000).selectExpr(
            "id", "concat('server-', id % 50) AS server", "concat('run-', id % 3) AS run_id",
            "date_add(DATE'2026-01-01', CAST(id % 3 AS INT)) AS run_date", "current_timestamp() AS read_at")
        rows.write.format("delta").partitionBy("run_date").save(table)
        (rows.where("run_id = 'run-1'").write.format("delta").mode("overwrite")
         .option("replaceWhere", "run_date = DATE'2026-01-02'").save(table))
        night = spark.read.format("delta").load(table).where("run_date = DATE'2026-01-02' AND run_id = 'run-1'")
        python_rows = spark.createDataFrame(
            spark.sparkContext.parallelize(range(50), 2).mapPartitions(lambda ids: ((f"server-{i}", i) for i in ids)),
            "server STRING, n LONG")
        night.join(python_rows, "server").groupBy("server").count().orderBy("server").collect()
        (DeltaTable.forPath(spark, table).alias("t")
         .merge(rows.where("id < 100").alias("s"), "t.id = s.id AND t.run_date = s.run_date")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        spark.sql(f"OPTIMIZE delta.`{table}` WHERE run_date = DATE'2026-01-01'").collect()
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        spark.sql(f"VACUUM delta.`{table}` RETAIN 0 HOURS").collect()
        DeltaTable.forPath(spark, table).history().collect()
        print(f"{_PID_PREFIX}{spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()}", flush=True)
        spark.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m jobs.class_archive_build``: build the archive if it is missing."""
    parser = argparse.ArgumentParser(prog="python -m jobs.class_archive_build",
                                     description="Build the JVM class archive of local sessions once (make "
                                                 "class-archive runs this, after the Delta jars' install): "
                                                 "docs/deployment.md, section 2.")
    parser.add_argument("--train", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.train is not None:
        _train(args.train)
        return 0
    try:
        build()
    except DeltaJarsError as exc:
        _say(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
