"""The public serving curves' calibrations, re-solved in one draw of the uncertain inputs.

A curve's case fits a term or two on its lowest load (sim/validation/serving_cases.py,
rate_curve_cases.py). An input drawn for the interval (the bandwidth efficiency, the host
work, the kernel slope, the acceptance shape) moves that calibration figure as well; held
at the nominal fit, a draw would predict the calibration figure away from its
measurement, and the interval would hold what the data rule out. Each function here maps
a draw's overrides to the fitted fields' values that reproduce the calibration figures
under the draw (sim/uncertainty/perturb.py ``Refit``), by the case's own fit: the draws
are conditioned on the lowest load, and only the split the data leave open (how much of
the calibrated cost is per iteration, how much grows with the batch) is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sim.scenario.overrides import with_overrides
from sim.scenario.schema import Scenario
from sim.uncertainty.perturb import Refit
from sim.validation import rate_curve_cases as rc
from sim.validation.kimi_rtx6kpro_cases import kimi_calibrated
from sim.validation.speedup_fit import fit_speedup

__all__ = ["kimi_refit", "llmd_refit", "memo", "paper_refits"]

OVERHEAD = "timing.cycle_overhead_ms"
ALPHA = "acceptance.alpha"


def _server(over: Mapping[str, Any]) -> dict[str, Any]:
    """A draw's overrides but its acceptance: what the drawn server is."""
    return {k: v for k, v in over.items() if not k.startswith("acceptance.")}


def paper_refits(
    eagle3: Scenario, eagle: Scenario, table: Mapping[str, Mapping[int, float]], high_ms: float
) -> tuple[Refit, Refit]:
    """The EAGLE-3 paper tables' refits (EAGLE-3, EAGLE): the per-cycle overhead on the
    EAGLE-3 speedup at batch 2 (the EAGLE-3 drafter's acceptance as drawn); for EAGLE
    that overhead on the drawn server, then its one conditional rate on the EAGLE
    speedup at batch 2 (sim/validation/eagle3_paper_cases.py ``sglang_scenarios``)."""

    def overhead(sc: Scenario) -> dict[str, Any]:
        fitted = fit_speedup(sc, OVERHEAD, 0.0, high_ms, table["EAGLE-3"][2], 2)
        return {OVERHEAD: fitted.timing.cycle_overhead_ms}

    def refit3(over: Mapping[str, Any]) -> dict[str, Any]:
        return overhead(with_overrides(eagle3, dict(over), source="uncertainty"))

    def refit1(over: Mapping[str, Any]) -> dict[str, Any]:
        fitted = overhead(with_overrides(eagle3, _server(over), source="uncertainty"))
        sc = with_overrides(eagle, {**over, **fitted}, source="uncertainty")
        sc = fit_speedup(sc, ALPHA, 0.05, 0.99, table["EAGLE"][2], 2)
        assert sc.acceptance is not None
        return {**fitted, ALPHA: sc.acceptance.alpha}

    return refit3, refit1


def kimi_refit(kimi: Scenario) -> Refit:
    """The rtx6kpro case's refit: its overhead and conditional rate from the batch-1
    figures under the draw (``kimi_rtx6kpro_cases.kimi_calibrated``)."""

    def refit(over: Mapping[str, Any]) -> dict[str, Any]:
        fitted, alpha, _ = kimi_calibrated(with_overrides(kimi, dict(over), source="uncertainty"))
        if alpha != alpha:  # NaN: no rate reproduces the batch-1 figure under this draw
            raise ValueError("no conditional rate reproduces MTP=3 at conc 1")
        return {OVERHEAD: fitted.timing.cycle_overhead_ms, ALPHA: alpha}

    return refit


def llmd_refit(llmd: Scenario) -> Refit:
    """The llm-d case's refit: the decode and conditional rate from the 1-QPS stage under
    the draw (``rate_curve_cases.llmd_calibrated``)."""

    def refit(over: Mapping[str, Any]) -> dict[str, Any]:
        sc = rc.llmd_calibrated(with_overrides(llmd, dict(over), source="uncertainty"))
        assert sc.acceptance is not None
        return {"timing.decode_ms": sc.timing.decode_ms, ALPHA: sc.acceptance.alpha}

    return refit


def memo(refit: Refit) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """``refit`` solved once per draw (a curve's loads share their draws)."""
    done: dict[tuple[tuple[str, Any], ...], Mapping[str, Any]] = {}

    def get(over: Mapping[str, Any]) -> Mapping[str, Any]:
        key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in over.items())
        if key not in done:
            done[key] = refit(over)
        return done[key]

    return get
