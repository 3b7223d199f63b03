"""faust's ``exactly_once`` processing guarantee (faust's own ``PROCESSING_GUARANTEE``
environment variable; neardup has no setting for it) on Apache Kafka does not make neardup's
verdicts exactly-once, and this module shows precisely why.

faust runs one transactional producer per input partition and commits the input offsets through
it (``send_offsets_to_transaction``). A record sent to another topic joins a transaction only if
faust's *consumer* has metadata for that topic (``TransactionManager.send`` asks
``consumer.key_partition``): the verdict and dead-letter topics are not consumed, so the lookup
gives no partition and faust sends the verdicts with its plain idempotent producer, outside any
transaction. A ``read_committed`` consumer therefore sees a verdict as soon as it is written,
whether or not its input offset is ever committed; a worker SIGKILLed before faust's next commit
is replayed and every verdict it had written appears twice. The same as at-least-once, with a
transaction per commit on top.

The test pins each step with no race: the first worker's commit timer is pushed past the test
(faust reads ``BROKER_COMMIT_INTERVAL`` from the environment), so nothing it does is committed.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from harness import services
from harness.corpus import groups_of_copies
from harness.kafka import (
    Item,
    committed_offsets,
    end_offsets_total,
    make_topics,
    produce,
    read_librdkafka,
)
from harness.workers import WorkerProc, start_worker
from neardup.stream.worker.messages import split_verdict_key

EXACTLY_ONCE = {"PROCESSING_GUARANTEE": "exactly_once", "NEARDUP_RETRY_BACKOFF_MAX_S": "1"}
NO_TIMER_COMMIT = {"BROKER_COMMIT_INTERVAL": "3600"}  # faust's own setting, read from the env
PARTITIONS = 4
Pairs = list[tuple[bytes | None, bytes | None]]


def articles(ns: str, n_groups: int, size: int) -> tuple[list[list[str]], list[Item]]:
    """Groups of near-copies (ids), and the input items: group ``G`` on partition ``G % 4``."""
    groups = groups_of_copies(n_groups, size, seed=47)
    items: list[Item] = [
        (a["id"].encode(), json.dumps({**a, "namespace": ns}).encode(), g % PARTITIONS)
        for g, group in enumerate(groups)
        for a in group
    ]
    return [[a["id"] for a in group] for group in groups], items


def internal_topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    names = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    return {t for t in names if t.startswith("__")}


def count_keys(pairs: Pairs) -> Counter[str]:
    """Verdicts by article id (another namespace than the worker's keys them "ns\x1fid")."""
    return Counter(split_verdict_key(k or b"")[1] for k, v in pairs if v is not None)


async def wait_committed(bootstrap: str, group: str, topic: str, total: int) -> dict[int, int]:
    """The group's committed offsets on ``topic`` once they add up to ``total`` (or after 60 s:
    the caller asserts on what they are)."""
    got: dict[int, int] = {}
    for _ in range(300):
        got = await asyncio.to_thread(committed_offsets, bootstrap, group, topic, PARTITIONS)
        if sum(got.values()) >= total:
            break
        await asyncio.sleep(0.2)
    return got


async def read_committed(bootstrap: str, topic: str, done: Callable[[Pairs], bool]) -> Pairs:
    return await asyncio.to_thread(read_librdkafka, bootstrap, topic, done, 90, "read_committed")


async def test_exactly_once_leaves_verdicts_outside_the_transaction_so_a_kill_duplicates_them(
    make_kafka: Callable[[], services.Service], redis_url: str, tmp_path: Path
) -> None:
    """The first worker (exactly_once: its transactional producers are registered; no commit
    yet) decides every article; a read_committed consumer sees all those verdicts although no
    transaction has committed, and the verdict topic holds no transaction marker. SIGKILLed, it
    is replaced (as a supervisor would) by a second worker, which replays from the uncommitted
    offsets, commits, and writes every verdict again: read_committed sees exactly two per
    article. The decisions themselves stay right (the index replays idempotently): both copies
    agree, one original per group, nothing lost."""
    broker = make_kafka()
    topics = await make_topics(broker.bootstrap, PARTITIONS)
    ns = f"eos-{uuid.uuid4().hex[:6]}"
    groups, items = articles(ns, 12, 3)
    ids = {i for g in groups for i in g}
    group = f"g-{ns}"
    workers: list[WorkerProc] = []
    try:
        workers.append(
            start_worker(topics, redis_url, tmp_path, group, **EXACTLY_ONCE, **NO_TIMER_COMMIT)
        )
        await asyncio.to_thread(workers[0].wait_ready)
        # The broker makes its transaction log at the first transactional producer: faust's.
        assert "__transaction_state" in await asyncio.to_thread(internal_topics, broker.bootstrap)
        await produce(topics.bootstrap, topics.input, items)
        first = await read_committed(
            topics.bootstrap, topics.verdicts, lambda p: ids <= count_keys(p).keys()
        )
        assert count_keys(first) == Counter(ids), "read_committed does not see every verdict once"
        uncommitted = await asyncio.to_thread(
            committed_offsets, topics.bootstrap, group, topics.input, PARTITIONS
        )
        assert uncommitted == {}, uncommitted
        written = await asyncio.to_thread(
            end_offsets_total, topics.bootstrap, topics.verdicts, PARTITIONS
        )
        assert written == len(ids), "the verdicts were written in transactions"

        workers[0].proc.kill()
        workers[0].proc.wait()
        workers.append(start_worker(topics, redis_url, tmp_path, group, **EXACTLY_ONCE))
        await asyncio.to_thread(workers[1].wait_ready, 90)
        replayed = await wait_committed(topics.bootstrap, group, topics.input, len(items))
        assert replayed == dict(Counter(p for *_, p in items)), replayed
        written = await asyncio.to_thread(
            end_offsets_total, topics.bootstrap, topics.verdicts, PARTITIONS
        )
        twice = await read_committed(topics.bootstrap, topics.verdicts, lambda p: len(p) >= written)
        workers[1].check_alive()
    finally:
        for w in workers:
            w.stop()
    assert written == 2 * len(ids), "the replay's verdicts were written in transactions"
    assert count_keys(twice) == Counter(2 * sorted(ids)), "read_committed: not two per article"
    decided: dict[str, set[tuple[str, str | None, str]]] = {}
    for _, value in twice:
        v = json.loads(value or b"{}")
        decided.setdefault(v["id"], set()).add((v["verdict"], v["duplicate_of"], v["cluster"]))
    assert all(len(d) == 1 for d in decided.values()), decided
    for g in groups:
        originals = [i for i in g if next(iter(decided[i]))[0] == "original"]
        assert len(originals) == 1, (g, [decided[i] for i in g])
