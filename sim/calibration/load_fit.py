"""Fit the batched cost terms to a load sweep: host work per request and kernel growth.

The batch-1 cycle stays as the scenario has it (calibrated from batch-1 figures); what
a load sweep adds is how the iteration grows with the batch. Two terms carry that growth
beyond the roofline's bytes and FLOPs (sim/model/batched_cost.py):

- ``serving.host_us_per_request``: host work per running request per iteration, paid in
  series where the engine does not overlap it (sim/model/host_work.py; plausible range
  ``US_PER_REQUEST_RANGE``);
- ``serving.kernel_slope``: compute ms per ms of extra work at the GPU's peak, i.e.
  1 / the kernels' achieved fraction of peak on the growth (sim/hardware/batched.py;
  plausible range ``SLOPE_RANGE``);
- ``serving.expert_skew`` (MoE targets only): the Zipf exponent of expert popularity in a
  step, which sets how fast the batch's expert union grows (sim/hardware/experts.py;
  plausible range ``SKEW_RANGE``: uniform routing to the one public serving trace).

Model of a figure: the decode time per output token of a request at load B (requests
decoding together) and mean context c is the iteration time over the tokens it emits per
request, ``TPOT(B) = T_iter(B, draft, B c) / AL`` (AL = 1 without speculation; a
fractional mean load in flight interpolates linearly between the neighbouring batches).
A run whose file lists each request's lengths (vLLM ``--save-detailed``, SGLang
``--output-details``) in a closed loop is priced as that job instead: its requests in
order, sent by its workers, each iteration at the batch and context sums it really had,
the same iteration cost (sim/calibration/run_job.py); automatic, the report says which.
Prefill interruptions are not in this deterministic model, so the fit uses the decode-only
TPOT each format reports (vLLM/SGLang ``mean_tpot_ms``, guidellm
``inter_token_latency_ms``, the step time / accept length of SGLang's offline benches),
never the throughput or TTFT.

Residuals are (predicted - measured) / sigma with sigma from the run's own spread (std
/ sqrt(completed)) and a relative floor ``REL_FLOOR`` (assumed: the run-to-run spread of
public repeated serving benchmarks, a few percent). ``fit_identifiable``
(sim/calibration/lsq.py) keeps a term free only if it raises the rank of the scaled
Jacobian; the singular values' ratio (condition number) is reported. A fitted term carries
a 90% range (value +- 1.645 standard errors, within its bounds); a term the sweep cannot
identify keeps the scenario's value and carries its plausible range. Both ranges are what
an interval over serving answers draws from (``LoadFit.ranges``).

The host work is not a smooth term: an engine that overlaps it with the GPU hides
h (b - 1) (+ the host's share of the batch-1 iteration) until it passes the iteration's
GPU time (sim/model/host_work.py), so at a small h no figure depends on it and a
gradient fit started there never moves (the fit used to start at the default 20 us and
report a host-bound server's ~700 us as not identified). The fit therefore starts h at
the scenario's value and, when a scan over its bounds (``HOST_SCAN_US``, the other terms
at that fit's values) finds a better value, again from there; the second fit replaces the
first only if it identifies h (a fit that ends on the kink where h starts to show has no
standard error) and lowers the chi-square by more than ``CHI2_90`` (x the reduced
chi-square when that exceeds 1), so a sweep that hides h fits as before.
Where h stays hidden the sweep still bounds it: the values of the scan whose chi-square
(the other terms at their fitted values) is within the 90% threshold of the best
(``CHI2_90`` = 2.706, one parameter; scaled by the reduced chi-square when that exceeds
1), refined by bisection, are the range it leaves (``LoadFit.host_profile_us``); the
range carried is that range cut to the plausible one, or that range alone when the two
do not meet.

The speculative host factor ``serving.host_spec_factor`` (f: a request's host work in an
iteration that drafts and verifies over a plain iteration's, sim/model/host_work.py;
plausible range ``SPEC_FACTOR_RANGE``) is fitted with the others only when the sweep has
plain and speculative runs each at two or more loads (sim/calibration/load_profiles.py
``spec_factor_runs``): the plain runs' growth gives h, the speculative runs' growth f h.
Without both (no plain runs, one load) the speculative growth cannot tell f from h, so f
keeps the scenario's value and h absorbs the product, as before. The rank test also keeps
f at its value when h is hidden (an overlapped plain iteration: only f h shows, f's column
is h's). A factor not fitted carries the range the sweep allows: the values of the scan
``SPEC_SCAN`` whose chi-square, with h re-fitted at each (a scan over ``HOST_SCAN_US``
refined by a bounded Brent search; the other terms at their fitted values), is within the
90% threshold of the least found, refined by bisection (``LoadFit.spec_factor_profile``);
its ``ranges`` entry is that cut to the plausible one (that alone when they do not meet),
widened to hold the kept value. When the first fit keeps f, it is fitted again from the
scan's best factor (h re-fitted there; the other terms at the fit's values, then at their
starting ones) and that fit replaces the first as for the host work's basin. Only a fitted
factor is written into the scenario (with its standard error and the runs it was fitted
on): a factor left at its value gets no ``[uncertainty]`` range, since where the host work
was fitted on speculative runs it holds f h, and a draw of f alone would count it twice.

Its parts: the terms' fields, bounds and scans (sim/calibration/load_terms.py), the runs
priced by the model (sim/calibration/tpot_model.py), the scans and profile ranges
(sim/calibration/load_profiles.py), the result (sim/calibration/load_fit_result.py).
``fit_load_sweep`` in stages: the runs, their sigma and the terms' starting values
(``_sweep``), the fit and its other basins (``_best_fit``, each fit ``_fit_from``), every
term's value and range (``_terms``), the Jacobian's condition (``_condition``), the
scenario written (``_fitted_scenario``), the rows of measured against predicted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.binding.bound import Bound, bind
from sim.calibration.load_fit_result import LoadFit, LoadRow
from sim.calibration.load_profiles import (
    better_basin,
    cut_range,
    host_profile_range,
    host_start,
    least_over_host,
    spec_factor_runs,
    spec_profile_range,
)
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import (
    BOUNDS,
    CHI2_90,
    FIT_PLAUSIBLE,
    HOST_FIELD,
    SCALES,
    SKEW_FIELD,
    SLOPE_FIELD,
    SPEC_FIELD,
    SPEC_SCAN,
    Z90,
)
from sim.calibration.lsq import Fit, Param, fit_identifiable
from sim.calibration.tpot_model import TpotModel, is_speculative, predicted_tpot_ms, tpot_sigma_ms
from sim.errors import SpecsimError
from sim.hardware.compute_curve import DEFAULT_SLOPE
from sim.hardware.experts import SERVING_STEP_SKEW
from sim.hardware.pass_terms import PassTerms
from sim.model.host_work import DEFAULT_US_PER_REQUEST
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario

__all__ = ["fit_load_sweep"]


def _uncertainty(
    values: dict[str, float],
    stderr: dict[str, float],
    ranges: dict[str, tuple[float, float]],
    kept: dict[str, str],
    runs: dict[str, str] | None = None,
) -> dict[str, dict[str, object]]:
    """``[uncertainty.serving]`` entries: a fitted term's standard error (origin
    ``calibrated``; ``runs``: term -> the runs it was fitted on, when said), a kept term's
    plausible range (origin ``assumed``, with why)."""
    out: dict[str, dict[str, object]] = {}
    runs = runs or {}
    for name in values:
        key = "uncertainty." + name  # serving.<field> -> uncertainty.serving.<field>
        if name in stderr:
            on = f" on {runs[name]}" if name in runs else ""
            out[key] = {
                "stderr": float(stderr[name]),
                "origin": "calibrated",
                "reason": f"fitted to a load sweep{on} (specsim calibrate --load-sweep)",
            }
        else:
            lo, hi = ranges[name]
            out[key] = {
                "range": [float(lo), float(hi)],
                "origin": "assumed",
                "reason": f"not identified by the load sweep ({kept.get(name, 'not fitted')}): "
                "its plausible range",
            }
    return out


def fit_load_sweep(
    scenario: Scenario, points: Sequence[LoadPoint], *, source: str = "load sweep"
) -> LoadFit:
    """Fit ``HOST_FIELD``, ``SLOPE_FIELD``, ``SKEW_FIELD`` and, when the sweep has plain
    and speculative runs each at two or more loads, ``SPEC_FIELD`` to the runs' TPOT (see
    the module docstring).

    SpecsimError when no run has a TPOT, or a speculative run meets a scenario without a
    drafter."""
    sweep = _sweep(scenario, points, source)
    fit, spec_memo = _best_fit(sweep)
    terms = _terms(sweep, fit, spec_memo)
    condition = _condition(sweep, terms.values, terms.identified)
    fitted = _fitted_scenario(sweep, fit, terms)
    predicted = predicted_tpot_ms(fitted, sweep.usable, sweep.hardware)
    rows = tuple(
        LoadRow(p, float(m), float(q), float(s))
        for p, m, q, s in zip(sweep.usable, sweep.measured, predicted, sweep.sigma, strict=True)
    )
    notes = list(fit.notes)
    loads = sorted({p.load for p in sweep.usable})
    if len(loads) < 2:
        notes.append("one load only: the growth with the batch is not measured")
    return LoadFit(
        values=dict(terms.values),
        identified=terms.identified,
        stderr=dict(fit.stderr),
        kept=dict(terms.kept),
        ranges=terms.ranges,
        condition=condition,
        rows=rows,
        max_load=max(loads),
        scenario=fitted,
        notes=tuple(notes),
        host_profile_us=terms.host_profile,
        spec_factor_profile=terms.spec_profile,
        spec_factor_runs=sweep.spec_runs if SPEC_FIELD in terms.identified else "",
    )


@dataclass(frozen=True, slots=True)
class _Sweep:
    """What every step of a load fit reads (``_sweep``): the runs with a TPOT (``usable``),
    their measured TPOT and its sigma (ms, ``tpot_sigma_ms``), the terms' starting values
    (``base``: the scenario's, or the named defaults), the terms fitted (``names``), the
    runs a speculative factor is fitted on (``spec_runs``, empty when not, with
    ``spec_why``), the scenario bound once (``bound``) and the passes' shared table
    (``hardware``) its iteration cost is priced with (``model``), the ``scenario`` as
    given and the ``source`` named in errors."""

    scenario: Scenario
    usable: list[LoadPoint]
    measured: np.ndarray
    sigma: np.ndarray
    base: dict[str, float]
    names: tuple[str, ...]
    spec_runs: str
    spec_why: str
    hardware: PassTerms
    bound: Bound
    model: TpotModel
    source: str

    def residuals(self, values: dict[str, float]) -> np.ndarray:
        """(predicted - measured) / sigma of every run, at ``values`` clamped to their
        bounds (a finite difference at a bound steps past it)."""
        return (self.model.tpot_ms(_clamped(values), self.source) - self.measured) / self.sigma

    def chi2(self, values: dict[str, float]) -> float:
        """The sum of the squared residuals at ``values``."""
        r = self.residuals(values)
        return float(r @ r)


def _clamped(values: dict[str, float]) -> dict[str, float]:
    """Each term's value clipped to its ``BOUNDS``."""
    return {n: float(np.clip(v, *BOUNDS[n])) for n, v in values.items()}


def _sweep(scenario: Scenario, points: Sequence[LoadPoint], source: str) -> _Sweep:
    """The runs with a TPOT, their sigma, the terms' starting values and the scenario bound
    once (``_Sweep``). SpecsimError when no run has a TPOT, or a speculative run meets a
    scenario without a drafter."""
    usable = [p for p in points if p.tpot_ms is not None]
    if not usable:
        raise SpecsimError("no run of the sweep reports a decode time per token", source=source)
    if scenario.model.draft_params is None and any(is_speculative(scenario, p) for p in usable):
        raise SpecsimError(
            "the sweep has speculative runs but the scenario has no drafter",
            source=source,
            field="model.draft_params",
        )
    measured = np.array([p.tpot_ms for p in usable], dtype=float)
    sigma = np.array([tpot_sigma_ms(p) for p in usable])
    serving = scenario.serving
    base_host = serving.host_us_per_request if serving is not None else DEFAULT_US_PER_REQUEST
    given_slope = serving.kernel_slope if serving is not None else None
    given_skew = serving.expert_skew if serving is not None else None
    base = {
        HOST_FIELD: base_host,
        SLOPE_FIELD: DEFAULT_SLOPE if given_slope is None else given_slope,
        SKEW_FIELD: SERVING_STEP_SKEW if given_skew is None else given_skew,
        SPEC_FIELD: serving.host_spec_factor if serving is not None else 1.0,
    }
    spec_runs, spec_why = spec_factor_runs(scenario, usable)
    names = (HOST_FIELD, SLOPE_FIELD, SKEW_FIELD, *((SPEC_FIELD,) if spec_runs else ()))
    # every step moves serving terms only: the same batch-1 passes and the same token-count
    # terms of every pass whose physics a step does not move, one table of their answers
    hardware = PassTerms()
    # and none of them is read by a binding step: the scenario is bound once, set up as a
    # serving plan once, and each step prices its iteration cost again
    bound = bind(scenario, hardware.passes)
    model = TpotModel(bound, usable, hardware)
    return _Sweep(
        scenario,
        usable,
        measured,
        sigma,
        base,
        names,
        spec_runs,
        spec_why,
        hardware,
        bound,
        model,
        source,
    )


def _fit_from(sweep: _Sweep, host: float, spec: float | None = None) -> Fit:
    """The fit with the host work started at ``host`` (and the speculative factor at
    ``spec``, the scenario's when None): drop the weakest term the sweep cannot pin down,
    refit with the rest. A term is pinned when its 90% range (2 ``Z90`` standard errors)
    is narrower than its plausible range, or than its own value when that lies far beyond
    the range (a host-bound server); the weakest is the widest against that span."""
    base, names = sweep.base, sweep.names
    start = {**base, HOST_FIELD: host, SPEC_FIELD: base[SPEC_FIELD] if spec is None else spec}
    params = [Param(n, start[n], *BOUNDS[n], SCALES[n]) for n in names]
    probe = [max(start[n], 0.5 * sum(FIT_PLAUSIBLE[n])) for n in names]
    excluded: dict[str, str] = {}
    while True:
        fit = fit_identifiable(
            sweep.residuals, params, names, "load sweep", probe=probe, excluded=excluded
        )
        width = {n: 2 * Z90 * fit.stderr[n] for n in fit.stderr}
        span = {
            n: max(FIT_PLAUSIBLE[n][1] - FIT_PLAUSIBLE[n][0], abs(fit.values[n])) for n in width
        }
        weak = [n for n in width if width[n] > span[n]]
        if not weak:
            return fit
        worst = max(weak, key=lambda n: width[n] / span[n])
        excluded[worst] = (
            f"the sweep leaves it {fit.values[worst]:.3g} ± {fit.stderr[worst]:.2g}, a "
            f"90% range wider than its plausible range {FIT_PLAUSIBLE[worst][0]:g}-"
            f"{FIT_PLAUSIBLE[worst][1]:g} and than its value"
        )


def _best_fit(sweep: _Sweep) -> tuple[Fit, dict[float, tuple[float, float]]]:
    """The fit from the scenario's host work, replaced by one from another basin where it
    fits better (``better_basin``): the host work's best value of a scan (``host_start``),
    and, where a speculative factor is fitted but the first fit kept it, the factor of
    least chi-square over ``SPEC_SCAN`` with h re-fitted (``least_over_host``), the other
    terms at the fit's values, then at their starting ones. Also the scan's chi-square and
    h per factor at the fit's values (empty where another basin's fit replaced it), which
    the factor's profile range reuses."""
    base = sweep.base
    fit = _fit_from(sweep, base[HOST_FIELD])
    scanned = host_start(sweep.chi2, {**base, **fit.values})
    if scanned != fit.values[HOST_FIELD]:  # another basin of the host work may fit better
        other = _fit_from(sweep, scanned)
        if better_basin(other, fit):
            fit = other
    spec_memo: dict[float, tuple[float, float]] = {}
    if sweep.spec_runs and SPEC_FIELD not in fit.stderr:
        # the factor was not freed where the fit started (the host work hidden in the
        # plain runs there): start again from the factor of least chi-square, h re-fitted,
        # the other terms at the fit's values and (another basin: the fit may have bent
        # them to the factor it kept) at their starting ones
        for at, memo in (({**base, **fit.values}, spec_memo), (base, {})):
            for f in SPEC_SCAN:
                memo[f] = least_over_host(sweep.chi2, {**at, SPEC_FIELD: f})
            best = min(SPEC_SCAN, key=lambda f: memo[f][0])
            if best == fit.values[SPEC_FIELD]:
                continue
            other = _fit_from(sweep, memo[best][1], best)
            if better_basin(other, fit, SPEC_FIELD):
                fit = other
                spec_memo = {}
                break
    return fit, spec_memo


@dataclass(frozen=True, slots=True)
class _Terms:
    """Every term's value and range after the fit (``_terms``): the terms ``identified``
    (fitted with a standard error), ``values`` (a kept term at the scenario's value),
    why each kept term is kept (``kept``), the 90% ``ranges`` an interval draws from, and
    the ranges the sweep leaves a kept host work (us) and speculative factor
    (``host_profile``, ``spec_profile``; None where fitted)."""

    identified: tuple[str, ...]
    values: dict[str, float]
    kept: dict[str, str]
    ranges: dict[str, tuple[float, float]]
    host_profile: tuple[float, float] | None
    spec_profile: tuple[float, float] | None


def _terms(sweep: _Sweep, fit: Fit, spec_memo: dict[float, tuple[float, float]]) -> _Terms:
    """The terms' values and ranges: a fitted term's 90% range is value +- ``Z90``
    standard errors within its bounds, a kept term's its plausible range; a kept
    speculative factor's is the range the sweep allows it (``spec_profile_range``, the
    host work re-fitted; all its bounds where no speculative run drafts a batch) cut to
    the plausible one and widened to hold its value, a kept host work's the range the
    sweep allows it (``host_profile_range``: chi-square within ``CHI2_90`` x the reduced
    chi-square, when that exceeds 1, of the fit's) cut to the plausible one, and the host
    work goes back to the scenario's value where that range holds it."""
    identified = tuple(n for n in sweep.names if n in fit.stderr)
    values = dict(fit.values)
    kept = dict(fit.kept)
    if not sweep.spec_runs:
        values[SPEC_FIELD] = sweep.base[SPEC_FIELD]
        kept[SPEC_FIELD] = sweep.spec_why
    ranges: dict[str, tuple[float, float]] = {}
    for n in values:
        if n in fit.stderr:
            lo, hi = BOUNDS[n]
            half = Z90 * fit.stderr[n]
            ranges[n] = (max(lo, fit.values[n] - half), min(hi, fit.values[n] + half))
        else:
            ranges[n] = FIT_PLAUSIBLE[n]
    profile: tuple[float, float] | None = None
    dof = fit.n_obs - len(identified)
    scale = max(1.0, fit.chi2 / dof) if dof > 0 else 1.0
    spec_profile: tuple[float, float] | None = None
    if SPEC_FIELD not in identified:  # before the host work's value may be put back
        drafts_batched = any(is_speculative(sweep.scenario, p) and p.load > 1 for p in sweep.usable)
        spec_profile = (  # the factor changes nothing at one request (host_work.py)
            spec_profile_range(sweep.chi2, values, scale, spec_memo)
            if drafts_batched
            else BOUNDS[SPEC_FIELD]
        )
        low, high = cut_range(spec_profile, FIT_PLAUSIBLE[SPEC_FIELD])
        # the factor is kept at its value: what is carried holds it
        ranges[SPEC_FIELD] = (min(low, values[SPEC_FIELD]), max(high, values[SPEC_FIELD]))
        kept[SPEC_FIELD] = (
            f"{kept[SPEC_FIELD]}; the sweep allows {spec_profile[0]:.3g}-{spec_profile[1]:.3g} "
            "(90%, the host work re-fitted)"
        )
    if HOST_FIELD not in identified:
        given_host = sweep.base[HOST_FIELD]
        profile = host_profile_range(sweep.chi2, values, sweep.chi2(values) + CHI2_90 * scale)
        ranges[HOST_FIELD] = cut_range(profile, FIT_PLAUSIBLE[HOST_FIELD])
        if profile[0] <= given_host <= profile[1]:
            values[HOST_FIELD] = given_host  # the sweep does not move the scenario's value
        kept[HOST_FIELD] = (
            f"{kept[HOST_FIELD]}; the sweep allows {profile[0]:.3g}-{profile[1]:.3g} us (90%)"
        )
    return _Terms(identified, values, kept, ranges, profile, spec_profile)


def _condition(sweep: _Sweep, values: dict[str, float], identified: Sequence[str]) -> float:
    """The condition number of the scaled Jacobian of the residuals over the identified
    terms at ``values`` (largest over smallest singular value; forward differences of
    1e-3 x each term's scale): inf without an identified term or with a zero singular
    value."""
    if not identified:
        return math.inf
    jac = np.column_stack(
        [
            (sweep.residuals({**values, n: values[n] + 1e-3 * SCALES[n]}) - sweep.residuals(values))
            / 1e-3
            for n in identified
        ]
    )
    s = np.linalg.svd(jac, compute_uv=False)
    return float(s.max() / s.min()) if s.min() > 0 else math.inf


def _fitted_scenario(sweep: _Sweep, fit: Fit, terms: _Terms) -> Scenario:
    """The scenario with the terms written (clamped to their bounds) and their
    ``[uncertainty.serving]`` entries (``_uncertainty``). A factor the sweep does not fit
    stays as the scenario has it, without a range to draw: with the host work fitted (it
    took f h) a draw of f alone would count it twice."""
    identified = terms.identified
    written = {n: v for n, v in terms.values.items() if n != SPEC_FIELD or n in identified}
    return with_overrides(
        sweep.bound.with_serving(_clamped(written), source=sweep.source).scenario,
        _uncertainty(
            written,
            fit.stderr,
            terms.ranges,
            terms.kept,
            {SPEC_FIELD: sweep.spec_runs} if SPEC_FIELD in identified else None,
        ),
        source=sweep.source,
    )
