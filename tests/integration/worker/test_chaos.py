"""The randomized fault checker on a few fixed seeds (``make chaos SEEDS=...`` runs many).

Each seed starts its own broker, Redis (AOF) and two workers, produces its workload under its
fault schedule and judges the outcome from the outside (:mod:`harness.chaos`). A fourth seed runs
the namespace sharded (its buckets in 4 shard groups, registered in steps). Three seeds run on
Apache Kafka, the production broker, whose schedule includes a broker SIGKILLed and restarted on
its log directory; one on Tansu, which cannot take that fault (memory storage). A failure prints
the seed's schedule and every violated invariant; ``make chaos SEEDS=N BROKER=B`` reproduces it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from redis.asyncio import Redis

from harness.chaos import run_seed
from harness.chaos_check import History, check
from harness.chaos_index import code_seq_width, dump_index
from harness.corpus import groups_of_copies
from neardup.stream.engine.engine import Engine
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy

# (seed, broker, shard groups of the namespace)
RUNS = ((1, "kafka", 1), (2, "kafka", 1), (3, "tansu", 1), (4, "kafka", 4))


@pytest.mark.parametrize(
    ("seed", "broker", "shards"),
    RUNS,
    ids=[f"{s}-{b}" + ("-sharded" if n > 1 else "") for s, b, n in RUNS],
)
async def test_no_fault_schedule_breaks_an_invariant(
    seed: int, broker: str, shards: int, tmp_path: Path
) -> None:
    report = await run_seed(seed, tmp_path, broker=broker, shards=shards)
    if broker == "kafka":  # the restart happened and its offsets were compared
        assert any(f.kind == "broker_restart" for f in report.plan.faults)
        assert report.offsets, report.text()
    if not report.ok:
        pytest.fail(report.text(), pytrace=False)


@pytest.mark.parametrize("shards", [1, 4], ids=["one-slot", "sharded"])
async def test_the_index_dump_reads_a_real_index_and_sees_it_break(
    redis_client: Redis, redis_url: str, shards: int
) -> None:
    """The checker's view of Redis, on an index the engine wrote: consistent as written, and a
    record removed behind the engine's back leaves bucket entries that the checker names."""
    url = redis_url
    await redis_client.flushdb()
    docs = [a for g in groups_of_copies(4, 3, seed=5) for a in g]
    engine = Engine(RedisIndex(redis_client), Policy(shards=shards))
    await engine.process([Article(a["id"], a["text"], "dump") for a in docs])
    history = History(
        articles={a["id"]: "dump" for a in docs},
        groups=[],
        deleted=set(),
        poison=[],
        outputs=[],
        index={"dump": await asyncio.to_thread(dump_index, url, "dump", shards=shards)},
        exits=[],
    )
    dump = history.index["dump"]
    assert dump.seq_bytes == code_seq_width() and len(dump.records) == len(docs)
    assert dump.buckets and not dump.unregistered
    assert {v.invariant for v in check(history)} - {"verdicts"} == set()
    seq = dump.ids[docs[0]["id"]]
    await redis_client.hdel(keys.docs("dump"), seq.to_bytes(dump.seq_bytes, "big"))
    history.index["dump"] = await asyncio.to_thread(dump_index, url, "dump", shards=shards)
    found = [v.detail for v in check(history) if v.invariant == "index"]
    assert any(f"holds seq {seq}, which has no record" in f for f in found), found
