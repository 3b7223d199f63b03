"""What every benchmark's command line does the same way: its parser, its progress lines, SIGTERM
taken as Ctrl-C, and its result written as JSON beside its Markdown."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from harness.report import write_atomic

__all__ = ["RESULTS_DIR", "command", "exits", "now", "parser", "say", "sigterm_unwinds", "write"]

T = TypeVar("T")

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def parser(
    name: str,
    doc: str | None,
    *,
    seed: int | None = None,
    partitions: int | None = None,
    **options: tuple[Any, ...],
) -> argparse.ArgumentParser:
    """``python -m bench NAME``'s parser: described by the first line of ``doc``, with ``--out``,
    ``--seed`` and ``--partitions`` where their defaults are given, and ``--OPTION`` for each of
    ``options``: ``(default, help[, type])``, a flag where the default is False."""
    out = argparse.ArgumentParser(
        prog=f"python -m bench {name}", description=(doc or "").split("\n")[0]
    )
    out.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    if seed is not None:
        out.add_argument("--seed", type=int, default=seed, help=f"corpus seed (default {seed})")
    if partitions is not None:
        out.add_argument("--partitions", type=int, default=partitions, help="per topic")
    for key, (default, text, *kind) in options.items():
        flag = "--" + key.replace("_", "-")
        if default is False:
            out.add_argument(flag, action="store_true", help=text)
        else:
            out.add_argument(
                flag, type=kind[0] if kind else type(default), default=default, help=text
            )
    return out


def command(name: str, argv: Sequence[str] | None) -> str:
    """The command line a result says it came from."""
    args = sys.argv[2:] if argv is None else argv
    return " ".join(["python -m bench", name, *args])


def now() -> str:
    """The time a result was generated, in UTC to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def say(msg: str) -> None:
    """A progress line on stderr, so stdout stays free and a long step shows it is alive."""
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def sigterm_unwinds() -> None:
    """From now on SIGTERM unwinds like Ctrl-C, so whatever a run started is stopped too."""
    signal.signal(signal.SIGTERM, _interrupt)


def write(out: Path, stem: str, result: Mapping[str, Any], markdown: str, **dumps: Any) -> None:
    """``STEM.json`` (``json.dumps`` with ``dumps``) and ``STEM.md`` in ``out``, each written
    whole or not at all."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / f"{stem}.json", json.dumps(result, indent=2, **dumps) + "\n")
    write_atomic(out / f"{stem}.md", markdown)


def exits(what: str, fn: Callable[[], T], *errors: type[Exception]) -> T | int:
    """``fn()``, or the exit status: 2 after one of ``errors`` (said on stderr after ``what``),
    130 after Ctrl-C (or SIGTERM, see :func:`sigterm_unwinds`)."""
    try:
        return fn()
    except errors as exc:
        print(f"{what}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
