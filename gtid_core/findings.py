"""Finding records: what a check found, with its evidence and what to do about it."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from gtid_core.gtid_set import GtidSet

__all__ = [
    "Finding",
    "Severity",
    "empty_transaction_sql",
    "EMPTY_TRANSACTION_SQL_CAP",
]


class Severity(str, enum.Enum):
    """How urgent a finding is. ``critical``: data is lost, diverged, or replication will stop;
    ``warning``: a latent problem or a risk that makes silent loss possible; ``info``: context."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """critical 2, warning 1, info 0 (for sorting and fail-on thresholds)."""
        return {"critical": 2, "warning": 1, "info": 0}[self.value]


def _evidence_value(value: Any) -> Any:
    if isinstance(value, GtidSet):
        return value.to_text(multiline=False)
    if isinstance(value, enum.Enum):
        return value.value
    return value


@dataclass(frozen=True)
class Finding:
    """One problem (or risk) a check found about one server or one replication channel.

    ``server`` is the server the finding is about (the replica for pair checks), ``source`` the
    source of the channel (None for server checks), ``gtid_set`` the GTID evidence (usually the
    difference that proves the problem) and ``gtid_count`` its size. ``evidence`` maps names
    (``replica_gtid_executed``, ``source_gtid_purged``, ...) to canonical set text or values.
    """

    check_id: str
    severity: Severity
    server: str
    title: str
    detail: str
    check_version: int
    source: str | None = None
    channel: str | None = None
    gtid_set: GtidSet | None = None
    gtid_count: int | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    remediation: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.severity, Severity):
            object.__setattr__(self, "severity", Severity(self.severity))
        if self.gtid_set is not None and self.gtid_count is None:
            object.__setattr__(self, "gtid_count", self.gtid_set.count())
        frozen = {str(k): _evidence_value(v) for k, v in dict(self.evidence).items()}
        object.__setattr__(self, "evidence", MappingProxyType(frozen))

    def __hash__(self) -> int:
        return hash((self.check_id, self.severity, self.server, self.source, self.channel, self.gtid_set))

    def to_dict(self) -> dict[str, Any]:
        """Plain values only: sets as canonical single-line text, severity as its name."""
        return {
            "check_id": self.check_id,
            "severity": self.severity.value,
            "server": self.server,
            "source": self.source,
            "channel": self.channel,
            "title": self.title,
            "detail": self.detail,
            "gtid_set": self.gtid_set.to_text(multiline=False) if self.gtid_set is not None else None,
            "gtid_count": self.gtid_count,
            "evidence": dict(self.evidence),
            "remediation": self.remediation,
            "check_version": self.check_version,
        }


EMPTY_TRANSACTION_SQL_CAP = 1000


#: The first line of empty_transaction_sql for a set with tagged GTIDs (a SQL comment).
TAGGED_GTID_PRIVILEGE_NOTE = ("-- Tagged GTIDs: the session needs the TRANSACTION_GTID_TAG privilege as well as "
                              "SYSTEM_VARIABLES_ADMIN, SESSION_VARIABLES_ADMIN or REPLICATION_APPLIER (else error 6038).")


def empty_transaction_sql(gtids: GtidSet, *, cap: int = EMPTY_TRANSACTION_SQL_CAP) -> str:
    """SQL that commits one empty transaction per GTID of ``gtids`` (the server's own way to mark
    a transaction as executed without running it), tagged GTIDs included.

    At most ``cap`` statements are written; for a larger set the text ends with a note saying
    how many were left out and how to generate the rest, rather than a multi-megabyte script.

    A set with a tagged GTID starts with a comment naming the privilege it needs: setting
    GTID_NEXT to a tagged GTID takes TRANSACTION_GTID_TAG besides one of SYSTEM_VARIABLES_ADMIN,
    SESSION_VARIABLES_ADMIN or REPLICATION_APPLIER (error 6038 otherwise; observed on 9.7.4,
    tests/core/test_checks_live.py), which an account that can commit untagged ones may lack.
    """
    lines: list[str] = []
    if any(tag is not None for _, tag, _, _ in gtids):
        lines.append(TAGGED_GTID_PRIVILEGE_NOTE)
    written = 0
    total = gtids.count()
    for uuid, tag, first, last in gtids:
        prefix = f"{uuid}:{tag}" if tag is not None else uuid
        gno = first
        while gno <= last and written < cap:
            lines.append(f"SET GTID_NEXT='{prefix}:{gno}'; BEGIN; COMMIT;")
            written += 1
            gno += 1
        if written >= cap:
            break
    lines.append("SET GTID_NEXT='AUTOMATIC';")
    if total > written:
        lines.append(
            f"-- {total - written} more GTIDs not listed (the set has {total}); generate the rest the same way "
            f"from the set {gtids.to_text(multiline=False)!r}, or, if those transactions are not wanted "
            "anywhere, consider reprovisioning instead."
        )
    return "\n".join(lines)
