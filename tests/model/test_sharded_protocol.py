"""The sharded namespace's registration protocol, model-checked (``model/sharded.pml``): spin
searches every interleaving of the articles' shard calls, crashes and a takedown. The naive
pairwise rule must fail (a cycle of copies with no original), the chosen protocol hold."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from harness.model import CONFIGS, check

BY_NAME = {c.name: c for c in CONFIGS}


@pytest.fixture(autouse=True)
def _spin() -> None:
    """spin is Debian's package, which ``make install`` (and ``make model-tools``) installs as
    root: missing where it could have been installed is a failure."""
    if shutil.which("spin") and shutil.which("gcc"):
        return
    if shutil.which("apt-get") and os.geteuid() == 0:
        pytest.fail("spin (or gcc) is missing: `make model-tools` installs spin")
    pytest.skip("no spin, and this machine cannot install it")


def test_the_naive_pairwise_rule_leaves_a_story_without_an_original() -> None:
    got = check(BY_NAME["naive-3"])
    assert got.errors == 1
    published = [line for line in got.trail if "): " in line]
    assert len(published) == 3 and not any(line.endswith("original") for line in published)
    # each article names another as what it copies: following them goes round a cycle
    copies = {
        int(m.group(1)): int(m.group(2))
        for line in published
        if (m := re.match(r"@ article (\d) \(seq \d+\): copy of article (\d)", line))
    }
    assert sorted(copies) == [0, 1, 2]
    seen, at = [], 0
    while at not in seen:
        seen.append(at)
        at = copies[at]
    assert len(seen) == 3


@pytest.mark.parametrize(
    "name",
    [pytest.param(c.name, marks=[pytest.mark.slow] if c.slow else []) for c in CONFIGS if c.holds],
)
def test_the_chosen_protocol_holds(name: str) -> None:
    got = check(BY_NAME[name])
    assert got.errors == 0, got.output[-3000:]
    assert got.states > 1000  # it searched, rather than stopping at the start


def test_taking_the_seq_before_adding_to_the_buckets_leaves_two_originals() -> None:
    """Step order matters: with the seq taken first, a later seq reads its buckets before an
    earlier article is in them, and both are originals."""
    got = check(BY_NAME["seq-first-3"])
    assert got.errors == 1
    originals = [line for line in got.trail if line.endswith("): original")]
    assert len(originals) == 2
