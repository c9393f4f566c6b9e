"""``specsim search``: the acceptance (or any lever) that reaches each tok/s target."""

from __future__ import annotations

import click

from sim.cli import main
from sim.cli.options import (
    echo_json,
    format_option,
    json_option,
    monte_carlo_options,
    plot_option,
    scenario_argument,
    set_option,
    target_option,
    targets_or_scenario,
    with_mc_settings,
    workers_option,
)
from sim.cli.plot import echo_written, save_figures
from sim.errors import SpecsimError
from sim.figures import search_figures
from sim.scenario import load_scenario
from sim.search import search_acceptance
from sim.search_report import render_lever, render_search
from sim.solve import solve_lever
from sim.sweep import parse_grid


def parse_num_steps(text: str) -> list[int]:
    """``1:16``, ``4`` or ``2,4,8`` -> draft lengths."""
    _, values = parse_grid(f"num_steps={text}")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise SpecsimError(f"expected integers >= 1, got {text!r}", source="--num-steps")
    return sorted(values)


@main.command()
@scenario_argument
@set_option
@target_option
@click.option(
    "--num-steps",
    "num_steps",
    default=None,
    metavar="RANGE",
    help="Draft lengths k to search: START:STOP, a list 2,4,8 or one k [default: 1:16].",
)
@click.option(
    "--quantile",
    type=float,
    default=None,
    help="Service-level form: lowest rate at which this fraction of requests reach the target.",
)
@click.option(
    "--solve",
    "solve_field",
    default=None,
    metavar="FIELD",
    help="Solve for another monotone numeric field instead (e.g. timing.verify_ms).",
)
@monte_carlo_options
@workers_option("draft lengths")
@json_option
@plot_option
@format_option
def search(
    scenario: str,
    sets: tuple[str, ...],
    targets: tuple[float, ...],
    num_steps: str | None,
    quantile: float | None,
    solve_field: str | None,
    engine: str,
    replications: int | None,
    requests: int | None,
    seed: int | None,
    workers: int,
    as_json: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Lowest acceptance rate (per target and per k) reaching each tok/s target.

    Brackets with the closed forms, refines by Monte Carlo bisection on common random
    numbers and reports a 95% interval from the Monte Carlo noise.
    """
    scn = with_mc_settings(load_scenario(scenario, sets), replications, requests, seed)
    tgts = targets_or_scenario(targets, scn)
    if solve_field is not None:
        if num_steps is not None:
            raise SpecsimError(
                "--num-steps is for the acceptance search; with --solve set k with "
                "--set speculation.num_steps=K",
                source="--num-steps",
            )
        doc = solve_lever(scn, solve_field, tgts, quantile=quantile, engine=engine).to_dict()
        text = render_lever(doc)
    else:
        ks = parse_num_steps(num_steps or "1:16")
        doc = search_acceptance(
            scn, tgts, ks, quantile=quantile, engine=engine, workers=workers
        ).to_dict()
        text = render_search(doc)
    if plot_dir:
        echo_written(save_figures(search_figures(doc), plot_dir, fmt))
    if as_json:
        echo_json(doc)
    else:
        click.echo(text)
