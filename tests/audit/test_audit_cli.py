"""The audit sub-commands' command-line surface: findings table and filters, explain, exit codes."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from jobs.alerts import finding_key
from jobs.audit import exit_code_for, select_findings
from jobs.cli import main
from jobs.delta_io import write_run_rows
from schemas import get_table

D = dt.date(2026, 11, 22)
AT = dt.datetime(2026, 11, 22, 4, 0, tzinfo=dt.timezone.utc)


def finding(check, server, severity, cluster="orders", status="open", silenced=False, gtid_set=None):
    return {"run_id": "run1", "run_date": D, "finding_key": finding_key(check, server, "src", ""),
            "check_id": check, "severity": severity, "cluster": cluster, "server": server, "source": "src",
            "channel": "", "title": f"{check} title", "detail": "detail", "gtid_set": gtid_set,
            "gtid_count": None, "first_seen": D, "status": status, "silenced": silenced,
            "silence_id": "s1" if silenced else None, "remediation": "r", "check_version": 1,
            "evidence": None}


ROWS = [finding("errant_transactions", "r1", "critical", gtid_set="3e11fa47-71ca-11e1-9e33-c80aa9429562:1-3"),
        finding("replica_gtid_holes", "r2", "warning"),
        finding("config_sync_binlog", "b1", "warning", cluster="billing"),
        finding("replication_stopped", "r3", "info"),
        finding("errant_transactions", "r9", "critical", status="resolved"),
        finding("source_unresolved", "r4", "critical", silenced=True)]


@pytest.fixture
def audited(spark, tmp_path):
    """A warehouse holding one audited run's findings and summary, and its config file."""
    wh = tmp_path / "wh"
    write_run_rows(spark, "findings", ROWS, warehouse=str(wh), run_id="run1")
    write_run_rows(spark, "run_summary", [{
        "run_id": "run1", "run_date": D, "audited_at": AT, "audit_seconds": 1.0, "servers_audited": 5,
        "servers_failed": 0, "pairs_audited": 4, "findings_open": 5, "findings_silenced": 1,
        "findings_resolved": 1, "findings_by_check": "{}", "findings_by_severity": "{}",
        "alerts_by_event": "{}", "expired_silences": "[]", "fail_on": "critical", "exit_code": 2}],
        warehouse=str(wh), run_id="run1")
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(f"warehouse: {wh}\ndefaults: {{user: audit}}\nservers:\n  - {{name: r1, host: 127.0.0.1}}\n")
    return str(cfg)


def test_severity_is_a_minimum_and_resolved_hidden():
    """--severity warning shows warning and critical, open only, most severe first."""
    got = [(r["check_id"], r["server"]) for r in select_findings(ROWS, severity="warning")]
    assert got == [("errant_transactions", "r1"), ("source_unresolved", "r4"),
                   ("config_sync_binlog", "b1"), ("replica_gtid_holes", "r2")]


def test_findings_json_filters(audited, capsys):
    """findings --cluster/--check/--format json prints exactly the matching rows."""
    assert main(["findings", "--config", audited, "--check", "errant_transactions", "--format", "json"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["server"], r["gtid_set"]) for r in out] == [("r1", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-3")]
    assert main(["findings", "--config", audited, "--cluster", "billing", "--format", "json"]) == 0
    assert [json.loads(x)["server"] for x in capsys.readouterr().out.splitlines()] == ["b1"]


def test_cluster_includes_pairs_whose_source_is_in_it(spark, audited, capsys):
    """--cluster C keeps a finding of a server outside C on a channel whose source is in C (b2 of
    billing, a multi-source replica with a channel from orders' src), and the failover finding of
    b2 as a candidate to replace src (labelled orders): both show under orders and under billing,
    b2's own cluster; a server check of billing's b1 shows under billing only."""
    wh = audited.replace("audit.yaml", "wh")
    def row(check, server, cluster, source, channel):
        return {**finding(check, server, "warning", cluster=cluster), "source": source, "channel": channel,
                "finding_key": finding_key(check, server, source, channel)}
    rows = [row("replica_gtid_holes", "r1", "orders", "src", ""), row("config_sync_binlog", "b1", "billing", None, None),
            row("replica_gtid_holes", "b2", "billing", "src", "orders"),
            row("failover_candidate_unsafe", "b2", "orders", "src", "orders")]
    write_run_rows(spark, "findings", rows, warehouse=wh, run_id="run1", run_date=D)
    columns = get_table("servers").column_names
    write_run_rows(spark, "servers", [{**dict.fromkeys(columns), "run_id": "run1", "run_date": D, "server": name,
                                       "cluster": cluster, "host": "127.0.0.1", "port": 3306, "status": "ok",
                                       "discovered": False}
                                      for name, cluster in (("src", "orders"), ("r1", "orders"), ("b1", "billing"),
                                                            ("b2", "billing"))],
                   warehouse=wh, run_id="run1", run_date=D)

    def shown(cluster):
        assert main(["findings", "--config", audited, "--cluster", cluster, "--format", "json"]) == 0
        return sorted((r["check_id"], r["server"]) for r in map(json.loads, capsys.readouterr().out.splitlines()))

    both = [("failover_candidate_unsafe", "b2"), ("replica_gtid_holes", "b2")]
    assert shown("orders") == sorted([*both, ("replica_gtid_holes", "r1")])
    assert shown("billing") == sorted([*both, ("config_sync_binlog", "b1")])
    assert main(["findings", "--config", audited, "--cluster", "nosuch", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "no server of run run1 is in cluster 'nosuch'; its clusters: billing, orders" in err


def test_findings_table(audited, capsys):
    """The table names the run and shows silenced findings as such."""
    assert main(["findings", "--config", audited, "--width", "200"]) == 0
    out = capsys.readouterr().out
    assert "findings of run run1 (5)" in out and "silenced: s1" in out and "r9" not in out


@pytest.mark.parametrize("width", [200, 100, 70])
def test_findings_table_keeps_names_whole(audited, capsys, width):
    """However narrow the terminal, severities, check ids and server names are printed whole on
    one line (at 100 columns a fresh-user trial read 'bill|ing-|arch|ive'); only GTID sets fold: one
    column per field when they fit, else severity, check id and the finding."""
    assert main(["findings", "--config", audited, "--format", "json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main(["findings", "--config", audited, "--width", str(width)]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= width
    for r in rows:
        assert r["check_id"] in out and r["severity"] in out and r["server"] in out
    assert ("first_seen" in out) is (width == 200)


def test_findings_without_audit(tmp_path, capsys):
    """findings on a warehouse never audited exits 1 and says to run first."""
    cfg = tmp_path / "a.yaml"
    cfg.write_text(f"warehouse: {tmp_path / 'none'}\ndefaults: {{user: audit}}\nservers:\n  - {{name: r1, host: h}}\n")
    assert main(["findings", "--config", str(cfg)]) == 1
    assert "no audited run" in capsys.readouterr().err


def test_explain_exit_codes(capsys):
    """explain prints a gtid_core check and exits 0; an unknown id exits 1."""
    assert main(["explain", "errant_transactions"]) == 0
    out = capsys.readouterr().out
    assert "errant_transactions:" in out
    # its paragraphs wrap at spaces for a 100-column terminal (the meaning was one 837-character line)
    assert all(len(line) <= 100 or " " not in line.strip() for line in out.splitlines())
    assert main(["explain", "nope"]) == 1


@pytest.mark.parametrize("fail_on,expected", [("critical", 2), ("warning", 2), ("never", 0)])
def test_exit_code_policy(fail_on, expected):
    """Open unsilenced findings at or above --fail-on give 2; silenced and resolved never count."""
    assert exit_code_for(ROWS, fail_on) == expected


def test_exit_code_ignores_silenced_and_resolved():
    """Only a silenced critical and a resolved critical: exit 0 under fail-on critical."""
    rows = [r for r in ROWS if r["server"] in ("r4", "r9")] + [ROWS[1]]
    assert exit_code_for(rows, "critical") == 0 and exit_code_for(rows, "warning") == 2
