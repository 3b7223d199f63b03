"""Embedded copies: a whole earlier article inside a longer new text.

The main case of an originality check: a submission that writes some words of its own, then
pastes a whole published article. Real Reuters-21578 stories (:func:`harness.data.reuters`):
:func:`stories` are the earlier articles, no two alike; :func:`own_words` are a new text's own
words, taken from other stories that are never registered; :func:`embedded` lays the two out
as a writer does, the new words first, the article as its own paragraphs after them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cache

import numpy as np
import numpy.typing as npt

from harness import data
from neardup.sketch import features, verify
from neardup.stream.model import Article

__all__ = ["OWN_WORDS", "embedded", "own_words", "stories"]

OWN_WORDS = 300
_STORY_WORDS = (100, 600)  # an article: more than a brief, less than a feature
_DISTINCT = 0.3  # no two stories (nor a story and another's own words) this alike by Jaccard


@cache
def _pool(seed: int) -> tuple[dict[str, str], ...]:
    lo, hi = _STORY_WORDS
    found = [d for d in data.reuters() if lo <= len(d["text"].split()) <= hi]
    random.Random(seed).shuffle(found)
    return tuple(found)


def stories(n: int, seed: int = 7) -> list[Article]:
    """``n`` Reuters stories of 100 to 600 words, no two alike (Jaccard of their shingles
    below 0.3: the wire sends some stories twice)."""
    kept: list[tuple[dict[str, str], npt.NDArray[np.uint64]]] = []
    for d in _pool(seed):
        mine = features.shingle_hashes(d["text"])
        if all(verify.jaccard(mine, other) < _DISTINCT for _, other in kept):
            kept.append((d, mine))
        if len(kept) == n:
            return [Article(d["id"], d["text"]) for d, _ in kept]
    raise ValueError(f"only {len(kept)} distinct stories")


def own_words(k: int, words: int = OWN_WORDS, seed: int = 7, avoid: Sequence[str] = ()) -> str:
    """The ``k``-th new text's own words: ``words`` words running over stories taken from the
    far end of the pool (never among :func:`stories` of the same seed, nor ``avoid``'s ids),
    a different run for each ``k``."""
    skip = set(avoid)
    pool = [d for d in reversed(_pool(seed)) if d["id"] not in skip]
    out: list[str] = []
    j = 3 * k
    while len(out) < words:
        out += pool[j % len(pool)]["text"].split()
        j += 1
    return " ".join(out[:words])


def embedded(own: str, story: str) -> str:
    """A new text that writes ``own`` and then quotes ``story`` whole, as its own paragraphs."""
    return own + "\n\n" + story
