"""The rig the streaming benchmarks stand on: servers, workers, a producer, a verdict reader.

:class:`Stack` owns the processes (Redis, Tansu or Apache Kafka, ``neardup worker`` subprocesses,
py-spy) and stops them however a run ends (:func:`run_on_stack`). :class:`Rig` owns the client
side (producer, :class:`~harness.kafka.VerdictSink`, a Redis client) and what every phase reads
before and after: each process's CPU, the workers' metrics, Redis ``INFO commandstats`` and the
rest of the machine's load. :meth:`Rig.wait_settled` proves each partition has one owner first.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
import redis.asyncio as aioredis
from aiokafka import AIOKafkaProducer

from bench.markdown import console
from bench.readings import machine_busy_seconds, own_cpu_seconds
from harness import services
from harness.corpus import Doc
from harness.kafka import Topics, VerdictSink, create_topics
from harness.report import cpu_seconds
from harness.workers import WorkerProc, start_worker, stop_workers
from neardup.stream.worker.config import Settings

__all__ = ["BrokerPlan", "Rig", "Stack", "article", "kafka_missing", "kafka_plan", "run_on_stack"]

T = TypeVar("T")
WARMUP_DOCS = 512
BROKERS = ("kafka", "tansu")
out = console(150)


@dataclass(frozen=True)
class BrokerPlan:
    """What a run on one broker sets besides the shared workload."""

    kind: str
    worker_settings: Mapping[str, str]  # on top of the run's NEARDUP_* settings
    sink_fetch: tuple[int, int]  # the verdict reader's (fetch wait ms, fetch min bytes)
    linger_ms: int = 1  # the producer's
    diag_suffix: str = ""  # the diagnostic worker's own input topic and group, "" for the run's


def kafka_plan() -> BrokerPlan:
    """Apache Kafka runs the product's group timeouts (on Tansu harness.workers.LOCAL's short
    ones: its JoinGroup waits half of the session) and aiokafka's default fetch wait."""
    fields = Settings.model_fields
    names = ("kafka_session_timeout_s", "kafka_heartbeat_interval_s")
    defaults = {f"NEARDUP_{name.upper()}": str(fields[name].default) for name in names}
    return BrokerPlan("kafka", defaults, (500, 1))


def kafka_missing(kind: str = "kafka") -> str | None:
    """Why ``kind`` cannot run here (no Java, no ``make kafka`` jars), or None."""
    if kind == "kafka":
        try:
            services.find_java(), services.find_kafka_libs()
        except services.ServiceError as exc:
            return str(exc)
    return None


def article(doc: Doc, key: str, namespace: str, sent_ns: int | None = None) -> bytes:
    """The input JSON of one article; ``bench_sent_ns`` (ignored by the parser) for latency."""
    obj: dict[str, Any] = {"id": key, "text": doc["text"], "namespace": namespace}
    if sent_ns is not None:
        obj["bench_sent_ns"] = sent_ns
    return orjson.dumps(obj)


@dataclass
class Stack:
    """Everything a run started; :meth:`stop` ends all of it (idempotent). ``settings``: the
    ``NEARDUP_*`` every worker gets on top of :func:`harness.workers.worker_env`."""

    workdir: Path
    broker_kind: str = "tansu"
    prefix: str = "bench."
    group: str = "neardup-bench"
    settings: Mapping[str, str] = field(default_factory=dict)
    redis: services.Service | None = None
    broker: services.Service | None = None
    workers: list[WorkerProc] = field(default_factory=list)
    first: WorkerProc | None = None  # what the report describes (a diagnostic worker may differ)
    started_workers: int = 0
    helpers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def topics(self, input_suffix: str = "") -> Topics:
        """The run's topics; ``input_suffix`` gives a worker set an input topic of its own."""
        assert self.broker is not None
        base = Topics.named(self.broker.bootstrap, self.prefix)
        return Topics(base.bootstrap, base.input + input_suffix, base.verdicts, base.dlq)

    def start_worker(self, *, input_suffix: str = "", **extra: str) -> WorkerProc:
        """One more worker; with ``input_suffix`` it reads its own input topic in its own group
        (on Tansu a group whose members just stopped keeps a newcomer's JoinGroup waiting)."""
        assert self.redis is not None
        n = self.started_workers
        self.started_workers += 1
        group = self.group + input_suffix.replace(".", "-")
        settings = {**self.settings, **extra}
        topics = self.topics(input_suffix)
        worker = start_worker(topics, self.redis.url, self.workdir, group, WorkerProc, **settings)
        worker.name = f"worker-{n}"
        self.workers.append(worker)
        self.first = self.first or worker
        return worker

    def start_helper(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        """A helper process (py-spy), killed by :meth:`stop` if still running."""
        with (self.workdir / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.helpers.append(proc)
        return proc

    def stop_workers(self) -> None:
        stop_workers(self.workers, timeout_s=15.0)
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

    def describe(self) -> dict[str, Any]:
        """What a report says about the servers and the first worker: its environment (ports
        masked), topics, group, and the settings the tables quote, defaults included."""
        assert self.redis is not None and self.broker is not None and self.first is not None
        w = self.first
        per_worker = ("NEARDUP_WEB_PORT", "NEARDUP_DATA_DIR")  # the tables print placeholders
        env = {
            k: re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", v)
            for k, v in w.env.items()
            if k not in per_worker
        }
        names = ("NEARDUP_INPUT_TOPIC", "NEARDUP_VERDICT_TOPIC", "NEARDUP_DLQ_TOPIC")
        return {
            "worker_env": env,
            "topics": [w.env[k] for k in names],
            "group": w.env["NEARDUP_CONSUMER_GROUP"],
            "batch_size": w.setting("batch_size"),
            "batch_within_ms": w.setting("batch_within_ms"),
            "fetch_max_wait_ms": w.setting("kafka_fetch_max_wait_ms"),
            "broker": self.broker_kind,
            "broker_version": services.kafka_version()
            if self.broker_kind == "kafka"
            else services.binary_version(self.broker.binary),
            "redis_binary": self.redis.binary.name,
            "redis_version": self.redis.version,
        }


def run_on_stack(stack: Stack, main: Callable[[], Coroutine[Any, Any, T]]) -> T | None:
    """Start Redis and the broker, run ``main()``, and stop everything the stack started
    however it ends (SIGTERM unwinds like Ctrl-C). ``None`` when interrupted."""

    def on_sigterm(signum: int, frame: Any) -> None:
        raise SystemExit(143)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        name = "Apache Kafka" if stack.broker_kind == "kafka" else "Tansu"
        out.print(f"[bold]starting Redis and {name} (logs in {stack.workdir})...")
        stack.redis = services.start_redis(stack.workdir / "services")
        start = services.start_kafka if stack.broker_kind == "kafka" else services.start_broker
        stack.broker = start(stack.workdir / "services")
        return asyncio.run(main())
    except KeyboardInterrupt:
        out.print("[yellow]interrupted: stopping everything")
        return None
    finally:
        stack.stop()
        signal.signal(signal.SIGTERM, previous)


@dataclass
class Rig:
    stack: Stack
    docs: Sequence[Doc]
    partitions: int
    producer: AIOKafkaProducer | None = None
    sink: VerdictSink | None = None
    redis: aioredis.Redis | None = None
    probes: int = 0
    settle: list[dict[str, Any]] = field(default_factory=list)

    async def open(
        self,
        linger_ms: int,
        *,
        sink_fetch: tuple[int, int] = (10, 1),
        input_suffixes: Sequence[str] = (".diag",),
    ) -> None:
        """Topics (an input topic more per ``input_suffixes``, see :meth:`Stack.start_worker`),
        then the producer, the verdict sink and a Redis client; ``sink_fetch`` = (fetch wait ms,
        fetch min bytes) of the sink's consumer."""
        topics = self.stack.topics()
        extra = [topics.input + suffix for suffix in input_suffixes if suffix]
        await create_topics(topics.bootstrap, [*topics.all, *extra], self.partitions)
        self.producer = AIOKafkaProducer(
            bootstrap_servers=topics.bootstrap,
            linger_ms=linger_ms,
            max_batch_size=256 * 1024,
            acks=1,
        )
        wait_ms, min_bytes = sink_fetch
        self.sink = VerdictSink(
            topics, self.partitions, fetch_max_wait_ms=wait_ms, fetch_min_bytes=min_bytes
        )
        assert self.stack.redis is not None
        self.redis = aioredis.Redis.from_url(self.stack.redis.url)
        await self.producer.start()
        await self.sink.start()

    async def close(self) -> None:
        """Undo :meth:`open`, whatever part of it ran."""
        if self.sink is not None:
            await self.sink.stop()
        if self.producer is not None:
            await self.producer.stop()
        if self.redis is not None:
            await self.redis.aclose()

    @property
    def topic(self) -> str:
        """The input topic of the running workers."""
        return self.stack.workers[0].env["NEARDUP_INPUT_TOPIC"]

    def verdicts(self) -> VerdictSink:
        assert self.sink is not None
        return self.sink

    def send(self) -> AIOKafkaProducer:
        assert self.producer is not None
        return self.producer

    def cpu(self) -> dict[str, float | None]:
        """CPU seconds so far of every process of the run, this client included."""
        s = self.stack
        res = {w.name: cpu_seconds(w.proc.pid) for w in s.workers}
        res["broker"] = cpu_seconds(s.broker.pid if s.broker else None)
        res["redis"] = cpu_seconds(s.redis.pid if s.redis else None)
        res["client"] = own_cpu_seconds()
        for i, p in enumerate(s.helpers):
            res[f"py-spy-{i}"] = cpu_seconds(p.pid)
        return res

    async def metrics(self) -> dict[str, dict[str, float]]:
        workers = self.stack.workers
        got = await asyncio.gather(*(asyncio.to_thread(w.metrics) for w in workers))
        return {w.name: m for w, m in zip(workers, got, strict=True)}

    async def commandstats(self) -> dict[str, tuple[int, int]]:
        """Redis ``INFO commandstats``: command -> (calls, microseconds)."""
        assert self.redis is not None
        info = await self.redis.info("commandstats")
        return {
            k.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
            for k, v in info.items()
            if isinstance(v, dict)
        }

    async def snapshot(self) -> dict[str, Any]:
        return {
            "machine": machine_busy_seconds(),
            "cpu": self.cpu(),
            "metrics": await self.metrics(),
            "redis": await self.commandstats(),
            "t": time.monotonic(),
        }

    async def deltas(self, s0: Mapping[str, Any], n_articles: int) -> dict[str, Any]:
        """What the run's processes, Redis and the rest of the machine did since ``s0``."""
        s1 = await self.snapshot()
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
        workers: dict[str, dict[str, float | None]] = {}
        for w, after in s1["metrics"].items():  # articles, batches, candidates, retries
            d = {k: after[k] - s0["metrics"].get(w, {}).get(k, 0.0) for k in after}
            batches = d.get("neardup_batch_seconds_count", 0.0)
            articles = d.get("neardup_articles_in_total", 0.0)
            cands = d.get("neardup_candidates_per_article_count", 0.0)
            handle_s = d.get("neardup_batch_seconds_sum", 0.0)
            workers[w] = {
                "articles_in": articles,
                "batches": batches,
                "mean_batch": articles / batches if batches else None,
                "mean_batch_ms": handle_s / batches * 1e3 if batches else None,
                "handle_s": handle_s,
                "mean_candidates": d.get("neardup_candidates_per_article_sum", 0.0) / cands
                if cands
                else None,
                "retries": d.get("neardup_index_retries_total", 0.0),
            }
        other = s1["machine"] - s0["machine"] - sum(cpu.values())
        return {
            "wall_s": round(wall, 2),
            "cpu_s": cpu,
            "cores_busy": round(sum(cpu.values()) / wall, 2) if wall > 0 else None,
            "other_processes_cores": round(max(other, 0.0) / wall, 2) if wall > 0 else None,
            "worker_metrics": workers,
            "redis_commands": redis_cmds,
        }

    async def _owner_of(self, partition: int) -> str | None:
        """Send one article to ``partition``; the worker whose ``articles_in`` moved owns it."""
        before = await self.metrics()
        key = f"probe-{self.probes:06d}"
        self.probes += 1
        value = article(self.docs[self.probes % len(self.docs)], key, "bench-probe")
        await self.send().send_and_wait(self.topic, value, key=key.encode(), partition=partition)
        if not await self.verdicts().wait("probe", self.probes, timeout_s=30):
            return None
        after = await self.metrics()
        name = "neardup_articles_in_total"
        moved = [w for w in after if after[w].get(name, 0) > before.get(w, {}).get(name, 0)]
        return moved[0] if len(moved) == 1 else None

    async def wait_settled(self, timeout_s: float = 90.0) -> dict[str, Any]:
        """Probe every partition until each has one owner, all workers own some, twice alike."""
        started = time.monotonic()
        n_workers = len(self.stack.workers)
        previous: list[str | None] | None = None
        rounds = 0
        while time.monotonic() - started < timeout_s:
            owners = [await self._owner_of(p) for p in range(self.partitions)]
            rounds += 1
            complete = None not in owners and len(set(owners)) == min(n_workers, self.partitions)
            if complete and owners == previous:
                info = {
                    "workers": n_workers,
                    "partition_owners": [int(str(o).rsplit("-", 1)[1]) for o in owners],
                    "seconds": round(time.monotonic() - started, 1),
                    "probe_rounds": rounds,
                }
                self.settle.append(info)
                return info
            previous = owners if complete else None
            await asyncio.sleep(1.0 if complete else 0.5)
        raise RuntimeError(f"partition assignment did not settle within {timeout_s:.0f} s")

    async def warmup(self, phase: str, n: int = WARMUP_DOCS) -> None:
        """``n`` articles through the workers before anything is measured."""
        for i in range(n):
            key = f"{phase}-{i:06d}"
            value = article(self.docs[i % len(self.docs)], key, f"bench-{phase}")
            await self.send().send(self.topic, value, key=key.encode())
        await self.send().flush()
        if not await self.verdicts().wait(phase, n):
            raise RuntimeError("warm-up verdicts did not arrive")
