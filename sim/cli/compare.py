"""``specsim compare``: scenarios side by side, with ratios to the first."""

from __future__ import annotations

import click

from sim.cli import main
from sim.cli.options import (
    echo_json,
    format_option,
    json_option,
    monte_carlo_options,
    plot_option,
    set_option,
    target_option,
    with_mc_settings,
    workers_option,
)
from sim.cli.plot import echo_written, save_figures
from sim.compare import compare_scenarios, render_comparison, unique_labels
from sim.figures import compare_figures
from sim.scenario import load_scenario


@main.command()
@click.argument(
    "scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=str)
)
@set_option
@target_option
@monte_carlo_options
@workers_option("replications of each run")
@json_option
@plot_option
@format_option
def compare(
    scenarios: tuple[str, ...],
    sets: tuple[str, ...],
    targets: tuple[float, ...],
    engine: str,
    replications: int | None,
    requests: int | None,
    seed: int | None,
    workers: int,
    as_json: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Baseline, speculative tok/s with CI, accept length, cycle breakdown and required
    alpha per target for each SCENARIO (--set applies to all), ratios to the first."""
    loaded = [
        with_mc_settings(load_scenario(p, sets), replications, requests, seed) for p in scenarios
    ]
    doc = compare_scenarios(
        list(zip(unique_labels(scenarios), loaded, strict=True)),
        targets=targets,
        engine=engine,
        workers=workers,
    )
    if plot_dir:
        echo_written(save_figures(compare_figures(doc), plot_dir, fmt))
    if as_json:
        echo_json(doc)
    else:
        click.echo(render_comparison(doc))
