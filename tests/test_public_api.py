"""Public surfaces: every module's ``__all__`` is honest and ``sketch.__all__`` is the pinned,
small surface a user of the library needs.

(The direction of dependencies between packages is checked by ``tests/test_layout.py``.)
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

from neardup import sketch, stream


def _modules(package: ModuleType) -> list[ModuleType]:
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        found.append(importlib.import_module(info.name))
    return found


MODULES = _modules(sketch) + _modules(stream)
SKETCH_MODULES = [m for m in _modules(sketch) if m is not sketch]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_all_lists_existing_names_once(module: ModuleType) -> None:
    names = module.__all__
    assert len(set(names)) == len(names)
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{module.__name__}.__all__ names what it lacks: {missing}"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_all_lists_every_public_class_and_function(module: ModuleType) -> None:
    defined = {
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and obj.__module__ == module.__name__
    }
    assert not defined - set(module.__all__), f"{module.__name__}: not in __all__"


# What a user of the library needs, from a text to its candidates and their verification (the
# reason for each is in the package's docstring): a name added or dropped is a decision, here.
SKETCH_SURFACE = {
    "normalize",
    "shingle_hashes",
    "MinHasher",
    "Signature",
    "SchemeMismatch",
    "estimate_jaccard",
    "optimal_params",
    "recall_floor_params",
    "candidate_probability",
    "band_keys",
    "simhash_one",
    "hamming_many",
    "HammingIndex",
    "design",
    "table_keys",
    "jaccard",
    "containment",
    "edit_similarity",
}


def test_sketch_exports_exactly_its_surface() -> None:
    """``sketch.__all__`` is the pinned surface, each name its owning module's object and in that
    module's ``__all__``; the package holds no other public name but its modules (internals are
    imported from their own modules)."""
    assert set(sketch.__all__) == SKETCH_SURFACE
    for name in sketch.__all__:
        obj = getattr(sketch, name)
        owner = importlib.import_module(obj.__module__)
        assert owner in SKETCH_MODULES and name in owner.__all__, name
        assert getattr(owner, name) is obj, name
    public = {
        n for n, v in vars(sketch).items() if not n.startswith("_") and not inspect.ismodule(v)
    }
    assert public == SKETCH_SURFACE


def test_each_surface_name_is_documented_in_the_package() -> None:
    doc = sketch.__doc__ or ""
    assert all(f"`{name}`:" in doc for name in SKETCH_SURFACE)


def test_ambiguous_names_stay_modules_or_qualified() -> None:
    assert sketch.simhash is importlib.import_module("neardup.sketch.simhash")
    assert sketch.hamming is importlib.import_module("neardup.sketch.hamming")
    assert "DEFAULT_SEED" not in sketch.__all__
