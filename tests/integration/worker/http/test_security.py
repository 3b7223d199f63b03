"""Security against real servers: tenants' Redis keys, ``/check`` under hostile requests, and the
Redis ACL of ``deploy/redis-acl.conf``.

One ``neardup worker`` runs for the whole module, on a Redis of its own where it logs in as the
ACL user of ``deploy/redis-acl.conf`` (variant A): the worker itself shows that the line is
enough to start (FUNCTION LOAD), to report healthy (PING) and to serve ``/check``.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from redis.exceptions import NoPermissionError, ResponseError

from harness import services
from harness.corpus import generate
from harness.kafka import delete_topics, make_topics
from harness.workers import WorkerProc, start_worker
from neardup.sketch.lines import lines_of
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.worker.http import read_api

ROOT = Path(__file__).resolve().parents[4]
ACL_FILE = ROOT / "deploy" / "redis-acl.conf"
TOKEN = "t0ken-for-tests"
PASSWORD = "pw-for-tests"
BODY_LIMIT = 16_384
BODY_TIMEOUT_S = 3.0
CHECK_STATUSES = {200, 400, 401, 409, 413, 415, 429}
LUA = (
    resources.files("neardup.stream.index.redis")
    .joinpath("neardup.lua")
    .read_text(encoding="utf-8")
)


# --------------------------------------------------------------------------- the ACL lines


def acl_rules() -> dict[str, list[str]]:
    """The rules of deploy/redis-acl.conf: variant A (the active line), B (the commented one).

    The password placeholder becomes this module's password.
    """
    found = []
    for line in ACL_FILE.read_text().splitlines():
        m = re.fullmatch(r"(#\s*)?user neardup (.+)", line.strip())
        if m:
            rules = [">" + PASSWORD if r.startswith(("#", ">")) else r for r in m[2].split()]
            found.append((m[1] is None, rules))
    active = [rules for on, rules in found if on]
    commented = [rules for on, rules in found if not on]
    assert len(active) == 1 and len(commented) == 1, found
    return {"neardup": active[0], "neardup-preloaded": commented[0]}


@pytest.fixture(scope="module")
def acl_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private Redis with both ACL users; yields its admin URL (the default user)."""
    service = services.start_redis(tmp_path_factory.mktemp("acl-redis"))
    try:
        with redis.Redis.from_url(service.url) as admin:
            for user, rules in acl_rules().items():
                admin.acl_setuser(user, reset=True)
                admin.execute_command("ACL", "SETUSER", user, *rules)
        yield service.url
    finally:
        service.stop()


def user_url(admin_url: str, user: str) -> str:
    return admin_url.replace("redis://", f"redis://{user}@", 1)


# --------------------------------------------------------------------------- the worker


class Worker(WorkerProc):
    """A worker with raw-HTTP probes for the hostile-input tests."""

    def request(
        self, body: bytes, headers: dict[str, str] | None = None, path: str = "/check"
    ) -> tuple[int, bytes, str]:
        method = "POST" if path == "/check" else "GET"
        sent = {"Content-Type": "application/json", **(headers or {})} if body else headers
        status, raw, got = self.exchange(method, path, body, sent or {})
        return status, raw, got.get("Content-Type", "")

    def exchange(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, dict[str, str]]:
        """One raw request: status, body and headers, whatever they are."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        try:
            conn.request(method, path, body or None, headers or {})
            r = conn.getresponse()
            return r.status, r.read(), dict(r.getheaders())
        finally:
            conn.close()

    def check(self, body: bytes, token: str | None = TOKEN) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        status, raw, ctype = self.request(body, headers)
        assert ctype.startswith("application/json"), (status, raw)
        return status, json.loads(raw)

    def raw(self, data: bytes, *, then: bytes = b"", pause_s: float = 0.0) -> tuple[float, bytes]:
        """Send bytes on a raw socket (optionally more after a pause); the first full response."""
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(data)
            if then:
                time.sleep(pause_s)
                s.sendall(then)
            got = b""
            while True:
                head, sep, body = got.partition(b"\r\n\r\n")
                m = re.search(rb"(?im)^content-length:\s*(\d+)", head) if sep else None
                if m and len(body) >= int(m[1]):
                    break
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        return time.monotonic() - started, got

    def log_size(self) -> int:
        return self.log.stat().st_size

    def assert_healthy(self, log_from: int) -> None:
        assert self.proc.poll() is None, self.log.read_text()[-3000:]
        status, body, _ = self.request(b"", path="/health")
        assert status == 200, body
        with self.log.open("rb") as f:
            f.seek(log_from)
            new = f.read().decode(errors="replace")
        assert "Traceback" not in new and "Error handling request" not in new, new[-3000:]


@pytest.fixture(scope="module")
def worker(
    acl_redis: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    topics = asyncio.run(make_topics(kafka_bootstrap, partitions=1))
    w = start_worker(
        topics,
        user_url(acl_redis, "neardup"),
        tmp_path_factory.mktemp("security-worker"),
        f"sec-{uuid.uuid4().hex[:8]}",
        Worker,
        NEARDUP_REDIS_PASSWORD=PASSWORD,
        NEARDUP_CHECK_TOKEN=TOKEN,
        NEARDUP_CHECK_MAX_BODY_BYTES=str(BODY_LIMIT),
        NEARDUP_CHECK_BODY_TIMEOUT_S=str(BODY_TIMEOUT_S),
    )
    try:
        w.wait_ready()
        yield w
    finally:
        w.stop()
        asyncio.run(delete_topics(kafka_bootstrap, topics.all))


def _article(text: str, **extra: Any) -> bytes:
    return json.dumps({"text": text, **extra}).encode()


LONG_TEXT = " ".join(f"word{i % 97} token{i % 13}" for i in range(200))

# --------------------------------------------------------------------------- /check: auth


def test_check_requires_the_bearer_token(worker: Worker) -> None:
    mark = worker.log_size()
    body = _article(LONG_TEXT, namespace="auth")
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
        {"Authorization": ""},
        {"X-Authorization": f"Bearer {TOKEN}"},
    ):
        status, raw, ctype = worker.request(body, headers)
        assert status == 401, (headers, raw)
        assert ctype.startswith("application/json") and json.loads(raw) == {"error": "unauthorized"}
    status, out = worker.check(body)
    assert status == 200 and out["verdict"] == "original" and out["registered"] is False
    worker.assert_healthy(mark)


def test_check_takes_json_only_names_unknown_fields_and_answers_in_json(worker: Worker) -> None:
    """A browser sends a ``text/plain`` or form body cross-site without asking first: such a
    body, even one asking to register, is refused (415) and registers nothing. A misspelt
    field is refused naming it (a ``regster: true`` must not pass for a read-only check). A 401
    says what it wants (``WWW-Authenticate``); a path or a method the worker does not serve
    answers JSON too."""
    mark = worker.log_size()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    text = "A story sent as a form from some page inside the network, asking to be registered."
    body = json.dumps({"id": "form-1", "text": text, "register": True}).encode()
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        status, raw, _ = worker.exchange("POST", "/check", body, {**auth, "Content-Type": kind})
        assert (status, json.loads(raw)["error"]) == (415, "unsupported_media_type"), kind
    status, raw, _ = worker.exchange("POST", "/check", body, auth)  # no type at all
    assert status == 415
    status, out = worker.check(json.dumps({"id": "form-1", "text": text}).encode())
    assert (status, out["verdict"], out["namespace_known"]) == (200, "original", False)
    status, out = worker.check(json.dumps({"text": text, "regster": True}).encode())
    assert (status, out["error"]) == (400, "unknown_field") and "'regster'" in out["detail"]
    status, out = worker.check(body)  # as JSON it registers
    assert (status, out["registered"], out["verdict"]) == (200, True, "original")
    status, raw, headers = worker.exchange(
        "POST", "/check", body, {"Content-Type": "application/json"}
    )
    assert status == 401 and headers.get("WWW-Authenticate", "").startswith("Bearer")
    status, raw, headers = worker.exchange("GET", "/articles/form-1")
    assert status == 401 and headers.get("WWW-Authenticate", "").startswith("Bearer")
    status, raw, headers = worker.exchange("GET", "/no/such/path")
    assert status == 404 and headers["Content-Type"].startswith("application/json")
    assert json.loads(raw)["error"] == "not_found"
    status, raw, headers = worker.exchange("PUT", "/health")
    assert status == 405 and headers["Content-Type"].startswith("application/json")
    assert json.loads(raw)["error"] == "method_not_allowed"
    worker.assert_healthy(mark)


def test_check_registers_and_finds_copies_as_the_acl_user(worker: Worker) -> None:
    mark = worker.log_size()
    ns = f"reg-{uuid.uuid4().hex[:6]}"
    status, first = worker.check(_article(LONG_TEXT, id="orig", namespace=ns, register=True))
    assert status == 200 and first["verdict"] == "original" and first["registered"] is True
    status, copy = worker.check(_article(LONG_TEXT, namespace=ns))
    assert status == 200 and copy["verdict"] == "duplicate" and copy["duplicate_of"] == "orig"
    status, out = worker.check(
        _article(LONG_TEXT + " changed", id="orig", namespace=ns, register=True)
    )
    assert status == 409 and out["error"] == "conflict"
    worker.assert_healthy(mark)


def test_check_refuses_nothing_to_read_and_ids_that_are_no_integer(worker: Worker) -> None:
    """Over HTTP, through the worker's check process (the engine's refusal crosses it whole):
    a text with nothing to read is a 400 ``empty_text``, two flags are two comments, and a
    numeric id is the exact text of its number or a 400 ``invalid_id``."""
    mark = worker.log_size()
    ns = f"empty-{uuid.uuid4().hex[:6]}"
    for text in ("\u200b\u200b", "\u2060\ufeff\u200d", "<p></p>", "<div><br></div>"):
        for register in (False, True):
            status, out = worker.check(_article(text, id="e", namespace=ns, register=register))
            assert (status, out["error"]) == (400, "empty_text"), (text, out)
    england = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
    scotland = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
    status, out = worker.check(_article(england, id="en", namespace=ns, register=True))
    assert (status, out["verdict"]) == (200, "original")
    status, out = worker.check(_article(scotland, namespace=ns))
    assert (status, out["verdict"], out["duplicate_of"]) == (200, "original", None)
    status, out = worker.check(_article(england, namespace=ns))
    assert (status, out["verdict"], out["duplicate_of"]) == (200, "duplicate", "en")
    text = json.dumps(LONG_TEXT)
    for number, doc_id in (("-9223372036854775809", "-9223372036854775809"), ("1e3", None)):
        body = f'{{"id": {number}, "text": {text}, "namespace": "{ns}", "register": true}}'
        status, out = worker.check(body.encode())
        if doc_id is None:
            assert (status, out["error"]) == (400, "invalid_id"), out
        else:
            assert (status, out["id"]) == (200, doc_id), out
    worker.assert_healthy(mark)


def test_worker_log_holds_no_secret(worker: Worker) -> None:
    worker.check(_article(LONG_TEXT), token="not-" + TOKEN)
    log = worker.log.read_text(errors="replace")
    assert "faust" in log.lower() or "worker" in log.lower()  # the log is the worker's
    assert PASSWORD not in log and TOKEN not in log


def test_check_refuses_unauthenticated_requests_before_reading_the_body(worker: Worker) -> None:
    mark = worker.log_size()
    head = b"POST /check HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n"
    elapsed, got = worker.raw(head + b'{"text"')
    assert got.startswith(b"HTTP/1.1 401 "), got[:300]
    assert elapsed < 3
    worker.assert_healthy(mark)


@pytest.mark.parametrize(
    "value", [b"Bearer \xff\xfe", b"Bearer " + TOKEN.encode() + b"\xc3", b"\xe2\x80\xae"]
)
def test_check_non_utf8_authorization_is_refused_not_a_crash(worker: Worker, value: bytes) -> None:
    mark = worker.log_size()
    body = _article(LONG_TEXT)
    head = b"POST /check HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: %d\r\n\r\n"
    _, got = worker.raw(head % (value, len(body)) + body)
    assert got.startswith(b"HTTP/1.1 401 "), got[:300]
    worker.assert_healthy(mark)


# --------------------------------------------------------------------------- /check: size


def test_check_refuses_a_huge_content_length_before_reading_the_body(worker: Worker) -> None:
    """Only 20 bytes of a declared terabyte are sent: the answer cannot wait for the rest."""
    mark = worker.log_size()
    head = (
        b"POST /check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    )
    for declared in (10**12, BODY_LIMIT * 100, BODY_LIMIT + 1):
        elapsed, got = worker.raw(head % (TOKEN.encode(), declared) + b'{"text": "aaaaaaaaa')
        assert got.startswith(b"HTTP/1.1 413 "), got[:300]
        assert json.loads(got.partition(b"\r\n\r\n")[2]) == {
            "error": "oversize",
            "limit_bytes": BODY_LIMIT,
        }
        assert elapsed < 3
    worker.assert_healthy(mark)


def test_check_body_limit_is_exact(worker: Worker) -> None:
    mark = worker.log_size()
    at_limit = _article(LONG_TEXT, namespace="limit")
    at_limit += b" " * (BODY_LIMIT - len(at_limit))
    assert worker.check(at_limit)[0] == 200
    assert worker.check(at_limit + b" ") == (413, {"error": "oversize", "limit_bytes": BODY_LIMIT})
    worker.assert_healthy(mark)


SLOW_HEAD = (
    b"POST /check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
    b"Content-Type: application/json\r\nContent-Length: 10000\r\n\r\n" % TOKEN.encode()
)


async def _slow_client(port: int, stop: asyncio.Event) -> tuple[float, bytes]:
    """Declares a body of 10,000 bytes, sends 4 and nothing more; the first line of what the
    worker answers (b"" when it just closes) and the seconds it took, or (inf, b"") when
    nothing came before ``stop``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(SLOW_HEAD + b'{"te')
        await writer.drain()
        line = asyncio.ensure_future(reader.readline())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({line, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not line.done():
            line.cancel()
            return float("inf"), b""
        stopped.cancel()
        return time.monotonic() - started, line.result()
    finally:
        writer.close()


async def _checks_while_slow_clients_stall(
    worker: Worker, clients: int, checks: int
) -> tuple[list[tuple[float, int]], list[tuple[float, bytes]]]:
    """``clients`` slow clients connect and stall; once they reach the view, ``checks`` checks
    are sent one after the other from elsewhere: (seconds, status) of each, then what each slow
    client got."""
    stop = asyncio.Event()
    slow = [asyncio.ensure_future(_slow_client(worker.port, stop)) for _ in range(clients)]
    await asyncio.sleep(0.5)  # their headers are read: the old view took a slot for each here
    answered = []
    for _ in range(checks):
        started = time.monotonic()
        status, _ = await asyncio.to_thread(worker.check, _article(LONG_TEXT))
        answered.append((time.monotonic() - started, status))
    await asyncio.sleep(0.1)
    asyncio.get_running_loop().call_later(BODY_TIMEOUT_S + 10, stop.set)
    return answered, list(await asyncio.gather(*slow))


def test_slow_bodies_hold_no_admission_slot(worker: Worker) -> None:
    """As many clients as there are admission slots declare a body and send 4 bytes of it: a
    check from anyone else is still answered (it took 429 while they stayed open, before the
    body was read under a deadline), and each slow one gets 408 after the deadline."""
    from neardup.stream.worker.checks import CHECKS_ADMITTED

    mark = worker.log_size()
    answered, slow = asyncio.run(_checks_while_slow_clients_stall(worker, CHECKS_ADMITTED, 1))
    assert [status for _, status in answered] == [200], answered
    for took, line in slow:
        assert line.startswith(b"HTTP/1.1 408 "), (took, line)
        assert BODY_TIMEOUT_S - 0.5 <= took < BODY_TIMEOUT_S + 5, took
    worker.assert_healthy(mark)


def test_64_slow_clients_leave_checks_answered_in_time(worker: Worker) -> None:
    """64 connections stall mid-body: every other check meanwhile is answered 200 within 2 s,
    and every slow one is cut off (408, or its connection closed) within a few seconds of the
    deadline."""
    mark = worker.log_size()
    answered, slow = asyncio.run(_checks_while_slow_clients_stall(worker, 64, 5))
    assert all(status == 200 and took < 2.0 for took, status in answered), answered
    for took, line in slow:
        assert line.startswith(b"HTTP/1.1 408 ") or line == b"", (took, line)
        assert BODY_TIMEOUT_S - 0.5 <= took < BODY_TIMEOUT_S + 5, took
    worker.assert_healthy(mark)


async def _many_checks_at_once(worker: Worker, n: int, body: bytes) -> list[bytes]:
    """``n`` whole requests sent at once on their own connections: each answer's head."""
    request = (
        b"POST /check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    ) % (TOKEN.encode(), len(body), body)
    opened = [await asyncio.open_connection("127.0.0.1", worker.port) for _ in range(n)]

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        try:
            writer.write(request)
            await writer.drain()
            return await reader.readuntil(b"\r\n\r\n")
        finally:
            writer.close()

    return list(await asyncio.gather(*(one(r, w) for r, w in opened)))


def test_checks_waiting_at_once_are_bounded(worker: Worker) -> None:
    """Whole bodies arriving at once, more than CHECKS_ADMITTED of them: the checks wait their
    turn for the one check process, and those past the admitted are answered 429 at once
    (``busy``, with Retry-After); checks are served again as soon as those end."""
    mark = worker.log_size()
    text = " ".join(f"w{i % 1009}x{i % 7}" for i in range(BODY_LIMIT // 10))
    body = _article(text)
    assert len(body) < BODY_LIMIT
    heads = asyncio.run(_many_checks_at_once(worker, 48, body))
    statuses = [int(h.split(b" ", 2)[1]) for h in heads]
    assert set(statuses) == {200, 429}, heads
    assert all(b"\r\nRetry-After: 1\r\n" in h for h in heads if h.startswith(b"HTTP/1.1 429 "))
    deadline = time.monotonic() + 10
    while worker.check(_article(LONG_TEXT))[0] == 429 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert worker.check(_article(LONG_TEXT))[0] == 200
    worker.assert_healthy(mark)


def _chunked(body: bytes, size: int = 4096) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_check_refuses_an_oversize_chunked_body(worker: Worker) -> None:
    """No Content-Length to refuse up front: the view must stop reading past the limit."""
    mark = worker.log_size()
    body = _article("word " * BODY_LIMIT)
    head = b"POST /check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
    head += b"Content-Type: application/json\r\n"
    head += b"Transfer-Encoding: chunked\r\n\r\n"
    payload = head % TOKEN.encode() + _chunked(body)
    cut = len(head) + 4096  # the first piece is under the limit; the rest comes a moment later
    _, got = worker.raw(payload[:cut], then=payload[cut:], pause_s=0.3)
    assert got.startswith(b"HTTP/1.1 413 "), got[:400]
    worker.assert_healthy(mark)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_check_reads_a_body_that_arrives_in_pieces(worker: Worker, chunked: bool) -> None:
    """Slow clients and large bodies arrive in several TCP segments; all of it is the body."""
    mark = worker.log_size()
    body = _article(LONG_TEXT, namespace="pieces")
    head = b"POST /check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n" % TOKEN.encode()
    head += b"Content-Type: application/json\r\n"
    if chunked:
        payload = head + b"Transfer-Encoding: chunked\r\n\r\n" + _chunked(body, 512)
    else:
        payload = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    cut = len(payload) - len(body) // 2
    _, got = worker.raw(payload[:cut], then=payload[cut:], pause_s=0.3)
    assert got.startswith(b"HTTP/1.1 200 "), got[:400]
    worker.assert_healthy(mark)


# --------------------------------------------------------------------------- /check: fuzz

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=30),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=20,
)
check_bodies = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=20), st.integers(), st.sampled_from(["x}:d", "*"])),
        "text": st.one_of(st.text(max_size=200), st.just(LONG_TEXT), json_values),
        "namespace": st.one_of(
            st.sampled_from(["fuzz", "f.u-z_z", "a}", "{b}", "x" * 65]), json_values
        ),
        "register": st.one_of(st.booleans(), json_values),
        "title": json_values,
    },
)


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8", "surrogatepass")


bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(_encode),
    check_bodies.map(_encode),
    st.builds(
        bytes.__mul__, st.sampled_from([b" ", b"["]), st.integers(BODY_LIMIT - 2, BODY_LIMIT + 2)
    ),
)


def test_check_fuzz_answers_json_and_never_500(worker: Worker) -> None:
    mark = worker.log_size()
    auth = {"Authorization": f"Bearer {TOKEN}"}

    @settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
    @given(body=bodies)
    @example(body=b"")
    @example(body=b"[" * 5000)
    @example(body=b'{"text": "' + "\u202e\u0000".encode() + b'"}')
    @example(body=b'{"text": "a", "id": "dup", "register": true}')
    @example(body=b'{"text": "b", "id": "dup", "register": true}')  # a conflict: 409
    def one(body: bytes) -> None:
        status, raw, ctype = worker.request(body, auth)
        assert status in CHECK_STATUSES, (status, raw)
        assert ctype.startswith("application/json"), (status, raw)
        out = json.loads(raw)
        assert isinstance(out, dict)
        if status == 200:
            assert out["verdict"] in {"original", "near_duplicate", "duplicate"}
        else:
            assert isinstance(out["error"], str) and out["error"]

    one()
    worker.assert_healthy(mark)


# --------------------------------------------------------------------------- tenants in Redis

KEY_RE = re.compile(
    rb"nd:\{([A-Za-z0-9_.-]{1,64})\}:(?:m|i|d|v|t|g|cm|l:[ab]|c:[0-9a-f]{32}|x:[0-9a-f]+|b:[0-9a-f]+)"
)
HOSTILE_IDS = [
    "x}:d",
    "{b}",
    "*",
    "nd:{b}:d",
    "nd:{b}:i",
    "}{b}",
    "b",
    "b0",
    "?*[ab]",
    "\\",
    "a b",
    "é" * 100,
]


async def snapshot(r: aioredis.Redis) -> dict[bytes, tuple[bytes, Any]]:
    """Every key with its type and full value, read type by type (byte for byte); but the one
    keys without a namespace, the registry of namespaces and the aliases (``keys.REGISTRY``,
    ``keys.ALIASES``)."""
    out: dict[bytes, tuple[bytes, Any]] = {}
    async for key in r.scan_iter(count=1000):
        if key in (keys.REGISTRY.encode(), keys.ALIASES.encode()):
            continue
        kind = await r.type(key)
        if kind == b"hash":
            value: Any = await r.hgetall(key)
        elif kind == b"zset":
            value = await r.zrange(key, 0, -1, withscores=True)
        else:
            value = await r.dump(key)
        out[key] = (kind, value)
    return out


def tag_of(key: bytes) -> str:
    m = KEY_RE.fullmatch(key)
    assert m is not None and key.count(b"{") == 1 and key.count(b"}") == 1, key
    return m[1].decode()


def _comparable(v: Verdict | Exception) -> dict[str, Any]:
    assert isinstance(v, Verdict), v
    d = v.to_dict()
    del d["namespace"]
    return d


async def test_tenants_with_identical_texts_never_touch_each_others_keys(
    redis_client: aioredis.Redis,
) -> None:
    docs = [d["text"] for d in generate(4, seed=11, words=150, dup_rate=0.0)]
    texts = [*docs, *(d + " and a few more words" for d in docs), "short one", "short one!"]
    index = RedisIndex(redis_client, shard_bits=4)
    engine = Engine(index, Policy())

    b_articles = [Article(f"b{i}", t, "b") for i, t in enumerate(texts)]
    b_articles += [Article(h, texts[i % len(texts)], "b") for i, h in enumerate(HOSTILE_IDS[:3])]
    await engine.process(b_articles)
    before = await snapshot(redis_client)
    assert before and {tag_of(k) for k in before} == {"b"}

    # Namespace "a": the same texts under ids shaped like b's keys, hash tags and glob patterns.
    a_ids = [*HOSTILE_IDS, *(x.id for x in b_articles if x.id not in HOSTILE_IDS)]
    a_articles = [Article(i, texts[n % len(texts)], "a") for n, i in enumerate(a_ids)]
    in_a = await engine.process(a_articles)
    assert [_comparable(v) for v in await engine.process(a_articles)] == [
        _comparable(v) for v in in_a
    ]  # replayed
    # "a" sees nothing of "b": its verdicts are those of a namespace alone on the server.
    alone = await engine.process([Article(x.id, x.text, "c") for x in a_articles])
    assert [_comparable(v) for v in in_a] == [_comparable(v) for v in alone]
    assert in_a[0].verdict == "original"  # type: ignore[union-attr]

    during = await snapshot(redis_client)
    assert {tag_of(k) for k in during} == {"a", "b", "c"}
    assert set((await redis_client.hgetall("nd:{a}:i")).keys()) == {i.encode() for i in a_ids}

    checked = await engine.process(a_articles[:4], register=False)
    assert [_comparable(v) for v in checked] == [_comparable(v) for v in in_a[:4]]
    for doc_id in HOSTILE_IDS[:6]:
        assert await index.delete("a", doc_id)
    assert await index.expire("a", time.time() + 10) == len(a_ids) - 6
    assert await index.count("a") == 0

    after = await snapshot(redis_client)
    for key in set(before) | set(after):
        assert tag_of(key) in {"a", "b", "c"}
    assert {k: v for k, v in after.items() if tag_of(k) == "b"} == before
    # only the scheme and the deleted ids (remembered so a replay cannot bring them back) are left
    assert {k for k in after if tag_of(k) == "a"} <= {b"nd:{a}:m", b"nd:{a}:g"}


@pytest.mark.parametrize("ns", ["b}", "{b}", "b}:d", "nd:{b}", "*", "b ", "b\n", "x" * 65, ""])
async def test_a_hostile_namespace_writes_no_key(redis_client: aioredis.Redis, ns: str) -> None:
    engine = Engine(RedisIndex(redis_client, shard_bits=4))
    for register in (True, False):
        with pytest.raises(ValueError, match="namespace"):
            await engine.process([Article("a", LONG_TEXT, ns)], register=register)
    assert await redis_client.dbsize() == 0


# --------------------------------------------------------------------------- the Redis ACL


@pytest.fixture
async def connect(acl_redis: str) -> AsyncIterator[Any]:
    clients: list[aioredis.Redis] = []

    def make(user: str | None = None) -> aioredis.Redis:
        url = user_url(acl_redis, user) if user else acl_redis
        client = aioredis.Redis.from_url(url, password=PASSWORD if user else None)
        clients.append(client)
        return client

    try:
        yield make
    finally:
        for c in clients:
            await c.aclose()


async def exercise(index: RedisIndex, ns: str, shards: int = 1) -> None:
    """Everything the worker does with the index: register, replay, check, delete, expire (on a
    namespace of ``shards`` shard groups)."""
    await index.load_functions()
    engine = Engine(index, Policy(retention_s=3600, shards=shards))
    docs = [d["text"] for d in generate(3, seed=5, words=120, dup_rate=0.0)]
    articles = [Article(f"d{i}", t, ns) for i, t in enumerate(docs)]
    articles += [Article("copy", docs[0], ns), Article("short", "a short one", ns)]
    # multi-line pages: their lines are counted (boilerplate learning) and read back
    pages = [f"The Daily Ledger, home page\nstory number {w} of the day" for w in ("one", "two")]
    articles += [
        Article(f"page{i}", t, ns, url="https://ledger.example/x") for i, t in enumerate(pages)
    ]
    first = await engine.process(articles)
    assert [v.verdict for v in first if isinstance(v, Verdict)] == [
        "original",
        "original",
        "original",
        "duplicate",
        "original",
        "original",
        "original",
    ]
    assert await index.line_counts(ns, list(lines_of(pages[0], "ledger.example").keys)) == [2, 1]
    assert await engine.process(articles) == first
    # the read API as the ACL user: members, statistics, the namespace registry
    got = await read_api.cluster(index, ns, "d0", 0, 10)
    assert got is not None and [m["id"] for m in got["members"]] == ["d0", "copy"]
    stats = await index.stats(ns)
    assert (stats.documents, stats.copies) == (7, 1) and stats.bytes > 0
    assert ns in await index.namespaces()
    (checked,) = await engine.process([Article("probe", docs[1], ns)], register=False)
    assert isinstance(checked, Verdict) and checked.duplicate_of == "d1"
    assert await index.count(ns) == 7
    assert await index.delete(ns, "d1")
    assert not await index.delete(ns, "d1")
    (checked,) = await engine.process([Article("probe", docs[1], ns)], register=False)
    assert isinstance(checked, Verdict) and checked.verdict == "original"
    assert await index.expire(ns, time.time() + 10) == 6
    assert await index.count(ns) == 0


@pytest.mark.parametrize("shards", [1, 3], ids=["one-slot", "sharded"])
async def test_acl_variant_a_worker_loads_its_functions(connect: Any, shards: int) -> None:
    await exercise(RedisIndex(connect("neardup"), shard_bits=4), f"acl-a{shards}", shards)


async def test_acl_variant_b_operator_preloads_the_functions(make_redis: Any, connect: Any) -> None:
    """A user without FUNCTION LOAD works once an admin loaded the library, and only then."""
    service = make_redis()
    admin = aioredis.Redis.from_url(service.url)
    user = aioredis.Redis.from_url(user_url(service.url, "neardup"), password=PASSWORD)
    try:
        await admin.execute_command("ACL", "SETUSER", "neardup", *acl_rules()["neardup-preloaded"])
        with pytest.raises(NoPermissionError):
            await user.function_load(LUA, replace=True)
        with pytest.raises(IndexUnavailableError, match="neardup"):  # not loaded yet: wait
            await RedisIndex(user).load_functions()
        await admin.function_load(LUA)
        await exercise(RedisIndex(user, shard_bits=4), "acl-b")
        other = LUA + "\n-- another version of the library\n"
        await admin.function_load(other, replace=True)
        with pytest.raises(IndexUnavailableError, match="neardup"):  # not this version: wait
            await RedisIndex(user).load_functions()
    finally:
        await user.aclose()
        await admin.aclose()


DENIED: list[tuple[Any, ...]] = [
    ("FLUSHALL",),
    ("FLUSHDB",),
    ("CONFIG", "GET", "*"),
    ("CONFIG", "SET", "appendonly", "no"),
    ("KEYS", "*"),
    ("SCAN", "0"),
    ("INFO",),
    ("CLIENT", "LIST"),
    ("CLIENT", "KILL", "TYPE", "normal"),
    ("ACL", "LIST"),
    ("ACL", "SETUSER", "neardup", "+@all"),
    ("EVAL", "return redis.call('GET', 'secret')", "0"),
    ("FUNCTION", "FLUSH"),
    ("FUNCTION", "DELETE", "neardup"),
    ("FUNCTION", "DUMP"),
    ("SELECT", "1"),
    ("PUBLISH", "chan", "x"),
    ("GET", "secret"),
    ("SET", "secret", "x"),
    ("SET", "nd:{a}:x", "x"),
    ("DEL", "secret"),  # DEL is allowed on nd:* only (the line counts' generations)
    ("UNLINK", "nd:{a}:d"),
    ("RENAME", "nd:{a}:d", "other"),
    ("HGET", "secret", "f"),
    ("HGET", "ND:{a}:d", "f"),
    ("HGET", "x:nd:{a}:d", "f"),
    ("HSET", "other", "f", "v"),
    ("HLEN", "secret"),
    ("HMGET", "secret", "f"),
    ("ZRANGEBYSCORE", "other", "-inf", "+inf"),
    ("FCALL", "neardup_scheme", "1", "other:m", "x"),
    ("FCALL_RO", "neardup_probe", "2", "nd:{a}:m", "secret", "16", "c", "f"),
]


@pytest.mark.parametrize("user", ["neardup", "neardup-preloaded"])
async def test_acl_user_is_confined_to_its_keys_and_commands(connect: Any, user: str) -> None:
    admin, client = connect(), connect(user)
    await admin.set("secret", "s3")
    assert await client.ping()
    assert await client.hget("nd:{elsewhere}:d", "f") is None  # its own pattern: allowed
    for command in DENIED:
        with pytest.raises(NoPermissionError):
            await client.execute_command(*command)
    assert await admin.get("secret") == b"s3"


async def test_acl_functions_loaded_by_the_user_run_with_its_rights(connect: Any) -> None:
    """Variant A may load code, but that code reaches no other key nor command either."""
    admin, client = connect(), connect("neardup")
    await admin.hset("secret-hash", "f", "s3")
    lib = (
        "#!lua name=probe\n"
        "redis.register_function('probe_hget',"
        " function(k, a) return redis.call('HGET', a[1], 'f') end)\n"
        "redis.register_function('probe_set',"
        " function(k, a) return redis.call('SET', k[1], 'x') end)\n"
    )
    try:
        await client.function_load(lib, replace=True)
        with pytest.raises(ResponseError, match="can't access at least one of the keys"):
            await client.fcall("probe_hget", 0, "secret-hash")
        with pytest.raises(NoPermissionError):  # declared keys are checked before the call
            await client.fcall("probe_hget", 1, "secret-hash", "secret-hash")
        with pytest.raises(ResponseError, match="can't run this command"):
            await client.fcall("probe_set", 1, "nd:{a}:d")
        assert await admin.hget("secret-hash", "f") == b"s3"
    finally:
        await admin.function_delete("probe")


# --------------------------------------------------------------------------- /check: teaching


def test_a_check_never_teaches_boilerplate(worker: Worker, acl_redis: str) -> None:
    """Four pages of one site with one navigation line, each registered through ``/check``
    with the site as ``source``: no line is counted in the index (a request could name any
    source and teach it another site's text). The same pages sent the way the stream sends
    them count their lines."""
    nav = "Home | World | Business | Markets | Sport | Weather"
    bodies = [d["text"] for d in generate(4, seed=41, dup_rate=0.0)]
    ns, control = f"teach{uuid.uuid4().hex[:8]}", f"control{uuid.uuid4().hex[:8]}"
    for i, body in enumerate(bodies):
        obj = {"id": f"t{i}", "text": f"{nav}\n{body}", "source": "site.example"}
        status, got = worker.check(_article(**obj, namespace=ns, register=True))
        assert (status, got["verdict"]) == (200, "original"), got
    with redis.Redis.from_url(acl_redis) as admin:
        assert sum(admin.hlen(k) for k in keys.lines(ns)) == 0
        assert admin.hlen(keys.ids(ns)) == 4  # registered all the same

    async def stream() -> None:
        client = aioredis.Redis.from_url(acl_redis)
        try:
            engine = Engine(RedisIndex(client))
            for i, body in enumerate(bodies):
                art = Article(f"t{i}", f"{nav}\n{body}", control, source="site.example")
                (v,) = await engine.process([art])
                assert isinstance(v, Verdict) and v.verdict == "original"
        finally:
            await client.aclose()

    asyncio.run(stream())
    with redis.Redis.from_url(acl_redis) as admin:
        assert sum(admin.hlen(k) for k in keys.lines(control)) > 0


def test_the_admin_cli_reads_the_workers_redis_settings(acl_redis: str) -> None:
    """``neardup namespaces`` with no ``--store``: the URL from NEARDUP_REDIS_URL (no password
    in it) and the password from NEARDUP_REDIS_PASSWORD, as the worker reads them."""
    import os
    import subprocess
    import sys

    neardup = Path(sys.executable).parent / "neardup"
    env = {
        **os.environ,
        "NEARDUP_REDIS_URL": user_url(acl_redis, "neardup"),
        "NEARDUP_REDIS_PASSWORD": PASSWORD,
    }
    done = subprocess.run(
        [str(neardup), "namespaces", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "namespaces" in json.loads(done.stdout)
    env["NEARDUP_REDIS_PASSWORD"] = "wrong"
    refused = subprocess.run(
        [str(neardup), "namespaces", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 1 and "neardup namespaces" in refused.stderr
