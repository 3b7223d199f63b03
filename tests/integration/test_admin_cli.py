"""``neardup namespaces`` and ``neardup inspect`` as users run them, on a real Redis: the index
a ``neardup dedup --store`` run left, read back as a table, as JSON, and with clear exits."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from redis.asyncio import Redis

NEARDUP = Path(sys.executable).parent / "neardup"
STORY = " ".join(f"w{i}" for i in range(120))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NEARDUP), *args], capture_output=True, text=True, timeout=120)


async def test_namespaces_and_inspect_read_what_dedup_indexed(
    redis_client: Redis, redis_url: str, tmp_path: Path
) -> None:
    ns = f"admin-{uuid.uuid4().hex[:6]}"
    lines = [
        {"id": "a", "text": STORY},
        {"id": "b", "text": STORY + " with a tail"},
        {"id": "o", "text": " ".join(f"z{i}" for i in range(120))},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    done = _run("dedup", str(src), "--store", redis_url, "--namespace", ns, "--no-progress")
    assert done.returncode == 0, done.stderr

    got = _run("namespaces", "--store", redis_url, "--json")
    assert got.returncode == 0, got.stderr
    row = next(r for r in json.loads(got.stdout)["namespaces"] if r["namespace"] == ns)
    assert (row["documents"], row["copies"], row["clusters"]) == (3, 1, 2)
    table = _run("namespaces", "--store", redis_url)
    assert table.returncode == 0 and ns in table.stdout and "estimated" in table.stdout

    got = _run("inspect", "b", "--store", redis_url, "--namespace", ns, "--json")
    assert got.returncode == 0, got.stderr
    b = json.loads(got.stdout)
    assert (b["seq"], b["cluster"], b["verdict"]["duplicate_of"], b["cluster_size"]) == (
        2,
        "a",
        "a",
        2,
    )
    assert b["record"]["kind"] == "long" and b["text"] == STORY + " with a tail"
    shown = _run("inspect", "b", "--store", redis_url, "--namespace", ns)
    assert shown.returncode == 0 and "near_duplicate" in shown.stdout

    missing = _run("inspect", "nope", "--store", redis_url, "--namespace", ns)
    assert missing.returncode == 2 and "not indexed: nope" in missing.stderr
    bad = _run("inspect", "a", "--store", redis_url, "--namespace", "no spaces")
    assert bad.returncode == 2 and "namespace must match" in bad.stderr
    away = _run("namespaces", "--store", "redis://127.0.0.1:1/0")
    assert away.returncode == 1 and "neardup namespaces:" in away.stderr
