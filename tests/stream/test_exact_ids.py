"""Ids are exact: a numeric JSON id is the exact text of its number, or it is refused
(``invalid_id``); two different id texts never become one stored id, on any path that reads one:
the worker's messages, ``neardup dedup`` (JSON lines, CSV, Parquet), ``/check`` and the Python
API. (``/check`` over HTTP: tests/stream/worker/http/test_check_view.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neardup import Index
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import InvalidMessage
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.model import Article
from neardup.stream.schema import exact_id, parse_article
from neardup.stream.worker.messages import Incoming
from neardup.stream.worker.metrics import Metrics
from neardup.stream.worker.pipeline import BatchHandler

# (the number as written, the id it is, or None: refused)
ISSUE = [
    ("-9223372036854775809", "-9223372036854775809"),  # was stored as -9223372036854775808
    ("-9223372036854775808", "-9223372036854775808"),
    ("18446744073709551615", "18446744073709551615"),
    ("18446744073709551616", "18446744073709551616"),
    ("123456789012345678901234567890", "123456789012345678901234567890"),
    ("42", "42"),
    ("0", "0"),
    ("1000", "1000"),
    ("1e3", None),  # was "1000"
    ("1E3", None),
    ("1.0", None),  # was "1"
    ("1000.0", None),
    ("-0", None),  # would be "0"
    ("-0.0", None),
    ("1.5", None),
    ("1e300", None),
]


def _message(number: str, text: str = "a comment") -> bytes:
    return b'{"id": ' + number.encode() + b', "text": ' + orjson.dumps(text) + b"}"


def _parsed(raw: bytes) -> str | None:
    try:
        return parse_article(raw).id
    except InvalidMessage as exc:  # invalid_json: a number past a double's range, to orjson
        assert exc.reason in {"invalid_id", "invalid_json"}, exc
        return None


@pytest.mark.parametrize(("number", "doc_id"), ISSUE)
def test_the_issues_numbers(number: str, doc_id: str | None) -> None:
    assert _parsed(_message(number)) == doc_id
    # the id may stand anywhere, escaped keys and repeated keys read as orjson reads them
    assert _parsed(b'{"text": "x", "\\u0069d": ' + number.encode() + b"}") == doc_id
    assert _parsed(b'{"id": "other", "text": "x", "id": ' + number.encode() + b"}") == doc_id


def test_a_zero_is_read_again_only_to_tell_it_from_minus_zero() -> None:
    assert _parsed(_message("0", "dates: 2026-01-02, -0.5 degrees")) == "0"
    assert _parsed(_message("-0", "dates: 2026-01-02, -0.5 degrees")) is None
    assert _parsed(b'{"text": "x", "id": 0, "n": -0}') == "0"


def test_a_refusal_says_what_an_id_may_be() -> None:
    with pytest.raises(InvalidMessage, match=r"1000, not 1e3, 1000\.0 or -0") as got:
        parse_article(_message("1e3"))
    assert got.value.reason == "invalid_id"


# JSON numbers as a producer may write them: integers of any size, fractions, exponents, -0
_digits = st.text("0123456789", min_size=1, max_size=40)
json_numbers = st.builds(
    lambda sign, whole, frac, exp: sign + whole + frac + exp,
    st.sampled_from(["", "-"]),
    st.one_of(st.just("0"), st.builds(lambda a, b: a + b, st.sampled_from("123456789"), _digits)),
    st.one_of(st.just(""), _digits.map(lambda d: "." + d)),
    st.one_of(st.just(""), st.builds(lambda e, s, d: e + s + d[:3], st.sampled_from("eE"),
                                     st.sampled_from(["", "+", "-"]), _digits)),
)  # fmt: skip


@settings(max_examples=500)
@given(json_numbers)
@example("-0")
@example("1e3")
@example("-9223372036854775809")
def test_a_number_is_its_exact_text_or_refused(number: str) -> None:
    doc_id = _parsed(_message(number))
    assert doc_id is None or doc_id == number
    if doc_id is None:
        assert "." in number or "e" in number.lower() or number == "-0"


@settings(max_examples=300)
@given(st.lists(st.one_of(json_numbers, json_numbers.map(json.dumps)), min_size=2, max_size=8))
def test_two_different_id_texts_never_become_one_id(texts: list[str]) -> None:
    """Each id as written (a number, or a string literal); the id text is the number's text
    or the string's value. Different id texts are different stored ids on every path."""
    stored: dict[str, str] = {}
    for written in texts:
        meant = json.loads(written) if written.startswith('"') else written
        for got in (_parsed(_message(written)), _via_check_body(written)):
            if got is None:
                continue
            assert stored.setdefault(got, meant) == meant, (got, stored[got], meant)


def _via_check_body(written: str) -> str | None:
    """The id ``/check`` reads from a body (the view's own step: tested whole over HTTP)."""
    raw = _message(written)
    try:
        return exact_id(orjson.loads(raw)["id"], "id", raw)
    except (InvalidMessage, orjson.JSONDecodeError):  # the view answers 400 to either
        return None


# --------------------------------------------------------------------------- the worker


async def test_the_worker_keeps_ids_apart() -> None:
    handler = BatchHandler(Engine(MemoryIndex()), Metrics())
    text = "the council approved the budget for the new library after a long debate"
    raws = [_message(n, text) for n in ("1000", "1e3", "1.0", "1", "-0", "0")]
    raws += [_message("-9223372036854775809", text), _message("-9223372036854775808", text)]
    batch = [Incoming(raw, None, "articles", 0, n) for n, raw in enumerate(raws)]
    verdicts, dead = await handler.handle(batch)
    letters = [orjson.loads(d.value or b"") for d in dead]
    assert [(d["reason"], d["source"]["offset"]) for d in letters] == [
        ("invalid_id", 1),
        ("invalid_id", 2),
        ("invalid_id", 4),
    ]
    got = [orjson.loads(v.value or b"") for v in verdicts]
    assert [v["id"] for v in got] == [
        "1000",
        "1",
        "0",
        "-9223372036854775809",
        "-9223372036854775808",
    ]
    # one text under five ids: five articles, the later ones copies, never a conflict
    assert [v["duplicate_of"] for v in got] == [None, "1000", "1000", "1000", "1000"]


# --------------------------------------------------------------------------- neardup dedup

CLI = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", "--no-progress"]
TEXT = "the council approved the budget for the new library after a long debate"


def _dedup(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, str(path)], capture_output=True, text=True, timeout=120)


def test_dedup_keeps_1e3_and_1000_apart(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    numbers = ["1000", "1e3", "-9223372036854775809", "-9223372036854775808", "1.0", "1"]
    path.write_bytes(b"".join(_message(n, TEXT) + b"\n" for n in numbers))
    done = _dedup(path)
    assert done.returncode == 2, done.stderr  # some lines were refused
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["id"] for v in verdicts] == ["1000", None, *numbers[2:4], None, "1"]
    assert [v["verdict"] == "invalid" for v in verdicts] == [False, True, False, False, True, False]
    judged = [v for v in verdicts if v["verdict"] != "invalid"]
    assert all(v["duplicate_of"] == "1000" for v in judged[1:])  # copies, not conflicts
    assert "conflict" not in done.stderr
    assert "line 2: invalid_id: an id number must be an integer" in done.stderr
    assert "line 5: invalid_id:" in done.stderr


def test_dedup_reads_integer_columns_exactly_and_refuses_float_ones(tmp_path: Path) -> None:
    ints = tmp_path / "ints.parquet"
    pq.write_table(
        pa.table({"id": pa.array([-(2**63), 1000], pa.int64()), "text": [TEXT, TEXT]}), ints
    )
    done = _dedup(ints)
    assert done.returncode == 0, done.stderr
    assert [json.loads(x)["id"] for x in done.stdout.splitlines()] == [str(-(2**63)), "1000"]
    floats = tmp_path / "floats.parquet"
    pq.write_table(pa.table({"id": pa.array([1000.0, 1.0]), "text": [TEXT, TEXT]}), floats)
    done = _dedup(floats)
    assert done.returncode == 2
    assert [json.loads(x)["reason"] for x in done.stdout.splitlines()] == ["invalid_id"] * 2
    assert "row 1: invalid_id:" in done.stderr and "row 2: invalid_id:" in done.stderr
    rows = tmp_path / "in.csv"
    rows.write_text(f"id,text\n1e3,{TEXT}\n1000,{TEXT}\n", "utf-8")  # a CSV cell is its text
    done = _dedup(rows)
    assert [json.loads(x)["id"] for x in done.stdout.splitlines()] == ["1e3", "1000"]


# --------------------------------------------------------------------------- the Python API


def test_the_python_api_takes_an_int_as_its_text_and_refuses_a_float() -> None:
    with Index() as ix:
        first = ix.add(5, TEXT)  # type: ignore[arg-type]
        assert first.id == "5"
        assert ix.add("5", TEXT) == first  # the same id and text: a replay, its first verdict
        assert ix.add(-(2**63) - 1, TEXT).id == str(-(2**63) - 1)  # type: ignore[arg-type]
        for bad in (5.0, 1e3, True, None, ""):
            with pytest.raises(ValueError):
                ix.add(bad, TEXT)  # type: ignore[arg-type]


def test_an_article_is_never_given_a_float_id_by_the_engine() -> None:
    assert Article("1000", TEXT).id == "1000"
