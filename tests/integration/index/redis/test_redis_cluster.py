"""neardup on a real Redis Cluster (three primaries, three replicas; :mod:`harness.redis_cluster`).

Namespaces on different primaries get the memory store's verdicts, and so do sharded namespaces
whose buckets are on all three; a primary killed mid-stream
(its replica promoted) and a busy namespace's slot moved mid-stream cost retries, not verdicts;
the function library is on every primary and comes back after it is lost; a call that does not
declare a shard key is refused before it writes; ``neardup delete --redis-cluster`` deletes.
The tests share one cluster and run in file order (the failover one restarts the killed node).
"""

from __future__ import annotations

import contextlib
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
from neardup.stream.errors import IndexUnavailableError
from neardup.stream.index.base import NO_WINDOW, Registration
from neardup.stream.index.redis import keys
from neardup.stream.index.redis.index import RedisIndex

# One namespace per primary of a freshly created cluster (slots 0-5460, 5461-10922, 10923-16383).
NAMESPACES = ("news", "forum", "wiki")
CLI = [sys.executable, "-m", "neardup.stream.cli.main", "dedup", "--no-progress"]
Verdicts = dict[tuple[str, str], dict[str, object]]  # (namespace, id) -> verdict


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


def _verdicts(path: Path) -> Verdicts:
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return {(r["namespace"], r["id"]): r for r in rows}


def _decision(v: dict[str, object]) -> tuple[object, ...]:
    return (v["verdict"], v["duplicate_of"], v["cluster"], v["similarity"])


def _flush(cluster: RedisCluster6) -> None:
    for port in cluster.primaries():
        with redis.Redis(port=port) as client:
            client.flushall()


def _assert_memory_verdicts(got: Verdicts, want: Verdicts) -> None:
    """The memory store's decisions, and no group of copies with two originals."""
    originals: dict[tuple[str, object], int] = defaultdict(int)
    for (ns, _), v in got.items():
        if v["verdict"] == "original":
            originals[(ns, v["cluster"])] += 1
    assert max(originals.values()) == 1
    assert {k: _decision(v) for k, v in got.items()} == {k: _decision(v) for k, v in want.items()}


def _memory_verdicts(src: Path, tmp: Path) -> Verdicts:
    out = tmp / "memory.jsonl"
    subprocess.run([*CLI, str(src), "-o", str(out)], check=True, capture_output=True)
    return _verdicts(out)


def _prepared(
    cluster: RedisCluster6, tmp: Path, prefix: str = ""
) -> tuple[Path, list[bytes], Verdicts]:
    """A flushed cluster, the split corpus in ``tmp/split.jsonl`` (its lines) and the memory
    store's verdicts on it: what each streaming test starts from."""
    _flush(cluster)
    src = tmp / "split.jsonl"
    lines = _split_corpus(src, prefix)
    return src, lines, _memory_verdicts(src, tmp)


def _group_owners(cluster: RedisCluster6, ns: str, shards: int) -> set[int]:
    """The primaries that serve a sharded namespace's shard groups."""
    return {
        cluster.primary_of_slot(key_slot(keys.group_base(ns, g).encode())) for g in range(shards)
    }


def test_a_sharded_namespace_spreads_over_every_primary_with_memory_verdicts(
    redis_cluster: RedisCluster6, tmp_path: Path
) -> None:
    """``--shards 6``: each namespace's buckets on all three primaries, its counter on one; the
    memory store's verdicts (which know nothing of shards)."""
    src, _, want = _prepared(redis_cluster, tmp_path)
    for ns in NAMESPACES:
        assert _group_owners(redis_cluster, ns, 6) == set(redis_cluster.primaries()), ns
    out = tmp_path / "cluster.jsonl"
    cmd = [*CLI, str(src), "-o", str(out), "--store", redis_cluster.url, "--redis-cluster"]
    subprocess.run([*cmd, "--shards", "6"], check=True, capture_output=True)
    got = _verdicts(out)
    assert got.keys() == want.keys()
    _assert_memory_verdicts(got, want)
    for port in redis_cluster.primaries():  # every primary holds buckets of every namespace
        with redis.Redis(port=port) as client:
            for ns in NAMESPACES:
                assert client.keys(f"nd:{{{ns}/*}}:b:*"), (port, ns)
    _consistent_sharded(redis_cluster, NAMESPACES, 6)


def _consistent_sharded(cluster: RedisCluster6, namespaces: tuple[str, ...], shards: int) -> None:
    """Every id hash in a sharded namespace's buckets is held by an article with a seq and a
    record (no batch was left half-registered), on whichever primary holds it."""
    with redis.RedisCluster(host="127.0.0.1", port=cluster.live_ports()[0]) as client:
        for ns in namespaces:
            holders = client.hgetall(keys.hashes(ns))
            ids = client.hgetall(keys.ids(ns))
            seqs = {h: ids[i] for h, i in holders.items() if i in ids}
            docs = set(client.hkeys(keys.docs(ns)))
            assert seqs and set(seqs.values()) <= docs
            for g in range(shards):
                owner = cluster.primary_of_slot(key_slot(keys.group_base(ns, g).encode()))
                with redis.Redis(port=owner) as node:
                    for key in node.keys(keys.group_base(ns, g) + "b:*"):
                        for packed in node.hvals(key):
                            found = {packed[i : i + 8] for i in range(0, len(packed), 8)}
                            assert found <= seqs.keys(), key


def test_namespaces_spread_over_all_primaries_with_memory_verdicts(
    redis_cluster: RedisCluster6, tmp_path: Path
) -> None:
    src, _, want = _prepared(redis_cluster, tmp_path)
    owners = {
        ns: redis_cluster.primary_of_slot(key_slot(keys.meta(ns).encode())) for ns in NAMESPACES
    }
    assert len(set(owners.values())) == 3, owners
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


@pytest.mark.parametrize("shards", [1, 6], ids=["one-slot", "sharded"])
def test_primary_killed_mid_stream_every_article_gets_a_verdict(
    redis_cluster: RedisCluster6, tmp_path: Path, shards: int
) -> None:
    """Sharded, the killed primary holds a third of every namespace's buckets as well."""
    _, lines, want = _prepared(redis_cluster, tmp_path, f"k{shards}")
    seed = redis_cluster.live_ports()[0]
    victim = redis_cluster.primary_of_slot(key_slot(keys.meta("forum").encode()))
    if victim == seed:
        seed = next(p for p in redis_cluster.live_ports() if p != victim)
    out, log = tmp_path / "cluster.jsonl", tmp_path / "stderr.txt"
    cmd = [*CLI, "-", "-o", str(out), "--store", f"redis://127.0.0.1:{seed}/0", "--redis-cluster"]
    cmd += ["--shards", str(shards)]
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
            _stop(proc)
            _running_again(redis_cluster, victim)  # rejoins as a replica of the promoted one
    if shards == 1:  # (sharded, the cluster client's own retries may ride the failover out)
        assert "retrying" in log.read_text()  # the slot was down for a while: retried, no exit
    assert victim not in redis_cluster.primaries()
    got = _verdicts(out)
    assert got.keys() == want.keys()  # every article has a verdict
    _assert_memory_verdicts(got, want)


@pytest.mark.parametrize("shards", [1, 6], ids=["one-slot", "sharded"])
def test_primary_killed_while_calls_are_in_flight_with_the_replica_wait(
    redis_cluster: RedisCluster6, tmp_path: Path, shards: int
) -> None:
    """The stream never pauses: the primary dies while calls are in flight, with writes its
    replica may not have. With ``--redis-wait-replicas 1`` no verdict rests on such a write, so
    none is lost with the primary: the memory store's verdicts, one original per group. The
    promoted replica has no replica of its own until the killed node is back (restarted as a
    supervisor would): until then its namespace's calls are refused and retried. Sharded, the
    bucket writes of every group wait for their primary's replica too."""
    _, lines, want = _prepared(redis_cluster, tmp_path, f"w{shards}")
    victim = redis_cluster.primary_of_slot(key_slot(keys.meta("forum").encode()))
    seed = next(p for p in redis_cluster.live_ports() if p != victim)
    out, log = tmp_path / "cluster.jsonl", tmp_path / "stderr.txt"
    store = ["--store", f"redis://127.0.0.1:{seed}/0", "--redis-cluster"]
    cmd = [*CLI, "-", "-o", str(out), *store, "--redis-wait-replicas", "1"]
    cmd += ["--shards", str(shards)]
    node = next(n for n in redis_cluster.nodes if n.port == victim)
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=err)
        assert proc.stdin is not None
        feeder = threading.Thread(target=_feed, args=(proc.stdin, lines))
        try:
            feeder.start()
            _wait_registered(seed, 2 * 512)
            redis_cluster.kill(victim)  # no waiting for the replica: whatever is in flight
            _wait_promoted(redis_cluster, victim)
            node.start()  # rejoins as the replica of the promoted one
            redis_cluster.wait_ok()
            assert proc.wait(timeout=150) == 0, log.read_text()
            feeder.join()
        finally:
            _stop(proc)
            _running_again(redis_cluster, victim)
    assert "retrying" in log.read_text()
    got = _verdicts(out)
    assert got.keys() == want.keys()  # every article has a verdict
    _assert_memory_verdicts(got, want)
    if shards == 1:
        _consistent(redis_cluster.primary_of_slot(key_slot(keys.meta("forum").encode())), "forum")


@pytest.mark.parametrize("wait", [0, 1], ids=["no-wait", "wait"])
def test_a_lagging_replica_promoted_loses_writes_unless_the_replica_wait_is_on(
    redis_cluster: RedisCluster6, tmp_path: Path, wait: int
) -> None:
    """The failover window made certain: forum's replica is stopped and its link cut (it lags)
    while the CLI decides the first batches; then its primary is killed and the replica,
    continued, is promoted without those writes. Without the wait, verdicts were published on
    them: later copies of those stories no longer find them (the verdicts differ from the memory
    store's),
    which is what the README says a failover can do. With ``--redis-wait-replicas 1`` the CLI
    stalls instead (retrying: 0 of 1 replicas) and publishes nothing the promoted replica lacks:
    the memory store's verdicts, one original per group."""
    _, lines, want = _prepared(redis_cluster, tmp_path, f"lag{wait}")
    victim = redis_cluster.primary_of_slot(key_slot(keys.meta("forum").encode()))
    seed = next(p for p in redis_cluster.live_ports() if p != victim)
    out, log = tmp_path / "cluster.jsonl", tmp_path / "stderr.txt"
    store = ["--store", f"redis://127.0.0.1:{seed}/0", "--redis-cluster"]
    cmd = [*CLI, "-", "-o", str(out), *store, "--redis-wait-replicas", str(wait)]
    node = next(n for n in redis_cluster.nodes if n.port == victim)
    first = 3 * 512
    deadline = time.monotonic() + 60  # a node restarted by an earlier test is a synced replica
    while not redis_cluster.replicas_caught_up(victim):
        assert time.monotonic() < deadline, "the replica never caught up"
        time.sleep(0.05)
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=err)
        assert proc.stdin is not None
        try:
            with redis_cluster.replica_of(victim).frozen():
                assert redis_cluster.cut_replicas(victim) == 1  # what it had is all it gets
                feeder = threading.Thread(target=_feed, args=(proc.stdin, lines[:first], False))
                feeder.start()
                if wait:
                    _wait_logged(log, "retrying")  # stalled: the replica acknowledges nothing
                else:
                    _wait_registered(seed, first)  # decided on writes only the primary has
                redis_cluster.kill(victim)
            _wait_promoted(redis_cluster, victim)
            node.start()  # rejoins as the replica of the promoted one
            redis_cluster.wait_ok()
            feeder.join()
            _feed(proc.stdin, lines[first:])
            assert proc.wait(timeout=150) == 0, log.read_text()
        finally:
            _stop(proc)
            _running_again(redis_cluster, victim)
    got = _verdicts(out)
    assert got.keys() == want.keys()  # every article has a verdict either way
    if wait:
        _assert_memory_verdicts(got, want)
    else:  # the window is real: without the wait, a failover changed verdicts
        assert {k: _decision(v) for k, v in got.items()} != {
            k: _decision(v) for k, v in want.items()
        }


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the CLI if a failed assertion left it running, and close its stdin (an open pipe
    left to the garbage collector fails whichever test runs then)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _running_again(cluster: RedisCluster6, port: int) -> None:
    """Start the node on ``port`` again if a test killed it (it rejoins as a replica), so the
    next test has three primaries with a replica each."""
    node = next(n for n in cluster.nodes if n.port == port)
    if not node.is_running():
        node.start()
        cluster.wait_ok()


def _wait_logged(log: Path, text: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text():
        assert time.monotonic() < deadline, f"{text!r} never logged: {log.read_text()}"
        time.sleep(0.05)


def _wait_promoted(cluster: RedisCluster6, victim: int, timeout_s: float = 60) -> None:
    """Until a replica has taken over from the killed primary on ``victim``."""
    deadline = time.monotonic() + timeout_s
    while victim in cluster.primaries() or len(cluster.primaries()) < 3:
        assert time.monotonic() < deadline, "no replica was promoted"
        time.sleep(0.1)


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


async def test_a_sharded_namespace_on_a_cluster_is_dropped_from_every_primary(
    redis_cluster: RedisCluster6, cluster_client: RedisCluster
) -> None:
    """Its keys live on every primary (the home slot and 6 shard groups); stats sample them and
    ``drop`` finds and removes them all."""
    index = RedisIndex(cluster_client, shard_bits=6)
    await index.ensure_scheme("wide", b'{"sharded_format":2,"shards":6}')
    regs = [_reg(f"a{i}", bytes([i]) * 16, (i * 2**58, 2**63 + i * 2**57)) for i in range(40)]
    probes = await index.register("wide", regs, 16)
    assert [p.seq for p in probes] == list(range(1, 41))
    held = {}
    for port in redis_cluster.primaries():
        with redis.Redis(port=port) as node:
            held[port] = node.keys("nd:{wide*")
    assert all(held.values()), held  # every primary holds some of it
    assert (await index.stats("wide")).documents == 40
    assert await index.drop("wide") == sum(map(len, held.values()))
    for port in redis_cluster.primaries():
        with redis.Redis(port=port) as node:
            assert node.keys("nd:{wide*") == []


async def test_replica_wait_on_a_cluster_returns_once_the_replica_has_the_registration(
    redis_cluster: RedisCluster6, cluster_client: RedisCluster
) -> None:
    """The WAIT goes to the namespace's primary, on the connection of its calls: with that
    primary's replica stopped, the registration is unavailable; once it is back, the same
    batch replays what the first attempt wrote."""
    ns = "forum"
    primary = redis_cluster.primary_of_slot(key_slot(keys.meta(ns).encode()))
    index = RedisIndex(cluster_client, chunk_size=2, wait_replicas=1, wait_timeout_ms=200)
    first = [_reg(f"a{i}", bytes([i]) * 16, (i, 2**63 + i)) for i in range(1, 4)]
    assert [p.status for p in await index.register(ns, first, 64)] == ["new"] * 3
    later = [_reg(f"b{i}", bytes([9 + i]) * 16, (9 + i,)) for i in range(1, 4)]
    replica = redis_cluster.replica_of(primary)
    with replica.frozen(), pytest.raises(IndexUnavailableError, match="0 of 1 Redis replicas"):
        await index.register(ns, later, 64)
    again = await index.register(ns, later, 64)
    assert [(p.status, p.seq) for p in again] == [("replay", 4), ("replay", 5), ("replay", 6)]


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


def _feed(stdin: IO[bytes], lines: list[bytes], close: bool = True) -> None:
    """Write the lines to the CLI. A CLI that exited (a broken pipe) is not this thread's to
    report: the test asserts its exit status and shows its log."""
    try:
        stdin.write(b"\n".join(lines) + b"\n")
        stdin.flush()
        if close:
            stdin.close()
    except BrokenPipeError:
        pass


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


@pytest.mark.parametrize("shards", [1, 6], ids=["one-slot", "sharded"])
def test_slot_of_a_busy_namespace_resharded_mid_stream(
    redis_cluster: RedisCluster6, tmp_path: Path, shards: int
) -> None:
    """Single-slot: the namespace's slot moves. Sharded: the slot of one of its shard groups
    moves (its home slot stays)."""
    _, lines, want = _prepared(redis_cluster, tmp_path, f"m{shards}")
    home = keys.meta("forum") if shards == 1 else keys.group_base("forum", 1)
    slot = key_slot(home.encode())
    owner = redis_cluster.primary_of_slot(slot)
    target = next(p for p in redis_cluster.primaries() if p != owner)
    seed = redis_cluster.live_ports()[0]
    out, log = tmp_path / "cluster.jsonl", tmp_path / "stderr.txt"
    cmd = [*CLI, "-", "-o", str(out), "--store", f"redis://127.0.0.1:{seed}/0", "--redis-cluster"]
    cmd += ["--shards", str(shards)]
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
            _stop(proc)
    assert redis_cluster.primary_of_slot(slot) == target
    got = _verdicts(out)
    assert got.keys() == want.keys()
    assert {k: _decision(v) for k, v in got.items()} == {k: _decision(v) for k, v in want.items()}
    if shards == 1:
        _consistent(target, "forum")
    else:
        _consistent_sharded(redis_cluster, NAMESPACES, shards)


@pytest.mark.parametrize("shards", [1, 6], ids=["one-slot", "sharded"])
def test_delete_on_a_cluster(redis_cluster: RedisCluster6, tmp_path: Path, shards: int) -> None:
    _flush(redis_cluster)
    src = tmp_path / "in.jsonl"
    texts = ["the first story about rivers and boats", "another story on mountains and snow"]
    src.write_bytes(
        b"".join(orjson.dumps({"id": f"a{i}", "text": t}) + b"\n" for i, t in enumerate(texts))
    )
    store = ["--store", redis_cluster.url, "--redis-cluster", "--namespace", "wiki"]
    out = tmp_path / "out.jsonl"
    subprocess.run([*CLI, str(src), "-o", str(out), *store, "--shards", str(shards)], check=True)
    owner = redis_cluster.primary_of_slot(key_slot(keys.meta("wiki").encode()))
    with redis.Redis(port=owner) as client:
        assert client.hlen(keys.docs("wiki")) == 2
        done = subprocess.run(
            [sys.executable, "-m", "neardup.stream.cli.main", "delete", "a0", *store],
            capture_output=True,
        )
        assert done.returncode == 0, done.stderr
        assert client.hlen(keys.docs("wiki")) == 1 and client.hget(keys.ids("wiki"), "a0") is None
    entries = []
    for port in redis_cluster.primaries():
        with redis.Redis(port=port) as node:
            for key in node.keys("nd:{wiki*}:b:*"):
                entries += [v[i : i + 8] for v in node.hvals(key) for i in range(0, len(v), 8)]
    with redis.Redis(port=owner) as client:
        idkey = client.hget(keys.meta("wiki"), "idkey") or b""
    a0, a1 = (keys.id_hash(x, idkey) for x in ("a0", "a1"))
    assert a0 not in entries and (a1 in entries) == (shards > 1)  # buckets list seqs unsharded
