"""Evidence: which passages two texts share, as character spans in each; exact spans for
written cases, bounded output, and the engine's verdicts carrying them when asked."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import data
from neardup.sketch.evidence import (
    PASSAGES_READ,
    Span,
    _alike,
    _pairs,
    _sets,
    passages,
    shared_spans,
)
from neardup.sketch.features import DEFAULT_SEED, DEFAULT_SHINGLE, shingle_hashes
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

EARLIER = (
    "The storm hit the coast on Monday. Twelve people died in the floods.\n"
    "Power was cut to 1,204 homes. The mayor asked the state for help."
)
NEW = (
    "Our view: it was a bad week for the coast. The storm hit the coast on Monday! Twelve "
    "people died in the floods. Power was cut to 1,204 homes. We will follow the story."
)


def test_passages_are_lines_and_sentences_not_decimal_points() -> None:
    text = (
        "Div 4.5 cts. Pay April 30!  Record 1.2.\n\n  Next line\n华新水泥股价上涨。分红方案公布！"
    )
    assert [text[a:b] for a, b in passages(text)] == [
        "Div 4.5 cts.",
        "Pay April 30!",
        "Record 1.2.",
        "Next line",
        "华新水泥股价上涨。",
        "分红方案公布！",
    ]


def test_shared_passages_as_merged_spans_in_both_texts() -> None:
    (span,) = shared_spans(NEW, EARLIER)
    assert NEW[span.start : span.end] == (
        "The storm hit the coast on Monday! Twelve people died in the floods. "
        "Power was cut to 1,204 homes."
    )
    assert EARLIER[span.earlier_start : span.earlier_end] == (
        "The storm hit the coast on Monday. Twelve people died in the floods.\n"
        "Power was cut to 1,204 homes."
    )
    assert span.share == 1.0


def test_nothing_shared_is_no_span_and_the_output_is_bounded() -> None:
    assert shared_spans("Entirely other words here today.", EARLIER) == []
    many = ". ".join(f"sentence number {i} stands alone here" for i in range(100))
    shuffled = ". ".join(f"sentence number {i} stands alone here" for i in range(99, -1, -1))
    spans = shared_spans(shuffled, many, limit=5)
    assert len(spans) == 5 and spans == sorted(spans, key=lambda s: s.start)


@given(
    st.lists(
        st.sampled_from(["alpha beta gamma delta", "one two three four", "x y z w"]),
        min_size=1,
        max_size=8,
    )
)
def test_a_text_shares_all_of_itself_with_itself(parts: list[str]) -> None:
    text = ". ".join(parts) + "."
    spans = shared_spans(text, text)
    assert spans and all(s.share == 1.0 for s in spans)
    for s in spans:  # each span is cut at passage bounds in both
        assert text[s.start : s.end].strip() == text[s.start : s.end]


async def _process(engine: Engine, articles: list[Article], **kw: bool) -> list[Verdict]:
    out = []
    for res in await engine.process(articles, **kw):
        assert not isinstance(res, NeardupError)
        out.append(res)
    return out


@pytest.mark.parametrize("measure", ["jaccard", "containment"])
async def test_a_verdict_explains_itself_when_asked(measure: str) -> None:
    story = next(r["text"] for r in data.clough_stevenson() if len(r["text"].split()) >= 250)
    copy = "Our view, first. We will follow the story closely this week.\n" + story
    engine = Engine(MemoryIndex(), Policy(measure=measure, threshold=0.6))  # type: ignore[arg-type]
    a, b = await _process(engine, [Article("a", story), Article("b", copy)], explain=True)
    assert a.evidence is None  # an original has nothing to explain
    assert b.duplicate_of == "a" and b.evidence
    (span,) = b.evidence  # the whole story, one run of passages in both
    assert isinstance(span, Span) and span.share == 1.0
    assert copy[span.start : span.end] == story.strip()
    assert story[span.earlier_start : span.earlier_end] == story.strip()
    quiet = await _process(
        Engine(MemoryIndex(), Policy(measure=measure, threshold=0.6)),
        [Article("a", story), Article("b", copy)],
    )  # type: ignore[arg-type]
    assert quiet[1].evidence is None  # the stream's default: no evidence
    assert Verdict.from_json(b.to_json()) == b


async def test_no_kept_text_no_evidence() -> None:
    engine = Engine(MemoryIndex(), Policy(keep_text=False))
    _, b = await _process(
        engine, [Article("a", EARLIER), Article("b", EARLIER + " ")], explain=True
    )
    assert b.verdict == "duplicate" and b.evidence == ()


def _shared_spans_plainly(new: str, earlier: str, w: int, seed: int, limit: int) -> list[Span]:
    """The module's rule with a set per passage and a loop per pair: the reference."""
    mine, theirs = passages(new), passages(earlier)
    my_sets = [set(shingle_hashes(new[a:b], w=w, seed=seed).tolist()) for a, b in mine]
    their_sets = [set(shingle_hashes(earlier[a:b], w=w, seed=seed).tolist()) for a, b in theirs]
    pairs = []
    for i, s in enumerate(my_sets):
        shared = [len(s & t) for t in their_sets]
        if shared and max(shared) and 2 * max(shared) >= len(s):
            j = shared.index(max(shared))
            pairs.append((i, j, shared[j], len(s)))
    runs: list[list[tuple[int, int, int, int]]] = []
    for p in pairs:
        if runs and p[0] == runs[-1][-1][0] + 1 and p[1] - runs[-1][-1][1] in (0, 1):
            runs[-1].append(p)
        else:
            runs.append([p])
    spans = [
        Span(
            mine[r[0][0]][0],
            mine[r[-1][0]][1],
            theirs[r[0][1]][0],
            theirs[r[-1][1]][1],
            round(sum(p[2] for p in r) / sum(p[3] for p in r), 4),
        )
        for r in runs
    ]
    spans.sort(key=lambda s: (-(s.end - s.start), s.start))
    return sorted(spans[:limit], key=lambda s: s.start)


_SENTENCES = st.sampled_from(
    ["the storm hit the coast", "power was cut", "the storm hit", "twelve died", "x", "中文字",
     "ß ﬁne", "help came. late", "the coast"]
)  # fmt: skip


@given(
    st.lists(_SENTENCES, max_size=12),
    st.lists(_SENTENCES, max_size=12),
    st.sampled_from([". ", "\n", "! ", "。", " "]),
    st.integers(1, 4),
    st.integers(1, 6),
)
@settings(max_examples=500, deadline=None)
def test_shared_spans_are_those_of_the_plain_rule(
    a: list[str], b: list[str], stop: str, w: int, limit: int
) -> None:
    """All pairs of passages counted at once give what a set per passage and a loop give,
    repeated shingles, ties between earlier passages and short passages included."""
    new, earlier = stop.join(a), stop.join(b)
    assert shared_spans(new, earlier, w=w, seed=7, limit=limit) == _shared_spans_plainly(
        new, earlier, w, 7, limit
    )


def test_real_near_copies_spans_are_those_of_the_plain_rule() -> None:
    texts = [r["text"] for r in data.reuters()[:120]]
    for k, text in enumerate(texts):
        words = text.split()
        copy = " ".join(w if i % 17 else "changed" for i, w in enumerate(words))
        for earlier in (text, texts[k - 1]):
            got = shared_spans(copy, earlier)
            assert got == _shared_spans_plainly(copy, earlier, DEFAULT_SHINGLE, DEFAULT_SEED, 32)


@given(st.lists(st.text(alphabet="ab c.\n文字!", max_size=30), min_size=1, max_size=6).map("".join))
@settings(max_examples=200, deadline=None)
def test_passage_sets_are_each_passages_shingles(text: str) -> None:
    """The passages' sets, made in one batch, are what shingle_hashes gives each passage."""
    spans = passages(text)
    want = [set(shingle_hashes(text[a:b]).tolist()) for a, b in spans]
    assert _sets(text, spans, DEFAULT_SHINGLE, DEFAULT_SEED) == want


# text that exercises both ways _sets takes: folding that keeps every passage in place (ASCII,
# curly quotes, CJK) and folding that moves it (ß -> ss, the ﬁ ligature, a combining accent)
PIECES = st.sampled_from(
    [
        *"ab1_ .!?。！？；\n\t,;:-'’",
        "Word",
        "ß",
        "İ",
        "ﬁ",
        "é",
        "e\u0301",
        "中文",
        "٣",
        "Ⅻ",
        "\u00a0",
    ]
)


@given(st.lists(PIECES, max_size=60).map("".join), st.integers(1, 4))
@settings(max_examples=500, deadline=None)
def test_passage_sets_in_place_or_not_are_each_passages_shingles(text: str, w: int) -> None:
    spans = passages(text)
    want = [set(shingle_hashes(text[a:b], w=w, seed=7).tolist()) for a, b in spans]
    assert _sets(text, spans, w, 7) == want


def _passages_by_lookbehind(text: str) -> list[tuple[int, int]]:
    """The passages as first written (a look-behind regex, a trim loop): the reference."""
    out = []
    cuts = [(m.start(), m.end()) for m in re.finditer(r"(?<=[.!?])\s+|(?<=[。！？；])|\n", text)]
    for a, b in zip([0, *(e for _, e in cuts)], [*(s for s, _ in cuts), len(text)], strict=True):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if any(c.isalnum() for c in text[a:b]):
            out.append((a, b))
    return out


@given(st.lists(PIECES | st.sampled_from(["\r\n", "。\n", ". \n", "x。y", "__"]), max_size=40))
@settings(max_examples=1000, deadline=None)
def test_passages_are_those_of_the_reference(parts: list[str]) -> None:
    text = "".join(parts)
    assert passages(text) == _passages_by_lookbehind(text)


def test_real_texts_passages_and_sets() -> None:
    texts = [r["text"] for r in data.reuters()[:300]] + [r["text"] for r in data.zh_reviews()[:200]]
    for text in texts:
        spans = passages(text)
        assert spans == _passages_by_lookbehind(text)
        want = [set(shingle_hashes(text[a:b]).tolist()) for a, b in spans]
        assert _sets(text, spans, DEFAULT_SHINGLE, DEFAULT_SEED) == want


def _pairs_plainly(my_sets: list[set[int]], their_sets: list[set[int]]) -> list[tuple[int, ...]]:
    """Every pair of passages counted: the pairing rule as stated."""
    out: list[tuple[int, ...]] = []
    for i, s in enumerate(my_sets):
        shared = [len(s & t) for t in their_sets]
        if shared and max(shared) and 2 * max(shared) >= len(s):
            j = shared.index(max(shared))
            out.append((i, j, shared[j], len(s)))
    return out


_SETS = st.lists(st.sets(st.integers(0, 12), min_size=1, max_size=5), max_size=40)


@given(_SETS, _SETS, st.booleans())
@settings(max_examples=400, deadline=None)
def test_the_bounded_pairing_is_the_plain_rule(
    mine: list[set[int]], theirs: list[set[int]], again: bool
) -> None:
    """Repeated passages, shingles found in many earlier passages (a small vocabulary: past
    the lookup threshold), ties: the same pairs as counting every pair."""
    if again:
        mine = [set(t) for t in theirs] + mine
    assert _pairs(mine, theirs, budget=10**9) == _pairs_plainly(mine, theirs)


def test_pairing_work_is_bounded_and_stops_at_its_budget() -> None:
    """A text of one passage repeated pairs in linear time (each distinct passage is counted
    once); a text built so that every passage shares shingles with thousands of others stops
    at the budget with the pairs of the passages before it (a prefix of the plain rule's)."""
    same = [{1, 2}] * 3000
    assert _pairs(same, same, budget=50_000) == [(i, 0, 2, 2) for i in range(3000)]
    rng = random.Random(3)
    crowd = [{rng.randrange(40), rng.randrange(40)} for _ in range(2000)]
    plain = _pairs_plainly(crowd, crowd)
    cut = _pairs(crowd, crowd, budget=20_000)
    assert 0 < len(cut) < len(plain) and cut == plain[: len(cut)]
    assert _pairs(crowd, crowd, budget=10**9) == plain


def test_evidence_of_a_long_repeated_text_is_one_span() -> None:
    """The text that froze a worker for a minute (70 KB of one short passage, checked
    against itself): one run, all of it, every passage paired with the first of the identical
    earlier ones (the rule gives ties to the first); past PASSAGES_READ passages, no further."""
    text = "a b c.\n" * 8_000
    (span,) = shared_spans(text, text)
    assert (span.start, span.end, span.share) == (0, len(text.rstrip()), 1.0)
    assert (span.earlier_start, span.earlier_end) == (0, len("a b c."))
    longer = "a b c.\n" * (PASSAGES_READ + 2_000)
    (span,) = shared_spans(longer, longer)
    assert (span.start, span.end) == (0, len("a b c.\n") * PASSAGES_READ - 1)


def _pairs_one_by_one(
    my_sets: list[set[int]], their_sets: list[set[int]], budget: int
) -> list[tuple[int, int, int, int]]:
    """The bounded pairing a passage at a time, with dicts of sets: the reference for where the
    budget stops. Counted: each earlier passage listed under a rare shingle, each common
    shingle looked up in a candidate, each candidate that only common shingles found checked
    whole."""
    first: dict[frozenset[int], int] = {}
    for j, s in enumerate(their_sets):
        first.setdefault(frozenset(s), j)
    members = {j: key for key, j in first.items()}
    where: dict[int, list[int]] = {}
    for key, j in first.items():
        for h in key:
            where.setdefault(h, []).append(j)
    done: dict[frozenset[int], tuple[int, int] | None] = {}
    out: list[tuple[int, int, int, int]] = []
    spent = 0
    for i, s in enumerate(my_sets):
        key = frozenset(s)
        if key not in done:
            heavy = [h for h in key if len(where.get(h, ())) > 8]
            hits: dict[int, int] = {}
            for h in key:
                if len(where.get(h, ())) <= 8:
                    for j in where.get(h, ()):
                        spent += 1
                        hits[j] = hits.get(j, 0) + 1
            for j in hits:
                spent += len(heavy)
                hits[j] += len(members[j] & set(heavy))
            ranked = sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))
            if heavy and (not ranked or ranked[0][1] <= len(heavy)):
                for h in heavy:
                    for j in where[h]:
                        spent += 1
                        if j not in hits:
                            spent += len(key)
                            hits[j] = len(members[j] & key)
                ranked = sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))
            done[key] = ranked[0] if ranked else None
        got = done[key]
        if got is not None and 2 * got[1] >= len(s):
            out.append((i, got[0], got[1], len(s)))
        if spent > budget:
            break
    return out


_SOME_SETS = st.lists(st.sets(st.integers(0, 12), max_size=5), max_size=40)
_ONE_EACH = st.lists(st.sets(st.integers(0, 30), min_size=1, max_size=1), max_size=60)


@given(
    st.one_of(_SOME_SETS, _ONE_EACH),
    st.one_of(_SOME_SETS, _ONE_EACH),
    st.booleans(),
    st.integers(0, 300),
)
@settings(max_examples=1000, deadline=None)
def test_the_pairing_stops_where_pairing_one_by_one_stops(
    mine: list[set[int]], theirs: list[set[int]], again: bool, budget: int
) -> None:
    """Passages of one shingle (a text of many short lines), empty ones, shingles of many
    earlier passages, repeats and small budgets: the same pairs, cut at the same passage, as
    pairing one passage at a time."""
    if again:
        mine = [set(t) for t in theirs] + mine
    assert _pairs(mine, theirs, budget) == _pairs_one_by_one(mine, theirs, budget)


def test_the_budget_cuts_between_crowded_and_plain_passages_alike() -> None:
    """Passages of rare shingles between passages of shingles found in many earlier ones,
    every budget: the cut falls where pairing one by one puts it, before a crowded passage or
    after it."""
    rng = random.Random(5)
    crowd = [set(rng.sample(range(12), 2)) if i % 3 else {100 + i, 200 + i} for i in range(300)]
    distinct = {frozenset(s) for s in crowd}
    assert max(sum(h in s for s in distinct) for h in range(12)) > 8  # some are looked up
    for budget in [*range(0, 200), *range(200, 6000, 37)]:
        assert _pairs(crowd, crowd, budget) == _pairs_one_by_one(crowd, crowd, budget)


@pytest.mark.parametrize(
    "line",
    [
        lambda i: f"字{i}",  # one CJK character and a number: a shingle a line
        lambda i: f"w{i} x{i}",
        lambda i: f"é{i % 7} ü{i % 5}",  # few distinct lines, each many times
        lambda i: "a b c" if i % 2 else f"a b {i % 4}",  # shingles of many lines
        lambda i: f"{('alpha', 'beta', 'gamma')[i % 3]} {i % 11}. {i % 2}!",
    ],
)
def test_many_short_lines_share_what_the_plain_rule_shares(line: Callable[[int], str]) -> None:
    text = "\n".join(line(i) for i in range(400))
    other = "\n".join(line(i) for i in range(399, -1, -3))
    for new, earlier in ((text, text), (other, text), (text, other)):
        want = _shared_spans_plainly(new, earlier, DEFAULT_SHINGLE, DEFAULT_SEED, 32)
        assert shared_spans(new, earlier) == want


_SHORT = st.sampled_from(["a", "b", "a b", "b a", "a b c", "c a b", "字", "字二", "x1", "é", "ß"])


@given(
    st.lists(_SHORT, max_size=120),
    st.lists(_SHORT, max_size=120),
    st.sampled_from(["\n", ". ", "。", "! \n"]),
    st.integers(1, 3),
)
@settings(max_examples=300, deadline=None)
def test_many_short_passages_share_what_the_plain_rule_shares(
    a: list[str], b: list[str], stop: str, w: int
) -> None:
    """Many passages of one or two shingles from a few words: shingles of many passages,
    repeats within and across the texts, ties."""
    new, earlier = stop.join(a), stop.join(b)
    assert shared_spans(new, earlier, w=w, seed=7) == _shared_spans_plainly(new, earlier, w, 7, 32)


@given(
    st.lists(
        PIECES
        | st.sampled_from(
            ["𝐀", "😀", "\ud800", "𝟘", "\U00020000", "\u3000", "\u2028", "\x1c", "\x85", ".\u3000"]
        ),
        max_size=40,
    )
)
@settings(max_examples=500, deadline=None)
def test_passages_past_the_bmp_and_of_rare_spaces_are_those_of_the_reference(
    parts: list[str],
) -> None:
    text = "".join(parts)
    assert passages(text) == _passages_by_lookbehind(text)
    assert passages(text, 2) == _passages_by_lookbehind(text)[:2]


@given(st.lists(st.sets(st.integers(0, 9), max_size=4), max_size=30))
@settings(max_examples=300, deadline=None)
def test_sets_alike_by_chance_are_told_apart(sets: list[set[int]]) -> None:
    """Sets are grouped by a sum of their mixed members, then checked member by member: with a
    mix that makes most sets look alike, the groups are still those of equal sets."""
    with patch("neardup.sketch.evidence.mix64", lambda x: x % np.uint64(3)):
        rows = [sorted(s) for s in sets]
        ids = np.array([h for row in rows for h in row], dtype=np.intp)
        offsets = np.cumsum([0, *map(len, rows)]).astype(np.intp)
        firsts: dict[frozenset[int], int] = {}
        assert _alike(ids, offsets).tolist() == [
            firsts.setdefault(frozenset(s), k) for k, s in enumerate(sets)
        ]
        assert _pairs(sets, sets[::-1], 10**9) == _pairs_plainly(sets, sets[::-1])


def test_passages_whose_references_decode_to_line_ends() -> None:
    """A passage holding ``&#10;`` folds to text with a line end of its own: its shingles are
    still its own, whatever passage comes next."""
    text = "a&#10;b c d. e &#10; f g\nh &amp; i&#10;j\nk l m. a&#10;b c d."
    spans = passages(text)
    assert _sets(text, spans, DEFAULT_SHINGLE, DEFAULT_SEED) == [
        set(shingle_hashes(text[a:b]).tolist()) for a, b in spans
    ]
    other = "k l m! a&#10;b c d.\nh & i\nj"
    for new, earlier in ((text, other), (other, text), (text, text)):
        want = _shared_spans_plainly(new, earlier, DEFAULT_SHINGLE, DEFAULT_SEED, 32)
        assert shared_spans(new, earlier) == want
