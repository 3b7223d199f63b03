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

from stream.app import Worker
from stream.config import Settings
from stream.pipeline import Outgoing


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
            if not self.late:
                raise MessageSizeTooLargeError("too large for max_request_size")
            done.set_exception(RecordTooLargeError("the broker refused it"))
            return done
        self.sent.append((key, value))
        done.set_result(None)
        return done


def worker(tmp_path: Path) -> Worker:
    return Worker(Settings(data_dir=str(tmp_path), web_port=6066))  # nothing is started


async def test_a_refused_record_becomes_a_small_dead_letter_and_order_holds(
    tmp_path: Path,
) -> None:
    for late in (False, True):
        w = worker(tmp_path)
        w.verdict_topic = FakeTopic("verdicts", 1000, late)
        w.dlq_topic = FakeTopic("articles.dlq", 1000, late)
        verdicts = [
            Outgoing(b"a", b"{}"),
            Outgoing(b"big", b"x" * 5000),
            Outgoing(b"a", None),
        ]
        await w.publish(verdicts, [Outgoing(b"d", b"y" * 5000)])
        assert w.verdict_topic.sent == [(b"a", b"{}"), (b"a", None)]
        letters = [orjson.loads(v or b"") for _, v in w.dlq_topic.sent]
        assert [(d["reason"], d["topic"], d["value_bytes"]) for d in letters] == [
            ("oversize_record", "verdicts", 5000),
            ("oversize_record", "articles.dlq", 5000),
        ]
