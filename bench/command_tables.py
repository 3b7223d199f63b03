"""The command benchmark's report, ``command.md``, from the result :mod:`bench.command_bench`
writes; its method is that module's docstring."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.markdown import code_line, data_table, heading, num, report

RESULTS = (
    "system={system} | store={store} | docs={docs:,} | best wall s={best_wall_s:.2f} | "
    "docs/s={docs_per_s:,.0f} | vs datasketch={vs} | CPU s={best_cpu_s:.2f} | "
    "CPU ms/doc={cpu_ms_per_doc:.3f} | flagged={flagged:,} | "
    "Redis B/doc={redis_bytes_per_doc:,.0f} | Redis keys/doc={redis_keys_per_doc:.2f} | "
    "Redis CPU ms/doc={redis_cpu_ms_per_doc:.3f}"
)
PARTS = "samples={samples:,} | % of samples={pct:.1f}% | seconds={seconds:.2f}"


def results_table(r: Mapping[str, Any]) -> str:
    vs = [x.get("vs_datasketch") for x in r["rows"]]
    vs = ["1.00 (base)" if v is None else f"{v:.2f}×" for v in vs]
    return data_table(RESULTS, [{**x, "vs": v} for x, v in zip(r["rows"], vs, strict=True)])


def targets_table(r: Mapping[str, Any]) -> str:
    """The targets in :data:`TARGETS` order, each measured figure formatted by its bound's kind."""
    formats = {"min": "{:.2f}×", "max": "{:,.0f} B/doc", "below": "{:.3f} s"}
    rows = [
        {**t, "value": next(f for b, f in formats.items() if b in t).format(t["measured"])}
        | {"state": "met" if t["met"] else "missed"}
        for t in r["targets"].values()
    ]
    return data_table("target={what} | measured={value} | met?=**{state}**", rows)


def breakdown(r: Mapping[str, Any]) -> list[str]:
    """Redis memory by key kind, after neardup's last Redis run."""
    b = next(x for x in r["rows"] if x["key"] == "nd_redis")["redis_breakdown"]
    docs, lc = b["docs"], b["line_counts"]
    cap, ns = lc["boilerplate_lines"], max(lc["namespaces"], 1)
    return [
        "## Redis memory by key kind",
        f"neardup's keys after its last Redis run ({docs:,} documents): `MEMORY USAGE key SAMPLES "
        "0` of every key (`SCAN`, COUNT 1000), summed by kind (`nd:{ns}:<kind>[:<shard hex>]`); "
        "share = of the sum of MEMORY USAGE.",
        data_table(
            "kind=`{kind}` | keys={keys:,} | B/doc={bytes_per_doc:,.0f} | share={share:.1%} | "
            "meaning={meaning}",
            b["kinds"],
            text=(0, 4),
        ),
        f"All keys: {b['keys']:,}, {b['memory_usage_bytes_per_doc']:,.0f} B/doc; not in a key "
        f"(`used_memory` delta − the sum): {b['unattributed_bytes'] / docs:,.0f} B/doc. "
        f"Without the line counts: **{b['bytes_per_doc_without_line_counts']:,.0f}** B/doc "
        f"({b['memory_usage_bytes_per_doc_without_line_counts']:,.0f} of keys' own MEMORY "
        f"USAGE). The line counts are bounded: 2 generations × `boilerplate_lines` = {cap:,} line "
        f"keys per namespace (here {lc['line_keys']:,} in hashes: {lc['keys']:,}, namespaces: "
        f"{ns:,}; {100 * lc['line_keys'] / (2 * cap * ns):.1f}% of the bound), so their share per "
        "document falls as an index grows.",
    ]


def profile(
    p: Mapping[str, Any],
    head: str = "## Where `neardup dedup` spends its time (memory, newswire)",
    subject: str = "",
) -> list[str]:
    """Where a profiled memory run's samples went (:func:`bench.command_bench.profile_memory`);
    ``subject``: what it ran on."""
    if "skipped" in p:
        return [head, f"Profile skipped: {p['skipped']}."]
    slower = p["wall_s"] / p["best_timed_wall_s"] if p["best_timed_wall_s"] else float("nan")
    return [
        head,
        f"One more memory run on {subject} under `{p['command']}`: "
        f"{p['samples']:,} samples = {p['seconds']:.2f} s at {p['hz']} Hz, each given to a part "
        "of `harness.profile.DEDUP_PARTS`.",
        data_table(
            f"part={{part}} | {PARTS}",
            [*p["parts"], {"part": "all samples", "pct": 100, **p}],
        ),
        f"Profiled run: {p['wall_s']:.2f} s wall clock, against {p['best_timed_wall_s']:.2f} s "
        f"for the best timed run ({slower:.2f}×). The top {len(p['top_leaves'])} leaf functions "
        "(own time):",
        data_table(f"function=`{{function}}` | part={{part}} | {PARTS}", p["top_leaves"], (0, 1)),
    ]


def markdown(r: Mapping[str, Any]) -> str:
    m, c, s, red = r["machine"], r["corpus"], r["startup"], r["redis"]
    rows = {row["key"]: row for row in r["rows"]}
    it, floor = s["importtime"], s["python_pass"]["median_s"]
    peer = str(rows["ds_mem"]["command"]).split(" corpus.jsonl", 1)[0]
    names = (
        "`neardup dedup one.jsonl --store memory --no-progress -o /dev/null`",
        f"datasketch program on the same file (`{peer} one.jsonl /dev/null`)",
        "`python -c pass` (the interpreter's floor)",
    )
    runs = zip(names, (s["neardup"], s["datasketch_program"], s["python_pass"]), strict=True)
    own = [num(rows[k]["summary"].get("docs_per_s"), ",") for k in ("nd_mem", "nd_redis")]
    over_runs = {
        k: ", ".join(f"{b / rows[k]['docs']:,.0f}" for b in rows[k]["redis_used_memory_delta"])
        for k in ("nd_redis", "ds_redis")
    }
    title = "Command benchmark: `neardup dedup` as a user runs it, beside a datasketch program"
    return report(
        [
            heading(title, r["command"], r["generated"], r["seconds"]),
            [
                f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, {m['platform']}; "
                f"other processes kept {m['cores_busy_before_run']:.2f} cores busy before the "
                f"run; 1-minute load average {m['load_average_1m_at_start']:.2f} at start, "
                f"{m['load_average_1m_at_end']:.2f} at the end",
                f"Python {m['python']}, neardup {m['neardup']}, datasketch {m['datasketch']}, "
                f"numpy {m['numpy']}, scipy {m['scipy']}, redis-py {m['redis']}, typer "
                f"{m['typer']}, rich {m['rich']}; {red['redis_binary']} {red['redis_version']} on "
                f"loopback (default config, {red['redis_config']})",
                f"Code: {code_line(r['git'])}",
                f"Method: `bench/command_bench.py`; best of {r['reps']} runs per command, start-up "
                f"included. Corpus: `{c['source']}`, {c['docs']:,} Reuters-21578 stories (median "
                f"{c['median_chars']:,.0f} chars, mean {c['mean_chars']:,.0f}; "
                f"{c['bytes'] / 1e6:.1f} MB); the Redis runs take the first {c['redis_docs']:,}; "
                "neardup's default policy (threshold 0.8, 128 MinHash values)",
                "Checks: the datasketch program's shingles equal `harness.corpus.peer_shingles` on "
                f"{c['docs'] - r['checks']['peer_shingles_mismatched_docs']:,} of {c['docs']:,} "
                "documents; every run decided every line",
            ],
            "## Results",
            results_table(r),
            "vs datasketch = datasketch's best wall clock / neardup's, same store. flagged = "
            "documents neardup called `near_duplicate` or `duplicate` (verified) / documents "
            "with any datasketch LSH candidate (unverified). `neardup Index.add_many`: the same "
            "job through the library, `bench/library_dedup.py` (the JSON lines read into dicts, "
            "one `add_many` call, a verdict line written per document). CPU vs datasketch: "
            f"{rows['nd_mem']['cpu_vs_datasketch']:.2f}× less in memory, "
            f"{rows['nd_redis']['cpu_vs_datasketch']:.2f}× less on Redis (client side). neardup's "
            f"own summary (processing only, after start-up): {own[0]} docs/s in memory, {own[1]} "
            f"docs/s on Redis. Redis B/doc is the last run's; over the runs: neardup "
            f"{over_runs['nd_redis']}, datasketch {over_runs['ds_redis']}.",
            *breakdown(r),
            *profile(r["profile"], subject=f"the {r['corpus']['docs']:,} stories"),
            "## Targets",
            targets_table(r),
            "## Start-up",
            data_table(
                "command={0} | runs={1[runs]} | median s={1[median_s]:.3f} | min s={1[min_s]:.3f}",
                runs,
            ),
            f"`python -X importtime` of one more neardup one-line run ({it['wall_s']:.3f} s): "
            f"{it['modules']} modules, {it['total_self_s']:.3f} s of imports "
            f"({100 * it['total_self_s'] / it['wall_s']:.0f}% of that run), the floor "
            f"{floor:.3f} s, everything else ~{it['wall_s'] - floor - it['total_self_s']:.3f} s. "
            "Top-level imports: "
            + ", ".join(
                f"`{i['module']}` {i['cumulative_us'] / 1000:.0f} ms" for i in it["top_level"][:5]
            )
            + f". The top {len(it['top_cumulative'])} by cumulative time (depth 0 = imported "
            "by the script or lazily):",
            data_table(
                "module=`{module}` | depth={depth} | cumulative ms={ms:.1f} | self ms={self:.1f}",
                [
                    {**i, "ms": i["cumulative_us"] / 1000, "self": i["self_us"] / 1000}
                    for i in it["top_cumulative"]
                ],
            ),
            "## What each side ran",
            [f"{x['system']}, {x['store']}: `{x['command']}`" for x in r["rows"]],
            f"The datasketch program, run as `{peer} CORPUS OUTPUT [HOST:PORT]`:",
            f"```python\n{r['peer_program'].rstrip()}\n```",
        ]
    )
