"""The topics a worker creates, on a real broker (Apache Kafka and Tansu): replicated as the
cluster allows, ``min.insync.replicas`` set, the verdict topic compacted."""

from __future__ import annotations

import uuid

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from harness.kafka import delete_topics
from neardup.stream.worker.clients import ensure_topics, topic_layout
from neardup.stream.worker.config import Settings


def test_the_layout_is_replicated_and_the_verdicts_compacted() -> None:
    s = Settings(input_topic="in", verdict_topic="out", dlq_topic="dlq")
    assert topic_layout(s, brokers=5)[0] == 3 and topic_layout(s, brokers=2)[0] == 2
    replication, configs = topic_layout(s, brokers=5)
    assert configs["out"] == {"cleanup.policy": "compact", "min.insync.replicas": "2"}
    assert configs["in"] == configs["dlq"] == {"min.insync.replicas": "2"}
    assert topic_layout(s, brokers=1) == (1, {
        "in": {"min.insync.replicas": "1"},
        "out": {"cleanup.policy": "compact", "min.insync.replicas": "1"},
        "dlq": {"min.insync.replicas": "1"},
    })  # fmt: skip
    chosen = Settings(topic_replication=4, topic_min_insync_replicas=3)
    replication, configs = topic_layout(chosen, brokers=9)
    assert replication == 4 and configs[chosen.verdict_topic]["min.insync.replicas"] == "3"


async def test_a_worker_creates_its_topics_with_their_configs(broker_bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    s = Settings(
        kafka_bootstrap=broker_bootstrap,
        input_topic=f"in-{tag}",
        verdict_topic=f"out-{tag}",
        dlq_topic=f"dlq-{tag}",
        topic_partitions=2,
    )
    await ensure_topics(s)
    admin = AIOKafkaAdminClient(bootstrap_servers=broker_bootstrap)
    await admin.start()
    try:
        assert {s.input_topic, s.verdict_topic, s.dlq_topic} <= set(await admin.list_topics())
        (described,) = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, s.verdict_topic)]
        )
        (resource,) = described.resources
        got = {entry[0]: entry[1] for entry in resource[4]}
        assert got.get("cleanup.policy") == "compact", got
    finally:
        await admin.close()
        await delete_topics(broker_bootstrap, [s.input_topic, s.verdict_topic, s.dlq_topic])
