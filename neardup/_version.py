"""The version of neardup, as ``neardup --version`` and ``neardup.__version__`` give it.

The installed distribution's metadata is the one source (pyproject's ``version`` becomes it at
build time). A source tree that was never installed has no metadata: its pyproject then says
the version, and anything else (a copied folder) says ``unknown`` rather than a guessed number.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

UNKNOWN = "unknown"
# the repository's pyproject, beside the neardup folder of a source tree
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def package_version(pyproject: Path = PYPROJECT) -> str:
    """The installed neardup's version, else the source tree's pyproject's, else ``unknown``."""
    try:
        return metadata.version("neardup")
    except metadata.PackageNotFoundError:
        return source_version(pyproject)


def source_version(pyproject: Path) -> str:
    """``[project] version`` of a neardup pyproject; ``unknown`` if there is none or it is not
    neardup's (a folder copied into another project)."""
    import tomllib  # only here: an installed neardup (the usual case) never reads a pyproject

    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return UNKNOWN
    version = project.get("version")
    if project.get("name") != "neardup" or not isinstance(version, str):
        return UNKNOWN
    return version


__all__ = ["UNKNOWN", "package_version", "source_version"]
