"""A randomized checker of a namespace's life: registrations, copies, takedowns and rebuilds
interleaved with a running worker, judged by what the read API says afterwards: every id taken
down stays down, every other article is indexed under its namespace's name, and no story has two
originals among its live articles. It drives :class:`InProcess` (fast, for many seeds) or
:class:`harness.lifecycle_live.Live` (a real worker); ``--live`` picks the latter.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from harness import data
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.reindex import Deletion, Item, batches_of, export, reindex
from neardup.stream.index.base import Index
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy
from neardup.stream.schema import article_from_obj
from neardup.stream.worker.http import read_api

NS = "life"
_WORDS = ("updated", "corrected", "amended", "revised", "reuters", "editing")
DELETE_PATHS = ("cli", "http", "tombstone")
"""``neardup delete --kafka-bootstrap``, ``DELETE /articles/{id}``, a tombstone on the input
topic: every path an operator or a producer takes an article down by."""
# ids in more than one script: a path percent-encodes them, a command line passes them as given
_ID_FORMS = ("d{}", "新闻-{}", "статья-{}")

Meanwhile = Callable[[], Awaitable[None]]


class System(Protocol):
    """What the checker drives: a worker and its index, seen from outside. ``export`` returns a
    handle for ``rebuild`` and a count; ``rebuild`` (None: from the input topic) calls ``meanwhile``
    while it runs; ``read`` is the read API's answer (None: not indexed)."""

    async def register(self, article: Article) -> str: ...
    async def delete(self, doc_id: str, path: str) -> None: ...
    async def export(self) -> tuple[Any, int]: ...
    async def rebuild(self, export: Any | None, meanwhile: Meanwhile) -> str | None: ...
    async def settle(self) -> None: ...
    async def read(self, doc_id: str) -> dict[str, Any] | None: ...


@dataclass
class World:
    """What the checker knows from outside: what it sent and took down, and the schedule."""

    story_of: dict[str, int] = field(default_factory=dict)  # id -> story
    deleted: set[str] = field(default_factory=set)
    exports: list[Any] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)


def _stories(n: int) -> list[str]:
    texts = [d["text"] for d in data.reuters() if 120 <= len(d["text"].split()) <= 400]
    return texts[:n]


class InProcess:
    """An engine on the memory store (or the index given, under the policy given), as a worker
    and the admin commands would drive it: a takedown by any path leaves the index and puts a
    tombstone on the (modelled) topic."""

    def __init__(self, index: Index | None = None, policy: Policy | None = None) -> None:
        self.index = index or MemoryIndex()
        self.policy = policy or Policy()
        self.worker = Engine(self.index, self.policy, alias_ttl_s=0.0)
        self.topic: list[Item] = []  # the input topic's log

    async def register(self, article: Article) -> str:
        self.topic.append(article)
        (got,) = await self.worker.process([article])
        return str(getattr(got, "verdict", got))

    async def delete(self, doc_id: str, path: str) -> None:
        assert path in DELETE_PATHS
        # the command and the view tombstone the topic; a tombstone on it reaches the worker
        self.topic.append(Deletion(NS, doc_id))
        await self.worker.delete(NS, doc_id)

    async def export(self) -> tuple[Any, int]:
        buf = io.BytesIO()
        await export(self.index, NS, buf)
        got = [article_from_obj(orjson.loads(x)) for x in buf.getvalue().splitlines()]
        return got, len(got)

    async def rebuild(self, export: Any | None, meanwhile: Meanwhile) -> str | None:
        items: list[Item] = list(self.topic if export is None else export)
        if not any(isinstance(x, Article) for x in items):
            return None

        async def source() -> AsyncIterator[list[Item]]:
            async for batch in batches_of(items, max(1, len(items) // 3)):
                yield batch
                await meanwhile()

        done = await reindex(self.index, NS, self.policy, source, wait_s=0)
        return f"into {done.target}: {dict(done.verdicts)}"

    async def settle(self) -> None:
        return None

    async def read(self, doc_id: str) -> dict[str, Any] | None:
        return await read_api.article(self.index, NS, doc_id)


async def run(seed: int, steps: int = 40, system: System | None = None) -> list[str]:
    """One seed's schedule on ``system`` (in process on a fresh memory store by default); the
    violations, then the schedule, if any."""
    rng = random.Random(seed)
    system = system or InProcess()
    stories = _stories(12)
    world = World()
    counter = 0

    async def register(copy_of: str | None = None) -> None:
        nonlocal counter
        counter += 1
        doc_id = rng.choice(_ID_FORMS).format(counter)
        story = world.story_of[copy_of] if copy_of else rng.randrange(len(stories))
        # a copy adds a word, never a number (changed figures make a new release, an original)
        text = stories[story] + ("" if copy_of is None else f" {rng.choice(_WORDS)}.")
        world.story_of[doc_id] = story
        got = await system.register(Article(doc_id, text, NS))
        world.steps.append(f"register {doc_id} (story {story}): {got}")

    async def take_down() -> None:
        live = [i for i in world.story_of if i not in world.deleted]
        if not live:
            return
        doc_id = rng.choice(live)
        path = rng.choice(DELETE_PATHS)
        world.deleted.add(doc_id)
        await system.delete(doc_id, path)
        world.steps.append(f"delete {doc_id} by {path}")

    async def meanwhile() -> None:  # what the workers do while a rebuild runs
        for _ in range(rng.randrange(3)):
            pick = rng.randrange(3)
            if pick == 0:
                await register()
            elif pick == 1:
                await take_down()
            else:
                await register(copy_of=rng.choice(list(world.story_of)))

    async def rebuild(source: Any | None, what: str) -> None:
        world.steps.append(f"rebuild from {what} starts")
        done = await system.rebuild(source, meanwhile)
        world.steps.append(f"rebuild from {what}: {done or 'nothing to rebuild from'}")

    for _ in range(steps):
        roll = rng.random()
        if roll < 0.35 or not world.story_of:
            await register()
        elif roll < 0.6:
            await register(copy_of=rng.choice(list(world.story_of)))
        elif roll < 0.75:
            await take_down()
        elif roll < 0.83:
            handle, n = await system.export()
            world.exports.append(handle)
            world.steps.append(f"export {len(world.exports)} ({n} articles)")
        elif roll < 0.92 and world.exports:
            k = rng.randrange(len(world.exports))
            await rebuild(world.exports[k], f"export {k + 1}")
        else:
            await rebuild(None, "the topic")
    await system.settle()
    bad = await judge(system, world)
    return [*bad, "schedule:", *(f"  {s}" for s in world.steps)] if bad else []


async def judge(system: System, world: World) -> list[str]:
    """The three requirements, read through the read API (as a user reads them)."""
    bad = []
    originals: dict[int, list[str]] = {}
    for doc_id, story in world.story_of.items():
        got = await system.read(doc_id)
        if doc_id in world.deleted:
            if got is not None:
                bad.append(f"{doc_id} was taken down and is back")
            continue
        if got is None:
            bad.append(f"{doc_id} was registered and is lost")
            continue
        if got["verdict"] is not None and got["verdict"]["verdict"] == "original":
            originals.setdefault(story, []).append(doc_id)
    bad += [f"story {s} has two originals: {ids}" for s, ids in originals.items() if len(ids) > 1]
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.lifecycle")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(1, 11)))
    parser.add_argument("--steps", type=int, default=40)
    live = "against a real worker on Apache Kafka and Redis (started here), not in process"
    parser.add_argument("--live", action="store_true", help=live)
    args = parser.parse_args(argv)
    if args.live:
        from harness import lifecycle_live

        return lifecycle_live.main(args.seeds, args.steps)
    failed = 0
    for seed in args.seeds:
        failed += report(seed, asyncio.run(run(seed, args.steps)))
    return 1 if failed else 0


def report(seed: int, bad: list[str]) -> int:
    """Print a seed's outcome (its violations and schedule when it failed); 1 if it failed."""
    print(f"seed {seed}: {'FAILED' if bad else 'ok'}", flush=True)
    for line in bad:
        print(f"  {line}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
