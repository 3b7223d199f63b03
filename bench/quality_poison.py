"""Section 7, boilerplate poisoning: can a producer hide a copy by teaching its own source?

:mod:`harness.poisoning`: 40 Reuters stories registered under the victim's source; then, under
the copier's source, every story cut into documents of its own, three rounds, in each of the
attacker's shapes (``lines``, ``sentences``, ``template``); then each copy, one at a time.
Found: the copy's ``duplicate_of`` is its story, or they share a cluster. The run without the
poison is the baseline; datasketch learns nothing, so its candidates are shown beside.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from bench.quality_systems import datasketch_pairs, policy_changes, process_all, share, target
from harness.poisoning import SHAPES, Shape, copies, poison, stories
from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

STORIES = 40
ROUNDS = 3
TARGET_FOUND = 0.975


async def _attack(
    policy: Policy, victims: Sequence[Article], poisoned: bool, shape: Shape
) -> list[Verdict]:
    engine = Engine(MemoryIndex(), policy)
    await process_all(engine, [*victims, *(poison(victims, ROUNDS, shape) if poisoned else [])])
    out = []
    for c in copies(victims, shape):  # one at a time, as a stream delivers them
        (v,) = await engine.process([c])
        assert isinstance(v, Verdict), v
        out.append(v)
    return out


def _score(victims: Sequence[Article], verdicts: Sequence[Verdict]) -> dict[str, Any]:
    found = sum(
        v.duplicate_of == s.id or v.cluster == s.id for s, v in zip(victims, verdicts, strict=True)
    )
    wrong = sum(
        v.duplicate_of is not None and v.duplicate_of != s.id and v.cluster != s.id
        for s, v in zip(victims, verdicts, strict=True)
    )
    return {"copies": len(victims), "found": found, "share": share(found, len(victims)),
            "linked_elsewhere": wrong}  # fmt: skip


def _shape(policy: Policy, victims: Sequence[Article], shape: Shape) -> dict[str, Any]:
    started = time.perf_counter()
    clean = _score(victims, asyncio.run(_attack(policy, victims, False, shape)))
    poisoned = _score(victims, asyncio.run(_attack(policy, victims, True, shape)))
    wall = time.perf_counter() - started
    docs = [*victims, *poison(victims, ROUNDS, shape), *copies(victims, shape)]
    found, ds_wall = datasketch_pairs([(d.id, d.text) for d in docs])
    pos = {d.id: i for i, d in enumerate(docs)}
    ds_found = sum(pos[v.id] in found.get(pos[f"copy-{v.id}"], set()) for v in victims)
    return {
        "clean": clean,
        "poisoned": poisoned,
        "datasketch": {"copies": len(victims), "found": ds_found,
                       "share": share(ds_found, len(victims))},
        "wall_s": {"neardup (both runs)": round(wall, 3), "datasketch": round(ds_wall, 3)},
    }  # fmt: skip


def run() -> dict[str, Any]:
    policy = Policy()
    victims = stories(STORIES)
    shapes = {shape: _shape(policy, victims, shape) for shape in SHAPES}
    targets = []
    for shape, r in shapes.items():
        where = f"boilerplate poisoning ({shape}), defaults"
        targets += [
            target(
                "poisoned copies found",
                where,
                r["poisoned"]["share"],
                r["datasketch"]["share"],
                ">=",
                TARGET_FOUND,
            ),
            target(
                "poisoned copies linked to another text",
                where,
                share(r["poisoned"]["linked_elsewhere"], STORIES),
                None,
                "<=",
                0.0,
            ),
        ]
    return {
        "settings": {
            "generator": f"harness.poisoning: {STORIES} stories, {ROUNDS} rounds of poison, "
            f"shapes {', '.join(SHAPES)}",
            "stories": STORIES,
            "rounds": ROUNDS,
            "shapes": list(SHAPES),
            "neardup": {"summary": policy_changes(policy)},
        },
        "wall_s": {
            f"{shape}: {k}": v for shape, r in shapes.items() for k, v in r["wall_s"].items()
        },
        "shapes": shapes,
        "targets": targets,
    }
