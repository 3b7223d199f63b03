"""The admin commands: ``neardup namespaces``, ``neardup inspect``, ``neardup export`` and
``neardup reindex`` (``neardup delete`` is in :mod:`neardup.stream.cli.main`). They read the index
the workers write, through the read API's functions (:mod:`neardup.stream.worker.http.read_api`), so
a terminal and ``GET /namespaces`` say the same.

Exit status: 0 with an answer, 1 when the store (or broker) cannot be reached or refuses, 2 for a
wrong argument, an id that is not indexed (``inspect``), or input that could not all be used
(``export``: records without text or an unknown namespace; ``reindex``: invalid lines or articles
refused, other than those taken down).
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from neardup.stream.cli.common import failure, input_lines, open_index, open_input
from neardup.stream.namespaces import aliases
from neardup.stream.records import Record
from neardup.stream.worker.http import read_api

out = Console()
err = Console(stderr=True)

Store = Annotated[
    str,
    typer.Option(
        envvar="NEARDUP_REDIS_URL",
        help="the index: a redis:// URL (its password from NEARDUP_REDIS_PASSWORD)",
    ),
]
Cluster = Annotated[bool, typer.Option(help="the --store URL is a node of a Redis Cluster")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _fail(command: str, exc: BaseException) -> typer.Exit:
    err.print(failure(command, exc), markup=False, soft_wrap=True)
    return typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the admin commands to the ``neardup`` app."""

    spaces = typer.Typer(
        help="List the namespaces of an index (and drop one no name reads).",
        no_args_is_help=False,
        add_completion=False,
    )
    app.add_typer(spaces, name="namespaces")

    @spaces.callback(invoke_without_command=True)
    def namespaces(
        ctx: typer.Context,
        store: Annotated[
            str | None, typer.Option(envvar="NEARDUP_REDIS_URL", help="the index: a redis:// URL")
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

        async def run() -> dict[str, Any]:
            async with open_index(store, redis_cluster) as index:
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
        longest = max((len(r["namespace"]) for r in got["namespaces"]), default=9)
        table.add_column("namespace", no_wrap=True, min_width=longest)  # never cut: looked for
        table.add_column("serves")
        for col in ("documents", "copies", "clusters", "bytes", "hot buckets"):
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
            )
        out.print(table)
        if any(r["estimated_from_shards"] for r in got["namespaces"]):
            out.print("~ estimated from a sample of the shard keys", style="dim")

    @spaces.command("drop")
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

        _check_namespace("namespaces drop", namespace)
        try:
            removed = asyncio.run(run())
        except (LookupError, PermissionError) as exc:
            err.print(f"neardup namespaces drop: {exc}", markup=False)
            raise typer.Exit(2) from None
        except typer.BadParameter:
            raise
        except Exception as exc:
            raise _fail("namespaces drop", exc) from None
        err.print(f"dropped {namespace}: {removed:,} keys removed", markup=False)

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
            from neardup.stream.index.redis.keys import check_namespace
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
            raise _fail("inspect", exc) from None
        if got is None:
            err.print(f"not indexed: {doc_id} (namespace {namespace})", markup=False)
            raise typer.Exit(2)
        if as_json:
            sys.stdout.write(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
            return
        _show(got)

    @app.command()
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
                    with _progress("export") as bar:
                        task = bar.add_task("export", total=None)
                        return await run_export(
                            index,
                            namespace,
                            sink,
                            lambda done, total: bar.update(task, completed=done, total=total),
                        )
                finally:
                    sink.close() if output else sink.flush()

        _check_namespace("export", namespace)
        try:
            written, textless = asyncio.run(run())
        except typer.BadParameter:
            raise
        except LookupError as exc:  # an unknown namespace: a wrong argument, nothing written
            err.print(f"neardup export: {exc}", markup=False)
            raise typer.Exit(2) from None
        except Exception as exc:
            raise _fail("export", exc) from None
        err.print(f"exported {written:,} articles of {namespace}", markup=False)
        if textless:
            err.print(
                f"{textless:,} records keep no text (keep_text was off): not exported",
                markup=False,
            )
            raise typer.Exit(2)

    @app.command()
    def reindex(
        namespace: Annotated[str, typer.Argument(help="the namespace to rebuild")],
        store: Store,
        from_file: Annotated[
            Path | None,
            typer.Option("--from", help="JSON lines to rebuild from (neardup export's output)"),
        ] = None,
        from_topic: Annotated[
            str | None, typer.Option(help="the input topic to rebuild from, read from its start")
        ] = None,
        kafka_bootstrap: Annotated[
            str, typer.Option(help="the broker, with --from-topic")
        ] = "localhost:9092",
        namespaces_file: Annotated[
            Path | None,
            typer.Option(help="TOML of per-namespace policies: the new one for NAMESPACE"),
        ] = None,
        into: Annotated[
            str | None,
            typer.Option(help="go on with the namespace an earlier run started (NAME.rN)"),
        ] = None,
        redis_cluster: Cluster = False,
        progress: Annotated[
            bool | None, typer.Option("--progress/--no-progress", help="default: on a terminal")
        ] = None,
    ) -> None:
        """Rebuild a namespace under a new policy (another scheme: shingles, measure, banding)
        into a fresh one, then switch every worker to it. Verdicts are decided again."""
        from neardup.stream.engine.reindex import TopicSource
        from neardup.stream.namespaces import policies as namespaces
        from neardup.stream.namespaces.policy import Policy

        _check_namespace("reindex", namespace)
        if (from_file is None) == (from_topic is None):
            err.print("neardup reindex: give one of --from FILE or --from-topic TOPIC")
            raise typer.Exit(2)
        try:
            policies = namespaces.load(namespaces_file, Policy()) if namespaces_file else {}
        except ValueError as exc:
            err.print(f"neardup reindex: {exc}", markup=False)
            raise typer.Exit(2) from None
        policy = policies.get(namespace, Policy())
        topic = TopicSource(kafka_bootstrap, from_topic) if from_topic else None
        show = err.is_terminal if progress is None else progress
        try:
            state, invalid = asyncio.run(
                _reindex(store, redis_cluster, namespace, policy, from_file, topic, into, show)
            )
        except typer.BadParameter:
            raise
        except ValueError as exc:  # a name in use, an unreadable file: what to do instead
            err.print(f"neardup reindex: {exc}", markup=False)
            raise typer.Exit(2) from None
        except Exception as exc:
            raise _fail("reindex", exc) from None
        table = Table(title=f"neardup reindex {namespace}", show_header=False)
        for label, val in (
            ("rebuilt into", state.target),
            ("previously in", state.previous),
            *((k, f"{n:,}") for k, n in sorted(state.verdicts.items())),
            ("decided after the switch", f"{state.caught_up:,}"),
            *(
                (f"refused: {k}" if k != "deleted" else "left out: taken down", f"{n:,}")
                for k, n in sorted(state.errors.items())
            ),
            ("invalid input", f"{invalid:,}"),
            ("other namespaces' messages, skipped", f"{state.other_namespaces:,}"),
            *(
                (f"dead-lettered by the workers, skipped: {k}", f"{n:,}")
                for k, n in sorted((topic.invalid if topic is not None else {}).items())
            ),
            ("switched", "yes" if state.switched else "no"),
        ):
            table.add_row(label, val)
        err.print(table)
        # an article taken down is left out as it should be: not a failure of the rebuild
        if invalid or any(k != "deleted" for k in state.errors):
            raise typer.Exit(2)


async def _reindex(
    store: str,
    cluster: bool,
    ns: str,
    policy: Any,
    path: Path | None,
    topic: Any,
    into: str | None,
    show: bool,
) -> tuple[Any, int]:
    """Run :func:`neardup.stream.engine.reindex.reindex` from a file or the topic, with a
    progress bar."""
    import orjson

    from neardup.stream.engine.reindex import Rebuilt, batches_of, reindex
    from neardup.stream.errors import InvalidMessage
    from neardup.stream.schema import article_from_obj

    invalid = 0

    def from_file() -> Any:
        def items() -> Any:
            nonlocal invalid
            assert path is not None
            with open_input(path) as stream:
                for number, line in input_lines(stream):
                    try:
                        yield article_from_obj(
                            orjson.loads(line), default_namespace=ns, read_from=len(line)
                        )
                    except (orjson.JSONDecodeError, InvalidMessage) as exc:
                        invalid += 1
                        err.print(f"line {number}: {exc}", markup=False)

        return batches_of(items())

    with _progress("reindex", disable=not show) as bar:
        task = bar.add_task("reindex", total=None)

        def step(state: Rebuilt, n: int) -> None:
            total = topic.total if topic is not None else None
            bar.update(task, advance=n, total=total)

        async with open_index(store, cluster) as index:
            state = await reindex(
                index,
                ns,
                policy,
                topic.first if topic is not None else from_file,
                into=into,
                catch_up=topic.rest if topic is not None else None,
                on_batch=step,
            )
    return state, invalid


def _progress(what: str, *, disable: bool = False) -> Any:
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


def _check_namespace(command: str, ns: str) -> None:
    from neardup.stream.index.redis.keys import check_namespace

    try:
        check_namespace(ns)
    except ValueError as exc:
        err.print(f"neardup {command}: {exc}", markup=False)
        raise typer.Exit(2) from None


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
