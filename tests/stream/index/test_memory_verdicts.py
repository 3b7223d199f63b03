"""The memory index keeps a plain verdict (a new original's: most of them) as one byte and
rebuilds its bytes when read: every verdict put is read back byte for byte, through deletions,
expiry and a saved file, and the rebuilt bytes are the model's own."""

from __future__ import annotations

import asyncio

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.stream.index import memory_file
from neardup.stream.index.base import Registration, StoredVerdict
from neardup.stream.index.memory import MemoryIndex, plain_verdict
from neardup.stream.model import Verdict
from neardup.stream.records import Kind, Record

IDS = st.text(min_size=1, max_size=8)  # quotes, backslashes, controls, any script


def _original(doc_id: str, ns: str, seq: int) -> Verdict:
    return Verdict(doc_id, ns, "original", None, doc_id, None, (), "new", seq)


@settings(max_examples=200, deadline=None)
@given(IDS, st.sampled_from(["default", "n\u00e9", 'q"s']), st.integers(1, 2**53))
def test_a_plain_verdict_is_the_models_bytes(doc_id: str, ns: str, seq: int) -> None:
    assert plain_verdict(doc_id, ns, seq) == _original(doc_id, ns, seq).to_json()


def _reg(doc_id: str) -> Registration:
    rec = Record(doc_id, Kind.SHORT, 0.0, 0, b"c" * 16, (1,), np.empty(0, np.uint32), "t")
    return Registration(doc_id, rec.content, (1,), rec.encode(), 0.0)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(IDS, min_size=1, max_size=12, unique=True),
    st.lists(st.tuples(st.integers(0, 11), st.sampled_from(["plain", "other", "ns"]))),
    st.lists(st.integers(0, 11), max_size=3),
    st.integers(0, 2**40),
)
def test_every_verdict_put_is_read_back(
    ids: list[str], puts: list[tuple[int, str]], gone: list[int], start: int
) -> None:
    async def run() -> None:
        index = MemoryIndex(clock=lambda: 1.0)
        index.start_at("ns", start)
        probes = await index.register("ns", [_reg(i) for i in ids], 4)
        want: dict[int, bytes] = {}
        for k, how in puts:
            if k >= len(ids):
                continue
            seq, doc_id = probes[k].seq, ids[k]
            v = _original(doc_id, "other-ns" if how == "ns" else "ns", seq)
            blob = v.to_json() if how != "other" else v.to_json().replace(b"new", b"NEW")
            await index.put_verdicts("ns", {seq: StoredVerdict(doc_id, blob)})
            want[seq] = blob
        for k in gone:
            if k < len(ids):
                await index.delete("ns", ids[k])
                want.pop(probes[k].seq, None)
        seqs = [p.seq for p in probes]
        assert await index.verdicts("ns", seqs) == want
        assert index.space("ns").all_verdicts() == dict(sorted(want.items()))
        assert (await index.stats("ns")).verdicts == len(want)
        for name in ("ns", "renamed"):  # a saved file, read back under its name or another
            data = memory_file.dump(index.space("ns"), "ns", {})
            header, body = memory_file.read_header(data, "test")
            copy = MemoryIndex()
            copy.put_space(name, memory_file.load(header, body, "test"))
            assert await copy.verdicts(name, seqs) == want  # bytes as stored
        again = await index.register("ns", [_reg(i) for i in ids], 4)
        assert [p.verdict for p in again if p.status == "replay"] == [
            want.get(p.seq) for p in again if p.status == "replay"
        ]

    asyncio.run(run())
