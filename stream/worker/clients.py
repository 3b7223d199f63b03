"""The worker's clients, built from :class:`~neardup.stream.worker.config.Settings` in one place.

Redis and Kafka clients are made here and handed to the code that uses them (the index, the faust
app, the topic admin), which never builds its own. The faust app and the topic admin get the same
bootstrap servers and the same credentials (TLS context, SASL mechanism, user and password), so a
broker that needs them is reached by both or by neither. Secrets are read from their
``SecretStr`` only here, and URLs are logged through :func:`safe_url`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Any

import faust
import redis.asyncio as aioredis
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from redis.asyncio.cluster import RedisCluster

from neardup.stream.index.redis.clients import redis_cluster_client
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.worker.config import Settings


def redis_index(
    settings: Settings, client: aioredis.Redis | RedisCluster | None = None
) -> RedisIndex:
    """The index on ``client`` (a new one from the settings if None), as the settings say."""
    return RedisIndex(
        client if client is not None else redis_client(settings),
        shard_bits=settings.redis_shard_bits,
        wait_replicas=settings.redis_wait_replicas,
        wait_timeout_ms=settings.redis_wait_timeout_ms,
    )


def redis_client(settings: Settings) -> aioredis.Redis | RedisCluster:
    """The one place a Redis client is built (the worker's composition root): with
    ``redis_cluster``, a cluster client seeded by ``redis_url`` (any node), same credentials."""
    kwargs: dict[str, Any] = {
        "socket_timeout": settings.redis_timeout_s,
        "socket_connect_timeout": settings.redis_timeout_s,
        "health_check_interval": 10,
    }
    if settings.redis_password is not None:
        kwargs["password"] = settings.redis_password.get_secret_value()
    if settings.redis_ssl_ca_certs:
        kwargs["ssl_ca_certs"] = settings.redis_ssl_ca_certs
    if settings.redis_cluster:
        return redis_cluster_client(settings.redis_url, **kwargs)
    return aioredis.Redis.from_url(settings.redis_url, **kwargs)


def _kafka_ssl_context(settings: Settings) -> ssl.SSLContext | None:
    if settings.kafka_security_protocol not in ("SSL", "SASL_SSL"):
        return None
    context = ssl.create_default_context(cafile=settings.kafka_ssl_cafile)
    if settings.kafka_ssl_certfile:
        context.load_cert_chain(settings.kafka_ssl_certfile, settings.kafka_ssl_keyfile)
    return context


def _sasl_password(settings: Settings) -> str:
    assert settings.kafka_sasl_password is not None  # checked by Settings
    return settings.kafka_sasl_password.get_secret_value()


def kafka_options(settings: Settings) -> dict[str, Any]:
    """faust App options for the broker: bootstrap, SASL/TLS credentials."""
    opts: dict[str, Any] = {"broker": [f"kafka://{h}" for h in settings.bootstrap_servers()]}
    context = _kafka_ssl_context(settings)
    if settings.kafka_security_protocol.startswith("SASL"):
        opts["broker_credentials"] = faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=_sasl_password(settings),
            mechanism=settings.kafka_sasl_mechanism,
            ssl_context=context,
        )
    elif context is not None:
        opts["broker_credentials"] = context
    return opts


def kafka_admin_options(settings: Settings) -> dict[str, Any]:
    """aiokafka client options with the same broker and credentials as :func:`kafka_options`."""
    opts: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers(),
        "security_protocol": settings.kafka_security_protocol,
    }
    context = _kafka_ssl_context(settings)
    if context is not None:
        opts["ssl_context"] = context
    if settings.kafka_security_protocol.startswith("SASL"):
        opts["sasl_mechanism"] = settings.kafka_sasl_mechanism
        opts["sasl_plain_username"] = settings.kafka_sasl_username
        opts["sasl_plain_password"] = _sasl_password(settings)
    return opts


def topic_layout(settings: Settings, brokers: int) -> tuple[int, dict[str, dict[str, str]]]:
    """The replication factor and the configs of each topic neardup creates: replicated
    three times (or on every broker of a smaller cluster), ``min.insync.replicas`` one less,
    and the verdict topic compacted (one verdict per article: a tombstone deletes it)."""
    replication = settings.topic_replication or min(3, max(1, brokers))
    insync = settings.topic_min_insync_replicas or max(1, replication - 1)
    common = {"min.insync.replicas": str(insync)}
    return replication, {
        settings.input_topic: common,
        settings.verdict_topic: {**common, "cleanup.policy": "compact"},
        settings.dlq_topic: common,
    }


async def ensure_topics(settings: Settings) -> None:
    """Create the input, verdict and dead-letter topics if missing (idempotent), laid out as
    :func:`topic_layout` says."""
    admin = AIOKafkaAdminClient(**kafka_admin_options(settings))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        brokers = len((await admin.describe_cluster()).get("brokers", ())) or 1
        replication, configs = topic_layout(settings, brokers)
        wanted = [
            NewTopic(t, settings.topic_partitions, replication, topic_configs=configs[t])
            for t in (settings.input_topic, settings.verdict_topic, settings.dlq_topic)
            if t not in existing
        ]
        if wanted:
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(wanted)
    finally:
        await admin.close()


async def broker_answers(settings: Settings) -> None:
    """Raise unless the broker answers a metadata request: faust exits at start when it cannot
    bootstrap, so the worker waits for this first."""
    admin = AIOKafkaAdminClient(**kafka_admin_options(settings))
    try:
        await admin.start()
    finally:
        await admin.close()


async def tcp_reachable(servers: list[str], connect_s: float = 2.0) -> bool:
    """Whether any of these ``host:port`` servers accepts a TCP connection (a liveness probe
    that costs no protocol handshake and needs no credentials)."""
    for server in servers:
        host, _, port = server.rpartition(":")
        with contextlib.suppress(OSError, asyncio.TimeoutError, ValueError):
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), connect_s)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return True
    return False


def safe_url(url: str) -> str:
    """The URL without credentials, for logs."""
    if "@" in url:
        scheme, rest = url.split("://", 1)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url


__all__ = [
    "broker_answers",
    "ensure_topics",
    "kafka_admin_options",
    "kafka_options",
    "redis_client",
    "redis_cluster_client",
    "redis_index",
    "safe_url",
    "tcp_reachable",
    "topic_layout",
]
