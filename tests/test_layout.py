"""The layout's one-way dependencies, checked on the source.

Between folders: ``stream`` imports ``sketch``, never the reverse; the product never imports the
dev-only ``harness``, ``bench`` or ``tests``; tests never import ``bench``; and no code names a
path outside the repository. Inside ``stream``: each subpackage imports only those below it
(:data:`STREAM_LAYERS`), and no module reaches back to itself through its imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What each top-level folder never imports; ``neardup.sketch`` and ``neardup.stream`` are the
# installed names of the sketch/ and stream/ folders.
FORBIDDEN = {
    "neardup": {"harness", "bench", "tests"},
    "sketch": {"neardup.stream", "neardup.api", "harness", "bench", "tests"},
    "stream": {"neardup.api", "harness", "bench", "tests"},
    "harness": {"bench", "tests"},
    "tests": {"bench"},
}
# The layers of ``stream``, bottom first: a module imports from its own layer or below. The
# modules directly in stream/ (errors, model, records, schema, extract, backoff) are the floor.
STREAM_LAYERS = ("", "index", "namespaces", "engine", "worker", "cli")


def _imports(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports: ``from a import b`` gives ``a.b`` when that is
    a module of the product, else ``a`` (a name from its ``__init__``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue  # for the type checker only: never imported at run time
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{alias.name}" for alias in node.names}
            found |= (subs & _MODULES) or {node.module}
            if subs - _MODULES:
                found.add(node.module)
    return found


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _module_name(path: Path) -> str:
    """The import name of a product file: sketch/ and stream/ install under ``neardup``."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts if parts[0] == "neardup" else ("neardup", *parts))


_MODULES = {_module_name(f) for top in ("sketch", "stream", "neardup") for f in _sources(top)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_point_one_way(package: str) -> None:
    files = _sources(package)
    assert files
    wrong = {
        str(f.relative_to(ROOT)): sorted(
            {n for n in _imports(f) for bad in FORBIDDEN[package] if _under(n, bad)}
        )
        for f in files
    }
    assert {f: w for f, w in wrong.items() if w} == {}


def _stream_layer(module: str) -> int:
    """The layer of a ``neardup.stream`` module: its first folder under stream/, or the floor."""
    parts = module.split(".")[2:]
    top = parts[0] if len(parts) > 1 or (parts and parts[0] in STREAM_LAYERS) else ""
    return STREAM_LAYERS.index(top) if top in STREAM_LAYERS else 0


def test_stream_layers_point_down() -> None:
    up = {}
    for f in _sources("stream"):
        me = _stream_layer(_module_name(f))
        above = sorted(
            n for n in _imports(f) if _under(n, "neardup.stream") and _stream_layer(n) > me
        )
        if above:
            up[str(f.relative_to(ROOT))] = above
    assert up == {}


def test_the_layer_check_sees_each_layer() -> None:
    assert _stream_layer("neardup.stream.errors") == 0
    assert _stream_layer("neardup.stream.index.redis.keys") == 1
    assert _stream_layer("neardup.stream.engine") == 3
    assert _stream_layer("neardup.stream.cli.main") == 5
    assert _stream_layer("neardup.stream.worker.http.web") == 4


def _graph() -> dict[str, set[str]]:
    """Module -> the product modules it imports (anywhere in the file, lazily too)."""
    files = {_module_name(f): f for top in ("sketch", "stream") for f in _sources(top)}
    return {m: {n for n in _imports(f) if n in files and n != m} for m, f in files.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as the modules on it, or [] (depth-first, colouring)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str]:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*stack[stack.index(n) :], n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return []

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return []


def test_no_module_imports_itself_back() -> None:
    graph = _graph()
    assert len(graph) > 40
    assert _cycle(graph) == []


def test_the_cycle_check_sees_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


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


def test_the_tests_mirror_the_packages() -> None:
    """tests/sketch and tests/stream, and the folders of tests/integration, follow the product's
    folders, so a module's tests are found where the module is; test file names stay unique,
    because the test folders are not packages."""
    folders = [p for p in (ROOT / "tests").rglob("*") if p.is_dir() and p.name != "__pycache__"]
    for folder in folders:
        parts = folder.relative_to(ROOT / "tests").parts
        if parts[0] in ("sketch", "stream"):
            assert (ROOT / Path(*parts)).is_dir(), folder
        elif parts[0] == "integration" and len(parts) > 1:
            assert (ROOT / "stream" / Path(*parts[1:])).is_dir(), folder
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert len(names) > 80
    assert sorted({n for n in names if names.count(n) > 1}) == []
