"""``neardup.Index`` on a real Redis has the habits it has on memory (``in``, ``len``, iteration
in registration order, read a batch at a time, ``stats()``), and says that its texts cannot be
saved or pickled: they live in Redis."""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import pytest

from harness import data
from neardup import Index
from neardup.stream.engine import reindex
from neardup.stream.errors import DeletedError, IndexFileError

STORIES = [d["text"] for d in data.reuters()[:60] if len(d["text"]) > 400][:3]


def test_in_len_iteration_and_stats_on_redis(redis_url: str) -> None:
    ns = f"habits-{uuid.uuid4().hex[:8]}"
    with Index(redis_url, namespace=ns) as index:
        assert (len(index), list(index), "a" in index) == (0, [], False)
        index.add("a", STORIES[0])
        index.add(5, STORIES[1])
        index.add("b", STORIES[0] + " One more line.")
        index.add("c", STORIES[2])
        with Index(redis_url, namespace=ns) as other:  # what one adds, another counts
            assert (len(other), list(other)) == (4, ["a", "5", "b", "c"])
            assert 5 in other and "5" in other and "z" not in other
            stats = other.stats()
            assert (stats.namespace, stats.documents, stats.copies, stats.clusters) == (
                ns,
                4,
                1,
                3,
            )
            assert stats.scheme is not None
        assert index.remove(5) is True and index.remove("5") is False
        assert (5 in index, len(index), list(index)) == (False, 3, ["a", "b", "c"])
        with pytest.raises(DeletedError):
            index.add(5, STORIES[1])
        assert index.stats().documents == 3


def test_iteration_streams_a_batch_at_a_time(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reindex, "BATCH", 4)
    with Index(redis_url, namespace=f"habits-{uuid.uuid4().hex[:8]}") as index:
        for i in range(10):
            index.add(i, f"line {i} of a list of things, the {i}th and not the {i + 1}th")
        index.remove(4)
        reads: list[int] = []
        store: Any = index._engine.index
        real = store.records

        async def counted(ns: str, seqs: list[int]) -> dict[int, bytes]:
            reads.append(len(seqs))
            return dict(await real(ns, seqs))

        monkeypatch.setattr(store, "records", counted)
        it = iter(index)
        assert (next(it), reads) == ("0", [4])
        assert list(it) == ["1", "2", "3", "5", "6", "7", "8", "9"]
        assert reads == [4, 4, 2]


def test_a_redis_index_is_not_saved_nor_pickled(redis_url: str, tmp_path: Any) -> None:
    with Index(redis_url, namespace="habits-saved") as index:
        for act in (lambda: index.save(tmp_path / "x"), lambda: pickle.dumps(index)):
            with pytest.raises(IndexFileError, match=r"live in Redis.*neardup export habits-saved"):
                act()
    assert list(tmp_path.iterdir()) == []
