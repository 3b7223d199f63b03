"""Shared test configuration. No servers here: unit tests stay service-free.

Hypothesis profiles: ``ci`` (the default; ``make test``) has no deadline, because shared CI
machines make per-example timings meaningless; ``dev`` (``make check``) also has no deadline and
runs at most 25 examples where a test does not set its own count. Pick one with
``HYPOTHESIS_PROFILE``. Tests that set a large count of their own are marked ``slow``.

Markers given here, from what a test uses rather than by hand:

- ``kafka``: the test runs Apache Kafka (the ``kafka_broker`` or ``make_kafka`` fixture, or a
  parameter naming the ``kafka`` broker); ``-m "not kafka"`` runs without Java.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_KAFKA_FIXTURES = frozenset({"kafka_broker", "make_kafka"})


def uses_apache_kafka(item: pytest.Item) -> bool:
    """Whether a test runs Apache Kafka: by its fixtures or a ``kafka`` parameter."""
    if _KAFKA_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return any(isinstance(value, str) and value == "kafka" for value in params)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if uses_apache_kafka(item):
            item.add_marker(pytest.mark.kafka)
