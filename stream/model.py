"""The data model: an article in, a verdict out, and the verdict's JSON (the published contract).

Verdict JSON: ``id``, ``namespace``, ``verdict``, ``duplicate_of`` (or null), ``cluster``,
``similarity`` (with ``duplicate_of``, or null), ``matches`` (``[{"id", "similarity"}]``, best
first), ``method``, ``seq``; then ``changes`` (the facts that differ from ``duplicate_of``:
``[{"kind": "number"|"word", "earlier", "now"}]``), ``related`` (texts that read alike but
state other facts, never in the cluster: ``[{"id", "similarity", "changes"}]``; and, under
Jaccard, a long text that lies inside this one or holds it, with ``"direction"`` as below: its
``similarity`` is then the share of the smaller text's shingles found in the larger) and
``direction`` (containment: ``"excerpt"``, the new text lies inside ``duplicate_of``, or
``"embeds"``, it contains it; else null), ``evidence`` (when asked for: the passages shared with
``duplicate_of``, ``[{"start", "end", "earlier_start", "earlier_end", "share"}]``, character
offsets into this text and into the earlier one as sent; null when not asked). Fields may be
added; none is removed or changes meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

import orjson

from neardup.sketch import canonical
from neardup.sketch.evidence import Span
from neardup.sketch.facts import Difference
from neardup.stream import extract

VerdictKind = Literal["original", "near_duplicate", "duplicate"]
Method = Literal["new", "exact", "jaccard", "containment", "edit"]
Direction = Literal["excerpt", "embeds"]
Change = Difference  # a fact that differs: kind, what the earlier text says, what this one says

# An id's bound, in the index's keys too (neardup.stream.index.redis.keys): every key stays
# short. What a namespace may be called: neardup.stream.names.
ID_MAX_BYTES = 512


@dataclass(frozen=True, slots=True)
class Article:
    id: str
    text: str
    namespace: str = "default"
    title: str | None = None
    url: str | None = None
    lang: str | None = None
    published_at: str | None = None
    source: str | None = None  # who printed it (a site, a feed): boilerplate is learned per source
    # "html": its visible text; "page": a whole web page, its main content; "text": never read
    # as markup; None: markup read where the text carries evidence of it
    format: str | None = None

    def as_read(self) -> Article:
        """The article as the engine reads it: its declared format applied to its text
        (:func:`neardup.sketch.canonical.reading`, :func:`neardup.stream.extract.main_content`);
        offsets in its verdict are into that text."""
        if self.format is None:
            return self
        if self.format == "page":
            return replace(self, text=extract.main_content(self.text), format=None)
        return replace(self, text=canonical.reading(self.text, self.format), format=None)

    def source_name(self) -> str:
        """The source boilerplate is counted under: ``source``, else the ``url``'s host, else
        ``""`` (the namespace as one source)."""
        if self.source:
            return self.source
        if self.url:
            try:
                return urlsplit(self.url).hostname or ""
            except ValueError:
                return ""
        return ""


@dataclass(frozen=True, slots=True)
class Match:
    id: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Related:
    """An earlier text that reads like this one but states other facts (a template sibling:
    another fund's dividend, another day's repurchase), or, with a ``direction``, one that
    lies inside this one (``embeds``: an earlier article quoted whole) or holds it
    (``excerpt``) although the two are unlike as wholes."""

    id: str
    similarity: float
    changes: tuple[Change, ...]
    direction: Direction | None = None

    def to_dict(self) -> dict[str, Any]:
        """Its JSON object: ``direction`` only when it has one (the entries of earlier
        verdicts keep their bytes)."""
        out = {"id": self.id, "similarity": self.similarity, "changes": _changes(self.changes)}
        return out if self.direction is None else out | {"direction": self.direction}


def _changes(changes: tuple[Change, ...]) -> list[dict[str, Any]]:
    return [{"kind": c.kind, "earlier": c.earlier, "now": c.now} for c in changes]


def _changes_from(raw: list[dict[str, Any]]) -> tuple[Change, ...]:
    return tuple(Change(c["kind"], c["earlier"], c["now"]) for c in raw)


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
    changes: tuple[Change, ...] = ()
    related: tuple[Related, ...] = ()
    direction: Direction | None = None
    evidence: tuple[Span, ...] | None = None  # passages shared with duplicate_of, when asked
    # its JSON once made: the index stores it and the worker publishes it (not a field of
    # __init__, so dataclasses.replace makes a verdict without it)
    _json: bytes | None = field(default=None, init=False, repr=False, compare=False)

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
            "changes": _changes(self.changes),
            "related": [r.to_dict() for r in self.related],
            "direction": self.direction,
            "evidence": None
            if self.evidence is None
            else [
                {
                    "start": e.start,
                    "end": e.end,
                    "earlier_start": e.earlier_start,
                    "earlier_end": e.earlier_end,
                    "share": e.share,
                }
                for e in self.evidence
            ],
        }

    def to_json(self) -> bytes:
        """The published contract's bytes, made once per verdict. Copied to their own size:
        orjson's result keeps the whole buffer it wrote into (4 KB or more), and the
        in-memory index keeps a verdict for every document it holds."""
        if self._json is None:
            object.__setattr__(self, "_json", bytes(memoryview(orjson.dumps(self.to_dict()))))
        assert self._json is not None
        return self._json

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
            changes=_changes_from(d.get("changes", [])),
            related=tuple(
                Related(r["id"], r["similarity"], _changes_from(r["changes"]), r.get("direction"))
                for r in d.get("related", [])
            ),
            direction=d.get("direction"),
            evidence=None
            if d.get("evidence") is None
            else tuple(
                Span(e["start"], e["end"], e["earlier_start"], e["earlier_end"], e["share"])
                for e in d["evidence"]
            ),
        )


__all__ = [
    "Article",
    "Change",
    "Direction",
    "Match",
    "Method",
    "Related",
    "Verdict",
    "VerdictKind",
]
