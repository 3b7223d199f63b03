"""The randomized lifecycle checker (harness/lifecycle.py) on the memory store: seeds pass, and
a rebuild that forgets the namespace's deleted ids, or what the workers did while it ran, is
caught with its schedule."""

from __future__ import annotations

import pytest

from harness import lifecycle
from neardup.stream.engine import reindex
from neardup.stream.index.memory import MemoryIndex


@pytest.mark.parametrize("seed", range(1, 9))
async def test_a_namespaces_life_keeps_takedowns_articles_and_one_original(seed: int) -> None:
    assert await lifecycle.run(seed) == []


async def test_a_rebuild_that_forgets_takedowns_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    async def forget(self: MemoryIndex, ns: str) -> dict[str, float]:
        return {}  # the planted bug: a rebuild that ignores the deleted-id memory

    monkeypatch.setattr(MemoryIndex, "read_deleted", forget)
    found = [await lifecycle.run(seed) for seed in range(1, 9)]
    failed = [f for f in found if f]
    assert failed and any("taken down and is back" in line for f in failed for line in f)
    assert all("schedule:" in f for f in failed)


async def test_a_rebuild_that_drops_what_arrived_meanwhile_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def nothing(*args: object) -> None:
        return None  # the planted bug: no carry-over after the switch

    monkeypatch.setattr(reindex, "_carry_over", nothing)
    found = [await lifecycle.run(seed) for seed in range(1, 9)]
    assert any("registered and is lost" in line for f in found for line in f)
