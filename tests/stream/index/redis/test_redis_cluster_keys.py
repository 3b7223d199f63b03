"""The pure parts of the Redis Cluster mode: the shard keys a call declares, the cluster client's
errors as the index's, and the client the settings build."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import ClusterError, RedisClusterException, SlotNotCoveredError

from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.worker.clients import redis_client
from neardup.stream.worker.config import Settings

contents = st.binary(min_size=16, max_size=16)
buckets = st.lists(st.integers(0, 2**64 - 1), max_size=40).map(tuple)


@given(
    st.lists(st.tuples(contents, buckets), min_size=1, max_size=20),
    st.integers(1, 24),
    st.sampled_from(["news", "a.b-c_9", "x" * 64]),
)
def test_shard_keys_are_exactly_the_distinct_shards_of_the_articles(
    articles: list[tuple[bytes, tuple[int, ...]]], bits: int, ns: str
) -> None:
    got = keys.shard_keys(ns, [c for c, _ in articles], [b for _, b in articles], bits)
    want = {keys.exact_shard(ns, c, bits) for c, _ in articles}
    want |= {keys.bucket_shard(ns, b, bits) for _, bs in articles for b in bs}
    assert len(got) == len(set(got)) and set(got) == want
    # one slot with the namespace's own keys: a cluster serves the call on one primary
    assert {key_slot(k.encode()) for k in got} == {key_slot(keys.meta(ns).encode())}


@pytest.mark.parametrize(
    "exc",
    [
        SlotNotCoveredError("slot 42 is not covered by the cluster"),
        ClusterError("TTL exhausted."),
        RedisClusterException("Redis Cluster cannot be connected. Please provide at least one"),
    ],
)
def test_cluster_client_errors_of_a_cluster_in_failover_are_retriable(exc: Exception) -> None:
    index = RedisIndex(Redis())
    with pytest.raises(IndexUnavailableError), index._errors("ns"):
        raise exc


def test_a_cluster_client_error_that_is_a_bug_is_raised_as_it_is() -> None:
    index = RedisIndex(Redis())
    bug = RedisClusterException("FCALL - all keys must map to the same key slot")
    with pytest.raises(RedisClusterException, match="same key slot"), index._errors("ns"):
        raise bug


async def test_the_cluster_setting_builds_a_cluster_client_with_the_credentials() -> None:
    settings = Settings(
        redis_url="redis://127.0.0.1:7000/0", redis_cluster=True, redis_password="s3cret"
    )  # type: ignore[arg-type]
    client = redis_client(settings)
    assert isinstance(client, RedisCluster)
    assert client.get_connection_kwargs()["password"] == "s3cret"
    assert isinstance(redis_client(Settings(redis_url="redis://127.0.0.1:7000/0")), Redis)
    index = RedisIndex(client)
    assert type(index.registration("ns", 16)).__name__ == "BufferedRegistration"
    await client.aclose()
