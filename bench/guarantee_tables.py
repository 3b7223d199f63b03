"""The guarantee benchmark's report, ``guarantee.md``, from the result :mod:`bench.guarantee_bench`
writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.guarantee_bench import GUARANTEES
from bench.markdown import table


def noise(phases: Sequence[dict[str, Any]]) -> str:
    """Whether the two guarantees' rates overlap: on a shared machine the rate follows the other
    processes' load, and a ratio of overlapping ranges is not a difference."""
    span = {
        g: (min(r), max(r))
        for g in GUARANTEES
        if (r := [p["rate"] for p in phases if p["guarantee"] == g])
    }
    if len(span) < 2:
        return ""
    (a0, a1), (e0, e1) = span["at_least_once"], span["exactly_once"]
    ranges = f"at_least_once {a0:,.0f}-{a1:,.0f}, exactly_once {e0:,.0f}-{e1:,.0f} articles/s"
    if a0 <= e1 and e0 <= a1:
        return (
            f"The rates overlap ({ranges}): the rate ratio is within this run's noise (they "
            "follow the other processes' load, column above); CPU per article is the steadier "
            "figure."
        )
    return f"The rates do not overlap ({ranges})."


def markdown(result: dict[str, Any]) -> str:
    s, setup = result["summary"], result["setup"]
    lines = [
        "# Processing guarantee: at_least_once vs faust's exactly_once (Apache Kafka)",
        "",
        f"`{setup['command']}`, {result['generated']}, {result['seconds']:.0f} s; "
        f"{setup['docs']:,} articles per throughput phase, {setup['partitions']} partitions, "
        f"one worker (batch {setup['batch_size']}), Apache Kafka {setup['kafka']}; other "
        f"processes kept {result['machine']['cores_busy_before_run']} cores busy before the run.",
        "",
        "## Throughput (one worker)",
        "",
        table(
            [
                "round",
                "guarantee",
                "articles/s",
                "worker CPU ms/article",
                "broker CPU ms/article",
                "other processes (cores)",
                "repeated verdicts",
            ],
            [
                [
                    str(int(p["phase"][1]) + 1),
                    p["guarantee"],
                    f"{p['rate']:,.0f}",
                    f"{p['worker_cpu_ms_per_article']:.3f}",
                    f"{p['broker_cpu_ms_per_article']:.3f}",
                    str(p["other_processes_cores"]),
                    str(p["repeated_verdicts"]),
                ]
                for p in result["phases"]
            ],
        ),
        "",
    ]
    ratio, cpu_ratio = s["exactly_once_over_at_least_once"], s["worker_cpu_exactly_over_least"]
    med, cpu = s["median_rate"], s["median_worker_cpu_ms_per_article"]
    if ratio is not None and cpu_ratio is not None:
        lines += [
            f"Medians: at_least_once {med['at_least_once']:,.0f} articles/s, exactly_once "
            f"{med['exactly_once']:,.0f} articles/s: ratio **{ratio:.2f}**; worker CPU per "
            f"article {cpu['at_least_once']:.3f} vs {cpu['exactly_once']:.3f} ms: ratio "
            f"**{cpu_ratio:.2f}**. {noise(result['phases'])}",
            "",
        ]
    lines += [
        "## SIGKILL mid-stream, then a read_committed consumer of the verdicts",
        "",
        table(
            [
                "guarantee",
                "articles",
                "kills (s after start)",
                "verdicts read",
                "articles with a verdict",
                "with 2+ verdicts",
                "groups without one original",
            ],
            [
                [
                    k["guarantee"],
                    str(k["articles"]),
                    ", ".join(str(t) for t in k["killed_at_s"]),
                    str(k["verdicts_read_committed"]),
                    str(k["articles_with_a_verdict"]),
                    str(k["articles_with_two_or_more"]),
                    str(k["groups_without_one_original"]),
                ]
                for k in result["kills"]
            ],
        ),
        "",
        "faust's exactly_once commits the input offsets in Kafka transactions but sends the "
        "verdicts outside them (tests/integration/worker/test_exactly_once.py shows it step "
        "by step), "
        "so a read_committed consumer sees a replayed batch's verdicts twice, as with "
        "at_least_once. The throughput cost above is that of the offset transactions alone.",
        "",
    ]
    return "\n".join(lines)
