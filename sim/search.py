"""Inverse search: the acceptance rate (or any monotone lever) that reaches a tok/s target.

The question of the seed case is inverse: "what accuracy do we need for 150/200 tok/s?".
For each target and draft length k the search finds the lowest acceptance at which

* the mean per-request tok/s reaches the target (``quantile=None``), or
* at least a fraction ``quantile`` of requests reach it (the service-level form, which
  needs the Monte Carlo distribution).

Method. The closed forms (sim/theory.py: ``answer_at_k``; renewal-reward throughput
E[L] / E[T_cycle], Leviathan et al. 2023 for E[L]) give the starting point. The Monte
Carlo then refines it by bisection. Every evaluation uses the same seed, so the estimates
share common random numbers: raising the acceptance never lowers any request's tok/s
(issue 3's property), the estimate is a monotone (step) function of the lever and
bisection on it is well defined. The 95% interval inverts the Monte Carlo confidence
band: its ends are the lever values at which the upper and the lower 95% bound of the
statistic (mean tok/s, or the fraction of requests reaching the target) cross the
threshold, i.e. the set of lever values at which the target lies inside the band.

Acceptance profiles. With one rate ``alpha`` the lever is alpha. With per-position rates
(or per-request heterogeneity) the search scales the whole profile by one factor, keeping
its shape (rates capped at 1), and reports ``alpha`` as the mean conditional rate over
positions 1..k of the scaled profile; the report says so (``acceptance_lever``).

No plotting here (sim/plots.py), no files (sim/cli/search.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq

from sim.costs import pass_times, scenario_cycle_cost
from sim.errors import SpecsimError
from sim.scenario import Scenario, scenario_from_dict, with_overrides
from sim.theory import (
    answer_at_k,
    ceiling_tok_s,
    mean_accept_length,
    throughput_tok_s,
)

#: Bisection tolerance on alpha (conditional rates are reported to 3 decimals).
ALPHA_XTOL = 5e-4
#: Relative bisection tolerance for other levers.
LEVER_RTOL = 1e-3

Summary = dict[str, Any]  # ``sim.montecarlo.Summary.to_dict()``
SimulateFn = Callable[[Scenario, Sequence[float]], Summary]


# --------------------------------------------------------------------------- measurements


def monte_carlo_summary(engine: str = "fast") -> SimulateFn:
    """The statistics search needs from the scenario's Monte Carlo at its own seed.

    Same definitions as ``sim.montecarlo.summarize`` (mean with its t interval over
    replication means, pooled accept length, P(tok/s >= target) with a Wilson interval),
    computed here without the theoretical pmf that ``summarize`` adds, which costs a
    numerical integration per call for heterogeneous acceptance and is not needed here.
    """

    def run(scenario: Scenario, targets: Sequence[float]) -> Summary:
        from sim.montecarlo import mean_ci95, simulate, wilson_ci95

        result = simulate(scenario, engine=engine, seed=scenario.simulation.seed, workers=1)
        tok = result.tok_s  # (replications, requests)
        flat = tok.ravel()
        mean, lo, hi = mean_ci95(tok.mean(axis=1) if result.replications > 1 else flat)
        counts = result.accept_counts.sum(axis=0)  # (k + 1,)
        lengths = np.arange(1, result.num_steps + 2)
        rows = []
        for t in targets:
            hits = int((flat >= t).sum())
            rows.append(
                {
                    "tok_s": float(t),
                    "p_at_least": hits / flat.size,
                    "p_at_least_ci95": list(wilson_ci95(hits, flat.size)),
                }
            )
        return {
            "throughput_tok_s": {"mean": mean, "ci95": [lo, hi]},
            "accept_length": {"mean": float(counts @ lengths / counts.sum())},
            "targets": rows,
        }

    return run


@dataclass(frozen=True)
class Criterion:
    """What "reaches the target" means: mean tok/s >= target, or P(tok/s >= target) >= q."""

    target_tok_s: float
    quantile: float | None = None

    @property
    def threshold(self) -> float:
        return self.target_tok_s if self.quantile is None else self.quantile

    def stat(self, summary: Summary) -> tuple[float, float, float]:
        """(estimate, lower 95%, upper 95%) of the criterion's statistic."""
        if self.quantile is None:
            tput = summary["throughput_tok_s"]
            return float(tput["mean"]), float(tput["ci95"][0]), float(tput["ci95"][1])
        for entry in summary["targets"]:
            if math.isclose(float(entry["tok_s"]), self.target_tok_s):
                lo, hi = entry["p_at_least_ci95"]
                return float(entry["p_at_least"]), float(lo), float(hi)
        raise KeyError(f"summary has no target {self.target_tok_s}")


class Evaluator:
    """Memoized Monte Carlo evaluations of scenarios; counts how many were run.

    Keyed by the canonical overrides, so every target and every root (estimate and both
    confidence bounds) reuses the same runs.
    """

    def __init__(self, simulate: SimulateFn, targets: Sequence[float]):
        self.simulate = simulate
        self.targets = tuple(float(t) for t in targets)
        self.memo: dict[str, Summary] = {}

    @property
    def evaluations(self) -> int:
        return len(self.memo)

    def __call__(self, scenario: Scenario, key: str) -> Summary:
        if key not in self.memo:
            self.memo[key] = self.simulate(scenario, self.targets)
        return self.memo[key]


# --------------------------------------------------------------------------- 1-D root finding


@dataclass
class Probe:
    """A monotone criterion along one lever: ``x`` -> summary, with the points seen.

    ``sign`` is +1 when raising the lever helps (alpha) and -1 when lowering it does
    (verify_ms); the solver works in ``u = sign * x`` where the criterion is increasing.
    """

    evaluate: Callable[[float], Summary]
    sign: int
    lo: float  # domain in x
    hi: float
    integer: bool = False
    seen: dict[float, Summary] = field(default_factory=dict)

    def at(self, x: float) -> Summary:
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
    probe: Probe,
    stat: Callable[[Summary], float],
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
    s = probe.sign

    def passes(u: float) -> bool:
        return stat(probe.at(s * u)) >= threshold

    def known() -> tuple[float | None, float | None]:
        bad = [s * x for x, sm in probe.seen.items() if stat(sm) < threshold]
        good = [s * x for x, sm in probe.seen.items() if stat(sm) >= threshold]
        bad = [u for u in bad if probe.u_lo <= u <= probe.u_hi]
        good = [u for u in good if probe.u_lo <= u <= probe.u_hi]
        return (max(bad) if bad else None), (min(good) if good else None)

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
                return s * lo
            width *= 2
            u = good - width
        else:
            bad = u
    tol = 1.0 if probe.integer else xtol
    while good - bad > tol:
        mid = math.floor((bad + good) / 2) if probe.integer else (bad + good) / 2
        if passes(mid):
            good = mid
        else:
            bad = mid
    return s * good


@dataclass(frozen=True)
class Root:
    """A lever value reaching a criterion, with the 95% interval from Monte Carlo noise.

    ``value`` is None when unreachable; ``ci95`` ends are None where the band never
    crosses the threshold inside the domain.
    """

    value: float | None
    ci95: tuple[float | None, float | None]


def solve_root(
    probe: Probe, criterion: Criterion, *, hint: float, step: float, xtol: float
) -> Root:
    """Estimate and 95% interval (band inversion) of the least-effort lever value."""
    thr = criterion.threshold

    def est(sm: Summary) -> float:
        return criterion.stat(sm)[0]

    def lower(sm: Summary) -> float:
        return criterion.stat(sm)[1]

    def upper(sm: Summary) -> float:
        return criterion.stat(sm)[2]

    value = first_passing(probe, est, thr, hint=hint, step=step, xtol=xtol)
    around = hint if value is None else value
    optimistic = first_passing(probe, upper, thr, hint=around, step=step, xtol=xtol)
    pessimistic = first_passing(probe, lower, thr, hint=around, step=step, xtol=xtol)
    if value is not None and optimistic is None:
        optimistic = value
    ends = (optimistic, pessimistic) if probe.sign > 0 else (pessimistic, optimistic)
    return Root(value, ends)


def monotone_violations(probe: Probe, criterion: Criterion) -> list[tuple[float, float]]:
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


# --------------------------------------------------------------------------- acceptance lever


def pin_verify_tokens(scenario: Scenario) -> Scenario:
    """Fix ``timing.verify_tokens`` to the measured pass's token count (k + 1 by default).

    The measured ``verify_ms`` belongs to the scenario's own k; without pinning, changing
    ``speculation.num_steps`` would silently move the measurement to another token count.
    With it, other k use the measured pass plus ``verify_ms_per_extra_token`` per extra
    token, as the closed forms do (``pass_times``).
    """
    if scenario.timing.verify_tokens is not None:
        return scenario
    return with_overrides(scenario, {"timing.verify_tokens": scenario.num_steps + 1})


def _scaled_rates(table: Mapping[str, Any], x: float, unit_alpha: bool) -> dict[str, Any]:
    """A copy of an acceptance table (or mix class) with its mean rates scaled by ``x``."""
    out = dict(table)
    if out.get("alpha") is not None:
        out["alpha"] = float(min(1.0, x * (1.0 if unit_alpha else out["alpha"])))
    if out.get("per_position") is not None:
        out["per_position"] = [float(min(1.0, x * r)) for r in out["per_position"]]
    if out.get("mix") is not None:
        out["mix"] = [_scaled_rates(c, x, unit_alpha=False) for c in out["mix"]]
    return out


def _mean_rates(table: Mapping[str, Any], num_steps: int) -> list[tuple[float, np.ndarray]]:
    """(weight, mean rates of shape (k,)) for the table or each class of its mix."""
    if table.get("mix") is not None:
        total = sum(float(c["weight"]) for c in table["mix"])
        return [(float(c["weight"]) / total, _mean_rates(c, num_steps)[0][1]) for c in table["mix"]]
    if table.get("alpha") is not None:
        return [(1.0, np.full(num_steps, float(table["alpha"])))]
    listed = np.asarray(table["per_position"], dtype=float)
    rates = (
        listed[:num_steps]
        if num_steps <= len(listed)
        else np.concatenate([listed, np.full(num_steps - len(listed), listed[-1])])
    )
    return [(1.0, rates)]


@dataclass(frozen=True)
class AcceptanceLever:
    """How acceptance is varied at draft length k, keeping everything else of [acceptance].

    The lever value ``x`` scales the mean rates: with one rate (``kind == "alpha"``) x is
    alpha itself; with per-position rates or a mix (``kind == "profile"``) every mean rate
    r becomes min(1, x r), so the profile keeps its shape. Per-request spread
    (concentration or std) is kept as given. ``alpha(x)`` reports the mean conditional rate
    over positions 1..k (weight-averaged over mix classes). ``x_max`` is where every rate
    reaches 1, or the last value the scenario's validation accepts (a Beta std can forbid
    means near 1).
    """

    base: Scenario  # with speculation.num_steps = k
    kind: str  # "alpha" or "profile"
    x_max: float

    @property
    def num_steps(self) -> int:
        return self.base.num_steps

    def table(self, x: float) -> dict[str, Any]:
        raw = self.base.acceptance.model_dump(exclude_none=True) if self.base.acceptance else {}
        if not raw:
            raw = {"alpha": 0.0}
        return _scaled_rates(raw, x, unit_alpha=self.kind == "alpha")

    def overrides(self, x: float) -> dict[str, Any]:
        return {"speculation.num_steps": self.num_steps, "acceptance": self.table(x)}

    def scenario(self, x: float) -> Scenario:
        return with_overrides(self.base, self.overrides(x), source="search")

    def alpha(self, x: float | None) -> float | None:
        if x is None:
            return None
        return float(sum(w * r.mean() for w, r in _mean_rates(self.table(x), self.num_steps)))

    def per_position(self, x: float) -> list[float]:
        """Mean conditional rates at x, shape (k,), weight-averaged over mix classes."""
        return [float(v) for v in sum(w * r for w, r in _mean_rates(self.table(x), self.num_steps))]

    def expected_accept_length(self, x: float) -> float:
        """E[L] per request at x (effective rates carry the heterogeneity)."""
        acc = self.scenario(x).acceptance
        return mean_accept_length(acc.conditional_rates(self.num_steps)) if acc else 1.0

    def accept_length_grid(self, n: int = 101) -> tuple[np.ndarray, np.ndarray]:
        """(x grid of shape (n,), E[L] at each), for interpolating closed-form answers."""
        xs = np.linspace(0.0, self.x_max, n)
        return xs, np.array([self.expected_accept_length(float(x)) for x in xs])

    def closed_form_x(
        self, required_accept_length: float, grid: tuple[np.ndarray, np.ndarray] | None = None
    ) -> float | None:
        """Least x whose expected accept length reaches the requirement (None: out of reach).

        Interpolates on the grid, then refines with brentq inside the grid cell.
        """
        xs, als = grid or self.accept_length_grid()
        if required_accept_length <= als[0]:
            return 0.0
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


def _is_plain_alpha(scenario: Scenario) -> bool:
    acc = scenario.acceptance
    return acc is None or (acc.alpha is not None and not getattr(acc, "heterogeneous", False))


def acceptance_lever(scenario: Scenario, num_steps: int) -> AcceptanceLever:
    """The acceptance lever of ``scenario`` at draft length ``num_steps``."""
    over: dict[str, Any] = {"speculation.num_steps": num_steps}
    if scenario.acceptance is None:  # a plain-decoding scenario: search alpha from scratch
        over["acceptance"] = {"alpha": 0.0}
    base = with_overrides(scenario, over, source="search")
    acc = base.acceptance
    kind = "alpha" if acc is None or acc.alpha is not None else "profile"
    if kind == "alpha":
        top = 1.0
    else:
        rates = np.concatenate(
            [r for _, r in _mean_rates(acc.model_dump(exclude_none=True), num_steps)]
        )
        positive = rates[rates > 0]
        top = 1.0 / float(positive.min()) if positive.size else 1.0
    lever = AcceptanceLever(base, kind, top)
    try:
        lever.scenario(top)
    except SpecsimError:  # e.g. a Beta std too wide for means near 1: stop where valid
        lo = 0.0
        for _ in range(60):
            mid = (lo + top) / 2
            try:
                lever.scenario(mid)
                lo = mid
            except SpecsimError:
                top = mid
        lever = AcceptanceLever(base, kind, lo)
    return lever


def acceptance_note(scenario: Scenario) -> str:
    return ACCEPTANCE_NOTE_ALPHA if _is_plain_alpha(scenario) else ACCEPTANCE_NOTE_PROFILE


# --------------------------------------------------------------------------- search over alpha


@dataclass(frozen=True)
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_steps": self.num_steps,
            "reachable": self.reachable,
            "alpha": self.alpha,
            "alpha_ci95": list(self.alpha_ci95),
            "required_accept_length": self.required_accept_length,
            "closed_form_alpha": self.closed_form_alpha,
            "ceiling_tok_s": self.ceiling_tok_s,
            "simulated_ceiling_tok_s": self.simulated_ceiling_tok_s,
            "per_position": self.per_position,
        }


@dataclass(frozen=True)
class TargetResult:
    """One target over the k range: the best k (lowest alpha) and every k."""

    tok_s: float
    quantile: float | None
    per_num_steps: tuple[KResult, ...]
    reason: str | None

    @property
    def best(self) -> KResult | None:
        ok = [r for r in self.per_num_steps if r.reachable]
        return min(ok, key=lambda r: (r.alpha, r.num_steps)) if ok else None

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

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        top = max(self.per_num_steps, key=lambda r: r.ceiling_tok_s)
        return {
            "tok_s": self.tok_s,
            "quantile": self.quantile,
            "reachable": best is not None,
            "best_num_steps": best.num_steps if best else None,
            "alpha": best.alpha if best else None,
            "alpha_ci95": list(best.alpha_ci95) if best else [None, None],
            "required_accept_length": best.required_accept_length if best else None,
            "ceiling_tok_s": top.ceiling_tok_s,
            "ceiling_num_steps": top.num_steps,
            "reason": self.reason,
            "note": self.note,
            "per_num_steps": [r.to_dict() for r in self.per_num_steps],
        }


@dataclass(frozen=True)
class SearchResult:
    scenario: str
    engine: str
    evaluations: int
    note: str
    targets: tuple[TargetResult, ...]
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "engine": self.engine,
            "evaluations": self.evaluations,
            "acceptance_lever": self.note,
            **self.settings,
            "targets": [t.to_dict() for t in self.targets],
        }


def _search_k(
    base: Scenario,
    num_steps: int,
    criteria: Sequence[Criterion],
    evaluator: Evaluator,
) -> list[KResult]:
    """Every criterion at one k, sharing the Monte Carlo runs of this k."""
    lever = acceptance_lever(base, num_steps)
    passes = pass_times(base)
    cost = scenario_cycle_cost(base, num_steps)

    def evaluate(x: float) -> Summary:
        return evaluator(lever.scenario(x), f"k={num_steps};x={x!r}")

    probe = Probe(evaluate, +1, 0.0, lever.x_max)
    grid = lever.accept_length_grid()
    out = []
    for crit in criteria:
        closed = answer_at_k(crit.target_tok_s, passes, num_steps)
        x_cf = lever.closed_form_x(closed.required_accept_length, grid)
        hint = lever.x_max if x_cf is None else x_cf
        root = solve_root(probe, crit, hint=hint, step=0.01 * lever.x_max, xtol=ALPHA_XTOL)
        sim_ceiling = None
        if lever.x_max in probe.seen:
            sim_ceiling = float(probe.seen[lever.x_max]["throughput_tok_s"]["mean"])
        al = None
        if root.value is not None:
            al = float(probe.at(root.value)["accept_length"]["mean"])
        out.append(
            KResult(
                num_steps=num_steps,
                reachable=root.value is not None,
                alpha=lever.alpha(root.value),
                alpha_ci95=(lever.alpha(root.ci95[0]), lever.alpha(root.ci95[1])),
                required_accept_length=al,
                closed_form_alpha=lever.alpha(x_cf),
                ceiling_tok_s=ceiling_tok_s(cost),
                simulated_ceiling_tok_s=sim_ceiling,
                per_position=(
                    None
                    if root.value is None or lever.kind == "alpha"
                    else lever.per_position(root.value)
                ),
            )
        )
    return out


@dataclass(frozen=True)
class KTask:
    """One draft length's search for a worker process (picklable)."""

    base: dict[str, Any]
    num_steps: int
    criteria: tuple[Criterion, ...]
    engine: str
    simulate: SimulateFn | None


def run_k_task(task: KTask) -> tuple[int, list[KResult], int]:
    """(k, results per criterion, Monte Carlo evaluations) for one draft length."""
    base = scenario_from_dict(task.base, source="search")
    targets = [c.target_tok_s for c in task.criteria]
    evaluator = Evaluator(task.simulate or monte_carlo_summary(task.engine), targets)
    rows = _search_k(base, task.num_steps, task.criteria, evaluator)
    return task.num_steps, rows, evaluator.evaluations


def _reason(tok_s: float, quantile: float | None, rows: Sequence[KResult]) -> str | None:
    if any(r.reachable for r in rows):
        return None
    top = max(rows, key=lambda r: r.ceiling_tok_s)
    ks = [r.num_steps for r in rows]
    what = "mean tok/s" if quantile is None else f"{quantile:.0%} of requests"
    sim = (
        f"; simulated at alpha 1: {top.simulated_ceiling_tok_s:.1f} tok/s"
        if top.simulated_ceiling_tok_s is not None
        else ""
    )
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
    simulate: SimulateFn | None = None,
    workers: int = 1,
) -> SearchResult:
    """The lowest acceptance reaching each target, for each k, with 95% intervals.

    ``simulate`` (default: the Monte Carlo at the scenario's seed) maps a scenario and the
    targets to a summary dict; tests pass the closed form or a counting wrapper (it must be
    a picklable top-level function when ``workers`` > 1). ``workers`` > 1 searches the
    draft lengths in that many processes; each k's search is independent and seeded the
    same way, so the result does not depend on it.
    """
    targets = [float(t) for t in targets]
    if not targets:
        raise SpecsimError("no targets: give --target or a [targets] section", source="search")
    if quantile is not None and not 0.0 < quantile < 1.0:
        raise SpecsimError(f"must be in (0, 1), got {quantile}", source="--quantile")
    ks = sorted(set(num_steps))
    if not ks or ks[0] < 1:
        raise SpecsimError("draft lengths must be >= 1", source="--num-steps")
    base = pin_verify_tokens(scenario)
    criteria = tuple(Criterion(t, quantile) for t in targets)
    by_k: dict[int, list[KResult]] = {}
    evaluations = 0
    if workers > 1 and len(ks) > 1:
        from sim.sweep import LocalExecutor  # the sweep's process pool

        tasks = [
            KTask(base.model_dump(exclude_none=True), k, criteria, engine, simulate) for k in ks
        ]
        for _, (k, rows, n) in LocalExecutor(workers).map_unordered(run_k_task, tasks):
            by_k[k], evaluations = rows, evaluations + n
    else:
        evaluator = Evaluator(simulate or monte_carlo_summary(engine), targets)
        by_k = {k: _search_k(base, k, criteria, evaluator) for k in ks}
        evaluations = evaluator.evaluations
    results = tuple(
        TargetResult(
            tok_s=t,
            quantile=quantile,
            per_num_steps=tuple(by_k[k][i] for k in ks),
            reason=_reason(t, quantile, [by_k[k][i] for k in ks]),
        )
        for i, t in enumerate(targets)
    )
    settings = {
        "seed": base.simulation.seed,
        "replications": base.simulation.replications,
        "requests": base.workload.requests,
        "output_tokens": base.workload.output_tokens,
        "quantile": quantile,
        "current": current_operating_point(base),
    }
    settings["closed_form_curves"] = closed_form_curves(
        base, ks, np.linspace(0.5 * min(targets), 1.25 * max(targets), 61)
    )
    return SearchResult(base.name, engine, evaluations, acceptance_note(base), results, settings)


def current_operating_point(scenario: Scenario) -> dict[str, Any] | None:
    """The scenario as it is: its k, its alpha (as the search reports alpha) and the
    closed-form tok/s; None for plain decoding."""
    if scenario.num_steps == 0 or scenario.acceptance is None:
        return None
    lever = acceptance_lever(scenario, scenario.num_steps)
    x_now = scenario.acceptance.alpha if lever.kind == "alpha" else 1.0
    return {
        "num_steps": scenario.num_steps,
        "alpha": lever.alpha(x_now),
        "closed_form_tok_s": analytic_tok_s(scenario),
    }


def closed_form_curves(
    scenario: Scenario, num_steps: Iterable[int], tok_s: np.ndarray
) -> dict[str, dict[str, list[float]]]:
    """Closed-form required alpha against target tok/s per k (reachable points only).

    ``tok_s`` has shape (n,); each curve holds the targets reachable at that k and the
    alpha (scaled-profile mean) they need. For the required-rate plot.
    """
    out: dict[str, dict[str, list[float]]] = {}
    for k in num_steps:
        lever = acceptance_lever(scenario, k)
        xs, als = lever.accept_length_grid()
        cycle_ms = scenario_cycle_cost(scenario, k).total_ms
        need = np.asarray(tok_s, dtype=float) * cycle_ms / 1000.0
        ok = (need >= als[0]) & (need <= als[-1])
        x_at = np.interp(need[ok], als, xs)
        out[str(k)] = {
            "tok_s": [float(t) for t in np.asarray(tok_s)[ok]],
            "alpha": [float(lever.alpha(float(x))) for x in x_at],
        }
    return out


def closed_form_simulate(scenario: Scenario, targets: Sequence[float]) -> Summary:
    """A degenerate "simulation": the closed form as a summary with a zero-width interval.

    For checking the search machinery against ``answer_at_k``; the mean-tok/s form only.
    """
    rates = (
        scenario.acceptance.conditional_rates(scenario.num_steps)
        if scenario.acceptance is not None
        else np.zeros(scenario.num_steps)
    )
    al = mean_accept_length(rates)
    tput = throughput_tok_s(al, scenario_cycle_cost(scenario))
    return {
        "throughput_tok_s": {"mean": tput, "ci95": [tput, tput]},
        "accept_length": {"mean": al},
        "targets": [],
    }


# --------------------------------------------------------------------------- any lever


def field_value(scenario: Scenario, dotted: str) -> Any:
    """The value of a dotted field of a scenario (SpecsimError if there is none)."""
    node: Any = scenario.model_dump()
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise SpecsimError("no such scenario field", source="--solve", field=dotted)
        node = node[part]
    return node


def _valid(scenario: Scenario, dotted: str, value: float) -> bool:
    try:
        with_overrides(scenario, {dotted: value})
    except SpecsimError:
        return False
    return True


def _edge(scenario: Scenario, dotted: str, ok: float, bad: float, integer: bool) -> float:
    """The valid value nearest ``bad`` between a valid ``ok`` and an invalid ``bad``."""
    for _ in range(200):
        if abs(bad - ok) <= (1 if integer else 1e-12 * max(1.0, abs(ok))):
            break
        mid = (ok + bad) / 2
        if integer:
            mid = math.floor(mid) if bad > ok else math.ceil(mid)
            if mid == ok:
                break
        if _valid(scenario, dotted, mid):
            ok = mid
        else:
            bad = mid
    return ok


def lever_domain(scenario: Scenario, dotted: str, v0: float, integer: bool) -> tuple[float, float]:
    """The valid range of a numeric field around its value ``v0``, found by validation.

    Searched between 0 and ``max(v0, 1) * 2**40`` for real fields, ``* 2**6`` for integer
    ones (counts such as output tokens; a draft length of 10**12 would not fit in memory);
    levers are non-negative quantities. Each end is the last valid value before
    validation fails.
    """
    cast = int if integer else float
    lo = cast(0)
    if not _valid(scenario, dotted, lo):
        lo = _edge(scenario, dotted, v0, lo, integer)
    hi = v0
    for n in range(1, (7 if integer else 41)):
        cand = cast(max(v0, 1) * 2**n)
        if not _valid(scenario, dotted, cand):
            hi = _edge(scenario, dotted, hi, cand, integer)
            break
        hi = cand
    return lo, hi


def analytic_tok_s(scenario: Scenario) -> float:
    """Closed-form long-run tok/s of a scenario (renewal-reward), for bracketing levers."""
    return float(closed_form_simulate(scenario, ())["throughput_tok_s"]["mean"])


@dataclass(frozen=True)
class LeverTarget:
    tok_s: float
    quantile: float | None
    reachable: bool
    value: float | None
    value_ci95: tuple[float | None, float | None]
    closed_form_value: float | None
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "quantile": self.quantile,
            "reachable": self.reachable,
            "value": self.value,
            "value_ci95": list(self.value_ci95),
            "closed_form_value": self.closed_form_value,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class LeverResult:
    scenario: str
    field: str
    current: float
    direction: str  # "at least" (raising helps) or "at most" (lowering helps)
    domain: tuple[float, float]
    evaluations: int
    engine: str
    targets: tuple[LeverTarget, ...]
    warnings: tuple[str, ...]
    settings: dict[str, Any]
    points: tuple[dict[str, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "field": self.field,
            "current": self.current,
            "direction": self.direction,
            "domain": list(self.domain),
            "engine": self.engine,
            "evaluations": self.evaluations,
            **self.settings,
            "warnings": list(self.warnings),
            "targets": [t.to_dict() for t in self.targets],
            "points": [dict(p) for p in self.points],
        }


def solve_lever(
    scenario: Scenario,
    dotted: str,
    targets: Sequence[float],
    *,
    quantile: float | None = None,
    engine: str = "fast",
    simulate: SimulateFn | None = None,
) -> LeverResult:
    """The value of numeric field ``dotted`` that reaches each target, all else fixed.

    The direction (does raising the field help?) comes from the closed form when the field
    moves it, else from two Monte Carlo runs (the current value and twice it). The closed
    form also gives the starting bracket; Monte Carlo bisection on common random numbers
    refines it, and the 95% interval inverts the confidence band as for alpha. Seen points
    that break monotonicity are reported in ``warnings``.
    """
    targets = [float(t) for t in targets]
    if not targets:
        raise SpecsimError("no targets: give --target or a [targets] section", source="search")
    if quantile is not None and not 0.0 < quantile < 1.0:
        raise SpecsimError(f"must be in (0, 1), got {quantile}", source="--quantile")
    if dotted in ("speculation.num_draft_tokens", "simulation.seed"):
        raise SpecsimError("not a lever", source="--solve", field=dotted)
    base = pin_verify_tokens(scenario)
    v0 = field_value(base, dotted)
    if isinstance(v0, bool) or not isinstance(v0, int | float):
        raise SpecsimError(f"is not a numeric field (value {v0!r})", source="--solve", field=dotted)
    integer = isinstance(v0, int)
    lo, hi = lever_domain(base, dotted, v0, integer)
    if lo == hi:
        raise SpecsimError("has a single valid value here", source="--solve", field=dotted)
    evaluator = Evaluator(simulate or monte_carlo_summary(engine), targets)

    def at(x: float) -> Scenario:
        return with_overrides(base, {dotted: int(x) if integer else float(x)}, source="search")

    def evaluate(x: float) -> Summary:
        return evaluator(at(x), f"{dotted}={x!r}")

    # direction: closed form first, Monte Carlo when the closed form ignores the field
    near = [v for v in ((v0 + 1, v0 - 1) if integer else (v0 * 1.1, v0 / 1.1)) if lo <= v <= hi]
    near = near or [lo if v0 != lo else hi]
    cf0, cf1 = analytic_tok_s(at(v0)), analytic_tok_s(at(near[0]))
    uses_closed_form = not math.isclose(cf0, cf1, rel_tol=1e-12)
    if uses_closed_form:
        sign = 1 if (cf1 > cf0) == (near[0] > v0) else -1
    else:
        far = min(hi, v0 * 2) if v0 > 0 else hi
        if far == v0:
            far = lo
        m0 = evaluate(v0)["throughput_tok_s"]["mean"]
        m1 = evaluate(far)["throughput_tok_s"]["mean"]
        if m0 == m1:
            raise SpecsimError(
                f"changing it from {v0:g} to {far:g} does not change the simulated tok/s",
                source="--solve",
                field=dotted,
            )
        sign = 1 if (m1 > m0) == (far > v0) else -1
    probe = Probe(evaluate, sign, lo, hi, integer)
    scale = max(abs(v0), 1e-9)
    rows, warnings = [], []
    for t in targets:
        crit = Criterion(t, quantile)
        x_cf = None
        if uses_closed_form:
            cf_probe = Probe(lambda x: closed_form_simulate(at(x), ()), sign, lo, hi, integer)
            x_cf = first_passing(
                cf_probe,
                lambda sm: sm["throughput_tok_s"]["mean"],
                t,
                hint=v0,
                step=0.05 * scale,
                xtol=1e-6 * scale,
            )
        hint = x_cf if x_cf is not None else v0
        root = solve_root(
            probe,
            crit,
            hint=hint,
            step=0.02 * max(abs(hint), 1e-9 * scale),
            xtol=LEVER_RTOL * max(abs(hint), 1e-6 * scale),
        )
        reason = None
        if root.value is None:
            best_end = hi if sign > 0 else lo
            m = probe.at(best_end)["throughput_tok_s"]["mean"]
            reason = (
                f"even at {dotted} = {best_end:g} (the end of its valid range) the simulated "
                f"mean is {m:.1f} tok/s"
                + (
                    ""
                    if quantile is None
                    else f" and the target's share of requests is "
                    f"{crit.stat(probe.at(best_end))[0]:.2f} < {quantile}"
                )
            )
        rows.append(
            LeverTarget(t, quantile, root.value is not None, root.value, root.ci95, x_cf, reason)
        )
        for x0, x1 in monotone_violations(probe, crit):
            warnings.append(
                f"not monotone: the estimate falls between {dotted} = {x0:g} and {x1:g}"
            )
    current_tok_s = float(probe.at(v0)["throughput_tok_s"]["mean"])  # context for the report
    settings = {
        "seed": base.simulation.seed,
        "replications": base.simulation.replications,
        "requests": base.workload.requests,
        "quantile": quantile,
        "current_tok_s": current_tok_s,
    }
    return LeverResult(
        base.name,
        dotted,
        v0,
        "at least" if sign > 0 else "at most",
        (lo, hi),
        evaluator.evaluations,
        engine,
        tuple(rows),
        tuple(dict.fromkeys(warnings)),
        settings,
        tuple(
            {
                "value": float(x),
                "tok_s_mean": float(sm["throughput_tok_s"]["mean"]),
                "tok_s_ci95_lo": float(sm["throughput_tok_s"]["ci95"][0]),
                "tok_s_ci95_hi": float(sm["throughput_tok_s"]["ci95"][1]),
            }
            for x, sm in sorted(probe.seen.items())
        ),
    )


# --------------------------------------------------------------------------- text reports


def _a(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _ci(ci: Sequence[float | None]) -> str:
    lo, hi = ci
    return f"[{_a(lo)}, {'>' + _a(None) if hi is None else _a(hi)}]".replace(">-", "open")


def render_search(doc: Mapping[str, Any]) -> str:
    """The text report of ``specsim search`` (from ``SearchResult.to_dict()``)."""
    q = doc.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    lines = [
        f"search: {doc['scenario']}: lowest acceptance for {what} >= target",
        f"  Monte Carlo: {doc['engine']} engine, {doc['replications']} replications x "
        f"{doc['requests']} requests of {doc['output_tokens']} tokens, seed {doc['seed']}; "
        f"{doc['evaluations']} Monte Carlo evaluations",
        f"  {doc['acceptance_lever']}",
    ]
    now = doc.get("current")
    if now:
        lines.append(
            f"  now: k = {now['num_steps']}, alpha {now['alpha']:.3f}, "
            f"{now['closed_form_tok_s']:.1f} tok/s in closed form"
        )
    for t in doc["targets"]:
        lines.append("")
        if t["reachable"]:
            lines.append(
                f"target {t['tok_s']:g} tok/s: best k = {t['best_num_steps']}, alpha "
                f"{_a(t['alpha'])} (95% CI {_ci(t['alpha_ci95'])}), accept length "
                f"{t['required_accept_length']:.2f}"
            )
        else:
            lines.append(f"target {t['tok_s']:g} tok/s: unreachable: {t['reason']}")
        if t.get("note"):
            lines.append(f"  note: {t['note']}")
        lines.append("     k   alpha   95% CI            closed form   ceiling tok/s")
        for r in t["per_num_steps"]:
            alpha = _a(r["alpha"]) if r["reachable"] else "unreachable"
            ci = _ci(r["alpha_ci95"]) if r["reachable"] else ""
            lines.append(
                f"  {r['num_steps']:>4}   {alpha:<11} {ci:<18}{_a(r['closed_form_alpha']):>7}"
                f"   {r['ceiling_tok_s']:>10.1f}"
            )
    return "\n".join(lines)


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def render_lever(doc: Mapping[str, Any]) -> str:
    """The text report of ``specsim search --solve FIELD``."""
    q = doc.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    field_name = doc["field"]
    lines = [
        f"solve: {doc['scenario']}: {field_name} (now {doc['current']:g}, giving "
        f"{doc['current_tok_s']:.1f} tok/s) for {what} >= target, everything else fixed",
        f"  Monte Carlo: {doc['engine']} engine, {doc['replications']} replications x "
        f"{doc['requests']} requests, seed {doc['seed']}; {doc['evaluations']} Monte Carlo "
        "evaluations",
    ]
    for t in doc["targets"]:
        if t["reachable"]:
            lo, hi = (_g(v) for v in t["value_ci95"])
            lines.append(
                f"target {t['tok_s']:g} tok/s: {field_name} {doc['direction']} "
                f"{_g(t['value'])} (95% CI [{lo}, {hi}]; closed form "
                f"{_g(t['closed_form_value'])})"
            )
        else:
            lines.append(f"target {t['tok_s']:g} tok/s: unreachable: {t['reason']}")
    lines.extend(f"warning: {w}" for w in doc.get("warnings", []))
    return "\n".join(lines)
