"""Options shared by several commands.

``--replications``/``--requests``/``--seed`` become scenario overrides where a command
fingerprints its runs (sweeps key them like any other field); ``--target`` replaces the
scenario's targets.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from sim.montecarlo import ENGINES
from sim.scenario import Scenario, with_overrides

scenario_argument = click.argument("scenario", type=click.Path(dir_okay=False, path_type=str))

set_option = click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a scenario field, e.g. --set acceptance.alpha=0.8 (value parsed as TOML).",
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def echo_json(document: Any) -> None:
    """Print a JSON document (NaN and infinities are not JSON: they fail loudly)."""
    click.echo(json.dumps(document, indent=2, allow_nan=False))


engine_option = click.option(
    "--engine",
    type=click.Choice(sorted(ENGINES)),
    default="fast",
    show_default=True,
    help="fast: vectorized NumPy; des: the SimPy model of record.",
)
replications_option = click.option(
    "--replications",
    type=click.IntRange(min=1),
    default=None,
    help="Independent replications [default: simulation.replications].",
)
requests_option = click.option(
    "--requests",
    type=click.IntRange(min=1),
    default=None,
    help="Requests per replication [default: workload.requests].",
)
seed_option = click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Root seed [default: simulation.seed]."
)


def workers_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--workers N``: processes over ``what``; results never depend on N."""
    return click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help=f"Worker processes over {what} (results do not depend on it).",
    )


target_option = click.option(
    "--target",
    "targets",
    type=click.FloatRange(min=0.0, min_open=True),
    multiple=True,
    metavar="TOK_S",
    help="Target tok/s (repeatable; default: the scenario's [targets]).",
)
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
plot_option = click.option(
    "--plot",
    "plot_dir",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    metavar="DIR",
    help="Also write the figures into DIR.",
)
format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["png", "svg"]),
    default="png",
    show_default=True,
    help="Figure file format.",
)


def monte_carlo_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--engine, --replications, --requests, --seed."""
    for option in (seed_option, requests_option, replications_option, engine_option):
        fn = option(fn)
    return fn


def with_mc_settings(
    scenario: Scenario, replications: int | None, requests: int | None, seed: int | None
) -> Scenario:
    """The scenario with --replications/--requests/--seed applied (validated like --set)."""
    overrides: dict[str, Any] = {}
    if replications is not None:
        overrides["simulation.replications"] = replications
    if requests is not None:
        overrides["workload.requests"] = requests
    if seed is not None:
        overrides["simulation.seed"] = seed
    return with_overrides(scenario, overrides, source="option") if overrides else scenario


def targets_or_scenario(targets: tuple[float, ...], scenario: Scenario) -> tuple[float, ...]:
    return tuple(targets) if targets else scenario.target_tok_s
