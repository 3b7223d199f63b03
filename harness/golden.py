"""The recorded verdicts that keep behaviour fixed across refactors (``tests/golden/``).

``python -m harness.golden`` rebuilds the seeded corpus and records ``neardup dedup``'s verdicts
on it and on the sample; run it only when a change of verdicts is intended.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import orjson

from harness.corpus import generate

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
SAMPLE = ROOT / "examples" / "sample.jsonl.gz"
CORPUS = GOLDEN / "corpus.jsonl.gz"

# (id prefix, generate() arguments): every path of the engine (exact, long, short; en, zh).
PARTS: tuple[tuple[str, dict[str, object]], ...] = (
    ("long", {"n_docs": 1500, "seed": 11, "words": 300, "lang": "en"}),
    ("short", {"n_docs": 600, "seed": 12, "words": 14, "dup_rate": 0.4, "lang": "en"}),
    ("zhlong", {"n_docs": 500, "seed": 13, "words": 220, "lang": "zh"}),
    ("zhshort", {"n_docs": 600, "seed": 14, "words": 24, "dup_rate": 0.4, "lang": "zh"}),
)


def inputs() -> dict[str, Path]:
    """Name -> input file of every recorded case."""
    return {"corpus": CORPUS, "sample": SAMPLE}


def expected(name: str) -> Path:
    return GOLDEN / f"{name}.verdicts.jsonl.gz"


def write_corpus(path: Path = CORPUS) -> None:
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        for prefix, kwargs in PARTS:
            for doc in generate(**kwargs):  # type: ignore[arg-type]
                fh.write(orjson.dumps({"id": f"{prefix}-{doc['id']}", "text": doc["text"]}))
                fh.write(b"\n")


def dedup(src: Path, out: Path, *store: str) -> None:
    """``neardup dedup SRC -o OUT [--store ...]`` as a user runs it."""
    cmd = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", str(src), "-o", str(out)]
    subprocess.run([*cmd, "--no-progress", *store], check=True, capture_output=True)


def main() -> None:
    write_corpus()
    for name, src in inputs().items():
        plain = GOLDEN / f"{name}.verdicts.jsonl"
        dedup(src, plain)
        with plain.open("rb") as fh, gzip.GzipFile(expected(name), "wb", mtime=0) as gz:
            gz.write(fh.read())
        plain.unlink()
        print(f"wrote {expected(name)}")


if __name__ == "__main__":
    main()
