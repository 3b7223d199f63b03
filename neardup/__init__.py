"""neardup from Python: an index of texts that tells which ones copy an earlier one.

The worker (``neardup worker``) judges a Kafka topic; :class:`Index` judges texts one call at a
time in your own process, on memory or on the same Redis index the workers share::

    from neardup import Index

    with Index() as index:                     # or Index("redis://localhost:6379/0")
        index.add("a", story)                  # a Verdict: original
        verdict = index.add("b", copy)         # near_duplicate, duplicate_of "a"
        index.query(other)                     # ["a", ...]: what it copies, nothing stored
        index.remove("a")

    results = index.add_many(frame)            # a DataFrame, an Arrow table, (id, text) pairs
    kept = neardup.dedup(frame)                # the rows neardup dedup --kept keeps
"""

from __future__ import annotations

from neardup._version import package_version
from neardup.api import Index
from neardup.batch import Invalid, dedup, keep_mask
from neardup.stream.errors import NeardupError
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

# from the installed package's metadata (see neardup._version)
__version__ = package_version()

__all__ = [
    "Article",
    "Index",
    "Invalid",
    "NeardupError",
    "Policy",
    "Verdict",
    "dedup",
    "keep_mask",
]
