"""The admin commands: ``neardup namespaces`` and ``neardup inspect`` (``neardup delete`` is in
:mod:`stream.cli`). They read the index the workers write, through the read API's functions
(:mod:`stream.read_api`), so a terminal and ``GET /namespaces`` say the same.

Exit status: 0 with an answer, 1 when the store cannot be reached or refuses, 2 for a wrong
argument or (``inspect``) an id that is not indexed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from stream import read_api
from stream.records import Record

out = Console()
err = Console(stderr=True)

Store = Annotated[str, typer.Option(help="the index: a redis:// URL")]
Cluster = Annotated[bool, typer.Option(help="the --store URL is a node of a Redis Cluster")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _fail(command: str, exc: BaseException) -> typer.Exit:
    err.print(f"neardup {command}: {type(exc).__name__}: {exc}", markup=False)
    return typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the admin commands to the ``neardup`` app."""
    from stream.cli import _index

    @app.command()
    def namespaces(store: Store, redis_cluster: Cluster = False, as_json: AsJson = False) -> None:
        """List the namespaces of an index with their documents, clusters, bytes and scheme."""

        async def run() -> dict[str, Any]:
            async with _index(store, redis_cluster) as index:
                return await read_api.namespaces(index)

        try:
            got = asyncio.run(run())
        except typer.BadParameter:
            raise
        except Exception as exc:  # store away or refusing: a clear message, status 1
            raise _fail("namespaces", exc) from None
        if as_json:
            sys.stdout.write(json.dumps(got, indent=2) + "\n")
            return
        table = Table(title=f"namespaces of {store}")
        for col in ("namespace", "documents", "copies", "clusters", "bytes", "hot buckets"):
            table.add_column(col, justify="left" if col == "namespace" else "right")
        for row in got["namespaces"]:
            table.add_row(
                row["namespace"],
                f"{row['documents']:,}",
                f"{row['copies']:,}",
                f"{row['clusters']:,}",
                f"{row['bytes']:,}" + (" ~" if row["estimated_from_shards"] else ""),
                f"{row['hot_buckets']:,}" + (" ~" if row["estimated_from_shards"] else ""),
            )
        out.print(table)
        if any(r["estimated_from_shards"] for r in got["namespaces"]):
            out.print("~ estimated from a sample of the shard keys", style="dim")

    @app.command()
    def inspect(
        doc_id: Annotated[str, typer.Argument(help="the article id")],
        store: Store,
        namespace: Annotated[str, typer.Option(help="its namespace")] = "default",
        redis_cluster: Cluster = False,
        as_json: AsJson = False,
    ) -> None:
        """An article as the index holds it: seq, verdict, cluster, matches and its record."""

        async def run() -> dict[str, Any] | None:
            async with _index(store, redis_cluster) as index:
                got = await read_api.article(index, namespace, doc_id)
                if got is None:
                    return None
                raw = (await index.records(namespace, [got["seq"]])).get(got["seq"])
                rec = Record.decode(raw) if raw is not None else None
                cluster_id = got["cluster"] or doc_id
                cluster = await read_api.cluster(index, namespace, cluster_id, 0, 1)
                got["record"] = None if rec is None else _record(rec)
                got["cluster_size"] = cluster["size"] if cluster else None
                got["cluster_first_seen"] = cluster["first_seen"] if cluster else None
                got["cluster_last_seen"] = cluster["last_seen"] if cluster else None
                return got

        try:
            from stream.keys import check_namespace
            from stream.schema import check_id

            check_namespace(namespace)
            check_id(doc_id)
        except ValueError as exc:
            err.print(f"neardup inspect: {exc}", markup=False)
            raise typer.Exit(2) from None
        try:
            got = asyncio.run(run())
        except typer.BadParameter:
            raise
        except Exception as exc:
            raise _fail("inspect", exc) from None
        if got is None:
            err.print(f"not indexed: {doc_id} (namespace {namespace})", markup=False)
            raise typer.Exit(2)
        if as_json:
            sys.stdout.write(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
            return
        _show(got)


def _record(rec: Record) -> dict[str, Any]:
    return {
        "kind": rec.kind.name.lower(),
        "registered_at": rec.registered_at,
        "buckets": len(rec.buckets),
        "shingles": len(rec.shingles),
        "numbers": list(rec.numbers),
        "text_kept": bool(rec.raw),
        "simhash": f"{rec.simhash:016x}",
    }


def _show(got: dict[str, Any]) -> None:
    v = got["verdict"] or {}
    table = Table(show_header=False, title=f"{got['namespace']}/{got['id']}")
    table.add_column("field", style="bold")
    table.add_column("value")
    rows = [
        ("seq", str(got["seq"])),
        ("registered", _when(got["registered_at"])),
        ("verdict", v.get("verdict", "undecided")),
        ("duplicate of", str(v.get("duplicate_of") or "-")),
        ("similarity", str(v.get("similarity") or "-")),
        ("method", str(v.get("method") or "-")),
        ("cluster", f"{got['cluster'] or '-'} ({got['cluster_size'] or 0} members, first "
                    f"{_when(got['cluster_first_seen'])}, last {_when(got['cluster_last_seen'])})"),
        ("matches", ", ".join(f"{m['id']} {m['similarity']}" for m in v.get("matches", [])) or "-"),
        ("related", ", ".join(r["id"] for r in v.get("related", [])) or "-"),
    ]  # fmt: skip
    rec = got.get("record")
    if rec:
        rows += [
            ("record", f"{rec['kind']}, {rec['shingles']} shingles, {rec['buckets']} buckets"),
            ("numbers", " ".join(rec["numbers"]) or "-"),
            (
                "text",
                f"{len(got['text'] or '')} characters kept" if rec["text_kept"] else "not kept",
            ),
        ]
    for k, val in rows:
        table.add_row(k, val)
    out.print(table)


__all__ = ["register"]
