"""The worker's HTTP views and the health probes behind them.

* ``POST /check``: originality check with the worker's engine and index. ``register`` (default
  false) says whether the text is indexed too; without it and without an ``id`` the check gets a
  throwaway id. A bearer token (``NEARDUP_CHECK_TOKEN``) guards it when set; bodies over
  ``check_max_body_bytes`` are refused (413) before or while reading, never buffered whole; a
  body is read whole under a deadline (408 past it) before the request may wait for a check.
* ``DELETE /articles/{id}?namespace=NS``: takedown (same bearer token as ``/check``): the
  article leaves the index and a tombstone with its id is published on the verdict topic, known
  or not; answers ``{"deleted": true|false, "id", "namespace"}`` (false: the id was not indexed).
* ``GET /articles/{id}``, ``GET /clusters/{id}``, ``GET /namespaces``, ``GET /openapi.json``:
  the read API (:mod:`neardup.stream.worker.http.read_api`), same bearer token.
* ``GET /health``: 200 when Kafka and Redis are reachable and the index answers, else 503 (a
  Kubernetes readiness probe), with which is away and a ``reason`` (``index unavailable: OOM
  ...`` while batches are retried).
* ``GET /live``: 200 whenever the worker's event loop answers, whatever Kafka and Redis do (a
  Kubernetes liveness probe: restarting cannot bring a dependency back).
* ``GET /metrics``: Prometheus text format.

Without a token the worker serves loopback only (refusing requests that name another host:
:func:`loopback_hosts_only`) or whoever its operator opened it to (``NEARDUP_WEB_OPEN``); a
worker that would be open by default does not start
(:func:`~neardup.stream.worker.config.web_mode`).
"""

from __future__ import annotations

import hmac
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import faust
import orjson
import redis.asyncio as aioredis
from aiohttp import web as aiohttp_web
from faust.web import Request, Response, View

from neardup.stream.engine.engine import Engine
from neardup.stream.errors import InvalidMessage, NeardupError
from neardup.stream.schema import article_from_obj, exact_id
from neardup.stream.worker.checks import CheckProcess
from neardup.stream.worker.clients import safe_url, tcp_reachable
from neardup.stream.worker.config import Settings, is_loopback
from neardup.stream.worker.http import api_models, bodies, read_api
from neardup.stream.worker.http.bodies import BodyBudget
from neardup.stream.worker.metrics import Metrics

log = logging.getLogger("neardup.worker")


class Readiness:
    """Whether Redis and Kafka are reachable: what ``/health`` and ``neardup_ready`` report.

    Probed every few seconds (:meth:`probe`) and told at once when a batch finds the index away
    or back (:meth:`index_available`), so a worker stuck retrying reports not ready.
    """

    def __init__(self, settings: Settings, redis: aioredis.Redis, metrics: Metrics) -> None:
        self._settings = settings
        self._redis = redis
        self._metrics = metrics
        self.ping_ok = False
        self.kafka_ok = False
        self.ping_error: str | None = "not probed yet"
        self.index_error: str | None = None

    @property
    def redis_ok(self) -> bool:
        """Reachable *and* serving: a Redis out of memory still answers PING, so a batch's
        failure counts until a batch succeeds again."""
        return self.ping_ok and self.index_error is None

    @property
    def ready(self) -> bool:
        return self.redis_ok and self.kafka_ok

    @property
    def reason(self) -> str | None:
        """Why not ready, for ``/health`` (None when ready)."""
        if self.index_error is not None:
            return self.index_error
        if not self.ping_ok:
            return f"redis unreachable: {self.ping_error}"
        if not self.kafka_ok:
            return "kafka unreachable"
        return None

    def index_unavailable(self, why: str | None) -> None:
        """Told by the batch handler: why the index is failing, or None once it answers."""
        self.index_error = why
        self._metrics.ready.set(1 if self.ready else 0)

    async def probe(self) -> None:
        try:
            self.ping_ok = bool(await self._redis.ping())
            self.ping_error = None
        except Exception as exc:  # any failure means "not reachable"; the reason is shown
            log.warning("Redis at %s is not reachable", safe_url(self._settings.redis_url))
            self.ping_ok, self.ping_error = False, f"{type(exc).__name__}: {exc}"[:300]
        self.kafka_ok = await tcp_reachable(self._settings.bootstrap_servers())
        self._metrics.ready.set(1 if self.ready else 0)


def authorized(request: Request, settings: Settings) -> bool:
    """The bearer token matches (or none is configured), compared in constant time."""
    token = settings.check_token
    if token is None:
        return True
    # aiohttp decodes header bytes with surrogateescape: encode them back the same way,
    # or a non-UTF-8 header raises here (a 500) instead of being refused.
    got = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
    want = f"Bearer {token.get_secret_value()}".encode()
    return hmac.compare_digest(got, want)


# what a POST /check body may hold: the article's fields and ``register``
CHECK_FIELDS = api_models.CHECK_FIELDS


@aiohttp_web.middleware
async def json_errors(request: aiohttp_web.Request, handler: Any) -> aiohttp_web.StreamResponse:
    """Every answer of the worker's web port is JSON, its errors too: a path it does not serve
    (404) and a method a path does not take (405, with ``Allow``) answer as the views do."""
    try:
        response: aiohttp_web.StreamResponse = await handler(request)
    except aiohttp_web.HTTPException as exc:
        if exc.status not in (404, 405):
            raise
        kind = "not_found" if exc.status == 404 else "method_not_allowed"
        detail = (
            f"no such path: {request.path}"
            if exc.status == 404
            else f"{request.method} is not allowed on {request.path}"
        )
        headers = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return aiohttp_web.json_response(
            {"error": kind, "detail": detail}, status=exc.status, headers=headers
        )
    return response


def host_name(header: str) -> str:
    """The name or address of a ``Host`` header, without its port (``[::1]:6066`` -> ``::1``)."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


def loopback_hosts_only(settings: Settings) -> Any | None:
    """For a worker without a token on loopback: a middleware that refuses a request naming
    another host (403 ``forbidden_host``). A page a browser loaded from elsewhere can make its
    own name resolve to 127.0.0.1 (DNS rebinding) and then call this worker as its own origin;
    its requests still name that other host. Requests without ``Host`` (no browser sends one)
    pass. None for a worker with a token or on another address (opened, or refused at start)."""
    if settings.check_token is not None or not is_loopback(settings.web_host):
        return None

    @aiohttp_web.middleware
    async def loopback_hosts(
        request: aiohttp_web.Request, handler: Any
    ) -> aiohttp_web.StreamResponse:
        header = request.headers.get("Host")
        if header is not None and not is_loopback(host_name(header)):
            detail = (
                f"this worker has no token and answers requests for loopback only, not for "
                f"{header[:100]!r}"
            )
            return aiohttp_web.json_response(
                {"error": "forbidden_host", "detail": detail}, status=403
            )
        response: aiohttp_web.StreamResponse = await handler(request)
        return response

    return loopback_hosts


def unauthorized(view: View) -> Response:
    return view.json({"error": "unauthorized"}, status=401, headers=read_api.CHALLENGE)


def json_body(request: Request) -> bool:
    """Whether the request declares a JSON body (``application/json`` or ``...+json``): a
    browser sends ``text/plain`` and form bodies cross-site without asking first (no CORS
    preflight), JSON it never does."""
    kind = request.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


async def check(
    view: View,
    request: Request,
    settings: Settings,
    engine: Engine,
    checks: CheckProcess | None = None,
    budget: BodyBudget | None = None,
) -> Response:
    """``POST /check``: the verdict of one article, registered or not; in ``checks``' process
    when given (:mod:`neardup.stream.worker.checks`: the stream's loop never waits on a check's
    CPU), where at most ``CHECKS_ADMITTED`` requests wait at once (429 past that, with
    ``Retry-After``). The body is read whole first, under ``NEARDUP_CHECK_BODY_TIMEOUT_S`` and
    ``budget`` (:mod:`neardup.stream.worker.http.bodies`): a slow body never holds a slot."""
    if not authorized(request, settings):
        return unauthorized(view)
    if not json_body(request):
        return view.json(
            {
                "error": "unsupported_media_type",
                "detail": "send the article as JSON, with Content-Type: application/json",
            },
            status=415,
        )
    raw: Any = request  # faust's Request protocol hides aiohttp's streaming body
    length = raw.content_length
    limit = settings.check_max_body_bytes
    if length is not None and length > limit:  # refused before reading anything
        return view.json({"error": "oversize", "limit_bytes": limit}, status=413)
    if budget is None:
        budget = bodies.budget_for(limit)
    got = await bodies.read_body(raw.content, limit, settings.check_body_timeout_s, budget)
    if isinstance(got, bodies.Refusal):
        return _refused(view, got)
    try:
        if checks is None:
            return await _check(view, got, settings, engine, None)
        if not checks.admit():
            busy = {"error": "busy", "detail": "too many checks waiting: try again shortly"}
            return view.json(busy, status=429, headers={"Retry-After": "1"})
        try:
            return await _check(view, got, settings, engine, checks)
        finally:
            checks.leave()
    finally:
        budget.give(len(got))


def _refused(view: View, refusal: bodies.Refusal) -> Response:
    response = view.json(refusal.body, status=refusal.status, headers=refusal.headers or None)
    if refusal.close and hasattr(response, "force_close"):
        response.force_close()  # aiohttp's: no keep-alive after a body left half-sent
    return response


async def _check(
    view: View,
    body: bytes,
    settings: Settings,
    engine: Engine,
    checks: CheckProcess | None,
) -> Response:
    try:
        obj = orjson.loads(body)
        if not isinstance(obj, dict):
            raise InvalidMessage("not_object", "expected a JSON object")
        if isinstance(obj.get("id"), int | float) and not isinstance(obj["id"], bool):
            # a number's id is the exact text it was written as, read from the body
            obj = {**obj, "id": exact_id(obj["id"], "id", body)}
        request_ = api_models.validate(api_models.CheckRequest, obj)
        register = request_.register_
        # the model's id (a number read as its decimal string), or a throwaway one
        obj = {**obj, "id": request_.id or f"check-{uuid.uuid4()}"}
        article = article_from_obj(
            obj,
            default_namespace=settings.namespace,
            max_text_bytes=settings.max_message_bytes,
            read_from=len(body),
        )
    except orjson.JSONDecodeError as exc:
        return view.json({"error": "invalid_json", "detail": str(exc)}, status=400)
    except InvalidMessage as exc:
        return view.json({"error": exc.reason, "detail": str(exc)}, status=400)
    try:
        # a check never teaches boilerplate, registered or not: a request names any source
        if checks is not None:
            result = await checks.check(article, register)
        else:
            (result,) = await engine.process(
                [article], register=register, explain=True, teach=False
            )
    except Exception as exc:  # the index is away: say so, do not crash the view
        log.warning("check failed: %s", exc)
        return view.json({"error": "unavailable", "detail": str(exc)}, status=503)
    if isinstance(result, InvalidMessage):  # a text the engine refuses (nothing to read)
        return view.json({"error": result.reason, "detail": str(result)}, status=400)
    if isinstance(result, NeardupError):
        return view.json({"error": result.reason, "detail": str(result)}, status=409)
    out = result.to_dict()
    out["registered"] = register
    if not register:
        try:
            ns = article.namespace
            known = await (checks or engine).namespace_known(ns)
        except Exception as exc:  # the index went away since: say so
            return view.json({"error": "unavailable", "detail": str(exc)}, status=503)
        out["namespace_known"] = known
        if not known:
            out["note"] = (
                f"nothing is indexed in namespace {article.namespace!r}: "
                "there was nothing to compare with"
            )
    return view.json(out)


Deleter = Callable[[str, str], Awaitable[bool]]


async def delete_article(
    view: View, request: Request, settings: Settings, doc_id: str, deleter: Deleter
) -> Response:
    """``DELETE /articles/{id}?namespace=``: takedown; ``deleter`` also publishes the tombstone."""
    if not authorized(request, settings):
        return unauthorized(view)
    try:
        doc_id = api_models.validate(api_models.ArticlePath, {"doc_id": doc_id}).doc_id
        query = {k: v for k, v in request.query.items() if v != ""}
        ns = api_models.validate(api_models.ArticleQuery, query).namespace or settings.namespace
    except InvalidMessage as exc:
        return view.json({"error": exc.reason, "detail": str(exc)}, status=400)
    try:
        deleted = await deleter(ns, doc_id)
    except Exception as exc:  # the index or the broker is away: say so, do not crash the view
        log.warning("delete failed: %s", exc)
        return view.json({"error": "unavailable", "detail": str(exc)}, status=503)
    return view.json({"deleted": deleted, "id": doc_id, "namespace": ns})


def add_views(
    app: faust.App,
    settings: Settings,
    engine: Engine,
    metrics: Metrics,
    readiness: Readiness,
    deleter: Deleter | None = None,
    checks: CheckProcess | None = None,
) -> None:
    """Serve ``/check``, ``/articles/{id}`` (DELETE), ``/health``, ``/live`` and ``/metrics``."""

    async def index_only(ns: str, doc_id: str) -> bool:
        return await engine.delete(ns, doc_id)

    remove = deleter or index_only
    budget = bodies.budget_for(settings.check_max_body_bytes)  # every /check body at once

    class Check(View):
        async def post(self, request: Request) -> Response:
            started = time.perf_counter()
            response = await check(self, request, settings, engine, checks, budget)
            status = str(getattr(response, "status", 0))
            metrics.check_requests.labels(status).inc()
            metrics.check_seconds.labels(status).observe(time.perf_counter() - started)
            return response

    class Articles(View):
        async def get(self, request: Request, doc_id: str) -> Response:
            ok = authorized(request, settings)
            return await read_api.get_article(self, request, settings, ok, engine.index, doc_id)

        async def delete(self, request: Request, doc_id: str) -> Response:
            return await delete_article(self, request, settings, doc_id, remove)

    class Clusters(View):
        async def get(self, request: Request, doc_id: str) -> Response:
            ok = authorized(request, settings)
            return await read_api.get_cluster(self, request, settings, ok, engine.index, doc_id)

    class Namespaces(View):
        async def get(self, request: Request) -> Response:
            ok = authorized(request, settings)
            return await read_api.get_namespaces(self, ok, engine.index)

    class OpenAPI(View):
        async def get(self, request: Request) -> Response:
            return self.json(read_api.openapi(bearer=settings.check_token is not None))

    class Health(View):
        async def get(self, request: Request) -> Response:
            r = readiness
            body = {"ready": r.ready, "redis": r.redis_ok, "kafka": r.kafka_ok, "reason": r.reason}
            return self.json(body, status=200 if r.ready else 503)

    class Live(View):
        async def get(self, request: Request) -> Response:
            return self.json({"live": True})

    class MetricsView(View):
        async def get(self, request: Request) -> Response:
            return self.bytes(metrics.render(), content_type="text/plain; version=0.0.4")

    app.page("/check")(Check)
    app.page("/articles/{doc_id}")(Articles)
    app.page("/clusters/{doc_id}")(Clusters)
    app.page("/namespaces")(Namespaces)
    app.page("/openapi.json")(OpenAPI)
    app.page("/health")(Health)
    app.page("/live")(Live)
    app.page("/metrics")(MetricsView)


__all__ = [
    "CHECK_FIELDS",
    "Readiness",
    "add_views",
    "authorized",
    "check",
    "delete_article",
    "host_name",
    "json_body",
    "json_errors",
    "loopback_hosts_only",
    "unauthorized",
]
