"""Binary index records: exact round trip for both kinds, fixed layout, version refused."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.records import VERSION, Kind, Record

_ids = st.text(min_size=1, max_size=40)  # any unicode, astral planes included
_u64 = st.integers(min_value=0, max_value=2**64 - 1)
_times = st.floats(min_value=0.0, max_value=4e9, allow_nan=False)


@st.composite
def records(draw: st.DrawFn) -> Record:
    kind = draw(st.sampled_from(Kind))
    if kind is Kind.LONG:
        items = draw(st.lists(st.integers(0, 2**32 - 1), unique=True, max_size=300))
        shingles = np.array(sorted(items), dtype=np.uint32)
        text = ""
    else:
        shingles = np.empty(0, dtype=np.uint32)
        text = draw(st.text(max_size=200))
    return Record(
        doc_id=draw(_ids),
        kind=kind,
        registered_at=draw(_times),
        simhash=draw(_u64),
        content=draw(st.binary(min_size=16, max_size=16)),
        buckets=tuple(draw(st.lists(_u64, max_size=40))),
        shingles=shingles,
        text=text,
    )


def _assert_same(a: Record, b: Record) -> None:
    assert (a.doc_id, a.kind, a.registered_at, a.simhash) == (
        b.doc_id,
        b.kind,
        b.registered_at,
        b.simhash,
    )
    assert (a.content, a.buckets, a.text) == (b.content, b.buckets, b.text)
    assert b.shingles.dtype == np.uint32
    np.testing.assert_array_equal(a.shingles, b.shingles)


@given(records())
def test_round_trip(rec: Record) -> None:
    back = Record.decode(rec.encode())
    _assert_same(rec, back)
    assert back.encode() == rec.encode()


@given(st.sampled_from(["", "é", "文章", "𝔘𝔫𝔦", "a" * 300, "emoji 🎉 id"]))
def test_unicode_ids_round_trip(doc_id: str) -> None:
    for kind in Kind:
        rec = Record(
            doc_id,
            kind,
            1.5,
            7,
            bytes(range(16)),
            (1, 2**64 - 1),
            np.array([3, 9], np.uint32) if kind is Kind.LONG else np.empty(0, np.uint32),
            "" if kind is Kind.LONG else "短评 short",
        )
        _assert_same(rec, Record.decode(rec.encode()))


def test_layout_is_fixed_little_endian() -> None:
    rec = Record(
        "ab", Kind.LONG, 2.0, 0x0102030405060708, b"C" * 16, (0x1122,), np.array([5], np.uint32), ""
    )
    blob = rec.encode()
    head = struct.pack("<BBHIdQ16sH", VERSION, 1, 1, 1, 2.0, 0x0102030405060708, b"C" * 16, 2)
    assert blob == head + b"ab" + (0x1122).to_bytes(8, "little") + (5).to_bytes(4, "little")


def test_short_record_keeps_text_not_shingles() -> None:
    rec = Record("c", Kind.SHORT, 0.0, 0, b"\0" * 16, (), np.array([1, 2], np.uint32), "hé 你好")
    back = Record.decode(rec.encode())
    assert back.text == "hé 你好"
    assert len(back.shingles) == 0


def test_other_version_is_refused() -> None:
    rec = Record("x", Kind.LONG, 0.0, 0, b"\0" * 16, (), np.empty(0, np.uint32), "")
    blob = bytearray(rec.encode())
    blob[0] = VERSION + 1
    with pytest.raises(ValueError, match="version"):
        Record.decode(bytes(blob))
