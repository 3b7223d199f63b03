"""The two systems every quality section runs, fed the same documents in the same order.

neardup runs through its engine as ``neardup dedup`` does (in batches of 512, one fresh
:class:`~neardup.stream.index.memory.MemoryIndex` per run); datasketch ``MinHashLSH`` runs through
:func:`bench.peers.datasketch_runs.run_memory` without verification: its candidates are what it
reports.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

from bench.pairs import Pairs
from bench.peers.datasketch_runs import lsh_bands_rows, run_memory
from harness.corpus import Doc
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

__all__ = [
    "BATCH",
    "DS_NUM_PERM",
    "DS_THRESHOLD",
    "datasketch_pairs",
    "datasketch_settings",
    "linked",
    "neardup_verdicts",
    "policy_changes",
    "policy_settings",
    "process_all",
    "share",
    "target",
]

BATCH = 512  # neardup.stream.cli.dedup.BATCH: the `neardup dedup` batch
DS_THRESHOLD = 0.8
DS_NUM_PERM = 128
_SHOWN = ("measure", "threshold", "short_threshold", "facts", "boilerplate_min_docs")


async def process_all(
    engine: Engine, articles: Sequence[Article], batch: int = BATCH, register: bool = True
) -> list[Verdict]:
    """Every article's verdict in input order, ``batch`` a call; a rejected article is an error."""
    out: list[Verdict] = []
    for lo in range(0, len(articles), batch):
        for res in await engine.process(list(articles[lo : lo + batch]), register=register):
            if isinstance(res, NeardupError):
                raise RuntimeError(f"neardup rejected an article: {res}")
            out.append(res)
    return out


def neardup_verdicts(
    articles: Sequence[Article], policy: Policy, batch: int = BATCH
) -> tuple[list[Verdict], float]:
    """Every article's verdict in input order, and the wall seconds the engine took
    (``batch`` articles a call: a stream worker's batches are often far smaller)."""
    started = time.perf_counter()
    verdicts = asyncio.run(process_all(Engine(MemoryIndex(), policy), articles, batch))
    return verdicts, time.perf_counter() - started


def datasketch_pairs(docs: Sequence[tuple[str, str]]) -> tuple[Pairs, float]:
    """``(id, text)`` in stream order -> per document index, the indices of its (earlier)
    candidates; and the wall seconds (shingling, MinHash, query and insert)."""
    as_docs = [Doc(id=i, text=t, source=None, mutation="") for i, t in docs]
    timing, found = run_memory(
        as_docs, verify=False, threshold=DS_THRESHOLD, num_perm=DS_NUM_PERM, batch=BATCH
    )
    return found, timing.wall_s


def linked(first: Verdict, second: Verdict) -> bool:
    """What a user sees as "the second is a copy of the first": ``duplicate_of`` it, or one
    cluster."""
    return second.duplicate_of == first.id or first.cluster == second.cluster


def policy_settings(policy: Policy) -> dict[str, Any]:
    """Every field of the policy, as the run used it (for the json)."""
    return asdict(policy)


def policy_changes(policy: Policy) -> str:
    """The policy in a few words: the fields a reader compares, and any other non-default."""
    default = Policy()
    shown = [f"{k}={getattr(policy, k)!r}" for k in _SHOWN]
    other = [
        f"{f.name}={getattr(policy, f.name)!r}"
        for f in fields(policy)
        if f.name not in _SHOWN and getattr(policy, f.name) != getattr(default, f.name)
    ]
    return "Policy(" + ", ".join(shown + other) + ")"


def datasketch_settings() -> dict[str, Any]:
    bands, rows = lsh_bands_rows(DS_THRESHOLD, DS_NUM_PERM)
    return {
        "class": "MinHashLSH",
        "threshold": DS_THRESHOLD,
        "num_perm": DS_NUM_PERM,
        "bands": bands,
        "rows": rows,
        "shingles": "word 3-shingles of \\w+ on casefold() (harness.corpus.peer_shingles)",
        "verify": False,
        "batch": BATCH,
    }


def share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def target(
    name: str, where: str, value: float | None, datasketch: float | None, op: str, bound: float
) -> dict[str, Any]:
    """One row of the targets table: ``value`` is neardup's, and it alone is met or missed."""
    met = value is not None and (value >= bound if op == ">=" else value <= bound)
    return {
        "target": name,
        "where": where,
        "goal": f"{op} {100 * bound:g}%",
        "neardup": value,
        "datasketch": datasketch,
        "met": met,
    }
