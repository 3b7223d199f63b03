"""A randomized fault checker, Jepsen-style: the real stack under a seeded fault schedule, judged
from the outside.

One run starts its own broker, Redis with AOF and two workers, produces the seed's workload while
its faults happen (:mod:`harness.chaos_plan`), waits (bounded) until the stack settles and hands
what an outside observer sees to :func:`harness.chaos_check.check`. A killed worker is restarted
at once; one that exits by itself is recorded and restarted until :data:`CRASH_LIMIT`.
``make chaos SEEDS="1 2 3" [BROKER=tansu]`` prints each seed's verdict and how to reproduce it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import redis
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from confluent_kafka import KafkaException

from harness import services
from harness.chaos_check import Exit, History, OffsetCheck, Out, Violation, check
from harness.chaos_index import dump_index
from harness.chaos_plan import (
    BROKERS,
    MAX_MESSAGE_BYTES,
    NAMESPACE,
    OTHER_NAMESPACE,
    Fault,
    Plan,
    describe,
    make_plan,
)
from harness.kafka import (
    LIBRDKAFKA_LOG,
    Topics,
    committed_offsets,
    create_topics,
    produce_librdkafka,
)
from harness.workers import WorkerProc, start_worker
from neardup.stream.engine.engine import Engine
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy
from neardup.stream.worker.messages import split_verdict_key

__all__ = ["CRASH_LIMIT", "Report", "main", "run_seed"]

SESSION_TIMEOUT_S = 6.0
SETTINGS = {
    "NEARDUP_KAFKA_SESSION_TIMEOUT_S": str(SESSION_TIMEOUT_S),
    "NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S": "1",
    "NEARDUP_RETRY_BACKOFF_MAX_S": "1",
    "NEARDUP_REDIS_TIMEOUT_S": "2",
    "NEARDUP_MAX_MESSAGE_BYTES": str(MAX_MESSAGE_BYTES),
    "NEARDUP_NAMESPACE": NAMESPACE,  # tombstones without a namespace header delete here
}
CRASH_LIMIT = 6  # exits of their own after which a run stops waiting for the stack
READY_S = 60.0
SETTLE_S = 50.0  # after the last message and fault: the longest wait for the expected outcomes
IDLE_S = 20.0  # no new output for this long, outcomes still missing: the stack is idle
QUIET_S = 3.0  # outcomes complete: wait this long for late repeats (zombies, replays)
OFFSETS_S = 60.0  # a restarted broker's group coordinator loads its log: read offsets this long
BROKER_BACK_S = 5.0  # a worker's exit this long after the broker is back still counts as its outage


@dataclass
class Report:
    seed: int
    plan: Plan
    violations: list[Violation]
    wall_s: float
    workdir: Path
    notes: list[str] = field(default_factory=list)
    offsets: list[OffsetCheck] = field(default_factory=list)  # one per broker restart

    @property
    def ok(self) -> bool:
        return not self.violations

    def text(self) -> str:
        head = f"seed {self.seed}: {'PASS' if self.ok else 'FAIL'} in {self.wall_s:.0f}s"
        lines = [head, describe(self.plan), *(f"  note: {n}" for n in self.notes)]
        lines += [
            f"  committed offsets across the restart at {c.at_s:.1f}s: {c.before} -> {c.after}"
            for c in self.offsets
            if not c.error
        ]
        lines += [f"  {v}" for v in self.violations]
        if not self.ok:
            again = f"make chaos SEEDS={self.seed} BROKER={self.plan.broker}"
            lines.append(f"  reproduce: {again}   (logs in {self.workdir})")
        return "\n".join(lines)


@dataclass
class _Slot:
    """One worker position: the process running in it now, and every process it ran."""

    index: int
    proc: WorkerProc | None = None
    killed: set[int] = field(default_factory=set)  # pids the schedule killed
    stopping: bool = False
    exits: list[Exit] = field(default_factory=list)


class _Run:
    def __init__(self, plan: Plan, workdir: Path, shards: int = 1) -> None:
        self.plan, self.shards = plan, shards
        self.dir = workdir
        self.redis: services.Service | None = None
        self.broker: services.Service | None = None
        self.topics: Topics | None = None
        self.slots = [_Slot(i) for i in range(plan.workers)]
        self.group = f"chaos-{plan.seed}"
        self.outputs: list[Out] = []
        self.offsets: list[OffsetCheck] = []
        self.broker_lock = asyncio.Lock()  # a restart waits for the one still under way
        self.outages: list[list[float]] = []  # [down, back] (time.monotonic()); back inf if down
        self.last_output = time.monotonic()
        self.crashes = 0
        self.last_crash = 0.0  # time.monotonic() of the last exit of its own
        self.notes: list[str] = []

    # ------------------------------------------------------------------ stack

    async def start(self) -> None:
        self.redis = await asyncio.to_thread(services.start_redis, self.dir / "redis", aof=True)
        start = services.start_kafka if self.plan.broker == "kafka" else services.start_broker
        self.broker = await asyncio.to_thread(start, self.dir / self.plan.broker)
        self.topics = Topics.named(self.broker.bootstrap, tag=f"chaos{self.plan.seed}")
        await create_topics(self.broker.bootstrap, self.topics.all, self.plan.partitions)
        await self._other_scheme()
        for slot in self.slots:
            self._spawn(slot)
        for slot in self.slots:
            assert slot.proc is not None
            await asyncio.to_thread(slot.proc.wait_ready, READY_S)

    async def _other_scheme(self) -> None:
        """A namespace indexed under another scheme (``dedup --threshold 0.95``), as any may be."""
        assert self.redis is not None
        client = aioredis.Redis.from_url(self.redis.url)
        try:
            engine = Engine(RedisIndex(client), Policy(threshold=0.95))  # banding misses 0.8
            await engine.process([Article("seed-doc", "an article " * 40, OTHER_NAMESPACE)])
        finally:
            await client.aclose()

    def _spawn(self, slot: _Slot) -> None:
        assert self.topics is not None and self.redis is not None
        settings = {**SETTINGS, "NEARDUP_SHARDS": str(self.shards)}
        slot.proc = start_worker(self.topics, self.redis.url, self.dir, self.group, **settings)
        slot.proc.name = f"worker{slot.index}-{slot.proc.port}"

    async def supervise(self) -> None:
        """Restart a worker that exited by itself (recording it), until :data:`CRASH_LIMIT`."""
        while True:
            for slot in self.slots:
                w = slot.proc
                if w is None or slot.stopping or w.proc.poll() is None:
                    continue
                if w.proc.pid in slot.killed:
                    continue  # the kill fault restarts it
                away = self.broker_away()
                tail = services.log_tail(w.log, 12)
                slot.exits.append(Exit(w.name, w.proc.returncode, False, False, tail, away))
                if away:
                    self.notes.append(
                        f"{w.name} exited by itself (code {w.proc.returncode}) while the broker "
                        "was away; restarted"
                    )
                self.crashes += 1
                self.last_crash = time.monotonic()
                slot.proc = None
                if self.crashes < CRASH_LIMIT:
                    self._spawn(slot)
            await asyncio.sleep(0.3)

    def broker_away(self) -> bool:
        """Whether the broker is down now or came back less than :data:`BROKER_BACK_S` ago."""
        now = time.monotonic()
        return any(down <= now <= back + BROKER_BACK_S for down, back in self.outages)

    # ------------------------------------------------------------------ faults

    async def fault(self, f: Fault) -> None:
        await asyncio.sleep(f.at_s)
        slot = self.slots[f.worker]
        w = slot.proc
        if f.kind == "kill" and w is not None and w.proc.poll() is None:
            slot.killed.add(w.proc.pid)
            w.proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(w.proc.wait)
            slot.exits.append(Exit(w.name, w.proc.returncode, True, False))
            self._spawn(slot)
        elif f.kind == "pause" and w is not None and w.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.proc.pid, signal.SIGSTOP)
                await asyncio.sleep(f.duration_s)
                os.kill(w.proc.pid, signal.SIGCONT)
        elif f.kind == "redis_restart" and self.redis is not None:
            await asyncio.to_thread(self.redis.restart, True)
        elif f.kind == "redis_oom" and self.redis is not None:
            await self._oom(f.duration_s)
        elif f.kind == "broker_restart" and self.broker is not None:
            async with self.broker_lock:
                await self._broker_restart(f)

    async def _broker_restart(self, f: Fault) -> None:
        """SIGKILL the broker mid-stream, keep it down ``duration_s``, start it again on the same
        port and log directory; the committed offsets are read just before and once it is back."""
        assert self.broker is not None and self.topics is not None
        try:
            before = await self._committed(10.0)
        except KafkaException as exc:  # nothing to compare with; the restart goes on
            self.notes.append(f"broker_restart: offsets before not read: {exc!r}")
            before = None
        outage = [time.monotonic(), float("inf")]
        self.outages.append(outage)
        await asyncio.to_thread(self.broker.stop, kill=True)
        await asyncio.sleep(f.duration_s)
        await asyncio.to_thread(self.broker.start)
        outage[1] = time.monotonic()
        if before is None:
            return
        deadline = time.monotonic() + OFFSETS_S
        while True:
            try:
                self.offsets.append(OffsetCheck(f.at_s, before, await self._committed(10.0)))
                return
            except KafkaException as exc:  # the coordinator may still be loading
                if time.monotonic() > deadline:
                    error = f"committed offsets not readable {OFFSETS_S:.0f}s after: {exc!r}"
                    self.offsets.append(OffsetCheck(f.at_s, before, {}, error))
                    return
                await asyncio.sleep(1.0)

    async def _committed(self, timeout_s: float) -> dict[int, int]:
        """The workers' group's committed input offsets, read by librdkafka."""
        assert self.topics is not None
        t = self.topics
        return await asyncio.to_thread(
            committed_offsets, t.bootstrap, self.group, t.input, self.plan.partitions, timeout_s
        )

    async def _oom(self, duration_s: float) -> None:
        assert self.redis is not None
        client = aioredis.Redis.from_url(self.redis.url, socket_timeout=5)
        try:
            used = int((await client.info("memory"))["used_memory"])
            await client.config_set("maxmemory-policy", "noeviction")
            await client.config_set("maxmemory", str(max(1, used // 2)))
            await asyncio.sleep(duration_s)
            await client.config_set("maxmemory", "0")
        except (redis.RedisError, OSError) as exc:  # a restart in between resets it anyway
            self.notes.append(f"redis_oom: {type(exc).__name__}: {exc}")
        finally:
            await client.aclose()

    # ------------------------------------------------------------------ traffic

    async def produce(self) -> None:
        assert self.topics is not None
        durable = self.plan.broker == "kafka"  # idempotent producers, as clients of Kafka run
        producer = AIOKafkaProducer(
            bootstrap_servers=self.topics.bootstrap,
            max_request_size=4_000_000,
            linger_ms=5,
            acks="all",
            enable_idempotence=durable,  # Tansu has no idempotent producer
        )
        await producer.start()
        started = time.monotonic()
        try:
            for m in self.plan.messages:
                delay = m.at_s - (time.monotonic() - started)
                if delay > 0:
                    await producer.flush()
                    await asyncio.sleep(delay)
                if m.codec is not None:  # in order: what aiokafka holds goes out first
                    await producer.flush()
                    item = (m.key, m.value, m.partition)
                    t = self.topics
                    await asyncio.to_thread(  # waits out a broker restart
                        produce_librdkafka, t.bootstrap, t.input, [item], m.codec, 90, durable
                    )
                    continue
                # a tombstone names its namespace in a header, as a producer that deletes does
                headers = [("namespace", NAMESPACE.encode())] if m.value is None else None
                await producer.send(
                    self.topics.input,
                    key=m.key,
                    value=m.value,
                    partition=m.partition,
                    headers=headers,
                )
            await producer.flush()
        finally:
            await producer.stop()

    async def watch(self) -> None:
        """Every record of the verdict and dead-letter topics, in partition order."""
        assert self.topics is not None
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.topics.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
            max_partition_fetch_bytes=8 * 1024 * 1024,
        )
        await consumer.start()
        names = {self.topics.verdicts: "verdicts", self.topics.dlq: "dlq"}
        try:
            consumer.assign(
                [TopicPartition(t, p) for t in names for p in range(self.plan.partitions)]
            )
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                for tp, msgs in batch.items():
                    for m in msgs:
                        self.outputs.append(
                            Out(names[tp.topic], tp.partition, m.offset, m.key, m.value)
                        )
                if batch:
                    self.last_output = time.monotonic()
        finally:
            await consumer.stop()

    def missing(self) -> list[str]:
        """What the plan still expects to see (empty: the stack has done everything)."""
        verdict_ids, tombs, dlq_keys = set(), set(), []
        for o in self.outputs:
            key = o.key or b""
            if o.topic == "dlq":
                dlq_keys.append(key)
            elif o.value is None:
                tombs.add(split_verdict_key(key)[1])
            else:
                verdict_ids.add(split_verdict_key(key)[1])
        plan = self.plan
        left = [f"verdict {i}" for i in plan.articles if i not in plan.deleted | verdict_ids]
        left += [f"verdict tombstone {i}" for i in plan.deleted if i not in tombs]
        left += [
            f"dead letter {p.name}"
            for p in plan.poison
            if not any(k.startswith(p.key_prefix) for k in dlq_keys)
        ]
        return left

    async def settle(self) -> bool:
        """Until every expected outcome is seen (then :data:`QUIET_S` more), the outputs stop for
        :data:`IDLE_S`, or :data:`SETTLE_S` pass; False if the stack never settled."""
        began = time.monotonic()  # the last fault just ended: idle counts from here at the most
        deadline = began + SETTLE_S
        while time.monotonic() < deadline:
            if self.crashes >= CRASH_LIMIT:
                self.notes.append(
                    f"the stack cannot quiesce: workers exited by themselves {self.crashes} "
                    f"times (crash loop); still missing {len(self.missing())} outcomes"
                )
                return False
            left = self.missing()
            if not left:
                await asyncio.sleep(QUIET_S)
                return True
            if time.monotonic() - max(self.last_output, began) > IDLE_S:
                if self.last_crash > self.last_output:  # not idle: down, restarting, down again
                    self.notes.append(
                        f"the stack cannot quiesce: no output for {IDLE_S:.0f}s while workers "
                        f"exited by themselves ({self.crashes} exits in all); still missing "
                        f"{len(left)} outcomes: {left[:8]}"
                    )
                    return False
                self.notes.append(f"idle with {len(left)} outcomes missing: {left[:8]}")
                return True
            await asyncio.sleep(0.5)
        self.notes.append(f"still busy after {SETTLE_S:.0f}s; missing {self.missing()[:8]}")
        return False

    async def stop(self) -> list[Exit]:
        live = []
        for slot in self.slots:
            slot.stopping = True
            w = slot.proc
            if w is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(w.proc.pid, signal.SIGCONT)
                live.append((slot, w))
        running = {id(w): w.proc.poll() is None for _slot, w in live}
        for _slot, w in live:
            if running[id(w)]:
                w.proc.send_signal(signal.SIGTERM)
        for slot, w in live:
            await asyncio.to_thread(w.stop, 20.0)
            if not running[id(w)]:  # exited by itself after the supervisor's last look
                tail = services.log_tail(w.log, 12)
                slot.exits.append(Exit(w.name, w.proc.returncode, False, False, tail))
            else:
                slot.exits.append(Exit(w.name, w.proc.returncode, False, True))
        return [e for slot in self.slots for e in slot.exits]

    def close(self) -> None:
        for s in (self.broker, self.redis):
            if s is not None:
                s.stop(kill=True)


async def run_seed(
    seed: int,
    workdir: Path,
    skip: frozenset[str] = frozenset(),
    broker: str = "kafka",
    shards: int = 1,
) -> Report:
    """One seeded run on ``broker`` (``kafka`` or ``tansu``), its namespace in ``shards`` shard
    groups (1: one slot); every wait is bounded."""
    started = time.monotonic()
    plan = make_plan(seed, session_timeout_s=SESSION_TIMEOUT_S, skip=skip, broker=broker)
    await asyncio.to_thread(workdir.mkdir, parents=True, exist_ok=True)
    with _client_log(workdir / "clients.log"):
        return await _run_seed(plan, workdir, started, shards)


@contextlib.contextmanager
def _client_log(path: Path) -> Iterator[None]:
    """The run's Kafka clients log into ``path``: a broker restart makes them warn many times a
    second."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    clients = [logging.getLogger("aiokafka"), LIBRDKAFKA_LOG]
    for log in clients:
        log.addHandler(handler)
        log.propagate = False
    try:
        yield
    finally:
        for log in clients:
            log.removeHandler(handler)
            log.propagate = True
        handler.close()


async def _run_seed(plan: Plan, workdir: Path, started: float, shards: int) -> Report:
    run = _Run(plan, workdir, shards)
    tasks: list[asyncio.Task[None]] = []
    try:
        await run.start()
        tasks = [asyncio.create_task(run.watch()), asyncio.create_task(run.supervise())]
        await asyncio.gather(run.produce(), *(run.fault(f) for f in plan.faults))
        quiesced = await run.settle()
        for t in tasks:
            if t.done():
                t.result()  # the watcher or supervisor failed: say so, not a silent pass
        exits = await run.stop()
        assert run.redis is not None
        url = run.redis.url
        index = {NAMESPACE: await asyncio.to_thread(dump_index, url, NAMESPACE, shards=shards)}
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        for slot in run.slots:
            if slot.proc is not None and slot.proc.proc.poll() is None:
                slot.proc.proc.kill()
        run.close()
    history = History(
        articles=dict(plan.articles),
        groups=plan.groups,
        deleted=set(plan.deleted),
        poison=list(plan.poison),
        outputs=run.outputs,
        index=index,
        exits=exits,
        quiesced=quiesced,
        quiesce_note="; ".join(run.notes),
        offsets=run.offsets,
    )
    await asyncio.to_thread(_save_outputs, run.outputs, workdir / "outputs.jsonl")
    elapsed = time.monotonic() - started
    return Report(plan.seed, plan, check(history), elapsed, workdir, run.notes, run.offsets)


def _save_outputs(outputs: Sequence[Out], path: Path) -> None:
    """What the topics held, for the post-mortem of a failing seed (keys cut to 200 bytes)."""
    with path.open("wb") as f:
        for o in outputs:
            value = None if o.value is None else o.value.decode("utf-8", "replace")
            key = (o.key or b"")[:200].decode("utf-8", "replace")
            row = {"topic": o.topic, "partition": o.partition, "offset": o.offset}
            f.write(orjson.dumps({**row, "key": key, "value": value}) + b"\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--broker", choices=BROKERS, default="kafka", help="default: kafka")
    parser.add_argument("--workdir", type=Path, default=None, help="logs (default: a temp dir)")
    skip = "poison or fault kinds to leave out (by name)"
    parser.add_argument("--skip", nargs="*", default=[], help=skip)
    parser.add_argument("--shards", type=int, default=1, help="the namespace's shard groups")
    args = parser.parse_args(argv)
    base = args.workdir or Path(tempfile.mkdtemp(prefix="neardup-chaos-"))
    failed = []
    for seed in args.seeds:
        where = base / f"seed-{seed}-{args.broker}"
        report = asyncio.run(run_seed(seed, where, frozenset(args.skip), args.broker, args.shards))
        print(report.text(), flush=True)
        if not report.ok:
            failed.append(seed)
    print(f"failing seeds: {' '.join(map(str, failed)) or 'none'} (of {len(args.seeds)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
