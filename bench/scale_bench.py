"""Scale: ``neardup dedup`` beside rensa as whole processes, from 20,000 to 300,000 documents.

The corpus (:mod:`bench.scale_corpus`): the Reuters-21578 stories in the wire's order, then copies
of earlier documents (drawn uniformly from everything before, so copies of copies occur) with 1-5%
of their words substituted, inserted or deleted; every size is a prefix of one seeded stream, so
20,000 documents are the first 20,000 stories (no constructed copies) and a larger size adds
copies, each story's family growing with it (later documents have more near-copies to verify).

At each size, alternated ``--reps`` times: ``neardup dedup`` (memory store, defaults), rensa's
program with the exact check of its candidates (``bench/peers/rensa_dedup.py --verify``, the job
neardup does) and without it; datasketch's program at the smallest size only. Wall clock from
spawn to exit, the child's CPU from ``os.wait4``, its peak RSS polled with psutil (children
included) every 50 ms; docs/s = documents / wall clock (best run).

Quality: truth = the constructed (copy, source) pairs whose exact Jaccard of word 3-shingles
(:func:`harness.corpus.peer_shingles`, the peers' shingling) is >= 0.8. rensa links a pair when
the source is among the copy's candidates; neardup when the copy's verdict names the source as
``duplicate_of`` or gives it the source's cluster (as each verdict says it). Precision: the share
of reported pairs (rensa: every (document, candidate); neardup: every (document,
``duplicate_of``)) whose exact Jaccard is >= 0.8. Recall is also given over the truth pairs
whose tokens with a digit are the same (neardup takes a short text with another figure for
another story, on purpose), and, for neardup, counting a copy that names the source among its
``related`` texts (alike but for a fact: a figure, or a word of a short text) as linked.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench import cli, scale_tables
from bench.cli import say
from bench.command_bench import neardup_summary, peer_summary, profile_memory
from bench.readings import (
    ChildRun,
    header,
    loadavg,
    machine_info,
    other_load,
    run_child,
    write_corpus,
)
from bench.scale_corpus import EDIT_MAX, EDIT_MIN, Corpus, Shingles, build
from harness.data import reuters
from harness.workers import NEARDUP

PYTHON = Path(sys.executable)
PEERS = Path(__file__).resolve().parent / "peers"
PACKAGES = ("neardup", "rensa", "datasketch", "numpy", "orjson", "psutil")
THRESHOLD = 0.8
_FIGURE = re.compile(r"\S*\d\S*")  # a token with a digit
KB = 1000.0
MB = 1e6
TARGETS: dict[str, str] = {
    "faster_smallest": "whole command faster than rensa with the exact check, smallest size "
    "(Reuters stories)",
    "faster_largest": "whole command faster than rensa with the exact check, largest size",
    "flat_throughput": "docs/s at the largest size >= 80% of docs/s at the smallest",
    "memory_per_doc": "peak memory per indexed document <= 2 KB at the largest size",
}
FLAT_MIN = 0.8
MEMORY_MAX_KB = 2.0


@dataclass(frozen=True)
class System:
    key: str
    name: str
    command: str  # as a reader would type it
    argv: Callable[[Path, Path], list[str]]  # (corpus, output) -> argv
    kind: str  # "neardup" | "peer"


def _neardup(corpus: Path, out: Path) -> list[str]:
    return [
        str(NEARDUP),
        "dedup",
        str(corpus),
        "--store",
        "memory",
        "--no-progress",
        "-o",
        str(out),
    ]


def _peer(program: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda corpus, out: [str(PYTHON), str(PEERS / program), str(corpus), str(out), *extra]


NEARDUP_SYS = System(
    "neardup",
    "neardup dedup",
    "neardup dedup corpus.jsonl --store memory --no-progress -o verdicts.jsonl",
    _neardup,
    "neardup",
)
RENSA_CHECKED = System(
    "rensa_checked",
    "rensa + exact check",
    "python bench/peers/rensa_dedup.py corpus.jsonl out.jsonl --verify",
    _peer("rensa_dedup.py", "--verify"),
    "peer",
)
RENSA = System(
    "rensa",
    "rensa (candidates)",
    "python bench/peers/rensa_dedup.py corpus.jsonl out.jsonl",
    _peer("rensa_dedup.py"),
    "peer",
)
DATASKETCH = System(
    "datasketch",
    "datasketch (candidates)",
    "python bench/peers/datasketch_dedup.py corpus.jsonl out.jsonl",
    _peer("datasketch_dedup.py"),
    "peer",
)


@dataclass
class Side:
    system: System
    docs: int
    output: Path
    runs: list[ChildRun] = field(default_factory=list)
    summary: dict[str, int] = field(default_factory=dict)

    def add(self, run: ChildRun) -> None:
        self.runs.append(run)
        self.summary = (neardup_summary if self.system.kind == "neardup" else peer_summary)(
            run.stderr
        )
        decided = self.summary.get("docs")
        if self.system.kind == "neardup":
            s = self.summary
            decided = s.get("original", 0) + s.get("near_duplicate", 0) + s.get("duplicate", 0)
            if s.get("invalid"):
                raise RuntimeError(f"neardup found invalid lines: {s}")
        if decided != self.docs:
            raise RuntimeError(f"{self.system.name} decided {decided} of {self.docs}: {run.stderr}")

    def result(self, baseline_rss: int) -> dict[str, Any]:
        best = min(r.wall_s for r in self.runs)
        peak = max(r.peak_rss for r in self.runs)
        return {
            "key": self.system.key,
            "system": self.system.name,
            "command": self.system.command,
            "docs": self.docs,
            "runs": len(self.runs),
            "wall_s": [r.wall_s for r in self.runs],
            "cpu_s": [r.cpu_s for r in self.runs],
            "peak_rss_bytes": [r.peak_rss for r in self.runs],
            "best_wall_s": best,
            "best_cpu_s": min(r.cpu_s for r in self.runs),
            "docs_per_s": self.docs / best,
            "peak_mb": peak / MB,
            "kb_per_doc": peak / KB / self.docs,
            "baseline_mb": baseline_rss / MB,
            "net_kb_per_doc": max(0, peak - baseline_rss) / KB / self.docs,
            "summary": self.summary,
        }


# -- quality ------------------------------------------------------------------------------------


class Judge:
    """Exact Jaccard of pairs (cached: the sizes are prefixes, so their pairs repeat)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.index = {d["id"]: i for i, d in enumerate(corpus.docs)}
        self._shingles: Shingles | None = None
        self._cache: dict[tuple[int, int], float] = {}
        self._figures: dict[tuple[int, int], bool] = {}

    def jaccard(self, i: int, j: int) -> float:
        key = (i, j) if i > j else (j, i)
        got = self._cache.get(key)
        if got is None:
            if self._shingles is None:
                started = time.perf_counter()
                self._shingles = Shingles([d["text"] for d in self.corpus.docs])
                say(
                    f"shingled {len(self.corpus.docs):,} documents in "
                    f"{time.perf_counter() - started:.1f} s"
                )
            got = self._cache[key] = self._shingles.jaccard(i, j)
        return got

    def truth(self, n: int) -> list[tuple[int, int]]:
        """The constructed (copy, source) pairs of the first ``n`` documents at or above the
        threshold."""
        src = self.corpus.sources
        return [
            (c, src[c])
            for c in range(self.corpus.stories, n)
            if self.jaccard(c, src[c]) >= THRESHOLD
        ]

    def constructed(self, n: int) -> dict[str, Any]:
        src = self.corpus.sources
        copies = range(self.corpus.stories, n)
        sims = [self.jaccard(c, src[c]) for c in copies]
        of_copies = sum(src[c] >= self.corpus.stories for c in copies)
        return {
            "copies": len(sims),
            "copies_of_copies": of_copies,
            "truth_pairs": sum(s >= THRESHOLD for s in sims),
            "below_threshold": sum(s < THRESHOLD for s in sims),
            "median_jaccard": statistics.median(sims) if sims else None,
            "edits_median": statistics.median(self.corpus.edits[self.corpus.stories : n])
            if sims
            else None,
        }

    def score(
        self,
        reported: list[tuple[int, int]],
        linked: Callable[[int, int], bool],
        truth: list[tuple[int, int]],
        related: Callable[[int, int], bool] | None = None,
    ) -> dict[str, Any]:
        true = sum(self.jaccard(c, s) >= THRESHOLD for c, s in reported)
        hit = sum(linked(c, s) for c, s in truth)
        same = [(c, s) for c, s in truth if not self.figure_changed(c, s)]
        kept = sum(linked(c, s) for c, s in same)
        return {
            "reported_pairs": len(reported),
            "reported_true": true,
            "precision": true / len(reported) if reported else None,
            "truth_pairs": len(truth),
            "truth_linked": hit,
            "recall": hit / len(truth) if truth else None,
            # neardup calls a short text with another figure another story, on purpose
            "same_figures_pairs": len(same),
            "recall_same_figures": kept / len(same) if same else None,
            # neardup also names texts alike but for their facts (related): linked, not copies
            "recall_with_related": (
                sum(linked(c, s) or related(c, s) for c, s in truth) / len(truth)
                if related is not None and truth
                else None
            ),
        }

    def figure_changed(self, c: int, s: int) -> bool:
        """Whether an edit touched a token with a digit (a copy whose figures differ); read once
        a pair, as every system is scored on the same truth."""
        got = self._figures.get((c, s))
        if got is None:
            docs = self.corpus.docs
            got = self._figures[(c, s)] = sorted(_FIGURE.findall(docs[c]["text"])) != sorted(
                _FIGURE.findall(docs[s]["text"])
            )
        return got

    def peer(self, output: Path, truth: list[tuple[int, int]]) -> dict[str, Any]:
        cands: list[set[int]] = []
        with output.open("rb") as fh:
            for line in fh:
                if line.strip():
                    cands.append({self.index[x] for x in orjson.loads(line)["candidates"]})
        reported = [(c, s) for c, got in enumerate(cands) for s in sorted(got)]
        return self.score(reported, lambda c, s: s in cands[c], truth)

    def neardup(self, output: Path, truth: list[tuple[int, int]]) -> dict[str, Any]:
        dup_of: list[int | None] = []
        cluster: list[str] = []
        related: list[set[int]] = []
        kinds: dict[str, int] = {}
        with output.open("rb") as fh:
            for line in fh:
                if not line.strip():
                    continue
                v = orjson.loads(line)
                if self.index[v["id"]] != len(dup_of):
                    raise RuntimeError(f"neardup's verdicts are out of input order at {v['id']}")
                d = v["duplicate_of"]
                dup_of.append(None if d is None else self.index[d])
                cluster.append(v["cluster"])
                related.append({self.index[r["id"]] for r in v.get("related", ())})
                kinds[v["verdict"]] = kinds.get(v["verdict"], 0) + 1
        reported = [(c, s) for c, s in enumerate(dup_of) if s is not None]
        got = self.score(
            reported,
            lambda c, s: dup_of[c] == s or cluster[c] == cluster[s],
            truth,
            lambda c, s: s in related[c],
        )
        return got | {"verdicts": kinds}


# -- the run ------------------------------------------------------------------------------------


def measure(args: argparse.Namespace, sizes: list[int], workdir: Path) -> dict[str, Any]:
    stories = reuters()
    started = time.perf_counter()
    corpus = build(stories, max(sizes), args.seed)
    say(
        f"corpus: {corpus.stories:,} stories + {corpus.copies(max(sizes)):,} copies "
        f"in {time.perf_counter() - started:.1f} s"
    )
    files = {}
    for n in sizes:
        files[n] = workdir / f"corpus_{n}.jsonl"
        write_corpus(corpus.docs[:n], files[n])
    one = workdir / "one.jsonl"
    write_corpus(corpus.docs[:1], one)
    systems = [NEARDUP_SYS, RENSA_CHECKED, RENSA]
    extra = [] if args.no_datasketch else [DATASKETCH]
    baseline: dict[str, int] = {}
    for system in [*systems, *extra]:  # untimed: caches warm; its peak is the start-up's
        run = run_child(
            system.argv(one, workdir / "one.out"), workdir, timeout_s=args.timeout, poll_rss=True
        )
        baseline[system.key] = run.peak_rss
        say(f"one-line run: {system.name} {run.wall_s:.2f} s, peak {run.peak_rss / MB:.0f} MB")

    judge = Judge(corpus)
    out_sizes = []
    profile: dict[str, Any] = {"skipped": f"--profile-size {args.profile_size} is not a size run"}
    for n in sizes:
        here = systems + (extra if n == min(sizes) else [])
        sides = [Side(s, n, workdir / f"{s.key}_{n}.out") for s in here]
        for rep in range(1, args.reps + 1):
            for side in sides:
                run = run_child(
                    side.system.argv(files[n], side.output),
                    workdir,
                    timeout_s=args.timeout,
                    poll_rss=True,
                )
                side.add(run)
                say(
                    f"{n:,} docs, {rep}/{args.reps}: {side.system.name} {run.wall_s:.2f} s "
                    f"({n / run.wall_s:,.0f} docs/s), CPU {run.cpu_s:.2f} s, "
                    f"peak {run.peak_rss / MB:.0f} MB"
                )
        rows = []
        truth = judge.truth(n)
        for side in sides:
            row = side.result(baseline[side.system.key])
            score = judge.neardup if side.system.kind == "neardup" else judge.peer
            row["quality"] = score(side.output, truth)
            side.output.unlink()
            rows.append(row)
            q = row["quality"]
            say(
                f"{n:,} docs: {side.system.name} reports {q['reported_pairs']:,} pairs, "
                f"recall {_share(q['recall'])}, precision {_share(q['precision'])}"
            )
        if n == args.profile_size:  # where neardup's time goes, at a size with copies
            best = min(r["best_wall_s"] for r in rows if r["key"] == NEARDUP_SYS.key)
            profile = profile_memory(files[n], workdir, best)
            profile["docs"] = n
        out_sizes.append(
            {
                "docs": n,
                "stories": min(n, corpus.stories),
                "copies": corpus.copies(n),
                "copy_share": corpus.copies(n) / n,
                "bytes": files[n].stat().st_size,
                "constructed": judge.constructed(n),
                "rows": rows,
            }
        )
        files[n].unlink()
    lengths = [len(d["text"]) for d in corpus.docs]
    return {
        "corpus": {
            "source": "harness.data.reuters(), then copies (bench/scale_corpus.py)",
            "stories": corpus.stories,
            "docs": len(corpus.docs),
            "seed": args.seed,
            "edit_share": [EDIT_MIN, EDIT_MAX],
            "copy_sources": "uniform over every earlier document",
            "median_chars": statistics.median(lengths),
            "mean_chars": statistics.mean(lengths),
        },
        "threshold": THRESHOLD,
        "baseline_mb": {k: v / MB for k, v in baseline.items()},
        "sizes": out_sizes,
        "profile": profile,
        "ratios": ratios(out_sizes),
        "targets": targets(out_sizes),
    }


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def _row(size: dict[str, Any], key: str) -> dict[str, Any] | None:
    return next((r for r in size["rows"] if r["key"] == key), None)


def ratios(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    """neardup's wall clock over rensa-with-check's at each size; each system's docs/s at the
    largest size over its docs/s at the smallest."""
    vs = []
    for s in sizes:
        nd, rc = _row(s, "neardup"), _row(s, "rensa_checked")
        if nd and rc:
            vs.append(
                {
                    "docs": s["docs"],
                    "neardup_over_rensa_checked": nd["best_wall_s"] / rc["best_wall_s"],
                    "neardup_cpu_over_rensa_checked": nd["best_cpu_s"] / rc["best_cpu_s"],
                }
            )
    flat = []
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        for r in large["rows"]:
            base = _row(small, r["key"])
            if base:
                flat.append(
                    {
                        "system": r["system"],
                        "smallest": small["docs"],
                        "largest": large["docs"],
                        "docs_per_s_smallest": base["docs_per_s"],
                        "docs_per_s_largest": r["docs_per_s"],
                        "largest_over_smallest": r["docs_per_s"] / base["docs_per_s"],
                    }
                )
    return {"vs_rensa_checked": vs, "throughput": flat}


def targets(sizes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    small, large = sizes[0], sizes[-1]

    def over(s: dict[str, Any]) -> float | None:
        nd, rc = _row(s, "neardup"), _row(s, "rensa_checked")
        return nd["best_wall_s"] / rc["best_wall_s"] if nd and rc else None

    nd_small, nd_large = _row(small, "neardup"), _row(large, "neardup")
    flat = None
    if len(sizes) > 1 and nd_small and nd_large:
        flat = nd_large["docs_per_s"] / nd_small["docs_per_s"]
    measured = {
        "faster_smallest": (over(small), "<", 1.0, small["docs"]),
        "faster_largest": (over(large) if len(sizes) > 1 else None, "<", 1.0, large["docs"]),
        "flat_throughput": (flat, ">=", FLAT_MIN, large["docs"]),
        "memory_per_doc": (
            nd_large["kb_per_doc"] if nd_large else None,
            "<=",
            MEMORY_MAX_KB,
            large["docs"],
        ),
    }
    out = {}
    for key, (value, op, bound, docs) in measured.items():
        met = None
        if value is not None:
            met = value < bound if op == "<" else value >= bound if op == ">=" else value <= bound
        out[key] = {
            "what": TARGETS[key],
            "docs": docs,
            "measured": value,
            "bound": f"{op} {bound:g}",
            "met": met,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "scale",
        __doc__,
        seed=26,
        sizes=(
            "20000,100000,300000",
            "documents per run, comma-separated (prefixes of one corpus)",
        ),
        reps=(1, "runs per command and size, alternated; best wall clock kept"),
        timeout=(1800.0, "seconds before a child is killed"),
        no_datasketch=(False, "skip datasketch's program (otherwise run at the smallest size)"),
        profile_size=(
            100_000,
            "the size at which one more neardup run is profiled (py-spy); 0: none",
            int,
        ),
    )
    args = parser.parse_args(argv)
    try:
        sizes = sorted({int(x.replace("_", "")) for x in args.sizes.split(",") if x.strip()})
    except ValueError:
        parser.error("--sizes takes whole numbers, comma-separated")
    if not sizes or sizes[0] < 1 or args.reps < 1:
        parser.error("need --sizes >= 1 and --reps >= 1")
    cli.sigterm_unwinds()
    started = time.perf_counter()
    busy = other_load()
    machine = {**machine_info(PACKAGES), "cores_busy_before_run": round(busy, 2)}
    say(f"other processes kept {busy:.2f} cores busy")
    with tempfile.TemporaryDirectory(prefix="neardup-bench-scale-") as tmp:
        measured = cli.exits(
            "scale benchmark", lambda: measure(args, sizes, Path(tmp)), RuntimeError
        )
    if isinstance(measured, int):
        return measured
    machine["load_average_1m_at_end"] = (loadavg() or [float("nan")])[0]
    result = {**header("scale", argv, started, machine), "reps": args.reps, **measured}
    cli.write(args.out, "scale", result, scale_tables.markdown(result))
    print(scale_tables.summary(result))
    say(f"wrote {args.out / 'scale.md'} and scale.json")
    return 0


__all__ = ["main"]
