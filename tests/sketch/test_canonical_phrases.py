"""The Chinese steps of the canonical form (OpenCC's classes and phrases), scanned the fast way
(phrase starts found at once in a long text; a character class past the BMP tried once per
distinct character), fold as the rule says, and the form of real text is what it was before.
What they cost is measured by ``python -m bench hostile`` (recipe ``traditional_phrases``)."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from harness import canonical_tables, data
from neardup.sketch import canonical, canonical_data

# the forms before the scans changed (fold of each text; fold_each of the reviews 500 at a time
# gives the same): sha256 of every form, each followed by a NUL
ZH_REVIEWS_FORMS = "15f43a31ab53d4d7204bcf7457457ff8f56fdaf52578834cf1247cb75c3a6496"
REUTERS_FORMS = "32f6dc71fbec399a0109fb80f71ac6d6ded6a87731a852960d2767dfcc1e25cf"


def _digest(forms: list[str]) -> str:
    h = hashlib.sha256()
    for f in forms:
        h.update(f.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def test_real_text_folds_as_before() -> None:
    zh = [r["text"] for r in data.zh_reviews()]
    assert _digest([canonical.fold(t) for t in zh]) == ZH_REVIEWS_FORMS
    batched = [f for i in range(0, len(zh), 500) for f in canonical.fold_each(zh[i : i + 500])]
    assert _digest(batched) == ZH_REVIEWS_FORMS
    assert _digest([canonical.fold(d["text"]) for d in data.reuters()]) == REUTERS_FORMS


def _phrase_table() -> dict[str, str]:
    words = canonical_data.PHRASES.split(" ")
    table = dict(zip(words[0::2], words[1::2], strict=False))
    table.pop("", None)
    return table


_TABLE = _phrase_table()
_PHRASES = sorted(_TABLE)


def _fold_phrases_plainly(text: str) -> str:
    """The phrase rule written plainly (the table generator's own reading: at each place left
    to right, the longest phrase)."""
    return canonical_tables._replace(text, _TABLE)


_PIECES = st.one_of(
    st.sampled_from(_PHRASES),
    st.sampled_from(sorted(set(_TABLE.values()))),
    st.sampled_from(sorted({c for p in _PHRASES for c in p})),
    st.sampled_from(["a", " ", "\n", "\U0001f600", "\u00e9", "字"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=400), st.integers(0, 600))
def test_phrases_fold_as_the_rule_says_in_short_and_long_texts(pieces: list[str], pad: int) -> None:
    text = "".join(pieces)
    for t in (text, "x" * pad + text):  # a short text and a long one take other scans
        assert canonical.fold_phrases(t) == _fold_phrases_plainly(t)


def test_a_long_text_of_phrases_folds_as_the_rule_says() -> None:
    text = "".join(_PHRASES[i % len(_PHRASES)] for i in range(0, 5 * len(_PHRASES), 7))
    assert len(text) > canonical.PHRASE_SCAN_CHARS
    assert canonical.fold_phrases(text) == _fold_phrases_plainly(text)
    starts = canonical._phrase_starts(text)  # exactly where two characters open a phrase
    firsts = {p[:2] for p in _PHRASES}
    assert starts == [i for i in range(len(text) - 1) if text[i : i + 2] in firsts]


_ASTRAL_SET = canonical._CharSet([(0x1D400, 0x1D7FF), (0x20000, 0x2A6DF), (0x41, 0x5A)])

_SOME = ["A", "a", "\u4e00", "\U0001d400", "\U0001d7ff", "\U0001f600", "\U00020001", "\U0002b740"]


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(_SOME)))
def test_a_char_set_finds_its_characters_past_the_bmp(text: str) -> None:
    inside = [c for c in text if c == "A" or 0x1D400 <= ord(c) <= 0x1D7FF or c == "\U00020001"]
    bmp = [c for c in inside if ord(c) < 0x10000]
    assert _ASTRAL_SET.findall(text) == bmp + [c for c in inside if ord(c) >= 0x10000]
    assert _ASTRAL_SET.search(text) == bool(inside)
