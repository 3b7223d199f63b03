"""A ``/check`` body read under a deadline and a byte budget (over a real worker, with slow
raw-socket clients: tests/integration/worker/http/test_security.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from neardup.stream.worker.http import bodies
from neardup.stream.worker.http.bodies import BodyBudget, Refusal, read_body


class Trickle:
    """A body that arrives in ``pieces``, ``gap_s`` apart; then ends, or stalls for good."""

    def __init__(self, pieces: list[bytes], gap_s: float, stall: bool = False) -> None:
        self.pieces, self.gap_s, self.stall = list(pieces), gap_s, stall

    async def read(self, n: int = -1) -> bytes:
        if not self.pieces:
            if self.stall:
                await asyncio.Event().wait()
            return b""
        await asyncio.sleep(self.gap_s)
        piece = self.pieces.pop(0)
        assert len(piece) <= n
        return piece


async def test_a_body_in_time_is_read_whole_and_holds_its_bytes() -> None:
    budget = BodyBudget(1000)
    got = await read_body(Trickle([b'{"te', b'xt": ', b'"a"}'], 0.01), 100, 1.0, budget)
    assert got == b'{"text": "a"}' and budget.held == len(got)


@pytest.mark.parametrize("stall", [True, False], ids=["stalled", "too-slow"])
async def test_a_body_past_the_deadline_is_a_408_and_holds_nothing(stall: bool) -> None:
    budget = BodyBudget(1000)
    content = Trickle([b"{"] * (1 if stall else 50), 0.02, stall=stall)
    started = time.monotonic()
    got = await read_body(content, 100, 0.3, budget)
    took = time.monotonic() - started
    assert isinstance(got, Refusal) and (got.status, got.body["error"]) == (408, "body_timeout")
    assert got.close and "0.3 s" in got.body["detail"]
    assert 0.3 <= took < 0.6 and budget.held == 0


async def test_bytes_past_the_budget_are_a_429_and_the_budget_comes_back() -> None:
    budget = BodyBudget(10)
    first = await read_body(Trickle([b"123456"], 0), 100, 1.0, budget)
    assert first == b"123456" and budget.held == 6
    second = await read_body(Trickle([b"1234", b"5"], 0), 100, 1.0, budget)
    assert isinstance(second, Refusal) and (second.status, second.body["error"]) == (429, "busy")
    assert second.headers == {"Retry-After": "1"} and budget.held == 6
    budget.give(6)
    assert await read_body(Trickle([b"1234", b"5"], 0), 100, 1.0, budget) == b"12345"


async def test_a_body_over_the_limit_is_a_413_and_holds_nothing() -> None:
    budget = BodyBudget(1000)
    got = await read_body(Trickle([b"x" * 60, b"x" * 41], 0), 100, 1.0, budget)
    assert isinstance(got, Refusal) and got.status == 413 and budget.held == 0


async def test_many_slow_clients_hold_only_what_they_sent() -> None:
    """The budget counts bytes that arrived, not those declared: 500 clients that each sent 4
    bytes of a body and stall leave room for a full-size body."""
    limit = 1000
    budget = bodies.budget_for(limit)
    trickles = [Trickle([b"{"] * 4, 0, stall=True) for _ in range(500)]
    slow = [asyncio.ensure_future(read_body(t, limit, 2.0, budget)) for t in trickles]
    for _ in range(1000):  # until all 500 have read what they sent (a loaded machine is slow)
        if not any(t.pieces for t in trickles) and budget.held == 2000:
            break
        await asyncio.sleep(0.01)
    assert not any(t.pieces for t in trickles) and budget.held == 2000
    full = await read_body(Trickle([b" " * limit], 0), limit, 2.0, budget)
    assert full == b" " * limit
    refused = await asyncio.gather(*slow)
    assert {r.status for r in refused if isinstance(r, Refusal)} == {408}
    assert budget.held == limit
