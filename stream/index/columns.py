"""The in-memory index's buckets in columns: bucket id -> the seqs added to it, earliest first.

A dict of Python ints costs about 100 bytes a (bucket, seq) entry, and a namespace holds some
twenty a document: most of its memory. Here the entries live in sorted runs of two numpy columns
(bucket ids, seqs: 16 bytes an entry), oldest run first, and the newest ones in a dict. The dict
becomes a run once it holds :data:`MERGE_MIN` entries (so it stays a few MB), and the newest run
is merged into the one before it while it holds a quarter of its entries or more: a few runs,
each entry merged a few times, in time linear in the runs merged. A removed entry of a run is
marked dead until a merge drops it. Reads and additions see the runs and the dict together, in
that order: a bucket's members stay earliest first, as the Redis index keeps them.

A slot of the dict (and of the index's content slots) is one seq, or several packed as native
int64: ints and bytes are not garbage-collector objects, so a big dict of them is never scanned
by a full collection.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain, compress, pairwise, repeat
from operator import is_not
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

Slot = int | bytes
K = TypeVar("K", int, bytes)
MERGE_MIN = 1 << 16  # dict entries before the first merge
_ORDER = sys.byteorder  # memoryview.cast reads native order
_U32_MAX = (1 << 32) - 1


def seqs_of(slot: Slot) -> Sequence[int]:
    return (slot,) if isinstance(slot, int) else memoryview(slot).cast("q")


def size_of(slot: Slot) -> int:
    return 1 if isinstance(slot, int) else len(slot) // 8


def with_seq(slot: Slot, seq: int) -> bytes:
    head = slot.to_bytes(8, _ORDER) if isinstance(slot, int) else slot
    return head + seq.to_bytes(8, _ORDER)


def _packed(seqs: Sequence[int]) -> bytes:
    return b"".join(s.to_bytes(8, _ORDER) for s in seqs)


def take_out(table: dict[K, Slot], key: K, seq: int) -> None:
    """Remove a seq from a slot; an emptied slot goes."""
    slot = table.get(key)
    if slot is None:
        return
    rest = [s for s in seqs_of(slot) if s != seq]
    if not rest:
        del table[key]
    elif len(rest) == 1:
        table[key] = rest[0]
    else:
        table[key] = b"".join(s.to_bytes(8, _ORDER) for s in rest)


class _Run:
    """Entries sorted by bucket id, each bucket's earliest first; removed ones marked dead.
    Seqs are kept in 4 bytes while they fit (:func:`_narrow`); the dead marks only once one
    dies."""

    __slots__ = ("dead", "dead_count", "ids", "seqs")

    def __init__(self, ids: npt.NDArray[np.uint64], seqs: npt.NDArray[Any]) -> None:
        self.ids, self.seqs = ids, _narrow(seqs)
        self.dead: npt.NDArray[np.bool_] | None = None
        self.dead_count = 0

    def __len__(self) -> int:
        return len(self.ids) - self.dead_count

    def live(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[Any]]:
        if self.dead is None or not self.dead_count:
            return self.ids, self.seqs
        keep = ~self.dead
        return self.ids[keep], self.seqs[keep]

    def find(self, uniq: npt.NDArray[np.uint64]) -> Iterable[tuple[int, list[int]]]:
        """For sorted distinct bucket ids: (position in ``uniq``, live seqs) of those held."""
        if not len(self.ids):
            return
        lo = np.searchsorted(self.ids, uniq, "left")
        hit = np.flatnonzero(self.ids[np.minimum(lo, len(self.ids) - 1)] == uniq)
        if not len(hit):  # most buckets are new: only those found are searched for their end
            return
        hi = np.searchsorted(self.ids, uniq[hit], "right")
        dead = self.dead if self.dead_count else None
        for u, a, b in zip(hit.tolist(), lo[hit].tolist(), hi.tolist(), strict=True):
            if dead is not None and dead[a:b].any():
                yield u, self.seqs[a:b][~dead[a:b]].tolist()
            else:
                yield u, self.seqs[a:b].tolist()

    def kill(self, bucket: int, seq: int) -> None:
        """Mark the bucket's entry of ``seq`` dead."""
        a = int(np.searchsorted(self.ids, np.uint64(bucket), "left"))
        b = int(np.searchsorted(self.ids, np.uint64(bucket), "right"))
        if self.dead is None:
            self.dead = np.zeros(len(self.ids), np.bool_)
        at = np.flatnonzero((self.seqs[a:b] == seq) & ~self.dead[a:b]) + a
        self.dead[at] = True
        self.dead_count += len(at)


def _narrow(seqs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Seqs as uint32 when every one fits (a namespace's first four billion articles: 4 bytes
    an entry instead of 8), else as int64."""
    if len(seqs) and (int(seqs.min()) < 0 or int(seqs.max()) > _U32_MAX):
        return seqs.astype(np.int64, copy=False)
    return seqs.astype(np.uint32, copy=False)


def _merged(
    old: tuple[npt.NDArray[np.uint64], npt.NDArray[Any]],
    new: tuple[npt.NDArray[np.uint64], npt.NDArray[Any]],
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[Any]]:
    """Two runs' live entries as one, ``new``'s after ``old``'s in each bucket."""
    at = np.searchsorted(old[0], new[0], "right")  # after the bucket's earlier members
    wide = np.int64 if np.int64 in (old[1].dtype, new[1].dtype) else np.uint32
    return np.insert(old[0], at, new[0]), np.insert(
        old[1].astype(wide, copy=False), at, new[1].astype(wide, copy=False)
    )


class Buckets:
    """Bucket id -> seqs, earliest first (see the module doc)."""

    def __init__(self, merge_min: int = MERGE_MIN) -> None:
        self._merge_min = merge_min
        self._runs: list[_Run] = []
        self._new: dict[int, Slot] = {}
        self._new_entries = 0

    def __len__(self) -> int:
        """(bucket, seq) entries held."""
        return sum(map(len, self._runs)) + self._new_entries

    def add(self, ids: Sequence[int], seq: int, cap: int, found: set[int]) -> int:
        """Read each bucket into ``found`` and add ``seq`` to those under ``cap`` members;
        the number at their cap (hot): :meth:`add_batch` of one."""
        (got,), (hot,) = self.add_batch([ids], [seq], cap)
        found.update(got)
        return hot

    def add_batch(
        self, groups: Sequence[Sequence[int]], seqs: Sequence[int], cap: int
    ) -> tuple[list[tuple[int, ...]], list[int]]:
        """:meth:`add` for each group of bucket ids with its seq, in order (each sees the ones
        before), as one pass over the batch: per group the seqs found, ascending, and the number
        of its buckets at their cap. Python touches only the buckets that already hold seqs or
        that several groups name; the rest (most) are read and added to in bulk. Call
        :meth:`settle` after."""
        n = len(groups)
        lens = np.fromiter(map(len, groups), np.int64, n)
        total = int(lens.sum()) if n else 0
        if not total:
            return [()] * n, [0] * n
        flat = np.fromiter(chain.from_iterable(groups), np.uint64, total)
        uniq, inv = np.unique(flat, return_inverse=True)
        # distinct (bucket, group) pairs, by bucket then group; a bucket named twice counts twice
        pairs, mult = np.unique(
            inv.astype(np.int64) * n + np.repeat(np.arange(n), lens), return_counts=True
        )
        pu, pg = np.divmod(pairs, n)
        first = np.searchsorted(pu, np.arange(len(uniq)))
        rank = np.arange(len(pairs)) - first[pu]  # earlier groups of the batch naming it
        named = np.diff(np.append(first, len(pairs)))
        held, olds, slots = self._held(uniq)
        allowed = np.maximum(cap - held, 0)
        added = rank < allowed[pu]
        hot_pairs = np.where(rank >= allowed[pu], mult, 0)
        hot = np.bincount(pg, weights=hot_pairs, minlength=n).astype(np.int64).tolist()
        seq_of = np.asarray(seqs, np.int64)
        found_g: list[int] = []
        found_s: list[int] = []
        busy = np.flatnonzero((held > 0) | (named > 1)).tolist()
        ulist: list[int] = uniq.tolist()
        new = self._new
        for u in busy:
            at, k, a = int(first[u]), int(named[u]), int(allowed[u])
            members = olds.get(u, [])
            slot = slots.get(u)
            if slot is not None:
                members = [*members, *seqs_of(slot)]
            gs: list[int] = pg[at : at + k].tolist()
            adders: list[int] = seq_of[gs[: min(a, k)]].tolist()
            for r, g in enumerate(gs):
                seen = members + adders[: min(r, a)]
                found_g += [g] * len(seen)
                found_s += seen
            if adders:
                run = ([] if slot is None else list(seqs_of(slot))) + adders
                new[ulist[u]] = run[0] if len(run) == 1 else _packed(run)
        quiet = added & ~((held > 0) | (named > 1))[pu]  # first seq of a bucket new to it
        new.update(zip(uniq[pu[quiet]].tolist(), seq_of[pg[quiet]].tolist(), strict=True))
        self._new_entries += int(added.sum())
        return self._split(found_g, found_s, n), hot

    def _held(
        self, uniq: npt.NDArray[np.uint64], count: bool = True
    ) -> tuple[npt.NDArray[np.int64], dict[int, list[int]], dict[int, Slot]]:
        """For sorted distinct bucket ids: the live seqs each holds, counted; the columns' seqs
        and the dict's slot of those (by position in ``uniq``) that hold any. Without
        ``count``, the counts are zeros (a read needs none)."""
        olds: dict[int, list[int]] = {}
        for run in self._runs:  # oldest first
            for u, seqs in run.find(uniq):
                olds[u] = olds.get(u, []) + seqs
        slots: dict[int, Slot] = {}
        if self._new:
            got = list(map(self._new.get, uniq.tolist()))
            for u in compress(range(len(got)), map(is_not, got, repeat(None))):
                slots[u] = got[u]  # type: ignore[assignment]  # not None: compress chose it
        held = np.zeros(len(uniq), np.int64)
        if not count:
            return held, olds, slots
        if olds:
            held[list(olds)] = [len(v) for v in olds.values()]
        if slots:
            held[list(slots)] += [size_of(v) for v in slots.values()]  # distinct positions
        return held, olds, slots

    @staticmethod
    def _split(groups: list[int], seqs: list[int], n: int) -> list[tuple[int, ...]]:
        """(group, seq) pairs -> per group its distinct seqs, ascending."""
        if not seqs:
            return [()] * n
        g = np.asarray(groups, np.int64)
        s = np.asarray(seqs, np.int64)
        order = np.lexsort((s, g))
        g, s = g[order], s[order]
        keep = np.ones(len(s), np.bool_)
        keep[1:] = (g[1:] != g[:-1]) | (s[1:] != s[:-1])
        g, s = g[keep], s[keep]
        bounds: list[int] = np.searchsorted(g, np.arange(n + 1)).tolist()
        flat: list[int] = s.tolist()
        return [tuple(flat[a:b]) for a, b in pairwise(bounds)]

    def read(self, ids: Iterable[int]) -> set[int]:
        """Every seq in any of the buckets."""
        _, olds, slots = self._held(np.unique(np.fromiter(ids, np.uint64)), count=False)
        found: set[int] = set()
        for seqs in olds.values():
            found.update(seqs)
        for slot in slots.values():
            found.update(seqs_of(slot))
        return found

    def members(self, bucket: int) -> list[int]:
        """A bucket's seqs, earliest first."""
        _, olds, slots = self._held(np.array([bucket], np.uint64), count=False)
        return olds.get(0, []) + (list(seqs_of(slots[0])) if 0 in slots else [])

    def remove(self, ids: Iterable[int], seq: int) -> None:
        for b in set(ids):
            if b in self._new:
                before = size_of(self._new[b])
                take_out(self._new, b, seq)
                self._new_entries -= before - (size_of(self._new[b]) if b in self._new else 0)
            for run in self._runs:
                run.kill(b, seq)

    def hot(self, cap: int) -> int:
        """Buckets with ``cap`` members or more."""
        sizes: Counter[int] = Counter()
        live = [run.live()[0] for run in self._runs]
        if live:
            ids, counts = np.unique(np.concatenate(live), return_counts=True)
            sizes.update(dict(zip(ids.tolist(), counts.tolist(), strict=True)))
        for b, slot in self._new.items():
            sizes[b] += size_of(slot)
        return sum(1 for n in sizes.values() if n >= cap)

    def settle(self) -> None:
        """Make the dict a run once it holds :data:`MERGE_MIN` entries; merge the newest run
        into the one before while it holds a quarter of its entries or more."""
        if self._new_entries < self._merge_min:
            return
        self._runs.append(_Run(*self._dict_entries()))
        self._new = {}
        self._new_entries = 0
        while len(self._runs) > 1 and 4 * len(self._runs[-1]) >= len(self._runs[-2]):
            new = self._runs.pop()
            self._runs[-1] = _Run(*_merged(self._runs[-1].live(), new.live()))

    def _dict_entries(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
        """The dict's entries as a run: by bucket id, each bucket's in the order added."""
        keys, slots = list(self._new), list(self._new.values())
        one = np.fromiter(map(isinstance, slots, repeat(int)), np.bool_, len(slots))
        runs = [np.frombuffer(s, np.int64) for s in slots if isinstance(s, bytes)]  # several
        ids = np.concatenate(
            [
                np.fromiter(compress(keys, one), np.uint64),
                np.repeat(
                    np.fromiter(compress(keys, ~one), np.uint64), [len(r) for r in runs]
                ).astype(np.uint64),
            ]
        )
        seqs = np.concatenate([np.fromiter(compress(slots, one), np.int64), *runs])
        order = np.argsort(ids, kind="stable")  # a bucket's members stay in the order added
        return ids[order], seqs[order]

    def entries(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[Any]]:
        """Every live (bucket, seq) entry as two columns, by bucket id and each bucket's
        earliest first (a saved index stores them)."""
        out = (np.empty(0, np.uint64), np.empty(0, np.int64))
        for run in self._runs:
            out = _merged(out, run.live())
        return _merged(out, self._dict_entries())

    @classmethod
    def of_entries(
        cls,
        ids: npt.NDArray[np.uint64],
        seqs: npt.NDArray[np.int64],
        merge_min: int = MERGE_MIN,
    ) -> Buckets:
        """Buckets holding :meth:`entries`' columns (a ``ValueError`` unless they are of one
        length and sorted by bucket id, as :meth:`entries` gives them)."""
        if ids.shape != seqs.shape or ids.ndim != 1:
            raise ValueError("bucket columns of different lengths")
        if len(ids) > 1 and not bool(np.all(ids[1:] >= ids[:-1])):
            raise ValueError("bucket column not sorted by bucket id")
        out = cls(merge_min)
        if len(ids):
            out._runs = [_Run(ids.astype(np.uint64, copy=True), seqs.astype(np.int64, copy=True))]
        return out


__all__ = ["MERGE_MIN", "Buckets", "Slot", "seqs_of", "size_of", "take_out", "with_seq"]
