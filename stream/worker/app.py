"""The faust worker: a thin adapter from Kafka to
:class:`~neardup.stream.worker.pipeline.BatchHandler`.

Delivery is at-least-once. The agent takes batches of events; a batch's input offsets are acked
(and so committed) only after its verdicts and dead letters are *delivered* to their topics. A
crash in between replays the batch, and replays are idempotent in the index, so a replayed
article gets the same verdict. When Redis is away the agent keeps retrying the batch in place
(consumption pauses; nothing is dead-lettered), and ``/health`` reports not ready.

faust's ``exactly_once`` guarantee (its own ``PROCESSING_GUARANTEE`` environment variable; neardup
has no setting for it) does not change that: faust then commits the offsets through one
transactional producer per input partition, but a record joins a transaction only when faust's
consumer knows the record's topic (``TransactionManager.send``), and the verdict and dead-letter
topics are not consumed, so they are sent outside every transaction. The worker warns at start
(tests/integration/worker/test_exactly_once.py shows it on Apache Kafka).

The clients come from :mod:`neardup.stream.worker.clients`, the HTTP views from
:mod:`neardup.stream.worker.http.web`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import faust
import redis.asyncio as aioredis
from aiokafka.errors import MessageSizeTooLargeError, RecordTooLargeError
from faust.transport.drivers import aiokafka as faust_kafka
from faust.types import StreamT
from redis.asyncio.cluster import RedisCluster

from neardup.stream.backoff import backoff
from neardup.stream.engine.engine import Engine
from neardup.stream.worker.checks import CheckProcess
from neardup.stream.worker.clients import kafka_options, redis_client, redis_index, safe_url
from neardup.stream.worker.config import Settings
from neardup.stream.worker.dead_letters import dead_letter, refused
from neardup.stream.worker.http.page import add_page
from neardup.stream.worker.http.web import (
    Readiness,
    add_views,
    json_errors,
    loopback_hosts_only,
)
from neardup.stream.worker.messages import Incoming, Outgoing
from neardup.stream.worker.metrics import Metrics
from neardup.stream.worker.pipeline import BatchHandler

log = logging.getLogger("neardup.worker")


Skipped = Callable[[str, int, int, int, BaseException], None]


def _transport_with_fetch_wait(app: faust.App, fetch_max_wait_ms: int, on_skipped: Skipped) -> Any:
    """faust's Kafka transport with the group consumer's fetch wait set (faust hard-codes 1500 ms),
    and undecodable record batches skipped instead of crashing the worker.

    The broker answers a fetch that found nothing only when this wait expires; with brokers that
    do not wake a waiting fetch when records arrive (the Tansu test broker), it is a floor on
    latency. Apache Kafka answers as soon as data is there, so a short wait only costs a few idle
    fetches per second.

    A batch the client cannot decode (bad CRC, a payload its codec cannot decompress: what a
    broken producer writes to a broker that stores batches as sent) raises out of aiokafka's
    fetcher on every fetch, and faust stops the worker on it: every owner of the partition would
    crash in turn. The consumer thread instead seeks past that one batch and reports it
    (``on_skipped(topic, partition, first_offset, end_offset, error)``): its offsets become a gap
    that faust commits over, and the worker dead-letters the range (``corrupt_batch``).
    """

    class ConsumerThread(faust_kafka.AIOKafkaConsumerThread):
        def _create_worker_consumer(self, transport: Any) -> Any:
            consumer = super()._create_worker_consumer(transport)
            consumer._fetch_max_wait_ms = fetch_max_wait_ms  # read by aiokafka's start()
            return consumer

        async def _fetch_records(self, consumer: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super()._fetch_records(consumer, *args, **kwargs)
            except Exception as exc:
                bad = _undecodable_batch(exc)
                if bad is None:
                    raise
                tp, first, end, records = bad
                log.error(
                    "skipping an undecodable record batch: %s[%d] offsets %d..%d (%r)",
                    tp.topic, tp.partition, first, end - 1, exc,
                )  # fmt: skip
                consumer.seek(tp, end)
                on_skipped(tp.topic, tp.partition, first, end, exc)
                return records

    class Consumer(faust_kafka.Consumer):
        def _new_consumer_thread(self) -> Any:
            return ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    class Transport(faust_kafka.Transport):
        pass

    Transport.Consumer = Consumer
    return Transport(app.conf.broker_consumer, app)


class Worker:
    """Everything a worker process owns: settings, clients, engine, metrics, the faust app."""

    def __init__(
        self, settings: Settings, redis: aioredis.Redis | RedisCluster | None = None
    ) -> None:
        self.settings = settings
        self._corrupt: deque[Outgoing] = deque()  # appended by the consumer thread
        self.metrics = Metrics()
        self.redis = redis if redis is not None else redis_client(settings)
        self.index = redis_index(settings, self.redis)
        self.engine = Engine(self.index, settings.policy(), policies=settings.policies())
        # /check in a process of its own, with its own client: never on the stream's loop
        self.checks = CheckProcess(settings)
        # Readiness only pings: a cluster client's PING answers the same way.
        self.readiness = Readiness(settings, cast("aioredis.Redis", self.redis), self.metrics)
        self.app = self._build_app()
        self.handler = BatchHandler(
            self.engine,
            self.metrics,
            default_namespace=settings.namespace,
            max_message_bytes=settings.max_message_bytes,
            backoff_max_s=settings.retry_backoff_max_s,
            should_stop=lambda: bool(self.app.should_stop),
            on_unavailable=self.readiness.index_unavailable,
        )

    def _build_app(self) -> faust.App:
        s = self.settings
        hosts = loopback_hosts_only(s)  # no token on loopback: refuse other hosts' names
        middlewares = [json_errors] + ([hosts] if hosts is not None else [])
        app = faust.App(
            s.consumer_group,
            **kafka_options(s),
            store="memory://",
            datadir=s.data_dir,
            web_port=s.web_port,
            web_host=s.web_host,
            web_bind=s.web_host,
            broker_session_timeout=s.kafka_session_timeout_s,
            broker_heartbeat_interval=s.kafka_heartbeat_interval_s,
            consumer_auto_offset_reset="earliest",
            topic_partitions=s.topic_partitions,
            topic_allow_declare=True,
            producer_acks=-1,
            producer_max_request_size=max(s.max_message_bytes * 2, 1_048_576),
            consumer_max_fetch_size=max(s.max_message_bytes * 2, 4_194_304),
            # The group leader assigns only the topics its metadata holds: none, right after a
            # broker restart or before the input topic exists. faust refreshes metadata every 5
            # minutes; a refresh that finds the topic makes the group rejoin and assign it.
            consumer_metadata_max_age_ms=5_000,
            web_enabled=True,
            web_application_options={"middlewares": middlewares},
            loghandlers=[],
        )
        guarantee = getattr(app.conf.processing_guarantee, "value", "")
        if guarantee != "at_least_once":  # faust's own env var asked for another
            log.warning(
                "faust's PROCESSING_GUARANTEE=%s commits offsets in Kafka transactions but sends "
                "the verdicts outside them: verdicts stay at-least-once (docs/reliability.md)",
                guarantee,
            )
        app.transport = _transport_with_fetch_wait(app, s.kafka_fetch_max_wait_ms, self._skipped)
        inp = app.topic(s.input_topic, key_type=bytes, value_type=bytes, value_serializer="raw")
        self.input_topic_name = s.input_topic
        self.verdict_topic = app.topic(
            s.verdict_topic, key_type=bytes, value_type=bytes, value_serializer="raw"
        )
        self.dlq_topic = app.topic(
            s.dlq_topic, key_type=bytes, value_type=bytes, value_serializer="raw"
        )

        @app.agent(inp, name="neardup.decide")
        async def decide(stream: StreamT[bytes]) -> None:
            batches = stream.take_events(s.batch_size, within=s.batch_within_ms / 1000)  # type: ignore[attr-defined]
            async for events in batches:
                await self.process_in_flight(events)

        @app.task  # type: ignore[untyped-decorator]
        async def on_start() -> None:
            await self.wait_for_redis()
            await self.readiness.probe()

        @app.timer(interval=2.0)  # type: ignore[untyped-decorator]
        async def health() -> None:
            await self.readiness.probe()
            await self.publish_skipped()

        add_views(app, s, self.engine, self.metrics, self.readiness, self.delete, self.checks)
        add_page(app)
        return app

    async def process_in_flight(self, events: Sequence[Any]) -> None:
        """Process one batch to the end, even when the worker is being stopped.

        faust acks a batch's events as soon as the agent leaves its loop body, so a batch must
        never leave it unpublished: on SIGTERM the batch in flight is finished (published) first,
        then the stop proceeds (commit, leave the group). If a batch cannot be published at all
        (stopping while Redis is away, a broken broker), the process exits at once *without*
        committing, and Kafka redelivers the batch to another worker: at-least-once, never lost.
        Only faults outside the input get here (the handler turns every input's fault into a
        dead letter, and a record the broker refuses as too large is replaced, see
        :meth:`publish`), so a restart, here or on the next owner, can get past them.
        """
        task = asyncio.ensure_future(self.process_events(events))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            log.info("stopping: finishing the batch in flight (%d articles)", len(events))
            try:
                await task
            except Exception:
                self._abort_uncommitted(len(events))
            raise
        except Exception:
            self._abort_uncommitted(len(events))

    def _abort_uncommitted(self, n: int) -> None:
        log.critical(
            "a batch of %d articles could not be published; exiting without committing its "
            "offsets so that Kafka redelivers it",
            n,
            exc_info=True,
        )
        logging.shutdown()
        os._exit(70)  # EX_SOFTWARE; never run faust's ack-and-commit on this path

    def _skipped(
        self, topic: str, partition: int, first: int, end: int, exc: BaseException
    ) -> None:
        """From the consumer thread: a batch it could not decode was skipped; queue its dead
        letter (published from the worker's loop, see :meth:`publish_skipped`)."""
        error = f"undecodable record batch, offsets {first}..{end - 1} skipped: {exc!r}"
        self.metrics.dead_letters.labels("corrupt_batch").inc()
        self._corrupt.append(
            dead_letter(Incoming(None, None, topic, partition, first), "corrupt_batch", error)
        )

    async def publish_skipped(self) -> None:
        while self._corrupt:
            letter = self._corrupt.popleft()
            try:
                await self.publish([], [letter])
            except Exception:
                self._corrupt.appendleft(letter)
                log.warning("could not publish a corrupt_batch dead letter yet", exc_info=True)
                return

    async def process_events(self, events: Sequence[Any]) -> None:
        batch = [
            Incoming(
                e.message.value,
                e.message.key,
                e.message.topic,
                e.message.partition,
                e.message.offset,
                _headers(e.message.headers),
            )
            for e in events
        ]
        verdicts, dead = await self.handler.handle(batch)
        await self.publish(verdicts, dead)

    async def delete(self, ns: str, doc_id: str) -> bool:
        """``DELETE /articles/{id}``: as a tombstone on the input topic does (index, then a
        verdict tombstone, delivered before answering), and a tombstone on the input topic
        itself (key: the id, header ``namespace``), so that a rebuild from the topic, or any
        other reader of it, sees the takedown too."""
        found, tombstone = await self.handler.takedown(ns, doc_id)
        key = doc_id.encode("utf-8")
        header = [("namespace", ns.encode("utf-8"))]
        await (await self._send(self.input_topic_name, key, None, header))
        await self.publish([tombstone], [])
        return found

    async def publish(self, verdicts: list[Outgoing], dead: list[Outgoing]) -> None:
        """Send and wait for delivery: the batch's offsets are acked only after this returns.

        Records are bounded (see :mod:`neardup.stream.worker.pipeline`), but a broker may be
        configured with a smaller ``message.max.bytes``: a record it refuses as too large is
        replaced by a small dead letter saying so (or dropped, when that is refused too), never
        retried for ever.
        """
        sends = [(self.verdict_topic, m) for m in verdicts] + [(self.dlq_topic, m) for m in dead]
        # Enqueued one after another, in order (an article's verdict before its tombstone), and
        # only then awaited together.
        pending = [await self._enqueue(topic, m) for topic, m in sends]
        results = await asyncio.gather(*pending, return_exceptions=True)
        too_large = []
        for (topic, m), res in zip(sends, results, strict=True):
            if isinstance(res, BaseException):
                if not _too_large(res):
                    raise res
                too_large.append((topic, m))
        for topic, m in too_large:
            self.metrics.oversize_records.inc()
            log.error("the broker refused a %d-byte record for %s", len(m.value or b""), topic)
            if topic is self.dlq_topic and m.value is not None and b'"oversize_record"' in m.value:
                continue  # the replacement itself was refused: nothing smaller to send
            try:
                await (await self._enqueue(self.dlq_topic, refused(topic.get_topic_name(), m)))
            except Exception as exc:
                if not _too_large(exc):
                    raise

    async def _enqueue(self, topic: Any, m: Outgoing) -> Any:
        """Hand ``m`` to the producer; the delivery future, or an already failed one when the
        producer refuses it at once (too large for ``max_request_size``)."""
        try:
            return await self._send(topic.get_topic_name(), m.key, m.value, m.headers())
        except Exception as exc:
            failed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            failed.set_exception(exc)
            return failed

    async def _send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> Any:
        """faust's producer, called as its topics call it, without a topic's per-record
        bookkeeping (a FutureMessage, a PendingMessage, sensor callbacks: a fifth of a loaded
        worker's time went there); the records are bytes already (raw serializers)."""
        return await self.app.producer.send(topic, key, value, None, None, headers)

    async def wait_for_redis(self) -> None:
        """Load the index functions, waiting (and saying why) while Redis is unreachable."""
        delays = backoff(0.5, self.settings.retry_backoff_max_s)
        while not self.app.should_stop:
            try:
                await self.index.load_functions()
                return
            except Exception as exc:  # not reachable yet, auth, ...: report and wait
                delay = next(delays)
                log.warning(
                    "waiting for Redis at %s: %s (retry in %.1fs)",
                    safe_url(self.settings.redis_url),
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)


def _headers(raw: Any) -> tuple[tuple[str, bytes | None], ...]:
    """A message's headers as pairs (faust hands a list of pairs or a mapping)."""
    if not raw:
        return ()
    pairs = raw.items() if isinstance(raw, Mapping) else raw
    return tuple((str(k), v) for k, v in pairs)


def _too_large(exc: BaseException) -> bool:
    """Refused as too large: on delivery (the broker's answer), or at once by the producer,
    which faust wraps in ProducerSendError."""
    too_large = MessageSizeTooLargeError | RecordTooLargeError
    return isinstance(exc, too_large) or isinstance(exc.__cause__, too_large)


def _undecodable_batch(exc: BaseException) -> tuple[Any, int, int, dict[Any, list[Any]]] | None:
    """``(partition, first offset, end offset, records)`` of the record batch whose decoding
    raised ``exc``, read from aiokafka's fetcher frames in the traceback; None when ``exc`` did
    not come from decoding a batch (then it is not ours to handle).

    ``records`` are what the fetch had drained before the failure, which the exception would
    otherwise drop: the other partitions' records (their positions have moved past them) and the
    failing partition's records before the bad batch."""
    found: tuple[Any, int, int] | None = None
    drained: dict[Any, list[Any]] | None = None
    before: list[Any] = []
    tb = exc.__traceback__
    while tb is not None:
        name, local = tb.tb_frame.f_code.co_name, tb.tb_frame.f_locals
        if name == "fetched_records" and isinstance(local.get("drained"), dict):
            drained = local["drained"]
        elif name == "getall" and isinstance(local.get("ret_list"), list):
            before = local["ret_list"]
        elif name == "_unpack_records" and "next_batch" in local:
            batch, tp = local["next_batch"], local.get("tp")
            first, end = getattr(batch, "base_offset", None), getattr(batch, "next_offset", None)
            if tp is not None and isinstance(first, int) and isinstance(end, int) and end > first:
                found = (tp, first, end)
        tb = tb.tb_next
    if found is None or drained is None:
        return None
    records = dict(drained)
    if before:
        records[found[0]] = [*records.get(found[0], []), *before]
    return (*found, records)


__all__ = ["Worker"]
