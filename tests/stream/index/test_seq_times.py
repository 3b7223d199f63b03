"""The memory index's registration-time pages behave as the dict they replace."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.stream.index.seq_times import PAGE_BITS, SeqTimes

# seqs near page edges, far apart (the counter can start anywhere below 2**53) and close together
_SEQS = st.one_of(
    st.integers(1, 3 << PAGE_BITS),
    st.integers(2**53 - (2 << PAGE_BITS), 2**53),
    st.sampled_from([1, (1 << PAGE_BITS) - 1, 1 << PAGE_BITS, (1 << PAGE_BITS) + 1]),
)
_TIMES = st.floats(-1e12, 1e12, allow_nan=False)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), _SEQS, _TIMES),
        st.tuples(st.just("pop"), _SEQS, st.just(0.0)),
        st.tuples(st.just("expire"), _TIMES, st.integers(0, 5)),
    ),
    max_size=60,
)


@given(_OPS)
def test_pages_behave_as_a_dict(ops: list[tuple[str, float, float]]) -> None:
    model: dict[int, float] = {}
    pages = SeqTimes()
    for op, a, b in ops:
        if op == "set":
            model[int(a)] = b
            pages[int(a)] = b
        elif op == "pop":
            assert pages.pop(int(a), None) == model.pop(int(a), None)
        else:
            want = [s for _, s in sorted((t, s) for s, t in model.items() if t < a)[: int(b)]]
            assert pages.oldest_before(a, int(b)) == want
            for s in want:  # what expiry does with them
                del model[s]
                pages.pop(s)
        assert len(pages) == len(model)
        assert list(pages.items()) == sorted(model.items())
    for seq, at in model.items():
        assert seq in pages
        assert pages[seq] == at
        assert pages.get(seq) == at
    assert SeqTimes(model.items()).oldest_before(math.inf, 10**9) == [
        s for _, s in sorted((t, s) for s, t in model.items())
    ]


def test_an_emptied_page_is_dropped() -> None:
    pages = SeqTimes((s, 1.0) for s in range(1, 3 << PAGE_BITS))
    held = len(pages._pages)
    for s in range(1, 1 << PAGE_BITS):
        pages.pop(s)
    assert len(pages._pages) == held - 1
    assert 5 not in pages and pages.get(5) is None
    with pytest.raises(KeyError):
        pages[5]


def test_nan_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        SeqTimes()[1] = math.nan
