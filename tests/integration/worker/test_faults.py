"""Fault injection against ``neardup worker`` processes on a real broker and a real Redis.

Every test runs on Apache Kafka (the production broker) and, all but one, on Tansu (``broker``).

Every test asserts the same three things: no lost article (every produced id gets a verdict), no
conflicting verdicts (all verdicts for one id are identical, however often it was replayed), and
recovery without a human (the same worker processes, or a plain replacement, carry on by
themselves). The Redis index is checked afterwards: one record per distinct id, the seq counter
equal to the number of records, and every seq in the id index, the buckets and the exact slots
pointing at a record.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from aiokafka import AIOKafkaConsumer, TopicPartition
from redis.asyncio import Redis as AsyncRedis

from harness import services
from harness.corpus import groups_of_copies
from harness.kafka import Item, Topics, committed_offsets, create_topics, make_topics, produce
from harness.workers import WorkerProc, start_worker
from neardup.stream.worker.messages import split_verdict_key

FAST = {  # short timeouts so that a dead peer or server is noticed within seconds
    "NEARDUP_KAFKA_SESSION_TIMEOUT_S": "10",
    "NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S": "1",
    "NEARDUP_RETRY_BACKOFF_MAX_S": "1",
}


# --------------------------------------------------------------------------- helpers


@dataclass
class Watch:
    """Reads a topic from its start in the background, without a consumer group, keeping
    every record (repeats included) with its arrival time."""

    bootstrap: str
    topic: str
    records: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    _consumer: AIOKafkaConsumer | None = None
    _task: asyncio.Task[None] | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> Watch:
        self._consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            metadata_max_age_ms=1000,
        )
        await self._consumer.start()
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        assert self._consumer is not None
        while True:
            batch = await self._consumer.getmany(timeout_ms=100)
            now = time.monotonic()
            for msgs in batch.values():
                for m in msgs:
                    value = json.loads(m.value or b"{}")
                    key = split_verdict_key(m.key or b"")[1]  # a tombstone: the id
                    self.records.append((now, value.get("id", key), value))
            if batch:
                self._arrived.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._consumer is not None:
            await self._consumer.stop()

    def by_id(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for _, ident, value in self.records:
            out[ident].append(value)
        return out

    def seen(self) -> set[str]:
        return {ident for _, ident, _ in self.records}

    async def until(self, done: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Wait until ``done()`` holds, checking whenever a record arrives (and every 0.1 s)."""
        deadline = time.monotonic() + timeout_s
        while not done():
            if self._task is not None and self._task.done():
                self._task.result()  # re-raise what stopped the reader
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), 0.1)

    async def wait_for(self, ids: set[str], timeout_s: float, why: str = "") -> None:
        try:
            await self.until(lambda: ids <= self.seen(), timeout_s, f"verdicts {why}")
        except AssertionError:
            missing = sorted(ids - self.seen())
            raise AssertionError(
                f"{len(missing)} of {len(ids)} ids got no verdict {why}: {missing[:10]}"
            ) from None


@contextlib.asynccontextmanager
async def watching(bootstrap: str, topic: str) -> AsyncIterator[Watch]:
    watch = await Watch(bootstrap, topic).start()
    try:
        yield watch
    finally:
        await watch.stop()


def articles(ns: str, n_groups: int, size: int, seed: int) -> list[list[dict[str, str]]]:
    """Groups of near-copies in namespace ``ns`` (ids unique per test through the namespace)."""
    return [
        [{**a, "id": f"{ns}-{a['id']}", "namespace": ns} for a in group]
        for group in groups_of_copies(n_groups, size, seed)
    ]


def items_of(docs: list[dict[str, str]]) -> list[Item]:
    """Keyed by id: one id always lands on one partition, so its replays stay in order."""
    return [(d["id"].encode(), json.dumps(d).encode(), None) for d in docs]


async def produce_slowly(topics: Topics, items: list[Item], chunk: int, pause_s: float) -> None:
    for i in range(0, len(items), chunk):
        await produce(topics.bootstrap, topics.input, items[i : i + chunk])
        await asyncio.sleep(pause_s)


async def ready(worker: WorkerProc, timeout_s: float = 60) -> None:
    await asyncio.to_thread(worker.wait_ready, timeout_s)


async def health(worker: WorkerProc) -> int:
    try:
        status, _ = await asyncio.to_thread(worker.get, "/health")
    except OSError:
        return 0
    return status


async def wait_health(worker: WorkerProc, want: int, within_s: float, why: str) -> None:
    """/health is re-probed every 2 s: poll until it answers ``want``."""
    deadline = time.monotonic() + within_s
    while (got := await health(worker)) != want:
        assert time.monotonic() < deadline, f"/health {got}, not {want}, {within_s:.0f}s {why}"
        await asyncio.sleep(0.2)


def metric(worker: WorkerProc, name: str) -> float:
    return worker.metrics().get(name, 0.0)


def kill9(worker: WorkerProc) -> None:
    worker.proc.send_signal(signal.SIGKILL)
    worker.proc.wait()


def assert_verdicts(watch: Watch, ids: set[str]) -> dict[str, dict[str, Any]]:
    """Every id has a verdict and all of its verdicts are identical; returns one per id."""
    got = watch.by_id()
    missing = ids - got.keys()
    assert not missing, f"lost articles: {sorted(missing)[:10]}"
    for ident in ids:
        first = got[ident][0]
        for other in got[ident][1:]:
            assert other == first, f"conflicting verdicts for {ident}: {first} != {other}"
    return {ident: got[ident][0] for ident in ids}


def assert_groups(verdicts: dict[str, dict[str, Any]], groups: list[list[dict[str, str]]]) -> None:
    """Each group of copies has one original and one cluster: the index saw every member."""
    for group in groups:
        vs = [verdicts[a["id"]] for a in group]
        originals = [v["id"] for v in vs if v["verdict"] == "original"]
        assert len(originals) == 1, [(v["id"], v["verdict"], v["duplicate_of"]) for v in vs]
        assert {v["cluster"] for v in vs} == set(originals), vs


def index_state(url: str, ns: str) -> dict[str, Any]:
    base = f"nd:{{{ns}}}:"
    r = redis.Redis.from_url(url, socket_timeout=10)
    try:

        def seqs_in(pattern: str) -> set[int]:
            out: set[int] = set()
            for key in r.scan_iter(match=base + pattern, count=1000):
                for value in r.hvals(key):
                    out.update(
                        int.from_bytes(value[i : i + 8], "big") for i in range(0, len(value), 8)
                    )
            return out

        return {
            "seq": int(r.hget(base + "m", "seq") or 0),
            "ids": {k.decode(): int.from_bytes(v, "big") for k, v in r.hgetall(base + "i").items()},
            "docs": {int.from_bytes(k, "big") for k in r.hkeys(base + "d")},
            "times": {int.from_bytes(k, "big") for k in r.zrange(base + "t", 0, -1)},
            "verdicts": {int.from_bytes(k, "big") for k in r.hkeys(base + "v")},
            "buckets": seqs_in("b:*"),
            "exact": seqs_in("x:*"),
        }
    finally:
        r.close()


def assert_index_consistent(url: str, ns: str, ids: set[str]) -> dict[str, Any]:
    """One record per distinct id, nothing registered twice, no seq without its record, and
    (once every article was decided) no record without its stored verdict: a verdict decided on
    the replay path is stored too, so later copies take their cluster from what was published."""
    s = index_state(url, ns)
    assert set(s["ids"]) == ids, "the id index must hold exactly the produced ids"
    assert len(s["docs"]) == len(ids), "one record per distinct id (HLEN nd:{ns}:d)"
    assert s["seq"] == len(ids), "the seq counter moved for a replay: registered twice"
    assert set(s["ids"].values()) == s["docs"], "every id maps to a record"
    assert s["times"] == s["docs"], "the time index matches the records"
    assert s["buckets"] <= s["docs"], f"bucket seqs without a record: {s['buckets'] - s['docs']}"
    assert s["exact"] <= s["docs"], f"exact-slot seqs without a record: {s['exact'] - s['docs']}"
    unsettled = sorted(s["docs"] - s["verdicts"])
    assert not unsettled, (
        f"{len(unsettled)} of {len(s['docs'])} records have no stored verdict although every "
        f"article was decided and published (seqs {unsettled[:10]})"
    )
    return s


# --------------------------------------------------------------------------- tests


async def test_redis_restarted_mid_stream_pauses_and_resumes(
    make_redis: Callable[..., Any], broker_bootstrap: str, tmp_path: Path
) -> None:
    """Redis (AOF, fsync always) is SIGKILLed while articles flow, and started again.

    While it is away the worker reports 503 on /health, processes nothing (no verdict, no dead
    letter for good articles), and retries with backoff; once it is back, everything produced
    meanwhile is decided, and what was registered before the crash is still in the index: the
    copies produced after the restart are recognised as copies of originals from before it.
    """
    store = make_redis(aof=True)
    topics = await make_topics(broker_bootstrap)
    ns = f"redis-restart-{uuid.uuid4().hex[:6]}"
    groups = articles(ns, 30, 5, seed=11)
    firsts = [g[0] for g in groups]  # originals first: they are indexed before the crash
    rest = [a for g in groups for a in g[1:]]
    ids = {a["id"] for g in groups for a in g}
    worker = start_worker(topics, store.url, tmp_path, f"g-{ns}", **FAST)
    try:
        await ready(worker)
        async with (
            watching(topics.bootstrap, topics.verdicts) as verdicts,
            watching(topics.bootstrap, topics.dlq) as dlq,
        ):
            await produce(topics.bootstrap, topics.input, items_of(firsts))
            await verdicts.wait_for({a["id"] for a in firsts}, 60, "before the crash")
            flow = asyncio.create_task(produce_slowly(topics, items_of(rest), 4, 0.3))
            await verdicts.until(lambda: len(verdicts.seen()) >= len(firsts) + 10, 30, "flow")
            store.stop(kill=True)  # mid-stream: the producer is still sending
            down_at = time.monotonic()
            await wait_health(worker, 503, 10, "after Redis went away")
            await asyncio.sleep(1.5)  # a batch in flight at the crash has failed by now
            paused_at = len(verdicts.records)
            await asyncio.sleep(3)
            assert len(verdicts.records) == paused_at, "no verdict can be made without Redis"
            assert not dlq.records, "good articles must not be dead-lettered while Redis is away"
            assert worker.proc.poll() is None, "the worker must ride out the outage"
            assert not flow.done(), "articles must still be arriving during the outage"
            await asyncio.to_thread(store.start)
            outage_s = time.monotonic() - down_at
            await flow
            await verdicts.wait_for(ids, 60, "after Redis came back")
            await wait_health(worker, 200, 10, "after Redis came back")
            assert metric(worker, "neardup_index_retries_total") > 0, "the batch was retried"
            delays = [
                float(line.rsplit(" in ", 1)[1].rstrip("s "))
                for line in worker.log.read_text(errors="replace").splitlines()
                if "retrying the batch in" in line
            ]
            assert delays and delays[0] < 1.0 and max(delays) == 1.0, f"no backoff: {delays}"
            assert len(delays) < outage_s + 10, f"retries in a tight loop: {len(delays)}"
            await asyncio.sleep(0.5)
            assert not dlq.records, [r[2] for r in dlq.records]
            final = assert_verdicts(verdicts, ids)
        assert_groups(final, groups)
        assert_index_consistent(store.url, ns, ids)
    finally:
        worker.stop()


async def test_redis_unreachable_at_start_the_worker_waits_and_says_why(
    broker_bootstrap: str, tmp_path: Path
) -> None:
    """Nothing listens on the Redis port when the worker starts: it stays up, logs
    "waiting for Redis", answers 503, and decides the waiting articles once Redis starts."""
    port = services.free_port()
    topics = await make_topics(broker_bootstrap)
    ns = f"late-redis-{uuid.uuid4().hex[:6]}"
    groups = articles(ns, 8, 3, seed=12)
    docs = [a for g in groups for a in g]
    url = f"redis://127.0.0.1:{port}/0"
    worker = start_worker(topics, url, tmp_path, f"g-{ns}", **FAST)
    store = None
    try:
        async with (
            watching(topics.bootstrap, topics.verdicts) as verdicts,
            watching(topics.bootstrap, topics.dlq) as dlq,
        ):
            await produce(topics.bootstrap, topics.input, items_of(docs))
            deadline = time.monotonic() + 30
            while "waiting for Redis" not in worker.log.read_text(errors="replace"):
                assert worker.proc.poll() is None, worker.log.read_text()[-3000:]
                assert time.monotonic() < deadline, worker.log.read_text()[-3000:]
                await asyncio.sleep(0.2)
            await asyncio.sleep(4)
            assert worker.proc.poll() is None, f"worker exited: {worker.log.read_text()[-3000:]}"
            assert await health(worker) == 503
            assert f"127.0.0.1:{port}" in worker.log.read_text(), "the log says which Redis"
            assert not verdicts.records and not dlq.records
            store = await asyncio.to_thread(services.start_redis, tmp_path / "late", port=port)
            await verdicts.wait_for({a["id"] for a in docs}, 60, "after Redis started")
            await wait_health(worker, 200, 10, "after Redis started")
            assert not dlq.records
            final = assert_verdicts(verdicts, {a["id"] for a in docs})
        assert_groups(final, groups)
        assert_index_consistent(url, ns, {a["id"] for a in docs})
    finally:
        worker.stop()
        if store is not None:
            store.stop()


async def test_worker_killed_before_commit_replays_with_the_same_verdicts(
    redis_url: str, broker_bootstrap: str, tmp_path: Path
) -> None:
    """kill -9 right after a batch's verdicts are published, inside faust's commit interval
    (2.8 s): the offsets are not committed, so the next worker of the group decides those
    articles again. The replays must carry identical verdicts and must not register anything
    twice (one record and one seq per distinct id)."""
    topics = await make_topics(broker_bootstrap)
    ns = f"replay-{uuid.uuid4().hex[:6]}"
    group = f"g-{ns}"
    all_groups: list[list[dict[str, str]]] = []
    worker = start_worker(topics, redis_url, tmp_path, group, **FAST)
    workers = [worker]
    try:
        await ready(worker)
        async with (
            watching(topics.bootstrap, topics.verdicts) as verdicts,
            watching(topics.bootstrap, topics.dlq) as dlq,
        ):
            for attempt in range(3):
                groups = articles(f"{ns}-{attempt}", 12, 5, seed=13 + attempt)
                groups = [[{**a, "namespace": ns} for a in g] for g in groups]
                all_groups += groups
                docs = [a for g in groups for a in g]
                flow = asyncio.create_task(produce_slowly(topics, items_of(docs), 6, 0.2))
                before = len(verdicts.records)
                await verdicts.until(
                    lambda n=before: len(verdicts.records) >= n + 12, 60, "a batch"
                )
                kill9(worker)  # verdicts just published; their offsets not yet committed
                await flow
                worker = start_worker(topics, redis_url, tmp_path, group, **FAST)
                workers.append(worker)
                await ready(worker)
                await verdicts.wait_for({a["id"] for a in docs}, 90, "after the kill")
                if any(len(v) > 1 for v in verdicts.by_id().values()):
                    break
            ids = {a["id"] for g in all_groups for a in g}
            await asyncio.sleep(0.5)
            replayed = [i for i, v in verdicts.by_id().items() if len(v) > 1]
            assert replayed, "no article was decided twice: the kill missed the commit window"
            final = assert_verdicts(verdicts, ids)
            assert not dlq.records, [r[2] for r in dlq.records]
        assert_groups(final, all_groups)
        assert_index_consistent(redis_url, ns, ids)
    finally:
        for w in workers:
            w.stop()


async def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """The broker's end offset of each partition of ``topic`` (trusted on Apache Kafka only)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: o for tp, o in (await consumer.end_offsets(tps)).items()}
    finally:
        await consumer.stop()


async def wait_committed(bootstrap: str, group: str, topic: str, want: dict[int, int]) -> None:
    """Until ``group`` has committed exactly ``want`` (partition -> offset) on ``topic``."""
    got: dict[int, int] = {}
    for _ in range(300):
        got = await asyncio.to_thread(committed_offsets, bootstrap, group, topic, len(want))
        if got == want:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"group {group} committed {got} on {topic}, not {want}")


async def test_broker_restarted_workers_reconnect_and_continue(
    broker: str, request: pytest.FixtureRequest, redis_url: str, tmp_path: Path
) -> None:
    """The broker is SIGKILLed while the worker is connected, stays away for a few seconds, and
    is started again on the same port.

    Covered on both brokers: the worker process survives the broker's absence (/health says 503
    meanwhile), reconnects by itself (consumer group, fetcher, producer), decides articles
    produced after the restart, and its index (in Redis, which did not restart) still knows the
    articles from before: copies produced after the restart are recognised.

    On Apache Kafka the log directory is kept, so the topics, the verdicts already published and
    the committed offsets survive: the group's offsets read back from the restarted broker equal
    the input's end offsets before the crash, one watcher reads every verdict from before and
    after the restart, and nothing decided before the crash is decided again.

    On Tansu (memory storage forgets topics, messages and committed offsets) the test recreates
    the topics, as topic provisioning would, and refills each partition with filler articles
    (another namespace, not checked) up to the offset consumed before the crash: a recreated
    memory topic restarts at offset 0, below the fetch position the consumer kept.
    """
    durable = broker == "kafka"
    server = request.getfixturevalue("make_kafka" if durable else "make_broker")()
    partitions = 4
    topics = await make_topics(server.bootstrap, partitions)
    ns = f"broker-restart-{uuid.uuid4().hex[:6]}"
    group = f"g-{ns}"
    groups = articles(ns, 10, 4, seed=17)
    before = [g[0] for g in groups]
    after = [a for g in groups for a in g[1:]]
    ids = {a["id"] for g in groups for a in g}
    filler = [a for g in articles(f"{ns}-filler", len(before), 1, seed=18) for a in g]
    worker = start_worker(topics, redis_url, tmp_path, group, **FAST)
    try:
        await ready(worker)
        async with watching(topics.bootstrap, topics.verdicts) as verdicts:
            await produce(
                topics.bootstrap,
                topics.input,
                [(k, v, i % partitions) for i, (k, v, _) in enumerate(items_of(before))],
            )
            await verdicts.wait_for({a["id"] for a in before}, 60, "before the restart")
            first = assert_verdicts(verdicts, {a["id"] for a in before})
        if durable:
            consumed = await end_offsets(topics.bootstrap, topics.input, partitions)
            assert sum(consumed.values()) == len(before), consumed
            await wait_committed(topics.bootstrap, group, topics.input, consumed)
        await asyncio.to_thread(server.stop, kill=True)
        await wait_health(worker, 503, 10, "after the broker went away")
        await asyncio.sleep(2)
        assert worker.proc.poll() is None, "the worker must ride out the broker's absence"
        await asyncio.to_thread(server.start)
        if durable:
            kept = await asyncio.to_thread(
                committed_offsets, topics.bootstrap, group, topics.input, partitions
            )
            assert kept == consumed, f"committed offsets lost in the restart: {kept} != {consumed}"
        else:
            await create_topics(topics.bootstrap, topics.all, partitions, exist_ok=True)
        async with (
            watching(topics.bootstrap, topics.verdicts) as verdicts,
            watching(topics.bootstrap, topics.dlq) as dlq,
        ):
            if not durable:
                await produce(
                    topics.bootstrap,
                    topics.input,
                    [(k, v, i % partitions) for i, (k, v, _) in enumerate(items_of(filler))],
                )
            await produce(topics.bootstrap, topics.input, items_of(after))
            try:  # a loaded machine reconnects slowly: the bound is generous, the log says why
                await verdicts.wait_for({a["id"] for a in after}, 150, "after the restart")
            except AssertionError as e:
                log = worker.log.read_text()[-4000:]
                raise AssertionError(f"{e}\nworker log:\n{log}") from None
            assert worker.proc.poll() is None
            await asyncio.sleep(0.5)
            assert not dlq.records, [r[2] for r in dlq.records]
            if durable:  # the verdict log kept what was published before the crash
                final = assert_verdicts(verdicts, ids)
                replayed = [i for i, v in verdicts.by_id().items() if len(v) > 1]
                assert not replayed, f"decided again after the restart: {replayed}"
            else:
                final = {**first, **assert_verdicts(verdicts, {a["id"] for a in after})}
        await wait_health(worker, 200, 10, "after the broker came back")
        assert {i: final[i] for i in first} == first
        assert_groups(final, groups)
        assert_index_consistent(redis_url, ns, ids)
    finally:
        worker.stop()


async def test_broker_unreachable_at_start_the_worker_waits_and_says_why(
    broker: str, redis_url: str, tmp_path: Path
) -> None:
    """Nothing listens on the broker's port when the worker starts (rescheduled while the broker
    restarts): it stays up, logs "waiting for Kafka", and consumes once the broker is there."""
    port = services.free_port()
    topics = Topics.named(f"{services.HOST}:{port}", tag=uuid.uuid4().hex[:8])
    ns = f"late-broker-{uuid.uuid4().hex[:6]}"
    groups = articles(ns, 6, 3, seed=29)
    docs = [a for g in groups for a in g]
    worker = start_worker(topics, redis_url, tmp_path, f"g-{ns}", **FAST)
    server = None
    try:
        deadline = time.monotonic() + 30
        while "waiting for Kafka" not in worker.log.read_text(errors="replace"):
            assert worker.proc.poll() is None, worker.log.read_text()[-3000:]
            assert time.monotonic() < deadline, worker.log.read_text()[-3000:]
            await asyncio.sleep(0.2)
        await asyncio.sleep(2)
        assert worker.proc.poll() is None, f"worker exited: {worker.log.read_text()[-3000:]}"
        start = services.start_kafka if broker == "kafka" else services.start_broker
        server = await asyncio.to_thread(start, tmp_path / "late", port=port)
        await create_topics(topics.bootstrap, topics.all, 4)
        await ready(worker, 90)
        async with watching(topics.bootstrap, topics.verdicts) as verdicts:
            await produce(topics.bootstrap, topics.input, items_of(docs))
            await verdicts.wait_for({a["id"] for a in docs}, 60, "after the broker started")
            final = assert_verdicts(verdicts, {a["id"] for a in docs})
        assert_groups(final, groups)
    finally:
        worker.stop()
        if server is not None:
            server.stop()


async def test_an_input_topic_the_group_leader_did_not_know_is_consumed_within_seconds(
    kafka_broker: str, redis_url: str, tmp_path: Path
) -> None:
    """The group leader assigns only the topics its metadata holds. Right after a broker restart
    (partitions still without a leader) or before provisioning created the input topic, that can
    be none: the group is stable with nothing assigned, and nothing consumes until the worker
    refreshes its metadata and rejoins. Here the input topic is created after the worker joined;
    its articles must be decided within a minute, not at faust's default refresh (5 minutes)."""
    topics = Topics.named(kafka_broker, tag=uuid.uuid4().hex[:8])
    await create_topics(kafka_broker, [topics.verdicts, topics.dlq], 4)
    ns = f"late-topic-{uuid.uuid4().hex[:6]}"
    groups = articles(ns, 4, 3, seed=37)
    docs = [a for g in groups for a in g]
    worker = start_worker(topics, redis_url, tmp_path, f"g-{ns}", **FAST)
    try:
        await ready(worker)
        await create_topics(kafka_broker, [topics.input], 4)
        async with watching(topics.bootstrap, topics.verdicts) as verdicts:
            await produce(topics.bootstrap, topics.input, items_of(docs))
            await verdicts.wait_for({a["id"] for a in docs}, 60, "once the topic existed")
            final = assert_verdicts(verdicts, {a["id"] for a in docs})
        assert_groups(final, groups)
    finally:
        worker.stop()


def _start_debuggable_redis(dir: Path) -> services.Service:
    """A private Redis that accepts DEBUG from loopback (off by default since Redis 7)."""
    return services.start_redis(dir, extra_args=("--enable-debug-command", "local"))


async def test_slow_redis_times_out_cleanly_and_leaves_the_index_consistent(
    broker_bootstrap: str, tmp_path: Path
) -> None:
    """``DEBUG SLEEP 3`` (from another client) freezes Redis while batches are in flight and the
    worker's Redis timeout is 1 s. Calls time out and the batch is retried; commands that reached
    Redis before the timeout still run after the sleep, each FCALL all-or-nothing, so the retry
    finds them registered (replay) and must still give one verdict per article, with every id,
    bucket and exact-slot entry pointing at a record and the seq counter equal to the records."""
    store = await asyncio.to_thread(_start_debuggable_redis, tmp_path / "slow")
    topics = await make_topics(broker_bootstrap)
    ns = f"slow-{uuid.uuid4().hex[:6]}"
    groups = articles(ns, 25, 4, seed=19)
    docs = [a for g in groups for a in g]
    ids = {a["id"] for a in docs}
    worker = start_worker(
        topics,
        store.url,
        tmp_path,
        f"g-{ns}",
        **FAST,
        NEARDUP_REDIS_TIMEOUT_S="1",
        NEARDUP_BATCH_SIZE="8",
    )
    admin = AsyncRedis.from_url(store.url, socket_timeout=30)
    try:
        await ready(worker)
        async with (
            watching(topics.bootstrap, topics.verdicts) as verdicts,
            watching(topics.bootstrap, topics.dlq) as dlq,
        ):
            flow = asyncio.create_task(produce_slowly(topics, items_of(docs), 5, 0.2))
            sleeps = 0
            while not flow.done() and sleeps < 3:
                seen = len(verdicts.records)
                await verdicts.until(
                    lambda n=seen: len(verdicts.records) > n or flow.done(), 60, "a batch in flight"
                )
                await admin.execute_command("DEBUG", "SLEEP", "3")
                sleeps += 1
            await flow
            assert sleeps >= 2, "the stream ended before Redis could be slowed down twice"
            await verdicts.wait_for(ids, 60, "after the slow periods")
            await asyncio.sleep(0.5)
            assert not dlq.records, [r[2] for r in dlq.records]
            final = assert_verdicts(verdicts, ids)
            assert metric(worker, "neardup_index_retries_total") > 0, "no batch was retried"
            assert "Timeout reading" in worker.log.read_text(), "the retries were timeouts"
        assert worker.proc.poll() is None
        assert_groups(final, groups)
        assert_index_consistent(store.url, ns, ids)
    finally:
        worker.stop()
        await admin.aclose()
        store.stop()


async def test_worker_stopped_while_redis_is_away_loses_nothing(
    make_redis: Callable[..., Any], broker_bootstrap: str, tmp_path: Path
) -> None:
    """A rolling restart during a Redis outage: the worker is told to stop (SIGTERM) while its
    batch waits for Redis. The batch was never decided, so its offsets must not be committed:
    the next worker of the group, started once Redis is back, must decide those articles."""
    store = make_redis(aof=True)
    topics = await make_topics(broker_bootstrap)
    ns = f"stop-in-outage-{uuid.uuid4().hex[:6]}"
    group = f"g-{ns}"
    groups = articles(ns, 10, 3, seed=23)
    firsts = [g[0] for g in groups]
    rest = [a for g in groups for a in g[1:]]
    ids = {a["id"] for g in groups for a in g}
    first = start_worker(topics, store.url, tmp_path, group, **FAST)
    workers = [first]
    try:
        await ready(first)
        async with (
            watching(topics.bootstrap, topics.verdicts) as verdicts,
            watching(topics.bootstrap, topics.dlq) as dlq,
        ):
            await produce(topics.bootstrap, topics.input, items_of(firsts))
            await verdicts.wait_for({a["id"] for a in firsts}, 60, "before the outage")
            store.stop(kill=True)
            await produce(topics.bootstrap, topics.input, items_of(rest))
            deadline = time.monotonic() + 20
            while first.log.read_text(errors="replace").count("retrying the batch") < 3:
                assert time.monotonic() < deadline, "the worker never tried the batch"
                await asyncio.sleep(0.2)
            first.proc.send_signal(signal.SIGTERM)  # a rolling restart, mid-retry
            try:  # within Kubernetes' default grace period (30 s), before a SIGKILL would come
                await asyncio.to_thread(first.proc.wait, 25)
            except subprocess.TimeoutExpired:
                raise AssertionError("SIGTERM during the outage: the worker hangs") from None
            await asyncio.to_thread(store.start)
            second = start_worker(topics, store.url, tmp_path, group, **FAST)
            workers.append(second)
            await ready(second)
            await verdicts.wait_for(ids, 60, "from the next worker")
            await asyncio.sleep(0.5)
            assert not dlq.records, [r[2] for r in dlq.records]
            final = assert_verdicts(verdicts, ids)
        assert_groups(final, groups)
        assert_index_consistent(store.url, ns, ids)
    finally:
        for w in workers:
            w.stop()


async def test_redis_at_its_memory_limit_pauses_and_health_says_why(
    make_redis: Callable[..., Any], broker_bootstrap: str, tmp_path: Path
) -> None:
    """Redis refuses writes with OOM (``maxmemory`` reached, ``noeviction``) but still answers
    PING: the worker retries with backoff, dead-letters nothing, stays alive, and ``/health``
    answers 503 with the reason until Redis has room again."""
    store = make_redis()
    topics = await make_topics(broker_bootstrap)
    ns = f"oom-{uuid.uuid4().hex[:6]}"
    docs = [a for g in articles(ns, 6, 2, seed=17) for a in g]
    ids = {a["id"] for a in docs}
    worker = start_worker(topics, store.url, tmp_path, f"g-{ns}", **FAST)
    admin = redis.Redis.from_url(store.url)
    try:
        await ready(worker)
        async with (
            watching(topics.bootstrap, topics.verdicts) as verdicts,
            watching(topics.bootstrap, topics.dlq) as dlq,
        ):
            admin.config_set("maxmemory-policy", "noeviction")
            admin.config_set("maxmemory", "1")  # below what is used: every write is refused
            await produce(topics.bootstrap, topics.input, items_of(docs))
            deadline = time.monotonic() + 30
            while True:
                status, body = await asyncio.to_thread(worker.get, "/health")
                if status == 503 and "OOM" in (json.loads(body).get("reason") or ""):
                    break
                assert time.monotonic() < deadline, f"/health {status} {body!r}"
                await asyncio.sleep(0.2)
            assert json.loads(body)["redis"] is False and json.loads(body)["ready"] is False
            await asyncio.sleep(3)  # ping answers meanwhile: still not ready
            assert (await asyncio.to_thread(worker.get, "/health"))[0] == 503
            assert not verdicts.records and not dlq.records
            assert worker.proc.poll() is None, "the worker must ride out a full Redis"
            admin.config_set("maxmemory", "0")
            await verdicts.wait_for(ids, 60, "after Redis had room again")
            await wait_health(worker, 200, 10, "after Redis had room again")
            assert metric(worker, "neardup_index_retries_total") > 0
            assert not dlq.records
    finally:
        admin.close()
        worker.stop()
