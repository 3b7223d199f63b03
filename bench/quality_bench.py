"""Short texts: are surface-noise copies found, and are template siblings kept apart?

``python -m bench quality [--pairs 300] [--seed 13] [--out bench/results]``.

The data are seeded newswire briefs in English and Chinese (:mod:`harness.briefs`): per language,
``--pairs`` labelled pairs of each kind, every pair with its own two documents, interleaved in one
stream with each pair's first document before its second:

* ``copy``: the brief with surface noise (case, punctuation, whitespace, a typo, an emoji, a
  tracking suffix, a dropped stop word). Should be linked.
* ``sibling``: the same template with one fact changed (number, amount, date, entity). Should not.
* ``unrelated``: two briefs of different templates. Should not.

Systems, on the same stream in the same order:

* neardup: ``Engine(MemoryIndex(), Policy()).process`` at its defaults, in batches of 512 (as
  ``neardup dedup`` does). A pair is *linked* when the second's ``duplicate_of`` is the first, or
  the two verdicts share a cluster.
* datasketch ``MinHashLSH`` at threshold 0.8, 128 permutations, on the peers' word 3-shingles
  (:func:`harness.peers.run_memory`, no verification): a pair is linked when the first is among
  the second's candidates.

Reported per language and kind: the share of pairs linked (for ``copy`` that is recall; for the
others, false links) and the issue's targets (copies found >= 99%, siblings linked <= 1%).
Results: ``bench/results/quality.json`` and ``quality.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.briefs import KINDS, LANGS, BriefDoc, Pair, generate
from harness.corpus import Doc
from harness.peers import run_memory
from harness.report import machine_info, md_table, write_atomic
from stream.engine import Engine
from stream.errors import NeardupError
from stream.index.memory import MemoryIndex
from stream.model import Article, Verdict
from stream.policy import Policy

RESULTS_DIR = Path(__file__).resolve().parent / "results"
BATCH = 512  # stream.cli.BATCH: the `neardup dedup` batch
DS_THRESHOLD = 0.8
DS_NUM_PERM = 128
TARGET_COPY_FOUND = 0.99
TARGET_SIBLING_LINKED = 0.01
SYSTEMS = ("neardup", "datasketch")


@dataclass
class Cell:
    """One (language, kind, detail) group: how many pairs, and how many each system linked."""

    lang: str
    kind: str
    detail: str
    pairs: int = 0
    neardup: int = 0
    datasketch: int = 0


# --------------------------------------------------------------------------- systems


async def _engine_verdicts(docs: Sequence[BriefDoc]) -> tuple[dict[str, Verdict], float]:
    """Every document's verdict from the engine at its defaults; and the wall seconds."""
    engine = Engine(MemoryIndex(), Policy())
    out: dict[str, Verdict] = {}
    started = time.perf_counter()
    for lo in range(0, len(docs), BATCH):
        arts = [Article(d["id"], d["text"], lang=d["lang"]) for d in docs[lo : lo + BATCH]]
        for res in await engine.process(arts):
            if isinstance(res, NeardupError):
                raise RuntimeError(f"neardup rejected a brief: {res}")
            out[res.id] = res
    return out, time.perf_counter() - started


def neardup_linked(docs: Sequence[BriefDoc], pairs: Sequence[Pair]) -> tuple[list[bool], float]:
    verdicts, wall_s = asyncio.run(_engine_verdicts(docs))
    linked = []
    for p in pairs:
        a, b = verdicts[p.first], verdicts[p.second]
        linked.append(b.duplicate_of == p.first or a.cluster == b.cluster)
    return linked, wall_s


def datasketch_linked(docs: Sequence[BriefDoc], pairs: Sequence[Pair]) -> tuple[list[bool], float]:
    """The peers' in-memory datasketch run on the same stream; its raw candidates."""
    as_docs = [Doc(id=d["id"], text=d["text"], source=None, mutation="brief") for d in docs]
    timing, found = run_memory(
        as_docs, verify=False, threshold=DS_THRESHOLD, num_perm=DS_NUM_PERM, batch=BATCH
    )
    index_of = {d["id"]: j for j, d in enumerate(docs)}
    linked = [index_of[p.first] in found.get(index_of[p.second], set()) for p in pairs]
    return linked, timing.wall_s


# --------------------------------------------------------------------------- tallies


def tally(
    pairs: Sequence[Pair], langs: Mapping[str, str], linked: Mapping[str, list[bool]]
) -> list[Cell]:
    """Group the pairs by (language, kind, detail) and count the links of each system."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for i, p in enumerate(pairs):
        lang = langs[p.first]
        cell = cells.setdefault((lang, p.kind, p.detail), Cell(lang, p.kind, p.detail))
        cell.pairs += 1
        cell.neardup += linked["neardup"][i]
        cell.datasketch += linked["datasketch"][i]
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(cells.values(), key=lambda c: (c.lang, order[c.kind], c.detail))


def by_kind(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    """Per language and kind: pairs, and the share each system linked."""
    rows = []
    for lang in LANGS:
        for kind in KINDS:
            group = [c for c in cells if c.lang == lang and c.kind == kind]
            n = sum(c.pairs for c in group)
            row: dict[str, Any] = {"lang": lang, "kind": kind, "pairs": n}
            for s in SYSTEMS:
                row[f"{s}_linked"] = sum(getattr(c, s) for c in group) / n if n else 0.0
            rows.append(row)
    return rows


def target_of(kind: str) -> str:
    return (
        f"found >= {TARGET_COPY_FOUND:.0%}"
        if kind == "copy"
        else f"linked <= {TARGET_SIBLING_LINKED:.0%}"
    )


def meets(kind: str, share: float) -> bool:
    return share >= TARGET_COPY_FOUND if kind == "copy" else share <= TARGET_SIBLING_LINKED


# --------------------------------------------------------------------------- report


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _prose(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Sentences that read the figures; nothing here is written that the rows do not say."""
    out = []
    for lang in LANGS:
        got = {r["kind"]: r for r in rows if r["lang"] == lang}
        copy, sib = got["copy"]["neardup_linked"], got["sibling"]["neardup_linked"]
        verdict = [
            f"copies {'meet' if meets('copy', copy) else 'miss'} the target",
            f"siblings {'meet' if meets('sibling', sib) else 'miss'} it",
        ]
        out.append(
            f"- **{lang}**: neardup finds {_pct(copy)} of surface-noise copies and links "
            f"{_pct(sib)} of template siblings ({' and '.join(verdict)}); datasketch's "
            f"candidates include {_pct(got['copy']['datasketch_linked'])} of copies and "
            f"{_pct(got['sibling']['datasketch_linked'])} of siblings."
        )
    return out


def markdown(result: Mapping[str, Any]) -> str:
    rows, cells = result["by_kind"], [Cell(**c) for c in result["by_detail"]]
    cfg = result["config"]
    parts = [
        "# Quality on short templated briefs",
        "",
        f"{cfg['pairs_per_kind']} pairs per language and kind, seed {cfg['seed']}, "
        f"{result['docs']} documents in one stream. neardup: `Engine(MemoryIndex(), Policy())` "
        "at its defaults; linked = `duplicate_of` the earlier brief or the same cluster. "
        f"datasketch: `MinHashLSH(threshold={DS_THRESHOLD}, num_perm={DS_NUM_PERM})` on word "
        "3-shingles, its candidates (it does not verify).",
        "",
    ]
    for lang in LANGS:
        parts += [f"## {lang}", ""]
        table = [
            [
                r["kind"],
                str(r["pairs"]),
                _pct(r["neardup_linked"]),
                _pct(r["datasketch_linked"]),
                target_of(r["kind"]),
            ]
            for r in rows
            if r["lang"] == lang
        ]
        head = ["kind", "pairs", "neardup linked", "datasketch linked", "target"]
        parts += [md_table(head, table), ""]
    parts += ["## Reading", "", *_prose(rows), "", "## By noise kind or changed fact", ""]
    parts += [
        "A copy with two kinds of noise counts under each.",
        "",
        md_table(["group", "pairs", "neardup linked", "datasketch linked"], _by_part(cells)),
        "",
    ]
    return "\n".join(parts)


def _by_part(cells: Sequence[Cell]) -> list[list[str]]:
    """Copies per noise kind (each of a pair's kinds) and siblings per changed fact."""
    parts: dict[tuple[str, str, str], list[int]] = {}
    for c in cells:
        if c.kind == "unrelated":
            continue
        for part in c.detail.split("+"):
            acc = parts.setdefault((c.lang, c.kind, part), [0, 0, 0])
            acc[0] += c.pairs
            acc[1] += c.neardup
            acc[2] += c.datasketch
    return [
        [f"{lang} {kind}: {part}", str(n), _pct(nd / n), _pct(ds / n)]
        for (lang, kind, part), (n, nd, ds) in sorted(parts.items())
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench quality", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--pairs", type=int, default=300, help="pairs per language and kind")
    parser.add_argument("--seed", type=int, default=13, help="brief generator seed")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs: 1 or more")
    started = time.perf_counter()
    docs, pairs = generate(args.pairs, seed=args.seed)
    langs = {d["id"]: d["lang"] for d in docs}
    linked, wall = {}, {}
    linked["neardup"], wall["neardup"] = neardup_linked(docs, pairs)
    linked["datasketch"], wall["datasketch"] = datasketch_linked(docs, pairs)
    cells = tally(pairs, langs, linked)
    rows = by_kind(cells)
    result = {
        "benchmark": "quality",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": {
            "pairs_per_kind": args.pairs,
            "seed": args.seed,
            "batch": BATCH,
            "datasketch": {"threshold": DS_THRESHOLD, "num_perm": DS_NUM_PERM},
            "targets": {"copy_found": TARGET_COPY_FOUND, "sibling_linked": TARGET_SIBLING_LINKED},
        },
        "machine": machine_info(("neardup", "datasketch")),
        "docs": len(docs),
        "wall_s": {k: round(v, 3) for k, v in wall.items()},
        "by_kind": rows,
        "by_detail": [asdict(c) for c in cells],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "quality.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    write_atomic(args.out / "quality.md", markdown(result))
    for r in rows:
        print(
            f"{r['lang']} {r['kind']:<9} pairs {r['pairs']:>5}"
            f"  neardup {_pct(r['neardup_linked']):>6}"
            f"  datasketch {_pct(r['datasketch_linked']):>6}  target {target_of(r['kind'])}"
        )
    print(
        f"wrote {args.out / 'quality.json'} and quality.md in {time.perf_counter() - started:.1f} s"
    )
    return 0
