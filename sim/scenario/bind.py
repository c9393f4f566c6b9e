"""The one binding: what a validated ``Scenario`` means as model objects.

Everything downstream (engines, studies, reports) gets its acceptance model, rates, pass
times, cycle cost and cycle-time model from here, so the meaning of each scenario key is
written down once:

* ``[acceptance]`` -> ``AcceptanceModel`` (sim/model/acceptance.py): one rate class, or a
  class per ``[[acceptance.mix]]`` entry. The shape of the rates by position is resolved
  once (``acceptance_shape``): given, chosen by held-out error on a listed profile, or the
  draft method's decay prior (sim/scenario/priors.py). An ``alpha`` or ``accept_length``
  fixes the accept length at ``measured_num_steps`` and the shape the rest;
  ``first_rate`` is a_1; ``per_position`` lists continue past their length by the shape
  (``repeat``: the last rate repeats); ``concentration``/``std`` become each class's Beta
  ``Spread`` (a class without its own takes the top-level one);
* ``[timing]``, ``[model]``, ``[hardware]`` -> ``PassTimes`` (measured, re-composed or
  derived by the hardware model, sim/scenario/decompose.py) -> ``CycleCost``;
* ``timing.jitter_cv`` or the layer-level pass (``fidelity="layer"``) -> the cycle-time
  model the Monte Carlo engines draw durations from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import SpecsimError
from sim.hardware.layer import LayerPass, sample_layer_pass_ms
from sim.hardware.passes import pass_schedule
from sim.model.acceptance import AcceptanceModel, RateClass, Spread
from sim.model.closed_forms import FactorsFn, leviathan_accept_length, throughput_tok_s
from sim.model.cycle import CycleCost, PassTimes
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.model.cycletime import CostCycleTimes, CycleTimeModel
from sim.model.layer_cycletime import LayerCycleTimes
from sim.model.profile_fit import ProfileData, choose_shape, fit_profile
from sim.model.rates import mean_accept_length
from sim.model.shapes import (
    continue_rates,
    first_rate_for_accept_length,
    rates_for_positions,
    shape_factors,
)
from sim.scenario.decompose import ScenarioHardware, scenario_pass_times
from sim.scenario.priors import DecayPrior, decay_prior
from sim.scenario.schema import AcceptanceClass, AcceptanceSpec, Scenario

#: Pass-time fidelities of the Monte Carlo: ``cycle`` (the cost model, optional gamma
#: jitter) or ``layer`` (the layer-level SimPy pass of sim/hardware/layer.py).
FIDELITIES: tuple[str, ...] = ("cycle", "layer")

# --------------------------------------------------------------------------- acceptance


@dataclass(frozen=True)
class AcceptanceShape:
    """How a scenario's conditional rates vary with position, resolved.

    ``shape`` is one of sim/model/shapes.py's ``CONTINUATIONS``; ``decay`` its parameter
    (1 for flat and repeat); ``origin`` where it comes from (``measured``: given in the
    file, ``override``, ``derived``: chosen by held-out error on the listed rates or taken
    from the decay prior, ``default``); ``prior`` the draft method's prior when the decay
    comes from it (its range is the decay's uncertainty).
    """

    shape: str
    decay: float
    origin: str
    reason: str
    prior: DecayPrior | None = None

    def factors(self, num_steps: int) -> np.ndarray:
        """g_1..g_k of an anchored profile (a flat one for ``repeat``), shape (k,)."""
        shape = "flat" if self.shape == "repeat" else self.shape
        return shape_factors(shape, self.decay, num_steps)


#: Listed rates at or above this length choose their continuation by held-out error.
HOLDOUT_MIN_POSITIONS = 3
#: Standard error given to listed rates when choosing a continuation (printed precision).
LISTED_SIGMA = 1e-3


def _listed_choice(rates: list[float]) -> AcceptanceShape:
    """Continuation of a listed profile chosen by held-out error (flat/step: repeat)."""
    c = np.cumprod(rates)
    data = ProfileData(
        positions=tuple(range(1, len(rates) + 1)),
        cumulative=tuple(float(x) for x in c),
        cumulative_sigma=(LISTED_SIGMA,) * len(rates),
    )
    choice = choose_shape(data)
    assert choice is not None
    errors = ", ".join(f"{s} {100 * e:.2g}%" for s, e in choice.errors.items() if e is not None)
    if choice.shape == "geometric":
        decay = fit_profile("geometric", data).decay
        return AcceptanceShape(
            "geometric",
            decay,
            "derived",
            f"geometric continuation (decay {decay:.3f} fitted to the {len(rates)} listed "
            f"rates): lowest held-out error ({errors})",
        )
    return AcceptanceShape(
        "repeat",
        1.0,
        "derived",
        f"the last listed rate repeats: {choice.shape} has the lowest held-out error on the "
        f"{len(rates)} listed rates ({errors})",
    )


def acceptance_shape(spec: AcceptanceSpec, origin: str = "measured") -> AcceptanceShape:
    """The shape of ``spec``'s rates by position; ``origin`` of given keys (``measured`` or
    ``override``). See ``AcceptanceSpec``: given, held-out choice on a listed profile of
    three or more rates, else the decay prior of ``spec.method``."""
    if spec.shape in ("flat", "repeat"):
        return AcceptanceShape(spec.shape, 1.0, origin, f"acceptance.shape = {spec.shape!r}")
    if spec.shape in ("geometric", "step") and spec.decay is not None:
        return AcceptanceShape(
            spec.shape, spec.decay, origin, f"acceptance.decay = {spec.decay:g} (given)"
        )
    listed = spec.per_position
    if spec.shape == "auto" and listed is not None and len(listed) >= HOLDOUT_MIN_POSITIONS:
        return _listed_choice(listed)
    family = None if spec.shape == "auto" else spec.shape
    prior = decay_prior(spec.method, family)
    return AcceptanceShape(prior.shape, prior.median, "derived", prior.reason, prior)


def anchored_rates(
    spec: AcceptanceSpec | AcceptanceClass,
    shape: AcceptanceShape,
    num_steps: int,
    measured_num_steps: int | None,
) -> np.ndarray:
    """Mean rates a_1..a_k, shape (k,), of one class's anchor under ``shape``.

    ``alpha``: the accept length it gives at ``measured_num_steps`` (k0) with equal rates,
    the shape scaled to it (a flat shape returns alpha itself); ``accept_length``: the
    same from the accept length; ``first_rate``: a_1; ``per_position``: continued.
    """
    k0 = measured_num_steps or max(num_steps, 1)
    factor_shape = "flat" if shape.shape == "repeat" else shape.shape
    if spec.per_position is not None:
        return continue_rates(spec.per_position, shape.shape, shape.decay, num_steps)
    if getattr(spec, "first_rate", None) is not None:
        return rates_for_positions(factor_shape, spec.first_rate, shape.decay, num_steps)
    if spec.alpha is not None and factor_shape == "flat":
        return np.full(num_steps, spec.alpha, dtype=float)
    al0 = (
        leviathan_accept_length(spec.alpha, k0)
        if spec.alpha is not None
        else float(spec.accept_length)  # type: ignore[union-attr]  # classes have none
    )
    a1 = first_rate_for_accept_length(factor_shape, shape.decay, al0, k0)
    return rates_for_positions(factor_shape, float(a1), shape.decay, num_steps)


def spec_rates(spec: AcceptanceSpec, num_steps: int) -> np.ndarray:
    """Mean rates a_1..a_k, shape (k,), of a single-class ``[acceptance]``."""
    return anchored_rates(spec, acceptance_shape(spec), num_steps, spec.measured_num_steps)


def _rate_class(
    cls: AcceptanceClass | AcceptanceSpec,
    num_steps: int,
    shape: AcceptanceShape,
    measured_num_steps: int | None,
    *,
    name: str,
    weight: float,
    default: AcceptanceSpec | None = None,
) -> RateClass:
    means = anchored_rates(cls, shape, num_steps, measured_num_steps)
    spread: AcceptanceClass | AcceptanceSpec = cls
    if default is not None and cls.concentration is None and cls.std is None:
        spread = default
    return RateClass(name, weight, means, Spread(spread.concentration, spread.std))


def acceptance_model(spec: AcceptanceSpec | None, num_steps: int) -> AcceptanceModel:
    """The acceptance model of a scenario's ``[acceptance]`` at k = ``num_steps``.

    ``spec`` None (plain decoding, k = 0) gives one class with no drafts.
    """
    if spec is None or num_steps == 0:
        return AcceptanceModel(num_steps, (RateClass("all", 1.0, np.zeros(num_steps)),))
    shape = acceptance_shape(spec)
    k0 = spec.measured_num_steps
    if spec.mix is None:
        return AcceptanceModel(
            num_steps, (_rate_class(spec, num_steps, shape, k0, name="all", weight=1.0),)
        )
    return AcceptanceModel(
        num_steps,
        tuple(
            _rate_class(c, num_steps, shape, k0, name=c.name, weight=c.weight, default=spec)
            for c in spec.mix
        ),
    )


def conditional_rates(spec: AcceptanceSpec | None, num_steps: int) -> np.ndarray:
    """Conditional rates a_1..a_k, shape (num_steps,), that the closed forms take.

    The listed rates (the last repeats); for a mix or per-request heterogeneity the
    effective rates E[c_i] / E[c_(i-1)] (c_i = a_1 ... a_i, expectations over requests), so
    the closed forms fed with them give the exact per-request expectations of the accept
    length and its pmf (sim/model/acceptance.py). No acceptance: zeros.
    """
    if spec is None:
        return np.zeros(num_steps)
    return acceptance_model(spec, num_steps).closed_form_rates()


def profile_factors(spec: AcceptanceSpec | None) -> FactorsFn:
    """The shape factors g_1..g_k (g_1 = 1) the closed forms scale at each k.

    An anchored profile (alpha, accept length, first rate) gives its shape's factors; a
    listed profile, a mix or per-request spread the closed-form rates divided by their
    first (so scaling them keeps the profile, as search does).
    """

    def factors(k: int) -> np.ndarray:
        if spec is None:
            return np.ones(k)
        if spec.mix is None and spec.per_position is None and not spec.heterogeneous:
            return acceptance_shape(spec).factors(k)
        rates = conditional_rates(spec, k)
        return rates / rates[0] if rates.size and rates[0] > 0 else np.ones(k)

    return factors


def scenario_rates(scenario: Scenario, num_steps: int | None = None) -> np.ndarray:
    """``conditional_rates`` of a scenario at its own or another ``num_steps`` (k,)."""
    k = scenario.num_steps if num_steps is None else num_steps
    return conditional_rates(scenario.acceptance, k)


# --------------------------------------------------------------------------- timing


def pass_times(scenario: Scenario) -> PassTimes:
    """The pass times a scenario implies on its hardware.

    As measured when the hardware is the one the timings were measured on
    (``timing.measured_on``); otherwise re-composed (calibrated compute + the new
    communication and launch) or derived by the hardware model (sim/scenario/decompose.py).
    Computed once per scenario object (scenarios are immutable).
    """
    cache = scenario._derived
    if "pass_times" not in cache:
        cache["pass_times"] = scenario_pass_times(scenario)
    return cache["pass_times"]


def cycle_cost(scenario: Scenario, num_steps: int | None = None) -> CycleCost:
    """Cycle cost of a scenario at its own ``num_steps`` or at another ``num_steps``."""
    k = scenario.num_steps if num_steps is None else num_steps
    return chain_cycle_cost(pass_times(scenario), k)


def baseline_tok_s(scenario: Scenario) -> float:
    """Plain decoding throughput, tokens per second: 1000 / decode_ms."""
    return 1000.0 / pass_times(scenario).decode_ms


def closed_form_tok_s(scenario: Scenario, num_steps: int | None = None) -> float:
    """Long-run tok/s of a scenario by renewal-reward: 1000 E[L] / E[T_cycle]."""
    al = mean_accept_length(scenario_rates(scenario, num_steps))
    return throughput_tok_s(al, cycle_cost(scenario, num_steps))


# --------------------------------------------------------------------------- cycle times


def layer_pass(scenario: Scenario, pass_name: str, tokens: int | None = None) -> LayerPass:
    """The layer-level pass of a scenario's ``pass_name`` (decode, verify, draft_step,
    draft_extend) over ``tokens`` tokens (default as measured), on its hardware, with the
    calibrated (or derived) compute of sim/scenario/decompose.py."""
    hw = ScenarioHardware(scenario)
    m = hw.default_tokens(pass_name) if tokens is None else tokens
    compute_ms, _ = hw.compute_ms(pass_name, m)
    shape = hw.shape(pass_name, m, hw.current)
    schedule, _, _ = pass_schedule(shape, hw.current, hw.geom)
    return LayerPass(schedule, compute_ms, hw.current.gpus, scenario.hardware.rank_jitter_cv)


def sample_pass_ms(
    scenario: Scenario,
    pass_name: str,
    n: int,
    rng: np.random.Generator,
    tokens: int | None = None,
) -> np.ndarray:
    """``n`` layer-level draws of one pass's time (ms), shape (n,)."""
    return sample_layer_pass_ms(layer_pass(scenario, pass_name, tokens), n, rng)


def layer_cycle_times(
    scenario: Scenario, rng: np.random.Generator, pool_size: int = 256
) -> LayerCycleTimes:
    """Pools of ``pool_size`` layer-level pass times for the scenario's num_steps k.

    k = 0: the cycle is one decode pass (reported as the verify phase, as in CycleCost).
    A deterministic layer pass (no rank jitter) needs one draw per pass.
    """
    k = scenario.num_steps
    size = pool_size if scenario.hardware.rank_jitter_cv > 0 else 1
    if k == 0:
        empty = np.zeros(1)
        decode = sample_pass_ms(scenario, "decode", size, rng)
        return LayerCycleTimes(0, empty, decode, empty, 0.0)
    return LayerCycleTimes(
        num_steps=k,
        draft_step_pool_ms=sample_pass_ms(scenario, "draft_step", size, rng),
        verify_pool_ms=sample_pass_ms(scenario, "verify", size, rng, tokens=k + 1),
        extend_pool_ms=sample_pass_ms(scenario, "draft_extend", size, rng),
        overhead_ms=scenario.timing.cycle_overhead_ms,
    )


def cycle_time_model(
    scenario: Scenario, *, fidelity: str = "cycle", rng: np.random.Generator | None = None
) -> CycleTimeModel:
    """The cycle-time model of a scenario at a pass-time fidelity (``FIDELITIES``).

    ``cycle``: the cost model plus ``timing.jitter_cv``; ``layer``: pools of layer-level
    SimPy pass times drawn with ``rng`` (required; simulate hands in its model stream).
    """
    if fidelity == "cycle":
        return CostCycleTimes(cycle_cost(scenario), scenario.timing.jitter_cv)
    if fidelity == "layer":
        if rng is None:
            raise ValueError("the layer-level cycle-time model draws its pools: pass rng")
        return layer_cycle_times(scenario, rng)
    raise SpecsimError(
        f"unknown fidelity {fidelity!r}; choose one of {', '.join(FIDELITIES)}", param="fidelity"
    )
