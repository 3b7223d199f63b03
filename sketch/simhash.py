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

from sketch.features import mix64

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


__all__ = ["DEFAULT_SEED", "hamming", "hamming_many", "simhash"]


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
    ``2 * Σ_{bit b set} w > Σ w`` (the sign test and tie rule of ±w sums). Rather than unpacking
    64 bits per feature, it counts, per document, how often each byte value appears at each of
    the 8 byte positions of the mixed features (one ``bincount``, 8 slots a feature), then turns
    those counts into bit totals with one product by the 256 x 8 bit table. Sums are exact
    (integers below 2**53). Empty documents give 0.
    """
    n_docs = len(offsets) - 1
    if weights is not None and len(weights) and int(np.min(weights)) < 0:
        raise ValueError("simhash_many takes non-negative weights; use simhash for signed ones")
    out = np.zeros(max(n_docs, 0), dtype=np.uint64)
    if n_docs <= 0 or len(hashes) == 0:
        return out
    key = _word_keys(seed, 1)[0]
    sizes = np.diff(offsets)
    lo = 0
    while lo < n_docs:  # blocks of about 4 * _CHUNK features bound the histogram's memory
        hi = int(np.searchsorted(offsets, offsets[lo] + 4 * _CHUNK, side="right")) - 1
        hi = min(max(hi, lo + 1), n_docs)
        a, b, m = int(offsets[lo]), int(offsets[hi]), hi - lo
        raw = np.ascontiguousarray(mix64(hashes[a:b] ^ key), dtype="<u8").view(np.uint8)
        row = np.repeat(np.arange(0, m * 2048, 2048, dtype=np.int64), sizes[lo:hi])
        slot = np.add((row[:, None] + _BYTE_SLOT), raw.reshape(-1, 8), dtype=np.int64).ravel()
        wb = None if weights is None else np.repeat(np.asarray(weights[a:b], np.float64), 8)
        hist = np.bincount(slot, weights=wb, minlength=m * 2048).astype(np.float64)
        counts = hist.reshape(m, 8, 256)
        total = counts[:, 0, :].sum(axis=1)  # every feature has one byte at position 0
        if float(total.max()) >= 2**52:
            raise ValueError("weights too large to sum exactly")
        ones = counts @ _BYTE_BITS  # total weight with bit (8 p + k) set
        rows = 2 * ones.reshape(m, 64) > total[:, None]
        packed = np.packbits(rows, axis=1, bitorder="little")
        out[lo:hi] = np.ascontiguousarray(packed).view("<u8").reshape(-1)
        lo = hi
    return out
