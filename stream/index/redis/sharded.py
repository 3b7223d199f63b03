"""A sharded namespace: its buckets spread over N Redis Cluster slots, so one namespace can use
more than one primary, with the ordering rule of a single-slot namespace kept.

A single-slot namespace registers an article in one atomic call that takes its seq and reads and
adds its buckets, so seq order is visibility order. Buckets on other slots cannot join that call.
The protocol here (``model/sharded.pml``, model-checked with spin: ``make model``) gets the same
rule in steps, each atomic on one slot:

0. **claim**: the article's 8-byte id hash (:func:`~.keys.id_hash`, keyed by the namespace's
   secret) is claimed for its id in the home slot's id-hash map (``neardup_claim64``); a hash
   another id holds is never used: the id asks for its next hash (an accidental collision);
1. **add**: the id hash goes into each of its buckets, one ``neardup_shard_add64`` call per
   shard group (it has no seq yet);
2. **seq**: one call on the home slot (``neardup_register_home64``) refuses an id remembered as
   deleted, or answers a replay, or, if the id still holds its hash, takes the next seq, records
   id -> seq, and reads and adds to the content slot;
3. **read**: its buckets, one ``neardup_shard_read64`` call per group;
4. **resolve**: the seqs of the id hashes read, id hash -> the id holding it -> its seq
   (``neardup_resolve64`` on the home slot). A candidate is earlier iff it has a seq and that
   seq is smaller.

Any article X with seq(X) < seq(A) took its seq after adding itself, so before A took its own, so
before A read: A sees X. An article that added itself but has no seq yet (or crashed before step
2) is not earlier, and whoever it is will see A. A pairwise "who saw whom" rule instead forms
cycles with no original (the model's counterexample). Deletion, in this order: remember the id
(nothing registers it again), take its entries out of the buckets group by group, then drop its
seq, record and verdict; step 4 answers nothing for a seq already dropped.

Step 0 is what makes an entry name one article: nobody without the key can make two ids hash
alike, and the one id a hash has in the map is the only one that adds it to a bucket, so reading
an entry never takes another id's seq for this one's, and removing an article's entries (only
those of the hashes it holds, released after them) never removes another's.

What it costs: five round trips a batch instead of one (each pipelined over the groups, which a
cluster client sends to their primaries at once), 8 bytes a bucket entry as before, and 8 bytes,
the id and a field per article in the id-hash map. The home slot still takes every article's
counter, id and record writes: it is the namespace's bottleneck, shared by all its groups.

Step 0 also reads the ids: an article already registered or deleted claims and adds nothing (a
replay), so entries are only ever added by articles about to take a seq. One that is
deleted between that read and step 2 takes its entries out again; one that expired between them
is not registered by step 2 (it is in no bucket): it is added, then sent again. A worker that dies
between steps 0 and 2 leaves a claim and entries without a seq; the redelivered batch registers
the article (the hash it holds), and entries never registered are ignored by every reader.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Container, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.base import COPIES_CAP, Probe, Registration, Window
from neardup.stream.index.redis import keys, wire
from neardup.stream.records import Record

if TYPE_CHECKING:
    from neardup.stream.index.redis.index import RedisIndex

_COUNT = struct.Struct(">H")
RESOLVE_CHUNK = 10_000  # id hashes a resolve64 call of step 4 asks for (hot buckets can list many)
NOT_ADDED = -3  # register_home64: an article to be registered that is not in its buckets yet
CLAIMED, HELD = 0, 3  # claim64: the id holds the hash it asked for; another id holds it
ADD_AGAIN = 3  # times such articles are added and sent again before the batch is retried


@dataclass(frozen=True, slots=True)
class Split:
    """One article's buckets by shard group: each group's packed entry (its id hash, field count
    and fields, as the group functions read it) and the bucket shard indexes it touches."""

    parts: dict[int, bytes]
    shard_keys: dict[int, set[int]]


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a sharded namespace's buckets live: ``shards`` groups of its ``2**bits`` bucket
    shard keys, group ``g`` holding the shard keys whose index is ``g`` mod ``shards``."""

    ns: str
    shards: int
    bits: int

    def split(self, hashed: bytes, buckets: Sequence[int]) -> Split:
        """An article's buckets by group (computed once, used by each step's calls)."""
        fields: dict[int, list[int]] = defaultdict(list)
        shard_keys: dict[int, set[int]] = defaultdict(set)
        shift, n = 64 - self.bits, self.shards
        for b in buckets:
            top = b >> shift
            fields[top % n].append(b)
            shard_keys[top % n].add(top)
        parts = {
            g: b"".join((hashed, _COUNT.pack(len(fs)), keys.bucket_fields(fs)))
            for g, fs in fields.items()
        }
        return Split(parts, shard_keys)

    def calls(
        self, function: str, articles: Sequence[Split], *extra: Any
    ) -> list[tuple[str, list[Any], list[int]]]:
        """One call of ``function`` per group that any article has a bucket in: the group's
        base (to route by), the call, and which of the articles it carries, in order."""
        blobs: dict[int, list[bytes]] = defaultdict(list)
        carried: dict[int, list[int]] = defaultdict(list)
        shard_keys: dict[int, set[int]] = defaultdict(set)
        for k, a in enumerate(articles):
            for g, part in a.parts.items():
                blobs[g].append(part)
                carried[g].append(k)
                shard_keys[g] |= a.shard_keys[g]
        out = []
        for g in sorted(blobs):
            head = keys.group_base(self.ns, g)
            ks = [f"{head}b:{s:x}" for s in sorted(shard_keys[g])]
            blob = b"".join(blobs[g])
            call = ["FCALL", function, len(ks), *ks, self.bits, head, *extra, blob]
            out.append((head, call, carried[g]))
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
        self, calls: list[tuple[str, list[Any], list[int]]], *, wait: bool = False
    ) -> list[Any]:
        """Run one call per group, pipelined (a cluster client sends each primary its calls at
        once); with ``wait``, a ``WAIT`` for the replicas after each primary's calls."""
        if not calls:
            return []
        index = self._index
        pipe = index._r.pipeline(transaction=False)
        nodes: dict[str, dict[str, Any]] = {}
        for head, call, _ in calls:
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
        index = self._index
        # 0. claim (a replay or a deleted id claims and adds nothing to the buckets)
        claimed = await self._claim([r.doc_id for r in regs])
        hashed = [claimed.get(r.doc_id, b"") for r in regs]
        adding: dict[str, int] = {}
        for k, r in enumerate(regs):
            if hashed[k]:
                adding.setdefault(r.doc_id, k)
        added = set(adding.values())
        splits = {k: self._layout.split(hashed[k], regs[k].buckets) for k in added}
        # 1. add
        wait = bool(index.wait_replicas)
        adds = self._layout.calls("neardup_shard_add64", list(splits.values()), cap)
        await self._on_groups(adds, wait=wait)
        # 2. seq, on the home slot
        probes = await self._take_seqs(regs, hashed, splits, cap, window, wait)
        refused = [splits[k] for k in splits if probes[k].status == "deleted"]
        if refused:  # deleted since the ids were read: take their entries out again
            out = self._layout.calls("neardup_shard_remove64", refused)
            await self._on_groups(out, wait=wait)
        # 3. read, 4. resolve
        new = [k for k, p in enumerate(probes) if p.status == "new"]
        got = await self._read([splits[k] for k in new], cap)
        seq_of = await self._resolve(b"".join(run for run, _ in got))
        for k, (run, hot) in zip(new, got, strict=True):
            p = probes[k]
            seqs = {seq_of[h] for h in _entries(run)}
            cands = tuple(sorted(s for s in seqs if s is not None and s < p.seq))
            probes[k] = replace(p, candidates=cands, hot=hot)
        return probes

    async def _claim(self, ids: Sequence[str]) -> dict[str, bytes]:
        """Step 0: the id hash each new id of ``ids`` holds now (claimed, or held before), its
        first :func:`~.keys.id_hash` no other id holds; ids registered or remembered as deleted
        are left out. Asked in chunks (Lua's unpack() stays within its limit), one round trip
        for all unless an id's hash is another's."""
        index, ns = self._index, self._ns
        ks = [keys.meta(ns), keys.ids(ns), keys.deleted(ns), keys.hashes(ns)]
        todo, out = list(dict.fromkeys(ids)), dict[str, bytes]()
        for attempt in range(keys.ID_HASH_TRIES):
            if not todo:
                return out
            key = await index._id_key(ns)
            asked = [(i, keys.id_hash(i, key, attempt)) for i in todo]
            pipe = index._r.pipeline(transaction=False)
            for lo in range(0, len(asked), index._chunk):
                args = [x for pair in asked[lo : lo + index._chunk] for x in pair]
                call = ["FCALL", "neardup_claim64", len(ks), *ks, key, *args]
                pipe.execute_command(*call, **index._route(ns))
            replies = await index._call(pipe.execute())
            if any(bytes(r[0]) != key for r in replies):  # another key was set first: use it
                index._forget_id_key(ns)
                return await self._claim(ids)
            statuses = [int(x) for r in replies for x in r[1:]]
            out |= {i: h for (i, h), st in zip(asked, statuses, strict=True) if st == CLAIMED}
            todo = [i for (i, _), st in zip(asked, statuses, strict=True) if st == HELD]
        if not todo:
            return out
        raise IndexUnavailableError(
            f"namespace {ns!r}: every id hash of {todo[0]!r} is held by another id"
        )

    async def _take_seqs(
        self,
        regs: Sequence[Registration],
        hashed: list[bytes],
        splits: dict[int, Split],
        cap: int,
        window: Window,
        wait: bool,
    ) -> list[Probe]:
        """Step 2. An article read as registered or deleted adds nothing in step 1; if it is
        gone since (expired), the home slot does not register it: it is added (``splits`` gains
        it) and sent again, ``ADD_AGAIN`` times at most, so no article takes a seq before it is
        in its buckets. One whose claim was lost (it expired and was removed since step 0)
        claims again."""
        probes = await self._register_home(regs, hashed, splits, range(len(regs)), cap, window)
        for _ in range(ADD_AGAIN):
            late = [k for k, p in enumerate(probes) if p is None]
            if not late:
                break
            claimed = await self._claim([regs[k].doc_id for k in late])
            # (one registered or deleted since claims nothing: sent as it was, a replay or
            # refused, and one refused takes out the entries it added before)
            fresh = [k for k in late if regs[k].doc_id in claimed]
            for k in fresh:
                hashed[k] = claimed[regs[k].doc_id]
            splits |= {k: self._layout.split(hashed[k], regs[k].buckets) for k in fresh}
            adds = self._layout.calls("neardup_shard_add64", [splits[k] for k in fresh], cap)
            await self._on_groups(adds, wait=wait)
            again = await self._register_home(regs, hashed, splits, late, cap, window)
            for k, p in zip(late, again, strict=True):
                probes[k] = p
        done = [p for p in probes if p is not None]
        if len(done) < len(probes):
            raise IndexUnavailableError(
                f"namespace {self._ns!r}: articles kept expiring while they were registered again"
            )
        return done

    async def _register_home(
        self,
        regs: Sequence[Registration],
        hashed: Sequence[bytes],
        added: Container[int],
        which: Sequence[int],
        cap: int,
        window: Window,
    ) -> list[Probe | None]:
        """Step 2 for the articles ``which`` (indexes), in order; one that was not added to
        its buckets (not in ``added``) is not registered here: None when it would have been."""
        index = self._index
        tail = index._registration_tail(self._ns, window)
        calls = []
        for lo in range(0, len(which), index._chunk):
            part = which[lo : lo + index._chunk]
            packed = b"".join(
                wire.packed_article(
                    replace(
                        regs[k], buckets=(int.from_bytes(hashed[k], "big"),) if k in added else ()
                    )
                )
                for k in part
            )
            ks = self._home_keys([regs[k].content for k in part])
            head = ["FCALL", "neardup_register_home64", len(ks), *ks]
            calls.append([*head, self._layout.bits, cap, COPIES_CAP, len(part), packed, *tail])
        replies = await index._registered(self._ns, calls)
        out: list[Probe | None] = []
        for reply in replies:
            for at in range(0, len(reply), 4):
                one = reply[at : at + 4]
                out.append(None if one[1] == NOT_ADDED else wire.probes(one)[0])
        return out

    async def _read(self, articles: Sequence[Split], cap: int) -> list[tuple[bytes, int]]:
        """Step 3: each article's bucket runs (of id hashes) concatenated, and how many of its
        buckets are full without it."""
        if not articles:
            return []
        calls = self._layout.calls("neardup_shard_read64", articles, cap)
        replies = await self._on_groups(calls)
        runs: list[list[bytes]] = [[] for _ in articles]
        hot = [0] * len(articles)
        for (_, _, carried), reply in zip(calls, replies, strict=True):
            for j, k in enumerate(carried):
                hot[k] += int(reply[2 * j])
                runs[k].append(bytes(reply[2 * j + 1]))
        return [(b"".join(r), h) for r, h in zip(runs, hot, strict=True)]

    async def _resolve(self, run: bytes) -> dict[bytes, int | None]:
        """Step 4: the seq of the id holding each distinct id hash in a run (None: none)."""
        wanted = sorted(set(_entries(run)))
        if not wanted:
            return {}
        index, ns = self._index, self._ns
        ks = [keys.hashes(ns), keys.ids(ns)]
        pipe = index._r.pipeline(transaction=False)
        route = index._route(ns)
        for lo in range(0, len(wanted), RESOLVE_CHUNK):
            blob = b"".join(wanted[lo : lo + RESOLVE_CHUNK])
            pipe.execute_command("FCALL_RO", "neardup_resolve64", len(ks), *ks, blob, **route)
        got = [s for reply in await index._call(pipe.execute()) for s in reply]
        return {
            h: int.from_bytes(s, "big") if s else None for h, s in zip(wanted, got, strict=True)
        }

    async def found(self, buckets: Sequence[int]) -> tuple[int, ...]:
        """The registered articles in these buckets (read only), ascending."""
        ((run, _),) = await self._read([self._layout.split(bytes(8), buckets)], 1)
        seq_of = await self._resolve(run)
        return tuple(sorted(s for s in seq_of.values() if s is not None))

    async def remove(self, raws: Sequence[tuple[int, bytes]]) -> int:
        """Remove articles (seq, record) group by group, then from the home slot."""
        index, ns = self._index, self._ns
        recs = [Record.decode(raw) for _, raw in raws]
        held = await self._held([r.doc_id for r in recs])
        out = [self._layout.split(h, r.buckets) for r in recs for h in held[r.doc_id]]
        await self._on_groups(self._layout.calls("neardup_shard_remove64", out))
        pipe = index._r.pipeline(transaction=False)
        route = index._route(ns)
        for lo in range(0, len(raws), index._chunk):
            args: list[Any] = [self._layout.bits]
            part = recs[lo : lo + index._chunk]
            for (seq, _), rec in zip(raws[lo : lo + index._chunk], part, strict=True):
                args += (wire.pack_seq(seq), rec.doc_id, rec.content, b"".join(held[rec.doc_id]))
            ks = self._home_keys([r.content for r in part])
            pipe.execute_command("FCALL", "neardup_remove_home64", len(ks), *ks, *args, **route)
        return sum(int(x) for x in await index._call(pipe.execute()))

    async def _held(self, ids: Sequence[str]) -> dict[str, list[bytes]]:
        """The id hashes each id holds (of the ones it may take): its entries are under those,
        and no other id's are."""
        index, ns = self._index, self._ns
        key = await index._id_key(ns)
        asked = {i: keys.id_hashes(i, key) for i in dict.fromkeys(ids)}
        flat = [h for hs in asked.values() for h in hs]
        got = await index._call(index._r.hmget(keys.hashes(ns), flat)) if flat else []
        holders = iter(got)
        enc = {i: i.encode("utf-8", "surrogatepass") for i in asked}
        return {i: [h for h in hs if next(holders) == enc[i]] for i, hs in asked.items()}


def _entries(run: bytes) -> list[bytes]:
    return [run[i : i + 8] for i in range(0, len(run), 8)]


__all__ = ["Layout", "Sharded", "Split"]
