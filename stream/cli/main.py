"""The ``neardup`` command line: ``dedup`` (batch), ``delete`` (takedown), ``params`` (what a
setting means), ``worker``.

Exit status of ``dedup``: 0 when every line was processed, 2 when some lines were invalid (they
are reported on stderr with their line numbers and skipped), 1 on a fatal error.

Exit status of ``delete``: 0 when every id was deleted, 2 when some were not indexed (the others
are deleted; the missing ones are named on stderr), 1 on an error (bad id or namespace, store or
broker unreachable).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from neardup.sketch import lsh
from neardup.stream.backoff import backoff
from neardup.stream.cli.common import err, failure
from neardup.stream.cli.common import input_lines as _lines
from neardup.stream.cli.common import open_index as _index
from neardup.stream.cli.common import open_input as _open_input
from neardup.stream.cli.common import retrying as _retrying
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import InvalidMessage, NeardupError
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces import policies as namespaces
from neardup.stream.namespaces.policy import Policy
from neardup.stream.schema import FORMATS, article_from_obj

app = typer.Typer(
    name="neardup",
    help="Streaming near-duplicate detection (MinHash LSH + SimHash) over Kafka and Redis.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

BATCH = 512


def _position(stream: IO[bytes], path: Path) -> int:
    """Bytes consumed of the file on disk (compressed bytes for .gz), for the progress bar."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        inner = getattr(stream, "fileobj", stream)
        return int(inner.tell())
    return 0


def _size(path: Path) -> int | None:
    return path.stat().st_size if str(path) != "-" else None


class _NoProgress(contextlib.nullcontext[None]):
    """What ``--no-progress`` shows: nothing, without importing rich's progress display."""

    def add_task(self, description: str, **fields: Any) -> int:
        return 0

    def update(self, task: int, **fields: Any) -> None:
        return None


def _progress() -> Any:
    """rich's progress bar for ``dedup``, imported only when it is shown (a tenth of start-up)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("[bold]dedup"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        console=err,
    )


async def _dedup(
    path: Path,
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
) -> tuple[Counter[str], int, float, set[str]]:
    counts: Counter[str] = Counter()
    clusters: set[str] = set()
    invalid = 0
    started = time.perf_counter()
    stream = _open_input(path)
    total = _size(path)
    progress = _progress() if show_progress else _NoProgress()
    async with _index(store, cluster, wait_replicas) as index:
        engine = Engine(index, policy, policies=policies)
        with progress, stream:
            task = progress.add_task("dedup", total=total, rate="")
            pending: list[tuple[int, Article]] = []

            async def flush() -> None:
                batch = [a for _, a in pending]
                results = await _retrying(lambda: engine.process(batch))
                for (number, _), res in zip(pending, results, strict=True):
                    if isinstance(res, NeardupError):
                        nonlocal invalid
                        invalid += 1
                        err.print(f"line {number}: {res.reason}: {res}", markup=False)
                        continue
                    _count(res, counts, clusters)
                    out.write(res.to_json() + b"\n")
                pending.clear()

            for number, line in _lines(stream):
                try:
                    obj = orjson.loads(line)
                    article = article_from_obj(
                        obj,
                        default_namespace=namespace,
                        id_field=id_field,
                        text_field=text_field,
                        default_format=text_format,
                        read_from=len(line),
                    )
                except (orjson.JSONDecodeError, InvalidMessage) as exc:
                    invalid += 1
                    reason = getattr(exc, "reason", "invalid_json")
                    err.print(f"line {number}: {reason}: {exc}", markup=False)
                    continue
                pending.append((number, article))
                if len(pending) >= BATCH:
                    await flush()
                    done = sum(counts.values())
                    rate = done / max(time.perf_counter() - started, 1e-9)
                    progress.update(
                        task, completed=_position(stream, path), rate=f"{rate:,.0f} docs/s"
                    )
            if pending:
                await flush()
            progress.update(task, completed=total)
    return counts, invalid, time.perf_counter() - started, clusters


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


@app.command()
def dedup(
    input: Annotated[Path, typer.Argument(help="JSON lines (.jsonl or .jsonl.gz); - for stdin")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="verdict JSON lines (default stdout)")
    ] = None,
    store: Annotated[str, typer.Option(help="'memory' or a redis:// URL")] = "memory",
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
    namespaces_file: Annotated[
        Path | None,
        typer.Option(help="TOML of per-namespace policies ([namespace.NAME] tables)"),
    ] = None,
    id_field: Annotated[str, typer.Option(help="name of the id field")] = "id",
    text_field: Annotated[str, typer.Option(help="name of the text field")] = "text",
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
) -> None:
    """Decide a verdict for every line, in input order, against earlier lines (and the store)."""
    try:
        policy = Policy(
            threshold=threshold,
            measure=measure,  # type: ignore[arg-type]
            recall=recall,
            facts=facts,  # type: ignore[arg-type]
            boilerplate_min_docs=boilerplate_min_docs,
            explain=explain,
        )
        policies = namespaces.load(namespaces_file, policy) if namespaces_file else {}
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if text_format not in ("auto", *FORMATS):
        raise typer.BadParameter(f"--format must be auto, {', '.join(FORMATS)}")
    show = err.is_terminal if progress is None else progress
    sink: IO[bytes] = output.open("wb") if output else sys.stdout.buffer
    try:
        counts, invalid, seconds, clusters = asyncio.run(
            _dedup(
                input,
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
            )
        )
    except NeardupError as exc:  # the store away or refusing: a clear line, status 1
        err.print(failure("dedup", exc), markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    finally:
        if output:
            sink.close()
        else:
            sink.flush()
    total = sum(counts.values())
    table = summary_table(
        "neardup dedup",
        counts,
        len(clusters),
        [("invalid lines", f"{invalid:,}"), ("docs/s", f"{total / max(seconds, 1e-9):,.0f}")],
    )
    err.print(table)
    if invalid:
        raise typer.Exit(2)


@app.command()
def params(
    threshold: Annotated[float, typer.Option(help="similarity threshold")] = 0.8,
    recall: Annotated[
        float, typer.Option(help="required candidate recall at the threshold")
    ] = 0.99,
    num_perm: Annotated[int, typer.Option(help="MinHash signature size")] = 128,
) -> None:
    """Show the (bands, rows) chosen for a threshold and the S-curve they give."""
    try:
        b, r = lsh.recall_floor_params(threshold, recall, num_perm)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    ob, orr = lsh.optimal_params(threshold, num_perm)
    console = Console()
    console.print(
        f"recall floor: bands={b} rows={r} (P({threshold}) = "
        f"{lsh.candidate_probability(threshold, b, r):.4f}, midpoint {lsh.half_point(b, r):.3f})"
    )
    console.print(
        f"area-optimal (datasketch style): bands={ob} rows={orr} (P({threshold}) = "
        f"{lsh.candidate_probability(threshold, ob, orr):.4f}, midpoint "
        f"{lsh.half_point(ob, orr):.3f})"
    )
    table = Table("similarity", f"P candidate ({b}x{r})", f"P candidate ({ob}x{orr})")
    for s in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0):
        table.add_row(
            f"{s:.2f}",
            f"{lsh.candidate_probability(s, b, r):.4f}",
            f"{lsh.candidate_probability(s, ob, orr):.4f}",
        )
    console.print(table)


@app.command()
def worker(
    create_topics: Annotated[
        bool, typer.Option(help="create missing input/verdict/DLQ topics at start")
    ] = True,
) -> None:
    """Run a streaming worker (faust); configured by NEARDUP_* environment variables."""
    import logging

    from pydantic import ValidationError

    from neardup.stream.worker.config import Settings, unknown_variables

    try:
        settings = Settings()
    except ValidationError as exc:
        for e in exc.errors():
            name = "NEARDUP_" + "_".join(str(p) for p in e["loc"]).upper()
            err.print(f"invalid setting {name or 'NEARDUP_*'}: {e['msg']}", markup=False)
        raise typer.Exit(2) from None
    from neardup.stream.worker import logs

    log_config = logs.setup(settings.log_level, settings.log_format)
    log = logging.getLogger("neardup.worker")
    for line in unknown_variables(os.environ):
        log.warning("%s", line)
    import faust

    from neardup.stream.worker.app import Worker
    from neardup.stream.worker.clients import broker_answers, ensure_topics
    from neardup.stream.worker.starting import StartingHealth

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    async def wait_for_kafka() -> None:
        # /health answers (503, with the reason) while the worker waits, as it will after
        async with StartingHealth(settings.web_host, settings.web_port) as health:
            health.reason = f"waiting for Kafka at {settings.kafka_bootstrap}"

            def note(exc: Exception) -> None:
                health.reason = f"waiting for Kafka at {settings.kafka_bootstrap}: {exc}"

            if create_topics:
                await _with_retry(
                    lambda: ensure_topics(settings), "Kafka", on_error=note, say=log.warning
                )
            else:  # started while the broker is away (its restart, a rollout): wait
                await _with_retry(
                    lambda: broker_answers(settings), "Kafka", on_error=note, say=log.warning
                )

    loop.run_until_complete(wait_for_kafka())
    service = Worker(settings)
    runner = faust.Worker(
        service.app, loop=loop, loglevel=settings.log_level, logging_config=log_config
    )
    runner.spinner = None  # its log handler would set the root logger to DEBUG
    runner.execute_from_commandline()


@app.command()
def delete(
    ids: Annotated[list[str], typer.Argument(help="article ids to delete")],
    store: Annotated[
        str,
        typer.Option(
            envvar="NEARDUP_REDIS_URL",
            help="the index: a redis:// URL (its password from NEARDUP_REDIS_PASSWORD)",
        ),
    ],
    redis_cluster: Annotated[
        bool, typer.Option(help="the --store URL is a node of a Redis Cluster")
    ] = False,
    namespace: Annotated[str, typer.Option(help="namespace of the articles")] = "default",
    kafka_bootstrap: Annotated[
        str | None,
        typer.Option(
            help="also publish a tombstone per id to the input topic (so a rebuild from the "
            "topic, and any other reader of it, sees the takedown) and to the verdict topic"
        ),
    ] = None,
    input_topic: Annotated[str, typer.Option(help="with --kafka-bootstrap")] = "articles",
    verdict_topic: Annotated[str, typer.Option(help="with --kafka-bootstrap")] = "verdicts",
) -> None:
    """Take articles down: out of buckets, records and verdicts; the ids stay remembered so a
    replay of their old messages does not bring them back, and a rebuild (``neardup reindex``)
    carries that memory into the namespace it builds. With ``--kafka-bootstrap`` the takedown
    is also a tombstone on the input topic (key: the id, header ``namespace``)."""
    from neardup.stream.index.redis import keys
    from neardup.stream.schema import check_id

    try:
        keys.check_namespace(namespace)
        for doc_id in ids:
            check_id(doc_id)
    except (ValueError, InvalidMessage) as exc:
        err.print(f"neardup delete: {exc}", markup=False)
        raise typer.Exit(1) from None
    try:
        found = asyncio.run(
            _delete(
                ids, store, namespace, kafka_bootstrap, (input_topic, verdict_topic), redis_cluster
            )
        )
    except typer.BadParameter:
        raise
    except Exception as exc:  # store or broker away: a clear message, status 1
        err.print(failure("delete", exc), markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    missing = [doc_id for doc_id in ids if not found[doc_id]]
    err.print(f"deleted {len(ids) - len(missing)} of {len(ids)}", markup=False)
    for doc_id in missing:
        err.print(f"not indexed: {doc_id}", markup=False)
    if missing:
        raise typer.Exit(2)


async def _delete(
    ids: Sequence[str],
    store: str,
    ns: str,
    bootstrap: str | None,
    topics: tuple[str, str],  # the input topic, the verdict topic
    cluster: bool = False,
) -> dict[str, bool]:
    if store == "memory":
        raise typer.BadParameter("deleting needs a redis:// store", param_hint="--store")
    found: dict[str, bool] = {}
    async with _index(store, cluster) as index:
        engine = Engine(index)
        for doc_id in ids:
            found[doc_id] = await _retrying(lambda: engine.delete(ns, doc_id))  # noqa: B023
    if bootstrap is not None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            header = [("namespace", ns.encode("utf-8"))]
            for doc_id in ids:
                for topic in topics:
                    await producer.send(
                        topic, key=doc_id.encode("utf-8"), value=None, headers=header
                    )
            await producer.flush()
        finally:
            await producer.stop()
    return found


async def _with_retry(
    make: Any,
    what: str,
    attempts: int = 30,
    on_error: Callable[[Exception], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> None:
    delays = backoff(0.5, 5.0)
    for attempt in range(1, attempts + 1):
        try:
            await make()
            return
        except Exception as exc:  # unreachable broker: say why, wait, try again
            if on_error is not None:
                on_error(exc)
            if attempt == attempts:
                raise
            delay = next(delays)
            message = f"waiting for {what}: {exc} (retry in {delay:.1f}s)"
            if say is not None:  # the worker: a log line, with its time and level
                say(message)
            else:
                err.print(message, markup=False, soft_wrap=True)
            await asyncio.sleep(delay)


def main() -> None:
    """Console-script entry point."""
    from neardup.stream.cli import admin

    admin.register(app)
    app()


__all__ = ["app", "dedup", "delete", "main", "params", "summary_table", "worker"]


if __name__ == "__main__":
    main()
