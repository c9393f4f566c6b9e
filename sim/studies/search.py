"""Inverse search: the lowest acceptance rate that reaches a tok/s target, per k.

The question of the seed case is inverse: "what accuracy do we need for 150/200 tok/s?".
For each target and draft length k the search finds the lowest acceptance at which

* the mean per-request tok/s reaches the target (``quantile=None``), or
* at least a fraction ``quantile`` of requests reach it (the service-level form, which
  needs the Monte Carlo distribution).

The closed forms (sim/model/closed_forms.py ``answer_at_k``) give the starting point, Monte
Carlo bisection on common random numbers the answer and its 95% interval
(sim/studies/bisection.py).

Acceptance profiles. With one rate ``alpha`` the lever is alpha. With per-position rates,
a workload mix or per-request heterogeneity the search scales every mean rate by one
factor, keeping the profile's shape and spread (rates capped at 1), and reports ``alpha``
as the mean conditional rate over positions 1..k; the report says so (``acceptance_lever``).

No plotting here (sim/report/plots.py), no files (sim/cli/search.py); any other lever:
sim/studies/solve.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sim.binding.bind import (
    acceptance_model,
    anchored_factors,
    draft_binding,
    pass_times,
)
from sim.binding.bound import Bound, bind
from sim.binding.provenance import assumptions, effective_hardware, override_entries
from sim.errors import SpecsimError
from sim.model.acceptance import AcceptanceModel, Spread
from sim.model.closed_forms import answer_at_k, over_cap
from sim.model.cycle import PassTimes, ceiling_tok_s, required_accept_length
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.model.cycletime import CycleTimeModel
from sim.model.drafts import describe_draft
from sim.model.rates import cumulative_rates, mean_accept_length
from sim.model.roots import brentq
from sim.parallel import LocalExecutor
from sim.scenario.overrides import pin_verify_tokens, with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.engines.common import phase_means
from sim.simulation.exact import exact_obstacle
from sim.simulation.summary import Stats
from sim.studies.bisection import (
    ALPHA_XTOL,
    Criterion,
    Evaluator,
    MonteCarloStats,
    Probe,
    SimulateFn,
    checked_targets,
    solve_root,
)
from sim.studies.exact_search import ExactLever, exact_root
from sim.uncertainty.answers import TargetUncertainty, answer_uncertainty

# --------------------------------------------------------------------------- acceptance lever


@dataclass(frozen=True, slots=True)
class AcceptanceLever:
    """How acceptance is varied at draft length k, keeping everything else of [acceptance].

    The lever value ``x`` scales the mean rates of the scenario's acceptance model (in the
    model layer: no scenario is re-validated per rate): with one anchored profile
    (``kind == "alpha"``: an alpha, accept length or first rate under the scenario's shape,
    sim/binding/bind.py ``acceptance_shape``) x is the first-position rate a_1 and the
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
    position: sim/binding/bind.py), so every shorter k is a cut of them (``at``)."""

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


# --------------------------------------------------------------------------- search over alpha


@dataclass(frozen=True, slots=True)
class KResult:
    """One target at one draft length k."""

    num_steps: int
    reachable: bool
    alpha: float | None
    alpha_ci95: tuple[float | None, float | None]
    required_accept_length: float | None
    closed_form_alpha: float | None
    ceiling_tok_s: float
    simulated_ceiling_tok_s: float | None
    per_position: list[float] | None
    #: The mean rate (alpha) the simulated ceiling ran at: the highest the search reaches,
    #: 1 unless a Beta std forbids mean rates near 1 (``AcceptanceLever.spread_limited``).
    simulated_ceiling_alpha: float | None = None
    method: str = "monte_carlo"  # where the root came from: "exact" law or "monte_carlo"
    first_rate: float | None = None
    first_rate_ci95: tuple[float | None, float | None] = (None, None)
    closed_form_first_rate: float | None = None
    flat_alpha: float | None = None  # closed form, equal rates
    scale: float | None = None  # the lever value: the profile's scale (drafter quality)
    #: 90% interval (inputs and model) of the closed-form first-position rate at this k.
    interval90: list[float | None] | None = None
    #: The root asks for a first-position rate above 1 under the shape (``over_cap``).
    over_cap: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "method": self.method,
            "reachable": self.reachable,
            "over_cap": self.over_cap,
            "alpha": self.alpha,
            "alpha_ci95": list(self.alpha_ci95),
            "first_rate": self.first_rate,
            "first_rate_ci95": list(self.first_rate_ci95),
            "closed_form_first_rate": self.closed_form_first_rate,
            "flat_alpha": self.flat_alpha,
            "interval90": self.interval90,
            "required_accept_length": self.required_accept_length,
            "closed_form_alpha": self.closed_form_alpha,
            "ceiling_tok_s": self.ceiling_tok_s,
            "simulated_ceiling_tok_s": self.simulated_ceiling_tok_s,
            "simulated_ceiling_alpha": self.simulated_ceiling_alpha,
            "per_position": self.per_position,
        }


@dataclass(frozen=True, slots=True)
class TargetResult:
    """One target over the k range: the best k (lowest alpha) and every k."""

    tok_s: float
    quantile: float | None
    per_num_steps: tuple[KResult, ...]
    reason: str | None
    #: The closed-form answer's 90% interval from inputs and model (mean tok/s only).
    uncertainty: TargetUncertainty | None = None

    @property
    def best(self) -> KResult | None:
        """The k needing the lowest first-position rate (the drafter accuracy asked for)."""
        ok = [r for r in self.per_num_steps if r.reachable]
        return min(ok, key=lambda r: (r.scale, r.num_steps)) if ok else None

    @property
    def note(self) -> str | None:
        best = self.best
        ks = [r.num_steps for r in self.per_num_steps]
        if best is not None and len(ks) > 1 and best.num_steps == max(ks):
            return (
                f"the best k is the largest searched ({best.num_steps}); a longer draft may "
                "need a lower rate: widen --num-steps"
            )
        return None

    @property
    def best_flat(self) -> KResult | None:
        """The k needing the lowest equal rate (closed form): the flat answer at its own best
        k, the quantity whose interval ``uncertainty.flat_interval90`` gives."""
        ok = [r for r in self.per_num_steps if r.reachable and r.flat_alpha is not None]
        return min(ok, key=lambda r: (r.flat_alpha, r.num_steps)) if ok else None

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        flat = self.best_flat
        top = max(self.per_num_steps, key=lambda r: r.ceiling_tok_s)
        return {
            "tok_s": self.tok_s,
            "quantile": self.quantile,
            # as run's closed form: a first-position rate of at most 1 under the shape
            "reachable": best is not None and not best.over_cap,
            "reachable_flat": flat is not None,
            "needs_rates_falling_less": best is not None and best.over_cap,
            "best_num_steps": best.num_steps if best else None,
            "alpha": best.alpha if best else None,
            "alpha_ci95": list(best.alpha_ci95) if best else [None, None],
            "first_rate": best.first_rate if best else None,
            "first_rate_ci95": list(best.first_rate_ci95) if best else [None, None],
            "flat_alpha": flat.flat_alpha if flat else None,
            "flat_num_steps": flat.num_steps if flat else None,
            "required_accept_length": best.required_accept_length if best else None,
            "ceiling_tok_s": top.ceiling_tok_s,
            "ceiling_num_steps": top.num_steps,
            "uncertainty": self.uncertainty.to_dict() if self.uncertainty else None,
            "reason": self.reason,
            "note": self.note,
            "per_num_steps": [r.to_dict() for r in self.per_num_steps],
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    scenario: str
    engine: str
    fidelity: str
    evaluations: int
    note: str
    targets: tuple[TargetResult, ...]
    settings: dict[str, Any]
    refused: int = 0  # lever values refused without a run (a load above its service bound)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "engine": self.engine,
            "fidelity": self.fidelity,
            "evaluations": self.evaluations,
            "acceptance_lever": self.note,
            **self.settings,
            "targets": [t.to_dict() for t in self.targets],
        }


def _search_k(
    lever: AcceptanceLever,
    passes: PassTimes,
    criteria: Sequence[Criterion],
    evaluator: Evaluator,
    cycle_times: CycleTimeModel | None = None,
) -> list[KResult]:
    """Every criterion at one k, sharing the Monte Carlo runs of this k.

    ``passes`` are the pass times the closed-form hints use (the pinned base scenario's).
    ``cycle_times``: the Monte Carlo's own cycle-time model, when ``evaluator`` runs the
    scenario's Monte Carlo; if the per-request law is then exact (one shared profile, fixed
    cycles), roots are found on it and the Monte Carlo only checks them and gives the
    interval (sim/studies/exact_search.py); otherwise bisection on the Monte Carlo.
    """
    num_steps = lever.num_steps
    cost = chain_cycle_cost(passes, num_steps)

    def evaluate(x: float) -> Stats:
        return evaluator(lever.base, f"k={num_steps};x={x!r}", lever.model_at(x))

    exact = None
    if cycle_times is not None and exact_obstacle(lever.model, cycle_times) is None:
        exact = ExactLever(
            lever.model_at,
            float(phase_means(cycle_times).sum()),
            lever.base.workload.output_tokens,
            lever.x_max,
            bind(lever.base).extend_growth,
        )
    probe = Probe(evaluate, +1, lever.x_min, lever.x_max)
    grid = lever.accept_length_grid()
    flat = bool(np.all(lever.factors == 1.0))
    out = []
    for crit in criteria:
        closed = answer_at_k(crit.target_tok_s, passes, num_steps)
        x_cf = lever.closed_form_x(closed.required_accept_length, grid)
        hint = lever.x_max if x_cf is None else x_cf
        at_root: Stats | None = None
        if exact is not None:
            slope = (
                _closed_form_slope(lever, hint, cost.total_ms) if crit.quantile is None else None
            )
            root, at_root = exact_root(exact, crit, probe.at, hint=hint, slope=slope)
        else:
            root = solve_root(probe, crit, hint=hint, step=0.01 * lever.x_max, xtol=ALPHA_XTOL)
            if root.value is not None:
                at_root = probe.at(root.value)
        sim_ceiling = None
        if lever.x_max in probe.seen:
            sim_ceiling = float(probe.seen[lever.x_max].tok_s_mean)
        out.append(
            KResult(
                num_steps=num_steps,
                reachable=root.value is not None,
                alpha=lever.alpha(root.value),
                alpha_ci95=(lever.alpha(root.ci95[0]), lever.alpha(root.ci95[1])),
                required_accept_length=(
                    None if at_root is None else float(at_root.accept_length_mean)
                ),
                closed_form_alpha=lever.alpha(x_cf),
                ceiling_tok_s=ceiling_tok_s(cost),
                simulated_ceiling_tok_s=sim_ceiling,
                simulated_ceiling_alpha=None if sim_ceiling is None else lever.alpha(lever.x_max),
                per_position=(
                    None
                    if root.value is None or (lever.kind == "alpha" and flat)
                    else lever.per_position(root.value)
                ),
                method="monte_carlo" if exact is None else "exact",
                first_rate=lever.first_rate(root.value),
                first_rate_ci95=(lever.first_rate(root.ci95[0]), lever.first_rate(root.ci95[1])),
                closed_form_first_rate=lever.first_rate(x_cf),
                flat_alpha=closed.alpha,
                scale=root.value,
                over_cap=lever.over_cap(root.value),
            )
        )
    return out


def _closed_form_slope(lever: AcceptanceLever, x: float, cycle_ms: float) -> float | None:
    """d(long-run tok/s)/dx at x (central difference of 1000 E[L] / T): the exact root's
    first Newton step."""
    h = 1e-4 * lever.x_max
    a, b = max(0.0, x - h), min(lever.x_max, x + h)
    if b <= a:
        return None
    rise = lever.expected_accept_length(b) - lever.expected_accept_length(a)
    return 1000.0 * rise / cycle_ms / (b - a) if rise > 0 else None


@dataclass(frozen=True, slots=True)
class KTask:
    """One draft length's search for a worker process (picklable)."""

    base: dict[str, Any]
    num_steps: int
    criteria: tuple[Criterion, ...]
    simulate: SimulateFn


def _own_cycle_times(run: SimulateFn, scenario: Scenario) -> CycleTimeModel | None:
    """The cycle-time model of ``run``'s Monte Carlo when it is the scenario's own."""
    return run.cycle_times(scenario) if isinstance(run, MonteCarloStats) else None


def run_k_task(task: KTask) -> tuple[int, list[KResult], int, int]:
    """(k, results per criterion, Monte Carlo evaluations, lever values refused without a
    run) for one draft length."""
    base = scenario_from_dict(task.base, source="search")
    targets = [c.target_tok_s for c in task.criteria]
    evaluator = Evaluator(task.simulate, targets)
    lever = acceptance_lever(base, task.num_steps)
    times = _own_cycle_times(task.simulate, lever.base)
    rows = _search_k(lever, pass_times(base), task.criteria, evaluator, times)
    return task.num_steps, rows, evaluator.evaluations, evaluator.refused


def _reason(tok_s: float, quantile: float | None, rows: Sequence[KResult]) -> str | None:
    if any(r.reachable for r in rows):
        return None
    top = max(rows, key=lambda r: r.ceiling_tok_s)
    ks = [r.num_steps for r in rows]
    what = "mean tok/s" if quantile is None else f"{quantile:.0%} of requests"
    sim = ""
    if top.simulated_ceiling_tok_s is not None:
        a = top.simulated_ceiling_alpha
        at = (
            "alpha 1"
            if a is None or a >= 1.0
            else f"alpha {a:.3f}, the highest acceptance.std allows"
        )
        sim = f"; simulated at {at}: {top.simulated_ceiling_tok_s:.1f} tok/s"
    return (
        f"no num_steps in {ks[0]}..{ks[-1]} gets {what} to {tok_s:g} tok/s: the best ceiling "
        f"is {top.ceiling_tok_s:.1f} tok/s at num_steps {top.num_steps} (all drafts "
        f"accepted){sim}"
    )


def search_acceptance(
    scenario: Scenario,
    targets: Sequence[float],
    num_steps: Iterable[int],
    *,
    quantile: float | None = None,
    engine: str = "fast",
    fidelity: str = "cycle",
    simulate: SimulateFn | None = None,
    workers: int = 1,
    uncertainty: bool = True,
) -> SearchResult:
    """The lowest acceptance reaching each target, for each k, with 95% intervals.

    ``simulate`` (default: the Monte Carlo at the scenario's seed, ``MonteCarloStats``) maps
    a scenario, an acceptance model and the targets to ``Stats``; tests pass the closed form
    (``closed_form_stats``) or a counting wrapper (it must be picklable when ``workers`` > 1).
    ``workers`` > 1 searches the draft lengths in that many processes; each k's search is
    independent and seeded the same way, so the result does not depend on it. The scenario
    is validated once per draft length (the lever scales the acceptance model).
    ``uncertainty``: add the closed-form answer's 90% interval from inputs and model (the
    mean tok/s of a chain at batch 1; False when ``simulate`` answers another question).
    """
    targets = checked_targets(targets, quantile)
    ks = sorted(set(num_steps))
    if not ks or ks[0] < 1:
        raise SpecsimError("draft lengths must be >= 1", param="num_steps")
    base = pin_verify_tokens(scenario)
    bound = bind(base)  # the pinned scenario, bound once: pass times, curves, provenance
    criteria = tuple(Criterion(t, quantile) for t in targets)
    run = simulate or MonteCarloStats(engine, fidelity)
    by_k: dict[int, list[KResult]] = {}
    evaluations = refused = 0
    levers: dict[int, AcceptanceLever] = {}
    if workers > 1 and len(ks) > 1:
        tasks = [KTask(base.model_dump(exclude_none=True), k, criteria, run) for k in ks]
        for _, (k, rows, n, m) in LocalExecutor(workers).map_unordered(run_k_task, tasks):
            by_k[k], evaluations, refused = rows, evaluations + n, refused + m
    else:
        evaluator = Evaluator(run, targets)
        passes = bound.passes
        levers = acceptance_levers(base, ks)
        for k in ks:
            times = _own_cycle_times(run, levers[k].base)
            by_k[k] = _search_k(levers[k], passes, criteria, evaluator, times)
        evaluations, refused = evaluator.evaluations, evaluator.refused
    # a tree scenario is searched as chains of its top-1 rates (its trees: --topk,
    # sim/studies/tree_search.py); the intervals are those chains' (answer_uncertainty)
    unc = (
        answer_uncertainty(bound, targets, num_steps=ks, by_num_steps=True)
        if uncertainty and quantile is None
        else None
    )
    results = tuple(
        TargetResult(
            tok_s=t,
            quantile=quantile,
            per_num_steps=tuple(
                _with_interval(by_k[k][i], unc.targets[i] if unc else None) for k in ks
            ),
            reason=_reason(t, quantile, [by_k[k][i] for k in ks]),
            uncertainty=unc.targets[i] if unc else None,
        )
        for i, t in enumerate(targets)
    )
    settings = {
        "seed": base.simulation.seed,
        "replications": base.simulation.replications,
        "requests": base.workload.requests,
        "output_tokens": base.workload.output_tokens,
        "quantile": quantile,
        "current": current_operating_point(bound, levers.get(base.num_steps)),
        "hardware": effective_hardware(base),
        "overrides": override_entries(base),
        "assumptions": [a.to_dict() for a in assumptions(bound)],
        "uncertainty": unc.to_dict() if unc else None,
    }
    settings["closed_form_curves"] = closed_form_curves(
        base, bound.passes, ks, np.linspace(0.5 * min(targets), 1.25 * max(targets), 61), levers
    )
    note = acceptance_note(bound)
    if base.speculation.is_tree:
        note = (
            f"the scenario drafts a {_draft_label(base)}: searched as chains "
            f"of its top-1 rates (--topk searches trees); {note}"
        )
    capped = spread_note([levers.get(k) or acceptance_lever(base, k) for k in ks])
    if capped:
        note = f"{note}; {capped}"
    return SearchResult(base.name, engine, fidelity, evaluations, note, results, settings, refused)


def _with_interval(row: KResult, unc: TargetUncertainty | None) -> KResult:
    """``row`` with the 90% interval (inputs and model) of the closed-form first-position
    rate at its k."""
    if unc is None or row.num_steps > len(unc.per_num_steps):
        return row
    return replace(row, interval90=unc.per_num_steps[row.num_steps - 1].to_list())


def current_operating_point(
    bound: Bound, lever: AcceptanceLever | None = None
) -> dict[str, Any] | None:
    """The bound scenario as it is: its k, its alpha (as the search reports alpha) and the
    closed-form tok/s; None for plain decoding. ``lever``: the one at the scenario's own k,
    if already built."""
    scenario = bound.scenario
    if scenario.num_steps == 0 or scenario.acceptance is None:
        return None
    lever = lever or acceptance_lever(scenario, scenario.num_steps)
    x_now = float(lever.model.mean_rates()[0]) if lever.kind == "alpha" else 1.0
    return {
        "num_steps": scenario.num_steps,
        "draft": _draft_label(scenario),  # a tree's tok/s is the tree's
        "alpha": lever.alpha(x_now),
        "first_rate": lever.first_rate(x_now),
        "closed_form_tok_s": bound.closed_form_tok_s,
    }


def _draft_label(scenario: Scenario) -> str:
    """``k = 3`` or ``tree 3/4/8`` (sim/model/drafts.py ``describe_draft``)."""
    return describe_draft(draft_binding(scenario).draft)


def closed_form_curves(
    scenario: Scenario,
    passes: PassTimes,
    num_steps: Iterable[int],
    tok_s: np.ndarray,
    levers: dict[int, AcceptanceLever] | None = None,
) -> dict[str, dict[str, list[float]]]:
    """Closed-form required alpha against target tok/s per k (reachable points only).

    ``tok_s`` has shape (n,); each curve holds the targets reachable at that k and the
    alpha (scaled-profile mean) they need. For the required-rate plot. ``passes``: the
    scenario's pass times (its ``Bound``'s); ``levers`` (by k) are reused where given.
    """
    levers = levers or {}
    out: dict[str, dict[str, list[float]]] = {}
    for k in num_steps:
        lever = levers.get(k) or acceptance_lever(scenario, k)
        xs, als = lever.accept_length_grid()
        cost = chain_cycle_cost(passes, k)
        need = np.array([required_accept_length(t, cost) for t in np.asarray(tok_s, float)])
        ok = (need >= als[0]) & (need <= als[-1])
        x_at = np.interp(need[ok], als, xs)
        out[str(k)] = {
            "tok_s": [float(t) for t in np.asarray(tok_s)[ok]],
            "alpha": [float(a) for a in lever.mean_rates(x_at).mean(axis=1)],
        }
    return out
