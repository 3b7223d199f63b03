"""The rows the batch API reads, whatever holds them, as the dicts ``neardup dedup`` reads.

:meth:`neardup.Index.add_many` and :func:`neardup.dedup` take a corpus as its user already has
it: ``(id, text)`` pairs, mappings (a JSON line's fields), a pandas DataFrame or a pyarrow Table
(or RecordBatch; anything with ``to_arrow()``, as polars' DataFrame, is read as its Arrow table)
with named columns. Each shape is turned into the same dict per row the command makes of a JSON
line or a Parquet row, so one rule (:func:`neardup.stream.schema.article_from_obj`) reads an id
and a text, and a row is valid or invalid for the same reason everywhere.

Columns are read a chunk at a time (:data:`CHUNK` rows), so a table is never copied whole into
Python objects; a missing value of a frame (``None``, ``NaN``, ``NaT``, ``pd.NA``) is no value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias

CHUNK = 512  # rows made into dicts at once: the engine's batch (neardup dedup's BATCH)


class NotARow:
    """An element of the rows that is no row at all (a number, a 3-tuple...): what it is."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what


Row: TypeAlias = "dict[str, Any] | NotARow"


def row_chunks(
    rows: Any, id_field: str, text_field: str, optional: Sequence[str]
) -> Iterator[list[Row]]:
    """``rows`` in input order, :data:`CHUNK` at a time, each a dict of the id, the text and
    the ``optional`` columns it has (or a :class:`NotARow`)."""
    columns = list(dict.fromkeys([id_field, text_field, *optional]))
    if _is_pandas(rows):
        yield from _frame_chunks(rows, columns, id_field, text_field)
        return
    table = _arrow_of(rows)
    if table is not None:
        yield from _arrow_chunks(table, columns, id_field, text_field)
        return
    if isinstance(rows, (str, bytes, Mapping)):
        raise TypeError(
            "rows must be an iterable of (id, text) pairs or mappings, a pandas DataFrame or "
            f"a pyarrow Table, not a single {type(rows).__name__}"
        )
    if not isinstance(rows, Iterable):
        raise TypeError(f"rows must be iterable, not {type(rows).__name__}")
    chunk: list[Row] = []
    for element in rows:
        chunk.append(_row_of(element, id_field, text_field))
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _row_of(element: Any, id_field: str, text_field: str) -> Row:
    if isinstance(element, Mapping):
        return element if type(element) is dict else dict(element)
    if isinstance(element, tuple) and len(element) == 2:
        return {id_field: element[0], text_field: element[1]}
    if isinstance(element, (str, bytes)):
        return NotARow(f"a bare {type(element).__name__} (a row is an (id, text) pair)")
    return NotARow(f"a {type(element).__name__}, not an (id, text) pair or a mapping")


def _is_pandas(rows: Any) -> bool:
    return type(rows).__module__.startswith("pandas") and hasattr(rows, "iloc")


def _frame_chunks(
    frame: Any, columns: list[str], id_field: str, text_field: str
) -> Iterator[list[Row]]:
    _require(list(map(str, frame.columns)), id_field, text_field, "DataFrame")
    present = [c for c in columns if c in frame.columns]
    for start in range(0, len(frame), CHUNK):
        part = frame.iloc[start : start + CHUNK]
        values = [[_no_missing(v) for v in part[c].tolist()] for c in present]
        yield [dict(zip(present, row, strict=True)) for row in zip(*values, strict=True)]


def _no_missing(value: Any) -> Any:
    """A frame's missing value as no value: ``None`` for NaN, NaT and ``pd.NA``."""
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    try:
        missing = value != value  # NaT and NA are not equal to themselves
        return None if missing is True or bool(missing) else value
    except (TypeError, ValueError):  # pd.NA refuses bool(): it is missing
        return None


def _arrow_of(rows: Any) -> Any:
    """An Arrow Table or RecordBatch of ``rows``, or None when it holds none."""
    module = type(rows).__module__
    if module.startswith("pyarrow") and hasattr(rows, "column_names"):
        return rows
    if not module.startswith("pandas") and callable(getattr(rows, "to_arrow", None)):
        got = rows.to_arrow()
        if hasattr(got, "column_names"):
            return got
    return None


def _arrow_chunks(
    table: Any, columns: list[str], id_field: str, text_field: str
) -> Iterator[list[Row]]:
    _require(list(table.column_names), id_field, text_field, "table")
    present = [c for c in columns if c in table.column_names]
    part_of = table.select(present)
    for start in range(0, part_of.num_rows, CHUNK):
        yield part_of.slice(start, CHUNK).to_pylist()


def _require(names: list[str], id_field: str, text_field: str, what: str) -> None:
    missing = [c for c in (id_field, text_field) if c not in names]
    if missing:
        raise KeyError(
            f"the {what} has no column {', '.join(map(repr, missing))} (columns: "
            f"{', '.join(names[:20])}); name them with id_field= / text_field="
        )


def row_count(rows: Any) -> int | None:
    """How many rows ``rows`` holds, when it says without being read (a list, a table)."""
    if _is_pandas(rows):
        return len(rows)
    table = _arrow_of(rows) if type(rows).__module__.startswith("pyarrow") else None
    if table is not None:
        return int(table.num_rows)
    return len(rows) if isinstance(rows, Sequence) else None


__all__ = ["CHUNK", "NotARow", "Row", "row_chunks", "row_count"]
