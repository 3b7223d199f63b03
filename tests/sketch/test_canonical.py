"""The canonical form (neardup.sketch.canonical): what looks the same to a reader folds to one text,
every path uses it, it is idempotent, its tables are what the Unicode and OpenCC data give, and an
index built under another form is refused with both forms named and migrated by a rebuild."""

from __future__ import annotations

import hashlib
import io
import re
import string
import unicodedata

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import canonical_tables, data
from neardup.sketch import canonical, canonical_data, evidence, facts, features, lines, markup
from neardup.sketch.canonical import CANONICAL_FORM, LEGACY_FORM, fold
from neardup.sketch.unhide import plain, unhide_folded
from neardup.stream.engine.engine import Engine
from neardup.stream.engine.reindex import batches_of, export, reindex
from neardup.stream.errors import InvalidMessage, NeardupError, SchemeMismatchError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.schema import article_from_obj
from tests.stream.engine.test_verdict_facts import _verdicts

STORY = (
    "The central bank raised its benchmark rate by a quarter point on Tuesday, citing "
    "persistent inflation in services and a tight labour market."
)


@pytest.mark.parametrize(
    "invisible",
    ["\u200b", "\u200c", "\u200d", "\u00ad", "\u2060", "\ufeff", "\ufe0f", "\u202e", "\u2066",
     "\U000e0041", "\u180e", "\u034f", "\u061c", "\u3164"],
)  # fmt: skip
def test_default_ignorable_code_points_vanish_inside_words(invisible: str) -> None:
    hidden = " ".join(invisible.join(word) for word in STORY.split())
    assert fold(hidden) == fold(STORY)
    assert features.tokenize(hidden) == features.tokenize(STORY)


@pytest.mark.parametrize(
    ("disguised", "plain"),
    [
        ("Тhе сорy", "the copy"),  # Cyrillic Т h е с о р y
        ("ΤΗΕ ΝΕWS", "the news"),  # Greek capitals
        ("gοοd ιnνest", "good invest"),  # Greek ο ι ν
        ("ІВМ", "ibm"),  # Cyrillic І В М
        ("раssіvе", "passive"),
        ("ｆｕｌｌ ｗｉｄｔｈ", "full width"),
        ("𝐛𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐", "bold italic"),
        ("cafe\u0301 nai\u0308ve", "café naïve"),  # marks that compose: one form
        ("café naïve", "café naïve"),
        ("ha\u0336s\u0336h", "hash"),  # a combining overlay between letters
        ("Straße", "strasse"),
        ("١٢٣ ۴۵ ４２", "123 45 42"),
        ("&#101;xample &#x61;nd &eacute;t&eacute; &amp; co", "example and ete & co"),
        ("漢字與簡體發展", "汉字与简体发展"),
        ("頭髮 头发 頭發", "头发 头发 头发"),
        ("裡面 裏面 里面", "里面 里面 里面"),
        # phrases OpenCC converts as a whole, to the mainland word: traditional 想像 for 想象,
        # Taiwan's words (軟體, 計程車)
        ("想像力 軟體 計程車 演算法", "想象力 软件 出租车 算法"),
        ("想象力 软件 出租车 算法", "想象力 软件 出租车 算法"),
        # a letter like both I and l, read from its neighbours (Greek Ι, Cyrillic І and Ӏ)
        ("he\u0399lo, \u0406ike the \u04c0ast", "hello, like the last"),
        ("\u0399t is \u0399nc, \u0399NC and \u0399", "it is inc, inc and i"),
        ("ΤΗΙS \u0406S ΑLL", "this is all"),
    ],
)
def test_look_alikes_fold_to_one_text(disguised: str, plain: str) -> None:
    assert fold(disguised) == plain


def test_ascii_is_never_mapped_to_a_look_alike() -> None:
    # 0 and O, 1 and l, rn and m stay what they are: numbers are facts
    assert fold("0 O 1 l I rn m") == "0 o 1 l i rn m"


def test_html_is_read_as_the_text_a_browser_shows() -> None:
    page = (
        "<!DOCTYPE html><html><head><title>Rates up</title><style>p{color:red}</style>"
        "<script>var x = 'not text';</script></head><body><nav>Home | World</nav>"
        "<p>The central bank r<span>ai</span>sed its rate&nbsp;on Tuesday.</p>"
        "<p>It cited &ldquo;persistent&rdquo; inflation.<br>More later.</p></body></html>"
    )
    assert markup.looks_like_html(page)
    assert markup.html_text(page) == (
        "Home | World\nThe central bank raised its rate on Tuesday.\n"
        "It cited \u201cpersistent\u201d inflation.\nMore later."
    )
    assert "var x" not in fold(page) and "rates up" not in fold(page)
    assert features.tokenize(page) == [
        "home",
        "world",
        "the",
        "central",
        "bank",
        "raised",
        "its",
        "rate",
        "on",
        "tuesday",
        "it",
        "cited",
        "persistent",
        "inflation",
        "more",
        "later",
    ]


def test_prose_about_markup_is_not_html() -> None:
    assert not markup.looks_like_html("if a < b and <FRANKLIN FUND> pays 4 cts")
    assert fold("&lt;FRANKLIN FUND> div 4.5 cts") == "<franklin fund> div 4.5 cts"


# the evidence of markup as first written: a known element's names read case-blind at every "<"
_EVIDENCE_AS_WRITTEN = re.compile(
    rf"<(?:/{markup._ELEMENTS}\s*>|(?:br|hr|wbr)\s*/?>|!--|!doctype\s+html"
    rf"|{markup._ELEMENTS}\s+[a-z-]+\s*=)",
    re.IGNORECASE,
)


_MARKUP_PIECES = ["<", "</", ">", "=", " ", "  ", "\n", "a", "A", "b", "x", "-", "1", "h1", "br",
                  "wbr", "!--", "!DOCTYPE html", "p", "div", "href", "STRONG", "\u017ftrong",
                  "\u212a", "\u00e9"]  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_MARKUP_PIECES), max_size=16).map("".join))
def test_markup_is_told_as_the_evidence_first_written_tells_it(text: str) -> None:
    # the attribute looked ahead for first finds what the names read at every "<" found
    found = _EVIDENCE_AS_WRITTEN.search(text)
    assert markup.looks_like_html(text) == (found is not None)
    got = markup._HTML_TAG_RE.search(text)
    assert (got and got.span()) == (found and found.span())


_any_text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",)),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(_any_text)
def test_fold_is_idempotent(text: str) -> None:
    once = fold(text)
    assert fold(once) == once


# pieces that fold with context or change lengths: letters read as I or l by their neighbours,
# Han phrases, references (one decodes to a newline), markup, marks, invisibles, look-alikes
_TRICKY = st.sampled_from(
    [
        "\u0399", "\u0406", "\u04c0", "t", "A", " ", "\t", "\n", ".", "想像", "軟體", "软件",
        "&#10;", "&amp;", "&eacute;", "</p>", "<br>", "<b>", "\u0301", "\u200b", "\u0435",
        "\uff21", "\u00df", "\u2028", "&#x0a;", "\u0130", "&lt", "&ampx", "&#", "&#x", "&a",
        "&AElig", "&#0;", "\x00", "&", "&#1", "2;", "<", "p>", "</", "&not", "&notin;",
    ]
)  # fmt: skip
_pieced = st.lists(st.one_of(_TRICKY, _any_text), max_size=8).map("".join)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.lists(_pieced, max_size=12))
def test_folding_texts_at_once_is_folding_each(texts: list[str]) -> None:
    assert canonical.fold_each(texts) == [fold(t) for t in texts]


@pytest.mark.slow
def test_fold_is_idempotent_on_every_code_point() -> None:
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and chr(c) not in "<&"]
    once = [fold(c) for c in chars]
    assert [fold(x) for x in once] == once


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127, exclude_characters="<&"), max_size=80))
def test_the_ascii_fast_path_is_the_full_form(text: str) -> None:
    # an invisible character forces the full path; it must give what the fast path gave: the
    # text in small letters, when it has nothing to unhide (no escape, no spaced letters, no
    # leetspeak: neardup.sketch.unhide)
    assert fold(text + "\u200b") == fold(text)
    if plain(text):
        assert fold(text) == text.lower()


def test_every_path_reads_the_canonical_form() -> None:
    disguised = STORY.replace("e", "\u0435").replace(" ", " \u200b")  # Cyrillic е, zero widths
    assert features.normalize(disguised) == features.normalize(STORY)
    assert list(features.shingle_hashes(disguised)) == list(features.shingle_hashes(STORY))
    assert features.normalize_batch([disguised]).text(0) == features.normalize(STORY)
    assert lines.lines_of(disguised + "\nfooter", "s", 1).keys == (
        lines.lines_of(STORY + "\nfooter", "s", 1).keys
    )
    assert facts.facts_of(features.normalize(disguised)) == facts.facts_of(
        features.normalize(STORY)
    )
    (span,) = evidence.shared_spans(disguised, STORY)
    assert (span.start, span.end) == (0, len(disguised))  # offsets into the text as sent
    assert features.content_hash(features.normalize(disguised)) == features.content_hash(
        features.normalize(STORY)
    )


@pytest.mark.slow
def test_the_committed_tables_are_what_the_unicode_and_opencc_data_give() -> None:
    assert canonical_tables.main(["--check"]) == 0


def test_the_tables_keep_to_their_rules() -> None:
    table = canonical._table()
    for cp, to in table.items():
        ch = chr(cp)
        if to is None:
            cat = unicodedata.category(ch)
            assert cat in ("Mn", "Me", "Cf", "Lo", "Cn", "Mc") or not ch.isprintable(), hex(cp)
        else:
            assert not ch.isascii() and len(to) == 1
            assert not to.isascii() or to.isdigit() or to.isalpha() or to in string.punctuation
    # no target is itself mapped: one pass of replacements is the same as translate's
    assert not any(to and ord(to) in table for to in table.values())
    for ch in canonical_data.I_OR_L:  # read from the neighbours, in a Latin word: a cased one
        # is case folded outside one, an uncased one reads as a lone capital I
        assert ord(ch) not in table if ch.casefold() != ch else table[ord(ch)] == "i"
    for cp in table:  # the table reads case folded text
        assert chr(cp).casefold() == chr(cp), hex(cp)
    words = canonical_data.PHRASES.split()
    phrases = dict(zip(words[0::2], words[1::2], strict=True))
    assert len(phrases) > 1000
    for phrase, member in phrases.items():
        # each phrase folds to its member, and a member to itself (no phrase inside one)
        assert len(phrase) >= 2 and member not in phrases
        assert canonical.fold_phrases(phrase) == member
        assert canonical.fold_phrases(member) == member


@pytest.mark.parametrize("config", ["s2t", "s2tw", "s2twp", "s2hk", "s2hkp"])
def test_chinese_converted_by_opencc_folds_to_the_simplified_text(config: str) -> None:
    import opencc

    reviews = [r["text"] for r in data.zh_reviews()[:300]]
    converter = opencc.OpenCC(config)
    same = sum(fold(converter.convert(text)) == fold(text) for text in reviews)
    assert same >= 0.99 * len(reviews)


async def test_a_disguised_long_copy_is_a_duplicate_of_its_original() -> None:
    story = next(r["text"] for r in data.reuters() if len(r["text"].split()) > 150)
    copy = "\u200b".join(story.replace("o", "\u043e"))  # Cyrillic о, a zero width everywhere
    first, second = await _verdicts(
        Engine(MemoryIndex()), [Article("orig", story), Article("copy", copy)]
    )
    assert (first.verdict, second.verdict, second.duplicate_of, second.method) == (
        "original",
        "duplicate",
        "orig",
        "exact",
    )


async def test_traditional_chinese_is_a_copy_of_the_simplified_text() -> None:
    simplified = "".join(r["text"] for r in data.zh_reviews()[:12])
    traditional = simplified.translate({ord("发"): "發", ord("这"): "這", ord("个"): "個"})
    assert traditional != simplified
    _, v = await _verdicts(
        Engine(MemoryIndex()), [Article("s", simplified, "zh"), Article("t", traditional, "zh")]
    )
    assert (v.verdict, v.duplicate_of) == ("duplicate", "s")


def _legacy_scheme(policy: Policy) -> bytes:
    scheme = policy.scheme()
    del scheme["canonical"]
    return orjson.dumps(scheme, option=orjson.OPT_SORT_KEYS)


async def test_an_index_of_another_form_is_refused_naming_both_then_migrated_by_reindex() -> None:
    index = MemoryIndex()
    stories = [r["text"] for r in data.reuters() if len(r["text"].split()) > 120][:3]
    sent = [Article(f"s{i}", t, "news") for i, t in enumerate(stories)]
    await _verdicts(Engine(index), sent)
    # the same namespace as an index built before the canonical form had a name
    space = index._space("news")
    space.scheme = _legacy_scheme(Policy())
    (refused,) = await Engine(index).process([Article("new", stories[0] + " x", "news")])
    assert isinstance(refused, SchemeMismatchError)
    assert LEGACY_FORM in str(refused) and CANONICAL_FORM in str(refused)
    assert "neardup reindex" in str(refused)
    buf = io.BytesIO()
    await export(index, "news", buf)
    back = [article_from_obj(orjson.loads(line)) for line in buf.getvalue().splitlines()]
    done = await reindex(index, "news", Policy(), lambda: batches_of(back), wait_s=0)
    assert done.switched and done.target == "news.r2"
    disguised = stories[1].replace("e", "e\u00ad")  # a soft hyphen after every e
    (v,) = await Engine(index, alias_ttl_s=0.0).process([Article("copy", disguised, "news")])
    assert not isinstance(v, NeardupError)
    assert (v.namespace, v.verdict, v.duplicate_of) == ("news", "duplicate", "s1"), v


CODE_A = "To centre it, write <div class=a>the caption</div> around the caption text, then save."
CODE_B = "To centre it, write <span class=b>the caption</span> around the caption text, then save."


def test_a_declared_format_is_validated_and_applied_where_none_is_declared() -> None:
    plain = article_from_obj({"id": "a", "text": CODE_A})
    assert plain.format is None and plain.as_read() is plain
    assert article_from_obj({"id": "a", "text": CODE_A, "format": "text"}).format == "text"
    assert article_from_obj({"id": "a", "text": CODE_A}, default_format="html").format == "html"
    assert article_from_obj({"id": "a", "text": "x", "format": None}).format is None
    for bad in ("pdf", "HTML", 1, ""):
        with pytest.raises(InvalidMessage) as info:
            article_from_obj({"id": "a", "text": "x", "format": bad})
        assert info.value.reason == "invalid_field"


def test_text_declared_text_is_never_read_as_markup_and_keeps_its_offsets() -> None:
    as_text = Article("a", CODE_A, format="text").as_read().text
    assert len(as_text) == len(CODE_A)
    assert features.normalize(as_text) == " ".join(CODE_A.lower().split())
    # undeclared, the markup is read as markup: the two texts are one
    assert features.normalize(CODE_A) == features.normalize(CODE_B)
    assert features.normalize(as_text) != features.normalize(
        Article("b", CODE_B, format="text").as_read().text
    )


def test_text_declared_html_is_read_as_its_visible_text() -> None:
    # no markup the detector takes as evidence (bare tags, a ticker-like <P>), yet a page
    page = "<P>Shares of <B>Acme rose &amp; fell.<P>Trading was <TT>thin."
    assert features.normalize(page) == "<p>shares of <b>acme rose & fell.<p>trading was <tt>thin."
    read = Article("a", page, format="html").as_read()
    assert read.format is None
    assert read.text == "Shares of Acme rose & fell.\nTrading was thin."
    # a page with nothing a browser shows is read as it was sent
    assert Article("a", "<p></p>", format="html").as_read().text == "<p></p>"


async def test_the_declared_format_decides_the_verdict() -> None:
    async def second(fmt: str | None) -> Verdict:
        engine = Engine(MemoryIndex())
        (_, v) = await engine.process(
            [Article("a", CODE_A, format=fmt), Article("b", CODE_B, format=fmt)]
        )
        assert isinstance(v, Verdict)
        return v

    assert (await second(None)).verdict == "duplicate"  # markup read as markup: one text
    assert (await second("text")).verdict != "duplicate"  # the code differs


def _site(story: str) -> str:
    paragraphs = "".join(f"<p>{p}</p>" for p in story.split("\n"))
    return (
        "<!DOCTYPE html><html><head><title>Acme News</title><style>p{margin:0}</style></head>"
        "<body><nav><a href='/'>Home</a> | <a href='/world'>World</a> | <a href='/markets'>"
        "Markets</a> | <a href='/sport'>Sport</a></nav><main><article>"
        f"{paragraphs}</article></main><aside><h2>Most read</h2><ul><li><a href='/1'>Council "
        "budget approved after a long night</a></li><li><a href='/2'>Harvest festival draws "
        "record crowds</a></li></ul></aside><footer>Copyright Acme News Ltd. All rights "
        "reserved. Terms of use | Privacy | Cookies | Contact the newsroom</footer></body></html>"
    )


async def test_a_page_declared_page_is_read_as_its_main_content() -> None:
    story = next(r["text"] for r in data.reuters() if len(r["text"].split()) > 150)
    page = _site(story)
    main = Article("p", page, format="page").as_read().text
    assert "Most read" not in main and "Copyright" not in main and "Home" not in main
    assert features.normalize(main) == features.normalize(story)

    async def verdict_of(fmt: str) -> Verdict:
        engine = Engine(MemoryIndex())
        (_, v) = await engine.process([Article("s", story), Article("p", page, format=fmt)])
        assert isinstance(v, Verdict)
        return v

    # its visible text carries the site's navigation and footer: a near-copy; its main content
    # is the story
    assert (await verdict_of("html")).verdict == "near_duplicate"
    v = await verdict_of("page")
    assert (v.verdict, v.duplicate_of, v.similarity) == ("duplicate", "s", 1.0)
    assert article_from_obj({"id": "a", "text": page, "format": "page"}).format == "page"
    # a page with no main content is read as its visible text
    assert Article("e", "<p>Hi</p>", format="page").as_read().text == "Hi"


def _reference_fold(text: str) -> str:
    """The canonical form step by step, as the module doc states it, with none of
    :func:`canonical.fold`'s shortcuts (ASCII, characters that map, inert punctuation)."""
    text = canonical._unhidden(markup.decode(text))
    if "\u0345" in text:  # the Greek iota below, read under a Greek letter alone
        text = canonical._GREEK_BASE.sub(canonical._iota_below, unicodedata.normalize("NFD", text))
    text = unicodedata.normalize("NFKD", text.translate(canonical._before_nfkd()))
    latin = canonical._latin_text(text) and canonical._ASCII_LETTER.search(text)
    if latin:  # every word with a letter read apart, read as it looks
        text = canonical._read_apart().sub(
            lambda m: m.group().translate(canonical._latin_table()), text
        )
    else:
        text = canonical._read_apart().sub(canonical._latin_word, text)
    text = canonical._i_or_l().sub(canonical._read_i_or_l, text)
    t = unicodedata.normalize("NFKD", text.casefold()).translate(canonical._RELEASE)
    t = t.translate(canonical._table())
    t = canonical._composed(t)
    for _ in range(4):
        folded = canonical.fold_phrases(t)
        if folded == t:
            break
        t = folded
    return unhide_folded(t)


# what the shortcuts tell apart: ASCII, mapped look-alikes, marks, I-or-l letters, inert
# punctuation, cased letters of other scripts (final sigma), Hangul that composes, Han phrases
_PIECES = st.sampled_from(
    [
        *"aZ .,\n<&",
        "“",
        "”",
        "•",
        "—",
        "’",
        "\x92",
        "\u200b",
        "\u00ad",
        "é",
        "e\u0301",
        "Σ",
        "ΟΔΟΣ ",
        "ß",
        "İ",
        "Ι",
        "Іt",
        "lІ",
        "а",
        "ϲ",
        "ﬁ",
        "①",
        "Ⓐ",
        "ᄀ",
        "ᅡ",
        "가",
        "软件",
        "軟體",
        "想像",
        "😀",
        "&amp;",
        "&#101;",
        "１２",
    ]
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=4), max_size=40).map("".join))
def test_fold_equals_the_form_step_by_step(text: str) -> None:
    assert fold(text) == _reference_fold(text)


def test_fold_equals_the_form_step_by_step_on_real_texts() -> None:
    texts = [r["text"] for r in data.reuters()[:300]] + [r["text"] for r in data.zh_reviews()[:300]]
    for t in texts:
        assert fold(t) == _reference_fold(t)


@settings(max_examples=300, deadline=None)
@given(st.lists(_pieced, max_size=10))
def test_tokens_counted_at_once_are_each_texts_tokens(texts: list[str]) -> None:
    norms = [features.normalize(t) for t in texts]
    want = [len(features.tokenize(n, normalized=True)) for n in norms]
    assert features.token_counts(norms) == want


_AROUND_I_OR_L = st.lists(
    st.sampled_from(
        [*canonical_data.I_OR_L, "a", "e", "x", "T", "Q", " ", "\t", ".", ",", "(", "\n", "?",
         "\u0430", "\u146f", "\u0410", "\u2170",
         ":", "\u201c", "\u00e9", "\u00c9", "\u0430", "1", "_", "\u00ab", "\u00df", "\u0130",
         "\u5b57", "\u0436", "\u0416", "\u2170", "\U00010428", "\U00010400", "\U0001f600",
         "\u00aa", "\r", "'", "\u2018", "\u00a0", ";", "y", "o"]
    ),
    max_size=30,
).map("".join)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(_AROUND_I_OR_L)
def test_look_alike_i_or_l_read_at_once_as_one_by_one(text: str) -> None:
    assert canonical._read_all_i_or_l(text) == canonical._i_or_l().sub(canonical._read_i_or_l, text)


_AROUND_LATIN = st.lists(
    st.sampled_from(
        [*canonical_data.I_OR_L, *canonical_data.LATIN[0::2], "a", "x", "T", " ", ".", "\n",
         "\u0430", "\u0436", "\u0416", "\u03a5", "\u039d", "\u03c2", "\u03a3", "\u0345",
         "\u00df", "\u0149", "\u0301", "\u5b57", "\U00010400", "word", "e\u0301", "\u2170"]
    ),
    max_size=25,
).map("".join)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(_AROUND_LATIN, min_size=1, max_size=5))
def test_latin_words_read_at_once_as_each_text_a_word_at_a_time(texts: list[str]) -> None:
    # the words the plain rule case folds early are case folded by the next step anyway:
    # what counts is the same text once case folded, and every I or l read alike
    joined = unicodedata.normalize("NFKD", "\n".join(texts))
    units = [t.count("\n") + 1 for t in texts]
    alone = "\n".join(map(canonical._read_latin_alone, canonical._pieces(joined, units)))
    assert canonical._read_latin_at_once(joined, units).casefold() == alone.casefold()
    assert canonical._read_latin_at_once(texts[0]).casefold() == (
        canonical._read_latin_alone(texts[0]).casefold()
    )


def test_a_look_alike_i_or_l_reads_alike_alone_and_beside_a_text_with_an_ascii_letter() -> None:
    # "\u00e9" decomposes to an ASCII "e": read with the others, it made "\u0399\u01c0" (no
    # ASCII letter of its own) read its letters as in a Latin word
    assert fold("\u0399\u01c0") == "ii"
    assert canonical.fold_each(["\u00e9", "\u0399\u01c0"]) == ["\u00e9", "ii"]
    assert canonical.fold_each(["\u0399\u01c0", "x"]) == ["ii", "x"]


def test_real_text_folds_byte_for_byte_as_before_the_latin_words_were_read_at_once() -> None:
    # digests of the forms before step 4 and invisible spaces were read in numpy
    stories = [r["text"] for r in data.reuters()[:2000]]
    reviews = [r["text"] for r in data.zh_reviews()[:2000]]
    lines_ = [line for t in stories for line in t.split("\n")]
    for texts, digest in (
        ([fold(t) for t in stories], "99cb2277cf3a5c21"),
        (canonical.fold_each(stories), "99cb2277cf3a5c21"),
        (canonical.fold_each(lines_, parts=True), "ad994511caa63885"),
        ([fold(t) for t in reviews], "45cc17f55cfae01c"),
        (canonical.fold_each(reviews), "45cc17f55cfae01c"),
    ):
        assert hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16] == digest


_MARKUP = st.sampled_from(
    ["<p>", "</p>", "<P>", "<br>", "<br/>", "<br />", "<b>", "</b>", "<div class=x>",
     "<div class='a b'>", '<a href="u">', "</a>", "<span id=1 hidden>", "<li>", "</li >", "<h1>",
     "</H1>", "<td>", "<table>", "<script>", "</script>", "<style>", "<title>", "<!-- c -->",
     "<!doctype html>", "< b", "a < b", "<3", "<a title='x>y'>", "&amp;", "&lt;p&gt;", "&#10;",
     "&am", "p;", "&eacute", "&notit;", " ", "\n", "\t", "text", "word", "\u00e9", "\x00", "<",
     ">", "&", "<custom-tag>", "<x:y>", "<p/>", "<img src=x>", "<head>", "</head>",
     "<font size=2>", "<p\nclass=x>", "</p\n>", "<a b>", "<a =b>", "<a b=>", "<1>", "</>",
     "<a\tb='c'>", "<textarea>", "<svg>", "</svg>", "<!x>", "<?pi>", "<!--", "-->", '<a"b>',
     "<math>", "</script >", "<b/>", "&amp", "</ p>", "<a b='<'>", "</div\tid=x>"]
)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(_MARKUP, max_size=20).map("".join))
def test_plain_markup_is_read_as_the_parser_reads_it(doc: str) -> None:
    """The split that reads a document of plain tags gives what the HTML parser collects."""
    fast = markup._plain_markup_text(doc)
    if fast is not None:
        assert fast == _parsed_whole(doc)


def test_plain_markup_takes_the_fast_reading() -> None:
    doc = "<div class=a><p>One &amp; two</p><br/><b>three</b></div>"
    assert markup._plain_markup_text(doc) == "\n\nOne & two\n\nthree\n"
    assert markup._plain_markup_text("<script>x</script>") is None  # the parser's
    assert markup._plain_markup_text("a < b <p>") is None


def _parsed_whole(doc: str, hidden: int = 0) -> str:
    """What the standard library's parser collects of ``doc``, from ``hidden`` elements open:
    the reference every faster reading is held to."""
    parser = markup._Text()
    parser.hidden = hidden
    parser.feed(doc)
    parser.close()
    return "".join(parser.parts)


def _parsed(doc: str) -> str:
    lines = _parsed_whole(doc).split("\n")
    return "\n".join(s for line in lines if (s := " ".join(line.split())))


@settings(max_examples=2000, deadline=None)
@given(st.lists(_MARKUP, max_size=24).map("".join))
def test_markup_read_in_part_by_the_split_is_what_the_parser_reads(doc: str) -> None:
    assert markup.html_text(doc) == _parsed(doc)


@settings(max_examples=2000, deadline=None)
@given(st.lists(_MARKUP, max_size=30).map("".join), st.integers(1, 12))
def test_markup_read_by_turns_of_split_and_parser_is_what_the_parser_reads(
    doc: str, stretch: int
) -> None:
    """The parser hands back to the split wherever it stands between tags: with a short
    stretch, at every such place a document offers."""
    kept = markup.PARSER_STRETCH, markup.PARSER_SHARE
    markup.PARSER_STRETCH, markup.PARSER_SHARE = stretch, 1  # the parser may read it all
    try:
        assert markup.html_text(doc) == _parsed(doc)
    finally:
        markup.PARSER_STRETCH, markup.PARSER_SHARE = kept


# well-formed markup: each tag closed by its first >, comments holding no --, raw text no <
_WELL_FORMED = st.sampled_from(
    ["<p>", "</p>", "<div class='a b'>", "</div>", "<br/>", "<b>", "</b>", '<a href="u">', "</a>",
     "<!-- c -->", "<!--x-y-->", "<!DOCTYPE html>", "<?xml v?>", "<!x>",
     "<script>var a = 1 && b;</script>", "<STYLE>p { x: y }</STYLE>", "<head>", "</head>",
     "<svg>", "</svg>", "<svg/>", "<math>", "</math>", "<template>", "</template>",
     "<title>T</title>", "<li>", "</li>", "<h1>", "</H1>", "<span id=1 hidden>", "</span>",
     "&amp;", "&lt;", "&#10;", "&eacute", "a < b", "<3", "text", "word", " ", "\n", "\t",
     "\u00e9", "\u5b57", "\u2028", "\x85", ">"]
)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(_WELL_FORMED, max_size=30).map("".join), st.integers(0, 2))
def test_well_formed_markup_read_roughly_is_what_the_parser_reads(doc: str, hidden: int) -> None:
    assert markup._markup_read_roughly(doc, hidden) == _parsed_whole(doc, hidden)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(_WELL_FORMED, _MARKUP), max_size=40).map("".join), st.integers(1, 8))
def test_past_the_parsers_share_well_formed_markup_reads_as_the_parser_reads_it(
    doc: str, stretch: int
) -> None:
    """Split, parser and rough reading in turns, the parser's share spent early: a document
    whose rest is well-formed reads as the parser reads it whole."""
    kept = markup.PARSER_STRETCH, markup.PARSER_SHARE
    markup.PARSER_STRETCH, markup.PARSER_SHARE = stretch, 4
    try:
        got, spent = _read_counting(doc)
    finally:
        markup.PARSER_STRETCH, markup.PARSER_SHARE = kept
    # a quarter, the stride that went past it, and a run of text to the next < at most
    longest_run = max(map(len, doc.split("<")))
    assert spent <= 2 * max(stretch, len(doc) // 4) + longest_run + 1
    if _wholly(doc, _WELL_FORMED):
        assert got == _parsed(doc)


def _wholly(doc: str, pieces: st.SearchStrategy[str]) -> bool:
    """Whether ``doc`` is a string of the sampled pieces (greedy: the well-formed alphabet
    shares no prefix that matters)."""
    alphabet = sorted(pieces.elements, key=len, reverse=True)  # type: ignore[attr-defined]
    at = 0
    while at < len(doc):
        for piece in alphabet:
            if doc.startswith(piece, at):
                at += len(piece)
                break
        else:
            return False
    return True


def _read_counting(doc: str) -> tuple[str, int]:
    fed: list[int] = []
    feed = markup._PlainTagsFirst.feed

    def counting(self: markup._PlainTagsFirst, data: str) -> None:
        fed.append(len(data))
        feed(self, data)

    markup._PlainTagsFirst.feed = counting  # type: ignore[method-assign]
    try:
        return markup.html_text(doc), sum(fed)
    finally:
        markup._PlainTagsFirst.feed = feed  # type: ignore[method-assign]


def test_a_document_built_to_need_the_parser_everywhere_is_read_mostly_roughly() -> None:
    """A declaration before every tag: the parser reads its share (it costs some five times
    the rough reading per tag), the rest is read roughly, as the parser would have read it."""
    doc = "".join(f"<!x><p>w{i}</p>" for i in range(2000))
    got, spent = _read_counting(doc)
    assert got == _parsed(doc)
    share = len(doc) // markup.PARSER_SHARE
    assert share <= spent <= share + 2 * markup.PARSER_STRETCH < len(doc) // 4


@settings(max_examples=2000, deadline=None)
@given(st.lists(_MARKUP, max_size=30).map("".join))
def test_plain_tags_read_by_one_match_collect_what_the_parser_does(doc: str) -> None:
    fast = markup._PlainTagsFirst()
    fast.feed(doc)
    fast.close()
    assert "".join(fast.parts) == _parsed_whole(doc)


def test_a_stray_lt_hands_the_rest_back_to_the_split() -> None:
    """``a < b`` then a page of short elements: the parser reads its stretch, the split the
    rest (the whole rest, by the parser, cost five times news text to read)."""
    doc = "a < b " + "".join(f"<p>w{i}</p>" for i in range(200))
    got, spent = _read_counting(doc)
    assert got == _parsed(doc)
    assert spent < markup.PARSER_STRETCH + 20 < len(doc) // 4


@pytest.mark.parametrize(
    "words",
    [
        ("访问", "存取"),  # visit / access: tw2sp reads Taiwan's 存取 as 访问, s2twp keeps 访问
        ("搜索", "搜寻"),
        ("仿真", "模拟"),
        ("默认", "预设", "缺省"),
        ("的士", "出租车"),
        ("发布", "释出"),
        ("呼出", "拨出"),
        ("类型", "型别"),
    ],
)
def test_different_mainland_words_stay_different(words: tuple[str, ...]) -> None:
    """The phrase fold is directed, from what OpenCC writes for a mainland word to the word: two
    mainland words never fold into one, alone or in a real review."""
    assert len({features.normalize(w) for w in words}) == len(words)
    review = next(r["text"] for r in data.zh_reviews() if words[0] in r["text"])
    assert features.normalize(review) != features.normalize(review.replace(words[0], words[1]))


def test_regional_words_still_fold_to_the_mainland_word() -> None:
    """Taiwan's and Hong Kong's words and the traditional spelling of a word fold to the mainland
    word OpenCC wrote them for; no member of the table is itself folded (no chain of words)."""
    for regional, mainland in [
        ("軟體", "软件"),
        ("计程车", "出租车"),
        ("資訊", "信息"),
        ("網路", "网络"),
        ("想像", "想象"),
        ("軟體工程師上網路查資訊", "软件工程师上网络查信息"),
    ]:
        assert features.normalize(regional) == features.normalize(mainland) == mainland
    table = canonical._phrases()[2]
    assert not set(table.values()) & set(table)


def test_each_phrase_folds_to_its_word_and_the_word_stays() -> None:
    """Every phrase of the table folds to its mainland word in a text, the word stays as it is,
    and the mainland words OpenCC's regional conversions would write over are no phrase of it."""
    table = canonical._phrases()[2]
    for form, word in table.items():
        assert fold(form) == fold(word) == word, (form, word)
    assert not {"搜寻", "模拟", "预设", "存取", "释出", "拨出", "忧郁"} & set(table)


# ---------------------------------------------------------------- case before look-alikes

# the scripts with case, each as code point ranges: Latin, Cyrillic, Greek (final sigma too),
# Armenian, Georgian (Mtavruli and Mkhedruli), Cherokee, Deseret, Osage, Warang Citi, Adlam
_CASED_SCRIPTS = {
    "latin": ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x1E00, 0x1EFF)),
    "cyrillic": ((0x400, 0x52F), (0x1C80, 0x1C88), (0xA640, 0xA69F)),
    "greek": ((0x370, 0x3FF), (0x1F00, 0x1FFF)),
    "armenian": ((0x531, 0x58A),),
    "georgian": ((0x10A0, 0x10FF), (0x1C90, 0x1CBF), (0x2D00, 0x2D2F)),
    "cherokee": ((0x13A0, 0x13FF), (0xAB70, 0xABBF)),
    "deseret": ((0x10400, 0x1044F),),
    "osage": ((0x104B0, 0x104FF),),
    "warang_citi": ((0x118A0, 0x118FF),),
    "adlam": ((0x1E900, 0x1E95F),),
}


def _script_text(ranges: tuple[tuple[int, int], ...]) -> st.SearchStrategy[str]:
    letters = st.one_of(
        [
            st.characters(min_codepoint=lo, max_codepoint=hi, categories=("L", "M"))
            for lo, hi in ranges
        ]
    )
    return st.lists(letters | st.sampled_from(" \n.,"), max_size=60).map("".join)


_ANY_CASED = st.sampled_from(sorted(_CASED_SCRIPTS)).flatmap(
    lambda name: _script_text(_CASED_SCRIPTS[name])
)


@settings(max_examples=600, deadline=None)
@given(_ANY_CASED)
def test_a_text_and_its_capitals_small_letters_and_title_case_fold_alike(text: str) -> None:
    forms = {text.lower(), text.upper(), text.title(), text.casefold(), text.capitalize()}
    folds = {fold(form) for form in forms}
    assert len(folds) == 1, folds
    once = folds.pop()
    assert fold(once) == once


@settings(max_examples=300, deadline=None)
@given(_ANY_CASED)
def test_a_text_of_one_cased_script_folds_as_its_small_letters(text: str) -> None:
    # a letter that looks like I or l is read from its neighbours in a word with an ASCII
    # letter alone (a Latin word in disguise): a text of another script folds as written
    if not any(c.isascii() and c.isalpha() for c in text):
        assert fold(text) == fold(text.lower())


@pytest.mark.parametrize(
    "text",
    [
        "Вы должны указать адрес электронной почты",
        "Πρέπει να δηλώσετε μια διεύθυνση ηλεκτρονικού ταχυδρομείου",
        "Ο Σωκράτης είπε ότι ο βίος είναι σύντομος",  # final sigma
        "Հայաստանի մայրաքաղաքը Երևանն է",
        "ქართული ენა",
    ],
)
def test_a_real_text_in_capitals_or_title_case_is_the_same_text(text: str) -> None:
    assert fold(text.upper()) == fold(text) == fold(text.title())
    assert features.tokenize(text.upper()) == features.tokenize(text)


def test_the_capital_of_a_look_alike_reads_as_its_small_letter() -> None:
    # the capitals В Н М Т К look like B H M T K, their small forms like no ASCII letter:
    # both are read as one (the same word at a sentence's start and in its middle)
    assert fold("ВЫ ДОЛЖНЫ") == fold("Вы должны") == fold("вы должны")
    # a Latin word in disguise keeps its readings: Greek Ν is N inside one, ν is v
    assert fold("ΝΕWS gοοd ιnνest") == "news good invest"
    assert fold("ΝΑΙ") == fold("ναι") == fold("Ναι")


async def test_a_russian_comment_sent_again_in_capitals_is_its_copy() -> None:
    comment = "Вы должны указать адрес доставки"
    for copy in (comment.upper(), comment.title()):
        _, second = await _verdicts(
            Engine(MemoryIndex()), [Article("a", comment), Article("b", copy)]
        )
        assert (second.verdict, second.duplicate_of, second.method) == ("duplicate", "a", "exact")


async def test_long_russian_and_greek_documents_in_capitals_are_their_copies() -> None:
    from tests.sketch.cased_texts import GREEK, RUSSIAN, documents

    docs = documents(RUSSIAN, 20) + documents(GREEK, 20)
    assert min(len(d.split()) for d in docs) >= 40
    originals = [Article(f"d{i}", d) for i, d in enumerate(docs)]
    copies = [
        Article(f"{form}{i}", getattr(d, form)())
        for form in ("upper", "title")
        for i, d in enumerate(docs)
    ]
    verdicts = await _verdicts(Engine(MemoryIndex()), [*originals, *copies])
    found = [v.duplicate_of == f"d{int(v.id[5:])}" for v in verdicts[len(docs) :]]
    assert sum(found) >= 2 * 39


# ---------------------------------------------------------------- marks a language writes

# short comments that differ by one mark a language writes: other words, never one text. The
# verdict of the second and the earlier texts it names as related (a word alone is too short
# to be compared; a sentence that changed one word is related, or a near copy for Thai, whose
# words have no spaces between them)
_ONE_MARK_APART = [
    ("ไม้สวย", "ไม่สวย", "original", []),  # Thai: wood is pretty / not pretty (tone marks)
    ("ร้านนี้ไม้สวยมาก", "ร้านนี้ไม่สวยมาก", "near_duplicate", []),
    ("เสื้อตัวนี้", "เสือตัวนี้", "near_duplicate", []),  # Thai: this shirt / this tiger
    ("mua", "múa", "original", []),  # Vietnamese: buy / dance
    ("bán", "bạn", "original", []),  # Vietnamese: sell / friend
    ("Tôi muốn mua cái này", "Tôi muốn múa cái này", "original", ["a"]),
    ("Anh ấy bán nhà rồi", "Anh ấy bạn nhà rồi", "original", []),
    ("कुल", "कल", "original", []),  # Hindi: total / tomorrow (a vowel sign)
    ("कुल कितने लोग आए", "कल कितने लोग आए", "original", ["a"]),
    ("мой", "мои", "original", []),  # Russian: my / my (plural): й
    ("это мой дом", "это мои дом", "original", ["a"]),
    ("año", "ano", "original", []),  # Spanish: year / anus
    ("Feliz año nuevo a todos", "Feliz ano nuevo a todos", "original", ["a"]),
    ("schön", "schon", "original", []),  # German: beautiful / already
    ("Das ist schön so", "Das ist schon so", "original", []),
]


@pytest.mark.parametrize(("first", "second", "verdict", "related"), _ONE_MARK_APART)
async def test_texts_one_written_mark_apart_are_not_one_text(
    first: str, second: str, verdict: str, related: list[str]
) -> None:
    assert fold(first) != fold(second)
    _, v = await _verdicts(Engine(MemoryIndex()), [Article("a", first), Article("b", second)])
    assert (v.verdict, [r.id for r in v.related]) == (verdict, related)


def test_a_script_keeps_its_marks_and_marks_stay_in_their_words() -> None:
    assert fold("ไม่สวย") == "ไม่สวย"  # Thai vowel and tone signs are kept
    assert features.tokenize("ไม้สวย ดี") == ["ไม้สวย", "ดี"]
    assert features.tokenize("कुल कितने") == ["कुल", "कितने"]
    assert features.tokenize("Cafe\u0301 au lait") == ["café", "au", "lait"]
    norms = [features.normalize(t) for t in ("ไม้สวย ดี", "कुल कितने लोग", "e\u0301te\u0301")]
    assert features.token_counts(norms) == [
        len(features.tokenize(n, normalized=True)) for n in norms
    ]


@pytest.mark.parametrize("name", ["vowel_marks", "random_marks", "zalgo", "precomposed_vowels"])
def test_marks_added_to_disguise_a_story_are_still_removed(name: str) -> None:
    from harness import disguises

    stories = [r["text"] for r in data.reuters() if len(r["text"].split()) > 80][:20]
    same = sum(
        features.normalize(disguises.disguise(name, s, i)) == features.normalize(s)
        for i, s in enumerate(stories)
    )
    assert same >= 19


# a paragraph in each language that writes marks, as its writers write it (our own prose)
_MARKED_PROSE = {
    "es": "El año pasado la ciudad inauguró una biblioteca pública en el barrio antiguo, "
    "y los niños pueden leer allí después de la escuela sin pagar nada.",
    "de": "Die Straßenbahn fährt seit Montag wieder durch die Innenstadt, nachdem die "
    "Brücke über den Fluss für drei Wochen gesperrt war; Anwohner freuen sich.",
    "fr": "La mairie a décidé d'ouvrir la piscine municipale dès le mois de mai, et les "
    "élèves du quartier pourront y apprendre à nager gratuitement.",
    "vi": "Năm ngoái thành phố đã mở một thư viện mới ở khu phố cổ, và trẻ em có thể đến "
    "đọc sách miễn phí sau giờ học mỗi ngày.",
    "ru": "В прошлом году в старом районе открылась новая библиотека, и теперь дети могут "
    "читать там после школы каждый день совершенно бесплатно.",
}


@pytest.mark.parametrize("lang", sorted(_MARKED_PROSE))
def test_a_language_keeps_the_marks_it_writes(lang: str) -> None:
    text = _MARKED_PROSE[lang]
    assert fold(text) == unicodedata.normalize("NFC", text.casefold()).translate(canonical._table())
    assert fold(fold(text)) == fold(text) and fold(text.upper()) == fold(text)


def _expanding_code_points() -> list[str]:
    """Every code point compatibility decomposition or case folding writes as more than one
    character, from the Unicode data (not from the form's own table)."""
    return [
        chr(c)
        for c in range(0x80, 0x110000)
        if not 0xD800 <= c < 0xE000
        and (len(unicodedata.normalize("NFKD", chr(c))) > 1 or len(chr(c).casefold()) > 1)
    ]


def _most_a_fold_adds(text: str) -> int:
    return max(canonical.EXPANSION_FLOOR, int(canonical.EXPANSION_SHARE * len(text)))


def test_no_code_point_makes_a_form_longer_than_its_bound() -> None:
    # U+FDFA alone was written as 18 characters, and every stage after the form worked on them:
    # a text of it cost 10-16 times news per KB
    chars = _expanding_code_points()
    assert len(chars) > 5000  # letters with marks, ligatures, squared words, case expansions
    for char in chars:
        for text in (char * 1000, (char + " ") * 500, char * 3 + "x" * 997):
            assert len(fold(text)) <= len(text) + _most_a_fold_adds(text), (hex(ord(char)), text)


def test_the_expanding_table_is_what_the_unicode_data_gives() -> None:
    table = canonical_data.EXPANDING
    extra = dict(zip(table[0::2], map(ord, table[1::2]), strict=True))
    assert extra["\ufdfa"] == 17 and extra["\u3316"] == 5 and extra["\ufb03"] == 2
    assert extra["\u2474"] == 2 and extra["\u00df"] == 1 and extra["\u0149"] == 1
    assert "\u00e9" not in extra and "\uac00" not in extra  # a letter and marks compose again
    # read as its letter before decomposing: a text of them is a styled disguise, not a long one
    assert "\u249c" not in extra and "\u24d0" not in extra
    before = canonical._before_nfkd()
    for char in _expanding_code_points():  # what makes more characters after composing
        if ord(char) in before:
            assert char not in extra, hex(ord(char))
            continue
        parts = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", char).casefold())
        assert extra.get(char, 0) == len(unicodedata.normalize("NFC", parts)) - 1, hex(ord(char))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["\ufdfa", "\u3316", "\ufb03", "\u2474", "\u00df", "\u0149", "\u2026"]),
            st.text(max_size=6),
        ),
        max_size=60,
    ).map("".join)
)
def test_a_text_of_expanding_code_points_folds_within_its_bound(text: str) -> None:
    assert len(fold(text)) <= len(text) + _most_a_fold_adds(text)
    assert fold(fold(text)) == fold(text)
    assert canonical.fold_each([text, "a\ufdfa", text]) == [fold(text), fold("a\ufdfa"), fold(text)]


def test_a_text_past_its_bound_keeps_its_expanding_code_points_as_written() -> None:
    assert fold("\ufdfa" * 100) == "\ufdfa" * 100
    assert fold("Stra\u00dfe " + "\u3316" * 300) == "stra\u00dfe " + "\u3316" * 300
    # within it, each reads as what it writes: a name, a ligature, a short text of them
    assert (
        fold("Muhammad \ufdfa said")
        == "muhammad " + unicodedata.normalize("NFKD", "\ufdfa") + " said"
    )
    assert fold("\ufb03ce " * 30) == "ffice " * 30
    assert fold("\u3316" * 12) == "\u30ad\u30ed\u30e1\u30fc\u30c8\u30eb" * 12


def test_real_text_folds_as_it_did_before_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [r["text"] for r in data.reuters()[:2000]] + [r["text"] for r in data.zh_reviews()]
    texts += [
        "Die Stra\u00dfe ist gro\u00df. " * 20,
        "\u682a\u5f0f\u4f1a\u793e\u3068\u3001\u337f\u306e\u540d\u524d\u3002" * 10,
        "The e\ufb03cient o\ufb03ce \ufb01led its \ufb02ow report. " * 10,
        (  # a hadith's opening, the honorific once a sentence
            "\u0639\u0646 \u0623\u0628\u064a \u0647\u0631\u064a\u0631\u0629 \u0623\u0646 "
            "\u0631\u0633\u0648\u0644 \u0627\u0644\u0644\u0647 \ufdfa \u0642\u0627\u0644: "
            "\u0645\u0646 \u0643\u0627\u0646 \u064a\u0624\u0645\u0646 "
            "\u0628\u0627\u0644\u0644\u0647 "
            "\u0648\u0627\u0644\u064a\u0648\u0645 \u0627\u0644\u0622\u062e\u0631 "
            "\u0641\u0644\u064a\u0642\u0644 \u062e\u064a\u0631\u0627. "
        )
        * 10,
        "\u503c\u7684\u63a8\u8350\u5440\u2026\u2026",
    ]
    assert sum(canonical.expansion(t) > 0 for t in texts) > 300  # the reviews' \u2026 among them
    lines = [line for t in texts for line in t.split("\n")]

    def forms() -> tuple[list[str], ...]:
        canonical.forget_folds()
        parts = canonical.fold_each(lines, parts=True)
        return canonical.fold_each(texts), [fold(t) for t in texts], parts

    bounded = forms()
    monkeypatch.setattr(canonical, "EXPANSION_SHARE", 1e9)  # no bound
    assert bounded == forms()
    canonical.forget_folds()


def test_the_lines_of_a_text_are_bounded_as_the_text() -> None:
    # each line alone is under the floor; together they are a text of U+FDFA
    lines = [f"\ufdfa{i}" for i in range(400)]
    folded = canonical.fold_each(lines, parts=True)
    assert folded == [f"\ufdfa{i}" for i in range(400)]
    assert canonical.fold_each(lines) == [fold(line) for line in lines]
    assert fold(lines[0]).startswith("\u0635\u0644\u0649 ")  # alone, under its bound
    # a line of a real text among them keeps its form; a private-use character its own
    mixed = ["Stra\u00dfe \ue000", *lines, "\u3316 \u2026"]
    assert canonical.fold_each(mixed, parts=True)[0] == "strasse \ue000"
    assert canonical.fold_each(mixed, parts=True)[-1] == "\u3316 \u2026"
    # a real text within its bound: its lines fold as they do in it, a dense line too
    text = f"{STORY}\n\ufdfa \ufdfa \ufdfa \ufdfa\n{STORY}\n{STORY}"
    assert canonical.expansion(text.split("\n")[1]) > canonical.EXPANSION_FLOOR
    assert canonical.fold_each(text.split("\n"), parts=True) == fold(text).split("\n")


_MARKED = st.lists(
    st.sampled_from(
        ["a", "e", "q", " ", ".", "\u0301", "\u0308", "\u0303", "\u0323", "\u0336", "\u0436",
         "\u0e01", "\u0e48", "\u5b57", "1", "word", "\U00010400", "\u064e", "\u0628", "\u304b",
         "\u3099"]
    ),
    max_size=40,
).map("".join)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_MARKED, min_size=2, max_size=6))
def test_marks_of_texts_judged_at_once_are_each_text_judged_alone(texts: list[str]) -> None:
    joined = unicodedata.normalize("NFD", "\n".join(texts))
    units = [t.count("\n") + 1 for t in texts]
    alone = "\n".join(canonical._composed(p) for p in canonical._pieces(joined, units))
    assert canonical._composed_each(joined, units) == alone == canonical._composed(joined, units)


def test_short_accented_lines_are_judged_each_alone() -> None:
    lines_ = ["e\u0301t\u0301e\u0301 a\u0301 b\u0301c\u0301d\u0301e\u0301f\u0301g", "e\u0301"]
    lines_ += ["caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber", "q\u0301"]
    assert canonical.fold_each(lines_, parts=True) == [fold(line) for line in lines_]
