"""Replays tests/data/gtid_golden.json (inputs and the answers of a real MySQL 9.7.4 server,
captured with ``python -m tests.core.test_gtid_set_mysql --port N``) without a server."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gtid_core.errors import GtidParseError
from gtid_core.gtid_set import GtidSet
GOLDEN_PATH = Path(__file__).resolve().parents[1] / "data" / "gtid_golden.json"

DOC = json.loads(GOLDEN_PATH.read_text())
CASES = DOC["cases"]


def test_golden_file_has_both_kinds():
    """The golden file holds accepted and rejected inputs from a 9.7 server."""
    assert DOC["server_version"].startswith("9.7")
    assert sum("error" in c for c in CASES) >= 50
    assert sum("canonical" in c for c in CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[f"{i:03d}" for i in range(len(CASES))])
def test_golden_case(case):
    """GtidSet accepts what the server accepted (printing its canonical text) and raises
    GtidParseError for what it rejected."""
    if "error" in case:
        with pytest.raises(GtidParseError):
            GtidSet.parse(case["input"])
    else:
        assert str(GtidSet.parse(case["input"])) == case["canonical"]
