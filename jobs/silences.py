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
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gtid_core import GtidSet

__all__ = [
    "Silence",
    "SilenceMatch",
    "SilenceError",
    "parse_silences",
    "active_silences",
    "expired_silences",
    "match_silence",
]

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class SilenceError(ValueError):
    """Raised when the ``audit.silences`` configuration is invalid; the message names the entry
    (by position) and quotes the bad value."""


class Silence(BaseModel):
    """One configured silence. ``expires`` is inclusive: the silence applies on that date."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = Field(default=None, description="stable name; derived from the selectors when omitted")
    check: str | None = None
    cluster: str | None = None
    server: str | None = None
    gtid_uuids: tuple[str, ...] = ()
    expires: dt.date
    reason: str = Field(min_length=1)

    @field_validator("gtid_uuids", mode="before")
    @classmethod
    def _uuids(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"gtid_uuids must be a list of server_uuid strings, got {value!r}")
        out = []
        for item in value:
            text = str(item).strip().lower()
            if not _UUID_RE.match(text):
                raise ValueError(f"not a server_uuid: {item!r}")
            out.append(text)
        return tuple(sorted(set(out)))

    @model_validator(mode="after")
    def _selects_something(self) -> "Silence":
        if not (self.check or self.cluster or self.server or self.gtid_uuids):
            raise ValueError("a silence must set at least one of check, cluster, server, gtid_uuids")
        if self.id is None:
            basis = "|".join([self.check or "", self.cluster or "", self.server or "",
                              ",".join(self.gtid_uuids), self.expires.isoformat()])
            object.__setattr__(self, "id", "silence-" + hashlib.sha1(basis.encode()).hexdigest()[:10])
        return self

    def is_active(self, on: dt.date) -> bool:
        """True while ``on`` is not after ``expires``."""
        return on <= self.expires


@dataclass(frozen=True)
class SilenceMatch:
    """The silence that muted a finding (``None`` from ``match_silence`` when none did)."""

    silence_id: str
    reason: str
    expires: dt.date


def parse_silences(raw: object) -> tuple[Silence, ...]:
    """Validate the raw ``audit.silences`` list (from YAML) into frozen ``Silence`` values."""
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise SilenceError(f"audit.silences must be a list, got {raw!r}")
    out = []
    for index, item in enumerate(raw):
        if isinstance(item, Silence):
            out.append(item)
            continue
        try:
            out.append(Silence.model_validate(item))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(entry)'}: {e['msg']}"
                                 for e in exc.errors())
            raise SilenceError(f"audit.silences[{index}] {item!r} is invalid: {problems}") from None
    ids = [s.id for s in out]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SilenceError(f"audit.silences: duplicate silence id(s) {duplicates!r}")
    return tuple(out)


def active_silences(silences: Iterable[Silence], on: dt.date) -> tuple[Silence, ...]:
    """The silences that still apply on ``on``."""
    return tuple(s for s in silences if s.is_active(on))


def expired_silences(silences: Iterable[Silence], on: dt.date) -> tuple[Silence, ...]:
    """The silences whose expiry date is before ``on`` (reported in the run summary)."""
    return tuple(s for s in silences if not s.is_active(on))


def _uuids_of(gtid_set_text: str | None) -> frozenset[str]:
    """The UUIDs of a finding's GTID set (gtid_core parses it as the server would)."""
    if not gtid_set_text:
        return frozenset()
    return GtidSet.parse(gtid_set_text).uuids()


def match_silence(finding: Mapping[str, object], silences: Sequence[Silence]) -> SilenceMatch | None:
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
