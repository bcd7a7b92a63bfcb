"""``gtid-audit demo``: the whole product in one command, on this machine.

It starts the standard sandbox fleet (real MySQL 9.7 servers, real GTID replication), breaks it
the way production fleets break (an errant transaction, a tagged errant transaction, a source
that purged binary logs a stopped replica still needs, a relay log ending inside a transaction,
an address that refuses connections, a wrong password), runs the nightly job end to end in Spark
local mode (collect into Delta tables, audit, alert feed), and prints what is wrong, where, how
bad and what to do. The fleet is stopped at the end unless ``--keep`` is given.
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import shutil
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from jobs.sandbox.fleet import STANDARD_TOPOLOGY

__all__ = ["register", "run_demo", "render_report", "render_healthy_delayed"]

#: The demo's delayed replica: behind on purpose, healthy.
DEMO_DELAY_S = 300
#: The writes during the demo's run. Kept under the collector's relay tail cap (2000 events,
#: 7 per transaction), as set while issue #11 defect 1 flagged larger backlogs (fixed since; the
#: busy-fleet tests cover backlogs beyond the cap).
DEMO_LOAD = {"rate_per_s": 4.0, "seconds": 120.0, "max_transactions": 120}

DEMO_DESCRIPTION = """\
The whole product in one command, on this machine:
  1. start the standard sandbox fleet (six MySQL 9.7 servers with
     real GTID replication, a chain and a multi-source replica);
  2. break it the way production fleets break: an errant transaction on orders-r2, a tagged
     errant transaction on billing-r1, orders-r1 purging binary logs the stopped orders-r3 still
     needs, billing-r1's relay log ending inside a transaction, a server 'legacy' with
     gtid_mode=OFF, an address that refuses connections, a server whose entry has a wrong password;
     and add a healthy delayed replica (orders-delayed, SOURCE_DELAY 300 s);
  3. run the nightly job (collect + audit) in Spark local mode, Delta tables under --warehouse,
     while a bounded writer keeps the sources busy;
  4. print what is wrong, where, how bad and what to do, and that the delayed replica is
     behind but not at risk.
The fleet is stopped at the end unless --keep is given."""

log = logging.getLogger("gtid_audit.demo")

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
_MARK = {"critical": "CRITICAL", "warning": "WARNING ", "info": "info    "}


#: The demo's lines are wrapped for a terminal this wide (at spaces: a path or a GTID set stays whole).
WIDTH = 100


def _paragraph(text: str, width: int = WIDTH) -> str:
    """``text`` wrapped at spaces to ``width`` columns, its later lines indented by two."""
    from jobs.audit import wrap_at_spaces

    return wrap_at_spaces(text, width)


def render_report(findings: Sequence[Mapping[str, Any]], *, width: int = WIDTH,
                  max_remediation_lines: int = 6, config: str = "FILE", command: str = "gtid-audit") -> str:
    """A readable report of open findings: what is wrong, on which server, how bad, what to do.

    Info findings are counted, not listed: they are context, not something to act on tonight.
    The hints name the ``command`` that lists the rest with the ``config`` that was audited,
    quoted for a shell.
    """
    command, config = shlex.quote(command), shlex.quote(config)
    open_rows = [f for f in findings if f.get("status") == "open" and not f.get("silenced")]
    open_rows.sort(key=lambda f: (_SEVERITY_ORDER.get(f["severity"], 9), f["check_id"], f["server"],
                                  f.get("channel") or ""))
    shown = [f for f in open_rows if f["severity"] in ("critical", "warning")]
    infos = len(open_rows) - len(shown)
    out: list[str] = []
    counts = {sev: sum(1 for f in open_rows if f["severity"] == sev) for sev in ("critical", "warning", "info")}
    out.append(f"{counts['critical']} critical, {counts['warning']} warning, {counts['info']} info finding(s) open")
    out.append("=" * min(width, 100))
    wrap = textwrap.TextWrapper(width=width, initial_indent="    ", subsequent_indent="    ")
    # a remediation line wraps at spaces only: a GTID set, a UUID or a quoted name stays whole, so a
    # wrapped statement is the same SQL; a SQL comment line is kept whole (a wrapped one would not be one)
    step = textwrap.TextWrapper(width=width, initial_indent="      ", subsequent_indent="        ",
                                break_long_words=False, break_on_hyphens=False)
    # a server check without GTID evidence that fires on several servers is one problem, told once
    by_check: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for f in shown:
        if not f.get("gtid_set") and not f.get("source"):
            by_check.setdefault((f["severity"], f["check_id"]), []).append(f)
    groups = {id(rows[0]): rows for rows in by_check.values() if len(rows) > 2}  # by first member
    in_a_group = {id(member) for rows in groups.values() for member in rows}
    for f in shown:
        if id(f) in in_a_group:
            rows = groups.get(id(f))
            if rows is None:  # told with the first of its group
                continue
            out.append(f"{_MARK[f['severity']]} {f['check_id']} on {len(rows)} servers: "
                       + ", ".join(r["server"] for r in rows))
            out.append(f"    e.g. {f['detail']}" if f.get("detail") else f"    {f['title']}")
            remediation = (f.get("remediation") or "").strip().splitlines()
            if remediation:
                out.append(f"    what to do: {remediation[0]}")
            out.append("")
            continue
        where = f["server"]
        if f.get("source"):
            where += f" <- {f['source']}"
            if f.get("channel"):
                where += f" (channel {f['channel']!r})"
        cluster = f" [{f['cluster']}]" if f.get("cluster") else ""
        out.append(f"{_MARK[f['severity']]} {f['check_id']} on {where}{cluster}")
        out.extend(wrap.wrap(f["title"]))
        if f.get("gtid_set"):
            count = f" ({f['gtid_count']} transaction(s))" if f.get("gtid_count") is not None else ""
            out.append(f"    GTIDs{count}: " + f["gtid_set"].replace("\n", " "))
        if f.get("detail"):
            out.extend(wrap.wrap(f["detail"]))
        remediation = (f.get("remediation") or "").strip().splitlines()
        if remediation:
            out.append("    what to do:")
            for line in remediation[:max_remediation_lines]:
                out.extend([f"      {line}"] if line.lstrip().startswith("--") else step.wrap(line))
            if len(remediation) > max_remediation_lines:
                out.append(f"      ... ({len(remediation) - max_remediation_lines} more line(s): "
                           f"{command} findings --config {config} --check {f['check_id']} --format json)")
        out.append("")
    if infos:
        # one line: the command in it is copied whole
        out.append(f"(+{infos} info finding(s), not shown here: {command} findings --config {config} lists "
                   "them with the others)")
    return "\n".join(out)


#: The injected faults the job logs a collection warning for, and what each is.
_WARNED = {"gtid_off_server": "gtid_mode OFF", "refused_address": "refuses connections",
           "wrong_password": "wrong password in the config"}


def render_healthy_delayed(findings: Sequence[Mapping[str, Any]], delayed: Sequence[Any]) -> str:
    """One line per delayed replica (a ScenarioResult of scenarios.add_delayed_replica): behind and
    not at risk when the audit raised no warning or critical finding on it, else flagged."""
    lines = []
    for result in delayed:
        name = result.servers[0]
        alarms = sorted({f["check_id"] for f in findings if f.get("server") == name and f.get("status") == "open"
                         and f.get("severity") in ("critical", "warning") and not f.get("silenced")})
        if alarms:
            lines.append(_paragraph(f"1 delayed replica flagged: {name} ({', '.join(alarms)})"))
        else:
            lines.append(_paragraph(f"1 delayed replica: behind, not at risk ({name}, SOURCE_DELAY "
                                    f"{result.details['sql_delay']} s: no warning or critical finding)"))
    return "\n".join(lines)


def run_demo(*, topology: Path, workdir: Path, config_out: Path, warehouse: Path, keep: bool,
             cache_dir: str | None = None) -> int:
    """Start the fleet, inject the faults, run the nightly job, print the report; exit code 0
    when the job ran (findings are the point of the demo, not a failure)."""
    from jobs.audit import print_outcome
    from jobs.config import load_config
    from jobs.delta_io import read_arrow
    from jobs.pipeline import run_night, write_fleet_report
    from jobs.sandbox import scenarios
    from jobs.sandbox.fleet import STATE_FILE, Fleet, Topology
    from jobs.sandbox.installer import ensure_mysql
    from jobs.sandbox.load import LoadWriter

    started = time.monotonic()
    dist = ensure_mysql(cache_dir)
    if (workdir / STATE_FILE).exists():
        stopped = Fleet.attach(workdir).down()
        if stopped:
            print(f"stopped the previous demo fleet: {', '.join(stopped)}")
    print(_paragraph(f"sandbox topology: {topology}"))
    print(f"starting the sandbox fleet (MySQL {dist.version}) ...", flush=True)
    fleet = Fleet.up(Topology.load(topology), workdir, dist=dist)
    try:
        print(_paragraph(f"fleet up in {time.monotonic() - started:.0f} s: {', '.join(fleet.servers)}"))
        print("injecting faults ...", flush=True)
        results = scenarios.inject_demo_faults(fleet)
        for result in results:
            print(f"  - {result.name}: {', '.join(result.servers)}")
        # healthy but alive: a delayed replica, and sources taking writes while the job runs
        delayed = scenarios.add_delayed_replica(fleet, "orders-delayed", "orders-src", delay_s=DEMO_DELAY_S)
        print(f"  - healthy: orders-delayed replicates orders-src with SOURCE_DELAY = {DEMO_DELAY_S} s")
        config = fleet.write_audit_config(config_out, warehouse=str(warehouse.resolve()),
                                          extra_servers=scenarios.extra_config_servers(results))
        print(_paragraph(f"auditor config: {config}"))
        print("running the nightly job (collect + audit, Spark local mode) while the sources take writes ...",
              flush=True)
        warned = [f"{server} ({_WARNED[r.name]})" for r in results if r.name in _WARNED for server in r.servers]
        if warned:
            print(textwrap.fill(f"(its collection warnings for {', '.join(warned)} are injected faults; each is "
                                "also a finding below)", width=WIDTH, initial_indent="  ", subsequent_indent="  ",
                                break_on_hyphens=False), flush=True)
        audit_config = load_config(config)
        with LoadWriter(fleet, **DEMO_LOAD) as load:
            night = run_night(audit_config, fail_on="never", send_alerts=False)
            written = load.stop()
        print_outcome(night.audited, width=WIDTH)
        run_id = night.run_id
        findings = read_arrow(str(warehouse.resolve()), "findings", run_id).to_pylist()
        print()
        print(render_report(findings, config=str(config_out), command=_command_name()))
        print(render_healthy_delayed(findings, [delayed]))
        print(_paragraph("busy sources: " + ", ".join(f"{r.source} took {r.transactions} transaction(s) during "
                                                      "the run" for r in written)))
        report = write_fleet_report(audit_config, run_id)
        tables = sorted(p.name for p in warehouse.iterdir() if (p / "_delta_log").is_dir())
        print(_paragraph(f"Delta tables written under {warehouse.resolve()} ({', '.join(tables)}); "
                         f"demo took {time.monotonic() - started:.0f} s."))
        if report is not None:
            print(_paragraph(f"fleet report (open it in a browser): {report}"))
        exe = shlex.quote(_command_name())
        print(f"next: {exe} findings --config {shlex.quote(str(config_out))}\n      {exe} explain errant_transactions")
        return 0
    finally:
        if keep:
            print(f"fleet left running (gtid-audit sandbox down --workdir {shlex.quote(str(workdir))} stops it)")
        else:
            fleet.down()
            for server in fleet.servers.values():  # ~100 MB of data directory per server
                shutil.rmtree(server.dir, ignore_errors=True)
            # no fleet is left: `sandbox status` says so (exit 2), not nine stopped servers (exit 3)
            (workdir / STATE_FILE).unlink(missing_ok=True)
            print("sandbox fleet stopped and its data removed (use --keep to leave it running)")


def _command_name() -> str:
    """How the user reaches gtid-audit: ``.venv/bin/gtid-audit`` after ``make demo``."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "gtid-audit" and argv0.parent != Path("."):
        try:
            return os.path.relpath(argv0)
        except ValueError:
            return str(argv0)
    return "gtid-audit"


def _cmd_demo(args: argparse.Namespace) -> int:
    from jobs.sandbox.errors import SandboxError

    try:
        return run_demo(topology=args.topology, workdir=args.workdir, config_out=args.config_out,
                        warehouse=args.warehouse, keep=args.keep, cache_dir=args.cache_dir)
    except SandboxError as exc:
        log.error("%s", exc)
        return 1


def register(subparsers) -> None:
    """Add ``demo`` to the gtid-audit parser."""
    p = subparsers.add_parser(
        "demo", help="local MySQL fleet with real faults, a full nightly run, the findings",
        description=DEMO_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--topology", type=Path, default=STANDARD_TOPOLOGY,
                   help="sandbox topology YAML (default: %(default)s)")
    p.add_argument("--workdir", type=Path, default=Path(".sandbox"),
                   help="where the servers' data, sockets and state live (default: %(default)s)")
    p.add_argument("--config-out", type=Path, default=Path("conf/sandbox.yaml"),
                   help="auditor config written for the fleet (default: %(default)s)")
    p.add_argument("--warehouse", type=Path, default=Path("warehouse"),
                   help="root of the Delta tables (default: %(default)s)")
    p.add_argument("--cache-dir", default=None, help="MySQL install cache (see `sandbox install`)")
    p.add_argument("--keep", action="store_true", help="leave the sandbox fleet running afterwards")
    p.set_defaults(func=_cmd_demo)
