"""The command benchmark's report, ``command.md``, from the result :mod:`bench.command_bench`
writes."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.markdown import code_line, heading, table
from harness.workers import NEARDUP


def _met(t: Mapping[str, Any]) -> str:
    return "**met**" if t["met"] else "**missed**"


def _per_doc(row: Mapping[str, Any]) -> str:
    return ", ".join(f"{b / row['docs']:,.0f}" for b in row["redis_used_memory_delta"])


def results_table(r: Mapping[str, Any]) -> str:
    head = [
        "system",
        "store",
        "docs",
        "best wall s",
        "docs/s",
        "vs datasketch",
        "CPU s",
        "CPU ms/doc",
        "flagged",
        "Redis B/doc",
        "Redis keys/doc",
        "Redis CPU ms/doc",
    ]
    cells = []
    for row in r["rows"]:
        ratio = row.get("vs_datasketch")
        redis_cells = (
            [
                f"{row['redis_bytes_per_doc']:,.0f}",
                f"{row['redis_keys_per_doc']:.2f}",
                f"{row['redis_cpu_ms_per_doc']:.3f}",
            ]
            if "redis_bytes_per_doc" in row
            else ["—", "—", "—"]
        )
        cells.append(
            [
                row["system"],
                row["store"],
                f"{row['docs']:,}",
                f"{row['best_wall_s']:.2f}",
                f"{row['docs_per_s']:,.0f}",
                f"{ratio:.2f}×" if ratio is not None else "1.00 (base)",
                f"{row['best_cpu_s']:.2f}",
                f"{row['cpu_ms_per_doc']:.3f}",
                "—" if row["flagged"] is None else f"{row['flagged']:,}",
                *redis_cells,
            ]
        )
    return table(head, cells)


_TARGET_FORMATS = {
    "memory_5x": "{:.2f}×",
    "redis_20x": "{:.2f}×",
    "redis_bytes": "{:,.0f} B/doc",
    "redis_growing_bytes": "{:,.0f} B/doc",
    "startup": "{:.3f} s",
}


def targets_table(r: Mapping[str, Any]) -> str:
    """The targets in :data:`TARGETS` order (those a result does not hold, from an older run,
    left out)."""
    t = r["targets"]
    rows = [
        [t[k]["what"], fmt.format(t[k]["measured"]), _met(t[k])]
        for k, fmt in _TARGET_FORMATS.items()
        if k in t
    ]
    return table(["target", "measured", "met?"], rows)


def breakdown_section(r: Mapping[str, Any]) -> list[str]:
    """The ``## Redis memory by key kind`` section (none for a result without a breakdown)."""
    row = next((x for x in r["rows"] if x["key"] == "nd_redis"), None)
    b = row.get("redis_breakdown") if row else None
    if not b:
        return []
    docs = b["docs"]
    cells = [
        [
            f"`{k['kind']}`",
            f"{k['keys']:,}",
            f"{k['bytes_per_doc']:,.0f}",
            f"{100 * k['share']:.1f}%",
            k["meaning"],
        ]
        for k in b["kinds"]
    ]
    cells += [
        [
            "all keys",
            f"{b['keys']:,}",
            f"{b['memory_usage_bytes_per_doc']:,.0f}",
            "100%",
            "the sum of MEMORY USAGE",
        ],
        [
            "not in a key",
            "",
            f"{b['unattributed_bytes'] / docs:,.0f}",
            "",
            "`used_memory` delta − the sum (the keyspace's own tables, allocator rounding, "
            "the server's buffers)",
        ],
        [
            "`used_memory` delta",
            "",
            f"{b['used_memory_delta'] / docs:,.0f}",
            "",
            "the Redis B/doc of the results",
        ],
    ]
    kinds = table(["kind", "keys", "B/doc", "share", "meaning"], cells, text=(0, 4))
    lc = b["line_counts"]
    cap = lc["boilerplate_lines"]
    ns = max(lc["namespaces"], 1)
    bound = 2 * cap * ns
    return [
        "## Redis memory by key kind",
        "",
        f"neardup's keys after its last Redis run ({docs:,} documents), before the FLUSHALL that "
        "follows it: every key (`SCAN`, COUNT 1000) with `MEMORY USAGE key SAMPLES 0` (every "
        "element counted), summed by kind, the third colon-separated part of the name "
        "(`nd:{ns}:<kind>` or `nd:{ns}:<kind>:<shard hex>`, see `stream/index/redis/keys.py`; "
        "`nd:namespaces` and `nd:aliases` by their second part; keys not starting with `nd:` "
        "under other). "
        "Share = of the sum of MEMORY USAGE.",
        "",
        kinds,
        "",
        f"Bytes per document without the line counts: "
        f"**{b['bytes_per_doc_without_line_counts']:,.0f}** (the `used_memory` delta less the "
        "`l` keys' MEMORY USAGE, over the documents; "
        f"{b['memory_usage_bytes_per_doc_without_line_counts']:,.0f} of keys' own MEMORY USAGE), "
        f"against {b['used_memory_delta'] / docs:,.0f} with them. The line counts are bounded per "
        f"namespace: two generations (`nd:{{ns}}:l:a`, `nd:{{ns}}:l:b`), each holding up to "
        f"`boilerplate_lines` = {cap:,} line keys (past that the current one becomes the "
        f"previous and the one before is dropped), so 2 × {cap:,} line keys per namespace "
        f"whatever the corpus size (here {lc['line_keys']:,} line keys "
        f"in {lc['keys']:,} hash{'es' if lc['keys'] != 1 else ''}, {ns:,} "
        f"namespace{'s' if ns != 1 else ''}: {100 * lc['line_keys'] / bound:.1f}% of the bound; "
        "until it is reached they grow by the new lines documents bring). Their share per "
        "document therefore falls as an index grows, while the rest (records, buckets, content "
        "slots, verdicts, times, ids, clusters) grows with the documents.",
        "",
    ]


def profile_section(r: Mapping[str, Any]) -> list[str]:
    """The section on where the profiled memory run's samples went (none for an older result
    without a profile; the reason for a skipped one)."""
    p = r.get("profile")
    if not p:
        return []
    title = "## Where `neardup dedup` spends its time (memory, newswire)"
    if "skipped" in p:
        return [title, "", f"Profile skipped: {p['skipped']}.", ""]
    hz, docs = p["hz"], r["corpus"]["docs"]
    parts = [
        [x["part"], f"{x['samples']:,}", f"{x['pct']:.1f}%", f"{x['seconds']:.2f}"]
        for x in p["parts"]
    ]
    parts.append(["all samples", f"{p['samples']:,}", "100%", f"{p['seconds']:.2f}"])
    parts_table = table(["part", "samples", "% of samples", "seconds"], parts)
    leaves = [
        [
            f"`{x['function']}`",
            x["part"],
            f"{x['samples']:,}",
            f"{x['pct']:.1f}%",
            f"{x['seconds']:.2f}",
        ]
        for x in p["top_leaves"]
    ]
    leaves_table = table(
        ["function", "part", "samples", "% of samples", "seconds"], leaves, text=(0, 1)
    )
    slower = p["wall_s"] / p["best_timed_wall_s"] if p["best_timed_wall_s"] else float("nan")
    return [
        title,
        "",
        f"One more neardup memory run on the {docs:,} stories after the timed ones, under "
        f"`{p['command']}` (the venv's python running the `neardup` console script). "
        f"{p['samples']:,} samples = {p['seconds']:.2f} s at {hz} Hz (without `--idle` py-spy "
        "keeps only samples of a running or runnable thread, so the seconds are close to CPU "
        "time). A sample goes to a part of `harness.profile.DEDUP_PARTS` "
        "(`harness.profile.attribute_command`; frames' files relative to site-packages, the "
        "repository or the standard library): start-up takes every sample with a frame of the "
        "import system (`<frozen importlib…>`: imports and the module-level code they run, "
        "wherever the module is) or of the policy's set-up (`Policy.__post_init__`: banding "
        "parameters, once), and the script's own module-level code; the boilerplate pass "
        "(`sketch/lines.py`, `stream/engine/boilerplate.py`, "
        "`MemoryIndex.line_counts/add_lines`) every sample with one of its frames; any other "
        "sample goes to the part of its deepest frame that belongs to one, so frames of no "
        "part (numpy, `re`, dataclasses' `__init__`) count for their caller: numpy called "
        "from `sketch/` is sketches. Samples with no Python frame are the interpreter starting "
        "(before `site`) or finalising at exit.",
        "",
        parts_table,
        "",
        f"Profiled run: {p['wall_s']:.2f} s wall clock (py-spy's start and exit included), "
        f"against {p['best_timed_wall_s']:.2f} s for the best timed run (profiled / timed = "
        f"{slower:.2f}×; py-spy pauses the process for each sample). The top "
        f"{len(p['top_leaves'])} leaf functions (own time: the sample's last frame):",
        "",
        leaves_table,
        "",
    ]


def _peer(r: Mapping[str, Any]) -> str:
    """How the datasketch program was run, without its arguments."""
    row = next(x for x in r["rows"] if x["key"] == "ds_mem")
    return str(row["command"]).split(" corpus.jsonl", 1)[0]


def startup_tables(r: Mapping[str, Any]) -> tuple[str, str]:
    s = r["startup"]
    runs = [
        ("`neardup dedup one.jsonl --store memory --no-progress -o /dev/null`", s["neardup"]),
        (
            f"datasketch program on the same file (`{_peer(r)} one.jsonl /dev/null`)",
            s["datasketch_program"],
        ),
        ("`python -c pass` (the interpreter's floor)", s["python_pass"]),
    ]
    rows = [[name, str(t["runs"]), f"{t['median_s']:.3f}", f"{t['min_s']:.3f}"] for name, t in runs]
    imports = [
        [
            f"`{i['module']}`",
            str(i["depth"]),
            f"{i['cumulative_us'] / 1000:.1f}",
            f"{i['self_us'] / 1000:.1f}",
        ]
        for i in s["importtime"]["top_cumulative"]
    ]
    return (
        table(["command", "runs", "median s", "min s"], rows),
        table(["module", "depth", "cumulative ms", "self ms"], imports),
    )


def markdown(r: Mapping[str, Any]) -> str:
    m, c, s, red = r["machine"], r["corpus"], r["startup"], r["redis"]
    rows = {row["key"]: row for row in r["rows"]}
    runs_table, imports_table = startup_tables(r)
    it = s["importtime"]
    floor = s["python_pass"]["median_s"]
    nd_up = s["neardup"]["median_s"]
    rest = it["wall_s"] - floor - it["total_self_s"]
    top_level = ", ".join(
        f"`{i['module']}` {i['cumulative_us'] / 1000:.0f} ms" for i in it["top_level"][:5]
    )
    nd_mem = rows["nd_mem"]
    own = nd_mem["summary"].get("docs_per_s")
    own_rate = (
        f" neardup's own summary (processing only, after start-up): {own:,} docs/s in memory, "
        f"{rows['nd_redis']['summary'].get('docs_per_s', 0):,} docs/s on Redis."
        if own
        else ""
    )
    lines = [
        *heading(
            "Command benchmark: `neardup dedup` as a user runs it, beside a datasketch program",
            r["command"],
            r["generated"],
            r["seconds"],
        ),
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, {m['platform']}; other "
        f"processes kept {m['cores_busy_before_run']:.2f} cores busy before the run; 1-minute "
        f"load average {m['load_average_1m_at_start']:.2f} at start, "
        f"{m['load_average_1m_at_end']:.2f} at the end",
        f"- Python {m['python']}, neardup {m['neardup']}, datasketch {m['datasketch']}, numpy "
        f"{m['numpy']}, scipy {m['scipy']}, redis-py {m['redis']}, typer {m['typer']}, rich "
        f"{m['rich']}; {red['redis_binary']} {red['redis_version']} on loopback (default config, "
        f"{red['redis_config']})",
        f"- Code: {code_line(r['git'])}",
        f"- Corpus: `harness.data.reuters()`, {c['docs']:,} Reuters-21578 stories in wire order "
        f"(median {c['median_chars']:,.0f} chars, mean {c['mean_chars']:,.0f}), written as JSON "
        f'lines `{{"id", "text"}}` ({c["bytes"] / 1e6:.1f} MB); the Redis runs take the first '
        f"{c['redis_docs']:,}",
        f"- Timing: wall clock (`time.perf_counter`) from spawning a process to reaping it, "
        f"start-up included; best of {r['reps']} runs per command, the two sides alternated, "
        "after one untimed run of each on a one-line file; CPU = the child's user + system time "
        "from `os.wait4` (Redis server excluded); Redis B/doc = (`used_memory` after "
        "− before) / docs, FLUSHALL before every run",
        f"- Checks: the datasketch program's shingles equal `harness.corpus.peer_shingles` on "
        f"{c['docs'] - r['checks']['peer_shingles_mismatched_docs']:,} of {c['docs']:,} "
        "documents; every run decided every line (neardup's summary, the program's count)",
        "",
        "## Results",
        "",
        results_table(r),
        "",
        "vs datasketch = datasketch's best wall clock / neardup's, same store (docs/s ratio). "
        "flagged = documents neardup called `near_duplicate` or `duplicate` (verified by exact "
        "Jaccard) / documents with any datasketch LSH candidate (unverified). "
        f"CPU vs datasketch: {nd_mem['cpu_vs_datasketch']:.2f}× less in memory, "
        f"{rows['nd_redis']['cpu_vs_datasketch']:.2f}× less on Redis (client side).{own_rate} "
        f"Redis B/doc is the last run's; over the runs: neardup {_per_doc(rows['nd_redis'])}, "
        f"datasketch {_per_doc(rows['ds_redis'])}.",
        "",
        *breakdown_section(r),
        *profile_section(r),
        "## Targets",
        "",
        targets_table(r),
        "",
        "## Start-up",
        "",
        runs_table,
        "",
        f"`python -X importtime` of one more neardup one-line run ({it['wall_s']:.3f} s; the "
        f"median above is {nd_up:.3f} s): {it['modules']} modules imported, "
        f"{it['total_self_s']:.3f} s of imports (the sum of their own times, those imported "
        "lazily while the command runs included), "
        f"{100 * it['total_self_s'] / it['wall_s']:.0f}% of that run; the interpreter's floor "
        f"{floor:.3f} s; everything else (argument parsing, the one document, the summary) "
        f"~{rest:.3f} s. Top-level imports: {top_level}. The top "
        f"{len(it['top_cumulative'])} by cumulative time (depth = nesting, 0 = imported by the "
        "script itself or lazily):",
        "",
        imports_table,
        "",
        "## Setup: what each side ran",
        "",
        f"- neardup, memory: `{rows['nd_mem']['command']}`, the `neardup` console script of the "
        f"venv (`{NEARDUP.name}` beside `{Path(sys.executable).name}`), default policy "
        "(threshold 0.8, 128 MinHash values, recall-floor banding, SimHash tables, exact "
        "verification of every candidate, one verdict line per document).",
        f"- datasketch, memory: `{rows['ds_mem']['command']}`, with the program below: per "
        "document in order, `MinHash(num_perm=128)` updated (`update_batch`) with its word "
        "3-shingles, `lsh.query(m)`, then `lsh.insert(id, m)` on `MinHashLSH(threshold=0.8, "
        "num_perm=128)`, one JSON line (id, candidates) per document.",
        f"- neardup, Redis: `{rows['nd_redis']['command']}` on the first {c['redis_docs']:,} "
        "stories; its FUNCTION library was loaded by an untimed run before (FLUSHALL keeps it).",
        f"- datasketch, Redis: `{rows['ds_redis']['command']}`: the same program with "
        "`storage_config={'type': 'redis', 'redis': {'host': '127.0.0.1', 'port': PORT}}` as "
        "datasketch's documentation shows it, query then insert per document.",
        "- Redis: one server from `harness.services.start_redis` for both sides, FLUSHALL before "
        "each run, stopped at the end.",
        "",
        f"The datasketch program, run as `{_peer(r)} CORPUS OUTPUT [HOST:PORT]`:",
        "",
        "```python",
        r["peer_program"].rstrip(),
        "```",
        "",
        "The machine is shared (other work may run at the same time, see the load figures): wall "
        "clock varies from run to run, CPU seconds much less.",
        "",
    ]
    return "\n".join(lines)
