"""A worker started with the defaults (no ``NEARDUP_CHECK_TOKEN``, listening on loopback, as
``make run`` starts them) fuzzed against the OpenAPI document it serves (schemathesis): the
document declares the security the worker has (none, in loopback mode), so every answer is as
documented. With a token: test_read_api_http.py."""

from __future__ import annotations

import asyncio
import http.client
import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from harness.kafka import Topics, make_topics
from harness.workers import WorkerProc, start_worker
from neardup.stream.worker.http import read_api


@pytest.fixture(scope="module")
def default_worker(
    redis_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerProc]:
    tmp = tmp_path_factory.mktemp("default-reads")
    topics: Topics = asyncio.run(make_topics(kafka_bootstrap))
    w = start_worker(topics, redis_url, tmp, f"default-{uuid.uuid4().hex[:6]}")
    try:
        w.wait_ready()
        yield w
    finally:
        w.stop()


def test_a_default_worker_says_it_serves_loopback_only_and_asks_for_no_token(
    default_worker: WorkerProc,
) -> None:
    with urllib.request.urlopen(default_worker.url("/openapi.json"), timeout=10) as r:
        doc = json.loads(r.read())
    assert doc == read_api.openapi(bearer=False)
    assert "security" not in doc and "securitySchemes" not in doc["components"]
    assert "mode loopback only" in default_worker.log.read_text(errors="replace")


# the document a worker without a token serves (the first test shows the worker serves it); as
# in test_read_api_http.py: schema-valid requests, strings a UTF-8 client can send
def _with_host(w: WorkerProc, method: str, path: str, host: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", w.port, timeout=10)
    try:
        conn.request(method, path, headers={"Host": host})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


@pytest.mark.parametrize("host", ["rebound.example", "rebound.example:6066", "10.1.2.3", "[::2]:1"])
def test_a_default_worker_refuses_requests_naming_another_host(
    default_worker: WorkerProc, host: str
) -> None:
    """A page that made its own name resolve to 127.0.0.1 (DNS rebinding) calls the worker as
    its own origin, but its requests name its host: refused, takedowns and reads alike."""
    for method, path in (("GET", "/namespaces"), ("DELETE", "/articles/x"), ("GET", "/")):
        status, body = _with_host(default_worker, method, path, host)
        assert (status, body["error"]) == (403, "forbidden_host"), (method, path, body)
    for loopback in ("localhost", f"127.0.0.1:{default_worker.port}", "[::1]:6066"):
        status, body = _with_host(default_worker, "GET", "/namespaces", loopback)
        assert status == 200 and "namespaces" in body, body


schema = schemathesis.openapi.from_dict(read_api.openapi(bearer=False))
schema.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE], codec="utf-8")


@schema.parametrize()
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_a_default_worker_answers_as_its_document_says(
    case: Any, default_worker: WorkerProc
) -> None:
    """No credentials sent, none asked for: no 500, statuses and bodies as documented, and no
    check that the document's security is ignored (it declares none)."""
    case.call_and_validate(base_url=default_worker.url(""))
