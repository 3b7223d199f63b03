"""The faust worker: a thin adapter from Kafka to :class:`~stream.pipeline.BatchHandler`.

Delivery is at-least-once. The agent takes batches of events; a batch's input offsets are acked
(and so committed) only after its verdicts and dead letters are *delivered* to their topics. A
crash in between replays the batch, and replays are idempotent in the index, so a replayed
article gets the same verdict. When Redis is away the agent keeps retrying the batch in place
(consumption pauses; nothing is dead-lettered), and ``/health`` reports not ready.

The clients come from :mod:`stream.clients`, the HTTP views from :mod:`stream.web`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from typing import Any

import faust
import redis.asyncio as aioredis
from faust.transport.drivers import aiokafka as faust_kafka
from faust.types import StreamT

from stream.backoff import backoff
from stream.clients import kafka_options, redis_client, safe_url
from stream.config import Settings
from stream.engine import Engine
from stream.index.redis import RedisIndex
from stream.metrics import Metrics
from stream.pipeline import BatchHandler, Incoming, Outgoing
from stream.web import Readiness, add_views

log = logging.getLogger("neardup.worker")


def _transport_with_fetch_wait(app: faust.App, fetch_max_wait_ms: int) -> Any:
    """faust's Kafka transport with the group consumer's fetch wait set (faust hard-codes 1500 ms).

    The broker answers a fetch that found nothing only when this wait expires; with brokers that
    do not wake a waiting fetch when records arrive (the Tansu test broker), it is a floor on
    latency. Apache Kafka answers as soon as data is there, so a short wait only costs a few idle
    fetches per second.
    """

    class ConsumerThread(faust_kafka.AIOKafkaConsumerThread):
        def _create_worker_consumer(self, transport: Any) -> Any:
            consumer = super()._create_worker_consumer(transport)
            consumer._fetch_max_wait_ms = fetch_max_wait_ms  # read by aiokafka's start()
            return consumer

    class Consumer(faust_kafka.Consumer):
        def _new_consumer_thread(self) -> Any:
            return ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    class Transport(faust_kafka.Transport):
        pass

    Transport.Consumer = Consumer
    return Transport(app.conf.broker_consumer, app)


class Worker:
    """Everything a worker process owns: settings, clients, engine, metrics, the faust app."""

    def __init__(self, settings: Settings, redis: aioredis.Redis | None = None) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.redis = redis if redis is not None else redis_client(settings)
        self.index = RedisIndex(self.redis, shard_bits=settings.redis_shard_bits)
        self.engine = Engine(self.index, settings.policy())
        self.readiness = Readiness(settings, self.redis, self.metrics)
        self.app = self._build_app()
        self.handler = BatchHandler(
            self.engine,
            self.metrics,
            default_namespace=settings.namespace,
            max_message_bytes=settings.max_message_bytes,
            backoff_max_s=settings.retry_backoff_max_s,
            should_stop=lambda: bool(self.app.should_stop),
            on_unavailable=lambda away: self.readiness.index_available(not away),
        )

    def _build_app(self) -> faust.App:
        s = self.settings
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
            web_enabled=True,
            loghandlers=[],
        )
        app.transport = _transport_with_fetch_wait(app, s.kafka_fetch_max_wait_ms)
        inp = app.topic(s.input_topic, key_type=bytes, value_type=bytes, value_serializer="raw")
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

        add_views(app, s, self.engine, self.metrics, self.readiness)
        return app

    async def process_in_flight(self, events: Sequence[Any]) -> None:
        """Process one batch to the end, even when the worker is being stopped.

        faust acks a batch's events as soon as the agent leaves its loop body, so a batch must
        never leave it unpublished: on SIGTERM the batch in flight is finished (published) first,
        then the stop proceeds (commit, leave the group). If a batch cannot be published at all
        (stopping while Redis is away, a broken broker), the process exits at once *without*
        committing, and Kafka redelivers the batch to another worker: at-least-once, never lost.
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

    async def process_events(self, events: Sequence[Any]) -> None:
        batch = [
            Incoming(
                e.message.value,
                e.message.key,
                e.message.topic,
                e.message.partition,
                e.message.offset,
            )
            for e in events
        ]
        verdicts, dead = await self.handler.handle(batch)
        await self.publish(verdicts, dead)

    async def publish(self, verdicts: list[Outgoing], dead: list[Outgoing]) -> None:
        """Send and wait for delivery: the batch's offsets are acked only after this returns."""
        futures = []
        for m in verdicts:
            futures.append(await self.verdict_topic.send(key=m.key, value=m.value))
        for m in dead:
            futures.append(await self.dlq_topic.send(key=m.key, value=m.value))
        if futures:
            await asyncio.gather(*futures)

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


__all__ = ["Worker"]
