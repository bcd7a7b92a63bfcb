"""Hypothesis strategies and a seeded generator of GTID set texts, shared by the tests.

Two kinds of generators live here:

* hypothesis strategies (``gtid_sets()``, ``gtid_set_texts()``, ...) for the property tests;
* ``random_gtid_text(rng)``, a plain seeded generator for the differential test against a real
  server and for the golden file (hypothesis cannot batch thousands of cases into one query).

Both deliberately produce the awkward shapes: a small pool of UUIDs so that sets overlap, UUIDs
in upper/mixed case and in the 32-hex and ``{...}`` spellings, tags in mixed case, unsorted,
overlapping, adjacent and reversed intervals, repeated UUIDs, whitespace around tokens, empty
items between commas, and gnos near the 2^63-2 limit.
"""
from __future__ import annotations

import random

from hypothesis import strategies as st

from gtid_core.gtid_set import GtidSet

MAX_GNO = (1 << 63) - 2

#: A small pool so that generated sets share UUIDs (and so overlap), in byte order.
UUID_POOL = (
    "00000000-0000-0000-0000-000000000000",
    "00000000-0000-0000-0000-000000000001",
    "3e11fa47-71ca-11e1-9e33-c80aa9429562",
    "63d02e6c-9555-4d16-a8c3-e9d7590103b0",
    "8a94f357-aab4-11df-86ab-c80aa9429562",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
)
TAG_POOL = ("a", "b", "foo", "tag_1", "_", "z9", "aaaabbbbccccddddeeeeffffgggghhhh")
WHITESPACE = (" ", "\t", "\n", "\r", "\v", "\f")

# ---- hypothesis ------------------------------------------------------------------------

uuids = st.one_of(
    st.sampled_from(UUID_POOL),
    st.uuids().map(str),
)
tags = st.one_of(
    st.none(),
    st.sampled_from(TAG_POOL),
    st.builds(
        str.__add__,
        st.sampled_from("abcdefghijklmnopqrstuvwxyz_"),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", max_size=31),
    ),
)
small_gnos = st.integers(min_value=1, max_value=60)
gnos = st.one_of(
    small_gnos,
    st.integers(min_value=1, max_value=MAX_GNO),
    st.integers(min_value=MAX_GNO - 5, max_value=MAX_GNO),
)


@st.composite
def intervals(draw, gno=small_gnos):
    """One ``(uuid, tag, first, last)`` with ``first <= last``."""
    a = draw(gno)
    b = draw(gno)
    return (draw(uuids), draw(tags), min(a, b), max(a, b))


def gtid_sets(max_intervals: int = 12, gno=small_gnos):
    """GtidSet values built with ``from_intervals`` (small gnos by default, so sets overlap)."""
    return st.lists(intervals(gno), max_size=max_intervals).map(GtidSet.from_intervals)


def spell_uuid(uuid: str, style: int) -> str:
    """One of the spellings the server accepts for ``uuid`` (0..4)."""
    if style == 1:
        return uuid.upper()
    if style == 2:
        return "".join(c.upper() if i % 3 else c for i, c in enumerate(uuid))
    if style == 3:
        return uuid.replace("-", "")
    if style == 4:
        return "{" + uuid + "}"
    return uuid


def spell_tag(tag: str, style: int) -> str:
    return tag.upper() if style == 1 else tag.capitalize() if style == 2 else tag


@st.composite
def gtid_set_texts(draw):
    """Valid GTID set text in the awkward spellings the server accepts."""
    ws = st.text(alphabet="".join(WHITESPACE), max_size=2)
    items = []
    for _ in range(draw(st.integers(0, 5))):
        uuid = spell_uuid(draw(uuids), draw(st.integers(0, 4)))
        parts = [draw(ws) + uuid + draw(ws)]
        for _ in range(draw(st.integers(0, 4))):
            if draw(st.booleans()) and draw(st.booleans()):
                tag = draw(st.sampled_from(TAG_POOL))
                parts.append(draw(ws) + spell_tag(tag, draw(st.integers(0, 2))) + draw(ws))
            a = draw(gnos)
            if draw(st.booleans()):
                parts.append(f"{draw(ws)}{a}{draw(ws)}")
            else:
                b = draw(gnos)
                parts.append(f"{draw(ws)}{a}{draw(ws)}-{draw(ws)}{b}{draw(ws)}")
        items.append(":".join(parts))
        if draw(st.booleans()) and draw(st.booleans()):
            items.append(draw(ws))
    return ",".join(items)


# ---- seeded generator for the differential test and the golden file --------------------


def random_uuid(rng: random.Random, pool_bias: float = 0.7) -> str:
    if rng.random() < pool_bias:
        return rng.choice(UUID_POOL)
    return "%08x-%04x-%04x-%04x-%012x" % (
        rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16),
        rng.getrandbits(16), rng.getrandbits(48))


def random_gno(rng: random.Random, span: int) -> int:
    r = rng.random()
    if r < 0.03:
        return MAX_GNO - rng.randrange(3)
    if r < 0.05:
        return rng.randrange(1, MAX_GNO)
    return rng.randrange(1, span + 1)


def random_gtid_text(rng: random.Random, *, max_items: int = 6, max_parts: int = 8,
                     span: int = 40, spelling: bool = True, pool_bias: float = 0.7) -> str:
    """A valid GTID set text: overlapping/adjacent/reversed intervals, tags, case variants,
    repeated UUIDs, whitespace and empty items (when ``spelling``)."""
    items = []

    def ws() -> str:
        if not spelling or rng.random() < 0.8:
            return ""
        return "".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 2)))

    for _ in range(rng.randint(0, max_items)):
        uuid = random_uuid(rng, pool_bias)
        if spelling:
            uuid = spell_uuid(uuid, rng.choice((0, 0, 0, 1, 2, 3, 4)))
        parts = [ws() + uuid + ws()]
        for _ in range(rng.randint(0, max_parts)):
            if rng.random() < 0.15:
                tag = rng.choice(TAG_POOL)
                parts.append(ws() + (spell_tag(tag, rng.randrange(3)) if spelling else tag) + ws())
            a = random_gno(rng, span)
            r = rng.random()
            if r < 0.35:
                parts.append(f"{ws()}{a}{ws()}")
            elif r < 0.95:
                b = min(a + rng.randrange(span // 2 + 1), MAX_GNO)
                parts.append(f"{ws()}{a}{ws()}-{ws()}{b}{ws()}")
            else:  # reversed: the server drops it
                parts.append(f"{ws()}{a}-{a - 1 - rng.randrange(min(a, 3))}{ws()}")
        items.append(":".join(parts))
        if spelling and rng.random() < 0.05:
            items.append(ws())
    return ",".join(items)


def random_invalid_text(rng: random.Random) -> str:
    """A text derived from a valid one by one corruption the server should reject (or, for a
    few, accept: the server is the judge, the differential test records which)."""
    base = random_gtid_text(rng, max_items=3, max_parts=3, spelling=False) or (
        rng.choice(UUID_POOL) + ":1")
    corruptions = (
        lambda t: t + ":",
        lambda t: t + "-",
        lambda t: t + ";",
        lambda t: t + ":0",
        lambda t: t + ":-1",
        lambda t: t + f":{MAX_GNO + 1}",
        lambda t: t + f":1-{MAX_GNO + 1}",
        lambda t: t + "::1",
        lambda t: t + ":1-2-3",
        lambda t: t + ":" + "t" * 33 + ":1",
        lambda t: t + ":9tag:1",
        lambda t: t + ":ta-g:1",
        lambda t: t + ",x",
        lambda t: t + ",:1",
        lambda t: t + " 5",
        lambda t: t.replace("-", "", 1),
        lambda t: t[:-1] if len(t) > 1 else "g",
        lambda t: "{" + t,
        lambda t: t.replace(":", "", 1),
        lambda t: t + ":+1",
        lambda t: t + ":0x10",
        lambda t: t + ":1\u00a0",
        lambda t: t + ":\u0661",
    )
    return rng.choice(corruptions)(base)
