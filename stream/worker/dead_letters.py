"""Dead letters: what the worker could not publish as a verdict, bounded, with the reason.

A message that is not a valid article (or that the engine refused) becomes a dead letter with
its source topic, partition and offset and as much of its value as the budget allows; a record
the broker refused as too large becomes one naming the topic it was for. Both are built by one
function, so every dead letter has the same fields and is at most
:data:`DLQ_MAX_RECORD_BYTES`, whatever the message held.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Mapping

import orjson

from neardup.stream.worker.messages import Incoming, Outgoing

DLQ_KEY_BYTES = 256
"""Bytes of the input key a dead letter keeps, as its Kafka key and in its ``key`` field."""
DLQ_VALUE_BYTES = 64 * 1024
"""Budget of the value shown in a dead letter, counted *after* JSON escaping."""
DLQ_ERROR_CHARS = 1024
DLQ_MAX_RECORD_BYTES = 80 * 1024
"""Upper bound of a dead letter's key + value: the budgets above plus a fixed envelope, far under
Kafka's default ``message.max.bytes`` (1 MiB)."""


def _shown_value(raw: bytes) -> tuple[str | None, str | None]:
    """The value as text when it is UTF-8 and its JSON escaping fits the budget, else base64
    (4/3 of the bytes, never escaped) of as much as fits."""
    part = raw[:DLQ_VALUE_BYTES]
    for cut in range(4 if len(raw) > DLQ_VALUE_BYTES else 1):  # a cut may split a character
        try:
            text = part[: len(part) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(orjson.dumps(text)) <= DLQ_VALUE_BYTES:
            return text, None
        break
    fits = DLQ_VALUE_BYTES // 4 * 3
    return None, base64.b64encode(raw[:fits]).decode("ascii")


def dead_letter(msg: Incoming, reason: str, error: str) -> Outgoing:
    """The original message, bounded, with why it was refused and where it came from."""
    source = {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset}
    return _letter(reason, error, msg.key or b"", msg.value or b"", source)


def refused(topic: str, m: Outgoing) -> Outgoing:
    """A dead letter standing for a record the broker refused as too large: its key and the
    value's size and hash, not the value (the broker refused it as too large already)."""
    n = len(m.value or b"")
    error = f"the broker refused a record of {n} bytes for {topic} as too large"
    return _letter("oversize_record", error, m.key, m.value or b"", {"topic": topic}, False)


def _letter(
    reason: str,
    error: str,
    key: bytes,
    raw: bytes,
    source: Mapping[str, object],
    show: bool = True,
) -> Outgoing:
    """Every dead letter: the reason and error, where the record came from or was going, its
    key and its value bounded (``show``: the value itself, else only its size and hash)."""
    shown, encoded = _shown_value(raw) if show else (None, None)
    body = {
        "reason": reason,
        "error": error[:DLQ_ERROR_CHARS],
        "source": dict(source),
        "key": key[:DLQ_KEY_BYTES].decode("utf-8", "replace"),
        "key_bytes": len(key),
        "key_sha256": hashlib.sha256(key).hexdigest(),
        "key_truncated": len(key) > DLQ_KEY_BYTES,
        "value": shown,
        "value_base64": encoded,
        "value_bytes": len(raw),
        "value_sha256": hashlib.sha256(raw).hexdigest(),
        "truncated": not show
        or len(raw) > DLQ_VALUE_BYTES
        or (encoded is not None and len(raw) > DLQ_VALUE_BYTES // 4 * 3),
        "at": time.time(),
    }
    return Outgoing(key[:DLQ_KEY_BYTES], orjson.dumps(body))


__all__ = [
    "DLQ_ERROR_CHARS",
    "DLQ_KEY_BYTES",
    "DLQ_MAX_RECORD_BYTES",
    "DLQ_VALUE_BYTES",
    "dead_letter",
    "refused",
]
