"""The fault checker's judge: a run's history from the outside in, a list of violations out.

Pure (no servers), so each invariant is tested on hand-made histories. :func:`check` returns one
:class:`Violation` per broken promise, named by the invariant (:data:`INVARIANTS`):

- ``verdicts``: every accepted (valid, never deleted) article has a verdict;
- ``repeats``: all verdicts of one article are identical (at-least-once may repeat, never differ);
- ``originals``: a group of near-copies has one original (exactly one once all have verdicts);
- ``deleted``: a tombstone is answered by a verdict tombstone, no verdict follows it, and the
  article is nowhere in the index;
- ``dlq``: the dead-letter topic holds exactly the poison, each with an expected reason;
- ``index``: index entries and records agree (unless a bucket or slot is full), one seq width;
- ``offsets``: committed input offsets never go back across a broker restart, and no output
  offset ever held two different records;
- ``workers``: no worker exited by itself, except while the broker was down;
- ``quiesce``: the stack settled (every expected outcome seen) within its time bound.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from neardup.stream.worker.messages import split_verdict_key

__all__ = [
    "DELETED_REPLAY_REASONS",
    "INVARIANTS",
    "Exit",
    "History",
    "IndexDump",
    "OffsetCheck",
    "Out",
    "Poison",
    "StoredRecord",
    "Violation",
    "check",
]

INVARIANTS = (
    "verdicts",
    "repeats",
    "originals",
    "deleted",
    "dlq",
    "index",
    "offsets",
    "workers",
    "quiesce",
)
# A replay of a deleted article's old message may be dead-lettered as such (or answered by
# nothing, or by another verdict tombstone); any other dead letter of a valid article is wrong.
DELETED_REPLAY_REASONS = frozenset({"deleted"})


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.detail}"


@dataclass(frozen=True)
class Out:
    """One record of the verdict topic (``topic="verdicts"``) or the dead-letter topic (``"dlq"``),
    with its place in its partition; ``value`` None is a tombstone."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class Poison:
    """A message that must be dead-lettered: its Kafka key starts with ``key_prefix`` (a key may be
    cut when it is too large), with one of ``reasons``."""

    name: str
    key_prefix: bytes
    reasons: frozenset[str]


@dataclass(frozen=True)
class StoredRecord:
    """What the index's record of an article says (decoded by :mod:`neardup.stream.records`)."""

    doc_id: str
    content: bytes
    buckets: tuple[int, ...]


@dataclass
class IndexDump:
    """One namespace of the Redis index, decoded: seqs as ints, with the widths found."""

    seq_bytes: int
    counter: int
    ids: dict[str, int] = field(default_factory=dict)
    records: dict[int, StoredRecord] = field(default_factory=dict)
    buckets: dict[int, list[int]] = field(default_factory=dict)  # bucket id -> seqs
    slots: dict[bytes, list[int]] = field(default_factory=dict)  # content hash -> seqs
    times: set[int] = field(default_factory=set)
    verdicts: set[int] = field(default_factory=set)
    bucket_cap: int = 256
    copies_cap: int = 1024
    problems: list[str] = field(default_factory=list)  # undecodable entries, width mismatches
    # a sharded namespace: bucket id -> entries of articles that never took a seq (added to
    # their buckets by a worker that died or was refused before step 2; ignored by readers)
    unregistered: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class OffsetCheck:
    """The group's committed input offsets (partition -> offset) read just before a broker was
    killed and again once it was back; ``error`` when they could not be read back."""

    at_s: float
    before: dict[int, int]
    after: dict[int, int]
    error: str = ""


@dataclass(frozen=True)
class Exit:
    """How one worker process ended: ``killed`` by the schedule, ``stopped`` by the run's end,
    else by itself; ``broker_away``: while the broker was down or just back."""

    name: str
    code: int | None
    killed: bool
    stopped: bool
    log_tail: str = ""
    broker_away: bool = False


@dataclass
class History:
    articles: dict[str, str]  # id -> namespace of every valid article produced
    groups: list[list[str]]  # near-copy groups (ids); singletons are not listed
    deleted: set[str]  # ids a tombstone was produced for
    poison: list[Poison]
    outputs: list[Out]
    index: dict[str, IndexDump]  # namespace -> dump
    exits: list[Exit]
    quiesced: bool = True
    quiesce_note: str = ""
    offsets: list[OffsetCheck] = field(default_factory=list)  # one per broker restart


Verdicts = Mapping[str, list[tuple[Out, dict[str, Any]]]]  # article id -> its verdicts, in order


def check(h: History) -> list[Violation]:
    """Every violation of the run, invariant by invariant (see the module docstring)."""
    verdicts = _verdicts_by_id(h.outputs)
    out: list[Violation] = []
    out += _check_verdicts(h, verdicts)
    out += _check_repeats(verdicts)
    out += _check_originals(h, verdicts)
    out += _check_deleted(h)
    out += _check_dlq(h, verdicts)
    for ns, dump in sorted(h.index.items()):
        out += _check_index(ns, dump, h)
    out += _check_offsets(h)
    out += _check_exits(h.exits)
    if not h.quiesced:
        out.append(Violation("quiesce", h.quiesce_note or "the stack did not settle in time"))
    return out


def _key(o: Out) -> str:
    """The article id a record is about: a verdict of another namespace than the worker's is
    keyed ``namespace + KEY_SEPARATOR + id`` (neardup.stream.worker.pipeline.verdict_key)."""
    return split_verdict_key(o.key or b"")[1]


def _verdicts_by_id(outputs: Iterable[Out]) -> dict[str, list[tuple[Out, dict[str, Any]]]]:
    by_id: dict[str, list[tuple[Out, dict[str, Any]]]] = defaultdict(list)
    for o in outputs:
        if o.topic == "verdicts" and o.value is not None:
            try:
                v = orjson.loads(o.value)
            except orjson.JSONDecodeError:
                v = {"id": _key(o), "unparsable": o.value[:200].decode("utf-8", "replace")}
            by_id[str(v.get("id", _key(o)))].append((o, v))
    return by_id


def _check_verdicts(h: History, verdicts: Verdicts) -> Iterator[Violation]:
    missing = sorted(i for i in h.articles if i not in h.deleted and i not in verdicts)
    if missing:
        yield Violation("verdicts", f"{len(missing)} accepted articles have no verdict: {missing}")


def _check_repeats(verdicts: Verdicts) -> Iterator[Violation]:
    for ident, vs in sorted(verdicts.items()):
        (o1, first), *later = vs
        for o, other in later:
            if other != first:
                yield Violation(
                    "repeats",
                    f"{ident}: verdict at {o.partition}/{o.offset} differs from the first "
                    f"({o1.partition}/{o1.offset}): {first} != {other}",
                )
                break


def _check_originals(h: History, verdicts: Verdicts) -> Iterator[Violation]:
    for group in h.groups:
        decided = {i: verdicts[i][0][1] for i in group if i in verdicts}
        originals = sorted(i for i, v in decided.items() if v.get("verdict") == "original")
        if len(originals) > 1:
            shown = {i: (v.get("verdict"), v.get("duplicate_of")) for i, v in decided.items()}
            yield Violation("originals", f"group {group} has originals {originals}: {shown}")
        elif not originals and len(decided) == len(group):
            yield Violation("originals", f"group {group} has no original: {decided}")


def _check_deleted(h: History) -> Iterator[Violation]:
    by_key: dict[str, list[Out]] = defaultdict(list)
    for o in h.outputs:
        if o.topic == "verdicts":
            by_key[_key(o)].append(o)
    for ident in sorted(h.deleted):
        records = by_key.get(ident, [])
        tombs = [o for o in records if o.value is None]
        if not tombs:
            yield Violation("deleted", f"{ident}: its tombstone got no verdict tombstone")
        else:
            t = min(tombs, key=lambda o: o.offset)
            later = [
                o
                for o in records
                if o.value is not None and o.partition == t.partition and o.offset > t.offset
            ]
            if later:
                where = [f"{o.partition}/{o.offset}" for o in later]
                yield Violation(
                    "deleted",
                    f"{ident}: verdicts at {where} after its verdict tombstone at "
                    f"{t.partition}/{t.offset} (the takedown came back)",
                )
        seqs = set()
        for o in records:
            if o.value is not None:
                seq = orjson.loads(o.value).get("seq")
                if isinstance(seq, int):
                    seqs.add(seq)
        ns = h.articles.get(ident)
        dump = h.index.get(ns) if ns is not None else None
        if dump is not None:
            yield from _deleted_in_index(ident, seqs, dump)


def _deleted_in_index(ident: str, seqs: set[int], d: IndexDump) -> list[Violation]:
    where = []
    if ident in d.ids:
        where.append(f"id index (seq {d.ids[ident]})")
    mine = {s for s, r in d.records.items() if r.doc_id == ident} | seqs
    for s in sorted(mine):
        if s in d.records:
            where.append(f"record {s}")
        if any(s in v for v in d.buckets.values()):
            where.append(f"buckets (seq {s})")
        if any(s in v for v in d.slots.values()):
            where.append(f"content slot (seq {s})")
        if s in d.times:
            where.append(f"time index (seq {s})")
        if s in d.verdicts:
            where.append(f"stored verdicts (seq {s})")
    return [Violation("deleted", f"{ident}: deleted but still in the {where}")] if where else []


def _check_dlq(h: History, verdicts: Verdicts) -> Iterator[Violation]:
    seen: dict[str, set[str]] = defaultdict(set)
    for o in h.outputs:
        if o.topic != "dlq":
            continue
        try:
            body = orjson.loads(o.value or b"")
            reason = str(body.get("reason"))
        except (orjson.JSONDecodeError, AttributeError):
            yield Violation("dlq", f"dead letter at {o.partition}/{o.offset} is not JSON")
            continue
        raw_key = o.key or b""
        shown_key = str(body.get("key") or "").encode("utf-8", "replace")
        poison = next(
            (
                p
                for p in h.poison
                if raw_key.startswith(p.key_prefix) or shown_key.startswith(p.key_prefix)
            ),
            None,
        )
        key = _key(o)
        if poison is not None:
            seen[poison.name].add(reason)
            if reason not in poison.reasons:
                yield Violation(
                    "dlq",
                    f"poison {poison.name} dead-lettered as {reason!r}, expected one of "
                    f"{sorted(poison.reasons)}",
                )
        elif key in h.articles:
            tombstone = body.get("value_bytes") == 0 and body.get("value") in ("", None)
            if key in h.deleted and reason in DELETED_REPLAY_REASONS:
                continue
            what = "the tombstone of" if tombstone else "the valid article"
            yield Violation("dlq", f"{what} {key} was dead-lettered as {reason!r}")
        else:
            where = f"{o.partition}/{o.offset}"
            yield Violation("dlq", f"unknown dead letter {key[:60]!r} ({reason!r}) at {where}")
    for p in h.poison:
        if p.name not in seen:
            got = "it got a verdict" if _poison_verdict(p, verdicts) else "nothing"
            yield Violation(
                "dlq",
                f"poison {p.name} (expected {sorted(p.reasons)}) is not in the dead-letter "
                f"topic; {got}",
            )


def _poison_verdict(p: Poison, verdicts: Verdicts) -> bool:
    return any(
        (o.key or b"").startswith(p.key_prefix) or ident.encode().startswith(p.key_prefix)
        for ident, vs in verdicts.items()
        for o, _v in vs
    )


def _check_index(ns: str, d: IndexDump, h: History) -> list[Violation]:
    bad = [f"{ns}: {p}" for p in d.problems]
    for b, seqs in sorted(d.buckets.items()):
        for s in seqs:
            rec = d.records.get(s)
            if rec is None:
                bad.append(f"{ns}: bucket {b:016x} holds seq {s}, which has no record")
            elif b not in rec.buckets:
                bad.append(f"{ns}: bucket {b:016x} holds seq {s} ({rec.doc_id}), not its bucket")
        if len(set(seqs)) != len(seqs):
            bad.append(f"{ns}: bucket {b:016x} holds a seq twice: {seqs}")
    for c, seqs in sorted(d.slots.items()):
        for s in seqs:
            rec = d.records.get(s)
            if rec is None:
                bad.append(f"{ns}: content slot {c.hex()} holds seq {s}, which has no record")
            elif rec.content != c:
                bad.append(f"{ns}: content slot {c.hex()} holds seq {s} of another text")
    for s, rec in sorted(d.records.items()):
        for b in rec.buckets:
            held = d.buckets.get(b, [])
            if s not in held and len(held) + d.unregistered.get(b, 0) < d.bucket_cap:
                bad.append(f"{ns}: record {s} ({rec.doc_id}) is missing from its bucket {b:016x}")
        slot = d.slots.get(rec.content, [])
        if s not in slot and len(slot) < d.copies_cap:
            bad.append(f"{ns}: record {s} ({rec.doc_id}) is missing from its content slot")
        if d.ids.get(rec.doc_id) != s:
            said = d.ids.get(rec.doc_id)
            bad.append(f"{ns}: record {s} is {rec.doc_id!r}, the id index says seq {said}")
        if s > d.counter:
            bad.append(f"{ns}: record {s} is above the seq counter {d.counter}")
    for ident, s in sorted(d.ids.items()):
        if s not in d.records:
            bad.append(f"{ns}: id {ident!r} points at seq {s}, which has no record")
    if d.times != set(d.records):
        bad.append(
            f"{ns}: time index and records differ: only in times {sorted(d.times - set(d.records))}"
            f", only in records {sorted(set(d.records) - d.times)}"
        )
    if not d.verdicts <= set(d.records):
        bad.append(f"{ns}: stored verdicts without a record: {sorted(d.verdicts - set(d.records))}")
    known = {i for i, n in h.articles.items() if n == ns}
    strangers = sorted(i for i in d.ids if i not in known)
    if strangers:
        bad.append(f"{ns}: ids that were never produced as valid articles: {strangers}")
    return [Violation("index", b) for b in bad]


def _check_offsets(h: History) -> Iterator[Violation]:
    for c in h.offsets:
        back = {p: (o, c.after.get(p)) for p, o in c.before.items() if c.after.get(p, -1) < o}
        if c.error:
            yield Violation("offsets", f"restart at {c.at_s:.1f}s: {c.error}")
        elif back:
            yield Violation(
                "offsets",
                f"restart at {c.at_s:.1f}s: committed offsets went back (partition: before, "
                f"after) {back}",
            )
    held: dict[tuple[str, int, int], Out] = {}
    for o in h.outputs:
        first = held.setdefault((o.topic, o.partition, o.offset), o)
        if (first.key, first.value) != (o.key, o.value):
            yield Violation(
                "offsets",
                f"{o.topic} {o.partition}/{o.offset} held two records: {_raw_key(first)!r} "
                f"then {_key(o)!r} (the log lost records and reused their offsets)",
            )
            return


def _raw_key(o: Out) -> str:
    return (o.key or b"").decode("utf-8", "replace")


def _check_exits(exits: Iterable[Exit]) -> Iterator[Violation]:
    for e in exits:
        if not e.killed and not e.stopped and not e.broker_away:
            yield Violation(
                "workers", f"{e.name} exited by itself with code {e.code}:\n{e.log_tail}"
            )
