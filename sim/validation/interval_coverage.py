"""Do the serving answers' 90% intervals contain the truth? A coverage study on synthetic
truths.

A truth is a server drawn from the ranges specsim itself says it does not know:

* every uncertain input of the scenario (sim/uncertainty/perturb.py ``serving_inputs``:
  its ``[uncertainty]`` entries, the decay prior, the shape's tilt, the default host work
  per request over its published range), and
* the batched cost terms a load sweep calibration carries as ranges when it cannot identify
  them (sim/calibration/load_terms.py ``PLAUSIBLE``: the host work per request, the kernel
  slope beyond the measured points, the expert skew of an MoE target),

one scrambled Sobol point per truth (``draw_inputs`` at the truth's own seed). Its
"measured" concurrency curve is the serving simulation of that server at ``LOADS`` users,
plain and speculative, at a seed of its own (``MEASURE_SEED`` + truth): a benchmark run.

The user then does what a user does: takes the scenario as given (the nominal values, not
the truth's), calibrates it on the lowest load only (``fit_load_sweep``, the library side
of ``specsim calibrate --load-sweep``, on that load's mean TPOT with and without
speculation), and predicts every other load with ``serve``'s 90% intervals from inputs and
model (sim/studies/serving/serve_intervals.py ``serve_intervals``: ``DRAWS`` draws x 2 replications
on the nominal seeds, joined with the Monte Carlo interval), at a prediction seed of its
own (``PREDICT_SEED`` + truth).

Scored per truth and predicted load: whether the measured per-user tok/s speedup, and the
measured per-user tok/s with and without speculation, lie inside their intervals; the
widths. A truth's curve is drawn from the same ranges the intervals draw from, so this
measures what the interval machinery loses (8 draws standing for a distribution, two
replications a draw, the measurement's own noise), not model error: the public curves
(sim/validation/interval_public.py) score that.

``python -m sim.validation.interval_coverage [--truths N]`` (``make coverage``) prints the
table docs/serving-intervals.md quotes.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.binding.bound import bind
from sim.binding.inputs import UncertainInput, draw_inputs
from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.load_sweep import LoadPoint
from sim.calibration.load_terms import PLAUSIBLE
from sim.scenario.load import load_scenario
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.serving.metrics import (
    PolicySummary,
    SloSpec,
    request_metrics,
    summarize_serving,
)
from sim.simulation.serving.serving_record import ServingRecord
from sim.simulation.serving.setup import BASELINE, SPECULATIVE, serving_setup, with_load
from sim.simulation.serving.simulate import simulate_serving
from sim.studies.serving.serve_intervals import serve_intervals
from sim.uncertainty.perturb import DRAWS, draw_overrides, serving_inputs

__all__ = ["LOADS", "Scored", "coverage_study", "truth_inputs"]

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "llama31-8b-1xh100-eagle3.toml"
#: The workload the study simulates (shorter than the scenario's 100 x 512 tokens: 40
#: truths x 4 loads x (measurement + prediction + 8 draws) runs).
SETTINGS = ("workload.requests=48", "workload.output_tokens=256", "simulation.replications=4")
#: Closed-loop users of every curve: the first calibrates, the others are scored.
LOADS: tuple[int, ...] = (1, 4, 16, 64)
TRUTH_SEED = 7_000
MEASURE_SEED = 8_000
PREDICT_SEED = 9_000
#: Replications of a truth's measured run at each load (a benchmark's repeated runs).
MEASURE_REPLICATIONS = 4
SCORED = ("speedup", "speculative", "baseline")


def truth_inputs(scenario: Scenario) -> tuple[UncertainInput, ...]:
    """What a truth draws: ``serving_inputs`` and each batched term of ``PLAUSIBLE`` not
    among them, uniform over its plausible range (the expert skew only on an MoE
    target)."""
    out = list(serving_inputs(bind(scenario)))
    have = {u.field for u in out}
    for field, (low, high) in PLAUSIBLE.items():
        if field in have or (field.endswith("expert_skew") and not scenario.model.experts):
            continue
        nominal = float(np.clip(0.5 * (low + high), low, high))
        out.append(
            UncertainInput(
                field, nominal, "uniform", "assumed", "load-fit range", low=low, high=high
            )
        )
    return tuple(out)


def _mean_tpot_ms(records: Sequence[ServingRecord]) -> tuple[float, float]:
    """Mean decode time per output token over the runs' requests, and its standard error."""
    tpot = np.concatenate([request_metrics(r)["tpot_ms"] for r in records])
    tpot = tpot[np.isfinite(tpot)]
    return float(tpot.mean()), float(tpot.std(ddof=1) / math.sqrt(tpot.size))


def _run(scenario: Scenario, users: int, replications: int, seed: int):
    setup = serving_setup(bind(with_load(scenario, concurrency=users, source="coverage")))
    run = simulate_serving(setup.plan, setup.draftings, replications=replications, seed=seed)
    return setup, run


def _policy(records: Sequence[ServingRecord]) -> PolicySummary:
    """One policy's summary over its replications."""
    return summarize_serving({"policy": list(records)}, SloSpec(), baseline=None).policies["policy"]


def _per_user(records: Sequence[ServingRecord]) -> float:
    """Mean per-user decode tok/s over the replications (as a benchmark averages them)."""
    return float(_policy(records).metrics["per_user_tok_s"].mean)


@dataclass(frozen=True, slots=True)
class Scored:
    """One truth at one predicted load: ``measured`` and ``interval`` of each of
    ``SCORED`` (the per-user tok/s speedup, the speculative and the plain per-user tok/s),
    the nominal prediction and the mean decode batch."""

    truth: int
    users: int
    measured: dict[str, float]
    nominal: dict[str, float]
    interval: dict[str, tuple[float, float]]

    def inside(self, what: str) -> bool:
        lo, hi = self.interval[what]
        return lo <= self.measured[what] <= hi

    def width(self, what: str) -> float:
        """Interval width relative to the nominal answer."""
        lo, hi = self.interval[what]
        return (hi - lo) / self.nominal[what]


def measure(truth: Scenario, seed: int) -> dict[int, dict[str, list[ServingRecord]]]:
    """The truth's curve: per load the speculative and plain records of its run."""
    out: dict[int, dict[str, list[ServingRecord]]] = {}
    for c in LOADS:
        _, run = _run(truth, c, MEASURE_REPLICATIONS, seed)
        out[c] = {n: list(r) for n, r in run.records.items()}
    return out


def calibrate_lowest(
    scenario: Scenario, curve: dict[int, dict[str, list[ServingRecord]]]
) -> Scenario:
    """``fit_load_sweep`` on the lowest load's mean TPOT and accept length, with and
    without speculation: the scenario a user would predict from."""
    low = min(curve)
    points = []
    for name, spec in ((BASELINE, False), (SPECULATIVE, True)):
        recs = curve[low][name]
        tpot, se = _mean_tpot_ms(recs)
        policy = _policy(recs)
        points.append(
            LoadPoint(
                source="synthetic",
                where=f"{name} at {low}",
                format="vllm bench serve",
                load=float(low),
                load_kind="concurrency",
                speculative=spec,
                tpot_ms=tpot,
                tpot_se_ms=se,
                accept_length=float(policy.accept_length.mean) if spec else 1.0,
            )
        )
    return fit_load_sweep(scenario, points, source="synthetic sweep").scenario


def score_truth(scenario: Scenario, j: int, draws: int = DRAWS) -> list[Scored]:
    """Truth ``j``: drawn, measured, calibrated on its lowest load, the others predicted."""
    inputs = truth_inputs(scenario)
    row = draw_inputs(scenario, inputs, 1, TRUTH_SEED + j)[0]
    truth = with_overrides(scenario, draw_overrides(scenario, inputs, row), source="truth")
    curve = measure(truth, MEASURE_SEED + j)
    user = calibrate_lowest(scenario, curve)
    out = []
    for c in LOADS[1:]:
        setup, run = _run(user, c, user.simulation.replications, PREDICT_SEED + j)
        summary = summarize_serving(run.records, setup.slo, baseline=BASELINE)
        iv = serve_intervals(
            bind(with_load(user, concurrency=c, source="coverage")),
            run.records,
            slo=setup.slo,
            seed=PREDICT_SEED + j,
            baseline=BASELINE,
            batch=max(p.mean_batch.mean for p in summary.policies.values()),
            draws=draws,
        )
        spec_m = _per_user(curve[c][SPECULATIVE])
        base_m = _per_user(curve[c][BASELINE])
        spec_n = _per_user(run.records[SPECULATIVE])
        base_n = _per_user(run.records[BASELINE])
        speedup = iv["speedup"][SPECULATIVE]["per_user_tok_s"]
        out.append(
            Scored(
                truth=j,
                users=c,
                measured={"speedup": spec_m / base_m, "speculative": spec_m, "baseline": base_m},
                nominal={"speedup": spec_n / base_n, "speculative": spec_n, "baseline": base_n},
                interval={
                    "speedup": (speedup[0], speedup[1]),
                    "speculative": tuple(iv["levels"][SPECULATIVE]["per_user_tok_s"]),
                    "baseline": tuple(iv["levels"][BASELINE]["per_user_tok_s"]),
                },
            )
        )
    return out


def coverage_study(
    truths: int, draws: int = DRAWS, scenario: Scenario | None = None
) -> list[Scored]:
    """Every truth's scored loads (``score_truth`` for truths 0 .. ``truths`` - 1)."""
    sc = scenario if scenario is not None else load_scenario(SCENARIO, SETTINGS)
    return [s for j in range(truths) for s in score_truth(sc, j, draws)]


def summary_lines(rows: Sequence[Scored]) -> list[str]:
    """The coverage table: per scored quantity and load, the share of truths whose
    measurement lies inside the interval, and the median relative width."""
    lines = ["| quantity | users | truths | inside 90% interval | median width (rel.) |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for what in SCORED:
        for c in (*LOADS[1:], None):
            sel = [r for r in rows if c is None or r.users == c]
            inside = sum(r.inside(what) for r in sel)
            width = float(np.median([r.width(what) for r in sel]))
            label = "all" if c is None else str(c)
            lines.append(
                f"| {what} | {label} | {len({r.truth for r in sel})} | "
                f"{inside}/{len(sel)} ({inside / len(sel):.0%}) | {width:.3f} |"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--truths", type=int, default=40)
    parser.add_argument("--draws", type=int, default=DRAWS)
    args = parser.parse_args(argv)
    rows = coverage_study(args.truths, args.draws)
    print("\n".join(summary_lines(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
