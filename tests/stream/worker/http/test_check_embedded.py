"""``POST /check`` in process (:func:`neardup.stream.worker.http.web.check`): the answer a
client reads, here for an earlier article quoted whole inside a longer text (issue 42, item
7): named among ``related`` with its ``direction`` at the defaults, as ``duplicate_of`` with
its ``direction`` under containment; the answer is a ``CheckOut``."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import SecretStr

from harness.embedded import embedded, own_words, stories
from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy
from neardup.stream.worker.config import Settings
from neardup.stream.worker.http import api_models, web

TOKEN = "t0ken"
STORY = stories(5)[4]  # r3520, 140 words
TEXT = embedded(own_words(0, avoid=[STORY.id]), STORY.text)


class _Content:
    def __init__(self, body: bytes) -> None:
        self._body = body

    async def read(self, n: int) -> bytes:
        out, self._body = self._body[:n], self._body[n:]
        return out


class _Request:
    """What the view reads of an aiohttp request: headers, length and the body's stream."""

    def __init__(self, body: dict[str, Any]) -> None:
        raw = orjson.dumps(body)
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
        self.content_length = len(raw)
        self.content = _Content(raw)


class _View:
    def json(self, value: Any, *, status: int = 200, headers: Any = None) -> tuple[int, Any]:
        return status, value


async def _post(engine: Engine, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    settings = Settings(check_token=SecretStr(TOKEN))
    got: Any = await web.check(_View(), _Request(body), settings, engine)  # type: ignore[arg-type]
    status, answer = got
    return status, answer


async def test_check_names_an_embedded_article_with_its_direction() -> None:
    engine = Engine(MemoryIndex())
    await engine.process([STORY])
    status, out = await _post(engine, {"text": TEXT})
    assert status == 200
    assert (out["verdict"], out["duplicate_of"], out["direction"], out["registered"]) == (
        "original", None, None, False,
    )  # fmt: skip
    assert out["related"] == [
        {"id": STORY.id, "similarity": 1.0, "changes": [], "direction": "embeds"}
    ]
    api_models.CheckOut.model_validate(out, strict=True)


async def test_check_under_containment_names_it_as_duplicate_of() -> None:
    engine = Engine(MemoryIndex(), Policy(measure="containment"))
    await engine.process([STORY])
    status, out = await _post(engine, {"text": TEXT, "id": "submission"})
    assert status == 200
    assert (out["verdict"], out["duplicate_of"], out["method"], out["direction"]) == (
        "near_duplicate", STORY.id, "containment", "embeds",
    )  # fmt: skip
    assert out["related"] == []
    api_models.CheckOut.model_validate(out, strict=True)


async def test_a_text_inside_an_earlier_one_is_an_excerpt() -> None:
    engine = Engine(MemoryIndex())
    await engine.process([Article("long", TEXT)])
    status, out = await _post(engine, {"text": STORY.text})
    assert status == 200
    assert out["verdict"] == "original"
    assert out["related"] == [
        {"id": "long", "similarity": 1.0, "changes": [], "direction": "excerpt"}
    ]
