"""The search's figures: the acceptance rate each target needs against target tok/s,
one curve per draft length k with the Monte Carlo points' 95% intervals
(``required_alpha_vs_target``), and ``search --solve``'s simulated tok/s at every
evaluated value of the field solved for (``lever_curve``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from sim.report.figure_style import (
    BASELINE_STYLE,
    add_footnote,
    add_targets,
    add_title,
    curve_colors,
    field_label,
    new_figure,
)
from sim.report.plain_text import log_x_axis

__all__ = ["lever_curve", "required_alpha_vs_target"]


def required_alpha_vs_target(
    search: Mapping[str, Any],
    *,
    title: str | None = None,
    footnote: str | None = None,
    max_curves: int = 8,
) -> Figure:
    """Required acceptance rate against target tok/s, one curve per k.

    ``search`` is ``SearchResult.to_dict()``: its closed-form curves (``closed_form_curves``)
    are drawn as lines, the Monte Carlo answers at the searched targets as points with
    95% intervals. At most ``max_curves`` draft lengths: each target's best k, then k
    spread evenly over the searched range.
    """
    fig, ax = new_figure()
    curves = search.get("closed_form_curves", {})
    per_k: dict[int, list[tuple[float, float, float | None, float | None]]] = {}
    for t in search["targets"]:
        for r in t["per_num_steps"]:
            if r["reachable"]:
                lo, hi = r["alpha_ci95"]
                per_k.setdefault(int(r["num_steps"]), []).append((t["tok_s"], r["alpha"], lo, hi))
    ks = sorted(set(per_k) | {int(k) for k in curves if curves[k]["tok_s"]})
    chosen = {int(t["best_num_steps"]) for t in search["targets"] if t.get("best_num_steps")}
    for i in np.linspace(0, len(ks) - 1, max(2, max_curves)).round().astype(int) if ks else []:
        if len(chosen) >= max_curves:
            break
        chosen.add(ks[i])
    shown = sorted(chosen & set(ks))
    colors = curve_colors(len(shown))
    lowest = 1.0
    for color, k in zip(colors, shown, strict=True):
        curve = curves.get(str(k)) or curves.get(k)
        if curve and curve["alpha"]:
            ax.plot(
                curve["tok_s"], curve["alpha"], "-", color=color, linewidth=1.4, label=f"k = {k}"
            )
            lowest = min(lowest, *curve["alpha"])
        pts = per_k.get(k, [])
        if pts:
            xs = np.array([p[0] for p in pts])
            ys = np.array([p[1] for p in pts])
            lo = np.array([p[2] if p[2] is not None else p[1] for p in pts])
            hi = np.array([p[3] if p[3] is not None else 1.0 for p in pts])
            # the interval drawn as it is: an exact root may sit just outside the interval
            # its one Monte Carlo check gives (sim/studies/exact_search.py), which yerr refuses
            ax.vlines(xs, lo, hi, color=color, linewidth=1.0)
            ax.plot(
                xs,
                ys,
                "o",
                color=color,
                markersize=4,
                label=None if curve and curve["alpha"] else f"k = {k}",
            )
            lowest = min(lowest, float(lo.min()))
    for t in search["targets"]:
        ax.axvline(t["tok_s"], color="0.6", linewidth=0.8, linestyle=":")
    ax.set_ylim(max(0.0, lowest - 0.03), 1.01)
    ax.set_xlabel("target throughput (tok/s per request)")
    q = search.get("quantile")
    what = "mean tok/s" if q is None else f"{q:.0%} of requests"
    ax.set_ylabel("required conditional acceptance rate alpha")
    now = search.get("current")
    if now and now.get("alpha") is not None and now.get("closed_form_tok_s"):
        ax.plot(
            [now["closed_form_tok_s"]], [now["alpha"]], marker="*", markersize=14,
            color="#C44E52", markeredgecolor="black", linestyle="none",
            label=f"now: k = {now['num_steps']}, alpha {now['alpha']:.3f}, "
            f"{now['closed_form_tok_s']:.0f} tok/s",
        )  # fmt: skip
        lowest = min(lowest, float(now["alpha"]))
        ax.set_ylim(max(0.0, lowest - 0.03), 1.01)
    add_title(fig, ax, title or f"Acceptance rate needed for a target ({what}), per draft length k")
    ax.grid(True, alpha=0.3)
    fig.set_figwidth(fig.get_figwidth() + 1.5)
    fig.legend(
        loc="outside right upper",
        fontsize=8,
        title="lines: closed form\npoints: Monte Carlo\n(95% CI)",
        title_fontsize=7.5,
    )
    add_footnote(fig, footnote)
    return fig


def lever_curve(
    doc: Mapping[str, Any], *, title: str | None = None, footnote: str | None = None
) -> Figure:
    """``specsim search --solve FIELD`` output: simulated tok/s at every evaluated value."""
    rows = [{**p, "num_steps": 0, doc["field"]: p["value"]} for p in doc.get("points", [])]
    fig, ax = new_figure()
    pts = sorted(rows, key=lambda r: r["value"])
    xs = np.array([p["value"] for p in pts])
    ax.plot(
        xs,
        [p["tok_s_mean"] for p in pts],
        "o-",
        color="#4C72B0",
        markersize=3,
        label="Monte Carlo mean",
    )
    ax.fill_between(
        xs,
        [p["tok_s_ci95_lo"] for p in pts],
        [p["tok_s_ci95_hi"] for p in pts],
        color="#4C72B0",
        alpha=0.25,
        linewidth=0,
        label="95% CI of the mean",
    )
    ax.axvline(doc["current"], **BASELINE_STYLE, label=f"current value {doc['current']:g}")
    for t in doc["targets"]:
        if t["value"] is not None:
            ax.plot([t["value"]], [t["tok_s"]], "D", color="#C44E52", markersize=6)
            ax.annotate(
                f"{t['value']:.3g}",
                xy=(t["value"], t["tok_s"]),
                xytext=(5, -12),
                textcoords="offset points",
                fontsize=8,
                color="#C44E52",
            )
    add_targets(ax, [t["tok_s"] for t in doc["targets"]])
    if xs.size and xs.min() > 0 and xs.max() / xs.min() > 50:
        log_x_axis(ax)
    ax.set_xlabel(field_label(doc["field"]))
    ax.set_ylabel("mean per-request throughput (tok/s)")
    add_title(
        fig, ax, title or f"Throughput against {field_label(doc['field'])}; diamonds: solutions"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    add_footnote(fig, footnote)
    return fig
