"""Redis clients for the command line and the worker alike, without the worker's stack: the
``dedup --store redis://`` path builds its client here and so never imports faust, aiokafka or
the settings loader (:mod:`neardup.stream.worker.clients` holds what needs them)."""

from __future__ import annotations

from typing import Any

from redis.asyncio.cluster import RedisCluster


def redis_cluster_client(url: str, **kwargs: Any) -> RedisCluster:
    """A cluster client from any node's URL. Its own retries follow MOVED/ASK and re-read the
    slot map; what still fails (a slot without a primary for now) is left to the caller's
    backoff, so a failover does not stall one call for long."""
    if url.startswith("unix://"):
        raise ValueError("a Redis Cluster is reached over TCP: use a redis:// or rediss:// URL")
    return RedisCluster.from_url(url, **kwargs)


__all__ = ["redis_cluster_client"]
