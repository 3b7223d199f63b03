"""The verdicts about facts, direction and evidence on a real Redis: what the memory store
gives (the unit tests' texts, tests/stream/engine/test_verdict_facts.py and
tests/sketch/test_evidence.py), stored and read back through the Lua library and records
version 4 (their dates included)."""

from __future__ import annotations

from redis.asyncio import Redis

from harness import data
from neardup.stream.engine.engine import Engine
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis.index import RedisIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from tests.stream.engine.test_boundary import STORY, TELCOM
from tests.stream.engine.test_long_copies import fed_releases
from tests.stream.engine.test_verdict_facts import (
    _BODY,
    _WIRE,
    BAKER,
    FED,
    FED_COPY,
    FED_TWO,
    REBROKEN,
    SPLIT,
    TOKYO,
    _notice,
    _other,
    _verdicts,
)


def _story(skip: int = 0) -> str:
    return [r["text"] for r in data.clough_stevenson() if len(r["text"].split()) >= 250][skip]


def _cases() -> list[tuple[str, Policy, list[Article]]]:
    story = _story()
    view = _story(skip=20).split()
    zh = ["华新水泥股价3月5日收涨2.35%，报18.20元", "东方航运股价3月5日收涨2.35%，报18.20元"]
    return [
        ("short", Policy(), [Article("a", FED), Article("b", FED_TWO), Article("c", FED_COPY)]),
        ("zh", Policy(), [Article(f"z{i}", t) for i, t in enumerate(zh)]),
        (
            "briefs",  # real wire briefs with surface noise, and one with a number substituted
            Policy(),
            [
                Article("t", TOKYO),
                Article("t1", f"TOKYO (Reuters) - {TOKYO} (Reporting by Jane Doe)"),
                Article("t2", REBROKEN),
                Article("t3", f"{TOKYO.replace('140', '150')} - Reuters"),
                Article("b", BAKER),
                Article("b1", BAKER.replace(".", "").replace("'", "")),
                Article("s", SPLIT),
                Article("s1", SPLIT.replace("TWO-FOR-ONE", "TWO FOR ONE")),
                Article("s2", SPLIT.replace("TWO-FOR-ONE", "TWOFORONE")),
            ],
        ),
        (
            "learned",  # a copy sent after its source's lines were learned is still a copy
            Policy(),
            [
                Article("a", "COMINCO SEES MEETING\n" + "\n".join(_BODY + _WIRE)),
                *(Article(f"o{i}", _other(i)) for i in range(3)),
                Article("b", "COMINCO SEEKS MEETING\n" + "\n".join(_BODY + _WIRE)),
            ],
        ),
        (
            "notices",  # a short notice is judged whole though its source repeats its lines
            Policy(),
            [
                *(
                    Article(f"n{i}", _notice(f"CO{i} <C{i}>", 10 + i, "April 10", "March 30"))
                    for i in range(3)
                ),
                Article("a", _notice("STB CORP <STB>", 22, "April 10", "March 30")),
                Article(
                    "a1", "By Jane Chen: " + _notice("STB CORP <STB>", 22, "April 10", "March 30")
                ),
            ],
        ),
        (
            "boundary",  # copies across the short/long line, both ways, and a changed number
            Policy(),
            [
                Article("r", STORY),
                Article("r1", "Staff report: " + STORY),
                Article("r2", "Staff report: " + STORY.replace("half a point", "75 basis points")),
                Article("t", "Staff report: " + TELCOM),
                Article("t1", TELCOM),
            ],
        ),
        (
            "boundary_bare",  # a long record that kept no text: its shingles and numbers
            Policy(keep_text=False),
            [Article("a", "Staff report: " + STORY + " More follows."), Article("b", STORY)],
        ),
        (
            "relaxed",
            Policy(facts="relaxed"),
            [
                Article("s0", "Cheap pills, call 555-0101 today"),
                Article("s1", "Cheap pills, call 555-0199 today"),
            ],
        ),
        (
            "long",
            Policy(explain=True),
            [
                Article("a", f"{story} The toll rose to 12 on Monday."),
                Article("b", f"{story} The toll rose to 15 on Monday."),
            ],
        ),
        (
            "dated",
            Policy(),
            [
                Article("a", f"{story} Based on tests as of March 1."),
                Article("b", f"{story} Based on tests as of April 1."),
            ],
        ),
        (
            "contain",
            Policy(measure="containment", explain=True),
            [
                Article("a", story),
                Article("ex", " ".join(story.split()[40:160])),
                Article("em", " ".join([*view[:90], story, *view[90:180]])),
            ],
        ),
    ]


async def test_redis_gives_the_memory_stores_verdicts_about_facts(redis_client: Redis) -> None:
    seen: dict[str, list[Verdict]] = {}
    for ns, policy, articles in _cases():
        arts = [Article(a.id, a.text, ns) for a in articles]
        want = await _verdicts(Engine(MemoryIndex(), policy), arts)
        index = RedisIndex(redis_client)
        got = await _verdicts(Engine(index, policy), arts)
        assert got == want, ns
        again = await _verdicts(Engine(RedisIndex(redis_client), policy), arts)  # replays
        assert again == want, ns
        stored = await index.verdicts(ns, [len(arts)])
        assert Verdict.from_json(stored[len(arts)]) == want[-1]
        seen[ns] = got
    assert [r.id for r in seen["short"][1].related] == ["a"] and seen["short"][2].cluster == "a"
    assert [v.duplicate_of for v in seen["briefs"]] == [
        *(None, "t", "t", None, None, "b"),
        *(None, "s", "s"),
    ]
    assert [r.id for r in seen["briefs"][3].related][:1] == ["t"]
    assert seen["notices"][-1].duplicate_of == "a"
    assert seen["learned"][-1].duplicate_of == "a"
    assert seen["long"][1].changes and seen["long"][1].evidence
    assert [r.changes[0].kind for r in seen["dated"][1].related] == ["date"]
    assert [v.direction for v in seen["contain"]] == [None, "excerpt", "embeds"]
    assert [v.duplicate_of for v in seen["boundary"]] == [None, "r", None, None, "t"]
    assert "r" in [r.id for r in seen["boundary"][2].related]
    assert [(v.duplicate_of, v.method) for v in seen["boundary_bare"]][1] == ("a", "jaccard")


async def test_redis_gives_the_memory_stores_verdict_on_two_releases_short_once_learned(
    redis_client: Redis,
) -> None:
    """A release short once its template is learned registers its whole text's bands on Redis
    too: the later Fed operation is related to the earlier, as in memory."""
    want = await fed_releases(Engine(MemoryIndex()))
    got = await fed_releases(Engine(RedisIndex(redis_client)))
    assert got == want
    assert "r3735" in [r.id for r in got.related]
