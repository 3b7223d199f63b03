"""The read API's answers, exact, on the memory store (on Redis and Redis Cluster:
tests/integration/index/redis/test_read_api_redis.py; over HTTP, fuzzed: test_read_api_http.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from neardup.stream.engine.engine import Engine
from neardup.stream.index.base import Index
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article
from neardup.stream.worker.http import read_api

STORY = " ".join(f"w{i}" for i in range(120))


def _stream(ns: str = "news") -> list[Article]:
    return [
        Article("a", STORY, ns),
        Article("b", STORY + " extra words at the end", ns),
        Article("other", " ".join(f"z{i}" for i in range(120)), ns),
        Article("c", STORY, ns),  # a verbatim copy
    ]


async def _indexed(index: Index, articles: Sequence[Article], times: Sequence[float]) -> None:
    now = iter(times)
    engine = Engine(index, clock=lambda: next(now))
    for a in articles:
        await engine.process([a])


async def test_an_article_its_verdict_cluster_and_text() -> None:
    index = MemoryIndex()
    await _indexed(index, _stream(), [10.0, 20.0, 30.0, 40.0])
    got = await read_api.article(index, "news", "b")
    assert got is not None and got["verdict"] is not None
    assert {k: got[k] for k in ("id", "namespace", "seq", "cluster", "registered_at", "text")} == {
        "id": "b",
        "namespace": "news",
        "seq": 2,
        "cluster": "a",
        "registered_at": 20.0,
        "text": STORY + " extra words at the end",
    }
    assert got["verdict"]["duplicate_of"] == "a"
    assert await read_api.article(index, "news", "nope") is None
    assert await read_api.article(index, "elsewhere", "a") is None


async def test_a_cluster_its_members_first_and_last_seen_paged() -> None:
    index = MemoryIndex()
    await _indexed(index, _stream(), [10.0, 20.0, 30.0, 40.0])
    whole = await read_api.cluster(index, "news", "a", 0, 50)
    assert whole is not None
    assert [(m["id"], m["seq"], m["registered_at"]) for m in whole["members"]] == [
        ("a", 1, 10.0),
        ("b", 2, 20.0),
        ("c", 4, 40.0),
    ]
    assert (whole["size"], whole["first_seen"], whole["last_seen"], whole["next_offset"]) == (
        3,
        10.0,
        40.0,
        None,
    )
    assert [m["verdict"]["verdict"] for m in whole["members"]] == [
        "original",
        "near_duplicate",
        "duplicate",
    ]
    first = await read_api.cluster(index, "news", "a", 0, 2)
    assert first is not None and [m["id"] for m in first["members"]] == ["a", "b"]
    assert first["next_offset"] == 2
    rest = await read_api.cluster(index, "news", "a", 2, 2)
    assert rest is not None and [m["id"] for m in rest["members"]] == ["c"]
    assert rest["next_offset"] is None
    alone = await read_api.cluster(index, "news", "other", 0, 10)
    assert alone is not None and alone["size"] == 1 and alone["first_seen"] == 30.0
    assert await read_api.cluster(index, "news", "b", 0, 10) is None  # b is a copy, not a cluster
    assert await read_api.cluster(index, "news", "nope", 0, 10) is None


async def test_a_deleted_copy_leaves_its_cluster() -> None:
    index = MemoryIndex()
    await _indexed(index, _stream(), [10.0, 20.0, 30.0, 40.0])
    assert await Engine(index).delete("news", "b")
    got = await read_api.cluster(index, "news", "a", 0, 50)
    assert got is not None and [m["id"] for m in got["members"]] == ["a", "c"]
    assert got["size"] == 2
    stats = await index.stats("news")
    assert (stats.documents, stats.copies, stats.clusters) == (3, 1, 2)


async def test_namespaces_and_their_statistics() -> None:
    index = MemoryIndex()
    await _indexed(index, _stream("news"), [1.0, 2.0, 3.0, 4.0])
    await _indexed(index, _stream("forum")[:1], [5.0])
    got = await read_api.namespaces(index)
    rows = {r["namespace"]: r for r in got["namespaces"]}
    assert list(rows) == ["forum", "news"]
    assert {k: rows["news"][k] for k in ("documents", "copies", "clusters", "verdicts")} == {
        "documents": 4,
        "copies": 2,
        "clusters": 2,
        "verdicts": 4,
    }
    assert rows["news"]["bytes"] > 0 and rows["news"]["scheme"].startswith("{")
    assert '"threshold":0.8' in rows["news"]["policy"]


@pytest.mark.parametrize("bearer", [True, False], ids=["token", "no-token"])
def test_the_openapi_document_names_every_view(bearer: bool) -> None:
    doc = read_api.openapi(bearer=bearer)
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) == {
        "/check",
        "/articles/{doc_id}",
        "/clusters/{doc_id}",
        "/namespaces",
        "/health",
        "/live",
    }
    for path in doc["paths"].values():
        for op in path.values():
            for code, answer in op["responses"].items():
                assert "application/json" in answer["content"], (code, op["summary"])


def test_the_openapi_document_declares_the_security_the_worker_has() -> None:
    """With a token, bearer auth on every view but /health, and 401 among their answers;
    without one (loopback only, or opened by NEARDUP_WEB_OPEN), no security and no 401: a
    client reading the document is told what the worker asks for."""
    secured, plain = read_api.openapi(bearer=True), read_api.openapi(bearer=False)
    assert secured["security"] == [{"bearer": []}]
    assert secured["components"]["securitySchemes"] == {
        "bearer": {"type": "http", "scheme": "bearer"}
    }
    assert "security" not in plain and "securitySchemes" not in plain["components"]
    probes = {p for p, ops in secured["paths"].items() if ops.get("get", {}).get("security") == []}
    assert "/health" in probes and "/check" not in probes
    for path, ops in secured["paths"].items():
        for op in ops.values():
            assert ("401" in op["responses"]) is (path not in probes), path
    for path, ops in plain["paths"].items():
        for op in ops.values():
            assert "security" not in op and "401" not in op["responses"], path
    assert "408" in plain["paths"]["/check"]["post"]["responses"]
