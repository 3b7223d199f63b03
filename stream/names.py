"""What a namespace may be called: the rule every entry point checks (messages, the HTTP API,
the CLI, the policies and aliases files, the engine) before a name reaches an index.

A strict charset, because a name becomes part of the index's key names (Redis keys carry it as
their hash tag, :mod:`neardup.stream.index.redis.keys`) and the key names of two tenants must
never meet; and a bound, so every key stays short. ``/`` is not a namespace character, so a
sharded namespace's group keys never name another namespace.
"""

from __future__ import annotations

import re

NAMESPACE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def check_namespace(ns: str) -> str:
    """``ns`` if it is a namespace's name, else a ``ValueError`` naming the rule."""
    if not NAMESPACE_RE.fullmatch(ns):
        raise ValueError(f"namespace must match {NAMESPACE_RE.pattern}, got {ns!r}")
    return ns


__all__ = ["NAMESPACE_RE", "check_namespace"]
