"""Section 2, web pages: copies found through the sites' boilerplate, a site's stories kept apart?

Real Reuters stories in the templates of 8 synthetic sites (:func:`harness.pages.generate`); a
story has at most two pages, so every cluster pair is judged. neardup at its defaults, under
containment and with boilerplate learning off, on each layout text extraction delivers; datasketch
beside. Under containment the ``direction`` of excerpts and embeds is checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from bench.quality_systems import (
    BATCH,
    datasketch_pairs,
    linked,
    neardup_verdicts,
    policy_changes,
    policy_settings,
    share,
    target,
)
from harness.pages import KINDS, Layout, PageDoc, PagePair, generate
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

CONFIGS: dict[str, Policy] = {
    "jaccard": Policy(),
    "containment": Policy(measure="containment", threshold=0.8),
    "containment, boilerplate off": Policy(
        measure="containment", threshold=0.8, boilerplate_min_docs=0
    ),
    # the loose setting a user reaches for when templates hide copies: what learning buys there
    "containment 0.5": Policy(measure="containment", threshold=0.5),
    "containment 0.5, boilerplate off": Policy(
        measure="containment", threshold=0.5, boilerplate_min_docs=0
    ),
}
DIRECTION = {"excerpt": "excerpt", "embeds": "embeds"}  # pair kind -> the right direction
TARGET_FOUND = 0.95
TARGET_PRECISION = 0.99
SHOWN_WRONG = 20


def _precision(pairs: Sequence[tuple[str, str]], story: Mapping[str, str]) -> dict[str, Any]:
    wrong = [(a, b) for a, b in pairs if story[a] != story[b]]
    return {
        "pairs": len(pairs),
        "true": len(pairs) - len(wrong),
        "false": len(wrong),
        "precision": share(len(pairs) - len(wrong), len(pairs)),
        "false_examples": [list(p) for p in wrong[:SHOWN_WRONG]],
    }


def _cluster_pairs(verdicts: Sequence[Verdict]) -> list[tuple[str, str]]:
    members: dict[str, list[str]] = {}
    for v in verdicts:  # stream order, so each pair is (earlier, later)
        members.setdefault(v.cluster, []).append(v.id)
    return [p for group in members.values() for p in combinations(group, 2)]


def _per_kind(pairs: Sequence[PagePair], hit: Sequence[bool]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        got = [h for p, h in zip(pairs, hit, strict=True) if p.kind == kind]
        out[kind] = {"pairs": len(got), "linked": sum(got), "share": share(sum(got), len(got))}
    return out


def _directions(pairs: Sequence[PagePair], by_id: Mapping[str, Verdict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, want in DIRECTION.items():
        group = [p for p in pairs if p.kind == kind]
        ok = [p for p in group if by_id[p.second].direction == want]
        seen: dict[str, int] = {}
        for p in group:
            d = by_id[p.second].direction or "none"
            seen[d] = seen.get(d, 0) + 1
        out[kind] = {
            "pairs": len(group),
            "right": len(ok),
            "share": share(len(ok), len(group)),
            "seen": dict(sorted(seen.items())),
        }
    return out


def _neardup(
    docs: Sequence[PageDoc], pairs: Sequence[PagePair], policy: Policy, batch: int = BATCH
) -> dict[str, Any]:
    arts = [Article(d["id"], d["text"], url=d["url"], source=d["source"]) for d in docs]
    verdicts, wall = neardup_verdicts(arts, policy, batch)
    by_id = {v.id: v for v in verdicts}
    story = {d["id"]: d["story"] for d in docs}
    hit = [linked(by_id[p.first], by_id[p.second]) for p in pairs]
    out = {
        "policy": policy_settings(policy),
        "summary": policy_changes(policy),
        "wall_s": round(wall, 3),
        "verdicts": {
            k: sum(v.verdict == k for v in verdicts)
            for k in ("original", "near_duplicate", "duplicate")
        },
        "linked": _per_kind(pairs, hit),
        "links": _precision(_cluster_pairs(verdicts), story),
    }
    if policy.measure == "containment":
        out["direction"] = _directions(pairs, by_id)
    return out


def _datasketch(docs: Sequence[PageDoc], pairs: Sequence[PagePair]) -> dict[str, Any]:
    found, wall = datasketch_pairs([(d["id"], d["text"]) for d in docs])
    pos = {d["id"]: j for j, d in enumerate(docs)}
    story = {d["id"]: d["story"] for d in docs}
    hit = [pos[p.first] in found.get(pos[p.second], set()) for p in pairs]
    cands = [(docs[i]["id"], docs[j]["id"]) for j in sorted(found) for i in sorted(found[j])]
    return {
        "wall_s": round(wall, 3),
        "linked": _per_kind(pairs, hit),
        "links": _precision(cands, story),
    }


# the other layouts text extraction delivers (harness.pages.styles): each run at the defaults
# and under containment 0.8; and every layout at the defaults one page a call, as a worker fed
# one message at a time decides them (the batch's own pages count for each other)
OTHER_LAYOUTS: tuple[Layout, ...] = ("paragraph", "mixed", "latest")
LAYOUT_RUNS: dict[str, tuple[str, int]] = {  # run -> (CONFIGS entry, articles a call)
    "jaccard": ("jaccard", BATCH),
    "containment": ("containment", BATCH),
    "jaccard, one at a time": ("jaccard", 1),
}


# sites with few pages: every site's template is learned from 20 pages of its own, and more
# of the copies come while a site (the copy's, or the story's first) is still new
FEW_PAGES = {"stories_per_site": 20, "syndicated": 80, "excerpts": 20, "embeds": 20,
             "same_site": 100, "unrelated": 100}  # fmt: skip


def _layouts(seed: int) -> dict[str, dict[str, Any]]:
    docs, pairs = generate(seed=seed, layout="mixed", **FEW_PAGES)
    out: dict[str, dict[str, Any]] = {
        "mixed, 20 pages a site": {
            n: {**_neardup(docs, pairs, CONFIGS["jaccard"], batch), "batch": batch}
            for n, batch in (("jaccard", BATCH), ("jaccard, one at a time", 1))
        }
    }
    every: tuple[Layout, ...] = ("lines", *OTHER_LAYOUTS)
    for layout in every:
        docs, pairs = generate(seed=seed, layout=layout)
        runs = (
            LAYOUT_RUNS if layout in OTHER_LAYOUTS else {"jaccard, one at a time": ("jaccard", 1)}
        )
        out[layout] = {
            n: {**_neardup(docs, pairs, CONFIGS[c], batch), "batch": batch}
            for n, (c, batch) in runs.items()
        }
    return out


def _targets(where: str, r: Mapping[str, Any], ds: Mapping[str, Any] | None) -> list[Any]:
    """The found and precision targets of one run, beside datasketch's figures if given."""
    return [
        target(
            "syndicated pages found",
            where,
            r["linked"]["syndicated"]["share"],
            ds["linked"]["syndicated"]["share"] if ds else None,
            ">=",
            TARGET_FOUND,
        ),
        target(
            "page link precision (every cluster pair)",
            where,
            r["links"]["precision"],
            ds["links"]["precision"] if ds else None,
            ">=",
            TARGET_PRECISION,
        ),
    ]


def run(seed: int) -> dict[str, Any]:
    docs, pairs = generate(seed=seed)
    runs = {name: _neardup(docs, pairs, policy) for name, policy in CONFIGS.items()}
    ds = _datasketch(docs, pairs)
    layouts = _layouts(seed)
    targets = [
        t
        for layout, by in layouts.items()
        if layout in ("lines", *OTHER_LAYOUTS)
        for name, r in by.items()
        for t in _targets(f"pages ({layout} layout), {name}", r, None)
    ]
    for name in ("jaccard", "containment"):
        targets += _targets(f"pages, measure={CONFIGS[name].measure}", runs[name], ds)
    return {
        "settings": {
            "generator": f"harness.pages.generate(seed={seed})",
            "seed": seed,
            "docs": len(docs),
            "pairs": {k: sum(p.kind == k for p in pairs) for k in KINDS},
            "sites": len({d["source"] for d in docs}),
            "neardup": {name: policy_changes(p) for name, p in CONFIGS.items()},
        },
        "wall_s": {
            **{f"neardup {name}": r["wall_s"] for name, r in runs.items()},
            "datasketch": ds["wall_s"],
        },
        "neardup": runs,
        "datasketch": ds,
        "layouts": layouts,
        "targets": targets,
    }
