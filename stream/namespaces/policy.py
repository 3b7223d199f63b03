"""Similarity settings of a namespace, and the sketch scheme they imply.

The default long-text measure is the Jaccard similarity of token 3-shingles (word 3-grams;
character 3-grams for CJK) with threshold 0.8, so a similarity number means exactly that. Banding
is chosen by the *recall floor* (:func:`neardup.sketch.lsh.recall_floor_params`): pairs at or above
the threshold become candidates with probability >= ``recall`` (0.99), not merely "half of the pairs
at the threshold", which is all an S-curve midpoint promises.

Texts with fewer than ``short_tokens`` tokens (comments, titles) take the short-text path:
character n-grams for candidates and normalised edit similarity to decide, because with a few
dozen features the binomial models behind MinHash and SimHash are too coarse.

The *scheme* (:meth:`Policy.scheme`) is everything that decides stored keys and records; the
index stores it per namespace and refuses a worker whose scheme differs. It includes the
:class:`BucketSalts`, so changing a salt is refused like changing a seed. Scheme format 2 added
the salts to the record (the ids they give did not change): a namespace indexed under format 1 is
refused with :class:`~neardup.stream.errors.SchemeMismatchError` until it is re-indexed. Format 3
stores sequence numbers as 8 bytes instead of 4 (they wrapped at 2**32): an index of format 2 is
refused the same way, with a message naming the formats (re-index into a new namespace, or flush
it). Format 4 buckets a short text by the n-grams of its core (:mod:`neardup.sketch.facts`: links,
tags, emoji and tracking phrases left out) and keeps a long text's numbers in its record. The scheme
names the canonical form texts are folded to (:data:`neardup.sketch.canonical.CANONICAL_FORM`): an
index built under another form (or before the form had a name: ``nfkc+casefold``) is refused with
both forms named, and ``neardup reindex`` migrates it.

Short texts: facts decide (``facts``). Two short texts whose cores are at least
``short_threshold`` alike are a copy only when their facts agree (numbers, names and other
content words; :func:`neardup.sketch.facts.differences`); otherwise the earlier one is *related*,
listed with what differs and never in the same cluster. ``facts="relaxed"`` lets numbers differ (a
spam campaign that varies a phone number or a price is one campaign); words must still agree.

Boilerplate (``boilerplate_min_docs``, 0 turns it off): a line of a multi-line text, of at most
``boilerplate_tokens`` tokens, that at least that many earlier documents of the same source
carried (navigation, footers, "most read" boxes; counted by the index, :mod:`neardup.sketch.lines`)
is left out of the text's sketches and of its similarity. Verbatim and close copies (similarity 0.95
or more) count only the lines they do not copy, and so does any copy without a source, and an
original without a source for the lines it shares with a candidate it is an edited copy of:
boilerplate is what recurs across different stories, and a story copied many times must not make
its own lines template. What was left out is frozen in the article's record
when it is registered, so a replay or another worker deciding it later reaches the same verdict; the
counts themselves live in two bounded generations of ``boilerplate_lines`` keys each.

Deleted ids are remembered, so a replay of a taken-down article's message does not bring it back:
for the retention window when the namespace has one, else ``deleted_ttl_s`` (7 days by default).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Literal

import orjson

from neardup.sketch import hamming, lsh
from neardup.sketch.canonical import CANONICAL_FORM
from neardup.sketch.minhash import MinHasher
from neardup.stream.index.base import SHARDED_FORMAT

Measure = Literal["jaccard", "containment"]
# 7: every long text's smallest winnowed passages among its buckets; 6: a page's sentence
# anchors among its buckets; 5: short-text cores join dotted and
# hyphenated words (u.s -> us); 4: short-text buckets of
# the core, long records with numbers; 3: 8-byte seqs
SCHEME_FORMAT = 7
# A page's anchors (neardup.stream.engine.prepare.anchor_buckets): the ANCHORS smallest fingerprints
# of its new sentences of at least ANCHOR_TOKENS tokens, each a bucket. Part of the scheme: they are
# buckets.
ANCHORS = 4
ANCHOR_TOKENS = 8
# A long text's passages (neardup.sketch.winnow): windows of PASSAGE_TOKENS tokens, the smallest
# of each run of PASSAGE_SPAN kept. Its PASSAGES smallest are buckets (registered and probed); a
# text that matched nothing also reads the buckets of its PASSAGE_PROBES smallest, which find an
# earlier text that lies inside it (neardup.stream.engine.engine.Engine._passage_probes). Part of
# the scheme: they are buckets.
PASSAGES = 4
PASSAGE_TOKENS = 8
PASSAGE_SPAN = 16
PASSAGE_PROBES = 64
FactsRule = Literal["strict", "relaxed"]
MAX_SHARDS = 4096  # shard groups of a namespace: a Redis Cluster has 16,384 slots


@dataclass(frozen=True, slots=True)
class BucketSalts:
    """Constants mixed into bucket ids, so the five kinds of bucket (long-text bands, short-text
    bands, SimHash tables, a page's sentence anchors, a long text's passages) never share an id
    although all live in one namespace's buckets."""

    long_band: int = 0x4C4F4E4742414E44  # "LONGBAND"
    short_band: int = 0x53484F5254424E44  # "SHORTBND"
    simhash_table: int = 0x53494D5441424C45  # "SIMTABLE"
    table_mult: int = 0xC2B2AE3D27D4EB4F  # odd: distinct tables never share a bucket id
    anchor: int = 0x414E43484F525321  # "ANCHORS!"
    passage: int = 0x5041535341474553  # "PASSAGES"

    def __post_init__(self) -> None:
        if not all(0 <= v < 2**64 for v in asdict(self).values()):
            raise ValueError("bucket salts are 64-bit unsigned integers")
        if self.table_mult % 2 == 0:
            raise ValueError("table_mult must be odd (a bijection mod 2**64)")


BUCKET_SALTS = BucketSalts()


@dataclass(frozen=True)
class Policy:
    """Per-namespace similarity policy. Everything in :meth:`scheme` must match the index."""

    threshold: float = 0.8
    measure: Measure = "jaccard"
    recall: float = 0.99
    short_threshold: float = 0.8
    short_tokens: int = 30
    max_matches: int = 10
    bucket_cap: int = 256
    retention_s: float | None = None
    deleted_ttl_s: float = 7 * 86400.0  # how long a deleted id is remembered without retention
    max_size_ratio: float = 4.0  # containment: how much longer one text may be than the other
    facts: FactsRule = "strict"  # short texts: "relaxed" lets numbers differ in a copy
    facts_tokens: int = 60  # long texts briefer than this: differing numbers make them related
    keep_text: bool = True  # records keep the text as sent (evidence spans point into it)
    explain: bool = False  # verdicts carry evidence spans (always in /check and --explain)
    boilerplate_min_docs: int = 3  # a line in this many documents of a source is boilerplate
    boilerplate_lines: int = 100_000  # line keys kept per generation (two are kept)
    boilerplate_tokens: int = 40  # longer lines are never boilerplate (a paragraph that recurs)
    # the sources whose documents teach boilerplate (None: every source); the others' lines are
    # still left out where a teaching source's documents made them template, never counted
    boilerplate_sources: tuple[str, ...] | None = None
    # the long-text banding (bands, rows), when a namespace keeps the one it was built with
    # (neardup.stream.namespaces.policies: a raised threshold on an existing namespace); None:
    # chosen here
    bands: tuple[int, int] | None = None
    # scheme parameters (stored in the index, refused if they differ)
    shingle_size: int = 3
    char_ngram: int = 3
    num_perm: int = 128
    minhash_scheme: Literal["oph", "kperm"] = "oph"
    seed: int = 0x6E656172
    simhash_k: int = 3
    simhash_blocks: int = 5
    bucket_salts: BucketSalts = BUCKET_SALTS
    # shard groups of the namespace's buckets on Redis (1: one slot, one primary); part of the
    # scheme, because it decides where buckets are (neardup.stream.index.redis.sharded)
    shards: int = 1

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if not 0.0 < self.short_threshold <= 1.0:
            raise ValueError(f"short_threshold must be in (0, 1], got {self.short_threshold}")
        if not 0.0 < self.recall < 1.0:
            raise ValueError(f"recall must be in (0, 1), got {self.recall}")
        if self.measure not in ("jaccard", "containment"):
            raise ValueError(f"measure must be 'jaccard' or 'containment', got {self.measure!r}")
        if self.bucket_cap < 1 or self.max_matches < 1 or self.short_tokens < 0:
            raise ValueError("bucket_cap and max_matches must be >= 1, short_tokens >= 0")
        if self.num_perm < 1 or self.shingle_size < 1 or self.char_ngram < 1:
            raise ValueError("num_perm, shingle_size and char_ngram must be >= 1")
        if self.minhash_scheme not in ("oph", "kperm"):
            raise ValueError(
                f"minhash_scheme must be 'oph' or 'kperm', got {self.minhash_scheme!r}"
            )
        if self.retention_s is not None and self.retention_s <= 0:
            raise ValueError(f"retention_s must be > 0 or None, got {self.retention_s}")
        if self.deleted_ttl_s <= 0:
            raise ValueError(f"deleted_ttl_s must be > 0, got {self.deleted_ttl_s}")
        if self.bands is not None and (
            self.bands[0] < 1 or self.bands[1] < 1 or self.bands[0] * self.bands[1] > self.num_perm
        ):
            raise ValueError(f"bands must be (b, r) with b * r <= num_perm, got {self.bands}")
        if self.facts_tokens < 0:
            raise ValueError(f"facts_tokens must be >= 0 (0: never), got {self.facts_tokens}")
        if self.boilerplate_min_docs < 0 or self.boilerplate_lines < 1:
            raise ValueError("boilerplate_min_docs must be >= 0 (0: off), boilerplate_lines >= 1")
        if self.boilerplate_sources is not None and not all(
            isinstance(x, str) for x in self.boilerplate_sources
        ):
            raise ValueError("boilerplate_sources must be a list of source names")
        if self.facts not in ("strict", "relaxed"):
            raise ValueError(f"facts must be 'strict' or 'relaxed', got {self.facts!r}")
        if not 1 <= self.shards <= MAX_SHARDS:
            raise ValueError(f"shards must be in [1, {MAX_SHARDS}], got {self.shards}")
        if self.max_size_ratio < 1.0:
            raise ValueError(f"max_size_ratio must be >= 1, got {self.max_size_ratio}")
        # derived parameters fail here, at start, rather than on the first article
        _ = self.bands_rows, self.short_bands_rows, self.table_design

    def teaches(self, source: str) -> bool:
        """Whether documents of ``source`` count towards its boilerplate."""
        return self.boilerplate_sources is None or source in self.boilerplate_sources

    @property
    def remember_deleted_s(self) -> float:
        """How long a deleted id is remembered: the retention window, else ``deleted_ttl_s``."""
        return self.retention_s if self.retention_s is not None else self.deleted_ttl_s

    @cached_property
    def candidate_jaccard(self) -> float:
        """The Jaccard similarity that banding must find with probability ``recall``.

        For Jaccard it is the threshold. Containment ``C = |A∩B| / |A|`` of the new text ``A`` in
        an earlier ``B`` with ``|B| <= R |A|`` implies ``J >= C / (1 + R - C)``, so a containment
        namespace bands for that lower similarity (more candidates, all verified exactly).
        """
        if self.measure == "jaccard":
            return self.threshold
        c, r = self.threshold, self.max_size_ratio
        return c / (1.0 + r - c)

    @property
    def numbers_shingles(self) -> int:
        """Long texts of fewer shingles keep their numbers in the record: every text the brief
        rule (``facts_tokens``) can compare with a brief one. Jaccard at the threshold keeps
        two sets within ``1 / threshold`` of each other's size; containment within
        ``max_size_ratio``."""
        ratio = 1.0 / self.threshold if self.measure == "jaccard" else self.max_size_ratio
        return int(self.facts_tokens * ratio) + 1

    @cached_property
    def bands_rows(self) -> tuple[int, int]:
        if self.bands is not None:
            return self.bands
        # recall_floor_params needs s_min < 1; threshold 1.0 bands for 0.999 (verified exactly)
        return lsh.recall_floor_params(
            min(self.candidate_jaccard, 0.999), self.recall, self.num_perm
        )

    @cached_property
    def short_bands_rows(self) -> tuple[int, int]:
        # Edit similarity s roughly keeps char-n-gram Jaccard above s/(2-s); aim recall there.
        s = self.short_threshold
        return lsh.recall_floor_params(max(0.05, s / (2 - s) - 0.05), self.recall, self.num_perm)

    @cached_property
    def hasher(self) -> MinHasher:
        return MinHasher(self.num_perm, seed=self.seed, scheme=self.minhash_scheme)

    @cached_property
    def table_design(self) -> hamming.TableDesign:
        return hamming.design(64, self.simhash_k, blocks=self.simhash_blocks)

    def scheme(self) -> dict[str, object]:
        """The parameters that decide stored keys and records."""
        bands, rows = self.bands_rows
        sbands, srows = self.short_bands_rows
        return {
            "format": SCHEME_FORMAT,
            "canonical": CANONICAL_FORM,
            "features": {"shingle": self.shingle_size, "char_ngram": self.char_ngram},
            "minhash": {"scheme": self.minhash_scheme, "num_perm": self.num_perm},
            "seed": self.seed,
            "bands": [bands, rows],
            "short_bands": [sbands, srows],
            "simhash": {"bits": 64, "k": self.simhash_k, "blocks": self.simhash_blocks},
            "short_tokens": self.short_tokens,
            "measure": self.measure,
            "bucket_salts": asdict(self.bucket_salts),
            "anchors": {"k": ANCHORS, "tokens": ANCHOR_TOKENS},
            "passages": {"k": PASSAGES, "tokens": PASSAGE_TOKENS, "span": PASSAGE_SPAN},
        } | ({"shards": self.shards, "sharded_format": SHARDED_FORMAT} if self.shards > 1 else {})

    def scheme_bytes(self) -> bytes:
        return orjson.dumps(self.scheme(), option=orjson.OPT_SORT_KEYS)

    def scheme_id(self) -> str:
        return hashlib.sha256(self.scheme_bytes()).hexdigest()[:16]


__all__ = [
    "ANCHORS",
    "ANCHOR_TOKENS",
    "BUCKET_SALTS",
    "MAX_SHARDS",
    "PASSAGES",
    "PASSAGE_PROBES",
    "PASSAGE_SPAN",
    "PASSAGE_TOKENS",
    "SCHEME_FORMAT",
    "SHARDED_FORMAT",
    "BucketSalts",
    "FactsRule",
    "Measure",
    "Policy",
]
