"""sketch.lines: a text's lines as source-keyed fingerprints, and the text without some."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sketch.lines import lines_of, source_key, without


def test_lines_spans_and_keys() -> None:
    text = "Home | World\n\n-----\n  Story line one  \nHome  |  WORLD"
    lines = lines_of(text, "a.example")
    assert lines.spans == ((0, 12), (20, 38), (39, 53))  # the rule and the blank line are not
    assert [text[a:b] for a, b in lines.spans] == ["Home | World", "  Story line one  ", text[39:]]
    assert lines.keys[0] == lines.keys[2]  # case and spacing do not make another line
    assert all(k[:8] == source_key("a.example") for k in lines.keys)
    assert lines_of(text, "b.example").keys[0][8:] == lines.keys[0][8:]
    assert lines_of(text, "b.example").keys[0] != lines.keys[0]  # two sites never share counts


def test_list_numbering_is_not_part_of_a_line() -> None:
    a = lines_of("1. MARKETS RALLY ON RATE CUT\n4) MARKETS RALLY ON RATE CUT", "s")
    b = lines_of("MARKETS RALLY ON RATE CUT\n2005 MARKETS RALLY ON RATE CUT", "s")
    assert a.keys[0] == a.keys[1] == b.keys[0]
    assert b.keys[1] != b.keys[0]  # a number that is not list numbering stays


def test_without_drops_the_given_lines() -> None:
    text = "nav\nstory one\n\nstory two\nfooter"
    lines = lines_of(text, "")
    assert without(text, lines, {0, 3}) == "story one\nstory two"
    assert without(text, lines, set()) == "nav\nstory one\nstory two\nfooter"


def test_lines_outside_the_token_bounds_are_not_lines_but_stay_in_the_text() -> None:
    text = "Home | World | Sport\nword\n" + " ".join(["long"] * 50) + "\nFooter line here"
    lines = lines_of(text, "s", min_tokens=2, max_tokens=40)
    assert [text[a:b] for a, b in lines.spans] == ["Home | World | Sport", "Footer line here"]
    assert without(text, lines, {0, 1}) == "word\n" + " ".join(["long"] * 50)


@given(st.lists(st.text(st.characters(blacklist_characters="\n"), max_size=20), max_size=12))
def test_every_worded_line_is_found_once_per_time(parts: list[str]) -> None:
    text = "\n".join(parts)
    lines = lines_of(text, "src")
    worded = [p for p in parts if any(c.isalnum() or c == "_" for c in p)]
    assert [text[a:b] for a, b in lines.spans] == worded
    assert without(text, lines, set()) == "\n".join(p for p in parts if p.strip())


def test_tokens_of_lines_in_any_script() -> None:
    """CJK characters count one each; a line of more than ``max_tokens`` words is long in any
    script (the curly quotes of a story's paragraph make it non-ASCII, not short)."""
    cjk_short, cjk_long = "本站招聘启事", "据新华社报道" * 10
    quoted = "\u201cMarkets\u201d " + " ".join(["rallied"] * 45)
    one = "\u201cSubscribe\u201d"
    text = "\n".join([cjk_short, cjk_long, quoted, one, "Caf\u00e9 menu today"])
    lines = lines_of(text, "s", min_tokens=2, max_tokens=40)
    assert [text[a:b] for a, b in lines.spans] == [cjk_short, "Caf\u00e9 menu today"]
