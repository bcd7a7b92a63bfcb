"""History and alert feed logic (jobs/alerts.py), on plain rows."""
from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest

from jobs.alerts import alert_events, finding_key, reconcile_findings, to_alertmanager, write_jsonl

D1, D2 = dt.date(2026, 11, 21), dt.date(2026, 11, 22)


def row(check, server, severity="critical", source=None, channel=None, **kw):
    out = {"finding_key": finding_key(check, server, source, channel), "check_id": check,
           "severity": severity, "cluster": "main", "server": server, "source": source,
           "channel": channel, "title": f"{check} title", "detail": "d", "gtid_set": None,
           "gtid_count": None, "remediation": "fix it", "check_version": 1, "silenced": False,
           "silence_id": None, "status": "open", "evidence": None}
    out.update(kw)
    return out


def test_finding_key_is_the_documented_sha1():
    """finding_key is sha1('check|server|source|channel') with None as ''."""
    assert finding_key("x", "r1", None, "") == hashlib.sha1(b"x|r1||").hexdigest()
    assert finding_key("x", "r1", "s", "c") != finding_key("x", "r1", "sc", "")


def test_reconcile_carries_first_seen_and_resolves_the_missing():
    """A finding still open keeps its first_seen; a vanished one gets exactly one resolved row."""
    prev = [dict(row("errant_transactions", "r1", gtid_set="u:1"), first_seen=D1, run_id="run1"),
            dict(row("purged_required", "r2"), first_seen=D1, run_id="run1"),
            dict(row("old", "r3", status="resolved"), first_seen=D1, run_id="run1")]
    cur = [row("errant_transactions", "r1", gtid_set="u:1-2"), row("relay_tail", "r4")]
    out = {(r["check_id"], r["status"]): r for r in
           reconcile_findings(cur, prev, run_id="run2", run_date=D2)}
    assert set(out) == {("errant_transactions", "open"), ("relay_tail", "open"), ("purged_required", "resolved")}
    assert out[("errant_transactions", "open")]["first_seen"] == D1
    assert out[("errant_transactions", "open")]["gtid_set"] == "u:1-2"
    assert out[("relay_tail", "open")]["first_seen"] == D2
    res = out[("purged_required", "resolved")]
    assert (res["run_id"], res["run_date"], res["first_seen"]) == ("run2", D2, D1)


def test_reconcile_does_not_resolve_what_it_could_not_see():
    """A finding about a server not collected this run stays open (the audit is blind there)."""
    prev = [dict(row("errant_transactions", "r1", source="s1"), first_seen=D1, run_id="run1"),
            dict(row("collection_failed", "s1"), first_seen=D1, run_id="run1")]
    out = reconcile_findings([], prev, run_id="run2", run_date=D2, blind_servers={"s1"})
    st = {r["check_id"]: r["status"] for r in out}
    assert st == {"errant_transactions": "open", "collection_failed": "resolved"}


def test_reconcile_refuses_duplicate_keys():
    """Two findings with one key in a run is a bug, reported with the check and server."""
    with pytest.raises(ValueError, match="'c1' on 'r1'"):
        reconcile_findings([row("c1", "r1"), row("c1", "r1")], [], run_id="r", run_date=D2)


def test_feed_new_still_open_escalated_resolved():
    """The four event kinds come out of one comparison, and info/silenced rows never alert."""
    prev = [row("a", "r1"), row("b", "r1", "warning"), row("c", "r1"), row("d", "r1", "info"),
            row("e", "r1")]
    cur = [row("a", "r1"), row("b", "r1", "critical"), row("c", "r1", status="resolved"),
           row("d", "r1", "info"), row("e", "r1", silenced=True, silence_id="s-1"), row("f", "r2", "warning")]
    events = {e["check_id"]: e for e in alert_events(cur, prev, run_id="run2", run_date=D2)}
    assert {k: e["event"] for k, e in events.items()} == {
        "a": "still_open", "b": "escalated", "c": "resolved", "e": "resolved", "f": "new"}
    assert events["b"]["previous_severity"] == "warning" and events["f"]["previous_severity"] is None
    assert events["e"]["description"].startswith("silenced by s-1")


def test_alertmanager_payload():
    """Firing alerts end after the TTL, resolved ones now, an escalation resolves the old labels."""
    prev = [row("b", "r1", "warning", source="s1", channel="")]
    cur = [row("b", "r1", "critical", source="s1", channel="")]
    (ev,) = alert_events(cur, prev, run_id="run2", run_date=D2)
    now = dt.datetime(2026, 11, 22, 3, 0, tzinfo=dt.timezone.utc)
    old, new = to_alertmanager([ev], now=now, ttl=dt.timedelta(hours=48))
    assert new["labels"] == {"alertname": "gtid_audit_b", "check_id": "b", "severity": "critical",
                             "cluster": "main", "server": "r1", "source": "s1"}
    assert (new["startsAt"], new["endsAt"]) == ("2026-11-22T03:00:00Z", "2026-11-24T03:00:00Z")
    assert old["labels"]["severity"] == "warning" and old["endsAt"] == "2026-11-22T03:00:00Z"
    assert new["annotations"]["remediation"] == "fix it"


def test_jsonl_file_under_the_warehouse(tmp_path):
    """The feed is written as one JSON object per line at _alert_feed/<run_date>/<run_id>.jsonl, outside the alerts table (VACUUM-safe)."""
    events = alert_events([row("a", "r1")], [], run_id="run2", run_date=D2)
    path = write_jsonl(events, str(tmp_path), D2, "run2")
    assert path == str(tmp_path / "_alert_feed" / "2026-11-22" / "run2.jsonl")
    lines = (tmp_path / "_alert_feed" / "2026-11-22" / "run2.jsonl").read_text().splitlines()
    assert [json.loads(x)["event"] for x in lines] == ["new"]
    assert json.loads(lines[0])["run_date"] == "2026-11-22"
