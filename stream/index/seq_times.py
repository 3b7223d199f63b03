"""Registration times by seq, in float64 pages: 8 bytes an article instead of a dict entry's 96.

A namespace's seqs are handed out one after another, so the times of its articles fill pages of
consecutive seqs; a page is a numpy column with ``NaN`` where no article is (never registered,
removed). A page is dropped when its last article goes, so a namespace whose old articles
expire holds pages only for the seqs still live. Expiry reads the pages whole instead of every
article's entry one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

PAGE_BITS = 14  # 16,384 seqs a page: 128 KB
_PAGE = 1 << PAGE_BITS
_MASK = _PAGE - 1


class SeqTimes:
    """``seq -> registration time`` (unix seconds), the part of a dict the index uses."""

    __slots__ = ("_live", "_pages")

    def __init__(self, items: Iterable[tuple[int, float]] = ()) -> None:
        self._pages: dict[int, npt.NDArray[np.float64]] = {}
        self._live: dict[int, int] = {}  # page -> articles in it
        for seq, at in items:
            self[seq] = at

    def __len__(self) -> int:
        return sum(self._live.values())

    def __contains__(self, seq: object) -> bool:
        return isinstance(seq, int) and self.get(seq) is not None

    def __getitem__(self, seq: int) -> float:
        at = self.get(seq)
        if at is None:
            raise KeyError(seq)
        return at

    def get(self, seq: int) -> float | None:
        page = self._pages.get(seq >> PAGE_BITS)
        if page is None:
            return None
        at = float(page[seq & _MASK])
        return None if at != at else at  # NaN: no article at this seq

    def __setitem__(self, seq: int, at: float) -> None:
        if at != at:
            raise ValueError("a registration time is a number, not NaN")
        key = seq >> PAGE_BITS
        page = self._pages.get(key)
        if page is None:
            page = self._pages[key] = np.full(_PAGE, np.nan)
            self._live[key] = 0
        if page[seq & _MASK] != page[seq & _MASK]:
            self._live[key] += 1
        page[seq & _MASK] = at

    def pop(self, seq: int, default: float | None = None) -> float | None:
        key = seq >> PAGE_BITS
        at = self.get(seq)
        if at is None:
            return default
        self._pages[key][seq & _MASK] = np.nan
        self._live[key] -= 1
        if not self._live[key]:
            del self._pages[key], self._live[key]
        return at

    def items(self) -> Iterator[tuple[int, float]]:
        """``(seq, time)`` in seq order."""
        for key in sorted(self._pages):
            page = self._pages[key]
            at = np.flatnonzero(~np.isnan(page))
            yield from zip((at + (key << PAGE_BITS)).tolist(), page[at].tolist(), strict=True)

    def oldest_before(self, before: float, limit: int) -> list[int]:
        """The seqs registered before ``before``, oldest first (ties: lower seq first), at most
        ``limit`` of them."""
        seqs, times = [], []
        for key, page in self._pages.items():
            at = np.flatnonzero(page < before)  # NaN compares false: no article
            if len(at):
                seqs.append(at + (key << PAGE_BITS))
                times.append(page[at])
        if not seqs:
            return []
        s, t = np.concatenate(seqs), np.concatenate(times)
        order = np.lexsort((s, t))[: max(limit, 0)]
        return [int(x) for x in s[order]]


__all__ = ["PAGE_BITS", "SeqTimes"]
