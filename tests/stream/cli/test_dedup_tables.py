"""``neardup dedup`` on a Parquet, CSV or JSON lines corpus as a user runs it: the same verdicts
whatever the format, the kept rows (``--kept``, ``--keep``) in the input's format with all its
columns, and a clear exit for a missing column, an unknown extension or pyarrow missing."""

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

CLI = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", "--no-progress"]


def _words(start: int, stop: int) -> str:
    return " ".join(f"w{i}" for i in range(start, stop))


# a and b are apart (Jaccard ~0.66); c is a near-duplicate of both (~0.81), so it merges their
# clusters; d is an exact copy of a; e is alone. Originals: a, b, e; one per cluster: a, e.
ROWS: list[dict[str, Any]] = [
    {"id": "a", "text": _words(0, 100), "note": 'commas, "quotes"', "n": 1},
    {"id": "b", "text": _words(20, 120), "note": "line\nbreak", "n": 2},
    {"id": "c", "text": _words(10, 110), "note": "ünïcödé 東京", "n": 3},
    {"id": "d", "text": _words(0, 100), "note": "", "n": 4},
    {"id": "e", "text": _words(500, 600), "note": "plain", "n": 5},
]
KEPT = {"originals": ["a", "b", "e"], "one-per-cluster": ["a", "e"]}
VERDICTS = [("a", "original"), ("b", "original"), ("c", "near_duplicate"), ("d", "duplicate")]
VERDICTS += [("e", "original")]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()  # type: ignore[no-any-return]
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _summary(stderr: bytes) -> dict[str, str]:
    """The end-of-run table's rows, label -> value."""
    cells = (line.strip("│").split("│") for line in stderr.decode().splitlines() if "│" in line)
    return {label.strip(): value.strip() for label, value in cells}


def _run(*args: str | Path, code: str | None = None) -> subprocess.CompletedProcess[bytes]:
    argv = [*CLI, *map(str, args)]
    if code is not None:  # the command after some set-up, in the same interpreter
        argv = [sys.executable, "-c", f"{code}\nsys.argv = {argv[2:]!r}\nmain()"]
    return subprocess.run(argv, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def jsonl_verdicts(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The verdicts of the JSON lines corpus without --kept: what every run below must print."""
    done = _run(_write(tmp_path_factory.mktemp("plain") / "corpus.jsonl", ROWS))
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(v["id"], v["verdict"]) for v in got] == VERDICTS
    assert got[1]["cluster"] == "b" and got[2]["matches"][1]["id"] == "b"  # the merge is there
    return done.stdout


@pytest.mark.parametrize("keep", ["originals", "one-per-cluster"])
@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_the_kept_rows_are_the_corpus_deduplicated_in_its_own_format(
    tmp_path: Path, jsonl_verdicts: bytes, suffix: str, keep: str
) -> None:
    source = _write(tmp_path / f"corpus{suffix}", ROWS)
    kept = tmp_path / f"kept{suffix}"
    done = _run(source, "--kept", kept, "--keep", keep)
    assert done.returncode == 0, done.stderr
    assert done.stdout == jsonl_verdicts  # the verdicts, whatever the format and --kept
    assert _summary(done.stderr)["kept rows"] == str(len(KEPT[keep]))
    wanted = [row for row in _read(source) if row["id"] in KEPT[keep]]
    assert _read(kept) == wanted  # every column, in input order
    assert [row["id"] for row in wanted] == KEPT[keep]
    if suffix == ".parquet":
        assert pq.read_schema(kept) == pq.read_schema(source)  # n stays an integer column


def test_columns_by_other_names_and_a_bad_row(tmp_path: Path) -> None:
    """The id and text read from the columns named; a row without text is reported by its row
    number, has an invalid line in its place and is kept (exit 2), the others decided."""
    rows = [{"key": r["id"], "body": r["text"], "namespace": ""} for r in ROWS]
    rows.insert(2, {"key": "x", "body": "", "namespace": ""})
    source = _write(tmp_path / "corpus.csv", rows)
    done = _run(source, "--id-column", "key", "--text-column", "body", "--kept", tmp_path / "k.csv")
    assert done.returncode == 2
    assert "row 3: empty_text: text is empty" in done.stderr.decode()
    assert _summary(done.stderr)["invalid rows"] == "1"
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["id"] for v in got] == list("abxcde")
    assert got[2] == {
        "id": "x",
        "namespace": "default",
        "verdict": "invalid",
        "reason": "empty_text",
        "error": "text is empty",
        "row": 3,
    }
    assert [row["key"] for row in _read(tmp_path / "k.csv")] == ["a", "b", "x", "e"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_missing_column_is_a_clear_exit(tmp_path: Path, suffix: str) -> None:
    source = _write(tmp_path / f"corpus{suffix}", ROWS)
    done = _run(source, "--text-column", "body", "-o", tmp_path / "verdicts.jsonl")
    assert done.returncode == 2
    assert b"has no column 'body' (its columns: id, text, note, n)" in done.stderr
    assert not (tmp_path / "verdicts.jsonl").exists()  # refused before anything is written


def test_an_unknown_extension_is_a_clear_exit(tmp_path: Path) -> None:
    done = _run(_write(tmp_path / "corpus.txt", ROWS))
    assert done.returncode == 2
    assert b"unknown format of" in done.stderr and b"corpus.txt" in done.stderr


def test_parquet_without_pyarrow_is_a_clear_exit(tmp_path: Path) -> None:
    source = _write(tmp_path / "corpus.parquet", ROWS)
    hide = "import sys\nsys.modules['pyarrow'] = None\nfrom neardup.stream.cli.main import main"
    done = _run(source, code=hide)
    assert done.returncode == 2
    assert done.stderr.endswith(
        b"neardup dedup: Parquet needs the parquet extra: pip install 'neardup[parquet]'\n"
    )


def test_keep_without_kept_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(_write(tmp_path / "corpus.csv", ROWS), "--keep", "one-per-cluster")
    assert done.returncode == 2 and b"--keep needs --kept FILE" in done.stderr


def test_the_command_line_loads_no_pyarrow_until_a_parquet_file() -> None:
    code = "import sys\nfrom neardup.stream.cli import main\nprint('pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
