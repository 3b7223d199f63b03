"""The core benchmark's report, ``core.md``, from the result :mod:`bench.core_bench` writes; its
method is that module's docstring."""

from __future__ import annotations

from typing import Any

from bench.markdown import code_line, data_table, heading, report

TITLE = "Core benchmark: the compiled core against the python reference"
WHAT = {
    "kernel": "kernel: `sketch_sets` (MinHash, SimHash, 32-bit sets), batches of {batch}",
    "lines": "kernel: `line_keys` (the boilerplate learner's `lines_of`), batches of {batch}",
    "features": "kernel: `text_features` (canonical form to shingles, sketches, passages), "
    "batches of {batch}",
    "prepare": "stage: `prepare`, batches of {batch}",
    "command": "command: `neardup dedup`, memory store, start-up included",
}
COLUMNS = (
    "what={what} | python reference CPU s={reference_s:.3f} | compiled CPU s={compiled_s:.3f} "
    "| reference / compiled={ratio:.2f}x"
)


def markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    rows = [{**x, "what": WHAT[x["what"]].format(batch=r["batch"])} for x in r["rows"]]
    return report(
        [
            heading(TITLE, r["command"], r["generated"], r["seconds"]),
            [
                f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; load average "
                f"{m['load_average_1m_at_start']:.2f} at the start",
                f"Python {m['python']}, neardup {m['neardup']}, numpy {m['numpy']}; "
                f"{m['rustc']} on PATH",
                f"Code: {code_line(r['git'])}",
                f"Method: `bench/core_bench.py`. Corpus: the first {r['docs']:,} Reuters-21578 "
                "stories. CPU seconds (this process's for the kernel and the stage, the child "
                f"process's for the command), the least of {r['repeats']} runs each; the "
                "reference is `NEARDUP_CORE=python`",
            ],
            data_table(COLUMNS, rows),
        ]
    )
