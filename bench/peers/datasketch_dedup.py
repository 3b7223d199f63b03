"""The datasketch side of the command benchmark: a small program as datasketch's documentation
shows the library used.

``python bench/peers/datasketch_dedup.py CORPUS OUTPUT [HOST:PORT]`` reads JSON lines ``{"id",
"text"}`` and, per document in order, builds ``MinHash(num_perm=128)`` from its word 3-shingles,
calls ``lsh.query(m)`` then ``lsh.insert(id, m)`` on ``MinHashLSH(threshold=0.8, num_perm=128)``
(with Redis storage when HOST:PORT is given) and writes one line per document: its id and
candidates. It prints one summary line on stderr.

It imports nothing of this repository (numpy and the sketch package would add to its start-up):
its tokenising is ``harness.corpus.peer_shingles`` written out, and the benchmark checks the two
agree on every document.
"""

import json
import re
import sys

WORD = re.compile(r"\w+")


def shingles(text: str) -> set[bytes]:
    tokens = WORD.findall(text.casefold())
    if len(tokens) < 3:
        return {" ".join(tokens).encode()} if tokens else set()
    return {" ".join(tokens[i : i + 3]).encode() for i in range(len(tokens) - 2)}


def main() -> None:
    from datasketch import MinHash, MinHashLSH

    corpus, output = sys.argv[1], sys.argv[2]
    options: dict[str, object] = {}
    if len(sys.argv) > 3:
        host, port = sys.argv[3].rsplit(":", 1)
        options["storage_config"] = {
            "type": "redis",
            "redis": {"host": host, "port": int(port)},
        }
    lsh = MinHashLSH(threshold=0.8, num_perm=128, **options)
    docs = flagged = 0
    with open(corpus, "rb") as lines, open(output, "w") as out:
        for line in lines:
            if not line.strip():
                continue
            doc = json.loads(line)
            m = MinHash(num_perm=128)
            m.update_batch(shingles(doc["text"]))
            candidates = lsh.query(m)
            lsh.insert(doc["id"], m)
            out.write(json.dumps({"id": doc["id"], "candidates": candidates}) + "\n")
            docs += 1
            flagged += bool(candidates)
    print(f"docs {docs} flagged {flagged}", file=sys.stderr)


if __name__ == "__main__":
    main()
