"""The guarantee benchmark's report, ``guarantee.md``, from the result :mod:`bench.guarantee_bench`
writes; its method is that module's docstring."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.guarantee_bench import GUARANTEES
from bench.markdown import data_table, report

PHASES = (
    "round={round} | guarantee={guarantee} | articles/s={rate:,.0f} | "
    "worker CPU ms/article={worker_cpu_ms_per_article:.3f} | "
    "broker CPU ms/article={broker_cpu_ms_per_article:.3f} | "
    "other processes (cores)={other_processes_cores} | repeated verdicts={repeated_verdicts}"
)
KILLS = (
    "guarantee={guarantee} | articles={articles} | kills (s after start)={kills} | "
    "verdicts read={verdicts_read_committed} | articles with a verdict={articles_with_a_verdict} "
    "| with 2+ verdicts={articles_with_two_or_more} | "
    "groups without one original={groups_without_one_original}"
)


def noise(phases: Sequence[dict[str, Any]]) -> str:
    """Whether the two guarantees' rates overlap: on a shared machine the rate follows the other
    processes' load, and a ratio of overlapping ranges is not a difference."""
    rates = [[p["rate"] for p in phases if p["guarantee"] == g] for g in GUARANTEES]
    if not all(rates):
        return ""
    (a0, a1), (e0, e1) = ((min(r), max(r)) for r in rates)
    ranges = f"at_least_once {a0:,.0f}-{a1:,.0f}, exactly_once {e0:,.0f}-{e1:,.0f} articles/s"
    if a0 <= e1 and e0 <= a1:
        return f"The rates overlap ({ranges}): the ratio is noise; CPU per article is steadier."
    return f"The rates do not overlap ({ranges})."


def markdown(result: dict[str, Any]) -> str:
    s, setup = result["summary"], result["setup"]
    ratio, cpu_ratio = s["exactly_once_over_at_least_once"], s["worker_cpu_exactly_over_least"]
    med, cpu = s["median_rate"], s["median_worker_cpu_ms_per_article"]
    phases = [{**p, "round": int(p["phase"][1]) + 1} for p in result["phases"]]
    kills = [{**k, "kills": ", ".join(map(str, k["killed_at_s"]))} for k in result["kills"]]
    return report(
        [
            "# Processing guarantee: at_least_once vs faust's exactly_once (Apache Kafka)",
            f"`{setup['command']}`, {result['generated']}, {result['seconds']:.0f} s; "
            f"{setup['docs']:,} articles per throughput phase, {setup['partitions']} partitions, "
            f"one worker (batch {setup['batch_size']}), Apache Kafka {setup['kafka']}; other "
            f"processes kept {result['machine']['cores_busy_before_run']} cores busy before the "
            "run. Method: `bench/guarantee_bench.py`.",
            "## Throughput (one worker)",
            data_table(PHASES, phases),
            f"Medians: at_least_once {med['at_least_once']:,.0f} articles/s, exactly_once "
            f"{med['exactly_once']:,.0f} articles/s: ratio **{ratio:.2f}**; worker CPU per "
            f"article {cpu['at_least_once']:.3f} vs {cpu['exactly_once']:.3f} ms: ratio "
            f"**{cpu_ratio:.2f}**. " + noise(result["phases"])
            if ratio is not None and cpu_ratio is not None
            else None,
            "## SIGKILL mid-stream, then a read_committed consumer of the verdicts",
            data_table(KILLS, kills),
            "faust's exactly_once commits the input offsets in Kafka transactions but sends "
            "the verdicts outside them, so a read_committed consumer sees a replayed batch's "
            "verdicts twice, as with at_least_once.",
        ]
    )
