"""``neardup namespaces`` (what an index holds, name by name) and ``neardup namespaces drop`` (the
keys a rebuild left behind): a command group of its own, read through the read API's functions
(:mod:`neardup.stream.worker.http.read_api`) so a terminal and ``GET /namespaces`` say the same.

Exit status: 0 with an answer, 1 when the store cannot be reached or refuses, 2 for a wrong
argument (no ``--store``, a namespace not in the index or one that still serves a name).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from neardup.stream.cli.common import (
    HELP_MARKUP,
    AsJson,
    Cluster,
    Store,
    check_namespace_arg,
    err,
    fail,
    open_index,
    out,
    require_extra,
    store_extra,
)
from neardup.stream.namespaces import aliases

app = typer.Typer(
    help="List the namespaces of an index (and drop one no name reads).",
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode=HELP_MARKUP,
)


@app.callback(invoke_without_command=True)
def namespaces(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            envvar="NEARDUP_REDIS_URL", help="the index: a redis:// URL", callback=store_extra
        ),
    ] = None,
    redis_cluster: Cluster = False,
    as_json: AsJson = False,
) -> None:
    """List the namespaces of an index: documents, clusters, bytes, and which names each
    one serves (a rebuilt name is served by the namespace it was rebuilt into)."""
    if ctx.invoked_subcommand is not None:
        return
    if store is None:
        err.print("neardup namespaces: --store is required", markup=False)
        raise typer.Exit(2)
    require_extra("neardup namespaces", "redis")  # the read API's models: pydantic
    from neardup.stream.worker.http import read_api

    async def run() -> dict[str, Any]:
        async with open_index(store, redis_cluster) as index:
            return await read_api.namespaces(index)

    try:
        got = asyncio.run(run())
    except typer.BadParameter:
        raise
    except Exception as exc:  # store away or refusing: a clear message, status 1
        raise fail("namespaces", exc) from None
    if as_json:
        sys.stdout.write(json.dumps(got, indent=2) + "\n")
        return
    table = Table(title=f"namespaces of {store}")
    longest = max((len(r["namespace"]) for r in got["namespaces"]), default=9)
    table.add_column("namespace", no_wrap=True, min_width=longest)  # never cut: looked for
    table.add_column("serves")
    for col in ("documents", "copies", "clusters", "bytes", "hot buckets", "shard groups"):
        table.add_column(col, justify="right")
    for row in got["namespaces"]:
        serves = ", ".join(row["serves"]) or (
            f"- (rebuilt into {row['rebuilt_into']})" if row["rebuilt_into"] else "- (unused)"
        )
        table.add_row(
            row["namespace"],
            serves,
            f"{row['documents']:,}",
            f"{row['copies']:,}",
            f"{row['clusters']:,}",
            f"{row['bytes']:,}" + (" ~" if row["estimated_from_shards"] else ""),
            f"{row['hot_buckets']:,}" + (" ~" if row["estimated_from_shards"] else ""),
            f"{row['shard_groups']:,}",
        )
    out.print(table)
    if any(r["estimated_from_shards"] for r in got["namespaces"]):
        out.print("~ estimated from a sample of the shard keys", style="dim")


@app.command("drop")
def drop(
    namespace: Annotated[str, typer.Argument(help="the namespace whose keys to remove")],
    store: Store,
    redis_cluster: Cluster = False,
) -> None:
    """Remove a namespace's keys that no name reads any more: what a rebuild left behind
    (``news`` after ``neardup reindex`` switched it to ``news.r2``), or a rebuild that was
    replaced or never switched. A namespace that serves a name is refused; a rebuilt
    name's alias stays (it is how the name finds its articles)."""

    async def run() -> int:
        async with open_index(store, redis_cluster) as index:
            names = await index.namespaces()
            if namespace not in names:
                raise LookupError(f"no namespace {namespace!r} in {store}")
            serves, _ = (await aliases.roles(index, names))[namespace]
            if serves:
                raise PermissionError(
                    f"namespace {namespace!r} is live: it holds the articles of "
                    f"{', '.join(serves)}; nothing dropped"
                )
            return await index.drop(namespace)

    check_namespace_arg("namespaces drop", namespace)
    try:
        removed = asyncio.run(run())
    except (LookupError, PermissionError) as exc:
        err.print(f"neardup namespaces drop: {exc}", markup=False)
        raise typer.Exit(2) from None
    except typer.BadParameter:
        raise
    except Exception as exc:
        raise fail("namespaces drop", exc) from None
    err.print(f"dropped {namespace}: {removed:,} keys removed", markup=False)


__all__ = ["app", "drop", "namespaces"]
