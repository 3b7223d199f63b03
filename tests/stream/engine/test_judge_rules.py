""":func:`~neardup.stream.engine.judge.judge`'s special cases are named rules, tried in a
documented order: each has a name and a docstring that says which case it decides, and on
real pairs of each kind the rule named for it is the one that decides.

Pairs from Clough & Stevenson's texts and from the briefs and templates the verdict tests use
(tests/stream/engine/test_verdict_facts.py states their verdicts; here, which rule gave them).
"""

from __future__ import annotations

from functools import cache

import pytest

from harness import data
from neardup.stream.engine import judge
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict


def test_the_rules_are_named_documented_and_in_their_order() -> None:
    rules = [r for kinds in judge.RULES.values() for r in kinds]
    assert len({r.__name__ for r in rules}) == len(rules)
    assert all(r.__doc__ and len(r.__doc__.split()) >= 8 for r in rules)
    assert set(judge.RULES) == {"mixed", "short", "long"}
    # a text judged as sent before as sketched; the long texts measured first, a copy last
    assert judge.RULES["mixed"] == (judge.short_remainder_against_long, judge.across_the_line)
    assert judge.RULES["short"] == (judge.short_remainder_as_sent, judge.short_texts)
    assert judge.RULES["long"][0] is judge._measure
    assert judge.RULES["long"][-1] is judge.alike


@pytest.fixture
def deciding(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the rule that decided each pair :func:`judge` was given, in order."""
    decided: list[str] = []

    def recorded(rule: judge.Rule) -> judge.Rule:
        def wrapped(pair: judge.Pair) -> judge.Judged | judge._Next:
            got = rule(pair)
            if got is not judge.NEXT:
                decided.append(rule.__name__)
            return got

        return wrapped

    rules = {kinds: tuple(map(recorded, rs)) for kinds, rs in judge.RULES.items()}
    monkeypatch.setattr(judge, "RULES", rules)
    return decided


@cache
def _story(skip: int = 0) -> str:
    long = [r["text"] for r in data.clough_stevenson() if len(r["text"].split()) >= 250]
    return long[skip]


async def _second(first: str, second: str) -> Verdict:
    """The verdict of ``second``, sent after ``first`` in a namespace of its own."""
    _, got = await Engine(MemoryIndex()).process([Article("a", first), Article("b", second)])
    assert not isinstance(got, NeardupError), got
    return got


FED = "FED SETS 1.5 BILLION DLR CUSTOMER REPURCHASE"
TITLE = (  # 28 tokens: short; with a tag of four words, long
    "The council will vote on Tuesday on the budget for the new bridge over the river and on "
    "the plans for the harvest festival in the town square"
)


@pytest.mark.parametrize(
    ("first", "second", "rule", "verdict"),
    [
        # two short texts: edit similarity, then facts
        (FED, "FED SETS TWO BILLION DLR CUSTOMER REPURCHASE", "short_texts", "original"),
        (FED, "Fed sets 1.5 billion dlr customer repurchase (via @wire)", "short_texts", "near"),
        # one short, one long near the line: both read as short texts
        (
            TITLE,
            f"{TITLE} (Reporting by Jane Doe)",
            "across_the_line",
            "near",
        ),
        # two long texts alike: a copy
        (_story(), f"{_story()} A closing line the copy added.", "alike", "near"),
        # another day of a long template: related, with the days
        (
            f"{_story()} The estimates are based on tests as of March 1 and 42 groves.",
            f"{_story()} The estimates are based on tests as of April 1 and 42 groves.",
            "another_day",
            "original",
        ),
        # an earlier text inside a longer new one: unlike, related as embedded
        (_story(1), f"{_story(2)}\n{_story(3)}\n{_story(1)}", "unlike_near_the_line", "original"),
    ],
)
async def test_each_case_is_decided_by_the_rule_named_for_it(
    deciding: list[str], first: str, second: str, rule: str, verdict: str
) -> None:
    got = await _second(first, second)
    assert got.verdict.startswith(verdict)
    assert deciding and set(deciding) == {rule}
