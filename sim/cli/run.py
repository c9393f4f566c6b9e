"""``specsim run``: the closed-form answer and the Monte Carlo distribution of one scenario."""

from __future__ import annotations

import click

from sim.analysis import analyze
from sim.cli import main
from sim.cli.options import (
    echo_json,
    format_option,
    json_option,
    monte_carlo_options,
    plot_option,
    quiet_option,
    scenario_argument,
    set_option,
    workers_option,
)
from sim.cli.plot import echo_written, save_figures
from sim.cli.progress import ProgressBar
from sim.engines.layer_times import layer_cycle_times
from sim.errors import SpecsimError
from sim.figures import run_figures
from sim.mc_report import merge_montecarlo, render_montecarlo
from sim.montecarlo import model_rng, simulate, summarize
from sim.report import analysis_to_dict, render_analysis
from sim.scenario import load_scenario


@main.command()
@scenario_argument
@set_option
@json_option
@monte_carlo_options
@workers_option("replications")
@click.option(
    "--fidelity",
    type=click.Choice(["cycle", "layer"]),
    default="cycle",
    show_default=True,
    help="cycle: pass times from the cost model; layer: drawn from the layer-level SimPy "
    "pass (TP ranks, all-reduce barriers, kernel launches; sim/engines/layer.py).",
)
@quiet_option
@plot_option
@format_option
def run(
    scenario: str,
    sets: tuple[str, ...],
    as_json: bool,
    replications: int | None,
    requests: int | None,
    seed: int | None,
    workers: int,
    engine: str,
    fidelity: str,
    quiet: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Throughput, accept length, cycle breakdown and what each target needs, in closed form
    and as a Monte Carlo distribution over requests."""
    sc = load_scenario(scenario, sets)
    analysis = analyze(sc)
    cycle_times = None
    if fidelity == "layer":
        root = sc.simulation.seed if seed is None else seed
        try:
            cycle_times = layer_cycle_times(sc, model_rng(root))
        except SpecsimError as exc:
            raise SpecsimError(exc.message, source=scenario, field=exc.field) from None
    with ProgressBar(enabled=not quiet) as progress:
        result = simulate(
            sc,
            engine=engine,
            replications=replications,
            requests=requests,
            seed=seed,
            workers=workers,
            progress=progress,
            cycle_times=cycle_times,
        )
    summary = summarize(result)
    document = merge_montecarlo(analysis_to_dict(analysis), summary)
    if plot_dir:
        echo_written(save_figures(run_figures(document, result.tok_s), plot_dir, fmt))
    if as_json:
        echo_json(document)
    else:
        click.echo(render_analysis(analysis))
        click.echo(render_montecarlo(summary, result))
