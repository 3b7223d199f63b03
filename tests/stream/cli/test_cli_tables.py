"""The corpus files ``neardup dedup`` reads and the kept rows it writes
(:mod:`neardup.stream.cli.tables`): any rows written as CSV or Parquet by their own libraries read
back as the same ids and texts, numbered alike in both passes; the kept rows keep every column in
input order, in the input's format; and each way a file cannot be read says so."""

from __future__ import annotations

import csv
import gzip
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.stream.cli.tables import (
    CSV,
    JSONL,
    PARQUET,
    open_table,
    table_format,
    write_kept,
)
from neardup.stream.errors import BrokenTableError, InvalidMessage, TableError
from neardup.stream.schema import article_from_obj

# any text UTF-8 can carry (no lone surrogates), commas, quotes, CR and LF included
TEXT = st.text(
    st.characters(exclude_categories=["Cs"]) | st.sampled_from([",", '"', "\n", "\r"]),
    max_size=40,
)
ROWS = st.lists(st.tuples(TEXT, TEXT, TEXT), max_size=12)


def _write_csv(path: Path, header: list[str], rows: Sequence[tuple[str, ...]]) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def _write_parquet(path: Path, header: list[str], rows: Sequence[tuple[Any, ...]]) -> None:
    columns = {name: [row[i] for row in rows] for i, name in enumerate(header)}
    pq.write_table(pa.table(columns, schema=pa.schema([(n, pa.string()) for n in header])), path)


def _write(path: Path, header: list[str], rows: Sequence[tuple[str, ...]]) -> None:
    if table_format(path) == PARQUET:
        _write_parquet(path, header, rows)
    elif table_format(path) == CSV:
        _write_csv(path, header, rows)
    else:
        lines = (json.dumps(dict(zip(header, row, strict=True))) + "\n" for row in rows)
        path.write_text("".join(lines), encoding="utf-8")


def _read(
    path: Path, columns: tuple[str, ...] = ("id", "text"), optional: tuple[str, ...] = ()
) -> list[tuple[int, Any]]:
    with open_table(path, columns, optional) as reader:
        return [(number, row) for number, row, _ in reader.rows()]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("-", JSONL),
        ("/dev/fd/63", JSONL),  # a pipe: JSON lines, as stdin
        ("c.jsonl", JSONL),
        ("c.JSONL.gz", JSONL),
        ("c.ndjson", JSONL),
        ("c.csv", CSV),
        ("c.v2.csv.gz", CSV),
        ("c.parquet", PARQUET),
    ],
)
def test_the_format_is_the_extension(name: str, fmt: str) -> None:
    assert table_format(Path(name)) == fmt


@pytest.mark.parametrize("name", ["c.txt", "c.parquet.gz", "c.tsv", "c.csv.zip"])
def test_an_unknown_extension_is_refused(name: str) -> None:
    with pytest.raises(TableError, match="unknown format"):
        table_format(Path(name))


@settings(max_examples=60)
@given(rows=ROWS, suffix=st.sampled_from([".csv", ".csv.gz", ".parquet"]))
def test_any_rows_read_back_as_written(rows: list[tuple[str, str, str]], suffix: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"corpus{suffix}"
        _write(path, ["id", "text", "url"], rows)
        got = _read(path, ("id", "text"), ("url",))
    # the id and text as written; an optional column's empty CSV cell is no value, as JSON's null
    # (Parquet has nulls of its own: its empty string is one)
    null = "" if suffix == ".parquet" else None
    assert got == [
        (n, {"id": i, "text": t, "url": u or null}) for n, (i, t, u) in enumerate(rows, start=1)
    ]


@settings(max_examples=60)
@given(rows=ROWS, picks=st.sets(st.integers(1, 12)), suffix=st.sampled_from([".csv", ".parquet"]))
def test_the_kept_rows_keep_every_column_in_input_order(
    rows: list[tuple[str, str, str]], picks: set[int], suffix: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, kept = Path(folder) / f"in{suffix}", Path(folder) / f"kept{suffix}"
        _write(source, ["id", "text", "other"], rows)
        written = write_kept(source, kept, picks)
        got = _read(kept, ("id", "text", "other"))
        if suffix == ".parquet":
            assert pq.read_schema(kept) == pq.read_schema(source)
    wanted = [row for n, row in enumerate(rows, start=1) if n in picks]
    assert written == len(wanted)
    assert [(r["id"], r["text"], r["other"]) for _, r in got] == wanted


def test_json_lines_are_copied_byte_for_byte(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    lines = [b'{"id": "a", "text": "x", "more": [1, 2]}\r\n', b"\n", b"not json\n", b'{"id": "b"}']
    source.write_bytes(b"".join(lines))
    got = _read(source)
    assert [n for n, _ in got] == [1, 3, 4]  # a blank line is skipped, but counted
    assert got[0][1] == {"id": "a", "text": "x", "more": [1, 2]}
    assert isinstance(got[1][1], InvalidMessage) and got[1][1].reason == "invalid_json"
    kept = tmp_path / "kept.jsonl.gz"
    assert write_kept(source, kept, {1, 4}) == 2
    assert gzip.decompress(kept.read_bytes()) == lines[0] + lines[3] + b"\n"


def test_a_large_csv_field_is_read_whole(tmp_path: Path) -> None:
    """The csv module refuses fields over 128 KiB by default: a long text is the size check's
    to refuse (as in JSON lines), not the reader's."""
    text = "word " * 100_000
    _write_csv(tmp_path / "in.csv", ["id", "text"], [("1", text)])
    assert _read(tmp_path / "in.csv") == [(1, {"id": "1", "text": text})]


def test_only_the_wanted_columns_are_read(tmp_path: Path) -> None:
    header = ["body", "key", "namespace", "junk"]
    rows = [("hello", "7", "news", "x"), ("again", "8", "", "y")]
    for name in ("in.csv", "in.parquet"):
        _write(tmp_path / name, header, rows)
        with open_table(tmp_path / name, ("key", "body"), ("namespace", "url")) as reader:
            got = [row for _, row, _ in reader.rows()]
            assert reader.position() == (2 if name.endswith(".parquet") else reader.total)
        null = "" if name.endswith(".parquet") else None
        assert got == [
            {"key": "7", "body": "hello", "namespace": "news"},
            {"key": "8", "body": "again", "namespace": null},
        ], name


@pytest.mark.parametrize("name", ["in.csv", "in.parquet"])
def test_a_missing_column_is_named_with_those_there(tmp_path: Path, name: str) -> None:
    _write(tmp_path / name, ["doc", "body"], [("1", "x")])
    with pytest.raises(TableError, match=r"has no column 'id', 'text' \(its columns: doc, body\)"):
        open_table(tmp_path / name, ("id", "text"))


def test_an_empty_csv_has_no_columns(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_bytes(b"")
    with pytest.raises(TableError, match=r"its columns: none"):
        open_table(tmp_path / "in.csv", ("id", "text"))


def test_bytes_that_are_no_utf8_refuse_their_row_alone_and_are_kept_as_they_were(
    tmp_path: Path,
) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(b'id,text,url,raw\n1,caf\xe9,,\xff\n2,"ok",h\xe9,x\n3,fine,,\n')
    with open_table(path, ("id", "text"), ("url",)) as reader:
        (_, first, _), (_, second, _), (_, third, _) = reader.rows()
    with pytest.raises(InvalidMessage, match="unpaired surrogates"):  # as a JSON line's
        article_from_obj(first)
    assert isinstance(second, InvalidMessage) and second.reason == "invalid_utf8"
    assert third == {"id": "3", "text": "fine", "url": None}
    write_kept(path, tmp_path / "kept.csv", {1, 3})
    assert (
        tmp_path / "kept.csv"
    ).read_bytes() == b"id,text,url,raw\r\n1,caf\xe9,,\xff\r\n3,fine,,\r\n"


def test_a_damaged_gz_breaks_off_after_the_rows_before_it(tmp_path: Path) -> None:
    rows = [(str(i), "text " * 50 + str(i)) for i in range(400)]
    _write_csv(tmp_path / "in.csv.gz", ["id", "text"], rows)
    whole = (tmp_path / "in.csv.gz").read_bytes()
    (tmp_path / "in.csv.gz").write_bytes(whole[: len(whole) // 2])
    with open_table(tmp_path / "in.csv.gz", ("id", "text")) as reader:
        got: list[int] = []
        with pytest.raises(BrokenTableError, match=r"in\.csv\.gz"):
            got.extend(number for number, _, _ in reader.rows())
    assert 0 < len(got) < len(rows) and got == list(range(1, len(got) + 1))


def test_a_file_that_is_no_parquet_is_refused(tmp_path: Path) -> None:
    (tmp_path / "in.parquet").write_text("id,text\n")
    with pytest.raises(TableError, match="is not a Parquet file"):
        open_table(tmp_path / "in.parquet", ("id", "text"))


def test_parquet_without_pyarrow_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_parquet(tmp_path / "in.parquet", ["id", "text"], [("1", "x")])
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(TableError, match=r"pip install 'neardup\[parquet\]'"):
        open_table(tmp_path / "in.parquet", ("id", "text"))
