"""``neardup dedup``: a verdict for every line (or row) of a corpus file, in input order, against
earlier ones and the store; with ``--kept``, the rows kept too, the deduplicated corpus. The batch
face of the engine, in a module of its own: the file formats are :mod:`neardup.stream.cli.tables`'
and which rows are kept is :mod:`neardup.stream.cli.kept`'s.

One output line per row, in input order, so the output joins the input by position: a row that
cannot be judged (invalid JSON, no id, an empty text...) gets an ``"verdict": "invalid"`` line in
its place, with the ``reason`` and ``error`` a dead letter carries (:func:`invalid_line`).

Exit status: 0 when every line (row) was judged; 2 when some were invalid (each also reported on
stderr with its line or row number), or for a wrong argument (a bad option, an unknown
extension, a missing column, pyarrow missing for Parquet); 1 on a fatal error.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Annotated, Any

import orjson
import typer
from rich.table import Table

from neardup.stream.cli.common import (
    NoProgress,
    err,
    failure,
    open_index,
    rate_bar,
    retrying,
    store_extra,
)
from neardup.stream.cli.kept import Keeper, keeper_for
from neardup.stream.cli.tables import Reader, open_table, write_kept
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import BrokenTableError, InvalidMessage, NeardupError, TableError
from neardup.stream.model import Article, Verdict
from neardup.stream.names import NAMESPACE_RE
from neardup.stream.namespaces import policies as namespaces
from neardup.stream.namespaces.policy import MAX_SHARDS, Policy
from neardup.stream.schema import FORMATS, OPTIONAL_FIELDS, article_from_obj, exact_id

BATCH = 512
# the columns of a table read besides the id and text ones, when it has them: a JSON line's fields
OPTIONAL_COLUMNS = ("namespace", "format", *OPTIONAL_FIELDS)


async def _dedup(
    source: Reader,
    out: IO[bytes],
    store: str,
    policy: Policy,
    namespace: str,
    id_field: str,
    text_field: str,
    show_progress: bool,
    text_format: str | None,
    cluster: bool = False,
    wait_replicas: int = 0,
    policies: Mapping[str, Policy] | None = None,
    keeper: Keeper | None = None,
) -> tuple[Counter[str], int, float, set[str]]:
    counts: Counter[str] = Counter()
    clusters: set[str] = set()
    invalid = 0
    started = time.perf_counter()
    progress = rate_bar("dedup") if show_progress else NoProgress()
    async with open_index(store, cluster, wait_replicas) as index:
        engine = Engine(index, policy, policies=policies)
        with progress:
            task = progress.add_task("dedup", total=source.total, rate="")
            # rows read, in order: an article to judge, or a row refused (its id, namespace and
            # why), written in its place when the batch is
            pending: list[tuple[int, Article | tuple[str | None, str | None, InvalidMessage]]] = []

            def refuse(number: int, doc_id: str | None, ns: str | None, exc: NeardupError) -> None:
                nonlocal invalid
                invalid += 1
                err.print(f"{source.unit} {number}: {exc.reason}: {exc}", markup=False)
                out.write(invalid_line(source.unit, number, doc_id, ns, exc) + b"\n")
                if keeper is not None:
                    keeper.invalid(number, exc.reason)

            async def flush() -> None:
                batch = [a for _, a in pending if isinstance(a, Article)]
                results = iter(await retrying(lambda: engine.process(batch))) if batch else iter(())
                for number, read in pending:
                    if not isinstance(read, Article):
                        refuse(number, *read)
                        continue
                    res = next(results)
                    if isinstance(res, NeardupError):  # empty after the canonical form, a conflict
                        refuse(number, read.id, read.namespace, res)
                        continue
                    _count(res, counts, clusters)
                    if keeper is not None:
                        keeper.add(number, res)
                    out.write(res.to_json() + b"\n")
                pending.clear()

            for number, obj, line in source.rows():
                row: Article | tuple[str | None, str | None, InvalidMessage]
                try:
                    if isinstance(obj, InvalidMessage):  # a JSON line that is no JSON
                        raise obj
                    row = article_from_obj(
                        obj,
                        default_namespace=namespace,
                        id_field=id_field,
                        text_field=text_field,
                        default_format=text_format,
                        read_from=None if line is None else len(line),
                        raw=line,
                    )
                except InvalidMessage as exc:
                    row = (*_identity(obj, id_field, namespace, line), exc)
                pending.append((number, row))
                if len(pending) >= BATCH:
                    await flush()
                    done = sum(counts.values())
                    rate = done / max(time.perf_counter() - started, 1e-9)
                    progress.update(task, completed=source.position(), rate=f"{rate:,.0f} docs/s")
            if pending:
                await flush()
            progress.update(task, completed=source.total)
    return counts, invalid, time.perf_counter() - started, clusters


def invalid_line(
    unit: str, number: int, doc_id: str | None, namespace: str | None, exc: NeardupError
) -> bytes:
    """The line of a row that cannot be judged: its id and namespace where they could be read
    (else null), ``"verdict": "invalid"``, the ``reason`` and ``error`` a dead letter carries, and
    the row's ``line`` (JSON lines) or ``row`` number."""
    body = {
        "id": doc_id,
        "namespace": namespace,
        "verdict": "invalid",
        "reason": exc.reason,
        "error": str(exc),
        unit: number,
    }
    return orjson.dumps(body)


def _identity(
    obj: Any, id_field: str, namespace: str, line: bytes | None
) -> tuple[str | None, str | None]:
    """The id and namespace of an invalid row where each is valid on its own, else None."""
    if not isinstance(obj, dict):
        return None, None
    try:
        doc_id: str | None = exact_id(obj.get(id_field), id_field, line)
    except InvalidMessage:
        doc_id = None
    ns = obj.get("namespace")
    ns = namespace if ns is None else ns
    return doc_id, ns if isinstance(ns, str) and NAMESPACE_RE.fullmatch(ns) else None


def _count(v: Verdict, counts: Counter[str], clusters: set[str]) -> None:
    counts[v.verdict] += 1
    clusters.add(f"{v.namespace}\x00{v.cluster}")


def summary_table(
    title: str, counts: Mapping[str, int], clusters: int, extra: Sequence[tuple[str, str]]
) -> Table:
    """The end-of-run table: verdicts by kind, clusters, then ``extra`` rows."""
    table = Table(title=title, show_header=False)
    for label, key in (
        ("originals", "original"),
        ("near-duplicates", "near_duplicate"),
        ("duplicates", "duplicate"),
    ):
        table.add_row(label, f"{counts.get(key, 0):,}")
    table.add_row("clusters", f"{clusters:,}")
    for label, value in extra:
        table.add_row(label, value)
    return table


def dedup(
    input: Annotated[
        Path,
        typer.Argument(
            help="JSON lines (.jsonl or .jsonl.gz; - for stdin), CSV (.csv, .csv.gz: a header row"
            " names the columns) or Parquet (.parquet, needs the parquet extra)"
        ),
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="verdict JSON lines (default stdout)")
    ] = None,
    store: Annotated[
        str, typer.Option(help="'memory' or a redis:// URL", callback=store_extra)
    ] = "memory",
    redis_cluster: Annotated[
        bool, typer.Option(help="the --store URL is a node of a Redis Cluster")
    ] = False,
    redis_wait_replicas: Annotated[
        int,
        typer.Option(
            min=0, help="replicas that must hold each batch's registrations before its verdicts"
        ),
    ] = 0,
    namespace: Annotated[str, typer.Option(help="namespace of lines without one")] = "default",
    threshold: Annotated[float, typer.Option(help="similarity threshold")] = 0.8,
    measure: Annotated[str, typer.Option(help="jaccard | containment")] = "jaccard",
    recall: Annotated[float, typer.Option(help="candidate recall at the threshold")] = 0.99,
    facts: Annotated[
        str, typer.Option(help="short texts: strict | relaxed (numbers may differ in a copy)")
    ] = "strict",
    boilerplate_min_docs: Annotated[
        int,
        typer.Option(
            min=0, help="a line this many earlier documents of a source had is boilerplate (0: off)"
        ),
    ] = 3,
    explain: Annotated[
        bool, typer.Option(help="each copy's evidence: the passages it shares, in both texts")
    ] = False,
    shards: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_SHARDS,
            help="a new namespace's buckets in this many Redis Cluster slots (1: one slot,"
            " one primary; see the README's 'When to shard')",
        ),
    ] = 1,
    namespaces_file: Annotated[
        Path | None,
        typer.Option(help="TOML of per-namespace policies ([namespace.NAME] tables)"),
    ] = None,
    id_field: Annotated[
        str, typer.Option("--id-field", "--id-column", help="name of the id field (column)")
    ] = "id",
    text_field: Annotated[
        str, typer.Option("--text-field", "--text-column", help="name of the text field (column)")
    ] = "text",
    text_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="format of lines that declare none: auto (markup read where a text carries"
            " it), html (its visible text), page (a whole web page: its main content, needs"
            " the html extra), text (never markup)",
        ),
    ] = "auto",
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="default: on a terminal")
    ] = None,
    kept: Annotated[
        Path | None,
        typer.Option(
            help="also write the rows kept, the deduplicated corpus, to this file: INPUT's"
            " format (the same extension; .gz compresses), all its columns, in input order"
        ),
    ] = None,
    keep: Annotated[
        str | None,
        typer.Option(
            help="with --kept: originals (every row judged original; the default) or"
            " one-per-cluster (each cluster's first row, clusters as they stand at the end:"
            " a later row matching two merges them)"
        ),
    ] = None,
) -> None:
    """Decide a verdict for every line, in input order, against earlier lines (and the store).

    A CSV or Parquet row is read as a line is, its id and text from the columns named (its
    namespace, format, title, url, lang, published_at and source columns too, where it has
    them); --kept writes the rows kept. A line that cannot be judged gets an invalid verdict
    line in its place, with the reason, and is kept by --kept."""
    try:
        policy = Policy(
            threshold=threshold,
            measure=measure,  # type: ignore[arg-type]
            recall=recall,
            facts=facts,  # type: ignore[arg-type]
            boilerplate_min_docs=boilerplate_min_docs,
            explain=explain,
            shards=shards,
        )
        policies = namespaces.load(namespaces_file, policy) if namespaces_file else {}
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if text_format not in ("auto", *FORMATS):
        raise typer.BadParameter(f"--format must be auto, {', '.join(FORMATS)}")
    try:
        keeper = keeper_for(input, kept, keep)
        source = open_table(input, (id_field, text_field), OPTIONAL_COLUMNS)
    except TableError as exc:  # an unknown extension, a missing column, no pyarrow
        err.print(f"neardup dedup: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    show = err.is_terminal if progress is None else progress
    sink: IO[bytes] = output.open("wb") if output else sys.stdout.buffer
    written = 0
    try:
        with source:
            counts, invalid, seconds, clusters = asyncio.run(
                _dedup(
                    source,
                    sink,
                    store,
                    policy,
                    namespace,
                    id_field,
                    text_field,
                    show,
                    None if text_format == "auto" else text_format,
                    redis_cluster,
                    redis_wait_replicas,
                    policies,
                    keeper,
                )
            )
        if keeper is not None and kept is not None:
            rows = keeper.rows()
            try:
                written = write_kept(input, kept, rows)
            except OSError as exc:  # the kept file cannot be written
                raise BrokenTableError(f"{kept}: {exc}") from None
            err.print(f"neardup dedup: {keeper.summary(rows)}", markup=False, soft_wrap=True)
    except NeardupError as exc:  # the store away or refusing: a clear line, status 1
        err.print(failure("dedup", exc), markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except BrokenTableError as exc:  # the input broke off, or the kept rows could not be written
        err.print(f"neardup dedup: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    finally:
        if output:
            sink.close()
        else:
            sink.flush()
    total = sum(counts.values())
    extra = [
        (f"invalid {source.unit}s", f"{invalid:,}"),
        ("docs/s", f"{total / max(seconds, 1e-9):,.0f}"),
    ]
    if kept is not None:
        extra.append(("kept rows", f"{written:,}"))
    err.print(summary_table("neardup dedup", counts, len(clusters), extra))
    if invalid:
        raise typer.Exit(2)


__all__ = ["BATCH", "OPTIONAL_COLUMNS", "dedup", "invalid_line", "summary_table"]
