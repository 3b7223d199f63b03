"""The optional parts of neardup, and the one-line error that names the extra to install.

``pip install neardup`` is the library (:class:`neardup.Index` on memory) and the batch command
(``neardup dedup`` on memory). The rest comes with extras (pyproject's
``[project.optional-dependencies]``):

- ``redis``: the shared index, a ``redis://`` store (redis; pydantic for the commands that read
  it through the read API's models: ``inspect``, ``namespaces``);
- ``stream``: the worker (faust-streaming, aiokafka; its settings, metrics and JSON logs), and
  the Kafka side of ``delete`` and ``reindex``; it brings ``redis`` too;
- ``html``: format ``page``, a whole web page read as its main content (trafilatura);
- ``parquet``: Parquet tables (pyarrow).

Whatever needs an extra imports through :func:`load` or asks :func:`require` first, so a missing
one is a :class:`MissingExtra` saying what to install, never a traceback from deep inside.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from neardup.stream.errors import MissingExtra

# The top-level modules each extra installs that neardup imports: what proves it installed.
EXTRAS: dict[str, tuple[str, ...]] = {
    "redis": ("redis", "pydantic"),
    "stream": (
        "redis",
        "pydantic",
        "faust",
        "aiokafka",
        "pydantic_settings",
        "prometheus_client",
        "pythonjsonlogger",
    ),
    "html": ("trafilatura",),
    "parquet": ("pyarrow",),
}


def load(module: str, extra: str, what: str = "") -> ModuleType:
    """``module`` imported, or :class:`MissingExtra` naming ``extra`` when it (or a package it
    imports) is not installed. A missing module of neardup's own is a bug: raised as it is."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] == "neardup":
            raise
        raise MissingExtra(extra, what, exc.name) from None


def require(extra: str, what: str = "") -> None:
    """Import each module ``extra`` installs (:data:`EXTRAS`), or raise :class:`MissingExtra`."""
    for module in EXTRAS[extra]:
        load(module, extra, what)


__all__ = ["EXTRAS", "MissingExtra", "load", "require"]
