"""The one-article path of :func:`neardup.stream.engine.prepare.prepare` gives what the batch path
gives.

``prepare([a])`` takes its own, cheaper route (the view's ``/check`` and library callers send one
text); a verdict must not depend on how many articles came with it, so every field must equal
the batch result for the same article, bit for bit.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import data
from harness.corpus import generate
from neardup.sketch import features, figures, simhash
from neardup.stream.engine.prepare import Prepared, _facts, numbers_and_dates, prepare
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy

POLICY = Policy()
FIELDS = ("kind", "content", "buckets", "text", "simhash", "numbers", "dates")
FILLER = Article("filler", "a filler text of a few words that shares the batch with others")

# words that exercise every rule of the one-text forms: numerals with points and commas, digits
# beside letters, days beside months (both sides, abbreviated, ordinal), CJK dates and numbers
WORDS = st.sampled_from(
    [
        "the",
        "wire",
        "said",
        "profit",
        "rose",
        "to",
        "april",
        "apr.",
        "sept",
        "may",
        "of",
        "7",
        "07",
        "31",
        "32",
        "7th",
        "1,750",
        "4.5",
        "1..2",
        "1,.2",
        "q3",
        "3q",
        "x1y",
        "2020",
        "dlrs",
        "pct",
        "4月7日",
        "三十五",
        "35亿",
        "号",
        "Ⅻ",
        "１２",
        "naïve",
        "ß",
        "\u00a0",
        "\t",
        "\n",
        "—",
        "(",
        ")",
        "12-13",
        "½",
        # times of day (blanked from a long text's facts) and what only looks like one
        "11:00",
        "9:30:15",
        "3:1",
        "0900",
        "0900gmt",
        "12345",
        "gmt",
        "edt",
        "hrs",
        "local",
        "time",
        ":",
    ]
)
TEXTS = st.lists(WORDS, min_size=0, max_size=120).map(" ".join)


def same(one: Prepared, batch: Prepared) -> bool:
    for f in FIELDS:
        assert getattr(one, f) == getattr(batch, f), f
    assert one.shingles.dtype == batch.shingles.dtype
    assert np.array_equal(one.shingles, batch.shingles)
    return True


def check(article: Article, without_boilerplate: str | None = None) -> None:
    (one,) = prepare(
        POLICY, [article], None if without_boilerplate is None else [without_boilerplate]
    )
    batch = prepare(
        POLICY,
        [FILLER, article, FILLER],
        None if without_boilerplate is None else [None, without_boilerplate, None],
    )
    assert same(one, batch[1])


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_one_text_equals_its_batch_result(text: str) -> None:
    check(Article("a", text))


@settings(max_examples=100, deadline=None)
@given(TEXTS, TEXTS)
def test_one_text_with_boilerplate_left_out_equals_its_batch_result(text: str, core: str) -> None:
    check(Article("a", text), core or None)


def test_real_texts_equal_their_batch_results() -> None:
    """Newswire (brief and long stories), generated articles, Chinese reviews."""
    texts = [r["text"] for r in data.reuters()[:400]]
    texts += [d["text"] for d in generate(40, seed=3, words=300)]
    texts += [r["text"] for r in data.zh_reviews()[:100]]
    for i, t in enumerate(texts):
        check(Article(f"t{i}", t))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=700))
def test_simhash_one_equals_simhash_many(values: list[int]) -> None:
    h = np.array(values, dtype=np.uint64)
    many = simhash.simhash_many(h, None, np.array([0, len(h)], dtype=np.intp))
    assert simhash.simhash_one(h) == int(many[0])


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_numerals_and_dates_equal_the_batch_forms(text: str) -> None:
    norm = features.normalize(text)
    batch = features.normalize_batch(["x 1 april", text, "2 may"])
    assert figures.numerals_and_dates(norm) == (batch.numerals()[1], batch.dates()[1])


# a headline of a few words over a body: where a long text's facts start
STORIES = st.tuples(st.lists(WORDS, max_size=24).map(" ".join), TEXTS).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(STORIES | TEXTS, min_size=1, max_size=5))
def test_a_batch_reads_each_long_texts_facts_as_the_text_alone(texts: list[str]) -> None:
    """The batch's numpy reading (digit runs, body past a headline, times of day) gives what
    :func:`numbers_and_dates` gives each text alone."""
    batch = features.normalize_batch(texts)
    found = _facts(texts, batch, list(range(len(texts))), [False] * len(texts))
    for i, text in enumerate(texts):
        assert found[i] == numbers_and_dates(text, batch.text(i), False)


# a brief's numbers are values, number words too; and words of other scripts, marks,
# zero-width characters
BRIEF_WORDS = WORDS | st.sampled_from(
    [
        "five",
        "million",
        "hundred",
        "twenty-one",
        "half",
        "billion",
        "٣",
        "๓",
        "Москва",
        "αβγ",
        "\u200b",
        "e\u0301",
        "12:30",
        "５",
        "三",
        "Jan",
        "1st",
    ]
)
BRIEFS = st.tuples(
    st.lists(BRIEF_WORDS, max_size=12).map(" ".join),
    st.lists(BRIEF_WORDS, max_size=40).map(" ".join),
).map("\n".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(BRIEFS | STORIES | TEXTS, st.booleans()), min_size=1, max_size=5))
def test_a_batch_reads_briefs_facts_as_the_text_alone(found: list[tuple[str, bool]]) -> None:
    """A brief's facts (its numbers as values) read with the batch's dates are what
    :func:`numbers_and_dates` gives it alone, with or without a time of day."""
    texts, brief = [t for t, _ in found], [b for _, b in found]
    batch = features.normalize_batch(texts)
    got = _facts(texts, batch, list(range(len(texts))), brief)
    for i, text in enumerate(texts):
        assert got[i] == numbers_and_dates(text, batch.text(i), brief[i])


def test_a_batch_reads_real_briefs_as_the_text_alone() -> None:
    texts = [r["text"] for r in data.reuters()[:4000]] + [
        r["text"] for r in data.zh_reviews()[:500]
    ]
    for at in range(0, len(texts), 500):
        part = texts[at : at + 500]
        batch = features.normalize_batch(part)
        brief = [len(t) < 600 for t in part]
        got = _facts(part, batch, list(range(len(part))), brief)
        for i, text in enumerate(part):
            assert got[i] == numbers_and_dates(text, batch.text(i), brief[i])


def test_numerals_and_dates_by_example() -> None:
    assert figures.numerals_and_dates("on april 7th, 1,750 tonnes at 4.5 pct in q3") == (
        ("1,750", "4.5"),  # the 7 of "7th" stands beside a letter: a day, not a numeral
        ("04-07",),
    )
    assert figures.numerals_and_dates("4月7日 和 7 may") == (("4", "7", "7"), ("04-07", "05-07"))
