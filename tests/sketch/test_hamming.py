"""Permuted tables: the design's shape, the pigeonhole guarantee, and exactness vs brute force."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.sketch.hamming import HammingIndex, TableDesign, design, table_keys, table_keys_many
from neardup.sketch.simhash import hamming, hamming_many


@st.composite
def designs(draw: st.DrawFn) -> TableDesign:
    bits = draw(st.sampled_from([64, 128]))
    k = draw(st.integers(0, 6))
    m = draw(st.integers(k + 1, k + 6))
    return TableDesign(bits, k, m)


def _flip(fp: int, positions: set[int]) -> int:
    for i in positions:
        fp ^= 1 << i
    return fp


def _near(rng: random.Random, fp: int, bits: int, d: int) -> int:
    return _flip(fp, set(rng.sample(range(bits), d)))


@pytest.mark.parametrize(
    ("bits", "k", "m"),
    [
        (64, 0, 1),
        (64, 1, 2),
        (64, 3, 4),
        (64, 3, 5),
        (64, 3, 6),
        (64, 3, 11),
        (64, 6, 9),
        (128, 3, 5),
        (128, 4, 7),
        (10, 2, 10),
        (7, 2, 3),
    ],
)
def test_design_counts(bits: int, k: int, m: int) -> None:
    d = TableDesign(bits, k, m)
    assert d.table_count == math.comb(m, m - k)
    assert len(set(d.tables)) == d.table_count
    for t in d.tables:
        assert len(t) == m - k
        assert list(t) == sorted(set(t))
        assert all(0 <= b < m for b in t)
    covered = [i for start, width in d.spans for i in range(start, start + width)]
    assert covered == list(range(bits))  # every bit in exactly one block, in order
    widths = [w for _, w in d.spans]
    assert len(widths) == m
    assert max(widths) - min(widths) <= 1
    assert d.key_widths == tuple(sum(widths[b] for b in t) for t in d.tables)
    assert d.key_bits == min(d.key_widths)


def test_docstring_table_for_64_bits_k3() -> None:
    rows = {m: TableDesign(64, 3, m) for m in (4, 5, 6, 7)}
    summary = {m: (d.table_count, d.key_bits, max(d.key_widths)) for m, d in rows.items()}
    assert summary == {4: (4, 16, 16), 5: (10, 25, 26), 6: (20, 31, 33), 7: (35, 36, 37)}
    assert rows[4].expected_probes(10**6) == pytest.approx(4 * 10**6 / 2**16)


@pytest.mark.parametrize(
    ("n", "expected_m"), [(0, 4), (1_000, 4), (1_000_000, 5), (1_000_000_000, 6)]
)
def test_design_minimises_documented_cost(n: int, expected_m: int) -> None:
    chosen = design(64, 3, n_expected=n)
    assert chosen.blocks == expected_m
    for m in range(4, 12):
        assert chosen.cost(n) <= TableDesign(64, 3, m).cost(n)
    assert design(64, 3, n_expected=n, blocks=7).blocks == 7


def test_design_rejects_impossible() -> None:
    for bad in [(64, 3, 3), (64, -1, 2), (8, 3, 9)]:
        with pytest.raises(ValueError):
            TableDesign(*bad)
    with pytest.raises(ValueError):
        design(8, 8)
    with pytest.raises(ValueError):
        design(64, 3, n_expected=-1)


@settings(max_examples=300)
@given(d=designs(), data=st.data())
def test_pigeonhole_table_of_agreeing_blocks_matches(d: TableDesign, data: st.DataObject) -> None:
    """Flip <= k bits: a table made only of untouched blocks gives both the same key."""
    fp = data.draw(st.integers(0, (1 << d.bits) - 1))
    flips = data.draw(st.sets(st.integers(0, d.bits - 1), max_size=d.k))
    other = _flip(fp, flips)
    touched = {j for j, (s, w) in enumerate(d.spans) if any(s <= i < s + w for i in flips)}
    mine, theirs = table_keys(fp, d), table_keys(other, d)
    assert [t for t, _ in mine] == list(range(d.table_count))
    for t, blocks in enumerate(d.tables):
        if not touched & set(blocks):
            assert mine[t] == theirs[t]
    assert any(a == b for a, b in zip(mine, theirs, strict=True))


@settings(max_examples=60, deadline=None)
@given(d=designs(), data=st.data())
def test_planted_copies_always_found(d: TableDesign, data: st.DataObject) -> None:
    """Recall exactly 1: every copy with 0..k flipped bits is returned, at its true distance."""
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    index: HammingIndex[str] = HammingIndex(d.bits, d.k, blocks=d.blocks)
    for i in range(200):
        index.add(rng.getrandbits(d.bits), f"noise{i}")
    queries = data.draw(st.lists(st.integers(0, (1 << d.bits) - 1), min_size=1, max_size=5))
    planted: dict[int, dict[str, int]] = {}
    for qi, q in enumerate(queries):
        planted[qi] = {}
        for dist in range(d.k + 1):
            flips = data.draw(st.sets(st.integers(0, d.bits - 1), min_size=dist, max_size=dist))
            index.add(_flip(q, flips), f"q{qi}d{dist}")
            planted[qi][f"q{qi}d{dist}"] = dist
    for qi, q in enumerate(queries):
        got = dict(index.query_distances(q))
        assert planted[qi].items() <= got.items()
        assert all(dist <= d.k for dist in got.values())


def _brute(stored: list[int], q: int, k: int, bits: int) -> set[int]:
    if bits == 64:
        dist = hamming_many(q, np.array(stored, dtype=np.uint64))
        return {int(i) for i in np.flatnonzero(dist <= k)}
    return {i for i, s in enumerate(stored) if hamming(q, s) <= k}


@pytest.mark.parametrize(
    ("bits", "k", "m"),
    [(64, 3, 4), (64, 3, 5), (64, 3, 6), (64, 2, None), (64, 1, 3), (128, 3, None), (128, 5, 7)],
)
def test_query_equals_brute_force(bits: int, k: int, m: int | None) -> None:
    """query() returns exactly {stored : hamming <= k}: no misses, no extras.

    Besides 3,000 random fingerprints, anchors get neighbours at every distance 0..k+2, so the
    index holds many candidates just past k that share blocks and must be filtered out.
    """
    rng = random.Random(bits * 100 + k * 10 + (m or 0))
    stored = [rng.getrandbits(bits) for _ in range(3000)]
    anchors = [rng.getrandbits(bits) for _ in range(150)]
    for a in anchors:
        stored += [_near(rng, a, bits, dist) for dist in range(k + 3) for _ in range(2)]
    index: HammingIndex[int] = HammingIndex(bits, k, n_expected=len(stored), blocks=m)
    for i, fp in enumerate(stored):
        index.add(fp, i)
    assert len(index) == len(stored)
    queries = anchors + [_near(rng, a, bits, k) for a in anchors] + stored[:100]
    queries += [rng.getrandbits(bits) for _ in range(100)]
    for q in queries:
        hits = index.query_distances(q)
        assert {i for i, _ in hits} == _brute(stored, q, k, bits)
        assert all(dist == hamming(q, stored[i]) for i, dist in hits)
        assert [dist for _, dist in hits] == sorted(dist for _, dist in hits)


@settings(max_examples=100)
@given(
    bits=st.sampled_from([64, 40]),
    k=st.integers(0, 5),
    extra=st.integers(1, 6),
    data=st.data(),
)
def test_table_keys_many_matches_table_keys(
    bits: int, k: int, extra: int, data: st.DataObject
) -> None:
    d = TableDesign(bits, k, k + extra)
    fps = data.draw(st.lists(st.integers(0, (1 << bits) - 1), max_size=20))
    many = table_keys_many(np.array(fps, dtype=np.uint64), d)
    assert many.shape == (len(fps), d.table_count)
    assert many.tolist() == [[key for _, key in table_keys(fp, d)] for fp in fps]


def test_add_remove_len_and_conflicts() -> None:
    index: HammingIndex[tuple[str, int]] = HammingIndex(64, 3, blocks=5)
    a, b = 0xDEADBEEF, 0xDEADBEEF ^ 0b111
    index.add(a, ("doc", 1))
    index.add(a, ("doc", 1))  # same pair: idempotent
    index.add(b, ("doc", 2))
    assert len(index) == 2
    assert ("doc", 1) in index
    assert index.query(a) == [("doc", 1), ("doc", 2)]  # nearest first
    with pytest.raises(ValueError, match="different fingerprint"):
        index.add(b, ("doc", 1))
    index.remove(("doc", 1))
    assert len(index) == 1
    assert index.query(a) == [("doc", 2)]
    assert all(
        key != ("doc", 1) for table in index._tables for bucket in table.values() for key in bucket
    )
    with pytest.raises(KeyError):
        index.remove(("doc", 1))
    index.remove(("doc", 2))
    assert all(not table for table in index._tables)  # empty buckets are dropped


def test_rejects_out_of_range_fingerprints() -> None:
    index: HammingIndex[str] = HammingIndex(64, 3)
    for bad in (-1, 1 << 64):
        with pytest.raises(ValueError):
            index.add(bad, "x")
        with pytest.raises(ValueError):
            index.query(bad)
    with pytest.raises(ValueError):
        table_keys_many(np.array([1 << 40], dtype=np.uint64), TableDesign(40, 3, 5))
    with pytest.raises(ValueError):
        table_keys_many(np.zeros(1, dtype=np.uint64), TableDesign(128, 3, 5))
    index.add(np.uint64(7), "numpy ints are fine")  # type: ignore[arg-type]
    assert index.query(7) == ["numpy ints are fine"]
