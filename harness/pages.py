"""Seeded web pages: real Reuters stories wrapped in the templates of synthetic news sites.

A detector comparing whole pages sees shared story text (a copy) and shared site boilerplate
(not one). Pair kinds: ``syndicated`` (one story on two sites), ``same_site`` (two stories, one
template), ``excerpt`` (2-4 consecutive paragraphs of an earlier story under a new title),
``embeds`` (a whole earlier story with commentary around it) and ``unrelated``. A story has at
most two pages, so the pairs are the complete ground truth. One ``random.Random(seed)``: a seed
names a data set; templates and words are in ``harness/data/templates/pages.json``.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypedDict, cast

from harness import data

__all__ = [
    "KINDS",
    "LAYOUTS",
    "SITES",
    "Layout",
    "PageDoc",
    "PageKind",
    "PagePair",
    "Site",
    "Story",
    "Style",
    "boilerplate",
    "generate",
    "stories",
    "story_part",
    "styles",
]

PageKind = Literal["syndicated", "same_site", "excerpt", "embeds", "unrelated"]
Form = Literal["full", "syndicated", "excerpt", "embeds"]
KINDS: tuple[PageKind, ...] = ("syndicated", "same_site", "excerpt", "embeds", "unrelated")


class PageDoc(TypedDict):
    """``story``: the Reuters id of the page's story; ``story_span``: the ``[start, end)`` of the
    story part in ``text``; ``form``: original, syndicated, excerpt or embedding."""

    id: str
    url: str
    source: str
    text: str
    site: str
    story: str
    story_span: list[int]
    form: str


class PagePair(NamedTuple):
    """``first`` is earlier than ``second`` in the stream; ``detail`` says how they relate."""

    first: str
    second: str
    kind: PageKind
    detail: str


@dataclass(frozen=True)
class Story:
    """A re-flowed Reuters story: the title line and one string per paragraph."""

    id: str
    title: str
    paragraphs: tuple[str, ...]

    @property
    def lines(self) -> tuple[str, ...]:
        return (self.title, *self.paragraphs)


@dataclass(frozen=True)
class Site:
    """One site's template: fixed lines, per-page variants of ``meta`` and ``subscribe``, and
    boxes placed by ``layout`` (``before`` the story, ``after`` it, or ``split``)."""

    name: str
    host: str
    nav: tuple[str, ...]
    meta: tuple[str, ...]
    most_read: str
    related: str
    bullet: str
    layout: Literal["before", "after", "split"]
    subscribe_fixed: str
    subscribe: tuple[str, ...]
    cookie: str
    footer: tuple[str, ...]


# --------------------------------------------------------------------------- the sites

# The sites' templates and the words of derived pages (titles, commentary): data, not logic.
_TEXT = data.templates("pages")


def _site(fields: dict[str, Any]) -> Site:
    kept: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return Site(**kept)


SITES: tuple[Site, ...] = tuple(_site(fields) for fields in _TEXT["sites"])
_EXCERPT_TITLES: list[str] = _TEXT["excerpt_titles"]
_EMBED_TITLES: list[str] = _TEXT["embed_titles"]
_LEAD_IN: list[str] = _TEXT["lead_in"]  # commentary that introduces the quoted story
_COMMENTARY: list[str] = _TEXT["commentary"]  # commentary that reads well after it


# --------------------------------------------------------------------------- the stories

_PARAGRAPH = re.compile(r"\n[ \t]{3,}")
_COLUMNS = re.compile(r"\S {3,}\S")
_SIGN_OFF = re.compile(r"reuters?\b.{0,8}", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+")
_SHINGLE = 5
_MAX_SHARED = 6  # shared word 5-grams that make two stories too alike to call different


def _tabular(body: str) -> bool:
    """More than 15% of the wire's lines look like a table row: aligned columns, or at least
    two numbers and no more words than numbers."""
    lines = [ln.strip() for ln in body.split("\n") if ln.strip()]
    rows = 0
    for ln in lines:
        toks = ln.split()
        nums = sum(any(c.isdigit() for c in t) for t in toks)
        words = sum(t.isalpha() and len(t) > 1 for t in toks)
        rows += bool(_COLUMNS.search(ln)) or (nums >= 2 and nums >= words)
    return rows > 0.15 * len(lines)


def _reflow(story: dict[str, str], min_words: int, min_paragraphs: int) -> Story | None:
    """Title and paragraphs with the wire's hard wrapping undone, or None if too short or a
    table. A paragraph starts at a newline followed by an indent (mostly four spaces)."""
    title, _, body = story["text"].partition("\n")
    title = " ".join(title.split())
    paragraphs = tuple(p for p in (" ".join(s.split()) for s in _PARAGRAPH.split(body)) if p)
    if paragraphs and _SIGN_OFF.fullmatch(paragraphs[-1]):  # the few sign-offs left in the text
        paragraphs = paragraphs[:-1]
    if not title or len(body.split()) < min_words or len(paragraphs) < min_paragraphs:
        return None
    return None if _tabular(body) else Story(story["id"], title, paragraphs)


def stories(
    rng: random.Random, n: int, *, min_words: int = 150, min_paragraphs: int = 4
) -> list[Story]:
    """``n`` distinct Reuters stories in a random order: at least ``min_words`` words and
    ``min_paragraphs`` paragraphs, not mostly a table, no title seen before, and no run of text
    (``_MAX_SHARED`` word 5-grams) nor any paragraph in common with a story already taken."""
    wire = data.reuters()
    owner: dict[str, int] = {}
    titles: set[str] = set()
    paragraphs: set[str] = set()
    out: list[Story] = []
    for i in rng.sample(range(len(wire)), len(wire)):
        story = _reflow(wire[i], min_words, min_paragraphs)
        if story is None or story.title in titles or not paragraphs.isdisjoint(story.paragraphs):
            continue
        words = _WORD.findall(" ".join(story.paragraphs).lower())
        grams = {" ".join(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)}
        shared = Counter(owner[g] for g in grams if g in owner)
        if shared and max(shared.values()) >= _MAX_SHARED:
            continue
        for g in grams:
            owner.setdefault(g, len(out))
        titles.add(story.title)
        paragraphs.update(story.paragraphs)
        out.append(story)
        if len(out) == n:
            return out
    raise ValueError(f"only {len(out)} stories qualify, {n} wanted")


# --------------------------------------------------------------------------- pages


@dataclass
class _Plan:
    """A page before rendering: where it goes in the stream and what its story part says."""

    at: float
    site: int
    story: Story
    form: Form
    lines: tuple[str, ...]
    detail: str = ""
    origin: int | None = None  # the plan this one is derived from


def _excerpt(rng: random.Random, story: Story) -> tuple[tuple[str, ...], str]:
    """2-4 consecutive paragraphs from the second on, under a new title."""
    n = len(story.paragraphs)
    k = rng.randint(2, min(4, n - 1))
    start = rng.randint(1, n - k)
    head = story.title
    if rng.random() < 0.5:  # rewritten in title case; tickers such as <EK.N> kept as they are
        head = " ".join(w.capitalize() if w.isalpha() else w for w in head.split())
    title = rng.choice(_EXCERPT_TITLES).format(head)
    detail = f"paragraphs {start + 1}-{start + k} of {n}"
    return (title, *story.paragraphs[start : start + k]), detail


def _commentary(rng: random.Random, pool: Sequence[str], n: int) -> tuple[str, ...]:
    """``n`` paragraphs of 2-3 sentences each, no sentence used twice on one page."""
    sizes = [rng.randint(2, 3) for _ in range(n)]
    sentences = rng.sample(pool, sum(sizes))
    cut = [sum(sizes[:k]) for k in range(n + 1)]
    return tuple(" ".join(sentences[cut[k] : cut[k + 1]]) for k in range(n))


def _embed(rng: random.Random, story: Story) -> tuple[tuple[str, ...], str]:
    """A new title, 1-3 commentary paragraphs split before and after, the whole story between."""
    total = rng.randint(1, 3)
    before = rng.randint(0, total)
    title = rng.choice(_EMBED_TITLES).format(story.title)
    pre, post = _commentary(rng, _LEAD_IN, before), _commentary(rng, _COMMENTARY, total - before)
    return (title, *pre, *story.lines, *post), f"{before} before, {total - before} after"


Layout = Literal["lines", "paragraph", "mixed", "latest"]
LAYOUTS: tuple[Layout, ...] = ("lines", "paragraph", "mixed", "latest")
# how a box lists its headlines on one line, as text extraction delivers it
_BOX_SEPARATORS = (" | ", " · ", " • ", "; ", " / ", " -- ")
# and how else it may join them: with commas (headlines hold commas too), or spaces alone
_LATEST_SEPARATORS = (*_BOX_SEPARATORS, ", ", " ")
LATEST = 8  # headlines in a "latest" box


@dataclass(frozen=True)
class Style:
    """How one site's template reaches the detector: footer lines and boxes one a line or run
    together (``separator`` between a box's headlines)."""

    footer_paragraph: bool
    box_one_line: bool
    separator: str
    latest: bool = False  # one box of the site's LATEST newest headlines, newest first
    labelled: bool = True  # the box's title before its items (else the items alone)


def styles(rng: random.Random, layout: Layout, sites: int) -> list[Style]:
    """Per site, how its template's boxes and footer reach the detector under ``layout``: a line
    each (``lines``), a paragraph each (``paragraph``), one of those (``mixed``), or a box of the
    site's newest headlines on one line (``latest``)."""
    out = []
    for _ in range(sites):
        if layout == "latest":
            sep = rng.choice(_LATEST_SEPARATORS)
            labelled = rng.random() < 0.75
            out.append(Style(rng.random() < 0.75, True, sep, latest=True, labelled=labelled))
            continue
        sep = rng.choice(_BOX_SEPARATORS)
        if layout == "lines":
            out.append(Style(False, False, sep))
        elif layout == "paragraph":
            out.append(Style(True, True, sep))
        else:
            out.append(Style(rng.random() < 0.5, rng.random() < 0.5, sep))
    return out


def _box(site: Site, style: Style, title: str, items: Sequence[str]) -> list[str]:
    if style.box_one_line:
        if not style.labelled:
            return [style.separator.join(items)] if items else []
        return [f"{title}: {style.separator.join(items)}"] if items else [title]
    return [title] + [site.bullet.format(i=i + 1) + h for i, h in enumerate(items)]


def _render(
    rng: random.Random,
    site: Site,
    lines: Sequence[str],
    headlines: Sequence[str],
    style: Style = Style(False, False, " | "),
    latest: Sequence[str] = (),
) -> tuple[str, list[int]]:
    """The page text and the story's character span, parts in the site's layout order;
    ``latest``: the site's earlier headlines, for a ``latest`` style's box."""
    words = sum(len(line.split()) for line in lines)
    if style.latest:
        most, related = _box(site, style, site.most_read, list(latest[-LATEST:])[::-1]), []
    else:
        picks = rng.sample(list(headlines), min(len(headlines), 5 + rng.randint(3, 4)))
        most = _box(site, style, site.most_read, picks[:5])
        related = _box(site, style, site.related, picks[5:])
    meta = rng.choice(site.meta).format(m=max(2, round(words / 200)), h=rng.randint(2, 11))
    head = [*site.nav, meta]
    tail = [site.subscribe_fixed, rng.choice(site.subscribe), site.cookie, *site.footer]
    if style.footer_paragraph:
        tail = [" ".join(x if x.rstrip()[-1:] in ".!?" else f"{x}." for x in tail)]
    if site.layout == "before":
        head, after = [*head, *most, *related], tail
    elif site.layout == "after":
        after = [*most, *related, *tail]
    else:
        head, after = [*head, *most], [*related, *tail]
    start = sum(len(line) + 1 for line in head)
    story = "\n".join(lines)
    return "\n".join([*head, story, *after]), [start, start + len(story)]


def generate(
    *,
    seed: int = 13,
    sites: int = len(SITES),
    stories_per_site: int = 80,
    syndicated: int = 200,
    excerpts: int = 100,
    embeds: int = 100,
    same_site: int = 300,
    unrelated: int = 300,
    layout: Layout = "lines",
) -> tuple[list[PageDoc], list[PagePair]]:
    """Pages in stream order, each pair's first before its second, and the labelled pairs.

    Every site first publishes ``stories_per_site`` stories; distinct ones of those then get one
    more page each, on the least loaded other site. ``layout`` (:func:`styles`) is drawn apart from
    the seed's generator, so ``lines`` gives the pages a seed gave before layouts.
    """
    if not 2 <= sites <= len(SITES):
        raise ValueError(f"sites must be in 2..{len(SITES)}")
    rng = random.Random(seed)
    pool = stories(rng, sites * stories_per_site)
    plans = [
        _Plan(rng.random(), k // stories_per_site, story, "full", story.lines)
        for k, story in enumerate(pool)
    ]
    load = [stories_per_site] * sites
    derived: list[Form] = ["syndicated"] * syndicated
    derived += ["excerpt"] * excerpts
    derived += ["embeds"] * embeds
    if len(derived) > len(plans):
        raise ValueError("more derived pages than stories")
    for form, o in zip(derived, rng.sample(range(len(plans)), len(derived)), strict=False):
        origin = plans[o]
        others = [s for s in range(sites) if s != origin.site]
        least = min(load[s] for s in others)
        to = rng.choice([s for s in others if load[s] == least])
        load[to] += 1
        if form == "syndicated":
            lines, detail = origin.lines, f"{SITES[origin.site].host} -> {SITES[to].host}"
        elif form == "excerpt":
            lines, detail = _excerpt(rng, origin.story)
        else:
            lines, detail = _embed(rng, origin.story)
        at = max(origin.at + (1.0 - origin.at) * rng.random(), math.nextafter(origin.at, 2.0))
        plans.append(_Plan(at, to, origin.story, form, lines, detail, o))

    order = sorted(range(len(plans)), key=lambda p: plans[p].at)
    ids = {p: f"p{n:05d}" for n, p in enumerate(order)}
    titles = [
        [(p, pl.lines[0]) for p, pl in enumerate(plans) if pl.site == s] for s in range(sites)
    ]
    number = [rng.randint(1000, 90000) for _ in range(sites)]
    site_styles = styles(random.Random(f"{seed}-{layout}"), layout, sites)  # not ``rng``
    docs: list[PageDoc] = []
    printed: list[list[str]] = [[] for _ in range(sites)]  # each site's titles, stream order
    for p in order:
        plan, site = plans[p], SITES[plans[p].site]
        headlines = [t for q, t in titles[plan.site] if q != p]
        text, span = _render(
            rng, site, plan.lines, headlines, site_styles[plan.site], printed[plan.site]
        )
        printed[plan.site].append(plan.lines[0])
        number[plan.site] += rng.randint(1, 9)
        slug = "-".join(_WORD.findall(plan.lines[0].lower())[:8]) or "story"
        url = f"https://{site.host}/news/{slug}-{number[plan.site]}"
        docs.append(
            PageDoc(
                id=ids[p],
                url=url,
                source=site.host,
                text=text,
                site=site.name,
                story=plan.story.id,
                story_span=span,
                form=plan.form,
            )
        )

    pairs = [  # a derived page's form names its pair's kind
        PagePair(ids[plan.origin], ids[p], cast(PageKind, plan.form), plan.detail)
        for p, plan in enumerate(plans)
        if plan.origin is not None
    ]
    pos = {p: n for n, p in enumerate(order)}
    by_site = [[p for p in order if plans[p].site == s] for s in range(sites)]
    everyone = [(a, b) for group in by_site for i, a in enumerate(group) for b in group[i + 1 :]]
    same = rng.sample(everyone, min(same_site, len(everyone)))
    pairs += [PagePair(ids[a], ids[b], "same_site", SITES[plans[a].site].host) for a, b in same]
    chosen: set[tuple[int, int]] = set()
    tries = 0
    while len(chosen) < unrelated and tries < 100 * (unrelated + 1):
        tries += 1
        a, b = sorted(rng.sample(range(len(plans)), 2), key=pos.__getitem__)
        if plans[a].site == plans[b].site or plans[a].story.id == plans[b].story.id:
            continue
        if (a, b) not in chosen:
            chosen.add((a, b))
            detail = f"{SITES[plans[a].site].host} / {SITES[plans[b].site].host}"
            pairs.append(PagePair(ids[a], ids[b], "unrelated", detail))
    return docs, pairs


def story_part(page: PageDoc) -> str:
    """The story lines of a page (title to last paragraph), without the site's template."""
    start, end = page["story_span"]
    return page["text"][start:end]


def boilerplate(page: PageDoc) -> str:
    """The page without its story part: what the site adds around every story."""
    start, end = page["story_span"]
    return page["text"][:start] + page["text"][end:]
