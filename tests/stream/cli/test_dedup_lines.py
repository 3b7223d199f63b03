"""``neardup dedup`` writes one line per input row, in input order, so its output joins the input
by position: a row that cannot be judged (no JSON, no id, an empty text, an id that is no exact
integer, a text that shows nothing) gets a ``"verdict": "invalid"`` line in its place, at the
start, the middle and the end of a file alike; ``--kept`` keeps it and says on stderr, in one
line, what it left out and why."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from tests.stream.cli.test_dedup_tables import _read

CLI = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", "--no-progress"]
STORY = (
    "The city council approved the budget for the new public library on Tuesday after a"
    " debate that lasted well into the night, with members arguing over the cost of the site."
)
OTHER = (
    "Heavy rain flooded several roads in the valley overnight and the river rose above its"
    " banks near the old mill, forcing the closure of the bridge until engineers inspect it."
)
# (id, text, what its line says): invalid rows first, in the middle (one of them a text that
# shows nothing only after the canonical form, refused by the engine) and last
ROWS: list[tuple[str, str, str]] = [
    ("e1", "", "invalid:empty_text"),
    ("a", STORY, "original"),
    ("", STORY, "invalid:missing_id"),
    ("b", STORY, "duplicate"),
    ("z", "\u200b\u200d", "invalid:empty_text"),
    ("c", OTHER, "original"),
    ("d", STORY.replace("Tuesday", "Wednesday"), "near_duplicate"),
    ("a", STORY, "original"),  # a repeated id: the same article again, its verdict again
    ("e2", "   ", "invalid:empty_text"),
]
SUMMARY = (
    "neardup dedup: --kept left out 3 of 9 rows: 1 duplicate, 1 near-duplicate, 1 repeated id;"
    " kept 4 invalid (never judged): 3 empty_text, 1 missing_id"
)
KEPT = ["e1", "a", "", "z", "c", "e2"]  # the originals and the invalid rows, in input order


def _write(path: Path) -> Path:
    rows = [{"id": i, "text": t, "n": n} for n, (i, t, _) in enumerate(ROWS, start=1)]
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=["id", "text", "n"])
            writer.writeheader()
            writer.writerows(rows)
    else:  # an empty id is no id in JSON either: left out of the object
        objs = [{k: v for k, v in r.items() if v != ""} | {"text": r["text"]} for r in rows]
        path.write_text("".join(json.dumps(o) + "\n" for o in objs), "utf-8")
    return path


def _said(v: dict[str, Any]) -> str:
    return f"invalid:{v['reason']}" if v["verdict"] == "invalid" else str(v["verdict"])


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_every_row_has_its_line_in_its_place(tmp_path: Path, suffix: str) -> None:
    source = _write(tmp_path / f"corpus{suffix}")
    kept = tmp_path / f"kept{suffix}"
    done = subprocess.run([*CLI, source, "--kept", kept], capture_output=True, timeout=120)
    assert done.returncode == 2, done.stderr  # some rows were invalid
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(got) == len(ROWS)
    assert [_said(v) for v in got] == [said for _, _, said in ROWS]
    assert [v["id"] for v in got] == [i or None for i, _, _ in ROWS]
    unit = "line" if suffix == ".jsonl" else "row"
    for number, v in enumerate(got, start=1):
        if v["verdict"] == "invalid":
            assert v[unit] == number and v["namespace"] == "default" and v["error"]
    stderr = done.stderr.decode().splitlines()
    assert [line for line in stderr if "--kept" in line] == [SUMMARY]
    rows = _read(kept)
    assert [str(r["n"]) for r in rows] == ["1", "2", "3", "5", "6", "9"]
    assert [r.get("id") or "" for r in rows] == KEPT


def test_a_line_that_is_no_json_has_its_line_and_is_kept_byte_for_byte(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    lines = [b"not json", json.dumps({"id": 7, "text": STORY}).encode(), b"", b"[1, 2]"]
    lines.append(json.dumps({"id": 1e3, "text": OTHER}).encode())
    source.write_bytes(b"\n".join(lines) + b"\n")
    kept = tmp_path / "kept.jsonl"
    done = subprocess.run([*CLI, source, "--kept", kept], capture_output=True, timeout=120)
    assert done.returncode == 2, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()]
    # a blank line is no row (as pandas and the csv module read it): it has no line
    assert [(v["id"], _said(v), v.get("line")) for v in got] == [
        (None, "invalid:invalid_json", 1),
        ("7", "original", None),
        (None, "invalid:not_object", 4),
        (None, "invalid:invalid_id", 5),
    ]
    assert kept.read_bytes() == b"".join(x + b"\n" for x in lines if x)
    summary = "neardup dedup: --kept left out 0 of 4 rows; kept 3 invalid (never judged):"
    assert f"{summary} 1 invalid_id, 1 invalid_json, 1 not_object" in done.stderr.decode()


def test_every_row_valid_exits_0_and_says_what_was_left_out(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text(f"id,text\na,{STORY}\nb,{STORY}\nc,{OTHER}\n", "utf-8")
    kept = tmp_path / "kept.csv"
    args = [*CLI, source, "--kept", kept, "--keep", "one-per-cluster"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "neardup dedup: --kept left out 1 of 3 rows: 1 duplicate\n" in done.stderr
    assert [r["id"] for r in _read(kept)] == ["a", "c"]
