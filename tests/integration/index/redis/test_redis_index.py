"""RedisIndex against a real Redis: identical verdicts to MemoryIndex, scheme refusal, replays
that write nothing, conflicts, delete and retention that empty the buckets (inspected in Redis),
the ``{ns}`` hash tag on every key, shard keys named in Lua exactly as
:mod:`neardup.stream.index.redis.keys` names them, the same probes whatever the chunk size, bucket
and content-slot caps, and Redis bytes per indexed document.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from redis.asyncio import Redis
from redis.crc import key_slot

from harness import data
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.prepare import prepare
from neardup.stream.errors import ConflictError, IndexUnavailableError, SchemeMismatchError
from neardup.stream.index.base import COPIES_CAP, Probe, Registration, StoredVerdict
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.index.redis.sharded import Sharded
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Kind, Record
from tests.integration.stalling import StallingIndex

ROOT = Path(__file__).resolve().parents[4]

# --------------------------------------------------------------------------- data


@cache
def _clough() -> tuple[str, ...]:
    return tuple(row["text"] for row in data.clough_stevenson())


@cache
def _zh(n: int = 400) -> tuple[str, ...]:
    """The first ``n`` Chinese reviews, repeats included (the corpus is full of them)."""
    return tuple(row["text"] for row in data.zh_reviews()[:n])


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
            assert len(value) % 8 == 0
            out[key, field] = [
                int.from_bytes(value[i : i + 8], "big") for i in range(0, len(value), 8)
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
    return seq.to_bytes(8, "big")


async def _verdicts(engine: Engine, articles: Sequence[Article]) -> list[Verdict]:
    got = await engine.process(articles)
    assert all(isinstance(v, Verdict) for v in got), got
    return got  # type: ignore[return-value]


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize(("overlap", "chunk"), [(64, 64), (5, 3)])
async def test_memory_and_redis_give_identical_verdicts(
    redis_client: Redis, overlap: int, chunk: int
) -> None:
    """Seq included: with small chunks a batch is sketched and registered chunk by chunk (the
    engine overlapping its work with the server's), and the order must still be the articles'."""
    articles = _mixed_corpus(seed=11)
    mem_index, red_index = MemoryIndex(), RedisIndex(redis_client, chunk_size=chunk)
    mem, red = Engine(mem_index), Engine(red_index, overlap_chunk=overlap)
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


async def test_chunked_batches_register_in_article_order(
    redis_client: Redis, redis_url: str
) -> None:
    """One large batch cut into many small chunks, on a client with no connection yet: every
    article gets the seq it would get unchunked (its position), so "earlier" is still the
    articles' order, even though the engine sketches while Redis registers."""
    articles = _mixed_corpus(seed=5)
    mem = await _verdicts(Engine(MemoryIndex()), articles)
    for overlap, chunk in [(4, 2), (9, 9), (len(articles) - 1, 64)]:
        await redis_client.flushdb()
        fresh = Redis.from_url(redis_url)
        try:
            red = await _verdicts(
                Engine(RedisIndex(fresh, chunk_size=chunk), overlap_chunk=overlap), articles
            )
        finally:
            await fresh.aclose()
        assert [v.seq for v in red] == list(range(1, len(articles) + 1))
        assert [v.to_dict() for v in red] == [v.to_dict() for v in mem]


async def test_streamed_registration_lost_connection(redis_client: Redis, redis_url: str) -> None:
    """The connection of a streamed registration dies with replies unread: the index says it is
    unavailable (retriable), the dead connection is not reused, and the retry sees the articles
    the server registered before as replays, with the seqs they got."""
    articles = _mixed_corpus(seed=9)[:40]
    regs = [
        Registration(p.article.id, p.content, p.buckets, p.record(1.0).encode(), 1.0)
        for p in prepare(Policy(), articles)
    ]
    client = Redis.from_url(redis_url)
    index = RedisIndex(client, chunk_size=8)
    try:
        await index.ensure_scheme("lost", Policy().scheme_bytes())
        with pytest.raises(IndexUnavailableError):
            async with index.registration("lost", 256) as stream:
                await stream.send(regs[:8])
                for _ in range(500):  # the first chunk is registered (its reply unread)...
                    if await redis_client.hlen(keys.docs("lost")) == 8:
                        break
                    await asyncio.sleep(0.01)
                # ... the rest is held (a write pause), and the connection dies with its
                # replies unread: what the server had replied before cannot save it
                await redis_client.client_pause(10_000, all=False)
                try:
                    await stream.send(regs[8:])
                    await redis_client.client_kill_filter(_type="normal", skipme=True)
                finally:
                    await redis_client.client_unpause()
                await stream.probes()
        again = await index.register("lost", regs, 256)
        # whatever the server registered before the kill comes back as a replay with its seq;
        # the rest is registered now; in both cases in the articles' order
        assert [p.seq for p in again] == list(range(1, len(regs) + 1))
        assert await index.count("lost") == len(regs)
    finally:
        await client.aclose()


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
        (refused,) = await other.process([Article("b", _clough()[1])])
        assert isinstance(refused, SchemeMismatchError)
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
    pattern = re.compile(
        rb"^nd:\{([^}]+)\}:(m|i|d|v|t|g|cm|l:[ab]|c:[0-9a-f]{32}|x:[0-9a-f]+|b:[0-9a-f]+)$"
    )
    seen: dict[bytes, set[int]] = {}
    async for key in redis_client.scan_iter(count=1000):
        if key in (keys.REGISTRY.encode(), keys.ALIASES.encode()):  # the two without one
            continue
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


# --------------------------------------------------------------------------- index level


def _reg(doc_id: str, content: bytes, buckets: Sequence[int], at: float = 1000.0) -> Registration:
    """A registration with a real (short) record, so delete and expiry can decode it."""
    rec = Record(doc_id, Kind.SHORT, at, 0, content, tuple(buckets), np.empty(0, np.uint32), "t")
    return Registration(doc_id, content, tuple(buckets), rec.encode(), at)


async def _shard_fields(client: Redis, ns: str) -> dict[str, set[bytes]]:
    """Every exact-slot and bucket shard key of ``ns`` Redis holds, with its fields."""
    out: dict[str, set[bytes]] = {}
    async for key in client.scan_iter(match=keys.base(ns) + "[xb]:*", count=1000):
        out[key.decode()] = {
            f.encode() if isinstance(f, str) else f for f in await client.hkeys(key)
        }
    return out


@pytest.mark.parametrize("bits", [1, 4, 13, 16, 24])
async def test_shard_keys_named_in_lua_are_those_of_keys_py(redis_client: Redis, bits: int) -> None:
    """The functions derive the shard keys themselves: the keys Redis holds must be exactly
    ``keys.exact_shard`` / ``keys.bucket_shard`` of what was registered, for any shard_bits, and
    lookup and removal must find them again."""
    rng = random.Random(bits)
    ns = f"bits-{bits}.ns"
    edges = [0, 1, 2**64 - 1, 2**63, 2**40 - 1, 2**40, 2**41 + 5, (2**24 - 1) << 40]
    contents = [bytes(16), b"\xff" * 16, bytes([0, 0, 1]) + bytes(13)]
    regs = [_reg("edge", contents[0], edges)]
    for i in range(60):
        content = contents[i] if i < len(contents) else rng.randbytes(16)
        regs.append(_reg(f"r{i}", content, [rng.getrandbits(64) for _ in range(26)]))
    index = RedisIndex(redis_client, shard_bits=bits, chunk_size=16)
    probes = await index.register(ns, regs, 256)
    assert [p.status for p in probes] == ["new"] * len(regs)

    expected: dict[str, set[bytes]] = {}
    for reg in regs:
        expected.setdefault(keys.exact_shard(ns, reg.content, bits), set()).add(reg.content)
        for b in reg.buckets:
            expected.setdefault(keys.bucket_shard(ns, b, bits), set()).add(keys.bucket_field(b))
    held = await _shard_fields(redis_client, ns)
    assert held == expected
    assert keys.bucket_shard(ns, 0, bits) == keys.base(ns) + "b:0" and held[keys.base(ns) + "b:0"]
    assert keys.bucket_shard(ns, 2**64 - 1, bits) == keys.base(ns) + f"b:{2**bits - 1:x}"

    for reg, probe in zip(regs[::9], probes[::9], strict=True):
        first, cands = await index.lookup(ns, reg.content, reg.buckets)
        assert probe.seq in cands
        assert first == (1 if reg.content == contents[0] else probe.seq)
    assert await index.delete(ns, "edge")
    assert await index.expire(ns, 2000.0) == len(regs) - 1
    assert await _shard_fields(redis_client, ns) == {}
    left = {k async for k in redis_client.scan_iter(match=keys.base(ns) + "*")}
    assert left == {keys.meta(ns).encode(), keys.deleted(ns).encode()}  # "edge" is remembered


def _churn(seed: int, n: int) -> list[Registration]:
    """Registrations that share buckets (some past a small cap) and contents, with ids that
    repeat inside the batch; every tenth has no bucket at all."""
    rng = random.Random(seed)
    pool = [rng.getrandbits(64) for _ in range(30)]
    texts = [rng.randbytes(16) for _ in range(8)]
    return [
        _reg(f"id{i % (n - 25)}", rng.choice(texts), rng.sample(pool, 5 if i % 10 else 0), 1e3 + i)
        for i in range(n)
    ]


async def test_probes_do_not_depend_on_the_chunk_size(redis_client: Redis) -> None:
    """A batch cut into chunks (and chunk boundaries inside runs of shared buckets, repeated ids
    and replays of earlier batches) gives the probes of one article per call, and of MemoryIndex;
    what is stored is the same too."""
    first, second = _churn(1, 150), _churn(2, 90)
    cap = 4
    results: dict[str, list[Probe]] = {}
    indexes: dict[str, Any] = {"memory": MemoryIndex()}
    for chunk in (1, 7, 64, 1024):
        indexes[f"c{chunk}"] = RedisIndex(redis_client, shard_bits=4, chunk_size=chunk)
    for ns, index in indexes.items():
        probes = await index.register(ns, first, cap)
        every_third = zip(first[::3], probes[::3], strict=True)
        await index.put_verdicts(
            ns, {p.seq: StoredVerdict(r.doc_id, b"v%d" % p.seq) for r, p in every_third}
        )
        assert await index.delete(ns, "id7")
        results[ns] = probes + await index.register(ns, second + first[:40], cap)
    assert len(results["c1"]) == 150 + 90 + 40
    statuses = {p.status for p in results["c1"]}
    # id7 is remembered as deleted: its replay is not registered again
    assert statuses == {"new", "replay", "deleted"} and any(p.hot for p in results["c1"])
    assert any(p.verdict for p in results["c1"]) and any(p.exact_seq for p in results["c1"])
    for ns, probes in results.items():
        assert probes == results["memory"], ns

    def stored(dump: dict[bytes, Any], ns: str) -> dict[bytes, Any]:
        """A namespace's keys and values, deletion times left out (Redis's clock moved on)."""
        tag = keys.base(ns).encode()
        out = {k[len(tag) :]: v for k, v in dump.items() if k.startswith(tag)}
        out[b"g"] = [member for member, _ in out[b"g"]]
        return out

    dump = await _dump(redis_client)
    for ns in ("c7", "c64", "c1024"):
        assert stored(dump, ns) == stored(dump, "c1"), ns


async def test_hot_bucket_keeps_the_earliest_and_is_still_read(redis_client: Redis) -> None:
    """A bucket holds at most ``cap`` seqs, the earliest; later articles read it (and count it in
    ``hot``) without being added; a deletion makes room again. Same as MemoryIndex."""
    hot_bucket, cap = 0xDEADBEEF_00000001, 3
    regs = [_reg(f"h{i}", bytes([i]) * 16, [hot_bucket, 1000 + i]) for i in range(7)]
    red = RedisIndex(redis_client, chunk_size=2)
    mem = MemoryIndex()
    got = await red.register("hot", regs[:6], cap)
    assert got == await mem.register("hot", regs[:6], cap)
    seqs = [p.seq for p in got]
    assert seqs == [1, 2, 3, 4, 5, 6]
    assert [p.candidates for p in got] == [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3), (1, 2, 3)]
    assert [p.hot for p in got] == [0, 0, 0, 1, 1, 1]
    shard = keys.bucket_shard("hot", hot_bucket, 16)
    field = keys.bucket_field(hot_bucket)
    assert await redis_client.hget(shard, field) == b"".join(_packed(s) for s in (1, 2, 3))
    assert await red.lookup("hot", b"\x99" * 16, [hot_bucket]) == (None, (1, 2, 3))

    assert await red.delete("hot", "h1") and await mem.delete("hot", "h1")
    (late,) = await red.register("hot", regs[6:], cap)
    assert [late] == await mem.register("hot", regs[6:], cap)
    assert (late.seq, late.candidates, late.hot) == (7, (1, 3), 0)
    assert await redis_client.hget(shard, field) == b"".join(_packed(s) for s in (1, 3, 7))


async def test_content_slot_lists_the_first_copies_up_to_its_cap(redis_client: Redis) -> None:
    text = b"\x42" * 16
    regs = [_reg(f"copy{i}", text, [i]) for i in range(COPIES_CAP + 5)]
    probes = await RedisIndex(redis_client).register("copies", regs, 8)
    assert [p.exact_seq for p in probes] == [None] + [1] * (COPIES_CAP + 4)
    slot = await redis_client.hget(keys.exact_shard("copies", text, 16), text)
    assert slot == b"".join(_packed(s) for s in range(1, COPIES_CAP + 1))


async def test_every_function_python_calls_is_in_the_library(redis_client: Redis) -> None:
    """The names the index calls are exactly those the loaded library registers (a renamed
    layout must be renamed on both sides), and none of the format-2 names survives."""
    called: set[str] = set()
    for module in (RedisIndex.__module__, Sharded.__module__):
        source = ROOT / Path(module.replace(".", "/") + ".py")
        called |= set(re.findall(r'"(neardup_\w+)"', source.read_text(encoding="utf-8")))
    await RedisIndex(redis_client).load_functions()
    (library,) = await redis_client.function_list("neardup")
    info = dict(zip(library[::2], library[1::2], strict=True))
    loaded = {dict(zip(f[::2], f[1::2], strict=True))[b"name"].decode() for f in info[b"functions"]}
    assert called == loaded
    old = {"neardup_register_many", "neardup_probe", "neardup_put_verdicts_packed"}
    assert not old & loaded


def _untimed(raw: bytes) -> tuple[Any, ...]:
    """A stored record but its registration time (each index has its own clock)."""
    r = Record.decode(raw)
    return (r.doc_id, r.kind, r.simhash, r.content, r.buckets, r.shingles.tobytes(), r.text, r.raw)


async def test_a_check_reads_the_index_once_and_agrees_with_memory(redis_client: Redis) -> None:
    """``register=False`` (the ``/check`` view): one FCALL per article, nothing else (no clock
    without retention, the alias and scheme known), and what it reads equals the memory index's:
    own seq, copies, candidates, their records and verdicts; so do the verdicts."""
    articles = _mixed_corpus(seed=5)
    mem_index, red_index = MemoryIndex(), RedisIndex(redis_client)
    mem, red = Engine(mem_index), Engine(red_index)
    rng = random.Random(9)
    for batch in _batches(articles, rng):
        await _verdicts(mem, batch)
        await _verdicts(red, batch)
    known = [a for a in articles[::9] if "\n" not in a.text]
    fresh = [Article(f"new-{i}", _mutate(a.text, 0.02, rng)) for i, a in enumerate(known)]
    policy, with_candidates = mem.default_policy, 0
    for p in prepare(policy, known + fresh):
        args = ("default", p.article.id, p.content, p.buckets)
        got, want = await red_index.check(*args), await mem_index.check(*args)
        assert (got.own, got.exact_seq, got.candidates) == (
            want.own,
            want.exact_seq,
            want.candidates,
        )
        assert got.verdicts == want.verdicts
        assert {s: _untimed(r) for s, r in got.records.items()} == {
            s: _untimed(r) for s, r in want.records.items()
        }
        assert (got.own is not None) == (p.article.id in {a.id for a in known})
        with_candidates += got.own is None and bool(got.candidates)
    assert with_candidates > len(fresh) // 2, "precondition: checks find earlier copies"
    await red.process(fresh[:1], register=False)  # the alias and scheme are read once
    for a in known + fresh:
        before = red_index.round_trips
        (r,) = await red.process([a], register=False, explain=True)
        assert red_index.round_trips - before == 1
        (m,) = await mem.process([a], register=False, explain=True)
        assert isinstance(r, Verdict) and isinstance(m, Verdict)
        assert r.to_dict() == m.to_dict()
    assert await red_index.count("default") == len(articles), "a check registers nothing"
