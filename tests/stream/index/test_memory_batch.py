"""The memory index registers a call's buckets in one pass over the batch
(:meth:`Buckets.add_batch`); here it is held equal to the per-article registration it replaced,
kept below as the reference, over random sequences of registrations, deletions and expiries in
several namespaces: the same probes (seqs, statuses, exact copies, candidates in order, hot
counts) and the same buckets after, through the bucket runs' merges."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.stream.errors import SeqExhaustedError
from neardup.stream.index.base import COPIES_CAP, MAX_SEQ, NO_WINDOW, Probe, Registration, Window
from neardup.stream.index.columns import size_of, with_seq
from neardup.stream.index.memory import MemoryIndex, Space
from neardup.stream.records import Kind, Record

NO_SHINGLES = np.empty(0, np.uint32)


class ReferenceIndex(MemoryIndex):
    """The registration before the batch pass: one article at a time, each bucket a list."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.model: dict[str, dict[int, list[int]]] = {}

    async def register(
        self, ns: str, regs: Sequence[Registration], cap: int, *, window: Window = NO_WINDOW
    ) -> list[Probe]:
        space = self._space(ns)
        if regs and space.seq + len(regs) > MAX_SEQ:
            raise SeqExhaustedError(ns)
        space.cap = cap
        forget = window.forget_before
        if forget is not None and space.deleted:
            space.deleted = {d: t for d, t in space.deleted.items() if t >= forget}
        model = self.model.setdefault(ns, {})
        return [self._one(space, model, reg, cap, window.live_after) for reg in regs]

    def _one(
        self,
        space: Space,
        model: dict[int, list[int]],
        reg: Registration,
        cap: int,
        live_after: float | None,
    ) -> Probe:
        if reg.doc_id in space.deleted:
            return Probe(0, "deleted", None, ())
        known = space.ids.get(reg.doc_id)
        if known is not None:
            return Probe(
                known,
                "replay",
                None,
                (),
                record=space.docs.get(known),
                verdict=space.verdict(known),
            )
        space.seq += 1
        seq = space.seq
        holders = space.exact.get(reg.content)
        exact: int | None
        if holders is None:
            space.exact[reg.content] = seq
            exact = None
        else:
            exact = self._first_live(space, holders, live_after)
            if size_of(holders) < COPIES_CAP:
                space.exact[reg.content] = with_seq(holders, seq)
        snapshot = {b: list(model.get(b, [])) for b in reg.buckets}  # read before adding
        found = {s for b in reg.buckets for s in snapshot[b]}
        hot = 0
        for b in reg.buckets:
            if len(snapshot[b]) < cap:
                model[b] = [*snapshot[b], seq]
            else:
                hot += 1
        space.ids[reg.doc_id] = seq
        space.docs[seq] = reg.record
        space.times[seq] = reg.at
        return Probe(seq, "new", exact, tuple(sorted(found)), hot)

    def _remove(self, space: Space, seq: int) -> None:
        model = next(m for ns, m in self.model.items() if self.space(ns) is space)
        for b in Record.decode(space.docs[seq]).buckets:
            if seq in model.get(b, []):
                model[b] = [s for s in model[b] if s != seq]
        super()._remove(space, seq)


BUCKET = st.sampled_from([0, 1, 2, 3, 7, 2**63, 2**64 - 1, 12345678901234567890])
DOC = st.tuples(
    st.sampled_from("abcdefghij"),  # id
    st.sampled_from([b"x", b"y", b"z"]),  # content
    st.lists(BUCKET, max_size=6),
)
OP = st.one_of(
    st.tuples(
        st.just("register"),
        st.sampled_from(["n1", "n2"]),
        st.lists(DOC, max_size=8),
        st.integers(0, 4),
    ),
    st.tuples(
        st.just("delete"), st.sampled_from(["n1", "n2"]), st.sampled_from("abcdefghij"), st.just(0)
    ),
    st.tuples(st.just("expire"), st.sampled_from(["n1", "n2"]), st.just(""), st.integers(0, 30)),
)


def _regs(docs: list[tuple[str, bytes, list[int]]], at: float) -> list[Registration]:
    out = []
    for doc_id, content, buckets in docs:
        rec = Record(
            doc_id, Kind.SHORT, at, 0, content.ljust(16, b"."), tuple(buckets), NO_SHINGLES, "t"
        )
        out.append(Registration(doc_id, rec.content, tuple(buckets), rec.encode(), at))
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(OP, max_size=30), st.integers(1, 8))
def test_the_batch_registration_gives_the_reference_probes(ops: list, merge: int) -> None:
    clock = [0.0]
    new, ref = MemoryIndex(clock=lambda: clock[0]), ReferenceIndex(clock=lambda: clock[0])

    async def run() -> None:
        for op, ns, arg, n in ops:
            clock[0] += 1
            new.space(ns).buckets._merge_min = merge
            if op == "register":
                window = Window(live_after=clock[0] - 5) if n % 2 else NO_WINDOW
                regs = _regs(arg, clock[0])
                got = await new.register(ns, regs, n, window=window)
                want = await ref.register(ns, regs, n, window=window)
                assert got == want
            elif op == "delete":
                assert await new.delete(ns, arg) == await ref.delete(ns, arg)
            else:
                assert await new.expire(ns, n) == await ref.expire(ns, n)
        for ns in ("n1", "n2"):
            model = ref.model.get(ns, {})
            ids, seqs = new.space(ns).buckets.entries()
            assert ids.tolist() == [b for b in sorted(model) for _ in model[b]]
            assert seqs.tolist() == [s for b in sorted(model) for s in model[b]]
            assert len(new.space(ns).buckets) == len(ids)

    asyncio.run(run())
