"""A ``/check`` body read whole before the request may wait for a check: under a deadline and
a byte budget.

A request takes one of the check process's admission slots
(:data:`neardup.stream.worker.checks.CHECKS_ADMITTED`) only once its whole body is here, so a
client that declares a body and sends it slowly, or never, holds no slot: it is answered 408
(``body_timeout``) once ``NEARDUP_CHECK_BODY_TIMEOUT_S`` has passed since the view began to read,
whatever arrived by then, and its connection is closed.

Memory: every ``/check`` body in the process, being read or waiting for or in a check, counts
against one budget of :data:`BUDGET_BODIES` bodies at the size limit. What counts is the bytes
that arrived, not those declared: a slow client holds the few it sent, so many slow clients
exhaust no budget, and a body that would pass it is answered 429 (``busy``) at once. Beyond the
budget, aiohttp buffers at most about 128 KiB of unread body per connection (twice its 64 KiB
read size) before it stops reading the socket.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

# full-size bodies the budget holds: the checks admitted plus as many being read at once
BUDGET_BODIES = 32


class Content(Protocol):
    """What a request's body offers (aiohttp's ``StreamReader``)."""

    async def read(self, n: int = -1) -> bytes: ...


@dataclass(frozen=True)
class Refusal:
    """An answer instead of a body: its status, JSON body and whether to close the connection
    after it (a body left half-sent is no request to read the next one after)."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    close: bool = False


class BodyBudget:
    """Bytes of ``/check`` bodies held at once in this process, at most ``limit_bytes``."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.held = 0

    def take(self, n: int) -> bool:
        """Count ``n`` more bytes, if the budget has room; each taken must be :meth:`give` n."""
        if self.held + n > self.limit_bytes:
            return False
        self.held += n
        return True

    def give(self, n: int) -> None:
        self.held -= n


def budget_for(max_body_bytes: int) -> BodyBudget:
    return BodyBudget(BUDGET_BODIES * (max_body_bytes + 1))


async def _read(content: Content, limit: int, budget: BodyBudget, body: bytearray) -> bool:
    """Read to the end of the body into ``body``, at most ``limit + 1`` bytes; False when the
    budget has no room for what arrived. ``StreamReader.read(n)`` returns what has arrived so
    far, not n bytes (chunked bodies have no Content-Length)."""
    while len(body) <= limit:
        chunk = await content.read(limit + 1 - len(body))
        if not chunk:
            break
        if not budget.take(len(chunk)):
            return False
        body += chunk
    return True


async def read_body(
    content: Content, limit: int, timeout_s: float, budget: BodyBudget
) -> bytes | Refusal:
    """The whole body, or why not: 408 past ``timeout_s``, 413 past ``limit`` bytes, 429 past
    the budget, 400 when the client left mid-body. A body returned holds ``len(body)`` bytes
    of ``budget`` until the caller gives them back; a refusal holds none."""
    body = bytearray()
    refusal: Refusal | None = None
    try:
        async with asyncio.timeout(timeout_s):
            room = await _read(content, limit, budget, body)
        if not room:
            busy = {"error": "busy", "detail": "too many check bodies held: try again shortly"}
            refusal = Refusal(429, busy, {"Retry-After": "1"}, close=True)
        elif len(body) > limit:
            refusal = Refusal(413, {"error": "oversize", "limit_bytes": limit})
    except TimeoutError:
        detail = f"the body did not arrive within {timeout_s:g} s"
        refusal = Refusal(408, {"error": "body_timeout", "detail": detail}, close=True)
    except (ConnectionError, asyncio.IncompleteReadError):  # the client left mid-body
        refusal = Refusal(400, {"error": "incomplete_body", "detail": "connection lost"})
    if refusal is not None:
        budget.give(len(body))
        return refusal
    return bytes(body)


__all__ = ["BUDGET_BODIES", "BodyBudget", "Content", "Refusal", "budget_for", "read_body"]
