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


def test_an_unreachable_store_is_one_clear_line_naming_where_and_what_to_check(
    tmp_path: Path,
) -> None:
    """Every command that opens the index, pointed at a port nothing listens on (through
    NEARDUP_REDIS_URL, with a password in it): status 1, no traceback, the password never
    printed, and the last line says where it could not reach and which setting to check;
    while it waits it says so once, each message on one line whatever the terminal width."""
    import os
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    articles = tmp_path / "in.jsonl"
    articles.write_text('{"id": "a", "text": "' + STORY + '"}\n')
    env = {**os.environ, "NEARDUP_REDIS_URL": f"redis://u:s3cr3t@127.0.0.1:{port}/0"}
    env["COLUMNS"] = "60"  # a narrow terminal: rich would cut a long message into lines
    commands = {
        "namespaces": ["namespaces"],
        "export": ["export", "news"],
        "inspect": ["inspect", "a"],
        "delete": ["delete", "a", "--store", env["NEARDUP_REDIS_URL"]],
        "dedup": ["dedup", str(articles), "--store", env["NEARDUP_REDIS_URL"]],
    }
    running = {
        name: subprocess.Popen(
            [str(NEARDUP), *args],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name, args in commands.items()
    }
    for name, proc in running.items():
        _, err = proc.communicate(timeout=120)
        lines = err.splitlines()
        assert proc.returncode == 1, (name, err)
        assert "Traceback" not in err and "s3cr3t" not in err, (name, err)
        assert lines[-1].startswith(f"neardup {name}: cannot reach Redis at 127.0.0.1:{port} ")
        assert lines[-1].endswith("check --store or NEARDUP_REDIS_URL"), (name, err)
        assert all(line.startswith(("neardup ", "index unavailable (")) for line in lines), err
        assert sum(line.startswith("index unavailable") for line in lines) == 1, (name, err)
