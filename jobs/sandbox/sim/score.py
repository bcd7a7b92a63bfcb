"""Findings of an audit run compared with the model's truth."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from jobs.sandbox.sim.model import Truth

__all__ = ["Score", "score", "read_findings", "read_readiness"]

ALERTING = ("critical", "warning")
#: Checks the model has no truth for: failover readiness follows from the consistency faults
#: (an errant replica is an unsafe candidate) and is proven against real servers by promoting
#: candidates in the sandbox (tests/sandbox/test_failover_scenarios.py), not by the simulator.
UNSCORED = frozenset({"failover_candidate_unsafe", "no_safe_failover_candidate", "duplicate_server_uuid"})


@dataclass(frozen=True)
class Score:
    expected: frozenset[tuple[str, str, str | None]]
    found: frozenset[tuple[str, str, str | None]]

    @property
    def missed(self) -> frozenset:
        return self.expected - self.found

    @property
    def false_positives(self) -> frozenset:
        return self.found - self.expected

    @property
    def recall(self) -> float:
        return 1.0 if not self.expected else len(self.expected & self.found) / len(self.expected)


def score(truth: Iterable[Truth], findings: Iterable[dict[str, Any]]) -> Score:
    """Compare open warning/critical findings, keyed (check_id, server, source), with the warning
    and critical truth (the failover-readiness checks, which the model has no finding truth for,
    left out: ``UNSCORED``; their readiness rows are compared by tests/sim/test_sim_end_to_end.py)."""
    expected = frozenset((t.check_id, t.server, t.source) for t in truth if t.severity in ALERTING)
    found = frozenset((f["check_id"], f["server"], f.get("source")) for f in findings
                      if f.get("severity") in ALERTING and f.get("status", "open") == "open"
                      and f["check_id"] not in UNSCORED)
    return Score(expected, found)


def read_findings(warehouse: str | Path, run_id: str | None = None) -> list[dict[str, Any]]:
    """The findings rows of ``run_id`` (default: the latest audited run), read with delta-rs
    from the warehouse: only the files that can hold the run's rows are opened
    (:func:`jobs.delta_io.scan_arrow`), so scoring night k of a year does not read k nights."""
    root = str(warehouse).rstrip("/")
    if run_id is None:
        summaries = _rows(root, "run_summary", None, ["run_id", "audited_at"])
        if not summaries:
            return []
        run_id = max(summaries, key=lambda r: (r["audited_at"] is not None, r["audited_at"], r["run_id"]))["run_id"]
    return _rows(root, "findings", run_id,
                 ["run_id", "check_id", "severity", "server", "source", "channel", "status", "gtid_set", "remediation"])


def read_readiness(warehouse: str | Path, run_id: str) -> list[dict[str, Any]]:
    """The failover_readiness rows of ``run_id`` (source, candidate, channel, sibling, verdict),
    read with delta-rs from the warehouse."""
    return _rows(str(warehouse).rstrip("/"), "failover_readiness", run_id,
                 ["run_id", "source", "candidate", "channel", "sibling", "sibling_role", "verdict"])


def _rows(warehouse: str, name: str, run_id: str | None, columns: list[str]) -> list[dict[str, Any]]:
    from jobs.delta_io import scan_arrow

    return [row for batch in scan_arrow(warehouse, name, run_id, columns=columns) for row in batch.to_pylist()]
