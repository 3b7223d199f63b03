"""Every Redis key neardup writes, in one place.

All keys of a namespace carry the hash tag ``{ns}`` so a namespace lives in one Redis Cluster slot:
the per-article FUNCTION call touches several keys atomically, which a cluster allows only within
one slot, and different namespaces still spread over shards.

``nd:{ns}:m``            hash: ``seq`` counter, ``scheme`` (sketch parameters and storage format),
                         ``policy`` (the decision settings last applied), ``lines`` (generation)
``nd:{ns}:i``            hash: article id -> seq
``nd:{ns}:d``            hash: seq -> record (see :mod:`neardup.stream.records`)
``nd:{ns}:v``            hash: seq -> verdict (JSON), written only while the seq is its article's
``nd:{ns}:t``            sorted set: seq scored by registration time (retention)
``nd:{ns}:g``            sorted set: deleted article id scored by deletion time (not registered
                         again while remembered: the retention window, else ``deleted_ttl_s``)
``nd:{ns}:l:a``, ``:l:b`` hash: 16-byte line key (source, line fingerprint) -> how many documents
                         of that source had the line (boilerplate learning; two generations,
                         the current one named by the meta field ``lines``, each bounded)
``nd:{ns}:c:<hash>``     sorted set: packed seq of each copy in a cluster (the cluster id is its
                         original's article id; <hash> its 128-bit MurmurHash3, hex), scored by
                         registration time (read API)
``nd:{ns}:cm``           hash: packed seq of a copy -> its cluster id (stats, and removal)
``nd:namespaces``        set: every namespace whose scheme was ensured (no hash tag: one key)
``nd:aliases``           hash: namespace -> what it is an alias of, JSON
(neardup.stream.engine.reindex: the
                         namespace it was rebuilt into and its policy; no hash tag: one key)
``nd:{ns}:x:<shard>``    hash: 16-byte content hash -> packed seqs of its first copies
``nd:{ns}:b:<shard>``    hash: 8-byte bucket id -> packed seqs, earliest first

A seq, wherever it is stored (field, value or member), is 8 bytes big-endian (storage format 3;
format 2 had 4 bytes and wrapped at 2**32); a run of packed seqs is their concatenation.

Sharded namespaces (a policy of ``shards`` = N > 1, :mod:`neardup.stream.index.redis.sharded`)
keep the keys above on their home slot ``{ns}``, with one more, and their buckets on N others:

``nd:{ns}:h``            hash: 8-byte id hash (:func:`id_hash`) -> the article id holding it
                         (claimed before the id's first bucket entry, one id a hash)
``nd:{ns/<g>}:b:<shard>`` hash: 8-byte bucket id -> packed id hashes, earliest added first; shard
                         group ``g`` (decimal) is ``<shard> mod N`` (:func:`group_base`)

and the meta field ``idkey``: the namespace's id-hash key (:data:`ID_KEY_BYTES` random bytes,
set once, when its scheme is first ensured; a rebuild into a new namespace gets a new one).

``/`` is not a namespace character (:mod:`neardup.stream.names`, whose rule and
:func:`check_namespace` this module re-exports), so a group's hash tag is never another
namespace's.

``<shard>`` is the lower-case hex, without leading zeros, of the top ``shard_bits`` bits (1 to 24)
of the content hash's first 4 bytes or of the 64-bit bucket id (:func:`exact_shard`,
:func:`bucket_shard`). Every index function call declares every key it touches: the namespace
keys above (m, i, d, t, v, g), then the distinct ``x:`` and ``b:`` shard keys of its articles
(:func:`shard_keys`). The Lua derives each shard key's name from the base and ``shard_bits``, byte
for byte as these helpers do, and refuses, before any write, a call that did not declare one:
Redis Cluster checks only declared keys before running a function, so an undeclared key could fail
half-way through (a slot migrating). Every key carries the ``{ns}`` hash tag (one cluster slot)
and starts with ``nd:``, so the ACL key pattern ``~nd:*`` covers them: change a name here and the
Lua must change with it.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from collections.abc import Iterable, Sequence
from functools import lru_cache

import mmh3

from neardup.stream.model import ID_MAX_BYTES
from neardup.stream.names import NAMESPACE_RE, check_namespace

PREFIX = "nd"


def base(ns: str) -> str:
    return f"{PREFIX}:{{{ns}}}:"


def meta(ns: str) -> str:
    return base(ns) + "m"


def ids(ns: str) -> str:
    return base(ns) + "i"


def docs(ns: str) -> str:
    return base(ns) + "d"


def verdicts(ns: str) -> str:
    return base(ns) + "v"


def times(ns: str) -> str:
    return base(ns) + "t"


def deleted(ns: str) -> str:
    return base(ns) + "g"


def hashes(ns: str) -> str:
    """A sharded namespace's id hash -> seq map (its bucket entries are id hashes)."""
    return base(ns) + "h"


ID_KEY_BYTES = 16  # a namespace's id-hash key (BLAKE2b takes up to 64)
ID_HASH_BYTES = 8  # a sharded bucket entry
ID_HASH_TRIES = 4  # hashes an id may take: the first one no other id holds (see id_hash)


def new_id_key() -> bytes:
    """A fresh id-hash key for a namespace (from the OS's CSPRNG)."""
    return secrets.token_bytes(ID_KEY_BYTES)


def id_hash(doc_id: str, key: bytes, attempt: int = 0) -> bytes:
    """An article's 8-byte id hash: what a sharded namespace's buckets list (an article adds
    itself before it has a seq), keyed by the namespace's secret ``key``.

    Keyed BLAKE2b (``hashlib``), not SipHash: both are PRFs under a secret key, so nobody who
    does not know the key can make two ids collide (an unkeyed MurmurHash3 could be made to
    collide by anyone, seed or not: two 16-byte blocks suffice); BLAKE2b is in the standard
    library, in C, with a variable digest size and a personalization string (the ``attempt``),
    where SipHash would be one more dependency. Still 64 bits: two ids collide by accident with
    a chance of about 3% at a billion ids, so a hash is *claimed* by one id in ``nd:{ns}:h``
    before any bucket lists it, and an id whose hash another holds takes the next ``attempt``
    (up to :data:`ID_HASH_TRIES`), which lookups and deletes find by trying them all."""
    h = _keyed(key, attempt).copy()
    h.update(doc_id.encode("utf-8", "surrogatepass"))
    return h.digest()


@lru_cache(maxsize=1024)
def _keyed(key: bytes, attempt: int) -> hashlib.blake2b:
    """The BLAKE2b state after the key block, copied for each id (a third less CPU than keying
    each id's hash afresh)."""
    person = b"neardup-id-%d" % attempt
    return hashlib.blake2b(digest_size=ID_HASH_BYTES, key=key, person=person)


def id_hashes(doc_id: str, key: bytes) -> list[bytes]:
    """Every hash ``doc_id`` may hold, in the order it tries them."""
    return [id_hash(doc_id, key, a) for a in range(ID_HASH_TRIES)]


def group_base(ns: str, group: int) -> str:
    """The key base of shard group ``group`` of a sharded namespace: its own hash tag."""
    return f"{PREFIX}:{{{ns}/{group}}}:"


def bucket_shard_key(ns: str, shard: int, shards: int) -> str:
    """The name of bucket shard ``shard`` (its top-bits index) of a namespace of ``shards``
    shard groups (1: the single-slot layout)."""
    head = base(ns) if shards == 1 else group_base(ns, shard % shards)
    return f"{head}b:{shard:x}"


def cluster(ns: str, cluster_id: str) -> str:
    """The members (copies) of one cluster of a namespace, named by a 128-bit hash of the
    cluster's id: an article id may hold braces or colons, a key name never does."""
    return base(ns) + "c:" + mmh3.hash_bytes(cluster_id.encode("utf-8"), 0x636C75).hex()


def cluster_of(ns: str) -> str:
    return base(ns) + "cm"


REGISTRY = PREFIX + ":namespaces"
ALIASES = PREFIX + ":aliases"


def lines(ns: str) -> list[str]:
    """The two generations of a namespace's line counts (see the module docstring)."""
    return [base(ns) + "l:a", base(ns) + "l:b"]


def exact_shard(ns: str, content: bytes, shard_bits: int) -> str:
    return f"{base(ns)}x:{int.from_bytes(content[:4], 'big') >> (32 - shard_bits):x}"


def bucket_shard(ns: str, bucket: int, shard_bits: int) -> str:
    return f"{base(ns)}b:{bucket >> (64 - shard_bits):x}"


def shard_keys(
    ns: str, contents: Iterable[bytes], buckets: Iterable[Sequence[int]], shard_bits: int
) -> list[str]:
    """The distinct exact-content and bucket shard keys of some articles, sorted: the keys a
    call about them must declare besides the namespace's own."""
    b = base(ns)
    xs = {int.from_bytes(c[:4], "big") >> (32 - shard_bits) for c in contents}
    shift = 64 - shard_bits
    bs = {f >> shift for fields in buckets for f in fields}
    return [f"{b}x:{x:x}" for x in sorted(xs)] + [f"{b}b:{s:x}" for s in sorted(bs)]


def bucket_field(bucket: int) -> bytes:
    return bucket.to_bytes(8, "big")


def bucket_fields(buckets: Sequence[int]) -> bytes:
    """An article's bucket fields (:func:`bucket_field` each) packed into one function argument."""
    return struct.pack(f">{len(buckets)}Q", *buckets)


__all__ = [
    "ALIASES",
    "ID_HASH_BYTES",
    "ID_HASH_TRIES",
    "ID_KEY_BYTES",
    "ID_MAX_BYTES",
    "NAMESPACE_RE",
    "PREFIX",
    "REGISTRY",
    "base",
    "bucket_field",
    "bucket_fields",
    "bucket_shard",
    "bucket_shard_key",
    "check_namespace",
    "cluster",
    "cluster_of",
    "deleted",
    "docs",
    "exact_shard",
    "group_base",
    "hashes",
    "id_hash",
    "id_hashes",
    "ids",
    "lines",
    "meta",
    "new_id_key",
    "shard_keys",
    "times",
    "verdicts",
]
