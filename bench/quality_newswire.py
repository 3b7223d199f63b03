"""Section 3, a real news stream: is every pair neardup puts in one cluster the same news item?

Reuters-21578 in the wire's order (:func:`harness.newswire.stream`), no url or source, neardup at
its defaults, once. Every pair of one cluster is judged (:func:`harness.newswire.judge`): the
same normalised text, or what people who read both said (``same`` / ``different``); a pair
nobody judged is counted as unjudged and listed, never guessed. datasketch's candidate pairs
(each document with its candidates) are judged the same way. The recall proxy: how many of the
pairs judged ``same`` (found by an older version, then read) a system still links.

Pair recall against brute force (:func:`harness.corpus.exact_similarities`, word 3-shingles of
the text as :func:`neardup.sketch.features.normalize` gives it): every pair of stories at Jaccard >=
0.8 is *linked* (one cluster, or the later's ``duplicate_of`` or ``matches`` name the earlier),
*related* (the later names the earlier among ``related``, with what changed) or *missed* (silently:
neither). datasketch: the earlier among the later's candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench.quality_systems import (
    datasketch_pairs,
    neardup_verdicts,
    pct,
    policy_changes,
    policy_settings,
    share,
    target,
)
from harness import data
from harness.corpus import Doc, exact_similarities
from harness.newswire import Judged, cluster_pairs, judge, stream
from harness.report import md_table
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
            "stream": "harness.newswire.stream()" if limit is None else f"stream({limit})",
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
            "clusters_with_pairs": _multi(clusters.values()),
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


def _multi(clusters: Iterable[str]) -> int:
    """How many clusters have two members or more."""
    seen: dict[str, int] = {}
    for c in clusters:
        seen[c] = seen.get(c, 0) + 1
    return sum(n > 1 for n in seen.values())


def headline(section: Mapping[str, Any]) -> list[str]:
    nd, ds = section["neardup"], section["datasketch"]
    return [
        f"newswire, neardup: {nd['pairs']} cluster pairs ({nd['identical']} identical, "
        f"{nd['same']} judged same, {nd['different']} judged different, {nd['unjudged']} "
        f"unjudged), precision {pct(nd['precision'])} over judged; keeps "
        f"{nd['judged_same_kept']} of {nd['judged_same_pairs']} judged-same pairs in one cluster",
        f"newswire, datasketch: {ds['pairs']} candidate pairs ({ds['identical']} identical, "
        f"{ds['same']} same, {ds['different']} different, {ds['unjudged']} unjudged), precision "
        f"{pct(ds['precision'])} over judged; {ds['judged_same_kept']} of "
        f"{ds['judged_same_pairs']} judged-same pairs among its candidates",
    ]


def _wrong_rows(wrong: Sequence[Mapping[str, str]], texts: Mapping[str, str]) -> list[list[str]]:
    def title(doc_id: str) -> str:
        head = texts[doc_id].split("\n", 1)[0].strip()
        return (head[:60] + "...") if len(head) > 60 else head

    return [
        [
            f"{w['first']} / {w['second']}",
            f"{title(w['first'])} / {title(w['second'])}".replace("|", "/"),
            w["note"].replace("|", "/"),
        ]
        for w in wrong[:SHOWN_WRONG]
    ]


def markdown(section: Mapping[str, Any]) -> list[str]:
    cfg, nd, ds = section["settings"], section["neardup"], section["datasketch"]
    texts = {d["id"]: d["text"] for d in stream()}
    head = [
        "system",
        "pairs",
        "identical",
        "judged same",
        "judged different",
        "unjudged",
        "precision (judged)",
        "judged-same pairs kept",
    ]
    rows = [
        [
            label,
            str(r["pairs"]),
            str(r["identical"]),
            str(r["same"]),
            str(r["different"]),
            str(r["unjudged"]),
            pct(r["precision"]),
            f"{r['judged_same_kept']} / {r['judged_same_pairs']}",
        ]
        for label, r in (("neardup (cluster pairs)", nd), ("datasketch (candidate pairs)", ds))
    ]
    parts = [
        "## 3. Real newswire",
        "",
        f"`{cfg['stream']}`: {cfg['docs']} Reuters-21578 stories in the wire's order, run once "
        "per system. neardup at its defaults: every pair of one cluster; datasketch: every "
        "document with each of its candidates. Judged by `harness.newswire.judge` against "
        f"{cfg['judged_pairs']} pairs people read; unjudged pairs are counted, never guessed "
        "(their ids are in the json). Judged-same pairs kept: of the pairs people judged the "
        "same item, how many the system puts in one cluster (datasketch: among its candidates).",
        "",
        md_table(head, rows),
        "",
        *(f"- {h}" for h in headline(section)),
        "",
    ]
    if nd["wrong"]:
        n = len(nd["wrong"])
        which = f"The first {SHOWN_WRONG} of the {n}" if n > SHOWN_WRONG else f"The {n}"
        parts += [
            f"{which} neardup cluster pairs judged different (earlier first):",
            "",
            md_table(["pair", "titles", "judges' note"], _wrong_rows(nd["wrong"], texts)),
            "",
        ]
    else:
        parts += ["No neardup cluster pair is judged different.", ""]
    return parts + _recall_markdown(section["pair_recall"], texts)


def _recall_markdown(recall: Mapping[str, Any], texts: Mapping[str, str]) -> list[str]:
    rows = [
        [
            f"J >= {r['at']}",
            str(r["pairs"]),
            pct(r["linked"]),
            pct(r["related"]),
            str(r["missed"]),
            pct(r["datasketch"]),
            f">= {pct(TARGET_LINKED[r['at']], 1)}",
        ]
        for r in recall["rows"]
    ]
    head = ["pairs", "n", "neardup linked", "related", "silently missed", "datasketch", "target"]
    parts = [
        "### Pair recall against brute force",
        "",
        "Every pair of stories whose normalised word 3-shingle sets have Jaccard at or above the "
        "bound (`harness.corpus.exact_similarities`): linked (one cluster, or named in "
        "`duplicate_of`/`matches`), related (named in `related` with what changed), or silently "
        "missed. datasketch: the earlier story among the later's candidates.",
        "",
        md_table(head, rows),
        "",
    ]
    missed = recall["missed"]
    if missed:
        shown = [
            [f"{m['first']} / {m['second']}", f"{m['jaccard']:.3f}",
             _title(texts, m["first"]), _title(texts, m["second"])]
            for m in missed[:SHOWN_MISSED]
        ]  # fmt: skip
        parts += [
            f"Silently missed at J >= 0.8 ({len(missed)}, highest Jaccard first):",
            "",
            md_table(["pair", "J", "earlier", "later"], shown),
            "",
        ]
    return parts


def _title(texts: Mapping[str, str], doc_id: str) -> str:
    head = texts[doc_id].split("\n", 1)[0].strip().replace("|", "/")
    return (head[:60] + "...") if len(head) > 60 else head
