"""The streaming service as users run it: ``neardup worker`` on a real broker and Redis."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from harness.corpus import groups_of_copies
from harness.kafka import Topics, collect, make_topics, produce
from harness.workers import NEARDUP, WorkerProc, start_worker

TOKEN = "s3cret-token"
EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "producer_example.py"
MAX_MESSAGE_BYTES = 100_000


@pytest.fixture(scope="module")
def pair(
    redis_url: str, broker_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Topics, list[WorkerProc]]]:
    """Two workers in one group on a 4-partition topic, shared by the tests that take it; once
    on Tansu and once on Apache Kafka (``broker``)."""
    tmp = tmp_path_factory.mktemp("workers")
    topics = asyncio.run(make_topics(broker_bootstrap))
    group = f"neardup-{uuid.uuid4().hex[:6]}"
    settings = {"NEARDUP_CHECK_TOKEN": TOKEN, "NEARDUP_MAX_MESSAGE_BYTES": str(MAX_MESSAGE_BYTES)}
    workers = [start_worker(topics, redis_url, tmp, group, **settings) for _ in range(2)]
    try:
        for w in workers:
            w.wait_ready()
        yield topics, workers
    finally:
        for w in workers:
            w.stop()


def _ns_id(_record: object, verdict: dict[str, Any]) -> str:
    """``namespace/id``: the tests of this module share topics and reuse ids like ``g0-0``."""
    return f"{verdict.get('namespace')}/{verdict.get('id')}"


def _metric(worker: WorkerProc, name: str) -> float:
    return worker.metrics().get(name, 0.0)


async def test_two_workers_split_partitions_and_agree_with_batch_dedup(
    pair: tuple[Topics, list[WorkerProc]], tmp_path: Path
) -> None:
    topics, workers = pair
    ns = f"split-{uuid.uuid4().hex[:6]}"
    groups = groups_of_copies(16, 4, seed=1)
    items = []
    for g, group in enumerate(groups):
        for art in group:
            value = json.dumps({**art, "namespace": ns}).encode()
            items.append((art["id"].encode(), value, g % 4))  # a group keeps its order
    before = [_metric(w, "neardup_articles_in_total") for w in workers]
    await produce(topics.bootstrap, topics.input, items)
    got = await collect(topics.bootstrap, topics.verdicts, {a["id"] for g in groups for a in g})
    assert len(got) == 64
    after = [_metric(w, "neardup_articles_in_total") for w in workers]
    assert all(a > b for a, b in zip(after, before, strict=True)), "both workers must consume"

    batch_input = tmp_path / "in.jsonl"
    batch_input.write_text("".join(json.dumps(a) + "\n" for g in groups for a in g))
    cli = await asyncio.create_subprocess_exec(
        str(NEARDUP),
        "dedup",
        str(batch_input),
        "--namespace",
        ns,
        "--no-progress",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, _ = await cli.communicate()
    assert cli.returncode == 0
    expected = {v["id"]: v for v in map(json.loads, stdout.splitlines())}
    fields = ("verdict", "duplicate_of", "cluster", "similarity", "matches", "method", "namespace")
    for ident, verdicts in got.items():
        for v in verdicts:
            assert {f: v[f] for f in fields} == {f: expected[ident][f] for f in fields}


async def test_groups_spread_over_partitions_have_exactly_one_original(
    pair: tuple[Topics, list[WorkerProc]],
) -> None:
    topics, _ = pair
    ns = f"spread-{uuid.uuid4().hex[:6]}"
    groups = groups_of_copies(20, 5, seed=2)
    flat = [(g, a) for g, group in enumerate(groups) for a in group]
    random.Random(3).shuffle(flat)
    items = [
        (a["id"].encode(), json.dumps({**a, "namespace": ns}).encode(), i % 4)
        for i, (_, a) in enumerate(flat)
    ]
    await produce(topics.bootstrap, topics.input, items)
    want = {f"{ns}/{a['id']}" for _, a in flat}
    got = await collect(topics.bootstrap, topics.verdicts, want, key_of=_ns_id)
    for group in groups:
        verdicts = [got[f"{ns}/{a['id']}"][-1] for a in group]
        originals = [v for v in verdicts if v["verdict"] == "original"]
        assert len(originals) == 1, [(v["id"], v["verdict"], v["duplicate_of"]) for v in verdicts]
        assert {v["cluster"] for v in verdicts} == {originals[0]["id"]}


async def test_poison_messages_go_to_the_dead_letter_topic_and_the_stream_goes_on(
    pair: tuple[Topics, list[WorkerProc]],
) -> None:
    topics, _ = pair
    ns = f"poison-{uuid.uuid4().hex[:6]}"
    tag = uuid.uuid4().hex[:6]
    poison: dict[str, bytes | None] = {
        "invalid_json": b"{not json",
        "missing_id": json.dumps({"text": "no id here", "namespace": ns}).encode(),
        "empty_text": json.dumps({"id": "e", "text": "   ", "namespace": ns}).encode(),
        "oversize": json.dumps({"id": "o", "text": "word " * 40_000, "namespace": ns}).encode(),
        "invalid_utf8": b'{"id": "u", "text": "\xff\xfe bad bytes"}',
        "not_object": b"[1, 2, 3]",
        "invalid_namespace": json.dumps({"id": "n", "text": "x y z", "namespace": "../x"}).encode(),
    }
    items: list[tuple[bytes | None, bytes | None, int | None]] = []
    for reason, value in poison.items():
        items.append((f"{tag}-{reason}".encode(), value, 1))
    good = [
        {
            "id": f"{tag}-good-{i}",
            "text": f"a fine article number {i} about things",
            "namespace": ns,
        }
        for i in range(6)
    ]
    items += [(g["id"].encode(), json.dumps(g).encode(), 1) for g in good]
    await produce(topics.bootstrap, topics.input, items)
    verdicts = await collect(topics.bootstrap, topics.verdicts, {g["id"] for g in good})
    assert {g["id"] for g in good} <= verdicts.keys()
    dead = await collect(
        topics.bootstrap,
        topics.dlq,
        {f"{tag}-{r}" for r in poison},
        key_of=lambda m, v: (m.key or b"").decode(),
    )
    for reason in poison:
        entries = dead[f"{tag}-{reason}"]
        assert entries, f"no dead letter for {reason}"
        entry = entries[0]
        assert entry["reason"] == reason
        assert entry["source"]["topic"] == topics.input
        assert entry["source"]["partition"] == 1
        assert isinstance(entry["source"]["offset"], int)
    assert dead[f"{tag}-oversize"][0]["value_bytes"] > MAX_MESSAGE_BYTES


async def test_check_endpoint_health_and_metrics(
    pair: tuple[Topics, list[WorkerProc]], redis_url: str
) -> None:
    topics, workers = pair
    ns = f"check-{uuid.uuid4().hex[:6]}"
    (group,) = groups_of_copies(1, 2, seed=4)
    await produce(
        topics.bootstrap,
        topics.input,
        [(group[0]["id"].encode(), json.dumps({**group[0], "namespace": ns}).encode(), 0)],
    )
    await collect(topics.bootstrap, topics.verdicts, {f"{ns}/{group[0]['id']}"}, key_of=_ns_id)
    w = workers[1]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = json.dumps({"text": group[1]["text"], "namespace": ns}).encode()
    assert w.post("/check", body)[0] == 401
    assert w.post("/check", body, {"Authorization": "Bearer wrong"})[0] == 401
    r = redis.Redis.from_url(redis_url)
    try:
        docs_key = f"nd:{{{ns}}}:d"
        count = r.hlen(docs_key)
        status, verdict = w.post("/check", body, auth)
        assert status == 200
        assert verdict["verdict"] == "near_duplicate"
        assert verdict["duplicate_of"] == group[0]["id"]
        assert verdict["registered"] is False
        # the evidence: passages of the checked text found in the earlier one, cut from both
        assert verdict["evidence"], verdict
        for span in verdict["evidence"]:
            mine = group[1]["text"][span["start"] : span["end"]]
            theirs = group[0]["text"][span["earlier_start"] : span["earlier_end"]]
            assert mine and theirs and span["share"] >= 0.5
        assert r.hlen(docs_key) == count  # register=false leaves the index unchanged
        assert verdict["namespace_known"] is True and "note" not in verdict
        # against a namespace nothing was indexed in: said so, and it stays unknown
        invented = f"invented-{uuid.uuid4().hex[:6]}"
        keys_before = set(r.keys("*"))
        status, unknown = w.post(
            "/check", json.dumps({"text": group[1]["text"], "namespace": invented}).encode(), auth
        )
        assert (status, unknown["verdict"], unknown["namespace_known"]) == (200, "original", False)
        assert invented in unknown["note"]
        assert set(r.keys("*")) == keys_before
        assert invented.encode() not in r.smembers("nd:namespaces")
        # the same text as a page (bare tags: no evidence of markup), declared html
        page = "<P>" + group[1]["text"].replace("\n", "\n<P>")
        as_page = {"text": page, "namespace": ns, "format": "html"}
        status, verdict = w.post("/check", json.dumps(as_page).encode(), auth)
        assert (status, verdict["duplicate_of"]) == (200, group[0]["id"])
        status, refused = w.post("/check", json.dumps({**as_page, "format": "pdf"}).encode(), auth)
        assert (status, refused["error"]) == (400, "invalid_field")
        status, verdict = w.post(
            "/check",
            json.dumps(
                {"id": "submitted-1", "text": group[1]["text"], "namespace": ns, "register": True}
            ).encode(),
            auth,
        )
        assert status == 200 and verdict["seq"] is not None
        assert r.hlen(docs_key) == count + 1
    finally:
        r.close()
    assert w.post("/check", b"{nope", auth)[0] == 400
    big = json.dumps({"text": "x " * 600_000}).encode()
    assert w.post("/check", big, auth)[0] == 413
    status, health = w.get("/health")
    assert status == 200
    assert json.loads(health) == {"ready": True, "redis": True, "kafka": True, "reason": None}
    # the article went to whichever worker owns its partition
    assert sum(_metric(x, "neardup_verdicts_total") for x in workers) > 0
    assert sum(_metric(x, "neardup_redis_round_trips_total") for x in workers) > 0
    status, text = w.get("/metrics")
    for name in (
        "neardup_articles_in_total",
        "neardup_dead_letters_total",
        "neardup_batch_seconds_bucket",
        "neardup_redis_round_trips_total",
        "neardup_candidates_per_article_bucket",
        "process_resident_memory_bytes",  # the process, as prometheus_client reads it
        "process_cpu_seconds_total",
    ):
        assert name.encode() in text
    # /check requests by status: the 400 and the 413 above, and the answered checks
    seen = {
        line.split("{", 1)[1].split("}", 1)[0]
        for line in text.decode().splitlines()
        if line.startswith("neardup_check_requests_total{")
    }
    assert {'status="200"', 'status="400"', 'status="413"'} <= seen, seen
    assert b"neardup_check_seconds_bucket" in text


async def test_kill_9_one_worker_the_other_takes_over_and_nothing_is_lost(
    redis_url: str, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topics = await make_topics(kafka_bootstrap)
    group = f"neardup-{uuid.uuid4().hex[:6]}"
    workers = [start_worker(topics, redis_url, tmp_path, group) for _ in range(2)]
    try:
        for w in workers:
            w.wait_ready()
        ns = f"kill-{uuid.uuid4().hex[:6]}"
        groups = groups_of_copies(60, 5, seed=5)
        flat = [a for g in groups for a in g]
        random.Random(6).shuffle(flat)
        items = [
            (a["id"].encode(), json.dumps({**a, "namespace": ns}).encode(), None) for a in flat
        ]
        producer_task = asyncio.create_task(_produce_slowly(topics, items))
        await asyncio.sleep(1.5)
        workers[0].proc.send_signal(signal.SIGKILL)
        workers[0].proc.wait()
        assert not producer_task.done(), "articles must still arrive after the kill"
        await producer_task
        got = await collect(
            topics.bootstrap, topics.verdicts, {a["id"] for a in flat}, timeout_s=120
        )
        assert {a["id"] for a in flat} <= got.keys(), "every article gets a verdict"
        for ident, verdicts in got.items():
            assert all(v == verdicts[0] for v in verdicts), f"conflicting verdicts for {ident}"
        for g in groups:
            vs = [got[a["id"]][0] for a in g]
            assert sum(v["verdict"] == "original" for v in vs) == 1
            assert len({v["cluster"] for v in vs}) == 1
    finally:
        for w in workers:
            w.stop()


async def _produce_slowly(
    topics: Topics, items: list[tuple[bytes | None, bytes | None, int | None]]
) -> None:
    for i in range(0, len(items), 20):
        await produce(topics.bootstrap, topics.input, items[i : i + 20])
        await asyncio.sleep(0.3)  # ~4.5 s in all: most articles arrive after the kill


async def test_sigterm_finishes_the_batch_commits_and_leaves_the_group(
    redis_url: str, kafka_bootstrap: str, tmp_path: Path
) -> None:
    """SIGTERM mid-stream: exit 0; a successor resumes from committed offsets, nothing lost."""
    topics = await make_topics(kafka_bootstrap)
    group = f"neardup-{uuid.uuid4().hex[:6]}"
    first = start_worker(topics, redis_url, tmp_path, group)
    second: WorkerProc | None = None
    try:
        first.wait_ready()
        ns = f"term-{uuid.uuid4().hex[:6]}"
        groups = groups_of_copies(40, 5, seed=8)
        flat = [a for g in groups for a in g]
        items = [
            (a["id"].encode(), json.dumps({**a, "namespace": ns}).encode(), None) for a in flat
        ]
        await produce(topics.bootstrap, topics.input, items[:100])
        await collect(topics.bootstrap, topics.verdicts, {a["id"] for a in flat[:100]})
        producing = asyncio.create_task(_produce_slowly(topics, items[100:]))
        await asyncio.sleep(0.5)
        first.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(first.proc.wait, 30) == 0
        await producing
        second = start_worker(topics, redis_url, tmp_path, group)
        second.wait_ready()
        got = await collect(topics.bootstrap, topics.verdicts, {a["id"] for a in flat}, 120)
        assert {a["id"] for a in flat} <= got.keys()
        for ident, verdicts in got.items():
            assert all(v == verdicts[0] for v in verdicts), ident
        # offsets of everything verdicted before the SIGTERM were committed on the way out:
        # the first 100 articles are not processed a second time by the successor
        assert all(len(got[a["id"]]) == 1 for a in flat[:100])
    finally:
        first.stop()
        if second is not None:
            second.stop()


async def test_the_documented_example_client_gets_a_verdict_for_every_article(
    pair: tuple[Topics, list[WorkerProc]], tmp_path: Path
) -> None:
    """``deploy/producer_example.py`` as the README and the compose file run it, against the
    workers: every article of a small file gets its verdict, and the client exits 0."""
    topics, _ = pair
    tag = uuid.uuid4().hex[:6]
    articles = tmp_path / "articles.jsonl"
    lines = [{"id": f"ex-{tag}-{i}", "text": f"story {tag} number {i} " * 12} for i in range(5)]
    articles.write_text("".join(json.dumps(x) + "\n" for x in lines))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), str(articles),
        "--bootstrap", topics.bootstrap, "--input-topic", topics.input,
        "--verdict-topic", topics.verdicts, "--timeout-s", "90",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=150)
    assert proc.returncode == 0, (out.decode(), err.decode())
    assert "5/5 verdicts" in out.decode(), out.decode()
