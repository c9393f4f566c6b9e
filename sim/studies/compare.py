"""Scenarios side by side: throughput with its CI, accept length, cycle breakdown and the
acceptance each target needs, with ratios to the first scenario.

The Monte Carlo numbers come from ``sim.simulation`` (each scenario at its own seed); the
required alpha per target comes from the closed forms (``sim.studies.analysis``: at the
scenario's k and at the best k), so compare is one Monte Carlo run per scenario. Use
``specsim search`` for the Monte Carlo answer with its interval. Text: sim/report/compare.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.binding.bound import Bound
from sim.binding.provenance import effective_hardware, override_entries
from sim.simulation.simulate import simulate
from sim.simulation.summary import summarize
from sim.studies.analysis import analyze

#: Quantities given a ratio to the first scenario.
RATIO_KEYS = ("baseline_tok_s", "tok_s_mean", "accept_length", "cycle_ms_mean", "speedup")


def unique_labels(paths: Sequence[str]) -> list[str]:
    """File stems, made unique with a #n suffix when two files share a stem."""
    stems = [Path(p).stem for p in paths]
    out = []
    for i, s in enumerate(stems):
        out.append(s if stems.count(s) == 1 else f"{s}#{stems[: i + 1].count(s)}")
    return out


def compare_one(
    label: str,
    bound: Bound,
    targets: Sequence[float],
    engine: str,
    workers: int = 1,
    fidelity: str = "cycle",
) -> dict[str, Any]:
    """One column of the comparison (plain, JSON-ready): the bound scenario at the
    comparison's targets, for its analysis and its Monte Carlo."""
    if targets:
        bound = bound.with_targets(targets)
    scenario = bound.scenario
    analysis = analyze(bound, uncertainty=True)
    unc = {u.tok_s: u for u in analysis.uncertainty.targets} if analysis.uncertainty else {}
    result = simulate(bound, engine=engine, fidelity=fidelity, workers=workers)
    summary = summarize(result, targets)
    p_at = {float(t.tok_s): t for t in summary.targets}
    rows = []
    for t in analysis.targets:
        best = t.best
        prob = p_at.get(float(t.tok_s))
        rows.append(
            {
                "tok_s": t.tok_s,
                "p_at_least": prob.p_at_least if prob else None,
                "p_at_least_ci95": list(prob.ci95) if prob else None,
                "reachable": t.reachable,
                "alpha_at_num_steps": t.at_num_steps.alpha if analysis.num_steps > 0 else None,
                "best_num_steps": best.num_steps if best else None,
                "first_rate_at_best": best.first_rate if best else None,
                "mean_rate_at_best": best.mean_rate if best else None,
                "alpha_at_best": best.alpha if best else None,
                "flat_alpha_at_best": t.best_flat.alpha if t.best_flat else None,
                "uncertainty": (unc[float(t.tok_s)].to_dict() if float(t.tok_s) in unc else None),
            }
        )
    interval = (
        analysis.uncertainty.tok_s_interval90.to_list()
        if analysis.uncertainty and analysis.uncertainty.tok_s_interval90
        else None
    )
    return {
        "label": label,
        "scenario": scenario.name,
        "num_steps": analysis.num_steps,
        "topk": scenario.speculation.topk,
        "num_draft_tokens": scenario.speculation.draft_tokens,
        "baseline_tok_s": analysis.baseline_tok_s,
        "analytic_tok_s": analysis.throughput_tok_s,
        "tok_s_mean": summary.tok_s_mean,
        "tok_s_ci95": list(summary.tok_s_ci95),
        "tok_s_p5": summary.tok_s_p5,
        "tok_s_p95": summary.tok_s_p95,
        "speedup": summary.tok_s_mean / analysis.baseline_tok_s,
        "accept_length": summary.accept_length_mean,
        "cycle_ms_mean": summary.cycle_ms["mean"],
        "cycle_ms": {k: v for k, v in summary.cycle_ms.items() if k != "mean"},
        "targets": rows,
        "hardware": effective_hardware(scenario),
        "overrides": override_entries(scenario),
        "assumptions": [a.to_dict() for a in analysis.assumptions],
        "tok_s_interval90": interval,
        **_outside(analysis.throughput_tok_s, interval, analysis.uncertainty),
    }


def _outside(tok_s: float, interval: list | None, unc: Any) -> dict[str, Any]:
    """When the closed-form tok/s lies outside its own 90% interval: the inputs specified
    outside the 5-95% of their ranges, which put it there (``off_centre``; empty: no key)."""
    lo, hi = (None, None) if interval is None else interval
    if lo is None or hi is None or lo <= tok_s <= hi or not unc.off_centre_inputs:
        return {}
    return {"off_centre": [o.to_dict() for o in unc.off_centre_inputs]}


ALPHA_MEANING = (
    "required acceptance, closed form: first = the rate at position 1 under each scenario's "
    "shape at the best k (90% interval from inputs and model), flat = equal rates"
)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Scenarios side by side: one column per scenario (JSON-ready mappings with ratios to
    the first), the targets every column answers, and the Monte Carlo settings."""

    engine: str
    fidelity: str
    targets: tuple[float, ...]
    columns: tuple[dict[str, Any], ...]
    #: (label, its own [targets]) of each later scenario whose targets the table does not
    #: answer: without --target every column answers the first scenario's.
    targets_not_shown: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "fidelity": self.fidelity,
            "targets": list(self.targets),
            "targets_not_shown": [
                {"scenario": label, "tok_s": list(own)} for label, own in self.targets_not_shown
            ],
            "alpha_meaning": ALPHA_MEANING,
            "scenarios": [dict(c) for c in self.columns],
        }


def targets_not_shown(
    entries: Sequence[tuple[str, Bound]], shown: Sequence[float]
) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """Each scenario's own targets that are not among ``shown`` (label, those targets)."""
    out = []
    for label, bound in entries:
        own = tuple(float(t) for t in bound.scenario.target_tok_s if float(t) not in shown)
        if own:
            out.append((label, own))
    return tuple(out)


def compare_scenarios(
    entries: Sequence[tuple[str, Bound]],
    *,
    targets: Sequence[float] = (),
    engine: str = "fast",
    fidelity: str = "cycle",
    workers: int = 1,
) -> Comparison:
    """All bound scenarios side by side; ``ratios`` of each to the first (first is 1.0).

    ``targets`` default to the first scenario's, so every column answers the same targets.
    """
    if not entries:
        return Comparison(engine, fidelity, (), ())
    tgts = [float(t) for t in (targets or entries[0][1].scenario.target_tok_s)]
    cols = [compare_one(label, b, tgts, engine, workers, fidelity) for label, b in entries]
    first = cols[0]
    for col in cols:
        col["ratios"] = {k: (col[k] / first[k] if first[k] else None) for k in RATIO_KEYS}
    hidden = () if targets else targets_not_shown(entries, tgts)
    return Comparison(engine, fidelity, tuple(tgts), tuple(cols), hidden)
