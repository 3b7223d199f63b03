"""Every command's ``--help`` renders its texts as written: no bracketed words eaten as markup
(``[namespace.NAME]``), no reST double backquotes shown literally, no word lost to the renderer.

The command tree is walked from the click command typer builds, so a new command is covered."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from neardup.stream.cli.main import app

ROOT = typer.main.get_command(app)


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of every command and group (typer's click is its own: groups are known by
    their ``commands``)."""
    found = [path]
    if hasattr(command, "commands"):
        for name, sub in sorted(command.commands.items()):
            found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(ROOT)


def _command(path: tuple[str, ...]) -> Any:
    command: Any = ROOT
    for name in path:
        command = command.commands[name]
    return command


def _written(command: Any) -> list[str]:
    """The texts as the source writes them: the command's help and each parameter's."""
    texts = [command.help or ""]
    texts += [getattr(p, "help", None) or "" for p in command.params]
    return [t for t in texts if t]


def _render(path: tuple[str, ...]) -> str:
    # wide, so that no help cell is cut short with an ellipsis
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400"}, color=False)
    assert result.exit_code == 0, result.output
    return result.output


def _words(text: str) -> list[str]:
    """What a reader must find of a text: its words, with reST's inline-code marks removed."""
    return re.sub(r"``([^`]+)``", r"\1", text).split()


def test_the_tree_has_every_command() -> None:
    names = {" ".join(p) for p in COMMANDS}
    assert {"dedup", "delete", "namespaces", "namespaces drop", "reindex", "worker"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "neardup")
def test_help_renders_as_written(path: tuple[str, ...]) -> None:
    shown = _render(path)
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", shown).split())
    assert "``" not in shown, "reST double backquotes shown literally"
    for text in _written(_command(path)):
        for bracketed in re.findall(r"\[[^\]\s][^\]]*\]", text):
            assert bracketed in flat, f"{bracketed!r} of {text!r} lost in --help"
        lost = [w for w in _words(text) if w not in flat]
        assert not lost, f"{lost} of {text!r} lost in --help:\n{shown}"
