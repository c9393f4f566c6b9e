"""``specsim crossover``: up to which concurrency (or rate) speculation pays, per metric and k."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from sim.cli.serving_options import (
    StudyArgs,
    grown_by,
    loads_option,
    parse_loads,
    serving_study_options,
)

if TYPE_CHECKING:
    from sim.studies.serving.crossover_result import CrossoverResult
    from sim.studies.serving.evaluator import PointEvaluator
    from sim.studies.serving.scenario_plans import ScenarioPlans


def parse_metrics(text: str | None) -> tuple[str, ...]:
    # lazy: start-up
    from sim.errors import SpecsimError
    from sim.studies.grid import split_list
    from sim.studies.serving.crossover import CROSSOVER_METRICS
    from sim.studies.serving.paired_metrics import METRICS

    if text is None:
        return CROSSOVER_METRICS
    names = tuple(split_list(text, source="--metric"))
    if not names:
        raise SpecsimError("name at least one metric", source="--metric")
    repeated = sorted({m for m in names if names.count(m) > 1})
    if repeated:
        raise SpecsimError(f"metric {', '.join(repeated)} given twice", source="--metric")
    for m in names:
        if m not in METRICS or METRICS[m].needs_slo:
            known = ", ".join(n for n, s in METRICS.items() if not s.needs_slo)
            raise SpecsimError(f"unknown metric {m!r} (known: {known})", source="--metric")
    return names


@click.command()
@serving_study_options("simulations", sequential=True)
@loads_option
@click.option(
    "--num-steps",
    "num_steps",
    default="1:4",
    show_default=True,
    metavar="RANGE",
    help="Draft lengths k to compare with plain decoding: START:STOP, a list or one k.",
)
@click.option(
    "--metric",
    "metrics",
    default=None,
    metavar="LIST",
    help="Metrics [default: per_user_tok_s,aggregate_tok_s,tpot_p50_ms,tpot_p99_ms].",
)
@click.option(
    "--refine/--no-refine",
    default=True,
    show_default=True,
    help="Bisect each crossing between grid loads (more simulations) or interpolate.",
)
def crossover(
    args: StudyArgs,
    concurrency: str | None,
    rate: str | None,
    num_steps: str,
    metrics: str | None,
    refine: bool,
) -> None:
    """Where speculation's paired gain crosses 1 as load grows, per metric and draft length.

    Simulates speculation at each k and plain decoding on the same arrivals at every load
    of the grid (closed-loop users, or Poisson rates), then bisects each crossing and its
    95% interval between grid loads.
    """
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.cli.search import parse_num_steps
    from sim.report.crossover import render_crossover, render_crossover_screen
    from sim.studies.serving.crossover import crossover as run_crossover
    from sim.studies.serving.draws import DrawnPoints
    from sim.studies.serving.scenario_plans import study_settings

    loads = parse_loads(concurrency, rate)
    ks = parse_num_steps(num_steps)
    names = parse_metrics(metrics)

    def study(builder: ScenarioPlans, evaluator: PointEvaluator) -> CrossoverResult:
        settings, notes = study_settings(builder, loads[0])
        return run_crossover(
            evaluator,
            loads,
            ks,
            metrics=names,
            refine=refine,
            scenario=builder.base["name"],
            settings=settings,
            assumptions=notes,
            draws=DrawnPoints(evaluator, builder.draws, sequential=not args.all_replications),
            draft_method=(builder.base.get("acceptance") or {}).get("method"),
            sequential=not args.all_replications,
        )

    args.run(
        "crossover",
        render_crossover,
        study,
        screen=render_crossover_screen,
        simulations=len(loads) * (len(ks) + 1),
        grown=grown_by(loads, ks, rate),
    )
