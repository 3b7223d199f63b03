"""``python -m bench [NAME [ARGS ...]]``: run one benchmark, or every registered one without NAME.

A benchmark is a function ``(argv) -> exit status``. Register it in :data:`BENCHMARKS` through a
small wrapper that imports its module only when it runs, so one benchmark's heavy or unfinished
imports never break another.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def _sketch(argv: list[str]) -> int:
    from bench.sketch_bench import main

    return main(argv)


BENCHMARKS: dict[str, Callable[[list[str]], int]] = {
    "sketch": _sketch,
    "engine": lambda argv: __import__("bench.engine_bench", fromlist=["main"]).main(argv),
    "stream": lambda argv: __import__("bench.stream_bench", fromlist=["main"]).main(argv),
    "soak": lambda argv: __import__("bench.soak_bench", fromlist=["main"]).main(argv),
    "guarantee": lambda argv: __import__("bench.guarantee_bench", fromlist=["main"]).main(argv),
    "cluster": lambda argv: __import__("bench.cluster_bench", fromlist=["main"]).main(argv),
    "quality": lambda argv: __import__("bench.quality_bench", fromlist=["main"]).main(argv),
    "cost": lambda argv: __import__("bench.cost_bench", fromlist=["main"]).main(argv),
    "check": lambda argv: __import__("bench.check_bench", fromlist=["main"]).main(argv),
    "command": lambda argv: __import__("bench.command_bench", fromlist=["main"]).main(argv),
    "hostile": lambda argv: __import__("bench.hostile_bench", fromlist=["main"]).main(argv),
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        status = 0
        for fn in BENCHMARKS.values():
            status = max(status, fn([]))
        return status
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
