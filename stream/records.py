"""Compact binary record of an indexed article: what verification and deletion need, no pickle.

Layout (little-endian throughout)::

    header  <BBHIdQ16sH   version, kind, n_buckets, n_items, registered_at (unix s), simhash,
                          content hash, id length
    id      utf-8 bytes
    buckets n_buckets x uint64   every bucket the article was added to (for delete/expiry)
    payload long:  n_items x uint32, the sorted unique shingle hashes truncated to 32 bits,
                   then <I length and the text's numbers
                   (neardup.stream.engine.prepare.Prepared.numbers), utf-8, separated by 0x1f, then
                   <I length and its dates (MM-DD) the same way
            short: <I length and the normalised text, utf-8 (edit similarity and facts)
    source  <I length and the source boilerplate is counted under (Article.source_name), utf-8
    raw     the rest: the article's text as sent (its first RAW_CHARS characters), utf-8, or
            nothing (the namespace keeps no text): what evidence spans point into. Not
            compressed: zlib at its fastest level cost a third of the time a whole article
            takes from text to verdict, for about 1 KB a record

A record carries no sequence number (the index keys it by seq), so storage format 3's 8-byte seqs
left it unchanged. Version 2 added the numbers of a long text (a near-copy's verdict lists the
figures that changed), version 3 the text itself (evidence: which passages two texts share, in
each), version 4 a long text's dates (a template's next release names another day) and the
article's source (an export rebuilds the namespace with it); a record of an earlier version reads
as having none.

Truncating shingle hashes to 32 bits halves the record; a false shingle match needs a 32-bit
collision between two specific shingles (about 2**-32 each), so Jaccard computed on the truncated
sets equals the exact one except with probability ~ n_a * n_b / 2**32 (2e-5 for two 300-word
texts), and then by at most one shingle.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache

import numpy as np
import numpy.typing as npt

VERSION = 4
RAW_CHARS = 100_000  # of an article's text kept for evidence: spans past it are not shown
_LEN = struct.Struct("<I")
_NUMBER_SEP = "\x1f"
_HEAD = struct.Struct("<BBHIdQ16sH")


class Kind(IntEnum):
    LONG = 1
    SHORT = 2


_KINDS = {int(k): k for k in Kind}


@lru_cache(maxsize=64)
def _buckets(n: int) -> struct.Struct:
    """A record's bucket ids, read as a tuple in one call (a record has a few dozen)."""
    return struct.Struct(f"<{n}Q")


@dataclass(frozen=True, slots=True)
class Record:
    doc_id: str
    kind: Kind
    registered_at: float
    simhash: int
    content: bytes
    buckets: tuple[int, ...]
    shingles: npt.NDArray[np.uint32]  # empty for short texts
    text: str  # normalised text for short texts, "" for long ones
    numbers: tuple[
        str, ...
    ] = ()  # a long text's numbers (neardup.sketch.facts.numbers); () if short
    raw: str = ""  # the text as sent (RAW_CHARS at most), "" when not kept
    dates: tuple[str, ...] = ()  # a long text's days of the year, MM-DD (TextBatch.dates)
    source: str = ""  # the source its boilerplate was counted under ("" the namespace)

    def encode(self) -> bytes:
        ident = self.doc_id.encode("utf-8")
        items = len(self.shingles) if self.kind is Kind.LONG else 0
        head = _HEAD.pack(
            VERSION,
            int(self.kind),
            len(self.buckets),
            items,
            self.registered_at,
            self.simhash,
            self.content,
            len(ident),
        )
        buckets = struct.pack(f"<{len(self.buckets)}Q", *self.buckets)
        if self.kind is Kind.LONG:
            field = _NUMBER_SEP.join(self.numbers).encode("utf-8")
            days = _NUMBER_SEP.join(self.dates).encode("ascii")
            payload = b"".join(
                (
                    self.shingles.astype("<u4").tobytes(),
                    _LEN.pack(len(field)),
                    field,
                    _LEN.pack(len(days)),
                    days,
                )
            )
        else:
            field = self.text.encode("utf-8")
            payload = _LEN.pack(len(field)) + field
        raw = self.raw[:RAW_CHARS].encode("utf-8", "surrogatepass")
        source = self.source.encode("utf-8", "surrogatepass")
        return b"".join((head, ident, buckets, payload, _LEN.pack(len(source)), source, raw))

    @staticmethod
    def id_of(data: bytes) -> str:
        """The article id of an encoded record, read without decoding the rest (listing a
        namespace's ids)."""
        id_len = _HEAD.unpack_from(data)[-1]
        return data[_HEAD.size : _HEAD.size + id_len].decode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> Record:
        version, kind, n_buckets, items, at, sim, content, id_len = _HEAD.unpack_from(data)
        if version not in (1, 2, 3, VERSION):
            raise ValueError(f"record version {version} is not supported (expected {VERSION})")
        if kind not in _KINDS:
            raise ValueError(f"{kind} is not a valid Kind")
        pos = _HEAD.size
        doc_id = data[pos : pos + id_len].decode("utf-8")
        pos += id_len
        buckets = _buckets(n_buckets).unpack_from(data, pos)
        pos += 8 * n_buckets
        numbers: tuple[str, ...] = ()
        dates: tuple[str, ...] = ()
        tail = b""
        if kind == Kind.LONG:
            shingles = np.frombuffer(data, dtype="<u4", count=items, offset=pos).astype(np.uint32)
            text = ""
            pos += 4 * items
            if version >= 3:
                (n,) = _LEN.unpack_from(data, pos)
                field, pos = data[pos + 4 : pos + 4 + n], pos + 4 + n
                if version >= 4:
                    (n,) = _LEN.unpack_from(data, pos)
                    if n:
                        dates = tuple(
                            data[pos + 4 : pos + 4 + n].decode("ascii").split(_NUMBER_SEP)
                        )
                    pos += 4 + n
                tail = data[pos:]
            else:
                field = data[pos:]
                tail = b""
            if field:
                numbers = tuple(field.decode("utf-8").split(_NUMBER_SEP))
        else:
            shingles = np.empty(0, dtype=np.uint32)
            if version >= 3:
                (n,) = _LEN.unpack_from(data, pos)
                text, tail = data[pos + 4 : pos + 4 + n].decode("utf-8"), data[pos + 4 + n :]
            else:
                text = data[pos:].decode("utf-8")
        source = ""
        if version >= 4:
            (n,) = _LEN.unpack_from(tail)
            source, tail = tail[4 : 4 + n].decode("utf-8", "surrogatepass"), tail[4 + n :]
        raw = tail.decode("utf-8", "surrogatepass") if tail else ""
        return cls(
            doc_id,
            _KINDS[kind],
            at,
            sim,
            content,
            buckets,
            shingles,
            text,
            numbers,
            raw,
            dates,
            source,
        )


__all__ = [
    "RAW_CHARS",
    "VERSION",
    "Kind",
    "Record",
]
