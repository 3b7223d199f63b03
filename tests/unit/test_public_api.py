"""Public surfaces: every module's ``__all__`` is honest and ``sketch.__all__`` is complete.

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


def test_sketch_all_is_complete() -> None:
    """Every name a sketch module exports is in ``sketch.__all__``, as the same object, unless it
    is ambiguous at the package level: then it stays qualified by its module, which is listed."""
    owners: dict[str, set[int]] = {}
    for module in SKETCH_MODULES:
        for name in module.__all__:
            owners.setdefault(name, set()).add(id(getattr(module, name)))
    submodules = {m.__name__.rsplit(".", 1)[1] for m in SKETCH_MODULES}
    assert submodules <= set(sketch.__all__)
    for module in SKETCH_MODULES:
        for name in module.__all__:
            ambiguous = len(owners[name]) > 1 or name in submodules
            if ambiguous:  # qualified: absent from the package, or the name of a module
                assert name not in sketch.__all__ or name in submodules
                continue
            assert name in sketch.__all__, f"sketch.__all__ lacks {module.__name__}.{name}"
            assert getattr(sketch, name) is getattr(module, name)
    exported = {n for m in SKETCH_MODULES for n in m.__all__} | submodules
    assert set(sketch.__all__) <= exported, "sketch.__all__ names what no module exports"


def test_ambiguous_names_stay_modules_or_qualified() -> None:
    assert sketch.simhash is importlib.import_module("neardup.sketch.simhash")
    assert sketch.hamming is importlib.import_module("neardup.sketch.hamming")
    assert "DEFAULT_SEED" not in sketch.__all__
