"""The check benchmark's report, ``check.md``, from the result :mod:`bench.check_bench` writes."""

from __future__ import annotations

from typing import Any

from bench.check_bench import EDITS, WAITING
from bench.markdown import code_line, heading, table

KINDS = {"copies": "near-copies", "fresh": "fresh texts"}


def _ms(x: float) -> str:
    return f"{x:.2f}"


def markdown(r: dict[str, Any]) -> str:
    m, http, loc, fill, t = r["machine"], r["http"], r["in_process"], r["fill"], r["target"]
    paths = [("HTTP `POST /check` (client to worker)", http)]
    paths += [(f"HTTP, {KINDS[k]} only", p) for k, p in http["by_kind"].items()]
    paths += [("in-process `Engine.process` (no HTTP)", loc)]
    paths += [(f"in-process, {KINDS[k]} only", p) for k, p in loc["by_kind"].items()]
    rows = [
        [name, *(_ms(p[k]) for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms"))] for name, p in paths
    ]
    rows.append(
        ["HTTP and faust's web server (difference of the two)"]
        + [_ms(http[k] - loc[k]) for k in ("p50_ms", "p90_ms", "p99_ms")]
        + ["—"]
    )
    if t["applies"]:
        verdict = "**met**" if t["met"] else "**missed**"
    else:
        verdict = f"not applicable (this run: {r['docs']:,} articles of ~{r['words']} words)"
    cpu = http["worker_cpu_ms_per_check"]
    prof_rows = [
        [
            f"`{p['function']}`",
            p["calls"],
            f"{p['cum_ms_per_check']:.3f}",
            f"{p['own_ms_per_check']:.3f}",
        ]
        for p in r["profile"]["top"]
    ]
    indexed = ", ".join(f"{ns}: {n:,}" for ns, n in fill["indexed"].items())
    lines = [
        *heading(
            "Check benchmark: `POST /check` latency", r["command"], r["generated"], r["seconds"]
        ),
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; other processes kept "
        f"{m['cores_busy_before_run']:.2f} cores busy before the run",
        f"- Python {m['python']}, neardup {m['neardup']}, faust-streaming {m['faust-streaming']}, "
        f"aiohttp {m['aiohttp']}, redis-py {m['redis']}; {r['redis_binary']} {r['redis_version']} "
        "and a Tansu broker on loopback",
        f"- Code: {code_line(r['git'])}",
        f"- Index: `harness.corpus.generate({r['docs']}, seed=7, words={r['words']})` decided by "
        f"`neardup dedup corpus.jsonl --store redis://… --no-progress -o /dev/null` in "
        f"{fill['seconds']:.1f} s ({fill['docs_per_s']:,.0f} docs/s, start-up included); "
        f"documents indexed: {indexed}",
        f"- Checks: {r['requests']:,} sequential `POST /check` with `register=false` on one "
        f"keep-alive aiohttp connection, after {r['warmup']} warm-up requests; half near-copies "
        f"of indexed documents ({EDITS} words replaced), half fresh texts "
        "(`generate(..., seed=8, dup_rate=0)`); latency = `time.perf_counter` around request and "
        "body read",
        "- Worker: one `neardup worker`, default settings but "
        + ", ".join(f"`{k}={v}`" for k, v in r["worker_env"].items())
        + "; in-process: `Engine(RedisIndex(redis.asyncio client)).process([article], "
        "register=False, explain=True)`, the view's call, on the same Redis",
        "",
        "## Latency",
        "",
        table(["path", "p50 ms", "p90 ms", "p99 ms", "max ms"], rows),
        "",
        f"Target (p50 <= {t['p50_ms']:g} ms, p99 <= {t['p99_ms']:g} ms for a {t['words']}-word "
        f"text at {t['docs']:,} articles, over HTTP): {verdict}.",
        "",
        f"- Copies found: {http['copies_found']:,} of {http['copies_sent']:,} over HTTP, "
        f"{loc['copies_found']:,} of {loc['copies_sent']:,} in-process; fresh texts flagged: "
        f"{http['fresh_flagged']:,} of {http['fresh_sent']:,} (HTTP), {loc['fresh_flagged']:,} "
        "(in-process)",
        f"- Failed answers (not 200 with a `verdict`): {http['failures']} over HTTP, "
        f"{loc['failures']} in-process",
        f"- Redis round trips per check: {loc['redis_round_trips_per_check']:.2f}; worker CPU per "
        f"HTTP check: {'?' if cpu is None else f'{cpu:.2f} ms'}",
        "",
        "## Where the time goes",
        "",
        f"cProfile of {r['profile']['checks']} in-process checks (the profiler slows them), "
        f"top {len(r['profile']['top'])} functions by cumulative time, ms per check; the event "
        "loop's plumbing "
        "(`_run_once`, `Handle._run`, `Context.run`) left out, it wraps everything; a "
        "coroutine's calls count each of its resumptions:",
        "",
        table(["function", "calls", "cumulative ms", "own ms"], prof_rows),
        "",
        *worker_profile_lines(r),
    ]
    return "\n".join(lines)


def worker_profile_lines(r: dict[str, Any]) -> list[str]:
    """The section on the worker's CPU during HTTP checks (py-spy) and while idle."""
    p, idle, http = r["worker_profile"], r["idle_worker"], r["http"]
    cores = idle["cpu_cores"]
    idle_line = (
        f"Idle worker CPU, cores: {'?' if cores is None else f'{cores:.3f}'} (CPU seconds over "
        f"{idle['seconds']:.1f} s with no request: faust polling the input topic and its timers)."
    )
    lines = ["## Where the worker's CPU goes during HTTP checks", ""]
    if "skipped" in p:
        return [*lines, f"py-spy profile skipped: {p['skipped']}.", "", idle_line, ""]
    attach = f" (includes the {p['attach_s']:g} s of attaching)"
    parts = [
        [
            part["part"] + (attach if part["part"] == WAITING else ""),
            f"{part['pct_of_main']:.1f}",
            f"{part['ms_per_check']:.2f}",
        ]
        for part in p["parts"]
    ]
    busy = p["main_busy_ms_per_check"]
    parts.append(["**main thread busy (all but idle)**", f"{p['main_busy_pct']:.1f}", _ms(busy)])
    threads = [
        [
            t["thread"],
            f"{t['samples']:,}",
            f"{t['busy_pct']:.1f}",
            f"{t['busy_ms_per_check']:.2f}",
        ]
        for t in p["threads"]
    ]
    leaves = [
        [
            f"`{leaf['function']}`",
            leaf["part"].split(" (")[0],
            f"{leaf['pct_of_main_busy']:.1f}",
            f"{leaf['ms_per_check']:.3f}",
        ]
        for leaf in p["top_leaves"]
    ]
    lat, cpu = p["latency"], p["worker_cpu_ms_per_check"]
    cpu_timed = http["worker_cpu_ms_per_check"]
    return [
        *lines,
        f"A second HTTP pass of {p['checks']:,} checks (the timed ones above, in order) with "
        f"`{p['command']}` attached to the worker; the timed pass above ran without it. "
        f"{p['samples']:,} samples of all threads; the main thread (the event loop: web server, "
        f"engine, and faust's fetches of the input topic) has {p['main_samples']:,} samples = "
        f"{p['main_seconds']:.1f} s, the {p['checks_seconds']:.1f} s of the checks and "
        f"{p['attach_s']:g} s of attaching before them. A sample counts for the part of its "
        "deepest frame that belongs to a known part (file prefixes relative to site-packages, "
        "the repository or the standard library, `harness.profile.HTTP_CHECK_PARTS`): a view "
        "calling the engine calling `sketch/` calling numpy is sketches; frames of no part "
        "(numpy, orjson, logging, faust's JSON helpers) count for their caller; asyncio's own "
        "frames only when no other part is in the stack. ms per check = samples / "
        f"{p['hz']} Hz / {p['checks']:,} checks. Samples are wall time: a busy one is the loop "
        "running Python code or waiting for a core (the client, Redis and py-spy share the "
        "machine's cores), so the busy ms can exceed the worker's CPU per check.",
        "",
        table(["part (main thread)", "% of main-thread samples", "ms per check"], parts),
        "",
        f"Profiled pass (py-spy pauses the worker for each sample): p50 {_ms(lat['p50_ms'])} ms, "
        f"p99 {_ms(lat['p99_ms'])} ms; worker CPU per check "
        f"{'?' if cpu is None else f'{cpu:.2f} ms'} (unprofiled pass: "
        f"{'?' if cpu_timed is None else f'{cpu_timed:.2f} ms'}); failed answers: "
        f"{p['failures']}.",
        "",
        "Threads (busy: the stack does not end in a wait such as the selector's `select`):",
        "",
        table(["thread", "samples", "busy %", "busy ms per check"], threads),
        "",
        f"Faust consumer thread busy: {p['consumer_thread_busy_pct']:.1f}% of its samples.",
        "",
        f"Top {len(p['top_leaves'])} leaf functions of the main thread (own time; % of its busy "
        "samples):",
        "",
        table(["function", "part", "% of busy", "ms per check"], leaves),
        "",
        idle_line,
        "",
    ]
