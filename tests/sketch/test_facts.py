"""neardup.sketch.facts: what a short text says apart from how it is written.

Exact expectations for each kind of difference (a number, an amount written in words, a name,
a CJK character, a typo, a tracking suffix), and properties: a text says what it says
(no differences with itself), surface noise never changes the facts, a changed number always
shows.
"""

from __future__ import annotations

import random
import re
import string
import tracemalloc
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import noisy_briefs
from neardup.sketch.facts import Comparison, Difference, compare, differences, facts_of, numbers_of
from neardup.sketch.features import normalize
from neardup.stream.engine.judge import judge_short
from neardup.stream.namespaces.policy import Policy


def _diffs(earlier: str, now: str, *, numbers: bool = True) -> list[Difference]:
    return differences(facts_of(normalize(earlier)), facts_of(normalize(now)), numbers=numbers)


def test_the_core_drops_surface_noise_and_keeps_values() -> None:
    f = facts_of(normalize("🚨 FED sets TWO billion dlr repurchase, via @wire #markets ?utm_x=1"))
    assert f.core == "fed sets 2 billion dlr repurchase"
    assert f.numbers == ("2",) and f.numerals == ("two",)
    assert f.words == ("fed", "sets", "billion", "dlr", "repurchase")


def test_chinese_numerals_read_as_values_and_units_as_words() -> None:
    f = facts_of(normalize("沪市成交额三十五亿元，创十二个月新高"))
    assert f.numbers == ("35", "12")
    assert f.numerals == ("三十五", "十二")
    assert f.core == "沪市成交额 35 亿元创 12 个月新高"
    assert facts_of(normalize("沪市成交额35亿元，创12个月新高")).numbers == f.numbers


@pytest.mark.parametrize(
    ("earlier", "now", "expected"),
    [
        # template siblings: another fund, another amount
        (
            "<FRANKLIN CALIFORNIA TAX-FREE INCOME FUND> PAYOUT Mthly div 4.5 cts vs 4.5 cts prior",
            "<FRANKLIN FEDERAL TAX-FREE INCOME FUND> PAYOUT Mthly div 7.7 cts vs 7.7 cts prior",
            [
                Difference("number", "4.5 4.5", "7.7 7.7"),
                Difference("word", "california", "federal"),
            ],
        ),
        (
            "FED SETS 1.5 BILLION DLR CUSTOMER REPURCHASE",
            "FED SETS TWO BILLION DLR CUSTOMER REPURCHASE",
            [Difference("number", "1.5", "two")],
        ),
        ("GOLD FIXED ON JAN 5", "GOLD FIXED ON FEB 5", [Difference("word", "jan", "feb")]),
        (
            "华新水泥股价收涨2.35%",
            "东方航运股价收涨2.35%",
            [Difference("word", "华新水泥", "东方航运")],
        ),
        ("沪市成交额35亿元", "深市成交额35亿元", [Difference("word", "沪", "深")]),
        ("央行开展500亿元逆回购", "央行开展五百亿元逆回购", []),  # 500 and 五百 are one value
        ("SHIPMENTS OF 1,750 TONNES", "shipments of 1750 tonnes.", []),
        ("DIV 4.50 CTS", "DIV 4.5 CTS", []),
        # surface noise: a typo, a typo of a stop word, a dropped stop word, a tracking suffix
        ("KELSO MOTORS RAISES DIVIDEND", "KELSO MOTORS RIASES DIVIDEND", []),
        ("ORDER FROM JARROW TEXTILES", "ORDER FRMO JARROW TEXTILES", []),
        ("TO BUY BACK UP TO 5 MLN OF ITS SHARES", "TO BUY BACK UP TO 5 MLN ITS SHARES", []),
        ("华新水泥分红方案公布", "华新水泥分红方案公布 | read more 📈", []),
        ("华新水泥将于3月5日分红", "华新水泥于3月5日红分", []),  # a swapped pair: a typo
    ],
)
def test_differences(earlier: str, now: str, expected: list[Difference]) -> None:
    assert _diffs(earlier, now) == expected


def test_a_typo_allowance_is_one_per_ten_words() -> None:
    five = "ALDER MINING RAISES QUARTERLY DIVIDEND"
    assert _diffs(five, "ALDER MINING RIASES QUARTERLY DIVIDEND") == []
    two_typos = "ALDER MINNIG RIASES QUARTERLY DIVIDEND"
    assert _diffs(five, two_typos) == [Difference("word", "mining raises", "minnig riases")]


def test_a_letter_changed_in_a_short_word_is_another_word_a_swap_is_a_typo() -> None:
    assert _diffs("BANK OF ITALY CUTS", "BANK OF ITALY PUTS") == [
        Difference("word", "cuts", "puts")
    ]
    assert _diffs("BANK OF ITALY CUTS", "BANK OF ITALY CTUS") == []
    assert _diffs("NORCROSS OIL RAISES", "NORCROSS OIL RAISED") == []  # six letters: a typo


def test_relaxed_numbers_let_a_number_differ_but_not_a_word() -> None:
    a, b = "Call 555-0101 now for cheap pills", "Call 555-0199 now for cheap pills"
    assert _diffs(a, b) == [Difference("number", "0101", "0199")]
    assert _diffs(a, b, numbers=False) == []
    assert _diffs(a, "Call 555-0199 now for cheap loans", numbers=False) == [
        Difference("word", "pills", "loans")
    ]


def test_numbers_of_a_long_text() -> None:
    text = "Toll rose to 1,204 on 3月5日; zq3x is a word, Q3 too, 12.50 pct, ４２ fullwidth"
    assert numbers_of(text) == ("1204", "3", "5", "12.5", "42")
    assert numbers_of("Arrange TWO billion, one of them") == ("2", "1")  # number words too
    assert len(numbers_of(" ".join(["7"] * 300))) == 256


def _numbers_plainly(text: str, limit: int = 256) -> tuple[str, ...]:
    """:func:`numbers_of` written plainly: every Latin word looked up, every numeral cleaned."""
    out = []
    for tok in re.findall(r"(?<![A-Za-z\d])(?:\d+(?:[.,]\d+)*|[A-Za-z]+)(?![A-Za-z\d])", text):
        if tok[0].isdigit():
            tok = unicodedata.normalize("NFKC", tok)
            if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", tok):
                tok = tok.replace(",", "")
            if re.fullmatch(r"\d+\.\d+", tok):
                tok = tok.rstrip("0").rstrip(".")
            out.append((tok.lstrip("0") or "0") if tok.isdigit() else tok)
        elif (value := _NUMBER_WORDS.get(tok.lower())) is not None:
            out.append(str(value))
    return tuple(out[:limit])


_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
_TEENS = "fifteen sixteen seventeen eighteen nineteen twenty"
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
_NUMBER_WORDS = (
    {w: i for i, w in enumerate(f"{_UNITS} {_TEENS}".split())}
    | _TENS
    | {"ninety": 90, "hundred": 100, "thousand": 1000}
)


@given(
    st.lists(
        st.sampled_from(["1,750", "4.50", "007", "0", "12.5.6", "3,5", "\uff14\uff12", "\u0663",
                         "One", "sEVENTEEN", "seventeens", "oneself", "thousand", "Tenth",
                         "q3x", "x", "3x", "the", "-", ",", ".", " ", "\u6708", "\u017fix"]),
        max_size=30,
    ).map("".join),
    st.integers(1, 5),
)  # fmt: skip
def test_numbers_of_follows_the_plain_rule(text: str, limit: int) -> None:
    """Looking up only words that can be number words (by first letter and length), and the
    fast path for plain digits, find what looking up every word finds."""
    assert numbers_of(text, limit) == _numbers_plainly(text, limit)


# --------------------------------------------------------------------------- properties

_WORD = st.text(string.ascii_lowercase, min_size=4, max_size=9)
_NUMBER = st.integers(0, 10**6).map(str)
_TOKENS = st.lists(st.one_of(_WORD, _NUMBER), min_size=1, max_size=20)
_NOISE = st.sampled_from(["📈", "#markets", "(via @wire)", "?utm_source=x", "!!", " , ", "---"])


@given(st.text(max_size=80))
def test_a_text_says_what_it_says(text: str) -> None:
    f = facts_of(normalize(text))
    assert differences(f, f) == []


@given(_TOKENS, st.lists(st.tuples(st.integers(0, 20), _NOISE), max_size=4), st.booleans())
def test_surface_noise_never_changes_the_facts(
    tokens: list[str], noise: list[tuple[int, str]], upper: bool
) -> None:
    noisy = list(tokens)
    for at, mark in sorted(noise, reverse=True):
        noisy.insert(min(at, len(noisy)), mark)
    text, other = " ".join(tokens), " ".join(noisy)
    other = other.upper() if upper else other
    a, b = facts_of(normalize(text)), facts_of(normalize(other))
    assert (a.numbers, a.words, a.core) == (b.numbers, b.words, b.core)
    assert differences(a, b) == [] == differences(b, a)


@given(_TOKENS, st.integers(0, 19), st.integers(0, 10**6))
def test_a_changed_number_always_shows(tokens: list[str], at: int, value: int) -> None:
    tokens = [*tokens, "0"]  # at least one number
    nums = [i for i, t in enumerate(tokens) if t.isdigit()]
    i = nums[at % len(nums)]
    if int(tokens[i]) == value:
        value += 1
    changed = [*tokens[:i], str(value), *tokens[i + 1 :]]
    found = _diffs(" ".join(tokens), " ".join(changed))
    assert found and {d.kind for d in found} == {"number"}
    assert _diffs(" ".join(tokens), " ".join(changed), numbers=False) == []


# --------------------------------------------------------------------------- edges, punctuation
# issue 21 item 2: words that carry no fact added at an edge, punctuation inside and between
# words, line breaks: still a copy; a number, amount, date, name or word substituted: a change

BAKER = "U.S. TREASURY'S BAKER SAYS PARIS PACT ONLY A START TO GREATER COOPERATION"
TOKYO = "TOKYO DEALERS SEE DOLLAR POISED TO BREACH 140 YEN"


@pytest.mark.parametrize(
    "now",
    [
        f"{TOKYO} (via newswire)",  # an attribution tag appended
        f"{TOKYO} Reuter - Reuters",
        f"Reuters - {TOKYO}",  # ... or put in front
        f"By John Smith, AFP: {TOKYO}",  # a byline
        f"{TOKYO} (Reporting by Jane Doe; Editing by Tom Brown)",
        f"{TOKYO} #forex https://reut.rs/3xYz9Q 📉",
        "TOKYO\nDEALERS  SEE DOLLAR\n  POISED TO   BREACH\n140 YEN  - Reuters",  # re-broken + tag
        "Tokyo dealers see dollar poised to breach 140 yen.",
        "TOKYO DEALERS SEE DOLLAR POISDE TO BREACH 140 YEN",  # a typo
    ],
)
def test_words_added_at_an_edge_are_noise(now: str) -> None:
    assert _diffs(TOKYO, now) == [] == _diffs(now, TOKYO)


@pytest.mark.parametrize(
    "now",
    [
        "US TREASURYS BAKER SAYS PARIS PACT ONLY A START TO GREATER COOPERATION",
        "U S TREASURY S BAKER SAYS PARIS PACT ONLY A START TO GREATER COOPERATION",
        "U.S. TREASURY'S BAKER SAYS PARIS-PACT ONLY A START TO GREATER CO-OPERATION",
        "U.S. TREASURY’S BAKER SAYS: PARIS PACT ONLY A START, TO GREATER COOPERATION",
    ],
)
def test_punctuation_inside_and_between_words_is_noise(now: str) -> None:
    assert _diffs(BAKER, now) == [] == _diffs(now, BAKER)


def test_a_word_is_one_word_however_it_is_dotted() -> None:
    assert facts_of(normalize(BAKER)).words[:3] == ("us", "treasurys", "baker")
    assert facts_of(normalize("TAX-FREE FUND")).words == ("taxfree", "fund")
    # a number spelt with hyphens stays a number, and so does one in a word made with hyphens
    assert facts_of(normalize("twenty-five")).numbers == ("20", "5")
    assert facts_of(normalize("TWO-FOR-ONE SPLIT")).numbers == ("2", "1")
    two, digits = facts_of(normalize("TWO-FOR-ONE SPLIT")), facts_of(normalize("2-for-1 split"))
    assert (two.core, two.words) == (digits.core, digits.words) == ("2 1 split", ("split",))


@pytest.mark.parametrize(
    ("earlier", "now"),
    [
        # hyphens dropped, turned into spaces, or the words run together: the same words
        ("ACME SETS TWO-FOR-ONE SPLIT", "ACME SETS TWO FOR ONE SPLIT"),
        ("ACME SETS TWO-FOR-ONE SPLIT", "ACME SETS TWOFORONE SPLIT"),
        ("ACME SETS TWO FOR ONE SPLIT", "ACME SETS TWOFORONE SPLIT"),
        ("ACME SETS 2-FOR-1 SPLIT", "ACME SETS TWO-FOR-ONE SPLIT"),
        ("ONE-DAY STRIKE CALLED AT PORT", "ONEDAY STRIKE CALLED AT PORT"),
        ("THREE-FOR-TWO SPLIT SET", "three-fortwo split set"),
        ("UNION CALLS A TWENTY-FOUR HOUR STRIKE", "UNION CALLS A TWENTYFOUR HOUR STRIKE"),
    ],
)
def test_words_run_together_or_apart_are_the_same_words(earlier: str, now: str) -> None:
    assert _diffs(earlier, now) == [] == _diffs(now, earlier)


@pytest.mark.parametrize(
    ("earlier", "now", "expected"),
    [
        ("ACME SETS TWO-FOR-ONE SPLIT", "ACME SETS THREE FOR ONE SPLIT", ("two", "three")),
        ("ACME SETS 2-FOR-1 SPLIT", "ACME SETS 3-FOR-1 SPLIT", ("2", "3")),
        # run together, the word spells no run of the other's: its numbers are not read
        ("ACME SETS TWOFORONE SPLIT", "ACME SETS THREE FOR ONE SPLIT", (None, "three one")),
    ],
)
def test_a_number_changed_inside_a_word_run_together_is_a_change(
    earlier: str, now: str, expected: tuple[str | None, str]
) -> None:
    numbers = [(d.earlier, d.now) for d in _diffs(earlier, now) if d.kind == "number"]
    assert numbers == [expected]


def test_the_cores_compared_leave_the_edge_words_out() -> None:
    c = compare(facts_of(normalize(TOKYO)), facts_of(normalize(f"{TOKYO} Reuter - Reuters")))
    assert c == Comparison((), "tokyo dealers see dollar poised breach 140 yen", c.earlier)


_LONDON = TOKYO.replace("TOKYO", "LONDON")


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        # a number, an amount substituted
        (TOKYO.replace("140", "150"), [Difference("number", "140", "150")]),
        (TOKYO.replace("YEN", "MARKS"), [Difference("word", "yen", "marks")]),
        # a name or a word substituted, at the start, inside, with a tag besides
        (_LONDON, [Difference("word", "tokyo", "london")]),
        (TOKYO.replace("DOLLAR", "STERLING"), [Difference("word", "dollar", "sterling")]),
        (
            f"{_LONDON} - Reuters",
            [Difference("word", "tokyo", "london"), Difference("word", None, "reuters")],
        ),
        (f"{TOKYO} 2 - Reuters", [Difference("number", None, "2")]),  # a number is never a tag
    ],
)
def test_a_substitution_is_a_change_even_beside_noise(now: str, expected: list[Difference]) -> None:
    assert _diffs(TOKYO, now) == expected


def test_dates_substituted_are_changes() -> None:
    a = "TREASURY BALANCES AT FED ROSE ON MARCH 12"
    assert _diffs(a, "TREASURY BALANCES AT FED ROSE ON MARCH 23") == [
        Difference("number", "12", "23")
    ]
    assert _diffs(a, "TREASURY BALANCES AT FED ROSE ON APRIL 12 (via newswire)") == [
        Difference("word", "march", "april newswire")  # the words in order: 12 is a number
    ]


def test_edge_words_are_bounded_and_never_replace_an_edge_word() -> None:
    # a word replacing the last one (and a tag), the same edge of both: a substitution
    assert _diffs("KELSO MOTORS RAISES DIVIDEND", "KELSO MOTORS RAISES PAYOUT - Reuters") != []
    # more than eight words added to a short brief: not noise
    many = "GOLD PRICES RISE SHARPLY (Reporting by Jane Doe; Editing by Tom Brown; Ana Li Chen)"
    assert _diffs("GOLD PRICES RISE SHARPLY", many) != []


_REAL_BRIEFS = (  # not TOKYO: a tag "Tokyo dealers" beside a typo in its TOKYO is a known miss
    BAKER,
    "CANADA 91-DAY T-BILLS AVERAGE 6.89 PCT, MAKING BANK RATE 7.14 PCT",
    "U.K. MONEY MARKET GIVEN FURTHER 437 MLN STG HELP",
    "FED SETS 1.5 BILLION DLR CUSTOMER REPURCHASE, FED SAYS",
    "OWENS AND MINOR INC <OBOD> RAISES QTLY DIVIDEND",
)
_ONE_EDGE = ("tag end", "tag start", "byline", "via")  # words added at an edge: one of these
_ANYWHERE = ("hashtag", "link", "emoji", "punct out", "punct in", "punct between", "rebreak",
             "case", "typo")  # fmt: skip


@given(
    st.sampled_from(_REAL_BRIEFS),
    st.lists(st.sampled_from(_ANYWHERE), max_size=2, unique=True),
    st.sampled_from((None, *_ONE_EDGE)),
    st.integers(0, 2**32),
)
def test_surface_noise_never_changes_the_verdict_on_real_briefs(
    brief: str, families: list[str], edge: str | None, seed: int
) -> None:
    """Noise from the real-briefs generator (harness.noisy_briefs): the short-text judge calls
    the noisy brief a copy, both ways round."""
    plan = sorted(families, key=lambda f: f != "typo") + ([edge] if edge else [])
    noisy = noisy_briefs.noisy(random.Random(seed), brief, plan)
    if noisy is None:  # a family with nothing to change in this brief
        return
    for mine, theirs in ((noisy, brief), (brief, noisy)):
        judged = judge_short(Policy(), normalize(mine), normalize(theirs))
        assert judged is not None and judged[1], (mine, theirs)
        assert judged[0].changes == ()


def test_the_facts_cache_is_bounded_in_bytes_not_only_in_entries() -> None:
    """A text of few words can be long (one word of tens of KB): such texts are read, not
    kept, so a stranger's checks cannot grow the worker by what they send (it grew 2.6 MB a
    request with 65,536 entries of whole texts)."""
    from neardup.sketch import facts as module

    module._facts_cached.cache_clear()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(300):
            word = f"{i}" + "x" * 10_000
            assert facts_of(f"price {word} rises").numbers
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert module._facts_cached.cache_info().currsize == 0
    assert grown < 1_000_000, grown
    for i in range(3 * module.FACTS_CACHE_ENTRIES // 2):  # short texts: kept, so many at most
        facts_of(f"price {i} rises")
    assert module._facts_cached.cache_info().currsize == module.FACTS_CACHE_ENTRIES


# ---------------------------------------------------------------- punctuation taken out


def _stripped(text: str) -> str:
    """Every punctuation mark and symbol taken out, decimal points and thousands commas too."""
    return "".join(c for c in text if not unicodedata.category(c).startswith(("P", "S")))


GOODYEAR = (
    "GOODYEAR SETS 1.2 BILLION DLR BUYBACK\nGoodyear Tire and Rubber Co said it will buy "
    "back up to 1.2 billion dlrs of stock, about 8.5 pct."
)


def test_numbers_of_a_text_stripped_of_its_punctuation_are_the_same_numbers() -> None:
    """``1.2 BILLION`` read as ``12 BILLION`` because every mark was taken out: no change."""
    assert _diffs(GOODYEAR, _stripped(GOODYEAR)) == []
    assert _diffs(_stripped(GOODYEAR), GOODYEAR) == []


def test_a_digit_changed_in_a_stripped_text_is_still_a_change() -> None:
    assert _diffs(GOODYEAR, _stripped(GOODYEAR).replace("85 pct", "86 pct")) == [
        Difference("number", "8.5", "86")
    ]
    assert _diffs(GOODYEAR, _stripped(GOODYEAR).replace("about 85", "about 8")) == [
        Difference("number", "8.5", "8")
    ]


def test_a_headline_with_no_other_mark_reads_its_decimal_point() -> None:
    """Nothing shows that ``15`` lost a point: a template's next figure, as written."""
    fed = "FED SETS 1.5 BILLION DLR CUSTOMER REPURCHASE"
    assert _diffs(fed, fed.replace("1.5", "15")) == [Difference("number", "1.5", "15")]


@given(st.data())
def test_a_real_brief_stripped_of_its_punctuation_has_the_same_facts(data: st.DataObject) -> None:
    """Real short briefs with a number written with a point or a comma: taken out with every
    other mark, no number changes; one digit changed besides, that number changes."""
    pool = [t for t in noisy_briefs.briefs() if re.search(r"[A-Za-z][.,;:]", t)]
    pool = [t for t in pool if re.search(r"\d[.,]\d", t)]
    text = data.draw(st.sampled_from(pool))
    bare = _stripped(text)
    assert not [d for d in _diffs(text, bare) if d.kind == "number"], (text, bare)
    spots = [i for i, c in enumerate(bare) if c.isdigit()]
    i = data.draw(st.sampled_from(spots))
    changed = bare[:i] + str((int(bare[i]) + 1) % 10) + bare[i + 1 :]
    assert [d for d in _diffs(text, changed) if d.kind == "number"], (text, changed)
