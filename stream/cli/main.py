"""The ``neardup`` command line: the typer app, each command group registered from its own module
(``dedup``, ``params``, ``worker``, ``delete``, ``inspect`` and ``export``, ``reindex``,
``namespaces``), and :func:`main`, the console script. Only this module imports the command
modules, and they import none of it, so the app is whole once it is imported. Each command
imports what only it needs (faust, aiokafka, the worker's settings) when it runs, and says which
extra to install when that is missing (:mod:`neardup.stream.extras`).

Exit statuses are each command's: see its module.
"""

from __future__ import annotations

from typing import Annotated

import typer

from neardup import __version__
from neardup.stream.cli.common import HELP_MARKUP, err
from neardup.stream.cli.dedup import dedup
from neardup.stream.cli.delete import delete
from neardup.stream.cli.inspect import export, inspect
from neardup.stream.cli.namespaces import app as namespaces
from neardup.stream.cli.params import params
from neardup.stream.cli.reindex import reindex
from neardup.stream.cli.worker import worker
from neardup.stream.extras import MissingExtra

app = typer.Typer(
    name="neardup",
    help="Streaming near-duplicate detection (MinHash LSH + SimHash) over Kafka and Redis.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=HELP_MARKUP,
)


def _print_version(value: bool) -> None:
    """``--version``: the name, the version and the core in use (compiled, or the python
    reference: :mod:`neardup.stream.core`), then exit 0 before any command is looked for."""
    if value:
        from neardup.stream import core  # only here: no other command start pays for it

        typer.echo(f"neardup {__version__} (core: {core.name()})")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print neardup's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Streaming near-duplicate detection (MinHash LSH + SimHash) over Kafka and Redis."""


# in this order in ``neardup --help``: commands as registered, then the group
for command in (dedup, params, worker, delete, inspect, export, reindex):
    app.command()(command)
app.add_typer(namespaces, name="namespaces")


def main() -> None:
    """Console-script entry point. A missing extra no command turned into its line yet is said
    here, in the same one line (what to install) and exit status 2, never a traceback."""
    try:
        app()
    except MissingExtra as exc:
        err.print(f"neardup: {exc}", markup=False, soft_wrap=True)
        raise SystemExit(2) from None


__all__ = ["app", "main"]


if __name__ == "__main__":
    main()
