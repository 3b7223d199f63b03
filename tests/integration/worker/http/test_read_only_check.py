"""A read-only check (``/check`` with ``register: false``) reads and writes nothing but its
answer: every Redis key byte-identical after it, in a namespace that exists and in one that
does not (which stays unknown: not recorded, not listed), on a real Redis.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from harness.pages import generate
from neardup.stream.engine.engine import Engine
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict


async def _snapshot(client: Redis) -> dict[bytes, bytes | None]:
    """Every key and its serialised value (``DUMP``: type, encoding and content)."""
    return {k: await client.dump(k) for k in sorted(await client.keys("*"))}


def _pages() -> list[Article]:
    docs, _ = generate(seed=13)
    return [
        Article(d["id"], d["text"], "news", url=d["url"], source=d["source"]) for d in docs[:60]
    ]


_WORDS = st.sampled_from(["budget", "vote", "bridge", "council", "harvest", "rates", "the"])
_TEXTS = st.lists(_WORDS, min_size=1, max_size=80).map(" ".join)


async def test_a_read_only_check_writes_nothing(redis_client: Redis) -> None:
    engine = Engine(RedisIndex(redis_client))
    pages = _pages()
    await engine.process(pages)
    before = await _snapshot(redis_client)
    registry = await redis_client.smembers("nd:namespaces")
    copy = Article("check-1", pages[5].text, "news", url=pages[5].url, source=pages[5].source)
    (v,) = await engine.process([copy], register=False)
    assert isinstance(v, Verdict) and v.duplicate_of == pages[5].id
    (u,) = await engine.process([Article("check-2", pages[5].text, "invented")], register=False)
    assert isinstance(u, Verdict) and u.verdict == "original"
    assert await _snapshot(redis_client) == before
    assert await redis_client.smembers("nd:namespaces") == registry
    assert await engine.namespace_known("news")
    assert not await engine.namespace_known("invented")
    assert "invented" not in await engine.index.namespaces()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(texts=st.lists(_TEXTS, min_size=1, max_size=4), ns=st.sampled_from(["news", "other-ns"]))
async def test_any_read_only_check_leaves_every_key_byte_identical(
    redis_client: Redis, texts: list[str], ns: str
) -> None:
    await redis_client.flushdb()
    engine = Engine(RedisIndex(redis_client))
    await engine.process([Article(f"seed-{i}", t, "news") for i, t in enumerate(texts)])
    before = await _snapshot(redis_client)
    for i, t in enumerate(texts):
        got = await engine.process([Article(f"c-{i}", f"{t} checked", ns)], register=False)
        assert all(isinstance(v, Verdict) for v in got)
    assert await _snapshot(redis_client) == before


async def test_what_a_worker_keeps_per_namespace_is_bounded(redis_client: Redis) -> None:
    """A producer may name any namespace: the schemes a worker remembers having checked (the
    engine's and the Redis client's) stay within their bounds, and a namespace forgotten is
    checked again and still refused under another scheme."""
    from neardup.stream.engine import targets as engine_module
    from neardup.stream.errors import SchemeMismatchError
    from neardup.stream.index.redis import index as redis_module
    from neardup.stream.namespaces.policy import Policy

    index = RedisIndex(redis_client)
    engine = Engine(index)
    for i in range(engine_module._TARGETS_KEPT + 40):
        (v,) = await engine.process([Article(f"a{i}", "one two three four five", f"ns-{i}")])
        assert isinstance(v, Verdict)
    assert len(engine.targets.checked) == engine_module._TARGETS_KEPT
    assert len(index._schemes) <= redis_module.SCHEMES_KEPT
    assert "ns-0" not in engine.targets.checked  # the first, forgotten: its scheme is read again
    other = Engine(RedisIndex(redis_client), Policy(threshold=0.5, shingle_size=4))
    (refused,) = await other.process([Article("b", "one two three four five", "ns-0")])
    assert isinstance(refused, SchemeMismatchError)
    (again,) = await engine.process([Article("a0-copy", "one two three four five", "ns-0")])
    assert isinstance(again, Verdict) and (again.verdict, again.duplicate_of) == ("duplicate", "a0")
