"""Namespace aliases: a namespace rebuilt by ``neardup reindex`` is indexed under another name.

A namespace's sketch scheme cannot change in place (every stored signature would become
meaningless). ``neardup reindex`` rebuilds it under a new policy into a namespace of its own
(``articles.r2``, then ``articles.r3``), then switches: it records in the index that
``articles`` is now an alias of ``articles.r2`` and of the policy it was rebuilt with (the
``nd:aliases`` hash on Redis). Every worker reads the alias again every few seconds
(:class:`neardup.stream.engine.engine.Engine`), so all of them follow the switch, each deciding the
namespace's articles in the rebuilt namespace under the rebuilt policy; verdicts keep naming
``articles``. The read API and the admin commands resolve aliases the same way.

The value is JSON: ``{"target": "articles.r2", "policy": {<Policy fields>}}``.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import orjson

from neardup.stream import names
from neardup.stream.index.base import Index
from neardup.stream.namespaces.policies import SETTABLE
from neardup.stream.namespaces.policy import Policy

__all__ = ["next_target", "policy_fields", "read", "resolve", "roles", "value"]

_REBUILT_RE = re.compile(r"^(?P<base>.+)\.r(?P<gen>[0-9]+)$")


def policy_fields(policy: Policy) -> dict[str, Any]:
    """A policy as JSON-able settings (what the alias carries), its banding included."""
    out = {name: getattr(policy, name) for name in SETTABLE}
    out["bands"] = list(policy.bands) if policy.bands is not None else None
    return out


def value(target: str, policy: Policy) -> bytes:
    """The alias of a namespace rebuilt into ``target`` under ``policy``."""
    return orjson.dumps(
        {"target": target, "policy": policy_fields(policy)}, option=orjson.OPT_SORT_KEYS
    )


def read(ns: str, raw: bytes | None, default: Policy) -> tuple[str, Policy | None]:
    """Where ``ns`` is indexed and the policy it was rebuilt with (None: not rebuilt), from
    the stored alias. A value this version cannot read is an error naming the namespace."""
    if raw is None:
        return ns, None
    try:
        doc = orjson.loads(raw)
        target = doc["target"]
        names.check_namespace(target)
        fields = dict(doc["policy"])
        if fields.get("bands") is not None:
            fields["bands"] = tuple(fields["bands"])
        policy = dataclasses.replace(default, **fields)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"namespace {ns!r}: its alias in the index is not readable: {exc}"
        ) from None
    return target, policy


async def resolve(index: Index, ns: str) -> str:
    """Where ``ns``'s articles are indexed now (``ns`` itself unless it was rebuilt)."""
    names.check_namespace(ns)
    target, _ = read(ns, await index.alias(ns), Policy())
    return target


def next_target(ns: str, current: str) -> str:
    """The name the next rebuild of ``ns`` goes into: ``ns.r2`` the first time, then one up
    from the one in use (``current``)."""
    m = _REBUILT_RE.match(current)
    gen = int(m.group("gen")) + 1 if m and m.group("base") == ns else 2
    target = f"{ns}.r{gen}"
    if not names.NAMESPACE_RE.fullmatch(target):
        raise ValueError(
            f"namespace {ns!r} is too long to rebuild: {target!r} must match "
            f"{names.NAMESPACE_RE.pattern}"
        )
    return target


async def roles(index: Index, names: list[str]) -> dict[str, tuple[list[str], str | None]]:
    """For each namespace of ``names``: the names whose articles its keys hold now (itself,
    and every name rebuilt into it), and what it was rebuilt into (None: not rebuilt). A
    namespace that serves no name is not read by anyone: the keys a rebuild left behind, a
    rebuild that did not switch, or one a later rebuild replaced."""
    moved: dict[str, str] = {}
    for ns in names:
        target, _ = read(ns, await index.alias(ns), Policy())
        if target != ns:
            moved[ns] = target
    out: dict[str, tuple[list[str], str | None]] = {}
    for ns in names:
        served = sorted(a for a, t in moved.items() if t == ns)
        m = _REBUILT_RE.match(ns)
        a_rebuild = m is not None and (m.group("base") in moved or m.group("base") in names)
        if ns not in moved and not a_rebuild:
            served.insert(0, ns)
        out[ns] = (served, moved.get(ns))
    return out
