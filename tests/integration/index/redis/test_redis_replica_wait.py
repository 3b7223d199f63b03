"""The replica wait (``RedisIndex(wait_replicas=...)``, ``NEARDUP_REDIS_WAIT_REPLICAS``) on a real
primary and its replica.

A replica stopped with SIGSTOP acknowledges nothing, as one that lags or is cut off: a
registration that must be held by it is then unavailable (retriable: the batch is retried and its
verdicts are not published), on both registration paths (one pipeline; the streamed chunks), and
the same batch registered again once the replica is back replays what the first attempt wrote.
A replayed batch writes nothing new, yet still waits: a worker that takes over a batch from one
that died before its WAIT does not publish verdicts resting on writes no replica has.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import pytest
import redis
from redis.asyncio import Redis

from harness import services
from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.base import Probe, Registration
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex

NS = "wait"


@pytest.fixture
def pair(make_redis: Callable[..., services.Service]) -> tuple[services.Service, services.Service]:
    """A primary and one replica in sync with it."""
    primary = make_redis()
    replica = make_redis(extra_args=("--replicaof", services.HOST, str(primary.port)))
    deadline = time.monotonic() + 30
    with redis.Redis(port=replica.port) as client:
        while client.info("replication").get("master_link_status") != "up":
            assert time.monotonic() < deadline, "the replica never synced"
            time.sleep(0.05)
    return primary, replica


@pytest.fixture
async def client(pair: tuple[services.Service, services.Service]) -> AsyncIterator[Redis]:
    c = Redis(port=pair[0].port)
    try:
        yield c
    finally:
        await c.aclose()


def regs(n: int, tag: str = "") -> list[Registration]:
    return [
        Registration(
            doc_id=f"{tag}d{i}",
            content=f"{tag}c{i}".encode().ljust(16, b"."),
            at=1.0,
            record=b"r",
            buckets=(i,),
        )
        for i in range(n)
    ]


async def streamed(index: RedisIndex, batch: list[Registration]) -> list[Probe]:
    """The batch through the streamed path (what the engine uses on a plain client)."""
    async with index.registration(NS, 64) as stream:
        await stream.send(batch[:3])
        await stream.send(batch[3:])
        return await stream.probes()


async def pipelined(index: RedisIndex, batch: list[Registration]) -> list[Probe]:
    return await index.register(NS, batch, 64)


@pytest.mark.parametrize("path", [pipelined, streamed], ids=["pipelined", "streamed"])
async def test_a_registration_no_replica_holds_is_unavailable_and_replays_after(
    pair: tuple[services.Service, services.Service],
    client: Redis,
    path: Callable[[RedisIndex, list[Registration]], object],
) -> None:
    index = RedisIndex(client, chunk_size=2, wait_replicas=1, wait_timeout_ms=200)
    held = await path(index, regs(5, "a"))  # type: ignore[misc]
    assert [p.status for p in held] == ["new"] * 5
    with redis.Redis(port=pair[1].port) as replica:
        assert replica.hlen(keys.docs(NS)) == 5  # it returned once the replica had them

    batch = regs(5, "b")
    with pair[1].frozen(), pytest.raises(IndexUnavailableError, match="0 of 1 Redis replicas"):
        await path(index, batch)  # type: ignore[misc]
    again = await path(index, batch)  # type: ignore[misc]
    assert [p.status for p in again] == ["replay"] * 5  # the first attempt's writes, kept
    assert [p.seq for p in again] == list(range(6, 11))


async def test_a_replayed_batch_waits_for_the_writes_before_it(
    pair: tuple[services.Service, services.Service], client: Redis
) -> None:
    """One worker registers without waiting and dies; the next replays the batch with the wait
    on. Its calls register nothing new, yet its WAIT must cover the first worker's writes. (What
    a WAIT after a call that wrote nothing covers differs between server versions; such a call
    writes one field when a wait is on, so on any version it covers everything before it.)"""
    batch = regs(4)
    other = Redis(port=pair[0].port, single_connection_client=True)
    try:
        index = RedisIndex(other, wait_replicas=1, wait_timeout_ms=200)
        await index.load_functions()  # a write of this connection, which the replica then holds
        assert await other.wait(1, 5000) == 1
        with pair[1].frozen():
            await RedisIndex(client).register(NS, batch, 64)  # the replica never sees these
            with pytest.raises(IndexUnavailableError, match="0 of 1"):
                await index.register(NS, batch, 64)
    finally:
        await other.aclose()


async def test_without_a_wait_nothing_waits(
    pair: tuple[services.Service, services.Service], client: Redis
) -> None:
    """The default: a registration returns whatever the replica has (the failover window)."""
    with pair[1].frozen():
        probes = await RedisIndex(client).register(NS, regs(3), 64)
    assert [p.status for p in probes] == ["new"] * 3


async def test_more_replicas_than_there_are_is_unavailable(client: Redis) -> None:
    # (long enough for the one replica to answer on a loaded machine: 100 ms once saw 0 of 2)
    index = RedisIndex(client, wait_replicas=2, wait_timeout_ms=2000)
    with pytest.raises(IndexUnavailableError, match="1 of 2 Redis replicas"):
        await index.register(NS, regs(1), 64)


async def test_a_wait_answered_by_a_replica_is_retriable(
    pair: tuple[services.Service, services.Service],
) -> None:
    """After a failover the killed primary comes back as the replica of the promoted one, and a
    cluster client whose slot table still names it sends the WAIT there: the node refuses (its
    calls before were redirected). That is "not now" (the next attempt routes by the refreshed
    table), not a bug to exit on — the reply here is the real server's."""
    on_replica = Redis(port=pair[1].port)
    try:
        index = RedisIndex(on_replica, wait_replicas=1, wait_timeout_ms=100)
        with pytest.raises(IndexUnavailableError, match="WAIT on a replica"), index._errors(NS):
            await on_replica.wait(1, 100)
    finally:
        await on_replica.aclose()
