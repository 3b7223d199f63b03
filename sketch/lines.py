"""A text's lines as fingerprints, for learning what a source repeats on every page.

Boilerplate is the text a source prints around every story: navigation, footers, legal lines,
"most read" boxes. It repeats *verbatim, line by line*, across that source's documents, while a
story's lines do not, so web-corpus pipelines find it by counting lines. A line here is what lies
between two newlines; its fingerprint is a 64-bit MurmurHash3 of its normalised text (NFKC,
casefold, whitespace folded, a leading list number such as ``3.`` dropped: a "most read" box
numbers its headlines as it likes), keyed by the source so that two sites never share counts.
Lines without a word character (rules, blank lines) are not lines. A line that breaks into
passages (its sentences, a box's items: :mod:`neardup.sketch.pieces`) is keyed as its passages
too (:func:`passages_of`).

Pure: the index keeps the counts; :func:`without` rebuilds the text from the lines it keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, pairwise

import mmh3

from neardup.sketch.features import DEFAULT_SEED, normalize, normalize_each, token_counts, tokenize
from neardup.sketch.pieces import LINE_CHARS_READ, passage_spans

_MARKER_RE = re.compile(r"^\W*(?:\d{1,3}|[a-z])[.)]\s+")  # "1. ", "2) ", "a) ": list numbering
_WORD_RE = re.compile(r"\w")

__all__ = [
    "Lines",
    "anchors",
    "between",
    "inside",
    "lines_of",
    "passages_of",
    "source_key",
    "without",
]


@dataclass(frozen=True, slots=True)
class Lines:
    """The lines of a text: character spans (``[start, end)`` in the text) and their 16-byte
    keys (source key, then the line's fingerprint), in order; a repeated line once per time.
    ``lines``: the span of the line each one lies in (:func:`passages_of` lists passages
    inside lines too; for a whole line it is its own span; empty: every one is a line)."""

    spans: tuple[tuple[int, int], ...]
    keys: tuple[bytes, ...]
    lines: tuple[tuple[int, int], ...] = ()

    def line_of(self, i: int) -> tuple[int, int]:
        return self.lines[i] if self.lines else self.spans[i]

    def is_line(self, i: int) -> bool:
        return not self.lines or self.lines[i] == self.spans[i]

    def __len__(self) -> int:
        return len(self.keys)


def source_key(source: str, seed: int = DEFAULT_SEED) -> bytes:
    """8 bytes naming a source (a host, a feed, ``""`` for the namespace as a whole)."""
    return mmh3.hash64(source.encode("utf-8"), seed, signed=False)[0].to_bytes(8, "big")


# A text's template is at its head and its foot: boilerplate is read from its first and last
# LINES_READ lines, and from the first and last pieces.PIECES_READ passages of each of those
# lines. A text of a hundred thousand short lines costs what a page does, and cannot fill a
# source's bounded line counts (and push out what they learned) in one document.
LINES_READ = 512
# A line of more characters than this is never a line when lines have at most max_tokens
# tokens (a template's line is a headline, a link, a box of them: some hundred characters),
# only its passages are, read from its ends: keying it whole folded all of it, a story sent as
# one line of a megabyte folded a second time to learn it had too many words.
LINE_KEY_CHARS = 2 * LINE_CHARS_READ


def _read(lines: list[str]) -> list[tuple[int, str]]:
    """``(start, line)`` of the lines boilerplate is read from (see :data:`LINES_READ`)."""
    out, pos = [], 0
    if len(lines) <= 2 * LINES_READ:
        for line in lines:
            out.append((pos, line))
            pos += len(line) + 1
        return out
    for line in lines[:LINES_READ]:
        out.append((pos, line))
        pos += len(line) + 1
    tail = len(lines) - LINES_READ
    pos += sum(map(len, lines[LINES_READ:tail])) + tail - LINES_READ
    for line in lines[tail:]:
        out.append((pos, line))
        pos += len(line) + 1
    return out


def lines_of(
    text: str, source: str, seed: int = DEFAULT_SEED, *, min_tokens: int = 1, max_tokens: int = 0
) -> Lines:
    """Every line of ``text`` that has a word character and ``min_tokens`` to ``max_tokens``
    tokens (0: no upper bound), keyed under ``source``. Tokens are the words between spaces;
    a line with CJK characters counts each of them as one
    (:func:`neardup.sketch.features.tokenize`), and a line of more than ``max_tokens`` words is long
    whatever its script. Of a long text, the lines at its head and foot (:data:`LINES_READ`);
    with ``max_tokens``, none of more than :data:`LINE_KEY_CHARS` characters."""
    head = source_key(source, seed)
    spans: list[tuple[int, int]] = []
    out: list[bytes] = []
    bounded = min_tokens > 1 or max_tokens > 0
    marker, word, digest = _MARKER_RE.match, _WORD_RE.search, mmh3.hash_bytes
    ascii_text = text.isascii()  # then lowered at once: lower keeps an ASCII text's offsets
    split = (text.lower() if ascii_text else text).split("\n")
    read: Iterable[tuple[int, str]]
    if len(split) <= 2 * LINES_READ:  # every line: the starts summed in C, no pairs listed
        starts = accumulate(map((1).__add__, map(len, split)), initial=0)  # one past the end
        read = zip(starts, split, strict=False)
    else:
        read = _read(split)
    longest = LINE_KEY_CHARS if max_tokens else len(text)
    if ascii_text:
        _key_ascii(read, head, seed, min_tokens, max_tokens, longest, spans, out)
        return Lines(tuple(spans), tuple(out))
    known: dict[str, bytes | None] = {}  # a line repeated is read once (None: not a line)
    read = [(start, line) for start, line in read if len(line) <= longest]
    folds = _normalized([line for _, line in read], max_tokens)
    for start, line in read:
        if line in known:
            key = known[line]
            if key is not None:
                spans.append((start, start + len(line)))
                out.append(key)
            continue
        known[line] = None
        if line.isascii():
            # ASCII: lower and split are what NFKC and casefold do to it, at a fraction of the
            # cost (:func:`_ascii_folded`)
            folded = _ascii_folded(line.lower(), min_tokens, max_tokens)
            if folded is None:
                continue
        else:
            if not word(line):
                continue
            got = folds.get(line)
            if got is None:  # no word character, or more words than max_tokens
                continue
            folded, n = got
            if bounded and (n < min_tokens or (max_tokens and n > max_tokens)):
                continue
            m = marker(folded)
            if m:
                folded = folded[m.end() :]
        # :func:`_key`, inline: a call per line cost a tenth of the whole
        key = known[line] = head + digest(folded.encode("utf-8", "surrogatepass"), seed)[7::-1]
        spans.append((start, start + len(line)))
        out.append(key)
    return Lines(tuple(spans), tuple(out))


def _key_ascii(
    read: Iterable[tuple[int, str]],
    head: bytes,
    seed: int,
    min_tokens: int,
    max_tokens: int,
    longest: int,
    spans: list[tuple[int, int]],
    out: list[bytes],
) -> None:
    """:func:`lines_of`'s loop for a lowered ASCII text: a repeated line is keyed again (what
    it costs is less than a table of lines read)."""
    digest = mmh3.hash_bytes
    for start, line in read:
        if len(line) > longest:
            continue
        folded = _ascii_folded(line, min_tokens, max_tokens)
        if folded is not None:
            spans.append((start, start + len(line)))
            out.append(head + digest(folded.encode(), seed)[7::-1])


def _ascii_folded(low: str, min_tokens: int, max_tokens: int) -> str | None:
    """A lowered ASCII line as it is keyed: its words split once, counted and joined by one
    space, a list number at its head dropped; ``None`` when it is no line (no word character,
    or its words out of the bounds)."""
    words = low.split(None, max_tokens) if max_tokens else low.split()
    n = len(words)
    if not n or n < min_tokens or (max_tokens and n > max_tokens):
        return None
    folded = " ".join(words)
    first = words[0]
    if not (first[0].isalnum() or first[0] == "_"):  # maybe no word character at all
        if not _WORD_RE.search(low):
            return None
        m = _MARKER_RE.match(folded)
    else:  # list numbering ends its first word with "." or ")", or is not there
        m = _MARKER_RE.match(folded) if first[-1] in ".)" else None
    return folded[m.end() :] if m else folded


def _key(head: bytes, norm: str, seed: int) -> bytes:
    """A line's or a passage's 16-byte key: its source's, then the first 64-bit half of the
    MurmurHash3 x64/128 of its normalised text (little-endian in the digest: big-endian)."""
    return head + mmh3.hash_bytes(norm.encode("utf-8", "surrogatepass"), seed)[7::-1]


def passages_of(
    text: str,
    source: str,
    seed: int = DEFAULT_SEED,
    *,
    min_tokens: int = 1,
    max_tokens: int = 0,
    whole: Lines | None = None,
) -> Lines:
    """:func:`lines_of`, and the passages of every line that breaks into more than one: its
    sentences, and a box's or a footer's items (:func:`neardup.sketch.pieces.passage_spans`),
    each with ``min_tokens`` to ``max_tokens`` tokens, keyed as a line with their text would
    be. In text order, a line before its passages. Boilerplate repeats at the size a site's
    template repeats: a footer that text extraction delivers as one paragraph of ten sentences
    has ten passages that recur on every page, though the paragraph, which also holds a
    rotating sign-up line, does not; a box of other stories' headlines on one line has the
    box's title and headlines. ``whole``: what :func:`lines_of` gives for the same arguments,
    when the caller has it already (the compiled core reads a batch's lines at once)."""
    if whole is None:
        whole = lines_of(text, source, seed, min_tokens=min_tokens, max_tokens=max_tokens)
    units = [(span, key, span) for span, key in zip(whole.spans, whole.keys, strict=True)]
    head = source_key(source, seed)
    marker = _MARKER_RE.match
    found: list[tuple[int, int, int, str, int]] = []  # line start, piece's [a, b), it, line's end
    for start, line in _read(text.split("\n")):
        for a, b in passage_spans(line):
            found.append((start, a, b, line[a:b], start + len(line)))
    folds = _normalized([f[3] for f in found], max_tokens)
    for start, a, b, piece, end in found:
        if piece.isascii():
            folded, n = normalize(piece), _tokens(piece, max_tokens)
        elif (got := folds.get(piece)) is not None:
            folded, n = got
        else:  # more words than max_tokens
            continue
        if n < min_tokens or (max_tokens and n > max_tokens):
            continue
        m = marker(folded)
        key = _key(head, folded[m.end() :] if m else folded, seed)
        units.append(((start + a, start + b), key, (start, end)))
    units.sort(key=lambda u: (u[0][0], -u[0][1]))
    return Lines(tuple(u[0] for u in units), tuple(u[1] for u in units), tuple(u[2] for u in units))


def _tokens(line: str, cap: int) -> int:
    """A line's tokens, counted no further than past ``cap`` (0: all): the long paragraph of a
    story is split once, at most ``cap`` times, and tokenised never."""
    pieces = len(line.split(None, cap) if cap else line.split())
    if line.isascii() or (cap and pieces > cap):
        return pieces
    return len(tokenize(line))


def _normalized(texts: list[str], cap: int) -> dict[str, tuple[str, int]]:
    """:func:`normalize` and :func:`_tokens` of each distinct one of ``texts`` that is not
    ASCII, has a word character and at most ``cap`` words (0: any), done for all at once
    (:func:`neardup.sketch.features.normalize_each`, :func:`neardup.sketch.features.token_counts`):
    a text of many short lines paid a fold and a tokenisation per line."""
    todo = list(
        dict.fromkeys(
            t
            for t in texts
            if not t.isascii()
            and (not cap or len(t.split(None, cap)) <= cap)
            and _WORD_RE.search(t)
        )
    )
    norms = normalize_each(todo)
    return dict(zip(todo, zip(norms, token_counts(norms), strict=True), strict=True))


def without(text: str, lines: Lines, drop: frozenset[int] | set[int]) -> str:
    """The text without the lines and passages at positions ``drop`` of ``lines``; every
    other line of the text (whether ``lines`` lists it or not) stays, joined by newlines. A
    line that loses passages keeps the rest of its text, and goes if it kept no more than half
    of its words (:func:`_mostly_kept`)."""
    gone = {lines.spans[i][0] for i in drop if lines.is_line(i)}
    cut: dict[int, list[tuple[int, int]]] = {}
    for i in drop:
        if not lines.is_line(i):
            cut.setdefault(lines.line_of(i)[0], []).append(lines.spans[i])
    kept, pos = [], 0
    for part in text.split("\n"):
        if pos not in gone and part.strip():
            rest = _cut(part, pos, cut[pos]) if pos in cut else part
            if pos not in cut or (_WORD_RE.search(rest) and _mostly_kept(part, rest)):
                kept.append(rest)
        pos += len(part) + 1
    return "\n".join(kept)


def _mostly_kept(line: str, rest: str) -> bool:
    """Whether a line that lost passages kept more than half of its words. A line that is
    mostly template is template: a box on one line whose newest items are not learned yet,
    or whose items break into pieces too small to learn (``U.S.``, a one-word headline)."""
    return _worded(rest) * 2 > _worded(line)


def _worded(text: str) -> int:
    """The words of a text: what lies between spaces and has a word character (a box's
    separators are not words)."""
    return sum(1 for t in text.split() if _WORD_RE.search(t))


def _cut(line: str, at: int, spans: list[tuple[int, int]]) -> str:
    """``line`` (starting at ``at`` in the text) without ``spans`` (text offsets)."""
    pieces, done = [], 0
    for a, b in sorted(spans):
        a, b = max(a - at, done), max(b - at, done)
        pieces.append(line[done:a])
        done = b
    pieces.append(line[done:])
    # what lay between two passages left out (a separator) goes with them
    return " ".join(" ".join(p for p in pieces if _WORD_RE.search(p)).split())


def _rows(text: str, lines: Lines, drop: frozenset[int] | set[int]) -> list[tuple[int, bool]]:
    """Per non-blank line of the text, or per passage of a line that breaks into some: its
    position in ``lines`` (-1: not listed) and whether it is left out (``drop``, or its line
    is)."""
    whole: dict[int, int] = {}
    parts: dict[int, list[int]] = {}
    for i in range(len(lines)):
        if lines.is_line(i):
            whole[lines.spans[i][0]] = i
        else:
            parts.setdefault(lines.line_of(i)[0], []).append(i)
    rows: list[tuple[int, bool]] = []
    pos = 0
    for part in text.split("\n"):
        if part.strip():
            line = whole.get(pos, -1)
            if pos in parts:
                rows += [(i, line in drop or i in drop) for i in parts[pos]]
            else:
                rows.append((line, line in drop))
        pos += len(part) + 1
    return rows


def between(
    text: str, lines: Lines, drop: frozenset[int] | set[int], *, run: int = 5, words: int = 16
) -> set[int]:
    """The lines and passages not in ``drop`` that stand in a template: at most ``run`` of
    them in a row, with what is left out just before and just after. A box's items rotate (the
    site's latest or most read headlines), so some are always new, but its title and its other
    items around them are learned: the new ones are the box's too. The converse of
    :func:`inside`. Only headline-sized ones (at most ``words`` words): a story's paragraph is
    never a box's item, even a short story's that stands alone between a page's template
    lines."""
    if not drop:
        return set()
    rows = _rows(text, lines, drop)
    out: set[int] = set()
    k = 1
    while k < len(rows):
        if rows[k][1] or not rows[k - 1][1]:
            k += 1
            continue
        end = k
        while end < len(rows) and not rows[end][1]:
            end += 1
        found = [i for i, _ in rows[k:end]]
        sized = all(i >= 0 and _words(text, lines.spans[i]) <= words for i in found)
        if end < len(rows) and end - k <= run and sized:
            out.update(found)
        else:  # a box on one line: its new items after its learned title, to the line's end
            first, same = rows[k - 1][0], []
            for i in found:
                if (
                    first < 0
                    or i < 0
                    or lines.is_line(i)
                    or lines.line_of(i) != lines.line_of(first)
                    or _words(text, lines.spans[i]) > words
                ):
                    break
                same.append(i)
            if same and _box_tail(text, lines, [first, *same]):
                out.update(same)
        k = end
    return out


_LIST_GAP_RE = re.compile(r"[|\u00b7\u2022/:;\u2013\u2014]|\s-")


def _box_tail(text: str, lines: Lines, run: list[int]) -> bool:
    """Whether ``run`` (positions in ``lines``: a left-out passage, then the ones after it)
    is the rest of one line that lists items: passages of one line, up to its end, each
    after a list separator (``|``, ``·``, a label's colon, ...), not after a sentence's end.
    A box on one line ("Most read: A | B | C") whose title or first items were learned ends
    with its line, whatever the next line holds; a paragraph's sentences are not a list."""
    if len(run) < 2 or any(i < 0 or lines.is_line(i) for i in run):
        return False
    line = lines.line_of(run[0])
    if any(lines.line_of(i) != line for i in run):
        return False
    spans = [lines.spans[i] for i in run]
    if any(len(x.split()) > 1 for x in _LIST_GAP_RE.split(text[spans[-1][1] : line[1]])):
        return False  # more of the line after the run (a one-word link is not an item)
    # a label's colon ends the passage before its gap
    return all(_LIST_GAP_RE.search(text[a[1] - 1 : b[0]]) for a, b in pairwise(spans))


def _words(text: str, span: tuple[int, int]) -> int:
    return len(text[span[0] : span[1]].split())


def inside(text: str, lines: Lines, drop: frozenset[int] | set[int]) -> set[int]:
    """The lines and passages of ``drop`` (positions in ``lines``) that stand alone inside a
    story: what comes just before and just after each is kept (not in ``drop``; a line
    ``lines`` does not list, a long paragraph or a one-word line, counts as kept). A template
    comes in blocks around a story (navigation, boxes, footers); a line that recurs alone
    between two lines of a story (a wrapped phrase, an attribution), or a sentence between two
    sentences of a paragraph, is part of it. A line that breaks into passages is read as its
    passages."""
    if not drop:
        return set()
    rows = _rows(text, lines, drop)
    return {
        i
        for k, (i, dropped) in enumerate(rows[1:-1], 1)
        if dropped and i in drop and not rows[k - 1][1] and not rows[k + 1][1]
    }


def anchors(
    text: str, lines: Lines, keep: set[int] | frozenset[int], *, k: int, min_tokens: int
) -> tuple[int, ...]:
    """The ``k`` smallest fingerprints (64-bit, without the source key) among the lines and
    passages at positions ``keep`` of ``lines`` that have at least ``min_tokens`` tokens: a
    bottom-k sample of a text's sentences, the same whatever source it came from. Two pages
    that carry one story under two sites' templates share few MinHash bands when one of them
    still carries its template (it came before its site's template was learned), but the
    smallest of the story's sentences are among the smallest of both. Sentences, not
    shingles: a template is made of its own sentences, so what it adds to a page cannot move
    a story's sentence out of the sample by more than its own count."""
    found = {
        int.from_bytes(lines.keys[i][8:], "big")
        for i in keep
        if _tokens(text[lines.spans[i][0] : lines.spans[i][1]], min_tokens) >= min_tokens
    }
    return tuple(sorted(found)[:k])
