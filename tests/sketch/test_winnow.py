"""Winnowed passages (:mod:`neardup.sketch.winnow`): what a text shares with every text that
contains it, whatever surrounds it there."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.embedded import embedded, own_words, stories
from neardup.sketch import features
from neardup.sketch.winnow import passages, passages_many, sliding_min

WIDTH, SPAN = 6, 16

_HASHES = st.lists(st.integers(0, 2**64 - 1), max_size=120).map(
    lambda xs: np.array(xs, dtype=np.uint64)
)
_FEW = st.lists(st.integers(0, 4), max_size=60).map(lambda xs: np.array(xs, dtype=np.uint64))


def _windows(text: str) -> np.ndarray:
    return features.combine_windows(features.text_token_hashes(text), 3)


@given(
    inner=st.lists(st.integers(0, 2**64 - 1), min_size=WIDTH + SPAN - 1, max_size=200),
    before=_HASHES,
    after=_HASHES,
)
def test_the_smallest_passage_of_a_text_is_kept_by_every_text_that_holds_it(
    inner: list[int], before: np.ndarray, after: np.ndarray
) -> None:
    """A text of at least ``span`` passages keeps its smallest one, and so does any text with
    it inside, whatever comes before and after it."""
    mine = np.array(inner, dtype=np.uint64)
    outer = np.concatenate([before, mine, after])
    kept, around = passages(mine, width=WIDTH, span=SPAN), passages(outer, width=WIDTH, span=SPAN)
    assert kept[0] in set(around.tolist())


@given(st.lists(st.one_of(_HASHES, _FEW), max_size=6), st.integers(1, 8), st.integers(1, 20),
       st.integers(0, 12))  # fmt: skip
def test_a_batch_keeps_what_each_text_keeps(
    texts: list[np.ndarray], width: int, span: int, limit: int
) -> None:
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in texts])]).astype(np.intp)
    joined = np.concatenate(texts) if texts else np.empty(0, np.uint64)
    values, out = passages_many(joined, offsets, width=width, span=span, limit=limit)
    for i, t in enumerate(texts):
        assert (
            values[out[i] : out[i + 1]].tolist()
            == passages(t, width=width, span=span)[:limit].tolist()
        )


def test_passages_are_sorted_unique_and_few() -> None:
    story = stories(1)[0].text
    kept = passages(_windows(story), width=WIDTH, span=SPAN)
    assert kept.tolist() == sorted(set(kept.tolist()))
    n = len(_windows(story))
    assert n / SPAN <= len(kept) <= 2.5 * n / (SPAN + 1)  # about 2 / (span + 1) of them
    assert passages(np.empty(0, np.uint64), width=WIDTH, span=SPAN).tolist() == []
    assert len(passages(_windows("a few words here"), width=WIDTH, span=SPAN)) == 1
    with pytest.raises(ValueError):
        passages(_windows(story), width=0, span=SPAN)


def test_a_story_quoted_after_new_words_keeps_its_smallest_passages() -> None:
    """Real text: every one of a Reuters story's passages that lies in a run wholly inside it
    is kept by the text that quotes it after 300 words of its own; its smallest is among them."""
    for story in stories(10):
        mine = passages(_windows(story.text), width=WIDTH, span=SPAN)
        theirs = set(
            passages(_windows(embedded(own_words(0, avoid=[story.id]), story.text)),
                     width=WIDTH, span=SPAN).tolist()
        )  # fmt: skip
        assert mine[0] in theirs
        assert len(set(mine.tolist()) & theirs) >= len(mine) - 2  # the edges' runs may differ


@given(_FEW, st.integers(1, 20))
def test_the_sliding_minimum_is_each_runs_smallest(values: np.ndarray, span: int) -> None:
    want = [int(values[i : i + span].min()) for i in range(len(values) - span + 1)]
    assert sliding_min(values, span).tolist() == want
