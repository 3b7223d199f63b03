"""The cost benchmark's workload: ``python workload.py DOCS.jsonl STORE N``, the Redis URL in
``COST_REDIS_URL``, run under valgrind with ``PYTHONPATH`` set to one tree (the working tree or an
earlier commit's), so it uses only what both have, found where each keeps it. After a warm-up on
a throwaway index, the first N documents go to a fresh index in batches of 512; the last line of
its stdout is JSON for :mod:`bench.cost_bench`.
"""

import asyncio
import importlib
import json
import os
import sys
from typing import Any

BATCH = 512
WARMUP = 512


class Tree:
    """The names the workload uses, from wherever the tree keeps them: a tree from before the
    one import name has top-level ``stream/`` modules, not ``neardup.stream``."""

    def __init__(self) -> None:
        new = os.path.isdir(os.path.join(os.environ["PYTHONPATH"], "neardup", "stream"))
        pkg = "neardup.stream" if new else "stream"

        def load(module: str, name: str) -> Any:
            return getattr(importlib.import_module(pkg + module), name)

        self.stream = importlib.import_module(pkg)
        self.engine = load(".engine.engine" if new else ".engine", "Engine")
        self.error = load(".errors", "NeardupError")
        self.memory_index = load(".index.memory", "MemoryIndex")
        self.article = load(".model", "Article")
        self.redis_index_module = pkg + (".index.redis.index" if new else ".index.redis")


async def run(tree: Tree, index: Any, articles: list[Any]) -> int:
    copies = 0
    engine = tree.engine(index)
    for lo in range(0, len(articles), BATCH):
        for res in await engine.process(articles[lo : lo + BATCH]):
            if isinstance(res, tree.error):
                raise SystemExit(f"rejected: {res}")
            copies += res.duplicate_of is not None
    return copies


def server_cpu(sync: Any) -> float:
    cpu = sync.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def read(tree: Tree, path: str) -> list[Any]:
    with open(path, encoding="utf-8") as fh:
        return [tree.article(d["id"], d["text"]) for d in map(json.loads, fh)]


async def main(tree: Tree, articles: list[Any], store: str, n: int) -> None:
    report: dict[str, Any] = {"store": store, "docs": n, "stream": tree.stream.__file__}
    if store == "memory":
        await run(tree, tree.memory_index(), articles[:WARMUP])
        report["copies"] = await run(tree, tree.memory_index(), articles[:n])
    else:
        import redis
        import redis.asyncio as aioredis

        redis_index = importlib.import_module(tree.redis_index_module).RedisIndex
        url = os.environ["COST_REDIS_URL"]
        sync, client = redis.Redis.from_url(url), aioredis.Redis.from_url(url)

        async def fresh() -> Any:
            sync.flushall()
            index = redis_index(client)
            await index.load_functions()
            return index

        await run(tree, await fresh(), articles[:WARMUP])
        index = await fresh()
        before = server_cpu(sync)
        report["copies"] = await run(tree, index, articles[:n])
        report["server_cpu_s"] = server_cpu(sync) - before
        await client.aclose()
        sync.close()
    print(json.dumps(report))


if __name__ == "__main__":
    TREE = Tree()
    asyncio.run(main(TREE, read(TREE, sys.argv[1]), sys.argv[2], int(sys.argv[3])))
