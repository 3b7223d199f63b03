"""Long texts: no near-duplicate alike as written is silently missed (issue 21, item 3).

Real Reuters-21578 stories (:func:`harness.data.reuters`): a headline rewritten over the same
body is a copy, even once the wire's recurring lines were learned as boilerplate; a time stamp,
an issue date or a noise code in a headline does not split a story whose body is the same; a
template's next release (another figure, another day in the body) stays related.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness import data
from neardup.sketch.lines import lines_of
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy


def _text(doc_id: str) -> str:
    return next(d["text"] for d in data.reuters() if d["id"] == doc_id)


def _history(later: str) -> list[Article]:
    """Every story of the wire before ``later`` that shares a line with it (boilerplate can
    be learned from: a line carried by three earlier documents is left out, unless it lies
    inside the story), in the wire's order."""
    policy = Policy()
    mine = set(lines_of(_text(later), "", policy.seed, min_tokens=2).keys)
    out = []
    for d in data.reuters():
        if d["id"] == later:
            return out
        if mine & set(lines_of(d["text"], "", policy.seed, min_tokens=2).keys):
            out.append(Article(d["id"], d["text"]))
    raise AssertionError(f"{later} is not in the wire")


async def _decide(
    articles: Sequence[Article], *, history: Sequence[Article] = ()
) -> dict[str, Verdict]:
    engine = Engine(MemoryIndex())
    if history:
        await engine.process(list(history))
    out = {}
    for a in articles:  # one article a batch, as a stream delivers them
        (v,) = await engine.process([a])
        assert not isinstance(v, NeardupError), v
        out[a.id] = v
    return out


async def test_a_rewritten_headline_over_the_same_body_is_a_copy() -> None:
    """`DLR FALLS ON FEAR TOKYO WON'T HIKE DEMAND-MIYAZAWA` and `DLR FALLS ON FEARS, MIYAZAWA
    SAYS` over one body (whole-text Jaccard 0.867). Two of its wrapped lines (`Finance Minister
    Kiichi Miyazawa said`, ...) recur on the wire; they were left out of the second text only,
    which fell to 0.69 and was judged original with nothing related. A line recurring alone
    inside a story stays."""
    first, second = "r10660", "r10770"
    history = [a for a in _history(second) if a.id != first]
    assert len(history) >= 3  # enough for its lines to count as boilerplate
    got = await _decide([Article(i, _text(i)) for i in (first, second)], history=history)
    v = got[second]
    assert (v.verdict, v.duplicate_of, v.cluster, v.method) == (
        "near_duplicate",
        first,
        first,
        "jaccard",
    )
    assert v.similarity == 0.8667
    assert v.changes == ()


async def test_a_time_stamp_or_issue_date_in_the_headline_does_not_split_a_brief_item() -> None:
    """A brief price table (43 shingles) stamped another minute, or another day, in its
    headline with every price the same: a copy. (The brief rule read `1730` against `1745`
    as a changed figure: related.)"""
    text = _text("r14335")
    head, _, body = text.partition("\n")
    assert head == "LONDON SUGAR NO.6 AT 1730 - APR 7"
    later = Article("later", "LONDON SUGAR NO.6 AT 1745 - APR 7\n" + body)
    dated = Article("dated", "LONDON SUGAR NO.6 AT 1730 - APR 8\n" + body)
    got = await _decide([Article("r14335", text), later, dated])
    for doc_id in ("later", "dated"):
        v = got[doc_id]
        assert (v.verdict, v.duplicate_of, v.related) == ("near_duplicate", "r14335", ())
        assert v.changes == ()


async def test_a_noise_code_before_the_headline_is_a_copy() -> None:
    """`161125******FED ADDS RESERVES ...`: the line noise a wire puts before a headline is no
    figure of the item (54 shingles: the brief rule applies to it)."""
    text = _text("r522")
    noisy = Article("noisy", "161125******" + text)
    got = await _decide([Article("r522", text), noisy])
    v = got["noisy"]
    assert (v.verdict, v.duplicate_of, v.changes, v.related) == (
        "near_duplicate",
        "r522",
        (),
        (),
    )


async def test_a_clock_time_in_the_body_is_no_changed_figure() -> None:
    """The same brief item giving another time of day (`at 11:05 EDT`) in its body, every
    figure the same: a copy."""
    text = _text("r522").replace("said.\n", "said at 11:05 EDT.\n", 1)
    later = text.replace("11:05", "11:40")
    got = await _decide([Article("a", text), Article("b", later)])
    assert (got["b"].verdict, got["b"].duplicate_of, got["b"].related) == (
        "near_duplicate",
        "a",
        (),
    )


async def test_template_siblings_stay_related() -> None:
    """The Fed's customer repurchases on two days (the funds rate in the body differs), and
    the USDA's orange juice yield estimate a month later (the body's figures and day differ):
    related, with the change named, never linked."""
    got = await _decide([Article(i, _text(i)) for i in ("r522", "r1125", "r3315", "r15855")])
    fed, juice = got["r1125"], got["r15855"]
    assert (fed.verdict, juice.verdict) == ("original", "original")
    assert [(r.id, r.similarity) for r in fed.related] == [("r522", 0.8621)]
    assert [(c.kind, c.earlier, c.now) for c in fed.related[0].changes] == [
        ("number", "3 16", "1 4")
    ]
    assert [r.id for r in juice.related] == ["r3315"]
    assert next((c.kind, c.earlier, c.now) for c in juice.related[0].changes) == (
        "date",
        "03-01",
        "04-01",
    )


async def test_a_changed_figure_in_a_brief_body_stays_related_under_a_new_stamp() -> None:
    """A headline stamped another minute does not hide a changed figure in the body: the
    brief item with its funds rate changed is related, the rate named."""
    text = _text("r522")
    later = text.replace("6-3/16", "6-5/16").replace("REPURCHASES", "REPURCHASES AT 1130")
    got = await _decide([Article("a", text), Article("b", later)])
    v = got["b"]
    assert v.verdict == "original"
    assert [(c.kind, c.earlier, c.now) for c in v.related[0].changes] == [("number", "3", "5")]


async def fed_releases(engine: Engine) -> Verdict:
    """The Fed's customer repurchases of two days, whole-text Jaccard 0.86, differing only in
    the funds rate (`6-5/16` against `6-3/8`), sent in the wire's order among the stories
    that share their lines (in batches of 64): ever more of the template's lines are learned
    before each, so each is sketched short from another remainder (three lines, then one).
    The later one's verdict."""
    history = [a for a in _history("r10864") if a.id != "r3735"]
    wire = {d["id"]: n for n, d in enumerate(data.reuters())}
    cut = next(i for i, a in enumerate(history) if wire[a.id] > wire["r3735"])
    for part in (history[:cut], [Article("r3735", _text("r3735"))], history[cut:]):
        for lo in range(0, len(part), 64):
            await engine.process(part[lo : lo + 64])
    (v,) = await engine.process([Article("r10864", _text("r10864"))])
    assert not isinstance(v, NeardupError), v
    return v


async def test_two_releases_short_once_their_template_is_learned_still_meet() -> None:
    """The two remainders share no bucket: they were neither linked nor related. Each also
    registers its whole text's bands, so the later meets the earlier, related with the rate
    named."""
    v = await fed_releases(Engine(MemoryIndex()))
    earlier = next(r for r in v.related if r.id == "r3735")
    assert [(c.kind, c.earlier, c.now) for c in earlier.changes] == [("number", "5 16", "3 8")]
