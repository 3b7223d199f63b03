"""The helm chart's probes against a real worker while Redis is away for longer than the liveness
probe's budget: the kubelet would restart nothing (the liveness path answers 200 every time),
while readiness reports the outage (503) and recovers when Redis is back.

The probes are read from the chart as helm renders it (``deploy/deploy_check.py render``, the
toolchain of tests/deploy), so a change of path, period or threshold in the chart is what this
test exercises.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import services
from harness.corpus import groups_of_copies
from harness.kafka import make_topics, produce
from harness.workers import WorkerProc, start_worker

ROOT = Path(__file__).resolve().parents[3]
HELM_PY = Path(os.environ.get("HELM_VENV", ROOT / ".venv-helm")) / "bin" / "python"
FAST = {"NEARDUP_RETRY_BACKOFF_MAX_S": "1"}  # the batch retries often while Redis is away


def rendered_probes(values: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``readinessProbe`` and ``livenessProbe`` of the worker container, as helm renders the
    chart with its default values and ``values`` over them."""
    if not HELM_PY.exists():
        pytest.fail(
            f"{HELM_PY} not found: install the deployment toolchain with "
            "`bash scripts/validate_deploy.sh --install-only`",
            False,
        )
    proc = subprocess.run(
        [str(HELM_PY), str(ROOT / "deploy" / "deploy_check.py"), "render"]
        + (["--set-json", json.dumps(values)] if values else []),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    docs = json.loads(proc.stdout)["manifests"]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {kind: container[kind] for kind in ("readinessProbe", "livenessProbe")}


def probe(worker: WorkerProc, spec: dict[str, Any]) -> int:
    """One probe as the kubelet sends it: GET the path, within the probe's timeout (0: no
    answer, which the kubelet counts as a failure like any status outside 200-399)."""
    try:
        status, _ = worker.get(spec["httpGet"]["path"], timeout_s=spec["timeoutSeconds"])
    except OSError:
        return 0
    return status


async def until(worker: WorkerProc, spec: dict[str, Any], want: int, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while (got := await asyncio.to_thread(probe, worker, spec)) != want:
        assert time.monotonic() < deadline, f"{spec['httpGet']['path']}: {got}, not {want}"
        await asyncio.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_redis_away_past_the_liveness_budget_restarts_nothing(
    make_redis: Callable[..., services.Service], kafka_bootstrap: str, tmp_path: Path
) -> None:
    defaults = rendered_probes()
    assert (
        defaults["livenessProbe"]["httpGet"]["path"]
        != defaults["readinessProbe"]["httpGet"]["path"]
    ), "liveness must not be readiness"
    # the default budget is four minutes; the same template with a budget of seconds has the
    # same paths and the kubelet's same arithmetic, so the outage below outlasts it in a test
    probes = rendered_probes(
        {
            "probes": {
                "liveness": {"initialDelaySeconds": 4, "periodSeconds": 2, "failureThreshold": 4}
            }
        }
    )
    ready, live = probes["readinessProbe"], probes["livenessProbe"]
    for kind in probes:
        assert probes[kind]["httpGet"] == defaults[kind]["httpGet"], kind
    # the kubelet restarts a container after failureThreshold failed probes in a row, once
    # initialDelaySeconds have passed: an outage longer than all of that would restart it
    budget_s = live["initialDelaySeconds"] + live["failureThreshold"] * live["periodSeconds"]
    outage_s = budget_s + 2 * live["periodSeconds"]

    store = make_redis(aof=True)
    topics = await make_topics(kafka_bootstrap)
    ns = f"probes-{uuid.uuid4().hex[:6]}"
    docs = [
        {**a, "id": f"{ns}-{a['id']}", "namespace": ns}
        for group in groups_of_copies(20, 3, 7)
        for a in group
    ]
    items = [(d["id"].encode(), json.dumps(d).encode(), None) for d in docs]
    worker = start_worker(topics, store.url, tmp_path, f"g-{ns}", **FAST)
    try:
        await asyncio.to_thread(worker.wait_ready, 60)
        assert await asyncio.to_thread(probe, worker, live) == 200
        store.stop()
        await until(worker, ready, 503, 15)
        # articles keep arriving: the worker retries its batch against the missing index
        await produce(topics.bootstrap, topics.input, items)
        answers: dict[str, list[int]] = {"live": [], "ready": []}
        started = time.monotonic()
        while time.monotonic() - started < outage_s:
            answers["live"].append(await asyncio.to_thread(probe, worker, live))
            answers["ready"].append(await asyncio.to_thread(probe, worker, ready))
            await asyncio.sleep(1.0)  # more often than the kubelet asks (periodSeconds)
        assert worker.proc.poll() is None, worker.log.read_text(errors="replace")[-3000:]
        failed = [s for s in answers["live"] if s != 200]
        assert not failed, f"liveness failed {len(failed)} of {len(answers['live'])}: {failed}"
        assert len(answers["live"]) >= outage_s / 2, "too few probes to cover the outage"
        assert set(answers["ready"]) == {503}, answers["ready"]
        retried = worker.metrics().get("neardup_index_retries_total", 0.0)
        assert retried > 0, "the outage was felt by the stream (its batch was retried)"

        await asyncio.to_thread(store.start)
        await until(worker, ready, 200, 30)
        assert await asyncio.to_thread(probe, worker, live) == 200
    finally:
        worker.stop()
