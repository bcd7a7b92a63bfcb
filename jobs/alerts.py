"""History and the on-call alert feed: compare this run's findings with the previous run's.

Pure part (plain dicts in, plain dicts out, no Spark):

* ``finding_key(check_id, server, source, channel)`` — the stable identity of a finding across
  runs: ``sha1("check_id|server|source|channel")`` with ``None`` written as the empty string.
  The GTID set is *not* part of the key, so an errant set that grows stays the same finding.
* ``reconcile_findings`` — gives each open finding its ``first_seen`` and adds one ``resolved``
  row for every finding that was open in the previous run and is gone now. Findings about a
  server this run could not read are carried over as open (the audit is blind there, it cannot
  claim a repair).
* ``alert_events`` — the feed: ``new``, ``still_open``, ``escalated`` (severity went up),
  ``resolved``. Only open, unsilenced findings at or above ``min_severity`` alert.

I/O part: ``write_jsonl`` (the feed as JSON lines under ``<warehouse>/_alert_feed/``) and
``AlertmanagerClient`` (Prometheus Alertmanager's v2 API, ``POST /api/v2/alerts``, with retries).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

__all__ = [
    "SEVERITIES",
    "severity_rank",
    "finding_key",
    "reconcile_findings",
    "alert_events",
    "alert_labels",
    "alert_fingerprint",
    "to_alertmanager",
    "write_jsonl",
    "ALERT_FEED_DIR",
    "AlertmanagerSettings",
    "AlertmanagerClient",
    "AlertDeliveryError",
]

log = logging.getLogger("gtid_audit.alerts")

#: Severities from least to most severe.
SEVERITIES = ("info", "warning", "critical")
_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}

#: Columns a resolved row copies from the last open row of the same finding.
_CARRIED = ("finding_key", "check_id", "severity", "cluster", "server", "source", "channel",
            "title", "gtid_set", "gtid_count", "first_seen", "remediation", "check_version",
            "evidence", "silenced", "silence_id")


class AlertDeliveryError(RuntimeError):
    """Raised when Alertmanager refuses the alerts (HTTP 4xx) or stays unreachable after every
    retry; the message names the URL and quotes the server's answer."""


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


def reconcile_findings(
    current: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]],
    *,
    run_id: str,
    run_date: dt.date,
    blind_servers: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """This run's complete findings rows.

    ``current`` are the open findings the checks produced this run (rows with ``finding_key``);
    ``previous`` is every row of the previous run. Returns ``current`` with ``first_seen`` set
    (carried from the previous run's open row of the same key, else ``run_date``), plus:

    * one ``resolved`` row per previous open finding that is absent now, unless its server or
      source is in ``blind_servers`` (not collected this run): such a finding is carried over as
      open, because an unread server proves nothing;
    * ``collection_failed`` findings are never carried (they are recomputed every run).
    """
    blind = set(blind_servers)
    prev_open = {r["finding_key"]: r for r in previous if r.get("status") == "open"}
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row in current:
        key = row["finding_key"]
        if key in seen:
            raise ValueError(f"duplicate finding_key {key!r} in this run ({row.get('check_id')!r} "
                             f"on {row.get('server')!r})")
        seen.add(key)
        new = dict(row)
        before = prev_open.get(key)
        new["first_seen"] = before["first_seen"] if before is not None else run_date
        new["status"] = "open"
        new["run_id"], new["run_date"] = run_id, run_date
        out.append(new)
    for key, before in prev_open.items():
        if key in seen:
            continue
        carried = {c: before.get(c) for c in _CARRIED}
        carried["run_id"], carried["run_date"] = run_id, run_date
        if before.get("check_id") != "collection_failed" and (
                before.get("server") in blind or before.get("source") in blind):
            carried["status"] = "open"
            carried["detail"] = ("carried over: not re-checked in this run because a server it "
                                 "involves could not be collected. " + str(before.get("detail") or ""))
        else:
            carried["status"] = "resolved"
            carried["detail"] = (f"resolved: no longer found in run {run_id} "
                                 f"(last open in run {before.get('run_id')}).")
        out.append(carried)
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


def alert_events(
    current: Sequence[Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]],
    *,
    run_id: str,
    run_date: dt.date,
    min_severity: str = "warning",
) -> list[dict[str, Any]]:
    """The alert feed of one run: one event per finding that alerts now or alerted last run.

    ``event`` is ``new`` (alerts now, did not last run), ``escalated`` (alerted last run at a
    lower severity), ``still_open`` (alerted last run at the same or a higher severity) or
    ``resolved`` (alerted last run, does not now: repaired, silenced, or dropped below
    ``min_severity``). ``previous_severity`` is set for every event but ``new``.
    """
    min_rank = severity_rank(min_severity)
    before = {r["finding_key"]: r for r in previous if _alerting(r, min_rank)}
    now = {r["finding_key"]: r for r in current if _alerting(r, min_rank)}
    by_key_now = {r["finding_key"]: r for r in current}
    events: list[dict[str, Any]] = []
    for key, row in now.items():
        prev = before.get(key)
        if prev is None:
            kind, prev_sev = "new", None
        elif severity_rank(row["severity"]) > severity_rank(prev["severity"]):
            kind, prev_sev = "escalated", prev["severity"]
        else:
            kind, prev_sev = "still_open", prev["severity"]
        events.append(_event(row, kind, prev_sev, run_id, run_date))
    for key, prev in before.items():
        if key in now:
            continue
        row = by_key_now.get(key, prev)
        if row.get("status") == "open" and row.get("silenced"):
            reason = f"silenced by {row.get('silence_id')}"
        elif row.get("status") == "open":
            reason = f"severity now {row.get('severity')}, below {min_severity}"
        else:
            reason = "no longer found"
        ev = _event({**row, "severity": prev["severity"]}, "resolved", prev["severity"], run_id, run_date)
        ev["description"] = f"{reason}. {ev['description']}"
        events.append(ev)
    events.sort(key=lambda e: (e["event"], e["check_id"], e["cluster"] or "", e["server"] or "",
                               e["source"] or "", e["channel"] or ""))
    return events


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


def _rfc3339(ts: dt.datetime) -> str:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    return ts.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")


def to_alertmanager(events: Sequence[Mapping[str, Any]], *, now: dt.datetime,
                    ttl: dt.timedelta, generator_url: str | None = None) -> list[dict[str, Any]]:
    """Alertmanager v2 ``postableAlerts`` for a feed.

    Firing events (new, still_open, escalated) get ``startsAt = now`` (Alertmanager keeps the
    earliest start of an alert it already holds) and ``endsAt = now + ttl``: a nightly job must
    re-send before then, otherwise Alertmanager would auto-resolve after its ``resolve_timeout``.
    Resolved events get ``endsAt = now``. An event whose severity changed also resolves the
    alert with the old severity label, since a label change makes a different alert.
    """
    out: list[dict[str, Any]] = []
    for ev in events:
        annotations = {"summary": ev["summary"], "description": ev["description"]}
        if ev.get("remediation"):
            annotations["remediation"] = str(ev["remediation"])
        if ev.get("gtid_set"):
            annotations["gtid_set"] = str(ev["gtid_set"])
        alert: dict[str, Any] = {"labels": dict(ev["labels"]), "annotations": annotations,
                                 "startsAt": _rfc3339(now)}
        if generator_url:
            alert["generatorURL"] = generator_url
        if ev["event"] == "resolved":
            alert["endsAt"] = _rfc3339(now)
        else:
            alert["endsAt"] = _rfc3339(now + ttl)
            prev = ev.get("previous_severity")
            if prev and prev != ev["severity"]:
                old = {**ev["labels"], "severity": prev}
                out.append({"labels": old, "annotations": annotations,
                            "startsAt": _rfc3339(now), "endsAt": _rfc3339(now)})
        out.append(alert)
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value)


#: Folder of the JSON-lines feed under the warehouse (outside every table directory).
ALERT_FEED_DIR = "_alert_feed"


def write_jsonl(events: Sequence[Mapping[str, Any]], warehouse: str, run_date: dt.date,
                run_id: str) -> str:
    """Write the feed to ``<warehouse>/_alert_feed/<run_date>/<run_id>.jsonl`` (any filesystem
    pyarrow knows: a local path, file://, s3://, gs://, hdfs://) and return its location.

    The feed lives beside the Delta tables, never inside one: a file in a table's directory that
    the Delta log does not reference is deleted by the next VACUUM."""
    from pyarrow import fs as pafs

    if not warehouse:
        raise ValueError(f"warehouse must be a path or URI, got {warehouse!r}")
    if "://" in warehouse:
        filesystem, root = pafs.FileSystem.from_uri(warehouse)
    else:
        filesystem, root = pafs.LocalFileSystem(), str(warehouse)
    folder = f"{ALERT_FEED_DIR}/{run_date.isoformat()}"
    filesystem.create_dir(f"{root.rstrip('/')}/{folder}", recursive=True)
    path = f"{root.rstrip('/')}/{folder}/{run_id}.jsonl"
    body = "".join(json.dumps(dict(e), default=_jsonable, sort_keys=True) + "\n" for e in events)
    with filesystem.open_output_stream(path) as stream:
        stream.write(body.encode("utf-8"))
    return path if "://" not in warehouse else f"{warehouse.rstrip('/')}/{folder}/{run_id}.jsonl"


# ---------------------------------------------------------------------------------------------
# Alertmanager


class AlertmanagerSettings(BaseModel):
    """``audit.alertmanager``: where and how to post the feed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    timeout_s: float = Field(default=10.0, gt=0)
    attempts: int = Field(default=4, ge=1, le=20)
    ttl_hours: float = Field(default=48.0, gt=0,
                             description="endsAt of a firing alert: must exceed the time between runs")
    generator_url: str | None = None

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        parsed = urllib.parse.urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"alertmanager url must be http(s)://host[:port][/prefix], got {value!r}")
        return value.rstrip("/")


class _Retryable(Exception):
    """A failure worth retrying: connection refused or reset, timeout, HTTP 429 or 5xx."""


class AlertmanagerClient:
    """A small client of Alertmanager's v2 API (urllib, retries with exponential back-off)."""

    def __init__(self, settings: AlertmanagerSettings):
        self.settings = settings

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        url = self.settings.url + path
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json"})

        def once() -> Any:
            try:
                with urllib.request.urlopen(request, timeout=self.settings.timeout_s) as resp:
                    payload = resp.read()
            except urllib.error.HTTPError as exc:
                text = exc.read().decode("utf-8", "replace")[:500]
                if exc.code == 429 or exc.code >= 500:
                    raise _Retryable(f"{method} {url}: HTTP {exc.code} {text!r}") from exc
                raise AlertDeliveryError(f"{method} {url} refused: HTTP {exc.code} {text!r}") from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                raise _Retryable(f"{method} {url}: {exc}") from exc
            return json.loads(payload) if payload.strip() else None

        retrying = Retrying(
            stop=stop_after_attempt(self.settings.attempts),
            wait=wait_exponential(multiplier=0.5, max=10),
            retry=retry_if_exception(lambda e: isinstance(e, _Retryable)),
            reraise=True,
            before_sleep=lambda state: log.warning("alertmanager: %s; retrying", state.outcome.exception()),
        )
        try:
            return retrying(once)
        except _Retryable as exc:
            raise AlertDeliveryError(f"alertmanager unreachable after {self.settings.attempts} "
                                     f"attempt(s): {exc}") from None

    def post_alerts(self, alerts: Sequence[Mapping[str, Any]]) -> None:
        """``POST /api/v2/alerts`` (nothing is sent for an empty list)."""
        if alerts:
            self._request("POST", "/api/v2/alerts", list(alerts))

    def get_alerts(self, *, active: bool = True, silenced: bool = True, inhibited: bool = True,
                   unprocessed: bool = True, filters: Sequence[str] = ()) -> list[dict[str, Any]]:
        """``GET /api/v2/alerts`` with the API's own query parameters (``filter`` matchers such as
        ``'check_id="errant_transactions"'``)."""
        query = [("active", str(active).lower()), ("silenced", str(silenced).lower()),
                 ("inhibited", str(inhibited).lower()), ("unprocessed", str(unprocessed).lower())]
        query += [("filter", f) for f in filters]
        return self._request("GET", "/api/v2/alerts?" + urllib.parse.urlencode(query)) or []
