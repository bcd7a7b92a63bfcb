"""Differential test: GtidSet against a real MySQL 9.7 server's GTID_SUBTRACT / GTID_SUBSET.

Thousands of seeded cases are answered by the server in one batched SELECT over a temporary table
(see tests/core/gtid_oracle.py); every answer must match GtidSet exactly (canonical text of each
side, both differences, both subset tests, union, intersection). Texts that may be malformed are
asked one statement each and must be accepted or rejected exactly as the server does.
"""
from __future__ import annotations

import json
import random

import pytest

from gtid_core.errors import GtidParseError
from gtid_core.gtid_set import GtidSet
from tests.core.gtid_oracle import GOLDEN_PATH, server_canonical, server_pairs
from tests.strategies import random_gtid_text, random_invalid_text

pytestmark = pytest.mark.mysql

SEED = 97


@pytest.fixture(scope="module")
def conn(mysql_server):
    c = mysql_server.connect(user="root")
    try:
        yield c
    finally:
        c.close()


def _pairs(rng: random.Random, n: int, **kw) -> list[tuple[str, str]]:
    return [(random_gtid_text(rng, **kw), random_gtid_text(rng, **kw)) for _ in range(n)]


def _compare(pairs, answers) -> list[str]:
    problems = []
    for (a_text, b_text), want in zip(pairs, answers):
        a, b = GtidSet.parse(a_text), GtidSet.parse(b_text)
        got = {
            "canon_a": str(a), "canon_b": str(b), "a_minus_b": str(a - b), "b_minus_a": str(b - a),
            "a_sub_b": a <= b, "b_sub_a": b <= a, "union": str(a | b), "inter": str(a & b),
        }
        for key, value in got.items():
            if value != want[key]:
                problems.append(f"{key} of a={a_text!r} b={b_text!r}: GtidSet {value!r}, "
                                f"server {want[key]!r}")
    return problems


def test_algebra_matches_server_on_generated_pairs(conn):
    """Canonical text, a-b, b-a, subset both ways, union and intersection equal the server's for
    3,000 seeded pairs (tags, case variants, overlapping/adjacent/reversed intervals)."""
    rng = random.Random(SEED)
    pairs = _pairs(rng, 2000)
    pairs += _pairs(rng, 600, span=8, max_parts=12)        # dense: many adjacent intervals
    pairs += _pairs(rng, 300, max_items=25, pool_bias=0.3)  # many UUIDs
    pairs += [(a, a.upper()) for a, _ in _pairs(rng, 100)]  # equal sets, different spelling
    answers = server_pairs(conn, pairs)
    assert len(answers) == len(pairs)
    problems = _compare(pairs, answers)
    assert not problems, f"{len(problems)} disagreements, first ones:\n" + "\n".join(problems[:10])


def test_algebra_matches_server_on_large_sets(conn):
    """The same comparisons hold for sets with thousands of intervals and thousands of UUIDs."""
    rng = random.Random(SEED + 1)
    pairs = []
    for _ in range(6):
        holes_a = ":".join(f"{i * 10 + 1}-{i * 10 + rng.randint(1, 9)}" for i in range(3000))
        holes_b = ":".join(f"{i * 7 + 1}-{i * 7 + rng.randint(1, 6)}" for i in range(3000))
        u = rng.choice(["3e11fa47-71ca-11e1-9e33-c80aa9429562", "ffffffff-ffff-ffff-ffff-ffffffffffff"])
        pairs.append((f"{u}:{holes_a}", f"{u}:{holes_b},{u}:t:{holes_a}"))
    fleet = [f"{rng.getrandbits(128):032x}" for _ in range(2000)]
    a = ",".join(f"{u}:1-{rng.randint(1, 50)}" for u in fleet)
    b = ",".join(f"{u}:{rng.randint(1, 30)}-{rng.randint(30, 60)}" for u in fleet[::2])
    pairs.append((a, b))
    answers = server_pairs(conn, pairs)
    problems = _compare(pairs, answers)
    assert not problems, "\n".join(p[:500] for p in problems[:5])


def test_accept_reject_matches_server_on_corrupted_texts(conn):
    """600 corrupted texts: GtidSet raises GtidParseError exactly when the server raises
    ER_MALFORMED_GTID_SET_SPECIFICATION, and otherwise prints the server's canonical text."""
    rng = random.Random(SEED + 2)
    problems = []
    for _ in range(600):
        text = random_invalid_text(rng)
        canonical, error = server_canonical(conn, text)
        try:
            got, mine = str(GtidSet.parse(text)), None
        except GtidParseError as exc:
            got, mine = None, str(exc)
        if (error is None) != (mine is None) or got != canonical:
            problems.append(f"{text!r}: server {canonical!r}/{error!r}, GtidSet {got!r}/{mine!r}")
    assert not problems, "\n".join(problems[:10])


def test_golden_file_still_matches_server(conn):
    """Every case recorded in tests/data/gtid_golden.json gets the same answer from this server
    (so the replay test without a server tests against the truth)."""
    doc = json.loads(GOLDEN_PATH.read_text())
    problems = []
    for case in doc["cases"]:
        canonical, error = server_canonical(conn, case["input"])
        if case.get("canonical") != canonical or ("error" in case) != (error is not None):
            problems.append(f"{case!r}: server now says {canonical!r}/{error!r}")
    assert not problems, "\n".join(problems[:10])
