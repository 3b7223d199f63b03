"""Failure isolation, no broker: what one namespace or one message does stays with it.

Each case here used to raise out of :meth:`BatchHandler.handle`, and the worker exited on it; the
next owner of the partition got the same batch and exited too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import pytest

from neardup.stream.engine.engine import Engine
from neardup.stream.errors import DeletedError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.worker.messages import Incoming
from neardup.stream.worker.metrics import Metrics
from neardup.stream.worker.pipeline import BatchHandler

TEXT = "the committee approved the new budget for public schools after a long debate " * 3


def msg(obj: dict[str, Any], offset: int) -> Incoming:
    return Incoming(orjson.dumps(obj), str(obj.get("id", "k")).encode(), "articles", 0, offset)


def reasons(dead: Sequence[Any]) -> list[tuple[str, int]]:
    return [
        (orjson.loads(d.value)["reason"], orjson.loads(d.value)["source"]["offset"]) for d in dead
    ]


async def test_a_namespace_with_another_scheme_dead_letters_only_its_articles() -> None:
    index = MemoryIndex()
    # `neardup dedup --threshold 0.95` made "foreign": its banding misses pairs at 0.8
    other = Engine(index, Policy(threshold=0.95))
    await other.process([Article("x", TEXT, "foreign")])
    handler = BatchHandler(Engine(index), Metrics())
    batch = [
        msg({"id": "a", "text": TEXT}, 1),
        msg({"id": "f1", "text": TEXT, "namespace": "foreign"}, 2),
        msg({"id": "b", "text": TEXT}, 3),
        msg({"id": "f2", "text": "something else entirely " * 5, "namespace": "foreign"}, 4),
    ]
    verdicts, dead = await handler.handle(batch)
    assert [v.key for v in verdicts] == [b"a", b"b"]
    assert orjson.loads(verdicts[1].value or b"")["verdict"] == "duplicate"
    assert reasons(dead) == [("scheme_mismatch", 2), ("scheme_mismatch", 4)]
    assert 'reason="scheme_mismatch"} 2.0' in handler.metrics.render().decode()


class NoVerdicts(MemoryIndex):
    """Registers but, while ``drop`` is set, never stores a verdict: every article stays
    undecided in the index, as when the workers that registered them all died before storing."""

    drop = True

    async def put_verdicts(
        self, ns: str, items: Mapping[int, Any], lines: Any = (), cap: int = 0
    ) -> None:
        if not self.drop:  # the worker died before this step: no verdicts, no lines counted
            await super().put_verdicts(ns, items, lines, cap)


def chain(n: int, width: int = 200) -> list[Article]:
    """Article k is words k..k+width of one run of distinct words: each is a near-copy of the one
    before it (Jaccard ~0.99) and a little less of every earlier one, so every best match is the
    immediate predecessor and the chain of best matches is ``n`` long."""
    words = [f"w{i:05d}" for i in range(n + width)]
    return [Article(f"c{k}", " ".join(words[k : k + width])) for k in range(n)]


async def test_a_chain_of_a_thousand_undecided_articles_resolves() -> None:
    index = NoVerdicts()
    engine = Engine(index)
    articles = chain(1001)
    first = await engine.process(articles[:1000])  # one batch: decided, but nothing stored
    assert all(isinstance(v, Verdict) for v in first)
    assert [v.duplicate_of for v in first[1:4] if isinstance(v, Verdict)] == ["c0", "c1", "c2"]
    index.drop = False
    # A new batch finds its best match's verdict missing, and the match's, and so on, 999 deep.
    (last,) = await engine.process(articles[1000:])
    assert isinstance(last, Verdict)
    assert (last.verdict, last.duplicate_of, last.cluster) == ("near_duplicate", "c999", "c0")


class DeletesBeforeReads(MemoryIndex):
    """Deletes ``victim`` when the engine first reads records: a takedown or expiry landing
    between the register step and the records read."""

    def __init__(self, victim: str) -> None:
        super().__init__()
        self.victim: str | None = victim
        self.armed = False

    async def records(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        if self.armed and self.victim is not None:
            victim, self.victim = self.victim, None
            await self.delete(ns, victim)
        return await super().records(ns, seqs)


async def test_a_replayed_article_deleted_before_its_record_is_read_stays_down() -> None:
    index = DeletesBeforeReads("a")
    engine = Engine(index)
    index.put_verdicts = _never  # type: ignore[method-assign]  # "a" registered, undecided
    await engine.process([Article("a", TEXT)])
    index.armed = True
    # The replay of "a" finds it registered (seq known, no verdict) and its record vanishes
    # before the engine reads it: it used to raise KeyError for the whole batch.
    (replayed, other) = await engine.process([Article("a", TEXT), Article("z", "unrelated " * 40)])
    assert isinstance(other, Verdict) and other.verdict == "original"
    assert isinstance(replayed, DeletedError)  # publishes nothing: it was taken down meanwhile


async def test_a_match_deleted_before_its_record_is_read_is_left_out() -> None:
    index = DeletesBeforeReads("a")
    engine = Engine(index)
    await engine.process([Article("a", TEXT)])
    index.armed = True
    (b,) = await engine.process([Article("b", TEXT)])
    assert isinstance(b, Verdict) and (b.verdict, b.duplicate_of) == ("original", None)


async def _never(ns: str, items: Any, lines: Any = (), cap: int = 0) -> None:
    return None


class Poisoned(Engine):
    """An engine with a bug that one article's content triggers (any exception type)."""

    async def process(
        self, articles: Sequence[Article], *, register: bool = True
    ) -> list[Verdict | Any]:
        if any(a.id == "poison" for a in articles):
            raise OverflowError("int too big to convert")
        return await super().process(articles, register=register)


async def test_an_unexpected_error_is_isolated_to_the_article_that_causes_it() -> None:
    handler = BatchHandler(Poisoned(MemoryIndex()), Metrics())
    batch = [
        msg({"id": "a", "text": TEXT}, 1),
        msg({"id": "poison", "text": "x " * 50}, 2),
        msg({"id": "b", "text": TEXT}, 3),
    ]
    verdicts, dead = await handler.handle(batch)
    assert [v.key for v in verdicts] == [b"a", b"b"]
    assert reasons(dead) == [("internal_error", 2)]
    assert "OverflowError" in orjson.loads(dead[0].value or b"")["error"]


class Broken(Engine):
    """An engine that fails for every article: the fault is not in the input."""

    async def process(
        self, articles: Sequence[Article], *, register: bool = True
    ) -> list[Verdict | Any]:
        raise ConnectionResetError("the store went away in an unmapped way")


async def test_an_error_every_article_hits_is_raised_not_dead_lettered() -> None:
    handler = BatchHandler(Broken(MemoryIndex()), Metrics())
    batch = [msg({"id": "a", "text": TEXT}, 1), msg({"id": "b", "text": TEXT}, 2)]
    with pytest.raises(ConnectionResetError):
        await handler.handle(batch)
