"""What the command line's commands share: reading an input file of JSON lines, opening the
index a ``--store`` names, and retrying calls while that index is unavailable
(``neardup.stream.cli.main``'s commands and ``neardup.stream.cli.admin``'s)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit

import typer
from rich.console import Console

from neardup.stream.backoff import backoff
from neardup.stream.errors import IndexCredentialsError, IndexUnavailableError, NeardupError
from neardup.stream.index.base import Index
from neardup.stream.index.memory import MemoryIndex

err = Console(stderr=True)  # messages are printed soft_wrap: one line, never cut at 80 columns
RETRY_FOR_S = 120.0  # how long dedup and delete wait for an index that became unavailable
FIRST_CONTACT_S = 5.0  # how long they wait for one that never answered (a wrong URL, say)
SAY_EVERY_S = 10.0  # while waiting, one line at first and then at most one per this many seconds
T = TypeVar("T")


def open_input(path: Path) -> IO[bytes]:
    if str(path) == "-":
        return sys.stdin.buffer
    if not path.exists():
        raise typer.BadParameter(f"no such file: {path}", param_hint="INPUT")
    raw = path.open("rb")
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


@contextlib.asynccontextmanager
async def open_index(
    store: str, cluster: bool = False, wait_replicas: int = 0
) -> AsyncIterator[Index]:
    if store == "memory":
        if cluster:
            raise typer.BadParameter("--redis-cluster needs a redis:// store", param_hint="--store")
        if wait_replicas:
            raise typer.BadParameter(
                "--redis-wait-replicas needs a redis:// store", param_hint="--store"
            )
        yield MemoryIndex()
        return
    if not store.startswith(("redis://", "rediss://", "unix://")):
        raise typer.BadParameter("use 'memory' or a redis:// URL", param_hint="--store")
    import redis.asyncio as aioredis

    from neardup.stream.index.redis.clients import redis_cluster_client
    from neardup.stream.index.redis.index import RedisIndex

    # the worker's password setting, unless the URL carries one (it should not: see SECURITY.md)
    extra: dict[str, Any] = {}
    password = os.environ.get("NEARDUP_REDIS_PASSWORD")
    if password and not urlsplit(store).password:
        extra["password"] = password
    client = (
        redis_cluster_client(store, **extra) if cluster else aioredis.Redis.from_url(store, **extra)
    )
    try:
        index = RedisIndex(client, wait_replicas=wait_replicas)
        try:
            await retrying(index.load_functions, FIRST_CONTACT_S)
        except IndexCredentialsError:
            raise
        except IndexUnavailableError as exc:
            raise IndexUnavailableError(
                f"cannot reach Redis at {where(store)} (for {FIRST_CONTACT_S:.0f} s: {exc}); "
                "check --store or NEARDUP_REDIS_URL"
            ) from exc
        yield index
    finally:
        await client.aclose()


def where(store: str) -> str:
    """The host and port (or socket path) of a store URL, never its password."""
    parts = urlsplit(store)
    if parts.scheme == "unix":
        return parts.path
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"


def failure(command: str, exc: BaseException) -> str:
    """The one line a command prints when it gives up: the project's own errors by their
    message (it says what to do), anything else with its type."""
    if isinstance(exc, NeardupError):
        return f"neardup {command}: {exc}"
    return f"neardup {command}: {type(exc).__name__}: {exc}"


def input_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


async def retrying(call: Callable[[], Awaitable[T]], give_up_s: float = RETRY_FOR_S) -> T:
    """``call()`` again with backoff while the index is unavailable (a Redis restart, a cluster
    failover: replays are idempotent, so a batch tried twice keeps its verdicts); after
    ``give_up_s`` of it the error is raised."""
    delays = backoff(0.1, 2.0)
    deadline = time.monotonic() + give_up_s
    said = -SAY_EVERY_S
    while True:
        try:
            return await call()
        except NeardupError as exc:
            if not exc.retriable or isinstance(exc, IndexCredentialsError):
                raise  # a wrong password is not bad weather: said at once
            if time.monotonic() >= deadline:
                raise
            delay = next(delays)
            if time.monotonic() - said >= SAY_EVERY_S:
                said = time.monotonic()
                err.print(f"index unavailable ({exc}); retrying", markup=False, soft_wrap=True)
            await asyncio.sleep(delay)


__all__ = [
    "FIRST_CONTACT_S",
    "RETRY_FOR_S",
    "err",
    "failure",
    "input_lines",
    "open_index",
    "open_input",
    "retrying",
    "where",
]
