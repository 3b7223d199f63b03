"""``pip install neardup``, for real: the wheel built from this tree installed with its
dependencies (from the package index pip is configured with) into a fresh venv, without extras.

The base install judges on memory (``neardup dedup``, :class:`neardup.Index`), holds none of
the extras' packages, says which extra the worker and a Redis store need, and weighs what its
site-packages weigh (printed; before the extras split it was 191 MB with faust, aiokafka,
aiohttp and redis)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.data import reuters

ROOT = Path(__file__).resolve().parents[2]
# the extras' packages (and theirs): none is in the base install
EXTRA_DISTRIBUTIONS = {
    "faust_streaming",
    "aiokafka",
    "aiohttp",
    "redis",
    "hiredis",
    "pydantic",
    "pydantic_settings",
    "prometheus_client",
    "python_json_logger",
    "cramjam",
    "trafilatura",
    "pyarrow",
}
# the base's site-packages (numpy, rapidfuzz, rich with pygments, typer) with room to spare:
# well under the 191 MB of the install that brought the worker's stack
MAX_MB = 150


def _run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``argv`` outside this tree's venv: no VIRTUAL_ENV or PYTHON* variable of the test run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    return subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env=env,
        cwd=cwd,
    )


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the base install of the wheel built from this tree."""
    tmp = tmp_path_factory.mktemp("base-install")
    built = _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", tmp, ROOT)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp.glob("neardup-*.whl")
    made = _run(sys.executable, "-m", "venv", "--without-pip", tmp / "venv")
    assert made.returncode == 0, made.stderr
    python = tmp / "venv" / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet"]
    installed = _run(*pip, "--no-cache-dir", wheel)
    assert installed.returncode == 0, installed.stderr[-2000:]
    return tmp / "venv"


@pytest.mark.slow
def test_the_base_install_holds_none_of_the_extras(venv: Path) -> None:
    (site,) = venv.glob("lib/python3*/site-packages")
    dists = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert "neardup" in dists
    assert dists & EXTRA_DISTRIBUTIONS == set()
    size = _size_mb(site)
    print(f"base install: {size:.1f} MB of site-packages, {len(dists)} distributions")
    assert size < MAX_MB


@pytest.mark.slow
def test_the_base_install_deduplicates_on_memory(venv: Path, tmp_path: Path) -> None:
    first, second = reuters()[0], reuters()[1]
    corpus = tmp_path / "corpus.jsonl"
    rows = [first, second, {"id": "copy", "text": "By a staff writer: " + first["text"]}]
    corpus.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in rows))
    done = _run(venv / "bin" / "neardup", "dedup", corpus, "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(v["verdict"], v["duplicate_of"]) for v in got] == [
        ("original", None),
        ("original", None),
        ("near_duplicate", first["id"]),
    ]
    code = "from neardup import Index\nprint(Index().add(5, 'a text of a few words').verdict)"
    library = _run(venv / "bin" / "python", "-c", code, cwd=tmp_path)
    assert (library.returncode, library.stdout) == (0, "original\n"), library.stderr


@pytest.mark.slow
def test_the_base_install_names_the_extra_a_command_needs(venv: Path, tmp_path: Path) -> None:
    worker = _run(venv / "bin" / "neardup", "worker", cwd=tmp_path)
    assert (worker.returncode, worker.stderr) == (
        2,
        "neardup worker: needs the stream extra: pip install 'neardup[stream]'\n",
    )
    redis = ("--store", "redis://localhost:6379/0")
    store = _run(venv / "bin" / "neardup", "dedup", "-", *redis, cwd=tmp_path)
    assert (store.returncode, store.stderr) == (
        2,
        "neardup dedup: a redis:// store needs the redis extra: pip install 'neardup[redis]'\n",
    )
