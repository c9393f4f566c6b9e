"""Options shared by the Monte Carlo commands of issue 4 (search, sweep, compare, plot).

``--replications``/``--requests``/``--seed`` become scenario overrides (so sweeps key and
fingerprint them like any other field); ``--target`` replaces the scenario's targets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from sim.scenario import Scenario, with_overrides

engine_option = click.option(
    "--engine",
    type=click.Choice(["fast", "des"]),
    default="fast",
    show_default=True,
    help="Monte Carlo engine: vectorized NumPy (fast) or SimPy (des).",
)
replications_option = click.option(
    "--replications", type=int, default=None, help="Replications (default: the scenario's)."
)
requests_option = click.option(
    "--requests", type=int, default=None, help="Requests per replication (default: scenario's)."
)
seed_option = click.option(
    "--seed", type=int, default=None, help="Root seed (default: scenario's)."
)
target_option = click.option(
    "--target",
    "targets",
    type=float,
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
