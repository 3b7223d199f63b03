"""A sharded namespace (``shards`` > 1: buckets on other slots than the rest) on a real Redis:
its keys are where the layout says, what needs all of a namespace (stats, drop, deletion,
expiry, the read-only check) covers its shard groups, and a worker paused before any step of
its registration leaves one original. (Its probes equal the in-process index's whatever the
history: the differential test in tests/integration/index/test_index_defects.py.)"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from redis.asyncio import Redis

from harness import data
from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys, sharded
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.index.redis.sharded import Layout, Sharded
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from tests.integration.engine.test_concurrency import ORDERED, _chains, _groups
from tests.integration.index.test_index_defects import _bucket, _reg

# a scheme naming 3 shard groups of the current sharded format (the index reads only those)
SCHEME = b'{"sharded_format":2,"shards":3}'


async def test_buckets_live_in_the_shard_groups_and_drop_removes_them(redis_client: Redis) -> None:
    await redis_client.flushdb()
    index = RedisIndex(redis_client, shard_bits=4)
    await index.ensure_scheme("wide", SCHEME)
    regs = [_reg(f"a{i}", bytes([i]) * 16, [_bucket(i), _bucket(i + 20)]) for i in range(12)]
    await index.register("wide", regs, 8)
    names = sorted(k.decode() for k in await redis_client.keys("*"))
    buckets = [k for k in names if ":b:" in k]
    assert {k.split("}")[0] for k in buckets} == {"nd:{wide/0", "nd:{wide/1", "nd:{wide/2"}
    for k in buckets:  # shard s lives in group s mod 3
        shard = int(k.rsplit(":", 1)[1], 16)
        assert k.startswith(f"nd:{{wide/{shard % 3}}}:")
    assert await redis_client.hlen(keys.hashes("wide")) == 12
    stats = await index.stats("wide")
    assert stats.documents == 12 and stats.bytes > 0 and stats.groups == 3
    assert await index.drop("wide") == len(names) - 1  # all but the registry, nd:namespaces
    assert await redis_client.keys("*") == []  # (the registry went with its last member)


async def test_deleted_article_leaves_no_entry_and_a_replay_adds_none(redis_client: Redis) -> None:
    await redis_client.flushdb()
    index = RedisIndex(redis_client, shard_bits=4)
    await index.ensure_scheme("wide", SCHEME)
    a, b = _reg("a", b"a" * 16, [_bucket(1), _bucket(2)]), _reg("b", b"b" * 16, [_bucket(1)])
    (pa,) = await index.register("wide", [a], 8)
    (pb,) = await index.register("wide", [b], 8)
    assert pb.candidates == (pa.seq,)
    (again,) = await index.register("wide", [b], 8)
    assert again.status == "replay"
    entries = await redis_client.hget(
        keys.bucket_shard_key("wide", _bucket(1) >> 60, 3), keys.bucket_field(_bucket(1))
    )
    key = await redis_client.hget(keys.meta("wide"), "idkey")
    assert len(key) == keys.ID_KEY_BYTES
    assert entries == keys.id_hash("a", key) + keys.id_hash("b", key)  # each once
    assert await index.delete("wide", "a")
    assert await index.lookup("wide", b"z" * 16, [_bucket(1), _bucket(2)]) == (None, (pb.seq,))
    entries = await redis_client.hget(
        keys.bucket_shard_key("wide", _bucket(1) >> 60, 3), keys.bucket_field(_bucket(1))
    )
    assert entries == keys.id_hash("b", key)
    assert await redis_client.hget(keys.hashes("wide"), keys.id_hash("a", key)) is None
    (refused,) = await index.register("wide", [a], 8)
    assert refused.status == "deleted"
    assert not await redis_client.hexists(
        keys.bucket_shard_key("wide", _bucket(2) >> 60, 3), keys.bucket_field(_bucket(2))
    )


async def test_an_entry_without_a_seq_is_never_a_candidate(redis_client: Redis) -> None:
    """A worker that added an article to its buckets and died before taking its seq: the entry
    is ignored by every reader, and the redelivered article registers as new."""
    await redis_client.flushdb()
    index = RedisIndex(redis_client, shard_bits=4)
    await index.ensure_scheme("wide", SCHEME)
    ghost = _reg("ghost", b"g" * 16, [_bucket(5)])
    key = keys.bucket_shard_key("wide", _bucket(5) >> 60, 3)
    idkey = await redis_client.hget(keys.meta("wide"), "idkey")
    ghost_hash = keys.id_hash("ghost", idkey)
    await redis_client.hset(keys.hashes("wide"), ghost_hash, "ghost")  # claimed, no seq
    await redis_client.hset(key, keys.bucket_field(_bucket(5)), ghost_hash)
    (later,) = await index.register("wide", [_reg("later", b"l" * 16, [_bucket(5)])], 8)
    assert later.candidates == ()
    assert await index.lookup("wide", b"q" * 16, [_bucket(5)]) == (None, (later.seq,))
    (back,) = await index.register("wide", [ghost], 8)
    assert back.status == "new" and back.seq == later.seq + 1 and back.candidates == (later.seq,)


@pytest.mark.parametrize("shards", [1, 4])
async def test_engine_verdicts_and_check_on_a_sharded_namespace(
    redis_client: Redis, shards: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine on a sharded namespace gives the in-process index's verdicts (batches of
    near-copies and chains), and the read-only check finds what registration found (the id
    hashes resolved a few per command)."""
    monkeypatch.setattr(sharded, "RESOLVE_CHUNK", 3)
    await redis_client.flushdb()
    policy = Policy(shards=shards)
    groups, chains = _groups(6, seed=3), _chains(2, seed=3)
    arts = [Article(a.id, a.text, namespace="sh") for g in groups + chains for a in g]
    red = Engine(RedisIndex(redis_client, shard_bits=6), policy)
    mem = Engine(MemoryIndex(), policy)
    got, want = [], []
    for lo in range(0, len(arts), 7):
        got += await red.process(arts[lo : lo + 7])
        want += await mem.process(arts[lo : lo + 7])
    assert all(isinstance(v, Verdict) for v in got)
    assert [v.to_dict() for v in got] == [v.to_dict() for v in want]  # type: ignore[union-attr]
    originals = [v for v in got if isinstance(v, Verdict) and v.verdict == "original"]
    assert len(originals) == len(groups) + len(chains)  # in order, C copies B, B copies A
    probe = Article("probe", groups[2][3].text + " again", namespace="sh")
    (checked,) = await red.process([probe], register=False)
    assert isinstance(checked, Verdict) and checked.cluster == groups[2][0].id
    if shards > 1:
        assert await redis_client.keys("nd:{sh/*") and not await redis_client.keys("nd:{sh}:b:*")


class _Paused(Sharded):
    """A sharded namespace's calls that stop before one step, until released: the steps of
    another worker then run in that gap."""

    def __init__(self, index: RedisIndex, layout: Layout, step: str, gate: _Gate) -> None:
        super().__init__(index, layout)
        self._step, self._gate = step, gate

    async def _pause(self, step: str) -> None:
        if step == self._step and not self._gate.release.is_set():
            self._gate.paused.set()
            await self._gate.release.wait()

    async def _on_groups(
        self, calls: list[tuple[str, list[Any], list[int]]], *, wait: bool = False
    ) -> Any:
        await self._pause("add" if calls and "shard_add64" in calls[0][1][1] else "read")
        return await super()._on_groups(calls, wait=wait)

    async def _register_home(self, *args: Any) -> Any:
        await self._pause("seq")
        return await super()._register_home(*args)

    async def _resolve(self, run: bytes) -> Any:
        await self._pause("resolve")
        return await super()._resolve(run)


class _Gate:
    def __init__(self) -> None:
        self.paused, self.release = asyncio.Event(), asyncio.Event()


class _PausingIndex(RedisIndex):
    def __init__(self, client: Redis, step: str, gate: _Gate) -> None:
        super().__init__(client, shard_bits=6)
        self._step, self._gate = step, gate

    async def _sharded(self, ns: str) -> Sharded | None:
        plain = await super()._sharded(ns)
        if plain is None:
            return None
        return _Paused(self, Layout(ns, self._shards[ns], self._bits), self._step, self._gate)


def _copies(kind: str) -> tuple[str, str]:
    """Two texts the engine finds through their buckets (neither a verbatim copy, which the
    home slot's content slot finds): a story and a lightly edited copy (word shingles), a
    Chinese review and its copy cut short (character shingles), a short comment and its copy
    with a tracking tag (the short-text path)."""
    if kind == "story":
        story = _groups(1, seed=11)[0]
        return story[0].text, story[2].text
    if kind == "zh":
        review = next(r["text"] for r in data.zh_reviews() if 20 <= len(r["text"]) <= 60)
        return review, review[:-3]
    comment = " ".join(data.clough_stevenson()[3]["text"].split()[:22])
    return comment, comment + " (via @wire)"


@pytest.mark.parametrize("kind", ["story", "zh", "comment"])
@pytest.mark.parametrize("step", ["add", "seq", "read", "resolve"])
async def test_a_worker_paused_before_any_step_leaves_one_original(
    redis_url: str, redis_client: Redis, step: str, kind: str
) -> None:
    """Worker B stops before one step of its registration while worker A registers and decides
    a copy of the same text, then B goes on: one original, and the verdicts of deciding the
    two in seq order. Taking the seq before adding to the buckets (the order the model refutes)
    makes both originals when B stops before its adding step."""
    await redis_client.flushdb()
    policy = dataclasses.replace(ORDERED, shards=4)
    a, b = (Article(i, t, namespace="race") for i, t in zip("ab", _copies(kind), strict=True))
    gate = _Gate()
    other = Redis.from_url(redis_url)
    try:
        slow = asyncio.create_task(Engine(_PausingIndex(other, step, gate), policy).process([b]))
        await asyncio.wait_for(gate.paused.wait(), 10)
        (va,) = await Engine(RedisIndex(redis_client, shard_bits=6), policy).process([a])
        gate.release.set()
        (vb,) = await slow
    finally:
        await other.aclose()
    assert isinstance(va, Verdict) and isinstance(vb, Verdict)
    assert sorted([va.verdict, vb.verdict]) == ["near_duplicate", "original"], (va, vb)
    first, second = sorted([(va.seq, a), (vb.seq, b)], key=lambda x: x[0])
    serial = await Engine(MemoryIndex(), policy).process([first[1], second[1]])
    got = {va.id: va, vb.id: vb}
    for want in serial:
        assert isinstance(want, Verdict)
        mine = got[want.id].to_dict()
        assert {**mine, "namespace": want.namespace} == want.to_dict()


async def test_an_article_expired_while_it_is_sent_again_takes_no_seq_before_its_buckets(
    redis_client: Redis,
) -> None:
    """A replay is read as registered, so step 1 adds nothing for it; if retention expires it
    before step 2, it would register anew in no bucket, and a later copy would not find it.
    The home slot refuses to register it until it is in its buckets: then it is found."""
    await redis_client.flushdb()
    plain = RedisIndex(redis_client, shard_bits=6)
    await plain.ensure_scheme("wide", SCHEME)
    old = _reg("old", b"o" * 16, [_bucket(3), _bucket(4)], at=10.0)
    (first,) = await plain.register("wide", [old], 8)
    gate = _Gate()
    index = _PausingIndex(redis_client, "seq", gate)
    again = asyncio.create_task(
        index.register("wide", [_reg("old", b"o" * 16, [_bucket(3), _bucket(4)], at=500.0)], 8)
    )
    await asyncio.wait_for(gate.paused.wait(), 10)
    assert await plain.expire("wide", 100.0) == 1  # swept
    gate.release.set()
    (back,) = await again
    assert back.status == "new" and back.seq > first.seq
    later = _reg("later", b"l" * 16, [_bucket(4)], at=600.0)
    (probe,) = await plain.register("wide", [later], 8)
    assert probe.candidates == (back.seq,)
