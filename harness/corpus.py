"""Seeded benchmark corpora made from real text, and their exact ground truth.

Originals are sentences dealt from a shuffled deck of real writing; near-duplicates mutate an
earlier document (so chains ``A <- B <- C`` occur). The ``mutation`` label records intent only:
the truth is :func:`exact_pairs`, the exact Jaccard similarity of word shingle sets over every
pair sharing a shingle. The English pool is small (``harness/data/README.md``), so a sentence
recurs in many documents: :func:`_intersections` is built for that.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from typing import TypedDict

import numpy as np
import numpy.typing as npt

from harness import data
from neardup.sketch.features import DEFAULT_SHINGLE, shingle_hashes

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

LANGS = ("en", "zh")
_SOURCES = {"en": data.clough_stevenson, "zh": data.zh_reviews}
_SENT_SPLIT = {"en": re.compile(r"(?<=[.!?])\s+"), "zh": re.compile(r"(?<=[。！？!?；…])")}
_MIN_SENTENCE_UNITS = 4

# Mutation kinds and their shares among near-duplicates.
_KINDS: tuple[tuple[str, float], ...] = (
    ("exact", 0.06),
    ("format", 0.04),
    ("substitute", 0.20),
    ("insert", 0.14),
    ("delete", 0.14),
    ("reorder", 0.10),
    ("boilerplate", 0.10),
    ("mixed", 0.22),
)

# Lines a republisher appends (newsletter, cookies, rights), per language.
_BOILERPLATE: dict[str, list[str]] = data.templates("corpus")["boilerplate"]


class Doc(TypedDict):
    """One generated document; ``source`` is the id of the document it was mutated from."""

    id: str
    text: str
    source: str | None
    mutation: str


def _units(text: str, lang: str) -> list[str]:
    """Edit units: whitespace-separated words for English, characters for Chinese."""
    return text.split() if lang == "en" else [c for c in text if not c.isspace()]


def _join(units: Sequence[str], lang: str) -> str:
    return (" " if lang == "en" else "").join(units)


def pool_from(texts: Iterable[str], lang: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Distinct sentences of the source texts (in order) and every edit unit in them."""
    sentences: dict[str, None] = {}
    for raw in texts:
        text = " ".join(raw.split())
        if text:
            carry = ""
            for piece in _SENT_SPLIT[lang].split(text):
                piece = f"{carry} {piece}".strip() if lang == "en" else carry + piece.strip()
                if len(_units(piece, lang)) < _MIN_SENTENCE_UNITS:
                    carry = piece  # "E.g.", "Figure 2.": glue fragments to the next piece
                    continue
                sentences[piece] = None
                carry = ""
            if carry:
                sentences[carry] = None
    if not sentences:
        raise ValueError("no text to build a sentence pool from")
    pool = tuple(sentences)
    vocab = tuple(u for s in pool for u in _units(s, lang))
    return pool, vocab


@cache
def load_pool(lang: str = "en") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(sentences, vocabulary)`` of the repository's real text for a language."""
    if lang not in _SOURCES:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    return pool_from((row["text"] for row in _SOURCES[lang]()), lang)


class _Mutator:
    """Edit operations on a text at strength ``s`` (roughly the fraction of units touched)."""

    def __init__(self, rng: random.Random, lang: str, vocab: Sequence[str]) -> None:
        self.rng = rng
        self.lang = lang
        self.vocab = vocab

    def _word(self) -> str:
        return self.vocab[self.rng.randrange(len(self.vocab))]

    def substitute(self, text: str, s: float) -> str:
        units = _units(text, self.lang)
        k = max(1, round(s * len(units)))
        for i in self.rng.sample(range(len(units)), min(k, len(units))):
            units[i] = self._word()
        return _join(units, self.lang)

    def insert(self, text: str, s: float) -> str:
        units = _units(text, self.lang)
        budget = max(1, round(s * len(units)))
        while budget > 0:
            run = min(budget, self.rng.randint(1, 4))
            at = self.rng.randint(0, len(units))
            units[at:at] = [self._word() for _ in range(run)]
            budget -= run
        return _join(units, self.lang)

    def delete(self, text: str, s: float) -> str:
        units = _units(text, self.lang)
        budget = min(max(1, round(s * len(units))), len(units) - 1)
        while budget > 0:
            run = min(budget, self.rng.randint(1, 4))
            at = self.rng.randrange(len(units) - run + 1)
            del units[at : at + run]
            budget -= run
        return _join(units, self.lang)

    def reorder(self, text: str, s: float) -> str:
        parts = [p for p in _SENT_SPLIT[self.lang].split(text) if p.strip()]
        if len(parts) < 2:
            units = _units(text, self.lang)
            mid = len(units) // 2
            return _join(units[mid:] + units[:mid], self.lang)
        for _ in range(max(1, round(s * len(parts)))):
            i, j = self.rng.sample(range(len(parts)), 2)
            parts[i], parts[j] = parts[j], parts[i]
        return (" " if self.lang == "en" else "").join(parts)

    def boilerplate(self, text: str, s: float) -> str:
        lines = _BOILERPLATE[self.lang]
        target = max(1, round(s * len(_units(text, self.lang))))
        added: list[str] = []
        while sum(len(_units(b, self.lang)) for b in added) < target:
            added.append(lines[self.rng.randrange(len(lines))])
        sep = "\n\n" if self.lang == "en" else "\n"
        return text + sep + (" " if self.lang == "en" else "").join(added)

    def reformat(self, text: str) -> str:
        """Changes that normalisation (NFKC, casefold, whitespace) removes."""
        rng = self.rng
        if self.lang == "zh":
            wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)
            return re.sub(r"(?<=[。！？])", lambda _: "\n" if rng.random() < 0.5 else "", wide)
        words = text.split(" ")
        out = [w.upper() if rng.random() < 0.1 else w for w in words]
        seps = [rng.choice(("  ", "\n", " \t ")) if rng.random() < 0.1 else " " for _ in out]
        return "".join(w + sep for w, sep in zip(out, seps, strict=True)).rstrip()

    def mutate(self, text: str) -> tuple[str, str]:
        """A mutated copy and its label, e.g. ``"delete:0.084"``."""
        rng = self.rng
        kind = rng.choices([k for k, _ in _KINDS], weights=[w for _, w in _KINDS])[0]
        if kind == "exact":
            return text, "exact"
        if kind == "format":
            return self.reformat(text), "format"
        strength = 0.01 + 0.39 * rng.random() ** 2  # most edits light, some heavy (median ~0.11)
        edits: dict[str, Callable[[str, float], str]] = {
            "substitute": self.substitute,
            "insert": self.insert,
            "delete": self.delete,
            "reorder": self.reorder,
            "boilerplate": self.boilerplate,
        }
        if kind == "mixed":
            ops = rng.sample(sorted(edits), rng.randint(2, 3))
            for op in ops:
                text = edits[op](text, strength / len(ops))
            return text, f"mixed({'+'.join(ops)}):{strength:.3f}"
        return edits[kind](text, strength), f"{kind}:{strength:.3f}"


def generate(
    n_docs: int, *, seed: int, words: int = 300, dup_rate: float = 0.3, lang: str = "en"
) -> list[Doc]:
    """``n_docs`` documents of about ``words`` tokens (characters for Chinese), deterministic for a
    seed; a fraction ``dup_rate`` of them (never the first) are mutations of earlier ones."""
    if n_docs < 0 or words < 1 or not 0.0 <= dup_rate <= 1.0:
        raise ValueError("need n_docs >= 0, words >= 1 and 0 <= dup_rate <= 1")
    pool, vocab = load_pool(lang)
    rng = random.Random(seed)
    mutator = _Mutator(rng, lang, vocab)
    deck: list[str] = []
    docs: list[Doc] = []
    for i in range(n_docs):
        doc_id = f"{lang}-{i:06d}"
        if i > 0 and rng.random() < dup_rate:
            src = docs[rng.randrange(i)]
            text, label = mutator.mutate(src["text"])
            docs.append(Doc(id=doc_id, text=text, source=src["id"], mutation=label))
            continue
        target = round(words * rng.uniform(0.8, 1.2))
        parts: list[str] = []
        size = 0
        while size < target:
            if not deck:
                deck = list(pool)
                rng.shuffle(deck)
            parts.append(deck.pop())
            size += len(_units(parts[-1], lang))
        text = (" " if lang == "en" else "").join(parts)
        docs.append(Doc(id=doc_id, text=text, source=None, mutation="original"))
    return docs


def doc_shingles(docs: Sequence[Doc], w: int = DEFAULT_SHINGLE) -> list[U64]:
    """Sorted unique w-shingle hashes of every document (the sets the sketches estimate)."""
    return [shingle_hashes(d["text"], w=w) for d in docs]


def jaccard(a: U64, b: U64) -> float:
    """Exact Jaccard of two sorted unique hash arrays; 0.0 if either is empty."""
    if len(a) == 0 or len(b) == 0:
        return 0.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


_MAX_EVENTS = 1 << 22  # (pair, shared element) events per block: ~150 MB of temporaries
_MAX_CELLS = 1 << 22  # rows * n_docs counters per block (32 MB)


def _intersections(
    sets: Sequence[U64], *, max_events: int = _MAX_EVENTS, max_cells: int = _MAX_CELLS
) -> Iterator[tuple[I64, I64, I64]]:
    """``(a, b, |A ∩ B|)`` for every pair ``a < b`` sharing at least one element, in blocks.

    Work is ``Σ_s df(s)² / 2`` over shared elements, not ``n²``: a block of rows gathers the
    posting-list suffixes after each row with one ``repeat``/``arange`` and counts pairs with one
    ``bincount``. Elements of one document only are dropped first.
    """
    n = len(sets)
    if n < 2:
        return
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=n)
    if sizes.sum() == 0:
        return
    flat = np.concatenate(sets)
    owner = np.repeat(np.arange(n, dtype=np.int64), sizes)
    _, col, df = np.unique(flat, return_inverse=True, return_counts=True)
    shared = df[col] >= 2
    col, owner = col[shared], owner[shared]
    order = np.argsort(col, kind="stable")  # posting lists, documents ascending within each
    post_doc = owner[order]
    pos = np.empty_like(order)
    pos[order] = np.arange(len(order))
    col_end = np.cumsum(np.bincount(col, minlength=len(df)))
    later = col_end[col] - pos - 1  # documents after this one in the element's posting list
    row_start = np.searchsorted(owner, np.arange(n + 1))
    cum_events = np.concatenate([[0], np.cumsum(later)])[row_start]
    rows_per_block = max(1, max_cells // n)
    steps = np.arange(max_events, dtype=np.int64)  # reused: a fresh arange per block page-faults
    r0 = 0
    while r0 < n:
        by_events = int(np.searchsorted(cum_events, cum_events[r0] + max_events, side="right")) - 1
        r1 = max(r0 + 1, min(n, r0 + rows_per_block, by_events))
        lo, hi = row_start[r0], row_start[r1]
        cnt = later[lo:hi]
        total = int(cnt.sum())
        if total > len(steps):  # one row alone exceeds the block size
            steps = np.arange(total, dtype=np.int64)
        if total:
            idx = np.repeat(pos[lo:hi] + 1 - (np.cumsum(cnt) - cnt), cnt)
            idx += steps[:total]
            cell = np.repeat((owner[lo:hi] - r0) * n, cnt)
            cell += post_doc[idx]
            counts = np.bincount(cell, minlength=(r1 - r0) * n)
            hit = np.flatnonzero(counts)
            yield hit // n + r0, hit % n, counts[hit]
        r0 = r1


def exact_similarities(
    docs: Sequence[Doc], threshold: float, w: int = DEFAULT_SHINGLE
) -> dict[tuple[int, int], float]:
    """``{(i, j): J}`` for every pair ``i < j`` of document indices with exact word-w-shingle
    Jaccard ``J >= threshold`` (``0 < threshold <= 1``; an empty document matches nothing)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold must be in (0, 1]")
    sets = doc_shingles(docs, w)
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    out: dict[tuple[int, int], float] = {}
    for a, b, inter in _intersections(sets):
        sim = inter / (sizes[a] + sizes[b] - inter)
        keep = sim >= threshold
        pairs = zip(a[keep].tolist(), b[keep].tolist(), strict=True)
        out.update(zip(pairs, sim[keep].tolist(), strict=True))
    return out


def exact_pairs(
    docs: Sequence[Doc], threshold: float, w: int = DEFAULT_SHINGLE
) -> set[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of exact w-shingle Jaccard ``>= threshold``."""
    return set(exact_similarities(docs, threshold, w))


def groups_of_copies(n_groups: int, size: int, seed: int) -> list[list[dict[str, str]]]:
    """Near-duplicate groups ``g{G}-{C}``: an original (``C`` = 0) and light word substitutions of
    it (one per 60 words), unrelated across groups."""
    docs = generate(n_groups, seed=seed, dup_rate=0.0)
    rng = random.Random(seed)
    out = []
    for g, d in enumerate(docs):
        words = d["text"].split()
        group = [{"id": f"g{g}-0", "text": d["text"]}]
        for c in range(1, size):
            w = list(words)
            for _ in range(max(1, len(w) // 60)):
                w[rng.randrange(len(w))] = rng.choice(["alpha", "beta", "gamma", "delta"])
            group.append({"id": f"g{g}-{c}", "text": " ".join(w)})
        out.append(group)
    return out


_WORD = re.compile(r"\w+")


def peer_shingles(text: str) -> set[bytes]:
    """The peers' side of a comparison (datasketch, simhash): the usual pure-Python word
    3-shingles of ``\\w+`` on ``casefold()``, joined by a space, encoded."""
    tokens = _WORD.findall(text.casefold())
    if len(tokens) < 3:
        return {" ".join(tokens).encode()} if tokens else set()
    return {" ".join(tokens[i : i + 3]).encode() for i in range(len(tokens) - 2)}


__all__ = [
    "Doc",
    "doc_shingles",
    "exact_pairs",
    "exact_similarities",
    "generate",
    "groups_of_copies",
    "jaccard",
    "load_pool",
    "peer_shingles",
    "pool_from",
]
