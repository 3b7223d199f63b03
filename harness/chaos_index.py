"""The fault checker's view of the Redis index: one namespace's keys, read and decoded with the
index code's own key names, record decoder and seq packer, so a stored seq of another width is
reported, never silently misread.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import cast

import redis

from harness.chaos_check import IndexDump, StoredRecord
from neardup.stream.index.base import COPIES_CAP
from neardup.stream.index.redis import keys, wire
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Record

__all__ = ["BUCKET_CAP", "code_seq_width", "dump_index"]

BUCKET_CAP = Policy().bucket_cap  # the workers of a run use the default policy


def code_seq_width() -> int:
    """How many bytes the index code packs a seq into (its own packer, not a copy of it)."""
    return len(wire.pack_seq(1))


def _hash(r: redis.Redis, key: str) -> dict[bytes, bytes]:
    return cast(dict[bytes, bytes], r.hgetall(key))


def dump_index(url: str, ns: str, bucket_cap: int = BUCKET_CAP, shards: int = 1) -> IndexDump:
    """One namespace's keys, decoded (see the module docstring); every stored seq must have the
    width the code packs (:func:`code_seq_width`). A sharded namespace (``shards`` > 1) lists
    id hashes in its buckets: they are read as the seqs of the ids its id-hash map names their
    holders, and every record's id must hold one of its own hashes there."""
    width = code_seq_width()
    problems: list[str] = []

    def seq(raw: bytes, where: str) -> int:
        if len(raw) != width:
            problems.append(f"{where}: a seq of {len(raw)} bytes, the code packs {width}")
        return int.from_bytes(raw, "big")

    def seqs(raw: bytes, where: str) -> list[int]:
        if len(raw) % width:
            problems.append(f"{where}: {len(raw)} bytes is not a run of {width}-byte seqs")
        return [int.from_bytes(raw[i : i + width], "big") for i in range(0, len(raw), width)]

    r = redis.Redis.from_url(url, socket_timeout=10)
    try:
        d = IndexDump(width, int(cast(bytes, r.hget(keys.meta(ns), "seq")) or 0))
        d.bucket_cap, d.copies_cap = bucket_cap, COPIES_CAP
        d.ids = {k.decode(): seq(v, f"id {k!r}") for k, v in _hash(r, keys.ids(ns)).items()}
        for k, v in _hash(r, keys.docs(ns)).items():
            s = seq(k, "record key")
            try:
                rec = Record.decode(v)
            except (ValueError, UnicodeDecodeError, struct.error) as exc:
                problems.append(f"record {s} does not decode: {exc}")
                continue
            d.records[s] = StoredRecord(rec.doc_id, rec.content, tuple(rec.buckets))
        if shards == 1:
            for key in r.scan_iter(match=keys.base(ns) + "b:*", count=1000):
                for f, v in _hash(r, key).items():
                    d.buckets[int.from_bytes(f, "big")] = seqs(v, f"bucket {f.hex()}")
        else:
            _sharded_buckets(r, ns, shards, d, seq, problems)
        for key in r.scan_iter(match=keys.base(ns) + "x:*", count=1000):
            for f, v in _hash(r, key).items():
                d.slots[f] = seqs(v, f"content slot {f.hex()}")
        members = cast(list[bytes], r.zrange(keys.times(ns), 0, -1))
        d.times = {seq(m, "time index") for m in members}
        stored = cast(list[bytes], r.hkeys(keys.verdicts(ns)))
        d.verdicts = {seq(k, "stored verdict") for k in stored}
    finally:
        r.close()
    d.problems = sorted(set(problems))
    return d


def _sharded_buckets(
    r: redis.Redis,
    ns: str,
    shards: int,
    d: IndexDump,
    seq: Callable[[bytes, str], int],
    problems: list[str],
) -> None:
    """A sharded namespace's buckets as seqs, through its id-hash map (id hash -> the id holding
    it) and the ids' seqs."""
    holders = _hash(r, keys.hashes(ns))
    by_hash = {h: d.ids[i.decode()] for h, i in holders.items() if i.decode() in d.ids}
    key = cast(bytes | None, r.hget(keys.meta(ns), "idkey"))
    for s, rec in d.records.items():
        mine = [h for h in keys.id_hashes(rec.doc_id, key or b"") if by_hash.get(h) == s]
        if not mine:
            problems.append(f"record {s} ({rec.doc_id}) holds no id hash of its own")
    for g in range(shards):
        for key in r.scan_iter(match=keys.group_base(ns, g) + "b:*", count=1000):
            for f, v in _hash(r, key).items():
                if len(v) % 8:
                    problems.append(f"bucket {f.hex()}: {len(v)} bytes is not a run of id hashes")
                b = int.from_bytes(f, "big")
                entries = [v[i : i + 8] for i in range(0, len(v), 8)]
                d.buckets[b] = [by_hash[e] for e in entries if e in by_hash]
                if len(d.buckets[b]) < len(entries):
                    d.unregistered[b] = len(entries) - len(d.buckets[b])
