"""The worker's log lines (stream/worker/logs.py): one line per event with time, level and logger,
as text or as one JSON object per line."""

from __future__ import annotations

import json
import logging
import re

import pytest

from neardup.stream.worker import logs


@pytest.fixture(autouse=True)
def _restore_logging() -> object:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield None
    root.handlers[:] = handlers
    root.setLevel(level)


def test_text_lines_carry_time_level_and_logger_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logs.setup("info", "text")
    logging.getLogger("neardup.worker").warning("waiting for Kafka at %s: %s", "k:9092", "x" * 200)
    logging.getLogger("neardup.worker").debug("not shown at info")
    (line,) = capsys.readouterr().err.splitlines()  # one line, however long: never wrapped
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING neardup\.worker: waiting for Kafka at "
        r"k:9092: x{200}",
        line,
    ), line


def test_json_lines_are_one_object_each(capsys: pytest.CaptureFixture[str]) -> None:
    logs.setup("info", "json")
    log = logging.getLogger("neardup.engine")
    log.info("namespace %r keeps its banding", "news")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("check failed")
    first, second = (json.loads(x) for x in capsys.readouterr().err.splitlines())
    assert first["level"] == "INFO" and first["logger"] == "neardup.engine"
    assert first["message"] == "namespace 'news' keeps its banding" and "timestamp" in first
    assert second["level"] == "ERROR" and "ValueError: boom" in second["exc_info"]
