"""Verdict quality beside datasketch: short briefs, web pages, a real news stream, long texts.

Every section (:data:`SECTIONS`, each ``bench/quality_*.py``; ``--sections`` runs some, and only
those are written) feeds neardup's engine and datasketch ``MinHashLSH(0.8, 128)``'s candidates
(:mod:`bench.quality_systems`) the same documents in the same order and judges its targets met or
missed. What the engine says is what the report says: no figure a run did not measure.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench import (
    cli,
    quality_briefs,
    quality_disguise,
    quality_embedded,
    quality_newswire,
    quality_pages,
    quality_poison,
    quality_real_briefs,
    quality_recall,
    quality_tables,
)
from bench.markdown import pct
from bench.quality_systems import datasketch_settings
from bench.quality_tables import HEADLINE, TITLES
from bench.readings import git_state, machine_info

SECTIONS = (
    "briefs",
    "pages",
    "newswire",
    "recall",
    "realbriefs",
    "disguise",
    "poison",
    "embedded",
)
RECALL_DOCS = 3000
RECALL_WORDS = 300


RUNS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "briefs": lambda args: quality_briefs.run(args.pairs, args.seed),
    "pages": lambda args: quality_pages.run(args.seed),
    "newswire": lambda args: quality_newswire.run(),
    "recall": lambda args: quality_recall.run(RECALL_DOCS, args.seed, RECALL_WORDS),
    "realbriefs": lambda args: quality_real_briefs.run(),
    "disguise": lambda args: quality_disguise.run(args.seed),
    "poison": lambda args: quality_poison.run(),
    "embedded": lambda args: quality_embedded.run(),
}


def _sections(value: str) -> list[str]:
    names = [s.strip() for s in value.split(",") if s.strip()]
    bad = [s for s in names if s not in SECTIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"choose from {','.join(SECTIONS)}; got {value!r}")
    return [s for s in SECTIONS if s in names]


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser("quality", __doc__, seed=13)
    parser.add_argument("--pairs", type=int, default=300, help="briefs: pairs per language, kind")
    parser.add_argument(
        "--sections",
        type=_sections,
        default=list(SECTIONS),
        help=f"comma list of {','.join(SECTIONS)} (default all)",
    )
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs: 1 or more")
    started = time.perf_counter()
    when = datetime.now(UTC).isoformat(timespec="seconds")
    machine = machine_info(("neardup", "datasketch"))
    sections: dict[str, Any] = {}
    for name in args.sections:
        t0 = time.perf_counter()
        sections[name] = RUNS[name](args)
        print(f"{TITLES[name]}: {time.perf_counter() - t0:.1f} s")
        for line in HEADLINE[name](sections[name]):
            print(f"  {line}")
    targets = [t for sec in sections.values() for t in sec["targets"]]
    result: dict[str, Any] = {
        "benchmark": "quality",
        "when": when,
        "config": {
            "sections": args.sections,
            "pairs_per_kind": args.pairs,
            "seed": args.seed,
            "recall_docs": RECALL_DOCS,
            "recall_words": RECALL_WORDS,
        },
        "machine": machine,
        "code": git_state(),
        "datasketch": datasketch_settings(),
        "targets": targets,
        "sections": sections,
        "total_s": round(time.perf_counter() - started, 1),
    }
    cli.write(args.out, "quality", result, quality_tables.markdown(result), ensure_ascii=False)
    for t in targets:
        status = "met" if t["met"] else "MISSED"
        print(f"{status:<6} {t['target']} [{t['where']}] {t['goal']}: {pct(t['neardup'], 2)}")
    print(f"wrote {args.out / 'quality.json'} and quality.md in {result['total_s']:.1f} s")
    return 0
