"""The batch API: ``Index.add_many`` / ``check_many`` / ``judged`` and ``neardup.dedup`` /
``keep_mask``, over every shape of rows a user has (pairs, mappings, a pandas DataFrame, an Arrow
table or record batch, a generator), with one result per row in its place, verdicts equal to
adding the rows one by one, and the rows kept equal to ``neardup dedup --kept``'s."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from harness import data
from neardup import Index, Invalid, NeardupError, Policy, Verdict
from neardup.rows import CHUNK
from tests.stream.cli.test_dedup_tables import _read

STORIES = [d["text"] for d in data.reuters()[:200] if len(d["text"]) > 500][:12]


def _edited(text: str, k: int = 0) -> str:
    return text.replace(" the ", " a ", 2 + k) + f" Closing line number {k}."


# boilerplate off: a source's lines are learned from a whole batch at once, so with it on, rows
# added one by one may see a line as template a row earlier than rows added in a batch (the
# command and the worker batch alike: test_add_many_gives_the_commands_verdicts holds that)
NO_TEMPLATE = Policy(boilerplate_min_docs=0)


def _one_by_one(rows: list[tuple[Any, str]]) -> list[Any]:
    """What a loop of ``Index.add`` gives: a verdict, or the reason of the error it raises."""
    out: list[Any] = []
    with Index(policy=NO_TEMPLATE) as index:
        for doc_id, text in rows:
            try:
                out.append(_plain(index.add(doc_id, text)))
            except NeardupError as exc:  # an empty text, an id again with another text
                out.append(getattr(exc, "reason", type(exc).__name__))
    return out


def _plain(result: Verdict | Invalid) -> Any:
    """A result to compare: a verdict's contract (its JSON), an invalid row's reason."""
    return result.reason if isinstance(result, Invalid) else result.to_dict()


# a row: a story, an edit of one, an empty text or a text showing nothing; ids from a small set
# (a repeated id is the same article again), ints and strings alike
_texts = st.one_of(
    st.sampled_from(STORIES),
    st.builds(_edited, st.sampled_from(STORIES), st.integers(0, 3)),
    st.sampled_from(["", "   ", "\u200b"]),
)
_ids = st.one_of(st.integers(0, 30), st.sampled_from(["a", "b", "c", "é", "5"]))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(_ids, _texts), min_size=1, max_size=24))
def test_add_many_gives_what_adding_one_by_one_gives(rows: list[tuple[Any, str]]) -> None:
    with Index(policy=NO_TEMPLATE) as index:
        got = [_plain(r) for r in index.add_many(rows)]
    assert got == _one_by_one(rows)


def test_add_many_gives_the_commands_verdicts(tmp_path: Path) -> None:
    """Reuters stories, edited copies and rows that cannot be judged, over four batches: the
    library's results are ``neardup dedup``'s lines, one for one (an invalid row's ``line`` is
    the library's ``row``, counted from 0)."""
    stories = [d for d in data.reuters()[:1500] if d["text"].strip()]
    rows: list[dict[str, Any]] = [{"id": d["id"], "text": d["text"]} for d in stories]
    for k in range(0, len(stories), 7):  # a copy of every 7th story, some edited
        text = stories[k]["text"]
        rows.append({"id": f"copy-{k}", "text": _edited(text, k % 3) if k % 2 else text})
    for k in (3, 700, 1600):
        rows.insert(k, {"id": f"bad-{k}", "text": "\u200b"})
    corpus, out = tmp_path / "corpus.jsonl", tmp_path / "verdicts.jsonl"
    corpus.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    cmd = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", "--no-progress"]
    run = subprocess.run([*cmd, str(corpus), "-o", str(out)], capture_output=True, check=False)
    assert run.returncode == 2, run.stderr  # 2: some rows were invalid
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    with Index() as index:
        results = index.add_many(rows)
    got = [r.to_dict() for r in results]
    for line in lines:
        if line["verdict"] == "invalid":
            line["row"] = line.pop("line") - 1
    assert len(got) == len(lines) == len(rows)
    assert got == lines
    assert sum(r.verdict != "original" for r in results) > len(rows) // 10


def test_results_line_up_with_rows_across_chunks() -> None:
    n = 2 * CHUNK + 77
    bad = {0, CHUNK - 1, CHUNK, 2 * CHUNK, n - 1}
    rows = [
        (i, "" if i in bad else f"{STORIES[i % len(STORIES)]} Row {i} of the corpus.")
        for i in range(n)
    ]
    with Index() as index:
        results = index.add_many(rows)
        assert len(results) == n
        assert [r.row for r in results if isinstance(r, Invalid)] == sorted(bad)
        assert all(r.reason == "empty_text" for r in results if isinstance(r, Invalid))
        assert [r.id for r in results] == [str(i) for i in range(n)]
        assert len(index) == n - len(bad)
        assert list(index) == [str(i) for i in range(n) if i not in bad]


def test_every_shape_gives_the_same_results() -> None:
    texts = [STORIES[0], _edited(STORIES[0]), STORIES[1], "", STORIES[1]]
    ids = [10, 11, 12, 13, 14]
    pairs = list(zip(ids, texts, strict=True))
    dicts = [{"id": i, "text": t, "title": None} for i, t in pairs]
    frame = pd.DataFrame({"id": ids, "text": texts, "title": [None, "T", None, None, math.nan]})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    shapes: dict[str, Any] = {
        "pairs": pairs,
        "dicts": dicts,
        "generator": (p for p in pairs),
        "frame": frame,
        "table": table,
        "batch": table.to_batches()[0],
    }
    want = ["original", "near_duplicate", "original", "invalid", "duplicate"]
    seen = {}
    for name, rows in shapes.items():
        with Index() as index:
            results = index.add_many(rows)
        assert [r.verdict for r in results] == want, name
        assert [r.id for r in results] == ["10", "11", "12", "13", "14"], name
        assert results[1].duplicate_of == "10" and results[4].duplicate_of == "12", name
        seen[name] = [_plain(r) for r in results]
    assert all(v == seen["pairs"] for v in seen.values())


def test_columns_by_other_names_and_a_missing_column() -> None:
    frame = pd.DataFrame({"doc": ["x", "y"], "body": [STORIES[2], STORIES[2]]})
    with Index() as index:
        got = index.add_many(frame, id_field="doc", text_field="body")
        assert [(r.id, r.verdict) for r in got] == [("x", "original"), ("y", "duplicate")]
        with pytest.raises(KeyError, match=r"no column 'id', 'text'.*id_field="):
            index.add_many(frame)
        with pytest.raises(KeyError, match="no column 'text'"):
            index.add_many(pa.table({"id": [1], "content": ["a b c"]}))


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ({"id": 1.5, "text": STORIES[3]}, "invalid_id"),
        ({"text": STORIES[3]}, "missing_id"),
        ({"id": "a"}, "missing_text"),
        ({"id": "a", "text": 7}, "missing_text"),
        ({"id": "a", "text": STORIES[3], "title": 3}, "invalid_field"),
        ({"id": "a", "text": STORIES[3], "namespace": "other"}, "invalid_namespace"),
        (("a", STORIES[3], "x"), "not_a_row"),
        ("a bare text", "not_a_row"),
        (None, "not_a_row"),
    ],
)
def test_a_row_that_cannot_be_judged_is_invalid_in_its_place(row: Any, reason: str) -> None:
    with Index() as index:
        results = index.add_many([("before", STORIES[4]), row, ("after", STORIES[5])])
        assert [r.verdict for r in results] == ["original", "invalid", "original"]
        bad = results[1]
        assert isinstance(bad, Invalid)
        assert (bad.row, bad.reason, bad.namespace) == (1, reason, "default")
        assert bad.error and bad.duplicate_of is None
        assert set(bad.to_dict()) == {"id", "namespace", "verdict", "reason", "error", "row"}


def test_a_row_of_the_index_namespace_is_read() -> None:
    with Index(namespace="news") as index:
        (got,) = index.add_many([{"id": "a", "text": STORIES[3], "namespace": "news"}])
        assert (got.verdict, got.namespace) == ("original", "news")


def test_rows_that_are_no_rows_are_a_type_error() -> None:
    with Index() as index:
        for rows in ("some text", b"bytes", {"id": "a", "text": "x"}, 5):
            with pytest.raises(TypeError, match="rows must be"):
                index.add_many(rows)


def test_check_many_stores_nothing_and_judges_rows_alone() -> None:
    with Index() as index:
        index.add("a", STORIES[0])
        rows = [("q1", _edited(STORIES[0])), ("q2", STORIES[6]), ("q3", STORIES[6])]
        got = index.check_many(rows)
        assert [(r.verdict, r.duplicate_of) for r in got] == [
            ("near_duplicate", "a"),
            ("original", None),
            ("original", None),  # q2 was not stored: nothing to copy
        ]
        assert index.add("q2", STORIES[6]).verdict == "original"


def test_judged_registers_only_what_was_read() -> None:
    rows = [(i, f"{STORIES[i % 4]} Row {i}.") for i in range(CHUNK + 10)]
    with Index() as index:
        results = index.judged(rows)
        first = next(results)
        assert first.verdict == "original"
        # the first chunk is judged and registered, the rest not yet read
        assert index.check(rows[CHUNK - 1][1]).verdict == "duplicate"
        assert index.check(rows[CHUNK + 5][1]).duplicate_of != str(CHUNK + 5)
        assert index.query(f"{STORIES[0]} Row {CHUNK + 8}.")[:1] != [str(CHUNK + 8)]
        rest = list(results)
        assert len(rest) == CHUNK + 9
        assert index.check(rows[CHUNK + 5][1]).duplicate_of == str(CHUNK + 5)


# dedup and keep_mask: the rows neardup dedup --kept keeps


def _corpus() -> pd.DataFrame:
    texts = [
        STORIES[0],
        _edited(STORIES[0]),
        "",
        STORIES[1],
        STORIES[1],
        _edited(STORIES[1], 2),
        STORIES[2],
        STORIES[0],
    ]
    ids = [1, 2, 3, 4, 5, 6, 7, 1]  # the last repeats an id
    return pd.DataFrame({"id": ids, "text": texts, "n": range(len(ids))})


def _cli_kept(frame: pd.DataFrame, tmp_path: Path, keep: str) -> list[int]:
    source, kept = tmp_path / f"in-{keep}.parquet", tmp_path / f"kept-{keep}.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), source)
    cmd = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", "--no-progress"]
    run = subprocess.run(
        [*cmd, str(source), "-o", str(tmp_path / "v.jsonl"), "--kept", str(kept), "--keep", keep],
        capture_output=True,
        check=False,
    )
    assert run.returncode in (0, 2), run.stderr
    return [int(row["n"]) for row in _read(kept)]


@pytest.mark.parametrize("keep", ["originals", "one-per-cluster"])
def test_dedup_keeps_the_rows_the_command_keeps(keep: str, tmp_path: Path) -> None:
    frame = _corpus()
    want = _cli_kept(frame, tmp_path, keep)
    kept = neardup.dedup(frame, keep=keep)
    assert isinstance(kept, pd.DataFrame)
    assert kept["n"].tolist() == want
    assert kept.index.tolist() == want  # the frame's own labels kept
    table = neardup.dedup(pa.Table.from_pandas(frame, preserve_index=False), keep=keep)
    assert isinstance(table, pa.Table) and table.column("n").to_pylist() == want
    records = frame.to_dict("records")
    assert [r["n"] for r in neardup.dedup(records, keep=keep)] == want
    assert [r["n"] for r in neardup.dedup(iter(records), keep=keep)] == want
    mask = neardup.keep_mask(frame, keep=keep)
    assert [n for n, m in enumerate(mask) if m] == want


def test_the_rows_kept_by_default() -> None:
    kept = neardup.dedup(_corpus())
    # the originals (1, 4, 7), the row that cannot be judged (3, empty); the repeat of id 1 once
    assert kept["id"].tolist() == [1, 3, 4, 7]


def test_dedup_against_an_open_index_leaves_out_what_it_held() -> None:
    with Index() as index:
        index.add("old", STORIES[1])
        kept = neardup.dedup(_corpus(), index=index)
        assert kept["id"].tolist() == [1, 3, 7]
        assert "4" in index and 7 in index and 3 not in index  # 3: never judged, never added
    with pytest.raises(ValueError, match="keep must be"):
        neardup.keep_mask(_corpus(), keep="first")


def test_the_library_reads_rows_in_the_commands_batches() -> None:
    """Verdicts depend on the batch (a batch's rows teach boilerplate together): the same size
    as the command's gives the command's verdicts."""
    from neardup.stream.cli.dedup import BATCH

    assert CHUNK == BATCH
