"""Prometheus metrics of a worker, in a registry of its own (several apps can share a process)."""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.articles_in = Counter("neardup_articles_in", "messages consumed", registry=r)
        self.verdicts = Counter(
            "neardup_verdicts", "verdicts published, by kind", ["verdict"], registry=r
        )
        self.dead_letters = Counter(
            "neardup_dead_letters", "messages sent to the dead-letter topic", ["reason"], registry=r
        )
        self.batch_seconds = Histogram(
            "neardup_batch_seconds",
            "time to decide and publish one batch",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.redis_round_trips = Counter(
            "neardup_redis_round_trips", "pipelined calls to the index", registry=r
        )
        self.candidates = Histogram(
            "neardup_candidates_per_article",
            "candidates read from buckets per article",
            buckets=(0, 1, 2, 5, 10, 20, 50, 100, 250, 1000),
            registry=r,
        )
        self.retries = Counter(
            "neardup_index_retries", "batches retried because the index was away", registry=r
        )
        self.skipped = Counter(
            "neardup_skipped",
            "messages that publish nothing by design (replays of deleted articles), by reason",
            ["reason"],
            registry=r,
        )
        self.deletes = Counter(
            "neardup_deletes",
            "deletions (tombstones, DELETE /articles), by whether the id was indexed",
            ["result"],
            registry=r,
        )
        self.oversize_records = Counter(
            "neardup_oversize_records",
            "verdicts or dead letters the broker refused as too large (replaced or dropped)",
            registry=r,
        )
        self.ready = Gauge("neardup_ready", "1 when Kafka and Redis are reachable", registry=r)
        self.check_requests = Counter(
            "neardup_check_requests", "POST /check requests, by HTTP status", ["status"], registry=r
        )
        self.check_seconds = Histogram(
            "neardup_check_seconds",
            "time to answer POST /check, by HTTP status",
            ["status"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        # the process's CPU, memory and open files, and the interpreter's collections, as
        # prometheus_client reads them (process_* and python_* series)
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)


__all__ = [
    "Metrics",
]
