"""``neardup inspect`` (an article as the index holds it) and ``neardup export`` (a namespace's
articles as JSON lines, the input of ``neardup reindex``): the two commands that read articles
back out of the index the workers write, through the read API's functions
(:mod:`neardup.stream.worker.http.read_api`), so a terminal and ``GET /articles/{id}`` say the same.

Exit status: 0 with an answer, 1 when the store cannot be reached or refuses, 2 for a wrong
argument, an id that is not indexed (``inspect``), or records that could not all be exported
(without text, or an unknown namespace: ``export``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.table import Table

from neardup.stream.cli.common import (
    AsJson,
    Cluster,
    Store,
    check_namespace_arg,
    err,
    fail,
    open_index,
    out,
    progress_bar,
    require_extra,
)
from neardup.stream.namespaces import aliases
from neardup.stream.records import Record


def inspect(
    doc_id: Annotated[str, typer.Argument(help="the article id")],
    store: Store,
    namespace: Annotated[str, typer.Option(help="its namespace")] = "default",
    redis_cluster: Cluster = False,
    as_json: AsJson = False,
) -> None:
    """An article as the index holds it: seq, verdict, cluster, matches and its record."""
    require_extra("neardup inspect", "redis")  # the read API's models: pydantic
    from neardup.stream.worker.http import read_api

    async def run() -> dict[str, Any] | None:
        async with open_index(store, redis_cluster) as index:
            got = await read_api.article(index, namespace, doc_id)
            if got is None:
                return None
            where = await aliases.resolve(index, namespace)
            raw = (await index.records(where, [got["seq"]])).get(got["seq"])
            rec = Record.decode(raw) if raw is not None else None
            cluster_id = got["cluster"] or doc_id
            cluster = await read_api.cluster(index, namespace, cluster_id, 0, 1)
            got["record"] = None if rec is None else _record(rec)
            got["cluster_size"] = cluster["size"] if cluster else None
            got["cluster_first_seen"] = cluster["first_seen"] if cluster else None
            got["cluster_last_seen"] = cluster["last_seen"] if cluster else None
            return got

    try:
        from neardup.stream.names import check_namespace
        from neardup.stream.schema import check_id

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
        raise fail("inspect", exc) from None
    if got is None:
        err.print(f"not indexed: {doc_id} (namespace {namespace})", markup=False)
        raise typer.Exit(2)
    if as_json:
        sys.stdout.write(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
        return
    _show(got)


def export(
    namespace: Annotated[str, typer.Argument(help="the namespace to export")],
    store: Store,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="JSON lines (default stdout)")
    ] = None,
    redis_cluster: Cluster = False,
) -> None:
    """Write a namespace's articles as JSON lines (id, namespace, text as sent, source), in
    the order they were indexed: the input of ``neardup reindex``."""
    from neardup.stream.engine.reindex import export as run_export

    async def run() -> tuple[int, int]:
        async with open_index(store, redis_cluster) as index:
            where = await aliases.resolve(index, namespace)
            if await index.stored_scheme(where) is None:  # before any file is written
                raise LookupError(f"no namespace {namespace!r} in {store}")
            sink: IO[bytes] = output.open("wb") if output else sys.stdout.buffer
            try:
                with progress_bar("export") as bar:
                    task = bar.add_task("export", total=None)
                    return await run_export(
                        index,
                        namespace,
                        sink,
                        lambda done, total: bar.update(task, completed=done, total=total),
                    )
            finally:
                sink.close() if output else sink.flush()

    check_namespace_arg("export", namespace)
    try:
        written, textless = asyncio.run(run())
    except typer.BadParameter:
        raise
    except LookupError as exc:  # an unknown namespace: a wrong argument, nothing written
        err.print(f"neardup export: {exc}", markup=False)
        raise typer.Exit(2) from None
    except Exception as exc:
        raise fail("export", exc) from None
    err.print(f"exported {written:,} articles of {namespace}", markup=False)
    if textless:
        err.print(
            f"{textless:,} records keep no text (keep_text was off): not exported",
            markup=False,
        )
        raise typer.Exit(2)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


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


__all__ = ["export", "inspect"]
