"""Words hidden from a machine that a reader sees through (neardup.sketch.unhide,
neardup.sketch.escapes, the styled letters of the canonical tables): each is folded back to the
words it hides, and real text (Reuters stories, Chinese reviews) is left as it was."""

from __future__ import annotations

import json
import quopri
import random
import unicodedata
from functools import cache
from unittest.mock import patch

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness import data
from harness.disguises import _SYMBOL_TABLES, _spaced, _spaced_some, _symbol_leet
from neardup.sketch import escapes, unhide
from neardup.sketch.canonical import fold, fold_each
from neardup.sketch.features import normalize

STORY = (
    "The central bank raised its benchmark rate by a quarter point on Tuesday, citing "
    "persistent inflation in services and a tight labour market."
)
STORY_FOLDED = normalize(STORY)


@cache
def stories() -> list[str]:
    return [r["text"] for r in data.reuters()][:3000]


# --------------------------------------------------------------------------- styled letters


@pytest.mark.parametrize(
    ("styled", "plain"),
    [
        ("🅽🅴🅶🅰🆃🅸🆅🅴 🆂🆀🆄🅰🆁🅴🅳", "negative squared"),
        ("🅝🅔🅖🅐🅣🅘🅥🅔 🅒🅘🅡🅒🅛🅔🅓", "negative circled"),
        ("ᴄᴏᴘʏɪɴɢ ʀᴇꜰɪɴᴇʀꜱ ǫᴜɪᴄᴋ ꞯᴜɪᴄᴋ", "copying refiners ǫuick quick"),
        ("⒞⒪⒫⒴ 🄒🄞🄟🄨", "copy copy"),
        ("🇨\u200b🇴\u200b🇵\u200b🇾", "copy"),
        ("ᴬᴮᶜ ₐₑₒ ᶦ", "abc aeo i"),
        ("ᴧᴨ ᴫ", "λπ л"),
    ],
)
def test_styled_letters_fold_to_the_letter_their_name_names(styled: str, plain: str) -> None:
    assert normalize(styled) == normalize(plain)


def test_every_styled_letter_of_the_enclosed_and_small_capital_blocks_folds_to_ascii() -> None:
    for prefix in (
        "NEGATIVE CIRCLED LATIN CAPITAL LETTER",
        "NEGATIVE SQUARED LATIN CAPITAL LETTER",
        "SQUARED LATIN CAPITAL LETTER",
        "PARENTHESIZED LATIN SMALL LETTER",
        "PARENTHESIZED LATIN CAPITAL LETTER",
        "REGIONAL INDICATOR SYMBOL LETTER",
    ):
        for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
            assert fold(unicodedata.lookup(f"{prefix} {letter}")) == letter.lower(), prefix
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWYZ":  # no small capital X
        char = unicodedata.lookup(f"LATIN LETTER SMALL CAPITAL {letter}")
        assert fold(char) == letter.lower(), char


# --------------------------------------------------------------------------- spaced letters


@pytest.mark.parametrize(
    ("between", "words"),
    [(" ", "   "), ("  ", "     "), (".", " "), ("-", " "), ("\u2009", " "), ("_", " "),
     ("\u00a0", "   ")],
)  # fmt: skip
def test_spaced_letters_are_joined_into_their_words(between: str, words: str) -> None:
    spaced = _spaced(between, words)(random.Random(0), STORY)
    assert spaced.count(between) > 50
    assert normalize(spaced) == STORY_FOLDED


def test_spaced_words_are_looked_for_anywhere_in_the_text() -> None:
    assert normalize("C o p y i n g   i s   w r o n g.") == "copying is wrong."
    # the start written as words (a first sentence, a byline) does not hide what follows
    assert normalize("Stop c o p y i n g my h o m e w o r k.") == "stop copying my homework."
    lead = "Staff report: markets were calm today. "
    assert normalize(lead + _spaced(".", " ")(random.Random(0), STORY)) == normalize(lead + STORY)
    # a word of three letters or fewer beside a joined one is joined too, in a text where
    # spaced runs are a small share of the letters; an initialism keeps its points
    assert normalize(STORY + " " + STORY + " T.h.e b.a.n.k s.a.i.d.") == normalize(
        STORY + " " + STORY + " The bank said."
    )
    assert "c.o.m.b." in normalize(STORY + " It owns C.O.M.B. and T.E.A.M. stores.")
    # an initialism of two letters in a text spaced out with points is one as written
    headline = "ULTRAMAR SELLS U.K. MARKETING UNITS FOR 50 MLN STG"
    copy = _spaced(".", " ")(random.Random(0), headline)
    assert "U.K. M.A.R.K.E.T.I.N.G" in copy
    assert normalize(copy) == normalize(headline)


def test_a_copy_disguised_after_its_first_sentence_is_found() -> None:
    # the engine's verdict on a story whose leetspeak or spaced letters start after its lead
    from harness.disguises import disguise

    for name in ("leet_basic_later", "spaced_spaces_later", "leet_full_half", "spaced_dots_half"):
        story = next(s for s in stories() if len(s.split()) > 120 and disguise(name, s, 1) != s)
        copy = disguise(name, story, 1)
        assert copy[:60] == story[:60] or "half" in name
        assert fold(copy) == fold(story) or _share_same(fold(copy), fold(story)) > 0.95, name


def _share_same(a: str, b: str) -> float:
    x, y = a.split(), b.split()
    return sum(p == q for p, q in zip(x, y, strict=False)) / max(len(x), len(y))


def test_the_fast_path_looks_at_the_whole_text() -> None:
    story = stories()[0]
    assert unhide.plain(story)
    assert not unhide.plain(story + " Th3 r3f1n3r5.")  # a digit between letters, at the end
    assert not unhide.plain(story + " c o p y")  # four single letters, one space apart
    assert not unhide.plain(story + " c  o  p  y")  # or two
    assert unhide.plain(story + " a b c")  # three: a list


@pytest.mark.parametrize("tag", ["<a ", "<b>", "<i>", "</b>", "(a) ", "<a>"])
def test_letters_a_mark_and_a_space_apart_are_not_spaced_out(tag: str) -> None:
    # two apart is two spaces (c  o  p  y), not a tag's "<" and a space: such a text is plain,
    # and the search for spaced letters never runs over it
    story = stories()[0]
    assert unhide.plain(story + " " + tag * 40)
    assert not unhide._suspect("\u00e9 " + tag * 40)  # past ASCII too
    assert not unhide.plain(story + " " + tag * 40 + " c  o  p  y")  # two spaces still are
    assert unhide._suspect("\u00e9 " + tag * 40 + " c  o  p  y")


@pytest.mark.parametrize(
    "text",
    [
        "J. R. R. Tolkien wrote it in the U.S. and the U.K.",
        "Vitamins A, B and C; plan B or plan C.",
        "I think a b c d is the start of the alphabet.",
        "x y z x y z q",
        "a b c d a b c d",
    ],
)
def test_single_letters_of_real_text_are_not_joined(text: str) -> None:
    assert normalize(text) == " ".join(text.lower().split())


@pytest.mark.parametrize(
    "between", ["_", "\u00b7", "\u2022", "/", "|", "*", "~", "+", "\u2027", "\u30fb", "\u2e31"]
)
@pytest.mark.parametrize("seed", range(3))
def test_half_the_words_spaced_by_any_mark_or_symbol_are_joined(between: str, seed: int) -> None:
    text = STORY + "\nIt was the 1987 rise, the bank's third."
    spaced = _spaced_some(between)(random.Random(seed), text)
    assert spaced.count(between) > 20
    assert normalize(spaced) == normalize(text)


@pytest.mark.parametrize(
    ("spaced", "plain"),
    [
        ("the c_o_r_p_'_s s_h_a_r_e_s r_o_s_e 1_._5 p_c_t", "the corp's shares rose 1.5 pct"),
        ("l·o·s·s·e·s·\n·i·t h·a·d", "losses\nit had"),  # a line broke a spaced word
        ("c/a/t/s a/n/d///o/r d/o/g/s", "cats and/or dogs"),  # the word's own slash kept
        ("M-1 m-o-n-e-y s-u-p-p-l-y r-i-s-e-s", "m-1 money supply rises"),  # a code kept
    ],
)
def test_words_spaced_by_a_mark_join_with_their_digits_and_punctuation(
    spaced: str, plain: str
) -> None:
    assert normalize(spaced) == " ".join(plain.split())


@pytest.mark.parametrize(
    "text",
    [
        "The U.K. and U.S. units of C.O.M.B. Co, a/b testing and/or 1-2-3 counts, R&D, S&P",
        "Shares of A/S Eksportfinans rose; scores 6-3 6-4 7-5 in the T-bill",
        "It is a_b and c_d, x|y|z, the A-1 and B-2 units",
    ],
)
def test_marks_between_letters_of_real_text_are_kept(text: str) -> None:
    assert normalize(text) == " ".join(text.lower().split())


def test_reuters_stories_keep_their_words_but_a_few_spaced_abbreviations() -> None:
    changed = [s for s in stories() if unhide.join_spaced(s) != s]
    assert len(changed) <= 3, changed  # C.O.M.B. and T.E.A.M.: runs of four letters


# --------------------------------------------------------------------------- leetspeak


@pytest.mark.parametrize(
    ("leet", "plain"),
    [
        ("r3f1n3r5 h4ck3r 5ecur1ty", "refiners hacker security"),
        ("7h3 c3n7r4l b4nk r4153d i75 k3y r473 by h4lf a p01n7", "the central bank raised its "
         "key rate by half a point"),
        # a word wholly of digits is a number to a machine: 175 may be 'its' or 175
        ("7h3 c3n7r4l b4nk r4153d 175 k3y r473 by h4lf 4 p01n7", "the central bank raised 175 "
         "key rate by half 4 point"),
        ("w4ll 57r337 5p3c14l", "wall street special"),
    ],
)  # fmt: skip
def test_leetspeak_reads_as_letters(leet: str, plain: str) -> None:
    assert normalize(leet) == plain


@pytest.mark.parametrize(
    ("leet", "plain"),
    [
        # an ordinal keeps its number, its suffix is read (4TH QTR as 47H Q7R)
        ("FHLMC <FR3PR> 47H Q7R N37", "fhlmc <frepr> 4th qtr net"),
        ("V1C0RP R3574UR4N75 1NC 1S7 Q7R F3B 15 N37", "vicorp restaurants inc 1st qtr feb 15 net"),
        # a number standing alone stays a number (not 'so', 'ieo', 'i', 'll')
        ("UN0C4L R4153D CRUD3 01L P0571NG5 BY 50 C75/BBL", "unocal raised crude oil postings by "
         "50 cts/bbl"),
        ("3C 4U7H0R1535 3XP0R7 M4X1MUM R3B473 130 3CU5/70NN3", "ec authorises export maximum "
         "rebate 130 ecus/tonne"),
        ("4LL15-CH4LM3R5 C0RP F1L3D CH4P73R 11 B4NKRUP7CY", "allis-chalmers corp filed chapter 11 "
         "bankruptcy"),
        # words of two letters count too, and numbers do not (a table with leetspeak labels)
        ("U5D4 3571M4735 1986/87 U55R GR41N 1MP0R75 26.0 MLN 70NN35 V5 23.0 1N F3B, 29.9 1N 1985",
         "usda estimates 1986/87 ussr grain imports 26.0 mln tonnes vs 23.0 in feb, 29.9 in 1985"),
        ("73X45 U71L17135 C0 <7XU> 12 M7H5 F3B 28 N37", "texas utilities co <txu> 12 mths feb 28 "
         "net"),
        # one sentence written so in a story that is not
        (STORY + " " + STORY + " Th3 b4nk 54id i7 w0uld r4153 r4735 4g41n.", STORY_FOLDED + " "
         + STORY_FOLDED + " the bank said it would raise rates again."),
    ],
)  # fmt: skip
def test_leetspeak_of_headlines_and_tables_keeps_the_numbers(leet: str, plain: str) -> None:
    assert normalize(leet) == plain


@pytest.mark.parametrize("table", sorted(_SYMBOL_TABLES))
@pytest.mark.parametrize("seed", range(3))
def test_leetspeak_symbols_read_as_letters(table: str, seed: int) -> None:
    leet = _symbol_leet(table)(random.Random(seed), STORY)
    assert leet != STORY
    assert normalize(leet) == STORY_FOLDED


@pytest.mark.parametrize(
    ("leet", "plain"),
    [
        ("h@ck3r$ g0t pers!$tent @ccess", "hackers got persistent access"),
        # a symbol between single letters of a longer word is no spacing
        ("m!n!m!z!ng l0$$es, th3 b@nk $aid", "minimizing losses, the bank said"),
        ("B@HI@ (OCO@ REV!EW: $hower$ (on+inued +hroughout the w33k, Sm!7h $@id",
         "bahia cocoa review: showers continued throughout the week, smith said"),
        ("th3 c€ntr@l b@nk r@i$€d r@t€$ £@st w€€k", "the central bank raised rates last week"),
        ("th3 b@nk $aid: wr!+e to n3ws@example.com (or call)",
         "the bank said: write to n3ws@example.com (or call)"),  # an address kept
        ("In the 1960s th3 b@nk $aid !t w0uld r@ise r@tes", "in the 1960s the bank said it would "
         "raise rates"),  # a decade kept
    ],
)  # fmt: skip
def test_leetspeak_symbols_examples(leet: str, plain: str) -> None:
    assert normalize(leet) == plain


@pytest.mark.parametrize(
    "text",
    [
        "Write to jane.doe@example.com or a@b.com; AT&T paid $5 for C++ at Yahoo! and don't",
        "The fund (A$50 mln) rose 5+ pct, HK$2 and US$3; say 'hi!' to @jane about $AAPL",
        "x+y=z, a|b|c, if (a) then b! Notepad++ and C# and F# or R&D",
    ],
)
def test_symbols_of_real_text_are_kept(text: str) -> None:
    assert normalize(text) == " ".join(text.lower().split())


@pytest.mark.parametrize(
    "text",
    [
        "Airbus A320 and A320neo orders, COVID19 cases, 3D printers, mp3 players",
        "The 2nd and 3rd quarters, 4th qtr, 21st century, at 10am, B2B sales, H5N1 and H1N1",
        "Q3 net profit 541 mln dlrs vs 247 mln, 1.5 pct, 10-30 years, F16s, DC10s",
        "H5N1 and B2B",
        "Blocks Q4a, E12c and E15b were offered, A1C tests",
    ],
)
def test_real_alphanumerics_are_kept(text: str) -> None:
    assert normalize(text) == " ".join(text.lower().split())


def test_reuters_tokens_with_digits_barely_change() -> None:
    # tokens of letters and digits in 3,000 stories; the ones read as leetspeak are misspellings
    # (horiz0n) or rare codes
    changed = {
        (w, r)
        for s in stories()
        for w, r in zip(s.lower().split(), unhide.read_leet(s.lower()).split(), strict=True)
        if w != r
    }
    assert len(changed) <= 1, changed


# --------------------------------------------------------------------------- escapes


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("quoted", [True, False])
def test_a_story_sent_as_a_json_literal_reads_as_the_story(ascii_only: bool, quoted: bool) -> None:
    text = 'He said: "caf\u00e9 \u4e2d\u6587"\nand left\tat 5/6.\n' + STORY
    literal = json.dumps(text, ensure_ascii=ascii_only)
    assert escapes.unescape(literal if quoted else literal[1:-1]) == text
    assert normalize(literal) == normalize(text)


def test_a_quoted_printable_body_reads_as_the_text() -> None:
    text = ("Caf\u00e9 prices = 3 pct higher; " + STORY + " ") * 3
    body = quopri.encodestring(text.encode("utf-8")).decode("ascii")
    assert "=\n" in body and "=C3=A9" in body and "=3D" in body
    assert escapes.unescape(body) == text
    assert escapes.unescape(body.replace("\n", "\r\n")) == text.replace("\n", "\r\n")
    assert escapes.unescape("called Carmike S=\nix in Milledgeville") == (
        "called Carmike Six in Milledgeville"
    )


@pytest.mark.parametrize(
    "text",
    [
        "C:\\temp\\new files",  # a path: its \\t and \\n are no escapes
        "E=MC2 and x = 3",
        "a=b",
        'She wrote "\\n" to mean a new line, C:\\Users\\x',
        "1+1=2\n",
        "Other effective rates were =\n Australian dlr   55.7",
    ],
)
def test_text_that_only_looks_escaped_is_left_as_it_is(text: str) -> None:
    assert escapes.unescape(text) == text


def test_no_reuters_story_reads_as_escaped() -> None:
    assert [s for s in stories() if escapes.unescape(s) != s] == []


# --------------------------------------------------------------------------- invisible spaces


@pytest.mark.parametrize(
    "blank", ["\u3164", "\uffa0", "\u115f", "\u2800", "\u180e", "\u200b", "\u2060", "\ufeff"]
)
def test_an_invisible_character_for_every_space_is_a_space(blank: str) -> None:
    assert normalize(STORY.replace(" ", blank)) == STORY_FOLDED


@pytest.mark.parametrize("invisible", ["\u200b", "\u200c", "\u200d", "\u2060", "\u180e", "\u3164"])
def test_an_invisible_character_inside_words_still_joins(invisible: str) -> None:
    every_word = " ".join(w[:1] + invisible + w[1:] for w in STORY.split())
    every_letter = " ".join(invisible.join(w) for w in STORY.split())
    assert normalize(every_word) == normalize(every_letter) == STORY_FOLDED
    assert normalize("wo\u200brd") == "word"


def test_chinese_text_is_not_spaced() -> None:
    text = "这款手机很好用，电池也耐用，iPhone比不上。"
    assert normalize("\u200b".join(text)) == normalize(text)


_GAPS = ["\u200b", "\u3164", "\u2060\u200b", "\u115f", "\u00ad", "\u2800", "\ufeff"]
_WORDS = ["word", "abc", "de", "\u5b57\u5b57", "\u0436", "e\u0301", "x.", "1", "a\u200bb"]
_WORDS += [" ", "\n"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_GAPS), st.lists(st.sampled_from(_WORDS), max_size=40)),
        min_size=1,
        max_size=4,
    )
)
def test_invisible_spaces_read_at_once_are_the_rule_gap_by_gap(
    parts: list[tuple[str, list[str]]],
) -> None:
    texts = [gap.join(words) for gap, words in parts]
    want = [unhide._invisible_spaces_alone(t) for t in texts]
    assert unhide._invisible_spaces_at_once(texts, "\n".join(texts)) == want
    assert unhide.invisible_spaces_each(texts) == want
    assert [unhide.invisible_spaces(t) for t in texts] == want


def test_invisible_spaces_of_a_line_each_are_each_line_alone() -> None:
    lines = ["word\u3164" * 12, "w\u200bo\u200br\u200bd " * 9, "\u5b57\u200b\u5b57", "", "ab"]
    lines += ["\u3164".join(["word"] * 3) + "\U0001d400\u3164\U0001d400 x"]
    assert unhide.invisible_spaces_each(lines) == [unhide._invisible_spaces_alone(t) for t in lines]
    assert unhide._invisible_spaces_at_once(
        lines, "\n".join(lines)
    ) == unhide.invisible_spaces_each(lines)
    assert unhide.invisible_spaces_each(lines)[0] == "word " * 12  # the last one too


# --------------------------------------------------------------------------- overrides


@pytest.mark.parametrize(
    "wrap",
    [
        lambda line: "\u202e" + line[::-1] + "\u202c",
        lambda line: "\u202e" + line[::-1],
        lambda line: "\u2067\u202e" + line[::-1] + "\u202c\u2069",
    ],
)
def test_lines_written_backwards_in_an_override_read_forwards(wrap: object) -> None:
    lines = [STORY[:60], STORY[60:]]
    text = "\n".join(wrap(line) for line in lines)  # type: ignore[operator]
    assert normalize(text) == normalize("\n".join(lines))


def test_marks_stay_on_their_letters_when_reversed() -> None:
    assert fold("\u202e" + "e\u0301fac" + "\u202c") == fold("cafe\u0301")


def test_right_to_left_letters_in_an_override_keep_their_order() -> None:
    hebrew = "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd"
    assert fold("\u202e" + hebrew + "\u202c") == fold(hebrew)


# --------------------------------------------------------------------------- the form


def test_real_chinese_reviews_are_left_as_they_were() -> None:
    reviews = [r["text"] for r in data.zh_reviews()][:2000]
    assert [r for r in reviews if unhide.unhide(r) != r] == []


_PIECES = st.sampled_from(
    ["a", "B", " ", "  ", ".", "-", "3", "0", "1", "\u200b", "\u3164", "\u202e", "\u202c",
     "\\", "\\n", "\\u00e9", '"', "=", "=\n", "=C3=A9", "\n", "é", "Ⓐ", "🅐", "ᴀ", "h4ck3r"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_the_form_is_idempotent_and_the_same_one_text_at_a_time(text: str) -> None:
    once = fold(text)
    assert fold(once) == once
    assert fold_each([text, "x"]) == [once, "x"]


_SHAPED = st.text(
    alphabet=st.sampled_from(
        list(
            "abcxyzAB019 .,-|@$!+(?_\n\t\u00b7\u2014\u2019\u00e9\u0436\u5b57\u20ac\u200b"
            "\u00a0\u2009\u2022\u0301\ufdfa\u00a1\x00"
        )
    ),
    max_size=24,
)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_SHAPED, max_size=6))
def test_disguises_looked_for_in_many_texts_at_once_are_those_of_each(texts: list[str]) -> None:
    # one pass over all of a text's lines must find every line a pass over it alone finds
    assert unhide._suspects(texts) == [unhide._suspect(t) for t in texts]
    assert {i for i, t in enumerate(texts) if unhide._suspect(t)} <= unhide._maybe_suspect(texts)
    assert unhide.unhide_each(texts) == [unhide.unhide(t) for t in texts]
    assert unhide.unhide_folded_each(texts) == [unhide.unhide_folded(t) for t in texts]


# lines whose characters past ASCII are no punctuation nor symbol (zero-width characters,
# letters, marks, spaces), which one pass decides, among ASCII lines and lines of marks
_UNMARKED = st.lists(
    st.sampled_from(
        [
            *"abxzAB019 .-|@$!?_\t\u200b\u2060\u00e9\u0436\u5b57\u0301\u00a0\u2009\u3164",
            *("w\u200bo\u200br\u200bd", "\u0399x", "  ", "c o p y", "a  b  c  d", "h4ck"),
        ]
    ),
    max_size=16,
).map("".join)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(_UNMARKED, _UNMARKED.map(str.lower), _SHAPED), max_size=12))
@example(["a b c\u2014d", "\u00e9"])  # a dash: looked at as ASCII, no run
@example(["\u00e9 a. b. c. d", "\u00e9"])  # two apart, not two spaces apart: no run
def test_lines_past_ascii_without_marks_are_decided_by_one_pass(texts: list[str]) -> None:
    ascii_only = [t.encode("ascii", "replace").decode() for t in texts]
    each = [unhide._suspect(t) for t in texts]
    assert unhide._suspects(texts) == each
    # the pass decides however few texts it flags, however few ASCII texts there are
    with patch.object(unhide, "LOOKED_ALONE", 0), patch.object(unhide, "ASCII_AT_ONCE", 0):
        assert unhide._suspects(texts) == each
        assert unhide._suspects(ascii_only) == [unhide._suspect(t) for t in ascii_only]


@pytest.mark.parametrize(
    ("line", "expected"),
    [("w\u200bo\u200br\u200bd{}", True), ("\u0399x{}", False), ("ix{}", False)],
)
def test_many_short_lines_are_decided_without_a_look_at_each(
    monkeypatch: pytest.MonkeyPatch, line: str, expected: bool
) -> None:
    # a look at each line cost a text of short lines of zero-width words 3.5x news per KB
    lines = [line.format(i) for i in range(1000)]
    assert unhide._suspects(lines) == [expected] * 1000  # as each alone
    looked: list[str] = []
    for name in ("_suspect", "_ascii_suspect"):
        alone = getattr(unhide, name)
        monkeypatch.setattr(unhide, name, lambda t, alone=alone: looked.append(t) or alone(t))
    assert unhide._suspects(lines) == [expected] * 1000
    assert looked == []


_RUN_PIECES = ["a", "B", "U", "K", "\u0436", "e\u0301", "1", " ", "  ", ".", "-", "<", "_", "@",
               "!", "\u00b7", "\u2009", "\x00", "\n", ",", "ab", "word"]  # fmt: skip
_RUNS = st.lists(st.sampled_from(_RUN_PIECES), max_size=40).map("".join)


@settings(max_examples=3000, deadline=None)
@given(_RUNS)
def test_spaced_letters_found_by_one_split_are_joined_as_run_by_run(text: str) -> None:
    # the split's runs are the matches' runs: the text is joined as reading them one by one
    assert unhide.join_spaced(text) == unhide._join_runs(text)


@pytest.mark.parametrize("unit", ["<a x", "a-b ", "a<b ", "U.K. a.b ", "c o p y ", "A.B. "])
def test_a_text_of_short_runs_is_joined_as_run_by_run(unit: str) -> None:
    text = unit * 500
    assert unhide.join_spaced(text) == unhide._join_runs(text)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from([p for p in _RUN_PIECES if p.isascii()]), max_size=40).map("".join))
def test_spaced_letters_of_an_ascii_text_are_found_as_in_any(text: str) -> None:
    # an ASCII text is searched without the classes of marks and invisible characters
    assert unhide.join_spaced(text) == unhide._join_runs(text)
