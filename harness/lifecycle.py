"""A randomized checker of a namespace's life: registrations, copies, takedowns and rebuilds
(from an export, stale or fresh, and from the input topic's log) interleaved with a running
worker, judged from outside by what the read API says afterwards.

Each seed makes a schedule; after it the checker requires that every id taken down (by the
delete path, or by a tombstone on the topic) stays down, that every article registered and not
taken down is indexed under its namespace's name, and that no story has two originals among
its live articles. ``python -m harness.lifecycle --seeds 1 2 3`` prints each failing seed's
schedule; ``tests/unit/test_lifecycle.py`` runs a few seeds on the memory store.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import orjson

from harness import data
from stream import read_api
from stream.engine import Engine
from stream.index.base import Index
from stream.index.memory import MemoryIndex
from stream.model import Article, Verdict
from stream.policy import Policy
from stream.reindex import Deletion, Item, batches_of, export, reindex
from stream.schema import article_from_obj

NS = "life"
_WORDS = ("updated", "corrected", "amended", "revised", "reuters", "editing")


@dataclass
class World:
    """What the checker knows from outside: what it sent and took down, and the schedule."""

    story_of: dict[str, int] = field(default_factory=dict)  # id -> story
    deleted: set[str] = field(default_factory=set)
    topic: list[Item] = field(default_factory=list)  # the input topic's log
    exports: list[list[Article]] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)


def _stories(n: int) -> list[str]:
    texts = [d["text"] for d in data.reuters() if 120 <= len(d["text"].split()) <= 400]
    return texts[:n]


async def _export(index: Index) -> list[Article]:
    buf = io.BytesIO()
    await export(index, NS, buf)
    return [article_from_obj(orjson.loads(x)) for x in buf.getvalue().splitlines()]


async def run(seed: int, steps: int = 40, index: Index | None = None) -> list[str]:
    """One seed's schedule on ``index`` (a fresh memory store by default); the violations,
    then the schedule, if any."""
    rng = random.Random(seed)
    index = index or MemoryIndex()
    worker = Engine(index, alias_ttl_s=0.0)
    stories = _stories(12)
    world = World()
    counter = 0

    async def register(copy_of: str | None = None) -> None:
        nonlocal counter
        counter += 1
        doc_id = f"d{counter}"
        story = world.story_of[copy_of] if copy_of else rng.randrange(len(stories))
        # a copy adds a word, never a number (changed figures make a new release, an original)
        text = stories[story] + ("" if copy_of is None else f" {rng.choice(_WORDS)}.")
        world.story_of[doc_id] = story
        art = Article(doc_id, text, NS)
        world.topic.append(art)
        (got,) = await worker.process([art])
        world.steps.append(f"register {doc_id} (story {story}): {getattr(got, 'verdict', got)}")

    async def take_down() -> None:
        live = [i for i in world.story_of if i not in world.deleted]
        if not live:
            return
        doc_id = rng.choice(live)
        world.deleted.add(doc_id)
        world.topic.append(Deletion(NS, doc_id))  # the delete path also tombstones the topic
        await worker.delete(NS, doc_id)
        world.steps.append(f"delete {doc_id}")

    async def meanwhile() -> None:  # what the workers do while a rebuild runs
        for _ in range(rng.randrange(3)):
            pick = rng.randrange(3)
            if pick == 0:
                await register()
            elif pick == 1:
                await take_down()
            else:
                await register(copy_of=rng.choice(list(world.story_of)))

    async def rebuild(items: list[Item], what: str) -> None:
        async def source() -> AsyncIterator[list[Item]]:
            async for batch in batches_of(items, max(1, len(items) // 3)):
                yield batch
                await meanwhile()

        if not any(isinstance(x, Article) for x in items):
            return
        done = await reindex(index, NS, Policy(), source, wait_s=0)
        world.steps.append(f"rebuild from {what} into {done.target}: {dict(done.verdicts)}")

    for _ in range(steps):
        roll = rng.random()
        if roll < 0.35 or not world.story_of:
            await register()
        elif roll < 0.6:
            await register(copy_of=rng.choice(list(world.story_of)))
        elif roll < 0.75:
            await take_down()
        elif roll < 0.83:
            world.exports.append(await _export(index))
            world.steps.append(f"export ({len(world.exports[-1])} articles)")
        elif roll < 0.92 and world.exports:
            await rebuild(list(rng.choice(world.exports)), "an export")
        else:
            await rebuild(list(world.topic), "the topic")
    bad = await judge(index, world)
    return [*bad, "schedule:", *(f"  {s}" for s in world.steps)] if bad else []


async def judge(index: Index, world: World) -> list[str]:
    """The three requirements, read through the read API (as a user reads them)."""
    bad = []
    originals: dict[int, list[str]] = {}
    for doc_id, story in world.story_of.items():
        got = await read_api.article(index, NS, doc_id)
        if doc_id in world.deleted:
            if got is not None:
                bad.append(f"{doc_id} was taken down and is back")
            continue
        if got is None:
            bad.append(f"{doc_id} was registered and is lost")
            continue
        if Verdict.from_json(orjson.dumps(got["verdict"])).verdict == "original":
            originals.setdefault(story, []).append(doc_id)
    bad += [f"story {s} has two originals: {ids}" for s, ids in originals.items() if len(ids) > 1]
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.lifecycle")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(1, 11)))
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args(argv)
    failed = 0
    for seed in args.seeds:
        world_bad = asyncio.run(run(seed, args.steps))
        if world_bad:
            failed += 1
            print(f"seed {seed}: FAILED")
            for line in world_bad:
                print(f"  {line}")
        else:
            print(f"seed {seed}: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
