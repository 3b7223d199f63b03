"""Engine cost per document in CPU instructions: an earlier commit against the working tree.

Timings on a shared machine move by a third from run to run; valgrind's instruction counts repeat
to about 0.1%, so a cost target is checked in instructions. For each tree (the earlier one from
``git archive``) and store, :mod:`bench.cost_workload` runs under ``valgrind --tool=callgrind``
with ``PYTHONPATH`` set to the tree, on no documents and on ``--docs``: the difference over the
documents is their cost, start-up, imports and warm-up cancelled out (one run outside valgrind
compiles the bytecode first). On Redis the count is the client's; the server's CPU is beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis

from bench import cli, cost_tables
from bench.cli import say
from bench.readings import git_state, machine_info
from harness import services
from harness.corpus import Doc, generate

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BEFORE = "e375cf9"  # the commit before issue 13's content rules
SEED = 7
STORES = ("memory", "redis")
# the cost targets set against an earlier commit: the largest change allowed, and by what
TARGETS = {
    "e375cf9": (
        0.15,
        "<= +15% (issue 13: text -> verdict no more than 15% slower than before the content rules)",
        "the commit before the content rules of issue 13",
    ),
    "ab1b087": (
        0.10,
        "<= +10% (issue 21: text -> verdict at most 10% more CPU per article than before the "
        "canonical form)",
        "the commit before the canonical form of issue 21",
    ),
    "1c51dfb": (
        0.10,
        "<= +10% (issue 22: at most 10% more CPU per article than before its boilerplate rules)",
        "the commit before issue 22's boilerplate rules",
    ),
}
RUN_TIMEOUT_S = 3600
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")

# Run by the interpreter under test with PYTHONPATH set to one tree (the earlier one too): its
# own file keeps what both trees have, and where each keeps it.
WORKLOAD = Path(__file__).resolve().with_name("cost_workload.py")


class CostError(Exception):
    """A setup fault the user can fix (no valgrind, unknown commit): message and exit 2."""


@dataclass
class Count:
    tree: str  # "before" | "now"
    store: str
    docs: int
    refs: int  # valgrind's "I refs": instructions executed by the client process
    copies: int  # verdicts with a duplicate_of: the two trees should find about the same
    server_cpu_s: float | None
    wall_s: float


@dataclass
class Cost:
    tree: str
    store: str
    refs_start: int
    refs_docs: int
    instructions_per_doc: float
    copies: int
    server_cpu_ms_per_doc: float | None


def git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=False)


def resolve_commit(rev: str) -> str:
    """The full hash of ``rev``; unknown refs fail before any minute is spent counting."""
    done = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if done.returncode != 0:
        raise CostError(f"unknown commit {rev!r} (git rev-parse --verify found no such commit)")
    return done.stdout.decode().strip()


def extract_tree(commit: str, dest: Path) -> None:
    """``git archive COMMIT | tar -x``: the earlier code without touching the working tree."""
    dest.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit], stdout=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=False)
    if archive.stdout is not None:
        archive.stdout.close()
    if archive.wait() != 0 or tar.returncode != 0:
        raise CostError(f"git archive {commit} | tar -x failed")


def valgrind_version() -> str:
    """Counting needs valgrind; say which package gives it rather than fail mid-run."""
    if shutil.which("valgrind") is None:
        raise CostError(
            "valgrind not found on PATH: the cost benchmark counts instructions with valgrind "
            "(Debian package `valgrind`: apt-get install -y valgrind)"
        )
    done = subprocess.run(["valgrind", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def write_docs(docs: Sequence[Doc], path: Path) -> None:
    """One file for both trees, so they read identical documents."""
    lines = (json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs)
    path.write_text("".join(lines), encoding="utf-8")


def worker_code_digest(root: Path = ROOT) -> str:
    """A hash of the working tree's engine code: equal at start and end, or the "now" figures
    mix two versions (the tree may be edited while the benchmark runs)."""
    h = hashlib.sha256()
    for top in ("sketch", "stream"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".lua"):
                h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Setup:
    workload: Path
    docs_file: Path
    pycache: Path
    redis_url: str


def workload_env(tree: Path, setup: Setup) -> dict[str, str]:
    """The tree on the path; one OpenBLAS thread (its spinning workers add to the count); a fixed
    hash seed and a private bytecode cache, so repeated runs execute the same instructions."""
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(tree),
        OPENBLAS_NUM_THREADS="1",
        PYTHONHASHSEED="0",
        PYTHONPYCACHEPREFIX=str(setup.pycache),
        COST_REDIS_URL=setup.redis_url,
    )
    return env


def run_workload(
    tree: Path, store: str, n: int, setup: Setup, valgrind: bool
) -> tuple[dict[str, Any], str, float]:
    """One workload run; its report, stderr and wall time."""
    argv = [sys.executable, str(setup.workload), str(setup.docs_file), store, str(n)]
    if valgrind:
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    start = time.perf_counter()
    done = subprocess.run(
        argv,
        env=workload_env(tree, setup),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"workload {tree} {store} {n} exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    expected = tree.resolve() / "stream" / "__init__.py"
    if Path(report["stream"]).resolve() != expected:
        raise RuntimeError(f"workload imported {report['stream']}, not {expected}")
    return report, done.stderr, wall


def parse_refs(stderr: str) -> int:
    found = _REFS.search(stderr)
    if found is None:
        raise RuntimeError(f"no 'I refs:' line in valgrind's output:\n{stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def count(label: str, tree: Path, store: str, n: int, setup: Setup) -> Count:
    say(f"{label}/{store}: counting {n} docs ...")
    report, stderr, wall = run_workload(tree, store, n, setup, valgrind=True)
    refs = parse_refs(stderr)
    say(f"{label}/{store}: {n} docs: {refs:,} instructions in {wall:.0f} s")
    return Count(label, store, n, refs, report["copies"], report.get("server_cpu_s"), wall)


def measure(label: str, tree: Path, store: str, n: int, setup: Setup) -> tuple[Cost, list[Count]]:
    """refs(n) - refs(0) over n: what the documents cost, start-up and imports cancelled."""
    say(f"{label}/{store}: compiling bytecode (one run outside valgrind)")
    run_workload(tree, store, 0, setup, valgrind=False)
    start, full = count(label, tree, store, 0, setup), count(label, tree, store, n, setup)
    server = None if full.server_cpu_s is None else 1000 * full.server_cpu_s / n
    cost = Cost(
        label, store, start.refs, full.refs, (full.refs - start.refs) / n, full.copies, server
    )
    return cost, [start, full]


def target_of(before: str) -> tuple[float, str, str]:
    """The target set against ``before`` (a commit as given), or the first one's: the
    largest change, the target in words, and what the earlier commit is."""
    return next(
        (t for key, t in TARGETS.items() if before.startswith(key)), TARGETS[DEFAULT_BEFORE]
    )


def compare(costs: Sequence[Cost], target: float) -> list[dict[str, Any]]:
    """Per store: before, now, the change and whether it is within the target."""
    by = {(c.tree, c.store): c for c in costs}
    rows = []
    for store in STORES:
        before, now = by[("before", store)], by[("now", store)]
        change = now.instructions_per_doc / before.instructions_per_doc - 1
        rows.append(
            {
                "store": store,
                "before_instructions_per_doc": before.instructions_per_doc,
                "now_instructions_per_doc": now.instructions_per_doc,
                "change": change,
                "met": change <= target,
                "copies_before": before.copies,
                "copies_now": now.copies,
                "server_cpu_ms_per_doc_before": before.server_cpu_ms_per_doc,
                "server_cpu_ms_per_doc_now": now.server_cpu_ms_per_doc,
            }
        )
    return rows


def commits(before_ref: str, before: str) -> dict[str, Any]:
    head = git("rev-parse", "HEAD").stdout.decode().strip()
    changed = git_state(ROOT)["worker_code_changed"]
    return {
        "before": {"ref": before_ref, "commit": before},
        "now": {"commit": head, "dirty": bool(changed), "worker_code_changed": changed},
    }


def redis_version(url: str) -> str:
    r = redis.Redis.from_url(url)
    try:
        server: dict[str, Any] = r.info("server")
        return f"Redis {server.get('redis_version')} ({server.get('executable', '')})"
    finally:
        r.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    vg = valgrind_version()
    before = resolve_commit(args.before)
    digest_start = worker_code_digest()
    machine = machine_info(("neardup", "numpy", "mmh3", "redis"))
    machine["valgrind"] = vg
    costs: list[Cost] = []
    counts: list[Count] = []
    with tempfile.TemporaryDirectory(prefix="neardup-cost-") as tmp:
        work = Path(tmp)
        extract_tree(before, work / "before")
        say(f"corpus: {args.docs} docs, seed {SEED}")
        write_docs(generate(args.docs, seed=SEED), work / "docs.jsonl")
        shutil.copyfile(WORKLOAD, work / "workload.py")  # run from a folder of its own
        with services.start_redis(work / "redis") as service:
            machine["redis_server"] = redis_version(service.url)
            setup = Setup(work / "workload.py", work / "docs.jsonl", work / "pycache", service.url)
            for label, tree in (("before", work / "before"), ("now", ROOT)):
                for store in STORES:
                    cost, pair = measure(label, tree, store, args.docs, setup)
                    costs.append(cost)
                    counts.extend(pair)
    digest_end = worker_code_digest()
    if digest_end != digest_start:
        say("warning: the working tree's engine code changed during the run")
    machine["load_average_1m_at_end"] = os.getloadavg()[0]
    target, text, before_is = target_of(before)
    return {
        "benchmark": "cost",
        "date": cli.now(),
        "command": f"python -m bench cost --before {args.before} --docs {args.docs}",
        "machine": machine,
        "commits": commits(args.before, before),
        "worker_code_digest": {"start": digest_start, "end": digest_end},
        "docs": args.docs,
        "seed": SEED,
        "target": {"max_change": target, "text": text, "before_is": before_is},
        "rows": compare(costs, target),
        "costs": [asdict(c) for c in costs],
        "counts": [asdict(c) for c in counts],
        "elapsed_s": time.perf_counter() - started,
    }


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "cost",
        __doc__,
        before=(DEFAULT_BEFORE, f"earlier commit (default {DEFAULT_BEFORE})"),
        docs=(4000, "documents counted (default 4000)"),
    )
    args = parser.parse_args(argv)
    if args.docs < 1:
        parser.error("--docs must be at least 1")
    try:
        result = run(args)
    except CostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # the first target's results keep their name; another earlier commit's are named by it
    default = result["commits"]["before"]["commit"].startswith(DEFAULT_BEFORE)
    stem = "cost" if default else f"cost_{args.before}"
    text = cost_tables.markdown(result)
    cli.write(args.out, stem, result, text)
    print(text)
    print(f"wrote {args.out / f'{stem}.json'} and {args.out / f'{stem}.md'}", file=sys.stderr)
    return 0
