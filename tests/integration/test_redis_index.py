"""RedisIndex against a real Redis: identical verdicts to MemoryIndex, scheme refusal, replays
that write nothing, conflicts, delete and retention that empty the buckets (inspected in Redis),
the ``{ns}`` hash tag on every key, and Redis bytes per indexed document.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.crc import key_slot

from stream import keys
from stream.engine import Article, ConflictError, Engine, Verdict, prepare
from stream.index.base import SchemeMismatchError
from stream.index.memory import MemoryIndex
from stream.index.redis import RedisIndex
from stream.policy import Policy
from tests.integration.stalling import StallingIndex

# --------------------------------------------------------------------------- data


def _data_dir() -> Path:
    env = os.environ.get("NEARDUP_DATA_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"


@cache
def _clough() -> tuple[str, ...]:
    path = _data_dir() / "clough_stevenson" / "docs.jsonl"
    return tuple(json.loads(line)["text"] for line in path.read_text("utf-8").splitlines())


@cache
def _zh(n: int = 400) -> tuple[str, ...]:
    """The first ``n`` Chinese reviews, repeats included (the corpus is full of them)."""
    with (_data_dir() / "zh_reviews_pos" / "docs.jsonl").open(encoding="utf-8") as fh:
        return tuple(json.loads(next(fh))["text"] for _ in range(n))


@cache
def _vocab() -> tuple[str, ...]:
    return tuple(sorted({w for t in _clough() for w in t.split()}))


def _mutate(text: str, rate: float, rng: random.Random) -> str:
    return " ".join(rng.choice(_vocab()) if rng.random() < rate else w for w in text.split())


def _mixed_corpus(seed: int) -> list[Article]:
    """English originals and mutants (chains too), verbatim and case copies, Chinese paragraphs
    and their edits, short Chinese reviews (many exact repeats), English comments with typos
    (edit path), shuffled."""
    rng = random.Random(seed)
    texts = list(_clough())
    for _ in range(150):
        rate = rng.choice([0.0, 0.01, 0.03, 0.05, 0.08, 0.2])
        texts.append(_mutate(rng.choice(texts), rate, rng))
    texts += [t.upper() for t in rng.sample(texts, 10)]
    zh = _zh()
    for k in range(12):
        para = "".join(zh[100 + 6 * k : 106 + 6 * k])
        texts.append(para)
        pos = rng.randrange(len(para))
        texts.append(para[:pos] + "猫" + para[pos + 1 :])
    texts += list(zh[:80])
    for t in rng.sample(list(_clough()), 15):  # comments: a dozen words, and a typo'd repeat
        comment = " ".join(t.split()[20:32])
        pos = rng.randrange(len(comment))
        texts += [comment, comment[:pos] + comment[pos + 1 :] + "!"]
    rng.shuffle(texts)
    return [Article(f"doc-{i}", t) for i, t in enumerate(texts)]


def _batches(items: Sequence[Any], rng: random.Random, max_size: int = 30) -> list[list[Any]]:
    out, pos = [], 0
    while pos < len(items):
        size = rng.randint(1, max_size)
        out.append(list(items[pos : pos + size]))
        pos += size
    return out


# --------------------------------------------------------------------------- redis inspection


async def _seqs_in(client: Redis, pattern: str) -> dict[tuple[bytes, bytes], list[int]]:
    """Every (key, field) of the hashes matching ``pattern``, values decoded as packed seqs."""
    out: dict[tuple[bytes, bytes], list[int]] = {}
    async for key in client.scan_iter(match=pattern, count=1000):
        async for field, value in client.hscan_iter(key, count=1000):
            assert len(value) % 4 == 0
            out[key, field] = [
                int.from_bytes(value[i : i + 4], "big") for i in range(0, len(value), 4)
            ]
    return out


async def _dump(client: Redis) -> dict[bytes, Any]:
    """The whole database as Python values (hashes, sorted sets, strings)."""
    out: dict[bytes, Any] = {}
    async for key in client.scan_iter(count=1000):
        kind = await client.type(key)
        if kind == b"hash":
            out[key] = await client.hgetall(key)
        elif kind == b"zset":
            out[key] = await client.zrange(key, 0, -1, withscores=True)
        else:
            out[key] = (kind, await client.dump(key))
    return out


def _packed(seq: int) -> bytes:
    return seq.to_bytes(4, "big")


async def _verdicts(engine: Engine, articles: Sequence[Article]) -> list[Verdict]:
    got = await engine.process(articles)
    assert all(isinstance(v, Verdict) for v in got), got
    return got  # type: ignore[return-value]


# --------------------------------------------------------------------------- tests


async def test_memory_and_redis_give_identical_verdicts(redis_client: Redis) -> None:
    articles = _mixed_corpus(seed=11)
    mem_index, red_index = MemoryIndex(), RedisIndex(redis_client)
    mem, red = Engine(mem_index), Engine(red_index)
    rng = random.Random(3)
    mem_out: list[dict[str, Any]] = []
    red_out: list[dict[str, Any]] = []
    for batch in _batches(articles, rng):
        mem_out += [v.to_dict() for v in await _verdicts(mem, batch)]
        red_out += [v.to_dict() for v in await _verdicts(red, batch)]
    assert red_out == mem_out
    kinds = {v["verdict"] for v in mem_out}
    methods = {v["method"] for v in mem_out}
    assert kinds == {"original", "near_duplicate", "duplicate"}
    assert methods == {"new", "exact", "jaccard", "edit"}, "precondition: every path is exercised"

    # what is stored agrees too: verdicts, ids, and what a probe reads back
    stored = await redis_client.hgetall(keys.verdicts("default"))
    assert {
        int.from_bytes(k, "big"): Verdict.from_json(v).to_dict() for k, v in stored.items()
    } == {v["seq"]: v for v in mem_out}
    assert await red_index.count("default") == await mem_index.count("default") == len(articles)
    policy = mem.default_policy
    for p in prepare(policy, articles[::7]):
        assert await red_index.lookup("default", p.content, p.buckets) == await mem_index.lookup(
            "default", p.content, p.buckets
        )
        assert await red_index.seq_of("default", p.article.id) == await mem_index.seq_of(
            "default", p.article.id
        )


async def test_identical_with_deletes_retention_and_hot_buckets(redis_client: Redis) -> None:
    ns = "churn"
    policy = Policy(bucket_cap=3, retention_s=40.0)
    now = [0.0]
    mem_index, red_index = MemoryIndex(), RedisIndex(redis_client)
    mem = Engine(mem_index, policies={ns: policy}, clock=lambda: now[0])
    red = Engine(red_index, policies={ns: policy}, clock=lambda: now[0])
    articles = [Article(a.id, a.text, namespace=ns) for a in _mixed_corpus(seed=4)]
    rng = random.Random(9)
    seen: list[str] = []
    for batch in _batches(articles, rng, max_size=12):
        now[0] += 1.0
        got_mem = [v.to_dict() for v in await _verdicts(mem, batch)]
        got_red = [v.to_dict() for v in await _verdicts(red, batch)]
        assert got_red == got_mem
        seen += [a.id for a in batch]
        if rng.random() < 0.4:
            victim = rng.choice(seen)
            assert await red.delete(ns, victim) == await mem.delete(ns, victim)
        assert await red_index.count(ns) == await mem_index.count(ns)
    now[0] += 1000.0
    assert await red.expire(ns) == await mem.expire(ns) > 0
    assert await red_index.count(ns) == await mem_index.count(ns) == 0
    assert await _seqs_in(redis_client, keys.base(ns) + "b:*") == {}
    assert await _seqs_in(redis_client, keys.base(ns) + "x:*") == {}
    assert await redis_client.hlen(keys.verdicts(ns)) == 0


async def test_scheme_mismatch_is_refused(redis_client: Redis) -> None:
    first = Engine(RedisIndex(redis_client))
    await _verdicts(first, [Article("a", _clough()[0])])
    for other in (
        Engine(RedisIndex(redis_client), Policy(num_perm=64)),
        Engine(RedisIndex(redis_client), Policy(threshold=0.6)),
        Engine(RedisIndex(redis_client, shard_bits=8)),
    ):
        with pytest.raises(SchemeMismatchError):
            await other.process([Article("b", _clough()[1])])
    assert await redis_client.hlen(keys.docs("default")) == 1
    # same scheme in another process is fine; a different scheme in another namespace too
    (v,) = await _verdicts(Engine(RedisIndex(redis_client)), [Article("c", _clough()[0])])
    assert (v.verdict, v.duplicate_of) == ("duplicate", "a")
    other_ns = Engine(RedisIndex(redis_client), Policy(num_perm=64))
    (w,) = await _verdicts(other_ns, [Article("c", _clough()[0], namespace="small")])
    assert w.verdict == "original"


async def test_replay_returns_the_same_verdict_and_writes_nothing(redis_client: Redis) -> None:
    articles = _mixed_corpus(seed=5)[:120]
    engine = Engine(RedisIndex(redis_client))
    first: list[Verdict] = []
    for batch in _batches(articles, random.Random(1)):
        first += await _verdicts(engine, batch)
    before, size = await _dump(redis_client), await redis_client.dbsize()
    lengths = {k: await redis_client.hlen(k) for k in before if isinstance(before[k], dict)}

    # a restarted worker (fresh engine and index objects) sees the same messages again
    again_engine = Engine(RedisIndex(redis_client))
    replayed: list[Verdict] = []
    for batch in _batches(articles[::-1], random.Random(2)):
        replayed += await _verdicts(again_engine, batch)
    assert [v.to_dict() for v in replayed[::-1]] == [v.to_dict() for v in first]
    assert await redis_client.dbsize() == size
    assert {k: await redis_client.hlen(k) for k in lengths} == lengths
    assert await _dump(redis_client) == before


async def test_same_id_other_text_is_a_conflict(redis_client: Redis) -> None:
    engine = Engine(RedisIndex(redis_client))
    await _verdicts(engine, [Article("a", _clough()[0]), Article("s", "短评：很好看的一本书")])
    before = await _dump(redis_client)
    got = await engine.process([Article("a", _clough()[1]), Article("s", "短评：很难看的一本书")])
    assert all(isinstance(e, ConflictError) for e in got), got
    assert await _dump(redis_client) == before


async def test_delete_removes_the_article_from_buckets(redis_client: Redis) -> None:
    ns = "takedown"
    engine = Engine(RedisIndex(redis_client))
    texts = list(_clough()[:6])
    victim_text = texts[2]
    vs = await _verdicts(
        engine,
        [Article(f"d{i}", t, namespace=ns) for i, t in enumerate(texts)]
        + [Article("short", "这本书写得真好，推荐给大家", namespace=ns)],
    )
    victim = vs[2].seq
    assert victim is not None
    b_pattern, x_pattern = keys.base(ns) + "b:*", keys.base(ns) + "x:*"
    buckets = await _seqs_in(redis_client, b_pattern)
    n_buckets = len(prepare(engine.default_policy, [Article("v", victim_text)])[0].buckets)
    assert sum(victim in s for s in buckets.values()) == n_buckets  # positive control
    assert victim in [s for v in (await _seqs_in(redis_client, x_pattern)).values() for s in v]

    assert await engine.delete(ns, "d2") is True
    await _assert_gone(redis_client, ns, [victim], "d2")
    after = await _seqs_in(redis_client, b_pattern)
    assert {k: v for k, v in after.items()} == {
        k: [s for s in v if s != victim] for k, v in buckets.items() if v != [victim]
    }
    assert await engine.delete(ns, "d2") is False
    (again,) = await _verdicts(engine, [Article("d2-again", victim_text, namespace=ns)])
    assert again.verdict == "original"

    short_seq = vs[-1].seq
    assert short_seq is not None
    assert await engine.delete(ns, "short")
    await _assert_gone(redis_client, ns, [short_seq], "short")


async def _assert_gone(client: Redis, ns: str, seqs: Sequence[int], *ids: str) -> None:
    for pattern in (keys.base(ns) + "b:*", keys.base(ns) + "x:*"):
        for where, stored in (await _seqs_in(client, pattern)).items():
            assert not set(seqs) & set(stored), (where, stored)
    packed = [_packed(s) for s in seqs]
    assert await client.hmget(keys.docs(ns), packed) == [None] * len(seqs)
    assert await client.hmget(keys.verdicts(ns), packed) == [None] * len(seqs)
    assert [await client.zscore(keys.times(ns), p) for p in packed] == [None] * len(seqs)
    for doc_id in ids:
        assert await client.hget(keys.ids(ns), doc_id) is None


async def test_verbatim_copy_survives_deleting_the_first_copy(redis_client: Redis) -> None:
    """The content slot must keep pointing at a surviving copy: with ``bucket_cap=1`` the second
    copy is in no bucket, so after the first is deleted the slot is the only way to find it."""
    engine = Engine(RedisIndex(redis_client), Policy(bucket_cap=1))
    t = _clough()[3]
    await _verdicts(engine, [Article("a", t), Article("b", t)])
    assert await engine.delete("default", "a")
    (v,) = await _verdicts(engine, [Article("c", t)])
    assert (v.verdict, v.method, v.duplicate_of) == ("duplicate", "exact", "b")


async def test_delete_while_deciding_leaves_no_verdict_behind(
    redis_url: str, redis_client: Redis
) -> None:
    """A takedown that lands between registration and the verdict write must not leave an
    orphan verdict (MemoryIndex.put_verdicts skips deleted seqs; Redis must too)."""
    slow_client = Redis.from_url(redis_url)
    try:
        slow = StallingIndex(slow_client)
        task = asyncio.create_task(Engine(slow).process([Article("x", _clough()[4])]))
        await asyncio.wait_for(slow.stalled.wait(), 10)
        assert await Engine(RedisIndex(redis_client)).delete("default", "x")
        slow.release.set()
        (v,) = await task
        assert isinstance(v, Verdict) and v.seq == 1
    finally:
        await slow_client.aclose()
    assert await redis_client.hlen(keys.docs("default")) == 0
    assert await redis_client.hlen(keys.verdicts("default")) == 0


async def test_retention_removes_expired_articles_from_buckets(redis_client: Redis) -> None:
    ns = "news"
    now = [1000.0]
    engine = Engine(
        RedisIndex(redis_client), policies={ns: Policy(retention_s=100.0)}, clock=lambda: now[0]
    )
    texts = _clough()
    old = await _verdicts(engine, [Article(f"old{i}", texts[i], namespace=ns) for i in range(5)])
    now[0] = 1060.0
    kept = await _verdicts(
        engine, [Article(f"new{i}", texts[10 + i], namespace=ns) for i in range(3)]
    )
    old_seqs = [v.seq for v in old if v.seq is not None]
    kept_seqs = [v.seq for v in kept if v.seq is not None]
    in_buckets = {
        s for v in (await _seqs_in(redis_client, keys.base(ns) + "b:*")).values() for s in v
    }
    assert set(old_seqs) | set(kept_seqs) <= in_buckets  # positive control

    now[0] = 1100.5
    (late,) = await _verdicts(engine, [Article("late", texts[0], namespace=ns)])
    assert (late.verdict, late.duplicate_of) == ("original", None)  # old0 left the window
    await _assert_gone(redis_client, ns, old_seqs, *(f"old{i}" for i in range(5)))
    in_buckets = {
        s for v in (await _seqs_in(redis_client, keys.base(ns) + "b:*")).values() for s in v
    }
    assert set(kept_seqs) <= in_buckets
    assert await redis_client.zcard(keys.times(ns)) == len(kept_seqs) + 1
    assert await redis_client.hlen(keys.docs(ns)) == len(kept_seqs) + 1


async def test_every_key_carries_the_namespace_hash_tag(redis_client: Redis) -> None:
    namespaces = ("tenant-a", "tenant_b.2")
    now = [0.0]
    engine = Engine(RedisIndex(redis_client), Policy(retention_s=10.0), clock=lambda: now[0])
    for ns in namespaces:
        articles = [Article(a.id, a.text, namespace=ns) for a in _mixed_corpus(seed=2)[:60]]
        await _verdicts(engine, articles)
    await engine.delete(namespaces[0], "doc-3")
    now[0] = 100.0
    await engine.expire(namespaces[1])
    pattern = re.compile(rb"^nd:\{([^}]+)\}:(m|i|d|v|t|x:[0-9a-f]+|b:[0-9a-f]+)$")
    seen: dict[bytes, set[int]] = {}
    async for key in redis_client.scan_iter(count=1000):
        m = pattern.match(key)
        assert m, key
        seen.setdefault(m.group(1), set()).add(key_slot(key))
    assert set(seen) == {ns.encode() for ns in namespaces}
    assert all(len(slots) == 1 for slots in seen.values()), seen  # one cluster slot each


def _article_corpus(n: int, seed: int) -> list[Article]:
    """``n`` news-sized texts: originals dealt from shuffled Clough sentences, 30% mutants."""
    rng = random.Random(seed)
    sentences = [s for t in _clough() for s in re.split(r"(?<=[.!?])\s+", t) if len(s) > 30]
    texts: list[str] = []
    deck: list[str] = []
    while len(texts) < n:
        if texts and rng.random() < 0.3:
            texts.append(_mutate(rng.choice(texts), rng.choice([0.0, 0.02, 0.05, 0.1]), rng))
            continue
        words: list[str] = []
        while len(words) < 250:
            if not deck:
                deck = sentences[:]
                rng.shuffle(deck)
            words += deck.pop().split()
        texts.append(" ".join(words))
    return [Article(f"a{i}", t) for i, t in enumerate(texts)]


async def test_bytes_per_document(redis_client: Redis) -> None:
    articles = _article_corpus(2001, seed=8)
    engine = Engine(RedisIndex(redis_client))
    await _verdicts(engine, articles[:1])  # functions loaded, scheme stored
    before = int((await redis_client.info("memory"))["used_memory"])
    t0 = time.perf_counter()
    for pos in range(1, len(articles), 100):
        await _verdicts(engine, articles[pos : pos + 100])
    elapsed = time.perf_counter() - t0
    after = int((await redis_client.info("memory"))["used_memory"])
    n = len(articles) - 1
    per_doc = (after - before) / n
    d_bytes = sum(len(v) for v in (await redis_client.hgetall(keys.docs("default"))).values())
    print(
        f"\nredis: {per_doc:.0f} bytes/doc over {n} docs of ~250 words "
        f"(records alone {d_bytes / (n + 1):.0f} B/doc; shard_bits=16, so at this size most of "
        f"the rest is per-key overhead of sparsely filled shard hashes); {n / elapsed:.0f} docs/s"
    )
    assert 0 < per_doc < 20_000
