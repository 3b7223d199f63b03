"""Integration fixtures: a real Redis, Tansu and Apache Kafka on 127.0.0.1.

If ``NEARDUP_TEST_REDIS_URL`` / ``NEARDUP_TEST_KAFKA_BOOTSTRAP`` are set (servers started once
with ``python -m harness.services start``), the session uses them; otherwise it starts its own in
a temporary directory and stops them when the session ends, pass or fail.

Fixtures:

- ``redis_url``, ``kafka_bootstrap`` (session): where the shared servers are (the broker is
  Tansu). ``kafka_broker`` (session): a shared Apache Kafka (jars from ``make kafka``); it fails,
  naming what is missing, where Java or the jars are absent.
- ``broker`` (module, parametrised ``tansu``/``kafka``) and ``broker_bootstrap``: for modules that
  run the same tests on both brokers.
- ``redis_client`` (function): ``redis.asyncio.Redis`` on ``redis_url``, bytes responses; the
  database and all Redis functions are flushed before the test, the client is closed after.
- ``make_topic`` (function): ``await make_topic(partitions=4)`` creates a uniquely named topic
  on the shared broker and returns its name; topics are deleted after the test.
- ``redis_cluster`` (session): a real Redis Cluster on loopback (:mod:`harness.redis_cluster`).
- ``make_redis``, ``make_broker`` (function): private servers (``services.Service``) for tests
  that stop, kill or restart them; ``make_redis(aof=True)`` survives ``restart(kill=True)``.
  ``make_kafka`` likewise for Apache Kafka, whose log directory survives ``restart(kill=True)``.

Every test under tests/integration gets the ``integration`` marker.
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.asyncio import Redis, RedisCluster

from harness import services
from harness.kafka import create_topics, delete_topics
from harness.redis_cluster import RedisCluster6, start_cluster

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)


# --------------------------------------------------------------------------- shared servers


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("NEARDUP_TEST_REDIS_URL")
    if external:
        try:
            with redis.Redis.from_url(external, socket_timeout=5) as client:
                client.ping()
        except redis.RedisError as exc:
            pytest.fail(f"NEARDUP_TEST_REDIS_URL={external} does not answer: {exc}", False)
        yield external
        return
    service = services.start_redis(tmp_path_factory.mktemp("redis"))
    try:
        yield service.url
    finally:
        service.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("NEARDUP_TEST_KAFKA_BOOTSTRAP")
    if external:
        host, _, port = external.split(",")[0].rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError as exc:
            pytest.fail(f"NEARDUP_TEST_KAFKA_BOOTSTRAP={external} does not answer: {exc}", False)
        yield external
        return
    service = services.start_broker(tmp_path_factory.mktemp("kafka"))
    try:
        yield service.bootstrap
    finally:
        service.stop()


def _start_kafka(dir: Path) -> services.Service:
    """Apache Kafka, or a test failure that names what is missing (never a skip)."""
    try:
        return services.start_kafka(dir)
    except services.ServiceError as exc:
        pytest.fail(f"Apache Kafka did not start: {exc}", False)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    service = _start_kafka(tmp_path_factory.mktemp("apache-kafka"))
    try:
        yield service.bootstrap
    finally:
        service.stop()


BROKERS = ("tansu", "kafka")


@pytest.fixture(scope="module", params=BROKERS)
def broker(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def broker_bootstrap(broker: str, request: pytest.FixtureRequest) -> str:
    """The shared broker named by ``broker``, started on first use."""
    name = "kafka_bootstrap" if broker == "tansu" else "kafka_broker"
    return str(request.getfixturevalue(name))


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster6]:
    """A real Redis Cluster (three primaries, three replicas, ``cluster-node-timeout`` 2 s) for
    the session; tests that kill a node start it again (it rejoins as a replica)."""
    cluster = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


# --------------------------------------------------------------------------- clients


@pytest.fixture
async def cluster_client(redis_cluster: RedisCluster6) -> AsyncIterator[RedisCluster]:
    """A cluster client on the session's cluster, every primary flushed, closed after."""
    client = RedisCluster.from_url(redis_cluster.url)
    try:
        # a client learns the nodes on its first command: before that it knows no primary,
        # and the flush below would flush nothing
        await client.initialize()
        primaries = client.get_primaries()
        assert primaries, "the cluster client found no primary"
        for node in primaries:
            await client.execute_command("FLUSHALL", target_nodes=node)
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        await client.flushdb()
        await client.function_flush("SYNC")
        yield client
    finally:
        await client.aclose()


def _topic_base(node_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", node_name).strip("-")[:40] or "topic"


@pytest.fixture
async def make_topic(
    kafka_bootstrap: str, request: pytest.FixtureRequest
) -> AsyncIterator[Callable[..., Awaitable[str]]]:
    created: list[str] = []
    base = _topic_base(request.node.name)

    async def make(partitions: int = 4, *, prefix: str | None = None) -> str:
        name = f"{prefix or base}-{uuid.uuid4().hex[:10]}"
        await create_topics(kafka_bootstrap, [name], partitions)
        created.append(name)
        return name

    try:
        yield make
    finally:
        await delete_topics(kafka_bootstrap, created)


# --------------------------------------------------------------------------- private servers


def _private(
    start: Callable[..., services.Service], folder: Callable[[int], Path]
) -> Iterator[Callable[..., services.Service]]:
    """Servers a test starts, stops, kills or restarts itself (``make(**options)``, the options
    passed to ``start``); every one is stopped after the test."""
    started: list[services.Service] = []

    def make(**options: Any) -> services.Service:
        started.append(start(folder(len(started)), **options))
        return started[-1]

    try:
        yield make
    finally:
        for service in started:
            service.stop()


@pytest.fixture
def make_redis(tmp_path: Path) -> Iterator[Callable[..., services.Service]]:
    """``make_redis(aof=True)`` survives ``restart(kill=True)``."""
    yield from _private(services.start_redis, lambda n: tmp_path / f"redis-{n}")


@pytest.fixture
def make_broker(tmp_path: Path) -> Iterator[Callable[..., services.Service]]:
    yield from _private(services.start_broker, lambda n: tmp_path / f"kafka-{n}")


@pytest.fixture
def make_kafka(tmp_path: Path) -> Iterator[Callable[..., services.Service]]:
    yield from _private(_start_kafka, lambda n: tmp_path / f"apache-kafka-{n}")
