"""``neardup.__version__`` and ``neardup --version``: the installed package's metadata, and a
source tree's pyproject (or ``unknown``) when nothing is installed."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import pytest

import neardup
from neardup import _version
from neardup.stream import core

ROOT = Path(__file__).resolve().parent.parent
NEARDUP = Path(sys.executable).parent / "neardup"


def test_version_is_the_installed_metadata() -> None:
    assert neardup.__version__ == metadata.version("neardup")
    assert neardup.__version__.count(".") >= 2


def _not_installed(name: str) -> str:
    raise metadata.PackageNotFoundError(name)


def test_a_source_tree_not_installed_reads_its_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_version.metadata, "version", _not_installed)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    line = next(x for x in pyproject.splitlines() if x.startswith("version = "))
    assert _version.package_version() == line.split('"')[1]


@pytest.mark.parametrize(
    "text",
    [
        None,  # no pyproject beside the folder
        "not = [toml",
        '[project]\nname = "other"\nversion = "9.9.9"\n',  # a folder copied into another project
        '[project]\nname = "neardup"\ndynamic = ["version"]\n',
    ],
)
def test_otherwise_the_version_is_unknown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str | None
) -> None:
    monkeypatch.setattr(_version.metadata, "version", _not_installed)
    pyproject = tmp_path / "pyproject.toml"
    if text is not None:
        pyproject.write_text(text, encoding="utf-8")
    assert _version.package_version(pyproject) == "unknown"


def test_the_installed_command_prints_its_version() -> None:
    """As a user runs it: the console script, exit 0, ``neardup X.Y.Z (core: C)`` on stdout
    alone, C the core in use (:mod:`neardup.stream.core`; ``NEARDUP_CORE=python`` forces the
    reference).

    PYTHONPATH puts this tree's code first (the venv may hold another checkout, editable)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(core.ENV, None)
    out = subprocess.run(
        [str(NEARDUP), "--version"], capture_output=True, text=True, timeout=60, env=env
    )
    in_use = "compiled" if find_spec("neardup._core") else "python reference"
    assert (out.returncode, out.stdout, out.stderr) == (
        0,
        f"neardup {metadata.version('neardup')} (core: {in_use})\n",
        "",
    )
    forced = subprocess.run(
        [str(NEARDUP), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, core.ENV: "python"},
    )
    assert forced.stdout == f"neardup {metadata.version('neardup')} (core: python reference)\n"
    # listed among the options of `neardup --help`
    helped = subprocess.run(
        [str(NEARDUP), "--help"], capture_output=True, text=True, timeout=60, env=env
    )
    assert "--version" in helped.stdout
