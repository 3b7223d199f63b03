"""In-process index: the embedded default (`neardup dedup`, tests), same semantics as Redis."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from stream.errors import SchemeMismatchError
from stream.index.base import COPIES_CAP, BufferedRegistration, Probe, Registration
from stream.records import Record

K = TypeVar("K", int, bytes)


@dataclass
class _Space:
    scheme: bytes | None = None
    seq: int = 0
    ids: dict[str, int] = field(default_factory=dict)
    docs: dict[int, bytes] = field(default_factory=dict)
    verdicts: dict[int, bytes] = field(default_factory=dict)
    times: dict[int, float] = field(default_factory=dict)
    exact: dict[bytes, Slot] = field(default_factory=dict)
    buckets: dict[int, Slot] = field(default_factory=dict)


# A slot (bucket or content slot) is one seq, or several packed as int64: ints and bytes are not
# garbage-collector objects, so the big dicts of a namespace are never tracked and never slow a
# full collection down (a list or array per bucket would be scanned at every one).
Slot = int | bytes
_ORDER = sys.byteorder  # memoryview.cast reads native order


def _seqs(slot: Slot) -> Sequence[int]:
    return (slot,) if isinstance(slot, int) else memoryview(slot).cast("q")


def _size(slot: Slot) -> int:
    return 1 if isinstance(slot, int) else len(slot) // 8


def _with(slot: Slot, seq: int) -> bytes:
    head = slot.to_bytes(8, _ORDER) if isinstance(slot, int) else slot
    return head + seq.to_bytes(8, _ORDER)


def _take_out(table: dict[K, Slot], key: K, seq: int) -> None:
    """Remove a seq from a slot; an emptied slot goes."""
    slot = table.get(key)
    if slot is None:
        return
    rest = [s for s in _seqs(slot) if s != seq]
    if not rest:
        del table[key]
    elif len(rest) == 1:
        table[key] = rest[0]
    else:
        table[key] = b"".join(s.to_bytes(8, _ORDER) for s in rest)


class MemoryIndex:
    """Dicts per namespace; an asyncio program is single-threaded, so each call is atomic."""

    def __init__(self) -> None:
        self._spaces: dict[str, _Space] = {}
        self.round_trips = 0  # nothing leaves the process
        self.remote = False

    def _space(self, ns: str) -> _Space:
        return self._spaces.setdefault(ns, _Space())

    async def ensure_scheme(self, ns: str, scheme: bytes) -> None:
        space = self._space(ns)
        if space.scheme is None:
            space.scheme = scheme
        elif space.scheme != scheme:
            raise SchemeMismatchError(
                f"namespace {ns!r} was indexed with scheme {space.scheme!r}, not {scheme!r}"
            )

    async def register(self, ns: str, regs: Sequence[Registration], cap: int) -> list[Probe]:
        space = self._space(ns)
        return [self._register_one(space, reg, cap) for reg in regs]

    def _register_one(self, space: _Space, reg: Registration, cap: int) -> Probe:
        known = space.ids.get(reg.doc_id)
        if known is not None:
            return Probe(
                known,
                "replay",
                None,
                (),
                record=space.docs.get(known),
                verdict=space.verdicts.get(known),
            )
        space.seq += 1
        seq = space.seq
        holders = space.exact.get(reg.content)
        if holders is None:
            space.exact[reg.content] = seq
            exact = seq
        else:
            exact = _seqs(holders)[0]
            if _size(holders) < COPIES_CAP:  # the first copies of a text, as Redis keeps them
                space.exact[reg.content] = _with(holders, seq)
        found: set[int] = set()
        hot = 0
        buckets = space.buckets
        for b, members in zip(reg.buckets, list(map(buckets.get, reg.buckets)), strict=True):
            if members is None:  # most buckets of most articles are new
                buckets[b] = seq
                continue
            found.update(_seqs(members))
            if _size(members) < cap:
                buckets[b] = _with(members, seq)
            else:
                hot += 1
        space.ids[reg.doc_id] = seq
        space.docs[seq] = reg.record
        space.times[seq] = reg.at
        return Probe(seq, "new", exact if exact != seq else None, tuple(sorted(found)), hot)

    def registration(self, ns: str, cap: int) -> BufferedRegistration:
        return BufferedRegistration(self, ns, cap)  # in-process: nothing to overlap

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int]
    ) -> tuple[int | None, tuple[int, ...]]:
        space = self._space(ns)
        found: set[int] = set()
        for b in buckets:
            slot = space.buckets.get(b)
            if slot is not None:
                found.update(_seqs(slot))
        holders = space.exact.get(content)
        return (None if holders is None else _seqs(holders)[0]), tuple(sorted(found))

    async def records(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        docs = self._space(ns).docs
        return {s: docs[s] for s in seqs if s in docs}

    async def verdicts(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        v = self._space(ns).verdicts
        return {s: v[s] for s in seqs if s in v}

    async def put_verdicts(self, ns: str, items: Mapping[int, bytes]) -> None:
        space = self._space(ns)
        for seq, blob in items.items():
            if seq in space.docs:
                space.verdicts[seq] = blob

    async def seq_of(self, ns: str, doc_id: str) -> int | None:
        return self._space(ns).ids.get(doc_id)

    async def delete(self, ns: str, doc_id: str) -> bool:
        space = self._space(ns)
        seq = space.ids.get(doc_id)
        if seq is None:
            return False
        self._remove(space, seq)
        return True

    def _remove(self, space: _Space, seq: int) -> None:
        rec = Record.decode(space.docs.pop(seq))
        for b in rec.buckets:
            _take_out(space.buckets, b, seq)
        _take_out(space.exact, rec.content, seq)
        space.ids.pop(rec.doc_id, None)
        space.verdicts.pop(seq, None)
        space.times.pop(seq, None)

    async def expire(self, ns: str, before: float, limit: int = 1000) -> int:
        space = self._space(ns)
        old = sorted((t, s) for s, t in space.times.items() if t < before)[:limit]
        for _, seq in old:
            self._remove(space, seq)
        return len(old)

    async def count(self, ns: str) -> int:
        return len(self._space(ns).docs)

    def bucket_members(self, ns: str, bucket: int) -> list[int]:
        """Inspection for tests: the seqs currently in a bucket."""
        slot = self._space(ns).buckets.get(bucket)
        return [] if slot is None else list(_seqs(slot))


__all__ = ["MemoryIndex"]
