"""``neardup reindex``: rebuild a namespace under a new policy, from ``neardup export``'s JSON
lines or the input topic, into a fresh namespace, then switch every worker to it. A module of its
own: the one admin command that writes an index and may read Kafka.

Exit status: 0 when the rebuild is done, 1 when the store (or broker) cannot be reached or
refuses, 2 for a wrong argument or input that could not all be used (invalid lines, or articles
refused other than those taken down).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from neardup.stream.cli.common import (
    Cluster,
    Store,
    check_namespace_arg,
    err,
    fail,
    input_lines,
    open_index,
    open_input,
    progress_bar,
    require_extra,
)


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

    check_namespace_arg("reindex", namespace)
    if (from_file is None) == (from_topic is None):
        err.print("neardup reindex: give one of --from FILE or --from-topic TOPIC")
        raise typer.Exit(2)
    if from_topic is not None:  # aiokafka
        require_extra("neardup reindex", "stream", "--from-topic", "aiokafka")
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
        raise fail("reindex", exc) from None
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
                            orjson.loads(line), default_namespace=ns, read_from=len(line), raw=line
                        )
                    except (orjson.JSONDecodeError, InvalidMessage) as exc:
                        invalid += 1
                        err.print(f"line {number}: {exc}", markup=False)

        return batches_of(items())

    with progress_bar("reindex", disable=not show) as bar:
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


__all__ = ["reindex"]
