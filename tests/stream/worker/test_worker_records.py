"""Every record the worker produces has a bounded size, whatever the message held (no broker).

A dead letter used to copy the key twice, JSON-escaped: a 200 KB key of control bytes made a
1.4 MB record, which Kafka refuses (``message.max.bytes`` is 1 MiB by default); the send failed
and the worker exited, on every restart.
"""

from __future__ import annotations

import base64
import hashlib

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.schema import MAX_KEY_BYTES
from neardup.stream.worker.dead_letters import DLQ_MAX_RECORD_BYTES, dead_letter
from neardup.stream.worker.messages import Incoming
from neardup.stream.worker.metrics import Metrics
from neardup.stream.worker.pipeline import BatchHandler

KAFKA_DEFAULT_MAX_BYTES = 1_048_588
CONTROL = st.binary(min_size=0, max_size=300_000).map(lambda b: bytes(x % 32 for x in b))


def size(key: bytes, value: bytes | None) -> int:
    return len(key) + len(value or b"")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.one_of(st.binary(max_size=300_000), CONTROL),
    value=st.one_of(
        st.binary(max_size=300_000), CONTROL, st.text(max_size=100_000).map(str.encode)
    ),
    error=st.text(max_size=5000),
)
@example(key=bytes(range(32)) * 6400, value=b"\x01" * 300_000, error="e")
@example(key=b"k", value=b"\x01" * 60_000, error="")  # UTF-8 that escaping makes 6x larger
@example(key=b"k", value="\u00e9".encode() * 40_000, error="")  # a cut inside a character
@example(key=b"\xff" * 100_000, value=b"\xff" * 100_000, error="x" * 100_000)
def test_a_dead_letter_is_bounded_for_any_key_and_value(
    key: bytes, value: bytes, error: str
) -> None:
    out = dead_letter(Incoming(value, key, "articles", 0, 7), "invalid_json", error)
    assert size(out.key, out.value) <= DLQ_MAX_RECORD_BYTES
    body = orjson.loads(out.value or b"")
    assert body["key_bytes"] == len(key) and body["value_bytes"] == len(value)
    assert body["key_sha256"] == hashlib.sha256(key).hexdigest()
    assert body["value_sha256"] == hashlib.sha256(value).hexdigest()
    shown = (
        body["value"].encode()
        if body["value"] is not None
        else base64.b64decode(body["value_base64"])
    )
    assert value.startswith(shown)  # what is shown is a prefix of the message, never altered
    assert body["truncated"] == (len(shown) < len(value))


def test_a_200_kb_key_of_control_bytes_makes_a_small_dead_letter() -> None:
    key = bytes(range(32)) * 6400  # 204,800 bytes, each escaped to \\u00XX in JSON
    out = dead_letter(Incoming(key, key, "articles", 0, 1), "oversize_key", "too long")
    assert size(out.key, out.value) <= DLQ_MAX_RECORD_BYTES < KAFKA_DEFAULT_MAX_BYTES
    assert orjson.loads(out.value or b"")["key_truncated"] is True


async def test_an_oversize_key_is_a_dead_letter_and_the_batch_goes_on() -> None:
    handler = BatchHandler(Engine(MemoryIndex()), Metrics())
    text = "a text long enough to be an ordinary article of the stream " * 3
    good = orjson.dumps({"id": "a", "text": text})
    batch = [
        Incoming(good, b"\x01" * 200_000, "articles", 0, 1),
        Incoming(None, b"\x02" * (MAX_KEY_BYTES + 1), "articles", 0, 2),  # a tombstone too
        Incoming(good, b"a" * MAX_KEY_BYTES, "articles", 0, 3),  # at the limit: accepted
    ]
    verdicts, dead = await handler.handle(batch)
    assert [v.key for v in verdicts] == [b"a"]
    bodies = [orjson.loads(d.value or b"") for d in dead]
    assert [(b["reason"], b["source"]["offset"]) for b in bodies] == [
        ("oversize_key", 1),
        ("oversize_key", 2),
    ]
    assert bodies[0]["key_bytes"] == 200_000
    assert all(size(d.key, d.value) <= DLQ_MAX_RECORD_BYTES for d in dead)
