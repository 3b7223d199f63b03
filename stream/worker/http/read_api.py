"""Asking the service: an article's verdict, a cluster's members, the namespaces, over HTTP.

* ``GET /articles/{id}?namespace=``: the article's seq, verdict, cluster, registration time and
  text as sent (when the namespace keeps text).
* ``GET /clusters/{id}?namespace=&offset=&limit=``: a cluster (named by its original's id): its
  size, first and last seen, and a page of its members, the original first, then its copies by
  registration time.
* ``GET /namespaces``: every namespace with its documents, copies, clusters, bytes, hot buckets,
  scheme and decision settings (bytes and hot buckets estimated from sampled shards on Redis).
* ``GET /openapi.json``: the OpenAPI 3.1 document of every view (:func:`openapi`), generated
  from the models the views validate with (:mod:`neardup.stream.worker.http.api_models`).

The same bearer token as ``/check`` guards them (a worker without one serves loopback only, or
was opened by ``NEARDUP_WEB_OPEN``: :func:`neardup.stream.worker.config.web_mode`), and the
document declares bearer auth only when the worker has a token. Every error is a JSON body
with an ``error`` reason: ``unauthorized`` (401), ``invalid_namespace``/``invalid_id``/
``invalid_field`` (400), ``not_found`` (404), ``unavailable`` (503, the index is away).
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from neardup.stream.errors import InvalidMessage
from neardup.stream.index.base import Index
from neardup.stream.model import Verdict
from neardup.stream.namespaces import aliases
from neardup.stream.records import Record
from neardup.stream.worker.http import api_models

if TYPE_CHECKING:  # the views' types; the CLI's commands use the lookups without faust
    from faust.web import Request, Response, View

    from neardup.stream.worker.config import Settings

log = logging.getLogger("neardup.worker")

MAX_PAGE = api_models.MAX_PAGE
M = TypeVar("M", bound=BaseModel)


def _query(request: Request, model: type[M]) -> M:
    """The request's query validated with ``model``; an empty value is an absent one."""
    return api_models.validate(model, {k: v for k, v in request.query.items() if v != ""})


def _doc_id(doc_id: str) -> str:
    return api_models.validate(api_models.ArticlePath, {"doc_id": doc_id}).doc_id


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
                "shard_groups": st.groups,
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
        query = _query(request, api_models.ArticleQuery)
        return await article(index, query.namespace or settings.namespace, _doc_id(doc_id))

    return await _answer(view, allowed, work)


async def get_cluster(
    view: View, request: Request, settings: Settings, allowed: bool, index: Index, cluster_id: str
) -> Response:
    async def work() -> dict[str, Any] | None:
        q = _query(request, api_models.ClusterQuery)
        ns = q.namespace or settings.namespace
        return await cluster(index, ns, _doc_id(cluster_id), q.offset, q.limit)

    return await _answer(view, allowed, work)


async def get_namespaces(view: View, allowed: bool, index: Index) -> Response:
    async def work() -> dict[str, Any]:
        return await namespaces(index)

    return await _answer(view, allowed, work)


# --------------------------------------------------------------------------- the OpenAPI document

_JSON = "application/json"
_REASONS = {400: "bad request", 401: "no valid token", 404: "not found",
            408: "the body did not arrive in time", 409: "refused", 413: "body too large",
            415: "not JSON", 429: "too many checks waiting", 503: "index unavailable"}  # fmt: skip


def _ref(model: type[BaseModel]) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _content(model: type[BaseModel]) -> dict[str, Any]:
    return {_JSON: {"schema": _ref(model)}}


def _responses(ok: type[BaseModel], *codes: int) -> dict[str, Any]:
    out: dict[str, Any] = {"200": {"description": "ok", "content": _content(ok)}}
    for c in codes:
        out[str(c)] = {"description": _REASONS[c], "content": _content(api_models.ErrorOut)}
    return out


def _parameters(model: type[BaseModel], where: str) -> list[dict[str, Any]]:
    """One OpenAPI parameter per field of ``model``, its schema the field's own."""
    schema = model.model_json_schema()
    out = []
    for name in model.model_fields:
        prop = dict(schema["properties"][name])
        prop.pop("title", None)
        param = {"name": name, "in": where, "required": where == "path", "schema": prop}
        if "description" in prop:
            param["description"] = prop["description"]
        out.append(param)
    return out


_MODELS: tuple[type[BaseModel], ...] = (
    api_models.CheckRequest,
    api_models.CheckOut,
    api_models.ArticleOut,
    api_models.ClusterOut,
    api_models.NamespacesOut,
    api_models.DeleteOut,
    api_models.Health,
    api_models.Live,
    api_models.ErrorOut,
)


@functools.cache
def _document(bearer: bool) -> bytes:
    _, defs = models_json_schema(
        [(m, "validation") for m in _MODELS], ref_template="#/components/schemas/{model}"
    )
    schemas = defs["$defs"]
    article = _parameters(api_models.ArticlePath, "path")
    query = _parameters(api_models.ArticleQuery, "query")
    page = _parameters(api_models.ClusterQuery, "query")
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "neardup worker", "version": "1", "description": _security_note(bearer)},
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/check": {
                "post": {
                    "summary": "originality check of one text (register: false by default)",
                    "requestBody": {"required": True, "content": _content(api_models.CheckRequest)},
                    "responses": _responses(
                        api_models.CheckOut, 400, 401, 408, 409, 413, 415, 429, 503
                    ),
                }
            },
            "/articles/{doc_id}": {
                "get": {
                    "summary": "an article's seq, verdict, cluster and text",
                    "parameters": [*article, *query],
                    "responses": _responses(api_models.ArticleOut, 400, 401, 404, 503),
                },
                "delete": {
                    "summary": "takedown: the article leaves the index, a tombstone is published",
                    "parameters": [*article, *query],
                    "responses": _responses(api_models.DeleteOut, 400, 401, 503),
                },
            },
            "/clusters/{doc_id}": {
                "get": {
                    "summary": "a cluster (named by its original's id): size, first and last "
                    "seen, a page of members",
                    "parameters": [*article, *page],
                    "responses": _responses(api_models.ClusterOut, 400, 401, 404, 503),
                }
            },
            "/namespaces": {
                "get": {
                    "summary": "every namespace with its statistics",
                    "responses": _responses(api_models.NamespacesOut, 401, 503),
                }
            },
            "/health": {
                "get": {
                    "summary": "readiness: 200 when Kafka and Redis are reachable, else 503",
                    "security": [],
                    "responses": {
                        "200": {"description": "ready", "content": _content(api_models.Health)},
                        "503": {"description": "not ready", "content": _content(api_models.Health)},
                    },
                }
            },
            "/live": {
                "get": {
                    "summary": "liveness: 200 while the worker can serve, whatever Kafka and "
                    "Redis do",
                    "security": [],
                    "responses": {
                        "200": {"description": "live", "content": _content(api_models.Live)}
                    },
                }
            },
        },
    }
    return orjson.dumps(doc if bearer else _without_auth(doc))


def _without_auth(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as a worker without a token serves it: no security scheme, no view asking for
    one, no 401 among the answers (a client must not be told of credentials never asked)."""
    del doc["security"], doc["components"]["securitySchemes"]
    for ops in doc["paths"].values():
        for op in ops.values():
            op.pop("security", None)
            op["responses"].pop("401", None)
    return doc


def _security_note(bearer: bool) -> str:
    if bearer:
        return "Every view but /health requires the bearer token (NEARDUP_CHECK_TOKEN)."
    return (
        "No token is set: the worker listens on loopback only, or its operator opened it to "
        "every client (NEARDUP_WEB_OPEN); no view asks for credentials."
    )


def openapi(*, bearer: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the worker's views (served at ``/openapi.json``), generated
    from the models the views validate with (:mod:`neardup.stream.worker.http.api_models`).
    ``bearer``: the worker has a token (``NEARDUP_CHECK_TOKEN``), so the document declares
    bearer auth and 401 answers; without one it declares none, as the worker asks for none."""
    loaded: dict[str, Any] = orjson.loads(_document(bearer))  # a fresh copy: callers change it
    return loaded


__all__ = [
    "article",
    "cluster",
    "get_article",
    "get_cluster",
    "get_namespaces",
    "namespaces",
    "openapi",
]
