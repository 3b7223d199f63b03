"""A hostile producer cannot hide a copy by teaching (issue 22, item 2).

The attack: a producer that names its own ``source`` sends a victim's story as documents of
its own (three rounds), so that the story is its source's "template"; then it sends the story
again. In each of the attacker's shapes (``harness.poisoning.SHAPES``: the story's lines four a
document, its sentences three a paragraph, its lines inside the copier's own site template),
each copy is still found (``duplicate_of`` the victim's story, as without the poison), and no
copy is linked to another copy or to a poison document. ``/check`` never teaches, and a
namespace can name the sources that teach.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from harness.poisoning import SHAPES, VICTIM, Shape, copies, poison, stories
from neardup.stream.engine.boilerplate import learn
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy


async def attack(
    engine: Engine, *, poisoned: bool, teach: bool = True, shape: Shape = "lines"
) -> dict[str, Verdict]:
    """The victims, the poison (in batches of 64, as a stream delivers it), then each copy
    alone; the copies' verdicts."""
    victims = stories()
    await _all(engine, victims)
    if poisoned:
        docs = poison(victims, shape=shape)
        for lo in range(0, len(docs), 64):
            await _all(engine, docs[lo : lo + 64], teach=teach)
    out = {}
    for c in copies(victims, shape):
        (v,) = await _all(engine, [c])
        out[c.id] = v
    return out


async def _all(engine: Engine, articles: Sequence[Article], *, teach: bool = True) -> list[Verdict]:
    got = await engine.process(list(articles), teach=teach)
    assert not any(isinstance(v, NeardupError) for v in got), got
    return [v for v in got if isinstance(v, Verdict)]


def expected() -> dict[str, str]:
    return {f"copy-{v.id}": v.id for v in stories()}


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_copy_is_found_whatever_its_source_was_taught(shape: Shape) -> None:
    clean = await attack(Engine(MemoryIndex()), poisoned=False, shape=shape)
    poisoned = await attack(Engine(MemoryIndex()), poisoned=True, shape=shape)
    for got in (clean, poisoned):
        assert {k: v.duplicate_of for k, v in got.items()} == expected()
        assert {v.verdict for v in got.values()} == {"near_duplicate"}
    if shape == "lines":
        # the copier's own source did learn the lines: it left them out of its copies'
        # sketches, yet each copy is judged as sent, against the victim's story. Without the
        # poison, the copies' own closing line (TAIL) is learned from the copies before, and
        # left out: 1.0; with it, a copy may still carry that line, nothing more
        for k, v in poisoned.items():
            assert v.similarity is not None and clean[k].similarity is not None
            assert 0 <= clean[k].similarity - v.similarity < 0.05, k


async def test_a_copy_inside_the_copiers_template_is_judged_less_that_template_only() -> None:
    """Taught the story inside its own template, the copier's source leaves both out of the
    copy: nothing is left, and the copy is sketched whole. Whole, the copier's template
    dilutes the copy (below the threshold for most); less the lines its source repeats that
    the story does not have (its template, not the story), it is the story: similarity 1.0,
    and the template's own number (an address) is not a change."""
    got = await attack(Engine(MemoryIndex()), poisoned=True, shape="template")
    assert {k: v.duplicate_of for k, v in got.items()} == expected()
    less = [v for v in got.values() if v.similarity == 1.0]
    assert len(less) > len(got) / 2 and all(v.changes == () for v in less)


async def test_the_poison_taught_its_source_the_stories_lines() -> None:
    """The attack is real: the copier's lines were learned (the rule above is what holds)."""
    engine = Engine(MemoryIndex())
    await attack(engine, poisoned=True)
    found = await learn(engine.index, "default", Policy(), copies(stories())[:1])
    lines, left_out = found.lines, found.left_out
    assert lines[0] is not None and len(left_out[0]) >= len(lines[0]) - 2


def _keeps_the_stories(without_boilerplate: Sequence[str | None]) -> bool:
    """Whether each copy's sketch keeps every line of its story (the copier's own tail line,
    which its copies repeat, may be left out: that is its template)."""
    return all(
        s is None or all(x in s.split("\n") for x in v.text.split("\n") if x.strip())
        for s, v in zip(without_boilerplate, stories(), strict=True)
    )


async def test_a_check_never_teaches() -> None:
    """The poison sent through ``/check`` (``teach=False``, registered or not) teaches
    nothing: no copy leaves a line of the story out."""
    engine = Engine(MemoryIndex())
    await attack(engine, poisoned=True, teach=False)
    without_boilerplate = (
        await learn(engine.index, "default", Policy(), copies(stories()))
    ).without_boilerplate
    assert _keeps_the_stories(without_boilerplate)
    taught = Engine(MemoryIndex())
    await attack(taught, poisoned=True)
    without_boilerplate = (
        await learn(taught.index, "default", Policy(), copies(stories()))
    ).without_boilerplate
    assert not _keeps_the_stories(without_boilerplate)  # the same poison, taught, does teach


async def test_only_the_sources_a_namespace_names_teach() -> None:
    policy = Policy(boilerplate_sources=(VICTIM,))
    engine = Engine(MemoryIndex(), policy)
    got = await attack(engine, poisoned=True)
    assert {k: v.duplicate_of for k, v in got.items()} == expected()
    without_boilerplate = (
        await learn(engine.index, "default", policy, copies(stories()))
    ).without_boilerplate
    assert without_boilerplate == [None] * len(
        stories()
    )  # the copier taught nothing, not even its tail
    # a named source still teaches: three pages of other stories of the victim's site with one
    # navigation line, and a fourth page leaves it out
    nav = "Home | World | Business | Markets | Sport | Weather"
    others = stories(12)[8:]
    site = [Article(f"s{i}", f"{nav}\n{v.text}", source=VICTIM) for i, v in enumerate(others)]
    await _all(engine, site[:3])
    without_boilerplate = (
        await learn(engine.index, "default", policy, site[3:4])
    ).without_boilerplate
    assert without_boilerplate[0] is not None and nav not in without_boilerplate[0]
