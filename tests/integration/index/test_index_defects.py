"""The index's storage guarantees, each on MemoryIndex and on a real Redis: 64-bit sequence numbers
across 2**32 (and refused, not wrapped, at 2**53), the first *live* verbatim copy whatever the
sweep has reached, verdicts written only on their own article's seq, the scheme checked by every
registration (so losing Redis's data lets no other scheme in), one clock (Redis's) for every
worker, and deleted ids that a replay does not bring back.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from harness import data
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import (
    DeletedError,
    IndexUnavailableError,
    NeardupError,
    SchemeMismatchError,
    SeqExhaustedError,
)
from neardup.stream.index.base import MAX_SEQ, Index, Probe, Registration, StoredVerdict, Window
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Kind, Record

ROOT = Path(__file__).resolve().parents[3]
BOUNDARY = 2**32


@cache
def _clough() -> tuple[str, ...]:
    return tuple(row["text"] for row in data.clough_stevenson())


def _reg(doc_id: str, content: bytes, buckets: Sequence[int], at: float = 1000.0) -> Registration:
    rec = Record(doc_id, Kind.SHORT, at, 0, content, tuple(buckets), np.empty(0, np.uint32), "t")
    return Registration(doc_id, content, tuple(buckets), rec.encode(), at)


@dataclass
class Store:
    """An index and the few raw operations a test needs on its storage."""

    name: str
    index: Any  # MemoryIndex | RedisIndex
    client: Redis | None

    async def start_at(self, ns: str, seq: int) -> None:
        if self.client is None:
            self.index.start_at(ns, seq)
        else:
            await self.client.hset(keys.meta(ns), "seq", str(seq))

    async def record_ids(self, ns: str, seqs: Sequence[int]) -> dict[int, str]:
        raw = await self.index.records(ns, seqs)
        return {s: Record.decode(b).doc_id for s, b in raw.items()}


class NoSweep:
    """Mixin: an expiry that has not reached anything yet (the sweep runs behind)."""

    async def expire(self, ns: str, before: float, limit: int = 1000) -> int:
        return 0


class LazyMemory(NoSweep, MemoryIndex):
    pass


class LazyRedis(NoSweep, RedisIndex):
    pass


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest, redis_client: Redis) -> Store:
    if request.param == "memory":
        return Store("memory", MemoryIndex(), None)
    return Store("redis", RedisIndex(redis_client, chunk_size=4), redis_client)


def _lazy(store: Store, clock: list[float]) -> Index:
    if store.client is None:
        return LazyMemory(clock=lambda: clock[0])
    return LazyRedis(store.client)


# --------------------------------------------------------------------------- 64-bit seqs


async def test_seqs_cross_2_to_the_32_without_overwriting(store: Store) -> None:
    """A namespace whose counter is just below 2**32 registers across it: every article keeps its
    own record, probes see exactly the earlier ones, and replays are replays, not conflicts."""
    ns = "wrap"
    await store.start_at(ns, BOUNDARY - 6)
    shared = 0xABCDEF0123456789
    regs = [_reg(f"w{i}", bytes([i]) * 16, [shared, 5000 + i]) for i in range(12)]
    probes = await store.index.register(ns, regs, 64)
    seqs = [p.seq for p in probes]
    assert seqs == list(range(BOUNDARY - 5, BOUNDARY + 7))
    assert [p.candidates for p in probes] == [tuple(seqs[:i]) for i in range(12)]
    assert await store.record_ids(ns, seqs) == {s: f"w{i}" for i, s in enumerate(seqs)}
    assert await store.index.seq_of(ns, "w11") == BOUNDARY + 6
    again = await store.index.register(ns, regs, 64)
    assert [(p.status, p.seq) for p in again] == [("replay", s) for s in seqs]
    assert [p.record for p in again] == [r.record for r in regs]
    first, cands = await store.index.lookup(ns, bytes([11]) * 16, [shared])
    assert (first, cands) == (BOUNDARY + 6, tuple(seqs))


async def test_engine_across_2_to_the_32(store: Store) -> None:
    """The engine's view: copies across the boundary find their originals, replays keep their
    verdicts, and nothing is reported as a conflict."""
    await store.start_at("default", BOUNDARY - 2)
    engine = Engine(store.index)
    texts = _clough()[:3]
    batch = [Article(f"o{i}", t) for i, t in enumerate(texts)]
    batch += [Article(f"c{i}", t) for i, t in enumerate(texts)]
    got = await engine.process(batch)
    assert all(isinstance(v, Verdict) for v in got), got
    vs: list[Verdict] = got  # type: ignore[assignment]
    assert [v.seq for v in vs] == list(range(BOUNDARY - 1, BOUNDARY + 5))
    assert [v.verdict for v in vs] == ["original"] * 3 + ["duplicate"] * 3
    assert [v.duplicate_of for v in vs[3:]] == ["o0", "o1", "o2"]
    assert await engine.process(batch) == vs


async def test_seqs_stop_at_2_to_the_53(store: Store) -> None:
    """Lua's doubles are exact up to 2**53: past it a counter would round, so it is refused and
    nothing is written."""
    await store.start_at("full", MAX_SEQ - 1)
    (last,) = await store.index.register("full", [_reg("last", b"\x01" * 16, [7])], 8)
    assert last.seq == MAX_SEQ
    with pytest.raises(SeqExhaustedError):
        await store.index.register("full", [_reg("over", b"\x02" * 16, [7])], 8)
    assert await store.index.count("full") == 1
    assert await store.index.seq_of("full", "over") is None


# --------------------------------------------------------------------------- live copies


async def test_first_live_copy_is_found_when_the_first_expired_unswept(store: Store) -> None:
    """Index level: the content slot lists A (past retention, not swept) then B; a probe within
    the window answers B, without one A."""
    text, bucket = b"\x33" * 16, 0x1111
    idx = store.index
    await idx.register("live", [_reg("a", text, [bucket], at=0.0)], 1)
    await idx.register("live", [_reg("b", text, [bucket], at=150.0)], 1)
    window = Window(live_after=200.0 - 100.0)
    (c,) = await idx.register("live", [_reg("c", text, [bucket], at=200.0)], 1, window=window)
    assert (c.exact_seq, c.candidates, c.hot) == (2, (1,), 1)
    assert await idx.lookup("live", text, [bucket], live_after=100.0) == (2, (1,))
    assert await idx.lookup("live", text, [bucket]) == (1, (1,))
    # a copy registered in the same call is live too
    later = [_reg("d", b"\x44" * 16, [], at=0.0), _reg("e", b"\x44" * 16, [], at=300.0)]
    await idx.register("live", later[:1], 1)
    (e,) = await idx.register("live", later[1:], 1, window=Window(live_after=250.0))
    assert e.exact_seq is None
    f = _reg("f", b"\x44" * 16, [], at=300.0)
    (f_probe,) = await idx.register("live", [f], 1, window=Window(live_after=250.0))
    assert f_probe.exact_seq == e.seq


async def test_engine_sees_the_live_copy_behind_an_unswept_expired_one(store: Store) -> None:
    """Engine level, hot buckets (cap 1: only A is in the buckets, so they cannot rescue B): C, a
    verbatim copy of B inside the window, is B's duplicate, not a second original."""
    now = [0.0]
    index = _lazy(store, now)
    engine = Engine(index, Policy(retention_s=100.0, bucket_cap=1), clock=lambda: now[0])
    text = _clough()[5]
    (a,) = await engine.process([Article("A", text)])
    now[0] = 150.0
    (b,) = await engine.process([Article("B", text)])
    now[0] = 200.0
    (c,) = await engine.process([Article("C", text)])
    assert isinstance(a, Verdict) and isinstance(b, Verdict) and isinstance(c, Verdict)
    assert b.verdict == "original"  # A is past retention at 150
    assert (c.verdict, c.method, c.duplicate_of, c.cluster) == ("duplicate", "exact", "B", "B")


# --------------------------------------------------------------------------- verdict identity


async def test_a_verdict_is_written_only_on_its_own_articles_seq(store: Store) -> None:
    ns, idx = "ident", store.index
    a, b = await idx.register(ns, [_reg("A", b"\x01" * 16, [1]), _reg("B", b"\x02" * 16, [2])], 8)
    await idx.put_verdicts(
        ns, {a.seq: StoredVerdict("B", b"wrong"), b.seq: StoredVerdict("B", b"vb")}
    )
    assert await idx.verdicts(ns, [a.seq, b.seq]) == {b.seq: b"vb"}
    await idx.put_verdicts(ns, {a.seq: StoredVerdict("A", b"va")})
    assert await idx.verdicts(ns, [a.seq]) == {a.seq: b"va"}
    assert await idx.delete(ns, "A")
    await idx.put_verdicts(ns, {a.seq: StoredVerdict("A", b"late")})  # a late write after delete
    assert await idx.verdicts(ns, [a.seq]) == {}
    await idx.put_verdicts(ns, {99: StoredVerdict("B", b"nothing here")})
    assert await idx.verdicts(ns, [99]) == {}


# --------------------------------------------------------------------------- deleted ids


async def test_delete_then_replay_does_not_register_again(store: Store) -> None:
    engine = Engine(store.index)
    text, other = _clough()[7], _clough()[8]
    (va,) = await engine.process([Article("A", text)])
    assert isinstance(va, Verdict) and va.seq is not None
    assert await engine.delete("default", "A")
    count = await store.index.count("default")
    replay = await engine.process([Article("A", text), Article("O", other), Article("A", text)])
    assert isinstance(replay[0], DeletedError) and replay[0].reason == "deleted"
    assert isinstance(replay[2], DeletedError)
    assert isinstance(replay[1], Verdict) and replay[1].verdict == "original"
    assert replay[1].seq == va.seq + 1  # the replays took no seq
    assert await store.index.seq_of("default", "A") is None
    assert await store.index.count("default") == count + 1
    # in no bucket and no content slot: a verbatim copy under a new id is an original
    (copy,) = await engine.process([Article("A-copy", text)])
    assert isinstance(copy, Verdict) and copy.verdict == "original" and copy.candidates == 0
    if store.client is not None:
        held = [
            v
            async for key in store.client.scan_iter(match=keys.base("default") + "[xb]:*")
            for v in (await store.client.hgetall(key)).values()
        ]
        packed = va.seq.to_bytes(8, "big")
        assert all(packed not in v[i : i + 8] for v in held for i in range(0, len(v), 8))
    # a deleted id that was never indexed is remembered too (a tombstone before its message)
    assert not await engine.delete("default", "early")
    (early,) = await engine.process([Article("early", other + " more")])
    assert isinstance(early, DeletedError)


async def test_deleted_ids_are_forgotten_after_their_time(store: Store) -> None:
    idx = store.index
    assert not await idx.delete("forget", "X")
    (kept,) = await idx.register("forget", [_reg("X", b"\x05" * 16, [3])], 8)
    assert kept.status == "deleted"
    now = await idx.now("forget")
    window = Window(forget_before=now + 1.0)  # everything deleted before now+1 is forgotten
    (back,) = await idx.register("forget", [_reg("X", b"\x05" * 16, [3])], 8, window=window)
    assert (back.status, back.seq) == ("new", 1)


async def test_memory_remembers_for_the_retention_window() -> None:
    """The engine forgets a deletion once the namespace's window has passed (MemoryIndex clock)."""
    now = [1000.0]
    index = MemoryIndex(clock=lambda: now[0])
    engine = Engine(index, Policy(retention_s=100.0))
    text = _clough()[9]
    await engine.process([Article("A", text)])
    assert await engine.delete("default", "A")
    now[0] = 1099.0
    (still,) = await engine.process([Article("A", text)])
    assert isinstance(still, DeletedError)
    now[0] = 1101.0
    (back,) = await engine.process([Article("A", text)])
    assert isinstance(back, Verdict) and back.verdict == "original"


# --------------------------------------------------------------------------- differential


@st.composite
def _ops(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Random registrations (shared contents and buckets, repeated ids, buckets filled past
    their cap), deletions, sweeps and clock steps, for the memory-vs-Redis comparison."""
    n = draw(st.integers(5, 40))
    out: list[tuple[str, Any]] = []
    for _ in range(n):
        kind = draw(st.sampled_from(["reg", "reg", "reg", "del", "tick", "expire"]))
        if kind == "reg":
            ids = draw(st.lists(st.integers(0, 15), min_size=1, max_size=6))
            out.append(
                ("reg", [(i, draw(st.integers(0, 3)), draw(st.integers(0, 6))) for i in ids])
            )
        elif kind == "del":
            out.append(("del", draw(st.integers(0, 15))))
        else:
            out.append((kind, draw(st.floats(1.0, 60.0))))
    return out


def _bucket(i: int) -> int:
    """Bucket ids spread over the top bits, so that they fall in different shard keys (and
    shard groups of a sharded namespace)."""
    return (i * 0x9E3779B97F4A7C15) % 2**64


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ops=_ops(),
    start=st.sampled_from([0, BOUNDARY - 3]),
    shards=st.sampled_from([1, 1, 2, 3, 5]),
    shard_bits=st.sampled_from([1, 3, 16]),
    chunk=st.integers(1, 5),
)
async def test_memory_and_redis_agree_on_random_histories(
    redis_client: Redis,
    ops: list[tuple[str, Any]],
    start: int,
    shards: int,
    shard_bits: int,
    chunk: int,
) -> None:
    """Whatever the history of registrations, deletions, sweeps and time (with a retention
    window and a counter near 2**32), both stores give the same probes and lookups, on a
    single-slot namespace and on a sharded one (``shards`` > 1: buckets in shard groups,
    registered in steps; neardup.stream.index.redis.sharded)."""
    await redis_client.flushdb()
    ns, cap, retention = "diff", 2, 50.0
    mem, red = MemoryIndex(), RedisIndex(redis_client, shard_bits=shard_bits, chunk_size=chunk)
    if shards > 1:
        await red.ensure_scheme(ns, orjson.dumps({"shards": shards, "sharded_format": 2}))
    mem.start_at(ns, start)
    await redis_client.hset(keys.meta(ns), "seq", str(start))
    clock = 1000.0
    for kind, arg in ops:
        if kind == "tick":
            clock += arg
        elif kind == "expire":
            assert await mem.expire(ns, clock - arg) == await red.expire(ns, clock - arg)
        elif kind == "del":
            assert await mem.delete(ns, f"id{arg}") == await red.delete(ns, f"id{arg}")
        else:
            regs = [
                _reg(f"id{i}", bytes([c]) * 16, [_bucket(b), _bucket(b + 1), _bucket(9)], clock)
                for i, c, b in arg
            ]
            window = Window(live_after=clock - retention)
            got_mem: list[Probe] = await mem.register(ns, regs, cap, window=window)
            got_red: list[Probe] = await red.register(ns, regs, cap, window=window)
            assert got_red == got_mem
    for b in range(10):
        content, live = bytes([b % 4]) * 16, clock - retention
        want = await mem.lookup(ns, content, [_bucket(b)], live_after=live)
        assert await red.lookup(ns, content, [_bucket(b)], live_after=live) == want
    if shards > 1:  # (the layout the test meant)
        assert not await redis_client.keys(f"{keys.base(ns)}b:*")


# --------------------------------------------------------------------------- the scheme


async def _retrying(engine: Engine, articles: list[Article]) -> list[Verdict | NeardupError]:
    """What the worker does with a retriable error: try again (a few times, no sleeping)."""
    for _ in range(3):
        try:
            return await engine.process(articles)
        except IndexUnavailableError:
            continue
    return await engine.process(articles)


async def test_data_loss_lets_no_other_scheme_in(redis_client: Redis) -> None:
    """Redis loses everything (data and functions) between two registrations: the worker that
    comes back re-records its scheme with its next registration, and a worker with another
    scheme is refused after it, whatever each had cached."""
    text = _clough()[0]
    first = Engine(RedisIndex(redis_client))
    other = Engine(RedisIndex(redis_client), Policy(threshold=0.6))
    (v,) = await first.process([Article("a", text)])
    assert isinstance(v, Verdict)
    (refused,) = await other.process([Article("b", text)])
    assert isinstance(refused, SchemeMismatchError)
    await redis_client.flushall()
    await redis_client.function_flush("SYNC")
    (again,) = await _retrying(first, [Article("a2", text)])  # reloads the lost library
    assert isinstance(again, Verdict) and again.verdict == "original"
    (still_refused,) = await _retrying(other, [Article("b2", text)])
    assert isinstance(still_refused, SchemeMismatchError)
    assert await redis_client.hget(keys.meta("default"), "scheme") == (
        Policy().scheme_bytes() + b"|shard_bits=16"
    )


async def test_old_storage_format_is_refused_with_what_to_do(redis_client: Redis) -> None:
    """A namespace indexed under format 2 (4-byte seqs) is refused, and the message says why and
    what to do."""
    old = json.loads(Policy().scheme_bytes())
    old["format"] = 2
    stored = json.dumps(old, sort_keys=True, separators=(",", ":")).encode() + b"|shard_bits=16"
    await redis_client.hset(keys.meta("legacy"), "scheme", stored)
    (refused,) = await Engine(RedisIndex(redis_client)).process(
        [Article("a", _clough()[0], namespace="legacy")]
    )
    assert isinstance(refused, SchemeMismatchError)
    message = str(refused)
    assert "format 2" in message and "format 3" in message
    assert "new namespace" in message and "flush" in message
    mem = MemoryIndex()
    await mem.ensure_scheme("legacy", stored.split(b"|")[0])
    with pytest.raises(SchemeMismatchError, match="format 2"):
        await mem.ensure_scheme("legacy", Policy().scheme_bytes())


# --------------------------------------------------------------------------- one clock

_FAST_WORKER = """
import json, sys, time
real = time.time
time.time = lambda: real() + 3600.0  # this worker's clock runs an hour fast
import asyncio
from redis.asyncio import Redis
from neardup.stream.engine.engine import Engine
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy

async def main() -> None:
    client = Redis.from_url(sys.argv[1])
    engine = Engine(RedisIndex(client), Policy(retention_s=1800.0))
    out = await engine.process([Article(sys.argv[2], sys.argv[3])])
    print(json.dumps([v.to_dict() for v in out]))
    await client.aclose()

asyncio.run(main())
"""


async def test_a_worker_with_a_fast_clock_expires_and_matches_as_the_others(
    redis_client: Redis, redis_url: str
) -> None:
    """Retention and liveness use Redis's clock: a worker whose own clock runs an hour fast (its
    ``time.time`` patched before the engine is imported, as a process with a skewed clock has it)
    neither sweeps nor ignores an article that the other workers keep live."""
    text = _clough()[3]
    engine = Engine(RedisIndex(redis_client), Policy(retention_s=1800.0))
    (a,) = await engine.process([Article("A", text)])
    assert isinstance(a, Verdict)
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _FAST_WORKER,
        redis_url,
        "B",
        text,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(worker.communicate(), timeout=120)
    assert worker.returncode == 0
    (b,) = json.loads(out)
    assert (b["verdict"], b["duplicate_of"]) == ("duplicate", "A")
    assert await redis_client.hlen(keys.docs("default")) == 2
    (c,) = await engine.process([Article("C", text)])
    assert isinstance(c, Verdict) and (c.verdict, c.duplicate_of) == ("duplicate", "A")
