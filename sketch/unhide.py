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
3. **Letters spaced out** (``c o p y``, ``c.o.p.y``, ``c-o-p-y``, ``c_o_p_y``, ``c·o·p·y``,
   ``c  o  p  y``, thin spaces; a separator is two spaces or any one space, punctuation mark or
   symbol, the same along a run): runs of single letters with one between them, joined back
   into words when the
   runs of one separator hold a large share of the text's letters (a real text's ``a``, ``I``
   and initials do not), or when a run is four letters long or more (not an initialism with
   a point after its last letter too, ``C.O.M.B.``), and then a shorter run beside a joined
   one (``t.h.e b.a.n.k``); never fewer than :data:`SPACED_LETTERS` letters in all
   (``a b c d``) (:func:`join_spaced`). A mark or symbol that the text uses only to space out
   words (half the words ``c_o_r_p_'_s``, ``1·9·8·7``) joins those words whole, their digits
   and punctuation too (:func:`_spaced_chunks`); ``a/b``, ``and/or``, ``1-2-3``, ``M-1`` stay.
4. **Leetspeak digits inside words** (``h4ck3r``, ``r3f1n3r5``, ``5ecur1ty``): in any text, a
   word of three letters or more with two single digits or more, one between its letters, is
   read with each digit as the letter it stands for (``0`` o, ``1`` i, ``11`` ll, ``3`` e,
   ``4`` a, ``5`` s, ``7`` t, ``8`` b, ``9`` and ``6`` g, ``2`` z); in a text (or a sentence)
   where a share of the words with a letter are so written, every word mixing letters and
   those digits too, an ordinal keeping its number (``47H`` 4th) (:func:`read_leet`). A
   number standing alone stays a number: ``50`` may be ``so`` or fifty, which only the
   meaning tells. A real alphanumeric has fewer letters or longer numbers (``A320``,
   ``COVID19``, ``3D``, ``mp3``, ``10am``, ``2nd``, ``B2B``, ``H5N1``, ``DC10s``) and is
   kept. Leetspeak's symbols are read as its digits are (``@`` a, ``$`` s, ``!`` i, ``+`` t,
   ``|`` l, ``(`` c, ``€`` e, ``£`` l, ``¡`` i, ``¢`` c, ``§`` s, ``¥`` y: ``h@ck3r``,
   ``pers!$tent``), in a word with a digit or two letters side by side (``x+y``, ``a|b|c`` are
   a formula and a list), and first or last in a word (``$aid``, ``la$+``) only in a text of
   leetspeak; an e-mail address (``a@b.com``) is kept. ``ß`` folds to ``ss`` before leetspeak is
   read, and ``1`` reads ``i``, never ``l``. Measured: of 20,841 Reuters stories, none folds
   otherwise (a typing slip ``othe4r`` or a code ``th3pygks`` has one digit).

Most texts have none of these: :func:`plain` tells an ASCII text that has nothing to undo here
(nor an escape, :mod:`neardup.sketch.escapes`) from the byte shapes of the whole text (one
``bytes.translate`` and two searches in C for a digit between letters and a run of four single
letters), so the canonical form's fast path stays fast: some 3 us a Reuters story of 800
characters, where the rest of :func:`~neardup.sketch.features.normalize` takes some 7 us. A
disguise that spares a text's start (a lead written plainly, a byline) is looked for as any
other.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import cache, lru_cache, partial
from itertools import accumulate, repeat
from operator import add, floordiv, methodcaller

import numpy as np
import numpy.typing as npt

from neardup.sketch import canonical_data

# leetspeak's symbols for letters (beside its digits): ASCII ones, and those past ASCII that fold
# to themselves (``ß`` folds to ``ss`` before leetspeak is read, and a German word has it)
_SYMBOLS = {"@": "a", "$": "s", "!": "i", "+": "t", "|": "l", "(": "c", "\u20ac": "e",
            "\u00a3": "l", "\u00a1": "i", "\u00a2": "c", "\u00a7": "s", "\u00a5": "y"}  # fmt: skip
_WIDE_SYMBOLS = "".join(c for c in _SYMBOLS if not c.isascii())


def _shape(b: int) -> str:
    """The shape of a UTF-8 byte: an ASCII letter "a"; a digit or a leetspeak symbol "0"; a
    space or other ASCII punctuation or symbol, each a separator of spaced letters, " "; a
    character past ASCII "u" (its first byte; the others are deleted); any other byte ","."""
    c = chr(b)
    if b >= 0xC0:
        return "u"
    if c.isascii() and c.isalpha():
        return "a"
    if c.isdigit():
        return "0"
    if c == "|":  # a rule of a table or a formula's (P(A|B)), as often as leetspeak's l
        return "|"
    if c in _SYMBOLS and c != "(":  # a bracket between letters is most often a formula's
        return "@"
    if c == "?":  # a character past ASCII looked at as ASCII (:func:`_ascii_suspect`)
        return "?"
    return " " if c == " " or (c.isascii() and c.isprintable() and not c.isalnum()) else ","


_SHAPES = bytes(ord(_shape(b)) for b in range(256))
# the same, but punctuation and symbols "." apart from the space: two apart (``c  o  p  y``)
# is only two spaces (``<a <a`` is no disguise)
_SPACE_SHAPES = bytes(
    ord("." if s == " " and b != 32 else s) for b, s in enumerate(_SHAPES.decode())
)
_BYTES = bytes(range(0x80, 0xC0))  # a character's bytes past its first
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
_LEET_ALL = {**_LEET, **_SYMBOLS}
_SYM = "".join(map(re.escape, _SYMBOLS))
# symbols that may start a word of leetspeak (``$ome``, ``!ncrease``, ``(ocoa``: a bracket
# that no other closes within a line or so), or end one (``la$+``, ``amer!(@``: not a mark of
# exclamation, ``Yahoo!``); read only in a text or a sentence of leetspeak
# (:func:`_loose_word`)
_LEAD = "".join(re.escape(c) for c in _SYMBOLS if c != "(")
_TRAIL = "".join(re.escape(c) for c in _SYMBOLS if c not in "!\u00a1")
_OPEN = r"\((?![^()]{0,60}\))"
# leetspeak writes Latin letters: its words are of ASCII letters, digits and symbols (a digit
# beside a Han character is no part of a word)
_FLANKED_RE = re.compile(rf"[A-Za-z][0-9{_SYM}]{{1,2}}[A-Za-z]")
# a digit or symbol inside a word of leetspeak: between two letters; a digit first before two
_INSIDE_RE = re.compile(
    rf"[A-Za-z][0-9{_SYM}]{{1,2}}[A-Za-z]|(?<![A-Za-z0-9{_SYM}])[0-9][A-Za-z]{{2}}"
)
# a symbol first or last in a word of three letters or more, counted as leetspeak (``|o$s``,
# ``d|r$``): not ``@`` or ``$`` first (``@name``, ``$AAPL``), nor ``!`` last (``Yahoo!``)
_EDGE_RE = re.compile(
    r"^[|+!(\u20ac\u00a3\u00a2\u00a7\u00a5][A-Za-z]{2}|[A-Za-z]{2}[$+|(@\u20ac\u00a3\u00a2\u00a7\u00a5]$"
)
_ALNUM_RE = re.compile(
    rf"(?<![^\W_])(?:[{_LEAD}]|{_OPEN})*[A-Za-z0-9](?:[A-Za-z0-9{_SYM}]*[A-Za-z0-9])?"
    rf"(?:[{_SYM}]*[{_TRAIL}])?(?![^\W_])"
)
_DIGITS_RE = re.compile(rf"[0-9{_SYM}]+")
# what follows the name before an e-mail address's domain (``a@b.com``): not leetspeak
_DOMAIN_RE = re.compile(r"\.[A-Za-z0-9]")
_CLOSE_RE = re.compile(r"[^\s(]{0,20}\)")

# characters that draw nothing but look like, or once were, a space: Hangul fillers, the
# Mongolian vowel separator, the blank braille pattern
_BLANKS = "\u115f\u1160\u180e\u2800\u3164\uffa0"
_BLANK_SPACES = dict.fromkeys(map(ord, _BLANKS), " ")
_RLO, _PDF, _PDI = "\u202e", "\u202c", "\u2069"
_ENDS = f"{_PDF}{_PDI}\n\r\u2028\u2029\x85"
# an override's content, to its pop, an isolate's end or the line's end (not to another one)
_OVERRIDE_RE = re.compile(f"{_RLO}([^{_RLO}{_ENDS}]*)(?=[{_ENDS}]|\\Z)")


# the shapes that tell a hidden word, anywhere in a text padded with a space at each end: a
# digit between letters (leetspeak); a run of four single letters one separator or two spaces
# apart (spaced letters: join_spaced joins shorter runs only where runs hold a large share of
# the text's letters, and such a text has runs of four too). Each pattern starts with a byte
# rarer than a letter, which the search skips to in C (bytes.find on "a0a" and " a a a a "
# costs three times as much: the letter that ends each is most of a text).
_DIGIT_RE = re.compile(rb"0(?<=a0)a")
# a leetspeak symbol "@" between letters, beside another or a digit (``b@nk``, ``pers!$tent``);
# a bar "|" only four letters a bar apart (``c|o|p|y``): ``PROB(WIN|RAIN)`` is a formula, and a
# word of leetspeak with a bar has other symbols too
_SYMBOL_RE = re.compile(rb"@(?<=[a0|]@)[0@|]?a|\|(?<=[a0@]\|)a\|a\|a")
_RUN_RE = re.compile(rb" a(?: a a a |  a  a  a )")
# of those, four letters one separator apart; two spaces apart in the shapes of _SPACE_SHAPES
# (looked at only where _RUN_RE finds a run: ``<a <a <a <a`` looks like ``c  o  p  y``)
_SINGLE_RUN_RE = re.compile(rb" a a a a ")
_DOUBLE_RUN_RE = re.compile(rb"a  a  a  a(?<=[ .]a  a  a  a)[ .]")
# four letters a mark past ASCII apart (``c·o·p·y``) in a text whose characters past ASCII are
# all marks, each looked at as "?": one such between letters is most often a curly apostrophe
_MARK_RUN_RE = re.compile(rb"\?(?<=a\?)a\?a\?a")
# the same in a text past ASCII, whose characters past ASCII (their first byte "u") may be
# letters (spaced letters of Cyrillic, Greek...) or separators (a thin space, a no-break space)
_U_RUN_RE = re.compile(rb" [au](?: [au] [au] [au] |  [au]  [au]  [au] )|a[ u]a[ u]a[ u]a")
_U_SINGLE_RUN_RE = re.compile(rb" [au] [au] [au] [au] |a[ u]a[ u]a[ u]a")
_U_DOUBLE_RUN_RE = re.compile(rb"[au]  [au]  [au]  [au](?<=[ .][au]  [au]  [au]  [au])[ .]")


_ASCII = bytes(range(128))


@lru_cache(maxsize=4096)
def _punctuation(c: str) -> bool:
    """Whether ``c`` is punctuation or a symbol: neither a letter nor a separator of one."""
    return unicodedata.category(c)[0] in "PS"


def _only_marks_of_writing(text: str) -> bool:
    """Whether every character of ``text`` past ASCII is punctuation or a symbol (curly
    quotes, dashes, bullets: most texts past ASCII), so that its shapes are an ASCII text's,
    each such character an ASCII ``?`` (a C pass: the pattern for a text past ASCII, which
    takes such a character for a letter, cost a story several microseconds)."""
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII)
    return all(map(_punctuation, set(rest.decode("utf-8", "surrogatepass"))))


def _suspect(text: str) -> bool:
    """Whether the shapes of the text's characters (a C pass over its bytes: a regular
    expression over a story's characters cost more than folding it) show a digit between
    letters (leetspeak) or a run of single letters (spaced letters), anywhere: a disguise that
    spares the text's start is looked for too. A character past ASCII is taken for a letter
    and for a separator; a leetspeak symbol past ASCII (``€``) is looked at as ``@``."""
    if text.isascii():
        return _ascii_suspect(text)
    for c in _WIDE_SYMBOLS:
        if c in text:
            text = text.replace(c, "@")
    if _only_marks_of_writing(text):
        return (
            _ascii_suspect(text)
            or _MARK_RUN_RE.search(f" {text} ".encode("ascii", "replace").translate(_SHAPES))
            is not None
        )
    padded = f" {text} ".encode("utf-8", "surrogatepass")
    shape = padded.translate(_SHAPES, _BYTES)
    return (
        _DIGIT_RE.search(shape) is not None or _spaced_run(shape, padded, _BYTES) or _symbol(shape)
    )


def _joined_shape(texts: Sequence[str], deleted: bytes | None) -> tuple[bytes, list[int]]:
    """The shapes of ``texts`` joined by ``" \\x00 "`` and padded with a space at each end, and
    each text's end in them past its separator: each text stands between spaces as
    :func:`_suspect` pads it, and a NUL (a ``,``) ends every run across two. ``deleted``: the
    bytes of a character past its first (texts past ASCII), else ASCII texts."""
    text = " \x00 ".join(texts)
    if deleted is None:
        shape = f" {text} ".encode("ascii").translate(_SHAPES)
    else:
        for c in _WIDE_SYMBOLS:
            if c in text:
                text = text.replace(c, "@")
        shape = f" {text} ".encode("utf-8", "surrogatepass").translate(_SHAPES, deleted)
    return shape, list(accumulate(map(add, map(len, texts), repeat(3))))


def _matched(shape: bytes, ends: list[int], *patterns: re.Pattern[bytes] | None) -> set[int]:
    """The indexes of the texts of a :func:`_joined_shape` where one of ``patterns`` matches:
    a shape a character each, a match's place names its text; the search goes on at the next
    text."""
    found: set[int] = set()
    for pattern in patterns:
        at = 0
        while pattern is not None and (m := pattern.search(shape, at)) is not None:
            i = bisect_right(ends, m.start())
            found.add(i)
            at = ends[i] if i < len(ends) else len(shape)
    return found


def _maybe_suspect(texts: Sequence[str]) -> set[int]:
    """The indexes of those of ``texts`` (past ASCII) that may be :func:`_suspect`, by one C
    pass over them all (:func:`_joined_shape`). The shapes of characters as the first bytes of
    their UTF-8 (``u``) find whatever the shapes read as ASCII find (a ``u`` stands for a
    letter and for a separator; a test checks it)."""
    shape, ends = _joined_shape(texts, _BYTES)
    # _U_RUN_RE finds every run _spaced_run does (and those two apart a tag's "<" and a space)
    return _matched(shape, ends, _DIGIT_RE, _U_RUN_RE, *_symbols(shape))


# _SYMBOL_RE's two branches, each starting with its byte (the search skips to it in C): the
# two at once looked at every byte of a text of many lines, as often one holding a "$"
_AT_RE = re.compile(rb"@(?<=[a0|]@)[0@|]?a")
_BAR_RE = re.compile(rb"\|(?<=[a0@]\|)a\|a\|a")


def _symbols(shape: bytes) -> tuple[re.Pattern[bytes] | None, ...]:
    """:data:`_SYMBOL_RE`'s branches whose symbol the shapes hold (most texts have none)."""
    return (_AT_RE if b"@" in shape else None, _BAR_RE if b"|" in shape else None)


ASCII_AT_ONCE = 8
"""ASCII texts as many as this or more are looked at in one pass, fewer each alone."""


def _ascii_suspects(texts: Sequence[str]) -> list[bool]:
    """``[_ascii_suspect(t) for t in texts]`` of ASCII texts, by one C pass over them all: a
    digit or a symbol between letters found is found; a run only where one may be is looked at
    alone (a call each cost a text of many short lines as much as its fold). A few texts are
    looked at each alone: joining them cost more."""
    if len(texts) < ASCII_AT_ONCE:
        return list(map(_ascii_suspect, texts))
    shape, ends = _joined_shape(texts, None)
    found = _matched(shape, ends, _DIGIT_RE, *_symbols(shape))
    return _found(texts, found, _matched(shape, ends, _RUN_RE) - found, _ascii_suspect)


def _wide_suspects(texts: Sequence[str]) -> list[bool]:
    """``[_suspect(t) for t in texts]`` of texts past ASCII, by one C pass over them all. Where
    none of their characters past ASCII is punctuation or a symbol (zero-width characters,
    letters), each is looked at as :func:`_suspect` looks at such a text, and what a pass finds
    is found but a run two spaces apart; else each text the pass shows may be is looked at
    alone (a text of marks of writing is looked at as ASCII)."""
    shape, ends = _joined_shape(texts, _BYTES)
    maybe = _matched(shape, ends, _DIGIT_RE, _U_RUN_RE, *_symbols(shape))
    if len(maybe) < LOOKED_ALONE or not _unmarked(" ".join(texts)):  # € is a mark too
        return _found(texts, set(), maybe, _suspect)
    found = _matched(shape, ends, _DIGIT_RE, _U_SINGLE_RUN_RE, *_symbols(shape))
    return _found(texts, found, maybe - found, _suspect)


LOOKED_ALONE = 16
"""Texts past ASCII the pass flags that are looked at alone with no more ado; more are told
apart in the pass where it can (:func:`_unmarked`)."""
_WIDE_RE = re.compile(r"[^\x00-\x7f]")


def _unmarked(text: str, most: int = 4) -> bool:
    """Whether no character of ``text`` past ASCII is punctuation or a symbol, told from its
    first ``most`` distinct ones (each search and removal a C pass); a text of more is taken
    for marked, and looked at as before (a set of a long text's characters cost more than the
    look it saves: a character object each)."""
    for _ in range(most):
        m = _WIDE_RE.search(text)
        if m is None:
            return True
        if _punctuation(m.group()):
            return False
        text = text.replace(m.group(), "")
    return _WIDE_RE.search(text) is None


def _found(
    texts: Sequence[str], found: set[int], maybe: set[int], alone: Callable[[str], bool]
) -> list[bool]:
    """Whether each of ``texts`` is suspect: those ``found`` are, those that ``maybe`` are
    looked at ``alone``, the rest are not."""
    out = [False] * len(texts)
    for i in found:
        out[i] = True
    for i in maybe:
        out[i] = alone(texts[i])
    return out


def _suspects(texts: Sequence[str]) -> list[bool]:
    """``[_suspect(t) for t in texts]``, the ASCII texts and those past ASCII each in one pass
    over them all (a call each cost the many short lines of a text twice their fold)."""
    if len(texts) < 2:
        return list(map(_suspect, texts))
    narrow = list(map(str.isascii, texts))
    if all(narrow):
        return _ascii_suspects(texts)
    if not any(narrow):
        return _wide_suspects(texts)
    out = [False] * len(texts)
    for wide, each in ((False, _ascii_suspects), (True, _wide_suspects)):
        at = [i for i, a in enumerate(narrow) if a != wide]
        for i, s in zip(at, each([texts[i] for i in at]), strict=True):
            out[i] = s
    return out


def plain(text: str) -> bool:
    """Whether an ASCII text certainly has nothing here to undo (nor an escape): no backslash
    or ``=``, and nowhere a digit between letters or a run of single letters. The test is
    :func:`_suspect`'s, written out: it runs on every text the form folds."""
    if "\\" in text or "=" in text:
        return False
    return not _ascii_suspect(text)


def _ascii_suspect(text: str) -> bool:
    """:func:`_suspect` of a text looked at as ASCII (each character past ASCII a ``?``)."""
    padded = f" {text} ".encode("ascii", "replace")
    shape = padded.translate(_SHAPES)
    return (
        _DIGIT_RE.search(shape) is not None
        or _spaced_run(shape, padded, None)
        or ((b"@" in shape or b"|" in shape) and _SYMBOL_RE.search(shape) is not None)
    )


def _spaced_run(shape: bytes, padded: bytes, deleted: bytes | None) -> bool:
    """Whether the shapes show four single letters one separator or two spaces apart: the
    shapes of :data:`_SHAPES` first (one search: most texts have none), then, where they show
    one two apart, the shapes that tell a space from a mark (``<a <a <a <a`` is no
    ``c  o  p  y``: its letters are no closer than a tag's)."""
    wide = deleted is not None
    if (_U_RUN_RE if wide else _RUN_RE).search(shape) is None:
        return False
    if (_U_SINGLE_RUN_RE if wide else _SINGLE_RUN_RE).search(shape) is not None:
        return True
    spaces = padded.translate(_SPACE_SHAPES, deleted or b"")
    return (_U_DOUBLE_RUN_RE if wide else _DOUBLE_RUN_RE).search(spaces) is not None


def _symbol(shape: bytes) -> bool:
    """Whether the shapes show a leetspeak symbol between letters (a search only where there
    is one at all: most texts have none)."""
    return (b"@" in shape or b"|" in shape) and _SYMBOL_RE.search(shape) is not None


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


# bits of a code point for the invisible-spaces rule (_gap_kinds)
_INVISIBLE, _BLANK, _SPACE, _ALPHA, _SPACED, _RUN_SPACE = 1, 2, 4, 8, 16, 32
_LINE_ENDS = "\n\r\x85\u2028\u2029"


def _gap_kind(c: str, invisible: re.Pattern[str]) -> int:
    """:func:`_gap_kinds` of one character."""
    kind = _INVISIBLE if invisible.match(c) else 0
    kind |= _BLANK if c in _BLANKS else 0
    if c.isspace():
        kind |= _SPACE | (0 if c in _LINE_ENDS else _RUN_SPACE)
    if c.isalpha():
        kind |= _ALPHA | (_SPACED if _spaced_script(c) else 0)
    return kind


@cache
def _gap_kinds() -> npt.NDArray[np.uint8]:
    """What the invisible-spaces rule asks of each BMP code point, as bits: invisible (in
    :func:`invisible_class`), a blank, a space (``\\s``), a space of a run of spaces on a line
    (not a line's end), a letter, a letter of a script written with spaces."""
    invisible = _invisible_re()[0]
    kinds = bytes(_gap_kind(chr(c), invisible) for c in range(0x10000))
    return np.frombuffer(kinds, dtype=np.uint8)


def _kinds_of(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint8]:
    """:func:`_gap_kinds` of a text's code points; past the BMP (never invisible nor a space),
    each distinct one looked at once."""
    kinds = _gap_kinds()[np.minimum(codes, 0xFFFF)]
    astral = np.flatnonzero(codes > 0xFFFF)
    if len(astral):
        distinct, where = np.unique(codes[astral], return_inverse=True)
        invisible = _invisible_re()[0]
        seen = [_gap_kind(chr(c), invisible) for c in distinct.tolist()]
        kinds[astral] = np.array(seen, dtype=np.uint8)[where]
    return kinds


def _counts(
    mask: npt.NDArray[np.bool_], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """How many of ``mask`` fall in each text (``starts``, ``ends`` into the joined text)."""
    total = np.zeros(len(mask) + 1, dtype=np.int64)
    np.cumsum(mask, out=total[1:])
    return total[ends] - total[starts]


def invisible_spaces(text: str) -> str:
    """Each run of invisible characters between two visible ones, neither a letter of a script
    written without spaces, as a space, in a text mostly of scripts written with spaces: the
    blanks where they outnumber the text's real spaces twice over (and are fewer than one per
    2.5 letters: one between every two letters is inside words); the zero-width ones where they
    do and the text has fewer than one real space per 20 letters, at least
    :data:`JOINER_LETTERS` letters, and about as many gaps as it would have words (one per 2.5
    to 12 letters). Elsewhere they stay, to be removed."""
    return invisible_spaces_each([text])[0]


# a few texts shorter than this in all are read a gap at a time (numpy's fixed cost, some 100
# us, was most of the fold of a short text with an emoji's zero-width joiners)
INVISIBLE_AT_ONCE_CHARS = 512
INVISIBLE_ALONE_TEXTS = 4


def invisible_spaces_each(texts: Sequence[str]) -> list[str]:
    """``[invisible_spaces(t) for t in texts]``: where the texts past ASCII hold two invisible
    characters or more in all, a few short ones each alone (:func:`_invisible_spaces_alone`),
    else all at once (:func:`_invisible_spaces_at_once`)."""
    anywhere = _invisible_re()[0]
    out = list(texts)
    todo = [i for i, t in enumerate(texts) if not t.isascii()]  # nothing of ASCII is invisible
    parts = [texts[i] for i in todo]
    joined = "\n".join(parts)
    m = anywhere.search(joined)
    if m is None or anywhere.search(joined, m.end()) is None:
        return out  # fewer than two invisible characters make fewer than two gaps
    if len(parts) <= INVISIBLE_ALONE_TEXTS and len(joined) < INVISIBLE_AT_ONCE_CHARS:
        read = list(map(_invisible_spaces_alone, parts))
    else:
        read = _invisible_spaces_at_once(parts, joined)
    for i, shown in zip(todo, read, strict=True):
        out[i] = shown
    return out


def _invisible_spaces_alone(text: str) -> str:
    """:func:`invisible_spaces` written a gap at a time."""
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
    out: list[str] = []
    done = 0
    for a, b in sorted(spans):
        out += (text[done:a], " ")
        done = b
    spaced = "".join(out) + text[done:]
    if blanks:  # the blanks stand for spaces: at a line's start too (an indent)
        spaced = spaced.translate(_BLANK_SPACES)
    return spaced


def _invisible_spaces_at_once(parts: list[str], joined: str) -> list[str]:
    """:func:`_invisible_spaces_alone` of each of ``parts`` (``joined``: them joined by
    newlines), read at once in numpy over their code points: a Python step per gap or per
    letter cost a text of zero-width characters three times news per KB, and a call per line
    a text of such lines six."""
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    starts = np.zeros(len(parts), dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    ends = starts + lengths
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    kind = _kinds_of(codes)
    n = len(codes)
    inv = (kind & _INVISIBLE) != 0
    seen = (kind & (_INVISIBLE | _SPACE)) == 0
    edge = np.diff(inv.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    first, last = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)  # runs [first, last)
    before, after = np.maximum(first - 1, 0), np.minimum(last, n - 1)
    unspaced = (kind & (_ALPHA | _SPACED)) == _ALPHA  # a letter of a script without spaces
    gap = (first > 0) & (last < n) & seen[before] & seen[after]
    gap &= ~unspaced[before] & ~unspaced[after]
    first, last = first[gap], last[gap]
    blanks_at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum((kind & _BLANK) != 0, out=blanks_at[1:])
    blank = blanks_at[last] > blanks_at[first]  # a run holding a blank
    which = np.searchsorted(starts, first, side="right") - 1  # the text of each run
    n_blank = np.bincount(which[blank], minlength=len(parts))
    n_joiner = np.bincount(which[~blank], minlength=len(parts))
    gaps = n_blank + n_joiner
    run_space = (kind & _RUN_SPACE) != 0
    space_starts = run_space & ~np.concatenate(([False], run_space[:-1]))
    spaces = _counts(space_starts, starts, ends)
    alpha = _counts((kind & _ALPHA) != 0, starts, ends)
    letters = _counts((kind & _SPACED) != 0, starts, ends)
    spaced = (gaps >= 2) & (2 * letters >= alpha)  # else mostly Chinese, Japanese or Thai
    blanks = spaced & (n_blank >= 2) & (n_blank > 2 * spaces) & (n_blank <= letters / 2.5)
    joiners = spaced & (n_joiner > 2 * spaces) & (20 * spaces < letters)
    joiners &= (letters >= JOINER_LETTERS) & (letters / 12 <= gaps) & (gaps <= letters / 2.5)
    if not (blanks.any() or joiners.any()):
        return parts
    read = np.where(blank, blanks[which], joiners[which])
    first, last = first[read], last[read]
    codes = codes.copy()
    if blanks.any():  # the blanks stand for spaces: at a line's start too (an indent)
        owner = np.repeat(np.arange(len(parts)), lengths + 1)[:n]  # each character's text
        codes[((kind & _BLANK) != 0) & blanks[owner]] = ord(" ")
    codes[first] = ord(" ")
    drop = np.zeros(n + 1, dtype=np.int64)  # +1 past each run's first character, -1 at its end
    drop[first + 1] += 1
    drop[last] -= 1
    keep = np.cumsum(drop[:n]) == 0
    shown = codes[keep].tobytes().decode("utf-32-le", "surrogatepass")
    kept = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    return [shown[a:b] for a, b in zip(kept[starts].tolist(), kept[ends].tolist(), strict=True)]


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
    return re.compile(
        rf"(?<!{inside}){letter}(?:{sep}{letter})+(?:(?!\.){sep}(?=[^\w\s]))?(?!{inside})"
    )


@cache
def _in_word() -> tuple[str, str]:
    """What continues a word (a letter, a digit, a mark, an invisible character: ``w\u200bo``
    is one word, neither letter single; not ``_``, a separator), and a letter with its
    marks."""
    return rf"(?:[^\W_]|[{_MARKS}{invisible_class(astral=True)}])", rf"{_LETTER}[{_MARKS}]*"


@cache
def _spaced_re(whole: bool = False, ascii: bool = False) -> re.Pattern[str]:
    """Runs of single letters (:func:`_in_word`) with one separator between them: two spaces,
    or any one character that is a space, punctuation or a symbol (not a line's end), the
    same all along the run; one more after the last letter is taken too before punctuation
    (``t·h·e·,``), but a point (``U.K.``: see :func:`_initialism`). The separator is the
    first group; ``whole``: the run is, and the separator the second (a split gives the text
    between runs, each run and its separator). ``ascii``: the same for an ASCII text, without
    the classes of marks and invisible characters (none is ASCII), which cost half the search
    where a letter starts most attempts (``<a x`` repeated)."""
    inside, letter = ("[A-Za-z0-9]", "[A-Za-z]") if ascii else _in_word()
    others = "" if ascii else f"{_MARKS}{invisible_class(astral=True)}"
    sep = rf"  |[^\w\n\r\x0b\x0c\x85\u2028\u2029{others}]|_"
    back = r"\2" if whole else r"\1"
    run = (
        rf"(?<!{inside}){letter}({sep})(?:{letter}{back})*{letter}"
        rf"(?:(?!\.){back}(?=[^\w\s]))?(?!{inside})"
    )
    return re.compile(f"({run})" if whole else run)


def join_spaced(text: str) -> str:
    """Runs of single letters with one separator between them, joined into words: those of the
    separator whose runs hold the most letters (``c.o.p.y t.h.e``: the dots, not the space
    between ``y`` and ``t``) when they hold :data:`SPACED_SHARE` of the text's letters or more;
    else those of :data:`LONG_RUN` letters or more; none when all runs hold fewer than
    :data:`SPACED_LETTERS` letters.

    The runs are found by one split (no object a run: a text of short runs, ``a-b`` or ``<a x``
    repeated, is one pass in C); a text with runs a point or a leetspeak symbol apart, or whose
    runs are not all joined, is read run by run (:func:`_join_runs`)."""
    parts = _spaced_re(whole=True, ascii=text.isascii()).split(text)
    if len(parts) == 1:
        return text
    runs, seps = parts[1::3], parts[2::3]
    if not _SYMBOL_SET.isdisjoint(seps):  # a leetspeak symbol may write a word's letters
        return _join_runs(text)
    held = _held(runs, seps)
    sep = max(held, key=lambda k: held[k])
    if sep != "." and not sep.isspace() and _spaced_chunks(text, sep):
        # then the runs of letters left in other words (``C-T-S/B-B-L``)
        return _without(sep, _unspaced(text, sep))
    if sum(held.values()) < SPACED_LETTERS:
        return text
    if held[sep] < SPACED_SHARE * sum(map(str.isalpha, text)):
        return _join_runs(text)  # only long runs and those beside them
    if len(held) > 1:
        return _join_runs(text) if sep == "." else _without(sep, text)
    # every run is of ``sep``, so those of _spaced_by(sep) are these: each joined, but an
    # initialism (a point after its last letter too, two capitals at most: U.K.)
    joined = _removed(sep, runs)
    if sep == ".":
        for i in [i for i, after in enumerate(parts[3::3]) if after.startswith(".")]:
            if runs[i].isupper() and _run_letters(runs[i], sep) <= 2:
                joined[i] = runs[i]
    parts[1::3] = joined
    parts[2::3] = [""] * len(seps)
    return "".join(parts)


def _join_runs(text: str) -> str:
    """:func:`join_spaced` run by run: the runs a leetspeak symbol apart that write the
    letters of a word of leetspeak left out (:func:`_glued`), an initialism kept."""
    runs = [
        m for m in _spaced_re().finditer(text) if not _glued(text, m.start(), m.end(), m.group(1))
    ]
    if not runs:
        return text
    held = _held(list(map(_WHOLE, runs)), list(map(_SEPARATOR, runs)))
    sep = max(held, key=lambda k: held[k])
    if sep != "." and not sep.isspace() and _spaced_chunks(text, sep):
        return _without(sep, _unspaced(text, sep))
    if sum(held.values()) < SPACED_LETTERS:
        return text
    letters = sum(map(str.isalpha, text))
    if held[sep] >= SPACED_SHARE * letters:
        return _spaced_by(sep).sub(
            lambda m: (
                m.group()
                if _initialism(text, m, sep, 2) or _glued(text, m.start(), m.end(), sep)
                else m.group().replace(sep, "")
            ),
            text,
        )
    joined = [_run_length(m) >= LONG_RUN and not _initialism(text, m, m.group(1)) for m in runs]
    for order in (range(1, len(runs)), range(len(runs) - 2, -1, -1)):
        for k in order:  # a short run beside a joined one is a word of the same disguise
            near = k - 1 if order.step > 0 else k + 1
            first, then = runs[min(k, near)], runs[max(k, near)]
            if not joined[k] and joined[near] and _beside(text, first, then):
                joined[k] = True
    out: list[str] = []
    done = 0
    for m, join in zip(runs, joined, strict=True):
        if join:
            out += (text[done : m.start()], m.group().replace(m.group(1), ""))
            done = m.end()
    out.append(text[done:])
    return "".join(out)


_SEPARATOR = methodcaller("group", 1)
_WHOLE = methodcaller("group")
_SYMBOL_SET = frozenset(_SYMBOLS)


def _held(runs: list[str], seps: list[str]) -> dict[str, int]:
    """The letters the runs of each separator hold (a run's length over a letter and a
    separator's), summed in C where the runs share one separator (most texts, and a text of
    short runs built to cost a call each)."""
    if len(kinds := set(seps)) == 1:
        k = len(sep := seps[0])
        return {sep: sum(map(floordiv, map(add, map(len, runs), repeat(k)), repeat(k + 1)))}
    held = dict.fromkeys(kinds, 0)
    for sep, n in zip(seps, map(len, runs), strict=True):
        held[sep] += (n + len(sep)) // (1 + len(sep))
    return held


@cache
def _spaced_split(separator: str) -> re.Pattern[str]:
    """:func:`_spaced_by` as one group: a split gives the text between runs and the runs."""
    return re.compile(f"({_spaced_by(separator).pattern})")


def _without(sep: str, text: str) -> str:
    """Every run of :func:`_spaced_by` ``sep`` joined (its separators removed), by one split
    and one replace over the runs together (a call a run cost a text of short runs, ``a-b``
    repeated, several times a story's fold)."""
    parts = _spaced_split(sep).split(text)
    if len(parts) > 1:
        parts[1::2] = _removed(sep, parts[1::2])
    return "".join(parts)


def _removed(sep: str, runs: list[str]) -> list[str]:
    """``[r.replace(sep, "") for r in runs]``, by one replace over them joined by NUL (which
    no run holds, but a run of NUL apart: those one by one)."""
    joined = "\0".join(runs)
    if sep == "\0" or joined.count("\0") >= len(runs):
        return [r.replace(sep, "") for r in runs]
    return joined.replace(sep, "").split("\0")


SPACED_CHUNK_LETTERS = 5
"""A mark or a symbol that spaces out words holding this many letters or more, and stands
nowhere else in the text (:func:`_spaced_chunks`), spaces out the text."""


@cache
def _chunk_re(sep: str) -> re.Pattern[str]:
    """A word (between spaces) spaced out by ``sep``: single characters ``sep`` apart (three
    where the word had its own, ``a/n/d///o/r``), one more at an end where a line broke it,
    punctuation before and after (``<O-B-O-D>``)."""
    s = re.escape(sep)
    edge = rf"[^\w\s{s}]*"
    return re.compile(rf"{edge}{s}?[^\s{s}](?:(?:{s}|{s}{s}{s})[^\s{s}])*{s}?{edge}")


def _spaced_chunks(text: str, sep: str) -> bool:
    """Whether the text uses ``sep`` (a mark or a symbol, not a point) only to space out
    words, its digits and punctuation too (``E_M_H_A_R_T``, ``1_._5``): nine in ten of the
    words holding it are so written, and they hold :data:`SPACED_CHUNK_LETTERS` letters or
    more, three in one word at least. A real text writes a dash or a slash between words as
    well (``and/or``, ``well-known``, ``747-400``) and few letters apart (``a/b``, ``b/n``,
    ``p/n``; ``1-2-3``, ``6-3 6-4`` have none)."""
    chunks = [c for c in text.split() if sep in c]
    if max(map(methodcaller("count", sep), chunks), default=0) < 2:
        return False  # no word has three characters spaced out (a-b a-b: a call each to tell)
    spaced = list(filter(_chunk_re(sep).fullmatch, chunks))
    if 10 * len(spaced) < 9 * len(chunks):
        return False
    total = most = 0
    for n in map(sum, map(partial(map, str.isalpha), spaced)):
        total, most = total + n, max(most, n)
        if total >= SPACED_CHUNK_LETTERS and most >= 3:  # not only pairs (b/n, p/n, 3/5)
            return True
    return False


# a letter and a digit (``M-1``, ``B/2``): a code as often as a word spaced out
_CODE_RE = re.compile(r"\W*(?:[^\W\d_]\d|\d[^\W\d_])\W*")


def _unspaced(text: str, sep: str) -> str:
    """A text spaced out with a mark or a symbol (``c·o·p·y``, ``c_o_p_y``): each word so
    written (:func:`_chunk_re`) joined, three ``sep`` in a row kept as the word's own one;
    the other words kept as they are (``747-400``)."""
    chunk, triple = _chunk_re(sep), sep * 3

    def join(m: re.Match[str]) -> str:
        word = m.group()
        if not chunk.fullmatch(word) or _CODE_RE.fullmatch(word.replace(sep, "")):
            return word
        return sep.join(part.replace(sep, "") for part in word.split(triple))

    return re.sub(r"\S+", join, text)


def _glued(text: str, start: int, end: int, sep: str) -> bool:
    """Whether a run of single letters a leetspeak symbol ``sep`` apart goes on, ``sep`` and
    then a word, at an end: the letters of a word of leetspeak (``m!n!m!z!ng``), not spaced
    out."""
    if sep not in _SYMBOLS:  # a symbol that writes a letter in leetspeak
        return False
    n = len(sep)
    before = text[max(0, start - n - 1) : start]
    after = text[end : end + n + 1]
    return (before[-n:] == sep and before[:1].isalnum() and len(before) == n + 1) or (
        after[:n] == sep and after[n:].isalnum()
    )


def _run_length(m: re.Match[str], sep: str | None = None) -> int:
    """The letters of a run of spaced letters (``sep`` apart)."""
    return _run_letters(m.group(), m.group(1) if sep is None else sep)


def _run_letters(run: str, sep: str) -> int:
    return (len(run) + len(sep)) // (1 + len(sep))


def _initialism(text: str, m: re.Match[str], sep: str, letters: int = 0) -> bool:
    """Whether a run ``sep`` apart is letters each followed by a point, the last too
    (``C.O.M.B.``): an initialism, unless a word spaced out beside it ends a sentence
    (:func:`_beside`). With ``letters``: capitals, at most that many (``U.K.``; ``C.o.`` and
    ``i.t.`` are words spaced out, the text's case still as written)."""
    return (
        sep == "."
        and text[m.end() : m.end() + 1] == "."
        and (not letters or (_run_length(m, sep) <= letters and m.group().isupper()))
    )


def _beside(text: str, a: re.Match[str], b: re.Match[str]) -> bool:
    """Whether run ``b`` is the word after run ``a`` (of the same separator): between them
    only spaces and punctuation, three characters at most."""
    gap = text[a.end() : b.start()]
    return a.group(1) == b.group(1) and len(gap) <= 3 and not any(c.isalnum() for c in gap)


# an ordinal, a time of day or a decade as written (``21st``, ``4th``, ``10am``, ``1960s``): not
# leetspeak
_ORDINAL_RE = re.compile(
    r"(?i:[0-9]*(?:1[0-9]th|1st|2nd|3rd|[04-9]th)|[0-9]{1,2}[ap]m|[0-9]+0s)", re.ASCII
)


def _mixed(word: str) -> bool:
    """Whether ``word`` has a letter, and a digit or a leetspeak symbol, and only digits a
    leetspeak letter, and is no ordinal (``4th``)."""
    return (
        any(c.isdigit() or c in _SYMBOLS for c in word)
        and not _ORDINAL_RE.fullmatch(word)
        and any(c.isalpha() for c in word)
        and all(c in _LEET for c in word if c.isdigit())
    )


def _letters(word: str) -> int:
    return sum(1 for c in word if c.isalpha())


def _strict(word: str) -> bool:
    """Whether ``word`` reads as leetspeak in any text: three letters or more, a digit between
    two of them, and two digits or more, each alone (``DC10s`` is a name; a word with one
    digit is as often a typing slip or a code, ``othe4r``, ``th3pygks``)."""
    if not _mixed(word) or not _FLANKED_RE.search(word) or not _paired(word):
        return False
    runs = _DIGITS_RE.findall(word)
    return len(runs) >= 2 and len(word) - len(runs) >= 3 and all(len(r) == 1 for r in runs)


def _address(match: re.Match[str]) -> bool:
    """Whether a word is the name and host of an e-mail address (``a@b`` before ``.com``), or
    a formula or a call whose bracket closes right after it (``PROB(WIN|RAIN)``, ``f(x``)."""
    word = match.group()
    if "(" in word and _CLOSE_RE.match(match.string, match.end()) is not None:
        return True
    return "@" in word and _DOMAIN_RE.match(match.string, match.end()) is not None


def _strict_word(match: re.Match[str]) -> str:
    word = match.group()
    return _as_letters(word) if _strict(word) and not _address(match) else word


def _as_letters(word: str) -> str:
    return _DIGITS_RE.sub(_leet_digits, word)


def _leet_digits(match: re.Match[str]) -> str:
    digits = match.group()
    return "ll" if digits == "11" else "".join(_LEET_ALL.get(d, d) for d in digits)


LEET_SHARE = 0.1
"""The share of a text's words (those with a letter) written in leetspeak past which every
word of letters and leetspeak digits reads as letters."""
# an ordinal whose suffix is written in leetspeak (``47h`` 4th, ``1s7`` 1st): a number
_LEET_ORDINAL_RE = re.compile(r"([0-9]+)((?i:[s5][t7]|[t7]h|nd|rd))")


def _leet_ordinal(word: str) -> str | None:
    """``word`` as the ordinal it writes with its suffix in leetspeak (``47h``: ``4th``; at
    least one letter of the suffix as written), or None."""
    m = _LEET_ORDINAL_RE.fullmatch(word)
    if m is None or m.group(2).isdigit():
        return None
    ordinal = m.group(1) + _as_letters(m.group(2))
    return ordinal if _ORDINAL_RE.fullmatch(ordinal) else None


def _loose_word(match: re.Match[str]) -> str:
    """A word of a text of leetspeak, read: an ordinal keeps its number, a number standing
    alone stays, any other word mixing letters and leetspeak digits reads as letters."""
    word = match.group()
    ordinal = _leet_ordinal(word)
    if ordinal is not None:
        return ordinal
    if _address(match):
        return word
    return _as_letters(word) if _mixed(word) or _all_symbols(word) else word


def _all_symbols(word: str) -> bool:
    """Whether ``word`` is a word of leetspeak without a letter left (``3@$+`` east): three
    characters or more, a symbol among them that no number writes (not ``$``, ``+``)."""
    return (
        len(word) >= 3
        and not any(c.isalpha() for c in word)
        and any(c in _SYMBOLS and c not in "$+(" for c in word)
        and all(c in _LEET_ALL for c in word)
    )


def _leet_share(text: str, share: float = LEET_SHARE, least: int = 1) -> bool:
    """Whether ``share`` of the text's words with a letter, and ``least`` of them, have two
    letters or more and a leetspeak digit between letters or before two, one of them at least
    three letters or five characters long (``H5N1 and B2B`` has none such: codes are short)."""
    worded = 0
    leet: list[str] = []
    for m in _ALNUM_RE.finditer(text):
        w = m.group()
        if w.isalpha():  # most words: looked at in C
            worded += 1
        elif any(c.isalpha() for c in w) and not _address(m):
            worded += 1
            if _mixed(w) and _letters(w) >= 2 and _counted(w):
                leet.append(w)
    return (
        len(leet) >= least
        and len(leet) >= share * worded
        and any(_letters(w) >= 3 or len(w) >= 5 for w in leet)
    )


_PAIR_RE = re.compile(r"[A-Za-z]{2}")


def _paired(word: str) -> bool:
    """Whether a word has a digit, or two letters side by side: symbols between single letters
    are a formula or a list (``x+y``, ``a|b|c``)."""
    return any(c.isdigit() for c in word) or _PAIR_RE.search(word) is not None


def _counted(word: str) -> bool:
    """Whether a word mixing letters and leetspeak counts towards a text of leetspeak: a digit
    or symbol between letters, a digit before two, or a symbol first or last in a word of three
    letters or more (:data:`_EDGE_RE`); a word with symbols and no digit only with two
    letters side by side."""
    if not _paired(word):
        return False
    return _INSIDE_RE.search(word) is not None or (
        _letters(word) >= 3 and _EDGE_RE.search(word) is not None
    )


# a sentence's end (a point, a question or exclamation mark before a space) or a paragraph's
# (a wire story's lines are shorter than its sentences)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\Z")
SENTENCE_SHARE = 0.3
"""The share of a sentence's words (with a letter) written in leetspeak past which the
sentence is read as leetspeak in a text that has not :data:`LEET_SHARE` (a sentence of codes,
``A1C``, ``B767``, ``Q4A``, has fewer)."""
SENTENCE_LEET = 3
"""A sentence is read as leetspeak only with this many words so written or more."""


def read_leet(text: str) -> str:
    """Words written with digits for letters (see the module doc), read as letters. In a text
    where :data:`LEET_SHARE` of the words with a letter or more have two letters or more and a
    leetspeak digit between letters or before two (``r4153d``, ``m4rk375``, ``4nd``,
    ``70nn35``), every word that mixes letters and leetspeak digits is read so
    (:func:`_loose_word`), but for an ordinal (``47h``); so in each sentence that has
    :data:`SENTENCE_SHARE` and :data:`SENTENCE_LEET` such words, where the text has not (a
    story with one paragraph written so). A number standing alone stays a number in every
    text: ``50`` may be ``so`` or fifty, and a reader tells them apart by what the words mean,
    which a form cannot; the share counts words with a letter, so that a table of numbers with
    leetspeak labels is read too."""
    if not _INSIDE_RE.search(text):
        return text
    if _leet_share(text):
        return _ALNUM_RE.sub(_loose_word, text)
    out: list[str] = []
    done = 0
    for m in _SENTENCE_RE.finditer(text):
        sentence = text[done : m.start()]
        if _INSIDE_RE.search(sentence) is None:  # no word of it is read (most sentences)
            out += (sentence, m.group())
        else:
            loose = _leet_share(sentence, SENTENCE_SHARE, SENTENCE_LEET)
            out += (_ALNUM_RE.sub(_loose_word if loose else _strict_word, sentence), m.group())
        done = m.end()
    return "".join(out)


def unhide(text: str) -> str:
    """The first three undone on a decoded text (see the module doc), in order: overrides,
    invisible spaces, spaced letters (while a thin space still differs from a space)."""
    if not text.isascii():
        text = invisible_spaces(reverse_overrides(text))
    return join_spaced(text) if _suspect(text) else text


def unhide_each(texts: Sequence[str]) -> list[str]:
    """``[unhide(t) for t in texts]``, the disguises looked for in all of them at once."""
    if _RLO in "".join(texts):  # one search, not one a line (most texts have no override)
        texts = [t if t.isascii() else reverse_overrides(t) for t in texts]
    shown = invisible_spaces_each(texts)
    return [join_spaced(t) if s else t for t, s in zip(shown, _suspects(shown), strict=True)]


def unhide_folded_each(texts: Sequence[str]) -> list[str]:
    """``[unhide_folded(t) for t in texts]``, looked for in all of them at once."""
    return [
        read_leet(join_spaced(t)) if s else t for t, s in zip(texts, _suspects(texts), strict=True)
    ]


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
    "SENTENCE_LEET",
    "SENTENCE_SHARE",
    "SPACED_LETTERS",
    "SPACED_SHARE",
    "invisible_class",
    "invisible_spaces",
    "invisible_spaces_each",
    "join_spaced",
    "plain",
    "read_leet",
    "reverse_overrides",
    "unhide",
    "unhide_each",
    "unhide_folded",
    "unhide_folded_each",
]
