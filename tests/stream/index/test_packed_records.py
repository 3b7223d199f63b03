"""The memory index keeps records with their text deflated and gives them back byte for byte."""

from __future__ import annotations

import struct
from dataclasses import replace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from harness.data import reuters
from neardup.stream.index.packed_records import MIN_DEFLATED, PackedRecords, pack, unpack
from neardup.stream.records import Kind, Record
from tests.stream.test_records import records

_TEXTS = st.one_of(
    st.text(max_size=300),
    st.text(alphabet="abc xyz.\n", min_size=MIN_DEFLATED, max_size=3000),  # deflates well
    st.text(alphabet=st.characters(codec="utf-8"), min_size=200, max_size=600),
)


@given(records(), _TEXTS)
def test_a_record_comes_back_byte_for_byte(rec: Record, raw: str) -> None:
    encoded = replace(rec, raw=raw).encode()
    at = Record.raw_at(encoded)
    assert encoded[at:] == raw.encode("utf-8", "surrogatepass")  # where the text starts
    held = pack(encoded)
    assert unpack(held) == encoded
    assert Record.id_of(held) == rec.doc_id  # the head is read without unpacking
    if len(encoded) - at >= MIN_DEFLATED and raw == "abc " * 200:
        assert len(held) < len(encoded)


def test_records_of_earlier_versions_have_their_text_where_the_decoder_reads_it() -> None:
    head = struct.pack("<BBHIdQ16sH", 1, 1, 0, 1, 2.0, 0, b"C" * 16, 1)
    v1 = head + b"a" + (5).to_bytes(4, "little")
    assert Record.raw_at(v1) == len(v1)
    v3 = b"\x03" + head[1:] + b"a" + (5).to_bytes(4, "little") + b"\0\0\0\0" + b"text " * 40
    assert v3[Record.raw_at(v3) :] == b"text " * 40
    for old in (v1, v3):
        assert unpack(pack(old)) == old


def test_a_story_is_kept_in_fewer_bytes() -> None:
    stories = [str(s["text"]) for s in reuters()[:300]]
    shingles = np.array([3, 9], dtype=np.uint32)
    encoded = [
        Record("d", Kind.LONG, 1.0, 0, b"C" * 16, (1, 2), shingles, "", raw=t).encode()
        for t in stories
    ]
    kept = PackedRecords(enumerate(encoded))
    assert [kept[i] for i in range(len(encoded))] == encoded
    raw = sum(len(t.encode()) for t in stories)
    saved = sum(map(len, encoded)) - kept.held_bytes()
    assert saved > raw * 0.3, (saved, raw)  # deflate takes a third or more off newswire
    assert kept.pop(0) == encoded[0] and 0 not in kept and kept.get(0) is None
    assert kept.id_of(1) == "d" and len(kept) == len(encoded) - 1
