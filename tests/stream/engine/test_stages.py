"""The engine's stages over a batch: which index calls a batch makes, in which order.

The Redis index answers each call in one round trip (a script, or a pipeline), and the worker's
latency and the Redis protocol's tests rest on how many a batch makes; restructuring the engine
must not add one nor reorder them. A recording index (the memory index underneath) logs every
call a batch makes, with the size of what it asks for, over batches that take every path:
registration in chunks, a replay, boilerplate learned, whole-text and passage lookups, undecided
matches resolved, a read-only check.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from functools import cache
from typing import Any

import pytest

from harness import data
from neardup.stream.engine import boilerplate
from neardup.stream.engine.boilerplate import anchored
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.prepare import prepare
from neardup.stream.engine.stages import decision_order, in_flight, prepare_all, take_learned
from neardup.stream.errors import NeardupError
from neardup.stream.index.base import Probe
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

TEMPLATE = (
    "The Valley Examiner | Home | Town | Farming | Markets | Letters | Weather",
    "Read the Examiner first: news of the valley every morning since 1923",
    "Most read today: the dam repairs, the wheat price, the school board vote",
    "Copyright The Valley Examiner Ltd. 9 Mill Lane, Valleytown. All rights reserved.",
    "Contact the newsroom | Advertise with us | Terms of use | Privacy policy",
)


class Recording:
    """An index that logs each call it is given (its name, and how many items it asks about),
    then passes it to a memory index; ``remote`` makes the engine register in chunks."""

    def __init__(self, remote: bool = True) -> None:
        self._inner = MemoryIndex()
        self.remote = remote
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        got = getattr(self._inner, name)
        if not callable(got) or name.startswith("_"):
            return got
        if name == "registration":
            return self._registration

        def logged(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, _size(args[1:])))
            return got(*args, **kwargs)

        return logged

    @contextlib.asynccontextmanager
    async def _registration(self, ns: str, cap: int) -> AsyncIterator[Any]:
        self.calls.append(("registration", 0))
        async with self._inner.registration(ns, cap) as stream:
            yield _Stream(stream, self.calls)


class _Stream:
    """A registration stream that logs each chunk sent, and the probes' read."""

    def __init__(self, inner: Any, calls: list[tuple[str, int]]) -> None:
        self._inner, self._calls = inner, calls

    async def send(self, regs: Sequence[Any], window: Any) -> None:
        self._calls.append(("send", len(regs)))
        await self._inner.send(regs, window)

    async def probes(self) -> Any:
        self._calls.append(("probes", 0))
        return await self._inner.probes()


def _size(args: Sequence[Any]) -> int:
    """How many items a call asks about: the length of its first list argument, else 0."""
    return next((len(a) for a in args if isinstance(a, list | tuple | set | dict)), 0)


@cache
def _stories() -> tuple[str, ...]:
    """Real stories of 150 to 400 words, one line a paragraph."""
    out = []
    for doc in data.reuters():
        title, _, body = doc["text"].partition("\n")
        paragraphs = [" ".join(p.split()) for p in body.split("\n    ") if p.strip()]
        if len(paragraphs) >= 4 and 150 <= len(body.split()) <= 400:
            out.append("\n".join((title, *paragraphs)))
        if len(out) == 8:
            return tuple(out)
    raise AssertionError("not enough stories")


def _page(pid: str, story: str) -> Article:
    text = "\n".join((*TEMPLATE[:2], story, *TEMPLATE[2:]))
    return Article(pid, text, url=f"https://examiner.example/{pid}")


def again(story: str, n: int = 1) -> str:
    """A near copy: a few words changed, ``n`` lines added."""
    return story.replace(" the ", " a ", 4) + "\nAn added closing line of the copy." * n


def _batches() -> list[tuple[str, list[Article]]]:
    """Batches through every path: pages of one site (its template learned after three),
    a copy of an earlier story inside a longer text, a near copy, a replay, a short text."""
    s = _stories()
    embedded = s[5] + "\n" + s[1]  # an earlier story inside a longer new text
    edited = again(s[2])
    return [
        ("register", [_page(f"p{i}", s[i]) for i in range(3)]),
        ("register", [_page(f"p{i}", s[i]) for i in range(3, 6)]),
        ("register", [_page("p-again", s[1]), Article("e", embedded), Article("n", edited)]),
        ("register", [Article("n", edited), Article("short", "Fed sets rate at 5.25 pct")]),
        ("register", [Article("x", s[6]), Article("y", again(s[6])), Article("z", again(s[6], 2))]),
        ("check", [Article("q", s[2]), _page("q-page", s[4]), Article("q-e", embedded)]),
    ]


async def _run(
    remote: bool, retention: bool
) -> tuple[list[list[tuple[str, int]]], list[list[str]]]:
    """Each batch's calls and verdicts; ``retention``: under a retention (the index's clock,
    expiry before registering), else on a clock of the test's."""
    index = Recording(remote)
    if retention:
        engine = Engine(index, Policy(retention_s=3600.0), overlap_chunk=2)  # type: ignore[arg-type]
    else:
        engine = Engine(index, overlap_chunk=2, clock=lambda: 1000.0)  # type: ignore[arg-type]
    calls, verdicts = [], []
    for how, batch in _batches():
        index.calls.clear()
        got = await engine.process(batch, register=how == "register")
        calls.append(list(index.calls))
        verdicts.append([_shown(v) for v in got])
    return calls, verdicts


def _shown_calls(calls: list[tuple[str, int]]) -> str:
    """``name:size`` of each call (``name`` when it asks about no list), in order."""
    return " ".join(f"{name}:{n}" if n else name for name, n in calls)


def _shown(v: Verdict | NeardupError) -> str:
    if isinstance(v, NeardupError):
        return type(v).__name__
    return f"{v.id} {v.verdict} {v.duplicate_of} {v.cluster} {v.method}"


# What the engine asked of the index for each batch (remote, retention) before it was cut
# into stages, and the verdicts it gave.
CALLS: dict[tuple[bool, bool], list[str]] = {
    (True, False): [
        (
            "alias stored_scheme ensure_scheme policy_record record_policy line_counts:65 "
            "registration send:2 send:1 probes lookup:90 add_members put_verdicts:3"
        ),
        (
            "line_counts:59 registration send:2 send:1 probes lookup:16 lookup:16 lookup:16 "
            "lookup:76 add_members put_verdicts:3"
        ),
        (
            "line_counts:55 registration send:2 send:1 probes records:4 line_counts:29 lookup:16 "
            "lookup:75 verdicts:1 add_members:1 put_verdicts:3"
        ),
        "line_counts:12 registration send:2 probes add_members put_verdicts:1",
        (
            "line_counts:17 registration send:2 send:1 probes records:2 lookup:41 add_members:2 "
            "put_verdicts:3"
        ),
        "line_counts:57 check:30 check:30 check:30 line_counts:32 lookup:16",
    ],
    (True, True): [
        (
            "alias stored_scheme ensure_scheme policy_record record_policy now expire "
            "line_counts:65 registration send:2 send:1 probes lookup:90 add_members "
            "put_verdicts:3"
        ),
        (
            "now expire line_counts:59 registration send:2 send:1 probes lookup:16 lookup:16 "
            "lookup:16 lookup:76 add_members put_verdicts:3"
        ),
        (
            "now expire line_counts:55 registration send:2 send:1 probes records:4 line_counts:29 "
            "lookup:16 lookup:75 verdicts:1 add_members:1 put_verdicts:3"
        ),
        "now expire line_counts:12 registration send:2 probes add_members put_verdicts:1",
        (
            "now expire line_counts:17 registration send:2 send:1 probes records:2 lookup:41 "
            "add_members:2 put_verdicts:3"
        ),
        "now line_counts:57 check:30 check:30 check:30 line_counts:32 lookup:16",
    ],
    (False, False): [
        (
            "alias stored_scheme ensure_scheme policy_record record_policy line_counts:65 "
            "registration send:3 probes lookup:90 add_members put_verdicts:3"
        ),
        (
            "line_counts:59 registration send:3 probes lookup:16 lookup:16 lookup:16 lookup:76 "
            "add_members put_verdicts:3"
        ),
        (
            "line_counts:55 registration send:3 probes records:4 line_counts:29 lookup:16 "
            "lookup:75 verdicts:1 add_members:1 put_verdicts:3"
        ),
        "line_counts:12 registration send:2 probes add_members put_verdicts:1",
        (
            "line_counts:17 registration send:3 probes records:2 lookup:41 add_members:2 "
            "put_verdicts:3"
        ),
        "line_counts:57 check:30 check:30 check:30 line_counts:32 lookup:16",
    ],
    (False, True): [
        (
            "alias stored_scheme ensure_scheme policy_record record_policy now expire "
            "line_counts:65 registration send:3 probes lookup:90 add_members put_verdicts:3"
        ),
        (
            "now expire line_counts:59 registration send:3 probes lookup:16 lookup:16 lookup:16 "
            "lookup:76 add_members put_verdicts:3"
        ),
        (
            "now expire line_counts:55 registration send:3 probes records:4 line_counts:29 "
            "lookup:16 lookup:75 verdicts:1 add_members:1 put_verdicts:3"
        ),
        "now expire line_counts:12 registration send:2 probes add_members put_verdicts:1",
        (
            "now expire line_counts:17 registration send:3 probes records:2 lookup:41 "
            "add_members:2 put_verdicts:3"
        ),
        "now line_counts:57 check:30 check:30 check:30 line_counts:32 lookup:16",
    ],
}
VERDICTS = [
    ["p0 original None p0 new", "p1 original None p1 new", "p2 original None p2 new"],
    ["p3 original None p3 new", "p4 original None p4 new", "p5 original None p5 new"],
    ["p-again duplicate p1 p1 exact", "e original None e new", "n original None n new"],
    ["n original None n new", "short original None short new"],
    ["x original None x new", "y near_duplicate x x jaccard", "z near_duplicate y x jaccard"],
    ["q near_duplicate n n jaccard", "q-page duplicate p4 p4 exact", "q-e duplicate e e exact"],
]


@pytest.mark.parametrize("retention", [False, True])
@pytest.mark.parametrize("remote", [True, False])
async def test_each_batch_makes_the_index_calls_it_always_made(
    remote: bool, retention: bool
) -> None:
    calls, verdicts = await _run(remote, retention)
    assert verdicts == VERDICTS
    assert [_shown_calls(c) for c in calls] == CALLS[remote, retention]


def _print(show: Callable[[object], None] = print) -> None:  # pragma: no cover
    import asyncio

    for remote in (True, False):
        for retention in (False, True):
            show((remote, retention, asyncio.run(_run(remote, retention))))


# ------------------------------------------------------------------ the stages' own contracts


async def test_prepare_gives_one_record_per_article_in_input_order() -> None:
    """Each record holds its own article's part of what the boilerplate pass found, and its
    sketch is what :func:`prepare` makes of it alone (its text less its boilerplate, with its
    anchors), whatever the batch around it."""
    index = MemoryIndex()
    engine = Engine(index, clock=lambda: 1000.0)
    for how, batch in _batches()[:2]:
        await engine.process(batch, register=how == "register")
    policy = engine.default_policy
    articles = [*_batches()[2][1], _page("late", _stories()[7]), Article("one line", "Fed at 5")]
    learned = await boilerplate.learn(index, "default", policy, articles, teach=False)
    items = in_flight(articles)
    take_learned(items, learned)
    prepare_all(policy, items)
    assert [it.article for it in items] == articles
    assert any(it.without_boilerplate for it in items)  # the site's template was left out
    for k, it in enumerate(items):
        assert (it.lines, it.without_boilerplate, it.left_out, it.anchors, it.learned) == (
            learned.lines[k],
            learned.without_boilerplate[k],
            learned.left_out[k],
            learned.anchors[k],
            learned.learned[k],
        )
        (alone,) = anchored(
            policy, prepare(policy, [it.article], [it.without_boilerplate]), [it.anchors]
        )
        assert it.prepared.content == alone.content
        assert it.prepared.buckets == alone.buckets


def test_articles_are_decided_in_seq_order_ties_in_input_order() -> None:
    items = in_flight([Article(str(k), "x") for k in range(5)])
    for it, seq in zip(items, (7, 0, 3, 0, 5), strict=True):
        it.probe = Probe(seq, "new", None, ())
    assert decision_order(items) == [1, 3, 2, 4, 0]
    assert decision_order([]) == []


def test_a_record_has_no_value_before_its_stage_writes_it() -> None:
    """Reading ``prepared`` before the prepare stage is a bug, and says so."""
    (it,) = in_flight([Article("a", "text")])
    with pytest.raises(AttributeError):
        _ = it.prepared
    with pytest.raises(AttributeError):
        it.extra = 1  # type: ignore[attr-defined]  # slotted: no field outside the record
