"""The base install is the library and the batch command; Redis, the worker, pages and Parquet
are extras (pyproject's ``[project.optional-dependencies]``, :mod:`neardup.stream.extras`).

Checked in a fresh interpreter in which every module the extras install cannot be imported (a
``sys.meta_path`` finder refuses them, as an environment without them would): ``neardup`` starts,
``neardup dedup`` and :class:`neardup.Index` judge on memory, and what needs an extra says which
in one line (exit status 2 for a command, :class:`~neardup.stream.extras.MissingExtra` from the
library)."""

from __future__ import annotations

import json
import pickle
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import neardup
from harness.data import reuters
from neardup.stream.errors import NeardupError
from neardup.stream.extras import EXTRAS, MissingExtra

ROOT = Path(__file__).resolve().parent.parent
# what the extras install, with what those packages themselves import
BLOCKED = sorted(
    set().union(*EXTRAS.values())
    | {"mode", "aiohttp", "cramjam", "hiredis", "pydantic_core", "lxml", "pandas"}
)
BLOCKER = f"""
import sys

class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {BLOCKED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Absent())
"""
# The modules only the extras run: the worker (stream) and the Redis index's client side (redis).
EXTRA_MODULES = (
    "neardup.stream.worker.",
    "neardup.stream.index.redis.clients",
    "neardup.stream.index.redis.errors",
    "neardup.stream.index.redis.index",
)


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` after the blocker, in a fresh interpreter started in the repository."""
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )


def _neardup(*args: str) -> subprocess.CompletedProcess[str]:
    code = "sys.argv[0] = 'neardup'\nfrom neardup.stream.cli.main import main\nmain()"
    return _python(code, *args)


def _one_line(done: subprocess.CompletedProcess[str], line: str) -> None:
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")


def test_the_blocker_blocks() -> None:
    """Precondition: the extras' modules really are out of reach in the checks below."""
    done = _python("import redis")
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'redis'" in done.stderr


def test_version_and_help_need_no_extra() -> None:
    version = _neardup("--version")
    assert (version.returncode, version.stdout.split(" (core: ")[0]) == (
        0,
        f"neardup {neardup.__version__}",
    )
    helped = _neardup("--help")
    assert helped.returncode == 0, helped.stderr
    for command in ("dedup", "worker", "delete", "inspect", "reindex", "namespaces"):
        assert f" {command} " in helped.stdout
    assert _neardup("worker", "--help").returncode == 0


def test_dedup_on_memory_needs_no_extra(tmp_path: Path) -> None:
    first, second = reuters()[0], reuters()[1]
    rows = [
        {"id": first["id"], "text": first["text"]},
        {"id": second["id"], "text": second["text"]},
        {"id": "copy", "text": "By a staff writer: " + first["text"]},
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = _neardup("dedup", str(corpus), "--no-progress")
    assert done.returncode == 0, done.stderr
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(v["id"], v["verdict"], v["duplicate_of"]) for v in verdicts] == [
        (first["id"], "original", None),
        (second["id"], "original", None),
        ("copy", "near_duplicate", first["id"]),
    ]


def test_the_library_on_memory_needs_no_extra() -> None:
    text = reuters()[0]["text"]
    code = (
        "from neardup import Index\n"
        "with Index() as index:\n"
        f"    print(index.add('a', {text!r}).verdict)\n"
        f"    print(index.add(2, 'Reported: ' + {text!r}).duplicate_of)\n"
    )
    done = _python(code)
    assert (done.returncode, done.stdout) == (0, "original\na\n"), done.stderr


def test_every_module_outside_the_extras_imports_without_them() -> None:
    """The base path (neardup, its API, the command line and every command, the engine, the
    memory index, the schema, ...) imports none of the extras' modules at import time."""
    names = [m.name for m in pkgutil.walk_packages(neardup.__path__, "neardup.")]
    base = [n for n in names if not n.startswith(EXTRA_MODULES)]
    assert "neardup.stream.cli.main" in base and "neardup.stream.engine.engine" in base
    code = (
        "import importlib, json\nfailed = {}\n"
        f"for name in {base!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except ImportError as exc:\n        failed[name] = str(exc)\n"
        "print(json.dumps(failed))"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


def test_the_worker_names_the_stream_extra() -> None:
    line = "neardup worker: needs the stream extra: pip install 'neardup[stream]'"
    _one_line(_neardup("worker"), line)


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("dedup", ("-", "--store", "redis://localhost:6379/0")),
        ("delete", ("a", "--store", "redis://localhost:6379/0")),
        ("export", ("default", "--store", "rediss://localhost:6379/0")),
        ("namespaces drop", ("old", "--store", "unix:///tmp/redis.sock")),
    ],
)
def test_a_redis_store_names_the_redis_extra(command: str, args: tuple[str, ...]) -> None:
    _one_line(
        _neardup(*command.split(), *args),
        f"neardup {command}: a redis:// store needs the redis extra: pip install 'neardup[redis]'",
    )


def test_reading_an_index_names_the_redis_extra() -> None:
    """``inspect`` and ``namespaces`` read through the read API's models (pydantic)."""
    _one_line(
        _neardup("inspect", "a", "--store", "memory"),
        "neardup inspect: needs the redis extra: pip install 'neardup[redis]'",
    )
    _one_line(
        _neardup("namespaces", "--store", "memory"),
        "neardup namespaces: needs the redis extra: pip install 'neardup[redis]'",
    )


def test_the_kafka_side_of_delete_and_reindex_names_the_stream_extra() -> None:
    _one_line(
        _neardup("delete", "a", "--store", "memory", "--kafka-bootstrap", "localhost:9092"),
        "neardup delete: --kafka-bootstrap needs the stream extra: pip install 'neardup[stream]'",
    )
    _one_line(
        _neardup("reindex", "default", "--store", "memory", "--from-topic", "articles"),
        "neardup reindex: --from-topic needs the stream extra: pip install 'neardup[stream]'",
    )


def test_a_redis_index_from_python_names_the_redis_extra() -> None:
    code = (
        "from neardup import Index, NeardupError\n"
        "try:\n    Index('redis://localhost:6379/0')\n"
        "except (ImportError, NeardupError) as exc:\n"
        "    print(type(exc).__name__, isinstance(exc, ImportError), "
        "isinstance(exc, NeardupError))\n"
        "    print(exc)\n"
    )
    done = _python(code)
    assert (done.returncode, done.stdout) == (
        0,
        "MissingExtra True True\n"
        "a redis:// store needs the redis extra: pip install 'neardup[redis]'\n",
    ), done.stderr


def test_missing_extra_is_an_import_error_that_pickles() -> None:
    exc = MissingExtra("stream", "the worker", "faust")
    assert isinstance(exc, ImportError) and isinstance(exc, NeardupError)
    assert (exc.name, exc.extra, exc.reason) == ("faust", "stream", "missing_extra")
    again = pickle.loads(pickle.dumps(exc))
    assert (str(again), again.name) == (str(exc), "faust")


def test_a_missing_module_of_neardup_itself_is_not_blamed_on_an_extra() -> None:
    from neardup.stream import extras

    with pytest.raises(ModuleNotFoundError) as caught:
        extras.load("neardup.stream.no_such_module", "redis")
    assert not isinstance(caught.value, MissingExtra)


# --- the distribution's requirements -----------------------------------------------------------


def _requirements() -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = [Requirement(s) for s in project["dependencies"]]
    extras = {k: [Requirement(s) for s in v] for k, v in project["optional-dependencies"].items()}
    return base, extras


def test_the_base_install_has_no_redis_kafka_or_worker_stack() -> None:
    base, _ = _requirements()
    names = {r.name for r in base}
    assert names == {"numpy", "mmh3", "orjson", "typer", "rich", "rapidfuzz"}


def test_each_extra_brings_what_it_is_for() -> None:
    _, extras = _requirements()
    names = {k: {r.name: r for r in v} for k, v in extras.items()}
    assert set(names["redis"]) == {"redis", "pydantic"}
    assert names["redis"]["redis"].extras == {"hiredis"}
    assert set(names["stream"]) == {
        "neardup",
        "faust-streaming",
        "aiokafka",
        "cramjam",
        "pydantic-settings",
        "prometheus-client",
        "python-json-logger",
    }
    assert names["stream"]["neardup"].extras == {"redis"}  # a worker needs the shared index
    assert names["stream"]["aiokafka"].extras == {"lz4", "snappy", "zstd"}
    assert set(names["html"]) == {"trafilatura"} and set(names["parquet"]) == {"pyarrow"}
    assert names["dev"]["neardup"].extras == {"stream", "html", "parquet"}  # make install: all


def test_extras_module_names_the_extras_pyproject_declares() -> None:
    _, extras = _requirements()
    assert set(EXTRAS) == set(extras) - {"dev"}


def test_a_missing_extra_no_command_turned_into_its_line_is_said_by_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from neardup.stream.cli import main as cli

    def app() -> None:
        raise MissingExtra("html", "format 'page'", "trafilatura")

    monkeypatch.setattr(cli, "app", app)
    with pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code == 2
    line = "neardup: format 'page' needs the html extra: pip install 'neardup[html]'\n"
    assert capsys.readouterr().err == line


def test_a_command_that_fails_on_a_missing_extra_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from neardup.stream.cli.common import fail

    assert fail("export", MissingExtra("redis", "a redis:// store", "redis")).exit_code == 2
    assert capsys.readouterr().err == (
        "neardup export: a redis:// store needs the redis extra: pip install 'neardup[redis]'\n"
    )
    assert fail("export", OSError("gone")).exit_code == 1
