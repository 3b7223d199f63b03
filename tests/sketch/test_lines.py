"""neardup.sketch.lines: a text's lines as source-keyed fingerprints, and the text without some."""

from __future__ import annotations

import re
from itertools import pairwise

import mmh3
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neardup.sketch import lines as lines_module
from neardup.sketch import pieces as pieces_module
from neardup.sketch.features import DEFAULT_SEED, normalize, tokenize
from neardup.sketch.lines import (
    Lines,
    anchors,
    between,
    inside,
    lines_of,
    passages_of,
    source_key,
    without,
)


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


def _reference(
    text: str, source: str, min_tokens: int, max_tokens: int, read: int = 10**9
) -> tuple[list, list]:
    """The rule of :func:`lines_of` written plainly: every line with a word character and
    ``min_tokens`` to ``max_tokens`` tokens, normalised, list numbering dropped, hashed; of
    more than ``2 * read`` lines, the first and last ``read``."""
    spans, keys, pos = [], [], 0
    all_lines = text.split("\n")
    for i, line in enumerate(all_lines):
        start, pos = pos, pos + len(line) + 1
        if len(all_lines) > 2 * read and read <= i < len(all_lines) - read:
            continue
        if not re.search(r"\w", line):
            continue
        n = len(line.split())
        if not line.isascii() and not (max_tokens and n > max_tokens):
            n = len(tokenize(line))
        if (min_tokens > 1 or max_tokens) and (n < min_tokens or (max_tokens and n > max_tokens)):
            continue
        norm = re.sub(r"^\W*(?:\d{1,3}|[a-z])[.)]\s+", "", normalize(line))
        fp = mmh3.hash64(norm.encode("utf-8", "surrogatepass"), DEFAULT_SEED, signed=False)[0]
        spans.append((start, start + len(line)))
        keys.append(source_key(source) + fp.to_bytes(8, "big"))
    return spans, keys


_PIECES = st.sampled_from(
    ["1.", "4)", "b)", "(3.", "-", "--", "|", ".", ")", "_", "x", "Home", "WORLD", "2005",
     "caf\u00e9", "\u68c0\u6d4b", "\uff21", " ", "  ", "\t", "\x1c", "\r"]
)  # fmt: skip


@given(
    st.lists(st.lists(_PIECES, max_size=8).map(" ".join), max_size=10),
    st.sampled_from([(1, 0), (2, 40), (2, 3)]),
)
def test_lines_follow_the_plain_rule(parts: list[str], bounds: tuple[int, int]) -> None:
    """The fast paths (ASCII at once, the marker looked for only where it can be) find the
    same lines and keys as the rule written plainly."""
    text = "\n".join(parts)
    lo, hi = bounds
    got = lines_of(text, "src", min_tokens=lo, max_tokens=hi)
    assert (list(got.spans), list(got.keys)) == _reference(text, "src", lo, hi)
    low = text.encode("ascii", "ignore").decode()  # all-ASCII texts take the whole-text path
    got = lines_of(low, "src", min_tokens=lo, max_tokens=hi)
    assert (list(got.spans), list(got.keys)) == _reference(low, "src", lo, hi)


@given(
    st.lists(st.lists(_PIECES, max_size=6).map(" ".join), max_size=14),
    st.integers(1, 4),
)
def test_a_long_text_is_read_at_its_head_and_foot(parts: list[str], read: int) -> None:
    """Past ``2 * LINES_READ`` lines, only the first and last ``LINES_READ`` are lines, each
    where it stands in the text (here with a small ``LINES_READ``)."""
    text = "\n".join(parts)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines_module, "LINES_READ", read)
        got = lines_of(text, "src", min_tokens=2, max_tokens=40)
    assert (list(got.spans), list(got.keys)) == _reference(text, "src", 2, 40, read)


def test_a_hundred_thousand_lines_are_read_as_a_page_is() -> None:
    lines = [f"\u5b57{i} w{i}" for i in range(100_000)]
    got = lines_of("\n".join(lines), "src", min_tokens=2, max_tokens=40)
    assert len(got) == 2 * lines_module.LINES_READ
    text = "\n".join(lines)
    assert text[slice(*got.spans[-1])] == lines[-1]
    assert text[slice(*got.spans[lines_module.LINES_READ])] == lines[-lines_module.LINES_READ]
    one_line = " ".join(f"Item {i} is here." for i in range(10_000))
    got = passages_of(one_line, "src", min_tokens=2, max_tokens=40)
    assert len(got) == 2 * pieces_module.PIECES_READ
    assert one_line[slice(*got.spans[-1])] == "Item 9999 is here."


def test_a_paragraph_and_a_box_line_break_into_passages() -> None:

    text = (
        "Most read: Budget vote delayed | Bridge reopens to traffic | Harvest festival returns\n"
        "Copyright The Ledger Ltd. All rights reserved. Terms of use | Privacy policy\n"
        "A one-line story paragraph without a break"
    )
    got = passages_of(text, "s", min_tokens=2, max_tokens=40)
    words = [text[a:b] for a, b in got.spans]
    assert words == [
        text.split("\n")[0],
        "Most read:",
        "Budget vote delayed",
        "Bridge reopens to traffic",
        "Harvest festival returns",
        text.split("\n")[1],
        "Copyright The Ledger Ltd.",
        "All rights reserved.",
        "Terms of use",
        "Privacy policy",
        text.split("\n")[2],
    ]
    assert [got.is_line(i) for i in range(len(got))] == [
        True, False, False, False, False, True, False, False, False, False, True
    ]  # fmt: skip
    # a passage is keyed as a line with its text: a box's item and the story's title meet
    title = passages_of("Bridge reopens to traffic\nbody", "s", min_tokens=2).keys[0]
    assert title == got.keys[3]
    # the text without the box's items and the footer's sentences, its story line kept: a
    # line that lost more than half of its words goes whole (its label, its last links)
    assert without(text, got, {2, 3, 4, 6, 7}) == text.split("\n")[2]
    # one that lost less keeps the rest of its text
    assert without(text, got, {2, 6}) == (
        "Most read: | Bridge reopens to traffic | Harvest festival returns\n"
        "All rights reserved. Terms of use | Privacy policy\n"
        "A one-line story paragraph without a break"
    )
    assert without(text, got, {3, 4}) == "\n".join(text.split("\n")[1:])  # 6 of 11 words
    assert without(text, got, {0, 5}) == text.split("\n")[2]


def test_a_sentence_alone_inside_a_paragraph_stays() -> None:

    text = "Nav line here\nFirst said this. The company said so. Then came more.\nFooter line here"
    got = passages_of(text, "s", min_tokens=2, max_tokens=40)
    said = next(i for i, (a, b) in enumerate(got.spans) if text[a:b] == "The company said so.")
    nav = 0
    assert inside(text, got, {said}) == {said}  # between two sentences of the story
    assert inside(text, got, {nav, said}) == {said}
    last = next(i for i, (a, b) in enumerate(got.spans) if text[a:b] == "Then came more.")
    assert inside(text, got, {last, len(got) - 1}) == set()  # at the story's edge: template


def test_a_box_item_amid_learned_ones_is_the_boxes_a_paragraph_never() -> None:
    text = "\n".join(
        [
            "Most read today",  # 0, learned
            "1. Budget vote delayed again",  # 1, learned
            "2. A headline never seen before",  # 2, new: between learned lines
            "3. Bridge reopens to traffic",  # 3, learned
            "Sign up for our newsletter today",  # 4, learned
            " ".join(["A short story's only paragraph, long enough to be one."] * 3),  # 5
            "Copyright The Ledger Ltd",  # 6, learned
        ]
    )
    got = lines_of(text, "s", min_tokens=2, max_tokens=40)
    assert between(text, got, {0, 1, 3, 4, 6}) == {2}
    assert between(text, got, {0, 1, 3}) == {2}
    assert between(text, got, {0, 3}) == {1, 2}  # two in a row
    assert between(text, got, {0, 4}) == {1, 2, 3}  # up to five in a row
    assert between(text, got, {0, 4}, run=2) == set()  # more than run: a story's lines, kept
    assert between(text, got, {4, 6}) == set()  # a paragraph is never a box's item


def _at(text: str, got: Lines, piece: str) -> int:
    return next(i for i, (a, b) in enumerate(got.spans) if text[a:b].rstrip(";") == piece)


def test_a_box_on_one_line_loses_its_new_items_up_to_the_lines_end() -> None:
    """A box's title (or first items) learned, its other items new: the new ones go with it
    up to the line's end, whatever the next line holds (here a story line, kept), when list
    separators stand between them; a paragraph's sentences after a learned one never do."""
    for sep in (" | ", " · ", " • ", " / ", " - ", "; "):
        box = sep.join(
            ["Editor's picks: Budget vote delayed", "Bridge reopens to traffic", "Fair returns"]
        )
        text = f"Nav line here\n{box}\nThe story's first line, which nothing repeats."
        got = passages_of(text, "s", min_tokens=2, max_tokens=40)
        title = _at(text, got, "Editor's picks:")
        items = {
            _at(text, got, x)
            for x in ("Budget vote delayed", "Bridge reopens to traffic", "Fair returns")
        }
        assert between(text, got, {0, title}) == items, sep
        first = _at(text, got, "Budget vote delayed")
        assert between(text, got, {title, first}) == items - {first}, sep
        # the title alone learned, on a line with nothing before it: the same
        assert between(text, got, {title}) == items, sep
    # sentences after a learned label are a paragraph's, not a box's items
    text = "Nav line here\nOfficials said: The plan starts in May. It covers three towns.\nEnd"
    got = passages_of(text, "s", min_tokens=2, max_tokens=40)
    assert between(text, got, {_at(text, got, "Officials said:")}) == set()
    # items that stop before the line's end (a long passage after them) stay
    long_tail = " ".join(["and a long story sentence goes on"] * 3)
    text = f"Most read: Budget vote delayed | Bridge reopens | {long_tail}.\nEnd line here"
    got = passages_of(text, "s", min_tokens=2, max_tokens=40)
    assert between(text, got, {_at(text, got, "Most read:")}) == set()


@given(
    st.lists(st.integers(0, 10**6), min_size=1, max_size=30, unique=True),
    st.lists(st.integers(10**6 + 1, 2 * 10**6), max_size=30, unique=True),
    st.integers(1, 8),
)
def test_a_template_moves_a_storys_anchors_only_one_for_one(
    story: list[int], template: list[int], k: int
) -> None:
    """Anchors of a page (story and template sentences) against the story's alone: every
    story sentence among the page's anchors is among the story's, and the template can push
    out at most as many of the story's anchors as it has sentences; the source never
    matters (only the fingerprint is sampled)."""

    def sentence(n: int) -> str:
        return f"sentence number {n} of eight or more words here."

    def sampled(ns: list[int], source: str, n: int = k) -> tuple[int, ...]:
        text = " ".join(sentence(x) for x in ns)
        got = passages_of(text, source, min_tokens=2, max_tokens=40)
        keep = {i for i in range(len(got)) if not got.is_line(i)} or {0}
        return anchors(text, got, keep, k=n, min_tokens=8)

    alone = sampled(story, "a.example")
    page = sampled(story + template, "b.example")
    assert set(alone) == set(sampled(story, "b.example"))  # whatever the source
    every = set(sampled(story, "a.example", n=len(story)))  # all the story's sentences
    assert len(every) == len(story)
    assert set(page) & every <= set(alone)
    assert len(set(alone) & set(page)) >= min(k, len(alone)) - len(template)
    assert len(page) == min(k, len(story) + len(template))


def test_anchors_leave_out_short_passages_and_what_is_not_kept() -> None:
    text = "Short one here.\nA sentence that is long enough to count as an anchor here."
    got = lines_of(text, "s")
    assert len(anchors(text, got, {0, 1}, k=4, min_tokens=8)) == 1
    assert anchors(text, got, {0}, k=4, min_tokens=8) == ()
    assert anchors(text, got, {1}, k=4, min_tokens=8) == (int.from_bytes(got.keys[1][8:], "big"),)


def test_a_labelled_list_joined_by_commas_breaks_at_its_commas() -> None:
    """A box that text extraction joined with commas ("Most read: A, B, C") breaks into its
    items, each keyed as the headline's own line is; a sentence's commas, a label with one
    comma after it, or a label of more than four words, do not break."""
    box = "Most read: Budget vote delayed, Bridge reopens to traffic, Fair returns"
    got = passages_of(f"{box}\nbody", "s", min_tokens=1, max_tokens=40)
    assert [box[a:b] for a, b in got.spans[1:4]] == [
        "Most read:",
        "Budget vote delayed",
        "Bridge reopens to traffic",
    ]
    assert box[slice(*got.spans[4])] == "Fair returns"
    title = passages_of("Bridge reopens to traffic\nbody", "s").keys[0]
    assert got.keys[3] == title
    for line in (
        "Officials said the plan, which starts in May, covers three towns, and more.",
        "Officials said: the plan starts in May, and covers three towns.",
        "What the officials of the town said: the plan, in May, for three towns",
    ):
        got = passages_of(f"{line}\nbody", "s", min_tokens=1, max_tokens=40)
        assert not any(line[a - 2 : a] == ", " for a, b in got.spans), line  # none after one


def test_where_a_lists_items_start() -> None:
    """After a label of at most four words; at the start of a line longer than a headline that
    ends no sentence (a box joined into one line); never in prose."""
    from neardup.sketch.pieces import _items_at

    heads = " ".join(f"Headline number {i} about things" for i in range(4))
    assert _items_at(f"Most read: {heads}") == len("Most read: ")
    assert _items_at(heads) == 0
    assert _items_at(f"{heads}.") is None  # a sentence's end: prose
    assert _items_at("Budget vote delayed again") is None  # a headline's size
    assert _items_at(f"What the officials of the town said: {heads}") == 0  # a long label


def test_a_box_joined_by_spaces_is_read_by_runs_of_words_that_recur_as_it_rotates() -> None:
    """Items with nothing between them: the runs of four words inside an item, or across two
    items that stay next to each other, have the same keys on the next page, where the box
    has moved on by one item; the runs of prose never exist."""
    items = [
        "Budget vote delayed by council",
        "Bridge reopens to traffic after repairs",
        "Harvest festival returns this weekend",
        "County fair draws record crowds",
        "Library extends its opening hours",
    ]
    first = "Most read: " + " ".join(items[:4])
    later = "Most read: " + " ".join(items[1:])
    a = passages_of(f"{first}\nbody", "s", min_tokens=2, max_tokens=40)
    b = passages_of(f"{later}\nbody", "s", min_tokens=2, max_tokens=40)
    runs_a = {first[x:y]: k for (x, y), k in zip(a.spans, a.keys, strict=True)}
    runs_b = {later[x:y]: k for (x, y), k in zip(b.spans, b.keys, strict=True)}
    shared = " ".join(items[1:4]).split()
    want = {" ".join(shared[i : i + 4]) for i in range(len(shared) - 3)}
    assert want <= runs_a.keys() & runs_b.keys()
    assert all(runs_a[r] == runs_b[r] for r in want)
    prose = " ".join(items) + " and the rest of the sentence ends here."
    got = passages_of(f"{prose}\nbody", "s", min_tokens=2, max_tokens=40)
    assert len(got) == 1  # the line alone (it is long: over max_tokens it is not even that)


def _all_runs(line: str, at: int, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs of a list line as first written (every run found, then the ends kept): the
    reference the bounded reading is held to."""
    after = [(a, b) for a, b in pieces if a >= at] or [(at, len(line))]
    if not any(pieces_module._long(line[a:b]) for a, b in after):
        return pieces
    grams: list[tuple[int, int]] = []
    for a, b in after:
        words = [m.span() for m in re.finditer(r"\S+", line[:b]) if m.start() >= a]
        grams += [(words[i][0], words[i + 3][1]) for i in range(len(words) - 3)]
    return sorted(set(pieces) | set(grams), key=lambda s: (s[0], -s[1]))


_LIST_WORDS = st.sampled_from(
    ["news", "vote", "U.S.", "Most read:", "|", "-", "·", ",", "and", "5", "字", "x" * 70, "  "]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_LIST_WORDS, min_size=1, max_size=400), st.booleans())
@example(["news", "x" * 70, "vote", "5"] * 60, False)  # long words across the windows' edges
@example(["Most read:", *["vote", "news", "|"] * 50], False)
def test_a_long_list_line_reads_the_runs_it_would_read_were_every_run_found(
    words: list[str], full_stop: bool
) -> None:
    """Only the first and last runs of a list line are found (the rest were never read): the
    passages are those that finding every run gives, on lines of every length and layout."""
    text = "Top line\n" + " ".join(words) + ("." if full_stop else "") + "\nLast line"
    got = lines_module.passages_of(text, "site", min_tokens=2, max_tokens=40)
    bounded = pieces_module._with_grams
    pieces_module._with_grams = _all_runs  # type: ignore[assignment]
    try:
        want = lines_module.passages_of(text, "site", min_tokens=2, max_tokens=40)
    finally:
        pieces_module._with_grams = bounded
    assert got == want


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 90), st.sampled_from([" ", "  ", "\t", " \u3000 "]))),
    st.integers(1, 40),
    st.integers(0, 3),
)
def test_the_last_runs_found_from_the_end_are_the_last_of_all_runs(
    words: list[tuple[int, str]], k: int, cuts: int
) -> None:
    """Windows before each span's end, widened until they hold enough whole words (a window
    that begins inside a word drops it), give the runs that reading every word gives."""
    line = "".join("w" * n + gap for n, gap in words)
    bounds = sorted({0, len(line), *(len(line) * (i + 1) // (cuts + 1) for i in range(cuts))})
    spans = list(pairwise(bounds))
    want = list(pieces_module._runs(line, spans))[-k:]
    assert pieces_module._last_runs(line, spans, k) == want


def test_a_story_on_one_line_is_read_for_passages_at_its_ends_only() -> None:
    """A line past twice LINE_CHARS_READ breaks into pieces from its first and last
    LINE_CHARS_READ characters: its opening and its footer's sentences are read (as lines of
    their own would be keyed), its middle is not; a line of 80 KB is read as one of 16 KB."""
    n = pieces_module.LINE_CHARS_READ
    long = " ".join(["words of a long sentence"] * 16)  # 400 characters: 20 a window
    middle = " ".join(f"Story sentence number {i} of the middle, {long}." for i in range(200))
    footer = "Subscribe to our newsletter today. Contact the newsroom by mail."
    line = "Opening sentence of the story. " + middle + " " + footer
    assert len(line) > 4 * n
    got = passages_of(line, "site", min_tokens=2)
    assert got.spans[0] == (0, len(line))  # the line itself, then its pieces
    cut = {line[a:b] for a, b in got.spans[1:]}
    assert {"Opening sentence of the story.", *footer.split(" Contact")[:1]} <= cut
    assert "Contact the newsroom by mail." in cut
    assert not any("number 1000 " in piece for piece in cut)  # the middle is never read
    keys = dict(zip(got.spans, got.keys, strict=True))
    alone = passages_of("Contact the newsroom by mail.\nx y", "site", min_tokens=2)
    assert alone.keys[0] in keys.values()
    assert all(b <= n or a >= len(line) - n for a, b in got.spans[1:])


def test_a_line_too_long_for_a_template_is_read_at_its_ends_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A line of more than ``LINE_KEY_CHARS`` characters is never a line when lines are
    bounded in tokens (a few words of a megabyte each, a story of Chinese phrases sent as one
    line): only its passages, from its ends, are; and it is never folded whole."""
    big = "x" * lines_module.LINE_KEY_CHARS
    text = f"Home | World\nBig {big} word\nAbout us"
    got = lines_of(text, "src", min_tokens=2, max_tokens=40)
    assert [text[a:b] for a, b in got.spans] == ["Home | World", "About us"]
    assert len(lines_of(text, "src", min_tokens=2)) == 3  # unbounded: every line
    phrases = "\u6b61\u8fce\u5149\u81e8\u3002" * lines_module.LINE_KEY_CHARS  # no space
    folded: list[int] = []
    real = lines_module.normalize_each

    def normalize_each(texts: list[str]) -> list[str]:
        folded.extend(map(len, texts))
        return real(texts)

    monkeypatch.setattr(lines_module, "normalize_each", normalize_each)
    got = passages_of(phrases, "src", min_tokens=2, max_tokens=40)
    assert got.spans and all(b - a <= 16 for a, b in got.spans)  # its sentences, at its ends
    assert max(folded) <= lines_module.LINE_KEY_CHARS
