"""docker-compose.yml run in the parts that need no container engine, against real servers.

Its ``topics`` service, run against Apache Kafka: its script as compose hands it to bash, with
the broker's own command-line tools, and the topics it leaves read back from the broker. The
tools are those of the broker's distribution: ``kafka-topics.sh`` and ``kafka-configs.sh`` run
``org.apache.kafka.tools.TopicCommand`` and ``kafka.admin.ConfigCommand`` on the jars of
``make kafka`` (deploy/kafka/pom.xml); only their directory (``/opt/kafka/bin`` in the image) and
the broker's address (``kafka:19092`` in the compose network) are replaced. What the broker must
hold is what ``neardup worker`` would have created for the workers' own settings
(:func:`neardup.stream.worker.clients.topic_layout`), the verdict topic compacted.

Its Redis, started with the service's own command (on a loopback port and a temporary
directory): it refuses a client without the password, and the workers' settings log in.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from harness import compose, services
from neardup.stream.worker.clients import redis_client, topic_layout
from neardup.stream.worker.config import Settings

# what the distribution's bin/ scripts run (kafka-run-class.sh CLASS "$@")
TOOLS = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-configs.sh": "kafka.admin.ConfigCommand",
}
IN_IMAGE = "/opt/kafka/bin/"
INTERNAL_BOOTSTRAP = "kafka:19092"


def tools_dir(where: Path) -> Path:
    """The distribution's scripts, as small shims on the test broker's jars."""
    java, libs = services.find_java(), services.find_kafka_libs()
    if not any(libs.glob("kafka-tools-[0-9]*.jar")):
        pytest.fail(f"no kafka-tools jar in {libs}: run `make kafka` (deploy/kafka/pom.xml)", False)
    where.mkdir()
    for name, main in TOOLS.items():
        script = where / name
        script.write_text(f'#!/bin/sh\nexec "{java}" -Xmx128m -cp "{libs}/*" {main} "$@"\n')
        script.chmod(0o755)
    return where


def run_topics_service(
    config: dict[str, Any], bootstrap: str, tools: Path
) -> subprocess.CompletedProcess[str]:
    svc = config["services"]["topics"]
    assert svc["image"] == config["services"]["kafka"]["image"], "the broker's own tools"
    script = compose.shell_script(svc)
    assert IN_IMAGE in script and INTERNAL_BOOTSTRAP in script, script
    local = script.replace(IN_IMAGE, f"{tools}/").replace(INTERNAL_BOOTSTRAP, bootstrap)
    return subprocess.run(
        [*svc["entrypoint"], local], capture_output=True, text=True, check=False, timeout=300
    )


def worker_settings(
    config: dict[str, Any], monkeypatch: pytest.MonkeyPatch, **changed: str
) -> Settings:
    """What a compose worker runs with (its environment, as the worker reads it), with the
    addresses of the test's servers in ``changed``."""
    for name in list(os.environ):
        if name.startswith("NEARDUP_"):
            monkeypatch.delenv(name)
    for name, value in config["services"]["worker-1"]["environment"].items():
        monkeypatch.setenv(name, str(value))
    for name, value in changed.items():
        monkeypatch.setenv(name, value)
    return Settings()


async def described(
    bootstrap: str, topics: list[str]
) -> dict[str, tuple[int, int, dict[str, str]]]:
    """Per topic: partitions, replicas of partition 0, and every config the broker reports."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        meta = await admin.describe_topics(topics)
        resources = [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        answers = await admin.describe_configs(resources)
    finally:
        await admin.close()
    configs: dict[str, dict[str, str]] = {}
    for answer in answers:
        for _code, _msg, _kind, name, entries in answer.resources:
            configs[name] = {e[0]: e[1] for e in entries}
    out = {}
    for t in meta:
        assert t["error_code"] == 0, t
        (first,) = [p for p in t["partitions"] if p["partition"] == 0]
        out[t["topic"]] = (len(t["partitions"]), len(first["replicas"]), configs[t["topic"]])
    return out


async def alter(bootstrap: str, topic: str, values: dict[str, str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, values)])
    finally:
        await admin.close()


async def test_the_topics_service_lays_out_topics_as_the_worker_would(
    make_kafka: Callable[..., services.Service], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = compose.config()
    broker = make_kafka()
    tools = tools_dir(tmp_path / "bin")
    settings = worker_settings(config, monkeypatch, NEARDUP_KAFKA_BOOTSTRAP=broker.bootstrap)
    names = [settings.input_topic, settings.verdict_topic, settings.dlq_topic]
    assert settings.topic_partitions == 8  # NEARDUP_PARTITIONS's default
    replication, layout = topic_layout(settings, brokers=1)  # compose runs one broker
    assert layout[settings.verdict_topic]["cleanup.policy"] == "compact"

    async def assert_laid_out() -> None:
        got = await described(broker.bootstrap, names)
        assert set(got) == set(names)
        for topic, (count, replicas, configs) in got.items():
            assert (count, replicas) == (settings.topic_partitions, replication), topic
            wanted = {"cleanup.policy": "delete", **layout[topic]}
            assert {k: configs[k] for k in wanted} == wanted, topic

    done = run_topics_service(config, broker.bootstrap, tools)
    assert done.returncode == 0, done.stdout + done.stderr
    await assert_laid_out()
    # compose runs the service at every `up`: again on existing topics, nothing changes
    again = run_topics_service(config, broker.bootstrap, tools)
    assert again.returncode == 0, again.stdout + again.stderr
    await assert_laid_out()
    # a verdict topic an earlier docker-compose.yml created plainly is compacted too
    verdicts = settings.verdict_topic
    await alter(broker.bootstrap, verdicts, {"cleanup.policy": "delete"})
    (_, _, plain) = (await described(broker.bootstrap, [verdicts]))[verdicts]
    assert plain["cleanup.policy"] == "delete"
    upgraded = run_topics_service(config, broker.bootstrap, tools)
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    await assert_laid_out()


async def ping(settings: Settings) -> bool:
    """PING with the worker's own Redis client."""
    client = redis_client(settings)
    try:
        return bool(await client.ping())
    finally:
        await client.aclose()


def test_compose_redis_refuses_strangers_and_lets_the_workers_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = compose.config()
    svc = config["services"]["redis"]
    command = [str(x) for x in svc["command"]]
    assert command[0] == "redis-server"
    port = services.free_port()
    local = ["--port", str(port), "--bind", services.HOST, "--dir", str(tmp_path)]
    server = subprocess.Popen(
        [str(services.find_redis_binary()), *command[1:], *local],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stranger = redis.Redis(host=services.HOST, port=port, socket_timeout=2)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                stranger.ping()
            except redis.ConnectionError as exc:  # not up yet, unless it is the refusal
                if isinstance(exc, redis.AuthenticationError):
                    break
                assert time.monotonic() < deadline, exc
                time.sleep(0.1)
                continue
            pytest.fail("compose's Redis answered a client without the password", False)
        # the service's healthcheck (redis-cli ping) logs in with the service's environment
        check = [str(x) for x in svc["healthcheck"]["test"] if x != "CMD"]
        env = {**os.environ, **{k: str(v) for k, v in svc["environment"].items()}}
        done = subprocess.run(
            [check[0], "-p", str(port), *check[1:]],
            env=env,
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert (done.returncode, done.stdout.strip()) == (0, "PONG"), done.stderr
        url = f"redis://{services.HOST}:{port}/0"
        assert config["services"]["worker-1"]["environment"]["NEARDUP_REDIS_URL"].startswith(
            "redis://redis:6379/"
        )
        settings = worker_settings(config, monkeypatch, NEARDUP_REDIS_URL=url)
        assert settings.redis_password is not None
        assert asyncio.run(ping(settings))
    finally:
        stranger.close()
        server.terminate()
        server.wait(timeout=10)
