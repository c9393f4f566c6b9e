"""Monotone root finding on Monte Carlo estimates: "which lever value reaches the target?"

A criterion (mean tok/s >= target, or P(tok/s >= target) >= q) is evaluated by a Monte
Carlo run at the scenario's own seed. Every evaluation uses the same seed, so estimates
share common random numbers: along a monotone lever (acceptance rate, verify time) no
request's tok/s moves against the lever (issue 3's property), the estimate is a monotone
step function of the lever and bisection on it is well defined. Brackets start from a
hint (the closed forms: renewal-reward throughput E[L] / E[T_cycle], Leviathan et al. 2023
for E[L]).

The 95% interval inverts the Monte Carlo confidence band: its ends are the lever values at
which the upper and the lower 95% bound of the statistic cross the threshold, i.e. the set
of lever values at which the target lies inside the band. It reflects Monte Carlo noise
only.

Used by sim/studies/search.py (acceptance) and sim/studies/solve.py (any numeric field).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from sim.binding.bound import Bound, as_bound
from sim.binding.closed_form import bound_cycle_cost
from sim.errors import SpecsimError
from sim.model.cycle import throughput_tok_s
from sim.model.cycletime import CycleTimeModel
from sim.model.rates import mean_accept_length
from sim.model.tree.acceptance import Acceptance
from sim.scenario.schema import Scenario
from sim.simulation.simulate import bind_for_run, simulate
from sim.simulation.summary import Stats, quick_stats

#: Bisection tolerance on alpha (conditional rates are reported to 3 decimals).
ALPHA_XTOL = 5e-4
#: Relative bisection tolerance for other levers.
LEVER_RTOL = 1e-3

#: (scenario, or the scenario bound once by the study that evaluates it many times;
#: acceptance model replacing the scenario's or None; targets) -> statistics. A chain's
#: searches give an ``AcceptanceModel``, a tree's a ``TreeAcceptance``.
SimulateFn = Callable[[Bound | Scenario, Acceptance | None, Sequence[float]], Stats]


# --------------------------------------------------------------------------- measurements


@dataclass(frozen=True, slots=True)
class MonteCarloStats:
    """The statistics search needs from the scenario's Monte Carlo at its own seed
    (``quick_stats``: mean with its t interval, pooled accept length, P(tok/s >= target)
    with Wilson intervals). A picklable callable (``SimulateFn``): a bound model is run as
    bound, a scenario is bound for the run."""

    engine: str = "fast"
    fidelity: str = "cycle"

    def __call__(
        self, model: Bound | Scenario, acceptance: Acceptance | None, targets: Sequence[float]
    ) -> Stats:
        result = simulate(
            model,
            engine=self.engine,
            fidelity=self.fidelity,
            seed=_scenario_of(model).simulation.seed,
            workers=1,
            acceptance=acceptance,
        )
        return quick_stats(result, targets)

    def cycle_times(self, model: Bound | Scenario) -> CycleTimeModel:
        """The cycle-time model these runs use for ``model`` (at its scenario's seed)."""
        return bind_for_run(model, self.fidelity, _scenario_of(model).simulation.seed)[1]


def _scenario_of(model: Bound | Scenario) -> Scenario:
    return model.scenario if isinstance(model, Bound) else model


def checked_targets(targets: Sequence[float], quantile: float | None) -> list[float]:
    """Targets as floats; SpecsimError for none, one <= 0, or a quantile outside (0, 1)."""
    out = [float(t) for t in targets]
    if not out:
        raise SpecsimError("no targets: give targets or a [targets] section", param="targets")
    if any(not t > 0.0 for t in out):
        raise SpecsimError(f"targets must be positive tok/s, got {out}", param="targets")
    if quantile is not None and not 0.0 < quantile < 1.0:
        raise SpecsimError(f"must be in (0, 1), got {quantile}", param="quantile")
    return out


@dataclass(frozen=True, slots=True)
class Criterion:
    """What "reaches the target" means: mean tok/s >= target, or P(tok/s >= target) >= q."""

    target_tok_s: float
    quantile: float | None = None

    @property
    def threshold(self) -> float:
        return self.target_tok_s if self.quantile is None else self.quantile

    def stat(self, stats: Stats) -> tuple[float, float, float]:
        """(estimate, lower 95%, upper 95%) of the criterion's statistic."""
        if self.quantile is None:
            lo, hi = stats.tok_s_ci95
            return float(stats.tok_s_mean), float(lo), float(hi)
        for entry in stats.targets:
            if math.isclose(float(entry.tok_s), self.target_tok_s):
                lo, hi = entry.ci95
                return float(entry.p_at_least), float(lo), float(hi)
        raise KeyError(f"statistics have no target {self.target_tok_s}")


class Evaluator:
    """Memoized Monte Carlo evaluations; counts how many were run (``evaluations``) and
    how many lever values ``simulate`` refused without a run (``refused``: above a service
    bound, ``Stats.simulated`` False).

    Keyed by the lever value (``key``), so every target and every root (estimate and both
    confidence bounds) reuses the same runs.
    """

    def __init__(self, simulate: SimulateFn, targets: Sequence[float]):
        self.simulate = simulate
        self.targets = tuple(float(t) for t in targets)
        self.memo: dict[str, Stats] = {}

    @property
    def evaluations(self) -> int:
        return sum(1 for s in self.memo.values() if s.simulated)

    @property
    def refused(self) -> int:
        return len(self.memo) - self.evaluations

    def __call__(
        self, model: Bound | Scenario, key: str, acceptance: Acceptance | None = None
    ) -> Stats:
        if key not in self.memo:
            self.memo[key] = self.simulate(model, acceptance, self.targets)
        return self.memo[key]


# --------------------------------------------------------------------------- 1-D root finding


#: What a probe's evaluations return: ``Stats``, or a study's own summary of a point.
T = TypeVar("T")


@dataclass
class Probe(Generic[T]):
    """A monotone criterion along one lever: ``x`` -> summary, with the points seen.

    ``sign`` is +1 when raising the lever helps (alpha) and -1 when lowering it does
    (verify_ms); the solver works in ``u = sign * x`` where the criterion is increasing.
    """

    evaluate: Callable[[float], T]
    sign: int
    lo: float  # domain in x
    hi: float
    integer: bool = False
    seen: dict[float, T] = field(default_factory=dict)

    def at(self, x: float) -> T:
        x = round(x) if self.integer else float(x)
        if x not in self.seen:
            self.seen[x] = self.evaluate(x)
        return self.seen[x]

    @property
    def u_lo(self) -> float:
        return min(self.sign * self.lo, self.sign * self.hi)

    @property
    def u_hi(self) -> float:
        return max(self.sign * self.lo, self.sign * self.hi)


def first_passing(
    probe: Probe[T],
    stat: Callable[[T], float],
    threshold: float,
    *,
    hint: float,
    step: float,
    xtol: float,
) -> float | None:
    """The least-effort lever value ``x`` with ``stat(summary(x)) >= threshold``.

    Least effort: the smallest x when raising it helps, the largest when lowering it does.
    Brackets outward from ``hint`` with doubling steps (starting at ``step``) using every
    point already seen, then bisects to ``xtol`` (to 1 for integer levers). None when the
    best end of the domain does not pass.
    """
    found = passing_bracket(probe, stat, threshold, hint=hint, step=step, xtol=xtol)
    return None if found is None else found[1]


def passing_bracket(
    probe: Probe[T],
    stat: Callable[[T], float],
    threshold: float,
    *,
    within: tuple[float, float] | None = None,
    hint: float,
    step: float,
    xtol: float,
) -> tuple[float | None, float] | None:
    """``first_passing``'s bracket: (the failing lever value next to it, None when the
    domain's easy end passes; the least-effort passing value). ``within`` (lo, hi) in x:
    the bisection also stops once both ends of its bracket lie inside it (a caller for
    whom any root inside that range gives the same answer)."""
    s = probe.sign

    def passes(u: float) -> bool:
        return stat(probe.at(s * u)) >= threshold

    def known() -> tuple[float | None, float | None]:
        """(the largest failing u, the least passing u) seen inside the domain, in one pass
        (a statistic that is neither, NaN, counts as neither)."""
        u_lo, u_hi = probe.u_lo, probe.u_hi
        bad: float | None = None
        good: float | None = None
        for x, sm in probe.seen.items():
            u = s * x
            if not u_lo <= u <= u_hi:
                continue
            value = stat(sm)
            if value < threshold:
                bad = u if bad is None else max(bad, u)
            elif value >= threshold:
                good = u if good is None else min(good, u)
        return bad, good

    def inside(a: float, b: float) -> bool:
        return within is not None and all(within[0] <= s * u <= within[1] for u in (a, b))

    lo, hi = probe.u_lo, probe.u_hi
    bad, good = known()
    u = min(max(s * hint, lo), hi)
    width = step
    if probe.integer:
        u, width = round(u), max(1, round(step))
    while good is None:  # expand upward (towards more effort) until the criterion passes
        start = u if bad is None else max(u, bad + width)
        u = min(start, hi)
        if passes(u):
            good = u
        else:
            bad = u
            if u >= hi:
                return None
            width *= 2
            u = bad + width
    while bad is None:  # expand downward until it fails, or the domain's easy end passes
        u = max(min(u, good - width), lo)
        if passes(u):
            good = u
            if u <= lo:
                return None, s * lo
            width *= 2
            u = good - width
        else:
            bad = u
    tol = 1.0 if probe.integer else xtol
    while good - bad > tol and not inside(bad, good):
        mid = math.floor((bad + good) / 2) if probe.integer else (bad + good) / 2
        if passes(mid):
            good = mid
        else:
            bad = mid
    return s * bad, s * good


@dataclass(frozen=True, slots=True)
class Root:
    """A lever value reaching a criterion, with the 95% interval from Monte Carlo noise.

    ``value`` is None when unreachable; ``ci95`` ends are None where the band never
    crosses the threshold inside the domain.
    """

    value: float | None
    ci95: tuple[float | None, float | None]


def solve_root(
    probe: Probe[Stats], criterion: Criterion, *, hint: float, step: float, xtol: float
) -> Root:
    """Estimate and 95% interval (band inversion) of the least-effort lever value."""
    thr = criterion.threshold

    def est(sm: Stats) -> float:
        return criterion.stat(sm)[0]

    def lower(sm: Stats) -> float:
        return criterion.stat(sm)[1]

    def upper(sm: Stats) -> float:
        return criterion.stat(sm)[2]

    value = first_passing(probe, est, thr, hint=hint, step=step, xtol=xtol)
    around = hint if value is None else value
    optimistic = first_passing(probe, upper, thr, hint=around, step=step, xtol=xtol)
    pessimistic = first_passing(probe, lower, thr, hint=around, step=step, xtol=xtol)
    if value is not None and optimistic is None:
        optimistic = value
    ends = (optimistic, pessimistic) if probe.sign > 0 else (pessimistic, optimistic)
    return Root(value, ends)


def monotone_violations(probe: Probe[Stats], criterion: Criterion) -> list[tuple[float, float]]:
    """Neighbouring seen points where the estimate falls although the lever helps more.

    Empty for a monotone lever under common random numbers.
    """
    pts = sorted(probe.seen.items(), key=lambda kv: probe.sign * kv[0])
    out = []
    for (x0, s0), (x1, s1) in itertools.pairwise(pts):
        v0, v1 = criterion.stat(s0)[0], criterion.stat(s1)[0]
        if v1 < v0 - 1e-9 * max(1.0, abs(v0)):
            out.append((x0, x1))
    return out


def closed_form_stats(
    model: Bound | Scenario, acceptance: Acceptance | None, targets: Sequence[float]
) -> Stats:
    """A degenerate "simulation": the closed form as statistics with a zero-width interval.

    For checking the search machinery against ``answer_at_k`` and for closed-form searches;
    the mean-tok/s form only (no target probabilities). A ``SimulateFn``.

    Arithmetic on the bound model: without ``acceptance``, the scenario bound (``bind``: its
    acceptance, a tree's own, and its cycle); with it, the cycle alone (a bound model's
    ``cycle``, a scenario's ``bound_cycle_cost``: no acceptance model rebuilt per
    evaluation), its extend moved to the accept length of the acceptance by
    ``throughput_tok_s``.
    """
    if acceptance is None:
        bound = as_bound(model)
        rates, cycle = bound.acceptance.closed_form_rates(), bound.cycle
    else:
        cycle = model.cycle if isinstance(model, Bound) else bound_cycle_cost(model)
        rates = acceptance.closed_form_rates()
    al = mean_accept_length(rates)
    tput = throughput_tok_s(al, cycle)
    return Stats(tput, (tput, tput), al, ())
