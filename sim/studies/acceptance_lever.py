"""The acceptance lever of the inverse search (sim/studies/search.py): how acceptance is
varied at draft length k, keeping everything else of ``[acceptance]``
(``AcceptanceLever``).

With one rate ``alpha`` the lever is alpha. With an anchored profile under the scenario's
shape it is the first-position rate a_1, the shape kept; with per-position rates, a
workload mix or per-request heterogeneity it scales every mean rate by one factor,
keeping the profile's shape and spread (rates capped at 1), and ``alpha`` is reported as
the mean conditional rate over positions 1..k; the report says so (``acceptance_note``).
The acceptance is bound once at the longest k of a search and cut to each shorter one
(``BoundAcceptance``, ``acceptance_levers``); a Beta ``std`` too wide for means near 0 or
1 limits the scales searched (``spread_note``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sim.binding.acceptance_model import acceptance_model
from sim.binding.acceptance_shape import anchored_factors
from sim.binding.bound import Bound
from sim.model.acceptance import AcceptanceModel, Spread
from sim.model.closed_forms import over_cap
from sim.model.rates import cumulative_rates, mean_accept_length
from sim.model.roots import brentq
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario

__all__ = [
    "ACCEPTANCE_NOTE_ALPHA",
    "ACCEPTANCE_NOTE_PROFILE",
    "ACCEPTANCE_NOTE_SHAPE",
    "AcceptanceLever",
    "BoundAcceptance",
    "acceptance_lever",
    "acceptance_levers",
    "acceptance_note",
    "bind_acceptance",
    "spread_note",
]


@dataclass(frozen=True, slots=True)
class AcceptanceLever:
    """How acceptance is varied at draft length k, keeping everything else of [acceptance].

    The lever value ``x`` scales the mean rates of the scenario's acceptance model (in the
    model layer: no scenario is re-validated per rate): with one anchored profile
    (``kind == "alpha"``: an alpha, accept length or first rate under the scenario's shape,
    sim/binding/acceptance_shape.py ``acceptance_shape``) x is the first-position rate a_1 and the
    rates are min(1, x g_i) for the shape's factors g (all 1 for a flat shape: x is
    Leviathan's alpha); with per-position rates or a mix (``kind == "profile"``) every mean
    rate r becomes min(1, x r), so the profile keeps its shape. Per-request spread
    (concentration or std) is kept as given. ``alpha(x)`` reports the mean conditional
    rate over positions 1..k and ``first_rate(x)`` the rate at position 1 (both
    weight-averaged over mix classes). ``x_max`` is where every rate reaches 1, or the last
    value at which a Beta ``std`` is still possible (a std can forbid means near 1).
    """

    base: Scenario  # validated once, with speculation.num_steps = k
    model: AcceptanceModel  # the base's acceptance at k, unscaled
    kind: str  # "alpha" or "profile"
    x_max: float
    factors: np.ndarray  # g_1..g_k of an anchored profile (kind "alpha"), shape (k,)
    #: True when x_max is where the Beta std stops being possible (not where rates reach 1),
    #: or x_min above 0 (a std also forbids means near 0)
    spread_limited: bool = False
    #: The lowest scale searched: 0, or the lowest at which the Beta std is possible
    x_min: float = 0.0
    #: ``mean_rates`` at the lever values asked for one at a time (alpha, first rate and
    #: profile at a root and its interval's ends ask for the same few x): this lever's own
    _rows: dict[float, np.ndarray] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def num_steps(self) -> int:
        return self.base.num_steps

    def model_at(self, x: float) -> AcceptanceModel:
        """The acceptance model at lever value ``x``."""
        if self.kind == "alpha":
            return self.model.with_profile(x * self.factors)
        return self.model.scaled(x)

    def mean_rates(self, xs: np.ndarray) -> np.ndarray:
        """Mean conditional rates at each lever value, weight-averaged over mix classes:
        shape (n, k) for ``xs`` of shape (n,) (what ``model_at(x).mean_rates()`` gives,
        without building the models)."""
        xs = np.asarray(xs, dtype=float)[:, None]
        out = np.zeros((xs.shape[0], self.num_steps))
        for w, c in zip(self.model.weights, self.model.classes, strict=True):
            unit = self.factors[None, :] if self.kind == "alpha" else c.mean_rates[None, :]
            out += w * np.minimum(1.0, xs * unit)
        return out

    def _row(self, x: float) -> np.ndarray:
        """``mean_rates`` at one lever value, shape (k,) (kept: ``_rows``)."""
        row = self._rows.get(x)
        if row is None:
            row = self._rows[x] = self.mean_rates(np.array([x]))[0]
        return row

    def alpha(self, x: float | None) -> float | None:
        """The mean conditional rate over positions 1..k at lever value ``x``."""
        if x is None:
            return None
        return float(self._row(x).mean())

    def first_rate(self, x: float | None) -> float | None:
        """The conditional rate at position 1 at lever value ``x``."""
        if x is None:
            return None
        return float(self._row(x)[0])

    def over_cap(self, x: float | None) -> bool:
        """Whether lever value ``x`` asks some class for a first-position rate above 1: the
        shape then reaches the target only with rates that fall less than it does."""
        if x is None:
            return False
        if self.kind == "alpha":
            unit = float(self.factors[0])
        else:
            unit = max(float(c.mean_rates[0]) for c in self.model.classes)
        return over_cap(x, unit)

    def per_position(self, x: float) -> list[float]:
        """Mean conditional rates at x, shape (k,), weight-averaged over mix classes."""
        return [float(v) for v in self._row(x)]

    def closed_form_rates(self, x: float) -> np.ndarray:
        """``model_at(x).closed_form_rates()``, shape (k,): with one class and no spread the
        same capped product without building the model (what the closed-form root
        finding evaluates hundreds of times per k)."""
        cls = self.model.classes
        if len(cls) > 1 or cls[0].spread != Spread():
            return self.model_at(x).closed_form_rates()
        if self.kind == "alpha":
            return np.clip(np.asarray(x * self.factors, dtype=float), 0.0, 1.0)
        return np.minimum(1.0, x * cls[0].mean_rates)

    def expected_accept_length(self, x: float) -> float:
        """E[L] per request at x (effective rates carry the heterogeneity)."""
        return mean_accept_length(self.closed_form_rates(x))

    def accept_length_grid(self, n: int = 101) -> tuple[np.ndarray, np.ndarray]:
        """(x grid of shape (n,), E[L] at each), for interpolating closed-form answers.

        Without heterogeneity the rates at every x are one array operation, shape (n, k);
        otherwise each x integrates over requests.
        """
        xs = np.linspace(self.x_min, self.x_max, n)
        if self.model.heterogeneous:
            return xs, np.array([self.expected_accept_length(float(x)) for x in xs])
        unit = self.factors if self.kind == "alpha" else self.model.classes[0].mean_rates
        grid = np.minimum(1.0, xs[:, None] * unit[None, :])
        return xs, 1.0 + cumulative_rates(grid).sum(axis=1)

    def closed_form_x(
        self, required_accept_length: float, grid: tuple[np.ndarray, np.ndarray] | None = None
    ) -> float | None:
        """Least x whose expected accept length reaches the requirement (None: out of reach).

        Interpolates on the grid, then refines with brentq inside the grid cell.
        """
        xs, als = grid or self.accept_length_grid()
        if required_accept_length <= als[0]:
            return float(xs[0])
        if required_accept_length > als[-1]:
            return None
        j = int(np.searchsorted(als, required_accept_length))
        a, b = float(xs[max(j - 1, 0)]), float(xs[j])
        f = lambda x: self.expected_accept_length(x) - required_accept_length  # noqa: E731
        if f(a) >= 0:
            return a
        return float(brentq(f, a, b, xtol=1e-10))


ACCEPTANCE_NOTE_PROFILE = (
    "acceptance has per-position rates, a mix or per-request spread: search scales every "
    "mean rate by one factor (profile shape and spread kept, rates capped at 1); alpha is "
    "the mean conditional rate over positions 1..k"
)


ACCEPTANCE_NOTE_ALPHA = "alpha = the equal conditional per-position acceptance rate"


ACCEPTANCE_NOTE_SHAPE = (
    "acceptance falls with position ({shape}): search scales the first-position rate a_1 "
    "and keeps the shape; alpha is the mean conditional rate over positions 1..k and "
    "'flat' the equal rate that would give the same accept length"
)


def _is_plain_alpha(scenario: Scenario) -> bool:
    acc = scenario.acceptance
    return acc is None or (
        acc.mix is None and acc.per_position is None and not getattr(acc, "heterogeneous", False)
    )


@dataclass(frozen=True, slots=True)
class BoundAcceptance:
    """A lever base's acceptance bound once at the longest draft length K of a search: the
    model (mean rates by position) and the anchored shape factors g_1..g_K (ones for a
    listed profile or a mix), shape (K,). The binding's rates at position i do not depend
    on k (an anchor's first rate comes from its measured k0, the shape and tilt are per
    position: sim/binding/acceptance_shape.py), so every shorter k is a cut of them (``at``)."""

    model: AcceptanceModel
    factors: np.ndarray

    def at(self, num_steps: int) -> tuple[AcceptanceModel, np.ndarray]:
        """(model, factors (k,)) at draft length ``num_steps`` <= K."""
        return self.model.truncated(num_steps), self.factors[:num_steps].copy()


def _lever_base(scenario: Scenario, num_steps: int) -> Scenario:
    """The scenario the search runs at draft length ``num_steps`` (one validation)."""
    # the chain search: a tree scenario is searched as a chain of its top-1 rates (its
    # trees: sim/studies/tree_search.py)
    over: dict[str, Any] = {"speculation.num_steps": num_steps, "speculation.topk": 1}
    if scenario.acceptance is None:  # a plain-decoding scenario: search alpha from scratch
        over["acceptance"] = {"alpha": 0.0}
    return with_overrides(scenario, over, source="search")


def bind_acceptance(base: Scenario, num_steps: int) -> BoundAcceptance:
    """The acceptance model and anchored factors of a lever base at ``num_steps``."""
    acc = base.acceptance
    model = acceptance_model(acc, num_steps)
    anchored = acc is None or (acc.mix is None and acc.per_position is None)
    if anchored and acc is not None:
        return BoundAcceptance(model, anchored_factors(acc, num_steps))
    return BoundAcceptance(model, np.ones(num_steps))


def acceptance_levers(scenario: Scenario, num_steps: Sequence[int]) -> dict[int, AcceptanceLever]:
    """The acceptance lever at every draft length in ``num_steps``: one validation per k,
    the acceptance bound once at the longest and cut to each k (``BoundAcceptance``)
    wherever the base's ``[acceptance]`` is the same as there (a plain-decoding scenario's
    is measured at each k: bound at each)."""
    ks = sorted(set(num_steps))
    bases = {k: _lever_base(scenario, k) for k in ks}
    top = bases[ks[-1]]
    bound = bind_acceptance(top, ks[-1])
    return {
        k: acceptance_lever(
            scenario, k, base=b, bound=bound if b.acceptance == top.acceptance else None
        )
        for k, b in bases.items()
    }


def acceptance_lever(
    scenario: Scenario,
    num_steps: int,
    *,
    base: Scenario | None = None,
    bound: BoundAcceptance | None = None,
) -> AcceptanceLever:
    """The acceptance lever of ``scenario`` at draft length ``num_steps`` (one validation,
    none when ``base``, the scenario at that k, is given). ``bound``: the acceptance bound
    at a k >= ``num_steps`` (default: bound here)."""
    base = base or _lever_base(scenario, num_steps)
    acc = base.acceptance
    model, factors = (bound or bind_acceptance(base, num_steps)).at(num_steps)
    anchored = acc is None or (acc.mix is None and acc.per_position is None)
    kind = "alpha" if anchored else "profile"
    if anchored:
        positive = factors[factors > 0]
    else:
        rates = np.concatenate([c.mean_rates for c in model.classes])
        positive = rates[rates > 0]
    top = 1.0 / float(positive.min()) if positive.size else 1.0
    lever = AcceptanceLever(base, model, kind, top, factors)
    # A Beta std too wide for means near 1 or 0 (std^2 >= m (1 - m)) forbids a band of
    # scales below the one where a rate reaches 1 (the capped rate is exact again) and one
    # above 0: search only the scales around the scenario's own (valid: x = 1 for a
    # profile, its first rate for an anchored one) where every mean is a valid Beta. (The
    # upper end was sought from x = 0 for an anchored profile: the search stopped at
    # x ~ 0 and called every target unreachable; the lower end was not sought, and the
    # Monte Carlo of an impossible Beta drew accept length 1.5 at a rate of 0.000.)
    if any(c.spread.std for c in model.classes):
        own = 1.0 if kind == "profile" else float(model.mean_rates()[0])
        x_min, x_max = _feasible_end(lever, own, 0.0), _feasible_end(lever, own, top)
        if (x_min, x_max) != (0.0, top):
            lever = replace(lever, x_min=x_min, x_max=x_max, spread_limited=True)
    return lever


def _feasible_end(lever: AcceptanceLever, own: float, end: float) -> float:
    """The scale nearest ``end`` that every scale between it and ``own`` (valid) shares
    with ``own``: a valid Beta std at every mean; ``end`` itself when the whole way is
    valid. Found on a grid of 512 steps, refined by bisection."""
    grid = np.linspace(own, end, 513)
    bad = next(
        (i for i, x in enumerate(grid[1:], 1) if lever.model_at(float(x)).infeasible()), None
    )
    if bad is None:
        return end
    good, worse = float(grid[bad - 1]), float(grid[bad])
    for _ in range(60):
        mid = (good + worse) / 2
        if lever.model_at(mid).infeasible() is None:
            good = mid
        else:
            worse = mid
    return good


def spread_note(levers: Sequence[AcceptanceLever]) -> str | None:
    """What the search says when a Beta ``std`` capped the scaled means (else None)."""
    capped = [lv for lv in levers if lv.spread_limited]
    if not capped:
        return None
    worst = min(capped, key=lambda lv: lv.alpha(lv.x_max) or 0.0)
    low = max(capped, key=lambda lv: lv.alpha(lv.x_min) or 0.0)
    return (
        "a Beta std cannot hold mean rates near 0 or 1 (std^2 < m (1 - m)): the search scales "
        "the rates only while the scenario's std stays possible (alpha up to "
        f"{worst.alpha(worst.x_max):.3f} at k = {worst.num_steps}, down to "
        f"{low.alpha(low.x_min):.3f} at k = {low.num_steps}); targets that need more are "
        "reported unreachable, and those the lowest reaches are answered with it. Give "
        "acceptance.concentration instead of std to keep the spread's shape at every mean"
    )


def acceptance_note(bound: Bound) -> str:
    if not _is_plain_alpha(bound.scenario):
        return ACCEPTANCE_NOTE_PROFILE
    shape = bound.shape
    if shape is None or shape.shape in ("flat", "repeat") or shape.decay == 1.0:
        return ACCEPTANCE_NOTE_ALPHA
    return ACCEPTANCE_NOTE_SHAPE.format(shape=f"{shape.shape}, decay {shape.decay:.3f}")
