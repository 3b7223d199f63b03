"""Section 6, disguised copies: is a copy found when only the encoding of its characters differs?

Four sets of originals from :mod:`harness.data`, each in its own namespace, no two alike within a
set: long Reuters stories, Reuters headlines and first sentences (the short path), joined Chinese
reviews and single ones. They are registered first and must stay ``original``. Then every disguise
of :mod:`harness.disguises` is applied to :data:`PER_DISGUISE` originals of each set it is meant
for (a window moving on from one disguise to the next; an original it leaves unchanged is passed
over) and each copy is checked as ``/check`` does (``register=False``: a copy never matches another
copy): found = ``duplicate_of`` its own original. datasketch sees the raw text, as its users feed
it: found = its original among the candidates.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.quality_systems import (
    DS_NUM_PERM,
    DS_THRESHOLD,
    policy_changes,
    policy_settings,
    process_all,
    target,
)
from harness.corpus import peer_shingles
from harness.data import reuters, zh_reviews
from harness.disguises import DISGUISES, FAMILIES, disguise
from neardup.sketch.features import tokenize
from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

__all__ = ["PER_DISGUISE", "SETS", "SIZES", "TARGET_FOUND", "Original", "originals", "run"]

TARGET_FOUND = 0.975
SETS = ("en long", "en short", "zh long", "zh short")
SIZES = {"en long": 200, "en short": 120, "zh long": 100, "zh short": 100}
PER_DISGUISE = {"en long": 100, "en short": 80, "zh long": 50, "zh short": 60}
LONG_WORDS = 100
SHORT_TOKENS = (5, 29)  # Policy.short_tokens is 30: fewer tokens take the short path
ZH_LONG_CHARS = 150
ZH_SHORT_TOKENS = (10, 29)
_WORD_RE = re.compile(r"\w+")
_SENTENCE_RE = re.compile(r"(.+?[.!?])(?:\s|$)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Original:
    id: str
    text: str
    set: str

    @property
    def lang(self) -> str:
        return self.set.split()[0]

    @property
    def namespace(self) -> str:
        return "disguise-" + self.set.replace(" ", "-")


def _jaccard(a: set[Any], b: set[Any]) -> float:
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter) if a or b else 1.0


def _distinct(
    candidates: Sequence[tuple[str, str]], n: int, key: Any, bound: float
) -> list[tuple[str, str]]:
    """The first ``n`` candidates whose ``key`` set is below ``bound`` Jaccard to every one
    kept before."""
    kept: list[tuple[str, str]] = []
    sets: list[set[Any]] = []
    for doc_id, text in candidates:
        s = key(text)
        if s and all(_jaccard(s, t) < bound for t in sets):
            kept.append((doc_id, text))
            sets.append(s)
            if len(kept) == n:
                break
    return kept


def _first_sentence(body: str) -> str | None:
    m = _SENTENCE_RE.match(" ".join(body.split()))
    return m.group(1) if m else None


def originals(seed: int, sizes: Mapping[str, int] = SIZES) -> list[Original]:
    """The four sets of originals (see the module doc), drawn with ``seed``."""
    rng = random.Random(seed)
    stories = list(reuters())
    rng.shuffle(stories)
    long_c = [
        (s["id"], s["text"].strip())
        for s in stories
        if len(_WORD_RE.findall(s["text"])) >= LONG_WORDS
    ]
    en_long = _distinct(long_c, sizes["en long"], peer_shingles, 0.3)
    used = {i for i, _ in en_long}
    short_c = []
    for k, s in enumerate(stories):
        if s["id"] in used:
            continue
        head, _, body = s["text"].strip().partition("\n")
        text = head.strip() if k % 2 else _first_sentence(body)
        if text and SHORT_TOKENS[0] <= len(tokenize(text)) <= SHORT_TOKENS[1]:
            short_c.append((f"{s['id']}{'h' if k % 2 else 's'}", text))

    def words(text: str) -> set[str]:
        return set(_WORD_RE.findall(text.casefold()))

    en_short = _distinct(short_c, sizes["en short"], words, 0.5)

    reviews = list(dict.fromkeys(r["text"].strip() for r in zh_reviews()))
    rng.shuffle(reviews)
    n_tokens = {r: len(tokenize(r)) for r in reviews}
    parts = [r for r in reviews if 30 <= n_tokens[r] <= 100]
    zh_long_c: list[tuple[str, str]] = []
    text = ""
    for r in parts:
        text += r
        if len(text) >= ZH_LONG_CHARS and len(text) > len(r):
            zh_long_c.append((f"zl{len(zh_long_c)}", text))
            text = ""

    def bigrams(text: str) -> set[str]:
        t = "".join(tokenize(text))
        return {t[i : i + 2] for i in range(len(t) - 1)}

    zh_long = _distinct(zh_long_c, sizes["zh long"], bigrams, 0.3)
    zh_short_c = [
        (f"zs{k}", r)
        for k, r in enumerate(reviews)
        if ZH_SHORT_TOKENS[0] <= n_tokens[r] <= ZH_SHORT_TOKENS[1]
    ]
    zh_short = _distinct(zh_short_c, sizes["zh short"], bigrams, 0.5)
    picked = {"en long": en_long, "en short": en_short, "zh long": zh_long, "zh short": zh_short}
    return [Original(i, t, name) for name in SETS for i, t in picked[name]]


class _Datasketch:
    """The originals inserted into one ``MinHashLSH`` per set; copies only queried."""

    def __init__(self, origs: Sequence[Original]) -> None:
        from datasketch import MinHash, MinHashLSH

        self._minhash = MinHash
        self.lsh = {s: MinHashLSH(threshold=DS_THRESHOLD, num_perm=DS_NUM_PERM) for s in SETS}
        sigs = MinHash.bulk([peer_shingles(o.text) for o in origs], num_perm=DS_NUM_PERM)
        for o, m in zip(origs, sigs, strict=True):
            self.lsh[o.set].insert(o.id, m)

    def found(self, copies: Sequence[tuple[Original, str]]) -> list[bool]:
        sigs = self._minhash.bulk([peer_shingles(t) for _, t in copies], num_perm=DS_NUM_PERM)
        return [o.id in self.lsh[o.set].query(m) for (o, _), m in zip(copies, sigs, strict=True)]


def _copies(name: str, origs: Sequence[Original], seed: int) -> list[tuple[Original, str]]:
    """The copies of one disguise: per set it is meant for, up to :data:`PER_DISGUISE` of the
    originals it changes, starting at an offset that moves on with each disguise (so that
    every original serves some disguises), each copy with its own seed."""
    d = DISGUISES[name]
    turn = list(DISGUISES).index(name)
    out = []
    for s in SETS:
        if s.split()[0] not in d.langs or (d.long_only and not s.endswith("long")):
            continue
        pool = [(k, o) for k, o in enumerate(origs) if o.set == s]
        start = (turn * PER_DISGUISE[s]) % len(pool)
        taken = 0
        for k, o in pool[start:] + pool[:start]:
            text = disguise(name, o.text, seed * 100_003 + k)
            if text != o.text:
                out.append((o, text))
                taken += 1
                if taken == PER_DISGUISE[s]:
                    break
    return out


def _verdict_name(v: Verdict, o: Original) -> str:
    if v.verdict == "original":
        return "original"
    return v.verdict if v.duplicate_of == o.id else f"{v.verdict} of another"


async def _run_all(
    origs: Sequence[Original], seed: int, policy: Policy
) -> tuple[list[Verdict], dict[str, list[tuple[Original, str, Verdict]]], float]:
    engine = Engine(MemoryIndex(), policy)
    started = time.perf_counter()
    first = await process_all(engine, [Article(o.id, o.text, o.namespace) for o in origs])
    judged: dict[str, list[tuple[Original, str, Verdict]]] = {}
    for name in DISGUISES:
        copies = _copies(name, origs, seed)
        arts = [Article(f"{o.id}~{name}", t, o.namespace) for o, t in copies]
        verdicts = await process_all(engine, arts, register=False)
        judged[name] = [(o, t, v) for (o, t), v in zip(copies, verdicts, strict=True)]
    return first, judged, time.perf_counter() - started


def run(seed: int) -> dict[str, Any]:
    policy = Policy()
    origs = originals(seed)
    first, judged, nd_wall = asyncio.run(_run_all(origs, seed, policy))
    by_id = {o.id: o for o in origs}
    linked = [
        {"id": v.id, "set": by_id[v.id].set, "verdict": v.verdict, "duplicate_of": v.duplicate_of}
        for v in first
        if v.verdict != "original"
    ]
    started = time.perf_counter()
    ds = _Datasketch(origs)
    ds_found = {name: ds.found([(o, t) for o, t, _ in rows]) for name, rows in judged.items()}
    ds_wall = time.perf_counter() - started

    rows: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    for name, got in judged.items():
        d = DISGUISES[name]
        per_set: dict[str, list[int]] = {}
        verdicts: Counter[str] = Counter()
        for (o, text, v), ds_hit in zip(got, ds_found[name], strict=True):
            hit = v.verdict != "original" and v.duplicate_of == o.id
            acc = per_set.setdefault(o.set, [0, 0, 0])
            acc[0] += 1
            acc[1] += hit
            acc[2] += ds_hit
            verdicts[_verdict_name(v, o)] += 1
            if not hit and len(missed) < 60:
                missed.append(
                    {
                        "disguise": name,
                        "original": o.id,
                        "set": o.set,
                        "verdict": v.verdict,
                        "duplicate_of": v.duplicate_of,
                        "similarity": v.similarity,
                        "copy_head": text[:160],
                    }
                )
        n = sum(a[0] for a in per_set.values())
        rows.append(
            {
                "disguise": name,
                "family": d.family,
                "note": d.note,
                "copies": n,
                "neardup_found": sum(a[1] for a in per_set.values()) / n if n else None,
                "datasketch_found": sum(a[2] for a in per_set.values()) / n if n else None,
                "by_set": {
                    s: {
                        "copies": a[0],
                        "neardup_found": a[1] / a[0],
                        "datasketch_found": a[2] / a[0],
                    }
                    for s, a in per_set.items()
                },
                "verdicts": dict(verdicts),
            }
        )
    families = []
    for fam in FAMILIES:
        group = [r for r in rows if r["family"] == fam and r["copies"]]
        n = sum(r["copies"] for r in group)
        families.append(
            {
                "family": fam,
                "disguises": len(group),
                "copies": n,
                "neardup_found": sum(r["neardup_found"] * r["copies"] for r in group) / n,
                "datasketch_found": sum(r["datasketch_found"] * r["copies"] for r in group) / n,
                "neardup_worst": min(r["neardup_found"] for r in group),
            }
        )
    counted = [r for r in rows if r["copies"]]
    worst = min(counted, key=lambda r: r["neardup_found"])
    ds_worst = min(r["datasketch_found"] for r in counted)
    sizes = Counter(o.set for o in origs)
    targets = [
        target(
            f"disguised copies: every disguise found (worst: {worst['disguise']})",
            f"{len(counted)} disguises, {', '.join(SETS)}, defaults",
            worst["neardup_found"],
            ds_worst,
            ">=",
            TARGET_FOUND,
        ),
        target(
            "disguised copies: undisguised originals linked",
            f"{len(origs)} distinct originals, defaults",
            len(linked) / len(origs),
            None,
            "<=",
            0.0,
        ),
    ]
    return {
        "settings": {
            "generator": f"bench.quality_disguise.originals({seed}) x harness.disguises",
            "seed": seed,
            "originals": dict(sizes),
            "disguises": len(DISGUISES),
            "copies": sum(r["copies"] for r in rows),
            "neardup": {"defaults": policy_settings(policy), "summary": policy_changes(policy)},
        },
        "wall_s": {"neardup": round(nd_wall, 3), "datasketch": round(ds_wall, 3)},
        "originals_linked": linked,
        "by_family": families,
        "by_disguise": rows,
        "missed": missed,
        "targets": targets,
    }
