"""The layout's one-way dependencies, checked on the source: ``stream`` imports ``sketch``, never
the reverse; the product never imports the dev-only ``harness``, ``bench`` or ``tests``; tests
never import ``bench``; and no code names a path outside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "sketch": {"stream", "harness", "bench", "tests"},
    "stream": {"harness", "bench", "tests"},
    "harness": {"bench", "tests"},
    "tests": {"bench"},
}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_point_one_way(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files
    wrong = {
        str(f.relative_to(ROOT)): sorted(_imported_packages(f) & FORBIDDEN[package]) for f in files
    }
    assert {f: w for f, w in wrong.items() if w} == {}


def test_no_code_reads_outside_the_repository() -> None:
    outside = re.compile(r"\.\./shared|shared/data|parents\[[3-9]\]")
    code = [
        p
        for pattern in ("*.py", "*.sh", "*.toml", "Makefile")
        for p in ROOT.rglob(pattern)
        if not {".venv", ".venv-helm", ".git", ".services"} & set(p.relative_to(ROOT).parts)
    ]
    assert code
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in code
        if p != Path(__file__).resolve()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if outside.search(line)
    ]
    assert hits == []
