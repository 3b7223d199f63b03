"""The ``kafka`` marker is given from what a test uses (tests/conftest.py): ``make unit`` and
``-m "not kafka"`` rely on it to leave out every test that starts Apache Kafka."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from tests.conftest import uses_apache_kafka


def _item(fixtures: tuple[str, ...] = (), **params: Any) -> Any:
    callspec = SimpleNamespace(params=params) if params else None
    return SimpleNamespace(fixturenames=fixtures, callspec=callspec)


def test_a_kafka_fixture_or_parameter_marks_a_test() -> None:
    assert uses_apache_kafka(_item(("redis_url", "kafka_broker")))
    assert uses_apache_kafka(_item(("make_kafka",)))
    assert uses_apache_kafka(_item(("broker_bootstrap",), broker="kafka"))
    assert uses_apache_kafka(_item(seed=2, broker="kafka"))


def test_tansu_and_other_parameters_do_not() -> None:
    assert not uses_apache_kafka(_item(("kafka_bootstrap", "redis_url")))  # Tansu
    assert not uses_apache_kafka(_item(("broker_bootstrap",), broker="tansu"))
    assert not uses_apache_kafka(_item(codec="kafka-ish", n=3))
    assert not uses_apache_kafka(_item(array=np.array(["kafka", "x"])))  # no elementwise truth
    assert not uses_apache_kafka(SimpleNamespace())  # an item that is not a function
