"""Redis Cluster: many namespaces on one primary vs three, the per-namespace ceiling, the cost
of waiting for a replica, and one namespace sharded over 1, 3 and 6 primaries.

Two clusters (:mod:`harness.redis_cluster`), one primary and three, each with a replica, through
the worker's cluster client and ``RedisIndex``. In ``--reps`` interleaved rounds, best kept:
``--namespaces`` tenants spread over the primaries, each fed by an engine task of its own, dealt
over ``--drivers`` processes (one would measure the client); the same with ``wait_replicas=1``;
one tenant alone with and without the wait. Then one namespace driven by many tasks (its ceiling)
and ``WAIT 1`` against ``PING``. Every tenant's verdicts must equal the memory store's. A primary
runs one command thread, so its ceiling is ``1 / (CPU seconds per article)`` from ``INFO cpu``.
Last, on clusters of 1, 3 and 6 primaries without replicas, one namespace driven as for the
ceiling, single-slot and in ``--shards`` shard groups: its ceiling is set by its busiest primary.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import multiprocessing as mp
import os
import queue
import statistics
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from redis.crc import key_slot

from bench import cli, cluster_tables
from bench.readings import git_state, machine_busy_seconds, machine_info, other_load
from harness.corpus import Doc, generate
from harness.redis_cluster import RedisCluster6, start_cluster, start_one_primary, start_primaries
from neardup.stream.engine.engine import Engine
from neardup.stream.errors import NeardupError
from neardup.stream.index.memory import MemoryIndex
from neardup.stream.index.redis import keys
from neardup.stream.model import Article, Verdict
from neardup.stream.namespaces.policy import Policy

START_TIMEOUT_S = 120.0  # spawn + imports + warm-up of the drivers
RUN_TIMEOUT_S = 600.0
MAX_RETRIES = 50  # of one batch, before the benchmark gives up


@dataclass(frozen=True)
class Stream:
    """What one engine task feeds, in order: ``(id, text)`` pairs into one namespace."""

    namespace: str
    docs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Job:
    """One driver process's work: its streams run concurrently, one ``Engine`` each."""

    url: str
    wait_replicas: int
    batch: int
    streams: tuple[Stream, ...]
    shards: int = 1  # the namespaces' shard groups (Policy.shards)


@dataclass
class DriverResult:
    articles: int
    started: float  # time.monotonic (CLOCK_MONOTONIC: one clock for every process)
    ended: float
    cpu_s: float  # the driver process's own CPU over the timed part
    tally: Tally
    digests: dict[str, str]  # namespace -> digest of its verdicts (single-stream namespaces)
    kinds: dict[str, int]  # verdict kind -> count


def verdict_digest(verdicts: Sequence[Verdict]) -> str:
    """What a verdict decides (namespace and seq aside), hashed: equal digests, equal verdicts."""
    parts = [
        (v.id, v.verdict, v.duplicate_of, v.cluster, v.similarity, [m.id for m in v.matches])
        for v in verdicts
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


@dataclass
class Tally:
    """Per driver: each batch's latency (retries included) and the retriable errors retried."""

    latencies_s: list[float] = field(default_factory=list)
    retries: int = 0
    retry_errors: list[str] = field(default_factory=list)  # the first few


async def _process(engine: Engine, arts: list[Article], tally: Tally) -> list[Verdict]:
    """``Engine.process`` retried on a retriable error as the worker retries a batch (a
    replayed batch is idempotent): e.g. a replica wait that timed out."""
    for _ in range(MAX_RETRIES):
        try:
            got = await engine.process(arts)
        except NeardupError as exc:
            if not exc.retriable:
                raise
            tally.retries += 1
            if len(tally.retry_errors) < 5:
                tally.retry_errors.append(str(exc))
            await asyncio.sleep(0.05)
            continue
        verdicts = [v for v in got if isinstance(v, Verdict)]
        if len(verdicts) < len(got):
            raise RuntimeError(f"neardup rejected a benchmark article: {got!r}"[:2000])
        return verdicts
    raise RuntimeError(f"a batch failed {MAX_RETRIES} times: {tally.retry_errors}")


async def _feed(engine: Engine, stream: Stream, batch: int, tally: Tally) -> list[Verdict]:
    verdicts: list[Verdict] = []
    for lo in range(0, len(stream.docs), batch):
        arts = [Article(i, t, namespace=stream.namespace) for i, t in stream.docs[lo : lo + batch]]
        t0 = time.monotonic()
        verdicts += await _process(engine, arts, tally)
        tally.latencies_s.append(time.monotonic() - t0)
    return verdicts


async def _drive_async(job: Job, ready: Any, go: Any) -> DriverResult:
    from neardup.stream.index.redis.index import RedisIndex
    from neardup.stream.worker.clients import redis_cluster_client

    client = redis_cluster_client(job.url, socket_timeout=30)
    try:
        index = RedisIndex(client, wait_replicas=job.wait_replicas)
        await index.load_functions()
        engines = [Engine(index, Policy(shards=job.shards)) for _ in job.streams]
        for engine, s in zip(engines, job.streams, strict=True):  # connections, scheme, routing
            probe = [Article(i, t, namespace=s.namespace) for i, t in s.docs[:8]]
            await engine.process(probe, register=False)
        ready.wait(START_TIMEOUT_S)
        go.wait()
        tally = Tally()
        cpu0, t0 = time.process_time(), time.monotonic()
        found = await asyncio.gather(
            *(_feed(e, s, job.batch, tally) for e, s in zip(engines, job.streams, strict=True))
        )
        t1, cpu = time.monotonic(), time.process_time() - cpu0
    finally:
        await client.aclose()
    per_ns = Counter(s.namespace for s in job.streams)
    return DriverResult(
        articles=sum(len(v) for v in found),
        started=t0,
        ended=t1,
        cpu_s=cpu,
        tally=tally,
        digests={
            s.namespace: verdict_digest(v)
            for s, v in zip(job.streams, found, strict=True)
            if per_ns[s.namespace] == 1
        },
        kinds=dict(Counter(v.verdict for vs in found for v in vs)),
    )


def _drive(job: Job, ready: Any, go: Any, results: Any) -> None:
    """A driver process: its result, or its traceback, goes to ``results``."""
    try:
        results.put(asyncio.run(_drive_async(job, ready, go)))
    except BaseException:
        ready.abort()  # the parent stops waiting for this driver's warm-up
        results.put(traceback.format_exc())


@dataclass
class Setup:
    """A running cluster and the role of each of its nodes (fixed for the benchmark)."""

    name: str
    cluster: RedisCluster6
    primaries: list[int]  # ports, in slot order
    replicas: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, name: str, cluster: RedisCluster6) -> Setup:
        """The cluster's roles, once every replica has finished its first sync: until then a
        ``WAIT`` answers 0 (a cluster that just says ``cluster_state:ok`` may still be syncing)."""
        ranges = cluster.primaries()
        primaries = sorted(ranges, key=lambda p: min(ranges[p]))
        replicas = [p for p in cluster.live_ports() if p not in ranges]
        deadline = time.monotonic() + START_TIMEOUT_S
        while not all(cluster.replicas_online(p) for p in primaries):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the replicas of {name} did not come online")
            time.sleep(0.1)
        return cls(name, cluster, primaries, replicas)

    def label(self, port: int) -> str:
        return f"p{self.primaries.index(port) + 1}"

    def primary_of(self, ns: str) -> int:
        return self.cluster.primary_of_slot(key_slot(keys.meta(ns).encode()))

    def where(self, ns: str) -> dict[str, Any]:
        """A namespace, its slot and its primary's label."""
        slot = key_slot(keys.meta(ns).encode())
        return {"namespace": ns, "slot": slot, "primary": self.label(self.primary_of(ns))}


@dataclass(frozen=True)
class NodeStats:
    cpu_s: float  # used_cpu_user + used_cpu_sys
    getkeys: int  # COMMAND GETKEYS calls: a cluster client asking a node where a call's keys are
    used_memory: int  # bytes (INFO memory)


def node_stats(ports: Sequence[int]) -> dict[int, NodeStats]:
    got = {}
    for port in ports:
        with redis.Redis(host="127.0.0.1", port=port, socket_timeout=10) as r:
            cpu: dict[str, Any] = r.info("cpu")
            cmds: dict[str, Any] = r.info("commandstats")
            mem: dict[str, Any] = r.info("memory")
        calls = int(cmds.get("cmdstat_command|getkeys", {}).get("calls", 0))
        used = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
        got[port] = NodeStats(used, calls, int(mem["used_memory"]))
    return got


def _collect(results: Any, procs: Sequence[Any], expected: int) -> list[DriverResult]:
    got: list[DriverResult] = []
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while len(got) < expected:
        try:
            item = results.get(timeout=1.0)
        except queue.Empty:
            died = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if (died or time.monotonic() > deadline) and results.empty():
                raise RuntimeError(f"a driver died ({died}) or hung without a result") from None
            continue
        if isinstance(item, str):
            raise RuntimeError(f"a driver failed:\n{item}")
        got.append(item)
    return got


def run_once(setup: Setup, jobs: Sequence[Job], workload: str) -> dict[str, Any]:
    """Start the drivers, let them warm up, then time them from one start signal to the last
    article's verdict; every node's CPU around exactly that."""
    for port in setup.primaries:  # the FUNCTION library survives FLUSHALL; replicas follow
        with redis.Redis(host="127.0.0.1", port=port, socket_timeout=60) as r:
            r.flushall()
    ctx = mp.get_context("spawn")
    ready, go, results = ctx.Barrier(len(jobs) + 1), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_drive, args=(j, ready, go, results)) for j in jobs]
    for p in procs:
        p.start()
    try:
        try:
            ready.wait(START_TIMEOUT_S)
        except threading.BrokenBarrierError:
            _collect(results, procs, len(jobs))  # raises with the failed driver's traceback
            raise
        nodes = setup.primaries + setup.replicas
        stats0, busy0 = node_stats(nodes), machine_busy_seconds()
        t_go = time.monotonic()
        go.set()
        drivers = _collect(results, procs, len(jobs))
        stats1, busy1 = node_stats(nodes), machine_busy_seconds()
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    wall = max(d.ended for d in drivers) - t_go
    cpu = {p: stats1[p].cpu_s - stats0[p].cpu_s for p in nodes}
    articles = sum(d.articles for d in drivers)
    lat = sorted(x for d in drivers for x in d.tally.latencies_s)
    per_primary: Counter[int] = Counter()
    for s in (s for job in jobs for s in job.streams):
        per_primary[setup.primary_of(s.namespace)] += len(s.docs)
    primary_cpu = {setup.label(p): cpu[p] for p in setup.primaries}
    digests = {k: v for d in drivers for k, v in d.digests.items()}
    kinds = sum((Counter(d.kinds) for d in drivers), Counter())
    return {
        "setup": setup.name,
        "workload": workload,
        "primaries": len(setup.primaries),
        "wait_replicas": jobs[0].wait_replicas,
        "drivers": len(jobs),
        "streams": sum(len(j.streams) for j in jobs),
        "articles": articles,
        "wall_s": wall,
        "articles_per_s": articles / wall,
        "primary_cpu_s": primary_cpu,
        "primary_articles": {setup.label(p): per_primary[p] for p in setup.primaries},
        "primary_cores": {k: v / wall for k, v in primary_cpu.items()},
        "redis_cpu_ms_per_article": 1000 * sum(primary_cpu.values()) / articles,
        "replica_cpu_ms_per_article": 1000 * sum(cpu[p] for p in setup.replicas) / articles,
        "getkeys_per_primary": {
            setup.label(p): stats1[p].getkeys - stats0[p].getkeys for p in setup.primaries
        },
        "client_cpu_ms_per_article": 1000 * sum(d.cpu_s for d in drivers) / articles,
        "primary_bytes_per_article": sum(
            stats1[p].used_memory - stats0[p].used_memory for p in setup.primaries
        )
        / articles,
        "shards": jobs[0].shards,
        "home": setup.label(setup.primary_of(jobs[0].streams[0].namespace)),
        "machine_cores_busy": (busy1 - busy0) / wall,
        "other_cores_busy": (busy1 - busy0 - sum(d.cpu_s for d in drivers) - sum(cpu.values()))
        / wall,
        "batch_latency_ms": {
            "p50": 1000 * statistics.median(lat),
            "p95": 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))],
            "max": 1000 * lat[-1],
        },
        "verdict_kinds": dict(kinds),
        "retries": sum(d.tally.retries for d in drivers),
        "retry_errors": [e for d in drivers for e in d.tally.retry_errors][:5],
        "digests": digests,
    }


def wait_probe(setup: Setup, ns: str, n: int = 300) -> dict[str, float]:
    """What ``WAIT 1`` itself adds to a round trip: a small write into ``ns``'s slot followed by
    ``PING`` or by ``WAIT 1 1000``, interleaved, on its primary (ms, medians and p99)."""
    key = f"{keys.base(ns)}probe"
    both: dict[str, list[float]] = {"ping": [], "wait": []}
    with redis.Redis(host="127.0.0.1", port=setup.primary_of(ns), socket_timeout=10) as r:
        for i in range(n):
            for kind, tail in (("ping", ("PING",)), ("wait", ("WAIT", 1, 1000))):
                pipe = r.pipeline(transaction=False)
                pipe.set(key, i)
                pipe.execute_command(*tail)
                t0 = time.perf_counter()
                pipe.execute()
                both[kind].append(1000 * (time.perf_counter() - t0))
        r.delete(key)
    got = {}
    for kind, lat in both.items():
        lat.sort()
        got[f"{kind}_p50_ms"] = statistics.median(lat)
        got[f"{kind}_p99_ms"] = lat[int(0.99 * (len(lat) - 1))]
    got["added_p50_ms"] = got["wait_p50_ms"] - got["ping_p50_ms"]
    return got


def spread_namespaces(setup: Setup, count: int) -> list[str]:
    """``count`` tenant names, the first that fall on each primary in turn, so every primary
    serves ``count / primaries`` of them (the hash tag ``{ns}`` decides the slot)."""
    quota = -(-count // len(setup.primaries))
    taken: dict[int, list[str]] = {p: [] for p in setup.primaries}
    i = 0
    while sum(map(len, taken.values())) < count:
        name = f"tenant-{i:03d}"
        owner = taken[setup.primary_of(name)]
        if len(owner) < quota:
            owner.append(name)
        i += 1
    return sorted(n for names in taken.values() for n in names)[:count]


def stream(ns: str, docs: Sequence[Doc]) -> Stream:
    return Stream(ns, tuple((d["id"], d["text"]) for d in docs))


def jobs_of(
    url: str, streams: Sequence[Stream], args: Any, wait: int = 0, shards: int = 1
) -> list[Job]:
    """The streams dealt round-robin over ``--drivers`` drivers (or as many as there are)."""
    drivers = min(args.drivers, len(streams))
    return [Job(url, wait, args.batch, tuple(streams[k::drivers]), shards) for k in range(drivers)]


SHARDED_PRIMARIES = (1, 3, 6)


def sharded_runs(args: argparse.Namespace, tmp: Path, docs: Sequence[Doc]) -> list[dict[str, Any]]:
    """One namespace driven by the ceiling's streams, single-slot and in ``--shards`` shard
    groups, on clusters of 1, 3 and 6 primaries without replicas (started one at a time:
    the machine's cores are shared). Each primary's CPU per article says which bounds it."""
    out: list[dict[str, Any]] = []
    n = args.drivers * args.ceiling_streams
    ns = "sharded-000"
    streams = [stream(ns, docs[k::n]) for k in range(n)]
    for count in SHARDED_PRIMARIES:
        cli.say(f"starting {count} primaries (no replicas) for one namespace, sharded or not")
        with start_primaries(tmp / f"primaries{count}", count) as cluster:
            ranges = cluster.primaries()
            setup = Setup(f"{count}p", cluster, sorted(ranges, key=lambda p: min(ranges[p])))
            for rep in range(args.reps):
                for shards in (1, args.shards):
                    jobs = jobs_of(cluster.url, streams, args, shards=shards)
                    res = run_once(
                        setup, jobs, "one namespace, sharded" if shards > 1 else "one namespace"
                    )
                    res["round"] = rep + 1
                    out.append(res)
                    cli.say(
                        f"  round {rep + 1}: {count} primaries, shards={shards}: "
                        f"{res['articles_per_s']:,.0f} articles/s"
                    )
    return out


def memory_digest(docs: Sequence[Doc], batch: int) -> str:
    """The verdicts the memory store gives one tenant's documents, batched as the drivers do."""
    engine = Engine(MemoryIndex())
    return verdict_digest(asyncio.run(_feed(engine, stream("ref", docs), batch, Tally())))


def run(args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    load_before = other_load()
    cli.say(f"corpus: {args.articles} docs per tenant, {args.ceiling_articles} for the ceiling")
    docs = generate(args.articles, seed=args.seed)
    ceiling_docs = generate(args.ceiling_articles, seed=args.seed + 1)
    reference = memory_digest(docs, args.batch)
    lone_docs = ceiling_docs[: args.batch * args.lone_batches]
    lone_reference = memory_digest(lone_docs, args.batch)
    with tempfile.TemporaryDirectory(prefix="neardup-cluster-bench-") as tmp:
        cli.say("starting a one-primary cluster (1 + 1 replica) and a three-primary one (3 + 3)")
        with start_one_primary(Path(tmp) / "one") as c1, start_cluster(Path(tmp) / "three") as c3:
            one, three = Setup.of("one", c1), Setup.of("three", c3)
            with redis.Redis(host="127.0.0.1", port=three.primaries[0]) as r:
                server = r.info("server")
            names = spread_namespaces(three, args.namespaces)
            tenants = [three.where(ns) for ns in names]
            runs: list[dict[str, Any]] = []
            lone: list[dict[str, Any]] = []
            plan = [(one, 0), (three, 0), (three, 1)]
            for rep in range(args.reps):
                for wait in (0, 1):
                    cli.say(f"round {rep + 1}: one tenant alone, wait_replicas={wait}")
                    # one tenant, one engine task, one driver: the machine not saturated
                    jobs = jobs_of(c3.url, [stream(names[0], lone_docs)], args, wait)
                    res = {**run_once(three, jobs, "one tenant alone"), "round": rep + 1}
                    lone.append(res)
                    cli.say(f"  batch p50 {res['batch_latency_ms']['p50']:.0f} ms")
                for setup, wait in plan:
                    cli.say(
                        f"round {rep + 1}/{args.reps}: {len(names)} tenants x {len(docs)} on "
                        f"{setup.name} primary(ies), wait_replicas={wait}"
                    )
                    streams = [stream(ns, docs) for ns in names]
                    jobs = jobs_of(setup.cluster.url, streams, args, wait)
                    res = {**run_once(setup, jobs, "many namespaces"), "round": rep + 1}
                    runs.append(res)
                    cli.say(f"  {res['articles_per_s']:,.0f} articles/s")
            ns = names[0]
            cli.say(f"ceiling: one namespace ({ns}), {args.drivers * args.ceiling_streams} streams")
            n = args.drivers * args.ceiling_streams  # each with its own documents
            streams = [stream(ns, ceiling_docs[k::n]) for k in range(n)]
            ceiling = run_once(three, jobs_of(c3.url, streams, args), "one namespace")
            ceiling |= three.where(ns)
            ceiling["namespace_primary_cpu_ms_per_article"] = (
                1000 * ceiling["primary_cpu_s"][ceiling["primary"]] / ceiling["articles"]
            )
            cli.say(f"  {ceiling['articles_per_s']:,.0f} articles/s")
            cli.say("WAIT 1 round trip, alone")
            probe = wait_probe(three, ns)
        sharded = sharded_runs(args, Path(tmp), ceiling_docs)
    machine = machine_info(("neardup", "redis"))
    machine["redis_server"] = f"{server.get('redis_version')} ({server.get('executable', '')})"
    machine["load_average_1m_at_end"] = os.getloadavg()[0]
    machine["other_load_cores_before"] = load_before
    digests = {d for r in runs for d in r["digests"].values()}
    checks = {
        "memory_digest": reference,
        "every_tenant_equals_memory": digests == {reference}
        and all(len(r["digests"]) == len(names) for r in runs),
        "lone_tenant_equals_memory": all(
            list(r["digests"].values()) == [lone_reference] for r in lone
        ),
        "articles_all_decided": all(r["articles"] == len(names) * len(docs) for r in runs)
        and ceiling["articles"] == len(ceiling_docs)
        and all(r["articles"] == len(lone_docs) for r in lone)
        and all(r["articles"] == len(ceiling_docs) for r in sharded),
    }
    return {
        "benchmark": "cluster",
        "date": cli.now(),
        "machine": machine,
        "git": git_state(),
        "method": {
            "namespaces": len(names),
            "articles_per_namespace": len(docs),
            "ceiling_articles": len(ceiling_docs),
            "ceiling_streams": args.drivers * args.ceiling_streams,
            "lone_articles": len(lone_docs),
            "drivers": args.drivers,
            "batch": args.batch,
            "reps": args.reps,
            "seed": args.seed,
            "shards": args.shards,
            "corpus": f"harness.corpus.generate({len(docs)}, seed={args.seed}), the same for "
            f"every tenant; the ceiling: generate({len(ceiling_docs)}, seed={args.seed + 1})",
        },
        "tenants": tenants,
        "runs": runs,
        "lone": lone,
        "ceiling": ceiling,
        "wait_probe": probe,
        "sharded": sharded,
        "sharded_summary": cluster_tables.summarise_sharded(sharded),
        "summary": cluster_tables.summarise(runs, lone, ceiling),
        "checks": checks,
        "elapsed_s": time.perf_counter() - t_start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = cli.parser("cluster", __doc__, seed=7)
    add = parser.add_argument
    add("--namespaces", type=int, default=24, help="tenants spread over the primaries (24)")
    add("--articles", type=int, default=800, help="documents per tenant (800)")
    add("--drivers", type=int, default=2, help="driver processes (2)")
    add("--batch", type=int, default=256, help="articles per Engine.process (256, the worker's)")
    add("--reps", type=int, default=3, help="rounds of (one, three, three + wait); best kept")
    add("--ceiling-articles", type=int, default=8000, help="documents into one namespace")
    add("--ceiling-streams", type=int, default=4, help="engine tasks per driver for the ceiling")
    add("--lone-batches", type=int, default=16, help="batches of the lone-tenant latency runs")
    add("--shards", type=int, default=24, help="shard groups of the sharded namespace (24)")
    args = parser.parse_args(argv)
    if min(args.namespaces, args.articles, args.drivers, args.batch, args.reps) < 1:
        parser.error("--namespaces, --articles, --drivers, --batch and --reps must be >= 1")
    if (
        args.namespaces < args.drivers
        or args.ceiling_articles < args.drivers * args.ceiling_streams
    ):
        parser.error("every driver needs a namespace and every ceiling stream a document")
    result = run(args)
    cluster_tables.print_tables(result)
    cli.write(args.out, "cluster", result, cluster_tables.markdown(result), default=str)
    cli.say(f"wrote {args.out}/cluster.json and cluster.md")
    return 0 if all(v for k, v in result["checks"].items() if k != "memory_digest") else 1


__all__ = ["main", "run", "verdict_digest"]
