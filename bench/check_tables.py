"""The check benchmark's report, ``check.md``, from the result :mod:`bench.check_bench` writes;
its method is that module's docstring."""

from __future__ import annotations

from typing import Any

from bench.check_bench import EDITS, WAITING
from bench.markdown import code_line, data_table, heading, num, report

KINDS = {"copies": "near-copies", "fresh": "fresh texts"}
TITLE = "Check benchmark: `POST /check` latency"
LATENCY = "path={0} | " + " | ".join(f"{k} ms={{1[{k}_ms]:.2f}}" for k in ("p50", "p90", "p99"))
LATENCY += " | max ms={1[max_ms]:.2f}"


def markdown(r: dict[str, Any]) -> str:
    m, http, loc, fill, t = r["machine"], r["http"], r["in_process"], r["fill"], r["target"]
    paths = [("HTTP `POST /check` (client to worker)", http)]
    paths += [(f"HTTP, {KINDS[k]} only", p) for k, p in http["by_kind"].items()]
    paths += [("in-process `Engine.process` (no HTTP)", loc)]
    paths += [(f"in-process, {KINDS[k]} only", p) for k, p in loc["by_kind"].items()]
    diff = {k: http[k] - loc[k] for k in ("p50_ms", "p90_ms", "p99_ms")}
    paths += [("HTTP and faust's web server (difference of the two)", diff)]
    verdict = f"not applicable (this run: {r['docs']:,} articles of ~{r['words']} words)"
    if t["applies"]:
        verdict = "**met**" if t["met"] else "**missed**"
    indexed = ", ".join(f"{ns}: {n:,}" for ns, n in fill["indexed"].items())
    return report(
        [
            heading(TITLE, r["command"], r["generated"], r["seconds"]),
            [
                f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; other processes "
                f"kept {m['cores_busy_before_run']:.2f} cores busy before the run",
                f"Python {m['python']}, neardup {m['neardup']}, faust-streaming "
                f"{m['faust-streaming']}, aiohttp {m['aiohttp']}, redis-py {m['redis']}; "
                f"{r['redis_binary']} {r['redis_version']} and a Tansu broker on loopback",
                f"Code: {code_line(r['git'])}",
                f"Method: `bench/check_bench.py`. Index: `harness.corpus.generate({r['docs']}, "
                f"seed=7, words={r['words']})` decided by `neardup dedup` in "
                f"{fill['seconds']:.1f} s ({fill['docs_per_s']:,.0f} docs/s, start-up included); "
                f"documents indexed: {indexed}",
                f"Checks: {r['requests']:,} sequential `POST /check` with `register=false`, after "
                f"{r['warmup']} warm-up requests; half near-copies ({EDITS} words replaced), half "
                "fresh texts (`generate(..., seed=8, dup_rate=0)`)",
                "Worker: one `neardup worker`, default settings but "
                + ", ".join(f"`{k}={v}`" for k, v in r["worker_env"].items()),
            ],
            "## Latency",
            data_table(LATENCY, paths),
            f"Target (p50 <= {t['p50_ms']:g} ms, p99 <= {t['p99_ms']:g} ms for a {t['words']}-word "
            f"text at {t['docs']:,} articles, over HTTP): {verdict}.",
            [
                f"Copies found: {http['copies_found']:,} of {http['copies_sent']:,} over HTTP, "
                f"{loc['copies_found']:,} of {loc['copies_sent']:,} in-process; fresh texts "
                f"flagged: {http['fresh_flagged']:,} of {http['fresh_sent']:,} (HTTP), "
                f"{loc['fresh_flagged']:,} (in-process)",
                f"Failed answers (not 200 with a `verdict`): {http['failures']} over HTTP, "
                f"{loc['failures']} in-process",
                f"Redis round trips per check: {loc['redis_round_trips_per_check']:.2f}; worker "
                f"CPU per HTTP check: {num(http['worker_cpu_ms_per_check'], '.2f')} ms",
            ],
            "## Where the time goes",
            f"cProfile of {r['profile']['checks']} in-process checks, top "
            f"{len(r['profile']['top'])} functions by cumulative time, ms per check (the event "
            "loop's plumbing left out):",
            data_table(
                "function=`{function}` | calls={calls} | cumulative ms={cum_ms_per_check:.3f} | "
                "own ms={own_ms_per_check:.3f}",
                r["profile"]["top"],
            ),
            *worker_profile(r),
        ]
    )


def worker_profile(r: dict[str, Any]) -> list[str]:
    """The section on the worker's CPU during HTTP checks (py-spy) and while idle."""
    p, idle = r["worker_profile"], r["idle_worker"]
    idle_line = (
        f"Idle worker CPU, cores: {num(idle['cpu_cores'], '.3f')} (CPU seconds "
        f"over {idle['seconds']:.1f} s with no request)."
    )
    blocks = ["## Where the worker's CPU goes during HTTP checks"]
    if "skipped" in p:
        return [*blocks, f"py-spy profile skipped: {p['skipped']}.", idle_line]
    attach = f" (includes the {p['attach_s']:g} s of attaching)"
    parts = [{**x, "part": x["part"] + attach * (x["part"] == WAITING)} for x in p["parts"]]
    leaves = [{**x, "part": x["part"].split(" (")[0]} for x in p["top_leaves"]]
    lat = p["latency"]
    return [
        *blocks,
        f"A second HTTP pass of {p['checks']:,} checks with `{p['command']}` attached to the "
        f"worker: {p['samples']:,} samples of all threads; the main thread (the event loop) has "
        f"{p['main_samples']:,} samples = {p['main_seconds']:.1f} s, the "
        f"{p['checks_seconds']:.1f} s of the checks and {p['attach_s']:g} s of attaching. ms per "
        f"check = samples / {p['hz']} Hz / {p['checks']:,} checks; samples are wall time.",
        data_table(
            "part (main thread)={part} | % of main-thread samples={pct_of_main:.1f} | "
            "ms per check={ms_per_check:.2f}",
            parts,
        ),
        f"Profiled pass: p50 {lat['p50_ms']:.2f} ms, p99 {lat['p99_ms']:.2f} ms; worker CPU per "
        f"check {num(p['worker_cpu_ms_per_check'], '.2f')} ms (unprofiled pass: "
        f"{num(r['http']['worker_cpu_ms_per_check'], '.2f')} ms); failed answers: {p['failures']}.",
        "Threads (busy: the stack does not end in a wait):",
        data_table(
            "thread={thread} | samples={samples:,} | busy %={busy_pct:.1f} | "
            "busy ms per check={busy_ms_per_check:.2f}",
            p["threads"],
        ),
        f"Top {len(p['top_leaves'])} leaf functions of the main thread (own time; % of its busy "
        "samples):",
        data_table(
            "function=`{function}` | part={part} | % of busy={pct_of_main_busy:.1f} | "
            "ms per check={ms_per_check:.3f}",
            leaves,
        ),
        idle_line,
    ]
