"""Findings of an audit run compared with the model's truth."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from jobs.sandbox.sim.model import Truth

__all__ = ["Score", "score", "read_findings"]

ALERTING = ("critical", "warning")


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
    """Compare open warning/critical findings, keyed (check_id, server, source), with the truth."""
    expected = frozenset((t.check_id, t.server, t.source) for t in truth)
    found = frozenset((f["check_id"], f["server"], f.get("source")) for f in findings
                      if f.get("severity") in ALERTING and f.get("status", "open") == "open")
    return Score(expected, found)


def read_findings(config: str | Path) -> list[dict[str, Any]]:
    """The latest findings of the run, through ``gtid-audit findings --format json``."""
    out = subprocess.run([sys.executable, "-m", "jobs.cli", "findings", "--config", str(config), "--format", "json"],
                         check=True, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip().startswith("{")]
