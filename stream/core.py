"""Which core does the numeric work: the compiled one (``neardup._core``, the Rust crate in
``core/``) when it was built, else the pure-Python reference in :mod:`neardup.sketch`.

``NEARDUP_CORE=python`` forces the reference (to compare the two, or to rule the compiled one
out). Where the compiled core is absent and not ruled out, the first batch says so once in the
log; nothing is said on import. Both give exactly the same results
(``tests/stream/test_core.py``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import cache
from types import ModuleType

import numpy as np
import numpy.typing as npt

from neardup.sketch import features, lines, sets
from neardup.sketch.features import DEFAULT_SEED
from neardup.sketch.minhash import MinHasher
from neardup.sketch.simhash import DEFAULT_SEED as SIMHASH_SEED

ENV = "NEARDUP_CORE"
COMPILED, REFERENCE = "compiled", "python reference"
log = logging.getLogger(__name__)
_said = False


@cache
def compiled() -> ModuleType | None:
    """The compiled core's module, or None when it is absent or ``NEARDUP_CORE=python``."""
    if os.environ.get(ENV, "").strip().lower() == "python":
        return None
    try:
        from neardup import _core  # built from core/ where cargo was found (setup.py)
    except ImportError:
        return None
    module: ModuleType = _core
    return module


def forced() -> bool:
    """Whether ``NEARDUP_CORE=python`` rules the compiled core out."""
    return os.environ.get(ENV, "").strip().lower() == "python"


def name() -> str:
    """The core in use, as ``neardup --version`` names it."""
    return COMPILED if compiled() is not None else REFERENCE


def _in_use() -> ModuleType | None:
    """:func:`compiled`, saying once (in the log, at first use) that it is absent."""
    global _said
    kernel = compiled()
    if kernel is None and not _said and not forced():
        _said = True
        log.warning(
            "neardup: the compiled core is not built, so the slower python reference is in use; "
            "install cargo (Rust), then reinstall neardup to build it (NEARDUP_CORE=python "
            "chooses the reference and silences this)"
        )
    return kernel


def sketch_sets(
    hasher: MinHasher,
    hashes: npt.NDArray[np.uint64],
    offsets: npt.NDArray[np.intp],
    docs: Sequence[int],
) -> sets.SetSketches:
    """:func:`neardup.sketch.sets.sketch_sets`, by the core in use."""
    kernel = _in_use()
    if kernel is None:
        return sets.sketch_sets(hasher, hashes, offsets, docs)
    sigs, fps, s32, off32 = kernel.sketch_sets(
        np.ascontiguousarray(hashes, dtype=np.uint64),
        np.ascontiguousarray(offsets, dtype=np.int64),
        np.asarray(docs, dtype=np.int64),
        hasher.num_perm,
        hasher.seed,
        hasher.scheme == "kperm",
        SIMHASH_SEED,
    )
    return sets.SetSketches(sigs, fps, s32, off32.tolist())


def text_features(
    hasher: MinHasher,
    folded: features.TextBatch,
    *,
    w: int,
    seed: int,
    min_tokens: int,
    passages: sets.Passages,
) -> sets.TextFeatures:
    """:func:`neardup.sketch.sets.text_features`, by the core in use: the compiled one
    folds white space, tokenizes, shingles and sketches a batch in one call, reading the
    reference's white space and classes of code points
    (:func:`neardup.sketch.features.space_table`, :func:`~neardup.sketch.features.bmp_classes`
    and the classes of those past the BMP the batch holds), never Unicode data of its own."""
    kernel = _in_use()
    if kernel is None:
        return sets.text_features(
            hasher, folded, w=w, seed=seed, min_tokens=min_tokens, passages=passages
        )
    codes = np.ascontiguousarray(folded.codes)
    astral: npt.NDArray[np.uint32] = np.empty(0, np.uint32)
    if codes.dtype == np.uint32:  # the code points past the BMP it holds, classified here
        wide = codes.view(np.uint32)
        astral = np.unique(wide[wide >= 0x10000])
    norm, hashes, offsets, long, sketched, found, found_off, runs = kernel.text_features(
        codes,
        np.ascontiguousarray(folded.starts, dtype=np.int64),
        np.ascontiguousarray(folded.ends, dtype=np.int64),
        features.space_table(),
        features.bmp_classes(),
        astral,
        features.code_classes(astral),
        w,
        seed & 0xFFFFFFFFFFFFFFFF,
        min_tokens,
        hasher.num_perm,
        hasher.seed,
        hasher.scheme == "kperm",
        SIMHASH_SEED,
        *passages,
    )
    sigs, fps, s32, off32 = sketched
    sketches = sets.SetSketches(sigs, fps, s32, off32.tolist())
    batch = features.TextBatch(*norm)
    return sets.TextFeatures(
        batch, hashes, offsets, long.tolist(), sketches, found, found_off.tolist(), runs
    )


def char_sketches(
    hasher: MinHasher, texts: Sequence[str], *, n: int, seed: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """:func:`neardup.sketch.sets.char_sketches`, by the core in use (the compiled one: one
    call for the batch's short texts)."""
    kernel = _in_use()
    if kernel is None:
        return sets.char_sketches(hasher, texts, n=n, seed=seed)
    batch = features.TextBatch.of(texts)
    sigs, sizes = kernel.char_sketches(
        batch.codes,
        batch.starts.astype(np.int64),
        batch.ends.astype(np.int64),
        n,
        seed & 0xFFFFFFFFFFFFFFFF,
        hasher.num_perm,
        hasher.seed,
        hasher.scheme == "kperm",
    )
    return sigs, sizes


def sketch_one(
    hasher: MinHasher, windows: npt.NDArray[np.uint64]
) -> tuple[npt.NDArray[np.uint64], int, npt.NDArray[np.uint32]]:
    """:func:`neardup.sketch.sets.sketch_one`, by the core in use."""
    kernel = _in_use()
    if kernel is None:
        return sets.sketch_one(hasher, windows)
    found = sketch_sets(hasher, windows, np.array([0, len(windows)], np.intp), [0])
    return found.signatures[0], int(found.simhashes[0]), found.shingles


_U32 = 0xFFFFFFFF
_BOUND = 1 << 62


def lines_of_many(
    texts: Sequence[str],
    sources: Sequence[str],
    seed: int = DEFAULT_SEED,
    *,
    min_tokens: int = 1,
    max_tokens: int = 0,
) -> list[lines.Lines]:
    """:func:`neardup.sketch.lines.lines_of` of each ``texts[i]`` under ``sources[i]``, by the
    core in use: the ASCII texts in one call of the compiled core, the others (and bounds it
    does not take: a seed outside mmh3's 32 bits raises there) by the reference. A text that
    is not ASCII is normalised by NFKC and casefolding, which the compiled core leaves to the
    reference (docs/core.md)."""
    if len(texts) != len(sources):
        raise ValueError("one source per text")
    kernel = _in_use()
    if (
        kernel is None
        or not 0 <= seed <= _U32
        or not 0 <= max_tokens <= _U32
        or not -_BOUND < min_tokens < _BOUND
    ):
        return [
            lines.lines_of(t, s, seed, min_tokens=min_tokens, max_tokens=max_tokens)
            for t, s in zip(texts, sources, strict=True)
        ]
    ascii_at = [i for i, t in enumerate(texts) if t.isascii()]
    heads: dict[str, bytes] = {}
    for i in ascii_at:
        if sources[i] not in heads:
            heads[sources[i]] = lines.source_key(sources[i], seed)
    found = kernel.line_keys(
        [texts[i] for i in ascii_at],
        [heads[sources[i]] for i in ascii_at],
        seed,
        min_tokens,
        max_tokens,
        lines.LINES_READ,
        lines.LINE_KEY_CHARS,
    )
    out: list[lines.Lines | None] = [None] * len(texts)
    for i, (spans, keys) in zip(ascii_at, found, strict=True):
        out[i] = lines.Lines(spans, keys)
    return [
        got
        if got is not None
        else lines.lines_of(t, s, seed, min_tokens=min_tokens, max_tokens=max_tokens)
        for got, t, s in zip(out, texts, sources, strict=True)
    ]


__all__ = [
    "COMPILED",
    "ENV",
    "REFERENCE",
    "char_sketches",
    "compiled",
    "forced",
    "lines_of_many",
    "name",
    "sketch_one",
    "sketch_sets",
    "text_features",
]
