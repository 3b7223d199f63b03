"""What the command line's commands share, kept in one module that imports none of them (so no
command module imports another): reading an input file of JSON lines, opening the index a
``--store`` names, retrying calls while that index is unavailable, the consoles, the options the
admin commands have in common, and how a command says it gives up."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import typer
from rich.console import Console

from neardup.stream import extras
from neardup.stream.backoff import backoff
from neardup.stream.errors import IndexCredentialsError, IndexUnavailableError, NeardupError
from neardup.stream.index.base import Index
from neardup.stream.index.memory import MemoryIndex

err = Console(stderr=True)  # messages are printed soft_wrap: one line, never cut at 80 columns
out = Console()  # the admin commands' tables
# Help texts are read as Markdown: reST's ``code`` is inline code there and a bracketed word such
# as [namespace.NAME] stays text (rich markup would take it for a style tag and drop it), and
# paragraphs are reflowed to the terminal instead of breaking where the docstring's lines do.
HELP_MARKUP: Literal["markdown"] = "markdown"
RETRY_FOR_S = 120.0  # how long dedup and delete wait for an index that became unavailable
FIRST_CONTACT_S = 5.0  # how long they wait for one that never answered (a wrong URL, say)
SAY_EVERY_S = 10.0  # while waiting, one line at first and then at most one per this many seconds
T = TypeVar("T")

REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def command_name(ctx: typer.Context) -> str:
    """``neardup`` and the command's words (``neardup namespaces drop``), however it was run."""
    words = []
    at: Any = ctx
    while at.parent is not None:
        words.append(at.info_name or "")
        at = at.parent
    return " ".join(["neardup", *reversed(words)])


def require_extra(command: str, extra: str, what: str = "", module: str | None = None) -> None:
    """The extra a command needs (:mod:`neardup.stream.extras`; only ``module`` of it when
    given: what the command imports next), or one line on stderr saying which to install and
    exit status 2, before the command starts anything."""
    try:
        if module is None:
            extras.require(extra, what)
        else:
            extras.load(module, extra, what)
    except extras.MissingExtra as exc:
        err.print(f"{command}: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None


def store_extra(ctx: typer.Context, store: str | None) -> str | None:
    """``--store``'s check: a redis:// store needs the redis extra, said as the command starts
    (the Redis client only: :func:`open_index` imports it next)."""
    if store is not None and store.startswith(REDIS_SCHEMES):
        require_extra(command_name(ctx), "redis", "a redis:// store", "redis.asyncio")
    return store


Store = Annotated[
    str,
    typer.Option(
        envvar="NEARDUP_REDIS_URL",
        help="the index: a redis:// URL (its password from NEARDUP_REDIS_PASSWORD)",
        callback=store_extra,
    ),
]
Cluster = Annotated[bool, typer.Option(help="the --store URL is a node of a Redis Cluster")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def open_input(path: Path) -> IO[bytes]:
    if str(path) == "-":
        return sys.stdin.buffer
    if not path.exists():
        raise typer.BadParameter(f"no such file: {path}", param_hint="INPUT")
    if path.suffix == ".gz":  # its own file, closed with it
        return gzip.GzipFile(filename=path, mode="rb")  # type: ignore[return-value]
    return path.open("rb")


def consumed(stream: IO[bytes]) -> int:
    """Bytes read so far of a file :func:`open_input` opened (compressed bytes for .gz), for a
    progress bar; 0 where it cannot tell (a pipe)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        inner = getattr(stream, "fileobj", stream)
        return int(inner.tell())
    return 0


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
    if not store.startswith(REDIS_SCHEMES):
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


def fail(command: str, exc: BaseException) -> typer.Exit:
    """Print :func:`failure`'s line; the exit to raise: status 1, or 2 for a missing extra (what
    to install, as :func:`require_extra` says it)."""
    err.print(failure(command, exc), markup=False, soft_wrap=True)
    return typer.Exit(2 if isinstance(exc, extras.MissingExtra) else 1)


def check_namespace_arg(command: str, ns: str) -> None:
    """A namespace given on the command line, or its rule on stderr and exit status 2."""
    from neardup.stream.names import check_namespace

    try:
        check_namespace(ns)
    except ValueError as exc:
        err.print(f"neardup {command}: {exc}", markup=False)
        raise typer.Exit(2) from None


def progress_bar(what: str, *, disable: bool = False) -> Any:
    """The admin commands' progress bar on stderr (rich's, imported when one is made); shown
    only on a terminal."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn(f"[bold]{what}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=disable or not err.is_terminal,
    )


class NoProgress(contextlib.nullcontext[None]):
    """What ``--no-progress`` shows: nothing, without importing rich's progress display."""

    def add_task(self, description: str, **fields: Any) -> int:
        return 0

    def update(self, task: int, **fields: Any) -> None:
        return None


def rate_bar(what: str) -> Any:
    """``dedup``'s progress bar: with the share done and a ``rate`` field (rich's, imported only
    when it is shown: a tenth of start-up)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn(f"[bold]{what}"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        console=err,
    )


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
    "HELP_MARKUP",
    "REDIS_SCHEMES",
    "RETRY_FOR_S",
    "AsJson",
    "Cluster",
    "NoProgress",
    "Store",
    "check_namespace_arg",
    "command_name",
    "consumed",
    "err",
    "fail",
    "failure",
    "input_lines",
    "open_index",
    "open_input",
    "out",
    "progress_bar",
    "rate_bar",
    "require_extra",
    "retrying",
    "store_extra",
    "where",
]
