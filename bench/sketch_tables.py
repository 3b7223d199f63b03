"""The sketch benchmark's tables: the console summary and ``sketch.md``, from the result
:mod:`bench.sketch_bench` writes (its docstring is the method)."""

from __future__ import annotations

from typing import Any

from bench.markdown import console, data_table, heading, report

out = console(132)

SPEED = (
    "pipeline={name} | docs={docs} | docs/s={docs_per_s:,.0f} | vs baseline={vs} | "
    "RMSE J={rmse:.4f} | RMSE J (J≥0.1)={rmse_similar:.4f}"
)
SIZE = (
    "signature={sketch} | bytes={bytes_per_signature} | RMSE J={rmse:.4f} | "
    "RMSE J (J≥0.1)={rmse_similar:.4f} | bias={bias:+.4f}"
)


def print_tables(result: dict[str, Any]) -> None:
    """The report on the console."""
    print(markdown(result))


def markdown(result: dict[str, Any]) -> str:
    m, c, meth = result["machine"], result["corpus"], result["method"]
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in result["speed"]:
        vs = "1.00× (baseline)" if r["name"] == r["baseline"] else f"{r['ratio']:.2f}×"
        groups.setdefault(r["group"], []).append({**r, "vs": vs})
    return report(
        [
            heading(
                "Sketch benchmark", "python -m bench sketch", result["date"], result["elapsed_s"], 1
            ),
            [
                f"Machine: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), "
                f"{m['platform']}",
                f"Python {m['python']}, numpy {m['numpy']}, mmh3 {m['mmh3']}, datasketch "
                f"{m['datasketch']}, simhash {m['simhash']}",
                f"Method: `bench/sketch_bench.py`. Corpus: `harness.corpus.generate({c['docs']}, "
                f"seed={c['seed']})`, ~{c['words']} words, dup_rate {c['dup_rate']}, "
                f"{c['mean_shingles_per_doc']:.0f} distinct word 3-shingles per document, "
                f"{c['pairs_jaccard_ge_0.5']} pairs with exact J ≥ 0.5",
                f"Timing: {meth['timing']} ({meth['reps']} reps); k = {meth['num_perm']}",
                f"Accuracy: {meth['accuracy_pairs']} pairs, {meth['accuracy_pairs_similar']} with "
                "exact J ≥ 0.1; exact J of neardup's hashed shingles and of datasketch's string "
                "shingles differ by at most "
                f"{meth['max_abs_diff_exact_neardup_vs_datasketch_shingles']:.4f}",
                "neardup's batch path gives the same signatures as the single-document path: "
                f"{'yes' if meth['batch_equals_single'] else 'NO'}",
            ],
            *(
                b
                for group, rows in groups.items()
                for b in (f"## {group}", data_table(SPEED, rows))
            ),
            "## Signature size vs accuracy",
            data_table(SIZE, result["size"]),
            "b-bit rows estimate J with the chance-agreement correction of "
            "`estimate_jaccard_bbit`.",
        ]
    )
