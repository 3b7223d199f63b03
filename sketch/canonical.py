"""The one canonical form of a text: what looks the same to a reader is the same to the index.

Every path that reads a text (sketches, the exact hash, short-text facts, boilerplate lines,
evidence, ``/check``, the CLI) folds it through :func:`fold` (by way of
:func:`neardup.sketch.features.normalize`), so a copy cannot hide behind how its characters are
encoded:

1. **HTML** (:func:`~neardup.sketch.markup.looks_like_html`, or a message's ``format:
   "html"``): markup removed (block elements end a line; ``script``, ``style`` and the like
   are dropped with their content), and character references decoded (``&#101;``,
   ``&eacute;``, ``&amp;``) in any text. The HTML parser reads at most an eighth of a
   document; past it the rest is read roughly, which reads a well-formed document as the
   parser does (:func:`~neardup.sketch.markup.html_text`): bounded work. This step is
   :mod:`neardup.sketch.markup`'s; :func:`reading` reads a text as its declared format
   (:data:`FORMATS`) says.
2. **Removed**: default-ignorable code points (Unicode's ``Default_Ignorable_Code_Point``:
   zero-width space, joiners, soft hyphen, word joiner, BOM, variation selectors, bidi
   controls, tags) and enclosing marks (Me): an invisible character can neither split a word
   nor change it (``wo\\u200brd`` and ``word`` are one word).
3. **Compatibility decomposition** (NFKD: full-width and mathematical letters, ligatures,
   superscripts, compatibility ideographs; a letter and its marks apart). A look-alike that it
   would turn into another letter (lunate sigma ``ϲ``, ``c`` to the eye, is ``σ``) is
   read first.
4. **Latin words in disguise**: in a word written with an ASCII letter, a letter whose capital
   and small forms look like different letters is read as what it looks like (Greek ``ν`` as
   ``v``, though ``Ν`` is ``N``), and a letter that looks like both a capital ``I`` and a
   small ``l`` is read from its neighbours (:func:`_read_i_or_l`); in a Latin text (most of
   its words written with an ASCII letter) a word of look-alikes alone too (``υρ``, ``up``).
   Elsewhere they are case folded with the rest: a Greek or Cyrillic text reads alike in
   capitals and small letters.
5. **Case folding**, before any look-alike is read: a text, its capitals and its title case
   fold alike in every script with case (``ВЫ`` and ``вы``).
6. **Mapped**: letters of other scripts that look like an ASCII letter, to that letter (the
   Unicode confusables, UTS #39, as read after case folding: Cyrillic ``а е о с р``, Greek
   ``ο ι``; a small letter as its capital looks, ``в`` as ``b``, ``ν`` as ``n``, else as it
   looks itself); decimal digits of every script, to ASCII digits; traditional, Taiwan and
   Hong Kong Chinese characters and their simplified forms, to one member of each class of
   OpenCC's tables; styled letters that have no compatibility mapping (``🅐``, small capitals
   ``ᴀ``, regional indicators), to the letter their Unicode name names.
7. **Marks** (:func:`_composed`), then canonical composition (NFC). A mark a script owns
   (Script not Inherited or Common: Thai vowels and tones, Devanagari vowel signs and virama,
   Hebrew points) is a part of its word and kept. A mark no script owns (the combining
   diacriticals U+0300-036F, Arabic harakat, kana voicing marks) is kept where it composes with
   its letter into one (``é``, ``ñ``, ``ö``, Cyrillic ``й``, Vietnamese ``ệ``), unless the
   text's marks disguise it (:func:`_disguised`): a mark that composes with nothing (zalgo,
   overlays, harakat), or, in a text of 12 letters or more, more than 10% of its letters
   marked with few marks stacked (a mark on most vowels; Spanish, German, French, Portuguese,
   Polish, Russian mark some 1-6% of their letters, and a language that marks more,
   Vietnamese, stacks them); then every such mark of the text is removed. So ``año`` and
   ``ano``, ``mua`` and ``múa``, Thai ``ไม้`` and ``ไม่`` are other words, while a story with
   marks sprinkled on its letters is its story. The rule reads Unicode's data (which marks a
   script owns, which compose), not a list of languages, and its limits follow: a long
   Vietnamese text without stacked marks, Greek with its accents (some 17% of letters), Czech
   or Slovak past 10% have their accents removed as before; a short text (under 12 letters)
   keeps the marks it composes, disguise or not; pointed and unpointed Hebrew differ.
8. **Phrases**: Chinese phrases OpenCC writes as a whole (``想像`` for ``想象``, Taiwan's
   ``軟體`` for ``软件``), to the mainland word they were written for; a mainland word is never
   folded into another (``存取`` and ``访问`` stay two) (:func:`fold_phrases`).

Around those steps, words hidden in ways a reader sees through are read back
(:mod:`neardup.sketch.escapes`, :mod:`neardup.sketch.unhide`): a text sent as a JSON string
literal or a quoted-printable body is read as what it escapes (in step 1); before step 2, lines
written backwards inside a right-to-left override are reversed, an invisible character standing
for every space becomes a space and letters spaced out (``c o p y``) are joined; after step 8,
spaced letters again (those folding made letters) and leetspeak (``h4ck3r``) are read.

The tables come from the Unicode data and OpenCC through :mod:`harness.canonical_tables`, which
writes :mod:`neardup.sketch.canonical_data`: the product never reads those libraries, so every
machine folds alike. ASCII text without ``&`` or ``<`` whose start shows nothing hidden
(:func:`~neardup.sketch.unhide.plain`) takes a fast path (``str.lower``), the same result. The
form has a name, :data:`CANONICAL_FORM`, which is part of a namespace's sketch scheme: an index
built under another form is refused, and ``neardup reindex`` migrates it.

**Bounded work.** Every stage after the form works per character of it, and compatibility
decomposition and case folding write some code points as several (``canonical_data.EXPANDING``,
computed from the Unicode data: U+FDFA as 18 characters, the squared word U+3316 as 6, ``\u2057``
as 4, ``ß`` as 2). A text may grow by a quarter of its length or 64 characters, whichever is more
(:data:`EXPANSION_SHARE`, :data:`EXPANSION_FLOOR`; the lines or passages of a text together, as
the text); past that, every expanding code point of it is kept as written (:func:`_held`). Real
text grows by a few characters in a thousand, so its form is unchanged; a text built of
expanding code points is read as written, the same in every copy of it.

Folding changes lengths (a removed mark, ``ß`` -> ``ss``), so offsets into the folded text are
not offsets into the text as sent; evidence spans cut passages from the text as sent and fold
each (:mod:`neardup.sketch.evidence`), so they always point into what was sent.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from neardup.sketch import canonical_data
from neardup.sketch.markup import decode, decode_each, html_text, looks_like_html
from neardup.sketch.unhide import (
    plain,
    unhide,
    unhide_each,
    unhide_folded,
    unhide_folded_each,
)

# names the scheme records: a new table, rule or order is a new name (and a re-index)
CANONICAL_FORM = (
    "html+escapes+rlo+invisible-spaces+spaced+ignorables+nfkd+latin-words+i-or-l+casefold"
    "+uts39-folded+styled+digits+opencc-classes+shared-marks+nfc+opencc-mainland-phrases+leet/5"
)
LEGACY_FORM = "nfkc+casefold"  # what indexes built before the canonical form used

FORMATS = ("html", "text")
"""The formats a text may be declared in; undeclared, markup is read as markup on evidence."""


def reading(text: str, declared: str) -> str:
    """A text as its declared format says to read it, offsets into what is returned.

    ``html``: the text a browser shows (markup removed, references decoded, a line per
    block), whether or not it carries evidence of markup; a page with no visible text is
    read as it was sent. ``text``: never markup, however much it looks like it (a comment
    quoting code): its ``<`` are read as the full-width ``\uff1c``, which the form folds
    back to ``<`` after the markup test, so every offset is kept."""
    if declared == "html":
        shown = html_text(text)
        return shown if shown.strip() else text
    if declared == "text":
        return text.replace("<", "\uff1c") if looks_like_html(text) else text
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {declared!r}")


def _spans(ranges: str) -> list[tuple[int, int]]:
    """Hexadecimal ranges ``first-last`` separated by spaces, as pairs of code points."""
    out = []
    for span in ranges.split():
        first, last = (int(x, 16) for x in span.split("-"))
        out.append((first, last))
    return out


def char_class(points: list[tuple[int, int]]) -> str:
    """A regular expression for one character of the ranges ``points`` (first, last): the BMP
    part as one class, the rest behind a test that the character is past the BMP (the
    expression engine looks a BMP class up in a table, a class with characters past it range
    by range: some 40 ns a character on a table of scattered ranges)."""
    bmp = [(a, min(b, 0xFFFF)) for a, b in points if a <= 0xFFFF]
    astral = [(max(a, 0x10000), b) for a, b in points if b > 0xFFFF]

    def inside(spans: list[tuple[int, int]]) -> str:
        return "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in spans)

    parts = [f"[{inside(bmp)}]"] if bmp else []
    if astral:
        parts.append(f"(?=[\\U00010000-\\U0010ffff])[{inside(astral)}]")
    return f"(?:{'|'.join(parts)})" if parts else "(?!)"


_ASTRAL = re.compile("[\\U00010000-\\U0010ffff]")


class _CharSet:
    """Characters of ranges, found by C scans: the BMP ones by one class (looked up in a
    table), the rest by another only in a text with a character past the BMP (a class of
    both, or an alternation of them, checks a character range by range: several times
    slower on a text of scattered ranges)."""

    def __init__(self, points: list[tuple[int, int]]) -> None:
        bmp = [(a, min(b, 0xFFFF)) for a, b in points if a <= 0xFFFF]
        astral = [(max(a, 0x10000), b) for a, b in points if b > 0xFFFF]

        def compiled(spans: list[tuple[int, int]]) -> re.Pattern[str] | None:
            inside = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in spans)
            return re.compile(f"[{inside}]") if spans else None

        self.bmp, self.astral = compiled(bmp), compiled(astral)

    def search(self, text: str) -> bool:
        """Whether ``text`` holds one of the characters."""
        if self.bmp is not None and self.bmp.search(text):
            return True
        return bool(self._astral_in(text)[1])

    def findall(self, text: str) -> list[str]:
        """The characters of ``text`` that are in the set, the BMP ones first."""
        found = self.bmp.findall(text) if self.bmp is not None else []
        astral, inside = self._astral_in(text)
        if inside:
            found += [c for c in astral if c in inside]
        return found

    def _astral_in(self, text: str) -> tuple[list[str], set[str]]:
        """The characters of ``text`` past the BMP, and the distinct ones of them in the set:
        the class of scattered ranges is tried on each distinct one alone (scanning a text with
        it checks every character range by range: a Chinese text with one character of
        Extension B cost 270 ns a character, some three times the rest of its fold)."""
        if self.astral is None or not _ASTRAL.search(text):
            return [], set()
        astral = _ASTRAL.findall(text)
        match = self.astral.match
        return astral, {c for c in set(astral) if match(c)}


@cache
def _marks() -> _CharSet:
    return _CharSet(_spans("".join(canonical_data.MARKS)))


def has_mark(text: str) -> bool:
    """Whether ``text`` holds a combining mark (a C scan: a tokenizer picks its simpler
    pattern for the many texts with none)."""
    return not text.isascii() and _marks().search(text)


@cache
def mark_class() -> str:
    """A regular expression for a combining mark (Mn, Mc, Me) (:func:`char_class`): the
    tokenizers read a mark as a part of its word (Python's ``\\w`` has none)."""
    return char_class(_spans("".join(canonical_data.MARKS)))


@cache
def _table() -> dict[int, str | None]:
    """What the form removes (to ``None``) and what it maps, read after case folding."""
    table: dict[int, str | None] = {}
    for first, last in _spans("".join(canonical_data.REMOVED)):
        table.update(dict.fromkeys(range(first, last + 1)))
    pairs = canonical_data.MAPPED
    table.update({ord(pairs[i]): pairs[i + 1] for i in range(0, len(pairs), 2)})
    return table


@cache
@cache
def _before_nfkd() -> dict[int, str | None]:
    """What the form removes, and the look-alikes that compatibility decomposition would turn
    into another letter (lunate sigma \u03f2, c to the eye, decomposes to \u03c3), in both
    cases: read before it, each ASCII letter it reads as held (:data:`_HELD`) till the text is
    case folded (a letter read so is not an ASCII letter written: it makes no Latin word)."""
    table = _table()
    out: dict[int, str | None] = {}
    for k, v in table.items():
        c = chr(k)
        parts = unicodedata.normalize("NFKD", c)
        # a letter that decomposes to its look-alike's letter and marks (\u1f70, alpha and a
        # grave) is read after it, as its canonical equivalents are
        if v is None or (parts != c and table.get(ord(parts[0].casefold()[0])) != v):
            out[k] = v if v is None else v.translate(_HOLD)
            up = c.upper()
            if v is not None and len(up) == 1 and up.casefold() == c:
                out[ord(up)] = v.translate(_HOLD)
    # and a letter composed of one of them and marks (\u03d3 is \u03d2 and an acute), as its
    # canonical decomposition is read
    for k in range(0xC0, 0x10000):
        parts = unicodedata.normalize("NFD", chr(k))
        to = out.get(ord(parts[0]))
        if to is not None and len(parts) > 1:
            out[k] = to + parts[1:]
    return out


# an ASCII letter a look-alike was read as before NFKD, held as a private use character
_HELD = 0xF0000
_HOLD = {ord(c): chr(_HELD + ord(c)) for c in string.ascii_letters}
_RELEASE = {_HELD + ord(c): c.lower() for c in string.ascii_letters}
_HELD_RE = re.compile(f"[{chr(_HELD + ord('A'))}-{chr(_HELD + ord('z'))}]")


@cache
def _latin_table() -> dict[int, str]:
    """Capitals read apart inside a Latin word (``canonical_data.LATIN``)."""
    pairs = canonical_data.LATIN
    return {ord(pairs[i]): pairs[i + 1] for i in range(0, len(pairs), 2)}


@cache
def _read_apart() -> re.Pattern[str]:
    """A word holding a letter read apart in a Latin word: a capital of ``LATIN`` or a letter
    that looks like I or l."""
    word = f"(?:\\w|{mark_class()})*"
    return re.compile(f"{word}[{canonical_data.I_OR_L}{canonical_data.LATIN[0::2]}]{word}")


_ASCII_LETTER = re.compile("[A-Za-z]")


def _latin_word(match: re.Match[str]) -> str:
    """A word with a letter read apart (:func:`_read_apart`) in a text of other words: written
    with an ASCII letter, a Latin word in disguise, its letters read as what they look like
    (the I-or-l letters are read from their neighbours next); else case folded (a Greek or
    Cyrillic word reads alike in capitals and small letters)."""
    word = match.group()
    if _ASCII_LETTER.search(word):
        return word.translate(_latin_table())
    return word.casefold()


_WORD_ASCII = re.compile(r"(?<![^\W\d_])[^\W\d_]")  # where a word starts
_WORD_NO_ASCII = re.compile(r"(?<![^\W\d_])[^\W\d_A-Za-z]+(?![^\W\d_])")


def _latin_text(text: str) -> bool:
    """Whether most of a text's words are written with an ASCII letter: a Latin text, whose
    words of look-alikes alone (``\u039d\u039f\u03a4``, ``\u03c5\u03c1``) are Latin words
    in disguise too (in a Greek text with a Latin word or two, they are Greek words)."""
    words = len(_WORD_ASCII.findall(text))
    return 2 * len(_WORD_NO_ASCII.findall(text)) <= words


@cache
def _apart() -> _CharSet:
    """A letter read apart in a Latin word (:func:`_read_apart`)."""
    found = sorted(ord(c) for c in canonical_data.I_OR_L + canonical_data.LATIN[0::2])
    return _CharSet([(c, c) for c in found])


@cache
def _wordish() -> re.Pattern[str]:
    """A character NFC or a phrase may change: past ASCII, a word character or a mark."""
    return re.compile(f"(?=[^\\x00-\\x7f])(?:\\w|{mark_class()})")


# the CJK radicals supplement and past it: no phrase starts below it
_HAN = re.compile("[\u2e80-\U0010ffff]")
_ASCII = bytes(range(128))


def _non_ascii(text: str) -> str:
    """The characters of ``text`` that are not ASCII, in order: its UTF-8 with every ASCII
    byte deleted (C loops over bytes: a regex or a set of the text looks at each character
    as a Python object, some ten times slower on a story of mostly ASCII)."""
    return (
        text.encode("utf-8", "surrogatepass")
        .translate(None, _ASCII)
        .decode("utf-8", "surrogatepass")
    )


def _keys(table: dict[int, str | None]) -> _CharSet:
    """The table's keys as a :class:`_CharSet` (iterating a text's characters in Python
    makes an object of each: microseconds a line)."""
    spans: list[tuple[int, int]] = []
    for cp in sorted(table):
        if spans and spans[-1][1] == cp - 1:
            spans[-1] = (spans[-1][0], cp)
        else:
            spans.append((cp, cp))
    return _CharSet(spans)


@cache
def _table_keys() -> _CharSet:
    return _keys(_table())


@cache
def _before_nfkd_keys() -> _CharSet:
    return _keys(_before_nfkd())


def _mapped(text: str, table: dict[int, str | None], keys: _CharSet) -> str:
    """``text.translate(table)`` (``keys``: :func:`_keys` of the table; the table maps none
    of ASCII), faster: translate looks every character up (some 75 ns each), while most texts
    hold only a few distinct characters the table maps, or none; those are found by a C scan
    of the text's characters past ASCII (:func:`_non_ascii`) and replaced one by one."""
    rest = _non_ascii(text)
    if not keys.search(rest):
        return text
    todo = set(keys.findall(rest))
    if len(todo) > 24:
        return text.translate(table)
    for c in todo:
        text = text.replace(c, table[ord(c)] or "")
    return text


@cache
def _i_or_l() -> re.Pattern[str]:
    return re.compile(f"[{canonical_data.I_OR_L}]+")


# what ends a sentence: a word after it starts with a capital (``Ιt`` there reads ``It``)
_VOWELS = frozenset("aeiouy")
_SENTENCE_END = frozenset(".!?\n\r:;\"'\u201c\u2018(")


def _read_i_or_l(match: re.Match[str]) -> str:
    """The rule written plainly, a letter at a time (:func:`_read_all_i_or_l` reads a whole
    text at once and is tested equal to it). A letter that looks like both ``I`` and ``l``
    (Greek ``Ι``, Cyrillic ``І``, ``Ӏ``), read as a reader reads it: ``i`` in a word in
    capitals, alone, or at the start of a sentence; ``l`` after a small letter. At the start
    of a word in small letters, the next letter decides: a vowel follows a small ``l``
    (``like``, ``last``) and a consonant a capital ``I`` (``Inc``, ``International``,
    ``Israel``)."""
    text, at, end = match.string, match.start(), match.end()
    run = end - at  # a run of them (``well`` with both l swapped) reads as one
    before = _class_of(text[at - 1]) if at else "."
    after = _class_of(text[end]) if end < len(text) else "."
    if text[at].casefold() == text[at]:  # no case: its neighbours' case does not count
        before, after = before.replace("A", "a").replace("V", "v"), after.replace("A", "a")
        after = after.replace("V", "v")
    if before in "vaAV":  # after a letter: a small one, l; a capital, I
        return ("i" if before in "AV" else "l") * run
    if after not in "van":
        return "i" * run
    i = at - 1  # the last character before it but spaces and tabs (never text[:at]: a copy
    while i >= 0 and text[i] in " \t":  # per letter made a text of them quadratic)
        i -= 1
    if run > 1 or i < 0 or text[i] in _SENTENCE_END:
        return "i" + "l" * (run - 1)  # Illinois, It
    return "l" if after == "v" else "i"


def _class_of(c: str) -> str:
    """A character's class for the I-or-l rule, a look-alike's as the letter it looks like:
    ``v`` a small ASCII vowel, ``a`` another small letter, ``n`` small but no letter
    (``\u2170``), ``V`` a capital vowel, ``A`` another letter, ``X`` a letter that looks
    like I or l, ``S`` what ends a sentence, a space for a space or tab, ``.`` anything
    else."""
    if c in canonical_data.I_OR_L:
        return "X"
    seen = _table().get(ord(c)) if not c.isupper() else None
    if seen and seen.isascii() and seen.isalpha():
        c = seen  # a small or uncased look-alike of a small letter reads as it (Cyrillic а)
    if c in _VOWELS:
        return "v"
    if c.islower():
        return "a" if c.isalpha() else "n"
    if c.isalpha():  # a capital (or a letter with no case): a vowel's look-alike or another
        low = c.casefold()[0]
        return "V" if (_table().get(ord(low)) or low) in _VOWELS else "A"
    if c in _SENTENCE_END:
        return "S"
    return " " if c in " \t" else "."


@cache
def _bmp_classes() -> npt.NDArray[np.uint8]:
    """:func:`_class_of` of every BMP code point, indexed by it."""
    table = "".join(map(_class_of, map(chr, range(0x10000))))
    return np.frombuffer(table.encode("ascii"), dtype=np.uint8)


def _read_all_i_or_l(text: str) -> str:
    """``_i_or_l().sub(_read_i_or_l, text)``, read for every letter at once in numpy
    (:func:`_read_i_or_l_codes`)."""
    codes = _expanding().codes(text).copy()
    _read_i_or_l_codes(codes)
    return _Expanding.text(codes)


@cache
def _uncased_i_or_l() -> npt.NDArray[np.uint32]:
    """The letters that look like I or l and have no case (``\u01c0``), sorted."""
    found = [ord(c) for c in canonical_data.I_OR_L if c.casefold() == c]
    return np.array(sorted(found), dtype=np.uint32)


def _read_i_or_l_codes(
    codes: npt.NDArray[np.uint32], where: npt.NDArray[np.bool_] | None = None
) -> None:
    """The letters that look like I or l among ``codes`` (those ``where`` says, or all) read
    in place as ``_read_i_or_l`` reads them, all at once from the text's class letters
    (:func:`_class_of`): a call per letter cost a text of them several times its other
    work."""
    cls = _per_point(codes, _bmp_classes(), lambda c: ord(_class_of(chr(c))))
    xs = np.flatnonzero(cls == ord("X"))
    if not len(xs):
        return
    first = np.ones(len(xs), dtype=bool)
    first[1:] = xs[1:] != xs[:-1] + 1
    run = np.cumsum(first) - 1
    starts = xs[first]
    ends = xs[np.append(first[1:], True)] + 1  # one past each run's last letter
    size = ends - starts
    n = len(cls)
    none = ord("?")  # no character there (the text's start or end)
    before = np.where(starts > 0, cls[np.maximum(starts - 1, 0)], none)
    after = np.where(ends < n, cls[np.minimum(ends, n - 1)], none)
    # the last character before each run but spaces and tabs, and whether it ends a sentence
    seen = np.where(cls != ord(" "), np.arange(n), -1)
    np.maximum.accumulate(seen, out=seen)
    back = np.where(starts > 0, seen[np.maximum(starts - 1, 0)], -1)
    sentence = (back < 0) | (cls[np.maximum(back, 0)] == ord("S"))
    # a letter with no case (\u01c0) reads its neighbours' letters whatever their case (the
    # same in a text's capitals and small letters); one with case, their case too
    uncased = np.isin(codes[starts], _uncased_i_or_l())
    capital = np.isin(before, (ord("A"), ord("V")))
    small = np.isin(before, (ord("v"), ord("a"))) | (uncased & capital)
    letter = small | capital
    lower_after = np.isin(after, (ord("v"), ord("a"), ord("n")))
    lower_after |= uncased & np.isin(after, (ord("A"), ord("V")))
    i, l_ = ord("i"), ord("l")
    whole = np.where(small, l_, i)  # the run's reading when one letter stands for it all
    vowel_after = (after == ord("v")) | (uncased & (after == ord("V")))
    lone = np.where(vowel_after, l_, i)  # inside a sentence, before a small letter
    mixed = ~letter & lower_after & ((size > 1) | sentence)  # "i" then "l": Illinois, It
    inside = ~letter & lower_after & ~mixed
    reading = np.where(inside[run], lone[run], whole[run])
    reading = np.where(mixed[run], np.where(first, i, l_), reading)
    if where is not None:
        keep = where[xs]
        xs, reading = xs[keep], reading[keep]
    codes[xs] = reading


@cache
def _i_or_l_one() -> re.Pattern[str]:
    return re.compile(f"[{canonical_data.I_OR_L}]")


@cache
def _phrases() -> tuple[re.Pattern[str], dict[str, tuple[int, ...]], dict[str, str]]:
    """The phrase table: where a phrase may start (its first characters), the lengths of the
    phrases by their first two characters (longest first), and each phrase's member."""
    words = canonical_data.PHRASES.split(" ")
    table = dict(zip(words[0::2], words[1::2], strict=False))
    table.pop("", None)
    sizes: dict[str, set[int]] = {}
    for phrase in table:
        sizes.setdefault(phrase[:2], set()).add(len(phrase))
    # a first character followed by a second one some phrase has: one C scan finds the few
    # places worth a dictionary look (a tenth of a Chinese text's characters, not a third)
    firsts, seconds = ("".join(sorted({p[i] for p in table})) for i in (0, 1))
    starts = re.compile(f"[{firsts}](?=[{seconds}])")
    return starts, {k: tuple(sorted(v, reverse=True)) for k, v in sizes.items()}, table


class _PhrasePairs:
    """The first two characters of every phrase, looked up for every two characters of a text
    at once: each character's index among the phrases' first (second) characters, 0 for none
    (a table by code point, to the last one a phrase holds), and whether a phrase opens with a
    first and a second character of those indices."""

    def __init__(self, starts: Sequence[str]) -> None:
        firsts, seconds = (sorted({p[i] for p in starts}) for i in (0, 1))
        self.size = max(ord(c) for c in (*firsts, *seconds)) + 2  # the last: no character
        self.first = self._index(firsts)
        self.second = self._index(seconds)
        self.pairs = np.zeros((len(firsts) + 1, len(seconds) + 1), dtype=bool)
        for p in starts:
            self.pairs[self.first[ord(p[0])], self.second[ord(p[1])]] = True

    def _index(self, chars: list[str]) -> npt.NDArray[np.uint16]:
        table = np.zeros(self.size, dtype=np.uint16)
        table[[ord(c) for c in chars]] = np.arange(1, len(chars) + 1, dtype=np.uint16)
        return table

    def starts(self, text: str) -> list[int]:
        """Where two characters in a row of ``text`` are the first two of a phrase."""
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        codes = np.minimum(codes, np.uint32(self.size - 1))
        found = self.pairs[self.first[codes[:-1]], self.second[codes[1:]]]
        at: list[int] = np.flatnonzero(found).tolist()
        return at


@cache
def _phrase_pairs() -> _PhrasePairs:
    return _PhrasePairs([p for p in _phrases()[1] if len(p) == 2])


# a text of this many characters or more is looked through for phrases in numpy
PHRASE_SCAN_CHARS = 512


def _phrase_starts(text: str) -> list[int]:
    """Where a phrase may start in ``text``, in order. A short text: where one of the phrases'
    first characters has one of their second characters after it (a C scan). A long one: where
    two characters in a row are the first two of a phrase, looked up for all at once
    (:class:`_PhrasePairs`). A text of phrases run together matched that class at half of its
    characters but a third of them start no phrase, and each such place cost a dictionary
    look in Python; the next pass over its folded text (:func:`_fold_decoded`) matched it as
    often, at three times more places than start a phrase's first two characters."""
    if len(text) < PHRASE_SCAN_CHARS:
        return [m.start() for m in _phrases()[0].finditer(text)]
    return _phrase_pairs().starts(text)


def fold_phrases(text: str) -> str:
    """Han phrases that OpenCC writes as a whole (``想像`` for ``想象``, Taiwan's ``軟體`` for
    ``软件``), as the mainland word they were written for: the longest phrase first, left to
    right. The text's characters are already folded (the phrases are written so)."""
    _, sizes, table = _phrases()
    out: list[str] = []
    done = 0
    for at in _phrase_starts(text):
        if at < done or (lengths := sizes.get(text[at : at + 2])) is None:
            continue
        for size in lengths:
            member = table.get(text[at : at + size])
            if member is not None:
                out += (text[done:at], member)
                done = at + size
                break
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def fold(text: str, *, is_html: bool | None = None) -> str:
    """The canonical form of a text (see the module doc); whitespace is left as it is. The
    last few long texts folded the long way are kept (:data:`FOLD_MEMO_ENTRIES`): the sketch,
    the facts and the evidence of one article each fold it, and markup parsed in Python or a
    text of many look-alike letters costs several times the rest of their work."""
    if text.isascii() and "&" not in text and "<" not in text and plain(text):
        return text.lower()
    if FOLD_MEMO_MIN_CHARS <= len(text) <= FOLD_MEMO_MAX_CHARS:
        return _fold_kept(text, is_html)
    return _fold_long(text, is_html)


def _fold_long(text: str, is_html: bool | None) -> str:
    decoded = decode(text, is_html=is_html)
    if decoded.isascii() and plain(decoded):  # nothing to unhide: the form is lower case
        return decoded.lower()
    shown = _unhidden(decoded)
    held = _held(shown)
    folded = _fold_decoded(held)
    return unhide_folded(folded if held is shown else _released(folded))


# Work is bounded by the size after folding. A text may grow by this share of its characters
# (or EXPANSION_FLOOR characters, whichever is more) as the form writes characters as several.
EXPANSION_SHARE = 0.25
EXPANSION_FLOOR = 64
# a held code point (an expanding one of a text past its bound) is this plus its index: a
# private-use character of the BMP (one past it would take every step's slower path)
_HOLDER = 0xE000


class _Expanding:
    """The code points the form writes as several characters (``canonical_data.EXPANDING``,
    computed from the Unicode data) and how many more characters each makes, as tables a text's
    code points are looked up in at once (numpy: a text of them is a hostile one, and a call
    or a string per character would cost it as much as the work it bounds)."""

    def __init__(self, pairs: str) -> None:
        chars = pairs[0::2]
        self.found = _CharSet([(ord(c), ord(c)) for c in chars])
        self.extra = np.zeros(0x110000, dtype=np.uint8)  # 1 MiB: a byte a code point
        self.released = np.array(sorted(ord(c) for c in chars), dtype=np.uint32)
        self.extra[self.released] = [ord(pairs[pairs.index(chr(c)) + 1]) for c in self.released]

    def held(self, text: str, sizes: Sequence[int] = (), which: Sequence[bool] = ()) -> str:
        """``text``, each expanding code point as its holder (its index past :data:`_HOLDER`);
        ``sizes`` and ``which``: only in those of the pieces of those sizes it is cut into."""
        codes = self.codes(text).copy()
        at = self.extra[codes] > 0
        if sizes:
            at &= np.repeat(np.asarray(which, dtype=bool), sizes)[: len(codes)]
        codes[at] = _HOLDER + np.searchsorted(self.released, codes[at]).astype(np.uint32)
        return self.text(codes)

    @staticmethod
    def codes(text: str) -> npt.NDArray[np.uint32]:
        return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

    @staticmethod
    def text(codes: npt.NDArray[np.uint32]) -> str:
        return codes.tobytes().decode("utf-32-le", "surrogatepass")


@cache
def _expanding() -> _Expanding:
    return _Expanding(canonical_data.EXPANDING)


def expansion(text: str) -> int:
    """How many more characters the form would write ``text`` as than it holds (before
    removals): the sum over its expanding code points (U+FDFA makes 17 more, ``\u00df``
    one)."""
    table = _expanding()
    if text.isascii() or not table.found.search(text):
        return 0
    return int(table.extra[table.codes(text)].sum(dtype=np.int64))


def expansion_bound(text: str) -> int:
    """The most characters :func:`fold` adds to ``text`` by expanding it: a quarter of its
    length, and never fewer than :data:`EXPANSION_FLOOR`."""
    return max(EXPANSION_FLOOR, int(EXPANSION_SHARE * len(text)))


def _held(text: str) -> str:
    """``text`` itself, or, when its expanding code points would make it longer than its bound
    (:func:`expansion_bound`), with every one of them held as a private-use character, which
    no step folds, and released as written after the fold (:func:`_released`).

    Why a bound on the text and not on each character: every downstream stage (sketches,
    lines, dates, facts, evidence) works per character of the form, so U+FDFA, written as 18,
    cost a text of it 10-16 times news per KB. Real text expands by a few characters in a
    thousand (``\ufb01`` in a PDF's words, ``\u00df``, ``\u337f`` in a company name), far
    below a quarter, so its form is unchanged and ``\ufdfa`` still reads as its words; only a
    text made of expanding characters is held, and then as written (the same in every copy of
    it). A bound per character (U+FDFA written as its first word) would change real text."""
    if expansion(text) <= expansion_bound(text):
        return text
    return _expanding().held(text)


def _held_each(texts: list[str], parts: bool) -> list[bool]:
    """Which of ``texts`` :func:`_held` holds, found for all at once (a numpy call per text
    cost a text of many short lines more than their fold). ``parts``: they are the parts of a
    text or two (lines, passages), bounded together as the text is: none held when they are
    within one bound (the floor counted once; a line of a real text folds as in the text),
    else every part that would grow by more than :data:`EXPANSION_SHARE` of its length (a
    line of one U+FDFA, under the floor alone, cost a text of such lines 18 times its
    length)."""
    table = _expanding()
    joined = "\n".join(texts)
    if joined.isascii() or not table.found.search(joined):
        return [False] * len(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    grown = np.zeros(len(joined) + 1, dtype=np.int64)
    np.cumsum(table.extra[table.codes(joined)], out=grown[1:])
    extra = grown[starts + lengths] - grown[starts]
    if not parts:
        held = extra > np.maximum(EXPANSION_FLOOR, (EXPANSION_SHARE * lengths).astype(np.int64))
    elif int(extra.sum()) <= max(EXPANSION_FLOOR, EXPANSION_SHARE * int(lengths.sum())):
        return [False] * len(texts)  # the text is within its bound: so is each part of it
    else:
        held = extra > EXPANSION_SHARE * lengths
    out: list[bool] = held.tolist()
    return out


def _released(text: str) -> str:
    """The expanding code points :func:`_held` held, as written (a private-use character of
    the holders' range that a held text holds itself is read as the one it holds: only a text
    past its bound is released)."""
    table = _expanding()
    codes = table.codes(text).copy()
    at = codes - np.uint32(_HOLDER)  # wraps below the range: past it too
    inside = at < len(table.released)
    codes[inside] = table.released[at[inside]]
    return table.text(codes)


def _unhidden(decoded: str, shown: str | None = None) -> str:
    """:func:`~neardup.sketch.unhide.unhide` of a decoded text; what it shows read again
    (:func:`~neardup.sketch.markup.decode`) where that makes an escape, a reference or markup (a
    line reversed back out of a right-to-left override ending in ``\\``, a story's ``<TICKER>``
    written backwards): the form read again is the form. Unhidden once: a line reversed back
    is not reversed again."""
    shown = unhide(decoded) if shown is None else shown
    if shown == decoded or not any(c in shown for c in "&<\\="):
        return shown
    return decode(shown)


# Bounded in bytes: FOLD_MEMO_ENTRIES texts of at most FOLD_MEMO_MAX_CHARS characters and
# their folds (under 2 x 2 x 4 MiB = 16 MiB were every character four bytes wide).
FOLD_MEMO_ENTRIES = 2
FOLD_MEMO_MIN_CHARS = 4096
FOLD_MEMO_MAX_CHARS = 1 << 20
_fold_kept = lru_cache(maxsize=FOLD_MEMO_ENTRIES)(_fold_long)


def forget_folds() -> None:
    """Empty the memo of :func:`fold` (a benchmark times each fold from cold)."""
    _fold_kept.cache_clear()


def fold_each(texts: Sequence[str], *, parts: bool = False) -> list[str]:
    """``[fold(t) for t in texts]`` by one fold of them all: a text of many short lines paid
    the steps' fixed cost per line (some 12 us: seconds for a megabyte of short CJK lines).

    ``parts``: the texts are the lines or passages of a text or two, whose expansion is bounded
    as one text's (:func:`_held_each`): each alone may expand by
    :data:`EXPANSION_FLOOR` characters, and a megabyte of short lines would have expanded by
    that much each. Within that bound, which every real text is, the same as ``parts=False``.

    Each text is decoded alone (markup is judged per text); what follows decoding neither
    makes nor removes a newline and reads no context across one (a letter that looks like
    ``I`` or ``l`` reads a line start as a sentence start either way), so the decoded texts
    joined by newlines fold to their folds joined by newlines."""
    if len(texts) < 2:
        return [fold(t) for t in texts]
    raw = decode_each(texts)
    decoded = [s if s is d else _unhidden(d, s) for d, s in zip(raw, unhide_each(raw), strict=True)]
    out = [d.lower() if d.isascii() else "" for d in decoded]  # ASCII: lower is the form
    rest = [i for i, d in enumerate(decoded) if not d.isascii()]
    if not rest:
        return unhide_folded_each(out)
    every = _held_each(decoded, parts)  # the ASCII parts count in the bound of their text
    held = [every[i] for i in rest]
    joined = "\n".join(decoded[i] for i in rest)
    if any(held):
        joined = _expanding().held(joined, [len(decoded[i]) + 1 for i in rest], held)
    units = [decoded[i].count("\n") + 1 for i in rest]
    folded = _fold_decoded(joined, units)
    # released at once, unless a text not held writes a holder itself (then each held one)
    kept = "\n".join(decoded[i] for i, h in zip(rest, held, strict=True) if not h)
    mixed = any(held) and bool(_holders().search(kept))
    if any(held) and not mixed:
        folded = _released(folded)
    pieces = folded.split("\n")
    at = 0
    for i, h in zip(rest, held, strict=True):  # a text may hold newlines of its own
        n = decoded[i].count("\n") + 1 if len(pieces) != len(rest) else 1
        out[i] = "\n".join(pieces[at : at + n]) if n > 1 else pieces[at]
        if h and mixed:
            out[i] = _released(out[i])
        at += n
    return unhide_folded_each(out)


@cache
def _holders() -> re.Pattern[str]:
    return re.compile(f"[{chr(_HOLDER)}-{chr(_HOLDER + len(_expanding().released) - 1)}]")


@cache
def _shared_marks() -> _CharSet:
    return _CharSet(_spans("".join(canonical_data.SHARED_MARKS)))


@cache
def _shared_marks_re() -> re.Pattern[str]:
    return re.compile(char_class(_spans("".join(canonical_data.SHARED_MARKS))))


@cache
def _stacked_marks() -> re.Pattern[str]:
    shared = char_class(_spans("".join(canonical_data.SHARED_MARKS)))
    return re.compile(f"(?<={shared}){shared}")


# a text of at least this many letters is judged by its share of marked letters
MARKED_TEXT_LETTERS = 12
# marks past this share of a text's letters, few of them stacked: marks added to disguise it
MARKED_SHARE = 0.10
# at least this share of a text's marks stacked on a marked letter: a script that writes two
# (Vietnamese \u1ec7, polytonic Greek): its marks are the words'
STACKED_SHARE = 0.125


def _letters(text: str, marks: int) -> int:
    """About how many letters a decomposed text holds: its characters but marks and ASCII
    characters that are neither a letter nor a digit (spaces, punctuation; a C count of
    bytes). A digit counts: leetspeak, read after this step, makes digits letters
    (``h4ck3r``), and the form read again must judge the same share of marked letters."""
    ascii_other = len(text.encode("utf-8", "surrogatepass").translate(None, _LETTERS_AND_HIGH))
    return len(text) - marks - ascii_other


_LETTERS_AND_HIGH = bytes(c for c in range(256) if c >= 128 or chr(c).isalnum())


def _disguised(text: str, composed: str) -> bool:
    """Whether a text's shared marks (``SHARED_MARKS``: the combining diacriticals U+0300-036F,
    which sit on a letter of any script) were added to disguise it rather than written as its
    language writes them. ``text`` is decomposed, ``composed`` its NFC. Disguised: a mark that
    composes with no letter (``q\u0301``, marks stacked past what composes: zalgo), or, in a
    text of :data:`MARKED_TEXT_LETTERS` letters or more, marks on more than
    :data:`MARKED_SHARE` of its letters (a mark on most vowels) unless the text stacks marks
    that compose (a script that writes two marks on one letter). A language writes fewer:
    Spanish, German, French, Portuguese, Polish, Russian mark some 1-7% of their letters."""
    shared = _shared_marks()
    if shared.search(composed):
        return True
    marks = len(shared.findall(text))
    if marks <= MARKED_SHARE * MARKED_TEXT_LETTERS:  # too few for a text long enough
        return False
    letters = _letters(text, marks)
    if letters < MARKED_TEXT_LETTERS or marks <= MARKED_SHARE * letters:
        return False
    return len(_stacked_marks().findall(text)) < STACKED_SHARE * marks


def _composed(text: str, units: Sequence[int] | None = None) -> str:
    """NFC of a decomposed, case folded text, its shared marks kept where its language writes
    them (:func:`_disguised`) and removed where they disguise it. ``units``: the text is that
    many texts of that many lines each, joined by newlines (:func:`fold_each`), each judged
    apart; else it is judged whole."""
    shared = _shared_marks()
    if not shared.search(_non_ascii(text)):
        return unicodedata.normalize("NFC", text)
    if units is None or len(units) < 2:
        return _composed_alone(text)
    if len(units) <= ALONE_TEXTS and len(text) < AT_ONCE_CHARS:
        return "\n".join(map(_composed_alone, _pieces(text, units)))
    return _composed_each(text, units)


def _composed_alone(text: str) -> str:
    """:func:`_composed` of one text."""
    composed = unicodedata.normalize("NFC", text)
    if _shared_marks().search(text) and _disguised(text, composed):
        composed = unicodedata.normalize("NFC", _shared_marks_re().sub("", text))
    return composed


@cache
def _shared_bits() -> npt.NDArray[np.bool_]:
    """Whether each BMP code point is a shared mark (``SHARED_MARKS``)."""
    out = np.zeros(0x10000, dtype=bool)
    for first, last in _spans("".join(canonical_data.SHARED_MARKS)):
        out[first : min(last, 0xFFFF) + 1] = True
    return out


def _is_shared(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    return _per_point(codes, _shared_bits(), lambda c: bool(_shared_marks().search(chr(c))))


def _owners(codes: npt.NDArray[np.uint32], units: Sequence[int]) -> npt.NDArray[np.int64]:
    """Each code point's text of the texts of ``units`` lines each joined by newlines (the
    newline between two, the first's)."""
    breaks = np.flatnonzero(codes == ord("\n"))[np.cumsum(units)[:-1] - 1]
    lengths = np.diff(np.concatenate(([-1], breaks, [len(codes)]))) - 1
    return np.repeat(np.arange(len(units)), lengths + 1)[: len(codes)]


def _composed_each(text: str, units: Sequence[int]) -> str:
    """:func:`_composed` of the texts ``text`` joins, each judged apart (:func:`_disguised`,
    counted for all at once in numpy: a call a text cost a text of short accented lines three
    times news per KB). NFC composes nothing across a newline, so the NFC of the joined text is
    the NFC of each joined."""
    composed = unicodedata.normalize("NFC", text)
    codes = _Expanding.codes(text)
    owner, size = _owners(codes, units), len(units)
    shared = _is_shared(codes)
    after = _Expanding.codes(composed)
    left = np.bincount(_owners(after, units)[_is_shared(after)], minlength=size) > 0
    marks = np.bincount(owner[shared], minlength=size)
    lengths = np.bincount(owner, minlength=size)
    lengths[:-1] -= 1  # the newline after each text but the last is no part of it
    other = (codes < 128) & ~_ASCII_ALNUM[np.minimum(codes, 127)]
    ascii_other = np.bincount(owner[other], minlength=size)
    ascii_other[:-1] -= 1
    letters = lengths - marks - ascii_other
    stacked = shared.copy()
    stacked[0] = False
    stacked[1:] &= shared[:-1]
    stacks = np.bincount(owner[stacked], minlength=size)
    many = (marks > MARKED_SHARE * MARKED_TEXT_LETTERS) & (letters >= MARKED_TEXT_LETTERS)
    many &= (marks > MARKED_SHARE * letters) & (stacks < STACKED_SHARE * marks)
    disguised = left | many
    if not disguised.any():
        return composed
    keep = ~(shared & disguised[owner])
    return unicodedata.normalize("NFC", _Expanding.text(codes[keep]))


_ASCII_ALNUM = np.array([chr(c).isalnum() for c in range(128)], dtype=bool)


_IOTA_BELOW = "\u0345"  # case folds to the letter iota: under a Greek vowel it is one
_GREEK_BASE = re.compile("([\u0370-\u03ff\u1f00-\u1fff]?)([\u0300-\u036f]*\u0345[\u0300-\u036f]*)")


def _iota_below(match: re.Match[str]) -> str:
    """The Greek ypogegrammeni (U+0345) case folds to iota (``\u1fb3`` is ``\u03b1\u03b9``):
    so read under a Greek letter, removed elsewhere (a mark among marks piled on a Latin
    letter)."""
    base, marks = match.groups()
    return base + marks if base else marks.replace(_IOTA_BELOW, "")


def _pieces(text: str, units: Sequence[int] | None) -> list[str]:
    """``text`` as the texts it joins (``units``: see :func:`_composed`), or whole."""
    if units is None or len(units) < 2:
        return [text]
    lines = text.split("\n")
    ends = np.cumsum(units).tolist()
    return ["\n".join(lines[a:b]) for a, b in zip([0, *ends[:-1]], ends, strict=True)]


# bits of a code point for step 4 (_latin_bits): a letter ([^\W\d_]), a word's character (\w or
# a mark), an ASCII letter, a letter read apart, one of LATIN, one that looks like I or l
_LETTER, _WORDLY, _ASCII_LETTER_BIT, _APART, _LATIN, _I_OR_L_BIT = 1, 2, 4, 8, 16, 32


def _latin_bit(c: str) -> int:
    """:func:`_latin_bits` of one character."""
    bits = _LETTER if _ONE_LETTER.match(c) else 0
    bits |= _WORDLY if _word_char().match(c) else 0
    bits |= _ASCII_LETTER_BIT if _ASCII_LETTER.match(c) else 0
    bits |= _APART if c in canonical_data.I_OR_L or c in _latin_table_str() else 0
    bits |= _LATIN if c in _latin_table_str() else 0
    return bits | (_I_OR_L_BIT if c in canonical_data.I_OR_L else 0)


_ONE_LETTER = re.compile(r"[^\W\d_]")


@cache
def _word_char() -> re.Pattern[str]:
    return re.compile(f"(?:\\w|{mark_class()})")


@cache
def _latin_table_str() -> str:
    return canonical_data.LATIN[0::2]


@cache
def _latin_arrays() -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The letters of ``LATIN`` (sorted) and what each is read as, as code points."""
    keys = sorted(map(ord, _latin_table_str()))
    values = [ord(_latin_table()[k]) for k in keys]
    return np.array(keys, dtype=np.uint32), np.array(values, dtype=np.uint32)


@cache
def _latin_bits() -> npt.NDArray[np.uint8]:
    """What step 4 asks of each BMP code point, as bits (see :func:`_latin_bit`)."""
    return np.frombuffer(bytes(_latin_bit(chr(c)) for c in range(0x10000)), dtype=np.uint8)


@cache
def _folded_alone() -> npt.NDArray[np.uint32]:
    """Each BMP code point's case folding where it is one code point, else itself."""
    out = np.arange(0x10000, dtype=np.uint32)
    for c in range(0x10000):
        f = chr(c).casefold()
        if len(f) == 1:
            out[c] = ord(f)
    return out


def _per_point(
    codes: npt.NDArray[np.uint32], table: npt.NDArray[Any], one: Callable[[int], int]
) -> npt.NDArray[Any]:
    """``table`` (of the BMP) looked up for ``codes``; past the BMP, ``one`` of each distinct
    code point."""
    out = table[np.minimum(codes, 0xFFFF)]
    astral = np.flatnonzero(codes > 0xFFFF)
    if len(astral):
        distinct, where = np.unique(codes[astral], return_inverse=True)
        seen = np.array([one(c) for c in distinct.tolist()], dtype=table.dtype)
        out[astral] = seen[where]
    return out


def _counted(
    mask: npt.NDArray[np.bool_], owner: npt.NDArray[np.int64], size: int
) -> npt.NDArray[np.int64]:
    """How many of ``mask`` each of ``size`` owners holds."""
    return np.bincount(owner[mask], minlength=size)


def _runs(mask: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Where each run of ``mask`` starts, and each position's run (-1 before the first)."""
    first = mask.copy()
    first[1:] &= ~mask[:-1]
    return np.flatnonzero(first), np.cumsum(first) - 1


# At most ALONE_TEXTS texts of fewer than AT_ONCE_CHARS characters in all are read each alone
# in step 4 and their marks judged so (numpy's fixed cost, some 50 us, was most of the fold of a
# short Greek or Cyrillic text); more, all at once in numpy.
AT_ONCE_CHARS = 512
ALONE_TEXTS = 4


def _read_latin(text: str, units: Sequence[int] | None = None) -> str:
    """Step 4 on each text ``text`` joins (``units``: see :func:`_composed`), each as it would
    be read alone (:func:`_read_latin_alone`): a few short texts each by itself, else all at
    once (:func:`_read_latin_at_once`)."""
    if len(text) < AT_ONCE_CHARS and (units is None or len(units) <= ALONE_TEXTS):
        return "\n".join(map(_read_latin_alone, _pieces(text, units)))
    return _read_latin_at_once(text, units)


def _read_latin_alone(text: str) -> str:
    """Step 4 on one text, written a word at a time: a text with no ASCII letter is left as it
    is; in a Latin text (:func:`_latin_text`) every letter of ``LATIN`` is read as what it
    looks like, else those in words written with an ASCII letter, and the words of a letter
    read apart and no ASCII letter are case folded (a Greek or Cyrillic word reads alike in
    capitals and small letters) (:func:`_latin_word`); then the letters that look like I or
    l, from their neighbours (:func:`_read_all_i_or_l`)."""
    if not _ASCII_LETTER.search(text):
        return text
    if _latin_text(text):
        text = text.translate(_latin_table())
    else:
        text = _read_apart().sub(_latin_word, text)
    return _read_all_i_or_l(text) if _i_or_l_one().search(text) else text


def _read_latin_at_once(text: str, units: Sequence[int] | None = None) -> str:
    """:func:`_read_latin_alone` of each text ``text`` joins, all at once in numpy over the code
    points (a call a word, or a text, cost a text of them several times news per KB). A word
    the rule case folds is case folded here only where it is one code point: in a decomposed
    text, the rest reads as its case folding does to the letters around an I or l, and the
    next step case folds the text. Tested equal to the rule a text at a time."""
    codes = _expanding().codes(text).copy()
    n = len(codes)
    bits = _per_point(codes, _latin_bits(), lambda c: _latin_bit(chr(c)))
    if units is None or len(units) < 2:
        lengths = np.array([n], dtype=np.int64)
    else:
        breaks = np.flatnonzero(codes == ord("\n"))[np.cumsum(units)[:-1] - 1]
        lengths = np.diff(np.concatenate(([-1], breaks, [n]))) - 1
    size = len(lengths)
    owner = np.repeat(np.arange(size), lengths + 1)[:n]  # each character's text
    ascii_letter = (bits & _ASCII_LETTER_BIT) != 0
    ok = (_counted(ascii_letter, owner, size) > 0) & (
        _counted((bits & _APART) != 0, owner, size) > 0
    )
    if not ok.any():
        return text
    # Latin texts: most words (runs of letters) written with an ASCII letter
    letter = (bits & _LETTER) != 0
    firsts, run = _runs(letter)
    with_ascii = np.bincount(run[ascii_letter], minlength=len(firsts)) > 0
    words = np.bincount(owner[firsts], minlength=size)
    alone = np.bincount(owner[firsts[~with_ascii]], minlength=size)
    latin = ok & (2 * alone <= words)
    apart_word = ok & ~latin
    keys, values = _latin_arrays()
    mapped = ((bits & _LATIN) != 0) & latin[owner]
    if apart_word.any():  # words (of word characters and marks) with a letter read apart
        wordly = (bits & _WORDLY) != 0
        firsts, run = _runs(wordly)
        w_apart = np.bincount(run[wordly & ((bits & _APART) != 0)], minlength=len(firsts)) > 0
        w_ascii = np.bincount(run[ascii_letter], minlength=len(firsts)) > 0
        inside = wordly & apart_word[owner] & w_apart[np.maximum(run, 0)]
        mapped |= inside & w_ascii[np.maximum(run, 0)] & ((bits & _LATIN) != 0)
        folded = inside & ~w_ascii[np.maximum(run, 0)]
        fold_one = lambda c: ord(f) if len(f := chr(c).casefold()) == 1 else c  # noqa: E731
        codes[folded] = _per_point(codes[folded], _folded_alone(), fold_one)
    codes[mapped] = values[np.searchsorted(keys, codes[mapped])]
    _read_i_or_l_codes(codes, ok[owner])
    return _Expanding.text(codes)


def _fold_decoded(text: str, units: Sequence[int] | None = None) -> str:
    """:func:`fold` of a decoded text (steps 2-7); ``units``: see :func:`_composed`."""
    if text.isascii():
        return text.lower()
    if _IOTA_BELOW in text:
        text = _GREEK_BASE.sub(_iota_below, unicodedata.normalize("NFD", text))
    table = _table()
    # the invisible removed first (one inside a word, a soft hyphen, must not split it), and
    # the look-alikes compatibility decomposition would turn into another letter
    t = _mapped(text, _before_nfkd(), _before_nfkd_keys())
    if t.isascii():  # curly apostrophes and dashes mapped: nothing below changes ASCII
        return t.lower()
    t = unicodedata.normalize("NFKD", t)
    if _apart().search(_non_ascii(t)) and _ASCII_LETTER.search(t):
        t = _read_latin(t, units)
    # case folded before the look-alikes are read: a letter's capital and small forms read as
    # one look-alike
    t = t.casefold()
    if not unicodedata.is_normalized("NFKD", t):
        t = unicodedata.normalize("NFKD", t)
    if _HELD_RE.search(t):
        t = t.translate(_RELEASE)
    t = _mapped(t, table, _table_keys())
    if not _wordish().search(_non_ascii(t)):  # quotes, bullets, dashes: nothing below changes
        return t
    t = _composed(t, units)
    if not _HAN.search(t):  # no Han character: no phrase to fold
        return t
    # a member may itself start a longer phrase with what follows it: fold until nothing
    # changes (twice at most on the texts OpenCC writes)
    for _ in range(4):
        folded = fold_phrases(t)
        if folded == t:
            break
        t = folded
    return t


__all__ = [
    "CANONICAL_FORM",
    "FORMATS",
    "LEGACY_FORM",
    "char_class",
    "expansion",
    "expansion_bound",
    "fold",
    "fold_each",
    "fold_phrases",
    "forget_folds",
    "has_mark",
    "mark_class",
    "reading",
]
