"""``specsim validate``: check scenario files without running them."""

from __future__ import annotations

import sys

import click

from sim.cli.group import echo_error
from sim.cli.options import set_option
from sim.errors import SpecsimError


@click.command()
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False))
@set_option
def validate(scenarios: tuple[str, ...], sets: tuple[str, ...]) -> None:
    """Validate each SCENARIO file; exit status 2 if any is invalid."""
    from sim.scenario.load import load_scenario  # lazy: start-up

    failed = 0
    for path in scenarios:
        try:
            sc = load_scenario(path, sets)
        except SpecsimError as exc:
            failed += 1
            echo_error(exc)
        else:
            click.echo(f"{path}: ok ({sc.name}, num_steps {sc.num_steps})")
    if failed:
        sys.exit(2)
