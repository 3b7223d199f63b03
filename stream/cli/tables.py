"""The corpus files ``neardup dedup`` reads row by row, and the kept rows it writes back in the
same format: JSON lines (``.jsonl``, ``.ndjson``, ``.json``, their ``.gz``; ``-``: stdin), CSV
(``.csv``, ``.csv.gz``; a header row names the columns) and Parquet (``.parquet``: pyarrow, the
``parquet`` extra). Its own module, so the command holds no format's details. Each format is read
and written by its own library (orjson, the standard library's csv, pyarrow), streamed: memory is
bounded by a Parquet record batch or a CSV row, not by the corpus. Rows are numbered from 1 as
messages name them, alike in both passes: a JSON line by its line number (blank lines skipped but
counted), a CSV or Parquet row by its place among the data rows.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Container, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson
import typer

from neardup.stream import extras
from neardup.stream.cli.common import consumed, input_lines, open_input
from neardup.stream.errors import BrokenTableError, InvalidMessage, TableError

JSONL, CSV, PARQUET = "jsonl", "csv", "parquet"
EXTENSIONS = {".jsonl": JSONL, ".ndjson": JSONL, ".json": JSONL, ".csv": CSV, ".parquet": PARQUET}
BATCH_ROWS = 1024  # Parquet rows read (and kept rows written as a row group) at a time


def table_format(path: Path) -> str:
    """The format of a corpus file by its extension (after ``.gz``, which Parquet never has);
    ``-`` (stdin) or a name without extension (a pipe, say) is JSON lines."""
    if str(path) == "-":
        return JSONL
    ext = path.suffix.lower()
    compressed = ext == ".gz"
    if compressed:
        ext = Path(path.stem).suffix.lower()
    if not ext:
        return JSONL
    fmt = EXTENSIONS.get(ext)
    if fmt is None or (compressed and fmt == PARQUET):
        raise TableError(
            f"unknown format of {path}: use .jsonl (JSON lines), .csv or their .gz, or .parquet"
        )
    return fmt


class Reader:
    """The rows of one corpus file: ``(number, row, line)`` with the row decoded (a JSON line's
    value, or a dict of the wanted columns; a JSON line that is no JSON: its
    :class:`InvalidMessage`), and the bytes of JSON it came from (``None`` for a table): its
    size, and the text of a numeric id (:func:`neardup.stream.schema.exact_id`)."""

    unit = "row"  # what a message calls a row: "line" for JSON lines
    total: int | None = None  # for the progress bar: bytes of the file, or rows of a table

    def rows(self) -> Iterator[tuple[int, Any, bytes | None]]:
        raise NotImplementedError

    def position(self) -> int:  # how far the reading is, in the unit of total
        return 0

    def close(self) -> None:
        return None

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_table(path: Path, columns: Sequence[str], optional: Sequence[str] = ()) -> Reader:
    """A reader of ``path`` in its format. A table must have each of ``columns`` (else
    :class:`TableError`); of ``optional``, those it has are read too. JSON lines have no
    columns: a line without a field is reported where it is read."""
    fmt = table_format(path)
    if fmt == PARQUET:
        return _Parquet(path, columns, optional)
    if fmt == CSV:
        return _Csv(path, columns, optional)
    return _JsonLines(path)


class _JsonLines(Reader):
    unit = "line"

    def __init__(self, path: Path) -> None:
        self._stream = open_input(path)
        self.total = None if str(path) == "-" else path.stat().st_size

    def rows(self) -> Iterator[tuple[int, Any, bytes | None]]:
        for number, line in input_lines(self._stream):
            try:
                yield number, orjson.loads(line), line
            except orjson.JSONDecodeError as exc:
                yield number, InvalidMessage("invalid_json", str(exc)), line

    def position(self) -> int:
        return consumed(self._stream)

    def close(self) -> None:
        self._stream.close()


class _Csv(Reader):
    def __init__(self, path: Path, columns: Sequence[str], optional: Sequence[str]) -> None:
        self._raw = open_input(path)
        self.total = path.stat().st_size
        self._text = _csv_text(self._raw)
        try:
            self._records = _csv_records(self._text, path)
            header = next(self._records, [])
            _check_columns(path, header, columns)
        except BaseException:
            self.close()
            raise
        # (name, place, required): an optional column's empty cell is no value, as JSON's null
        self._wanted = [
            (name, header.index(name), name in columns)
            for name in dict.fromkeys([*columns, *optional])
            if name in header
        ]

    def rows(self) -> Iterator[tuple[int, Any, bytes | None]]:
        for number, record in enumerate(self._records, start=1):
            row: dict[str, str | None] = {}
            for name, place, required in self._wanted:
                value = record[place] if place < len(record) else None
                row[name] = value if required or value else None
            # another column's bytes that are no UTF-8 here; an id's or text's as JSON's are
            bad = [n for n, _, required in self._wanted if not (required or _utf8(row[n]))]
            if bad:
                yield number, InvalidMessage("invalid_utf8", f"column {bad[0]!r} is no UTF-8"), None
            else:
                yield number, row, None

    def position(self) -> int:
        return consumed(self._raw)

    def close(self) -> None:
        self._text.close()


class _Parquet(Reader):
    def __init__(self, path: Path, columns: Sequence[str], optional: Sequence[str]) -> None:
        self._path = path
        self._file = _parquet_file(path)
        names = list(self._file.schema_arrow.names)
        try:
            _check_columns(path, names, columns)
        except TableError:
            self.close()
            raise
        self._columns = [n for n in dict.fromkeys([*columns, *optional]) if n in names]
        self.total = int(self._file.metadata.num_rows)
        self._done = 0

    def rows(self) -> Iterator[tuple[int, Any, bytes | None]]:
        pa = _pyarrow()
        try:
            for batch in self._file.iter_batches(batch_size=BATCH_ROWS, columns=self._columns):
                for row in batch.to_pylist():
                    self._done += 1
                    yield self._done, row, None
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise BrokenTableError(f"{self._path}: after row {self._done}: {exc}") from None

    def position(self) -> int:
        return self._done

    def close(self) -> None:
        self._file.close()


def write_kept(source: Path, kept: Path, keep: Container[int]) -> int:
    """Copy the rows of ``source`` whose numbers are in ``keep`` to ``kept``, in the same format
    (``kept`` compressed if it ends ``.gz``), every column, in input order; the rows written."""
    fmt = table_format(source)
    if fmt == PARQUET:
        return _write_parquet(source, kept, keep)
    written = 0
    with open_input(source) as stream, _create(kept) as sink:
        if fmt == JSONL:
            for number, line in input_lines(stream):
                if number in keep:
                    sink.write(line if line.endswith(b"\n") else line + b"\n")
                    written += 1
            return written
        text = _csv_text(stream)
        with text, _csv_text(sink, "utf-8") as out:
            records = _csv_records(text, source)
            writer = csv.writer(out)
            header = next(records, None)
            if header is not None:
                writer.writerow(header)
            for number, record in enumerate(records, start=1):
                if number in keep:
                    writer.writerow(record)
                    written += 1
    return written


def _write_parquet(source: Path, kept: Path, keep: Container[int]) -> int:
    pa = _pyarrow()
    table = _parquet_file(source)
    done = 0
    groups: list[Any] = []  # kept rows not yet written: a row group once there are enough

    def flush() -> int:
        group = pa.Table.from_batches(groups, schema=table.schema_arrow)
        writer.write_table(group)
        groups.clear()
        return int(group.num_rows)

    written = 0
    try:
        with pa.parquet.ParquetWriter(kept, table.schema_arrow) as writer:
            for batch in table.iter_batches(batch_size=BATCH_ROWS):
                picked = [i for i in range(batch.num_rows) if done + i + 1 in keep]
                done += batch.num_rows
                if picked:
                    groups.append(batch.take(pa.array(picked, type=pa.int64())))
                if sum(g.num_rows for g in groups) >= BATCH_ROWS:
                    written += flush()
            if groups:
                written += flush()
    except (pa.ArrowException, ValueError) as exc:
        raise BrokenTableError(f"{source}: after row {done}: {exc}") from None
    finally:
        table.close()
    return written


def _create(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.GzipFile(filename=path, mode="wb")  # type: ignore[return-value]
    return path.open("wb")


def _csv_text(stream: IO[bytes], encoding: str = "utf-8-sig") -> io.TextIOWrapper:
    """CSV text over bytes: bytes that are no UTF-8 kept as lone surrogates, so a row is refused
    for them alone (as a JSON line is) and a kept row is written back byte for byte."""
    return io.TextIOWrapper(stream, encoding=encoding, errors="surrogateescape", newline="")


def _utf8(value: str | None) -> bool:
    return value is None or value.isascii() or not any("\udc80" <= c <= "\udcff" for c in value)


def _csv_records(text: IO[str], path: Path) -> Iterator[list[str]]:
    """A CSV text's records, blank lines skipped; a malformed one is a :class:`BrokenTableError`."""
    csv.field_size_limit(2**31 - 1)  # a long text is refused by its size later, as in JSON
    reader = csv.reader(text)
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except (csv.Error, OSError, EOFError) as exc:  # a damaged .gz too
            raise BrokenTableError(f"{path}: line {reader.line_num}: {exc}") from None
        if record:
            yield record


def _check_columns(path: Path, names: Sequence[str], columns: Sequence[str]) -> None:
    missing = [c for c in dict.fromkeys(columns) if c not in names]
    if missing:
        have = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") if names else "none"
        raise TableError(
            f"{path} has no column {', '.join(map(repr, missing))} (its columns: {have})"
        )


def _pyarrow() -> Any:
    """pyarrow, with its parquet module, or a :class:`TableError` saying how to install it."""
    try:
        pa = extras.load("pyarrow", "parquet", "Parquet")
        extras.load("pyarrow.parquet", "parquet", "Parquet")
    except extras.MissingExtra as exc:
        raise TableError(str(exc)) from None
    return pa


def _parquet_file(path: Path) -> Any:
    pa = _pyarrow()
    if not path.exists():
        raise typer.BadParameter(f"no such file: {path}", param_hint="INPUT")
    try:
        return pa.parquet.ParquetFile(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise TableError(f"{path} is not a Parquet file: {exc}") from None


__all__ = [
    "CSV", "JSONL", "PARQUET", "Reader", "open_table",
    "table_format", "write_kept",
]  # fmt: skip
