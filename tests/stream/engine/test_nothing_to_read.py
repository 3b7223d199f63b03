"""Nothing is a copy of nothing: a text whose canonical form is empty is refused (``empty_text``)
on every path, and one whose form has no word (emoji, flags, punctuation) is judged on what was
sent: the same one sent twice is a verbatim copy, two different ones are never linked.

Paths: the engine on the memory index, the Python API, the worker's batch handler (dead letters),
``/check`` (400) and ``neardup dedup`` (the line reported, exit status 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup import Index
from neardup.sketch import features
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.prepare import as_sent, shows_nothing
from neardup.stream.errors import InvalidMessage
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.worker.messages import Incoming
from neardup.stream.worker.metrics import Metrics
from neardup.stream.worker.pipeline import BatchHandler

ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
SCOTLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
WALES = "\U0001f3f4\U000e0067\U000e0062\U000e0077\U000e006c\U000e0073\U000e007f"

# forms that are empty: nothing a reader sees
EMPTY = [
    "\u200b\u200b",  # zero width spaces
    "\u2060\ufeff\u200d",  # word joiner, BOM, zero width joiner
    "<p></p>",
    "<div><br></div>",
    "<p>&nbsp;</p>",
    "&#8203;",  # a zero width space as a reference
    "\u00ad",  # a soft hyphen
    "\u3164\u3164",  # Hangul fillers: letters that show nothing
    "\u0301\u0301",  # marks on nothing
    " \u200b \n\u2060 ",
]
# pairs of different comments with no word: never linked
WORDLESS_PAIRS = [
    (ENGLAND, SCOTLAND),
    (SCOTLAND, WALES),
    ("!!!", "???"),
    ("\U0001f600" * 6, "\U0001f600" * 5 + "\U0001f622"),  # 😀😀😀😀😀😀 / 😀😀😀😀😀😢
    ("!!!!!!!!!!", "!!!!!!!!!!!"),
    ("\U0001f44d\U0001f3fb", "\U0001f44d\U0001f3ff"),  # 👍 in two skin tones
    ("*****", "****"),
]


def _run(engine: Engine, articles: list[Article], register: bool = True) -> list[object]:
    import asyncio

    return list(asyncio.run(engine.process(articles, register=register)))


# --------------------------------------------------------------------------- the engine


@pytest.mark.parametrize("text", EMPTY)
def test_an_empty_form_is_refused_and_registers_nothing(text: str) -> None:
    assert features.normalize(text) == ""
    engine = Engine(MemoryIndex())
    for register in (False, True, True):
        (got,) = _run(engine, [Article("a", text)], register)
        assert isinstance(got, InvalidMessage) and got.reason == "empty_text", got
    # a batch of such texts forms no cluster: each is refused alone
    got = _run(engine, [Article(f"e{i}", t) for i, t in enumerate(EMPTY)])
    assert all(isinstance(r, InvalidMessage) and r.reason == "empty_text" for r in got)
    # nothing was registered: the next text is the first article of the namespace
    (first,) = _run(engine, [Article("x", "a real comment")])
    assert isinstance(first, Verdict) and first.seq == 1 and first.verdict == "original"


def test_declared_html_with_nothing_shown_is_refused() -> None:
    engine = Engine(MemoryIndex())
    for text in ("<p></p>", "<div><br/></div>", "<p>\u200b</p>"):
        (got,) = _run(engine, [Article("a", text, format="html")])
        assert isinstance(got, InvalidMessage) and got.reason == "empty_text", text
    # declared plain text, markup is what it shows
    (got,) = _run(engine, [Article("b", "<p></p>", format="text")])
    assert isinstance(got, Verdict) and got.verdict == "original"


@pytest.mark.parametrize(("first", "second"), WORDLESS_PAIRS)
def test_different_wordless_comments_are_never_linked(first: str, second: str) -> None:
    engine = Engine(MemoryIndex())
    a, b, again = _run(engine, [Article("a", first), Article("b", second), Article("c", first)])
    assert isinstance(a, Verdict) and a.verdict == "original"
    assert isinstance(b, Verdict) and (b.verdict, b.duplicate_of, b.matches) == (
        "original",
        None,
        (),
    )
    assert b.related == ()
    # the same comment sent again is a verbatim copy
    assert isinstance(again, Verdict)
    assert (again.verdict, again.duplicate_of, again.method) == ("duplicate", "a", "exact")
    (checked,) = _run(engine, [Article("d", second)], register=False)
    assert isinstance(checked, Verdict) and checked.duplicate_of == "b"


def test_a_wordless_comment_is_read_as_sent_but_its_markup_and_spacing_are_not() -> None:
    engine = Engine(MemoryIndex())
    got = _run(
        engine,
        [
            Article("a", "!!!"),
            Article("b", "  !!!\n"),
            Article("c", "<b>!!!</b>"),
            Article("d", "\U0001f600"),
            Article("e", "Great \U0001f600"),  # a word: judged on its form, not as sent
        ],
    )
    assert all(isinstance(v, Verdict) for v in got)
    assert [getattr(v, "duplicate_of", "?") for v in got] == [None, "a", "a", None, None]
    assert as_sent(ENGLAND) != as_sent(SCOTLAND) and as_sent(" !!! ") == "!!!"


_WORDLESS = st.text(
    st.one_of(
        st.characters(categories=("So", "Sk", "Sm", "Sc", "Po", "Pd", "Ps", "Pe")),
        st.sampled_from(["\u200d", "\ufe0f", "\U0001f3fb", "\U000e0067", "\U000e007f", " "]),
    ),
    min_size=1,
    max_size=12,
).filter(lambda t: features.normalize(t) != "" and not features.tokenize(t))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(_WORDLESS, _WORDLESS)
@example(ENGLAND, SCOTLAND)
@example("\U0001f600" * 6, "\U0001f600" * 5 + "\U0001f622")
def test_two_wordless_texts_are_linked_only_when_sent_alike(first: str, second: str) -> None:
    engine = Engine(MemoryIndex())
    a, b = _run(engine, [Article("a", first), Article("b", second)])
    assert isinstance(a, Verdict) and isinstance(b, Verdict)
    if as_sent(first) == as_sent(second):
        assert (b.verdict, b.duplicate_of, b.method) == ("duplicate", "a", "exact")
    else:
        assert (b.verdict, b.duplicate_of, b.matches, b.related) == ("original", None, (), ())


_NOTHING = st.lists(
    st.sampled_from(
        [" ", "\n", "\u200b", "\u200c", "\u2060", "\ufeff", "\u00ad", "\u0301", "\u3164",
         "<p>", "</p>", "<br>", "<div>", "</div>", "&nbsp;", "&#8203;", "\u202e"]
    ),
    min_size=1,
    max_size=20,
).map("".join)  # fmt: skip


@settings(max_examples=150)
@given(_NOTHING)
def test_shows_nothing_is_the_empty_form(text: str) -> None:
    assert shows_nothing(text) == (features.normalize(text) == "")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=30))
def test_shows_nothing_never_refuses_a_visible_text(text: str) -> None:
    if shows_nothing(text):
        assert features.normalize(text) == ""


# --------------------------------------------------------------------------- the Python API


def test_the_python_api_refuses_an_empty_form_with_a_value_error() -> None:
    with Index() as ix:
        for text in EMPTY:
            with pytest.raises(ValueError, match="shows nothing") as got:
                ix.add("a", text)
            assert isinstance(got.value, InvalidMessage) and got.value.reason == "empty_text"
            with pytest.raises(ValueError, match="shows nothing"):
                ix.check(text)
        assert ix.add("en", ENGLAND).verdict == "original"
        assert ix.add("sc", SCOTLAND).verdict == "original"
        assert ix.check(ENGLAND).duplicate_of == "en"
        assert ix.query(SCOTLAND) == ["sc"]


# --------------------------------------------------------------------------- the worker


async def test_the_worker_dead_letters_an_empty_form_and_keeps_flags_apart() -> None:
    handler = BatchHandler(Engine(MemoryIndex()), Metrics())
    bodies = [{"id": f"e{i}", "text": t} for i, t in enumerate(EMPTY)]
    bodies += [
        {"id": "html", "text": "<p></p>", "format": "html"},
        {"id": "en", "text": ENGLAND},
        {"id": "sc", "text": SCOTLAND},
        {"id": "en2", "text": ENGLAND},
    ]
    batch = [
        Incoming(orjson.dumps(b), str(b["id"]).encode(), "articles", 0, n)
        for n, b in enumerate(bodies)
    ]
    verdicts, dead = await handler.handle(batch)
    letters = [orjson.loads(d.value or b"") for d in dead]
    assert [(d["reason"], d["source"]["offset"]) for d in letters] == [
        ("empty_text", n) for n in range(len(EMPTY) + 1)
    ]
    got = {v["id"]: v for v in (orjson.loads(v.value or b"") for v in verdicts)}
    assert set(got) == {"en", "sc", "en2"}
    assert got["sc"]["verdict"] == "original" and got["sc"]["cluster"] == "sc"
    assert (got["en2"]["verdict"], got["en2"]["duplicate_of"]) == ("duplicate", "en")
    assert (
        'neardup_dead_letters_total{reason="empty_text"} 11.0' in handler.metrics.render().decode()
    )


# --------------------------------------------------------------------------- neardup dedup

CLI = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", "--no-progress"]


def test_dedup_reports_an_empty_form_as_an_invalid_line(tmp_path: Path) -> None:
    lines = [
        {"id": "a", "text": "\u200b\u200b"},
        {"id": "b", "text": "<div><br></div>"},
        {"id": "en", "text": ENGLAND},
        {"id": "sc", "text": SCOTLAND},
        {"id": "c", "text": "\u2060\ufeff\u200d"},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    done = subprocess.run([*CLI, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    verdicts = [json.loads(x) for x in done.stdout.splitlines()]
    assert [(v["id"], v["verdict"]) for v in verdicts] == [
        ("a", "invalid"),
        ("b", "invalid"),
        ("en", "original"),
        ("sc", "original"),
        ("c", "invalid"),
    ]
    for number in (1, 2, 5):
        assert f"line {number}: empty_text:" in done.stderr
