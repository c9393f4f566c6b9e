"""Options shared by the serving decision commands (crossover, best-k, capacity, controllers).

Each command builds its study from the scenario the same way: ``--set`` and the Monte
Carlo options applied, SLO limits from the flags (they become ``serving.*_slo_ms``
overrides, so the document's settings show them), then a ``PointEvaluator`` over
``ScenarioPlans`` (sim/studies/serving/scenario_plans.py). Importing this module imports no
simulation code (start-up).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sim.cli.options import (
    FiniteFloatRange,
    bind_file,
    executor_options,
    format_option,
    json_option,
    list_values,
    plot_option,
    quiet_option,
    replications_option,
    requests_option,
    scenario_argument,
    seed_option,
    set_option,
    verbose_option,
    workers_option,
)
from sim.cli.progress import ProgressBar

if TYPE_CHECKING:
    from sim.studies.serving.evaluator import PointEvaluator
    from sim.studies.serving.paired_metrics import Load
    from sim.studies.serving.scenario_plans import ScenarioPlans

__all__ = [
    "DEFAULT_KS",
    "StudyArgs",
    "build_study",
    "draws_option",
    "grown_by",
    "loads_option",
    "parse_loads",
    "sequential_option",
    "serving_study_options",
    "slo_options",
]


def parse_values(text: str, flag: str) -> list[float]:
    """``1,2,4,8``, ``1:8`` or ``0.5:4:0.5`` -> numbers (SpecsimError naming the flag)."""
    from sim.errors import SpecsimError  # lazy: start-up

    values = list_values(text, flag)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        raise SpecsimError(f"expected numbers, got {text!r}", source=flag)
    return [float(v) for v in values]


def parse_loads(concurrency: str | None, rate: str | None, default_top: int = 64) -> list[Load]:
    """The load grid of ``--concurrency LIST`` or ``--rate LIST`` (default: 1, 2, 4, ...,
    ``default_top`` users)."""
    # lazy: start-up
    from sim.errors import SpecsimError
    from sim.studies.serving.crossover import default_loads, load_grid

    if concurrency is not None and rate is not None:
        raise click.UsageError("give at most one of --concurrency, --rate")
    if rate is not None:
        kind, flag, values = "rate", "--rate", parse_values(rate, "--rate")
    else:
        kind, flag = "concurrency", "--concurrency"
        values = (
            parse_values(concurrency, flag)
            if concurrency is not None
            else default_loads("concurrency", default_top)
        )
    try:
        return load_grid(kind, values)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, source=flag) from None


#: Loads of the default grid (1, 2, 4, ..., 64 users) and draft lengths of ``1:4``.
DEFAULT_LOADS, DEFAULT_KS = 7, 4


def grown_by(
    loads: list[Load], ks: list[int], rate: str | None = None
) -> dict[str, tuple[float, str]]:
    """How many times the default grid's size the load list and ``--num-steps`` make a
    study (``check_serving_size``'s ``grown``)."""
    return {
        "rate" if rate is not None else "concurrency": (len(loads) / DEFAULT_LOADS, "loads"),
        "num_steps": (len(ks) / DEFAULT_KS, "draft lengths"),
    }


def loads_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--concurrency LIST / --rate LIST."""
    fn = click.option(
        "--rate",
        default=None,
        metavar="LIST",
        help="Poisson arrival rates (requests/s) to simulate, e.g. 0.5,1,2,4 or 1:8.",
    )(fn)
    return click.option(
        "--concurrency",
        default=None,
        metavar="LIST",
        help="Closed-loop user counts to simulate, e.g. 1,2,4,8,16 [default: 1,2,4,...,64].",
    )(fn)


def _spread_draws(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """``--draws``, refused at 1: one draw has no spread, so its interval would be the Monte
    Carlo one alone (sim/studies/serving/draw_intervals.py ``prediction_half_width`` needs
    two; a library call given one labels it so, ``IntervalSources``)."""
    if value == 1:
        raise click.BadParameter(
            "1 draw has no spread to give an interval from inputs and model: give 0 (Monte "
            "Carlo intervals only) or at least 2 (few draws give a wide interval: the default "
            "is 8)",
            ctx=ctx,
            param=param,
        )
    return value


def draws_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--draws N: Sobol draws of the uncertain inputs for the 90% intervals from inputs and
    model (sim/uncertainty/perturb.py ``DRAWS``, 8, by default; 0: Monte Carlo only; 1 is
    refused: one draw has no spread)."""
    return click.option(
        "--draws",
        type=click.IntRange(min=0),
        default=8,
        show_default=True,
        callback=_spread_draws,
        help="Sobol draws of the uncertain inputs for the 90% intervals from inputs and model "
        "(each up to 2 replications on the nominal run's first seeds); 0: Monte Carlo intervals "
        "only; 1 is refused (no spread).",
    )(fn)


def sequential_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--all-replications: every point runs every replication (sequential replications,
    sim/studies/serving/sequential.py, off)."""
    return click.option(
        "--all-replications",
        "all_replications",
        is_flag=True,
        default=False,
        help="Run every replication at every point, and both of every draw's. By default a "
        "point stops after its first 4 where every comparison it enters lies more than 4 "
        "standard errors on one side (of 1, 0 or the share); the points that decide an "
        "answer run them all.",
    )(fn)


def slo_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--ttft-slo-ms / --tpot-slo-ms (default: serving.ttft_slo_ms / tpot_slo_ms)."""
    fn = click.option(
        "--tpot-slo-ms",
        type=FiniteFloatRange(min=1e-3, max=1e9),
        default=None,
        help="TPOT limit of the SLO [default: serving.tpot_slo_ms].",
    )(fn)
    return click.option(
        "--ttft-slo-ms",
        type=FiniteFloatRange(min=1e-3, max=1e9),
        default=None,
        help="TTFT limit of the SLO [default: serving.ttft_slo_ms].",
    )(fn)


@dataclass(frozen=True, slots=True)
class StudyArgs:
    """What every serving decision command takes: the scenario, ``--set``, the Monte Carlo
    options, ``--workers``, the output flags and (where the command has them) the SLO
    limits."""

    scenario: str
    sets: tuple[str, ...]
    replications: int | None
    requests: int | None
    seed: int | None
    workers: int | None
    quiet: bool
    as_json: bool
    plot_dir: str | None
    fmt: str
    verbose: bool = False
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    executor: str = "local"
    scheduler: str | None = None
    draws: int = 8
    all_replications: bool = False

    def run(
        self,
        kind: str,
        render: Callable[[dict[str, Any]], str],
        study: Callable[[ScenarioPlans, PointEvaluator], Any],
        screen: Callable[[dict[str, Any]], str] | None = None,
        *,
        simulations: int | None = None,
        requests: int | None = None,
        grown: dict[str, tuple[float, str]] | None = None,
    ) -> None:
        """Build the study (with a progress bar unless ``--quiet``), run ``study`` on its
        plan builder and evaluator, then print (and plot) the result's document: its first
        screen (``screen``; default ``render``'s text with the assumptions in one line),
        or with ``--verbose`` every table (``render``). ``simulations``: the serving runs
        (load x policy) the study makes, checked against the memory and time limits before
        any runs (``requests``: each run's requests, when not the scenario's warm-up +
        requests); ``grown``: the command's own options against their defaults
        (``check_serving_size``), so that a size error names the option that made the work
        large."""
        from sim.parallel import close_executor  # lazy: start-up

        with ProgressBar(enabled=not self.quiet) as progress:
            builder, evaluator = build_study(self, progress, simulations, requests, grown)
            try:
                result = study(builder, evaluator)
            finally:
                close_executor(evaluator.executor)
        if not self.verbose:
            # lazy: the report layer when a command runs, not for --help (start-up)
            from sim.report.screen import first_screen

            full = render
            render = screen or (lambda doc: first_screen(full(doc), doc.get("assumptions", ())))
        emit(
            kind,
            result.to_dict(),
            render,
            as_json=self.as_json,
            plot_dir=self.plot_dir,
            fmt=self.fmt,
            quiet=self.quiet,
        )


#: The command parameters ``StudyArgs`` collects (the SLO pair only where declared).
_STUDY_PARAMS = tuple(f.name for f in fields(StudyArgs))


def serving_study_options(
    what: str, sequential: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """SCENARIO, --set, the Monte Carlo options, --workers, --quiet, --json, --plot, --format;
    the command receives them (and --ttft-slo-ms / --tpot-slo-ms when it declares
    ``slo_options``) as one ``StudyArgs``, its first argument. ``sequential``: the command
    stops replications where its comparisons are settled, and takes --all-replications."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            args = StudyArgs(**{k: kwargs.pop(k) for k in _STUDY_PARAMS if k in kwargs})
            return fn(args, **kwargs)

        decorated: Callable[..., Any] = command
        for option in (
            *((sequential_option,) if sequential else ()),
            draws_option,
            verbose_option,
            format_option,
            plot_option,
            json_option,
            quiet_option,
            executor_options,
            workers_option(what, auto=True),
            seed_option,
            requests_option,
            replications_option,
            set_option,
            scenario_argument,
        ):
            decorated = option(decorated)
        return decorated

    return decorate


def build_study(
    args: StudyArgs,
    progress: Callable[[int, int | None], None] | None,
    simulations: int | None = None,
    requests: int | None = None,
    grown: dict[str, tuple[float, str]] | None = None,
) -> tuple[ScenarioPlans, PointEvaluator]:
    """The scenario's plan builder and an evaluator at its seed and replications (the
    study's size checked first when ``simulations`` is given: see ``StudyArgs.run``)."""
    # lazy: start-up
    from sim.parallel import make_executor, resolve_workers
    from sim.scenario.load import load_scenario
    from sim.scenario.overrides import sample_settings, with_settings
    from sim.simulation.budget import check_serving_size
    from sim.studies.serving.serve import serving_study

    settings = [
        *sample_settings(args.replications, args.requests, args.seed),
        ("--ttft-slo-ms", "serving.ttft_slo_ms", args.ttft_slo_ms),
        ("--tpot-slo-ms", "serving.tpot_slo_ms", args.tpot_slo_ms),
    ]  # an error names the flag, as --rate's names --rate
    raw = load_scenario(args.scenario, args.sets)
    # what the scenario means, bound once: the hardware model checks it here
    bound = bind_file(with_settings(raw, settings), args.scenario, args.sets)
    workers = resolve_workers(args.executor, args.workers)
    builder, evaluator = serving_study(
        bound,
        executor=make_executor(args.executor, workers=workers, scheduler=args.scheduler),
        base_dir=Path(args.scenario).resolve().parent,
        source=args.scenario,
        progress=progress,
        draws=args.draws,
    )
    if simulations is not None:  # nothing has run yet
        setup = builder.setup(None, builder.default_steps)
        workload = setup.plan.workload
        mine = dict(grown or {})
        for given, written, what in (
            (args.replications, raw.simulation.replications, "replications"),
            (args.requests, raw.workload.requests, "requests"),
        ):
            if given is not None:
                mine[what] = (given / written, what)
        check_serving_size(
            simulations,
            setup.replications,
            requests if requests is not None else workload.requests + workload.warmup,
            workers,
            grown=mine,
        )
    return builder, evaluator


def emit(
    kind: str,
    doc: dict[str, Any],
    render: Callable[[dict[str, Any]], str],
    *,
    as_json: bool,
    plot_dir: str | None,
    fmt: str,
    quiet: bool = False,
) -> None:
    """Write the figures of ``doc`` (``--plot``; ``quiet``: without the "wrote" lines),
    then print it as JSON or as text (the figures and the JSON from one document of
    ``kind``)."""
    # lazy: start-up
    from sim.cli.options import echo_json
    from sim.documents import document

    full = document(kind, doc)
    if plot_dir:
        # lazy: matplotlib only when --plot is given (start-up)
        from sim.cli.plot import echo_written, save_figures
        from sim.report.figures import figures_for

        echo_written(save_figures(figures_for(full), plot_dir, fmt), quiet)
    if as_json:
        echo_json(full)
    else:
        click.echo(render(doc))
