"""End-to-end dedup: neardup (memory, Redis, the CLI) against datasketch MinHashLSH (memory, Redis).

``python -m bench engine [--docs N] [--seed S] [--reps R] [--ds-redis-docs M]
[--ds-naive-docs K] [--profile]``. One run, one seeded corpus (:func:`harness.corpus.generate`:
real English sentences, ~300 words, 30% near-duplicates; 20,000 documents by default, so the
Redis bytes per document are measured past the issue's 20k), every system fed the documents in
the same order. The benchmark starts its own Redis (``scripts/services.py``) in a temporary
directory and stops it at the end, also on error.

Systems, each deciding for every document which *earlier* documents it nearly duplicates:

* neardup ``Engine(MemoryIndex()).process`` in batches of 512 (the ``neardup dedup`` path), the
  same with ``RedisIndex`` on a ``redis.asyncio`` client, and the real command
  ``neardup dedup corpus.jsonl -o out.jsonl --store memory`` as a subprocess (wall clock,
  interpreter start-up included). Reported pairs: ``duplicate_of`` and ``matches`` of every
  verdict, all verified by exact Jaccard (``matches`` is capped at ``max_matches`` = 10).
* datasketch ``MinHashLSH(threshold=0.8, num_perm=128)``, tokenised the idiomatic way (``\\w+`` on
  ``casefold()``, word 3-shingles joined by a space, ``encode()``), signatures by
  ``MinHash.bulk`` per batch of 512 (its fastest path). In memory: per document ``query`` then
  ``insert``. On Redis (``storage_config={'type': 'redis', ...}``): per batch, ``insert`` in one
  ``insertion_session`` (pipelined, ``check_duplication=False``: ids are unique), then ``query``
  each document and keep the candidates inserted before it, which is what per-document
  query-then-insert returns. Reported pairs: the LSH candidates as they come (datasketch keeps
  no sets to verify against); one extra in-memory row keeps the shingle sets in the process and
  verifies every candidate exactly, as neardup does. An informational row times the README usage
  on Redis (query, then ``insert`` per document) on a prefix.

Quality against brute force (:func:`harness.corpus.exact_similarities`): the truth is every pair
(document, earlier document) with exact word-3-shingle Jaccard >= 0.8. Pair recall = share of
truth pairs reported; capped pair recall counts at most 10 truth pairs per document (what a
capped ``matches`` can show); document recall = share of documents with an earlier J >= 0.8
document that are flagged (neardup: verdict not ``original``; datasketch: any candidate); pair
precision = share of reported pairs that are truth pairs.

Redis bytes per document: ``INFO memory`` ``used_memory`` after minus before indexing, FLUSHALL
between systems (neardup's FUNCTION library survives FLUSHALL and is loaded before "before"), and
a per-key-class breakdown from ``MEMORY USAGE key SAMPLES 0``. Redis CPU per document: the
server's ``used_cpu_user + used_cpu_sys`` delta.

Timing: whole passes from text to answer after a small warm-up on a throwaway index; the fast
systems keep the best of ``--reps`` fresh runs, the slow datasketch-on-Redis rows run once.
Wall clock (``time.perf_counter``) gives docs/s; the process's CPU time (``time.process_time``;
the child's rusage for the CLI) gives CPU per document, which other work on a shared machine
disturbs much less than docs/s. Garbage collector on, ``gc.collect()`` before each run.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import orjson
import redis
from rich.console import Console
from rich.table import Table

from bench.report import machine_info, md_table, write_atomic
from harness.corpus import Doc, exact_similarities, generate
from scripts import services
from stream.engine import Article, Engine, NeardupError, Verdict
from stream.index.base import Index
from stream.index.memory import MemoryIndex
from stream.policy import Policy

RESULTS_DIR = Path(__file__).resolve().parent / "results"
THRESHOLD = 0.8
NUM_PERM = 128
BATCH = 512  # stream.cli.BATCH: the `neardup dedup` batch
WARMUP_DOCS = 256
MATCH_CAP = Policy().max_matches
DS_BASENAME = b"dsbench"
_WORD = re.compile(r"\w+")

console = Console()
if not console.is_terminal:  # logs and pipes: keep the tables readable
    console = Console(width=200)

Pairs = dict[int, set[int]]  # document index -> indices of the earlier documents reported
T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    wall_s: float  # time.perf_counter
    cpu_s: float  # this process's user + system CPU (time.process_time), or the child's


class Stopwatch:
    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def stop(self) -> Timing:
        return Timing(time.perf_counter() - self._wall, time.process_time() - self._cpu)


# --------------------------------------------------------------------------- results


@dataclass
class Quality:
    truth_pairs: int
    truth_docs: int
    reported_pairs: int
    true_pairs: int
    flagged_docs: int
    pair_recall: float
    pair_recall_capped: float
    doc_recall: float
    pair_precision: float
    doc_precision: float


@dataclass
class Row:
    key: str
    system: str
    store: str  # "memory" | "redis"
    docs: int
    timing: Timing
    reports: str  # what the reported pairs are
    quality: Quality
    baseline: str | None = None  # key of the datasketch row the ratio is against
    ratio: float | None = None
    bytes_per_doc: float | None = None
    keys_per_doc: float | None = None
    redis_cpu_ms_per_doc: float | None = None
    memory_breakdown: dict[str, float] = field(default_factory=dict)  # key class -> bytes/doc
    note: str = ""
    docs_per_s: float = field(init=False)
    cpu_ms_per_doc: float = field(init=False)  # this process (the CLI: the child), not Redis

    def __post_init__(self) -> None:
        self.docs_per_s = self.docs / self.timing.wall_s
        self.cpu_ms_per_doc = 1000 * self.timing.cpu_s / self.docs


# --------------------------------------------------------------------------- quality


def truth_by_doc(sims: Mapping[tuple[int, int], float]) -> Pairs:
    out: Pairs = {}
    for i, j in sims:
        out.setdefault(j, set()).add(i)
    return out


def score(reported: Pairs, truth: Pairs, n_docs: int, cap: int = MATCH_CAP) -> Quality:
    """Pair and document recall/precision of ``reported`` on the first ``n_docs`` documents."""
    truth = {j: s for j, s in truth.items() if j < n_docs}
    n_truth = sum(len(s) for s in truth.values())
    capped = sum(min(len(s), cap) for s in truth.values())
    n_rep = sum(len(s) for s in reported.values())
    hit = sum(len(s & truth.get(j, set())) for j, s in reported.items())
    flagged = {j for j, s in reported.items() if s}
    flagged_true = len(flagged & truth.keys())
    return Quality(
        truth_pairs=n_truth,
        truth_docs=len(truth),
        reported_pairs=n_rep,
        true_pairs=hit,
        flagged_docs=len(flagged),
        pair_recall=hit / n_truth if n_truth else 1.0,
        pair_recall_capped=min(1.0, hit / capped) if capped else 1.0,
        doc_recall=flagged_true / len(truth) if truth else 1.0,
        pair_precision=hit / n_rep if n_rep else 1.0,
        doc_precision=flagged_true / len(flagged) if flagged else 1.0,
    )


def verdict_pairs(verdicts: Sequence[Verdict], index_of: Mapping[str, int]) -> Pairs:
    out: Pairs = {}
    for j, v in enumerate(verdicts):
        got = {index_of[m.id] for m in v.matches}
        if v.duplicate_of is not None:
            got.add(index_of[v.duplicate_of])
        if got:
            out[j] = got
    return out


# --------------------------------------------------------------------------- Redis helpers


@dataclass
class RedisStats:
    used_memory: int
    dbsize: int
    cpu_s: float


def redis_stats(r: redis.Redis) -> RedisStats:
    mem: dict[str, Any] = r.info("memory")
    cpu: dict[str, Any] = r.info("cpu")
    return RedisStats(
        int(mem["used_memory"]),
        int(r.dbsize()),
        float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
    )


def memory_breakdown(
    r: redis.Redis, classify: Callable[[bytes], str], n_docs: int
) -> dict[str, float]:
    """Bytes per document of each key class (``MEMORY USAGE key SAMPLES 0``, exact)."""
    totals: dict[str, int] = {}
    counts: dict[str, int] = {}
    batch: list[bytes] = []

    def flush() -> None:
        pipe = r.pipeline(transaction=False)
        for k in batch:
            pipe.memory_usage(k, samples=0)
        for k, used in zip(batch, pipe.execute(), strict=True):
            cls = classify(k)
            totals[cls] = totals.get(cls, 0) + int(used or 0)
            counts[cls] = counts.get(cls, 0) + 1
        batch.clear()

    for k in r.scan_iter(count=1000):
        batch.append(k)
        if len(batch) >= 5000:
            flush()
    if batch:
        flush()
    return {
        f"{cls} ({counts[cls]:,} key{'s' if counts[cls] > 1 else ''})": totals[cls] / n_docs
        for cls in sorted(totals, key=lambda c: -totals[c])
    }


def neardup_key_class(key: bytes) -> str:
    """``nd:{ns}:<kind>[:shard]`` -> a readable class (see stream/keys.py)."""
    kind = key.rsplit(b"}:", 1)[-1].split(b":", 1)[0].decode()
    return {
        "m": "meta",
        "i": "ids (id -> seq)",
        "d": "records (shingles, buckets)",
        "v": "verdicts (JSON)",
        "t": "times (retention zset)",
        "x": "exact-hash shards",
        "b": "bucket shards",
    }.get(kind, kind)


def datasketch_key_class(key: bytes) -> str:
    """datasketch's Redis layout: per band a hash (band key -> set name) and one set per band key;
    a keys hash (pickled key -> list name) and one list of band keys per indexed key."""
    table = len(DS_BASENAME) + len(b"_bucket_") + 2
    if key.startswith(DS_BASENAME + b"_bucket_"):
        return "band hashes" if len(key) == table else "bucket sets"
    return "keys hash" if key == DS_BASENAME + b"_keys" else "per-key band-key lists"


# --------------------------------------------------------------------------- neardup


async def run_engine(index: Index, docs: Sequence[Doc]) -> tuple[Timing, list[Verdict]]:
    """``Engine.process`` in batches of 512, as ``neardup dedup`` does; wall time and verdicts."""
    engine = Engine(index)
    verdicts: list[Verdict] = []
    clock = Stopwatch()
    for lo in range(0, len(docs), BATCH):
        arts = [Article(d["id"], d["text"]) for d in docs[lo : lo + BATCH]]
        for res in await engine.process(arts):
            if isinstance(res, NeardupError):
                raise RuntimeError(f"neardup rejected a benchmark document: {res}")
            verdicts.append(res)
    return clock.stop(), verdicts


def best_of(reps: int, fn: Callable[[], tuple[Timing, T]]) -> tuple[Timing, T]:
    """Best wall and CPU time of ``reps`` fresh runs (each builds its own index); the last run's
    output."""
    times: list[Timing] = []
    for _ in range(max(1, reps)):
        gc.collect()
        timing, out = fn()
        times.append(timing)
    return Timing(min(t.wall_s for t in times), min(t.cpu_s for t in times)), out


def run_engine_memory(docs: Sequence[Doc], reps: int) -> tuple[Timing, list[Verdict]]:
    asyncio.run(run_engine(MemoryIndex(), docs[:WARMUP_DOCS]))
    return best_of(reps, lambda: asyncio.run(run_engine(MemoryIndex(), docs)))


@dataclass
class RedisRun:
    timing: Timing  # best of the repetitions
    verdicts: list[Verdict]
    before: RedisStats  # around the last repetition (each starts from FLUSHALL)
    after: RedisStats


def run_engine_redis(url: str, r: redis.Redis, docs: Sequence[Doc], reps: int) -> RedisRun:
    import redis.asyncio as aioredis

    from stream.index.redis import RedisIndex

    async def go() -> RedisRun:
        client = aioredis.Redis.from_url(url)
        try:
            await run_engine(RedisIndex(client), docs[:WARMUP_DOCS])
            times: list[Timing] = []
            for _ in range(max(1, reps)):
                r.flushall()  # keeps the FUNCTION library
                index = RedisIndex(client)
                await index.load_functions()
                gc.collect()
                before = redis_stats(r)
                timing, verdicts = await run_engine(index, docs)
                after = redis_stats(r)
                times.append(timing)
            best = Timing(min(t.wall_s for t in times), min(t.cpu_s for t in times))
            return RedisRun(best, verdicts, before, after)
        finally:
            await client.aclose()

    return asyncio.run(go())


def neardup_executable() -> str:
    beside = Path(sys.executable).parent / "neardup"
    if beside.is_file():
        return str(beside)
    found = shutil.which("neardup")
    if found is None:
        raise FileNotFoundError("the neardup console script is not installed (pip install -e .)")
    return found


@dataclass
class CliRun:
    timing: Timing  # wall clock and the child's CPU
    verdicts: list[dict[str, Any]]
    reported_docs_per_s: float | None  # the command's own summary (after start-up)
    command: str


def run_cli(docs: Sequence[Doc], workdir: Path) -> CliRun:
    corpus = workdir / "corpus.jsonl"
    out = workdir / "out.jsonl"
    with corpus.open("wb") as fh:
        for d in docs:
            fh.write(orjson.dumps({"id": d["id"], "text": d["text"]}) + b"\n")
    argv = [neardup_executable(), "dedup", str(corpus), "-o", str(out), "--store", "memory"]
    argv.append("--no-progress")
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - child.ru_utime - child.ru_stime
    if proc.returncode != 0:
        raise RuntimeError(f"neardup dedup exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    own = re.search(r"docs/s\D*?([\d,]+)", proc.stderr)
    verdicts = [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
    return CliRun(
        Timing(seconds, cpu),
        verdicts,
        float(own.group(1).replace(",", "")) if own else None,
        "neardup dedup corpus.jsonl -o out.jsonl --store memory --no-progress",
    )


# --------------------------------------------------------------------------- datasketch


def ds_shingles(text: str) -> set[bytes]:
    """The usual datasketch-side tokenising: word 3-shingles of ``\\w+`` on ``casefold()``."""
    tokens = _WORD.findall(text.casefold())
    if len(tokens) < 3:
        return {" ".join(tokens).encode()} if tokens else set()
    return {" ".join(tokens[i : i + 3]).encode() for i in range(len(tokens) - 2)}


def _ds_jaccard(a: set[bytes], b: set[bytes]) -> float:
    inter = len(a & b)
    union = len(a) + len(b) - inter
    return inter / union if union else 0.0


def run_ds_memory(docs: Sequence[Doc], verify: bool) -> tuple[Timing, Pairs]:
    """Per document, in order: MinHash (bulk per batch), ``query``, ``insert``; optionally verify
    each candidate by exact Jaccard of shingle sets kept in the process."""
    from datasketch import MinHash, MinHashLSH

    index_of = {d["id"]: j for j, d in enumerate(docs)}
    clock = Stopwatch()
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    sets: dict[str, set[bytes]] = {}
    found: Pairs = {}
    for lo in range(0, len(docs), BATCH):
        chunk = docs[lo : lo + BATCH]
        shingles = [ds_shingles(d["text"]) for d in chunk]
        sigs = MinHash.bulk(shingles, num_perm=NUM_PERM)
        for j, (d, sh, m) in enumerate(zip(chunk, shingles, sigs, strict=True), start=lo):
            cands = lsh.query(m)
            if verify:
                cands = [c for c in cands if _ds_jaccard(sh, sets[c]) >= THRESHOLD]
                sets[d["id"]] = sh
            if cands:
                found[j] = {index_of[c] for c in cands}
            lsh.insert(d["id"], m)
    return clock.stop(), found


def _ds_redis_lsh(port: int) -> Any:
    from datasketch import MinHashLSH

    return MinHashLSH(
        threshold=THRESHOLD,
        num_perm=NUM_PERM,
        storage_config={
            "type": "redis",
            "basename": DS_BASENAME,
            "redis": {"host": "127.0.0.1", "port": port},
        },
    )


def run_ds_redis(docs: Sequence[Doc], port: int, session: bool) -> tuple[Timing, Pairs]:
    """datasketch on Redis. ``session``: per batch, one ``insertion_session`` then a ``query`` per
    document (candidates inserted after it are dropped); else query-then-``insert`` per document."""
    from datasketch import MinHash

    index_of = {d["id"]: j for j, d in enumerate(docs)}
    gc.collect()
    clock = Stopwatch()
    lsh = _ds_redis_lsh(port)
    found: Pairs = {}
    for lo in range(0, len(docs), BATCH):
        chunk = docs[lo : lo + BATCH]
        sigs = MinHash.bulk([ds_shingles(d["text"]) for d in chunk], num_perm=NUM_PERM)
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


# --------------------------------------------------------------------------- profile


def profile_engine_memory(docs: Sequence[Doc], top: int = 20) -> str:
    """cProfile of one neardup in-memory pass (not the timed one), top functions by own time."""
    prof = cProfile.Profile()
    prof.enable()
    asyncio.run(run_engine(MemoryIndex(), docs))
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


# --------------------------------------------------------------------------- run


def engine_machine_info(r: redis.Redis | None = None) -> dict[str, Any]:
    info = machine_info(("neardup", "numpy", "mmh3", "datasketch", "redis"))
    if r is not None:
        server: dict[str, Any] = r.info("server")
        cfg = r.config_get("hash-max-listpack-*")
        info["redis_server"] = f"{server.get('redis_version')} ({server.get('executable', '')})"
        info["redis_config"] = {str(k): str(v) for k, v in sorted(cfg.items())}
    return info


@contextmanager
def redis_server(workdir: Path) -> Iterator[Any]:
    service = services.start_redis(workdir / "redis")
    try:
        yield service
    finally:
        service.stop()


def _stage(msg: str) -> None:
    console.print(f"[dim]{time.strftime('%H:%M:%S')} {msg}")


def _cli_pairs(verdicts: Sequence[Mapping[str, Any]], index_of: Mapping[str, int]) -> Pairs:
    out: Pairs = {}
    for j, v in enumerate(verdicts):
        got = {index_of[m["id"]] for m in v["matches"]}
        if v["duplicate_of"] is not None:
            got.add(index_of[v["duplicate_of"]])
        if got:
            out[j] = got
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    n, reps = args.docs, args.reps
    _stage(f"corpus: {n} docs, seed {args.seed}")
    docs = generate(n, seed=args.seed)
    index_of = {d["id"]: j for j, d in enumerate(docs)}
    _stage("ground truth: exact word-3-shingle Jaccard >= 0.8, brute force")
    sims = exact_similarities(docs, THRESHOLD)
    truth = truth_by_doc(sims)
    ds_redis_n = min(n, args.ds_redis_docs) if args.ds_redis_docs > 0 else n
    naive_n = min(n, args.ds_naive_docs)
    rows: list[Row] = []
    checks: dict[str, Any] = {}

    _stage(f"neardup Engine + MemoryIndex (best of {reps})")
    timing, mem_verdicts = run_engine_memory(docs, reps)
    mem_pairs = verdict_pairs(mem_verdicts, index_of)
    rows.append(
        Row(
            "nd_mem",
            "neardup, memory",
            "memory",
            n,
            timing,
            "verified",
            score(mem_pairs, truth, n),
            note=f"Engine(MemoryIndex()).process in batches of {BATCH}, best of {reps}",
        )
    )
    mem_dicts = [v.to_dict() for v in mem_verdicts]

    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        workdir = Path(tmp)
        _stage("neardup dedup (the CLI, subprocess)")
        cli = run_cli(docs, workdir)
        own = (
            f"; its own summary, after start-up: {cli.reported_docs_per_s:,.0f} docs/s"
            if cli.reported_docs_per_s
            else ""
        )
        rows.append(
            Row(
                "nd_cli",
                "neardup dedup (CLI), memory",
                "memory",
                len(cli.verdicts),
                cli.timing,
                "verified",
                score(_cli_pairs(cli.verdicts, index_of), truth, n),
                note=f"`{cli.command}` as a subprocess, wall clock incl. start-up, 1 run{own}",
            )
        )
        checks["cli_verdicts_equal_engine_memory"] = cli.verdicts == mem_dicts
        checks["cli_command"] = cli.command

        _stage("starting Redis")
        with redis_server(workdir) as service:
            r = redis.Redis(host="127.0.0.1", port=service.port)
            try:
                machine = engine_machine_info(r)
                _stage(f"neardup Engine + RedisIndex (best of {reps})")
                red = run_engine_redis(service.url, r, docs, reps)
                row = Row(
                    "nd_redis",
                    "neardup, Redis",
                    "redis",
                    n,
                    red.timing,
                    "verified",
                    score(verdict_pairs(red.verdicts, index_of), truth, n),
                    bytes_per_doc=(red.after.used_memory - red.before.used_memory) / n,
                    keys_per_doc=(red.after.dbsize - red.before.dbsize) / n,
                    redis_cpu_ms_per_doc=1000 * (red.after.cpu_s - red.before.cpu_s) / n,
                    note="Engine(RedisIndex(redis.asyncio client)).process in batches of "
                    f"{BATCH} (one FCALL per chunk of 64 articles, pipelined; sketching of "
                    f"the next chunk overlaps the server's work), best of {reps}",
                )
                row.memory_breakdown = memory_breakdown(r, neardup_key_class, n)
                rows.append(row)
                checks["redis_verdicts_equal_memory"] = [
                    v.to_dict() for v in red.verdicts
                ] == mem_dicts

                if naive_n:
                    _stage(f"datasketch MinHashLSH on Redis, insert() per doc ({naive_n} docs)")
                    r.flushall()
                    before = redis_stats(r)
                    timing, found = run_ds_redis(docs[:naive_n], service.port, session=False)
                    after = redis_stats(r)
                    rows.append(
                        Row(
                            "ds_redis_naive",
                            "datasketch, Redis, insert() per doc",
                            "redis",
                            naive_n,
                            timing,
                            "candidates",
                            score(found, truth, naive_n),
                            redis_cpu_ms_per_doc=1000 * (after.cpu_s - before.cpu_s) / naive_n,
                            note="datasketch's documented usage, per document: query, then "
                            "insert (with its duplicate check); "
                            + (f"the first {naive_n} docs, " if naive_n < n else "")
                            + "1 run; the second baseline of the Redis target",
                        )
                    )

                _stage(f"datasketch MinHashLSH on Redis, insertion_session ({ds_redis_n} docs)")
                r.flushall()
                before = redis_stats(r)
                timing, found = run_ds_redis(docs[:ds_redis_n], service.port, session=True)
                after = redis_stats(r)
                sub = f"the first {ds_redis_n} of {n} docs, " if ds_redis_n < n else ""
                row = Row(
                    "ds_redis",
                    "datasketch, Redis",
                    "redis",
                    ds_redis_n,
                    timing,
                    "candidates",
                    score(found, truth, ds_redis_n),
                    bytes_per_doc=(after.used_memory - before.used_memory) / ds_redis_n,
                    keys_per_doc=(after.dbsize - before.dbsize) / ds_redis_n,
                    redis_cpu_ms_per_doc=1000 * (after.cpu_s - before.cpu_s) / ds_redis_n,
                    note=f"{sub}per batch of {BATCH}: MinHash.bulk, insert in one "
                    "insertion_session, then query each doc (candidates inserted after it "
                    "dropped), 1 run",
                )
                row.memory_breakdown = memory_breakdown(r, datasketch_key_class, ds_redis_n)
                rows.append(row)
                r.flushall()
            finally:
                r.close()

    from datasketch import MinHash

    MinHash.bulk([ds_shingles(d["text"]) for d in docs[:64]], num_perm=NUM_PERM)  # warm-up
    _stage(f"datasketch MinHashLSH in memory (best of {reps})")
    timing, found = best_of(reps, lambda: run_ds_memory(docs, verify=False))
    rows.append(
        Row(
            "ds_mem",
            "datasketch, memory",
            "memory",
            n,
            timing,
            "candidates",
            score(found, truth, n),
            note=f"per doc: MinHash (bulk per batch of {BATCH}), query, insert; best of {reps}",
        )
    )
    _stage(f"datasketch MinHashLSH in memory + exact verification (best of {reps})")
    timing, found = best_of(reps, lambda: run_ds_memory(docs, verify=True))
    rows.append(
        Row(
            "ds_mem_verify",
            "datasketch, memory + exact verify",
            "memory",
            n,
            timing,
            "verified",
            score(found, truth, n),
            note="as datasketch, memory, plus exact Jaccard of every candidate against shingle "
            f"sets kept in the process (what neardup does); best of {reps}",
        )
    )

    by_key = {row.key: row for row in rows}
    for row in rows:
        base = by_key["ds_mem"] if row.store == "memory" else by_key["ds_redis"]
        row.baseline = base.key
        row.ratio = row.docs_per_s / base.docs_per_s
    nd_mem, nd_redis, ds_redis = by_key["nd_mem"], by_key["nd_redis"], by_key["ds_redis"]
    assert nd_mem.ratio is not None and nd_redis.ratio is not None
    assert nd_redis.bytes_per_doc is not None and ds_redis.bytes_per_doc is not None
    ds_mem = by_key["ds_mem"]
    assert nd_redis.redis_cpu_ms_per_doc is not None and ds_redis.redis_cpu_ms_per_doc is not None
    naive = by_key.get("ds_redis_naive")
    nd_total = nd_redis.cpu_ms_per_doc + nd_redis.redis_cpu_ms_per_doc
    ds_total = ds_redis.cpu_ms_per_doc + ds_redis.redis_cpu_ms_per_doc
    targets = {
        "memory_5x": {
            "target": 5.0,
            "measured": nd_mem.ratio,
            "vs_verified_datasketch": nd_mem.docs_per_s / by_key["ds_mem_verify"].docs_per_s,
            "cpu_ratio": ds_mem.cpu_ms_per_doc / nd_mem.cpu_ms_per_doc,
            "met": nd_mem.ratio >= 5.0,
        },
        "redis_20x": {
            # The target was set against datasketch on Redis as its README uses it ("about 300
            # documents/s"): one query and one insert per document. Its faster batch mode
            # (insertion_session, then queries) is the base of the table's ratios and is
            # reported here too.
            "target": 20.0,
            "baseline": "datasketch, Redis, insert() per doc" if naive else "datasketch, Redis",
            "measured": (nd_redis.docs_per_s / naive.docs_per_s) if naive else nd_redis.ratio,
            "vs_batch_mode": nd_redis.ratio,
            "cpu_ratio_client_plus_server": ds_total / nd_total,
            "met": ((nd_redis.docs_per_s / naive.docs_per_s) if naive else nd_redis.ratio) >= 20.0,
        },
        "bytes_fewer": {
            "neardup": nd_redis.bytes_per_doc,
            "datasketch": ds_redis.bytes_per_doc,
            "ratio": ds_redis.bytes_per_doc / nd_redis.bytes_per_doc,
            "met": nd_redis.bytes_per_doc < ds_redis.bytes_per_doc,
        },
    }
    result: dict[str, Any] = {
        "benchmark": "engine",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "corpus": {
            "generator": "harness.corpus.generate",
            "lang": "en",
            "docs": n,
            "seed": args.seed,
            "words": 300,
            "dup_rate": 0.3,
            "truth_pairs_j_ge_0.8": len(sims),
            "truth_docs_with_earlier_j_ge_0.8": len(truth),
            "truth_docs_with_more_than_cap": sum(1 for s in truth.values() if len(s) > MATCH_CAP),
        },
        "method": {
            "threshold": THRESHOLD,
            "num_perm": NUM_PERM,
            "batch": BATCH,
            "reps": reps,
            "match_cap": MATCH_CAP,
            "neardup_bands_rows": list(Policy().bands_rows),
            "datasketch_bands_rows": _ds_params(),
            "datasketch_redis_docs": ds_redis_n,
            "datasketch_naive_docs": naive_n,
            "timing": "wall clock (time.perf_counter) of whole passes from text to answer, after "
            "a warm-up; fast systems best of --reps fresh runs; gc on, gc.collect() before each",
        },
        "checks": checks,
        "rows": [asdict(row) for row in rows],
        "targets": targets,
        "elapsed_s": time.perf_counter() - t_start,
    }
    machine["load_average_1m_at_end"] = os.getloadavg()[0]
    if args.profile:
        _stage("profiling one neardup in-memory pass (cProfile)")
        result["profile_engine_memory"] = profile_engine_memory(docs)
        result["elapsed_s"] = time.perf_counter() - t_start
    return result


def _ds_params() -> list[int]:
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    return [int(lsh.b), int(lsh.r)]


# --------------------------------------------------------------------------- output


def _fmt(x: float | None, spec: str) -> str:
    return "—" if x is None or x != x else format(x, spec)


_HEAD = [
    "system",
    "docs",
    "docs/s",
    "vs datasketch",
    "CPU ms/doc",
    "pair recall",
    "pair recall (cap 10)",
    "doc recall",
    "pair precision",
    "pairs are",
    "Redis B/doc",
    "Redis keys/doc",
    "Redis CPU ms/doc",
]


def _cells(row: Mapping[str, Any], mark: str = "") -> list[str]:
    q = row["quality"]
    is_base = row["key"] == row["baseline"]
    ratio = "1.00 (base)" if is_base else _fmt(row["ratio"], ".2f") + "×"
    return [
        row["system"] + mark,
        f"{row['docs']:,}",
        f"{row['docs_per_s']:,.0f}",
        ratio,
        f"{row['cpu_ms_per_doc']:.3f}",
        f"{q['pair_recall']:.4f}",
        f"{q['pair_recall_capped']:.4f}",
        f"{q['doc_recall']:.4f}",
        f"{q['pair_precision']:.4f}",
        row["reports"],
        _fmt(row["bytes_per_doc"], ",.0f"),
        _fmt(row["keys_per_doc"], ".2f"),
        _fmt(row["redis_cpu_ms_per_doc"], ".3f"),
    ]


def _marked(result: Mapping[str, Any]) -> list[tuple[list[str], str]]:
    """Table cells of every row, and its footnote (``[k] note``)."""
    out = []
    for k, row in enumerate(result["rows"], start=1):
        out.append((_cells(row, f" [{k}]"), f"[{k}] {row['system']}: {row['note']}"))
    return out


_LEGEND = (
    "pairs are: 'verified' = (document, earlier document) pairs confirmed by exact Jaccard "
    "(neardup: duplicate_of + matches); 'candidates' = datasketch's raw LSH candidates (it "
    "stores no sets to verify against), so their precision is candidate precision. "
    "pair recall = truth pairs reported / truth pairs; (cap 10) = / Σ min(truth pairs of a "
    "document, 10), what a capped `matches` can show; doc recall = documents with an earlier "
    "J ≥ 0.8 document that are flagged (neardup: verdict not original; datasketch: any "
    "candidate); pair precision = reported pairs with exact J ≥ 0.8 / reported pairs. "
    "vs datasketch: docs/s against 'datasketch, memory' (candidates only, its faster row) for "
    "memory rows, against 'datasketch, Redis' for Redis rows. CPU ms/doc = CPU time of the "
    "benchmark process (of the child for the CLI) per document, Redis server excluded: "
    "unlike docs/s it barely moves when other work shares the machine. Redis B/doc = "
    "(used_memory after − before) / docs; Redis CPU = server used_cpu_user + used_cpu_sys "
    "delta / docs."
)


def _target_lines(result: Mapping[str, Any]) -> list[str]:
    t = result["targets"]
    met = {True: "MET", False: "NOT MET"}
    return [
        f"in memory ≥ 5× datasketch: {t['memory_5x']['measured']:.2f}× docs/s "
        f"({t['memory_5x']['vs_verified_datasketch']:.2f}× vs datasketch + exact verification; "
        f"{t['memory_5x']['cpu_ratio']:.2f}× less CPU per doc) — {met[t['memory_5x']['met']]}",
        f"on Redis ≥ 20× datasketch: {t['redis_20x']['measured']:.1f}× docs/s against "
        f"'{t['redis_20x']['baseline']}' (its documented usage, the ~300 docs/s the target was "
        f"set against) — {met[t['redis_20x']['met']]}; "
        f"{t['redis_20x']['vs_batch_mode']:.1f}× against its faster batch mode "
        f"(insertion_session; {t['redis_20x']['cpu_ratio_client_plus_server']:.2f}× less client "
        "+ server CPU per doc)",
        f"fewer Redis bytes/doc than datasketch: {t['bytes_fewer']['neardup']:,.0f} vs "
        f"{t['bytes_fewer']['datasketch']:,.0f} ({t['bytes_fewer']['ratio']:.2f}× fewer; neardup "
        f"includes the shingle sets exact verification needs) — {met[t['bytes_fewer']['met']]}",
    ]


def _breakdowns(result: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    return [(r["system"], r["memory_breakdown"]) for r in result["rows"] if r["memory_breakdown"]]


def print_tables(result: Mapping[str, Any]) -> None:
    c = result["corpus"]
    table = Table(
        title=(
            f"end-to-end near-duplicate detection, {c['docs']:,} docs (seed {c['seed']}); "
            f"truth: {c['truth_pairs_j_ge_0.8']:,} (doc, earlier doc) pairs with exact J ≥ 0.8"
        )
    )
    for i, head in enumerate(_HEAD):
        table.add_column(
            head, justify="left" if i in (0, 9) else "right", no_wrap=i == 0, overflow="fold"
        )
    marked = _marked(result)
    for cells, _ in marked:
        table.add_row(*cells)
    console.print(table)
    for _, note in marked:
        console.print(note, markup=False, highlight=False)
    console.print(_LEGEND, markup=False, highlight=False)
    for system, parts in _breakdowns(result):
        sub = Table(title=f"Redis bytes per document by key class: {system}")
        sub.add_column("key class")
        sub.add_column("bytes/doc", justify="right")
        for cls, b in parts.items():
            sub.add_row(cls, f"{b:,.0f}")
        console.print(sub)
    for line in _target_lines(result):
        console.print(f"target: {line}")
    ch, m = result["checks"], result["machine"]
    console.print(
        f"checks: Redis verdicts == memory verdicts: {ch['redis_verdicts_equal_memory']}; "
        f"CLI verdicts == Engine verdicts: {ch['cli_verdicts_equal_engine_memory']}"
    )
    console.print(
        f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, Redis {m.get('redis_server')}; "
        f"load average {m['load_average_1m_at_start']:.2f} -> {m['load_average_1m_at_end']:.2f}; "
        f"total {result['elapsed_s']:.1f} s"
    )
    if "profile_engine_memory" in result:
        console.print(result["profile_engine_memory"], markup=False, highlight=False)


def markdown(result: Mapping[str, Any]) -> str:
    m, c, meth, ch = result["machine"], result["corpus"], result["method"], result["checks"]
    nb, nr = meth["neardup_bands_rows"]
    db, dr = meth["datasketch_bands_rows"]
    out = [
        "# Engine benchmark: neardup vs datasketch MinHashLSH",
        "",
        f"Generated by `python -m bench engine` on {result['date']} in "
        f"{result['elapsed_s']:.1f} s.",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {m['platform']}; "
        f"1-minute load average {m['load_average_1m_at_start']:.2f} at start (when Redis came "
        f"up), {m['load_average_1m_at_end']:.2f} at the end",
        f"- Python {m['python']}, neardup {m['neardup']}, numpy {m['numpy']}, datasketch "
        f"{m['datasketch']}, redis-py {m['redis']}; Redis server {m.get('redis_server')} "
        f"(default config, {m.get('redis_config')}), on the same machine over loopback",
        f"- Corpus: `harness.corpus.generate({c['docs']}, seed={c['seed']})`, English real-text "
        f"documents of ~{c['words']} words, dup_rate {c['dup_rate']}",
        f"- Truth: {c['truth_pairs_j_ge_0.8']:,} (document, earlier document) pairs with exact "
        f"word-3-shingle Jaccard ≥ {meth['threshold']} (brute force, "
        f"`harness.corpus.exact_similarities`), over {c['truth_docs_with_earlier_j_ge_0.8']:,} "
        f"documents; {c['truth_docs_with_more_than_cap']:,} documents have more than "
        f"{meth['match_cap']} (the `matches` cap)",
        f"- neardup: recall-floor banding {nb}×{nr} plus 10 SimHash tables; datasketch: "
        f"`MinHashLSH(threshold={meth['threshold']}, num_perm={meth['num_perm']})` = {db}×{dr}",
        f"- Timing: {meth['timing']} (reps {meth['reps']}); batches of {meth['batch']}",
        f"- Same verdicts from Redis and memory: {ch['redis_verdicts_equal_memory']}; "
        f"the CLI's verdicts equal the Engine's: {ch['cli_verdicts_equal_engine_memory']} "
        f"(`{ch['cli_command']}`)",
        "",
        "## Results",
        "",
        md_table(_HEAD, [cells for cells, _ in _marked(result)]),
        "",
        *[f"{note}  " for _, note in _marked(result)],
        "",
        _LEGEND,
        "",
        "The machine is shared (other work may run at the same time, see the load average): "
        "docs/s vary from run to run; CPU per document, Redis CPU per document and bytes per "
        "document much less.",
        "",
        "## Targets (issue 3)",
        "",
        *[f"- {line}" for line in _target_lines(result)],
        "",
    ]
    for system, parts in _breakdowns(result):
        out += [f"## Redis bytes per document by key class: {system}", ""]
        out += [md_table(["key class", "bytes/doc"], [[k, f"{v:,.0f}"] for k, v in parts.items()])]
        out += [""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench engine", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--docs", type=int, default=20_000, help="corpus size (default 20000)")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    parser.add_argument(
        "--ds-redis-docs",
        type=int,
        default=0,
        help="datasketch-on-Redis (insertion_session) on this prefix (default 0: every doc)",
    )
    parser.add_argument(
        "--ds-naive-docs",
        type=int,
        default=20_000,
        help="datasketch-on-Redis with insert() per doc, on this prefix (0: skip; default 20000)",
    )
    parser.add_argument("--reps", type=int, default=2, help="fresh runs of the fast systems (best)")
    parser.add_argument("--profile", action="store_true", help="cProfile one neardup pass")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    if args.docs < WARMUP_DOCS:
        parser.error(f"--docs must be at least {WARMUP_DOCS}")
    result = run(args)
    print_tables(result)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "engine.json", json.dumps(result, indent=2) + "\n")
    write_atomic(args.out / "engine.md", markdown(result))
    console.print(f"wrote {args.out / 'engine.json'} and {args.out / 'engine.md'}")
    return 0
