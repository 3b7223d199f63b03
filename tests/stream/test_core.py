"""The compiled core (``neardup._core``, the Rust crate in ``core/``) gives exactly what the
pure-Python reference gives: generated shingle batches of every shape the policy allows, and
real text (Reuters stories, Chinese reviews) through the whole of ``prepare``.

``make test`` and ``make unit`` set ``NEARDUP_REQUIRE_CORE=1``: this module then fails when the
compiled core was not built. Without it, the comparisons skip and say how to build it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.data import reuters, zh_reviews
from neardup.sketch import features, sets
from neardup.sketch.minhash import EMPTY, MinHasher
from neardup.stream import core
from neardup.stream.engine.prepare import Prepared, prepare
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy
from tests.stream.compiled_core import HOW, REQUIRED, import_compiled, same_prepared

Offsets = npt.NDArray[np.intp]


def test_the_compiled_core_is_built_when_required() -> None:
    """Under ``make test`` the compiled core must be there: a missing one is a failure."""
    if not REQUIRED:
        pytest.skip("NEARDUP_REQUIRE_CORE is not set (make test and make unit set it)")
    assert import_compiled() is not None, HOW
    # in use unless NEARDUP_CORE=python asks for the reference (the suite on the reference)
    assert core.name() == (core.REFERENCE if core.forced() else core.COMPILED)


@pytest.fixture(autouse=True)
def _fresh_choice() -> Iterator[None]:
    """The core in use is cached per process: chosen again after each test, once its
    environment is restored (autouse: torn down after ``monkeypatch``)."""
    yield
    core.compiled.cache_clear()


def _compiled_sketches(
    kernel: ModuleType,
    hasher: MinHasher,
    hashes: npt.NDArray[np.uint64],
    offsets: Offsets,
    docs: list[int],
) -> sets.SetSketches:
    sigs, fps, s32, off32 = kernel.sketch_sets(
        hashes,
        offsets.astype(np.int64),
        np.array(docs, np.int64),
        hasher.num_perm,
        hasher.seed,
        hasher.scheme == "kperm",
        core.SIMHASH_SEED,
    )
    return sets.SetSketches(sigs, fps, s32, off32.tolist())


def _assert_same(a: sets.SetSketches, b: sets.SetSketches) -> None:
    assert a.signatures.dtype == b.signatures.dtype == np.uint64
    assert a.signatures.shape == b.signatures.shape
    assert np.array_equal(a.signatures, b.signatures)
    assert a.simhashes.dtype == b.simhashes.dtype == np.uint64
    assert np.array_equal(a.simhashes, b.simhashes)
    assert a.shingles.dtype == b.shingles.dtype == np.uint32
    assert np.array_equal(a.shingles, b.shingles)
    assert list(a.shingle_offsets) == list(b.shingle_offsets)


# values that meet the edge cases of the arithmetic: 0, the all-ones sentinel, the 32-bit cut
EDGES = [0, 1, 0xFFFFFFFF, 0x100000000, 2**63, 2**64 - 2, 2**64 - 1]
value = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from(EDGES), st.integers(0, 40))
document = st.lists(value, max_size=60)
seeds = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 0x6E656172, 2**64 - 1]))
# the largest k with kperm only: the reference's one-permutation densification probes a nearly
# empty signature in rounds whose width doubles, about k x k steps at once for one shingle
# (34 GB at k = 65535)
hasher_args = st.one_of(
    st.tuples(
        st.one_of(st.integers(1, 300), st.sampled_from([1, 2, 128, 256])),
        seeds,
        st.sampled_from(["oph", "kperm"]),
    ),
    st.tuples(st.just(0xFFFF), seeds, st.just("kperm")),
)


def _ragged(docs: list[list[int]]) -> tuple[npt.NDArray[np.uint64], Offsets]:
    flat = np.array([v for d in docs for v in d], dtype=np.uint64)
    offsets = np.zeros(len(docs) + 1, dtype=np.intp)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    return flat, offsets


@given(st.lists(document, min_size=1, max_size=8), hasher_args, st.data())
@example([[]], (128, 0x6E656172, "oph"), None)  # an empty document
@example([[5]], (128, 0x6E656172, "oph"), None)  # one shingle: one filled bin, 127 copies
@example([[7] * 300 + [8]], (64, 1, "oph"), None)  # repeats: the fingerprint counts them
@example([[0, 2**64 - 1], [1]], (0xFFFF, 2**64 - 1, "kperm"), None)  # the largest k
def test_the_kernel_equals_the_reference_on_generated_batches(
    kernel: ModuleType,
    docs: list[list[int]],
    args: tuple[int, int, str],
    data: st.DataObject | None,
) -> None:
    """Any batch, any chosen documents (in any order, repeated), any k, seed and scheme: the
    batch reference where it applies (documents with shingles), the one-text reference always."""
    k, seed, scheme = args
    if k == 0xFFFF and sum(map(len, docs)) > 8:
        docs = [d[:2] for d in docs[:2]]  # the largest k: a few rows (kperm is O(n k))
    hasher = MinHasher(k, seed=seed, scheme=scheme)  # type: ignore[arg-type]
    hashes, offsets = _ragged(docs)
    every = list(range(len(docs)))
    chosen = data.draw(st.lists(st.sampled_from(every), max_size=12)) if data else every
    got = _compiled_sketches(kernel, hasher, hashes, offsets, chosen)
    full = [i for i in chosen if docs[i]]
    if full:
        _assert_same(
            _compiled_sketches(kernel, hasher, hashes, offsets, full),
            sets.sketch_sets(hasher, hashes, offsets, full),
        )
    for j, i in enumerate(chosen):
        sig, fp, shingles = sets.sketch_one(hasher, np.array(docs[i], dtype=np.uint64))
        assert np.array_equal(got.signatures[j], sig)
        assert int(got.simhashes[j]) == fp
        lo, hi = got.shingle_offsets[j], got.shingle_offsets[j + 1]
        assert np.array_equal(got.shingles[lo:hi], shingles)
        if not docs[i]:
            assert (got.signatures[j] == EMPTY).all() and fp == 0


def test_huge_documents_and_ties(kernel: ModuleType) -> None:
    """Past the 255-feature runs of the fingerprint's counters, and an even count whose bits
    tie (a tie gives 0): 70,000 shingles, half of them one value."""
    rng = np.random.default_rng(45)
    big = rng.integers(0, 2**64, 70_000, dtype=np.uint64, endpoint=False)
    big[::2] = big[1]
    tie = np.array([3, 3, 9, 9], dtype=np.uint64)
    hashes = np.concatenate([big, tie, big[:1000]])
    offsets = np.array([0, 70_000, 70_004, 71_004], dtype=np.intp)
    for hasher in (MinHasher(128, seed=0x6E656172), MinHasher(200, seed=3, scheme="kperm")):
        _assert_same(
            _compiled_sketches(kernel, hasher, hashes, offsets, [0, 1, 2]),
            sets.sketch_sets(hasher, hashes, offsets, [0, 1, 2]),
        )


def test_bad_batches_raise_not_crash(kernel: ModuleType) -> None:
    hashes = np.arange(4, dtype=np.uint64)
    for offsets, docs in (([0, 2, 5], [0]), ([0, 3, 2, 4], [0]), ([1, 4], [0]), ([0, 4], [1])):
        with pytest.raises(ValueError):
            kernel.sketch_sets(
                hashes, np.array(offsets, np.int64), np.array(docs, np.int64), 8, 1, False, 1
            )
    with pytest.raises(ValueError):
        kernel.sketch_sets(
            hashes, np.array([0, 4], np.int64), np.array([0], np.int64), 0, 1, False, 1
        )


def _prepared(articles: list[Article], one_by_one: bool) -> list[Prepared]:
    policy = Policy()
    if one_by_one:  # the one-text path (/check, library calls)
        return [prepare(policy, [a])[0] for a in articles]
    return [
        p for lo in range(0, len(articles), 512) for p in prepare(policy, articles[lo : lo + 512])
    ]


@pytest.mark.parametrize("corpus", ["reuters", "zh_reviews"])
def test_prepare_is_the_same_with_either_core(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch, corpus: str
) -> None:
    """Real text through the whole of ``prepare``, batch and one-text paths: every sketch,
    bucket and recorded shingle equal under the compiled core and ``NEARDUP_CORE=python``."""
    rows = (reuters() if corpus == "reuters" else zh_reviews())[:1500]
    articles = [Article(str(r["id"]), str(r["text"])) for r in rows]
    monkeypatch.delenv(core.ENV, raising=False)
    core.compiled.cache_clear()
    assert core.name() == core.COMPILED
    fast = _prepared(articles, False), _prepared(articles[:200], True)
    monkeypatch.setenv(core.ENV, "python")
    core.compiled.cache_clear()
    try:
        assert core.name() == core.REFERENCE
        slow = _prepared(articles, False), _prepared(articles[:200], True)
    finally:
        monkeypatch.delenv(core.ENV)
        core.compiled.cache_clear()
    same_prepared(fast[0], slow[0])
    same_prepared(fast[1], slow[1])
    assert sum(p.kind.name == "LONG" for p in fast[0]) > 100  # the kernel's path was taken


def test_the_kernel_on_real_shingles(kernel: ModuleType) -> None:
    """Reuters and Chinese reviews' shingle hashes as prepare makes them, every document."""
    policy = Policy()
    for rows in (reuters()[:2000], zh_reviews()[:2000]):
        batch = features.normalize_batch([str(r["text"]) for r in rows])
        hashes, offsets = batch.shingle_hashes(w=policy.shingle_size, seed=policy.seed)
        docs = np.flatnonzero(np.diff(offsets) > 0).tolist()
        _assert_same(
            _compiled_sketches(kernel, policy.hasher, hashes, offsets, docs),
            sets.sketch_sets(policy.hasher, hashes, offsets, docs),
        )


def test_an_absent_core_is_said_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No compiled core (and not ruled out): one warning at the first batch, none after; the
    results are the reference's."""
    monkeypatch.setattr(core, "compiled", lambda: None)
    monkeypatch.setattr(core, "_said", False)
    monkeypatch.delenv(core.ENV, raising=False)
    hashes, offsets = _ragged([[1, 2, 3], [4]])
    hasher = MinHasher(16)
    with caplog.at_level(logging.WARNING, logger=core.__name__):
        got = core.sketch_sets(hasher, hashes, offsets, [0, 1])
        core.sketch_sets(hasher, hashes, offsets, [1])
        core.sketch_one(hasher, hashes)
    said = [r for r in caplog.records if r.name == core.__name__]
    assert len(said) == 1 and "python reference" in said[0].getMessage()
    _assert_same(got, sets.sketch_sets(hasher, hashes, offsets, [0, 1]))


def test_the_reference_forced_is_not_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(core.ENV, "python")
    monkeypatch.setattr(core, "_said", False)
    core.compiled.cache_clear()
    try:
        assert core.compiled() is None and core.name() == core.REFERENCE
        with caplog.at_level(logging.WARNING, logger=core.__name__):
            core.sketch_sets(MinHasher(16), *_ragged([[1, 2]]), [0])
        assert not [r for r in caplog.records if r.name == core.__name__]
    finally:
        monkeypatch.delenv(core.ENV)
        core.compiled.cache_clear()
