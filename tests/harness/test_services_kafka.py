"""The Apache Kafka service of harness/services.py: its configuration, its storage format, and the
errors that say what is missing on a machine without Java or the broker jars."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import services


def parse(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))


@given(st.integers(1024, 65535), st.integers(1024, 65535))
def test_properties_put_clients_and_quorum_on_their_own_loopback_ports(
    port: int, controller: int
) -> None:
    props = parse(services.kafka_properties(port, controller, Path("/data")))
    assert props["listeners"] == f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}"
    assert props["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{port}"
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{controller}"
    assert props["log.dirs"] == "/data"


def test_properties_are_a_single_node_that_creates_no_topic_by_itself() -> None:
    props = parse(services.kafka_properties(9092, 9093, Path("/data")))
    assert props["process.roles"] == "broker,controller"
    assert props["auto.create.topics.enable"] == "false"
    for key in (
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
    ):
        assert props[key] == "1", key
    assert props["group.initial.rebalance.delay.ms"] == "0"


def test_cluster_ids_are_16_random_bytes_that_do_not_look_like_a_flag() -> None:
    ids = {services.kafka_cluster_id() for _ in range(500)}
    assert len(ids) == 500
    for text in ids:
        assert not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16


def test_no_java_is_an_error_that_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NEARDUP_JAVA", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(services.ServiceError, match="no `java` on PATH"):
        services.start_kafka(tmp_path / "k")
    assert not (tmp_path / "k").exists()


def test_no_jars_is_an_error_that_names_the_make_target(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NEARDUP_KAFKA_LIBS", str(tmp_path))
    with pytest.raises(services.ServiceError, match="run `make kafka`"):
        services.find_kafka_libs()


@pytest.mark.kafka
def test_storage_is_formatted_once_so_a_restart_keeps_it(tmp_path: Path) -> None:
    """Runs the real StorageTool (needs Java and ``make kafka``; fails saying so otherwise)."""
    java, libs = services.find_java(), services.find_kafka_libs()
    argv = services.kafka_argv(java, libs, tmp_path, 19092, 19093)
    meta = tmp_path / "kafka-data" / "meta.properties"
    cluster = parse(meta.read_text())["cluster.id"]
    again = services.kafka_argv(java, libs, tmp_path, 19092, 19093)
    assert again == argv
    assert parse(meta.read_text())["cluster.id"] == cluster
    assert argv[1] == "-Xmx512m" and argv[-2:] == [
        "kafka.Kafka",
        str(tmp_path / "server.properties"),
    ]
