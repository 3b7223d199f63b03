"""The worker started as a user starts it (``neardup worker``), before the broker answers:
``/health`` is served from the start (503, the reason naming Kafka, JSON), ``/live`` answers 200
(waiting is alive), and a misspelt ``NEARDUP_*`` variable is named at start with the setting it
was probably meant to be.

Closed unless opened: without ``NEARDUP_CHECK_TOKEN`` a worker listens on loopback, or on
another address only with ``NEARDUP_WEB_OPEN=true``; otherwise it refuses to start, in one
line. The start-up log names the mode it serves in.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from harness.services import free_port

START_S = 30.0


def _get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _start(tmp_path: Path, web: int, **settings: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``neardup worker`` with no broker to reach (nothing listens on its address), the
    environment's ``NEARDUP_*`` dropped; its output in ``worker.log``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env |= {
        "NEARDUP_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}",
        "NEARDUP_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
        "NEARDUP_WEB_PORT": str(web),
        "NEARDUP_DATA_DIR": str(tmp_path / "data"),
        **settings,
    }
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "neardup.stream.cli.main", "worker"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, log


def _first_health(proc: subprocess.Popen[bytes], web: int) -> tuple[int, dict[str, object]] | None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            return _get(f"http://127.0.0.1:{web}/health")
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def test_health_is_served_while_the_worker_waits_for_kafka(tmp_path: Path) -> None:
    web = free_port()
    proc, log = _start(
        tmp_path,
        web,
        NEARDUP_WEB_HOST="127.0.0.1",
        NEARDUP_TRESHOLD="0.7",  # misspelt: ignored, and said so
    )
    try:
        got = _first_health(proc, web)
        assert got is not None, log.read_text(errors="replace")[-2000:]
        status, body = got
        assert status == 503 and body["ready"] is False and body["kafka"] is False
        assert "Kafka" in str(body["reason"]), body
        # alive while it waits: a liveness probe must not restart a worker for a broker outage
        assert _get(f"http://127.0.0.1:{web}/live") == (200, {"live": True})
        status, other = _get(f"http://127.0.0.1:{web}/check")
        assert status == 503 and other["error"] == "starting"
        text = log.read_text(errors="replace")
        assert "unknown setting NEARDUP_TRESHOLD" in text and "NEARDUP_THRESHOLD" in text, text
        assert "mode loopback only: no token" in text, text
        # the worker's own lines: one per event, with time, level and logger, never wrapped
        waiting = [x for x in text.splitlines() if "waiting for Kafka" in x]
        assert waiting and all(
            re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING neardup\.worker: ", x)
            for x in waiting
        ), waiting
    finally:
        _stop(proc)


def test_no_token_on_a_public_address_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    """The defaults but the token's absence: all interfaces. The worker would let anyone who
    reaches the port read, register and take down articles: it exits (2) before it binds the
    port, saying why and what to set, in one line."""
    web = free_port()
    proc, log = _start(tmp_path, web, NEARDUP_WEB_HOST="0.0.0.0")
    try:
        assert proc.wait(timeout=START_S) == 2
        lines = log.read_text(errors="replace").strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("refusing to start: NEARDUP_WEB_HOST=0.0.0.0 is not a loop")
        for name in ("NEARDUP_CHECK_TOKEN", "NEARDUP_WEB_OPEN=true", "127.0.0.1"):
            assert name in lines[0], lines[0]
        with pytest.raises(urllib.error.URLError):
            _get(f"http://127.0.0.1:{web}/health")
    finally:
        _stop(proc)


@pytest.mark.parametrize(
    ("settings", "mode"),
    [
        ({"NEARDUP_WEB_OPEN": "true"}, "mode open by NEARDUP_WEB_OPEN: no token; anyone"),
        ({"NEARDUP_CHECK_TOKEN": "t0ken"}, "mode token: /check, takedowns and the read API"),
    ],
    ids=["opened", "token"],
)
def test_a_public_worker_starts_opened_or_with_a_token_and_says_so(
    tmp_path: Path, settings: dict[str, str], mode: str
) -> None:
    web = free_port()
    proc, log = _start(tmp_path, web, NEARDUP_WEB_HOST="0.0.0.0", **settings)
    try:
        got = _first_health(proc, web)
        assert got is not None and got[0] == 503, log.read_text(errors="replace")[-2000:]
        text = log.read_text(errors="replace")
        line = next(x for x in text.splitlines() if "web views on 0.0.0.0:" in x)
        assert re.match(r"\S+ INFO neardup\.worker: web views on 0\.0\.0\.0:\d+: ", line), line
        assert mode in line and "t0ken" not in text, text
    finally:
        _stop(proc)
