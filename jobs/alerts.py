"""The on-call alert feed's outputs: JSON lines and Prometheus Alertmanager (driver side).

The pure part, re-exported here, lives in ``jobs.history`` (Spark tasks run it):

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

from jobs.config import AlertmanagerSettings
from jobs.history import (  # noqa: F401  (re-exported: the feed's pure part lives in jobs.history)
    SEVERITIES,
    alert_event_for_key,
    alert_events,
    alert_fingerprint,
    alert_labels,
    finding_key,
    reconcile_findings,
    reconcile_key,
    severity_rank,
)

log = logging.getLogger("gtid_audit.alerts")

class AlertDeliveryError(RuntimeError):
    """Raised when Alertmanager refuses the alerts (HTTP 4xx) or stays unreachable after every
    retry; the message names the URL and quotes the server's answer."""


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


def write_jsonl(events: Iterable[Mapping[str, Any]], warehouse: str, run_date: dt.date,
                run_id: str) -> str:
    """Write the feed to ``<warehouse>/_alert_feed/<run_date>/<run_id>.jsonl`` (any filesystem
    pyarrow knows: a local path, file://, s3://, gs://, hdfs://), one event at a time, and return
    its location.

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
    with filesystem.open_output_stream(path) as stream:
        for e in events:
            stream.write((json.dumps(dict(e), default=_jsonable, sort_keys=True) + "\n").encode("utf-8"))
    return path if "://" not in warehouse else f"{warehouse.rstrip('/')}/{folder}/{run_id}.jsonl"


# ---------------------------------------------------------------------------------------------
# Alertmanager


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
