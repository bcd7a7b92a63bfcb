"""The Alertmanager client (jobs/alerts.py) against a real Alertmanager."""
from __future__ import annotations

import datetime as dt

import pytest

from jobs.alerts import (AlertDeliveryError, AlertmanagerClient, AlertmanagerSettings, alert_events,
                         finding_key, to_alertmanager)

D1, D2 = dt.date(2026, 11, 21), dt.date(2026, 11, 22)


def row(check, server, severity="critical", **kw):
    out = {"finding_key": finding_key(check, server, "src", "ch1"), "check_id": check,
           "severity": severity, "cluster": "am-test", "server": server, "source": "src",
           "channel": "ch1", "title": "Errant transactions", "detail": "3 transactions",
           "gtid_set": "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-3", "remediation": "inject empty trx",
           "status": "open", "silenced": False}
    out.update(kw)
    return out


def ours(client, server):
    return [a for a in client.get_alerts(filters=[f'server="{server}"', 'cluster="am-test"'])]


def test_firing_then_resolved(alertmanager_url):
    """A new finding fires in Alertmanager with our labels; after its repair it is resolved."""
    client = AlertmanagerClient(AlertmanagerSettings(url=alertmanager_url, attempts=2))
    now = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
    first = alert_events([row("errant_transactions", "r-fire")], [], run_id="run1", run_date=D1)
    client.post_alerts(to_alertmanager(first, now=now, ttl=dt.timedelta(hours=48)))
    (alert,) = ours(client, "r-fire")
    assert alert["status"]["state"] == "active"
    assert alert["labels"] == {"alertname": "gtid_audit_errant_transactions", "check_id": "errant_transactions",
                               "severity": "critical", "cluster": "am-test", "server": "r-fire",
                               "source": "src", "channel": "ch1"}
    assert alert["annotations"]["remediation"] == "inject empty trx"
    fingerprint = alert["fingerprint"]

    # second run: the same finding is re-sent (same alert), then repaired in a third run
    again = alert_events([row("errant_transactions", "r-fire")], [row("errant_transactions", "r-fire")],
                         run_id="run2", run_date=D2)
    client.post_alerts(to_alertmanager(again, now=now, ttl=dt.timedelta(hours=48)))
    (alert,) = ours(client, "r-fire")
    assert alert["fingerprint"] == fingerprint

    gone = alert_events([], [row("errant_transactions", "r-fire")], run_id="run3", run_date=D2)
    assert [e["event"] for e in gone] == ["resolved"]
    client.post_alerts(to_alertmanager(gone, now=dt.datetime.now(dt.timezone.utc), ttl=dt.timedelta(hours=48)))
    assert ours(client, "r-fire") == []  # the v2 API lists only unresolved alerts


def test_escalation_replaces_the_alert(alertmanager_url):
    """An escalated finding leaves only the higher-severity alert firing."""
    client = AlertmanagerClient(AlertmanagerSettings(url=alertmanager_url))
    now = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
    warn = [row("relay_log_tail", "r-esc", "warning")]
    client.post_alerts(to_alertmanager(alert_events(warn, [], run_id="a", run_date=D1), now=now,
                                       ttl=dt.timedelta(hours=1)))
    crit = [row("relay_log_tail", "r-esc", "critical")]
    events = alert_events(crit, warn, run_id="b", run_date=D2)
    client.post_alerts(to_alertmanager(events, now=dt.datetime.now(dt.timezone.utc), ttl=dt.timedelta(hours=1)))
    assert [a["labels"]["severity"] for a in ours(client, "r-esc")] == ["critical"]


def test_bad_payload_is_refused_without_retry(alertmanager_url):
    """Alertmanager's 400 for an invalid alert becomes AlertDeliveryError quoting its answer."""
    client = AlertmanagerClient(AlertmanagerSettings(url=alertmanager_url))
    with pytest.raises(AlertDeliveryError, match="HTTP 400"):
        client.post_alerts([{"labels": {}, "startsAt": "not a time"}])


def test_unreachable_alertmanager_fails_after_retries():
    """A closed port is retried, then reported naming the URL."""
    client = AlertmanagerClient(AlertmanagerSettings(url="http://127.0.0.1:9", attempts=2, timeout_s=1))
    with pytest.raises(AlertDeliveryError, match=r"2 attempt.*127.0.0.1:9/api"):
        client.post_alerts([{"labels": {"alertname": "x"}}])
