"""Fixtures of the stream tests."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.stream.compiled_core import HOW, REQUIRED, import_compiled


@pytest.fixture(scope="module")
def kernel() -> ModuleType:
    """The compiled core: a failure when ``make test`` requires it, else a skip."""
    found = import_compiled()
    if found is None:
        if REQUIRED:
            pytest.fail(HOW)
        pytest.skip(HOW)
    return found
