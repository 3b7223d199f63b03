"""The scale benchmark's corpus: the Reuters-21578 stories, then lightly edited copies.

The first documents are the stories in the wire's order (:func:`harness.data.reuters`); every later
document is a copy of an earlier one, drawn uniformly from everything before it (so copies of
copies occur, and a story's family grows with the corpus), with a few word edits: a share of its
words drawn from ``[EDIT_MIN, EDIT_MAX]`` (at least one edit), each edit a substitution, an
insertion or a deletion with equal odds, the new words drawn from the stories' vocabulary. Seeded:
one seed gives one corpus, and a smaller size is a prefix of a larger one.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.corpus import peer_shingles

__all__ = ["EDIT_MAX", "EDIT_MIN", "Corpus", "Shingles", "build", "edit", "vocabulary"]

EDIT_MIN = 0.01
EDIT_MAX = 0.05
_WORD_SEP = re.compile(r"(\S+)(\s*)")
_LEAD = re.compile(r"\s*")
_VOCAB_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


@dataclass
class Corpus:
    """Documents in stream order, and for each its source: ``-1`` for a story, else the index of
    the earlier document it is a copy of; ``edits`` is the number of word edits a copy got."""

    docs: list[dict[str, str]]
    sources: list[int]
    edits: list[int]
    stories: int  # the first documents that are stories

    def copies(self, n: int) -> int:
        return max(0, n - self.stories)


def vocabulary(stories: Sequence[Mapping[str, Any]]) -> list[str]:
    """The distinct words of the stories (letters, at least two), sorted: a seed's draws from it
    are the same on every machine."""
    words: set[str] = set()
    for s in stories:
        words.update(_VOCAB_WORD.findall(s["text"]))
    return sorted(words)


def edit(text: str, rng: random.Random, vocab: Sequence[str]) -> tuple[str, int]:
    """``text`` with a few word edits (its whitespace kept around the words it keeps), and how
    many."""
    lead = _LEAD.match(text)
    head = lead.group(0) if lead else ""
    words = [[w, s] for w, s in _WORD_SEP.findall(text)]
    if not words:
        return text + " " + rng.choice(vocab), 1
    k = max(1, round(rng.uniform(EDIT_MIN, EDIT_MAX) * len(words)))
    for _ in range(k):
        op = rng.randrange(3)
        i = rng.randrange(len(words))
        if op == 0:
            words[i][0] = rng.choice(vocab)
        elif op == 1:
            words.insert(i, [rng.choice(vocab), " "])
        elif len(words) > 1:
            if i == len(words) - 1:  # the last word's separator stays with the text's end
                words[i - 1][1] = words[i][1]
            del words[i]
        else:
            words[0][0] = rng.choice(vocab)
    return head + "".join(w + s for w, s in words), k


def build(stories: Sequence[Mapping[str, Any]], n: int, seed: int) -> Corpus:
    """The first ``min(n, len(stories))`` stories, then copies up to ``n`` documents."""
    rng = random.Random(seed)
    vocab = vocabulary(stories)
    first = min(n, len(stories))
    docs = [{"id": str(s["id"]), "text": str(s["text"])} for s in stories[:first]]
    sources = [-1] * first
    edits = [0] * first
    for i in range(first, n):
        src = rng.randrange(i)
        text, k = edit(docs[src]["text"], rng, vocab)
        docs.append({"id": f"copy{i:07d}", "text": text})
        sources.append(src)
        edits.append(k)
    return Corpus(docs, sources, edits, first)


class Shingles:
    """Every document's :func:`~harness.corpus.peer_shingles`, hashed to 64 bits and sorted, in
    one array: the exact Jaccard of any two documents (short of a 64-bit hash collision) without
    keeping a set per document."""

    def __init__(self, texts: Sequence[str]) -> None:
        sizes = np.zeros(len(texts) + 1, dtype=np.int64)
        parts: list[np.ndarray] = []
        for i, text in enumerate(texts):
            sh = peer_shingles(text)
            arr = np.fromiter((hash(x) for x in sh), dtype=np.int64, count=len(sh))
            arr.sort()
            parts.append(arr)
            sizes[i + 1] = len(arr)
        self._at = np.cumsum(sizes)
        self._all = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def of(self, i: int) -> np.ndarray:
        return self._all[self._at[i] : self._at[i + 1]]

    def jaccard(self, i: int, j: int) -> float:
        a, b = self.of(i), self.of(j)
        if not len(a) and not len(b):
            return 0.0
        common = len(np.intersect1d(a, b, assume_unique=True))
        return common / (len(a) + len(b) - common)
