"""Which passages two texts share: character spans in each, for a reader to see why.

A *passage* is a line or a sentence (split at newlines, at ``.``, ``!`` or ``?`` before white
space, and after ``。``, ``！``, ``？``, ``；``). A passage of the new text is shared when at least
half of its word shingles (the same shingles as the similarity; a passage shorter than the
shingle size is one window) appear in one passage of the earlier text; the pair with the most
shingles in common is the evidence. Runs of shared passages that follow each other in both texts
are merged into one span, and at most ``limit`` spans are given, the longest first (bounded
verdicts). The pairing's work is bounded too (:data:`WORK_PER_SHINGLE`): near-linear in the
texts whatever they repeat.

Spans are ``[start, end)`` offsets into the texts as given (Python ``str`` indices, code points),
so a caller can cut the passage out of the text it sent.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt

from neardup.sketch.features import (
    DEFAULT_SEED,
    DEFAULT_SHINGLE,
    _codes_and_classes,
    _fold_each,
    _spans_and_hashes,
    combine_rows,
    combine_windows,
    mix64,
)

__all__ = ["Span", "passages", "shared_spans"]

Ints = npt.NDArray[np.intp]
U64 = npt.NDArray[np.uint64]


@dataclass(frozen=True, slots=True)
class Span:
    """A shared run: ``[start, end)`` in the new text, ``[earlier_start, earlier_end)`` in the
    earlier one, and the share of the new run's shingles found in the earlier run."""

    start: int
    end: int
    earlier_start: int
    earlier_end: int
    share: float


# what each BMP code point is to the passage rule, as bits: white space (str.isspace; none lies
# past the BMP), a word character but the underscore (str.isalnum; one past the BMP is looked up
# alone), a cut after it (a line end, a CJK stop), a stop that cuts before white space
_SPACE, _ALNUM, _CUT, _MARK = 1, 2, 4, 8


@cache
def _kinds() -> npt.NDArray[np.uint8]:
    kinds = np.fromiter(
        (c.isspace() * _SPACE | c.isalnum() * _ALNUM for c in map(chr, range(0x10000))),
        dtype=np.uint8,
        count=0x10000,
    )
    kinds[[ord(c) for c in "\n。！？；"]] |= _CUT
    kinds[[ord(c) for c in ".!?"]] |= _MARK
    return kinds


def _bounds(text: str) -> tuple[Ints, Ints]:
    """Starts and ends of all the passages (see :func:`passages`), found in numpy: a loop per
    cut cost more than the rest of the evidence on a text of many short lines."""
    if text.isascii():
        kind = _kinds()[:128][np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    else:
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        kind = _kinds()[np.minimum(codes, 0xFFFF)]
        high = np.flatnonzero(codes > 0xFFFF)
        if len(high):
            kind[high] = [chr(c).isalnum() * _ALNUM for c in codes[high].tolist()]
    cut = (kind & _CUT) != 0
    space = (kind & _SPACE) != 0
    cut[:-1] |= ((kind[:-1] & _MARK) != 0) & space[1:]  # . ! ? before white space
    solid = np.flatnonzero(~space)
    if not len(solid):
        return solid, solid
    # a passage is the run of solid characters between two cuts (a cut's own stop in it)
    part = (np.cumsum(cut) - cut)[solid]
    new = np.flatnonzero(part[1:] != part[:-1]) + 1
    lo = solid[np.concatenate(([0], new))]
    hi = solid[np.concatenate((new - 1, [len(solid) - 1]))] + 1
    alnum = np.zeros(len(kind) + 1, dtype=np.intp)
    np.cumsum((kind & _ALNUM) != 0, out=alnum[1:])
    keep = alnum[hi] > alnum[lo]
    return lo[keep], hi[keep]


def passages(text: str, limit: int = 0) -> list[tuple[int, int]]:
    """The ``[start, end)`` of every passage with a word character, leading spaces trimmed;
    the first ``limit`` of them (0: all)."""
    lo, hi = _bounds(text)
    if limit > 0:
        lo, hi = lo[:limit], hi[:limit]
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


def _sets(text: str, spans: Sequence[tuple[int, int]], w: int, seed: int) -> list[frozenset[int]]:
    """Each passage's shingle set (:func:`~neardup.sketch.features.shingle_hashes` of it)."""
    starts, ends = [a for a, _ in spans], [b for _, b in spans]
    values, ids, offsets, (at,) = _shingles([(text, starts, ends)], w, seed)
    rows = [values[ids[offsets[k] : offsets[k + 1]]].tolist() for k in range(len(offsets) - 1)]
    return [frozenset(rows[k]) for k in at.tolist()]


def _shingles(
    texts: Sequence[tuple[str, list[int], list[int]]], w: int, seed: int
) -> tuple[U64, Ints, Ints, list[Ints]]:
    """The shingles of the distinct passages of the texts (each text with its passages' starts
    and ends), as numbers: ``ids[offsets[k] : offsets[k + 1]]`` the k-th distinct passage's
    (sorted, each once), ``values[n]`` the shingle numbered n; and for each text the distinct
    passage each of its passages is. A passage that recurs, in one text or in both (what
    evidence looks for), is folded and hashed once."""
    slot: dict[str, int] = {}
    at = [
        np.array(
            [slot.setdefault(text[a:b], len(slot)) for a, b in zip(lo, hi, strict=True)],
            dtype=np.intp,
        )
        for text, lo, hi in texts
    ]
    return (*_folded_shingles(_fold_each(list(slot), parts=True), w, seed), at)


def _ranges(starts: Ints, lengths: Ints) -> Ints:
    """``starts[k] + arange(lengths[k])`` for every k, one after another."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - ends + lengths, lengths) + np.arange(ends[-1] if len(ends) else 0)


def _folded_shingles(folded: list[str], w: int, seed: int) -> tuple[U64, Ints, Ints]:
    """The shingles of folded texts (see :func:`_shingles`), from the tokens of them all joined
    by newlines, in one pass (a call per text paid numpy's fixed costs each): no token crosses
    a newline and a token's hash does not depend on where it stands, so a text's shingles are
    the windows that lie inside it (or, below ``w`` tokens, one window over them all, as
    :func:`~neardup.sketch.features.combine_windows` makes)."""
    if not folded:
        none = np.empty(0, dtype=np.intp)
        return np.empty(0, dtype=np.uint64), none, np.zeros(1, dtype=np.intp)
    codes, cls = _codes_and_classes("\n".join(folded))
    breaks = np.flatnonzero(codes == 10)
    if len(breaks) != len(folded) - 1:  # a text holds a newline of its own
        breaks = np.cumsum(np.array(list(map(len, folded)), dtype=np.intp) + 1)[:-1] - 1
    starts, tokens = _spans_and_hashes(codes, cls, seed)
    first = np.searchsorted(starts, np.concatenate(([0], breaks + 1)))
    sizes = np.diff(np.append(first, len(starts)))  # the tokens of each text
    one = np.zeros(len(folded), dtype=np.uint64)  # the one window of a text below w tokens
    for k in range(1, w):
        at = np.flatnonzero(sizes == k)
        if len(at):
            one[at] = combine_rows(tokens[first[at, None] + np.arange(k)])
    windows = combine_windows(tokens, w) if len(tokens) >= w else one[:0]
    long = sizes >= w
    count = np.where(long, sizes - w + 1, sizes > 0)
    pool = np.concatenate((windows, one))
    raw = pool[_ranges(np.where(long, first, len(windows) + np.arange(len(folded))), count)]
    values, ids = np.unique(raw, return_inverse=True)
    # each text's numbers sorted, a repeat dropped: one sort of text and number together
    owner, ids = np.divmod(
        np.unique(np.repeat(np.arange(len(folded)), count) * len(values) + ids.reshape(-1)),
        max(len(values), 1),
    )
    offsets = np.zeros(len(folded) + 1, dtype=np.intp)
    np.cumsum(np.bincount(owner, minlength=len(folded)), out=offsets[1:])
    return values, ids, offsets


def _alike(ids: Ints, offsets: Ints) -> Ints:
    """For each set ``ids[offsets[k] : offsets[k + 1]]`` (sorted), the first set equal to it:
    sets grouped by a sum of their mixed members and their size, each checked against its
    group's first member by member (sets alike by chance are told apart one by one)."""
    sizes = np.diff(offsets)
    mixed = np.zeros(len(ids) + 1, dtype=np.uint64)
    np.cumsum(mix64(ids.astype(np.uint64)), out=mixed[1:])
    summed = mixed[offsets[1:]] - mixed[offsets[:-1]] + mix64(sizes.astype(np.uint64))
    _, first, group = np.unique(summed, return_index=True, return_inverse=True)
    lead = first[group.reshape(-1)]
    if np.array_equal(sizes[lead], sizes) and np.array_equal(
        ids[_ranges(offsets[lead], sizes)], ids
    ):
        return lead  # type: ignore[no-any-return]
    firsts: dict[tuple[int, ...], int] = {}
    rows = [tuple(ids[offsets[k] : offsets[k + 1]].tolist()) for k in range(len(sizes))]
    return np.array([firsts.setdefault(r, k) for k, r in enumerate(rows)], dtype=np.intp)


# Pairing passages costs set look-ups; past WORK_PER_SHINGLE of them per shingle of the two
# texts (and WORK_FLOOR), the passages left are not paired: the evidence of a text built to be
# costly (passages that share most shingles with thousands of others) stops there, and its
# cost stays a small multiple of sketching the texts.
WORK_PER_SHINGLE = 16
# The passages of each text that evidence compares: some 380 KB of news (a megabyte of
# Reuters stories run together has 21,392); a text of a hundred thousand one-word lines is
# read no further than this, so its evidence costs what a long story's does (and says
# nothing of what lies past it).
PASSAGES_READ = 8192
WORK_FLOOR = 10_000
_LIGHT = 8  # a shingle in more distinct earlier passages than this is looked up, not listed


def _pairs(
    my_sets: Sequence[Set[int]], their_sets: Sequence[Set[int]], budget: int
) -> list[tuple[int, int, int, int]]:
    """``(mine, theirs, shared, size)`` for each passage of mine that at least half of its
    shingles share with one earlier passage (:func:`_pairing` of the sets as given)."""
    number: dict[int, int] = {}
    rows = [sorted(number.setdefault(h, len(number)) for h in s) for s in (*my_sets, *their_sets)]
    ids = np.array([h for row in rows for h in row], dtype=np.intp)
    offsets = np.zeros(len(rows) + 1, dtype=np.intp)
    np.cumsum([len(row) for row in rows], out=offsets[1:])
    alike = _alike(ids, offsets)
    columns = _pairing(ids, offsets, alike[: len(my_sets)], alike[len(my_sets) :], budget)
    return list(zip(*(c.tolist() for c in columns), strict=True))


def _pairing(
    ids: Ints, offsets: Ints, mine: Ints, theirs: Ints, budget: int
) -> tuple[Ints, Ints, Ints, Ints]:
    """Mine, theirs, shared and size, a column each, for each passage of mine that at least
    half of its shingles share with one earlier passage: the earlier passage sharing the most
    (the first, on a tie). A passage is the set ``ids[offsets[k] : offsets[k + 1]]`` (sorted
    shingle numbers), ``k = mine[i]`` or ``theirs[j]``; equal sets have one k.

    Work bounded by ``budget`` look-ups, in time near-linear in the texts whatever they repeat:
    identical earlier passages count once (only the first can win), identical passages of mine
    are paired once, and a shingle found in many earlier passages is looked up in those that
    its passage's rarer shingles found, listed whole only when those could not decide (a
    passage made of such shingles alone could win or tie). The rare shingles are joined with
    their earlier passages for all passages of mine at once (at most ``_LIGHT`` each: a loop
    per passage cost most of a text of many short lines); a passage with common shingles is
    paired alone, in order, until the budget is spent."""
    none = np.empty(0, dtype=np.intp)
    if not len(mine) or not len(theirs):
        return none, none, none, none
    sizes = np.diff(offsets)
    n_ids = int(ids.max()) + 1 if len(ids) else 0
    # the earlier passages: each distinct set at its first passage, listed under each shingle
    t_sets, t_first = np.unique(theirs, return_index=True)
    t_at = _ranges(offsets[t_sets], sizes[t_sets])
    order = np.lexsort((np.repeat(t_first, sizes[t_sets]), ids[t_at]))
    listed = np.repeat(t_first, sizes[t_sets])[order]  # under each shingle, in passage order
    spread = np.bincount(ids[t_at], minlength=n_ids)  # distinct earlier passages a shingle
    under = np.cumsum(spread) - spread  # where a shingle's list starts in listed
    # my distinct sets, k-th the k-th to appear
    m_sets, m_first = np.unique(mine, return_index=True)
    by_first = np.argsort(m_first)
    m_sets, m_first = m_sets[by_first], m_first[by_first]
    n_keys = len(m_sets)
    m_at = _ranges(offsets[m_sets], sizes[m_sets])
    mh, mk = ids[m_at], np.repeat(np.arange(n_keys), sizes[m_sets])
    key_ends = np.cumsum(sizes[m_sets])
    spread_m = spread[mh]
    light = (spread_m > 0) & (spread_m <= _LIGHT)
    heavy = spread_m > _LIGHT

    def per_key(x: Ints) -> Ints:
        total = np.concatenate(([0], np.cumsum(x)))
        return total[key_ends] - total[key_ends - sizes[m_sets]]  # type: ignore[no-any-return]

    cost = per_key(np.where(light, spread_m, 0))
    n_heavy = per_key(heavy.astype(np.intp))
    # every (key, earlier passage) that a light shingle joins, counted
    lit = np.flatnonzero(light)
    joined = _ranges(under[mh[lit]], spread_m[lit])
    code = np.repeat(mk[lit], spread_m[lit]) * len(theirs) + listed[joined]
    code, hits = np.unique(code, return_counts=True)
    hit_key, hit_at = np.divmod(code, len(theirs))
    # each key's best: the most hits, then the first passage
    order = np.lexsort((hit_at, -hits, hit_key))
    head = order[np.flatnonzero(np.diff(hit_key[order], prepend=-1))]
    best_at = np.full(n_keys, -1, dtype=np.intp)
    best_hits = np.zeros(n_keys, dtype=np.intp)
    best_at[hit_key[head]], best_hits[hit_key[head]] = hit_at[head], hits[head]
    crowded = np.flatnonzero(n_heavy)
    if len(crowded):
        hit_ends = np.searchsorted(hit_key, np.arange(1, n_keys + 1))
        lit_cost = np.where(n_heavy > 0, 0, cost)
        before = np.cumsum(lit_cost) - lit_cost  # spent on the light keys before each
        sets_of: dict[int, frozenset[int]] = {}  # an earlier passage's set, once asked

        def members(j: int) -> frozenset[int]:
            known = sets_of.get(j)
            if known is None:
                known = sets_of[j] = frozenset(
                    ids[offsets[theirs[j]] : offsets[theirs[j] + 1]].tolist()
                )
            return known

        spent = 0
        for k in crowded.tolist():
            if before[k] + spent > budget:
                break
            lo, hi = key_ends[k] - sizes[m_sets[k]], key_ends[k]
            key = mh[lo:hi].tolist()
            thick = mh[lo:hi][heavy[lo:hi]].tolist()
            a, b = (hit_ends[k - 1] if k else 0), hit_ends[k]
            got = dict(zip(hit_at[a:b].tolist(), hits[a:b].tolist(), strict=True))
            c = int(cost[k]) + len(thick) * len(got)
            for j in got:
                got[j] += len(members(j).intersection(thick))
            best = _most(got)
            if best is None or best[1] <= len(thick):
                for h in thick:
                    found = listed[under[h] : under[h] + spread[h]].tolist()
                    c += len(found)
                    for j in found:
                        if j not in got:
                            c += len(key)
                            got[j] = len(members(j).intersection(key))
                best = _most(got)
            cost[k] = c
            spent += c
            if best is not None:
                best_at[k], best_hits[k] = best
            if before[k] + lit_cost[k] + spent > budget:
                break
    # the passages paired before the budget ran out (the one that spent it included)
    spent_at = np.zeros(len(mine), dtype=np.intp)
    spent_at[m_first] = cost
    over = np.flatnonzero(np.cumsum(spent_at) > budget)
    read = over[0] + 1 if len(over) else len(mine)
    key_of = np.empty(len(sizes), dtype=np.intp)
    key_of[m_sets] = np.arange(n_keys)
    keys = key_of[mine[:read]]
    size, shared = sizes[mine[:read]], best_hits[keys]
    ok = np.flatnonzero((shared > 0) & (2 * shared >= size))
    return ok, best_at[keys][ok], shared[ok], size[ok]


def _most(hits: dict[int, int]) -> tuple[int, int] | None:
    """The passage with the most hits and its hits; the first on a tie."""
    if len(hits) < 2:
        return next(iter(hits.items()), None)
    top = max(hits.values())
    return min(j for j, n in hits.items() if n == top), top


def shared_spans(
    new: str,
    earlier: str,
    *,
    w: int = DEFAULT_SHINGLE,
    seed: int = DEFAULT_SEED,
    limit: int = 32,
) -> list[Span]:
    """The passages of ``new`` found in ``earlier``, as merged spans in both (see module doc);
    of each text, its first :data:`PASSAGES_READ` passages."""
    my_lo, my_hi = (b[:PASSAGES_READ] for b in _bounds(new))
    their_lo, their_hi = (b[:PASSAGES_READ] for b in _bounds(earlier))
    _, ids, offsets, (mine, theirs) = _shingles(
        [(new, my_lo.tolist(), my_hi.tolist()), (earlier, their_lo.tolist(), their_hi.tolist())],
        w,
        seed,
    )
    alike = _alike(ids, offsets)
    mine, theirs = alike[mine], alike[theirs]
    sizes = np.diff(offsets)
    size = int(sizes[mine].sum() + sizes[theirs].sum())
    i, j, shared, whole = _pairing(ids, offsets, mine, theirs, WORK_PER_SHINGLE * size + WORK_FLOOR)
    if not len(i):
        return []
    # a run goes on while the next pair follows in mine and stays or follows in theirs
    head = np.ones(len(i), dtype=bool)
    step = j[1:] - j[:-1]
    head[1:] = (i[1:] != i[:-1] + 1) | ((step != 0) & (step != 1))
    heads = np.flatnonzero(head)
    tails = np.append(heads[1:], len(i)) - 1
    start, end = my_lo[i[heads]], my_hi[i[tails]]
    # the longest first (the earliest on a tie: runs start in order), then in text order
    kept = sorted(np.lexsort((heads, start - end)).tolist()[:limit])
    earlier_start, earlier_end = their_lo[j[heads]], their_hi[j[tails]]
    shared_sum = np.add.reduceat(shared, heads)
    size_sum = np.add.reduceat(whole, heads)
    return [
        Span(a, b, c, d, round(n / m, 4))
        for a, b, c, d, n, m in zip(
            start[kept].tolist(),
            end[kept].tolist(),
            earlier_start[kept].tolist(),
            earlier_end[kept].tolist(),
            shared_sum[kept].tolist(),
            size_sum[kept].tolist(),
            strict=True,
        )
    ]
