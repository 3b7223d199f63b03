"""A batch's registration streamed on one connection: the engine sketches the next chunk while
Redis registers the one before (:meth:`RedisIndex.registration
<neardup.stream.index.redis.index.RedisIndex.registration>`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from neardup.stream.index.base import NO_WINDOW, Probe, Registration, Window
from neardup.stream.index.redis import wire

if TYPE_CHECKING:
    from neardup.stream.index.redis.index import RedisIndex


class StreamedRegistration:
    """One connection of the pool, held for a batch: :meth:`send` writes a chunk's calls and
    returns without waiting, :meth:`probes` reads every reply in order. A connection left with
    unread replies (an error on the way) is closed, never handed back to the pool."""

    def __init__(self, index: RedisIndex, ns: str, cap: int) -> None:
        self._index, self._ns, self._cap = index, ns, cap
        self._conn: Any = None
        self._unread = 0

    async def __aenter__(self) -> StreamedRegistration:
        await self._index._ready()
        with self._index._errors():
            pool: Any = self._index._r.connection_pool  # its get_connection is untyped
            self._conn = await pool.get_connection()
        return self

    async def __aexit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if self._unread:
            await conn.disconnect()
        await self._index._r.connection_pool.release(conn)

    async def send(self, regs: Sequence[Registration], window: Window = NO_WINDOW) -> None:
        calls = self._index._register_calls(self._ns, regs, self._cap, window)
        with self._index._errors():
            await self._conn.send_packed_command(b"".join(map(wire.packed_command, calls)))
        self._unread += len(calls)

    async def probes(self) -> list[Probe]:
        index = self._index
        index.round_trips += 1
        probes: list[Probe] = []
        with index._errors(self._ns):
            calls = self._unread
            if index.wait_replicas and calls:
                await self._conn.send_command("WAIT", index.wait_replicas, index.wait_timeout_ms)
                self._unread += 1
            for _ in range(calls):
                reply = await self._conn.read_response()
                self._unread -= 1
                probes += wire.probes(reply)
            if self._unread:
                acked = await self._conn.read_response()
                self._unread -= 1
                index._check_acknowledged(self._ns, acked)
        return probes


__all__ = ["StreamedRegistration"]
