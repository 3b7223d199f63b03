"""``python -m bench.render [--check] [NAME ...]``: each benchmark's Markdown again, from its JSON.

A benchmark measures once and writes ``NAME.json`` and the Markdown its ``NAME_tables.markdown``
makes of it. Rendering again from the committed JSON lets the tables change (wording, layout,
shared helpers) without measuring again, and ``--check`` (run by ``make lint``) names every
committed ``NAME.md`` that is not what its renderer makes of ``NAME.json`` now, so the results
and their renderers never drift apart.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.__main__ import BENCHMARKS
from bench.cli import RESULTS_DIR
from harness.report import write_atomic

__all__ = ["main", "rendered"]


def rendered(name: str, results: Path = RESULTS_DIR) -> str:
    """What ``bench/NAME_tables.py`` makes of ``results/NAME.json``."""
    tables = importlib.import_module(f"bench.{name}_tables")
    return str(tables.markdown(json.loads((results / f"{name}.json").read_text(encoding="utf-8"))))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.render", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help="default: every benchmark")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    stale = []
    for name in args.names or list(BENCHMARKS):
        path = args.results / f"{name}.md"
        text = rendered(name, args.results)
        committed = path.read_text(encoding="utf-8") if path.exists() else ""
        if committed == text:
            continue
        if not args.check:
            write_atomic(path, text)
            print(f"rendered {path}")
            continue
        stale.append(name)
        diff = difflib.unified_diff(
            committed.splitlines(),
            text.splitlines(),
            f"{path} (committed)",
            f"{path} (rendered from {name}.json)",
            n=0,
            lineterm="",
        )
        print("\n".join(line[:200] for line in list(diff)[:12]), file=sys.stderr)
    if stale:
        print(
            f"stale: {', '.join(stale)}; `python -m bench.render {' '.join(stale)}` renders them",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
