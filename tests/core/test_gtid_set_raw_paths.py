"""The unconverted-text paths of GtidSet (``parse_raw``, ``-`` and ``<=`` on raw blocks, common-run
shortcuts) give exactly what the converting reader gives, on canonical and non-canonical text.

The reference is ``scan`` (the character-by-character reader, itself checked against a real server
by the golden and differential tests) fed into ``from_intervals``, which never takes a raw path.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtid_core._gtid_text import parse_raw, parse_text, scan
from gtid_core._intervals import difference
from gtid_core.gtid_set import GtidSet

UUIDS = ("3e11fa47-71ca-11e1-9e33-c80aa9429562", "8a94f357-aab4-11df-86ab-c80aa9429562")
TAGS = ("", "foo", "tag_1")
U = UUIDS[0]


def reference(text: str) -> GtidSet:
    """The set of ``text`` built without any raw path: scan(), then from_intervals()."""
    rows = []
    for (uuid, tag), flat in scan(text).items():
        for i in range(0, len(flat), 2):
            rows.append((uuid, tag or None, flat[i], flat[i + 1] - 1))
    return GtidSet.from_intervals(rows)


def write(blocks: list[tuple[str, str, list[tuple[int, int]]]], sep: str) -> str:
    """Text of ``(uuid, tag, [(first, last), ...])`` blocks in the given order (repeats kept)."""
    items = []
    for uuid, tag, ivs in blocks:
        if not ivs:
            continue
        body = ":".join(str(s) if s == e else f"{s}-{e}" for s, e in ivs)
        items.append(f"{uuid}:{tag}:{body}" if tag else f"{uuid}:{body}")
    return sep.join(items)


gno = st.integers(min_value=1, max_value=10**6)
interval = st.tuples(gno, gno)  # may be reversed: the server drops it
# At least 25 intervals of up to 7-digit gnos: blocks long enough (>= 256 characters) for the
# common-run shortcut, with tails that overlap the common run.
long_run = st.lists(interval, min_size=25, max_size=60)


@st.composite
def text_pairs(draw):
    """Two texts sharing long common runs per (uuid, tag), then different tails; sometimes sorted
    and merged (canonical), sometimes with repeats, overlaps and reversed intervals."""
    canonical = draw(st.booleans())
    a_blocks, b_blocks = [], []
    for uuid in UUIDS:
        for tag in TAGS:
            kind = draw(st.sampled_from(["same", "tails", "only_a", "only_b", "none"]))
            common = draw(long_run)
            if canonical:
                common = sorted({(min(s, e), max(s, e)) for s, e in common})
            tail_a = draw(st.lists(interval, max_size=4))
            tail_b = draw(st.lists(interval, max_size=4))
            if kind == "same":
                a_blocks.append((uuid, tag, common))
                b_blocks.append((uuid, tag, common))
            elif kind == "tails":
                a_blocks.append((uuid, tag, common + tail_a))
                b_blocks.append((uuid, tag, common + tail_b))
            elif kind == "only_a":
                a_blocks.append((uuid, tag, common + tail_a))
            elif kind == "only_b":
                b_blocks.append((uuid, tag, common + tail_b))
    if canonical:
        a = str(reference(write(a_blocks, ",")))
        b = str(reference(write(b_blocks, ",")))
    else:
        sep = draw(st.sampled_from([",", ",\n"]))
        a = write(draw(st.permutations(a_blocks)), sep)
        b = write(draw(st.permutations(b_blocks)), sep)
    return a, b


@settings(max_examples=300, deadline=None)
@given(text_pairs())
def test_raw_difference_and_subset_equal_the_converting_path(pair):
    """parse(a) - parse(b) and parse(a) <= parse(b) on raw blocks equal the reference, both ways."""
    a, b = pair
    ra, rb = reference(a), reference(b)
    pa, pb = GtidSet.parse(a), GtidSet.parse(b)
    assert (pa._raw is not None or not a) and (pb._raw is not None or not b)  # the raw path ran
    assert str(pa - pb) == str(ra - rb)
    assert str(pb - pa) == str(rb - ra)
    assert (pa <= pb) == (ra <= rb)
    assert (pb <= pa) == (rb <= ra)
    assert pa == ra and str(pa) == str(ra)


@st.composite
def scattered_pairs(draw):
    """Two blocks per UUID that share most intervals and differ at scattered places (filled
    holes, split, dropped or added intervals), long enough (>= 256 characters) for the
    interval-text hashing shortcut; sometimes one side is shuffled or repeats an interval, so its
    numbers no longer increase."""
    a_parts, b_parts = [], []
    for uuid in UUIDS:
        gaps = draw(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 3)), min_size=30,
                             max_size=80))
        ivs, pos = [], 1
        for length, gap in gaps:
            ivs.append((pos, pos + length - 1))
            pos += length + gap
        ops = draw(st.lists(st.sampled_from(["keep"] * 8 + ["fill", "split", "drop", "one"]),
                            min_size=len(ivs), max_size=len(ivs)))
        other = []
        for (s, e), op in zip(ivs, ops):
            if op == "fill" and other:
                other[-1] = (other[-1][0], e)
            elif op == "split" and e - s >= 2:
                other += [(s, s), (s + 2, e)]
            elif op == "one":
                other.append((s, s))
            elif op != "drop":
                other.append((s, e))
        mess = draw(st.sampled_from(["none", "shuffle_a", "shuffle_b", "repeat_a", "repeat_b"]))
        if mess == "shuffle_a":
            ivs = draw(st.permutations(ivs))
        elif mess == "shuffle_b":
            other = draw(st.permutations(other))
        elif mess == "repeat_a":
            ivs = ivs + [ivs[draw(st.integers(0, len(ivs) - 1))]]
        elif mess == "repeat_b" and other:
            other = other + [other[0]]
        a_parts.append((uuid, "", ivs))
        b_parts.append((uuid, "", other))
    return write(a_parts, ",\n"), write(b_parts, ",\n")


@settings(max_examples=300, deadline=None)
@given(scattered_pairs())
def test_raw_shortcuts_on_scattered_differences_equal_the_converting_path(pair):
    """Blocks differing at scattered places (interval-text hashing, the increasing-numbers test
    and its fallback) give the reference's difference and subset answers, both ways."""
    a, b = pair
    ra, rb = reference(a), reference(b)
    pa, pb = GtidSet.parse(a), GtidSet.parse(b)
    assert pa._raw is not None and pb._raw is not None
    assert str(pa - pb) == str(ra - rb)
    assert str(pb - pa) == str(rb - ra)
    assert (pa <= pb) == (ra <= rb)
    assert (pb <= pa) == (rb <= ra)


@pytest.mark.parametrize("x", ["5-9", "7", "9-5", "1-3", "10-20", "8-8"])
@pytest.mark.parametrize("y", ["5-9", "6", "9-5", "4-7", "8-12", "1-100"])
def test_one_interval_blocks_equal_the_converting_path(x, y):
    """Blocks of one interval each (subtracted arithmetically), reversed ones included."""
    a, b = f"{U}:{x}", f"{U}:{y}"
    ra, rb = reference(a), reference(b)
    pa, pb = GtidSet.parse(a), GtidSet.parse(b)
    assert str(pa - pb) == str(ra - rb)
    assert (pa <= pb) == (ra <= rb)


@settings(max_examples=200, deadline=None)
@given(text_pairs())
def test_raw_and_converted_operands_mix(pair):
    """An operation between a raw set and a converted one equals the reference."""
    a, b = pair
    ra, rb = reference(a), reference(b)
    pa = GtidSet.parse(a)
    assert pa - rb == ra - rb
    assert rb - pa == rb - ra
    assert (pa <= rb) == (ra <= rb)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=4),
    st.lists(st.integers(min_value=1, max_value=200), min_size=20, max_size=120),
)
def test_difference_of_few_intervals_against_many(a_gnos, b_gnos):
    """_intervals.difference with a much smaller minuend (the binary-search branch) is exact."""

    def flat(gnos):
        out = []
        for g in sorted(set(gnos)):
            if out and out[-1] == g:
                out[-1] = g + 1
            else:
                out += [g, g + 1]
        return tuple(out)

    a, b = flat(a_gnos), flat(b_gnos)
    assert flat(set(a_gnos) - set(b_gnos)) == difference(a, b)


@pytest.mark.parametrize(
    "text, raw",
    [
        (f"{U}:1-123456789012345678", True),  # 18 digits: certainly in range
        (f"{U}:1-1234567890123456789", False),  # 19 digits: converted and range-checked
        (f"{U}:9223372036854775806", False),  # MAX_GNO itself
        (f"{U}:01-5", False),  # leading zero
        (f"{U}:5-0", False),  # an end of 0 (valid, empty)
        (f"{U}:5-3:7", True),  # reversed interval: valid, dropped on conversion
        (f"{U}:1-5,\n{U}:3-9", True),  # repeated UUID: blocks joined
        (f"{U}:a1234567890123456789:5", True),  # digits inside a tag are not a number
        (f" {U}:1", False),  # whitespace: not the shape servers print
        (f"{U}:1-5,", True),  # a trailing comma: valid, nothing after it
        (f"{U}:1-5,,{U}:7", True),  # an empty item: valid, nothing in it
        (f"{U}:1-5,\n\n{U}:7", True),  # whitespace after a comma: valid
        (f"{U}:1-5\n,{U}:7", False),  # whitespace before a comma: valid, the general path
        (f"{U},{U}:7", True),  # a UUID without intervals: ignored
        (f"{U.upper()}:1-5:TAG:3", True),  # upper case: lowered
    ],
    ids=["18-digits", "19-digits", "max-gno", "leading-zero", "end-0", "reversed", "repeated",
         "digits-in-tag", "whitespace", "trailing-comma", "empty-item", "newlines",
         "newline-before-comma", "uuid-alone",
         "upper-case"],
)
def test_parse_raw_takes_only_text_it_can_leave_unconverted(text, raw):
    """parse_raw accepts exactly the texts whose numbers need no range check, and the set equals
    the converting parser's."""
    assert (parse_raw(text) is not None) is raw
    assert GtidSet.parse(text) == reference(text)
    assert GtidSet.parse(text)._map == parse_text(text)


@pytest.mark.parametrize(
    "text",
    [f"{U}:0", f"{U}:1-9223372036854775807", f"{U}:1-", f"{U}:1::2", f"{U}:1-5,x,{U}:7",
     f"{U}:1-5;{U}:7", f"{U}:1-2-3", f"{U}:\u212a:5", f"{U}:1-5\n\n{U}:7"],
    ids=["start-0", "end-too-big", "missing-end", "empty-interval", "garbage-item",
         "semicolon", "two-dashes", "kelvin-sign-tag", "newline-without-comma"],
)
def test_raw_path_never_swallows_an_error(text):
    """Text the server rejects is rejected by parse, raw path or not."""
    assert parse_raw(text) is None
    with pytest.raises(ValueError):
        GtidSet.parse(text)


_PALETTE = ",:-\n0123456789abcfz_ \u212a"


@settings(max_examples=1500, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(0, 3))
def test_both_raw_readers_agree_with_the_scanner(rng, edits):
    """parse_raw has two readers (item by item for text without tags; token by token for text
    with tags, chosen at once when the first item shows one). Whatever either accepts, valid text in the printed shape or the same text with a few
    characters inserted, deleted or replaced, denotes exactly the set the reference scanner reads,
    and text the scanner rejects is accepted by neither."""
    import gtid_core._gtid_text as gt
    from tests.strategies import random_gtid_text

    text = random_gtid_text(rng, spelling=False)
    if rng.random() < 0.3:
        text = text.replace(",", ",\n")
    for _ in range(edits):
        i = rng.randrange(len(text) + 1)
        c = rng.choice(_PALETTE)
        op = rng.randrange(3)
        text = (text[:i] + c + text[i:] if op == 0 else text[:i] + text[i + 1:] if op == 1
                else text[:i] + c + text[i + 1:])
    try:
        want = reference(text)
    except ValueError:
        want = None
    saved = gt._TAG_LOOKAHEAD
    try:
        gt._TAG_LOOKAHEAD = 0  # never look for tags: the item reader
        by_items = parse_raw(text)
    finally:
        gt._TAG_LOOKAHEAD = saved
    by_tokens = gt._parse_raw_tokens(text.lower()) if text.isascii() else None
    for raw in (by_items, by_tokens):
        if raw is None:
            continue
        assert want is not None, f"a raw reader accepted {text!r}, which the server rejects"
        assert GtidSet._new(None, raw=raw) == want
