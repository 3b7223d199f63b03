"""The ordering rule under real concurrency: many workers (tasks, then OS processes), each with its
own Redis client and Engine, submit near-duplicate groups to one Redis at the same time.

Invariants checked:

* every group of mutual near-copies ends with exactly one original, and every member's cluster is
  that original's id;
* linearisability: the verdicts equal those of one serial engine that sees the articles in
  sequence-number order (a verdict is a function of the earlier articles only);
* a chain ``A <- B <- C`` is one cluster even when B's verdict is not yet stored when C is decided.

The racing tests run on a single-slot namespace and on a sharded one (``shards`` = 4: buckets on
other slots, registration in steps; :mod:`neardup.stream.index.redis.sharded`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import random
import re
import uuid
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import pytest
from redis.asyncio import Redis

from harness import data
from neardup.sketch import features, verify
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.prepare import prepare
from neardup.stream.index.base import Registration
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from tests.integration.stalling import StallingIndex

# --------------------------------------------------------------------------- corpus


@cache
def _sentences() -> tuple[str, ...]:
    texts = [row["text"] for row in data.clough_stevenson()]
    found = {s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if len(s.split()) >= 8}
    return tuple(sorted(found))


def _bases(n: int, rng: random.Random, words: int = 220) -> list[str]:
    deck = list(_sentences())
    rng.shuffle(deck)
    out = []
    for _ in range(n):
        chosen: list[str] = []
        while sum(len(s.split()) for s in chosen) < words:
            chosen.append(deck.pop())
        out.append(" ".join(chosen))
    return out


def _substitute(text: str, positions: Sequence[int], tag: str) -> str:
    w = text.split()
    for p in positions:
        w[p] = f"zz{tag}{p}"
    return " ".join(w)


def _jaccard(a: str, b: str) -> float:
    return verify.jaccard(features.shingle_hashes(a), features.shingle_hashes(b))


def _groups(n_groups: int, seed: int) -> list[list[Article]]:
    """Groups of 5 mutual near-copies: the base, a case/whitespace copy, 3 light edits."""
    rng = random.Random(seed)
    groups = []
    for g, base in enumerate(_bases(n_groups, rng)):
        n = len(base.split())
        members = [base, "\n".join(base.upper().split())]
        members += [_substitute(base, rng.sample(range(n), 2), f"{g}m{k}") for k in range(3)]
        groups.append([Article(f"g{g}-{k}-{seed}", t) for k, t in enumerate(members)])
    return groups


def _chains(n_chains: int, seed: int) -> list[list[Article]]:
    """A <- B <- C with J(A,B), J(B,C) >= 0.8 > J(A,C)."""
    rng = random.Random(seed + 1)
    out = []
    for c, a in enumerate(_bases(n_chains, rng, words=260)):
        b = _substitute(a, range(2, 200, 29), f"c{c}b")
        cc = _substitute(b, range(16, 200, 29), f"c{c}c")
        out.append(
            [Article(f"ch{c}-{x}-{seed}", t) for x, t in zip("ABC", (a, b, cc), strict=True)]
        )
    return out


def test_corpus_preconditions() -> None:
    groups = _groups(40, seed=0)
    for g in groups:
        for i, a in enumerate(g):
            for b in g[:i]:
                assert _jaccard(a.text, b.text) >= 0.85
    shingles = [features.shingle_hashes(g[0].text) for g in groups]
    worst = max(verify.jaccard(a, b) for i, a in enumerate(shingles) for b in shingles[:i])
    assert worst < 0.3
    for a, b, c in _chains(5, seed=0):
        assert _jaccard(a.text, b.text) >= 0.8 and _jaccard(b.text, c.text) >= 0.8
        assert _jaccard(a.text, c.text) < 0.8


# --------------------------------------------------------------------------- checks


def _check_groups(groups: list[list[Article]], by_id: dict[str, dict[str, Any]]) -> None:
    for group in groups:
        vs = [by_id[a.id] for a in group]
        originals = [v for v in vs if v["verdict"] == "original"]
        assert len(originals) == 1, vs
        root = originals[0]["id"]
        assert all(v["cluster"] == root for v in vs), vs
        assert min(v["seq"] for v in vs) == originals[0]["seq"]


async def _check_serial(articles: list[Article], by_id: dict[str, dict[str, Any]]) -> None:
    """The concurrent verdicts equal a serial run over the articles in seq order."""
    seqs = sorted(by_id[a.id]["seq"] for a in articles)
    assert seqs == list(range(1, len(articles) + 1))
    ordered = sorted(articles, key=lambda a: by_id[a.id]["seq"])
    serial = await Engine(MemoryIndex(), ORDERED).process(ordered)
    for a, v in zip(ordered, serial, strict=True):
        assert isinstance(v, Verdict)
        assert by_id[a.id] == v.to_dict(), (by_id[a.id], v.to_dict())


# The ordering rule is a property of seq order. Boilerplate learning is not: what a batch leaves
# out depends on what the index had counted when the batch read it (frozen in the records, so
# replays agree, but a serial run in seq order may have counted otherwise). These tests compare
# with a serial run, so they pin learning off; tests/stream/engine/test_boilerplate.py covers it.
ORDERED = Policy(boilerplate_min_docs=0)


class _CountingIndex(RedisIndex):
    """Counts read-only probes: the engine makes them only to decide an undecided earlier match."""

    resolves = 0

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int], *, live_after: float | None = None
    ) -> Any:
        _CountingIndex.resolves += 1
        return await super().lookup(ns, content, buckets, live_after=live_after)


async def _worker(
    url: str,
    ns: str,
    articles: list[Article],
    seed: int,
    start: asyncio.Event | None,
    policy: Policy = ORDERED,
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    client = Redis.from_url(url)
    try:
        engine = Engine(_CountingIndex(client), policy)
        if start is not None:
            await start.wait()
        out: list[dict[str, Any]] = []
        pos = 0
        while pos < len(articles):
            size = rng.randint(1, 8)
            for _ in range(rng.randint(0, 3)):
                await asyncio.sleep(0)
            batch = [Article(a.id, a.text, namespace=ns) for a in articles[pos : pos + size]]
            for v in await engine.process(batch):
                assert isinstance(v, Verdict), v
                d = v.to_dict()
                d["namespace"] = "default"  # compared with a serial run in "default"
                out.append(d)
            pos += size
        return out
    finally:
        await client.aclose()


def _deal(articles: list[Article], n_workers: int, rng: random.Random) -> list[list[Article]]:
    shuffled = articles[:]
    rng.shuffle(shuffled)
    hands: list[list[Article]] = [[] for _ in range(n_workers)]
    for a in shuffled:
        hands[rng.randrange(n_workers)].append(a)
    return hands


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("shards", [1, 4], ids=["one-slot", "sharded"])
async def test_concurrent_tasks_one_original_per_group(
    redis_url: str, redis_client: Redis, shards: int
) -> None:
    """Ten tasks race; on a sharded namespace (buckets in 4 shard groups) too."""
    _CountingIndex.resolves = 0
    policy = dataclasses.replace(ORDERED, shards=shards)
    for seed in range(10):
        groups = _groups(40, seed)
        chains = _chains(5, seed)
        articles = [a for g in groups + chains for a in g]
        rng = random.Random(seed)
        ns = f"conc-{seed}"
        start = asyncio.Event()
        hands = _deal(articles, 10, rng)
        tasks = [
            asyncio.create_task(_worker(redis_url, ns, hand, seed * 100 + w, start, policy))
            for w, hand in enumerate(hands)
        ]
        await asyncio.sleep(0.05)
        start.set()
        results = await asyncio.gather(*tasks)
        by_id = {v["id"]: v for r in results for v in r}
        assert len(by_id) == len(articles)
        _check_groups(groups, by_id)
        await _check_serial(articles, by_id)
        stored = await redis_client.hgetall(keys.verdicts(ns))
        assert len(stored) == len(articles)
        for blob in stored.values():
            v = Verdict.from_json(blob).to_dict()
            assert v["cluster"] == by_id[v["id"]]["cluster"]
    print(f"\nconcurrency: {_CountingIndex.resolves} clusters resolved from undecided matches")
    assert _CountingIndex.resolves > 0, "the race (an undecided earlier match) never happened"


@pytest.mark.parametrize("shards", [1, 4], ids=["one-slot", "sharded"])
async def test_with_boilerplate_learning_on_still_one_original_per_group(
    redis_url: str, shards: int
) -> None:
    """The defaults, learning on, ten concurrent tasks: one original per group, every member
    in its cluster (what learning may change is which copy's similarity is which)."""
    for seed in range(3):
        groups = _groups(40, seed)
        articles = [a for g in groups for a in g]
        hands = _deal(articles, 10, random.Random(seed))
        ns = f"conc-on-{seed}-{uuid.uuid4().hex[:6]}"
        start = asyncio.Event()
        tasks = [
            asyncio.create_task(
                _worker(redis_url, ns, hand, seed * 100 + w, start, Policy(shards=shards))
            )
            for w, hand in enumerate(hands)
        ]
        await asyncio.sleep(0.05)
        start.set()
        by_id = {v["id"]: v for r in await asyncio.gather(*tasks) for v in r}
        assert len(by_id) == len(articles)
        _check_groups(groups, by_id)


def _process_main(
    url: str,
    ns: str,
    items: list[tuple[str, str]],
    seed: int,
    barrier: Any,
    queue: Any,
    shards: int,
) -> None:
    """One OS process: its own event loop, Redis client and Engine; starts with the others."""

    async def main() -> list[dict[str, Any]]:
        gate = asyncio.Event()
        arts = [Article(i, t) for i, t in items]
        policy = dataclasses.replace(ORDERED, shards=shards)
        task = asyncio.create_task(_worker(url, ns, arts, seed, gate, policy))
        await asyncio.get_running_loop().run_in_executor(None, barrier.wait, 60)
        gate.set()
        return await task

    try:
        queue.put((seed, asyncio.run(main()), None))
    except BaseException as exc:  # reported to the parent, which fails the test
        queue.put((seed, None, repr(exc)))


@pytest.mark.parametrize("shards", [1, 4], ids=["one-slot", "sharded"])
def test_concurrent_processes_one_original_per_group(redis_url: str, shards: int) -> None:
    seed = 99
    groups = _groups(40, seed)
    chains = _chains(5, seed)
    articles = [a for g in groups + chains for a in g]
    hands = _deal(articles, 4, random.Random(seed))
    ns = f"procs-{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(hands))
    queue = ctx.Queue()
    procs = [
        ctx.Process(
            target=_process_main,
            args=(redis_url, ns, [(a.id, a.text) for a in h], seed + w, barrier, queue, shards),
        )
        for w, h in enumerate(hands)
    ]
    for p in procs:
        p.start()
    try:
        replies = [queue.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    errors = [err for _, _, err in replies if err]
    assert not errors, errors
    by_id = {v["id"]: v for _, out, _ in replies for v in out}
    assert len(by_id) == len(articles)
    _check_groups(groups, by_id)
    asyncio.run(_check_serial(articles, by_id))


async def test_chain_with_an_undecided_middle_is_one_cluster(
    redis_url: str, redis_client: Redis
) -> None:
    a, b, c = _chains(1, seed=7)[0]
    one = Engine(RedisIndex(redis_client))
    (va,) = await one.process([a])
    stalling_client = Redis.from_url(redis_url)
    third_client = Redis.from_url(redis_url)
    try:
        stalling = StallingIndex(stalling_client)
        slow = asyncio.create_task(Engine(stalling).process([b]))
        await asyncio.wait_for(stalling.stalled.wait(), 10)
        b_seq = await RedisIndex(redis_client).seq_of("default", b.id)
        assert b_seq is not None
        assert await redis_client.hget(keys.verdicts("default"), b_seq.to_bytes(8, "big")) is None

        (vc,) = await Engine(RedisIndex(third_client)).process([c])
        assert isinstance(vc, Verdict)
        assert (vc.verdict, vc.duplicate_of, vc.cluster) == ("near_duplicate", b.id, a.id)

        stalling.release.set()
        (vb,) = await slow
        assert isinstance(vb, Verdict) and isinstance(va, Verdict)
        assert (vb.duplicate_of, vb.cluster) == (a.id, a.id)
        assert va.cluster == a.id
    finally:
        await stalling_client.aclose()
        await third_client.aclose()


async def test_chain_registered_but_never_decided(redis_client: Redis) -> None:
    """A and B registered by workers that then died: C alone must still find cluster A, and the
    replays of A and B (at-least-once delivery) must agree with it."""
    a, b, c = _chains(1, seed=8)[0]
    engine = Engine(RedisIndex(redis_client))
    policy = engine.default_policy
    index = RedisIndex(redis_client)
    await index.ensure_scheme("default", policy.scheme_bytes())
    prepared = prepare(policy, [a, b])
    regs = [
        Registration(p.article.id, p.content, p.buckets, p.record(0.0).encode(), 0.0)
        for p in prepared
    ]
    probes = await index.register("default", regs, policy.bucket_cap)
    assert [p.seq for p in probes] == [1, 2]
    assert await redis_client.hlen(keys.verdicts("default")) == 0

    (vc,) = await engine.process([c])
    assert isinstance(vc, Verdict)
    assert (vc.seq, vc.duplicate_of, vc.cluster) == (3, b.id, a.id)
    vb, va = await Engine(RedisIndex(redis_client)).process([b, a])
    assert isinstance(va, Verdict) and isinstance(vb, Verdict)
    assert (va.verdict, va.cluster, va.seq) == ("original", a.id, 1)
    assert (vb.verdict, vb.duplicate_of, vb.cluster, vb.seq) == ("near_duplicate", a.id, a.id, 2)
    assert np.isclose(vb.similarity or 0.0, _jaccard(a.text, b.text), atol=1e-3)
