"""The in-memory index's bucket columns against the plainest model of a bucket table: a dict of
lists, earliest first, with the same cap rule, through any mix of additions, removals and
merges, and a round trip through the columns a saved index stores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.stream.index.columns import Buckets

BUCKET = st.sampled_from([0, 1, 7, 2**63, 2**64 - 1, 12345678901234567890])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(BUCKET, min_size=1, max_size=4), st.integers(1, 4)),
        st.tuples(st.just("remove"), st.lists(BUCKET, max_size=3), st.integers(1, 40)),
        st.tuples(st.just("settle"), st.just([]), st.just(0)),
        st.tuples(st.just("reload"), st.just([]), st.just(0)),  # entries -> of_entries (a file)
    ),
    max_size=60,
)


# seqs from the first, or crossing 2**32 (runs keep 4-byte seqs while they fit, then 8), or high
START = st.sampled_from([0, 2**32 - 5, 2**53 - 100])


@settings(max_examples=300, deadline=None)
@given(OPS, st.integers(1, 6), START)
def test_the_columns_behave_as_a_dict_of_lists(
    ops: list[tuple[str, list[int], int]], merge: int, start: int
) -> None:
    table = Buckets(merge_min=merge)
    model: dict[int, list[int]] = {}
    seq = start
    for op, ids, arg in ops:
        if op == "add":
            seq += 1
            found: set[int] = set()
            hot = table.add(ids, seq, arg, found)
            snapshot = {b: list(model.get(b, [])) for b in ids}
            want = {s for b in ids for s in snapshot[b]}
            want_hot = 0
            for b in ids:
                if len(snapshot[b]) < arg:
                    model[b] = [*snapshot[b], seq]
                else:
                    want_hot += 1
            assert (found, hot) == (want, want_hot)
            table.settle()
        elif op == "remove":
            table.remove(ids, start + arg)
            for b in ids:
                if start + arg in model.get(b, []):
                    model[b] = [s for s in model[b] if s != start + arg]
                    if not model[b]:
                        del model[b]
        elif op == "reload":
            ids_col, seqs_col = table.entries()
            table = Buckets.of_entries(ids_col, seqs_col, merge_min=merge)
        else:
            table.settle()
        for b in {0, 1, 7, 2**63, 2**64 - 1, 12345678901234567890}:
            assert table.members(b) == model.get(b, [])
        assert table.read(model) == {s for v in model.values() for s in v}
        assert len(table) == sum(map(len, model.values()))
        for cap in (1, 2, 3):
            assert table.hot(cap) == sum(1 for v in model.values() if len(v) >= cap)


def test_columns_out_of_order_or_of_two_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="not sorted"):
        Buckets.of_entries(np.array([2, 1], np.uint64), np.array([1, 2], np.int64))
    with pytest.raises(ValueError, match="different lengths"):
        Buckets.of_entries(np.array([1, 2], np.uint64), np.array([1], np.int64))
