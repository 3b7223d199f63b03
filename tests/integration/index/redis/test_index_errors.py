"""Redis answers that are transient but not connection errors become ``IndexUnavailableError``
(retriable, with the server's message), against real servers: out of memory (``maxmemory`` with
``noeviction``), a read-only replica (``REPLICAOF``, as after a failover), a server busy in a
script (``BUSY``). A wrong argument (a bug) is still raised as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from harness import services
from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.base import Registration, StoredVerdict
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Kind, Record

MakeRedis = Callable[..., services.Service]


def _regs(n: int, tag: str = "r") -> list[Registration]:
    out = []
    for i in range(n):
        content, buckets = bytes([i % 256]) * 16, (1000 + i, 2000 + i)
        rec = Record(f"{tag}{i}", Kind.SHORT, 1.0, 0, content, buckets, np.empty(0, np.uint32), "t")
        out.append(Registration(f"{tag}{i}", content, buckets, rec.encode(), 1.0))
    return out


async def _all_unavailable(index: RedisIndex, regs: Sequence[Registration]) -> list[str]:
    """Every write path of the index, each expected to raise IndexUnavailableError: messages."""
    messages = []
    calls = [
        lambda: index.register("ns", regs, 8),
        lambda: index.put_verdicts("ns", {1: StoredVerdict("r0", b"v")}),
        lambda: index.delete("ns", "r0"),
    ]
    for call in calls:
        with pytest.raises(IndexUnavailableError) as info:
            await call()
        assert info.value.retriable
        messages.append(str(info.value))
    return messages


async def test_out_of_memory_is_unavailable(make_redis: MakeRedis) -> None:
    server = make_redis()
    client = Redis.from_url(server.url)
    try:
        index = RedisIndex(client)
        await index.ensure_scheme("ns", Policy().scheme_bytes())
        await index.register("ns", _regs(3), 8)
        await client.config_set("maxmemory-policy", "noeviction")
        await client.config_set("maxmemory", "1")
        messages = await _all_unavailable(index, _regs(5, "late"))
        assert all("OOM" in m for m in messages), messages
        await client.config_set("maxmemory", "0")
        probes = await index.register("ns", _regs(5, "late"), 8)  # served again: nothing lost
        assert [p.seq for p in probes] == [4, 5, 6, 7, 8]
    finally:
        await client.aclose()


async def test_read_only_replica_is_unavailable(make_redis: MakeRedis) -> None:
    primary, replica = make_redis(), make_redis()
    writer, reader = Redis.from_url(primary.url), Redis.from_url(replica.url)
    try:
        await RedisIndex(writer).load_functions()
        await reader.replicaof("127.0.0.1", primary.port)
        for _ in range(500):  # until the replica has the primary's data (functions included)
            info = await reader.info("replication")
            if info.get("master_link_status") == "up" and await reader.function_list():
                break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("the replica never synchronised")
        index = RedisIndex(reader)
        with pytest.raises(IndexUnavailableError, match="READONLY"):
            await index.load_functions()  # FUNCTION LOAD is a write
        index._loaded = True
        messages = await _all_unavailable(index, _regs(3))
        assert all("READONLY" in m for m in messages), messages
    finally:
        with contextlib.suppress(Exception):
            await reader.replicaof("NO", "ONE")
        await writer.aclose()
        await reader.aclose()


async def test_busy_server_is_unavailable(make_redis: MakeRedis) -> None:
    server = make_redis()
    client, blocker = Redis.from_url(server.url), Redis.from_url(server.url)
    try:
        index = RedisIndex(client)
        await index.load_functions()
        await client.config_set("busy-reply-threshold", "10")
        busy = asyncio.create_task(blocker.eval("while true do end", 0))
        error: IndexUnavailableError | None = None
        for _ in range(500):
            try:
                await index.register("ns", _regs(2), 8)
            except IndexUnavailableError as exc:
                error = exc
                break
            await asyncio.sleep(0.02)
        assert error is not None and "BUSY" in str(error), error
        await client.script_kill()
        with pytest.raises(ResponseError):
            await busy
        assert [p.seq for p in await index.register("ns", _regs(2), 8)] == [1, 2]
    finally:
        await client.aclose()
        await blocker.aclose()


async def test_a_wrong_argument_is_still_raised(redis_client: Redis) -> None:
    """A bug is not bad weather: retrying it forever would hide it."""
    index = RedisIndex(redis_client)
    await index.load_functions()
    with pytest.raises(ResponseError) as info:
        await index.register("ns", _regs(2), "not a number")  # type: ignore[arg-type]
    assert not isinstance(info.value, IndexUnavailableError)
