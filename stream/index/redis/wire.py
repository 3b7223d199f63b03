"""What travels to and from the Redis functions (``neardup.lua``): commands packed in the Redis
protocol, articles packed one argument per chunk, seqs as 8 big-endian bytes, and the replies'
probes read back."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup.stream.index.base import Probe, Registration
from neardup.stream.index.redis import keys


def pack_seq(seq: int) -> bytes:
    return seq.to_bytes(8, "big")


def packed_command(args: Sequence[str | bytes | int]) -> bytes:
    """One command in the Redis protocol (RESP), the bytes redis-py's ``pack_command`` makes
    (``tests/stream/index/redis/test_redis_packed_command.py``). A registration declares every
    shard key it touches, thousands per call; redis-py grows its buffer one argument at a time,
    which was a quarter of ``dedup --store redis://``'s client time."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        raw = a if isinstance(a, bytes) else a.encode() if isinstance(a, str) else b"%d" % a
        out.append(b"$%d\r\n%b\r\n" % (len(raw), raw))
    return b"".join(out)


def optional(value: float | None) -> str:
    return "" if value is None else repr(float(value))


HEAD = struct.Struct(">HBIH")  # id, registered_at, record lengths; bucket count (neardup.lua)
ID_LEN = struct.Struct(">H")
LEN = struct.Struct(">I")


def packed_article(reg: Registration) -> bytes:
    """One article of a ``neardup_register64k`` call, as its ``unpack_articles`` reads it:
    articles travel packed, one argument per call, because redis-py's cost is per argument."""
    ident, at = reg.doc_id.encode(), repr(reg.at).encode()
    if len(reg.content) != 16:
        raise ValueError("content hashes are 16 bytes")
    head = HEAD.pack(len(ident), len(at), len(reg.record), len(reg.buckets))
    return b"".join((head, ident, reg.content, at, reg.record, keys.bucket_fields(reg.buckets)))


def seqs(packed: bytes) -> list[int]:
    """Distinct seqs of a run of packed seqs, ascending."""
    return sorted(set(np.frombuffer(packed, dtype=">u8").tolist())) if packed else []


def probes(reply: list[Any]) -> list[Probe]:
    """The probes of one ``neardup_register64k`` reply: 4 values per article (neardup.lua)."""
    out: list[Probe] = []
    it = iter(reply)
    for seq, hot, a, b in zip(it, it, it, it, strict=True):
        if hot == -2:  # an id remembered as deleted: nothing registered
            out.append(Probe(0, "deleted", None, ()))
            continue
        if hot < 0:  # replay: a = record, b = verdict
            out.append(Probe(seq, "replay", None, (), record=a or None, verdict=b or None))
            continue
        found = seqs(b)
        if found and seq in found:  # an article listing one bucket twice reads itself
            found.remove(seq)
        out.append(Probe(seq, "new", int.from_bytes(a, "big") if a else None, tuple(found), hot))
    return out


__all__ = [
    "HEAD",
    "ID_LEN",
    "LEN",
    "optional",
    "pack_seq",
    "packed_article",
    "packed_command",
    "probes",
    "seqs",
]
