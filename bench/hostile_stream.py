"""The stream under a hostile client: one worker on Apache Kafka and Redis takes articles at a
steady rate while a client sends it worst-case ``/check`` requests, one after another.

Measured with and without the attack: the stream's verdict latency (p50, p99) and how long
``/health`` takes to answer (probed every 100 ms); then the worker's memory (RSS) before and
after 10,000 hostile requests (each distinct: invented namespaces, one long word, many short
lines). Targets: p99 rises by less than 50 ms under the attack, every probe answered, and the
worker within 50 MB of where it started.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import orjson
import psutil

from bench.rig import Stack, run_on_stack
from bench.stream_bench import WORKER_SETTINGS, StreamBench, plan
from harness.corpus import Doc
from harness.report import rss_mb
from harness.workers import WorkerProc, wait_ready

RATE = 100.0  # articles a second, well within one worker's pace
SECONDS = 20.0
REQUESTS = 10_000
P99_RISE_MS = 50.0
RSS_GROWTH_MB = 50.0


def target(what: str, value: Any, goal: str, met: bool, worst: str) -> dict[str, Any]:
    """A row of the targets table."""
    return {"what": what, "value": value, "target": goal, "met": met, "worst": worst}


def heavy(i: int) -> bytes:
    """A costly check: 200 KB of distinct two-word lines, explained against itself's copy."""
    text = "".join(f"w{i}x{k} y{k}\n" for k in range(20_000))
    return orjson.dumps({"text": text, "register": False})


def hostile(i: int) -> bytes:
    """A small hostile check, distinct each time: an invented namespace, one long word (a
    few-word text the facts cache would have kept whole), short lines."""
    text = f"{'z' * 4000}{i} rises\n" + "".join(f"a{i} b{k}\n" for k in range(50))
    return orjson.dumps({"text": text, "namespace": f"invented-{i}", "register": False})


def tree_rss_mb(pid: int) -> float:
    """RSS of a process and its children (the worker and its check process), MB."""
    try:
        kids = [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        kids = []
    return round(sum(rss_mb(p) or 0.0 for p in [pid, *kids]), 1)


async def _post(session: aiohttp.ClientSession, url: str, body: bytes) -> int:
    headers = {"Content-Type": "application/json"}  # the run's worker sets no token
    async with session.post(url, data=body, headers=headers) as resp:
        await resp.read()
        return resp.status


async def _probe_health(worker: WorkerProc, stop: asyncio.Event) -> list[float]:
    """``/health`` every 100 ms until ``stop``: each answer's ms (inf: no answer in 5 s)."""
    out: list[float] = []
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                async with session.get(worker.url("/health")) as resp:
                    await resp.read()
                out.append((time.perf_counter() - started) * 1e3)
            except (aiohttp.ClientError, TimeoutError):
                out.append(float("inf"))
            await asyncio.sleep(0.1)
    return out


async def _attack(worker: WorkerProc, stop: asyncio.Event) -> int:
    """Heavy checks one after another until ``stop``; how many were answered 200."""
    ok, i = 0, 0
    async with aiohttp.ClientSession() as session:
        while not stop.is_set():
            ok += await _post(session, worker.url("/check"), heavy(i)) == 200
            i += 1
    return ok


async def _phase(bench: StreamBench, worker: WorkerProc, tag: str, attack: bool) -> dict[str, Any]:
    stop = asyncio.Event()
    health = asyncio.create_task(_probe_health(worker, stop))
    attacker = asyncio.create_task(_attack(worker, stop)) if attack else None
    lat = await bench.latency(tag)
    stop.set()
    probes = await health
    checks = await attacker if attacker is not None else 0
    answered = [p for p in probes if p != float("inf")]
    return {
        "p50_ms": lat.get("p50_ms"),
        "p99_ms": lat.get("p99_ms"),
        "achieved_rate": lat.get("achieved_rate"),
        "health_probes": len(probes),
        "health_unanswered": len(probes) - len(answered),
        "health_p99_ms": float(np.percentile(answered, 99)) if answered else None,
        "health_max_ms": max(answered) if answered else None,
        "heavy_checks_answered": checks,
    }


async def _drive(bench: StreamBench, requests: int) -> dict[str, Any]:
    try:
        await bench.open(linger_ms=1, sink_fetch=bench.plan.sink_fetch, input_suffixes=[])
        worker = bench.stack.start_worker()
        await wait_ready(bench.stack.workers)
        await bench.wait_settled()
        await bench.warmup("warm")
        calm = await _phase(bench, worker, "calm", attack=False)
        attacked = await _phase(bench, worker, "attack", attack=True)
        rss_start = tree_rss_mb(worker.proc.pid)
        started, ok = time.perf_counter(), 0
        async with aiohttp.ClientSession() as session:
            for i in range(requests):
                ok += await _post(session, worker.url("/check"), hostile(i)) == 200
        rss_end = tree_rss_mb(worker.proc.pid)
        return {
            "calm": calm,
            "attack": attacked,
            "memory": {
                "requests": requests,
                "answered_200": ok,
                "seconds": round(time.perf_counter() - started, 1),
                "rss_before_mb": rss_start,
                "rss_after_mb": rss_end,
            },
        }
    finally:
        await bench.close()


def run(docs: list[Doc], workdir: Path, requests: int = REQUESTS) -> dict[str, Any] | None:
    """The whole run on Apache Kafka; None when interrupted."""
    p = plan("kafka")
    settings = {**WORKER_SETTINGS, **p.worker_settings}
    stack = Stack(workdir / "kafka", broker_kind="kafka", settings=settings)
    bench = StreamBench(stack, docs, 1, plan=p, rate=RATE, seconds=SECONDS)
    got = run_on_stack(stack, lambda: _drive(bench, requests))
    if got is None:
        return None
    calm, attacked, mem = got["calm"], got["attack"], got["memory"]
    rise = (attacked["p99_ms"] or 0.0) - (calm["p99_ms"] or 0.0)
    growth = (mem["rss_after_mb"] or 0.0) - (mem["rss_before_mb"] or 0.0)
    unanswered = attacked["health_unanswered"]
    got["targets"] = [
        target(
            "stream p99 verdict latency rise under the attack, ms",
            round(rise, 1),
            f"< {P99_RISE_MS:.0f}",
            rise < P99_RISE_MS,
            "heavy",
        ),
        target(
            "/health probes unanswered under the attack", unanswered, "0", unanswered == 0, "heavy"
        ),
        target(
            f"worker RSS growth over {mem['requests']:,} hostile requests, MB",
            round(growth, 1),
            f"<= {RSS_GROWTH_MB:.0f}",
            growth <= RSS_GROWTH_MB,
            "hostile",
        ),
    ]
    return got


__all__ = ["run", "target"]
