"""The randomized lifecycle checker (harness/lifecycle.py) on a sharded namespace in a real Redis:
registrations, copies, takedowns by every path and rebuilds from exports and from the topic keep
every takedown down, every other article indexed, and one original per story."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from harness import lifecycle
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.namespaces.policy import Policy


@pytest.mark.parametrize("seed", range(1, 5))
async def test_a_sharded_namespaces_life_keeps_takedowns_articles_and_one_original(
    redis_client: Redis, seed: int
) -> None:
    await redis_client.flushdb()
    system = lifecycle.InProcess(RedisIndex(redis_client, shard_bits=6), Policy(shards=4))
    assert await lifecycle.run(seed, system=system) == []
    assert await redis_client.keys("nd:{life*/*}:b:*")  # the rebuilt namespace is sharded too
