"""A healthy fleet that is alive: the nightly job, run twice while the source takes steady writes,
must flag nothing on a delayed, a lagging, a log_replica_updates=OFF or an ordinary replica.

One fleet (jobs/sandbox/topologies/live.yaml, five servers) and two real runs of ``gtid-audit run``
serve every test here, so the whole module costs one fleet and two audits:

1. live-delayed gets SOURCE_DELAY = 3600 s; the writer creates its table and the other replicas
   catch up on it; a long reader on live-lagging locks that table (its applier waits).
2. The writer starts (40 transactions a second, stopped after run 2; bounded anyway) and runs through
   both audits: every replica but live-r1 is then far more than the collector's relay tail cap
   (collection.relay_tail_max_events, 2000 events) behind, with both threads running.
3. Run 1; FLUSH BINARY LOGS on live-nolog and live-src (a rotation between nights: the replicas'
   relay logs rotate too, so in run 2 the backlogs span two relay log files); run 2.

Before step 1's writer DDL the source runs the issue 23 canary (:func:`_write_canary`): statements
holding :data:`CANARY` in their text, so every replica's relay log holds Query events with it (the
delayed one unapplied, inside the tail the collector reads); no table may contain it.

Before the fixes of issue #11 the delayed and lagging replicas got a critical
incomplete_relay_log_tail (defect 1: ``DEFECT_1``) and the log_replica_updates=OFF replica a
gtid_purged_jumped warning (defect 2: ``DEFECT_2``) in every run; these tests reproduced both.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from gtid_core import GtidSet
from jobs import cli
from jobs.sandbox import scenarios
from jobs.sandbox.fleet import Fleet, Topology
from jobs.sandbox.load import EVENTS_PER_TRANSACTION, LIVE_TOPOLOGY, LoadWriter, applier_waiting, load_table

pytestmark = [pytest.mark.mysql, pytest.mark.spark, pytest.mark.slow]

TAIL_CAP = 2000          # collection.relay_tail_max_events, the collector's default
# The bounds below are safety nets far beyond a normal run (about 2 minutes per audit): on a
# loaded machine the module once took 18 minutes, and a bound that expires mid-module silently
# turns the live fleet quiet (the writer stops, the delayed applier starts).
DELAY_S = 3600           # longer than this module runs, so the delayed applier never moves
HOLD_S = 1800            # the lagging replica's lock: released by the fixture, this is the safety bound
WRITE_S = 1800           # the writer: stopped by the fixture after run 2, this is the safety bound
BEHIND = 320             # transactions written before run 1: 320 * 7 events > TAIL_CAP
REPLICAS = ("live-r1", "live-delayed", "live-lagging", "live-nolog")
# Issue 23: a literal that would land in a table if anything kept SQL text or row data.
CANARY = "gtid-audit-canary-5d1e0c7a"
CANARY_STATEMENTS = (   # 14 events: a multiple of EVENTS_PER_TRANSACTION keeps the backlogs' alignment
    "CREATE DATABASE audit_canary",                                                    # Gtid Query
    f"CREATE TABLE audit_canary.t (id INT PRIMARY KEY, v VARCHAR(64)) COMMENT = '{CANARY}'",  # Gtid Query
    "SET SESSION binlog_format = 'STATEMENT'",         # statement-based: the literal is in Query events
    f"INSERT INTO audit_canary.t VALUES (1, '{CANARY}')",                              # Gtid Query Query Xid
    f"INSERT INTO audit_canary.t VALUES (2, '{CANARY}')",                              # Gtid Query Query Xid
    f"CREATE TABLE audit_canary.u (id INT PRIMARY KEY) COMMENT = '{CANARY}'",          # Gtid Query
)

DEFECT_1 = ("issue #11 defect 1: incomplete_relay_log_tail reads only relay_tail_max_events events from the "
            "applier position; a backlog longer than that ends the tail mid-transaction, whose complete GTID "
            "is in Retrieved_Gtid_Set, and the in_retrieved branch makes it critical")
DEFECT_2 = ("issue #11 defect 2: gtid_purged_jumped ignores log_replica_updates=OFF, where every applied "
            "transaction goes straight into gtid_purged while older binary logs remain")


@dataclasses.dataclass
class BusyRuns:
    fleet: Fleet
    warehouse: Path
    run_ids: tuple[str, str]
    before: dict[str, dict]          # per run: server-reported facts read just before it
    written_during: dict[str, str]   # run id -> GTIDs the source committed while that run ran
    load: list
    canary_events: list[dict]        # the source's binary log events of the canary statements


def _write_canary(fleet: Fleet) -> list[dict]:
    """Run CANARY_STATEMENTS on the source, on one connection; its binary log events of them."""
    src = fleet.server("live-src")
    at = src.query("SHOW BINARY LOG STATUS")[0]
    with contextlib.closing(src.connect()) as conn:
        cur = conn.cursor()
        for sql in CANARY_STATEMENTS:
            cur.execute(sql)
    events = src.query("SHOW BINLOG EVENTS IN %s FROM %s", (at["File"], at["Position"]))
    if len(events) % EVENTS_PER_TRANSACTION:   # would shift where TAIL_CAP falls in the backlogs
        raise RuntimeError(f"the canary wrote {len(events)} events: {[e['Event_type'] for e in events]}")
    return events


def _facts(fleet: Fleet) -> dict:
    """What the servers say about each live condition, read right before a run."""
    facts = {name: dataclasses.asdict(scenarios.replica_backlog(fleet, name, max_events=TAIL_CAP * 3))
             for name in REPLICAS}
    for fact in facts.values():
        types = fact["details"].pop("event_types_after_applier")
        fact["event_at_tail_cap"] = types[TAIL_CAP - 1] if len(types) >= TAIL_CAP else None
    nolog = fleet.server("live-nolog")
    facts["live-nolog"]["variables"] = nolog.query(
        "SELECT @@GLOBAL.log_bin AS log_bin, @@GLOBAL.log_replica_updates AS log_replica_updates, "
        "@@GLOBAL.gtid_executed = @@GLOBAL.gtid_purged AS purged_is_executed")[0]
    facts["live-lagging"]["applier_waiting"] = applier_waiting(fleet.server("live-lagging"))
    return facts


def _run(config: Path, run_id: str) -> int:
    return cli.main(["run", "--config", str(config), "--run-id", run_id, "--fail-on", "never", "--no-alertmanager"])


@pytest.fixture(scope="module")
def busy(mysql_dist, tmp_path_factory, spark):
    """The live fleet under writes, audited twice (see the module docstring)."""
    work = tmp_path_factory.mktemp("live")
    fleet = Fleet.up(Topology.load(LIVE_TOPOLOGY), work / "fleet", dist=mysql_dist)
    try:
        scenarios.delayed_replica(fleet, "live-delayed", delay_s=DELAY_S)
        canary_events = _write_canary(fleet)
        writer = LoadWriter(fleet, rate_per_s=40, seconds=WRITE_S, max_transactions=80_000).prepare()
        fleet.wait_caught_up(channels=[c for c in fleet.topology.channels if c.replica != "live-delayed"])
        warehouse = work / "warehouse"
        config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(warehouse), connect_timeout_s=2)
        src = fleet.server("live-src")
        before, written = {}, {}
        with scenarios.lagging_replica(fleet, "live-lagging", load_table("live-src"), seconds=HOLD_S), writer:
            writer.wait_for(BEHIND, timeout=60)
            for run_id in ("busy-1", "busy-2"):
                if run_id == "busy-2":   # a binary-log rotation between the two nights
                    fleet.server("live-nolog").execute("FLUSH BINARY LOGS")
                    src.execute("FLUSH BINARY LOGS")
                before[run_id] = _facts(fleet)
                start = src.gtid_executed()
                code = _run(config, run_id)
                if code != 0:   # not an AssertionError: the xfail markers must not swallow it
                    raise RuntimeError(f"gtid-audit run {run_id} exited {code}")
                written[run_id] = src.query_value("SELECT GTID_SUBTRACT(@@GLOBAL.gtid_executed, %s)", (start,))
            load = writer.stop()
        yield BusyRuns(fleet, warehouse, ("busy-1", "busy-2"), before, written, load, canary_events)
    finally:
        fleet.down(graceful=False)


def _findings(busy: BusyRuns, run_id: str) -> list[dict]:
    rows = DeltaTable(str(busy.warehouse / "findings")).to_pyarrow_table().to_pylist()
    return [r for r in rows if r["run_id"] == run_id]


def _alarms(busy: BusyRuns, server: str | None = None) -> list[tuple]:
    """(run_id, check_id, server, source, channel, severity, detail) of open warning/critical findings."""
    return [(r["run_id"], r["check_id"], r["server"], r["source"], r["channel"], r["severity"], r["detail"])
            for run_id in busy.run_ids for r in _findings(busy, run_id)
            if r["status"] == "open" and r["severity"] in ("warning", "critical")
            and (server is None or r["server"] == server)]


def _readiness(busy: BusyRuns, run_id: str) -> list[dict]:
    rows = DeltaTable(str(busy.warehouse / "failover_readiness")).to_pyarrow_table().to_pylist()
    return [r for r in rows if r["run_id"] == run_id]


def _shown(alarms: list[tuple]) -> str:
    return json.dumps(alarms, indent=1)


def test_live_conditions_hold_during_both_runs(busy):
    """The servers confirm each condition: delayed and lagging far behind with both threads running,
    log_replica_updates OFF with gtid_purged = gtid_executed, writes committed during each run."""
    for run_id in busy.run_ids:
        facts = busy.before[run_id]
        for name in ("live-delayed", "live-lagging"):
            details = facts[name]["details"]
            assert (details["io_running"], details["sql_running"]) == ("Yes", "Yes"), (name, details)
            behind = GtidSet.parse(facts[name]["gtid_sets"]["received_not_applied"]).count()
            assert behind * EVENTS_PER_TRANSACTION > TAIL_CAP, (name, behind, facts[name])
            if run_id == "busy-1":   # one relay log file: the backlog follows the applier's position
                assert details["relay_events_after_applier"] > TAIL_CAP, (name, details)
        assert facts["live-delayed"]["details"]["sql_delay"] == DELAY_S
        assert facts["live-lagging"]["applier_waiting"] is True
        assert facts["live-nolog"]["variables"] == {"log_bin": 1, "log_replica_updates": 0, "purged_is_executed": 1}
        assert busy.written_during[run_id], f"the source took no writes while {run_id} ran"
    assert all(r.transactions >= BEHIND and r.error is None for r in busy.load)


def test_both_runs_read_every_server(busy):
    """Both runs collected all five servers without an error (the absence of findings means something)."""
    runs = DeltaTable(str(busy.warehouse / "runs")).to_pyarrow_table().to_pylist()
    by_id = {r["run_id"]: r for r in runs}
    for run_id in busy.run_ids:
        assert (by_id[run_id]["servers_ok"], by_id[run_id]["servers_failed"]) == (5, 0), by_id[run_id]


def test_replica_of_busy_source_is_not_flagged(busy):
    """An ordinary replica of a source taking steady writes, and the source itself, raise nothing;
    the source's failover readiness was judged (positive control: live-r1 ranks first)."""
    alarms = _alarms(busy, "live-r1") + _alarms(busy, "live-src")
    assert alarms == [], _shown(alarms)
    for run_id in busy.run_ids:
        ranks = {r["candidate"]: r["candidate_rank"] for r in _readiness(busy, run_id)}
        assert ranks.get("live-r1") == 1, ranks


def _relay_tail_rows(busy: BusyRuns, run_id: str, server: str) -> int:
    rows = DeltaTable(str(busy.warehouse / "relay_log_tail")).to_pyarrow_table(
        columns=["run_id", "server"]).to_pylist()
    return sum(1 for r in rows if (r["run_id"], r["server"]) == (run_id, server))


def test_delayed_replica_with_backlog_beyond_tail_cap_is_not_flagged(busy):
    """A SOURCE_DELAY replica whose relay backlog exceeds the tail cap, both threads running, raises
    nothing, although its relay log tail was read (positive control: the check had its input)."""
    alarms = _alarms(busy, "live-delayed")
    assert alarms == [], _shown(alarms)
    assert all(_relay_tail_rows(busy, run_id, "live-delayed") > 0 for run_id in busy.run_ids)


def test_lagging_replica_with_backlog_beyond_tail_cap_is_not_flagged(busy):
    """A replica whose applier waits behind a reader, backlog beyond the tail cap, raises nothing,
    although its relay log tail was read (positive control)."""
    alarms = _alarms(busy, "live-lagging")
    assert alarms == [], _shown(alarms)
    assert all(_relay_tail_rows(busy, run_id, "live-lagging") > 0 for run_id in busy.run_ids)


def _nolog_failover_warnings(busy: BusyRuns) -> dict[str, dict]:
    """The one true positive of this fleet, per run: promoting live-nolog (log_replica_updates=OFF)
    would get the siblings that are behind it refused, since its binary log holds none of what it
    replicated. Read from the finding's evidence, not its text."""
    out = {}
    for run_id in busy.run_ids:
        for r in _findings(busy, run_id):
            if (r["check_id"], r["server"], r["source"], r["status"]) == (
                    "failover_candidate_unsafe", "live-nolog", "live-src", "open"):
                out[run_id] = {**r, "evidence": json.loads(r["evidence"])}
    return out


def _is_nolog_failover_warning(busy: BusyRuns, alarm: tuple) -> bool:
    """True for the nolog warning whose every cost is a refusal (no loss, no spread GTID), each
    refusal ER_MASTER_HAS_PURGED_REQUIRED_GTIDS."""
    run_id, check_id, server, source, _, severity, _ = alarm
    if (check_id, server, source, severity) != ("failover_candidate_unsafe", "live-nolog", "live-src", "warning"):
        return False
    ev = _nolog_failover_warnings(busy)[run_id]["evidence"]
    refusals = [x.split(": ", 1)[1] for x in (ev["refused_siblings"] or "").split("; ") if x]
    return (ev["verdict"], ev["cost_lost"], ev["cost_spread"]) == ("refuses_siblings", 0, 0) and \
        all(x == "ER_MASTER_HAS_PURGED_REQUIRED_GTIDS" for x in refusals)


def test_the_findings_this_fleet_must_have_are_there(busy):
    """Positive control: in both runs the audit found live-nolog's true failover warning (refuses
    siblings, stated once) and judged every replica as a failover candidate; an audit that
    produced nothing would fail here."""
    warnings = _nolog_failover_warnings(busy)
    assert set(warnings) == set(busy.run_ids), _shown(_alarms(busy))
    for run_id, w in warnings.items():
        assert w["severity"] == "warning" and w["evidence"]["verdict"] == "refuses_siblings", w
        assert w["evidence"]["reasons"].count("log_replica_updates is OFF") == 1, w["evidence"]["reasons"]
        verdicts = {r["candidate"]: r["verdict"] for r in _readiness(busy, run_id)}
        assert set(verdicts) == set(REPLICAS), verdicts
        assert verdicts["live-r1"] in ("safe", "safe_after_catch_up"), verdicts
        assert verdicts["live-delayed"] == verdicts["live-lagging"] == "safe_after_catch_up", verdicts


def test_log_replica_updates_off_replica_is_not_flagged_across_a_rotation(busy):
    """A log_bin=ON, log_replica_updates=OFF replica, two runs with traffic and FLUSH BINARY LOGS between,
    raises no replication finding. Its failover warning is true and expected: promoted, it could not
    serve the delayed and lagging siblings what they lack (a real promotion proves the refusal in
    tests/sandbox/test_failover_scenarios.py), and the warning says so."""
    alarms = _alarms(busy, "live-nolog")
    assert [a for a in alarms if not _is_nolog_failover_warning(busy, a)] == [], _shown(alarms)
    assert len(alarms) == len(busy.run_ids), _shown(alarms)   # positive control: the true warning is there


def test_busy_healthy_fleet_has_no_warning_or_critical_in_two_runs(busy):
    """The busy-fleet test: two consecutive runs under writes, zero warning or critical findings on the
    pairs, apart from the failover warning that live-nolog (log_replica_updates=OFF) must not be promoted."""
    alarms = _alarms(busy)
    assert [a for a in alarms if not _is_nolog_failover_warning(busy, a)] == [], _shown(alarms)
    assert {a[0] for a in alarms} == set(busy.run_ids), _shown(alarms)   # positive control


def test_tail_cap_falls_inside_a_transaction(busy):
    """Defect 1's precondition holds by construction: the TAIL_CAP-th event after each backlogged
    applier is not a transaction's last event (the writer's groups have a fixed size)."""
    for name in ("live-delayed", "live-lagging"):
        assert busy.before["busy-1"][name]["event_at_tail_cap"] in ("Gtid", "Query", "Table_map", "Write_rows",
                                                                    "Update_rows"), busy.before["busy-1"][name]


def _strings(value):
    """Every str (and decoded bytes) inside a cell, nested lists, structs and maps included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _is_text(t: pa.DataType) -> bool:
    return not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                or pa.types.is_temporal(t) or pa.types.is_decimal(t) or pa.types.is_null(t))


def test_no_table_holds_sql_text_or_row_data(busy):
    """Issue 23: the canary literal, in statements every replica's relay log holds, is in no string
    of any row of any Delta table (positive controls: the source's binary log holds it, the collector
    scanned the delayed replica's relay log through those Query events, the scan saw the usual tables)."""
    logged = busy.fleet.server("live-src").query(
        "SHOW BINLOG EVENTS IN %s FROM %s", (busy.canary_events[0]["Log_name"], busy.canary_events[0]["Pos"]))
    holding = [e for e in logged[:len(busy.canary_events)] if CANARY in (e["Info"] or "")]
    assert [e["Event_type"] for e in holding] == ["Query"] * 4, logged[:len(busy.canary_events)]  # 2 DDL, 2 INSERT
    tables = sorted(p.parent for p in busy.warehouse.rglob("_delta_log"))
    names = {str(p.relative_to(busy.warehouse)) for p in tables}
    assert {"channels", "relay_log_tail", "findings", "runs"} <= names, names
    leaks, cells = [], 0
    for path in tables:
        data = DeltaTable(str(path)).to_pyarrow_table()
        for column in data.column_names:
            if not _is_text(data.schema.field(column).type):
                continue
            for row, value in enumerate(data.column(column).to_pylist()):
                for text in _strings(value):
                    cells += 1
                    if CANARY in text:
                        leaks.append((path.name, column, row, text[:300]))
    assert cells > 0 and leaks == [], leaks[:20]
    # The canary's relay log events were decoded for the collector: in run 1 live-delayed's applier
    # sits before them (the delay was set first); its tail scan starts there and reaches the end.
    channels = DeltaTable(str(busy.warehouse / "channels")).to_pyarrow_table().to_pylist()
    delayed = [r for r in channels if (r["run_id"], r["server"]) == ("busy-1", "live-delayed")]
    backlog = busy.before["busy-1"]["live-delayed"]["details"]["relay_events_after_applier"]
    assert len(delayed) == 1 and delayed[0]["relay_tail_truncated"] is False, delayed
    assert delayed[0]["relay_tail_scanned_events"] >= backlog > len(busy.canary_events), (delayed, backlog)
