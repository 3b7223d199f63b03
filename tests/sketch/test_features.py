"""Features: normalisation, tokens (words; CJK characters), shingles, determinism, Chinese."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import data
from neardup.sketch import features
from neardup.sketch.minhash import MinHasher, estimate_jaccard
from neardup.sketch.simhash import hamming, simhash
from neardup.sketch.verify import jaccard


def test_normalisation_folds_width_case_and_space() -> None:
    assert features.normalize("  Ｈｅｌｌｏ\u00a0\tWORLD\n ﬁne ") == "hello world fine"


def test_tokens_words_and_cjk_characters() -> None:
    assert features.tokenize("Neardup 检测重复, it's 2026!") == [
        "neardup", "检", "测", "重", "复", "it", "s", "2026",
    ]  # fmt: skip
    # the canonical form folds Han script variants to one member of each class (語 -> 语)
    assert features.tokenize("日本語のテキスト") == list("日本语のテキスト")
    assert features.tokenize("") == []


# letters and marks of scripts that write marks inside words (Thai, Devanagari, Hebrew), the
# combining diacriticals, spacing marks, and what separates words
_MARKED = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x0E01, max_codepoint=0x0E4E),
        st.characters(min_codepoint=0x0900, max_codepoint=0x097F),
        st.characters(min_codepoint=0x0591, max_codepoint=0x05EA),
        st.characters(min_codepoint=0x0300, max_codepoint=0x036F),
        st.characters(categories=("Mn", "Mc", "Me")),
        st.sampled_from("ab 1.,-\n"),
    ),
    max_size=80,
)


def test_a_mark_is_a_part_of_its_word() -> None:
    # Python's \w ends a word at a Thai tone mark or a Devanagari vowel sign: the tokenizers
    # do not
    assert features.tokenize("ไม่สวย ดี", normalized=True) == ["ไม่สวย", "ดี"]
    assert features.tokenize("का कुल", normalized=True) == ["का", "कुल"]
    assert (
        features.text_token_hashes("ไม่สวย").tolist() != features.text_token_hashes("ไม้สวย").tolist()
    )


@given(_MARKED)
@settings(max_examples=300, deadline=None)
def test_the_tokenizers_agree_on_words_with_marks(text: str) -> None:
    norm = " ".join(text.split())
    toks = features.tokenize(norm, normalized=True)
    assert features.token_counts([norm]) == [len(toks)]
    assert len(features.text_token_hashes(norm, normalized=True)) == len(toks)


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_fast_token_hashes_agree_with_the_regex_tokenizer(text: str) -> None:
    """The vectorised path must split exactly where ``\\w+`` / CJK says, and hash by content."""
    toks = features.tokenize(text)
    hashes = features.text_token_hashes(text).tolist()
    assert len(hashes) == len(toks)
    seen: dict[str, int] = {}
    for tok, h in zip(toks, hashes, strict=True):
        assert seen.setdefault(tok, h) == h
    assert len(set(hashes)) == len(set(toks))


@given(st.lists(st.text(max_size=60), max_size=12))
@settings(max_examples=150, deadline=None)
def test_batch_shingles_equal_per_text_shingles(texts: list[str]) -> None:
    hashes, offsets = features.batch_shingle_hashes(texts)
    assert len(offsets) == len(texts) + 1
    for i, t in enumerate(texts):
        one = features.combine_windows(features.text_token_hashes(t), 3)
        assert np.array_equal(hashes[offsets[i] : offsets[i + 1]], one)


_SPACES = " \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u3000"
_SPECIAL = st.sampled_from(_SPACES + "\x00aZ检ßﬁ")
spacey_text = st.text(alphabet=st.one_of(st.characters(codec="utf-8"), _SPECIAL), max_size=60)


@given(st.lists(spacey_text, max_size=12))
@settings(max_examples=300, deadline=None)
def test_normalize_batch_equals_normalize(texts: list[str]) -> None:
    """The numpy whitespace folding gives exactly ``normalize`` of each text (leading, trailing
    and inner runs of every kind of space, NUL inside a text, empty texts, CJK, expansions), the
    same content hashes and the same shingles."""
    batch = features.normalize_batch(texts)
    norms = [features.normalize(t) for t in texts]
    assert [batch.text(i) for i in range(len(texts))] == norms
    assert batch.content_hashes(7) == [features.content_hash(n, 7) for n in norms]
    hashes, offsets = batch.shingle_hashes(w=3, seed=7)
    want, want_off = features.batch_shingle_hashes(norms, w=3, seed=7, normalized=True)
    assert np.array_equal(hashes, want)
    assert np.array_equal(offsets, want_off)


def test_shingles_are_sorted_unique_and_order_sensitive() -> None:
    h = features.shingle_hashes("a b c d a b c d")
    assert np.all(np.diff(h.astype(np.float64)) > 0) or len(h) == 1
    assert len(h) == 4  # abc bcd cda dab
    assert not np.array_equal(features.shingle_hashes("a b c"), features.shingle_hashes("c b a"))
    assert len(features.shingle_hashes("two words")) == 1  # shorter than w: one shingle


def test_char_ngrams_for_short_text() -> None:
    assert len(features.char_ngram_hashes("abcab")) == 3  # abc bca cab
    assert len(features.char_ngram_hashes("")) == 0


def test_idf_weights_downweight_common_shingles() -> None:
    h, c = features.shingle_counts("x y z x y z q")
    w = features.idf_weights(h, c, {int(h[0]): 1000}, 1000)
    assert w[0] < w[1:].min()


GOLDEN_SCRIPT = """
import json
from neardup.sketch import features
from neardup.sketch.minhash import MinHasher
from neardup.sketch.simhash import simhash
text = "The quick brown fox jumps over the lazy dog. 敏捷的棕色狐狸跳过了懒狗。"
h = features.shingle_hashes(text)
s, c = features.shingle_counts(text)
print(json.dumps({
    "shingles": [str(x) for x in h[:4]],
    "sig": [str(x) for x in MinHasher(4, seed=9).signature(h).values],
    "simhash": str(simhash(s, c)),
    "content": features.content_hash(features.normalize(text)).hex(),
}))
"""

GOLDEN = {
    "shingles": [
        "3638546167328568241",
        "3772924874209129610",
        "4489028084584926410",
        "4637459889628410786",
    ],
    "sig": [
        "415543320861275301",
        "5138014240625032071",
        "10376273949155119046",
        "15580796950304340750",
    ],
    "simhash": "4494105485352827111",
    "content": "6bf5958d656bcdc1cd416ffa0417e78f",
}


def test_golden_values_in_a_fresh_process() -> None:
    """Same text, new interpreter (new str-hash salt): same shingles, signature, fingerprint."""
    out = subprocess.run(
        [sys.executable, "-c", GOLDEN_SCRIPT],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "random", "PATH": ""},
    )
    assert json.loads(out.stdout) == GOLDEN


def _zh_paragraph(start: int, n: int = 8) -> str:
    return "".join(row["text"] for row in data.zh_reviews()[start : start + n])


def test_chinese_edited_copy_scores_high_and_unrelated_low() -> None:
    para = _zh_paragraph(100)
    assert len(para) > 150
    chars = list(para)
    for i in range(10, len(chars), 40):  # a light edit: one character in forty replaced
        chars[i] = "好"
    edited = "".join(chars)
    other = _zh_paragraph(5000)
    a, b, c = (features.shingle_hashes(t) for t in (para, edited, other))
    assert jaccard(a, b) > 0.75
    assert jaccard(a, c) < 0.1
    h = MinHasher()
    assert estimate_jaccard(h.signature(a), h.signature(b)) > 0.6
    assert estimate_jaccard(h.signature(a), h.signature(c)) < 0.15
    fa, fb, fc = (simhash(*features.shingle_counts(t)) for t in (para, edited, other))
    assert hamming(fa, fb) < hamming(fa, fc)


def test_numerals_of_a_batch_as_written() -> None:
    """Numerals in order, a point or comma between digits kept, none beside a Latin letter,
    the same whatever texts share the batch."""
    texts = ["toll 12, up from 9.5", "Toll 1,750 — up FROM 4.50!", "q3 zq3x 3月5日", "none", "12"]
    got = features.normalize_batch(texts).numerals()
    assert got == [("12", "9.5"), ("1,750", "4.50"), ("3", "5"), (), ("12",)]
    assert [features.normalize_batch([t]).numerals()[0] for t in texts] == got
    assert len(features.normalize_batch([" ".join(["7"] * 300)]).numerals()[0]) == 256


# A numeral as the batch reads it, said as a regular expression over ASCII: a maximal run of
# digits joined by single points or commas, with no Latin letter on either side.
_NUMERAL_RE = re.compile(
    r"(?<![A-Za-z0-9])(?<![0-9][.,])[0-9]+(?:[.,][0-9]+)*(?![A-Za-z0-9])(?![.,][0-9])"
)


@given(
    st.lists(st.text(alphabet="0123456789.,,..aZq -\u00e9\u4e00\x00\n", max_size=40), max_size=8)
)
@settings(max_examples=400, deadline=None)
def test_numerals_of_a_batch_equal_the_regular_expression(texts: list[str]) -> None:
    """The vectorised reading equals the rule said once as a pattern, text by text, whatever
    texts share the batch (a NUL inside a text, a text ending in a digit before one starting
    with a digit)."""
    got = features.normalize_batch(texts).numerals()
    assert got == [tuple(_NUMERAL_RE.findall(features.normalize(t))) for t in texts]


def test_dates_of_a_batch() -> None:
    """Days of the year named by a month and a day, in English (whole or shortened, either
    order, an ordinal suffix) and in Chinese; a year, a number beside a letter, a day past 31
    or a word that only starts like a month is none."""
    texts = [
        "The USDA said on April 7th, up from 5 pct; as of March 1, 1987. Due 7 May.",
        "据报道，4月7日发布，3 月 12 日更新",
        "no dates 12 here, q3 apr. 30 and 31 Dec., Sept. 9",
        "May 40, June 0, 2 juneau, April 1987, a 12th of marching",
        "",
    ]
    got = features.normalize_batch(texts).dates()
    assert got == [
        ("04-07", "03-01", "05-07"),
        ("04-07", "03-12"),
        ("04-30", "12-31", "09-09"),
        (),
        (),
    ]
    assert [features.normalize_batch([t]).dates()[0] for t in texts] == got


_DATE_WORDS = st.sampled_from(
    ["april", "Apr.", "sept", "may", "7", "7th", "31", "32", "q3", "月", "日", "4", " ", ", "]
)


@given(st.lists(st.lists(_DATE_WORDS, max_size=12).map(" ".join), max_size=6))
@settings(max_examples=300, deadline=None)
def test_dates_do_not_depend_on_the_batch(texts: list[str]) -> None:
    """Whatever texts share a batch, each text's dates are its own: the same as alone."""
    got = features.normalize_batch(texts).dates()
    assert got == [features.normalize_batch([t]).dates()[0] for t in texts]
    assert all(1 <= int(d[:2]) <= 12 and 1 <= int(d[3:]) <= 31 for ds in got for d in ds)


@given(st.lists(st.integers(0, 2**64 - 1), max_size=50).map(lambda v: np.array(v, np.uint64)))
def test_sorted_unique_is_np_unique(values: np.ndarray) -> None:
    got = features.sorted_unique(values)
    assert got.dtype == np.uint64 and np.array_equal(got, np.unique(values))


@given(st.integers(1, 6), st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=30))
def test_combine_rows_is_combine_windows_of_each_short_row(w: int, flat: list[int]) -> None:
    k = min(w, len(flat))
    if k == w:
        k -= 1
    if k == 0:
        return
    rows = np.array(flat[: len(flat) // k * k], dtype=np.uint64).reshape(-1, k)
    got = features.combine_rows(rows).tolist()
    assert got == [int(features.combine_windows(row, w)[0]) for row in rows]
