"""The faust worker: a thin adapter from Kafka and HTTP to :class:`~stream.pipeline.BatchHandler`.

Delivery is at-least-once. The agent takes batches of events; a batch's input offsets are acked
(and so committed) only after its verdicts and dead letters are *delivered* to their topics. A
crash in between replays the batch, and replays are idempotent in the index, so a replayed
article gets the same verdict. When Redis is away the agent keeps retrying the batch in place
(consumption pauses; nothing is dead-lettered), and ``/health`` reports not ready.

Web views: ``POST /check`` (originality check with the same engine and index), ``GET /health``
(200 when Kafka and Redis are reachable, else 503), ``GET /metrics`` (Prometheus text format).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import ssl
import uuid
from collections.abc import Sequence
from typing import Any

import faust
import orjson
import redis.asyncio as aioredis
from faust.transport.drivers import aiokafka as faust_kafka
from faust.types import StreamT
from faust.web import Request, Response, View

from stream.config import Settings
from stream.engine import Engine, NeardupError
from stream.index.redis import RedisIndex
from stream.metrics import Metrics
from stream.pipeline import BatchHandler, Incoming, Outgoing
from stream.schema import InvalidMessage, article_from_obj

log = logging.getLogger("neardup.worker")


def redis_client(settings: Settings) -> aioredis.Redis:
    """The one place a Redis client is built (the worker's composition root)."""
    kwargs: dict[str, Any] = {
        "socket_timeout": settings.redis_timeout_s,
        "socket_connect_timeout": settings.redis_timeout_s,
        "health_check_interval": 10,
    }
    if settings.redis_password is not None:
        kwargs["password"] = settings.redis_password.get_secret_value()
    if settings.redis_ssl_ca_certs:
        kwargs["ssl_ca_certs"] = settings.redis_ssl_ca_certs
    return aioredis.Redis.from_url(settings.redis_url, **kwargs)


def kafka_options(settings: Settings) -> dict[str, Any]:
    """faust App options for the broker: bootstrap, SASL/TLS credentials."""
    opts: dict[str, Any] = {"broker": [f"kafka://{h}" for h in settings.bootstrap_servers()]}
    proto = settings.kafka_security_protocol
    context: ssl.SSLContext | None = None
    if proto in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=settings.kafka_ssl_cafile)
        if settings.kafka_ssl_certfile:
            context.load_cert_chain(settings.kafka_ssl_certfile, settings.kafka_ssl_keyfile)
    if proto.startswith("SASL"):
        assert settings.kafka_sasl_password is not None  # checked by Settings
        opts["broker_credentials"] = faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=settings.kafka_sasl_password.get_secret_value(),
            mechanism=settings.kafka_sasl_mechanism,
            ssl_context=context,
        )
    elif context is not None:
        opts["broker_credentials"] = context
    return opts


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
        self.redis_ok = False
        self.kafka_ok = False
        self.app = self._build_app()
        self.handler = BatchHandler(
            self.engine,
            self.metrics,
            default_namespace=settings.namespace,
            max_message_bytes=settings.max_message_bytes,
            backoff_max_s=settings.retry_backoff_max_s,
            should_stop=lambda: bool(self.app.should_stop),
            on_unavailable=self._index_unavailable,
        )

    async def _index_unavailable(self, away: bool) -> None:
        self.redis_ok = not away
        self.metrics.ready.set(1 if self.ready else 0)

    @property
    def ready(self) -> bool:
        return self.redis_ok and self.kafka_ok

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
            await self.probe_services()

        @app.timer(interval=2.0)  # type: ignore[untyped-decorator]
        async def health() -> None:
            await self.probe_services()

        worker = self

        class Check(View):
            async def post(self, request: Request) -> Response:
                return await worker.check(self, request)

        class Health(View):
            async def get(self, request: Request) -> Response:
                body = {"ready": worker.ready, "redis": worker.redis_ok, "kafka": worker.kafka_ok}
                return self.json(body, status=200 if worker.ready else 503)

        class MetricsView(View):
            async def get(self, request: Request) -> Response:
                return self.bytes(worker.metrics.render(), content_type="text/plain; version=0.0.4")

        app.page("/check")(Check)
        app.page("/health")(Health)
        app.page("/metrics")(MetricsView)
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
        delay = 0.5
        while not self.app.should_stop:
            try:
                await self.index.load_functions()
                return
            except Exception as exc:  # not reachable yet, auth, ...: report and wait
                log.warning(
                    "waiting for Redis at %s: %s (retry in %.1fs)",
                    _safe_url(self.settings.redis_url),
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.settings.retry_backoff_max_s)

    async def probe_services(self) -> None:
        try:
            self.redis_ok = bool(await self.redis.ping())
        except Exception:  # any failure means "not reachable"; the reason is logged
            log.warning("Redis at %s is not reachable", _safe_url(self.settings.redis_url))
            self.redis_ok = False
        self.kafka_ok = await _tcp_reachable(self.settings.bootstrap_servers())
        self.metrics.ready.set(1 if self.ready else 0)

    async def check(self, view: View, request: Request) -> Response:
        token = self.settings.check_token
        if token is not None:
            # aiohttp decodes header bytes with surrogateescape: encode them back the same way,
            # or a non-UTF-8 header raises here (a 500) instead of being refused.
            got = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
            want = f"Bearer {token.get_secret_value()}".encode()
            if not hmac.compare_digest(got, want):
                return view.json({"error": "unauthorized"}, status=401)
        raw: Any = request  # faust's Request protocol hides aiohttp's streaming body
        length = raw.content_length
        limit = self.settings.check_max_body_bytes
        if length is not None and length > limit:  # refused before reading anything
            return view.json({"error": "oversize", "limit_bytes": limit}, status=413)
        # StreamReader.read(n) returns what has arrived so far, not n bytes: read to the end of
        # the body (chunked bodies have no Content-Length), never more than limit + 1 bytes.
        body = bytearray()
        while len(body) <= limit:
            chunk = await raw.content.read(limit + 1 - len(body))
            if not chunk:
                break
            body += chunk
        if len(body) > limit:
            return view.json({"error": "oversize", "limit_bytes": limit}, status=413)
        try:
            obj = orjson.loads(body)
            if not isinstance(obj, dict):
                raise InvalidMessage("not_object", "expected a JSON object")
            register = obj.get("register", False)
            if not isinstance(register, bool):
                raise InvalidMessage("invalid_field", "register must be true or false")
            if "id" not in obj and not register:
                obj = {**obj, "id": f"check-{uuid.uuid4()}"}
            article = article_from_obj(
                obj,
                default_namespace=self.settings.namespace,
                max_text_bytes=self.settings.max_message_bytes,
            )
        except orjson.JSONDecodeError as exc:
            return view.json({"error": "invalid_json", "detail": str(exc)}, status=400)
        except InvalidMessage as exc:
            return view.json({"error": exc.reason, "detail": str(exc)}, status=400)
        try:
            (result,) = await self.engine.process([article], register=register)
        except Exception as exc:  # the index is away: say so, do not crash the view
            log.warning("check failed: %s", exc)
            return view.json({"error": "unavailable", "detail": str(exc)}, status=503)
        if isinstance(result, NeardupError):
            return view.json({"error": result.reason, "detail": str(result)}, status=409)
        out = result.to_dict()
        out["registered"] = register
        return view.json(out)


def _safe_url(url: str) -> str:
    """The URL without credentials, for logs."""
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


async def _tcp_reachable(servers: list[str], connect_s: float = 2.0) -> bool:
    for server in servers:
        host, _, port = server.rpartition(":")
        with contextlib.suppress(OSError, asyncio.TimeoutError, ValueError):
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), connect_s)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return True
    return False


async def ensure_topics(settings: Settings) -> None:
    """Create the input, verdict and dead-letter topics if missing (idempotent)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers())
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(t, settings.topic_partitions, 1)
            for t in (settings.input_topic, settings.verdict_topic, settings.dlq_topic)
            if t not in existing
        ]
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
    finally:
        await admin.close()
