"""What the engine knows of one namespace while it decides a batch: the records and verdicts
read so far, the views of earlier texts, and what the batch's own articles taught."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from neardup.stream.model import Verdict
from neardup.stream.namespaces.policy import Policy
from neardup.stream.records import Record


@dataclass
class NamespaceState:
    """One namespace's state while a batch of its articles is decided: the records and
    verdicts read or decided so far, the views of earlier texts, what the batch taught."""

    ns: str  # where its articles are indexed (the namespace, or what it is an alias of)
    policy: Policy
    name: str = ""  # the namespace the verdicts name (the articles' own); "" is ``ns``
    records: dict[int, Record] = field(default_factory=dict)
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    raw_verdicts: dict[int, bytes] = field(default_factory=dict)  # read already, not yet decoded
    # records' texts less what their sources repeat now (boilerplate.views), by seq
    views: dict[int, npt.NDArray[np.uint32]] = field(default_factory=dict)
    # the lines and passages the batch's own articles counted (boilerplate.learn): not in
    # the index until the batch's verdicts are stored, but learned all the same
    in_batch: Counter[bytes] = field(default_factory=Counter)

    def live(self, seq: int, at: float) -> bool:
        """Whether stored article ``seq`` was read and is within the retention at ``at``."""
        rec = self.records.get(seq)
        if rec is None:
            return False
        r = self.policy.retention_s
        return r is None or rec.registered_at >= at - r


__all__ = ["NamespaceState"]
