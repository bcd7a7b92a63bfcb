"""GTID set text: the grammar MySQL 9.7 accepts, and the canonical text it prints.

The grammar below is the one of the server's text decoder (``libs/mysql/gtids/strconv/
gtid_text_format_conv.h`` with the interval reader of ``libs/mysql/sets/strconv/decode.h``), checked
case by case against a real 9.7.4 server (``tests/data/gtid_golden.json``). Whitespace
(``[ \\t\\n\\v\\f\\r]``) may appear before and after every token::

    TEXT     := ","* (UUID_SET (","+ UUID_SET)*)? ","*
    UUID_SET := UUID (":" (TAG | INTERVAL))*
    UUID     := 8-4-4-4-12 hex digits | 32 hex digits | "{" 8-4-4-4-12 hex digits "}"
    TAG      := [A-Za-z_][A-Za-z0-9_]{0,31}          (lowercased; applies to the intervals after it)
    INTERVAL := NUMBER ("-" NUMBER)?                  (decimal, leading zeros allowed)

Values: an interval start must be 1 .. 2^63-2; an end must be 0 .. 2^63-2; an interval whose end
is below its start is dropped silently, as is a UUID or tag with no interval after it. Everything
else is rejected (``ER_MALFORMED_GTID_SET_SPECIFICATION``).

Parsing has three paths that accept exactly the same texts (a property test checks it), and
:func:`parse_raw` in front of them, which validates the shape servers print without converting a
number (when every number has at most 18 digits and no leading zero, hence is in range) and keeps
each block's interval text for :class:`~gtid_core.gtid_set.GtidSet` to convert on demand with
:func:`convert_blocks`:

* ``_parse_bulk`` for the shape servers print (dashed UUIDs, no whitespace but the newline after
  a comma): one compiled regular expression validates the whole text, every number of the text is
  converted by one call of the C JSON scanner, and the order checks are C-level ``map`` passes;
* the general path for the other spellings (whitespace, 32-hex and braced UUIDs, leading zeros):
  the full-grammar regular expression, then ``str.split`` and ``int``;
* :func:`scan`, a character-by-character reader used when the text is malformed, to say where
  parsing stopped and why.

Private module: the public API is :class:`gtid_core.gtid_set.GtidSet`.
"""
from __future__ import annotations

import json
import re
from bisect import bisect_right
from itertools import accumulate, chain, compress, islice, repeat
from operator import ge, gt, itemgetter, lt

from gtid_core._intervals import format_intervals, normalize, union
from gtid_core.errors import GtidParseError

__all__ = [
    "MAX_GNO",
    "parse_text",
    "parse_raw",
    "convert_blocks",
    "increasing",
    "scan",
    "normalize_uuid",
    "normalize_tag",
    "format_set",
]

#: Largest gno the server accepts (``GNO_END - 1`` = 2^63 - 2).
MAX_GNO = (1 << 63) - 2
MAX_TAG_LENGTH = 32
_inc = (1).__add__

_WS = " \t\n\v\f\r"
_W = r"[ \t\n\v\f\r]*+"
_H = "[0-9A-Fa-f]"
_DASHED = rf"{_H}{{8}}-{_H}{{4}}-{_H}{{4}}-{_H}{{4}}-{_H}{{12}}"
_UUID = rf"(?:{_DASHED}|{_H}{{32}}|\{{{_DASHED}\}})"
_TAG = r"[A-Za-z_][A-Za-z0-9_]{0,31}+(?![A-Za-z0-9_])"
_INTERVAL = rf"[0-9]++(?:{_W}-{_W}[0-9]++)?+"
_UUID_SET = rf"{_UUID}(?:{_W}:{_W}(?:{_TAG}|{_INTERVAL}))*+"
_SEPS = r"[ \t\n\v\f\r,]*+"
_TEXT_RE = re.compile(rf"{_SEPS}(?:{_UUID_SET}(?:{_W},{_SEPS}{_UUID_SET})*+)?{_SEPS}")
# The shape servers print (dashed UUIDs, no whitespace but a newline after a comma, no empty
# items): parsed in bulk by _parse_bulk.
_BULK_ELEMENT = rf"(?::(?:{_TAG}|[0-9]++(?:-[0-9]++)?+))*+"
_BULK_RE = re.compile(rf"{_DASHED}{_BULK_ELEMENT}(?:,\n?{_DASHED}{_BULK_ELEMENT})*+")
# The same shape with every number in 1 .. 10^18-1 written without leading zeros: parse_raw
# accepts it without converting numbers (certainly in range, certainly JSON numbers). A 19th
# digit needs no look-ahead: the grammar allows only "-", ":", "," or the end after a number.
# parse_raw reads the text item by item with one findall: per item the UUID, an empty group (so
# that items 0-1 are the (uuid, "") key), the untagged intervals, the tagged rest; then the
# separator. Runs of intervals are one tight loop, tags come between runs. findall skips what no
# item matches, so parse_raw checks that the lengths add up: every character of an accepted text
# is inside an item except commas and newlines (empty items and whitespace, valid for the server).
_RAW_NUMBER = r"[1-9][0-9]{0,17}+"
_RAW_INTERVAL = rf"{_RAW_NUMBER}(?:-{_RAW_NUMBER})?+"
_RAW_ITEM_RE = re.compile(
    rf"({_DASHED})()(?::({_RAW_INTERVAL}(?::{_RAW_INTERVAL})*+))?+"
    rf"((?::{_TAG}(?::{_RAW_INTERVAL})*+)*+)(?:,\n?|\Z)")
# Text with tags is read token by token instead: a UUID (only at the start of the text or after
# "," or ",\n") with its untagged intervals, or ":tag" (only right after a UUID, a number or
# another tag) with its intervals. findall then yields every block directly; the same length
# check proves nothing else was skipped.
_RAW_TOKEN_RE = re.compile(
    rf"(?:(?<![^,])|(?<=,\n))({_DASHED})(?::({_RAW_INTERVAL}(?::{_RAW_INTERVAL})*+))?+"
    rf"|(?<=[0-9a-z_]):({_TAG})(?::({_RAW_INTERVAL}(?::{_RAW_INTERVAL})*+))?+")
#: How far into the first item parse_raw looks for a tag to go straight to the token reader
#: (sparing the item reader's pass over text that has tags).
_TAG_LOOKAHEAD = 4096
_ITEM_KEY = itemgetter(0, 1)
_ITEM_INTERVALS = itemgetter(2)
_ITEM_TAGGED = itemgetter(3)
_ITEM_TAGGED_KEY = itemgetter(1)  # the tag of a (uuid, tag) key
_BULK_TAGGED_RE = re.compile(r":[a-z_]")
_BULK_TAG_SPLIT_RE = re.compile(r":([a-z_][a-z0-9_]*)(?=:|$)")
_scan_json = json.JSONDecoder().scan_once  # the C scanner, without decode()'s whitespace regexes
_TAG_START_RE = re.compile(r"[A-Za-z_]")
_UUID_RE = re.compile(_UUID)
_TAG_FULL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")

_HEXDIGITS = frozenset("0123456789abcdefABCDEF")
_TAG_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_TAG_CHARS = _TAG_FIRST | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
_MAX_QUOTE = 200


def normalize_uuid(text: str) -> str | None:
    """Lowercase 8-4-4-4-12 form of one UUID in any spelling the server accepts, else None."""
    if _UUID_RE.fullmatch(text) is None:
        return None
    return _uuid_canonical(text)


def _uuid_canonical(u: str) -> str:
    n = len(u)
    if n == 36:
        return u.lower()
    if n == 32:
        u = u.lower()
        return f"{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"
    return u[1:37].lower()


def normalize_tag(text: str) -> str | None:
    """Lowercase tag if ``text`` is a valid tag (``[A-Za-z_][A-Za-z0-9_]{0,31}``), else None."""
    if _TAG_FULL_RE.fullmatch(text) is None:
        return None
    return text.lower()


def _quote(text: str) -> str:
    if len(text) <= _MAX_QUOTE:
        return repr(text)
    return repr(text[:_MAX_QUOTE]) + f"... ({len(text)} characters)"


def _error(text: str, pos: int, reason: str) -> GtidParseError:
    here = text[pos:pos + 24]
    where = f"at offset {pos}, before {here!r}" if here else f"at offset {pos}, at the end"
    err = GtidParseError(
        f"malformed GTID set {_quote(text)}: {reason} {where} "
        "(the server rejects it with ER_MALFORMED_GTID_SET_SPECIFICATION)")
    err.text = text
    err.offset = pos
    return err


def _add(groups: dict, key: tuple, starts: list[int], lasts: list[int]) -> None:
    g = groups.get(key)
    if g is None:
        groups[key] = (starts, lasts)  # may be the same list (all singletons): copied below
    else:
        if g[0] is g[1]:
            g = groups[key] = (g[0], list(g[1]))
        g[0].extend(starts)
        g[1].extend(lasts)


def _untagged_block(rest: str) -> tuple[list[int], list[int]]:
    """Starts and inclusive lasts of ``1-5:7:9-10`` (already validated, whitespace allowed)."""
    parts = rest.split(":")
    if "-" not in rest:
        starts = list(map(int, parts))
        return starts, starts
    if rest.count("-") == len(parts):
        nums = list(map(int, rest.replace("-", ":").split(":")))
        return nums[0::2], nums[1::2]
    starts = []
    lasts = []
    for p in parts:
        s, dash, last = p.partition("-")
        s = int(s)
        starts.append(s)
        lasts.append(int(last) if dash else s)
    return starts, lasts


def parse_text(text: str) -> dict:
    """Parse GTID set text into ``{(uuid, tag): canonical flat list}`` (tag '' when untagged).

    Raises :class:`GtidParseError` for any text the server rejects.
    """
    if not text:
        return {}
    out = _parse_bulk(text)
    if out is not None:
        return out
    if _TEXT_RE.fullmatch(text) is None:
        return scan(text)  # raises with the position, or parses if the fast path was too strict
    try:
        groups = _group_general(text)
    except ValueError:  # a number int() refuses (thousands of digits): out of range anyway
        return scan(text)
    out = {}
    for key, (starts, lasts) in groups.items():
        if not starts:
            continue
        if min(starts) < 1 or max(starts) > MAX_GNO or max(lasts) > MAX_GNO:
            return scan(text)  # raises, naming the out-of-range number
        flat = normalize(starts, lasts)
        if flat:
            out[key] = tuple(flat)
    return out


def _group_general(text: str) -> dict:
    """Starts and lasts per (uuid, tag) of text already validated by ``_TEXT_RE``."""
    groups: dict = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        u, sep, rest = item.partition(":")
        uuid = _uuid_canonical(u.rstrip())
        if not sep:
            continue
        if _TAG_START_RE.search(rest) is None:
            starts, lasts = _untagged_block(rest)
            _add(groups, (uuid, ""), starts, lasts)
            continue
        tag = ""
        pending: list[str] = []
        for p in rest.split(":"):
            p = p.strip()
            if p[0] in _TAG_FIRST:
                if pending:
                    _add(groups, (uuid, tag), *_untagged_block(":".join(pending)))
                    pending = []
                tag = p.lower()
            else:
                pending.append(p)
        if pending:
            _add(groups, (uuid, tag), *_untagged_block(":".join(pending)))
    return groups


def _parse_bulk(text: str) -> dict | None:
    """Parse the shape servers print, with every number of the whole text converted in one
    ``json`` call and every check done by C-level passes over flat lists; None when the text has
    another shape (or a number the checks must reject: the general path then says where)."""
    if _BULK_RE.fullmatch(text) is None:
        return None
    keys, rests = _split_blocks(text)
    return convert_blocks(keys, rests)


def _split_blocks(text: str) -> tuple[list, list[str]]:
    """``(uuid, tag)`` keys and the interval text of each block (``"1-5:7"``) of text already
    matched by ``_BULK_RE``, lowercased, in text order (a key may repeat)."""
    t = text.lower()
    if "\n" in t:
        t = t.replace(",\n", ",")
    items = t.split(",")
    if _BULK_TAGGED_RE.search(t) is None:
        items = [it for it in items if len(it) > 37]
        return list(zip([it[:36] for it in items], repeat(""))), [it[37:] for it in items]
    keys = []
    rests = []
    for it in items:
        if len(it) <= 37:
            continue
        uuid = it[:36]
        pieces = _BULK_TAG_SPLIT_RE.split(it[36:])
        if pieces[0]:
            keys.append((uuid, ""))
            rests.append(pieces[0][1:])
        for k in range(1, len(pieces), 2):
            chunk = pieces[k + 1]
            if chunk:
                keys.append((uuid, pieces[k]))
                rests.append(chunk[1:])
    return keys, rests


def convert_blocks(keys: list, rests: list[str], in_range: bool = False) -> dict | None:
    """``{key: canonical flat tuple}`` from blocks of interval text (``"1-5:7:9-10"``, decimal
    numbers without whitespace), all numbers converted by one call of the C JSON scanner.

    Repeated keys are merged and empty results dropped. None when a number has leading zeros (not
    JSON) or is out of range: the caller then takes a path that reports or accepts it.
    ``in_range`` says the text was validated by :func:`parse_raw` (every number in 1..10^18-1),
    which skips the range check.
    """
    if not rests:
        return {}
    big = ":".join(rests)
    nparts = big.count(":") + 1
    ndash = big.count("-")
    if ndash == nparts:
        body = big.replace("-", ",").replace(":", ",")
    elif ndash == 0:
        body = big.replace(":", ",")
    else:
        # Mixed: write each one-gno interval "7" as "7,7".
        body = ",".join([p if "-" in p else p + "," + p for p in big.split(":")]).replace("-", ",")
    body = "[" + body + "]"
    try:
        nums, end = _scan_json(body, 0)
    except (ValueError, StopIteration):  # leading zeros: valid for the server, not for JSON
        return None
    if end != len(body):
        return None
    if ndash == 0:
        starts = lasts = nums
    else:
        starts = nums[0::2]
        lasts = nums[1::2]
    if not in_range and (min(starts) < 1 or max(nums) > MAX_GNO):
        return None
    n = len(starts)
    ends = list(map(_inc, lasts))
    reversed_ = list(compress(range(n), map(gt, starts, lasts)))
    if n == len(rests):
        # One interval per UUID/tag (a healthy fleet): nothing to sort or merge.
        flats = list(zip(starts, ends))
        for i in reversed_:
            flats[i] = ()
    else:
        bounds = list(accumulate([r.count(":") + 1 for r in rests]))
        flat = [0] * (2 * n)
        flat[0::2] = starts
        flat[1::2] = ends
        flats = [tuple(flat[2 * b:2 * e]) for b, e in zip([0] + bounds[:-1], bounds)]
        # Unsorted, overlapping or adjacent intervals inside one UUID/tag: an interval that does
        # not start after the previous one ends, unless it is the first of its UUID/tag.
        bad = set(compress(range(1, n), map(ge, ends, starts[1:])))
        bad.difference_update(bounds)
        bad.update(reversed_)
        for seg in {bisect_right(bounds, i) for i in bad}:
            b = bounds[seg - 1] if seg else 0
            e = bounds[seg]
            flats[seg] = tuple(normalize(starts[b:e], lasts[b:e]))
    out = dict(zip(keys, flats))
    if len(out) != len(keys) or not all(flats):
        out = {}
        for key, f in zip(keys, flats):
            if not f:
                continue
            mine = out.get(key)
            out[key] = f if mine is None else union(mine, f)
    return out


#: ``increasing`` scans at most about this many characters at a time: on text that stays in the
#: CPU cache the JSON scan and the comparison pass run measurably faster (3 % of workload b's
#: subtraction, docs/benchmarks.md).
BATCH_CHARS = 1 << 15


def increasing(texts: list[str]) -> list[bool]:
    """Whether the numbers written in each interval text (``"1-5:7:9-10"``, validated by
    :func:`parse_raw`) are strictly increasing, read without building intervals: one C JSON scan
    per batch of texts and one C-level comparison pass over all its numbers. True implies the
    intervals are pairwise disjoint (each starts after the previous one ends); canonical text
    always is."""
    out: list[bool] = []
    batch: list[str] = []
    size = 0
    for t in texts:
        batch.append(t)
        size += len(t)
        if size >= BATCH_CHARS:
            out += _increasing_batch(batch)
            batch = []
            size = 0
    if batch:
        out += _increasing_batch(batch)
    return out


def _increasing_batch(texts: list[str]) -> list[bool]:
    body = "[[" + "],[".join(texts).replace("-", ",").replace(":", ",") + "]]"
    lists = _scan_json(body, 0)[0]
    flat = list(chain.from_iterable(lists))
    rising = list(map(lt, flat, islice(flat, 1, None)))
    for end in islice(accumulate(map(len, lists)), len(lists) - 1):
        rising[end - 1] = True  # the first number of the next text: not compared
    if all(rising):  # the common case: every text increases
        return [True] * len(lists)
    return [all(map(lt, nums, islice(nums, 1, None))) for nums in lists]


def parse_raw(text: str) -> dict | None:
    """``{(uuid, tag): interval text}`` without converting a number, for text in the shape
    servers print whose every number is written without leading zeros in at most 18 digits (so
    certainly in range: 1 <= n < 10^18 < 2^63-2); None for any other text.

    The text is fully validated (``_RAW_ITEM_RE`` for text without tags, ``_RAW_TOKEN_RE`` for
    text with tags, and every character accounted for), so a set built from it is valid:
    converting a block later cannot fail. The interval text of a (uuid,
    tag) given in several places is joined with ":", which the server reads as the union. Equal
    interval texts of one key always denote equal sets (a text determines its set), which is what
    lets operations skip them unread.
    """
    if not text or not text.isascii():  # ASCII: lower() changes nothing but A-Z
        return None
    t = text.lower()
    first = t.find(",")
    head = _TAG_LOOKAHEAD if first < 0 else min(first, _TAG_LOOKAHEAD)
    if _BULK_TAGGED_RE.search(t, 0, head) is not None:  # tags early: most items have some
        return _parse_raw_tokens(t)
    found = _RAW_ITEM_RE.findall(t)
    if any(map(_ITEM_TAGGED, found)):  # tags only in later items: the token reader after all
        return _parse_raw_tokens(t)
    rests = list(map(_ITEM_INTERVALS, found))
    # 36 characters of UUID per item, ":" before non-empty intervals, the intervals, and every
    # comma and newline (no item holds one): the length of the text if nothing else was skipped.
    size = (37 * len(found) - rests.count("") + sum(map(len, rests))
            + t.count(",") + t.count("\n"))
    if size != len(t):
        return None
    raw = dict(zip(map(_ITEM_KEY, found), rests))
    if len(raw) == len(found) and "" not in rests:
        return raw  # the common case: every UUID once, each with intervals
    keys = list(map(_ITEM_KEY, found))
    if "" in rests:  # a UUID without intervals: the server ignores it
        keep = list(map(bool, rests))
        keys = list(compress(keys, keep))
        rests = list(compress(rests, keep))
    return _join_blocks(keys, rests)


def _parse_raw_tokens(t: str) -> dict | None:
    """:func:`parse_raw` for lowercased text with tags, read by ``_RAW_TOKEN_RE``."""
    keys = []
    rests = []
    uuid = None
    size = t.count(",") + t.count("\n")
    for u, rest, tag, tagged_rest in _RAW_TOKEN_RE.findall(t):
        if u:
            uuid = u
            size += 36
            if rest:
                keys.append((u, ""))
                rests.append(rest)
                size += 1 + len(rest)
        else:
            size += 1 + len(tag)
            if tagged_rest:
                keys.append((uuid, tag))
                rests.append(tagged_rest)
                size += 1 + len(tagged_rest)
    if size != len(t):
        return None
    return _join_blocks(keys, rests)


def _join_blocks(keys: list, rests: list[str]) -> dict:
    """``{key: interval text}``; the texts of a key given in several places joined with ":"."""
    raw = dict(zip(keys, rests))
    if len(raw) != len(keys):
        raw = {}
        for key, r in zip(keys, rests):
            mine = raw.get(key)
            raw[key] = r if mine is None else mine + ":" + r
    return raw


def scan(text: str) -> dict:
    """Reference reader: one character at a time, exactly the grammar in the module docstring.

    Slow (a Python loop per character) but it knows where parsing stopped, so it is what raises
    :class:`GtidParseError`. Returns the same mapping as :func:`parse_text` for valid text.
    """
    n = len(text)
    pos = 0
    groups: dict = {}

    def skip_ws(p: int) -> int:
        while p < n and text[p] in _WS:
            p += 1
        return p

    def hex_run(p: int, count: int) -> int:
        for k in range(count):
            if p + k >= n or text[p + k] not in _HEXDIGITS:
                raise _error(text, p + k, "expected a hex digit of a UUID")
        return p + count

    def number(p: int) -> tuple[int, int]:
        q = p
        while q < n and text[q] in _DIGITS:
            q += 1
        if q == p:
            raise _error(text, p, "expected a number (or a tag)")
        digits = text[p:q].lstrip("0") or "0"
        if len(digits) > 19:  # out of range; int() may refuse thousands of digits
            return MAX_GNO + 1, q
        return int(digits), q

    pos = skip_ws(pos)
    while True:
        while pos < n and text[pos] == ",":
            pos = skip_ws(pos + 1)
        if pos >= n:
            break
        # UUID
        start = pos
        if text[pos] == "{":
            p = pos + 1
            for count in (8, 4, 4, 4):
                p = hex_run(p, count)
                if p >= n or text[p] != "-":
                    raise _error(text, p, 'expected "-" in a UUID')
                p += 1
            p = hex_run(p, 12)
            if p >= n or text[p] != "}":
                raise _error(text, p, 'expected "}" closing a UUID')
            pos = p + 1
        else:
            p = hex_run(pos, 8)
            if p < n and text[p] == "-":
                p += 1
                for count in (4, 4, 4):
                    p = hex_run(p, count)
                    if p >= n or text[p] != "-":
                        raise _error(text, p, 'expected "-" in a UUID')
                    p += 1
                p = hex_run(p, 12)
            else:
                p = hex_run(p, 24)
            pos = p
        uuid = _uuid_canonical(text[start:pos])
        tag = ""
        pos = skip_ws(pos)
        while pos < n and text[pos] == ":":
            pos = skip_ws(pos + 1)
            if pos < n and text[pos] in _TAG_FIRST:
                q = pos + 1
                while q < n and text[q] in _TAG_CHARS:
                    q += 1
                if q - pos > MAX_TAG_LENGTH:
                    raise _error(text, pos, f"a tag is at most {MAX_TAG_LENGTH} characters")
                tag = text[pos:q].lower()
                pos = skip_ws(q)
                continue
            first, q = number(pos)
            if first < 1 or first > MAX_GNO:
                raise _error(text, pos, f"interval start out of range 1..{MAX_GNO}")
            last = first
            q = skip_ws(q)
            if q < n and text[q] == "-":
                q = skip_ws(q + 1)
                last, r = number(q)
                if last > MAX_GNO:
                    raise _error(text, q, f"interval end out of range (at most {MAX_GNO})")
                q = r
            pos = skip_ws(q)
            _add(groups, (uuid, tag), [first], [last])
        if pos < n and text[pos] != ",":
            raise _error(text, pos, 'expected "," or ":"')
    out = {}
    for key, (starts, lasts) in groups.items():
        flat = normalize(starts, lasts)
        if flat:
            out[key] = tuple(flat)
    return out


def format_set(keys, mapping, separator: str) -> str:
    """Server text of a set given its sorted ``(uuid, tag)`` keys: UUID printed once, untagged
    intervals first, then each tag, blocks joined by ``separator`` (``",\\n"`` on the server)."""
    if not any(map(_ITEM_TAGGED_KEY, keys)):  # no tag: one block per UUID
        blocks = []
        return separator.join([f"{uuid}:{format_intervals(flat)}"
                               for (uuid, _), flat in zip(keys, map(mapping.__getitem__, keys))])
    blocks = []
    prev = None
    for key in keys:
        uuid, tag = key
        ivs = format_intervals(mapping[key])
        piece = f":{tag}:{ivs}" if tag else f":{ivs}"
        if uuid == prev:
            blocks[-1] += piece
        else:
            blocks.append(uuid + piece)
            prev = uuid
    return separator.join(blocks)
