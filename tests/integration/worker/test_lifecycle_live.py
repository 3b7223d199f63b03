"""The lifecycle checker (harness/lifecycle.py) against a real worker on Apache Kafka and Redis:
takedowns by ``neardup delete --kafka-bootstrap``, ``DELETE /articles/{id}`` and input-topic
tombstones, ``neardup export`` and ``neardup reindex`` (from a file and from the topic) while
articles keep arriving, judged through ``GET /articles/{id}``. More seeds: ``make chaos``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from harness import lifecycle, lifecycle_live

SEEDS = (3, 5)
STEPS = 30


async def test_a_namespaces_life_on_a_real_worker(
    kafka_broker: str, redis_url: str, tmp_path: Path
) -> None:
    """Each seed keeps every takedown, every article and one original per story; together
    they take every delete path and rebuild from an export and from the topic."""
    took: Counter[str] = Counter()
    for seed in SEEDS:
        bad, calls = await lifecycle_live.run_seed(seed, STEPS, kafka_broker, redis_url, tmp_path)
        assert bad == [], f"seed {seed}:\n" + "\n".join(bad)
        took += calls
    wanted = {f"delete by {p}" for p in lifecycle.DELETE_PATHS}
    wanted |= {"rebuild from an export", "rebuild from the topic"}
    assert wanted <= took.keys(), took
