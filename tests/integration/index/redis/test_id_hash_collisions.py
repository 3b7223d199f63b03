"""Ids that collide on the id hash of a sharded namespace cannot hide copies, make a second
original or cut another article's entries loose.

A sharded bucket entry is its article's 8-byte id hash. While that was an unkeyed MurmurHash3,
anyone producing ids could make two collide (the public construction over two 16-byte blocks:
tests/stream/index/redis/murmur3_collisions.py), and the second id's entries were read as the
first's: (a) the attacker's id, then a victim's story, then a near-copy of it: the copy was an
original; (b) the victim first, then the attacker's id: the attacker's own copies were hidden;
(c) the attacker deleting its id left the victim's entries pointing at nothing, for good. Now the
id hash is keyed by a secret of the namespace, and each hash is claimed by one id before any
bucket lists it (an accidental collision: the id takes its next hash)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import mmh3
import orjson
import pytest
from redis.asyncio import Redis

from harness import data
from harness.chaos_index import dump_index
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import IndexUnavailableError, SchemeMismatchError
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from tests.integration.index.test_index_defects import _bucket, _reg
from tests.stream.index.redis.murmur3_collisions import colliding_ids

OLD_SEED = 0x696468  # the unkeyed id hash's seed (sharded format 1)
SCHEME = b'{"sharded_format":2,"shards":3}'


def _stories() -> tuple[str, str]:
    """Two long Reuters stories on different subjects."""
    stories = data.reuters()
    return stories[0]["text"], stories[27]["text"]


def _near_copy(text: str) -> str:
    """The story with its first sentence reworded a little and a line added, as a rewrite
    desk would: a duplicate, not an exact copy."""
    return text.replace(" the ", " a ", 3) + "\nThe story was first published on the wire."


def _pair(seed: int) -> tuple[str, str]:
    a, b = colliding_ids(random.Random(seed), prefix="wire/", suffix="/en")
    assert mmh3.hash_bytes(a.encode(), OLD_SEED) == mmh3.hash_bytes(b.encode(), OLD_SEED)
    return a, b


async def _decide(engine: Engine, ns: str, *items: tuple[str, str]) -> list[Verdict]:
    out = []
    for doc_id, text in items:
        (v,) = await engine.process([Article(doc_id, text, namespace=ns)])
        assert isinstance(v, Verdict), v
        out.append(v)
    return out


@pytest.fixture
async def engine(redis_client: Redis) -> Engine:
    await redis_client.flushdb()
    return Engine(RedisIndex(redis_client, shard_bits=6), Policy(shards=4))


async def test_a_colliding_id_first_does_not_make_a_victims_copy_an_original(
    engine: Engine,
) -> None:
    """(a): attacker's id, then the victim's story, then a near-copy of the story."""
    attacker, victim = _pair(1)
    other, story = _stories()
    _, _, copy = await _decide(
        engine, "a", (attacker, other), (victim, story), ("copy", _near_copy(story))
    )
    assert copy.verdict != "original" and copy.duplicate_of == victim


async def test_a_colliding_id_after_the_victim_keeps_its_own_copies_found(engine: Engine) -> None:
    """(b): the victim first, then the attacker's id: the attacker's copies are found."""
    attacker, victim = _pair(2)
    other, story = _stories()
    _, _, copy = await _decide(
        engine, "b", (victim, story), (attacker, other), ("copy", _near_copy(other))
    )
    assert copy.verdict != "original" and copy.duplicate_of == attacker


async def test_deleting_a_colliding_id_leaves_the_victims_entries(
    engine: Engine, redis_client: Redis
) -> None:
    """(c): the attacker deletes its own id: the victim's copies are still found, and later."""
    attacker, victim = _pair(3)
    other, story = _stories()
    await _decide(engine, "c", (attacker, other), (victim, story))
    assert await engine.index.delete("c", attacker)
    first, again = await _decide(
        engine, "c", ("copy", _near_copy(story)), ("copy2", _near_copy(story) + " Updated.")
    )
    assert first.duplicate_of == victim and again.cluster == victim
    held = await redis_client.hgetall(keys.hashes("c"))
    assert attacker.encode() not in held.values() and victim.encode() in held.values()


async def test_an_accidental_collision_takes_the_next_hash_and_deletes_spare_the_other(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every id hashes alike at first (a tiny hash put in): each id claims the first hash no
    other id holds, reads never take another id's seq for its own, a delete takes out only its
    own entries, and an id whose every hash is held is refused."""

    def tiny(doc_id: str, key: bytes, attempt: int = 0) -> bytes:
        return bytes(7) + bytes([attempt])

    monkeypatch.setattr(keys, "id_hash", tiny)
    await redis_client.flushdb()
    index = RedisIndex(redis_client, shard_bits=4)
    await index.ensure_scheme("acc", SCHEME)

    async def one(doc_id: str, buckets: Sequence[int]) -> tuple[int, tuple[int, ...]]:
        (p,) = await index.register("acc", [_reg(doc_id, doc_id.encode() * 16, buckets)], 8)
        assert p.status == "new"
        return p.seq, p.candidates

    a, _ = await one("a", [_bucket(1), _bucket(2)])
    b, seen_b = await one("b", [_bucket(1)])
    c, seen_c = await one("c", [_bucket(3)])
    assert seen_b == (a,) and seen_c == ()  # c shares a's first hash, not its buckets
    held = await redis_client.hgetall(keys.hashes("acc"))
    assert held == {tiny("a", b""): b"a", tiny("b", b"", 1): b"b", tiny("c", b"", 2): b"c"}
    assert (await index.lookup("acc", bytes(16), [_bucket(1)]))[1] == (a, b)
    assert (await index.lookup("acc", bytes(16), [_bucket(3)]))[1] == (c,)
    assert await index.delete("acc", "a")  # frees hash 0; b's and c's entries stay
    assert (await index.lookup("acc", bytes(16), [_bucket(1)]))[1] == (b,)
    assert (await index.lookup("acc", bytes(16), [_bucket(3)]))[1] == (c,)
    d, seen_d = await one("d", [_bucket(1)])  # takes the freed hash 0
    assert seen_d == (b,)
    assert await index.delete("acc", "b")
    assert (await index.lookup("acc", bytes(16), [_bucket(1)]))[1] == (d,)
    await one("e", [_bucket(4)])  # b's freed hash 1
    _, seen_f = await one("f", [_bucket(4)])  # hash 3, the last
    assert seen_f == (await index.seq_of("acc", "e"),)
    with pytest.raises(IndexUnavailableError, match="every id hash"):
        await index.register("acc", [_reg("g", b"g" * 16, [_bucket(4)])], 8)
    held = await redis_client.hgetall(keys.hashes("acc"))
    assert sorted(held.values()) == [b"c", b"d", b"e", b"f"]


async def test_each_namespace_has_its_own_secret_every_worker_reads(redis_client: Redis) -> None:
    await redis_client.flushdb()
    one, two = RedisIndex(redis_client, shard_bits=4), RedisIndex(redis_client, shard_bits=4)
    scheme = Policy(shards=3).scheme_bytes()
    await one.ensure_scheme("x", scheme)
    await two.ensure_scheme("x", scheme)
    await one.ensure_scheme("y", scheme)
    kx, ky = [await redis_client.hget(keys.meta(ns), "idkey") for ns in ("x", "y")]
    assert kx is not None and ky is not None and len(kx) == keys.ID_KEY_BYTES and kx != ky
    assert await one._id_key("x") == await two._id_key("x") == kx
    await one.ensure_scheme("single", Policy().scheme_bytes())  # the single-slot layout
    assert await redis_client.hget(keys.meta("single"), "idkey") is None
    await one.drop("x")
    await one.ensure_scheme("x", scheme)
    assert await redis_client.hget(keys.meta("x"), "idkey") not in (None, kx)


async def test_a_sharded_namespace_of_the_old_format_is_refused(redis_client: Redis) -> None:
    await redis_client.flushdb()
    mine = Policy(shards=4).scheme_bytes()
    old = orjson.loads(mine)
    del old["sharded_format"]
    stored = orjson.dumps(old, option=orjson.OPT_SORT_KEYS) + b"|shard_bits=4"
    await redis_client.hset(keys.meta("old"), "scheme", stored)
    with pytest.raises(SchemeMismatchError, match=r"sharded storage format 1.*format 2"):
        await RedisIndex(redis_client, shard_bits=4).ensure_scheme("old", mine)
    index = RedisIndex(redis_client, shard_bits=4)  # a reader that never ensured it
    for call in (
        index.register("old", [_reg("a", b"a" * 16, [_bucket(1)])], 8),
        index.lookup("old", b"a" * 16, [_bucket(1)]),
        index.check("old", "a", b"a" * 16, [_bucket(1)]),
    ):
        with pytest.raises(SchemeMismatchError, match="neardup reindex old"):
            await call
    assert (await index.stats("old")).groups == 4  # what reads no id hash still serves it
    assert await index.drop("old") >= 1 and not await redis_client.exists(keys.meta("old"))


async def test_the_chaos_dump_reads_a_sharded_namespaces_buckets_through_the_holders(
    redis_client: Redis, redis_url: str
) -> None:
    await redis_client.flushdb()
    index = RedisIndex(redis_client, shard_bits=4)
    await index.ensure_scheme("dump", SCHEME)
    regs = [_reg(f"a{i}", bytes([i]) * 16, [_bucket(i % 3), _bucket(7)]) for i in range(6)]
    probes = await index.register("dump", regs, 8)
    await index.delete("dump", "a1")
    d = dump_index(redis_url, "dump", shards=3)
    assert d.problems == []
    live = [p.seq for k, p in enumerate(probes) if k != 1]
    assert d.buckets[_bucket(7)] == live and d.buckets[_bucket(0)] == [probes[0].seq, probes[3].seq]
