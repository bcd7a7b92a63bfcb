"""One night in one pass: ``gtid-audit run``, ``collect`` and ``audit`` are this pipeline.

config -> plan -> read tasks -> snapshot tables (``jobs.collect``) -> pair joins -> checks ->
findings -> alerts (``jobs.audit``), in one process with one Spark session. ``collect`` runs
the first half, ``audit`` the second on an already collected run, ``run`` both on the run it
just collected. No command rebuilds a command line to call another.

Exit codes: 0 ok; 2 open, unsilenced findings at or above ``--fail-on``; 1 the job failed (or
the alert feed could not be delivered).
"""
from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from jobs.config import ConfigError, GtidAuditConfig, load_config

__all__ = ["Night", "run_night", "register", "main"]

log = logging.getLogger("gtid_audit.pipeline")


@dataclass
class Night:
    """What one pipeline run did: the collection counters and/or the audit's outcome."""

    run_id: str | None
    collected: "object | None" = None   # jobs.collect.CollectSummary
    audited: "object | None" = None     # jobs.audit.AuditOutcome
    maintained: "list | None" = None    # jobs.maintain.TableMaintenance, one per table

    @property
    def exit_code(self) -> int:
        return self.audited.exit_code if self.audited is not None else 0


def run_night(config: GtidAuditConfig, *, collect: bool = True, audit: bool = True, run_id: str | None = None,
              fail_on: str | None = None, send_alerts: bool = True, spark=None) -> Night:
    """Collect and/or audit with one Spark session (built from ``config.spark`` unless given).
    Raises ConfigError, ValueError (a bad run id), AuditError or DeltaIOError for a job that
    cannot run; a server that cannot be read is never an exception (it is a finding)."""
    from jobs.audit import audit_run
    from jobs.collect import run_collect
    from jobs.spark import build_session

    spark = spark or build_session(config.spark)
    night = Night(run_id=run_id)
    seconds = None
    if collect:
        summary = run_collect(spark, config, run_id=run_id, started=dt.datetime.now(dt.timezone.utc))
        night.collected, night.run_id, seconds = summary, summary.run_id, summary.seconds
        log.info("%s", summary.line())
    if audit:
        night.audited = audit_run(spark, config, run_id=night.run_id, collect_seconds=seconds,
                                  fail_on=fail_on, send_alerts=send_alerts)
        night.run_id = night.audited.run_id
    if collect and audit and config.maintenance.after_run:
        night.maintained = _maintain(spark, config)
    return night


def _maintain(spark, config: GtidAuditConfig) -> list:
    """The last step of ``run`` (``maintenance.after_run``): retention, OPTIMIZE, VACUUM. A
    table that cannot be maintained is logged as an error, never a failed night: the findings
    and the exit code are the night's outcome (``gtid-audit maintain`` exits 1 for it)."""
    from jobs.maintain import MaintenanceError, maintain_tables

    try:
        return maintain_tables(spark, config)
    except MaintenanceError as exc:
        log.error("maintenance skipped: %s", exc)
        return []


def _command(args: argparse.Namespace, *, collect: bool, audit: bool) -> int:
    from jobs.audit import AuditError, print_outcome
    from jobs.delta_io import DeltaIOError
    from jobs.delta_jars import DeltaJarsError

    try:
        config = load_config(args.config)
        night = run_night(config, collect=collect, audit=audit, run_id=args.run_id,
                          fail_on=getattr(args, "fail_on", None),
                          send_alerts=not getattr(args, "no_alertmanager", False))
    except (ConfigError, ValueError, AuditError, DeltaIOError, DeltaJarsError) as exc:
        log.error("%s", exc)
        return 1
    if night.collected is not None:
        print(night.collected.line())
    if night.audited is not None:
        print_outcome(night.audited)
        report = write_fleet_report(config, night.audited.run_id)
        if report is not None:
            print(f"report: {report}")
    return night.exit_code


#: Longest a report process may take before the night gives up on it (its exit code stands).
REPORT_TIMEOUT_S = 1800


def write_fleet_report(config: GtidAuditConfig, run_id: str):
    """The run's HTML report next to the alert feed, built by ``gtid-audit report`` in a process
    of its own (``jobs.report`` reads only the audit's report tables and the findings): a report
    that cannot be built, or a report process killed for its memory, is a logged warning, never a
    failed night, and the night's exit code stands. A scheduler may run the same command as a
    task of its own. Returns where the page was written, or None."""
    import subprocess

    if config.source_path is None:  # a configuration built in code: no file for the child to read
        from jobs.report import write_report

        try:
            return write_report(config.resolved_warehouse(), run_id,
                                storage_options=dict(config.storage_options or {}) or None, progress=False)
        except Exception as exc:  # the report never fails the night
            log.warning("report not written: %s", exc)
            return None
    command = [sys.executable, "-m", "jobs.cli", "report", "--config", str(config.source_path), "--run-id", run_id]
    try:
        root = str(Path(__file__).resolve().parents[1])  # the child imports this checkout's jobs package
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.run(command, capture_output=True, text=True, timeout=REPORT_TIMEOUT_S, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("report not written: %s", exc)
        return None
    if proc.returncode < 0:
        hint = " (out of memory? the kernel's OOM killer sends it)" if -proc.returncode == signal.SIGKILL else ""
        log.warning("report not written: the report process was killed by %s%s", _signal_name(-proc.returncode), hint)
        return None
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        log.warning("report not written (the report process exited with %s): %s", proc.returncode, why)
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def register(subparsers) -> None:
    """Add ``run``, ``collect`` and ``audit`` to the gtid-audit parser."""
    fmt = argparse.RawDescriptionHelpFormatter
    codes = ("\n\nexit codes: 0 ok; 2 open findings at or above --fail-on; "
             "1 the job failed (or the alert feed could not be delivered).")

    def audit_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--fail-on", choices=["critical", "warning", "never"], default=None,
                       help="exit 2 when open findings at or above this severity exist "
                            "(default: audit.fail_on, itself 'critical')")
        p.add_argument("--no-alertmanager", action="store_true",
                       help="do not post to Alertmanager even if configured (the feed is still written)")

    p = subparsers.add_parser(
        "run", help="nightly job: collect every server, then audit the run", formatter_class=fmt,
        description="The nightly job. Collect every server of the inventory into the Delta snapshot "
                    "tables (a new run id),\nthen audit that run: per-pair checks, findings with history, "
                    "the alert feed." + codes)
    p.add_argument("--config", required=True, metavar="FILE", help="configuration file (YAML)")
    audit_options(p)
    p.add_argument("--run-id", default=None,
                   help="run id for the collection (default: a new timestamped id); rerunning an id "
                        "replaces its rows")
    p.set_defaults(func=lambda a: _command(a, collect=True, audit=True))

    p = subparsers.add_parser("collect", help="read every server into the Delta snapshot tables",
                              description="Read every server of the inventory into the Delta "
                                          "snapshot tables and print a one-line summary.")
    p.add_argument("--config", required=True, metavar="FILE", help="configuration file (YAML)")
    p.add_argument("--run-id", metavar="ID", help="run id (default: new); rerunning an id replaces its rows")
    p.set_defaults(func=lambda a: _command(a, collect=True, audit=False))

    p = subparsers.add_parser(
        "audit", help="audit an already collected run (default: the newest)", formatter_class=fmt,
        description="Audit a run that `collect` already wrote: checks, findings, history, alert feed. "
                    "Auditing a run again\nreplaces its audit rows." + codes)
    p.add_argument("--config", required=True, metavar="FILE", help="configuration file (YAML)")
    audit_options(p)
    p.add_argument("--run-id", default=None, help="run to audit (default: the newest collected run)")
    p.set_defaults(func=lambda a: _command(a, collect=False, audit=True))


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point (``python -m jobs.pipeline run --config FILE``)."""
    from jobs.logs import configure_logging

    parser = argparse.ArgumentParser(prog="gtid-audit")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    configure_logging()
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
