"""Inverse search: the lowest acceptance rate that reaches a tok/s target, per k.

The question of the seed case is inverse: "what accuracy do we need for 150/200 tok/s?".
For each target and draft length k the search finds the lowest acceptance at which

* the mean per-request tok/s reaches the target (``quantile=None``), or
* at least a fraction ``quantile`` of requests reach it (the service-level form, which
  needs the Monte Carlo distribution).

The closed forms (sim/theory.py ``answer_at_k``) give the starting point, Monte Carlo
bisection on common random numbers the answer and its 95% interval (sim/rootfind.py).

Acceptance profiles. With one rate ``alpha`` the lever is alpha. With per-position rates,
a workload mix or per-request heterogeneity the search scales every mean rate by one
factor, keeping the profile's shape and spread (rates capped at 1), and reports ``alpha``
as the mean conditional rate over positions 1..k; the report says so (``acceptance_lever``).

No plotting here (sim/plots.py), no files (sim/cli/search.py); any other lever: sim/solve.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

from sim.costs import pass_times, scenario_cycle_cost
from sim.errors import SpecsimError
from sim.rootfind import (
    ALPHA_XTOL,
    Criterion,
    Evaluator,
    Probe,
    SimulateFn,
    Summary,
    analytic_tok_s,
    checked_targets,
    monte_carlo_summary,
    solve_root,
)
from sim.scenario import Scenario, scenario_from_dict, with_overrides
from sim.theory import answer_at_k, ceiling_tok_s, mean_accept_length

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
    targets = checked_targets(targets, quantile)
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
