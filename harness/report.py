"""What every benchmark reads and writes the same way.

Machine facts, the code's git state, markdown tables, atomic result files, a worker's Prometheus
samples, and per-process CPU and memory from ``/proc``: a benchmark on a shared machine says how
much each process took and how busy everything else kept the cores.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import os
import platform
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import redis
from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def machine_info(packages: Iterable[str]) -> dict[str, Any]:
    """CPU model, cores, memory, Python and the versions of ``packages``."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem_kb = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1]
        mem_gb = round(int(mem_kb) / 1024**2, 1)
    versions = {}
    for pkg in packages:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gb": mem_gb,
        "load_average_1m_at_start": os.getloadavg()[0],
        "python": platform.python_version(),
        "platform": platform.platform(),
        **versions,
    }


def md_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A markdown table; every column but the first right-aligned (they hold numbers)."""
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, so an interrupted run never leaves half a result."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def console(width: int) -> Console:
    """A rich console; ``width`` columns when the output is a log or a pipe, not a terminal."""
    out = Console()
    return out if out.is_terminal else Console(width=width)


def git_state(root: Path = ROOT) -> dict[str, Any]:
    """The commit, and the files under ``sketch/``, ``stream/`` that differ from it: a run may
    measure uncommitted worker code, and its report must say so."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.decode(errors="replace").rstrip()  # porcelain lines start with a space

    changed = git("status", "--porcelain", "--", "neardup", "sketch", "stream", "pyproject.toml")
    return {
        "commit": git("rev-parse", "--short", "HEAD").strip() or "?",
        "worker_code_changed": [line[3:] for line in changed.splitlines()],
    }


def code_line(git: Mapping[str, Any]) -> str:
    """``commit abc1234, clean`` or the commit and the worker files that differ from it."""
    changed = git["worker_code_changed"]
    if not changed:
        return f"commit {git['commit']}, clean"
    files = ", ".join(f"`{f}`" for f in changed)
    return f"commit {git['commit']}; worker code differing from it in the work tree: {files}"


# --------------------------------------------------------------------------- Prometheus

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(\s+-?\d+)?$")


def parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus text exposition -> metric name -> value summed over its label sets.

    Histogram buckets are left out (summing them means nothing); ``_sum`` and ``_count`` stay.
    Comments, blank lines and malformed lines are skipped, so a partial scrape still parses.
    """
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if m is None or m.group(1).endswith("_bucket"):
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out[m.group(1)] = out.get(m.group(1), 0.0) + value
    return out


# --------------------------------------------------------------------------- processes


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process (all its threads) from ``/proc/PID/stat``."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine spent busy (``/proc/stat``, summed over cores)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def other_load(seconds: float = 1.0) -> float:
    """Cores that processes other than this one kept busy over the next ``seconds``: a shared
    machine's background, which every report states beside its figures."""
    started, busy0, own0 = time.perf_counter(), machine_busy_seconds(), own_cpu_seconds()
    time.sleep(seconds)
    busy = machine_busy_seconds() - busy0 - (own_cpu_seconds() - own0)
    return max(0.0, busy) / (time.perf_counter() - started)


def rss_mb(pid: int | None) -> float | None:
    """Resident set size from ``/proc/PID/status`` (``VmRSS``), MB."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where ``/proc`` is missing)."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


# --------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Timing:
    wall_s: float  # time.perf_counter
    cpu_s: float  # this process's user + system CPU (time.process_time), or a child's


class Stopwatch:
    """Wall clock and this process's CPU time from construction to :meth:`stop`: CPU per item
    barely moves when other work shares the machine, wall clock does."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def stop(self) -> Timing:
        return Timing(time.perf_counter() - self._wall, time.process_time() - self._cpu)


def best_of(reps: int, fn: Callable[[], tuple[Timing, T]]) -> tuple[Timing, T]:
    """Best wall and CPU time of ``reps`` fresh runs (each builds its own state); the last run's
    output."""
    times: list[Timing] = []
    for _ in range(max(1, reps)):
        gc.collect()
        timing, res = fn()
        times.append(timing)
    return Timing(min(t.wall_s for t in times), min(t.cpu_s for t in times)), res


# --------------------------------------------------------------------------- Redis


@dataclass
class RedisStats:
    used_memory: int
    dbsize: int
    cpu_s: float


def redis_stats(r: redis.Redis) -> RedisStats:
    mem: dict[str, Any] = r.info("memory")
    cpu: dict[str, Any] = r.info("cpu")
    return RedisStats(
        int(mem["used_memory"]),
        int(r.dbsize()),
        float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
    )


def key_usage(r: redis.Redis, batch: int = 1000) -> Iterator[tuple[bytes, int]]:
    """Every key (``SCAN``) with its ``MEMORY USAGE key SAMPLES 0`` (exact: every element),
    pipelined ``batch`` keys at a time."""
    keys: list[bytes] = []

    def flush() -> list[tuple[bytes, int]]:
        pipe = r.pipeline(transaction=False)
        for k in keys:
            pipe.memory_usage(k, samples=0)
        out = [(k, int(used or 0)) for k, used in zip(keys, pipe.execute(), strict=True)]
        keys.clear()
        return out

    for k in r.scan_iter(count=batch):
        keys.append(bytes(k))
        if len(keys) >= batch:
            yield from flush()
    if keys:
        yield from flush()


def memory_breakdown(
    r: redis.Redis, classify: Callable[[bytes], str], n_docs: int
) -> dict[str, float]:
    """Bytes per document of each key class (``MEMORY USAGE key SAMPLES 0``, exact)."""
    totals: dict[str, int] = {}
    counts: dict[str, int] = {}
    for k, used in key_usage(r):
        cls = classify(k)
        totals[cls] = totals.get(cls, 0) + used
        counts[cls] = counts.get(cls, 0) + 1
    return {
        f"{cls} ({counts[cls]:,} key{'s' if counts[cls] > 1 else ''})": totals[cls] / n_docs
        for cls in sorted(totals, key=lambda c: -totals[c])
    }
