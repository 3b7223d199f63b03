"""Text -> normalised tokens -> hashed shingles (uint64), the input of every sketch.

Normalisation is the canonical form (:mod:`neardup.sketch.canonical`: markup, invisible characters,
marks, look-alike letters, script variants and case folded away), then whitespace folded to
single spaces, so two copies that look alike to a reader never differ here.

Tokens are words (``\\w+`` runs) for alphabetic scripts and *single characters* for CJK
ideographs and kana: Chinese and Japanese have no spaces, and a word segmenter would make the
sketch depend on a dictionary. With the default shingle size ``w = 3`` the same rule gives word
3-grams for English and character 3-grams for Chinese, the robust default in the literature for
both (character 2-grams repeat too often in Chinese; 4-grams break on every edit). Mixed text works:
``"neardup 检测重复"`` tokenises to ``["neardup", "检", "测", "重", "复"]``.

Every hash is deterministic across processes and machines: MurmurHash3 with a fixed seed for
tokens, then a splitmix64-style combiner in numpy for shingles (never Python's ``hash()``, which is
salted per process).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import islice

import mmh3
import numpy as np
import numpy.typing as npt

from neardup.sketch import canonical

U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]

DEFAULT_SEED = 0x6E656172  # "near"
DEFAULT_SHINGLE = 3
DEFAULT_CHAR_NGRAM = 3

_CJK = (
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3005-\u3007"  # iteration marks, ideographic zero
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # extension A
    "\u4e00-\u9fff"  # unified ideographs
    "\uf900-\ufaff"  # compatibility ideographs
    "\U00020000-\U0003134f"  # extensions B-G
)
_TOKEN_RE = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_CJK_RE = re.compile(f"[{_CJK}]")
_WORD_RE = re.compile(r"\w")
_POLY = 0x100000001B3  # FNV-64 prime, odd
_POLY_INV = pow(_POLY, -1, 1 << 64)

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_WINDOW_MULT = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
    dtype=np.uint64,
)


def mix64(x: U64) -> U64:
    """splitmix64 finaliser: a bijective, strongly avalanching map of uint64 arrays.

    Structured inputs (consecutive integers, shingles that share tokens) come out looking
    independent, which the MinHash and SimHash estimators assume.
    """
    z = x ^ (x >> _S30)
    z = z * _M1
    z = z ^ (z >> _S27)
    z = z * _M2
    return z ^ (z >> _S31)  # type: ignore[no-any-return]


def normalize(text: str) -> str:
    """The canonical form (:mod:`neardup.sketch.canonical`), whitespace folded to one space,
    stripped."""
    return " ".join(_fold(text).split())


def normalize_each(texts: Sequence[str]) -> list[str]:
    """``[normalize(t) for t in texts]``, folded at once
    (:func:`neardup.sketch.canonical.fold_each`): the lines or passages of one text, where one fold
    each cost more than the folding."""
    return [" ".join(f.split()) for f in _fold_each(texts)]


def tokenize(text: str, *, normalized: bool = False) -> list[str]:
    """Words for alphabetic scripts, single characters for CJK (see module docstring)."""
    return _TOKEN_RE.findall(text if normalized else normalize(text))


def token_counts(norms: Sequence[str]) -> list[int]:
    """``[len(tokenize(t, normalized=True)) for t in norms]`` (normalised texts, so no
    newline inside one), counted for all at once from the class table: a token starts at a
    CJK character or where a run of word characters begins."""
    if not norms:
        return []
    joined = "\n".join(norms)
    if joined.isascii():
        codes, cls = _codes_and_classes(joined)
    else:  # a lone surrogate (no word character) is kept, not refused
        codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        cls = _classify(codes)
    word = cls == 1
    first = np.flatnonzero((cls == 2) | (word & ~np.concatenate(([False], word[:-1]))))
    breaks = np.flatnonzero(codes == 10)
    counts = np.bincount(np.searchsorted(breaks, first), minlength=len(norms))
    out: list[int] = counts.tolist()
    return out


def has_tokens(text: str, n: int) -> bool:
    """Whether ``text`` (as sent) has at least ``n`` tokens (:func:`tokenize`'s): a scan that
    stops at the ``n``-th, so a long text costs no more than a short one."""
    return n <= 0 or any(True for _ in islice(_TOKEN_RE.finditer(text), n - 1, None))


@cache
def _char_classes() -> npt.NDArray[np.uint8]:
    """Class of every BMP code point: 0 separator, 1 word character (``\\w``), 2 CJK."""
    bmp = "".join(chr(c) if not 0xD800 <= c < 0xE000 else " " for c in range(0x10000))
    word = np.frombuffer(re.sub(r"\W", "\0", bmp).encode("utf-32-le"), dtype=np.uint32) != 0
    table: U8 = word.astype(np.uint8)
    cjk = np.frombuffer(re.sub(f"[^{_CJK}]", "\0", bmp).encode("utf-32-le"), dtype=np.uint32)
    table[cjk != 0] = 2
    return table


@cache
def _powers(size: int) -> tuple[U64, U64]:
    """``P**j`` and ``P**-j`` modulo 2**64 for j < size (P odd, so it is invertible)."""
    p = np.full(size, _POLY, dtype=np.uint64)
    p[0] = 1
    q = np.full(size, _POLY_INV, dtype=np.uint64)
    q[0] = 1
    return np.cumprod(p, dtype=np.uint64), np.cumprod(q, dtype=np.uint64)


def _classify(codes: npt.NDArray[np.uint32]) -> U8:
    table = _char_classes()
    if len(codes) == 0 or int(codes.max()) < 0x10000:
        return np.take(table, codes)
    cls = table[np.minimum(codes, 0xFFFF)]
    for i in np.flatnonzero(codes >= 0x10000):
        ch = chr(int(codes[i]))
        cls[i] = 2 if _CJK_RE.match(ch) else (1 if _WORD_RE.match(ch) else 0)
    return cls


def _codes_and_classes(norm: str) -> tuple[npt.NDArray[np.uint8] | npt.NDArray[np.uint32], U8]:
    if norm.isascii():  # O(1) in CPython; the common case gets one byte per character
        codes8 = np.frombuffer(norm.encode("ascii"), dtype=np.uint8)
        return codes8, np.take(_char_classes()[:128], codes8)
    codes32 = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32)
    return codes32, _classify(codes32)


def _spans_and_hashes(
    codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32], cls: U8, seed: int
) -> tuple[npt.NDArray[np.intp], U64]:
    """Token start offsets and token hashes for a classified code-point array."""
    n = len(codes)
    edges = np.zeros(n + 2, dtype=bool)
    edges[1:-1] = cls == 1
    flips = np.flatnonzero(edges[1:] != edges[:-1])  # word runs start and end alternately
    starts, ends = flips[0::2], flips[1::2]
    cjk = np.flatnonzero(cls == 2)
    if len(cjk):
        starts = np.concatenate([starts, cjk])
        order = np.argsort(starts, kind="stable")
        starts = starts[order]
        ends = np.concatenate([ends, cjk + 1])[order]
    pw, pinv = _powers(1 << max(n, 16).bit_length())
    prefix = np.zeros(n + 1, dtype=np.uint64)
    np.multiply(codes, pw[:n], out=prefix[1:], dtype=np.uint64)
    np.cumsum(prefix[1:], out=prefix[1:])
    poly = (prefix[ends] - prefix[starts]) * pinv[starts]
    lengths = (ends - starts).astype(np.uint64)
    seed_word = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    return starts, mix64(poly + lengths * _WINDOW_MULT[1] + seed_word)


def text_token_hashes(text: str, seed: int = DEFAULT_SEED, *, normalized: bool = False) -> U64:
    """Hash of every token of the text, in order, without building Python strings.

    The token spans come from a code-point class table (the same classes as the ``\\w+`` / CJK
    regex of :func:`tokenize`); each token's hash is a polynomial hash of its code points modulo
    2**64, computed for all tokens at once from one prefix sum, then mixed with the length and
    seed by :func:`mix64` so that tokens sharing prefixes come out independent.
    """
    norm = text if normalized else normalize(text)
    if not norm:
        return np.empty(0, dtype=np.uint64)
    codes, cls = _codes_and_classes(norm)
    return _spans_and_hashes(codes, cls, seed)[1]


def _fold(text: str) -> str:
    """The canonical form (:func:`neardup.sketch.canonical.fold`): every path folds through here."""
    return canonical.fold(text)


def _fold_each(texts: Sequence[str]) -> list[str]:
    """:func:`_fold` of each text, folded at once (:func:`neardup.sketch.canonical.fold_each`)."""
    return canonical.fold_each(texts)


def batch_shingle_hashes(
    texts: Sequence[str],
    *,
    w: int = DEFAULT_SHINGLE,
    seed: int = DEFAULT_SEED,
    normalized: bool = False,
) -> tuple[U64, npt.NDArray[np.intp]]:
    """Shingle hashes of many texts at once: ``(hashes, offsets)``, text i owning
    ``hashes[offsets[i]:offsets[i + 1]]`` (in token order, repeats kept).

    The same values as :func:`shingle_hashes` before its ``unique``, but one pass of numpy over
    the whole batch, so the per-call overhead of numpy is paid once per batch instead of once per
    text. (Whitespace folding is skipped: it never changes tokens.)
    """
    if not normalized:
        texts = _fold_each(texts)
    return _join(texts).shingle_hashes(w=w, seed=seed)


_LOW_SPACE = np.array([chr(c).isspace() for c in range(33)], dtype=bool)


@cache
def _space_table() -> npt.NDArray[np.bool_]:
    """``str.isspace`` of every BMP code point (every whitespace character is in the BMP)."""
    return np.array([chr(c).isspace() for c in range(0x10000)], dtype=bool)


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
    """Three letters as one number, as :meth:`TextBatch._may_be_day` reads them."""
    keys = {(ord(w[0]) << 42) | (ord(w[1]) << 21) | ord(w[2]) for w in words}
    return np.array(sorted(keys), dtype=np.int64)


# a month's last three letters (before a day) or first three (after one), in one sorted array:
# looking both up in both is a superset of what _month_of accepts, and one search
_MONTH_WORDS = _keys3([*(name[-3:] for name in _MONTHS), *(name[:3] for name in _MONTHS)])
_ZH_DAY = np.array([ord("日"), ord("号")], dtype=np.int64)
# offsets from a run's start (6) and end (8) that TextBatch._may_be_day reads
_AROUND = np.array([-4, -3, -2, -5, -4, -3, 1, 2, 3, 3, 4, 5, 0, 1], dtype=np.intp)

_MONTH_BEFORE_RE = re.compile(r"(?<![a-z])([a-z]{3,9})\.? $")  # "april 7", "apr. 7"
_MONTH_AFTER_RE = re.compile(r"^(?:st|nd|rd|th)? ([a-z]{3,9})(?![a-z])")  # "7 april", "7th of"
_ZH_MONTH_RE = re.compile(r"(?<!\d)(1[0-2]|0?[1-9]) ?月 ?$")  # "4月7日"
_ZH_DAY_RE = re.compile(r"^ ?[日号]")


# the letters a time zone of TIME_ZONES starts with, as code points
_ZONE_STARTS = np.array(sorted(map(ord, "bcegjhlmpsu")), dtype=np.int64)
_DIGIT_RUN_RE = re.compile(r"[0-9](?:[.,]?[0-9])*")  # TextBatch.digit_runs' runs, as a regex
_LATIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# Past this length one text's numerals and dates are read by the batch form. A text this
# short holds at most DAY_CANDIDATES runs, so the two forms agree on every text.
_ONE_SCAN_CHARS = 512
# The days a text's dates are looked for at: the first this many runs of one or two digits
# (1-31) beside a month's name. A text that names more before its dates fill up is built to
# cost: its later days are not read (what a date is for, a wire's next release, is early).
DAY_CANDIDATES = 256


# a time of day, in normalised text: 11:00, 9:30:15 (never a ratio's 3:1 or a score's 10:7),
# or four digits before a time zone or "local time": 0900 gmt, 1129 edt, 1343 local time
# what a wire writes after a time of day (``0900 gmt``, ``11:00 edt``, ``1400 hrs``)
TIME_ZONES = r"gmt|utc|[ecmp][sd]t|bst|cet|cest|jst|hkt|sgt|local time|hrs"
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
    batch's pre-filter of days is left out, it only ever drops what :func:`_month_of` refuses.
    A text past :data:`_ONE_SCAN_CHARS` takes the batch form: its work per run is numpy's, and
    a text of nothing but short numbers ("5 5 5 ...") cost seconds a megabyte here."""
    if len(norm) > _ONE_SCAN_CHARS:
        batch = _join([norm])
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
            month = _month_of(norm[max(0, a - 12) : a], norm[b : b + 13])
            if month:
                dates.append(f"{month:02d}-{day:02d}")
    return tuple(numerals), tuple(dates)


def _month_of(before: str, after: str) -> int:
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


@dataclass(frozen=True, slots=True)
class TextBatch:
    """Many texts as one array of code points: text i is ``codes[starts[i]:ends[i]]``.

    Texts are laid end to end with one NUL between them. NUL is a separator for the tokenizer,
    so no token crosses from one text into the next, and the bounds are explicit, so a NUL inside
    a text stays part of it. ASCII-only batches take one byte per character.
    """

    codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]
    starts: npt.NDArray[np.intp]
    ends: npt.NDArray[np.intp]

    def __len__(self) -> int:
        return len(self.starts)

    def text(self, i: int) -> str:
        part = self.codes[self.starts[i] : self.ends[i]]
        if part.dtype == np.uint8:
            return part.tobytes().decode("ascii")
        return part.tobytes().decode("utf-32-le")

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
        """Per text, whether it may hold a time of day (:func:`facts_texts` blanks them): a
        run of digits followed by ``:``, or one of four or more characters followed (past a
        space) by a letter a time zone starts with. A superset of what ``_CLOCK_HINT_RE``
        finds, from the runs alone; a text it names is read alone."""
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
        """What :func:`_month_of` needs of a run's two neighbours on each side, in four
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
        :func:`_month_of` accepts, found in numpy): the last three letters of one before it,
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
            month = _month_of(before_s, after_s)
            if month:
                out[d].append(f"{month:02d}-{day:02d}")
        return [tuple(x) for x in out]

    def content_hashes(self, seed: int = DEFAULT_SEED) -> list[bytes]:
        """:func:`content_hash` of every text (MurmurHash3 of its UTF-8 bytes)."""
        codes = self.codes
        starts, ends = self.starts.tolist(), self.ends.tolist()
        if codes.dtype == np.uint8:  # ASCII: the bytes are the UTF-8 encoding already
            utf8 = [codes[a:b].tobytes() for a, b in zip(starts, ends, strict=True)]
        else:
            joined = codes.tobytes().decode("utf-32-le")  # one decode for the batch
            utf8 = [joined[a:b].encode("utf-8") for a, b in zip(starts, ends, strict=True)]
        return [_content_hash_utf8(b, seed) for b in utf8]

    def shingle_hashes(
        self, *, w: int = DEFAULT_SHINGLE, seed: int = DEFAULT_SEED
    ) -> tuple[U64, npt.NDArray[np.intp]]:
        """``(hashes, offsets)`` of every text's w-shingles, as :func:`batch_shingle_hashes`."""
        n_docs = len(self)
        if n_docs == 0:
            return np.empty(0, dtype=np.uint64), np.zeros(1, dtype=np.intp)
        codes = self.codes
        if codes.dtype == np.uint8:
            cls = np.take(_char_classes()[:128], codes)
        else:
            cls = _classify(codes.astype(np.uint32, copy=False))
        starts, toks = _spans_and_hashes(codes, cls, seed)
        first_tok = np.searchsorted(starts, self.starts)  # each text's first token
        per_doc = np.diff(np.append(first_tok, len(starts)))
        doc = np.repeat(np.arange(n_docs, dtype=np.intp), per_doc)
        if len(toks) >= w:
            win = combine_windows(toks, w)
            keep = doc[: len(win)] == doc[w - 1 :]
            win, win_doc = win[keep], doc[: len(win)][keep]
        else:
            win, win_doc = np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.intp)
        short = np.flatnonzero((per_doc > 0) & (per_doc < w))
        if len(short):  # fewer tokens than w: one window over all of them, as in combine_windows
            # texts of one length at once (a call per text was most of the time of many
            # short passages): combine_rows is combine_windows of a row shorter than w
            tok_off = np.concatenate([[0], np.cumsum(per_doc)])
            extra, extra_doc = [], []
            for k in np.unique(per_doc[short]).tolist():
                docs_k = short[per_doc[short] == k]
                rows = toks[tok_off[docs_k][:, None] + np.arange(k)[None, :]]
                extra.append(combine_rows(rows))
                extra_doc.append(docs_k)
            win = np.concatenate([win, *extra])
            win_doc = np.concatenate([win_doc, *extra_doc])
            order = np.argsort(win_doc, kind="stable")
            win, win_doc = win[order], win_doc[order]
        offsets = np.zeros(n_docs + 1, dtype=np.intp)
        np.cumsum(np.bincount(win_doc, minlength=n_docs), out=offsets[1:])
        return win, offsets


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


def _join(texts: Sequence[str]) -> TextBatch:
    joined = "\0".join(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.intp, count=len(texts))
    starts = np.zeros(len(texts), dtype=np.intp)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]
    if joined.isascii():
        codes = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    else:
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    return TextBatch(codes, starts, starts + lengths)


def normalize_batch(texts: Sequence[str]) -> TextBatch:
    """:func:`normalize` of many texts, as one :class:`TextBatch`; ``batch.text(i)`` equals
    ``normalize(texts[i])``.

    The canonical form is taken of all texts at once (:func:`neardup.sketch.canonical.fold_each`;
    the ASCII fast path for most), whitespace folding runs in numpy over the whole batch: every run
    of ``str.isspace`` characters inside a text becomes one space, runs at either end of a text go,
    which is exactly ``" ".join(text.split())`` without building a string per word.
    """
    batch = _join(_fold_each(texts))
    codes, n = batch.codes, len(batch.codes)
    space = codes <= 32  # most whitespace; controls below 28 that are not are looked up
    low = np.flatnonzero(codes < 28)
    space[low] = _LOW_SPACE[codes[low]]
    if codes.dtype != np.uint8:  # ASCII batches have no whitespace above 32
        high = np.flatnonzero(codes >= 0x85)
        space[high] = _space_table()[np.minimum(codes[high], 0xFFFF)]
    edges = np.zeros(n + 2, dtype=bool)
    edges[1:-1] = space
    flips = np.flatnonzero(edges[1:] != edges[:-1])
    run_start, run_end = flips[0::2], flips[1::2]  # whitespace runs [start, end)
    sep = np.zeros(n + 1, dtype=bool)  # the NUL between texts, and the end of the array
    sep[batch.ends] = True
    # inner runs: neither end touches a text boundary (sep[-1], the end sentinel, covers 0)
    inner = ~sep[run_end] & ~sep[run_start - 1]
    keep = ~space
    keep[run_start[inner]] = True  # an inner run keeps its first character, as a space
    out = codes[keep]
    # where a position lands in the output: less what the runs before it dropped
    dropped = np.zeros(len(run_start) + 1, dtype=np.intp)
    np.cumsum(run_end - run_start - inner, out=dropped[1:])
    out[run_start[inner] - dropped[:-1][inner]] = 32
    starts = batch.starts - dropped[np.searchsorted(run_end, batch.starts, side="right")]
    ends = batch.ends - dropped[np.searchsorted(run_end, batch.ends, side="right")]
    return TextBatch(out, starts, ends)


def combine_windows(values: U64, w: int) -> U64:
    """Order-sensitive hash of every window of ``w`` consecutive values (vectorised).

    ``mix64(sum_j v[i+j] * M_j)`` with distinct odd multipliers ``M_j``: the values are already
    mixed hashes, so one final mix suffices and ``(a, b, c)`` differs from ``(b, a, c)``. A sequence
    shorter than ``w`` yields one window over all of it (a two-word comment still has a feature);
    an empty sequence yields none.
    """
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    w = min(w, n)
    m = n - w + 1
    acc = values[:m] * _WINDOW_MULT[0]
    for j in range(1, w):
        acc += values[j : j + m] * _WINDOW_MULT[j % len(_WINDOW_MULT)] + np.uint64(j)
    return mix64(acc + np.uint64(w))


def combine_rows(rows: U64) -> U64:
    """:func:`combine_windows` of each row of a 2-D array whose rows are shorter than the
    window (``rows.shape[1] < w``): one window over each row, all rows at once."""
    k = rows.shape[1]
    acc = rows[:, 0] * _WINDOW_MULT[0]
    for j in range(1, k):
        acc += rows[:, j] * _WINDOW_MULT[j % len(_WINDOW_MULT)] + np.uint64(j)
    return mix64(acc + np.uint64(k))


def sorted_unique(values: U64) -> U64:
    """``np.unique`` of a 1-D uint64 array, by one sort and one comparison: for the few hundred
    shingles of one text, np.unique's own overhead was five times the work."""
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def shingle_hashes(
    text: str, *, w: int = DEFAULT_SHINGLE, seed: int = DEFAULT_SEED, normalized: bool = False
) -> U64:
    """Sorted, unique uint64 hashes of the text's w-token shingles."""
    return sorted_unique(combine_windows(text_token_hashes(text, seed, normalized=normalized), w))


def shingle_counts(
    text: str, *, w: int = DEFAULT_SHINGLE, seed: int = DEFAULT_SEED, normalized: bool = False
) -> tuple[U64, npt.NDArray[np.int64]]:
    """Sorted unique shingle hashes and their term frequencies (SimHash weights)."""
    h = combine_windows(text_token_hashes(text, seed, normalized=normalized), w)
    uniq, counts = np.unique(h, return_counts=True)
    return uniq, counts.astype(np.int64)


def char_ngram_hashes(
    text: str, *, n: int = DEFAULT_CHAR_NGRAM, seed: int = DEFAULT_SEED, normalized: bool = False
) -> U64:
    """Sorted unique hashes of character n-grams of the normalised text (short-text path)."""
    norm = text if normalized else normalize(text)
    codes = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    return sorted_unique(combine_windows(mix64(codes ^ np.uint64(seed)), n))


def idf_weights(
    hashes: U64, counts: npt.NDArray[np.int64], doc_freq: Mapping[int, int], n_docs: int
) -> F64:
    """tf-idf weights ``tf * log((1 + N) / (1 + df)) + 1`` (smoothed, never zero)."""
    df = np.fromiter((doc_freq.get(int(h), 0) for h in hashes), dtype=np.float64, count=len(hashes))
    return counts.astype(np.float64) * (np.log((1.0 + n_docs) / (1.0 + df)) + 1.0)


def content_hash(normalized_text: str, seed: int = DEFAULT_SEED) -> bytes:
    """128-bit MurmurHash3 of the normalised text: the verbatim-copy key."""
    return _content_hash_utf8(normalized_text.encode("utf-8"), seed)


def _content_hash_utf8(utf8: bytes, seed: int) -> bytes:
    return mmh3.hash_bytes(utf8, seed, x64arch=True)


__all__ = [
    "DEFAULT_CHAR_NGRAM",
    "DEFAULT_SEED",
    "DEFAULT_SHINGLE",
    "TextBatch",
    "batch_shingle_hashes",
    "body_start",
    "char_ngram_hashes",
    "combine_rows",
    "combine_windows",
    "content_hash",
    "facts_texts",
    "has_tokens",
    "idf_weights",
    "may_hold_clock",
    "mix64",
    "normalize",
    "normalize_batch",
    "normalize_each",
    "numerals_and_dates",
    "shingle_counts",
    "shingle_hashes",
    "sorted_unique",
    "text_token_hashes",
    "token_counts",
    "tokenize",
]
