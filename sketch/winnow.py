"""Winnowed passage fingerprints: what finds a text inside a longer one.

MinHash bands find pairs of about the same size: an article of 150 words inside a text of 450
has a Jaccard similarity of about a third, and the two seldom share a band. Containment needs a
sample of a text that every text containing it samples too. Winnowing (Schleimer, Wilkerson and
Aiken, 2003) gives one: hash every window of a few consecutive shingles (a passage of some eight
words), then keep the smallest hash of each run of ``span`` consecutive passages. A run that
lies inside the shorter text is a run of the longer one as well, so it keeps the same passage
there: the smallest passage of a text of at least ``span`` passages is kept by every text that
contains it, whatever surrounds it. Passages of eight words are rare outside the text they come
from (unlike single shingles, ``said it would``), so a shared one is a real lead.

Pure: :func:`passages` takes a text's shingle hashes in order (repeats kept).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup.sketch.features import combine_windows, sorted_unique

U64 = npt.NDArray[np.uint64]

__all__ = ["passages", "passages_many", "sliding_min"]


def sliding_min(values: U64, span: int) -> U64:
    """The smallest of every run of ``span`` consecutive values (``len(values) - span + 1`` of
    them), in a few passes whatever ``span`` (van Herk / Gil-Werman: the minima up to each
    place within blocks of ``span``, and from each place to its block's end, meet in one)."""
    n = len(values)
    if n < span:
        return np.empty(0, np.uint64)
    blocks = -(-n // span)
    padded = np.full(blocks * span, np.iinfo(np.uint64).max, dtype=np.uint64)
    padded[:n] = values
    rows = padded.reshape(blocks, span)
    ahead = np.minimum.accumulate(rows, axis=1).ravel()
    behind = np.minimum.accumulate(rows[:, ::-1], axis=1)[:, ::-1].ravel()
    return np.minimum(behind[: n - span + 1], ahead[span - 1 : n])


def passages(shingles: U64, *, width: int, span: int) -> U64:
    """The winnowed passage fingerprints of a text, sorted and unique: ``shingles`` are its
    shingle hashes in text order (repeats kept), a passage is ``width`` consecutive shingles,
    and each run of ``span`` consecutive passages keeps its smallest. A text of fewer than
    ``span`` passages keeps its smallest one; a text without shingles, none."""
    if width < 1 or span < 1:
        raise ValueError(f"width and span must be >= 1, got {width}, {span}")
    windows = combine_windows(shingles, width)
    if len(windows) <= span:
        return windows[[np.argmin(windows)]] if len(windows) else windows
    return sorted_unique(sliding_min(windows, span))


def passages_many(
    shingles: U64, offsets: npt.NDArray[np.intp], *, width: int, span: int, limit: int
) -> tuple[U64, npt.NDArray[np.intp]]:
    """:func:`passages` of many texts at once, the ``limit`` smallest of each: ``shingles``
    are all texts' shingle hashes laid end to end, text i owning
    ``shingles[offsets[i]:offsets[i + 1]]``. Returns ``(values, offsets)`` laid out the same
    way. A few passes of numpy for the batch (a call per text cost as much as its MinHash)."""
    if width < 1 or span < 1 or limit < 0:
        raise ValueError(f"width and span must be >= 1, limit >= 0: {width}, {span}, {limit}")
    sizes = np.diff(offsets)
    n_docs = len(sizes)
    out: list[tuple[U64, npt.NDArray[np.intp]]] = []
    few = np.flatnonzero((sizes > 0) & (sizes < width))
    for d in few.tolist():  # fewer shingles than a passage: one window over all of them
        kept = passages(shingles[offsets[d] : offsets[d + 1]], width=width, span=span)
        out.append((kept, np.full(len(kept), d, dtype=np.intp)))
    counts = np.where(sizes >= width, sizes - width + 1, 0)  # each text's passages
    if len(shingles) >= width and counts.any():
        doc_of = np.repeat(np.arange(n_docs, dtype=np.intp), sizes)
        starts = np.arange(len(shingles) - width + 1)
        inside = starts + width <= offsets[1:][doc_of[: len(starts)]]
        windows = combine_windows(shingles, width)[inside]
        wdoc = doc_of[: len(starts)][inside]
        woff = np.zeros(n_docs + 1, dtype=np.intp)
        np.cumsum(counts, out=woff[1:])
        if len(windows) >= span:  # runs of ``span`` passages of one text: their smallest
            mins = sliding_min(windows, span)
            first = np.arange(len(mins))
            run_doc = wdoc[: len(mins)]
            whole = first + span <= woff[1:][run_doc]
            mins, run_doc = mins[whole], run_doc[whole]
            fresh = np.ones(len(mins), dtype=bool)  # a minimum holds over many runs: once
            fresh[1:] = (mins[1:] != mins[:-1]) | (run_doc[1:] != run_doc[:-1])
            out.append((mins[fresh], run_doc[fresh]))
        some = np.flatnonzero(counts > 0)  # their passages start in increasing order
        small = counts[some] <= span
        if small.any():  # no more passages than a run: the smallest
            least = np.minimum.reduceat(windows, woff[some])
            out.append((least[small], some[small]))
    if not out:
        return np.empty(0, np.uint64), np.zeros(n_docs + 1, dtype=np.intp)
    values = np.concatenate([v for v, _ in out])
    docs = np.concatenate([d for _, d in out])
    order = np.lexsort((values, docs))
    values, docs = values[order], docs[order]
    fresh = np.ones(len(values), dtype=bool)
    fresh[1:] = (values[1:] != values[:-1]) | (docs[1:] != docs[:-1])
    values, docs = values[fresh], docs[fresh]
    first_of = np.searchsorted(docs, np.arange(n_docs))
    keep = np.arange(len(docs)) - first_of[docs] < limit
    values, docs = values[keep], docs[keep]
    result = np.zeros(n_docs + 1, dtype=np.intp)
    np.cumsum(np.bincount(docs, minlength=n_docs), out=result[1:])
    return values, result
