"""The data model: an article in, a verdict out, and the verdict's JSON (the published contract).

Verdict JSON: ``id``, ``namespace``, ``verdict``, ``duplicate_of`` (or null), ``cluster``,
``similarity`` (with ``duplicate_of``, or null), ``matches`` (``[{"id", "similarity"}]``, best
first), ``method``, ``seq``. Fields may be added; none is removed or changes meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

VerdictKind = Literal["original", "near_duplicate", "duplicate"]
Method = Literal["new", "exact", "jaccard", "containment", "edit"]


@dataclass(frozen=True, slots=True)
class Article:
    id: str
    text: str
    namespace: str = "default"
    title: str | None = None
    url: str | None = None
    lang: str | None = None
    published_at: str | None = None


@dataclass(frozen=True, slots=True)
class Match:
    id: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Verdict:
    id: str
    namespace: str
    verdict: VerdictKind
    duplicate_of: str | None
    cluster: str
    similarity: float | None
    matches: tuple[Match, ...]
    method: Method
    seq: int | None
    candidates: int = field(default=0, compare=False)  # buckets' candidates (metrics only)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "namespace": self.namespace,
            "verdict": self.verdict,
            "duplicate_of": self.duplicate_of,
            "cluster": self.cluster,
            "similarity": self.similarity,
            "matches": [{"id": m.id, "similarity": m.similarity} for m in self.matches],
            "method": self.method,
            "seq": self.seq,
        }

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_json(cls, blob: bytes) -> Verdict:
        d = orjson.loads(blob)
        return cls(
            d["id"],
            d["namespace"],
            d["verdict"],
            d["duplicate_of"],
            d["cluster"],
            d["similarity"],
            tuple(Match(m["id"], m["similarity"]) for m in d["matches"]),
            d["method"],
            d["seq"],
        )


__all__ = ["Article", "Match", "Method", "Verdict", "VerdictKind"]
