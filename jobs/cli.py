"""``gtid-audit``: the one command-line entry point (console script ``jobs.cli:main``).

Each feature module contributes its sub-commands through ``register(subparsers)``; a sub-command
sets ``func(args) -> int`` whose return value is the process exit code.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from importlib.metadata import PackageNotFoundError, version

from jobs.logs import configure_logging

__all__ = ["main", "build_parser"]

#: Modules that contribute sub-commands, in the order ``--help`` lists them.
COMMAND_MODULES = (
    "jobs.pipeline",    # run, collect, audit
    "jobs.audit",       # findings, explain
    "jobs.collect",     # config check
    "jobs.sandbox.cli",  # sandbox install|up|status|down
    "jobs.demo",        # demo
    "jobs.report",      # report
    "jobs.maintain",    # maintain
    "jobs.delta_jars",  # delta-jars install|show
)

DESCRIPTION = """\
Audit GTID replication consistency across a whole MySQL fleet, every night, with history.

The nightly job (`run`) first COLLECTS every server's gtid_executed, gtid_purged, replica
channels (Retrieved_Gtid_Set, thread states, errors), binary log Previous_gtids and relay-log
tail into Delta tables, then AUDITS each source/replica pair: it recomputes the checks the
source makes when a replica reconnects (ER_SLAVE_HAS_MORE_GTIDS_THAN_MASTER,
ER_MASTER_HAS_PURGED_REQUIRED_GTIDS) and flags silent-loss risks before they bite.
"""

EPILOG = """\
first steps:
  gtid-audit demo                        local MySQL fleet with faults, full run, findings
  gtid-audit config check conf/my.yaml   validate a configuration, list the inventory
  gtid-audit run --config conf/my.yaml   nightly job: collect + audit (exit 2 on critical)
  gtid-audit findings --config conf/my.yaml --severity critical
  gtid-audit explain errant_transactions what a check means and what to do about it
  gtid-audit maintain --config conf/my.yaml  retention, OPTIMIZE, VACUUM of the tables
"""


def _package_version() -> str:
    try:
        return version("gtid-audit")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every module's sub-commands registered."""
    parser = argparse.ArgumentParser(
        prog="gtid-audit",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gtid-audit {_package_version()}")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="log verbosity on stderr (default INFO)")
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="'json' writes one JSON object per log line, for log shippers")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, configure logging, run the chosen sub-command, return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    configure_logging(args.log_level, args.log_format)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()   # here, not at exit, so that a reader that left is seen below
        return code
    except KeyboardInterrupt:
        logging.getLogger("gtid_audit").error("interrupted")
        return 130
    except BrokenPipeError:
        if not _stdout_reader_left():
            raise   # another pipe (a socket, a child process): a real error
        # the reader of the output left (`gtid-audit findings ... | head`): stdout goes nowhere
        # from now on, so that Python's flush at exit does not fail again; the exit code is a
        # shell's for a command ended by SIGPIPE
        logging.getLogger("gtid_audit").debug("the reader of stdout left", exc_info=True)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 128 + signal.SIGPIPE


def _stdout_reader_left() -> bool:
    """Whether stdout is a pipe whose reading end is closed: polling its writing end reports an
    error then (POSIX ``poll``); False where that cannot be told."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):   # no poll here, or stdout has no descriptor
        return False


if __name__ == "__main__":
    sys.exit(main())
