"""A comparison's figure: mean tok/s per scenario with 95% CI error bars, plain decoding
beside it and the targets marked (``throughput_bars``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from sim.report.figure_style import add_footnote, add_targets, add_title, new_figure

__all__ = ["throughput_bars"]


def throughput_bars(
    labels: Sequence[str],
    means: Sequence[float],
    ci95: Sequence[tuple[float, float]],
    *,
    baselines: Sequence[float] | None = None,
    targets: Sequence[float] = (),
    title: str | None = None,
    footnote: str | None = None,
) -> Figure:
    """Mean tok/s per scenario with 95% CI error bars, plain decoding beside it."""
    fig, ax = new_figure(8.0, max(3.0, 1.2 + 0.55 * len(labels)))
    y = np.arange(len(labels))
    m = np.asarray(means, dtype=float)
    lo = np.array([c[0] for c in ci95])
    hi = np.array([c[1] for c in ci95])
    h = 0.38 if baselines is not None else 0.6
    ax.barh(
        y - (h / 2 if baselines is not None else 0),
        m,
        height=h,
        color="#4C72B0",
        xerr=[m - lo, hi - m],
        capsize=3,
        label="speculative (mean, 95% CI)",
    )
    if baselines is not None:
        ax.barh(y + h / 2, baselines, height=h, color="0.7", label="no speculation")
    for yi, v in zip(y, m, strict=True):
        ax.annotate(
            f"{v:.1f}",
            xy=(v, yi - (h / 2 if baselines is not None else 0)),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    add_targets(ax, targets, vertical=True)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("mean per-request throughput (tok/s)")
    ax.set_ylabel("scenario")
    add_title(fig, ax, title or "Throughput by scenario")
    ax.grid(True, alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    add_footnote(fig, footnote)
    return fig
