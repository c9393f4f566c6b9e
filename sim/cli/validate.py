"""``specsim validate``: check scenario files without running them."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from sim.cli.group import echo_error
from sim.cli.options import bind_file, echo_document, json_option, set_option
from sim.errors import SpecsimError

if TYPE_CHECKING:
    from sim.binding.bound import Bound


def serving_checks(bound: Bound, path: str) -> None:
    """The checks ``serve`` and the serving studies make before they simulate, for a
    scenario with a ``[serving]`` section: its trace read and checked, the KV cache
    holding one request, the plan built (SpecsimError as those commands would give)."""
    if bound.scenario.serving is None:
        return
    from pathlib import Path  # lazy: start-up

    from sim.simulation.serving.setup import serving_setup

    serving_setup(bound, base_dir=Path(path).absolute().parent, source=path)


@click.command()
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False))
@set_option
@json_option
def validate(scenarios: tuple[str, ...], sets: tuple[str, ...], as_json: bool) -> None:
    """Validate each SCENARIO file; exit status 2 if any is invalid."""
    # lazy: start-up
    from sim.cli.group import cli_error
    from sim.scenario.load import load_scenario

    failed = 0
    results = []
    for path in scenarios:
        try:
            sc = load_scenario(path, sets)
            bound = bind_file(sc, path, sets)  # the hardware model checks the values too
            serving_checks(bound, path)
        except SpecsimError as exc:
            failed += 1
            if not as_json:
                echo_error(exc)
            results.append({"path": path, "ok": False, "error": str(cli_error(exc))})
        else:
            if not as_json:
                click.echo(f"{path}: ok ({sc.name}, num_steps {sc.num_steps})")
            results.append({"path": path, "ok": True, "name": sc.name, "num_steps": sc.num_steps})
    if as_json:
        echo_document("validate", {"files": results, "valid": not failed})
    if failed:
        sys.exit(2)
