"""In-process index: the embedded default (`neardup dedup`, tests), same semantics as Redis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stream.index.base import COPIES_CAP, Probe, Registration, SchemeMismatchError
from stream.records import Record


@dataclass
class _Space:
    scheme: bytes | None = None
    seq: int = 0
    ids: dict[str, int] = field(default_factory=dict)
    docs: dict[int, bytes] = field(default_factory=dict)
    verdicts: dict[int, bytes] = field(default_factory=dict)
    times: dict[int, float] = field(default_factory=dict)
    exact: dict[bytes, list[int]] = field(default_factory=dict)
    buckets: dict[int, list[int]] = field(default_factory=dict)


class MemoryIndex:
    """Dicts per namespace; an asyncio program is single-threaded, so each call is atomic."""

    def __init__(self) -> None:
        self._spaces: dict[str, _Space] = {}
        self.round_trips = 0  # nothing leaves the process

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
        holders = space.exact.setdefault(reg.content, [])
        exact = holders[0] if holders else seq
        if len(holders) < COPIES_CAP:  # the first copies of a text, as Redis keeps them
            holders.append(seq)
        found: set[int] = set()
        hot = 0
        for b in reg.buckets:
            members = space.buckets.setdefault(b, [])
            found.update(members)
            if len(members) < cap:
                members.append(seq)
            else:
                hot += 1
        space.ids[reg.doc_id] = seq
        space.docs[seq] = reg.record
        space.times[seq] = reg.at
        return Probe(seq, "new", exact if exact != seq else None, tuple(sorted(found)), hot)

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int]
    ) -> tuple[int | None, tuple[int, ...]]:
        space = self._space(ns)
        found: set[int] = set()
        for b in buckets:
            found.update(space.buckets.get(b, ()))
        holders = space.exact.get(content)
        return (holders[0] if holders else None), tuple(sorted(found))

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
            members = space.buckets.get(b)
            if members is not None and seq in members:
                members.remove(seq)
                if not members:
                    del space.buckets[b]
        holders = space.exact.get(rec.content)
        if holders is not None and seq in holders:
            holders.remove(seq)
            if not holders:
                del space.exact[rec.content]
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
        return list(self._space(ns).buckets.get(bucket, ()))
