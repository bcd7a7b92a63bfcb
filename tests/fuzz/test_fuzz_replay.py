"""Every stored fuzz input -- seeds and the inputs that once crashed -- replayed through its target.

The coverage-guided runs (``tests/fuzz/run_fuzz.py``, atheris) keep their crashing inputs under
``tests/data/fuzz/crashes/<target>/``; this test needs no atheris and runs in CI, so a parser
that regresses on a stored input fails here.
"""
from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS

DATA = Path(__file__).resolve().parents[1] / "data" / "fuzz"

#: Crash inputs whose fix has not landed: file name -> why (the test flips when it is fixed).
KNOWN_CRASHES: dict[str, str] = {}


def _files(kind: str, target: str) -> list[Path]:
    folder = DATA / kind / target
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


@pytest.mark.parametrize("target", sorted(TARGETS), ids=sorted(TARGETS))
def test_seed_corpus_replays_without_undocumented_errors(target):
    """Every seed of the target (golden strings, real server rows) parses or raises a documented error."""
    seeds = _files("seeds", target)
    assert seeds, f"no seed corpus for {target} under {DATA / 'seeds' / target}"
    failures = []
    for path in seeds:
        try:
            TARGETS[target](path.read_bytes())
        except Exception:  # collected, so one run names every failing seed
            failures.append(f"{path.name}: {traceback.format_exc(limit=3)}")
    assert not failures, "\n".join(failures)


def _crash_params():
    params = []
    for target in sorted(TARGETS):
        for path in _files("crashes", target):
            marks = ()
            if path.name in KNOWN_CRASHES:
                marks = pytest.mark.xfail(strict=True, reason=KNOWN_CRASHES[path.name])
            params.append(pytest.param(target, path, id=f"{target}/{path.name}", marks=marks))
    return params or [pytest.param(None, None, id="no-stored-crashes")]


@pytest.mark.parametrize(("target", "path"), _crash_params())
def test_stored_crash_input_no_longer_crashes(target, path):
    """An input that once crashed a parser now parses or raises a documented error."""
    if target is None:
        assert not any((DATA / "crashes").glob("*/*")), "crash inputs exist but were not collected"
        return
    TARGETS[target](path.read_bytes())
