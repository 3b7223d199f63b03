"""Where a ``neardup worker``'s time goes: py-spy's collapsed stacks sorted into categories.

``py-spy record --format raw --idle`` writes one line per distinct stack (``frame;frame;... N``).
A sample of the main thread belongs to the first category in :data:`RULES` with a frame below the
event loop's ``Handle._run`` (the running callback), so logging inside the producer counts as
logging and the producer's socket write as publishing; a stack ending in ``select`` is idle.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

__all__ = ["IDLE", "analyse_profile"]

IDLE = "idle: event loop waiting (Redis replies, delivery acks, fetches)"
LOOP = "asyncio event loop itself"
UNATTRIBUTED = "unattributed (truncated stack)"

# (category, file prefixes, function names), in priority order.
RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("logging", ("logging/",), ()),
    ("exact verification (Jaccard)", ("sketch/verify.py",), ("_similarity",)),
    ("sketches (features, MinHash, SimHash, keys)", ("sketch/",), ("prepare",)),
    ("Redis (client side: pack, send, parse)", ("redis/", "stream/index/"), ()),
    ("parsing and validation", ("stream/schema.py",), ("BatchHandler.parse",)),
    (
        "publishing verdicts (faust send, aiokafka producer)",
        ("aiokafka/producer/", "faust/topics.py", "faust/channels.py", "faust/transport/producer"),
        ("Worker.publish", "Verdict.to_json", "Verdict.to_dict"),
    ),
    ("metrics (prometheus_client)", ("prometheus_client/",), ()),
    ("engine: records, verdict logic", ("stream/",), ()),
    ("faust/aiokafka: fetch, stream, ack", ("faust/", "mode/", "aiokafka/"), ()),
)
KEY_FUNCTIONS = (
    "Engine.process",
    "prepare",
    "simhash_many",
    "batch_shingle_hashes",
    "normalize_batch",
    "normalize",
    "unique",
    "MinHasher.signatures",
    "RedisIndex.register",
    "RedisIndex.records",
    "Engine._cluster_of",
    "Engine._decide",
    "Worker.publish",
    "BatchHandler.parse",
    "Stream.take_events",
)


def _split_frame(frame: str) -> tuple[str, str]:
    name, _, path = frame.rpartition(" (")
    return (name, path.rstrip(")")) if name else (frame, "")


def _matches(frame: str, prefixes: tuple[str, ...], names: tuple[str, ...]) -> bool:
    name, path = _split_frame(frame)
    return path.startswith(prefixes) or name in names or name.split(".<")[0] in names


def _category(frames: list[str]) -> str:
    if frames and frames[-1].startswith("EpollSelector.select"):
        return IDLE
    cut = max((i for i, f in enumerate(frames) if f.startswith("Handle._run ")), default=-1)
    running = frames[cut + 1 :]
    for category, prefixes, names in RULES:
        if any(_matches(f, prefixes, names) for f in running):
            return category
    return LOOP if cut >= 0 or any("_run_once" in f for f in frames) else UNATTRIBUTED


def analyse_profile(raw: str) -> dict[str, Any]:
    """Classify py-spy's collapsed stacks: per thread, per category, hottest functions."""
    threads: Counter[str] = Counter()
    cats: Counter[str] = Counter()
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    consumer_busy = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = stack.split(";")
        if any(f.startswith("ServiceThread._start_thread") for f in frames):
            threads["faust consumer thread"] += n
            if not frames[-1].startswith("EpollSelector.select"):
                consumer_busy += n
            continue
        if not frames[0].startswith("<module>"):
            threads["other threads / truncated"] += n
            continue
        threads["main (event loop: agent, engine, publish)"] += n
        category = _category(frames)
        cats[category] += n
        if category != IDLE:
            own[frames[-1]] += n
        for name in {_split_frame(f)[0] for f in frames}:
            if name in KEY_FUNCTIONS:
                inclusive[name] += n
    main = sum(cats.values())
    busy = main - cats[IDLE]

    def share(c: int, of: int) -> float:
        return round(100.0 * c / of, 1) if of else 0.0

    return {
        "samples": sum(threads.values()),
        "threads": dict(threads),
        "main_samples": main,
        "main_busy_pct": share(busy, main),
        "consumer_thread_busy_pct": share(consumer_busy, threads["faust consumer thread"]),
        "categories_pct_of_main": {c: share(n, main) for c, n in cats.most_common()},
        "categories_pct_of_busy": {c: share(n, busy) for c, n in cats.most_common() if c != IDLE},
        "top_functions_pct_of_busy": {f: share(n, busy) for f, n in own.most_common(15)},
        "key_functions_inclusive_pct_of_busy": {
            f: share(inclusive[f], busy) for f in KEY_FUNCTIONS if inclusive[f]
        },
    }
