"""The command line imports only what its commands use: ``neardup dedup`` and the admin commands
do not load the worker's stack (faust, aiohttp, aiokafka, the Redis client, Prometheus, the
settings loader), which took 0.5 s of a one-line run's 1.06 s. Checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

WORKER_ONLY = {
    "faust",
    "mode",
    "aiohttp",
    "aiokafka",
    "redis",
    "prometheus_client",
    "pydantic_settings",
}


def _loaded_after(code: str) -> set[str]:
    report = "import json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    script = f"{code}\n{report}"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_cli_with_its_commands_loads_none_of_the_worker_stack() -> None:
    """What ``neardup`` does before it runs a command: the app and every command registered."""
    code = "from neardup.stream.cli import main"
    assert _loaded_after(code) & WORKER_ONLY == set()


def test_the_cli_starts_without_the_read_apis_models() -> None:
    """pydantic (the redis extra's, for ``inspect`` and ``namespaces``) is imported by those
    commands when they run: ``neardup --version`` took 0.48 s with it at start, 0.34 s without."""
    assert "pydantic" not in _loaded_after("from neardup.stream.cli import main")


def test_the_read_lookups_load_none_of_the_web_stack() -> None:
    """The admin commands call neardup.stream.worker.http.read_api's lookups; its views' faust types
    are for type checking only."""
    assert (
        _loaded_after("import neardup.stream.worker.http.read_api")
        & {"faust", "aiohttp", "pydantic_settings"}
        == set()
    )


def test_dedup_into_redis_loads_no_kafka_faust_or_settings() -> None:
    """``dedup --store redis://`` imports the Redis client and index, nothing of the worker's
    Kafka side or settings loader (they were 0.4 s of its start)."""
    code = (
        "import inspect\nfrom neardup.stream.cli import dedup\n"
        "from neardup.stream.index.redis.index import RedisIndex\n"
        "from neardup.stream.index.redis.clients import redis_cluster_client\n"
        "source = inspect.getsource(dedup.open_index)\n"
        "assert 'neardup.stream.index.redis.clients import redis_cluster_client' in source"
    )
    loaded = _loaded_after(code)
    assert "redis" in loaded, "precondition: the Redis path was imported"
    assert loaded & (WORKER_ONLY - {"redis"}) == set()
