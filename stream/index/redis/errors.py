"""What a Redis error means for the index: retry later, refuse, or a bug.

Errors: connection errors, and the answers of a server that is there but cannot serve now (OOM,
READONLY after a failover, LOADING, BUSY, TRYAGAIN, MOVED/ASK, CLUSTERDOWN, MASTERDOWN,
NOREPLICAS), are :class:`~neardup.stream.errors.IndexUnavailableError` (retriable); any other error
reply (a wrong argument: a bug) is raised as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    ClusterDownError,
    ClusterError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from neardup.stream.errors import IndexCredentialsError, IndexUnavailableError, SeqExhaustedError
from neardup.stream.index.base import scheme_mismatch

# Error replies of a server that is there but cannot serve now. In a pipeline redis-py puts
# "Command # n (...) of pipeline caused error: " and the reply's repr before the code.
_AT = r"(?:^|caused error: \(?['\"]?)"
_TRANSIENT = re.compile(
    _AT + r"(OOM|READONLY|LOADING|BUSY|TRYAGAIN|MOVED|ASK|CLUSTERDOWN|MASTERDOWN|NOREPLICAS)\b"
)
_SCHEME = re.compile(_AT + r"NEARDUP_SCHEME (.*\|shard_bits=\d+|.*)", re.DOTALL)
_EXHAUSTED = re.compile(_AT + r"NEARDUP_SEQ_EXHAUSTED\b")
# ... and the codes redis-py turns into classes of their own, dropping the code from the message
# (AskError covers MOVED, ClusterDownError MASTERDOWN; LOADING is a ConnectionError subclass).
_TRANSIENT_CLASSES: dict[type[ResponseError], str] = {
    OutOfMemoryError: "OOM",
    ReadOnlyError: "READONLY",
    TryAgainError: "TRYAGAIN",
    AskError: "MOVED/ASK",
    ClusterDownError: "CLUSTERDOWN",
}


def _cluster_unavailable(exc: BaseException) -> bool:
    """Cluster client errors that say "not now": no node serves the slot, retries ran out, or no
    node of the cluster answers. (Its other errors, e.g. keys of several slots, are bugs.)"""
    if isinstance(exc, (SlotNotCoveredError, ClusterError)):
        return True
    return isinstance(exc, RedisClusterException) and "cannot be connected" in str(exc)


# WAIT sent to a node that is a replica now: a failed primary restarted and rejoined as the
# replica of the one promoted, while this client's slot table still names it (the calls before
# the WAIT were redirected; the next attempt routes by the table they refreshed).
_WAIT_ON_REPLICA = re.compile(r"WAIT cannot be used with replica")


def _transient(exc: ResponseError) -> str | None:
    """The error code of a reply that says "not now" rather than "wrong", if it is one."""
    for cls, code in _TRANSIENT_CLASSES.items():
        if isinstance(exc, cls):
            return code
    if _WAIT_ON_REPLICA.search(str(exc)):
        return "WAIT on a replica"
    found = _TRANSIENT.search(str(exc))
    return found.group(1) if found else None


@contextmanager
def index_errors(
    ns: str = "", mine: bytes = b"", lost: Callable[[], None] = lambda: None
) -> Iterator[None]:
    """redis-py's errors as the index's: unavailable (retriable), the namespace's scheme (``mine``)
    or counter refused, or raised as they are (a wrong argument is a bug, not bad weather).
    ``lost``: called when the server lost the neardup functions (they are loaded again)."""
    try:
        yield
    except (AuthenticationError, AuthenticationWrongNumberOfArgsError) as exc:
        # a command says so at once; a worker waits (the password may be rotated back)
        raise IndexCredentialsError(
            f"Redis refused the credentials ({exc}): check NEARDUP_REDIS_PASSWORD and the "
            "user in NEARDUP_REDIS_URL"
        ) from exc
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise IndexUnavailableError(f"Redis unavailable: {exc}") from exc
    except (RedisClusterException, ClusterError) as exc:
        if _cluster_unavailable(exc):
            raise IndexUnavailableError(f"Redis Cluster unavailable: {exc}") from exc
        raise
    except ResponseError as exc:
        text = str(exc)
        if "function not found" in text.lower():
            # A restarted server without persistence lost the library: reload, then retry.
            lost()
            raise IndexUnavailableError(f"Redis lost the neardup functions: {exc}") from exc
        if code := _transient(exc):
            raise IndexUnavailableError(f"Redis cannot serve now ({code}): {exc}") from exc
        if scheme := _SCHEME.search(text):
            stored = scheme.group(1).encode()
            raise scheme_mismatch(ns, stored, mine) from exc
        if _EXHAUSTED.search(text):
            raise SeqExhaustedError(f"namespace {ns!r}: {exc}") from exc
        raise


__all__ = ["index_errors"]
