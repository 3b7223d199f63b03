"""Ragged batches: many documents' values in one flat array, document ``i`` owning
``values[offsets[i]:offsets[i + 1]]``.

A batch laid out this way costs numpy's per-call overhead once per batch instead of once per
document, which is what makes sketching a batch of short texts fast. These helpers turn the
shingle hashes of a batch into the per-document sets that the sketches and the records need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
Offsets = npt.NDArray[np.intp]

_LOW32 = np.uint64(0xFFFFFFFF)
_DOC_SHIFT = np.uint64(32)


def segment_offsets(sizes: Sequence[int] | Offsets) -> Offsets:
    """``[0, s0, s0 + s1, ...]``: the offsets of consecutive segments of these sizes."""
    off = np.zeros(len(sizes) + 1, dtype=np.intp)
    np.cumsum(sizes, out=off[1:])
    return off


class DocSets(NamedTuple):
    """Chosen documents' values, sorted, with and without repeats (two ragged arrays)."""

    unique: U64  # each document's sorted unique values
    unique_offsets: Offsets
    repeated: U64  # each document's values sorted, repeats kept: their runs are term frequencies
    repeated_offsets: Offsets


def unique_per_doc(values: U64, value_offsets: Offsets, docs: Sequence[int]) -> DocSets:
    """Sorted (unique) values of the documents ``docs``, in that order.

    One sort per document, which numpy does fast; duplicates are then found for the whole batch
    at once, a document's first value always counting as new even if the previous document
    ended with the same value. Every chosen document must have at least one value.
    """
    sizes = np.diff(value_offsets)[list(docs)]
    woff = segment_offsets(sizes)
    windows = np.concatenate(
        [np.sort(values[value_offsets[i] : value_offsets[i + 1]]) for i in docs]
    )
    first = np.ones(len(windows), dtype=bool)
    first[1:] = windows[1:] != windows[:-1]
    first[woff[:-1]] = True
    running = np.cumsum(first)
    uoff = np.zeros(len(docs) + 1, dtype=np.intp)
    uoff[1:] = running[woff[1:] - 1]
    return DocSets(windows[first], uoff, windows, woff)


def truncated_sets(values: U64, value_offsets: Offsets) -> tuple[npt.NDArray[np.uint32], list[int]]:
    """Each document's values truncated to their low 32 bits, sorted and unique, as a ragged
    ``(values, offsets)``; one sort for the whole batch, the document number sitting above the
    32 bits of each key."""
    n = len(value_offsets) - 1
    doc = np.repeat(np.arange(n, dtype=np.uint64), np.diff(value_offsets))
    key = (doc << _DOC_SHIFT) | (values & _LOW32)
    key.sort()
    keep = np.ones(len(key), dtype=bool)
    keep[1:] = key[1:] != key[:-1]
    key = key[keep]
    counts = np.bincount((key >> _DOC_SHIFT).astype(np.intp), minlength=n)
    return key.astype(np.uint32), segment_offsets(counts).tolist()


__all__ = ["DocSets", "segment_offsets", "truncated_sets", "unique_per_doc"]
