"""A real Redis Cluster on loopback: three primaries and three replicas from ``redis-server``.

Each node is a :class:`~harness.services.Service` with a short ``--cluster-node-timeout``, so a
killed primary's replica takes over within seconds. :func:`start_cluster` returns once every node
reports ``cluster_state:ok`` and every replica finished its first sync (it stops what it started
if anything fails); :func:`start_one_primary` is the one-primary baseline of the benchmark.

Python::

    cluster = start_cluster(tmp_dir)      # RedisCluster6; cluster.url is one node's redis:// URL
    port = cluster.primary_of_slot(slot)  # the port of the primary serving a slot
    cluster.kill(port)                    # SIGKILL a node (its replica is promoted)
    cluster.begin_move(slot, port); cluster.migrate_keys(slot, port, 10); cluster.finish_move(...)
    cluster.wait_ok()                     # until every live node says cluster_state:ok
    cluster.stop()
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from harness.services import HOST, Service, ServiceError, free_port, start_redis

NODE_TIMEOUT_MS = 2000
NODES = 6  # three primaries, each with one replica
READY_TIMEOUT_S = 60.0

__all__ = [
    "NODE_TIMEOUT_MS",
    "RedisCluster6",
    "find_redis_cli",
    "start_cluster",
    "start_one_primary",
]


def find_redis_cli() -> Path:
    """``redis-cli`` on PATH (Debian's redis-tools): it forms the cluster and moves slots."""
    found = shutil.which("redis-cli")
    if found is None:
        raise ServiceError("no redis-cli: apt-get install -y redis-tools (or redis-server)")
    return Path(found)


def _admin(port: int) -> redis.Redis:
    return redis.Redis(host=HOST, port=port, socket_timeout=5, decode_responses=True)


def _info(port: int) -> dict[str, str]:
    with _admin(port) as client:
        info = client.execute_command("CLUSTER INFO")  # redis-py parses it into a dict
    return {str(k): str(v) for k, v in dict(info).items()}


def _replicas(port: int) -> tuple[int, list[dict[str, str]]]:
    """The primary on ``port``'s replication offset and its replicas as INFO lists them."""
    with _admin(port) as client:
        info = client.info("replication")
    replicas = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
    return int(info["master_repl_offset"]), replicas


@dataclass(eq=False)
class RedisCluster6:
    """Six nodes on loopback. ``nodes`` keeps every node, killed ones included."""

    dir: Path
    nodes: list[Service] = field(default_factory=list)

    @property
    def url(self) -> str:
        """A live node's ``redis://`` URL: the seed a cluster client starts from."""
        return next(n.url for n in self.nodes if n.is_running())

    def live_ports(self) -> list[int]:
        return [n.port for n in self.nodes if n.is_running()]

    def primaries(self) -> dict[int, list[tuple[int, int]]]:
        """Port of each live primary -> its slot ranges, as a live node sees them."""
        with _admin(self.live_ports()[0]) as client:
            raw = client.execute_command("CLUSTER SLOTS")
        out: dict[int, list[tuple[int, int]]] = {}
        for lo, hi, primary, *_replicas in raw:
            out.setdefault(int(primary[1]), []).append((int(lo), int(hi)))
        return out

    def primary_of_slot(self, slot: int) -> int:
        for port, ranges in self.primaries().items():
            if any(lo <= slot <= hi for lo, hi in ranges):
                return port
        raise ServiceError(f"no primary serves slot {slot}")

    def node_id(self, port: int) -> str:
        with _admin(port) as client:
            return str(client.execute_command("CLUSTER MYID"))

    def replicas_caught_up(self, port: int) -> bool:
        """Whether every replica of the primary on ``port`` has acknowledged all its writes."""
        offset, replicas = _replicas(port)
        return bool(replicas) and all(int(r["offset"]) >= offset for r in replicas)

    def replicas_online(self, port: int) -> bool:
        """Whether the primary on ``port`` has replicas, each done with its first sync (until
        then ``WAIT`` counts none of them)."""
        replicas = _replicas(port)[1]
        return bool(replicas) and all(r["state"] == "online" for r in replicas)

    def replica_of(self, port: int) -> Service:
        """A replica of the primary on ``port`` (its node, e.g. to stop it with SIGSTOP)."""
        ports = {int(r["port"]) for r in _replicas(port)[1]}
        return next(n for n in self.nodes if n.port in ports and n.is_running())

    def cut_replicas(self, port: int) -> int:
        """Close the primary's links to its replicas; a stopped replica then lags by every later
        write. Returns how many links were closed."""
        with _admin(port) as client:
            return int(client.execute_command("CLIENT KILL TYPE replica"))

    def begin_move(self, slot: int, to_port: int) -> None:
        """Start moving a slot to another primary (IMPORTING there, MIGRATING here)."""
        src = self.primary_of_slot(slot)
        with _admin(to_port) as dst:
            dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", self.node_id(src))
        with _admin(src) as client:
            client.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", self.node_id(to_port))

    def migrate_keys(self, slot: int, to_port: int, count: int | None = None) -> int:
        """MIGRATE up to ``count`` (None: all) keys of a slot being moved; returns how many."""
        src = self.primary_of_slot(slot)  # still the owner until finish_move
        moved = 0
        with _admin(src) as client:
            while count is None or moved < count:
                batch = 100 if count is None else min(100, count - moved)
                names = client.execute_command("CLUSTER GETKEYSINSLOT", slot, batch)
                if not names:
                    break
                client.execute_command("MIGRATE", HOST, to_port, "", 0, 5000, "KEYS", *names)
                moved += len(names)
        return moved

    def finish_move(self, slot: int, to_port: int) -> None:
        """Move the slot's remaining keys, then give it to ``to_port`` on every primary."""
        self.migrate_keys(slot, to_port)
        owner = self.node_id(to_port)
        for port in [to_port, *(p for p in self.primaries() if p != to_port)]:
            with _admin(port) as client:
                client.execute_command("CLUSTER SETSLOT", slot, "NODE", owner)

    def kill(self, port: int) -> None:
        """SIGKILL one node: a crash, nothing flushed or handed over."""
        next(n for n in self.nodes if n.port == port).stop(kill=True)

    def wait_ok(self, timeout_s: float = READY_TIMEOUT_S, primaries: int = 3) -> None:
        """Until every live node says ``cluster_state:ok`` and sees ``primaries`` primaries."""
        deadline = time.monotonic() + timeout_s
        last = ""
        while time.monotonic() < deadline:
            try:
                states = [_info(p) for p in self.live_ports()]
                ok = all(s.get("cluster_state") == "ok" for s in states)
                ok = ok and all(s.get("cluster_slots_ok") == "16384" for s in states)
                if ok and len(self.primaries()) == primaries:
                    return
                last = repr([s.get("cluster_state") for s in states])
            except (redis.RedisError, OSError) as exc:
                last = repr(exc)
            time.sleep(0.1)
        raise ServiceError(f"the cluster did not become ok within {timeout_s:.0f}s ({last})")

    def stop(self) -> None:
        """Stop every node (idempotent)."""
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> RedisCluster6:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_cluster(dir: str | os.PathLike[str]) -> RedisCluster6:
    """Start six cluster-enabled nodes, form the cluster, wait until it is ok."""
    cli = str(find_redis_cli())
    cluster = RedisCluster6(Path(dir).resolve())
    try:
        _start_nodes(cluster, NODES)
        addresses = [f"{HOST}:{n.port}" for n in cluster.nodes]
        args = ["--cluster", "create", *addresses, "--cluster-replicas", "1", "--cluster-yes"]
        done = subprocess.run([cli, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise ServiceError(f"redis-cli {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        cluster.wait_ok()
        # (until each replica's first sync is done, a WAIT counts none of them)
        _until(lambda: all(map(cluster.replicas_online, cluster.primaries())))
    except BaseException:
        cluster.stop()
        raise
    return cluster


def start_one_primary(dir: str | os.PathLike[str]) -> RedisCluster6:
    """One primary holding all slots and one replica, formed by hand (``redis-cli --cluster
    create`` wants three primaries): the baseline of the cluster benchmark."""
    cluster = RedisCluster6(Path(dir).resolve())
    try:
        buses = _start_nodes(cluster, 2)
        primary, replica = (n.port for n in cluster.nodes)
        with _admin(primary) as client:
            client.execute_command("CLUSTER ADDSLOTSRANGE", 0, 16383)
        with _admin(replica) as client:
            client.execute_command("CLUSTER MEET", HOST, primary, buses[0])
        _until(lambda: _replicate(replica, cluster.node_id(primary)))
        cluster.wait_ok(primaries=1)
        _until(lambda: cluster.replicas_online(primary))
    except BaseException:
        cluster.stop()
        raise
    return cluster


def start_primaries(dir: str | os.PathLike[str], count: int) -> RedisCluster6:
    """``count`` primaries without replicas, the 16384 slots split evenly in port order, formed
    by hand (``redis-cli --cluster create`` wants three or more): the sharded-namespace part of
    the cluster benchmark, where replicas would only take the machine's cores."""
    cluster = RedisCluster6(Path(dir).resolve())
    try:
        buses = _start_nodes(cluster, count)
        ports = [n.port for n in cluster.nodes]
        for k, port in enumerate(ports):
            lo, hi = 16384 * k // count, 16384 * (k + 1) // count - 1
            with _admin(port) as client:
                client.execute_command("CLUSTER ADDSLOTSRANGE", lo, hi)
        for port in ports[1:]:
            with _admin(port) as client:
                client.execute_command("CLUSTER MEET", HOST, ports[0], buses[0])
        cluster.wait_ok(primaries=count)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_nodes(cluster: RedisCluster6, count: int) -> list[int]:
    """Start ``count`` cluster-enabled nodes; returns their bus ports (the default, port + 10000,
    may be taken or past 65535)."""
    buses: list[int] = []
    for i in range(count):
        buses.append(free_port())
        extra = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        extra += ["--cluster-node-timeout", str(NODE_TIMEOUT_MS), "--cluster-port", str(buses[-1])]
        cluster.nodes.append(start_redis(cluster.dir / f"node{i}", extra_args=extra))
    return buses


def _replicate(port: int, primary_id: str) -> bool:
    """``CLUSTER REPLICATE``, refused ("Unknown node") until the handshake after MEET is done."""
    try:
        with _admin(port) as client:
            client.execute_command("CLUSTER REPLICATE", primary_id)
    except redis.ResponseError as exc:
        if "Unknown node" in str(exc):
            return False
        raise
    return True


def _until(ready: Callable[[], bool], timeout_s: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise ServiceError(f"a cluster node did not get ready within {timeout_s:.0f}s")
        time.sleep(0.05)
