"""The match rules: whether an earlier stored article is a copy of a new one, related to it
(alike but for its facts), or neither, and what differs between the two.

Pure functions of the two texts' sketches and records and of the namespace's policy (no index,
no clock): the engine (:mod:`neardup.stream.engine.engine`) finds the candidates and calls
:func:`judge` on each. Long texts are compared by exact Jaccard (or containment) of token
shingles, short ones by edit similarity of their cores (:mod:`neardup.sketch.facts`); a text
that left lines out as its source's boilerplate (:mod:`neardup.stream.engine.boilerplate`) is
compared again as sent when what it kept is too little to judge alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from typing import cast

import numpy as np
import numpy.typing as npt

from neardup.sketch import evidence, facts, features, verify
from neardup.sketch.evidence import Span
from neardup.sketch.lines import Lines, without
from neardup.stream.engine.boilerplate import units
from neardup.stream.engine.prepare import (
    Prepared,
    boundary,
    numbers_and_dates,
    unstamped,
    whole_shingles,
)
from neardup.stream.engine.state import NamespaceState
from neardup.stream.index.base import Probe
from neardup.stream.model import Change, Direction, Match, Method, Related, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Kind, Record


class AsSent:
    """A text as sent, read once for all its candidates (its shingles, its lines' and
    passages' fingerprints): what :func:`judge` compares again when its sketch left lines
    out."""

    def __init__(self, policy: Policy, me: Prepared, units: Lines | None = None) -> None:
        self.policy, self.me = policy, me
        self._shingles: npt.NDArray[np.uint32] | None = None
        self._units = units  # what Engine._boilerplate read already, if it did
        self._tokens: int | None = None

    @property
    def shingles(self) -> npt.NDArray[np.uint32]:
        if self._shingles is None:
            self._shingles = whole_shingles(self.policy, self.me.article.text)
        return self._shingles

    @property
    def tokens(self) -> int:
        """Its normalised tokens: what a kept share is a share of (:func:`_kept_share`)."""
        if self._tokens is None:
            self._tokens = len(features.tokenize(features.normalize(self.me.article.text)))
        return self._tokens

    @property
    def units(self) -> Lines:
        if self._units is None:
            a = self.me.article
            self._units = units(a.text, a.source_name(), self.policy)
        return self._units


@dataclass(frozen=True, slots=True)
class Verified:
    """A candidate that verified: an earlier article found a copy or related, how similar,
    which one, and which measure decided.
    ``direction``: which text lies inside the other (containment). ``changes``: the facts that
    differ (a short text's, when the policy lets numbers differ; a long text's numbers are
    compared for the best match only, in :func:`verdict`, unless ``read``: the text
    was judged less its source's own template, and ``changes`` are read from that)."""

    similarity: float
    seq: int
    method: Method
    direction: Direction | None = None
    changes: tuple[Change, ...] = ()
    read: bool = False


Judged = tuple[Verified, bool] | None  # a match (True), related (False), or neither (None)


class _Next(Enum):
    """A rule's answer when the pair is not its case: the next rule decides."""

    NEXT = 0


NEXT = _Next.NEXT


@dataclass(slots=True)
class Pair:
    """A new text (``me``) and an earlier stored one (``other``) as :func:`judge`'s rules see
    them, and what the rules measured of two long texts so far.

    ``as_sent``: ``me``, when it can be compared again as sent (it left lines out as its
    source's boilerplate, and ``other`` kept its text); ``sent``: ``me`` as sent, read once.
    ``sim``, ``direction``: the namespace's measure of the two (:func:`_measure`), ``plain``
    the Jaccard of their sketches (what :func:`inside` reads), ``read``: ``me`` less its own
    template, when that decided."""

    policy: Policy
    me: Prepared | Record
    other: Record
    left_out: frozenset[bytes]
    view: npt.NDArray[np.uint32] | None
    learned: frozenset[bytes]
    sent: AsSent | None
    as_sent: Prepared | None
    # two long texts, once measured (not set before: a pair of short texts never is)
    sim: float = field(init=False)
    direction: Direction | None = field(init=False)
    plain: float | None = field(init=False)
    read: str = field(init=False)


def judge(
    policy: Policy,
    me: Prepared | Record,
    other: Record,
    left_out: frozenset[bytes] = frozenset(),
    view: npt.NDArray[np.uint32] | None = None,
    learned: frozenset[bytes] = frozenset(),
    sent: AsSent | None = None,
) -> Judged:
    """An earlier stored article as a match (``True``) or as related (``False``: alike but for
    its facts: a short text, or a brief one of fewer than ``facts_tokens`` shingles whose
    numbers differ), or ``None``; ``seq`` is filled in by the caller. The texts' kinds choose
    the rules (:data:`RULES`); the first whose case the pair is decides.

    Long texts compare what each sketched: its text less the lines its source repeated when it
    was registered. What a source repeats is learned over time, so ``me`` may have left out
    lines (``left_out``) that ``other`` kept, being earlier. Too unlike so, the two compare
    again with those lines left out of both (:func:`pair_view`), and, if still unlike, whole
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
        sent = AsSent(policy, me)
    pair = Pair(policy, me, other, left_out, view, learned, sent, as_sent)
    kinds = "mixed" if me.kind is not other.kind else "short" if me.kind is Kind.SHORT else "long"
    for rule in RULES[kinds]:
        judged = rule(pair)
        if judged is not NEXT:
            return judged
    raise AssertionError("the last rule decides every pair")  # pragma: no cover


def short_remainder_against_long(pair: Pair) -> Judged | _Next:
    """One short and one long: a long text that is short without its boilerplate, against an
    earlier long one, is judged as sent: whole, or less only its source's template that
    ``other`` does not have (a copier's source taught the story it copies)."""
    if pair.as_sent is None or pair.other.kind is Kind.SHORT:
        return NEXT
    return _judge_as_sent(pair.policy, pair.as_sent, pair.other, pair.learned, pair.view, pair.sent)


def across_the_line(pair: Pair) -> Judged | _Next:
    """One short and one long (else): near the line, both read as short texts
    (:func:`judge_across`)."""
    return judge_across(pair.policy, pair.me, pair.other)


def short_remainder_as_sent(pair: Pair) -> Judged | _Next:
    """Both short, ``me`` a long text short without its boilerplate that kept less than a
    third of itself (or less than half, against a text long as sent): judged as sent. What
    its source repeats may be someone else's story, taught as template (a copier that sends
    a story's lines as documents of its own, then the story), and two texts whose remainders
    alike are a tag or a filler line are not copies of each other. A remainder of a third of
    the text or more, against a text short as sent (or of half or more), is what it says (a
    brief sent again under tag lines its source repeats)."""
    me, as_sent, sent = pair.me, pair.as_sent, pair.sent
    if as_sent is None:
        return NEXT
    kept = _kept_share(me.text, sent.tokens) if sent else 1.0
    if not (
        kept < 1 / 3
        or (kept < 1 / 2 and features.has_tokens(pair.other.raw, pair.policy.short_tokens))
    ):
        return NEXT
    return _judge_as_sent(pair.policy, as_sent, pair.other, pair.learned, pair.view, sent)


def short_texts(pair: Pair) -> Judged | _Next:
    """Both short: edit similarity of their cores, then their facts (:func:`judge_short`);
    when unlike so and ``me`` left lines out, the two whole texts as sent
    (:func:`_judge_whole`)."""
    judged = judge_short(pair.policy, pair.me.text, pair.other.text)
    if judged is None and pair.as_sent is not None:
        return _judge_whole(pair.policy, pair.as_sent, pair.other)
    return judged


def _measure(pair: Pair) -> Judged | _Next:
    """Both long, first: not a rule, a measure. The namespace's measure of the two
    sketches; when too unlike, of ``me``'s sketch against ``other``'s view (its text less
    what its source repeats now), then of ``me`` less its own template
    (:func:`_own_template`). Decides nothing."""
    policy, me, other, sent = pair.policy, pair.me, pair.other, pair.sent
    sim, direction = _similarity(policy, me.shingles, other.shingles)
    pair.plain = sim if policy.measure == "jaccard" else None  # what inside() reads
    pair.read = ""
    if sim < policy.threshold and pair.view is not None:
        sim, direction = max((sim, direction), _similarity(policy, me.shingles, pair.view))
    if sim < policy.threshold and pair.learned and other.raw and sent is not None:
        own, rest = _own_template(policy, sent, other, pair.learned, pair.view)
        if own[0] >= policy.threshold:
            (sim, direction), pair.read = own, rest
    pair.sim, pair.direction = sim, direction
    return NEXT


def little_kept_of_its_own_source(pair: Pair) -> Judged | _Next:
    """Alike, but ``me`` kept less than a third of itself and ``other`` is of its own source:
    judged as sent, as a short remainder is. Its source's template is what it left out (a
    copier taught its source a story's short lines; what it kept, long paragraphs, is also
    in its own documents that carried them). Against another source's text the remainder is
    what it says (an excerpt under a large template)."""
    as_sent, sent = pair.as_sent, pair.sent
    if (
        pair.sim < pair.policy.threshold
        or as_sent is None
        or sent is None
        or len(pair.me.shingles) * 3 >= len(sent.shingles)
        or pair.other.source != as_sent.article.source_name()
    ):
        return NEXT
    return _judge_as_sent(pair.policy, as_sent, pair.other, pair.learned, pair.view, sent)


def unlike_near_the_line(pair: Pair) -> Judged | _Next:
    """Unlike, nothing left out to compare again: two texts near the line are a copy as
    short texts are (a tag on a 30-token text is a tenth of its shingles); what is related
    the long rule says, or one lies inside the other (an embedded article, :func:`inside`)."""
    if pair.sim >= pair.policy.threshold or pair.as_sent is not None:
        return NEXT
    policy, me, other = pair.policy, pair.me, pair.other
    near = judge_across(policy, me, other)
    if near is not None and near[1]:
        return near
    return inside(policy, me.shingles, other.shingles, pair.plain)


def unlike_less_what_it_left_out(pair: Pair) -> Judged | _Next:
    """Unlike, ``me`` having left lines out: compared again with the same lines left out of
    both (:func:`pair_view`) when the whole texts can be alike at all (:func:`_whole_bound`,
    then their shingles), else one may lie inside the other; still unlike, the whole texts
    (:func:`_judge_whole`). Alike so, the next rules read the pair's facts."""
    me, policy, other = pair.as_sent, pair.policy, pair.other
    if pair.sim >= policy.threshold or me is None:
        return NEXT
    sent = pair.sent
    mine = sent.shingles if sent is not None else whole_shingles(policy, me.article.text)
    if _whole_bound(policy, me.shingles, other.shingles, len(mine)) < policy.threshold:
        return inside(policy, me.shingles, other.shingles, pair.plain)  # too unlike whole
    if _similarity(policy, mine, whole_shingles(policy, other.raw))[0] < policy.threshold:
        # unlike whole too (leaving the same lines out of both rarely helps)
        return inside(policy, me.shingles, other.shingles, pair.plain)
    sim, direction = _similarity(policy, me.shingles, pair_view(policy, other, pair.left_out))
    if sim < policy.threshold:
        return _judge_whole(policy, me, other)
    pair.sim, pair.direction = sim, direction
    return NEXT


def another_day(pair: Pair) -> Judged | _Next:
    """Alike, strict facts, and each names a day the other does not: the same template on
    another day (a monthly estimate, a weekly price, a daily average), related, with what
    changed."""
    policy, me, other = pair.policy, pair.me, pair.other
    if policy.facts != "strict" or not _another_day(me.dates, other.dates):
        return NEXT
    changes = (
        *facts.diff_facts("date", other.dates, me.dates),
        *number_changes(policy, me, other),
    )
    return Verified(pair.sim, 0, policy.measure, pair.direction, changes), False


def brief_with_other_figures(pair: Pair) -> Judged | _Next:
    """Alike, strict facts, one brief (fewer than ``facts_tokens`` shingles), both short
    enough to keep their numbers, and the numbers differ: a brief templated item (a rate
    set, an estimate, a fix) whose figures differ is the next release, not a copy: related,
    with its changed figures."""
    policy, me, other = pair.policy, pair.me, pair.other
    a, b = len(me.shingles), len(other.shingles)
    brief = min(a, b) < policy.facts_tokens
    known = max(a, b) < policy.numbers_shingles  # both records keep their numbers
    if not (brief and known and policy.facts == "strict" and me.numbers != other.numbers):
        return NEXT
    changes = tuple(facts.diff_facts("number", other.numbers, me.numbers))
    return Verified(pair.sim, 0, policy.measure, pair.direction, changes), False


def alike_less_its_own_template(pair: Pair) -> Judged | _Next:
    """Alike once ``me`` is read less its own template: a copy, whose changed facts are the
    numbers the reader sees, those of the text as judged."""
    if not pair.read:
        return NEXT
    changes = _text_changes(pair.other.raw, pair.read)
    return Verified(pair.sim, 0, pair.policy.measure, pair.direction, changes, True), True


def alike(pair: Pair) -> Judged | _Next:
    """Alike, and no rule above took the pair: a copy (its numbers are compared for the best
    match only, by :func:`verdict`)."""
    return Verified(pair.sim, 0, pair.policy.measure, pair.direction), True


Rule = Callable[[Pair], Judged | _Next]

RULES: dict[str, tuple[Rule, ...]] = {
    "mixed": (short_remainder_against_long, across_the_line),
    "short": (short_remainder_as_sent, short_texts),
    "long": (
        _measure,
        little_kept_of_its_own_source,
        unlike_near_the_line,
        unlike_less_what_it_left_out,
        another_day,
        brief_with_other_figures,
        alike_less_its_own_template,
        alike,
    ),
}
""":func:`judge`'s rules by the texts' kinds (one short and one long: ``mixed``), each in the
order they are tried: the first whose case a pair is decides, and the last of each decides
every pair that reaches it. Two long texts are measured (:func:`_measure`), then judged as
sent when they kept too little, then, unlike, compared again or found apart, and, alike,
their facts read: another day, a brief's other figures, a text read less its own template,
else a copy."""


def _judge_as_sent(
    policy: Policy,
    me: Prepared,
    other: Record,
    learned: frozenset[bytes],
    view: npt.NDArray[np.uint32] | None,
    sent: AsSent | None,
) -> tuple[Verified, bool] | None:
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
    sent: AsSent,
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
    theirs_read: tuple[str, npt.NDArray[np.uint32]] | None = None  # read once one is learned
    drop = set()
    for i, key in enumerate(found.keys):
        if key[8:] in learned:
            if theirs_read is None:
                theirs_read = features.normalize(other.raw), whole_shingles(policy, other.raw)
            norm, whole = theirs_read
            # whether ``other`` has it, whatever the two layouts (a sentence of one is a line
            # of the other, or runs over two): its text, or most of its shingles
            a, b = found.spans[i]
            if features.normalize(text[a:b]) in norm:
                continue
            unit = whole_shingles(policy, text[a:b])
            if not len(unit) or verify.intersection_size(unit, whole) * 2 < len(unit):
                drop.add(i)
    if not drop:  # all of ``me`` is kept: its share is whole
        return _similarity(policy, whole_shingles(policy, text), theirs), text
    rest = without(text, found, drop)
    if _kept_share(features.normalize(rest), sent.tokens) < 1 / 2:
        # what ``me`` shares with ``other`` is a small part of it: whatever its source was
        # taught, ``me`` is not ``other``'s copy (a copier's own document that carries some
        # lines of a story is not what the story's copy copies)
        return (0.0, None), ""
    return _similarity(policy, whole_shingles(policy, rest), theirs), rest


def _kept_share(rest: str, n: int) -> float:
    """The share of a text's ``n`` normalised tokens that it kept (``rest``: what it kept,
    normalised)."""
    return len(features.tokenize(rest)) / n if n else 1.0


def _judge_whole(
    policy: Policy,
    me: Prepared,
    other: Record,
    judged: tuple[float, Direction | None] | None = None,
    mine: str = "",
    mine_shingles: npt.NDArray[np.uint32] | None = None,
) -> tuple[Verified, bool] | None:
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
    return Verified(sim, 0, policy.measure, direction, changes, bool(mine)), not changes


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


def inside(
    policy: Policy,
    mine: npt.NDArray[np.uint32],
    theirs: npt.NDArray[np.uint32],
    jaccard: float | None = None,
) -> tuple[Verified, bool] | None:
    """Two long texts unlike by Jaccard of which one lies inside the other: related (never a
    copy), method ``containment``, with its ``direction``, when at least ``threshold`` of the
    smaller one's shingles are in the larger (an earlier article quoted whole in a longer text,
    ``embeds``; a part of an earlier longer one, ``excerpt``). A Jaccard namespace's copies
    stay what its threshold says (a text that adds twice the article's length of its own is
    not the article again), and an originality check is still told which earlier text it
    holds; under containment the measure itself decided already.

    One way only: when the larger also lies ``threshold`` inside the smaller, the two are
    one text with some words changed on both sides, and Jaccard, the namespace's measure,
    judged them (a brief sent again under two different headlines is no excerpt of the
    other). ``jaccard``: the two sets' Jaccard, when known, which gives what they share
    without a second pass over them (``|A ∩ B| = J (|A| + |B|) / (1 + J)``)."""
    if policy.measure != "jaccard" or not (len(mine) and len(theirs)):
        return None
    if jaccard is None:
        shared = verify.intersection_size(mine, theirs)
    else:
        shared = round(jaccard * (len(mine) + len(theirs)) / (1 + jaccard))
    part, whole = shared / len(mine), shared / len(theirs)
    best, direction = (part, "excerpt") if part >= whole else (whole, "embeds")
    if best < policy.threshold or min(part, whole) >= policy.threshold:
        return None
    return Verified(best, 0, "containment", cast(Direction, direction)), False


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


def pair_view(policy: Policy, other: Record, left_out: frozenset[bytes]) -> npt.NDArray[np.uint32]:
    """The shingles of ``other``'s text as sent less its lines whose fingerprints are in
    ``left_out`` (the lines the text it is compared with left out)."""
    found = units(other.raw, other.source, policy)
    drop = {i for i, key in enumerate(found.keys) if key[8:] in left_out}
    return whole_shingles(policy, without(other.raw, found, drop) if drop else other.raw)


def _another_day(mine: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
    """Whether two texts name other days: each names one the other does not. A copy that
    drops a paragraph with its date, or an update that adds one, still names the same days."""
    a, b = set(mine), set(theirs)
    return bool(a - b) and bool(b - a)


def number_changes(policy: Policy, me: Prepared | Record, earlier: Record) -> tuple[Change, ...]:
    """The numbers a long copy changed, from both records: values with number words when
    both are brief enough to keep them so, else the numerals as written, read as values."""
    a, b = earlier.numbers, me.numbers
    bound = policy.numbers_shingles
    if not (len(me.shingles) < bound and len(earlier.shingles) < bound):
        a, b = tuple(map(facts.value_of, a)), tuple(map(facts.value_of, b))
    return tuple(facts.diff_facts("number", a, b)) if a != b else ()


def judge_across(
    policy: Policy, me: Prepared | Record, other: Record
) -> tuple[Verified, bool] | None:
    """Two texts near the line, one short and one long, or both long and unlike by shingles,
    each long one of at most :func:`boundary` tokens (they share a short text's buckets):
    each is read as a short text, and the two compared by the short rule (:func:`judge_short`:
    a tag or byline at an edge is not a difference, a changed number makes them related), so
    that a copy is found whichever side of the line each falls on. A long record that kept no
    text is compared with a short text by shingles (the namespace's measure) and numbers."""
    w = policy.shingle_size
    if any(t.kind is Kind.LONG and len(t.shingles) + w - 1 > boundary(policy) for t in (me, other)):
        return None
    mine, theirs = _as_short(me), _as_short(other)
    if mine is not None and theirs is not None:
        return judge_short(policy, mine, theirs)
    long = me if me.kind is Kind.LONG else other
    short = mine if mine is not None else theirs
    if short is None or (me.kind is other.kind):
        return None  # two long texts, one without its text: their shingles decided
    sim, direction = _similarity(policy, whole_shingles(policy, short), long.shingles)
    if sim < policy.threshold:
        return None
    numbers = facts.numbers_of(short)
    a, b = (numbers, long.numbers) if me is long else (long.numbers, numbers)
    changes = tuple(facts.diff_facts("number", b, a)) if a != b else ()
    copy = not changes or policy.facts != "strict"
    return Verified(sim, 0, policy.measure, direction, changes), copy


def _as_short(text: Prepared | Record) -> str | None:
    """A text's normalised form as the short path reads it, or None: a long record that kept
    no text."""
    if text.kind is Kind.SHORT:
        return text.text
    sent = text.article.text if isinstance(text, Prepared) else text.raw
    if not sent:
        return None
    return _short_form(sent) if len(sent) <= _SHORT_FORM_CHARS else _read_short(sent)


def _read_short(sent: str) -> str:
    return unstamped(sent, features.normalize(sent))


# a long text near the line read as a short one, kept for the last texts read: a candidate
# meets every later article of its family (texts of at most this many characters, some MB)
_SHORT_FORM_CHARS = 2048
_short_form = lru_cache(maxsize=2048)(_read_short)


def judge_short(policy: Policy, mine: str, theirs: str) -> tuple[Verified, bool] | None:
    """Edit similarity of the cores; then the facts decide (see :mod:`neardup.sketch.facts`). Texts
    with no core (only links or symbols) compare as written and have no facts."""
    me, other = facts.facts_of(mine), facts.facts_of(theirs)
    if not (me.core and other.core):
        sim = verify.edit_similarity(mine, theirs)
        return (Verified(sim, 0, "edit"), True) if sim >= policy.short_threshold else None
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
    return Verified(sim, 0, "edit", None, changes), copy


@dataclass(frozen=True, slots=True)
class Found:
    """What an article's candidates verified as: matches (copies) and related texts."""

    matches: list[Verified]
    related: list[Verified]


def matches(
    state: NamespaceState,
    me: Prepared | Record,
    probe: Probe,
    register: bool,
    at: float,
    left_out: frozenset[bytes] = frozenset(),
    learned: frozenset[bytes] = frozenset(),
    sent: AsSent | None = None,
) -> Found:
    """Every earlier, live candidate that verifies, best first (exact copies win ties), and
    the related ones (short texts alike but for their facts), best first. ``left_out``:
    the fingerprints of the lines ``me`` left out as boilerplate."""
    policy = state.policy
    seq = probe.seq if register else None
    matches: list[Verified] = []
    related: list[Verified] = []
    exact = probe.exact_seq
    if exact is not None and state.live(exact, at):
        matches.append(Verified(1.0, exact, "exact"))
    for s in probe.candidates:
        if s == exact or not state.live(s, at) or (seq is not None and s >= seq):
            continue
        judged = judge(policy, me, state.records[s], left_out, state.views.get(s), learned, sent)
        if judged is not None:
            c, copy = judged
            (matches if copy else related).append(
                Verified(c.similarity, s, c.method, c.direction, c.changes, c.read)
            )
    matches.sort(key=lambda m: (-m.similarity, m.method != "exact", m.seq))
    related.sort(key=lambda m: (-m.similarity, m.seq))
    return Found(matches, related)


def verdict(
    state: NamespaceState,
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
    cap = state.policy.max_matches
    related = tuple(
        Related(state.records[r.seq].doc_id, round(r.similarity, 4), r.changes, r.direction)
        for r in found.related[:cap]
    )
    if not found.matches:
        return Verdict(
            doc_id, state.name or state.ns, "original", None, doc_id, None, (), "new", seq,
            len(probe.candidates), related=related,
        )  # fmt: skip
    best = found.matches[0]
    earlier = state.records[best.seq]
    changes = best.changes
    if (
        me.kind is earlier.kind is Kind.LONG
        and best.method not in ("exact", "edit")
        and not best.read
    ):
        changes = number_changes(state.policy, me, earlier)
    shown = tuple(
        Match(state.records[m.seq].doc_id, round(m.similarity, 4)) for m in found.matches[:cap]
    )
    return Verdict(
        doc_id,
        state.name or state.ns,
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
        evidence=_evidence(state.policy, me, earlier) if explain else None,
    )


def _evidence(policy: Policy, me: Prepared | Record, earlier: Record) -> tuple[Span, ...]:
    mine = me.article.text if isinstance(me, Prepared) else me.raw
    if not (mine and earlier.raw):
        return ()
    return tuple(evidence.shared_spans(mine, earlier.raw, w=policy.shingle_size, seed=policy.seed))


__all__ = [
    "RULES",
    "AsSent",
    "Found",
    "Pair",
    "Rule",
    "Verified",
    "across_the_line",
    "alike",
    "alike_less_its_own_template",
    "another_day",
    "brief_with_other_figures",
    "inside",
    "judge",
    "judge_across",
    "judge_short",
    "little_kept_of_its_own_source",
    "matches",
    "number_changes",
    "pair_view",
    "short_remainder_against_long",
    "short_remainder_as_sent",
    "short_texts",
    "unlike_less_what_it_left_out",
    "unlike_near_the_line",
    "verdict",
]
