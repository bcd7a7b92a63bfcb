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
import sys
from dataclasses import dataclass
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
    return night


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


def write_fleet_report(config: GtidAuditConfig, run_id: str):
    """The run's HTML report next to the alert feed (``jobs.report``); a report that cannot be
    built is a logged warning, never a failed night. Returns where it was written, or None."""
    from jobs.report import ReportError, write_report

    try:
        return write_report(config.resolved_warehouse(), run_id,
                            storage_options=dict(config.storage_options or {}) or None)
    except ReportError as exc:
        log.warning("report not written: %s", exc)
        return None


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
