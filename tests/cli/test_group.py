"""The command group: commands registered by module, imported when invoked, and their help
lines kept beside them without drifting from the commands' own docstrings."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from sim.cli import COMMANDS, main
from sim.cli.group import flag_for

SIM = Path(__file__).resolve().parents[2] / "sim"


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


#: Library parameters no flag sets, so no error of theirs reaches the command line as such.
LIBRARY_ONLY = {
    "bracket": "the root finder's bracket, chosen by the code that calls it",
    "first": "the replication a study's point continues from (sequential replications)",
    "loads": "parse_loads re-raises its errors naming --concurrency or --rate",
    "policies": "the policies a serving study builds for itself",
}


def _library_params() -> dict[str, set[str]]:
    """Each ``param="..."`` given to a call in sim/ -> the files that give it."""
    found: dict[str, set[str]] = {}
    for path in sorted(SIM.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            for kw in node.keywords if isinstance(node, ast.Call) else ():
                if kw.arg == "param" and isinstance(kw.value, ast.Constant):
                    found.setdefault(str(kw.value.value), set()).add(path.name)
    return found


def _every_option() -> set[str]:
    ctx = click.Context(main)
    options: set[str] = set()
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None
        for param in command.params:
            if isinstance(param, click.Option):
                options.update(param.opts)
    return options


def test_every_library_parameter_is_named_by_a_real_flag() -> None:
    """An error from the library names the flag that sets its parameter (flag_for); that
    flag must be one a command has (controllers' --phase, not --phases)."""
    options = _every_option()
    params = _library_params()
    assert set(LIBRARY_ONLY) <= set(params)
    wrong = {
        p: (flag_for(p), sorted(files))
        for p, files in params.items()
        if p not in LIBRARY_ONLY and flag_for(p) not in options
    }
    assert not wrong
