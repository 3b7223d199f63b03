"""Stream a JSONL file of articles into neardup's input topic and print the verdicts it gets back.

A small, complete aiokafka client, the way an application talks to neardup:

    python deploy/producer_example.py examples/sample.jsonl.gz --bootstrap localhost:9092

Each line is sent as is, keyed by its ``id`` (neardup keys verdicts by article id too). The verdict
topic is read from its current end, taken *before* the first article is sent, so only verdicts
for this run are shown. Lines that neardup rejects (no id, empty text, ...) go to the dead-letter
topic and get no verdict; the summary counts them as missing.

Defaults come from the same variables the worker reads: ``NEARDUP_KAFKA_BOOTSTRAP``,
``NEARDUP_INPUT_TOPIC``, ``NEARDUP_VERDICT_TOPIC``. Exit status 0 when every article got a verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

SAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sample.jsonl.gz"


def read_lines(path: Path, limit: int | None) -> Iterator[tuple[str | None, bytes]]:
    """(id or None, raw line) for each non-blank line; the line is sent unchanged."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        sent = 0
        for raw in f:
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                art_id = obj.get("id") if isinstance(obj, dict) else None
            except ValueError:
                art_id = None
            yield (art_id if isinstance(art_id, str) else None), line
            sent += 1
            if limit is not None and sent >= limit:
                return


async def partitions_of(bootstrap: str, topic: str, wait_s: float) -> list[int]:
    """The partitions of ``topic``, asked of the broker (waiting up to ``wait_s`` for the
    workers to create it); empty if it never appears."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + wait_s
        while True:
            if topic in await admin.list_topics():
                (found,) = await admin.describe_topics([topic])
                partitions = [p["partition"] for p in found.get("partitions", ())]
                if partitions:
                    return sorted(partitions)
            if time.monotonic() >= deadline:
                return []
            await asyncio.sleep(1.0)
    finally:
        await admin.close()


async def verdict_reader(
    bootstrap: str, topic: str, from_beginning: bool, wait_s: float = 30.0
) -> AIOKafkaConsumer:
    """A consumer assigned to every partition of ``topic``, positioned before anything we send."""
    partitions = await partitions_of(bootstrap, topic, wait_s)
    if not partitions:
        raise SystemExit(f"topic {topic!r} does not exist on {bootstrap} (waited {wait_s:.0f}s)")
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in sorted(partitions)]
    consumer.assign(tps)
    if from_beginning:
        await consumer.seek_to_beginning(*tps)
    else:
        await consumer.seek_to_end(*tps)
    for tp in tps:
        await consumer.position(tp)  # resolve the lazy seek now, before producing
    return consumer


def describe(v: dict[str, Any]) -> str:
    line = f"{v.get('id')!s:<24} {v.get('verdict')!s:<15}"
    if v.get("duplicate_of") is not None:
        line += f" of {v['duplicate_of']} (similarity {v.get('similarity')}, {v.get('method')})"
    return line


async def run(args: argparse.Namespace) -> int:
    consumer = await verdict_reader(args.bootstrap, args.verdict_topic, args.from_beginning)
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, acks="all", linger_ms=5)
    await producer.start()
    wanted: set[str] = set()
    started = time.monotonic()
    try:
        pending = []
        for art_id, line in read_lines(args.file, args.limit):
            key = art_id.encode() if art_id is not None else None
            pending.append(await producer.send(args.input_topic, value=line, key=key))
            if art_id is not None:
                wanted.add(art_id)
            if len(pending) >= 1000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        print(f"sent {len(wanted)} articles to {args.input_topic!r}; waiting for verdicts ...")

        seen: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + args.timeout_s
        while len(seen) < len(wanted) and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000, max_records=5000)
            for records in batches.values():
                for rec in records:
                    key = rec.key.decode() if rec.key else None
                    if key not in wanted or key in seen:
                        continue
                    verdict = json.loads(rec.value)
                    seen[key] = verdict
                    if not args.quiet:
                        print(describe(verdict))
    finally:
        await producer.stop()
        await consumer.stop()

    elapsed = time.monotonic() - started
    counts = Counter(v.get("verdict") for v in seen.values())
    summary = ", ".join(f"{k}: {n}" for k, n in sorted(counts.items(), key=lambda kv: str(kv[0])))
    print(f"{len(seen)}/{len(wanted)} verdicts in {elapsed:.1f}s ({summary})")
    missing = len(wanted) - len(seen)
    if missing:
        print(
            f"{missing} articles got no verdict within {args.timeout_s:.0f}s "
            f"(are the workers up? rejected lines are in the dead-letter topic)",
            file=sys.stderr,
        )
        return 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file", nargs="?", type=Path, default=SAMPLE, help="JSONL or JSONL.gz")
    p.add_argument(
        "--bootstrap", default=os.environ.get("NEARDUP_KAFKA_BOOTSTRAP", "localhost:9092")
    )
    p.add_argument("--input-topic", default=os.environ.get("NEARDUP_INPUT_TOPIC", "articles"))
    p.add_argument("--verdict-topic", default=os.environ.get("NEARDUP_VERDICT_TOPIC", "verdicts"))
    p.add_argument("--limit", type=int, default=None, help="send at most this many lines")
    p.add_argument("--timeout-s", type=float, default=120.0, help="how long to wait for verdicts")
    p.add_argument(
        "--from-beginning",
        action="store_true",
        help="read the verdict topic from its start (brokers without reliable end offsets)",
    )
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    args = p.parse_args(argv)
    if not args.file.exists():
        p.error(f"{args.file} does not exist")
    return args


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
