"""Verdicts do not change by accident: ``neardup dedup`` on the recorded inputs, memory and
Redis, gives exactly the verdicts recorded in ``tests/golden`` (see :mod:`harness.golden`)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from redis.asyncio import Redis

from harness import golden


def _lines(path: Path) -> list[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return fh.read().splitlines()


def _assert_same(name: str, out: Path) -> None:
    want, got = _lines(golden.expected(name)), _lines(out)
    assert len(got) == len(want) == len(_lines(golden.inputs()[name]))
    diff = [i for i, (a, b) in enumerate(zip(want, got, strict=True)) if a != b]
    assert not diff, f"{len(diff)} verdicts differ, first at line {diff[0] + 1}: {got[diff[0]]!r}"


@pytest.mark.parametrize("name", sorted(golden.inputs()))
def test_memory_store_gives_the_recorded_verdicts(name: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    golden.dedup(golden.inputs()[name], out)
    _assert_same(name, out)


@pytest.mark.parametrize("name", sorted(golden.inputs()))
async def test_redis_store_gives_the_recorded_verdicts(
    name: str, tmp_path: Path, redis_client: Redis, redis_url: str
) -> None:
    out = tmp_path / "out.jsonl"
    golden.dedup(golden.inputs()[name], out, "--store", redis_url)
    _assert_same(name, out)
