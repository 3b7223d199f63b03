"""The Python API: ``neardup.Index`` on memory, as a datasketch user works (add, query,
check, remove), with the verdicts the engine gives."""

from __future__ import annotations

import pytest

import neardup
from harness import data
from neardup import Index, NeardupError, Policy
from neardup.stream.engine.engine import Engine

STORIES = [d["text"] for d in data.reuters()[:40] if len(d["text"]) > 400][:6]


def _edited(text: str) -> str:
    return text.replace(" the ", " a ", 3) + " An added closing line."


def test_the_import_name_exports_the_api_and_nothing_else() -> None:
    assert sorted(neardup.__all__) == [
        "Article",
        "Index",
        "Invalid",
        "NeardupError",
        "Policy",
        "Verdict",
        "dedup",
        "keep_mask",
    ]
    assert all(hasattr(neardup, name) for name in neardup.__all__)


def test_add_query_check_and_remove() -> None:
    with Index() as index:
        assert index.add("a", STORIES[0]).verdict == "original"
        copy = index.add("b", _edited(STORIES[0]))
        assert (copy.verdict, copy.duplicate_of) == ("near_duplicate", "a")
        assert copy.similarity is not None and 0.8 < copy.similarity < 1.0
        assert index.add("c", STORIES[1]).verdict == "original"
        assert index.query(STORIES[0])[:2] == ["a", "b"]
        assert index.query(STORIES[2]) == []
        checked = index.check(STORIES[1])
        assert (checked.verdict, checked.duplicate_of) == ("duplicate", "c")
        assert index.query(STORIES[2]) == []  # check and query stored nothing
        assert index.remove("a") is True
        assert index.remove("a") is False
        assert index.query(STORIES[0]) == ["b"]


def test_adding_an_id_again_gives_its_first_verdict() -> None:
    with Index() as index:
        index.add("a", STORIES[0])
        first = index.add("b", _edited(STORIES[0]))
        assert index.add("b", _edited(STORIES[0])) == first


def test_namespaces_are_apart_and_fields_reach_the_article() -> None:
    with Index(namespace="left") as left, Index(namespace="right") as right:
        left.add("a", STORIES[0], title="A story", source="wire.example")
        right._engine = left._engine  # one store, two namespaces: share the engine's index
        assert right.query(STORIES[0]) == []
        assert left.query(STORIES[0]) == ["a"]


def test_bad_input_is_a_clear_error_and_a_closed_index_says_so() -> None:
    with pytest.raises(ValueError, match="memory' or a redis"):
        Index("postgres://x")
    with pytest.raises(ValueError, match="namespace must match"):
        Index(namespace="no spaces here")
    with Index() as built, Index(policy=Policy(threshold=0.5)) as other:
        built.add("a", STORIES[0])
        other._engine = Engine(built._engine.index, Policy(threshold=0.5))  # one store, two schemes
        with pytest.raises(NeardupError, match="scheme"):
            other.add("b", STORIES[1])  # the engine's error for the article, raised
    index = Index()
    with pytest.raises(ValueError, match="format must be one of"):
        index.add("a", STORIES[0], format="pdf")
    index.close()
    index.close()  # twice is fine
    with pytest.raises(RuntimeError, match="closed"):
        index.add("a", STORIES[0])
