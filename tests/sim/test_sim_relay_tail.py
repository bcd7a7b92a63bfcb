"""Issue 18, defect 8 on the versions no real server here runs: a receiver stopped inside a transaction
of more events than the collector keeps (``relay_tail_max_events``), on 5.6 and 5.7 (no
QUEUEING_TRANSACTION) and 8.0 (QUEUEING_TRANSACTION), served by the simulator, read by the real
collector (``read_server``, the version's dialect), checked on the rows the audit converts."""
from __future__ import annotations

import datetime as dt

import pytest

from gtid_core import FleetContext, GtidSet, Severity, events_from_rows, run_pair_checks
from jobs.audit_tasks import channel_snapshot, relay_tail_rows, server_snapshot
from jobs.collector import read_server, RunContext
from jobs.config import load_config
from jobs.sandbox.sim import FleetBuilder, Simulator

ROWS = 3000          # row events of the dangling transaction: more than the 2,000 the collector keeps
CASES = {            # cluster -> (version, severity, where the GTID comes from)
    "big5614": ("5.6.14", Severity.CRITICAL, "Retrieved_Gtid_Set minus gtid_executed"),
    "big5744": ("5.7.44", Severity.WARNING, "the applier's position"),
    "big8036": ("8.0.36", Severity.WARNING, "QUEUEING_TRANSACTION"),
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    b = FleetBuilder(seed=18)
    for cluster, (version, _, _) in CASES.items():
        b.relay_tail(cluster, version, rows=ROWS)
    b.cluster("ok5744", "5.7.44", replicas=1)
    fleet = b.fleet()
    work = tmp_path_factory.mktemp("simtail")
    fleet.save(work / "fleet.json")
    config = fleet.write_audit_config(work / "audit.yaml", warehouse=str(work / "wh"), password_file=work / "pw")
    with Simulator(work / "fleet.json", lifetime_s=120, latency="0-1"):
        yield fleet, load_config(config)


def _audit(fleet, config, cluster):
    """Read the replica then the source with the collector; the pair checks on the converted rows."""
    specs = {s.name: s for s in config.inventory()}
    ctx = RunContext("t", dt.date.today(), config.collection.read_settings())
    rep, src = read_server(specs[f"{cluster}-r1"], ctx), read_server(specs[f"{cluster}-s"], ctx)
    assert rep.errors == [] and src.errors == []
    [row] = rep.channels
    tail = events_from_rows(relay_tail_rows(rep.relay_log_tail))
    findings = run_pair_checks(server_snapshot({**rep.server, "binary_logs": rep.binary_logs}), channel_snapshot(row),
                               server_snapshot({**src.server, "binary_logs": src.binary_logs}), tail, FleetContext())
    return row, tail, {f.check_id: f for f in findings}


@pytest.mark.parametrize("cluster", list(CASES), ids=[v for v, _, _ in CASES.values()])
def test_large_dangling_transaction_is_found_with_its_gtid(sim, cluster):
    """The kept tail holds none of the transaction's Gtid event; the finding fires at the version's severity with the
    dangling GTID the model wrote, taken from the version's own source of truth."""
    fleet, config = sim
    version, severity, source = CASES[cluster]
    row, tail, found = _audit(fleet, config, cluster)
    assert (row["relay_tail_truncated"], row["relay_tail_events"]) == (False, 2000)
    assert row["relay_tail_first_event"] > 0 and "Gtid" not in {e.event_type for e in tail}
    assert all(e.info is None for e in tail)              # sanitized: no Info stored
    model = fleet.server(f"{cluster}-r1").channels[0]
    dangling = next(e[4] for e in model.relay_events if e[0] == model.relay_log_pos).split("'")[1]
    finding = found["incomplete_relay_log_tail"]
    assert finding.severity is severity and finding.gtid_set == GtidSet.parse(dangling)
    assert finding.evidence["dangling_gtid_from"].startswith(source)


def test_healthy_57_replica_is_silent(sim):
    """Positive control's counterpart: a caught-up 5.7 replica read the same way gives no relay-tail finding."""
    fleet, config = sim
    row, tail, found = _audit(fleet, config, "ok5744")
    assert "incomplete_relay_log_tail" not in found and row["relay_tail_truncated"] is False
