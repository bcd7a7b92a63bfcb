"""Differential test: GtidSet against a real MySQL 9.7 server's GTID_SUBTRACT / GTID_SUBSET.

Thousands of seeded cases are answered by the server a few hundred at a time, each query a SELECT
over a ``VALUES`` table constructor (no table, no write); every answer must match GtidSet exactly
(canonical text of each side, both differences, both subset tests, union, intersection). Texts
that may be malformed are asked one statement each (one malformed input fails a whole statement)
and must be accepted or rejected exactly as the server does.

Run as a script to (re)capture the golden file replayed by test_gtid_set_golden.py::

    python -m tests.core.test_gtid_set_mysql --port 3306 [--host 127.0.0.1] [--user root]
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pytest

from gtid_core.errors import GtidParseError
from gtid_core.gtid_set import GtidSet
from tests.strategies import random_gtid_text, random_invalid_text

pytestmark = pytest.mark.mysql

GOLDEN_PATH = Path(__file__).resolve().parents[1] / "data" / "gtid_golden.json"
ER_MALFORMED_GTID_SET_SPECIFICATION = 1772

_COLUMNS = (
    "canon_a",   # GTID_SUBTRACT(a, '')                       canonical text of a
    "canon_b",
    "a_minus_b",  # GTID_SUBTRACT(a, b)
    "b_minus_a",
    "a_sub_b",    # GTID_SUBSET(a, b)
    "b_sub_a",
    "union",      # GTID_SUBTRACT(CONCAT(a, ',', b), '')
    "inter",      # GTID_SUBTRACT(a, GTID_SUBTRACT(a, b))
)


def _text(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    return value


def server_pairs(conn, pairs: list[tuple[str, str]], chunk: int = 400) -> list[dict]:
    """The server's answers for valid text pairs ``(a, b)``: one dict per pair, keys
    ``_COLUMNS``, in input order. Each query answers ``chunk`` pairs from a ``VALUES`` table
    constructor (no table, no write, works for a read-only user)."""
    cur = conn.cursor()
    out = []
    for lo in range(0, len(pairs), chunk):
        part = pairs[lo:lo + chunk]
        rows = ", ".join(["ROW(%s, %s, %s)"] * len(part))
        params = [v for i, (a, b) in enumerate(part) for v in (lo + i, a, b)]
        cur.execute(
            "SELECT id, GTID_SUBTRACT(a, ''), GTID_SUBTRACT(b, ''), GTID_SUBTRACT(a, b), "
            "GTID_SUBTRACT(b, a), GTID_SUBSET(a, b), GTID_SUBSET(b, a), "
            "GTID_SUBTRACT(CONCAT(a, ',', b), ''), GTID_SUBTRACT(a, GTID_SUBTRACT(a, b)) "
            f"FROM (VALUES {rows}) AS t (id, a, b) ORDER BY id", params)
        for row in cur.fetchall():
            values = [_text(v) if not isinstance(v, int) else bool(v) for v in row[1:]]
            out.append(dict(zip(_COLUMNS, values)))
    cur.close()
    return out


def server_canonical(conn, text: str) -> tuple[str | None, str | None]:
    """``(canonical, None)`` when the server accepts ``text``, ``(None, message)`` when it
    rejects it with ER_MALFORMED_GTID_SET_SPECIFICATION."""
    import mysql.connector

    cur = conn.cursor()
    try:
        cur.execute("SELECT GTID_SUBTRACT(%s, '')", (text,))
        return _text(cur.fetchone()[0]), None
    except mysql.connector.Error as exc:
        if exc.errno != ER_MALFORMED_GTID_SET_SPECIFICATION:
            raise
        return None, exc.msg
    finally:
        cur.close()


U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
#: Hand-picked inputs for the golden file: each documents one rule of the server's grammar.
CURATED = [
    "", " ", ",", "\r,, ,\t", f"{U}", f"{U} ,", f"{U}:tag", f"{U}:1:tag", f"{U}:a:b:1",
    f"{U}:1-5:7:9-10,{U.upper()}:6", f"{U}:Tag_1:1-5,{U}:1-2:TAG_1:7", f"{U}:5-3", f"{U}:5-0",
    f"{U}:1-00", f"{U}:010", f"{U}:000000000000000000000000001", f"{U}:9223372036854775806",
    f"{U}:1-9223372036854775806", f"{U}: 1 - 5 : 7", f"\f\f\n{U}\t \t:\n1\r",
    f"{U} :a :1", f"{U}:_:1", f"{U}:_1:1", f"{U}:{'a' * 32}:1",
    f"{U.replace('-', '')}:1", f"{U.upper().replace('-', '')}:1", f"{{{U}}}:1",
    f"{{{U.upper()}}}:1", f",,{U}:1,,,{U}:3,,", f"{U}:1,{U}",
    # rejected
    f"{U}:0", f"{U}:0-5", f"{U}:00", f"{U}:9223372036854775807", f"{U}:1-9223372036854775807",
    f"{U}:99999999999999999999999", f"{U}:1-", f"{U}:1:", f"{U}:", f"{U}::1", f"{U}:1-2::3",
    f"{U}:1;", f"{U}:1 2", f"{U}:1a", f"{U}:a-1", f"{U}:-1", f"{U}:+5", f"{U}:1-+7", f"{U}:5--1",
    f"{U}:0x10", f"{U}:1-0x", f"{U}:{'a' * 33}:1", f"{U}:1:{'a' * 33}", f"{U}:abc def:1",
    f"{U}:ä:1", f"{U}:1\u00a0", f"{U}:1\x00", "\x00", f"{U}:1,:1", f"{U}:1,x",
    f"{U[:-1]}:1", f"{U}3:1", f"{U}}}:1", f"{{{U}:1", f"{{ {U} }}:1",
    f"{{{U.replace('-', '')}}}:1", f"{U[:13]}{U[14:]}:1", f"{U.replace('-', '')[:16]}-{U[19:]}:1",
    "1-2", "tag:1", ":1", "-1", ".", f"{U}:1:ANONYMOUS", f"+{U}:1", "ANONYMOUS",
]


def capture_golden(conn, seed: int = 20261122, generated: int = 120) -> list[dict]:
    """Records ``{"input", "canonical"}`` or ``{"input", "error"}`` for the curated inputs and
    for seeded generated ones (valid and corrupted)."""
    rng = random.Random(seed)
    inputs = list(CURATED)
    inputs += [random_gtid_text(rng) for _ in range(generated)]
    inputs += [random_invalid_text(rng) for _ in range(generated // 2)]
    records = []
    for text in inputs:
        canonical, error = server_canonical(conn, text)
        rec = {"input": text}
        if error is None:
            rec["canonical"] = canonical
        else:
            rec["error"] = error
        records.append(rec)
    return records


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


def test_algebra_matches_server_on_server_printed_text(conn):
    """On text exactly as the server prints it (the lazy, block-skipping fast path), including
    blocks that share long common runs and differ in their tails, every operation still equals
    the server's."""
    rng = random.Random(SEED + 2)
    seeds = _pairs(rng, 400) + _pairs(rng, 200, span=8, max_parts=12)
    pairs = []
    for u in ("3e11fa47-71ca-11e1-9e33-c80aa9429562", "0a0b0c0d-0000-4000-8000-00000000abcd"):
        for _ in range(4):
            common = ":".join(f"{i * 10 + 1}-{i * 10 + 5}" for i in range(1500))
            tail_a = ":".join(f"{15000 + i * 4 + 1}-{15000 + i * 4 + rng.randint(1, 3)}" for i in range(50))
            tail_b = ":".join(f"{15000 + i * 3 + 1}-{15000 + i * 3 + rng.randint(1, 2)}" for i in range(50))
            seeds.append((f"{u}:{common}:{tail_a},{u}:t:{common}", f"{u}:{common}:{tail_b},{u}:t:{common}:{tail_b}"))
    canon = server_pairs(conn, seeds)
    for want in canon:  # server-printed texts, and each against the server-printed union
        pairs.append((want["canon_a"], want["canon_b"]))
        pairs.append((want["canon_a"], want["union"]))
        pairs.append((want["inter"], want["canon_b"]))
    answers = server_pairs(conn, pairs)
    problems = _compare(pairs, answers)
    assert not problems, "\n".join(p[:500] for p in problems[:5])


def _scattered(rng: random.Random, n: int) -> tuple[str, str]:
    """Two long blocks of one UUID that share most intervals and differ at scattered places (a
    hole filled, an interval split, one dropped or added), as a replica and its source do."""
    ivs, pos = [], 1
    for _ in range(n):
        length = rng.randint(1, 40)
        ivs.append((pos, pos + length - 1))
        pos += length + rng.randint(1, 4)
    other = []
    for s, e in ivs:
        r = rng.random()
        if r < 0.05 and other:
            other[-1] = (other[-1][0], e)  # the hole before this interval filled
        elif r < 0.08 and e > s:
            mid = rng.randint(s, e - 1)
            other += [(s, mid), (mid + 2, e)] if mid + 2 <= e else [(s, mid)]  # a gno removed
        elif r < 0.10:
            continue  # dropped
        else:
            other.append((s, e))
    body = ":".join(f"{s}-{e}" if s != e else f"{s}" for s, e in ivs)
    other_body = ":".join(f"{s}-{e}" if s != e else f"{s}" for s, e in other)
    return body, other_body


def test_algebra_matches_server_on_scattered_differences(conn):
    """Long blocks differing at scattered places (the interval-text hashing shortcut, the check
    that a block's numbers increase, and the fallback when they do not) equal the server's
    answers, on server-printed text and on unsorted text with repeats."""
    rng = random.Random(SEED + 3)
    u, v = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "0a0b0c0d-0000-4000-8000-00000000abcd"
    pairs = []
    for _ in range(12):
        a, b = _scattered(rng, rng.choice([40, 300, 2000]))
        c, d = _scattered(rng, 60)
        pairs.append((f"{u}:{a},{v}:{c}", f"{u}:{b},{v}:{d}"))
        pairs.append((f"{u}:{a},{v}:t:{c}", f"{u}:{b},{v}:t:{d}:{c}"))
        # not increasing: the intervals of one block shuffled, or one repeated out of order
        shuffled = a.split(":")
        rng.shuffle(shuffled)
        pairs.append((f"{u}:{':'.join(shuffled)}", f"{u}:{b}"))
        pairs.append((f"{u}:{b}", f"{u}:{':'.join(shuffled)}"))
        pairs.append((f"{u}:{b}:{a.split(':')[3]}", f"{u}:{a}"))
    answers = server_pairs(conn, pairs)
    canon = [(w["canon_a"], w["canon_b"]) for w in answers]
    answers_canon = server_pairs(conn, canon)
    problems = _compare(pairs + canon, answers + answers_canon)
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


def main(argv=None) -> int:
    import mysql.connector

    ap = argparse.ArgumentParser(description="Capture tests/data/gtid_golden.json from a server")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", default="root")
    ap.add_argument("--out", type=Path, default=GOLDEN_PATH)
    args = ap.parse_args(argv)
    conn = mysql.connector.connect(host=args.host, port=args.port, user=args.user)
    cur = conn.cursor()
    cur.execute("SELECT @@version")
    version = cur.fetchone()[0]
    records = capture_golden(conn)
    conn.close()
    doc = {
        "server_version": version,
        "how": "SELECT GTID_SUBTRACT(input, '') on a real server; error = its message "
               "(ER_MALFORMED_GTID_SET_SPECIFICATION). Regenerate: python -m tests.core.test_gtid_set_mysql --port N",
        "cases": records,
    }
    args.out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(records)} cases from MySQL {version} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
