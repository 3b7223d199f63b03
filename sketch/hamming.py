"""Permuted tables for Hamming-distance queries (Manku, Jain, Das Sarma, WWW 2007).

Find every stored ``f``-bit fingerprint within Hamming distance ``k`` of a query, without a scan.

Split the fingerprint into ``m > k`` contiguous blocks of near-equal width and build one table per
choice of ``m - k`` blocks, keyed by those blocks' bits concatenated: ``C(m, m - k)`` tables.

**Pigeonhole guarantee (recall exactly 1 for distance <= k).** If ``hamming(p, q) <= k``, the
differing bits fall into at most ``k`` blocks, so at least ``m - k`` blocks of ``p`` and ``q`` are
identical. The table keyed by exactly ``m - k`` of those agreeing blocks gives ``p`` and ``q``
the same key, so ``q`` is a candidate of ``p``. Candidates are then verified by popcount, so no
result beyond ``k`` is ever returned either: the query is exact.

**Cost.** A table with key width ``w`` holds a random fingerprint in the query's bucket with
probability ``2^-w``, so over ``N`` stored fingerprints a query reads ``T`` buckets and verifies
``Σ_t N / 2^w_t`` chance candidates; storage is ``T · N`` entries. More blocks mean wider keys
(fewer chance candidates) but more tables. For ``f = 64``, ``k = 3``::

    m   tables   key bits   chance candidates / query    chance candidates / query
                            at N = 10^6                  at N = 10^9
    4      4     16         61                           61,035
    5     10     25-26      0.21                         208
    6     20     31-33      0.0051                       5.1
    7     35     36-37      0.00036                      0.36

``design()`` picks ``m`` minimising ``T + Σ_t N / 2^w_t`` (bucket reads plus candidate checks,
each about one small read), which gives ``m = 5`` at a million fingerprints and ``m = 6`` at a
billion. Real SimHash fingerprints cluster, so real buckets are fuller than this uniform model;
pass ``blocks`` to override.

Conventions: bit ``i`` of a fingerprint is ``(fp >> i) & 1``; block ``j`` covers the bits
``[start_j, start_j + width_j)``, blocks in ascending bit order, the first ``f mod m`` blocks one
bit wider; tables are ``itertools.combinations(range(m), m - k)`` in that order; a table's key is
its blocks' bits with the lowest block in the lowest bits.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
K = TypeVar("K", bound=Hashable)

_MAX_EXTRA_BLOCKS = 8  # design() tries m in k+1 .. k+8


@dataclass(frozen=True, slots=True)
class TableDesign:
    """A block split of ``bits``-bit fingerprints and the ``C(m, m - k)`` tables over it."""

    bits: int
    k: int
    blocks: int
    spans: tuple[tuple[int, int], ...] = field(init=False)  # (start, width) of each block
    tables: tuple[tuple[int, ...], ...] = field(init=False)  # block indices of each table key

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ValueError(f"k must be >= 0, got {self.k}")
        if not self.k < self.blocks <= self.bits:
            raise ValueError(f"need k < blocks <= bits, got k={self.k}, blocks={self.blocks}")
        base, extra = divmod(self.bits, self.blocks)
        widths = [base + (j < extra) for j in range(self.blocks)]
        starts = list(itertools.accumulate(widths, initial=0))[:-1]
        object.__setattr__(self, "spans", tuple(zip(starts, widths, strict=True)))
        tables = tuple(itertools.combinations(range(self.blocks), self.blocks - self.k))
        object.__setattr__(self, "tables", tables)

    @property
    def table_count(self) -> int:
        return len(self.tables)

    @property
    def key_widths(self) -> tuple[int, ...]:
        """Key width in bits of each table."""
        return tuple(sum(self.spans[b][1] for b in t) for t in self.tables)

    @property
    def key_bits(self) -> int:
        """The narrowest key: the table that collects the most chance candidates."""
        return min(self.key_widths)

    def expected_probes(self, n: int) -> float:
        """Expected chance candidates per query over ``n`` uniform random fingerprints."""
        return sum(n * 2.0**-w for w in self.key_widths)

    def cost(self, n: int) -> float:
        """Bucket reads plus expected chance candidates per query: what ``design`` minimises."""
        return self.table_count + self.expected_probes(n)


def design(
    bits: int = 64, k: int = 3, n_expected: int = 1_000_000, blocks: int | None = None
) -> TableDesign:
    """The table design for ``k``-bit queries; ``blocks=None`` picks ``m`` by ``cost``.

    Candidates are ``m`` in ``k+1 .. min(bits, k+8)``; ties go to the smaller ``m`` (fewer tables,
    less storage).
    """
    if n_expected < 0:
        raise ValueError("n_expected must be >= 0")
    if blocks is not None:
        return TableDesign(bits, k, blocks)
    if not 0 <= k < bits:
        raise ValueError(f"need 0 <= k < bits, got k={k}, bits={bits}")
    options = [TableDesign(bits, k, m) for m in range(k + 1, min(bits, k + _MAX_EXTRA_BLOCKS) + 1)]
    return min(options, key=lambda d: d.cost(n_expected))


def _check_fp(fp: int, bits: int) -> int:
    value = operator.index(fp)
    if not 0 <= value < 1 << bits:
        raise ValueError(f"fingerprint must be in [0, 2**{bits})")
    return value


def table_keys(fp: int, d: TableDesign) -> list[tuple[int, int]]:
    """``(table_index, key)`` for each table: equal pairs mean equal blocks in that table."""
    fp = _check_fp(fp, d.bits)
    vals = [(fp >> start) & ((1 << width) - 1) for start, width in d.spans]
    out = []
    for t, blocks in enumerate(d.tables):
        key = 0
        offset = 0
        for b in blocks:
            key |= vals[b] << offset
            offset += d.spans[b][1]
        out.append((t, key))
    return out


def table_keys_many(fps: U64, d: TableDesign) -> U64:
    """Keys of many fingerprints of at most 64 bits: shape ``(n, table_count)``, column = table."""
    if d.bits > 64:
        raise ValueError("table_keys_many needs bits <= 64; use table_keys for wider fingerprints")
    arr = np.asarray(fps)
    if arr.dtype != np.uint64 or arr.ndim != 1:
        raise TypeError("fps must be a 1-D uint64 array")
    if d.bits < 64 and arr.size and int(arr.max()) >> d.bits:
        raise ValueError(f"fingerprint must be in [0, 2**{d.bits})")
    starts = np.array([s for s, _ in d.spans], dtype=np.uint64)
    masks = np.array([(1 << w) - 1 for _, w in d.spans], dtype=np.uint64)
    widths = [w for _, w in d.spans]
    offsets = np.array(
        [list(itertools.accumulate((widths[b] for b in t[:-1]), initial=0)) for t in d.tables],
        dtype=np.uint64,
    )
    vals = (arr[:, None] >> starts[None, :]) & masks[None, :]
    parts = vals[:, np.array(d.tables, dtype=np.intp)] << offsets[None, :, :]
    keys: U64 = np.bitwise_or.reduce(parts, axis=2)
    return keys


class HammingIndex(Generic[K]):
    """In-memory permuted-table index: ``query`` returns exactly the keys within distance ``k``.

    Each table maps a key to the list of stored keys in that bucket; a fingerprint is stored once
    per table. Results are ordered by distance, then by insertion order.
    """

    def __init__(
        self,
        bits: int = 64,
        k: int = 3,
        n_expected: int = 1_000_000,
        blocks: int | None = None,
    ) -> None:
        self.design = design(bits, k, n_expected=n_expected, blocks=blocks)
        self._tables: list[dict[int, list[K]]] = [{} for _ in self.design.tables]
        self._entries: dict[K, tuple[int, int]] = {}  # key -> (fingerprint, insertion number)
        self._counter = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def add(self, fingerprint: int, key: K) -> None:
        """Store ``key`` under ``fingerprint``; re-adding the same pair is a no-op.

        Raises ``ValueError`` if ``key`` is already stored with a different fingerprint: a silent
        overwrite would hide a conflict; ``remove`` it first.
        """
        fp = _check_fp(fingerprint, self.design.bits)
        if key in self._entries:
            if self._entries[key][0] != fp:
                raise ValueError(f"key {key!r} is already indexed with a different fingerprint")
            return
        for t, tkey in table_keys(fp, self.design):
            self._tables[t].setdefault(tkey, []).append(key)
        self._entries[key] = (fp, self._counter)
        self._counter += 1

    def remove(self, key: K) -> None:
        """Drop ``key`` from every table; ``KeyError`` if it is not stored."""
        fp, _ = self._entries.pop(key)
        for t, tkey in table_keys(fp, self.design):
            bucket = self._tables[t][tkey]
            bucket.remove(key)
            if not bucket:
                del self._tables[t][tkey]

    def query_distances(self, fingerprint: int) -> list[tuple[K, int]]:
        """``(key, distance)`` of every stored fingerprint within distance ``k``, nearest first."""
        fp = _check_fp(fingerprint, self.design.bits)
        seen: set[K] = set()
        found: list[tuple[int, int, K]] = []
        for t, tkey in table_keys(fp, self.design):
            for key in self._tables[t].get(tkey, ()):
                if key in seen:
                    continue
                seen.add(key)
                stored, order = self._entries[key]
                dist = (stored ^ fp).bit_count()
                if dist <= self.design.k:
                    found.append((dist, order, key))
        found.sort(key=lambda e: (e[0], e[1]))
        return [(key, dist) for dist, _, key in found]

    def query(self, fingerprint: int) -> list[K]:
        """Keys of every stored fingerprint within distance ``k``, nearest first."""
        return [key for key, _ in self.query_distances(fingerprint)]


__all__ = [
    "HammingIndex",
    "TableDesign",
    "design",
    "table_keys",
    "table_keys_many",
]
