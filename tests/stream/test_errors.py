"""One error tree: every error neardup defines derives from ``NeardupError`` and says whether a
retry can help; reasons are the documented contract."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from neardup import stream
from neardup.stream import errors
from neardup.stream.errors import (
    ClusterChainError,
    ConflictError,
    IndexCredentialsError,
    IndexStoreError,
    IndexUnavailableError,
    InvalidMessage,
    NeardupError,
    SchemeMismatchError,
)


def _stream_exceptions() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(stream.__path__, "neardup.stream."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__.startswith("neardup.stream")
            ):
                found.append(obj)
    return found


def test_every_stream_error_is_in_the_tree_and_defined_in_errors() -> None:
    found = _stream_exceptions()
    assert found
    for exc in found:
        assert issubclass(exc, NeardupError), exc
        assert exc.__module__ == errors.__name__, f"{exc} is defined outside neardup.stream.errors"


def test_only_an_unreachable_store_is_retriable() -> None:
    retriable = {e for e in _stream_exceptions() if e.retriable}
    # refused credentials are the store being unreachable to a worker (it waits for them)
    assert retriable == {IndexUnavailableError, IndexCredentialsError}


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (ConflictError("x"), "conflict"),
        (InvalidMessage("missing_id", "x"), "missing_id"),
        (SchemeMismatchError("x"), "scheme_mismatch"),
        (IndexUnavailableError("x"), "unavailable"),
        (ClusterChainError("x"), "cluster_chain"),
    ],
)
def test_reasons(exc: NeardupError, reason: str) -> None:
    assert exc.reason == reason
    assert str(exc) == "x"


def test_the_tree_keeps_the_builtin_bases_callers_may_catch() -> None:
    assert issubclass(InvalidMessage, ValueError)
    assert issubclass(ClusterChainError, RuntimeError)
    assert issubclass(SchemeMismatchError, IndexStoreError)
    assert issubclass(IndexUnavailableError, IndexStoreError)
    assert not issubclass(ConflictError, IndexStoreError)  # per article: dead-lettered


def test_an_invalid_message_crosses_a_process_whole() -> None:
    """The /check process sends the engine's refusal (empty_text) back pickled."""
    import pickle

    got = pickle.loads(pickle.dumps(InvalidMessage("empty_text", "text shows nothing")))
    assert isinstance(got, InvalidMessage) and got.reason == "empty_text"
    assert str(got) == "text shows nothing"
