"""A long text's figures (its numerals and the days of the year it names), and the part of it
they are read from.

A wire stamps a headline with its time of sending, an issue date or a code: a long text's facts
are read from its body past a headline (:func:`body_start`), with its times of day blanked
(:func:`facts_texts`: ``11:00 edt``, ``0900 gmt``); :func:`numerals_and_dates` reads the numerals
and dates of one normalised text by one scan, as :class:`neardup.sketch.features.TextBatch` reads
them for a batch (:mod:`neardup.sketch.digits`).
"""

from __future__ import annotations

import re

from neardup.sketch.digits import TIME_ZONES, month_of
from neardup.sketch.features import TextBatch, normalize

_WORD_RE = re.compile(r"\w")
_DIGIT_RUN_RE = re.compile(r"[0-9](?:[.,]?[0-9])*")  # TextBatch.digit_runs' runs, as a regex
_LATIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# Past this length one text's numerals and dates are read by the batch form. A text this
# short holds at most digits.DAY_CANDIDATES runs, so the two forms agree on every text.
_ONE_SCAN_CHARS = 512

# a time of day, in normalised text: 11:00, 9:30:15 (never a ratio's 3:1 or a score's 10:7),
# or four digits before a time zone or "local time": 0900 gmt, 1129 edt, 1343 local time
_CLOCK_RE = re.compile(
    r"(?<![0-9.,:])(?:(?:[01]?[0-9]|2[0-4]):[0-5][0-9](?::[0-5][0-9])?(?![0-9]|[.,:][0-9])"
    rf"|(?:[01][0-9]|2[0-4])[0-5][0-9](?= ?(?:{TIME_ZONES})(?![a-z])))"
)
HEADLINE_WORDS = 20  # a first line of at most this many words, over a body, is a headline


def facts_texts(text: str, norm: str) -> tuple[str, str]:
    """What a long text's facts (numbers, dates) are read from: ``(body, whole)``, both the
    normalised text (``norm``, of ``text``) with its times of day blanked out (``11:00 edt``
    and ``0900 gmt``: when a wire sent an item is not what it says). ``body`` leaves out a
    headline (:func:`body_start`); ``whole`` keeps it, for a text whose body names no
    number."""
    whole = _CLOCK_RE.sub(_blank, norm) if may_hold_clock(norm) else norm
    return whole[body_start(text, norm) :], whole


def body_start(text: str, norm: str) -> int:
    """Where the body of a long text starts in ``norm`` (its normalised form), past a
    headline: a first line of at most ``HEADLINE_WORDS`` words over a body with words, where
    a desk writes its time stamps, issue dates and codes (a headline rewritten, or stamped
    another minute, over the same body is the same story). 0 when there is none."""
    head, newline, rest = text.lstrip().partition("\n")
    if not (newline and _WORD_RE.search(rest)) or len(head.split()) > HEADLINE_WORDS:
        return 0
    h = normalize(head)
    if not h or not norm.startswith(h) or norm[len(h) : len(h) + 1] != " ":
        return 0  # the canonical form moved the line's end: read it whole
    return len(h) + 1


# what any time of day _CLOCK_RE blanks has in it; a pattern that starts with a digit, so the
# scan jumps from digit to digit (_CLOCK_RE starts with a look-behind: it tries every place)
_CLOCK_HINT_RE = re.compile(rf"[0-9](?::[0-5][0-9]|[0-9]{{3}} ?(?:{TIME_ZONES})(?![a-z]))")


def may_hold_clock(norm: str) -> bool:
    """Whether :func:`facts_texts` may blank a time of day in ``norm`` (a normalised text):
    without one, its facts are read from the text as it is."""
    return _CLOCK_HINT_RE.search(norm) is not None


def _blank(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def numerals_and_dates(
    norm: str, numeral_limit: int = 256, date_limit: int = 16
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """:meth:`TextBatch.numerals` and :meth:`TextBatch.dates` of one normalised text, by one
    regex scan: for a single text the batch forms' numpy set-up was most of their time. The
    batch's pre-filter of days is left out, it only ever drops what :func:`month_of` refuses.
    A text past :data:`_ONE_SCAN_CHARS` takes the batch form: its work per run is numpy's, and
    a text of nothing but short numbers ("5 5 5 ...") cost seconds a megabyte here."""
    if len(norm) > _ONE_SCAN_CHARS:
        batch = TextBatch.of([norm])
        runs = batch.digit_runs()
        return batch.numerals(numeral_limit, runs)[0], batch.dates(date_limit, runs)[0]
    numerals: list[str] = []
    dates: list[str] = []
    n = len(norm)
    for m in _DIGIT_RUN_RE.finditer(norm):
        a, b = m.span()
        run = m.group()
        beside = (a > 0 and norm[a - 1] in _LATIN) or (b < n and norm[b] in _LATIN)
        if not beside and len(numerals) < numeral_limit:
            numerals.append(run)
        if b - a <= 2 and len(dates) < date_limit and 1 <= (day := int(run)) <= 31:
            month = month_of(norm[max(0, a - 12) : a], norm[b : b + 13])
            if month:
                dates.append(f"{month:02d}-{day:02d}")
    return tuple(numerals), tuple(dates)


__all__ = ["HEADLINE_WORDS", "body_start", "facts_texts", "may_hold_clock", "numerals_and_dates"]
