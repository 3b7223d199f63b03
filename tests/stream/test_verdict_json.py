"""A verdict's JSON is what the in-memory index keeps for every document: it must cost its own
size, not the buffer the encoder wrote it into (orjson keeps 4 KB or more behind each result)."""

from __future__ import annotations

import tracemalloc

import orjson

from neardup.stream.model import Verdict


def _verdict(i: int) -> Verdict:
    return Verdict(f"doc-{i}", "default", "original", None, f"doc-{i}", None, (), "new", i, 0)


def test_a_verdicts_json_holds_no_more_memory_than_its_bytes() -> None:
    verdicts = [_verdict(i) for i in range(500)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        blobs = [v.to_json() for v in verdicts]
        held = (tracemalloc.get_traced_memory()[0] - before) / len(blobs)
    finally:
        tracemalloc.stop()
    size = max(map(len, blobs))
    assert held < size + 200, (held, size)  # the bytes object's header, and the list's slot
    assert orjson.loads(blobs[7])["id"] == "doc-7"
    assert Verdict.from_json(blobs[7]).to_json() == blobs[7]


def test_a_related_text_says_its_direction_only_when_it_has_one() -> None:
    """A related text that lies inside this one (or holds it) says so; a template sibling's
    entry keeps its bytes (earlier verdicts, the golden files), and both read back."""
    from neardup.stream.model import Change, Related

    v = Verdict(
        "b", "default", "original", None, "b", None, (), "new", 2, 1,
        related=(Related("a", 1.0, (), "embeds"), Related("c", 0.9, (Change("number", "1", "2"),))),
    )  # fmt: skip
    raw = orjson.loads(v.to_json())["related"]
    assert raw == [
        {"id": "a", "similarity": 1.0, "changes": [], "direction": "embeds"},
        {"id": "c", "similarity": 0.9, "changes": [{"kind": "number", "earlier": "1", "now": "2"}]},
    ]
    assert Verdict.from_json(v.to_json()).related == v.related
