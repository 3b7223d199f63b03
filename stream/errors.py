"""Every error neardup raises on purpose, in one tree; ``retriable`` decides retry or dead letter.

::

    NeardupError                  retriable=False  reason="error"
    ├── ConflictError             retriable=False  reason="conflict"      same id, other text
    ├── InvalidMessage            retriable=False  reason=<per message>   also a ValueError
    ├── ClusterChainError         retriable=False  reason="cluster_chain" also a RuntimeError
    ├── MissingExtra              retriable=False  reason="missing_extra" also an ImportError
    ├── DeletedError              retriable=False  reason="deleted"       id taken down before
    ├── NamespacesFileError       retriable=False  reason="namespaces_file" also a ValueError
    ├── ClosedWebError            retriable=False  reason="closed_web"    also a ValueError
    ├── TableError                retriable=False  reason="table"         also a ValueError
    │   └── BrokenTableError      retriable=False  reason="table"         a file broke off
    └── IndexStoreError           retriable=False  reason="index"
        ├── IndexFileError        retriable=False  reason="index_file"    also a ValueError
        ├── SchemeMismatchError   retriable=False  reason="scheme_mismatch"
        ├── SeqExhaustedError     retriable=False  reason="seq_exhausted" counter at 2**53
        └── IndexUnavailableError retriable=True   reason="unavailable"

``reason`` is the short machine-readable word that dead letters, metrics and HTTP errors carry.
The dead-letter reasons are a contract: ``conflict``, ``scheme_mismatch``, ``seq_exhausted``,
those of :class:`InvalidMessage` (``invalid_json``, ``invalid_utf8``, ``not_object``,
``missing_id``, ``invalid_id``, ``missing_text``, ``empty_text``, ``oversize``,
``oversize_key``, ``invalid_namespace``, ``invalid_field``, ``empty_message``) and the
pipeline's own (``internal_error``, ``oversize_record``, ``corrupt_batch``). ``deleted`` is
never dead-lettered: a replay of a taken-down article is skipped and counted.

An error that belongs to one article (conflict, invalid message) is dead-lettered; an index
error stops the batch, which is retried with backoff when ``retriable``. Arguments that break a
documented precondition (a namespace outside ``names.NAMESPACE_RE``, ``Policy(threshold=2)``)
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

    def __reduce__(self) -> tuple[type[InvalidMessage], tuple[str, str]]:
        # the engine's refusal (empty_text) crosses from the /check process: pickled whole
        return (type(self), (self.reason, str(self)))


class ClusterChainError(NeardupError, RuntimeError):
    """A chain of undecided copies too long to resolve without exhausting Python's stack."""

    reason = "cluster_chain"


class NamespacesFileError(NeardupError, ValueError):
    """A namespaces file that cannot be used: its path, namespace and field are in the message
    (a configuration error: the worker refuses to start)."""

    reason = "namespaces_file"


class ClosedWebError(NeardupError, ValueError):
    """A worker that would serve writes and reads to anyone (no token, not on loopback, not
    opened by ``NEARDUP_WEB_OPEN``): it does not start (the message is one line, for the
    operator)."""

    reason = "closed_web"


class TableError(NeardupError, ValueError):
    """A corpus file that cannot be read as asked: an unknown extension, a column it lacks, not
    a file of its format, or pyarrow missing for Parquet (``neardup dedup`` exits 2)."""

    reason = "table"


class BrokenTableError(TableError):
    """A corpus file that broke off while it was read: a damaged .gz or Parquet page."""


class MissingExtra(NeardupError, ImportError):
    """Something needs an extra that is not installed; the message is one line that says which
    and how to install it (``what`` first, when given: the store, the command, the format)."""

    reason = "missing_extra"

    def __init__(self, extra: str, what: str = "", module: str | None = None) -> None:
        needs = f"{what} needs" if what else "needs"
        super().__init__(f"{needs} the {extra} extra: pip install 'neardup[{extra}]'", name=module)
        self.extra = extra
        self.what = what

    def __reduce__(self) -> tuple[type[MissingExtra], tuple[str, str, str | None]]:
        return (type(self), (self.extra, self.what, self.name))


class DeletedError(NeardupError):
    """The article id was deleted (taken down) and is still remembered: it is not registered
    again, so a replay of its old message cannot bring it back."""

    reason = "deleted"


class IndexStoreError(NeardupError):
    """Base of index errors."""

    reason = "index"


class IndexFileError(IndexStoreError, ValueError):
    """A saved index file that cannot be loaded (not one, another file format version, cut
    short or damaged), or an index that cannot be saved (its texts live in Redis): the path
    and what is wrong are in the message."""

    reason = "index_file"


class SchemeMismatchError(IndexStoreError):
    """The namespace was built with other sketch parameters; mixing them is meaningless."""

    reason = "scheme_mismatch"


class SeqExhaustedError(IndexStoreError):
    """The namespace's sequence counter reached 2**53 (the last number stored exactly); it is
    refused rather than wrapped, which would overwrite the namespace's first articles."""

    reason = "seq_exhausted"


class IndexUnavailableError(IndexStoreError):
    """The backing store cannot be reached (retry with backoff)."""

    retriable = True
    reason = "unavailable"


class IndexCredentialsError(IndexUnavailableError):
    """The store refused the credentials: a worker waits (they may be rotated back), a
    command says so at once."""


__all__ = [
    "BrokenTableError",
    "ClosedWebError",
    "ClusterChainError",
    "ConflictError",
    "DeletedError",
    "IndexCredentialsError",
    "IndexFileError",
    "IndexStoreError",
    "IndexUnavailableError",
    "InvalidMessage",
    "MissingExtra",
    "NamespacesFileError",
    "NeardupError",
    "SchemeMismatchError",
    "SeqExhaustedError",
    "TableError",
]
