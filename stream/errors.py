"""Every error neardup raises on purpose, in one tree; ``retriable`` decides retry or dead letter.

::

    NeardupError                  retriable=False  reason="error"
    ├── ConflictError             retriable=False  reason="conflict"      same id, other text
    ├── InvalidMessage            retriable=False  reason=<per message>   also a ValueError
    ├── ClusterChainError         retriable=False  reason="cluster_chain" also a RuntimeError
    └── IndexStoreError           retriable=False  reason="index"
        ├── SchemeMismatchError   retriable=False  reason="scheme_mismatch"
        └── IndexUnavailableError retriable=True   reason="unavailable"

``reason`` is the short machine-readable word that dead letters, metrics and HTTP errors carry.
The per-article reasons are a contract: ``conflict`` and those of :class:`InvalidMessage`
(``invalid_json``, ``invalid_utf8``, ``not_object``, ``missing_id``, ``invalid_id``,
``missing_text``, ``empty_text``, ``oversize``, ``invalid_namespace``, ``invalid_field``,
``empty_message``).

An error that belongs to one article (conflict, invalid message) is dead-lettered; an index
error stops the batch, which is retried with backoff when ``retriable``. Arguments that break a
documented precondition (a namespace outside ``keys.NAMESPACE_RE``, ``Policy(threshold=2)``)
raise ``ValueError``, as in the standard library, and so do the pure algorithms in ``sketch``,
which know nothing of this tree.
"""

from __future__ import annotations


class NeardupError(Exception):
    """Base of every neardup error; ``retriable`` says whether trying again can help."""

    retriable = False
    reason = "error"


class ConflictError(NeardupError):
    """The id was seen before with a different text: never overwritten silently."""

    reason = "conflict"


class InvalidMessage(NeardupError, ValueError):
    """A message that cannot become an article; it goes to the dead-letter topic."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ClusterChainError(NeardupError, RuntimeError):
    """A chain of undecided copies too long to resolve without exhausting Python's stack."""

    reason = "cluster_chain"


class IndexStoreError(NeardupError):
    """Base of index errors."""

    reason = "index"


class SchemeMismatchError(IndexStoreError):
    """The namespace was built with other sketch parameters; mixing them is meaningless."""

    reason = "scheme_mismatch"


class IndexUnavailableError(IndexStoreError):
    """The backing store cannot be reached (retry with backoff)."""

    retriable = True
    reason = "unavailable"


__all__ = [
    "ClusterChainError",
    "ConflictError",
    "IndexStoreError",
    "IndexUnavailableError",
    "InvalidMessage",
    "NeardupError",
    "SchemeMismatchError",
]
