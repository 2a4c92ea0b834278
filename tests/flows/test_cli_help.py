"""Every command's `--help` shows its help text whole. Typer reads help as Rich console markup, which drops a
square-bracketed word (`[alerts] targets`, a TOML section) as an unknown style: such a bracket is written `\\[`."""

from __future__ import annotations

import re

import click
import pytest
import typer
from typer.testing import CliRunner

from flows.cli import app


def _commands() -> list[tuple[list[str], click.Command]]:
    found: list[tuple[list[str], click.Command]] = []

    def walk(path: list[str], command: click.Command) -> None:
        found.append((path, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk([*path, name], sub)

    walk([], typer.main.get_command(app))
    return found


def _words(text: str) -> str:
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


COMMANDS = _commands()


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(path) or "outreach" for path, _ in COMMANDS])
def test_help_shows_every_bracketed_text(path: list[str], command: click.Command) -> None:
    texts = [command.help or ""] + [p.help or "" for p in command.params if isinstance(p, click.Option)]
    texts += [sub.help or "" for sub in getattr(command, "commands", {}).values()]
    bracketed = sorted({m for text in texts for m in re.findall(r"\[[^\]\n]+\]", text)})
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    shown = _words(result.output)
    assert [b for b in bracketed if b not in shown] == [], shown
