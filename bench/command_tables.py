"""The command benchmark's report, ``command.md``, from the result :mod:`bench.command_bench`
writes; its method is that module's docstring."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.markdown import Column, code_line, columns, heading, num, section, table, times

RESULTS: list[Column] = [
    ("system", "system", ""),
    ("store", "store", ""),
    ("docs", "docs", ","),
    ("best wall s", "best_wall_s", ".2f"),
    ("docs/s", "docs_per_s", ",.0f"),
    ("vs datasketch", lambda r: times(r.get("vs_datasketch")).replace("—", "1.00 (base)"), ""),
    ("CPU s", "best_cpu_s", ".2f"),
    ("CPU ms/doc", "cpu_ms_per_doc", ".3f"),
    ("flagged", lambda r: num(r["flagged"], ","), ""),
    ("Redis B/doc", lambda r: num(r.get("redis_bytes_per_doc"), ",.0f"), ""),
    ("Redis keys/doc", lambda r: num(r.get("redis_keys_per_doc"), ".2f"), ""),
    ("Redis CPU ms/doc", lambda r: num(r.get("redis_cpu_ms_per_doc"), ".3f"), ""),
]


def results_table(r: Mapping[str, Any]) -> str:
    return table(*columns(RESULTS, r["rows"]))


def targets_table(r: Mapping[str, Any]) -> str:
    """The targets in :data:`TARGETS` order, each measured figure formatted by its bound's kind."""
    formats = {"min": "{:.2f}×", "max": "{:,.0f} B/doc", "below": "{:.3f} s"}
    rows = []
    for t in r["targets"].values():
        fmt = next(f for bound, f in formats.items() if bound in t)
        rows.append([t["what"], fmt.format(t["measured"]), "**met**" if t["met"] else "**missed**"])
    return table(["target", "measured", "met?"], rows)


def breakdown_section(r: Mapping[str, Any]) -> list[str]:
    """Redis memory by key kind, after neardup's last Redis run."""
    b = next(x for x in r["rows"] if x["key"] == "nd_redis")["redis_breakdown"]
    docs, lc = b["docs"], b["line_counts"]
    cap, ns = lc["boilerplate_lines"], max(lc["namespaces"], 1)
    kinds: list[Column] = [
        ("kind", lambda k: f"`{k['kind']}`", ""),
        ("keys", "keys", ","),
        ("B/doc", "bytes_per_doc", ",.0f"),
        ("share", "share", ".1%"),
        ("meaning", "meaning", ""),
    ]
    return section(
        "Redis memory by key kind",
        f"neardup's keys after its last Redis run ({docs:,} documents): `MEMORY USAGE key SAMPLES "
        "0` of every key (`SCAN`, COUNT 1000), summed by kind (`nd:{ns}:<kind>[:<shard hex>]`); "
        "share = of the sum of MEMORY USAGE.",
        table(*columns(kinds, b["kinds"]), text=(0, 4)),
        f"All keys: {b['keys']:,}, {b['memory_usage_bytes_per_doc']:,.0f} B/doc; not in a key "
        f"(`used_memory` delta − the sum): {b['unattributed_bytes'] / docs:,.0f} B/doc. "
        f"Without the line counts: **{b['bytes_per_doc_without_line_counts']:,.0f}** B/doc "
        f"({b['memory_usage_bytes_per_doc_without_line_counts']:,.0f} of keys' own MEMORY "
        f"USAGE). The line counts are bounded: 2 generations × `boilerplate_lines` = {cap:,} line "
        f"keys per namespace (here {lc['line_keys']:,} in hashes: {lc['keys']:,}, namespaces: "
        f"{ns:,}; {100 * lc['line_keys'] / (2 * cap * ns):.1f}% of the bound), so their share per "
        "document falls as an index grows.",
    )


def profile_section(r: Mapping[str, Any]) -> list[str]:
    """Where the profiled memory run's samples went."""
    p, title = r["profile"], "Where `neardup dedup` spends its time (memory, newswire)"
    if "skipped" in p:
        return section(title, f"Profile skipped: {p['skipped']}.")
    part: list[Column] = [
        ("samples", "samples", ","),
        ("% of samples", lambda x: f"{x['pct']:.1f}%", ""),
        ("seconds", "seconds", ".2f"),
    ]
    parts = columns([("part", "part", ""), *part], p["parts"])
    parts[1].append(["all samples", f"{p['samples']:,}", "100%", f"{p['seconds']:.2f}"])
    leaves = columns(
        [("function", lambda x: f"`{x['function']}`", ""), ("part", "part", ""), *part],
        p["top_leaves"],
    )
    slower = p["wall_s"] / p["best_timed_wall_s"] if p["best_timed_wall_s"] else float("nan")
    return section(
        title,
        f"One more memory run on the {r['corpus']['docs']:,} stories under `{p['command']}`: "
        f"{p['samples']:,} samples = {p['seconds']:.2f} s at {p['hz']} Hz, each given to a part "
        "of `harness.profile.DEDUP_PARTS`.",
        table(*parts),
        f"Profiled run: {p['wall_s']:.2f} s wall clock, against {p['best_timed_wall_s']:.2f} s "
        f"for the best timed run ({slower:.2f}×). The top {len(p['top_leaves'])} leaf functions "
        "(own time):",
        table(*leaves, text=(0, 1)),
    )


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
    imports: list[Column] = [
        ("module", lambda i: f"`{i['module']}`", ""),
        ("depth", "depth", ""),
        ("cumulative ms", lambda i: i["cumulative_us"] / 1000, ".1f"),
        ("self ms", lambda i: i["self_us"] / 1000, ".1f"),
    ]
    own = [num(rows[k]["summary"].get("docs_per_s"), ",") for k in ("nd_mem", "nd_redis")]
    over_runs = {
        k: ", ".join(f"{b / rows[k]['docs']:,.0f}" for b in rows[k]["redis_used_memory_delta"])
        for k in ("nd_redis", "ds_redis")
    }
    title = "Command benchmark: `neardup dedup` as a user runs it, beside a datasketch program"
    lines = [
        *heading(title, r["command"], r["generated"], r["seconds"]),
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, {m['platform']}; other "
        f"processes kept {m['cores_busy_before_run']:.2f} cores busy before the run; 1-minute "
        f"load average {m['load_average_1m_at_start']:.2f} at start, "
        f"{m['load_average_1m_at_end']:.2f} at the end",
        f"- Python {m['python']}, neardup {m['neardup']}, datasketch {m['datasketch']}, numpy "
        f"{m['numpy']}, scipy {m['scipy']}, redis-py {m['redis']}, typer {m['typer']}, rich "
        f"{m['rich']}; {red['redis_binary']} {red['redis_version']} on loopback (default config, "
        f"{red['redis_config']})",
        f"- Code: {code_line(r['git'])}",
        f"- Method: `bench/command_bench.py`; best of {r['reps']} runs per command, start-up "
        f"included. Corpus: `{c['source']}`, {c['docs']:,} Reuters-21578 stories (median "
        f"{c['median_chars']:,.0f} chars, mean {c['mean_chars']:,.0f}; {c['bytes'] / 1e6:.1f} "
        f"MB); the Redis runs take the first {c['redis_docs']:,}; neardup's default policy "
        "(threshold 0.8, 128 MinHash values)",
        f"- Checks: the datasketch program's shingles equal `harness.corpus.peer_shingles` on "
        f"{c['docs'] - r['checks']['peer_shingles_mismatched_docs']:,} of {c['docs']:,} "
        "documents; every run decided every line",
        "",
        *section(
            "Results",
            results_table(r),
            "vs datasketch = datasketch's best wall clock / neardup's, same store. flagged = "
            "documents neardup called `near_duplicate` or `duplicate` (verified) / documents "
            "with any datasketch LSH candidate (unverified). CPU vs datasketch: "
            f"{rows['nd_mem']['cpu_vs_datasketch']:.2f}× less in memory, "
            f"{rows['nd_redis']['cpu_vs_datasketch']:.2f}× less on Redis (client side). neardup's "
            f"own summary (processing only, after start-up): {own[0]} docs/s in memory, {own[1]} "
            "docs/s on Redis. "
            f"Redis B/doc is the last run's; over the runs: neardup {over_runs['nd_redis']}, "
            f"datasketch {over_runs['ds_redis']}.",
        ),
        *breakdown_section(r),
        *profile_section(r),
        *section("Targets", targets_table(r)),
        *section(
            "Start-up",
            table(
                ["command", "runs", "median s", "min s"],
                [[n, str(t["runs"]), f"{t['median_s']:.3f}", f"{t['min_s']:.3f}"] for n, t in runs],
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
            table(*columns(imports, it["top_cumulative"])),
        ),
        *section(
            "What each side ran",
            "\n".join(f"- {x['system']}, {x['store']}: `{x['command']}`" for x in r["rows"]),
            f"The datasketch program, run as `{peer} CORPUS OUTPUT [HOST:PORT]`:",
            f"```python\n{r['peer_program'].rstrip()}\n```",
        ),
    ]
    return "\n".join(lines)
