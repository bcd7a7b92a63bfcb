"""End to end on a real sandbox fleet: `gtid-audit run` finds exactly the injected faults with
the GTID sets the servers computed, a second run after the repairs resolves them, and a real
Alertmanager sees the alerts fire and then resolve."""
from __future__ import annotations

import json

import pytest
import yaml

from jobs.alerts import AlertmanagerClient, AlertmanagerSettings
from jobs.cli import main
from jobs.delta_io import read_arrow
from jobs.sandbox import scenarios

pytestmark = [pytest.mark.mysql, pytest.mark.spark, pytest.mark.slow]

#   src ──> r1 ──> r3          (a chain)
#    │  └─(orders)─> r2 <─(billing)─ bsrc     (multi-source)
TOPOLOGY = {
    "name": "audit-e2e",
    # this fleet trades durability for speed (sandbox servers are durable by default), which
    # gives every server two real config_* findings for the test to silence
    "servers": [{"name": name, "cluster": cluster,
                 "options": ["--sync-binlog=0", "--innodb-flush-log-at-trx-commit=2"]}
                for name, cluster in (("src", "orders"), ("r1", "orders"), ("r3", "orders"),
                                      ("bsrc", "billing"), ("r2", "billing"))],
    "channels": [{"replica": "r1", "source": "src"}, {"replica": "r3", "source": "r1"},
                 {"replica": "r2", "source": "src", "channel": "orders"},
                 {"replica": "r2", "source": "bsrc", "channel": "billing"}],
    "schema": {"src": ["CREATE DATABASE orders", "CREATE TABLE orders.t (id INT PRIMARY KEY)",
                       "INSERT INTO orders.t VALUES (1), (2)"],
               "bsrc": ["CREATE DATABASE billing", "CREATE TABLE billing.t (id INT PRIMARY KEY)"]},
}


def one_line(server_text: str) -> str:
    """The server's canonical text with blocks joined by ',' (the findings table's form)."""
    return server_text.replace(",\n", ",")


def open_findings(warehouse, run_id):
    rows = read_arrow(warehouse, "findings", run_id).to_pylist()
    return {(r["check_id"], r["server"], r["source"], r["channel"]): r for r in rows
            if r["status"] == "open" and r["severity"] != "info" and not r["silenced"]}


def test_run_finds_faults_then_resolves_them(fleet_factory, spark, alertmanager_url, tmp_path, capsys):
    """Injected faults give exactly their findings; repaired ones are resolved in the next run."""
    fleet = fleet_factory(TOPOLOGY, name="audit-e2e")
    # healthy use of tagged GTIDs on a source: replicated everywhere, never a finding
    fleet.server("src").execute("SET SESSION gtid_next = 'AUTOMATIC:batch_load'",
                                "INSERT INTO orders.t VALUES (3)", "SET SESSION gtid_next = 'AUTOMATIC'")
    fleet.wait_caught_up()
    errant = scenarios.errant_transaction(fleet, "r1", tag="hotfix")
    purged = scenarios.purged_binary_logs(fleet, "r3")
    ghost = scenarios.refused_address("ghost", cluster="orders")

    warehouse = str(tmp_path / "warehouse")
    cfg_path = fleet.write_audit_config(tmp_path / "audit.yaml", warehouse=warehouse,
                                        extra_servers=scenarios.extra_config_servers([ghost]),
                                        connect_timeout_s=2)
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["collection"] = {"retries": {"attempts": 1}}
    # this fleet runs without durability settings (sync_binlog=0, innodb_flush_log_at_trx_commit=2):
    # real findings, acknowledged here the way an operator would
    cfg["audit"] = {"alertmanager": {"url": alertmanager_url, "attempts": 2}, "silences": [
        {"check": check, "expires": "2099-12-31", "reason": "sandbox runs without durability settings"}
        for check in ("config_sync_binlog", "config_innodb_flush_log_at_trx_commit")]}
    cfg_path.write_text(yaml.safe_dump(cfg))

    # ---- run 1: the faults
    assert main(["run", "--config", str(cfg_path)]) == 2
    summary = read_arrow(warehouse, "run_summary").to_pylist()
    (run1,) = [s["run_id"] for s in summary]
    found = open_findings(warehouse, run1)
    r1_uuid = fleet.server("r1").server_uuid
    assert set(found) == {
        ("errant_transactions", "r1", "src", ""),
        ("source_purged_required_gtids", "r3", "r1", ""),
        ("replication_stopped", "r3", "r1", ""),
        ("collection_failed", "ghost", None, None),
        # failover readiness: promoting r1 would refuse r2 (r1 purged its own errant transaction),
        # promoting r3 would lose what r1 purged: both only restate the findings above, so they
        # are info (root cause first) and not here. What is left is the multi-source r2's own
        # cost: promoted for either source, it streams the other source's GTIDs into its
        # siblings and the old source (a warning: it loses nothing), and with r1 unpromotable
        # neither src nor bsrc has a safe candidate (a warning too: the least bad only spreads)
        ("failover_candidate_unsafe", "r2", "src", "orders"),
        ("failover_candidate_unsafe", "r2", "bsrc", "billing"),
        ("no_safe_failover_candidate", "src", None, None),
        ("no_safe_failover_candidate", "bsrc", None, None),
    }, json.dumps({f"{k}": v["detail"] for k, v in found.items()}, indent=1)
    assert found[("errant_transactions", "r1", "src", "")]["gtid_set"] == one_line(errant.gtid_sets["errant"])
    assert found[("errant_transactions", "r1", "src", "")]["gtid_set"] == f"{r1_uuid}:hotfix:1"
    assert found[("source_purged_required_gtids", "r3", "r1", "")]["gtid_set"] == one_line(purged.gtid_sets["missing"])
    assert "unreachable" in found[("collection_failed", "ghost", None, None)]["detail"]
    # r1 purged what r3 lacks, src still holds it: the finding says to fetch it there (gtid_core.donors;
    # tests/sandbox/test_donors.py runs such steps on real servers)
    refused = found[("source_purged_required_gtids", "r3", "r1", "")]
    src_port, r1_port = fleet.server("src").port, fleet.server("r1").port
    assert json.loads(refused["evidence"])["donors"] == ["src"]
    assert (f"On r3: STOP REPLICA; CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = {src_port}; "
            f"START REPLICA; check that SHOW REPLICA STATUS shows Replica_IO_Running Yes with Source_UUID "
            f"'{fleet.server('src').server_uuid}' (") in refused["remediation"], refused["remediation"]
    assert (f"returns 1 (that set includes the {refused['gtid_count']} r3 lacks, '{refused['gtid_set']}', and if it never does, src lacks what r1 purged since: go back "
            "and reprovision); STOP REPLICA; CHANGE REPLICATION SOURCE TO SOURCE_HOST = "
            f"'127.0.0.1', SOURCE_PORT = {r1_port}; "
            "START REPLICA.") in refused["remediation"], refused["remediation"]
    assert {found[k]["severity"] for k in found if k[0] in ("failover_candidate_unsafe", "no_safe_failover_candidate")} \
        == {"warning"}
    info = {(r["check_id"], r["server"]): json.loads(r["evidence"]).get("caused_by")
            for r in read_arrow(warehouse, "findings", run1).to_pylist() if r["severity"] == "info"}
    assert "errant_transactions on r1" in info[("failover_candidate_unsafe", "r1")]
    assert "source_purged_required_gtids on r3" in info[("no_safe_failover_candidate", "r1")]

    silenced = {r["check_id"] for r in read_arrow(warehouse, "findings", run1).to_pylist() if r["silenced"]}
    assert silenced == {"config_sync_binlog", "config_innodb_flush_log_at_trx_commit"}

    client = AlertmanagerClient(AlertmanagerSettings(url=alertmanager_url))
    firing = {a["labels"]["check_id"] for a in client.get_alerts(filters=['alertname=~"gtid_audit_.*"'])
              if a["labels"].get("server") in ("r1", "r2", "r3", "src", "bsrc", "ghost")}
    assert firing == {"errant_transactions", "source_purged_required_gtids", "replication_stopped",
                      "collection_failed", "failover_candidate_unsafe", "no_safe_failover_candidate"}

    # ---- repairs, run 2
    scenarios.repair_errant(fleet, errant)
    repaired = scenarios.repair_missing_gtids(fleet, purged)
    assert main(["run", "--config", str(cfg_path)]) == 2   # ghost is still unreachable
    run2 = max(read_arrow(warehouse, "run_summary").to_pylist(), key=lambda s: s["audited_at"])["run_id"]
    found = open_findings(warehouse, run2)
    # the repair declared the missing GTIDs with SET GLOBAL gtid_purged='+...': the history check
    # (r3 against its own previous snapshot) reports exactly that declaration, as it should
    # r1 is promotable again, so src has a safe candidate; r2's own multi-source cost stays
    assert set(found) == {("collection_failed", "ghost", None, None), ("gtid_purged_jumped", "r3", None, None),
                          ("failover_candidate_unsafe", "r2", "src", "orders"),
                          ("failover_candidate_unsafe", "r2", "bsrc", "billing"),
                          ("no_safe_failover_candidate", "bsrc", None, None)}, \
        json.dumps({f"{k}": v["detail"] for k, v in found.items()}, indent=1)
    assert found[("gtid_purged_jumped", "r3", None, None)]["gtid_set"] == one_line(repaired.gtid_sets["declared_purged"])
    resolved = {(r["check_id"], r["server"]) for r in read_arrow(warehouse, "findings", run2).to_pylist()
                if r["status"] == "resolved"}
    assert resolved >= {("errant_transactions", "r1"), ("source_purged_required_gtids", "r3"),
                        ("replication_stopped", "r3"), ("no_safe_failover_candidate", "src")}
    assert resolved <= {("errant_transactions", "r1"), ("source_purged_required_gtids", "r3"),
                        ("replication_stopped", "r3"), ("no_safe_failover_candidate", "src"),
                        ("failover_candidate_unsafe", "r1"), ("failover_candidate_unsafe", "r3"),
                        ("no_safe_failover_candidate", "r1")}   # the info ones of run 1, resolved too
    feed = {(a["check_id"], a["server"]): a["event"] for a in read_arrow(warehouse, "alerts", run2).to_pylist()}
    assert feed == {("errant_transactions", "r1"): "resolved", ("source_purged_required_gtids", "r3"): "resolved",
                    ("replication_stopped", "r3"): "resolved", ("collection_failed", "ghost"): "still_open",
                    ("gtid_purged_jumped", "r3"): "new", ("no_safe_failover_candidate", "src"): "resolved",
                    ("failover_candidate_unsafe", "r2"): "still_open",
                    ("no_safe_failover_candidate", "bsrc"): "still_open"}
    firing = {a["labels"]["check_id"] for a in client.get_alerts(filters=['alertname=~"gtid_audit_.*"'])
              if a["labels"].get("server") in ("r1", "r2", "r3", "src", "bsrc", "ghost")}
    assert firing == {"collection_failed", "gtid_purged_jumped", "failover_candidate_unsafe",
                      "no_safe_failover_candidate"}
