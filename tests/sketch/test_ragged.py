"""Ragged batch helpers against the obvious per-document numpy, on arbitrary batches."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st

from neardup.sketch.ragged import segment_offsets, truncated_sets, unique_per_doc

U64 = npt.NDArray[np.uint64]

# small value ranges make repeats (within and across documents) and equal low 32 bits common
_values = st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 2**32, 2**32 + 1, 2**64 - 1])
_docs = st.lists(st.lists(_values, min_size=1, max_size=30), min_size=1, max_size=8)


def _ragged(docs: list[list[int]]) -> tuple[U64, npt.NDArray[np.intp]]:
    flat = np.array([v for d in docs for v in d], dtype=np.uint64)
    return flat, segment_offsets([len(d) for d in docs])


def test_segment_offsets() -> None:
    assert segment_offsets([3, 0, 2]).tolist() == [0, 3, 3, 5]
    assert segment_offsets([]).tolist() == [0]
    assert segment_offsets(np.array([4], dtype=np.intp)).dtype == np.intp


@given(_docs, st.data())
def test_unique_per_doc_is_sort_and_unique_of_each_chosen_document(
    docs: list[list[int]], data: st.DataObject
) -> None:
    flat, off = _ragged(docs)
    chosen = data.draw(st.lists(st.integers(0, len(docs) - 1), min_size=1, unique=True))
    sets = unique_per_doc(flat, off, chosen)
    for j, i in enumerate(chosen):
        doc = np.array(docs[i], dtype=np.uint64)
        u = sets.unique[sets.unique_offsets[j] : sets.unique_offsets[j + 1]]
        r = sets.repeated[sets.repeated_offsets[j] : sets.repeated_offsets[j + 1]]
        assert u.tolist() == np.unique(doc).tolist()
        assert r.tolist() == np.sort(doc).tolist()


def test_a_document_starting_with_the_last_value_of_the_previous_one_keeps_it() -> None:
    flat, off = _ragged([[5, 7], [7, 9]])
    sets = unique_per_doc(flat, off, [0, 1])
    assert sets.unique.tolist() == [5, 7, 7, 9]
    assert sets.unique_offsets.tolist() == [0, 2, 4]


@given(_docs)
def test_truncated_sets_are_the_unique_low_32_bits_of_each_document(docs: list[list[int]]) -> None:
    flat, off = _ragged(docs)
    values, offsets = truncated_sets(flat, off)
    assert values.dtype == np.uint32
    assert len(offsets) == len(docs) + 1
    for i, doc in enumerate(docs):
        want = np.unique(np.array(doc, dtype=np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        assert values[offsets[i] : offsets[i + 1]].tolist() == want.tolist()
