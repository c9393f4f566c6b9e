"""How a validation case scores a row (sim/validation/cases.py): a prediction on the
calibrated scenario with its propagated error (``scored_row``), the 90% interval of its
inputs' draws (``interval_of``), the flat extrapolation beside an accept length
(``flat_accept_length``), the Monte Carlo spread of an end-to-end row, a published run's
three rows (``scored_run``), and the shape error held out of its own series (``held_out``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from sim.binding.acceptance_shape import implicit_tilt
from sim.binding.closed_form import cycle_cost, scenario_rates
from sim.binding.priors import shape_error
from sim.calibration.result import Calibration
from sim.model.cycle import CycleCost, throughput_tok_s
from sim.model.rates import mean_accept_length
from sim.model.sampled import SampledModel
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.simulate import simulate
from sim.simulation.summary import summarize
from sim.uncertainty.answers import sampled_answers
from sim.validation import data as pub
from sim.validation.cases import Row, Spread

#: Relative standard error given to published tok/s figures when calibrating (they are
#: single benchmark runs; 2% is the spread of the seed's own "59-61 tok/s").
TOK_S_REL_ERROR = 0.02


#: Monte Carlo behind the spreads: replications x requests of the scenario's
#: workload.output_tokens, from this root seed (sim/simulation/simulate.py spawns the streams).
MC_REPLICATIONS = 10

MC_REQUESTS = 100

MC_SEED = 20261130


def _spread(scenario: Scenario, k: int) -> Spread:
    at_k = with_overrides(scenario, {"speculation.num_steps": k}, source="validation")
    result = simulate(at_k, replications=MC_REPLICATIONS, requests=MC_REQUESTS, seed=MC_SEED)
    summary = summarize(result, targets=())
    return Spread(
        summary.tok_s_mean,
        summary.tok_s_ci95,
        summary.tok_s_p5,
        summary.tok_s_p95,
        at_k.workload.output_tokens,
    )


def figure_name(source: str, k: int, what: str) -> str:
    return f"{source} k={k} {what}"


def _tok_s_at(scenario: Scenario, k: int, accept_length: float) -> float:
    cost: CycleCost = cycle_cost(scenario, k)
    return throughput_tok_s(accept_length, cost)


def accept_length_at(scenario: Scenario, k: int) -> float:
    assert scenario.acceptance is not None
    return mean_accept_length(scenario_rates(scenario, k))


def fitted_summary(cal: Calibration) -> str:
    parts = [
        f"{v.field} = {v.value:.4g} ± {v.stderr:.2g}" for v in cal.fitted if v.stderr is not None
    ]
    return "; ".join(parts)


def kept_summary(cal: Calibration) -> str:
    return "; ".join(f"{v.field} = {v.value:.4g}" for v in cal.kept)


def interval_of(
    answers: SampledModel, quantity: Callable[[SampledModel], np.ndarray]
) -> tuple[float, float]:
    """The 5% and 95% quantiles of ``quantity`` over a scenario's draws of its uncertain
    inputs (``answers``: ``sampled_answers(scenario)``, sim/uncertainty/answers.py): the 90%
    interval from inputs and model."""
    values = np.asarray(quantity(answers), dtype=float)
    lo, hi = np.quantile(values, [0.05, 0.95])
    return float(lo), float(hi)


def flat_accept_length(scenario: Scenario, k: int) -> float:
    """AL at k under the flat extrapolation specsim used before decay priors (a listed
    profile: its last rate repeats)."""
    acc = scenario.acceptance
    assert acc is not None
    flat = "repeat" if acc.per_position is not None else "flat"
    if acc.first_rate is not None or acc.shape == flat:
        return mean_accept_length(scenario_rates(scenario, k))
    flat_only: dict[str, object] = {"acceptance.shape": flat}
    if acc.tilt is not None:  # a stated tilt (the held-out shape error) is not the flat answer
        flat_only["acceptance.tilt"] = 0.0
    other = with_overrides(scenario, flat_only, source="validation")
    return mean_accept_length(scenario_rates(other, k))


def held_out(cal: Calibration, source: str | None = None, *, cross_run: bool = True) -> Calibration:
    """``cal`` with the shape error past the measured positions estimated without the
    cross-run series of ``source`` (sim/binding/priors.py ``shape_error(method,
    leave_out=source)``; ``cross_run`` False: within-run evidence alone, for positions of
    the very run whose first positions were measured), written as the calibrated tilt and
    its standard error as ``calibrate`` writes them, so that no series informs its own
    score. A scenario whose tilt is neither implicit nor derived by ``calibrate`` is
    returned as it is."""
    spec = cal.scenario.acceptance
    entry = cal.scenario.uncertainty.entries().get("acceptance.tilt")
    if spec is None or not (
        implicit_tilt(spec) or (entry is not None and entry.resolved_origin == "derived")
    ):
        return cal
    error = shape_error(spec.method, leave_out=source, cross_run=cross_run)
    scenario = with_overrides(
        cal.scenario,
        {
            "acceptance.tilt": error.nominal,
            "uncertainty.acceptance.tilt": {
                "stderr": error.sd,
                "origin": "derived",
                "reason": error.reason,
            },
        },
        source="validation",
    )
    return replace(cal, scenario=scenario)


def scored_row(
    quantity: str,
    figure: str,
    inputs: str,
    measured: float,
    cal: Calibration,
    predict: Callable[[Scenario], float],
    draws: Callable[[SampledModel], np.ndarray] | None = None,
    flat: Callable[[Scenario], float] | None = None,
) -> Row:
    """A scored row: ``predict`` on the calibrated scenario, with its propagated error, the
    90% interval of ``draws`` and the ``flat`` prediction."""
    return Row(
        quantity,
        figure,
        inputs,
        measured,
        predict(cal.scenario),
        cal.prediction_stderr(predict),
        interval90=(
            interval_of(sampled_answers(cal.scenario), draws) if draws is not None else None
        ),
        flat=flat(cal.scenario) if flat is not None else None,
    )


def tok_s_fn(k: int, accept_length: float | None) -> Callable[[Scenario], float]:
    """tok/s at k with a given accept length (None: the scenario's own accept length)."""

    def fn(s: Scenario) -> float:
        return _tok_s_at(s, k, accept_length_at(s, k) if accept_length is None else accept_length)

    return fn


def accept_length_fn(k: int) -> Callable[[Scenario], float]:
    return lambda s: accept_length_at(s, k)


def cumulative_fn(position: int) -> Callable[[Scenario], float]:
    def fn(s: Scenario) -> float:
        assert s.acceptance is not None
        return float(np.prod(scenario_rates(s, position)))

    return fn


def cumulative_draws(position: int) -> Callable[[SampledModel], np.ndarray]:
    """c at ``position`` of each of a scenario's draws, shape (n,)."""
    return lambda m: np.prod(m.rates[:, :position], axis=1)


def accept_length_draws(num_steps: int) -> Callable[[SampledModel], np.ndarray]:
    """The accept length at k = ``num_steps`` of each of a scenario's draws, shape (n,)."""
    return lambda m: m.accept_length(num_steps)


def scored_run(
    src: str, run: pub.PublishedRun, alpha_from: str, cal: Calibration
) -> tuple[Row, Row, Row]:
    """Score one published run: tok/s at its measured AL, its AL, and tok/s end to end."""
    k = run.num_steps
    assert run.tok_s is not None
    return (
        scored_row(
            "tok/s (measured AL)",
            figure_name(src, k, "tok/s"),
            f"k={k}, AL {run.accept_length}",
            run.tok_s,
            cal,
            tok_s_fn(k, run.accept_length),
            lambda m: 1000.0 * run.accept_length / m.cycle_ms(k, run.accept_length),
        ),
        scored_row(
            "accept length",
            figure_name(src, k, "AL"),
            f"k={k}, {alpha_from}",
            run.accept_length,
            cal,
            accept_length_fn(k),
            lambda m: m.accept_length(k),
            lambda s: flat_accept_length(s, k),
        ),
        replace(
            scored_row(
                "tok/s (end to end)",
                figure_name(src, k, "tok/s"),
                f"k={k}, predicted AL",
                run.tok_s,
                cal,
                tok_s_fn(k, None),
                lambda m: m.tok_s(k),
            ),
            spread=_spread(cal.scenario, k),
        ),
    )
