"""The sketch benchmark's tables: the console summary and ``sketch.md``, from the result
:mod:`bench.sketch_bench` writes."""

from __future__ import annotations

from typing import Any

from bench.markdown import console, heading, num, table, terminal_table, times

out = console(132)


def _speed_cells(r: dict[str, Any]) -> list[str]:
    ratio = "1.00× (baseline)" if r["name"] == r["baseline"] else times(r["ratio"])
    return [
        r["name"],
        str(r["docs"]),
        f"{r['docs_per_s']:,.0f}",
        ratio,
        num(r["rmse"], ".4f"),
        num(r["rmse_similar"], ".4f"),
    ]


_SPEED_HEAD = ["pipeline", "docs", "docs/s", "vs baseline", "RMSE J", "RMSE J (J≥0.1)"]


_SIZE_HEAD = ["signature", "bytes", "RMSE J", "RMSE J (J≥0.1)", "bias"]


def _size_cells(s: dict[str, Any]) -> list[str]:
    return [
        s["sketch"],
        str(s["bytes_per_signature"]),
        f"{s['rmse']:.4f}",
        f"{s['rmse_similar']:.4f}",
        f"{s['bias']:+.4f}",
    ]


def _groups(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in result["speed"]:
        groups.setdefault(r["group"], []).append(r)
    return groups


def print_tables(result: dict[str, Any]) -> None:
    for group, rows in _groups(result).items():
        title = f"{group}  (baseline: {rows[0]['baseline'] or '—'})"
        out.print(terminal_table(title, _SPEED_HEAD, [_speed_cells(r) for r in rows]))
    title = f"signature size vs accuracy (k={result['method']['num_perm']})"
    out.print(terminal_table(title, _SIZE_HEAD, [_size_cells(s) for s in result["size"]]))
    m, c, meth = result["machine"], result["corpus"], result["method"]
    out.print(
        f"{c['docs']} docs (seed {c['seed']}, {c['mean_shingles_per_doc']:.0f} shingles/doc), "
        f"{meth['accuracy_pairs']} pairs ({meth['accuracy_pairs_similar']} with J≥0.1); "
        f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, numpy {m['numpy']}; "
        f"total {result['elapsed_s']:.1f} s"
    )


def markdown(result: dict[str, Any]) -> str:
    m, c, meth = result["machine"], result["corpus"], result["method"]
    out = [
        *heading(
            "Sketch benchmark", "python -m bench sketch", result["date"], result["elapsed_s"], 1
        ),
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {m['platform']}",
        f"- Python {m['python']}, numpy {m['numpy']}, mmh3 {m['mmh3']}, datasketch "
        f"{m['datasketch']}, simhash {m['simhash']}",
        f"- Corpus: `harness.corpus.generate({c['docs']}, seed={c['seed']})`, English real-text "
        f"documents of ~{c['words']} words, dup_rate {c['dup_rate']}, "
        f"{c['mean_shingles_per_doc']:.0f} distinct word 3-shingles per document, "
        f"{c['pairs_jaccard_ge_0.5']} pairs with exact J ≥ 0.5",
        f"- Timing: {meth['timing']} ({meth['reps']} reps); k = {meth['num_perm']}",
        f"- Accuracy: {meth['accuracy_pairs']} pairs (mutation pairs plus random), "
        f"{meth['accuracy_pairs_similar']} with exact J ≥ 0.1; exact J of neardup's hashed "
        "shingles and of datasketch's string shingles differ by at most "
        f"{meth['max_abs_diff_exact_neardup_vs_datasketch_shingles']:.4f}",
        "- neardup's batch path gives the same signatures as the single-document path: "
        f"{'yes' if meth['batch_equals_single'] else 'NO'}",
        "",
    ]
    for group, rows in _groups(result).items():
        out += [f"## {group}", "", f"Baseline: {rows[0]['baseline'] or '—'}.", ""]
        out += [table(_SPEED_HEAD, [_speed_cells(r) for r in rows]), ""]
    out += ["## Signature size vs accuracy", ""]
    out += [table(_SIZE_HEAD, [_size_cells(s) for s in result["size"]]), ""]
    out += [
        "Notes: the datasketch text pipeline tokenises in Python (`\\w+` on `casefold()`, "
        "3 tokens joined, `encode()`, `update_batch`); the precomputed rows feed every library "
        "neardup's shingle hashes, so they time sketching alone. The SimHash rows use each "
        "library's default features, so they compare the task, not identical features. "
        "b-bit rows estimate J with the chance-agreement correction of `estimate_jaccard_bbit`.",
        "",
    ]
    return "\n".join(out)
