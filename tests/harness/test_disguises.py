"""The disguise registry (harness.disguises): every disguise changes a text it is meant for, the
same seed gives the same text, and a reader would see the same text (what it adds is invisible,
a look-alike, markup, or a form of the same character)."""

from __future__ import annotations

import html
import json
import quopri
import re
import unicodedata
from functools import cache

import pytest

from harness import data
from harness.disguises import DISGUISES, FAMILIES, applies, disguise, names
from neardup.sketch.features import tokenize
from neardup.sketch.markup import html_text


@cache
def english() -> str:
    """A real Reuters story with everything a disguise works on: both cases, digits, line
    breaks and punctuation."""
    return next(
        r["text"]
        for r in data.reuters()
        if len(tokenize(r["text"])) >= 150
        and all(c in r["text"] for c in "\n',-./")
        and any(c.isdigit() for c in r["text"])
    )


@cache
def chinese() -> str:
    """Real Chinese reviews joined by line breaks, 200 characters or more, one of them with a
    digit and a space."""
    pool = [
        t
        for t in dict.fromkeys(r["text"].strip() for r in data.zh_reviews())
        if 30 <= len(tokenize(t)) <= 100 and "&" not in t and "<" not in t
    ]
    first = next(t for t in pool if " " in t and any(c.isdigit() for c in t))
    out = [first]
    for t in pool:
        if len("\n".join(out)) >= 200:
            break
        if t != first:
            out.append(t)
    return "\n".join(out)


def text_for(lang: str) -> str:
    return english() if lang == "en" else chinese()


CASES = [(name, lang) for name, d in DISGUISES.items() for lang in sorted(d.langs)]


def test_the_registry_is_grouped_in_families_and_wider_than_the_issue() -> None:
    assert len(DISGUISES) >= 50
    assert set(FAMILIES) == {
        "invisible", "lookalike", "marks", "html", "width", "spaces", "digits", "punctuation",
        "chinese", "styled", "spaced", "leet", "escaped", "invisible_space", "reversed", "combo",
    }  # fmt: skip
    for fam in FAMILIES:
        assert [d for d in DISGUISES.values() if d.family == fam]
    assert all(d.name == name and d.note for name, d in DISGUISES.items())
    assert names("zh") and names("en") and set(names(long=False)) < set(names())
    assert {n for n in names() if DISGUISES[n].long_only} == {
        "html_page",
        "combo_uts39_shy_page",
        "combo_zh_hk_page",
    }


@pytest.mark.parametrize(("name", "lang"), CASES)
def test_every_disguise_changes_the_text(name: str, lang: str) -> None:
    text = text_for(lang)
    assert applies(name, text)
    assert disguise(name, text, 1) != text


@pytest.mark.parametrize(("name", "lang"), CASES)
def test_a_disguise_is_deterministic_for_a_seed(name: str, lang: str) -> None:
    text = text_for(lang)
    assert disguise(name, text, 5) == disguise(name, text, 5)


def test_seeds_differ_where_a_disguise_draws_at_random() -> None:
    text = english()
    for name in ("zwnj_some", "cyrillic_some", "uts39_any", "zalgo", "html_inline", "math_mixed"):
        assert disguise(name, text, 1) != disguise(name, text, 2), name


_INVISIBLE_CATEGORIES = ("Cf", "Mn", "Me")


@pytest.mark.parametrize("name", [n for n, d in DISGUISES.items() if d.family == "invisible"])
def test_invisible_disguises_add_only_invisible_characters(name: str) -> None:
    text = english()
    copy = disguise(name, text, 3)
    kept = "".join(
        c
        for c in copy
        if unicodedata.category(c) not in _INVISIBLE_CATEGORIES and c not in "\u115f\u180e"
    )
    assert kept == text


@pytest.mark.parametrize("name", [n for n, d in DISGUISES.items() if d.family == "html"])
def test_html_disguises_show_the_same_text_in_a_browser(name: str) -> None:
    text = english()
    copy = disguise(name, text, 3)
    if name in ("html_decimal", "html_hex", "html_named"):
        shown = html.unescape(copy)  # references in plain text
    else:
        shown = html_text(copy)
    words = " ".join(text.split())
    if name == "html_page":
        assert words in " ".join(shown.replace("\xa0", " ").split())  # with nav and footer
        assert shown.startswith("Home | World | Markets")
    else:
        assert " ".join(shown.replace("\xa0", " ").split()) == words


@pytest.mark.parametrize(
    "name", [n for n, d in DISGUISES.items() if d.family in ("lookalike", "width", "marks")]
)
def test_letter_disguises_keep_every_other_character(name: str) -> None:
    # one letter (with its marks) for one letter, full-width forms for ASCII: the words keep
    # their places and lengths
    text = english()
    copy = disguise(name, text, 3)
    bare = "".join(c for c in copy if unicodedata.category(c) not in ("Mn", "Me"))
    assert len(bare) == len(text)
    assert all(
        a == b or a.isalnum() or unicodedata.normalize("NFKC", b) == a
        for a, b in zip(text, bare, strict=True)
    )


def _in(family: str) -> list[str]:
    return [n for n, d in DISGUISES.items() if d.family == family]


def test_every_letter_style_of_the_enclosed_and_small_form_blocks_is_registered() -> None:
    styles = {n.removeprefix("styled_") for n in _in("styled")}
    assert {
        "negative_circled", "negative_squared", "squared", "circled", "parenthesized",
        "small_capitals", "regional_indicators", "superscript", "subscript", "mixed",
    } <= styles  # fmt: skip


@pytest.mark.parametrize("name", _in("styled"))
def test_styled_letters_are_the_letters_their_names_name(name: str) -> None:
    # one styled letter (a regional indicator and a U+200B after it) for one letter, named so
    text = english()
    copy = disguise(name, text, 3).replace("\u200b", "")
    assert len(copy) == len(text) and copy != text
    for a, b in zip(text, copy, strict=True):
        if a != b:
            assert a.isalpha() and unicodedata.name(b).endswith(f" {a.upper()}"), (a, b)


_SPACED = {
    "spaced_spaces": (" ", "   "), "spaced_double": ("  ", "     "), "spaced_dots": (".", " "),
    "spaced_dashes": ("-", " "), "spaced_thin": ("\u2009", " "), "spaced_nbsp": ("\u00a0", "   "),
    "spaced_underscores": ("_", " "),
}  # fmt: skip


@pytest.mark.parametrize("name", list(_SPACED))
def test_spaced_letters_keep_the_words_apart(name: str) -> None:
    # the letters of every word ``between`` apart, ``words`` where the text had a space
    text = english()
    copy = disguise(name, text, 3)
    between, words = _SPACED[name]
    assert copy.count(between) > 3 * text.count(between)
    if " " in between:
        assert copy.replace(words, "/").replace(between, "") == text.replace(" ", "/")
    else:
        assert copy.replace(between, "") == text.replace(between, "").replace(" ", words)


@pytest.mark.parametrize("name", _in("leet"))
def test_leetspeak_puts_digits_for_letters_only(name: str) -> None:
    text = english()
    copy = disguise(name, text, 3)
    assert len(copy) == len(text) and copy != text
    # a digit, or a symbol (leet_symbols_*), for a letter
    assert all(
        a == b or (a.isalpha() and (b.isdigit() or not (b.isalpha() or b.isspace())))
        for a, b in zip(text, copy, strict=True)
    )
    # a word keeps a letter: a word wholly of digits would read as a number
    words = re.findall(r"[^\W\d_]+", text)
    assert not [w for w in re.findall(r"\S+", copy) if w.isdigit() and w not in text.split()]
    assert words


@pytest.mark.parametrize(
    ("name", "kind"),
    [("spaced_spaces_later", "first"), ("leet_basic_later", "first"), ("spaced_dots_half", "half"),
     ("leet_full_half", "half")],
)  # fmt: skip
def test_a_disguise_that_spares_the_start_leaves_a_first_sentence_as_written(
    name: str, kind: str
) -> None:
    text = english()
    copy = disguise(name, text, 3)
    assert copy != text
    first = re.split(r"(?<=[a-z0-9][.!?])\s+(?=[A-Z])", text)[0]
    if kind == "first":
        assert copy.startswith(first)
    else:  # some sentences as written, some not
        kept = [s for s in re.split(r"(?<=[.!?])\s+", text) if s in copy]
        assert 0 < len(kept) < len(re.split(r"(?<=[.!?])\s+", text))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", _in("escaped"))
def test_escaped_text_decodes_to_the_text(name: str, lang: str) -> None:
    text = text_for(lang)
    copy = disguise(name, text, 3)
    if name.startswith("json"):
        literal = copy if name in ("json_quoted", "json_utf8") else f'"{copy}"'
        assert json.loads(literal) == text
    else:
        raw = copy.replace("\r\n", "\n").encode("ascii")
        shown = quopri.decodestring(raw).decode("utf-8")
        assert shown.split() == text.split()  # a paragraph's lines may be made one


@pytest.mark.parametrize("name", _in("invisible_space"))
def test_invisible_spaces_stand_for_the_spaces(name: str) -> None:
    text = english()
    copy = disguise(name, text, 3)
    assert " " not in copy and len(copy) == len(text)
    assert all(a == b or (a == " " and not b.isspace()) for a, b in zip(text, copy, strict=True))


def _shown(text: str) -> str:
    """The letters a reader sees left to right: the content of each override (to its pop or
    the line's end) reversed, the controls gone."""
    out = re.sub("\u202e([^\u202c\u2069\n]*)", lambda m: m.group(1)[::-1], text)
    return re.sub("[\u202a-\u202e\u2066-\u2069]", "", out)


@pytest.mark.parametrize("name", _in("reversed"))
def test_reversed_lines_show_the_text(name: str) -> None:
    for lang in sorted(DISGUISES[name].langs):
        text = text_for(lang)
        copies = [disguise(name, text, seed) for seed in range(6)]
        assert all(_shown(copy) == text for copy in copies)
        assert any(copy != text for copy in copies)


def test_chinese_conversions_give_traditional_script() -> None:
    text = chinese()
    for name in ("zh_s2t", "zh_s2tw", "zh_s2twp", "zh_s2hk"):
        assert "這" in disguise(name, text, 0) and "这" in text


def test_unknown_disguise_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        disguise("rot13", "text", 0)
