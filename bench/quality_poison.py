"""Section 7, boilerplate poisoning: can a producer hide a copy by teaching its own source?

:mod:`harness.poisoning`: 40 Reuters stories registered under the victim's source; then, under
the copier's source, every story's lines as documents of its own (four lines and a filler line
each, three rounds); then each story again with a line of its own, one at a time. Found: the
copy's ``duplicate_of`` is its story, or they share a cluster. The same run without the poison
is the baseline. datasketch learns nothing, so the poison cannot touch it: its candidates are
shown on the same copies.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bench.quality_systems import BATCH, datasketch_pairs, pct, policy_changes, share, target
from harness.poisoning import copies, poison, stories
from harness.report import md_table
from stream.engine import Engine
from stream.errors import NeardupError
from stream.index.memory import MemoryIndex
from stream.model import Article, Verdict
from stream.policy import Policy

STORIES = 40
ROUNDS = 3
TARGET_FOUND = 0.975


async def _attack(policy: Policy, victims: Sequence[Article], poisoned: bool) -> list[Verdict]:
    engine = Engine(MemoryIndex(), policy)
    docs = [*victims, *(poison(victims, ROUNDS) if poisoned else [])]
    for lo in range(0, len(docs), BATCH):
        got = await engine.process(docs[lo : lo + BATCH])
        assert not any(isinstance(v, NeardupError) for v in got), got
    out = []
    for c in copies(victims):  # one at a time, as a stream delivers them
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


def run() -> dict[str, Any]:
    policy = Policy()
    victims = stories(STORIES)
    started = time.perf_counter()
    clean = _score(victims, asyncio.run(_attack(policy, victims, False)))
    poisoned = _score(victims, asyncio.run(_attack(policy, victims, True)))
    wall = time.perf_counter() - started
    docs = [*victims, *poison(victims, ROUNDS), *copies(victims)]
    found, ds_wall = datasketch_pairs([(d.id, d.text) for d in docs])
    pos = {d.id: i for i, d in enumerate(docs)}
    ds_found = sum(pos[v.id] in found.get(pos[f"copy-{v.id}"], set()) for v in victims)
    ds = {"copies": len(victims), "found": ds_found, "share": share(ds_found, len(victims))}
    return {
        "settings": {
            "generator": f"harness.poisoning: {STORIES} stories, {ROUNDS} rounds of poison",
            "stories": STORIES,
            "rounds": ROUNDS,
            "neardup": {"summary": policy_changes(policy)},
        },
        "wall_s": {"neardup (both runs)": round(wall, 3), "datasketch": round(ds_wall, 3)},
        "neardup": {"clean": clean, "poisoned": poisoned},
        "datasketch": ds,
        "targets": [
            target(
                "poisoned copies found",
                "boilerplate poisoning, defaults",
                poisoned["share"],
                ds["share"],
                ">=",
                TARGET_FOUND,
            ),
            target(
                "poisoned copies linked to another text",
                "boilerplate poisoning, defaults",
                share(poisoned["linked_elsewhere"], STORIES),
                None,
                "<=",
                0.0,
            ),
        ],
    }


def headline(section: Mapping[str, Any]) -> list[str]:
    nd, ds = section["neardup"], section["datasketch"]
    return [
        f"poisoning: neardup finds {pct(nd['poisoned']['share'])} of poisoned copies "
        f"({pct(nd['clean']['share'])} without the poison), "
        f"{nd['poisoned']['linked_elsewhere']} linked to another text; "
        f"datasketch {pct(ds['share'])} among candidates"
    ]


def markdown(section: Mapping[str, Any]) -> list[str]:
    nd, ds = section["neardup"], section["datasketch"]
    rows = [
        [name, str(r["copies"]), str(r["found"]), pct(r["share"]), str(r["linked_elsewhere"])]
        for name, r in (("neardup, no poison", nd["clean"]), ("neardup, poisoned", nd["poisoned"]))
    ]
    rows.append(
        ["datasketch (candidates)", str(ds["copies"]), str(ds["found"]), pct(ds["share"]), "n/a"]
    )
    return [
        "## 7. Boilerplate poisoning",
        "",
        (__doc__ or "").split("\n\n", 1)[1].replace("\n", " ").strip(),
        "",
        md_table(["run", "copies", "found", "share", "linked to another text"], rows),
        "",
        *(f"- {h}" for h in headline(section)),
        "",
    ]
