"""A sweep's figures: mean tok/s against the acceptance rate, one curve per k with its
95% band (small multiples over the other swept fields), and a heatmap of mean tok/s over
two swept fields with the targets' contours."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sim.report.figure_style import (
    BASELINE_STYLE,
    Row,
    add_footnote,
    add_legend,
    add_targets,
    add_title,
    curve_colors,
    field_label,
    fmt_value,
    in_words,
    new_figure,
)

__all__ = ["heatmap", "throughput_vs_acceptance"]


def throughput_vs_acceptance(
    rows: Sequence[Row],
    *,
    x: str = "acceptance.alpha",
    targets: Sequence[float] = (),
    group_by: Sequence[str] = (),
    baseline_tok_s: float | None = None,
    title: str | None = None,
    footnote: str | None = None,
) -> Figure:
    """Mean tok/s against the acceptance rate, one curve per k, shaded 95% CI of the mean.

    ``rows`` are sweep rows with ``x``, ``num_steps``, ``tok_s_mean``, ``tok_s_ci95_lo`` and
    ``tok_s_ci95_hi``; ``group_by`` names further varied fields: each combination of their
    values gets its own panel (small multiples on shared axes), so no two curves of
    different settings lie on top of each other.
    """
    others = sorted({tuple(fmt_value(r.get(g)) for g in group_by) for r in rows})
    if len(others) > 1:
        return _throughput_panels(
            rows, others, x=x, targets=targets, group_by=group_by,
            baseline_tok_s=baseline_tok_s, title=title, footnote=footnote,
        )  # fmt: skip
    fig, ax = new_figure()
    ks = sorted({int(r["num_steps"]) for r in rows})
    colors = curve_colors(len(ks))
    styles = ["-", "--", "-.", ":"]
    for ci, k in enumerate(ks):
        for si, combo in enumerate(others):
            pts = sorted(
                (
                    r
                    for r in rows
                    if int(r["num_steps"]) == k
                    and tuple(fmt_value(r.get(g)) for g in group_by) == combo
                ),
                key=lambda r: float(r[x]),
            )
            if not pts:
                continue
            xs = np.array([float(r[x]) for r in pts])
            mean = np.array([float(r["tok_s_mean"]) for r in pts])
            label = f"k = {k}" + (
                " (" + ", ".join(in_words(g, v) for g, v in zip(group_by, combo, strict=True)) + ")"
                if group_by
                else ""
            )
            ax.plot(
                xs,
                mean,
                styles[si % len(styles)],
                color=colors[ci],
                marker="o",
                markersize=3,
                label=label,
            )
            if "tok_s_ci95_lo" in pts[0] and pts[0]["tok_s_ci95_lo"] is not None:
                lo = np.array([float(r["tok_s_ci95_lo"]) for r in pts])
                hi = np.array([float(r["tok_s_ci95_hi"]) for r in pts])
                # a band a few pixels wide vanishes under the line: error bars with caps
                # stay visible at any width, the band shows its shape where it is wide
                ax.fill_between(xs, lo, hi, color=colors[ci], alpha=0.3, linewidth=0)
                ax.errorbar(
                    xs, mean, yerr=[mean - lo, hi - mean], fmt="none", ecolor=colors[ci],
                    elinewidth=1.0, capsize=2.5,
                )  # fmt: skip
    if baseline_tok_s is not None:
        ax.axhline(
            baseline_tok_s, **BASELINE_STYLE, label=f"no speculation ({baseline_tok_s:.0f} tok/s)"
        )
    add_targets(ax, targets)
    ax.set_xlabel(field_label(x))
    ax.set_ylabel("mean per-request throughput (tok/s)")
    add_title(fig, ax, title or "Throughput against acceptance rate, per draft length k")
    ax.grid(True, alpha=0.3)
    add_legend(
        fig,
        ax,
        len(ks) * len(others) + 2,
        fontsize=8,
        loc="upper left",
        title="bars and shading: 95% CI of the mean",
        title_fontsize=7.5,
    )
    add_footnote(fig, footnote)
    return fig


def _curves(ax: Axes, rows: Sequence[Row], x: str, ks: Sequence[int], colors: list[Any]) -> None:
    """One curve per k with its 95% CI (band and error bars) on ``ax``."""
    for k, color in zip(ks, colors, strict=True):
        pts = sorted((r for r in rows if int(r["num_steps"]) == k), key=lambda r: float(r[x]))
        if not pts:
            continue
        xs = np.array([float(r[x]) for r in pts])
        mean = np.array([float(r["tok_s_mean"]) for r in pts])
        ax.plot(xs, mean, "-", color=color, marker="o", markersize=3, label=f"k = {k}")
        if pts[0].get("tok_s_ci95_lo") is not None:
            lo = np.array([float(r["tok_s_ci95_lo"]) for r in pts])
            hi = np.array([float(r["tok_s_ci95_hi"]) for r in pts])
            ax.fill_between(xs, lo, hi, color=color, alpha=0.3, linewidth=0)
            ax.errorbar(
                xs, mean, yerr=[mean - lo, hi - mean], fmt="none", ecolor=color,
                elinewidth=1.0, capsize=2.5,
            )  # fmt: skip


def _throughput_panels(
    rows: Sequence[Row],
    others: Sequence[tuple[str, ...]],
    *,
    x: str,
    targets: Sequence[float],
    group_by: Sequence[str],
    baseline_tok_s: float | None,
    title: str | None,
    footnote: str | None,
) -> Figure:
    """``throughput_vs_acceptance`` as small multiples: a panel per combination of the
    ``group_by`` fields (named in words), one colour per k in every panel."""
    n = len(others)
    ncols = 2 if n <= 4 else 3
    nrows = -(-n // ncols)
    fig = Figure(figsize=(4.0 * ncols + 1.6, 3.0 * nrows + 1.4), dpi=110, layout="constrained")
    axes = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    ks = sorted({int(r["num_steps"]) for r in rows})
    colors = curve_colors(len(ks))
    for i, combo in enumerate(others):
        ax = axes[i // ncols][i % ncols]
        sel = [r for r in rows if tuple(fmt_value(r.get(g)) for g in group_by) == combo]
        _curves(ax, sel, x, ks, colors)
        if baseline_tok_s is not None:
            label = f"no speculation ({baseline_tok_s:.0f} tok/s)"
            ax.axhline(baseline_tok_s, **BASELINE_STYLE, label=label)
        add_targets(ax, targets)
        words = [in_words(g, v) for g, v in zip(group_by, combo, strict=True)]
        ax.set_title(", ".join(words), fontsize=9.5)
        ax.grid(True, alpha=0.3)
    for j in range(n, nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel(field_label(x), fontsize=9)
    for row in axes:
        row[0].set_ylabel("mean tok/s per request", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="outside right upper", fontsize=8,
        title="bands, bars: 95% CI", title_fontsize=7.5,
    )  # fmt: skip
    add_title(fig, None, title or "Throughput against acceptance rate, per draft length k")
    add_footnote(fig, footnote)
    return fig


def heatmap(
    rows: Sequence[Row],
    *,
    x: str,
    y: str,
    value: str = "tok_s_mean",
    targets: Sequence[float] = (),
    title: str | None = None,
    subtitle: str | None = None,
    footnote: str | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
) -> Figure:
    """``value`` (mean tok/s by default) over two swept fields, with the target contours.

    ``vmin``/``vmax`` fix the colour scale: panels of one sweep that are compared share it.

    ``subtitle`` names what is held fixed in this panel (the other swept fields).

    Rows sharing an (x, y) cell (other varied fields) are averaged; the caller filters
    rows first when that is not wanted. Axes are categorical in sweep order, so strings
    (interconnect names) work as well as numbers.
    """
    xs = _ordered({fmt_value(r[x]): r[x] for r in rows})
    ys = _ordered({fmt_value(r[y]): r[y] for r in rows})
    grid = np.full((len(ys), len(xs)), np.nan)
    counts = np.zeros_like(grid)
    for r in rows:
        i, j = ys.index(fmt_value(r[y])), xs.index(fmt_value(r[x]))
        v = r.get(value)
        if v is None:
            continue
        grid[i, j] = float(v) if counts[i, j] == 0 else grid[i, j] + float(v)
        counts[i, j] += 1
    grid = np.where(counts > 0, grid / np.maximum(counts, 1), np.nan)
    fig, ax = new_figure(8.0, 5.5)
    mesh = ax.imshow(
        grid, origin="lower", aspect="auto", cmap="viridis", interpolation="nearest",
        vmin=vmin, vmax=vmax,
    )  # fmt: skip
    cbar = fig.colorbar(mesh, ax=ax)
    cbar.set_label("mean throughput (tok/s)" if value == "tok_s_mean" else value)
    finite = grid[np.isfinite(grid)]
    levels = [t for t in sorted(targets) if finite.size and finite.min() < t < finite.max()]
    if levels and min(grid.shape) >= 2:
        cs = ax.contour(
            np.arange(len(xs)),
            np.arange(len(ys)),
            grid,
            levels=levels,
            colors="white",
            linewidths=1.5,
            linestyles="--",
        )
        ax.clabel(cs, fmt=lambda v: f"{v:g} tok/s", fontsize=8)
    if grid.size <= 120:
        shade = np.asarray(mesh.norm(grid))  # each cell's place on the colour scale
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                if np.isfinite(grid[i, j]):
                    ax.text(
                        j,
                        i,
                        f"{grid[i, j]:.0f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white" if shade[i, j] < 0.5 else "black",
                    )
    ax.set_xticks(range(len(xs)), xs, rotation=45 if len(xs) > 8 else 0, fontsize=8)
    ax.set_yticks(range(len(ys)), ys, fontsize=8)
    ax.set_xlabel(field_label(x))
    ax.set_ylabel(field_label(y))
    missing = [t for t in targets if t not in levels]
    second = [subtitle] if subtitle else []
    if levels:
        second.append("dashed: target contours")
    if missing:
        second.append(f"targets outside the range: {', '.join(f'{t:g}' for t in missing)} tok/s")
    head = title or f"Mean tok/s by {field_label(x)} and {field_label(y)}"
    sub = textwrap.fill("; ".join(second), width=int(fig.get_figwidth() * 11))
    add_title(fig, ax, head + ("\n" + sub if second else ""), fontsize=10)
    add_footnote(fig, footnote)
    return fig


def _ordered(by_label: Mapping[str, Any]) -> list[str]:
    """Labels sorted numerically when every value is a number, else in first-seen order."""
    values = list(by_label.values())
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return [lab for lab, _ in sorted(by_label.items(), key=lambda kv: kv[1])]
    return list(by_label)
