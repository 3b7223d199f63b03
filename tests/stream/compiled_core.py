"""What the compiled core's tests share: whether the core must be there, how to build it, and
how two ``prepare`` results are compared field by field."""

from __future__ import annotations

import os
from dataclasses import fields
from types import ModuleType

import numpy as np

from neardup.stream.engine.prepare import Prepared

REQUIRED = os.environ.get("NEARDUP_REQUIRE_CORE") == "1"  # make test and make unit set it
HOW = (
    "the compiled core is not built: install cargo, then `make install` "
    "(or `pip install -e .`) builds neardup/_core from core/"
)


def import_compiled() -> ModuleType | None:
    try:
        from neardup import _core
    except ImportError:
        return None
    return _core


def same_prepared(a: list[Prepared], b: list[Prepared]) -> None:
    """Every field of every ``Prepared`` equal (arrays by dtype and value)."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for f in fields(Prepared):
            u, v = getattr(x, f.name), getattr(y, f.name)
            if isinstance(u, np.ndarray):
                assert u.dtype == v.dtype and np.array_equal(u, v), (x.article.id, f.name)
            else:
                assert u == v, (x.article.id, f.name)
