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

import re
from dataclasses import dataclass
from itertools import chain

import numpy as np

from sketch.features import (
    DEFAULT_SEED,
    DEFAULT_SHINGLE,
    _codes_and_classes,
    _fold,
    _fold_each,
    _spans_and_hashes,
    batch_shingle_hashes,
    combine_rows,
    combine_windows,
)

# a sentence ends at . ! ? before a space (not the point of 4.5) or at a CJK stop; a line too.
# Each match starts at its mark (a look-behind made the engine try every position of the text)
_BOUNDARY_RE = re.compile(r"[.!?]\s+|[。！？；]|\n")
_ALNUM_RE = re.compile(r"[^\W_]")  # str.isalnum: a word character but the underscore

__all__ = ["Span", "passages", "shared_spans"]


@dataclass(frozen=True, slots=True)
class Span:
    """A shared run: ``[start, end)`` in the new text, ``[earlier_start, earlier_end)`` in the
    earlier one, and the share of the new run's shingles found in the earlier run."""

    start: int
    end: int
    earlier_start: int
    earlier_end: int
    share: float


def passages(text: str, limit: int = 0) -> list[tuple[int, int]]:
    """The ``[start, end)`` of every passage with a word character, leading spaces trimmed;
    the first ``limit`` of them (0: all)."""
    out: list[tuple[int, int]] = []
    alnum = _ALNUM_RE.search
    a = 0
    for m in chain(_BOUNDARY_RE.finditer(text), (None,)):
        if m is None:
            b = e = len(text)
        else:
            s, e = m.span()
            mark = text[s]
            b = s + 1 if mark in ".!?" else s if mark == "\n" else e  # a stop stays in
        part = text[a:b]
        lo, hi = a + len(part) - len(part.lstrip()), a + len(part.rstrip())
        if lo < hi and alnum(text, lo, hi):
            out.append((lo, hi))
            if len(out) == limit:
                break
        a = e
    return out


def _sets(text: str, spans: list[tuple[int, int]], w: int, seed: int) -> list[set[int]]:
    """Each passage's shingle set (:func:`~sketch.features.shingle_hashes` of it): from one pass
    over the whole text when folding it keeps every passage where it was, else all passages
    as one batch (one call per passage paid numpy's overhead some thirty times a check)."""
    if not spans:
        return []
    folded = _fold(text)
    if len(folded) == len(text) and _folds_in_place(text, folded, spans):
        return _sets_in_place(folded, spans, w, seed)
    hashes, offsets = batch_shingle_hashes([text[a:b] for a, b in spans], w=w, seed=seed)
    flat, cut = hashes.tolist(), offsets.tolist()
    return [set(flat[cut[i] : cut[i + 1]]) for i in range(len(spans))]


def _folds_in_place(text: str, folded: str, spans: list[tuple[int, int]]) -> bool:
    """Whether each passage folded alone is the whole folded text's slice (the distinct
    passages folded at once: a text of many short ones paid a fold's fixed cost for each)."""
    parts = list(dict.fromkeys(text[a:b] for a, b in spans))
    alone = dict(zip(parts, _fold_each(parts), strict=True))
    return all(alone[text[a:b]] == folded[a:b] for a, b in spans)


def _sets_in_place(folded: str, spans: list[tuple[int, int]], w: int, seed: int) -> list[set[int]]:
    """The passages' shingle sets from the tokens of the whole folded text: no token crosses a
    passage's bounds (they fall on spaces, stops and line ends), so a passage's tokens are those
    that start inside it, and its shingles are the text's windows that lie inside it (or, below
    ``w`` tokens, one window over them all, as :func:`~sketch.features.combine_windows` makes)."""
    codes, cls = _codes_and_classes(folded)
    starts, tokens = _spans_and_hashes(codes, cls, seed)
    windows = combine_windows(tokens, w).tolist() if len(tokens) >= w else []
    first_at = np.searchsorted(starts, [a for a, _ in spans])
    last_at = np.searchsorted(starts, [b for _, b in spans])  # one past the last token
    # a passage of fewer than w tokens is one window over them all: those of each length are
    # combined at once (one numpy call per passage was most of the work on a text of many
    # short lines)
    short: dict[int, int] = {}
    sizes = last_at - first_at
    for k in range(1, w):
        at = np.flatnonzero(sizes == k)
        if len(at):
            gathered = np.stack([tokens[first_at[at] + j] for j in range(k)], axis=1)
            short.update(zip(at.tolist(), combine_rows(gathered).tolist(), strict=True))
    out = []
    for n, (i, j) in enumerate(zip(first_at.tolist(), last_at.tolist(), strict=True)):
        if j - i >= w:
            out.append(set(windows[i : j - w + 1]))
        else:
            out.append({short[n]} if n in short else set())
    return out


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
    my_sets: list[set[int]], their_sets: list[set[int]], budget: int
) -> list[tuple[int, int, int, int]]:
    """``(mine, theirs, shared, size)`` for each passage of mine that at least half of its
    shingles share with one earlier passage: the earlier passage sharing the most (the first,
    on a tie). Work bounded by ``budget`` look-ups, in time near-linear in the texts whatever
    they repeat: identical earlier passages count once (only the first can win), identical
    passages of mine are paired once, and a shingle found in many earlier passages is looked
    up in those that its passage's rarer shingles found, listed whole only when those could
    not decide (a passage made of such shingles alone could win or tie)."""
    first: dict[frozenset[int], int] = {}
    for j, s in enumerate(their_sets):
        first.setdefault(frozenset(s), j)
    members = {j: key for key, j in first.items()}
    where: dict[int, list[int]] = {}
    for key, j in first.items():
        for h in key:
            where.setdefault(h, []).append(j)
    done: dict[frozenset[int], tuple[int, int] | None] = {}
    pairs: list[tuple[int, int, int, int]] = []
    spent = 0
    for i, s in enumerate(my_sets):
        key = frozenset(s)
        if key not in done:
            heavy = [h for h in key if len(where.get(h, ())) > _LIGHT]
            hits: dict[int, int] = {}
            for h in key:
                found = where.get(h, ())
                if len(found) <= _LIGHT:
                    spent += len(found)
                    for j in found:
                        hits[j] = hits.get(j, 0) + 1
            for j in hits:
                spent += len(heavy)
                hits[j] += sum(1 for h in heavy if h in members[j])
            best = max(hits.items(), key=lambda kv: (kv[1], -kv[0])) if hits else None
            if heavy and (best is None or best[1] <= len(heavy)):
                for h in heavy:
                    spent += len(where[h])
                    for j in where[h]:
                        if j not in hits:
                            spent += len(key)
                            hits[j] = sum(1 for x in key if x in members[j])
                best = max(hits.items(), key=lambda kv: (kv[1], -kv[0])) if hits else None
            done[key] = best
        got = done[key]
        if got is not None and 2 * got[1] >= len(s):
            pairs.append((i, got[0], got[1], len(s)))
        if spent > budget:
            break
    return pairs


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
    mine, theirs = passages(new, PASSAGES_READ), passages(earlier, PASSAGES_READ)
    my_sets, their_sets = _sets(new, mine, w, seed), _sets(earlier, theirs, w, seed)
    size = sum(map(len, my_sets)) + sum(map(len, their_sets))
    pairs = _pairs(my_sets, their_sets, WORK_PER_SHINGLE * size + WORK_FLOOR)
    runs: list[list[tuple[int, int, int, int]]] = []
    for p in pairs:
        last = runs[-1][-1] if runs else None
        if last is not None and p[0] == last[0] + 1 and p[1] in (last[1], last[1] + 1):
            runs[-1].append(p)
        else:
            runs.append([p])
    spans = [
        Span(
            mine[run[0][0]][0],
            mine[run[-1][0]][1],
            theirs[run[0][1]][0],
            theirs[run[-1][1]][1],
            round(sum(p[2] for p in run) / sum(p[3] for p in run), 4),
        )
        for run in runs
    ]
    spans.sort(key=lambda s: (-(s.end - s.start), s.start))
    return sorted(spans[:limit], key=lambda s: s.start)
