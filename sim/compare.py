"""Scenarios side by side: throughput with its CI, accept length, cycle breakdown and the
acceptance each target needs, with ratios to the first scenario.

The Monte Carlo numbers come from ``sim.montecarlo`` (each scenario at its own seed); the
required alpha per target comes from the closed forms (``sim.analysis``: at the
scenario's k and at the best k), so compare is one Monte Carlo run per scenario. Use
``specsim search`` for the Monte Carlo answer with its interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sim.analysis import analyze
from sim.montecarlo import simulate, summarize
from sim.scenario import Scenario, with_overrides

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
    label: str, scenario: Scenario, targets: Sequence[float], engine: str, workers: int = 1
) -> dict[str, Any]:
    """One column of the comparison (plain, JSON-ready)."""
    if targets:
        scenario = with_overrides(scenario, {"targets.tok_s": [float(t) for t in targets]})
    analysis = analyze(scenario)
    summary = summarize(simulate(scenario, engine=engine, workers=workers), targets).to_dict()
    tput = summary["throughput_tok_s"]
    p_at = {float(t["tok_s"]): t for t in summary["targets"]}
    rows = []
    for t in analysis.targets:
        best = t.best
        prob = p_at.get(float(t.tok_s), {})
        rows.append(
            {
                "tok_s": t.tok_s,
                "p_at_least": prob.get("p_at_least"),
                "p_at_least_ci95": prob.get("p_at_least_ci95"),
                "reachable": t.reachable,
                "alpha_at_num_steps": t.at_num_steps.alpha if analysis.num_steps > 0 else None,
                "best_num_steps": best.num_steps if best else None,
                "alpha_at_best": best.alpha if best else None,
            }
        )
    return {
        "label": label,
        "scenario": scenario.name,
        "num_steps": analysis.num_steps,
        "baseline_tok_s": analysis.baseline_tok_s,
        "analytic_tok_s": analysis.throughput_tok_s,
        "tok_s_mean": tput["mean"],
        "tok_s_ci95": tput["ci95"],
        "tok_s_p5": tput["p5"],
        "tok_s_p95": tput["p95"],
        "speedup": tput["mean"] / analysis.baseline_tok_s,
        "accept_length": summary["accept_length"]["mean"],
        "cycle_ms_mean": summary["cycle_ms"]["mean"],
        "cycle_ms": {k: v for k, v in summary["cycle_ms"].items() if k != "mean"},
        "targets": rows,
    }


def compare_scenarios(
    entries: Sequence[tuple[str, Scenario]],
    *,
    targets: Sequence[float] = (),
    engine: str = "fast",
    workers: int = 1,
) -> dict[str, Any]:
    """All scenarios side by side; ``ratios`` of each to the first (first is 1.0).

    ``targets`` default to the first scenario's, so every column answers the same targets.
    """
    if not entries:
        return {"scenarios": [], "targets": []}
    tgts = [float(t) for t in (targets or entries[0][1].target_tok_s)]
    cols = [compare_one(label, scn, tgts, engine, workers) for label, scn in entries]
    first = cols[0]
    for col in cols:
        col["ratios"] = {k: (col[k] / first[k] if first[k] else None) for k in RATIO_KEYS}
    return {
        "engine": engine,
        "targets": tgts,
        "alpha_meaning": "required alpha: closed form, equal conditional rates (effective "
        "rates for per-position or heterogeneous acceptance)",
        "scenarios": cols,
    }


def _cell(value: float | None, fmt: str, ratio: float | None, first: bool) -> str:
    if value is None:
        return "-"
    text = format(value, fmt)
    return text if first or ratio is None else f"{text} (x{ratio:.2f})"


def render_comparison(doc: Mapping[str, Any]) -> str:
    """A text table: one column per scenario, ratios to the first in parentheses."""
    cols = doc["scenarios"]
    header = ["", *[c["label"] for c in cols]]
    lines: list[list[str]] = []

    def add(name: str, key: str, fmt: str, ratio: str | None = None) -> None:
        lines.append(
            [
                name,
                *[
                    _cell(c[key], fmt, c["ratios"].get(ratio or key), i == 0)
                    for i, c in enumerate(cols)
                ],
            ]
        )

    lines.append(["num_steps (k)", *[str(c["num_steps"]) for c in cols]])
    add("baseline tok/s", "baseline_tok_s", ".1f")
    add("speculative tok/s", "tok_s_mean", ".1f")
    lines.append(
        ["  95% CI", *[f"[{c['tok_s_ci95'][0]:.1f}, {c['tok_s_ci95'][1]:.1f}]" for c in cols]]
    )
    add("  closed form", "analytic_tok_s", ".1f", "none")
    add("speedup", "speedup", ".2f")
    add("accept length", "accept_length", ".2f")
    add("cycle ms", "cycle_ms_mean", ".2f")
    for phase in ("draft", "verify", "extend", "overhead"):
        lines.append([f"  {phase}", *[f"{c['cycle_ms'].get(phase, 0.0):.2f}" for c in cols]])
    for i, t in enumerate(doc["targets"]):
        lines.append(
            [
                f"P(>= {t:g} tok/s)",
                *[
                    "-"
                    if c["targets"][i]["p_at_least"] is None
                    else f"{c['targets'][i]['p_at_least']:.2f}"
                    for c in cols
                ],
            ]
        )
        lines.append(
            ["  alpha at k", *[_alpha(c["targets"][i]["alpha_at_num_steps"]) for c in cols]]
        )
        lines.append(
            [
                "  best k: alpha",
                *[
                    _best(c["targets"][i]) if c["targets"][i]["reachable"] else "unreachable"
                    for c in cols
                ],
            ]
        )
    widths = [max(len(r[j]) for r in [header, *lines]) for j in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in lines]
    out.append(f"(ratios to {cols[0]['label']}; {doc['alpha_meaning']})")
    return "\n".join(out)


def _best(row: Mapping[str, Any]) -> str:
    return f"{row['best_num_steps']}: {_alpha(row['alpha_at_best'])}"


def _alpha(a: float | None) -> str:
    return "unreachable" if a is None else f"{a:.3f}"
