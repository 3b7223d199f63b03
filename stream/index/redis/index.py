"""Redis index: one FUNCTION call registers and probes a chunk of articles atomically.

The client is injected (``redis.asyncio.Redis``, or a cluster client): this module never builds
one. Batches are cut into chunks of ``chunk_size`` articles (64 by default), one
``neardup_register64k`` FCALL each, pipelined (``transaction=False``): N articles cost one
round trip for registration and one for the candidates' records. Inside a chunk the articles are
registered in order, each exactly as if alone, and the whole chunk is atomic, which is more than
the ordering rule needs. :meth:`RedisIndex.registration` streams a batch's chunks on one
connection as the engine sketches them, so Redis works on one chunk while the next is sketched.

Storage per article: a record in ``nd:{ns}:d`` (:mod:`neardup.stream.records`), 8 bytes of seq
(64-bit, big-endian, storage format 3) in each of its buckets, an entry in the id and time indexes,
and its verdict. Buckets live as fields of *sharded* hashes (``nd:{ns}:b:<top bits of the bucket
id>``): small hashes use Redis's compact listpack encoding, about 20 bytes a bucket entry instead of
~90 for a key per bucket. The shard count is ``2**shard_bits`` per namespace (default 16); keep it
so shards hold up to a few hundred fields (``hash-max-listpack-entries``, 128 by default, 512
recommended for large namespaces).

Keys of a call: every key a function touches is declared. ``KEYS`` = the namespace's own keys
(meta, ids, docs, times, verdicts, deleted, see :mod:`neardup.stream.index.redis.keys`), then the
distinct exact-content and bucket shard keys of the call's articles
(:func:`neardup.stream.index.redis.keys.shard_keys`). The Lua derives each shard key's name itself
and refuses, before any write, a call that did not declare it: Redis Cluster checks the declared
keys' slot before running a function, so no key can fail half-way through (a slot being migrated
answers ASK/TRYAGAIN for the whole call instead). The chunk's articles travel packed into one
argument (id, content hash, time, record and bucket fields each). Every key carries the ``{ns}``
hash tag (one cluster slot: a cluster client routes the call by its first key) and starts with
``nd:``, so the ACL key pattern ``~nd:*`` (``deploy/redis-acl.conf``) covers it, command by command.

Cluster (``redis.asyncio.cluster.RedisCluster``): the library is loaded on every primary, at start
and again when a call answers "function not found" (a new primary; a promoted replica has it from
replication). Registration is buffered per batch and pipelined (the streamed registration needs
one connection of a plain pool). The cluster client follows MOVED/ASK itself; what still
surfaces (TRYAGAIN, CLUSTERDOWN, READONLY, a slot without a reachable node) is retriable.

Failover: replication is asynchronous, so a primary can acknowledge a registration and die before
its replica has it; the promoted replica then lacks the article, and a later copy of it can come
out a second original. ``wait_replicas`` closes that window: after a batch's registration calls,
on their connection, ``WAIT`` until that many replicas hold every write made so far (a call that
registers nothing still writes one field, so a replayed batch waits for what the worker before
it wrote). The batch's last write, its verdicts and the boilerplate lines they teach
(``neardup_put_verdicts64``, one atomic step, after its cluster members), waits too: a batch
whose verdicts were published never loses the lines it taught with the primary (later articles
would be judged against fewer).

Every registration call carries the namespace's scheme (once :meth:`RedisIndex.ensure_scheme` has
been called for it), compared and, if Redis lost it, recorded again in the same atomic step; the
retention cutoff, so the content slot answers with its first live copy; and the time before which
remembered deletions are forgotten. Times come from Redis (:meth:`RedisIndex.now`, ``TIME``).

Errors: see :mod:`~neardup.stream.index.redis.errors`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from importlib import resources
from typing import Any

import numpy as np
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import (
    NoPermissionError,
)

from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.base import (
    COPIES_CAP,
    NO_WINDOW,
    BufferedRegistration,
    Checked,
    Probe,
    Registration,
    RegistrationStream,
    StoredVerdict,
    Window,
    scheme_mismatch,
)
from neardup.stream.index.redis import keys, wire
from neardup.stream.index.redis.errors import index_errors
from neardup.stream.index.redis.namespace_commands import SCHEMES_KEPT, NamespaceCommands
from neardup.stream.index.redis.registration import StreamedRegistration
from neardup.stream.index.redis.sharded import Layout, Sharded
from neardup.stream.records import Record

MAX_CHUNK = 1024  # articles per call: Lua's unpack() of a chunk's writes stays far below its limit
_LUA = (
    resources.files("neardup.stream.index.redis")
    .joinpath("neardup.lua")
    .read_text(encoding="utf-8")
)


class RedisIndex(NamespaceCommands):
    """Index on Redis 7+ (FUNCTION) or Valkey; all keys of a namespace in one cluster slot."""

    def __init__(
        self,
        client: aioredis.Redis | RedisCluster,
        *,
        shard_bits: int = 16,
        chunk_size: int = 64,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
    ) -> None:
        """``chunk_size``: articles per registration or removal call (at most 1024). A call holds
        the server for its whole chunk (about 3 ms for 64 news-sized articles); the CPU saved per
        article levels off after a few dozen, larger chunks only lengthen those stalls.

        ``wait_replicas``: a registration returns only once that many replicas of the
        namespace's primary acknowledged it (``WAIT``, at most ``wait_timeout_ms``); fewer is
        :class:`~neardup.stream.errors.IndexUnavailableError`, so the batch is retried and no
        verdict rests on a registration a failover could lose. 0 (the default) does not wait."""
        if not 1 <= shard_bits <= 24:
            raise ValueError("shard_bits must be in [1, 24]")
        if not 1 <= chunk_size <= MAX_CHUNK:
            raise ValueError(f"chunk_size must be in [1, {MAX_CHUNK}]")
        if wait_replicas < 0 or wait_timeout_ms < 1:
            raise ValueError("wait_replicas must be >= 0 and wait_timeout_ms >= 1")
        self.wait_replicas, self.wait_timeout_ms = wait_replicas, wait_timeout_ms
        self._r: Any = client  # the two clients' command methods have the same signatures
        self._cluster = isinstance(client, RedisCluster)
        self._bits = shard_bits
        self._chunk = chunk_size
        self._loaded = False
        self._schemes: dict[str, bytes] = {}  # ns -> scheme checked by every registration
        self._shards: dict[str, int] = {}  # ns -> its shard groups, as its stored scheme says
        self._id_keys: dict[str, bytes] = {}  # sharded ns -> its id-hash key (meta 'idkey')
        self._old_sharded: dict[str, int] = {}  # ns -> its sharded format, if not this code's
        self.round_trips = 0  # calls that waited for Redis (metrics)
        self.remote = True  # calls wait on the Redis server (see Index.remote)

    async def load_functions(self) -> None:
        """Load (or replace) the Lua library; idempotent, called once at start (on a cluster, on
        every primary: a function runs on the primary of its keys' slot).

        An ACL user without ``FUNCTION LOAD`` (the operator loads the library: see SECURITY.md)
        gets NOPERM; then the library must already be loaded, and be exactly this version
        (checked with ``FUNCTION LIST``). Until it is, the index is unavailable (retriable).
        """
        try:
            if self._cluster:
                await self._call(
                    self._r.execute_command(
                        "FUNCTION LOAD", "REPLACE", _LUA, target_nodes=RedisCluster.PRIMARIES
                    )
                )
            else:
                await self._call(self._r.function_load(_LUA, replace=True))
        except NoPermissionError:
            await self._check_preloaded()
        self._loaded = True

    async def _check_preloaded(self) -> None:
        libs = await self._call(self._r.function_list(library="neardup", withcode=True))
        for lib in libs:
            info = lib if isinstance(lib, dict) else dict(zip(lib[::2], lib[1::2], strict=True))
            info = {k.decode() if isinstance(k, bytes) else k: v for k, v in info.items()}
            code = info.get("library_code")
            code = code.decode() if isinstance(code, bytes) else code
            if info.get("library_name") in (b"neardup", "neardup") and code == _LUA:
                return
        raise IndexUnavailableError(
            "this Redis user may not FUNCTION LOAD and the 'neardup' library is missing or "
            "another version: load stream/index/redis/neardup.lua as an admin "
            "(FUNCTION LOAD REPLACE)"
        )

    async def _call(self, awaitable: Any) -> Any:
        self.round_trips += 1
        with self._errors():
            return await awaitable

    def _errors(self, ns: str = "") -> AbstractContextManager[None]:
        """redis-py's errors as the index's (:func:`.errors.index_errors`)."""
        return index_errors(ns, self._schemes.get(ns, b""), self._lost)

    def _lost(self) -> None:
        self._loaded = False  # a restarted server without persistence lost the library

    async def _ready(self) -> None:
        if not self._loaded:
            await self.load_functions()

    async def now(self, ns: str) -> float:
        """Redis's clock (``TIME``): one clock for every worker's retention and liveness."""
        secs, usecs = await self._call(self._r.time())
        return int(secs) + int(usecs) / 1e6

    async def check_scheme(self, ns: str, scheme: bytes) -> bool:
        mine = scheme + b"|shard_bits=" + str(self._bits).encode()
        if self._schemes.get(ns) == mine:
            return True
        stored = await self.stored_scheme(ns)
        if stored is None:
            return False
        if stored != mine:
            raise scheme_mismatch(ns, stored, mine)
        self._keep_shards(ns, stored)
        return True

    async def _sharded(self, ns: str) -> Sharded | None:
        """The calls of ``ns`` if it is sharded (its scheme names ``shards`` > 1), else None:
        the single-slot layout."""
        n = await self._groups(ns)
        if n == 1:
            return None
        self._check_sharded_format(ns)
        return Sharded(self, Layout(ns, n, self._bits))

    async def ensure_scheme(self, ns: str, scheme: bytes) -> None:
        await self._ready()
        mine = scheme + b"|shard_bits=" + str(self._bits).encode()
        stored = await self._call(self._fcall(ns, "FCALL", "neardup_scheme", [keys.meta(ns)], mine))
        if stored != mine:
            raise scheme_mismatch(ns, stored, mine)
        self._schemes.pop(ns, None)  # kept in the order last ensured, SCHEMES_KEPT at most
        if len(self._schemes) >= SCHEMES_KEPT:
            self._schemes.pop(next(iter(self._schemes)))
        self._schemes[ns] = mine
        self._keep_shards(ns, mine)
        if self._shards[ns] > 1:  # its id-hash key, set by the first worker to ensure it
            await self._id_key(ns)
        await self._call(self._r.sadd(keys.REGISTRY, ns))  # GET /namespaces lists it

    async def _id_key(self, ns: str) -> bytes:
        """A sharded namespace's id-hash key (:func:`~.keys.id_hash`): the meta field ``idkey``,
        set to a fresh random key if it has none (the first to set it wins, every worker reads
        that one), then remembered (step 0 of a registration checks it is still the one)."""
        key = self._id_keys.get(ns)
        if key is None:
            pipe = self._r.pipeline(transaction=False)
            pipe.hsetnx(keys.meta(ns), "idkey", keys.new_id_key())
            pipe.hget(keys.meta(ns), "idkey")
            _, got = await self._call(pipe.execute())
            key = bytes(got)
            if len(self._id_keys) >= SCHEMES_KEPT:
                self._id_keys.pop(next(iter(self._id_keys)))
            self._id_keys[ns] = key
        return key

    def _forget_id_key(self, ns: str) -> None:
        """Read the id-hash key again next time (the stored one is another: the namespace was
        dropped, or Redis lost it and another worker set a new one)."""
        self._id_keys.pop(ns, None)

    @staticmethod
    def _ns_keys(ns: str) -> list[str]:
        """The KEYS of every per-article function (one layout, see neardup.lua): the namespace's
        meta, ids, docs, times, verdicts and deleted ids; the functions derive the shard keys
        from the first (its base) and ``shard_bits``."""
        return [
            keys.meta(ns),
            keys.ids(ns),
            keys.docs(ns),
            keys.times(ns),
            keys.verdicts(ns),
            keys.deleted(ns),
        ]

    def _call_keys(
        self, ns: str, contents: Sequence[bytes], buckets: Sequence[Sequence[int]]
    ) -> list[str]:
        """The KEYS of a call about these articles: the namespace's, then their shard keys."""
        return self._ns_keys(ns) + keys.shard_keys(ns, contents, buckets, self._bits)

    def _register_calls(
        self, ns: str, regs: Sequence[Registration], cap: int, window: Window
    ) -> list[list[Any]]:
        """The ``neardup_register64k`` calls of some articles, ``chunk_size`` articles each."""
        tail = self._registration_tail(ns, window)
        calls = []
        for lo in range(0, len(regs), self._chunk):
            part = regs[lo : lo + self._chunk]
            packed = b"".join(map(wire.packed_article, part))
            ks = self._call_keys(ns, [r.content for r in part], [r.buckets for r in part])
            head = ["FCALL", "neardup_register64k", len(ks), *ks]
            calls.append([*head, self._bits, cap, COPIES_CAP, len(part), packed, *tail])
        return calls

    def _registration_tail(self, ns: str, window: Window) -> list[Any]:
        """The last arguments of a registration call: the scheme ensured for ``ns`` ('' before
        that: not checked), the window, and the touch that the replica wait needs."""
        scheme = self._schemes.get(ns, b"")
        tail = [scheme, wire.optional(window.live_after), wire.optional(window.forget_before)]
        if self.wait_replicas:
            tail.append("1")  # touch: the WAIT after these calls then covers earlier writes too
        return tail

    async def _registered(self, ns: str, calls: Sequence[list[Any]]) -> list[Any]:
        """Registration calls run on the namespace's primary, pipelined, then the replica wait
        (if any): their replies."""
        pipe = self._r.pipeline(transaction=False)
        # On a cluster every call (and the WAIT) goes to the namespace's primary, on one
        # connection (the cluster pipeline sends each node's commands on one, in order).
        route = self._route(ns)
        node = route.get("target_nodes")
        for call in calls:
            pipe.execute_command(*call, **route)
        if self.wait_replicas:
            pipe.execute_command("WAIT", self.wait_replicas, self.wait_timeout_ms, **route)
        self.round_trips += 1
        with self._errors(ns):
            replies: list[Any] = await pipe.execute()
        if self.wait_replicas:
            self._check_acknowledged(ns, replies.pop())
            if node is not None and self._route(ns)["target_nodes"].name != node.name:
                raise IndexUnavailableError(
                    f"namespace {ns!r}: its slot moved during a registration waiting for replicas"
                )
        return replies

    async def register(
        self, ns: str, regs: Sequence[Registration], cap: int, *, window: Window = NO_WINDOW
    ) -> list[Probe]:
        await self._ready()
        if not regs:
            return []
        sharded = await self._sharded(ns)
        if sharded is not None:
            return await sharded.register(regs, cap, window)
        replies = await self._registered(ns, self._register_calls(ns, regs, cap, window))
        return [p for reply in replies for p in wire.probes(reply)]

    def _route(self, ns: str) -> dict[str, Any]:
        """How a call about ``ns`` is sent: on a cluster, to the primary of its slot as the
        client's slot table has it. Named, because a cluster client routing an FCALL itself asks
        a node first which keys the call has (``COMMAND GETKEYS``, with the whole call as its
        argument): one more round trip, and the payload twice. A stale table costs a MOVED,
        which the client follows (and then learns the new owner)."""
        return self._route_key(keys.meta(ns), ns)

    def _route_key(self, key: str, ns: str) -> dict[str, Any]:
        """:meth:`_route` for a call whose first key is ``key`` (a shard group's)."""
        if not self._cluster:
            return {}
        with self._errors(ns):
            return {"target_nodes": self._r.get_node_from_key(key)}

    def _fcall(self, ns: str, command: str, function: str, ks: Sequence[str], *args: Any) -> Any:
        """``FCALL``/``FCALL_RO`` of a namespace's function, routed by :meth:`_route`."""
        return self._r.execute_command(command, function, len(ks), *ks, *args, **self._route(ns))

    def _check_acknowledged(self, ns: str, acked: Any) -> None:
        """``WAIT``'s answer: how many replicas have every write this connection made."""
        want, within = self.wait_replicas, self.wait_timeout_ms
        if int(acked) < want:
            raise IndexUnavailableError(
                f"namespace {ns!r}: {int(acked)} of {want} Redis replicas acknowledged the "
                f"registration within {within} ms (NEARDUP_REDIS_WAIT_REPLICAS)"
            )

    def registration(self, ns: str, cap: int) -> AbstractAsyncContextManager[RegistrationStream]:
        """Chunks written one after another on one connection, the replies read at the end:
        Redis registers a chunk while the engine sketches the next, in the order sent. (A client
        that is not a plain ``redis.asyncio.Redis``, e.g. a cluster client, registers the batch
        in one pipeline at the end instead.)"""
        if isinstance(self._r, aioredis.Redis) and not self._cluster:
            return _Registration(self, ns, cap)
        return BufferedRegistration(self, ns, cap)

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int], *, live_after: float | None = None
    ) -> tuple[int | None, tuple[int, ...]]:
        await self._ready()
        sharded = await self._sharded(ns)
        if sharded is None:
            return await self._lookup(ns, content, buckets, live_after)
        first, _ = await self._lookup(ns, content, [], live_after)
        return first, await sharded.found(buckets)

    async def _lookup(
        self, ns: str, content: bytes, buckets: Sequence[int], live_after: float | None
    ) -> tuple[int | None, tuple[int, ...]]:
        """:meth:`lookup` in one call on the namespace's (home) slot."""
        ks = self._call_keys(ns, [content], [buckets])
        fields = keys.bucket_fields(buckets)
        reply = await self._call(
            self._fcall(
                ns,
                "FCALL_RO",
                "neardup_probe64k",
                ks,
                self._bits,
                content,
                fields,
                wire.optional(live_after),
            )
        )
        first = int.from_bytes(reply[0], "big") if reply[0] else None
        return first, tuple(wire.seqs(reply[1]))

    async def check(
        self,
        ns: str,
        doc_id: str,
        content: bytes,
        buckets: Sequence[int],
        *,
        live_after: float | None = None,
    ) -> Checked:
        await self._ready()
        sharded = await self._sharded(ns)
        if sharded is None:
            return await self._check(ns, doc_id, content, buckets, live_after)
        home = await self._check(ns, doc_id, content, [], live_after)
        if home.own is not None:
            return home
        found = await sharded.found(buckets)
        records, verdicts = dict(home.records), dict(home.verdicts)
        more = [s for s in found if s not in records]
        if more:  # their records and verdicts in one round trip
            packed = [wire.pack_seq(s) for s in more]
            pipe = self._r.pipeline(transaction=False)
            for key in (keys.docs(ns), keys.verdicts(ns)):
                pipe.execute_command("HMGET", key, *packed, **self._route(ns))
            recs, vers = await self._call(pipe.execute())
            records |= {s: v for s, v in zip(more, recs, strict=True) if v is not None}
            verdicts |= {s: v for s, v in zip(more, vers, strict=True) if v is not None}
        return Checked(None, home.exact_seq, found, records, verdicts)

    async def _check(
        self,
        ns: str,
        doc_id: str,
        content: bytes,
        buckets: Sequence[int],
        live_after: float | None,
    ) -> Checked:
        """:meth:`check` in one call on the namespace's (home) slot."""
        ks = self._call_keys(ns, [content], [buckets])
        fields = keys.bucket_fields(buckets)
        own, first, found, read, recs, vers = await self._call(
            self._fcall(
                ns,
                "FCALL_RO",
                "neardup_check64k",
                ks,
                self._bits,
                content,
                fields,
                wire.optional(live_after),
                doc_id,
            )
        )
        seqs = np.frombuffer(read, dtype=">u8").tolist() if read else []
        return Checked(
            int.from_bytes(own, "big") if own else None,
            int.from_bytes(first, "big") if first else None,
            tuple(wire.seqs(found)),
            {s: v for s, v in zip(seqs, recs, strict=True) if v is not None},
            {s: v for s, v in zip(seqs, vers, strict=True) if v is not None},
        )

    async def records(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        if not seqs:
            return {}
        vals = await self._call(self._r.hmget(keys.docs(ns), [wire.pack_seq(s) for s in seqs]))
        return {s: v for s, v in zip(seqs, vals, strict=True) if v is not None}

    async def verdicts(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        if not seqs:
            return {}
        vals = await self._call(self._r.hmget(keys.verdicts(ns), [wire.pack_seq(s) for s in seqs]))
        return {s: v for s, v in zip(seqs, vals, strict=True) if v is not None}

    async def put_verdicts(
        self,
        ns: str,
        items: Mapping[int, StoredVerdict],
        lines: Sequence[bytes] = (),
        cap: int = 0,
    ) -> None:
        if not items and lines:
            await self.add_lines(ns, lines, cap)
        if items:
            await self._ready()
            packed = b"".join(
                b"".join(
                    (
                        wire.pack_seq(s),
                        wire.ID_LEN.pack(len(ident)),
                        ident,
                        wire.LEN.pack(len(v)),
                        v,
                    )
                )
                for s, (doc_id, v) in items.items()
                for ident in (doc_id.encode(),)
            )
            ks = [keys.ids(ns), keys.verdicts(ns)]
            counted: list[Any] = []
            if lines:
                ks += [keys.meta(ns), *keys.lines(ns)]
                counted = [cap, b"".join(lines)]
            call = ["FCALL", "neardup_put_verdicts64", len(ks), *ks, packed, *counted]
            if not self.wait_replicas:
                await self._call(self._r.execute_command(*call, **self._route(ns)))
                return
            # the batch's last write: a WAIT after it, on its connection, covers the cluster
            # members written before it too (replication keeps order)
            pipe = self._r.pipeline(transaction=False)
            route = self._route(ns)
            pipe.execute_command(*call, **route)
            pipe.execute_command("WAIT", self.wait_replicas, self.wait_timeout_ms, **route)
            self.round_trips += 1
            with self._errors(ns):
                replies = await pipe.execute()
            self._check_acknowledged(ns, replies[-1])

    async def seq_of(self, ns: str, doc_id: str) -> int | None:
        v = await self._call(self._r.hget(keys.ids(ns), doc_id))
        return int.from_bytes(v, "big") if v else None

    async def _remove_many(self, ns: str, seqs: Sequence[int]) -> int:
        """Remove articles everywhere: two round trips for any number of them.

        The records are read first (they say which buckets to clean), then one pipelined
        ``neardup_remove64k`` per chunk of articles; each call is atomic, and an article
        already gone (a concurrent delete or expiry) is skipped.
        """
        if not seqs:
            return 0
        raws = list((await self.records(ns, seqs)).items())
        if not raws:
            return 0
        await self._forget_members(ns, [seq for seq, _ in raws])
        sharded = await self._sharded(ns)
        if sharded is not None:
            return await sharded.remove(raws)
        pipe = self._r.pipeline(transaction=False)
        route = self._route(ns)
        for lo in range(0, len(raws), self._chunk):
            args: list[Any] = [self._bits]
            recs = [Record.decode(raw) for _, raw in raws[lo : lo + self._chunk]]
            for (seq, _), rec in zip(raws[lo : lo + self._chunk], recs, strict=True):
                args += (
                    wire.pack_seq(seq),
                    rec.doc_id,
                    rec.content,
                    keys.bucket_fields(rec.buckets),
                )
            ks = self._call_keys(ns, [r.content for r in recs], [r.buckets for r in recs])
            pipe.execute_command("FCALL", "neardup_remove64k", len(ks), *ks, *args, **route)
        return sum(int(x) for x in await self._call(pipe.execute()))

    async def delete(self, ns: str, doc_id: str) -> bool:
        """Remember the id as deleted (``neardup_forget64``, which also returns its seq: from then
        on no registration of it succeeds), then remove the article if it was indexed."""
        await self._ready()
        ks = self._ns_keys(ns)
        packed = await self._call(self._fcall(ns, "FCALL", "neardup_forget64", ks, doc_id))
        if not packed:
            return False
        return await self._remove_many(ns, [int.from_bytes(packed, "big")]) == 1

    async def expire(self, ns: str, before: float, limit: int = 1000) -> int:
        await self._ready()
        old = await self._call(
            self._r.zrangebyscore(keys.times(ns), "-inf", f"({before!r}", start=0, num=limit)
        )
        return await self._remove_many(ns, [int.from_bytes(p, "big") for p in old])

    async def _forget_members(self, ns: str, seqs: Sequence[int]) -> None:
        """Take removed copies out of their clusters' member lists."""
        packed = [wire.pack_seq(s) for s in seqs]
        clusters = await self._call(self._r.hmget(keys.cluster_of(ns), packed))
        gone = [(p, c.decode()) for p, c in zip(packed, clusters, strict=True) if c is not None]
        if gone:
            pipe = self._r.pipeline(transaction=False)
            for p, c in gone:
                pipe.zrem(keys.cluster(ns, c), p)
            pipe.hdel(keys.cluster_of(ns), *(p for p, _ in gone))
            await self._call(pipe.execute())

    async def add_members(self, ns: str, items: Sequence[tuple[str, int, float]]) -> None:
        if not items:
            return
        pipe = self._r.pipeline(transaction=False)
        for cluster, seq, at in items:
            pipe.zadd(keys.cluster(ns, cluster), {wire.pack_seq(seq): at})
        pipe.hset(keys.cluster_of(ns), mapping={wire.pack_seq(s): c for c, s, _ in items})
        await self._call(pipe.execute())

    async def line_counts(self, ns: str, lines: Sequence[bytes]) -> list[int]:
        if not lines:
            return []
        await self._ready()
        ks = [keys.meta(ns), *keys.lines(ns)]
        packed = b"".join(lines)
        got = await self._call(self._fcall(ns, "FCALL_RO", "neardup_line_counts16", ks, packed))
        return [int(x) for x in got]

    async def add_lines(self, ns: str, lines: Sequence[bytes], cap: int) -> None:
        if not lines:
            return
        await self._ready()
        ks = [keys.meta(ns), *keys.lines(ns)]
        packed = b"".join(lines)
        await self._call(self._fcall(ns, "FCALL", "neardup_add_lines16", ks, cap, packed))


class _Registration:
    """:meth:`RedisIndex.registration` on a plain client: streamed on one connection for a
    single-slot namespace, buffered and registered at the end for a sharded one (its steps each
    wait for the one before)."""

    def __init__(self, index: RedisIndex, ns: str, cap: int) -> None:
        self._index, self._ns, self._cap = index, ns, cap
        self._inner: StreamedRegistration | BufferedRegistration | None = None

    async def __aenter__(self) -> RegistrationStream:
        index = self._index
        await index._ready()
        if await index._sharded(self._ns) is None:
            self._inner = StreamedRegistration(index, self._ns, self._cap)
        else:
            self._inner = BufferedRegistration(index, self._ns, self._cap)
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        if self._inner is not None:
            await self._inner.__aexit__(*exc)


__all__ = ["MAX_CHUNK", "RedisIndex"]
