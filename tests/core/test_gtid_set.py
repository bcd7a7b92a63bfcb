"""GtidSet: parsing tables (valid and invalid text, expected values as a MySQL 9.7.4 server printed
them), the canonical text, and the API of the contract in docs/architecture.md."""
from __future__ import annotations

import pickle

import pytest

from gtid_core.errors import GtidParseError
from gtid_core.gtid_set import GtidSet

U = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
V = "8a94f357-aab4-11df-86ab-c80aa9429562"
Z = "00000000-0000-0000-0000-000000000000"
MAX = 9223372036854775806

VALID = [
    ("empty", "", ""),
    ("only-whitespace", " \t\n", ""),
    ("only-commas", "\r,, ,\t", ""),
    ("uuid-without-intervals-dropped", U, ""),
    ("tag-without-intervals-dropped", f"{U}:tag", ""),
    ("trailing-tag-dropped", f"{U}:1:tag", f"{U}:1"),
    ("last-tag-wins", f"{U}:a:b:1", f"{U}:b:1"),
    ("reversed-interval-dropped", f"{U}:5-3", ""),
    ("end-zero-dropped", f"{U}:5-0", ""),
    ("end-zeros-dropped", f"{U}:1-00", ""),
    ("merge-and-case", f"{U.upper()}:1-5:7:9-10,{U}:6", f"{U}:1-7:9-10"),
    ("tags-lowercased-untagged-first", f"{U}:Tag_1:1-5,{U}:1-2:TAG_1:7", f"{U}:1-2:tag_1:1-5:7"),
    ("leading-zeros-decimal", f"{U}:010", f"{U}:10"),
    ("many-leading-zeros", f"{U}:000000000000000000000000001", f"{U}:1"),
    ("thousands-of-leading-zeros", f"{U}:{'0' * 5000}5", f"{U}:5"),
    ("max-gno", f"{U}:{MAX}", f"{U}:{MAX}"),
    ("max-range", f"{U}:1-{MAX}", f"{U}:1-{MAX}"),
    ("whitespace-around-tokens", f"{U}: 1 - 5 : 7", f"{U}:1-5:7"),
    ("all-whitespace-kinds", f"\f\f\n{U}\t \t:\n1\r", f"{U}:1"),
    ("whitespace-before-colon", f"{U} :a :1", f"{U}:a:1"),
    ("underscore-tag", f"{U}:_:1", f"{U}:_:1"),
    ("tag-32-chars", f"{U}:{'a' * 32}:1", f"{U}:{'a' * 32}:1"),
    ("uuid-32-hex", f"{U.replace('-', '')}:1", f"{U}:1"),
    ("uuid-32-hex-upper", f"{U.upper().replace('-', '')}:1", f"{U}:1"),
    ("uuid-braces", f"{{{U}}}:1", f"{U}:1"),
    ("empty-items", f",,{U}:1,,,{U}:3,,", f"{U}:1:3"),
    ("repeated-uuid-without-intervals", f"{U}:1,{U}", f"{U}:1"),
    ("overlapping-unsorted", f"{Z}:1-100:50-200:150-300", f"{Z}:1-300"),
    ("descending-singles", f"{Z}:9:7:5:3:1", f"{Z}:1:3:5:7:9"),
    ("adjacent-merge", f"{Z}:80-100:50-59:60-79", f"{Z}:50-100"),
    ("uuid-order", f"{V}:1,{U}:2,{Z}:3", f"{Z}:3,\n{U}:2,\n{V}:1"),
    ("tag-byte-order", f"{U}:foo:1-100:bar:1-2000:a:1", f"{U}:a:1:bar:1-2000:foo:1-100"),
]

INVALID = [
    ("zero", f"{U}:0"),
    ("zero-start", f"{U}:0-5"),
    ("zeros", f"{U}:00"),
    ("gno-2^63-1", f"{U}:9223372036854775807"),
    ("end-2^63-1", f"{U}:1-9223372036854775807"),
    ("beyond-uint64", f"{U}:99999999999999999999999"),
    ("5000-digits", f"{U}:{'9' * 5000}"),
    ("5000-digit-end", f"{U}:1-{'9' * 5000}"),
    ("dangling-dash", f"{U}:1-"),
    ("dangling-colon", f"{U}:1:"),
    ("colon-only", f"{U}:"),
    ("double-colon", f"{U}::1"),
    ("double-colon-later", f"{U}:1-2::3"),
    ("semicolon", f"{U}:1;"),
    ("space-between-numbers", f"{U}:1 2"),
    ("letter-after-number", f"{U}:1a"),
    ("dash-after-tag", f"{U}:a-1"),
    ("negative", f"{U}:-1"),
    ("plus-sign", f"{U}:+5"),
    ("plus-end", f"{U}:1-+7"),
    ("double-dash", f"{U}:5--1"),
    ("hex-number", f"{U}:0x10"),
    ("tag-33-chars", f"{U}:{'a' * 33}:1"),
    ("tag-33-chars-at-end", f"{U}:1:{'a' * 33}"),
    ("tag-with-space", f"{U}:abc def:1"),
    ("tag-digit-first", f"{U}:9tag:1"),
    ("non-ascii-tag", f"{U}:ä:1"),
    ("non-ascii-space", f"{U}:1\u00a0"),
    ("nul", f"{U}:1\x00"),
    ("arabic-digit", f"{U}:\u0661"),
    ("colon-after-comma", f"{U}:1,:1"),
    ("garbage-item", f"{U}:1,x"),
    ("short-uuid", f"{U[:-1]}:1"),
    ("long-uuid", f"{U}3:1"),
    ("unopened-brace", f"{U}}}:1"),
    ("unclosed-brace", f"{{{U}:1"),
    ("spaces-in-braces", f"{{ {U} }}:1"),
    ("braces-without-dashes", f"{{{U.replace('-', '')}}}:1"),
    ("one-dash-missing", f"{U[:13]}{U[14:]}:1"),
    ("dash-in-32-hex", f"{U.replace('-', '')[:16]}-{U[19:]}:1"),
    ("no-uuid", "1-2"),
    ("tag-without-uuid", "tag:1"),
    ("leading-colon", ":1"),
    ("anonymous", "ANONYMOUS"),
    ("plus-prefix", f"+{U}:1"),
]


@pytest.mark.parametrize("text,canonical", [c[1:] for c in VALID], ids=[c[0] for c in VALID])
def test_parse_valid_prints_server_canonical_text(text, canonical):
    """Each accepted text prints as the MySQL 9.7.4 server printed it (GTID_SUBTRACT(x, ''))."""
    assert str(GtidSet.parse(text)) == canonical


@pytest.mark.parametrize("text", [c[1] for c in INVALID], ids=[c[0] for c in INVALID])
def test_parse_invalid_raises_and_quotes_text(text):
    """Each text the server rejects (error 1772) raises GtidParseError quoting it (its first 200
    characters when longer) and the offset; the whole text is kept on the exception."""
    with pytest.raises(GtidParseError) as info:
        GtidSet.parse(text)
    message = str(info.value)
    assert repr(text[:200]) in message
    assert info.value.text == text
    assert f"at offset {info.value.offset}" in message
    assert 0 <= info.value.offset <= len(text)


def test_error_offset_points_at_the_offending_token():
    """The offset is where parsing stopped: at the 0 of ':0', after the dash of '1-'."""
    with pytest.raises(GtidParseError) as info:
        GtidSet.parse(f"{U}:1-2:0")
    assert info.value.offset == len(U) + 5
    with pytest.raises(GtidParseError) as info:
        GtidSet.parse(f"{U}:1-")
    assert info.value.offset == len(U) + 3


def test_parse_rejects_non_text_with_type_error():
    """parse() of a non-string raises TypeError naming the value; bytes are decoded as UTF-8."""
    with pytest.raises(TypeError, match="42"):
        GtidSet.parse(42)
    assert str(GtidSet.parse(f"{U}:1".encode())) == f"{U}:1"
    with pytest.raises(GtidParseError):
        GtidSet.parse(b"\xff")


def test_multiline_and_single_line_text():
    """str() joins UUID blocks with ',\\n' as the server does; to_text(multiline=False) with ','."""
    s = GtidSet.parse(f"{V}:1-3,{U}:t:5")
    assert str(s) == f"{U}:t:5,\n{V}:1-3"
    assert s.to_text() == str(s)
    assert s.to_text(multiline=False) == f"{U}:t:5,{V}:1-3"
    assert repr(s) == f"GtidSet('{U}:t:5,{V}:1-3')"


def test_empty_set():
    """EMPTY is falsy, prints '', counts 0, and equals the parse of whitespace and commas."""
    assert not GtidSet.EMPTY
    assert str(GtidSet.EMPTY) == ""
    assert GtidSet.EMPTY.count() == 0
    assert GtidSet.parse(" , ") == GtidSet.EMPTY
    assert GtidSet() == GtidSet.EMPTY


def test_equality_and_hash_mean_same_set():
    """Differently spelled texts of one set are equal and hash alike; a tag makes a GTID distinct."""
    a = GtidSet.parse(f"{U}:1-3:5,{U.upper()}:4")
    b = GtidSet.parse(f"{U.replace('-', '')}:5:1-2:3-4")
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert GtidSet.parse(f"{U}:1") != GtidSet.parse(f"{U}:t:1")
    assert a != f"{U}:1-5"


def test_values_are_immutable_and_pickle():
    """Attributes cannot be set; a pickled set comes back equal (Spark ships values around)."""
    s = GtidSet.parse(f"{U}:1-5:t:7")
    with pytest.raises(AttributeError):
        s._map = {}
    assert pickle.loads(pickle.dumps(s)) == s


def test_operators_on_a_worked_example():
    """|, &, -, <=, <, >=, > on a hand-computed example with two UUIDs and a tag."""
    a = GtidSet.parse(f"{U}:1-10:20-30,{V}:1-5,{U}:t:1-3")
    b = GtidSet.parse(f"{U}:5-25,{U}:t:3-4")
    assert str(a | b) == f"{U}:1-30:t:1-4,\n{V}:1-5"
    assert str(a & b) == f"{U}:5-10:20-25:t:3"
    assert str(a - b) == f"{U}:1-4:26-30:t:1-2,\n{V}:1-5"
    assert str(b - a) == f"{U}:11-19:t:4"
    assert not a <= b and not b <= a
    assert (a & b) <= a and (a & b) < a and a >= (a & b) and a > (a & b)
    assert a <= a and not a < a
    assert a.add_gtid_set(b) == a | b and a.remove_gtid_set(b) == a - b
    assert a.is_subset(a | b) and not a.is_subset(b)
    assert a.is_intersection_nonempty(b)
    assert not a.is_intersection_nonempty(GtidSet.parse(f"{U}:11-19"))


def test_count_is_exact_beyond_64_bits():
    """count() is an exact int, also past 2^64 (three full UUIDs of 2^63-2 gnos)."""
    s = GtidSet.parse(",".join(f"{u}:1-{MAX}" for u in (U, V, Z)))
    assert s.count() == 3 * MAX
    assert GtidSet.parse(f"{U}:1-3:7:t:1").count() == 5


def test_membership_of_one_gtid():
    """'uuid:gno', 'uuid:tag:gno' and (uuid, tag, gno) are members exactly when in an interval."""
    s = GtidSet.parse(f"{U}:1-3:7:Tag:5")
    assert f"{U}:2" in s and f"{U.upper()}:7" in s and f"{U}:TAG:5" in s
    assert f"{U}:4" not in s and f"{U}:tag:2" not in s and f"{V}:1" not in s
    assert (U, None, 3) in s and (U, "tag", 5) in s and (U, None, 5) not in s
    with pytest.raises(GtidParseError, match="'nope'"):
        "nope" in s
    with pytest.raises(GtidParseError):
        f"{U}:0" in s


def test_iteration_yields_canonical_intervals():
    """Iteration yields (uuid, tag, first, last) in server order, tag None when untagged."""
    s = GtidSet.parse(f"{V}:9,{U}:b:2,{U}:7-8:1-3,{U}:a:4")
    assert list(s) == [
        (U, None, 1, 3), (U, None, 7, 8), (U, "a", 4, 4), (U, "b", 2, 2), (V, None, 9, 9)]


def test_uuids_restriction_and_max_gno():
    """uuids(), for_uuid() (any spelling, all tags) and max_gno() per uuid and tag."""
    s = GtidSet.parse(f"{V}:9,{U}:b:2,{U}:7-8:1-3")
    assert s.uuids() == frozenset({U, V})
    assert str(s.for_uuid(U.upper().replace("-", ""))) == f"{U}:1-3:7-8:b:2"
    assert s.for_uuid(Z) == GtidSet.EMPTY
    assert s.max_gno(U) == 8 and s.max_gno(U, "B") == 2 and s.max_gno(U, "c") is None
    assert s.max_gno(Z) is None
    with pytest.raises(GtidParseError):
        s.for_uuid("not-a-uuid")


def test_untagged_and_tagged():
    """untagged() keeps uuid:gno only (what an 8.3+ replica sends a source older than 8.3), tagged() the rest."""
    s = GtidSet.parse(f"{V}:9,{U}:b:2,{U}:7-8:1-3,{V}:A:1")
    assert str(s.untagged()) == f"{U}:1-3:7-8,\n{V}:9"
    assert str(s.tagged()) == f"{U}:b:2,\n{V}:a:1"
    plain = GtidSet.parse(f"{U}:1-3")
    assert plain.untagged() == plain and plain.tagged() == GtidSet.EMPTY
    assert GtidSet.EMPTY.untagged() == GtidSet.EMPTY == GtidSet.EMPTY.tagged()


def test_from_intervals_normalises_and_validates():
    """from_intervals merges, sorts and lowercases; it rejects bad uuids, tags and gnos by name."""
    s = GtidSet.from_intervals([(U.upper(), "T", 4, 6), (U, None, 1, 3), (U, "t", 1, 2)])
    assert str(s) == f"{U}:1-3:t:1-2:4-6"
    for bad in [("x", None, 1, 1), (U, "9t", 1, 1), (U, None, 0, 1), (U, None, 1, MAX + 1),
                (U, None, 5, 4), (U, None, 1.0, 2), (U, None, 1)]:
        with pytest.raises(GtidParseError, match="in|expected|ends"):
            GtidSet.from_intervals([bad])


def test_operations_return_new_values_and_leave_operands_alone():
    """Every operation returns a value; the operands print the same afterwards."""
    a = GtidSet.parse(f"{U}:1-10")
    b = GtidSet.parse(f"{U}:5-15")
    before = (str(a), str(b))
    _ = (a | b, a & b, a - b, b - a)
    assert (str(a), str(b)) == before


@pytest.mark.parametrize("a,b,expected", [
    ("1-10:20-30", "20-25", "1-10:26-30"),
    ("1-10:20-30", "5-25", "1-4:26-30"),
    ("1-10:20-30", "10-20", "1-9:21-30"),
    ("1-10:20-30", "11-19", "1-10:20-30"),
    ("1-10:20-30", "1-30", ""),
    ("1-10:20-30:40", "30-40", "1-10:20-29"),
    ("1-10", "3-4", "1-2:5-10"),
    ("1-10", "1-10", ""),
    ("5", "5", ""),
], ids=["exact-start", "across-gap", "end-to-start", "inside-gap", "all", "last-ones",
        "middle", "equal", "single"])
def test_difference_by_one_interval(a, b, expected):
    """Removing one interval (the shortcut path) from one or several intervals, edges included."""
    got = GtidSet.parse(f"{U}:{a}") - GtidSet.parse(f"{U}:{b}")
    assert str(got) == (f"{U}:{expected}" if expected else "")
