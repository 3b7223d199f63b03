"""The client side of the streaming tests, benchmarks and demo: topics, producing, reading verdicts.

Verdicts are read by :func:`collect` (until every wanted id was seen; for tests) or
:class:`VerdictSink` (first arrival time per key; for measurements).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code

from neardup.stream.worker.config import Settings
from neardup.stream.worker.messages import split_verdict_key

__all__ = [
    "CODECS",
    "LIBRDKAFKA_LOG",
    "Item",
    "Topics",
    "VerdictSink",
    "collect",
    "create_topics",
    "delete_topics",
    "make_topics",
    "produce",
    "produce_corrupt_batch",
    "produce_librdkafka",
    "produce_with_headers",
    "read_librdkafka",
    "read_records",
]

Item = tuple[bytes | None, bytes | None, int | None]  # key, value (None: tombstone), partition
LIBRDKAFKA_LOG = logging.getLogger("harness.librdkafka")
LEADER_WAIT_S = 10.0


@dataclass(frozen=True)
class Topics:
    """The three topics one set of workers uses, and where the broker is."""

    bootstrap: str
    input: str
    verdicts: str
    dlq: str

    @classmethod
    def named(cls, bootstrap: str, prefix: str = "", tag: str | None = None) -> Topics:
        """``{prefix}articles`` etc. (the worker's default names after ``prefix``), with
        ``-{tag}`` appended when given: tests pass a random tag so runs never share a topic."""
        fields = Settings.model_fields
        suffix = f"-{tag}" if tag else ""
        names = (fields[f].default for f in ("input_topic", "verdict_topic", "dlq_topic"))
        inp, out, dlq = (f"{prefix}{n}{suffix}" for n in names)
        return cls(bootstrap, inp, out, dlq)

    @property
    def all(self) -> tuple[str, str, str]:
        return (self.input, self.verdicts, self.dlq)


async def create_topics(
    bootstrap: str, names: Iterable[str], partitions: int, *, exist_ok: bool = False
) -> None:
    """Create ``names`` and wait until every partition has a leader (a producer racing the
    metadata gets ``UnknownTopicOrPartition``); ``exist_ok`` takes an existing topic as is."""
    wanted = list(names)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="neardup-harness")
    await admin.start()
    try:
        new = [NewTopic(name, num_partitions=partitions, replication_factor=1) for name in wanted]
        response = await admin.create_topics(new)
        existing = set()
        for topic, code, *_ in response.topic_errors:
            error = for_code(code)
            if code and exist_ok and error is TopicAlreadyExistsError:
                existing.add(topic)
            elif code:
                raise error(f"create topic {topic}")
        for name in wanted:
            await _wait_for_leaders(admin, name, None if name in existing else partitions)
    finally:
        await admin.close()


async def _wait_for_leaders(admin: AIOKafkaAdminClient, topic: str, partitions: int | None) -> None:
    """Until metadata shows the topic's partitions (``partitions`` of them, unless None), each
    with a leader; a topic of another size times out (it would mislabel a result)."""
    deadline = time.monotonic() + LEADER_WAIT_S
    while True:
        (described,) = await admin.describe_topics([topic])
        parts = described["partitions"]
        ok = described["error_code"] == 0 and bool(parts)
        ok = ok and (partitions is None or len(parts) == partitions)
        if ok and all(p["leader"] >= 0 for p in parts):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic}, {partitions} partitions wanted: {described}")
        await asyncio.sleep(0.05)


async def delete_topics(bootstrap: str, names: Sequence[str]) -> None:
    """Delete ``names``; best effort (a broker that is gone has nothing left to delete)."""
    if not names:
        return
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="neardup-harness")
    with contextlib.suppress(KafkaError, OSError):
        await admin.start()
        try:
            await admin.delete_topics(list(names))
        finally:
            await admin.close()


async def make_topics(bootstrap: str, partitions: int = 4) -> Topics:
    """Fresh input, verdict and dead-letter topics with a random tag, created and led."""
    topics = Topics.named(bootstrap, tag=uuid.uuid4().hex[:8])
    await create_topics(bootstrap, topics.all, partitions)
    return topics


async def produce(bootstrap: str, topic: str, items: Iterable[Item]) -> None:
    """Send every ``(key, value, partition)`` and wait until the broker has them all."""
    await _send_all(bootstrap, topic, ({"key": k, "value": v, "partition": p} for k, v, p in items))


Headers = Sequence[tuple[str, bytes]]
CODECS = ("gzip", "snappy", "lz4", "zstd")


async def produce_with_headers(
    bootstrap: str, topic: str, items: Iterable[tuple[bytes | None, bytes | None, Headers]]
) -> None:
    """Send every ``(key, value, headers)`` (tombstones naming a namespace, ...) and flush."""
    await _send_all(
        bootstrap, topic, ({"key": k, "value": v, "headers": list(h)} for k, v, h in items)
    )


async def _send_all(bootstrap: str, topic: str, sends: Iterable[dict[str, Any]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=4_000_000)
    await producer.start()
    try:
        for kwargs in sends:
            await producer.send(topic, **kwargs)
        await producer.flush()
    finally:
        await producer.stop()


def produce_librdkafka(
    bootstrap: str,
    topic: str,
    items: Sequence[Item],
    compression: str,
    timeout_s: float = 30,
    idempotent: bool = False,
) -> None:
    """Send ``items`` with librdkafka, the producer most clients in the wild use, compressed with
    ``compression`` and batched by ``linger.ms``; blocking, raises unless every message is
    acknowledged. ``idempotent`` needs Apache Kafka."""
    from confluent_kafka import KafkaError as RdKafkaError
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": compression,
            "linger.ms": 50,
            "enable.idempotence": idempotent,  # Tansu has no idempotent producer
            "acks": "all",
            "logger": LIBRDKAFKA_LOG,  # not straight to stderr: a broker restart is noisy
        }
    )
    failures: list[RdKafkaError] = []

    def delivered(error: RdKafkaError | None, _msg: Any) -> None:
        if error is not None:
            failures.append(error)

    for key, value, partition in items:
        where: dict[str, Any] = {} if partition is None else {"partition": partition}
        producer.produce(topic, key=key, value=value, on_delivery=delivered, **where)
        producer.poll(0)
    left = producer.flush(timeout_s)
    if left or failures:
        raise RuntimeError(f"librdkafka ({compression}): {left} undelivered, errors {failures}")


def read_librdkafka(
    bootstrap: str,
    topic: str,
    done: Callable[[list[tuple[bytes | None, bytes | None]]], bool],
    timeout_s: float = 60,
    isolation: Literal["read_committed", "read_uncommitted"] = "read_committed",
) -> list[tuple[bytes | None, bytes | None]]:
    """Every ``(key, value)`` of ``topic`` a librdkafka consumer in a throwaway group reads with
    ``isolation``, until ``done(records)`` or ``timeout_s``. Blocking."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rdkafka-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    got: list[tuple[bytes | None, bytes | None]] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while not done(got) and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=500, timeout=0.5):
                if msg.error() is None:
                    got.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    return got


def committed_offsets(
    bootstrap: str, group: str, topic: str, partitions: int, timeout_s: float = 30
) -> dict[int, int]:
    """``group``'s committed offsets on ``topic`` (partition -> offset), read by librdkafka:
    aiokafka ignores OffsetFetch's group-level error, so a coordinator still loading reads as
    "nothing committed". NOT_COORDINATOR after a restart is asked again until ``timeout_s``."""
    from confluent_kafka import Consumer, KafkaError, KafkaException
    from confluent_kafka import TopicPartition as RdTopicPartition

    not_yet = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE}
    deadline = time.monotonic() + timeout_s
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        asked = [RdTopicPartition(topic, p) for p in range(partitions)]
        while True:
            try:
                got = consumer.committed(asked, timeout=max(1.0, deadline - time.monotonic()))
                break
            except KafkaException as exc:
                if exc.args[0].code() not in not_yet or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()
    if failed := [tp for tp in got if tp.error is not None]:
        raise KafkaException(failed[0].error)
    return {tp.partition: tp.offset for tp in got if tp.offset >= 0}


def end_offsets_total(bootstrap: str, topic: str, partitions: int) -> int:
    """``topic``'s end offsets added up: one per record written, plus one per transaction marker
    (Kafka writes a commit or abort marker into every partition a transaction wrote). Blocking."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as RdTopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wm-{uuid.uuid4().hex}"})
    try:
        return sum(
            consumer.get_watermark_offsets(RdTopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        )
    finally:
        consumer.close()


async def produce_corrupt_batch(bootstrap: str, topic: str, partition: int, n: int = 3) -> None:
    """Write one batch of ``n`` records flagged lz4 but not compressed, with a valid CRC, as a raw
    ProduceRequest (no client builds one): Apache Kafka refuses it; Tansu stores it as sent."""
    from aiokafka.client import AIOKafkaClient
    from aiokafka.protocol.produce import ProduceRequest
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    from aiokafka.record.util import calc_crc32c

    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i in range(n):
        builder.append(i, None, f"corrupt-{i}".encode(), b"not lz4 at all", [])
    batch = bytearray(builder.build())
    attributes = struct.unpack_from(">h", batch, 21)[0] | 3  # the lz4 codec bits
    struct.pack_into(">h", batch, 21, attributes)
    struct.pack_into(">I", batch, 17, calc_crc32c(bytes(batch[21:])))  # CRC covers attributes on
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        await client.force_metadata_update()
        leader = client.cluster.leader_for_partition(TopicPartition(topic, partition))
        request = ProduceRequest(None, -1, 10_000, [(topic, [(partition, bytes(batch))])])
        response = await client.send(leader, request)
        ((_, parts),) = response.topics
        ((_, code, *_),) = parts
        if code:
            raise for_code(code)(f"the broker refused the corrupt batch on {topic}")
    finally:
        await client.close()


async def read_records(
    bootstrap: str,
    topic: str,
    done: Callable[[list[ConsumerRecord[bytes, bytes]]], bool],
    timeout_s: float = 60,
) -> list[ConsumerRecord[bytes, bytes]]:
    """Every record of ``topic`` from the start, raw (tombstones have value None), until
    ``done(records)`` or ``timeout_s``; callers assert on what arrived."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"read-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    got: list[ConsumerRecord[bytes, bytes]] = []
    try:
        deadline = time.monotonic() + timeout_s
        while not done(got) and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for msgs in batch.values():
                got += msgs
    finally:
        await consumer.stop()
    return got


KeyOf = Callable[[ConsumerRecord[bytes, bytes], dict[str, Any]], str]


async def collect(
    bootstrap: str, topic: str, want: set[str], timeout_s: float = 90, key_of: KeyOf | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Read ``topic`` from the start until every id in ``want`` was seen (repeats kept). Ids are
    the value's ``id`` unless ``key_of(record, value)`` says otherwise; tombstones are skipped
    unless ``key_of`` is given (it sees ``{}``)."""
    got: dict[str, list[dict[str, Any]]] = defaultdict(list)
    seen = 0

    def done(records: list[ConsumerRecord[bytes, bytes]]) -> bool:
        nonlocal seen
        for m in records[seen:]:
            if m.value is None and key_of is None:
                continue  # a tombstone (a deleted article) has no id to count
            value = json.loads(m.value or b"{}")
            got[key_of(m, value) if key_of else value["id"]].append(value)
        seen = len(records)
        return want <= got.keys()

    await read_records(bootstrap, topic, done, timeout_s)
    return got


class VerdictSink:
    """Reads the verdict and dead-letter topics from the beginning (no group), keeping each
    ``PHASE-NNNNNN`` key's first arrival time. ``fetch_max_wait_ms`` matters on Tansu, which holds
    an empty Fetch that long even when records arrive meanwhile."""

    def __init__(
        self,
        topics: Topics,
        partitions: int,
        *,
        fetch_max_wait_ms: int = 10,
        fetch_min_bytes: int = 1,
    ) -> None:
        self.topics = topics
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=topics.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=fetch_max_wait_ms,
            fetch_min_bytes=fetch_min_bytes,
            max_partition_fetch_bytes=8 * 1024 * 1024,
        )
        self.partitions = partitions
        self.recv_ns: dict[str, int] = {}
        self.created_ms: dict[str, int] = {}
        self.counts: Counter[str] = Counter()
        self.kinds: Counter[tuple[str, str]] = Counter()
        self.dead: Counter[str] = Counter()
        self.repeats: Counter[str] = Counter()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.consumer.start()
        topics = (self.topics.verdicts, self.topics.dlq)
        self.consumer.assign([TopicPartition(t, p) for t in topics for p in range(self.partitions)])
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.consumer.stop()

    def check(self) -> None:
        """Raise the reader's error if it died (else a wait would only time out)."""
        if self._task is not None and self._task.done():
            self._task.result()

    async def _run(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=200, max_records=20_000)
            now = time.time_ns()
            for tp, messages in batch.items():
                for m in messages:
                    key = split_verdict_key(m.key or b"")[1]  # the article id
                    phase = key.split("-", 1)[0]
                    if tp.topic == self.topics.dlq:
                        self.dead[phase] += 1
                    elif key in self.recv_ns:
                        self.repeats[phase] += 1
                    else:
                        self.recv_ns[key] = now
                        self.created_ms[key] = m.timestamp
                        self.counts[phase] += 1
                        self.kinds[(phase, orjson.loads(m.value or b"{}")["verdict"])] += 1

    async def wait(self, phase: str, n: int, timeout_s: float = 120.0) -> bool:
        """True once ``n`` verdicts (or dead letters) of ``phase`` arrived; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self.counts[phase] + self.dead[phase] < n:
            self.check()
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True
