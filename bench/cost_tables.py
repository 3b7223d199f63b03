"""The cost benchmark's report, ``cost.md`` (or ``cost_<commit>.md``), from the result
:mod:`bench.cost_bench` writes; its method is that module's docstring."""

from __future__ import annotations

from typing import Any

from bench.markdown import data_table, heading, report

COLUMNS = (
    "store={store} | before instr/doc={before_instructions_per_doc:,.0f} | "
    "now instr/doc={now_instructions_per_doc:,.0f} | change={change:+.1%} | target=<= {limit}: "
    "{state} | Redis server CPU ms/doc, before -> now={server}"
)


def markdown(result: dict[str, Any]) -> str:
    m, c, now, t = result["machine"], result["commits"], result["commits"]["now"], result["target"]
    before, after = "server_cpu_ms_per_doc_before", "server_cpu_ms_per_doc_now"
    rows = [
        {
            **r,
            "limit": f"{t['max_change']:+.0%}",
            "state": "met" if r["met"] else "missed",
            "server": f"{r[before]:.3f} -> {r[after]:.3f}"
            if None not in (r[before], r[after])
            else None,
        }
        for r in result["rows"]
    ]
    changed = ", ".join(f"`{f}`" for f in now["worker_code_changed"])
    state = f"with uncommitted worker code: {changed}" if now["dirty"] else "clean"
    title = "Cost benchmark: engine instructions per document, before and now"
    digest = result["worker_code_digest"]
    return report(
        [
            heading(title, result["command"], result["date"], result["elapsed_s"]),
            [
                f"Before: `{c['before']['ref']}` ({c['before']['commit'][:12]}), "
                f"{t.get('before_is', 'an earlier commit')}; now: the working tree at "
                f"{now['commit'][:12]}, {state}",
                f"Method: `bench/cost_bench.py`: valgrind's instruction count ({m['valgrind']}) "
                f"of `Engine.process` on the first N of `harness.corpus.generate("
                f"{result['docs']}, seed={result['seed']})` in batches of 512 after a "
                "512-document warm-up, minus N = 0, over N (`PYTHONHASHSEED=0`, "
                "`OPENBLAS_NUM_THREADS=1`); on Redis the client's count. Counts repeat to about "
                "0.1% from run to run; the Redis server's CPU (time, "
                f"{m['redis_server']}) is a rough guide",
                f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, numpy "
                f"{m['numpy']}, redis-py {m['redis']}",
            ],
            data_table(COLUMNS, rows),
            f"Target: {t['text']}.",
            "Verdicts with a `duplicate_of` among the N documents, before / now: "
            + "; ".join(f"{r['store']} {r['copies_before']} / {r['copies_now']}" for r in rows)
            + ".",
            "**The working tree's engine code changed during the run.**"
            if digest["start"] != digest["end"]
            else None,
        ]
    )
