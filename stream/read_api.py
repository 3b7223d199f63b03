"""Asking the service: an article's verdict, a cluster's members, the namespaces, over HTTP.

* ``GET /articles/{id}?namespace=``: the article's seq, verdict, cluster, registration time and
  text as sent (when the namespace keeps text).
* ``GET /clusters/{id}?namespace=&offset=&limit=``: a cluster (named by its original's id): its
  size, first and last seen, and a page of its members, the original first, then its copies by
  registration time.
* ``GET /namespaces``: every namespace with its documents, copies, clusters, bytes, hot buckets,
  scheme and decision settings (bytes and hot buckets estimated from sampled shards on Redis).
* ``GET /openapi.json``: the OpenAPI 3.1 document of every view (:func:`openapi`).

The same bearer token as ``/check`` guards them. Every error is a JSON body with an ``error``
reason: ``unauthorized`` (401), ``invalid_namespace``/``invalid_id``/``invalid_field`` (400),
``not_found`` (404), ``unavailable`` (503, the index is away).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from stream import aliases
from stream.errors import InvalidMessage
from stream.index.base import Index
from stream.keys import NAMESPACE_RE
from stream.model import Verdict
from stream.records import Record
from stream.schema import OPTIONAL_FIELDS, check_id

if TYPE_CHECKING:  # the views' types; the CLI's commands use the lookups without faust
    from faust.web import Request, Response, View

    from stream.config import Settings

log = logging.getLogger("neardup.worker")

MAX_PAGE = 500


def _namespace(request: Request, settings: Settings) -> str:
    ns = request.query.get("namespace") or settings.namespace
    if not NAMESPACE_RE.fullmatch(ns):
        raise InvalidMessage("invalid_namespace", f"namespace must match {NAMESPACE_RE.pattern}")
    return ns


def _int(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidMessage("invalid_field", f"{name} must be a whole number") from None
    if not lo <= value <= hi:
        raise InvalidMessage("invalid_field", f"{name} must be between {lo} and {hi}")
    return value


async def article(index: Index, ns: str, doc_id: str) -> dict[str, Any] | None:
    """What the index holds about one article, or None if it is not indexed."""
    return await _article(index, ns, await aliases.resolve(index, ns), doc_id)


async def _article(index: Index, ns: str, where: str, doc_id: str) -> dict[str, Any] | None:
    """:func:`article` of ``ns``, indexed in ``where`` (itself, or what it was rebuilt into)."""
    seq = await index.seq_of(where, doc_id)
    if seq is None:
        return None
    raw = (await index.records(where, [seq])).get(seq)
    if raw is None:  # removed between the two reads
        return None
    rec = Record.decode(raw)
    stored = (await index.verdicts(where, [seq])).get(seq)
    verdict = Verdict.from_json(stored).to_dict() if stored is not None else None
    return {
        "id": doc_id,
        "namespace": ns,
        "seq": seq,
        "cluster": verdict["cluster"] if verdict else None,
        "registered_at": rec.registered_at,
        "verdict": verdict,
        "text": rec.raw or None,
    }


async def cluster(
    index: Index, ns: str, cluster_id: str, offset: int, limit: int
) -> dict[str, Any] | None:
    """A page of a cluster: its original (when still indexed) then its copies; None if the
    cluster has no member."""
    where = await aliases.resolve(index, ns)  # rebuilt: indexed there (one read of the alias)
    original = await _article(index, ns, where, cluster_id)
    if original is not None and original["cluster"] != cluster_id:
        original = None  # that article is a copy in another cluster, not this one's original
    skip = max(0, offset - (1 if original else 0))
    want = limit - (1 if original and offset == 0 else 0)
    page, copies, span = await index.members(where, cluster_id, skip, max(want, 0))
    size = copies + (1 if original else 0)
    if size == 0:
        return None
    seqs = [s for s, _ in page]
    records = await index.records(where, seqs)
    verdicts = await index.verdicts(where, seqs)
    members = []
    if original is not None and offset == 0:
        members.append(_member(original["id"], original["seq"], original["registered_at"]))
        members[-1]["verdict"] = original["verdict"]
    for seq, at in page:
        raw = records.get(seq)
        if raw is None:
            continue  # removed meanwhile
        v = verdicts.get(seq)
        members.append(_member(Record.decode(raw).doc_id, seq, at))
        members[-1]["verdict"] = Verdict.from_json(v).to_dict() if v is not None else None
    times = [t for t in (span or ())] + ([original["registered_at"]] if original else [])
    end = offset + limit
    return {
        "cluster": cluster_id,
        "namespace": ns,
        "size": size,
        "first_seen": min(times) if times else None,
        "last_seen": max(times) if times else None,
        "members": members,
        "next_offset": end if end < size else None,
    }


def _member(doc_id: str, seq: int, at: float) -> dict[str, Any]:
    return {"id": doc_id, "seq": seq, "registered_at": at}


async def namespaces(index: Index) -> dict[str, Any]:
    out = []
    names = await index.namespaces()
    roles = await aliases.roles(index, names)
    for ns in names:
        st = await index.stats(ns)
        serves, rebuilt_into = roles[ns]
        out.append(
            {
                "namespace": ns,
                # the names whose articles these keys hold (empty: no one reads them)
                "serves": serves,
                "rebuilt_into": rebuilt_into,
                "documents": st.documents,
                "copies": st.copies,
                "clusters": st.clusters,
                "verdicts": st.verdicts,
                "line_keys": st.line_keys,
                "bytes": st.bytes,
                "hot_buckets": st.hot_buckets,
                "estimated_from_shards": st.sampled,
                "shards": st.shards,
                "scheme": st.scheme,
                "policy": st.policy,
            }
        )
    return {"namespaces": out}


# what a 401 asks for (RFC 6750): a bearer token
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="neardup"'}


async def _answer(view: View, allowed: bool, work: Any) -> Response:
    if not allowed:
        return view.json(
            {"error": "unauthorized", "detail": "a valid bearer token"},
            status=401,
            headers=CHALLENGE,
        )
    try:
        body = await work()
    except InvalidMessage as exc:
        return view.json({"error": exc.reason, "detail": str(exc)}, status=400)
    except Exception as exc:  # the index is away: say so, never a 500
        log.warning("read view failed: %s", exc)
        return view.json({"error": "unavailable", "detail": str(exc)[:500]}, status=503)
    if body is None:
        return view.json({"error": "not_found", "detail": "nothing indexed by that id"}, status=404)
    return view.json(body)


async def get_article(
    view: View, request: Request, settings: Settings, allowed: bool, index: Index, doc_id: str
) -> Response:
    async def work() -> dict[str, Any] | None:
        return await article(index, _namespace(request, settings), check_id(doc_id))

    return await _answer(view, allowed, work)


async def get_cluster(
    view: View, request: Request, settings: Settings, allowed: bool, index: Index, cluster_id: str
) -> Response:
    async def work() -> dict[str, Any] | None:
        ns = _namespace(request, settings)
        offset = _int(request, "offset", 0, 0, 10**9)
        limit = _int(request, "limit", 50, 1, MAX_PAGE)
        return await cluster(index, ns, check_id(cluster_id), offset, limit)

    return await _answer(view, allowed, work)


async def get_namespaces(view: View, allowed: bool, index: Index) -> Response:
    async def work() -> dict[str, Any]:
        return await namespaces(index)

    return await _answer(view, allowed, work)


# --------------------------------------------------------------------------- the OpenAPI document

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}, "detail": {}},
}
_JSON = "application/json"
_ANY = {_JSON: {"schema": {"type": "object"}}}


def _responses(ok: dict[str, Any], *codes: int) -> dict[str, Any]:
    names = {400: "bad request", 401: "no valid token", 404: "not found", 409: "refused",
             413: "body too large", 415: "not JSON", 429: "too many checks waiting",
             503: "index unavailable"}  # fmt: skip
    out: dict[str, Any] = {"200": {"description": "ok", "content": {_JSON: {"schema": ok}}}}
    for c in codes:
        out[str(c)] = {"description": names[c], "content": {_JSON: {"schema": _ERROR}}}
    return out


# a query's namespace: empty or absent means the worker's NEARDUP_NAMESPACE
_NS_SCHEMA = {"type": "string", "pattern": "^([A-Za-z0-9_.-]{1,64})?$"}
_ID_SCHEMA = {"type": "string", "pattern": "^[A-Za-z0-9_.~-]{1,128}$"}  # what a path carries
_NS = {
    "name": "namespace",
    "in": "query",
    "required": False,
    "schema": _NS_SCHEMA,
    "description": f"default: the worker's NEARDUP_NAMESPACE; must match {NAMESPACE_RE.pattern}",
}
_VERDICT: dict[str, Any] = {"type": ["object", "null"]}
_ARTICLE = {
    "type": "object",
    "required": ["id", "namespace", "seq", "cluster", "registered_at", "verdict", "text"],
    "properties": {
        "id": {"type": "string"},
        "namespace": {"type": "string"},
        "seq": {"type": "integer"},
        "cluster": {"type": ["string", "null"]},
        "registered_at": {"type": "number"},
        "verdict": _VERDICT,
        "text": {"type": ["string", "null"]},
    },
}
_CLUSTER = {
    "type": "object",
    "required": ["cluster", "namespace", "size", "first_seen", "last_seen", "members"],
    "properties": {
        "cluster": {"type": "string"},
        "namespace": {"type": "string"},
        "size": {"type": "integer"},
        "first_seen": {"type": ["number", "null"]},
        "last_seen": {"type": ["number", "null"]},
        "members": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "seq", "registered_at", "verdict"],
                "properties": {
                    "id": {"type": "string"},
                    "seq": {"type": "integer"},
                    "registered_at": {"type": "number"},
                    "verdict": _VERDICT,
                },
            },
        },
        "next_offset": {"type": ["integer", "null"]},
    },
}
_NAMESPACES = {
    "type": "object",
    "required": ["namespaces"],
    "properties": {"namespaces": {"type": "array", "items": {"type": "object"}}},
}


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the worker's views (served at ``/openapi.json``)."""
    page = [
        {
            "name": "offset",
            "in": "query",
            "required": False,
            "schema": {"type": "integer", "minimum": 0, "maximum": 10**9},
        },
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
        },
    ]
    doc_id = {"name": "doc_id", "in": "path", "required": True, "schema": _ID_SCHEMA}
    check_body = {
        "type": "object",
        "required": ["text"],
        # registering needs the article's own id; a check without one gets a throwaway id
        "if": {"properties": {"register": {"const": True}}, "required": ["register"]},
        "then": {"required": ["id"]},
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                # a character neither JSON Schema's \s nor Python's whitespace (\x1c-\x1f, \x85)
                "pattern": "[^\\s\\x1c-\\x1f\\x85]",
            },  # size: a 413 past the limit
            "id": {
                "type": ["string", "integer"],
                "pattern": _ID_SCHEMA["pattern"],
                # a JSON integer past 64 bits is parsed as a float, which is not an id
                "minimum": -(2**63),
                "maximum": 2**64 - 1,
            },
            "namespace": {"type": ["string", "null"], "pattern": NAMESPACE_RE.pattern},
            "register": {"type": "boolean"},
            "format": {"enum": ["html", "page", "text", None]},
            **{f: {"type": ["string", "null"]} for f in OPTIONAL_FIELDS},
        },
        "additionalProperties": False,  # an unknown field is refused, naming it (400)
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "neardup worker", "version": "1"},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/check": {
                "post": {
                    "summary": "originality check of one text (register: false by default)",
                    "requestBody": {"required": True, "content": {_JSON: {"schema": check_body}}},
                    "responses": _responses({"type": "object"}, 400, 401, 409, 413, 415, 429, 503),
                }
            },
            "/articles/{doc_id}": {
                "get": {
                    "summary": "an article's seq, verdict, cluster and text",
                    "parameters": [doc_id, _NS],
                    "responses": _responses(_ARTICLE, 400, 401, 404, 503),
                },
                "delete": {
                    "summary": "takedown: the article leaves the index, a tombstone is published",
                    "parameters": [doc_id, _NS],
                    "responses": _responses({"type": "object"}, 400, 401, 503),
                },
            },
            "/clusters/{doc_id}": {
                "get": {
                    "summary": "a cluster (named by its original's id): size, first and last "
                    "seen, a page of members",
                    "parameters": [doc_id, _NS, *page],
                    "responses": _responses(_CLUSTER, 400, 401, 404, 503),
                }
            },
            "/namespaces": {
                "get": {
                    "summary": "every namespace with its statistics",
                    "responses": _responses(_NAMESPACES, 401, 503),
                }
            },
            "/health": {
                "get": {
                    "summary": "readiness: 200 when Kafka and Redis are reachable, else 503",
                    "security": [],
                    "responses": {
                        "200": {"description": "ready", "content": _ANY},
                        "503": {"description": "not ready", "content": _ANY},
                    },
                }
            },
        },
    }


__all__ = [
    "article",
    "cluster",
    "get_article",
    "get_cluster",
    "get_namespaces",
    "namespaces",
    "openapi",
]
