"""Boilerplate, learned per source: the lines and passages a source's documents repeat are its
template (a site's navigation, footer, cookie notice, a box of its latest headlines), left out
of what a text is sketched and judged by.

What counts: each line or passage of two to ``boilerplate_tokens`` tokens that at least
``boilerplate_min_docs`` earlier documents of the same source had, counted in the index when a
batch's verdicts are stored. What teaches: originals and a named source's loose copies
(:func:`teaches`); a close copy, and any copy without a source, teaches only what is not in the
text it copies (an original without a source, what it does not share with a text it is an
edited copy of), so a story syndicated many times never makes its own lines template, and a
source cannot teach another's story as its template.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import NamedTuple, cast

import numpy as np
import numpy.typing as npt

from neardup.sketch import features
from neardup.sketch.lines import Lines, anchors, between, inside, passages_of, without
from neardup.stream import core
from neardup.stream.engine.prepare import Prepared, anchor_buckets, whole_shingles
from neardup.stream.errors import NeardupError
from neardup.stream.index.base import Index, Probe
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import ANCHOR_TOKENS, ANCHORS, Policy
from neardup.stream.records import Kind, Record

_WORD = re.compile(r"\w")


class Learned(NamedTuple):
    """What :func:`learn` found for each article of a batch."""

    lines: list[Lines | None]  # its lines and passages (None: one line, or learning off)
    without_boilerplate: list[str | None]  # its text less what its source repeats (None: as sent)
    left_out: list[frozenset[bytes]]  # the fingerprints left out of ``without_boilerplate``
    anchors: list[tuple[int, ...]]  # its anchors' fingerprints
    # the fingerprints of everything its source repeats, even when that left nothing (then
    # ``without_boilerplate`` is None and ``left_out`` empty): what a pair leaves out (judge.judge)
    learned: list[frozenset[bytes]]


COPY_TEACHES_BELOW = 0.95  # a copy this similar to what it copies is that story again


def _counted_now(probe: Probe) -> bool:
    """A new article's lines are counted once its batch is decided; so are a replayed one's
    whose verdict was never stored (the attempt that registered it failed before counting)."""
    return probe.status == "new" or (probe.status == "replay" and probe.verdict is None)


def teaches(v: Verdict | NeardupError | None, source: str) -> bool:
    """Whether all of an article's lines count towards its source's boilerplate: an
    original's do, and a loose copy's from a named source (a template shared by two of a
    site's stories can make them look alike: they must teach it, or the template is never
    learned); a copy nearly identical to an earlier text does not (a story syndicated many
    times must not make its own lines template), nor any copy without a source (``source``
    ""): there the namespace is one source, so what its copies share is the story, not a
    site's template (a corpus of lightly edited copies would make every copied story
    template after ``boilerplate_min_docs`` copies)."""
    if not isinstance(v, Verdict) or v.verdict == "duplicate":
        return False
    if v.verdict == "original":
        return True
    return bool(source) and (v.similarity or 0.0) < COPY_TEACHES_BELOW


def copied(
    records: Iterable[Record],
    decided: Mapping[int, Verdict | NeardupError],
    articles: Sequence[Article],
) -> dict[int, str]:
    """Per copy of the batch that does not teach all its lines (:func:`teaches`) but is not
    an exact duplicate either, the normalised text of the earlier article it copies, when its
    record kept the text (else the copy teaches nothing)."""
    close = {
        k: v.duplicate_of
        for k, v in decided.items()
        if isinstance(v, Verdict)
        and v.verdict == "near_duplicate"
        and not teaches(v, articles[k].source_name())
    }
    if not close:
        return {}
    by_id = {r.doc_id: r for r in records if r.raw}
    return {
        k: features.normalize(by_id[doc].raw)
        for k, doc in close.items()
        if doc is not None and doc in by_id
    }


REST_FOUND = 1 / 3  # of the word pairs of the lines an edited copy changed, in what it copies


def _pairs(text: str) -> set[tuple[str, str]]:
    """The pairs of consecutive tokens inside each line: most of them outlive an edit of the
    line (a word, a character) however short the line."""
    out: set[tuple[str, str]] = set()
    for line in text.split("\n"):
        tokens = features.tokenize(line)
        out.update(itertools.pairwise(tokens))
    return out


def resembled(
    policy: Policy,
    records: Mapping[int, Record],
    decided: Mapping[int, Verdict | NeardupError],
    articles: Sequence[Article],
    lines: Sequence[Lines | None],
    probes: Sequence[Probe],
) -> dict[int, frozenset[bytes]]:
    """Per original without a source, the keys of its lines that a candidate it is an edited
    copy of also has: a candidate with half of its lines or more, and in whose lines at least
    :data:`REST_FOUND` of the word pairs of its other lines are (the lines it edited). In a
    namespace that is one source, those lines are the story's and do not teach
    (:func:`lines_taught`). Pages of a site sent without a source share their template's
    lines, maybe most of them, but their other lines are another story: their template is
    still learned."""
    pairs_of: dict[int, set[tuple[str, str]]] = {}
    out: dict[int, frozenset[bytes]] = {}
    todo = {
        k: found
        for k, v in decided.items()
        if isinstance(v, Verdict)
        and v.verdict == "original"
        and not articles[k].source_name()
        and (found := lines[k]) is not None
    }
    texts = {
        s: rec.raw
        for k in todo
        for s in probes[k].candidates
        if (rec := records.get(s)) is not None and "\n" in rec.raw
    }
    read = units_many(list(texts.values()), [""] * len(texts), policy)  # the lot in one call
    keys_of = {s: frozenset(u.keys) for s, u in zip(texts, read, strict=True)}
    for k, found in todo.items():
        shared: set[bytes] = set()
        for s in probes[k].candidates:
            if s not in keys_of:
                continue
            both = {i for i, key in enumerate(found.keys) if key in keys_of[s]}
            if 2 * len(both) < len(found.keys):
                continue
            if s not in pairs_of:
                pairs_of[s] = _pairs(texts[s])
            rest = _pairs(without(articles[k].text, found, both))
            if len(rest & pairs_of[s]) >= REST_FOUND * len(rest):
                shared |= {found.keys[i] for i in both}
        if shared:
            out[k] = frozenset(shared)
    return out


# Texts whose units are kept for a later call: a batch's originals read the units of their
# candidates (:func:`resembled`), mostly texts that a recent batch read when it learned them.
# Bounded in count and in a text's length: the cache holds at most some tens of megabytes.
UNITS_CACHED = 2048
UNITS_CACHED_CHARS = 8192


def units(text: str, source: str, policy: Policy) -> Lines:
    """What a text's boilerplate is learned and left out by: its lines, and for a named source
    (a site, a feed) the passages inside them too (sentences, a box's items: a footer or a box
    that text extraction delivers on one line). Without a source, the namespace is one source
    whose documents are every story and their copies: passages counted across it would make a
    story's own sentences template once its copies are in. The last :data:`UNITS_CACHED`
    texts' units are kept (a pure function of its arguments: the same value, once)."""
    if len(text) > UNITS_CACHED_CHARS:
        return _read([text], [source], policy)[0]
    key = (text, source, policy.seed, policy.boilerplate_tokens)
    got = _kept(key)
    if got is None:
        got = _read([text], [source], policy)[0]
        _keep(key, got)
    return got


def units_many(texts: Sequence[str], sources: Sequence[str], policy: Policy) -> list[Lines]:
    """:func:`units` of each ``texts[i]`` under ``sources[i]``: the lines of those without a
    source that are not kept already in one call of the core in use
    (:func:`neardup.stream.core.lines_of_many`)."""
    seed, most = policy.seed, policy.boilerplate_tokens
    out: list[Lines | None] = [
        _kept((t, s, seed, most)) if len(t) <= UNITS_CACHED_CHARS else None
        for t, s in zip(texts, sources, strict=True)
    ]
    todo = [i for i, got in enumerate(out) if got is None]
    found = _read([texts[i] for i in todo], [sources[i] for i in todo], policy)
    for i, got in zip(todo, found, strict=True):
        out[i] = got
        if len(texts[i]) <= UNITS_CACHED_CHARS:
            _keep((texts[i], sources[i], seed, most), got)
    return cast(list[Lines], out)


def _read(texts: Sequence[str], sources: Sequence[str], policy: Policy) -> list[Lines]:
    """The units of texts, none kept: the lines of all of them in one call of the core in use,
    then the passages of those with a source."""
    seed, most = policy.seed, policy.boilerplate_tokens
    found = core.lines_of_many(texts, sources, seed, min_tokens=2, max_tokens=most) if texts else []
    return [
        passages_of(text, source, seed, min_tokens=2, max_tokens=most, whole=lines)
        if source
        else lines
        for text, source, lines in zip(texts, sources, found, strict=True)
    ]


# The last UNITS_CACHED texts' units, least recently used first: a batch fills it at once,
# which functools.lru_cache cannot. Each step is one call under the GIL; a race between
# threads costs at most a miss or an entry over the bound, never a wrong value.
_KEPT: OrderedDict[tuple[str, str, int, int], Lines] = OrderedDict()


def _kept(key: tuple[str, str, int, int]) -> Lines | None:
    got = _KEPT.get(key)
    if got is not None:
        with contextlib.suppress(KeyError):
            _KEPT.move_to_end(key)
    return got


def _keep(key: tuple[str, str, int, int], value: Lines) -> None:
    _KEPT[key] = value
    while len(_KEPT) > UNITS_CACHED:
        with contextlib.suppress(KeyError):
            _KEPT.popitem(last=False)


def anchored(
    policy: Policy, prepared: list[Prepared], sampled: Sequence[tuple[int, ...]]
) -> list[Prepared]:
    """A long page's anchors among its buckets (:func:`learn`): registered and
    probed with its bands, so a page registered before its site's template was learned (its
    bands are of story and template) meets a later copy sketched without its own template."""
    return [
        replace(p, buckets=p.buckets + anchor_buckets(policy, fps))
        if fps and p.kind is Kind.LONG
        else p
        for p, fps in zip(prepared, sampled, strict=True)
    ]


async def learn(
    index: Index,
    ns: str,
    policy: Policy,
    articles: list[Article],
    teach: bool = True,
    in_batch: Counter[bytes] | None = None,
) -> Learned:
    """Each multi-line article's lines, and its text without the lines that at least
    ``boilerplate_min_docs`` earlier documents of its source had and that have two to
    ``boilerplate_tokens`` tokens (a template's lines are short; a long paragraph that
    recurs is a story syndicated again, not boilerplate; a one-word line is a text laid
    out a word a line, whose words recur everywhere) (None: nothing to leave
    out, or everything: a page that is all template is judged as it is; or a short text,
    fewer than ``short_tokens`` tokens, whose recurring lines are its facts: ``Pay April
    10`` in a dividend notice). One read of the
    index for the batch, plus the batch's own earlier articles; what is left out is frozen
    into the records that registration writes, so the verdicts never depend on counts read
    later. Third: per article, the fingerprints of the lines it left out (what a pair
    view of an earlier text leaves out too: :func:`_pair_view`). Fourth: per article, its
    anchors (:func:`neardup.sketch.lines.anchors`) among its sentences that no earlier document
    of its source had (a story's, not its template's or a box's: those recur), for a page
    of a named source that teaches."""
    k, none = policy.boilerplate_min_docs, [None] * len(articles)
    nothing: list[frozenset[bytes]] = [frozenset()] * len(articles)
    no_anchors: list[tuple[int, ...]] = [()] * len(articles)
    if not k or not any("\n" in a.text for a in articles):
        return Learned(list(none), list(none), nothing, no_anchors, list(nothing))
    multi = [a for a in articles if "\n" in a.text]
    read = iter(units_many([a.text for a in multi], [a.source_name() for a in multi], policy))
    lines = [next(read) if "\n" in a.text else None for a in articles]
    wanted = list({key for found in lines if found for key in found.keys})
    counts = Counter(dict(zip(wanted, await index.line_counts(ns, wanted), strict=True)))
    without_boilerplate: list[str | None] = []
    left_out: list[frozenset[bytes]] = []
    sampled: list[tuple[int, ...]] = []
    learned: list[frozenset[bytes]] = []
    seen: set[str] = set()
    for a, found in zip(articles, lines, strict=True):
        if found is None:
            without_boilerplate.append(None)
            left_out.append(frozenset())
            sampled.append(())
            learned.append(frozenset())
            continue
        drop = {i for i, key in enumerate(found.keys) if counts[key] >= k}
        drop -= inside(a.text, found, drop)  # what recurs inside a story is part of it
        if a.source_name():  # a site's page: a box's new items, amid its learned ones,
            extra = between(a.text, found, drop)  # unless they are all the page has left
            if extra and _WORD.search(without(a.text, found, drop | extra)):
                drop |= extra
        if drop and not features.has_tokens(a.text, policy.short_tokens):
            drop = set()  # a short text is judged whole: its lines are its facts (a text with
            # nothing to leave out is not counted: a scan of its tokens for nothing)
        if a.source_name() and policy.teaches(a.source_name()):
            new = {i for i, key in enumerate(found.keys) if not counts[key]} - drop
            sampled.append(anchors(a.text, found, new, k=ANCHORS, min_tokens=ANCHOR_TOKENS))
        else:
            sampled.append(())
        if a.text not in seen and teach and policy.teaches(a.source_name()):
            # the batch's earlier articles count too, once per text
            seen.add(a.text)
            # whole lines only: a passage is taught by originals alone (:func:`lines_taught`)
            counts.update(set(found.keys))
            if in_batch is not None:
                in_batch.update(set(found.keys))
        rest = without(a.text, found, drop) if drop else ""
        reduced = bool(drop and _WORD.search(rest))
        without_boilerplate.append(rest if reduced else None)
        fps = frozenset(found.keys[i][8:] for i in drop)
        left_out.append(fps if reduced else frozenset())
        learned.append(fps)
    return Learned(lines, without_boilerplate, left_out, sampled, learned)


def lines_taught(
    policy: Policy,
    articles: list[Article],
    lines: list[Lines | None],
    probes: list[Probe],
    decided: Mapping[int, Verdict | NeardupError],
    copied: Mapping[int, str],
    shared: Mapping[int, frozenset[bytes]],
) -> list[bytes]:
    """The lines of the batch's newly registered articles that teach (each line once per
    article; see :func:`teaches`). Boilerplate is what recurs across different stories of
    a source: a story syndicated again, or its copies, must not teach that its own lines
    are template. A copy that does not teach them all still teaches the lines that are not
    in what it copies (``copied``: that text, normalised): a site's own template, and a box
    of the site's latest headlines, which a site that syndicates much would otherwise never
    learn. An original without a source teaches none of its lines that a candidate it is an
    edited copy of has (``shared``: :func:`resembled`): in a namespace that is one source, a
    story's copy edited past the threshold must not teach that the story is template (three of
    them would make it so), while a template that different stories share is learned from
    them. They are counted in the step that stores the verdicts, so a replayed article was
    counted iff its verdict was stored (:func:`_counted_now`)."""
    out: list[bytes] = []
    for k, (found, probe) in enumerate(zip(lines, probes, strict=True)):
        if (
            found is None
            or not _counted_now(probe)
            or not policy.teaches(articles[k].source_name())
        ):
            continue
        v, source = decided.get(k), articles[k].source_name()
        if k in copied:
            text, theirs = articles[k].text, copied[k]
            out += dict.fromkeys(
                key
                for (a, b), key in zip(found.spans, found.keys, strict=True)
                if _line_form(text[a:b]) not in theirs
            )
        elif teaches(v, source):
            kept = shared.get(k, frozenset())
            out += dict.fromkeys(key for key in found.keys if key not in kept)
    return out


def _line_form(line: str) -> str:
    """A line's normalised form; those of the last 8,192 short lines read are kept: a copy's
    lines are mostly those of the text it copies and of that text's other copies (lines of at
    most :data:`_LINE_FORM_CHARS` characters: a few MB at most)."""
    return _kept_line_form(line) if len(line) <= _LINE_FORM_CHARS else features.normalize(line)


_LINE_FORM_CHARS = 256
_kept_line_form = lru_cache(maxsize=8192)(features.normalize)


async def views(
    index: Index,
    ns: str,
    policy: Policy,
    records: Mapping[int, Record],
    in_batch: Counter[bytes],
) -> dict[int, npt.NDArray[np.uint32]]:
    """For the long records of a named source whose text was kept: the shingles of the text
    less what its source repeats now (its lines and passages counted in at least
    ``boilerplate_min_docs`` documents, as :func:`learn` leaves them out, ``in_batch``
    included), when that leaves something out. One read of the counts for all of them."""
    k = policy.boilerplate_min_docs
    todo = {
        s: rec
        for s, rec in records.items()
        if rec.kind is Kind.LONG and rec.source and "\n" in rec.raw
    }
    if not k or not todo:
        return {}
    read = units_many(
        [rec.raw for rec in todo.values()], [rec.source for rec in todo.values()], policy
    )
    found_in = dict(zip(todo, read, strict=True))
    wanted = list({key for u in found_in.values() for key in u.keys})
    counts = Counter(dict(zip(wanted, await index.line_counts(ns, wanted), strict=True)))
    counts.update(in_batch)
    out = {}
    for s, found in found_in.items():
        raw = todo[s].raw
        drop = {i for i, key in enumerate(found.keys) if counts[key] >= k}
        drop -= inside(raw, found, drop)
        extra = between(raw, found, drop)
        if extra and _WORD.search(without(raw, found, drop | extra)):
            drop |= extra
        rest = without(raw, found, drop) if drop else ""
        if _WORD.search(rest):
            out[s] = whole_shingles(policy, rest)
    return out


__all__ = [
    "COPY_TEACHES_BELOW",
    "Learned",
    "anchored",
    "copied",
    "learn",
    "lines_taught",
    "resembled",
    "teaches",
    "units",
    "units_many",
    "views",
]
