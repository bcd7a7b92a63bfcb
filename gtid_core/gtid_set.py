"""``GtidSet``: an immutable GTID set with the MySQL server's text, order and algebra.

A value is normalised when it is built (UUIDs and tags lowercased, intervals sorted and merged),
so ``==`` means "same set" and ``str()`` is exactly what ``SELECT @@GLOBAL.gtid_executed`` or
``GTID_SUBTRACT(x, '')`` prints on MySQL 9.7. What text is accepted, dropped or rejected is
described in :mod:`gtid_core._gtid_text` and in ``docs/gtid-sets.md``; a differential test against
a real server (``tests/core/test_gtid_set_mysql.py``) keeps both honest.

Representation: per ``(uuid, tag)`` one flat tuple of half-open boundaries
``(start1, end1, start2, end2, ...)`` with ``end = last gno + 1`` — the layout of the server's
``Gtid_set::Interval`` list — so every operation is a linear merge over flat integers.

Text in the shape servers print is read lazily: :meth:`GtidSet.parse` validates all of it (so
every error is still raised by ``parse``) but keeps each block's interval text unconverted, and
converts numbers only when they are needed. ``-`` and ``<=`` between two such sets compare the
texts first (see :func:`_raw_difference`, :func:`_raw_is_subset`), and convert only what differs.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import filterfalse

from gtid_core import _intervals as iv
from gtid_core._gtid_text import (
    MAX_GNO,
    convert_blocks,
    format_set,
    increasing,
    normalize_tag,
    normalize_uuid,
    parse_raw,
    parse_text,
)
from gtid_core.errors import GtidParseError

__all__ = ["GtidSet", "MAX_GNO"]


def _check_uuid(uuid: object, what: object) -> str:
    u = normalize_uuid(uuid) if isinstance(uuid, str) else None
    if u is None:
        raise GtidParseError(f"invalid UUID {uuid!r} in {what!r}")
    return u


def _check_tag(tag: object, what: object) -> str:
    if tag is None:
        return ""
    t = normalize_tag(tag) if isinstance(tag, str) else None
    if t is None:
        raise GtidParseError(
            f"invalid tag {tag!r} in {what!r}: a tag is a letter or '_' followed by at most 31 "
            "letters, digits or '_'")
    return t


def _check_gno(gno: object, what: object) -> int:
    if type(gno) is not int or not 1 <= gno <= MAX_GNO:
        raise GtidParseError(f"gno {gno!r} in {what!r} is not an integer in 1..{MAX_GNO}")
    return gno


class GtidSet:
    """An immutable, hashable GTID set, normalised at construction.

    Build one with :meth:`parse` (server text), :meth:`from_intervals` or ``GtidSet(text)``.
    Operators: ``|`` (``add_gtid_set``), ``-`` (``remove_gtid_set``), ``&``, ``<=`` (``is_subset``),
    ``<``, ``>=``, ``>``, ``==``; ``bool(s)`` is false only for the empty set. Iteration yields
    ``(uuid, tag, first, last)`` in the server's canonical order, ``tag`` None when untagged.
    """

    __slots__ = ("_blocks", "_raw", "_keys", "_hash", "_text")

    #: The empty set (the server prints it as '').
    EMPTY: GtidSet

    def __new__(cls, text: str = "") -> GtidSet:
        return cls.parse(text)

    @classmethod
    def _new(cls, mapping: dict | None, keys: tuple | None = None, raw: dict | None = None
             ) -> GtidSet:
        """A set from ``{(uuid, tag): canonical flat tuple}``, or, with ``mapping`` None, from
        ``raw`` (``{(uuid, tag): interval text}`` from :func:`parse_raw`), converted on demand."""
        self = _object_new(cls)
        _set_blocks(self, mapping)
        _set_raw(self, raw)
        _set_keys(self, keys)
        _set_hash(self, None)
        _set_text(self, None)
        return self

    @property
    def _map(self) -> dict:
        """``{(uuid, tag): canonical flat tuple}``, converted from the raw text on first use."""
        m = self._blocks
        if m is None:
            m = convert_blocks(list(self._raw), list(self._raw.values()), True)
            if m is None:  # parse_raw's checks exclude it: a bug, not bad input
                raise AssertionError(f"raw GTID blocks {self._raw!r} failed to convert")
            _set_blocks(self, m)
        return m

    def __setattr__(self, name, value):
        raise AttributeError(f"GtidSet is immutable (cannot set {name!r})")

    __delattr__ = __setattr__

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str | bytes | bytearray) -> GtidSet:
        """Parse GTID set text as MySQL 8.4/9.x does (``Gtid_set::add_gtid_text``).

        Accepts UUIDs in either case, as 8-4-4-4-12, 32 hex digits or ``{8-4-4-4-12}``; tags;
        whitespace around tokens; repeated UUIDs; unsorted, overlapping and adjacent intervals;
        empty items between commas. Drops, like the server, an interval whose end is below its
        start and a UUID or tag with no interval. Raises :class:`GtidParseError` (quoting the text
        and the offset where parsing stopped) for everything the server rejects.
        """
        if isinstance(text, (bytes, bytearray)):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                raise GtidParseError(f"GTID set {bytes(text)!r} is not UTF-8 text") from None
        elif not isinstance(text, str):
            raise TypeError(f"GtidSet.parse expects str, got {type(text).__name__}: {text!r}")
        raw = parse_raw(text)
        if raw is not None:
            return cls._new(None, raw=raw)
        return cls._new(parse_text(text))

    @classmethod
    def from_intervals(cls, intervals: Iterable[tuple]) -> GtidSet:
        """Build a set from ``(uuid, tag, first, last)`` tuples (inclusive, tag None = untagged).

        Order, overlaps and repeats do not matter. Raises :class:`GtidParseError` for a bad UUID,
        tag or gno, or an interval whose last is below its first.
        """
        groups: dict = {}
        for item in intervals:
            try:
                uuid, tag, first, last = item
            except (TypeError, ValueError):
                raise GtidParseError(
                    f"expected a (uuid, tag, first, last) tuple, got {item!r}") from None
            key = (_check_uuid(uuid, item), _check_tag(tag, item))
            _check_gno(first, item)
            _check_gno(last, item)
            if last < first:
                raise GtidParseError(f"interval {item!r} ends before it starts")
            g = groups.get(key)
            if g is None:
                groups[key] = ([first], [last])
            else:
                g[0].append(first)
                g[1].append(last)
        return cls._new({k: tuple(iv.normalize(s, e)) for k, (s, e) in groups.items()})

    # ---- text ---------------------------------------------------------------------------

    def _sorted_keys(self) -> tuple:
        keys = self._keys
        if keys is None:
            keys = tuple(sorted(self._map))
            _set_keys(self, keys)
        return keys

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = format_set(self._sorted_keys(), self._map, ",\n")
            _set_text(self, text)
        return text

    def to_text(self, multiline: bool = True) -> str:
        """Canonical server text; blocks joined by ``",\\n"`` (as the server prints them) or, with
        ``multiline=False``, by ``","``."""
        if multiline:
            return str(self)
        if self._text is not None:
            return self._text.replace(",\n", ",")
        return format_set(self._sorted_keys(), self._map, ",")

    def __repr__(self) -> str:
        return f"GtidSet({self.to_text(multiline=False)!r})"

    def __reduce__(self):
        return (GtidSet.parse, (str(self),))

    # ---- value semantics ----------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._map == other._map

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._map != other._map

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(frozenset(self._map.items()))
            _set_hash(self, h)
        return h

    def __bool__(self) -> bool:
        return bool(self._map)

    def count(self) -> int:
        """Exact number of transactions in the set (may exceed 2^64)."""
        return sum(map(iv.count, self._map.values()))

    # ---- algebra ------------------------------------------------------------------------

    # Each operation first sets aside, with C-level dict-view set operations, the (uuid, tag)
    # blocks that are identical in both operands (most of them when comparing the servers of one
    # replication topology), and merges intervals only for the others.

    def __or__(self, other: GtidSet) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        a, b = self._map, other._map
        if not b or a.items() >= b.items():
            return self
        if not a or a.items() <= b.items():
            return other
        out = dict(a)
        new_key = False
        for k, v in b.items() - a.items():
            mine = out.get(k)
            if mine is None:
                out[k] = v
                new_key = True
            else:
                out[k] = iv.union(mine, v)
        return GtidSet._new(out, None if new_key else self._keys)

    def __and__(self, other: GtidSet) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        a, b = self._map, other._map
        if a.items() <= b.items():
            return self
        if b.items() <= a.items():
            return other
        out = dict(a.items() & b.items())
        for k, v in a.items() - b.items():
            theirs = b.get(k)
            if theirs is not None:
                r = iv.intersection(v, theirs)
                if r:
                    out[k] = r
        return GtidSet._new(out)

    def __sub__(self, other: GtidSet) -> GtidSet:
        if not isinstance(other, GtidSet):
            return NotImplemented
        if self._raw is not None and other._raw is not None:
            return GtidSet._new(_raw_difference(self._raw, other._raw))
        a, b = self._map, other._map
        if not b or not a:
            return self
        out = dict(a.items() - b.items())  # blocks identical in b vanish
        for k, v in list(out.items()):
            theirs = b.get(k)
            if theirs is not None:
                r = iv.difference(v, theirs)
                if r:
                    out[k] = r
                else:
                    del out[k]
        if out == a:
            return self
        return GtidSet._new(out)

    def __le__(self, other: GtidSet) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        if self._raw is not None and other._raw is not None:
            return _raw_is_subset(self._raw, other._raw)
        a, b = self._map, other._map
        if a.items() <= b.items():
            return True
        if len(a) > len(b):
            return False
        for k, v in a.items() - b.items():
            theirs = b.get(k)
            if theirs is None or not iv.is_subset(v, theirs):
                return False
        return True

    def __lt__(self, other: GtidSet) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return self._map != other._map and self <= other

    def __ge__(self, other: GtidSet) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return other <= self

    def __gt__(self, other: GtidSet) -> bool:
        if not isinstance(other, GtidSet):
            return NotImplemented
        return other < self

    # Server vocabulary (sql/rpl_gtid.h); each returns a new value.
    def add_gtid_set(self, other: GtidSet) -> GtidSet:
        """``self | other`` (``Gtid_set::add_gtid_set``, but returning a new value)."""
        return self | other

    def remove_gtid_set(self, other: GtidSet) -> GtidSet:
        """``self - other`` (``Gtid_set::remove_gtid_set``, but returning a new value)."""
        return self - other

    def is_subset(self, other: GtidSet) -> bool:
        """``self <= other`` (``Gtid_set::is_subset``, what ``GTID_SUBSET(self, other)`` says)."""
        return self <= other

    def is_intersection_nonempty(self, other: GtidSet) -> bool:
        """True when the sets share a GTID (``Gtid_set::is_intersection_nonempty``)."""
        a, b = self._map, other._map
        if len(a) > len(b):
            a, b = b, a
        for k, v in a.items():
            theirs = b.get(k)
            if theirs is not None and iv.overlaps(v, theirs):
                return True
        return False

    # ---- GTIDs, UUIDs, intervals --------------------------------------------------------

    def __contains__(self, gtid: object) -> bool:
        """``"uuid:5" in s``, ``"uuid:tag:5" in s`` or ``(uuid, tag, gno) in s``."""
        if isinstance(gtid, str):
            parts = [p.strip() for p in gtid.split(":")]
            if len(parts) == 2:
                uuid, tag, gno = parts[0], None, parts[1]
            elif len(parts) == 3:
                uuid, tag, gno = parts
            else:
                raise GtidParseError(f"expected 'uuid:gno' or 'uuid:tag:gno', got {gtid!r}")
            if not gno.isascii() or not gno.isdigit():
                raise GtidParseError(f"gno {gno!r} in {gtid!r} is not a number")
            gno = int(gno)
        elif isinstance(gtid, tuple) and len(gtid) == 3:
            uuid, tag, gno = gtid
        else:
            raise TypeError(
                f"expected 'uuid:gno', 'uuid:tag:gno' or (uuid, tag, gno), got {gtid!r}")
        key = (_check_uuid(uuid, gtid), _check_tag(tag, gtid))
        _check_gno(gno, gtid)
        flat = self._map.get(key)
        return flat is not None and iv.contains(flat, gno)

    def __iter__(self) -> Iterator[tuple[str, str | None, int, int]]:
        m = self._map
        for key in self._sorted_keys():
            uuid, tag = key
            tag = tag or None
            flat = m[key]
            for i in range(0, len(flat), 2):
                yield uuid, tag, flat[i], flat[i + 1] - 1

    def uuids(self) -> frozenset[str]:
        """The lowercase UUIDs that have at least one GTID in the set."""
        return frozenset(k[0] for k in self._map)

    def for_uuid(self, uuid: str) -> GtidSet:
        """The part of the set whose UUID is ``uuid`` (any accepted spelling), all tags."""
        u = _check_uuid(uuid, uuid)
        return GtidSet._new({k: v for k, v in self._map.items() if k[0] == u})

    def untagged(self) -> GtidSet:
        """The untagged GTIDs of the set (``uuid:gno``): what an 8.3+ replica sends a source older
        than 8.3 (``Gtid_set::encode(..., skip_tagged_gtids)``)."""
        m = self._map
        if not any(k[1] for k in m):
            return self
        return GtidSet._new({k: v for k, v in m.items() if not k[1]})

    def tagged(self) -> GtidSet:
        """The tagged GTIDs of the set (``uuid:tag:gno``, 8.3+)."""
        m = self._map
        if not any(k[1] for k in m):
            return GtidSet.EMPTY
        return GtidSet._new({k: v for k, v in m.items() if k[1]})

    def max_gno(self, uuid: str, tag: str | None = None) -> int | None:
        """Highest gno of ``uuid`` (and ``tag``; None = untagged), or None if there is none."""
        flat = self._map.get((_check_uuid(uuid, uuid), _check_tag(tag, tag)))
        return flat[-1] - 1 if flat else None


# The slots are written through their descriptors (cheaper than object.__setattr__ by name);
# GtidSet.__setattr__ refuses every other write.
_object_new = object.__new__
_set_blocks = GtidSet._blocks.__set__
_set_raw = GtidSet._raw.__set__
_set_keys = GtidSet._keys.__set__
_set_hash = GtidSet._hash.__set__
_set_text = GtidSet._text.__set__

GtidSet.EMPTY = GtidSet._new({}, ())


# ---- operations on unconverted text ----------------------------------------------------------
#
# Both operands come from parse_raw: ``{(uuid, tag): interval text}``, validated, every number in
# range. Write S(t) for the set a text denotes and "intervals" for the ``:``-separated pieces of a
# block's text (``1-5``, ``7``). For blocks x and y of one (uuid, tag), the shortcuts below are
# exact whatever the text's order, overlaps or repeats:
#   * a text determines its set, so blocks with equal text denote equal sets;
#   * a block is the union of its intervals, so an interval of x written identically in y lies in
#     S(y). Hence, for X' any part of x's intervals that keeps every interval not written in y,
#     and Y' any part of y's intervals, with z = S(X') - S(Y'):
#         S(x) - S(y) = z - S(y)     and     S(x) <= S(y)  iff  z - S(y) is empty;
#   * when moreover the numbers written in x are strictly increasing (so x's intervals are
#     pairwise disjoint, as in every text a server prints) and every interval of y outside Y' is
#     written in x outside X' (true of the two ways X' and Y' are formed below: cutting a common
#     leading run, and dropping the intervals written in both tails), those intervals are
#     disjoint from S(X'), so z - S(y) = z.
# Blocks of one (uuid, tag) read from servers of one topology share most of their intervals: a
# replica's block usually differs from its source's only in the last interval, or in a few holes.
# So X' and Y' are a few intervals, found by comparing text (a common run of leading intervals is
# cut off by slice comparisons, the rest by hashing interval texts), and z is computed on those
# alone. Only when z is not empty are x's numbers read (one C JSON scan, no interval building) to
# see whether z is the answer; y is converted whole only for text that is not increasing.


def _common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (ASCII): for short texts the first
    differing byte is the highest set bit of the two texts' bytes XORed as integers; for long
    ones C-level slice comparisons, doubling steps then bisection (O(prefix length))."""
    n = min(len(a), len(b))
    if n <= 2048:
        d = int.from_bytes(a[:n].encode(), "big") ^ int.from_bytes(b[:n].encode(), "big")
        return n - 1 - (d.bit_length() - 1) // 8 if d else n
    lo, step = 0, 64
    while True:
        hi = min(lo + step, n)
        if a[lo:hi] != b[lo:hi]:
            break
        if hi == n:
            return n
        lo = hi
        step *= 2
    # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


#: Blocks shorter than this (characters) are compared whole: looking for what they share costs
#: more than converting a few intervals.
_SHORT_BLOCK = 128


def _distinct_intervals(x: str, y: str) -> tuple[str, str]:
    """``(X', Y')``: the intervals of ``x`` and of ``y`` (as text) that are not written identically
    in the other block, or at least the parts left after cutting their common leading run."""
    k = _common_prefix_length(x, y)
    if (k == len(x) or x[k] == ":") and (k == len(y) or y[k] == ":"):
        cut = k
    else:
        cut = x.rfind(":", 0, k)  # inside the common prefix, so a ":" in y too
    if cut > 0:
        x = x[cut + 1:]
        y = y[cut + 1:]
    if len(x) < _SHORT_BLOCK or len(y) < _SHORT_BLOCK:
        return x, y
    xs = x.split(":")
    ys = y.split(":")
    only_y = set(ys)
    x_only = ":".join(filterfalse(only_y.__contains__, xs))
    only_y.difference_update(xs)  # in place: no second large set
    return x_only, ":".join(filter(only_y.__contains__, ys))  # in y's order


def _convert_texts(texts: list[str]) -> list[tuple]:
    """Canonical flat tuples of interval texts (as kept by :func:`parse_raw`, or parts of them;
    "" is the empty set), all converted in one batch."""
    idx = [i for i, t in enumerate(texts) if t]
    if not idx:
        return [()] * len(texts)
    m = convert_blocks(idx, [texts[i] for i in idx], True)
    if m is None:  # parse_raw's checks exclude it: a bug, not bad input
        raise AssertionError("interval text accepted by parse_raw failed to convert")
    return [m.get(i, ()) for i in range(len(texts))]


def _pending(a: dict, b: dict, out: dict | None) -> list[tuple] | None:
    """Compare every block of ``a`` with ``b``'s: blocks with equal text are skipped, and for
    the others z = S(X') - S(Y') is computed (see above). A non-empty z that is final (X' and Y'
    are the whole blocks, or ``b`` lacks the key) goes into ``out``; the others are returned as
    ``(key, z, x, y)`` with the whole texts of the blocks. With ``out`` None (a subset test) the
    first final non-empty z ends the work: None is returned.

    When X' and Y' are one interval each (a healthy fleet: ``1-1000`` against ``1-1003``, or the
    last intervals of two long blocks) z is computed arithmetically, without a conversion batch."""
    cut = []
    keys = []
    xs = []
    ys = []
    wholes: list[tuple | None] = []
    b_get = b.get
    for key, x in a.items():
        y = b_get(key)
        if y == x:  # equal text, equal set
            continue
        whole = None
        if y is None:
            y = ""
        elif len(x) >= _SHORT_BLOCK and len(y) >= _SHORT_BLOCK:
            whole = (x, y)
            x, y = _distinct_intervals(x, y)
            if not x:
                continue  # z is empty
        if ":" in x or ":" in y:
            keys.append(key)
            xs.append(x)
            ys.append(y)
            wholes.append(whole)
            continue
        first, dash, last = x.partition("-")
        xs_ = int(first)
        xe = (int(last) if dash else xs_) + 1
        if y:
            first, dash, last = y.partition("-")
            ys_ = int(first)
            ye = (int(last) if dash else ys_) + 1
        else:
            ys_ = ye = 0
        if xe <= xs_:
            continue  # a reversed interval: the empty set
        # iv.difference of two one-interval tuples, inlined: a healthy fleet is nearly all this
        # case, and the call costs about 7 % of workload a's time (docs/benchmarks.md).
        if ye <= ys_ or ye <= xs_ or xe <= ys_:
            z = (xs_, xe)
        else:
            z = ((xs_, ys_) if xs_ < ys_ else ()) + ((ye, xe) if ye < xe else ())
            if not z:
                continue
        if whole is not None:
            cut.append((key, z) + whole)
        elif out is None:
            return None
        else:
            out[key] = z
    n = len(keys)
    if n:
        flats = _convert_texts(xs + ys)
        for i in range(n):
            z = iv.difference(flats[i], flats[n + i])
            if z:
                if wholes[i] is not None:
                    cut.append((keys[i], z) + wholes[i])
                elif out is None:
                    return None
                else:
                    out[keys[i]] = z
    return cut


def _raw_difference(a: dict, b: dict) -> dict:
    """``{key: canonical flat tuple}`` of ``a - b`` (``Gtid_set::remove_gtid_set``)."""
    out: dict = {}
    cut = _pending(a, b, out)
    if cut:
        rest = []
        for item, disjoint in zip(cut, increasing([x for _, _, x, _ in cut])):
            if disjoint:
                out[item[0]] = item[1]
            else:
                rest.append(item)
        for (key, z, _, _), y in zip(rest, _convert_texts([y for _, _, _, y in rest])):
            r = iv.difference(z, y)
            if r:
                out[key] = r
    return out


def _raw_is_subset(a: dict, b: dict) -> bool:
    """``a <= b`` (``Gtid_set::is_subset``)."""
    cut = _pending(a, b, None)
    if cut is None:
        return False
    if cut:
        if any(increasing([x for _, _, x, _ in cut])):
            return False
        for (_, z, _, _), y in zip(cut, _convert_texts([y for _, _, _, y in cut])):
            if not iv.is_subset(z, y):
                return False
    return True
