"""Where a ``neardup worker``'s time goes: py-spy's collapsed stacks (``record --format raw``, a
line per distinct stack: ``frame;frame;... N``) sorted into categories.

:func:`analyse_profile` takes the first category in :data:`RULES` of the running callback;
:func:`attribute_deepest` and :func:`attribute_command` the part of the *deepest* frame one owns,
so a view calling the engine calling ``sketch/`` is sketches.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEDUP_PARTS",
    "HTTP_CHECK_PARTS",
    "IDLE",
    "LOOP",
    "Attribution",
    "Part",
    "Whole",
    "analyse_profile",
    "attribute_command",
    "attribute_deepest",
    "command_part",
    "deepest_part",
    "find_py_spy",
]

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
    "Engine._resolve",
    "judge",
    "Worker.publish",
    "BatchHandler.parse",
    "Stream.take_events",
)


def _split_frame(frame: str) -> tuple[str, str]:
    """A frame's function and its file, as the rules name it: py-spy shows a file relative
    to its ``sys.path`` entry, ``neardup/stream/...`` for the installed package, whose
    ``stream/`` and ``sketch/`` are the repository's folders."""
    name, _, path = frame.rpartition(" (")
    path = path.rstrip(")").removeprefix("neardup/")
    return (name, path) if name else (frame, "")


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


# --------------------------------------------------------------------------- deepest known frame


@dataclass(frozen=True)
class Part:
    """A part of the program, known by its frames' files or function names. A ``fallback`` part
    takes a sample only when no other part has a frame in it (the event loop wraps everything)."""

    name: str
    prefixes: tuple[str, ...]
    functions: tuple[str, ...] = ()
    fallback: bool = False
    excludes: tuple[str, ...] = ()  # files under a prefix that are helpers of whoever calls them

    def owns(self, frame: str) -> bool:
        if self.excludes and _split_frame(frame)[1].startswith(self.excludes):
            return False
        return _matches(frame, self.prefixes, self.functions)


OUTSIDE_LOOP = "outside the event loop (start-up, truncated stack)"
UNKNOWN = "other code run by the event loop"
WEB = "web server (aiohttp, faust web, the view, orjson)"
ENGINE = "engine (stream/: process, prepare, records, verdict)"
# Listed in priority order for a frame several prefixes match (stream/worker/http/web.py before
# stream/).
HTTP_CHECK_PARTS: tuple[Part, ...] = (
    Part("sketches (features, MinHash, SimHash, evidence)", ("sketch/",)),
    Part("Redis client (redis-py, stream/index/)", ("redis/", "stream/index/")),
    Part(WEB, ("aiohttp/", "faust/web/", "stream/worker/http/web.py", "multidict/", "yarl/")),
    Part(ENGINE, ("stream/",)),
    Part(
        "faust/Kafka background (faust, mode, aiokafka)",
        ("faust/", "mode/", "aiokafka/"),
        # faust's JSON (orjson) and sensors serve their caller: the view's answer is the web
        # server's, a stream event's is faust's
        excludes=("faust/utils/json.py", "faust/sensors/"),
    ),
    Part(LOOP, ("asyncio/", "selectors.py"), fallback=True),
)
_LOOP_FRAMES = (
    "Handle._run (asyncio/events.py)",
    "BaseEventLoop._run_once (asyncio/",
    "BaseEventLoop.run_forever (asyncio/",
)
_WAITS = {
    "selectors.py": ("select", "poll"),
    "threading.py": ("wait", "_wait_for_tstate_lock", "join", "acquire"),
    "queue.py": ("get",),
}


def _waiting(frames: list[str]) -> bool:
    """The stack ends in a wait: the selector's select/poll, a lock, a condition, a queue."""
    if not frames:
        return False
    name, path = _split_frame(frames[-1])
    return name.rsplit(".", 1)[-1] in _WAITS.get(path, ())


def _thread(frames: list[str]) -> tuple[str, list[str]]:
    """(thread name, the Python frames): ``--threads`` puts ``thread (ID): NAME`` first."""
    if frames and frames[0].startswith("thread ("):
        head, _, name = frames[0].partition("): ")
        return name or head + ")", frames[1:]
    return "", frames


def _deepest(frames: Sequence[str], parts: Sequence[Part]) -> str | None:
    """The part of the deepest frame a part owns; a fallback part only when no other owns one
    (so a leaf in asyncio counts for its caller's part, when it has one)."""
    fallback: str | None = None
    for frame in reversed(frames):
        part = next((p for p in parts if p.owns(frame)), None)
        if part is None:
            continue
        if not part.fallback:
            return part.name
        fallback = fallback or part.name
    return fallback


def deepest_part(frames: list[str], parts: tuple[Part, ...]) -> str:
    """The part of the deepest frame below the event loop that a non-fallback part owns, else the
    deepest fallback part's, else :data:`UNKNOWN`; :data:`IDLE` for a stack ending in a wait,
    :data:`OUTSIDE_LOOP` without the event loop."""
    if _waiting(frames):
        return IDLE
    cut = max((i for i, f in enumerate(frames) if f.startswith(_LOOP_FRAMES)), default=-1)
    if cut < 0:
        return OUTSIDE_LOOP
    return _deepest(frames[cut:], parts) or UNKNOWN


@dataclass
class ThreadSamples:
    """One thread's samples and how many of them were not waiting."""

    samples: int = 0
    busy: int = 0

    @property
    def busy_pct(self) -> float:
        return round(100.0 * self.busy / self.samples, 1) if self.samples else 0.0


@dataclass
class Attribution:
    """py-spy's samples of a worker: per thread, and the main thread's per part and leaf."""

    threads: dict[str, ThreadSamples] = field(default_factory=dict)
    parts: Counter[str] = field(default_factory=Counter)  # main thread, IDLE included
    # main thread, busy samples only: (leaf frame, its sample's part)
    leaves: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def main(self) -> ThreadSamples:
        return self.threads.get(MAIN_THREAD, ThreadSamples())

    @property
    def consumer(self) -> ThreadSamples:
        return self.threads.get(CONSUMER_THREAD, ThreadSamples())


MAIN_THREAD = "main (event loop)"
CONSUMER_THREAD = "faust consumer thread"


def attribute_deepest(raw: str, parts: tuple[Part, ...] = HTTP_CHECK_PARTS) -> Attribution:
    """Sort collapsed stacks (``--idle``, with or without ``--threads``) by thread, and the main
    thread's by :func:`deepest_part` and by leaf function."""
    got = Attribution()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        name, frames = _thread(stack.split(";"))
        if frames and frames[0].startswith("<module>"):
            label = MAIN_THREAD
        elif any(f.startswith("ServiceThread._start_thread") for f in frames):
            label = CONSUMER_THREAD
        else:
            label = f"other: {name or 'unnamed'}"
        thread = got.threads.setdefault(label, ThreadSamples())
        thread.samples += n
        waiting = _waiting(frames)
        thread.busy += 0 if waiting else n
        if label == MAIN_THREAD:
            part = deepest_part(frames, parts)
            got.parts[part] += n
            if not waiting and frames:
                got.leaves[frames[-1], part] += n
    return got


# --------------------------------------------------------------------------- a whole command


@dataclass(frozen=True)
class Whole(Part):
    """A part that takes every sample with one of its frames, whatever runs deeper (start-up is
    start-up even when the module imported is ``sketch/``)."""


NO_PYTHON = "interpreter, no Python frame (before site, at exit)"
START_UP = "start-up (imports, module-level code, policy set-up)"
BOILERPLATE = "boilerplate lines (sketch/lines.py, stream/engine/boilerplate.py)"
DEDUP_SKETCHES = "sketches (stream/engine/prepare.py, sketch/: features, MinHash, SimHash, LSH)"
FACTS = "short-text facts (sketch/facts.py)"
INDEX = "index (stream/index/)"
VERDICT = "verification and verdicts (sketch/verify.py, engine, records, model)"
IO = "input/output (stream/cli/ reading and writing, stream/schema.py, orjson, rich)"
ARGS = "argument parsing (typer, click)"
DEDUP_LOOP = "asyncio event loop"
OTHER = "other (no known part in the stack)"
# ``neardup dedup FILE``: the Whole parts first (the first with a frame in the stack takes the
# sample), then the deepest frame of the others, in this order for a frame two of them match.
DEDUP_PARTS: tuple[Part, ...] = (
    # a frame of the import system or the policy's construction (banding parameters, once);
    # the script's own module-level code is start-up too (see :func:`command_part`)
    Whole(
        START_UP,
        ("<frozen importlib", "<frozen site", "<frozen zipimport"),
        ("Policy.__post_init__",),
    ),
    Whole(
        BOILERPLATE,
        ("sketch/lines.py", "sketch/pieces.py", "stream/engine/boilerplate.py"),
        ("MemoryIndex.line_counts", "MemoryIndex.add_lines"),
    ),
    Part(FACTS, ("sketch/facts.py", "sketch/spelling.py")),
    Part(VERDICT, ("sketch/verify.py", "sketch/evidence.py")),
    Part(DEDUP_SKETCHES, ("stream/engine/prepare.py", "sketch/")),
    Part(INDEX, ("stream/index/",)),
    Part(VERDICT, ("stream/engine/", "stream/records.py", "stream/model.py")),
    Part(IO, ("stream/cli/", "stream/schema.py", "orjson/", "rich/")),
    Part(ARGS, ("typer/", "click/")),
    Part(DEDUP_LOOP, ("asyncio/", "selectors.py")),
)


def command_part(frames: list[str], parts: tuple[Part, ...] = DEDUP_PARTS) -> str:
    """The part of one sample of a command run from start to exit: :data:`NO_PYTHON` without a
    frame; the first :class:`Whole` part with a frame in the stack (the script's ``<module>`` alone
    too); else as :func:`deepest_part`, else :data:`OTHER`."""
    if not frames:
        return NO_PYTHON
    wholes = [p for p in parts if isinstance(p, Whole)]
    if len(frames) == 1 and frames[0].startswith("<module> ") and wholes:
        return wholes[0].name
    for whole in wholes:
        if any(whole.owns(f) for f in frames):
            return whole.name
    return _deepest(frames, [p for p in parts if not isinstance(p, Whole)]) or OTHER


ALL_THREADS = "all threads"


def attribute_command(raw: str, parts: tuple[Part, ...] = DEDUP_PARTS) -> Attribution:
    """Sort a whole command's collapsed stacks (without ``--idle``) by :func:`command_part` and
    by leaf function, all threads under :data:`ALL_THREADS`."""
    got = Attribution()
    total = got.threads.setdefault(ALL_THREADS, ThreadSamples())
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        _name, frames = _thread([f for f in stack.split(";") if f])
        total.samples += n
        total.busy += n
        part = command_part(frames, parts)
        got.parts[part] += n
        got.leaves[frames[-1] if frames else "(no Python frame)", part] += n
    return got


def find_py_spy() -> str | None:
    """py-spy next to this interpreter (the venv's bin, where ``make bench`` installs it), else
    on PATH; None when neither has it."""
    search = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return shutil.which("py-spy", path=search)
