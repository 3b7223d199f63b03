"""Cluster precision on a real newswire stream: every pair in a cluster, judged.

Each cluster pair of Reuters-21578 (:func:`harness.data.reuters`) is judged by what its readers
said (:func:`harness.data.reuters_judged`), or needs no judge when the normalised texts are equal.
Unjudged pairs are listed, never guessed: precision is over the judged pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from harness import data
from neardup.sketch.features import normalize

__all__ = ["Judged", "cluster_pairs", "judge", "stream"]


@dataclass
class Judged:
    """A system's cluster pairs by verdict of the judges."""

    pairs: int = 0
    identical: int = 0  # normalised texts equal: the same item, no judge needed
    same: int = 0
    different: int = 0
    unjudged: int = 0
    wrong: list[tuple[str, str, str]] = field(default_factory=list)  # (first, second, note)
    missing: list[tuple[str, str]] = field(default_factory=list)  # unjudged pairs

    @property
    def precision(self) -> float:
        """Share of judged pairs (identical ones included) that are the same news item."""
        right = self.identical + self.same
        judged = right + self.different
        return right / judged if judged else 1.0


def stream(limit: int | None = None) -> list[dict[str, str]]:
    """``{"id", "text"}`` of the stories in the wire's order (the first ``limit``)."""
    docs = data.reuters()[:limit]
    return [{"id": d["id"], "text": d["text"]} for d in docs]


def cluster_pairs(clusters: Mapping[str, str], order: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair of ids that share a cluster (``clusters``: id -> cluster), earlier first by
    ``order``; sorted, so the list is the same for the same clusters."""
    pos = {doc_id: i for i, doc_id in enumerate(order)}
    members: dict[str, list[str]] = {}
    for doc_id, cluster in clusters.items():
        members.setdefault(cluster, []).append(doc_id)
    out: list[tuple[str, str]] = []
    for group in members.values():
        group.sort(key=pos.__getitem__)
        out += combinations(group, 2)
    return sorted(out, key=lambda p: (pos[p[0]], pos[p[1]]))


def judge(
    pairs: Iterable[tuple[str, str]],
    texts: Mapping[str, str],
    judged: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> Judged:
    """Count the pairs by judgement (the shipped judgements unless ``judged`` is given)."""
    labels = data.reuters_judged() if judged is None else judged
    out = Judged()
    for first, second in pairs:
        out.pairs += 1
        if normalize(texts[first]) == normalize(texts[second]):
            out.identical += 1
            continue
        label = labels.get((first, second))
        if label is None:
            out.unjudged += 1
            out.missing.append((first, second))
        elif label["label"] == "same":
            out.same += 1
        else:
            out.different += 1
            out.wrong.append((first, second, label.get("note", "")))
    return out
