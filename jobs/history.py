"""History and the alert feed, as pure functions (standard library only; Spark tasks run them).

* ``finding_key(check_id, server, source, channel)`` — the stable identity of a finding across
  runs: ``sha1("check_id|server|source|channel")`` with ``None`` written as the empty string.
  The GTID set is *not* part of the key, so an errant set that grows stays the same finding.
* ``reconcile_findings`` — gives each open finding its ``first_seen`` and adds one ``resolved``
  row for every finding that was open in the previous run and is gone now. Findings about a
  server this run could not read are carried over as open (the audit is blind there, it cannot
  claim a repair). ``reconcile_key`` is the same decision for one ``finding_key``, which is how
  the audit applies it to the outer join of this run's and the previous run's findings.
* ``alert_events`` / ``alert_event_for_key`` — the feed: ``new``, ``still_open``, ``escalated``
  (severity went up), ``resolved``. Only open, unsilenced findings at or above ``min_severity``
  alert.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "SEVERITIES",
    "severity_rank",
    "finding_key",
    "reconcile_findings",
    "reconcile_key",
    "alert_events",
    "alert_event_for_key",
    "event_order",
    "alert_labels",
    "alert_fingerprint",
]

#: Severities from least to most severe.
SEVERITIES = ("info", "warning", "critical")
_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}

#: Columns a resolved row copies from the last open row of the same finding.
_CARRIED = ("finding_key", "check_id", "severity", "cluster", "server", "source", "channel",
            "title", "gtid_set", "gtid_count", "first_seen", "remediation", "check_version",
            "evidence", "silenced", "silence_id")


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warning, 2 for critical; a ValueError naming anything else."""
    try:
        return _RANK[severity]
    except KeyError:
        raise ValueError(f"unknown severity {severity!r}; expected one of {SEVERITIES}") from None


def finding_key(check_id: str, server: str | None, source: str | None, channel: str | None) -> str:
    """sha1 hex of ``check_id|server|source|channel`` (None as ''): stable across runs."""
    text = "|".join(["" if v is None else str(v) for v in (check_id, server, source, channel)])
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# history


def reconcile_key(current: Mapping[str, Any] | None, previous: Mapping[str, Any] | None, *,
                  run_id: str, run_date: dt.date, blind: bool) -> dict[str, Any] | None:
    """This run's row for one ``finding_key``, from the check's row now (``current``, None when
    the checks did not produce it) and the previous run's row (``previous``, None when absent).

    * found now: the row, ``status = 'open'``, ``first_seen`` carried from the previous run's
      open row, else ``run_date``;
    * open last run, not found now: ``resolved`` — unless ``blind`` (its server or source was
      not collected this run), when it is carried over as open, because an unread server proves
      nothing; ``collection_failed`` findings are never carried (they are recomputed each run);
    * otherwise (resolved or absent last run, absent now): None, no row.
    """
    before = previous if previous is not None and previous.get("status") == "open" else None
    if current is not None:
        new = dict(current)
        new["first_seen"] = before["first_seen"] if before is not None else run_date
        new["status"] = "open"
        new["run_id"], new["run_date"] = run_id, run_date
        return new
    if before is None:
        return None
    carried = {c: before.get(c) for c in _CARRIED}
    carried["run_id"], carried["run_date"] = run_id, run_date
    if before.get("check_id") != "collection_failed" and blind:
        carried["status"] = "open"
        carried["detail"] = ("carried over: not re-checked in this run because a server it "
                             "involves could not be collected. " + str(before.get("detail") or ""))
    else:
        carried["status"] = "resolved"
        carried["detail"] = (f"resolved: no longer found in run {run_id} "
                             f"(last open in run {before.get('run_id')}).")
    return carried


def reconcile_findings(
    current: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]],
    *,
    run_id: str,
    run_date: dt.date,
    blind_servers: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """This run's complete findings rows: :func:`reconcile_key` over every key of ``current``
    (the open findings the checks produced, one row per ``finding_key``) and of ``previous``
    (every row of the previous run); ``blind_servers`` are the servers not collected now."""
    blind = set(blind_servers)
    prev = {r["finding_key"]: r for r in previous}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in current:
        key = row["finding_key"]
        if key in seen:
            raise ValueError(f"duplicate finding_key {key!r} in this run ({row.get('check_id')!r} "
                             f"on {row.get('server')!r})")
        seen.add(key)
        out.append(reconcile_key(row, prev.get(key), run_id=run_id, run_date=run_date, blind=False))
    for key, before in prev.items():
        if key in seen:
            continue
        blind_now = before.get("server") in blind or before.get("source") in blind
        row = reconcile_key(None, before, run_id=run_id, run_date=run_date, blind=blind_now)
        if row is not None:
            out.append(row)
    return out


# ---------------------------------------------------------------------------------------------
# alert feed


def _alerting(row: Mapping[str, Any], min_rank: int) -> bool:
    return (row.get("status") == "open" and not row.get("silenced")
            and severity_rank(str(row.get("severity"))) >= min_rank)


def alert_labels(row: Mapping[str, Any]) -> dict[str, str]:
    """The Alertmanager label set of a finding: alertname, check_id, severity, cluster, server,
    source, channel. Empty values are left out (Alertmanager treats an empty label as absent;
    the default replication channel is the empty string)."""
    labels = {
        "alertname": f"gtid_audit_{row['check_id']}",
        "check_id": row["check_id"],
        "severity": row["severity"],
        "cluster": row.get("cluster"),
        "server": row.get("server"),
        "source": row.get("source"),
        "channel": row.get("channel"),
    }
    return {k: str(v) for k, v in labels.items() if v not in (None, "")}


def alert_fingerprint(labels: Mapping[str, str]) -> str:
    """sha1 hex of the sorted ``name=value`` label pairs: the same finding at the same severity
    always has the same fingerprint (Alertmanager identifies an alert by its labels too)."""
    text = "\n".join(f"{k}={labels[k]}" for k in sorted(labels))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def alert_event_for_key(current: Mapping[str, Any] | None, previous: Mapping[str, Any] | None, *,
                        run_id: str, run_date: dt.date, min_severity: str = "warning") -> dict[str, Any] | None:
    """The feed's event for one ``finding_key``: ``current`` is this run's findings row (after
    :func:`reconcile_key`), ``previous`` the previous run's; None when neither alerts.

    ``new`` (alerts now, did not last run), ``escalated`` (alerted last run at a lower
    severity), ``still_open`` (alerted last run at the same or a higher severity) or
    ``resolved`` (alerted last run, does not now: repaired, silenced, or dropped below
    ``min_severity``). ``previous_severity`` is set for every event but ``new``.
    """
    min_rank = severity_rank(min_severity)
    before = previous if previous is not None and _alerting(previous, min_rank) else None
    now = current if current is not None and _alerting(current, min_rank) else None
    if now is not None:
        if before is None:
            return _event(now, "new", None, run_id, run_date)
        if severity_rank(now["severity"]) > severity_rank(before["severity"]):
            return _event(now, "escalated", before["severity"], run_id, run_date)
        return _event(now, "still_open", before["severity"], run_id, run_date)
    if before is None:
        return None
    row = current if current is not None else before
    if row.get("status") == "open" and row.get("silenced"):
        reason = f"silenced by {row.get('silence_id')}"
    elif row.get("status") == "open":
        reason = f"severity now {row.get('severity')}, below {min_severity}"
    else:
        reason = "no longer found"
    ev = _event({**row, "severity": before["severity"]}, "resolved", before["severity"], run_id, run_date)
    ev["description"] = f"{reason}. {ev['description']}"
    return ev


def event_order(event: Mapping[str, Any]) -> tuple:
    """The feed's order: by event kind, check, cluster, server, source, channel."""
    return (event["event"], event["check_id"], event["cluster"] or "", event["server"] or "",
            event["source"] or "", event["channel"] or "")


def alert_events(
    current: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]],
    *,
    run_id: str,
    run_date: dt.date,
    min_severity: str = "warning",
) -> list[dict[str, Any]]:
    """The alert feed of one run: :func:`alert_event_for_key` over every key of ``current``
    and ``previous``, in :func:`event_order`."""
    now = {r["finding_key"]: r for r in current}
    before = {r["finding_key"]: r for r in previous}
    events = [alert_event_for_key(now.get(k), before.get(k), run_id=run_id, run_date=run_date,
                                  min_severity=min_severity) for k in {**now, **before}]
    return sorted((e for e in events if e is not None), key=event_order)


def _event(row: Mapping[str, Any], kind: str, prev_sev: str | None, run_id: str,
           run_date: dt.date) -> dict[str, Any]:
    labels = alert_labels(row)
    where = row.get("server") or "?"
    if row.get("source"):
        where += f" (source {row['source']}"
        where += f", channel {row['channel']!r})" if row.get("channel") else ")"
    return {
        "run_id": run_id,
        "run_date": run_date,
        "event": kind,
        "finding_key": row["finding_key"],
        "fingerprint": alert_fingerprint(labels),
        "check_id": row["check_id"],
        "severity": row["severity"],
        "previous_severity": prev_sev,
        "cluster": row.get("cluster"),
        "server": row.get("server"),
        "source": row.get("source"),
        "channel": row.get("channel"),
        "summary": f"{row.get('title') or row['check_id']} on {where}",
        "description": str(row.get("detail") or ""),
        "remediation": row.get("remediation"),
        "gtid_set": row.get("gtid_set"),
        "gtid_count": row.get("gtid_count"),
        "first_seen": row.get("first_seen"),
        "labels": labels,
    }


