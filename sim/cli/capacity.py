"""``specsim capacity``: the highest request rate meeting TTFT/TPOT SLOs, with and without
speculation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from sim.cli.options import FiniteFloatRange
from sim.cli.serving_options import DEFAULT_KS, StudyArgs, serving_study_options, slo_options

if TYPE_CHECKING:
    from sim.studies.serving.capacity import CapacityResult
    from sim.studies.serving.evaluator import PointEvaluator
    from sim.studies.serving.scenario_plans import ScenarioPlans


@click.command()
@serving_study_options("draft lengths", sequential=True)
@click.option(
    "--num-steps",
    "num_steps",
    default="1:4",
    show_default=True,
    metavar="RANGE",
    help="Draft lengths k to find the capacity of (plain decoding always included).",
)
@click.option(
    "--share",
    # below a thousandth no run of the scenario's requests tells one share from none
    type=FiniteFloatRange(0.001, 1.0, max_open=True),
    default=0.9,
    show_default=True,
    help="Fraction of requests that must meet the SLO limits.",
)
@slo_options
@click.option(
    "--rtol",
    type=FiniteFloatRange(0.001, 0.5),
    default=None,
    help="Relative tolerance of the rate's bisection (the capacity is interpolated inside "
    "its last bracket) [default: 4.4%, one step of the draws' rate ladder].",
)
def capacity(args: StudyArgs, num_steps: str, share: float, rtol: float | None) -> None:
    """Highest Poisson rate at which a share of requests meets the TTFT and TPOT limits.

    Root finding on common random numbers along the rate, for plain decoding and each k,
    with a 95% interval from the Monte Carlo noise.
    """
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.cli.search import parse_num_steps
    from sim.report.capacity import render_capacity
    from sim.studies.serving.capacity import DEFAULT_RTOL, search_points
    from sim.studies.serving.capacity import capacity as run_capacity
    from sim.studies.serving.draws import DrawnPoints
    from sim.studies.serving.paired_metrics import Load
    from sim.studies.serving.scenario_plans import study_settings

    ks = parse_num_steps(num_steps)
    tol = DEFAULT_RTOL if rtol is None else rtol

    def study(builder: ScenarioPlans, evaluator: PointEvaluator) -> CapacityResult:
        settings, notes = study_settings(builder, Load("rate", 1.0))
        return run_capacity(
            evaluator,
            ks,
            share=share,
            rtol=tol,
            scenario=builder.base["name"],
            settings=settings,
            assumptions=notes,
            draws=DrawnPoints(evaluator, builder.draws),
            sequential=not args.all_replications,
        )

    # plain decoding and each k search at most search_points rates; one user's run first
    args.run(
        "capacity",
        render_capacity,
        study,
        simulations=1 + (len(ks) + 1) * search_points(tol),
        grown={"num_steps": (len(ks) / DEFAULT_KS, "draft lengths")},
    )
