"""The randomized fault checker on a few fixed seeds (``make chaos SEEDS=...`` runs many).

Each seed starts its own broker, Redis (AOF) and two workers, produces its workload under its
fault schedule and judges the outcome from the outside (:mod:`harness.chaos`). Two seeds run on
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

RUNS = ((1, "kafka"), (2, "kafka"), (3, "tansu"))  # (seed, broker)


@pytest.mark.parametrize(("seed", "broker"), RUNS, ids=[f"{s}-{b}" for s, b in RUNS])
async def test_no_fault_schedule_breaks_an_invariant(
    seed: int, broker: str, tmp_path: Path
) -> None:
    report = await run_seed(seed, tmp_path, broker=broker)
    if broker == "kafka":  # the restart happened and its offsets were compared
        assert any(f.kind == "broker_restart" for f in report.plan.faults)
        assert report.offsets, report.text()
    if not report.ok:
        pytest.fail(report.text(), pytrace=False)


async def test_the_index_dump_reads_a_real_index_and_sees_it_break(
    redis_client: Redis, redis_url: str
) -> None:
    """The checker's view of Redis, on an index the engine wrote: consistent as written, and a
    record removed behind the engine's back leaves bucket entries that the checker names."""
    url = redis_url
    docs = [a for g in groups_of_copies(4, 3, seed=5) for a in g]
    engine = Engine(RedisIndex(redis_client), Policy())
    await engine.process([Article(a["id"], a["text"], "dump") for a in docs])
    history = History(
        articles={a["id"]: "dump" for a in docs},
        groups=[],
        deleted=set(),
        poison=[],
        outputs=[],
        index={"dump": await asyncio.to_thread(dump_index, url, "dump")},
        exits=[],
    )
    dump = history.index["dump"]
    assert dump.seq_bytes == code_seq_width() and len(dump.records) == len(docs)
    assert {v.invariant for v in check(history)} - {"verdicts"} == set()
    seq = dump.ids[docs[0]["id"]]
    await redis_client.hdel(keys.docs("dump"), seq.to_bytes(dump.seq_bytes, "big"))
    history.index["dump"] = await asyncio.to_thread(dump_index, url, "dump")
    found = [v.detail for v in check(history) if v.invariant == "index"]
    assert any(f"holds seq {seq}, which has no record" in f for f in found), found
