"""Interval algebra on flat tuples of half-open boundaries, the layout the server itself uses.

One (uuid, tag) of a GTID set is stored as a flat tuple ``(s1, e1, s2, e2, ...)`` where each
``[s, e)`` is half-open (``e`` is the last gno plus one, like ``Gtid_set::Interval::end``) and the
tuple is *canonical*: strictly increasing, so intervals are sorted, disjoint and never adjacent
(``e_i < s_{i+1}``). Every function here takes canonical tuples and returns a canonical tuple (or
list) in time linear in the number of intervals; the common shapes (equal inputs, disjoint ranges,
one side empty) are answered without a Python-level loop.

Private module: the public API is :class:`gtid_core.gtid_set.GtidSet`.
"""
from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from itertools import compress
from operator import add, le, lt

__all__ = [
    "normalize",
    "union",
    "intersection",
    "difference",
    "is_subset",
    "overlaps",
    "count",
    "contains",
    "format_intervals",
]

_inc = (1).__add__
_BEYOND = 1 << 64  # larger than any gno
_one_minus = (1).__sub__
_encode = json.JSONEncoder(separators=(":", ":")).encode


def normalize(starts: list[int], lasts: list[int]) -> list[int]:
    """Canonical flat list from parallel lists of starts and *inclusive* last gnos.

    Mirrors ``Gtid_set::add_gno_interval``: intervals whose last is below their start are dropped
    (the server drops them silently), overlapping or adjacent intervals are merged, order does not
    matter. Fast path: input that is already sorted and gapped is interleaved without a loop.
    """
    n = len(starts)
    if n == 0:
        return []
    ends = list(map(_inc, lasts))
    if all(map(le, starts, lasts)) and all(map(lt, ends, starts[1:])):
        flat = [0] * (2 * n)
        flat[0::2] = starts
        flat[1::2] = ends
        return flat
    pairs = sorted(zip(starts, ends))
    out: list[int] = []
    last_end = -1
    for s, e in pairs:
        if e <= s:
            continue
        if s <= last_end:
            if e > last_end:
                out[-1] = last_end = e
        else:
            out.append(s)
            out.append(e)
            last_end = e
    return out


def union(a: tuple, b: tuple) -> tuple:
    """Canonical union of two canonical flat tuples (``Gtid_set::add_gtid_set`` for one sidno)."""
    if not a or a == b:
        return b
    if not b:
        return a
    if a[-1] < b[0]:
        return a + b
    if b[-1] < a[0]:
        return b + a
    if a[-1] == b[0]:
        return a[:-1] + b[1:]
    if b[-1] == a[0]:
        return b[:-1] + a[1:]
    out: list[int] = []
    append = out.append
    i = j = 0
    na, nb = len(a), len(b)
    last_end = -1
    while i < na and j < nb:
        if a[i] <= b[j]:
            s = a[i]
            e = a[i + 1]
            i += 2
        else:
            s = b[j]
            e = b[j + 1]
            j += 2
        if s <= last_end:
            if e > last_end:
                out[-1] = last_end = e
        else:
            append(s)
            append(e)
            last_end = e
    rest, k, nr = (a, i, na) if i < na else (b, j, nb)
    while k < nr and rest[k] <= last_end:
        if rest[k + 1] > last_end:
            out[-1] = last_end = rest[k + 1]
        k += 2
    out.extend(rest[k:])
    return tuple(out)


def intersection(a: tuple, b: tuple) -> tuple:
    """Canonical intersection of two canonical flat tuples."""
    if not a or not b:
        return ()
    if a == b:
        return a
    if a[-1] <= b[0] or b[-1] <= a[0]:
        return ()
    out: list[int] = []
    append = out.append
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        s = a[i] if a[i] > b[j] else b[j]
        ea = a[i + 1]
        eb = b[j + 1]
        if ea < eb:
            if s < ea:
                append(s)
                append(ea)
            i += 2
        else:
            if s < eb:
                append(s)
                append(eb)
            j += 2
    return tuple(out)


def difference(a: tuple, b: tuple) -> tuple:
    """Canonical ``a - b`` of two canonical flat tuples (``Gtid_set::remove_gtid_set``)."""
    if not a or not b:
        return a
    if a == b:
        return ()
    if a[-1] <= b[0] or b[-1] <= a[0]:
        return a
    if len(b) == 2:  # one interval removed (the common case of a healthy fleet)
        s, e = b
        if len(a) == 2:
            return ((a[0], s) if a[0] < s else ()) + ((e, a[1]) if e < a[1] else ())
        i = bisect_left(a, s)  # boundaries of a before s
        j = bisect_right(a, e)  # boundaries of a up to e
        head = a[:i] + ((s,) if i & 1 else ())
        tail = ((e,) if j & 1 else ()) + a[j:]
        return head + tail
    if len(a) * 8 < len(b):
        # Few intervals against many: per interval [s, e) of a, binary searches find the
        # boundaries of b inside it; s is kept when outside b (an even number of boundaries of b
        # at or before it), e likewise (an even number before it).
        out = []
        for i in range(0, len(a), 2):
            s = a[i]
            e = a[i + 1]
            lo = bisect_right(b, s)
            hi = bisect_left(b, e, lo)
            if not lo & 1:
                out.append(s)
            out.extend(b[lo:hi])
            if not hi & 1:
                out.append(e)
        return tuple(out)
    # One pass with iterators (cheaper than indexing): for each interval [s, e) of a, skip the
    # intervals of b that end at or before s, and cut out those that start before e; the part of
    # [s, e) left after cutting one out starts where it ends, so the skip step takes the next.
    # An exhausted b reads as one interval beyond every gno.
    out: list[int] = []
    append = out.append
    next_b = iter(b).__next__
    bs = next_b()
    be = next_b()
    it = iter(a)
    next_a = it.__next__
    for s in it:
        e = next_a()
        while True:
            if be <= s:
                try:
                    bs = next_b()
                    be = next_b()
                except StopIteration:
                    bs = be = _BEYOND
            elif bs >= e:
                break
            else:
                if bs > s:
                    append(s)
                    append(bs)
                if be >= e:
                    s = e
                    break
                s = be
        if s < e:
            append(s)
            append(e)
    return tuple(out)


def is_subset(a: tuple, b: tuple) -> bool:
    """True when every interval of ``a`` lies inside one interval of ``b``."""
    if not a or a == b:
        return True
    if not b or a[0] < b[0] or a[-1] > b[-1]:
        return False
    nb = len(b)
    if nb == 2:
        return True  # inside b's only interval (checked just above)
    if len(a) * 8 < nb:
        # Few intervals against many: a binary search per interval of a.
        for i in range(0, len(a), 2):
            k = bisect_right(b, a[i])
            if not k & 1 or b[k] < a[i + 1]:
                return False
        return True
    next_b = iter(b).__next__
    bs = next_b()
    be = next_b()
    it = iter(a)
    next_a = it.__next__
    try:
        for s in it:
            e = next_a()
            while be <= s:
                bs = next_b()
                be = next_b()
            if bs > s or be < e:
                return False
    except StopIteration:  # b ended before a
        return False
    return True


def overlaps(a: tuple, b: tuple) -> bool:
    """True when the two canonical flat tuples share at least one gno."""
    if not a or not b:
        return False
    if a == b:
        return True
    if a[-1] <= b[0] or b[-1] <= a[0]:
        return False
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        if a[i + 1] <= b[j]:
            i += 2
        elif b[j + 1] <= a[i]:
            j += 2
        else:
            return True
    return False


def count(flat: tuple) -> int:
    """Number of gnos in a canonical flat tuple (exact, any size)."""
    return sum(flat[1::2]) - sum(flat[0::2])


def contains(flat: tuple, gno: int) -> bool:
    """True when ``gno`` is in the canonical flat tuple (``Gtid_set::contains_gtid``)."""
    return bool(bisect_right(flat, gno) & 1)


def format_intervals(flat: tuple) -> str:
    """Server text of one canonical flat tuple: ``1-5:7:9-10`` (``Gtid_set::to_string``).

    The numbers are written by the C JSON encoder: ends are negated so that ``[1,-5,7,9,-10]``
    encoded with ``:`` separators reads ``1:-5:7:9:-10``, and ``:-`` becomes ``-``; the end of a
    one-gno interval is left out.
    """
    if len(flat) == 2:
        s = flat[0]
        last = flat[1] - 1
        return str(s) if s == last else f"{s}-{last}"
    neg_lasts = list(map(_one_minus, flat[1::2]))
    out = list(flat)
    out[1::2] = neg_lasts
    lengths = list(map(add, flat[0::2], neg_lasts))  # 0 for a one-gno interval
    if 0 in lengths:
        mask = [1] * len(flat)
        mask[1::2] = lengths
        out = list(compress(out, mask))
    return _encode(out)[1:-1].replace(":-", "-")
