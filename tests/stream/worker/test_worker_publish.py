"""The worker's publish step with a broker that refuses large records (fake topics, no broker).

Records are bounded, but a broker may be set to a smaller ``message.max.bytes``: a refused record
must not stop the worker (it would be refused again on every restart), and order must hold (an
article's verdict before its tombstone)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
from aiokafka.errors import MessageSizeTooLargeError, RecordTooLargeError
from faust.exceptions import ProducerSendError

from neardup.stream.worker.app import Worker
from neardup.stream.worker.config import Settings
from neardup.stream.worker.messages import Outgoing


class FakeTopic:
    """Takes records in order; refuses those over ``limit`` at send or on delivery."""

    def __init__(self, name: str, limit: int, late: bool = False) -> None:
        self.name, self.limit, self.late = name, limit, late
        self.sent: list[tuple[bytes, bytes | None]] = []

    def get_topic_name(self) -> str:
        return self.name

    async def send(self, key: bytes, value: bytes | None) -> asyncio.Future[Any]:
        await asyncio.sleep(0)
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if len(key) + len(value or b"") > self.limit:
            if not self.late:  # as faust's producer raises it: wrapped
                try:
                    raise MessageSizeTooLargeError("too large for max_request_size")
                except MessageSizeTooLargeError as exc:
                    raise ProducerSendError(f"Error while sending: {exc!r}") from exc
            done.set_exception(RecordTooLargeError("the broker refused it"))
            return done
        self.sent.append((key, value))
        done.set_result(None)
        return done


def worker(tmp_path: Path, *topics: FakeTopic) -> Worker:
    """A worker whose producer hands each record to the fake topic of its name."""
    w = Worker(Settings(data_dir=str(tmp_path), web_port=6066))  # nothing is started
    by_name = {t.name: t for t in topics}

    async def send(topic: str, key: bytes | None, value: bytes | None, headers: Any = None) -> Any:
        assert key is not None
        return await by_name[topic].send(key, value)

    w._send = send  # type: ignore[method-assign]  # the producer, replaced
    return w


async def test_a_refused_record_becomes_a_small_dead_letter_and_order_holds(
    tmp_path: Path,
) -> None:
    for late in (False, True):
        verdict_topic = FakeTopic("verdicts", 1000, late)
        dlq_topic = FakeTopic("articles.dlq", 1000, late)
        w = worker(tmp_path, verdict_topic, dlq_topic)
        w.verdict_topic, w.dlq_topic = verdict_topic, dlq_topic
        verdicts = [
            Outgoing(b"a", b"{}"),
            Outgoing(b"big", b"x" * 5000),
            Outgoing(b"a", None),
        ]
        await w.publish(verdicts, [Outgoing(b"d", b"y" * 5000)])
        assert verdict_topic.sent == [(b"a", b"{}"), (b"a", None)]
        letters = [orjson.loads(v or b"") for _, v in dlq_topic.sent]
        assert [(d["reason"], d["source"]["topic"], d["value_bytes"]) for d in letters] == [
            ("oversize_record", "verdicts", 5000),
            ("oversize_record", "articles.dlq", 5000),
        ]
