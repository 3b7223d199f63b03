"""Rebuilding a namespace under a new scheme (neardup.stream.engine.reindex,
neardup.stream.namespaces.aliases), on the memory store: the export holds what was sent, the rebuild
decides again under the new policy exactly as a fresh index would, the switch reaches a running
worker, and reads follow it. The same as users run it, on Redis and from a Kafka topic:
tests/integration/cli/test_reindex_cli.py."""

from __future__ import annotations

import io

import orjson
import pytest

from harness import data
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.reindex import Deletion, batches_of, export, reindex
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces import aliases
from neardup.stream.namespaces.policy import Policy
from neardup.stream.schema import article_from_obj
from neardup.stream.worker.http import read_api
from tests.stream.engine.test_verdict_facts import _verdicts

CONTAIN = Policy(measure="containment", threshold=0.8)


def _articles() -> list[Article]:
    stories = [r["text"] for r in data.clough_stevenson() if len(r["text"].split()) >= 250][:3]
    words = stories[0].split()
    return [
        Article("a", stories[0], "news", source="wire.example"),
        Article("ex", " ".join(words[40:160]), "news"),  # an excerpt: containment finds it
        Article("b", stories[1], "news"),
        Article("a-again", stories[0] + " Updated.", "news"),
        Article("c", stories[2], "news"),
    ]


async def _built() -> tuple[MemoryIndex, list[Verdict]]:
    index = MemoryIndex()
    return index, await _verdicts(Engine(index), _articles())


async def _exported(index: MemoryIndex) -> list[Article]:
    buf = io.BytesIO()
    written, textless = await export(index, "news", buf)
    assert (written, textless) == (5, 0)
    return [article_from_obj(orjson.loads(line)) for line in buf.getvalue().splitlines()]


async def test_export_holds_every_article_as_sent_in_order_with_its_source() -> None:
    index, _ = await _built()
    back = await _exported(index)
    sent = _articles()
    assert [(a.id, a.namespace, a.text) for a in back] == [
        (a.id, a.namespace, a.text) for a in sent
    ]
    assert [a.source_name() for a in back] == ["wire.example", "", "", "", ""]


async def test_a_rebuild_decides_as_a_fresh_index_under_the_new_policy_and_switches() -> None:
    index, before = await _built()
    assert before[1].verdict == "original"  # Jaccard: an excerpt is not a copy
    done = await reindex(index, "news", CONTAIN, lambda: batches_of(_articles()), wait_s=0)
    assert (done.target, done.previous, done.switched) == ("news.r2", "news", True)
    fresh = await _verdicts(Engine(MemoryIndex(), CONTAIN), _articles())
    stored = await index.verdicts("news.r2", list(range(1, 6)))
    assert [Verdict.from_json(stored[s]) for s in range(1, 6)] == fresh
    assert fresh[1].verdict == "near_duplicate" and fresh[1].direction == "excerpt"
    assert done.verdicts == {"original": 3, "near_duplicate": 2}
    assert aliases.read("news", await index.alias("news"), Policy()) == ("news.r2", CONTAIN)
    # reads follow the alias; the old namespace is left as it was
    got = await read_api.article(index, "news", "ex")
    assert got is not None and got["namespace"] == "news" and got["verdict"]["duplicate_of"] == "a"
    assert Verdict.from_json((await index.verdicts("news", [2]))[2]) == before[1]


async def test_a_running_worker_follows_the_switch_with_the_rebuilt_policy() -> None:
    index, _ = await _built()
    worker = Engine(index, alias_ttl_s=0.0)  # configured with the old (default) policy
    await _verdicts(worker, [Article("d", "an unrelated short note about the harbour", "news")])
    await reindex(index, "news", CONTAIN, lambda: batches_of(_articles()), wait_s=0)
    words = _articles()[2].text.split()
    (v,) = await _verdicts(worker, [Article("ex2", " ".join(words[10:150]), "news")])
    assert (v.namespace, v.verdict, v.duplicate_of, v.direction) == (
        "news",
        "near_duplicate",
        "b",
        "excerpt",
    )
    # "d", registered before the rebuild and not in its source, was carried over after it
    assert await index.seq_of("news.r2", "d") == 6
    assert await index.seq_of("news.r2", "ex2") == 7 and await index.seq_of("news", "ex2") is None
    assert await worker.delete("news", "ex2") and await index.seq_of("news.r2", "ex2") is None


async def test_deletions_in_the_source_take_the_article_down_in_the_rebuild() -> None:
    index, _ = await _built()
    items = [*_articles(), Deletion("news", "b"), Deletion("other", "a")]
    done = await reindex(index, "news", CONTAIN, lambda: batches_of(items, 2), wait_s=0)
    assert done.verdicts["deleted"] == 1
    assert await index.seq_of("news.r2", "b") is None and await index.seq_of("news.r2", "a") == 1


async def test_names_of_rebuilds_and_a_rebuild_that_did_not_switch() -> None:
    assert aliases.next_target("news", "news") == "news.r2"
    assert aliases.next_target("news", "news.r2") == "news.r3"
    assert aliases.next_target("news.r2", "news.r2") == "news.r2.r2"
    with pytest.raises(ValueError, match="too long"):
        aliases.next_target("n" * 62, "n" * 62)
    index, _ = await _built()

    async def broken() -> object:
        yield _articles()[:2]
        raise RuntimeError("the file ended badly")

    with pytest.raises(RuntimeError):
        await reindex(index, "news", CONTAIN, broken, wait_s=0)  # type: ignore[arg-type]
    assert await index.alias("news") is None  # not switched: the workers stay on "news"
    with pytest.raises(ValueError, match=r"--into news\.r2"):
        await reindex(index, "news", CONTAIN, lambda: batches_of(_articles()), wait_s=0)
    done = await reindex(
        index, "news", CONTAIN, lambda: batches_of(_articles()), into="news.r2", wait_s=0
    )
    assert done.switched and done.verdicts == {"original": 3, "near_duplicate": 2}  # 2 replays
    assert await index.last_seq("news.r2") == 5
    with pytest.raises(ValueError, match="in use"):
        await reindex(
            index, "news", CONTAIN, lambda: batches_of(_articles()), into="news.r2", wait_s=0
        )


async def test_a_rebuilt_namespace_expires_where_it_lives() -> None:
    now = [1000.0]
    index = MemoryIndex(clock=lambda: now[0])
    keep = Policy(measure="containment", retention_s=10.0)
    await reindex(index, "news", keep, lambda: batches_of(_articles()), wait_s=0)
    worker = Engine(index, alias_ttl_s=0.0)  # its own policy keeps no retention window
    now[0] += 60.0
    assert await worker.expire("news") == 5
    assert await index.count("news.r2") == 0


async def test_a_source_without_the_namespace_is_not_switched_to() -> None:
    index, _ = await _built()
    others = [Article("x", "a text of another namespace entirely", "other")]
    with pytest.raises(ValueError, match="not switched"):
        await reindex(index, "news", CONTAIN, lambda: batches_of(others), wait_s=0)
    assert await index.alias("news") is None


async def test_a_takedown_before_a_rebuild_from_an_older_export_stays_down() -> None:
    """Export, take an article down, rebuild from the export: the rebuild remembers what the
    namespace remembered as deleted, so the article does not come back."""
    index, _ = await _built()
    exported = await _exported(index)
    assert await Engine(index).delete("news", "b")
    done = await reindex(index, "news", CONTAIN, lambda: batches_of(exported), wait_s=0)
    assert await index.seq_of("news.r2", "b") is None
    assert await read_api.article(index, "news", "b") is None
    assert done.errors["deleted"] == 1 and "b" in await index.read_deleted("news.r2")
    (again,) = await Engine(index).process([Article("b", _articles()[2].text, "news")])
    assert not isinstance(again, Verdict)  # a replay of a taken-down id stays refused


async def test_articles_and_takedowns_during_a_rebuild_from_a_file_are_carried_over() -> None:
    """What the workers register and take down in the old namespace while a rebuild reads an
    export is in the rebuilt one after the switch: nothing lost, one original per story."""
    index, _ = await _built()
    exported = await _exported(index)
    worker = Engine(index, alias_ttl_s=0.0)
    story = " ".join(f"harbour{i} pilots{i % 7} strike" for i in range(60))

    async def source():  # type: ignore[no-untyped-def]
        async for batch in batches_of(exported, 2):
            yield batch
            if batch[0].id == "a":  # meanwhile, on the workers: one new story, one takedown
                (late,) = await worker.process([Article("late", story, "news")])
                assert isinstance(late, Verdict) and late.verdict == "original"
                assert await worker.delete("news", "a")

    done = await reindex(index, "news", CONTAIN, source, wait_s=0)
    assert await index.seq_of("news.r2", "late") is not None
    assert await index.seq_of("news.r2", "a") is None  # decided, then taken down after
    assert done.caught_up >= 1
    (copy,) = await worker.process([Article("late-copy", story + " Updated.", "news")])
    assert isinstance(copy, Verdict) and copy.duplicate_of == "late"
