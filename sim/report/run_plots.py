"""A run's figures: the per-request tok/s distribution with the targets marked
(``request_distribution``) and where a cycle spends its time, phase by phase, as stacked
bars (``cycle_breakdown``, also a sweep's and a comparison's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from sim.model.cycle import PHASES
from sim.report.figure_style import (
    BASELINE_STYLE,
    PHASE_COLORS,
    PHASE_LABELS,
    TARGET_STYLE,
    add_footnote,
    add_title,
    new_figure,
)

__all__ = ["cycle_breakdown", "request_distribution"]


def request_distribution(
    tok_s: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    what: str = "requests",
    targets: Sequence[float] = (),
    mean_ci95: tuple[float, float] | None = None,
    baseline_tok_s: float | None = None,
    title: str | None = None,
    footnote: str | None = None,
) -> Figure:
    """Histogram of per-request tok/s (any shape; flattened) with the targets marked.

    ``weights`` (same shape as ``tok_s``; default one each): how many requests, or what
    probability, each value stands for: a streamed run's log-histogram bins (middle, count)
    or the exact law's support and probabilities. ``what`` names the y axis and the legend
    entry ("requests", or "share of requests" for probabilities).
    Each target is labelled with the share of requests reaching it. Targets far outside
    the distribution (more than its width away) are listed in a box instead of drawn, so
    the histogram keeps its resolution.
    """
    values = np.asarray(tok_s, dtype=float).ravel()
    w = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float).ravel()
    total = float(w.sum())

    def share_at_least(t: float) -> float:
        return float(w[values >= t].sum()) / total

    fig, ax = new_figure()
    vmin, vmax = float(values.min()), float(values.max())
    width = max(vmax - vmin, 1e-9 + 0.05 * abs(vmax))
    lo_x, hi_x = vmin - width, vmax + width
    distinct, where = np.unique(np.round(values, 9), return_inverse=True)
    counts = np.bincount(where.ravel(), weights=w, minlength=distinct.size)
    count = f"{total:.0f} {what}" if what == "requests" else what
    if distinct.size <= 120:
        # tok/s on a lattice (a request of N tokens in n cycles of fixed time takes one of
        # few values): one bar per value, not bins that straddle the lattice (combs)
        step = float(np.diff(distinct).min()) if distinct.size > 1 else max(width, 1.0)
        ax.bar(distinct, counts, width=0.8 * step, color="#4C72B0", alpha=0.85,
               label=f"{count} ({distinct.size} distinct tok/s values, one bar each)")  # fmt: skip
    else:
        n = total if what == "requests" else float(distinct.size)
        bins = min(60, max(10, int(np.sqrt(n))))
        ax.hist(values, bins=bins, weights=w, color="#4C72B0", alpha=0.85, label=count)
    mean = float(w @ values) / total
    ax.axvline(mean, color="#C44E52", linewidth=1.5, label=f"mean {mean:.1f} tok/s")
    if mean_ci95 is not None:
        ax.axvspan(*mean_ci95, color="#C44E52", alpha=0.2, label="95% CI of the mean")
    shown = [t for t in targets if lo_x <= t <= hi_x]
    if baseline_tok_s is not None and lo_x <= baseline_tok_s <= hi_x:
        ax.axvline(
            baseline_tok_s, **BASELINE_STYLE, label=f"no speculation ({baseline_tok_s:.1f} tok/s)"
        )
        shown_x = [*shown, baseline_tok_s]
    else:
        shown_x = list(shown)
    for i, t in enumerate(shown):
        ax.axvline(t, **TARGET_STYLE, label="targets" if i == 0 else None)
        ax.annotate(
            f"{t:g} tok/s\n{share_at_least(t):.0%} reach it",
            xy=(t, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(3, -4),
            textcoords="offset points",
            va="top",
            fontsize=8,
        )
    off = [t for t in targets if t not in shown]
    if off:
        text = "\n".join(f"target {t:g} tok/s: {share_at_least(t):.1%} reach it" for t in off)
        if baseline_tok_s is not None and baseline_tok_s not in shown_x:
            text += f"\nno speculation: {baseline_tok_s:.1f} tok/s"
        ax.text(
            0.98,
            0.97,
            text,
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=8,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.6"},
        )
    ax.set_xlim(
        min([vmin - 0.05 * width, *shown_x]) - 0.02 * width,
        max([vmax + 0.05 * width, *shown_x]) + 0.15 * width,
    )
    ax.set_xlabel("per-request throughput (tok/s)")
    ax.set_ylabel(what)
    add_title(fig, ax, title or "Per-request throughput distribution")
    ax.grid(True, alpha=0.3, axis="y")
    fig.set_figwidth(fig.get_figwidth() + 2.0)
    fig.legend(loc="outside right upper", fontsize=8)
    add_footnote(fig, footnote)
    return fig


def cycle_breakdown(
    bars: Sequence[tuple[str, Mapping[str, float]]],
    *,
    baseline_ms: float | None = None,
    title: str | None = None,
    footnote: str | None = None,
    ylabel: str = "configuration",
) -> Figure:
    """Stacked horizontal bars of one cycle's time by phase (ms), one bar per entry.

    ``bars`` holds (label, {draft, verify, extend, overhead}) in ms; ``baseline_ms`` draws
    the plain-decoding step for comparison.
    """
    fig, ax = new_figure(8.0, max(2.6, 1.0 + 0.45 * len(bars)))
    labels = [b[0] for b in bars]
    y = np.arange(len(bars))
    left = np.zeros(len(bars))
    for phase, color in zip(PHASES, PHASE_COLORS, strict=True):
        name = PHASE_LABELS[phase]
        widths = np.array([float(b[1].get(phase, 0.0) or 0.0) for b in bars])
        ax.barh(y, widths, left=left, color=color, label=name, height=0.6)
        left += widths
    for yi, total in zip(y, left, strict=True):
        ax.annotate(
            f"{total:.1f} ms",
            xy=(total, yi),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    if baseline_ms is not None:
        ax.axvline(
            baseline_ms, **BASELINE_STYLE, label=f"one plain decode step ({baseline_ms:.1f} ms)"
        )
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, float(left.max()) * 1.15 if len(bars) else 1)
    ax.set_xlabel("time per draft/verify cycle (ms)")
    ax.set_ylabel(ylabel)
    add_title(fig, ax, title or "Where a speculative-decoding cycle spends its time")
    ax.grid(True, alpha=0.3, axis="x")
    fig.legend(loc="outside right upper", fontsize=8)
    add_footnote(fig, footnote)
    return fig
