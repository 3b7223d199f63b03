"""``make run`` as a user runs it: the demo starts everything, streams, summarises, cleans up."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _our_processes() -> set[int]:
    """Pids of servers and workers a demo could leave behind."""
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"neardup-run-" in cmd or (b"neardup" in cmd and b"worker" in cmd):
            found.add(int(proc.name))
    return found


def test_demo_streams_the_sample_and_stops_everything(tmp_path: Path) -> None:
    sample = tmp_path / "sample.jsonl.gz"
    lines = gzip.decompress((ROOT / "examples" / "sample.jsonl.gz").read_bytes()).splitlines()
    with gzip.open(sample, "wb") as f:
        for line in lines[:100] + lines[100:400]:  # the English texts and 300 Chinese reviews
            f.write(line + b"\n")
    before = _our_processes()
    out = subprocess.run(
        [sys.executable, "-m", "harness.demo", "--sample", str(sample)],  # as `make run` does
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "400/400" in text
    assert "originals" in text and "near-duplicates" in text and "dead letters" in text
    near = [json.loads(x)["id"] for x in lines[:100]]
    assert any(ident in text for ident in near), "a near-duplicate example is shown"
    assert _our_processes() <= before, "the demo left servers or workers running"
