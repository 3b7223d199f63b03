"""``neardup worker``: run a streaming worker (faust), configured by ``NEARDUP_*`` environment
variables. Everything of the worker's stack (faust, aiokafka, the settings loader) is imported
inside the command, so the other commands start without it: it comes with the ``stream`` extra.

Exit status: 2 without the ``stream`` extra (one line says how to install it), for an invalid
setting (each named on stderr), or for a worker that would serve
its takedowns, read API and ``/check`` to anyone (no ``NEARDUP_CHECK_TOKEN``, an address other
than loopback and no ``NEARDUP_WEB_OPEN=true``: one line on stderr says so); otherwise the
worker runs until it is stopped.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Annotated, Any

import typer

from neardup.stream.backoff import backoff
from neardup.stream.cli.common import err, require_extra


def worker(
    create_topics: Annotated[
        bool, typer.Option(help="create missing input/verdict/DLQ topics at start")
    ] = True,
) -> None:
    """Run a streaming worker (faust); configured by NEARDUP_* environment variables."""
    require_extra("neardup worker", "stream")
    import logging

    from pydantic import ValidationError

    from neardup.stream.worker.config import (
        ClosedWebError,
        Settings,
        unknown_variables,
        web_mode_line,
    )

    try:
        settings = Settings()
    except ValidationError as exc:
        for e in exc.errors():
            name = "NEARDUP_" + "_".join(str(p) for p in e["loc"]).upper()
            err.print(f"invalid setting {name or 'NEARDUP_*'}: {e['msg']}", markup=False)
        raise typer.Exit(2) from None
    try:
        mode_line = web_mode_line(settings)
    except ClosedWebError as exc:  # closed unless opened: never serve writes to anyone
        err.print(f"refusing to start: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    from neardup.stream.worker import logs

    log_config = logs.setup(settings.log_level, settings.log_format)
    log = logging.getLogger("neardup.worker")
    for line in unknown_variables(os.environ):
        log.warning("%s", line)
    log.info("%s", mode_line)
    import faust

    from neardup.stream.worker.app import Worker
    from neardup.stream.worker.clients import broker_answers, ensure_topics
    from neardup.stream.worker.starting import StartingHealth

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    async def wait_for_kafka() -> None:
        # /health answers (503, with the reason) while the worker waits, as it will after
        async with StartingHealth(settings.web_host, settings.web_port) as health:
            health.reason = f"waiting for Kafka at {settings.kafka_bootstrap}"

            def note(exc: Exception) -> None:
                health.reason = f"waiting for Kafka at {settings.kafka_bootstrap}: {exc}"

            if create_topics:
                await _with_retry(
                    lambda: ensure_topics(settings), "Kafka", on_error=note, say=log.warning
                )
            else:  # started while the broker is away (its restart, a rollout): wait
                await _with_retry(
                    lambda: broker_answers(settings), "Kafka", on_error=note, say=log.warning
                )

    loop.run_until_complete(wait_for_kafka())
    service = Worker(settings)
    runner = faust.Worker(
        service.app, loop=loop, loglevel=settings.log_level, logging_config=log_config
    )
    runner.spinner = None  # its log handler would set the root logger to DEBUG
    runner.execute_from_commandline()


async def _with_retry(
    make: Any,
    what: str,
    attempts: int = 30,
    on_error: Callable[[Exception], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> None:
    delays = backoff(0.5, 5.0)
    for attempt in range(1, attempts + 1):
        try:
            await make()
            return
        except Exception as exc:  # unreachable broker: say why, wait, try again
            if on_error is not None:
                on_error(exc)
            if attempt == attempts:
                raise
            delay = next(delays)
            message = f"waiting for {what}: {exc} (retry in {delay:.1f}s)"
            if say is not None:  # the worker: a log line, with its time and level
                say(message)
            else:
                err.print(message, markup=False, soft_wrap=True)
            await asyncio.sleep(delay)


__all__ = ["worker"]
