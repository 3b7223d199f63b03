"""Section 5, real short briefs: noisy copies of real wire briefs found, real siblings kept apart.

Reuters-21578 headlines and stories of fewer than 30 tokens (:func:`harness.noisy_briefs.generate`)
as ``copy`` pairs (one to three families of surface noise: should be linked) and ``sibling`` pairs
(real template pairs, or a number, date, name or word substituted: should not), linked as in
section 1 (:mod:`bench.quality_briefs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.quality_briefs import linked_pairs, short_target
from bench.quality_systems import (
    policy_changes,
    policy_settings,
)
from harness.noisy_briefs import NoisyPair, generate
from neardup.stream.namespaces.policy import Policy

COPIES_PER_FAMILY = 150
SIBLINGS_PER_FAMILY = 150
SEED = 21


def _groups(pairs: Sequence[NoisyPair], got: Mapping[str, list[bool]]) -> list[dict[str, Any]]:
    """Per kind and family (a copy with two families counts under each), pairs and links."""
    acc: dict[tuple[str, str], list[int]] = {}
    for i, p in enumerate(pairs):
        parts = p.detail.split("+") if p.kind == "copy" else [p.detail]
        if p.detail == "rebreak+tag end":
            parts = [p.detail]  # the case, on its own row
        for part in parts:
            row = acc.setdefault((p.kind, part), [0, 0, 0])
            row[0] += 1
            row[1] += got["neardup"][i]
            row[2] += got["datasketch"][i]
    return [
        {"kind": k, "family": f, "pairs": n, "neardup_linked": nd / n, "datasketch_linked": ds / n}
        for (k, f), (n, nd, ds) in sorted(acc.items())
    ]


def _by_kind(pairs: Sequence[NoisyPair], got: Mapping[str, list[bool]]) -> list[dict[str, Any]]:
    rows = []
    for kind in ("copy", "sibling"):
        idx = [i for i, p in enumerate(pairs) if p.kind == kind]
        n = len(idx)
        row: dict[str, Any] = {"kind": kind, "pairs": n}
        for s in ("neardup", "datasketch"):
            row[f"{s}_linked"] = sum(got[s][i] for i in idx) / n if n else 0.0
        rows.append(row)
    return rows


def run(seed: int = SEED) -> dict[str, Any]:
    docs, pairs = generate(COPIES_PER_FAMILY, SIBLINGS_PER_FAMILY, seed=seed)
    policy = Policy()
    got, nd_wall, ds_wall = linked_pairs(docs, pairs, policy)
    rows = _by_kind(pairs, got)
    targets = [short_target(r, "real briefs (Reuters), defaults") for r in rows]
    missed = [
        {"first": p.first, "second": p.second, "detail": p.detail}
        for i, p in enumerate(pairs)
        if got["neardup"][i] != (p.kind == "copy")
    ]
    texts = {d["id"]: d["text"] for d in docs}
    return {
        "settings": {
            "generator": f"harness.noisy_briefs.generate({COPIES_PER_FAMILY}, "
            f"{SIBLINGS_PER_FAMILY}, seed={seed})",
            "seed": seed,
            "docs": len(docs),
            "neardup": {"defaults": policy_settings(policy), "summary": policy_changes(policy)},
        },
        "wall_s": {"neardup": round(nd_wall, 3), "datasketch": round(ds_wall, 3)},
        "by_kind": rows,
        "by_family": _groups(pairs, got),
        "wrong": [
            {**m, "first_text": texts[m["first"]], "second_text": texts[m["second"]]}
            for m in missed[:40]
        ],
        "wrong_count": len(missed),
        "targets": targets,
    }
