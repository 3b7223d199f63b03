"""``neardup dedup`` as a user runs it: the new verdict fields from the command line — evidence
with ``--explain``, related siblings, boilerplate learned from ``url`` hosts, ``--facts``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

NEARDUP = Path(sys.executable).parent / "neardup"
STORY = (
    "The storm hit the coast on Monday. Twelve people died in the floods. Power was cut to "
    "1,204 homes across the county. The mayor asked the state for help and for engineers. "
    "Schools stayed closed for the rest of the week while crews cleared the roads. The river "
    "rose above its banks for the first time in forty years, officials said on Tuesday."
)


def _dedup(tmp_path: Path, lines: list[dict[str, str]], *args: str) -> list[dict[str, object]]:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = subprocess.run(
        [str(NEARDUP), "dedup", str(src), "--no-progress", *args],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_explain_gives_the_shared_passages_in_both_texts(tmp_path: Path) -> None:
    copy = "Editor's note: we republish this with thanks.\n" + STORY
    a, b = _dedup(tmp_path, [{"id": "a", "text": STORY}, {"id": "b", "text": copy}], "--explain")
    assert a["evidence"] is None and b["duplicate_of"] == "a"
    (span,) = b["evidence"]  # type: ignore[misc]
    assert copy[span["start"] : span["end"]] == STORY
    assert STORY[span["earlier_start"] : span["earlier_end"]] == STORY
    quiet = _dedup(tmp_path, [{"id": "a", "text": STORY}, {"id": "b", "text": copy}])
    assert quiet[1]["evidence"] is None


def test_siblings_are_related_and_relaxed_facts_make_them_copies(tmp_path: Path) -> None:
    lines = [
        {"id": "x", "text": "FED SETS 1.5 BILLION DLR CUSTOMER REPURCHASE"},
        {"id": "y", "text": "FED SETS TWO BILLION DLR CUSTOMER REPURCHASE"},
    ]
    _, y = _dedup(tmp_path, lines)
    assert y["verdict"] == "original"
    assert y["related"] == [
        {
            "id": "x",
            "similarity": y["related"][0]["similarity"],  # type: ignore[index]
            "changes": [{"kind": "number", "earlier": "1.5", "now": "two"}],
        }
    ]
    _, y = _dedup(tmp_path, lines, "--facts", "relaxed")
    assert y["verdict"] == "near_duplicate" and y["changes"]


def test_format_declares_how_lines_without_one_are_read(tmp_path: Path) -> None:
    # bare tags are no evidence of markup: undeclared, the page is read as it was sent
    page = "<P>" + STORY.replace(". ", ".<P>")
    lines = [{"id": "a", "text": STORY}, {"id": "b", "text": page}]
    assert _dedup(tmp_path, lines)[1]["verdict"] != "duplicate"
    _, b = _dedup(tmp_path, lines, "--format", "html")
    assert (b["verdict"], b["duplicate_of"]) == ("duplicate", "a")
    # a line's own format wins over --format
    own = [lines[0], {**lines[1], "format": "text"}]
    assert _dedup(tmp_path, own, "--format", "html")[1]["verdict"] != "duplicate"
    bad = subprocess.run(
        [str(NEARDUP), "dedup", "-", "--format", "pdf"], capture_output=True, timeout=60
    )
    assert bad.returncode == 2 and b"--format" in bad.stderr
