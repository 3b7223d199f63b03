"""The in-memory index's buckets in columns: bucket id -> the seqs added to it, earliest first.

A dict of Python ints costs about 100 bytes a (bucket, seq) entry, and a namespace holds some
twenty a document: most of its memory. Here most entries live in two sorted numpy columns (bucket
ids, seqs: 16 bytes an entry); the newest ones in a dict, which is merged into the columns when it
outgrows a quarter of them (and at least :data:`MERGE_MIN` entries), in time linear in the
columns. A removed entry of the columns is marked dead until the next merge drops it. Reads and
additions between merges see the columns and the dict together, in that order: a bucket's
members stay earliest first, as the Redis index keeps them.

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
from typing import TypeVar

import numpy as np
import numpy.typing as npt

Slot = int | bytes
K = TypeVar("K", int, bytes)
MERGE_MIN = 1 << 16  # dict entries before the first merge
_ORDER = sys.byteorder  # memoryview.cast reads native order


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


class Buckets:
    """Bucket id -> seqs, earliest first (see the module doc)."""

    def __init__(self, merge_min: int = MERGE_MIN) -> None:
        self._merge_min = merge_min
        self._ids: npt.NDArray[np.uint64] = np.empty(0, np.uint64)
        self._seqs: npt.NDArray[np.int64] = np.empty(0, np.int64)
        self._dead: npt.NDArray[np.bool_] = np.empty(0, np.bool_)
        self._dead_count = 0
        self._new: dict[int, Slot] = {}
        self._new_entries = 0

    def __len__(self) -> int:
        """(bucket, seq) entries held."""
        return len(self._ids) - self._dead_count + self._new_entries

    def _ranges(self, ids: Sequence[int]) -> tuple[list[int], list[int]]:
        if not len(self._ids):
            zeros = [0] * len(ids)
            return zeros, zeros
        wanted = np.array(ids, dtype=np.uint64)
        order = np.argsort(wanted)  # sorted needles search a big column with fewer misses
        needles = wanted[order]
        lo = np.searchsorted(self._ids, needles, "left")
        hi = lo.copy()
        hit = np.flatnonzero(self._ids[np.minimum(lo, len(self._ids) - 1)] == needles)
        if len(hit):  # most buckets are new: only those found are searched for their end
            hi[hit] = np.searchsorted(self._ids, needles[hit], "right")
        out_lo, out_hi = np.empty_like(lo), np.empty_like(hi)
        out_lo[order], out_hi[order] = lo, hi
        return out_lo.tolist(), out_hi.tolist()

    def _old(self, lo: int, hi: int) -> list[int]:
        """The columns' live seqs in ``[lo, hi)``."""
        if self._dead_count and self._dead[lo:hi].any():
            got: list[int] = self._seqs[lo:hi][~self._dead[lo:hi]].tolist()
            return got
        seqs: list[int] = self._seqs[lo:hi].tolist()
        return seqs

    def ranges(self, groups: Sequence[Sequence[int]]) -> list[tuple[list[int], list[int]]]:
        """Where each group's buckets are in the columns, found for all groups at once (the
        columns change only in :meth:`settle`): for :meth:`add`."""
        flat = [b for g in groups for b in g]
        lo, hi = self._ranges(flat)
        out, at = [], 0
        for g in groups:
            out.append((lo[at : at + len(g)], hi[at : at + len(g)]))
            at += len(g)
        return out

    def add(
        self,
        ids: Sequence[int],
        seq: int,
        cap: int,
        found: set[int],
        where: tuple[list[int], list[int]] | None = None,
    ) -> int:
        """Read each bucket into ``found`` and add ``seq`` to those under ``cap`` members;
        the number at their cap (hot). ``where``: :meth:`ranges`' answer for ``ids``. Call
        :meth:`settle` once a batch is added."""
        hot = 0
        new = self._new
        slots = [new.get(b) for b in ids]  # read before any is added to
        for b, slot, lo, hi in zip(ids, slots, *(where or self._ranges(ids)), strict=True):
            size = hi - lo
            if size:
                old = self._old(lo, hi)
                found.update(old)
                size = len(old)
            if slot is not None:
                found.update(seqs_of(slot))
                size += size_of(slot)
            if size < cap:
                now, before = seq if slot is None else with_seq(slot, seq), new.get(b)
                new[b] = now  # a bucket named twice is added to once
                self._new_entries += size_of(now) - (0 if before is None else size_of(before))
            else:
                hot += 1
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
        self, uniq: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.int64], dict[int, list[int]], dict[int, Slot]]:
        """For sorted distinct bucket ids: the live seqs each holds, counted; the columns' seqs
        and the dict's slot of those (by position in ``uniq``) that hold any."""
        held = np.zeros(len(uniq), np.int64)
        olds: dict[int, list[int]] = {}
        if len(self._ids):
            lo = np.searchsorted(self._ids, uniq, "left")
            hit = np.flatnonzero(self._ids[np.minimum(lo, len(self._ids) - 1)] == uniq)
            if len(hit):
                hi = np.searchsorted(self._ids, uniq[hit], "right")
                for u, a, b in zip(hit.tolist(), lo[hit].tolist(), hi.tolist(), strict=True):
                    olds[u] = self._old(a, b)
                    held[u] = len(olds[u])
        slots: dict[int, Slot] = {}
        if self._new:
            got = list(map(self._new.get, uniq.tolist()))
            for u in compress(range(len(got)), map(is_not, got, repeat(None))):
                slot = got[u]
                assert slot is not None
                slots[u] = slot
                held[u] += size_of(slot)
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
        ids = list(ids)
        found: set[int] = set()
        for b, lo, hi in zip(ids, *self._ranges(ids), strict=True):
            if hi > lo:
                found.update(self._old(lo, hi))
            slot = self._new.get(b)
            if slot is not None:
                found.update(seqs_of(slot))
        return found

    def members(self, bucket: int) -> list[int]:
        """A bucket's seqs, earliest first."""
        (lo,), (hi,) = self._ranges([bucket])
        slot = self._new.get(bucket)
        return self._old(lo, hi) + ([] if slot is None else list(seqs_of(slot)))

    def remove(self, ids: Iterable[int], seq: int) -> None:
        ids = list(ids)
        for b, lo, hi in zip(ids, *self._ranges(ids), strict=True):
            if b in self._new:
                before = size_of(self._new[b])
                take_out(self._new, b, seq)
                self._new_entries -= before - (size_of(self._new[b]) if b in self._new else 0)
            for i in range(lo, hi):
                if self._seqs[i] == seq and not self._dead[i]:
                    self._dead[i] = True
                    self._dead_count += 1

    def hot(self, cap: int) -> int:
        """Buckets with ``cap`` members or more."""
        sizes: Counter[int] = Counter()
        if len(self._ids):
            live = self._ids[~self._dead] if self._dead_count else self._ids
            ids, counts = np.unique(live, return_counts=True)
            sizes.update(dict(zip(ids.tolist(), counts.tolist(), strict=True)))
        for b, slot in self._new.items():
            sizes[b] += size_of(slot)
        return sum(1 for n in sizes.values() if n >= cap)

    def settle(self) -> None:
        """Merge the dict into the columns once it outgrew a quarter of them."""
        if self._new_entries < max(self._merge_min, len(self._ids) // 4):
            return
        self._ids, self._seqs = self.entries()
        self._dead = np.zeros(len(self._ids), np.bool_)
        self._dead_count = 0
        self._new = {}
        self._new_entries = 0

    def entries(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
        """Every live (bucket, seq) entry as two columns, by bucket id and each bucket's
        earliest first: what a merge leaves (:meth:`settle`; a saved index stores them)."""
        n = self._new_entries
        ids = np.empty(n, np.uint64)
        seqs = np.empty(n, np.int64)
        i = 0
        for b, slot in self._new.items():
            if isinstance(slot, int):
                ids[i], seqs[i] = b, slot
                i += 1
            else:
                run = np.frombuffer(slot, dtype=np.int64)
                ids[i : i + len(run)], seqs[i : i + len(run)] = b, run
                i += len(run)
        order = np.argsort(ids, kind="stable")  # a bucket's members stay in the order added
        ids, seqs = ids[order], seqs[order]
        old_ids, old_seqs = self._ids, self._seqs
        if self._dead_count:
            keep = ~self._dead
            old_ids, old_seqs = old_ids[keep], old_seqs[keep]
        at = np.searchsorted(old_ids, ids, "right")  # after the bucket's earlier members
        return np.insert(old_ids, at, ids), np.insert(old_seqs, at, seqs)

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
        out._ids = ids.astype(np.uint64, copy=True)
        out._seqs = seqs.astype(np.int64, copy=True)
        out._dead = np.zeros(len(ids), np.bool_)
        return out


__all__ = ["MERGE_MIN", "Buckets", "Slot", "seqs_of", "size_of", "take_out", "with_seq"]
