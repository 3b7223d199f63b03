"""``/check`` in a process of its own, so that a request never holds the stream.

A check costs CPU (sketches, verification, evidence: up to about a second for a text at the
size limit). Run on the worker's event loop, that second is a second in which the loop consumes
nothing, publishes nothing, sends no heartbeat and answers no ``/health``; run on a thread, it
still takes the interpreter's lock from the stream half of the time. Here checks run in a child
process (spawned, one), with its own event loop, engine and Redis client, on another core; the
worker's loop only awaits the answer. Checks are answered one at a time, in the order they came.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from neardup.stream.errors import NeardupError
from neardup.stream.model import Article, Verdict
from neardup.stream.worker.config import Settings

# the child's state, made once by _start (a spawned process imports this module afresh)
_child: dict[str, Any] = {}


def _start(settings: Settings) -> None:
    from neardup.stream.engine.engine import Engine
    from neardup.stream.worker.clients import redis_index

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    _child["loop"] = loop
    _child["engine"] = Engine(
        redis_index(settings), settings.policy(), policies=settings.policies()
    )


def _check(article: Article, register: bool) -> Verdict | NeardupError:
    engine, loop = _child["engine"], _child["loop"]
    work = engine.process([article], register=register, explain=True, teach=False)
    (result,) = loop.run_until_complete(work)
    return result  # type: ignore[no-any-return]


def _known(ns: str) -> bool:
    engine, loop = _child["engine"], _child["loop"]
    return bool(loop.run_until_complete(engine.namespace_known(ns)))


# Checks admitted at once (one running, the rest waiting their turn, each holding a body of up
# to the size limit): past it a request is answered 429 at once, so memory held by waiting
# checks is bounded whatever clients open.
CHECKS_ADMITTED = 8


class CheckProcess:
    """``await checks.check(article, register)``: the engine's verdict, from the child."""

    def __init__(self, settings: Settings) -> None:
        self.admitted = 0  # requests between admit() and leave()
        self._pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=(settings,),
        )

    def admit(self) -> bool:
        """Whether one more request may wait for a check (see :data:`CHECKS_ADMITTED`); each
        one admitted must :meth:`leave`."""
        if self.admitted >= CHECKS_ADMITTED:
            return False
        self.admitted += 1
        return True

    def leave(self) -> None:
        self.admitted -= 1

    async def check(self, article: Article, register: bool) -> Verdict | NeardupError:
        """A check never teaches boilerplate, registered or not (a request names any source)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, _check, article, register)

    async def namespace_known(self, ns: str) -> bool:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, _known, ns)


__all__ = ["CHECKS_ADMITTED", "CheckProcess"]
