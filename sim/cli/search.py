"""``specsim search``: the acceptance (or any lever) that reaches each tok/s target."""

from __future__ import annotations

from pathlib import Path

import click

from sim.cli.options import (
    echo_document,
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


def parse_num_steps(text: str) -> list[int]:
    """``1:16``, ``4`` or ``2,4,8`` -> draft lengths."""
    # lazy: start-up
    from sim.errors import SpecsimError
    from sim.studies.grid import parse_grid

    try:
        _, values = parse_grid(f"num_steps={text}")
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source="--num-steps") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise SpecsimError(f"expected integers >= 1, got {text!r}", source="--num-steps")
    return sorted(values)


@click.command()
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
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Per-user tok/s simulated by the serving engine with C concurrent users.",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    metavar="REQ_PER_S",
    help="Per-user tok/s simulated by the serving engine under Poisson arrivals.",
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
    concurrency: int | None,
    rate: float | None,
    engine: str,
    fidelity: str,
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
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.errors import SpecsimError
    from sim.report.search import render_lever, render_search
    from sim.scenario.load import load_scenario
    from sim.studies.search import search_acceptance
    from sim.studies.serving_points import Load
    from sim.studies.serving_search import search_at_load
    from sim.studies.solve import solve_lever

    scn = with_mc_settings(load_scenario(scenario, sets), replications, requests, seed)
    tgts = targets_or_scenario(targets, scn)
    if solve_field is not None:
        if num_steps is not None:
            raise SpecsimError(
                "--num-steps is for the acceptance search; with --solve set k with "
                "--set speculation.num_steps=K",
                source="--num-steps",
            )
        if concurrency is not None or rate is not None:
            raise SpecsimError(
                "--solve runs the batch-1 Monte Carlo; --concurrency/--rate are for the "
                "acceptance search",
                source="--concurrency" if concurrency is not None else "--rate",
            )
        kind = "solve"
        doc = solve_lever(
            scn, solve_field, tgts, quantile=quantile, engine=engine, fidelity=fidelity
        ).to_dict()
        text = render_lever(doc)
    elif concurrency is not None or rate is not None:
        if concurrency is not None and rate is not None:
            raise click.UsageError("give at most one of --concurrency, --rate")
        load = Load("concurrency", concurrency) if concurrency else Load("rate", rate)
        kind = "search"
        ks = parse_num_steps(num_steps or "1:8")
        doc = search_at_load(
            scn,
            tgts,
            ks,
            load,
            quantile=quantile,
            workers=workers,
            base_dir=Path(scenario).resolve().parent,
        ).to_dict()
        text = render_search(doc)
    else:
        kind = "search"
        ks = parse_num_steps(num_steps or "1:16")
        doc = search_acceptance(
            scn, tgts, ks, quantile=quantile, engine=engine, fidelity=fidelity, workers=workers
        ).to_dict()
        text = render_search(doc)
    if plot_dir:
        # lazy: matplotlib only when --plot is given (start-up)
        from sim.cli.plot import echo_written, save_figures
        from sim.documents import document
        from sim.report.figures import figures_for

        echo_written(save_figures(figures_for(document(kind, doc)), plot_dir, fmt))
    if as_json:
        echo_document(kind, doc)
    else:
        click.echo(text)
