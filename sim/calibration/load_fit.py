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
plain and speculative runs each at two or more loads (``_spec_factor_runs``): the plain
runs' growth gives h, the speculative runs' growth f h. Without both (no plain runs, one
load) the speculative growth cannot tell f from h, so f keeps the scenario's value and h
absorbs the product, as before. The rank test also keeps f at its value when h is hidden
(an overlapped plain iteration: only f h shows, f's column is h's). A factor not fitted
carries the range the sweep allows: the values of the scan ``SPEC_SCAN`` whose
chi-square, with h re-fitted at each (a scan over ``HOST_SCAN_US`` refined by a bounded
Brent search; the other terms at their fitted values), is within the 90% threshold of the
least found, refined by bisection (``LoadFit.spec_factor_profile``); its ``ranges`` entry
is that cut to the plausible one (that alone when they do not meet), widened to hold the
kept value. When the first fit keeps f, it is fitted again from the scan's best factor
(h re-fitted there; the other terms at the fit's values, then at their starting ones) and
that fit replaces the first as for the host work's basin. Only
a fitted factor is written into the scenario (with its standard error and the runs it was
fitted on): a factor left at its value gets no ``[uncertainty]`` range, since where the
host work was fitted on speculative runs it holds f h, and a draw of f alone would count
it twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize_scalar

from sim.binding.bind import draft_binding, scenario_rates
from sim.binding.bound import Bound, bind
from sim.binding.serving import scenario_serving_cost
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.lsq import Fit, Param, fit_identifiable
from sim.errors import SpecsimError
from sim.hardware.batched import SLOPE_RANGE
from sim.hardware.compute_curve import DEFAULT_SLOPE
from sim.hardware.experts import SERVING_STEP_SKEW, SKEW_RANGE
from sim.hardware.pass_terms import PassTerms
from sim.model.batched_cost import IterationCost
from sim.model.drafts import Draft
from sim.model.host_work import DEFAULT_US_PER_REQUEST, SGLANG_SPEC_FACTOR, US_PER_REQUEST_RANGE
from sim.model.rates import mean_accept_length
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.serving.setup import serving_setup

__all__ = [
    "HOST_FIELD",
    "REL_FLOOR",
    "SKEW_FIELD",
    "SLOPE_FIELD",
    "SPEC_FACTOR_RANGE",
    "SPEC_FIELD",
    "LoadFit",
    "LoadRow",
    "TpotModel",
    "fit_load_sweep",
    "predicted_tpot_ms",
    "tpot_sigma_ms",
]

HOST_FIELD = "serving.host_us_per_request"
SLOPE_FIELD = "serving.kernel_slope"
SKEW_FIELD = "serving.expert_skew"
SPEC_FIELD = "serving.host_spec_factor"
#: Plausible speculative host factor: 1 (a speculative iteration's bookkeeping a request as
#: a plain one's: the default) to SGLang's EAGLE worker, 20/7 (sim/model/host_work.py).
SPEC_FACTOR_RANGE: tuple[float, float] = (1.0, SGLANG_SPEC_FACTOR)
#: Relative standard error floor of a measured TPOT (assumed, see the module docstring).
REL_FLOOR = 0.03
#: 90% two-sided normal quantile, for the ranges of fitted terms.
Z90 = 1.6449
#: Bounds of the fit, and each term's plausible range when the sweep cannot identify it.
BOUNDS = {
    HOST_FIELD: (0.0, 5000.0),
    SLOPE_FIELD: (0.0, 5.0),
    SKEW_FIELD: (0.0, 4.0),
    SPEC_FIELD: (0.0, 100.0),  # the schema's
}
#: (The batched cost terms an interval draws from when a sweep leaves them; the speculative
#: factor is not one: module docstring.)
PLAUSIBLE = {HOST_FIELD: US_PER_REQUEST_RANGE, SLOPE_FIELD: SLOPE_RANGE, SKEW_FIELD: SKEW_RANGE}
_FIT_PLAUSIBLE = {**PLAUSIBLE, SPEC_FIELD: SPEC_FACTOR_RANGE}
SCALES = {HOST_FIELD: 10.0, SLOPE_FIELD: 0.3, SKEW_FIELD: 0.3, SPEC_FIELD: 0.3}
#: Values (us) of the host work's start scan and profile (0, then doubling to the bound).
HOST_SCAN_US: tuple[float, ...] = (0.0, *(5.0 * 2.0**i for i in range(10)), BOUNDS[HOST_FIELD][1])
#: Values of the speculative host factor's profile (0, then doubling from 1/4, the bound).
SPEC_SCAN: tuple[float, ...] = (0.0, *(0.25 * 2.0**i for i in range(9)), BOUNDS[SPEC_FIELD][1])
#: The source the serving setup of a fit's scenario names in its errors.
SWEEP_SOURCE = "load sweep"
#: Chi-square rise of a one-parameter 90% profile range.
CHI2_90 = 2.706
#: Bisection steps refining each end of the host work's profile range.
PROFILE_STEPS = 8


@dataclass(frozen=True, slots=True)
class LoadRow:
    """One figure: the run, its load, measured and predicted TPOT (ms), and sigma."""

    point: LoadPoint
    measured_ms: float
    predicted_ms: float
    sigma_ms: float

    @property
    def relative(self) -> float:
        return self.predicted_ms / self.measured_ms - 1.0


@dataclass(frozen=True, slots=True)
class LoadFit:
    """The fitted scenario's batched terms: ``values`` (every term), ``identified`` (the
    fitted ones, with ``stderr``), ``kept`` (term -> why the sweep cannot fix it),
    ``ranges`` (term -> (low, high): 90% for fitted terms, the plausible range for kept
    ones, the host work's cut to what the sweep allows), ``condition`` (ratio of the scaled
    Jacobian's extreme singular values over the identified terms; inf when none), ``rows``
    at the fitted values, ``max_load`` (the highest load fitted: answers beyond it
    extrapolate), ``scenario`` (with the values), ``host_profile_us`` (when the host work is
    not identified: the 90% range of it the sweep allows, module docstring; else None),
    ``spec_factor_profile`` (the same for the speculative host factor when it is not
    fitted) and ``spec_factor_runs`` (the runs it was fitted on; "" when not fitted)."""

    values: dict[str, float]
    identified: tuple[str, ...]
    stderr: dict[str, float]
    kept: dict[str, str]
    ranges: dict[str, tuple[float, float]]
    condition: float
    rows: tuple[LoadRow, ...]
    max_load: float
    scenario: Scenario
    notes: tuple[str, ...] = field(default=())
    host_profile_us: tuple[float, float] | None = None
    spec_factor_profile: tuple[float, float] | None = None
    spec_factor_runs: str = ""

    @property
    def outside_plausible(self) -> dict[str, tuple[float, float]]:
        """Fitted term -> its plausible range (``PLAUSIBLE``, the speculative host factor's
        ``SPEC_FACTOR_RANGE``), for each fitted value outside it: kept as fitted, not
        clamped; the figures hold something the model does not price."""
        out = {}
        for name in self.identified:
            lo, hi = _FIT_PLAUSIBLE[name]
            if not lo <= self.values[name] <= hi:
                out[name] = (lo, hi)
        return out

    def as_dict(self) -> dict[str, object]:
        return {
            "values": self.values,
            "identified": list(self.identified),
            "stderr": self.stderr,
            "kept": self.kept,
            "ranges": {k: list(v) for k, v in self.ranges.items()},
            "condition": self.condition if math.isfinite(self.condition) else None,
            "max_load": self.max_load,
            "rows": [
                {
                    "source": r.point.source,
                    "where": r.point.where,
                    "format": r.point.format,
                    "load": r.point.load,
                    "load_kind": r.point.load_kind,
                    "speculative": r.point.speculative,
                    "measured_tpot_ms": r.measured_ms,
                    "predicted_tpot_ms": r.predicted_ms,
                    "relative": r.relative,
                    "job": (
                        None
                        if r.point.job is None
                        else {"requests": r.point.job.requests, "workers": r.point.job.workers}
                    ),
                    "job_note": r.point.job_note,
                }
                for r in self.rows
            ],
            "notes": list(self.notes),
            "outside_plausible": {k: list(v) for k, v in self.outside_plausible.items()},
            "host_profile_us": None if self.host_profile_us is None else list(self.host_profile_us),
            "spec_factor_profile": (
                None if self.spec_factor_profile is None else list(self.spec_factor_profile)
            ),
            "spec_factor_runs": self.spec_factor_runs,
        }


def _draft(scenario: Scenario, point: LoadPoint, speculative: bool) -> Draft:
    """The draft a run verifies: its own (bench_speculative rows), else the scenario's."""
    from sim.model.tree.acceptance import TreeDraft  # lazy: trees only

    if not speculative:
        return 0
    if point.num_steps is not None:
        if point.tree:
            assert point.topk is not None and point.num_draft_tokens is not None
            return TreeDraft(point.num_steps, point.topk, point.num_draft_tokens)
        return point.num_steps
    return draft_binding(scenario).draft


def _accept_length(scenario: Scenario, point: LoadPoint, speculative: bool) -> float:
    if not speculative:
        return 1.0
    if point.accept_length is not None:
        return point.accept_length
    return mean_accept_length(scenario_rates(scenario))


def _speculative(scenario: Scenario, point: LoadPoint) -> bool:
    if point.speculative is not None:
        return point.speculative
    return scenario.num_steps > 0


@dataclass(frozen=True, slots=True)
class _Run:
    """What a run's predicted TPOT takes that no serving term moves: whether it drafts,
    its draft and accept length, and (a run without its own job) its mean context and the
    two whole batches its load lies between."""

    point: LoadPoint
    speculative: bool
    draft: Draft
    accept_length: float
    context_tokens: float
    low: int
    high: int


class TpotModel:
    """``predicted_tpot_ms`` bound once for a fit that asks at many values of the serving
    terms (the load fit's steps, a recorded refit's): ``model`` is set up once as a
    serving plan (sim/simulation/serving/setup.py ``serving_setup``: its policies, KV
    capacity and checks, which read no serving term a fit moves), each run's draft,
    accept length, context and batches are worked out once, and ``tpot_ms(values)``
    prices only the batched iteration cost again (sim/binding/serving.py
    ``scenario_serving_cost``) with ``values`` (``serving.*`` fields: ``Bound.with_serving``).
    ``terms``: as ``predicted_tpot_ms`` takes them. The numbers are those of
    ``predicted_tpot_ms`` of the scenario with ``values`` set."""

    __slots__ = ("_bound", "_cost", "_max_beams", "_runs", "_speculates", "_terms")

    def __init__(
        self,
        model: Bound | Scenario,
        points: Sequence[LoadPoint],
        terms: PassTerms | None = None,
    ) -> None:
        memo = None if terms is None else terms.passes
        bound = model if isinstance(model, Bound) else bind(model, memo)
        setup = serving_setup(bound, source=SWEEP_SOURCE, terms=terms)
        self._bound, self._terms = bound, terms
        self._cost = setup.plan.cost
        self._speculates, self._max_beams = setup.speculates, setup.max_beams
        scenario = bound.scenario
        default_context = scenario.timing.context_tokens or 0.0
        runs = []
        for p in points:
            spec = _speculative(scenario, p)
            context = p.context_tokens if p.context_tokens is not None else default_context
            runs.append(
                _Run(
                    p,
                    spec,
                    _draft(scenario, p, spec),
                    _accept_length(scenario, p, spec),
                    context,
                    max(1, math.floor(p.load)),
                    max(1, math.ceil(p.load)),
                )
            )
        self._runs = tuple(runs)

    def cost(
        self, values: Mapping[str, float] | None = None, source: str = "override"
    ) -> IterationCost:
        """The iteration cost the serving engine prices its passes with, at ``values``
        (None: the model's own), set by ``source``."""
        if not values:
            return self._cost
        bound = self._bound.with_serving(values, source=source)
        return scenario_serving_cost(
            bound,
            speculative=self._speculates,
            max_beams=self._max_beams,
            source=SWEEP_SOURCE,
            terms=self._terms,
        )

    def tpot_ms(
        self, values: Mapping[str, float] | None = None, source: str = "override"
    ) -> np.ndarray:
        """Model TPOT (ms) of each run at ``values`` (``cost``); shape (len(points),)."""
        cost = self.cost(values, source)
        out = []
        for run in self._runs:
            if run.point.job is not None:  # the run's own job (sim/calibration/run_job.py)

                def iteration_ms(
                    b: int, sums: np.ndarray, d: Draft = run.draft, s: bool = run.speculative
                ) -> np.ndarray:
                    return cost.decode_ms(b, d, sums, drafter=s)

                out.append(run.point.job.tpot_ms(iteration_ms, run.accept_length))
                continue
            low, high = run.low, run.high
            times = [
                float(
                    cost.decode_ms(
                        b, run.draft, np.array([b * run.context_tokens]), drafter=run.speculative
                    )[0]
                )
                for b in (low, high)
            ]
            ms = times[0] + (run.point.load - low) * (times[1] - times[0])
            out.append(ms / run.accept_length)
        return np.array(out)


def predicted_tpot_ms(
    model: Bound | Scenario, points: Sequence[LoadPoint], terms: PassTerms | None = None
) -> np.ndarray:
    """Model TPOT (ms) of each run (see the module docstring); shape (len(points),): a run
    with its own job (``LoadPoint.job``) replayed through the same iteration cost
    (sim/calibration/run_job.py), the others by the closed form at their mean context.
    ``model``: the bound scenario (a scenario is bound here). ``terms``: the batched
    passes' token-count terms and the batch-1 hardware answers (sim/hardware/pass_terms.py
    ``PassTerms``, its ``passes`` memo) of the fit that asks at every step (None: the
    bound scenario's own); pure functions of frozen inputs, so the numbers are the same
    with or without them. A fit asking at many serving values binds ``TpotModel`` once."""
    return TpotModel(model, points, terms).tpot_ms()


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


def tpot_sigma_ms(point: LoadPoint) -> float:
    """A run's TPOT standard error for the fit: its own (std / sqrt(completed)) joined in
    quadrature with ``REL_FLOOR`` of the TPOT."""
    assert point.tpot_ms is not None
    se = point.tpot_se_ms or 0.0
    return math.sqrt(se * se + (REL_FLOOR * point.tpot_ms) ** 2)


def _host_start(chi2: Callable[[dict[str, float]], float], base: dict[str, float]) -> float:
    """The scan's value (``HOST_SCAN_US``) of least chi-square, the other terms at
    ``base``; ``base``'s own host work unless a scanned value fits strictly better."""
    best, best_chi2 = base[HOST_FIELD], chi2(base)
    for host in HOST_SCAN_US:
        c = chi2({**base, HOST_FIELD: host})
        if c < best_chi2 * (1.0 - 1e-9):
            best, best_chi2 = host, c
    return best


def _cut(allowed: tuple[float, float], plausible: tuple[float, float]) -> tuple[float, float]:
    """The range the sweep ``allowed`` cut to the ``plausible`` one; ``allowed`` alone when
    the two do not meet."""
    low, high = max(allowed[0], plausible[0]), min(allowed[1], plausible[1])
    return (low, high) if low <= high else allowed


def _better_basin(other: Fit, fit: Fit, term: str = HOST_FIELD) -> bool:
    """True when ``other`` (the fit from the scan's value of ``term``) identifies ``term``
    (a nonzero standard error: a fit that ends on the kink where the host work starts to
    show has none) and lowers the chi-square beyond the 90% threshold of one parameter
    (scaled by ``other``'s reduced chi-square when that exceeds 1)."""
    if other.stderr.get(term, 0.0) <= 0.0:
        return False
    dof = other.n_obs - len(other.stderr)
    scale = max(1.0, other.chi2 / dof) if dof > 0 else 1.0
    return other.chi2 < fit.chi2 - CHI2_90 * scale


def _host_profile(
    chi2: Callable[[dict[str, float]], float], at: dict[str, float], threshold: float
) -> tuple[float, float]:
    """The host work's values (us) whose chi-square, the other terms at ``at``, is within
    ``threshold``: the scanned ones, each end refined by bisection towards its rejected
    neighbour (``PROFILE_STEPS``); ``at``'s own value when no scanned one is."""
    return _scan_range(
        lambda host: chi2({**at, HOST_FIELD: host}) <= threshold, HOST_SCAN_US, at[HOST_FIELD]
    )


def _scan_range(
    ok: Callable[[float], bool], scan: Sequence[float], at: float
) -> tuple[float, float]:
    """The span of ``scan``'s values that are ``ok``, each end refined by bisection towards
    its rejected neighbour (``PROFILE_STEPS``); ``(at, at)`` when none is."""
    inside = [i for i, h in enumerate(scan) if ok(h)]
    if not inside:
        return (at, at)

    def refine(good: float, bad: float) -> float:
        for _ in range(PROFILE_STEPS):
            mid = 0.5 * (good + bad)
            good, bad = (mid, bad) if ok(mid) else (good, mid)
        return good

    first, last = inside[0], inside[-1]
    lo = scan[first] if first == 0 else refine(scan[first], scan[first - 1])
    hi = scan[last] if last == len(scan) - 1 else refine(scan[last], scan[last + 1])
    return (lo, hi)


def _spec_factor_runs(scenario: Scenario, points: Sequence[LoadPoint]) -> tuple[str, str]:
    """(the runs that can fit the speculative host factor, "") when ``points`` hold plain
    and speculative runs each at two or more loads; else ("", why they cannot)."""
    loads = {
        kind: sorted({p.load for p in points if _speculative(scenario, p) is kind})
        for kind in (True, False)
    }
    missing = [
        name for name, kind in (("plain", False), ("speculative", True)) if len(loads[kind]) < 2
    ]
    if missing:
        return "", (
            f"the sweep has no {' and no '.join(missing)} runs at two or more loads: the "
            "speculative runs' growth cannot separate it from the host work"
        )

    def say(kind: bool) -> str:
        n = sum(1 for p in points if _speculative(scenario, p) is kind)
        return f"{n} {'speculative' if kind else 'plain'} runs at loads " + ", ".join(
            f"{b:g}" for b in loads[kind]
        )

    return f"{say(True)} and {say(False)}", ""


def _least_over_host(
    chi2: Callable[[dict[str, float]], float], at: dict[str, float]
) -> tuple[float, float]:
    """The least chi-square over the host work and where (us), the other terms at ``at``:
    ``at``'s own host work and the scan ``HOST_SCAN_US``, the best of these refined by a
    bounded Brent search between its scanned neighbours."""
    scan = HOST_SCAN_US
    values = [chi2({**at, HOST_FIELD: h}) for h in scan]
    i = int(np.argmin(values))
    found = minimize_scalar(
        lambda h: chi2({**at, HOST_FIELD: float(h)}),
        bounds=(scan[max(i - 1, 0)], scan[min(i + 1, len(scan) - 1)]),
        method="bounded",
        options={"xatol": 1e-3 * SCALES[HOST_FIELD]},
    )
    return min((chi2(at), at[HOST_FIELD]), (values[i], scan[i]), (float(found.fun), float(found.x)))


def _spec_profile(
    chi2: Callable[[dict[str, float]], float],
    at: dict[str, float],
    scale: float,
    memo: dict[float, tuple[float, float]],
) -> tuple[float, float]:
    """The speculative host factor's values whose chi-square, the host work re-fitted at
    each (``_least_over_host``) and the other terms at ``at``, is within ``CHI2_90`` x
    ``scale`` of the least found (module docstring); ``memo`` (factor -> least chi-square
    and its host work, at ``at``) is read and filled."""

    def profile(f: float) -> float:
        if f not in memo:
            memo[f] = _least_over_host(chi2, {**at, SPEC_FIELD: f})
        return memo[f][0]

    least = min(chi2(at), *(profile(f) for f in SPEC_SCAN))
    threshold = least + CHI2_90 * scale
    return _scan_range(lambda f: profile(f) <= threshold, SPEC_SCAN, at[SPEC_FIELD])


def fit_load_sweep(
    scenario: Scenario, points: Sequence[LoadPoint], *, source: str = "load sweep"
) -> LoadFit:
    """Fit ``HOST_FIELD``, ``SLOPE_FIELD``, ``SKEW_FIELD`` and, when the sweep has plain
    and speculative runs each at two or more loads, ``SPEC_FIELD`` to the runs' TPOT (see
    the module docstring).

    SpecsimError when no run has a TPOT, or a speculative run meets a scenario without a
    drafter."""
    usable = [p for p in points if p.tpot_ms is not None]
    if not usable:
        raise SpecsimError("no run of the sweep reports a decode time per token", source=source)
    if scenario.model.draft_params is None and any(_speculative(scenario, p) for p in usable):
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
    spec_runs, spec_why = _spec_factor_runs(scenario, usable)
    names = (HOST_FIELD, SLOPE_FIELD, SKEW_FIELD, *((SPEC_FIELD,) if spec_runs else ()))
    # every step moves serving terms only: the same batch-1 passes and the same token-count
    # terms of every pass whose physics a step does not move, one table of their answers
    hardware = PassTerms()
    # and none of them is read by a binding step: the scenario is bound once, set up as a
    # serving plan once, and each step prices its iteration cost again
    bound = bind(scenario, hardware.passes)
    model = TpotModel(bound, usable, hardware)

    def clamped(values: dict[str, float]) -> dict[str, float]:
        # a finite difference at a bound steps past it
        return {n: float(np.clip(v, *BOUNDS[n])) for n, v in values.items()}

    def residuals(values: dict[str, float]) -> np.ndarray:
        return (model.tpot_ms(clamped(values), source) - measured) / sigma

    def chi2(values: dict[str, float]) -> float:
        r = residuals(values)
        return float(r @ r)

    def fit_from(host: float, spec: float = base[SPEC_FIELD]) -> Fit:
        """The fit with the host work started at ``host`` (and the speculative factor at
        ``spec``): drop the weakest term the sweep cannot pin down, refit with the rest."""
        start = {**base, HOST_FIELD: host, SPEC_FIELD: spec}
        params = [Param(n, start[n], *BOUNDS[n], SCALES[n]) for n in names]
        probe = [max(start[n], 0.5 * sum(_FIT_PLAUSIBLE[n])) for n in names]
        excluded: dict[str, str] = {}
        while True:
            fit = fit_identifiable(
                residuals, params, names, "load sweep", probe=probe, excluded=excluded
            )
            # a term is pinned when its 90% range is narrower than its plausible range, or
            # than its own value when that lies far beyond the range (a host-bound server)
            width = {n: 2 * Z90 * fit.stderr[n] for n in fit.stderr}
            span = {
                n: max(_FIT_PLAUSIBLE[n][1] - _FIT_PLAUSIBLE[n][0], abs(fit.values[n]))
                for n in width
            }
            weak = [n for n in width if width[n] > span[n]]
            if not weak:
                return fit
            worst = max(weak, key=lambda n: width[n] / span[n])
            excluded[worst] = (
                f"the sweep leaves it {fit.values[worst]:.3g} ± {fit.stderr[worst]:.2g}, a "
                f"90% range wider than its plausible range {_FIT_PLAUSIBLE[worst][0]:g}-"
                f"{_FIT_PLAUSIBLE[worst][1]:g} and than its value"
            )

    given_host = base[HOST_FIELD]
    fit = fit_from(given_host)
    scanned = _host_start(chi2, {**base, **fit.values})
    if scanned != fit.values[HOST_FIELD]:  # another basin of the host work may fit better
        other = fit_from(scanned)
        if _better_basin(other, fit):
            fit = other
    spec_memo: dict[float, tuple[float, float]] = {}
    if spec_runs and SPEC_FIELD not in fit.stderr:
        # the factor was not freed where the fit started (the host work hidden in the
        # plain runs there): start again from the factor of least chi-square, h re-fitted,
        # the other terms at the fit's values and (another basin: the fit may have bent
        # them to the factor it kept) at their starting ones
        for at, memo in (({**base, **fit.values}, spec_memo), (base, {})):
            for f in SPEC_SCAN:
                memo[f] = _least_over_host(chi2, {**at, SPEC_FIELD: f})
            best = min(SPEC_SCAN, key=lambda f: memo[f][0])
            if best == fit.values[SPEC_FIELD]:
                continue
            other = fit_from(memo[best][1], best)
            if _better_basin(other, fit, SPEC_FIELD):
                fit = other
                spec_memo = {}
                break
    identified = tuple(n for n in names if n in fit.stderr)
    values = dict(fit.values)
    kept = dict(fit.kept)
    if not spec_runs:
        values[SPEC_FIELD] = base[SPEC_FIELD]
        kept[SPEC_FIELD] = spec_why
    ranges: dict[str, tuple[float, float]] = {}
    for n in values:
        if n in fit.stderr:
            lo, hi = BOUNDS[n]
            half = Z90 * fit.stderr[n]
            ranges[n] = (max(lo, fit.values[n] - half), min(hi, fit.values[n] + half))
        else:
            ranges[n] = _FIT_PLAUSIBLE[n]
    profile: tuple[float, float] | None = None
    dof = fit.n_obs - len(identified)
    scale = max(1.0, fit.chi2 / dof) if dof > 0 else 1.0
    spec_profile: tuple[float, float] | None = None
    if SPEC_FIELD not in identified:  # before the host work's value may be put back
        drafts_batched = any(_speculative(scenario, p) and p.load > 1 for p in usable)
        spec_profile = (  # the factor changes nothing at one request (host_work.py)
            _spec_profile(chi2, values, scale, spec_memo) if drafts_batched else BOUNDS[SPEC_FIELD]
        )
        low, high = _cut(spec_profile, _FIT_PLAUSIBLE[SPEC_FIELD])
        # the factor is kept at its value: what is carried holds it
        ranges[SPEC_FIELD] = (min(low, values[SPEC_FIELD]), max(high, values[SPEC_FIELD]))
        kept[SPEC_FIELD] = (
            f"{kept[SPEC_FIELD]}; the sweep allows {spec_profile[0]:.3g}-{spec_profile[1]:.3g} "
            "(90%, the host work re-fitted)"
        )
    if HOST_FIELD not in identified:
        profile = _host_profile(chi2, values, chi2(values) + CHI2_90 * scale)
        ranges[HOST_FIELD] = _cut(profile, _FIT_PLAUSIBLE[HOST_FIELD])
        if profile[0] <= given_host <= profile[1]:
            values[HOST_FIELD] = given_host  # the sweep does not move the scenario's value
        kept[HOST_FIELD] = (
            f"{kept[HOST_FIELD]}; the sweep allows {profile[0]:.3g}-{profile[1]:.3g} us (90%)"
        )
    condition = math.inf
    if identified:
        jac = np.column_stack(
            [
                (residuals({**values, n: values[n] + 1e-3 * SCALES[n]}) - residuals(values)) / 1e-3
                for n in identified
            ]
        )
        s = np.linalg.svd(jac, compute_uv=False)
        condition = float(s.max() / s.min()) if s.min() > 0 else math.inf
    # a factor the sweep does not fit stays as the scenario has it, without a range to draw:
    # with the host work fitted (it took f h) a draw of f alone would count it twice
    written = {n: v for n, v in values.items() if n != SPEC_FIELD or n in identified}
    fitted = with_overrides(
        bound.with_serving(clamped(written), source=source).scenario,
        _uncertainty(
            written,
            fit.stderr,
            ranges,
            kept,
            {SPEC_FIELD: spec_runs} if SPEC_FIELD in identified else None,
        ),
        source=source,
    )
    predicted = predicted_tpot_ms(fitted, usable, hardware)
    rows = tuple(
        LoadRow(p, float(m), float(q), float(s))
        for p, m, q, s in zip(usable, measured, predicted, sigma, strict=True)
    )
    notes = list(fit.notes)
    loads = sorted({p.load for p in usable})
    if len(loads) < 2:
        notes.append("one load only: the growth with the batch is not measured")
    return LoadFit(
        values=dict(values),
        identified=identified,
        stderr=dict(fit.stderr),
        kept=dict(kept),
        ranges=ranges,
        condition=condition,
        rows=rows,
        max_load=max(loads),
        scenario=fitted,
        notes=tuple(notes),
        host_profile_us=profile,
        spec_factor_profile=spec_profile,
        spec_factor_runs=spec_runs if SPEC_FIELD in identified else "",
    )
