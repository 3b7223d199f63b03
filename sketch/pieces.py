"""Where a line breaks into passages: the pieces of one line that boilerplate is learned at.

A template repeats at the size a site's template repeats, not always at whole lines: a footer
that text extraction delivers as one paragraph, a box of headlines on one line. A line breaks
after a sentence's end and around the separators extraction leaves between a box's items or a
footer's links (``|``, ``·``, dashes, a label's colon), at the commas of a list after a label
("Most read: A, B, C"), and a list line longer than a headline into its runs of four words.
:func:`passage_spans` gives the spans of a line's passages, the first and last
:data:`PIECES_READ` of them (:func:`neardup.sketch.lines.passages_of` keys them).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from itertools import islice

_WORD_RE = re.compile(r"\w")

# Of each line boilerplate is read from, the first and last PIECES_READ passages, found in its
# first and last LINE_CHARS_READ characters (64 pieces of 128 characters): a whole story
# delivered as one line is read no further.
PIECES_READ = 32
LINE_CHARS_READ = 8192


def passage_spans(line: str) -> list[tuple[int, int]]:
    """The spans of ``line``'s passages when it breaks into more than one: its sentences, and
    a box's or a footer's items (:data:`_BREAK_RE`; a list's items after a label,
    :func:`_items_at`), at most the first and last :data:`PIECES_READ`
    (:func:`_line_pieces`); ``[]`` for a line of prose that does not break."""
    at = _items_at(line)  # a list's items start there (None: prose)
    if at is None and not _BREAK_RE.search(line):
        return []
    return _line_pieces(line, at)


def _ends(items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The first and last :data:`PIECES_READ` of a line's pieces."""
    if len(items) <= 2 * PIECES_READ:
        return items
    return items[:PIECES_READ] + items[-PIECES_READ:]


# where a line breaks into passages: after a sentence's end, and around the separators text
# extraction leaves between a box's items or a footer's links (|, ·, •, /, dashes, ;, a label's
# colon). A footer delivered as one paragraph, a box on one line, are passages of one line.
_BREAK_RE = re.compile(
    r"(?<=[.!?])[\"')\]\u201d\u2019]?\s+|(?<=[\u3002\uff01\uff1f])\s*"
    r"|\s+(?:[|\u00b7\u2022/]|--?|[\u2013\u2014])\s+|(?<=[:;])\s+"
)


_LEAD_MARKER_RE = re.compile(r"\s*(?:\d{1,3}|[A-Za-z])[.)]\s")
# a box's label: a few words and a colon opening the line ("Most read:", "Trending now:")
_LABEL_RE = re.compile(r"\s*[^\W\d_][^:.!?\n]{0,40}?:\s+")
_COMMA_RE = re.compile(r",\s+")
_LABEL_WORDS = 4
_LIST_COMMAS = 2


_GRAM = 4  # words in each run a list line longer than a headline is read by
_HEADLINE_WORDS = 16
_TOKEN_RE = re.compile(r"\S+")


_SENTENCE_END = ".!?\"')]\u201d\u2019\u3002\uff01\uff1f"


def _items_at(line: str) -> int | None:
    """Where a list's items start in ``line``, or None if it reads as prose: after a label of
    at most four words and a colon ("Most read: ..."), or at the start of a line longer than a
    headline that ends no sentence (a box that text extraction joined into one line: its
    last item is a headline, with no full stop). A story's paragraph opens with such a label
    rarely, and ends a sentence."""
    label = _LABEL_RE.match(line)
    if label and len(label.group().split()) <= _LABEL_WORDS:
        return label.end()
    tail = line.rstrip()
    if tail and tail[-1] not in _SENTENCE_END and _long(tail):
        return 0
    return None


def _long(text: str) -> bool:
    """More words than a headline has."""
    return len(text.split(None, _HEADLINE_WORDS)) > _HEADLINE_WORDS


def _with_commas(line: str, at: int, breaks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``breaks`` (spans of ``line``), and the commas after ``at`` too when there are at least
    two: a list's items joined with commas ("Most read: A, B, C"). Its items are learned as a
    box's are; a headline that holds a comma is two pieces, each of which recurs as the
    headline does."""
    commas = [m.span() for m in _COMMA_RE.finditer(line, at)]
    if len(commas) < _LIST_COMMAS:
        return breaks
    merged: list[tuple[int, int]] = []
    for a, b in sorted(breaks + commas):
        if merged and a < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _with_grams(line: str, at: int, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``pieces`` (spans of ``line``), and the runs of four words after ``at`` when the list
    there does not break into items of a headline's size: a box whose items text extraction
    joined with spaces alone ("Most read: A B C") has no separator to break at, and its items
    rotate, but every run of words inside an item, or across two items that stand next to
    each other, recurs as the item does. What is left out of such a line is its learned
    runs; once they are more than half of it, the line goes (:func:`without`).

    Of a line's runs only the first and last :data:`PIECES_READ` can be read (:func:`_ends`),
    so only those are found: a line of a hundred thousand words cost a run each."""
    after = [(a, b) for a, b in pieces if a >= at] or [(at, len(line))]
    if not any(_long(line[a:b]) for a, b in after):
        return pieces  # items of a headline's size: broken at their separators
    # a sentence's end ("U.S.") may break the run: every piece alike
    first = list(islice(_runs(line, after), 2 * PIECES_READ + 1))
    if len(first) <= 2 * PIECES_READ:
        grams = first  # all of them
    else:
        grams = first[:PIECES_READ] + _last_runs(line, after, PIECES_READ)
    return sorted(set(pieces) | set(grams), key=lambda s: (s[0], -s[1]))


def _runs(line: str, spans: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The runs of :data:`_GRAM` words inside each of ``spans``, in order."""
    for a, b in spans:
        words: deque[tuple[int, int]] = deque(maxlen=_GRAM)
        for m in _TOKEN_RE.finditer(line, a, b):
            words.append(m.span())
            if len(words) == _GRAM:
                yield words[0][0], words[-1][1]


def _last_runs(line: str, spans: list[tuple[int, int]], k: int) -> list[tuple[int, int]]:
    """The last ``k`` runs of :func:`_runs`, found from the ends of the spans: words are read
    from a window before a span's end, doubled until it holds enough whole words."""
    out: list[tuple[int, int]] = []
    for a, b in reversed(spans):
        need, width = k - len(out) + _GRAM - 1, 64
        while True:
            lo = max(a, b - width)
            words = [m.span() for m in _TOKEN_RE.finditer(line, lo, b)]
            if words and lo > a and not line[lo - 1].isspace():
                words = words[1:]  # the window began inside this word
            if len(words) >= need or lo == a:
                break
            width *= 2
        runs = [(words[i][0], words[i + _GRAM - 1][1]) for i in range(len(words) - _GRAM + 1)]
        out = runs[-(k - len(out)) :] + out if runs else out
        if len(out) >= k:
            break
    return out


def _line_pieces(line: str, at: int | None) -> list[tuple[int, int]]:
    """The first and last :data:`PIECES_READ` pieces of a line (:func:`_pieces`), read from
    its first and last :data:`LINE_CHARS_READ` characters, each cut at a space: a story
    delivered as one line of a megabyte broke into a piece per sentence, all but 64 of them
    thrown away."""
    if len(line) <= 2 * LINE_CHARS_READ:
        return _ends(_pieces(line, at))
    cut = line.rfind(" ", 0, LINE_CHARS_READ)
    cut = cut if cut > 0 else LINE_CHARS_READ
    rest = line.find(" ", len(line) - LINE_CHARS_READ)
    rest = rest if rest >= 0 else len(line) - LINE_CHARS_READ
    head = _pieces(line[:cut], at if at is None or at < cut else None)[:PIECES_READ]
    tail = _pieces(line[rest:], None if at is None else 0)[-PIECES_READ:]
    return head + [(rest + a, rest + b) for a, b in tail]


def _pieces(line: str, at: int | None) -> list[tuple[int, int]]:
    """The spans of ``line``'s passages: between its breaks (a list's commas too, when its
    items start at ``at``), and the runs of words of a list line (:func:`_with_grams`)."""
    # a list number ("3. ", "a) ") opens an item: no break after it
    lead = _LEAD_MARKER_RE.match(line)
    skip = lead.end() if lead else 0
    breaks = [m.span() for m in _BREAK_RE.finditer(line) if m.start() >= skip]
    if at is not None:
        breaks = _with_commas(line, at, breaks)
    cuts = [0, *(x for span in breaks for x in span), len(line)]
    word = _WORD_RE.search
    pieces = [
        (a, b)
        for a, b in zip(cuts[0::2], cuts[1::2], strict=True)
        if (a, b) != (0, len(line)) and word(line, a, b)  # not the line itself
    ]
    return _with_grams(line, at, pieces) if at is not None else pieces


__all__ = ["LINE_CHARS_READ", "PIECES_READ", "passage_spans"]
