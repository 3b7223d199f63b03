"""The cluster benchmark's summary figures and ``cluster.md``, from ``cluster.json`` (whose
``summary`` :func:`summarise` derives)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bench.markdown import code_line, data_table, heading, report

PLAN_LOADS = (10_000, 50_000, 200_000)  # articles/s for the sizing examples
HEADROOM = 0.5  # plan primaries at half a core each
TITLE = "Redis Cluster benchmark: one primary vs three, the per-namespace ceiling, the replica wait"


def _best(runs: Sequence[dict[str, Any]], setup: str, wait: int) -> dict[str, Any]:
    mine = [r for r in runs if r["setup"] == setup and r["wait_replicas"] == wait]
    return max(mine, key=lambda r: r["articles_per_s"])


def _latency(runs: Sequence[dict[str, Any]], wait: int) -> dict[str, Any]:
    """The round with the lowest median batch latency of the lone tenant."""
    mine = [r for r in runs if r["wait_replicas"] == wait]
    return min(mine, key=lambda r: r["batch_latency_ms"]["p50"])


def summarise(
    runs: Sequence[dict[str, Any]], lone: Sequence[dict[str, Any]], ceiling: dict[str, Any]
) -> dict[str, Any]:
    one, three, waited = _best(runs, "one", 0), _best(runs, "three", 0), _best(runs, "three", 1)
    alone0, alone1 = _latency(lone, 0), _latency(lone, 1)
    return {
        "one": one,
        "three": three,
        "three_wait1": waited,
        "three_over_one_articles_per_s": three["articles_per_s"] / one["articles_per_s"],
        # Each primary at one core: three primaries' articles/s over one primary's.
        "three_over_one_capacity": len(three["primary_cpu_s"])
        * one["redis_cpu_ms_per_article"]
        / three["redis_cpu_ms_per_article"],
        "wait1_over_wait0_articles_per_s": waited["articles_per_s"] / three["articles_per_s"],
        "lone_wait0": alone0,
        "lone_wait1": alone1,
        "lone_wait1_minus_wait0_p50_ms": alone1["batch_latency_ms"]["p50"]
        - alone0["batch_latency_ms"]["p50"],
        "lone_wait1_over_wait0_articles_per_s": alone1["articles_per_s"] / alone0["articles_per_s"],
        "primary_ceiling_articles_per_s": {
            r["setup"] + (" + wait 1" if r["wait_replicas"] else ""): 1000
            / r["redis_cpu_ms_per_article"]
            for r in (one, three, waited)
        },
        "namespace_ceiling_articles_per_s": 1000 / ceiling["namespace_primary_cpu_ms_per_article"],
    }


def summarise_sharded(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cluster size and layout, the best round, with its busiest primary's CPU per article
    (what bounds the namespace: a primary runs one command thread) and its ceiling."""
    best: dict[tuple[str, int], dict[str, Any]] = {}
    for r in runs:
        key = (r["setup"], r["shards"])
        if key not in best or r["articles_per_s"] > best[key]["articles_per_s"]:
            best[key] = r
    out = []
    for _, r in sorted(best.items(), key=lambda x: (int(x[0][0][:-1]), x[0][1])):
        per = {k: 1000 * v / r["articles"] for k, v in r["primary_cpu_s"].items()}
        busiest = max(per.values())
        out.append(
            {
                **r,
                "primary_ms": per,
                "busiest_ms": busiest,
                "home_ms": per[r["home"]],
                "ceiling": 1000 / busiest,
            }
        )
    for r in out:
        first = next(x for x in out if x["shards"] == r["shards"])
        r["ceiling_vs_one"] = r["ceiling"] / first["ceiling"]
    return out


SHARDED = (
    "primaries={count} | layout={layout} | articles/s={articles_per_s:,.0f} | "
    "Redis CPU ms/article, all primaries={redis_cpu_ms_per_article:.4f} | "
    "CPU ms/article per primary (home *)={per} | ceiling, articles/s={ceiling:,.0f} | "
    "ceiling vs 1 primary={ceiling_vs_one:.2f}× | client CPU ms/article="
    "{client_cpu_ms_per_article:.3f} | machine cores busy={machine_cores_busy:.2f} | "
    "Redis bytes/article={primary_bytes_per_article:,.0f} | batch p50 ms={lat[p50]:.0f}"
)


def _sharded_row(r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **r,
        "count": len(r["primary_cpu_s"]),
        "layout": f"{r['shards']} shard groups" if r["shards"] > 1 else "one slot",
        "per": " / ".join(
            f"{v:.4f}" + ("*" if k == r["home"] else "") for k, v in r["primary_ms"].items()
        ),
        "lat": r["batch_latency_ms"],
    }


def sharded_lines(result: Mapping[str, Any]) -> list[str]:
    """What the sharded runs show: how the ceiling grows, and what bounds it."""
    rows = result["sharded_summary"]
    most = max(len(r["primary_cpu_s"]) for r in rows)
    one = {r["shards"]: r for r in rows if len(r["primary_cpu_s"]) == 1}
    top = {r["shards"]: r for r in rows if len(r["primary_cpu_s"]) == most}
    shards = max(one)
    m = result["machine"]
    return [
        f"ceiling (1 / the busiest primary's CPU per article): single-slot {one[1]['ceiling']:,.0f}"
        f" articles/s on 1 primary, {top[1]['ceiling']:,.0f} on {most} (one slot is one "
        f"primary whatever the cluster); {shards} shard groups {one[shards]['ceiling']:,.0f} on "
        f"1 primary, {top[shards]['ceiling']:,.0f} on {most}: "
        f"{top[shards]['ceiling_vs_one']:.2f}× with {most}× the primaries",
        f"what bounds a sharded namespace: its home primary (the counter, id -> seq, id hash -> "
        f"seq, records, verdicts) at {top[shards]['home_ms']:.4f} ms/article on {most} primaries, "
        f"where it also serves some groups; the busiest at {top[shards]['busiest_ms']:.4f}",
        "what sharding costs: Redis CPU over all primaries "
        f"{one[shards]['redis_cpu_ms_per_article']:.4f} ms/article against "
        f"{one[1]['redis_cpu_ms_per_article']:.4f} single-slot on one primary, client CPU "
        f"{one[shards]['client_cpu_ms_per_article']:.3f} against "
        f"{one[1]['client_cpu_ms_per_article']:.3f} ms/article (five round trips to register "
        f"a batch instead of one), memory {one[shards]['primary_bytes_per_article']:,.0f} against "
        f"{one[1]['primary_bytes_per_article']:,.0f} bytes/article",
        f"measured: {shards} shard groups ran {one[shards]['articles_per_s']:,.0f} articles/s on "
        f"1 primary and {top[shards]['articles_per_s']:,.0f} on {most}, with "
        f"{top[shards]['machine_cores_busy']:.2f} of this machine's {m['cores']} cores busy: "
        "the drivers and every primary share them, and the drivers' client CPU per article is "
        "the larger share; the ceilings say what a core per primary would serve",
    ]


SETUPS = {"one": "one primary (1 + 1 replica)", "three": "three primaries (3 + 3 replicas)"}
COMMON = (
    "client CPU ms/article={client_cpu_ms_per_article:.3f} | "
    "machine cores busy (others')={machine_cores_busy:.2f} ({others:.2f}) | "
)
ROUNDS = (
    "round={round} | workload={workload} | setup={label} | articles/s={articles_per_s:,.0f} | "
    f"Redis CPU ms/article={{redis_cpu_ms_per_article:.4f}} | {COMMON}"
    "batch p50 / p95 / max ms={lat[p50]:.0f} / {lat[p95]:.0f} / {lat[max]:.0f} | "
    "batches retried={retries}"
)
MAIN = (
    "setup={label} | articles={articles:,} | articles/s={articles_per_s:,.0f} | "
    "vs one primary={vs_one:.2f}× | Redis CPU ms/article (primaries)={redis_cpu_ms_per_article:.4f}"
    " | cores used per primary={cores} | ceiling per primary, articles/s={ceiling:,.0f} | "
    f"replica CPU ms/article={{replica_cpu_ms_per_article:.4f}} | {COMMON}"
    "batch p50 / p95 ms={lat[p50]:.0f} / {lat[p95]:.0f} | batches retried={retries} | "
    "COMMAND GETKEYS per primary={getkeys}"
)


def _row(r: Mapping[str, Any]) -> dict[str, Any]:
    """A round with its setup's label and the cells of more than one figure."""
    return {
        **r,
        "label": f"{SETUPS[r['setup']]}, wait_replicas={r['wait_replicas']}",
        "others": max(0.0, r["other_cores_busy"]),
        "lat": r["batch_latency_ms"],
        "ceiling": 1000 / r["redis_cpu_ms_per_article"],
        "cores": " / ".join(f"{v:.2f}" for v in r["primary_cores"].values()),
        "getkeys": " / ".join(f"{v:,}" for v in r["getkeys_per_primary"].values()),
    }


def sizing_lines(result: Mapping[str, Any]) -> list[str]:
    """The headline figures, and primaries for a load from the three-primary Redis CPU."""
    s, m, c, w = result["summary"], result["machine"], result["ceiling"], result["wait_probe"]
    lines = [
        f"three primaries / one primary: {s['three_over_one_articles_per_s']:.2f}× articles/s on "
        f"this {m['cores']}-core machine, which the drivers and nodes share; by Redis CPU per "
        f"article, with a core per primary, three would serve {s['three_over_one_capacity']:.2f}× "
        "one's articles/s",
        f"replica wait, many namespaces: {s['wait1_over_wait0_articles_per_s']:.2f}× the "
        "articles/s of no wait",
        f"replica wait, one tenant alone: batch p50 "
        f"{s['lone_wait1']['batch_latency_ms']['p50']:.1f} ms vs "
        f"{s['lone_wait0']['batch_latency_ms']['p50']:.1f} ms "
        f"({s['lone_wait1_minus_wait0_p50_ms']:+.1f} ms per batch of "
        f"{result['method']['batch']}), {s['lone_wait1_over_wait0_articles_per_s']:.2f}× the "
        "articles/s",
        f"`WAIT 1 1000` alone after a small write (300 interleaved pairs, on "
        f"{c['primary']}, loopback): p50 {w['wait_p50_ms']:.3f} ms, p99 {w['wait_p99_ms']:.3f}, "
        f"against p50 {w['ping_p50_ms']:.3f}, p99 {w['ping_p99_ms']:.3f} for `PING`: "
        f"{w['added_p50_ms']:+.2f} ms per batch at the median",
    ]
    for label, key in (("without the replica wait", "three"), ("wait_replicas=1", "three_wait1")):
        cpu_s = s[key]["redis_cpu_ms_per_article"] / 1000
        need = ", ".join(
            f"{n:,} articles/s -> {math.ceil(n * cpu_s / HEADROOM)}" for n in PLAN_LOADS
        )
        lines.append(f"primaries at {HEADROOM:.0%} of a core each, {label}: {need}")
    return lines


def print_tables(result: Mapping[str, Any]) -> None:
    """The report on the console."""
    print(markdown(result))


def markdown(result: Mapping[str, Any]) -> str:
    m, meth, c, s = result["machine"], result["method"], result["ceiling"], result["summary"]
    base, ch = s["one"]["articles_per_s"], result["checks"]
    best = [
        {**_row(s[k]), "vs_one": s[k]["articles_per_s"] / base}
        for k in ("one", "three", "three_wait1")
    ]
    tenants = ", ".join(
        f"{p}: {n}" for p, n in sorted(Counter(x["primary"] for x in result["tenants"]).items())
    )
    return report(
        [
            heading(TITLE, "python -m bench cluster", result["date"], result["elapsed_s"]),
            [
                f"Code: {code_line(result['git'])}",
                f"Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
                f"{m['platform']}; other processes kept {m['other_load_cores_before']:.2f} cores "
                "busy just before the run; 1-minute load average "
                f"{m['load_average_1m_at_start']:.2f} at start, {m['load_average_1m_at_end']:.2f} "
                "at the end",
                f"Python {m['python']}, neardup {m['neardup']}, redis-py {m['redis']}; Redis "
                f"{m['redis_server']}, every node on loopback on this machine, no persistence",
                "Method: `bench/cluster_bench.py`. **One primary** holds all 16384 slots; **three "
                f"primaries** share them. {meth['namespaces']} namespaces by slot ({tenants}), "
                f"each given {meth['articles_per_namespace']:,} articles ({meth['corpus']}) in "
                f"batches of {meth['batch']}, over {meth['drivers']} driver processes; "
                f"{meth['reps']} interleaved rounds, each setup's best kept",
                "Checks: every tenant's verdicts equal the memory store's in every round: "
                f"{ch['every_tenant_equals_memory']} (the lone tenant's: "
                f"{ch['lone_tenant_equals_memory']}); every article decided: "
                f"{ch['articles_all_decided']}",
            ],
            "## Many namespaces: one primary vs three",
            data_table(MAIN, best),
            "Cores used = CPU s / wall s; ceiling = 1 / CPU per article (at partial load: "
            "conservative); (others') = other work's; GETKEYS = the client asking a primary for "
            "an `FCALL`'s keys (calls go to their primary by name: none).",
            "## The per-namespace ceiling",
            f"One namespace ({c['namespace']}) is one slot ({c['slot']}), so one primary "
            f"({c['primary']}): driven by {c['streams']} concurrent engine tasks, "
            f"{c['articles']:,} articles ran at {c['articles_per_s']:,.0f} articles/s with its "
            f"primary at {c['primary_cores'][c['primary']]:.2f} of a core and "
            f"{c['namespace_primary_cpu_ms_per_article']:.4f} ms of its CPU per article: a "
            f"ceiling of **{s['namespace_ceiling_articles_per_s']:,.0f} articles/s** (1 / CPU per "
            f"article). Client CPU {c['client_cpu_ms_per_article']:.3f} ms/article; machine "
            f"cores busy {c['machine_cores_busy']:.2f} ({max(0.0, c['other_cores_busy']):.2f}).",
            "## Sizing",
            sizing_lines(result),
            "## Every round",
            f"One tenant alone = one engine task, {meth['lone_articles']:,} articles, batch "
            "latency without queueing for a core. The machine is shared with other work: "
            "articles/s move from run to run; CPU per article much less.",
            data_table(ROUNDS, map(_row, [*result["runs"], *result["lone"]])),
            *_sharded_section(result),
        ]
    )


def _sharded_section(result: Mapping[str, Any]) -> list[Any]:
    if "sharded_summary" not in result:  # (a result from before the sharded runs)
        return []
    meth = result["method"]
    return [
        f"## One namespace sharded over 1, 3 and 6 primaries ({meth['shards']} shard groups)",
        f"Clusters of 1, 3 and 6 primaries without replicas, one at a time; one namespace driven "
        f"by {meth['ceiling_streams']} engine tasks over {meth['drivers']} driver processes "
        f"({meth['ceiling_articles']:,} articles), single-slot and in {meth['shards']} shard "
        f"groups (`shards = {meth['shards']}`); {meth['reps']} rounds, the best kept. A "
        "primary runs one command thread: the namespace's ceiling is 1 / its busiest "
        "primary's CPU per article (* marks the home primary, which holds the counter).",
        data_table(SHARDED, map(_sharded_row, result["sharded_summary"])),
        sharded_lines(result),
    ]
