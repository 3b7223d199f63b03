"""``/check`` on a thread of its own, so that a request never holds the stream.

A check costs CPU (sketches, verification, evidence: up to about a second for a text at the
size limit). Run on the worker's event loop, that second is a second in which the loop consumes
nothing, publishes nothing, sends no heartbeat and answers no ``/health``. Here each check runs on
a second event loop, in a thread with its own engine and Redis client (a client belongs to the
loop it was made on); the worker's loop only awaits the answer. Python switches threads every few
milliseconds (``sys.getswitchinterval``), so the stream's loop runs between a check's steps
whatever the text.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from stream.engine import Engine

T = TypeVar("T")


class CheckThread:
    """An engine on its own thread and event loop: ``await checks.run(lambda e: ...)``."""

    def __init__(self, make_engine: Callable[[], Engine], name: str = "neardup-check") -> None:
        self._loop = asyncio.new_event_loop()
        self._make = make_engine
        self._engine: Engine | None = None
        self._failed: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failed is not None:
            raise self._failed

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._engine = self._make()  # its Redis client is made on this loop
        except BaseException as exc:  # said to the constructor, which raises it
            self._failed = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    async def run(self, work: Callable[[Engine], Awaitable[T]]) -> T:
        """``work(engine)`` on the check thread's loop; awaited from any other loop."""
        engine = self._engine
        assert engine is not None

        async def call() -> T:
            return await work(engine)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call(), self._loop))

    def close(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)


__all__ = ["CheckThread"]
