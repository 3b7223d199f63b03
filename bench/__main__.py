"""``python -m bench [NAME [ARGS ...]]``: run one benchmark, or every registered one without NAME.

Benchmark NAME is ``bench/NAME_bench.py``'s ``main(argv) -> exit status``, imported only when it
runs, so one benchmark's heavy or unfinished imports never break another.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

NAMES = [
    "sketch",
    "engine",
    "stream",
    "soak",
    "guarantee",
    "cluster",
    "quality",
    "cost",
    "check",
    "command",
    "hostile",
    "scale",
    "core",
]


def _lazy(name: str) -> Callable[[list[str]], int]:
    def run(argv: list[str]) -> int:
        return int(importlib.import_module(f"bench.{name}_bench").main(argv))

    return run


BENCHMARKS: dict[str, Callable[[list[str]], int]] = {name: _lazy(name) for name in NAMES}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        return max(fn([]) for fn in BENCHMARKS.values())
    name, rest = args[0], args[1:]
    if name in ("-h", "--help"):
        print(f"usage: python -m bench [{'|'.join(BENCHMARKS)}] [ARGS ...]  (no NAME: run all)")
        return 0
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    return BENCHMARKS[name](rest)


if __name__ == "__main__":
    raise SystemExit(main())
