"""One batch of raw Kafka messages -> verdict messages and dead letters (no Kafka client here).

The worker's agent hands every batch to :meth:`BatchHandler.handle` and publishes what it returns;
keeping this free of faust makes the error policy testable without a broker:

* a message that is not a valid article -> a dead letter with the reason and its source
  topic/partition/offset; the rest of the batch goes on;
* an input key over :data:`~neardup.stream.schema.MAX_KEY_BYTES` -> a dead letter ``oversize_key``;
* an article the engine rejects (same id, different text) -> a dead letter with reason
  ``conflict``; a namespace it cannot serve (made with another scheme) -> its articles are dead
  letters ``scheme_mismatch``, the other namespaces of the batch get their verdicts;
* a replayed message of a deleted article -> nothing is published; counted as skipped;
* a tombstone (key = article id, null value; namespace from the ``namespace`` header, else the
  default) -> the article is deleted and a tombstone with its id is published on the verdict
  topic, whether or not the id was known (deleting twice is harmless);
* the index unreachable (``retriable``) -> wait with capped exponential backoff and try again,
  never dead-lettering good articles; replays are idempotent, so articles already registered
  before the failure get their same verdicts;
* anything else raised while deciding (a bug that some input triggers) -> the articles are
  decided one by one, and those that still fail while the others succeed are dead letters
  ``internal_error``; when every one fails the fault is not the input's, and it is raised (the
  worker exits uncommitted, which a restart can fix).

Order within a batch: messages take effect in offset order. The batch is cut at each tombstone:
the articles before it are decided (and their verdicts published) first, then it deletes, then
the articles after it are decided. So an article followed by its tombstone ends deleted (its
verdict, then the tombstone, on the verdict topic). A deleted id is remembered by the index (see
:mod:`neardup.stream.index.base`), so a message for that id after its tombstone, in the same batch
or a replay long after, publishes nothing and is counted as skipped (``deleted``): a takedown stays
down; a text that may come back takes a new id.

Every record produced is bounded: verdict keys are article ids (at most ``keys.ID_MAX_BYTES``),
and a dead letter is bounded (:mod:`~neardup.stream.worker.dead_letters`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from neardup.stream.backoff import backoff
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import InvalidMessage, NeardupError
from neardup.stream.model import Article, Verdict
from neardup.stream.schema import MAX_KEY_BYTES, parse_article, parse_tombstone
from neardup.stream.worker.dead_letters import dead_letter
from neardup.stream.worker.messages import Incoming, Outgoing, verdict_key
from neardup.stream.worker.metrics import Metrics

log = logging.getLogger("neardup.pipeline")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Delete:
    ns: str
    doc_id: str


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
        on_unavailable: Callable[[str | None], Awaitable[None] | None] | None = None,
    ) -> None:
        """``on_unavailable(why)`` is told why the index is away while retrying, and None once
        a call succeeds again (``/health`` reports it)."""
        self.engine = engine
        self.metrics = metrics
        self.default_namespace = default_namespace
        self.max_message_bytes = max_message_bytes
        self.backoff_max_s = backoff_max_s
        self.should_stop = should_stop
        self.on_unavailable = on_unavailable

    def _dead(self, msg: Incoming, reason: str, error: str) -> Outgoing:
        self.metrics.dead_letters.labels(reason).inc()
        return dead_letter(msg, reason, error)

    def parse(self, msg: Incoming) -> Article | _Delete:
        """An article, or a delete for a tombstone; raises :class:`InvalidMessage`."""
        if msg.key is not None and len(msg.key) > MAX_KEY_BYTES:
            raise InvalidMessage(
                "oversize_key", f"key of {len(msg.key)} bytes exceeds {MAX_KEY_BYTES}"
            )
        if msg.value is None:
            ns, doc_id = parse_tombstone(msg.key, msg.headers, self.default_namespace)
            return _Delete(ns, doc_id)
        return parse_article(
            msg.value,
            default_namespace=self.default_namespace,
            max_text_bytes=self.max_message_bytes,
        )

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` with retries while the index is unavailable (gives up only when stopping)."""
        delays = backoff(0.1, self.backoff_max_s)
        while True:
            try:
                result = await call()
            except NeardupError as exc:
                if not exc.retriable or self.should_stop():
                    raise
                self.metrics.retries.inc()
                delay = next(delays)
                log.warning("index unavailable (%s); retrying the batch in %.1fs", exc, delay)
                if self.on_unavailable:
                    await _maybe(self.on_unavailable(f"index unavailable: {exc}"))
                await asyncio.sleep(delay)
                continue
            if self.on_unavailable:
                await _maybe(self.on_unavailable(None))
            return result

    async def decide(self, articles: list[Article]) -> list[Verdict | NeardupError]:
        """engine.process with retries; an unexpected error is isolated to its articles.

        An exception outside the error tree (a bug some input triggers) makes the batch be
        decided one article at a time. The articles that still fail while others succeed are
        dead letters ``internal_error``: the fault follows them. When every article fails, the
        fault is not in the input (the store or the code is broken for all), and the error is
        raised: the worker exits without committing, which a restart can fix.
        """
        try:
            return await self._retrying(lambda: self.engine.process(articles))
        except NeardupError as exc:
            if exc.retriable:
                raise
            return [exc] * len(articles)  # (the engine returns per-namespace errors itself)
        except Exception as exc:
            if len(articles) == 1:
                raise
            log.warning("a batch failed (%r); deciding its articles one by one", exc)
            first = exc
        results: list[Verdict | NeardupError] = []
        failed: list[Exception] = []
        for a in articles:
            try:
                results += await self._retrying(functools.partial(self.engine.process, [a]))
            except NeardupError as exc:
                if exc.retriable:
                    raise
                results.append(exc)
            except Exception as exc:
                log.error("deciding article %r failed", a.id, exc_info=True)
                failed.append(exc)
                results.append(_internal(exc))
        if len(failed) == len(articles):
            raise first
        return results

    async def takedown(self, ns: str, doc_id: str) -> tuple[bool, Outgoing]:
        """Delete an article from the index (retrying while it is unavailable), count it, and
        the tombstone to publish on the verdict topic: a tombstone on the input topic and
        ``DELETE /articles/{id}`` take this one path. True when the id was indexed."""
        found = await self._retrying(lambda: self.engine.delete(ns, doc_id))
        self.metrics.deletes.labels("found" if found else "unknown").inc()
        return found, Outgoing(verdict_key(ns, doc_id, self.default_namespace), None, ns)

    async def handle(self, batch: Sequence[Incoming]) -> tuple[list[Outgoing], list[Outgoing]]:
        """Verdict messages (keyed by :func:`verdict_key`; tombstones for deletes) and dead
        letters."""
        started = time.perf_counter()
        self.metrics.articles_in.inc(len(batch))
        out: dict[int, Outgoing] = {}
        dead: list[Outgoing] = []
        segment: list[tuple[int, Article]] = []
        trips = self.engine.index.round_trips
        for i, msg in enumerate(batch):
            try:
                item = self.parse(msg)
            except InvalidMessage as exc:
                dead.append(self._dead(msg, exc.reason, str(exc)))
                continue
            if isinstance(item, Article):
                segment.append((i, item))
                continue
            await self._decide_segment(batch, segment, out, dead)
            segment = []
            try:
                _, out[i] = await self.takedown(item.ns, item.doc_id)
            except NeardupError as exc:  # retriable ones only reach here when stopping
                if exc.retriable:
                    raise
                dead.append(self._dead(msg, exc.reason, str(exc)))
        await self._decide_segment(batch, segment, out, dead)
        self.metrics.redis_round_trips.inc(self.engine.index.round_trips - trips)
        self.metrics.batch_seconds.observe(time.perf_counter() - started)
        return [out[i] for i in sorted(out)], dead

    async def _decide_segment(
        self,
        batch: Sequence[Incoming],
        segment: list[tuple[int, Article]],
        out: dict[int, Outgoing],
        dead: list[Outgoing],
    ) -> None:
        if not segment:
            return
        results = await self.decide([a for _, a in segment])
        for (i, article), res in zip(segment, results, strict=True):
            if isinstance(res, NeardupError):
                if res.reason == "deleted":  # a replay of a taken-down article: stays down
                    self.metrics.skipped.labels(res.reason).inc()
                else:
                    dead.append(self._dead(batch[i], res.reason, str(res)))
                continue
            self.metrics.verdicts.labels(res.verdict).inc()
            self.metrics.candidates.observe(res.candidates)
            key = verdict_key(article.namespace, article.id, self.default_namespace)
            out[i] = Outgoing(key, res.to_json(), article.namespace)


def _internal(exc: Exception) -> NeardupError:
    err = NeardupError(f"{type(exc).__name__}: {exc}")
    err.reason = "internal_error"
    return err


async def _maybe(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


__all__ = ["BatchHandler"]
