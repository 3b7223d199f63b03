"""``make run``: the whole streaming service on this machine, from what pip/apt installed.

Run it as ``python -m scripts.demo`` from the repository root.

Starts a Redis server and a Kafka-protocol broker (Tansu), creates the topics, starts two
``neardup worker`` processes, streams the bundled sample through the input topic, shows live
progress read from the verdict topic, and prints a summary. Ctrl-C (or the end) stops everything
it started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from scripts import services
from stream.app import ensure_topics
from stream.cli import summary_table
from stream.config import Settings

ROOT = Path(__file__).resolve().parents[1]
console = Console()


def start_worker(n: int, env: dict[str, str], port: int, logdir: Path) -> subprocess.Popen[bytes]:
    worker_env = {
        **env,
        "NEARDUP_WEB_PORT": str(port),
        "NEARDUP_WEB_HOST": "127.0.0.1",
        "NEARDUP_DATA_DIR": str(logdir / f"worker-{n}"),
        "NEARDUP_KAFKA_SESSION_TIMEOUT_S": "10",
        "NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S": "1",
        "NEARDUP_LOG_LEVEL": "warning",
    }
    log = (logdir / f"worker-{n}.log").open("wb")
    return subprocess.Popen(  # noqa: S603 - our own console script
        [str(Path(sys.executable).parent / "neardup"), "worker", "--no-create-topics"],
        env=worker_env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_ready(ports: list[int], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    pending = set(ports)
    while pending and time.monotonic() < deadline:
        for port in list(pending):
            url = f"http://127.0.0.1:{port}/health"
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    pending.discard(port)
        time.sleep(0.5)
    if pending:
        raise RuntimeError(f"workers on ports {sorted(pending)} did not become ready")


async def stream_sample(bootstrap: str, settings: Settings, lines: list[bytes]) -> None:
    total = len(lines)
    consumer = AIOKafkaConsumer(
        settings.verdict_topic,
        settings.dlq_topic,
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
            await producer.send(settings.input_topic, key=key, value=line)
        await producer.flush()
        with Progress(
            TextColumn("[bold]verdicts"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("verdicts", total=total, rate="")
            seen: set[bytes] = set()
            while len(seen) + dead < total:
                batch = await consumer.getmany(timeout_ms=500)
                for tp, messages in batch.items():
                    for m in messages:
                        if tp.topic == settings.dlq_topic:
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
    workers: list[subprocess.Popen[bytes]] = []

    def stop_all() -> None:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                w.wait(timeout=15)
            if w.poll() is None:
                w.kill()
        for s in reversed(started):
            s.stop(kill=True)

    try:
        console.print("[bold]starting Redis and a Kafka-protocol broker...")
        redis = services.start_redis(workdir / "services")
        started.append(redis)
        broker = services.start_broker(workdir / "services")
        started.append(broker)
        env = {
            **os.environ,
            "NEARDUP_REDIS_URL": redis.url,
            "NEARDUP_KAFKA_BOOTSTRAP": broker.bootstrap,
            "NEARDUP_TOPIC_PARTITIONS": str(args.partitions),
        }
        settings = Settings(
            kafka_bootstrap=broker.bootstrap,
            redis_url=redis.url,
            topic_partitions=args.partitions,
        )
        asyncio.run(ensure_topics(settings))
        ports = [services.free_port() for _ in range(args.workers)]
        console.print(f"[bold]starting {args.workers} workers (logs in {workdir})...")
        workers.extend(start_worker(n, env, port, workdir) for n, port in enumerate(ports))
        wait_ready(ports)
        console.print(f"[bold]streaming {args.sample.name} through '{settings.input_topic}'...")
        lines = [x for x in gzip.decompress(args.sample.read_bytes()).splitlines() if x.strip()]
        asyncio.run(stream_sample(broker.bootstrap, settings, lines))
        return 0
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: stopping everything")
        return 130
    finally:
        stop_all()


if __name__ == "__main__":
    raise SystemExit(main())
