"""The lifecycle checker (:mod:`harness.lifecycle`) against a real worker, driven by the topic,
HTTP and the ``neardup`` commands an operator runs. One partition, so the worker decides articles
in the order sent; the judge first waits for a sentinel sent last to be decided.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from harness import lifecycle, services
from harness.kafka import Topics, create_topics
from harness.workers import WorkerProc, start_worker
from neardup.stream.model import Article
from neardup.stream.worker.messages import split_verdict_key

NEARDUP = Path(sys.executable).parent / "neardup"
TOKEN = "lifecycle-token"
COMMAND_TIMEOUT_S = 180.0


class CommandFailed(RuntimeError):
    """A ``neardup`` command exited other than 0: its arguments, status and stderr."""


class Live:
    """A running worker, its topics and its Redis, driven as users drive them."""

    def __init__(
        self, worker: WorkerProc, topics: Topics, redis_url: str, workdir: Path, ns: str
    ) -> None:
        self.ns = ns  # the schedule's namespace here: fresh for each seed
        self.sentinel_ns = f"{ns}-sentinel"
        self.worker = worker
        self.topics = topics
        self.redis_url = redis_url
        self.workdir = workdir
        self.exports = 0
        self.sentinels = 0
        self.calls: Counter[str] = Counter()  # what the schedule took: delete paths, rebuilds
        self._producer: AIOKafkaProducer | None = None

    async def __aenter__(self) -> Live:
        self._producer = AIOKafkaProducer(bootstrap_servers=self.topics.bootstrap, acks="all")
        await self._producer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._producer is not None:
            await self._producer.stop()

    async def _send(self, key: str, value: bytes | None) -> None:
        assert self._producer is not None
        headers = [("namespace", self.ns.encode())] if value is None else []
        await self._producer.send_and_wait(
            self.topics.input, key=key.encode(), value=value, headers=headers, partition=0
        )

    async def _neardup(self, *args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            str(NEARDUP),
            *args,
            "--store",
            self.redis_url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), COMMAND_TIMEOUT_S)
        if proc.returncode != 0:
            raise CommandFailed(f"neardup {' '.join(args)} exited {proc.returncode}: {err!r}")
        return (out + err).decode(errors="replace")

    def _http(self, method: str, path: str) -> tuple[int, Any]:
        req = urllib.request.Request(
            self.worker.url(path), method=method, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return int(r.status), orjson.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, orjson.loads(e.read() or b"{}")

    def _path(self, doc_id: str) -> str:
        return f"/articles/{quote(doc_id, safe='')}?namespace={self.ns}"

    # ------------------------------------------------------------------------- the System

    async def register(self, article: Article) -> str:
        body = {"id": article.id, "namespace": self.ns, "text": article.text}
        await self._send(article.id, orjson.dumps(body))
        return "sent"

    async def delete(self, doc_id: str, path: str) -> None:
        self.calls[f"delete by {path}"] += 1
        if path == "tombstone":  # after the article on the one partition: decided in order
            await self._send(doc_id, None)
            return
        # an operator takes down what they have seen decided
        await self.settle()
        if path == "cli":
            t = self.topics
            kafka = ["--kafka-bootstrap", t.bootstrap, "--input-topic", t.input]
            await self._neardup(
                "delete", doc_id, "--namespace", self.ns, *kafka, "--verdict-topic", t.verdicts
            )
            return
        status, body = await asyncio.to_thread(self._http, "DELETE", self._path(doc_id))
        if status != 200:
            raise RuntimeError(f"DELETE {doc_id!r} answered {status}: {body}")

    async def export(self) -> tuple[Any, int]:
        await self.settle()
        self.exports += 1
        out = self.workdir / f"{self.ns}-export-{self.exports}.jsonl"
        said = await self._neardup("export", self.ns, "-o", str(out))  # "exported N articles ..."
        n = int(said.split("exported ", 1)[1].split()[0].replace(",", ""))
        return (out, n), n

    async def rebuild(self, export: Any | None, meanwhile: lifecycle.Meanwhile) -> str | None:
        self.calls["rebuild from " + ("the topic" if export is None else "an export")] += 1
        if export is None:
            source = ["--from-topic", self.topics.input, "--kafka-bootstrap", self.topics.bootstrap]
        else:
            path, n = export
            if n == 0:
                return None  # an empty export: the command refuses it (nothing to switch to)
            source = ["--from", str(path)]
        run = asyncio.create_task(self._neardup("reindex", self.ns, *source, "--no-progress"))
        try:
            for _ in range(2):  # the schedule goes on while the command runs
                await asyncio.sleep(0.7)
                await meanwhile()
            said = await run
        finally:
            if not run.done():
                run.cancel()
                with contextlib.suppress(BaseException):
                    await run
        return " ".join(line.strip() for line in said.splitlines() if "into" in line)[:300]

    async def settle(self) -> None:
        """Send a sentinel last on the one partition and wait for its verdict: everything sent
        before it is decided then."""
        self.sentinels += 1
        doc_id = f"sentinel-{self.sentinels}"
        body = {"id": doc_id, "namespace": self.sentinel_ns, "text": f"sentinel {uuid.uuid4().hex}"}
        consumer = AIOKafkaConsumer(
            self.topics.verdicts,
            bootstrap_servers=self.topics.bootstrap,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            await self._send(doc_id, orjson.dumps(body))
            async with asyncio.timeout(COMMAND_TIMEOUT_S):
                async for m in _records(consumer):
                    if m.value is not None and split_verdict_key(m.key or b"")[1] == doc_id:
                        return
        finally:
            await consumer.stop()

    async def read(self, doc_id: str) -> dict[str, Any] | None:
        status, body = await asyncio.to_thread(self._http, "GET", self._path(doc_id))
        if status == 404 and body.get("error") == "not_found":
            return None
        if status != 200:
            raise RuntimeError(f"GET {doc_id!r} answered {status}: {body}")
        return cast(dict[str, Any], body)


async def _records(consumer: AIOKafkaConsumer) -> AsyncIterator[Any]:
    while True:
        batch = await consumer.getmany(timeout_ms=500)
        for messages in batch.values():
            for m in messages:
                yield m


def start(topics: Topics, redis_url: str, workdir: Path) -> WorkerProc:
    """A worker for the checker: its own consumer group, the checker's token."""
    group = f"life-{uuid.uuid4().hex[:6]}"
    return start_worker(topics, redis_url, workdir, group, NEARDUP_CHECK_TOKEN=TOKEN)


async def run_seed(
    seed: int, steps: int, bootstrap: str, redis_url: str, workdir: Path
) -> tuple[list[str], Counter[str]]:
    """One seed on fresh topics, namespace keys and a fresh worker: the violations and the
    schedule, if any (the worker's log tail when it died), and what the schedule took."""
    tag = f"life{seed}-{uuid.uuid4().hex[:6]}"
    topics = Topics.named(bootstrap, tag=tag)
    await create_topics(bootstrap, topics.all, 1)
    worker = start(topics, redis_url, workdir)
    try:
        await asyncio.to_thread(worker.wait_ready, 90)
        async with Live(worker, topics, redis_url, workdir, tag) as live:
            return await lifecycle.run(seed, steps, live), live.calls
    except Exception as exc:
        worker.check_alive()
        raise RuntimeError(f"seed {seed}: {exc}") from exc
    finally:
        worker.stop()


def main(seeds: Sequence[int], steps: int) -> int:
    """Start Redis and Apache Kafka, run each seed against a fresh worker, print each outcome."""
    with tempfile.TemporaryDirectory(prefix="lifecycle-") as tmp:
        work = Path(tmp)
        redis = services.start_redis(work / "redis")
        kafka = services.start_kafka(work / "kafka")
        failed = 0
        try:
            for seed in seeds:
                bad, calls = asyncio.run(run_seed(seed, steps, kafka.bootstrap, redis.url, work))
                failed += lifecycle.report(seed, bad)
                print(f"  took: {dict(sorted(calls.items()))}", flush=True)
        finally:
            kafka.stop()
            redis.stop()
    return 1 if failed else 0
