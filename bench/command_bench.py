"""The whole command as a user runs it: ``neardup dedup`` beside a datasketch program, start-up in.

``python -m bench command [--reps R] [--redis-docs M] [--startup-runs S] [--docs N] [--out DIR]``.
One run, everything on this machine, stopped at the end (also on error, Ctrl-C or SIGTERM):

1. Corpus: the 20,841 Reuters-21578 stories of :func:`harness.data.reuters` (wire order), written
   as JSON lines ``{"id", "text"}`` into a temporary directory (``--docs``: a prefix only).
2. Memory store: ``neardup dedup corpus.jsonl --store memory --no-progress -o /dev/null`` as a
   subprocess, beside ``python bench/peers/datasketch_dedup.py corpus.jsonl /dev/null``: a
   small datasketch program that reads the same lines and, per document in order, builds
   ``MinHash(num_perm=128)`` from word 3-shingles (the tokenising of
   :func:`harness.corpus.peer_shingles`, checked equal on every document), calls ``lsh.query(m)``
   then ``lsh.insert(id, m)`` on ``MinHashLSH(threshold=0.8, num_perm=128)`` and writes one line
   per document (id and candidates). Wall clock from spawn to exit, best of ``--reps``, the two
   sides' runs alternated; CPU of the child from ``os.wait4``.
3. Redis store: the first ``--redis-docs`` stories, ``neardup dedup ... --store redis://...``
   beside the same program with ``storage_config={'type': 'redis', 'redis': {host, port}}``, on
   one Redis server (:func:`harness.services.start_redis`), FLUSHALL before every run. Bytes per
   document: ``INFO memory`` ``used_memory`` after minus before, over the documents. After the
   last neardup run, every key (``SCAN``) with its ``MEMORY USAGE key SAMPLES 0``, summed by key
   kind (:data:`KEY_KINDS`): what neardup's bytes per document are made of, and how many of them
   are the boilerplate line counts, bounded per namespace rather than growing with the documents.
4. Start-up: each command on a one-line file, ``--startup-runs`` times (median and min), with
   ``python -c pass`` as the floor, and ``python -X importtime`` of neardup's one-line run (the
   top imports by cumulative time): where start-up goes.

5. Profile: after the timed memory runs, one more neardup memory run under ``py-spy record --rate
   250 --format raw --nolineno --output FILE -- python NEARDUP dedup ...`` (the venv's python
   running the ``neardup`` console script; ``pip install py-spy``; skipped with the reason if
   absent, if it fails or writes nothing; ``--no-profile`` skips it). Each sample goes to a part
   of :data:`harness.profile.DEDUP_PARTS` by :func:`harness.profile.attribute_command`: start-up
   (a frame of the import system, the script's own module-level code, the policy's set-up) and
   the boilerplate pass take every sample with one of their frames; any other sample goes to
   the part of its deepest frame that belongs to one (numpy called from ``sketch/`` is
   sketches). Reported: parts (% of samples, seconds = samples / rate), the top leaf functions
   (own time), and the profiled run's wall clock beside the best timed one.

The targets (:data:`TARGETS`) are marked met or missed. Results: ``command.json``, ``command.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
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
    RedisStats,
    git_state,
    key_usage,
    loadavg,
    machine_info,
    other_load,
    redis_stats,
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
CHILD_TIMEOUT_S = 900.0
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
}

# neardup's Redis keys by kind: the third colon-separated part of ``nd:{ns}:<kind>[:<shard>]``
# (stream/index/redis/keys.py), or the second of the two namespace-free keys; keys not starting with
# ``nd:`` are "other". The meanings follow stream/index/redis/keys.py.
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

# The datasketch side: a small program as its documentation shows the library used, run as a
# script (Redis storage when HOST:PORT is given); it imports nothing of this repository.
PEER = Path(__file__).resolve().parent / "peers" / "datasketch_dedup.py"
PEER_COMMAND = "python bench/peers/datasketch_dedup.py"


# --------------------------------------------------------------------------- child processes


def child_env() -> dict[str, str]:
    """The environment without ``NEARDUP_*`` and ``PYTHONDONTWRITEBYTECODE``: a developer's shell
    must not change a measurement, and a user's Python keeps its bytecode caches (without them
    every start compiles the modules again)."""
    drop = ("PYTHONDONTWRITEBYTECODE",)
    return {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_") and k not in drop}


@dataclass(frozen=True)
class ProcRun:
    """One child process: wall clock from spawn to reaping, and its own CPU."""

    wall_s: float
    cpu_s: float  # user + system, from os.wait4
    stderr: str


def run_child(argv: Sequence[str], cwd: Path, ok: Sequence[int] = (0,)) -> ProcRun:
    """Run ``argv`` to its end (stdin and stdout /dev/null, stderr kept); reaped by ``os.wait4``
    so the CPU is this child's alone (its ``ru_maxrss`` is not: Linux carries the forking
    parent's peak RSS over ``exec``, so none is reported). Killed and reaped on an interruption."""
    with tempfile.TemporaryFile(dir=cwd) as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=cwd,
            env=child_env(),
        )
        timer = threading.Timer(CHILD_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            timer.cancel()
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", errors="replace")
    if proc.returncode not in ok:
        raise RuntimeError(
            f"{' '.join(argv[:3])} ... exited with {proc.returncode}:\n{text[-2000:]}"
        )
    return ProcRun(wall, usage.ru_utime + usage.ru_stime, text)


def neardup_argv(corpus: Path, store: str) -> list[str]:
    return [str(NEARDUP), "dedup", str(corpus), "--store", store, "--no-progress", "-o", os.devnull]


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


# --------------------------------------------------------------------------- measuring


@dataclass
class Side:
    """One system's repeated runs of one command."""

    key: str
    system: str
    store: str  # "memory" | "redis"
    docs: int
    command: str
    runs: list[ProcRun] = field(default_factory=list)
    redis_bytes: list[int] = field(default_factory=list)  # used_memory delta per run
    redis_keys: list[int] = field(default_factory=list)
    redis_cpu_s: list[float] = field(default_factory=list)
    summary: dict[str, int] = field(default_factory=dict)  # what the last run said
    breakdown: dict[str, Any] = field(default_factory=dict)  # by key kind, after the last run

    def add(self, run: ProcRun, neardup: bool) -> None:
        self.runs.append(run)
        self.summary = neardup_summary(run.stderr) if neardup else peer_summary(run.stderr)

    def add_redis(self, before: RedisStats, after: RedisStats) -> None:
        self.redis_bytes.append(after.used_memory - before.used_memory)
        self.redis_keys.append(after.dbsize - before.dbsize)
        self.redis_cpu_s.append(after.cpu_s - before.cpu_s)

    def flagged(self) -> int | None:
        s = self.summary
        if "flagged" in s:
            return s["flagged"]
        if "original" in s:
            return s.get("near_duplicate", 0) + s.get("duplicate", 0)
        return None

    def decided(self) -> int | None:
        s = self.summary
        if "docs" in s:
            return s["docs"]
        if "original" in s:
            return s["original"] + s.get("near_duplicate", 0) + s.get("duplicate", 0)
        return None

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
            "decided": self.decided(),
            "flagged": self.flagged(),
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


def write_corpus(docs: Sequence[Mapping[str, Any]], path: Path) -> None:
    with path.open("wb") as fh:
        for d in docs:
            fh.write(orjson.dumps({"id": d["id"], "text": d["text"]}) + b"\n")


def check_peer_shingles(docs: Sequence[Mapping[str, Any]]) -> int:
    """Documents on which the program's tokenising differs from ``peer_shingles`` (must be 0)."""
    return sum(1 for d in docs if datasketch_dedup.shingles(d["text"]) != peer_shingles(d["text"]))


def measure_memory(corpus: Path, n: int, reps: int, workdir: Path, one: Path) -> list[Side]:
    nd = Side(
        "nd_mem",
        "neardup dedup",
        "memory",
        n,
        "neardup dedup corpus.jsonl --store memory --no-progress -o /dev/null",
    )
    ds = Side("ds_mem", "datasketch program", "memory", n, f"{PEER_COMMAND} corpus.jsonl /dev/null")
    run_child(neardup_argv(one, "memory"), workdir)  # warm-up: caches, not timed
    run_child(peer_argv(one), workdir)
    for rep in range(1, reps + 1):
        nd.add(run_child(neardup_argv(corpus, "memory"), workdir), neardup=True)
        say(f"memory {rep}/{reps}: neardup {nd.runs[-1].wall_s:.2f} s")
        ds.add(run_child(peer_argv(corpus), workdir), neardup=False)
        say(f"memory {rep}/{reps}: datasketch {ds.runs[-1].wall_s:.2f} s")
    return [nd, ds]


def profile_report(raw: str, hz: int) -> dict[str, Any]:
    """py-spy's samples as the report shows them: the parts (% of samples, seconds = samples /
    rate) in :data:`DEDUP_PARTS` order of size, and the hottest leaf functions (own time)."""
    got = attribute_command(raw, DEDUP_PARTS)
    total = sum(got.parts.values())

    def pct(n: int) -> float:
        return 100.0 * n / total if total else 0.0

    parts = [
        {"part": name, "samples": n, "pct": pct(n), "seconds": n / hz}
        for name, n in got.parts.most_common()
    ]
    leaves = [
        {"function": frame, "part": part, "samples": n, "pct": pct(n), "seconds": n / hz}
        for (frame, part), n in got.leaves.most_common(PROFILE_LEAVES)
    ]
    return {"samples": total, "seconds": total / hz, "parts": parts, "top_leaves": leaves}


def profile_memory(corpus: Path, workdir: Path, best_wall_s: float) -> dict[str, Any]:
    """One more neardup memory run under ``py-spy record``; its samples classified by
    :func:`profile_report`, or ``{"skipped": why}`` (never an error: the benchmark goes on)."""
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
    report = profile_report(raw.read_text(), PROFILE_HZ)
    say(f"profile: {run.wall_s:.2f} s, {report['samples']:,} samples")
    return {
        "command": " ".join(["py-spy", *spy_argv[1:], "--output", "<file>", "--", "python"])
        + " neardup dedup corpus.jsonl --store memory --no-progress -o /dev/null",
        "hz": PROFILE_HZ,
        "wall_s": run.wall_s,
        "best_timed_wall_s": best_wall_s,
        "neardup_summary": neardup_summary(run.stderr),
        "rule": "DEDUP_PARTS: the first Whole part (start-up, boilerplate) with a frame in the "
        "stack, else the part of the deepest frame belonging to one",
        **report,
    }


def key_kind(key: bytes) -> str:
    """``nd:{ns}:<kind>[:<shard>]`` -> ``<kind>``; ``nd:namespaces`` -> ``namespaces``; a key
    not starting with ``nd:`` -> ``other``."""
    parts = key.split(b":")
    if len(parts) < 2 or parts[0] != PREFIX.encode():
        return "other"
    return (parts[2] if len(parts) > 2 else parts[1]).decode("utf-8", errors="replace")


def line_cap(r: redis.Redis, metas: Sequence[bytes]) -> tuple[int, str]:
    """``boilerplate_lines`` as the namespaces recorded it (the meta hash's ``policy`` field),
    the policy's default when none did; and where it came from."""
    caps = []
    for meta in metas:
        raw = r.hget(meta, "policy")
        try:
            got = orjson.loads(raw) if isinstance(raw, bytes) else None
        except orjson.JSONDecodeError:
            got = None
        if isinstance(got, dict) and isinstance(got.get("boilerplate_lines"), int):
            caps.append(int(got["boilerplate_lines"]))
    if caps:
        return max(caps), "the namespace's recorded policy"
    return Policy.boilerplate_lines, "the policy's default"


def redis_breakdown(r: redis.Redis, docs: int, used_memory_delta: int) -> dict[str, Any]:
    """Every key (``SCAN``) with its ``MEMORY USAGE key SAMPLES 0`` (exact: every element),
    summed by :func:`key_kind`; the line counts' own fields (``HLEN``) and bound beside."""
    keys_by: dict[str, int] = {}
    bytes_by: dict[str, int] = {}
    line_keys: list[bytes] = []
    metas: list[bytes] = []
    for k, used in key_usage(r, SCAN_BATCH):
        kind = key_kind(k)
        keys_by[kind] = keys_by.get(kind, 0) + 1
        bytes_by[kind] = bytes_by.get(kind, 0) + used
        if kind == LINE_COUNTS:
            line_keys.append(k)
        elif kind == "m":
            metas.append(k)
    pipe = r.pipeline(transaction=False)
    for k in line_keys:
        pipe.hlen(k)
    line_fields = sum(int(n) for n in pipe.execute()) if line_keys else 0
    namespaces = len(metas)
    cap, cap_from = line_cap(r, metas)
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


def measure_redis(
    corpus: Path, n: int, reps: int, workdir: Path, one: Path
) -> tuple[list[Side], dict[str, Any]]:
    say("starting Redis")
    service = services.start_redis(workdir / "redis")
    try:
        r = redis.Redis(host=services.HOST, port=service.port)
        try:
            url, at = service.url, f"{services.HOST}:{service.port}"
            server: dict[str, Any] = r.info("server")
            info = {
                "redis_version": str(server.get("redis_version")),
                "redis_binary": service.binary.name,
                "redis_config": {
                    str(k): str(v) for k, v in sorted(r.config_get("hash-max-listpack-*").items())
                },
            }
            nd = Side(
                "nd_redis",
                "neardup dedup",
                "redis",
                n,
                "neardup dedup corpus.jsonl --store redis://127.0.0.1:PORT/0 --no-progress "
                "-o /dev/null",
            )
            ds = Side(
                "ds_redis",
                "datasketch program",
                "redis",
                n,
                f"{PEER_COMMAND} corpus.jsonl /dev/null 127.0.0.1:PORT",
            )
            # Warm-up runs, not timed; neardup's first also loads its FUNCTION library, which
            # FLUSHALL keeps, so no measured run pays for it.
            run_child(neardup_argv(one, url), workdir)
            run_child(peer_argv(one, at), workdir)
            for rep in range(1, reps + 1):
                for side, argv, is_nd in (
                    (nd, neardup_argv(corpus, url), True),
                    (ds, peer_argv(corpus, at), False),
                ):
                    r.flushall()
                    before = redis_stats(r)
                    side.add(run_child(argv, workdir), neardup=is_nd)
                    side.add_redis(before, redis_stats(r))
                    if is_nd and rep == reps:  # the last neardup run, before the next FLUSHALL
                        side.breakdown = redis_breakdown(r, n, side.redis_bytes[-1])
                    say(
                        f"redis {rep}/{reps}: {side.system} {side.runs[-1].wall_s:.2f} s, "
                        f"{side.redis_bytes[-1] / n:,.0f} B/doc"
                    )
            r.flushall()
        finally:
            r.close()
    finally:
        service.stop()
    return [nd, ds], info


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\| ( *)(\S.*?)\s*$")


def parse_importtime(stderr: str) -> list[dict[str, Any]]:
    """``-X importtime`` lines -> one dict per import (µs), in the order they finished."""
    rows = []
    for line in stderr.splitlines():
        m = _IMPORT_LINE.match(line)
        if m:
            rows.append(
                {
                    "module": m.group(4),
                    "depth": len(m.group(3)) // 2,
                    "self_us": int(m.group(1)),
                    "cumulative_us": int(m.group(2)),
                }
            )
    return rows


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
    imports = parse_importtime(traced.stderr)
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


# --------------------------------------------------------------------------- the run


def targets(rows: Mapping[str, Mapping[str, Any]], startup: Mapping[str, Any]) -> dict[str, Any]:
    def ratio(nd: str, ds: str) -> float:
        return float(rows[ds]["best_wall_s"]) / float(rows[nd]["best_wall_s"])

    mem, red = ratio("nd_mem", "ds_mem"), ratio("nd_redis", "ds_redis")
    b = float(rows["nd_redis"]["redis_bytes_per_doc"])
    g = float(rows["nd_redis"]["redis_breakdown"]["bytes_per_doc_without_line_counts"])
    up = float(startup["neardup"]["median_s"])
    t = TARGETS
    grow = t["redis_growing_bytes"]
    return {
        "memory_5x": {**t["memory_5x"], "measured": mem, "met": mem >= t["memory_5x"]["min"]},
        "redis_20x": {**t["redis_20x"], "measured": red, "met": red >= t["redis_20x"]["min"]},
        "redis_bytes": {**t["redis_bytes"], "measured": b, "met": b <= t["redis_bytes"]["max"]},
        "redis_growing_bytes": {**grow, "measured": g, "met": g <= grow["max"]},
        "startup": {**t["startup"], "measured": up, "met": up < t["startup"]["below"]},
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
    mismatched = check_peer_shingles(docs)
    if mismatched:
        raise RuntimeError(f"the program's shingles differ from peer_shingles on {mismatched} docs")

    say(f"start-up: {args.startup_runs} runs of each command on a one-line file")
    startup = measure_startup(one, args.startup_runs, workdir)
    say(f"memory store: {len(docs):,} docs, best of {args.reps}")
    sides = measure_memory(corpus, len(docs), args.reps, workdir, one)
    best_nd = min(r.wall_s for r in sides[0].runs)
    if args.no_profile:
        profile: dict[str, Any] = {"skipped": "--no-profile"}
    else:
        profile = profile_memory(corpus, workdir, best_nd)
        if "skipped" in profile:
            say(f"profile skipped: {profile['skipped']}")
    say(f"Redis store: {n_redis:,} docs, best of {args.reps}")
    redis_sides, redis_info = measure_redis(corpus_redis, n_redis, args.reps, workdir, one)
    rows = {s.key: s.result() for s in [*sides, *redis_sides]}
    for key, base in (("nd_mem", "ds_mem"), ("nd_redis", "ds_redis")):
        rows[key]["vs_datasketch"] = rows[base]["best_wall_s"] / rows[key]["best_wall_s"]
        rows[key]["cpu_vs_datasketch"] = rows[base]["best_cpu_s"] / rows[key]["best_cpu_s"]
    for key in ("nd_mem", "nd_redis"):
        if rows[key]["decided"] != rows[key]["docs"] or rows[key]["summary"].get("invalid"):
            raise RuntimeError(f"{key}: neardup did not decide every line: {rows[key]['summary']}")
    for key in ("ds_mem", "ds_redis"):
        if rows[key]["decided"] != rows[key]["docs"]:
            raise RuntimeError(f"{key}: the datasketch program did not decide every line")
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
    parser = cli.parser("command", __doc__)
    parser.add_argument("--reps", type=int, default=3, help="runs per command, best kept")
    parser.add_argument("--redis-docs", type=int, default=5_000, help="stories for the Redis runs")
    parser.add_argument("--startup-runs", type=int, default=15, help="one-line runs per command")
    parser.add_argument(
        "--docs", type=int, default=0, help="only the first N stories (default 0: all 20,841)"
    )
    parser.add_argument(
        "--no-profile",
        action="store_true",
        help="skip the extra neardup memory run under py-spy record",
    )
    args = parser.parse_args(argv)
    if args.reps < 1 or args.redis_docs < 1 or args.startup_runs < 1 or args.docs < 0:
        parser.error("need --reps, --redis-docs, --startup-runs >= 1 and --docs >= 0")
    cli.sigterm_unwinds()
    started = time.perf_counter()
    busy = other_load()
    machine = {**machine_info(PACKAGES), "cores_busy_before_run": round(busy, 2)}
    say(f"other processes kept {busy:.2f} cores busy")
    try:
        with tempfile.TemporaryDirectory(prefix="neardup-bench-command-") as tmp:
            measured = measure(args, Path(tmp))
    except services.ServiceError as exc:
        print(f"command benchmark: Redis did not start: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"command benchmark: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    machine["load_average_1m_at_end"] = (loadavg() or [float("nan")])[0]
    result: dict[str, Any] = {
        "benchmark": "command",
        "generated": cli.now(),
        "seconds": round(time.perf_counter() - started, 1),
        "command": cli.command("command", argv),
        "machine": machine,
        "git": git_state(),
        "reps": args.reps,
        **measured,
    }
    cli.write(args.out, "command", result, command_tables.markdown(result))
    print(command_tables.results_table(result), "", command_tables.targets_table(result), sep="\n")
    say(f"wrote {args.out / 'command.md'} and command.json")
    return 0


__all__ = ["PEER", "main"]
