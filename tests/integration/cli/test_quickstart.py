"""``make run`` as a user runs it: the demo starts everything, streams, summarises, cleans up."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _marked_processes(mark: str) -> set[int]:
    """Pids of live processes whose environment carries ``NEARDUP_TEST_MARK=mark``: what this
    demo started (servers and workers inherit the environment), not other runs on the machine."""
    needle = f"NEARDUP_TEST_MARK={mark}".encode()
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.add(int(proc.name))
    return found


def test_demo_streams_the_sample_and_stops_everything(tmp_path: Path) -> None:
    sample = tmp_path / "sample.jsonl.gz"
    lines = gzip.decompress((ROOT / "examples" / "sample.jsonl.gz").read_bytes()).splitlines()
    with gzip.open(sample, "wb") as f:
        for line in lines[:100] + lines[100:400]:  # the English texts and 300 Chinese reviews
            f.write(line + b"\n")
    mark = uuid.uuid4().hex
    out = subprocess.run(
        [sys.executable, "-m", "harness.demo", "--sample", str(sample)],  # as `make run` does
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "COLUMNS": "120", "NEARDUP_TEST_MARK": mark},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "400/400" in text
    assert "originals" in text and "near-duplicates" in text and "dead letters" in text
    near = [json.loads(x)["id"] for x in lines[:100]]
    assert any(ident in text for ident in near), "a near-duplicate example is shown"
    assert not _marked_processes(mark), "the demo left servers or workers running"
