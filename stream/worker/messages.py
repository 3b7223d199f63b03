"""The worker's Kafka records: a message read, a record to produce, and the verdict topic's keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Incoming:
    value: bytes | None
    key: bytes | None
    topic: str
    partition: int
    offset: int
    headers: Sequence[tuple[str, bytes | None]] = ()


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A record to produce; ``value`` None is a tombstone. ``namespace``: the article's, sent
    as the record's ``namespace`` header (a verdict or tombstone says whose it is)."""

    key: bytes
    value: bytes | None
    namespace: str | None = None

    def headers(self) -> list[tuple[str, bytes]] | None:
        return None if self.namespace is None else [("namespace", self.namespace.encode())]


KEY_SEPARATOR = "\x1f"


def verdict_key(namespace: str, doc_id: str, home: str) -> bytes:
    """The key of an article's verdict (and of its tombstone) on the verdict topic.

    The id alone for the worker's own namespace (``NEARDUP_NAMESPACE``), as single-tenant
    consumers expect; ``namespace + "\\x1f" + id`` for any other. Ids are printable, so no plain
    id contains the separator, and a namespace cannot contain it either: two namespaces' articles
    never share a key, and on a compacted topic one tenant's verdict or tombstone can never
    replace another's. Workers writing one verdict topic must share ``NEARDUP_NAMESPACE``.
    """
    key = doc_id if namespace == home else namespace + KEY_SEPARATOR + doc_id
    return key.encode("utf-8")


def split_verdict_key(key: bytes) -> tuple[str | None, str]:
    """A verdict key read back: ``(namespace, id)``, the namespace None for the worker's own."""
    text = key.decode("utf-8", "replace")
    ns, sep, doc_id = text.partition(KEY_SEPARATOR)
    return (ns, doc_id) if sep else (None, text)


__all__ = ["KEY_SEPARATOR", "Incoming", "Outgoing", "split_verdict_key", "verdict_key"]
