"""Seeded web pages: real Reuters stories wrapped in the templates of synthetic news sites.

A detector that compares whole pages sees two kinds of shared text: the story, and the site's
boilerplate (navigation, "most read" and "related" boxes, newsletter and cookie lines, footer).
The first makes a copy, the second does not. The pairs here say which is which:

* ``syndicated``: one story on two sites, each page wrapped in its own site's template.
* ``same_site``: two different stories on one site, sharing nothing but the template.
* ``excerpt``: a later page on another site whose story part is 2-4 consecutive paragraphs of an
  earlier story under a new title: its story text lies inside the earlier one.
* ``embeds``: a later page on another site whose story part is the whole earlier story with
  commentary around it: its story text contains the earlier one.
* ``unrelated``: different stories on different sites.

Each story has at most two pages: the original, and at most one syndicated copy, excerpt or
embedding on another site. So two pages are related exactly when their ``story`` is the same,
and the pairs of those kinds are the complete ground truth, not a sample. Stories whose text
overlaps an already chosen story (the wire's re-sends and corrections) are left out, as are
stories that are mostly a table, so that different ``story`` ids really are different text.

Everything comes from one ``random.Random(seed)``: a seed names a data set.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypedDict

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
    """``story`` is the Reuters id the page's story comes from (for every form); ``story_span``
    the ``[start, end)`` characters of the story part (title to last paragraph) in ``text``;
    ``form`` says whether the page is an original, a syndicated copy, an excerpt or an embedding.
    """

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
    """One site's template. Fixed lines are identical on every page; ``meta`` and ``subscribe``
    vary (one variant per page), as do the box headlines. ``layout`` places the boxes: all
    ``before`` the story, all ``after`` it, or ``split`` (most read before, related after)."""

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

SITES: tuple[Site, ...] = (
    Site(
        name="The Daily Ledger",
        host="dailyledger.example",
        nav=(
            "The Daily Ledger - Business news you can count on",
            "Home | Markets | Companies | Economy | Energy | Opinion | Podcasts | Sign in",
        ),
        meta=("Markets | {m} min read", "Companies | {m} min read", "Economy | {m} min read"),
        most_read="Most read",
        related="Related coverage",
        bullet="{i}. ",
        layout="after",
        subscribe_fixed="Get the Morning Ledger in your inbox before the opening bell, free.",
        subscribe=(
            "Subscribe today and save 40 percent on your first year of unlimited access.",
            "Already a subscriber? Sign in to read every story and the full archive.",
            "Support independent business journalism: become a member from three dollars a week.",
        ),
        cookie=(
            "We use cookies to improve your experience, analyse traffic and show relevant "
            "advertising. By continuing to browse you agree to our use of cookies."
        ),
        footer=(
            "Copyright The Daily Ledger Media Group. All rights reserved.",
            "The Daily Ledger, 14 Foundry Lane, Eastport, EP4 2QT.",
            "Terms of use | Privacy notice | Cookie settings | Accessibility | Contact us",
            "Newsroom tips: newsdesk@dailyledger.example | Advertising: ads@dailyledger.example",
            "Market data delayed by at least 15 minutes.",
        ),
    ),
    Site(
        name="Harbour Post",
        host="harbourpost.example",
        nav=(
            "HARBOUR POST",
            "News World Business Money Sport Culture Travel Weather",
            "Independent news from the waterfront and the wider world",
        ),
        meta=("By the Harbour Post business desk", "By our markets reporter", "From the wires"),
        most_read="Popular right now",
        related="More on this story",
        bullet="- ",
        layout="before",
        subscribe_fixed="Sign up for The Tide, our free evening newsletter.",
        subscribe=(
            "Our journalism is funded by readers like you. Please consider a small donation.",
            "Enjoying the Harbour Post? Subscribe for full digital access and the print edition.",
        ),
        cookie=(
            "This site uses cookies. Some are essential, others help us understand how you use "
            "the site. You can change your choices at any time in Cookie preferences."
        ),
        footer=(
            "(c) Harbour Post Ltd. Registered in Westmarsh, company number 0481123.",
            "Harbour Post, Pier House, 2 Quay Street, Westmarsh.",
            "About us | Work for us | Terms and conditions | Privacy policy | Complaints",
            "Write to the editor: letters@harbourpost.example",
        ),
    ),
    Site(
        name="Meridian Wire",
        host="meridianwire.example",
        nav=(
            "Meridian Wire | Markets, money and the world at noon",
            "Top stories / Stocks / Bonds / Currencies / Commodities / Tech / Video / Newsletters",
        ),
        meta=("Updated {h} hours ago", "Published {h} hours ago", "Last updated {h} hours ago"),
        most_read="Trending on Meridian",
        related="Read next",
        bullet="> ",
        layout="split",
        subscribe_fixed="Meridian Pro: real-time quotes, alerts and analysis. Start a free trial.",
        subscribe=(
            "Get our Midday Briefing, the five things markets are talking about, every weekday.",
            "Download the Meridian Wire app for breaking alerts on your phone.",
            "Listen to the Meridian Markets podcast wherever you get your podcasts.",
        ),
        cookie=(
            "Meridian Wire and its partners store and access information on your device to "
            "personalise content and ads. Manage your choices or accept all."
        ),
        footer=(
            "Copyright Meridian Wire Inc. Quotes and data for information only, not advice.",
            "Meridian Wire Inc, 900 Commerce Plaza, Suite 41, Lakeside City.",
            "Terms of service | Privacy | Do not sell my information | Sitemap | Help centre",
            "Corrections and clarifications: standards@meridianwire.example",
            "Follow us on social media for the latest headlines.",
        ),
    ),
    Site(
        name="The Northgate Courier",
        host="northgatecourier.example",
        nav=(
            "The Northgate Courier - Serving Northgate and the valley since 1911",
            "Local | Region | Nation | World | Business | Farming | Obituaries | Classifieds",
        ),
        meta=("Courier staff and agencies", "Courier business desk", "Agency report"),
        most_read="Most read today",
        related="You may also like",
        bullet="",
        layout="after",
        subscribe_fixed="Home delivery from just two dollars a week. Call our subscriber line.",
        subscribe=(
            "Read the full print edition online with the Courier e-paper.",
            "Get local news first: sign up for the Courier morning email.",
        ),
        cookie=(
            "We and our partners use cookies to deliver our services and to measure how our "
            "pages are used. Find out more in our cookie policy."
        ),
        footer=(
            "Copyright The Northgate Courier. Part of Valley Press Holdings.",
            "The Northgate Courier, Market Square, Northgate NG1 7AB.",
            "Contact the newsroom | Advertise with us | Terms | Privacy | Reader guidelines",
            "Telephone newsroom: 0100 555 0134. Subscriptions: 0100 555 0199.",
            "This newspaper subscribes to the Independent Press Standards code.",
        ),
    ),
    Site(
        name="Copperfield Times",
        host="copperfieldtimes.example",
        nav=(
            "Copperfield Times",
            "Trusted reporting, every day",
            "Latest  Business  Politics  Science  Opinion  Lifestyle  Puzzles",
        ),
        meta=("Business", "Economy", "International", "Markets"),
        most_read="Editor's picks",
        related="Related articles",
        bullet="* ",
        layout="split",
        subscribe_fixed="Unlock every article with a Copperfield Times digital subscription.",
        subscribe=(
            "New: try the Times Weekly Digest, a free summary of the week's biggest stories.",
            "Gift a subscription to someone who loves good journalism.",
            "Students and teachers read free with a school email address.",
        ),
        cookie=(
            "Your privacy matters. We use cookies and similar technologies for site functions, "
            "statistics and marketing. Select Accept to agree or Settings to choose."
        ),
        footer=(
            "Copyright Copperfield Times Company. All rights reserved.",
            "Copperfield Times, 77 Printers Row, Copperfield, CF3 9XZ.",
            "Terms of sale | Terms of use | Privacy policy | Cookie policy | Contact",
            "Reprints and permissions: rights@copperfieldtimes.example",
            "Views expressed in opinion pieces and letters are those of their authors.",
            "Found an error? Tell us at corrections@copperfieldtimes.example and we will fix it.",
        ),
    ),
    Site(
        name="Global Desk Review",
        host="globaldesk.example",
        nav=(
            "GLOBAL DESK REVIEW - The week's economy, explained",
            "Economy | Trade | Central banks | Energy | Asia | Europe | Americas | Data",
            "Search | Log in | Subscribe",
        ),
        meta=("Reading time: {m} minutes", "Estimated reading time: {m} min"),
        most_read="What others are reading",
        related="Further reading",
        bullet="{i}) ",
        layout="before",
        subscribe_fixed="Join readers in over 90 countries: subscribe to Global Desk Review.",
        subscribe=(
            "The Review's weekly data chart pack lands in your inbox every Friday.",
            "Register for free to read three articles a month.",
        ),
        cookie=(
            "Global Desk Review uses cookies and local storage. Strictly necessary cookies are "
            "always on; analytics and advertising cookies only with your consent."
        ),
        footer=(
            "Copyright Global Desk Review Publishing. Registered office: 5 Canal Walk, Riverton.",
            "Editorial enquiries: editors@globaldesk.example",
            "Terms and conditions | Privacy statement | Modern slavery statement | Careers",
            "Global Desk Review is not responsible for the content of external sites.",
        ),
    ),
    Site(
        name="Pinecrest Herald",
        host="pinecrestherald.example",
        nav=(
            "Pinecrest Herald - Your local paper, now online",
            "Home - News - Business - Schools - Community - Events - Sports - Weather - Jobs",
        ),
        meta=("Herald wire services", "From Herald news services", "Herald staff report"),
        most_read="Popular in the Herald",
        related="Around the Herald",
        bullet="- ",
        layout="after",
        subscribe_fixed="Breaking news alerts: text HERALD to our number to sign up.",
        subscribe=(
            "Subscribe to the Herald for 99 cents for your first month.",
            "Like what you read? Share this article with a friend.",
            "Advertise your business with the Herald: reach readers across the county.",
        ),
        cookie=(
            "By using this website you accept the use of cookies as described in our privacy "
            "policy. Close this message to continue."
        ),
        footer=(
            "Copyright Pinecrest Herald Newspapers LLC.",
            "Pinecrest Herald, 310 Main Street, Pinecrest.",
            "Customer service | Submit a story tip | Terms of service | Privacy policy",
            "Office hours: Monday to Friday, 8 am to 5 pm.",
            "Email: frontdesk@pinecrestherald.example",
        ),
    ),
    Site(
        name="Ironbridge Financial News",
        host="ironbridgefn.example",
        nav=(
            "Ironbridge Financial News - Commodities, energy and trade",
            "Grains | Metals | Oil and gas | Shipping | Currencies | Rates | Calendar | Research",
        ),
        meta=("Ironbridge newsroom | {m} min", "Commodities desk | {m} min", "Energy desk"),
        most_read="Top stories this week",
        related="Related news",
        bullet="{i}. ",
        layout="before",
        subscribe_fixed="Ironbridge Terminal: prices, charts and the full newswire for traders.",
        subscribe=(
            "Request a demo of Ironbridge Terminal for your trading desk.",
            "Free weekly: the Ironbridge Commodities Outlook, every Monday.",
        ),
        cookie=(
            "We use necessary cookies to make our site work and optional cookies to improve it. "
            "We will not set optional cookies unless you enable them."
        ),
        footer=(
            "Copyright Ironbridge Financial News Ltd. Information is not investment advice.",
            "Ironbridge Financial News, 1 Exchange Court, Ironbridge IB2 4LP.",
            "Legal notices | Privacy policy | Cookie policy | Data licensing | Contact sales",
            "Press office: press@ironbridgefn.example",
        ),
    ),
)

_EXCERPT_TITLES = ("Excerpt: {}", "In brief: {}", "Digest: {}", "From the wire: {}")
_EMBED_TITLES = ("Analysis: {}", "Comment: {}", "What it means: {}", "Our view: {}")
_LEAD_IN = (  # commentary that introduces the quoted story
    "The report below adds to a growing list of signals that investors will watch closely.",
    "We reproduce the agency story in full because it matters to many of our readers.",
    "The full agency report follows, unedited apart from the headline.",
    "Readers have asked us to explain what this means for households and small firms.",
    "Our correspondents have been following the story for several weeks.",
    "This is one of a series of pieces on the state of the economy.",
    "Those who follow the sector closely will not be surprised by the news.",
    "The wider context is a year of uncertainty for trade and for prices.",
    "The numbers in the report deserve a careful reading before anyone draws firm conclusions.",
)
_COMMENTARY = (  # commentary that reads well after it
    "Not everyone on our desk agrees with the conclusions drawn by the officials quoted.",
    "Critics say the move comes too late, while supporters call it overdue.",
    "It is worth remembering that similar announcements have been revised before.",
    "What happens next will depend on decisions that have not yet been taken.",
    "Analysts we spoke to were divided on how lasting the effect will be.",
    "We will update this page as more details become available.",
    "For now, the market reaction has been muted, but that could change quickly.",
    "Several questions remain unanswered, and officials declined to comment further.",
    "Our own reporting suggests the picture on the ground is more mixed.",
    "Whatever the outcome, the episode shows how quickly sentiment can turn.",
    "Let us know what you think in the comments below.",
    "The wider context is a year of uncertainty for trade and for prices.",
)


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
    if _tabular(body):
        return None
    return Story(story["id"], title, paragraphs)


def _shingles(story: Story) -> set[str]:
    words = _WORD.findall(" ".join(story.paragraphs).lower())
    return {" ".join(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)}


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
        grams = _shingles(story)
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


_PAIR_OF: dict[Form, PageKind] = {
    "syndicated": "syndicated",
    "excerpt": "excerpt",
    "embeds": "embeds",
}


def _slug(title: str) -> str:
    return "-".join(_WORD.findall(title.lower())[:8]) or "story"


def _later(rng: random.Random, at: float) -> float:
    return max(at + (1.0 - at) * rng.random(), math.nextafter(at, 2.0))


Layout = Literal["lines", "paragraph", "mixed", "latest"]
LAYOUTS: tuple[Layout, ...] = ("lines", "paragraph", "mixed", "latest")
# how a box lists its headlines on one line, as text extraction delivers it
_BOX_SEPARATORS = (" | ", " · ", " • ", "; ", " / ", " -- ")
# and how else it may join them: with commas (headlines hold commas too), or spaces alone
_LATEST_SEPARATORS = (*_BOX_SEPARATORS, ", ", " ")
LATEST = 8  # headlines in a "latest" box


@dataclass(frozen=True)
class Style:
    """How one site's template reaches the detector: its footer (with the subscription and
    cookie lines) a line each or as one paragraph, its boxes a headline a line or all on one
    line after their title (``separator`` between headlines)."""

    footer_paragraph: bool
    box_one_line: bool
    separator: str
    latest: bool = False  # one box of the site's LATEST newest headlines, newest first
    labelled: bool = True  # the box's title before its items (else the items alone)


def styles(rng: random.Random, layout: Layout, sites: int) -> list[Style]:
    """Per site: ``lines`` every site a line each (the layout of a site's HTML), ``paragraph``
    every site's footer one paragraph and boxes on one line (what extraction of a page often
    gives), ``mixed`` each site one of the four combinations, ``latest`` one box on one line
    that lists the site's newest headlines (joined by a separator, commas or spaces; with
    its title, or for a quarter of the sites without), the footer one paragraph for three
    quarters of the sites."""
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
    """The page text and the story's character span: header, boxes and story as the site's
    layout orders them, footer last. ``latest``: the site's headlines before this page, in
    stream order (for a ``latest`` style, whose one box lists the newest of them)."""
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

    Every site first publishes ``stories_per_site`` stories of its own; ``syndicated``,
    ``excerpts`` and ``embeds`` of those stories (distinct ones) then get one more page each, on
    the least loaded other site, later in the stream. ``same_site`` and ``unrelated`` pairs are
    drawn uniformly among the pairs of pages that qualify. ``layout``: how the sites' templates
    reach the detector (:func:`styles`; ``lines`` draws nothing, so a seed gives the pages it
    gave before layouts).
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
        plans.append(_Plan(_later(rng, origin.at), to, origin.story, form, lines, detail, o))

    order = sorted(range(len(plans)), key=lambda p: plans[p].at)
    ids = {p: f"p{n:05d}" for n, p in enumerate(order)}
    titles: list[list[tuple[int, str]]] = [[] for _ in range(sites)]
    for p, plan in enumerate(plans):
        titles[plan.site].append((p, plan.lines[0]))
    number = [rng.randint(1000, 90000) for _ in range(sites)]
    site_styles = (
        [Style(False, False, " | ")] * sites
        if layout == "lines"
        else styles(random.Random(f"{seed}-{layout}"), layout, sites)
    )
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
        url = f"https://{site.host}/news/{_slug(plan.lines[0])}-{number[plan.site]}"
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

    pairs: list[PagePair] = []
    for p, plan in enumerate(plans):
        if plan.origin is not None:
            kind = _PAIR_OF[plan.form]
            pairs.append(PagePair(ids[plan.origin], ids[p], kind, plan.detail))
    pos = {p: n for n, p in enumerate(order)}
    by_site: list[list[int]] = [[] for _ in range(sites)]
    for p in order:
        by_site[plans[p].site].append(p)
    everyone = [(a, b) for group in by_site for i, a in enumerate(group) for b in group[i + 1 :]]
    for a, b in rng.sample(everyone, min(same_site, len(everyone))):
        pairs.append(PagePair(ids[a], ids[b], "same_site", SITES[plans[a].site].host))
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
