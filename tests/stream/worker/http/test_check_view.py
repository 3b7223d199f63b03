"""``POST /check``'s view on the memory store, with a stand-in request: a text with nothing to
read is a 400 ``empty_text``, a wordless one is judged as sent, and a numeric id is the exact
text of its number or a 400 ``invalid_id`` (over a real worker: tests/integration/worker/http)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.worker.config import Settings
from neardup.stream.worker.http import web

ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
SCOTLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
TEXT = "the council approved the budget for the new library after a long debate"


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def read(self, n: int) -> bytes:
        out, self.data = self.data[:n], self.data[n:]
        return out


class _Request:
    def __init__(self, body: bytes) -> None:
        self.headers = {"Content-Type": "application/json"}
        self.content_length = len(body)
        self.content = _Body(body)
        self.query: dict[str, str] = {}


class _View:
    def json(self, data: Any, status: int = 200, **_: Any) -> tuple[int, Any]:
        return status, data


async def _check(engine: Engine, body: bytes) -> tuple[int, Any]:
    got = await web.check(_View(), _Request(body), Settings(), engine)  # type: ignore[arg-type]
    return got  # type: ignore[return-value]


@pytest.mark.parametrize(
    "text", ["\u200b\u200b", "\u2060\ufeff\u200d", "<p></p>", "<div><br></div>", "&#8203;"]
)
async def test_a_text_with_nothing_to_read_is_a_400(text: str) -> None:
    engine = Engine(MemoryIndex())
    for register in (False, True):
        body = orjson.dumps({"id": "a", "text": text, "register": register})
        status, out = await _check(engine, body)
        assert (status, out["error"]) == (400, "empty_text"), out
        assert "shows nothing" in out["detail"]


async def test_two_flags_are_two_comments() -> None:
    engine = Engine(MemoryIndex())
    status, out = await _check(
        engine, orjson.dumps({"id": "en", "text": ENGLAND, "register": True})
    )
    assert (status, out["verdict"]) == (200, "original")
    status, out = await _check(engine, orjson.dumps({"text": SCOTLAND}))
    assert (status, out["verdict"], out["duplicate_of"]) == (200, "original", None)
    status, out = await _check(engine, orjson.dumps({"text": ENGLAND}))
    assert (status, out["verdict"], out["duplicate_of"]) == (200, "duplicate", "en")


@pytest.mark.parametrize(
    ("number", "doc_id"),
    [
        ("-9223372036854775809", "-9223372036854775809"),
        ("18446744073709551616", "18446744073709551616"),
        ("42", "42"),
        ("1e3", None),
        ("1.0", None),
        ("-0", None),
    ],
)
async def test_a_numeric_id_is_its_exact_text_or_a_400(number: str, doc_id: str | None) -> None:
    engine = Engine(MemoryIndex())
    body = b'{"register": true, "text": "' + TEXT.encode() + b'", "id": ' + number.encode() + b"}"
    status, out = await _check(engine, body)
    if doc_id is None:
        assert (status, out["error"]) == (400, "invalid_id"), out
    else:
        assert (status, out["id"], out["registered"]) == (200, doc_id, True), out


async def test_1e3_and_1000_are_never_one_article() -> None:
    engine = Engine(MemoryIndex())
    status, out = await _check(
        engine, b'{"register": true, "id": 1000, "text": "' + TEXT.encode() + b'"}'
    )
    assert (status, out["id"]) == (200, "1000")
    status, out = await _check(engine, b'{"register": true, "id": 1e3, "text": "another text"}')
    assert (status, out["error"]) == (400, "invalid_id")  # not a conflict with "1000"


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("localhost", "localhost"),
        ("localhost:6066", "localhost"),
        ("127.0.0.1:80", "127.0.0.1"),
        ("[::1]:6066", "::1"),
        ("[::1]", "::1"),
        ("evil.example:6066", "evil.example"),
        ("evil.example", "evil.example"),
    ],
)
def test_the_name_a_host_header_gives(header: str, name: str) -> None:
    assert web.host_name(header) == name


def test_only_a_worker_without_a_token_on_loopback_checks_hosts() -> None:
    assert web.loopback_hosts_only(Settings(web_host="127.0.0.1")) is not None
    assert web.loopback_hosts_only(Settings(web_host="::1")) is not None
    assert web.loopback_hosts_only(Settings(web_host="127.0.0.1", check_token="t")) is None  # type: ignore[arg-type]
    assert web.loopback_hosts_only(Settings(web_host="0.0.0.0", web_open=True)) is None
