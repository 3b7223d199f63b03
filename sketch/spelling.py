"""When two texts' words differ only in how they are spelled: a typo, a word split or joined.

:func:`is_typo` says what a typo is (two adjacent letters swapped, or one letter changed, added
or dropped in a longer word); :func:`pair_typos` pairs the words two texts do not share that
are typos of each other, or of a stop word; :func:`pair_joins` pairs a word of one text with
the words of the other that join into it (``taxfree`` / ``tax free``); :func:`run_spelling`
finds the tokens a word runs together (``twoforone`` / ``two for one``). What
:func:`neardup.sketch.facts.compare` does not count as a difference between two texts' facts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rapidfuzz.distance import OSA

# the words the core of a text leaves out (:func:`neardup.sketch.facts.facts_of`); a word one
# edit from a long one is a typo of it (:func:`pair_typos`)
_STOP = (
    "a an the of to at on in from by its it for and or is are was were be as with that this "
    "的 地 得 了 着 将 为 于 在 是 和 与 及 之 也 并 被 把"
)
STOP_WORDS = frozenset(_STOP.split())
_LONG_STOPS = tuple(sorted(w for w in STOP_WORDS if len(w) >= 4))
# the stop words a word of each length may be a typo of (one letter more, fewer or changed)
_STOPS_BY_LENGTH = {n: tuple(w for w in _LONG_STOPS if abs(len(w) - n) <= 1) for n in range(3, 64)}


def is_typo(w: str, v: str) -> bool:
    """A typo: two adjacent letters swapped in a word of four letters or more (``frmo``), or one
    letter changed, added or dropped in a word of six or more (``prced`` for ``priced``); a
    letter changed in a shorter word is another word (``cuts``, ``puts``)."""
    if min(len(w), len(v)) < 4 or OSA.distance(w, v, score_cutoff=1) > 1:
        return False
    return max(len(w), len(v)) >= 6 or (len(w) == len(v) and sorted(w) == sorted(v))


def pair_typos(gone: list[str], came: list[str], allowed: int) -> tuple[list[str], list[str]]:
    """Pair words that went with words that came one edit apart (a typo), at most ``allowed``
    pairs, and count a word one edit from a stop word (``frmo``) as a typo too; what stays
    unpaired is a difference (:func:`is_typo` says what a typo is). A CJK character is never a
    typo of another: ``沪`` and ``深`` are two exchanges."""
    left, right = sorted(gone), sorted(came)
    paired = 0
    for w in list(left):
        if paired == allowed:
            return left, right
        if len(w) < 4:
            continue
        for v in right:
            if abs(len(w) - len(v)) <= 1 and is_typo(w, v):
                left.remove(w)
                right.remove(v)
                paired += 1
                break
    for side in (left, right):
        for w in list(side):
            if paired == allowed:
                return left, right
            if any(is_typo(w, stop) for stop in _STOPS_BY_LENGTH.get(len(w), ())):
                side.remove(w)
                paired += 1
    return left, right


def run_spelling(
    word: str, tokens: Sequence[tuple[str | None, str]], typo: bool
) -> tuple[list[tuple[str | None, str]], bool]:
    """Two to four consecutive ``tokens`` (no CJK) that spell ``word`` run together, and
    whether with a typo (``typo``: one is allowed; the word then has eight letters or more);
    ``[]`` when none do."""
    near: list[tuple[str | None, str]] = []
    typo = typo and len(word) >= 8
    for i in range(len(tokens) - 1):
        joined = tokens[i][1]
        if not (typo and not near) and not word.startswith(joined):
            continue  # only the exact spelling is looked for, and no run from here spells it
        for j in range(i + 1, min(i + 4, len(tokens))):
            kind, tok = tokens[j]
            if kind == "cjk":
                break
            joined += tok
            if joined == word:
                return list(tokens[i : j + 1]), False
            # a typo is one edit: lengths more than one apart never are (no call made)
            if typo and not near and abs(len(joined) - len(word)) <= 1 and is_typo(word, joined):
                near = list(tokens[i : j + 1])
            if len(joined) > len(word) + 1:
                break
    return near, bool(near)


def pair_joins(
    gone: list[str], came: list[str], earlier: Sequence[str], now: Sequence[str]
) -> tuple[list[str], list[str]]:
    """Pair a word of one side with two to four consecutive words of the other that join into
    it (``taxfree`` and ``tax free``, ``us`` and ``u s``); what stays unpaired is returned."""
    if not any(
        w != v and w.startswith(v) for x, y in ((gone, came), (came, gone)) for w in x for v in y
    ):
        return gone, came  # no word of one side starts with a word of the other
    left_gone, left_came = Counter(gone), Counter(came)
    for whole, parts, words in ((left_gone, left_came, now), (left_came, left_gone, earlier)):
        for w in list(whole.elements()):
            for i, first in enumerate(words):
                if parts[first] == 0 or not w.startswith(first):
                    continue
                j, joined = i + 1, first
                while j < len(words) and j - i < 4 and len(joined) < len(w):
                    joined += words[j]
                    j += 1
                run = Counter(words[i:j])
                if joined == w and j - i > 1 and not run - parts:
                    parts -= run
                    whole[w] -= 1
                    break
    return sorted((+left_gone).elements()), sorted((+left_came).elements())


__all__ = ["STOP_WORDS", "is_typo", "pair_joins", "pair_typos", "run_spelling"]
