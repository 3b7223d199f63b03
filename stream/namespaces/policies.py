"""Per-namespace policies: a TOML file of one table per namespace, checked against the index.

``NEARDUP_NAMESPACES_FILE`` (the worker) or ``--namespaces-file`` (``neardup dedup``) names a file
such as::

    [namespace.comments]
    short_threshold = 0.85
    facts = "strict"

    [namespace.articles]
    measure = "containment"
    threshold = 0.6
    retention_s = 86400

Keys are the similarity settings' names in lower case (the fields of
:class:`~neardup.stream.namespaces.policy.Policy`, as ``NEARDUP_*`` names them without the prefix);
a namespace's table overrides the defaults (the ``NEARDUP_*`` settings), and a namespace not
declared uses the defaults. Every error names the file, the namespace and the field.

Against the index (:func:`reconcile`): a namespace keeps the sketch scheme it was built with. A
policy whose scheme differs is refused, with the fields that would change it — unless only its
banding would change and the stored banding still finds pairs at the new threshold with the
policy's recall (raising a threshold): then the namespace keeps its banding and the new threshold
applies. Decision settings (thresholds, caps, retention, facts, boilerplate) apply from then on;
the index records them, so a change is said once, when a worker first runs with it.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from neardup.sketch import lsh
from neardup.stream import names
from neardup.stream.errors import NamespacesFileError
from neardup.stream.index.base import scheme_fields
from neardup.stream.namespaces.policy import BucketSalts, Policy

__all__ = [
    "NamespacesFileError",
    "as_json",
    "decision_settings",
    "from_json",
    "load",
    "parse",
    "pinned",
    "scheme_of",
]

# Settings a file may set: every Policy field but the bucket salts (a scheme detail no one
# should change per namespace) and the pinned banding (set by reconcile only).
SETTABLE = tuple(
    f.name for f in dataclasses.fields(Policy) if f.name not in ("bucket_salts", "bands")
)


def parse(text: str, default: Policy, *, source: str = "namespaces file") -> dict[str, Policy]:
    """The policies a namespaces file declares, each the defaults with its table's values."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise NamespacesFileError(f"{source}: not valid TOML: {exc}") from None
    extra = sorted(set(doc) - {"namespace"})
    if extra:
        raise NamespacesFileError(
            f"{source}: unknown top-level key {extra[0]!r}: declare [namespace.NAME] tables"
        )
    tables = doc.get("namespace", {})
    if not isinstance(tables, dict):
        raise NamespacesFileError(f"{source}: 'namespace' must be a table of [namespace.NAME]")
    out: dict[str, Policy] = {}
    for ns, table in tables.items():
        where = f"{source}: namespace {ns!r}"
        if not names.NAMESPACE_RE.fullmatch(ns):
            raise NamespacesFileError(f"{where}: a name must match {names.NAMESPACE_RE.pattern}")
        if not isinstance(table, dict):
            raise NamespacesFileError(f"{where}: must be a table of settings")
        for field, value in table.items():
            if field not in SETTABLE:
                raise NamespacesFileError(
                    f"{where}: unknown setting {field!r} (settable: {', '.join(SETTABLE)})"
                )
            want = type(getattr(default, field))
            if not _fits(value, want, field):
                raise NamespacesFileError(
                    f"{where}: {field} = {value!r} must be a {_type_name(want, field)}"
                )
        values: dict[str, Any] = {
            f: float(v) if _is_float(default, f) else tuple(v) if isinstance(v, list) else v
            for f, v in table.items()
        }
        try:
            out[ns] = dataclasses.replace(default, **values)
        except (ValueError, TypeError) as exc:
            raise NamespacesFileError(f"{where}: {exc}") from None
    return out


def load(path: str | Path, default: Policy) -> dict[str, Policy]:
    """:func:`parse` of a file; a missing or unreadable file is an error naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise NamespacesFileError(f"namespaces file {str(path)!r}: {exc.strerror}") from None
    return parse(text, default, source=f"namespaces file {str(path)!r}")


def _is_float(default: Policy, field: str) -> bool:
    return isinstance(getattr(default, field), float) or field == "retention_s"


def _fits(value: Any, want: type, field: str) -> bool:
    if field == "boilerplate_sources":  # None by default: a list of source names
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if field == "retention_s":  # None by default: a number of seconds
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, want)


def _type_name(want: type, field: str) -> str:
    if field == "boilerplate_sources":
        return "list of source names"
    if field == "retention_s" or want is float:
        return "number"
    return {int: "whole number", bool: "boolean (true or false)", str: "string"}.get(
        want, want.__name__
    )


def decision_settings(policy: Policy) -> dict[str, Any]:
    """The settings that decide verdicts but not stored keys: they may change on a namespace."""
    scheme_free = {
        "threshold", "short_threshold", "max_matches", "bucket_cap", "retention_s",
        "deleted_ttl_s", "max_size_ratio", "facts", "facts_tokens", "boilerplate_min_docs",
        "boilerplate_lines", "boilerplate_tokens", "boilerplate_sources", "keep_text", "explain",
        "recall",
    }  # fmt: skip
    out = {f: getattr(policy, f) for f in SETTABLE if f in scheme_free}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}  # as JSON reads


def pinned(policy: Policy, stored_scheme: Mapping[str, Any]) -> Policy | None:
    """``policy`` with the stored banding, when that is all that keeps its scheme from the
    stored one and the stored banding still finds pairs at the policy's threshold with its
    recall; else None."""
    mine = policy.scheme()
    if {k: v for k, v in mine.items() if k != "bands"} != {
        k: v for k, v in stored_scheme.items() if k != "bands"
    }:
        return None
    bands, rows = (int(x) for x in stored_scheme["bands"])
    if lsh.recall_at(policy.candidate_jaccard, bands, rows) < policy.recall:
        return None
    return dataclasses.replace(policy, bands=(bands, rows))


def as_json(policy: Policy) -> dict[str, Any]:
    """Every field of a policy as JSON values (a saved index carries its policy so)."""
    fields: dict[str, Any] = orjson.loads(orjson.dumps(dataclasses.asdict(policy)))
    return fields


def from_json(fields: Mapping[str, Any]) -> Policy:
    """The policy :func:`as_json` gave; a ``ValueError`` for a field this version lacks or a
    value the policy refuses."""
    names = {f.name for f in dataclasses.fields(Policy)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ValueError(f"unknown policy fields {', '.join(unknown)}")
    values = dict(fields)
    if isinstance(values.get("bucket_salts"), dict):
        values["bucket_salts"] = BucketSalts(**values["bucket_salts"])
    for name in ("bands", "boilerplate_sources"):
        if isinstance(values.get(name), list):
            values[name] = tuple(values[name])
    try:
        return Policy(**values)
    except TypeError as exc:  # a value of another type
        raise ValueError(str(exc)) from None


def scheme_of(stored: bytes) -> dict[str, Any] | None:
    """A stored scheme (``Policy.scheme_bytes()`` with the index's ``|shard_bits=``) as a dict."""
    return scheme_fields(stored)
