"""Quality on labelled text reuse: Clough & Stevenson (2011), 5 Wikipedia sources and 95 answers.

The 5 sources are indexed first, then the answers (on a real Redis). An answer counts as found
when it is not an original and its cluster is its source's id. ``cut`` answers are near-verbatim
copies and must be found under the containment policy (the new answer's shingles inside an earlier
text); ``non`` answers are independent writing and must all be originals. ``light`` and ``heavy``
are printed, not asserted: paraphrase is not surface duplication.

Known unavoidable misses (data README: some answers copied a different article than supplied):
``g2pE_taskc`` copied the Wikipedia article on information retrieval instead of the supplied
vector-space-model source; it shares no word 3-shingle with its source (containment 0.000), so no
surface method can link the two. ``g4pD_taskb`` likewise copied another PageRank article
(containment 0.013 in its source); it is found only through ``g1pD_taskb``, an answer that used
both texts, so it may land in the source's cluster or not depending on that answer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cache

from redis.asyncio import Redis

from harness import data
from neardup.stream.engine.engine import Engine
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

CATEGORIES = ("cut", "light", "heavy", "non")
POLICIES = {
    "containment": Policy(measure="containment", threshold=0.25),
    "jaccard": Policy(),
}


@cache
def _corpus() -> tuple[dict[str, str], list[dict[str, str]]]:
    texts = {row["id"]: row["text"] for row in data.clough_stevenson()}
    return texts, list(data.clough_pairs())


async def _run(redis_client: Redis, ns: str) -> dict[str, Verdict]:
    texts, pairs = _corpus()
    engine = Engine(RedisIndex(redis_client), policies={ns: POLICIES[ns]})
    sources = sorted(i for i in texts if i.startswith("orig_"))
    assert len(sources) == 5
    out = await engine.process([Article(i, texts[i], namespace=ns) for i in sources])
    answers = [Article(p["answer_id"], texts[p["answer_id"]], namespace=ns) for p in pairs]
    pos = 0
    for size in itertools.cycle([1, 7, 3, 20, 2, 11]):
        if pos >= len(answers):
            break
        out += await engine.process(answers[pos : pos + size])
        pos += size
    assert all(isinstance(v, Verdict) for v in out)
    return {v.id: v for v in out if isinstance(v, Verdict)}


@dataclass(frozen=True)
class _Row:
    n: int
    flagged: int  # not an original
    found: int  # not an original, and in the source's cluster
    missed: list[str]


def _score(verdicts: dict[str, Verdict]) -> dict[str, _Row]:
    _, pairs = _corpus()
    table = {}
    for cat in CATEGORIES:
        rows = [p for p in pairs if p["category"] == cat]
        flagged = [p for p in rows if verdicts[p["answer_id"]].verdict != "original"]
        found = [p for p in flagged if verdicts[p["answer_id"]].cluster == p["source_id"]]
        missed = [p["answer_id"] for p in rows if p not in found]
        table[cat] = _Row(len(rows), len(flagged), len(found), missed)
    return table


def _summary(name: str, table: dict[str, _Row]) -> str:
    lines = [f"clough-stevenson, {name} (threshold {POLICIES[name].threshold}):"]
    flagged_all = sum(table[c].flagged for c in CATEGORIES)
    for positives in (("cut",), ("cut", "light"), ("cut", "light", "heavy")):
        found = sum(table[c].found for c in positives)
        n = sum(table[c].n for c in positives)
        precision = found / flagged_all if flagged_all else 1.0
        lines.append(
            f"  reuse = {'+'.join(positives):15s} precision {precision:.3f}  recall {found / n:.3f}"
        )
    for cat in CATEGORIES:
        row = table[cat]
        if cat == "non":
            lines.append(f"  non   n={row.n:2d} flagged={row.flagged:2d} (false positives)")
            continue
        missed = ""
        if cat == "cut" and row.missed:
            more = f" (+{len(row.missed) - 3})" if len(row.missed) > 3 else ""
            missed = f"  missed: {', '.join(row.missed[:3])}{more}"
        lines.append(
            f"  {cat:5s} n={row.n:2d} flagged={row.flagged:2d} "
            f"in source cluster={row.found:2d} recall {row.found / row.n:.3f}{missed}"
        )
    return "\n".join(lines)


# Two "non" answers (independent of the supplied source) that share text with each other:
# g2pE_taskd's word 3-shingles are 31% inside g4pD_taskd (23% the other way; 1-2% in the
# source), both having used the same outside text on Bayes' theorem. Containment both ways at
# 0.25 finds that reuse (the earlier one embedded in the later); one way it was 0.229 and missed.
KNOWN_SHARED = {("g4pD_taskd", "g2pE_taskd")}


async def test_clough_stevenson_quality(redis_client: Redis) -> None:
    summaries = []
    tables = {}
    for ns in POLICIES:
        verdicts = await _run(redis_client, ns)
        tables[ns] = table = _score(verdicts)
        summaries.append(_summary(ns, table))
        shared = KNOWN_SHARED if ns == "containment" else set()
        linked = {
            (p["answer_id"], verdicts[p["answer_id"]].duplicate_of)
            for p in _corpus()[1]
            if p["category"] == "non" and verdicts[p["answer_id"]].verdict != "original"
        }
        assert linked <= shared, linked  # independent of the source, and of each other
        assert table["non"].flagged == len(linked), [  # independent writing is never a duplicate
            (p["answer_id"], verdicts[p["answer_id"]].duplicate_of)
            for p in _corpus()[1]
            if p["category"] == "non" and verdicts[p["answer_id"]].verdict != "original"
        ]
        for v in verdicts.values():
            if v.verdict == "near_duplicate":
                assert v.similarity is not None and v.similarity >= POLICIES[ns].threshold
    print("\n" + "\n".join(summaries))

    cont = tables["containment"]
    assert len(cont["cut"].missed) <= 2, cont["cut"].missed
    # sanity: reuse is detected at all, and more of it the more literal it is
    assert cont["cut"].found >= cont["light"].found >= cont["heavy"].found > 0
    # Jaccard of a ~250-word answer against a 300-500-word source stays far below 0.8 even for
    # verbatim reuse, so the default Jaccard policy is the wrong tool here: it flags little.
    assert tables["jaccard"]["cut"].found <= cont["cut"].found
