"""Redis index: one FUNCTION call per article registers and probes atomically.

The client is injected (``redis.asyncio.Redis``, or a cluster client): this module never builds
one. Batches are pipelined (``transaction=False``): N articles cost one round trip for
registration and one for the candidates' records, while each FCALL stays atomic on its own, which
is all the ordering rule needs.

Storage per article: a record in ``nd:{ns}:d`` (:mod:`stream.records`), 4 bytes of seq in each of
its buckets, an entry in the id and time indexes, and its verdict. Buckets live as fields of
*sharded* hashes (``nd:{ns}:b:<top bits of the bucket id>``): small hashes use Redis's compact
listpack encoding, about 20 bytes a bucket entry instead of ~90 for a key per bucket. The shard
count is ``2**shard_bits`` per namespace (default 16); keep it so shards hold up to a few hundred
fields (``hash-max-listpack-entries``, 128 by default, 512 recommended for large namespaces).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from stream import keys
from stream.index.base import (
    COPIES_CAP,
    IndexUnavailableError,
    Probe,
    Registration,
    SchemeMismatchError,
)
from stream.records import Record

_LUA = resources.files("stream.index").joinpath("neardup.lua").read_text(encoding="utf-8")


def _pack(seq: int) -> bytes:
    return seq.to_bytes(4, "big")


def _unpack_many(values: Sequence[bytes]) -> set[int]:
    joined = b"".join(values)
    return set(np.frombuffer(joined, dtype=">u4").tolist()) if joined else set()


class RedisIndex:
    """Index on Redis 7+ (FUNCTION) or Valkey; all keys of a namespace in one cluster slot."""

    def __init__(self, client: aioredis.Redis, *, shard_bits: int = 16) -> None:
        if not 1 <= shard_bits <= 24:
            raise ValueError("shard_bits must be in [1, 24]")
        self._r = client
        self._bits = shard_bits
        self._loaded = False
        self.round_trips = 0  # calls that waited for Redis (metrics)

    async def load_functions(self) -> None:
        """Load (or replace) the Lua library; idempotent, called once at start.

        An ACL user without ``FUNCTION LOAD`` (the operator loads the library: see SECURITY.md)
        gets NOPERM; then the library must already be loaded, and be exactly this version
        (checked with ``FUNCTION LIST``). Until it is, the index is unavailable (retriable).
        """
        try:
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
        try:
            return await awaitable
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise IndexUnavailableError(f"Redis unavailable: {exc}") from exc
        except ResponseError as exc:
            if "function not found" in str(exc).lower():
                # A restarted server without persistence lost the library: reload, then retry.
                self._loaded = False
                raise IndexUnavailableError(f"Redis lost the neardup functions: {exc}") from exc
            raise

    async def _ready(self) -> None:
        if not self._loaded:
            await self.load_functions()

    async def ensure_scheme(self, ns: str, scheme: bytes) -> None:
        await self._ready()
        mine = scheme + b"|shard_bits=" + str(self._bits).encode()
        stored = await self._call(self._r.fcall("neardup_scheme", 1, keys.meta(ns), mine))
        if stored != mine:
            raise SchemeMismatchError(
                f"namespace {ns!r} was indexed with a different sketch scheme: stored "
                f"{stored!r}, this process uses {mine!r}; use another namespace or re-index"
            )

    def _article_keys(
        self, ns: str, content: bytes, buckets: Sequence[int]
    ) -> tuple[list[str], bytes]:
        """The KEYS of every per-article function (one layout, see neardup.lua) and the
        article's bucket fields packed into one argument."""
        ks = [
            keys.meta(ns),
            keys.ids(ns),
            keys.docs(ns),
            keys.times(ns),
            keys.verdicts(ns),
            keys.exact_shard(ns, content, self._bits),
        ]
        ks += [keys.bucket_shard(ns, b, self._bits) for b in buckets]
        return ks, b"".join(keys.bucket_field(b) for b in buckets)

    async def register(self, ns: str, regs: Sequence[Registration], cap: int) -> list[Probe]:
        await self._ready()
        if not regs:
            return []
        pipe = self._r.pipeline(transaction=False)
        for reg in regs:
            ks, fields = self._article_keys(ns, reg.content, reg.buckets)
            args = [reg.doc_id, reg.content, repr(reg.at), cap, reg.record, fields, COPIES_CAP]
            pipe.fcall("neardup_register", len(ks), *ks, *args)
        replies = await self._call(pipe.execute())
        return [self._probe(reply) for reply in replies]

    @staticmethod
    def _probe(reply: list[Any]) -> Probe:
        status = reply[0].decode() if isinstance(reply[0], bytes) else reply[0]
        seq = int(reply[1])
        if status == "replay":
            return Probe(seq, "replay", None, (), record=reply[2] or None, verdict=reply[3] or None)
        first = int.from_bytes(reply[2], "big") if reply[2] else None
        found = _unpack_many([reply[4]])
        found.discard(seq)
        return Probe(seq, "new", first, tuple(sorted(found)), int(reply[3]))

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int]
    ) -> tuple[int | None, tuple[int, ...]]:
        await self._ready()
        ks, fields = self._article_keys(ns, content, buckets)
        reply = await self._call(self._r.fcall_ro("neardup_lookup", len(ks), *ks, content, fields))
        first = int.from_bytes(reply[0], "big") if reply[0] else None
        return first, tuple(sorted(_unpack_many([reply[1]])))

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

    async def put_verdicts(self, ns: str, items: Mapping[int, bytes]) -> None:
        if items:
            await self._ready()
            args = [x for s, v in items.items() for x in (_pack(s), v)]
            await self._call(
                self._r.fcall("neardup_put_verdicts", 2, keys.docs(ns), keys.verdicts(ns), *args)
            )

    async def seq_of(self, ns: str, doc_id: str) -> int | None:
        v = await self._call(self._r.hget(keys.ids(ns), doc_id))
        return int.from_bytes(v, "big") if v else None

    async def _remove_many(self, ns: str, seqs: Sequence[int]) -> int:
        """Remove articles everywhere: two round trips for any number of them.

        The records are read first (they say which buckets to clean), then one pipelined
        ``neardup_remove`` per article; each removal is atomic, and one whose article is already
        gone (a concurrent delete or expiry) does nothing.
        """
        if not seqs:
            return 0
        raws = await self.records(ns, seqs)
        if not raws:
            return 0
        pipe = self._r.pipeline(transaction=False)
        for seq, raw in raws.items():
            rec = Record.decode(raw)
            ks, fields = self._article_keys(ns, rec.content, rec.buckets)
            pipe.fcall("neardup_remove", len(ks), *ks, _pack(seq), rec.doc_id, rec.content, fields)
        return sum(bool(x) for x in await self._call(pipe.execute()))

    async def delete(self, ns: str, doc_id: str) -> bool:
        await self._ready()
        seq = await self.seq_of(ns, doc_id)
        return seq is not None and await self._remove_many(ns, [seq]) == 1

    async def expire(self, ns: str, before: float, limit: int = 1000) -> int:
        await self._ready()
        old = await self._call(
            self._r.zrangebyscore(keys.times(ns), "-inf", f"({before!r}", start=0, num=limit)
        )
        return await self._remove_many(ns, [int.from_bytes(p, "big") for p in old])

    async def count(self, ns: str) -> int:
        return int(await self._call(self._r.hlen(keys.docs(ns))))


__all__ = ["RedisIndex"]
