"""The compiled core's line keys (``neardup._core.line_keys``, ``core/src/lines.rs``) are
exactly what the reference :func:`neardup.sketch.lines.lines_of` gives: generated ASCII text
with list markers, every whitespace ``str.split`` knows, long lines and long texts, any bounds,
seed and source; batches mixing ASCII with other scripts (those stay on the reference); the
Reuters-21578 stories; and ``neardup dedup`` gives the same verdicts with either core.

``make test`` and ``make unit`` set ``NEARDUP_REQUIRE_CORE=1``: this module then fails when the
compiled core was not built. Without it, the comparisons skip and say how to build it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import mmh3
import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from harness.data import reuters
from neardup.sketch.features import DEFAULT_SEED
from neardup.sketch.lines import (
    LINE_KEY_CHARS,
    LINES_READ,
    Lines,
    lines_of,
    passages_of,
    source_key,
)
from neardup.stream import core
from neardup.stream.engine import boilerplate
from neardup.stream.namespaces.policy import Policy


@pytest.fixture(autouse=True)
def _fresh_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The compiled core in use, even when the suite runs on the reference
    (``NEARDUP_CORE=python``); the choice is cached per process: made again after each test."""
    monkeypatch.delenv(core.ENV, raising=False)
    core.compiled.cache_clear()
    yield
    core.compiled.cache_clear()


def _reference(texts: list[str], sources: list[str], seed: int, lo: int, hi: int) -> list[Lines]:
    return [
        lines_of(t, s, seed, min_tokens=lo, max_tokens=hi)
        for t, s in zip(texts, sources, strict=True)
    ]


def _compiled(
    kernel: ModuleType, texts: list[str], sources: list[str], seed: int, lo: int, hi: int
) -> list[Lines]:
    """:func:`core.lines_of_many` with the compiled core in use (checked)."""
    assert core.compiled() is kernel, "the compiled core is not in use (NEARDUP_CORE?)"
    return core.lines_of_many(texts, sources, seed, min_tokens=lo, max_tokens=hi)


# What an ASCII line is made of: list numbering and what looks like it, every character that
# Python's str.split() takes for whitespace (\x1c-\x1f too), characters that are neither word
# nor space, words of any case.
_PIECES = st.one_of(
    st.sampled_from(
        [
            "1. ",
            "2) ",
            "a) ",
            "B. ",
            "123. ",
            "1234. ",
            "-- ",
            "- 3) ",
            "* ",
            "(a) ",
            "a.",
            "9)",
            "_",
            "\t",
            "\x0b",
            "\x0c",
            "\r",
            "\x1c",
            "\x1d",
            "\x1e",
            "\x1f",
            " ",
            "  ",
            "...",
            "|",
            "\x00",
            "\x7f",
            "\x1b",
        ]
    ),
    st.text(st.characters(min_codepoint=0, max_codepoint=127, exclude_characters="\n"), max_size=9),
    st.from_regex(r"[A-Za-z0-9]{1,8}", fullmatch=True),
)
_LINE = st.one_of(
    st.lists(_PIECES, max_size=12).map("".join),
    # longer than LINE_KEY_CHARS, with few or many words
    st.integers(1, 3).map(lambda k: ("word " * (LINE_KEY_CHARS // 5 + k))[: LINE_KEY_CHARS + k]),
    st.integers(0, 3).map(lambda k: "x" * (LINE_KEY_CHARS - 1 + k)),
)
_TEXT = st.lists(_LINE, max_size=25).map("\n".join)
_SEED = st.one_of(st.just(DEFAULT_SEED), st.integers(0, 2**32 - 1))
_SOURCE = st.one_of(st.just(""), st.text(max_size=12))
_LO = st.integers(-2, 12)
_HI = st.one_of(st.just(0), st.integers(1, 50))


@given(text=_TEXT, source=_SOURCE, seed=_SEED, lo=_LO, hi=_HI)
@example(text="1. a b\n\x1ca)\x1fb c\n\n...\n 12) x y \r", source="", seed=DEFAULT_SEED, lo=1, hi=0)
@example(text="word " * 3000, source="s", seed=0, lo=2, hi=40)  # a long line, bounded
@example(text="-- 1234. a b\n_ x\n\x7f\x00\n- 12) a", source="s", seed=2**32 - 1, lo=0, hi=0)
def test_line_keys_of_ascii_text_are_the_reference(
    kernel: ModuleType, text: str, source: str, seed: int, lo: int, hi: int
) -> None:
    assert _compiled(kernel, [text], [source], seed, lo, hi) == _reference(
        [text], [source], seed, lo, hi
    )


@given(
    lines=st.lists(st.sampled_from(["1. a b", "", "x y z", "--", "Q", "a) B c d"]), max_size=8),
    n=st.integers(2 * LINES_READ - 2, 2 * LINES_READ + 40),
    seed=_SEED,
    hi=_HI,
)
def test_a_long_text_is_read_at_its_head_and_foot_as_the_reference_reads_it(
    kernel: ModuleType, lines: list[str], n: int, seed: int, hi: int
) -> None:
    """Past 2 * LINES_READ lines only the first and last LINES_READ are keyed, at their
    offsets in the whole text."""
    pool = lines or ["one two"]
    text = "\n".join(
        f"{pool[i % len(pool)]} {i}" if i % 3 else pool[i % len(pool)] for i in range(n)
    )
    assert _compiled(kernel, [text], ["s"], seed, 2, hi) == _reference([text], ["s"], seed, 2, hi)


@given(word=st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=70), seed=_SEED)
def test_fingerprints_are_mmh3s_first_half(kernel: ModuleType, word: str, seed: int) -> None:
    """A one-word line's fingerprint is its lowered text's MurmurHash3 x64/128, first half,
    big-endian: against mmh3 itself, at every length of a block's tail."""
    line = "x" + word.lower()  # a word character first; one word: no list number
    ((spans, keys),) = kernel.line_keys([line], [b"\0" * 8], seed, 1, 0, LINES_READ, LINE_KEY_CHARS)
    assert spans == ((0, len(line)),)
    assert keys == (b"\0" * 8 + mmh3.hash_bytes(line.encode(), seed)[7::-1],)


_OTHER = st.text(
    st.one_of(
        st.characters(min_codepoint=0, max_codepoint=127),
        st.sampled_from(
            [
                *"абвгдЖЩ中文新闻報導ภาษาไทยالعربية\u0301\u0308\u064b",
                *["\u200b", "\u200d", "\ufeff", "\u00a0", "\u0085", "\u2028", "\u3000", "Ⅻ", "ﬁ"],
            ]
        ),
    ),
    max_size=120,
)


@given(
    texts=st.lists(st.one_of(_TEXT, _OTHER), max_size=8),
    seed=_SEED,
    lo=_LO,
    hi=_HI,
    data=st.data(),
)
def test_a_batch_mixing_scripts_is_the_reference_text_by_text(
    kernel: ModuleType, texts: list[str], seed: int, lo: int, hi: int, data: st.DataObject
) -> None:
    """ASCII texts go to the compiled core, the others to the reference, each in its place."""
    sources = [data.draw(_SOURCE) for _ in texts]
    assert _compiled(kernel, texts, sources, seed, lo, hi) == _reference(
        texts, sources, seed, lo, hi
    )


def test_the_kernel_refuses_what_it_does_not_read(kernel: ModuleType) -> None:
    with pytest.raises(ValueError, match="ASCII"):
        kernel.line_keys(["ab\nпривет мир"], [b"\0" * 8], 0, 1, 0, LINES_READ, LINE_KEY_CHARS)
    with pytest.raises(ValueError, match="head"):
        kernel.line_keys(["ab"], [b"\0" * 7], 0, 1, 0, LINES_READ, LINE_KEY_CHARS)
    with pytest.raises(ValueError, match="head"):
        kernel.line_keys(["ab"], [], 0, 1, 0, LINES_READ, LINE_KEY_CHARS)


def test_bounds_the_kernel_does_not_take_are_the_reference(kernel: ModuleType) -> None:
    text = "1. Two words\nthree more words here"
    for seed, lo, hi in [(2**32, 1, 0), (-1, 1, 0), (0, 1, -1), (0, 2**70, 0), (0, 1, 2**40)]:
        try:
            want: list[Lines] | type[Exception] = _reference([text], [""], seed, lo, hi)
        except ValueError:
            want = ValueError
        if want is ValueError:
            with pytest.raises(ValueError):
                _compiled(kernel, [text], [""], seed, lo, hi)
        else:
            assert _compiled(kernel, [text], [""], seed, lo, hi) == want


@pytest.mark.parametrize(("lo", "hi"), [(2, Policy().boilerplate_tokens), (1, 0), (2, 6)])
def test_reuters_stories_are_the_reference(kernel: ModuleType, lo: int, hi: int) -> None:
    texts = [r["text"] for r in reuters()]
    sources = ["" if i % 3 else "reuters.example" for i in range(len(texts))]
    got = _compiled(kernel, texts, sources, DEFAULT_SEED, lo, hi)
    assert got == _reference(texts, sources, DEFAULT_SEED, lo, hi)
    assert sum(map(len, got)) > 50_000


def test_neardup_core_python_forces_the_reference(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(core.ENV, "python")
    core.compiled.cache_clear()
    monkeypatch.setattr(kernel, "line_keys", None)  # called: a TypeError
    texts = [r["text"] for r in reuters()[:50]]
    got = core.lines_of_many(texts, [""] * 50, min_tokens=2, max_tokens=40)
    assert got == _reference(texts, [""] * 50, DEFAULT_SEED, 2, 40)


def test_units_of_a_batch_are_each_texts_units(kernel: ModuleType) -> None:
    """:func:`boilerplate.units_many` (the learner's batch) gives what the reference gives text
    by text (lines without a source, lines and passages with one), and what :func:`units`
    gives, kept or not (a text read twice in a batch, one too long to keep)."""
    texts = [r["text"] for r in reuters()[:200]]
    texts += [texts[3], "Home | News\n" + "a long story line " * 1000, "Главная\nНовости дня"]
    texts += ["Most read: One story | Two story | Three\nA story. Its second sentence."]
    sources = ["" if i % 4 else "wire" for i in range(len(texts))]
    for policy in [Policy(), Policy(boilerplate_tokens=5, seed=7)]:
        bounds = {"min_tokens": 2, "max_tokens": policy.boilerplate_tokens}
        batch = boilerplate.units_many(texts, sources, policy)
        for t, s, got in zip(texts, sources, batch, strict=True):
            read = passages_of if s else lines_of
            assert got == read(t, s, policy.seed, **bounds)
            assert got == boilerplate.units("".join(list(t)), s, policy)
        assert any(not got.is_line(i) for got in batch for i in range(len(got)))  # passages


def _dedup(src: Path, out: Path, env: dict[str, str]) -> list[bytes]:
    cmd = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", str(src), "-o", str(out)]
    subprocess.run([*cmd, "--no-progress"], check=True, capture_output=True, env=env)
    return out.read_bytes().splitlines()


@pytest.mark.parametrize("sourced", [False, True])
def test_dedup_gives_the_same_verdicts_with_either_core(
    kernel: ModuleType, tmp_path: Path, sourced: bool
) -> None:
    """3,000 Reuters stories (their repeated lines, their copies) through ``neardup dedup``,
    without a source or one of three wires each (lines and passages): the compiled core's
    verdicts are the reference's, line for line."""
    src = tmp_path / "in.jsonl"
    stories = reuters()[:3000]
    rows = [{"id": r["id"], "text": r["text"]} for r in stories]
    if sourced:
        rows = [{**r, "source": f"wire{i % 3}"} for i, r in enumerate(rows)]
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    env = {k: v for k, v in os.environ.items() if k != core.ENV}
    got = _dedup(src, tmp_path / "compiled.jsonl", env)
    want = _dedup(src, tmp_path / "reference.jsonl", {**env, core.ENV: "python"})
    assert len(got) == len(stories)
    assert got == want
    assert sum(b'"original"' not in line for line in got) > 10  # copies were judged


def test_source_keys_prepended_are_the_references(kernel: ModuleType) -> None:
    got = _compiled(kernel, ["a b\nc d"], ["wire"], 5, 1, 0)[0]
    assert {k[:8] for k in got.keys} == {source_key("wire", 5)}
