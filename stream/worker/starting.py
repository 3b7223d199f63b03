"""The worker's web port while it starts: ``/health`` answers 503 with the reason, ``/live`` 200.

Before faust serves the port (its web server starts with the app), the worker waits for the
broker: a Kubernetes readiness probe would meet a refused connection instead of the documented
503 and a reason. This small server holds the port meanwhile and is closed just before faust
binds it; every path answers JSON. Waiting is being alive: a liveness probe that failed here
would restart a worker that waits for a broker in an outage, which brings the broker no sooner.
"""

from __future__ import annotations

import logging
from types import TracebackType

from aiohttp import web

log = logging.getLogger("neardup.worker")


class StartingHealth:
    """``async with StartingHealth(host, port) as health: ...``; set ``health.reason``."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reason = "starting"
        self._runner: web.AppRunner | None = None

    async def _health(self, request: web.Request) -> web.Response:
        body = {"ready": False, "redis": False, "kafka": False, "reason": self.reason}
        return web.json_response(body, status=503)

    async def _live(self, request: web.Request) -> web.Response:
        return web.json_response({"live": True})

    async def _other(self, request: web.Request) -> web.Response:
        return web.json_response({"error": "starting", "detail": self.reason}, status=503)

    async def __aenter__(self) -> StartingHealth:
        app = web.Application()
        app.router.add_get("/health", self._health)
        app.router.add_get("/live", self._live)
        app.router.add_route("*", "/{tail:.*}", self._other)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
        except OSError as exc:  # the port is taken: faust will say so when it binds it
            log.warning(
                "cannot serve /health on %s:%s while starting: %s", self.host, self.port, exc
            )
            await runner.cleanup()
            return self
        self._runner = runner
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


__all__ = ["StartingHealth"]
