"""An earlier article inside a longer text on a real Redis (issue 42, item 7): the same
verdicts as the memory store, at the defaults and under containment, in a namespace of one
slot and in a sharded one, registered (a stream) and read-only (``/check``)."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from harness.embedded import embedded, own_words, stories
from neardup.stream.engine.engine import Engine
from neardup.stream.index.base import Index
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Related, Verdict
from neardup.stream.namespaces.policy import Policy

STORIES = stories(6)


def _copies() -> list[Article]:
    ids = [s.id for s in STORIES]
    return [
        Article(f"new-{k}", embedded(own_words(k, avoid=ids), s.text))
        for k, s in enumerate(STORIES)
    ]


async def _decide(index: Index, policy: Policy) -> list[Verdict]:
    engine = Engine(index, policy)
    await engine.process(STORIES[:3])
    out = []
    for k, c in enumerate(_copies()):
        if k < 3:
            (v,) = await engine.process([c], register=False)
        else:  # registered in one batch after its story
            v = (await engine.process([STORIES[k], c]))[1]
        assert isinstance(v, Verdict), v
        out.append(v)
    return out


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("measure", ["jaccard", "containment"])
async def test_embedded_articles_are_named_on_redis_as_in_memory(
    redis_client: Redis, measure: str, shards: int
) -> None:
    await redis_client.flushdb()
    policy = Policy(measure=measure, shards=shards)  # type: ignore[arg-type]
    got = await _decide(RedisIndex(redis_client), policy)
    want = await _decide(MemoryIndex(), policy)
    assert [v.to_dict() for v in got] == [v.to_dict() for v in want]
    for v, s in zip(got, STORIES, strict=True):
        if measure == "jaccard":
            assert (v.verdict, v.related) == ("original", (Related(s.id, 1.0, (), "embeds"),))
        else:
            assert (v.duplicate_of, v.direction) == (s.id, "embeds")
