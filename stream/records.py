"""Compact binary record of an indexed article: what verification and deletion need, no pickle.

Layout (little-endian throughout)::

    header  <BBHIdQ16sH   version, kind, n_buckets, n_items, registered_at (unix s), simhash,
                          content hash, id length
    id      utf-8 bytes
    buckets n_buckets x uint64   every bucket the article was added to (for delete/expiry)
    payload long:  n_items x uint32, the sorted unique shingle hashes truncated to 32 bits,
                   then (version 2) the text's numbers, utf-8, separated by 0x1f
            short: the normalised text, utf-8 (edit similarity and the facts need it)

A record carries no sequence number (the index keys it by seq), so storage format 3's 8-byte seqs
left it unchanged. Version 2 added the numbers of a long text (a near-copy's verdict lists the
figures that changed); a version-1 record reads as having none.

Truncating shingle hashes to 32 bits halves the record; a false shingle match needs a 32-bit
collision between two specific shingles (about 2**-32 each), so Jaccard computed on the truncated
sets equals the exact one except with probability ~ n_a * n_b / 2**32 (2e-5 for two 300-word
texts), and then by at most one shingle.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import numpy.typing as npt

VERSION = 2
_NUMBER_SEP = "\x1f"
_HEAD = struct.Struct("<BBHIdQ16sH")


class Kind(IntEnum):
    LONG = 1
    SHORT = 2


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
    numbers: tuple[str, ...] = ()  # a long text's numbers (sketch.facts.numbers); () if short

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
            payload = self.shingles.astype("<u4").tobytes()
            payload += _NUMBER_SEP.join(self.numbers).encode("utf-8")
        else:
            payload = self.text.encode("utf-8")
        return head + ident + buckets + payload

    @classmethod
    def decode(cls, data: bytes) -> Record:
        version, kind, n_buckets, items, at, sim, content, id_len = _HEAD.unpack_from(data)
        if version not in (1, VERSION):
            raise ValueError(f"record version {version} is not supported (expected {VERSION})")
        pos = _HEAD.size
        doc_id = data[pos : pos + id_len].decode("utf-8")
        pos += id_len
        buckets = np.frombuffer(data, dtype="<u8", count=n_buckets, offset=pos)
        pos += 8 * n_buckets
        numbers: tuple[str, ...] = ()
        if kind == Kind.LONG:
            shingles = np.frombuffer(data, dtype="<u4", count=items, offset=pos).astype(np.uint32)
            text = ""
            tail = data[pos + 4 * items :]
            if tail:
                numbers = tuple(tail.decode("utf-8").split(_NUMBER_SEP))
        else:
            shingles = np.empty(0, dtype=np.uint32)
            text = data[pos:].decode("utf-8")
        return cls(
            doc_id, Kind(kind), at, sim, content, tuple(buckets.tolist()), shingles, text, numbers
        )


__all__ = [
    "VERSION",
    "Kind",
    "Record",
]
