"""``make run``: the whole streaming service on this machine, from what pip/apt installed.

Run it as ``python -m harness.demo`` from the repository root.

Starts a Redis server and a Kafka-protocol broker (Tansu), creates the topics, starts two
``neardup worker`` processes, streams the bundled sample through the input topic, shows live
progress read from the verdict topic, and prints a summary. Ctrl-C (or the end) stops everything
it started.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness import services
from harness.kafka import Topics, create_topics
from harness.workers import WorkerProc, start_worker, stop_workers, wait_ready
from neardup.stream.cli.dedup import summary_table

ROOT = Path(__file__).resolve().parents[1]
console = Console()


async def stream_sample(topics: Topics, lines: list[bytes]) -> None:
    total = len(lines)
    bootstrap = topics.bootstrap
    consumer = AIOKafkaConsumer(
        topics.verdicts,
        topics.dlq,
        bootstrap_servers=bootstrap,
        group_id=f"neardup-demo-{os.getpid()}",
        auto_offset_reset="earliest",
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await consumer.start()
    await producer.start()
    counts: Counter[str] = Counter()
    clusters: set[str] = set()
    examples: list[dict[str, object]] = []
    dead = 0
    try:
        started = time.perf_counter()
        for line in lines:
            key = orjson.loads(line)["id"].encode()
            await producer.send(topics.input, key=key, value=line)
        await producer.flush()
        columns = (TextColumn("[bold]verdicts"), BarColumn(), MofNCompleteColumn())
        rate_columns = (TextColumn("{task.fields[rate]}"), TimeElapsedColumn())
        with Progress(*columns, *rate_columns, console=console) as progress:
            task = progress.add_task("verdicts", total=total, rate="")
            seen: set[bytes] = set()
            while len(seen) + dead < total:
                batch = await consumer.getmany(timeout_ms=500)
                for tp, messages in batch.items():
                    for m in messages:
                        if tp.topic == topics.dlq:
                            dead += 1
                            continue
                        if m.key in seen:  # at-least-once: a replayed verdict is counted once
                            continue
                        seen.add(m.key or b"")
                        v = orjson.loads(m.value or b"{}")
                        counts[v["verdict"]] += 1
                        clusters.add(v["cluster"])
                        if v["verdict"] == "near_duplicate" and len(examples) < 5:
                            examples.append(v)
                rate = (len(seen) + dead) / (time.perf_counter() - started)
                progress.update(task, completed=len(seen) + dead, rate=f"{rate:,.0f} articles/s")
        seconds = time.perf_counter() - started
    finally:
        await producer.stop()
        await consumer.stop()
    table = summary_table(
        "neardup: the sample through Kafka, two workers, Redis",
        counts,
        len(clusters),
        [("dead letters", f"{dead:,}"), ("articles/s (end to end)", f"{total / seconds:,.0f}")],
    )
    console.print(table)
    for v in examples:
        console.print(
            f"  {v['id']} ~ {v['duplicate_of']} (similarity {v['similarity']}, {v['method']})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=Path, default=ROOT / "examples" / "sample.jsonl.gz")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="neardup-run-"))
    started: list[services.Service] = []
    workers: list[WorkerProc] = []
    try:
        console.print("[bold]starting Redis and a Kafka-protocol broker...")
        started.append(services.start_redis(workdir / "services"))
        started.append(services.start_broker(workdir / "services"))
        redis, broker = started
        topics = Topics.named(broker.bootstrap)
        asyncio.run(create_topics(broker.bootstrap, topics.all, args.partitions))
        console.print(f"[bold]starting {args.workers} workers (logs in {workdir})...")
        for _ in range(args.workers):
            w = start_worker(topics, redis.url, workdir, "neardup", NEARDUP_LOG_LEVEL="warning")
            workers.append(w)
        asyncio.run(wait_ready(workers))
        console.print(f"[bold]streaming {args.sample.name} through '{topics.input}'...")
        lines = [x for x in gzip.decompress(args.sample.read_bytes()).splitlines() if x.strip()]
        asyncio.run(stream_sample(topics, lines))
        return 0
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: stopping everything")
        return 130
    finally:
        stop_workers(workers, timeout_s=15)
        for s in reversed(started):
            s.stop(kill=True)


if __name__ == "__main__":
    raise SystemExit(main())
