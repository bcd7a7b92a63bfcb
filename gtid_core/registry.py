"""The one registry of every check the audit knows: what ``gtid-audit explain`` prints, what a
silence may name, what the README's generated table lists.

``gtid_core.checks.CHECKS`` (gtid_core/checks/catalogue.py) holds the pure checks over snapshots
and the job-level checks (scope ``job``: what the job reports from collection and source
resolution); ``gtid_core.failover`` holds the failover-readiness checks and ``gtid_core.identity``
the duplicate-identity check.
:data:`REGISTRY` is their union, one :class:`~gtid_core.checks.CheckInfo` per check id.
"""
from __future__ import annotations

from gtid_core.checks.catalogue import CHECKS, CheckInfo
from gtid_core.failover import FAILOVER_CHECKS
from gtid_core.identity import IDENTITY_CHECKS

__all__ = ["REGISTRY", "JOB_CHECKS", "check_info"]

#: Every check, by id.
REGISTRY: dict[str, CheckInfo] = {**CHECKS, **FAILOVER_CHECKS, **IDENTITY_CHECKS}

#: The checks the job makes from what collection and source resolution recorded.
JOB_CHECKS: dict[str, CheckInfo] = {k: v for k, v in REGISTRY.items() if v.scope == "job"}


def check_info(check_id: str) -> CheckInfo:
    """The registered check ``check_id``; KeyError naming the known ids otherwise."""
    try:
        return REGISTRY[check_id]
    except KeyError:
        raise KeyError(f"unknown check id {check_id!r}; known: {', '.join(sorted(REGISTRY))}") from None
