"""The read API over HTTP, on a real worker (real broker, real Redis): exact answers for a
stream whose verdicts are known, and every view fuzzed against the worker's own OpenAPI
document (schemathesis): no 500s, every answer as documented, every error a JSON reason."""

from __future__ import annotations

import asyncio
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from harness.kafka import Topics, collect, make_topics, produce
from harness.workers import WorkerProc, start_worker
from neardup.stream.worker.http import read_api

TOKEN = "read-api-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NS = f"reads-{uuid.uuid4().hex[:6]}"
STORY = " ".join(f"w{i}" for i in range(120))
ARTICLES = [
    {"id": "a", "text": STORY},
    {"id": "b", "text": STORY + " extra words at the end"},
    {"id": "other", "text": " ".join(f"z{i}" for i in range(120))},
    {"id": "c", "text": STORY},
]


@pytest.fixture(scope="module")
def worker(
    redis_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProc]:
    """One worker with the four articles decided, in order, on one partition."""
    tmp = tmp_path_factory.mktemp("reads")
    topics: Topics = asyncio.run(make_topics(kafka_bootstrap))
    w = start_worker(
        topics, redis_url, tmp, f"reads-{uuid.uuid4().hex[:6]}", NEARDUP_CHECK_TOKEN=TOKEN
    )
    try:
        w.wait_ready()
        items = [
            (a["id"].encode(), json.dumps({**a, "namespace": NS}).encode(), 0) for a in ARTICLES
        ]
        asyncio.run(produce(topics.bootstrap, topics.input, items))
        asyncio.run(collect(topics.bootstrap, topics.verdicts, {a["id"] for a in ARTICLES}))
        yield w
    finally:
        w.stop()


def _get(w: WorkerProc, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(w.url(path), headers=AUTH if headers is None else headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_an_article_a_cluster_and_the_namespaces(worker: WorkerProc) -> None:
    status, got = _get(worker, f"/articles/b?namespace={NS}")
    assert status == 200
    assert (got["id"], got["seq"], got["cluster"], got["text"]) == (
        "b",
        2,
        "a",
        ARTICLES[1]["text"],
    )
    assert got["verdict"]["verdict"] == "near_duplicate"
    status, got = _get(worker, f"/clusters/a?namespace={NS}&limit=2")
    assert status == 200
    assert [m["id"] for m in got["members"]] == ["a", "b"] and got["size"] == 3
    assert got["next_offset"] == 2 and got["first_seen"] <= got["last_seen"]
    status, rest = _get(worker, f"/clusters/a?namespace={NS}&offset=2")
    assert [m["id"] for m in rest["members"]] == ["c"] and rest["next_offset"] is None
    status, got = _get(worker, "/namespaces")
    row = next(r for r in got["namespaces"] if r["namespace"] == NS)
    assert (row["documents"], row["copies"], row["clusters"]) == (4, 2, 2)
    assert row["estimated_from_shards"] == 64 and row["bytes"] > 0


@pytest.mark.parametrize(
    ("path", "headers", "status", "reason"),
    [
        ("/articles/a?namespace={ns}", {}, 401, "unauthorized"),
        ("/articles/nope?namespace={ns}", None, 404, "not_found"),
        ("/articles/a?namespace=bad%20name", None, 400, "invalid_namespace"),
        ("/clusters/a?namespace={ns}&limit=0", None, 400, "invalid_field"),
        ("/clusters/a?namespace={ns}&offset=x", None, 400, "invalid_field"),
        ("/clusters/b?namespace={ns}", None, 404, "not_found"),  # b is a copy, not a cluster
        ("/namespaces", {"Authorization": "Bearer wrong"}, 401, "unauthorized"),
    ],
)
def test_errors_are_json_reasons(
    worker: WorkerProc, path: str, headers: dict[str, str] | None, status: int, reason: str
) -> None:
    # the namespace is filled in here: parameters are the same in every test process
    got_status, body = _get(worker, path.format(ns=NS), headers)
    assert (got_status, body["error"]) == (status, reason)


def test_the_openapi_document_is_served(worker: WorkerProc) -> None:
    status, doc = _get(worker, "/openapi.json", {})
    assert status == 200 and doc == json.loads(json.dumps(read_api.openapi(bearer=True)))


schema = schemathesis.openapi.from_dict(read_api.openapi(bearer=True))
# Ids in any script, percent-encoded in the path: the document's id pattern is the service's rule
# (tests/stream/worker/http/test_api_models.py), so every generated id is one the views take.
# Schema-valid requests only: a path parameter is text on the wire whatever "type" a generator
# gives it, so schemathesis's wrong-type path values are not wrong here. Invalid requests are
# covered by the exact error tests above and tests/integration/worker/test_input_hostile.py.
# Strings a UTF-8 client can send: a lone surrogate in a JSON string is refused as
# invalid_utf8 (tested in test_input_hostile.py), which no JSON schema can describe.
schema.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE], codec="utf-8")


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_every_view_answers_as_documented(case: Any, worker: WorkerProc, tmp_path: Path) -> None:
    """Generated requests, valid and not, against the real worker: no 500, status codes and
    bodies as the document says, every response JSON."""
    case.call_and_validate(base_url=worker.url(""), headers=AUTH)
