"""At-least-once against faust's ``exactly_once`` on Apache Kafka: the cost, and SIGKILLed workers.

One worker at a time on :mod:`bench.rig`. **Throughput**: per round, one worker per guarantee on
its own input topic (order alternated against load drift), ``--docs`` articles at once; medians
compared. **Kills**: paced articles while the worker is SIGKILLed ``--kills`` times 1.5-3.5 s after
ready (faust commits every 2.8 s: a transaction is open) and restarted; once all is committed, a
``read_committed`` consumer counts articles with 2+ verdicts and copy groups without one original.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import cli
from bench.readings import git_state, machine_info, other_load
from bench.rig import Stack, kafka_missing, out, run_on_stack
from bench.stream_bench import StreamBench
from harness.corpus import Doc, generate, groups_of_copies
from harness.kafka import committed_offsets, end_offsets_total, make_topics, read_librdkafka
from harness.workers import WorkerProc, start_worker, wait_ready
from neardup.stream.worker.messages import split_verdict_key

GUARANTEES = ("at_least_once", "exactly_once")
SUFFIX = {"at_least_once": ".alo", "exactly_once": ".eos"}
PACKAGES = ("faust-streaming", "aiokafka", "confluent-kafka", "redis")
WORKER_SETTINGS = {"NEARDUP_LOG_LEVEL": "warning"}
KILL_RATE = 300.0  # articles/s while killing: well under one worker's rate, so it keeps up


async def guaranteed(bench: StreamBench, guarantee: str, phase: str, n: int) -> dict[str, Any]:
    """A throughput phase (:meth:`StreamBench.throughput`) as the tables show it."""
    tp = await bench.throughput(phase, n)
    cpu = tp["cpu_s"]
    workers = sum(v for k, v in cpu.items() if k.startswith("worker"))
    return {
        "guarantee": guarantee,
        "phase": phase,
        "articles": n,
        "complete": tp["complete"],
        "rate": tp["rate"],
        "end_to_end_s": tp["end_to_end_s"] if tp["verdicts"] else None,
        "worker_cpu_ms_per_article": workers * 1e3 / n,
        "broker_cpu_ms_per_article": (cpu.get("broker") or 0.0) * 1e3 / n,
        "repeated_verdicts": tp["repeated_verdicts"],
        "other_processes_cores": tp["other_processes_cores"],
    }


async def measure(bench: StreamBench, n: int, rounds: int) -> None:
    stack = bench.stack
    await bench.open(linger_ms=1, sink_fetch=(500, 1), input_suffixes=list(SUFFIX.values()))
    try:
        for r in range(rounds):
            order = GUARANTEES if r % 2 == 0 else GUARANTEES[::-1]
            for g in order:
                stack.start_worker(input_suffix=SUFFIX[g], PROCESSING_GUARANTEE=g)
                await wait_ready(stack.workers)
                await bench.wait_settled()
                tag = f"r{r}{SUFFIX[g][1:]}"
                await bench.warmup(f"{tag}warm")
                res = await guaranteed(bench, g, f"{tag}tp", n)
                bench.phases.append(res)
                out.print(
                    f"  round {r + 1}, {g}: {res['rate']:,.0f} articles/s, "
                    f"worker {res['worker_cpu_ms_per_article']:.2f} CPU ms/article"
                )
                await asyncio.to_thread(stack.stop_workers)
    finally:
        await bench.close()


def kill_articles(ns: str, n_groups: int, partitions: int) -> tuple[list[list[str]], list[Any]]:
    """Groups of three near-copies, group ``G`` on partition ``G % partitions`` (in order)."""
    groups = groups_of_copies(n_groups, 3, seed=53)
    items = [
        (a["id"].encode(), json.dumps({**a, "namespace": ns}).encode(), g % partitions)
        for g, group in enumerate(groups)
        for a in group
    ]
    return [[a["id"] for a in group] for group in groups], items


async def paced(bootstrap: str, topic: str, items: Sequence[Any], rate: float) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    await producer.start()
    try:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i, (key, value, partition) in enumerate(items):
            await asyncio.sleep(max(0.0, start + i / rate - loop.time()))
            await producer.send(topic, value, key=key, partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


async def wait_all_committed(bootstrap: str, group: str, topic: str, want: Counter[int]) -> bool:
    for _ in range(600):
        got = await asyncio.to_thread(committed_offsets, bootstrap, group, topic, len(want))
        if all(got.get(p, -1) >= n for p, n in want.items()):
            return True
        await asyncio.sleep(0.2)
    return False


async def kills(stack: Stack, guarantee: str, n_kills: int, partitions: int) -> dict[str, Any]:
    """The kill scenario of the module docstring for one guarantee."""
    assert stack.broker is not None and stack.redis is not None
    bootstrap = stack.broker.bootstrap
    topics = await make_topics(bootstrap, partitions)
    ns = f"kill-{guarantee}-{uuid.uuid4().hex[:6]}"
    seconds = 2.0 + n_kills * 14.0  # a restart waits out the dead member's 10 s session
    groups, items = kill_articles(ns, max(1, round(KILL_RATE * seconds / 3)), partitions)
    group = f"g-{ns}"
    env = {**WORKER_SETTINGS, "PROCESSING_GUARANTEE": guarantee}
    rng = random.Random(f"{guarantee}-{n_kills}")
    workers: list[WorkerProc] = []
    start = (topics, stack.redis.url, stack.workdir, group)
    killed_at: list[float] = []
    try:
        workers.append(start_worker(*start, **env))
        await asyncio.to_thread(workers[-1].wait_ready)
        producing = asyncio.create_task(paced(bootstrap, topics.input, items, KILL_RATE))
        t0 = time.monotonic()
        for _ in range(n_kills):
            await asyncio.sleep(rng.uniform(1.5, 3.5))
            workers[-1].proc.kill()
            await asyncio.to_thread(workers[-1].proc.wait)
            killed_at.append(round(time.monotonic() - t0, 1))
            workers.append(start_worker(*start, **env))
            await asyncio.to_thread(workers[-1].wait_ready, 90)
        await producing
        want = Counter(p for *_, p in items)
        done = await wait_all_committed(bootstrap, group, topics.input, want)
        ids = {i for g in groups for i in g}
        written = await asyncio.to_thread(end_offsets_total, bootstrap, topics.verdicts, partitions)
        pairs = await asyncio.to_thread(
            read_librdkafka,
            bootstrap,
            topics.verdicts,
            lambda got: len(got) >= written,  # fewer if some were aborted: then after 30 s
            30,
            "read_committed",
        )
    finally:
        for w in workers:
            w.stop()
    counts = Counter(split_verdict_key(k or b"")[1] for k, _ in pairs)
    originals: dict[str, str] = {}
    for _, value in pairs:
        v = json.loads(value or b"{}")
        originals.setdefault(v["id"], v["verdict"])
    bad_groups = sum(1 for g in groups if sum(originals.get(i) == "original" for i in g) != 1)
    return {
        "guarantee": guarantee,
        "articles": len(items),
        "kills": n_kills,
        "killed_at_s": killed_at,
        "all_committed": done,
        "verdicts_read_committed": len(pairs),
        "articles_with_a_verdict": sum(1 for i in ids if counts[i]),
        "articles_with_two_or_more": sum(1 for i in ids if counts[i] > 1),
        "groups_without_one_original": bad_groups,
    }


def summary(phases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def medians(key: str) -> dict[str, float | None]:
        got = {g: [p[key] for p in phases if p["guarantee"] == g] for g in GUARANTEES}
        return {g: statistics.median(v) if v else None for g, v in got.items()}

    def ratio(med: dict[str, float | None]) -> float | None:
        alo, eos = med["at_least_once"], med["exactly_once"]
        return eos / alo if alo and eos else None

    rate, cpu = medians("rate"), medians("worker_cpu_ms_per_article")
    return {
        "median_rate": rate,
        "median_worker_cpu_ms_per_article": cpu,
        "exactly_once_over_at_least_once": ratio(rate),
        "worker_cpu_exactly_over_least": ratio(cpu),
    }


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "guarantee",
        __doc__,
        seed=7,
        partitions=4,
        docs=(6000, "articles per throughput phase"),
        rounds=(3, "throughput rounds (1 or more)"),
        kills=(2, "SIGKILLs per guarantee (0: none)"),
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds: 1 or more")
    missing = kafka_missing()
    if missing is not None:
        out.print(f"[red]Apache Kafka cannot run here: {missing}")
        return 1
    started = time.perf_counter()
    load_before = other_load()
    docs: list[Doc] = generate(args.docs, seed=args.seed)
    workdir = Path(tempfile.mkdtemp(prefix="neardup-bench-guarantee-"))
    stack = Stack(workdir, broker_kind="kafka", settings=WORKER_SETTINGS)
    bench = StreamBench(stack, docs, args.partitions)
    killed: list[dict[str, Any]] = []
    described: dict[str, Any] = {}

    async def run() -> bool:
        await measure(bench, args.docs, args.rounds)
        described.update(stack.describe())
        for g in GUARANTEES if args.kills else ():
            out.print(f"[bold]{g}: {args.kills} SIGKILLs mid-stream...")
            k = await kills(stack, g, args.kills, args.partitions)
            killed.append(k)
            out.print(
                f"  {k['articles_with_two_or_more']} of {k['articles']} articles have 2+ "
                f"verdicts for read_committed; {k['groups_without_one_original']} groups "
                "without one original"
            )
        return True

    out.print("[bold]Apache Kafka: throughput per processing guarantee, one worker...")
    if run_on_stack(stack, run) is None:
        return 130
    result: dict[str, Any] = {
        "generated": cli.now(),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": {**machine_info(PACKAGES), "cores_busy_before_run": round(load_before, 2)},
        "setup": {
            "command": cli.command("guarantee", argv),
            "docs": args.docs,
            "rounds": args.rounds,
            "partitions": args.partitions,
            "seed": args.seed,
            "kafka": described.get("broker_version"),
            "batch_size": described.get("batch_size"),
            "kill_rate": KILL_RATE,
            "git": git_state(),
        },
        "summary": summary(bench.phases),
        "phases": bench.phases,
        "kills": killed,
    }
    from bench import guarantee_tables  # it reads this module's constants

    text = guarantee_tables.markdown(result)
    cli.write(args.out, "guarantee", result, text)
    out.print(text)
    out.print(f"wrote {args.out / 'guarantee.json'}, {args.out / 'guarantee.md'}")
    return 0
