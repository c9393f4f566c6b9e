"""The ``specsim`` command group: thin click commands over the library API.

Each command module parses its options, calls one library function and prints or writes
the result. ``SpecsimError`` (bad input) becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from sim import __version__
from sim.errors import SpecsimError


def echo_error(exc: SpecsimError) -> None:
    """The one line on stderr that bad input gets."""
    click.echo(f"specsim: error: {exc}", err=True)


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


# Command modules register themselves on ``main`` when imported.
from sim.cli import calibrate as _calibrate  # noqa: E402,F401
from sim.cli import compare, convert, plot, run, search, sweep, validate  # noqa: E402,F401
from sim.cli import hardware as _hardware  # noqa: E402,F401
