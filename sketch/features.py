"""Text -> normalised tokens -> hashed shingles (uint64), the input of every sketch.

Normalisation is the canonical form (:mod:`neardup.sketch.canonical`: markup, invisible characters,
marks, look-alike letters, script variants and case folded away), then whitespace folded to
single spaces, so two copies that look alike to a reader never differ here.

Tokens are words (runs of ``\\w`` and combining marks: a Thai tone mark or a Devanagari vowel
sign is a part of its word, where Python's ``\\w`` would end the word at it) for alphabetic
scripts and *single characters* for CJK ideographs and kana: Chinese and Japanese have no
spaces, and a word segmenter would make the sketch depend on a dictionary. With the default
shingle size ``w = 3`` the same rule gives word 3-grams for English and character 3-grams for
Chinese, the robust default in the literature for both (character 2-grams repeat too often in
Chinese; 4-grams break on every edit). Mixed text works: ``"neardup 检测重复"`` tokenises to
``["neardup", "检", "测", "重", "复"]``.

Every hash is deterministic across processes and machines: MurmurHash3 with a fixed seed for
tokens, then a splitmix64-style combiner in numpy for shingles (never Python's ``hash()``, which is
salted per process).

Many texts at once: :func:`normalize_batch` and :func:`batch_shingle_hashes` lay them end to
end as one :class:`TextBatch`, whose runs of digits (numerals, dates) are read by
:mod:`neardup.sketch.digits`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import islice

import mmh3
import numpy as np
import numpy.typing as npt

from neardup.sketch import canonical
from neardup.sketch.digits import DigitReading

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
# every combining mark (Mn, Mc, Me): a part of its word
_MARKS = canonical.mark_class()
_TOKEN_RE = re.compile(f"[{_CJK}]|(?:[^\\W{_CJK}]|(?![{_CJK}]){_MARKS})+")
_PLAIN_TOKEN_RE = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")  # the same on a text with no mark
_CJK_RE = re.compile(f"[{_CJK}]")
_WORD_RE = re.compile(f"\\w|{_MARKS}")
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
    return [" ".join(f.split()) for f in _fold_each(texts, parts=True)]


def tokenize(text: str, *, normalized: bool = False) -> list[str]:
    """Words for alphabetic scripts, single characters for CJK (see module docstring)."""
    norm = text if normalized else normalize(text)
    return _token_re(norm).findall(norm)


def _token_re(text: str) -> re.Pattern[str]:
    """The token pattern for ``text``: the simpler one when it holds no mark (most texts)."""
    return _TOKEN_RE if canonical.has_mark(text) else _PLAIN_TOKEN_RE


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
    return n <= 0 or any(True for _ in islice(_token_re(text).finditer(text), n - 1, None))


@cache
def _char_classes() -> npt.NDArray[np.uint8]:
    """Class of every BMP code point: 0 separator, 1 word character (``\\w`` or a combining
    mark), 2 CJK."""
    bmp = "".join(chr(c) if not 0xD800 <= c < 0xE000 else " " for c in range(0x10000))
    word = np.frombuffer(re.sub(r"\W", "\0", bmp).encode("utf-32-le"), dtype=np.uint32) != 0
    marks = re.sub(f"(?!{_MARKS}).", "\0", bmp, flags=re.DOTALL)
    word |= np.frombuffer(marks.encode("utf-32-le"), dtype=np.uint32) != 0
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


def bmp_classes() -> U8:
    """The class of every BMP code point (0 separator, 1 word character, 2 CJK), as the
    tokenizer reads them: what a compiled tokenizer is given, so that it reads Python's Unicode
    data and never its own."""
    return _char_classes()


def code_classes(codes: npt.NDArray[np.uint32]) -> U8:
    """The class of each code point (:func:`bmp_classes`'s, past the BMP too)."""
    return _classify(codes)


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


def _fold_each(texts: Sequence[str], *, parts: bool = False) -> list[str]:
    """:func:`_fold` of each text, folded at once (:func:`neardup.sketch.canonical.fold_each`;
    ``parts``: the texts are the lines or passages of a text or two)."""
    return canonical.fold_each(texts, parts=parts)


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
    return TextBatch.of(texts).shingle_hashes(w=w, seed=seed)


_LOW_SPACE = np.array([chr(c).isspace() for c in range(33)], dtype=bool)


def space_table() -> npt.NDArray[np.bool_]:
    """``str.isspace`` of every BMP code point (none past it is white space): what a compiled
    folding of white space is given, so that it reads Python's Unicode data."""
    return _space_table()


@cache
def _space_table() -> npt.NDArray[np.bool_]:
    """``str.isspace`` of every BMP code point (every whitespace character is in the BMP)."""
    return np.array([chr(c).isspace() for c in range(0x10000)], dtype=bool)


@dataclass(frozen=True, slots=True)
class TextBatch(DigitReading):
    """Many texts as one array of code points: text i is ``codes[starts[i]:ends[i]]``.

    Texts are laid end to end with one NUL between them. NUL is a separator for the tokenizer,
    so no token crosses from one text into the next, and the bounds are explicit, so a NUL inside
    a text stays part of it. ASCII-only batches take one byte per character. Its numerals, dates
    and times of day are read by :class:`neardup.sketch.digits.DigitReading`.
    """

    codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]
    starts: npt.NDArray[np.intp]
    ends: npt.NDArray[np.intp]

    @classmethod
    def of(cls, texts: Sequence[str]) -> TextBatch:
        """The texts as they are (not normalised), laid end to end."""
        joined = "\0".join(texts)
        lengths = np.fromiter(map(len, texts), dtype=np.intp, count=len(texts))
        starts = np.zeros(len(texts), dtype=np.intp)
        np.cumsum(lengths[:-1] + 1, out=starts[1:])
        codes: npt.NDArray[np.uint8] | npt.NDArray[np.uint32]
        if joined.isascii():
            codes = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        else:
            codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        return cls(codes, starts, starts + lengths)

    def text(self, i: int) -> str:
        part = self.codes[self.starts[i] : self.ends[i]]
        if part.dtype == np.uint8:
            return part.tobytes().decode("ascii")
        return part.tobytes().decode("utf-32-le")

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


def normalize_batch(texts: Sequence[str]) -> TextBatch:
    """:func:`normalize` of many texts, as one :class:`TextBatch`; ``batch.text(i)`` equals
    ``normalize(texts[i])``.

    The canonical form is taken of all texts at once (:func:`neardup.sketch.canonical.fold_each`;
    the ASCII fast path for most), whitespace folding runs in numpy over the whole batch: every run
    of ``str.isspace`` characters inside a text becomes one space, runs at either end of a text go,
    which is exactly ``" ".join(text.split())`` without building a string per word.
    """
    return fold_spaces(fold_batch(texts))


def fold_batch(texts: Sequence[str]) -> TextBatch:
    """The canonical forms of many texts (:func:`neardup.sketch.canonical.fold_each`), laid end
    to end, their white space as it is (:func:`fold_spaces` folds it)."""
    return TextBatch.of(_fold_each(texts))


def fold_spaces(batch: TextBatch) -> TextBatch:
    """Each text of ``batch`` with its white space folded: ``" ".join(text.split())``, the
    texts laid end to end again (what :func:`normalize_batch` does once the texts are
    folded)."""
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
    "bmp_classes",
    "char_ngram_hashes",
    "code_classes",
    "combine_rows",
    "combine_windows",
    "content_hash",
    "fold_batch",
    "fold_spaces",
    "has_tokens",
    "idf_weights",
    "mix64",
    "normalize",
    "normalize_batch",
    "normalize_each",
    "shingle_counts",
    "shingle_hashes",
    "sorted_unique",
    "space_table",
    "text_token_hashes",
    "token_counts",
    "tokenize",
]
