"""Section 3, a real news stream: is every pair neardup puts in one cluster the same news item?

Reuters-21578 in the wire's order, neardup at its defaults; every cluster pair and every
datasketch candidate pair is judged (:func:`bench.newswire.judge`). Against brute force (Jaccard
>= 0.8 of normalised word 3-shingles) a pair is *linked* (cluster, ``duplicate_of``, ``matches``),
*related* (``related``) or *missed* silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bench.newswire import Judged, cluster_pairs, judge, stream
from bench.quality_systems import (
    datasketch_pairs,
    neardup_verdicts,
    policy_changes,
    policy_settings,
    share,
    target,
)
from harness import data
from harness.corpus import Doc, exact_similarities
from neardup.sketch.features import normalize
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

TARGET_PRECISION = 0.99
TARGET_LINKED = {0.8: 0.95, 0.9: 0.999}  # pairs at J >= key linked
SHOWN_MISSED = 20
SHOWN_WRONG = 10


def _summary(j: Judged, kept: int, same_pairs: int) -> dict[str, Any]:
    return {
        "pairs": j.pairs,
        "identical": j.identical,
        "same": j.same,
        "different": j.different,
        "unjudged": j.unjudged,
        "precision": j.precision if j.identical + j.same + j.different else None,
        "judged_same_kept": kept,
        "judged_same_pairs": same_pairs,
        "judged_same_share": share(kept, same_pairs),
        "wrong": [{"first": a, "second": b, "note": n} for a, b, n in j.wrong],
        "unjudged_pairs": [list(p) for p in j.missing],
    }


def run(limit: int | None = None) -> dict[str, Any]:
    docs = stream(limit)
    texts = {d["id"]: d["text"] for d in docs}
    order = [d["id"] for d in docs]
    same = [p for p, r in data.reuters_judged().items() if r["label"] == "same"]
    same = [p for p in same if p[0] in texts and p[1] in texts]

    policy = Policy()
    verdicts, nd_wall = neardup_verdicts([Article(d["id"], d["text"]) for d in docs], policy)
    clusters = {v.id: v.cluster for v in verdicts}
    nd = judge(cluster_pairs(clusters, order), texts)
    nd_kept = sum(clusters[a] == clusters[b] for a, b in same)

    found, ds_wall = datasketch_pairs([(d["id"], d["text"]) for d in docs])
    cands = [(order[i], order[j]) for j in sorted(found) for i in sorted(found[j])]
    ds = judge(cands, texts)
    cand_set = set(cands)
    ds_kept = sum(p in cand_set for p in same)

    nd_sum, ds_sum = _summary(nd, nd_kept, len(same)), _summary(ds, ds_kept, len(same))
    recall = _pair_recall(docs, verdicts, found)
    return {
        "settings": {
            "stream": "bench.newswire.stream()" if limit is None else f"stream({limit})",
            "docs": len(docs),
            "judged_pairs": len(data.reuters_judged()),
            "neardup": {"defaults": policy_settings(policy), "summary": policy_changes(policy)},
        },
        "wall_s": {"neardup": round(nd_wall, 3), "datasketch": round(ds_wall, 3)},
        "neardup": {
            **nd_sum,
            "verdicts": {
                k: sum(v.verdict == k for v in verdicts)
                for k in ("original", "near_duplicate", "duplicate")
            },
            "clusters_with_pairs": sum(n > 1 for n in Counter(clusters.values()).values()),
        },
        "datasketch": ds_sum,
        "pair_recall": recall,
        "targets": [
            target(
                "cluster precision on a real news stream",
                "Reuters-21578, defaults",
                nd_sum["precision"],
                ds_sum["precision"],
                ">=",
                TARGET_PRECISION,
            ),
            *(
                target(
                    f"pairs at J >= {t} linked",
                    "Reuters-21578, defaults",
                    row["linked"],
                    row["datasketch"],
                    ">=",
                    TARGET_LINKED[t],
                )
                for t, row in ((r["at"], r) for r in recall["rows"])
            ),
            target(
                "pairs at J >= 0.8 silently missed (neither linked nor related)",
                "Reuters-21578, defaults",
                share(recall["rows"][0]["missed"], recall["rows"][0]["pairs"]),
                None,
                "<=",
                0,
            ),
        ],
    }


def _pair_recall(
    docs: Sequence[Mapping[str, str]], verdicts: Sequence[Verdict], found: Mapping[int, set[int]]
) -> dict[str, Any]:
    """Each brute-force pair at J >= 0.8 linked, related or missed (see the module doc)."""
    as_docs = [Doc(id=d["id"], text=normalize(d["text"]), source=None, mutation="") for d in docs]
    truth = exact_similarities(as_docs, min(TARGET_LINKED))
    order = [d["id"] for d in docs]
    by_id = {v.id: v for v in verdicts}
    rows, missed = [], []
    for at in sorted(TARGET_LINKED):
        pairs = [(i, j, sim) for (i, j), sim in truth.items() if sim >= at]
        n_linked = n_related = ds = 0
        for i, j, sim in pairs:
            first, second = by_id[order[i]], by_id[order[j]]
            ds += i in found.get(j, set())
            if first.cluster == second.cluster or first.id in _named(second):
                n_linked += 1
            elif any(r.id == first.id for r in second.related):
                n_related += 1
            elif at == min(TARGET_LINKED):
                missed.append({"first": first.id, "second": second.id, "jaccard": round(sim, 4)})
        n = len(pairs)
        rows.append(
            {
                "at": at,
                "pairs": n,
                "linked": share(n_linked, n),
                "related": share(n_related, n),
                "missed": n - n_linked - n_related,
                "datasketch": share(ds, n),
            }
        )
    missed.sort(key=lambda m: -m["jaccard"])
    return {"rows": rows, "missed": missed}


def _named(v: Verdict) -> set[str]:
    return {m.id for m in v.matches} | ({v.duplicate_of} if v.duplicate_of else set())
