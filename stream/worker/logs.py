"""How a worker logs: one line per event, with its time (UTC, ISO 8601), level and logger, never
wrapped; as text, or as one JSON object per line (``NEARDUP_LOG_FORMAT=json``) for a log
pipeline. The same configuration is handed to faust, so its lines and ours look alike."""

from __future__ import annotations

import logging
import logging.config
import time
from typing import Any, Literal

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JSON_FIELDS = "%(levelname)s %(name)s %(process)d %(message)s"


class _UtcFormatter(logging.Formatter):
    """Times in UTC, ISO 8601 with milliseconds (``2026-12-05T07:40:01.123Z``)."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{stamp}.{int(record.msecs):03d}Z"


def config(level: str, fmt: Literal["text", "json"]) -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` for the worker (and faust's worker): one handler
    on stderr, the root at ``level``."""
    if fmt == "json":
        formatter: dict[str, Any] = {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": JSON_FIELDS,
            "rename_fields": {"levelname": "level", "name": "logger"},
            "timestamp": True,  # "timestamp": ISO 8601, UTC
        }
    else:
        formatter = {"()": _UtcFormatter, "fmt": TEXT_FORMAT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"neardup": formatter},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "neardup",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level.upper(), "handlers": ["stderr"]},
    }


def setup(level: str, fmt: Literal["text", "json"]) -> dict[str, Any]:
    """Configure logging now; returns the configuration (faust's worker is given it too)."""
    cfg = config(level, fmt)
    logging.config.dictConfig(cfg)
    return cfg


__all__ = ["JSON_FIELDS", "TEXT_FORMAT", "config", "setup"]
