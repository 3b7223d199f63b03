"""Readiness probes for the local servers, asked through the clients the product uses.

Both return ``(version, pid or None)`` so a caller can check the answer came from its own process.
"Not up yet" is a :class:`ConnectionError` (try again); the wrong server a :class:`ServiceError`.
"""

from __future__ import annotations

import redis
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["HOST", "ServiceError", "probe_kafka", "probe_redis"]

HOST = "127.0.0.1"
TIMEOUT_S = 2.0


class ServiceError(RuntimeError):
    """A server could not be found, started, or did not answer its readiness probe."""


def probe_redis(port: int) -> tuple[str, int | None]:
    """PING, then check FUNCTION support; returns the server's version and process id."""
    client = redis.Redis(
        host=HOST,
        port=port,
        socket_timeout=TIMEOUT_S,
        socket_connect_timeout=TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),  # the caller polls: one try a probe
    )
    try:
        client.ping()
        info = client.info("server")
        # valkey also reports a Redis-compatible redis_version (7.2.4): prefer its own.
        version = str(info.get("valkey_version") or info.get("redis_version") or "?")
        try:
            client.function_stats()
        except redis.ResponseError as exc:
            raise ServiceError(f"server {version} lacks FUNCTION (needs Redis 7+): {exc}") from exc
    except (redis.ConnectionError, redis.TimeoutError) as exc:  # loading, refused, silent
        raise ConnectionError(f"Redis on {HOST}:{port}: {exc}") from exc
    finally:
        client.close()
    pid = info.get("process_id")
    return version, int(pid) if pid is not None else None


def probe_kafka(port: int) -> tuple[str, int | None]:
    """A metadata request: the broker answers and advertises 127.0.0.1:port.

    The Kafka protocol does not tell the broker's pid: the second value is always None.
    """
    admin = AdminClient(
        {
            "bootstrap.servers": f"{HOST}:{port}",
            "socket.connection.setup.timeout.ms": int(TIMEOUT_S * 1000),
            "log_level": 0,  # refused connections while it starts are expected, not news
        }
    )
    try:
        meta = admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise ConnectionError(f"Kafka on {HOST}:{port}: {exc}") from exc
    advertised = sorted((str(b.host), int(b.port)) for b in meta.brokers.values())
    if (HOST, port) not in advertised:
        raise ServiceError(f"broker advertises {advertised}, expected {(HOST, port)}")
    return f"cluster {meta.cluster_id}", None
