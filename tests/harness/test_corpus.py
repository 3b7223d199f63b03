"""The benchmark corpus: deterministic per seed, and exact ground truth equal to pure Python."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from collections.abc import Set as AbstractSet

import numpy as np
import pytest

from harness import corpus
from harness.corpus import Doc, exact_pairs, exact_similarities, generate
from neardup.sketch.features import shingle_hashes, tokenize

THRESHOLDS = (0.05, 0.2, 0.5, 0.8, 0.95, 1.0)


def _python_jaccards(sets: Sequence[AbstractSet[Hashable]]) -> dict[tuple[int, int], float]:
    out = {}
    for i, j in itertools.combinations(range(len(sets)), 2):
        union = len(sets[i] | sets[j])
        out[(i, j)] = len(sets[i] & sets[j]) / union if union and sets[i] and sets[j] else 0.0
    return out


def _token_shingles(text: str, w: int = 3) -> set[tuple[str, ...]]:
    toks = tokenize(text)
    if 0 < len(toks) < w:
        return {tuple(toks)}
    return {tuple(toks[i : i + w]) for i in range(len(toks) - w + 1)}


@pytest.fixture(scope="module")
def small() -> list[Doc]:
    return generate(160, seed=11, dup_rate=0.4)


def test_same_seed_same_corpus() -> None:
    assert generate(300, seed=3) == generate(300, seed=3)
    assert generate(80, seed=3, lang="zh") == generate(80, seed=3, lang="zh")
    assert generate(300, seed=3) != generate(300, seed=4)


def test_prefix_stable_and_ids_unique() -> None:
    long, short = generate(200, seed=9), generate(50, seed=9)
    assert long[:50] == short
    assert len({d["id"] for d in long}) == len(long)


def test_shape_sources_and_lengths() -> None:
    docs = generate(1000, seed=5, words=300, dup_rate=0.3)
    seen: set[str] = set()
    for d in docs:
        assert set(d) == {"id", "text", "source", "mutation"}
        if d["source"] is None:
            assert d["mutation"] == "original"
        else:
            assert d["source"] in seen  # mutations copy earlier documents only
            assert d["mutation"] != "original"
        seen.add(d["id"])
    mutants = sum(d["source"] is not None for d in docs)
    assert 0.25 < mutants / len(docs) < 0.35
    kinds = {d["mutation"].split(":")[0].split("(")[0] for d in docs}
    assert {"original", "exact", "substitute", "insert", "delete", "reorder"} <= kinds
    lengths = [len(d["text"].split()) for d in docs if d["source"] is None]
    assert 260 < float(np.mean(lengths)) < 360
    assert docs[0]["source"] is None


def test_originals_differ() -> None:
    docs = [d for d in generate(400, seed=2) if d["source"] is None]
    sets = corpus.doc_shingles(docs)
    sims = [corpus.jaccard(sets[i], sets[i + 1]) for i in range(len(sets) - 1)]
    assert max(sims) < 0.2


def test_zh_documents_are_characters() -> None:
    docs = generate(60, seed=1, lang="zh", words=200)
    originals = [d for d in docs if d["source"] is None]
    sizes = [sum(not c.isspace() for c in d["text"]) for d in originals]
    assert min(sizes) >= 0.8 * 200
    assert 180 < float(np.mean(sizes)) < 320  # the last review may overshoot the target


def test_rejects_bad_arguments(small: list[Doc]) -> None:
    with pytest.raises(ValueError):
        generate(10, seed=1, lang="xx")
    with pytest.raises(ValueError):
        generate(10, seed=1, dup_rate=1.5)
    for t in (0.0, -0.1, 1.01):
        with pytest.raises(ValueError):
            exact_pairs(small, t)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_exact_pairs_equal_pure_python(lang: str) -> None:
    docs = generate(160, seed=11, dup_rate=0.4, lang=lang, words=120)
    sets = [set(shingle_hashes(d["text"]).tolist()) for d in docs]
    truth = _python_jaccards(sets)
    for t in THRESHOLDS:
        want = {p for p, j in truth.items() if j >= t}
        assert exact_pairs(docs, t) == want, t
        sims = exact_similarities(docs, t)
        assert all(sims[p] == truth[p] for p in want)
    assert exact_pairs(docs, 0.5)  # the mutations do produce near-duplicates


def test_hashed_shingles_match_token_tuples(small: list[Doc]) -> None:
    """The hashes stand for the token 3-grams themselves: no collision changes a similarity."""
    by_hash = _python_jaccards([set(shingle_hashes(d["text"]).tolist()) for d in small])
    by_tuple = _python_jaccards([_token_shingles(d["text"]) for d in small])
    assert by_hash == by_tuple


def test_verbatim_copies_are_exact_duplicates(small: list[Doc]) -> None:
    index = {d["id"]: i for i, d in enumerate(small)}
    ones = exact_pairs(small, 1.0)
    copies = [(index[d["source"]], i) for i, d in enumerate(small) if d["mutation"] == "exact"]
    assert copies
    assert set(copies) <= ones


def test_blocking_does_not_change_counts(small: list[Doc]) -> None:
    sets = corpus.doc_shingles(small)

    def collect(**limits: int) -> dict[tuple[int, int], int]:
        out: dict[tuple[int, int], int] = {}
        for a, b, inter in corpus._intersections(sets, **limits):
            out.update(zip(zip(a.tolist(), b.tolist(), strict=True), inter.tolist(), strict=True))
        return out

    reference = collect()
    assert collect(max_events=37, max_cells=500) == reference  # rows larger than a block
    assert collect(max_events=5000, max_cells=1) == reference
    py = {
        (i, j): len(np.intersect1d(sets[i], sets[j]))
        for i, j in itertools.combinations(range(len(sets)), 2)
    }
    assert reference == {p: c for p, c in py.items() if c}


def test_empty_and_tiny_inputs() -> None:
    empty = Doc(id="e", text="", source=None, mutation="original")
    word = Doc(id="w", text="hello", source=None, mutation="original")
    assert exact_pairs([], 0.5) == set()
    assert exact_pairs([empty, empty], 0.1) == set()
    assert exact_pairs([word, word, empty], 0.5) == {(0, 1)}


def test_pool_from_real_rows_and_given_text() -> None:
    texts = [
        "Alpha beta gamma delta epsilon. Zeta eta theta iota kappa lambda.",
        "Mu nu xi omicron pi rho. Sigma tau upsilon phi chi psi omega. E.g. short.",
    ]
    pool, vocab = corpus.pool_from(texts, "en")
    assert pool == (
        "Alpha beta gamma delta epsilon.",
        "Zeta eta theta iota kappa lambda.",
        "Mu nu xi omicron pi rho.",
        "Sigma tau upsilon phi chi psi omega.",
        "E.g. short.",
    )
    assert set(vocab) == set(" ".join(texts).split())
    with pytest.raises(ValueError, match="no text"):
        corpus.pool_from(["", "  "], "en")
    en, _ = corpus.load_pool("en")
    zh, _ = corpus.load_pool("zh")
    assert len(en) > 900 and len(zh) > 10_000  # the shipped corpora, not a stand-in


def test_groups_of_copies_are_near_copies_within_and_unrelated_across() -> None:
    groups = corpus.groups_of_copies(4, 3, seed=1)
    assert [len(g) for g in groups] == [3, 3, 3, 3]
    assert groups[1][2]["id"] == "g1-2"
    sets = [[shingle_hashes(a["text"]) for a in g] for g in groups]
    for g in sets:
        assert all(corpus.jaccard(g[0], other) >= 0.6 for other in g[1:])
    assert corpus.jaccard(sets[0][0], sets[1][0]) < 0.2
    assert corpus.groups_of_copies(4, 3, seed=1) == groups, "seeded"
