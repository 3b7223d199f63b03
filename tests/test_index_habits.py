"""``neardup.Index`` has the habits of the libraries it stands beside: ``in``, ``len``,
iteration over the ids in registration order (read in batches) and ``stats()``, with ids taken as
``add`` takes them (``5`` is ``"5"``). On memory here; on Redis in
tests/integration/test_index_habits_redis.py."""

from __future__ import annotations

from typing import Any

import pytest

from harness import data
from neardup import Index, Policy
from neardup.stream.engine import reindex
from neardup.stream.errors import DeletedError
from neardup.stream.index.base import NamespaceStats
from neardup.stream.namespaces import aliases

STORIES = [d["text"] for d in data.reuters()[:60] if len(d["text"]) > 400][:4]


def _edited(text: str) -> str:
    return text.replace(" the ", " a ", 3) + " An added closing line."


def test_in_len_and_iteration_follow_adds_and_removals() -> None:
    with Index() as index:
        assert len(index) == 0 and list(index) == [] and "a" not in index
        index.add("a", STORIES[0])
        index.add(5, STORIES[1])
        index.add("b", _edited(STORIES[0]))  # a copy is registered too
        index.add("c", STORIES[2])
        assert len(index) == 4
        assert list(index) == ["a", "5", "b", "c"]  # registration order
        assert "a" in index and 5 in index and "5" in index and "b" in index
        assert "z" not in index and 6 not in index and "05" not in index
        assert index.remove(5) is True  # an int id, as add takes it
        assert index.remove("5") is False
        assert 5 not in index and "5" not in index
        assert (len(index), list(index)) == (3, ["a", "b", "c"])
        with pytest.raises(DeletedError):
            index.add("5", STORIES[1])  # taken down stays down
        assert 5 not in index and len(index) == 3
        index.check(STORIES[3])  # a check registers nothing
        assert len(index) == 3


def test_ids_are_taken_as_add_takes_them() -> None:
    with Index() as index:
        index.add(-3, STORIES[0])
        assert -3 in index and "-3" in index
        for bad in (5.0, None, True, b"a", ["a"], "x" * 600):
            with pytest.raises(ValueError):
                bad in index  # noqa: B015 (the test is that it raises)


def test_stats_count_documents_copies_and_clusters() -> None:
    with Index(namespace="habits") as index:
        empty = index.stats()
        assert isinstance(empty, NamespaceStats)
        assert (empty.namespace, empty.documents, empty.copies, empty.scheme) == (
            "habits",
            0,
            0,
            None,
        )
        index.add("a", STORIES[0])
        index.add("b", _edited(STORIES[0]))
        index.add("c", STORIES[0])  # verbatim
        index.add("d", STORIES[1])
        got = index.stats()
        assert (got.documents, got.copies, got.clusters, got.verdicts) == (4, 2, 2, 4)
        assert got.scheme is not None and '"format":' in got.scheme
        assert got.bytes > 0
        index.remove("b")
        got = index.stats()
        assert (got.documents, got.copies, got.clusters) == (3, 1, 2)
        with pytest.raises(AttributeError):
            got.documents = 0  # type: ignore[misc]  # frozen


def test_iteration_reads_a_batch_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reindex, "BATCH", 64)  # stored_records' batch
    n = 2 * 64 + 76
    with Index() as index:
        for i in range(n):
            index.add(i, f"note {i}: the {i % 7} crates left the depot on day {i}")
        for i in range(0, n, 3):
            index.remove(i)
        reads: list[int] = []
        store: Any = index._engine.index
        real = store.records

        async def counted(ns: str, seqs: list[int]) -> dict[int, bytes]:
            reads.append(len(seqs))
            return dict(await real(ns, seqs))

        monkeypatch.setattr(store, "records", counted)
        it = iter(index)
        assert reads == []  # nothing read before it is asked for
        assert next(it) == "1"
        assert reads == [64]  # the first batch only
        rest = list(it)
        assert ["1", *rest] == [str(i) for i in range(n) if i % 3]
        assert reads == [64, 64, 64, 12]


def test_removing_while_iterating_and_a_closed_index() -> None:
    index = Index()
    for i in range(10):
        index.add(i, f"item {i} of the list, the {i}th one")
    for doc in index:
        index.remove(doc)
    assert (len(index), list(index)) == (0, [])
    index.close()
    with pytest.raises(RuntimeError, match="closed"):
        len(index)
    with pytest.raises(RuntimeError, match="closed"):
        list(index)


def test_a_rebuilt_namespace_is_read_where_it_now_lives() -> None:
    with Index(namespace="news") as index:
        store: Any = index._engine.index
        index._run(store.set_alias("news", aliases.value("news.r2", Policy())))
        index.add("a", STORIES[0])  # indexed in news.r2, as the engine sends it
        assert index._run(store.count("news")) == 0
        assert ("a" in index, len(index), list(index)) == (True, 1, ["a"])
        assert index.stats().namespace == "news.r2"
