"""A sharded namespace: its buckets spread over N Redis Cluster slots, so one namespace can use
more than one primary, with the ordering rule of a single-slot namespace kept.

A single-slot namespace registers an article in one atomic call that takes its seq and reads and
adds its buckets, so seq order is visibility order. Buckets on other slots cannot join that call.
The protocol here (``model/sharded.pml``, model-checked with spin: ``make model``) gets the same
rule in steps, each atomic on one slot:

1. **add**: the article's 8-byte id hash (:func:`~.keys.id_hash`) goes into each of its buckets,
   one ``neardup_shard_add64`` call per shard group (it has no seq yet);
2. **seq**: one call on the home slot (``neardup_register_home64``) refuses an id remembered as
   deleted, or answers a replay, or takes the next seq, records id -> seq and id hash -> seq,
   and reads and adds to the content slot;
3. **read**: its buckets, one ``neardup_shard_read64`` call per group;
4. **resolve**: the seqs of the id hashes read (``HMGET`` of the home slot's id-hash map). A
   candidate is earlier iff it has a seq and that seq is smaller.

Any article X with seq(X) < seq(A) took its seq after adding itself, so before A took its own, so
before A read: A sees X. An article that added itself but has no seq yet (or crashed before step
2) is not earlier, and whoever it is will see A. A pairwise "who saw whom" rule instead forms
cycles with no original (the model's counterexample). Deletion, in this order: remember the id
(nothing registers it again), take its entries out of the buckets group by group, then drop its
seq, record and verdict; step 4 answers nothing for a seq already dropped.

What it costs: four round trips a batch instead of one (each pipelined over the groups, which a
cluster client sends to their primaries at once), 8 bytes a bucket entry as before, and 8 + 8
bytes and a field per article in the id-hash map. The home slot still takes every article's
counter, id and record writes: it is the namespace's bottleneck, shared by all its groups.

Before step 1 the ids are read from the home slot: an article already registered or deleted adds
nothing (a replay), so entries are only ever added by articles about to take a seq. One that is
deleted between that read and step 2 takes its entries out again. A worker that dies between
steps 1 and 2 leaves entries without a seq; the redelivered batch registers the article (the same
hash), and entries never registered are ignored by every reader.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from neardup.stream.index.base import COPIES_CAP, Probe, Registration, Window
from neardup.stream.index.redis import keys, wire
from neardup.stream.records import Record

if TYPE_CHECKING:
    from neardup.stream.index.redis.index import RedisIndex

_COUNT = struct.Struct(">H")
RESOLVE_CHUNK = 10_000  # id hashes an HMGET of step 4 asks for (hot buckets can list many)


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a sharded namespace's buckets live: ``shards`` groups of its ``2**bits`` bucket
    shard keys, group ``g`` holding the shard keys whose index is ``g`` mod ``shards``."""

    ns: str
    shards: int
    bits: int

    def group(self, bucket: int) -> int:
        return (bucket >> (64 - self.bits)) % self.shards

    def calls(
        self, function: str, articles: Iterable[tuple[bytes, Sequence[int]]], *extra: Any
    ) -> list[tuple[str, list[Any]]]:
        """One call of ``function`` per group that any article has a bucket in: the group's
        base (to route by) and the call. Each article travels as its id hash, its field count
        in that group and the fields, in the order given."""
        blobs: dict[int, list[bytes]] = defaultdict(list)
        shard_keys: dict[int, set[int]] = defaultdict(set)
        shift = 64 - self.bits
        for hashed, buckets in articles:
            mine: dict[int, list[int]] = defaultdict(list)
            for b in buckets:
                mine[(b >> shift) % self.shards].append(b)
                shard_keys[(b >> shift) % self.shards].add(b >> shift)
            for g, fields in mine.items():
                blobs[g] += (hashed, _COUNT.pack(len(fields)), keys.bucket_fields(fields))
        out = []
        for g in sorted(blobs):
            head = keys.group_base(self.ns, g)
            ks = [f"{head}b:{s:x}" for s in sorted(shard_keys[g])]
            blob = b"".join(blobs[g])
            out.append((head, ["FCALL", function, len(ks), *ks, self.bits, head, *extra, blob]))
        return out


class Sharded:
    """The calls of a sharded namespace for a :class:`RedisIndex`: registration, read-only
    probes and removal, in the steps of the module docstring."""

    def __init__(self, index: RedisIndex, layout: Layout) -> None:
        self._index, self._layout, self._ns = index, layout, layout.ns

    def _home_keys(self, contents: Sequence[bytes]) -> list[str]:
        ns = self._ns
        xs = keys.shard_keys(ns, contents, (), self._layout.bits)
        return [*self._index._ns_keys(ns), keys.hashes(ns), *xs]

    async def _on_groups(
        self, calls: list[tuple[str, list[Any]]], *, wait: bool = False
    ) -> list[Any]:
        """Run one call per group, pipelined (a cluster client sends each primary its calls at
        once); with ``wait``, a ``WAIT`` for the replicas after each primary's calls."""
        if not calls:
            return []
        index = self._index
        pipe = index._r.pipeline(transaction=False)
        nodes: dict[str, dict[str, Any]] = {}
        for head, call in calls:
            route = index._route_key(head + "b:0", self._ns)
            pipe.execute_command(*call, **route)
            name = route["target_nodes"].name if route else ""
            nodes.setdefault(name, route)
        if wait:
            for route in nodes.values():
                pipe.execute_command("WAIT", index.wait_replicas, index.wait_timeout_ms, **route)
        index.round_trips += 1
        with index._errors(self._ns):
            replies: list[Any] = await pipe.execute()
        if wait:
            for acked in replies[len(calls) :]:
                index._check_acknowledged(self._ns, acked)
        return replies[: len(calls)]

    async def register(self, regs: Sequence[Registration], cap: int, window: Window) -> list[Probe]:
        index, ns = self._index, self._ns
        hashed = [keys.id_hash(r.doc_id) for r in regs]
        # which ids are new (a replay or a deleted id adds nothing to the buckets)
        ks = [keys.ids(ns), keys.deleted(ns)]
        ids = [r.doc_id for r in regs]
        known = await index._call(index._fcall(ns, "FCALL_RO", "neardup_known64", ks, *ids))
        adding: dict[str, int] = {}
        for k, r in enumerate(regs):
            if int(known[k]) == 0:
                adding.setdefault(r.doc_id, k)
        # 1. add
        wait = bool(index.wait_replicas)
        adds = [(hashed[k], regs[k].buckets) for k in adding.values()]
        await self._on_groups(self._layout.calls("neardup_shard_add64", adds, cap), wait=wait)
        # 2. seq, on the home slot
        probes = await self._register_home(regs, hashed, cap, window)
        refused = [k for k in adding.values() if probes[k].status == "deleted"]
        if refused:  # deleted since the ids were read: take their entries out again
            out = [(hashed[k], regs[k].buckets) for k in refused]
            await self._on_groups(self._layout.calls("neardup_shard_remove64", out), wait=wait)
        # 3. read, 4. resolve
        new = [k for k, p in enumerate(probes) if p.status == "new"]
        runs = await self._read([regs[k].buckets for k in new])
        seq_of = await self._resolve(b"".join(b"".join(r) for r in runs))
        for k, found in zip(new, runs, strict=True):
            p, me = probes[k], hashed[k]
            hot = sum(1 for run in found if len(run) >= 8 * cap and not _holds(run, me))
            seqs = {seq_of[h] for run in found for h in _entries(run)}
            cands = tuple(sorted(s for s in seqs if s is not None and s < p.seq))
            probes[k] = replace(p, candidates=cands, hot=hot)
        return probes

    async def _register_home(
        self, regs: Sequence[Registration], hashed: Sequence[bytes], cap: int, window: Window
    ) -> list[Probe]:
        index, ns = self._index, self._ns
        scheme = index._schemes.get(ns, b"")
        tail = [scheme, wire.optional(window.live_after), wire.optional(window.forget_before)]
        if index.wait_replicas:
            tail.append("1")
        pipe = index._r.pipeline(transaction=False)
        route = index._route(ns)
        for lo in range(0, len(regs), index._chunk):
            part = regs[lo : lo + index._chunk]
            own = hashed[lo : lo + index._chunk]
            packed = b"".join(
                wire.packed_article(replace(r, buckets=(int.from_bytes(h, "big"),)))
                for r, h in zip(part, own, strict=True)
            )
            ks = self._home_keys([r.content for r in part])
            args = [self._layout.bits, cap, COPIES_CAP, len(part), packed, *tail]
            pipe.execute_command("FCALL", "neardup_register_home64", len(ks), *ks, *args, **route)
        if index.wait_replicas:
            pipe.execute_command("WAIT", index.wait_replicas, index.wait_timeout_ms, **route)
        index.round_trips += 1
        with index._errors(ns):
            replies = await pipe.execute()
        if index.wait_replicas:
            index._check_acknowledged(ns, replies.pop())
        return [p for reply in replies for p in wire.probes(reply)]

    async def _read(self, articles: Sequence[Sequence[int]]) -> list[list[bytes]]:
        """Step 3: each article's bucket runs (of id hashes), in its buckets' order."""
        if not articles:
            return []
        calls = self._layout.calls("neardup_shard_read64", ((b"\0" * 8, b) for b in articles))
        replies = await self._on_groups(calls)
        # the replies list each group's fields in the order the articles were packed
        queues = {head: iter(reply) for (head, _), reply in zip(calls, replies, strict=True)}
        out = []
        for buckets in articles:
            out.append([bytes(next(queues[self._group_head(b)])) for b in buckets])
        return out

    def _group_head(self, bucket: int) -> str:
        return keys.group_base(self._ns, self._layout.group(bucket))

    async def _resolve(self, run: bytes) -> dict[bytes, int | None]:
        """Step 4: the seq of each distinct id hash in a run (None: it has none)."""
        wanted = sorted(set(_entries(run)))
        if not wanted:
            return {}
        index, key = self._index, keys.hashes(self._ns)
        pipe = index._r.pipeline(transaction=False)
        route = index._route(self._ns)
        for lo in range(0, len(wanted), RESOLVE_CHUNK):
            pipe.execute_command("HMGET", key, *wanted[lo : lo + RESOLVE_CHUNK], **route)
        got = [s for reply in await index._call(pipe.execute()) for s in reply]
        return {
            h: int.from_bytes(s, "big") if s else None for h, s in zip(wanted, got, strict=True)
        }

    async def found(self, buckets: Sequence[int]) -> tuple[int, ...]:
        """The registered articles in these buckets (read only), ascending."""
        runs = await self._read([buckets])
        seq_of = await self._resolve(b"".join(runs[0]) if runs else b"")
        return tuple(sorted(s for s in seq_of.values() if s is not None))

    async def remove(self, raws: Sequence[tuple[int, bytes]]) -> int:
        """Remove articles (seq, record) group by group, then from the home slot."""
        index, ns = self._index, self._ns
        recs = [Record.decode(raw) for _, raw in raws]
        out = [(keys.id_hash(r.doc_id), r.buckets) for r in recs]
        await self._on_groups(self._layout.calls("neardup_shard_remove64", out))
        pipe = index._r.pipeline(transaction=False)
        route = index._route(ns)
        for lo in range(0, len(raws), index._chunk):
            args: list[Any] = [self._layout.bits]
            part = recs[lo : lo + index._chunk]
            for (seq, _), rec in zip(raws[lo : lo + index._chunk], part, strict=True):
                args += (wire.pack_seq(seq), rec.doc_id, rec.content, keys.id_hash(rec.doc_id))
            ks = self._home_keys([r.content for r in part])
            pipe.execute_command("FCALL", "neardup_remove_home64", len(ks), *ks, *args, **route)
        return sum(int(x) for x in await index._call(pipe.execute()))


def _entries(run: bytes) -> list[bytes]:
    return [run[i : i + 8] for i in range(0, len(run), 8)]


def _holds(run: bytes, entry: bytes) -> bool:
    return entry in _entries(run)


def shards_of(scheme: bytes | None) -> int:
    """The shard groups a stored scheme names (``Policy.scheme()['shards']``, absent: 1)."""
    if not scheme:
        return 1
    try:
        value = orjson.loads(scheme.split(b"|", 1)[0])
    except orjson.JSONDecodeError:
        return 1
    n = value.get("shards", 1) if isinstance(value, dict) else 1
    return n if isinstance(n, int) and n >= 1 else 1


__all__ = ["Layout", "Sharded", "shards_of"]
