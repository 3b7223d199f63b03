"""The compiled core's text kernels (``text_features``: canonical forms -> white space folded ->
tokens -> shingles -> long texts' sketches and passages; ``char_sketches``: the short path's
character n-gram signatures) give exactly what the pure-Python reference gives
(:func:`neardup.sketch.sets.text_features`, :func:`neardup.sketch.sets.char_sketches`): on
generated text in every script, of every length, with any seed, shingle size and MinHash scheme
the policy allows, and on real text through the whole of ``prepare``.

The kernel reads no Unicode data of its own (the reference's white space and classes of code
points are passed in), so a script whose classes Rust's tables would read otherwise is no risk;
these tests hold that to be so.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness.data import reuters, zh_reviews
from neardup.sketch import facts, features, sets
from neardup.sketch.minhash import MinHasher
from neardup.stream import core
from neardup.stream.engine.prepare import Prepared, prepare
from neardup.stream.model import Article
from neardup.stream.namespaces.policy import PASSAGE_PROBES, PASSAGE_SPAN, Policy
from tests.stream.compiled_core import same_prepared


@pytest.fixture(autouse=True)
def _fresh_choice() -> Iterator[None]:
    """The core in use is chosen again after each test, once its environment is restored."""
    yield
    core.compiled.cache_clear()


# ------------------------------------------------------------------------- generated text

SCRIPTS = {
    "latin": "abcdefghijklmnopqrstuvwxyzABCDEFXYZéèàçñßøÅ",
    "marks": "e\u0301a\u0308o\u0327n\u0303\u20dd\u0488",  # combining marks, an enclosing one
    "cyrillic": "абвгдежзийклмнопрстуфхцчшщъыьэюяЁЖЯ",
    "greek": "αβγδεζηθικλμνξοπρστυφχψωΆΣς",
    "han": "中文的一是不了人我在有他这为之大来以个国重复检测",
    "kana": "ひらがなカタカナー々〆",
    "thai": "ภาษาไทยกับสระ\u0e31\u0e34\u0e48\u0e49",
    "arabic": "العربيةمعتشكيل\u064b\u064e\u0650\u0660\u0661\u0669",
    "devanagari": "हिन्दीभाषा\u093e\u093f\u094d",
    "hangul": "한국어텍스트\u3164\u115f",
    "digits": "0123456789.,:%$-0.5,1.2.3,,4..5x9q3",
    "invisible": "\u200b\u200c\u200d\u2060\ufeff\u00ad\u034f",
    "astral": "😀👍🏽🇫🇷\U000e0067🏴𝐀𝐛𝟏𠀀𠀁𪜀\U0001f3fb",  # emoji, tags, math letters, CJK ext B
    "spaces": " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2007\u2028\u2029\u202f\u3000",
    "punctuation": "!?.,;:'\"()[]{}<>&@#_-—–…«»“”",
}
_ANY = st.characters(exclude_categories=("Cs",))  # any code point but a lone surrogate


def _script_text(alphabet: str) -> st.SearchStrategy[str]:
    """Words of one script (and any character now and then), separated by white space."""
    letters = st.one_of(st.sampled_from(alphabet), _ANY)
    word = st.text(letters, min_size=1, max_size=8)
    gap = st.text(st.sampled_from(SCRIPTS["spaces"]), min_size=1, max_size=3)
    return st.lists(st.tuples(word, gap), max_size=120).map(
        lambda parts: "".join(w + g for w, g in parts)
    )


def _mixed(draw_from: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of([_script_text(s) for s in draw_from]), max_size=4).map("".join)


text = st.one_of(
    *[_script_text(alphabet) for alphabet in SCRIPTS.values()],
    _mixed(list(SCRIPTS.values())),
    st.text(_ANY, max_size=400),
    st.sampled_from(["", " ", "\n", "a", "中", "😀", "a b", " a  b ", "\x00", "a\x00b"]),
)
batch = st.lists(text, min_size=1, max_size=10)
seeds = st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 0x6E656172, 2**64 - 1]))
hashers = st.builds(
    MinHasher,
    num_perm=st.one_of(st.integers(1, 200), st.sampled_from([1, 128, 256])),
    seed=seeds,
    scheme=st.sampled_from(["oph", "kperm"]),
)
passage_args = st.builds(
    sets.Passages,
    width=st.integers(1, 10),
    span=st.one_of(st.integers(1, 20), st.just(PASSAGE_SPAN)),
    limit=st.one_of(st.integers(0, 70), st.just(PASSAGE_PROBES)),
)


def _assert_same_features(a: sets.TextFeatures, b: sets.TextFeatures) -> None:
    assert a.batch.codes.dtype == b.batch.codes.dtype
    assert np.array_equal(a.batch.codes, b.batch.codes)
    assert np.array_equal(a.batch.starts, b.batch.starts)
    assert np.array_equal(a.batch.ends, b.batch.ends)
    assert [a.batch.text(i) for i in range(len(a.batch))] == [
        b.batch.text(i) for i in range(len(b.batch))
    ]
    assert a.hashes.dtype == b.hashes.dtype == np.uint64
    assert np.array_equal(a.hashes, b.hashes)
    assert list(a.offsets) == list(b.offsets)
    assert a.long == b.long
    for x, y in zip(a.sketches, b.sketches, strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    assert a.sketches.signatures.shape == b.sketches.signatures.shape
    assert a.passages.dtype == b.passages.dtype == np.uint64
    assert np.array_equal(a.passages, b.passages)
    assert a.passage_offsets == b.passage_offsets
    for x, y in zip(a.digit_runs, b.digit_runs, strict=True):
        assert x.dtype.kind == y.dtype.kind and np.array_equal(x, y)


def _both(
    folded: features.TextBatch,
    hasher: MinHasher,
    w: int,
    seed: int,
    min_tokens: int,
    passages: sets.Passages,
) -> tuple[sets.TextFeatures, sets.TextFeatures]:
    ref = sets.text_features(
        hasher, folded, w=w, seed=seed, min_tokens=min_tokens, passages=passages
    )
    fast = core.text_features(
        hasher, folded, w=w, seed=seed, min_tokens=min_tokens, passages=passages
    )
    return ref, fast


@settings(deadline=None)
@given(
    batch,
    st.booleans(),
    hashers,
    st.one_of(st.integers(1, 8), st.just(3)),
    seeds,
    st.one_of(st.integers(0, 60), st.just(30)),
    passage_args,
)
@example(
    ["", "a", "a b c d", "1,750 4.5 q3 9x 7..8 9,,0 3:00 1.2.3"],
    True,
    MinHasher(),
    3,
    0x6E656172,
    30,
    sets.Passages(6, 16, 64),
)
@example([" \u3000 ", "\x1c a \x85 b \xa0"], False, MinHasher(), 1, 0, 0, sets.Passages(1, 1, 1))
@example(["𝐀𝐛 𠀀𠀁 😀", "a" * 3000], False, MinHasher(), 3, 1, 1, sets.Passages(6, 16, 64))
# many distinct words: runs of passages whose smallest differ
@example(
    [" ".join(f"w{i * 7919 % 1000}" for i in range(400))],
    False,
    MinHasher(),
    3,
    5,
    30,
    sets.Passages(6, 16, 64),
)
def test_text_features_equal_the_reference(
    kernel: ModuleType,
    texts: list[str],
    canonical: bool,
    hasher: MinHasher,
    w: int,
    seed: int,
    min_tokens: int,
    passages: sets.Passages,
) -> None:
    """Any texts (their canonical forms, or as they come: the kernel takes any code points),
    any shingle size, seed, MinHash scheme, length of the short path and passage reading: the
    normalised texts, every shingle, which texts are long, and their sketches and passages are
    the reference's."""
    folded = features.fold_batch(texts) if canonical else features.TextBatch.of(texts)
    ref, fast = _both(folded, hasher, w, seed, min_tokens, passages)
    _assert_same_features(ref, fast)


@settings(deadline=None)
@given(batch, hashers, st.integers(1, 6), seeds)
@example(["", " ", "ab", "a b c"], MinHasher(), 3, 0x6E656172)
def test_char_sketches_equal_the_reference(
    kernel: ModuleType, texts: list[str], hasher: MinHasher, n: int, seed: int
) -> None:
    """The short path's character n-gram signatures: any texts, n, seed and scheme."""
    norms = [features.normalize(t) for t in texts] + texts
    ref = sets.char_sketches(hasher, norms, n=n, seed=seed)
    fast = core.char_sketches(hasher, norms, n=n, seed=seed)
    assert ref[0].shape == fast[0].shape and np.array_equal(ref[0], fast[0])
    assert np.array_equal(ref[1], fast[1])


def test_both_paths_are_taken_by_generated_batches(kernel: ModuleType) -> None:
    """A batch with short and long texts in several scripts: some long, some not, every
    field equal (the properties above could draw only short ones)."""
    words = [w for s in ("latin", "cyrillic", "greek", "thai", "arabic") for w in SCRIPTS[s]]
    long_text = " ".join(words[i % len(words)] * (1 + i % 3) for i in range(400))
    texts = [long_text, "short one", SCRIPTS["han"] * 4, "", long_text[::-1], "😀 " * 50]
    ref, fast = _both(features.fold_batch(texts), MinHasher(), 3, 7, 30, sets.Passages(6, 16, 64))
    _assert_same_features(ref, fast)
    assert 0 < len(fast.long) < len(texts)
    assert len(fast.passages) > 0


# ------------------------------------------------------------------------------ real text


def _prepared(articles: list[Article], sketched: list[str | None] | None = None) -> list[Prepared]:
    policy = Policy()
    out: list[Prepared] = []
    for lo in range(0, len(articles), 512):
        part = sketched[lo : lo + 512] if sketched else None
        out.extend(prepare(policy, articles[lo : lo + 512], part))
    return out


@pytest.mark.parametrize("corpus", ["reuters", "zh_reviews"])
def test_every_field_of_prepare_is_the_same_with_either_core(
    kernel: ModuleType, monkeypatch: pytest.MonkeyPatch, corpus: str
) -> None:
    """Real text in batches of 512 through the whole of ``prepare``, as sent and with a part
    left out (what the engine sketches of a text less its boilerplate): every field of every
    ``Prepared`` equal under the compiled core and ``NEARDUP_CORE=python``."""
    rows = (reuters() if corpus == "reuters" else zh_reviews())[:4096]
    articles = [Article(str(r["id"]), str(r["text"])) for r in rows]
    cut: list[str | None] = [
        a.text.split("\n", 1)[-1] if i % 3 == 0 else None for i, a in enumerate(articles)
    ]
    monkeypatch.delenv(core.ENV, raising=False)
    core.compiled.cache_clear()
    assert core.name() == core.COMPILED
    fast = _prepared(articles), _prepared(articles, cut)
    monkeypatch.setenv(core.ENV, "python")
    core.compiled.cache_clear()
    try:
        assert core.name() == core.REFERENCE
        slow = _prepared(articles), _prepared(articles, cut)
    finally:
        monkeypatch.delenv(core.ENV)
        core.compiled.cache_clear()
    same_prepared(fast[0], slow[0])
    same_prepared(fast[1], slow[1])
    kinds = {p.kind.name for p in fast[0]}
    assert kinds == {"LONG", "SHORT"}  # both kernels were used


def test_real_short_texts_give_the_same_char_sketches(kernel: ModuleType) -> None:
    """The cores of real short texts, as the short path reads them."""
    norms = [features.normalize(r["text"]) for r in zh_reviews()[:3000]]
    cores = [facts.facts_of(n).core or n for n in norms]
    policy = Policy()
    ref = sets.char_sketches(policy.hasher, cores, n=policy.char_ngram, seed=policy.seed)
    fast = core.char_sketches(policy.hasher, cores, n=policy.char_ngram, seed=policy.seed)
    assert np.array_equal(ref[0], fast[0]) and np.array_equal(ref[1], fast[1])


def test_bad_input_raises_not_crash(kernel: ModuleType) -> None:
    """Spans outside the codes and impossible sizes are refused with a ValueError."""
    codes = np.frombuffer(b"abc def", np.uint8)
    bmp, space = features.bmp_classes(), features.space_table()
    none = np.empty(0, np.uint32), np.empty(0, np.uint8)
    args = (3, 1, 30, 128, 1, False, 1, 6, 16, 64)
    with pytest.raises(ValueError):
        kernel.text_features(
            codes, np.array([0], np.int64), np.array([99], np.int64), space, bmp, *none, *args
        )
    with pytest.raises(ValueError):
        kernel.text_features(
            codes, np.array([0], np.int64), np.array([7], np.int64), space[:5], bmp, *none, *args
        )
    with pytest.raises(ValueError):
        kernel.char_sketches(
            codes, np.array([4], np.int64), np.array([2], np.int64), 3, 1, 8, 1, False
        )
