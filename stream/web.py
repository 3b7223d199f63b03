"""The worker's HTTP views and the health probes behind them.

* ``POST /check``: originality check with the worker's engine and index. ``register`` (default
  false) says whether the text is indexed too; without it and without an ``id`` the check gets a
  throwaway id. A bearer token (``NEARDUP_CHECK_TOKEN``) guards it when set; bodies over
  ``check_max_body_bytes`` are refused (413) before or while reading, never buffered whole.
* ``GET /health``: 200 when Kafka and Redis are reachable, else 503 (a Kubernetes readiness
  probe), with which of the two is away.
* ``GET /metrics``: Prometheus text format.
"""

from __future__ import annotations

import hmac
import logging
import uuid
from typing import Any

import faust
import orjson
import redis.asyncio as aioredis
from faust.web import Request, Response, View

from stream.clients import safe_url, tcp_reachable
from stream.config import Settings
from stream.engine import Engine
from stream.errors import InvalidMessage, NeardupError
from stream.metrics import Metrics
from stream.schema import article_from_obj

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
        self.redis_ok = False
        self.kafka_ok = False

    @property
    def ready(self) -> bool:
        return self.redis_ok and self.kafka_ok

    def index_available(self, ok: bool) -> None:
        self.redis_ok = ok
        self._metrics.ready.set(1 if self.ready else 0)

    async def probe(self) -> None:
        try:
            self.redis_ok = bool(await self._redis.ping())
        except Exception:  # any failure means "not reachable"; the reason is logged
            log.warning("Redis at %s is not reachable", safe_url(self._settings.redis_url))
            self.redis_ok = False
        self.kafka_ok = await tcp_reachable(self._settings.bootstrap_servers())
        self._metrics.ready.set(1 if self.ready else 0)


async def check(view: View, request: Request, settings: Settings, engine: Engine) -> Response:
    """``POST /check``: the verdict of one article, registered or not."""
    token = settings.check_token
    if token is not None:
        # aiohttp decodes header bytes with surrogateescape: encode them back the same way,
        # or a non-UTF-8 header raises here (a 500) instead of being refused.
        got = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
        want = f"Bearer {token.get_secret_value()}".encode()
        if not hmac.compare_digest(got, want):
            return view.json({"error": "unauthorized"}, status=401)
    raw: Any = request  # faust's Request protocol hides aiohttp's streaming body
    length = raw.content_length
    limit = settings.check_max_body_bytes
    if length is not None and length > limit:  # refused before reading anything
        return view.json({"error": "oversize", "limit_bytes": limit}, status=413)
    # StreamReader.read(n) returns what has arrived so far, not n bytes: read to the end of
    # the body (chunked bodies have no Content-Length), never more than limit + 1 bytes.
    body = bytearray()
    while len(body) <= limit:
        chunk = await raw.content.read(limit + 1 - len(body))
        if not chunk:
            break
        body += chunk
    if len(body) > limit:
        return view.json({"error": "oversize", "limit_bytes": limit}, status=413)
    try:
        obj = orjson.loads(body)
        if not isinstance(obj, dict):
            raise InvalidMessage("not_object", "expected a JSON object")
        register = obj.get("register", False)
        if not isinstance(register, bool):
            raise InvalidMessage("invalid_field", "register must be true or false")
        if "id" not in obj and not register:
            obj = {**obj, "id": f"check-{uuid.uuid4()}"}
        article = article_from_obj(
            obj,
            default_namespace=settings.namespace,
            max_text_bytes=settings.max_message_bytes,
        )
    except orjson.JSONDecodeError as exc:
        return view.json({"error": "invalid_json", "detail": str(exc)}, status=400)
    except InvalidMessage as exc:
        return view.json({"error": exc.reason, "detail": str(exc)}, status=400)
    try:
        (result,) = await engine.process([article], register=register)
    except Exception as exc:  # the index is away: say so, do not crash the view
        log.warning("check failed: %s", exc)
        return view.json({"error": "unavailable", "detail": str(exc)}, status=503)
    if isinstance(result, NeardupError):
        return view.json({"error": result.reason, "detail": str(result)}, status=409)
    out = result.to_dict()
    out["registered"] = register
    return view.json(out)


def add_views(
    app: faust.App, settings: Settings, engine: Engine, metrics: Metrics, readiness: Readiness
) -> None:
    """Serve ``/check``, ``/health`` and ``/metrics`` on the app's web server."""

    class Check(View):
        async def post(self, request: Request) -> Response:
            return await check(self, request, settings, engine)

    class Health(View):
        async def get(self, request: Request) -> Response:
            r = readiness
            body = {"ready": r.ready, "redis": r.redis_ok, "kafka": r.kafka_ok}
            return self.json(body, status=200 if r.ready else 503)

    class MetricsView(View):
        async def get(self, request: Request) -> Response:
            return self.bytes(metrics.render(), content_type="text/plain; version=0.0.4")

    app.page("/check")(Check)
    app.page("/health")(Health)
    app.page("/metrics")(MetricsView)


__all__ = ["Readiness", "add_views", "check"]
