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

Errors: connection errors, and the answers of a server that is there but cannot serve now (OOM,
READONLY after a failover, LOADING, BUSY, TRYAGAIN, MOVED/ASK, CLUSTERDOWN, MASTERDOWN,
NOREPLICAS), are :class:`~neardup.stream.errors.IndexUnavailableError` (retriable); any other error
reply (a wrong argument: a bug) is raised as it is.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from importlib import resources
from typing import Any

import numpy as np
import orjson
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    ClusterDownError,
    ClusterError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from neardup.stream.errors import IndexCredentialsError, IndexUnavailableError, SeqExhaustedError
from neardup.stream.index.base import (
    COPIES_CAP,
    NO_WINDOW,
    BufferedRegistration,
    Checked,
    NamespaceStats,
    Probe,
    Registration,
    RegistrationStream,
    StoredVerdict,
    Window,
    scheme_mismatch,
)
from neardup.stream.index.redis import keys
from neardup.stream.records import Record

# namespaces whose scheme a client remembers having ensured (oldest dropped first); more than
# the engine keeps (neardup.stream.engine.engine._TARGETS_KEPT), so a namespace the engine knows is
# known here
SCHEMES_KEPT = 4096
MAX_CHUNK = 1024  # articles per call: Lua's unpack() of a chunk's writes stays far below its limit
_LUA = (
    resources.files("neardup.stream.index.redis")
    .joinpath("neardup.lua")
    .read_text(encoding="utf-8")
)


# Error replies of a server that is there but cannot serve now. In a pipeline redis-py puts
# "Command # n (...) of pipeline caused error: " and the reply's repr before the code.
_AT = r"(?:^|caused error: \(?['\"]?)"
_TRANSIENT = re.compile(
    _AT + r"(OOM|READONLY|LOADING|BUSY|TRYAGAIN|MOVED|ASK|CLUSTERDOWN|MASTERDOWN|NOREPLICAS)\b"
)
_SCHEME = re.compile(_AT + r"NEARDUP_SCHEME (.*\|shard_bits=\d+|.*)", re.DOTALL)
_EXHAUSTED = re.compile(_AT + r"NEARDUP_SEQ_EXHAUSTED\b")
# ... and the codes redis-py turns into classes of their own, dropping the code from the message
# (AskError covers MOVED, ClusterDownError MASTERDOWN; LOADING is a ConnectionError subclass).
_TRANSIENT_CLASSES: dict[type[ResponseError], str] = {
    OutOfMemoryError: "OOM",
    ReadOnlyError: "READONLY",
    TryAgainError: "TRYAGAIN",
    AskError: "MOVED/ASK",
    ClusterDownError: "CLUSTERDOWN",
}


def _cluster_unavailable(exc: BaseException) -> bool:
    """Cluster client errors that say "not now": no node serves the slot, retries ran out, or no
    node of the cluster answers. (Its other errors, e.g. keys of several slots, are bugs.)"""
    if isinstance(exc, (SlotNotCoveredError, ClusterError)):
        return True
    return isinstance(exc, RedisClusterException) and "cannot be connected" in str(exc)


# WAIT sent to a node that is a replica now: a failed primary restarted and rejoined as the
# replica of the one promoted, while this client's slot table still names it (the calls before
# the WAIT were redirected; the next attempt routes by the table they refreshed).
_WAIT_ON_REPLICA = re.compile(r"WAIT cannot be used with replica")


def _transient(exc: ResponseError) -> str | None:
    """The error code of a reply that says "not now" rather than "wrong", if it is one."""
    for cls, code in _TRANSIENT_CLASSES.items():
        if isinstance(exc, cls):
            return code
    if _WAIT_ON_REPLICA.search(str(exc)):
        return "WAIT on a replica"
    found = _TRANSIENT.search(str(exc))
    return found.group(1) if found else None


def _pack(seq: int) -> bytes:
    return seq.to_bytes(8, "big")


def packed_command(args: Sequence[str | bytes | int]) -> bytes:
    """One command in the Redis protocol (RESP), the bytes redis-py's ``pack_command`` makes
    (``tests/unit/test_redis_packed_command.py``). A registration declares every shard key it
    touches, thousands per call; redis-py grows its buffer one argument at a time, which was a
    quarter of ``dedup --store redis://``'s client time."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        raw = a if isinstance(a, bytes) else a.encode() if isinstance(a, str) else b"%d" % a
        out.append(b"$%d\r\n%b\r\n" % (len(raw), raw))
    return b"".join(out)


def _optional(value: float | None) -> str:
    return "" if value is None else repr(float(value))


_HEAD = struct.Struct(">HBIH")  # id, registered_at, record lengths; bucket count (neardup.lua)
_ID_LEN = struct.Struct(">H")
_LEN = struct.Struct(">I")


def _packed_article(reg: Registration) -> bytes:
    """One article of a ``neardup_register64k`` call, as its ``unpack_articles`` reads it:
    articles travel packed, one argument per call, because redis-py's cost is per argument."""
    ident, at = reg.doc_id.encode(), repr(reg.at).encode()
    if len(reg.content) != 16:
        raise ValueError("content hashes are 16 bytes")
    head = _HEAD.pack(len(ident), len(at), len(reg.record), len(reg.buckets))
    return b"".join((head, ident, reg.content, at, reg.record, keys.bucket_fields(reg.buckets)))


def _seqs(packed: bytes) -> list[int]:
    """Distinct seqs of a run of packed seqs, ascending."""
    return sorted(set(np.frombuffer(packed, dtype=">u8").tolist())) if packed else []


class RedisIndex:
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
            "another version: load stream/index/neardup.lua as an admin (FUNCTION LOAD REPLACE)"
        )

    async def _call(self, awaitable: Any) -> Any:
        self.round_trips += 1
        with self._errors():
            return await awaitable

    @contextmanager
    def _errors(self, ns: str = "") -> Iterator[None]:
        """redis-py's errors as the index's: unavailable (retriable), the namespace's scheme or
        counter refused, or raised as they are (a wrong argument is a bug, not bad weather)."""
        try:
            yield
        except (AuthenticationError, AuthenticationWrongNumberOfArgsError) as exc:
            # a command says so at once; a worker waits (the password may be rotated back)
            raise IndexCredentialsError(
                f"Redis refused the credentials ({exc}): check NEARDUP_REDIS_PASSWORD and the "
                "user in NEARDUP_REDIS_URL"
            ) from exc
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise IndexUnavailableError(f"Redis unavailable: {exc}") from exc
        except (RedisClusterException, ClusterError) as exc:
            if _cluster_unavailable(exc):
                raise IndexUnavailableError(f"Redis Cluster unavailable: {exc}") from exc
            raise
        except ResponseError as exc:
            text = str(exc)
            if "function not found" in text.lower():
                # A restarted server without persistence lost the library: reload, then retry.
                self._loaded = False
                raise IndexUnavailableError(f"Redis lost the neardup functions: {exc}") from exc
            if code := _transient(exc):
                raise IndexUnavailableError(f"Redis cannot serve now ({code}): {exc}") from exc
            if scheme := _SCHEME.search(text):
                stored = scheme.group(1).encode()
                raise scheme_mismatch(ns, stored, self._schemes.get(ns, b"")) from exc
            if _EXHAUSTED.search(text):
                raise SeqExhaustedError(f"namespace {ns!r}: {exc}") from exc
            raise

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
        return True

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
        await self._call(self._r.sadd(keys.REGISTRY, ns))  # GET /namespaces lists it

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
        """The ``neardup_register64k`` calls of some articles, ``chunk_size`` articles each. The
        scheme is the one ensured for ``ns`` ('' before that: not checked)."""
        scheme = self._schemes.get(ns, b"")
        tail = [scheme, _optional(window.live_after), _optional(window.forget_before)]
        if self.wait_replicas:
            tail.append("1")  # touch: the WAIT after these calls then covers earlier writes too
        calls = []
        for lo in range(0, len(regs), self._chunk):
            part = regs[lo : lo + self._chunk]
            packed = b"".join(map(_packed_article, part))
            ks = self._call_keys(ns, [r.content for r in part], [r.buckets for r in part])
            head = ["FCALL", "neardup_register64k", len(ks), *ks]
            calls.append([*head, self._bits, cap, COPIES_CAP, len(part), packed, *tail])
        return calls

    async def register(
        self, ns: str, regs: Sequence[Registration], cap: int, *, window: Window = NO_WINDOW
    ) -> list[Probe]:
        await self._ready()
        if not regs:
            return []
        pipe = self._r.pipeline(transaction=False)
        # On a cluster every call (and the WAIT) goes to the namespace's primary, on one
        # connection (the cluster pipeline sends each node's commands on one, in order).
        route = self._route(ns)
        node = route.get("target_nodes")
        for call in self._register_calls(ns, regs, cap, window):
            pipe.execute_command(*call, **route)
        if self.wait_replicas:
            pipe.execute_command("WAIT", self.wait_replicas, self.wait_timeout_ms, **route)
        probes: list[Probe] = []
        self.round_trips += 1
        with self._errors(ns):
            replies = await pipe.execute()
        if self.wait_replicas:
            self._check_acknowledged(ns, replies.pop())
            if node is not None and self._route(ns)["target_nodes"].name != node.name:
                raise IndexUnavailableError(
                    f"namespace {ns!r}: its slot moved during a registration waiting for replicas"
                )
        for reply in replies:
            probes += _probes(reply)
        return probes

    def _route(self, ns: str) -> dict[str, Any]:
        """How a call about ``ns`` is sent: on a cluster, to the primary of its slot as the
        client's slot table has it. Named, because a cluster client routing an FCALL itself asks
        a node first which keys the call has (``COMMAND GETKEYS``, with the whole call as its
        argument): one more round trip, and the payload twice. A stale table costs a MOVED,
        which the client follows (and then learns the new owner)."""
        if not self._cluster:
            return {}
        with self._errors(ns):
            return {"target_nodes": self._r.get_node_from_key(keys.meta(ns))}

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
            return _StreamedRegistration(self, ns, cap)
        return BufferedRegistration(self, ns, cap)

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int], *, live_after: float | None = None
    ) -> tuple[int | None, tuple[int, ...]]:
        await self._ready()
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
                _optional(live_after),
            )
        )
        first = int.from_bytes(reply[0], "big") if reply[0] else None
        return first, tuple(_seqs(reply[1]))

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
                _optional(live_after),
                doc_id,
            )
        )
        seqs = np.frombuffer(read, dtype=">u8").tolist() if read else []
        return Checked(
            int.from_bytes(own, "big") if own else None,
            int.from_bytes(first, "big") if first else None,
            tuple(_seqs(found)),
            {s: v for s, v in zip(seqs, recs, strict=True) if v is not None},
            {s: v for s, v in zip(seqs, vers, strict=True) if v is not None},
        )

    async def records(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        if not seqs:
            return {}
        vals = await self._call(self._r.hmget(keys.docs(ns), [_pack(s) for s in seqs]))
        return {s: v for s, v in zip(seqs, vals, strict=True) if v is not None}

    async def verdicts(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]:
        if not seqs:
            return {}
        vals = await self._call(self._r.hmget(keys.verdicts(ns), [_pack(s) for s in seqs]))
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
                b"".join((_pack(s), _ID_LEN.pack(len(ident)), ident, _LEN.pack(len(v)), v))
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
        pipe = self._r.pipeline(transaction=False)
        route = self._route(ns)
        for lo in range(0, len(raws), self._chunk):
            args: list[Any] = [self._bits]
            recs = [Record.decode(raw) for _, raw in raws[lo : lo + self._chunk]]
            for (seq, _), rec in zip(raws[lo : lo + self._chunk], recs, strict=True):
                args += (_pack(seq), rec.doc_id, rec.content, keys.bucket_fields(rec.buckets))
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

    async def count(self, ns: str) -> int:
        return int(await self._call(self._r.hlen(keys.docs(ns))))

    async def _forget_members(self, ns: str, seqs: Sequence[int]) -> None:
        """Take removed copies out of their clusters' member lists."""
        packed = [_pack(s) for s in seqs]
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
            pipe.zadd(keys.cluster(ns, cluster), {_pack(seq): at})
        pipe.hset(keys.cluster_of(ns), mapping={_pack(s): c for c, s, _ in items})
        await self._call(pipe.execute())

    async def members(
        self, ns: str, cluster: str, offset: int, limit: int
    ) -> tuple[list[tuple[int, float]], int, tuple[float, float] | None]:
        key = keys.cluster(ns, cluster)
        pipe = self._r.pipeline(transaction=False)
        pipe.zcard(key)
        pipe.zrangebyscore(key, "-inf", "+inf", start=offset, num=limit, withscores=True)
        pipe.zrangebyscore(key, "-inf", "+inf", start=0, num=1, withscores=True)
        pipe.zrevrangebyscore(key, "+inf", "-inf", start=0, num=1, withscores=True)
        total, page, first, last = await self._call(pipe.execute())
        span = (float(first[0][1]), float(last[0][1])) if first and last else None
        return [(int.from_bytes(m, "big"), float(t)) for m, t in page], int(total), span

    async def namespaces(self) -> list[str]:
        got = await self._call(self._r.smembers(keys.REGISTRY))
        return sorted(x.decode() for x in got)

    async def stats(self, ns: str, sample: int = 32) -> NamespaceStats:
        """Counts from the namespace's hashes; bytes and hot buckets from ``sample`` shard
        keys of each kind, spread evenly over the ``2**shard_bits`` names, scaled up."""
        main = [keys.meta(ns), keys.ids(ns), keys.docs(ns), keys.verdicts(ns), keys.times(ns)]
        main += [keys.deleted(ns), keys.cluster_of(ns), *keys.lines(ns)]
        n = 1 << self._bits
        picks = sorted({(i * n) // sample for i in range(min(sample, n))})
        shards = [f"{keys.base(ns)}{k}:{i:x}" for k in ("x", "b") for i in picks]
        pipe = self._r.pipeline(transaction=False)
        for k in (keys.docs(ns), keys.cluster_of(ns), keys.verdicts(ns), *keys.lines(ns)):
            pipe.hlen(k)
        pipe.hget(keys.meta(ns), "scheme")
        pipe.hget(keys.meta(ns), "policy")
        for k in (*main, *shards):
            pipe.memory_usage(k, samples=0)
        for k in shards[len(picks) :]:
            pipe.hgetall(k)
        got = await self._call(pipe.execute())
        docs, copies, verdicts, la, lb, scheme, policy = got[:7]
        sizes = [int(x or 0) for x in got[7 : 7 + len(main) + len(shards)]]
        main_bytes, shard_bytes = sum(sizes[: len(main)]), sizes[len(main) :]
        cap = int(orjson.loads(policy).get("bucket_cap", 0)) if policy else 0  # as recorded
        hot = sum(
            1
            for h in got[7 + len(main) + len(shards) :]
            for v in h.values()
            if cap and len(v) >= 8 * cap
        )
        scale = n / len(picks)
        return NamespaceStats(
            namespace=ns,
            documents=int(docs),
            copies=int(copies),
            verdicts=int(verdicts),
            line_keys=int(la) + int(lb),
            bytes=main_bytes + round(sum(shard_bytes) * scale),
            hot_buckets=round(hot * scale),
            scheme=scheme.decode() if scheme else None,
            policy=policy.decode() if policy else None,
            sampled=len(shards),
            shards=2 * n,
        )

    async def stored_scheme(self, ns: str) -> bytes | None:
        got = await self._call(self._r.hget(keys.meta(ns), "scheme"))
        return bytes(got) if got is not None else None

    async def policy_record(self, ns: str) -> bytes | None:
        got = await self._call(self._r.hget(keys.meta(ns), "policy"))
        return bytes(got) if got is not None else None

    async def record_policy(self, ns: str, settings: bytes) -> None:
        await self._call(self._r.hset(keys.meta(ns), "policy", settings))

    async def last_seq(self, ns: str) -> int:
        got = await self._call(self._r.hget(keys.meta(ns), "seq"))
        return int(got) if got is not None else 0

    async def drop(self, ns: str) -> int:
        removed = 0
        batch: list[bytes] = []
        # every key of the namespace carries its hash tag (one slot): found by their prefix
        async for key in self._r.scan_iter(match=keys.meta(ns)[:-1] + "*", count=1000):
            batch.append(key)
            if len(batch) == 500:
                removed += int(await self._call(self._r.unlink(*batch)))
                batch = []
        if batch:
            removed += int(await self._call(self._r.unlink(*batch)))
        await self._call(self._r.srem(keys.REGISTRY, ns))
        self._schemes.pop(ns, None)
        return removed

    async def read_deleted(self, ns: str) -> dict[str, float]:
        out: dict[str, float] = {}
        key, page = keys.deleted(ns), 10_000
        while True:  # in pages: the memory may hold many ids
            got = await self._call(
                self._r.zrangebyscore(
                    key, "-inf", "+inf", start=len(out), num=page, withscores=True
                )
            )
            out.update((bytes(m).decode("utf-8", "surrogatepass"), float(t)) for m, t in got)
            if len(got) < page:
                return out

    async def remember_deleted(self, ns: str, deleted: Mapping[str, float]) -> None:
        items = list(deleted.items())
        for lo in range(0, len(items), 10_000):
            chunk = {i.encode("utf-8", "surrogatepass"): t for i, t in items[lo : lo + 10_000]}
            await self._call(self._r.zadd(keys.deleted(ns), chunk, gt=True))

    async def alias(self, ns: str) -> bytes | None:
        got = await self._call(self._r.hget(keys.ALIASES, ns))
        return bytes(got) if got is not None else None

    async def set_alias(self, ns: str, value: bytes) -> None:
        await self._call(self._r.hset(keys.ALIASES, ns, value))

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


class _StreamedRegistration:
    """One connection of the pool, held for a batch: :meth:`send` writes a chunk's calls and
    returns without waiting, :meth:`probes` reads every reply in order. A connection left with
    unread replies (an error on the way) is closed, never handed back to the pool."""

    def __init__(self, index: RedisIndex, ns: str, cap: int) -> None:
        self._index, self._ns, self._cap = index, ns, cap
        self._conn: Any = None
        self._unread = 0

    async def __aenter__(self) -> _StreamedRegistration:
        await self._index._ready()
        with self._index._errors():
            pool: Any = self._index._r.connection_pool  # its get_connection is untyped
            self._conn = await pool.get_connection()
        return self

    async def __aexit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if self._unread:
            await conn.disconnect()
        await self._index._r.connection_pool.release(conn)

    async def send(self, regs: Sequence[Registration], window: Window = NO_WINDOW) -> None:
        calls = self._index._register_calls(self._ns, regs, self._cap, window)
        with self._index._errors():
            await self._conn.send_packed_command(b"".join(map(packed_command, calls)))
        self._unread += len(calls)

    async def probes(self) -> list[Probe]:
        index = self._index
        index.round_trips += 1
        probes: list[Probe] = []
        with index._errors(self._ns):
            calls = self._unread
            if index.wait_replicas and calls:
                await self._conn.send_command("WAIT", index.wait_replicas, index.wait_timeout_ms)
                self._unread += 1
            for _ in range(calls):
                reply = await self._conn.read_response()
                self._unread -= 1
                probes += _probes(reply)
            if self._unread:
                acked = await self._conn.read_response()
                self._unread -= 1
                index._check_acknowledged(self._ns, acked)
        return probes


def _probes(reply: list[Any]) -> list[Probe]:
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
        found = _seqs(b)
        if found and seq in found:  # an article listing one bucket twice reads itself
            found.remove(seq)
        out.append(Probe(seq, "new", int.from_bytes(a, "big") if a else None, tuple(found), hot))
    return out


__all__ = ["MAX_CHUNK", "RedisIndex", "packed_command"]
