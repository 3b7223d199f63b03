"""Copies across the short/long line: a text just under ``short_tokens`` and its copy just over
it (a byline added, first words dropped, a tag at the end) are compared, whichever came first.

Real text around the line: windows of Reuters story bodies (words) and of Chinese reviews
(characters, the tokens of CJK text); exact verdicts for the README's example and for the
rules the short path keeps (a changed number is related, not a copy).
"""

from __future__ import annotations

import asyncio
from functools import cache

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness import data
from neardup.api import Index
from neardup.sketch import facts, features
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.judge import judge_short
from neardup.stream.engine.prepare import boundary, prepare
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Change, Verdict
from neardup.stream.namespaces.policy import PASSAGES, Policy
from neardup.stream.records import Kind

POLICY = Policy()
STORY = (
    "The central bank raised its key rate by half a point on Tuesday, its third rise this "
    "year and the markets reacted calmly to the widely expected move."
)
BYLINES_EN = ("Staff report:", "By Anna Keller", "From our correspondent:", "Update, by Reuters:")
TAGS_EN = ("(via newswire)", "Read more online", "Reporting by David Ng", "Source: wire")
BYLINES_ZH = ("记者报道：", "本报讯", "新华社电：", "据报道，")
TAGS_ZH = ("（转载）", "来源：网络", "欢迎转发", "以上为个人观点")


@cache
def _words() -> list[str]:
    """Reuters story bodies' words, in order (lower-case bodies only: headlines in capitals
    and tables left out)."""
    out: list[str] = []
    for story in data.reuters()[:600]:
        body = story["text"].split("\n", 1)[-1]
        if body.upper() != body:
            out += body.split()
    return out


@cache
def _chars() -> str:
    """Chinese reviews' text, one after another: its Han characters and punctuation (a Latin
    word or a number is one token of many characters: left out, each character is one)."""
    text = "".join(r["text"] for r in data.zh_reviews()[:3000])
    return "".join(c for c in text if ord(c) > 0x2000)


def _window(text: str, at: int, tokens: int) -> str:
    """The first characters of ``text`` from ``at`` that make ``tokens`` tokens."""
    end = at + tokens
    while _tokens(text[at:end]) < tokens:
        end += 1
    return text[at:end]


def _numbers(text: str) -> list[str]:
    """The numbers (digits or words) a text names: one dropped is a changed fact."""
    return sorted(facts.facts_of(features.normalize(text)).numbers)


def _norm(text: str) -> str:
    return features.normalize(text)


def _tokens(text: str) -> int:
    return len(features.tokenize(features.normalize(text)))


def _linked(original: str, copy: str, copy_first: bool) -> Verdict:
    """The verdict of the second text, the first added before it."""
    first, second = (copy, original) if copy_first else (original, copy)
    with Index() as ix:
        ix.add("a", first)
        return ix.check(second)


def _copy(tokens: list[str], how: str, n: int, extra: str, sep: str) -> str:
    if how == "prefix":
        return extra + sep + sep.join(tokens)
    if how == "suffix":
        return sep.join(tokens) + sep + extra
    return sep.join(tokens[n:])


def _check(original: str, copy: str, copy_first: bool) -> None:
    """Found when their numbers agree; else, when one is short, what the short rule says of
    the two (related, or nothing when it finds them too unlike), whatever the side of the
    line the other is on."""
    v = _linked(original, copy, copy_first)
    if _numbers(original) == _numbers(copy):
        assert (v.verdict, v.duplicate_of) == ("near_duplicate", "a"), (original, copy, v)
        return
    if min(_tokens(original), _tokens(copy)) >= POLICY.short_tokens:
        return  # both long: the long rule reads their numbers (a brief's), not the short one
    first, second = (copy, original) if copy_first else (original, copy)
    rule = judge_short(POLICY, _norm(second), _norm(first))
    want = "none" if rule is None else "copy" if rule[1] else "related"
    got = "copy" if v.duplicate_of == "a" else "related" if v.related else "none"
    assert got == want, (original, copy, v)


@settings(max_examples=200)
@given(
    at=st.integers(0, 60_000),
    length=st.integers(20, 40),
    how=st.sampled_from(["prefix", "dropped", "suffix"]),
    drop=st.integers(1, 3),
    extra=st.integers(0, 3),
    copy_first=st.booleans(),
)
def test_an_english_copy_across_the_line_is_found(
    at: int, length: int, how: str, drop: int, extra: int, copy_first: bool
) -> None:
    words = _words()[at % (len(_words()) - 40) :][:length]
    copy = _copy(words, how, drop, (BYLINES_EN if how == "prefix" else TAGS_EN)[extra], " ")
    _check(" ".join(words), copy, copy_first)


@settings(max_examples=200)
@given(
    at=st.integers(0, 200_000),
    length=st.integers(20, 40),
    how=st.sampled_from(["prefix", "dropped", "suffix"]),
    drop=st.integers(1, 3),
    extra=st.integers(0, 3),
    copy_first=st.booleans(),
)
def test_a_chinese_copy_across_the_line_is_found(
    at: int, length: int, how: str, drop: int, extra: int, copy_first: bool
) -> None:
    chars = _window(_chars(), at % (len(_chars()) - 100), length)
    copy = _copy(list(chars), how, drop, (BYLINES_ZH if how == "prefix" else TAGS_ZH)[extra], "")
    # the canonical form folds some words whole (访问 -> 存取): a cut inside one changes it
    assume(_norm(chars)[drop:] in _norm(copy) or _norm(chars) in _norm(copy))
    _check(chars, copy, copy_first)


def test_the_readme_example_is_found_both_ways() -> None:
    copy = "Staff report: " + STORY
    assert (_tokens(STORY), _tokens(copy)) == (28, 30)  # one short, one long
    for first, second in ((STORY, copy), (copy, STORY)):
        with Index() as ix:
            ix.add("a", first)
            v = ix.check(second)
        assert (v.verdict, v.duplicate_of, v.method) == ("near_duplicate", "a", "edit")


def test_a_changed_number_across_the_line_is_related_not_a_copy() -> None:
    long = "Staff report: " + STORY.replace("its third rise", "its 4th rise")
    with Index() as ix:
        ix.add("a", STORY.replace("its third rise", "its 3rd rise"))
        v = ix.check(long)
    assert (v.verdict, v.duplicate_of) == ("original", None)
    assert [r.id for r in v.related] == ["a"]
    assert Change("number", "3", "4") in v.related[0].changes


def test_a_long_text_near_the_line_has_a_short_texts_buckets_too() -> None:
    short, near, far = prepare(
        POLICY,
        [
            Article("s", STORY),
            Article("n", "Staff report: " + STORY),
            Article("f", STORY + " " + STORY.replace("Tuesday", "Friday")),
        ],
    )
    assert (short.kind, near.kind, far.kind) == (Kind.SHORT, Kind.LONG, Kind.LONG)
    assert _tokens(far.article.text) > boundary(POLICY) >= _tokens(near.article.text)
    assert set(short.buckets) & set(near.buckets)
    assert not set(short.buckets) & set(far.buckets)
    # the short buckets come on top of a long text's own (its passages, kept apart, too)
    own = [len(p.buckets) - len(p.passages[:PASSAGES]) for p in (near, far)]
    assert own[0] == own[1] + len(short.buckets)


def test_a_long_record_without_its_text_is_compared_by_shingles() -> None:
    """A namespace that keeps no text: the long record has its shingles and numbers only."""

    async def run() -> list[object]:
        engine = Engine(MemoryIndex(), Policy(keep_text=False))
        long = "Staff report: " + STORY + " More follows."
        return list(await engine.process([Article("a", long), Article("b", STORY)]))

    _, b = asyncio.run(run())
    assert isinstance(b, Verdict)
    assert (b.verdict, b.duplicate_of, b.method) == ("near_duplicate", "a", "jaccard")


def test_texts_far_from_the_line_are_not_compared_across() -> None:
    """A brief quoted inside a long story is not its copy: past the margin, no short buckets."""
    story = " ".join(_words()[:300])
    with Index() as ix:
        ix.add("a", STORY)
        v = ix.check(story + " " + STORY)
    assert v.verdict == "original" and not v.related


TELCOM = (
    "<TELCOM GENERAL CORP> PRESIDENT RESIGNS\nTelcom General Corp, which\nstopped operating a "
    "month ago, said Robert F. Friedman has\nresigned as president, chief executive officer "
    "and a director."
)


def test_a_brief_stripped_of_its_punctuation_and_tagged_is_a_copy() -> None:
    """Reuters r4251 (28 tokens) sent again without a mark and tagged (30 tokens)."""
    bare = "".join(c for c in TELCOM if c.isalnum() or c.isspace()) + " (via newswire)"
    assert (_tokens(TELCOM), _tokens(bare)) == (28, 30)
    for first, second in ((TELCOM, bare), (bare, TELCOM)):
        with Index() as ix:
            ix.add("a", first)
            v = ix.check(second)
        assert (v.verdict, v.duplicate_of, v.changes, v.related) == ("near_duplicate", "a", (), ())


def test_the_margin_follows_the_short_threshold_up_to_twice_the_line() -> None:
    assert boundary(Policy()) == 46  # 30 / 0.8**2
    assert boundary(Policy(short_threshold=1.0)) == 30
    assert boundary(Policy(short_threshold=0.5)) == 60
    assert boundary(Policy(short_tokens=0)) == 0
