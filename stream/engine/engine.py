"""Atomic register-and-probe -> exact verification -> cluster -> verdict; replay, delete, expire.

No Kafka here: the worker, the HTTP check and ``neardup dedup`` all call :meth:`Engine.process`
with a batch of articles and an :class:`~neardup.stream.index.base.Index`. The sketches and bucket
ids come from :func:`neardup.stream.engine.prepare.prepare`; the engine adds what needs the index
and the clock.

Three paths, chosen by the text:

* **exact**: a 128-bit hash of the normalised text; an earlier article with the same hash makes a
  ``duplicate`` (method ``exact``). Its slot has no cap, so hot buckets never hide a verbatim copy.
* **long** (``>= policy.short_tokens`` tokens): candidates from MinHash bands and SimHash permuted
  tables, verified by exact Jaccard (or containment) of token 3-shingles.
* **short** (comments, titles): candidates from MinHash bands over character n-grams, verified by
  normalised edit similarity.

A candidate that does not verify is dropped: a verdict never rests on a bucket collision alone.

Clusters. An original is its own cluster; a copy joins the cluster of its best earlier match. When
that match's own verdict is not yet stored (another worker is still deciding it), the engine
decides it here from the match's stored record and the articles earlier than it, which is a pure
function of data that no longer changes, so both workers reach the same cluster and a chain
``A <- B <- C`` ends in one cluster however it is spread over workers.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
import orjson

from neardup.sketch import evidence, facts, features, verify
from neardup.sketch.evidence import Span
from neardup.sketch.lines import Lines, anchors, between, inside, lines_of, passages_of, without
from neardup.stream.engine.prepare import (
    Prepared,
    anchor_buckets,
    numbers_and_dates,
    prepare,
    whole_shingles,
)
from neardup.stream.errors import ClusterChainError, ConflictError, DeletedError, NeardupError
from neardup.stream.index.base import Index, Probe, Registration, StoredVerdict, Window
from neardup.stream.index.redis import keys
from neardup.stream.model import Article, Change, Direction, Match, Method, Related, Verdict
from neardup.stream.namespaces import aliases
from neardup.stream.namespaces import policies as namespaces
from neardup.stream.namespaces.policy import ANCHOR_TOKENS, ANCHORS, Policy
from neardup.stream.records import Kind, Record

log = logging.getLogger("neardup.engine")
ALIAS_TTL_S = 5.0  # how long a worker trusts what it read of a namespace's alias
_TARGETS_KEPT = 1024  # namespaces whose alias a worker remembers (oldest read dropped first)
_WORD = re.compile(r"\w")
T = TypeVar("T")


def _remember(kept: dict[str, T], ns: str, value: T) -> None:
    """``kept[ns] = value``, dropping the oldest entry past :data:`_TARGETS_KEPT`: any caller
    may name a namespace (a check), so what is kept per namespace is bounded."""
    kept.pop(ns, None)  # to the end: the order is of when each was last written
    if len(kept) >= _TARGETS_KEPT:
        kept.pop(next(iter(kept)))
    kept[ns] = value


class _Learned(NamedTuple):
    """What :meth:`Engine._boilerplate` found for each article of a batch."""

    lines: list[Lines | None]  # its lines and passages (None: one line, or learning off)
    sketched: list[str | None]  # its text less what its source repeats (None: as sent)
    left_out: list[frozenset[bytes]]  # the fingerprints left out of ``sketched``
    anchors: list[tuple[int, ...]]  # its anchors' fingerprints
    # the fingerprints of everything its source repeats, even when that left nothing (then
    # ``sketched`` is None and ``left_out`` empty): what a pair leaves out (:func:`_judge`)
    learned: list[frozenset[bytes]]


class _AsSent:
    """A text as sent, read once for all its candidates (its shingles, its lines' and
    passages' fingerprints): what :func:`_judge` compares again when its sketch left lines
    out."""

    def __init__(self, policy: Policy, me: Prepared, units: Lines | None = None) -> None:
        self.policy, self.me = policy, me
        self._shingles: npt.NDArray[np.uint32] | None = None
        self._units = units  # what Engine._boilerplate read already, if it did

    @property
    def shingles(self) -> npt.NDArray[np.uint32]:
        if self._shingles is None:
            self._shingles = whole_shingles(self.policy, self.me.article.text)
        return self._shingles

    @property
    def units(self) -> Lines:
        if self._units is None:
            a = self.me.article
            self._units = _units(a.text, a.source_name(), self.policy)
        return self._units


@dataclass(frozen=True, slots=True)
class Candidate:
    """An earlier article that verified: how similar, which one, and which measure decided.
    ``direction``: which text lies inside the other (containment). ``changes``: the facts that
    differ (a short text's, when the policy lets numbers differ; a long text's numbers are
    compared for the best match only, in :meth:`Engine._verdict`, unless ``read``: the text
    was judged less its source's own template, and ``changes`` are read from that)."""

    similarity: float
    seq: int
    method: Method
    direction: Direction | None = None
    changes: tuple[Change, ...] = ()
    read: bool = False


COPY_TEACHES_BELOW = 0.95  # a copy this similar to what it copies is that story again


_CONCURRENT_LOOKUPS = 16  # whole-text lookups in flight at once (see Engine._whole_probes)


def _counted_now(probe: Probe) -> bool:
    """A new article's lines are counted once its batch is decided; so are a replayed one's
    whose verdict was never stored (the attempt that registered it failed before counting)."""
    return probe.status == "new" or (probe.status == "replay" and probe.verdict is None)


def _teaches(v: Verdict | NeardupError | None) -> bool:
    """Whether an article's lines count towards its source's boilerplate: an original's do,
    and a loose copy's (a template shared by two stories can make them look alike: they must
    teach it, or the template is never learned); a copy nearly identical to an earlier text
    does not (a story syndicated many times must not make its own lines template)."""
    if not isinstance(v, Verdict) or v.verdict == "duplicate":
        return False
    return v.verdict == "original" or (v.similarity or 0.0) < COPY_TEACHES_BELOW


def _copied(batch: _Batch, decided: Mapping[int, Verdict | NeardupError]) -> dict[int, str]:
    """Per close copy of the batch that does not teach (:func:`_teaches`) but is not an exact
    duplicate either, the normalised text of the earlier article it copies, when its record
    kept the text (else the copy teaches nothing)."""
    close = {
        k: v.duplicate_of
        for k, v in decided.items()
        if isinstance(v, Verdict) and v.verdict == "near_duplicate" and not _teaches(v)
    }
    if not close:
        return {}
    by_id = {r.doc_id: r for r in batch.records.values() if r.raw}
    return {
        k: features.normalize(by_id[doc].raw)
        for k, doc in close.items()
        if doc is not None and doc in by_id
    }


def _judge(
    policy: Policy,
    me: Prepared | Record,
    other: Record,
    left_out: frozenset[bytes] = frozenset(),
    view: npt.NDArray[np.uint32] | None = None,
    learned: frozenset[bytes] = frozenset(),
    sent: _AsSent | None = None,
) -> tuple[Candidate, bool] | None:
    """An earlier stored article as a match (``True``) or as related (``False``: alike but for
    its facts: a short text, or a brief one of fewer than ``facts_tokens`` shingles whose
    numbers differ), or ``None``; ``seq`` is filled in by the caller.

    Long texts compare what each sketched: its text less the lines its source repeated when it
    was registered. What a source repeats is learned over time, so ``me`` may have left out
    lines (``left_out``) that ``other`` kept, being earlier. Too unlike so, the two compare
    again with those lines left out of both (:func:`_pair_view`), and, if still unlike, whole
    (:func:`_judge_whole`): alike whole they are a copy when their facts agree, else related,
    never silently apart (a template's next release whose lines were learned in between).
    ``view``: ``other``'s text less what its source repeats now (:meth:`Engine._views`): a
    site's first pages were registered before their template was learned and keep it; what
    is left out of ``other`` is what is template in *its* source, never in ``me``'s.
    ``learned``: what ``me``'s source repeats (:func:`_own_template`): what the two share is
    left out only when it is template in ``other``'s source, never in ``me``'s alone.
    ``sent``: ``me`` as sent, read once for all its candidates."""
    # the texts as sent can be compared again: ``me`` left lines out, ``other`` kept its text
    as_sent = me if left_out and other.raw and isinstance(me, Prepared) else None
    if sent is None and isinstance(me, Prepared) and (left_out or learned):
        sent = _AsSent(policy, me)
    if me.kind is not other.kind:
        if as_sent is not None and other.kind is Kind.LONG:
            # long, but short without boilerplate: whole, or less only its source's template
            # that ``other`` does not have (a copier's source taught the story it copies)
            return _judge_as_sent(policy, as_sent, other, learned, view, sent)
        return None
    if me.kind is Kind.SHORT:
        kept = _kept_share(me.text, as_sent.article.text) if as_sent is not None else 1.0
        if as_sent is not None and (
            kept < 1 / 3 or (kept < 1 / 2 and features.has_tokens(other.raw, policy.short_tokens))
        ):
            # a long text that is short without its boilerplate is judged as sent: what its
            # source repeats may be someone else's story, taught as template (a copier that
            # sends a story's lines as documents of its own, then the story), and two texts
            # whose remainders alike are a tag or a filler line are not copies of each other.
            # A remainder of a third of the text or more, against a text short as sent (or of
            # half or more), is what it says (a brief sent again under tag lines its source
            # repeats)
            return _judge_as_sent(policy, as_sent, other, learned, view, sent)
        judged = _judge_short(policy, me.text, other.text)
        if judged is None and as_sent is not None:
            return _judge_whole(policy, as_sent, other)
        return judged
    sim, direction = _similarity(policy, me.shingles, other.shingles)
    if sim < policy.threshold and view is not None:
        sim, direction = max((sim, direction), _similarity(policy, me.shingles, view))
    read = ""  # ``me`` less its own template, when that decided
    if sim < policy.threshold and learned and other.raw and sent is not None:
        own, rest = _own_template(policy, sent, other, learned, view)
        if own[0] >= policy.threshold:
            (sim, direction), read = own, rest
    if (
        sim >= policy.threshold
        and as_sent is not None
        and sent is not None
        and len(me.shingles) * 3 < len(sent.shingles)
        and other.source == as_sent.article.source_name()
    ):
        # the same rule as a short remainder's: a long text that kept less than a third of
        # itself is judged as sent against a text of its own source, whose template is what
        # it left out (a copier taught its source a story's short lines; what it kept, long
        # paragraphs, is also in its own documents that carried them). Against another
        # source's text the remainder is what it says (an excerpt under a large template)
        return _judge_as_sent(policy, as_sent, other, learned, view, sent)
    if sim < policy.threshold:
        if as_sent is None:
            return None
        me = as_sent
        mine = sent.shingles if sent is not None else whole_shingles(policy, me.article.text)
        if _whole_bound(policy, me.shingles, other.shingles, len(mine)) < policy.threshold:
            return None  # too unlike whole however much the lines left out share
        if _similarity(policy, mine, whole_shingles(policy, other.raw))[0] < policy.threshold:
            return None  # unlike whole too (leaving the same lines out of both rarely helps)
        sim, direction = _similarity(policy, me.shingles, _pair_view(policy, other, left_out))
        if sim < policy.threshold:
            return _judge_whole(policy, me, other)
    found = Candidate(sim, 0, policy.measure, direction)
    if policy.facts == "strict" and _another_day(me.dates, other.dates):
        # the same template on another day (a monthly estimate, a weekly price, a daily
        # average): each names a day the other does not. Related, with what changed
        changes = (
            *facts.diff_facts("date", other.dates, me.dates),
            *_number_changes(policy, me, other),
        )
        return Candidate(sim, 0, found.method, direction, changes), False
    a, b = len(me.shingles), len(other.shingles)
    brief = min(a, b) < policy.facts_tokens
    known = max(a, b) < policy.numbers_shingles  # both records keep their numbers
    if brief and known and policy.facts == "strict" and me.numbers != other.numbers:
        # a brief templated item (a rate set, an estimate, a fix) whose figures differ is the
        # next release, not a copy: related, with its changed figures
        changes = tuple(facts.diff_facts("number", other.numbers, me.numbers))
        return Candidate(sim, 0, found.method, direction, changes), False
    if read:  # the numbers the reader sees changed: those of the text as judged
        return replace(found, changes=_text_changes(other.raw, read), read=True), True
    return found, True


def _judge_as_sent(
    policy: Policy,
    me: Prepared,
    other: Record,
    learned: frozenset[bytes],
    view: npt.NDArray[np.uint32] | None,
    sent: _AsSent | None,
) -> tuple[Candidate, bool] | None:
    """A text that left too much of itself out, judged as sent: whole, or less only its
    source's own template that ``other`` does not have (:func:`_own_template`), whichever is
    more alike: a copier's own sign-off line, learned from its earlier copies, is no more
    part of the copy when its source was also taught the story."""
    whole = _judge_whole(policy, me, other, mine_shingles=sent.shingles if sent else None)
    if sent is None or (whole is not None and whole[1] and whole[0].similarity >= 1.0):
        return whole
    own, rest = _own_template(policy, sent, other, learned, view)
    if own[0] >= policy.threshold and (
        whole is None or not whole[1] or own[0] > whole[0].similarity
    ):
        return _judge_whole(policy, me, other, own, rest)
    return whole


def _own_template(
    policy: Policy,
    sent: _AsSent,
    other: Record,
    learned: frozenset[bytes],
    view: npt.NDArray[np.uint32] | None,
) -> tuple[tuple[float, Direction | None], str]:
    """``me`` as sent less what its source repeats (``learned``) *and ``other`` does not
    have*, against ``other``'s view (else its sketch, if long): a copier's source that was
    taught the story it copies (sent as documents of its own, inside its own template) left
    the story out of the copy's sketch with its template; for this pair the story stays, and
    only the copier's own template goes. Second: ``me``'s text so."""
    theirs = view if view is not None else other.shingles if other.kind is Kind.LONG else None
    if not learned or not other.raw or theirs is None:
        return (0.0, None), ""
    # what is left of ``me`` shares at most what all of it shares, and keeps half of it
    shared = verify.intersection_size(sent.shingles, theirs)
    if shared < policy.threshold * min(len(theirs), len(sent.shingles) / 3):
        return (0.0, None), ""
    text = sent.me.article.text
    found = sent.units
    norm, whole = features.normalize(other.raw), whole_shingles(policy, other.raw)
    drop = set()
    for i, key in enumerate(found.keys):
        if key[8:] in learned:
            # whether ``other`` has it, whatever the two layouts (a sentence of one is a line
            # of the other, or runs over two): its text, or most of its shingles
            a, b = found.spans[i]
            if features.normalize(text[a:b]) in norm:
                continue
            unit = whole_shingles(policy, text[a:b])
            if not len(unit) or verify.intersection_size(unit, whole) * 2 < len(unit):
                drop.add(i)
    rest = without(text, found, drop) if drop else text
    if _kept_share(features.normalize(rest), text) < 1 / 2:
        # what ``me`` shares with ``other`` is a small part of it: whatever its source was
        # taught, ``me`` is not ``other``'s copy (a copier's own document that carries some
        # lines of a story is not what the story's copy copies)
        return (0.0, None), ""
    return _similarity(policy, whole_shingles(policy, rest), theirs), rest


def _kept_share(rest: str, whole: str) -> float:
    """The share of a text's tokens that it kept (``rest``: what it kept, normalised)."""
    n = len(features.tokenize(features.normalize(whole)))
    return len(features.tokenize(rest)) / n if n else 1.0


def _judge_whole(
    policy: Policy,
    me: Prepared,
    other: Record,
    judged: tuple[float, Direction | None] | None = None,
    mine: str = "",
    mine_shingles: npt.NDArray[np.uint32] | None = None,
) -> tuple[Candidate, bool] | None:
    """A text that left so much out as boilerplate that the rest is short, against an earlier
    long text (registered before those lines were learned), or two texts unlike once the
    same lines are left out of both: the two whole texts as sent (or as ``judged``: the
    similarity of ``me`` less its own template, ``mine``), a copy when their bodies'
    numbers and days agree, else related with what changed."""
    if judged is None:
        shingles = (
            whole_shingles(policy, me.article.text) if mine_shingles is None else mine_shingles
        )
        judged = _similarity(policy, shingles, whole_shingles(policy, other.raw))
    sim, direction = judged
    if sim < policy.threshold:
        return None
    changes = _text_changes(other.raw, mine or me.article.text)
    return Candidate(sim, 0, policy.measure, direction, changes, bool(mine)), not changes


def _text_changes(earlier: str, now: str) -> tuple[Change, ...]:
    """The days and numbers two texts as given differ in."""
    (a, days_a), (b, days_b) = (
        numbers_and_dates(t, features.normalize(t), True) for t in (earlier, now)
    )
    return (
        *(facts.diff_facts("date", days_a, days_b) if _another_day(days_b, days_a) else ()),
        *(facts.diff_facts("number", a, b) if a != b else ()),
    )


def _whole_bound(
    policy: Policy, mine: npt.NDArray[np.uint32], theirs: npt.NDArray[np.uint32], whole: int
) -> float:
    """An upper bound of the whole texts' similarity, from what was compared (``mine``, the
    sketched shingles of a text of ``whole`` shingles, and ``theirs``, the record's): the
    whole texts share at most what these share plus every shingle ``mine`` left out. Cheap:
    most candidates of a site's pages stop here."""
    shared = verify.intersection_size(mine, theirs) + max(0, whole - len(mine))
    bound = shared / whole if whole else 0.0
    if policy.measure == "containment" and len(theirs):
        bound = max(bound, shared / len(theirs))  # theirs as sent has at least these shingles
    return min(1.0, bound)


def _similarity(
    policy: Policy, a: npt.NDArray[np.uint32], b: npt.NDArray[np.uint32]
) -> tuple[float, Direction | None]:
    """The namespace's measure of two shingle sets, and under containment which way."""
    if policy.measure == "jaccard":
        return verify.jaccard(a, b), None
    inter = verify.intersection_size(a, b)
    part = inter / len(a) if len(a) else 0.0  # the new text inside the earlier one
    whole = inter / len(b) if len(b) else 0.0  # the earlier text inside the new one
    return (part, "excerpt") if part >= whole else (whole, "embeds")


def _units(text: str, source: str, policy: Policy) -> Lines:
    """What a text's boilerplate is learned and left out by: its lines, and for a named source
    (a site, a feed) the passages inside them too (sentences, a box's items: a footer or a box
    that text extraction delivers on one line). Without a source, the namespace is one source
    whose documents are every story and their copies: passages counted across it would make a
    story's own sentences template once its copies are in."""
    if not source:
        return lines_of(
            text, source, policy.seed, min_tokens=2, max_tokens=policy.boilerplate_tokens
        )
    return passages_of(
        text, source, policy.seed, min_tokens=2, max_tokens=policy.boilerplate_tokens
    )


def _anchored(
    policy: Policy, prepared: list[Prepared], sampled: Sequence[tuple[int, ...]]
) -> list[Prepared]:
    """A long page's anchors among its buckets (:meth:`Engine._boilerplate`): registered and
    probed with its bands, so a page registered before its site's template was learned (its
    bands are of story and template) meets a later copy sketched without its own template."""
    return [
        replace(p, buckets=p.buckets + anchor_buckets(policy, fps))
        if fps and p.kind is Kind.LONG
        else p
        for p, fps in zip(prepared, sampled, strict=True)
    ]


def _pair_view(policy: Policy, other: Record, left_out: frozenset[bytes]) -> npt.NDArray[np.uint32]:
    """The shingles of ``other``'s text as sent less its lines whose fingerprints are in
    ``left_out`` (the lines the text it is compared with left out)."""
    found = _units(other.raw, other.source, policy)
    drop = {i for i, key in enumerate(found.keys) if key[8:] in left_out}
    return whole_shingles(policy, without(other.raw, found, drop) if drop else other.raw)


def _another_day(mine: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
    """Whether two texts name other days: each names one the other does not. A copy that
    drops a paragraph with its date, or an update that adds one, still names the same days."""
    a, b = set(mine), set(theirs)
    return bool(a - b) and bool(b - a)


def _number_changes(policy: Policy, me: Prepared | Record, earlier: Record) -> tuple[Change, ...]:
    """The numbers a long copy changed, from both records: values with number words when
    both are brief enough to keep them so, else the numerals as written, read as values."""
    a, b = earlier.numbers, me.numbers
    bound = policy.numbers_shingles
    if not (len(me.shingles) < bound and len(earlier.shingles) < bound):
        a, b = tuple(map(facts.value_of, a)), tuple(map(facts.value_of, b))
    return tuple(facts.diff_facts("number", a, b)) if a != b else ()


def _judge_short(policy: Policy, mine: str, theirs: str) -> tuple[Candidate, bool] | None:
    """Edit similarity of the cores; then the facts decide (see :mod:`neardup.sketch.facts`). Texts
    with no core (only links or symbols) compare as written and have no facts."""
    me, other = facts.facts_of(mine), facts.facts_of(theirs)
    if not (me.core and other.core):
        sim = verify.edit_similarity(mine, theirs)
        return (Candidate(sim, 0, "edit"), True) if sim >= policy.short_threshold else None
    sim = verify.edit_similarity(me.core, other.core)
    unlike = sim < policy.short_threshold
    if unlike and not facts.framed(other, me, policy.short_threshold):
        return None
    # the cores less words added at an edge (a tag); when unlike as they are, only that helps
    compared = facts.compare(other, me, trimmed_only=unlike)
    if compared is None:
        return None
    if (compared.earlier, compared.now) != (other.core, me.core):
        sim = verify.edit_similarity(compared.now, compared.earlier)
    if sim < policy.short_threshold:
        return None
    changes = compared.changes
    strict = policy.facts == "strict"
    copy = not any(strict or c.kind != "number" for c in changes)
    return Candidate(sim, 0, "edit", None, changes), copy


@dataclass(frozen=True, slots=True)
class Found:
    """What an article's candidates verified as: matches (copies) and related texts."""

    matches: list[Candidate]
    related: list[Candidate]


@dataclass
class _Batch:
    """Per-namespace state while one batch is decided: records and verdicts seen so far."""

    ns: str  # where its articles are indexed (the namespace, or what it is an alias of)
    policy: Policy
    name: str = ""  # the namespace the verdicts name (the articles' own); "" is ``ns``
    records: dict[int, Record] = field(default_factory=dict)
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    raw_verdicts: dict[int, bytes] = field(default_factory=dict)  # read already, not yet decoded
    # records' texts less what their sources repeat now (Engine._views), by seq
    views: dict[int, npt.NDArray[np.uint32]] = field(default_factory=dict)
    # the lines and passages the batch's own articles counted (Engine._boilerplate): not in
    # the index until the batch's verdicts are stored, but learned all the same
    in_batch: Counter[bytes] = field(default_factory=Counter)

    def live(self, seq: int, at: float) -> bool:
        rec = self.records.get(seq)
        if rec is None:
            return False
        r = self.policy.retention_s
        return r is None or rec.registered_at >= at - r


class Engine:
    """Decides verdicts for batches of articles against an index (memory or Redis).

    ``overlap_chunk``: with a remote index, a batch larger than this is sketched and registered
    in chunks of this many articles, the server registering one while the engine sketches the
    next (64: small enough to overlap well, large enough that numpy's per-call cost stays low).

    ``clock``: for tests only. By default time is the index's (:meth:`Index.now`, Redis's
    ``TIME``), so registration times, retention and liveness agree across workers whatever
    their own clocks say.
    """

    def __init__(
        self,
        index: Index,
        policy: Policy | None = None,
        *,
        policies: Mapping[str, Policy] | None = None,
        clock: Callable[[], float] | None = None,
        overlap_chunk: int = 64,
        aliases: Mapping[str, str] | None = None,
        alias_ttl_s: float = ALIAS_TTL_S,
    ) -> None:
        if overlap_chunk < 1:
            raise ValueError("overlap_chunk must be >= 1")
        self.index = index
        self._overlap_chunk = overlap_chunk
        self.default_policy = policy or Policy()
        self._policies = dict(policies or {})
        self._clock = clock  # None: the index's clock (Redis's TIME), one for every worker
        self._checked: dict[str, Policy] = {}  # namespace -> the policy its scheme passed
        # the same for read-only checks, and when read (bounded; read again after the TTL)
        self._read_checked: dict[str, tuple[Policy, float]] = {}
        # namespace -> (indexed in, its rebuilt policy or None, read at): the index's aliases,
        # read again after alias_ttl_s; ``aliases`` fixes some for good (a rebuild in progress)
        self._fixed = dict(aliases or {})
        self._alias_ttl_s = alias_ttl_s
        self._targets: dict[str, tuple[str, Policy | None, float]] = {}

    async def _target(self, ns: str) -> tuple[str, Policy]:
        """Where a namespace's articles are indexed and the policy they are decided under:
        the namespace itself with its configured policy, or, once ``neardup reindex`` rebuilt
        it, the namespace it was rebuilt into with the policy it was rebuilt with (every worker
        follows the switch within ``alias_ttl_s``, whatever its own configuration says)."""
        if ns in self._fixed:
            return self._fixed[ns], self.policy_for(ns)
        at = time.monotonic()
        known = self._targets.get(ns)
        if known is None or at - known[2] >= self._alias_ttl_s:
            raw = await self.index.alias(ns)
            target, policy = aliases.read(ns, raw, self.default_policy)
            if known is not None and known[0] != target:
                log.warning("namespace %r is now indexed in %r (rebuilt)", ns, target)
            known = (target, policy, at)
            _remember(self._targets, ns, known)
        target, policy, _ = known
        return target, policy or self.policy_for(ns)

    async def _now(self, ns: str) -> float:
        return self._clock() if self._clock is not None else await self.index.now(ns)

    def policy_for(self, ns: str) -> Policy:
        """The policy configured for ``ns``, as its check against the index left it (a raised
        threshold keeps the stored banding)."""
        return self._checked.get(ns) or self._policies.get(ns, self.default_policy)

    async def _ensure(self, ns: str, policy: Policy) -> Policy:
        """The policy the namespace runs under, once its scheme is checked against the index.
        A namespace keeps the scheme it was built with: a policy that differs only in banding,
        where the stored banding still has the policy's recall at its threshold, keeps the
        stored banding (:func:`neardup.stream.namespaces.policies.pinned`); any other difference is
        refused. Changed decision settings are recorded in the index and logged once."""
        if ns in self._checked:
            return self._checked[ns]
        keys.check_namespace(ns)
        stored = await self.index.stored_scheme(ns)
        have = namespaces.scheme_of(stored) if stored is not None else None
        if have is not None and have != policy.scheme():
            kept = namespaces.pinned(policy, have)
            if kept is not None:
                log.warning(
                    "namespace %r keeps its banding %s: threshold %s applies with it",
                    ns,
                    kept.bands_rows,
                    policy.threshold,
                )
                policy = kept
        await self.index.ensure_scheme(ns, policy.scheme_bytes())
        await self._record_decisions(ns, policy)
        # bounded: a producer may name any namespace; one forgotten is checked again (the
        # index keeps more of its own checks, SCHEMES_KEPT, so what is here is there too)
        _remember(self._checked, ns, policy)
        return policy

    async def _ensure_read(self, ns: str, policy: Policy) -> Policy:
        """:meth:`_ensure` for a read-only check: the same policy and the same refusal of
        another scheme, and nothing written (an unknown namespace stays unknown)."""
        if ns in self._checked:
            return self._checked[ns]
        known = self._read_checked.get(ns)
        if known is not None and time.monotonic() - known[1] < self._alias_ttl_s:
            return known[0]
        keys.check_namespace(ns)
        stored = await self.index.stored_scheme(ns)
        if stored is None:
            return policy  # nothing indexed: nothing to refuse, nothing to remember
        have = namespaces.scheme_of(stored)
        if have is not None and have != policy.scheme():
            policy = namespaces.pinned(policy, have) or policy
        await self.index.check_scheme(ns, policy.scheme_bytes())
        _remember(self._read_checked, ns, (policy, time.monotonic()))  # read again after the TTL
        return policy

    async def namespace_known(self, ns: str) -> bool:
        """Whether anything was ever indexed in ``ns`` (or what it is an alias of): a check
        against an unknown namespace has nothing to compare with, and says so."""
        keys.check_namespace(ns)
        where, _ = await self._target(ns)
        if where in self._checked or where in self._read_checked:
            return True  # its scheme was read (or written) already: a scheme stays
        return await self.index.stored_scheme(where) is not None

    async def _record_decisions(self, ns: str, policy: Policy) -> None:
        mine = namespaces.decision_settings(policy)
        blob = orjson.dumps(mine, option=orjson.OPT_SORT_KEYS)
        before = await self.index.policy_record(ns)
        if before == blob:
            return
        if before is not None:
            old = orjson.loads(before)
            changed = {k: (old.get(k), v) for k, v in mine.items() if old.get(k) != v}
            said = ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in sorted(changed.items()))
            log.warning("namespace %r: %s, from now on", ns, said)
        await self.index.record_policy(ns, blob)

    async def process(
        self,
        articles: Sequence[Article],
        *,
        register: bool = True,
        explain: bool | None = None,
        teach: bool = True,
    ) -> list[Verdict | NeardupError]:
        """Verdicts in input order; a per-article error is returned in its place, not raised.
        ``explain``: give each copy's evidence (the passages it shares with ``duplicate_of``);
        by default the namespace policy's ``explain``. ``teach``: whether the registered
        articles' lines count towards their sources' boilerplate (``/check`` never teaches: a
        request could teach another site's text as template); a check that registers nothing
        never teaches."""
        if any(a.format == "page" for a in articles):
            # a page's main content takes trafilatura milliseconds to seconds (a page of 500 KB
            # of paragraphs, about 3 s): read off the event loop, which keeps serving /health,
            # /check and the broker's heartbeats meanwhile
            articles = await asyncio.to_thread(lambda: [a.as_read() for a in articles])
        else:
            articles = [a.as_read() for a in articles]
        results: list[Verdict | NeardupError | None] = [None] * len(articles)
        by_ns: dict[str, list[int]] = {}
        for i, a in enumerate(articles):
            by_ns.setdefault(a.namespace, []).append(i)
        for ns, idx in by_ns.items():
            decided: list[Verdict | NeardupError]
            try:
                keys.check_namespace(ns)
                where, policy = await self._target(ns)
                if register:
                    policy = await self._ensure(where, policy)
                else:  # a read-only check writes nothing, not even the namespace's scheme
                    policy = await self._ensure_read(where, policy)
                wanted = policy.explain if explain is None else explain
                decided = await self._process_ns(
                    where, policy, [articles[i] for i in idx], register, wanted, ns, teach
                )
            except NeardupError as exc:
                # One namespace's lasting fault (another scheme, ...) is its articles' error,
                # not the batch's: the other namespaces still get their verdicts. A retriable
                # error is the whole batch's, retried by the caller.
                if exc.retriable:
                    raise
                decided = [exc] * len(idx)
            for i, res in zip(idx, decided, strict=True):
                results[i] = res
        return [r for r in results if r is not None]

    async def _process_ns(
        self,
        ns: str,
        policy: Policy,
        articles: list[Article],
        register: bool,
        explain: bool,
        name: str = "",
        teach: bool = True,
    ) -> list[Verdict | NeardupError]:
        # a check without retention reads no clock: nothing it decides depends on the time
        timed = register or policy.retention_s is not None
        now = await self._now(ns) if timed else 0.0
        live_after = None if policy.retention_s is None else now - policy.retention_s
        if policy.retention_s is not None and register:
            await self.index.expire(ns, now - policy.retention_s, limit=2 * len(articles) + 10)
        in_batch: Counter[bytes] = Counter()
        lines, sketched, left_out, sampled, learned = await self._boilerplate(
            ns, policy, articles, teach, in_batch
        )
        records: dict[int, bytes] = {}  # read with a check's probe: not read again
        verdicts: dict[int, bytes] = {}
        if register:
            prepared, probes = await self._prepare_and_register(
                ns, policy, articles, sketched, sampled, now
            )
        else:
            prepared = _anchored(policy, prepare(policy, articles, sketched), sampled)
            probes = []
            for p in prepared:  # one read each: id, buckets, and the records and verdicts found
                read = await self.index.check(
                    ns, p.article.id, p.content, p.buckets, live_after=live_after
                )
                if read.own is not None:
                    rec, ver = read.records.get(read.own), read.verdicts.get(read.own)
                    probes.append(Probe(read.own, "replay", None, (), record=rec, verdict=ver))
                    continue
                probes.append(Probe(0, "new", read.exact_seq, read.candidates))
                records.update(read.records)
                verdicts.update(read.verdicts)
        # each text as sent, read once for all its candidates when its sketch left lines out
        sents = [
            _AsSent(policy, p, lines[k]) if left_out[k] or learned[k] else None
            for k, p in enumerate(prepared)
        ]
        batch = _Batch(
            ns, policy, "" if name == ns else name, raw_verdicts=verdicts, in_batch=in_batch
        )
        batch.records.update({s: Record.decode(b) for s, b in records.items()})
        wanted = {s for pr in probes for s in (*pr.candidates, pr.exact_seq) if s is not None}
        await self._load_records(batch, wanted)
        await self._views(
            batch, {s for k, pr in enumerate(probes) if learned[k] for s in pr.candidates}
        )
        # Verify every new article first (pure), then read the stored verdicts of all best
        # matches decided before this batch in one call: their clusters are what copies join.
        found = {
            k: self._matches(batch, p, probe, register, now, left_out[k], learned[k], sents[k])
            for k, (p, probe) in enumerate(zip(prepared, probes, strict=True))
            if probe.status == "new"
        }
        await self._whole_probes(
            batch, prepared, probes, found, left_out, learned, sents, register, now
        )
        ours = {pr.seq for pr in probes}
        bests = {f.matches[0].seq for f in found.values() if f.matches}
        await self._load_verdicts(batch, bests - ours)
        stored: dict[int, StoredVerdict] = {}
        decided: dict[int, Verdict | NeardupError] = {}
        for k in sorted(range(len(prepared)), key=lambda k: probes[k].seq):
            p, probe = prepared[k], probes[k]
            if probe.status == "deleted":  # taken down and remembered: never registered again
                decided[k] = DeletedError(f"article id {p.article.id!r} was deleted")
                continue
            if probe.status == "replay":
                v_or_err = await self._replay(batch, p, probe)
                decided[k] = v_or_err
                if register and probe.verdict is None and isinstance(v_or_err, Verdict):
                    # registered by an attempt that never stored its verdict (timed out, or
                    # killed in between): store it now, so later copies take their cluster from
                    # what was published instead of re-deriving it from data that may expire
                    batch.verdicts[probe.seq] = v_or_err
                    stored[probe.seq] = StoredVerdict(p.article.id, v_or_err.to_json())
                continue
            got, doc_id = found[k], p.article.id
            best = got.matches[0].seq if got.matches else None
            cluster = (await self._resolve(batch, best)).cluster if best is not None else doc_id
            v = self._verdict(batch, p, doc_id, probe, got, register, cluster, explain)
            decided[k] = v
            if register:
                batch.verdicts[probe.seq] = v
                stored[probe.seq] = StoredVerdict(doc_id, v.to_json())
        # The verdicts and the lines they teach are stored in one step, last: an attempt cut
        # off before it is replayed and counts its lines then, one that got through is replayed
        # (if at all) with its verdicts stored and counts nothing, so a line is counted once
        # per article whatever fails when. On a replicated store the step waits for the
        # replicas, which covers the cluster members written before it.
        taught = (
            self._lines_taught(policy, articles, lines, probes, decided, _copied(batch, decided))
            if register and teach
            else []
        )
        if stored:
            copies = [
                (v.cluster, seq, now)
                for seq, v in batch.verdicts.items()
                if seq in stored and v.verdict != "original"
            ]
            await self.index.add_members(ns, copies)
            await self.index.put_verdicts(ns, stored, taught, policy.boilerplate_lines)
        elif taught:
            await self.index.add_lines(ns, taught, policy.boilerplate_lines)
        return [decided[k] for k in range(len(prepared))]

    async def _boilerplate(
        self,
        ns: str,
        policy: Policy,
        articles: list[Article],
        teach: bool = True,
        in_batch: Counter[bytes] | None = None,
    ) -> _Learned:
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
            return _Learned(list(none), list(none), nothing, no_anchors, list(nothing))
        lines = [
            _units(a.text, a.source_name(), policy) if "\n" in a.text else None for a in articles
        ]
        wanted = list({key for found in lines if found for key in found.keys})
        counts = Counter(dict(zip(wanted, await self.index.line_counts(ns, wanted), strict=True)))
        sketched: list[str | None] = []
        left_out: list[frozenset[bytes]] = []
        sampled: list[tuple[int, ...]] = []
        learned: list[frozenset[bytes]] = []
        seen: set[str] = set()
        for a, found in zip(articles, lines, strict=True):
            if found is None:
                sketched.append(None)
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
            if not features.has_tokens(a.text, policy.short_tokens):
                drop = set()  # a short text is judged whole: its lines are its facts
            if a.source_name() and policy.teaches(a.source_name()):
                new = {i for i, key in enumerate(found.keys) if not counts[key]} - drop
                sampled.append(anchors(a.text, found, new, k=ANCHORS, min_tokens=ANCHOR_TOKENS))
            else:
                sampled.append(())
            if a.text not in seen and teach and policy.teaches(a.source_name()):
                # the batch's earlier articles count too, once per text
                seen.add(a.text)
                # whole lines only: a passage is taught by originals alone (_lines_taught)
                counts.update(set(found.keys))
                if in_batch is not None:
                    in_batch.update(set(found.keys))
            rest = without(a.text, found, drop) if drop else ""
            reduced = bool(drop and _WORD.search(rest))
            sketched.append(rest if reduced else None)
            fps = frozenset(found.keys[i][8:] for i in drop)
            left_out.append(fps if reduced else frozenset())
            learned.append(fps)
        return _Learned(lines, sketched, left_out, sampled, learned)

    @staticmethod
    def _lines_taught(
        policy: Policy,
        articles: list[Article],
        lines: list[Lines | None],
        probes: list[Probe],
        decided: Mapping[int, Verdict | NeardupError],
        copied: Mapping[int, str],
    ) -> list[bytes]:
        """The lines of the batch's newly registered articles that teach (each line once per
        article; see :func:`_teaches`). Boilerplate is what recurs across different stories of
        a source: a story syndicated again, or its copies, must not teach that its own lines
        are template. A close copy still teaches the lines that are not in what it copies
        (``copied``: that text, normalised): its own site's template, and a box of the
        site's latest headlines, which a site that syndicates much would otherwise never
        learn. They are counted in the step that stores the verdicts, so a replayed
        article was counted iff its verdict was stored (:func:`_counted_now`)."""
        out: list[bytes] = []
        for k, (found, probe) in enumerate(zip(lines, probes, strict=True)):
            if (
                found is None
                or not _counted_now(probe)
                or not policy.teaches(articles[k].source_name())
            ):
                continue
            if _teaches(decided.get(k)):
                out += dict.fromkeys(found.keys)
            elif k in copied:
                text, theirs = articles[k].text, copied[k]
                out += dict.fromkeys(
                    key
                    for (a, b), key in zip(found.spans, found.keys, strict=True)
                    if features.normalize(text[a:b]) not in theirs
                )
        return out

    async def _prepare_and_register(
        self,
        ns: str,
        policy: Policy,
        articles: list[Article],
        sketched: list[str | None],
        sampled: list[tuple[int, ...]],
        now: float,
    ) -> tuple[list[Prepared], list[Probe]]:
        """Sketch and register the articles. With a remote index, in chunks: while the server
        registers one chunk, this process sketches the next, so the two CPUs work at the same
        time instead of taking turns. Chunks are registered in the order sent, so sequence
        numbers follow the articles' order, as without chunks."""

        def registrations(part: list[Prepared]) -> list[Registration]:
            return [
                Registration(
                    p.article.id,
                    p.content,
                    p.buckets,
                    p.record(now, keep_text=policy.keep_text).encode(),
                    now,
                )
                for p in part
            ]

        size = self._overlap_chunk if self.index.remote else len(articles)
        prepared = []
        live_after = None if policy.retention_s is None else now - policy.retention_s
        forget_before = now - policy.remember_deleted_s
        window = Window(live_after, forget_before)
        async with self.index.registration(ns, policy.bucket_cap) as stream:
            for lo in range(0, len(articles), size):
                # sketched while the server registers the chunk before
                part = _anchored(
                    policy,
                    prepare(policy, articles[lo : lo + size], sketched[lo : lo + size]),
                    sampled[lo : lo + size],
                )
                prepared += part
                await stream.send(registrations(part), window)
            return prepared, await stream.probes()

    async def _load_verdicts(self, batch: _Batch, seqs: set[int]) -> None:
        missing = [s for s in seqs if s not in batch.verdicts]
        for s in [s for s in missing if s in batch.raw_verdicts]:
            batch.verdicts[s] = Verdict.from_json(batch.raw_verdicts[s])
        missing = [s for s in missing if s not in batch.verdicts]
        if missing:
            raw = await self.index.verdicts(batch.ns, sorted(missing))
            batch.verdicts.update({s: Verdict.from_json(b) for s, b in raw.items()})

    async def _load_records(self, batch: _Batch, seqs: set[int]) -> None:
        missing = [s for s in seqs if s not in batch.records]
        if missing:
            raw = await self.index.records(batch.ns, sorted(missing))
            batch.records.update({s: Record.decode(b) for s, b in raw.items()})

    async def _replay(self, batch: _Batch, p: Prepared, probe: Probe) -> Verdict | NeardupError:
        if probe.record is not None and Record.decode(probe.record).content != p.content:
            return ConflictError(
                f"article id {p.article.id!r} was indexed before (seq {probe.seq}) with a "
                "different text; use a new id for a new text"
            )
        if probe.verdict is not None:
            return Verdict.from_json(probe.verdict)
        await self._load_records(batch, {probe.seq})
        if probe.seq not in batch.records:  # deleted or expired since registered: stays down
            return DeletedError(f"article id {p.article.id!r} was removed while decided")
        return await self._resolve(batch, probe.seq)

    async def _whole_probes(
        self,
        batch: _Batch,
        prepared: list[Prepared],
        probes: list[Probe],
        found: dict[int, Found],
        left_out: list[frozenset[bytes]],
        learned: list[frozenset[bytes]],
        sents: list[_AsSent | None],
        register: bool,
        at: float,
    ) -> None:
        """What a source repeats is learned over time: an article sketched without lines it
        repeats may copy an earlier one registered whole, before they were learned, whose
        buckets it does not share. Each such article that matched nothing also looks up (reads
        only: registering those buckets would make every page of a site a candidate of every
        other) the MinHash bands of its whole text; the earlier articles found are judged with
        the rest (:func:`_judge`: the same lines left out of both, or the whole texts)."""
        todo = [k for k in found if left_out[k]]
        if not todo:
            return
        policy, bands = batch.policy, batch.policy.bands_rows[0]
        live_after = None if policy.retention_s is None else at - policy.retention_s
        wholes = zip(todo, prepare(policy, [prepared[k].article for k in todo]), strict=True)
        longs = [(k, w) for k, w in wholes if w.kind is Kind.LONG]
        # concurrent reads, a bounded number at a time: one wait per group, not per article,
        # and never more connections than a client's pool holds (redis-py's asyncio pool
        # raises past its max_connections, 100 by default, rather than waiting)
        looked: list[tuple[int | None, tuple[int, ...]]] = []
        for lo in range(0, len(longs), _CONCURRENT_LOOKUPS):
            looked += await asyncio.gather(
                *(
                    self.index.lookup(batch.ns, w.content, w.buckets[:bands], live_after=live_after)
                    for _, w in longs[lo : lo + _CONCURRENT_LOOKUPS]
                )
            )
        more: dict[int, Probe] = {}
        for (k, _), (_, seqs) in zip(longs, looked, strict=True):
            probe = probes[k]
            new = set(seqs) - set(probe.candidates)
            if register:
                new = {s for s in new if s < probe.seq}
            if new:
                more[k] = replace(probe, candidates=tuple(sorted(new | set(probe.candidates))))
        await self._load_records(batch, {s for p in more.values() for s in p.candidates})
        await self._views(batch, {s for p in more.values() for s in p.candidates})
        for k, probe in more.items():
            found[k] = self._matches(
                batch, prepared[k], probe, register, at, left_out[k], learned[k], sents[k]
            )

    async def _views(self, batch: _Batch, seqs: set[int]) -> None:
        """For the long records among ``seqs`` of a named source whose text was kept: the
        text less what its source repeats now (its lines and passages counted in at least
        ``boilerplate_min_docs`` documents, as :meth:`_boilerplate` leaves them out, the
        batch's own documents included), when that leaves something out. One read of the
        counts for all of them."""
        policy = batch.policy
        k = policy.boilerplate_min_docs
        if not k:
            return
        todo = {
            s: rec
            for s in seqs
            if s not in batch.views
            and (rec := batch.records.get(s)) is not None
            and rec.kind is Kind.LONG
            and rec.source
            and "\n" in rec.raw
        }
        if not todo:
            return
        units = {s: _units(rec.raw, rec.source, policy) for s, rec in todo.items()}
        wanted = list({key for u in units.values() for key in u.keys})
        counts = Counter(
            dict(zip(wanted, await self.index.line_counts(batch.ns, wanted), strict=True))
        )
        counts.update(batch.in_batch)
        for s, found in units.items():
            raw = todo[s].raw
            drop = {i for i, key in enumerate(found.keys) if counts[key] >= k}
            drop -= inside(raw, found, drop)
            extra = between(raw, found, drop)
            if extra and _WORD.search(without(raw, found, drop | extra)):
                drop |= extra
            rest = without(raw, found, drop) if drop else ""
            if _WORD.search(rest):
                batch.views[s] = whole_shingles(policy, rest)

    def _matches(
        self,
        batch: _Batch,
        me: Prepared | Record,
        probe: Probe,
        register: bool,
        at: float,
        left_out: frozenset[bytes] = frozenset(),
        learned: frozenset[bytes] = frozenset(),
        sent: _AsSent | None = None,
    ) -> Found:
        """Every earlier, live candidate that verifies, best first (exact copies win ties), and
        the related ones (short texts alike but for their facts), best first. ``left_out``:
        the fingerprints of the lines ``me`` left out as boilerplate."""
        policy = batch.policy
        seq = probe.seq if register else None
        matches: list[Candidate] = []
        related: list[Candidate] = []
        exact = probe.exact_seq
        if exact is not None and batch.live(exact, at):
            matches.append(Candidate(1.0, exact, "exact"))
        for s in probe.candidates:
            if s == exact or not batch.live(s, at) or (seq is not None and s >= seq):
                continue
            judged = _judge(
                policy, me, batch.records[s], left_out, batch.views.get(s), learned, sent
            )
            if judged is not None:
                c, copy = judged
                (matches if copy else related).append(
                    Candidate(c.similarity, s, c.method, c.direction, c.changes, c.read)
                )
        matches.sort(key=lambda m: (-m.similarity, m.method != "exact", m.seq))
        related.sort(key=lambda m: (-m.similarity, m.seq))
        return Found(matches, related)

    def _verdict(
        self,
        batch: _Batch,
        me: Prepared | Record,
        doc_id: str,
        probe: Probe,
        found: Found,
        register: bool,
        cluster: str,
        explain: bool = False,
    ) -> Verdict:
        """The verdict, given the cluster: the best match's, or ``doc_id`` for an original.
        ``explain``: with the passages shared with the best match (:mod:`neardup.sketch.evidence`),
        when both texts are at hand (the earlier record kept its text)."""
        seq = probe.seq if register else None
        cap = batch.policy.max_matches
        related = tuple(
            Related(batch.records[r.seq].doc_id, round(r.similarity, 4), r.changes)
            for r in found.related[:cap]
        )
        if not found.matches:
            return Verdict(
                doc_id, batch.name or batch.ns, "original", None, doc_id, None, (), "new", seq,
                len(probe.candidates), related=related,
            )  # fmt: skip
        best = found.matches[0]
        earlier = batch.records[best.seq]
        changes = best.changes
        if me.kind is Kind.LONG and best.method != "exact" and not best.read:
            changes = _number_changes(batch.policy, me, earlier)
        shown = tuple(
            Match(batch.records[m.seq].doc_id, round(m.similarity, 4)) for m in found.matches[:cap]
        )
        return Verdict(
            doc_id,
            batch.name or batch.ns,
            "duplicate" if best.method == "exact" else "near_duplicate",
            earlier.doc_id,
            cluster,
            round(best.similarity, 4),
            shown,
            best.method,
            seq,
            len(probe.candidates),
            changes=changes,
            related=related,
            direction=best.direction,
            evidence=self._evidence(batch.policy, me, earlier) if explain else None,
        )

    @staticmethod
    def _evidence(policy: Policy, me: Prepared | Record, earlier: Record) -> tuple[Span, ...]:
        mine = me.article.text if isinstance(me, Prepared) else me.raw
        if not (mine and earlier.raw):
            return ()
        return tuple(
            evidence.shared_spans(mine, earlier.raw, w=policy.shingle_size, seed=policy.seed)
        )

    async def _resolve(self, batch: _Batch, seq: int) -> Verdict:
        """The verdict of stored article ``seq``: stored, or decided from its record and the
        articles before it, as its own batch decided it.

        Iterative, so any chain of undecided copies resolves: a stack of seqs where each pushed
        seq is the best match of the one below it, hence strictly smaller, so the walk ends.
        Each article's matches are computed once (``pending``) and its verdict once its best
        match's cluster is known. The article's own record must be loaded (or loadable); the
        matches' records are, since :meth:`_matches` keeps only loaded, live ones.
        """
        pending: dict[int, tuple[Record, Probe, Found]] = {}
        stack = [seq]
        while stack:
            top = stack[-1]
            await self._load_verdicts(batch, {top})  # no round trip when already loaded
            if top in batch.verdicts:
                stack.pop()
                continue
            if top not in pending:
                pending[top] = await self._step(batch, top)
            rec, probe, found = pending[top]
            best = found.matches[0].seq if found.matches else None
            if best is not None and best not in batch.verdicts:
                await self._load_verdicts(batch, {best})
                if best not in batch.verdicts:
                    stack.append(best)
                    continue
            cluster = batch.verdicts[best].cluster if best is not None else rec.doc_id
            batch.verdicts[top] = self._verdict(
                batch, rec, rec.doc_id, probe, found, True, cluster, batch.policy.explain
            )
            stack.pop()
        return batch.verdicts[seq]

    async def _step(self, batch: _Batch, seq: int) -> tuple[Record, Probe, Found]:
        """A stored article's record, its probe of the articles before it, and the matches."""
        await self._load_records(batch, {seq})
        rec = batch.records.get(seq)
        if rec is None:
            raise ClusterChainError(f"seq {seq} vanished while its cluster was resolved")
        retention = batch.policy.retention_s
        live_after = None if retention is None else rec.registered_at - retention
        first, cands = await self.index.lookup(
            batch.ns, rec.content, rec.buckets, live_after=live_after
        )
        earlier = tuple(s for s in cands if s < seq)
        exact = first if first is not None and first < seq else None
        await self._load_records(batch, {*earlier, *([exact] if exact is not None else [])})
        probe = Probe(seq, "new", exact, earlier)
        return rec, probe, self._matches(batch, rec, probe, register=True, at=rec.registered_at)

    async def delete(self, ns: str, doc_id: str) -> bool:
        """Takedown: the article leaves buckets, content slot, records and verdicts."""
        keys.check_namespace(ns)
        where, _ = await self._target(ns)
        return await self.index.delete(where, doc_id)

    async def expire(self, ns: str) -> int:
        where, policy = await self._target(ns)  # a rebuilt namespace expires where it lives
        policy = self._checked.get(where, policy)
        if policy.retention_s is None:
            return 0
        now = await self._now(where)
        return await self.index.expire(where, now - policy.retention_s, limit=100_000)


__all__ = ["Candidate", "Engine", "Found"]
