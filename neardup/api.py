"""The Python front door: :class:`Index`, the engine the worker runs, called one text at a time.

Synchronous, as a datasketch user works: each call runs the engine on a private event loop, so
the Redis client the index opens lives on that one loop for the index's life.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from neardup.batch import Result, judged
from neardup.stream import extras, names
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.reindex import stored_records
from neardup.stream.engine.targets import Targets
from neardup.stream.errors import IndexFileError, NeardupError, SchemeMismatchError
from neardup.stream.index import memory_file
from neardup.stream.index.base import Index as _Store
from neardup.stream.index.base import NamespaceStats
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces import policies
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Record
from neardup.stream.schema import exact_id

__all__ = ["Index"]


async def _next_batch(
    batches: AsyncIterator[tuple[int, int, dict[int, bytes]]],
) -> dict[int, bytes] | None:
    """The next batch of records, or None after the last."""
    try:
        return (await anext(batches))[2]
    except StopAsyncIteration:
        return None


async def _scheme_fits(ns: str, stored: bytes, policy: Policy, where: str) -> None:
    """Refuse a saved namespace whose scheme ``policy`` does not give, as a store refuses it
    (a policy that differs only in a banding the stored one still serves is let through)."""
    probe = MemoryIndex()
    await probe.ensure_scheme(ns, stored)
    try:
        await Targets(probe, policy).ensure(ns, policy)
    except SchemeMismatchError as exc:
        raise SchemeMismatchError(f"{where}: {exc}") from None


def _saved_policy(fields: dict[str, Any], where: str) -> Policy:
    """The policy a saved file names, or :class:`IndexFileError` if this version cannot
    make it (a field it lacks, a value it refuses)."""
    try:
        return policies.from_json(fields)
    except ValueError as exc:
        raise IndexFileError(f"{where}: its policy does not read here ({exc})") from None


def _unpickled(data: bytes) -> Index:
    """An :class:`Index` from a pickle's bytes (:meth:`Index._saved`)."""
    return Index._from_saved(data, "a pickled Index", None)


class Index:
    """Texts registered under ids, judged against what came before.

    ``store``: ``"memory"`` (this process only, gone when it ends) or a ``redis://`` URL (the
    index the workers share: a text added here is found by them, and theirs here).
    ``namespace``: the collection texts go to; ``policy``: how they are judged (the defaults the
    worker uses; a namespace keeps the scheme it was built with).
    """

    def __init__(
        self, store: str = "memory", *, namespace: str = "default", policy: Policy | None = None
    ) -> None:
        if store != "memory" and not store.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"store must be 'memory' or a redis:// URL, not {store!r}")
        names.check_namespace(namespace)  # a ValueError naming the rule
        self.namespace = namespace
        self._loop = asyncio.new_event_loop()
        self._client: Any = None
        try:
            self._engine = Engine(self._run(self._open(store)), policy)
        except BaseException:
            self.close()
            raise

    async def _open(self, store: str) -> _Store:
        if store == "memory":
            return MemoryIndex()
        aioredis = extras.load("redis.asyncio", "redis", "a redis:// store")  # MissingExtra
        from neardup.stream.index.redis.index import RedisIndex

        self._client = aioredis.Redis.from_url(store)
        index = RedisIndex(self._client)
        await index.load_functions()
        return index

    def _run(self, call: Coroutine[Any, Any, Any]) -> Any:
        if self._loop.is_closed():
            call.close()  # never run: said so, not left to warn
            raise RuntimeError("this Index is closed")
        return self._loop.run_until_complete(call)

    def _judge(self, article: Article, *, register: bool, explain: bool) -> Verdict:
        (got,) = self._run(self._engine.process([article], register=register, explain=explain))
        if isinstance(got, NeardupError):
            raise got
        assert isinstance(got, Verdict)
        return got

    def add(self, doc_id: str | int, text: str, *, explain: bool = False, **fields: str) -> Verdict:
        """Register ``text`` as ``doc_id`` and return its verdict: ``original``, or what it
        copies (``duplicate_of``, ``similarity``, ``changes``). ``fields``: an article's
        optional fields (``title``, ``url``, ``source``, ``format``, ...). Adding an id again
        gives the verdict it was given the first time. ``doc_id``: a string (printable, at most
        512 bytes) or an int, which is its decimal text (``5`` is ``"5"``); anything else, a
        float included, is a ``ValueError`` (two ids never become one), as is a ``text`` with
        nothing to read (empty, or only invisible characters or markup: ``empty_text``)."""
        article = Article(exact_id(doc_id), text, self.namespace, **fields)
        return self._judge(article, register=True, explain=explain)

    def check(self, text: str, *, explain: bool = False, **fields: str) -> Verdict:
        """The verdict ``text`` would get, storing nothing (the id is a throwaway one); a
        ``ValueError`` for a text with nothing to read, as :meth:`add`."""
        article = Article(f"check-{uuid.uuid4()}", text, self.namespace, **fields)
        return self._judge(article, register=False, explain=explain)

    def query(self, text: str) -> list[str]:
        """The ids of the earlier texts ``text`` copies, the closest first; storing nothing."""
        verdict = self.check(text)
        ids = [m.id for m in verdict.matches]
        if verdict.duplicate_of and verdict.duplicate_of not in ids:
            ids.insert(0, verdict.duplicate_of)
        return ids

    def add_many(
        self,
        rows: Any,
        *,
        id_field: str = "id",
        text_field: str = "text",
        explain: bool = False,
    ) -> list[Result]:
        """Register every row and return their results in input order, a batch of 512 rows
        handed to the engine at once (as ``neardup dedup`` does): each a :class:`Verdict`, as
        :meth:`add` gives, or an :class:`~neardup.batch.Invalid` in the place of a row that
        cannot be judged (no id, an empty text...), so results line up with rows by position.
        ``rows``: ``(id, text)`` pairs, mappings (``id``, ``text`` and the optional fields:
        ``title``, ``url``, ``source``, ``format``...), a pandas DataFrame or a pyarrow Table
        with those columns; ``id_field`` / ``text_field`` name other ones. A later row is judged
        against the earlier ones, as if added one by one. For a corpus larger than memory,
        :meth:`judged` gives the results one at a time."""
        return list(self.judged(rows, id_field=id_field, text_field=text_field, explain=explain))

    def check_many(
        self,
        rows: Any,
        *,
        id_field: str = "id",
        text_field: str = "text",
        explain: bool = False,
    ) -> list[Result]:
        """The results the rows would get, storing nothing: each judged against the index
        alone, not against the other rows; the rows are :meth:`add_many`'s."""
        return list(
            self.judged(
                rows, id_field=id_field, text_field=text_field, explain=explain, register=False
            )
        )

    def judged(
        self,
        rows: Any,
        *,
        id_field: str = "id",
        text_field: str = "text",
        explain: bool = False,
        register: bool = True,
    ) -> Iterator[Result]:
        """:meth:`add_many` (or with ``register=False`` :meth:`check_many`) one result at a
        time, as a generator: a batch of rows is read, judged and registered only as its
        results are asked for, so nothing past what was read is added."""

        def process(batch: list[Article]) -> list[Verdict | NeardupError]:
            got = self._run(self._engine.process(batch, register=register, explain=explain))
            return list(got)

        return judged(rows, process, self.namespace, id_field, text_field)

    def remove(self, doc_id: str | int) -> bool:
        """Take ``doc_id`` down (it is never found again, as a Kafka tombstone does); whether it
        was there. ``doc_id`` as :meth:`add` takes it."""
        return bool(self._run(self._engine.delete(self.namespace, exact_id(doc_id))))

    def _where(self) -> str:
        """Where the namespace's texts are indexed (itself, or what ``neardup reindex``
        rebuilt it into), as the engine reads it."""
        where, _ = self._run(self._engine.targets.of(self.namespace))
        return str(where)

    def __contains__(self, doc_id: object) -> bool:
        """Whether ``doc_id`` is registered and not taken down (nor expired); ``5`` is
        ``"5"``, and an id :meth:`add` refuses is a ``ValueError`` here too."""
        seq = self._run(self._engine.index.seq_of(self._where(), exact_id(doc_id)))
        return seq is not None

    def __len__(self) -> int:
        """How many texts the namespace holds: registered, not taken down nor expired."""
        return int(self._run(self._engine.index.count(self._where())))

    def __iter__(self) -> Iterator[str]:
        """The ids of the texts the namespace holds, in the order they were registered; read
        a batch at a time (a big Redis namespace streams). Texts registered meanwhile by
        others are not listed; one taken down meanwhile may not be."""
        batches = stored_records(self._engine.index, self._where())
        try:
            while (got := self._run(_next_batch(batches))) is not None:
                yield from (Record.id_of(got[seq]) for seq in sorted(got))
        finally:
            if not self._loop.is_closed():
                self._run(batches.aclose())

    def stats(self) -> NamespaceStats:
        """What the namespace holds, as ``neardup namespaces`` reports it: ``documents``,
        ``copies``, ``clusters``, ``verdicts``, ``bytes``, ``scheme``, ..."""
        got: NamespaceStats = self._run(self._engine.index.stats(self._where()))
        return got

    def save(self, path: str | os.PathLike[str], *, compress: bool = False) -> None:
        """Write a memory index to ``path`` (whole or not at all: a temporary file renamed),
        for :meth:`load`: its texts, verdicts, deletions and policy, in a versioned file that
        holds data only (see :mod:`neardup.stream.index.memory_file`). ``compress``: zlib.
        A Redis index has nothing here to save (:class:`IndexFileError`)."""
        memory_file.write(path, self._saved(compress))

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, policy: Policy | None = None) -> Index:
        """A memory index as :meth:`save` left it, its namespace and policy with it; later
        adds get the verdicts they would have got had it never been saved. ``policy``: run it
        under another policy, which must give the scheme it was built with (else
        :class:`SchemeMismatchError`, naming both). A file that is not one, of another
        format version, cut short or damaged: :class:`IndexFileError`, saying which."""
        return cls._from_saved(Path(path).read_bytes(), str(path), policy)

    @classmethod
    def _from_saved(cls, data: bytes, where: str, policy: Policy | None) -> Index:
        header, body = memory_file.read_header(data, where)
        chosen = policy or _saved_policy(header.policy, where)
        index = cls(namespace=header.namespace, policy=chosen)
        try:
            if header.scheme is not None:  # refused before the body is read
                index._run(_scheme_fits(header.namespace, header.scheme, chosen, where))
            store = index._engine.index
            assert isinstance(store, MemoryIndex)
            store.put_space(header.namespace, memory_file.load(header, body, where))
        except BaseException:
            index.close()
            raise
        return index

    def _saved(self, compress: bool = False) -> bytes:
        """The bytes :meth:`save` writes (and a pickle carries)."""
        store = self._engine.index
        if not isinstance(store, MemoryIndex):
            raise IndexFileError(
                f"this Index's texts live in Redis: nothing here to save or pickle; copy "
                f"namespace {self.namespace!r} with neardup export {self.namespace} -o FILE"
            )
        targets = self._engine.targets
        where, policy = self._run(targets.of(self.namespace))
        policy = targets.checked.get(where, policy)  # the policy it runs under, as checked
        fields = policies.as_json(policy)
        return memory_file.dump(store.space(where), self.namespace, fields, compress=compress)

    def __reduce__(self) -> tuple[Callable[[bytes], Index], tuple[bytes]]:
        """A pickle of a memory index carries :meth:`save`'s bytes (read back as data)."""
        return _unpickled, (self._saved(),)

    def close(self) -> None:
        """Close the Redis connection and the loop; the index's texts stay in Redis."""
        if self._loop.is_closed():
            return
        if self._client is not None:
            self._run(self._client.aclose())
        self._loop.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
