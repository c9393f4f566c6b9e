"""Validation cases: published figures, calibrated on some and scored on the others.

Each case builder calibrates a scenario (sim/calibration/calibrate.py, the library behind ``specsim
calibrate``) on some figures of sim/validation/data.py and scores it on the *other*
figures: every ``Case`` lists what it was calibrated on and each scored ``Row`` must name
a figure outside that set (``Case.__post_init__`` checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sim.binding.acceptance_shape import implicit_tilt
from sim.binding.bound import bind
from sim.binding.closed_form import cycle_cost, pass_times, scenario_rates
from sim.binding.priors import shape_error
from sim.calibration.calibrate import calibrate
from sim.calibration.measurements import (
    AcceptLengthObs,
    CumulativeObs,
    Measurements,
    baseline_measurement,
    point_measurement,
)
from sim.calibration.result import Calibration
from sim.model.cycle import CycleCost, throughput_tok_s
from sim.model.rates import mean_accept_length
from sim.model.sampled import SampledModel
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.scenario.validate import scenario_from_dict
from sim.simulation.simulate import simulate
from sim.simulation.summary import summarize
from sim.uncertainty.answers import sampled_answers
from sim.validation import data as pub
from sim.validation import hardware_data as hw_data

#: Relative standard error given to published tok/s figures when calibrating (they are
#: single benchmark runs; 2% is the spread of the seed's own "59-61 tok/s").
TOK_S_REL_ERROR = 0.02

#: Base scenario for Llama-3.1-8B + EAGLE-3 on one H100, before calibration. Priors only:
#: calibration replaces what the figures determine and the report says which it kept.
LLAMA8B_H100_PRIOR: dict[str, object] = {
    "name": "llama31-8b-h100-eagle3",
    "description": "Llama-3.1-8B-Instruct + EAGLE-3 on one H100, batch 1 (validation base)",
    # meta-llama/Llama-3.1-8B config.json: 32 layers, hidden 4096.
    "model": {"name": "Llama-3.1-8B-Instruct", "layers": 32, "hidden_size": 4096},
    "hardware": {"gpus": 1},
    "timing": {
        # vanilla TPOT 7.07 ms (vLLM #20780); refitted from the baseline figure.
        "decode_ms": 7.07,
        # Prior: a verify over a few tokens of an 8B model is weight-bandwidth bound like a
        # decode step; refitted.
        "verify_ms": 7.07,
        "verify_tokens": 3,
        # Prior: bandwidth-bound, extra verified tokens nearly free (Leviathan et al.'s
        # assumption). tok/s figures cannot separate it from draft_step_ms: kept.
        "verify_ms_per_extra_token": 0.0,
        # Prior: one EAGLE-3 decoder layer of 32 -> 7.07 / 32 ms; draft_step_ms is refitted.
        "draft_step_ms": 0.221,
        "draft_extend_ms": 0.221,
        "cycle_overhead_ms": 0.0,
        "verify_cuda_graph": True,
    },
    "speculation": {"num_steps": 2},
    # Prior only; refitted from the accept length. An EAGLE-3 drafter (its decay prior).
    "acceptance": {"alpha": 0.7, "method": "eagle3"},
}


#: Monte Carlo behind the spreads: replications x requests of the scenario's
#: workload.output_tokens, from this root seed (sim/simulation/simulate.py spawns the streams).
MC_REPLICATIONS = 10
MC_REQUESTS = 100
MC_SEED = 20261130


@dataclass(frozen=True, slots=True)
class Spread:
    """Per-request tok/s of the calibrated scenario at the row's k, by Monte Carlo.

    ``mean`` and its 95% CI over replications; ``p5``/``p95`` over all requests.
    """

    mean: float
    ci95: tuple[float, float]
    p5: float
    p95: float
    output_tokens: int


def _spread(scenario: Scenario, k: int) -> Spread:
    at_k = with_overrides(scenario, {"speculation.num_steps": k}, source="validation")
    result = simulate(at_k, replications=MC_REPLICATIONS, requests=MC_REQUESTS, seed=MC_SEED)
    summary = summarize(result, targets=())
    return Spread(
        summary.tok_s_mean,
        summary.tok_s_ci95,
        summary.tok_s_p5,
        summary.tok_s_p95,
        at_k.workload.output_tokens,
    )


@dataclass(frozen=True, slots=True)
class Row:
    """One scored figure: what was predicted, from what, and the relative error."""

    quantity: str
    figure: str
    inputs: str
    measured: float
    predicted: float
    sd: float = 0.0  # standard error of the prediction from the calibrated values
    spread: Spread | None = None  # Monte Carlo of per-request tok/s (end-to-end rows)
    #: 90% interval from inputs and model (sim/uncertainty/answers.py), and for an accept
    #: length the flat extrapolation (one equal rate) beside it.
    interval90: tuple[float, float] | None = None
    flat: float | None = None
    #: A serving figure's load (users of a closed loop, requests/s of an open one), the
    #: loads its curve was calibrated on, and what it is: ``speculative`` or ``plain``
    #: (a level) or ``gain`` (a paired ratio of two policies on one server); None: not a
    #: load curve's figure (sim/validation/model_error_cases.py scores these).
    load: float | None = None
    calibrated_loads: tuple[float, ...] = ()
    side: str | None = None

    @property
    def error(self) -> float:
        return (self.predicted - self.measured) / self.measured

    @property
    def covered(self) -> bool | None:
        """Whether the 90% interval contains the measurement (None: no interval)."""
        if self.interval90 is None:
            return None
        return self.interval90[0] <= self.measured <= self.interval90[1]

    @property
    def flat_error(self) -> float | None:
        return None if self.flat is None else (self.flat - self.measured) / self.measured

    @property
    def z(self) -> float | None:
        """(predicted - measured) / sd; None when the prediction has no uncertainty."""
        return (self.predicted - self.measured) / self.sd if self.sd > 0 else None


@dataclass(frozen=True, slots=True)
class Case:
    """A published case: the figures calibrated on, the scored rows, how it was set up."""

    title: str
    sources: tuple[str, ...]
    calibrated_on: tuple[str, ...]
    rows: tuple[Row, ...]
    setup: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    scored: bool = True

    def __post_init__(self) -> None:
        tuned = set(self.calibrated_on) & {r.figure for r in self.rows}
        if self.scored and tuned:
            raise ValueError(f"{self.title}: scored on figures it was calibrated on: {tuned}")


def error_summary(rows: Sequence[Row], digits: int = 1) -> str:
    """A curve's scored rows in one phrase: "Median |error| m%, max x%, n of N within
    10%" (``digits`` decimals)."""
    e = np.array([abs(r.error) for r in rows])
    return (
        f"Median |error| {100 * np.median(e):.{digits}f}%, max {100 * e.max():.{digits}f}%, "
        f"{int((e <= 0.10).sum())} of {e.size} within 10%"
    )


# --------------------------------------------------------------------------- helpers


def _fig(source: str, k: int, what: str) -> str:
    return f"{source} k={k} {what}"


def _tok_s_at(scenario: Scenario, k: int, accept_length: float) -> float:
    cost: CycleCost = cycle_cost(scenario, k)
    return throughput_tok_s(accept_length, cost)


def _al_at(scenario: Scenario, k: int) -> float:
    assert scenario.acceptance is not None
    return mean_accept_length(scenario_rates(scenario, k))


def _fitted_summary(cal: Calibration) -> str:
    parts = [
        f"{v.field} = {v.value:.4g} ± {v.stderr:.2g}" for v in cal.fitted if v.stderr is not None
    ]
    return "; ".join(parts)


def _kept_summary(cal: Calibration) -> str:
    return "; ".join(f"{v.field} = {v.value:.4g}" for v in cal.kept)


def llama8b_base() -> Scenario:
    return scenario_from_dict(LLAMA8B_H100_PRIOR, source="sim.validation.LLAMA8B_H100_PRIOR")


# --------------------------------------------------------------------------- cases


def interval_of(
    answers: SampledModel, quantity: Callable[[SampledModel], np.ndarray]
) -> tuple[float, float]:
    """The 5% and 95% quantiles of ``quantity`` over a scenario's draws of its uncertain
    inputs (``answers``: ``sampled_answers(scenario)``, sim/uncertainty/answers.py): the 90%
    interval from inputs and model."""
    values = np.asarray(quantity(answers), dtype=float)
    lo, hi = np.quantile(values, [0.05, 0.95])
    return float(lo), float(hi)


def flat_accept_length(scenario: Scenario, k: int) -> float:
    """AL at k under the flat extrapolation specsim used before decay priors (a listed
    profile: its last rate repeats)."""
    acc = scenario.acceptance
    assert acc is not None
    flat = "repeat" if acc.per_position is not None else "flat"
    if acc.first_rate is not None or acc.shape == flat:
        return mean_accept_length(scenario_rates(scenario, k))
    flat_only: dict[str, object] = {"acceptance.shape": flat}
    if acc.tilt is not None:  # a stated tilt (the held-out shape error) is not the flat answer
        flat_only["acceptance.tilt"] = 0.0
    other = with_overrides(scenario, flat_only, source="validation")
    return mean_accept_length(scenario_rates(other, k))


def held_out(cal: Calibration, source: str | None = None, *, cross_run: bool = True) -> Calibration:
    """``cal`` with the shape error past the measured positions estimated without the
    cross-run series of ``source`` (sim/binding/priors.py ``shape_error(method,
    leave_out=source)``; ``cross_run`` False: within-run evidence alone, for positions of
    the very run whose first positions were measured), written as the calibrated tilt and
    its standard error as ``calibrate`` writes them, so that no series informs its own
    score. A scenario whose tilt is neither implicit nor derived by ``calibrate`` is
    returned as it is."""
    spec = cal.scenario.acceptance
    entry = cal.scenario.uncertainty.entries().get("acceptance.tilt")
    if spec is None or not (
        implicit_tilt(spec) or (entry is not None and entry.resolved_origin == "derived")
    ):
        return cal
    error = shape_error(spec.method, leave_out=source, cross_run=cross_run)
    scenario = with_overrides(
        cal.scenario,
        {
            "acceptance.tilt": error.nominal,
            "uncertainty.acceptance.tilt": {
                "stderr": error.sd,
                "origin": "derived",
                "reason": error.reason,
            },
        },
        source="validation",
    )
    return replace(cal, scenario=scenario)


def _row(
    quantity: str,
    figure: str,
    inputs: str,
    measured: float,
    cal: Calibration,
    predict: Callable[[Scenario], float],
    draws: Callable[[SampledModel], np.ndarray] | None = None,
    flat: Callable[[Scenario], float] | None = None,
) -> Row:
    """A scored row: ``predict`` on the calibrated scenario, with its propagated error, the
    90% interval of ``draws`` and the ``flat`` prediction."""
    return Row(
        quantity,
        figure,
        inputs,
        measured,
        predict(cal.scenario),
        cal.prediction_stderr(predict),
        interval90=(
            interval_of(sampled_answers(cal.scenario), draws) if draws is not None else None
        ),
        flat=flat(cal.scenario) if flat is not None else None,
    )


def _tok_s_fn(k: int, accept_length: float | None) -> Callable[[Scenario], float]:
    """tok/s at k with a given accept length (None: the scenario's own accept length)."""

    def fn(s: Scenario) -> float:
        return _tok_s_at(s, k, _al_at(s, k) if accept_length is None else accept_length)

    return fn


def _al_fn(k: int) -> Callable[[Scenario], float]:
    return lambda s: _al_at(s, k)


def _cumulative_fn(position: int) -> Callable[[Scenario], float]:
    def fn(s: Scenario) -> float:
        assert s.acceptance is not None
        return float(np.prod(scenario_rates(s, position)))

    return fn


def cumulative_draws(position: int) -> Callable[[SampledModel], np.ndarray]:
    """c at ``position`` of each of a scenario's draws, shape (n,)."""
    return lambda m: np.prod(m.rates[:, :position], axis=1)


def accept_length_draws(num_steps: int) -> Callable[[SampledModel], np.ndarray]:
    """The accept length at k = ``num_steps`` of each of a scenario's draws, shape (n,)."""
    return lambda m: m.accept_length(num_steps)


def _verify_ms(s: Scenario) -> float:
    """The scenario's stated verify pass (ms): the seed states it."""
    if s.timing.verify_ms is None:
        raise ValueError("the scenario states no timing.verify_ms")
    return s.timing.verify_ms


def _scored_run(
    src: str, run: pub.PublishedRun, alpha_from: str, cal: Calibration
) -> tuple[Row, Row, Row]:
    """Score one published run: tok/s at its measured AL, its AL, and tok/s end to end."""
    k = run.num_steps
    assert run.tok_s is not None
    return (
        _row(
            "tok/s (measured AL)",
            _fig(src, k, "tok/s"),
            f"k={k}, AL {run.accept_length}",
            run.tok_s,
            cal,
            _tok_s_fn(k, run.accept_length),
            lambda m: 1000.0 * run.accept_length / m.cycle_ms(k, run.accept_length),
        ),
        _row(
            "accept length",
            _fig(src, k, "AL"),
            f"k={k}, {alpha_from}",
            run.accept_length,
            cal,
            _al_fn(k),
            lambda m: m.accept_length(k),
            lambda s: flat_accept_length(s, k),
        ),
        replace(
            _row(
                "tok/s (end to end)",
                _fig(src, k, "tok/s"),
                f"k={k}, predicted AL",
                run.tok_s,
                cal,
                _tok_s_fn(k, None),
                lambda m: m.tok_s(k),
            ),
            spread=_spread(cal.scenario, k),
        ),
    )


def case_vllm_20780() -> tuple[Case, Calibration]:
    """Timings from K=2 and K=7, acceptance from K=2; score K=3..6."""
    src = "vLLM #20780"
    runs = {r.num_steps: r for r in pub.VLLM_20780_EAGLE3}
    base = llama8b_base()
    al_sigma = pub.rounding_sigma(2)
    baseline = 1000.0 / pub.VLLM_20780_VANILLA_TPOT_MS
    timing_data = baseline_measurement(baseline, TOK_S_REL_ERROR, f"{src} vanilla")
    for k in (2, 7):
        r = runs[k]
        assert r.tok_s is not None
        timing_data += Measurements(
            points=point_measurement(k, r.accept_length, r.tok_s, TOK_S_REL_ERROR, src).points
        )
    accept = Measurements(
        accept_lengths=(AcceptLengthObs(2, runs[2].accept_length, al_sigma, src),)
    )
    cal = calibrate(base, timing_data + accept, prefer="base")
    scored = held_out(cal, pub.VLLM_20780_URL)
    per_k = [_scored_run(src, runs[k], "alpha from k=2", scored) for k in (3, 4, 5, 6)]
    rows = [triple[i] for i in range(3) for triple in per_k]  # grouped by quantity
    calibrated_on = (
        f"{src} vanilla tok/s",
        _fig(src, 2, "tok/s"),
        _fig(src, 7, "tok/s"),
        _fig(src, 2, "AL"),
        _fig(src, 7, "AL"),
    )
    case = Case(
        title="Llama-3.1-8B + EAGLE-3, vLLM V1 chain, H100, batch 1, MT-Bench",
        sources=(pub.VLLM_20780_URL,),
        calibrated_on=calibrated_on,
        rows=tuple(rows),
        setup=(
            f"base: LLAMA8B_H100_PRIOR in sim/validation/cases.py; calibrated on vanilla TPOT "
            f"{pub.VLLM_20780_VANILLA_TPOT_MS} ms, tok/s at k=2 and k=7 (with their measured "
            "AL) and AL at k=2",
            f"fitted: {_fitted_summary(cal)}",
            f"kept (not determined by these figures): {_kept_summary(cal)}",
        ),
        notes=(
            "tok/s = 1000 / TPOT. The AL at k=7 is an input (it turns the k=7 tok/s into a cycle "
            "time), so it is not scored.",
            "Accept lengths beyond k=2 come from one equal conditional rate (Leviathan); the "
            "error growing with k shows EAGLE-3's conditional rates falling with position.",
        ),
    )
    return case, cal


@dataclass(frozen=True, slots=True)
class _CrossSpec:
    """Two published runs at different num_steps: calibrate on one, score the other."""

    src: str
    title: str
    sources: tuple[str, ...]
    runs: tuple[pub.PublishedRun, pub.PublishedRun]
    baseline_tok_s: float | None
    notes: tuple[str, ...]
    #: The intercept field refitted (verify_ms; cycle_overhead_ms when the base derives
    #: its verify pass), and where the base and its slope come from.
    intercept: str = "verify_ms"
    #: The drafter's method (its decay prior beyond the calibrated num_steps).
    method: str = "eagle3"
    #: The source of the runs' accept lengths among the cross-run series
    #: (sim/binding/cross_run.py), left out of the shape error that scores them.
    al_source: str | None = None
    base_label: str = "the vLLM #20780 calibration (case 1)"
    slope_note: str = (
        "One num_steps determines one number (the cycle's intercept); the slope per extra "
        "draft step comes from case 1's measurements, so this case tests how well a "
        "drafter-step cost transfers between setups."
    )


def cross_cases(spec: _CrossSpec, base: Scenario) -> tuple[Case, ...]:
    """Calibrate the intercept on one run (slope from ``base``), predict the other; both ways."""
    src = spec.src
    if base.acceptance is not None and base.acceptance.method != spec.method:
        base = with_overrides(base, {"acceptance.method": spec.method}, source="validation")
    cases = []
    first, second = spec.runs
    for fit_run, score_run in ((first, second), (second, first)):
        assert fit_run.tok_s is not None and score_run.tok_s is not None
        data = Measurements(
            points=point_measurement(
                fit_run.num_steps, fit_run.accept_length, fit_run.tok_s, TOK_S_REL_ERROR, src
            ).points,
            accept_lengths=(
                AcceptLengthObs(
                    fit_run.num_steps, fit_run.accept_length, pub.rounding_sigma(2), src
                ),
            ),
        )
        calibrated_on = [_fig(src, fit_run.num_steps, "tok/s"), _fig(src, fit_run.num_steps, "AL")]
        fit = [spec.intercept]
        if spec.baseline_tok_s is not None:
            data += baseline_measurement(spec.baseline_tok_s, TOK_S_REL_ERROR, f"{src} vanilla")
            calibrated_on.insert(0, f"{src} vanilla tok/s")
            fit.insert(0, "decode_ms")
        cal = held_out(calibrate(base, data, fit_timing=fit, prefer="base"), spec.al_source)
        k = score_run.num_steps
        rows = _scored_run(src, score_run, f"alpha from k={fit_run.num_steps}", cal)
        timing_err, al_err, e2e_err = (r.error for r in rows)
        cancel = (
            (
                "The end-to-end row is closer than either part because the tok/s error "
                f"({100 * timing_err:+.1f}%) and the accept-length error ({100 * al_err:+.1f}%) "
                "partly cancel; it is not evidence that both parts are right.",
            )
            if abs(e2e_err) < min(abs(timing_err), abs(al_err)) and timing_err * al_err < 0
            else ()
        )
        cases.append(
            Case(
                title=f"{spec.title}: calibrate on num_steps {fit_run.num_steps}, predict "
                f"num_steps {k}",
                sources=spec.sources,
                calibrated_on=tuple(calibrated_on),
                rows=rows,
                setup=(
                    f"base: {spec.base_label}; refitted: "
                    + ", ".join(fit)
                    + f" on k={fit_run.num_steps}: {fit_run.tok_s} tok/s at AL "
                    f"{fit_run.accept_length}",
                    f"fitted: {_fitted_summary(cal)}",
                    "kept from the base: draft step "
                    f"{pass_times(cal.scenario).draft_step_ms:.4g} ms (the slope per extra "
                    "step); its uncertainty is not in the ± of this case",
                ),
                notes=(
                    spec.slope_note,
                    *spec.notes,
                    *cancel,
                ),
            )
        )
    return tuple(cases)


SGLANG_4247 = _CrossSpec(
    src="SGLang #4247",
    title="Llama-3.1-8B + EAGLE-3, SGLang, 1 GPU, MT-bench",
    sources=(pub.SGLANG_4247_URL, pub.VLLM_20780_URL),
    runs=(pub.SGLANG_4247[0], pub.SGLANG_4247[1]),
    al_source=pub.SGLANG_4247_URL,
    baseline_tok_s=None,
    notes=(
        "topk and num_draft_tokens are not stated in the PR comment; the chain model "
        "(topk = 1) is assumed. If the runs used tree drafting (topk > 1), the accept-length "
        "transfer is expected to be off.",
    ),
)
SGLANG_4247_ROOFLINE = _CrossSpec(
    src="SGLang #4247",
    title="Llama-3.1-8B + EAGLE-3, SGLang, 1 H100, MT-bench, passes from the roofline",
    sources=(pub.SGLANG_4247_URL, "scenarios/llama31-8b-1xh100-eagle3.toml"),
    runs=(pub.SGLANG_4247[0], pub.SGLANG_4247[1]),
    al_source=pub.SGLANG_4247_URL,
    baseline_tok_s=None,
    notes=(
        "topk and num_draft_tokens are not stated in the PR comment; the chain model "
        "(topk = 1) is assumed.",
    ),
    intercept="cycle_overhead_ms",
    base_label="scenarios/llama31-8b-1xh100-eagle3.toml, whose pass times the hardware "
    "model derives from the weights over H100 bandwidth (no timing measured)",
    slope_note=(
        "One num_steps determines one number (here the per-cycle overhead); the slope per "
        "extra draft step is the hardware model's roofline drafter step, so this case tests "
        "the hardware model's drafter cost."
    ),
)
VLLM_16035 = _CrossSpec(
    method="eagle",
    src="vLLM #16035",
    title="Llama-3-8B + EAGLE-1, vLLM V1, batch 1, MT-Bench",
    sources=(pub.VLLM_16035_URL, pub.VLLM_20780_URL),
    runs=(pub.VLLM_16035[0], pub.VLLM_16035[1]),
    al_source=pub.VLLM_16035_URL,
    baseline_tok_s=pub.VLLM_16035_VANILLA_TOK_S,
    notes=(
        "Another target (Llama-3-8B) and drafter (EAGLE-1, lmsys/sglang-EAGLE-LLaMA3-Instruct-8B) "
        "than case 1, GPU not stated; tok/s is the offline run's output rate, which includes "
        "prefill time.",
    ),
)


def case_vllm_acceptance_test() -> Case:
    """Per-position rates from positions 1-2; predict c3 and AL at K=3."""
    c = pub.VLLM_ACCEPTANCE_TEST_CUMULATIVE
    sigma = pub.rounding_sigma(4)
    data = Measurements(
        cumulative=tuple(CumulativeObs(i + 1, c[i], sigma, "vLLM test") for i in range(2))
    )
    # c3 is a position of the run whose c1, c2 are given: within-run evidence alone
    cal = held_out(
        calibrate(llama8b_base(), data, acceptance="per_position", prefer="base"), cross_run=False
    )
    return Case(
        title="Llama-3.1-8B + EAGLE-3, vLLM test_acceptance_length, K=3, MT-Bench",
        sources=("vLLM tests/spec_decode test_acceptance_length (docs/reference.md §Published)",),
        calibrated_on=("vLLM test c1", "vLLM test c2"),
        rows=(
            _row(
                "cumulative rate c3",
                "vLLM test c3",
                "a3 from the EAGLE-3 prior's step shape (a plateau past position 2)",
                c[2],
                cal,
                _cumulative_fn(3),
                lambda m: np.prod(m.rates[:, :3], axis=1),
            ),
            _row(
                "accept length",
                "vLLM test AL",
                "K=3",
                pub.VLLM_ACCEPTANCE_TEST_AL,
                cal,
                _al_fn(3),
                lambda m: m.accept_length(3),
                lambda s: flat_accept_length(s, 3),
            ),
        ),
        setup=(f"fitted: {_fitted_summary(cal)}",),
    )


def case_vllm_26498() -> Case:
    """One conditional rate from positions 1-3 of a K=10 run; predict positions 4-10 and AL."""
    c = pub.VLLM_26498_CUMULATIVE
    sigma = pub.rounding_sigma(2)
    data = Measurements(
        cumulative=tuple(CumulativeObs(i + 1, c[i], sigma, "vLLM #26498") for i in range(3))
    )
    base = with_overrides(llama8b_base(), {"acceptance.method": "eagle"}, source="validation")
    # per-position c1..c3, continued by held-out choice; positions 4-10 of the same run:
    # the within-run shape error alone
    cal = held_out(calibrate(base, data, prefer="base"), cross_run=False)
    flat = calibrate(
        base, data, acceptance="alpha", prefer="base"
    )  # one equal rate: the old answer
    measured_al = 1.0 + pub.VLLM_26498_ACCEPTED / pub.VLLM_26498_DRAFTS
    how = "c1..c3, continued by the shape with the lowest held-out error"
    rows = [
        replace(
            _row(
                f"cumulative rate c{i}",
                f"vLLM #26498 c{i}",
                how,
                c[i - 1],
                cal,
                _cumulative_fn(i),
                cumulative_draws(i),
            ),
            flat=_cumulative_fn(i)(flat.scenario),
        )
        for i in (4, 6, 8, 10)
    ]
    rows.append(
        replace(
            _row(
                "accept length",
                "vLLM #26498 AL",
                f"K=10, {how}",
                measured_al,
                cal,
                _al_fn(10),
                lambda m: m.accept_length(10),
            ),
            flat=_al_at(flat.scenario, 10),
        )
    )
    return Case(
        title="EAGLE drafter, vLLM, K=10, SpecBench (padding fixed)",
        sources=(pub.VLLM_26498_URL,),
        calibrated_on=tuple(f"vLLM #26498 c{i + 1}" for i in range(3)),
        rows=tuple(rows),
        setup=(f"fitted: {_fitted_summary(cal)}",),
        notes=(
            f"measured AL = 1 + accepted / drafts = 1 + {pub.VLLM_26498_ACCEPTED} / "
            f"{pub.VLLM_26498_DRAFTS}; cumulative rates are printed with two decimals (c10 = "
            "0.02 means 0.015-0.025).",
        ),
    )


def case_seed(seed: Scenario) -> Case:
    """The seed: consistency only (its drafter split was derived from the 60 tok/s figure)."""
    baseline = sum(pub.SEED_BASELINE_TOK_S) / 2
    spec = sum(pub.SEED_SPEC_TOK_S) / 2
    data = baseline_measurement(baseline, TOK_S_REL_ERROR, "seed") + point_measurement(
        seed.num_steps, pub.SEED_ACCEPT_LENGTH, spec, TOK_S_REL_ERROR, "seed"
    )
    cal = calibrate(seed, data, fit_timing=["decode_ms", "verify_ms"], prefer="base")
    return Case(
        title="Seed: Kimi-K2.5, 8 PCIe GPUs, SGLang EAGLE-3 num_steps 2 (consistency, not scored)",
        sources=("docs/reference.md §Seed",),
        calibrated_on=("seed baseline tok/s", "seed speculative tok/s"),
        rows=(
            _row(
                "verify_ms implied by 60 tok/s",
                "seed profiled verify_ms",
                "k=2, AL 2.0",
                pub.SEED_VERIFY_MS,
                cal,
                _verify_ms,
            ),
        ),
        setup=(f"fitted: {_fitted_summary(cal)}", f"kept: {_kept_summary(cal)}"),
        notes=(
            "Not a validation: the seed scenario's drafter costs (3.3 ms per cycle) were "
            "chosen as 33.3 ms - 30 ms from this same 60 tok/s figure, so the verify time it "
            "implies agrees by construction. No held-out speculative figure exists for the "
            "seed hardware.",
        ),
        scored=False,
    )


def _graphed_verify_prediction(seed: Scenario) -> tuple[float, float, float]:
    """(ungraphed cycle ms, graphed cycle ms, the report's graphed tok/s predicted)."""
    graphed = with_overrides(seed, {"timing.verify_cuda_graph": True}, source="validation")
    before_ms = bind(seed).cost.total_ms
    after_ms = bind(graphed).cost.total_ms
    return before_ms, after_ms, pub.GRAPHED_VERIFY_BEFORE_TOK_S * before_ms / after_ms


def case_graphed_verify(seed: Scenario) -> Case:
    """Graphing the seed's verify pass: the hardware model's what-if against a public report.

    Calibrated on the report's ungraphed tok/s; the prediction scales it by the seed
    scenario's cycle ungraphed / graphed (sim/hardware: launch work and eager all-reduce
    cost removed), assuming the accept length did not change.
    """
    before_ms, after_ms, predicted = _graphed_verify_prediction(seed)
    graphed = with_overrides(seed, {"timing.verify_cuda_graph": True}, source="validation")
    experts = with_overrides(seed, {"timing.verify_growth": "experts"}, source="validation")
    _, experts_after_ms, experts_tok_s = _graphed_verify_prediction(experts)
    # The graphed cycle the report's 1.55x implies for the seed (same accept length).
    needed_after_ms = before_ms * pub.GRAPHED_VERIFY_BEFORE_TOK_S / pub.GRAPHED_VERIFY_AFTER_TOK_S
    return Case(
        title="Kimi on 8 PCIe GPUs, verify made CUDA-graphed: the seed's what-if against a vLLM "
        "report (hardware what-if)",
        sources=(pub.GRAPHED_VERIFY_SOURCE,),
        calibrated_on=("graphed-verify report, ungraphed tok/s",),
        rows=(
            Row(
                "tok/s (verify graphed)",
                "graphed-verify report, graphed tok/s",
                f"{pub.GRAPHED_VERIFY_BEFORE_TOK_S:g} tok/s x cycle {before_ms:.2f} ms "
                f"/ {after_ms:.2f} ms",
                pub.GRAPHED_VERIFY_AFTER_TOK_S,
                predicted,
            ),
        ),
        setup=(
            f"seed scenario's hardware model: verify {cycle_cost(seed).verify_ms:.2f} ms "
            f"ungraphed -> {cycle_cost(graphed).verify_ms:.2f} ms graphed at num_steps "
            f"{seed.num_steps} (GPU work from the graphed decode); accept length assumed "
            "unchanged by graphing",
        ),
        notes=(
            "The report is vLLM (TRITON_MLA, PIECEWISE -> FULL CUDA graphs, num_spec 3), not "
            "SGLang: its fix also routed the verify through the decode attention kernel, and "
            "its gain grows with context (1.55x at 2k, 3.5x at 10k, 4.3x at 30k), so it is "
            "not a graphing-only change; the seed scenario's num_steps and drafter stand in. "
            "The seed's graphed verify takes its GPU work from the graphed decode plus 0.7 ms "
            "per extra token (an estimate); with the expert-proportional growth "
            f"(timing.verify_growth = experts) the same case gives {experts_tok_s:.1f} tok/s "
            f"(graphed cycle {experts_after_ms:.2f} ms).",
            f"The report's 1.55x would put the seed's graphed cycle at {needed_after_ms:.1f} ms, "
            f"not {after_ms:.2f}: a graphed verify of "
            f"{cycle_cost(graphed).verify_ms + needed_after_ms - after_ms:.1f} ms against the "
            f"graphed decode's {seed.timing.decode_ms:g}. The report's ungraphed side ran "
            "PIECEWISE graphs (only attention eager), the seed's verify runs fully eager, so "
            "graphing removes more from the seed; what graphing does not remove (GPU work "
            "beyond the decode's, host work per step) is what the case says the seed "
            "scenario lacks, or the two ungraphed states are not the same class.",
            _same_server_note(seed),
        ),
    )


def _same_server_note(seed: Scenario) -> str:
    """What the report's graphing-only pair says about the class of its ungraphed side."""
    before, after = hw_data.VOIPMONITOR_NO_MTP_TOK_S
    graphed = with_overrides(seed, {"timing.verify_cuda_graph": True}, source="validation")
    seed_verify_ms, graphed_verify_ms = bind(seed).cost.verify_ms, bind(graphed).cost.verify_ms
    eager_ms = seed_verify_ms - graphed_verify_ms
    return (
        "The same report measured graphing alone on that server (one user, no speculation, "
        f"PIECEWISE {before:g} -> FULL {after:g} tok/s): its eager attention op cost "
        f"{1000 / before - 1000 / after:.1f} ms, {100 * (after / before - 1):.0f}% of the "
        f"graphed step. The seed's fully eager verify carries {eager_ms:.1f} ms of eager "
        f"cost, {100 * eager_ms / graphed_verify_ms:.0f}% of its graphed verify. "
        "So the report's 1.55x measures a server that was mostly graphed already, plus a "
        "change of attention path, not the seed's lever: the case is outside the "
        "graphing-only comparison it was chosen as, and it stays scored as the issue set it "
        "(case 18 scores the report's two pairs against their own ungraphed states)."
    )


NOT_RECONSTRUCTED = (
    "EAGLE-3 paper (Li et al. 2025), LLaMA-3.1-8B MT-bench tau 6.13 (4.40x): tree drafting "
    "with a dynamic tree whose configuration could not be read from a primary source, and no "
    "chain of the same setup to calibrate on (quoted second-hand in sglang PR #4247).",
    "Kimi drafters at num_steps 3, AL 2.6-3.5 (AQ-MedAI/Kimi-K2-Instruct-eagle3 model card): "
    "accept lengths only, no tok/s measured on the seed hardware to score a prediction on.",
    "Community baselines (SGLang Kimi-K2.5 73-90 tok/s on 8 PCIe GPUs; 8x H200 ~108 tok/s): "
    "plain decoding only, nothing speculative to predict.",
)
