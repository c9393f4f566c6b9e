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
as the mean conditional rate over positions 1..k; the report says so (``acceptance_lever``,
sim/studies/acceptance_lever.py). What the search answers: sim/studies/search_results.py.

No plotting here (sim/report/search_plots.py), no files (sim/cli/search.py); any other lever:
sim/studies/solve.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sim.binding.bound import Bound, bind
from sim.binding.draft_binding import draft_binding
from sim.binding.provenance import assumptions, effective_hardware, override_entries
from sim.errors import SpecsimError
from sim.hardware.passes import PassMemo
from sim.model.closed_forms import answer_at_k
from sim.model.cycle import PassTimes, ceiling_tok_s, required_accept_length
from sim.model.cycle import cycle_cost as chain_cycle_cost
from sim.model.cycletime import CycleTimeModel
from sim.model.drafts import describe_draft
from sim.parallel import LocalExecutor
from sim.scenario.overrides import pin_verify_tokens
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.engines.common import phase_means
from sim.simulation.exact import exact_obstacle
from sim.simulation.summary import Stats
from sim.studies.acceptance_lever import (
    AcceptanceLever,
    acceptance_lever,
    acceptance_levers,
    acceptance_note,
    spread_note,
)
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
from sim.studies.search_results import KResult, SearchResult, TargetResult
from sim.uncertainty.answers import TargetUncertainty, answer_uncertainty


def _search_k(
    lever: AcceptanceLever,
    at_k: Bound,
    passes: PassTimes,
    criteria: Sequence[Criterion],
    evaluator: Evaluator,
    cycle_times: CycleTimeModel | None = None,
) -> list[KResult]:
    """Every criterion at one k, sharing the Monte Carlo runs of this k.

    ``at_k``: the lever's base bound once (``lever_bound``), which every evaluation runs
    with the lever's acceptance model. ``passes`` are the pass times the closed-form hints
    use (the pinned base scenario's).
    ``cycle_times``: the Monte Carlo's own cycle-time model, when ``evaluator`` runs the
    scenario's Monte Carlo; if the per-request law is then exact (one shared profile, fixed
    cycles), roots are found on it and the Monte Carlo only checks them and gives the
    interval (sim/studies/exact_search.py); otherwise bisection on the Monte Carlo.
    """
    num_steps = lever.num_steps
    cost = chain_cycle_cost(passes, num_steps)

    def evaluate(x: float) -> Stats:
        return evaluator(at_k, f"k={num_steps};x={x!r}", lever.model_at(x))

    exact = None
    if cycle_times is not None and exact_obstacle(lever.model, cycle_times) is None:
        exact = ExactLever(
            lever.model_at,
            float(phase_means(cycle_times).sum()),
            lever.base.workload.output_tokens,
            lever.x_max,
            at_k.extend_growth,
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


def _own_cycle_times(run: SimulateFn, at_k: Bound) -> CycleTimeModel | None:
    """The cycle-time model of ``run``'s Monte Carlo when it is the bound model's own."""
    return run.cycle_times(at_k) if isinstance(run, MonteCarloStats) else None


def lever_bound(lever: AcceptanceLever, bound: Bound) -> Bound:
    """The lever's base (the pinned scenario at the lever's k, a chain) bound once, with
    the hardware answers of ``bound``, the pinned scenario's model (its ``PassMemo``,
    sim/hardware/passes.py): every evaluation at this k runs on it."""
    return bind(lever.base, bound.hardware.memo)


def run_k_task(task: KTask) -> tuple[int, list[KResult], int, int]:
    """(k, results per criterion, Monte Carlo evaluations, lever values refused without a
    run) for one draft length."""
    bound = bind(scenario_from_dict(task.base, source="search"))
    targets = [c.target_tok_s for c in task.criteria]
    evaluator = Evaluator(task.simulate, targets)
    lever = acceptance_lever(bound.scenario, task.num_steps)
    at_k = lever_bound(lever, bound)
    times = _own_cycle_times(task.simulate, at_k)
    rows = _search_k(lever, at_k, bound.passes, task.criteria, evaluator, times)
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
    memo: PassMemo | None = None,
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
    ``memo``: the hardware answers (sim/hardware/passes.py ``PassMemo``) of what bound the
    scenario already (the command's check); the search binds with them (None: its own).
    """
    targets = checked_targets(targets, quantile)
    ks = sorted(set(num_steps))
    if not ks or ks[0] < 1:
        raise SpecsimError("draft lengths must be >= 1", param="num_steps")
    base = pin_verify_tokens(scenario)
    bound = bind(base, memo)  # the pinned scenario, bound once: passes, curves, provenance
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
            at_k = lever_bound(levers[k], bound)
            times = _own_cycle_times(run, at_k)
            by_k[k] = _search_k(levers[k], at_k, passes, criteria, evaluator, times)
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
        "baseline_tok_s": bound.baseline_tok_s,
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
