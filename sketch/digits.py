"""Runs of digits in a batch of normalised texts, read in numpy for all texts at once.

:class:`DigitReading` gives a :class:`neardup.sketch.features.TextBatch` (its one subclass) its
readings of digits: every run of digits (:meth:`~DigitReading.digit_runs`), the numerals as
written (:meth:`~DigitReading.numerals`: what a long copy's changed figures are read from), the
days of the year named beside a month's name (:meth:`~DigitReading.dates`, ``MM-DD``, English or
Chinese), and which texts may hold a time of day (:meth:`~DigitReading.clock_suspects`).
:func:`month_of` is the rule a day is read by, one text at a time
(:func:`neardup.sketch.figures.numerals_and_dates` reads a single text with it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        (
            "jan january",
            "feb february",
            "mar march",
            "apr april",
            "may",
            "jun june",
            "jul july",
            "aug august",
            "sep sept september",
            "oct october",
            "nov november",
            "dec december",
        )
    )
    for name in names.split()
}


def _keys3(words: Iterable[str]) -> npt.NDArray[np.int64]:
    """Three letters as one number, as :meth:`DigitReading._may_be_day` reads them."""
    keys = {(ord(w[0]) << 42) | (ord(w[1]) << 21) | ord(w[2]) for w in words}
    return np.array(sorted(keys), dtype=np.int64)


# a month's last three letters (before a day) or first three (after one), in one sorted array:
# looking both up in both is a superset of what month_of accepts, and one search
_MONTH_WORDS = _keys3([*(name[-3:] for name in _MONTHS), *(name[:3] for name in _MONTHS)])
_ZH_DAY = np.array([ord("日"), ord("号")], dtype=np.int64)
# offsets from a run's start (6) and end (8) that DigitReading._may_be_day reads
_AROUND = np.array([-4, -3, -2, -5, -4, -3, 1, 2, 3, 3, 4, 5, 0, 1], dtype=np.intp)

_MONTH_BEFORE_RE = re.compile(r"(?<![a-z])([a-z]{3,9})\.? $")  # "april 7", "apr. 7"
_MONTH_AFTER_RE = re.compile(r"^(?:st|nd|rd|th)? ([a-z]{3,9})(?![a-z])")  # "7 april", "7th of"
_ZH_MONTH_RE = re.compile(r"(?<!\d)(1[0-2]|0?[1-9]) ?月 ?$")  # "4月7日"
_ZH_DAY_RE = re.compile(r"^ ?[日号]")


# what a wire writes after a time of day (``0900 gmt``, ``11:00 edt``, ``1400 hrs``)
TIME_ZONES = r"gmt|utc|[ecmp][sd]t|bst|cet|cest|jst|hkt|sgt|local time|hrs"
# the letters a time zone of TIME_ZONES starts with, as code points
_ZONE_STARTS = np.array(sorted(map(ord, "bcegjhlmpsu")), dtype=np.int64)
# The days a text's dates are looked for at: the first this many runs of one or two digits
# (1-31) beside a month's name. A text that names more before its dates fill up is built to
# cost: its later days are not read (what a date is for, a wire's next release, is early).
DAY_CANDIDATES = 256


def month_of(before: str, after: str) -> int:
    """The month a day number (between ``before`` and ``after``, normalised text) is a day of,
    or 0 (an ordinal suffix after the day is allowed: ``april 7th``)."""
    if before[-1:].isascii() and before[-1:].isalpha():  # the 3 of "q3": no day
        return 0
    alone = not after[:1].isalpha() or after[:2] in ("st", "nd", "rd", "th")  # 7, 7th
    if alone and (m := _MONTH_BEFORE_RE.search(before)) and (month := _MONTHS.get(m.group(1))):
        return month
    if (m := _MONTH_AFTER_RE.match(after)) and (month := _MONTHS.get(m.group(1))):
        return month
    if (m := _ZH_MONTH_RE.search(before)) and _ZH_DAY_RE.match(after):
        return int(m.group(1))
    return 0


# starts and ends of runs of digits in a batch's code points, and which stand beside no letter
DigitRuns = tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.bool_]]


class DigitReading:
    """The readings of digits of a batch of texts laid end to end as one array of code points,
    text i ``codes[starts[i]:ends[i]]`` (:class:`neardup.sketch.features.TextBatch`)."""

    __slots__ = ()

    codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]
    starts: npt.NDArray[np.intp]
    ends: npt.NDArray[np.intp]

    def __len__(self) -> int:
        return len(self.starts)

    def digit_runs(self) -> DigitRuns:
        """Every run of digits (a point or comma between two digits joins them: ``4.5``,
        ``1,750``) as ``[start, end)`` positions in ``codes``, and whether it stands beside no
        Latin letter (``q3x`` holds no numeral). Digits are few in prose: one pass over the
        batch finds them, the rest works on them alone."""
        codes = self.codes
        pos = np.flatnonzero((codes - codes.dtype.type(48)) < 10)
        if not len(pos):
            none = np.empty(0, np.intp)
            return none, none, np.empty(0, bool)
        gap = np.diff(pos)
        mid = codes[pos[:-1] + 1]  # the character after each digit but the last
        joined = (gap == 1) | ((gap == 2) & ((mid == 46) | (mid == 44)))
        breaks = np.flatnonzero(~joined)
        starts = pos[np.concatenate(([0], breaks + 1))]
        ends = pos[np.concatenate((breaks, [len(pos) - 1]))] + 1
        n = len(codes)
        # x | 32 lower-cases A-Z and leaves every other code point outside a-z
        prev = codes[np.maximum(starts - 1, 0)] | np.uint8(32)
        nxt = codes[np.minimum(ends, n - 1)] | np.uint8(32)
        beside = ((starts > 0) & (prev >= 97) & (prev <= 122)) | (
            (ends < n) & (nxt >= 97) & (nxt <= 122)
        )
        return starts, ends, ~beside

    def numerals(
        self,
        limit: int = 256,
        runs: DigitRuns | None = None,
        lows: Sequence[int] | None = None,
    ) -> list[tuple[str, ...]]:
        """Per text, its numerals in order as written (runs of digits, with a point or comma
        between two digits: ``4.5``, ``1,750``; not beside a Latin letter, as the 3 of ``q3``),
        at most ``limit``: what a long copy's changed figures are read from. ``runs``: the
        batch's :meth:`digit_runs`, when the caller has them already; ``lows``: per text, where
        (from its start) its reading begins, as if the text were cut there (a body past its
        headline; the character before a cut must be a space)."""
        starts, ends, alone = runs or self.digit_runs()
        keep = alone if lows is None else alone & (starts >= self._floors(lows, starts))
        starts, ends = starts[keep], ends[keep]
        out: list[list[str]] = [[] for _ in range(len(self))]
        if not len(starts):
            return [()] * len(self)
        # the numerals' characters (ASCII digits, points, commas) laid end to end, as one str
        lengths = ends - starts
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        at = np.arange(bounds[-1]) - np.repeat(bounds[:-1] - starts, lengths)
        text = self.codes[at].astype(np.uint8).tobytes().decode("ascii")
        docs_a = np.searchsorted(self.ends, starts, side="left")
        first = _first_per_doc(docs_a, limit)  # the rest are past the limit: never read
        docs = docs_a[first].tolist()
        lo, hi = bounds[:-1][first].tolist(), bounds[1:][first].tolist()
        for d, a, b in zip(docs, lo, hi, strict=True):
            out[d].append(text[a:b])
        return [tuple(x) for x in out]

    def _floors(self, lows: Sequence[int], starts: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """For each position in ``starts``, where its text's reading begins in ``codes``."""
        begins = self.starts + np.asarray(lows, dtype=np.intp)
        return begins[np.searchsorted(self.ends, starts, side="left")]

    def clock_suspects(self, runs: DigitRuns | None = None) -> npt.NDArray[np.bool_]:
        """Per text, whether it may hold a time of day
        (:func:`neardup.sketch.figures.facts_texts` blanks them): a run of digits followed by
        ``:``, or one of four or more characters followed (past a space) by a letter a time
        zone starts with. A superset of what ``figures._CLOCK_HINT_RE`` finds, from the runs
        alone; a text it names is read alone."""
        starts, ends, _ = runs or self.digit_runs()
        out = np.zeros(len(self), dtype=bool)
        if not len(starts):
            return out
        codes = self.codes
        n = len(codes)
        nxt = codes[np.minimum(ends, n - 1)].astype(np.int64)
        past = codes[np.minimum(ends + 1, n - 1)].astype(np.int64)
        zone = _ZONE_STARTS
        later = np.where(nxt == 32, past, nxt)
        suspect = (nxt == 58) | (((ends - starts) >= 4) & np.isin(later, zone))
        out[np.searchsorted(self.ends, starts[suspect], side="left")] = True
        return out

    def _beside_a_word(
        self, starts: npt.NDArray[np.intp], ends: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.bool_]:
        """What :func:`month_of` needs of a run's two neighbours on each side, in four
        gathers (a superset of what it accepts): a letter or point and a space before it
        (``may 7``, ``apr. 7``), a letter right after it or a space and a letter (``7th``,
        ``7 may``), or 日/号 in the two after it. Numbers in a row ("5 5 5 ...") stop here,
        before the wider look of :meth:`_may_be_day`."""
        top = len(self.codes) - 1
        codes = self.codes

        def at(pos: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
            return codes[np.minimum(np.maximum(pos, 0), top)].astype(np.int64)

        b1, b2, a1, a2 = at(starts - 1), at(starts - 2), at(ends), at(ends + 1)

        def letter(c: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
            return (c >= 97) & (c <= 122)

        before = (b1 == 32) & (letter(b2) | (b2 == 46))
        after = letter(a1) | ((a1 == 32) & letter(a2))
        zh = np.isin(a1, _ZH_DAY) | np.isin(a2, _ZH_DAY)
        out: npt.NDArray[np.bool_] = before | after | zh
        return out

    def _may_be_day(
        self, starts: npt.NDArray[np.intp], ends: npt.NDArray[np.intp]
    ) -> npt.NDArray[np.bool_]:
        """Whether a month's name could stand next to each run (a superset of what
        :func:`month_of` accepts, found in numpy): the last three letters of one before it,
        ``apr. `` too, or the first three after it, past ``th`` too; or 日/号 after it."""
        # the characters around each run, in one gather: four three-letter words (before,
        # before a point, after, after an ordinal suffix), then the two after it
        at = np.concatenate((np.repeat(starts[:, None], 6, 1), np.repeat(ends[:, None], 8, 1)), 1)
        c = self.codes[np.clip(at + _AROUND, 0, len(self.codes) - 1)].astype(np.int64)
        looks = (c[:, 0:12:3] << 42) | (c[:, 1:12:3] << 21) | c[:, 2:12:3]
        words = _MONTH_WORDS[
            np.minimum(np.searchsorted(_MONTH_WORDS, looks), len(_MONTH_WORDS) - 1)
        ]
        zh: npt.NDArray[np.bool_] = (c[:, 12:, None] == _ZH_DAY).any(axis=(1, 2))
        month: npt.NDArray[np.bool_] = (words == looks).any(axis=1)
        return month | zh

    def dates(
        self,
        limit: int = 16,
        runs: DigitRuns | None = None,
        lows: Sequence[int] | None = None,
    ) -> list[tuple[str, ...]]:
        """Per text, the days of the year it names, in order, as ``MM-DD`` (at most ``limit``):
        a month's name (English, whole or shortened) before or after a day of one or two
        digits (``april 7``, ``apr. 7th``, ``7 april``), or ``4月7日``. The year is not read: a
        wire's next release names another day of the same template. Only runs of one or two
        digits are looked at, so a text without them costs nothing more."""
        starts, ends, _ = runs or self.digit_runs()
        short = (ends - starts) <= 2
        if lows is not None:
            short &= starts >= self._floors(lows, starts)
        starts, ends = starts[short], ends[short]
        if len(starts):
            keep = self._beside_a_word(starts, ends)
            starts, ends = starts[keep], ends[keep]
        if len(starts):
            keep = self._may_be_day(starts, ends)
            starts, ends = starts[keep], ends[keep]
        out: list[list[str]] = [[] for _ in range(len(self))]
        if len(starts):
            lead = self.codes[starts].astype(np.intp) - 48
            two = (ends - starts) == 2
            second = self.codes[np.minimum(starts + 1, ends - 1)].astype(np.intp) - 48
            days = np.where(two, lead * 10 + second, lead)
            keep = (days >= 1) & (days <= 31)
            starts, ends, days = starts[keep], ends[keep], days[keep]
        if not len(starts):
            return [()] * len(self)
        docs_a = np.searchsorted(self.ends, starts, side="left")
        looked = _first_per_doc(docs_a, DAY_CANDIDATES)
        docs = docs_a[looked].tolist()
        first, last = self.starts.tolist(), self.ends.tolist()
        if lows is not None:
            first = [f + low for f, low in zip(first, lows, strict=True)]
        codes = self.codes
        wide = codes.dtype != np.uint8
        for d, a, b, day in zip(
            docs, starts[looked].tolist(), ends[looked].tolist(), days[looked].tolist(), strict=True
        ):
            if len(out[d]) >= limit:
                continue
            lo, hi = max(first[d], a - 12), min(last[d], b + 13)
            before, after = codes[lo:a].tobytes(), codes[b:hi].tobytes()
            if wide:
                before_s, after_s = before.decode("utf-32-le"), after.decode("utf-32-le")
            else:
                before_s, after_s = before.decode("ascii"), after.decode("ascii")
            month = month_of(before_s, after_s)
            if month:
                out[d].append(f"{month:02d}-{day:02d}")
        return [tuple(x) for x in out]


def _first_per_doc(docs: npt.NDArray[np.intp], limit: int) -> npt.NDArray[np.bool_]:
    """Of items in document order (``docs``: each one's document, non-decreasing), whether it
    is among the first ``limit`` of its document."""
    if not len(docs):
        return np.zeros(0, dtype=bool)
    new_doc = np.flatnonzero(np.diff(docs)) + 1
    begins = np.zeros(len(docs), dtype=np.intp)
    begins[new_doc] = new_doc
    np.maximum.accumulate(begins, out=begins)
    rank: npt.NDArray[np.intp] = np.arange(len(docs)) - begins
    return rank < limit


__all__ = ["DAY_CANDIDATES", "TIME_ZONES", "DigitReading", "DigitRuns", "month_of"]
