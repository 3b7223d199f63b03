"""The Python side of the command benchmark: ``neardup dedup``'s job done through the library.

``python bench/library_dedup.py CORPUS OUTPUT [REDIS_URL]`` reads JSON lines ``{"id", "text"}``
as a user's program would, hands them to :meth:`neardup.Index.add_many` (memory, or the Redis at
``REDIS_URL``) and writes one verdict line per document; one summary line on stderr, in the
datasketch program's form (``docs N flagged M``: flagged = judged a copy).
"""

from __future__ import annotations

import sys

import orjson

from neardup import Index


def main() -> None:
    corpus, output = sys.argv[1], sys.argv[2]
    store = sys.argv[3] if len(sys.argv) > 3 else "memory"
    with open(corpus, "rb") as lines:
        rows = [orjson.loads(line) for line in lines if line.strip()]
    with Index(store) as index:
        results = index.add_many(rows)
    flagged = sum(r.verdict in ("near_duplicate", "duplicate") for r in results)
    with open(output, "wb") as out:
        for r in results:
            out.write(orjson.dumps(r.to_dict()) + b"\n")
    print(f"docs {len(results)} flagged {flagged}", file=sys.stderr)


if __name__ == "__main__":
    main()
