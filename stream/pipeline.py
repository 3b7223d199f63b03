"""One batch of raw Kafka messages -> verdict messages and dead letters (no Kafka client here).

The worker's agent hands every batch to :meth:`BatchHandler.handle` and publishes what it returns;
keeping this free of faust makes the error policy testable without a broker:

* a message that is not a valid article -> a dead letter with the reason and its source
  topic/partition/offset; the rest of the batch goes on;
* an article the engine rejects (same id, different text) -> a dead letter with reason
  ``conflict``;
* the index unreachable (``retriable``) -> wait with capped exponential backoff and try the *whole
  batch* again, never dead-lettering good articles; replays are idempotent, so articles already
  registered before the failure get their same verdicts.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import orjson

from stream.backoff import backoff
from stream.engine import Engine
from stream.errors import IndexStoreError, InvalidMessage, NeardupError
from stream.metrics import Metrics
from stream.model import Article, Verdict
from stream.schema import parse_article

log = logging.getLogger("neardup.pipeline")


@dataclass(frozen=True, slots=True)
class Incoming:
    value: bytes | None
    key: bytes | None
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Outgoing:
    key: bytes
    value: bytes


def dead_letter(msg: Incoming, reason: str, error: str, keep_bytes: int) -> Outgoing:
    """The original message with why it was refused and where it came from."""
    raw = msg.value or b""
    try:
        shown: str | None = raw[:keep_bytes].decode("utf-8")
        encoded = None
    except UnicodeDecodeError:
        shown, encoded = None, base64.b64encode(raw[:keep_bytes]).decode("ascii")
    body = {
        "reason": reason,
        "error": error,
        "source": {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset},
        "key": (msg.key or b"").decode("utf-8", "replace"),
        "value": shown,
        "value_base64": encoded,
        "value_bytes": len(raw),
        "truncated": len(raw) > keep_bytes,
        "at": time.time(),
    }
    return Outgoing(msg.key or b"", orjson.dumps(body))


class BatchHandler:
    def __init__(
        self,
        engine: Engine,
        metrics: Metrics,
        *,
        default_namespace: str = "default",
        max_message_bytes: int = 1_000_000,
        backoff_max_s: float = 5.0,
        should_stop: Callable[[], bool] = lambda: False,
        on_unavailable: Callable[[bool], Awaitable[None] | None] | None = None,
    ) -> None:
        self.engine = engine
        self.metrics = metrics
        self.default_namespace = default_namespace
        self.max_message_bytes = max_message_bytes
        self.backoff_max_s = backoff_max_s
        self.should_stop = should_stop
        self.on_unavailable = on_unavailable

    def parse(self, batch: Sequence[Incoming]) -> tuple[list[tuple[int, Article]], list[Outgoing]]:
        good: list[tuple[int, Article]] = []
        dead: list[Outgoing] = []
        for i, msg in enumerate(batch):
            try:
                if msg.value is None:
                    raise InvalidMessage("empty_message", "message has no value (tombstone)")
                article = parse_article(
                    msg.value,
                    default_namespace=self.default_namespace,
                    max_text_bytes=self.max_message_bytes,
                )
            except InvalidMessage as exc:
                dead.append(dead_letter(msg, exc.reason, str(exc), 64 * 1024))
                self.metrics.dead_letters.labels(exc.reason).inc()
                continue
            good.append((i, article))
        return good, dead

    async def decide(self, articles: list[Article]) -> list[Verdict | NeardupError]:
        """engine.process with retries while the index is unavailable (never gives up)."""
        delays = backoff(0.1, self.backoff_max_s)
        while True:
            try:
                results = await self.engine.process(articles)
                if self.on_unavailable:
                    await _maybe(self.on_unavailable(False))
                return results
            except IndexStoreError as exc:
                if not exc.retriable or self.should_stop():
                    raise
                self.metrics.retries.inc()
                delay = next(delays)
                log.warning("index unavailable (%s); retrying the batch in %.1fs", exc, delay)
                if self.on_unavailable:
                    await _maybe(self.on_unavailable(True))
                await asyncio.sleep(delay)

    async def handle(self, batch: Sequence[Incoming]) -> tuple[list[Outgoing], list[Outgoing]]:
        """Verdict messages (key = article id) and dead letters for one batch."""
        started = time.perf_counter()
        self.metrics.articles_in.inc(len(batch))
        good, dead = self.parse(batch)
        trips = self.engine.index.round_trips
        results = await self.decide([a for _, a in good]) if good else []
        self.metrics.redis_round_trips.inc(self.engine.index.round_trips - trips)
        verdicts: list[Outgoing] = []
        for (i, article), res in zip(good, results, strict=True):
            if isinstance(res, NeardupError):
                dead.append(dead_letter(batch[i], res.reason, str(res), 64 * 1024))
                self.metrics.dead_letters.labels(res.reason).inc()
                continue
            self.metrics.verdicts.labels(res.verdict).inc()
            self.metrics.candidates.observe(res.candidates)
            verdicts.append(Outgoing(article.id.encode("utf-8"), res.to_json()))
        self.metrics.batch_seconds.observe(time.perf_counter() - started)
        return verdicts, dead


async def _maybe(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


__all__ = ["BatchHandler", "Incoming", "Outgoing", "dead_letter"]
