"""Words hidden from a machine in ways a reader sees through, read back (around the canonical
form's steps: :mod:`neardup.sketch.canonical`).

Four ways of writing a word that a reader reads as the word and a tokenizer does not. The first
three are undone on the decoded text (:func:`unhide`: before look-alikes, marks and case, while
the characters they test for are still there); spaced letters again and leetspeak on the folded
text (:func:`unhide_folded`: the form folded twice is the form).

1. **Lines written backwards inside a right-to-left override** (U+202E ... U+202C, U+2069 or the
   line's end): a reader sees the letters of a left-to-right script in the reverse of their
   stored order, so the run is reversed back (a letter keeps its marks). A run of right-to-left
   letters shows in its own order and is left alone (:func:`reverse_overrides`).
2. **An invisible character standing for every space** (U+3164 HANGUL FILLER, U+FFA0, U+115F,
   U+180E, U+2800 BRAILLE PATTERN BLANK, a zero-width space): removed, it glued the words. A run
   of them between two visible characters becomes a space when such runs outnumber the text's
   real spaces (:func:`invisible_spaces`; the rule decides by kind: the blanks, which look like
   or once were a space, and the zero-width characters, only in a text with almost no real
   space and about one per word). Inside words (``wo\u200brd``, one between every two
   letters) they are still removed: the zero-width joiners of the disguise benchmark's
   ``invisible`` family stay found.
3. **Letters spaced out** (``c o p y``, ``c.o.p.y``, ``c-o-p-y``, ``c  o  p  y``, thin spaces):
   runs of single letters with one separator between them, joined back into words when the
   runs of one separator hold a large share of the text's letters (a real text's ``a``, ``I``
   and initials do not), or when a run is four letters long or more; never fewer than
   :data:`SPACED_LETTERS` letters in all (``a b c d``) (:func:`join_spaced`).
4. **Leetspeak digits inside words** (``h4ck3r``, ``r3f1n3r5``, ``5ecur1ty``): in any text, a
   word of three letters or more with single digits between its letters is read with each digit
   as the letter it stands for (``0`` o, ``1`` i, ``11`` ll, ``3`` e, ``4`` a, ``5`` s, ``7`` t,
   ``8`` b, ``9`` and ``6`` g, ``2`` z); in a text where a tenth of the words are so written,
   every word mixing letters and those digits too, and the short numbers of those digits that
   do not read as numbers (:func:`read_leet`). A real alphanumeric has fewer letters or longer
   numbers (``A320``, ``COVID19``, ``3D``, ``mp3``, ``10am``, ``2nd``, ``B2B``, ``H5N1``,
   ``DC10s``) and is kept. Measured: of 20,841 Reuters stories, one folds otherwise (its
   ``horiz0n`` read as ``horizon``).

Most texts have none of these: :func:`plain` tells an ASCII text that has nothing to undo here
(nor an escape, :mod:`neardup.sketch.escapes`) from the byte shapes of its first
:data:`SAMPLE` characters, so the canonical form's fast path stays fast (some 0.5 us a story).
A disguise that spares a text's start is not looked for.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from neardup.sketch import canonical_data

SAMPLE = 48
"""Characters at the start of a text whose shapes :func:`plain` looks at."""

# shapes of UTF-8 bytes: an ASCII letter "a", a digit "0", a separator of spaced letters " ", a
# character past ASCII "u" (its first byte; the others are deleted), any other ASCII byte ","
_SHAPES = bytes(
    ord(
        "u"
        if b >= 0xC0
        else "a"
        if chr(b).isascii() and chr(b).isalpha()
        else "0"
        if chr(b).isdigit()
        else " "
        if chr(b) in " .-_*"
        else ","
    )
    for b in range(256)
)
_BYTES = bytes(range(0x80, 0xC0))  # a character's bytes past its first
# separators of spaced letters: two spaces, or one of these
_SEPARATORS = " ._*\\-\u00a0\u00b7\u2006\u2009\u200a\u202f"
_LETTER = r"[^\W\d_]"
# combining marks of the blocks a disguise draws them from, and variation selectors: a letter
# of a spaced run may carry them, and a letter beside one is inside a word
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe00-\ufe0f\ufe20-\ufe2f"
SPACED_SHARE = 0.3
"""The share of a text's letters in runs of spaced letters past which every run is joined."""
LONG_RUN = 4
"""A run of this many spaced letters or more is joined in any text."""
SPACED_LETTERS = 10
"""Runs of spaced letters holding fewer letters in all are left as they are: too few to tell a
word spaced out from a list of letters (``a b c d``)."""

_LEET = {"0": "o", "1": "i", "2": "z", "3": "e", "4": "a", "5": "s", "6": "g", "7": "t",
         "8": "b", "9": "g"}  # fmt: skip
# leetspeak writes Latin letters: its words are of ASCII letters and digits (a digit beside a
# Han character is no part of a word)
_FLANKED_RE = re.compile(r"[A-Za-z][0-9]{1,2}[A-Za-z]")
# a digit inside a word of leetspeak: between two letters, or first before two letters
_INSIDE_RE = re.compile(r"[A-Za-z][0-9]{1,2}[A-Za-z]|(?<![A-Za-z0-9])[0-9][A-Za-z]{2}")
_ALNUM_RE = re.compile(r"(?<![^\W_])[A-Za-z0-9]+(?![^\W_])")
_DIGITS_RE = re.compile(r"[0-9]+")

# characters that draw nothing but look like, or once were, a space: Hangul fillers, the
# Mongolian vowel separator, the blank braille pattern
_BLANKS = "\u115f\u1160\u180e\u2800\u3164\uffa0"
_BLANK_SPACES = dict.fromkeys(map(ord, _BLANKS), " ")
_RLO, _PDF, _PDI = "\u202e", "\u202c", "\u2069"
_ENDS = f"{_PDF}{_PDI}\n\r\u2028\u2029\x85"
# an override's content, to its pop, an isolate's end or the line's end (not to another one)
_OVERRIDE_RE = re.compile(f"{_RLO}([^{_RLO}{_ENDS}]*)(?=[{_ENDS}]|\\Z)")


def _suspect(text: str) -> bool:
    """Whether the shapes of the text's first :data:`SAMPLE` characters (a C pass over a few
    bytes: a regular expression over a story cost more than folding it) show no two letters
    side by side (spaced letters: a real text's first words have two), or a digit between
    letters (leetspeak). A disguise that spares a text's start is not looked for."""
    sample = text[:SAMPLE].encode("utf-8", "surrogatepass")
    if text.isascii():
        shape = sample.translate(_SHAPES)
    else:
        shape = sample.translate(_SHAPES, _BYTES)
        if b"uu" in shape and b"aa" not in shape:  # letters past ASCII side by side
            return b"0" in shape and b"a0a" in shape
    return b"aa" not in shape or (b"0" in shape and b"a0a" in shape)


def plain(text: str) -> bool:
    """Whether an ASCII text certainly has nothing here to undo (nor an escape): no backslash
    or ``=``, and its start shows letters side by side and no digit between letters. The
    test is :func:`_suspect`'s, written out: it runs on every text the form folds."""
    if "\\" in text or "=" in text:
        return False
    shape = text[:SAMPLE].encode().translate(_SHAPES)
    return b"aa" in shape and (b"0" not in shape or b"a0a" not in shape)


@cache
def invisible_class(astral: bool = False) -> str:
    """A regular-expression class of what draws nothing between letters: the default-ignorable
    code points of the BMP the form removes (not the combining marks it removes with them) and
    the blanks. Past the BMP (tag characters; ``astral``) the class would cost a text's search
    some twenty-five times more: those are removed, never read as a space."""
    chars: list[str] = []
    for span in "".join(canonical_data.REMOVED).split():
        first, last = (int(x, 16) for x in span.split("-"))
        chars += (
            chr(c)
            for c in range(first, (last if astral else min(last, 0xFFFF)) + 1)
            if unicodedata.category(chr(c)) not in "MnMe"
        )
    chars += _BLANKS
    spans: list[list[int]] = []  # as ranges: a class of thousands of single characters is slow
    for c in sorted(set(map(ord, chars))):
        if spans and spans[-1][1] == c - 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])
    return "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in spans)


@cache
def _invisible_re() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Any invisible character; a run of them between two visible characters."""
    cls = invisible_class()
    seen = rf"[^\s{cls}]"
    return re.compile(f"[{cls}]"), re.compile(f"(?<={seen})[{cls}]+(?={seen})")


def _spaced_script(c: str) -> bool:
    """Whether ``c`` is a letter of a script written with spaces between words (not Han, kana,
    Thai, Lao, Myanmar or Khmer, whose words run together)."""
    o = ord(c)
    if 0x0E00 <= o <= 0x0EFF or 0x1000 <= o <= 0x109F or 0x1780 <= o <= 0x17FF:
        return False
    return o < 0x2E80 or 0xAC00 <= o <= 0xD7AF or 0xA640 <= o <= 0xABFF


JOINER_LETTERS = 30
"""A text of fewer letters is too short to tell zero-width characters standing for its spaces
from those inside its words (a URL, a word)."""


def _between_words(before: str, after: str) -> bool:
    """Whether a gap between these two visible characters may stand for a space: neither is a
    letter of a script written without spaces (a number beside a number, in a table, is
    spaced too)."""
    return all(_spaced_script(c) for c in (before, after) if c.isalpha())


def invisible_spaces(text: str) -> str:
    """Each run of invisible characters between two visible ones, neither a letter of a script
    written without spaces, as a space, in a text mostly of scripts written with spaces: the
    blanks where they outnumber the text's real spaces twice over (and are fewer than one per
    2.5 letters: one between every two letters is inside words); the zero-width ones where they
    do and the text has fewer than one real space per 20 letters, at least
    :data:`JOINER_LETTERS` letters, and about as many gaps as it would have words (one per 2.5
    to 12 letters). Elsewhere they stay, to be removed."""
    anywhere, gap = _invisible_re()
    if not anywhere.search(text):
        return text
    blank: list[tuple[int, int]] = []
    joiner: list[tuple[int, int]] = []
    for m in gap.finditer(text):
        a, b = m.start(), m.end()
        if _between_words(text[a - 1], text[b]):
            (blank if any(c in _BLANKS for c in m.group()) else joiner).append((a, b))
    if len(blank) + len(joiner) < 2:
        return text
    spaces = len(re.findall(r"[^\S\n\r\x85\u2028\u2029]+", text))
    alpha = [c for c in text if c.isalpha()]
    letters = sum(1 for c in alpha if _spaced_script(c))
    if 2 * letters < len(alpha):  # mostly Chinese, Japanese or Thai: no word is spaced
        return text
    spans: list[tuple[int, int]] = []
    gaps = len(blank) + len(joiner)
    blanks = len(blank) >= 2 and len(blank) > 2 * spaces and len(blank) <= letters / 2.5
    if blanks:
        spans += blank
    if (
        len(joiner) > 2 * spaces
        and 20 * spaces < letters
        and letters >= JOINER_LETTERS
        and letters / 12 <= gaps <= letters / 2.5
    ):  # as many gaps as words would have (one per 2.5-12 letters), not one per letter
        spans += joiner
    if not spans:
        return text
    out: list[str] = []
    done = 0
    for a, b in sorted(spans):
        out += (text[done:a], " ")
        done = b
    out.append(text[done:])
    spaced = "".join(out)
    if blanks:  # the blanks stand for spaces: at a line's start too (an indent)
        spaced = spaced.translate(_BLANK_SPACES)
    return spaced


def _clusters(text: str) -> list[str]:
    """``text`` cut into letters each with the marks that follow it."""
    out: list[str] = []
    for c in text:
        if out and unicodedata.category(c)[0] == "M":
            out[-1] += c
        else:
            out.append(c)
    return out


def _reverse_run(match: re.Match[str]) -> str:
    run = match.group(1)
    classes = [unicodedata.bidirectional(c) for c in run]
    ltr = classes.count("L")
    if ltr <= classes.count("R") + classes.count("AL"):
        return match.group()  # right-to-left letters show in their own order
    return _RLO + "".join(reversed(_clusters(run)))


def reverse_overrides(text: str) -> str:
    """The content of each right-to-left override (to its pop, an isolate's end or the line's
    end) that is mostly left-to-right letters, reversed back to the order a reader sees. An
    override followed by another before its end is left as it is: a display stacks them, but
    a text that puts one between every two letters (``t\u202eh\u202ee``) is built for a
    machine, and is read as the letters it holds."""
    if _RLO not in text:
        return text
    return _OVERRIDE_RE.sub(_reverse_run, text)


@cache
def _spaced_by(separator: str) -> re.Pattern[str]:
    """Runs of single letters ``separator`` apart."""
    sep = re.escape(separator)
    inside, letter = _in_word()
    return re.compile(rf"(?<!{inside}){letter}(?:{sep}{letter})+(?!{inside})")


@cache
def _in_word() -> tuple[str, str]:
    """What continues a word (a word character, a mark, an invisible character: ``w\u200bo``
    is one word, neither letter single), and a letter with its marks."""
    return rf"[\w{_MARKS}{invisible_class(astral=True)}]", rf"{_LETTER}[{_MARKS}]*"


@cache
def _spaced_re() -> re.Pattern[str]:
    """Runs of single letters (:func:`_in_word`) with one separator between them."""
    inside, letter = _in_word()
    return re.compile(
        rf"(?<!{inside}){letter}(  |[{_SEPARATORS}])(?:{letter}\1)*{letter}(?!{inside})"
    )


def join_spaced(text: str) -> str:
    """Runs of single letters with one separator between them, joined into words: those of the
    separator whose runs hold the most letters (``c.o.p.y t.h.e``: the dots, not the space
    between ``y`` and ``t``) when they hold :data:`SPACED_SHARE` of the text's letters or more;
    else those of :data:`LONG_RUN` letters or more; none when all runs hold fewer than
    :data:`SPACED_LETTERS` letters."""
    runs = list(_spaced_re().finditer(text))
    if not runs:
        return text
    held: dict[str, int] = {}
    for m in runs:
        sep = m.group(1)
        held[sep] = held.get(sep, 0) + (m.end() - m.start() + len(sep)) // (1 + len(sep))
    if sum(held.values()) < SPACED_LETTERS:
        return text
    sep = max(held, key=lambda k: held[k])
    letters = sum(1 for c in text if c.isalpha())
    if held[sep] >= SPACED_SHARE * letters:
        return _spaced_by(sep).sub(lambda m: m.group().replace(sep, ""), text)
    out: list[str] = []
    done = 0
    for m in runs:
        if (m.end() - m.start() + len(m.group(1))) // (1 + len(m.group(1))) >= LONG_RUN:
            out += (text[done : m.start()], m.group().replace(m.group(1), ""))
            done = m.end()
    out.append(text[done:])
    return "".join(out)


# an ordinal or a time of day as written (``21st``, ``12th``, ``4th``, ``10am``): not leetspeak
_ORDINAL_RE = re.compile(r"(?i:[0-9]*(?:1[0-9]th|1st|2nd|3rd|[04-9]th)|[0-9]{1,2}[ap]m)", re.ASCII)


def _mixed(word: str) -> bool:
    """Whether ``word`` has a letter, and a digit, and only digits a leetspeak letter, and is
    no ordinal (``4th``)."""
    return (
        any(c.isdigit() for c in word)
        and not _ORDINAL_RE.fullmatch(word)
        and any(c.isalpha() for c in word)
        and all(c in _LEET for c in word if c.isdigit())
    )


def _letters(word: str) -> int:
    return sum(1 for c in word if c.isalpha())


def _strict(word: str) -> bool:
    """Whether ``word`` reads as leetspeak in any text: three letters or more, a digit between
    two of them, and every digit alone (``DC10s`` is a name)."""
    if not _mixed(word) or not _FLANKED_RE.search(word):
        return False
    runs = _DIGITS_RE.findall(word)
    return len(word) - sum(map(len, runs)) >= 3 and all(len(r) == 1 for r in runs)


def _strict_word(match: re.Match[str]) -> str:
    word = match.group()
    return _as_letters(word) if _strict(word) else word


def _as_letters(word: str) -> str:
    return _DIGITS_RE.sub(_leet_digits, word)


def _leet_digits(match: re.Match[str]) -> str:
    digits = match.group()
    return "ll" if digits == "11" else "".join(_LEET.get(d, d) for d in digits)


LEET_SHARE = 0.1
"""The share of a text's words written in leetspeak past which every word of letters and
leetspeak digits, and every short number standing alone, reads as letters."""
_NUMBER_AROUND = frozenset("$%#")  # a number's sign beside it: $4, 15%
_NUMBER_JOINS = frozenset(".,:/-")  # between two numbers' digits: 3.5, 1,000, 10-30, 1/2
_YEAR_RE = re.compile(r"(?:19|20)[0-9]{2}")


def _number(text: str, m: re.Match[str]) -> bool:
    """Whether the digits ``m`` found in a text of leetspeak are still a number: more than six,
    a year, a sign beside them, or part of a number written with a point, comma or dash."""
    a, b, word = m.start(), m.end(), m.group()
    if len(word) > 6 or _YEAR_RE.fullmatch(word):
        return True
    before, after = text[a - 1 : a], text[b : b + 1]
    if before in _NUMBER_AROUND or after in _NUMBER_AROUND:
        return True
    return (before in _NUMBER_JOINS and text[a - 2 : a - 1].isdigit()) or (
        after in _NUMBER_JOINS and text[b + 1 : b + 2].isdigit()
    )


def read_leet(text: str) -> str:
    """Words written with digits for letters (see the module doc), read as letters. In a text
    where :data:`LEET_SHARE` of the words or more have three letters or more and a leetspeak
    digit between letters or before two (``r4153d``, ``m4rk375``, ``4nd``; not ``H5N1``),
    every word that mixes letters and leetspeak digits is read so, and every number of the
    digits those words use that stands alone (``4`` a, ``70`` to, ``175`` its), unless it
    reads as a number (:func:`_number`): a text written so has few numbers of its own, and its
    short words are wholly digits."""
    if not _INSIDE_RE.search(text):
        return text
    words = _ALNUM_RE.findall(text)
    leet = [w for w in words if _mixed(w) and _INSIDE_RE.search(w) and _letters(w) >= 3]
    if not leet or len(leet) < LEET_SHARE * len(words):
        return _ALNUM_RE.sub(_strict_word, text)
    used = {c for w in words if _mixed(w) for c in w if c.isdigit()}

    def sub(m: re.Match[str]) -> str:
        word = m.group()
        if _mixed(word):
            return _as_letters(word)
        if word.isdigit() and all(c in used for c in word) and not _number(text, m):
            return _as_letters(word)
        return word

    return _ALNUM_RE.sub(sub, text)


def unhide(text: str) -> str:
    """The first three undone on a decoded text (see the module doc), in order: overrides,
    invisible spaces, spaced letters (while a thin space still differs from a space)."""
    if not text.isascii():
        text = invisible_spaces(reverse_overrides(text))
    return join_spaced(text) if _suspect(text) else text


def unhide_folded(text: str) -> str:
    """Spaced letters and leetspeak undone on a folded text: leetspeak is read on the letters
    and digits of the form (a look-alike or a styled letter read as its letter, a digit of
    another script as an ASCII digit), and letters that became letters in folding (``Ⓐ Ⓑ Ⓒ``)
    are joined, so that the form is the same folded twice."""
    return read_leet(join_spaced(text)) if _suspect(text) else text


__all__ = [
    "JOINER_LETTERS",
    "LEET_SHARE",
    "LONG_RUN",
    "SAMPLE",
    "SPACED_LETTERS",
    "SPACED_SHARE",
    "invisible_class",
    "invisible_spaces",
    "join_spaced",
    "plain",
    "read_leet",
    "reverse_overrides",
    "unhide",
    "unhide_folded",
]
