"""Exact similarities for verifying LSH candidates: a verdict never rests on a band collision.

Sets are sorted, unique uint64 arrays of shingle hashes (as
:func:`neardup.sketch.features.shingle_hashes` returns them); the functions assume it and do not
re-sort. Hashing shingles to 64 bits makes a false shingle match a ``~n**2 / 2**64`` event, so these
values are exact for any real text.

Empty sets: ``jaccard`` of two empty sets is 0.0, not the 1.0 of ``0/0 := 1``: a text with no
shingles carries no evidence that it copies anything, and the short-text path
(:func:`edit_similarity`) decides those texts instead.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from rapidfuzz.distance import Levenshtein

U64 = npt.NDArray[np.uint64]
# sorted unique sets: 64-bit hashes, or the 32-bit truncations records keep (same code)
Set = npt.NDArray[np.uint64] | npt.NDArray[np.uint32]
F64 = npt.NDArray[np.float64]


def intersection_size(a: Set, b: Set) -> int:
    """``|A ∩ B|`` by binary search of the smaller set in the larger: ``O(m log n)``."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if len(small) == 0:
        return 0
    idx = np.searchsorted(large, small)
    idx[idx == len(large)] = 0  # past the end: compare with any element, it cannot match
    return int(np.count_nonzero(large[idx] == small))


def jaccard(a: Set, b: Set) -> float:
    """``|A ∩ B| / |A ∪ B|`` with ``|A ∪ B| = |A| + |B| - |A ∩ B|``; 0.0 if either set is empty."""
    inter = intersection_size(a, b)
    union = len(a) + len(b) - inter
    return inter / union if union else 0.0


def containment(a: Set, b: Set) -> float:
    """``|A ∩ B| / |A|``: how much of ``a`` appears in ``b`` (asymmetric); 0.0 if ``a`` is empty.

    The measure for "does this short text copy part of a longer one", where Jaccard is diluted by
    the longer text's extra shingles.
    """
    return intersection_size(a, b) / len(a) if len(a) else 0.0


def cosine(hashes_a: U64, weights_a: F64, hashes_b: U64, weights_b: F64) -> float:
    """``Σ w_a w_b / (|w_a| |w_b|)`` over shared hashes, for sparse weighted vectors.

    Each vector is scaled by its largest weight first (no overflow for huge weights) and the
    norms are taken as ``sqrt(|w_a|² |w_b|²)``, so identical vectors give exactly 1.0. 0.0 when
    either vector is zero.
    """
    if len(hashes_a) != len(weights_a) or len(hashes_b) != len(weights_b):
        raise ValueError("each hash needs exactly one weight")
    wa = np.asarray(weights_a, dtype=np.float64)
    wb = np.asarray(weights_b, dtype=np.float64)
    scale_a = float(np.abs(wa).max()) if len(wa) else 0.0
    scale_b = float(np.abs(wb).max()) if len(wb) else 0.0
    if scale_a == 0.0 or scale_b == 0.0:
        return 0.0
    wa, wb = wa / scale_a, wb / scale_b
    _, ia, ib = np.intersect1d(hashes_a, hashes_b, assume_unique=True, return_indices=True)
    # np.sum of products (pairwise summation) in place of BLAS dot, whose summation order may
    # depend on memory alignment: identical vectors then give bit-identical dot and norms.
    dot = float(np.sum(wa[ia] * wb[ib]))
    norm2 = float(np.sum(wa * wa)) * float(np.sum(wb * wb))
    return max(-1.0, min(1.0, dot / math.sqrt(norm2)))


def edit_similarity(a: str, b: str) -> float:
    """Normalised Levenshtein similarity ``1 - d(a, b) / max(|a|, |b|)`` (unit costs).

    ``d`` counts single-character insertions, deletions and substitutions, so the value is the
    fraction of the longer string that survives; two empty strings are identical (1.0). Computed
    by ``rapidfuzz.distance.Levenshtein.normalized_similarity`` (bit-parallel, ``O(n m / 64)``).
    For short texts, where shingle sets are too small for a stable Jaccard.
    """
    return float(Levenshtein.normalized_similarity(a, b))


__all__ = [
    "containment",
    "cosine",
    "edit_similarity",
    "intersection_size",
    "jaccard",
]
