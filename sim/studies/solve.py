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
    base, v0, integer = _lever_field(scenario, dotted)
    lo, hi = lever_domain(base, dotted, v0, integer)
    if lo == hi:
        raise SpecsimError("has a single valid value here", param="field", field=dotted)
    evaluator = Evaluator(simulate or MonteCarloStats(engine, fidelity), targets)
    memo = PassMemo() if memo is None else memo  # every lever value's binding meets them
    lever = _Lever(base, dotted, integer, lo, hi, memo, evaluator)
    sign, uses_closed_form = _direction(lever, v0)
    probe = Probe(lever.evaluate, sign, lo, hi, integer)
    rows, warnings = [], []
    for t in targets:
        row, broken = _lever_target(lever, probe, t, quantile, v0, sign, uses_closed_form)
        rows.append(row)
        warnings.extend(broken)
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
        _settings(base, memo, quantile, current_tok_s),
        _seen_points(probe),
    )


def _lever_field(scenario: Scenario, dotted: str) -> tuple[Scenario, int | float, bool]:
    """The scenario with its verify tokens pinned (``pin_verify_tokens``), the field's
    value there and whether it is an integer. SpecsimError for a field that is no lever
    (``speculation.num_draft_tokens``, ``simulation.seed``; ``speculation.num_steps``:
    ``NUM_STEPS_NOT_MONOTONE``), not a field, or not numeric."""
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
    return base, v0, isinstance(v0, int)


@dataclass(frozen=True, slots=True)
class _Lever:
    """A lever being solved: the scenario (``base``), the field (``dotted``, an integer
    one when ``integer``), its valid range [``lo``, ``hi``], the hardware answers every
    lever value's binding shares (``memo``) and the Monte Carlo ``evaluator``."""

    base: Scenario
    dotted: str
    integer: bool
    lo: float
    hi: float
    memo: PassMemo
    evaluator: Evaluator

    def at(self, x: float) -> Scenario:
        """The scenario at lever value ``x`` (an int for an integer field)."""
        value = int(x) if self.integer else float(x)
        return with_overrides(self.base, {self.dotted: value}, source="search")

    def bound_at(self, x: float) -> Bound:
        """The scenario at lever value ``x``, bound once with the solve's hardware answers."""
        return bind(self.at(x), self.memo)

    def evaluate(self, x: float) -> Stats:
        """The Monte Carlo statistics at lever value ``x``."""
        return self.evaluator(self.bound_at(x), f"{self.dotted}={x!r}")


def _direction(lever: _Lever, v0: float) -> tuple[int, bool]:
    """(+1 where raising the field helps, else -1; whether the closed form moves with the
    field). From the closed form at ``v0`` and a neighbour (v0 +- 1 for an integer field,
    else v0 x 1.1 or / 1.1, inside the valid range; else the far end), when the two differ
    beyond a relative 1e-12; else from two Monte Carlo runs, at ``v0`` and at twice it (the
    range's end when that is v0). SpecsimError when the two runs' mean tok/s are equal."""
    lo, hi, integer = lever.lo, lever.hi, lever.integer
    near = [v for v in ((v0 + 1, v0 - 1) if integer else (v0 * 1.1, v0 / 1.1)) if lo <= v <= hi]
    near = near or [lo if v0 != lo else hi]
    cf0, cf1 = lever.bound_at(v0).closed_form_tok_s, lever.bound_at(near[0]).closed_form_tok_s
    if not math.isclose(cf0, cf1, rel_tol=1e-12):
        return (1 if (cf1 > cf0) == (near[0] > v0) else -1), True
    far = min(hi, v0 * 2) if v0 > 0 else hi
    if far == v0:
        far = lo
    m0 = lever.evaluate(v0).tok_s_mean
    m1 = lever.evaluate(far).tok_s_mean
    if m0 == m1:
        raise SpecsimError(
            f"changing it from {v0:g} to {far:g} does not change the simulated tok/s",
            param="field",
            field=lever.dotted,
        )
    return (1 if (m1 > m0) == (far > v0) else -1), False


def _lever_target(
    lever: _Lever,
    probe: Probe,
    t: float,
    quantile: float | None,
    v0: float,
    sign: int,
    uses_closed_form: bool,
) -> tuple[LeverTarget, list[str]]:
    """Target ``t``'s answer and the warnings of seen points that break monotonicity.

    The closed form's value (where it moves with the field: the first passing value from
    ``v0`` in steps of 5% of |v0|, to 1e-6 |v0|) is the hint; Monte Carlo bisection on
    common random numbers (``solve_root``) from it in steps of 2% of the hint, to
    ``LEVER_RTOL`` of it, gives the value and its 95% interval. Unreachable: the
    simulated mean (and the target's share of requests, for a quantile) at the range's
    best end, and what that end is (``end_label``)."""
    dotted, lo, hi, integer = lever.dotted, lever.lo, lever.hi, lever.integer
    scale = max(abs(v0), 1e-9)
    crit = Criterion(t, quantile)
    x_cf = None
    if uses_closed_form:
        cf_probe = Probe(
            lambda x: closed_form_stats(lever.bound_at(x), None, ()), sign, lo, hi, integer
        )
        x_cf = first_passing(
            cf_probe, lambda sm: sm.tok_s_mean, t, hint=v0, step=0.05 * scale, xtol=1e-6 * scale
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
        where = end_label(lever.base, dotted, best_end, lo, integer)
        reason = (
            f"even at {dotted} = {best_end:g} ({where}) the simulated mean is {m:.1f} tok/s"
            + (
                ""
                if quantile is None
                else f" and the target's share of requests is "
                f"{crit.stat(probe.at(best_end))[0]:.2f} < {quantile}"
            )
        )
    row = LeverTarget(t, quantile, root.value is not None, root.value, root.ci95, x_cf, reason)
    warnings = [
        f"not monotone: the estimate falls between {dotted} = {x0:g} and {x1:g}"
        for x0, x1 in monotone_violations(probe, crit)
    ]
    return row, warnings


def _settings(
    base: Scenario, memo: PassMemo, quantile: float | None, current_tok_s: float
) -> dict[str, Any]:
    """The result's settings: the hardware, the overrides, the assumptions of the bound
    scenario, the Monte Carlo settings, the quantile and the tok/s at the current value."""
    return {
        "hardware": effective_hardware(base),
        "overrides": override_entries(base),
        "assumptions": [a.to_dict() for a in assumptions(bind(base, memo))],
        "seed": base.simulation.seed,
        "replications": base.simulation.replications,
        "requests": base.workload.requests,
        "quantile": quantile,
        "current_tok_s": current_tok_s,
    }


def _seen_points(probe: Probe) -> tuple[dict[str, float], ...]:
    """Every lever value the Monte Carlo ran, in order: its mean tok/s and 95% interval."""
    return tuple(
        {
            "value": float(x),
            "tok_s_mean": float(sm.tok_s_mean),
            "tok_s_ci95_lo": float(sm.tok_s_ci95[0]),
            "tok_s_ci95_hi": float(sm.tok_s_ci95[1]),
        }
        for x, sm in sorted(probe.seen.items())
    )
