"""What every benchmark reads the same way: the machine, the code's git state, how busy the rest of
the machine keeps the cores (a shared machine's background, stated beside every figure), timing,
and Redis's memory and CPU. Per-process CPU and memory: :mod:`harness.report`."""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import os
import platform
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import orjson
import psutil
import redis

from bench import cli
from harness.profile import find_py_spy

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
_BUSY = ("user", "nice", "system", "irq", "softirq", "steal")  # of psutil.cpu_times()
NO_PY_SPY = {"skipped": "py-spy is not installed (pip install py-spy)"}


def machine_info(packages: Iterable[str]) -> dict[str, Any]:
    """CPU model, cores, memory, Python and the versions of ``packages``."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):  # the model's name: no portable call gives it
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    versions = {}
    for pkg in packages:
        versions[pkg] = "not installed"
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[pkg] = importlib.metadata.version(pkg)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gb": round(psutil.virtual_memory().total / 1024**3, 1),
        "load_average_1m_at_start": os.getloadavg()[0],
        "python": platform.python_version(),
        "platform": platform.platform(),
        **versions,
    }


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


def write_corpus(docs: Iterable[Mapping[str, Any]], path: Path) -> None:
    """``{"id", "text"}`` of each document, one JSON line each: a corpus for a command to read."""
    with path.open("wb") as fh:
        fh.writelines(orjson.dumps({"id": d["id"], "text": d["text"]}) + b"\n" for d in docs)


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine spent busy, summed over cores."""
    times = psutil.cpu_times()
    return float(sum(getattr(times, name, 0.0) for name in _BUSY))


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def other_load(seconds: float = 1.0) -> float:
    """Cores that processes other than this one kept busy over the next ``seconds``."""
    started, busy0, own0 = time.perf_counter(), machine_busy_seconds(), own_cpu_seconds()
    time.sleep(seconds)
    busy = machine_busy_seconds() - busy0 - (own_cpu_seconds() - own0)
    return max(0.0, busy) / (time.perf_counter() - started)


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where the system keeps none)."""
    try:
        return list(os.getloadavg())
    except OSError:
        return []


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


def pct(n: float, of: float) -> float:
    """``n`` as a percentage of ``of`` (0 when ``of`` is)."""
    return 100.0 * n / of if of else 0.0


def latency_ms(ms: Iterable[float], prefix: str = "") -> dict[str, float]:
    """p50, p90, p99, max and mean of latencies in ms, each key under ``prefix``."""
    values = np.asarray(list(ms), dtype=np.float64)
    p50, p90, p99 = np.percentile(values, [50, 90, 99]).tolist()
    got = {"p50": p50, "p90": p90, "p99": p99, "max": values.max(), "mean": values.mean()}
    return {f"{prefix}{k}_ms": float(v) for k, v in got.items()}


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
    keys = [bytes(k) for k in r.scan_iter(count=batch)]
    for lo in range(0, len(keys), batch):
        pipe = r.pipeline(transaction=False)
        for k in (chunk := keys[lo : lo + batch]):
            pipe.memory_usage(k, samples=0)
        yield from ((k, int(used or 0)) for k, used in zip(chunk, pipe.execute(), strict=True))


def memory_breakdown(
    r: redis.Redis, classify: Callable[[bytes], str], n_docs: int
) -> dict[str, float]:
    """Bytes per document of each key class (``MEMORY USAGE key SAMPLES 0``, exact)."""
    totals: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for k, used in key_usage(r):
        cls = classify(k)
        totals[cls] += used
        counts[cls] += 1
    return {
        f"{cls} ({counts[cls]:,} key{'s' if counts[cls] > 1 else ''})": totals[cls] / n_docs
        for cls in sorted(totals, key=lambda c: -totals[c])
    }


def spy_argv(pid: int, raw: Path, hz: int, *extra: str) -> list[str] | None:
    """``py-spy record`` attached to ``pid``, raw stacks (idle ones too) into ``raw``; None
    without py-spy."""
    spy = find_py_spy()
    if spy is None:
        return None
    argv = [spy, "record", "--pid", str(pid), "--rate", str(hz), "--format", "raw", "--idle"]
    return [*argv, "--nolineno", *extra, "--output", str(raw)]


def spy_stop(proc: subprocess.Popen[bytes], raw: Path) -> str | None:
    """SIGINT (py-spy writes its output then), killed if still running after 30 s; the raw
    stacks, or None when it wrote nothing."""
    proc.send_signal(signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(30)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    return raw.read_text() if raw.is_file() and raw.stat().st_size else None


POLL_S = 0.05  # how often run_child reads a child's memory


@dataclass(frozen=True)
class ChildRun:
    """One child process: wall clock from spawn to reaping, its own CPU, its peak RSS (0 when
    not polled)."""

    wall_s: float
    cpu_s: float  # user + system, os.wait4
    stderr: str
    peak_rss: int = 0  # bytes, polled (the child and its children)


def _poll_peak(pid: int, done: threading.Event, peak: list[int]) -> None:
    try:
        proc = psutil.Process(pid)
    except psutil.Error:
        return
    while not done.is_set():
        try:
            rss = proc.memory_info().rss
            for child in proc.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    rss += child.memory_info().rss
        except psutil.Error:
            return
        peak[0] = max(peak[0], rss)
        done.wait(POLL_S)


def run_child(
    argv: Sequence[str],
    cwd: Path,
    *,
    ok: Sequence[int] = (0,),
    timeout_s: float = 900.0,
    poll_rss: bool = False,
) -> ChildRun:
    """Run ``argv`` to its end (stderr kept), reaped by ``os.wait4`` so the CPU is this child's
    alone; its RSS (with its children's) polled every :data:`POLL_S` when ``poll_rss`` (the
    child's ``ru_maxrss`` is not its own: Linux carries the parent's peak over ``exec``). No
    ``NEARDUP_*`` (a developer's shell must not change a measurement); bytecode caches kept, as
    a user's Python keeps them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    peak = [0]
    done = threading.Event()
    with tempfile.TemporaryFile(dir=cwd) as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=cwd,
            env=env,
        )
        poller = threading.Thread(target=_poll_peak, args=(proc.pid, done, peak), daemon=True)
        if poll_rss:
            poller.start()
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            timer.cancel()
            done.set()
        wall = time.perf_counter() - started
        if poll_rss:
            poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", errors="replace")
    if proc.returncode not in ok:
        raise RuntimeError(
            f"{' '.join(argv[:3])} ... exited with {proc.returncode}:\n{text[-2000:]}"
        )
    return ChildRun(wall, usage.ru_utime + usage.ru_stime, text, peak[0])


def header(name: str, argv: Sequence[str] | None, started: float, machine: Any) -> dict[str, Any]:
    """What a result says of itself: which benchmark, when, in how long (``started``: its
    ``time.perf_counter()``), from which command, on which machine and code."""
    return {
        "benchmark": name,
        "generated": cli.now(),
        "seconds": round(time.perf_counter() - started, 1),
        "command": cli.command(name, argv),
        "machine": machine,
        "git": git_state(),
    }
