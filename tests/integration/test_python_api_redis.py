"""``neardup.Index`` on a real Redis: what one index adds, another (another process, a worker)
finds; a removal is seen by both; closing leaves the texts in Redis."""

from __future__ import annotations

import uuid

import pytest

from harness import data
from neardup import Index

STORIES = [d["text"] for d in data.reuters()[:40] if len(d["text"]) > 400][:3]


def test_two_indexes_on_one_redis_share_what_they_add(redis_url: str) -> None:
    ns = f"api-{uuid.uuid4().hex[:8]}"
    with Index(redis_url, namespace=ns) as one:
        assert one.add("a", STORIES[0]).verdict == "original"
    with Index(redis_url, namespace=ns) as two:  # a new connection: the text stayed in Redis
        copy = two.add("b", STORIES[0] + " One more line.")
        assert (copy.verdict, copy.duplicate_of) == ("near_duplicate", "a")
        assert two.query(STORIES[0])[:1] == ["a"]
        with Index(redis_url, namespace=ns) as three:
            assert three.remove("a") is True
        assert two.query(STORIES[0]) == ["b"]
        assert two.query(STORIES[1]) == []


def test_an_unreachable_redis_is_a_clear_error() -> None:
    with pytest.raises(Exception, match=r"(?i)connect|unavailable|refused"):
        Index("redis://127.0.0.1:1/0")
