"""The shape of a scenario's acceptance rates by position, and each anchor's rates on it.

``[acceptance]``'s shape is resolved once (``acceptance_shape``): given, chosen by held-out
error on a listed profile, or the draft method's decay prior (sim/binding/priors.py), with
its tilt (given, else the method's shape error). An ``alpha`` or ``accept_length`` fixes
the accept length at ``measured_num_steps`` and the shape the rest; ``first_rate`` is a_1;
``per_position`` lists continue past their length by the shape (``repeat``: the last rate
repeats) (``anchored_rates``). The model built on them: sim/binding/acceptance_model.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sim.binding.priors import DecayPrior, ShapeError, decay_prior, shape_error
from sim.model.closed_forms import leviathan_accept_length
from sim.model.shapes import (
    continue_rates,
    first_rate_for_accept_length,
    rates_for_positions,
    shape_factors,
    tilt_factors,
)
from sim.scenario.sections.acceptance import AcceptanceClass, AcceptanceSpec


@dataclass(frozen=True, slots=True)
class AcceptanceShape:
    """How a scenario's conditional rates vary with position, resolved.

    ``shape`` is one of sim/model/shapes.py's ``CONTINUATIONS``; ``decay`` its parameter
    (1 for flat and repeat); ``origin`` where it comes from (``measured``: given in the
    file, ``override``, ``derived``: chosen by held-out error on the listed rates or taken
    from the decay prior, ``default``); ``prior`` the draft method's prior when the decay
    comes from it (its range is the decay's uncertainty); ``tilt`` the tilt the rates take
    (given, the method's nominal shape error when left to it, else 0); ``tilt_error`` the
    method's shape error when the tilt is left to it (``implicit_tilt``), else None.
    """

    shape: str
    decay: float
    origin: str
    reason: str
    prior: DecayPrior | None = None
    tilt: float = 0.0
    tilt_error: ShapeError | None = None

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
    # lazy: a fit is made only when no stored one serves (start-up)
    from sim.model.profile_fit import ProfileData, choose_shape, fit_profile

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
    """The shape of ``spec``'s rates by position with its tilt; ``origin`` of given keys
    (``measured`` or ``override``). See ``AcceptanceSpec``: given, held-out choice on a
    listed profile of three or more rates, else the decay prior of ``spec.method``."""
    error = shape_error(spec.method) if implicit_tilt(spec) else None
    nominal = error.nominal if error is not None else 0.0
    tilt = spec.tilt if spec.tilt is not None else nominal
    return replace(_untilted_shape(spec, origin), tilt=tilt, tilt_error=error)


def _untilted_shape(spec: AcceptanceSpec, origin: str) -> AcceptanceShape:
    if spec.shape in ("flat", "repeat"):
        return AcceptanceShape(spec.shape, 1.0, origin, f"acceptance.shape = {spec.shape!r}")
    if spec.rank_rates_by_depth is not None and spec.shape in ("auto", "repeat"):
        return AcceptanceShape(
            "repeat",
            1.0,
            "default" if spec.shape == "auto" else origin,
            "rank_rates_by_depth: the last depth's rates repeat below the list",
        )
    if spec.shape == "auto" and spec.rank_rates is not None:
        return AcceptanceShape(
            "flat", 1.0, "default", "rank_rates are given at every depth (set shape to decay them)"
        )
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
    by_depth = getattr(spec, "rank_rates_by_depth", None)  # each depth's top-1 rate
    if by_depth is not None:
        top1 = [row[0] for row in by_depth]
        return continue_rates(top1, shape.shape, shape.decay, num_steps)
    first = getattr(spec, "first_rate", None)
    ranks = getattr(spec, "rank_rates", None)  # q_1 is the top-1 rate
    if first is not None:
        return rates_for_positions(factor_shape, first, shape.decay, num_steps)
    if ranks is not None:
        return rates_for_positions(factor_shape, ranks[0], shape.decay, num_steps)
    if spec.alpha is not None and factor_shape == "flat":
        return np.full(num_steps, spec.alpha, dtype=float)
    stated = getattr(spec, "accept_length", None)  # a class has none
    if spec.alpha is not None:
        al0 = leviathan_accept_length(spec.alpha, k0)
    elif stated is not None:
        al0 = float(stated)
    else:
        raise ValueError("an anchor needs alpha, accept_length, first_rate or per_position")
    a1 = first_rate_for_accept_length(factor_shape, shape.decay, al0, k0)
    return rates_for_positions(factor_shape, float(a1), shape.decay, num_steps)


def measured_depth(spec: AcceptanceSpec | AcceptanceClass, measured_num_steps: int | None) -> int:
    """Positions the acceptance was measured over: a listed profile's length, else the
    num_steps its alpha, accept length or fitted first rate was measured at (1 if none)."""
    if spec.per_position is not None:
        return len(spec.per_position)
    by_depth = getattr(spec, "rank_rates_by_depth", None)
    if by_depth is not None:
        return len(by_depth)
    return measured_num_steps or 1


def implicit_tilt(spec: AcceptanceSpec) -> bool:
    """True when the tilt is left to the shape error: shape ``auto``, no tilt given (rank
    rates, given at every depth, excepted)."""
    return (
        spec.tilt is None
        and spec.shape == "auto"
        and spec.rank_rates is None
        and spec.rank_rates_by_depth is None
    )


def anchored_factors(
    spec: AcceptanceSpec, num_steps: int, shape: AcceptanceShape | None = None
) -> np.ndarray:
    """The shape factors g_1..g_k of an anchored profile with its tilt, shape (k,)
    (``shape``: ``acceptance_shape(spec)``, when the caller has it)."""
    shape = shape or acceptance_shape(spec)
    depth = measured_depth(spec, spec.measured_num_steps)
    g = shape.factors(num_steps)
    return g * tilt_factors(shape.tilt, depth, num_steps) if shape.tilt else g
