"""A text's lines as fingerprints, for learning what a source repeats on every page.

Boilerplate is the text a source prints around every story: navigation, footers, legal lines,
"most read" boxes. It repeats *verbatim, line by line*, across that source's documents, while a
story's lines do not, so web-corpus pipelines find it by counting lines. A line here is what lies
between two newlines; its fingerprint is a 64-bit MurmurHash3 of its normalised text (NFKC,
casefold, whitespace folded, a leading list number such as ``3.`` dropped: a "most read" box
numbers its headlines as it likes), keyed by the source so that two sites never share counts.
Lines without a word character (rules, blank lines) are not lines.

Pure: the index keeps the counts; :func:`without` rebuilds the text from the lines it keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import mmh3

from sketch.features import DEFAULT_SEED, normalize, tokenize

_MARKER_RE = re.compile(r"^\W*(?:\d{1,3}|[a-z])[.)]\s+")  # "1. ", "2) ", "a) ": list numbering
_WORD_RE = re.compile(r"\w")

__all__ = ["Lines", "inside", "lines_of", "source_key", "without"]


@dataclass(frozen=True, slots=True)
class Lines:
    """The lines of a text: character spans (``[start, end)`` in the text) and their 16-byte
    keys (source key, then the line's fingerprint), in order; a repeated line once per time."""

    spans: tuple[tuple[int, int], ...]
    keys: tuple[bytes, ...]

    def __len__(self) -> int:
        return len(self.keys)


def source_key(source: str, seed: int = DEFAULT_SEED) -> bytes:
    """8 bytes naming a source (a host, a feed, ``""`` for the namespace as a whole)."""
    return mmh3.hash64(source.encode("utf-8"), seed, signed=False)[0].to_bytes(8, "big")


def lines_of(
    text: str, source: str, seed: int = DEFAULT_SEED, *, min_tokens: int = 1, max_tokens: int = 0
) -> Lines:
    """Every line of ``text`` that has a word character and ``min_tokens`` to ``max_tokens``
    tokens (0: no upper bound), keyed under ``source``. Tokens are the words between spaces;
    a line with CJK characters counts each of them as one (:func:`sketch.features.tokenize`),
    and a line of more than ``max_tokens`` words is long whatever its script."""
    head = source_key(source, seed)
    spans, out = [], []
    bounded = min_tokens > 1 or max_tokens > 0
    digest, marker, word = mmh3.hash_bytes, _MARKER_RE.match, _WORD_RE.search
    pos = 0
    ascii_text = text.isascii()  # then lowered at once: lower keeps an ASCII text's offsets
    for line in (text.lower() if ascii_text else text).split("\n"):
        start, pos = pos, pos + len(line) + 1
        if ascii_text or line.isascii():
            # ASCII: lower and split are what NFKC and casefold do to it, at a fraction of the
            # cost; the words split once serve both the count and the fold
            low = line if ascii_text else line.lower()
            words = low.split(None, max_tokens) if max_tokens else low.split()
            n = len(words)
            if not n or n < min_tokens or (max_tokens and n > max_tokens):
                continue
            folded = " ".join(words)
            first = words[0]
            if not (first[0].isalnum() or first[0] == "_"):  # maybe no word character at all
                if not word(line):
                    continue
                m = marker(folded)
            else:  # list numbering ends its first word with "." or ")", or is not there
                m = marker(folded) if first[-1] in ".)" else None
        else:
            if not word(line):
                continue
            if bounded:
                n = _tokens(line, max_tokens)
                if n < min_tokens or (max_tokens and n > max_tokens):
                    continue
            folded = normalize(line)
            m = marker(folded)
        norm = folded[m.end() :] if m else folded
        spans.append((start, start + len(line)))
        # the first 64-bit half of MurmurHash3 x64/128, little-endian in the digest: big-endian
        out.append(head + digest(norm.encode("utf-8", "surrogatepass"), seed)[7::-1])
    return Lines(tuple(spans), tuple(out))


def _tokens(line: str, cap: int) -> int:
    """A line's tokens, counted no further than past ``cap`` (0: all): the long paragraph of a
    story is split once, at most ``cap`` times, and tokenised never."""
    pieces = len(line.split(None, cap) if cap else line.split())
    if line.isascii() or (cap and pieces > cap):
        return pieces
    return len(tokenize(line))


def without(text: str, lines: Lines, drop: frozenset[int] | set[int]) -> str:
    """The text without the lines at positions ``drop`` of ``lines``; every other line of the
    text (whether ``lines`` lists it or not) stays, joined by newlines."""
    gone = {lines.spans[i][0] for i in drop}
    kept, pos = [], 0
    for part in text.split("\n"):
        if pos not in gone and part.strip():
            kept.append(part)
        pos += len(part) + 1
    return "\n".join(kept)


def inside(text: str, lines: Lines, drop: frozenset[int] | set[int]) -> set[int]:
    """The lines of ``drop`` (positions in ``lines``) that stand alone inside a story: the
    non-blank lines just before and just after each are both kept (not in ``drop``; a line
    ``lines`` does not list, a long paragraph or a one-word line, counts as kept). A template
    comes in blocks around a story (navigation, boxes, footers); a line that recurs alone
    between two lines of a story (a wrapped phrase, an attribution) is part of it."""
    if not drop:
        return set()
    at = {start: i for i, (start, _) in enumerate(lines.spans)}
    order: list[int] = []  # per non-blank line of the text: its position in lines, or -1
    pos = 0
    for part in text.split("\n"):
        if part.strip():
            order.append(at.get(pos, -1))
        pos += len(part) + 1
    return {
        i
        for k, i in enumerate(order[1:-1], 1)
        if i in drop and order[k - 1] not in drop and order[k + 1] not in drop
    }
