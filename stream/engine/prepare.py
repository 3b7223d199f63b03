"""The pure part of deciding a batch: articles -> sketches -> bucket ids and records.

No index and no clock: :func:`prepare` depends only on the policy and the texts, so the same
article gets the same buckets in every process. Vectorised over the batch (one numpy pass for all
texts, see :mod:`neardup.sketch.ragged`).

Bucket ids, by path:

* **long** (``>= policy.short_tokens`` tokens): ``mix64(band ^ long_band)`` for each MinHash band
  of the token shingles, and ``mix64(mix64(key ^ simhash_table) + t * table_mult)`` for the key
  of each SimHash permuted table ``t``;
* **short**: ``mix64(band ^ short_band)`` for each MinHash band of the character n-grams of the
  text's core (:func:`neardup.sketch.facts.facts`: surface noise such as links, tags and emoji left
  out); a long text of at most :func:`boundary` tokens has these too, after its long ones, so
  that a copy on the other side of the line is found whichever side was first;
* **anchors** of a long page of a named source: ``mix64(fingerprint ^ anchor)`` for each of the
  few sentence fingerprints the engine samples from it (:func:`anchor_buckets`);
* **passages** of a long text: ``mix64(fingerprint ^ passage)`` for each of its ``PASSAGES``
  smallest winnowed passages (:mod:`neardup.sketch.winnow`); a text that matched nothing also
  reads those of its ``PASSAGE_PROBES`` smallest (:func:`passage_buckets`): an earlier text that
  lies inside it has its smallest passage among them.

The salts (:class:`~neardup.stream.namespaces.policy.BucketSalts`) keep the five kinds apart in one
namespace's buckets and are part of the scheme the index records.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import islice

import numpy as np
import numpy.typing as npt

from neardup.sketch import (
    canonical,
    digits,
    facts,
    features,
    figures,
    hamming,
    lsh,
    markup,
    sets,
    winnow,
)
from neardup.stream import core
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import (
    PASSAGE_PROBES,
    PASSAGE_SPAN,
    PASSAGE_TOKENS,
    PASSAGES,
    Policy,
)
from neardup.stream.records import Kind, Record


@dataclass(frozen=True, slots=True)
class Prepared:
    """An article with everything registering and verifying it needs."""

    article: Article
    kind: Kind
    content: bytes
    buckets: tuple[int, ...]
    shingles: npt.NDArray[np.uint32]  # sorted unique, 32-bit (what records store)
    text: str  # normalised text (short path; "" on the long path, which never reads it)
    simhash: int
    # long path: a text of fewer than policy.numbers_shingles shingles, its numbers as values,
    # number words included (the brief rule compares them); a longer one, its numerals as
    # written (TextBatch.numerals: a copy's changed figures)
    numbers: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()  # long path: the days of the year it names (TextBatch.dates)
    # long path: the bucket ids of its PASSAGE_PROBES smallest winnowed passages, smallest
    # first (the PASSAGES first are among its buckets; all are what it reads to find an
    # earlier text inside it: :func:`passage_buckets`)
    passages: tuple[int, ...] = ()

    def record(self, at: float, *, keep_text: bool = True) -> Record:
        """What the index stores; ``keep_text``: the text as sent too (evidence spans)."""
        return Record(
            self.article.id,
            self.kind,
            at,
            self.simhash,
            self.content,
            self.buckets,
            self.shingles if self.kind is Kind.LONG else np.empty(0, np.uint32),
            self.text if self.kind is Kind.SHORT else "",
            self.numbers,
            self.article.text if keep_text else "",
            self.dates,
            self.article.source_name(),
        )


def prepare(
    policy: Policy,
    articles: Sequence[Article],
    without_boilerplate: Sequence[str | None] | None = None,
) -> list[Prepared]:
    """Every sketch and bucket id of a batch, in input order.

    ``without_boilerplate``: per article, the text to sketch instead of its own (its text less
    its boilerplate), or None. The content hash is always the whole text's: a verbatim copy is
    one, and a replay of the same article is recognised whatever was learned since.

    A long text that is short once its boilerplate is left out (a template's next release: a
    wire's daily Fed operation, whose every line but the rate was learned) also has the
    MinHash bands of its whole text among its buckets. Two such releases sketch different
    remainders (what was learned grew between them) and share no short bucket; whole, they
    meet and are judged whole (related, with the changed figure). A remainder that stays long
    (a page's body) does not: its whole bands would make every page of a site a candidate of
    every other."""
    out = _prepare(policy, articles, without_boilerplate)
    todo = [
        i
        for i, p in enumerate(out)
        if without_boilerplate and without_boilerplate[i] and p.kind is Kind.SHORT
    ]
    if todo:
        bands = policy.bands_rows[0]
        wholes = _prepare(policy, [articles[i] for i in todo])
        for i, whole in zip(todo, wholes, strict=True):
            if whole.kind is Kind.LONG:
                out[i] = replace(out[i], buckets=out[i].buckets + whole.buckets[:bands])
    return [_as_sent(policy, p) if _wordless(p) else p for p in out]


# --------------------------------------------------------------- texts with no word: as sent

SENT_SALT = 0x53454E54  # "SENT": the exact key of a wordless text, apart from every form's key


def _wordless(p: Prepared) -> bool:
    """Whether a short text's canonical form has no word (emoji, a flag, ``!!!``): its own
    text's, not only what was sketched of it."""
    return (
        p.kind is Kind.SHORT
        and not features.has_tokens(p.text, 1)
        and not features.has_tokens(features.normalize(p.article.text), 1)
    )


def as_sent(text: str) -> str:
    """A wordless text as it was sent: markup read and white space folded, but every character
    kept (the tag characters that tell England's flag from Scotland's, joiners, skin tones);
    a text whose markup shows nothing, as it came."""
    shown = " ".join(unicodedata.normalize("NFC", markup.decode(text)).split())
    return shown or text


def _as_sent(policy: Policy, p: Prepared) -> Prepared:
    """A text whose canonical form has no word is judged on what was sent: its exact key is
    that of the text as sent (:func:`as_sent`; salted apart from every canonical form's key),
    and it has no buckets. The same emoji comment sent twice is a verbatim copy; two different
    ones are never linked (the canonical form folds both flags to one, and the n-grams of a
    line of symbols make any two such lines alike)."""
    key = features.content_hash(as_sent(p.article.text), (policy.seed ^ SENT_SALT) & 0xFFFFFFFF)
    return replace(p, content=key, buckets=())


_SOLID_RE = re.compile(r"[^\W_]")  # a letter or a digit: almost always shown
_TAG_OR_REFERENCE_RE = re.compile(r"<[^<>]*>|&[#A-Za-z0-9]+;?")
_SOLID_TRIES = 4


def shows_nothing(text: str) -> bool:
    """Whether the canonical form of ``text`` (read as the engine reads it) is empty: white
    space, invisible characters, marks or markup only, nothing a reader sees. Most texts
    show a letter at once, found without folding them: only a text whose first few letters
    or digits fold away (Hangul fillers), or that has none outside its tags and references,
    is folded whole to be sure. Bounded work (no pattern that backtracks): a letter only
    inside a ``script`` element counts as shown here, and such a text is judged as sent
    (:func:`as_sent`)."""
    if text.isascii() and "<" not in text and "&" not in text:
        return not text or text.isspace()  # the ASCII form is the text in lower case
    cut = min((at for at in (text.find("<"), text.find("&")) if at >= 0), default=len(text))
    if _shows_a_letter(text, cut):  # before any tag or reference: shown as it is
        return False
    if cut < len(text) and _shown_outside_markup(text):
        return False
    return not features.normalize(text)


_HEAD_CHARS = 4096


def _shown_outside_markup(text: str) -> bool:
    """Whether a letter outside tags and references (a letter in a tag name or a reference
    shows nothing) is shown: in the text's head first, then in the whole text, so that a
    long page is rewritten only when its head shows nothing."""
    for part in (text[:_HEAD_CHARS], text) if len(text) > _HEAD_CHARS else (text,):
        seen = _TAG_OR_REFERENCE_RE.sub(" ", part)
        at = max(seen.rfind("<"), seen.rfind("&"))
        if len(part) < len(text) and at >= 0:  # a tag cut off at the head's end shows nothing
            seen = seen[:at]
        if _shows_a_letter(seen, None):
            return True
    return False


def _shows_a_letter(text: str, end: int | None) -> bool:
    """Whether one of the first few letters or digits of ``text[:end]`` is shown."""
    found = _SOLID_RE.finditer(text, 0, len(text) if end is None else end)
    return any(_shown(m.group()) for m in islice(found, _SOLID_TRIES))


@lru_cache(maxsize=4096)
def _shown(c: str) -> bool:
    return bool(canonical.fold(c).strip())


def anchor_buckets(policy: Policy, fingerprints: Sequence[int]) -> tuple[int, ...]:
    """The bucket ids of a page's sentence anchors (:func:`neardup.sketch.lines.anchors`)."""
    if not fingerprints:
        return ()
    fps = np.array(fingerprints, dtype=np.uint64) ^ np.uint64(policy.bucket_salts.anchor)
    ids: list[int] = features.mix64(fps).tolist()
    return tuple(ids)


def passage_buckets(policy: Policy, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The bucket ids of a long text's passages (:func:`neardup.sketch.winnow.passages`), in
    their order."""
    return features.mix64(fingerprints ^ np.uint64(policy.bucket_salts.passage))


def _passage_width(policy: Policy) -> int:
    """The shingles a passage of ``PASSAGE_TOKENS`` tokens spans."""
    return max(1, PASSAGE_TOKENS - policy.shingle_size + 1)


def _passages(policy: Policy, windows: npt.NDArray[np.uint64]) -> tuple[int, ...]:
    """The bucket ids of a long text's smallest winnowed passages (``windows``: its shingle
    hashes in order), smallest passage first."""
    found = winnow.passages(windows, width=_passage_width(policy), span=PASSAGE_SPAN)
    ids: list[int] = passage_buckets(policy, found[:PASSAGE_PROBES]).tolist()
    return tuple(ids)


def _prepare(
    policy: Policy,
    articles: Sequence[Article],
    without_boilerplate: Sequence[str | None] | None = None,
) -> list[Prepared]:
    if not articles:
        return []
    if len(articles) == 1:  # /check and library calls: no batch set-up
        return [
            _prepare_one(
                policy, articles[0], without_boilerplate[0] if without_boilerplate else None
            )
        ]
    w, seed = policy.shingle_size, policy.seed
    own = [a.text for a in articles]
    if without_boilerplate is None or not any(without_boilerplate):
        texts = own
    else:
        texts = [t or a for t, a in zip(without_boilerplate, own, strict=True)]
    feats = core.text_features(
        policy.hasher,
        features.fold_batch(texts),
        w=w,
        seed=seed,
        min_tokens=policy.short_tokens,
        passages=_passage_reading(policy),
    )
    batch, offsets, long_idx = feats.batch, feats.offsets, feats.long
    contents = batch.content_hashes(seed)
    if texts is not own:  # the content hash is always the whole text's
        for i, t in enumerate(without_boilerplate or ()):
            if t:
                contents[i] = features.content_hash(features.normalize(own[i]), seed)
    n_windows = np.diff(offsets)
    is_long = np.zeros(len(articles), dtype=bool)
    is_long[long_idx] = True
    short_idx: list[int] = np.flatnonzero(~is_long).tolist()
    # long, but near enough the line to be a short text's copy: a short text's buckets too
    edge = boundary(policy) - w + 1  # windows of a text of that many tokens
    near: list[int] = [i for i in long_idx if n_windows[i] <= edge]
    norms = [unstamped(texts[i], batch.text(i)) for i in short_idx + near]
    ids = short_buckets(policy, norms)  # one pass for both
    out: dict[int, Prepared] = {}
    if long_idx:
        extra = dict(zip(near, ids[len(short_idx) :], strict=True))
        out.update(_long(policy, articles, texts, batch, contents, feats, extra))
    if short_idx:
        out.update(_short(articles, contents, norms, ids, short_idx))
    return [out[i] for i in range(len(articles))]


def _prepare_one(policy: Policy, article: Article, without_boilerplate: str | None) -> Prepared:
    """:func:`prepare` of one article, equal to its batch result (a test holds them equal): the
    same functions where they cost nothing per call, their one-text forms where the batch forms'
    set-up (offsets, owners, runs per document) was most of the time of a single text (with
    the compiled core, its one call: its set-up is a few microseconds)."""
    w, seed = policy.shingle_size, policy.seed
    text = without_boilerplate or article.text
    norm, n_windows, sketch, found = _one_text(policy, text)
    own = features.normalize(article.text) if without_boilerplate else norm
    content = features.content_hash(own, seed)
    if sketch is None:
        short = [unstamped(text, norm)]
        return _short([article], [content], short, short_buckets(policy, short), [0])[0]
    salts = policy.bucket_salts
    sig, fp, shingles = sketch  # repeats weigh as tf in fp
    keys = np.array([key for _, key in hamming.table_keys(fp, policy.table_design)], np.uint64)
    table_no = np.arange(len(keys), dtype=np.uint64) * np.uint64(salts.table_mult)
    band_ids = features.mix64(lsh.band_hashes(sig, *policy.bands_rows) ^ np.uint64(salts.long_band))
    table_ids = features.mix64(features.mix64(keys ^ np.uint64(salts.simhash_table)) + table_no)
    brief = len(shingles) < policy.numbers_shingles
    numerals, dates = numbers_and_dates(text, norm, brief)
    near: list[int] = []
    if n_windows + w - 1 <= boundary(policy):  # see _prepare
        (near,) = map(list, short_buckets(policy, [unstamped(text, norm)]))
    return Prepared(
        article,
        Kind.LONG,
        content,
        tuple(band_ids.tolist() + table_ids.tolist() + near) + found[:PASSAGES],
        shingles,
        "",
        fp,
        numerals,
        dates,
        found,
    )


OneSketch = tuple[npt.NDArray[np.uint64], int, npt.NDArray[np.uint32]]


def _one_text(policy: Policy, text: str) -> tuple[str, int, OneSketch | None, tuple[int, ...]]:
    """One text's normalised form, its number of shingles, and, when it takes the long path,
    its signature, fingerprint and recorded shingles, and its passages' bucket ids: by the
    compiled core's one call where it is built, else by the reference's one-text forms."""
    w, seed = policy.shingle_size, policy.seed
    if core.compiled() is not None:
        feats = core.text_features(
            policy.hasher,
            features.fold_batch([text]),
            w=w,
            seed=seed,
            min_tokens=policy.short_tokens,
            passages=_passage_reading(policy),
        )
        norm, n_windows = feats.batch.text(0), int(feats.offsets[1])
        if not feats.long:
            return norm, n_windows, None, ()
        sk = feats.sketches
        found: list[int] = passage_buckets(policy, feats.passages).tolist()
        return norm, n_windows, (sk.signatures[0], int(sk.simhashes[0]), sk.shingles), tuple(found)
    norm = features.normalize(text)
    windows = _windows(norm, seed, w)
    if not (len(windows) + w - 1 >= policy.short_tokens and len(windows) > 0):
        return norm, len(windows), None, ()
    return norm, len(windows), core.sketch_one(policy.hasher, windows), _passages(policy, windows)


def _passage_reading(policy: Policy) -> sets.Passages:
    """How :func:`prepare` reads a long text's passages."""
    return sets.Passages(_passage_width(policy), PASSAGE_SPAN, PASSAGE_PROBES)


def unstamped(text: str, norm: str) -> str:
    """A short text's normalised form without the time stamped on its headline
    (:func:`neardup.sketch.facts.unstamped`)."""
    if "\n" not in text or not any(c.isdigit() for c in text.split("\n", 1)[0]):
        return norm
    return facts.unstamped(text, norm, features.normalize(text.lstrip().split("\n", 1)[0]))


def whole_shingles(policy: Policy, text: str) -> npt.NDArray[np.uint32]:
    """The shingles of ``text`` as :func:`prepare` would record them (sorted unique, 32-bit),
    for comparing a stored article's text as sent in another view than the one it sketched.
    The last few of at most :data:`WHOLE_CACHE_CHARS` characters are kept (a candidate is
    compared with every article of a batch that finds it)."""
    if len(text) > WHOLE_CACHE_CHARS:
        return _read_whole(text, policy.seed, policy.shingle_size)
    return _whole_shingles(text, policy.seed, policy.shingle_size)


# Bounded in bytes: WHOLE_CACHE_ENTRIES texts of at most WHOLE_CACHE_CHARS characters and their
# shingles (4 bytes each, at most one a character): some 13 MB at worst
WHOLE_CACHE_ENTRIES = 128
WHOLE_CACHE_CHARS = 20_000


def _read_whole(text: str, seed: int, w: int) -> npt.NDArray[np.uint32]:
    return _recorded(features.sorted_unique(np.sort(_windows(features.normalize(text), seed, w))))


_whole_shingles = lru_cache(maxsize=WHOLE_CACHE_ENTRIES)(_read_whole)


def _windows(norm: str, seed: int, w: int) -> npt.NDArray[np.uint64]:
    """The w-shingle hashes of a normalised text, in order, repeats kept."""
    return features.combine_windows(features.text_token_hashes(norm, seed, normalized=True), w)


def _recorded(unique: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint32]:
    """Sorted unique shingle hashes as a record keeps them: truncated to 32 bits."""
    return features.sorted_unique(unique & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def numbers_and_dates(text: str, norm: str, brief: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A long text's numbers and dates (``norm``: its normalised form), read from its body
    (:func:`neardup.sketch.figures.facts_texts`: no headline, no times of day), its numbers from
    the whole text when the body names none. ``brief``: numbers as values with number words (what
    the brief rule compares), else the numerals as written."""
    body, whole = figures.facts_texts(text, norm)
    numerals, dates = figures.numerals_and_dates(body)
    if brief:
        return facts.numbers_of(body) or facts.numbers_of(whole), dates
    return numerals or figures.numerals_and_dates(whole)[0], dates


def _facts(
    texts: Sequence[str],
    batch: features.TextBatch,
    idx: list[int],
    brief: list[bool],
    runs: digits.DigitRuns | None = None,  # the batch's digit runs, when the core read them
) -> dict[int, tuple[tuple[str, ...], tuple[str, ...]]]:
    """:func:`numbers_and_dates` of the long texts ``idx`` of a batch (``brief``: each one's
    flag), the same figures found faster: a text with neither a possible time of day nor a
    brief's number words is read from the batch's digit runs in numpy (one pass for the
    batch: a regex scan per text cost more than the rest of its facts); a brief without a time
    of day has only its numbers read alone (its dates are the batch's); the others alone."""
    runs = batch.digit_runs() if runs is None else runs
    clocks = batch.clock_suspects(runs)
    lows = [0] * len(batch)
    alone: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    valued: dict[int, tuple[str, ...]] = {}  # a brief's numbers as values; its dates the batch's
    for i, short in zip(idx, brief, strict=True):
        if clocks[i] and figures.may_hold_clock(norm := batch.text(i)):
            alone[i] = numbers_and_dates(texts[i], norm, short)
            continue
        if "\n" in texts[i]:  # else no headline: the body is the whole text
            lows[i] = figures.body_start(texts[i], batch.text(i))
        if short:  # no time of day: facts_texts would give (norm past lows[i], norm)
            norm = batch.text(i)
            valued[i] = facts.numbers_of(norm[lows[i] :]) or facts.numbers_of(norm)
    body = batch.numerals(runs=runs, lows=lows)
    bare = [i for i in idx if not body[i] and i not in alone and i not in valued]
    whole = batch.numerals(runs=_runs_of(batch, runs, bare)) if bare else body
    dates = batch.dates(runs=runs, lows=lows)
    return {
        i: alone.get(i) or (valued[i] if i in valued else body[i] or whole[i], dates[i])
        for i in idx
    }


def _runs_of(
    batch: features.TextBatch, runs: digits.DigitRuns, texts: list[int]
) -> digits.DigitRuns:
    """The digit runs of some texts of a batch: read from them alone, each of those texts
    gives what it gives among all (a text's figures are read from its own runs); the whole
    text's numerals are read only for the texts whose body names none."""
    starts, ends, alone = runs
    keep = np.isin(np.searchsorted(batch.ends, starts, side="left"), texts)
    return starts[keep], ends[keep], alone[keep]


def _long(
    policy: Policy,
    articles: Sequence[Article],
    texts: Sequence[str],  # what was sketched: the article's text, or without its boilerplate
    batch: features.TextBatch,  # the canonical texts (a disguised digit reads as a digit)
    contents: list[bytes],
    feats: sets.TextFeatures,  # the batch's shingles, its long texts and their sketches
    extra: dict[int, tuple[int, ...]],  # the short buckets of those near the line
) -> dict[int, Prepared]:
    salts = policy.bucket_salts
    idx = feats.long
    sigs, fps, s32, off32 = feats.sketches
    bands = lsh.band_hashes(sigs, *policy.bands_rows)
    tables = hamming.table_keys_many(fps, policy.table_design)
    table_no = np.arange(tables.shape[1], dtype=np.uint64) * np.uint64(salts.table_mult)
    band_ids = features.mix64(bands ^ np.uint64(salts.long_band))
    table_ids = features.mix64(features.mix64(tables ^ np.uint64(salts.simhash_table)) + table_no)
    bucket_ids = np.concatenate([band_ids, table_ids], axis=1).tolist()
    fp_list = fps.tolist()
    sizes = np.diff(off32).tolist()
    bound = policy.numbers_shingles
    found = _facts(texts, batch, idx, [size < bound for size in sizes], feats.digit_runs)
    fp_all: list[int] = passage_buckets(policy, feats.passages).tolist()
    fp_off = feats.passage_offsets
    kept = [tuple(fp_all[fp_off[j] : fp_off[j + 1]]) for j in range(len(idx))]
    return {
        i: Prepared(
            articles[i],
            Kind.LONG,
            contents[i],
            (*bucket_ids[j], *extra.get(i, ()), *kept[j][:PASSAGES]),
            s32[off32[j] : off32[j + 1]],
            "",
            fp_list[j],
            *found[i],
            kept[j],
        )
        for j, i in enumerate(idx)
    }


def _short(
    articles: Sequence[Article],
    contents: list[bytes],
    norms: list[str],
    ids: list[tuple[int, ...]],
    idx: list[int],
) -> dict[int, Prepared]:
    return {
        i: Prepared(
            articles[i],
            Kind.SHORT,
            contents[i],
            ids[j],
            np.empty(0, np.uint32),
            norms[j],
            0,
        )
        for j, i in enumerate(idx)
    }


def boundary(policy: Policy) -> int:
    """The most tokens a long text has and is still compared with short ones (both ways: it
    also has a short text's buckets, :func:`prepare`; :func:`neardup.stream.engine.judge.judge`
    reads it as a short one).

    A copy is at least ``short_threshold`` alike by edit similarity, so one side has at least
    that share of the other's length (a 29-token text and a copy of up to 36); a tag added at
    an edge is trimmed before comparing (:func:`neardup.sketch.facts.compare`), so a copy can
    be longer still: a margin of the threshold squared (46 tokens at the defaults) takes in a
    byline of a dozen words on a 29-token brief. Past it the two lengths differ too much to
    be a copy under the short rule, and long texts keep only their own buckets. At most twice
    the line, whatever the threshold (a low one would read long stories as short texts)."""
    margin = int(policy.short_tokens / policy.short_threshold**2 + 1e-9)
    return min(margin, 2 * policy.short_tokens)


def short_buckets(policy: Policy, norms: Sequence[str]) -> list[tuple[int, ...]]:
    """The short path's bucket ids of normalised texts: MinHash bands of the character
    n-grams of each one's core (:func:`neardup.sketch.facts.facts`): a copy that only adds a
    tracking suffix, a link or emoji shares its buckets (the verdict compares cores too);
    without its spaces, so that words run together or split (``two for one`` /
    ``twoforone``) share them too."""
    if not norms:
        return []
    cores = [facts.facts_of(norm).core or norm for norm in norms]
    sigs, sizes = core.char_sketches(policy.hasher, cores, n=policy.char_ngram, seed=policy.seed)
    salt = np.uint64(policy.bucket_salts.short_band)
    ids = features.mix64(lsh.band_hashes(sigs, *policy.short_bands_rows) ^ salt).tolist()
    return [tuple(row) if size else () for row, size in zip(ids, sizes.tolist(), strict=True)]


__all__ = [
    "SENT_SALT",
    "Prepared",
    "anchor_buckets",
    "as_sent",
    "boundary",
    "numbers_and_dates",
    "passage_buckets",
    "prepare",
    "short_buckets",
    "shows_nothing",
    "unstamped",
    "whole_shingles",
]
