"""The compiled core against the python reference: its kernel, the stage it serves, the command.

``python -m bench core`` (``core.md``, ``core.json``), on the Reuters-21578 stories:

* **kernel**: the sketches of the Reuters-21578 stories' shingle sets
  (:func:`neardup.sketch.sets.sketch_sets` against ``neardup._core.sketch_sets``), batches of 512
  as the engine makes them, the shingle hashes made beforehand (not timed);
* **lines**: the line keys of the same stories (:func:`neardup.sketch.lines.lines_of` text by
  text against :func:`neardup.stream.core.lines_of_many` a batch at a time), as the boilerplate
  learner reads them (no source, two to ``boilerplate_tokens`` tokens);
* **features**: a batch's canonical forms to white space folded, shingles, and the long texts'
  sketches and passages (:func:`neardup.sketch.sets.text_features` against
  ``neardup._core.text_features``), the canonical forms made beforehand (not timed);
* **prepare**: the whole per-batch stage (:func:`neardup.stream.engine.prepare.prepare`) over
  the same batches, with the compiled core and with ``NEARDUP_CORE=python``;
* **command**: ``neardup dedup`` on the whole corpus as a user runs it (start-up in, memory
  store), ``NEARDUP_CORE=python`` against the compiled core, one process after the other.

CPU seconds (this process's for the kernel and the stage, the child's for the command), the
least of ``--repeats`` runs each: on a machine that runs other work too, CPU time moves less than
wall time does. Read ratios, not absolutes.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import cli
from bench.cli import say
from bench.readings import git_state, machine_info, write_corpus
from harness.data import reuters
from neardup.sketch import features, sets
from neardup.sketch.lines import lines_of
from neardup.stream import core
from neardup.stream.engine.prepare import prepare
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import PASSAGE_PROBES, PASSAGE_SPAN, PASSAGE_TOKENS, Policy

BATCH = 512
PACKAGES = ("neardup", "numpy")
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


def rustc() -> str:
    """The Rust compiler's version (the one on PATH: what built the core, where it is there)."""
    try:
        done = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return "not found"
    return done.stdout.strip() or "not found"


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


def line_keys(texts: Sequence[str], policy: Policy) -> tuple[Callable[[], None], ...]:
    """The line keys of every text as the boilerplate learner reads them: by the reference,
    text by text, and by the core in use, a batch at a time."""
    bounds = {"min_tokens": 2, "max_tokens": policy.boilerplate_tokens}

    def reference() -> None:
        for text in texts:
            lines_of(text, "", policy.seed, **bounds)

    def compiled() -> None:
        for lo in range(0, len(texts), BATCH):
            batch = texts[lo : lo + BATCH]
            core.lines_of_many(batch, [""] * len(batch), policy.seed, **bounds)

    return reference, compiled


def measure(rows: Sequence[dict[str, Any]], repeats: int) -> list[dict[str, Any]]:
    """The four rows of the report: what, and the reference's and the compiled core's CPU s."""
    texts = [str(r["text"]) for r in rows]
    policy = Policy()
    batches = shingled(texts, policy)
    hasher = policy.hasher

    def kernel(fn: Callable[..., object]) -> Callable[[], None]:
        def run() -> None:
            for hashes, offsets, docs in batches:
                fn(hasher, hashes, offsets, docs)

        return run

    articles = [Article(str(r["id"]), t) for r, t in zip(rows, texts, strict=True)]

    def stage() -> None:
        for lo in range(0, len(articles), BATCH):
            prepare(policy, articles[lo : lo + BATCH])

    folded = [features.fold_batch(texts[lo : lo + BATCH]) for lo in range(0, len(texts), BATCH)]
    passages = sets.Passages(
        max(1, PASSAGE_TOKENS - policy.shingle_size + 1), PASSAGE_SPAN, PASSAGE_PROBES
    )

    def featured(fn: Callable[..., object]) -> Callable[[], None]:
        def run() -> None:
            for batch in folded:
                fn(
                    hasher,
                    batch,
                    w=policy.shingle_size,
                    seed=policy.seed,
                    min_tokens=policy.short_tokens,
                    passages=passages,
                )

        return run

    out = []
    say("kernel")
    ref, fast = best(kernel(sets.sketch_sets), repeats), best(kernel(core.sketch_sets), repeats)
    out.append({"what": "kernel", "reference_s": ref, "compiled_s": fast})
    say("lines")
    ref, fast = (best(run, repeats) for run in line_keys(texts, policy))
    out.append({"what": "lines", "reference_s": ref, "compiled_s": fast})
    say("features")
    ref = best(featured(sets.text_features), repeats)
    fast = best(featured(core.text_features), repeats)
    out.append({"what": "features", "reference_s": ref, "compiled_s": fast})
    say("prepare")
    ref = best(_with_core("python", stage), repeats)
    fast = best(_with_core(None, stage), repeats)
    out.append({"what": "prepare", "reference_s": ref, "compiled_s": fast})
    say("neardup dedup")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        write_corpus(rows, corpus)
        ref = command_seconds(corpus, "python", repeats)
        fast = command_seconds(corpus, None, repeats)
    out.append({"what": "command", "reference_s": ref, "compiled_s": fast})
    return [{**r, "ratio": r["reference_s"] / r["compiled_s"]} for r in out]


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "core",
        __doc__,
        repeats=(5, "runs of each, the least CPU time kept"),
        docs=(0, "the first N stories (0: all)"),
    )
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.docs < 0:
        parser.error("need --repeats >= 1 and --docs >= 0")
    if core.compiled() is None:
        print("the compiled core is not built (make install): nothing to compare", file=sys.stderr)
        return 2
    cli.sigterm_unwinds()
    started = time.perf_counter()
    rows = list(reuters()[: args.docs or None])
    measured = measure(rows, args.repeats)
    result: dict[str, Any] = {
        "generated": cli.now(),
        "seconds": round(time.perf_counter() - started, 1),
        "command": cli.command("core", argv),
        "machine": {**machine_info(PACKAGES), "rustc": rustc()},
        "git": git_state(),
        "docs": len(rows),
        "batch": BATCH,
        "repeats": args.repeats,
        "rows": measured,
    }
    from bench import core_tables

    cli.write(args.out, "core", result, core_tables.markdown(result))
    say(f"wrote {args.out / 'core.md'} and core.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
