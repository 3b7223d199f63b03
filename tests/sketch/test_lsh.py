"""LSH: exact S-curve values, the (bands, rows) choices, band keys, and the S-curve measured."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from datasketch.lsh import _optimal_param as ds_optimal_param  # a dev dependency
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.sketch.lsh import (
    KEY_BYTES,
    band_hashes,
    band_keys,
    candidate_probability,
    false_candidate_area,
    false_negative_area,
    half_point,
    optimal_params,
    recall_at,
    recall_floor_params,
    s_curve_table,
)
from neardup.sketch.minhash import MinHasher, Scheme

U64 = npt.NDArray[np.uint64]


def _random_values(seed: int, n: int) -> U64:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)


# --- S-curve -------------------------------------------------------------------------------------


def test_candidate_probability_exact_values() -> None:
    assert candidate_probability(0.5, 2, 2) == 1 - 0.75**2
    assert candidate_probability(0.5, 1, 1) == 0.5
    assert candidate_probability(0.5, 1, 3) == 0.125
    assert candidate_probability(0.5, 3, 1) == 1 - 0.125
    assert candidate_probability(0.0, 20, 5) == 0.0
    assert candidate_probability(1.0, 20, 5) == 1.0
    assert recall_at(0.5, 2, 2) == 1 - 0.75**2
    assert isinstance(candidate_probability(0.3, 4, 4), float)


def test_candidate_probability_array_matches_scalar() -> None:
    s = np.linspace(0.0, 1.0, 101)
    p = candidate_probability(s, 16, 8)
    assert isinstance(p, np.ndarray)
    assert p.shape == s.shape
    assert [candidate_probability(float(x), 16, 8) for x in s] == p.tolist()
    assert np.all(np.diff(p) >= 0)


@pytest.mark.parametrize(("s", "bands", "rows"), [(-0.1, 2, 2), (1.5, 2, 2), (0.5, 0, 2)])
def test_candidate_probability_rejects_bad_input(s: float, bands: int, rows: int) -> None:
    with pytest.raises(ValueError):
        candidate_probability(s, bands, rows)


def test_half_point_exact_values() -> None:
    assert half_point(1, 1) == 0.5
    assert half_point(1, 3) == pytest.approx(0.5 ** (1 / 3), rel=1e-15)
    assert half_point(2, 1) == pytest.approx(1 - 2**-0.5, rel=1e-15)


@given(st.integers(1, 5000), st.integers(1, 300))
def test_half_point_is_where_p_is_one_half(bands: int, rows: int) -> None:
    s = half_point(bands, rows)
    assert 0.0 < s < 1.0
    assert candidate_probability(s, bands, rows) == pytest.approx(0.5, abs=1e-12)


def test_false_areas_exact_integrals() -> None:
    t = 0.7
    assert false_candidate_area(1, 1, t) == pytest.approx(t**2 / 2, abs=1e-14)
    assert false_candidate_area(1, 2, t) == pytest.approx(t**3 / 3, abs=1e-14)
    # P = 1 - (1 - s)**2 = 2 s - s**2
    assert false_candidate_area(2, 1, t) == pytest.approx(t**2 - t**3 / 3, abs=1e-14)

    # 1 - P = (1 - s**2)**3 = 1 - 3 s**2 + 3 s**4 - s**6
    def antiderivative(x: float) -> float:
        return x - x**3 + 3 * x**5 / 5 - x**7 / 7

    exact = antiderivative(1.0) - antiderivative(t)
    assert false_negative_area(3, 2, t) == pytest.approx(exact, abs=1e-14)
    assert false_candidate_area(5, 5, 0.0) == 0.0
    assert false_negative_area(5, 5, 1.0) == 0.0


def test_s_curve_table() -> None:
    table = s_curve_table(16, 8, 11)
    assert len(table) == 11
    assert table[0] == (0.0, 0.0)
    assert table[-1] == (1.0, 1.0)
    assert table[5] == (0.5, candidate_probability(0.5, 16, 8))
    assert s_curve_table(2, 2, [0.5]) == [(0.5, 1 - 0.75**2)]
    with pytest.raises(ValueError):
        s_curve_table(2, 2, 1)


# --- (bands, rows) choices -----------------------------------------------------------------------


def test_optimal_params_known_values() -> None:
    assert optimal_params(0.5, 128) == (25, 5)
    assert optimal_params(0.8, 128) == (9, 13)
    assert optimal_params(0.9, 128) == (5, 25)


@pytest.mark.parametrize("num_perm", [32, 128, 256])
def test_optimal_params_matches_datasketch(num_perm: int) -> None:
    for t in (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95):
        assert optimal_params(t, num_perm) == ds_optimal_param(t, num_perm, 0.5, 0.5)
    assert optimal_params(0.6, num_perm, 0.2, 0.8) == ds_optimal_param(0.6, num_perm, 0.2, 0.8)


def test_optimal_params_higher_threshold_more_rows() -> None:
    thresholds = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    params = [optimal_params(t, 128) for t in thresholds]
    rows = [r for _, r in params]
    assert rows == sorted(rows)
    assert rows[-1] > rows[0]
    assert all(b * r <= 128 for b, r in params)
    # The threshold sits near the curve's midpoint, not where recall is high.
    for t, (b, r) in zip(thresholds[2:], params[2:], strict=True):
        assert abs(half_point(b, r) - t) < 0.08


def test_optimal_params_weights_move_the_midpoint() -> None:
    balanced = half_point(*optimal_params(0.7, 128))
    recall_heavy = half_point(*optimal_params(0.7, 128, fp_weight=0.1, fn_weight=0.9))
    precision_heavy = half_point(*optimal_params(0.7, 128, fp_weight=0.9, fn_weight=0.1))
    assert recall_heavy < balanced < precision_heavy


def test_optimal_params_rejects_bad_input() -> None:
    for args in [(1.5, 128), (0.5, 0)]:
        with pytest.raises(ValueError):
            optimal_params(*args)
    with pytest.raises(ValueError):
        optimal_params(0.5, 128, 0.0, 0.0)


def test_recall_floor_params_known_value() -> None:
    b, r = recall_floor_params(0.8, 0.99, 128)
    assert (b, r) == (16, 6)
    assert candidate_probability(0.8, b, r) >= 0.99
    # The threshold-style choice for 0.8 misses most pairs at exactly 0.8.
    assert candidate_probability(0.8, *optimal_params(0.8, 128)) < 0.5


def _feasible(s_min: float, recall: float, num_perm: int, max_bands: int) -> list[tuple[int, int]]:
    return [
        (b, r)
        for b in range(1, min(num_perm, max_bands) + 1)
        for r in range(1, num_perm // b + 1)
        if candidate_probability(s_min, b, r) >= recall
    ]


@settings(max_examples=40, deadline=None)
@given(
    st.floats(0.5, 0.95),
    st.floats(0.9, 0.999),
    st.sampled_from([16, 64, 128]),
    st.sampled_from([None, 4, 10]),
)
def test_recall_floor_params_is_feasible_and_cheapest(
    s_min: float, recall: float, num_perm: int, max_bands: int | None
) -> None:
    cap = num_perm if max_bands is None else max_bands
    feasible = _feasible(s_min, recall, num_perm, cap)
    if not feasible:
        with pytest.raises(ValueError, match="reaches recall"):
            recall_floor_params(s_min, recall, num_perm, max_bands)
        return
    b, r = recall_floor_params(s_min, recall, num_perm, max_bands)
    assert b * r <= num_perm
    assert b <= cap
    assert candidate_probability(s_min, b, r) >= recall
    s_above = np.linspace(s_min, 1.0, 50)
    assert np.all(candidate_probability(s_above, b, r) >= recall)
    area = false_candidate_area(b, r, s_min)
    best = min(false_candidate_area(fb, fr, s_min) for fb, fr in feasible)
    assert area <= best * (1 + 1e-9)


def test_recall_floor_params_max_bands_and_errors() -> None:
    b, r = recall_floor_params(0.8, 0.99, 128, max_bands=8)
    assert b <= 8
    assert candidate_probability(0.8, b, r) >= 0.99
    with pytest.raises(ValueError, match=r"no \(bands, rows\)"):
        recall_floor_params(0.5, 0.999, 8)  # even 8 bands of 1 row: 1 - 0.5**8 < 0.999
    for args in [(0.0, 0.9, 128), (0.8, 1.0, 128), (0.8, 0.9, 0)]:
        with pytest.raises(ValueError):
            recall_floor_params(*args)


# --- band hashes and keys ------------------------------------------------------------------------


def test_band_hashes_equal_rows_equal_hash_per_band() -> None:
    a = _random_values(1, 128)
    b = a.copy()
    b[2 * 8 + 3] ^= np.uint64(1)  # one value of band 2 (rows = 8)
    ha, hb = band_hashes(a, 16, 8), band_hashes(b, 16, 8)
    assert ha.dtype == np.uint64
    assert len(ha) == 16
    assert np.flatnonzero(ha != hb).tolist() == [2]


def test_band_hashes_same_rows_in_other_bands_differ() -> None:
    row = _random_values(2, 4)
    tiled = np.tile(row, 32)
    h = band_hashes(tiled, 32, 4)
    assert len(np.unique(h)) == 32
    zeros = band_hashes(np.zeros(4096, dtype=np.uint64), 4096, 1)
    assert len(np.unique(zeros)) == 4096


def test_band_hashes_order_sensitive_and_prefix_only() -> None:
    a = _random_values(3, 130)
    swapped = a.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    assert band_hashes(a, 16, 8)[0] != band_hashes(swapped, 16, 8)[0]
    tail = a.copy()
    tail[128:] = 0
    assert np.array_equal(band_hashes(a, 16, 8), band_hashes(tail, 16, 8))


def test_band_hashes_accepts_signature() -> None:
    sig = MinHasher(64, seed=5).signature(_random_values(4, 300))
    assert np.array_equal(band_hashes(sig, 8, 8), band_hashes(sig.values, 8, 8))
    assert band_keys(sig, 8, 8) == band_keys(sig.values, 8, 8)


def test_band_hashes_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="need 128"):
        band_hashes(_random_values(5, 127), 16, 8)
    with pytest.raises(ValueError, match="uint64"):
        band_hashes(np.zeros(16, dtype=np.int64), 4, 4)
    with pytest.raises(ValueError, match="bands"):
        band_hashes(np.zeros(70000, dtype=np.uint64), 70000, 1)


def test_band_keys_layout() -> None:
    values = _random_values(6, 128)
    keys = band_keys(values, 16, 8)
    hashes = band_hashes(values, 16, 8)
    assert len(keys) == 16
    for i, key in enumerate(keys):
        assert len(key) == KEY_BYTES == 10
        assert key[:2] == i.to_bytes(2, "big")
        assert key[2:] == int(hashes[i]).to_bytes(8, "big")
    many = band_keys(np.zeros(300, dtype=np.uint64), 300, 1)
    assert many[258][:2] == b"\x01\x02"


def test_band_keys_golden() -> None:
    """Fixed bytes for a fixed input: stored buckets stay valid across processes and releases."""
    values = np.arange(1, 9, dtype=np.uint64)
    assert [k.hex() for k in band_keys(values, 2, 4)] == GOLDEN_KEYS
    assert band_hashes(values, 4, 2).tolist() == GOLDEN_HASHES


GOLDEN_KEYS = ["000057c5661e1730c6ea", "00018aa2597815d17123"]
GOLDEN_HASHES = [
    619314259098509200,
    14084737291315223998,
    6881796506645957395,
    3624746102882016365,
]


# --- the S-curve, measured with real MinHash signatures ------------------------------------------

_UNION = 400  # |A ∪ B|; |A ∩ B| = 400 s is a multiple of 40, so |A| = |B| = 200 + 200 s exactly
_SIMS = [k / 10 for k in range(11)]
_PAIRS = 600  # per similarity; each pair has its own hasher seed and its own random elements
_CURVES = [(16, 8), (32, 4), (64, 2)]
# One-permutation hashing with densification: rows of a band are not independent (the bins
# partition one sample of the union without replacement, and densified empty bins copy other
# bins), which bends the curve slightly. Measured with 10,000 pairs per similarity at |A ∪ B| =
# 400, 128 bins: at most 0.010 from P(s) for (16, 8), (32, 4), (8, 16), (64, 2). k-perm rows are
# independent permutations, so only the binomial noise remains.
_SLACK: dict[str, float] = {"oph": 0.02, "kperm": 0.0}


def _pair(rng: np.random.Generator, s: float) -> tuple[U64, U64]:
    shared = round(s * _UNION)
    own = (_UNION - shared) // 2
    elems = rng.integers(0, 2**64, size=_UNION, dtype=np.uint64)
    a = elems[: shared + own]
    b = np.concatenate([elems[:shared], elems[shared + own :]])
    return a, b


def _tolerance(p: npt.NDArray[np.float64], n: int, slack: float) -> npt.NDArray[np.float64]:
    # 4.5 binomial standard errors, plus 3/n where n P is too small for the normal approximation
    # (P = 1e-3, n = 600: up to 4 chance hits pass), plus the scheme's slack.
    return 4.5 * np.sqrt(p * (1 - p) / n) + 3.0 / n + slack


@pytest.mark.parametrize("scheme", ["oph", "kperm"])
def test_s_curve_matches_real_signatures(scheme: Scheme) -> None:
    rng = np.random.default_rng(20240611)
    hashers = [MinHasher(128, seed=1000 + i, scheme=scheme) for i in range(_PAIRS)]
    hits = {curve: np.zeros(len(_SIMS)) for curve in _CURVES}
    for j, s in enumerate(_SIMS):
        for hasher in hashers:
            a, b = _pair(rng, s)
            assert len(np.unique(np.concatenate([a, b]))) == _UNION
            va, vb = hasher.signature(a).values, hasher.signature(b).values
            for bands, rows in _CURVES:
                hits[bands, rows][j] += bool(
                    np.any(band_hashes(va, bands, rows) == band_hashes(vb, bands, rows))
                )
    sims = np.array(_SIMS)
    for (bands, rows), count in hits.items():
        measured = count / _PAIRS
        expected = candidate_probability(sims, bands, rows)
        tol = _tolerance(expected, _PAIRS, _SLACK[scheme])
        worst = int(np.argmax(np.abs(measured - expected) - tol))
        assert np.all(np.abs(measured - expected) <= tol), (
            f"{scheme} {bands}x{rows}: at s={_SIMS[worst]} measured {measured[worst]:.3f}, "
            f"P(s)={expected[worst]:.3f}"
        )
        # The test has power: a different curve is rejected (by at least 7 standard errors). A
        # change of r by one is only resolvable for small r: at r = 8 it moves the midpoint by
        # 0.035, which would take thousands of pairs per similarity.
        alts = [(bands * 2, rows), (bands // 2, rows)]
        alts += [(bands, rows - 1), (bands, rows + 1)] if rows <= 4 else []
        for alt in alts:
            p_alt = candidate_probability(sims, *alt)
            assert np.any(np.abs(measured - p_alt) > _tolerance(p_alt, _PAIRS, _SLACK[scheme])), (
                f"{scheme} {bands}x{rows} indistinguishable from {alt}"
            )


def test_s_curve_tolerance_is_not_vacuous() -> None:
    p = candidate_probability(np.array([half_point(16, 8)]), 16, 8)
    assert float(_tolerance(p, _PAIRS, _SLACK["oph"])[0]) < 0.2
    assert math.isclose(float(p[0]), 0.5, abs_tol=1e-12)
