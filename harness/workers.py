"""``neardup worker`` processes started as a deployment starts them: configured by ``NEARDUP_*``.

:func:`worker_env` builds every worker's environment: inherited ``NEARDUP_*`` variables are
dropped (a developer's shell must not change a test or a measurement), then the stack's
addresses, :data:`LOCAL` and the caller's settings are set.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import TypeAdapter

from harness.kafka import Topics
from harness.report import parse_prometheus
from harness.services import HOST, free_port, log_tail
from neardup.stream.worker.config import Settings

__all__ = [
    "LOCAL",
    "NEARDUP",
    "WorkerProc",
    "start_worker",
    "stop_workers",
    "wait_ready",
    "worker_env",
]

NEARDUP = Path(sys.executable).parent / "neardup"
LOCAL: Mapping[str, str] = {
    "NEARDUP_KAFKA_SESSION_TIMEOUT_S": "10",
    "NEARDUP_KAFKA_HEARTBEAT_INTERVAL_S": "1",
}
STOP_TIMEOUT_S = 20.0


def worker_env(
    topics: Topics,
    redis_url: str,
    *,
    group: str,
    web_port: int,
    data_dir: Path,
    settings: Mapping[str, str] | None = None,
    inherit: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of one worker process (see the module docstring for the order)."""
    base = os.environ if inherit is None else inherit
    env = {k: v for k, v in base.items() if not k.startswith("NEARDUP_")}
    env |= {
        "NEARDUP_KAFKA_BOOTSTRAP": topics.bootstrap,
        "NEARDUP_REDIS_URL": redis_url,
        "NEARDUP_INPUT_TOPIC": topics.input,
        "NEARDUP_VERDICT_TOPIC": topics.verdicts,
        "NEARDUP_DLQ_TOPIC": topics.dlq,
        "NEARDUP_CONSUMER_GROUP": group,
        "NEARDUP_WEB_HOST": HOST,
        "NEARDUP_WEB_PORT": str(web_port),
        "NEARDUP_DATA_DIR": str(data_dir),
        **LOCAL,
        **(settings or {}),
    }
    return env


@dataclass
class WorkerProc:
    """One running worker: its process, web port, log, and the ``NEARDUP_*`` it was given."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    env: Mapping[str, str] = field(default_factory=dict)
    name: str = "worker"

    def url(self, path: str) -> str:
        return f"http://{HOST}:{self.port}{path}"

    def setting(self, name: str) -> Any:
        """The value of setting ``name`` (``kafka_fetch_max_wait_ms``) this worker runs with:
        its environment, else the product's default."""
        spec = Settings.model_fields[name]
        raw = self.env.get(f"NEARDUP_{name.upper()}")
        if raw is None or spec.annotation is None:
            return spec.default if raw is None else raw
        return TypeAdapter(spec.annotation).validate_python(raw)

    def get(self, path: str, timeout_s: float = 5) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(self.url(path), timeout=timeout_s) as r:
                return int(r.status), bytes(r.read())
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def post(
        self, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        sent = {"Content-Type": "application/json", **(headers or {})}  # bodies are JSON
        req = urllib.request.Request(self.url(path), data=body, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return int(r.status), json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def metrics(self) -> dict[str, float]:
        """``/metrics``, summed over labels (see :func:`harness.report.parse_prometheus`)."""
        status, body = self.get("/metrics")
        if status != 200:
            raise RuntimeError(f"{self.name}: /metrics answered {status}")
        return parse_prometheus(body.decode())

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            tail = log_tail(self.log, 40)
            raise RuntimeError(f"{self.name} exited ({self.proc.returncode}):\n{tail}")

    def wait_ready(self, timeout_s: float = 60) -> None:
        """Until ``/health`` answers 200 (faust starts its web server after the first
        assignment, so ready means consuming)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.check_alive()
            with contextlib.suppress(OSError):
                if self.get("/health", timeout_s=2)[0] == 200:
                    return
            time.sleep(0.3)
        raise TimeoutError(f"{self.name} not ready after {timeout_s:.0f} s:\n{log_tail(self.log)}")

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (finish the batch, commit, leave the group), SIGKILL after ``timeout_s``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


W = TypeVar("W", bound=WorkerProc)


@overload
def start_worker(
    topics: Topics, redis_url: str, workdir: Path, group: str, /, **settings: str
) -> WorkerProc: ...
@overload
def start_worker(
    topics: Topics,
    redis_url: str,
    workdir: Path,
    group: str,
    proc_type: type[W],
    /,
    **settings: str,
) -> W: ...
def start_worker(
    topics: Topics,
    redis_url: str,
    workdir: Path,
    group: str,
    proc_type: type[WorkerProc] = WorkerProc,
    /,
    **settings: str,
) -> WorkerProc:
    """``neardup worker --no-create-topics`` with :func:`worker_env`; logs in ``workdir``."""
    port = free_port()
    name = f"worker-{port}"
    env = worker_env(
        topics,
        redis_url,
        group=group,
        web_port=port,
        data_dir=workdir / f"data-{port}",
        settings=settings,
    )
    log = workdir / f"{name}.log"
    with log.open("wb") as out:  # the child keeps its own handle
        proc = subprocess.Popen(
            [str(NEARDUP), "worker", "--no-create-topics"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    mine = {k: v for k, v in env.items() if k.startswith("NEARDUP_")}
    return proc_type(proc, port, log, mine, name)


def stop_workers(workers: Iterable[WorkerProc], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM all at once (they leave the group together), then wait for each."""
    workers = list(workers)
    for w in workers:
        if w.proc.poll() is None:
            w.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for w in workers:
        w.stop(timeout_s=max(0.1, deadline - time.monotonic()))


async def wait_ready(workers: Iterable[WorkerProc], timeout_s: float = 90.0) -> float:
    """Seconds until every worker is ready (from an event loop: the polls run in threads)."""
    started = time.monotonic()
    await asyncio.gather(*(asyncio.to_thread(w.wait_ready, timeout_s) for w in workers))
    return time.monotonic() - started
