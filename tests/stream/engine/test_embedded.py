"""An earlier article inside a longer new text (issue 42, item 7): named at every measure.

Real Reuters-21578 stories (:mod:`harness.embedded`): a new text writes 300 words of its own and
then quotes a whole earlier story. Its Jaccard similarity to the story is about a third, so the
MinHash bands seldom meet it; the story's smallest winnowed passage is among the new text's
(:mod:`neardup.sketch.winnow`), and the text reads those passages' buckets. At the defaults
(Jaccard) the story is ``related`` with ``direction`` ``embeds`` and its containment as the
similarity, never ``duplicate_of`` (the new text is not the story again); under containment
it is a copy, as before. The reverse, a part of an earlier longer story, is ``excerpt``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.embedded import embedded, own_words, stories
from neardup import Index
from neardup.sketch import verify
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.judge import inside
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Related, Verdict
from neardup.stream.namespaces.policy import Policy

STORY = stories(5)[4]  # r3520: JAPAN'S JOBLESS SEEN RISING TO 3.3 PCT IN 1987/88 (140 words)
OWN = own_words(0, avoid=[STORY.id])


async def _check(engine: Engine, text: str, doc_id: str = "new") -> Verdict:
    (v,) = await engine.process([Article(doc_id, text)], register=False)
    assert not isinstance(v, NeardupError), v
    return v


def test_the_story_and_the_new_words() -> None:
    assert STORY.id == "r3520" and STORY.text.startswith("JAPAN'S JOBLESS SEEN RISING")
    assert len(OWN.split()) == 300 and STORY.text not in OWN


async def test_an_embedded_story_is_related_at_the_defaults() -> None:
    """It was ``original`` with nothing related (Jaccard 0.34: no band met it)."""
    engine = Engine(MemoryIndex())
    await engine.process([STORY])
    v = await _check(engine, embedded(OWN, STORY.text))
    assert (v.verdict, v.duplicate_of, v.similarity, v.method, v.direction) == (
        "original", None, None, "new", None,
    )  # fmt: skip
    assert v.related == (Related(STORY.id, 1.0, (), "embeds"),)
    assert v.to_dict()["related"] == [
        {"id": STORY.id, "similarity": 1.0, "changes": [], "direction": "embeds"}
    ]


async def test_an_embedded_story_is_related_when_registered_too() -> None:
    """In a stream (registered, one batch with the story or after it) the same verdict; the
    cluster stays the new text's own."""
    new = Article("new", embedded(OWN, STORY.text))
    for batches in ([[STORY, new]], [[STORY], [new]]):
        engine = Engine(MemoryIndex())
        got = []
        for batch in batches:
            got += await engine.process(batch)
        v = got[-1]
        assert isinstance(v, Verdict)
        assert (v.verdict, v.cluster, v.related) == (
            "original", "new", (Related(STORY.id, 1.0, (), "embeds"),),
        )  # fmt: skip


async def test_an_embedded_story_is_a_copy_under_containment() -> None:
    engine = Engine(MemoryIndex(), Policy(measure="containment"))
    await engine.process([STORY])
    v = await _check(engine, embedded(OWN, STORY.text))
    assert (v.verdict, v.duplicate_of, v.similarity, v.method, v.direction, v.related) == (
        "near_duplicate", STORY.id, 1.0, "containment", "embeds", (),
    )  # fmt: skip


async def test_a_part_of_an_earlier_story_is_an_excerpt() -> None:
    """The new text is the middle third of the story: Jaccard about a third; the story's
    passages that fall inside it find it."""
    engine = Engine(MemoryIndex())
    await engine.process([STORY])
    words = STORY.text.split()
    part = " ".join(words[len(words) // 3 : 2 * len(words) // 3])
    v = await _check(engine, part)
    assert (v.verdict, v.duplicate_of, v.related) == (
        "original", None, (Related(STORY.id, 1.0, (), "excerpt"),),
    )  # fmt: skip


async def test_one_prefix_before_other_stories_links_none_of_them() -> None:
    """The same 300 words before each of ten stories, registered one by one: each shares
    the prefix with every earlier one (Jaccard about a half, two thirds of the earlier text
    at most), and none is named by another."""
    engine = Engine(MemoryIndex())
    for k, story in enumerate(stories(10)):
        (v,) = await engine.process([Article(f"p{k}", embedded(OWN, story.text))])
        assert isinstance(v, Verdict)
        assert (v.verdict, v.cluster, v.related) == ("original", f"p{k}", ())


async def test_two_texts_each_inside_the_other_are_judged_by_jaccard_alone() -> None:
    """A text that changed a few words of an earlier one (every twentieth word), each lying
    more than the threshold inside the other: one text changed on both sides, below the
    Jaccard threshold, nothing related. With a paragraph of its own added as well it holds
    the earlier text one way only: related, ``embeds``."""
    words = STORY.text.split()
    changed = " ".join(w + "x" if i % 20 == 10 else w for i, w in enumerate(words))
    engine = Engine(MemoryIndex())
    await engine.process([STORY])
    v = await _check(engine, changed)
    assert (v.verdict, v.related) == ("original", ())
    added = changed + "\n\n" + " ".join(OWN.split()[:60])
    v = await _check(engine, added)
    assert v.verdict == "original"
    assert [(r.id, r.direction) for r in v.related] == [(STORY.id, "embeds")]


def test_the_python_index_names_an_embedded_story() -> None:
    with Index() as ix:
        ix.add(STORY.id, STORY.text)
        v = ix.check(embedded(OWN, STORY.text))
        assert (v.verdict, v.duplicate_of) == ("original", None)
        assert [(r.id, r.similarity, r.direction) for r in v.related] == [(STORY.id, 1.0, "embeds")]
    with Index(policy=Policy(measure="containment")) as ix:
        ix.add(STORY.id, STORY.text)
        v = ix.check(embedded(OWN, STORY.text))
        assert (v.verdict, v.duplicate_of, v.method, v.direction) == (
            "near_duplicate", STORY.id, "containment", "embeds",
        )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.integers(0, 400), min_size=1, max_size=120),
    st.sets(st.integers(0, 400), min_size=1, max_size=120),
)
def test_inside_read_from_the_jaccard_is_inside_counted(a: set[int], b: set[int]) -> None:
    """What two sets share, read back from their Jaccard, decides as counting it does."""
    mine = np.array(sorted(a), dtype=np.uint32)
    theirs = np.array(sorted(b), dtype=np.uint32)
    policy = Policy()
    known = inside(policy, mine, theirs, verify.jaccard(mine, theirs))
    assert known == inside(policy, mine, theirs)
