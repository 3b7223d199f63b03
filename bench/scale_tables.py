"""The scale benchmark's report, ``scale.md``, from the result :mod:`bench.scale_bench` writes;
its method is that module's docstring."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.command_tables import profile
from bench.markdown import code_line, data_table, heading, met, pct, report

__all__ = ["markdown", "size_table", "summary", "targets_table"]

ROWS = (
    "system={system} | docs/s={docs_per_s:,.0f} | wall s={best_wall_s:.2f} | "
    "CPU s={best_cpu_s:.2f} | peak MB={peak_mb:,.0f} | KB/doc={kb_per_doc:.2f} | "
    "KB/doc over start-up={net_kb_per_doc:.2f} | pairs reported={quality[reported_pairs]:,} | "
    "recall={recall} | recall, same figures={same} | recall, copy or related={related} | "
    "precision={precision}"
)


def size_table(size: Mapping[str, Any]) -> str:
    rows = [
        {
            **r,
            "recall": pct(r["quality"]["recall"], 2),
            "same": pct(r["quality"].get("recall_same_figures"), 2),
            "related": pct(r["quality"].get("recall_with_related"), 2),
            "precision": pct(r["quality"]["precision"], 2),
        }
        for r in size["rows"]
    ]
    return data_table(ROWS, rows)


def _size_line(size: Mapping[str, Any]) -> str:
    c = size["constructed"]
    line = (
        f"{size['stories']:,} stories + {size['copies']:,} copies ({pct(size['copy_share'])} "
        f"copies), {size['bytes'] / 1e6:,.0f} MB of JSON lines."
    )
    if c["copies"]:
        line += (
            f" Constructed pairs: {c['copies']:,} ({c['copies_of_copies']:,} copies of copies), "
            f"median exact Jaccard {c['median_jaccard']:.3f}, median {c['edits_median']:.0f} "
            f"edits; {c['truth_pairs']:,} at or above the threshold (the truth), "
            f"{c['below_threshold']:,} below."
        )
    else:
        line += " No constructed copies: recall is n/a, precision is of what each reports."
    nd = next((r for r in size["rows"] if r["key"] == "neardup"), None)
    if nd and nd["quality"].get("verdicts"):
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(nd["quality"]["verdicts"].items()))
        line += f" neardup's verdicts: {kinds}."
    return line


def targets_table(r: Mapping[str, Any]) -> str:
    formats = {
        "faster_smallest": "neardup's wall clock {:.2f}× rensa's",
        "faster_largest": "neardup's wall clock {:.2f}× rensa's",
        "flat_throughput": "{:.1%}",
        "memory_per_doc": "{:.2f} KB/doc",
    }
    rows = [
        {
            **t,
            "value": "n/a" if t["measured"] is None else formats[k].format(t["measured"]),
            "state": met(t["met"]),
        }
        for k, t in r["targets"].items()
    ]
    return data_table(
        "target={what} | docs={docs:,} | bound={bound} | measured={value} | state={state}",
        rows,
        text=(0, 2, 3, 4),
    )


def ratios_tables(r: Mapping[str, Any]) -> list[str]:
    vs = data_table(
        "docs={docs:,} | neardup wall / rensa + check wall={neardup_over_rensa_checked:.2f} | "
        "neardup CPU / rensa + check CPU={neardup_cpu_over_rensa_checked:.2f}",
        r["ratios"]["vs_rensa_checked"],
    )
    flat = ""
    if r["ratios"]["throughput"]:
        first = r["ratios"]["throughput"][0]
        small, large = f"{first['smallest']:,}", f"{first['largest']:,}"
        flat = data_table(
            f"system={{system}} | docs/s at {small}={{docs_per_s_smallest:,.0f}} | "
            f"docs/s at {large}={{docs_per_s_largest:,.0f}} | "
            f"{large} / {small}={{largest_over_smallest:.1%}}",
            r["ratios"]["throughput"],
        )
    return [vs, flat]


def summary(r: Mapping[str, Any]) -> str:
    """The tables a run prints on its console."""
    parts = []
    for size in r["sizes"]:
        parts += [f"{size['docs']:,} documents", size_table(size), ""]
    parts += [*ratios_tables(r), "", targets_table(r)]
    return "\n".join(parts)


def markdown(r: Mapping[str, Any]) -> str:
    m, c = r["machine"], r["corpus"]
    blocks: list[Any] = [
        heading(
            "Scale: neardup dedup beside rensa, 20,000 to 300,000 documents",
            r["command"],
            r["generated"],
            r["seconds"],
        ),
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}; "
        f"neardup {m.get('neardup')}, rensa {m.get('rensa')}, datasketch {m.get('datasketch')}. "
        f"Other processes kept {m['cores_busy_before_run']} cores busy before the run. "
        f"Code: {code_line(r['git'])}.",
        f"Corpus: the {c['stories']:,} Reuters-21578 stories in the wire's order, then copies of "
        f"earlier documents ({c['copy_sources']}, so copies of copies occur), each with "
        f"{100 * c['edit_share'][0]:g}-{100 * c['edit_share'][1]:g}% of its words substituted, "
        f"inserted or deleted (seed {c['seed']}); each size is a prefix of one stream, so the "
        "smallest sizes are stories only and a larger one adds copies whose families grow with it. "
        f"Median {c['median_chars']:,.0f} characters a document.",
        "Each command is a whole process (best wall clock of "
        f"{r['reps']} run{'s' if r['reps'] > 1 else ''}, alternated): `neardup dedup` on the "
        "memory store at its defaults, `bench/peers/rensa_dedup.py --verify` (rensa's LSH with "
        "the exact Jaccard check of every candidate: the job neardup does), the same without the "
        "check, and datasketch's program at the smallest size. docs/s = documents / wall clock "
        "from spawn to exit; CPU from `os.wait4`; peak = RSS polled every 50 ms (children "
        "included); KB/doc = peak / documents (KB = 1,000 bytes), and over start-up = (peak − "
        "the one-line run's peak) / documents. Truth: the constructed (copy, source) pairs with "
        f"exact Jaccard of word 3-shingles (`peer_shingles`) ≥ {r['threshold']}. Recall: the "
        "share of them a system links (rensa: the source among the copy's candidates; neardup: "
        "`duplicate_of` the source, or the source's cluster). Precision: the share of the pairs "
        "it reports (rensa: every candidate; neardup: every `duplicate_of`) with exact Jaccard "
        "≥ the threshold.",
    ]
    for size in r["sizes"]:
        blocks += [f"## {size['docs']:,} documents", _size_line(size), size_table(size)]
    blocks += ["## Ratios", *ratios_tables(r)]
    if "profile" in r:
        p = r["profile"]
        blocks += profile(
            p,
            f"## Where `neardup dedup` spends its time at {p.get('docs', 0):,} documents",
            f"the {p.get('docs', 0):,}-document corpus",
        )
    blocks += ["## Targets", targets_table(r)]
    return report(blocks)
