"""Passes of a corpus that repeat its duplicate structure without repeating its text.

Pass 0 is the pool; pass ``p >= 1`` maps each ASCII word through a seeded bijection within bands
of ``band`` adjacent frequency ranks (case and separators kept). Within a pass every exact Jaccard
stays (:meth:`Deriver.check`); across passes almost no shingle is shared.
"""

from __future__ import annotations

import random
import re
import sys
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.corpus import Doc, jaccard
from neardup.sketch.features import shingle_hashes

__all__ = ["BAND", "Deriver"]

BAND = 16  # words of adjacent frequency rank that a pass shuffles among themselves
CHECK_PAIRS = 300  # (near-duplicate, source) pairs whose Jaccard the check compares
_ALPHA = re.compile(r"([A-Za-z]+)")


class Deriver:
    """Pass ``p`` of the pool: a seeded, frequency-banded bijection of its ASCII words."""

    def __init__(self, pool: Sequence[Doc], seed: int, band: int = BAND) -> None:
        self.pool = list(pool)
        self.seed = seed
        index: dict[str, int] = {}
        counts: Counter[int] = Counter()
        self._docs: list[tuple[list[str], array[int]]] = []  # separators, word codes
        for d in self.pool:
            parts = _ALPHA.split(d["text"])
            codes: list[int] = []
            for w in parts[1::2]:
                i = index.setdefault(w.lower(), len(index))
                counts[i] += 1
                case = 2 if len(w) > 1 and w.isupper() else 1 if w[0].isupper() else 0
                codes.append(3 * i + case)
            self._docs.append(([sys.intern(x) for x in parts[0::2]], array("i", codes)))
        self.vocab = list(index)
        self._by_rank = sorted(range(len(self.vocab)), key=lambda i: (-counts[i], self.vocab[i]))
        self.band = band
        self._tables: dict[int, list[str]] = {}

    def table(self, p: int) -> list[str]:
        """Word code (``3 * word + case``) -> replacement text, for pass ``p``."""
        if p not in self._tables:
            image = list(range(len(self.vocab)))
            if p > 0:
                rng = random.Random(f"soak-{self.seed}-{p}")
                for lo in range(0, len(self._by_rank), self.band):
                    ranks = self._by_rank[lo : lo + self.band]
                    shuffled = ranks[:]
                    rng.shuffle(shuffled)
                    for src, dst in zip(ranks, shuffled, strict=True):
                        image[src] = dst
            out: list[str] = []
            for i in range(len(self.vocab)):
                w = self.vocab[image[i]]
                out += [w, w[:1].upper() + w[1:], w.upper()]
            self._tables[p] = out
        return self._tables[p]

    def text(self, j: int, p: int) -> str:
        if p == 0:
            return self.pool[j]["text"]
        seps, codes = self._docs[j]
        table = self.table(p)
        return seps[0] + "".join(table[c] + s for c, s in zip(codes, seps[1:], strict=True))

    def check(self, p: int = 1, pairs: int = CHECK_PAIRS) -> dict[str, Any]:
        """Exact Jaccard of (copy, source) pairs in pass 0 vs pass ``p``; and pass 0 vs ``p``."""
        pos = {d["id"]: j for j, d in enumerate(self.pool)}
        dups = [(j, pos[d["source"]]) for j, d in enumerate(self.pool) if d["source"] in pos]
        rng = random.Random(self.seed)
        sample = rng.sample(dups, min(pairs, len(dups)))
        diffs = []
        for j, s in sample:
            a = jaccard(shingle_hashes(self.text(j, 0)), shingle_hashes(self.text(s, 0)))
            b = jaccard(shingle_hashes(self.text(j, p)), shingle_hashes(self.text(s, p)))
            diffs.append(abs(a - b))
        cross = [
            jaccard(shingle_hashes(self.text(j, 0)), shingle_hashes(self.text(j, p)))
            for j in rng.sample(range(len(self.pool)), min(pairs, len(self.pool)))
        ]
        return {
            "pass": p,
            "pairs_checked": len(sample),
            "max_abs_jaccard_difference": max(diffs, default=0.0),
            "same_doc_across_passes_jaccard_mean": round(float(np.mean(cross)), 5),
            "same_doc_across_passes_jaccard_max": round(float(np.max(cross)), 5),
            "vocabulary": len(self.vocab),
        }
