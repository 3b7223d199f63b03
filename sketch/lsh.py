"""MinHash LSH: the S-curve, the choice of (bands, rows), and the band keys.

A signature of ``k`` values is cut into ``b`` bands of ``r`` rows (``b * r <= k``; values past
``b * r`` are unused). Two documents become candidates when they agree on every row of at least
one band. Each value agrees with probability ``s`` (their Jaccard similarity), so for independent
values

    P(s) = 1 - (1 - s**r)**b,

the S-curve: a band matches with probability ``s**r`` and at least one of ``b`` bands does with
the complement of "none does". ``P`` rises from 0 to 1 around its midpoint
``s_half = (1 - 2**(-1/b))**(1/r)``, steeper for more values.

**A threshold is a midpoint, not a recall guarantee.** Datasketch-style parameters
(:func:`optimal_params`) balance the area under the curve left of the threshold ``t`` (false
candidates) against the area above it right of ``t`` (missed pairs). That puts ``t`` near the
curve's steep middle, where ``P(t)`` is far from 1: for ``t = 0.8`` and 128 values the choice
``(9, 13)`` has its midpoint at 0.819 and finds a pair at exactly ``s = 0.8`` with probability
0.40 only. When pairs above ``s_min`` must be found with probability at least ``recall``
(originality checks, corpus dedup), use :func:`recall_floor_params`: it puts the whole curve above
``recall`` for ``s >= s_min`` and pays in extra candidates below ``s_min``, which exact
verification then drops. ``recall_floor_params(0.8, 0.99, 128)`` gives ``(16, 6)``:
``P(0.8) = 0.992``, midpoint 0.59, 96 of the 128 values used.

Band keys come from one function family with one byte order (:func:`band_hashes`,
:func:`band_keys`); every index implementation must use these and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import overload

import numpy as np
import numpy.typing as npt

from neardup.sketch.features import mix64
from neardup.sketch.minhash import Signature

U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]

MAX_BANDS = 0xFFFF  # the band index is 2 bytes in a key
KEY_BYTES = 10
_GRID = 2048  # Simpson intervals per integral: error ~1e-13 for the polynomials P(s)
_TIE_RTOL = 1e-9  # areas this close count as equal (then fewer bands win)
_COLUMN_SALT = np.uint64(0x6C73685F636F6C73)  # "lsh_cols"
_BAND_MULT = np.uint64(0x9E3779B97F4A7C15)  # odd: i -> i * M is a bijection mod 2**64
_KEY_DTYPE = np.dtype([("band", ">u2"), ("hash", ">u8")])


def _check_shape(bands: int, rows: int) -> None:
    if bands < 1 or rows < 1:
        raise ValueError(f"bands and rows must be >= 1, got bands={bands}, rows={rows}")


def _curve(s: F64, bands: int, rows: int) -> F64:
    return 1.0 - (1.0 - s**rows) ** bands


@overload
def candidate_probability(s: float, bands: int, rows: int) -> float: ...
@overload
def candidate_probability(s: F64, bands: int, rows: int) -> F64: ...
def candidate_probability(s: float | F64, bands: int, rows: int) -> float | F64:
    """``P(s) = 1 - (1 - s**r)**b``: probability that a pair of similarity ``s`` shares a band.

    A float gives a float, an array an array (elementwise). Both run the same 1-D array loop
    (numpy's scalar ``**`` rounds differently), so scalar and array evaluations agree bit for bit.
    """
    _check_shape(bands, rows)
    arr = np.asarray(s, dtype=np.float64)
    flat = arr.reshape(-1)
    if np.any((flat < 0.0) | (flat > 1.0)):
        raise ValueError("similarity must be in [0, 1]")
    p = _curve(flat, bands, rows)
    return p.reshape(arr.shape) if isinstance(s, np.ndarray) else float(p[0])


def recall_at(s: float, bands: int, rows: int) -> float:
    """Recall of the band stage for pairs of similarity exactly ``s`` (that is, ``P(s)``)."""
    return candidate_probability(float(s), bands, rows)


def half_point(bands: int, rows: int) -> float:
    """The S-curve's midpoint, where ``P(s) = 1/2``: ``s_half = (1 - 2**(-1/b))**(1/r)``.

    From ``(1 - s**r)**b = 1/2``. ``1 - 2**(-1/b)`` is computed as ``-expm1(-ln 2 / b)`` so it
    keeps full precision for many bands.
    """
    _check_shape(bands, rows)
    return float((-math.expm1(-math.log(2.0) / bands)) ** (1.0 / rows))


def _simpson(lo: float, hi: float, n: int = _GRID) -> tuple[F64, F64]:
    """Nodes and weights of composite Simpson's rule on ``[lo, hi]`` with ``n`` (even) intervals.

    ``∫ f ≈ f(nodes) @ weights``; exact for cubics, error ``O(h**4)`` otherwise.
    """
    nodes = np.linspace(lo, hi, n + 1)
    weights = np.ones(n + 1)
    weights[1:-1:2] = 4.0
    weights[2:-1:2] = 2.0
    return nodes, weights * ((hi - lo) / (3.0 * n))


def _false_areas(bands: npt.NDArray[np.int64], rows: npt.NDArray[np.int64], s_max: float) -> F64:
    """``∫_0^s_max P(s) ds`` for each pair ``(bands[i], rows[i])`` at once."""
    nodes, weights = _simpson(0.0, s_max)
    sr = nodes[None, :] ** rows[:, None].astype(np.float64)
    p = 1.0 - (1.0 - sr) ** bands[:, None].astype(np.float64)
    return p @ weights


def false_candidate_area(bands: int, rows: int, s_max: float) -> float:
    """``∫_0^s_max P(s) ds``: expected false candidates per pair, similarity uniform on [0, 1].

    The cost measure of :func:`recall_floor_params` and the false-positive term of
    :func:`optimal_params` (with ``s_max`` the threshold).
    """
    _check_shape(bands, rows)
    if not 0.0 <= s_max <= 1.0:
        raise ValueError("s_max must be in [0, 1]")
    return float(_false_areas(np.array([bands]), np.array([rows]), s_max)[0])


def false_negative_area(bands: int, rows: int, s_min: float) -> float:
    """``∫_s_min^1 (1 - P(s)) ds``: expected missed pairs above ``s_min`` (uniform similarity)."""
    _check_shape(bands, rows)
    if not 0.0 <= s_min <= 1.0:
        raise ValueError("s_min must be in [0, 1]")
    nodes, weights = _simpson(s_min, 1.0)
    return float(((1.0 - nodes**rows) ** bands) @ weights)


def optimal_params(
    threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5
) -> tuple[int, int]:
    """Datasketch's (bands, rows): minimise the weighted error areas around the threshold.

    ``E(b, r) = w_fp ∫_0^t P(s) ds + w_fn ∫_t^1 (1 - P(s)) ds`` over every ``b * r <= num_perm``,
    integrated by Simpson's rule on a fine grid instead of ``scipy.integrate.quad``. Ties keep
    the first pair in datasketch's order (``b`` ascending, then ``r``). The threshold ends up
    near the curve's midpoint, so pairs at the threshold are found about half the time; see the
    module docstring and :func:`recall_floor_params`.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {num_perm}")
    if fp_weight < 0.0 or fn_weight < 0.0 or fp_weight + fn_weight <= 0.0:
        raise ValueError("fp_weight and fn_weight must be >= 0 and not both 0")
    left, w_left = _simpson(0.0, threshold)
    right, w_right = _simpson(threshold, 1.0)
    best = (math.inf, 0, 0)
    for r in range(1, num_perm + 1):
        b = np.arange(1, num_perm // r + 1, dtype=np.float64)[:, None]
        fp = (1.0 - (1.0 - left[None, :] ** r) ** b) @ w_left
        fn = ((1.0 - right[None, :] ** r) ** b) @ w_right
        err = fp_weight * fp + fn_weight * fn
        i = int(np.argmin(err))
        # Same (b, r) order as datasketch: a smaller b wins a tie whatever its r.
        if (float(err[i]), i + 1, r) < best:
            best = (float(err[i]), i + 1, r)
    return best[1], best[2]


def recall_floor_params(
    s_min: float, recall: float, num_perm: int, max_bands: int | None = None
) -> tuple[int, int]:
    """The cheapest (bands, rows) that finds pairs of similarity ``>= s_min`` with ``>= recall``.

    Feasible: ``b * r <= num_perm``, ``b <= max_bands`` and ``P(s_min) >= recall``; ``P`` is
    increasing in ``s``, so then ``P(s) >= recall`` for every ``s >= s_min``. Among those, pick
    the fewest expected false candidates ``∫_0^s_min P(s) ds``; areas within a relative 1e-9 count
    as equal and the pair with fewer bands (less storage) wins.

    For fixed ``r``, ``P`` grows with ``b`` everywhere, so the best pair for that ``r`` has the
    smallest feasible ``b = ceil(log(1 - recall) / log(1 - s_min**r))``; only ``num_perm`` pairs
    need integrating.

    Why not a threshold: a threshold ``t`` from :func:`optimal_params` is about the S-curve's
    midpoint, where ``P = 1/2``, so pairs just above ``t`` are missed about half the time; a
    recall floor moves the midpoint below ``s_min`` instead.
    """
    if not 0.0 < s_min < 1.0:
        raise ValueError(f"s_min must be in (0, 1), got {s_min}")
    if not 0.0 < recall < 1.0:
        raise ValueError(f"recall must be in (0, 1), got {recall}")
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {num_perm}")
    band_cap = min(num_perm, MAX_BANDS if max_bands is None else max_bands)
    if band_cap < 1:
        raise ValueError(f"max_bands must be >= 1, got {max_bands}")
    rows_all = np.arange(1, num_perm + 1)
    x = float(s_min) ** rows_all.astype(np.float64)
    need = np.full(num_perm, np.inf)  # stays inf where s_min**r underflows to 0
    with np.errstate(over="ignore"):  # subnormal s_min**r: b would overflow, inf is right
        np.divide(math.log1p(-recall), np.log1p(-x), out=need, where=x > 0.0)
    need = np.ceil(need)
    band_list: list[int] = []
    row_list: list[int] = []
    for r, b_est in zip(rows_all.tolist(), need.tolist(), strict=True):
        if b_est * r > 2 * num_perm:  # slack for the rounding fix below
            continue
        b = max(1, int(b_est))
        while candidate_probability(s_min, b, r) < recall:
            b += 1
        while b > 1 and candidate_probability(s_min, b - 1, r) >= recall:
            b -= 1
        if b * r <= num_perm and b <= band_cap:
            band_list.append(b)
            row_list.append(r)
    if not band_list:
        raise ValueError(
            f"no (bands, rows) with bands*rows <= {num_perm} and bands <= {band_cap} reaches "
            f"recall {recall} at similarity {s_min}; raise num_perm or max_bands, or lower "
            "the recall or s_min"
        )
    bands = np.array(band_list, dtype=np.int64)
    rows = np.array(row_list, dtype=np.int64)
    areas = _false_areas(bands, rows, s_min)
    near = np.flatnonzero(areas <= areas.min() * (1.0 + _TIE_RTOL))
    i = int(near[np.lexsort((areas[near], bands[near]))[0]])
    return int(bands[i]), int(rows[i])


def s_curve_table(
    bands: int, rows: int, points: int | Sequence[float] = 11
) -> list[tuple[float, float]]:
    """``(s, P(s))`` rows for display: ``points`` evenly spaced on [0, 1], or the given ``s``."""
    _check_shape(bands, rows)
    if isinstance(points, int):
        if points < 2:
            raise ValueError("points must be >= 2")
        s = np.linspace(0.0, 1.0, points)
    else:
        s = np.asarray(points, dtype=np.float64)
    p = candidate_probability(s, bands, rows)
    return [(float(a), float(c)) for a, c in zip(s.tolist(), p.tolist(), strict=True)]


def _values(values: U64 | Signature) -> U64:
    v = values.values if isinstance(values, Signature) else np.asarray(values)
    if v.dtype != np.uint64 or v.ndim not in (1, 2):
        raise ValueError("signature values must be a 1-D (or 2-D: one row each) uint64 array")
    return v


def band_hashes(values: U64 | Signature, bands: int, rows: int) -> U64:
    """One 64-bit hash per band: ``h_i = mix64(Σ_j M_j v[i r + j] + i M_band)`` (mod 2**64).

    The ``M_j`` are distinct odd constants, so the sum depends on the order of the rows and two
    different rows collide only with probability ~2**-64; ``i M_band`` with odd ``M_band`` differs
    for every band and :func:`mix64` is a bijection, so the same rows in two bands never give the
    same hash. Equal rows in the same band always do. Uses ``values[: bands * rows]``.

    A 2-D ``values`` (one signature per row, as :meth:`MinHasher.signatures` returns) gives an
    ``(n, bands)`` array, row by row equal to the 1-D result.
    """
    _check_shape(bands, rows)
    if bands > MAX_BANDS:
        raise ValueError(f"at most {MAX_BANDS} bands (2-byte band index), got {bands}")
    v = _values(values)
    if v.shape[-1] < bands * rows:
        raise ValueError(
            f"need {bands * rows} signature values for {bands}x{rows}, got {v.shape[-1]}"
        )
    mult = mix64(np.arange(rows, dtype=np.uint64) + _COLUMN_SALT) | np.uint64(1)
    cut = v[..., : bands * rows].reshape(*v.shape[:-1], bands, rows)
    acc = (cut * mult).sum(axis=-1, dtype=np.uint64)
    return mix64(acc + np.arange(bands, dtype=np.uint64) * _BAND_MULT)


def band_keys(values: U64 | Signature, bands: int, rows: int) -> list[bytes]:
    """Bucket keys, 10 bytes each: band index (2 bytes) then band hash (8 bytes), big-endian.

    The band index in the key keeps the bands in separate bucket spaces, and big-endian puts a
    band's keys in one contiguous range when stored sorted.
    """
    h = band_hashes(values, bands, rows)
    packed = np.empty(bands, dtype=_KEY_DTYPE)
    packed["band"] = np.arange(bands)
    packed["hash"] = h
    raw = packed.tobytes()
    return [raw[i : i + KEY_BYTES] for i in range(0, len(raw), KEY_BYTES)]


__all__ = [
    "KEY_BYTES",
    "MAX_BANDS",
    "band_hashes",
    "band_keys",
    "candidate_probability",
    "false_candidate_area",
    "false_negative_area",
    "half_point",
    "optimal_params",
    "recall_at",
    "recall_floor_params",
    "s_curve_table",
]
