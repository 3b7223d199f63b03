"""In-process index: the embedded default (`neardup dedup`, tests), same semantics as Redis.

Its clock is injected (``clock``, ``time.time`` by default): :meth:`MemoryIndex.now` is what the
engine uses for registration times, retention and liveness, as it uses Redis's ``TIME`` with
:class:`~neardup.stream.index.redis.index.RedisIndex`.
"""

from __future__ import annotations

import time
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from neardup.stream.errors import SeqExhaustedError
from neardup.stream.index.base import (
    COPIES_CAP,
    MAX_SEQ,
    NO_WINDOW,
    BufferedRegistration,
    Checked,
    NamespaceStats,
    Probe,
    Registration,
    StoredVerdict,
    Window,
    scheme_mismatch,
)
from neardup.stream.index.columns import Buckets, Slot, seqs_of, size_of, take_out, with_seq
from neardup.stream.index.seq_times import SeqTimes
from neardup.stream.records import Record


@dataclass
class Space:
    """One namespace's state (:mod:`neardup.stream.index.memory_file` saves it to a file)."""

    scheme: bytes | None = None
    seq: int = 0
    ids: dict[str, int] = field(default_factory=dict)
    docs: dict[int, bytes] = field(default_factory=dict)
    # seq -> verdict, deflated (_packed), but the plain ones (below)
    verdicts: dict[int, bytes] = field(default_factory=dict)
    times: SeqTimes = field(default_factory=SeqTimes)  # seq -> registration time
    deleted: dict[str, float] = field(default_factory=dict)  # id -> deletion time
    exact: dict[bytes, Slot] = field(default_factory=dict)
    buckets: Buckets = field(default_factory=Buckets)
    # line counts: the current generation, then the previous one
    lines: list[Counter[bytes]] = field(default_factory=lambda: [Counter(), Counter()])
    decisions: bytes | None = None
    cap: int = 0  # the bucket cap of the last registration (stats: buckets at it are hot)
    members: dict[str, dict[int, float]] = field(default_factory=dict)  # cluster -> copies
    cluster_of: dict[int, str] = field(default_factory=dict)  # a copy's seq -> its cluster
    name: str = ""  # the namespace (what a plain verdict names)
    # seq - plain_base -> 1: the seq's verdict is plain_verdict(its id, name, seq), not kept
    plain: bytearray = field(default_factory=bytearray)
    plain_base: int = 0

    def verdict(self, seq: int) -> bytes | None:
        """The stored verdict of a seq, rebuilt when it is plain."""
        packed = self.verdicts.get(seq)
        if packed is not None:
            return _unpacked(packed)
        if self._is_plain(seq) and seq in self.docs:
            return plain_verdict(Record.id_of(self.docs[seq]), self.name, seq)
        return None

    def keep_verdict(self, seq: int, doc_id: str, blob: bytes) -> None:
        """Store a verdict: a plain one (a new original's, most) as one byte, else deflated
        (a copy's verdict is read again only for a later copy of it or a replay)."""
        at = seq - self.plain_base
        if not self.plain:
            self.plain_base, at = seq, 0
        if 0 <= at < len(self.plain) + PLAIN_GAP and blob == plain_verdict(doc_id, self.name, seq):
            if at >= len(self.plain):
                self.plain.extend(bytes(at + 1 - len(self.plain)))
            self.plain[at] = 1
            self.verdicts.pop(seq, None)
        else:
            self.drop_verdict(seq)
            self.verdicts[seq] = _packed(blob)

    def drop_verdict(self, seq: int) -> None:
        self.verdicts.pop(seq, None)
        if self._is_plain(seq):
            self.plain[seq - self.plain_base] = 0

    def _is_plain(self, seq: int) -> bool:
        at = seq - self.plain_base
        return 0 <= at < len(self.plain) and self.plain[at] == 1

    def all_verdicts(self) -> dict[int, bytes]:
        """Every stored verdict by seq, ascending (a saved index holds them)."""
        base, plain = self.plain_base, self.plain
        seqs = sorted([*self.verdicts, *(base + i for i, x in enumerate(plain) if x)])
        out = {s: self.verdict(s) for s in seqs}
        return {s: b for s, b in out.items() if b is not None}

    def load_verdicts(self, verdicts: Mapping[int, bytes]) -> None:
        """Store verdicts as :meth:`keep_verdict` does (an index read from a file; its articles
        are in :attr:`docs` already)."""
        for seq, blob in sorted(verdicts.items()):
            doc = self.docs.get(seq)
            if doc is None:
                self.verdicts[seq] = _packed(blob)
            else:
                self.keep_verdict(seq, Record.id_of(doc), blob)

    def rename(self, name: str) -> None:
        """Name the namespace ``name``; its plain verdicts, which name it, follow."""
        if name != self.name:
            verdicts = self.all_verdicts()
            self.name, self.verdicts, self.plain, self.plain_base = name, {}, bytearray(), 0
            self.load_verdicts(verdicts)


# what a verdict's JSON is made of: a deflated verdict refers to it (a copy's 270 bytes -> 70)
_VERDICT_WORDS = (
    b'"changes":[{"kind":"number","earlier":"","now":""},{"kind":"date","earlier":"",'
    b'"now":""}],"related":[{"id":"","similarity":0.9,"changes":[],"direction":"contains"}],'
    b'"direction":null,"evidence":null}{"id":"","namespace":"default","verdict":'
    b'"near_duplicate","duplicate_of":"","cluster":"","similarity":0.9,"matches":[{"id":"",'
    b'"similarity":0.9}],"method":"jaccard","seq":'
)


def _packed(verdict: bytes) -> bytes:
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15, zdict=_VERDICT_WORDS)
    return deflate.compress(verdict) + deflate.flush()


def _unpacked(packed: bytes) -> bytes:
    inflate = zlib.decompressobj(-15, zdict=_VERDICT_WORDS)
    return inflate.decompress(packed) + inflate.flush()


PLAIN_GAP = 1 << 20  # seqs past the plain bytes a verdict may be at and still be kept plain
_PLAIN = (
    b'{"id":',
    b',"namespace":',
    b',"verdict":"original","duplicate_of":null,"cluster":',
    b',"similarity":null,"matches":[],"method":"new","seq":',
    b',"changes":[],"related":[],"direction":null,"evidence":null}',
)


def plain_verdict(doc_id: str, ns: str, seq: int) -> bytes:
    """The verdict of an article that is its own cluster's original, found new (no earlier
    article shared its buckets or content): ``Verdict.to_json()``'s bytes, rebuilt from the id,
    the namespace and the seq. Most stored verdicts are these; an index keeps a byte for each
    instead (:meth:`Space.keep_verdict` checks the bytes are equal first)."""
    ident = orjson.dumps(doc_id)
    head, space, verdict, similarity, tail = _PLAIN
    return b"".join(
        (head, ident, space, orjson.dumps(ns), verdict, ident, similarity, b"%d" % seq, tail)
    )


class MemoryIndex:
    """Dicts per namespace; an asyncio program is single-threaded, so each call is atomic."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._spaces: dict[str, Space] = {}
        self._aliases: dict[str, bytes] = {}
        self._clock = clock
        self.round_trips = 0  # nothing leaves the process
        self.remote = False

    def _space(self, ns: str) -> Space:
        space = self._spaces.get(ns)
        if space is None:
            space = self._spaces[ns] = Space(name=ns)
        return space

    async def now(self, ns: str) -> float:
        return self._clock()

    def start_at(self, ns: str, seq: int) -> None:
        """For tests: the namespace's next article gets ``seq + 1`` (as ``HSET nd:{ns}:m seq``)."""
        self._space(ns).seq = seq

    async def ensure_scheme(self, ns: str, scheme: bytes) -> None:
        space = self._space(ns)
        if space.scheme is None:
            space.scheme = scheme
        elif space.scheme != scheme:
            raise scheme_mismatch(ns, space.scheme, scheme)

    async def check_scheme(self, ns: str, scheme: bytes) -> bool:
        space = self._spaces.get(ns)
        if space is None or space.scheme is None:
            return False
        if space.scheme != scheme:
            raise scheme_mismatch(ns, space.scheme, scheme)
        return True

    async def register(
        self, ns: str, regs: Sequence[Registration], cap: int, *, window: Window = NO_WINDOW
    ) -> list[Probe]:
        space = self._space(ns)
        if regs and space.seq + len(regs) > MAX_SEQ:
            raise SeqExhaustedError(
                f"namespace {ns!r}: the counter is at {space.seq}; sequence numbers stop at 2**53"
            )
        space.cap = cap
        forget = window.forget_before
        if forget is not None and space.deleted:
            space.deleted = {d: t for d, t in space.deleted.items() if t >= forget}
        probes = [self._register_one(space, reg, window.live_after) for reg in regs]
        fresh = [i for i, p in enumerate(probes) if p.status == "new"]
        found, hot = space.buckets.add_batch(
            [regs[i].buckets for i in fresh], [probes[i].seq for i in fresh], cap
        )
        for i, cands, h in zip(fresh, found, hot, strict=True):
            p = probes[i]
            probes[i] = Probe(p.seq, "new", p.exact_seq, cands, h)
        space.buckets.settle()
        return probes

    def _first_live(self, space: Space, holders: Slot, live_after: float | None) -> int | None:
        """The first copy of a text still inside the retention window (swept or not)."""
        if live_after is None:
            return seqs_of(holders)[0]
        return next((s for s in seqs_of(holders) if space.times[s] >= live_after), None)

    def _register_one(self, space: Space, reg: Registration, live_after: float | None) -> Probe:
        """Everything of one registration but its buckets (:meth:`register` adds a call's
        buckets at once): a new article's probe has no candidates yet."""
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
            if size_of(holders) < COPIES_CAP:  # the first copies of a text, as Redis keeps them
                space.exact[reg.content] = with_seq(holders, seq)
        space.ids[reg.doc_id] = seq
        space.docs[seq] = reg.record
        space.times[seq] = reg.at
        return Probe(seq, "new", exact, ())

    def registration(self, ns: str, cap: int) -> BufferedRegistration:
        return BufferedRegistration(self, ns, cap)  # in-process: nothing to overlap

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int], *, live_after: float | None = None
    ) -> tuple[int | None, tuple[int, ...]]:
        space = self._space(ns)
        found = space.buckets.read(buckets)
        holders = space.exact.get(content)
        first = None if holders is None else self._first_live(space, holders, live_after)
        return first, tuple(sorted(found))

    async def check(
        self,
        ns: str,
        doc_id: str,
        content: bytes,
        buckets: Sequence[int],
        *,
        live_after: float | None = None,
    ) -> Checked:
        own = await self.seq_of(ns, doc_id)
        if own is not None:
            seqs: list[int] = [own]
            first: int | None = None
            cands: tuple[int, ...] = ()
        else:
            first, cands = await self.lookup(ns, content, buckets, live_after=live_after)
            seqs = [*([] if first is None else [first]), *cands]
        return Checked(
            own, first, cands, await self.records(ns, seqs), await self.verdicts(ns, seqs)
        )

    async def records(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        docs = self._space(ns).docs
        return {s: docs[s] for s in seqs if s in docs}

    async def verdicts(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        space = self._space(ns)
        got = {s: space.verdict(s) for s in seqs}
        return {s: v for s, v in got.items() if v is not None}

    async def put_verdicts(
        self,
        ns: str,
        items: Mapping[int, StoredVerdict],
        lines: Sequence[bytes] = (),
        cap: int = 0,
    ) -> None:
        space = self._space(ns)
        for seq, (doc_id, blob) in items.items():
            if space.ids.get(doc_id) == seq:
                space.keep_verdict(seq, doc_id, blob)
        if lines:  # no await in between: one step
            self._count(space, lines, cap)

    async def seq_of(self, ns: str, doc_id: str) -> int | None:
        return self._space(ns).ids.get(doc_id)

    async def delete(self, ns: str, doc_id: str) -> bool:
        space = self._space(ns)
        space.deleted[doc_id] = self._clock()
        seq = space.ids.get(doc_id)
        if seq is None:
            return False
        self._remove(space, seq)
        return True

    def _remove(self, space: Space, seq: int) -> None:
        rec = Record.decode(space.docs.pop(seq))
        space.buckets.remove(rec.buckets, seq)
        take_out(space.exact, rec.content, seq)
        space.ids.pop(rec.doc_id, None)
        space.drop_verdict(seq)
        space.times.pop(seq, None)
        cluster = space.cluster_of.pop(seq, None)
        if cluster is not None:
            copies = space.members.get(cluster, {})
            copies.pop(seq, None)
            if not copies:
                space.members.pop(cluster, None)

    async def expire(self, ns: str, before: float, limit: int = 1000) -> int:
        space = self._space(ns)
        old = space.times.oldest_before(before, limit)
        for seq in old:
            self._remove(space, seq)
        return len(old)

    async def count(self, ns: str) -> int:
        return len(self._space(ns).docs)

    async def add_members(self, ns: str, items: Sequence[tuple[str, int, float]]) -> None:
        space = self._space(ns)
        for cluster, seq, at in items:
            if seq in space.docs:  # removed meanwhile: nothing to list
                space.members.setdefault(cluster, {})[seq] = at
                space.cluster_of[seq] = cluster

    async def members(
        self, ns: str, cluster: str, offset: int, limit: int
    ) -> tuple[list[tuple[int, float]], int, tuple[float, float] | None]:
        copies = sorted(
            self._space(ns).members.get(cluster, {}).items(), key=lambda x: (x[1], x[0])
        )
        span = (copies[0][1], copies[-1][1]) if copies else None
        return copies[offset : offset + limit], len(copies), span

    async def namespaces(self) -> list[str]:
        return sorted(ns for ns, space in self._spaces.items() if space.scheme is not None)

    async def stats(self, ns: str) -> NamespaceStats:
        space = self._space(ns)
        verdicts = space.all_verdicts()
        cap = space.cap
        return NamespaceStats(
            namespace=ns,
            documents=len(space.docs),
            copies=len(space.cluster_of),
            verdicts=len(verdicts),
            line_keys=sum(map(len, space.lines)),
            bytes=sum(map(len, space.docs.values())) + sum(map(len, verdicts.values())),
            hot_buckets=space.buckets.hot(cap) if cap else 0,
            scheme=space.scheme.decode() if space.scheme else None,
            policy=space.decisions.decode() if space.decisions else None,
        )

    async def stored_scheme(self, ns: str) -> bytes | None:
        return self._space(ns).scheme

    async def policy_record(self, ns: str) -> bytes | None:
        return self._space(ns).decisions

    async def record_policy(self, ns: str, settings: bytes) -> None:
        self._space(ns).decisions = settings

    async def last_seq(self, ns: str) -> int:
        return self._space(ns).seq

    async def drop(self, ns: str) -> int:
        return 1 if self._spaces.pop(ns, None) is not None else 0

    async def read_deleted(self, ns: str) -> dict[str, float]:
        return dict(self._space(ns).deleted)

    async def remember_deleted(self, ns: str, deleted: Mapping[str, float]) -> None:
        kept = self._space(ns).deleted
        for doc_id, at in deleted.items():
            kept[doc_id] = max(at, kept.get(doc_id, at))

    async def alias(self, ns: str) -> bytes | None:
        return self._aliases.get(ns)

    async def set_alias(self, ns: str, value: bytes) -> None:
        self._aliases[ns] = value

    async def line_counts(self, ns: str, lines: Sequence[bytes]) -> list[int]:
        cur, prev = self._space(ns).lines
        return [cur.get(k, 0) + prev.get(k, 0) for k in lines]

    async def add_lines(self, ns: str, lines: Sequence[bytes], cap: int) -> None:
        self._count(self._space(ns), lines, cap)

    @staticmethod
    def _count(space: Any, lines: Sequence[bytes], cap: int) -> None:
        cur = space.lines[0]
        cur.update(lines)  # counted in C
        if len(cur) > cap:
            space.lines = [Counter(), cur]

    def space(self, ns: str) -> Space:
        """The namespace's state itself, not a copy (what a saved index file holds)."""
        return self._space(ns)

    def put_space(self, ns: str, space: Space) -> None:
        """Make ``space`` the namespace's state (a saved index file, read back)."""
        space.rename(ns)
        self._spaces[ns] = space

    def deleted_ids(self, ns: str) -> dict[str, float]:
        """Inspection for tests: the remembered deleted ids and their deletion times."""
        return dict(self._space(ns).deleted)

    def bucket_members(self, ns: str, bucket: int) -> list[int]:
        """Inspection for tests: the seqs currently in a bucket."""
        return self._space(ns).buckets.members(bucket)


__all__ = ["MemoryIndex", "Space", "plain_verdict"]
