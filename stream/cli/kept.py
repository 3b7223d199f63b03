"""The options of ``neardup dedup --kept FILE --keep MODE``, checked; which rows are kept is
:mod:`neardup.stream.keep`'s rule (re-exported here for the command)."""

from __future__ import annotations

from pathlib import Path

import typer

from neardup.stream.cli.tables import table_format
from neardup.stream.errors import TableError
from neardup.stream.keep import KEEP_MODES, ONE_PER_CLUSTER, ORIGINALS, Keeper


def keeper_for(source: Path, kept: Path | None, keep: str | None) -> Keeper | None:
    """What ``--kept`` and ``--keep`` ask for, or a usage error (exit status 2); an unknown
    format of ``source`` is its :class:`TableError`."""
    if kept is None:
        if keep is not None:
            raise typer.BadParameter("--keep needs --kept FILE", param_hint="--keep")
        return None
    if keep is not None and keep not in KEEP_MODES:
        raise typer.BadParameter(f"--keep must be {' or '.join(KEEP_MODES)}", param_hint="--keep")
    fmt = table_format(source)
    try:
        same = table_format(kept) == fmt
    except TableError as exc:
        raise typer.BadParameter(str(exc), param_hint="--kept") from None
    if not same:
        raise typer.BadParameter(
            f"{kept} is no {fmt} file: the kept rows are written in INPUT's format",
            param_hint="--kept",
        )
    if str(source) == "-" or (source.exists() and not source.is_file()):  # it is read twice
        raise typer.BadParameter(
            "needs INPUT to be a file, not stdin or a pipe", param_hint="--kept"
        )
    if kept.resolve() == source.resolve():
        raise typer.BadParameter("the kept rows cannot overwrite INPUT", param_hint="--kept")
    if not kept.parent.is_dir():
        raise typer.BadParameter(f"no such folder: {kept.parent}", param_hint="--kept")
    return Keeper(keep or ORIGINALS)


__all__ = ["KEEP_MODES", "ONE_PER_CLUSTER", "ORIGINALS", "Keeper", "keeper_for"]
