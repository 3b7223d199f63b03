"""What a short text says, apart from how it is written: its core, its numbers and its words.

Two short texts (comments, titles, wire briefs) can be one character apart and still be two
stories: ``<FRANKLIN CALIFORNIA FUND> div 4.5 cts`` and ``<FRANKLIN FEDERAL FUND> div 7.7 cts``
are two funds. An edit similarity over the whole text cannot tell that from a typo, so the short
path asks two questions instead:

* **Surface noise** is dropped before anything is compared (the ``core`` of :func:`facts_of`):
  case (the text is normalised already), punctuation, symbols and emoji, links, ``@handles``,
  ``#tags``, query strings (``?utm_source=x``) and a few tracking phrases (``via``, ``read
  more``, ``阅读全文``), and stop words. What is left is the *core*; its edit similarity is the
  short-text similarity.
* **Facts** are what a reader reads as content: *numbers* (Arabic digits, Chinese
  numerals and English number words, each read as its value, so ``TWO`` and ``2`` agree,
  ``1,750`` and ``1750`` agree, ``三十五`` and ``35`` agree) and *words* (the content words of
  alphabetic scripts, and the CJK characters that are not numerals). :func:`differences` says
  which facts of two texts differ; a typo (two letters swapped, or one letter changed in a word
  of six letters or more; at most one per ten words) and a swap of two CJK characters are not
  differences (the rules of spelling are :mod:`neardup.sketch.spelling`'s).

Everything here is a pure function of the text, so a worker deciding an article from its stored
record reaches what the first worker reached.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Literal

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from neardup.sketch.canonical import has_mark, mark_class
from neardup.sketch.digits import TIME_ZONES
from neardup.sketch.spelling import STOP_WORDS, pair_joins, pair_typos, run_spelling

FactKind = Literal["number", "word", "date"]

_CJK = "\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
_ZH_NUMERAL = "".join([*_ZH_DIGITS, *_ZH_UNITS, *_ZH_BIG])

# Surface noise: links, handles, tags, query strings, then tracking phrases (whole words).
_NOISE_RE = re.compile(
    r"(?:https?://|www\.)\S*"  # links
    r"|[?&][\w.%-]+=\S*"  # query strings: ?utm_source=x&...
    r"|[@#][^\W_][\w.-]*"  # @handles, #tags
)
_TRACKING_RE = re.compile(
    r"\b(?:read more|read the full story|full story|click here|more at|via)\b"
    r"|阅读全文|点击阅读|查看详情|详情请点击|转自"
)
# a word: letters, and letters joined by a point, an apostrophe or a hyphen (``u.s``,
# ``treasury's``, ``tax-free``), which the core drops: a word is one word however it is dotted
_JOINERS = ".'\u2019\u02bc-"


def _token_pattern(letters: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?P<num>\d+(?:[.,]\d+)*)|(?P<zhnum>[{_ZH_NUMERAL}]+)|(?P<cjk>[{_CJK}])"
        rf"|(?P<word>{letters}(?:[{_JOINERS}](?![{_CJK}]){letters})*)"
    )


# a mark is a part of its word (Thai, Hindi); a text with no mark takes the simpler pattern
_TOKEN_RE = _token_pattern(rf"(?:[^\W\d_]|{mark_class()})+")
_PLAIN_TOKEN_RE = _token_pattern(r"[^\W\d_]+")
_JOINERS_RE = re.compile(f"[{_JOINERS}]")
# a time of day with its zone (``11:00 edt``, ``0900 gmt``): when a desk sent an item, not what
# it says; a bare ``11:00`` (a meeting's time) stays a number
_STAMP_RE = re.compile(
    r"(?<![0-9.,:])(?:[01]?[0-9]|2[0-4]):?[0-5][0-9](?::[0-5][0-9])? ?"
    rf"(?P<zone>{TIME_ZONES})(?![a-z])"
)
_CJK_GAP_RE = re.compile(f"(?<=[{_CJK}]) (?=[{_CJK}])")
# a word followed by a mark: what a text stripped of its punctuation has none of
_MARKED_RE = re.compile(r"[^\W\d_][.,;:!?\u3001\u3002]")
_EN_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
             "fourteen fifteen sixteen seventeen eighteen nineteen twenty")  # fmt: skip
_EN_NUMBERS = dict(zip(_EN_UNITS.split(), range(21), strict=True)) | {
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100, "thousand": 1000,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Difference:
    """A fact one text has and the other has not (``None``: nothing in its place)."""

    kind: FactKind
    earlier: str | None
    now: str | None


@dataclass(frozen=True, slots=True)
class Facts:
    """A text's core (for the edit similarity), its numbers and its content words, in order;
    ``tokens``: the core's numbers (as values) and words, in order (where each one stands)."""

    core: str
    numbers: tuple[str, ...]  # values: 2 for "two", 1750 for "1,750", 35 for "三十五"
    numerals: tuple[str, ...]  # the same numbers as the text writes them (what a reader sees)
    words: tuple[str, ...]
    tokens: tuple[str, ...] = ()
    # every token as written, with its kind, stop words included (:func:`compare` reads a word
    # run together from words the other text keeps apart, ``twoforone`` / ``two for one``)
    written: tuple[tuple[str | None, str], ...] = ()
    # whether a word is followed by a mark (``corp,``, ``ago.``, ``f.``): a text that has
    # none, against one that has, had its punctuation taken out (:func:`compare`)
    marked: bool = False


@dataclass(frozen=True, slots=True)
class Comparison:
    """What two texts' facts say (:func:`compare`): the differences, and the two cores less the
    words either adds at its edges when those are noise (what the edit similarity compares)."""

    changes: tuple[Difference, ...]
    earlier: str
    now: str


def _arabic(token: str) -> str:
    """``1,750`` -> ``1750`` (a thousands comma), ``4.50`` -> ``4.5``; a decimal comma stays."""
    if token.isdigit():  # most numerals: neither a comma nor a point
        return token.lstrip("0") or "0"
    if _THOUSANDS_RE.fullmatch(token):
        token = token.replace(",", "")
    if _DECIMAL_RE.fullmatch(token):
        token = token.rstrip("0").rstrip(".")
    return (token.lstrip("0") or "0") if token.isdigit() else token


def _zh_value(run: str) -> str:
    """A run of Chinese numerals as its value (``三十五`` -> ``35``, ``一二`` -> ``12``)."""
    if all(c in _ZH_DIGITS for c in run):  # digit by digit, as years and codes are written
        return str(int("".join(str(_ZH_DIGITS[c]) for c in run)))
    total = section = digit = 0
    for c in run:
        if c in _ZH_DIGITS:
            digit = _ZH_DIGITS[c]
        elif c in _ZH_UNITS:
            section += (digit or 1) * _ZH_UNITS[c]
            digit = 0
        else:
            total += (section + digit) * _ZH_BIG[c]
            section = digit = 0
    return str(total + section + digit)


# Bounded in bytes, not only entries: a text of a few words can be long (a word of tens of
# KB), and a cache keyed by whole texts would keep every one a stranger sends. Only texts of at
# most FACTS_CACHE_CHARS characters are kept, FACTS_CACHE_ENTRIES of them: at most about
# 2 * 8192 * 1024 characters with their facts (the facts are no longer than the text).
FACTS_CACHE_ENTRIES = 8192
FACTS_CACHE_CHARS = 1024


def facts_of(text: str) -> Facts:
    """The core, numbers and content words of an already normalised text (see module doc)."""
    if len(text) > FACTS_CACHE_CHARS:
        return _facts_read(text)
    return _facts_cached(text)


def _facts_read(text: str) -> Facts:
    text = _TRACKING_RE.sub(" ", _NOISE_RE.sub(" ", text))
    return _facts_of_tokens(tuple(_tokens(text)), bool(_MARKED_RE.search(text)))


_facts_cached = lru_cache(maxsize=FACTS_CACHE_ENTRIES)(_facts_read)


def _facts_of_tokens(written: tuple[tuple[str | None, str], ...], marked: bool) -> Facts:
    core: list[str] = []
    values: list[str] = []
    shown: list[str] = []
    words: list[str] = []
    for kind, tok in written:
        if kind == "zhnum" and tok[-1] in _ZH_BIG and len(tok) > 1:
            # 三十五亿 reads as 35 and the unit 亿, as 35亿 does
            values.append(_zh_value(tok[:-1]))
            shown.append(tok[:-1])
            words.append(tok[-1])
            core.append(values[-1])
            tok = tok[-1]
        elif kind == "zhnum" and any(c not in _ZH_BIG for c in tok):
            values.append(_zh_value(tok))
            shown.append(tok)
            tok = values[-1]
        elif kind == "num":
            values.append(_arabic(tok))
            shown.append(tok)
            tok = values[-1]
        elif tok in STOP_WORDS:
            continue
        elif kind == "word" and tok in _EN_NUMBERS:
            values.append(str(_EN_NUMBERS[tok]))
            shown.append(tok)
            tok = values[-1]
        else:
            words.extend(tok if kind == "zhnum" else [tok])  # a lone 万/亿: a unit, a word
        core.append(tok)
    return Facts(
        _joined(core), tuple(values), tuple(shown), tuple(words), tuple(core), written, marked
    )


def _unglued(glued: Facts, apart: Facts) -> Facts:
    """``glued`` with each word it runs together from two to four consecutive tokens of
    ``apart`` (``twoforone`` / ``two for one``, ``oneday`` / ``one day``, ``2for1`` /
    ``2 for 1``) read as those tokens: spacing and punctuation are noise, and the numbers and
    stop words inside such a word are what the other text says they are. One such word may
    hold a typo besides (``cehrnobylgrain``), as one word may (:func:`is_typo`)."""
    theirs = apart.written
    present = {tok for _, tok in theirs}
    out: list[tuple[str | None, str]] = []
    typo = True  # one run-together word may carry a typo
    for kind, tok in glued.written:
        if kind in ("word", "num") and tok not in present and len(tok) > 2:
            run, near = run_spelling(tok, theirs, typo)
            if run:
                out += run
                typo = typo and not near
                continue
        out.append((kind, tok))
    return _facts_of_tokens(tuple(out), glued.marked) if len(out) != len(glued.written) else glued


def unstamped(text: str, norm: str, head: str) -> str:
    """``norm`` (the normalised ``text``) without the times of day a desk stamped on its
    headline (``MIDWEST GRAIN FUTURES 11:00 EDT`` over the prices): when an item was sent, not
    what it says. Only a headline over a body (``head``: the first line, normalised); a text
    of one line keeps its times (two bulletins of a day differ by theirs)."""
    if "\n" not in text.strip() or not norm.startswith(head):
        return norm
    return _STAMP_RE.sub(r"\g<zone>", head) + norm[len(head) :]


def _tokens(text: str) -> Iterator[tuple[str | None, str]]:
    """The tokens of a text with their kinds; a word's joining points and apostrophes dropped
    (``u.s`` -> ``us``, ``treasury's`` -> ``treasurys``, ``tax-free`` -> ``taxfree``: as
    written without its hyphens), but a word with a number among its hyphened parts is its
    parts (``twenty-five``, ``two-for-one``, ``one-day``): numbers stay numbers, as they are
    written apart or in digits (``two for one``, ``2-for-1``)."""
    for m in (_TOKEN_RE if has_mark(text) else _PLAIN_TOKEN_RE).finditer(text):
        kind, tok = m.lastgroup, m.group()
        if kind != "word" or tok.isalpha():
            yield kind, tok
            continue
        parts = tok.split("-")
        if len(parts) > 1 and any(_JOINERS_RE.sub("", p) in _EN_NUMBERS for p in parts):
            yield from (("word", _JOINERS_RE.sub("", p)) for p in parts)
        else:
            yield kind, _JOINERS_RE.sub("", tok)


def _joined(tokens: Sequence[str]) -> str:
    """Tokens as a core: one space between them, none between two CJK characters."""
    return _CJK_GAP_RE.sub("", " ".join(tokens))


_CJK_ONE = re.compile(f"[{_CJK}]")
# whole numbers, beside CJK or punctuation but not inside a Latin word (the 3 of "q3x"), or
# Latin words that may be number words (their first letter and length: looked up after)
_NUMBER_INITIALS = "".join(sorted({w[0] for w in _EN_NUMBERS}))
_NUMBER_OR_WORD_RE = re.compile(
    r"(?<![A-Za-z\d])(?:\d+(?:[.,]\d+)*|"
    f"[{_NUMBER_INITIALS}{_NUMBER_INITIALS.upper()}]"
    r"[A-Za-z]{2,8})(?![A-Za-z\d])"
)
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL_RE = re.compile(r"\d+\.\d+")
_ANY_DIGIT_RE = re.compile(r"\d")
_DIGITS_RE = re.compile(r"(?<![A-Za-z\d])\d+(?:[.,]\d+)*(?![A-Za-z\d])")


def value_of(numeral: str) -> str:
    """A numeral as written (``1,750``, ``4.50``, ``４２``) as its value (``1750``, ``4.5``,
    ``42``), the form :func:`numbers_of` gives."""
    return _arabic(numeral if numeral.isascii() else unicodedata.normalize("NFKC", numeral))


def numbers_of(text: str, limit: int = 256, *, words: bool = True) -> tuple[str, ...]:
    """The numbers of a long text (raw or normalised: the values are the same), in order, at most
    ``limit``: Arabic numerals and English number words as values (``two billion`` and ``2
    billion`` agree), what a corrected figure or an updated toll changes. (Chinese numeral
    characters also spell ordinary words, 一个, 统一; in a long text they are left out.)
    ``words=False``: Arabic numerals only, a tenth of the time on a long text."""
    if not words:
        if not _ANY_DIGIT_RE.search(text):  # most prose: a scan that stops at the first digit
            return ()
        found = _DIGITS_RE.findall(text)[:limit]
        return tuple(_arabic(t if t.isascii() else unicodedata.normalize("NFKC", t)) for t in found)
    out = []
    for tok in _NUMBER_OR_WORD_RE.findall(text):
        if tok[0].isdigit():
            out.append(_arabic(tok if tok.isascii() else unicodedata.normalize("NFKC", tok)))
        elif (value := _EN_NUMBERS.get(tok.lower())) is not None:
            out.append(str(value))
        else:
            continue
        if len(out) == limit:
            break
    return tuple(out)


def diff_facts(
    kind: FactKind,
    a: tuple[str, ...],
    b: tuple[str, ...],
    shown_a: tuple[str, ...] | None = None,
    shown_b: tuple[str, ...] | None = None,
) -> list[Difference]:
    """The differing runs of two fact sequences, in order (for the reader, not the decision),
    compared by ``a``/``b`` and shown as ``shown_a``/``shown_b`` (the same length) say."""
    sa, sb = shown_a or a, shown_b or b
    out = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            ra, rb = sa[i1:i2], sb[j1:j2]
            sep = "" if all(_CJK_ONE.fullmatch(t) for t in (*ra, *rb)) else " "
            out.append(Difference(kind, sep.join(ra) or None, sep.join(rb) or None))
    return out


def differences(earlier: Facts, now: Facts, *, numbers: bool = True) -> list[Difference]:
    """The facts that differ between two texts; empty when they say the same thing
    (:func:`compare`)."""
    compared = compare(earlier, now, numbers=numbers)
    return list(compared.changes) if compared else []


_EDGE_WORDS = 8  # words a copy may add or drop at its edges, or as many as it keeps if more
_EDGE_KEEPS = 3  # ... when it keeps at least this many


def compare(
    earlier: Facts, now: Facts, *, numbers: bool = True, trimmed_only: bool = False
) -> Comparison | None:
    """The facts that differ between two texts, and the cores to compare for similarity.

    Numbers compare as a sequence of values: one added, dropped or changed anywhere is a
    difference. Words compare as a multiset (a swapped pair of words or of CJK characters is a
    typo, not a fact), less

    * a word split or joined (``tax free`` / ``taxfree``, ``u s`` / ``us``);
    * up to one typo per ten words (:func:`pair_typos`);
    * words that one text adds *at its start or its end* and the other has not: an attribution
      tag, a byline, a source (``... - reuters``, ``reporting john smith``). At most
      ``_EDGE_WORDS`` of them, or as many as the words kept if more, with at least ``_EDGE_KEEPS``
      tokens kept; and never at the same edge of both texts: a word that *replaces* another
      at an edge (``kelso motors raises`` / ``alder motors raises``) is a substitution.

    The cores returned are the texts' cores less such edge words (the whole cores otherwise).
    With ``numbers=False`` numbers are not facts (a policy for spam campaigns that vary a phone
    number or a price). ``trimmed_only``: ``None`` unless edge words were taken off (the caller
    only wants the trimmed cores: two cores too unlike as they are)."""
    out: list[Difference] = []
    if earlier.tokens != now.tokens and earlier.written and now.written:
        earlier, now = _unglued(earlier, now), _unglued(now, earlier)
    cores, pair = (earlier.core, now.core), (earlier.words, now.words)
    a: Counter[str] = Counter(earlier.words) if pair[0] != pair[1] else Counter()
    b: Counter[str] = Counter(now.words) if pair[0] != pair[1] else Counter()
    if a != b:
        allowed = max(1, max(len(earlier.words), len(now.words)) // 10)
        apart = pair_joins(sorted((a - b).elements()), sorted((b - a).elements()), *pair)
        gone, came = pair_typos(*apart, allowed)
        if gone or came:
            # a word dropped at an edge may also read as a typo of one kept (``form`` of
            # ``from``): taken as a typo, the edge run it began is no longer at the edge
            trimmed = _edges(earlier.tokens, gone, now.tokens, came)
            if trimmed is None and (gone, came) != apart:
                trimmed = _edges(earlier.tokens, apart[0], now.tokens, apart[1])
            if trimmed is None:
                if trimmed_only:
                    return None
                out += diff_facts("word", earlier.words, now.words)
            else:
                cores = trimmed
    if trimmed_only and cores == (earlier.core, now.core):
        return None
    if numbers and earlier.numbers != now.numbers:
        keys = earlier.numbers, now.numbers
        if earlier.marked is not now.marked:  # one had its punctuation taken out
            keys = _digits(earlier), _digits(now)
            if "".join(keys[0]) == "".join(keys[1]):  # 5.74/72 taken out is 57472
                keys = keys[0], keys[0]
        if keys[0] != keys[1]:
            out[:0] = diff_facts("number", *keys, earlier.numerals, now.numerals)
    return Comparison(tuple(out), *cores)


def _digits(facts: Facts) -> tuple[str, ...]:
    """A text's numbers as the digits they are written with, separators left out (``1,200.50``
    -> ``120050``; a number word, its value): how they compare when one of two texts had its
    punctuation taken out throughout (no word of it is followed by a mark, and some word of the
    other is), so that ``1.2 billion`` read as ``12 billion`` is surface noise, not a changed
    figure; and two numbers that were one mark apart are one (``5.74/72`` -> ``57472``): the
    digits compare in one run. A digit changed, added or dropped is still a change, and so is
    ``1.5`` against ``15`` when the punctuated text has no other mark to show what was taken
    out (a template's headline)."""
    return tuple(
        "".join(c for c in shown if c.isdigit()) or value
        for shown, value in zip(facts.numerals, facts.numbers, strict=True)
    )


def framed(earlier: Facts, now: Facts, cutoff: float) -> bool:
    """Whether words added at the edges (:func:`compare`) may be what keeps two cores from
    being ``cutoff`` alike: the shorter core is clearly shorter (at most halfway from
    ``cutoff`` to 1 of the longer's length) and, to ``cutoff`` alike, a passage of the longer
    one. Two tests in C, so that the candidates that are neither (template siblings, other
    stories) are not compared word by word."""
    short, long = sorted((earlier.core, now.core), key=len)
    if len(short) > len(long) * (1 + cutoff) / 2:
        return False
    return fuzz.partial_ratio(short, long, score_cutoff=100 * cutoff) > 0


def _edge_runs(tokens: Sequence[str], extra: list[str]) -> list[tuple[int, int]]:
    """How many of ``tokens`` lead and trail that are ``extra`` words, taken from the start
    first and from the end first (a tag can repeat a word of the text, ``tokyo dealers``);
    empty when some extra word is not at an edge."""
    out = []
    for lead_first in (True, False):
        left = Counter(extra)
        runs = [0, 0]
        for side in (0, 1) if lead_first else (1, 0):
            n = runs[1 - side]
            while n + runs[side] < len(tokens):
                tok = tokens[runs[side]] if side == 0 else tokens[-1 - runs[side]]
                if left[tok] <= 0:
                    break
                left[tok] -= 1
                runs[side] += 1
        if not +left and (runs[0], runs[1]) not in out:
            out.append((runs[0], runs[1]))
    return out


def _edges(
    earlier: Sequence[str], gone: list[str], now: Sequence[str], came: list[str]
) -> tuple[str, str] | None:
    """The two cores less the words each adds at its edges, when that is all the words that
    differ and within the bounds of :func:`compare` (the most alike such pair); else
    ``None``."""
    kept = len(earlier) - len(gone)  # every extra word is taken off: what is left of earlier
    if kept < _EDGE_KEEPS or len(gone) + len(came) > max(_EDGE_WORDS, kept):
        return None
    for side, extra in ((earlier, gone), (now, came)):
        if extra and side[0] not in extra and side[-1] not in extra:
            return None  # a word that differs, and neither edge is one: a substitution inside
    best: tuple[float, str, str] | None = None
    for e in _edge_runs(earlier, gone) if gone else [(0, 0)]:
        for n in _edge_runs(now, came) if came else [(0, 0)]:
            kept = len(earlier) - e[0] - e[1]
            if (e[0] and n[0]) or (e[1] and n[1]) or kept < _EDGE_KEEPS:
                continue
            if sum(e) + sum(n) > max(_EDGE_WORDS, kept):
                continue
            a = _joined(earlier[e[0] : len(earlier) - e[1]])
            b = _joined(now[n[0] : len(now) - n[1]])
            sim = Levenshtein.normalized_similarity(a, b)
            if best is None or sim > best[0]:
                best = (sim, a, b)
    return None if best is None else best[1:]


__all__ = [
    "Comparison",
    "Difference",
    "FactKind",
    "Facts",
    "compare",
    "diff_facts",
    "differences",
    "facts_of",
    "framed",
    "numbers_of",
    "unstamped",
    "value_of",
]
