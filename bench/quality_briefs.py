"""Section 1, short briefs: are surface-noise copies found, and are template siblings kept apart?

Seeded briefs in English and Chinese (:mod:`harness.briefs`), ``pairs`` per kind and language in
one stream: ``copy`` (should be linked), ``sibling`` (one fact changed) and ``unrelated`` (should
not). A pair is linked by neardup (defaults) through ``duplicate_of`` or a shared cluster, by
datasketch when the first is among the second's candidates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from bench.quality_systems import (
    datasketch_pairs,
    linked,
    neardup_verdicts,
    policy_changes,
    policy_settings,
    target,
)
from harness.briefs import KINDS, LANGS, Pair, generate
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy

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


def _tally(
    pairs: Sequence[Pair], langs: Mapping[str, str], got: Mapping[str, list[bool]]
) -> list[Cell]:
    cells: dict[tuple[str, str, str], Cell] = {}
    for i, p in enumerate(pairs):
        lang = langs[p.first]
        cell = cells.setdefault((lang, p.kind, p.detail), Cell(lang, p.kind, p.detail))
        cell.pairs += 1
        cell.neardup += got["neardup"][i]
        cell.datasketch += got["datasketch"][i]
    order: dict[str, int] = {k: i for i, k in enumerate(KINDS)}
    return sorted(cells.values(), key=lambda c: (c.lang, order[c.kind], c.detail))


def _by_kind(cells: Sequence[Cell]) -> list[dict[str, Any]]:
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


class _Pair(Protocol):
    first: str
    second: str


def linked_pairs(
    docs: Sequence[Mapping[str, Any]], pairs: Sequence[_Pair], policy: Policy
) -> tuple[dict[str, list[bool]], float, float]:
    """Per system, whether each pair's second document is linked to its first (neardup: one
    cluster or ``duplicate_of``; datasketch: the first among the second's candidates), from
    one stream of ``docs``; and each system's wall seconds."""
    arts = [Article(d["id"], d["text"], lang=d["lang"]) for d in docs]
    verdicts, nd_wall = neardup_verdicts(arts, policy)
    by_id = {v.id: v for v in verdicts}
    found, ds_wall = datasketch_pairs([(d["id"], d["text"]) for d in docs])
    pos = {d["id"]: j for j, d in enumerate(docs)}
    got = {
        "neardup": [linked(by_id[p.first], by_id[p.second]) for p in pairs],
        "datasketch": [pos[p.first] in found.get(pos[p.second], set()) for p in pairs],
    }
    return got, nd_wall, ds_wall


def goal(kind: str) -> tuple[str, float]:
    """A kind's target: copies found >= 99%, siblings linked <= 1%."""
    return (">=", TARGET_COPY_FOUND) if kind == "copy" else ("<=", TARGET_SIBLING_LINKED)


def short_target(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The short-text target of a ``copy`` or ``sibling`` row (:func:`goal`)."""
    op, bound = goal(row["kind"])
    name = "surface-noise copies found" if row["kind"] == "copy" else "template siblings linked"
    return target(
        f"short texts: {name}", where, row["neardup_linked"], row["datasketch_linked"], op, bound
    )


def run(pairs_per_kind: int, seed: int) -> dict[str, Any]:
    docs, pairs = generate(pairs_per_kind, seed=seed)
    policy = Policy()
    got, nd_wall, ds_wall = linked_pairs(docs, pairs, policy)
    cells = _tally(pairs, {d["id"]: d["lang"] for d in docs}, got)
    rows = _by_kind(cells)
    targets = [
        short_target(r, f"briefs {r['lang']}, defaults") for r in rows if r["kind"] != "unrelated"
    ]
    return {
        "settings": {
            "generator": f"harness.briefs.generate({pairs_per_kind}, seed={seed})",
            "pairs_per_kind": pairs_per_kind,
            "seed": seed,
            "docs": len(docs),
            "neardup": {"defaults": policy_settings(policy), "summary": policy_changes(policy)},
        },
        "wall_s": {"neardup": round(nd_wall, 3), "datasketch": round(ds_wall, 3)},
        "by_kind": rows,
        "by_detail": [asdict(c) for c in cells],
        "targets": targets,
    }
