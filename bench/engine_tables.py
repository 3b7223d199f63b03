"""The engine benchmark's tables: the console summary and ``engine.md``.

Reads only the result dict :mod:`bench.engine_bench` writes to ``engine.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.markdown import console, heading, num, table, terminal_table, times

out_console = console(200)


_HEAD = [
    "system",
    "docs",
    "docs/s",
    "vs datasketch",
    "CPU ms/doc",
    "pair recall",
    "pair recall (cap 10)",
    "doc recall",
    "pair precision",
    "pairs are",
    "Redis B/doc",
    "Redis keys/doc",
    "Redis CPU ms/doc",
]


def _cells(row: Mapping[str, Any], mark: str = "") -> list[str]:
    q = row["quality"]
    is_base = row["key"] == row["baseline"]
    ratio = "1.00 (base)" if is_base else times(row["ratio"])
    return [
        row["system"] + mark,
        f"{row['docs']:,}",
        f"{row['docs_per_s']:,.0f}",
        ratio,
        f"{row['cpu_ms_per_doc']:.3f}",
        f"{q['pair_recall']:.4f}",
        f"{q['pair_recall_capped']:.4f}",
        f"{q['doc_recall']:.4f}",
        f"{q['pair_precision']:.4f}",
        row["reports"],
        num(row["bytes_per_doc"], ",.0f"),
        num(row["keys_per_doc"], ".2f"),
        num(row["redis_cpu_ms_per_doc"], ".3f"),
    ]


def _marked(result: Mapping[str, Any]) -> list[tuple[list[str], str]]:
    """Table cells of every row, and its footnote (``[k] note``)."""
    out = []
    for k, row in enumerate(result["rows"], start=1):
        out.append((_cells(row, f" [{k}]"), f"[{k}] {row['system']}: {row['note']}"))
    return out


_LEGEND = (
    "pairs are: 'verified' = (document, earlier document) pairs confirmed by exact Jaccard "
    "(neardup: duplicate_of + matches); 'candidates' = datasketch's raw LSH candidates (it "
    "stores no sets to verify against), so their precision is candidate precision. "
    "pair recall = truth pairs reported / truth pairs; (cap 10) = / Σ min(truth pairs of a "
    "document, 10), what a capped `matches` can show; doc recall = documents with an earlier "
    "J ≥ 0.8 document that are flagged (neardup: verdict not original; datasketch: any "
    "candidate); pair precision = reported pairs with exact J ≥ 0.8 / reported pairs. "
    "vs datasketch: docs/s against 'datasketch, memory' (candidates only, its faster row) for "
    "memory rows, against 'datasketch, Redis' for Redis rows. CPU ms/doc = CPU time of the "
    "benchmark process (of the child for the CLI) per document, Redis server excluded: "
    "unlike docs/s it barely moves when other work shares the machine. Redis B/doc = "
    "(used_memory after − before) / docs; Redis CPU = server used_cpu_user + used_cpu_sys "
    "delta / docs."
)


def _target_lines(result: Mapping[str, Any]) -> list[str]:
    t = result["targets"]
    met = {True: "MET", False: "NOT MET"}
    return [
        f"in memory ≥ 5× datasketch: {t['memory_5x']['measured']:.2f}× docs/s "
        f"({t['memory_5x']['vs_verified_datasketch']:.2f}× vs datasketch + exact verification; "
        f"{t['memory_5x']['cpu_ratio']:.2f}× less CPU per doc) — {met[t['memory_5x']['met']]}",
        f"on Redis ≥ 20× datasketch: {t['redis_20x']['measured']:.1f}× docs/s against "
        f"'{t['redis_20x']['baseline']}' (its documented usage, the ~300 docs/s the target was "
        f"set against) — {met[t['redis_20x']['met']]}; "
        f"{t['redis_20x']['vs_batch_mode']:.1f}× against its faster batch mode "
        f"(insertion_session; {t['redis_20x']['cpu_ratio_client_plus_server']:.2f}× less client "
        "+ server CPU per doc)",
        f"fewer Redis bytes/doc than datasketch: {t['bytes_fewer']['neardup']:,.0f} vs "
        f"{t['bytes_fewer']['datasketch']:,.0f} ({t['bytes_fewer']['ratio']:.2f}× fewer; neardup "
        f"includes the shingle sets exact verification needs) — {met[t['bytes_fewer']['met']]}",
    ]


_PARTS_HEAD = ["key class", "bytes/doc"]


def _parts_rows(parts: Mapping[str, float]) -> list[list[str]]:
    return [[k, f"{v:,.0f}"] for k, v in parts.items()]


def _breakdowns(result: Mapping[str, Any]) -> list[tuple[str, dict[str, float]]]:
    return [(r["system"], r["memory_breakdown"]) for r in result["rows"] if r["memory_breakdown"]]


def print_tables(result: Mapping[str, Any]) -> None:
    c = result["corpus"]
    title = (
        f"end-to-end near-duplicate detection, {c['docs']:,} docs (seed {c['seed']}); "
        f"truth: {c['truth_pairs_j_ge_0.8']:,} (doc, earlier doc) pairs with exact J ≥ 0.8"
    )
    marked = _marked(result)
    out_console.print(terminal_table(title, _HEAD, [cells for cells, _ in marked], text=(0, 9)))
    for _, note in marked:
        out_console.print(note, markup=False, highlight=False)
    out_console.print(_LEGEND, markup=False, highlight=False)
    for system, parts in _breakdowns(result):
        title = f"Redis bytes per document by key class: {system}"
        out_console.print(terminal_table(title, _PARTS_HEAD, _parts_rows(parts)))
    for line in _target_lines(result):
        out_console.print(f"target: {line}")
    ch, m = result["checks"], result["machine"]
    out_console.print(
        f"checks: Redis verdicts == memory verdicts: {ch['redis_verdicts_equal_memory']}; "
        f"CLI verdicts == Engine verdicts: {ch['cli_verdicts_equal_engine_memory']}"
    )
    out_console.print(
        f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, Redis {m.get('redis_server')}; "
        f"load average {m['load_average_1m_at_start']:.2f} -> {m['load_average_1m_at_end']:.2f}; "
        f"total {result['elapsed_s']:.1f} s"
    )
    if "profile_engine_memory" in result:
        out_console.print(result["profile_engine_memory"], markup=False, highlight=False)


def markdown(result: Mapping[str, Any]) -> str:
    m, c, meth, ch = result["machine"], result["corpus"], result["method"], result["checks"]
    nb, nr = meth["neardup_bands_rows"]
    db, dr = meth["datasketch_bands_rows"]
    title = "Engine benchmark: neardup vs datasketch MinHashLSH"
    out = [
        *heading(title, "python -m bench engine", result["date"], result["elapsed_s"], 1),
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {m['platform']}; "
        f"1-minute load average {m['load_average_1m_at_start']:.2f} at start (when Redis came "
        f"up), {m['load_average_1m_at_end']:.2f} at the end",
        f"- Python {m['python']}, neardup {m['neardup']}, numpy {m['numpy']}, datasketch "
        f"{m['datasketch']}, redis-py {m['redis']}; Redis server {m.get('redis_server')} "
        f"(default config, {m.get('redis_config')}), on the same machine over loopback",
        f"- Corpus: `harness.corpus.generate({c['docs']}, seed={c['seed']})`, English real-text "
        f"documents of ~{c['words']} words, dup_rate {c['dup_rate']}",
        f"- Truth: {c['truth_pairs_j_ge_0.8']:,} (document, earlier document) pairs with exact "
        f"word-3-shingle Jaccard ≥ {meth['threshold']} (brute force, "
        f"`harness.corpus.exact_similarities`), over {c['truth_docs_with_earlier_j_ge_0.8']:,} "
        f"documents; {c['truth_docs_with_more_than_cap']:,} documents have more than "
        f"{meth['match_cap']} (the `matches` cap)",
        f"- neardup: recall-floor banding {nb}×{nr} plus 10 SimHash tables; datasketch: "
        f"`MinHashLSH(threshold={meth['threshold']}, num_perm={meth['num_perm']})` = {db}×{dr}",
        f"- Timing: {meth['timing']} (reps {meth['reps']}); batches of {meth['batch']}",
        f"- Same verdicts from Redis and memory: {ch['redis_verdicts_equal_memory']}; "
        f"the CLI's verdicts equal the Engine's: {ch['cli_verdicts_equal_engine_memory']} "
        f"(`{ch['cli_command']}`)",
        "",
        "## Results",
        "",
        table(_HEAD, [cells for cells, _ in _marked(result)]),
        "",
        *[f"{note}  " for _, note in _marked(result)],
        "",
        _LEGEND,
        "",
        "The machine is shared (other work may run at the same time, see the load average): "
        "docs/s vary from run to run; CPU per document, Redis CPU per document and bytes per "
        "document much less.",
        "",
        "## Targets (issue 3)",
        "",
        *[f"- {line}" for line in _target_lines(result)],
        "",
    ]
    for system, parts in _breakdowns(result):
        out += [f"## Redis bytes per document by key class: {system}", ""]
        out += [table(_PARTS_HEAD, _parts_rows(parts))]
        out += [""]
    return "\n".join(out)
