"""``neardup delete``: take articles down (out of buckets, records and verdicts, the ids
remembered), and with ``--kafka-bootstrap`` also publish a tombstone per id. Apart from
``dedup``: it writes only deletions, and reaches Kafka (aiokafka, imported when asked: the
``stream`` extra).

Exit status: 0 when every id was deleted, 2 when some were not indexed (the others are deleted;
the missing ones are named on stderr), 1 on an error (bad id or namespace, store or broker
unreachable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated

import typer

from neardup.stream.cli.common import (
    Cluster,
    Store,
    err,
    fail,
    open_index,
    require_extra,
    retrying,
)
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import InvalidMessage


def delete(
    ids: Annotated[list[str], typer.Argument(help="article ids to delete")],
    store: Store,
    redis_cluster: Cluster = False,
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
    if kafka_bootstrap is not None:  # aiokafka
        require_extra("neardup delete", "stream", "--kafka-bootstrap", "aiokafka")
    from neardup.stream import names
    from neardup.stream.schema import check_id

    try:
        names.check_namespace(namespace)
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
        raise fail("delete", exc) from None
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
    async with open_index(store, cluster) as index:
        engine = Engine(index)
        for doc_id in ids:
            found[doc_id] = await retrying(lambda: engine.delete(ns, doc_id))  # noqa: B023
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


__all__ = ["delete"]
