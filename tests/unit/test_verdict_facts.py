"""What a verdict says about facts: template siblings are related, not copies; a long near-copy
lists the figures that changed; containment says which way.

Exact verdicts on texts written for each kind of difference, on the memory store (the Redis
store runs the same engine: tests/integration/test_redis_verdict_facts.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness import data
from sketch import features, verify
from stream.engine import Engine
from stream.errors import NeardupError
from stream.index.base import Registration
from stream.index.memory import MemoryIndex
from stream.model import Article, Change, Related, Verdict
from stream.policy import Policy
from stream.prepare import prepare


async def _verdicts(engine: Engine, articles: Sequence[Article]) -> list[Verdict]:
    out = []
    for res in await engine.process(articles):
        assert not isinstance(res, NeardupError), res
        out.append(res)
    return out


def _core_similarity(a: str, b: str) -> float:
    from sketch.facts import facts_of

    return round(
        verify.edit_similarity(
            facts_of(features.normalize(a)).core, facts_of(features.normalize(b)).core
        ),
        4,
    )


FED = "FED SETS 1.5 BILLION DLR CUSTOMER REPURCHASE"
FED_TWO = "FED SETS TWO BILLION DLR CUSTOMER REPURCHASE"
FED_COPY = "Fed sets 1.5 billion dlr customer repurchase 📈 (via @wire)"


async def test_a_template_sibling_is_related_and_never_in_the_cluster() -> None:
    _, b, c = await _verdicts(
        Engine(MemoryIndex()), [Article("a", FED), Article("b", FED_TWO), Article("c", FED_COPY)]
    )
    assert (b.verdict, b.cluster, b.duplicate_of, b.matches) == ("original", "b", None, ())
    sim = _core_similarity(FED_TWO, FED)
    assert b.related == (Related("a", sim, (Change("number", "1.5", "two"),)),)
    assert b.to_dict()["related"] == [
        {
            "id": "a",
            "similarity": sim,
            "changes": [{"kind": "number", "earlier": "1.5", "now": "two"}],
        }
    ]
    # the surface-noise copy joins a's cluster, with b beside it as related
    assert (c.verdict, c.duplicate_of, c.cluster, c.method, c.changes) == (
        "near_duplicate",
        "a",
        "a",
        "edit",
        (),
    )
    assert [r.id for r in c.related] == ["b"]
    assert Verdict.from_json(b.to_json()) == b and Verdict.from_json(c.to_json()) == c


async def test_chinese_siblings_by_name_and_by_numeral() -> None:
    texts = [
        "华新水泥股价3月5日收涨2.35%，报18.20元",
        "东方航运股价3月5日收涨2.35%，报18.20元",  # another company
        "华新水泥股价三月五日收涨2.35%，报18.20元",  # the same date in Chinese numerals
        "华新水泥股价3月6日收涨2.35%，报18.20元",  # another day
    ]
    vs = await _verdicts(Engine(MemoryIndex()), [Article(f"z{i}", t) for i, t in enumerate(texts)])
    assert [v.verdict for v in vs] == ["original", "original", "near_duplicate", "original"]
    assert vs[1].related[0].changes == (Change("word", "华新水泥", "东方航运"),)
    assert vs[2].duplicate_of == "z0" and vs[2].cluster == "z0"
    assert Change("number", "5", "6") in vs[3].related[0].changes
    assert len({vs[0].cluster, vs[1].cluster, vs[3].cluster}) == 3


async def test_a_relaxed_namespace_takes_numbers_as_noise_and_lists_them() -> None:
    spam = [
        "Cheap pills, call 555-0101 today, limited offer",
        "Cheap pills, call 555-0199 today, limited offer",
        "Cheap loans, call 555-0199 today, limited offer",
    ]
    engine = Engine(MemoryIndex(), Policy(facts="relaxed"))
    _, b, c = await _verdicts(engine, [Article(f"s{i}", t) for i, t in enumerate(spam)])
    assert (b.verdict, b.duplicate_of, b.changes) == (
        "near_duplicate",
        "s0",
        (Change("number", "0101", "0199"),),
    )
    assert c.verdict == "original" and [r.id for r in c.related] == ["s1", "s0"]
    strict = await _verdicts(
        Engine(MemoryIndex()), [Article(f"s{i}", t) for i, t in enumerate(spam)]
    )
    assert [v.verdict for v in strict] == ["original"] * 3


def _story(skip: int = 0) -> str:
    long = [r["text"] for r in data.clough_stevenson() if len(r["text"].split()) >= 250]
    return long[skip]


async def test_a_long_near_copy_with_a_changed_figure_stays_and_lists_it() -> None:
    story = _story()
    first = f"{story} The toll rose to 12 on Monday and 1,204 homes lost power."
    update = f"{story} The toll rose to 15 on Monday and 1,204 homes lost power."
    _, b = await _verdicts(Engine(MemoryIndex()), [Article("a", first), Article("b", update)])
    assert (b.verdict, b.duplicate_of, b.cluster, b.method) == (
        "near_duplicate",
        "a",
        "a",
        "jaccard",
    )
    assert b.changes == (Change("number", "12", "15"),)
    assert b.to_dict()["changes"] == [{"kind": "number", "earlier": "12", "now": "15"}]


async def test_containment_both_ways_says_which_way() -> None:
    story = _story()
    words = story.split()
    excerpt = " ".join(words[40:160])
    view = _story(skip=20).split()  # commentary: another text, half before and half after
    embeds = " ".join([*view[:90], story, *view[90:180]])
    engine = Engine(MemoryIndex(), Policy(measure="containment", threshold=0.8))
    a, ex, em = await _verdicts(
        engine, [Article("a", story), Article("ex", excerpt), Article("em", embeds)]
    )
    assert (ex.verdict, ex.duplicate_of, ex.direction) == ("near_duplicate", "a", "excerpt")
    assert ex.similarity == 1.0
    assert (em.verdict, em.duplicate_of, em.direction) == ("near_duplicate", "a", "embeds")
    assert em.similarity == 1.0
    assert a.direction is None
    jac = await _verdicts(Engine(MemoryIndex()), [Article("a", story), Article("em", embeds)])
    assert jac[1].verdict == "original"  # Jaccard is diluted by the commentary


async def test_another_worker_reaches_the_same_related_and_changes() -> None:
    """B was registered by a worker that died before storing its verdict; C copies B. The worker
    deciding C decides B from its stored record: the same verdict, related list included, as a
    single worker reached."""
    arts = [Article("a", FED), Article("b", FED_TWO), Article("c", FED_TWO + " #markets")]
    reference = await _verdicts(Engine(MemoryIndex()), arts)
    index = MemoryIndex()
    engine = Engine(index)
    await _verdicts(engine, arts[:1])
    p = prepare(engine.default_policy, arts[1:2])[0]
    reg = Registration("b", p.content, p.buckets, p.record(0.0).encode(), 0.0)
    await index.register("default", [reg], 256)
    c = (await _verdicts(engine, arts[2:]))[0]
    assert c == reference[2]
    assert (c.verdict, c.cluster, [r.id for r in c.related]) == ("near_duplicate", "b", ["a"])
    b = await _verdicts(engine, arts[1:2])  # the replay of b: what was decided for it
    assert b == reference[1:2]


async def test_a_long_template_on_another_day_is_related_not_a_copy() -> None:
    """The next release of a long templated item (a monthly estimate "as of March 1", then "as
    of April 1") is related with the days that changed; a copy that only drops the dated
    sentence, or one that adds a dated one, names no other day and stays a copy; a relaxed
    namespace takes the day as it takes numbers."""
    story = _story()
    march = f"{story} The estimates are based on tests as of March 1 and 42 groves."
    april = f"{story} The estimates are based on tests as of April 1 and 42 groves."
    _, b = await _verdicts(Engine(MemoryIndex()), [Article("a", march), Article("b", april)])
    _, c, d = await _verdicts(
        Engine(MemoryIndex()),
        [Article("a", march), Article("c", story), Article("d", f"{march} More on April 3.")],
    )
    assert (b.verdict, b.duplicate_of, b.cluster) == ("original", None, "b")
    assert [(r.id, r.changes) for r in b.related] == [("a", (Change("date", "03-01", "04-01"),))]
    assert b.to_dict()["related"][0]["changes"] == [
        {"kind": "date", "earlier": "03-01", "now": "04-01"}
    ]
    assert (c.verdict, c.duplicate_of, c.cluster) == ("near_duplicate", "a", "a")
    assert (d.verdict, d.duplicate_of, d.cluster) == ("near_duplicate", "a", "a")
    relaxed = Engine(MemoryIndex(), Policy(facts="relaxed"))
    _, b2 = await _verdicts(relaxed, [Article("a", march), Article("b", april)])
    assert (b2.verdict, b2.duplicate_of, b2.related) == ("near_duplicate", "a", ())
