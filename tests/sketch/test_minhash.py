"""MinHash: unbiased on structured input, error at the binomial rate, refuses mixed schemes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.sketch.minhash import (
    EMPTY,
    MinHasher,
    SchemeMismatch,
    Signature,
    estimate_jaccard,
    estimate_jaccard_bbit,
    pack_bbit,
)
from neardup.sketch.verify import jaccard

K = 128
SEEDS = 400


def consecutive_pair(j: float, n: int = 300) -> tuple[np.ndarray, np.ndarray, float]:
    """Two runs of consecutive integers overlapping so that J(A, B) is as close to j as n allows.

    This is the structured input on which ``(a x + b) mod p`` MinHash is biased by 9-17%.
    """
    inter = round(2 * n * j / (1 + j))
    a = np.arange(n, dtype=np.uint64)
    b = np.arange(n - inter, 2 * n - inter, dtype=np.uint64)
    return a, b, inter / (2 * n - inter)


@pytest.mark.parametrize("scheme", ["oph", "kperm"])
@pytest.mark.parametrize("j", [0.2, 0.5, 0.8])
def test_unbiased_on_consecutive_integers(scheme: str, j: float) -> None:
    a, b, exact = consecutive_pair(j)
    est = np.array(
        [
            estimate_jaccard(
                MinHasher(K, seed=s, scheme=scheme).signature(a),  # type: ignore[arg-type]
                MinHasher(K, seed=s, scheme=scheme).signature(b),  # type: ignore[arg-type]
            )
            for s in range(SEEDS)
        ]
    )
    binomial_sd = math.sqrt(exact * (1 - exact) / K)
    assert abs(est.mean() - exact) < 0.01  # bias: 0.01 is > 5 standard errors of the mean here
    rmse = math.sqrt(float(np.mean((est - exact) ** 2)))
    # kperm is k independent samples: RMSE is the binomial rate. OPH samples bins without
    # replacement from one permutation, which can only lower the variance (by up to ~k/n).
    upper = 1.15 * binomial_sd
    lower = 0.85 * binomial_sd if scheme == "kperm" else 0.6 * binomial_sd
    assert lower < rmse < upper


def test_textbook_affine_hash_is_biased_where_ours_is_not() -> None:
    """The control: (a x + b) mod p without mixing really is biased on this input."""
    a, b, exact = consecutive_pair(0.5)
    p = (1 << 61) - 1
    rng = np.random.default_rng(7)
    ests = []
    for _ in range(SEEDS):
        ca = rng.integers(1, p, K, dtype=np.int64).astype(object)
        cb = rng.integers(0, p, K, dtype=np.int64).astype(object)
        ha = [
            min((x * int(m) + int(c)) % p for x in a.tolist()) for m, c in zip(ca, cb, strict=True)
        ]
        hb = [
            min((x * int(m) + int(c)) % p for x in b.tolist()) for m, c in zip(ca, cb, strict=True)
        ]
        ests.append(sum(u == v for u, v in zip(ha, hb, strict=True)) / K)
        if len(ests) == 40:
            break
    assert abs(float(np.mean(ests)) - exact) > 0.03


@given(
    st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300, unique=True),
    st.lists(st.integers(0, 2**64 - 1), max_size=300, unique=True),
    st.integers(0, 2**32),
)
@settings(max_examples=60, deadline=None)
def test_estimate_is_a_fraction_and_exact_for_identical_sets(
    a: list[int], extra: list[int], seed: int
) -> None:
    h = MinHasher(64, seed=seed)
    sa = h.signature(np.array(a, dtype=np.uint64))
    assert estimate_jaccard(sa, h.signature(np.array(a[::-1] + a, dtype=np.uint64))) == 1.0
    sb = h.signature(np.array(a + extra, dtype=np.uint64))
    est = estimate_jaccard(sa, sb)
    assert 0.0 <= est <= 1.0
    assert (est * 64) == int(est * 64)
    if not set(extra) - set(a):
        assert est == 1.0


def test_batch_signatures_equal_single() -> None:
    rng = np.random.default_rng(3)
    sets = [
        rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) for n in (0, 1, 5, 300, 2000)
    ]
    offsets = np.zeros(len(sets) + 1, dtype=np.intp)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    for scheme in ("oph", "kperm"):
        h = MinHasher(K, seed=11, scheme=scheme)  # type: ignore[arg-type]
        matrix = h.signatures(np.concatenate(sets), offsets)
        for row, s in zip(matrix, sets, strict=True):
            assert np.array_equal(row, h.signature(s).values)


def test_densification_fills_every_bin_of_a_tiny_set() -> None:
    sig = MinHasher(K).signature(np.array([1, 2, 3], dtype=np.uint64))
    assert not (sig.values == EMPTY).any()
    assert len(set(sig.values.tolist())) == 3  # every bin holds one of the three element minima


def test_empty_set() -> None:
    h = MinHasher(K)
    empty = h.signature(np.empty(0, dtype=np.uint64))
    assert empty.is_empty
    assert estimate_jaccard(empty, h.signature(np.arange(10, dtype=np.uint64))) == 0.0


def test_mismatched_schemes_refuse_to_compare() -> None:
    x = np.arange(100, dtype=np.uint64)
    base = MinHasher(K, seed=1).signature(x)
    for other in (
        MinHasher(K, seed=2),
        MinHasher(64, seed=1),
        MinHasher(K, seed=1, scheme="kperm"),
    ):
        with pytest.raises(SchemeMismatch):
            estimate_jaccard(base, other.signature(x))


def test_serialisation_round_trip_and_layout() -> None:
    sig = MinHasher(16, seed=5).signature(np.arange(50, dtype=np.uint64))
    raw = sig.to_bytes()
    assert raw[:4] == b"NDMH" and len(raw) == 16 + 16 * 8
    back = Signature.from_bytes(raw)
    assert np.array_equal(back.values, sig.values)
    assert (back.scheme, back.seed, back.num_perm) == ("oph", 5, 16)
    with pytest.raises(ValueError, match="magic"):
        Signature.from_bytes(b"XXXX" + raw[4:])


def test_golden_signature_is_stable_across_processes_and_machines() -> None:
    """Changing any hash silently would make every stored signature meaningless."""
    sig = MinHasher(8, seed=42).signature(np.arange(1, 101, dtype=np.uint64))
    assert sig.values.tolist() == GOLDEN_OPH
    sig = MinHasher(8, seed=42, scheme="kperm").signature(np.arange(1, 101, dtype=np.uint64))
    assert sig.values.tolist() == GOLDEN_KPERM


@pytest.mark.parametrize("b", [1, 2, 4, 8, 16])
def test_bbit_estimate_tracks_full_estimate(b: int) -> None:
    rng = np.random.default_rng(b)
    a = rng.integers(0, 2**63, 400, dtype=np.int64).astype(np.uint64)
    c = np.concatenate([a[:300], rng.integers(0, 2**63, 100, dtype=np.int64).astype(np.uint64)])
    exact = jaccard(np.unique(a), np.unique(c))
    ests = []
    for s in range(60):
        h = MinHasher(256, seed=s)
        sa, sc = h.signature(a), h.signature(c)
        ests.append(estimate_jaccard_bbit(pack_bbit(sa, b), pack_bbit(sc, b), b, 256))
        assert len(pack_bbit(sa, b)) == 256 * b // 8
    sd = math.sqrt(exact * (1 - exact) / 256) * (1 + 2.0**-b) / (1 - 2.0**-b)
    assert abs(float(np.mean(ests)) - exact) < 5 * sd / math.sqrt(60) + 0.01


GOLDEN_OPH = [
    152536359743089409,
    2363503209379803703,
    4905583579251210325,
    7043423673009810869,
    9532185857163565656,
    11535914747212895665,
    13864848482822561817,
    16213907793525484949,
]
GOLDEN_KPERM = [
    20181515101908358,
    58902086049715247,
    372140565880721620,
    73298034790030157,
    62623993705922503,
    391824456473549271,
    130655967050450932,
    335417391318069462,
]


@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=600).map(lambda v: np.array(v, np.uint64)),
    st.sampled_from([16, 128]),
)
@settings(max_examples=200, deadline=None)
def test_one_set_densified_as_the_batch_densifies_it(values: np.ndarray, k: int) -> None:
    """The one-set path fills empty bins in plain Python, the batch path in numpy: the same
    signature for every set size, a one-element set (most probes miss: the long way) included."""
    h = MinHasher(k, seed=5)
    offsets = np.array([0, len(values)], dtype=np.intp)
    assert np.array_equal(h.signatures(values, offsets)[0], h.signature(values).values)
