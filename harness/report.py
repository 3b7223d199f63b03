"""What the benchmarks and the harness read and write the same way: Markdown tables, atomic
result files, Prometheus samples, a process's CPU and memory."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path

import psutil
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["cpu_seconds", "md_table", "parse_prometheus", "rss_mb", "write_atomic"]


def md_table(
    head: Sequence[str], rows: Iterable[Sequence[str]], text: Collection[int] = (0,)
) -> str:
    """A Markdown table; the columns numbered in ``text`` (the first, unless told) left-aligned,
    the others right-aligned (they hold numbers)."""
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" if i in text else "---:" for i in range(len(head))) + "|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, so an interrupted run never leaves half a result."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def parse_prometheus(text: str) -> dict[str, float]:
    """Prometheus text exposition -> metric name -> value summed over its label sets (buckets
    left out); each line is parsed alone, so a scrape cut short still counts."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        try:
            families = list(text_string_to_metric_families(line))
        except ValueError:
            continue
        for sample in (s for family in families for s in family.samples):
            if not sample.name.endswith("_bucket"):
                out[sample.name] = out.get(sample.name, 0.0) + sample.value
    return out


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process (all its threads); None if there is none."""
    return _read(pid, lambda p: float(sum(p.cpu_times()[:2])))


def rss_mb(pid: int | None) -> float | None:
    """A process's resident set size, MB; None if there is none."""
    return _read(pid, lambda p: round(p.memory_info().rss / 1024**2, 1))


def _read(pid: int | None, what: Callable[[psutil.Process], float]) -> float | None:
    if pid is None:
        return None
    try:
        return what(psutil.Process(pid))
    except psutil.Error:
        return None
