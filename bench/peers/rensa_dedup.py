"""The rensa side of the command benchmark: a small program as rensa's documentation shows the
library used, with the exact check neardup does added when asked.

``python bench/peers/rensa_dedup.py CORPUS OUTPUT [--verify]`` reads JSON lines ``{"id",
"text"}`` and, per document in order, builds ``RMinHash(num_perm=128, seed=42)`` from its word
3-shingles, calls ``lsh.query(m)`` then ``lsh.insert(n, m)`` on ``RMinHashLSH(threshold=0.8,
num_perm=128, num_bands=16)`` and writes one line per document: its id and candidates. With
``--verify`` a candidate stays only when the exact Jaccard similarity of the two shingle sets is
at least the threshold: the same job as ``neardup dedup``, which verifies every candidate, so the
two times compare like with like. It prints one summary line on stderr.

Its tokenising is :mod:`bench.peers.datasketch_dedup`'s, written out for the same reason: it
imports nothing of this repository.
"""

import json
import re
import sys

WORD = re.compile(r"\w+")
THRESHOLD = 0.8


def shingles(text: str) -> set[str]:
    tokens = WORD.findall(text.casefold())
    if len(tokens) < 3:
        return {" ".join(tokens)} if tokens else set()
    return {" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2)}


def main() -> None:
    from rensa import RMinHash, RMinHashLSH

    corpus, output = sys.argv[1], sys.argv[2]
    verify = "--verify" in sys.argv[3:]
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=128, num_bands=16)
    ids: list[str] = []
    sets: list[set[str]] = []
    docs = flagged = 0
    with open(corpus, "rb") as lines, open(output, "w") as out:
        for line in lines:
            if not line.strip():
                continue
            doc = json.loads(line)
            words = shingles(doc["text"])
            m = RMinHash(num_perm=128, seed=42)
            m.update(list(words))
            found = lsh.query(m)
            if verify:
                found = [
                    n for n in found if len(words & sets[n]) >= THRESHOLD * len(words | sets[n]) > 0
                ]
            n = len(ids)
            lsh.insert(n, m)
            ids.append(doc["id"])
            if verify:
                sets.append(words)
            candidates = [ids[k] for k in sorted(found)]
            out.write(json.dumps({"id": doc["id"], "candidates": candidates}) + "\n")
            docs += 1
            flagged += bool(candidates)
    print(f"docs {docs} flagged {flagged}", file=sys.stderr)


if __name__ == "__main__":
    main()
