"""The compiled core against the python reference: its kernel, the stage it serves, the command.

``python -m bench.core_bench`` prints a Markdown table (no report file yet):

* **kernel**: the sketches of the Reuters-21578 stories' shingle sets
  (:func:`neardup.sketch.sets.sketch_sets` against ``neardup._core.sketch_sets``), batches of 512
  as the engine makes them, the shingle hashes made beforehand (not timed);
* **prepare**: the whole per-batch stage (:func:`neardup.stream.engine.prepare.prepare`) over
  the same batches, with the compiled core and with ``NEARDUP_CORE=python``;
* **command**: ``neardup dedup`` on the whole corpus as a user runs it (start-up in, memory
  store), ``NEARDUP_CORE=python`` against the compiled core, one process after the other.

CPU seconds (this process's for the kernel and the stage, the child's for the command), the
least of ``--repeats`` runs each: on a machine that runs other work too, CPU time moves less than
wall time does. Read ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.readings import write_corpus
from harness.data import reuters
from neardup.sketch import features, sets
from neardup.stream import core
from neardup.stream.engine.prepare import prepare
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy

BATCH = 512
NEARDUP = Path(sys.executable).parent / "neardup"
ROOT = Path(__file__).resolve().parent.parent  # this tree's code first, as the tests run it
Shingled = tuple[npt.NDArray[np.uint64], npt.NDArray[np.intp], list[int]]


def best(
    run: Callable[[], object], repeats: int, clock: Callable[[], float] = time.process_time
) -> float:
    """The least time of ``repeats`` runs by ``clock``, in seconds."""
    times = []
    for _ in range(repeats):
        t0 = clock()
        run()
        times.append(clock() - t0)
    return min(times)


def children_cpu() -> float:
    """CPU seconds of the finished child processes, user and system."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def shingled(texts: Sequence[str], policy: Policy) -> list[Shingled]:
    """Each batch's shingle hashes, offsets and documents with shingles."""
    out = []
    for lo in range(0, len(texts), BATCH):
        batch = features.normalize_batch(texts[lo : lo + BATCH])
        hashes, offsets = batch.shingle_hashes(w=policy.shingle_size, seed=policy.seed)
        out.append((hashes, offsets, np.flatnonzero(np.diff(offsets) > 0).tolist()))
    return out


def _with_core(name: str | None, run: Callable[[], object]) -> Callable[[], object]:
    """``run`` under ``NEARDUP_CORE=name`` (None: unset, the compiled core where built)."""

    def wrapped() -> object:
        before = os.environ.pop(core.ENV, None)
        if name is not None:
            os.environ[core.ENV] = name
        core.compiled.cache_clear()
        try:
            return run()
        finally:
            os.environ.pop(core.ENV, None)
            if before is not None:
                os.environ[core.ENV] = before
            core.compiled.cache_clear()

    return wrapped


def command_seconds(corpus: Path, name: str | None, repeats: int) -> float:
    env = {k: v for k, v in os.environ.items() if k != core.ENV}
    env["PYTHONPATH"] = str(ROOT)
    if name is not None:
        env[core.ENV] = name
    argv = [str(NEARDUP), "dedup", str(corpus), "--store", "memory", "--no-progress"]
    argv += ["-o", os.devnull]

    def run() -> None:
        subprocess.run(argv, env=env, check=True, capture_output=True)

    return best(run, repeats, children_cpu)


def main(argv: Sequence[str] | None = None) -> int:
    args = argparse.ArgumentParser(prog="python -m bench.core_bench", description=__doc__)
    args.add_argument("--repeats", type=int, default=3)
    args.add_argument("--docs", type=int, default=0, help="the first N stories (0: all)")
    opts = args.parse_args(argv)
    if core.compiled() is None:
        print("the compiled core is not built (make install): nothing to compare", file=sys.stderr)
        return 2
    rows = reuters()[: opts.docs or None]
    texts = [str(r["text"]) for r in rows]
    policy = Policy()
    batches = shingled(texts, policy)
    hasher = policy.hasher
    table = []

    def kernel(fn: Callable[..., object]) -> Callable[[], None]:
        def run() -> None:
            for hashes, offsets, docs in batches:
                fn(hasher, hashes, offsets, docs)

        return run

    ref = best(kernel(sets.sketch_sets), opts.repeats)
    fast = best(kernel(core.sketch_sets), opts.repeats)
    table.append(("kernel: sketch_sets, batches of 512", ref, fast))
    articles = [Article(str(r["id"]), t) for r, t in zip(rows, texts, strict=True)]

    def stage() -> None:
        for lo in range(0, len(articles), BATCH):
            prepare(policy, articles[lo : lo + BATCH])

    ref = best(_with_core("python", stage), opts.repeats)
    fast = best(_with_core(None, stage), opts.repeats)
    table.append(("stage: prepare, batches of 512", ref, fast))
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        write_corpus(rows, corpus)
        ref = command_seconds(corpus, "python", opts.repeats)
        fast = command_seconds(corpus, None, opts.repeats)
    table.append(("command: neardup dedup, memory store", ref, fast))
    print(f"Reuters-21578, {len(rows):,} stories; CPU seconds, least of {opts.repeats}\n")
    print("| what | python reference s | compiled s | reference / compiled |")
    print("|---|---:|---:|---:|")
    for what, r, c in table:
        print(f"| {what} | {r:.3f} | {c:.3f} | {r / c:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
