"""The page generator: deterministic per seed, and each pair kind has the property it claims."""

from __future__ import annotations

import random
import re
import statistics
from collections import Counter, defaultdict

import pytest

from harness import pages
from harness.pages import SITES, PageDoc, PagePair, boilerplate, story_part

Generated = tuple[list[PageDoc], list[PagePair]]
_BULLET = re.compile(r"^(?:\d+[.)] |[-*>] )")
SMALL = {"sites": 3, "stories_per_site": 20, "syndicated": 6, "excerpts": 4, "embeds": 4}


@pytest.fixture(scope="module")
def generated() -> Generated:
    return pages.generate(seed=3)


@pytest.fixture(scope="module")
def by_id(generated: Generated) -> dict[str, PageDoc]:
    return {d["id"]: d for d in generated[0]}


def _of(pairs: list[PagePair], kind: str) -> list[PagePair]:
    return [p for p in pairs if p.kind == kind]


def test_deterministic_per_seed() -> None:
    assert pages.generate(seed=5, **SMALL) == pages.generate(seed=5, **SMALL)
    assert pages.generate(seed=5, **SMALL) != pages.generate(seed=6, **SMALL)


def test_sizes_ids_and_urls(generated: Generated) -> None:
    docs, pairs = generated
    assert len({d["id"] for d in docs}) == len(docs) == 8 * 80 + 200 + 100 + 100
    assert len({d["url"] for d in docs}) == len(docs)
    assert Counter(p.kind for p in pairs) == {
        "syndicated": 200,
        "same_site": 300,
        "excerpt": 100,
        "embeds": 100,
        "unrelated": 300,
    }
    assert len(set(pairs)) == len(pairs)
    hosts = {s.name: s.host for s in SITES}
    for d in docs:
        assert d["source"] == hosts[d["site"]]
        assert d["url"].startswith(f"https://{d['source']}/news/")
    per_site = Counter(d["site"] for d in docs)
    assert len(per_site) == 8
    assert all(120 <= n <= 150 for n in per_site.values())


def test_first_precedes_second(generated: Generated) -> None:
    docs, pairs = generated
    pos = {d["id"]: i for i, d in enumerate(docs)}
    assert all(pos[p.first] < pos[p.second] for p in pairs)


def test_story_span_is_whole_lines(generated: Generated) -> None:
    for d in generated[0]:
        start, end = d["story_span"]
        text = d["text"]
        assert 0 < start < end < len(text)
        assert text[start - 1] == "\n" and text[end] == "\n"
        assert story_part(d) == text[start:end]
        assert len(boilerplate(d)) + len(story_part(d)) == len(text)


def test_stories_are_reflowed_and_distinct(generated: Generated) -> None:
    full = [d for d in generated[0] if d["form"] == "full"]
    assert len({d["story"] for d in full}) == len(full)
    seen: dict[str, str] = {}
    for d in full:
        title, *paragraphs = story_part(d).split("\n")
        assert title == title.strip() and len(paragraphs) >= 4
        assert sum(len(p.split()) for p in paragraphs) >= 150
        for p in paragraphs:
            assert p == " ".join(p.split())
            assert seen.setdefault(p, d["story"]) == d["story"], "two stories share a paragraph"


def test_related_pages_are_exactly_the_derived_pairs(generated: Generated) -> None:
    """Each story on a site at most once and on at most two pages: the labels are complete."""
    docs, pairs = generated
    on: dict[str, list[PageDoc]] = defaultdict(list)
    for d in docs:
        on[d["story"]].append(d)
    assert all(len({d["site"] for d in group}) == len(group) <= 2 for group in on.values())
    sharing = {tuple(d["id"] for d in group) for group in on.values() if len(group) == 2}
    derived = {(p.first, p.second) for p in pairs if p.kind in ("syndicated", "excerpt", "embeds")}
    assert sharing == derived


def test_syndicated_same_story_other_site(generated: Generated, by_id: dict[str, PageDoc]) -> None:
    for p in _of(generated[1], "syndicated"):
        a, b = by_id[p.first], by_id[p.second]
        assert a["story"] == b["story"] and a["site"] != b["site"]
        assert story_part(a) == story_part(b)
        assert (a["form"], b["form"]) == ("full", "syndicated")
        assert a["text"] != b["text"]


def test_same_site_different_stories(generated: Generated, by_id: dict[str, PageDoc]) -> None:
    for p in _of(generated[1], "same_site"):
        a, b = by_id[p.first], by_id[p.second]
        assert a["site"] == b["site"] and a["story"] != b["story"]
        shared = set(story_part(a).split("\n")) & set(story_part(b).split("\n"))
        assert not shared


def test_excerpt_lies_inside_the_earlier_story(
    generated: Generated, by_id: dict[str, PageDoc]
) -> None:
    for p in _of(generated[1], "excerpt"):
        a, b = by_id[p.first], by_id[p.second]
        assert a["story"] == b["story"] and a["site"] != b["site"] and b["form"] == "excerpt"
        title, *paragraphs = story_part(b).split("\n")
        earlier = story_part(a).split("\n")
        assert 2 <= len(paragraphs) <= 4
        assert "\n".join(paragraphs) in story_part(a)
        assert title not in earlier
        assert earlier[1] not in paragraphs, "an excerpt starts at the second paragraph or later"


def test_embeds_contain_the_whole_earlier_story(
    generated: Generated, by_id: dict[str, PageDoc]
) -> None:
    for p in _of(generated[1], "embeds"):
        a, b = by_id[p.first], by_id[p.second]
        assert a["story"] == b["story"] and a["site"] != b["site"] and b["form"] == "embeds"
        inner, outer = story_part(a), story_part(b)
        assert inner in outer
        extra = outer.count("\n") - inner.count("\n")
        assert 2 <= extra <= 4  # a new title and 1-3 paragraphs of commentary
        assert not outer.startswith(inner)


def test_unrelated_different_stories_and_sites(
    generated: Generated, by_id: dict[str, PageDoc]
) -> None:
    for p in _of(generated[1], "unrelated"):
        a, b = by_id[p.first], by_id[p.second]
        assert a["site"] != b["site"] and a["story"] != b["story"]


def test_templates_recur_and_vary(generated: Generated) -> None:
    docs = generated[0]
    per_site: dict[str, list[PageDoc]] = defaultdict(list)
    for d in docs:
        per_site[d["site"]].append(d)
    for site in SITES:
        group = per_site[site.name]
        counts = Counter(line for d in group for line in set(boilerplate(d).split("\n")) if line)
        fixed = [line for line, n in counts.items() if n == len(group)]
        varying = [line for line, n in counts.items() if n < len(group)]
        assert len(fixed) >= 8 and site.cookie in fixed and set(site.footer) <= set(fixed)
        assert site.name in "\n".join(fixed)
        assert len(varying) >= 50
        # box headlines come from the site's own pages, so each recurs across several pages
        titles = {story_part(d).split("\n")[0] for d in group}
        lines = [ln for d in group for ln in boilerplate(d).split("\n")]
        boxed = Counter(h for h in (_BULLET.sub("", ln, count=1) for ln in lines) if h in titles)
        assert len(boxed) > 0.9 * len(titles) and statistics.mean(boxed.values()) >= 5
    # no fixed line is shared between two sites
    fixed_lines = [set(s.nav) | set(s.footer) | {s.cookie, s.subscribe_fixed} for s in SITES]
    assert sum(len(f) for f in fixed_lines) == len(set().union(*fixed_lines))


def test_boilerplate_words_per_page(generated: Generated) -> None:
    words = [len(boilerplate(d).split()) for d in generated[0]]
    assert all(150 <= w <= 250 for w in words)
    assert 170 <= statistics.mean(words) <= 220


def test_box_headlines_are_other_pages_titles(generated: Generated) -> None:
    docs = generated[0]
    titles: dict[str, set[str]] = defaultdict(set)
    for d in docs:
        titles[d["site"]].add(story_part(d).split("\n")[0])
    site_of = {s.name: s for s in SITES}
    for d in docs[:300]:
        site = site_of[d["site"]]
        bullets = {site.bullet.format(i=i) for i in range(1, 6)}
        lines = boilerplate(d).split("\n")
        boxed = [
            ln[len(b) :]
            for ln in lines
            for b in bullets
            if ln.startswith(b) and ln[len(b) :] in titles[d["site"]]
        ]
        assert 8 <= len(boxed) <= 9 and len(set(boxed)) == len(boxed)
        assert story_part(d).split("\n")[0] not in boxed
        assert site.most_read in lines and site.related in lines


def test_a_latest_box_lists_the_sites_newest_headlines_before_the_page() -> None:
    """``latest``: each page's one box holds the titles of the pages its site printed before
    it, the newest first, at most eight, joined on one line; with the box's title on most
    sites; commas, spaces alone and an untitled box are all drawn on some seed."""
    seen: set[tuple[str, bool]] = set()
    for seed in (3, 4, 5, 13):  # 13 draws spaces alone
        docs, _ = pages.generate(seed=seed, layout="latest", **SMALL)
        styles = pages.styles(random.Random(f"{seed}-latest"), "latest", SMALL["sites"])
        index = {s.name: k for k, s in enumerate(SITES)}
        printed: dict[str, list[str]] = defaultdict(list)
        for d in docs:
            k = index[d["site"]]
            style = styles[k]
            seen.add((style.separator, style.labelled))
            newest = printed[d["site"]][-8:][::-1]
            if newest:
                box = style.separator.join(newest)
                box = f"{SITES[k].most_read}: {box}" if style.labelled else box
                assert box in boilerplate(d).split("\n"), d["id"]
            printed[d["site"]].append(story_part(d).split("\n")[0])
    assert {sep for sep, _ in seen} >= {", ", " "} and {lab for _, lab in seen} == {True, False}
