"""Algebra laws of GtidSet, checked with hypothesis on sets that share UUIDs and overlap.

The expected sides of these identities are built from other operations, never from the result
under test; the real server checks the operations themselves in test_gtid_set_mysql.py.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gtid_core.gtid_set import GtidSet
from tests.strategies import gtid_set_texts, gtid_sets, intervals

sets = gtid_sets()


@given(sets, sets)
def test_union_and_intersection_commute(a, b):
    """a | b == b | a and a & b == b & a."""
    assert a | b == b | a
    assert a & b == b & a


@given(sets, sets, sets)
def test_union_and_intersection_associate_and_distribute(a, b, c):
    """(a|b)|c == a|(b|c), (a&b)&c == a&(b&c), a&(b|c) == (a&b)|(a&c)."""
    assert (a | b) | c == a | (b | c)
    assert (a & b) & c == a & (b & c)
    assert a & (b | c) == (a & b) | (a & c)


@given(sets, sets)
def test_difference_laws(a, b):
    """a - b <= a, (a - b) & b is empty, (a - b) | (a & b) == a, a - b == a - (a & b)."""
    d = a - b
    assert d <= a
    assert not (d & b)
    assert (d | (a & b)) == a
    assert d == a - (a & b)


@given(sets, sets, sets)
def test_de_morgan_relative_to_a_universe(a, b, c):
    """c - (a | b) == (c - a) & (c - b) and c - (a & b) == (c - a) | (c - b)."""
    assert c - (a | b) == (c - a) & (c - b)
    assert c - (a & b) == (c - a) | (c - b)


@given(sets, sets)
def test_subset_agrees_with_union_and_difference(a, b):
    """a <= b exactly when a | b == b, when a - b is empty, and when a & b == a."""
    assert (a <= b) == (a | b == b) == (not (a - b)) == (a & b == a)
    assert (a < b) == (a <= b and a != b)
    assert a.is_intersection_nonempty(b) == bool(a & b)


@given(sets, sets)
def test_count_is_additive(a, b):
    """count(a | b) == count(a) + count(b) - count(a & b), and count(a - b) == count(a) - count(a & b)."""
    assert (a | b).count() == a.count() + b.count() - (a & b).count()
    assert (a - b).count() == a.count() - (a & b).count()


@given(st.lists(intervals(), max_size=12))
def test_count_and_membership_match_the_intervals(ivs):
    """Every gno of every input interval is a member, and count() is the size of the union of
    the intervals, computed here with a plain Python set."""
    s = GtidSet.from_intervals(ivs)
    members = {(u.lower(), t.lower() if t else None, g) for u, t, f, l in ivs for g in range(f, l + 1)}
    assert s.count() == len(members)
    for m in members:
        assert m in s


@given(sets)
def test_text_round_trips(s):
    """parse(str(s)) == s and parse(s.to_text(multiline=False)) == s."""
    assert GtidSet.parse(str(s)) == s
    assert GtidSet.parse(s.to_text(multiline=False)) == s


@given(gtid_set_texts())
@settings(max_examples=300)
def test_awkward_text_is_canonical_after_one_round(text):
    """Whatever spelling was parsed, str() is a fixed point, and iteration rebuilds the same set."""
    s = GtidSet.parse(text)
    assert str(GtidSet.parse(str(s))) == str(s)
    assert GtidSet.from_intervals(s) == s


@given(gtid_set_texts())
@settings(max_examples=300)
def test_fast_parser_agrees_with_reference_scanner(text):
    """The bulk fast path and the character-by-character reader give the same mapping."""
    from gtid_core._gtid_text import parse_text, scan

    assert parse_text(text) == scan(text)


@given(sets)
def test_restriction_partitions_the_set(s):
    """The union of for_uuid(u) over s.uuids() is s, and each piece has exactly one UUID."""
    pieces = [s.for_uuid(u) for u in s.uuids()]
    total = GtidSet.EMPTY
    for p in pieces:
        assert len(p.uuids()) == 1
        total = total | p
    assert total == s


@given(sets)
def test_untagged_and_tagged_partition_the_set(s):
    """untagged() and tagged() are disjoint, their union is s, and they hold exactly the untagged and the
    tagged intervals of s."""
    untagged, tagged = s.untagged(), s.tagged()
    assert untagged | tagged == s
    assert not untagged.is_intersection_nonempty(tagged)
    assert list(untagged) == [i for i in s if i[1] is None]
    assert list(tagged) == [i for i in s if i[1] is not None]


@given(st.randoms(use_true_random=False), st.booleans())
@settings(max_examples=400)
def test_bulk_parser_agrees_with_reference_scanner(rng, upper):
    """On the shape servers print (the bulk path), parse_text and the scanner agree, including
    repeated UUIDs, tags, unsorted/overlapping/reversed intervals and gnos near 2^63-2."""
    from gtid_core._gtid_text import parse_text, scan
    from tests.strategies import random_gtid_text

    text = random_gtid_text(rng, spelling=False)
    if upper:
        text = text.upper()
    assert parse_text(text) == scan(text)
