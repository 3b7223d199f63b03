"""The whole command as a user runs it: ``neardup dedup`` beside a datasketch program, start-up in.

Both are whole processes on the Reuters-21578 stories: ``neardup dedup`` against
``bench/peers/datasketch_dedup.py`` (``MinHashLSH(threshold=0.8)``, query then insert per document,
shingles checked equal to :func:`harness.corpus.peer_shingles`). Wall clock from spawn to exit
(best of ``--reps``, sides alternated) and the child's CPU from ``os.wait4``, in memory and on one
Redis (FLUSHALL before each run; after the last neardup run every key's ``MEMORY USAGE`` by
:data:`KEY_KINDS`); start-up on a one-line file with ``-X importtime``; one more memory run under
``py-spy record``, attributed to :data:`harness.profile.DEDUP_PARTS`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import redis

from bench import cli, command_tables
from bench.cli import say
from bench.peers import datasketch_dedup
from bench.readings import (
    ChildRun,
    header,
    key_usage,
    loadavg,
    machine_info,
    other_load,
    pct,
    redis_stats,
    run_child,
    write_corpus,
)
from harness import services
from harness.corpus import peer_shingles
from harness.data import reuters
from harness.profile import DEDUP_PARTS, attribute_command, find_py_spy
from harness.workers import NEARDUP
from neardup.stream.index.redis.keys import PREFIX
from neardup.stream.namespaces.policy import Policy

PYTHON = Path(sys.executable)
PACKAGES = ("neardup", "datasketch", "numpy", "scipy", "redis", "typer", "rich", "orjson")
TOP_IMPORTS = 10
PROFILE_HZ = 250
PROFILE_LEAVES = 15
TARGETS: dict[str, dict[str, Any]] = {
    "memory_5x": {"what": "whole command, memory store: ≥ 5× datasketch", "min": 5.0},
    "redis_20x": {"what": "whole command, Redis store: ≥ 20× datasketch on Redis", "min": 20.0},
    "redis_bytes": {"what": "Redis bytes/doc no higher than 5,252", "max": 5252.0},
    "redis_growing_bytes": {
        "what": "Redis bytes/doc that grow with the documents (line counts excluded) no higher "
        "than 5,252",
        "max": 5252.0,
    },
    "startup": {"what": "start-up (one-line file, median) < 0.4 s", "below": 0.4},
    "library_memory": {
        "what": "Index.add_many at least the command's docs/s, memory (command's wall / its)",
        "min": 1.0,
    },
    "library_redis": {
        "what": "Index.add_many at least the command's docs/s, Redis (command's wall / its)",
        "min": 1.0,
    },
}

# neardup's Redis keys by kind (:func:`key_kind`), meanings as stream/index/redis/keys.py gives them
KEY_KINDS: dict[str, str] = {
    "d": "records: hash, seq -> record (neardup.stream.records)",
    "b": "buckets: hash per shard, 8-byte bucket id -> packed seqs, earliest first",
    "x": "content slots: hash per shard, 16-byte content hash -> packed seqs of its first copies",
    "v": "verdicts: hash, seq -> verdict (JSON), while the seq is its article's",
    "t": "times: sorted set, seq scored by registration time (retention)",
    "i": "ids: hash, article id -> seq",
    "l": "boilerplate line counts: hash per generation, 16-byte line key (source, line "
    "fingerprint) -> documents of that source with the line",
    "c": "cluster members: sorted set per cluster, packed seq of each copy by registration time",
    "cm": "cluster of a copy: hash, packed seq of a copy -> its cluster id",
    "g": "deleted ids: sorted set, article id scored by deletion time",
    "m": "meta: hash, seq counter, scheme, policy, current line-count generation",
    "namespaces": "registry: set of every namespace whose scheme was ensured",
    "aliases": "aliases: hash, namespace -> what it is an alias of (JSON)",
    "other": "keys not starting with `nd:` (not neardup's)",
}
LINE_COUNTS = "l"
SCAN_BATCH = 1000

# the datasketch side, as its documentation shows the library used (Redis when HOST:PORT is given)
PEER = Path(__file__).resolve().parent / "peers" / "datasketch_dedup.py"
PEER_COMMAND = "python bench/peers/datasketch_dedup.py"
# the same job through the library: neardup.Index.add_many in a program of a few lines
LIBRARY = Path(__file__).resolve().parent / "library_dedup.py"
LIBRARY_COMMAND = "python bench/library_dedup.py"


def neardup_argv(corpus: Path, store: str) -> list[str]:
    return [str(NEARDUP), "dedup", str(corpus), "--store", store, "--no-progress", "-o", os.devnull]


def library_argv(corpus: Path, store: str) -> list[str]:
    return [str(PYTHON), str(LIBRARY), str(corpus), os.devnull, store]


def peer_argv(corpus: Path, redis_at: str | None = None) -> list[str]:
    return [str(PYTHON), str(PEER), str(corpus), os.devnull, *([redis_at] if redis_at else [])]


_SUMMARY_ROWS = {
    "originals": "original",
    "near-duplicates": "near_duplicate",
    "duplicates": "duplicate",
    "clusters": "clusters",
    "invalid lines": "invalid",
    "docs/s": "docs_per_s",
}


def neardup_summary(stderr: str) -> dict[str, int]:
    """The counts of neardup's end-of-run table (a rich table on stderr)."""
    got: dict[str, int] = {}
    for line in stderr.splitlines():
        cells = [c.strip() for c in re.split(r"[│|┃]", line) if c.strip()]
        if len(cells) == 2 and cells[0] in _SUMMARY_ROWS:
            got[_SUMMARY_ROWS[cells[0]]] = int(cells[1].replace(",", ""))
    return got


def peer_summary(stderr: str) -> dict[str, int]:
    m = re.search(r"docs (\d+) flagged (\d+)", stderr)
    return {"docs": int(m.group(1)), "flagged": int(m.group(2))} if m else {}


@dataclass
class Side:
    """One system's repeated runs of one command."""

    key: str
    system: str
    store: str  # "memory" | "redis"
    docs: int
    command: str
    runs: list[ChildRun] = field(default_factory=list)
    redis_bytes: list[int] = field(default_factory=list)  # used_memory delta per run
    redis_keys: list[int] = field(default_factory=list)
    redis_cpu_s: list[float] = field(default_factory=list)
    summary: dict[str, int] = field(default_factory=dict)  # what the last run said
    breakdown: dict[str, Any] = field(default_factory=dict)  # by key kind, after the last run

    def add(self, run: ChildRun) -> None:
        self.runs.append(run)
        summary = neardup_summary if self.key.startswith("nd") else peer_summary
        self.summary = summary(run.stderr)

    def counts(self) -> tuple[int | None, int | None]:
        """(decided, flagged) as the last run's summary said."""
        s = self.summary
        if "docs" in s:
            return s["docs"], s.get("flagged")
        copies = s.get("near_duplicate", 0) + s.get("duplicate", 0)
        return (s["original"] + copies, copies) if "original" in s else (None, None)

    def result(self) -> dict[str, Any]:
        best = min(r.wall_s for r in self.runs)
        cpu = min(r.cpu_s for r in self.runs)
        out: dict[str, Any] = {
            "key": self.key,
            "system": self.system,
            "store": self.store,
            "docs": self.docs,
            "command": self.command,
            "runs": len(self.runs),
            "wall_s": [r.wall_s for r in self.runs],
            "cpu_s": [r.cpu_s for r in self.runs],
            "best_wall_s": best,
            "best_cpu_s": cpu,
            "docs_per_s": self.docs / best,
            "cpu_ms_per_doc": 1000 * cpu / self.docs,
            "decided": self.counts()[0],
            "flagged": self.counts()[1],
            "summary": self.summary,
        }
        if self.redis_bytes:
            out |= {
                "redis_used_memory_delta": self.redis_bytes,
                "redis_bytes_per_doc": self.redis_bytes[-1] / self.docs,
                "redis_keys_per_doc": self.redis_keys[-1] / self.docs,
                "redis_cpu_ms_per_doc": 1000 * min(self.redis_cpu_s) / self.docs,
            }
        if self.breakdown:
            out["redis_breakdown"] = self.breakdown
        return out


def measure_sides(
    corpus: Path, n: int, reps: int, workdir: Path, one: Path, on: services.Service | None = None
) -> list[Side]:
    """Both commands ``reps`` times, alternated, after an untimed run of each on ``one``. With
    ``on`` (a Redis): FLUSHALL before every run (neardup's FUNCTION library, loaded by its first
    run, stays), and the key breakdown after the last neardup run."""
    r = None if on is None else redis.Redis(host=services.HOST, port=on.port)
    store, tag = ("memory", "mem") if on is None else ("redis", "redis")
    nd_store = "memory" if on is None else "redis://127.0.0.1:PORT/0"
    ds_at = "" if on is None else " 127.0.0.1:PORT"
    nd = Side(
        f"nd_{tag}",
        "neardup dedup",
        store,
        n,
        f"neardup dedup corpus.jsonl --store {nd_store} --no-progress -o /dev/null",
    )
    lib = Side(
        f"lib_{tag}",
        "neardup Index.add_many",
        store,
        n,
        f"{LIBRARY_COMMAND} corpus.jsonl /dev/null {nd_store}",
    )
    ds = Side(
        f"ds_{tag}", "datasketch program", store, n, f"{PEER_COMMAND} corpus.jsonl /dev/null{ds_at}"
    )
    sides = (nd, lib, ds)

    def argv(side: Side, path: Path) -> list[str]:
        if side is nd:
            return neardup_argv(path, "memory" if on is None else on.url)
        if side is lib:
            return library_argv(path, "memory" if on is None else on.url)
        return peer_argv(path, None if on is None else on.bootstrap)

    try:
        for side in sides:
            run_child(argv(side, one), workdir)
        for rep in range(1, reps + 1):
            for side in sides:
                if r is None:
                    side.add(run_child(argv(side, corpus), workdir))
                    say(f"memory {rep}/{reps}: {side.system} {side.runs[-1].wall_s:.2f} s")
                    continue
                r.flushall()
                before = redis_stats(r)
                side.add(run_child(argv(side, corpus), workdir))
                after = redis_stats(r)
                side.redis_bytes.append(after.used_memory - before.used_memory)
                side.redis_keys.append(after.dbsize - before.dbsize)
                side.redis_cpu_s.append(after.cpu_s - before.cpu_s)
                if side is nd and rep == reps:  # before the next FLUSHALL
                    side.breakdown = redis_breakdown(r, n, side.redis_bytes[-1])
                say(
                    f"redis {rep}/{reps}: {side.system} {side.runs[-1].wall_s:.2f} s, "
                    f"{side.redis_bytes[-1] / n:,.0f} B/doc"
                )
        if r is not None:
            r.flushall()
    finally:
        if r is not None:
            r.close()
    return list(sides)


def profile_memory(corpus: Path, workdir: Path, best_wall_s: float) -> dict[str, Any]:
    """One more neardup memory run under ``py-spy record``: the parts of :data:`DEDUP_PARTS` by
    size (seconds = samples / rate) and the hottest leaves (own time); or ``{"skipped": why}``
    (never an error: the benchmark goes on)."""
    spy = find_py_spy()
    if spy is None:
        return {"skipped": "py-spy is not installed (pip install py-spy)"}
    raw = workdir / "memory-profile.txt"
    spy_argv = [spy, "record", "--rate", str(PROFILE_HZ), "--format", "raw", "--nolineno"]
    # the console script is a Python file: run by the venv's python, py-spy spawns Python itself
    argv = [*spy_argv, "--output", str(raw), "--", str(PYTHON), *neardup_argv(corpus, "memory")]
    say(f"profile: py-spy at {PROFILE_HZ} Hz on one more neardup memory run...")
    try:
        run = run_child(argv, workdir)
    except (OSError, RuntimeError) as exc:
        return {"skipped": f"py-spy failed: {str(exc).strip()[-500:]}"}
    if not raw.is_file() or raw.stat().st_size == 0:
        tail = " | ".join(run.stderr.strip().splitlines()[-3:])
        return {"skipped": f"py-spy wrote nothing: {tail or '(no output)'}"}
    got, hz = attribute_command(raw.read_text(), DEDUP_PARTS), PROFILE_HZ
    total = sum(got.parts.values())
    say(f"profile: {run.wall_s:.2f} s, {total:,} samples")
    return {
        "command": " ".join(["py-spy", *spy_argv[1:], "--output", "<file>", "--", "python"])
        + " neardup dedup corpus.jsonl --store memory --no-progress -o /dev/null",
        "hz": PROFILE_HZ,
        "wall_s": run.wall_s,
        "best_timed_wall_s": best_wall_s,
        "neardup_summary": neardup_summary(run.stderr),
        "rule": "DEDUP_PARTS: the first Whole part (start-up, boilerplate) with a frame in the "
        "stack, else the part of the deepest frame belonging to one",
        "samples": total,
        "seconds": total / hz,
        "parts": [
            {"part": name, "samples": n, "pct": pct(n, total), "seconds": n / hz}
            for name, n in got.parts.most_common()
        ],
        "top_leaves": [
            {"function": fn, "part": part, "samples": n, "pct": pct(n, total), "seconds": n / hz}
            for (fn, part), n in got.leaves.most_common(PROFILE_LEAVES)
        ],
    }


def key_kind(key: bytes) -> str:
    """``nd:{ns}:<kind>[:<shard>]`` -> ``<kind>``; ``nd:namespaces`` -> ``namespaces``; a key
    not starting with ``nd:`` -> ``other``."""
    parts = key.split(b":")
    if len(parts) < 2 or parts[0] != PREFIX.encode():
        return "other"
    return (parts[2] if len(parts) > 2 else parts[1]).decode("utf-8", errors="replace")


def redis_breakdown(r: redis.Redis, docs: int, used_memory_delta: int) -> dict[str, Any]:
    """Every key's ``MEMORY USAGE key SAMPLES 0`` (exact) summed by :func:`key_kind`; the line
    counts' own fields (``HLEN``) and their bound beside."""
    keys_by: Counter[str] = Counter()
    bytes_by: Counter[str] = Counter()
    found: dict[str, list[bytes]] = {LINE_COUNTS: [], "m": []}
    for k, used in key_usage(r, SCAN_BATCH):
        kind = key_kind(k)
        keys_by[kind] += 1
        bytes_by[kind] += used
        found.get(kind, []).append(k)
    line_fields = sum(int(r.hlen(k)) for k in found[LINE_COUNTS])
    namespaces = len(found["m"])
    caps = []  # boilerplate_lines as the namespaces recorded it (the meta hash's policy)
    for meta in found["m"]:
        with contextlib.suppress(orjson.JSONDecodeError, TypeError, AttributeError):
            got = orjson.loads(r.hget(meta, "policy"))
            if isinstance(got.get("boilerplate_lines"), int):
                caps.append(int(got["boilerplate_lines"]))
    cap, cap_from = max(caps, default=Policy.boilerplate_lines), "the policy's default"
    if caps:
        cap_from = "the namespace's recorded policy"
    total = sum(bytes_by.values())
    lines = bytes_by.get(LINE_COUNTS, 0)
    order = sorted(bytes_by, key=lambda k: (-bytes_by[k], k))
    return {
        "method": "SCAN (COUNT 1000), MEMORY USAGE key SAMPLES 0, summed by key kind",
        "docs": docs,
        "kinds": [
            {
                "kind": kind,
                "keys": keys_by[kind],
                "bytes": bytes_by[kind],
                "bytes_per_doc": bytes_by[kind] / docs,
                "share": bytes_by[kind] / total if total else 0.0,
                "meaning": KEY_KINDS.get(kind, "not a kind stream/index/redis/keys.py names"),
            }
            for kind in order
        ],
        "keys": sum(keys_by.values()),
        "memory_usage_bytes": total,
        "memory_usage_bytes_per_doc": total / docs,
        "used_memory_delta": used_memory_delta,
        "unattributed_bytes": used_memory_delta - total,
        "line_counts": {
            "bytes": lines,
            "keys": keys_by.get(LINE_COUNTS, 0),
            "line_keys": line_fields,
            "namespaces": namespaces,
            "boilerplate_lines": cap,
            "boilerplate_lines_from": cap_from,
            "bound_line_keys": 2 * cap * max(namespaces, 1),
        },
        "bytes_per_doc_without_line_counts": (used_memory_delta - lines) / docs,
        "memory_usage_bytes_per_doc_without_line_counts": (total - lines) / docs,
    }


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\| ( *)(\S.*?)\s*$")


def timed_runs(argv: Sequence[str], runs: int, workdir: Path) -> dict[str, Any]:
    walls = [run_child(argv, workdir).wall_s for _ in range(runs)]
    return {
        "runs": runs,
        "median_s": statistics.median(walls),
        "min_s": min(walls),
        "max_s": max(walls),
        "wall_s": walls,
    }


def measure_startup(one: Path, runs: int, workdir: Path) -> dict[str, Any]:
    nd_argv = neardup_argv(one, "memory")
    run_child(nd_argv, workdir)  # warm-up
    neardup = timed_runs(nd_argv, runs, workdir)
    say(f"start-up: neardup median {neardup['median_s']:.3f} s")
    floor = timed_runs([str(PYTHON), "-c", "pass"], runs, workdir)
    peer = timed_runs(peer_argv(one), runs, workdir)
    say(f"start-up: python -c pass {floor['median_s']:.3f} s, datasketch {peer['median_s']:.3f} s")
    traced = run_child([str(PYTHON), "-X", "importtime", *nd_argv], workdir)
    imports = [  # one per import (µs), in the order they finished
        {"module": m[4], "depth": len(m[3]) // 2, "self_us": int(m[1]), "cumulative_us": int(m[2])}
        for line in traced.stderr.splitlines()
        if (m := _IMPORT_LINE.match(line))
    ]
    top = sorted(imports, key=lambda i: -i["cumulative_us"])[:TOP_IMPORTS]
    outer = [i for i in imports if i["depth"] == 0]
    top_level = sorted(outer, key=lambda i: -i["cumulative_us"])[:TOP_IMPORTS]
    return {
        "neardup": neardup,
        "python_pass": floor,
        "datasketch_program": peer,
        "importtime": {
            "wall_s": traced.wall_s,
            "modules": len(imports),
            "total_self_s": sum(i["self_us"] for i in imports) / 1e6,
            "top_cumulative": top,
            "top_level": top_level,
        },
    }


def targets(rows: Mapping[str, Mapping[str, Any]], startup: Mapping[str, Any]) -> dict[str, Any]:
    def ratio(nd: str, ds: str) -> float:
        return float(rows[ds]["best_wall_s"]) / float(rows[nd]["best_wall_s"])

    redis_row = rows["nd_redis"]
    measured = {
        "memory_5x": ratio("nd_mem", "ds_mem"),
        "redis_20x": ratio("nd_redis", "ds_redis"),
        "redis_bytes": float(redis_row["redis_bytes_per_doc"]),
        "redis_growing_bytes": float(
            redis_row["redis_breakdown"]["bytes_per_doc_without_line_counts"]
        ),
        "startup": float(startup["neardup"]["median_s"]),
        "library_memory": ratio("lib_mem", "nd_mem"),
        "library_redis": ratio("lib_redis", "nd_redis"),
    }

    def met(t: Mapping[str, Any], v: float) -> bool:
        return v >= t["min"] if "min" in t else v <= t["max"] if "max" in t else v < t["below"]

    return {
        k: {**t, "measured": measured[k], "met": met(t, measured[k])} for k, t in TARGETS.items()
    }


def measure(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    stories = reuters()
    docs = stories[: args.docs] if args.docs else stories
    n_redis = min(args.redis_docs, len(docs))
    corpus, corpus_redis, one = (workdir / f for f in ("corpus.jsonl", "redis.jsonl", "one.jsonl"))
    write_corpus(docs, corpus)
    write_corpus(docs[:n_redis], corpus_redis)
    write_corpus(docs[:1], one)
    lengths = [len(d["text"]) for d in docs]
    say(f"corpus: {len(docs):,} Reuters stories, median {statistics.median(lengths):.0f} chars")
    # the program's tokenising must be peer_shingles'
    mismatched = sum(datasketch_dedup.shingles(d["text"]) != peer_shingles(d["text"]) for d in docs)
    if mismatched:
        raise RuntimeError(f"the program's shingles differ from peer_shingles on {mismatched} docs")

    say(f"start-up: {args.startup_runs} runs of each command on a one-line file")
    startup = measure_startup(one, args.startup_runs, workdir)
    say(f"memory store: {len(docs):,} docs, best of {args.reps}")
    sides = measure_sides(corpus, len(docs), args.reps, workdir, one)
    best_nd = min(r.wall_s for r in sides[0].runs)
    if args.no_profile:
        profile: dict[str, Any] = {"skipped": "--no-profile"}
    else:
        profile = profile_memory(corpus, workdir, best_nd)
        if "skipped" in profile:
            say(f"profile skipped: {profile['skipped']}")
    say(f"Redis store: {n_redis:,} docs, best of {args.reps}; starting Redis")
    with services.start_redis(workdir / "redis") as service:
        with redis.Redis(host=services.HOST, port=service.port) as r:
            redis_info = {
                "redis_version": str(r.info("server").get("redis_version")),
                "redis_binary": service.binary.name,
                "redis_config": {
                    str(k): str(v) for k, v in sorted(r.config_get("hash-max-listpack-*").items())
                },
            }
        redis_sides = measure_sides(corpus_redis, n_redis, args.reps, workdir, one, service)
    rows = {s.key: s.result() for s in [*sides, *redis_sides]}
    for key, base in (
        ("nd_mem", "ds_mem"),
        ("lib_mem", "ds_mem"),
        ("nd_redis", "ds_redis"),
        ("lib_redis", "ds_redis"),
    ):
        rows[key]["vs_datasketch"] = rows[base]["best_wall_s"] / rows[key]["best_wall_s"]
        rows[key]["cpu_vs_datasketch"] = rows[base]["best_cpu_s"] / rows[key]["best_cpu_s"]
    for key, row in rows.items():
        if row["decided"] != row["docs"] or row["summary"].get("invalid"):
            raise RuntimeError(f"{key} did not decide every line: {row['summary']}")
    return {
        "corpus": {
            "source": "harness.data.reuters()",
            "docs": len(docs),
            "redis_docs": n_redis,
            "median_chars": statistics.median(lengths),
            "mean_chars": statistics.mean(lengths),
            "bytes": corpus.stat().st_size,
            "redis_bytes": corpus_redis.stat().st_size,
        },
        "checks": {"peer_shingles_mismatched_docs": mismatched},
        "redis": redis_info,
        "rows": list(rows.values()),
        "startup": startup,
        "targets": targets(rows, startup),
        "profile": profile,
        "peer_program": PEER.read_text(encoding="utf-8"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser(
        "command",
        __doc__,
        reps=(3, "runs per command, best kept"),
        redis_docs=(5_000, "stories for the Redis runs"),
        startup_runs=(15, "one-line runs per command"),
        docs=(0, "only the first N stories (default 0: all 20,841)"),
        no_profile=(False, "skip the extra neardup memory run under py-spy record"),
    )
    args = parser.parse_args(argv)
    if args.reps < 1 or args.redis_docs < 1 or args.startup_runs < 1 or args.docs < 0:
        parser.error("need --reps, --redis-docs, --startup-runs >= 1 and --docs >= 0")
    cli.sigterm_unwinds()
    started = time.perf_counter()
    busy = other_load()
    machine = {**machine_info(PACKAGES), "cores_busy_before_run": round(busy, 2)}
    say(f"other processes kept {busy:.2f} cores busy")
    with tempfile.TemporaryDirectory(prefix="neardup-bench-command-") as tmp:
        measured = cli.exits("command benchmark", lambda: measure(args, Path(tmp)), RuntimeError)
    if isinstance(measured, int):  # a service that did not start too
        return measured
    machine["load_average_1m_at_end"] = (loadavg() or [float("nan")])[0]
    result = {**header("command", argv, started, machine), "reps": args.reps, **measured}
    cli.write(args.out, "command", result, command_tables.markdown(result))
    print(command_tables.results_table(result), "", command_tables.targets_table(result), sep="\n")
    say(f"wrote {args.out / 'command.md'} and command.json")
    return 0


__all__ = ["PEER", "main"]
