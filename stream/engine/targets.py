"""Where a namespace's articles are indexed and under which policy: its own name, or what
``neardup reindex`` rebuilt it into (an alias, read again every ``alias_ttl_s``), with its
configured policy checked once against the scheme stored in the index.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TypeVar

import orjson

from neardup.stream import names
from neardup.stream.index.base import Index
from neardup.stream.namespaces import aliases
from neardup.stream.namespaces import policies as namespaces
from neardup.stream.namespaces.policy import Policy

log = logging.getLogger("neardup.engine")
ALIAS_TTL_S = 5.0  # how long a worker trusts what it read of a namespace's alias
_TARGETS_KEPT = 1024  # namespaces whose alias a worker remembers (oldest read dropped first)
T = TypeVar("T")


def _remember(kept: dict[str, T], ns: str, value: T) -> None:
    """``kept[ns] = value``, dropping the oldest entry past :data:`_TARGETS_KEPT`: any caller
    may name a namespace (a check), so what is kept per namespace is bounded."""
    kept.pop(ns, None)  # to the end: the order is of when each was last written
    if len(kept) >= _TARGETS_KEPT:
        kept.pop(next(iter(kept)))
    kept[ns] = value


class Targets:
    """A worker's view of its namespaces: where each is indexed, under which policy, and
    whether its scheme passed the check against the index (bounded: a producer may name any
    namespace; one forgotten is read and checked again).

    ``aliases`` fixes some namespaces' targets for good (a rebuild in progress)."""

    def __init__(
        self,
        index: Index,
        policy: Policy | None = None,
        policies: Mapping[str, Policy] | None = None,
        aliases: Mapping[str, str] | None = None,
        alias_ttl_s: float = ALIAS_TTL_S,
    ) -> None:
        self.index = index
        self.default_policy = policy or Policy()
        self._policies = dict(policies or {})
        self.checked: dict[str, Policy] = {}  # namespace -> the policy its scheme passed
        # the same for read-only checks, and when read (bounded; read again after the TTL)
        self._read_checked: dict[str, tuple[Policy, float]] = {}
        # namespace -> (indexed in, its rebuilt policy or None, read at): the index's aliases,
        # read again after alias_ttl_s; ``aliases`` fixes some for good (a rebuild in progress)
        self._fixed = dict(aliases or {})
        self._alias_ttl_s = alias_ttl_s
        self._targets: dict[str, tuple[str, Policy | None, float]] = {}

    async def of(self, ns: str) -> tuple[str, Policy]:
        """Where a namespace's articles are indexed and the policy they are decided under:
        the namespace itself with its configured policy, or, once ``neardup reindex`` rebuilt
        it, the namespace it was rebuilt into with the policy it was rebuilt with (every worker
        follows the switch within ``alias_ttl_s``, whatever its own configuration says)."""
        if ns in self._fixed:
            return self._fixed[ns], self.policy_for(ns)
        at = time.monotonic()
        known = self._targets.get(ns)
        if known is None or at - known[2] >= self._alias_ttl_s:
            raw = await self.index.alias(ns)
            target, policy = aliases.read(ns, raw, self.default_policy)
            if known is not None and known[0] != target:
                log.warning("namespace %r is now indexed in %r (rebuilt)", ns, target)
            known = (target, policy, at)
            _remember(self._targets, ns, known)
        target, policy, _ = known
        return target, policy or self.policy_for(ns)

    def policy_for(self, ns: str) -> Policy:
        """The policy configured for ``ns``, as its check against the index left it (a raised
        threshold keeps the stored banding)."""
        return self.checked.get(ns) or self._policies.get(ns, self.default_policy)

    async def ensure(self, ns: str, policy: Policy) -> Policy:
        """The policy the namespace runs under, once its scheme is checked against the index.
        A namespace keeps the scheme it was built with: a policy that differs only in banding,
        where the stored banding still has the policy's recall at its threshold, keeps the
        stored banding (:func:`neardup.stream.namespaces.policies.pinned`); any other difference is
        refused. Changed decision settings are recorded in the index and logged once."""
        if ns in self.checked:
            return self.checked[ns]
        names.check_namespace(ns)
        stored = await self.index.stored_scheme(ns)
        have = namespaces.scheme_of(stored) if stored is not None else None
        if have is not None and have != policy.scheme():
            kept = namespaces.pinned(policy, have)
            if kept is not None:
                log.warning(
                    "namespace %r keeps its banding %s: threshold %s applies with it",
                    ns,
                    kept.bands_rows,
                    policy.threshold,
                )
                policy = kept
        await self.index.ensure_scheme(ns, policy.scheme_bytes())
        await self._record_decisions(ns, policy)
        # bounded: a producer may name any namespace; one forgotten is checked again (the
        # index keeps more of its own checks, SCHEMES_KEPT, so what is here is there too)
        _remember(self.checked, ns, policy)
        return policy

    async def ensure_read(self, ns: str, policy: Policy) -> Policy:
        """:meth:`ensure` for a read-only check: the same policy and the same refusal of
        another scheme, and nothing written (an unknown namespace stays unknown)."""
        if ns in self.checked:
            return self.checked[ns]
        known = self._read_checked.get(ns)
        if known is not None and time.monotonic() - known[1] < self._alias_ttl_s:
            return known[0]
        names.check_namespace(ns)
        stored = await self.index.stored_scheme(ns)
        if stored is None:
            return policy  # nothing indexed: nothing to refuse, nothing to remember
        have = namespaces.scheme_of(stored)
        if have is not None and have != policy.scheme():
            policy = namespaces.pinned(policy, have) or policy
        await self.index.check_scheme(ns, policy.scheme_bytes())
        _remember(self._read_checked, ns, (policy, time.monotonic()))  # read again after the TTL
        return policy

    async def known(self, ns: str) -> bool:
        """Whether anything was ever indexed in ``ns`` (or what it is an alias of): a check
        against an unknown namespace has nothing to compare with, and says so."""
        names.check_namespace(ns)
        where, _ = await self.of(ns)
        if where in self.checked or where in self._read_checked:
            return True  # its scheme was read (or written) already: a scheme stays
        return await self.index.stored_scheme(where) is not None

    async def _record_decisions(self, ns: str, policy: Policy) -> None:
        mine = namespaces.decision_settings(policy)
        blob = orjson.dumps(mine, option=orjson.OPT_SORT_KEYS)
        before = await self.index.policy_record(ns)
        if before == blob:
            return
        if before is not None:
            old = orjson.loads(before)
            changed = {k: (old.get(k), v) for k, v in mine.items() if old.get(k) != v}
            said = ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in sorted(changed.items()))
            log.warning("namespace %r: %s, from now on", ns, said)
        await self.index.record_policy(ns, blob)


__all__ = ["ALIAS_TTL_S", "Targets"]
