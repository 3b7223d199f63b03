"""Boilerplate learned per source: a site's template stops counting once it has been seen, so a
story syndicated under two templates is found and two stories under one template are not linked.
What was left out is frozen in the record: a replay, or another worker deciding the article later,
reaches the verdict it got the first time, whatever was learned since.

Pages are real Reuters stories (one line per paragraph) inside two hand-written site templates.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from functools import cache

import pytest

from harness import data
from harness.pages import Layout, generate
from neardup.sketch import features, verify
from neardup.sketch.lines import lines_of
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.prepare import prepare
from neardup.stream.errors import IndexUnavailableError, NeardupError
from neardup.stream.index.base import StoredVerdict
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Record

LEDGER = (
    "The Daily Ledger | Home | World | Business | Markets | Opinion | Sport | Weather",
    "Independent news for the valley and beyond, every morning since 1901",
    "Most read: the council budget, the new bridge, the harvest festival, the county fair",
    "Sign up for the Ledger morning briefing and get the day's news in your inbox at six",
    "We use cookies to run this site and to measure how our pages are read. Manage settings",
    "Copyright The Daily Ledger Ltd. 14 Market Street, Valleytown. All rights reserved.",
    "Contact the newsroom | Advertise | Terms of use | Privacy policy | Corrections",
)
COURIER = (
    "Harbour Courier - Shipping, trade and the port, since 1887",
    "News | Port | Trade | Energy | Commodities | Letters | Archive | Subscribe",
    "Popular this week: dock strike talks, freight rates, the new terminal, winter storms",
    "Courier subscribers read every story first. Subscribe from two dollars a week today",
    "This site stores cookies on your device to remember your choices and for statistics",
    "Harbour Courier Media, Pier 3, Harbourside. Registered in the port district no. 40411.",
    "About us | Careers | Terms | Privacy | Cookie policy | Contact the editor",
)


@cache
def _stories(n: int = 10) -> tuple[tuple[str, ...], ...]:
    """``n`` real stories of 120-400 words, as lines (title, then one line per paragraph);
    the first ten whatever ``n``."""
    out: list[tuple[str, ...]] = []
    for doc in data.reuters():
        title, _, body = doc["text"].partition("\n")
        paragraphs = [" ".join(p.split()) for p in body.split("\n    ") if p.strip()]
        if len(paragraphs) >= 4 and 120 <= len(body.split()) <= 400:
            lines = (title, *paragraphs)
            if all(_jaccard("\n".join(lines), "\n".join(o)) < 0.05 for o in out):
                out.append(lines)
        if len(out) == n:
            return tuple(out)
    raise AssertionError("not enough distinct stories")


def _jaccard(a: str, b: str) -> float:
    return verify.jaccard(features.shingle_hashes(a), features.shingle_hashes(b))


def _page(template: Sequence[str], story: Sequence[str]) -> str:
    return "\n".join([*template[:2], *story, *template[2:]])


def _article(pid: str, site: str, template: Sequence[str], story: int) -> Article:
    return Article(pid, _page(template, _stories()[story]), url=f"https://{site}/news/{pid}")


def _site_pages() -> list[Article]:
    """Four ledger pages (stories 0-3), three courier pages (4-6), then story 3 on the courier.
    By then each site has shown its template to three earlier pages (``boilerplate_min_docs``)
    before the two pages of story 3; a page printed before that keeps its template in its
    record (see the README: the first pages of a new source are judged whole)."""
    pages = [_article(f"l{i}", "ledger.example", LEDGER, i) for i in range(4)]
    pages += [_article(f"c{i}", "courier.example", COURIER, i) for i in range(4, 7)]
    return [*pages, _article("c-syndicated", "courier.example", COURIER, 3)]


async def _verdicts(engine: Engine, articles: Sequence[Article]) -> dict[str, Verdict]:
    out = {}
    for a in articles:  # one article a batch, as a stream delivers them one by one
        (res,) = await engine.process([a])
        assert not isinstance(res, NeardupError), res
        out[a.id] = res
    return out


def test_the_stories_and_templates_are_what_the_tests_say() -> None:
    """Without learning, the templates hide a syndicated pair: far below the threshold."""
    pages = {a.id: a.text for a in _site_pages()}
    assert _jaccard(pages["l3"], pages["c-syndicated"]) < 0.6


async def test_a_template_is_learned_after_min_docs_pages_of_its_source() -> None:
    index = MemoryIndex()
    engine = Engine(index)  # boilerplate_min_docs = 3
    await _verdicts(engine, _site_pages()[:4])
    key = lines_of(LEDGER[0], "ledger.example").keys[0]
    assert await index.line_counts("default", [key]) == [4]
    records = {s: Record.decode(r) for s, r in (await index.records("default", [1, 4])).items()}
    whole, story_only = (
        prepare(engine.default_policy, [Article("x", t)])[0]
        for t in (_page(LEDGER, _stories()[3]), "\n".join(_stories()[3]))
    )
    first = prepare(engine.default_policy, [Article("x", _page(LEDGER, _stories()[0]))])[0]
    assert list(records[1].shingles) == list(first.shingles)  # page 1: nothing learned yet
    assert list(records[4].shingles) == list(story_only.shingles)  # page 4: the story alone
    assert list(records[4].shingles) != list(whole.shingles)


async def test_a_story_syndicated_under_another_template_is_found() -> None:
    on = await _verdicts(Engine(MemoryIndex()), _site_pages())
    v = on["c-syndicated"]
    assert (v.verdict, v.duplicate_of, v.cluster, v.method, v.similarity) == (
        "near_duplicate",
        "l3",
        "l3",
        "jaccard",
        1.0,
    )
    others = [v for k, v in on.items() if k != "c-syndicated"]
    assert [v.verdict for v in others] == ["original"] * 7
    off = await _verdicts(Engine(MemoryIndex(), Policy(boilerplate_min_docs=0)), _site_pages())
    assert off["c-syndicated"].verdict == "original"  # the templates hide it


async def test_two_stories_of_one_site_are_not_linked_by_its_template() -> None:
    """Short stories (two paragraphs) under a long template, measured by containment 0.6:
    without learning every page of the site is inside every other; with it, none is."""
    pages = [
        Article(
            f"l{i}",
            "\n".join([*LEDGER[:2], *_stories()[i][:2], *LEDGER[2:]]),
            url="https://ledger.example/",
        )
        for i in range(8)
    ]
    loose = Policy(measure="containment", threshold=0.6)
    off = await _verdicts(
        Engine(MemoryIndex(), Policy(measure="containment", threshold=0.6, boilerplate_min_docs=0)),
        pages,
    )
    assert sum(v.verdict == "near_duplicate" for v in off.values()) >= 6
    on = await _verdicts(Engine(MemoryIndex(), loose), pages)
    linked = [k for k, v in on.items() if v.verdict != "original"]
    # the template counts once three pages carried it: before that l2 is linked by it, and
    # l1 would be, but the two stories name other days (dates decide: related, not a copy)
    assert linked == ["l2"]
    assert [(r.id, r.changes[0].kind) for r in on["l1"].related] == [("l0", "date")]
    assert {v.cluster for k, v in on.items() if k not in ("l0", "l1", "l2")} == {
        f"l{i}" for i in range(3, 8)
    }


class _LosesVerdicts(MemoryIndex):
    """A store whose writer died after registering some articles, before storing their
    verdicts: those ids' verdicts never arrive."""

    def __init__(self, lost: set[str]) -> None:
        super().__init__()
        self.lost = lost

    async def put_verdicts(
        self, ns: str, items: Mapping[int, StoredVerdict], lines: Sequence[bytes] = (), cap: int = 0
    ) -> None:
        await super().put_verdicts(
            ns, {s: v for s, v in items.items() if v.doc_id not in self.lost}, lines, cap
        )


async def test_replays_and_other_workers_reach_the_first_verdict_whatever_was_learned_since() -> (
    None
):
    """A courier page registered once its template was known, and its verdict was lost. Learning
    goes on; then the page is replayed, and a copy of it arrives under the ledger's template: both
    are decided from the frozen record, as a single worker that never failed decided them."""
    late = [_article(f"c{i}", "courier.example", COURIER, i) for i in (7, 8, 9)]
    copy = _article("l-copy7", "ledger.example", LEDGER, 7)
    stream = [*_site_pages(), *late, copy]
    reference = await _verdicts(Engine(MemoryIndex()), stream)
    assert (reference["l-copy7"].duplicate_of, reference["l-copy7"].cluster) == ("c7", "c7")
    index = _LosesVerdicts({"c7"})
    engine = Engine(index)
    got = await _verdicts(engine, stream)
    assert await index.verdicts("default", [await index.seq_of("default", "c7") or 0]) == {}
    assert got == reference
    assert (await _verdicts(engine, late[:1]))["c7"] == reference["c7"]


async def test_line_counts_keep_two_bounded_generations() -> None:
    index = MemoryIndex()
    every = b"T" * 16
    for call in range(40):
        once = [bytes([call, i]) * 8 for i in range(3)]
        await index.add_lines("ns", [every, *once], cap=10)
        space = index._space("ns")
        assert sum(map(len, space.lines)) <= 2 * (10 + 4)
    (count,) = await index.line_counts("ns", [every])
    # four keys a call: the current generation passes ten keys at every fourth call and
    # becomes the previous one; after 40 calls it has just switched, holding 4 counts of the
    # line seen in every call (a line that keeps recurring keeps a count)
    assert count == 4
    assert await index.line_counts("ns", [bytes([0, 0]) * 8]) == [0]  # seen once, long ago


class _CutOffAtVerdicts(MemoryIndex):
    """A real MemoryIndex whose first verdict write finds the store away: the attempt that
    registered a batch is cut off before its verdicts are stored (a failover, a timeout)."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = False

    async def put_verdicts(
        self, ns: str, items: Mapping[int, StoredVerdict], lines: Sequence[bytes] = (), cap: int = 0
    ) -> None:
        if not self.cut:
            self.cut = True
            raise IndexUnavailableError("connection lost")
        await super().put_verdicts(ns, items, lines, cap)


async def test_a_batch_cut_off_before_its_verdicts_teaches_its_lines_once() -> None:
    pages = _site_pages()[:4]
    key = lines_of(LEDGER[0], "ledger.example").keys[0]
    clean = MemoryIndex()
    want = await _verdicts(Engine(clean), pages)
    cut = _CutOffAtVerdicts()
    engine = Engine(cut)
    with contextlib.suppress(IndexUnavailableError):
        await engine.process(pages)
    assert cut.cut
    got = await _verdicts(engine, pages)  # the replay, as a worker or the CLI retries it
    assert await cut.line_counts("default", [key]) == await clean.line_counts("default", [key])
    assert await cut.line_counts("default", [key]) == [4]
    assert got == want


# issue 22: a template delivered the ways text extraction delivers it. The same two sites with
# their footer as one paragraph (each line a sentence of it, plus a sign-up sentence that
# changes from page to page) and their box on one line with rotating items.
_SIGNUPS = (
    "Try the app free for a month.",
    "Gift a subscription this season.",
    "Members read without adverts.",
    "Download our puzzle book today.",
)
_ITEMS = ("budget vote delayed again", "bridge reopens to traffic", "harvest festival returns",
          "county fair draws record crowd", "school board elects a new chair")  # fmt: skip


def _paragraph_page(template: Sequence[str], story: Sequence[str], n: int, sep: str) -> str:
    """Navigation lines, a one-line box of three rotating items, the story, then one footer
    paragraph: the template's other lines as sentences and a sign-up sentence that rotates."""
    items = sep.join(_ITEMS[(n + k) % len(_ITEMS)] for k in range(3))
    box = f"{template[2].split(':')[0]}: {items}"
    sentences = [x if x.endswith(".") else f"{x}." for x in template[3:]]
    footer = " ".join([*sentences[:2], _SIGNUPS[n % len(_SIGNUPS)], *sentences[2:]])
    return "\n".join([*template[:2], box, *story, footer])


def _paragraph_pages(sep: str = " | ") -> list[Article]:
    def page(pid: str, site: str, template: Sequence[str], story: int) -> Article:
        text = _paragraph_page(
            template, _stories()[story], int(pid[-1]) if pid[-1].isdigit() else 9, sep
        )
        return Article(pid, text, url=f"https://{site}/news/{pid}")

    pages = [page(f"l{i}", "ledger.example", LEDGER, i) for i in range(4)]
    pages += [page(f"c{i}", "courier.example", COURIER, i) for i in range(4, 7)]
    return [*pages, page("c-syndicated", "courier.example", COURIER, 3)]


async def test_a_footer_in_one_paragraph_and_a_box_on_one_line_are_learned() -> None:
    """The paragraph never recurs whole (its sign-up sentence rotates) and the box line never
    does (its items rotate), so whole lines teach nothing: the passages inside them do, and the
    syndicated story is found at the defaults, every other page original."""
    for sep in (" | ", " · ", "; "):
        on = await _verdicts(Engine(MemoryIndex()), _paragraph_pages(sep))
        v = on["c-syndicated"]
        assert (v.verdict, v.duplicate_of, v.cluster) == ("near_duplicate", "l3", "l3"), sep
        assert [x.verdict for k, x in on.items() if k != "c-syndicated"] == ["original"] * 7
    off = await _verdicts(Engine(MemoryIndex(), Policy(boilerplate_min_docs=0)), _paragraph_pages())
    assert off["c-syndicated"].verdict == "original"  # the templates hide it


async def test_whole_lines_alone_do_not_learn_a_footer_paragraph() -> None:
    """What the passages buy: counted as whole lines only (no source named: the namespace is
    one source, whose passages are never counted), the same pages hide the copy."""
    pages = [Article(a.id, a.text) for a in _paragraph_pages()]  # no url: no source
    got = await _verdicts(Engine(MemoryIndex()), pages)
    assert got["c-syndicated"].verdict == "original"


def _early_original_pages() -> list[Article]:
    """The ledger prints story 3 first, before its template is known (its record keeps the
    template), then three other stories; the courier prints three stories, then story 3."""
    pages = [_article("l-first", "ledger.example", LEDGER, 3)]
    pages += [_article(f"l{i}", "ledger.example", LEDGER, i) for i in range(3)]
    pages += [_article(f"c{i}", "courier.example", COURIER, i) for i in range(4, 7)]
    return [*pages, _article("c-syndicated", "courier.example", COURIER, 3)]


async def test_a_story_a_site_printed_before_its_template_was_learned_is_found() -> None:
    """The first page's record keeps the ledger's template: the courier's copy, without its
    own, compared with it falls below the threshold. Compared with that page less what the
    ledger repeats *now* (what is template in the earlier page's own source), it is a copy."""
    got = await _verdicts(Engine(MemoryIndex()), _early_original_pages())
    v = got["c-syndicated"]
    assert (v.verdict, v.duplicate_of, v.cluster, v.similarity) == (
        "near_duplicate",
        "l-first",
        "l-first",
        1.0,
    )
    assert [x.verdict for k, x in got.items() if k != "c-syndicated"] == ["original"] * 7


async def test_a_short_story_of_short_lines_is_never_taken_for_a_box() -> None:
    """Pages whose story is three short lines between the template's: a box's new items stand
    so too, but what would leave the page nothing is the story, and two stories of one site
    stay apart (measured whole, their template alone would make them alike)."""
    briefs = [
        ("Council approves the new budget", "The vote was seven to two on Monday night.",
         "Spending on roads rises by a tenth."),
        ("Bridge reopens after repairs", "Traffic returned on Tuesday morning at six.",
         "The work took eleven weeks in all."),
        ("Harvest festival draws a crowd", "Organisers counted nine thousand visitors.",
         "Next year's dates are set for October."),
        ("School board picks a new chair", "The board met late on Wednesday evening.",
         "She takes office at the start of term."),
        ("Library extends its opening hours", "Doors will open at eight on weekdays.",
         "The change follows a survey of readers."),
    ]  # fmt: skip
    pages = [
        Article(f"b{i}", _page(LEDGER, story), url=f"https://ledger.example/b{i}")
        for i, story in enumerate(briefs)
    ]
    loose = Policy(measure="containment", threshold=0.6)
    got = await _verdicts(Engine(MemoryIndex(), loose), pages)
    # before the template counts (three pages), b1 and b2 are inside b0 by it; after, none
    assert [v.verdict for v in got.values()][3:] == ["original"] * (len(pages) - 3)


def _syndicated_early(
    layout: Layout, first: str = "p00049", second: str = "p00166"
) -> tuple[list[Article], str, str]:
    """The generated pages (``harness.pages``) up to the syndicated copy of a story whose
    first page came before its site's template was learned (``p00049`` on pinecrestherald,
    copied as ``p00166`` on copperfieldtimes), each page with its url and source."""
    docs, pairs = generate(seed=13, layout=layout)
    assert any((p.first, p.second, p.kind) == (first, second, "syndicated") for p in pairs)
    upto = next(i for i, d in enumerate(docs) if d["id"] == second)
    pages = [Article(d["id"], d["text"], url=d["url"], source=d["source"]) for d in docs]
    return pages[: upto + 1], first, second


@pytest.mark.parametrize("layout", ["paragraph", "mixed"])
@pytest.mark.parametrize("batch", [1, 16, 100])
async def test_a_page_registered_with_its_template_is_found_through_its_anchors(
    layout: Layout, batch: int
) -> None:
    """The first page was registered before its site's template was learned: its MinHash
    bands and SimHash tables are of story and template, the copy's (and its whole text's) of
    the story and another template, and they share none. Its anchors, the smallest
    fingerprints of its new sentences, include the story's, and so do the copy's: the two meet,
    and the first page less what its site repeats now is what the copy is a copy of. The same
    with the pages one by one, in batches, or all in one (what the batch's own pages taught
    counts for the earlier page's view as it does for the copy's sketch)."""
    pages, first, second = _syndicated_early(layout)
    index = MemoryIndex()
    engine = Engine(index)
    got: dict[str, Verdict] = {}
    for lo in range(0, len(pages), batch):
        part = pages[lo : lo + batch]
        for a, res in zip(part, await engine.process(part), strict=True):
            assert not isinstance(res, NeardupError), res
            got[a.id] = res
    v = got[second]
    assert (v.verdict, v.duplicate_of, v.cluster) == ("near_duplicate", first, first)
    assert v.similarity is not None and v.similarity >= Policy().threshold
    # not through the bands or tables: the anchors (the buckets after a text's own) are
    # shared (and the story's passages, which a page's template cannot hide either)
    by_id = {a.id: a for a in pages}
    plain = len(prepare(Policy(), [Article("x", by_id[first].text)])[0].buckets)
    sketch = Policy().bands_rows[0] + len(Policy().table_design.tables)  # bands, tables
    seqs = [await index.seq_of("default", k) for k in (first, second)]
    raw = await index.records("default", [s for s in seqs if s is not None])
    old, new = (Record.decode(raw[s]) for s in seqs if s is not None)
    whole = prepare(Policy(), [by_id[second]])[0].buckets
    assert not set(old.buckets[:sketch]) & (set(new.buckets[:sketch]) | set(whole[:sketch]))
    assert set(old.buckets[plain:]) & set(new.buckets[plain:])
    # and every other page of the copy's site stays apart from the first page
    site = by_id[second].source_name()
    assert all(
        x.duplicate_of != first
        for k, x in got.items()
        if by_id[k].source_name() == site and k != second
    )


async def test_an_earlier_pages_view_counts_what_the_batch_itself_taught() -> None:
    """The pages of the early-page stream in one batch: none of their lines is in the index
    yet when the copy is decided, but the batch's own earlier pages taught the ledger's
    template (as they taught the courier's to the copy's sketch), so the first page less its
    template is what the copy copies, as one page a call."""
    pages = _early_original_pages()
    got = dict(zip([a.id for a in pages], await Engine(MemoryIndex()).process(pages), strict=True))
    one = await _verdicts(Engine(MemoryIndex()), pages)
    assert got == one
    v = got["c-syndicated"]
    assert isinstance(v, Verdict) and (v.verdict, v.duplicate_of) == ("near_duplicate", "l-first")


NEW_LINE = "Get the Courier app today"


async def test_a_site_that_prints_copies_learns_its_own_new_lines_from_them() -> None:
    """A close copy teaches the lines that are not in what it copies (its site's template),
    never the story's: a site that prints many syndicated stories learns a new template line
    (or a box of its latest headlines) from those pages too. The courier adds a line to its
    template, then prints three copies of ledger stories with it: the line is learned from
    the copies (three counts), their story lines are not (none), and the fourth copy leaves
    the new line out, the story alone: similarity 1.0."""
    index = MemoryIndex()
    engine = Engine(index)
    ledger = (0, 1, 2, 3, 7, 8, 9)  # its template is learned from the fourth page on
    pages = [_article(f"l{i}", "ledger.example", LEDGER, i) for i in ledger]
    pages += [_article(f"c{i}", "courier.example", COURIER, i) for i in range(4, 7)]
    renewed = (*COURIER, NEW_LINE)
    pages += [_article(f"c-copy{i}", "courier.example", renewed, i) for i in (3, 7, 8)]
    got = await _verdicts(engine, pages)
    for i in (3, 7, 8):
        v = got[f"c-copy{i}"]
        assert (v.verdict, v.duplicate_of) == ("near_duplicate", f"l{i}")
        assert v.similarity is not None and v.similarity >= 0.95  # close: its story is l{i}'s
    count = lines_of(NEW_LINE, "courier.example").keys
    story = lines_of("\n".join(_stories()[3]), "courier.example", min_tokens=2).keys
    assert await index.line_counts("default", count) == [3]
    assert await index.line_counts("default", list(story)) == [0] * len(story)
    (v,) = (await _verdicts(engine, [_article("c-copy9", "courier.example", renewed, 9)])).values()
    assert (v.verdict, v.duplicate_of, v.similarity) == ("near_duplicate", "l9", 1.0)


# A box of each site's newest headlines (the pages it printed before, newest first), on one
# line, joined as text extraction joins them: a separator, commas (headlines hold commas too),
# or spaces alone; with its title or without. The ledger prints stories 0-5 and 10-13, the
# courier 6-9, 14 and 15, then copies of the ledger's stories 11, 12 and 13: by the third copy
# its box's older items are learned, its newest three are not (two are copies' own titles,
# which copies do not teach), and the box goes whole.
LATEST_JOINS = (" | ", ", ", " ")
COPIED = (11, 12, 13)


def _latest_pages(sep: str, labelled: bool = True) -> list[Article]:
    printed: dict[str, list[str]] = {"ledger.example": [], "courier.example": []}

    def page(pid: str, site: str, template: Sequence[str], story: int) -> Article:
        lines = _stories(16)[story]
        items = sep.join(printed[site][-8:][::-1])
        box = f"Latest, {template[0].split(' ')[0]}: {items}" if labelled else items
        sentences = [x if x.endswith(".") else f"{x}." for x in template[3:]]
        footer = " ".join([*sentences[:2], _SIGNUPS[len(printed[site]) % 4], *sentences[2:]])
        printed[site].append(lines[0])
        text = "\n".join([template[0], *lines, *([box] if items else []), footer])
        return Article(pid, text, url=f"https://{site}/news/{pid}")

    pages = [page(f"l{i}", "ledger.example", LEDGER, i) for i in (0, 1, 2, 3, 4, 5, 10, 11, 12, 13)]
    pages += [page(f"c{i}", "courier.example", COURIER, i) for i in (6, 7, 8, 9, 14, 15)]
    return pages + [page(f"c-copy{i}", "courier.example", COURIER, i) for i in COPIED]


@pytest.mark.parametrize("labelled", [True, False])
@pytest.mark.parametrize("sep", LATEST_JOINS)
async def test_a_box_of_the_sites_latest_headlines_is_left_out_however_it_is_joined(
    sep: str, labelled: bool
) -> None:
    got = await _verdicts(Engine(MemoryIndex()), _latest_pages(sep, labelled))
    copies = {k: (v.verdict, v.duplicate_of) for k, v in got.items() if k.startswith("c-copy")}
    assert copies == {f"c-copy{i}": ("near_duplicate", f"l{i}") for i in COPIED}
    assert got["c-copy13"].similarity == 1.0  # the story alone: the box and footer left out
    assert {v.verdict for k, v in got.items() if not k.startswith("c-copy")} == {"original"}


def _wire(story: Sequence[str], width: int = 8) -> list[str]:
    """A story as a newswire sends it: short lines of ``width`` words (each may be template)."""
    words = " ".join(story).split()
    return [" ".join(words[i : i + width]) for i in range(0, len(words), width)]


@cache
def _zh_lines() -> tuple[str, ...]:
    """Fourteen Chinese reviews of 12 to 30 characters, a line each (a character a token)."""
    found = (t for r in data.zh_reviews() if 12 <= len(t := "".join(r["text"].split())) <= 30)
    return tuple(itertools.islice(found, 14))


LAYOUTS = {
    "wire of 5 words": lambda: _wire(_stories()[3], 5),
    "wire of 8 words": lambda: _wire(_stories()[2], 8),
    "wire of 12 words": lambda: _wire(_stories()[4], 12),
    "Chinese lines": lambda: list(_zh_lines()),
}


def _edit(line: str, kind: str, tag: str) -> str:
    """One edit in the middle of a line: a word (a character of a CJK line) substituted,
    inserted or deleted."""
    if " " not in line:
        i = len(line) // 2
        return {"sub": line[:i] + "变" + line[i + 1 :], "ins": line[:i] + "新" + line[i:]}.get(
            kind, line[:i] + line[i + 1 :]
        )
    words = line.split()
    i = len(words) // 2
    if kind == "sub":
        words[i] = f"changed{tag}"
    elif kind == "ins":
        words.insert(i, f"added{tag}")
    else:
        del words[i]
    return " ".join(words)


def _edited(lines: Sequence[str], every: int, offset: int, kind: str) -> str:
    """The story with every ``every``-th line edited, from ``offset``."""
    out = list(lines)
    for i in range(offset % every, len(out), every):
        out[i] = _edit(out[i], kind, f"{i}x{offset}")
    return "\n".join(out)


@pytest.mark.parametrize("every", [5, 3], ids=["a line in five", "a line in three"])
@pytest.mark.parametrize("kind", ["sub", "ins", "del"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
async def test_without_a_source_a_storys_copies_never_make_it_template(
    layout: str, kind: str, every: int
) -> None:
    """A namespace of sourceless texts is one source: five edited copies of one story, near
    copies (which teach when a site sends them) or copies edited past the threshold (originals
    that share most of its lines), whatever the layout and the edit, do not make the lines they
    share with it template, so the last copy keeps the whole story in its sketch."""
    index = MemoryIndex()
    engine = Engine(index)  # boilerplate_min_docs = 3
    story = LAYOUTS[layout]()
    texts = ["\n".join(story), *(_edited(story, every, k, kind) for k in range(1, 6))]
    got = await _verdicts(engine, [Article(f"w{k}", t) for k, t in enumerate(texts)])
    # enough copies that teach under the rule for a named source (originals, and near copies
    # under 0.95) to make the story template with it: with the story, boilerplate_min_docs
    teaching = [v for v in list(got.values())[1:] if (v.similarity or 0.0) < 0.95]
    assert len(teaching) >= engine.default_policy.boilerplate_min_docs - 1
    assert all(v.verdict != "duplicate" for v in teaching)
    policy = engine.default_policy
    shared = [line for line in story if sum(line in t.split("\n") for t in texts) >= 4]
    assert len(shared) >= len(story) // 3
    keys = [k for line in shared for k in lines_of(line, "", policy.seed, min_tokens=2).keys]
    assert max(await index.line_counts("default", keys)) < policy.boilerplate_min_docs
    last = Record.decode((await index.records("default", [6]))[6])
    whole = prepare(policy, [Article("x", texts[-1])])[0]
    assert list(last.shingles) == list(whole.shingles)


async def test_without_a_source_a_footer_that_different_stories_share_is_learned() -> None:
    """The rule above keeps a sourceless namespace's own template: different stories under
    one footer teach it, and the fourth leaves it out of its sketch."""
    index = MemoryIndex()
    engine = Engine(index)
    footer = list(LEDGER[4:])
    pages = [Article(f"s{k}", "\n".join([*_wire(_stories()[k]), *footer])) for k in range(4)]
    got = await _verdicts(engine, pages)
    assert {v.verdict for v in got.values()} == {"original"}
    policy = engine.default_policy
    keys = [lines_of(line, "", policy.seed, min_tokens=2).keys[0] for line in footer]
    assert await index.line_counts("default", keys) == [4, 4, 4]
    last = Record.decode((await index.records("default", [4]))[4])
    story = prepare(policy, [Article("x", "\n".join(_wire(_stories()[3])))])[0]
    assert list(last.shingles) == list(story.shingles)


@pytest.mark.parametrize("paragraphs", [2, 3, 4])
async def test_without_a_source_a_template_of_most_lines_is_learned(paragraphs: int) -> None:
    """Pages of a site sent without a source, under a template that is most of their lines:
    two pages share more than half their lines and much of their text, yet their other lines
    are other stories, so they teach the template (unlike a story's edited copies above)."""
    index = MemoryIndex()
    engine = Engine(index)
    pages = [Article(f"p{k}", _page(LEDGER, _stories()[k][:paragraphs])) for k in range(6)]
    got = await _verdicts(engine, pages)
    assert {v.verdict for v in got.values()} == {"original"}
    policy = engine.default_policy
    keys = [lines_of(line, "", policy.seed, min_tokens=2).keys[0] for line in LEDGER]
    assert min(await index.line_counts("default", keys)) == len(pages)
    last = Record.decode((await index.records("default", [6]))[6])
    story = prepare(policy, [Article("x", "\n".join(_stories()[5][:paragraphs]))])[0]
    assert list(last.shingles) == list(story.shingles)


def test_units_kept_for_later_calls_are_what_a_fresh_reading_gives() -> None:
    """:func:`boilerplate.units` keeps recent texts' units: asked again (the text as another
    object, as a record decodes it), with another policy or source, or for a text too long to
    keep, it gives what lines_of and passages_of give."""
    from neardup.sketch.lines import passages_of
    from neardup.stream.engine import boilerplate

    policies = [Policy(), Policy(boilerplate_tokens=5, seed=7)]
    texts = [r["text"] for r in data.reuters()[:300]] + [r["text"] for r in data.zh_reviews()[:50]]
    texts.append("Home | News\n" + "a long story line " * 1000 + "\nHome | News")
    for _ in range(2):
        for text in texts:
            again = "".join(list(text))  # equal, not the same object
            for policy in policies:
                args = {"min_tokens": 2, "max_tokens": policy.boilerplate_tokens}
                assert boilerplate.units(again, "", policy) == lines_of(
                    text, "", policy.seed, **args
                )
                assert boilerplate.units(again, "wire", policy) == passages_of(
                    text, "wire", policy.seed, **args
                )
