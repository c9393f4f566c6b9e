"""Solve for any monotone numeric lever: the value of one scenario field that reaches each
tok/s target with everything else fixed ("how fast must verify be at alpha 0.7?").

The field's valid range comes from the scenario's own validation, the direction (does
raising it help?) from the closed form, or from two Monte Carlo runs when the closed form
ignores the field; the closed form also gives the starting bracket, and Monte Carlo
bisection on common random numbers the answer with its 95% interval (sim/studies/bisection.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sim.binding.bound import Bound, bind
from sim.binding.provenance import assumptions, effective_hardware, override_entries
from sim.errors import SpecsimError
from sim.hardware.passes import PassMemo
from sim.scenario.overrides import field_value, pin_verify_tokens, with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.summary import Stats
from sim.studies.bisection import (
    LEVER_RTOL,
    Criterion,
    Evaluator,
    MonteCarloStats,
    Probe,
    SimulateFn,
    checked_targets,
    closed_form_stats,
    first_passing,
    monotone_violations,
    solve_root,
)
from sim.uncertainty.lever_intervals import LeverUncertainty, lever_uncertainty

# --------------------------------------------------------------------------- any lever

#: tok/s rises with the draft length to a best k and falls past it (and k = 0 is plain
#: decoding), so bisection on k finds no answer or a wrong one: ``search`` scans k instead.
NUM_STEPS_NOT_MONOTONE = (
    "not a monotone lever (tok/s rises with k to a best k and falls past it): "
    "specsim search --num-steps scans k, and reports the best k for each target"
)


def _valid(scenario: Scenario, dotted: str, value: float) -> bool:
    try:
        bind(with_overrides(scenario, {dotted: value}))
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


def end_label(scenario: Scenario, dotted: str, end: float, lo: float, integer: bool) -> str:
    """What the end ``end`` of a lever's domain is: the field's own bound, or where the
    search stopped (``lever_domain`` looks no further than 2**6 or 2**40 times the value)."""
    step = 1 if integer else max(abs(end), 1.0) * 1e-9
    beyond = end - step if end == lo else end + step
    if _valid(scenario, dotted, beyond):
        return "the end of the range searched; the field allows more"
    return "the end of its valid range"


@dataclass(frozen=True, slots=True)
class LeverTarget:
    tok_s: float
    quantile: float | None
    reachable: bool
    value: float | None
    value_ci95: tuple[float | None, float | None]
    closed_form_value: float | None
    reason: str | None
    #: The closed-form value's 90% interval from the other inputs and the model.
    uncertainty: LeverUncertainty | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tok_s": self.tok_s,
            "quantile": self.quantile,
            "reachable": self.reachable,
            "value": self.value,
            "value_ci95": list(self.value_ci95),
            "closed_form_value": self.closed_form_value,
            "reason": self.reason,
            "uncertainty": self.uncertainty.to_dict() if self.uncertainty else None,
        }


@dataclass(frozen=True, slots=True)
class LeverResult:
    scenario: str
    field: str
    current: float
    direction: str  # "at least" (raising helps) or "at most" (lowering helps)
    domain: tuple[float, float]
    evaluations: int
    engine: str
    fidelity: str
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
            "fidelity": self.fidelity,
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
    fidelity: str = "cycle",
    simulate: SimulateFn | None = None,
    memo: PassMemo | None = None,
) -> LeverResult:
    """The value of numeric field ``dotted`` that reaches each target, all else fixed.

    The direction (does raising the field help?) comes from the closed form when the field
    moves it, else from two Monte Carlo runs (the current value and twice it). The closed
    form also gives the starting bracket; Monte Carlo bisection on common random numbers
    refines it, and the 95% interval inverts the confidence band as for alpha. Seen points
    that break monotonicity are reported in ``warnings``. ``memo``: the hardware answers
    (sim/hardware/passes.py ``PassMemo``) every lever value's binding shares (None: the
    solve's own).
    """
    targets = checked_targets(targets, quantile)
    if dotted in ("speculation.num_draft_tokens", "simulation.seed"):
        raise SpecsimError("not a lever", param="field", field=dotted)
    if dotted == "speculation.num_steps":
        raise SpecsimError(NUM_STEPS_NOT_MONOTONE, param="field", field=dotted)
    base = pin_verify_tokens(scenario)
    try:
        v0 = field_value(base, dotted)
    except SpecsimError as exc:
        raise SpecsimError(exc.message, param="field", field=dotted) from None
    if isinstance(v0, bool) or not isinstance(v0, int | float):
        raise SpecsimError(f"is not a numeric field (value {v0!r})", param="field", field=dotted)
    integer = isinstance(v0, int)
    lo, hi = lever_domain(base, dotted, v0, integer)
    if lo == hi:
        raise SpecsimError("has a single valid value here", param="field", field=dotted)
    evaluator = Evaluator(simulate or MonteCarloStats(engine, fidelity), targets)
    memo = PassMemo() if memo is None else memo  # every lever value's binding meets them

    def at(x: float) -> Scenario:
        return with_overrides(base, {dotted: int(x) if integer else float(x)}, source="search")

    def bound_at(x: float) -> Bound:
        """The scenario at lever value ``x``, bound once with the solve's hardware answers."""
        return bind(at(x), memo)

    def evaluate(x: float) -> Stats:
        return evaluator(bound_at(x), f"{dotted}={x!r}")

    # direction: closed form first, Monte Carlo when the closed form ignores the field
    near = [v for v in ((v0 + 1, v0 - 1) if integer else (v0 * 1.1, v0 / 1.1)) if lo <= v <= hi]
    near = near or [lo if v0 != lo else hi]
    cf0, cf1 = bound_at(v0).closed_form_tok_s, bound_at(near[0]).closed_form_tok_s
    uses_closed_form = not math.isclose(cf0, cf1, rel_tol=1e-12)
    if uses_closed_form:
        sign = 1 if (cf1 > cf0) == (near[0] > v0) else -1
    else:
        far = min(hi, v0 * 2) if v0 > 0 else hi
        if far == v0:
            far = lo
        m0 = evaluate(v0).tok_s_mean
        m1 = evaluate(far).tok_s_mean
        if m0 == m1:
            raise SpecsimError(
                f"changing it from {v0:g} to {far:g} does not change the simulated tok/s",
                param="field",
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
            cf_probe = Probe(
                lambda x: closed_form_stats(bound_at(x), None, ()), sign, lo, hi, integer
            )
            x_cf = first_passing(
                cf_probe,
                lambda sm: sm.tok_s_mean,
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
            m = probe.at(best_end).tok_s_mean
            where = end_label(base, dotted, best_end, lo, integer)
            reason = (
                f"even at {dotted} = {best_end:g} ({where}) the simulated mean is {m:.1f} tok/s"
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
    current_tok_s = float(probe.at(v0).tok_s_mean)  # context for the report
    if quantile is None:
        levers = lever_uncertainty(
            base,
            dotted,
            targets,
            sign=sign,
            domain=(float(lo), float(hi)),
            hints=[r.closed_form_value for r in rows],
        )
        rows = [replace(r, uncertainty=u) for r, u in zip(rows, levers, strict=True)]
    settings = {
        "hardware": effective_hardware(base),
        "overrides": override_entries(base),
        "assumptions": [a.to_dict() for a in assumptions(bind(base, memo))],
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
        fidelity,
        tuple(rows),
        tuple(dict.fromkeys(warnings)),
        settings,
        tuple(
            {
                "value": float(x),
                "tok_s_mean": float(sm.tok_s_mean),
                "tok_s_ci95_lo": float(sm.tok_s_ci95[0]),
                "tok_s_ci95_hi": float(sm.tok_s_ci95[1]),
            }
            for x, sm in sorted(probe.seen.items())
        ),
    )
