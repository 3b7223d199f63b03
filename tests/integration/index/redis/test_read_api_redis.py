"""The read API's answers on a real Redis and a 3+3 Redis Cluster: the memory store's, exactly
(the unit tests' stream, tests/stream/worker/http/test_read_api.py), with removal keeping
clusters right."""

from __future__ import annotations

from redis.asyncio import Redis, RedisCluster

from neardup.stream.engine.engine import Engine
from neardup.stream.index.base import Index
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.namespaces.policy import Policy
from neardup.stream.worker.http import read_api
from tests.stream.worker.http.test_read_api import _indexed, _stream

TIMES = [10.0, 20.0, 30.0, 40.0]


async def _answers(index: Index, policy: Policy | None = None) -> list[object]:
    if policy is None:
        await _indexed(index, _stream(), TIMES)
    else:
        now = iter(TIMES)
        engine = Engine(index, policy, clock=lambda: next(now))
        for a in _stream():
            await engine.process([a])
    out: list[object] = [await read_api.article(index, "news", i) for i in ("a", "b", "c", "no")]
    out += [await read_api.cluster(index, "news", "a", off, 2) for off in (0, 2)]
    assert await Engine(index, policy).delete("news", "b")
    out += [await read_api.cluster(index, "news", "a", 0, 10)]
    st = await index.stats("news")
    out += [(st.documents, st.copies, st.clusters, st.verdicts)]
    out += [await index.namespaces()]
    return out


async def test_redis_answers_as_the_memory_store(redis_client: Redis) -> None:
    want = await _answers(MemoryIndex())
    assert await _answers(RedisIndex(redis_client)) == want
    st = await RedisIndex(redis_client).stats("news")
    assert st.bytes > 0 and st.sampled == 64 and st.shards == 2 * 2**16


async def test_a_cluster_answers_as_the_memory_store(cluster_client: RedisCluster) -> None:
    want = await _answers(MemoryIndex())
    assert await _answers(RedisIndex(cluster_client)) == want


async def test_a_sharded_namespace_answers_as_the_memory_store(
    redis_client: Redis, cluster_client: RedisCluster
) -> None:
    """``shards = 4``: on one Redis and on the cluster, the same answers, removal included."""
    want = await _answers(MemoryIndex())
    await redis_client.flushdb()
    for client in (redis_client, cluster_client):
        assert await _answers(RedisIndex(client), Policy(shards=4)) == want
    assert await redis_client.keys("nd:{news/*}:b:*")
