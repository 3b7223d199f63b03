"""Rebuilding a namespace under a new scheme: ``neardup export`` and ``neardup reindex``.

A namespace keeps the sketch scheme it was built with (:mod:`neardup.stream.namespaces.policies`),
so a new shingle size, measure or banding means building it again. :func:`reindex` decides every
article again, in the order given, into a fresh namespace (``articles.r2``, then ``articles.r3``)
under the new policy, while the workers go on with the old one; then it switches the alias
(:mod:`neardup.stream.namespaces.aliases`), and every worker follows within seconds. The articles
come from a JSON lines file (:func:`export` writes one from the records, which keep each text as
sent) or from the input topic, read from its start.

From the topic, nothing is lost at the switch: after switching, the command waits until every
worker has read the alias (the engine's ``ALIAS_TTL_S``), then decides again what the topic
received since it started reading, into the rebuilt namespace. An article the workers already
put there is a replay: the same verdict, nothing registered twice. From a file, what arrived
after the export is not in it: export again and run again into the same namespace
(``--into``), or read the topic.

A run that stops half-way leaves the old namespace in use and the new one half-built: run again
with ``--into`` to go on (what it has is replayed), or start afresh into the next one.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from neardup.stream.engine.engine import Engine
from neardup.stream.engine.targets import ALIAS_TTL_S
from neardup.stream.errors import InvalidMessage, NeardupError
from neardup.stream.index.base import Index
from neardup.stream.model import Article
from neardup.stream.namespaces import aliases
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Record
from neardup.stream.schema import parse_article, parse_tombstone

__all__ = [
    "Deletion",
    "Rebuilt",
    "TopicSource",
    "batches_of",
    "export",
    "reindex",
    "stored_records",
]

BATCH = 512


@dataclass(frozen=True, slots=True)
class Deletion:
    """A tombstone read from the topic: the article is taken down in the rebuilt namespace
    too (in its place in the order: after the article it deletes)."""

    namespace: str
    id: str


Item = Article | Deletion


async def export(
    index: Index, ns: str, out: IO[bytes], on_batch: Callable[[int, int], None] | None = None
) -> tuple[int, int]:
    """Write the namespace's articles as JSON lines, in their order (seq): ``id``,
    ``namespace``, ``text`` as sent, ``source`` when known. Returns (written, without text):
    a namespace that keeps no text (``keep_text`` off) has records that cannot be exported.
    ``on_batch(done, total)`` is told the progress in seqs."""
    where = await aliases.resolve(index, ns)
    if await index.stored_scheme(where) is None:
        raise LookupError(f"no namespace {ns!r} in this index: nothing to export")
    written = textless = 0
    async for upto, last, got in stored_records(index, where):
        for seq in sorted(got):
            rec = Record.decode(got[seq])
            if not rec.raw:
                textless += 1
                continue
            line = {"id": rec.doc_id, "namespace": ns, "text": rec.raw}
            if rec.source:
                line["source"] = rec.source
            out.write(orjson.dumps(line) + b"\n")
            written += 1
        if on_batch:
            on_batch(upto, last)
    return written, textless


async def stored_records(
    index: Index, where: str, batch: int | None = None
) -> AsyncGenerator[tuple[int, int, dict[int, bytes]], None]:
    """A namespace's stored records in their order (seq), ``batch`` seqs a read, so a big one
    streams: ``(last seq read, the namespace's last seq when it began, records by seq)``.
    ``where``: where the namespace is indexed (:func:`aliases.resolve`); ``batch``: by default
    :data:`BATCH`."""
    batch = batch or BATCH
    last = await index.last_seq(where)
    for lo in range(1, last + 1, batch):
        hi = min(lo + batch, last + 1)
        yield hi - 1, last, await index.records(where, list(range(lo, hi)))


@dataclass
class Rebuilt:
    """What a rebuild did: the namespace it went into and the verdicts it gave."""

    namespace: str
    target: str
    previous: str
    verdicts: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    read: int = 0  # articles of the namespace the source held
    other_namespaces: int = 0  # articles and tombstones of other namespaces, skipped
    caught_up: int = 0  # articles decided after the switch (from the topic or carried over)
    switched: bool = False
    decided: set[str] = field(default_factory=set, repr=False)  # ids decided into target


async def reindex(
    index: Index,
    ns: str,
    policy: Policy,
    source: Callable[[], AsyncIterator[list[Item]]],
    *,
    into: str | None = None,
    catch_up: Callable[[], AsyncIterator[list[Item]]] | None = None,
    on_batch: Callable[[Rebuilt, int], None] | None = None,
    wait_s: float = ALIAS_TTL_S + 1.0,
) -> Rebuilt:
    """Decide every article of ``source()`` again into a fresh namespace under ``policy``,
    switch ``ns`` to it, then decide ``catch_up()`` (what arrived meanwhile) there too.

    ``into``: go on with a namespace an earlier run started (else the next free name).
    Articles of other namespaces are skipped. ``on_batch(state, n)`` after each batch."""
    previous = await aliases.resolve(index, ns)
    target = into or aliases.next_target(ns, previous)
    if target == previous:
        raise ValueError(f"namespace {ns!r} is in use as {target!r}: rebuild into another one")
    if into is None and await index.stored_scheme(target) is not None:
        raise ValueError(
            f"{target!r} was started by an earlier rebuild of {ns!r} that did not switch: "
            f"go on with --into {target}, or start afresh into another name"
        )
    state = Rebuilt(ns, target, previous)
    engine = Engine(index, policy, policies={ns: policy}, aliases={ns: target})
    # what was taken down stays down: the ids the namespace remembers as deleted are
    # remembered in the rebuild before any article is decided there
    await index.remember_deleted(target, await index.read_deleted(previous))
    await _decide(engine, ns, source(), state, on_batch)
    if not state.read:  # an empty rebuild would hide every article
        raise ValueError(f"no article of namespace {ns!r} in the source: not switched")
    checked = engine.policy_for(target)
    await index.set_alias(ns, aliases.value(target, checked))
    state.switched = True
    await asyncio.sleep(wait_s)  # every worker has read the alias: all new go to target
    before = sum(state.verdicts.values())
    if catch_up is not None:
        await _decide(engine, ns, catch_up(), state, on_batch)
    await _carry_over(index, engine, ns, previous, state, on_batch)
    state.caught_up = sum(state.verdicts.values()) - before
    return state


async def _carry_over(
    index: Index,
    engine: Engine,
    ns: str,
    previous: str,
    state: Rebuilt,
    on_batch: Callable[[Rebuilt, int], None] | None,
) -> None:
    """After the switch, what the workers did in the old namespace while the rebuild ran:
    its takedowns are made in the rebuild too, and its articles the rebuild never decided
    (registered after the export, or missing from the source) are decided there, in the
    order they were registered. Nothing registered before the switch is lost with it."""
    gone = await index.read_deleted(previous)
    for doc_id in set(gone) - set(await index.read_deleted(state.target)):
        if await engine.delete(ns, doc_id):
            state.verdicts["deleted"] += 1
    await index.remember_deleted(state.target, gone)
    last = await index.last_seq(previous)
    for lo in range(1, last + 1, BATCH):
        got = await index.records(previous, list(range(lo, min(lo + BATCH, last + 1))))
        missing = []
        for seq in sorted(got):
            rec = Record.decode(got[seq])
            if rec.doc_id in state.decided or not rec.raw:
                continue
            if await index.seq_of(state.target, rec.doc_id) is None:  # (an earlier run's)
                missing.append(Article(rec.doc_id, rec.raw, ns, source=rec.source or None))
        await _process(engine, missing, state)
        if on_batch and missing:
            on_batch(state, len(missing))


async def _decide(
    engine: Engine,
    ns: str,
    batches: AsyncIterator[list[Item]],
    state: Rebuilt,
    on_batch: Callable[[Rebuilt, int], None] | None,
) -> None:
    async for batch in batches:
        run: list[Article] = []
        mine = [x for x in batch if x.namespace == ns]
        state.other_namespaces += len(batch) - len(mine)
        for item in [*mine, None]:
            if isinstance(item, Article):
                run.append(item)
                state.read += 1
                continue
            await _process(engine, run, state)  # the articles before a deletion, in order
            run = []
            if isinstance(item, Deletion) and await engine.delete(ns, item.id):
                state.verdicts["deleted"] += 1
        if on_batch:
            on_batch(state, len(batch))


async def _process(engine: Engine, articles: list[Article], state: Rebuilt) -> None:
    for article, res in zip(
        articles, await engine.process(articles) if articles else [], strict=True
    ):
        if isinstance(res, NeardupError):
            state.errors[res.reason] += 1
        else:
            state.verdicts[res.verdict] += 1
            state.decided.add(article.id)


class TopicSource:
    """The input topic, as the workers read it: first from its start to where it ended when
    :meth:`first` began, then (:meth:`rest`) from there to where it ends by then. Messages
    the workers would dead-letter are skipped and counted in ``invalid``."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        default_namespace: str = "default",
        max_message_bytes: int = 1_000_000,
    ) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.default_namespace = default_namespace
        self.max_message_bytes = max_message_bytes
        self.invalid: Counter[str] = Counter()  # what the workers dead-lettered, by reason
        self.total: int | None = None  # messages in the first pass, once known
        self._ends: dict[Any, int] | None = None

    def first(self) -> AsyncIterator[list[Item]]:
        return self._read(None)

    def rest(self) -> AsyncIterator[list[Item]]:
        return self._read(self._ends)

    async def _read(self, start: dict[Any, int] | None) -> AsyncIterator[list[Item]]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None
        )
        await consumer.start()
        try:
            parts = [TopicPartition(self.topic, p) for p in await self._partitions()]
            consumer.assign(parts)
            ends = await consumer.end_offsets(parts)
            begins = await consumer.beginning_offsets(parts)  # the log may start past 0
            for tp in parts:
                consumer.seek(tp, max(begins[tp], (start or {}).get(tp, 0)))
            if start is None:
                self.total = sum(ends[tp] - begins[tp] for tp in parts)
            left = {tp for tp in parts if await consumer.position(tp) < ends[tp]}
            while left:
                got = await consumer.getmany(*left, timeout_ms=1000, max_records=BATCH)
                batch: list[Item] = []
                for tp, msgs in got.items():
                    for m in msgs:
                        if m.offset < ends[tp]:
                            self._parse(m.key, m.value, m.headers, batch)
                    if await consumer.position(tp) >= ends[tp]:
                        left.discard(tp)
                yield batch
            self._ends = ends
        finally:
            await consumer.stop()

    async def _partitions(self, wait_s: float = 30.0) -> list[int]:
        """The topic's partitions, from the broker's metadata (asked again while a topic just
        created on Apache Kafka has none: a consumer's own metadata would keep saying none)."""
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            deadline = asyncio.get_running_loop().time() + wait_s
            while True:
                (desc,) = await admin.describe_topics([self.topic])
                found = sorted(p["partition"] for p in desc.get("partitions") or ())
                if found and not desc.get("error_code"):
                    return found
                if asyncio.get_running_loop().time() >= deadline:
                    raise ValueError(f"topic {self.topic!r} has no partitions on {self.bootstrap}")
                await asyncio.sleep(0.5)
        finally:
            await admin.close()

    def _parse(self, key: bytes | None, value: bytes | None, headers: Any, out: list[Item]) -> None:
        try:
            if value is None:
                ns, doc_id = parse_tombstone(key, list(headers or ()), self.default_namespace)
                out.append(Deletion(ns, doc_id))
            else:
                out.append(
                    parse_article(
                        value,
                        default_namespace=self.default_namespace,
                        max_text_bytes=self.max_message_bytes,
                    )
                )
        except InvalidMessage as exc:
            self.invalid[exc.reason] += 1


async def batches_of(articles: Iterable[Item], size: int = BATCH) -> AsyncIterator[list[Item]]:
    """Articles in lists of ``size``, as :func:`reindex` takes them."""
    batch: list[Item] = []
    for a in articles:
        batch.append(a)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
