"""What a second calibrated load does to a gain's interval, on the one public curve with a
load sweep in the repository (Kimi-K2.5 on 8x RTX PRO 6000, vLLM; sim/validation/
load_fit_cases.py).

For each set of fitted loads, the batched terms are fitted to both arms' decode time per
token at those loads (``fit_load_sweep``, what ``calibrate --load-sweep`` runs), and the
speed-up plain TPOT / speculative TPOT is predicted at 32, 64 and 128 users (never fitted
on) by the deterministic TPOT model of the load-fit case. Each predicted gain gets the
model-error band nominal x/exp(Z90 s d), d the log distance to the nearest fitted load
(or 1), s the gains' term fitted on the other curves (``--sigma``; docs/validation.md
gives it for this curve), or the saturating form a (1 - exp(-d / d0)) fitted on them
(``--saturating A D0``; sim/validation/error_forms.py): whether the band holds the
measured gain, and whether it is narrow enough to separate a 10% gain from none
(1.1 (1 - sinh(Z90 sigma)) > 1).

``python -m sim.validation.sweep_gains --sigma 0.054``
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sim.calibration.load_fit import fit_load_sweep
from sim.calibration.tpot_model import predicted_tpot_ms
from sim.model.model_error import Z90, gain_sigma, load_distance
from sim.validation.kimi_rtx6kpro_cases import kimi_scenario
from sim.validation.load_fit_cases import SCORED_LOADS, _points
from sim.validation.model_error_cases import separates_ten_percent

__all__ = ["FIT_SETS", "SweepGain", "sweep_gains", "sweep_lines"]

#: The fitted loads compared: batch 1 only (the serving case's speculative arm), one load,
#: two loads, and the load-fit case's four.
FIT_SETS: tuple[tuple[int, ...], ...] = ((2,), (8,), (16,), (2, 16), (2, 4, 8, 16))


@dataclass(frozen=True, slots=True)
class SweepGain:
    """One predicted gain: the fitted loads, the scored load, its log distance to the
    nearest fitted load (or 1), the measured and predicted speed-up."""

    fitted: tuple[int, ...]
    load: float
    distance: float
    measured: float
    predicted: float

    @property
    def log_error(self) -> float:
        return math.log(self.measured / self.predicted)


def sweep_gains(fit_sets: Sequence[tuple[int, ...]] = FIT_SETS) -> list[SweepGain]:
    """The scored gains under each set of fitted loads (both arms fitted at each)."""
    base = kimi_scenario()[0]
    scored = _points(SCORED_LOADS)
    out: list[SweepGain] = []
    for loads in fit_sets:
        fit = fit_load_sweep(base, _points(loads), source=f"load sweep at {loads}")
        tpot: dict[float, dict[bool, tuple[float, float]]] = {}
        for p, ms in zip(scored, predicted_tpot_ms(fit.scenario, scored), strict=True):
            tpot.setdefault(p.load, {})[bool(p.speculative)] = (float(p.tpot_ms or 0.0), ms)
        for load, arms in sorted(tpot.items()):
            (m_s, p_s), (m_p, p_p) = arms[True], arms[False]
            d = load_distance(load, (1, *loads))
            out.append(SweepGain(loads, load, d, m_p / m_s, p_p / p_s))
    return out


def sweep_lines(gains: Sequence[SweepGain], sigma_at: Callable[[float], float]) -> list[str]:
    """The table: each fitted set and scored load with its band, sigma = ``sigma_at(d)``."""
    out = [
        "| fitted at (users) | load | d | measured | predicted | log error | band | inside "
        "| separates 10% |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for g in gains:
        half = Z90 * sigma_at(g.distance)
        lo, hi = g.predicted * math.exp(-half), g.predicted * math.exp(half)
        inside = lo <= g.measured <= hi
        separates = separates_ten_percent(2.0 * math.sinh(half))
        out.append(
            f"| {', '.join(map(str, g.fitted))} | {g.load:g} | {g.distance:.2f} | "
            f"{g.measured:.3f} | {g.predicted:.3f} | {g.log_error:+.3f} | "
            f"[{lo:.3f}, {hi:.3f}] | {'yes' if inside else 'no'} | "
            f"{'yes' if separates else 'no'} |"
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    form = parser.add_mutually_exclusive_group(required=True)
    form.add_argument("--sigma", type=float, help="s of s d, fitted without the curve")
    form.add_argument("--saturating", type=float, nargs=2, metavar=("A", "D0"),
                      help="a, d0 of a (1 - exp(-d / d0)), fitted without the curve")  # fmt: skip
    args = parser.parse_args(argv)
    if args.sigma is not None:
        s = float(args.sigma)
        sigma_at: Callable[[float], float] = lambda d: s * d  # noqa: E731
    else:
        a, d0 = (float(x) for x in args.saturating)
        sigma_at = lambda d: gain_sigma(a, d0, d)  # noqa: E731
    print("\n".join(sweep_lines(sweep_gains(), sigma_at)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
