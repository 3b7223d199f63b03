"""A corpus judged at once: the batch face of :class:`neardup.Index`, and :func:`dedup`.

The engine's natural unit is a batch: a call per text (:meth:`neardup.Index.add` in a loop) pays
the event loop, the index and the boilerplate module once a text, where ``neardup dedup`` pays
them once per 512. :meth:`~neardup.Index.add_many` hands the engine the same batches the command
does, from rows a Python user already has (:mod:`neardup.rows`), and gives one result per row in
input order: a :class:`~neardup.Verdict`, or an :class:`Invalid` in the place of a row that
cannot be judged, as the command writes an ``"verdict": "invalid"`` line in its place, so results
line up with the rows by position.

:func:`dedup` is ``neardup dedup --kept`` for a DataFrame, an Arrow table or a list of rows: the
rows kept, in the input's own type, chosen by the same :class:`~neardup.stream.keep.Keeper`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from neardup.rows import NotARow, Row, row_chunks
from neardup.stream.errors import InvalidMessage, NeardupError
from neardup.stream.keep import KEEP_MODES, ORIGINALS, Keeper
from neardup.stream.model import Article, Verdict
from neardup.stream.schema import OPTIONAL_FIELDS, article_from_obj, exact_id

if TYPE_CHECKING:
    from neardup.api import Index
    from neardup.stream.namespaces.policy import Policy

# the columns read besides the id and the text, when the rows have them (the command reads the
# namespace too; an Index is one namespace, so a row's namespace column is not read)
OPTIONAL_COLUMNS = ("format", *OPTIONAL_FIELDS)


@dataclass(frozen=True, slots=True)
class Invalid:
    """A row that cannot be judged, in its place among the verdicts: ``row`` is its position
    (from 0), ``id`` its id where one could be read, ``reason`` and ``error`` what a dead letter
    carries (``missing_text``, ``empty_text``, ``invalid_id``, ``oversize``...). ``verdict`` is
    ``"invalid"`` so a result is read the same way whatever it is."""

    row: int
    id: str | None
    namespace: str
    reason: str
    error: str
    verdict: Literal["invalid"] = "invalid"
    duplicate_of: None = None

    def to_dict(self) -> dict[str, Any]:
        """The line ``neardup dedup`` writes for such a row (with ``row`` counted from 0)."""
        return {
            "id": self.id,
            "namespace": self.namespace,
            "verdict": self.verdict,
            "reason": self.reason,
            "error": self.error,
            "row": self.row,
        }


Result = Verdict | Invalid
# the engine call of one batch: Index._process (add: register; check: store nothing)
Process = Callable[[list[Article]], list[Verdict | NeardupError]]


def judged(
    rows: Any,
    process: Process,
    namespace: str,
    id_field: str = "id",
    text_field: str = "text",
) -> Iterator[Result]:
    """One result per row of ``rows``, in order, the engine called once per chunk."""
    position = 0
    for chunk in row_chunks(rows, id_field, text_field, OPTIONAL_COLUMNS):
        read = [
            _article(position + k, row, namespace, id_field, text_field)
            for k, row in enumerate(chunk)
        ]
        articles = [a for a in read if isinstance(a, Article)]
        results = iter(process(articles) if articles else ())
        for k, item in enumerate(read):
            if isinstance(item, Invalid):
                yield item
                continue
            got = next(results)
            if isinstance(got, NeardupError):  # empty after the canonical form, a conflict
                reason = str(getattr(got, "reason", type(got).__name__))
                yield Invalid(position + k, item.id, namespace, reason, str(got))
                continue
            yield got
        position += len(chunk)


def _article(
    position: int, row: Row, namespace: str, id_field: str, text_field: str
) -> Article | Invalid:
    if isinstance(row, NotARow):
        return Invalid(position, None, namespace, "not_a_row", f"row {position} is {row.what}")
    theirs = row.get("namespace")
    if theirs is not None and theirs != namespace:
        return Invalid(
            position,
            _id_or_none(row.get(id_field)),
            namespace,
            "invalid_namespace",
            f"the row is of namespace {theirs!r}, this Index of {namespace!r}: an Index is one"
            " namespace (Index(namespace=...))",
        )
    try:
        return article_from_obj(
            row, default_namespace=namespace, id_field=id_field, text_field=text_field
        )
    except InvalidMessage as exc:
        return Invalid(position, _id_or_none(row.get(id_field)), namespace, exc.reason, str(exc))


def _id_or_none(value: Any) -> str | None:
    try:
        return exact_id(value)
    except (InvalidMessage, ValueError):
        return None


def keep_mask(
    rows: Any,
    *,
    keep: str = ORIGINALS,
    id_field: str = "id",
    text_field: str = "text",
    index: Index | None = None,
    policy: Policy | None = None,
    namespace: str = "default",
) -> list[bool]:
    """Which rows ``neardup dedup --kept`` keeps, a bool per row in order: with ``keep =
    "originals"`` every row judged original, with ``"one-per-cluster"`` the first row of each
    cluster as they stand at the end; a repeated id is kept once; a row that cannot be judged is
    kept (it was never found to be a copy). ``index``: an open :class:`~neardup.Index` the rows
    are judged against and added to (rows copying what it held before are left out); by default
    a new memory index of ``policy`` and ``namespace``, closed at the end."""
    if keep not in KEEP_MODES:
        raise ValueError(f"keep must be {' or '.join(KEEP_MODES)}, not {keep!r}")
    keeper = Keeper(keep)
    total = 0
    own = index is None
    if index is None:
        from neardup.api import Index

        index = Index(policy=policy, namespace=namespace)
    try:
        results = index.judged(rows, id_field=id_field, text_field=text_field)
        for number, result in enumerate(results):
            total = number + 1
            if isinstance(result, Invalid):
                keeper.invalid(number, result.reason)
            else:
                keeper.add(number, result)
    finally:
        if own:
            index.close()
    chosen = keeper.rows()
    return [n in chosen for n in range(total)]


def dedup(
    rows: Any,
    *,
    keep: str = ORIGINALS,
    id_field: str = "id",
    text_field: str = "text",
    index: Index | None = None,
    policy: Policy | None = None,
    namespace: str = "default",
) -> Any:
    """The rows :func:`keep_mask` keeps, in the input's own type: a pandas DataFrame (its index
    labels kept), an Arrow table, or a list of the rows given; the arguments are
    :func:`keep_mask`'s."""
    if not isinstance(rows, Sequence) and _single_pass(rows):
        rows = list(rows)  # read twice: once judged, once chosen from
    mask = keep_mask(
        rows,
        keep=keep,
        id_field=id_field,
        text_field=text_field,
        index=index,
        policy=policy,
        namespace=namespace,
    )
    module = type(rows).__module__
    if module.startswith("pandas") and hasattr(rows, "iloc"):
        return rows[mask]
    if module.startswith("pyarrow") and hasattr(rows, "filter"):
        import pyarrow as pa  # type: ignore[import-untyped]

        return rows.filter(pa.array(mask, type=pa.bool_()))
    if callable(getattr(rows, "filter", None)) and callable(getattr(rows, "to_arrow", None)):
        return rows.filter(mask)  # polars: a list of bools is a mask
    return [row for row, kept in zip(rows, mask, strict=True) if kept]


def _single_pass(rows: Any) -> bool:
    """An iterator or generator: gone once read."""
    module = type(rows).__module__
    if module.startswith(("pandas", "pyarrow")) or callable(getattr(rows, "to_arrow", None)):
        return False
    return iter(rows) is rows


__all__ = ["Invalid", "Result", "dedup", "judged", "keep_mask"]
