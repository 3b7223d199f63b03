"""neardup on a real Redis Cluster (three primaries, three replicas; :mod:`harness.redis_cluster`).

Namespaces on different primaries get the memory store's verdicts; a primary killed mid-stream
(its replica promoted) and a busy namespace's slot moved mid-stream cost retries, not verdicts;
the function library is on every primary and comes back after it is lost; a call that does not
declare a shard key is refused before it writes; ``neardup delete --redis-cluster`` deletes.
The tests share one cluster and run in file order (the failover one restarts the killed node).
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import orjson
import pytest
import redis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from harness import golden
from harness.redis_cluster import RedisCluster6
from stream import keys
from stream.errors import IndexUnavailableError
from stream.index.base import NO_WINDOW, Registration
from stream.index.redis import RedisIndex

# One namespace per primary of a freshly created cluster (slots 0-5460, 5461-10922, 10923-16383).
NAMESPACES = ("news", "forum", "wiki")
CLI = [sys.executable, "-m", "stream.cli", "dedup", "--no-progress"]


def _split_corpus(path: Path, prefix: str = "") -> list[bytes]:
    """The golden corpus with its lines dealt round-robin to the namespaces (ids prefixed, so
    several tests can write the same namespaces)."""
    with gzip.open(golden.inputs()["corpus"], "rb") as fh:
        objs = [orjson.loads(line) for line in fh.read().splitlines() if line.strip()]
    lines = []
    for i, obj in enumerate(objs):
        obj["namespace"] = NAMESPACES[i % len(NAMESPACES)]
        obj["id"] = prefix + obj["id"]
        lines.append(orjson.dumps(obj))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return lines


def _verdicts(path: Path) -> dict[tuple[str, str], dict[str, object]]:
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return {(r["namespace"], r["id"]): r for r in rows}


def _decision(v: dict[str, object]) -> tuple[object, ...]:
    return (v["verdict"], v["duplicate_of"], v["cluster"], v["similarity"])


def _flush(cluster: RedisCluster6) -> None:
    for port in cluster.primaries():
        with redis.Redis(port=port) as client:
            client.flushall()


def _memory_verdicts(src: Path, tmp: Path) -> dict[tuple[str, str], dict[str, object]]:
    out = tmp / "memory.jsonl"
    subprocess.run([*CLI, str(src), "-o", str(out)], check=True, capture_output=True)
    return _verdicts(out)


def test_namespaces_spread_over_all_primaries_with_memory_verdicts(
    redis_cluster: RedisCluster6, tmp_path: Path
) -> None:
    _flush(redis_cluster)
    owners = {
        ns: redis_cluster.primary_of_slot(key_slot(keys.meta(ns).encode())) for ns in NAMESPACES
    }
    assert len(set(owners.values())) == 3, owners
    src = tmp_path / "split.jsonl"
    _split_corpus(src)
    want = _memory_verdicts(src, tmp_path)
    out = tmp_path / "cluster.jsonl"
    cmd = [*CLI, str(src), "-o", str(out), "--store", redis_cluster.url, "--redis-cluster"]
    subprocess.run(cmd, check=True, capture_output=True)
    got = _verdicts(out)
    assert got.keys() == want.keys()
    assert {k: _decision(v) for k, v in got.items()} == {k: _decision(v) for k, v in want.items()}
    for ns in NAMESPACES:  # every primary holds its namespace and decided copies in it
        with redis.Redis(port=owners[ns]) as client:
            assert client.hlen(keys.docs(ns)) == sum(1 for k in want if k[0] == ns)
        assert any(v["verdict"] != "original" for k, v in want.items() if k[0] == ns)


def _wait_registered(seed: int, total: int) -> None:
    """Until the cluster holds ``total`` records of this run (the CLI then waits on stdin)."""
    deadline = time.monotonic() + 60
    with redis.RedisCluster(host="127.0.0.1", port=seed) as client:
        while time.monotonic() < deadline:
            held = sum(int(client.hlen(keys.docs(ns))) for ns in NAMESPACES)
            if held >= total:
                return
            time.sleep(0.05)
    pytest.fail(f"the CLI did not register {total} articles")


def test_primary_killed_mid_stream_every_article_gets_a_verdict(
    redis_cluster: RedisCluster6, tmp_path: Path
) -> None:
    _flush(redis_cluster)
    src = tmp_path / "split.jsonl"
    lines = _split_corpus(src)
    want = _memory_verdicts(src, tmp_path)
    seed = redis_cluster.live_ports()[0]
    victim = redis_cluster.primary_of_slot(key_slot(keys.meta("forum").encode()))
    if victim == seed:
        seed = next(p for p in redis_cluster.live_ports() if p != victim)
    out, log = tmp_path / "cluster.jsonl", tmp_path / "stderr.txt"
    cmd = [*CLI, "-", "-o", str(out), "--store", f"redis://127.0.0.1:{seed}/0", "--redis-cluster"]
    first = 3 * 512  # three whole batches of the CLI, decided before the primary dies
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=err)
        assert proc.stdin is not None
        try:
            proc.stdin.write(b"\n".join(lines[:first]) + b"\n")
            proc.stdin.flush()
            _wait_registered(seed, first)
            # (asynchronous replication: let the replica have every acknowledged write, else
            # the failover may lose some, which the README states)
            while not redis_cluster.replicas_caught_up(victim):
                time.sleep(0.01)
            redis_cluster.kill(victim)
            proc.stdin.write(b"\n".join(lines[first:]) + b"\n")
            proc.stdin.close()
            assert proc.wait(timeout=150) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            node = next(n for n in redis_cluster.nodes if n.port == victim)
            if not node.is_running():
                node.start()  # rejoins as a replica of the promoted one
                redis_cluster.wait_ok()
    assert "retrying" in log.read_text()  # the slot was down for a while: retried, no exit
    assert victim not in redis_cluster.primaries()
    got = _verdicts(out)
    assert got.keys() == want.keys()  # every article has a verdict
    originals: dict[tuple[str, object], int] = defaultdict(int)
    for (ns, _), v in got.items():
        if v["verdict"] == "original":
            originals[(ns, v["cluster"])] += 1
    assert max(originals.values()) == 1  # no group of copies has two originals
    assert {k: _decision(v) for k, v in got.items()} == {k: _decision(v) for k, v in want.items()}


@pytest.fixture
async def cluster_client(redis_cluster: RedisCluster6) -> AsyncIterator[RedisCluster]:
    """A cluster client on a flushed cluster, closed after the test."""
    _flush(redis_cluster)
    client = RedisCluster.from_url(redis_cluster.url)
    try:
        yield client
    finally:
        await client.aclose()


def _reg(doc_id: str, content: bytes, buckets: tuple[int, ...]) -> Registration:
    return Registration(doc_id=doc_id, content=content, at=1.0, record=b"r", buckets=buckets)


async def test_library_is_on_every_primary_and_reloaded_when_lost(
    redis_cluster: RedisCluster6, cluster_client: RedisCluster
) -> None:
    client = cluster_client
    index = RedisIndex(client)
    await index.load_functions()
    for port in redis_cluster.primaries():
        with redis.Redis(port=port) as node:
            libs = [dict(zip(x[::2], x[1::2], strict=True)) for x in node.function_list()]
            assert [lib[b"library_name"] for lib in libs] == [b"neardup"]
            node.function_flush()  # every primary loses it (a new or restarted node)
    regs = [_reg(f"d{ns}", bytes(16), (1, 2**63)) for ns in NAMESPACES]
    with pytest.raises(IndexUnavailableError, match="function"):
        await index.register(NAMESPACES[0], regs[:1], 16)
    for ns, reg in zip(NAMESPACES, regs, strict=True):  # reloaded everywhere, then served
        (probe,) = await index.register(ns, [reg], 16)
        assert probe.seq == 1 and probe.status == "new"


async def test_a_call_that_does_not_declare_a_shard_key_writes_nothing(
    redis_cluster: RedisCluster6, cluster_client: RedisCluster
) -> None:
    client = cluster_client
    index = RedisIndex(client)
    await index.load_functions()
    ns = "news"
    regs = [_reg("a", b"\x01" * 16, (5, 2**63 + 7))]
    (call,) = index._register_calls(ns, regs, 16, NO_WINDOW)
    nks = call[2]
    assert call[3 : 3 + nks] == [
        *RedisIndex._ns_keys(ns),
        *keys.shard_keys(ns, [regs[0].content], [regs[0].buckets], 16),
    ]
    missing_one = [*call[:2], nks - 1, *call[3 : 2 + nks], *call[3 + nks :]]
    with pytest.raises(redis.ResponseError, match="not declared"):
        await client.execute_command(*missing_one)
    assert await client.hlen(keys.ids(ns)) == 0
    assert await client.exists(keys.meta(ns)) == 0
    assert await client.keys(f"{keys.base(ns)}*") == []  # nothing written, no shard either


def _feed(stdin: IO[bytes], lines: list[bytes]) -> None:
    stdin.write(b"\n".join(lines) + b"\n")
    stdin.close()


def _consistent(port: int, ns: str) -> None:
    """Every seq in a bucket or content shard of the namespace has its record."""
    with redis.Redis(port=port) as client:
        docs = set(client.hkeys(keys.docs(ns)))
        shards = [
            k
            for k in client.keys(f"{keys.base(ns)}*")
            if k[len(keys.base(ns)) :][:2] in (b"b:", b"x:")
        ]
        assert shards
        for shard in shards:
            for packed in client.hvals(shard):
                seqs = {packed[i : i + 8] for i in range(0, len(packed), 8)}
                assert seqs <= docs, shard


def test_slot_of_a_busy_namespace_resharded_mid_stream(
    redis_cluster: RedisCluster6, tmp_path: Path
) -> None:
    _flush(redis_cluster)
    src = tmp_path / "split.jsonl"
    lines = _split_corpus(src)
    want = _memory_verdicts(src, tmp_path)
    slot = key_slot(keys.meta("forum").encode())
    owner = redis_cluster.primary_of_slot(slot)
    target = next(p for p in redis_cluster.primaries() if p != owner)
    seed = redis_cluster.live_ports()[0]
    out, log = tmp_path / "cluster.jsonl", tmp_path / "stderr.txt"
    cmd = [*CLI, "-", "-o", str(out), "--store", f"redis://127.0.0.1:{seed}/0", "--redis-cluster"]
    first = 3 * 512
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=err)
        assert proc.stdin is not None
        try:
            proc.stdin.write(b"\n".join(lines[:first]) + b"\n")
            proc.stdin.flush()
            _wait_registered(seed, first)
            # half the namespace's keys moved: its calls meet a slot split over two primaries
            redis_cluster.begin_move(slot, target)
            with redis.Redis(port=owner) as client:
                held = int(client.execute_command("CLUSTER COUNTKEYSINSLOT", slot))
            assert redis_cluster.migrate_keys(slot, target, held // 2) == held // 2
            # (from a thread: the CLI reads no more while it retries, and the pipe is small)
            feeder = threading.Thread(target=_feed, args=(proc.stdin, lines[first:]))
            feeder.start()
            deadline = time.monotonic() + 60
            while "retrying" not in log.read_text() and proc.poll() is None:
                assert time.monotonic() < deadline, "the CLI neither retried nor finished"
                time.sleep(0.05)
            redis_cluster.finish_move(slot, target)
            assert proc.wait(timeout=150) == 0, log.read_text()
            feeder.join()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert redis_cluster.primary_of_slot(slot) == target
    got = _verdicts(out)
    assert got.keys() == want.keys()
    assert {k: _decision(v) for k, v in got.items()} == {k: _decision(v) for k, v in want.items()}
    _consistent(target, "forum")


def test_delete_on_a_cluster(redis_cluster: RedisCluster6, tmp_path: Path) -> None:
    _flush(redis_cluster)
    src = tmp_path / "in.jsonl"
    texts = ["the first story about rivers and boats", "another story on mountains and snow"]
    src.write_bytes(
        b"".join(orjson.dumps({"id": f"a{i}", "text": t}) + b"\n" for i, t in enumerate(texts))
    )
    store = ["--store", redis_cluster.url, "--redis-cluster", "--namespace", "wiki"]
    subprocess.run([*CLI, str(src), "-o", str(tmp_path / "out.jsonl"), *store], check=True)
    owner = redis_cluster.primary_of_slot(key_slot(keys.meta("wiki").encode()))
    with redis.Redis(port=owner) as client:
        assert client.hlen(keys.docs("wiki")) == 2
        done = subprocess.run(
            [sys.executable, "-m", "stream.cli", "delete", "a0", *store], capture_output=True
        )
        assert done.returncode == 0, done.stderr
        assert client.hlen(keys.docs("wiki")) == 1 and client.hget(keys.ids("wiki"), "a0") is None
