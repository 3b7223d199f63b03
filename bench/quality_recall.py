"""Section 4, long texts: is pair recall at the threshold unchanged by the verdict rules?

Generated long texts and their brute-force truth (every pair at word-3-shingle Jaccard >= 0.8),
scored by :func:`bench.pairs.score` at J >= 0.8 and 0.9: neardup's ``duplicate_of`` and
``matches`` (not its cluster, whose chains' ends need not be alike), datasketch's candidates. The
corpus's small sentence pool makes sentences recur, so a second run with boilerplate learning off
shows what that learning costs here; the targets are judged on the defaults only.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from bench.pairs import Pairs, score, truth_by_doc
from bench.pairs import reported as pairs_of
from bench.quality_systems import (
    datasketch_pairs,
    neardup_verdicts,
    policy_changes,
    policy_settings,
    target,
)
from harness.corpus import exact_similarities, generate
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import Policy

CONFIGS: dict[str, Policy] = {
    "neardup": Policy(),
    "neardup, boilerplate off": Policy(boilerplate_min_docs=0),
}
LEVELS = (0.8, 0.9)
TARGETS = {0.8: 0.99, 0.9: 0.999}


def run(n_docs: int, seed: int, words: int) -> dict[str, Any]:
    docs = generate(n_docs, seed=seed, words=words)
    started = time.perf_counter()
    sims = exact_similarities(docs, min(LEVELS))
    truth_s = time.perf_counter() - started
    articles = [Article(d["id"], d["text"]) for d in docs]
    index_of = {d["id"]: j for j, d in enumerate(docs)}
    reported: dict[str, Pairs] = {}
    wall: dict[str, float] = {}
    for name, policy in CONFIGS.items():
        verdicts, wall[name] = neardup_verdicts(articles, policy)
        reported[name] = pairs_of([v.to_dict() for v in verdicts], index_of)
    reported["datasketch"], wall["datasketch"] = datasketch_pairs(
        [(d["id"], d["text"]) for d in docs]
    )
    cap = Policy().max_matches
    levels: dict[str, Any] = {}
    for level in LEVELS:
        truth = truth_by_doc({k: s for k, s in sims.items() if s >= level})
        levels[f"{level:g}"] = {
            name: asdict(score(pairs, truth, len(docs), cap)) for name, pairs in reported.items()
        }
    targets = [
        target(
            f"long-text pair recall at J >= {level:g}",
            f"corpus en, {n_docs} docs, defaults",
            levels[f"{level:g}"]["neardup"]["pair_recall"],
            levels[f"{level:g}"]["datasketch"]["pair_recall"],
            ">=",
            TARGETS[level],
        )
        for level in LEVELS
    ]
    return {
        "settings": {
            "generator": f"harness.corpus.generate({n_docs}, seed={seed}, words={words})",
            "docs": n_docs,
            "seed": seed,
            "words": words,
            "truth": "harness.corpus.exact_similarities (word 3-shingles, brute force)",
            "truth_s": round(truth_s, 3),
            "neardup": {name: policy_changes(p) for name, p in CONFIGS.items()},
            "policies": {name: policy_settings(p) for name, p in CONFIGS.items()},
        },
        "wall_s": {name: round(w, 3) for name, w in wall.items()},
        "levels": levels,
        "targets": targets,
    }
