"""The cluster benchmark's summary figures and tables: the console summary and ``cluster.md``.

Reads only the result dict :mod:`bench.cluster_bench` writes to ``cluster.json`` (whose
``summary`` :func:`summarise` derives from its rounds).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bench.markdown import code_line, console, table, terminal_table

out_console = console(200)

COMMAND = "python -m bench cluster"
PLAN_LOADS = (10_000, 50_000, 200_000)  # articles/s for the sizing examples
HEADROOM = 0.5  # plan primaries at half a core each


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
    ns_cpu_ms = ceiling["namespace_primary_cpu_ms_per_article"]
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
        "namespace_ceiling_articles_per_s": 1000 / ns_cpu_ms,
    }


def _cores(row: Mapping[str, Any]) -> str:
    return " / ".join(f"{v:.2f}" for v in row["primary_cores"].values())


def _setup_name(row: Mapping[str, Any]) -> str:
    base = {"one": "one primary (1 + 1 replica)", "three": "three primaries (3 + 3 replicas)"}
    return base[row["setup"]] + (f", wait_replicas={row['wait_replicas']}")


_HEAD = [
    "setup",
    "articles",
    "articles/s",
    "vs one primary",
    "Redis CPU ms/article (primaries)",
    "cores used per primary",
    "ceiling per primary, articles/s",
    "replica CPU ms/article",
    "client CPU ms/article",
    "machine cores busy (others')",
    "batch p50 / p95 ms",
    "batches retried",
    "COMMAND GETKEYS per primary",
]


def _row(row: Mapping[str, Any], base: float) -> list[str]:
    lat = row["batch_latency_ms"]
    return [
        _setup_name(row),
        f"{row['articles']:,}",
        f"{row['articles_per_s']:,.0f}",
        f"{row['articles_per_s'] / base:.2f}×",
        f"{row['redis_cpu_ms_per_article']:.4f}",
        _cores(row),
        f"{1000 / row['redis_cpu_ms_per_article']:,.0f}",
        f"{row['replica_cpu_ms_per_article']:.4f}",
        f"{row['client_cpu_ms_per_article']:.3f}",
        _busy(row),
        f"{lat['p50']:.0f} / {lat['p95']:.0f}",
        str(row["retries"]),
        " / ".join(f"{v:,}" for v in row["getkeys_per_primary"].values()),
    ]


def _busy(row: Mapping[str, Any]) -> str:
    return f"{row['machine_cores_busy']:.2f} ({max(0.0, row['other_cores_busy']):.2f})"


def main_rows(result: Mapping[str, Any]) -> list[list[str]]:
    s = result["summary"]
    base = s["one"]["articles_per_s"]
    return [_row(s[k], base) for k in ("one", "three", "three_wait1")]


_CEILING_HEAD = [
    "namespace (slot, primary)",
    "streams",
    "articles",
    "articles/s",
    "its primary's CPU ms/article",
    "its primary's cores used",
    "ceiling articles/s = 1 / CPU per article",
    "client CPU ms/article",
    "machine cores busy (others')",
]


def ceiling_row(result: Mapping[str, Any]) -> list[str]:
    c = result["ceiling"]
    cpu = c["namespace_primary_cpu_ms_per_article"]
    return [
        f"{c['namespace']} ({c['slot']}, {c['primary']})",
        str(c["streams"]),
        f"{c['articles']:,}",
        f"{c['articles_per_s']:,.0f}",
        f"{cpu:.4f}",
        f"{c['primary_cores'][c['primary']]:.2f}",
        f"{1000 / cpu:,.0f}",
        f"{c['client_cpu_ms_per_article']:.3f}",
        _busy(c),
    ]


_LONE_HEAD = [
    "one tenant alone, three primaries",
    "articles",
    "articles/s",
    "batch p50 / p95 / max ms",
    "Redis CPU ms/article",
    "machine cores busy (others')",
    "batches retried",
]


def lone_rows(result: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for key in ("lone_wait0", "lone_wait1"):
        r = result["summary"][key]
        lat = r["batch_latency_ms"]
        rows.append(
            [
                f"wait_replicas={r['wait_replicas']}",
                f"{r['articles']:,}",
                f"{r['articles_per_s']:,.0f}",
                f"{lat['p50']:.0f} / {lat['p95']:.0f} / {lat['max']:.0f}",
                f"{r['redis_cpu_ms_per_article']:.4f}",
                _busy(r),
                str(r["retries"]),
            ]
        )
    return rows


def round_rows(result: Mapping[str, Any]) -> list[list[str]]:
    return [
        [
            str(r["round"]),
            r["workload"],
            _setup_name(r),
            f"{r['articles_per_s']:,.0f}",
            f"{r['redis_cpu_ms_per_article']:.4f}",
            f"{r['client_cpu_ms_per_article']:.3f}",
            _busy(r),
            f"{r['batch_latency_ms']['p50']:.0f}",
            str(r["retries"]),
        ]
        for r in [*result["runs"], *result["lone"]]
    ]


def tenant_line(result: Mapping[str, Any]) -> str:
    per = Counter(t["primary"] for t in result["tenants"])
    return ", ".join(f"{p}: {n}" for p, n in sorted(per.items()))


def sizing_lines(result: Mapping[str, Any]) -> list[str]:
    """Primaries for a load, from the three-primary run's Redis CPU per article."""
    s = result["summary"]
    lines = []
    for label, key in (("without the replica wait", "three"), ("wait_replicas=1", "three_wait1")):
        cpu_s = s[key]["redis_cpu_ms_per_article"] / 1000
        need = ", ".join(
            f"{n:,} articles/s -> {math.ceil(n * cpu_s / HEADROOM)}" for n in PLAN_LOADS
        )
        lines.append(
            f"{label}: {1000 * cpu_s:.4f} ms of primary CPU per article, so one primary tops out "
            f"near {1 / cpu_s:,.0f} articles/s; at {HEADROOM:.0%} of a core each: {need} "
            "primaries"
        )
    return lines


def headline(result: Mapping[str, Any]) -> list[str]:
    s, m, c, w = result["summary"], result["machine"], result["ceiling"], result["wait_probe"]
    return [
        f"three primaries / one primary: {s['three_over_one_articles_per_s']:.2f}× articles/s on "
        f"this {m['cores']}-core machine; Redis CPU per article "
        f"{s['one']['redis_cpu_ms_per_article']:.4f} ms (one primary) vs "
        f"{s['three']['redis_cpu_ms_per_article']:.4f} ms (three, summed), so with a core per "
        f"primary three primaries would serve {s['three_over_one_capacity']:.2f}× one's "
        "articles/s",
        f"per-namespace ceiling: {s['namespace_ceiling_articles_per_s']:,.0f} articles/s "
        f"(1 / {c['namespace_primary_cpu_ms_per_article']:.4f} ms of its primary's CPU per "
        f"article; measured {c['articles_per_s']:,.0f} articles/s with that primary at "
        f"{c['primary_cores'][c['primary']]:.2f} of a core)",
        f"replica wait (wait_replicas=1), many namespaces: "
        f"{s['wait1_over_wait0_articles_per_s']:.2f}× the articles/s of no wait; primary CPU "
        f"per article {s['three_wait1']['redis_cpu_ms_per_article']:.4f} vs "
        f"{s['three']['redis_cpu_ms_per_article']:.4f} ms",
        f"replica wait, one tenant alone: batch p50 "
        f"{s['lone_wait1']['batch_latency_ms']['p50']:.1f} ms vs "
        f"{s['lone_wait0']['batch_latency_ms']['p50']:.1f} ms "
        f"({s['lone_wait1_minus_wait0_p50_ms']:+.1f} ms per batch of "
        f"{result['method']['batch']}), {s['lone_wait1_over_wait0_articles_per_s']:.2f}× the "
        "articles/s",
        f"WAIT 1 itself: a write followed by WAIT 1 takes {w['wait_p50_ms']:.2f} ms (p99 "
        f"{w['wait_p99_ms']:.2f}) against {w['ping_p50_ms']:.2f} ms (p99 {w['ping_p99_ms']:.2f}) "
        f"followed by PING: {w['added_p50_ms']:+.2f} ms per batch at the median, over loopback",
    ]


def print_tables(result: Mapping[str, Any]) -> None:
    meth = result["method"]
    title = (
        f"{meth['namespaces']} namespaces × {meth['articles_per_namespace']:,} articles, "
        f"{meth['drivers']} driver processes, batches of {meth['batch']} (best of {meth['reps']})"
    )
    out_console.print(terminal_table(title, _HEAD, main_rows(result)))
    title = "the per-namespace ceiling: one namespace, one slot, one primary"
    out_console.print(terminal_table(title, _CEILING_HEAD, [ceiling_row(result)]))
    title = "what the replica wait adds to a batch: one tenant, one engine task"
    out_console.print(terminal_table(title, _LONE_HEAD, lone_rows(result)))
    for line in headline(result) + sizing_lines(result):
        out_console.print(line, markup=False, highlight=False)
    ch = result["checks"]
    out_console.print(
        f"checks: every tenant's verdicts equal the memory store's: "
        f"{ch['every_tenant_equals_memory']} (the lone tenant's: "
        f"{ch['lone_tenant_equals_memory']}); every article decided: "
        f"{ch['articles_all_decided']}"
        f"; total {result['elapsed_s']:.0f} s"
    )


def markdown(result: Mapping[str, Any]) -> str:
    m, meth, ch, s = result["machine"], result["method"], result["checks"], result["summary"]
    c, w = result["ceiling"], result["wait_probe"]
    return "\n".join(
        [
            "# Redis Cluster benchmark: one primary vs three, the per-namespace ceiling, the "
            "replica wait",
            "",
            f"Generated by `{COMMAND}` on {result['date']} in {result['elapsed_s']:.0f} s "
            f"({code_line(result['git'])}).",
            "",
            f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
            f"{m['platform']}; other processes kept {m['other_load_cores_before']:.2f} cores "
            f"busy just before the run; 1-minute load average {m['load_average_1m_at_start']:.2f}"
            f" at start, {m['load_average_1m_at_end']:.2f} at the end",
            f"- Python {m['python']}, neardup {m['neardup']}, redis-py {m['redis']}; Redis "
            f"{m['redis_server']}, every node on loopback on this machine, no persistence",
            "- Setups, both up for the whole run and reached the same way (the worker's cluster "
            "client, `neardup.stream.worker.clients.redis_cluster_client`, and `RedisIndex`): "
            "**one primary** = a cluster of one primary holding all 16384 slots plus one replica "
            "(`harness.redis_cluster.start_one_primary`); **three primaries** = three primaries "
            "plus three replicas (`harness.redis_cluster.start_cluster`)",
            f"- Workload: {meth['namespaces']} namespaces (tenants), spread by their slot "
            f"(`CLUSTER KEYSLOT nd:{{ns}}:m`) over the three primaries ({tenant_line(result)}); "
            f"each gets the same {meth['articles_per_namespace']:,} articles ({meth['corpus']}) "
            f"in batches of {meth['batch']}, one engine task per namespace, the namespaces dealt "
            f"over {meth['drivers']} driver **processes** (one cluster client each): one Python "
            "process needs more CPU per article than Redis does, so a single process would "
            "measure the client",
            f"- Rounds: {meth['reps']} × (one primary, three primaries, three primaries with "
            "`wait_replicas=1`), interleaved; the tables keep each setup's best round (all "
            "rounds below)",
            "- Redis CPU: `INFO cpu` used_cpu_user + used_cpu_sys of every node, from the start "
            "signal (after the drivers' warm-up) to the last verdict; per article = the "
            "primaries' CPU / articles; cores used = CPU seconds / wall seconds",
            f"- Checks: every tenant's verdicts equal the memory store's in every round: "
            f"{ch['every_tenant_equals_memory']} (the lone tenant's: "
            f"{ch['lone_tenant_equals_memory']}); every article decided: "
            f"{ch['articles_all_decided']}",
            "",
            "## Many namespaces: one primary vs three",
            "",
            table(_HEAD, main_rows(result)),
            "",
            "Columns: Redis CPU = the primaries' CPU per article (their replicas' apart); cores "
            "used = each primary's CPU seconds / wall seconds; ceiling per primary = 1 / (CPU "
            "seconds per article), the articles/s at which a primary would use a whole core "
            "(measured at partial load, where a primary's fixed cost per event-loop turn is "
            "spread over fewer commands: a conservative figure); client CPU = the driver "
            "processes'; machine cores busy = every process on the machine, (others') = minus "
            "the drivers and the Redis nodes, i.e. other work sharing the machine; batch = one "
            "`Engine.process` of a batch, retries included; batches retried = retriable errors "
            "the drivers retried as the worker does; COMMAND GETKEYS = how often the cluster "
            "client asked each primary for a call's keys (see the replica wait section).",
            "",
            f"**This machine has {m['cores']} cores.** The drivers (client CPU per article "
            "above, more than Redis's) and the Redis nodes share them (machine cores busy ≈ "
            f"{m['cores']}): three primaries cannot run three times as fast here, and the "
            f"articles/s ratio ({s['three_over_one_articles_per_s']:.2f}×) measures the machine, "
            "not the cluster. The capacity argument is the Redis CPU per article: a primary "
            "runs its commands on one thread and saturates at one core, so a primary's ceiling "
            "is 1 / (CPU seconds per article), and spreading the namespaces over three primaries "
            "spreads that CPU (cores used per primary above): with a core for each primary and "
            "the clients elsewhere, three primaries would serve 3 × (one primary's CPU per "
            "article) / (three primaries' CPU per article) = "
            f"{s['three_over_one_capacity']:.2f}× one primary's articles/s.",
            "",
            "## The per-namespace ceiling",
            "",
            "A namespace is one slot (its keys share the hash tag `{ns}`), so one primary serves "
            "it, whatever the cluster's size. Driven as hard as this machine allows: "
            f"{c['streams']} concurrent engine tasks, each with its own documents, into the one "
            "namespace.",
            "",
            table(_CEILING_HEAD, [ceiling_row(result)]),
            "",
            "## What the replica wait costs",
            "",
            "`RedisIndex(wait_replicas=1)` (`NEARDUP_REDIS_WAIT_REPLICAS=1`): after a batch's "
            "registration calls, `WAIT 1` on their connection. The many-namespace rows above "
            "give its cost in articles/s and CPU with the machine saturated (where batch latency "
            "is mostly waiting for a core); here one tenant alone, one engine task, "
            f"{meth['lone_articles']:,} articles in batches of {meth['batch']}, shows what it adds "
            "to each batch:",
            "",
            table(_LONE_HEAD, lone_rows(result)),
            "",
            "Every call about a namespace goes to its primary by name (`target_nodes`, so the "
            "WAIT follows the registration calls on their connection); a cluster client left to "
            "route an `FCALL` itself would first ask a server for the call's keys (`COMMAND "
            "GETKEYS`, the whole call as its argument: the GETKEYS column counts those). The "
            "rows above differ by the noise of a saturated machine. What the `WAIT` itself adds, "
            f"measured alone on {result['ceiling']['primary']} (300 interleaved pairs):",
            "",
            table(
                ["small write, then", "p50 ms", "p99 ms"],
                [
                    ["PING", f"{w['ping_p50_ms']:.3f}", f"{w['ping_p99_ms']:.3f}"],
                    ["WAIT 1 1000", f"{w['wait_p50_ms']:.3f}", f"{w['wait_p99_ms']:.3f}"],
                ],
            ),
            "",
            "## Sizing",
            "",
            *[f"- {line}" for line in headline(result)],
            *[f"- {line}" for line in sizing_lines(result)],
            "",
            "## Every round",
            "",
            table(
                [
                    "round",
                    "workload",
                    "setup",
                    "articles/s",
                    "Redis CPU ms/article",
                    "client CPU ms/article",
                    "machine cores busy (others')",
                    "batch p50 ms",
                    "batches retried",
                ],
                round_rows(result),
            ),
            "",
            "The machine is shared with other work: articles/s move from run to run; CPU per "
            "article much less.",
            "",
        ]
    )
