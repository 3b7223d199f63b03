"""The worker's batch policy, no broker: dead letters, conflicts, retries while Redis is away."""

from __future__ import annotations

import orjson
import pytest

from stream.engine import Engine
from stream.errors import IndexUnavailableError
from stream.index.memory import MemoryIndex
from stream.metrics import Metrics
from stream.pipeline import BatchHandler, Incoming

TEXT = "the committee approved the new budget for public schools after a long debate " * 3


def msg(value: bytes | None, offset: int, key: bytes = b"k") -> Incoming:
    return Incoming(value, key, "articles", 3, offset)


async def test_bad_messages_become_dead_letters_and_good_ones_verdicts() -> None:
    handler = BatchHandler(Engine(MemoryIndex()), Metrics(), max_message_bytes=2000)
    batch = [
        msg(b"{oops", 10),
        msg(orjson.dumps({"id": "a", "text": TEXT}), 11),
        msg(None, 12),
        msg(orjson.dumps({"id": "big", "text": "x" * 3000}), 13),
        msg(b'{"id": "u", "text": "\xff"}', 14),
        msg(orjson.dumps({"id": "b", "text": TEXT}), 15),
        msg(orjson.dumps({"id": "a", "text": "a different text under the same id " * 5}), 16),
    ]
    verdicts, dead = await handler.handle(batch)
    assert [orjson.loads(v.value)["id"] for v in verdicts] == ["a", "b"]
    assert [v.key for v in verdicts] == [b"a", b"b"]
    assert orjson.loads(verdicts[1].value)["verdict"] == "duplicate"
    reasons = [
        (orjson.loads(d.value)["reason"], orjson.loads(d.value)["source"]["offset"]) for d in dead
    ]
    assert reasons == [
        ("invalid_json", 10),
        ("empty_message", 12),
        ("oversize", 13),
        ("invalid_utf8", 14),
        ("conflict", 16),
    ]
    bad_utf8 = orjson.loads(dead[3].value)
    assert bad_utf8["value"] is None and bad_utf8["value_base64"]
    text = handler.metrics.render().decode()
    assert 'neardup_dead_letters_total{reason="conflict"} 1.0' in text
    assert "neardup_articles_in_total 7.0" in text


class FlakyIndex(MemoryIndex):
    """A real MemoryIndex whose first ``failures`` registrations find the store away."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def register(self, ns, regs, cap):  # type: ignore[no-untyped-def]
        if self.failures:
            self.failures -= 1
            raise IndexUnavailableError("connection refused")
        return await super().register(ns, regs, cap)


async def test_index_away_pauses_and_retries_instead_of_dead_lettering() -> None:
    states: list[bool] = []
    handler = BatchHandler(
        Engine(FlakyIndex(failures=3)),
        Metrics(),
        backoff_max_s=0.01,
        on_unavailable=states.append,
    )
    verdicts, dead = await handler.handle([msg(orjson.dumps({"id": "a", "text": TEXT}), 1)])
    assert len(verdicts) == 1 and dead == []
    assert states == [True, True, True, False]
    assert "neardup_index_retries_total 3.0" in handler.metrics.render().decode()


async def test_stopping_worker_gives_up_retrying() -> None:
    handler = BatchHandler(Engine(FlakyIndex(failures=100)), Metrics(), should_stop=lambda: True)
    with pytest.raises(IndexUnavailableError):
        await handler.handle([msg(orjson.dumps({"id": "a", "text": TEXT}), 1)])
