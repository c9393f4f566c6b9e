"""The ``specsim`` command group and the one place bad input becomes one line and exit 2.

Library errors name the library's parameters (``SpecsimError.param``); ``flag_for`` maps
each to the flag that sets it, so messages speak the command line's language.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from sim import __version__
from sim.errors import SpecsimError

#: Library parameters whose flag is not ``--`` + the name with hyphens.
PARAM_FLAGS: dict[str, str] = {
    "field": "--solve",
    "targets": "--target",
    "sets": "--set",
    "grids": "--grid",
    "fit_timing": "--fit",
    "trees": "--tree",
    "chains": "--chain",
    "concurrencies": "--concurrency",
}


def flag_for(param: str) -> str:
    """The command-line flag that sets library parameter ``param``."""
    return PARAM_FLAGS.get(param, "--" + param.replace("_", "-"))


def cli_error(exc: SpecsimError) -> SpecsimError:
    """``exc`` with its parameter (if it has no other source) named by its flag."""
    if exc.source is None and exc.param is not None:
        return SpecsimError(exc.message, source=flag_for(exc.param), field=exc.field)
    return exc


def echo_error(exc: SpecsimError) -> None:
    """The one line on stderr that bad input gets."""
    click.echo(f"specsim: error: {cli_error(exc)}", err=True)


class SpecsimGroup(click.Group):
    """A click group that turns bad input into one line and exit status 2, no traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SpecsimError as exc:
            echo_error(exc)
            sys.exit(2)


@click.group(cls=SpecsimGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="specsim")
def main() -> None:
    """Simulate EAGLE-style speculative decoding: throughput, its spread, and what it takes."""
