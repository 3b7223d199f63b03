"""The layout's one-way dependencies, checked on the source: ``stream`` imports ``sketch``, never
the reverse; the product never imports the dev-only ``harness``, ``bench`` or ``tests``; tests
never import ``bench``; and no code names a path outside the repository."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "neardup": {"harness", "bench", "tests"},
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


def _reaches_outside(path: Path, root: Path = ROOT) -> list[int]:
    """Lines where code names a path above the repository: ``Path(__file__).parents[k]`` with k
    at or past the file's depth, or (outside tests, whose hostile inputs may look like paths) a
    string literal that climbs with ``../``."""
    depth = len(path.relative_to(root).parts)
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    in_tests = path.relative_to(root).parts[0] == "tests"
    lines = []
    for node in ast.walk(tree):
        climbs = (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
            and node.slice.value >= depth
        )
        literal = not in_tests and isinstance(node, ast.Constant) and isinstance(node.value, str)
        if climbs or (literal and "../" in node.value):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_code_reads_outside_the_repository() -> None:
    skip = {".venv", ".venv-helm", ".git", ".services"}
    code = [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]
    assert len(code) > 50
    hits = {str(p.relative_to(ROOT)): n for p in code if (n := _reaches_outside(p))}
    assert hits == {}
    for text in ("Makefile", ".ci/run", "pyproject.toml"):
        assert "../" not in (ROOT / text).read_text(encoding="utf-8"), text


def test_the_outside_check_sees_a_climb(tmp_path: Path) -> None:
    probe = tmp_path / "harness" / "probe.py"
    probe.parent.mkdir()
    probe.write_text('from pathlib import Path\nD = Path(__file__).parents[2] / "x"\nE = "../y"\n')
    assert _reaches_outside(probe, tmp_path) == [2, 3]
    probe.write_text('from pathlib import Path\nD = Path(__file__).parents[1] / "x"\n')
    assert _reaches_outside(probe, tmp_path) == []
