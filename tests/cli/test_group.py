"""The command group: commands registered by module, imported when invoked, and their help
lines kept beside them without drifting from the commands' own docstrings."""

from __future__ import annotations

import importlib

import click
import pytest
from click.testing import CliRunner

from sim.cli import COMMANDS, main


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_registered_command_resolves_to_itself(name: str) -> None:
    module, attribute, _ = COMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command) and command.name == name
    assert main.get_command(click.Context(main), name) is command


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("limit", [30, 45, 80, 400])
def test_kept_help_line_is_the_commands_own(name: str, limit: int) -> None:
    """The table's help (printed by ``--help`` without importing the command) reads as
    click would print it from the command's docstring."""
    module, attribute, text = COMMANDS[name]
    command = getattr(importlib.import_module(module), attribute)
    stand_in = click.Command(name, help=text)
    assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit)


def test_help_lists_every_command_once() -> None:
    out = CliRunner().invoke(main, ["--help"]).output
    listed = [line.split()[0] for line in out.split("Commands:")[1].strip().splitlines()]
    assert listed == sorted(COMMANDS)
