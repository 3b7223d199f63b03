"""Smoke tests: the servers the fixtures start are real and do what the service relies on.

Redis functions (the atomic register+probe step), Kafka keyed produce and group consume with
commits, and a faust agent against Tansu both in-process and as a worker subprocess; and the
``python -m harness.services`` CLI, whose servers outlive it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import faust
import psutil
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from redis.asyncio import Redis

from harness import services
from harness.services import ServiceError, free_port, probe_redis

pytestmark = pytest.mark.timeout(60)

# Apache Kafka refuses session timeouts under group.min.session.timeout.ms (6 s by default);
# Tansu accepts anything but makes JoinGroup wait about half of it.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500

LUA_LIBRARY = """#!lua name=smoke
local function bump(keys, args)
  local seq = redis.call('INCR', keys[1])
  redis.call('HSET', keys[2], args[1], seq)
  return {seq, redis.call('HLEN', keys[2])}
end
redis.register_function('smoke_bump', bump)
redis.register_function{function_name='smoke_peek', callback=function(keys, args)
  return redis.call('HGET', keys[1], args[1])
end, flags={'no-writes'}}
"""


async def test_redis_function_load_and_fcall(redis_client: Redis) -> None:
    assert await redis_client.function_load(LUA_LIBRARY) == b"smoke"
    keys = ["{ns}:seq", "{ns}:ids"]
    assert await redis_client.fcall("smoke_bump", 2, *keys, "a") == [1, 1]
    assert await redis_client.fcall("smoke_bump", 2, *keys, "b") == [2, 2]
    assert await redis_client.fcall_ro("smoke_peek", 1, keys[1], "b") == b"2"
    (library,) = await redis_client.function_list("smoke")
    names = {f[1] for f in library[library.index(b"functions") + 1]}
    assert names == {b"smoke_bump", b"smoke_peek"}


async def test_private_redis_with_aof_survives_a_crash(make_redis: Callable[..., Any]) -> None:
    server = make_redis(aof=True)
    client = Redis.from_url(server.url)
    try:
        await client.function_load(LUA_LIBRARY)
        await client.fcall("smoke_bump", 2, "{ns}:seq", "{ns}:ids", "a")
        await client.aclose()  # the kill breaks its connections; reconnect below
        old_pid = server.pid
        server.restart(kill=True)
        assert server.pid != old_pid
        client = Redis.from_url(server.url)
        assert await client.fcall("smoke_bump", 2, "{ns}:seq", "{ns}:ids", "b") == [2, 2]
    finally:
        await client.aclose()


async def test_private_broker_restart_forgets_topics(make_broker: Callable[[], Any]) -> None:
    broker = make_broker()

    async def topics() -> set[str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            return set(await admin.list_topics())
        finally:
            await admin.close()

    await _produce(broker.bootstrap, "auto-created", [(b"k", b"v")])
    assert "auto-created" in await topics()
    broker.restart(kill=True)  # memory storage: a restarted Tansu is empty
    assert "auto-created" not in await topics()


def test_a_server_already_on_a_given_port_is_not_taken_for_ours(
    make_redis: Callable[..., Any], tmp_path: Path
) -> None:
    other = make_redis()
    with pytest.raises(ServiceError, match="already in use"):
        services.start_redis(tmp_path / "second", port=other.port)
    assert probe_redis(other.port)[1] == other.pid


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "harness.services", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_cli_start_detaches_its_servers_and_stop_ends_them(tmp_path: Path) -> None:
    """``start`` exits with Redis and Tansu still running (Apache Kafka left out: no jars
    given), ``status`` finds them answering from the recorded pids, ``stop`` ends them."""
    root = str(Path(services.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root, "NEARDUP_KAFKA_LIBS": str(tmp_path / "no-jars")}
    where = ["--dir", str(tmp_path / "services")]
    started = _cli("start", *where, env=env)
    assert started.returncode == 0, started.stderr
    assert "apache-kafka: not started" in started.stderr
    pids = [int((tmp_path / "services" / f"{n}.pid").read_text()) for n in ("redis", "kafka")]
    try:
        urls = dict(line.split("=", 1) for line in started.stdout.splitlines())
        assert set(urls) == {"NEARDUP_REDIS_URL", "NEARDUP_KAFKA_BOOTSTRAP"}
        redis_port = int(urls["NEARDUP_REDIS_URL"].rsplit(":", 1)[1].split("/")[0])
        assert probe_redis(redis_port)[1] == pids[0]
        again = _cli("start", *where, env=env)
        assert again.stdout == started.stdout and "already running" in again.stderr
        status = _cli("status", *where, env=env)
        assert status.returncode == 0 and status.stdout == started.stdout
        assert _cli("stop", *where, env=env).returncode == 0
        assert not any(map(_alive, pids))
        assert _cli("status", *where, env=env).returncode == 1
    finally:
        for pid in filter(_alive, pids):
            os.kill(pid, signal.SIGKILL)


def _keyed_messages(n: int) -> list[tuple[bytes, bytes]]:
    return [(f"key-{i % 37}".encode(), f"value-{i}".encode()) for i in range(n)]


async def _produce(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes]]) -> list[int]:
    """Send keyed messages; return the partition of each."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=k, value=v) for k, v in messages]
        return [m.partition for m in await asyncio.gather(*futures)]
    finally:
        await producer.stop()


async def _read_all(
    bootstrap: str, topic: str, partitions: int, count: int, timeout_s: float = 20
) -> list[ConsumerRecord[bytes, bytes]]:
    """Read ``count`` records from the start of every partition, without a consumer group."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    records: list[ConsumerRecord[bytes, bytes]] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        async with asyncio.timeout(timeout_s):
            while len(records) < count:
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    records.extend(batch)
    finally:
        await consumer.stop()
    return records


async def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int | None]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    await consumer.start()
    try:
        return [await consumer.committed(TopicPartition(topic, p)) for p in range(partitions)]
    finally:
        await consumer.stop()


def _per_partition(partitions_of_messages: list[int], partitions: int) -> list[int]:
    return [partitions_of_messages.count(p) for p in range(partitions)]


async def test_kafka_keyed_produce_and_group_consume_with_commits(
    kafka_bootstrap: str, make_topic: Callable[..., Awaitable[str]]
) -> None:
    topic = await make_topic(partitions=4)
    messages = _keyed_messages(100)
    sent_to = await _produce(kafka_bootstrap, topic, messages)
    assert set(sent_to) == {0, 1, 2, 3}
    key_partition = dict(zip((k for k, _ in messages), sent_to, strict=True))

    group = f"smoke-{uuid.uuid4().hex[:8]}"
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
    )
    await consumer.start()
    received: list[ConsumerRecord[bytes, bytes]] = []
    try:
        async with asyncio.timeout(30):
            while len(received) < len(messages):
                batches = await consumer.getmany(timeout_ms=500)
                for batch in batches.values():
                    received.extend(batch)
                if batches:
                    await consumer.commit()
    finally:
        await consumer.stop()

    assert sorted(r.value for r in received) == sorted(v for _, v in messages)
    assert all(key_partition[r.key] == r.partition for r in received)
    # Tansu's end_offsets() is wrong after multi-record batches: count, do not ask the broker.
    expected = _per_partition(sent_to, 4)
    assert await _committed(kafka_bootstrap, group, topic, 4) == expected


def _forwarding_app(
    app_id: str, bootstrap: str, datadir: Path, source: str, sink: str, **settings: object
) -> faust.App:
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        store="memory://",
        datadir=str(datadir),
        broker_session_timeout=10,
        broker_heartbeat_interval=1,
        **settings,
    )
    source_topic = app.topic(source, key_serializer="raw", value_serializer="raw")
    sink_topic = app.topic(sink, key_serializer="raw", value_serializer="raw")

    @app.agent(source_topic)
    async def forward(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            await sink_topic.send(key=event.key, value=event.value.upper())

    return app


async def test_faust_agent_in_process(
    kafka_bootstrap: str, make_topic: Callable[..., Awaitable[str]], tmp_path: Path
) -> None:
    source, sink = await make_topic(partitions=4), await make_topic(partitions=4)
    app_id = f"smoke-inproc-{uuid.uuid4().hex[:8]}"
    app = _forwarding_app(
        app_id, kafka_bootstrap, tmp_path / "faust", source, sink, web_enabled=False
    )
    # Returns once the group is joined and partitions are assigned (after table "recovery").
    await app.start()
    try:
        messages = _keyed_messages(50)
        sent_to = await _produce(kafka_bootstrap, source, messages)
        records = await _read_all(kafka_bootstrap, sink, 4, len(messages))
    finally:
        await app.stop()

    assert sorted(r.value for r in records) == sorted(v.upper() for _, v in messages)
    key_partition = dict(zip((k for k, _ in messages), sent_to, strict=True))
    assert all(key_partition[r.key] == r.partition for r in records)
    # faust commits what it processed when it stops.
    assert await _committed(kafka_bootstrap, app_id, source, 4) == _per_partition(sent_to, 4)


WORKER_MODULE = textwrap.dedent(
    """
    import os

    import faust

    app = faust.App(
        os.environ["SMOKE_APP_ID"],
        broker="kafka://" + os.environ["NEARDUP_KAFKA_BOOTSTRAP"],
        store="memory://",
        datadir=os.environ["SMOKE_DATADIR"],
        broker_session_timeout=10,
        broker_heartbeat_interval=1,
        web_enabled=True,
        web_bind="127.0.0.1",
        web_host="127.0.0.1",
        web_port=int(os.environ["SMOKE_WEB_PORT"]),
    )
    source = app.topic(os.environ["SMOKE_SOURCE"], key_serializer="raw", value_serializer="raw")
    sink = app.topic(os.environ["SMOKE_SINK"], key_serializer="raw", value_serializer="raw")


    @app.agent(source)
    async def forward(stream):
        async for event in stream.events():
            await sink.send(key=event.key, value=event.value.upper())


    @app.page("/health")
    async def health(web, request):
        return web.json({"ok": True})


    if __name__ == "__main__":
        # Not app.main(): the `worker` CLI command would override web_enabled/web_bind.
        faust.Worker(app, loglevel="INFO").execute_from_commandline()
    """
)


async def _wait_for_health(url: str, proc: asyncio.subprocess.Process, timeout_s: float) -> None:
    """faust starts its web server only after the first partition assignment: ready == up."""
    async with aiohttp.ClientSession() as session, asyncio.timeout(timeout_s):
        while proc.returncode is None:
            try:
                async with session.get(url, timeout=aiohttp.ClientTimeout(total=1)) as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
    raise AssertionError(f"worker exited with {proc.returncode} before it was ready")


async def test_faust_worker_subprocess(
    kafka_bootstrap: str, make_topic: Callable[..., Awaitable[str]], tmp_path: Path
) -> None:
    source, sink = await make_topic(partitions=4), await make_topic(partitions=4)
    (tmp_path / "smoke_worker.py").write_text(WORKER_MODULE)
    web_port = free_port()
    env = {
        **os.environ,
        "NEARDUP_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "SMOKE_APP_ID": f"smoke-worker-{uuid.uuid4().hex[:8]}",
        "SMOKE_DATADIR": str(tmp_path / "faust"),
        "SMOKE_WEB_PORT": str(web_port),
        "SMOKE_SOURCE": source,
        "SMOKE_SINK": sink,
    }
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "smoke_worker",
            cwd=tmp_path,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        await _wait_for_health(f"http://127.0.0.1:{web_port}/health", proc, timeout_s=30)
        messages = _keyed_messages(50)
        await _produce(kafka_bootstrap, source, messages)
        records = await _read_all(kafka_bootstrap, sink, 4, len(messages))
        assert sorted(r.value for r in records) == sorted(v.upper() for _, v in messages)

        proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            returncode = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    log_text = log_path.read_text(errors="replace")
    assert returncode == 0, log_text[-3000:]
    assert "[^Worker]: Ready" in log_text
    assert "Traceback" not in log_text, log_text[-3000:]
