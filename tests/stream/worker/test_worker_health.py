"""What ``/health`` says while batches are retried: not ready, and why (no broker, no Redis)."""

from __future__ import annotations

from typing import Any

import orjson

from neardup.stream.engine.engine import Engine
from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.worker.config import Settings
from neardup.stream.worker.http.web import Readiness
from neardup.stream.worker.messages import Incoming
from neardup.stream.worker.metrics import Metrics
from neardup.stream.worker.pipeline import BatchHandler

TEXT = "the committee approved the new budget for public schools after a long debate " * 3


class AnswersPing:
    """A Redis at its memory limit still answers PING: the probe alone would say ready."""

    async def ping(self) -> bool:
        return True


class OutOfMemory(MemoryIndex):
    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def register(self, ns: str, regs: Any, cap: int, **window: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise IndexUnavailableError("OOM command not allowed when used memory > 'maxmemory'")
        return await super().register(ns, regs, cap, **window)


async def test_health_is_not_ready_while_the_index_fails_and_says_why() -> None:
    metrics = Metrics()
    readiness = Readiness(Settings(), AnswersPing(), metrics)  # type: ignore[arg-type]
    readiness.kafka_ok = True
    seen: list[tuple[bool, str | None]] = []

    def report(why: str | None) -> None:
        readiness.index_unavailable(why)
        seen.append((readiness.ready, readiness.reason))

    handler = BatchHandler(
        Engine(OutOfMemory(failures=2)), metrics, backoff_max_s=0.01, on_unavailable=report
    )
    await readiness.probe()
    readiness.kafka_ok = True  # (the probe's TCP check has no broker to reach here)
    assert readiness.ready and readiness.reason is None
    value = orjson.dumps({"id": "a", "text": TEXT})
    verdicts, _ = await handler.handle([Incoming(value, b"a", "articles", 0, 1)])
    assert len(verdicts) == 1
    assert seen[0][0] is False and "index unavailable: OOM" in (seen[0][1] or "")
    assert seen[-1] == (True, None)
    assert "neardup_index_retries_total 2.0" in metrics.render().decode()


async def test_a_ping_between_failures_does_not_make_the_worker_ready() -> None:
    readiness = Readiness(Settings(), AnswersPing(), Metrics())  # type: ignore[arg-type]
    readiness.index_unavailable("index unavailable: OOM command not allowed")
    await readiness.probe()
    assert readiness.ping_ok and not readiness.ready
    assert readiness.reason == "index unavailable: OOM command not allowed"
