"""Verdict quality beside datasketch: short briefs, web pages, a real news stream, long texts.

``python -m bench quality [--pairs 300] [--seed 13] [--out bench/results]
[--sections briefs,pages,newswire,recall,realbriefs,disguise]``.

Every section feeds neardup (through its engine, ``Engine(MemoryIndex(), Policy(...)).process``
in batches of 512) and datasketch ``MinHashLSH(threshold=0.8, num_perm=128)`` (its candidates,
:func:`harness.peers.run_memory` without verification) the same documents in the same order:

1. ``briefs`` (:mod:`bench.quality_briefs`): surface-noise copies found, template siblings linked.
2. ``pages`` (:mod:`bench.quality_pages`): syndicated copies through site boilerplate, link
   precision over every cluster pair, containment's direction, boilerplate learning ablated.
3. ``newswire`` (:mod:`bench.quality_newswire`): every cluster pair on Reuters-21578 judged.
4. ``recall`` (:mod:`bench.quality_recall`): long-text pair recall against brute force.
5. ``realbriefs`` (:mod:`bench.quality_real_briefs`): noisy copies of real wire briefs found per
   noise family, real and synthetic template siblings linked.
6. ``disguise`` (:mod:`bench.quality_disguise`): copies of real English and Chinese texts under
   every disguise of :mod:`harness.disguises` (invisible characters, look-alike letters, marks,
   HTML, widths, spaces, digits, Chinese scripts, combinations) found, per disguise.

Then the issue's targets, each met or missed, and the wall time of every run. What the engine
says is what the report says: no figure is written that a run did not measure. Results:
``quality.json`` and ``quality.md`` in ``--out``; a run of some ``--sections`` writes only those.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    quality_briefs,
    quality_disguise,
    quality_newswire,
    quality_pages,
    quality_poison,
    quality_real_briefs,
    quality_recall,
)
from bench.quality_systems import datasketch_settings, pct
from harness.report import code_line, git_state, machine_info, md_table, write_atomic

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SECTIONS = ("briefs", "pages", "newswire", "recall", "realbriefs", "disguise", "poison")
RECALL_DOCS = 3000
RECALL_WORDS = 300
TITLES = {
    "briefs": "1. Short briefs",
    "pages": "2. Web pages",
    "newswire": "3. Real newswire",
    "recall": "4. Long-text recall",
    "realbriefs": "5. Real short briefs",
    "disguise": "6. Disguised copies",
    "poison": "7. Boilerplate poisoning",
}
_MARKDOWN: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "briefs": quality_briefs.markdown,
    "pages": quality_pages.markdown,
    "newswire": quality_newswire.markdown,
    "recall": quality_recall.markdown,
    "realbriefs": quality_real_briefs.markdown,
    "disguise": quality_disguise.markdown,
    "poison": quality_poison.markdown,
}
_HEADLINE: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "briefs": quality_briefs.headline,
    "pages": quality_pages.headline,
    "newswire": quality_newswire.headline,
    "recall": quality_recall.headline,
    "realbriefs": quality_real_briefs.headline,
    "disguise": quality_disguise.headline,
    "poison": quality_poison.headline,
}


def run_section(name: str, args: argparse.Namespace) -> dict[str, Any]:
    if name == "briefs":
        return quality_briefs.run(args.pairs, args.seed)
    if name == "pages":
        return quality_pages.run(args.seed)
    if name == "newswire":
        return quality_newswire.run()
    if name == "realbriefs":
        return quality_real_briefs.run()
    if name == "disguise":
        return quality_disguise.run(args.seed)
    if name == "poison":
        return quality_poison.run()
    return quality_recall.run(RECALL_DOCS, args.seed, RECALL_WORDS)


# --------------------------------------------------------------------------- report


def _settings_rows(sections: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, sec in sections.items():
        cfg = sec["settings"]
        data = cfg.get("generator") or cfg.get("stream", "")
        nd = cfg["neardup"]
        runs = nd.items() if "summary" not in nd else [("defaults", nd["summary"])]
        for label, summary in runs:
            run = label if label.startswith("neardup") else f"neardup {label}"
            rows.append([TITLES[name], f"`{data}`", run, f"`{summary}`"])
    return rows


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else pct(x, 2)


def _targets_rows(targets: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [
            t["target"],
            t["where"],
            t["goal"],
            _fmt(t["neardup"]),
            "met" if t["met"] else "**missed**",
            _fmt(t["datasketch"]),
        ]
        for t in targets
    ]


def _wall_rows(sections: Mapping[str, Any]) -> list[list[str]]:
    return [
        [TITLES[name], system, f"{seconds:.2f}"]
        for name, sec in sections.items()
        for system, seconds in sec["wall_s"].items()
    ]


def markdown(result: Mapping[str, Any]) -> str:
    sections, m, ds = result["sections"], result["machine"], result["datasketch"]
    parts = [
        "# Verdict quality: neardup beside datasketch",
        "",
        f"Run {result['when']}, {result['total_s']:.1f} s in all; sections: "
        f"{', '.join(sections)}. {code_line(result['code'])}.",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gb']} GB, load {m['load_average_1m_at_start']:.2f} at start; Python "
        f"{m['python']}, neardup {m['neardup']}, datasketch {m['datasketch']}.",
        "",
        "neardup: `Engine(MemoryIndex(), policy).process` in batches of "
        f"{ds['batch']}, a fresh index per run. datasketch: `{ds['class']}(threshold="
        f"{ds['threshold']}, num_perm={ds['num_perm']})` ({ds['bands']} bands of {ds['rows']} "
        f"rows) on {ds['shingles']}, query then insert per document, its candidates (no "
        "verification: it keeps no sets to verify against).",
        "",
        "## Settings",
        "",
        md_table(["section", "data", "run", "policy"], _settings_rows(sections)),
        "",
        "## Targets",
        "",
        "Met or missed is neardup's; datasketch's figure on the same measure is beside it.",
        "",
        md_table(
            ["target", "where", "goal", "neardup", "met?", "datasketch"],
            _targets_rows(result["targets"]),
        ),
        "",
        "## Headlines",
        "",
        *(f"- {h}" for name, sec in sections.items() for h in _HEADLINE[name](sec)),
        "",
        "## Wall time",
        "",
        md_table(["section", "run", "seconds"], _wall_rows(sections)),
        "",
    ]
    for name, sec in sections.items():
        parts += _MARKDOWN[name](sec)
    return "\n".join(parts)


def _sections(value: str) -> list[str]:
    names = [s.strip() for s in value.split(",") if s.strip()]
    bad = [s for s in names if s not in SECTIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"choose from {','.join(SECTIONS)}; got {value!r}")
    return [s for s in SECTIONS if s in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench quality", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--pairs", type=int, default=300, help="briefs: pairs per language, kind")
    parser.add_argument("--seed", type=int, default=13, help="seed of the briefs, pages, texts")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
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
        sections[name] = run_section(name, args)
        print(f"{TITLES[name]}: {time.perf_counter() - t0:.1f} s")
        for line in _HEADLINE[name](sections[name]):
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
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "quality.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    write_atomic(args.out / "quality.md", markdown(result))
    for t in targets:
        status = "met" if t["met"] else "MISSED"
        print(f"{status:<6} {t['target']} [{t['where']}] {t['goal']}: {_fmt(t['neardup'])}")
    print(f"wrote {args.out / 'quality.json'} and quality.md in {result['total_s']:.1f} s")
    return 0
