"""Which rows ``neardup dedup --kept`` keeps (:mod:`neardup.stream.cli.kept`): every original, or
one row per cluster as clusters stand at the end, when a later row's matches have merged them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st

from neardup.stream.cli.kept import ONE_PER_CLUSTER, ORIGINALS, Keeper, keeper_for
from neardup.stream.errors import TableError
from neardup.stream.model import Match, Verdict


def _verdict(doc_id: str, cluster: str, *matches: str, ns: str = "default") -> Verdict:
    if not matches:
        return Verdict(doc_id, ns, "original", None, doc_id, None, (), "new", None)
    found = tuple(Match(m, 0.9) for m in matches)
    return Verdict(doc_id, ns, "near_duplicate", matches[0], cluster, 0.9, found, "jaccard", None)


def _kept(mode: str, verdicts: list[Verdict]) -> set[int]:
    keeper = Keeper(mode)
    for number, v in enumerate(verdicts, start=1):
        keeper.add(number, v)
    return keeper.rows()


# a and b are apart; c matches both, so their clusters merge; d copies a; e is alone
MERGING = [
    _verdict("a", "a"),
    _verdict("b", "b"),
    _verdict("c", "a", "a", "b"),
    _verdict("d", "a", "a", "c"),
    _verdict("e", "e"),
]


def test_originals_keep_every_original_and_clusters_keep_their_first_row() -> None:
    assert _kept(ORIGINALS, MERGING) == {1, 2, 5}
    assert _kept(ONE_PER_CLUSTER, MERGING) == {1, 5}  # b's cluster merged into a's


def test_a_merge_into_a_cluster_seen_before_the_run_keeps_none_of_it() -> None:
    """``s`` was indexed before this run (the --store): its cluster is in the corpus already."""
    verdicts = [_verdict("x", "x"), _verdict("y", "s", "s", "x"), _verdict("z", "z")]
    assert _kept(ORIGINALS, verdicts) == {1, 3}
    assert _kept(ONE_PER_CLUSTER, verdicts) == {3}


def test_a_repeated_id_is_kept_once_and_namespaces_are_apart() -> None:
    verdicts = [
        _verdict("a", "a"),
        _verdict("a", "a"),  # the same article again: the same verdict
        _verdict("a", "a", ns="other"),
        _verdict("b", "a", "a", ns="other"),
    ]
    assert _kept(ORIGINALS, verdicts) == {1, 3}
    assert _kept(ONE_PER_CLUSTER, verdicts) == {1, 3}


@given(
    st.lists(st.lists(st.integers(0, 30), max_size=3), max_size=30),
)
def test_one_per_cluster_is_the_first_row_of_each_connected_component(
    picks: list[list[int]],
) -> None:
    """Row i matches some earlier rows (best first) and joins the first one's cluster: the rows
    kept are the first of each connected component of the match graph, all originals."""
    verdicts: list[Verdict] = []
    edges: dict[int, set[int]] = {}
    for i, wanted in enumerate(picks):
        matches = sorted({p % i for p in wanted}) if i else []
        cluster = verdicts[matches[0]].cluster if matches else f"d{i}"
        verdicts.append(_verdict(f"d{i}", cluster, *(f"d{m}" for m in matches)))
        for m in matches:
            edges.setdefault(i, set()).add(m)
            edges.setdefault(m, set()).add(i)
    firsts, seen = set(), set()
    for i in range(len(picks)):
        if i in seen:
            continue
        firsts.add(i + 1)
        todo = [i]
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
    assert _kept(ONE_PER_CLUSTER, verdicts) == firsts
    assert firsts <= _kept(ORIGINALS, verdicts)


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="keep must be"):
        Keeper("all")


@pytest.mark.parametrize(
    ("source", "kept", "keep", "says"),
    [
        ("in.csv", None, "originals", "--keep needs --kept FILE"),
        ("in.csv", "k.csv", "first", "--keep must be originals or one-per-cluster"),
        ("in.csv", "k.parquet", None, "k.parquet is no csv file"),
        ("in.csv", "k.txt", None, "unknown format of k.txt"),
        ("-", "k.jsonl", None, "needs INPUT to be a file, not stdin or a pipe"),
        ("in.csv", "in.csv", None, "the kept rows cannot overwrite INPUT"),
        ("in.csv", "nowhere/k.csv", None, "no such folder"),
    ],
)
def test_what_kept_and_keep_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, kept: str, keep: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("in.csv").write_text("id,text\n")
    with pytest.raises(typer.BadParameter, match=re.escape(says)):
        keeper_for(Path(source), None if kept is None else Path(kept), keep)


def test_an_unknown_input_format_is_the_inputs_error() -> None:
    with pytest.raises(TableError, match=r"unknown format of in\.txt"):
        keeper_for(Path("in.txt"), Path("k.jsonl"), None)
    assert keeper_for(Path("in.txt"), None, None) is None  # without --kept, for the reader to say
