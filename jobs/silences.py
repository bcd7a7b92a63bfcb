"""Silences: findings an operator has acknowledged, muted until an expiry date.

A silence is configured under ``audit.silences`` (see docs/audit.md) and selects findings by any
of ``check``, ``cluster``, ``server`` and ``gtid_uuids``; every selector given must match. A
silenced finding is still written to the ``findings`` table (``silenced = true``, with the
silence's id) so history stays complete, but it raises no alert and does not count for the exit
code. A silence whose ``expires`` date has passed no longer applies and is listed in the run
summary, so a forgotten acknowledgement turns back into an alert instead of hiding a fault.

``gtid_uuids`` is for a replica that is known to be written to (for example a reporting replica
with its own tables): a finding is silenced by it only when *every* UUID of the finding's
``gtid_set`` is listed, so an errant transaction from any other server still alerts.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gtid_core import GtidSet

__all__ = [
    "SilenceRule",
    "SilenceMatch",
    "rules_of",
    "active_silences",
    "expired_silences",
    "match_silence",
]



@dataclass(frozen=True)
class SilenceRule:
    """A configured silence as Spark tasks apply it (plain values; ``jobs.config.Silence``
    validated it). ``expires`` is inclusive: the silence applies on that date."""

    id: str
    check: str | None
    cluster: str | None
    server: str | None
    gtid_uuids: tuple[str, ...]
    expires: dt.date
    reason: str

    def is_active(self, on: dt.date) -> bool:
        """True while ``on`` is not after ``expires``."""
        return on <= self.expires


def rules_of(silences: Iterable[Any]) -> tuple[SilenceRule, ...]:
    """The plain rules of configured silences (``jobs.config.Silence`` models)."""
    return tuple(SilenceRule(id=s.id or "", check=s.check, cluster=s.cluster, server=s.server,
                             gtid_uuids=tuple(s.gtid_uuids), expires=s.expires, reason=s.reason)
                 for s in silences)


@dataclass(frozen=True)
class SilenceMatch:
    """The silence that muted a finding (``None`` from ``match_silence`` when none did)."""

    silence_id: str
    reason: str
    expires: dt.date


def active_silences(silences: Iterable[SilenceRule], on: dt.date) -> tuple[SilenceRule, ...]:
    """The silences that still apply on ``on``."""
    return tuple(s for s in silences if s.is_active(on))


def expired_silences(silences: Iterable[SilenceRule], on: dt.date) -> tuple[SilenceRule, ...]:
    """The silences whose expiry date is before ``on`` (reported in the run summary)."""
    return tuple(s for s in silences if not s.is_active(on))


def _uuids_of(gtid_set_text: str | None) -> frozenset[str]:
    """The UUIDs of a finding's GTID set (gtid_core parses it as the server would)."""
    if not gtid_set_text:
        return frozenset()
    return GtidSet.parse(gtid_set_text).uuids()


def match_silence(finding: Mapping[str, object], silences: Sequence[SilenceRule]) -> SilenceMatch | None:
    """The first of ``silences`` (already filtered to the active ones) that mutes ``finding``.

    ``finding`` is a findings-table row (``check_id``, ``cluster``, ``server``, ``gtid_set``).
    """
    for s in silences:
        if s.check is not None and s.check != finding.get("check_id"):
            continue
        if s.cluster is not None and s.cluster != finding.get("cluster"):
            continue
        if s.server is not None and s.server != finding.get("server"):
            continue
        if s.gtid_uuids:
            uuids = _uuids_of(finding.get("gtid_set"))  # type: ignore[arg-type]
            if not uuids or not uuids <= set(s.gtid_uuids):
                continue
        return SilenceMatch(silence_id=s.id or "", reason=s.reason, expires=s.expires)
    return None
