"""How well a system's reported near-duplicate pairs match the brute-force truth: every pair
(document, earlier document) at or above a Jaccard threshold
(:func:`harness.corpus.exact_similarities`), scored for recall and precision by :func:`score`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Pairs", "Quality", "reported", "score", "truth_by_doc"]

Pairs = dict[int, set[int]]  # document index -> indices of the earlier documents reported


@dataclass
class Quality:
    truth_pairs: int
    truth_docs: int
    reported_pairs: int
    true_pairs: int
    flagged_docs: int
    pair_recall: float
    pair_recall_capped: float
    doc_recall: float
    pair_precision: float
    doc_precision: float


def truth_by_doc(sims: Mapping[tuple[int, int], float]) -> Pairs:
    """``{(i, j): J}`` with ``i < j`` -> for each later document ``j``, its earlier ``i``."""
    out: Pairs = {}
    for i, j in sims:
        out.setdefault(j, set()).add(i)
    return out


def reported(verdicts: Iterable[Mapping[str, Any]], index_of: Mapping[str, int]) -> Pairs:
    """What verdicts report (``Verdict.to_dict()``, as ``neardup dedup`` writes them, in stream
    order): per document, the earlier documents of its ``duplicate_of`` and ``matches``."""
    out: Pairs = {}
    for j, v in enumerate(verdicts):
        got = {index_of[m["id"]] for m in v["matches"]}
        if v["duplicate_of"] is not None:
            got.add(index_of[v["duplicate_of"]])
        if got:
            out[j] = got
    return out


def score(reported: Pairs, truth: Pairs, n_docs: int, cap: int) -> Quality:
    """Recall and precision of ``reported`` on the first ``n_docs`` documents: pair recall (capped:
    at most ``cap`` truth pairs a document, what a capped ``matches`` can show), the share of
    documents with an earlier near-copy flagged, and the share of reported pairs that are true."""
    truth = {j: s for j, s in truth.items() if j < n_docs}
    n_truth = sum(len(s) for s in truth.values())
    capped = sum(min(len(s), cap) for s in truth.values())
    n_rep = sum(len(s) for s in reported.values())
    hit = sum(len(s & truth.get(j, set())) for j, s in reported.items())
    flagged = {j for j, s in reported.items() if s}
    flagged_true = len(flagged & truth.keys())
    return Quality(
        truth_pairs=n_truth,
        truth_docs=len(truth),
        reported_pairs=n_rep,
        true_pairs=hit,
        flagged_docs=len(flagged),
        pair_recall=hit / n_truth if n_truth else 1.0,
        pair_recall_capped=min(1.0, hit / capped) if capped else 1.0,
        doc_recall=flagged_true / len(truth) if truth else 1.0,
        pair_precision=hit / n_rep if n_rep else 1.0,
        doc_precision=flagged_true / len(flagged) if flagged else 1.0,
    )
