"""The Python front door: :class:`Index`, the engine the worker runs, called one text at a time.

Synchronous, as a datasketch user works: each call runs the engine on a private event loop, so
the Redis client the index opens lives on that one loop for the index's life.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Iterator
from types import TracebackType
from typing import Any

from neardup.batch import Result, judged
from neardup.stream import extras
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.base import Index as _Store
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.schema import exact_id

__all__ = ["Index"]


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
        keys.check_namespace(namespace)  # a ValueError naming the rule
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

    def remove(self, doc_id: str) -> bool:
        """Take ``doc_id`` down (it is never found again, as a Kafka tombstone does); whether it
        was there."""
        return bool(self._run(self._engine.delete(self.namespace, doc_id)))

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
