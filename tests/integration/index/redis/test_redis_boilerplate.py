"""Boilerplate learning on a real Redis and a real Redis Cluster: the line counts live in the
index, shared by every worker, and give the memory store's verdicts; two bounded generations.

The pages and their expected verdicts are the unit tests' (tests/stream/engine/test_boilerplate.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from redis.asyncio import Redis, RedisCluster

from harness.pages import generate
from harness.poisoning import SHAPES, Shape
from neardup.stream.engine.engine import Engine
from neardup.stream.index.base import StoredVerdict
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from tests.integration.index.test_index_defects import _reg
from tests.stream.engine.test_boilerplate import (
    COPIED,
    COURIER,
    LATEST_JOINS,
    LEDGER,
    _article,
    _early_original_pages,
    _latest_pages,
    _paragraph_pages,
    _site_pages,
    _syndicated_early,
    _verdicts,
)
from tests.stream.engine.test_poisoning import attack, expected


def _stream(ns: str) -> list[Article]:
    late = [_article(f"c{i}", "courier.example", COURIER, i) for i in (7, 8, 9)]
    pages = [*_site_pages(), *late, _article("l-copy7", "ledger.example", LEDGER, 7)]
    return [Article(a.id, a.text, ns, url=a.url) for a in pages]


@pytest.mark.parametrize("shards", [1, 4], ids=["one-slot", "sharded"])
async def test_two_workers_on_redis_learn_together_and_match_the_memory_store(
    redis_client: Redis, shards: int
) -> None:
    """Two engines (two workers) share one Redis: the second sees what the first counted (in a
    sharded namespace too: the counts live on its home slot)."""
    await redis_client.flushdb()
    policy = Policy(shards=shards)
    want = await _verdicts(Engine(MemoryIndex()), _stream("pages"))
    one, two = (Engine(RedisIndex(redis_client), policy) for _ in range(2))
    got = {}
    for i, article in enumerate(_stream("pages")):
        got |= await _verdicts(one if i % 2 else two, [article])
    assert got == want
    assert got["c-syndicated"].duplicate_of == "l3" and got["l-copy7"].duplicate_of == "c7"


async def test_line_counts_keep_two_bounded_generations_in_redis(redis_client: Redis) -> None:
    index = RedisIndex(redis_client)
    every = b"T" * 16
    for call in range(40):
        once = [bytes([call, i]) * 8 for i in range(3)]
        await index.add_lines("gen", [every, *once], cap=10)
        sizes = [await redis_client.hlen(k) for k in keys.lines("gen")]
        assert sum(sizes) <= 2 * (10 + 4)
    assert await index.line_counts("gen", [every]) == [4]  # as the memory store counts
    assert await index.line_counts("gen", [bytes([0, 0]) * 8, b"never seen here!"]) == [0, 0]
    assert await redis_client.hget(keys.meta("gen"), "lines") in (b"a", b"b")


async def test_on_a_cluster_namespaces_on_every_primary_learn_as_the_memory_store(
    cluster_client: RedisCluster,
) -> None:
    names = [f"pages{i}" for i in range(6)]  # slots spread over the three primaries
    index = RedisIndex(cluster_client)
    engine = Engine(index)
    for ns in names:
        want = await _verdicts(Engine(MemoryIndex()), _stream(ns))
        assert await _verdicts(engine, _stream(ns)) == want
    owners = {cluster_client.get_node_from_key(keys.meta(ns)).name for ns in names}
    assert len(owners) >= 2


async def test_verdicts_and_the_lines_they_teach_are_stored_in_one_step(
    redis_client: Redis,
) -> None:
    """A batch's lines are counted in the call that stores its verdicts, as in memory: a replay
    finds both or neither."""
    line = b"L" * 16
    for index in (MemoryIndex(), RedisIndex(redis_client)):
        (probe,) = await index.register("one-step", [_reg("a", b"c" * 16, [1, 2])], cap=100)
        await index.put_verdicts("one-step", {probe.seq: StoredVerdict("a", b"v")}, [line], 10)
        assert await index.line_counts("one-step", [line]) == [1]
        assert await index.verdicts("one-step", [probe.seq]) == {probe.seq: b"v"}
        await index.put_verdicts("one-step", {}, [line], 10)  # no verdicts: the lines alone
        assert await index.line_counts("one-step", [line]) == [2]


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_copier_cannot_hide_a_copy_by_teaching_on_redis(
    redis_client: Redis, shape: Shape
) -> None:
    """The poisoning attack of tests/stream/engine/test_poisoning.py on a real Redis, in each of the
    attacker's shapes: every copy is still `duplicate_of` its victim, as in memory."""
    want = await attack(Engine(MemoryIndex()), poisoned=True, shape=shape)
    got = await attack(Engine(RedisIndex(redis_client)), poisoned=True, shape=shape)
    assert got == want
    assert {k: v.duplicate_of for k, v in got.items()} == expected()


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_copier_cannot_hide_a_copy_by_teaching_on_a_cluster(
    cluster_client: RedisCluster, shape: Shape
) -> None:
    want = await attack(Engine(MemoryIndex()), poisoned=True, shape=shape)
    got = await attack(Engine(RedisIndex(cluster_client)), poisoned=True, shape=shape)
    assert got == want
    assert {k: v.duplicate_of for k, v in got.items()} == expected()


async def test_passages_of_a_paragraph_footer_are_learned_on_redis_and_a_cluster(
    redis_client: Redis, cluster_client: RedisCluster
) -> None:
    """The one-paragraph footer and one-line box pages: the passages' counts live in the index
    as the lines' do, and give the memory store's verdicts on Redis and on a cluster."""
    want = await _as_in_memory(_paragraph_pages(), "para", redis_client, cluster_client)
    assert want["c-syndicated"].duplicate_of == "l3"


async def _as_in_memory(
    pages: list[Article], ns: str, redis_client: Redis, cluster_client: RedisCluster
) -> dict[str, Verdict]:
    """The pages' verdicts in memory, after checking that Redis and a cluster give them."""
    want = await _verdicts(Engine(MemoryIndex()), pages)
    for client, name in ((redis_client, ns), (cluster_client, f"{ns}-cluster")):
        arts = [Article(a.id, a.text, name, url=a.url) for a in pages]
        got = await _verdicts(Engine(RedisIndex(client)), arts)
        assert got == {k: replace(v, namespace=name) for k, v in want.items()}
    return want


async def test_a_batch_of_pages_that_leave_lines_out_does_not_exhaust_the_connections(
    redis_client: Redis, redis_url: str
) -> None:
    """Every page that left lines out also looks up its whole text's bands; 400 pages in one
    batch made 400 concurrent reads, past redis-py's pool of 100 connections (it raises rather
    than waits): the batch failed, and a worker would retry it for ever. The reads go a bounded
    number at a time, and the verdicts are the memory store's."""
    docs, _ = generate(seed=13)
    pages = [
        Article(d["id"], d["text"], "many", url=d["url"], source=d["source"]) for d in docs[:400]
    ]
    want = await Engine(MemoryIndex()).process(pages)
    client = Redis.from_url(redis_url, max_connections=100)
    try:
        got = await Engine(RedisIndex(client)).process(pages)
    finally:
        await client.aclose()
    assert got == want
    assert sum(v.verdict != "original" for v in got if isinstance(v, Verdict)) > 0


async def test_a_page_printed_before_its_template_was_learned_is_found_on_redis_and_a_cluster(
    redis_client: Redis, cluster_client: RedisCluster
) -> None:
    """The earlier page less what its source repeats now is read from the index's counts:
    the memory store's verdicts on Redis and on a cluster."""
    want = await _as_in_memory(_early_original_pages(), "early", redis_client, cluster_client)
    assert want["c-syndicated"].duplicate_of == "l-first"


async def test_a_page_registered_with_its_template_is_found_through_its_anchors_on_redis_and_a_cluster(  # noqa: E501
    redis_client: Redis, cluster_client: RedisCluster
) -> None:
    """A page's anchors are buckets like any other: on Redis and on a cluster the copy of a
    page registered before its site's template was learned meets it as in memory."""
    pages, first, second = _syndicated_early("paragraph")
    want = await _as_in_memory(pages, "anchors", redis_client, cluster_client)
    assert (want[second].verdict, want[second].duplicate_of) == ("near_duplicate", first)


@pytest.mark.parametrize("sep", LATEST_JOINS)
async def test_a_box_of_the_sites_latest_headlines_is_left_out_on_redis_and_a_cluster(
    sep: str, redis_client: Redis, cluster_client: RedisCluster
) -> None:
    """The runs of words and the commas' items of a one-line box are counted in the index as
    lines are, and a close copy teaches its own template there too: the memory store's
    verdicts on Redis and on a cluster, the copies found."""
    name = {" | ": "bar", ", ": "comma", " ": "space"}[sep]
    want = await _as_in_memory(_latest_pages(sep), f"latest-{name}", redis_client, cluster_client)
    assert want["c-copy13"].similarity == 1.0
    assert {k: v.duplicate_of for k, v in want.items() if k.startswith("c-copy")} == {
        f"c-copy{i}": f"l{i}" for i in COPIED
    }
