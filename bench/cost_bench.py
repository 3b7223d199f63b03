"""Engine cost per document in CPU instructions: an earlier commit against the working tree.

``python -m bench cost [--before COMMIT] [--docs N] [--out DIR]``. Timings on a shared 2-core
machine move by a third from run to run; the instructions valgrind counts repeat to about 0.1%,
so a cost target (issue 13: text -> verdict no more than 15% slower than before the content
rules) is checked in instructions.

One seeded corpus (:func:`harness.corpus.generate`, seed 7) is written once to a file both trees
read. The earlier tree comes from ``git archive``; the working tree is the repository this file
is in. For each tree and store (memory, Redis) a small workload (:data:`WORKLOAD`) runs under
``valgrind --tool=callgrind`` with ``PYTHONPATH`` set to the tree: it loads the documents, warms
up on the first 512 with a throwaway index, then sends the first ``n`` to a fresh index through
``Engine.process`` in batches of 512 (the ``neardup dedup`` batch). It runs with ``n = 0`` and
``n = N``; the difference over ``N`` is the cost per document, with interpreter start-up, imports
and the warm-up cancelled out. Bytecode is compiled into a private cache by one run outside
valgrind first, so neither counted run compiles. On Redis the count is the client's only; the
server's CPU per document (``INFO cpu``) is printed beside it, but that is time, measured while
valgrind slows the client some fifty times.
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from harness import services
from harness.corpus import Doc, generate
from harness.report import git_state, machine_info, md_table, write_atomic

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"
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

# Run by the interpreter under test with PYTHONPATH set to one tree: only APIs that exist in both
# trees (Article(id, text), Engine(index).process, MemoryIndex(), RedisIndex(client),
# load_functions). The last line of its stdout is JSON for the benchmark.
WORKLOAD = '''\
"""Cost workload: argv docs.jsonl STORE N; the Redis URL in COST_REDIS_URL."""

import asyncio
import importlib
import json
import os
import sys

# A tree from before the one import name has top-level stream/ modules, not neardup.stream.
NEW = os.path.isdir(os.path.join(os.environ["PYTHONPATH"], "neardup", "stream"))
PKG = "neardup.stream" if NEW else "stream"
stream = importlib.import_module(PKG)
Engine = importlib.import_module(PKG + (".engine.engine" if NEW else ".engine")).Engine
NeardupError = importlib.import_module(PKG + ".errors").NeardupError
MemoryIndex = importlib.import_module(PKG + ".index.memory").MemoryIndex
Article = importlib.import_module(PKG + ".model").Article

BATCH = 512
WARMUP = 512


async def run(index, articles):
    copies = 0
    engine = Engine(index)
    for lo in range(0, len(articles), BATCH):
        for res in await engine.process(articles[lo : lo + BATCH]):
            if isinstance(res, NeardupError):
                raise SystemExit(f"rejected: {res}")
            copies += res.duplicate_of is not None
    return copies


def server_cpu(sync):
    cpu = sync.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


async def main(path, store, n):
    with open(path, encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    articles = [Article(d["id"], d["text"]) for d in docs]
    report = {"store": store, "docs": n, "stream": stream.__file__}
    if store == "memory":
        await run(MemoryIndex(), articles[:WARMUP])
        report["copies"] = await run(MemoryIndex(), articles[:n])
    else:
        import redis
        import redis.asyncio as aioredis
        RedisIndex = importlib.import_module(
            PKG + (".index.redis.index" if NEW else ".index.redis")
        ).RedisIndex

        url = os.environ["COST_REDIS_URL"]
        sync, client = redis.Redis.from_url(url), aioredis.Redis.from_url(url)

        async def fresh():
            sync.flushall()
            index = RedisIndex(client)
            await index.load_functions()
            return index

        await run(await fresh(), articles[:WARMUP])
        index = await fresh()
        before = server_cpu(sync)
        report["copies"] = await run(index, articles[:n])
        report["server_cpu_s"] = server_cpu(sync) - before
        await client.aclose()
        sync.close()
    print(json.dumps(report))


asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
'''


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


# --------------------------------------------------------------------------- setup


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
    with path.open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"id": d["id"], "text": d["text"]}) + "\n")


def worker_code_digest(root: Path = ROOT) -> str:
    """A hash of the working tree's engine code: equal at start and end, or the "now" figures
    mix two versions (the tree may be edited while the benchmark runs)."""
    h = hashlib.sha256()
    for top in ("sketch", "stream"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and path.suffix in (".py", ".lua"):
                h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- counting


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
    progress(f"{label}/{store}: counting {n} docs ...")
    report, stderr, wall = run_workload(tree, store, n, setup, valgrind=True)
    refs = parse_refs(stderr)
    progress(f"{label}/{store}: {n} docs: {refs:,} instructions in {wall:.0f} s")
    return Count(label, store, n, refs, report["copies"], report.get("server_cpu_s"), wall)


def measure(label: str, tree: Path, store: str, n: int, setup: Setup) -> tuple[Cost, list[Count]]:
    """refs(n) - refs(0) over n: what the documents cost, start-up and imports cancelled."""
    progress(f"{label}/{store}: compiling bytecode (one run outside valgrind)")
    run_workload(tree, store, 0, setup, valgrind=False)
    start, full = count(label, tree, store, 0, setup), count(label, tree, store, n, setup)
    server = None if full.server_cpu_s is None else 1000 * full.server_cpu_s / n
    cost = Cost(
        label, store, start.refs, full.refs, (full.refs - start.refs) / n, full.copies, server
    )
    return cost, [start, full]


def progress(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- report


def target_of(before: str) -> tuple[float, str, str]:
    """The target set against ``before`` (a commit as given), or the first one's: the
    largest change, the target in words, and what the earlier commit is."""
    return next(
        (t for key, t in TARGETS.items() if before.startswith(key)),
        TARGETS[DEFAULT_BEFORE],
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


def _server_cell(row: dict[str, Any]) -> str:
    before, now = row["server_cpu_ms_per_doc_before"], row["server_cpu_ms_per_doc_now"]
    return "—" if before is None or now is None else f"{before:.3f} -> {now:.3f}"


def markdown(result: dict[str, Any]) -> str:
    m, c, now = result["machine"], result["commits"], result["commits"]["now"]
    n = result["docs"]
    cells = [
        [
            r["store"],
            f"{r['before_instructions_per_doc']:,.0f}",
            f"{r['now_instructions_per_doc']:,.0f}",
            f"{100 * r['change']:+.1f}%",
            f"<= {100 * result['target']['max_change']:+.0f}%: {'met' if r['met'] else 'missed'}",
            _server_cell(r),
        ]
        for r in result["rows"]
    ]
    head = ["store", "before instr/doc", "now instr/doc", "change", "target"]
    head.append("Redis server CPU ms/doc, before -> now")
    state = (
        "clean"
        if not now["dirty"]
        else "with uncommitted worker code: "
        + ", ".join(f"`{f}`" for f in now["worker_code_changed"])
    )
    lines = [
        "# Cost benchmark: engine instructions per document, before and now",
        "",
        f"Generated by `{result['command']}` on {result['date']} in {result['elapsed_s']:.0f} s. "
        f"Reproduce with `{result['command']}`.",
        "",
        f"- Before: `{c['before']['ref']}` ({c['before']['commit'][:12]}), "
        f"{result['target'].get('before_is', 'an earlier commit')}; now: the working tree at "
        f"{now['commit'][:12]}, {state}",
        f"- Corpus: `harness.corpus.generate({n}, seed={result['seed']})`, one file read by both "
        "trees",
        "- Cost: valgrind's instruction count (`valgrind --tool=callgrind`, "
        f"{m['valgrind']}) of a workload process sending the first N documents to a fresh index "
        "through `Engine.process` in batches of 512, after a 512-document warm-up, minus the "
        "same process with N = 0 (start-up, imports and warm-up), over N; bytecode compiled "
        "beforehand, `PYTHONHASHSEED=0`, `OPENBLAS_NUM_THREADS=1`",
        "- Redis: the count is the client's (`RedisIndex` on a `redis.asyncio` client, FLUSHALL "
        "before each index); the server runs outside valgrind on the same machine "
        f"({m['redis_server']})",
        f"- Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, numpy {m['numpy']}, "
        f"redis-py {m['redis']}",
        "",
        md_table(head, cells),
        "",
        f"Target: {result['target']['text']}.",
        "",
        "Verdicts with a `duplicate_of` among the N documents, before / now: "
        + "; ".join(
            f"{r['store']} {r['copies_before']} / {r['copies_now']}" for r in result["rows"]
        )
        + ".",
        "",
        "Instruction counts repeat to about 0.1% from run to run; the Redis server's CPU per "
        "document is time (`INFO cpu`, used_cpu_user + used_cpu_sys around the counted run), "
        "measured while valgrind slows the client some fifty times, so it is only a rough guide.",
        "",
    ]
    if result["worker_code_digest"]["start"] != result["worker_code_digest"]["end"]:
        lines += ["**The working tree's engine code changed during the run.**", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- run


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
        progress(f"corpus: {args.docs} docs, seed {SEED}")
        write_docs(generate(args.docs, seed=SEED), work / "docs.jsonl")
        (work / "workload.py").write_text(WORKLOAD, encoding="utf-8")
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
        progress("warning: the working tree's engine code changed during the run")
    machine["load_average_1m_at_end"] = os.getloadavg()[0]
    target, text, before_is = target_of(before)
    return {
        "benchmark": "cost",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
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
    parser = argparse.ArgumentParser(
        prog="python -m bench cost", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--before", default=DEFAULT_BEFORE, help=f"earlier commit (default {DEFAULT_BEFORE})"
    )
    parser.add_argument("--docs", type=int, default=4000, help="documents counted (default 4000)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    if args.docs < 1:
        parser.error("--docs must be at least 1")
    try:
        result = run(args)
    except CostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    # the first target's results keep their name; another earlier commit's are named by it
    stem = (
        "cost"
        if result["commits"]["before"]["commit"].startswith(DEFAULT_BEFORE)
        else (f"cost_{args.before}")
    )
    write_atomic(args.out / f"{stem}.json", json.dumps(result, indent=2) + "\n")
    write_atomic(args.out / f"{stem}.md", markdown(result))
    print(markdown(result))
    print(f"wrote {args.out / f'{stem}.json'} and {args.out / f'{stem}.md'}", file=sys.stderr)
    return 0
