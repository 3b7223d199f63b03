"""Weighted SimHash (Charikar 2002) and Hamming distance on fingerprints.

Each feature hash ``h`` is turned into ``bits`` pseudo-random signs ``r(h) ∈ {-1, +1}^bits``,
one per bit of a strongly mixed copy of ``h``. For a document with weight vector ``w`` over
features the accumulator is ``A = Σ_h w_h · r(h)`` and bit ``i`` of the fingerprint is
``A_i > 0``. Each bit is the side of a random hyperplane ``r_i`` that ``w`` falls on, so for two
documents at angle ``θ = arccos(w·v / (|w| |v|))``::

    P[bit i differs] = θ / π          E[hamming] = bits · θ / π

(exact for Gaussian hyperplanes; with ±1 coordinates the sum over many features is Gaussian by
the CLT, and for symmetric summands the error is O(1/n), not O(1/√n)).

Fixed conventions (every stored fingerprint depends on them; changing one is a scheme change):

* Word ``j`` of a feature is ``mix64(h ^ key_j)`` with ``key_j = mix64(seed + (j + 1) · φ)``
  (``φ = 0x9E3779B97F4A7C15``, arithmetic mod 2^64). Fingerprint bit ``64·j + b`` is driven by
  bit ``b`` (least significant = 0) of word ``j``. So the low 64 bits of a 128-bit fingerprint
  are the 64-bit fingerprint with the same seed.
* Bit ``i`` of the returned ``int`` is ``(fp >> i) & 1``.
* Tie rule: an accumulator of exactly 0 gives bit 0. Integer weights are summed exactly in int64;
  float weights are summed in float64 in a fixed order (feature order, in fixed-size chunks; no
  BLAS), so the result, ties included, does not depend on the machine.
* A repeated hash contributes once per occurrence (repeats act as term frequency).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from neardup.sketch.features import mix64

U64 = npt.NDArray[np.uint64]

DEFAULT_SEED = 0x73696D68  # "simh"
_PHI = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1
_CHUNK = 8192  # features per accumulation step: bounds memory at _CHUNK * bits * 8 bytes

_BYTE_SLOT = np.arange(0, 2048, 256, dtype=np.int64)  # byte position p -> bins 256 p ..
# bit k of byte value v, as float64: turns per-byte-value totals into per-bit totals
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.float64)
_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _word_keys(seed: int, words: int) -> U64:
    raw = np.array([(seed + (j + 1) * _PHI) & _MASK64 for j in range(words)], dtype=np.uint64)
    return mix64(raw)


def _sign_bits(hashes: U64, keys: U64) -> npt.NDArray[np.uint8]:
    """(n, 64·words) matrix of 0/1: bit ``64·j + b`` of row ``i`` is bit b of mix64(h_i ^ key_j)."""
    mixed = mix64(hashes[:, None] ^ keys[None, :])
    raw = np.ascontiguousarray(mixed, dtype="<u8").view(np.uint8)  # fixed byte order
    return np.unpackbits(raw, axis=1, bitorder="little")


def simhash(
    hashes: U64,
    weights: npt.ArrayLike | None = None,
    bits: int = 64,
    *,
    seed: int = DEFAULT_SEED,
) -> int:
    """Weighted SimHash of uint64 feature hashes; ``bits`` a positive multiple of 64.

    ``weights`` (default 1 each) are any finite reals, one per hash; integer weights are exact.
    Empty input gives 0.
    """
    if bits <= 0 or bits % 64:
        raise ValueError(f"bits must be a positive multiple of 64, got {bits}")
    if not 0 <= seed <= _MASK64:
        raise ValueError("seed must be in [0, 2**64)")
    h = np.asarray(hashes)
    if h.dtype != np.uint64 or h.ndim != 1:
        raise TypeError(f"hashes must be a 1-D uint64 array, got {h.dtype} with shape {h.shape}")
    if weights is None:
        w: npt.NDArray[np.int64] | npt.NDArray[np.float64] = np.ones(len(h), dtype=np.int64)
    else:
        wa = np.asarray(weights)
        if wa.shape != h.shape:
            raise ValueError(f"weights shape {wa.shape} does not match hashes shape {h.shape}")
        if wa.dtype == np.bool_ or np.issubdtype(wa.dtype, np.integer):
            w = wa.astype(np.int64)
            if len(w) and max(-int(w.min()), int(w.max())) * len(w) >= 1 << 63:
                raise ValueError("integer weights too large to sum exactly in int64")
        elif np.issubdtype(wa.dtype, np.floating):
            w = wa.astype(np.float64)
            if not np.all(np.isfinite(w)):
                raise ValueError("weights must be finite")
        else:
            raise TypeError(f"weights must be integer or float, got {wa.dtype}")
    if len(h) == 0:
        return 0
    keys = _word_keys(seed, bits // 64)
    acc = np.zeros(bits, dtype=w.dtype)
    for start in range(0, len(h), _CHUNK):
        sign = _sign_bits(h[start : start + _CHUNK], keys).astype(bool)
        wc = w[start : start + _CHUNK, None]
        acc += np.where(sign, wc, -wc).sum(axis=0)
    return int.from_bytes(np.packbits(acc > 0, bitorder="little").tobytes(), "little")


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two non-negative fingerprints."""
    if a < 0 or b < 0:
        raise ValueError("fingerprints are non-negative integers")
    return (a ^ b).bit_count()


def _popcount64_table(x: U64) -> npt.NDArray[np.int64]:
    """Popcount of each uint64 by an 8-bit lookup table (numpy < 2 has no bitwise_count)."""
    per_byte = _POPCOUNT8[np.ascontiguousarray(x).view(np.uint8)].reshape(len(x), 8)
    counts: npt.NDArray[np.int64] = per_byte.sum(axis=1, dtype=np.int64)
    return counts


def hamming_many(fp: int, fps: U64) -> npt.NDArray[np.int64]:
    """Hamming distance from a 64-bit fingerprint to each of a 1-D uint64 array of them."""
    if not 0 <= fp <= _MASK64:
        raise ValueError("fp must be a 64-bit fingerprint")
    arr = np.asarray(fps)
    if arr.dtype != np.uint64 or arr.ndim != 1:
        raise TypeError("fps must be a 1-D uint64 array")
    x = np.bitwise_xor(arr, np.array([fp], dtype=np.uint64))
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    return _popcount64_table(x)


def simhash_many(
    hashes: U64,
    weights: npt.NDArray[np.int64] | None,
    offsets: npt.NDArray[np.intp],
    *,
    seed: int = DEFAULT_SEED,
) -> U64:
    """64-bit SimHash of many documents; document i owns ``hashes[offsets[i]:offsets[i+1]]``.

    Equal to ``simhash(hashes[i], weights[i])`` for each document with non-negative integer
    weights (``None``: 1 each, so repeated hashes count as term frequency). Bit b is 1 iff
    ``2 * Σ_{bit b set} w > Σ w`` (the sign test and tie rule of ±w sums), so all it needs is,
    per document, the total weight of the features that have each bit set. Empty documents give
    0. Unweighted, the counts come from :func:`_bit_counts`; weighted, from byte histograms.
    """
    n_docs = len(offsets) - 1
    if n_docs <= 0:
        return np.zeros(0, dtype=np.uint64)
    if weights is not None and len(weights) and int(np.min(weights)) < 0:
        raise ValueError("simhash_many takes non-negative weights; use simhash for signed ones")
    mixed = mix64(np.asarray(hashes, dtype=np.uint64) ^ _word_keys(seed, 1)[0])
    if weights is None:
        rows = 2 * _bit_counts(mixed, offsets) > np.diff(offsets)[:, None]
    else:
        w = np.asarray(weights)
        rows = np.empty((n_docs, 64), dtype=bool)
        for lo in range(0, n_docs, 256):  # blocks bound the histograms at 4 MB
            hi = min(lo + 256, n_docs)
            a, b = offsets[lo], offsets[hi]
            ones, total = _weighted_bit_counts(mixed[a:b], w[a:b], offsets[lo : hi + 1] - a)
            rows[lo:hi] = 2 * ones > total[:, None]
    return np.ascontiguousarray(np.packbits(rows, axis=1, bitorder="little")).view("<u8")[:, 0]


def simhash_one(hashes: U64, *, seed: int = DEFAULT_SEED) -> int:
    """``simhash_many`` of one document (unweighted: repeats count as term frequency), without
    the per-document bookkeeping of the batch form: a handful of numpy calls in all."""
    n = len(hashes)
    if n == 0:
        return 0
    mixed = mix64(np.asarray(hashes, dtype=np.uint64) ^ _word_keys(seed, 1)[0])
    raw = np.ascontiguousarray(mixed, dtype="<u8").view(np.uint8).reshape(-1, 8)
    words = np.add.reduceat(_SPREAD[raw], np.arange(0, n, _LANE_MAX), axis=0)  # see _bit_counts
    counts = words.view(np.uint8).reshape(-1, 64).sum(axis=0, dtype=np.int64)  # [8 p + k]
    return int.from_bytes(np.packbits(2 * counts > n, bitorder="little").tobytes(), "little")


# byte value -> uint64 whose byte k is bit k of the value (eight one-bit counters side by side)
_SPREAD = np.array(
    [sum(((v >> k) & 1) << (8 * k) for k in range(8)) for v in range(256)], dtype=np.uint64
)
_LANE_MAX = 255  # features summed per uint64 before its 8-bit counters could overflow


def _bit_counts(mixed: U64, offsets: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """(documents, 64) counts of features with each bit set, eight counters per machine word.

    Each byte of a feature becomes a word holding its 8 bits in 8 separate bytes (a table
    lookup); adding such words adds 8 counters at once. Runs of at most 255 features are summed
    this way (no counter overflows), then the runs of each document are added up.
    """
    n_docs = len(offsets) - 1
    sizes = np.diff(offsets)
    runs = -(-sizes // _LANE_MAX)  # runs per document (0 for an empty one)
    first_run = np.zeros(n_docs + 1, dtype=np.intp)
    np.cumsum(runs, out=first_run[1:])
    run_doc = np.repeat(np.arange(n_docs, dtype=np.intp), runs)
    run_start = offsets[:-1][run_doc] + _LANE_MAX * (np.arange(len(run_doc)) - first_run[run_doc])
    out = np.zeros((n_docs, 64), dtype=np.int64)
    if len(run_start) == 0:
        return out
    raw = np.ascontiguousarray(mixed, dtype="<u8").view(np.uint8).reshape(-1, 8)
    words = np.add.reduceat(_SPREAD[raw], run_start, axis=0)  # (runs, 8 byte positions)
    counts = words.view(np.uint8).reshape(len(run_start), 64).astype(np.int64)  # [8 p + k]
    nonempty = runs > 0
    out[nonempty] = np.add.reduceat(counts, first_run[:-1][nonempty], axis=0)
    return out


def _weighted_bit_counts(
    mixed: U64, weights: npt.NDArray[np.int64], offsets: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Total weight with each bit set, and total weight, per document (exact below 2**53):
    per document, the weight of each byte value at each byte position (one ``bincount``), then
    one product with the 256 x 8 bit table."""
    n_docs = len(offsets) - 1
    doc = np.repeat(np.arange(n_docs, dtype=np.int64) * 2048, np.diff(offsets))
    raw = np.ascontiguousarray(mixed, dtype="<u8").view(np.uint8).reshape(-1, 8)
    slot = np.add(doc[:, None] + _BYTE_SLOT, raw, dtype=np.int64).ravel()
    wb = np.repeat(np.asarray(weights, dtype=np.float64), 8)
    hist = np.bincount(slot, weights=wb, minlength=n_docs * 2048).reshape(n_docs, 8, 256)
    total = hist[:, 0, :].sum(axis=1)  # every feature has one byte at position 0
    if len(total) and float(total.max()) >= 2**52:
        raise ValueError("weights too large to sum exactly")
    return (hist @ _BYTE_BITS).reshape(n_docs, 64), total


__all__ = ["DEFAULT_SEED", "hamming", "hamming_many", "simhash", "simhash_many", "simhash_one"]
