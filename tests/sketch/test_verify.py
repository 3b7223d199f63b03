"""Exact verification measures: small exact cases and pure-Python references."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.sketch.verify import containment, cosine, edit_similarity, intersection_size, jaccard

U64 = npt.NDArray[np.uint64]


def _set(*xs: int) -> U64:
    return np.unique(np.array(xs, dtype=np.uint64))


EMPTY = _set()
# Small values collide often (real sets share elements); large ones test the full 64-bit range.
elements = st.lists(st.integers(0, 40) | st.integers(2**64 - 40, 2**64 - 1), max_size=60)


def test_jaccard_exact_values() -> None:
    assert jaccard(_set(1, 2, 3), _set(2, 3, 4)) == 2 / 4
    assert jaccard(_set(1, 2), _set(1, 2)) == 1.0
    assert jaccard(_set(1, 2), _set(3, 4)) == 0.0
    assert jaccard(_set(1), _set(1, 2, 3, 4)) == 0.25
    assert jaccard(_set(2**64 - 1, 0), _set(2**64 - 1)) == 0.5


def test_empty_sets() -> None:
    assert jaccard(EMPTY, EMPTY) == 0.0  # no shingles, no evidence of a copy
    assert jaccard(EMPTY, _set(1)) == 0.0
    assert jaccard(_set(1), EMPTY) == 0.0
    assert containment(EMPTY, _set(1)) == 0.0
    assert containment(_set(1), EMPTY) == 0.0
    assert intersection_size(EMPTY, _set(1, 2)) == 0


def test_containment_exact_values() -> None:
    small, large = _set(1, 2, 3, 4), _set(2, 3, 4, 5, 6, 7, 8, 9)
    assert containment(small, large) == 0.75
    assert containment(large, small) == 3 / 8
    assert containment(small, small) == 1.0
    assert intersection_size(small, large) == 3


@given(elements, elements)
def test_measures_match_pure_python(xs: list[int], ys: list[int]) -> None:
    a, b = _set(*xs), _set(*ys)
    sa, sb = set(xs), set(ys)
    assert intersection_size(a, b) == len(sa & sb)
    union = len(sa | sb)
    expected_jaccard = len(sa & sb) / union if union else 0.0
    assert jaccard(a, b) == expected_jaccard
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0
    assert containment(a, b) == (len(sa & sb) / len(sa) if sa else 0.0)
    assert 0.0 <= containment(a, b) <= 1.0


def test_cosine_exact_values() -> None:
    h = _set(1, 2, 3)
    w = np.array([1.0, 2.0, 2.0])
    assert cosine(h, w, h, w) == 1.0
    assert cosine(h, w, h, 3.0 * w) == 1.0
    # shared hash 2 only: (2 * 4) / (3 * 4)
    assert cosine(h, w, _set(2, 9), np.array([4.0, 0.0])) == pytest.approx(2 / 3, rel=1e-15)
    assert cosine(h, w, _set(7, 8), np.array([1.0, 1.0])) == 0.0
    assert cosine(h, w, EMPTY, np.empty(0)) == 0.0
    assert cosine(h, np.zeros(3), h, w) == 0.0
    huge = np.array([1e300, 2e300, 2e300])
    assert cosine(h, huge, h, huge) == 1.0
    tiny = _set(5), np.array([1e-300])
    assert cosine(*tiny, *tiny) == 1.0
    with pytest.raises(ValueError):
        cosine(h, w[:2], h, w)


@given(
    st.lists(
        st.tuples(st.integers(0, 2**64 - 1), st.floats(1e-6, 1e6)),
        min_size=1,
        max_size=80,
        unique_by=lambda t: t[0],
    )
)
def test_cosine_of_identical_vectors_is_one(items: list[tuple[int, float]]) -> None:
    items.sort()
    h = np.array([k for k, _ in items], dtype=np.uint64)
    w = np.array([v for _, v in items])
    assert cosine(h, w, h, w.copy()) == 1.0


# No tiny weights: the dense reference's norm would underflow (cosine itself rescales first).
weights = st.just(0.0) | st.floats(1e-3, 100.0)


@given(
    st.dictionaries(st.integers(0, 30), weights, max_size=20),
    st.dictionaries(st.integers(0, 30), weights, max_size=20),
)
def test_cosine_matches_dense_reference(da: dict[int, float], db: dict[int, float]) -> None:
    def sparse(d: dict[int, float]) -> tuple[U64, npt.NDArray[np.float64]]:
        keys = sorted(d)
        return np.array(keys, dtype=np.uint64), np.array([d[k] for k in keys], dtype=np.float64)

    dense_a, dense_b = np.zeros(31), np.zeros(31)
    for k, v in da.items():
        dense_a[k] = v
    for k, v in db.items():
        dense_b[k] = v
    norm = float(np.linalg.norm(dense_a) * np.linalg.norm(dense_b))
    expected = float(dense_a @ dense_b) / norm if norm > 0 else 0.0
    got = cosine(*sparse(da), *sparse(db))
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert 0.0 <= got <= 1.0


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("", "", 1.0),
        ("abc", "", 0.0),
        ("abc", "abc", 1.0),
        ("kitten", "sitting", 1 - 3 / 7),
        ("flaw", "lawn", 1 - 2 / 4),
        ("abcd", "abdc", 0.5),  # a transposition is two edits for Levenshtein
        ("Ünïcödé", "Unicode", 1 - 4 / 7),
        ("重复检测", "重复检查", 0.75),
    ],
)
def test_edit_similarity_exact(a: str, b: str, expected: float) -> None:
    assert edit_similarity(a, b) == pytest.approx(expected, abs=1e-15)
    assert edit_similarity(b, a) == edit_similarity(a, b)
