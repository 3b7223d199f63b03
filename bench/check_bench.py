"""Latency of the originality check: ``POST /check`` with ``register=false``, over HTTP.

The index is filled by ``neardup dedup`` of ``--docs`` texts into Redis; one ``neardup worker``
answers sequential checks on one keep-alive connection, half near-copies, half fresh texts (they
cost differently, so either half alone would mislead). The same checks then run in this process
without HTTP, as the view calls the engine, with a cProfile. Between the two: the idle worker's
CPU, and a second HTTP pass under ``py-spy record`` (:func:`harness.profile.attribute_deepest`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import redis.asyncio as aioredis

from bench import cli, readings
from bench.cli import say
from bench.readings import ROOT, git_state, latency_ms, machine_info, other_load, pct, write_corpus
from bench.rig import Stack
from harness import services
from harness.corpus import Doc, generate, load_pool
from harness.kafka import create_topics
from harness.profile import HTTP_CHECK_PARTS, IDLE, attribute_deepest
from harness.report import cpu_seconds
from harness.services import log_tail
from harness.workers import NEARDUP, WorkerProc
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article
from neardup.stream.worker.http import read_api

PACKAGES = ("neardup", "faust-streaming", "aiohttp", "redis", "numpy", "orjson", "py-spy")
WARMUP = 100
PROFILED = 200
TOP = 10  # functions of the cProfile table
EDITS = 3  # words replaced in a near-copy: ~1% of a 300-word text, far above the threshold
TARGET = {"docs": 100_000, "words": 300, "p50_ms": 2.0, "p99_ms": 10.0}
WORKER_SETTINGS = {"NEARDUP_LOG_LEVEL": "warning"}  # no per-request log lines in the timing
PROFILE_HZ = 250
ATTACH_S = 1.0  # py-spy attached and sampling before the first profiled request
IDLE_S = 5.0
LEAVES = 15
WAITING = "idle: event loop waiting (Redis replies, the next request, fetches)"


@dataclass(frozen=True)
class Check:
    """One text to check; ``copy``: a near-copy of an indexed document (must be found)."""

    text: str
    copy: bool


def make_checks(indexed: Sequence[Doc], n: int, words: int, seed: int = 8) -> list[Check]:
    """Half copies (``EDITS`` words of an indexed text replaced: a light rewrite of a published
    story), half fresh texts, shuffled."""
    rng = random.Random(seed)
    _pool, vocab = load_pool()
    copies = []
    for _ in range(n // 2):
        copy = indexed[rng.randrange(len(indexed))]["text"].split()
        for i in rng.sample(range(len(copy)), min(EDITS, len(copy))):
            copy[i] = vocab[rng.randrange(len(vocab))]
        copies.append(Check(" ".join(copy), True))
    fresh = [
        Check(d["text"], False) for d in generate(n - n // 2, seed=seed, words=words, dup_rate=0.0)
    ]
    checks = copies + fresh
    rng.shuffle(checks)
    return checks


@dataclass
class Run:
    """Latencies of one path and what its answers said."""

    latencies_ms: list[float] = field(default_factory=list)  # one per check, in their order
    copies_found: int = 0
    fresh_flagged: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def count(self, check: Check, verdict: str) -> None:
        self.verdicts[verdict] += 1
        if verdict != "original":
            self.copies_found += check.copy
            self.fresh_flagged += not check.copy


async def post_check(
    session: aiohttp.ClientSession, url: str, text: str
) -> tuple[float, int, bytes]:
    """One ``POST /check``: (ms including the body's read, status, body)."""
    body = orjson.dumps({"text": text, "register": False})
    started = time.perf_counter()
    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
        raw = await resp.read()
    return (time.perf_counter() - started) * 1e3, resp.status, raw


async def http_checks(
    worker: WorkerProc, warmup: Sequence[Check], checks: Sequence[Check]
) -> tuple[Run, float | None]:
    """Sequential checks on one connection after the unrecorded warm-up: (the run, the worker's
    CPU ms per timed check)."""
    run, url = Run(), worker.url("/check")
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        if warmup:
            say(f"HTTP: {len(warmup)} warm-up requests...")
        for c in warmup:
            await post_check(session, url, c.text)
        say(f"HTTP: measuring {len(checks):,} requests...")
        cpu0 = cpu_seconds(worker.proc.pid)
        for c in checks:
            ms, status, raw = await post_check(session, url, c.text)
            run.latencies_ms.append(ms)
            got = orjson.loads(raw) if status == 200 else {}
            if status != 200 or "verdict" not in got:
                run.failures.append(f"{status}: {raw[:200]!r}")
                continue
            run.count(c, str(got["verdict"]))
        cpu1 = cpu_seconds(worker.proc.pid)
    cpu = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / len(checks) * 1e3
    return run, cpu


async def engine_checks(
    engine: Engine, warmup: Sequence[Check], checks: Sequence[Check]
) -> tuple[Run, float]:
    """The view's call without HTTP: (the run, Redis round trips per check)."""
    run = Run()
    index = engine.index
    for i, c in enumerate(warmup):
        await engine.process([Article(f"warm-{i}", c.text)], register=False, explain=True)
    say(f"in-process: measuring {len(checks):,} checks...")
    trips = index.round_trips
    for i, c in enumerate(checks):
        started = time.perf_counter()
        (res,) = await engine.process([Article(f"check-{i}", c.text)], register=False, explain=True)
        run.latencies_ms.append((time.perf_counter() - started) * 1e3)
        if isinstance(res, NeardupError):
            run.failures.append(str(res))
            continue
        run.count(c, res.verdict)
    return run, (index.round_trips - trips) / max(len(checks), 1)


def _where(file: str) -> str:
    """A profile row's file, relative to site-packages, the standard library or the repository."""
    for marker in ("site-packages/", f"/lib/python{sys.version_info[0]}.{sys.version_info[1]}/"):
        if marker in file:
            return file.split(marker, 1)[1]
    with contextlib.suppress(ValueError):
        return str(Path(file).relative_to(ROOT))
    return file


def top_functions(prof: cProfile.Profile, n_checks: int) -> list[dict[str, Any]]:
    """The ``TOP`` functions by cumulative time, ms per check, without the driver loop and the
    event loop's plumbing, which wrap every step of every check."""
    here = Path(__file__).resolve()
    loop = ("asyncio/base_events.py", "asyncio/events.py", "<method 'run' of '_contextvars")
    rows: list[dict[str, Any]] = []
    for e in sorted(prof.getstats(), key=lambda e: -e.totaltime):
        code = e.code
        if isinstance(code, str):  # a builtin: its name is all there is
            where = code
        elif Path(code.co_filename).resolve() == here:
            continue
        else:
            where = f"{_where(code.co_filename)}:{code.co_firstlineno}({code.co_name})"
        if "_lsprof.Profiler" in where or where.startswith(loop) or len(rows) == TOP:
            continue
        rec = e.callcount - e.reccallcount
        rows.append(
            {
                "function": where,
                "calls": f"{e.callcount}/{rec}" if e.reccallcount else str(e.callcount),
                "cum_ms_per_check": e.totaltime / n_checks * 1e3,
                "own_ms_per_check": e.inlinetime / n_checks * 1e3,
            }
        )
    return rows


async def in_process(
    redis_url: str, warmup: Sequence[Check], checks: Sequence[Check]
) -> dict[str, Any]:
    """Indexed count, the in-process run and the profile, on one Redis client."""
    client = aioredis.Redis.from_url(redis_url)
    try:
        index = RedisIndex(client)
        await index.load_functions()
        engine = Engine(index)
        rows = (await read_api.namespaces(index))["namespaces"]
        indexed = {r["namespace"]: r["documents"] for r in rows}
        run, trips = await engine_checks(engine, warmup, checks)
        profiled = checks[:PROFILED]
        say(f"in-process: cProfile of {len(profiled)} checks...")
        prof = cProfile.Profile()
        prof.enable()
        for i, c in enumerate(profiled):
            await engine.process([Article(f"prof-{i}", c.text)], register=False, explain=True)
        prof.disable()
        profile = {"checks": len(profiled), "top": top_functions(prof, len(profiled))}
        return {"indexed": indexed, "run": run, "round_trips": trips, "profile": profile}
    finally:
        await client.aclose()


def idle_worker(worker: WorkerProc) -> dict[str, Any]:
    """The worker's CPU over ``IDLE_S`` seconds without requests, in cores."""
    say(f"idle worker: CPU over {IDLE_S:g} s without requests...")
    cpu0, t0 = cpu_seconds(worker.proc.pid), time.perf_counter()
    time.sleep(IDLE_S)
    cpu1, t1 = cpu_seconds(worker.proc.pid), time.perf_counter()
    cores = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / (t1 - t0)
    return {"seconds": t1 - t0, "cpu_cores": cores}


def profile_report(raw: str, checks: int) -> dict[str, Any]:
    """py-spy's samples as the report shows them: parts of the main thread (% of its samples,
    ms per check = samples / rate / checks), the threads, the hottest leaf functions."""
    got = attribute_deepest(raw, HTTP_CHECK_PARTS)
    main = got.main

    def ms(n: int) -> float:
        return n / PROFILE_HZ / checks * 1e3

    order = [p.name for p in HTTP_CHECK_PARTS]
    names = [n for n in order if got.parts[n]] + [n for n in got.parts if n not in order]
    names.sort(key=lambda n: (n == IDLE, -got.parts[n]))
    parts = [
        {
            "part": WAITING if n == IDLE else n,
            "samples": got.parts[n],
            "pct_of_main": pct(got.parts[n], main.samples),
            "ms_per_check": ms(got.parts[n]),
        }
        for n in names
    ]
    threads = [
        {
            "thread": name,
            "samples": t.samples,
            "busy_samples": t.busy,
            "busy_pct": pct(t.busy, t.samples),
            "busy_ms_per_check": ms(t.busy),
        }
        for name, t in sorted(got.threads.items(), key=lambda kv: -kv[1].samples)
    ]
    leaves = [
        {
            "function": frame,
            "part": part,
            "samples": n,
            "pct_of_main_busy": pct(n, main.busy),
            "ms_per_check": ms(n),
        }
        for (frame, part), n in got.leaves.most_common(LEAVES)
    ]
    return {
        "samples": sum(t.samples for t in got.threads.values()),
        "main_samples": main.samples,
        "main_seconds": main.samples / PROFILE_HZ,
        "main_busy_pct": pct(main.busy, main.samples),
        "main_busy_ms_per_check": ms(main.busy),
        "consumer_thread_busy_pct": pct(got.consumer.busy, got.consumer.samples),
        "parts": parts,
        "threads": threads,
        "top_leaves": leaves,
    }


def spied_checks(stack: Stack, checks: Sequence[Check]) -> dict[str, Any]:
    """A second HTTP pass of ``checks`` with ``py-spy record`` attached to the worker; the
    samples classified by :func:`profile_report`, or ``{"skipped": why}``."""
    if not checks:
        return {"skipped": "--profile-requests 0"}
    worker, raw = stack.workers[0], stack.workdir / "worker-profile.txt"
    argv = readings.spy_argv(worker.proc.pid, raw, PROFILE_HZ, "--threads")
    if argv is None:
        return dict(readings.NO_PY_SPY)
    say(f"profile: py-spy at {PROFILE_HZ} Hz on the worker, {len(checks):,} requests...")
    proc = stack.start_helper(argv, "py-spy")
    time.sleep(ATTACH_S)
    if proc.poll() is not None:
        return {"skipped": f"py-spy exited with {proc.returncode}: {spy_log(stack)}"}
    started = time.perf_counter()
    run, cpu = asyncio.run(http_checks(worker, [], checks))
    seconds = time.perf_counter() - started
    if (text := readings.spy_stop(proc, raw)) is None:
        return {"skipped": f"py-spy wrote nothing: {spy_log(stack)}"}
    return {
        "command": " ".join(["py-spy", *argv[1:3], "<worker pid>", *argv[4:-1], "<file>"]),
        "hz": PROFILE_HZ,
        "checks": len(checks),
        "attach_s": ATTACH_S,
        "checks_seconds": seconds,
        "latency": latency_ms(run.latencies_ms),
        "failures": len(run.failures),
        "worker_cpu_ms_per_check": cpu,
        **profile_report(text, len(checks)),
    }


def spy_log(stack: Stack) -> str:
    return " | ".join(log_tail(stack.workdir / "py-spy.log", 5).splitlines())


def summary(run: Run, checks: Sequence[Check]) -> dict[str, Any]:
    """Percentiles of all checks and of each half: a copy is verified and explained, a fresh
    text usually stops at the candidates, so the halves cost differently."""
    copies = sum(c.copy for c in checks)
    ms = run.latencies_ms
    halves = {
        name: latency_ms([t for t, c in zip(ms, checks, strict=True) if c.copy is want])
        for name, want in (("copies", True), ("fresh", False))
        if any(c.copy is want for c in checks)
    }
    return {
        **latency_ms(ms),
        "by_kind": halves,
        "copies_sent": copies,
        "copies_found": run.copies_found,
        "fresh_sent": len(checks) - copies,
        "fresh_flagged": run.fresh_flagged,
        "verdicts": dict(run.verdicts),
        "failures": len(run.failures),
        "first_failures": run.failures[:5],
    }


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Services, fill, worker, both paths; everything started is stopped before returning."""
    say(f"generating {args.docs:,} documents of ~{args.words} words...")
    docs = generate(args.docs, seed=7, words=args.words)
    checks = make_checks(docs, WARMUP + args.requests, args.words)
    warmup, timed = checks[:WARMUP], checks[WARMUP:]
    corpus = workdir / "corpus.jsonl"
    write_corpus(docs, corpus)
    del docs
    stack = Stack(workdir, group="neardup-bench-check", settings=WORKER_SETTINGS)
    try:
        redis = stack.redis = services.start_redis(workdir / "services")
        stack.broker = services.start_broker(workdir / "services")
        say(f"filling the index: neardup dedup of {args.docs:,} documents...")
        # as a user fills an index, start-up included; its summary goes to stderr
        argv = [str(NEARDUP), "dedup", str(corpus), "--store", redis.url, "--no-progress"]
        started = time.perf_counter()
        done = subprocess.run([*argv, "-o", os.devnull], stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"neardup dedup exited with {done.returncode}")
        fill_s = time.perf_counter() - started
        say(f"filled in {fill_s:.1f} s ({args.docs / fill_s:,.0f} docs/s)")
        say("starting the worker...")
        asyncio.run(create_topics(stack.broker.bootstrap, stack.topics().all, 1))
        worker = stack.start_worker()
        worker.wait_ready(timeout_s=90)
        worker_env = {k: v for k, v in worker.env.items() if k in WORKER_SETTINGS}
        http, worker_cpu = asyncio.run(http_checks(worker, warmup, timed))
        idle = idle_worker(worker)
        spied = [timed[i % len(timed)] for i in range(args.profile_requests)]
        worker_profile = spied_checks(stack, spied)
        stack.stop_workers()  # idle, but its timers and fetches would share the cores
        local = asyncio.run(in_process(redis.url, warmup, timed))
    finally:
        stack.stop()
        corpus.unlink(missing_ok=True)
    return {
        "redis_version": redis.version,
        "redis_binary": redis.binary.name,
        "worker_env": worker_env,
        "fill": {"seconds": fill_s, "docs_per_s": args.docs / fill_s, "indexed": local["indexed"]},
        "http": {**summary(http, timed), "worker_cpu_ms_per_check": worker_cpu},
        "idle_worker": idle,
        "worker_profile": worker_profile,
        "in_process": {
            **summary(local["run"], timed),
            "redis_round_trips_per_check": local["round_trips"],
        },
        "profile": local["profile"],
    }


def target(result: dict[str, Any]) -> dict[str, Any]:
    """Met or missed, or not applicable when the run's index or texts are not the target's."""
    http = result["http"]
    applies = result["docs"] >= TARGET["docs"] and result["words"] == TARGET["words"]
    met = http["p50_ms"] <= TARGET["p50_ms"] and http["p99_ms"] <= TARGET["p99_ms"]
    return {**TARGET, "applies": applies, "met": met if applies else None}


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "check",
        __doc__,
        docs=(100_000, "indexed articles"),
        requests=(2_000, "timed checks"),
        words=(300, "words per text"),
        profile_requests=(1_000, "checks of a second HTTP pass, py-spy on the worker (0: none)"),
    )
    args = parser.parse_args(argv)
    if args.docs < 1 or args.requests < 1 or args.words < 10 or args.profile_requests < 0:
        parser.error("need --docs >= 1, --requests >= 1, --words >= 10, --profile-requests >= 0")
    cli.sigterm_unwinds()
    started = time.perf_counter()
    busy = other_load()
    workdir = Path(tempfile.mkdtemp(prefix="neardup-bench-check-"))
    say(f"other processes kept {busy:.2f} cores busy; work directory {workdir}")
    measured = cli.exits(
        "check benchmark", lambda: measure(args, workdir), RuntimeError, TimeoutError
    )
    if isinstance(measured, int):  # a service that did not start too
        return measured
    result: dict[str, Any] = {
        "generated": cli.now(),
        "seconds": round(time.perf_counter() - started, 1),
        "command": cli.command("check", argv),
        "machine": {**machine_info(PACKAGES), "cores_busy_before_run": round(busy, 2)},
        "git": git_state(),
        "docs": args.docs,
        "words": args.words,
        "requests": args.requests,
        "warmup": WARMUP,
        **measured,
    }
    result["target"] = target(result)
    from bench import check_tables  # it reads this module's constants

    cli.write(args.out, "check", result, check_tables.markdown(result))
    http = result["http"]
    say(
        f"HTTP p50 {http['p50_ms']:.2f} ms, p99 {http['p99_ms']:.2f} ms; wrote "
        f"{args.out / 'check.md'} and check.json"
    )
    return 0 if not http["failures"] and not result["in_process"]["failures"] else 1
