"""Starting ``neardup worker`` processes as users do, and talking to them and to the broker.

Shared by the integration tests that need a running worker (workers, faults, security).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from harness.corpus import generate
from stream.app import ensure_topics
from stream.config import Settings

NEARDUP = Path(sys.executable).parent / "neardup"


@dataclass
class Topics:
    bootstrap: str
    input: str
    verdicts: str
    dlq: str


@dataclass
class WorkerProc:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(self.url(path), timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def post(
        self, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        req = urllib.request.Request(self.url(path), data=body, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log.read_text()[-3000:]}")
            with contextlib.suppress(OSError):
                if self.get("/health")[0] == 200:
                    return
            time.sleep(0.3)
        raise TimeoutError(f"worker not ready: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


W = TypeVar("W", bound=WorkerProc)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_topics(bootstrap: str, partitions: int = 4) -> Topics:
    """Fresh input/verdict/DLQ topics (sync: module fixtures have no event loop)."""
    return asyncio.run(make_topics_async(bootstrap, partitions))


async def make_topics_async(bootstrap: str, partitions: int = 4) -> Topics:
    tag = uuid.uuid4().hex[:8]
    t = Topics(bootstrap, f"articles-{tag}", f"verdicts-{tag}", f"dlq-{tag}")
    settings = Settings(
        kafka_bootstrap=bootstrap,
        input_topic=t.input,
        verdict_topic=t.verdicts,
        dlq_topic=t.dlq,
        topic_partitions=partitions,
    )
    await ensure_topics(settings)
    return t


def start_worker(
    topics: Topics,
    redis_url: str,
    tmp: Path,
    group: str,
    proc_type: type[W] = WorkerProc,  # type: ignore[assignment]
    **extra: str,
) -> W:
    port = free_port()
    log = tmp / f"worker-{port}.log"
    env = {
        **os.environ,
        "NEARDUP_KAFKA_BOOTSTRAP": topics.bootstrap,
        "NEARDUP_REDIS_URL": redis_url,
        "NEARDUP_INPUT_TOPIC": topics.input,
        "NEARDUP_VERDICT_TOPIC": topics.verdicts,
        "NEARDUP_DLQ_TOPIC": topics.dlq,
        "NEARDUP_CONSUMER_GROUP": group,
        "NEARDUP_WEB_PORT": str(port),
        "NEARDUP_WEB_HOST": "127.0.0.1",
        "NEARDUP_DATA_DIR": str(tmp / f"data-{port}"),
        "NEARDUP_KAFKA_SESSION_TIMEOUT_S": "10",
        "NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S": "1",
        "NEARDUP_MAX_MESSAGE_BYTES": "100000",
        **extra,
    }
    with log.open("wb") as out:  # the child keeps its own handle
        proc = subprocess.Popen(
            [str(NEARDUP), "worker", "--no-create-topics"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return proc_type(proc, port, log)


async def produce(
    bootstrap: str, topic: str, items: list[tuple[bytes | None, bytes | None, int | None]]
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=4_000_000)
    await producer.start()
    try:
        for key, value, partition in items:
            await producer.send(topic, key=key, value=value, partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


async def collect(
    bootstrap: str, topic: str, want: set[str], timeout_s: float = 90, key_of: Any = None
) -> dict[str, list[dict[str, Any]]]:
    """Read ``topic`` from the start until every id in ``want`` was seen (repeats kept)."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"test-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    got: dict[str, list[dict[str, Any]]] = defaultdict(list)
    try:
        deadline = time.monotonic() + timeout_s
        while not want <= got.keys() and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for msgs in batch.values():
                for m in msgs:
                    value = json.loads(m.value or b"{}")
                    ident = key_of(m, value) if key_of else value["id"]
                    got[ident].append(value)
    finally:
        await consumer.stop()
    return got


def groups_of_copies(n_groups: int, size: int, seed: int) -> list[list[dict[str, str]]]:
    """Near-duplicate groups: an original and light edits of it, groups unrelated to each other."""
    docs = generate(n_groups, seed=seed, dup_rate=0.0)
    rng = random.Random(seed)
    out = []
    for g, d in enumerate(docs):
        words = d["text"].split()
        group = [{"id": f"g{g}-0", "text": d["text"]}]
        for c in range(1, size):
            w = list(words)
            for _ in range(max(1, len(w) // 60)):
                w[rng.randrange(len(w))] = rng.choice(["alpha", "beta", "gamma", "delta"])
            group.append({"id": f"g{g}-{c}", "text": " ".join(w)})
        out.append(group)
    return out
