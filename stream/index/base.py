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

Sequence numbers are 64-bit (8 bytes big-endian wherever Redis stores them) and stop at
``MAX_SEQ`` = 2**53, the largest count Lua's doubles hold exactly: a registration that could pass
it is refused (:class:`~neardup.stream.errors.SeqExhaustedError`) instead of wrapping; at a million
articles a second that is 285 years of one namespace.

Retention: with a window, ``live_after`` (the cutoff time) is passed to registration (in a
:class:`Window`) and lookup,
and the content slot answers with its first *live* copy, skipping copies past the cutoff that the
sweep (:meth:`Index.expire`) has not removed yet. Time is the store's clock (:meth:`Index.now`:
Redis's ``TIME``), so workers whose own clocks differ still agree on what is live.

The scheme: :meth:`Index.ensure_scheme` records it, and every registration call of a namespace
whose scheme was ensured checks it again in the same atomic step (and records it if the store lost
it), so a store that lost its data cannot let a worker with another scheme claim the namespace.

Deletion: :meth:`Index.delete` also remembers the id (for the namespace's retention window if it
has one, else ``Policy.deleted_ttl_s``; the registration call forgets ids deleted before its
``Window.forget_before``), and a remembered id is not registered again: its probe has status
``"deleted"``. Verdicts are written only while their seq still belongs to their article id.

Errors (:mod:`neardup.stream.errors`): a store that cannot be reached, or that answers with a
transient error (out of memory, read-only replica, loading, busy, cluster reconfiguring), raises
:class:`~neardup.stream.errors.IndexUnavailableError` (retriable), a namespace built under another
scheme or storage format :class:`~neardup.stream.errors.SchemeMismatchError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Protocol

import orjson

from neardup.sketch.canonical import LEGACY_FORM
from neardup.stream.errors import SchemeMismatchError

COPIES_CAP = 1024  # copies of one text the content slot lists (8 KB in Redis)
MAX_SEQ = 2**53  # the last sequence number: Lua's doubles are exact integers up to here
# A sharded namespace's own storage format (``shards`` > 1; absent: 1), in its scheme as
# ``sharded_format``. 2: bucket entries are keyed id hashes (BLAKE2b under the namespace's secret),
# each claimed by one id; 1 had unkeyed MurmurHash3 id hashes, which anyone can make collide
# (neardup.stream.index.redis.keys.id_hash).
SHARDED_FORMAT = 2


@dataclass(frozen=True, slots=True)
class Registration:
    doc_id: str
    content: bytes  # 16-byte hash of the normalised text
    buckets: tuple[int, ...]  # 64-bit bucket ids (band keys, SimHash table keys)
    record: bytes  # neardup.stream.records.Record.encode()
    at: float  # registration time, unix seconds (retention)


@dataclass(frozen=True, slots=True)
class Probe:
    seq: int  # 0 for a deleted id (nothing registered)
    status: Literal["new", "replay", "deleted"]
    exact_seq: int | None  # the first live article with the same content, if earlier than seq
    candidates: tuple[int, ...]  # earlier articles sharing a bucket, ascending, no repeats
    hot: int = 0  # buckets that were at their cap
    record: bytes | None = None  # replay: the stored record
    verdict: bytes | None = None  # replay: the stored verdict, if decided


@dataclass(frozen=True, slots=True)
class Checked:
    """What a read-only check of one article reads from the index (one call on Redis)."""

    own: int | None  # the article's seq when its id is registered (then nothing else is read)
    exact_seq: int | None  # else: the first live article with the same content
    candidates: tuple[int, ...]  # and the articles sharing a bucket, ascending, no repeats
    records: dict[int, bytes]  # stored records of own, or of exact_seq and the candidates
    verdicts: dict[int, bytes]  # their stored verdicts, where decided


@dataclass(frozen=True, slots=True)
class Window:
    """Times that bound a registration call: content-slot copies registered before
    ``live_after`` are past retention (None: no retention), and deletions remembered since before
    ``forget_before`` are forgotten first (None: none)."""

    live_after: float | None = None
    forget_before: float | None = None


NO_WINDOW = Window()


@dataclass(frozen=True, slots=True)
class NamespaceStats:
    """What a namespace holds (``GET /namespaces``, ``neardup namespaces``). ``bytes`` and
    ``hot_buckets`` are read from a sample of the shard keys on Redis (``sampled`` shards of
    ``shards``; 0 of 0 when exact), everything else is counted."""

    namespace: str
    documents: int
    copies: int  # articles that are not their cluster's original
    verdicts: int
    line_keys: int  # boilerplate counts kept
    bytes: int
    hot_buckets: int
    scheme: str | None
    policy: str | None
    sampled: int = 0
    shards: int = 0
    groups: int = 1  # shard groups of its buckets (1: one slot; Policy.shards)

    @property
    def clusters(self) -> int:
        """Every article is its cluster's original or one of its copies."""
        return self.documents - self.copies


class StoredVerdict(NamedTuple):
    """A verdict to store at a seq, with the article it is for: the store checks the seq still
    belongs to ``doc_id`` before writing."""

    doc_id: str
    verdict: bytes  # Verdict.to_json()


def scheme_fields(scheme: bytes | None) -> dict[str, Any] | None:
    """A stored scheme's parameters (``Policy.scheme()``, before the index's ``|shard_bits=``),
    or None when there is none or it is not readable."""
    if not scheme:
        return None
    try:
        value = orjson.loads(scheme.split(b"|", 1)[0])
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def scheme_format(scheme: bytes) -> int | None:
    """The storage format a stored scheme names (``Policy.scheme()['format']``), if readable."""
    fmt = (scheme_fields(scheme) or {}).get("format")
    return fmt if isinstance(fmt, int) else None


def canonical_form(scheme: bytes) -> str | None:
    """The canonical text form a stored scheme names (:data:`neardup.sketch.canonical.LEGACY_FORM`
    for schemes written before the form had a name), or None when the scheme is not readable."""
    value = scheme_fields(scheme)
    if value is None:
        return None
    form = value.get("canonical", LEGACY_FORM)
    return form if isinstance(form, str) else None


def scheme_shards(scheme: bytes | None) -> int:
    """The shard groups a stored scheme names (``Policy.scheme()['shards']``; absent, or no
    scheme: 1, one slot)."""
    n = (scheme_fields(scheme) or {}).get("shards", 1)
    return n if isinstance(n, int) and n >= 1 else 1


def sharded_format(scheme: bytes) -> int | None:
    """A sharded scheme's own storage format (``sharded_format``; a sharded scheme without it:
    1), None for a single-slot or unreadable scheme (it has no id hashes)."""
    value = scheme_fields(scheme)
    if value is None or scheme_shards(scheme) == 1:
        return None
    fmt = value.get("sharded_format", 1)
    return fmt if isinstance(fmt, int) else None


def sharded_format_mismatch(ns: str, old: int, new: int = SHARDED_FORMAT) -> SchemeMismatchError:
    """The refusal of a sharded namespace of another sharded storage format."""
    return SchemeMismatchError(
        f"namespace {ns!r} is sharded in sharded storage format {old}, this worker reads and "
        f"writes sharded format {new} (1: bucket entries are unkeyed MurmurHash3 id hashes, "
        "which a producer can make collide; 2: id hashes keyed by a secret of the namespace, "
        f"each held by one id) and cannot use it: export it (neardup export {ns} -o FILE) and "
        f"rebuild it (neardup reindex {ns} --from FILE), which switches readers to the rebuilt "
        "index"
    )


def scheme_mismatch(ns: str, stored: bytes, mine: bytes) -> SchemeMismatchError:
    """The refusal of a namespace indexed under another scheme, saying what to do about it."""
    old, new = scheme_format(stored), scheme_format(mine)
    if old != new:
        return SchemeMismatchError(
            f"namespace {ns!r} was indexed in storage format {old}, this worker reads and writes "
            f"format {new} (format 3: 64-bit sequence numbers; 4: short texts bucketed by their "
            "core, long records with their numbers) and cannot use it: re-index its "
            "articles into a new namespace, or flush the namespace (delete its keys "
            f"nd:{{{ns}}}:*) and re-index"
        )
    old_sh, new_sh = sharded_format(stored), sharded_format(mine)
    if old_sh != new_sh and old_sh and new_sh:
        return sharded_format_mismatch(ns, old_sh, new_sh)
    old_form, new_form = canonical_form(stored), canonical_form(mine)
    if old_form != new_form:
        return SchemeMismatchError(
            f"namespace {ns!r} was indexed with the canonical text form {old_form!r}; this "
            f"process folds texts to {new_form!r}, so its stored sketches do not compare with "
            f"new ones: export it (neardup export {ns} -o FILE) and rebuild it (neardup reindex "
            f"{ns} --from FILE), which switches readers to the rebuilt index"
        )
    return SchemeMismatchError(
        f"namespace {ns!r} was indexed with a different sketch scheme{_differing(stored, mine)}: "
        f"stored {stored!r}, this process uses {mine!r}; use another namespace or re-index"
    )


def _differing(stored: bytes, mine: bytes) -> str:
    """`` (differs in: bands, measure)`` when both schemes read as JSON, else nothing."""
    a, b = scheme_fields(stored), scheme_fields(mine)
    if a is None or b is None:
        return ""
    fields = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return f" (differs in: {', '.join(fields)})" if fields else ""


class RegistrationStream(Protocol):
    """Chunks of one batch registered in the order sent, while the caller goes on working: the
    engine sketches the next chunk while the store registers the last one."""

    async def send(self, regs: Sequence[Registration], window: Window = NO_WINDOW) -> None:
        """Hand a chunk over; the store may start on it at once. Does not wait for probes."""

    async def probes(self) -> list[Probe]:
        """The probes of every chunk sent, in order (waits for the store)."""


class BufferedRegistration:
    """A :class:`RegistrationStream` for stores with nothing to overlap (or no way to): it keeps
    the chunks and registers them all in :meth:`probes`, one ``register`` call."""

    def __init__(self, index: Index, ns: str, cap: int) -> None:
        self._index, self._ns, self._cap = index, ns, cap
        self._window = NO_WINDOW
        self._regs: list[Registration] = []

    async def __aenter__(self) -> BufferedRegistration:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._regs = []

    async def send(self, regs: Sequence[Registration], window: Window = NO_WINDOW) -> None:
        if self._regs and window != self._window:
            raise ValueError("the chunks of one buffered registration share one window")
        self._regs += regs
        self._window = window

    async def probes(self) -> list[Probe]:
        regs, self._regs = self._regs, []
        return await self._index.register(self._ns, regs, self._cap, window=self._window)


class Index(Protocol):
    round_trips: int  # calls that waited on the store; 0 for an in-process index (metrics)
    remote: bool  # calls wait on another process (the engine overlaps its own work with them)

    async def now(self, ns: str) -> float:
        """The clock of the store holding ``ns``, unix seconds: registration times, retention
        and liveness, one clock for every worker."""

    async def ensure_scheme(self, ns: str, scheme: bytes) -> None:
        """Record the scheme on first use; raise SchemeMismatchError if it differs. Later
        registrations in ``ns`` check it again atomically."""

    async def check_scheme(self, ns: str, scheme: bytes) -> bool:
        """:meth:`ensure_scheme` for a read-only caller: writes nothing. False when no scheme
        is recorded (nothing was ever indexed in ``ns``); raises SchemeMismatchError if the
        recorded one differs."""

    async def register(
        self, ns: str, regs: Sequence[Registration], cap: int, *, window: Window = NO_WINDOW
    ) -> list[Probe]:
        """Register-and-probe each article atomically, in the given order, within ``window``."""

    def registration(self, ns: str, cap: int) -> AbstractAsyncContextManager[RegistrationStream]:
        """A batch registered in chunks, in order (see :class:`RegistrationStream`)."""

    async def lookup(
        self, ns: str, content: bytes, buckets: Sequence[int], *, live_after: float | None = None
    ) -> tuple[int | None, tuple[int, ...]]:
        """Read-only probe: first live seq with this content, and all seqs in these buckets."""

    async def check(
        self,
        ns: str,
        doc_id: str,
        content: bytes,
        buckets: Sequence[int],
        *,
        live_after: float | None = None,
    ) -> Checked:
        """Read-only: the seq of ``doc_id``, else :meth:`lookup`; with the records and verdicts
        of what was found (what ``/check`` needs, in one round trip on a remote store)."""

    async def records(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]: ...

    async def verdicts(self, ns: str, seqs: Sequence[int]) -> dict[int, bytes]: ...

    async def put_verdicts(
        self,
        ns: str,
        items: Mapping[int, StoredVerdict],
        lines: Sequence[bytes] = (),
        cap: int = 0,
    ) -> None:
        """Store verdicts by seq, each only if the seq still belongs to its ``doc_id``; and
        count ``lines`` as :meth:`add_lines` does, in the same atomic step (a batch's lines are
        counted iff its verdicts are stored: a replay then knows what it must count)."""

    async def seq_of(self, ns: str, doc_id: str) -> int | None: ...

    async def delete(self, ns: str, doc_id: str) -> bool:
        """Remove an article from its buckets, content slot, records and verdicts, and remember
        its id as deleted (even if it was not indexed). True if it was indexed."""

    async def expire(self, ns: str, before: float, limit: int = 1000) -> int:
        """Delete up to ``limit`` articles registered before ``before``; return how many.
        (Deleted ids are forgotten by registration calls, see :class:`Window`.)"""

    async def count(self, ns: str) -> int: ...

    async def stored_scheme(self, ns: str) -> bytes | None:
        """The scheme the namespace was built with, as :meth:`ensure_scheme` recorded it."""

    async def policy_record(self, ns: str) -> bytes | None:
        """The decision settings last recorded for the namespace
        (:mod:`neardup.stream.namespaces.policies`)."""

    async def record_policy(self, ns: str, settings: bytes) -> None:
        """Record the decision settings a worker now applies to the namespace."""

    async def add_members(self, ns: str, items: Sequence[tuple[str, int, float]]) -> None:
        """Record copies as members of their clusters: ``(cluster id, seq, registered_at)``
        (an original is its own cluster and is not listed)."""

    async def members(
        self, ns: str, cluster: str, offset: int, limit: int
    ) -> tuple[list[tuple[int, float]], int, tuple[float, float] | None]:
        """A page of a cluster's copies, ``(seq, registered_at)`` by registration time, the
        number of copies, and the first and last registration times of the copies (None when
        it has none)."""

    async def namespaces(self) -> list[str]:
        """Every namespace whose scheme was recorded, sorted."""

    async def stats(self, ns: str) -> NamespaceStats: ...

    async def last_seq(self, ns: str) -> int:
        """The highest seq the namespace gave out (0 if none): its records are at 1..last_seq,
        less those deleted or expired."""

    async def drop(self, ns: str) -> int:
        """Remove every key of the namespace and its place in the registry (its alias, if it
        has one, stays); how many keys went. The caller decides that no name reads it."""

    async def read_deleted(self, ns: str) -> dict[str, float]:
        """The ids the namespace remembers as deleted, each with when (a rebuild carries them
        into the namespace it builds, so that no takedown comes back)."""

    async def remember_deleted(self, ns: str, deleted: Mapping[str, float]) -> None:
        """Remember ids as deleted at the given times (the later one where an id is remembered
        already): from then on no registration of them succeeds. Nothing is removed."""

    async def alias(self, ns: str) -> bytes | None:
        """What ``ns`` is an alias of (:mod:`neardup.stream.engine.reindex`: the namespace it
        was rebuilt into, and the policy it was rebuilt with), or None: ``ns`` is its own."""

    async def set_alias(self, ns: str, value: bytes) -> None:
        """Make ``ns`` an alias (see :meth:`alias`); every worker reads it within seconds."""

    async def line_counts(self, ns: str, lines: Sequence[bytes]) -> list[int]:
        """How many documents had each 16-byte line key (:mod:`neardup.sketch.lines`), as counted by
        :meth:`add_lines`: an estimate that only grows while the line recurs (see there)."""

    async def add_lines(self, ns: str, lines: Sequence[bytes], cap: int) -> None:
        """Count one more document for each line key (a key once per document). The counts
        live in two generations of at most ``cap`` keys: when the current one outgrows it, it
        becomes the previous one and the one before is dropped, so memory is bounded and a line
        that keeps recurring (boilerplate) keeps a count, while one seen once is forgotten."""


__all__ = [
    "COPIES_CAP",
    "MAX_SEQ",
    "NO_WINDOW",
    "SHARDED_FORMAT",
    "BufferedRegistration",
    "Checked",
    "Index",
    "NamespaceStats",
    "Probe",
    "Registration",
    "RegistrationStream",
    "StoredVerdict",
    "Window",
    "canonical_form",
    "scheme_fields",
    "scheme_format",
    "scheme_mismatch",
    "scheme_shards",
    "sharded_format",
    "sharded_format_mismatch",
]
