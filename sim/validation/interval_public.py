"""Do the serving answers' 90% intervals contain public measurements? Coverage on the
repository's public serving curves.

Each curve of sim/validation/serving_cases.py and sim/validation/rate_curve_cases.py is
taken as its case calibrates it (the EAGLE-3 paper's SGLang and vLLM tables on one load;
the RTX PRO 6000 Kimi curve on batch 1 and plain decoding at 8; llm-d's Qwen3-32B on its
1-QPS stage), and every scored figure is predicted again, at the case's own load, requests,
replications and seed, now with ``serve``'s 90% interval from inputs and model
(sim/studies/serving/draws.py ``serve_intervals``). A figure is covered when the published
value lies inside the interval of the same quantity: the paired speedup of aggregate tok/s
(the paper tables), a policy's aggregate tok/s (Kimi), a policy's TPOT p50 (llm-d).

``python -m sim.validation.interval_public`` (``make coverage``) prints the table
docs/serving-intervals.md quotes.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.binding.bound import bind
from sim.scenario.load import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.serving.metrics import summarize_serving
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.studies.serving.draws import DRAWS, serve_intervals
from sim.validation import rate_curve_cases as rc
from sim.validation import serving_cases as sv
from sim.validation import serving_data as pub

__all__ = ["Figure", "public_coverage", "summary_lines"]


@dataclass(frozen=True, slots=True)
class Figure:
    """One scored public figure: its curve, label, published value, the nominal
    prediction and its 90% interval from inputs and model; ``inputs``: the fields drawn."""

    curve: str
    label: str
    measured: float
    nominal: float
    interval: tuple[float, float]
    inputs: tuple[str, ...]

    @property
    def inside(self) -> bool:
        return self.interval[0] <= self.measured <= self.interval[1]

    @property
    def width(self) -> float:
        """Interval width relative to the nominal prediction."""
        return (self.interval[1] - self.interval[0]) / self.nominal


#: (what a figure is: speedup or a policy's level, the metric)
SPEEDUP = "speedup"


def _predict(
    scenario: Scenario,
    load: dict[str, Any],
    requests: int,
    replications: int,
    seed: int,
    draws: int,
) -> tuple[dict[str, Any], Any]:
    """The case's simulation at ``load`` with its 90% intervals, and the run's summary."""
    sc = with_load(scenario, source="validation", **load)
    sc = with_overrides(sc, {"workload.requests": requests}, source="validation")
    bound = bind(sc)
    setup = serving_setup(bound, source="validation")
    run = simulate_serving(setup.plan, setup.policies, replications=replications, seed=seed)
    summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
    iv = serve_intervals(
        bound,
        run.records,
        slo=setup.slo,
        seed=seed,
        baseline=BASELINE,
        batch=max(p.mean_batch.mean for p in summary.policies.values()),
        draws=draws,
    )
    return iv, summary


def _closed(scenario: Scenario, batch: int, draws: int) -> tuple[dict[str, Any], Any]:
    """``_predict`` at a closed loop of ``batch`` users as sim/validation/serving_cases.py
    simulates it: max(60, 3 batch) requests, its replications and seed."""
    return _predict(
        scenario,
        {"concurrency": batch},
        max(60, 3 * batch),
        sv.SERVING_REPLICATIONS,
        sv.SERVING_SEED,
        draws,
    )


def _figure(
    curve: str, label: str, measured: float, iv: dict[str, Any], summary: Any, what: str, m: str
) -> Figure:
    if what == SPEEDUP:
        nominal = summary.speedup[SPECULATIVE][m].mean
        ends = iv["speedup"][SPECULATIVE][m]
    else:
        pol = summary.policies[what]
        nominal = pol.aggregate_tok_s.mean if m == "aggregate_tok_s" else pol.metrics["tpot_ms"].p50
        ends = iv["levels"][what][m]
    inputs = tuple(i["field"] for i in iv["inputs"])
    return Figure(curve, label, float(measured), float(nominal), (ends[0], ends[1]), inputs)


def _paper_curves() -> Iterator[tuple[str, Scenario, Mapping[int, float], int]]:
    """(curve, calibrated scenario, published speedups by batch, calibration batch)."""
    sg3, sg1 = sv.sglang_scenarios()
    vl3, vl1 = sv.vllm_scenarios()
    t3, t5 = pub.EAGLE3_SGLANG_TABLE3, pub.EAGLE3_VLLM_TABLE5
    yield "EAGLE-3 paper T3 EAGLE-3 (SGLang, H100)", sg3, t3["EAGLE-3"], 2
    yield "EAGLE-3 paper T3 EAGLE (SGLang, H100)", sg1, t3["EAGLE"], 2
    yield "EAGLE-3 paper T5 EAGLE-3 (vLLM, RTX 3090)", vl3, t5["EAGLE-3"], 2
    yield "EAGLE-3 paper T5 EAGLE (vLLM, RTX 3090)", vl1, t5["EAGLE"], 2


def public_coverage(draws: int = DRAWS) -> list[Figure]:
    """Every scored figure of the public serving curves with its interval."""
    out: list[Figure] = []
    for curve, sc, table, cal in _paper_curves():
        for batch, measured in table.items():
            if batch == cal:
                continue
            iv, summary = _closed(sc, batch, draws)
            label = f"bs={batch}"
            out.append(_figure(curve, label, measured, iv, summary, SPEEDUP, "aggregate_tok_s"))
    kimi, _, _ = sv.kimi_scenario()
    curves = pub.RTX6KPRO_AGGREGATE_TOK_S
    for batch in sorted(curves["MTP=3"]):
        if batch == 1:
            continue
        iv, summary = _closed(kimi, batch, draws)
        name = "Kimi-K2.5 8x RTX PRO 6000 (vLLM)"
        out.append(
            _figure(
                name, f"MTP=3 conc={batch}", curves["MTP=3"][batch], iv, summary,
                SPECULATIVE, "aggregate_tok_s",
            )
        )  # fmt: skip
        if batch != 8:
            out.append(
                _figure(
                    name, f"no MTP conc={batch}", curves["no MTP"][batch], iv, summary,
                    BASELINE, "aggregate_tok_s",
                )
            )  # fmt: skip
    llmd = rc.llmd_scenario()
    for qps in rc.SCORED_QPS:
        iv, summary = _predict(
            llmd,
            {"rate_per_s": float(qps)},
            rc.STAGE_S * qps,
            rc.RATE_REPLICATIONS,
            rc.RATE_SEED,
            draws,
        )
        for arm, policy in (("baseline", BASELINE), ("EAGLE-3", SPECULATIVE)):
            out.append(
                _figure(
                    "llm-d Qwen3-32B 2x H200 (vLLM)",
                    f"{arm} {qps} QPS TPOT p50",
                    pub.LLMD_QWEN3_TPOT_P50_MS[arm][qps],
                    iv,
                    summary,
                    policy,
                    "tpot_p50_ms",
                )
            )
    return out


def summary_lines(figures: Sequence[Figure]) -> list[str]:
    """Per figure: published, nominal, interval, inside; then per curve and overall the
    share covered and the median relative width."""
    lines = ["| curve | figure | published | specsim | 90% interval | inside |",
             "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for f in figures:
        lo, hi = f.interval
        lines.append(
            f"| {f.curve} | {f.label} | {f.measured:.4g} | {f.nominal:.4g} | "
            f"[{lo:.4g}, {hi:.4g}] | {'yes' if f.inside else 'no'} |"
        )
    lines += ["", "| curve | figures | inside | median width (rel.) | drawn |",
              "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for curve in dict.fromkeys(f.curve for f in figures):
        sel = [f for f in figures if f.curve == curve]
        n_in = sum(f.inside for f in sel)
        width = float(np.median([f.width for f in sel]))
        lines.append(
            f"| {curve} | {len(sel)} | {n_in} | {width:.3f} | {', '.join(sel[0].inputs)} |"
        )
    n_in = sum(f.inside for f in figures)
    width = float(np.median([f.width for f in figures]))
    lines.append(f"| all | {len(figures)} | {n_in} ({n_in / len(figures):.0%}) | {width:.3f} | |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    args = parser.parse_args(argv)
    print("\n".join(summary_lines(public_coverage(args.draws))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
