"""SimHash: fixed scheme, tie rule, weights, and the random-hyperplane law E[d] = f·θ/π."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.sketch.features import mix64
from neardup.sketch.simhash import (
    DEFAULT_SEED,
    _popcount64_table,
    hamming,
    hamming_many,
    simhash,
    simhash_many,
)

U64_MAX = (1 << 64) - 1
PHI = 0x9E3779B97F4A7C15
ARANGE = np.arange(1, 101, dtype=np.uint64)

u64 = st.integers(min_value=0, max_value=U64_MAX)


def _word(h: int, j: int = 0, seed: int = DEFAULT_SEED) -> int:
    """The documented per-feature word: mix64(h ^ mix64(seed + (j + 1)·φ))."""
    key = mix64(np.array([(seed + (j + 1) * PHI) & U64_MAX], dtype=np.uint64))
    return int(mix64(np.array([h], dtype=np.uint64) ^ key)[0])


def test_golden_values() -> None:
    """Computed once; a change here is a scheme change that invalidates stored fingerprints."""
    assert simhash(ARANGE) == 0x585D817A7AF0E151
    assert simhash(ARANGE, bits=128) == 0x493CF742F0619880585D817A7AF0E151
    assert simhash(ARANGE, np.arange(100, 0, -1)) == 0xD21DC15236F4C751
    assert simhash(ARANGE, np.linspace(0.5, 2.0, 100)) == 0x795D836A78F0E051
    assert simhash(ARANGE, seed=1) == 0x2511556A14E5A226


@given(h=u64, seed=u64)
def test_single_feature_is_its_mixed_word(h: int, seed: int) -> None:
    one = np.array([h], dtype=np.uint64)
    assert simhash(one, seed=seed) == _word(h, 0, seed)
    assert simhash(one, bits=128, seed=seed) == _word(h, 0, seed) | _word(h, 1, seed) << 64


@given(st.lists(u64, max_size=60))
def test_identical_input_identical_fingerprint(values: list[int]) -> None:
    h = np.array(values, dtype=np.uint64)
    w = np.arange(1, len(values) + 1, dtype=np.int64)
    perm = np.random.default_rng(len(values)).permutation(len(values))
    assert simhash(h, w) == simhash(h.copy(), w.copy())
    assert simhash(h, w) == simhash(h[perm], w[perm])  # integer weights: order-free, exact


def test_empty_is_zero() -> None:
    empty = np.empty(0, dtype=np.uint64)
    assert simhash(empty) == 0
    assert simhash(empty, np.empty(0), bits=128) == 0


def test_weights_matter() -> None:
    """A feature heavier than all others together dictates every bit."""
    h = np.array([11, 22, 33], dtype=np.uint64)
    fps = {simhash(h, w) for w in ([5, 1, 1], [1, 5, 1], [1, 1, 5])}
    assert fps == {_word(11), _word(22), _word(33)}
    assert simhash(h, [5.0, 1.0, 1.0]) == _word(11)
    assert simhash(h, [2, 2, 2]) == simhash(h)  # only the direction of w matters


@given(a=u64, b=u64)
def test_tie_rule_zero_accumulator_gives_zero_bit(a: int, b: int) -> None:
    """Two unit features: where their words disagree the accumulator is exactly 0 -> bit 0.

    So the fingerprint is the AND of the two words, for integer and float weights alike.
    """
    h = np.array([a, b], dtype=np.uint64)
    assert simhash(h) == _word(a) & _word(b)
    assert simhash(h, [1.5, 1.5]) == _word(a) & _word(b)
    assert simhash(h, [1, -1]) == _word(a) & ~_word(b) & U64_MAX


def test_128_bits_extends_64() -> None:
    rng = np.random.default_rng(3)
    h = rng.integers(0, U64_MAX, 500, dtype=np.uint64, endpoint=True)
    w = rng.uniform(0.1, 3.0, 500)
    fp64, fp128 = simhash(h, w), simhash(h, w, bits=128)
    assert fp128 & U64_MAX == fp64
    assert fp128.bit_length() <= 128
    assert fp128 >> 64 != fp64  # the second word is drawn independently
    assert simhash(h, w, bits=256) & ((1 << 128) - 1) == fp128


def test_seed_is_injected() -> None:
    assert simhash(ARANGE, seed=5) == simhash(ARANGE, seed=5)
    assert simhash(ARANGE, seed=5) != simhash(ARANGE, seed=6)


def test_rejects_bad_input() -> None:
    with pytest.raises(TypeError):
        simhash(np.arange(3, dtype=np.int64))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        simhash(ARANGE, np.ones(3))
    with pytest.raises(ValueError, match="multiple of 64"):
        simhash(ARANGE, bits=32)
    with pytest.raises(ValueError, match="finite"):
        simhash(ARANGE[:2], [1.0, math.nan])
    with pytest.raises(ValueError, match="seed"):
        simhash(ARANGE, seed=-1)
    with pytest.raises(ValueError, match="too large"):
        simhash(ARANGE[:2], [2**62, 2**62])


def _pair_at_known_angle(
    shared: int, only: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """Two weighted vectors over 2,000 distinct hashes, and their exact angle.

    ``shared`` features are in both (with related but unequal weights), ``only`` in each alone.
    Weights are irregular floats, so no accumulator sits on a tie.
    """
    rng = np.random.default_rng(seed)
    h = np.unique(rng.integers(0, U64_MAX, 4 * (shared + 2 * only), dtype=np.uint64))
    h = rng.permutation(h)[: shared + 2 * only]
    s, a_only, b_only = h[:shared], h[shared : shared + only], h[shared + only :]
    ws = rng.uniform(0.5, 2.0, shared)
    ws_b = ws * rng.uniform(0.8, 1.25, shared)
    wa, wb = rng.uniform(0.5, 2.0, only), rng.uniform(0.5, 2.0, only)
    a_w, b_w = np.concatenate([ws, wa]), np.concatenate([ws_b, wb])
    cos = float(ws @ ws_b / math.sqrt(float(a_w @ a_w) * float(b_w @ b_w)))
    return np.concatenate([s, a_only]), a_w, np.concatenate([s, b_only]), b_w, math.acos(cos)


@pytest.mark.parametrize("bits", [64, 128])
@pytest.mark.parametrize(("shared", "only"), [(1400, 300), (1000, 500), (400, 800)])
def test_random_hyperplane_property(bits: int, shared: int, only: int) -> None:
    """Mean Hamming distance over S seeds is f·θ/π.

    Each of the S·f bits differs independently with p = θ/π, so the mean distance over S
    fingerprint pairs has standard deviation sqrt(f·p·(1-p)/S); we allow 5 of them
    (two-sided false-alarm rate 6e-7 per case). The ±1 (not Gaussian) hyperplanes add an
    O(1/n) bias for n = 2,000 symmetric terms, far below that.
    """
    a, a_w, b, b_w, theta = _pair_at_known_angle(shared, only, seed=shared)
    n_seeds = 250
    dists = [
        hamming(simhash(a, a_w, bits, seed=s), simhash(b, b_w, bits, seed=s))
        for s in range(n_seeds)
    ]
    p = theta / math.pi
    sd = math.sqrt(bits * p * (1 - p) / n_seeds)
    assert abs(float(np.mean(dists)) - bits * p) <= 5 * sd


def test_hamming_basics() -> None:
    assert hamming(0, U64_MAX) == 64
    assert hamming(0b1011, 0b0110) == 3
    assert hamming(1 << 127, 0) == 1
    with pytest.raises(ValueError):
        hamming(-1, 0)


@settings(max_examples=200)
@given(fp=u64, others=st.lists(u64, max_size=50))
def test_hamming_many_agrees_with_hamming(fp: int, others: list[int]) -> None:
    arr = np.array(others, dtype=np.uint64)
    expected = [hamming(fp, o) for o in others]
    assert hamming_many(fp, arr).tolist() == expected
    assert _popcount64_table(arr ^ np.array([fp], dtype=np.uint64)).tolist() == expected


def test_hamming_many_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        hamming_many(1 << 64, ARANGE)
    with pytest.raises(TypeError):
        hamming_many(0, np.arange(3, dtype=np.int64))  # type: ignore[arg-type]


docs_st = st.lists(
    st.lists(st.tuples(u64, st.integers(min_value=0, max_value=5)), max_size=40), max_size=12
)


@settings(max_examples=150, deadline=None)
@given(docs_st, st.integers(min_value=0, max_value=U64_MAX))
def test_simhash_many_equals_simhash_per_document(
    docs: list[list[tuple[int, int]]], seed: int
) -> None:
    """The batch path (byte histograms) gives exactly ``simhash`` of each document, empty
    documents and zero weights (ties) included, weighted or with repeats as weights."""
    hashes = np.array([h for d in docs for h, _ in d], dtype=np.uint64)
    weights = np.array([w for d in docs for _, w in d], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.intp)
    got = simhash_many(hashes, weights, offsets, seed=seed).tolist()
    want = [
        simhash(np.array([h for h, _ in d], dtype=np.uint64), [w for _, w in d], seed=seed)
        for d in docs
    ]
    assert got == want
    repeated = [[h for h, w in d for _ in range(w)] for d in docs]
    flat = np.array([h for d in repeated for h in d], dtype=np.uint64)
    rep_off = np.concatenate([[0], np.cumsum([len(d) for d in repeated])]).astype(np.intp)
    assert simhash_many(flat, None, rep_off, seed=seed).tolist() == want


def test_simhash_many_blocks_and_refusals() -> None:
    """Documents longer than one run of counters, many weighted documents (several histogram
    blocks), and negative weights refused."""
    rng = np.random.default_rng(3)
    sizes = rng.integers(0, 3000, size=40)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    hashes = rng.integers(0, 2**63, size=int(offsets[-1]), dtype=np.uint64)
    got = simhash_many(hashes, None, offsets).tolist()
    assert got == [simhash(hashes[a:b]) for a, b in itertools.pairwise(offsets)]
    small = np.concatenate([[0], np.cumsum(rng.integers(0, 6, size=300))]).astype(np.intp)
    w = rng.integers(0, 4, size=int(small[-1]))
    got = simhash_many(hashes[: small[-1]], w, small).tolist()  # 300 documents: two blocks
    want = [simhash(hashes[a:b], w[a:b]) for a, b in itertools.pairwise(small)]
    assert got == want
    with pytest.raises(ValueError, match="non-negative"):
        simhash_many(hashes[:2], np.array([1, -1]), np.array([0, 2]))
