"""What makes the serving intervals wide: each drawn input's swing on the public curves.

For every scored figure of sim/validation/interval_public.py (the repository's public
serving curves, each calibrated as its case calibrates it) and every input ``serve``
draws (sim/uncertainty/perturb.py ``serving_inputs``), the figure is simulated again with
that input alone at its 5% and at its 95% end (the others at their nominal values), on
the nominal run's first ``DRAW_REPLICATIONS`` seeds, and moved by the paired shift as a
draw is (sim/studies/serving/draw_intervals.py ``shifted``). An input's *swing* is the distance
between its two ends' answers relative to the nominal answer: the one-at-a-time share of
the interval's width that input holds (a tornado; interactions are left out).

``python -m sim.validation.interval_drivers`` prints per curve the median swing of each
input over the curve's figures (``--unconditioned``: the calibrated terms held at their
nominal fit instead of re-solved at each end, sim/validation/calibration_refits.py);
docs/serving-intervals.md quotes the table.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.binding.bound import bind
from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.simulation.serving.setup import serving_setup
from sim.simulation.serving.simulate import simulate_serving
from sim.studies.serving.draw_intervals import DRAW_REPLICATIONS, paired_gain, shifted
from sim.studies.serving.paired_metrics import policy_point
from sim.uncertainty.perturb import draw_overrides, serving_inputs
from sim.validation.interval_public import SPEEDUP, FigureSpec, figure_specs, scenario_at

__all__ = ["Swing", "curve_swings", "swing_lines"]


@dataclass(frozen=True, slots=True)
class Swing:
    """One figure's swing under one input: the answers at its 5% and 95% ends relative
    to the nominal answer."""

    curve: str
    label: str
    field: str
    low: float
    high: float

    @property
    def width(self) -> float:
        return abs(self.high - self.low)


def _answer(what: str, metric: str, baseline: str) -> Callable[[dict[str, Any]], np.ndarray]:
    """Per replication, the figure's quantity from {policy: PolicyPoint}."""

    def get(points: dict[str, Any]) -> np.ndarray:
        if what == SPEEDUP:
            spec = next(p for name, p in points.items() if name != baseline)
            return paired_gain(spec.values[metric], points[baseline].values[metric], metric)
        return np.asarray(points[what].values[metric], dtype=float)

    return get


def _points(sc: Scenario, replications: int, seed: int, slo: Any = None) -> dict[str, Any]:
    setup = serving_setup(bind(sc), source="validation")
    run = simulate_serving(setup.plan, setup.draftings, replications=replications, seed=seed)
    return {name: policy_point(recs, slo or setup.slo) for name, recs in run.records.items()}


def figure_swings(spec: FigureSpec, conditioned: bool = True) -> list[Swing]:
    """Each drawn input's swing on the figures ``spec`` predicts at one load
    (``conditioned``: at each end the case's calibration re-solved, ``spec.refit``)."""
    sc = scenario_at(spec)
    nominal = _points(sc, spec.replications, spec.seed)
    r = DRAW_REPLICATIONS
    first = _points(sc, r, spec.seed)
    inputs = serving_inputs(bind(sc))
    out: list[Swing] = []
    for label, what, metric, baseline, _ in spec.figures:
        get = _answer(what, metric, baseline)
        nom = float(np.mean(get(nominal)))
        for inp in inputs:
            ends = []
            for end in inp.ends():
                over = draw_overrides(sc, [inp], np.array([end]))
                if conditioned and spec.refit is not None:
                    over = {**over, **spec.refit(over)}
                drawn = _points(with_overrides(sc, over, source="uncertainty"), r, spec.seed)
                ends.append(shifted(nom, get(drawn), get(first)) / nom)
            out.append(Swing(spec.curve, label, inp.field, ends[0], ends[1]))
    return out


def curve_swings(conditioned: bool = True) -> list[Swing]:
    """The swings of every scored public figure."""
    return [s for spec in figure_specs() for s in figure_swings(spec, conditioned)]


def swing_lines(swings: Sequence[Swing]) -> list[str]:
    """Per curve and input: the median swing over the curve's figures and the largest."""
    fields = list(dict.fromkeys(s.field for s in swings))
    lines = [
        "| curve | " + " | ".join(fields) + " |",
        "| --- |" + " --- |" * len(fields),
    ]
    for curve in dict.fromkeys(s.curve for s in swings):
        cells = []
        for f in fields:
            sel = [s.width for s in swings if s.curve == curve and s.field == f]
            cells.append(f"{np.median(sel):.3f} ({max(sel):.3f})" if sel else "-")
        lines.append(f"| {curve} | " + " | ".join(cells) + " |")
    return lines


def _ends(specs: Sequence[FigureSpec], curve: str) -> list[FigureSpec]:
    """A curve's lowest, middle and highest scored load."""
    own = [s for s in specs if s.curve == curve]
    return [own[i] for i in sorted({0, len(own) // 2, len(own) - 1})]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--unconditioned",
        action="store_true",
        help="each input over its own range, the calibrated terms held at their fit",
    )
    parser.add_argument(
        "--few", action="store_true", help="per curve its lowest, middle and highest load only"
    )
    args = parser.parse_args(argv)
    specs = figure_specs()
    if args.few:
        specs = [s for c in dict.fromkeys(s.curve for s in specs) for s in _ends(specs, c)]
    swings: list[Swing] = []
    for spec in specs:
        for s in figure_swings(spec, not args.unconditioned):
            print(f"{s.curve} | {s.label} | {s.field} | {s.low:.4f} | {s.high:.4f}", flush=True)
            swings.append(s)
    print("\n".join(swing_lines(swings)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
