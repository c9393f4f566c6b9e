"""Do the serving answers' 90% intervals contain public measurements? Coverage on the
repository's public serving curves.

Each curve of sim/validation/serving_cases.py and sim/validation/rate_curve_cases.py is
taken as its case calibrates it (the EAGLE-3 paper's SGLang and vLLM tables on one load;
the RTX PRO 6000 Kimi curve on batch 1 and plain decoding at 8; llm-d's Qwen3-32B on its
1-QPS stage), and every scored figure is predicted again, at the case's own load, requests,
replications and seed, now with ``serve``'s 90% interval from inputs and model
(sim/studies/serving/serve_intervals.py ``serve_intervals``). A figure is covered when the published
value lies inside the interval of the same quantity: the paired speedup of aggregate tok/s
(the paper tables), a policy's aggregate tok/s (Kimi), a policy's TPOT p50 (llm-d); the
gains (the paper's speed-ups, and the ratio of two published levels: Kimi's speculative
over plain tok/s, llm-d's plain over speculative TPOT p50) are also scored apart, with how
many intervals would separate a 10% gain from none. The draws are conditioned on each
curve's calibration figures (sim/validation/calibration_refits.py; ``--unconditioned``:
every input over its own range, the calibrated terms held at their nominal fit).

``python -m sim.validation.interval_public`` (``make coverage``) prints the table
docs/serving-intervals.md quotes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

import numpy as np

from sim.binding.bound import bind
from sim.files import atomic_write_text
from sim.model.model_error import (
    GainErrorFit,
    Residual,
    fit_gain_error,
    fit_level_error,
    leave_one_curve_out,
    load_distance,
    widen,
)
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.studies.serving.paired_metrics import gain, policy_point
from sim.studies.serving.serve_intervals import SERVE_METRICS, serve_intervals
from sim.uncertainty.perturb import DRAWS, Refit
from sim.validation import rate_curve_cases as rc
from sim.validation import serving_data as pub
from sim.validation.calibration_refits import kimi_refit, llmd_refit, memo, paper_refits
from sim.validation.eagle3_paper_cases import (
    SGLANG_OVERHEAD_HIGH_MS,
    VLLM_OVERHEAD_HIGH_MS,
    sglang_scenarios,
    vllm_scenarios,
)
from sim.validation.kimi_rtx6kpro_cases import (
    KIMI_CALIBRATED_USERS,
    KIMI_SPECULATIVE_CALIBRATED_USERS,
    kimi_scenario,
)
from sim.validation.model_error_cases import separates_ten_percent
from sim.validation.serving_point import SERVING_REPLICATIONS, SERVING_SEED


class Term(Protocol):
    """A fitted model-error term: its standard deviation of the log error at a log
    distance (``LevelErrorFit``, ``GainErrorFit``, sim/validation/linear_error.py's
    ``ModelErrorFit``)."""

    def sigma(self, distance: float) -> float: ...


#: A fit of the term on residuals (``fit_level_error``, ``fit_gain_error``, ...).
Fit = Callable[[Sequence[Residual]], Term]

__all__ = [
    "Figure",
    "FigureSpec",
    "figure_specs",
    "public_coverage",
    "scenario_at",
    "summary_lines",
]


@dataclass(frozen=True, slots=True)
class Figure:
    """One scored public figure: its curve, label, published value, the nominal
    prediction and its 90% interval from inputs and model; ``inputs``: the fields drawn;
    ``gain``: a paired speed-up (the decision), ``counted``: among the published figures
    (False: a gain of two published levels, scored as a gain only)."""

    curve: str
    label: str
    measured: float
    nominal: float
    interval: tuple[float, float]
    inputs: tuple[str, ...]
    gain: bool = False
    counted: bool = True
    #: log distance of the figure's load to the nearest load its curve was calibrated on
    distance: float = 0.0

    @property
    def inside(self) -> bool:
        return self.interval[0] <= self.measured <= self.interval[1]

    @property
    def width(self) -> float:
        """Interval width relative to the nominal prediction."""
        return (self.interval[1] - self.interval[0]) / self.nominal

    @property
    def separates(self) -> bool:
        """Whether an interval this wide (relative) around a 10% gain leaves out no gain
        (``separates_ten_percent``)."""
        return separates_ten_percent(self.width)


#: (what a figure is: speedup or a policy's level, the metric)
SPEEDUP = "speedup"


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """The scored figures of one curve at one load, as its case simulates them: the
    calibrated scenario, the load, requests, replications and seed; ``figures`` (label,
    what: ``SPEEDUP`` or a policy, metric, baseline policy, published value); ``refit``
    the case's calibration re-solved in a draw (sim/validation/calibration_refits.py);
    ``gains``: speed-ups of two published levels, scored as gains only."""

    curve: str
    scenario: Scenario
    load: tuple[tuple[str, Any], ...]
    requests: int
    replications: int
    seed: int
    figures: tuple[tuple[str, str, str, str, float], ...]
    refit: Refit | None = None
    gains: tuple[tuple[str, str, str, str, float], ...] = ()
    calibrated: tuple[float, ...] = ()
    #: the loads that calibrate the speculative arm (None: ``calibrated``, both arms)
    speculative_calibrated: tuple[float, ...] | None = None

    def distance(self, what: str = SPEEDUP) -> float:
        """The log distance of the load to the nearest calibrated one (``load_distance``)
        for a figure of ``what``: plain decoding's level from the plain arm's calibrated
        loads, the speculative level and the gain from the farther of the two arms'."""
        load = float(self.load[0][1])
        plain = load_distance(load, self.calibrated)
        if what == BASELINE or self.speculative_calibrated is None:
            return plain
        return max(plain, load_distance(load, self.speculative_calibrated))


def scenario_at(spec: FigureSpec) -> Scenario:
    """The spec's scenario at its load and number of requests."""
    sc = with_load(spec.scenario, source="validation", **dict(spec.load))
    return with_overrides(sc, {"workload.requests": spec.requests}, source="validation")


def _predict(spec: FigureSpec, draws: int, conditioned: bool) -> tuple[dict[str, Any], Any]:
    """The spec's simulation with its 90% intervals (``conditioned``: the draws conditioned
    on the calibration figures by the spec's refit), and the run's summary."""
    sc = scenario_at(spec)
    bound = bind(sc)
    setup = serving_setup(bound, source="validation")
    run = simulate_serving(
        setup.plan, setup.draftings, replications=spec.replications, seed=spec.seed
    )
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    points = {name: policy_point(recs, setup.slo) for name, recs in run.records.items()}
    iv = serve_intervals(
        bound,
        run.records,
        slo=setup.slo,
        seed=spec.seed,
        baseline=BASELINE,
        batch=max(p.mean_batch.mean for p in summary.policies.values()),
        draws=draws,
        refit=spec.refit if conditioned else None,
        model_error=(0.0, 0.0, 1.0),  # the inputs' interval: the term is added leave one curve out
    )
    # the nominal speed-ups as the intervals pair them (a TPOT p50's included)
    iv["nominal_speedup"] = {
        m: gain(points[SPECULATIVE], points[BASELINE], m).mean for m in SERVE_METRICS
    }
    return iv, summary


def _closed(
    curve: str,
    scenario: Scenario,
    batch: int,
    figures: tuple[tuple[str, str, str, str, float], ...],
    refit: Refit,
    gains: tuple[tuple[str, str, str, str, float], ...] = (),
    calibrated: tuple[float, ...] = (2.0,),
    speculative_calibrated: tuple[float, ...] | None = None,
) -> FigureSpec:
    """A closed loop of ``batch`` users as sim/validation/serving_point.py simulates it:
    max(60, 3 batch) requests, its replications and seed."""
    return FigureSpec(
        curve,
        scenario,
        (("concurrency", batch),),
        max(60, 3 * batch),
        SERVING_REPLICATIONS,
        SERVING_SEED,
        figures,
        refit,
        gains,
        calibrated,
        speculative_calibrated,
    )


def _figure(
    curve: str,
    label: str,
    measured: float,
    iv: dict[str, Any],
    summary: Any,
    what: str,
    m: str,
    counted: bool = True,
    distance: float = 0.0,
) -> Figure:
    if what == SPEEDUP:
        nominal = iv["nominal_speedup"][m]
        ends = iv["speedup"][SPECULATIVE][m]
    else:
        pol = summary.policies[what]
        nominal = pol.aggregate_tok_s.mean if m == "aggregate_tok_s" else pol.metrics["tpot_ms"].p50
        ends = iv["levels"][what][m]
    inputs = tuple(i["field"] for i in iv["inputs"])
    return Figure(
        curve,
        label,
        float(measured),
        float(nominal),
        (ends[0], ends[1]),
        inputs,
        what == SPEEDUP,
        counted,
        distance,
    )


def _paper_curves() -> Iterator[tuple[str, Scenario, Mapping[int, float], int, Refit]]:
    """(curve, calibrated scenario, published speedups by batch, calibration batch, refit)."""
    sg3, sg1 = sglang_scenarios()
    vl3, vl1 = vllm_scenarios()
    t3, t5 = pub.EAGLE3_SGLANG_TABLE3, pub.EAGLE3_VLLM_TABLE5
    sg3_refit, sg1_refit = paper_refits(sg3, sg1, t3, SGLANG_OVERHEAD_HIGH_MS)
    vl3_refit, vl1_refit = paper_refits(vl3, vl1, t5, VLLM_OVERHEAD_HIGH_MS)
    yield "EAGLE-3 paper T3 EAGLE-3 (SGLang, H100)", sg3, t3["EAGLE-3"], 2, memo(sg3_refit)
    yield "EAGLE-3 paper T3 EAGLE (SGLang, H100)", sg1, t3["EAGLE"], 2, memo(sg1_refit)
    yield "EAGLE-3 paper T5 EAGLE-3 (vLLM, RTX 3090)", vl3, t5["EAGLE-3"], 2, memo(vl3_refit)
    yield "EAGLE-3 paper T5 EAGLE (vLLM, RTX 3090)", vl1, t5["EAGLE"], 2, memo(vl1_refit)


KIMI = "Kimi-K2.5 8x RTX PRO 6000 (vLLM)"
#: Replications of the llm-d rates here: the case's 2 give a Monte Carlo 95% interval
#: t(0.975, 1) = 12.7 standard errors wide; 4 (t(0.975, 3) = 3.2) measure the same
#: prediction more closely.
RATE_INTERVAL_REPLICATIONS = 4
LLMD = "llm-d Qwen3-32B 2x H200 (vLLM)"


def figure_specs() -> list[FigureSpec]:
    """Every load of the public serving curves with the figures scored there."""
    out: list[FigureSpec] = []
    for curve, sc, table, cal, refit in _paper_curves():
        for batch, measured in table.items():
            if batch != cal:
                fig = (f"bs={batch}", SPEEDUP, "aggregate_tok_s", BASELINE, measured)
                out.append(_closed(curve, sc, batch, (fig,), refit))
    kimi, _, _ = kimi_scenario()
    kimi_fit = memo(kimi_refit(kimi))
    curves = pub.RTX6KPRO_AGGREGATE_TOK_S
    for batch in sorted(curves["MTP=3"]):
        if batch == 1:
            continue
        figs = [(f"MTP=3 conc={batch}", SPECULATIVE, "aggregate_tok_s", BASELINE,
                 curves["MTP=3"][batch])]  # fmt: skip
        gains = []
        if batch != 8:  # plain decoding at 8 users calibrates the decode's growth
            figs.append((f"no MTP conc={batch}", BASELINE, "aggregate_tok_s", BASELINE,
                         curves["no MTP"][batch]))  # fmt: skip
            gains.append((f"MTP=3 / no MTP conc={batch}", SPEEDUP, "aggregate_tok_s",
                          BASELINE, curves["MTP=3"][batch] / curves["no MTP"][batch]))  # fmt: skip
        out.append(
            _closed(
                KIMI,
                kimi,
                batch,
                tuple(figs),
                kimi_fit,
                tuple(gains),
                KIMI_CALIBRATED_USERS,
                KIMI_SPECULATIVE_CALIBRATED_USERS,
            )
        )
    llmd = rc.llmd_scenario()
    llmd_fit = memo(llmd_refit(llmd))
    tpot = pub.LLMD_QWEN3_TPOT_P50_MS
    for qps in rc.SCORED_QPS:
        figs = [
            (f"{arm} {qps} QPS TPOT p50", policy, "tpot_p50_ms", BASELINE,
             pub.LLMD_QWEN3_TPOT_P50_MS[arm][qps])
            for arm, policy in (("baseline", BASELINE), ("EAGLE-3", SPECULATIVE))
        ]  # fmt: skip
        out.append(
            FigureSpec(
                LLMD,
                llmd,
                (("rate_per_s", float(qps)),),
                rc.STAGE_S * qps,
                max(rc.RATE_REPLICATIONS, RATE_INTERVAL_REPLICATIONS),
                rc.RATE_SEED,
                tuple(figs),
                llmd_fit,
                (
                    (
                        f"TPOT speed-up {qps} QPS",
                        SPEEDUP,
                        "tpot_p50_ms",
                        BASELINE,
                        tpot["baseline"][qps] / tpot["EAGLE-3"][qps],
                    ),
                ),
                (float(rc.CALIBRATION_QPS),),
            )
        )
    return out


def spec_figures(spec: FigureSpec, draws: int = DRAWS, conditioned: bool = True) -> list[Figure]:
    """The figures of one load with their intervals (``conditioned``: the draws
    conditioned on the curve's calibration figures; False: every input over its own
    range, the calibrated terms held at their nominal fit)."""
    iv, summary = _predict(spec, draws, conditioned)
    out = [
        _figure(spec.curve, label, measured, iv, summary, what, metric, True, spec.distance(what))
        for label, what, metric, _, measured in spec.figures
    ]
    out += [
        _figure(spec.curve, label, measured, iv, summary, what, metric, False, spec.distance(what))
        for label, what, metric, _, measured in spec.gains
    ]
    return out


def public_coverage(draws: int = DRAWS, conditioned: bool = True) -> list[Figure]:
    """Every scored figure of the public serving curves with its interval
    (``spec_figures``)."""
    return [f for spec in figure_specs() for f in spec_figures(spec, draws, conditioned)]


def with_model_error(figures: Sequence[Figure], fit: Fit | None = None) -> list[Figure]:
    """The figures' intervals joined with the model-error term fitted leave one curve out
    (``loo_terms``): levels and gains apart, each curve's term fitted on the other curves'
    nominal log errors ln(measured / nominal), as the shipped default is fitted, taken at
    the figure's log distance to its curve's calibrated loads. ``fit`` None: the shipped
    forms (sim/model/model_error.py: levels s sqrt(d), gains a (1 - exp(-d / d0)))."""
    out = list(figures)
    for is_gain in (False, True):
        idx = [i for i, f in enumerate(figures) if f.gain == is_gain]
        loo = loo_terms([figures[i] for i in idx], fit)
        for i in idx:
            f = figures[i]
            sigma = loo[f.curve].sigma(f.distance)
            out[i] = replace(f, interval=widen(f.nominal, f.interval, sigma))
    return out


def loo_terms(figures: Sequence[Figure], fit: Fit | None = None) -> Mapping[str, Term]:
    """Each curve's term fitted by ``fit`` without it on ``figures`` (all levels or all
    gains); ``fit`` None: the shipped form of their kind (the gains' when the first is a
    gain)."""
    res = [Residual(f.curve, f.distance, float(np.log(f.measured / f.nominal))) for f in figures]
    if fit is None:
        fit = fit_gain_error if figures and figures[0].gain else fit_level_error
    return leave_one_curve_out(res, fit)


def _params(fit: Term) -> str:
    """A gain term's a and d0; otherwise s, its sigma at d = 1 (s sqrt(d) and s d alike)."""
    if isinstance(fit, GainErrorFit):
        return f"a {fit.ceiling:.3f}, d0 {fit.scale:.2f}"
    return f"s {fit.sigma(1.0):.3f}"


def _curve_line(name: str, sel: Sequence[Figure], drawn: bool) -> str:
    n_in = sum(f.inside for f in sel)
    width = float(np.median([f.width for f in sel]))
    share = f" ({n_in / len(sel):.0%})" if name == "all" else ""
    inputs = ", ".join(sel[0].inputs) if drawn else ""
    return f"| {name} | {len(sel)} | {n_in}{share} | {width:.3f} |" + (
        f" {inputs} |" if inputs else " |"
    )


def summary_lines(figures: Sequence[Figure]) -> list[str]:
    """Per figure: published, nominal, interval, inside; then per curve and overall the
    share covered and the median relative width of the published figures; then the same
    for the gains (the paired speed-ups: the published ones and those of two published
    levels) with how many intervals are narrow enough to separate a 10% gain from none."""
    lines = ["| curve | figure | published | specsim | 90% interval | inside |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for f in figures:
        lo, hi = f.interval
        lines.append(
            f"| {f.curve} | {f.label} | {f.measured:.4g} | {f.nominal:.4g} | "
            f"[{lo:.4g}, {hi:.4g}] | {'yes' if f.inside else 'no'} |"
        )
    counted = [f for f in figures if f.counted]
    lines += ["", "| curve | figures | inside | median width (rel.) | drawn |",
              "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for curve in dict.fromkeys(f.curve for f in counted):
        lines.append(_curve_line(curve, [f for f in counted if f.curve == curve], True))
    lines.append(_curve_line("all", counted, False))
    gains = [f for f in figures if f.gain]
    lines += ["", "| gains of | figures | inside | median width (rel.) | separate 10% |",
              "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for curve in [*dict.fromkeys(f.curve for f in gains), "all"]:
        sel = [f for f in gains if curve in ("all", f.curve)]
        line = _curve_line(curve, sel, False)
        lines.append(line[: line.rindex("|", 0, -1)] + f"| {sum(f.separates for f in sel)} |")
    return lines


def _save(path: str, figures: Sequence[Figure]) -> None:
    atomic_write_text(path, json.dumps([asdict(f) for f in figures], indent=1) + "\n")


def _load(path: str) -> list[Figure]:
    with open(path, encoding="utf-8") as fh:
        rows = json.load(fh)
    return [
        Figure(**{**r, "interval": tuple(r["interval"]), "inputs": tuple(r["inputs"])})
        for r in rows
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument(
        "--unconditioned",
        action="store_true",
        help="draw every input over its own range, the calibrated terms held at their fit",
    )
    parser.add_argument("--save", help="write the figures with their inputs' intervals (JSON)")
    parser.add_argument("--load", help="score figures a --save wrote instead of simulating")
    args = parser.parse_args(argv)
    figures: list[Figure] = []
    if args.load:
        figures = _load(args.load)
    else:
        for spec in figure_specs():  # each load's rows as they come: the whole run is long
            for f in spec_figures(spec, args.draws, not args.unconditioned):
                lo, hi = f.interval
                print(f"# {f.curve} | {f.label} | {f.measured:.4g} | {f.nominal:.4g} | "
                      f"[{lo:.4g}, {hi:.4g}]", flush=True)  # fmt: skip
                figures.append(f)
    if args.save:
        _save(args.save, figures)
    print("## from the inputs\n")
    print("\n".join(summary_lines(figures)))
    print("\n## joined with the model-error term, leave one curve out\n")
    for is_gain, what in ((False, "levels"), (True, "gains")):
        terms = loo_terms([f for f in figures if f.gain == is_gain])
        print(f"the {what}' term without the curve: "
              + "; ".join(f"{c}: {_params(v)}" for c, v in terms.items()))  # fmt: skip
    print("\n".join(summary_lines(with_model_error(figures))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
