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
        ]
    )
