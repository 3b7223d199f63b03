"""Which rows of a corpus are kept, from their verdicts in input order: the rule of
``neardup dedup --kept`` and :func:`neardup.dedup`, apart from both (no command line, no file
format), so the library reads it without loading the command's modules. The command feeds it
verdicts and :mod:`neardup.stream.cli.tables` copies the rows chosen.

* ``originals``: every row judged original.
* ``one-per-cluster``: one row per cluster as the clusters stand at the end of the run, its first
  member. A copy joins the cluster of its best match, but its other matches tie their clusters to
  it too, so two clusters that were apart merge when a later row matches both (as connected
  components do in text-dedup and datasketch). A cluster whose first member was indexed before
  this run (in the ``--store``) keeps none of its rows: the corpus already has it.

Either way an id is kept once: a row that repeats an earlier row's id (in its namespace) is the
same article again and gets the same verdict, so it is not kept a second time. A row that could
not be judged (an invalid row: no id, an empty text, no JSON...) is kept, in its place: it was
never found to be a copy, and a keep mask drops only what it found; the summary line
(:meth:`Keeper.summary`) names how many were kept so, by reason, and how many rows were left out,
by verdict.
"""

from __future__ import annotations

from collections import Counter

from neardup.stream.model import Verdict

ORIGINALS, ONE_PER_CLUSTER = "originals", "one-per-cluster"
KEEP_MODES = (ORIGINALS, ONE_PER_CLUSTER)


class Keeper:
    """Fed every verdict with its row's number, in input order; then :meth:`rows`."""

    def __init__(self, mode: str = ORIGINALS) -> None:
        if mode not in KEEP_MODES:
            raise ValueError(f"keep must be {' or '.join(KEEP_MODES)}, not {mode!r}")
        self.mode = mode
        self._first: dict[str, int] = {}  # an article (namespace, id) -> its first row
        self._originals: list[int] = []
        self._parent: dict[str, str] = {}  # union-find over articles: clusters as they merge
        self._invalid: dict[int, str] = {}  # a row that could not be judged -> the reason
        self._kinds: dict[int, str] = {}  # a judged row -> its verdict, or "repeated id"

    def invalid(self, number: int, reason: str) -> None:
        """A row that could not be judged: kept (it was never found to be a copy)."""
        self._invalid[number] = reason

    def add(self, number: int, v: Verdict) -> None:
        key = _key(v.namespace, v.id)
        if key in self._first:  # the same article again: its first row stands for it
            self._kinds[number] = REPEATED
            return
        self._first[key] = number
        self._kinds[number] = v.verdict
        if self.mode == ORIGINALS:
            if v.verdict == "original":
                self._originals.append(number)
            return
        self._union(_key(v.namespace, v.cluster), key)
        for match in v.matches:
            self._union(_key(v.namespace, match.id), key)

    def rows(self) -> set[int]:
        """The numbers of the rows to keep: those chosen by the mode and the invalid ones."""
        return self._chosen() | self._invalid.keys()

    def summary(self, kept: set[int]) -> str:
        """One line: the rows left out by verdict, and the invalid rows kept by reason."""
        left = Counter(kind for number, kind in self._kinds.items() if number not in kept)
        total = len(self._kinds) + len(self._invalid)
        line = f"--kept left out {total - len(kept):,} of {total:,} rows"
        if left:
            line += ": " + ", ".join(f"{left[k]:,} {_plural(k, left[k])}" for k in sorted(left))
        if self._invalid:
            why = Counter(self._invalid.values())
            line += f"; kept {len(self._invalid):,} invalid (never judged): " + ", ".join(
                f"{why[r]:,} {r}" for r in sorted(why)
            )
        return line

    def _chosen(self) -> set[int]:
        if self.mode == ORIGINALS:
            return set(self._originals)
        first: dict[str, int] = {}  # a final cluster -> its first row
        for key, number in self._first.items():
            root = self._find(key)
            if number < first.get(root, number + 1):
                first[root] = number
        # an article that is no row of this run was indexed before it, so before every row
        earlier = {self._find(key) for key in self._parent if key not in self._first}
        return {number for root, number in first.items() if root not in earlier}

    def _find(self, key: str) -> str:
        parent = self._parent
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]  # path halving
            key = parent[key]
        return key

    def _union(self, a: str, b: str) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self._parent[rb] = ra


REPEATED = "repeated id"
_NAMES = {  # a kind of row left out: its name for one, for more
    "duplicate": ("duplicate", "duplicates"),
    "near_duplicate": ("near-duplicate", "near-duplicates"),
    # one-per-cluster: another row (an earlier one, or one in the store) stands for its cluster
    "original": (
        "original of a cluster kept by another row",
        "originals of clusters kept by another row",
    ),
    REPEATED: ("repeated id", "repeated ids"),
}


def _plural(kind: str, n: int) -> str:
    return _NAMES[kind][n != 1]


def _key(namespace: str, doc_id: str) -> str:
    return f"{namespace}\x00{doc_id}"


__all__ = ["KEEP_MODES", "ONE_PER_CLUSTER", "ORIGINALS", "REPEATED", "Keeper"]
