"""The worker started as a user starts it (``neardup worker``), before the broker answers:
``/health`` is served from the start (503, the reason naming Kafka, JSON), ``/live`` answers 200
(waiting is alive), and a misspelt ``NEARDUP_*`` variable is named at start with the setting it
was probably meant to be.
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

from harness.services import free_port

START_S = 30.0


def _get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_health_is_served_while_the_worker_waits_for_kafka(tmp_path: Path) -> None:
    web, dead = free_port(), free_port()  # nothing listens on ``dead``: no broker
    env = {
        **os.environ,
        "NEARDUP_KAFKA_BOOTSTRAP": f"127.0.0.1:{dead}",
        "NEARDUP_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
        "NEARDUP_WEB_PORT": str(web),
        "NEARDUP_WEB_HOST": "127.0.0.1",
        "NEARDUP_DATA_DIR": str(tmp_path / "data"),
        "NEARDUP_TRESHOLD": "0.7",  # misspelt: ignored, and said so
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
    try:
        deadline, got = time.monotonic() + START_S, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                got = _get(f"http://127.0.0.1:{web}/health")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
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
        # the worker's own lines: one per event, with time, level and logger, never wrapped
        waiting = [x for x in text.splitlines() if "waiting for Kafka" in x]
        assert waiting and all(
            re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING neardup\.worker: ", x)
            for x in waiting
        ), waiting
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
