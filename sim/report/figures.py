"""Which figures each result document gets: sweep, search, compare and run outputs in,
(file stem, Figure) pairs out, chosen by the document's ``kind``. Built from the builders
of sim/report/ (``sweep_plots``, ``search_plots``, ``run_plots``, ``compare_plots``, the
serving ones); no files here (the CLI saves them, sim/cli/plot.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from sim.model.cycle import PHASES
from sim.report.compare_plots import throughput_bars
from sim.report.decision_plots import (
    best_k_figures,
    capacity_figures,
    controllers_figures,
    crossover_figures,
)
from sim.report.figure_style import Row, field_label, fmt_value, in_words
from sim.report.format import count
from sim.report.plain_text import plain_text
from sim.report.run_plots import cycle_breakdown, request_distribution
from sim.report.search_plots import lever_curve, required_alpha_vs_target
from sim.report.serving_plots import serve_figures, serving_sweep_figures
from sim.report.sweep_plots import heatmap, throughput_vs_acceptance
from sim.report.tree_load import tree_load_figures


def describe(doc: Mapping[str, Any]) -> str:
    """Footnote text: scenario, engine and sample size of a result document."""
    parts = [str(doc.get("scenario", ""))]
    if doc.get("replications"):
        parts.append(
            f"{doc.get('engine', 'fast')} engine, {count(doc['replications'], 'replication')} x "
            f"{count(doc.get('requests'), 'request')}"
            + (f" of {count(doc['output_tokens'], 'token')}" if doc.get("output_tokens") else "")
            + f", seed {doc.get('seed')}"
        )
    elif doc.get("method") == "exact":
        parts.append("the exact per-request law (no Monte Carlo sample)")
    return "; ".join(p for p in parts if p)


def _combos(rows: Sequence[Row], fields: Sequence[str]) -> list[tuple[str, ...]]:
    return list(dict.fromkeys(tuple(fmt_value(r.get(f)) for f in fields) for r in rows))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


@plain_text
def sweep_figures(doc: Mapping[str, Any], max_panels: int = 6) -> list[tuple[str, Figure]]:
    """Figures for a sweep document (``sweep.json``): (file stem, Figure) pairs.

    * ``throughput``: tok/s against the swept acceptance field (or the first numeric swept
      field), one curve per k, other swept fields as line styles (at most four combos);
    * ``heatmap-...``: mean tok/s over two swept fields with target contours, one per
      combination of the remaining fields (at most ``max_panels``);
    * ``cycle-breakdown``: simulated mean cycle by phase for each combination of the
      non-acceptance swept fields (acceptance does not change the cycle).
    """
    if doc.get("mode") == "serving":
        return serving_sweep_figures(doc)
    rows: list[Row] = doc["rows"]
    varied: list[str] = list(doc.get("varied", []))
    targets = doc.get("targets", [])
    note = describe(doc)
    out: list[tuple[str, Figure]] = []
    if not rows:
        return out
    numeric = [f for f in varied if all(_is_number(r.get(f)) for r in rows)]
    acc = [f for f in numeric if f.startswith("acceptance.")]
    x = acc[0] if acc else next((f for f in numeric if f != "speculation.num_steps"), None)
    baselines = {round(float(r["baseline_tok_s"]), 9) for r in rows if "baseline_tok_s" in r}
    baseline = baselines.pop() if len(baselines) == 1 else None
    if x is not None:
        others = [f for f in varied if f not in (x, "speculation.num_steps")]
        keep = set(_combos(rows, others)[:4])
        sel = [r for r in rows if tuple(fmt_value(r.get(f)) for f in others) in keep]
        out.append(
            (
                "throughput",
                throughput_vs_acceptance(
                    sel,
                    x=x,
                    targets=targets,
                    group_by=others,
                    baseline_tok_s=baseline,
                    title=f"Throughput against {field_label(x)}, per draft length k",
                    footnote=note,
                ),
            )
        )
    if len(varied) >= 2:
        hx = x or varied[0]
        hy = (
            "speculation.num_steps"
            if "speculation.num_steps" in varied and hx != ("speculation.num_steps")
            else next(f for f in varied if f != hx)
        )
        rest = [f for f in varied if f not in (hx, hy)]
        # one colour scale for every panel of the sweep: they are read side by side
        values = [float(r["tok_s_mean"]) for r in rows if r.get("tok_s_mean") is not None]
        vmin, vmax = (min(values), max(values)) if values else (None, None)
        for i, combo in enumerate(_combos(rows, rest)[:max_panels]):
            sel = [r for r in rows if tuple(fmt_value(r.get(f)) for f in rest) == combo]
            where = ", ".join(in_words(f, v) for f, v in zip(rest, combo, strict=True))
            fig = heatmap(
                sel,
                x=hx,
                y=hy,
                targets=targets,
                subtitle=where or None,
                footnote=note,
                vmin=vmin,
                vmax=vmax,
            )
            out.append((f"heatmap-{i + 1}" if rest else "heatmap", fig))
    if all("cycle_verify_ms" in r for r in rows):
        fixed = [f for f in varied if not f.startswith("acceptance.")]
        bars = []
        for combo in _combos(rows, fixed)[:24]:
            r = next(r for r in rows if tuple(fmt_value(r.get(f)) for f in fixed) == combo)
            label = ", ".join(in_words(f, v) for f, v in zip(fixed, combo, strict=True)) or str(
                doc.get("scenario", "scenario")
            )
            bars.append((label, {p: r.get(f"cycle_{p}_ms", 0.0) for p in PHASES}))
        base_ms = 1000.0 / baseline if baseline else None
        out.append(("cycle-breakdown", cycle_breakdown(bars, baseline_ms=base_ms, footnote=note)))
    return out


@plain_text
def search_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    """Figures for ``specsim search --json`` output (an acceptance search)."""
    return [("required-alpha", required_alpha_vs_target(doc, footnote=describe(doc)))]


@plain_text
def solve_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    """Figures for ``specsim search --solve FIELD --json`` output (any lever)."""
    stem = "solve-" + doc["field"].replace(".", "-")
    return [(stem, lever_curve(doc, footnote=describe(doc)))]


@plain_text
def run_figures(
    doc: Mapping[str, Any],
    tok_s: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    what: str = "requests",
) -> list[tuple[str, Figure]]:
    """Figures for one scenario's run: the per-request distribution (needs ``tok_s``, any
    shape, e.g. (replications, requests), with ``weights`` of the same shape where each
    value stands for several requests or a probability: ``request_distribution``) and the
    cycle breakdown from ``doc["cycle_ms"]``."""
    note = describe(doc)
    targets = [t["tok_s"] for t in doc.get("targets", [])]
    out: list[tuple[str, Figure]] = []
    if tok_s is not None:
        ci = doc.get("throughput_tok_s", {}).get("ci95")
        out.append(
            (
                "distribution",
                request_distribution(
                    tok_s,
                    weights=weights,
                    what=what,
                    targets=targets,
                    mean_ci95=tuple(ci) if ci and ci[0] != ci[1] else None,
                    baseline_tok_s=doc.get("baseline_tok_s"),
                    title=f"Per-request throughput: {doc.get('scenario', '')}",
                    footnote=note,
                ),
            )
        )
    cycle = doc.get("cycle_ms")
    if cycle:
        base = doc.get("baseline_tok_s")
        out.append(
            (
                "cycle-breakdown",
                cycle_breakdown(
                    [(f"k = {doc.get('num_steps')}", cycle)],
                    baseline_ms=1000.0 / base if base else None,
                    footnote=note,
                ),
            )
        )
    return out


@plain_text
def compare_figures(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    """Figures for ``specsim compare --json`` output: tok/s bars and cycle breakdowns."""
    rows = doc["scenarios"]
    labels = [r["label"] for r in rows]
    note = f"Monte Carlo, {doc.get('engine', 'fast')} engine, each scenario at its own seed"
    return [
        (
            "compare-throughput",
            throughput_bars(
                labels,
                [r["tok_s_mean"] for r in rows],
                [tuple(r["tok_s_ci95"]) for r in rows],
                baselines=[r["baseline_tok_s"] for r in rows],
                targets=doc.get("targets", []),
                title="Speculative throughput by scenario",
                footnote=note,
            ),
        ),
        (
            "compare-cycle-breakdown",
            cycle_breakdown(
                [(lab, r["cycle_ms"]) for lab, r in zip(labels, rows, strict=True)],
                title="Cycle time by phase, by scenario",
                ylabel="scenario",
                footnote=note,
            ),
        ),
    ]


#: Document kind -> its figure builder (sim/documents.py lists the kinds).
BUILDERS: dict[str, Callable[[Mapping[str, Any]], list[tuple[str, Figure]]]] = {
    "sweep": sweep_figures,
    "search": search_figures,
    "solve": solve_figures,
    "compare": compare_figures,
    "run": run_figures,
    "serve": serve_figures,
    "crossover": crossover_figures,
    "best_k": best_k_figures,
    "capacity": capacity_figures,
    "controllers": controllers_figures,
    "tree-load": tree_load_figures,
}


def figures_for(doc: Mapping[str, Any]) -> list[tuple[str, Figure]]:
    """The figures of a result document, by its ``kind`` (none for kinds without figures)."""
    build = BUILDERS.get(str(doc.get("kind")))
    return build(doc) if build else []
