"""The sketches of a batch's shingle sets: per document, its MinHash signature, its SimHash
fingerprint and its shingles as a record keeps them (32-bit, sorted unique).

This is the pure-Python reference of the compiled core's first kernel (``neardup._core``,
:mod:`neardup.stream.core` chooses): the kernel's results are defined as this function's, and
the tests hold them equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from neardup.sketch import ragged, simhash, winnow
from neardup.sketch.digits import DigitRuns
from neardup.sketch.features import TextBatch, char_ngram_hashes, fold_spaces, sorted_unique
from neardup.sketch.minhash import EMPTY, MinHasher

U64 = npt.NDArray[np.uint64]


class SetSketches(NamedTuple):
    """Chosen documents' sketches, in the order they were chosen."""

    signatures: U64  # (documents, k)
    simhashes: U64  # 64-bit SimHash, repeated shingles weighing as term frequency
    shingles: npt.NDArray[np.uint32]  # each document's low 32 bits of its shingles, sorted unique
    shingle_offsets: list[int]  # document j owns shingles[offsets[j]:offsets[j + 1]]


def sketch_sets(
    hasher: MinHasher, hashes: U64, offsets: npt.NDArray[np.intp], docs: Sequence[int]
) -> SetSketches:
    """The sketches of the documents ``docs`` of a ragged batch of shingle hashes (document
    ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``, repeats kept). Every chosen document has
    at least one shingle (the reference's batch forms need it; the compiled kernel also takes
    empty ones, as :func:`sketch_one` does)."""
    sets = ragged.unique_per_doc(hashes, offsets, docs)
    sigs = hasher.signatures(sets.unique, sets.unique_offsets)
    fps = simhash.simhash_many(sets.repeated, None, sets.repeated_offsets)
    s32, off32 = ragged.truncated_sets(sets.unique, sets.unique_offsets)
    return SetSketches(sigs, fps, s32, off32)


class TextFeatures(NamedTuple):
    """A batch of texts normalised, their shingles, and the sketches of its long texts."""

    batch: TextBatch  # the normalised texts (:func:`neardup.sketch.features.normalize_batch`)
    hashes: U64  # every text's shingle hashes in token order, repeats kept, end to end
    offsets: npt.NDArray[np.intp]  # text i owns hashes[offsets[i]:offsets[i + 1]]
    long: list[int]  # the texts sketched: n > 0 shingles and n + w - 1 >= min_tokens
    sketches: SetSketches  # theirs, in that order
    passages: U64  # theirs (:func:`neardup.sketch.winnow.passages`), the smallest few of each
    passage_offsets: list[int]  # long text j owns passages[offsets[j]:offsets[j + 1]]
    digit_runs: DigitRuns  # the normalised batch's (its numbers and dates are read from them)


class Passages(NamedTuple):
    """How a long text's passages are read (:func:`neardup.sketch.winnow.passages_many`)."""

    width: int  # shingles a passage spans
    span: int  # passages a run of which keeps its smallest
    limit: int  # the smallest this many are kept


def text_features(
    hasher: MinHasher,
    folded: TextBatch,
    *,
    w: int,
    seed: int,
    min_tokens: int,
    passages: Passages,
) -> TextFeatures:
    """The texts of ``folded`` (their canonical forms,
    :func:`neardup.sketch.features.fold_batch`) normalised
    (:func:`~neardup.sketch.features.fold_spaces`), the shingles of each
    (:meth:`~neardup.sketch.features.TextBatch.shingle_hashes`), and the sketches
    (:func:`sketch_sets`) and passages (:func:`neardup.sketch.winnow.passages_many`) of its
    texts of at least ``min_tokens`` tokens: what the compiled core does in one call, so that
    nothing of a batch comes back to Python between its canonical form and its sketches."""
    batch = fold_spaces(folded)
    runs = batch.digit_runs()
    hashes, offsets = batch.shingle_hashes(w=w, seed=seed)
    n_windows = np.diff(offsets)
    long: list[int] = np.flatnonzero((n_windows + w - 1 >= min_tokens) & (n_windows > 0)).tolist()
    if not long:
        empty = np.empty((0, hasher.num_perm), np.uint64)
        none = SetSketches(empty, np.empty(0, np.uint64), np.empty(0, np.uint32), [0])
        nothing = np.empty(0, np.uint64)
        return TextFeatures(batch, hashes, offsets, long, none, nothing, [0], runs)
    found, found_off = winnow.passages_many(
        hashes, offsets, width=passages.width, span=passages.span, limit=passages.limit
    )
    kept = [found[found_off[i] : found_off[i + 1]] for i in long]
    return TextFeatures(
        batch,
        hashes,
        offsets,
        long,
        sketch_sets(hasher, hashes, offsets, long),
        np.concatenate(kept),
        ragged.segment_offsets([len(k) for k in kept]).tolist(),
        runs,
    )


def char_sketches(
    hasher: MinHasher, texts: Sequence[str], *, n: int, seed: int
) -> tuple[U64, npt.NDArray[np.int64]]:
    """The MinHash signatures of the character n-grams of each text less its spaces
    (:func:`neardup.sketch.features.char_ngram_hashes`; the short path's sets), and how many
    distinct n-grams each has: ``(signatures, sizes)``. A text with none has a row of
    :data:`~neardup.sketch.minhash.EMPTY` (it has no buckets)."""
    grams = [char_ngram_hashes(t.replace(" ", ""), n=n, seed=seed, normalized=True) for t in texts]
    sizes = np.array([len(g) for g in grams], dtype=np.int64)
    if not grams:
        return np.empty((0, hasher.num_perm), np.uint64), sizes
    sigs = hasher.signatures(np.concatenate(grams), ragged.segment_offsets(sizes))
    sigs[sizes == 0] = EMPTY
    return sigs, sizes


def sketch_one(hasher: MinHasher, windows: U64) -> tuple[U64, int, npt.NDArray[np.uint32]]:
    """One document's signature, fingerprint and recorded shingles: :func:`sketch_sets` of a
    batch of one, by the one-text forms (a batch's set-up was most of the time of one text)."""
    repeated = np.sort(np.asarray(windows, dtype=np.uint64))
    unique = sorted_unique(repeated)
    sig = hasher.signature(unique).values
    fp = simhash.simhash_one(repeated)
    return sig, fp, sorted_unique(unique & np.uint64(0xFFFFFFFF)).astype(np.uint32)


__all__ = [
    "Passages",
    "SetSketches",
    "TextFeatures",
    "char_sketches",
    "sketch_one",
    "sketch_sets",
    "text_features",
]
