"""A Redis index that stalls before storing verdicts: a worker caught between deciding a batch
and writing its verdicts, which the concurrency and deletion tests need to hold there."""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio import Redis

from neardup.stream.index.redis.index import RedisIndex


class StallingIndex(RedisIndex):
    """Registers and decides, then waits for ``release`` before storing its verdicts."""

    def __init__(self, client: Redis) -> None:
        super().__init__(client)
        self.stalled = asyncio.Event()
        self.release = asyncio.Event()

    async def put_verdicts(self, ns: str, items: Any, lines: Any = (), cap: int = 0) -> None:
        self.stalled.set()
        await self.release.wait()
        await super().put_verdicts(ns, items, lines, cap)
