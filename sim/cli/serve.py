"""``specsim serve``: the scenario's server under load, speculation on and off side by side."""

from __future__ import annotations

from pathlib import Path

import click

from sim.cli.options import (
    format_option,
    json_option,
    plot_option,
    quiet_option,
    replications_option,
    requests_option,
    scenario_argument,
    seed_option,
    set_option,
    with_mc_settings,
    workers_option,
)
from sim.cli.progress import ProgressBar
from sim.cli.serving_options import emit


@click.command()
@scenario_argument
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Closed loop of C users, each sending its next request when the last is answered "
    "[default: serving.concurrency].",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    metavar="REQ_PER_S",
    help="Poisson arrivals at this rate [default: serving.rate_per_s].",
)
@click.option(
    "--trace",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    metavar="FILE",
    help="Replay a CSV trace (arrival_s, input_tokens, output_tokens[, class]).",
)
@click.option(
    "--draws",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Sobol draws of the uncertain inputs for the 90% intervals from inputs and model "
    "(each 2 replications on the nominal run's first seeds); 0: Monte Carlo intervals only.",
)
@set_option
@json_option
@seed_option
@requests_option
@replications_option
@workers_option("replications")
@quiet_option
@plot_option
@format_option
def serve(
    scenario: str,
    concurrency: int | None,
    rate: float | None,
    trace: str | None,
    draws: int,
    sets: tuple[str, ...],
    as_json: bool,
    seed: int | None,
    requests: int | None,
    replications: int | None,
    workers: int,
    quiet: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Serve the scenario under concurrency: TTFT, TPOT, ITL, per-user and aggregate tok/s,
    with speculation and without it on the same arrivals (paired speedup)."""
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.binding.bound import bind
    from sim.report.serving import render_serving, serving_to_dict, unstable_to_dict
    from sim.scenario.load import load_scenario
    from sim.simulation.serving.metrics import summarize_serving
    from sim.simulation.serving.setup import BASELINE, serving_setup, with_load
    from sim.simulation.serving.simulate import simulate_serving
    from sim.simulation.serving.stability import check_open_load
    from sim.studies.serving_draws import serve_intervals

    given = [
        n for n, v in (("--concurrency", concurrency), ("--rate", rate), ("--trace", trace)) if v
    ]
    if len(given) > 1:
        raise click.UsageError(
            f"give at most one of --concurrency, --rate, --trace (got {', '.join(given)})"
        )
    sc = load_scenario(scenario, sets)
    if given:
        sc = with_load(
            sc,
            concurrency=concurrency,
            rate_per_s=rate,
            trace=str(Path(trace).resolve()) if trace else None,
            source=given[0],
        )
    sc = with_mc_settings(sc, replications, requests, seed)
    bound = bind(sc)  # what the scenario means, once
    setup = serving_setup(bound, base_dir=Path(scenario).resolve().parent, source=scenario)
    check = check_open_load(setup.plan, setup.policies)
    if check is not None and not check.stable:
        body = unstable_to_dict(setup, sc.name, check)
        if plot_dir and not quiet:
            click.echo("no figures: the load is above what the server answers, nothing ran")
        emit("serve", body, render_serving, as_json=as_json, plot_dir=None, fmt=fmt, quiet=quiet)
        return
    with ProgressBar(enabled=not quiet) as progress:
        run = simulate_serving(
            setup.plan,
            setup.policies,
            replications=setup.replications,
            seed=setup.seed,
            workers=workers,
            progress=progress,
        )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    body = serving_to_dict(run, summary, setup, sc.name)
    if draws:
        body["interval90"] = serve_intervals(
            sc,
            run.records,
            slo=setup.slo,
            seed=setup.seed,
            base_dir=Path(scenario).resolve().parent,
            source=scenario,
            workers=workers,
            baseline=BASELINE,
            batch=max(p.mean_batch.mean for p in summary.policies.values()),
            draws=draws,
        )
    emit("serve", body, render_serving, as_json=as_json, plot_dir=plot_dir, fmt=fmt, quiet=quiet)
