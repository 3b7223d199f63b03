"""``neardup worker`` on Apache Kafka (KRaft), the production broker, with clients that are not
ours: librdkafka producers in every codec, a librdkafka consumer of the verdicts, and a broker
SIGKILLed mid-stream whose durable log keeps the committed offsets.

The worker tests of test_worker.py also run here through its ``broker`` parameter.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import services
from harness.corpus import groups_of_copies
from harness.kafka import (
    CODECS,
    Topics,
    collect,
    committed_offsets,
    make_topics,
    produce,
    produce_librdkafka,
    produce_with_headers,
    read_librdkafka,
)
from harness.workers import WorkerProc, start_worker
from neardup.stream.worker.messages import split_verdict_key

Pairs = list[tuple[bytes | None, bytes | None]]
FAST = {"NEARDUP_RETRY_BACKOFF_MAX_S": "1"}


@pytest.fixture(scope="module")
def worker(
    redis_url: str, kafka_broker: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Topics, WorkerProc]]:
    tmp = tmp_path_factory.mktemp("on-kafka")
    topics = asyncio.run(make_topics(kafka_broker, partitions=2))
    w = start_worker(topics, redis_url, tmp, f"on-kafka-{uuid.uuid4().hex[:6]}")
    try:
        w.wait_ready()
        yield topics, w
    finally:
        w.stop()


def article(doc_id: str, ns: str, n: int) -> bytes:
    text = f"report {n // 2} from the port: the ferry timetable changes next week, {ns}"
    return json.dumps({"id": doc_id, "namespace": ns, "text": text * 3}).encode()


def by_key(pairs: Pairs) -> dict[str, list[bytes | None]]:
    """Records by article id (another namespace than the worker's keys them "ns\x1fid")."""
    out: dict[str, list[bytes | None]] = {}
    for key, value in pairs:
        out.setdefault(split_verdict_key(key or b"")[1], []).append(value)
    return out


@pytest.mark.parametrize("codec", CODECS)
async def test_librdkafka_in_every_codec_in_and_a_librdkafka_consumer_out(
    worker: tuple[Topics, WorkerProc], codec: str
) -> None:
    """An idempotent librdkafka producer (its default against Kafka) writes compressed batches;
    a librdkafka consumer reads one verdict per article: pairs ``2k``/``2k+1`` are copies."""
    topics, w = worker
    ns = f"rd-{codec}-{uuid.uuid4().hex[:6]}"
    ids = [f"{ns}-{i}" for i in range(20)]
    items = [(i.encode(), article(i, ns, n), 0) for n, i in enumerate(ids)]
    await asyncio.to_thread(
        produce_librdkafka, topics.bootstrap, topics.input, items, codec, 30, True
    )
    pairs = await asyncio.to_thread(
        read_librdkafka,
        topics.bootstrap,
        topics.verdicts,
        lambda got: set(ids) <= by_key(got).keys(),
    )
    got = by_key(pairs)
    assert set(ids) <= got.keys()
    verdicts = {i: json.loads(got[i][-1] or b"{}") for i in ids}
    for n in range(0, len(ids), 2):
        first, copy = verdicts[ids[n]], verdicts[ids[n + 1]]
        assert first["verdict"] == "original", first
        assert copy["verdict"] != "original" and copy["duplicate_of"] == ids[n], copy
    w.check_alive()


async def test_a_tombstone_is_answered_by_a_verdict_tombstone_a_librdkafka_consumer_sees(
    worker: tuple[Topics, WorkerProc],
) -> None:
    topics, w = worker
    ns = f"rd-tomb-{uuid.uuid4().hex[:6]}"
    doc = f"{ns}-a"
    await produce(topics.bootstrap, topics.input, [(doc.encode(), article(doc, ns, 0), 1)])
    await produce_with_headers(
        topics.bootstrap, topics.input, [(doc.encode(), None, [("namespace", ns.encode())])]
    )
    pairs = await asyncio.to_thread(
        read_librdkafka,
        topics.bootstrap,
        topics.verdicts,
        lambda got: None in by_key(got).get(doc, []),
    )
    values = by_key(pairs)[doc]
    assert json.loads(values[0] or b"{}")["verdict"] == "original"
    assert values[-1] is None
    w.check_alive()


async def wait_committed(bootstrap: str, group: str, topic: str, want: dict[int, int]) -> None:
    """Until the group's committed offsets on ``topic`` reach ``want`` (partition -> offset)."""
    for _ in range(300):
        got = await asyncio.to_thread(committed_offsets, bootstrap, group, topic, len(want))
        if all(got.get(p, -1) >= o for p, o in want.items()):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"group {group} never committed {want} on {topic}: {got}")


def docs(ns: str, n_groups: int, size: int, seed: int) -> list[list[dict[str, str]]]:
    return [
        [{**a, "namespace": ns} for a in group] for group in groups_of_copies(n_groups, size, seed)
    ]


def items_of(arts: list[dict[str, str]], partitions: int) -> list[tuple[bytes, bytes, int]]:
    """Keyed by id; group ``g{G}`` on partition ``G % partitions``, so a group stays in order."""
    return [
        (a["id"].encode(), json.dumps(a).encode(), int(a["id"][1:].split("-")[0]) % partitions)
        for a in arts
    ]


async def test_broker_killed_mid_stream_keeps_committed_offsets_and_every_verdict(
    make_kafka: Callable[[], services.Service], redis_url: str, tmp_path: Path
) -> None:
    """Phase 1 is decided and committed; phase 2 is produced and the broker SIGKILLed at once,
    mid-batch; restarted on the same log directory; phase 3 follows.

    Guaranteed and checked: the committed offsets survive (read back from the restarted broker),
    so phase 1 is not replayed (one verdict each); every article of phases 2 and 3 gets a
    verdict; an article decided twice (a batch in flight at the crash is replayed:
    at-least-once) is decided the same way both times; every group has one original. A worker
    whose batch could not be published exits uncommitted by design; it is started again as a
    supervisor would, and the count of such restarts is not asserted.
    """
    broker = make_kafka()
    partitions = 4
    topics = await make_topics(broker.bootstrap, partitions)
    ns = f"kafka-restart-{uuid.uuid4().hex[:6]}"
    groups = docs(ns, 24, 3, seed=31)
    phase1 = [g[0] for g in groups[:12]]
    phase2 = [a for g in groups[:12] for a in g[1:]] + [g[0] for g in groups[12:]]
    phase3 = [a for g in groups[12:] for a in g[1:]]
    group = f"g-{ns}"
    workers = [start_worker(topics, redis_url, tmp_path, group, **FAST)]
    try:
        await asyncio.to_thread(workers[0].wait_ready)
        p1 = items_of(phase1, partitions)
        await produce(topics.bootstrap, topics.input, p1)
        got1 = await collect(topics.bootstrap, topics.verdicts, {a["id"] for a in phase1}, 60)
        assert {a["id"] for a in phase1} <= got1.keys()
        want = {p: sum(1 for *_, q in p1 if q == p) for p in range(partitions)}
        await wait_committed(topics.bootstrap, group, topics.input, want)

        await produce(topics.bootstrap, topics.input, items_of(phase2, partitions))
        await asyncio.to_thread(broker.stop, kill=True)
        await asyncio.sleep(1)
        await asyncio.to_thread(broker.start)
        kept = await asyncio.to_thread(
            committed_offsets, broker.bootstrap, group, topics.input, partitions
        )
        assert all(kept.get(p, -1) >= o for p, o in want.items()), (kept, want)

        if workers[-1].proc.poll() is not None:  # exited uncommitted: a supervisor restarts it
            workers.append(start_worker(topics, redis_url, tmp_path, group, **FAST))
            await asyncio.to_thread(workers[-1].wait_ready)
        await produce(topics.bootstrap, topics.input, items_of(phase3, partitions))
        every = {a["id"] for g in groups for a in g}
        got = await collect(topics.bootstrap, topics.verdicts, every, 90)
        assert every <= got.keys(), sorted(every - got.keys())
    finally:
        for w in workers:
            w.stop()
    assert_same_decisions(got)
    assert all(len(got[a["id"]]) == 1 for a in phase1), "phase 1 was replayed"
    for g in groups:
        originals = [a["id"] for a in g if got[a["id"]][0]["verdict"] == "original"]
        assert len(originals) == 1, [(a["id"], got[a["id"]][0]) for a in g]


def assert_same_decisions(got: dict[str, list[dict[str, Any]]]) -> None:
    fields = ("verdict", "duplicate_of", "cluster")
    for ident, verdicts in got.items():
        decided = {tuple(v[f] for f in fields) for v in verdicts}
        assert len(decided) == 1, (ident, verdicts)


async def _limit_record_bytes(bootstrap: str, topic: str, limit: int) -> None:
    """Set the topic's ``max.message.bytes``: the broker refuses larger record batches."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        resource = ConfigResource(
            ConfigResourceType.TOPIC, topic, {"max.message.bytes": str(limit)}
        )
        await admin.alter_configs([resource])
    finally:
        await admin.close()


async def test_verdicts_the_broker_refuses_become_dead_letters_and_the_worker_goes_on(
    redis_url: str, kafka_broker: str, tmp_path: Path
) -> None:
    """A verdict topic whose broker-side limit is below a verdict's size: each refused verdict
    is replaced by a small ``oversize_record`` dead letter naming it, the worker keeps running
    and commits (its producer is faust's, called directly; the refusal comes from the broker)."""
    topics = await make_topics(kafka_broker, partitions=1)
    await _limit_record_bytes(kafka_broker, topics.verdicts, 120)
    group = f"refused-{uuid.uuid4().hex[:6]}"
    w = start_worker(topics, redis_url, tmp_path, group, **FAST)
    try:
        await asyncio.to_thread(w.wait_ready)
        ns = f"big-{uuid.uuid4().hex[:6]}"
        ids = [f"{ns}-{i}" for i in range(4)]
        await produce(
            kafka_broker,
            topics.input,
            [(i.encode(), article(i, ns, n), 0) for n, i in enumerate(ids)],
        )
        letters = await collect(
            kafka_broker,
            topics.dlq,
            set(ids),
            # the refused record's key: the verdict key, "ns\x1fid" for this namespace
            key_of=lambda _r, v: split_verdict_key(str(v.get("key", "")).encode())[1],
        )
        assert set(ids) <= letters.keys(), letters
        for i in ids:
            (letter,) = letters[i][:1]
            assert letter["reason"] == "oversize_record"
            assert letter["source"] == {"topic": topics.verdicts}
            assert letter["value_bytes"] > 120
        await wait_committed(kafka_broker, group, topics.input, {0: len(ids)})
        w.check_alive()
    finally:
        w.stop()
