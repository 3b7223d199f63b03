"""Binary index records: exact round trip for both kinds, fixed layout, version refused."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup.stream.records import VERSION, Kind, Record

_ids = st.text(min_size=1, max_size=40)  # any unicode, astral planes included
_u64 = st.integers(min_value=0, max_value=2**64 - 1)
_times = st.floats(min_value=0.0, max_value=4e9, allow_nan=False)


@st.composite
def records(draw: st.DrawFn) -> Record:
    kind = draw(st.sampled_from(Kind))
    numbers: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()
    if kind is Kind.LONG:
        items = draw(st.lists(st.integers(0, 2**32 - 1), unique=True, max_size=300))
        shingles = np.array(sorted(items), dtype=np.uint32)
        text = ""
        numbers = tuple(draw(st.lists(st.integers(0, 10**9).map(str), max_size=20)))
        days = st.tuples(st.integers(1, 12), st.integers(1, 31)).map(
            lambda t: f"{t[0]:02d}-{t[1]:02d}"
        )
        dates = tuple(draw(st.lists(days, max_size=16)))
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
        numbers=numbers,
        raw=draw(st.text(max_size=300)),
        dates=dates,
        source=draw(st.text(max_size=30)),
    )


def _assert_same(a: Record, b: Record) -> None:
    assert (a.doc_id, a.kind, a.registered_at, a.simhash) == (
        b.doc_id,
        b.kind,
        b.registered_at,
        b.simhash,
    )
    assert (a.content, a.buckets, a.text) == (b.content, b.buckets, b.text)
    assert (a.numbers, a.raw, a.dates, a.source) == (b.numbers, b.raw, b.dates, b.source)
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
    empty = (0).to_bytes(4, "little")  # no numbers, no dates, no source
    assert blob == head + b"ab" + (0x1122).to_bytes(8, "little") + (5).to_bytes(4, "little") + (
        empty * 3
    )
    fields = [getattr(rec, f) for f in Record.__slots__][:8]
    with_text = Record(*fields, ("7", "12"), "The text", ("03-01", "04-01"), "ledger.example")
    blob = with_text.encode()
    tail = blob[len(head) + 2 + 8 + 4 :]
    assert tail[:4] == (4).to_bytes(4, "little") and tail[4:8] == b"7\x1f12"
    assert tail[8:12] == (11).to_bytes(4, "little") and tail[12:23] == b"03-01\x1f04-01"
    assert tail[23:27] == (14).to_bytes(4, "little") and tail[27:41] == b"ledger.example"
    assert tail[41:] == b"The text"


def test_records_of_earlier_versions_read_as_having_none_of_what_came_later() -> None:
    head = struct.pack("<BBHIdQ16sH", 1, 1, 0, 1, 2.0, 0, b"C" * 16, 1)
    v1 = Record.decode(head + b"a" + (5).to_bytes(4, "little"))
    assert (list(v1.shingles), v1.numbers, v1.raw) == ([5], (), "")
    v2 = Record.decode(b"\x02" + head[1:] + b"a" + (5).to_bytes(4, "little") + b"3\x1f4")
    assert (list(v2.shingles), v2.numbers, v2.raw) == ([5], ("3", "4"), "")
    v3 = Record.decode(b"\x03" + head[1:] + b"a" + (5).to_bytes(4, "little") + b"\0\0\0\0text")
    assert (list(v3.shingles), v3.numbers, v3.raw, v3.dates) == ([5], (), "text", ())
    short = struct.pack("<BBHIdQ16sH", 2, 2, 0, 0, 2.0, 0, b"C" * 16, 1)
    assert Record.decode(short + b"b" + "短评".encode()).text == "短评"


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
