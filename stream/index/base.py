"""The index contract the engine relies on; memory and Redis implement it identically.

The one operation that matters is :meth:`Index.register`: for each article, *in one atomic step*,
take the next sequence number of the namespace, read the content-hash slot and the buckets, and add
the article to them. Because reading and adding are one step, sequence order equals visibility
order: if A's seq < B's seq, B's probe sees A. "Earlier" always means "smaller seq".

Bucket semantics (both implementations): a bucket holds at most ``cap`` articles, the earliest
ones; past the cap a new article still *reads* the bucket but is not added (hot buckets are
boilerplate, empty or error pages: their later members add nothing but cost). The content-hash
slot lists the first ``COPIES_CAP`` copies of each text and is always read, so a verbatim copy of
a document in a hot bucket is still found, and deleting the first copy leaves the next to match.

Errors (:mod:`stream.errors`): a store that cannot be reached raises
:class:`~stream.errors.IndexUnavailableError` (retriable), a namespace built under another scheme
:class:`~stream.errors.SchemeMismatchError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

COPIES_CAP = 1024  # copies of one text the content slot lists (4 KB in Redis)


@dataclass(frozen=True, slots=True)
class Registration:
    doc_id: str
    content: bytes  # 16-byte hash of the normalised text
    buckets: tuple[int, ...]  # 64-bit bucket ids (band keys, SimHash table keys)
    record: bytes  # stream.records.Record.encode()
    at: float  # registration time, unix seconds (retention)


@dataclass(frozen=True, slots=True)
class Probe:
    seq: int
    status: Literal["new", "replay"]
    exact_seq: int | None  # the first article with the same content, if earlier than seq
    candidates: tuple[int, ...]  # earlier articles sharing a bucket, ascending, no repeats
    hot: int = 0  # buckets that were at their cap
    record: bytes | None = None  # replay: the stored record
    verdict: bytes | None = None  # replay: the stored verdict, if decided


class RegistrationStream(Protocol):
    """Chunks of one batch registered in the order sent, while the caller goes on working: the
    engine sketches the next chunk while the store registers the last one."""

    async def send(self, regs: Sequence[Registration]) -> None:
        """Hand a chunk over; the store may start on it at once. Does not wait for probes."""

    async def probes(self) -> list[Probe]:
        """The probes of every chunk sent, in order (waits for the store)."""


class BufferedRegistration:
    """A :class:`RegistrationStream` for stores with nothing to overlap (or no way to): it keeps
    the chunks and registers them all in :meth:`probes`, one ``register`` call."""

    def __init__(self, index: Index, ns: str, cap: int) -> None:
        self._index, self._ns, self._cap = index, ns, cap
        self._regs: list[Registration] = []

    async def __aenter__(self) -> BufferedRegistration:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._regs = []

    async def send(self, regs: Sequence[Registration]) -> None:
        self._regs += regs

    async def probes(self) -> list[Probe]:
        regs, self._regs = self._regs, []
        return await self._index.register(self._ns, regs, self._cap)


class Index(Protocol):
    round_trips: int  # calls that waited on the store; 0 for an in-process index (metrics)
    remote: bool  # calls wait on another process (the engine overlaps its own work with them)

    async def ensure_scheme(self, ns: str, scheme: bytes) -> None:
        """Record the scheme on first use; raise SchemeMismatchError if it differs."""

    async def register(self, ns: str, regs: Sequence[Registration], cap: int) -> list[Probe]:
        """Register-and-probe each article atomically, in the given order."""

    def registration(self, ns: str, cap: int) -> AbstractAsyncContextManager[RegistrationStream]:
        """A batch registered in chunks, in order (see :class:`RegistrationStream`)."""

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int]
    ) -> tuple[int | None, tuple[int, ...]]:
        """Read-only probe: first seq with this content, and all seqs in these buckets."""

    async def records(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]: ...

    async def verdicts(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]: ...

    async def put_verdicts(self, ns: str, items: Mapping[int, bytes]) -> None: ...

    async def seq_of(self, ns: str, doc_id: str) -> int | None: ...

    async def delete(self, ns: str, doc_id: str) -> bool:
        """Remove an article from its buckets, content slot, records and verdicts."""

    async def expire(self, ns: str, before: float, limit: int = 1000) -> int:
        """Delete up to ``limit`` articles registered before ``before``; return how many."""

    async def count(self, ns: str) -> int: ...


__all__ = [
    "COPIES_CAP",
    "BufferedRegistration",
    "Index",
    "Probe",
    "Registration",
    "RegistrationStream",
]
