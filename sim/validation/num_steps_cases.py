"""Batch-1 chain cases across num_steps: tok/s and accept lengths measured at some
num_steps calibrate, the others are scored. vLLM #20780 (Llama-3.1-8B + EAGLE-3, vLLM V1):
timings from K=2 and K=7, acceptance from K=2, scored at K=3..6 (``case_vllm_20780``); two
published runs at different num_steps, the cycle's intercept calibrated on one and the
other scored, both ways (``cross_cases``), for SGLang #4247 (measured passes and the
roofline's) and vLLM #16035."""

from __future__ import annotations

from dataclasses import dataclass

from sim.binding.closed_form import pass_times
from sim.calibration.calibrate import calibrate
from sim.calibration.measurements import (
    AcceptLengthObs,
    Measurements,
    baseline_measurement,
    point_measurement,
)
from sim.calibration.result import Calibration
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.validation import data as pub
from sim.validation.case_scoring import (
    TOK_S_REL_ERROR,
    figure_name,
    fitted_summary,
    held_out,
    kept_summary,
    scored_run,
)
from sim.validation.cases import Case, llama8b_base


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
    per_k = [scored_run(src, runs[k], "alpha from k=2", scored) for k in (3, 4, 5, 6)]
    rows = [triple[i] for i in range(3) for triple in per_k]  # grouped by quantity
    calibrated_on = (
        f"{src} vanilla tok/s",
        figure_name(src, 2, "tok/s"),
        figure_name(src, 7, "tok/s"),
        figure_name(src, 2, "AL"),
        figure_name(src, 7, "AL"),
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
            f"fitted: {fitted_summary(cal)}",
            f"kept (not determined by these figures): {kept_summary(cal)}",
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
        calibrated_on = [
            figure_name(src, fit_run.num_steps, "tok/s"),
            figure_name(src, fit_run.num_steps, "AL"),
        ]
        fit = [spec.intercept]
        if spec.baseline_tok_s is not None:
            data += baseline_measurement(spec.baseline_tok_s, TOK_S_REL_ERROR, f"{src} vanilla")
            calibrated_on.insert(0, f"{src} vanilla tok/s")
            fit.insert(0, "decode_ms")
        cal = held_out(calibrate(base, data, fit_timing=fit, prefer="base"), spec.al_source)
        k = score_run.num_steps
        rows = scored_run(src, score_run, f"alpha from k={fit_run.num_steps}", cal)
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
                    f"fitted: {fitted_summary(cal)}",
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
