"""The one backoff helper: doubling waits, capped, without end."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.stream.backoff import backoff


def test_waits_double_up_to_the_cap() -> None:
    assert list(itertools.islice(backoff(0.5, 5.0), 7)) == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


def test_a_first_wait_above_the_cap_is_kept_once() -> None:
    """As the loops it replaced: the first wait is ``first_s``, the cap applies from the second."""
    assert list(itertools.islice(backoff(0.5, 0.2), 3)) == [0.5, 0.2, 0.2]


@given(st.floats(1e-3, 10.0), st.floats(1e-3, 60.0), st.integers(1, 200))
def test_never_ends_never_exceeds_the_cap_after_the_first(first: float, cap: float, n: int) -> None:
    waits = list(itertools.islice(backoff(first, cap), n))
    assert len(waits) == n
    assert waits[0] == first
    assert all(w <= cap for w in waits[1:])
    assert all(b >= a or b == cap for a, b in itertools.pairwise(waits))


@pytest.mark.parametrize(("first", "cap"), [(0.0, 1.0), (1.0, 0.0), (-1.0, 1.0)])
def test_non_positive_waits_are_refused(first: float, cap: float) -> None:
    with pytest.raises(ValueError):
        next(backoff(first, cap))
