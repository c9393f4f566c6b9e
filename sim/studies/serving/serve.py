"""A scenario's server under load in one call, and the evaluator the serving decisions
(crossover, best k, capacity, controllers) run on: the library face of ``specsim serve``
and of the serving decision commands.

``serve`` (the load given as keywords) and ``serve_bound`` (a scenario that holds its load
already, as ``specsim serve`` loads it) run the scenario's speculation policy and plain
decoding on the same users, arrivals, lengths and acceptance draws (replication r of each
on the same streams), so
``Served.summary.speedup`` is paired; a Poisson rate above what a policy can answer
(sim/simulation/serving/stability.py) is not simulated: ``Served.check`` says so and
``run`` and ``summary`` are None. ``serving_study`` builds the plan builder and the
memoized point evaluator that ``crossover``, ``best_k`` and ``capacity`` take.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sim.binding.bound import Bound, as_bound, bind
from sim.parallel import Executor, LocalExecutor
from sim.scenario.overrides import sample_settings, with_settings
from sim.scenario.schema import Scenario
from sim.simulation.budget import check_serving_size
from sim.simulation.serving.metrics import ServingSummary, summarize_serving
from sim.simulation.serving.setup import BASELINE, ServingSetup, serving_setup
from sim.simulation.serving.simulate import ServingRun, simulate_serving
from sim.simulation.serving.stability import LoadCheck, check_open_load
from sim.studies.serving.evaluator import PointEvaluator
from sim.studies.serving.scenario_plans import ScenarioPlans
from sim.studies.serving.serve_intervals import serve_intervals
from sim.uncertainty.perturb import DRAWS, input_draws


@dataclass(frozen=True, slots=True)
class Served:
    """What ``serve`` answers: the setup it ran, the records of every policy and their
    summary with paired speedups over plain decoding (None when the load was above what
    a policy answers: ``check`` names the bounds), and the 90% intervals from inputs and
    model (sim/studies/serving/serve_intervals.py ``serve_intervals``; None without draws)."""

    setup: ServingSetup
    run: ServingRun | None
    summary: ServingSummary | None
    check: LoadCheck | None
    interval90: dict[str, Any] | None = None

    @property
    def stable(self) -> bool:
        return self.check is None or self.check.stable


def serve(
    scenario: Scenario,
    *,
    concurrency: int | None = None,
    rate_per_s: float | None = None,
    trace: str | None = None,
    replications: int | None = None,
    requests: int | None = None,
    seed: int | None = None,
    workers: int = 1,
    base_dir: str | Path | None = None,
    source: str = "scenario",
    progress: Callable[[int, int], None] | None = None,
    interval_draws: int = 0,
) -> Served:
    """The scenario's server under its load (or the one given: at most one of
    ``concurrency``, ``rate_per_s``, ``trace``), speculation and plain decoding on the same
    arrivals: the keywords set on the scenario once (``with_settings``), then
    ``serve_bound``."""
    settings = [
        ("load", "serving.concurrency", concurrency),
        ("load", "serving.rate_per_s", rate_per_s),
        ("load", "serving.trace", trace),
        *sample_settings(replications, requests, seed, source),
    ]
    return serve_bound(
        with_settings(scenario, settings),
        workers=workers,
        base_dir=base_dir,
        source=source,
        progress=progress,
        interval_draws=interval_draws,
    )


def serve_bound(
    model: Bound | Scenario,
    *,
    workers: int = 1,
    base_dir: str | Path | None = None,
    source: str = "scenario",
    progress: Callable[[int, int], None] | None = None,
    interval_draws: int = 0,
) -> Served:
    """The scenario's server under the load and sample the scenario holds (a loaded
    scenario's options already applied: ``specsim serve`` loads them with the file),
    speculation and plain decoding on the same arrivals. ``base_dir``: where the
    scenario's relative paths (a trace) start. Before any run, the memory and time the
    run needs (with ``interval_draws`` draws of 2 replications each to follow) are checked
    against sim/simulation/budget.py's limits. With ``interval_draws`` > 0 a stable load's
    answer carries its 90% intervals from inputs and model, each draw at the nominal run's
    first seeds. The scenario is bound once (``as_bound``); the setup and the intervals
    read that ``Bound`` (the draws perturb it and bind each)."""
    base = Path(base_dir) if base_dir is not None else None
    bound = as_bound(model)
    setup = serving_setup(bound, base_dir=base, source=source)
    workload = setup.plan.workload
    check_serving_size(
        len(setup.draftings),
        setup.replications + 2 * interval_draws,
        workload.requests + workload.warmup,
        workers,
    )
    check = check_open_load(setup.plan, setup.draftings)
    if check is not None and not check.stable:
        return Served(setup, None, None, check)
    run = simulate_serving(
        setup.plan,
        setup.draftings,
        replications=setup.replications,
        seed=setup.seed,
        workers=workers,
        progress=progress,
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    interval90 = None
    if interval_draws:
        interval90 = serve_intervals(
            bound,
            run.records,
            slo=setup.slo,
            seed=setup.seed,
            base_dir=base,
            source=source,
            workers=workers,
            baseline=BASELINE,
            batch=max(p.mean_batch.mean for p in summary.policies.values()),
            draws=interval_draws,
        )
    return Served(setup, run, summary, check, interval90)


def serving_study(
    model: Bound | Scenario,
    *,
    replications: int | None = None,
    requests: int | None = None,
    seed: int | None = None,
    workers: int = 1,
    executor: Executor | None = None,
    base_dir: str | Path | None = None,
    source: str = "scenario",
    progress: Callable[[int, int | None], None] | None = None,
    draws: int = DRAWS,
) -> tuple[ScenarioPlans, PointEvaluator]:
    """The scenario's plan builder (with the input draws of its 90% intervals) and a
    point evaluator at its seed, replications and SLO: what ``crossover``, ``best_k`` and
    ``capacity`` take. ``model``: the bound scenario (bound here when a scenario, or when
    ``replications``, ``requests`` or ``seed`` change it); ``executor``: where points run
    (default a local pool of ``workers``); ``draws``: Sobol draws of the uncertain inputs
    (0: none)."""
    scenario = model.scenario if isinstance(model, Bound) else model
    sc = with_settings(scenario, sample_settings(replications, requests, seed, "api"))
    bound = model if isinstance(model, Bound) and sc is scenario else bind(sc)
    builder = ScenarioPlans.of(bound.scenario, source=source, base_dir=base_dir)
    setup = builder.setup(None, builder.default_steps)
    builder = replace(builder, sampled=input_draws(bound, setup.seed, draws))
    evaluator = PointEvaluator(
        builder,
        replications=setup.replications,
        seed=setup.seed,
        slo=setup.slo,
        executor=executor or LocalExecutor(workers),
        progress=progress,
    )
    return builder, evaluator
