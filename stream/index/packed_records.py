"""The memory index's records with their text as sent deflated: most of a record's bytes.

An encoded :class:`~neardup.stream.records.Record` ends with the article's text as sent (for
evidence, for a short text compared with a long one, for an export); everything a candidate's
verification reads first is before it. Kept deflated (zlib at its fastest level, raw deflate: no
header), an average news story's 800 bytes of text take some 450. A record is stored as
``prefix + flag + text``: flag 1, the text deflated; flag 0, as it was (a text too short to
gain). Reading a record gives the encoded record back, byte for byte.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

from neardup.stream.records import Record

LEVEL = 1  # deflate's fastest: the text is read back for a few candidates, written once
MIN_DEFLATED = 96  # bytes of text below which deflating gains too little to pay for itself
_PLAIN, _DEFLATED = b"\x00", b"\x01"
_FIRST_WITH_TEXT = 3  # record version: before it a record has no text (and no flag here)


def pack(record: bytes) -> bytes:
    """``record`` as the index keeps it."""
    if record[0] < _FIRST_WITH_TEXT:
        return record
    at = Record.raw_at(record)
    raw = record[at:]
    if len(raw) < MIN_DEFLATED:
        return record[:at] + _PLAIN + raw
    return record[:at] + _DEFLATED + zlib.compress(raw, LEVEL, wbits=-15)


def unpack(held: bytes) -> bytes:
    """The encoded record :func:`pack` was given."""
    if held[0] < _FIRST_WITH_TEXT:
        return held
    at = Record.raw_at(held)
    if held[at : at + 1] == _DEFLATED:
        return held[:at] + zlib.decompress(held[at + 1 :], wbits=-15)
    return held[:at] + held[at + 1 :]


class PackedRecords:
    """``seq -> encoded record``, the part of a dict the memory index uses; kept packed."""

    __slots__ = ("_held",)

    def __init__(self, items: Iterable[tuple[int, bytes]] = ()) -> None:
        self._held: dict[int, bytes] = {seq: pack(record) for seq, record in items}

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, seq: object) -> bool:
        return seq in self._held

    def __iter__(self) -> Iterator[int]:
        return iter(self._held)

    def __getitem__(self, seq: int) -> bytes:
        return unpack(self._held[seq])

    def __setitem__(self, seq: int, record: bytes) -> None:
        self._held[seq] = pack(record)

    def get(self, seq: int) -> bytes | None:
        held = self._held.get(seq)
        return None if held is None else unpack(held)

    def pop(self, seq: int) -> bytes:
        return unpack(self._held.pop(seq))

    def id_of(self, seq: int) -> str:
        """The article id of a seq's record, read without unpacking it."""
        return Record.id_of(self._held[seq])

    def held_bytes(self) -> int:
        """The bytes the records take as kept."""
        return sum(map(len, self._held.values()))


__all__ = ["LEVEL", "MIN_DEFLATED", "PackedRecords", "pack", "unpack"]
