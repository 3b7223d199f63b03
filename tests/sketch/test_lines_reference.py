"""neardup.sketch.lines.lines_of against its earlier form, kept here as the reference: the
per-line loop was made cheaper (starts summed in C, the key's hash inline) and must key exactly
the same lines, in every script, as before."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.sketch import lines as lines_module
from neardup.sketch.features import DEFAULT_SEED
from neardup.sketch.lines import LINE_KEY_CHARS, Lines, lines_of, source_key

_MARKER_RE = lines_module._MARKER_RE
_WORD_RE = lines_module._WORD_RE


def reference_lines_of(
    text: str, source: str, seed: int = DEFAULT_SEED, *, min_tokens: int = 1, max_tokens: int = 0
) -> Lines:
    """Every line of ``text`` that has a word character and ``min_tokens`` to ``max_tokens``
    tokens (0: no upper bound), keyed under ``source``. Tokens are the words between spaces;
    a line with CJK characters counts each of them as one
    (:func:`neardup.sketch.features.tokenize`), and a line of more than ``max_tokens`` words is long
    whatever its script. Of a long text, the lines at its head and foot (:data:`LINES_READ`);
    with ``max_tokens``, none of more than :data:`LINE_KEY_CHARS` characters."""
    head = source_key(source, seed)
    _read, _normalized = lines_module._read, lines_module._normalized
    spans, out = [], []
    bounded = min_tokens > 1 or max_tokens > 0
    marker, word = _MARKER_RE.match, _WORD_RE.search
    ascii_text = text.isascii()  # then lowered at once: lower keeps an ASCII text's offsets
    known: dict[str, bytes | None] = {}  # a line repeated is read once (None: not a line)
    read = _read((text.lower() if ascii_text else text).split("\n"))
    if max_tokens:
        read = [(start, line) for start, line in read if len(line) <= LINE_KEY_CHARS]
    folds = {} if ascii_text else _normalized([line for _, line in read], max_tokens)
    for start, line in read:
        if line in known:
            key = known[line]
            if key is not None:
                spans.append((start, start + len(line)))
                out.append(key)
            continue
        known[line] = None
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
            got = folds.get(line)
            if got is None:  # no word character, or more words than max_tokens
                continue
            folded, n = got
            if bounded and (n < min_tokens or (max_tokens and n > max_tokens)):
                continue
            m = marker(folded)
        key = known[line] = lines_module._key(head, folded[m.end() :] if m else folded, seed)
        spans.append((start, start + len(line)))
        out.append(key)
    return Lines(tuple(spans), tuple(out))


# pieces of text in many scripts, with marks, zero-width characters, digits, list numbers
_PIECES = [
    "Home",
    "WORLD",
    "news",
    "1.",
    "2)",
    "a)",
    "-----",
    "|",
    "  ",
    "\t",
    "",
    "ﬁle",
    "Straße",
    "Ελλάδα",
    "ΣΊΣΥΦΟΣ",
    "Москва",
    "ЁЛКА",
    "北京市",
    "新闻",
    "ข่าววันนี้",
    "الأخبار",
    "١٢٣",
    "e\u0301",
    "\u200b",
    "\u200d",
    "\u00ad",
    "ＡＢＣ",
    "①",
    "2026",
    "12,500",
    "İstanbul",
    "x" * 300,
    "word " * 45,
    "\ud800",
    "_",
    "·",
    "»",
]
_line = st.lists(st.sampled_from(_PIECES) | st.text(max_size=12), max_size=12).map(" ".join)
_texts = st.lists(_line, max_size=30).map("\n".join) | st.text(max_size=200)


def _same(text: str, source: str, min_tokens: int, max_tokens: int) -> None:
    got = lines_of(text, source, DEFAULT_SEED, min_tokens=min_tokens, max_tokens=max_tokens)
    want = reference_lines_of(
        text, source, DEFAULT_SEED, min_tokens=min_tokens, max_tokens=max_tokens
    )
    assert got == want


@settings(max_examples=400)
@given(
    _texts,
    st.sampled_from(["", "a.example"]),
    st.integers(1, 3),
    st.sampled_from([0, 1, 5, 40]),
)
def test_lines_of_keys_what_the_reference_keys(
    text: str, source: str, min_tokens: int, max_tokens: int
) -> None:
    _same(text, source, min_tokens, max_tokens)


@settings(max_examples=30)
@given(st.integers(1000, 1400), st.sampled_from([0, 40]))
def test_a_long_text_is_read_at_its_ends_as_before(n: int, max_tokens: int) -> None:
    text = "\n".join(f"line {i % 700} of the page" if i % 3 else "" for i in range(n))
    _same(text, "", 2, max_tokens)
    _same(text + "\n" + "y " * LINE_KEY_CHARS, "s", 1, max_tokens)


@cache
def _real() -> list[str]:
    from harness.data import reuters, zh_reviews

    texts = [d["text"] for d in reuters()[:3000]]
    return texts + [d["text"] for d in zh_reviews()[:2000]]


def test_lines_of_keys_real_text_as_the_reference() -> None:
    for text in _real():
        _same(text, "", 2, 40)
        _same(text, "wire", 1, 0)
