"""The one worker environment, the settings read back from it, topics' names, free ports."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from harness.kafka import Topics
from harness.services import free_port
from harness.workers import LOCAL, WorkerProc, worker_env
from neardup.stream.worker.config import Settings

TOPICS = Topics("127.0.0.1:9", "in", "out", "dead")


def _env(**settings: str) -> dict[str, str]:
    return worker_env(
        TOPICS,
        "redis://127.0.0.1:1/0",
        group="g",
        web_port=1234,
        data_dir=Path("/data/w"),
        settings=settings,
        inherit={"PATH": "/bin", "NEARDUP_THRESHOLD": "0.1", "NEARDUP_REDIS_URL": "redis://x"},
    )


def test_worker_env_drops_inherited_neardup_settings_and_sets_its_own() -> None:
    env = _env()
    assert env["PATH"] == "/bin"
    assert "NEARDUP_THRESHOLD" not in env, "a developer's shell must not change the worker"
    assert env["NEARDUP_REDIS_URL"] == "redis://127.0.0.1:1/0"
    assert env["NEARDUP_KAFKA_BOOTSTRAP"] == "127.0.0.1:9"
    assert (env["NEARDUP_INPUT_TOPIC"], env["NEARDUP_VERDICT_TOPIC"]) == ("in", "out")
    assert env["NEARDUP_DLQ_TOPIC"] == "dead" and env["NEARDUP_CONSUMER_GROUP"] == "g"
    assert env["NEARDUP_WEB_PORT"] == "1234" and env["NEARDUP_WEB_HOST"] == "127.0.0.1"
    assert env["NEARDUP_DATA_DIR"] == "/data/w"
    assert LOCAL.items() <= env.items()


def test_caller_settings_win_over_the_local_defaults() -> None:
    env = _env(NEARDUP_KAFKA_SESSION_TIMEOUT_S="30", NEARDUP_RETENTION_S="60")
    assert env["NEARDUP_KAFKA_SESSION_TIMEOUT_S"] == "30"
    assert env["NEARDUP_RETENTION_S"] == "60"


def test_every_name_the_env_sets_is_a_worker_setting() -> None:
    fields = {f"NEARDUP_{name.upper()}" for name in Settings.model_fields}
    assert {k for k in _env() if k.startswith("NEARDUP_")} <= fields


def _proc(env: dict[str, str]) -> WorkerProc:
    proc: subprocess.Popen[bytes] = subprocess.Popen(["true"])
    proc.wait()
    return WorkerProc(proc, 1, Path("log"), {k: v for k, v in env.items() if "NEARDUP_" in k})


def test_setting_reads_the_env_else_the_products_default() -> None:
    w = _proc(_env(NEARDUP_KAFKA_FETCH_MAX_WAIT_MS="1500", NEARDUP_RETENTION_S="60"))
    assert w.setting("kafka_fetch_max_wait_ms") == 1500
    assert w.setting("retention_s") == 60.0
    default = _proc(_env())
    assert (
        default.setting("kafka_fetch_max_wait_ms")
        == Settings.model_fields["kafka_fetch_max_wait_ms"].default
    )
    assert default.setting("retention_s") is None
    assert default.setting("kafka_session_timeout_s") == 10.0


def test_topic_names_follow_the_worker_defaults() -> None:
    t = Topics.named("b:1", "bench.")
    assert t.all == ("bench.articles", "bench.verdicts", "bench.articles.dlq")
    tagged = Topics.named("b:1", tag="x1")
    assert tagged.all == ("articles-x1", "verdicts-x1", "articles.dlq-x1")


def test_free_port_is_bindable_on_loopback() -> None:
    port = free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
