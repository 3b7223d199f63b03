"""What every benchmark writes the same way: machine facts, markdown tables, result files."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def machine_info(packages: Iterable[str]) -> dict[str, Any]:
    """CPU model, cores, memory, Python and the versions of ``packages``."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem_kb = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1]
        mem_gb = round(int(mem_kb) / 1024**2, 1)
    versions = {}
    for pkg in packages:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gb": mem_gb,
        "load_average_1m_at_start": os.getloadavg()[0],
        "python": platform.python_version(),
        "platform": platform.platform(),
        **versions,
    }


def md_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A markdown table; every column but the first right-aligned (they hold numbers)."""
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, so an interrupted run never leaves half a result."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
