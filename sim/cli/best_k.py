"""``specsim best-k``: the best draft length per batch size as engine configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from sim.cli.serving_options import (
    StudyArgs,
    grown_by,
    parse_loads,
    serving_study_options,
    slo_options,
)

if TYPE_CHECKING:
    from sim.studies.serving.best_k import BestKResult
    from sim.studies.serving.evaluator import PointEvaluator
    from sim.studies.serving.scenario_plans import ScenarioPlans

OBJECTIVE_NAMES: tuple[str, ...] = ("per_user_tok_s", "aggregate_tok_s", "goodput_req_s")


@click.command("best-k")
@serving_study_options("simulations", sequential=True)
@click.option(
    "--concurrency",
    default=None,
    metavar="LIST",
    help="Closed-loop user counts to choose k at, e.g. 1,2,4,8 [default: 1,2,4,...,64].",
)
@click.option(
    "--num-steps",
    "num_steps",
    default="1:4",
    show_default=True,
    metavar="RANGE",
    help="Draft lengths to choose from (plain decoding, k = 0, always competes).",
)
@click.option(
    "--objective",
    type=click.Choice(OBJECTIVE_NAMES),
    default="per_user_tok_s",
    show_default=True,
    help="What the best k maximises; goodput counts requests meeting the SLO limits.",
)
@slo_options
@click.option(
    "--refine/--no-refine",
    default=True,
    show_default=True,
    help="Move each boundary to where its two k tie (bisection) instead of the midpoint.",
)
def best_k(
    args: StudyArgs, concurrency: str | None, num_steps: str, objective: str, refine: bool
) -> None:
    """Best k per batch size for an objective, as a vLLM table and an SGLang threshold.

    Selects the best k at each concurrency, turns it into engine configuration, then
    simulates that configuration against every fixed k at another seed.
    """
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.cli.search import parse_num_steps
    from sim.report.best_k import render_best_k, render_best_k_screen
    from sim.studies.serving.best_k import best_k as run_best_k
    from sim.studies.serving.draws import DrawnPoints
    from sim.studies.serving.scenario_plans import study_settings

    loads = parse_loads(concurrency, None)
    ks = parse_num_steps(num_steps)

    def study(builder: ScenarioPlans, evaluator: PointEvaluator) -> BestKResult:
        settings, notes = study_settings(builder, loads[0])
        return run_best_k(
            evaluator,
            [int(load.value) for load in loads],
            ks,
            objective=objective,
            refine=refine,
            scenario=builder.base["name"],
            settings=settings,
            assumptions=notes,
            draws=DrawnPoints(evaluator, builder.draws, sequential=not args.all_replications),
            draft_method=(builder.base.get("acceptance") or {}).get("method"),
            sequential=not args.all_replications,
        )

    args.run(
        "best_k",
        render_best_k,
        study,
        screen=render_best_k_screen,
        simulations=len(loads) * (len(ks) + 1),
        grown=grown_by(loads, ks),
    )
