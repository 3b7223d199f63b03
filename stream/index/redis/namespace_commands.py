"""The Redis index's reads and writes of a namespace as a whole (its counts, stats, scheme and
policy records, aliases, remembered deletions, cluster members, and dropping it), apart from
the registration path in :mod:`~neardup.stream.index.redis.index`, as redis-py groups its
commands in classes that its clients inherit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from neardup.stream.index.base import (
    SHARDED_FORMAT,
    NamespaceStats,
    scheme_shards,
    sharded_format,
    sharded_format_mismatch,
)
from neardup.stream.index.redis import keys

# namespaces whose scheme a client remembers having ensured (oldest dropped first); more than
# the engine keeps (neardup.stream.engine.engine._TARGETS_KEPT), so a namespace the engine knows is
# known here
SCHEMES_KEPT = 4096


class NamespaceCommands:
    """What :class:`~neardup.stream.index.redis.index.RedisIndex` answers of a namespace as a
    whole; it supplies the client, the shard bits, the schemes it checked and ``_call``."""

    _r: Any
    _bits: int
    _schemes: dict[str, bytes]
    _shards: dict[str, int]
    _id_keys: dict[str, bytes]
    _old_sharded: dict[str, int]  # ns -> its sharded format, when not this code's

    async def _call(self, awaitable: Any) -> Any:
        raise NotImplementedError  # RedisIndex's: counts the round trip, maps the errors

    async def _groups(self, ns: str) -> int:
        """How many shard groups ``ns`` has (1: single-slot), as its stored scheme says:
        remembered once a scheme is recorded (it never changes while the namespace has keys; a
        dropped namespace is forgotten). A namespace without a scheme is single-slot."""
        if ns not in self._shards:
            stored = await self.stored_scheme(ns)
            if stored is None:
                return 1
            self._keep_shards(ns, stored)
        return self._shards[ns]

    def _check_sharded_format(self, ns: str) -> None:
        """Refuse (SchemeMismatchError) a sharded namespace of another sharded format before a
        call reads or writes its id hashes; what needs none (stats, listing, drop, export's
        reads) still serves it, so it can be rebuilt and dropped."""
        if ns in self._old_sharded:
            raise sharded_format_mismatch(ns, self._old_sharded[ns])

    def _keep_shards(self, ns: str, scheme: bytes) -> None:
        """Remember the shard groups ``scheme`` names for ``ns``, ``SCHEMES_KEPT`` namespaces at
        most (the oldest forgotten first), and whether it is sharded in another sharded format
        than this code's (:meth:`_check_sharded_format`)."""
        fmt = sharded_format(scheme)
        if fmt is not None and fmt != SHARDED_FORMAT:
            self._old_sharded[ns] = fmt
        else:
            self._old_sharded.pop(ns, None)
        if ns not in self._shards and len(self._shards) >= SCHEMES_KEPT:
            self._shards.pop(next(iter(self._shards)))
        self._shards[ns] = scheme_shards(scheme)

    async def count(self, ns: str) -> int:
        return int(await self._call(self._r.hlen(keys.docs(ns))))

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
        main += [keys.deleted(ns), keys.cluster_of(ns), *keys.lines(ns), keys.hashes(ns)]
        n, groups = 1 << self._bits, await self._groups(ns)
        picks = sorted({(i * n) // sample for i in range(min(sample, n))})
        shards = [f"{keys.base(ns)}x:{i:x}" for i in picks]
        shards += [keys.bucket_shard_key(ns, i, groups) for i in picks]
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
            groups=groups,
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
        # every key of the namespace carries its hash tag (one slot, and one more a shard
        # group): found by their prefixes
        groups = await self._groups(ns)
        bases = [keys.base(ns)]
        if groups > 1:
            bases += [keys.group_base(ns, g) for g in range(groups)]
        for base in bases:
            async for key in self._r.scan_iter(match=base + "*", count=1000):
                batch.append(key)
                if len(batch) == 500:
                    removed += int(await self._call(self._r.unlink(*batch)))
                    batch = []
            if batch:
                removed += int(await self._call(self._r.unlink(*batch)))
                batch = []
        await self._call(self._r.srem(keys.REGISTRY, ns))
        self._schemes.pop(ns, None)
        self._shards.pop(ns, None)
        self._id_keys.pop(ns, None)
        self._old_sharded.pop(ns, None)
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


__all__ = ["SCHEMES_KEPT", "NamespaceCommands"]
