"""What the engine's stages pass along: one record per article of a batch, filled in stage by
stage, and the stages that need no index.

:meth:`neardup.stream.engine.engine.Engine.process` decides a batch in stages, each a function
over the batch: **read** the articles (their main content, empty forms refused), then per
namespace **prepare** (what each text's source repeats is left out, the rest sketched),
**register** (or, for a read-only check, look up), **verify** the candidates found, **resolve**
each article's verdict and cluster, and **store** the verdicts with the lines they teach. Each
stage reads what the stages before it wrote into the articles' :class:`InFlight` records (the
stages that need the index are the engine's methods; the pure ones are here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from neardup.sketch.lines import Lines
from neardup.stream.engine.boilerplate import Learned, anchored
from neardup.stream.engine.judge import AsSent, Found
from neardup.stream.engine.prepare import Prepared, prepare
from neardup.stream.engine.state import NamespaceState
from neardup.stream.errors import NeardupError
from neardup.stream.index.base import Probe, StoredVerdict
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy


@dataclass(slots=True)
class InFlight:
    """One article on its way through the stages: what each stage found of it. A field is
    read only after the stage that writes it (``prepared``, ``probe`` and ``decided`` have no
    value before)."""

    article: Article
    # prepare, what its source repeats (:func:`neardup.stream.engine.boilerplate.learn`)
    lines: Lines | None = None  # its lines and passages (None: one line, or learning off)
    without_boilerplate: str | None = None  # its text less its boilerplate (None: as sent)
    left_out: frozenset[bytes] = frozenset()  # the fingerprints left out of that
    anchors: tuple[int, ...] = ()  # its anchors' fingerprints
    learned: frozenset[bytes] = frozenset()  # all its source repeats, left out or not
    # prepare: its sketches and buckets
    prepared: Prepared = field(init=False)
    # register (or look up): its seq, status and candidates
    probe: Probe = field(init=False)
    # verify: its text as sent, read once for all its candidates (when its sketch left
    # lines out), and what its candidates verified as (a new article's only)
    sent: AsSent | None = None
    found: Found | None = None
    # resolve: its verdict, or its error
    decided: Verdict | NeardupError = field(init=False)


@dataclass(slots=True)
class Run:
    """One namespace's part of a batch on its way through the stages: its articles' records
    in input order, the namespace's state, how the batch is decided (``register``: or only
    checked; ``explain``: with evidence; ``teach``: its lines count towards its sources'
    boilerplate), when (``now``), and the verdicts the store stage writes (by seq)."""

    state: NamespaceState
    items: list[InFlight]
    register: bool
    explain: bool
    teach: bool
    now: float
    stored: dict[int, StoredVerdict] = field(default_factory=dict)

    @property
    def live_after(self) -> float | None:
        """The oldest registration time still live at ``now`` (None: no retention)."""
        retention = self.state.policy.retention_s
        return None if retention is None else self.now - retention


async def read_all(articles: Sequence[Article]) -> list[Article]:
    """Each article as read (:meth:`~neardup.stream.model.Article.as_read`: a page's main
    content), in input order."""
    if any(a.format == "page" for a in articles):
        # a page's main content takes trafilatura milliseconds to seconds (a page of 500 KB
        # of paragraphs, about 3 s): read off the event loop, which keeps serving /health,
        # /check and the broker's heartbeats meanwhile
        return await asyncio.to_thread(lambda: [a.as_read() for a in articles])
    return [a.as_read() for a in articles]


def in_flight(articles: list[Article]) -> list[InFlight]:
    """One record per article, in input order: what the stages fill in."""
    return [InFlight(a) for a in articles]


def take_learned(items: list[InFlight], learned: Learned) -> None:
    """Each article's part of what :func:`neardup.stream.engine.boilerplate.learn` found."""
    for it, lines, rest, left_out, anchors, fps in zip(
        items,
        learned.lines,
        learned.without_boilerplate,
        learned.left_out,
        learned.anchors,
        learned.learned,
        strict=True,
    ):
        it.lines, it.without_boilerplate, it.left_out = lines, rest, left_out
        it.anchors, it.learned = anchors, fps


def prepare_all(policy: Policy, items: list[InFlight]) -> None:
    """Sketch each article (its text less its boilerplate, if it left lines out) and add its
    anchors to its buckets (:func:`neardup.stream.engine.boilerplate.anchored`)."""
    prepared = prepare(
        policy, [it.article for it in items], [it.without_boilerplate for it in items]
    )
    anchors = [it.anchors for it in items]
    for it, p in zip(items, anchored(policy, prepared, anchors), strict=True):
        it.prepared = p


def read_as_sent(policy: Policy, items: list[InFlight]) -> None:
    """Each text as sent, read once for all its candidates, when its sketch left lines out or
    its source repeats any (what :func:`neardup.stream.engine.judge.judge` compares again)."""
    for it in items:
        it.sent = AsSent(policy, it.prepared, it.lines) if it.left_out or it.learned else None


def decision_order(items: list[InFlight]) -> list[int]:
    """The articles' places in the order they are decided: by seq, so an article's earlier
    matches in the same batch are decided before it (ties, a check's new articles of seq 0,
    in input order)."""
    return sorted(range(len(items)), key=lambda k: items[k].probe.seq)


__all__ = [
    "InFlight",
    "Run",
    "decision_order",
    "in_flight",
    "prepare_all",
    "read_all",
    "read_as_sent",
    "take_learned",
]
