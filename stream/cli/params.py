"""``neardup params``: what a threshold and recall mean for the MinHash banding, before a run.
Pure arithmetic from :mod:`neardup.sketch.lsh`, no index, so a module of its own."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from neardup.sketch import lsh


def params(
    threshold: Annotated[float, typer.Option(help="similarity threshold")] = 0.8,
    recall: Annotated[
        float, typer.Option(help="required candidate recall at the threshold")
    ] = 0.99,
    num_perm: Annotated[int, typer.Option(help="MinHash signature size")] = 128,
) -> None:
    """Show the (bands, rows) chosen for a threshold and the S-curve they give."""
    try:
        b, r = lsh.recall_floor_params(threshold, recall, num_perm)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    ob, orr = lsh.optimal_params(threshold, num_perm)
    console = Console()
    console.print(
        f"recall floor: bands={b} rows={r} (P({threshold}) = "
        f"{lsh.candidate_probability(threshold, b, r):.4f}, midpoint {lsh.half_point(b, r):.3f})"
    )
    console.print(
        f"area-optimal (datasketch style): bands={ob} rows={orr} (P({threshold}) = "
        f"{lsh.candidate_probability(threshold, ob, orr):.4f}, midpoint "
        f"{lsh.half_point(ob, orr):.3f})"
    )
    table = Table("similarity", f"P candidate ({b}x{r})", f"P candidate ({ob}x{orr})")
    for s in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0):
        table.add_row(
            f"{s:.2f}",
            f"{lsh.candidate_probability(s, b, r):.4f}",
            f"{lsh.candidate_probability(s, ob, orr):.4f}",
        )
    console.print(table)


__all__ = ["params"]
