"""The validation report: specsim's predictions next to published measurements it did not fit.

``make validate`` runs ``python -m sim.validation`` which rebuilds docs/validation.md
(atomically) from the cases of sim/validation/ (their types in cases.py, how a row is
scored in case_scoring.py; the chain cases in num_steps_cases.py, vllm_profile_cases.py
and seed_cases.py, the hardware ones in hardware_cases.py; published figures in
sim/validation/data.py and sim/validation/hardware_data.py, each case calibrated on some
and scored on the others) and the closed-form checks of sim/validation/checks.py. This
module assembles and renders them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim import __version__
from sim.files import atomic_write_text
from sim.scenario.load import load_scenario
from sim.validation.acceptance_cases import multi_k_cases
from sim.validation.case_scoring import MC_REPLICATIONS, MC_REQUESTS, MC_SEED, TOK_S_REL_ERROR
from sim.validation.cases import Case, Row
from sim.validation.checks import Check, closed_form_checks
from sim.validation.decision_cases import decision_cases
from sim.validation.dspark_serving_cases import dspark_serving_cases
from sim.validation.gb10_qwen38_cases import gb10_qwen38_cases
from sim.validation.glm_flash_eagle3_cases import glm_flash_eagle3_cases
from sim.validation.glm_flash_mtp_cases import glm_flash_mtp_cases
from sim.validation.growth_cases import growth_cases
from sim.validation.h100_qwen3_8b_tree_cases import h100_qwen3_8b_tree_cases
from sim.validation.h100_qwen35_9b_cases import h100_qwen35_9b_cases
from sim.validation.h100nvl_qwen36_cases import h100nvl_qwen36_cases
from sim.validation.h100nvl_qwen36_replay import h100nvl_qwen36_replay_cases
from sim.validation.h100nvl_qwen38_cases import h100nvl_qwen38_cases
from sim.validation.hardware_cases import (
    HARDWARE_NOT_RECONSTRUCTED,
    case_custom_allreduce,
    case_eager_pairs,
    case_nccl_points,
)
from sim.validation.hybrid_mtp_serving_cases import hybrid_mtp_serving_cases
from sim.validation.load_fit_cases import load_fit_cases
from sim.validation.mi355x_kimi_cases import mi355x_kimi_cases
from sim.validation.mi355x_minimax_cases import mi355x_minimax_cases
from sim.validation.model_error_cases import model_error_lines
from sim.validation.moe_kernel_cases import moe_kernel_cases
from sim.validation.moe_tree_serving_cases import moe_tree_serving_cases
from sim.validation.mtp_serving_cases import mtp_serving_cases
from sim.validation.not_reconstructed import NOT_RECONSTRUCTED
from sim.validation.num_steps_cases import (
    SGLANG_4247,
    SGLANG_4247_ROOFLINE,
    VLLM_16035,
    case_vllm_20780,
    cross_cases,
)
from sim.validation.rate_curve_cases import rate_curve_cases
from sim.validation.seed_cases import case_graphed_verify, case_seed
from sim.validation.serving_cases import serving_cases
from sim.validation.tree_cases import sglang_4716_note, tree_cases
from sim.validation.tree_serving_cases import tree_serving_cases
from sim.validation.vllm_profile_cases import case_vllm_26498, case_vllm_acceptance_test

__all__ = [
    "Case",
    "Check",
    "Goals",
    "Report",
    "Row",
    "build_report",
    "goals",
    "main",
    "render_markdown",
]

DEFAULT_OUT = "docs/validation.md"
SEED_SCENARIO = "scenarios/kimi-k25-8xpcie-eagle3.toml"
LLAMA_ROOFLINE_SCENARIO = "scenarios/llama31-8b-1xh100-eagle3.toml"


@dataclass(frozen=True, slots=True)
class Report:
    cases: tuple[Case, ...]
    checks: tuple[Check, ...]
    not_reconstructed: tuple[str, ...]
    spreads: str


def _at_resolution(value: float, tolerance: float) -> str:
    """``value`` to a tenth of its check's ``tolerance``: digits below that are the
    floating-point rounding of one machine's kernels, not the check's (a deviation of a
    few ulps reads "< 1e-13" against a 1e-12 tolerance on every machine; an exact check,
    tolerance 0, shows every digit)."""
    if tolerance <= 0.0:  # an exact check: every digit is the check's
        return f"{value:.6g}"
    step = tolerance / 10.0
    shown = round(value / step) * step
    if shown == 0.0 and value != 0.0:
        return f"< {step:.0e}"
    return f"{shown:.6g}"


def _spreads_statement() -> str:
    return (
        "The predictions above are closed-form long-run expectations (renewal-reward, "
        "sim/model/closed_forms.py); their ± covers only the uncertainty of the calibrated "
        "values. Below, "
        "for every end-to-end tok/s prediction, the Monte Carlo of the same calibrated "
        f"scenario (sim.simulation.simulate, fast engine, {MC_REPLICATIONS} replications x "
        f"{MC_REQUESTS} requests, seed {MC_SEED}): the mean per-request tok/s with its 95% "
        "confidence interval, and the 5th-95th percentiles of per-request tok/s (the spread "
        "a single request sees). A published figure is an average over many requests, so "
        "it should be compared with the mean; the percentiles say how far one request may "
        "stray. The Monte Carlo mean sits slightly below the closed form: a request's tok/s "
        "is a ratio, and its last cycle may emit tokens past the request's end."
    )


def build_report(seed_path: str = SEED_SCENARIO, *, serving: bool = True) -> Report:
    """Every case and check; ``serving``: also the concurrency curves (serving simulation,
    the slow part)."""
    seed = load_scenario(seed_path)
    c1, llama = case_vllm_20780()
    cases = (
        c1,
        *cross_cases(SGLANG_4247, llama.scenario),
        *cross_cases(SGLANG_4247_ROOFLINE, load_scenario(LLAMA_ROOFLINE_SCENARIO)),
        *cross_cases(VLLM_16035, llama.scenario),
        case_vllm_acceptance_test(),
        case_vllm_26498(),
        *multi_k_cases(),
        *growth_cases(),
        case_graphed_verify(seed),
        case_eager_pairs(seed),
        case_nccl_points(),
        case_custom_allreduce(),
        case_seed(seed),
        *tree_cases(),
        *(serving_cases() if serving else ()),
        *(tree_serving_cases() if serving else ()),
        *(decision_cases() if serving else ()),
        *(load_fit_cases() if serving else ()),
        *(rate_curve_cases() if serving else ()),
        *moe_kernel_cases(),
        *(moe_tree_serving_cases() if serving else ()),
        *(mtp_serving_cases() if serving else ()),
        *(hybrid_mtp_serving_cases() if serving else ()),
        *(dspark_serving_cases() if serving else ()),
        *(h100nvl_qwen38_cases() if serving else ()),
        *(glm_flash_mtp_cases() if serving else ()),
        *(glm_flash_eagle3_cases() if serving else ()),
        *(h100nvl_qwen36_cases() if serving else ()),
        *(mi355x_kimi_cases() if serving else ()),
        *(mi355x_minimax_cases() if serving else ()),
        *(gb10_qwen38_cases() if serving else ()),
        *(h100_qwen3_8b_tree_cases() if serving else ()),
        *(h100_qwen35_9b_cases() if serving else ()),
        *(h100nvl_qwen36_replay_cases() if serving else ()),
    )
    return Report(
        cases,
        closed_form_checks(seed),
        (*NOT_RECONSTRUCTED, sglang_4716_note(), *HARDWARE_NOT_RECONSTRUCTED),
        _spreads_statement(),
    )


# --------------------------------------------------------------------------- markdown


def _num(x: float) -> str:
    return f"{x:.4g}"


def _pred(r: Row) -> str:
    return f"{_num(r.predicted)} ± {r.sd:.2g}" if r.sd > 0 else _num(r.predicted)


def _z(r: Row) -> str:
    return f"{r.z:+.1f}" if r.z is not None else "-"


def _interval(r: Row) -> str:
    if r.interval90 is None:
        return "-"
    mark = "in" if r.covered else "**out**"
    return f"{_num(r.interval90[0])} - {_num(r.interval90[1])} ({mark})"


def _flat(r: Row) -> str:
    return "-" if r.flat_error is None else f"{100 * r.flat_error:+.1f}%"


@dataclass(frozen=True, slots=True)
class Goals:
    """Issue 10's goals: accept-length extrapolation errors and interval coverage."""

    al_errors: np.ndarray
    al_flat_errors: np.ndarray
    covered: int
    with_interval: int
    scored: int

    @property
    def coverage(self) -> float:
        return self.covered / self.with_interval if self.with_interval else float("nan")

    def lines(self) -> list[str]:
        al, flat = 100 * self.al_errors, 100 * self.al_flat_errors
        ok_median = "met" if np.median(al) <= 3.0 else "missed"
        ok_worst = "met" if al.max() <= 8.0 else "missed"
        ok_cover = "met" if self.coverage >= 0.8 else "missed"
        return [
            f"Accept-length extrapolations ({al.size} figures at num_steps beyond the "
            f"calibrated ones): median |error| {np.median(al):.1f}% (goal 3%: {ok_median}), "
            f"worst {al.max():.1f}% (goal 8%: {ok_worst}); the flat extrapolation specsim used "
            f"before: median {np.median(flat):.1f}%, worst {flat.max():.1f}%.",
            f"90% intervals from inputs and model: {self.covered} of {self.with_interval} "
            f"figures that carry one contain the measurement ({100 * self.coverage:.0f}%, goal "
            f"80%: {ok_cover}); {self.scored - self.with_interval} other scored figures "
            "(hardware, tree and serving cases, fitted MoE curves) carry none.",
            "How the shape error past the measured positions is scored: it is a random "
            "effect on the log rate ratio per position, estimated from the series of accept "
            "lengths measured in separate runs at several num_steps "
            "(sim/binding/cross_run.py: the multi-K series below and the accept lengths of "
            "cases 1-7), and specsim ships it estimated from all of them; every case here "
            "uses it estimated without the case's own source (leave one source out), so no "
            "figure informs its own score. Cases 8 and 9 predict later positions of the run "
            "whose first positions they were given, and use the within-run profiles alone.",
            "Disclosure: these series were seen before this estimator was chosen. Earlier "
            "estimators, from within-run profiles only, scored worse on them: a symmetric "
            "shape error (median |error| 4.9%, worst 18%, 90% intervals containing 29%) and "
            "its falling side only (2.7%, 10.2%, 54%).",
        ]


def goals(report: Report) -> Goals:
    rows = [r for c in report.cases if c.scored for r in c.rows]
    al = [r for r in rows if r.quantity == "accept length"]
    inter = [r for r in rows if r.interval90 is not None]
    return Goals(
        np.array([abs(r.error) for r in al]),
        np.array([abs(r.flat_error) for r in al if r.flat_error is not None]),
        sum(bool(r.covered) for r in inter),
        len(inter),
        len(rows),
    )


def render_markdown(report: Report) -> str:
    """docs/validation.md: the preamble and summary, the scored figures' table and their
    errors in one paragraph, each case, the model error under load, the closed-form
    checks, the spreads and what was not reconstructed."""
    scored = [c for c in report.cases if c.scored]
    out = [
        *_preamble(report),
        *_summary_rows(scored),
        "",
        _errors_paragraph(scored),
        "",
        "## Cases",
        *_case_sections(report.cases),
    ]
    if any(r.load is not None for c in scored for r in c.rows):
        out += ["", "## Model error under load", "", *model_error_lines(report.cases)]
    out += [*_check_rows(report.checks), *_spread_rows(report), "", "## Not reconstructed", ""]
    out += [f"- {item}" for item in report.not_reconstructed]
    return "\n".join(out) + "\n"


def _preamble(report: Report) -> list[str]:
    """The report's title, how its figures are calibrated and scored, what the ± and the
    90% interval are, the goals' summary and the head of the scored figures' table."""
    return [
        "# specsim validation report",
        "",
        f"Generated by `make validate` (`python -m sim.validation`), specsim {__version__}. "
        "Do not edit by hand.",
        "",
        "Every case is calibrated on some published figures (through "
        "`sim.calibration.calibrate`, the "
        "library behind `specsim calibrate`) and scored on others; a figure used to "
        "calibrate is never scored. Error = (specsim - measured) / measured. The ± is one "
        "standard error of the prediction, propagated from the calibrated values' covariance "
        "(which comes from the errors assumed for the calibration figures: "
        f"{100 * TOK_S_REL_ERROR:.0f}% for tok/s, the printing precision for accept lengths "
        "and rates); z = (specsim - measured) / ±. The scored figure's own error is not in "
        "the ±. A large |z| therefore says the miss comes from the model's assumptions (for "
        "accept lengths: the shape of the rates beyond the calibrated positions), not from "
        "calibration noise.",
        "",
        "The 90% interval (5%-95% of the closed forms re-solved over quasi-random draws of "
        "the calibrated scenario's uncertain inputs: calibrated values with their "
        "covariance, stated errors and ranges, the acceptance decay prior and shape error, "
        "derived compute's efficiency; sim/uncertainty/answers.py) is the interval specsim "
        "reports with every answer; 'flat' is the error of the flat extrapolation (one "
        "equal rate) specsim used before decay-aware acceptance.",
        "",
        "## Summary",
        "",
        *goals(report).lines(),
        "",
        "| case | quantity | inputs | measured | specsim | 90% interval | error | flat | z |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]


def _summary_rows(scored: list[Case]) -> list[str]:
    """One row a scored figure, its case numbered from 1 in the order of ``scored``."""
    return [
        f"| {i} | {r.quantity} | {r.inputs} | {_num(r.measured)} | "
        f"{_pred(r)} | {_interval(r)} | {100 * r.error:+.1f}% | {_flat(r)} | {_z(r)} |"
        for i, case in enumerate(scored, start=1)
        for r in case.rows
    ]


def _errors_paragraph(scored: list[Case]) -> str:
    """The scored figures' |error| (median and max; tok/s figures apart), how many
    predictions with an uncertainty lie within 2 standard errors (|z| <= 2), and, where
    there are any, the concurrency curves', end-to-end latency curves' and crossover
    concurrencies' errors apart."""
    errors = np.array([abs(r.error) for c in scored for r in c.rows])
    tok = np.array([abs(r.error) for c in scored for r in c.rows if r.quantity.startswith("tok/s")])
    zs = [abs(r.z) for c in scored for r in c.rows if r.z is not None]
    within = sum(z <= 2.0 for z in zs)
    return (
        f"{errors.size} scored figures: median |error| {100 * np.median(errors):.1f}%, "
        f"max {100 * errors.max():.1f}%; tok/s figures only: median "
        f"{100 * np.median(tok):.1f}%, max {100 * tok.max():.1f}%. {within} of {len(zs)} "
        "predictions with an uncertainty are within 2 standard errors of the measurement."
        + _serving_errors(scored)
    )


def _serving_errors(scored: list[Case]) -> str:
    """The serving figures' errors apart (empty when there are none): the concurrency
    curves' (``aggregate`` quantities), the end-to-end latency curves'
    (sim/validation/mtp_serving_cases.py) and each crossover concurrency's
    (sim/validation/decision_cases.py)."""
    served = np.array([abs(r.error) for c in scored for r in c.rows if "aggregate" in r.quantity])
    serving_line = (
        f" Concurrency curves (serving simulation) only: {served.size} figures, median "
        f"|error| {100 * np.median(served):.1f}%, max {100 * served.max():.1f}%, "
        f"{int((served <= 0.10).sum())} within 10%."
        if served.size
        else ""
    )
    latency = np.array(
        [abs(r.error) for c in scored for r in c.rows if r.quantity.startswith("mean end-to-end")]
    )
    if latency.size:  # sim/validation/mtp_serving_cases.py
        serving_line += (
            f" End-to-end latency curves (scored apart): {latency.size} figures, median "
            f"|error| {100 * np.median(latency):.1f}%, max {100 * latency.max():.1f}%, "
            f"{int((latency <= 0.10).sum())} within 10%."
        )
    crossings = [r for c in scored for r in c.rows if r.quantity.startswith("crossover")]
    if crossings:  # sim/validation/decision_cases.py
        serving_line += (
            f" Crossover concurrencies: {len(crossings)} scored ("
            + ", ".join(f"{100 * r.error:+.0f}%" for r in crossings)
            + "); the other decision cases are not scored as numbers (their notes say where "
            "the prediction agrees and where it misses)."
        )
    return serving_line


def _case_sections(cases: Sequence[Case]) -> list[str]:
    """Each case under its number (scored cases from 1; ``-`` for one not scored): its
    sources, what it was calibrated on, its setup, its figures' table and its notes."""
    out: list[str] = []
    n = 0
    for case in cases:
        label = "not scored" if not case.scored else None
        if case.scored:
            n += 1
        out += ["", f"### {n if case.scored else '-'}. {case.title}", ""]
        if label:
            out.append(f"_{label}_")
            out.append("")
        out.append("Sources: " + "; ".join(case.sources))
        out.append("")
        out.append("Calibrated on: " + ", ".join(case.calibrated_on))
        out.append("")
        for line in case.setup:
            out.append(f"- {line}")
        out += [
            "",
            "| figure | inputs | measured | specsim | 90% interval | error | flat | z |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in case.rows:
            out.append(
                f"| {r.figure} | {r.inputs} | {_num(r.measured)} | {_pred(r)} | "
                f"{_interval(r)} | {100 * r.error:+.1f}% | {_flat(r)} | {_z(r)} |"
            )
        for note in case.notes:
            out += ["", note]
    return out


def _check_rows(checks: Sequence[Check]) -> list[str]:
    """The closed-form checks' section: each check's expected value, specsim's at the
    check's resolution (``_at_resolution``), its tolerance and whether it passed."""
    out = [
        "",
        "## Closed-form checks",
        "",
        "| check | expected | specsim | tolerance | ok |",
        "|---|---:|---:|---:|---|",
    ]
    for c in checks:
        out.append(
            f"| {c.name} ({c.source}) | {c.expected:.6g} | {_at_resolution(c.got, c.tolerance)} | "
            f"{c.tolerance:.2g} | {'yes' if c.passed else '**NO**'} |"
        )
    return out


def _spread_rows(report: Report) -> list[str]:
    """The spreads' section: the report's statement of them, then each figure with a Monte
    Carlo spread: measured, closed form, the Monte Carlo mean with its 95% confidence
    interval, the per-request 5th-95th percentiles and the output tokens."""
    out = ["", "## Spreads", "", report.spreads, ""]
    out += [
        "| figure | measured | closed form | Monte Carlo mean (95% CI) | per-request p5 - p95 "
        "| output tokens |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in report.cases:
        for r in case.rows:
            if r.spread is None:
                continue
            sp = r.spread
            out.append(
                f"| {r.figure} | {_num(r.measured)} | {_num(r.predicted)} | {_num(sp.mean)} "
                f"({_num(sp.ci95[0])} - {_num(sp.ci95[1])}) | {_num(sp.p5)} - {_num(sp.p95)} "
                f"| {sp.output_tokens} |"
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="markdown file to (re)write")
    parser.add_argument("--seed-scenario", default=SEED_SCENARIO)
    parser.add_argument(
        "--no-serving", action="store_true", help="leave out the concurrency curves (faster)"
    )
    args = parser.parse_args(argv)
    report = build_report(args.seed_scenario, serving=not args.no_serving)
    atomic_write_text(args.out, render_markdown(report))
    failed = [c.name for c in report.checks if not c.passed]
    print(
        f"wrote {args.out}: {sum(len(c.rows) for c in report.cases if c.scored)} scored "
        f"figures, {len(report.checks)} closed-form checks, {len(failed)} failed"
    )
    return 1 if failed else 0
