"""Settings: NEARDUP_* from the environment, validated at start, secrets never shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import faust
import pytest
from pydantic import ValidationError

from neardup.stream.worker.clients import kafka_admin_options, kafka_options, safe_url
from neardup.stream.worker.config import (
    ClosedWebError,
    Settings,
    unknown_variables,
    web_mode,
    web_mode_line,
)

NEARDUP = Path(sys.executable).parent / "neardup"


def test_defaults_follow_the_design(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(__import__("os").environ):
        if var.startswith("NEARDUP_"):
            monkeypatch.delenv(var)
    s = Settings()
    assert (s.input_topic, s.verdict_topic, s.dlq_topic) == ("articles", "verdicts", "articles.dlq")
    assert s.policy().threshold == 0.8


def test_environment_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEARDUP_KAFKA_BOOTSTRAP", "a:1, b:2")
    monkeypatch.setenv("NEARDUP_THRESHOLD", "0.9")
    monkeypatch.setenv("NEARDUP_RETENTION_S", "3600")
    monkeypatch.setenv("NEARDUP_DELETED_TTL_S", "120")
    s = Settings()
    assert s.bootstrap_servers() == ["a:1", "b:2"]
    assert s.policy().threshold == 0.9 and s.policy().retention_s == 3600
    assert s.policy().deleted_ttl_s == 120
    assert Settings(retention_s=None).policy().remember_deleted_s == 120
    assert s.policy().boilerplate_sources is None and s.policy().teaches("any.example")
    monkeypatch.setenv("NEARDUP_BOILERPLATE_SOURCES", "wire.example, site.example")
    assert Settings().policy().boilerplate_sources == ("wire.example", "site.example")


@pytest.mark.parametrize(
    "env",
    [
        {"NEARDUP_THRESHOLD": "1.5"},
        {"NEARDUP_REDIS_URL": "http://x"},
        {"NEARDUP_NAMESPACE": "a b"},
        {"NEARDUP_BATCH_SIZE": "0"},
        {"NEARDUP_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"},  # without username/password
        {"NEARDUP_REDIS_WAIT_REPLICAS": "-1"},
        # a WAIT the client gives up on first (NEARDUP_REDIS_TIMEOUT_S is 5 by default)
        {"NEARDUP_REDIS_WAIT_REPLICAS": "1", "NEARDUP_REDIS_WAIT_TIMEOUT_MS": "5000"},
    ],
)
def test_invalid_settings_are_refused(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    with pytest.raises(ValidationError):
        Settings()


def test_replica_wait_reaches_the_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from neardup.stream.worker.app import Worker

    monkeypatch.setenv("NEARDUP_REDIS_WAIT_REPLICAS", "2")
    monkeypatch.setenv("NEARDUP_REDIS_WAIT_TIMEOUT_MS", "250")
    index = Worker(Settings(data_dir=str(tmp_path))).index  # nothing is started
    assert (index.wait_replicas, index.wait_timeout_ms) == (2, 250)


def test_secrets_never_appear_in_repr() -> None:
    s = Settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_username="u",
        kafka_sasl_password="hunter2",  # type: ignore[arg-type]
        redis_password="pw-123",  # type: ignore[arg-type]
        check_token="tok-456",  # type: ignore[arg-type]
    )
    text = repr(s) + str(s.model_dump())
    for secret in ("hunter2", "pw-123", "tok-456"):
        assert secret not in text


def _sasl_settings() -> Settings:
    return Settings(
        kafka_bootstrap="k1:9093,k2:9093",
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-512",
        kafka_sasl_username="svc",
        kafka_sasl_password="pw",  # type: ignore[arg-type]
    )


def test_sasl_settings_become_faust_credentials() -> None:
    s = _sasl_settings()
    opts = kafka_options(s)
    assert opts["broker"] == ["kafka://k1:9093", "kafka://k2:9093"]
    cred = opts["broker_credentials"]
    assert isinstance(cred, faust.SASLCredentials)
    assert cred.username == "svc" and cred.password == "pw"
    assert cred.mechanism.value == "SCRAM-SHA-512"
    assert cred.ssl_context is not None
    assert "broker_credentials" not in kafka_options(Settings())


def test_topic_admin_gets_the_same_broker_and_credentials() -> None:
    s = _sasl_settings()
    opts = kafka_admin_options(s)
    assert opts["bootstrap_servers"] == ["k1:9093", "k2:9093"]
    assert opts["security_protocol"] == "SASL_SSL"
    assert (opts["sasl_mechanism"], opts["sasl_plain_username"]) == ("SCRAM-SHA-512", "svc")
    assert opts["sasl_plain_password"] == "pw"
    assert opts["ssl_context"] is not None
    plain = kafka_admin_options(Settings())
    assert plain == {"bootstrap_servers": ["localhost:9092"], "security_protocol": "PLAINTEXT"}


def test_urls_are_logged_without_credentials() -> None:
    assert safe_url("redis://user:pw@host:6379/0") == "redis://***@host:6379/0"
    assert safe_url("redis://host:6379/0") == "redis://host:6379/0"


def test_worker_refuses_bad_settings_with_a_clear_message() -> None:
    out = subprocess.run(
        [str(NEARDUP), "worker"],
        env={"NEARDUP_THRESHOLD": "2", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "NEARDUP_THRESHOLD" in out.stderr


def test_dedup_refuses_a_replica_wait_without_redis(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "one story"}\n')
    out = subprocess.run(
        [str(NEARDUP), "dedup", str(src), "--redis-wait-replicas", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--redis-wait-replicas needs a redis:// store" in " ".join(out.stderr.split())


def test_unknown_variables_are_named_with_the_closest_setting() -> None:
    """A misspelt setting is ignored by the settings model: the worker says so at start."""
    env = {
        "NEARDUP_TRESHOLD": "0.7",  # misspelt
        "NEARDUP_THRESHOLD": "0.8",
        "NEARDUP_REDIS_PASWORD": "x",
        "NEARDUP_FOO": "1",  # nothing close
        "NEARDUP_TEST_REDIS_URL": "redis://x",  # the test harness's
        "NEARDUP_REDIS_BIN": "/usr/bin/redis-server",
        "PATH": "/bin",
    }
    assert unknown_variables(env) == [
        "unknown setting NEARDUP_FOO is ignored",
        "unknown setting NEARDUP_REDIS_PASWORD is ignored; did you mean NEARDUP_REDIS_PASSWORD?",
        "unknown setting NEARDUP_TRESHOLD is ignored; did you mean NEARDUP_THRESHOLD?",
    ]


@pytest.mark.parametrize(
    ("host", "token", "opened", "mode"),
    [
        ("127.0.0.1", None, False, "loopback"),
        ("127.3.4.5", None, False, "loopback"),
        ("::1", None, False, "loopback"),
        ("[::1]", None, False, "loopback"),
        ("localhost", None, False, "loopback"),
        ("0.0.0.0", None, True, "open"),
        ("10.0.0.7", None, True, "open"),
        ("0.0.0.0", "tok", False, "token"),
        ("0.0.0.0", "tok", True, "token"),
        ("127.0.0.1", "tok", False, "token"),
    ],
)
def test_the_web_mode_follows_the_token_the_address_and_web_open(
    host: str, token: str | None, opened: bool, mode: str
) -> None:
    settings = Settings(web_host=host, check_token=token, web_open=opened)  # type: ignore[arg-type]
    assert web_mode(settings) == mode
    line = web_mode_line(settings)
    assert line.startswith(f"web views on {host}:6066: mode ") and "tok," not in line


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.7", "worker.example", "", "127.0.0.1."])
def test_no_token_on_another_address_is_refused_in_one_line(host: str) -> None:
    with pytest.raises(ClosedWebError) as got:
        web_mode(Settings(web_host=host))
    message = str(got.value)
    assert "\n" not in message and f"NEARDUP_WEB_HOST={host} " in message
    assert "NEARDUP_CHECK_TOKEN" in message and "NEARDUP_WEB_OPEN=true" in message
