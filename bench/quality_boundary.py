"""Copies across the short/long boundary: real Reuters sentences of 24-36 words, sent again with
a byline of one to four words before them, or with their first one to three words dropped; and
real short briefs sent again with every mark taken out (decimal points too), with a tag or
without, against the same with one digit changed besides (should not be linked).

Each pair is judged in a fresh in-memory index (the original added, the copy checked): found
when the verdict links it (``duplicate`` or ``near_duplicate``), related when it only lists the
original as related. Run ``python -m bench.quality_boundary`` (prints JSON).
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from harness.data import reuters
from harness.noisy_briefs import briefs
from neardup.api import Index

SEED = 42
PAIRS = 40
BYLINES = (
    "Staff report:",
    "By Anna Keller",
    "From our correspondent:",
    "Reuters",
    "Market wrap, by David Ng:",
    "Update:",
    "By our staff",
    "Newswire staff report:",
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences(lo: int = 24, hi: int = 36, n: int = PAIRS, seed: int = SEED) -> list[str]:
    """``n`` distinct sentences of ``lo``-``hi`` words from Reuters bodies, in a seeded order."""
    found: list[str] = []
    seen: set[str] = set()
    for story in reuters()[:4000]:
        body = " ".join(story["text"].split("\n", 1)[-1].split())
        for s in _SENTENCE.split(body):
            words = s.split()
            if lo <= len(words) <= hi and s not in seen and s.upper() != s:
                seen.add(s)
                found.append(s)
    random.Random(seed).shuffle(found)
    return found[:n]


def bylined(items: Sequence[str], seed: int = SEED) -> list[tuple[str, str]]:
    """Each item with a byline of one to four words before it."""
    rng = random.Random(seed)
    return [(s, f"{rng.choice(BYLINES)} {s}") for s in items]


def dropped(items: Sequence[str], seed: int = SEED) -> list[tuple[str, str]]:
    """Each item without its first one to three words."""
    rng = random.Random(seed)
    return [(s, " ".join(s.split()[rng.randint(1, 3) :])) for s in items]


def judged(pairs: Sequence[tuple[str, str]]) -> dict[str, int]:
    """How many copies are linked, how many only related."""
    found = related = 0
    for original, copy in pairs:
        with Index() as ix:
            ix.add("a", original)
            v = ix.check(copy)
        found += v.verdict in ("duplicate", "near_duplicate")
        related += v.verdict == "original" and bool(v.related)
    return {"pairs": len(pairs), "found": found, "related": related}


def stripped(n: int = 200, seed: int = SEED) -> list[tuple[str, str, str]]:
    """Real briefs with a mark after a word: each without any mark (``stripped``), so and
    tagged (``stripped+tag``), so with one digit changed (``digit``, of those with digits)."""
    pool = [t for t in briefs() if re.search(r"[A-Za-z][.,;:]", t)]
    rng = random.Random(seed)
    out = []
    for t in rng.sample(pool, min(n, len(pool))):
        bare = "".join(c for c in t if not unicodedata.category(c).startswith(("P", "S")))
        out.append((t, bare, "stripped"))
        out.append((t, bare + " (via newswire)", "stripped+tag"))
        spots = [i for i, c in enumerate(bare) if c.isdigit()]
        if spots:
            i = rng.choice(spots)
            out.append((t, bare[:i] + str((int(bare[i]) + 1) % 10) + bare[i + 1 :], "digit"))
    return out


def run(seed: int = SEED) -> dict[str, Any]:
    items = sentences(seed=seed)
    briefs_ = stripped(seed=seed)
    by_kind = {
        kind: judged([(a, b) for a, b, k in briefs_ if k == kind])
        for kind in ("stripped", "stripped+tag", "digit")
    }
    return {
        "briefs": by_kind,
        "byline": judged(bylined(items, seed)),
        "first_words_dropped": judged(dropped(items, seed)),
        "byline_reverse": judged([(c, o) for o, c in bylined(items, seed)]),
        "dropped_reverse": judged([(c, o) for o, c in dropped(items, seed)]),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
