"""``specsim run``: the closed-form answer and the Monte Carlo distribution of one scenario."""

from __future__ import annotations

import click
from click.core import ParameterSource

from sim.cli.options import (
    bind_file,
    echo_document,
    format_option,
    json_option,
    monte_carlo_options,
    plot_option,
    quiet_option,
    scenario_argument,
    set_option,
    target_option,
    target_setting,
    verbose_option,
    workers_option,
)
from sim.cli.progress import ProgressBar, announce_slow_intervals

#: sim/simulation/distribution.py ``request_distribution``'s methods.
METHODS = ("monte-carlo", "exact", "auto")

#: Options that only shape a Monte Carlo sample: the exact law has none to shape.
MONTE_CARLO_ONLY = ("engine", "replications", "requests", "workers")


def given_on_command_line(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """The ``--`` flags among ``names`` that the user gave (not left at their default)."""
    return [
        f"--{name}"
        for name in names
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    ]


@click.command()
@scenario_argument
@set_option
@target_option
@json_option
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="monte-carlo",
    show_default=True,
    help="monte-carlo: simulate; exact: the exact per-request law without noise (one shared "
    "rate profile and fixed cycle times; exit 2 otherwise); auto: exact where it exists.",
)
@monte_carlo_options
@workers_option("replications")
@quiet_option
@verbose_option
@plot_option
@format_option
def run(
    scenario: str,
    sets: tuple[str, ...],
    targets: tuple[float, ...],
    as_json: bool,
    method: str,
    replications: int | None,
    requests: int | None,
    seed: int | None,
    workers: int,
    engine: str,
    fidelity: str,
    quiet: bool,
    verbose: bool,
    plot_dir: str | None,
    fmt: str,
) -> None:
    """Throughput, accept length, cycle breakdown and what each target needs, in closed form
    and as a Monte Carlo distribution over requests."""
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.report.analysis import analysis_to_dict, render_analysis
    from sim.report.montecarlo import merge_montecarlo, render_exact, render_montecarlo
    from sim.report.screen import within_screen
    from sim.scenario.load import load_scenario
    from sim.simulation.distribution import request_distribution
    from sim.studies.analysis import analyze

    sc = load_scenario(scenario, sets, [target_setting(targets)])
    bound = bind_file(sc, scenario, sets)  # once: analysis, exact law and Monte Carlo
    announce_slow_intervals([bound], enabled=not quiet)
    analysis = analyze(bound, uncertainty=True)
    with ProgressBar(enabled=not quiet) as progress:
        dist = request_distribution(
            bound,
            method=method,
            engine=engine,
            fidelity=fidelity,
            replications=replications,
            requests=requests,
            seed=seed,
            workers=workers,
            progress=progress,
            monte_carlo_options=given_on_command_line(
                click.get_current_context(), MONTE_CARLO_ONLY
            ),
            source=scenario,
        )
    doc = analysis_to_dict(analysis)  # once: the JSON's and the text's answer
    body = merge_montecarlo(doc, dist.summary)
    if plot_dir:
        # lazy: matplotlib only when --plot is given (start-up)
        from sim.cli.plot import echo_written, save_figures
        from sim.report.figures import run_figures

        if dist.law is not None:  # the law's support and probabilities: the distribution
            figures = run_figures(
                body, dist.law.values, dist.law.probs, "share of requests (exact law)"
            )
        elif dist.result is not None and dist.result.stream is not None:
            # streamed: no per-request array, its log histogram
            middles, counts = dist.result.stream.histogram.nonzero()
            figures = run_figures(body, middles, counts)
        else:
            assert dist.result is not None
            figures = run_figures(body, dist.result.tok_s)
        echo_written(save_figures(figures, plot_dir, fmt), quiet)
    if as_json:
        echo_document("run", body)
        return
    parts = [render_analysis(analysis, doc, verbose)]
    if dist.law is not None:
        parts.append(render_exact(dist.summary, dist.law, verbose))
        if dist.unused:
            parts.append(f"  (--method auto: the law is exact; {', '.join(dist.unused)} unused)")
    else:
        assert dist.result is not None
        parts.append(render_montecarlo(dist.summary, dist.result, verbose))
        if dist.fallback:
            parts.append(f"  ({dist.fallback})")
    if not verbose:  # the first screen: over 25 lines, without its blank lines
        parts = within_screen([(p.splitlines(), None) for p in parts])
    click.echo("\n".join(parts))
