"""The peer system the engine benchmark measures neardup against: datasketch ``MinHashLSH``,
fed the way its documentation shows, on the same corpus and in the same order.

Tokenising is :func:`harness.corpus.peer_shingles`; signatures come from ``MinHash.bulk`` per
batch (its fastest path). Each runner returns its :class:`~harness.report.Timing` and the pairs
it reports: raw LSH candidates (datasketch keeps no sets to verify against), or with
``verify=True`` only candidates whose exact Jaccard of shingle sets kept in the process passes.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

from bench.pairs import Pairs
from bench.readings import Stopwatch, Timing
from harness.corpus import Doc, peer_shingles

__all__ = ["datasketch_key_class", "lsh_bands_rows", "run_memory", "run_redis"]

DS_BASENAME = b"dsbench"


def lsh_bands_rows(threshold: float, num_perm: int) -> list[int]:
    """The (bands, rows) datasketch chooses for ``threshold`` and ``num_perm``."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return [int(lsh.b), int(lsh.r)]


def _jaccard(a: set[bytes], b: set[bytes]) -> float:
    inter = len(a & b)
    union = len(a) + len(b) - inter
    return inter / union if union else 0.0


def run_memory(
    docs: Sequence[Doc], *, verify: bool, threshold: float, num_perm: int, batch: int
) -> tuple[Timing, Pairs]:
    """Per document, in order: MinHash (bulk per batch), ``query``, ``insert``; optionally verify
    each candidate by exact Jaccard of shingle sets kept in the process."""
    from datasketch import MinHash, MinHashLSH

    index_of = {d["id"]: j for j, d in enumerate(docs)}
    clock = Stopwatch()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    sets: dict[str, set[bytes]] = {}
    found: Pairs = {}
    for lo in range(0, len(docs), batch):
        chunk = docs[lo : lo + batch]
        shingles = [peer_shingles(d["text"]) for d in chunk]
        sigs = MinHash.bulk(shingles, num_perm=num_perm)
        for j, (d, sh, m) in enumerate(zip(chunk, shingles, sigs, strict=True), start=lo):
            cands = lsh.query(m)
            if verify:
                cands = [c for c in cands if _jaccard(sh, sets[c]) >= threshold]
                sets[d["id"]] = sh
            if cands:
                found[j] = {index_of[c] for c in cands}
            lsh.insert(d["id"], m)
    return clock.stop(), found


def _redis_lsh(port: int, threshold: float, num_perm: int) -> Any:
    from datasketch import MinHashLSH

    return MinHashLSH(
        threshold=threshold,
        num_perm=num_perm,
        storage_config={
            "type": "redis",
            "basename": DS_BASENAME,
            "redis": {"host": "127.0.0.1", "port": port},
        },
    )


def run_redis(
    docs: Sequence[Doc],
    port: int,
    *,
    session: bool,
    threshold: float,
    num_perm: int,
    batch: int,
) -> tuple[Timing, Pairs]:
    """datasketch on Redis. ``session``: per batch, one ``insertion_session`` then a ``query`` per
    document (candidates inserted after it are dropped); else query-then-``insert`` per document."""
    from datasketch import MinHash

    index_of = {d["id"]: j for j, d in enumerate(docs)}
    gc.collect()
    clock = Stopwatch()
    lsh = _redis_lsh(port, threshold, num_perm)
    found: Pairs = {}
    for lo in range(0, len(docs), batch):
        chunk = docs[lo : lo + batch]
        sigs = MinHash.bulk([peer_shingles(d["text"]) for d in chunk], num_perm=num_perm)
        if session:
            with lsh.insertion_session() as sess:
                for d, m in zip(chunk, sigs, strict=True):
                    sess.insert(d["id"], m, check_duplication=False)
        for j, (d, m) in enumerate(zip(chunk, sigs, strict=True), start=lo):
            earlier = {index_of[c] for c in lsh.query(m)}
            earlier = {i for i in earlier if i < j}
            if earlier:
                found[j] = earlier
            if not session:
                lsh.insert(d["id"], m)
    return clock.stop(), found


def datasketch_key_class(key: bytes) -> str:
    """datasketch's Redis layout: per band a hash (band key -> set name) and one set per band key;
    a keys hash (pickled key -> list name) and one list of band keys per indexed key."""
    table = len(DS_BASENAME) + len(b"_bucket_") + 2
    if key.startswith(DS_BASENAME + b"_bucket_"):
        return "band hashes" if len(key) == table else "bucket sets"
    return "keys hash" if key == DS_BASENAME + b"_keys" else "per-key band-key lists"
