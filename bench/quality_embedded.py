"""Section 8, embedded copies: is an earlier article found inside a longer new text?

:mod:`harness.embedded`: 40 Reuters stories registered; then each quoted whole after 300 words
of a new text's own (other stories' words, a different run each time), checked as ``/check``
does (``register=False``). Found: the verdict names the story, as ``duplicate_of`` or among its
``related``, with the direction ``embeds``. At the defaults (Jaccard) the copy is related
(its Jaccard similarity is about a third), under containment it is a copy; each run is judged
by the same rule. Precision: one set of 300 words prefixed to every story, each such text
registered in turn (a stream): none may be linked to another (``duplicate_of``, one cluster,
or related) however much of the prefix they share; and the copies checked stay unlinked to
the other stories. The reverse, a new text that is the middle third of an earlier longer
story (``excerpt``), is reported beside: it is found when one of the few passages the earlier
story registered falls inside the part.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from bench.quality_systems import policy_changes, process_all, share, target
from harness.embedded import OWN_WORDS, embedded, own_words, stories
from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

__all__ = ["CONFIGS", "STORIES", "TARGET_FOUND", "run"]

STORIES = 40
TARGET_FOUND = 0.975  # 39 of 40
CONFIGS: dict[str, Policy] = {
    "jaccard": Policy(),
    "containment": Policy(measure="containment", threshold=0.8),
}


def _names(v: Verdict, doc_id: str, direction: str) -> bool:
    """Whether ``v`` names ``doc_id``: as ``duplicate_of``, or related, in ``direction``."""
    if v.duplicate_of == doc_id:
        return v.direction == direction
    return any(r.id == doc_id and r.direction == direction for r in v.related)


def _links(v: Verdict) -> set[str]:
    """Every earlier text ``v`` links to: its match, its cluster and its related texts."""
    out = {r.id for r in v.related} | ({v.duplicate_of} if v.duplicate_of else set())
    return out | ({v.cluster} if v.cluster != v.id else set())


async def _checked(engine: Engine, texts: Sequence[Article]) -> list[Verdict]:
    out = []
    for a in texts:  # one at a time, as /check is called
        (v,) = await engine.process([a], register=False)
        assert isinstance(v, Verdict), v
        out.append(v)
    return out


def _third(text: str) -> str:
    words = text.split()
    return " ".join(words[len(words) // 3 : 2 * len(words) // 3])


async def _run(policy: Policy, originals: Sequence[Article]) -> dict[str, Any]:
    ids = [a.id for a in originals]
    engine = Engine(MemoryIndex(), policy)
    registered = await process_all(engine, originals)
    copies = [
        Article(f"embeds-{k}", embedded(own_words(k, avoid=ids), a.text))
        for k, a in enumerate(originals)
    ]
    found = await _checked(engine, copies)
    hits = [_names(v, a.id, "embeds") for v, a in zip(found, originals, strict=True)]
    wrong = [bool(_links(v) - {a.id}) for v, a in zip(found, originals, strict=True)]
    parts = await _checked(
        engine,
        [Article(f"excerpt-{k}", _third(a.text)) for k, a in enumerate(originals)],
    )
    part_hits = [_names(v, a.id, "excerpt") for v, a in zip(parts, originals, strict=True)]
    # one prefix before every story, each registered in turn: never linked to each other
    shared = own_words(STORIES, avoid=ids)
    stream = await process_all(
        Engine(MemoryIndex(), policy),
        [Article(f"prefixed-{a.id}", embedded(shared, a.text)) for a in originals],
        batch=1,
    )
    return {
        "policy": policy_changes(policy),
        "originals_not_original": sum(v.verdict != "original" for v in registered),
        "embedded": {
            "copies": len(copies),
            "found": sum(hits),
            "share": share(sum(hits), len(copies)),
            "as_duplicate_of": sum(v.duplicate_of is not None for v in found),
            "linked_elsewhere": sum(wrong),
            "missed": [a.id for a, h in zip(originals, hits, strict=True) if not h],
        },
        "excerpt": {
            "parts": len(parts),
            "found": sum(part_hits),
            "share": share(sum(part_hits), len(parts)),
        },
        "shared_prefix": {
            "texts": len(stream),
            "linked": sum(bool(_links(v)) for v in stream),
        },
    }


def run() -> dict[str, Any]:
    originals = stories(STORIES)
    runs: dict[str, Any] = {}
    walls: dict[str, float] = {}
    for name, policy in CONFIGS.items():
        started = time.perf_counter()
        runs[name] = asyncio.run(_run(policy, originals))
        walls[f"neardup {name}"] = round(time.perf_counter() - started, 3)
    targets = []
    for name, r in runs.items():
        where = f"embedded copies, measure={CONFIGS[name].measure}"
        targets += [
            target("embedded copies found", where, r["embedded"]["share"], None, ">=",
                   TARGET_FOUND),
            target("embedded copies linked to another text", where,
                   share(r["embedded"]["linked_elsewhere"], STORIES), None, "<=", 0.0),
            target("texts sharing only a prefix linked to each other", where,
                   share(r["shared_prefix"]["linked"], STORIES), None, "<=", 0.0),
        ]  # fmt: skip
    return {
        "settings": {
            "generator": f"harness.embedded: {STORIES} Reuters stories, each after "
            f"{OWN_WORDS} words of a new text's own",
            "stories": STORIES,
            "own_words": OWN_WORDS,
            "neardup": {name: policy_changes(p) for name, p in CONFIGS.items()},
        },
        "wall_s": walls,
        "runs": runs,
        "targets": targets,
    }
