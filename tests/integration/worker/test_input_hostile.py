"""Input that used to stop a worker, on a real broker and Redis: compressed batches from
librdkafka, a 200 KB key, a namespace made with another scheme; and deletion as an input
(tombstones, ``DELETE /articles/{id}``, ``neardup delete``)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from harness.kafka import (
    CODECS,
    Topics,
    collect,
    make_topics,
    produce,
    produce_corrupt_batch,
    produce_librdkafka,
    produce_with_headers,
    read_records,
)
from harness.workers import NEARDUP, WorkerProc, start_worker
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.records import Record
from neardup.stream.worker.messages import split_verdict_key

TOKEN = "hostile-token"
Records = list[ConsumerRecord[bytes, bytes]]


@pytest.fixture(scope="module")
def worker(
    redis_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Topics, WorkerProc]]:
    tmp = tmp_path_factory.mktemp("hostile")
    topics = asyncio.run(make_topics(kafka_bootstrap, partitions=2))
    w = start_worker(topics, redis_url, tmp, f"hostile-{uuid.uuid4().hex[:6]}", **{
        "NEARDUP_CHECK_TOKEN": TOKEN
    })  # fmt: skip
    try:
        w.wait_ready()
        yield topics, w
    finally:
        w.stop()


def article(doc_id: str, ns: str, n: int = 0) -> bytes:
    text = f"story {n} of the day: the council met and voted on the harbour plan, item {doc_id}"
    return json.dumps({"id": doc_id, "namespace": ns, "text": text * 3}).encode()


def keyed(records: Records) -> dict[str, list[bytes | None]]:
    out: dict[str, list[bytes | None]] = {}
    for r in records:
        # the id: another namespace than the worker's keys its verdicts "ns\x1fid"
        out.setdefault(split_verdict_key(r.key or b"")[1], []).append(r.value)
    return out


def has(*keys: str) -> Any:
    return lambda records: set(keys) <= keyed(records).keys()


@pytest.mark.parametrize("codec", CODECS)
async def test_batches_compressed_by_librdkafka_are_read(
    worker: tuple[Topics, WorkerProc], codec: str
) -> None:
    topics, w = worker
    ns = f"codec-{codec}-{uuid.uuid4().hex[:6]}"
    ids = [f"{ns}-{i}" for i in range(20)]
    items = [(i.encode(), article(i, ns, n), n % 2) for n, i in enumerate(ids)]
    await asyncio.to_thread(produce_librdkafka, topics.bootstrap, topics.input, items, codec)
    got = await collect(topics.bootstrap, topics.verdicts, set(ids), timeout_s=60)
    assert set(ids) <= got.keys()
    w.check_alive()


async def test_an_undecodable_batch_is_skipped_and_the_stream_goes_on(
    worker: tuple[Topics, WorkerProc],
) -> None:
    topics, w = worker
    ns = f"corrupt-{uuid.uuid4().hex[:6]}"
    before, after = f"{ns}-before", f"{ns}-after"
    await produce(topics.bootstrap, topics.input, [(before.encode(), article(before, ns), 1)])
    await produce_corrupt_batch(topics.bootstrap, topics.input, 1, n=3)
    await produce(topics.bootstrap, topics.input, [(after.encode(), article(after, ns), 1)])
    got = await collect(topics.bootstrap, topics.verdicts, {before, after}, timeout_s=60)
    assert {before, after} <= got.keys()
    w.check_alive()
    dead = await read_records(
        topics.bootstrap,
        topics.dlq,
        lambda rs: any(json.loads(r.value or b"{}").get("reason") == "corrupt_batch" for r in rs),
    )
    letters = [json.loads(r.value or b"") for r in dead]
    assert any(d["reason"] == "corrupt_batch" and d["source"]["partition"] == 1 for d in letters)


async def test_a_200_kb_control_byte_key_is_a_bounded_dead_letter_and_the_stream_goes_on(
    worker: tuple[Topics, WorkerProc],
) -> None:
    topics, w = worker
    ns = f"bigkey-{uuid.uuid4().hex[:6]}"
    key = bytes(range(1, 32)) * 6600  # 204,600 bytes; JSON-escaped twice it made 1.4 MB
    after = f"{ns}-after"
    await produce(
        topics.bootstrap,
        topics.input,
        [(key, article("k", ns), 0), (after.encode(), article(after, ns), 0)],
    )
    got = await collect(topics.bootstrap, topics.verdicts, {after}, timeout_s=60)
    assert after in got
    dead = await read_records(
        topics.bootstrap,
        topics.dlq,
        lambda rs: any(json.loads(r.value or b"{}").get("key_bytes") == len(key) for r in rs),
    )
    (letter,) = [r for r in dead if json.loads(r.value or b"{}").get("key_bytes") == len(key)]
    body = json.loads(letter.value or b"")
    assert body["reason"] == "oversize_key" and body["key_truncated"] is True
    assert len(letter.key or b"") + len(letter.value or b"") < 100_000
    w.check_alive()


async def test_a_namespace_with_another_scheme_is_dead_lettered_and_others_get_verdicts(
    worker: tuple[Topics, WorkerProc], redis_url: str, tmp_path: Path
) -> None:
    topics, w = worker
    foreign, ok = f"foreign-{uuid.uuid4().hex[:6]}", f"ok-{uuid.uuid4().hex[:6]}"
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"id": "seed", "text": "made with another threshold"}) + "\n")
    cmd = [str(NEARDUP), "dedup", str(lines), "--namespace", foreign, "--threshold", "0.95"]
    cmd += ["--store", redis_url, "--no-progress"]  # what any operator can do
    made = await asyncio.to_thread(subprocess.run, cmd, capture_output=True, check=False)
    assert made.returncode == 0, made.stderr
    items = [
        (f"{foreign}-1".encode(), article(f"{foreign}-1", foreign), 1),
        (f"{ok}-1".encode(), article(f"{ok}-1", ok), 1),
        (f"{foreign}-2".encode(), article(f"{foreign}-2", foreign, 2), 1),
        (f"{ok}-2".encode(), article(f"{ok}-2", ok, 2), 1),
    ]
    await produce(topics.bootstrap, topics.input, items)
    got = await collect(topics.bootstrap, topics.verdicts, {f"{ok}-1", f"{ok}-2"}, timeout_s=60)
    assert {f"{ok}-1", f"{ok}-2"} <= got.keys()
    dead = keyed(
        await read_records(topics.bootstrap, topics.dlq, has(f"{foreign}-1", f"{foreign}-2"))
    )
    for i in (1, 2):
        (value,) = dead[f"{foreign}-{i}"]
        assert json.loads(value or b"")["reason"] == "scheme_mismatch"
    w.check_alive()


async def indexed(r: aioredis.Redis, ns: str, doc_id: str) -> tuple[int, Record] | None:
    index = RedisIndex(r)
    seq = await index.seq_of(ns, doc_id)
    if seq is None:
        return None
    raw = (await index.records(ns, [seq])).get(seq)
    return None if raw is None else (seq, Record.decode(raw))


async def in_buckets(r: aioredis.Redis, ns: str, seq: int, rec: Record) -> bool:
    first, cands = await RedisIndex(r).lookup(ns, rec.content, rec.buckets)
    return first == seq or seq in cands


async def test_a_tombstone_deletes_and_is_answered_by_a_verdict_tombstone(
    worker: tuple[Topics, WorkerProc], redis_client: aioredis.Redis
) -> None:
    topics, w = worker
    ns = f"tomb-{uuid.uuid4().hex[:6]}"
    doc, unknown = f"{ns}-a", f"{ns}-never-seen"
    await produce(topics.bootstrap, topics.input, [(doc.encode(), article(doc, ns), 0)])
    assert doc in await collect(topics.bootstrap, topics.verdicts, {doc}, timeout_s=60)
    found = await indexed(redis_client, ns, doc)
    assert found is not None and await in_buckets(redis_client, ns, *found)
    await produce_with_headers(
        topics.bootstrap,
        topics.input,
        [(doc.encode(), None, [("namespace", ns.encode())]), (unknown.encode(), None, [])],
    )
    out = keyed(
        await read_records(
            topics.bootstrap,
            topics.verdicts,
            lambda rs: None in keyed(rs).get(doc, []) and unknown in keyed(rs),
        )
    )
    assert out[doc][-1] is None and out[unknown] == [None]
    assert await indexed(redis_client, ns, doc) is None
    assert not await in_buckets(redis_client, ns, *found)
    # a replay of the old message does not bring it back: nothing more is published for it
    later = f"{ns}-later"
    await produce(
        topics.bootstrap,
        topics.input,
        [(doc.encode(), article(doc, ns), 0), (later.encode(), article(later, ns, 9), 0)],
    )
    assert later in await collect(topics.bootstrap, topics.verdicts, {later}, timeout_s=60)
    again = keyed(await read_records(topics.bootstrap, topics.verdicts, has(later)))
    assert again[doc][-1] is None
    assert await indexed(redis_client, ns, doc) is None
    assert w.metrics().get("neardup_skipped_total", 0) >= 1


async def input_ends(topics: Topics) -> dict[TopicPartition, int]:
    """Where the input topic ends now (what is read after: only what comes later; earlier
    tests left batches in it that aiokafka cannot decompress)."""
    tps = [TopicPartition(topics.input, p) for p in sorted(await _partitions(topics))]
    consumer = AIOKafkaConsumer(bootstrap_servers=topics.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        return dict(await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


async def _partitions(topics: Topics) -> list[int]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=topics.bootstrap)
    await admin.start()
    try:
        (found,) = await admin.describe_topics([topics.input])
        return [p["partition"] for p in found["partitions"]]
    finally:
        await admin.close()


async def tombstones_after(
    topics: Topics, ends: dict[TopicPartition, int], key: bytes, timeout_s: float = 30
) -> list[ConsumerRecord[bytes, bytes]]:
    """The input topic's tombstones for ``key`` after ``ends``, once at least one arrived."""
    consumer = AIOKafkaConsumer(bootstrap_servers=topics.bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: list[ConsumerRecord[bytes, bytes]] = []
    try:
        consumer.assign(list(ends))
        for tp, offset in ends.items():
            consumer.seek(tp, offset)
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not found and asyncio.get_running_loop().time() < deadline:
            got = await consumer.getmany(timeout_ms=500)
            found += [r for rs in got.values() for r in rs if r.key == key and r.value is None]
    finally:
        await consumer.stop()
    return found


def delete(w: WorkerProc, path: str, token: str | None = TOKEN) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(w.url(path), method="DELETE", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


async def test_the_delete_view_deletes_and_publishes_the_tombstone(
    worker: tuple[Topics, WorkerProc], redis_client: aioredis.Redis
) -> None:
    topics, w = worker
    ns = f"view-{uuid.uuid4().hex[:6]}"
    doc = f"{ns}-a"
    await produce(topics.bootstrap, topics.input, [(doc.encode(), article(doc, ns), 1)])
    assert doc in await collect(topics.bootstrap, topics.verdicts, {doc}, timeout_s=60)
    path = f"/articles/{doc}?namespace={ns}"
    assert (await asyncio.to_thread(delete, w, path, None))[0] == 401
    assert (await asyncio.to_thread(delete, w, path, "wrong"))[0] == 401
    assert await indexed(redis_client, ns, doc) is not None
    ends = await input_ends(topics)
    status, body = await asyncio.to_thread(delete, w, path)
    assert (status, body) == (200, {"deleted": True, "id": doc, "namespace": ns})
    assert await indexed(redis_client, ns, doc) is None
    assert (await asyncio.to_thread(delete, w, path)) == (
        200,
        {"deleted": False, "id": doc, "namespace": ns},
    )
    assert (await asyncio.to_thread(delete, w, f"/articles/{doc}?namespace=%7Bx%7D"))[0] == 400
    out = keyed(
        await read_records(
            topics.bootstrap, topics.verdicts, lambda rs: keyed(rs).get(doc, []).count(None) >= 2
        )
    )
    assert out[doc][0] is not None and set(out[doc][1:]) == {None}
    # the takedown is on the input topic too (a rebuild from it, or any reader, sees it)
    stones = await tombstones_after(topics, ends, doc.encode())
    assert stones and all(dict(r.headers)["namespace"] == ns.encode() for r in stones)


async def test_neardup_delete_for_operators(
    worker: tuple[Topics, WorkerProc], redis_url: str, redis_client: aioredis.Redis
) -> None:
    topics, _ = worker
    ns = f"cli-{uuid.uuid4().hex[:6]}"
    docs = [f"{ns}-{i}" for i in range(2)]
    await produce(
        topics.bootstrap,
        topics.input,
        [(d.encode(), article(d, ns, i), 0) for i, d in enumerate(docs)],
    )
    assert set(docs) <= (await collect(topics.bootstrap, topics.verdicts, set(docs))).keys()

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        cmd = [str(NEARDUP), "delete", *args, "--namespace", ns]
        return subprocess.run(cmd, capture_output=True, check=False, timeout=60)

    ends = await input_ends(topics)
    done = await asyncio.to_thread(
        run, docs[0], "--store", redis_url, "--kafka-bootstrap", topics.bootstrap,
        "--verdict-topic", topics.verdicts, "--input-topic", topics.input,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert await indexed(redis_client, ns, docs[0]) is None
    (stone,) = await tombstones_after(topics, ends, docs[0].encode())
    assert dict(stone.headers)["namespace"] == ns.encode()
    out = keyed(
        await read_records(
            topics.bootstrap, topics.verdicts, lambda rs: None in keyed(rs).get(docs[0], [])
        )
    )
    assert out[docs[0]][-1] is None
    some = await asyncio.to_thread(run, docs[1], f"{ns}-unknown", "--store", redis_url)
    assert some.returncode == 2 and f"{ns}-unknown".encode() in some.stderr
    assert await indexed(redis_client, ns, docs[1]) is None
    bad = await asyncio.to_thread(run, docs[1], "--store", "redis://127.0.0.1:1/0")
    assert bad.returncode == 1 and b"neardup delete" in bad.stderr


async def test_one_id_in_three_namespaces_has_three_verdict_keys_and_headers(
    worker: tuple[Topics, WorkerProc],
) -> None:
    """On a compacted verdict topic one tenant's verdict or tombstone must never replace
    another's: the worker's own namespace keys by the id, any other by ``ns + "\\x1f" + id``,
    and every record names its namespace in a header."""
    topics, w = worker
    doc = f"shared-{uuid.uuid4().hex[:6]}"
    a, b = f"tenant-a-{doc}", f"tenant-b-{doc}"
    await produce(
        topics.bootstrap,
        topics.input,
        [(doc.encode(), article(doc, ns, n), 0) for n, ns in enumerate(["default", a, b])],
    )
    want = {doc.encode(), f"{a}\x1f{doc}".encode(), f"{b}\x1f{doc}".encode()}

    def raw_keys(rs: Records) -> set[bytes]:
        return {r.key or b"" for r in rs if r.value is not None}

    got = await read_records(topics.bootstrap, topics.verdicts, lambda rs: want <= raw_keys(rs))
    mine = [r for r in got if r.key in want]
    assert {r.key: dict(r.headers)["namespace"] for r in mine} == {
        doc.encode(): b"default",
        f"{a}\x1f{doc}".encode(): a.encode(),
        f"{b}\x1f{doc}".encode(): b.encode(),
    }
    assert all(json.loads(r.value or b"")["id"] == doc for r in mine)
    # taking down tenant a's article tombstones its key alone
    await produce_with_headers(
        topics.bootstrap, topics.input, [(doc.encode(), None, [("namespace", a.encode())])]
    )
    stone = f"{a}\x1f{doc}".encode()
    got = await read_records(
        topics.bootstrap,
        topics.verdicts,
        lambda rs: any(r.key == stone and r.value is None for r in rs),
    )
    last = {r.key: r.value for r in got if r.key in want}  # what compaction would keep
    assert last[stone] is None
    assert last[doc.encode()] is not None and last[f"{b}\x1f{doc}".encode()] is not None
    w.check_alive()
