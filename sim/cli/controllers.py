"""``specsim controllers``: SGLang's and vLLM's adaptive speculation replayed offline on a
phase-changing workload, against the static best-k table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from sim.cli.serving_options import DEFAULT_KS, StudyArgs, serving_study_options

if TYPE_CHECKING:
    from sim.studies.serving.controllers import Phase, ReplayResult
    from sim.studies.serving.evaluator import PointEvaluator
    from sim.studies.serving.scenario_plans import ScenarioPlans


def parse_phase(text: str) -> Phase:
    """``REQUESTS,RATE,CLASS=SHARE,...`` -> a phase (SpecsimError naming --phase)."""
    # lazy: start-up
    from sim.errors import SpecsimError
    from sim.studies.grid import split_list
    from sim.studies.serving.controllers import Phase

    parts = split_list(text, source="--phase")
    try:
        shares = tuple((name.strip(), float(v)) for name, v in (p.split("=") for p in parts[2:]))
        return Phase(int(parts[0]), float(parts[1]), shares)
    except (ValueError, IndexError) as exc:
        raise SpecsimError(
            f"expected REQUESTS,RATE,CLASS=SHARE,... got {text!r} ({exc})", source="--phase"
        ) from None


@click.command()
@serving_study_options("replications")
@click.option(
    "--phase",
    "phases",
    multiple=True,
    metavar="N,RATE,CLASS=SHARE,...",
    help="A phase: N requests at RATE per second with these class shares (repeatable) "
    "[default: 90%/10% of the lowest- and highest-acceptance classes, swapped, at about "
    "4 and then 16 users' worth of load].",
)
@click.option(
    "--num-steps",
    "num_steps",
    default="1:4",
    show_default=True,
    metavar="RANGE",
    help="Fixed k to compare and to build the static best-k table from.",
)
@click.option(
    "--k-table",
    "k_table",
    default=None,
    metavar="JSON",
    help="The static table to compare with, e.g. '[[1,8,3],[9,1024,0]]' [default: best-k "
    "on the scenario's whole mix at 1, 2, 4, ..., 64 users].",
)
def controllers(
    args: StudyArgs,
    phases: tuple[str, ...],
    num_steps: str,
    k_table: str | None,
) -> None:
    """Replay SGLang adaptive speculative decoding and vLLM dynamic speculative decoding on
    a workload whose class mix (and load) changes, against the static best-k table, every
    fixed k and plain decoding, on the same requests."""
    # lazy: the library is imported when a command runs, not for --help (start-up)
    from sim.cli.search import parse_num_steps
    from sim.report.controllers import render_controllers, render_controllers_screen
    from sim.studies.serving.controllers import controller_study

    ks = parse_num_steps(num_steps)
    parsed = [parse_phase(p) for p in phases]

    def study(builder: ScenarioPlans, evaluator: PointEvaluator) -> ReplayResult:
        return controller_study(builder, evaluator, parsed, ks, k_table=k_table)

    # every fixed k, plain decoding, the static table and the two controllers replay the
    # phases (the static table's own best-k runs come on top)
    args.run(
        "controllers",
        render_controllers,
        study,
        simulations=len(ks) + 4,
        requests=sum(p.requests for p in parsed) if parsed else None,
        grown={
            # against the default phases' 2 x 60 requests
            "phases": (sum(p.requests for p in parsed) / 120, "requests"),
            "num_steps": (len(ks) / DEFAULT_KS, "draft lengths"),
        },
        screen=render_controllers_screen,
    )
